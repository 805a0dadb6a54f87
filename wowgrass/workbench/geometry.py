"""Where the workbench's places are in the world: a chunk's centre, a cell's corner."""

from __future__ import annotations

from wowgrass.formats.adt import CHUNK_SIZE, TILE_SIZE, UNIT_SIZE, ZEROPOINT


def chunk_centre(tile, chunk) -> tuple[float, float]:
    """World (X, Y) of chunk (cx, cy)'s centre in tile (col, row)."""
    col, row = tile
    cx, cy = chunk
    return (ZEROPOINT - row * TILE_SIZE - (cy + 0.5) * CHUNK_SIZE,
            ZEROPOINT - col * TILE_SIZE - (cx + 0.5) * CHUNK_SIZE)


def tile_centre(tile) -> tuple[float, float]:
    """World (X, Y) of tile (col, row)'s centre."""
    col, row = tile
    return ZEROPOINT - (row + 0.5) * TILE_SIZE, ZEROPOINT - (col + 0.5) * TILE_SIZE


def cell_corner(ref) -> tuple[float, float]:
    """World (X, Y) of a cell's north-west corner."""
    col, row = ref.tile
    cx, cy = ref.chunk
    x, y = ref.cell
    return (ZEROPOINT - row * TILE_SIZE - cy * CHUNK_SIZE - y * UNIT_SIZE,
            ZEROPOINT - col * TILE_SIZE - cx * CHUNK_SIZE - x * UNIT_SIZE)
