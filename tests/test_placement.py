"""Placement: the coverage formula and open choices, the client strategy, determinism, and the
vectorized code against the plain per-cell reference (tests/placement_reference.py)."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from placement_fakes import make_catalog, make_tile, random_tile, std_catalog
from placement_reference import (ClientRandom, as_client_rows, as_rows, bag_reference, client_reference,
                                 coverage_reference)

from wowgrass.grass.placement import (
    CLIENT_NOISE,
    UNIT,
    ClientPlacement,
    PlacementConstants,
    CoveragePlacement,
    chunk_keys,
    client_draws,
    client_reals,
    client_seed,
    coverage_sums,
    draw,
    make_strategy,
    slot_thresholds,
    weight_bags,
)

GRASS = make_catalog([(453, 24, [0, 1, 2, 3]), (1493, 0, [-1, -1, -1, -1]), (8, 8, [0, -1, -1, -1]),
                      (30, 30, [1, 2, -1, -1]), (0x55, 0, [2, -1, -1, -1])])


def clumps_for(tile, catalog=GRASS, **k):
    clumps, _ = CoveragePlacement(PlacementConstants(**k)).cell_clumps(tile, catalog)
    return clumps


def two_layer_tile(effect0, effect1, alpha1, textures=("Tileset\\A.blp", "Tileset\\B.blp")):
    """Layer 0 + layer 1 everywhere, layer 1's alpha given per texel (64x64) or a constant."""
    alpha = np.zeros((256, 4, 64, 64), np.uint8)
    alpha[:, 1] = alpha1
    return make_tile(n_layers=2, effects=(effect0, effect1), textures=textures, alpha=alpha)


# ----------------------------------------------------------------------------- the coverage formula


def test_worked_example_full_coverage_high_density_gives_12():
    # one layer, no alpha map: layer 0 weight 255 everywhere -> coverage 255; density 24 -> 24 -> 12
    assert (clumps_for(make_tile(effects=(453,))) == 12).all()
    # density 30 is capped to 24 first, then to 12 clumps
    assert (clumps_for(make_tile(effects=(30,))) == 12).all()


def test_worked_example_half_coverage_density_8_gives_4():
    # half the texels of every cell fully covered by layer 1 (effect 8, density 8) -> coverage 127.5
    a = np.zeros((64, 64), np.uint8)
    a[:, ::2] = 255
    tile = two_layer_tile(1493, 8, a)  # layer 0 has no doodads, so layer 1 is the grass layer
    assert (coverage_sums(tile)[:, 1] == 64 * 255 // 2).all()
    assert (clumps_for(tile) == 4).all()


def test_formula_is_exact_at_integer_boundaries():
    # coverage 128 (just above half) at density 8 -> ceil(4.0157) = 5; 127 -> ceil(3.98) = 4
    for value, want in ((128, 5), (127, 4), (255, 8), (64, 3)):
        tile = two_layer_tile(1493, 8, value)
        assert (clumps_for(tile) == want).all(), value


def test_low_density_and_zero_density_floor_at_one():
    # coverage 40, density 8: ceil(40/255*8) = ceil(1.25) = 2; density 0 (effect 0x55) -> max(1, 0) = 1
    assert (clumps_for(two_layer_tile(1493, 8, 40)) == 2).all()
    assert (clumps_for(two_layer_tile(1493, 0x55, 200)) == 1).all()


def test_coverage_minimum():
    assert (clumps_for(two_layer_tile(1493, 8, 31)) == 0).all()
    assert (clumps_for(two_layer_tile(1493, 8, 32)) == 2).all()  # ceil(32/255*8) = ceil(1.004)
    assert (clumps_for(two_layer_tile(1493, 8, 31), coverage_min=31) == 1).all()


def test_road_layer_suppresses_grass_by_texture_name():
    textures = ("Tileset\\Elwynn\\ElwynnGrassBase.blp", "Tileset\\Elwynn\\ElwynnCobblestoneRoad.blp")
    # layer 0 is grass (effect 453); layer 1 is a road texture with no effect
    assert (clumps_for(two_layer_tile(453, 0, 24, textures)) == 0).all()  # road alpha 24 >= 24
    assert (clumps_for(two_layer_tile(453, 0, 23, textures)) > 0).all()
    # the same alpha under a non-road name does not suppress
    assert (clumps_for(two_layer_tile(453, 0, 200, ("a.blp", "b.blp"))) > 0).all()
    # patterns are configurable
    assert (clumps_for(two_layer_tile(453, 0, 200, ("a.blp", "b.blp")), road_patterns=("b*",)) == 0).all()


def test_grass_layer_is_highest_coverage_among_doodad_layers():
    tile = two_layer_tile(8, 453, 200)  # layer 1 (density 24) covers 200, layer 0 covers 55
    _, rows = CoveragePlacement().cell_clumps(tile, GRASS)
    assert (rows == GRASS.lookup([453])[0]).all()
    tile = two_layer_tile(8, 453, 100)  # now layer 0 (155, density 8) wins
    clumps, rows = CoveragePlacement().cell_clumps(tile, GRASS)
    assert (rows == GRASS.lookup([8])[0]).all()
    assert (clumps == math.ceil(155 / 255 * 8)).all()
    # a layer without doodads never carries the effect even when it dominates
    tile = two_layer_tile(8, 1493, 250)
    clumps, rows = CoveragePlacement().cell_clumps(tile, GRASS)
    assert (clumps == 0).all()  # layer 0 keeps only coverage 5 < 32


def test_layer0_weight_clips_where_other_layers_overflow():
    alpha = np.zeros((256, 4, 64, 64), np.uint8)
    alpha[:, 1] = 200
    alpha[:, 2] = 200  # 400 > 255 at every texel: layer 0 weight is 0, not negative
    tile = make_tile(n_layers=3, effects=(453, 1493, 1493), textures=("a", "b", "c"), alpha=alpha)
    sums = coverage_sums(tile)
    assert (sums[:, 0] == 0).all()
    assert (sums[:, 1] == 200 * 64).all()
    # a single overflowing texel in one cell
    alpha = np.zeros((256, 4, 64, 64), np.uint8)
    alpha[7, 1, 9, 10] = 200
    alpha[7, 2, 9, 10] = 100
    tile = make_tile(n_layers=3, effects=(453, 1493, 1493), textures=("a", "b", "c"), alpha=alpha)
    sums = coverage_sums(tile)
    assert sums[7, 0, 1, 1] == 255 * 64 - 255  # that texel contributes 0, not -45
    assert sums[7, 0, 0, 0] == 255 * 64


def test_coverage_sums_match_a_plain_texel_sum():
    tile = random_tile(seed=4)
    tile.alpha[3, 1:4, 0:8, 0:8] = 250  # force overflow somewhere
    a = tile.alpha.astype(np.int64)
    w = a.copy()
    w[:, 0] = np.clip(255 - a[:, 1:].sum(axis=1), 0, 255)
    want = w.reshape(256, 4, 8, 8, 8, 8).sum(axis=(3, 5))
    want[np.arange(4)[None, :] >= tile.n_layers[:, None]] = 0
    assert (coverage_sums(tile) == want).all()


def test_masked_cells_and_holes_are_skipped():
    tile = make_tile(effects=(453,))
    tile.no_effect_doodad[3, 2, 5] = True
    tile.holes[9] = 1 << 5  # bit (r>>1)*4 + (c>>1) = 5 -> rows 2-3, cols 2-3
    clumps = clumps_for(tile)
    assert clumps[3, 2, 5] == 0
    assert (clumps[9, 2:4, 2:4] == 0).all()
    assert clumps.sum() == 12 * (256 * 64 - 1 - 4)
    inst = CoveragePlacement().place(tile, GRASS, map_name="Test")
    counts = inst.cell_counts()
    assert counts[3, 2, 5] == 0 and (counts[9, 2:4, 2:4] == 0).all()


def test_instances_lie_in_their_cell_on_the_fan():
    from wowgrass.formats.adt import AdtTile

    tile = random_tile(seed=2)
    inst = CoveragePlacement().place(tile, std_catalog(), map_name="Test")
    assert len(inst) > 1000
    ch = inst.chunk.astype(np.int64)
    r, c = inst.cell // 8, inst.cell % 8
    base = tile.positions[ch].astype(np.float64)
    v = (base[:, 0] - inst.pos[:, 0]) / UNIT - r
    u = (base[:, 1] - inst.pos[:, 1]) / UNIT - c
    assert v.min() > -1e-3 and v.max() < 1 + 1e-3 and u.min() > -1e-3 and u.max() < 1 + 1e-3
    # jitter covers the cell, not just its centre
    assert u.min() < 0.05 and u.max() > 0.95
    adt = AdtTile.from_arrays(tile.col, tile.row, heights=tile.heights, base_heights=tile.positions[:, 2])
    z = adt.heights_at(ch, inst.pos[:, 0], inst.pos[:, 1])
    assert np.abs(z - inst.pos[:, 2]).max() < 1e-3
    assert (inst.scale == 1.0).all()
    assert inst.yaw.min() >= 0 and inst.yaw.max() < 2 * math.pi


def test_slot_choice_follows_weights_and_skips_empty_slots():
    cat = make_catalog([(1, 24, [0, 1, -1, 3], [6, 2, 5, 0])], has_weights=True)
    inst = CoveragePlacement().place(make_tile(effects=(1,)), cat, map_name="w")
    share = inst.model_counts() / len(inst)
    assert share[2] == 0 and share[3] == 0  # empty slot and zero weight
    assert abs(share[0] - 0.75) < 0.02 and abs(share[1] - 0.25) < 0.02
    # without weights (1.12 rows): uniform among non-empty slots
    cat = make_catalog([(1, 24, [0, 1, -1, 3])])
    inst = CoveragePlacement().place(make_tile(effects=(1,)), cat, map_name="w")
    share = inst.model_counts() / len(inst)
    assert share[2] == 0
    assert np.allclose(share[[0, 1, 3]], 1 / 3, atol=0.02)


# ----------------------------------------------------------------------------- determinism


def test_same_tile_same_instances_and_map_name_matters():
    tile = random_tile(seed=3)
    cat = std_catalog(True)
    a = CoveragePlacement().place(tile, cat, map_name="Azeroth")
    b = CoveragePlacement().place(tile, cat, map_name="azeroth")  # case-insensitive
    assert np.array_equal(a.pos, b.pos) and np.array_equal(a.model, b.model)
    c = CoveragePlacement().place(tile, cat, map_name="Kalimdor")
    assert not np.array_equal(a.pos, c.pos)
    d = CoveragePlacement(PlacementConstants(seed=1)).place(tile, cat, map_name="Azeroth")
    assert not np.array_equal(a.pos, d.pos)


def test_chunks_draw_independently():
    tile = random_tile(seed=3)
    cat = std_catalog()
    a = CoveragePlacement().place(tile, cat, map_name="M")
    tile.no_effect_doodad[100] = True  # change one chunk only
    b = CoveragePlacement().place(tile, cat, map_name="M")
    keep = a.chunk != 100
    assert np.array_equal(a.pos[keep], b.pos) and np.array_equal(a.model[keep], b.model)


def test_same_result_in_another_process():
    tile = random_tile(seed=5)
    inst = CoveragePlacement().place(tile, std_catalog(True), map_name="Proc")
    here = inst.pos.tobytes() + inst.model.tobytes() + inst.yaw.tobytes()
    code = (
        "import sys, hashlib; sys.path.insert(0, sys.argv[1])\n"
        "from placement_fakes import random_tile, std_catalog\n"
        "from wowgrass.grass.placement import CoveragePlacement\n"
        "i = CoveragePlacement().place(random_tile(seed=5), std_catalog(True), map_name='Proc')\n"
        "print(hashlib.sha256(i.pos.tobytes() + i.model.tobytes() + i.yaw.tobytes()).hexdigest())\n"
    )
    tests = str(Path(__file__).parent)
    out = subprocess.run([sys.executable, "-c", code, tests], capture_output=True, text=True, check=True)
    import hashlib

    assert out.stdout.strip() == hashlib.sha256(here).hexdigest()


def test_random_stream_matches_pure_python_splitmix():
    from placement_reference import chunk_key
    from placement_reference import draw as ref_draw

    keys = chunk_keys("Azeroth", 38, 46)
    assert [int(k) for k in keys[:3]] == [chunk_key("Azeroth", 38, 46, i) for i in range(3)]
    from wowgrass.grass.placement import counters

    got = draw(keys[7], counters(np.arange(5), 3, 1))
    assert [int(x) for x in got] == [ref_draw(int(keys[7]), a, 3, 1) for a in range(5)]


def test_slot_thresholds_give_the_float_choice():
    # the integer compares against slot_thresholds choose the slot the float64 rule
    # #{j < 3 : cum[j] <= (word * 2**-32) * cum[3]} does, at and around every threshold
    rng = np.random.default_rng(5)
    weights = np.concatenate([rng.integers(0, 12, (300, 4)), rng.integers(0, 2, (60, 4)),
                              [[1, 1, 1, 1], [0, 0, 0, 7], [3, 0, 0, 0], [1, 2, 3, 1000]]]).astype(np.float64)
    weights = weights[weights.sum(axis=1) > 0]
    cum = np.cumsum(weights, axis=1)
    thr = slot_thresholds(cum)
    near = (thr[:, :, None] + np.arange(-3, 4)).reshape(len(cum), -1)
    words = np.concatenate([near, rng.integers(0, 1 << 32, (len(cum), 200)),
                            np.tile([0, (1 << 32) - 1], (len(cum), 1))], axis=1)
    words = np.clip(words, 0, (1 << 32) - 1)
    u = words.astype(np.float64) * (1.0 / 4294967296.0)
    want = (cum[:, None, :3] <= (u * cum[:, 3:])[..., None]).sum(axis=2)
    got = (words[..., None] >= thr[:, None, :]).sum(axis=2)
    assert (got == want).all()
    assert ((thr >= 0) & (thr <= 1 << 32)).all()


# ----------------------------------------------------------------------------- vectorized == reference


@pytest.mark.parametrize("weights", [False, True])
def test_coverage_vectorized_matches_reference(weights):
    tile = random_tile(seed=11)
    cat = std_catalog(weights)
    got = as_rows(CoveragePlacement().place(tile, cat, map_name="Ref"))
    want = coverage_reference(tile, cat, "Ref")
    assert len(got) > 5000
    assert got == want


# ----------------------------------------------------------------------------- the clients' scatter


def test_client_generator_gives_the_values_in_client_md():
    assert sorted(CLIENT_NOISE.view(np.uint8).tolist()) == list(range(256))  # a permutation of 0..255
    assert CLIENT_NOISE.view(np.uint8)[:8].tolist() == [0x8E, 0x14, 0x27, 0x99, 0xFD, 0xAA, 0xC7, 0x08]
    chunk0 = client_seed(608, 736)  # chunk 0 of Azeroth_38_46
    assert int(chunk0) == 0x02E00260
    assert client_draws([chunk0], 4)[0].tolist() == [0x898AFAED, 0x5495DDBB, 0xB159E5DF, 0x05AE220C]
    assert client_draws([client_seed(672, 464)], 4)[0].tolist() == [0xF96FBF6B, 0x48E0A239, 0x347F2C00, 0x6E24AC39]
    assert np.allclose(client_reals(client_draws([chunk0], 3)[0]), [0.914217353, -0.829170823, 0.297672391],
                       rtol=0, atol=5e-9)
    rng = ClientRandom(0x01D002A0)  # the plain transcription agrees
    assert [rng.uint32() for _ in range(4)] == [0xF96FBF6B, 0x48E0A239, 0x347F2C00, 0x6E24AC39]


def test_client_streams_are_the_sequential_generator():
    seeds = np.random.default_rng(7).integers(0, 2**32, 40, dtype=np.uint64).astype(np.uint32)
    seeds[:3] = (0, 0xFFFFFFFF, 61 * 59 * 53 * 47)  # lane residues all zero
    got = client_draws(seeds, 1000)
    for s, row in zip(seeds.tolist(), got):
        rng = ClientRandom(s)
        assert row.tolist() == [rng.uint32() for _ in range(1000)]
    reals = client_reals(got)
    rng = ClientRandom(int(seeds[5]))
    assert reals[5].tolist() == [rng.real() for _ in range(1000)]
    assert reals.min() >= -1 and reals.max() <= 1 and reals.dtype == np.float32
    # runs continued from a later draw, in rows of one length and end to end, give the same numbers
    from wowgrass.grass.placement import _client_stream

    for counts in ([300] * 40, [1, 0, 900] + [2] * 37):
        flat, start = _client_stream(seeds, got[:, 99], 100, counts)
        for i in range(40):
            assert flat[start[i]:start[i] + counts[i]].tolist() == got[i, 100:100 + counts[i]].tolist()


def client_rows(tile, catalog, **k):
    c = PlacementConstants(**k)
    return as_client_rows(ClientPlacement(c).place(tile, catalog, map_name="Ref")), client_reference(tile, catalog, c)


@pytest.mark.parametrize("weights", [False, True])
def test_client_vectorized_matches_reference(weights):
    tile = random_tile(seed=12)
    tile.heights *= 0.15  # steep in places: the 3.3.5 slope rule rejects some, not all
    cat = std_catalog(weights)
    got, want = client_rows(tile, cat, client_picks=24, client_no_effect_335=int(weights))
    assert len(got) > 1000
    assert got == want


def test_weight_bag_matches_the_dealing_procedure():
    cat = make_catalog(
        [(1, 8, [0, 1, 2, 3], [1, 1, 1, 1]), (2, 8, [0, 1, 2, 3], [3, 0, 1, 0]), (3, 8, [0, 1, 2, 3], [16, 0, 0, 0]),
         (4, 8, [0, 1, 2, 3], [0, 0, 0, 0]), (5, 8, [0, 1, 2, 3], [10, 9, 0, 2]), (6, 8, [0, 1, 2, 3], [-3, 40, 7, 1])],
        has_weights=True,
    )
    bags = weight_bags(cat, np.arange(6))
    for i in range(6):
        assert bags[i].tolist() == bag_reference(cat.slot_weight[i])
    assert sorted(bags[0].tolist()) == [0] * 4 + [1] * 4 + [2] * 4 + [3] * 4
    assert bags[1].tolist() == [0, 1, 2, 3, 0, 1, 2, 2, 0, 1, 0, 3, 0, 0, 2, 3]  # worked by hand
    assert (bags[2] == 0).all()
    assert sorted(bags[3].tolist()) == [0] * 4 + [1] * 4 + [2] * 4 + [3] * 4  # no weights: round robin


def test_client_density_zero_means_8_and_round_robin_slots():
    cat = make_catalog([(1, 0, [0, 1, 2, 3])])  # 1.12: no weights
    tile = make_tile(effects=(1,), height_amp=0.0)
    inst = ClientPlacement().place(tile, cat, map_name="c")
    assert len(inst) == 256 * 16 * 8  # every pick lands (no masks), 8 doodads each
    # round robin: each pick's 8 doodads cycle through the 4 slots twice
    assert (inst.model_counts() == len(inst) // 4).all()
    assert inst.scale.min() >= 0.9 and inst.scale.max() <= 1.1
    assert inst.yaw.min() >= -math.pi - 1e-6 and inst.yaw.max() <= math.pi + 1e-6 and inst.yaw.min() < 0
    # three times the picks, three times the doodads; repeats: some cell is picked twice
    assert len(ClientPlacement(PlacementConstants(client_picks=48)).place(tile, cat, map_name="c")) == 3 * len(inst)
    assert inst.cell_counts().max() >= 16


def test_client_has_no_density_cap():
    cat = make_catalog([(1, 99, [0, 1, 2, 3])])
    assert len(ClientPlacement().place(make_tile(effects=(1,)), cat, map_name="c")) == 256 * 16 * 99


def test_client_empty_slots_still_take_their_two_draws():
    tile = make_tile(effects=(1,), height_amp=0.0)
    sparse = make_catalog([(1, 8, [0, -1, -1, -1])])  # 0xFFFFFFFF in three slots
    inst = ClientPlacement().place(tile, sparse, map_name="c")
    assert len(inst) == 256 * 16 * 2 and (inst.model == 0).all()  # (n + pick) & 3 == 0: 2 of 8
    # chunk 0 by hand: 32 draws of picks; pick 0 places n = 0 (rx, ry, scale, yaw) and n = 4,
    # after n = 1..3 took their rx, ry each; pick 1 places n = 3 and n = 7
    rng = ClientRandom(int(client_seed(16 * 32, 16 * 32)))
    draws = [rng.real() for _ in range(32 + 4 + 6 + 4 + 6 + 4)]
    scale = [np.float32(draws[i]) * np.float32(0.1) + np.float32(1) for i in (34, 34 + 4 + 6)]
    assert inst.scale[:2].tolist() == scale
    got, want = client_rows(tile, sparse)
    assert got == want


def test_client_skips_holes_masks_missing_layers_and_absent_effects():
    cat = make_catalog([(1, 8, [0, 1, 2, 3]), (2, 8, [-1, -1, -1, -1])])
    tile = make_tile(n_layers=2, effects=(1, 1), textures=("a", "b"))
    base = ClientPlacement().place(tile, cat, map_name="c")
    assert len(base) == 256 * 16 * 8  # all-zero doodadMapping: layer 0 everywhere
    tile.holes[:] = 0xFFFF
    assert len(ClientPlacement().place(tile, cat, map_name="c")) == 0
    tile.holes[:] = 0
    tile.no_effect_doodad[:] = True  # 1.12 tests the mask
    assert len(ClientPlacement().place(tile, cat, map_name="c")) == 0
    tile.no_effect_doodad[:] = False
    tile.doodad_mapping[:] = 2  # a layer the chunks do not have
    assert len(ClientPlacement().place(tile, cat, map_name="c")) == 0
    tile.doodad_mapping[:] = 0
    for absent in (777, 2):  # an id the table lacks; a row none of whose slots has a doodad
        tile.layer_effect[:, 0] = absent
        assert len(ClientPlacement().place(tile, cat, map_name="c")) == 0
    # the id is looked up as is: a table row 0 is a row like any other
    zero = make_catalog([(0, 8, [0, 1, 2, 3])])
    tile.layer_effect[:, 0] = 0
    assert len(ClientPlacement().place(tile, zero, map_name="c")) == 256 * 16 * 8


def test_client_335_effects_without_doodads_still_draw():
    # half the cells of every chunk map to layer 1, whose effect has no doodads; the other half to
    # layer 0. 1.12 skips such an effect outright (no draws); 3.3.5 draws each doodad's point anyway,
    # which moves everything after it.
    tile = random_tile(seed=5)
    tile.n_layers[:] = 2
    tile.holes[:] = 0
    tile.no_effect_doodad[:] = False
    tile.layer_effect[:, :2] = (1, 2)
    tile.doodad_mapping[:] = (np.arange(64).reshape(8, 8) % 2)[None]
    for weights in (False, True):
        empty = [0, 0, 0, 0] if weights else [-1, -1, -1, -1]
        with_row = make_catalog([(1, 8, [0, 1, 2, 3], [1, 1, 1, 1]), (2, 8, [-1] * 4, [1, 1, 1, 1])],
                                has_weights=weights, doodads=[[100, 101, 102, 103], empty])
        without = make_catalog([(1, 8, [0, 1, 2, 3], [1, 1, 1, 1])], has_weights=weights)
        a = ClientPlacement().place(tile, with_row, map_name="c")
        b = ClientPlacement().place(tile, without, map_name="c")
        assert len(a) > 0 and (a.cell % 2 == 0).all()
        assert np.array_equal(a.pos, b.pos) != weights
        if weights:
            got, want = client_rows(tile, with_row)
            assert got == want


def test_client_335_chunk_waits_for_a_doodad_it_cannot_load():
    tile = make_tile(n_layers=2, effects=(1, 2), textures=("a", "b"))
    tile.layer_effect[7:, 1] = 3  # chunks 7.. name effect 3 on layer 1 instead of 2
    # effect 2 names a DoodadID (999) no GroundEffectDoodad row has: DetailDoodadsReady never holds
    cat = make_catalog([(1, 8, [0, 1, 2, 3], [1, 1, 1, 1]), (2, 8, [0, -1, -1, -1], [1, 1, 1, 1]),
                        (3, 8, [0, -1, -1, -1], [1, 1, 1, 1])], has_weights=True,
                       doodads=[[100, 101, 102, 103], [100, 999, 0, 0], [100, 0, 0, 0]])
    inst = ClientPlacement().place(tile, cat, map_name="c")
    assert set(np.unique(inst.chunk).tolist()) == set(range(7, 256))  # only layer 0 is ever picked
    got, want = client_rows(tile, cat)
    assert got == want


def test_client_335_tests_no_effect_doodad_unless_the_untested_variant_is_asked():
    tile = make_tile(effects=(1,), height_amp=0.0)
    tile.no_effect_doodad[:] = True
    cat = make_catalog([(1, 0, [0, 1, 2, 3], [1, 1, 1, 1])], has_weights=True)
    assert len(ClientPlacement().place(tile, cat, map_name="c")) == 0  # the client's rule, by default
    untested = PlacementConstants(client_no_effect_335=0)  # the first 3.3.5 decode's reading
    assert len(ClientPlacement(untested).place(tile, cat, map_name="c")) == 256 * 16 * 8
    inst = ClientPlacement(untested).place(tile, cat, map_name="c")
    assert inst.scale.min() >= 0.67 - 1e-6 and inst.scale.max() <= 1.33 + 1e-6
    assert inst.yaw.min() >= 0 and inst.yaw.max() <= 2 * math.pi + 1e-6


def test_client_uses_doodad_mapping_not_alpha():
    tile = two_layer_tile(453, 8, 255)  # layer 1 covers everything ...
    tile.doodad_mapping[:] = 0  # ... but the baked map says layer 0
    cat = GRASS
    inst = ClientPlacement().place(tile, cat, map_name="c")
    assert len(inst) == 256 * 16 * 24  # effect 453: density 24 per pick
    tile.doodad_mapping[:] = 1
    inst = ClientPlacement().place(tile, cat, map_name="c")
    assert len(inst) == 256 * 16 * 2  # effect 8: density 8, one slot of four filled (round robin)
    tile.doodad_mapping[:] = 3  # a layer the chunk does not have: nothing
    assert len(ClientPlacement().place(tile, cat, map_name="c")) == 0


def test_client_slope_limit_only_for_weighted_builds():
    tile = make_tile(effects=(1,), height_amp=0.0)
    # a steep ramp: 40 yd per cell towards the south
    rows = np.where(np.arange(145) % 17 < 9, np.arange(145) // 17, np.arange(145) // 17 + 0.5)
    tile.heights[:] = rows * 40.0
    flat_weights = make_catalog([(1, 8, [0, 1, 2, 3], [1, 1, 1, 1])], has_weights=True)
    assert len(ClientPlacement().place(tile, flat_weights, map_name="s")) == 0
    no_weights = make_catalog([(1, 8, [0, 1, 2, 3])])
    assert len(ClientPlacement().place(tile, no_weights, map_name="s")) == 256 * 16 * 8
    gentle = tile.heights * (1 / 40)  # 1 yd per cell: normal z ~ 0.97
    tile.heights[:] = gentle
    assert len(ClientPlacement().place(tile, flat_weights, map_name="s")) == 256 * 16 * 8


@pytest.mark.parametrize("build", ["1.12", "2.4.3", "3.3.5"])
def test_client_vectorized_matches_reference_on_the_sample_world(build):
    from wowgrass.grass.bake import load_catalog, map_tiles
    from wowgrass.game.data import open_data
    from wowgrass.formats.adt import AdtTile
    from wowgrass.samples import MAP_NAME, sample_data_path

    with open_data(sample_data_path(build, (1, 1), 0)) as data:
        catalog = load_catalog(data=data)
        (col, row), = map_tiles(data, MAP_NAME)[0]
        big = map_tiles(data, MAP_NAME)[1]
        name = f"World\\Maps\\{MAP_NAME}\\{MAP_NAME}_{col}_{row}.adt"
        tile = AdtTile.from_bytes(data.read(name), name, big_alpha=big)
    assert catalog.build == build
    got, want = client_rows(tile, catalog)
    assert len(got) > 10000
    assert got == want


def test_make_strategy():
    assert make_strategy("coverage").name == "coverage"
    assert make_strategy("seed").name == "coverage"  # the old name is an alias
    assert make_strategy("client", PlacementConstants(client_picks=4)).constants.client_picks == 4


def test_client_picks_are_clamped_to_16_in_335_with_a_note():
    from wowgrass.grass.placement import client_picks, client_picks_note

    tile = make_tile(effects=(1,), height_amp=0.0)
    cat335 = make_catalog([(1, 0, [0, 1, 2, 3], [1, 1, 1, 1])], has_weights=True)
    few = PlacementConstants(client_picks=4)
    assert client_picks(few, cat335) == 16 and client_picks(PlacementConstants(client_picks=40), cat335) == 40
    # 3.3.5 takes 16 picks where 4 are asked: the same placements as 16, and a note says so
    assert as_client_rows(ClientPlacement(few).place(tile, cat335, map_name="c")) == \
        as_client_rows(ClientPlacement().place(tile, cat335, map_name="c"))
    line = client_picks_note(few, cat335)
    assert "client_picks=4" in line and "16 .. 256" in line and "16 picks" in line
    assert client_picks_note(PlacementConstants(), cat335) is None
    # 1.12 takes 1 .. 256 as asked: no note, a quarter of the picks
    cat112 = make_catalog([(1, 0, [0, 1, 2, 3])])
    assert client_picks(few, cat112) == 4 and client_picks_note(few, cat112) is None
    n4 = len(ClientPlacement(few).place(tile, cat112, map_name="c"))
    assert 0 < n4 < len(ClientPlacement().place(tile, cat112, map_name="c"))
    from wowgrass.errors import UsageError

    with pytest.raises(UsageError, match="unknown placement"):
        make_strategy("magic")


def test_constant_overrides():
    from wowgrass.errors import UsageError

    k = PlacementConstants().with_overrides(["coverage_min=48", "client_min_normal_z=0.5", "road_patterns=*road*, *x*"])
    assert (k.coverage_min, k.client_min_normal_z, k.road_patterns) == (48, 0.5, ("*road*", "*x*"))
    assert PlacementConstants().coverage_min == 32  # frozen defaults untouched
    with pytest.raises(UsageError, match="NAME=VALUE"):
        PlacementConstants().with_overrides(["nope=1"])
    with pytest.raises(UsageError, match="not an int"):
        PlacementConstants().with_overrides(["coverage_min=lots"])
    with pytest.raises(UsageError, match="client_picks=0 is outside 1 .. 256"):
        PlacementConstants(client_picks=0)
    with pytest.raises(UsageError, match="client_picks=257 is outside 1 .. 256"):
        PlacementConstants().with_overrides(["client_picks=257"])
    # every number has a valid range: values outside it are errors, not odd bakes
    for bad in ("coverage_min=256", "road_coverage_min=-1", "coverage_scale=0", "coverage_scale=16",
                "client_min_normal_z=1.5", "client_no_effect_335=2", "client_capacity=2",
                "max_placements_per_sample=1048576"):
        name = bad.split("=")[0]
        with pytest.raises(UsageError, match=f"{name}=.* is outside"):
            PlacementConstants().with_overrides([bad])
    assert PlacementConstants().with_overrides(["coverage_min=255", "road_coverage_min=256"]).coverage_min == 255


def test_client_placement_refuses_an_absurd_density_saying_how_many():
    """4,096 picks a tile (16 a chunk) of 40,000 doodads each: past the 2**27 the bake stops at."""
    from wowgrass.errors import UsageError

    cat = make_catalog([(1, 40000, [0, 1, 2, 3])])
    with pytest.raises(UsageError) as exc:
        ClientPlacement().place(make_tile(effects=(1,)), cat, map_name="c")
    assert str(exc.value) == ("client placement: this tile asks for 163840000 doodads (GroundEffectTexture Density "
                              "up to 40000); wowgrass stops at 134217728")
