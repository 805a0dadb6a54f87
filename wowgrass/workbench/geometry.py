"""Where the workbench's places are in the world: a chunk's centre, a cell's corner (the
workbench's (tile, chunk, cell) tuples over :mod:`wowgrass.game.coords`)."""

from __future__ import annotations

from wowgrass.game import coords


def chunk_centre(tile, chunk) -> tuple[float, float]:
    """World (X, Y) of chunk (cx, cy)'s centre in tile (col, row)."""
    return coords.chunk_centre(*tile, *chunk)


def tile_centre(tile) -> tuple[float, float]:
    """World (X, Y) of tile (col, row)'s centre."""
    return coords.tile_centre(*tile)


def cell_corner(ref) -> tuple[float, float]:
    """World (X, Y) of a cell's north-west corner."""
    return coords.cell_corner(*ref.tile, *ref.chunk, *ref.cell)
