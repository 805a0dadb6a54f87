"""The client scatter (grass/placement.py's ``ClientPlacement``) on the cases issue 49's mutation run
found untested: layers past nLayers, empty and unsorted tables, tables without DoodadIDs, a chunk
waiting on its table's first row, a tile of one pick, float64 tile arrays, absurd heights, the slope
limit's boundary, points exactly on a cell's diagonals, and the generator (its tables as a fresh
process builds them, short and empty runs). Expectations come from client.md (the real clients'
rules), hand counts, or the plain transcription in placement_reference.py."""

from __future__ import annotations

import json
import subprocess
import sys
import types
import warnings
from pathlib import Path

import numpy as np
import pytest
from placement_fakes import make_catalog, make_tile, random_tile
from placement_reference import ClientRandom, as_client_rows, client_reference

from wowgrass.grass.placement import ClientPlacement, PlacementConstants, _exact_effect_rows

FLAT_SCATTER = 256 * 16 * 8  # 16 picks a chunk, Density 0 or 8 -> 8 doodads a pick, nothing masked


def place(tile, catalog, **k):
    return ClientPlacement(PlacementConstants(**k)).place(tile, catalog, map_name="m")


def empty_catalogs():
    """The real catalogue of a GroundEffectTexture table of no rows (a header declaring 0 records)."""
    from wowgrass.formats.dbc import schema_for, write_dbc
    from wowgrass.game.effects import GroundEffectCatalog

    for build in ("1.12", "3.3.5"):
        tex = write_dbc(np.zeros(0, schema_for("GroundEffectTexture", build).dtype))
        dood = write_dbc(np.zeros(0, schema_for("GroundEffectDoodad", build).dtype))
        yield GroundEffectCatalog.from_dbc_bytes(tex, dood)


# ----------------------------------------------------------------------------- the effect rows


def test_a_layer_past_nlayers_is_never_read_even_when_the_table_has_its_id():
    """client.md: DetailDoodadsReady looks at the chunk's nLayers layers. The parser leaves 0 in the
    MCLY slots past nLayers, and a table may have a row 0: here one naming a DoodadID no
    GroundEffectDoodad row has, which would keep every chunk waiting if it were read."""
    tile = make_tile(effects=(1,), height_amp=0.0)  # one layer; slots 1..3 hold effect 0
    cat = make_catalog([(0, 8, [-1, -1, -1, -1], [1, 1, 1, 1]), (1, 8, [0, 1, 2, 3], [1, 1, 1, 1])],
                       has_weights=True, doodads=[[999, 0, 0, 0], [100, 101, 102, 103]])
    assert (tile.layer_effect[:, 1:] == 0).all()
    assert len(place(tile, cat)) == FLAT_SCATTER  # flat: every doodad of every pick is placed
    rows = _exact_effect_rows(tile, cat)
    assert (rows[:, 0] == 1).all() and (rows[:, 1:] == -1).all()  # "-1 past nLayers"
    tile.n_layers[:] = 2  # now layer 1 exists and names effect 0: every chunk waits
    assert len(place(tile, cat)) == 0


@pytest.mark.parametrize("catalog", list(empty_catalogs()), ids=["1.12", "3.3.5"])
def test_an_empty_table_has_no_row_for_any_layer(catalog):
    tile = make_tile(n_layers=4, effects=(0, 1, 453, 0xFFFFFFFF))
    rows = _exact_effect_rows(tile, catalog)
    assert rows.shape == (256, 4) and rows.dtype == np.int64
    assert (rows == -1).all()


@pytest.mark.parametrize("catalog", list(empty_catalogs()), ids=["1.12", "3.3.5"])
def test_an_empty_table_scatters_nothing(catalog):
    """client.md: an effect the table lacks is skipped; with no rows at all nothing is placed."""
    assert len(place(make_tile(effects=(1,)), catalog)) == 0


def test_a_table_not_sorted_by_id_finds_every_row():
    """A catalogue stand-in need not be sorted by ID (the real one is): the lookup sorts it itself.
    The first ID is the smallest, so a check of ``ids[1:] >= ids[0]`` alone would call it sorted."""
    cat = make_catalog([(453, 5, [0, 1, 2, 3]), (7043, 3, [0, 1, 2, 3]), (1493, 8, [0, 1, 2, 3])])
    tile = make_tile(effects=(1493,), height_amp=0.0)
    inst = place(tile, cat)
    assert len(inst) == FLAT_SCATTER  # Density 8 (row 2), four slots filled
    tile.layer_effect[:, 0] = 7043
    assert len(place(tile, cat)) == 256 * 16 * 3
    assert (_exact_effect_rows(tile, cat)[:, 0] == 1).all()


# ----------------------------------------------------------------------------- DoodadIDs


@pytest.mark.parametrize("how", ["None", "absent"])
def test_a_table_without_doodad_ids_treats_a_slot_with_a_model_as_a_doodad(how):
    """A catalogue stand-in without DoodadIDs (``slot_doodad`` None or missing): a slot with a model
    is a doodad (kind != 0 in 3.3.5's bag), an empty slot is none and blocks nothing. It must scatter
    exactly as the same table whose DoodadIDs name those models (0 = empty, as 3.3.5 stores it)."""
    rows = [(1, 8, [0, -1, 2, -1], [1, 1, 1, 1]), (2, 0, [1, 1, -1, 3], [3, 0, 1, 0])]
    with_ids = make_catalog(rows, has_weights=True, doodads=[[100, 0, 102, 0], [101, 101, 0, 103]])
    without = make_catalog(rows, has_weights=True)
    without.slot_doodad = None
    if how == "absent":
        without = types.SimpleNamespace(**{k: v for k, v in vars(without).items() if k != "slot_doodad"})
    tile = random_tile(seed=12)
    tile.heights *= 0.15  # the slope rule rejects some points, not all
    tile.layer_effect[:, :4] = (1, 2, 1, 2)
    tile.layer_effect[np.arange(4)[None, :] >= tile.n_layers[:, None]] = 0  # as the parser leaves them
    want = as_client_rows(place(tile, with_ids))
    got = as_client_rows(place(tile, without))
    assert len(want) > 1000 and got == want
    assert got == client_reference(tile, with_ids)
    models = {m for m, *_ in got}
    assert 0 in models and 3 in models  # model 0 is a doodad like any other


# ----------------------------------------------------------------------------- ClientPlacement.place


def test_a_chunk_waits_when_the_tables_first_row_names_a_missing_doodad():
    """[F] DetailDoodadsReady (client.md): a layer whose effect has a DoodadID no GroundEffectDoodad
    row has keeps its chunk without doodads. Here that effect is the table's first row."""
    tile = make_tile(n_layers=2, effects=(2, 1), textures=("a", "b"), height_amp=0.0)
    tile.layer_effect[:7, 1] = 3  # chunks 0..6 name a loadable effect on layer 1 instead
    cat = make_catalog([(1, 8, [0, -1, -1, -1], [1, 1, 1, 1]), (2, 8, [0, 1, 2, 3], [1, 1, 1, 1]),
                        (3, 8, [0, 1, -1, -1], [1, 1, 1, 1])], has_weights=True,
                       doodads=[[100, 999, 0, 0], [100, 101, 102, 103], [100, 101, 0, 0]])
    inst = place(tile, cat)
    assert set(np.unique(inst.chunk).tolist()) == set(range(7))
    assert len(inst) == 7 * 16 * 8  # all-zero doodadMapping: layer 0 (effect 2, all slots) everywhere
    assert as_client_rows(inst) == client_reference(tile, cat)


@pytest.mark.parametrize("weights", [False, True])
def test_a_tile_with_a_single_pick_that_scatters(weights):
    """One chunk with a layer, one pick: that pick's Density doodads (client.md section 3)."""
    tile = make_tile(effects=(1,), height_amp=0.0)
    tile.n_layers[:] = 0
    tile.n_layers[37] = 1
    cat = make_catalog([(1, 3, [0, 1, 2, 3], [1, 1, 1, 1])], has_weights=weights)
    inst = place(tile, cat, client_picks=1)
    want = client_reference(tile, cat, PlacementConstants(client_picks=1))
    if not weights:  # 1.12 takes the one pick; slots (n + 0) & 3 for n = 0, 1, 2
        assert inst.model.tolist() == [0, 1, 2]
    else:  # 3.3.5 takes 16 picks however few are asked: 16 picks of chunk 37
        assert len(inst) == 16 * 3
    assert (inst.chunk == 37).all()
    assert as_client_rows(inst) == want
    assert inst.models == cat.models  # what inst.model indexes (the bundle's model table)


@pytest.mark.parametrize("weights", [False, True])
def test_float64_tile_arrays_give_the_float32_scatter(weights):
    """The clients compute in float32 from the file's float32 positions and heights; a tile whose
    arrays are float64 holding the same values (a tile built or edited in numpy) must place the very
    same doodads, bit for bit, as the client reference says."""
    tile = random_tile(seed=12)
    tile.heights *= 0.15
    cat = make_catalog([(453, 5, [0, 1, 2, 3], [1, 1, 1, 1]), (7043, 12, [4, -1, 5, -1], [3, 0, 1, 0]),
                        (40199, 0, [6, 7, 8, 9], [8, 4, 2, 2])], has_weights=weights)
    want = client_reference(tile, cat)
    tile.heights = tile.heights.astype(np.float64)
    tile.positions = tile.positions.astype(np.float64)
    inst = place(tile, cat)
    assert inst.pos.dtype == np.float32
    got = as_client_rows(inst)
    assert len(got) > 1000 and got == want


def test_heights_too_large_for_a_float32_normal_place_nothing_and_warn_nothing():
    """A corrupt but finite tile: every centre vertex 1e25 yd above its corners. The triangles are
    vertical: the normal's squared length overflows float32, so 1 / length is 0 and n.z is exactly 0,
    which client.md's 3.3.5 rule skips ("n.z < 0.4 (or exactly 0)"). No numpy warning leaks out."""
    tile = make_tile(effects=(1,), height_amp=0.0)
    centres = (np.arange(145) % 17) >= 9
    tile.heights[:, centres] = np.float32(1e25)
    cat = make_catalog([(1, 8, [0, 1, 2, 3], [1, 1, 1, 1])], has_weights=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(place(tile, cat)) == 0
        tile.heights[:, centres] = 0  # flat again: everything
        assert len(place(tile, cat)) == FLAT_SCATTER


def test_the_slope_limit_drops_only_normals_below_it():
    """client.md section 4: a point is dropped where its triangle's ``n.z < 0.4`` (the limit is
    ``client_min_normal_z``). Level ground has n.z exactly 1, so a limit of 1 keeps level ground
    whole and drops any tilt."""
    tile = make_tile(effects=(1,), height_amp=0.0)
    cat = make_catalog([(1, 8, [0, 1, 2, 3], [1, 1, 1, 1])], has_weights=True)
    assert len(place(tile, cat, client_min_normal_z=1.0)) == FLAT_SCATTER
    v = np.arange(145)
    tile.heights[:] = np.where(v % 17 < 9, v // 17, v // 17 + 0.5)  # a ramp of 1 yd a row: n.z about 0.97
    assert len(place(tile, cat, client_min_normal_z=1.0)) == 0
    assert len(place(tile, cat)) == FLAT_SCATTER


# ----------------------------------------------------------------------------- the generator


def test_client_seed_and_reals_take_any_integer_type():
    """client.md section 2: seed = (gy << 16) | gx of 16-bit global chunk coordinates, which may come
    as uint16; and the reals of draws given as Python ints (client.md's values for chunk 0)."""
    from wowgrass.grass.placement import client_reals, client_seed

    gx, gy = np.array([608, 672], np.uint16), np.array([736, 464], np.uint16)
    assert client_seed(gx, gy).tolist() == [0x02E00260, 0x01D002A0]
    assert np.allclose(client_reals([0x898AFAED, 0x5495DDBB, 0xB159E5DF]), [0.914217353, -0.829170823, 0.297672391],
                       rtol=0, atol=5e-9)


def test_client_draws_of_one_seed_and_of_few_draws():
    """``client_draws(seeds, count)`` is (len(seeds), count) u4 (docs/architecture.md): for a single
    seed as client_seed returns it, for one draw, and for none."""
    from wowgrass.grass.placement import client_draws, client_seed

    chunk0 = client_seed(608, 736)  # a 0-d array
    assert client_draws(chunk0, 4).tolist() == [[0x898AFAED, 0x5495DDBB, 0xB159E5DF, 0x05AE220C]]  # client.md
    assert client_draws([chunk0, 7], 1).tolist() == [[0x898AFAED], [ClientRandom(7).uint32()]]
    none = client_draws([chunk0, 7, 9], 0)
    assert none.shape == (3, 0) and none.dtype == np.uint32


def test_the_generators_noise_words_and_rotations():
    """client.md section 1: the noise table's words are read little-endian, 4 bytes at a byte offset,
    and rotated left by 0..3 bits per lane (the lane tables are built from them at import)."""
    from wowgrass.grass.placement import _noise_word, _rotl32

    assert _noise_word(0) == 0x9927148E  # bytes 8E 14 27 99
    assert _noise_word(4) == 0x08C7AAFD
    assert _noise_word(252) == 0xEA31D600  # the last word
    assert _noise_word(2) == 0xAAFD9927  # a byte offset, not a word index: 27 99 FD AA
    assert _rotl32(0x80000001, 1) == 0x00000003
    assert _rotl32(0x12345678, 3) == 0x91A2B3C0
    assert _rotl32(0xF0000000, 2) == 0xC0000003
    assert _rotl32(0xDEADBEEF, 0) == 0xDEADBEEF


def test_a_fresh_process_builds_the_generator_tables_that_give_client_md_values():
    """The generator's lane tables are built once, at import (from gnoise32_, rotated per lane), and
    each lane's sequence is repeated once, for the longest run asked so far. A fresh interpreter
    importing this very module must give client.md's first draws and the plain transcription's long
    streams (thousands of draws: past every lane's period many times), as this process does."""
    import wowgrass.grass.placement as placement
    from wowgrass.grass.placement import _client_stream, client_draws

    package_root = str(Path(placement.__file__).parents[2])
    seeds = [0x02E00260, 0x01D002A0, 0, 0xFFFFFFFF, 61 * 59 * 53 * 47, 0x12345678]
    counts = [2000, 1, 0, 1500, 7, 2000]
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1])\n"
        "import wowgrass.grass.placement as p\n"
        "from wowgrass.grass.placement import _client_stream, client_draws\n"
        "seeds, counts = json.loads(sys.argv[2]), json.loads(sys.argv[3])\n"
        "d = client_draws(seeds, 3000)\n"
        "flat, start = _client_stream(seeds, d[:, 999], 1000, counts)\n"
        "longer = client_draws(seeds[:1], 3914)\n"  # just past the lane tables the first call built
        "print(json.dumps({'file': p.__file__, 'draws': d.tolist(), 'flat': flat.tolist(),\n"
        "                  'start': start.tolist(), 'longer': longer.tolist()}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, package_root, json.dumps(seeds), json.dumps(counts)],
                         capture_output=True, text=True, check=True)
    got = json.loads(out.stdout)
    assert got["file"] == placement.__file__
    assert got["draws"][0][:4] == [0x898AFAED, 0x5495DDBB, 0xB159E5DF, 0x05AE220C]  # client.md, chunk 0
    assert got["draws"][1][:4] == [0xF96FBF6B, 0x48E0A239, 0x347F2C00, 0x6E24AC39]
    for s, row in zip(seeds, got["draws"]):
        rng = ClientRandom(s)
        assert row == [rng.uint32() for _ in range(3000)]
    for i, n in enumerate(counts):
        assert got["flat"][got["start"][i]:got["start"][i] + n] == got["draws"][i][1000:1000 + n]
    rng = ClientRandom(seeds[0])
    assert got["longer"] == [[rng.uint32() for _ in range(3914)]]
    here = client_draws(seeds, 3000)  # and this process agrees
    assert here.tolist() == got["draws"]
    flat, start = _client_stream(np.array(seeds, np.uint32), here[:, 999], 1000, counts)
    assert flat.tolist() == got["flat"] and start.tolist() == got["start"]


# ----------------------------------------------------------------------------- points on a cell's edges


def chunk_of(seed):
    """The tile (col, row) and the MCNK index whose client seed (client.md section 2) is ``seed``."""
    gx, gy = seed & 0xFFFF, seed >> 16
    return gx // 16, gy // 16, (gy % 16) * 16 + gx % 16


def one_chunk_tile(chunk_seed, **k):
    col, row, ch = chunk_of(chunk_seed)
    tile = make_tile(col, row, effects=(1,), **k)
    tile.n_layers[:] = 0
    tile.n_layers[ch] = 1
    return tile, ch


@pytest.mark.parametrize("seed, k, vertex", [(56098875, 24, 17), (51708686, 56, 0)],
                         ids=["nw-se diagonal", "ne-sw diagonal"])
def test_a_335_point_exactly_on_a_cells_diagonal_takes_the_decodes_triangle(seed, k, vertex):
    """3.3.5 picks the fan triangle by strict float32 sign tests (client.md section 4, [F]): a point
    exactly on a diagonal goes to the triangle those tests give. The chunk's k-th doodad (found by a
    search over every chunk seed a map has) falls exactly on one diagonal of its cell; one corner of
    that cell is raised 40 yd, so the triangles on either side of the diagonal differ in the slope
    rule and the tie decides whether it is placed. Every doodad before it lies on flat ground in
    other cells (4 draws each), so its draws are numbers 32 + 4k and 33 + 4k."""
    from placement_reference import CELL_HALF, CELL_SIZE, CHUNK_SIZE, MAP_HALF, f32

    rng = ClientRandom(seed)
    draws = [rng.uint32() for _ in range(32)]
    pick = k // 8
    r, c = draws[2 * pick + 1] & 7, draws[2 * pick] & 7
    for _ in range(4 * k):
        rng.uint32()
    ox = f32(f32(rng.real() * CELL_HALF) + CELL_HALF)
    oy = f32(f32(rng.real() * CELL_HALF) + CELL_HALF)
    x, y = -oy, -ox
    on_edge = f32(y - x) == 0.0 if vertex == 17 else f32(f32(-y - CELL_SIZE) - x) == 0.0
    assert on_edge
    tile, ch = one_chunk_tile(seed, height_amp=0.0)
    tile.heights[ch, (r + (vertex == 17)) * 17 + c] = 40.0  # BL or TL: two of the four triangles steep
    cat = make_catalog([(1, 8, [0, 1, 2, 3], [1, 1, 1, 1])], has_weights=True)
    inst = place(tile, cat)
    want = client_reference(tile, cat)
    assert 0 < len(want) < 128 and as_client_rows(inst) == want
    # the doodads before it are all placed, in other cells; it is not (its triangle is the steep one)
    assert len(inst) > k and (inst.cell[:k] != r * 8 + c).all()
    gx, gy = seed & 0xFFFF, seed >> 16
    px = f32(f32(-f32(CHUNK_SIZE * gy) + MAP_HALF) + f32(x - f32(r * CELL_SIZE)))
    py = f32(f32(-f32(gx * CHUNK_SIZE) + MAP_HALF) + f32(y - f32(c * CELL_SIZE)))
    assert not ((inst.pos[:, 0] == px) & (inst.pos[:, 1] == py)).any()


def test_a_112_point_whose_u_plus_v_rounds_to_1_takes_the_low_half():
    """1.12 ([B], client.md section 3): ``u + v <= 1`` in float32 picks the north/west half of the
    fan. Doodad 10 of this chunk (found by a search over every chunk seed a map has) has u + v =
    1 + 2**-24 exactly, which float32 rounds to 1: the low half's weights, as the port computes them."""
    seed, k = 40436687, 10
    rng = ClientRandom(seed)
    for _ in range(32 + 4 * k):
        rng.uint32()
    rx, ry = rng.real(), rng.real()
    from placement_reference import f32

    fx, fy = f32(f32(rx + 1.0) * 0.5), f32(f32(ry + 1.0) * 0.5)
    assert fx + fy == 1 + 2**-24 and f32(fx + fy) == 1.0
    tile, ch = one_chunk_tile(seed, height_amp=30.0, seed=4)
    cat = make_catalog([(1, 8, [0, 1, 2, 3])])
    inst = place(tile, cat)
    assert len(inst) == 128
    assert as_client_rows(inst) == client_reference(tile, cat)


def test_runs_of_no_draws_are_an_empty_stream():
    """``_client_stream`` asked for no draws of any chunk: an empty u4 stream, every run starting at 0
    (place never asks: it returns before when no pick scatters); and runs of a single draw."""
    from wowgrass.grass.placement import _client_stream, client_draws

    seeds = np.array([0x02E00260, 7, 0xFFFFFFFF], np.uint32)
    flat, start = _client_stream(seeds, client_draws(seeds, 5)[:, -1], 5, [0, 0, 0])
    assert flat.dtype == np.uint32 and flat.size == 0
    assert start.tolist() == [0, 0, 0] and start.dtype.kind == "i"  # indices into the stream
    # and runs of one draw (place asks for an even number: two draws a point)
    draws = client_draws(seeds, 6)
    flat, start = _client_stream(seeds, draws[:, 4], 5, [1, 0, 1])
    assert [flat[start[0]], flat[start[2]]] == [draws[0, 5], draws[2, 5]]
