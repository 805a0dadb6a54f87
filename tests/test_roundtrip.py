"""Every writer's round trip as a property (issue 27): write -> read -> identical arrays, for inputs
hypothesis draws (DBC, WDT, ADT, M2 + skin, BLP raw and palette indices, MPQ, IFF chunks, bundles,
grid files). Examples are small and few so the suite stays quick; the shrunk failing input is what
a failure prints."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from adt_build import generated_tile
from wowgrass.grass import bundle as B
from wowgrass.grass import grid_tiles as G
from wowgrass.formats import dbc as D
from wowgrass.formats.adt import AdtTile, write_adt
from wowgrass.formats.blp import BlpImage, write_blp
from wowgrass.formats.chunks import read_chunks, write_chunk
from wowgrass.formats.m2 import VERSION_WOTLK, M2Model, make_vertices, write_m2
from wowgrass.formats.mpq import MpqArchive, write_mpq
from wowgrass.formats.wdt import WdtFile, write_wdt

FEW = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                      HealthCheck.function_scoped_fixture])
u32 = st.integers(0, 2**32 - 1)


@FEW
@given(st.integers(0, 40).flatmap(lambda n: st.tuples(
    hnp.arrays(np.uint32, (n, 5), elements=u32),
    st.lists(st.text(st.characters(codec="utf-8", exclude_characters="\0"), max_size=12), max_size=6))))
def test_dbc(case):
    records, texts = case
    strings = b"\0" + b"".join(t.encode() + b"\0" for t in texts)
    back = D.DbcFile.from_bytes(D.write_dbc(records, strings), "t.dbc")
    assert (back.record_count, back.field_count) == records.shape
    assert np.array_equal(np.asarray(back.raw).reshape(records.shape), records)
    off = 1
    for t in texts:
        assert back.string(off) == t
        off += len(t.encode()) + 1


@FEW
@given(hnp.arrays(np.bool_, (64, 64)), u32)
def test_wdt(main, flags):
    back = WdtFile.from_bytes(write_wdt(main, flags=flags), "t.wdt")
    assert np.array_equal(back.main, main) and back.flags == flags
    assert sorted(back.tiles()) == sorted((int(c), int(r)) for r, c in zip(*np.nonzero(main)))


ADT_ARRAYS = ("heights", "positions", "normals", "n_layers", "layer_texture", "layer_flags", "layer_effect",
              "alpha", "alpha_encoding", "shadow", "holes", "doodad_mapping", "no_effect_doodad", "chunk_flags",
              "area_id")


@settings(max_examples=8, deadline=None)
@given(st.sampled_from([1, 2, 3, 23]), st.integers(0, 2**16), st.booleans(),
       hnp.arrays(np.uint16, 256), hnp.arrays(np.uint32, 256, elements=st.integers(0, 5000)))
def test_adt(encoding, seed, mccv, holes, area):
    t = generated_tile(encoding, seed=seed, mccv=mccv)
    t.holes, t.area_id = holes, area
    data = write_adt(t)
    back = AdtTile.from_bytes(data, "t.adt", big_alpha=t.big_alpha)
    for name in ADT_ARRAYS:
        assert np.array_equal(np.asarray(getattr(back, name)), np.asarray(getattr(t, name))), name
    assert back.textures == t.textures and back.models == t.models
    assert write_adt(back) == data


finite = st.floats(-1e4, 1e4, allow_nan=False, width=32)


@FEW
@given(st.integers(3, 60).flatmap(lambda n: st.tuples(
    hnp.arrays(np.float32, (n, 3), elements=finite), hnp.arrays(np.float32, (n, 2), elements=finite),
    hnp.arrays(np.uint16, st.integers(1, 30).map(lambda k: 3 * k), elements=st.integers(0, n - 1)))),
    st.sampled_from([256, VERSION_WOTLK]))
def test_m2(case, version):
    pos, uv, tris = case
    m2, skin = write_m2(make_vertices(pos, uv0=uv), tris, name="Prop", textures=["t.blp"], version=version)
    back = M2Model.from_bytes(m2, "Prop.m2", skin=skin)
    assert np.array_equal(np.asarray(back.vertices["pos"]), pos)
    assert np.array_equal(np.asarray(back.vertices["uv0"]), uv)
    assert np.array_equal(np.asarray(back.triangles).ravel(), tris)
    assert [t.filename for t in back.textures] == ["t.blp"]


@FEW
@given(st.tuples(st.sampled_from([1, 2, 4, 8, 16, 32]), st.sampled_from([1, 2, 4, 8, 16, 32])).flatmap(
    lambda hw: hnp.arrays(np.uint8, (*hw, 4))), st.booleans())
def test_blp_raw(rgba, mipmaps):
    img = BlpImage.from_bytes(write_blp(rgba, "raw", mipmaps=mipmaps), "t.blp")
    assert np.array_equal(img.mip(0), rgba)
    assert img.mip_count == (int(math.log2(max(rgba.shape[:2]))) + 1 if mipmaps else 1)


@FEW
@given(st.sampled_from([4, 8, 16]).flatmap(lambda s: hnp.arrays(np.uint8, (s, s, 4), elements=st.sampled_from(
    [0, 255]))), st.sampled_from([0, 1, 8]))
def test_blp_palette_of_few_colours(rgba, depth):
    """Two levels per channel (at most 16 colours): the palette holds them all exactly."""
    if depth == 0:
        rgba = rgba.copy()
        rgba[..., 3] = 255
    img = BlpImage.from_bytes(write_blp(rgba, "palette", mipmaps=False, alpha_depth=depth), "t.blp")
    assert np.array_equal(img.mip(0), rgba)


names = st.text(st.characters(codec="ascii", categories=("L", "N")), min_size=1, max_size=12)


@FEW
@given(st.dictionaries(names.map(lambda s: f"dir\\{s.lower()}.bin"),  # MPQ names ignore case
                       st.binary(max_size=3000), min_size=1, max_size=6),
       st.sampled_from(["zlib", "bzip2", None]), st.sampled_from([0, 1]), st.booleans())
def test_mpq(files, compression, version, encrypt):
    a = MpqArchive.from_bytes(write_mpq(files, compression=compression, format_version=version, encrypt=encrypt,
                                        fix_key=encrypt, sector_shift=1))
    for name, data in files.items():
        assert a.read(name) == data
    assert {n.lower() for n in a.names()} >= {n.lower() for n in files}


@FEW
@given(st.lists(st.tuples(st.sampled_from([b"MVER", b"MHDR", b"MCNK", b"XXXX"]), st.binary(max_size=64)),
                max_size=8))
def test_chunks(chunks):
    data = b"".join(write_chunk(tag, payload) for tag, payload in chunks)
    back = read_chunks(data, "t.bin")
    assert [(c.tag, bytes(c.payload)) for c in back] == [(t, p) for t, p in chunks]


@FEW
@given(st.integers(0, 200).flatmap(lambda n: st.tuples(
    hnp.arrays(np.int64, n, elements=st.integers(0, 2)),
    hnp.arrays(np.float32, (n, 3), elements=st.floats(-20000, 20000, width=32)),
    hnp.arrays(np.uint16, n), hnp.arrays(np.uint16, n))))
def test_bundle(tmp_path_factory, case):
    model_index, pos, yaw16, scale16 = case
    yaw = yaw16 * (2 * math.pi / 65536)
    scale = scale16 / 4096.0
    models = [B.ModelInfo(f"World\\M{k}.m2", bool(k % 2), (-1, -2, 0), (1, 2, 3), 0.0, 3.0) for k in range(3)]
    path = tmp_path_factory.mktemp("rt") / "t.wgb"
    path.write_bytes(B.bundle_bytes(model_index=model_index, pos=pos, yaw=yaw, scale=scale, models=models,
                                    provenance={"tile": [3, 4], "x": "y"}, tile=(3, 4)))
    want = B.pack_instances(pos, yaw, scale)
    with B.read_bundle(path) as b:
        got = {m.path: np.array(m.instances) for m in b.models}
        assert b.tile == (3, 4) and b.provenance["x"] == "y"
    for k, m in enumerate(models):
        sel = want[model_index == k]
        if len(sel):
            assert got[m.path].tobytes() == sel.tobytes(), m.path   # same instances, same order
        else:
            assert m.path not in got or len(got[m.path]) == 0


@FEW
@given(st.integers(1, G.CONTROL_SIDE), st.integers(1, G.CONTROL_SIDE), st.lists(names, min_size=1, max_size=5),
       st.integers(0, 2**32 - 1))
def test_grid_file(tmp_path_factory, a, b, models, seed):
    rng = np.random.default_rng(seed)   # drawing 66,049 heights one by one would take the suite's time
    control = (rng.integers(0, len(models), (a, b, G.MAX_CHANNELS)) |
               rng.integers(0, 0x10000, (a, b, G.MAX_CHANNELS)) << 16).astype(np.uint32)
    heights = rng.uniform(-1e4, 1e4, (G.ATLAS_SIDE, G.ATLAS_SIDE)).astype(np.float32)
    tile = G.GridTile(31, 32, 100, 200, control, heights, models, {"bundle_key": "ab" * 32}, "cd" * 32)
    path = tmp_path_factory.mktemp("rt") / "t.wgc"
    G.write_grid_tile(path, tile)
    back = G.read_grid_tile(path, expect_key="cd" * 32)
    assert np.array_equal(back.control, control) and np.array_equal(back.heights, heights)
    assert (back.col, back.row, back.slot_i0, back.slot_j0) == (31, 32, 100, 200)
    assert back.models == models and back.provenance == {"bundle_key": "ab" * 32}
