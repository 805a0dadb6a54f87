"""The sample world's procedural generation, checked as arrays (no writers involved)."""

from __future__ import annotations

import numpy as np
import pytest

from wowgrass.samples import models as M
from wowgrass.samples import tables as T
from wowgrass.samples import textures as X
from wowgrass.samples.noise import fbm
from wowgrass.formats.adt import ZEROPOINT
from wowgrass.samples.heights import (
    CHUNK_SIZE, DIRT, GRASS, HALF, HEIGHT_QUANTUM, ROAD, ROCK, UNIT_SIZE, SampleTerrain,
)

OUTER_LAST_COL = np.array([r * 17 + 8 for r in range(9)])
OUTER_FIRST_COL = np.array([r * 17 for r in range(9)])
OUTER_LAST_ROW = np.arange(8 * 17, 8 * 17 + 9)
OUTER_FIRST_ROW = np.arange(9)


@pytest.fixture(scope="module")
def terrain2x1():
    return SampleTerrain((2, 1), seed=0)


@pytest.fixture(scope="module")
def tiles2x1(terrain2x1):
    t = terrain2x1
    return [t.tile(t.col0 + c, t.row0, alpha_bits=8) for c in range(2)]


@pytest.fixture(scope="module")
def terrain2x2():
    return SampleTerrain((2, 2), seed=0)


def test_tiles_sit_around_the_middle_of_the_grid(terrain2x2):
    assert (terrain2x2.col0, terrain2x2.row0) == (31, 31)
    one = SampleTerrain((1, 1), seed=0)
    assert (one.col0, one.row0) == (32, 32)


def test_heights_are_continuous_across_chunks_and_tiles(tiles2x1):
    a, b = tiles2x1
    for t in (a, b):
        z = t.abs_heights.reshape(16, 16, 145)
        # east neighbour within the tile, south neighbour within the tile: exactly equal
        assert np.array_equal(z[:, :-1][..., OUTER_LAST_COL], z[:, 1:][..., OUTER_FIRST_COL])
        assert np.array_equal(z[:-1][..., OUTER_LAST_ROW], z[1:][..., OUTER_FIRST_ROW])
    za = a.abs_heights.reshape(16, 16, 145)
    zb = b.abs_heights.reshape(16, 16, 145)
    assert b.col == a.col + 1
    assert np.array_equal(za[:, 15][..., OUTER_LAST_COL], zb[:, 0][..., OUTER_FIRST_COL])
    na = a.normals.reshape(16, 16, 145, 3)
    nb = b.normals.reshape(16, 16, 145, 3)
    assert np.array_equal(na[:, 15][:, OUTER_LAST_COL], nb[:, 0][:, OUTER_FIRST_COL])


def test_heights_sample_the_world_not_the_layout(terrain2x2):
    # The same tile cut from a 1x1 and a 2x2 sample has the same heights: noise is in world space.
    one = SampleTerrain((1, 1), seed=0).tile(32, 32)
    four = terrain2x2.tile(32, 32)
    assert np.array_equal(one.abs_heights, four.abs_heights)
    # and a vertex's height is the (quantised) height function at its world coordinates
    chunk, vert = 37, 17 * 3 + 9 + 2          # an inner vertex
    x, y = one.positions[chunk, :2].astype(np.float64)
    r, c = 3 + 0.5, 2 + 0.5
    fi = (ZEROPOINT - (x - r * UNIT_SIZE)) / HALF
    fj = (ZEROPOINT - (y - c * UNIT_SIZE)) / HALF
    want = np.round(terrain2x2.height_at_fine(round(fi), round(fj)) / HEIGHT_QUANTUM) * HEIGHT_QUANTUM
    assert one.abs_heights[chunk, vert] == pytest.approx(want, abs=1e-6)


def test_positions_follow_the_adt_convention(tiles2x1):
    # tile (col 31, row 32): its north-west corner at X = 17066.667 - 32 x 533.333 = 0,
    # Y = 17066.667 - 31 x 533.333 = 533.333 (as continent4229.adt's chunk 0 (1600, -5333.334) is tile 42, 29)
    t, east = tiles2x1
    assert (t.col, t.row, east.col, east.row) == (31, 32, 32, 32)
    assert t.positions[0, :2] == pytest.approx([0.0, 533.333], abs=1e-2)
    assert east.positions[0, :2] == pytest.approx([0.0, 0.0], abs=1e-2)
    # chunk 1 is one chunk (33.333 yards) east (Y decreases), chunk 16 one south (X decreases)
    assert t.positions[1, :2] == pytest.approx([0.0, 500.0], abs=1e-2)
    assert t.positions[16, :2] == pytest.approx([-33.333, 533.333], abs=1e-2)
    assert t.positions[255, :2] == pytest.approx([-500.0, 33.333], abs=1e-2)
    assert (t.heights >= 0).all() and (t.heights.min(axis=1) == 0).all()


def test_normals_point_up_and_follow_the_slope(terrain2x2):
    t = terrain2x2.tile(31, 31)
    n = t.normals.astype(np.float64)
    length = np.linalg.norm(n, axis=-1)
    assert np.abs(length - 127).max() < 2.0
    assert (t.normals[..., 2] > 0).all()
    # height rises towards the west (+Y) => the normal leans east (-Y): compare signs of gradients
    z = t.abs_heights.astype(np.float64)
    dzdy = -(z[:, OUTER_LAST_COL] - z[:, OUTER_FIRST_COL]).mean(axis=1) / CHUNK_SIZE   # per chunk, +Y west
    ny = n[:, OUTER_FIRST_COL, 1].mean(axis=1)
    strong = np.abs(dzdy) > 0.15
    assert strong.sum() > 5
    assert (np.sign(ny[strong]) == -np.sign(dzdy[strong])).mean() > 0.9


def test_relief_is_gentle_with_some_steep_spots(terrain2x2):
    lattice = terrain2x2.lattice()
    s = lattice.fine_slope[1:-1, 1:-1]
    assert np.median(s) < 0.3                          # mostly grassy slopes (< 17 degrees)
    steep = (s > 1.0).mean()                           # > 45 degrees
    assert 0.002 < steep < 0.1
    z = lattice.fine
    assert 30 < z.max() - z.min() < 200


def test_layers_are_well_formed(terrain2x2):
    for col, row in [(31, 31), (32, 32)]:
        t = terrain2x2.tile(col, row, alpha_bits=8)
        assert ((t.n_layers >= 1) & (t.n_layers <= 4)).all()
        assert (t.layer_kind[:, 0] == GRASS).all()
        for i in range(256):
            kinds = t.layer_kind[i, : t.n_layers[i]]
            assert (np.diff(kinds) > 0).all()                   # each kind once, in stack order
            assert (t.layer_kind[i, t.n_layers[i]:] == -1).all()
            # every layer above the base is present somewhere in the chunk; missing ones are empty
            assert all(t.alpha[i, k].max() > 0 for k in range(1, t.n_layers[i]))
            assert (t.alpha[i, t.n_layers[i]:] == 0).all()
        assert (t.alpha[:, 0] == 0).all()
        assert (t.alpha.astype(np.int32).sum(axis=1) <= 255).all()


def test_four_bit_alpha_is_quantised_and_fixed(terrain2x2):
    t = terrain2x2.tile(31, 32, alpha_bits=4, fix_alpha=True)
    assert (t.alpha % 17 == 0).all()
    assert np.array_equal(t.alpha[..., 63], t.alpha[..., 62])
    assert np.array_equal(t.alpha[..., 63, :], t.alpha[..., 62, :])
    assert (t.alpha.astype(np.int32).sum(axis=1) <= 255).all()


def test_doodad_mapping_is_the_dominant_layer_per_cell(terrain2x2):
    t = terrain2x2.tile(31, 32, alpha_bits=8)
    assert (t.doodad_mapping < t.n_layers[:, None, None]).all()
    rng = np.random.default_rng(1)
    for i in rng.choice(256, 12, replace=False).tolist() + [int(np.argmax(t.n_layers))]:
        n = int(t.n_layers[i])
        w = t.alpha[i, :n].astype(np.int32)
        w[0] = 255 - w[1:].sum(axis=0)
        for r in range(8):
            for c in range(8):
                cell = w[:, r * 8:(r + 1) * 8, c * 8:(c + 1) * 8].reshape(n, -1)
                votes = np.bincount(cell.argmax(axis=0), minlength=n)
                assert t.doodad_mapping[i, r, c] == int(votes.argmax()), (i, r, c)


def test_every_tile_has_road_and_the_road_suppresses_ground_effects(terrain2x2):
    for col in (31, 32):
        for row in (31, 32):
            t = terrain2x2.tile(col, row, alpha_bits=8)
            road = np.zeros((256, 64, 64), np.uint8)
            has = t.layer_kind == ROAD
            ci, li = np.nonzero(has)
            road[ci] = t.alpha[ci, li]
            assert has.any(), (col, row)
            cell_max = road.reshape(256, 8, 8, 8, 8).max(axis=(2, 4))
            assert t.no_effect_doodad[cell_max >= 24].all()
            hole = np.zeros((256, 8, 8), bool)
            for i in np.flatnonzero(t.holes):
                for bit in range(16):
                    if t.holes[i] >> bit & 1:
                        hole[i, (bit // 4) * 2:(bit // 4) * 2 + 2, (bit % 4) * 2:(bit % 4) * 2 + 2] = True
            assert not t.no_effect_doodad[(cell_max < 24) & ~hole].any()


def test_rock_grows_on_steep_ground(terrain2x2):
    t = terrain2x2.tile(31, 32, alpha_bits=8)
    with_rock = (t.layer_kind == ROCK).any(axis=1)
    z = t.abs_heights
    relief = z.max(axis=1) - z.min(axis=1)
    assert with_rock.sum() > 3
    assert np.median(relief[with_rock]) > 2 * np.median(relief[~with_rock])


def test_a_few_holes(terrain2x2):
    total = sum(int((terrain2x2.tile(c, r).holes != 0).sum()) for c in (31, 32) for r in (31, 32))
    assert 1 <= total <= 8


def test_grass_variants_and_dirt_all_occur(terrain2x2):
    t = terrain2x2.tile(31, 32)
    assert set(np.unique(t.grass_variant).tolist()) == {0, 1, 2}
    assert (t.layer_kind == DIRT).any()


def test_generation_is_deterministic_and_seeded():
    a = SampleTerrain((1, 1), seed=0).tile(32, 32)
    b = SampleTerrain((1, 1), seed=0).tile(32, 32)
    c = SampleTerrain((1, 1), seed=1).tile(32, 32)
    assert np.array_equal(a.heights, b.heights) and np.array_equal(a.alpha, b.alpha)
    assert not np.array_equal(a.abs_heights, c.abs_heights)


def test_fbm_tiles_with_a_period():
    u = np.arange(64) / 8.0
    n = fbm(u[None, :], u[:, None], 3, octaves=3, period=8)
    m = fbm(u[None, :] + 8.0, u[:, None], 3, octaves=3, period=8)
    assert np.allclose(n, m)
    assert np.abs(n).max() <= 1.0


# -- models and textures ----------------------------------------------------------------------
def test_grass_sizes_follow_the_size_oracle():
    heights = {g.name: float(M.grass_clump(g).positions[:, 2].max()) for g in M.GRASS}
    assert [g.name for g in M.GRASS] == [f"ElwGra0{i}" for i in range(1, 9)]
    assert heights.pop("ElwGra02") == pytest.approx(1.593, abs=1e-6)
    assert all(0.288 - 1e-6 <= h <= 0.620 + 1e-6 for h in heights.values())
    assert min(heights.values()) == pytest.approx(0.288) and max(heights.values()) == pytest.approx(0.620)
    human = M.human_figure().positions
    assert float(human[:, 2].max()) == pytest.approx(2.035) and float(human[:, 2].min()) == 0.0


def test_grass_clumps_are_crossed_quads_through_the_centre():
    for g in M.GRASS:
        m = M.grass_clump(g)
        assert g.quads in (2, 3) and len(m.positions) == 4 * g.quads and len(m.triangles) == 6 * g.quads
        quads = m.positions.reshape(g.quads, 4, 3)
        centres = quads[:, :, :2].mean(axis=1)
        assert np.abs(centres).max() < 1e-6                     # every quad crosses the origin
        d = quads[:, 1, :2] - quads[:, 0, :2]
        d /= np.linalg.norm(d, axis=1, keepdims=True)
        assert np.abs(d @ d.T - np.eye(g.quads)).max() < 0.99   # not parallel: they cross
        assert m.positions[:, 2].min() == 0.0


def test_grass_sheets_are_alpha_tested_blades_reaching_the_top():
    for i, g in enumerate(M.GRASS):
        img = X.grass_rgba(i, 64, g.tex_height, g.blades)
        a = img[..., 3]
        assert set(np.unique(a).tolist()) == {0, 255}
        assert a[0].max() == 255 and a[-1].max() == 255        # tallest blade touches the top row
        assert 0.1 < (a > 0).mean() < 0.6                       # blades, not a filled quad
        assert (img[a > 0, 1] > img[a > 0, 2]).all()            # green


def test_terrain_textures_tile_seamlessly():
    for kind in ("grass", "dirt", "rock", "road"):
        img = X.terrain_rgba(kind).astype(np.float64)
        wrap = np.abs(img[:, 0] - img[:, -1]).mean()
        inner = np.abs(np.diff(img, axis=1)).mean()
        assert wrap < 3 * inner + 1, kind
        assert img[..., :3].std() > 3, kind                    # noise-tinted, not flat


def test_tables_key_doodads_like_each_client():
    from wowgrass.formats.dbc import read_table

    for build in ("1.12", "2.4.3", "3.3.5"):
        tex, _ = read_table(T.ground_effect_texture(build), T.TEXTURE_DBC, build=build)
        doo, _ = read_table(T.ground_effect_doodad(build), T.DOODAD_DBC, build=build)
        key = doo.column("ID" if build == "3.3.5" else "DoodadIdTag").tolist()
        ids = tex.column("DoodadID")
        used = ids[(ids != -1) & (ids != 0)]
        assert set(used.tolist()) <= set(key)
        assert doo.strings(doo.column("Doodadpath"))[0] == "ElwGra01.mdl"
        dens = tex.column("Density").tolist()
        assert 8 in dens and max(dens) > 24
        if build == "3.3.5":
            w = tex.column("DoodadWeight")
            assert (w.sum(axis=1) <= 16).all() and (w.sum(axis=1) > 0).sum() == 4
        else:
            assert tex.field_count == 7 and (doo.column("ID") - doo.column("DoodadIdTag") == 1).all()
