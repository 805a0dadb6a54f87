"""The camera-grid path's per-tile data (wowgrass.grass.grid_tiles): lattice ownership, control texture, height
atlas and their cache file. Pure numpy; the GL side is tests/test_grid_render.py."""

from __future__ import annotations

import numpy as np
import pytest

from wowgrass.errors import ChecksumError, FormatError, StaleBundleError, TruncatedError
from wowgrass.formats.adt import TILE_SIZE, UNIT_SIZE, ZEROPOINT
from wowgrass.grass.grid_tiles import (ANCHOR, CONTROL_SIDE, GRID_VERSION, SLOT_SPACING, build_grid_tile,
                           fan_heights, grid_path_for, instance_cells, load_grid_tile,
                           owner_cells, read_grid_tile, tile_slots, write_grid_tile)
from wowgrass.render.world.synthetic import random_instances, synthetic_tile, tile_origin

COL, ROW = 31, 33


def digest(tile) -> str:
    """sha256 of a GridTile's control and heights."""
    import hashlib

    return hashlib.sha256(tile.control.tobytes() + tile.heights.tobytes()).hexdigest()


def _cells(pos) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Tile-local ADT cell row and column of each position, and how far it lies inside its cell
    (0 at an edge, 0.5 at the centre), from the map's corner: X and Y fall 33.333 / 8 yards a cell."""
    fr = (ZEROPOINT - pos[:, 0]) / UNIT_SIZE - ROW * 128
    fc = (ZEROPOINT - pos[:, 1]) / UNIT_SIZE - COL * 128
    r, c = np.floor(fr).astype(np.int64), np.floor(fc).astype(np.int64)
    inside = np.minimum(np.minimum(fr - r, 1 - (fr - r)), np.minimum(fc - c, 1 - (fc - c)))
    return r, c, inside


@pytest.fixture(scope="module")
def tile_and_grass():
    adt = synthetic_tile(COL, ROW, hole_chunk=37)
    x0, y0 = tile_origin(COL, ROW)
    inst = random_instances(40000, (x0 - TILE_SIZE, y0 - TILE_SIZE), (x0, y0), tile=adt, seed=5)
    # leave the hole chunk and the dirt half of every chunk bare, as the placement would; no blade
    # within a hundredth of a cell of an edge (which cell owns those is a test of its own)
    r, c, inside = _cells(np.asarray(inst["pos"], np.float64))
    keep = ((r // 8) * 16 + c // 8 != 37) & (c % 8 < 4) & (inside > 0.01)
    inst = inst[keep]
    grass = {"a.m2": inst[0::3], "b.m2": inst[1::3], "c.m2": inst[2::3]}
    return adt, grass


def bundle_chunk_counts(adt, grass, models):
    """(256, models) instances per chunk and model, the chunk found by the tile (AdtTile.chunk_index_at)."""
    out = np.zeros((256, len(models)), np.int64)
    for k, m in enumerate(models):
        pos = np.asarray(grass[m]["pos"], np.float64)
        out[:, k] = np.bincount(adt.chunk_index_at(pos[:, 0], pos[:, 1]), minlength=256)
    return out


def test_tiles_partition_the_lattice_and_own_their_cells():
    seen_i, seen_j = [], []
    for col, row in [(0, 0), (31, 32), (32, 31), (63, 63), (5, 40)]:
        i0, i1, j0, j1 = tile_slots(col, row)
        assert 213 <= i1 - i0 <= CONTROL_SIDE and 213 <= j1 - j0 <= CONTROL_SIDE
        ii, jj = np.meshgrid(np.arange(i0, i1), np.arange(j0, j1), indexing="ij")
        gr, gc = owner_cells(ii, jj)
        assert (gr // 128 == row).all() and (gc // 128 == col).all()
        # the neighbouring tiles start where this one ends: no lattice cell is owned twice or never
        assert tile_slots(col, row + 1)[1] == i0 if row < 63 else True
        assert tile_slots(col + 1, row)[3] == j0 if col < 63 else True
        seen_i.append(i1 - i0)
        seen_j.append(j1 - j0)
    assert set(seen_i) | set(seen_j) <= {213, 214}


def test_anchors_keep_clear_of_adt_cell_edges_over_the_whole_map():
    # the shader decides the owner in float32: anchors must never sit near an ADT cell edge
    i = np.arange(-int(ZEROPOINT / SLOT_SPACING) - 2, int(ZEROPOINT / SLOT_SPACING) + 2)
    a = (ZEROPOINT - (i + ANCHOR) * SLOT_SPACING) / UNIT_SIZE
    margin = np.abs(a - np.round(a)).min() * UNIT_SIZE
    assert margin > 0.06  # units; float32 error near 17,066 units is ~0.002


def test_control_counts_equal_the_bundle_per_chunk_and_model(tile_and_grass):
    adt, grass = tile_and_grass
    g = build_grid_tile(adt, grass)
    assert g.models == list(grass) and g.dropped == 0
    want = bundle_chunk_counts(adt, grass, g.models)
    assert (g.chunk_model_counts() == want).all()
    assert (g.model_totals() == [len(v) for v in grass.values()]).all()
    assert want[37].sum() == 0  # the hole chunk
    # every ADT cell owns 1..4 lattice cells and the blades are spread evenly over them
    a, b = g.control.shape[:2]
    ii, jj = np.meshgrid(g.slot_i0 + np.arange(a), g.slot_j0 + np.arange(b), indexing="ij")
    gr, gc = owner_cells(ii, jj)
    owner = ((gr % 128) * 128 + gc % 128).reshape(-1)
    owned = np.bincount(owner, minlength=128 * 128)
    assert owned.min() >= 1 and owned.max() <= 4
    per_slot = g.counts.sum(axis=2).reshape(-1)
    lo = np.full(128 * 128, 1 << 30)
    hi = np.zeros(128 * 128, np.int64)
    np.minimum.at(lo, owner, per_slot)
    np.maximum.at(hi, owner, per_slot)
    assert (hi - lo <= 1).all()


def test_slots_of_bare_cells_are_empty(tile_and_grass):
    adt, grass = tile_and_grass
    g = build_grid_tile(adt, grass)
    a, b = g.control.shape[:2]
    ii, jj = np.meshgrid(g.slot_i0 + np.arange(a), g.slot_j0 + np.arange(b), indexing="ij")
    gr, gc = owner_cells(ii, jj)
    hole = (gr % 128 // 8 == 2) & (gc % 128 // 8 == 5)    # chunk 37: IndexY 2, IndexX 5
    bare = (gc % 8 >= 4) | hole
    assert g.counts[bare].sum() == 0
    assert g.counts[~bare].sum() == sum(len(v) for v in grass.values())


def test_a_cell_keeps_its_four_biggest_models_and_counts_the_rest_dropped():
    adt = synthetic_tile(COL, ROW)
    x0, y0 = tile_origin(COL, ROW)
    one = random_instances(6, (x0 - 1.0, y0 - 1.0), (x0 - 0.5, y0 - 0.5), tile=adt)
    grass = {f"m{k}.m2": one[: 6 - k] for k in range(5)}  # 6, 5, 4, 3, 2 instances in one cell
    g = build_grid_tile(adt, grass)
    assert g.dropped == 2 and list(g.model_totals()) == [6, 5, 4, 3, 0]


def test_an_instance_rounded_over_a_cell_edge_counts_where_it_was_placed():
    adt = synthetic_tile(COL, ROW)
    x0, y0 = tile_origin(COL, ROW)
    edge = x0 - 10 * UNIT_SIZE  # the edge between cell rows 9 and 10
    pos = np.array([[edge - 1.0, y0 - 1.0, 0.0],    # row 10
                    [edge - 2.0, y0 - 1.5, 0.0],    # row 10
                    [edge - 0.004, y0 - 1.2, 0.0],  # row 10 by 0.004 units
                    [edge + 0.004, y0 - 1.2, 0.0],  # row 9 by 0.004 units
                    [edge + 1.0, y0 - 1.0, 0.0],    # row 9
                    [edge + 2.0, y0 - 1.0, 0.0]])   # row 9
    from wowgrass.grass.bundle import pack_instances

    grass = {"a.m2": pack_instances(pos[[0, 1, 3, 4]], 0.0, 1.0), "b.m2": pack_instances(pos[[2, 5]], 0.0, 1.0)}
    a, b = instance_cells(COL, ROW, grass, ["a.m2", "b.m2"])
    assert list(a // 128) == [10, 10, 9, 9]  # a's near-edge instance has company of its model: stays
    assert list(b // 128) == [9, 9]          # b's is alone in row 10 and b grows in row 9: moves
    assert build_grid_tile(adt, grass).dropped == 0


def test_height_atlas_is_the_terrain_fan(tile_and_grass):
    adt, _ = tile_and_grass
    g = build_grid_tile(adt, {})
    x0, y0 = tile_origin(COL, ROW)
    rng = np.random.default_rng(1)
    x = x0 - rng.uniform(0, TILE_SIZE, 5000)
    y = y0 - rng.uniform(0, TILE_SIZE, 5000)
    want = adt.heights_at(adt.chunk_index_at(x, y), x, y)
    assert np.abs(fan_heights(g.heights, COL, ROW, x, y) - want).max() < 1e-3


def test_cache_file_round_trip_and_damage(tile_and_grass, tmp_path):
    adt, grass = tile_and_grass
    g = build_grid_tile(adt, grass, provenance={"bundle_key": "ab" * 32})
    p = write_grid_tile(tmp_path / "t.wgc", g)
    back = read_grid_tile(p, expect_key=g.key)
    assert digest(back) == digest(g) and back.models == g.models and back.provenance == g.provenance
    raw = p.read_bytes()
    with pytest.raises(StaleBundleError):
        read_grid_tile(p, expect_key="00" * 32)
    bad = bytearray(raw)
    bad[len(raw) // 2] ^= 0x40
    p.write_bytes(bytes(bad))
    with pytest.raises(ChecksumError):
        read_grid_tile(p)
    p.write_bytes(raw[:-100])
    with pytest.raises(TruncatedError):
        read_grid_tile(p)
    p.write_bytes(b"WGBN" + raw[4:])
    with pytest.raises(FormatError, match="not a wowgrass grid file"):
        read_grid_tile(p)
    newer = bytearray(raw)
    newer[4:6] = (GRID_VERSION + 1).to_bytes(2, "little")
    p.write_bytes(bytes(newer))
    with pytest.raises(StaleBundleError):
        read_grid_tile(p)


def test_load_grid_tile_caches_beside_the_bundle_and_rebuilds_damage(tile_and_grass, tmp_path):
    adt, grass = tile_and_grass
    bundle = tmp_path / "Map_31_33.coverage.0123456789abcdef.wgb"
    first, hit = load_grid_tile(adt, grass, bundle_path=bundle, bundle_key="cd" * 32)
    path = grid_path_for(bundle)
    assert not hit and path.exists() and path.name == "Map_31_33.coverage.0123456789abcdef.wgc"
    again, hit = load_grid_tile(adt, grass, bundle_path=bundle, bundle_key="cd" * 32)
    assert hit and digest(again) == digest(first)
    raw = bytearray(path.read_bytes())
    raw[200] ^= 1
    path.write_bytes(bytes(raw))
    fixed, hit = load_grid_tile(adt, grass, bundle_path=bundle, bundle_key="cd" * 32)
    assert not hit and digest(fixed) == digest(first)
    # a new bundle key (the bundle was re-baked) builds a new file and drops the old one
    newer = tmp_path / "Map_31_33.coverage.fedcba9876543210.wgb"
    _, hit = load_grid_tile(adt, grass, bundle_path=newer, bundle_key="ef" * 32)
    assert not hit and grid_path_for(newer).exists() and not path.exists()


def test_a_tile_without_grass_reads_back_and_counts_nothing(tile_and_grass, tmp_path):
    """Found by benchmarks/fuzz_cov.py (tests/fixtures/crashes/grid-01b19f342bf1): the grid file
    of a tile with no grass (an empty model table) made chunk_model_counts raise IndexError."""
    adt, _grass = tile_and_grass
    p = tmp_path / "t.wgc"
    write_grid_tile(p, build_grid_tile(adt, {}, provenance={"bundle_key": "0" * 64}))
    back = read_grid_tile(p)
    assert back.models == [] and back.chunk_model_counts().shape == (256, 0)
    assert back.model_totals().shape == (0,)


def test_blades_of_a_model_the_table_lacks_are_refused(tile_and_grass, tmp_path):
    """A control texel counting blades of model 0 in a file whose model table is empty."""
    import struct

    from wowgrass.grass.grid_tiles import HEADER_SIZE, file_checksum, grid_tile_bytes

    adt, _grass = tile_and_grass
    tile = build_grid_tile(adt, {}, provenance={"bundle_key": "0" * 64})
    tile.control[3, 4, 0] = 5 << 16   # model 0, 5 blades
    raw = bytearray(grid_tile_bytes(tile))
    struct.pack_into("<I", raw, HEADER_SIZE - 4, file_checksum(raw))
    p = tmp_path / "t.wgc"
    p.write_bytes(bytes(raw))
    with pytest.raises(FormatError, match="model") as err:
        read_grid_tile(p)
    assert err.value.offset is not None
