"""The map's coordinates (wowgrass/game/coords.py): one rounding rule (floor, a square holding its
north and west edges), at tile, chunk and cell edges, on both sides of the map and beyond it; and
no inline conversion left outside it."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import numpy as np
import pytest

from wowgrass.formats.adt import CHUNK_SIZE, TILE_SIZE, UNIT_SIZE, ZEROPOINT
from wowgrass.game import coords as C

ROOT = Path(__file__).resolve().parents[1]
# squares from beyond the map's north-west corner to beyond its south-east one, the middle included
TILES = [-3, -1, 0, 1, 2, 15, 31, 32, 33, 62, 63, 64, 70]


def _up(v):
    return np.nextafter(v, np.inf)


def _down(v):
    return np.nextafter(v, -np.inf)


@pytest.mark.parametrize("col", TILES)
@pytest.mark.parametrize("row", [-1, 0, 1, 2, 15, 32, 63, 64])
def test_a_tile_holds_its_north_and_west_edges_not_its_south_and_east(col, row):
    x0, y0 = C.tile_origin(col, row)
    assert (x0, y0) == (ZEROPOINT - row * TILE_SIZE, ZEROPOINT - col * TILE_SIZE)
    assert C.tile_of(x0, y0) == (col, row)  # exactly on the corner
    assert C.tile_of(_up(x0), y0) == (col, row - 1)  # a hair north: the tile above
    assert C.tile_of(x0, _up(y0)) == (col - 1, row)  # a hair west: the tile to the left
    assert C.tile_of(_down(x0), _down(y0)) == (col, row)
    xs, ys = C.tile_origin(col + 1, row + 1)  # the south-east corner starts the next tiles
    assert C.tile_of(xs, ys) == (col + 1, row + 1)
    assert C.tile_of(_up(xs), _up(ys)) == (col, row)
    assert C.tile_of(*C.tile_centre(col, row)) == (col, row)
    assert all(type(v) is int for v in C.tile_of(x0, y0))


def test_corners_on_zeropoint_multiples_belong_to_the_square_they_start_where_plain_division_misses():
    """ZEROPOINT - k * size, divided back, rounds below k for some k (tile rows 1, 2, 15, 63 among
    them): floor alone would put those corners in the square before."""
    for size, n in ((TILE_SIZE, 64), (CHUNK_SIZE, 1024), (UNIT_SIZE, 8192)):
        k = np.arange(-n, 2 * n + 1)
        x = ZEROPOINT - k * size
        plain = np.floor((ZEROPOINT - x) / size).astype(np.int64)
        assert (plain != k).any()  # the case the rule is for is real
        i, j = C.map_steps(x, x, size)
        assert np.array_equal(i, k) and np.array_equal(j, k)
        i, j = C.map_steps(_up(x), _up(x), size)
        assert np.array_equal(i, k - 1) and np.array_equal(j, k - 1)
        i, j = C.map_steps(_down(x), _down(x), size)
        assert np.array_equal(i, k) and np.array_equal(j, k)
    assert C.tile_of(ZEROPOINT, ZEROPOINT) == (0, 0)  # the map's corner
    assert C.tile_of(0.0, 0.0) == (32, 32)  # the map's centre starts tile 32, 32
    assert C.tile_of(-ZEROPOINT, -ZEROPOINT) == (64, 64)  # past the far side
    assert C.tile_of(2 * ZEROPOINT, 2 * ZEROPOINT) == (-32, -32)


@pytest.mark.parametrize(("col", "row"), [(0, 0), (31, 32), (32, 31), (63, 63), (-1, 64)])
def test_chunk_and_cell_edges(col, row):
    for ix, iy in ((0, 0), (1, 0), (0, 15), (15, 15), (7, 9)):
        x, y = C.chunk_origin(col, row, ix, iy)
        assert C.chunk_of(x, y, col, row) == (ix, iy)
        assert C.chunk_of(_up(x), _up(y), col, row) == (ix - 1, iy - 1)  # the chunks north-west
        assert C.chunk_of(_down(x), _down(y), col, row) == (ix, iy)
        assert C.chunk_of(*C.chunk_centre(col, row, ix, iy), col, row) == (ix, iy)
        for cx, cy in ((0, 0), (7, 7), (3, 5)):
            x, y = C.cell_corner(col, row, ix, iy, cx, cy)
            want = (ix * 8 + cx, iy * 8 + cy)
            assert C.cell_of(x, y, col, row) == want
            assert C.cell_of(_up(x), _up(y), col, row) == (want[0] - 1, want[1] - 1)
            assert C.cell_of(_down(x), _down(y), col, row) == want
            assert C.cell_of(*C.cell_centre(col, row, ix, iy, cx, cy), col, row) == want
    # the tile's corner is its chunk (0, 0) and cell (0, 0); its south-east corner starts the next tile
    assert C.chunk_origin(col, row, 0, 0) == C.tile_origin(col, row) == C.cell_corner(col, row, 0, 0, 0, 0)
    assert C.chunk_origin(col, row, 16, 16) == C.tile_origin(col + 1, row + 1)
    xs, ys = C.tile_origin(col + 1, row + 1)
    assert C.chunk_of(xs, ys, col, row) == (16, 16) and C.cell_of(xs, ys, col, row) == (128, 128)
    assert C.chunk_of(_up(xs), _up(ys), col, row) == (15, 15)
    assert C.cell_of(_up(xs), _up(ys), col, row) == (127, 127)


def test_arrays_give_what_numbers_give():
    rng = np.random.default_rng(7)
    x = rng.uniform(-1.2 * ZEROPOINT, 1.2 * ZEROPOINT, 4000)
    y = rng.uniform(-1.2 * ZEROPOINT, 1.2 * ZEROPOINT, 4000)
    k = rng.integers(-70, 140, 4000)  # and exact corners
    x[:1000] = ZEROPOINT - k[:1000] * CHUNK_SIZE
    y[:1000] = ZEROPOINT - k[:1000] * UNIT_SIZE
    cols, rows = C.tile_of(x, y)
    assert cols.dtype == np.int64
    assert [C.tile_of(a, b) for a, b in zip(x.tolist(), y.tolist())] == list(zip(cols.tolist(), rows.tolist()))
    ix, iy = C.chunk_of(x, y, cols, rows)
    assert ix.min() >= 0 and ix.max() <= 15 and iy.min() >= 0 and iy.max() <= 15
    assert [C.chunk_of(a, b, c, r) for a, b, c, r in zip(x.tolist(), y.tolist(), cols.tolist(), rows.tolist())] \
        == list(zip(ix.tolist(), iy.tolist()))
    cx, cy = C.cell_of(x, y, cols, rows)
    assert np.array_equal(cx // 8, ix) and np.array_equal(cy // 8, iy)
    gx, gy = C.cell_corner(cols, rows, ix, iy, cx % 8, cy % 8)
    assert np.all(gx >= x) and np.all(gy >= y) and np.all(gx - x < UNIT_SIZE) and np.all(gy - y < UNIT_SIZE)
    cxs, cys = C.cell_centre(cols, rows, ix, iy, cx % 8, cy % 8)
    assert np.allclose(cxs, gx - UNIT_SIZE / 2) and np.allclose(cys, gy - UNIT_SIZE / 2)
    east, south = C.tile_offset(x, y, cols, rows)
    assert np.all((east >= 0) & (east < TILE_SIZE) & (south >= 0) & (south < TILE_SIZE))
    assert C.tile_offset(1.0, 2.0, 32, 32) == (-2.0, -1.0)


def test_an_mcnk_position_stored_in_float32_names_its_chunk():
    """MCNK positions are the chunks' north-west corners in float32: rounded north of the exact
    corner, floor on the position itself gives the chunk before (the bug of floor there), rounding
    to the nearest line gives the right one, and so does the one rule on the point half a chunk in
    (corner_steps; export ground's chunk_grid and the terrain's grid use it)."""
    from wowgrass.export.ground import chunk_grid
    from wowgrass.formats.adt import AdtTile

    g = np.arange(1024)
    corners = (ZEROPOINT - g * CHUNK_SIZE).astype(np.float32).astype(np.float64)
    plain_floor = np.floor((ZEROPOINT - corners) / CHUNK_SIZE).astype(np.int64)
    assert (plain_floor != g).sum() > 100
    i, j = C.corner_steps(corners, corners, CHUNK_SIZE)
    assert np.array_equal(i, g) and np.array_equal(j, g)
    for col, row in ((1, 2), (15, 63), (32, 32), (40, 7)):
        tile = AdtTile.from_bytes(_tile_bytes(col, row))
        iy, ix = chunk_grid(tile)
        assert np.array_equal(iy * 16 + ix, np.arange(256))  # MCNK order, every chunk found


def _tile_bytes(col, row):
    from wowgrass.render.world.synthetic import synthetic_tile
    from wowgrass.formats.adt import write_adt

    return write_adt(synthetic_tile(col, row))


# -- no conversion written inline outside coords.py -------------------------------------------------
INLINE = re.compile(r"ZEROPOINT\s*-|-\s*ZEROPOINT|32(\.0)?\s*-\s*\w[\w\[\]:, ]*/\s*TILE_SIZE")
ALLOWED = {
    "wowgrass/game/coords.py": "the one home",
    # formats/ sits below game/ and cannot import it: the ADT's own tile from its first chunk, and
    # the chunk positions a new tile gets
    "wowgrass/formats/adt.py": "below game/",
}


def _code(path: Path) -> str:
    """The file's code without comments and strings (docstrings say ``X = ZEROPOINT - p[2]``)."""
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
        if tok.type in (tokenize.COMMENT, tokenize.STRING):
            continue
        out.append(tok.string)
    return " ".join(out)


def test_no_inline_map_coordinates_outside_coords():
    found = []
    for base in ("wowgrass", "cli"):
        for path in sorted((ROOT / base).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in ALLOWED:
                continue
            if INLINE.search(_code(path)):
                found.append(rel)
    assert found == [], f"inline map coordinates (use wowgrass.game.coords): {found}"
    for rel in ALLOWED:
        assert (ROOT / rel).exists(), rel  # an allowance for a file that went is dropped


@pytest.mark.parametrize("size", [TILE_SIZE, CHUNK_SIZE, UNIT_SIZE])
def test_the_fast_steps_are_map_steps_at_every_edge(size):
    """The pick's fast path (coords.step / steps_float / edge) keeps map_steps's rule, edges included."""
    i = np.arange(-2, 66 * int(TILE_SIZE / size) + 2, 7)
    lines = np.asarray(C.map_point(i, i, size)[0], np.float64)
    for v in np.concatenate([lines, np.nextafter(lines, np.inf), np.nextafter(lines, -np.inf), lines - size / 3]):
        assert C.step(float(v), size) == C.map_steps(0.0, v, size)[0]
    v = np.concatenate([lines, np.nextafter(lines, np.inf), np.nextafter(lines, -np.inf)])
    assert np.array_equal(C.steps_float(v, size), C.map_steps(np.zeros_like(v), v, size)[0].astype(np.float64))
    assert [C.edge(int(k), size) for k in i] == list(lines)
