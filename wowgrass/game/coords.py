"""The map's coordinates: world (X north, Y west, Z up) to tiles, chunks and cells, and back.

The map is 64 x 64 tiles of ``TILE_SIZE`` yards, a tile 16 x 16 chunks (MCNK), a chunk 8 x 8 cells.
Counting starts at the map's north-west corner, world (``ZEROPOINT``, ``ZEROPOINT``): a tile's
column ``col`` and a chunk's or cell's first index run east (world -Y), its row ``row`` and second
index south (world -X), as ADT file names and MCNK's IndexX / IndexY do.

One rounding rule, floor: a point belongs to the square whose north-west corner it is on or
south-east of, so a square holds its north and west edges and not its south and east ones. The
edges are the very numbers :func:`tile_origin` (and the other corners) compute: a point exactly on
a corner is in the square that corner starts, also where float64 division alone would round it into
the neighbour. Every function takes numbers (and gives Python ints or floats) or numpy arrays
(and gives arrays, int64 for indices, float64 for positions). Nothing here clips: the index of a
point outside the given tile is outside 0..15 (0..127), and a caller that wants the tile's edge
clips.
"""

from __future__ import annotations

import math

import numpy as np

from wowgrass.formats.adt import CHUNK_SIZE, TILE_SIZE, UNIT_SIZE, ZEROPOINT

CHUNKS = 16  # chunks per tile side
CELLS = 8  # cells per chunk side
TILE_CELLS = CHUNKS * CELLS  # cells per tile side


def _is_array(*values) -> bool:
    return any(isinstance(v, np.ndarray) or (not np.isscalar(v) and v is not None) for v in values)


def _steps(v, size: float):
    """floor((ZEROPOINT - v) / size), made to agree with :func:`_edge` where the division rounds."""
    if _is_array(v):
        v = np.asarray(v, np.float64)
        i = np.floor((ZEROPOINT - v) / size).astype(np.int64)
        i += v <= ZEROPOINT - (i + 1) * size  # on (or past) the next square's north-west edge
        i -= v > ZEROPOINT - i * size  # north of this square's edge
        return i
    v = float(v)
    i = math.floor((ZEROPOINT - v) / size)
    if v <= ZEROPOINT - (i + 1) * size:
        i += 1
    elif v > ZEROPOINT - i * size:
        i -= 1
    return i


def _edge(i, size: float):
    """The world coordinate of grid line ``i`` (steps of ``size`` from the map's corner)."""
    if _is_array(i):
        return ZEROPOINT - np.asarray(i, np.float64) * size
    return ZEROPOINT - float(i) * size


# -- the pick's fast path: plain floats or float arrays, no type checks (same rule as above) --------
def step(v: float, size: float) -> int:
    """One coordinate's whole steps of ``size`` from the map's corner (:func:`map_steps`'s rule) for a
    plain float, without the checks that let the other functions take arrays."""
    i = math.floor((ZEROPOINT - v) / size)
    if v <= ZEROPOINT - (i + 1) * size:
        i += 1
    elif v > ZEROPOINT - i * size:
        i -= 1
    return i


def steps_float(v: np.ndarray, size: float) -> np.ndarray:
    """:func:`step` over a float64 array, the indices left as float64 (for arithmetic on them)."""
    i = np.floor((ZEROPOINT - v) / size)
    i += v <= ZEROPOINT - (i + 1) * size
    i -= v > ZEROPOINT - i * size
    return i


def fraction_steps(v, size: float):
    """Steps of ``size`` from the map's corner, unrounded (a square's index plus where in it)."""
    return (ZEROPOINT - v) / size


def edge(i, size: float) -> float:
    """Grid line ``i``'s world coordinate for a plain number (:func:`map_point`'s arithmetic)."""
    return ZEROPOINT - i * size


def map_steps(x, y, size: float):
    """(i, j): whole steps of ``size`` yards from the map's corner to the square holding (x, y),
    i east (along -Y), j south (along -X). ``size`` is TILE_SIZE, CHUNK_SIZE, UNIT_SIZE or any
    other grid (the terrain's half cells, the camera grid's lattice)."""
    return _steps(y, size), _steps(x, size)


def map_point(i, j, size: float):
    """World (x, y) of grid point (i, j) of ``size`` yards (:func:`map_steps`' inverse at corners)."""
    return _edge(j, size), _edge(i, size)


def corner_steps(x, y, size: float):
    """(i, j) of the grid point of ``size`` yards that world (x, y) stands for, where (x, y) is a
    corner stored with rounding (an MCNK position, float32): the square half a step south-east of
    it, by the same floor (not rounding to the nearest line, which the one rule replaces; the two
    agree for any point within half a step of its corner)."""
    half = size / 2.0
    if _is_array(x, y):
        return map_steps(np.asarray(x, np.float64) - half, np.asarray(y, np.float64) - half, size)
    return map_steps(float(x) - half, float(y) - half, size)


def tile_of(x, y):
    """(col, row) of the tile holding world (x, y)."""
    return map_steps(x, y, TILE_SIZE)


def tile_origin(col, row):
    """World (x, y) of tile (col, row)'s north-west corner (its largest X and Y)."""
    return map_point(col, row, TILE_SIZE)


def tile_centre(col, row):
    """World (x, y) of tile (col, row)'s centre."""
    return _edge(_plus_half(row), TILE_SIZE), _edge(_plus_half(col), TILE_SIZE)


def map_offset(x, y):
    """(east, south): yards from the map's north-west corner to world (x, y) (fractional; also
    MDDF/MODF's file axes X and Z)."""
    if _is_array(x, y):
        return ZEROPOINT - np.asarray(y, np.float64), ZEROPOINT - np.asarray(x, np.float64)
    return ZEROPOINT - float(y), ZEROPOINT - float(x)


def tile_offset(x, y, col, row):
    """(east, south): yards from tile (col, row)'s north-west corner to world (x, y) (fractional;
    negative or past the tile's side outside it)."""
    x0, y0 = tile_origin(col, row)
    if _is_array(x, y, col, row):
        return y0 - np.asarray(y, np.float64), x0 - np.asarray(x, np.float64)
    return y0 - float(y), x0 - float(x)


def chunk_of(x, y, col, row):
    """(ix, iy): the chunk holding world (x, y), counted from tile (col, row)'s corner (0..15 inside
    it; the MCNK index is ``iy * 16 + ix``)."""
    i, j = map_steps(x, y, CHUNK_SIZE)
    return i - _times(col, CHUNKS), j - _times(row, CHUNKS)


def cell_of(x, y, col, row):
    """(cx, cy): the cell holding world (x, y), counted from tile (col, row)'s corner (0..127 inside
    it: chunk ``(cx // 8, cy // 8)``, cell ``(cx % 8, cy % 8)`` within it)."""
    i, j = map_steps(x, y, UNIT_SIZE)
    return i - _times(col, TILE_CELLS), j - _times(row, TILE_CELLS)


def chunk_origin(col, row, ix, iy):
    """World (x, y) of chunk (ix, iy) of tile (col, row): its north-west corner."""
    return map_point(_times(col, CHUNKS) + ix, _times(row, CHUNKS) + iy, CHUNK_SIZE)


def chunk_centre(col, row, ix, iy):
    """World (x, y) of chunk (ix, iy) of tile (col, row): its centre."""
    return (_edge(_plus_half(_times(row, CHUNKS) + iy), CHUNK_SIZE),
            _edge(_plus_half(_times(col, CHUNKS) + ix), CHUNK_SIZE))


def cell_corner(col, row, ix, iy, cx, cy):
    """World (x, y) of cell (cx, cy) (0..7) of chunk (ix, iy) of tile (col, row): its north-west
    corner."""
    return map_point(_times(col, TILE_CELLS) + _times(ix, CELLS) + cx,
                     _times(row, TILE_CELLS) + _times(iy, CELLS) + cy, UNIT_SIZE)


def cell_centre(col, row, ix, iy, cx, cy):
    """World (x, y) of cell (cx, cy) (0..7) of chunk (ix, iy) of tile (col, row): its centre."""
    return (_edge(_plus_half(_times(row, TILE_CELLS) + _times(iy, CELLS) + cy), UNIT_SIZE),
            _edge(_plus_half(_times(col, TILE_CELLS) + _times(ix, CELLS) + cx), UNIT_SIZE))


def _times(v, n: int):
    return np.asarray(v, np.int64) * n if _is_array(v) else int(v) * n


def _plus_half(v):
    return np.asarray(v, np.float64) + 0.5 if _is_array(v) else float(v) + 0.5
