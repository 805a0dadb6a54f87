"""Liquids: MH2O and MCLQ read, written, round-tripped; hand-built bytes read as the format says;
truncated and hostile payloads fail with FormatError and an offset; the real tiles' facts."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from wowgrass.errors import FormatError, TruncatedError
from wowgrass.formats import liquid as L
from wowgrass.formats.adt import AdtTile, write_adt


def _same(a, b):
    assert a.dtype == b.dtype and len(a) == len(b)
    for f in a.dtype.names:
        np.testing.assert_array_equal(a[f], b[f], err_msg=f)


def _mh2o_all_formats():
    rng = np.random.default_rng(7)
    layers = []
    for k, fmt in enumerate((0, 1, 2, 3)):
        ex = np.zeros((8, 8), bool)
        ex[1 + k:5 + k, 2:7] = True
        ex[2 + k, 4] = False                       # a hole: the bitmap is written
        layers.append(L.mh2o_layer(10 * k + 3, (1, 3, 2, 4)[k], (0, 2, 1, 3)[k],
                                   5.0 + rng.normal(0, 0.5, (9, 9)), ex, depth=rng.integers(0, 256, (9, 9)),
                                   uv=rng.integers(0, 65536, (9, 9, 2)), fmt=fmt))
    layers.append(L.mh2o_layer(3, 2, 1, -2.5))     # a second layer in chunk 3: full ocean, depth only
    t = L.TileLiquid(layers=np.concatenate(layers), source=L.SOURCE_MH2O)
    t.has_attributes[[3, 13]] = True
    t.fishable[3], t.deep[13] = 0x00FF00FF00FF00FF, 0x8000000000000001
    return t


def test_mh2o_round_trip_every_vertex_format():
    t = _mh2o_all_formats()
    raw = L.write_mh2o(t)
    back = L.read_mh2o(raw, "x.adt")
    order = np.argsort(t.layers["chunk"], kind="stable")
    _same(back.layers, t.layers[order])
    assert back.has_attributes.tolist() == t.has_attributes.tolist()
    assert int(back.fishable[3]) == 0x00FF00FF00FF00FF and int(back.deep[13]) == 0x8000000000000001
    assert L.write_mh2o(back) == raw
    # what each format keeps: depth-only has no heights (flat at min), height+uv has no depth
    by_chunk = {int(c): back.layers[back.layers["chunk"] == c] for c in np.unique(back.layers["chunk"])}
    uv_only = by_chunk[13][0]
    assert uv_only["format"] == 1 and not uv_only["depth"].any() and uv_only["uv"].any()
    depth_only = by_chunk[23][0]
    assert depth_only["format"] == 2 and np.all(depth_only["heights"] == depth_only["min_height"])
    assert by_chunk[3][1]["exists"].all() and by_chunk[3][1]["flags"] & L.HAS_EXISTS_BITMAP == 0
    assert back.summary()["layers"] == 5 and back.summary()["max_layers_per_chunk"] == 2


def test_mh2o_hand_built_bytes():
    """An MH2O written by hand with struct (not by wowgrass's writer) reads as the format says:
    the rectangle's vertices row by row, the exists bitmap LSB first over width×height cells."""
    headers = bytearray(256 * 12)
    inst_ofs = 256 * 12
    attr_ofs = inst_ofs + 24
    bitmap_ofs = attr_ofs + 16
    vert_ofs = bitmap_ofs + 1
    struct.pack_into("<3I", headers, 12 * 17, inst_ofs, 1, attr_ofs)
    # type 1 (water), LVF 0, min 1 max 4, x 2 y 5 width 3 height 2, bitmap, vertices
    inst = struct.pack("<HHffBBBBII", 1, 0, 1.0, 4.0, 2, 5, 3, 2, bitmap_ofs, vert_ofs)
    attrs = struct.pack("<QQ", 0x1, 0x2)
    bitmap = bytes([0b0101_1011])          # cells: row 0: 1 1 0, row 1: 1 1 0 (bit 6 set, 5 not)
    heights = np.arange(12, dtype="<f4") + 1.0       # (3 rows) × (4 columns)
    depth = np.arange(12, dtype=np.uint8) * 10
    raw = bytes(headers) + inst + attrs + bitmap + heights.tobytes() + depth.tobytes()
    t = L.read_mh2o(raw, "hand.adt")
    (lay,) = t.layers
    assert lay["chunk"] == 17 and lay["type"] == 1 and lay["kind"] == L.WATER
    assert lay["rect"].tolist() == [2, 5, 3, 2]
    expect = np.zeros((8, 8), bool)
    expect[5, 2:5] = [True, True, False]
    expect[6, 2:5] = [True, True, False]    # bits 3, 4 set, 5 clear (bit 6 is padding)
    np.testing.assert_array_equal(lay["exists"], expect)
    np.testing.assert_array_equal(lay["heights"][5:8, 2:6], heights.reshape(3, 4))
    np.testing.assert_array_equal(lay["depth"][5:8, 2:6], depth.reshape(3, 4))
    assert lay["heights"][0, 0] == 1.0      # outside the rectangle: the minimum height
    assert int(t.fishable[17]) == 1 and int(t.deep[17]) == 2
    assert L.write_mh2o(t) == raw           # the padding bit survives


def test_mh2o_unknown_vertex_format_keeps_the_layer_flat():
    t = L.TileLiquid(layers=L.mh2o_layer(0, 1, 0, 3.0), source=L.SOURCE_MH2O)
    raw = bytearray(L.write_mh2o(t))
    struct.pack_into("<H", raw, 256 * 12 + 2, 57)      # a LiquidObject id (Cataclysm and later)
    back = L.read_mh2o(bytes(raw))
    assert back.layers["flags"][0] & L.FORMAT_UNKNOWN
    assert np.all(back.layers["heights"][0] == 3.0) and back.layers["exists"][0].all()
    with pytest.raises(ValueError):
        L.write_mh2o(back)


def test_mh2o_truncated_everywhere():
    raw = L.write_mh2o(_mh2o_all_formats())
    for cut in [0, 100, 256 * 12 - 1, 256 * 12 + 10, len(raw) - 1, len(raw) - 40]:
        with pytest.raises(FormatError) as e:
            L.read_mh2o(raw[:cut], "cut.adt", 0x1000)
        assert e.value.offset is not None and e.value.offset >= 0x1000 and "cut.adt" in str(e.value)


@pytest.mark.parametrize("field,value,what", [
    (4, 0x7FFFFFFF, "instances"),           # chunk 0 says 2^31 layers
    (0, 0xFFFFFFF0, "instances"),           # instance offset past the end
    (8, 0xFFFFFFF0, "attributes"),          # attribute offset past the end
])
def test_mh2o_hostile_header(field, value, what):
    t = L.TileLiquid(layers=L.mh2o_layer(0, 1, 0, 3.0), source=L.SOURCE_MH2O)
    t.has_attributes[0] = True
    raw = bytearray(L.write_mh2o(t))
    struct.pack_into("<I", raw, field, value)
    with pytest.raises(TruncatedError, match=what) as e:
        L.read_mh2o(bytes(raw), "bad.adt")
    assert e.value.offset is not None


@pytest.mark.parametrize("patch,match", [
    (lambda r, o: struct.pack_into("<BBBB", r, o + 12, 6, 0, 5, 1), "leaves the 8×8"),
    (lambda r, o: struct.pack_into("<f", r, o + 4, float("nan")), "not finite"),
    (lambda r, o: struct.pack_into("<I", r, o + 20, len(r) - 3), "vertex data"),
    (lambda r, o: struct.pack_into("<I", r, o + 16, len(r)), "exists bitmap"),
])
def test_mh2o_hostile_instance(patch, match):
    ex = np.ones((8, 8), bool)
    ex[0, 0] = False
    t = L.TileLiquid(layers=L.mh2o_layer(0, 1, 0, np.linspace(0, 1, 81).reshape(9, 9), ex), source=L.SOURCE_MH2O)
    raw = bytearray(L.write_mh2o(t))
    patch(raw, 256 * 12)
    with pytest.raises(FormatError, match=match) as e:
        L.read_mh2o(bytes(raw), "bad.adt", 64)
    assert e.value.offset >= 64


def test_mh2o_non_finite_vertex_height():
    t = L.TileLiquid(layers=L.mh2o_layer(0, 1, 0, np.linspace(0, 1, 81).reshape(9, 9)), source=L.SOURCE_MH2O)
    raw = bytearray(L.write_mh2o(t))
    vert = struct.unpack_from("<I", raw, 256 * 12 + 20)[0]
    struct.pack_into("<f", raw, vert + 4 * 10, float("inf"))
    with pytest.raises(FormatError, match="not finite") as e:
        L.read_mh2o(bytes(raw), "bad.adt")
    assert e.value.offset == vert + 40


def _mclq_tile(build_kinds):
    """A generated tile whose chunk 5 has MCLQ layers of the given kinds, chunk 9 one water layer."""
    rng = np.random.default_rng(1)
    t = AdtTile.from_arrays(30, 40, abs_heights=rng.normal(0, 1, (256, 145)))
    layers = []
    for k in build_kinds:
        ex = rng.random((8, 8)) > 0.4
        layers.append(L.mclq_layer(5, k, 10 + rng.normal(0, 0.2, (9, 9)), ex, depth=rng.integers(0, 256, (9, 9)),
                                   uv=rng.integers(0, 65536, (9, 9, 2))))
    layers.append(L.mclq_layer(9, L.WATER, 3.0))
    liquid = L.TileLiquid(layers=np.concatenate(layers), source=L.SOURCE_MCLQ)
    L.put_tile_liquid(t, liquid, fmt="mclq")
    return t, liquid


def test_mclq_round_trip_through_an_adt():
    t, liquid = _mclq_tile([L.MAGMA, L.OCEAN, L.SLIME])
    assert int(t.chunk_flags[5]) & L.MCNK_LIQUID_MASK == 0x8 | 0x10 | 0x20
    data = write_adt(t)
    back = AdtTile.from_bytes(data, "gen.adt")
    got = L.tile_liquid(back)
    assert got.source == L.SOURCE_MCLQ
    want = liquid.layers[np.lexsort((liquid.layers["kind"], liquid.layers["chunk"]))]
    # the reader fills what the format carries: water/ocean keep depth, magma/slime keep uv
    uv_kind = np.isin(want["kind"], (L.MAGMA, L.SLIME))
    want["depth"][uv_kind] = 0
    want["uv"][~uv_kind] = 0
    _same(got.layers, want)
    assert got.layers["kind"].tolist() == [L.OCEAN, L.MAGMA, L.SLIME, L.WATER]
    assert got.layers["type"].tolist() == [2, 3, 4, 1]
    # chunk 5's MCLQ: 3 records, sizeLiquid = 8 + 3 * 804
    assert int(back.mcnk_headers["size_liquid"][5]) == 8 + 3 * 804
    assert write_adt(back) == data


def test_mclq_hand_built_record():
    """One record written by hand: a river whose tiles say 0x0F (no liquid) except three."""
    tiles = np.full((8, 8), 0x0F, np.uint8)
    tiles[0, 0], tiles[7, 7], tiles[3, 4] = 0x04, 0x04 | 0x80, 0x44
    verts = bytearray()
    for k in range(81):
        verts += struct.pack("<BBBBf", k % 200, 1, 2, 0, 100.0 + k)
    rec = struct.pack("<ff", 100.0, 180.0) + bytes(verts) + tiles.tobytes() + struct.pack("<I", 0) + bytes(80)
    assert len(rec) == 804
    (lay,) = L.read_mclq(rec, 12, 0x4, "hand.adt", 0x2000)
    assert lay["kind"] == L.WATER and lay["type"] == 1 and lay["format"] == 0
    assert lay["exists"].sum() == 3 and lay["exists"][0, 0] and lay["exists"][7, 7] and lay["exists"][3, 4]
    assert lay["heights"][0, 0] == 100.0 and lay["heights"][8, 8] == 180.0
    assert lay["depth"][1, 0] == 9 and (lay["flow"][..., :2] == (1, 2)).all()
    assert L.write_mclq(lay[None]) == rec
    # without any MCNK flag the kind comes from the tile bytes (4: river)
    (again,) = L.read_mclq(rec, 12, 0, "hand.adt")
    assert again["kind"] == L.WATER
    tiles2 = tiles.copy()
    tiles2[tiles2 != 0x0F] = 0x06           # magma per noggit3's reading of the tile bits
    rec2 = rec[:656] + tiles2.tobytes() + rec[720:]
    assert L.read_mclq(rec2, 12, 0)[0]["kind"] == L.MAGMA


def test_mclq_truncated_and_hostile():
    t, _ = _mclq_tile([L.WATER, L.OCEAN])
    payload = t.liquids[5]
    with pytest.raises(TruncatedError, match="needs 1608") as e:
        L.read_mclq(payload[:1000], 5, int(t.chunk_flags[5]), "t.adt", 0x500)
    assert e.value.offset == 0x500
    bad = bytearray(payload)
    struct.pack_into("<f", bad, 804, float("nan"))
    with pytest.raises(FormatError, match="record 1 height range") as e:
        L.read_mclq(bytes(bad), 5, int(t.chunk_flags[5]), "t.adt", 0x500)
    assert e.value.offset == 0x500 + 804
    # an MCNK whose sizeLiquid runs past the chunk: the ADT reader refuses it
    data = bytearray(write_adt(t))
    back = AdtTile.from_bytes(bytes(data))
    assert len(L.tile_liquid(back).layers) == 3
    base = int(back.liquid_offsets[5]) - 8 - int(back.mcnk_headers["ofs_liquid"][5])
    struct.pack_into("<I", data, base + 8 + 0x64, 8 + 40 * 804)
    with pytest.raises(TruncatedError, match="MCLQ") as e:
        AdtTile.from_bytes(bytes(data), "t.adt")
    assert e.value.offset is not None
    # flags that name a liquid the payload does not hold
    struct.pack_into("<I", data, base + 8 + 0x64, 8 + 2 * 804)
    flags = struct.unpack_from("<I", data, base + 8)[0]
    struct.pack_into("<I", data, base + 8, flags | 0x20)
    with pytest.raises(TruncatedError, match="3 liquid"):
        L.tile_liquid(AdtTile.from_bytes(bytes(data), "t.adt"))


def test_mh2o_in_an_adt_round_trip():
    t = AdtTile.from_arrays(30, 40, abs_heights=np.zeros((256, 145)))
    liquid = _mh2o_all_formats()
    L.put_tile_liquid(t, liquid, fmt="mh2o")
    data = write_adt(t)
    back = AdtTile.from_bytes(data, "g.adt")
    assert back.mh2o == t.mh2o and back.mh2o_offset is not None
    assert data[back.mh2o_offset - 8:back.mh2o_offset - 4] == b"O2HM"
    got = L.tile_liquid(back)
    assert got.source == L.SOURCE_MH2O and len(got.layers) == 5


def test_default_kinds():
    assert L.default_kind([1, 2, 3, 4, 5, 8, 13, 14, 15, 17, 19, 20, 21]).tolist() == \
        [0, 1, 2, 3, 0, 3, 0, 1, 2, 2, 3, 3, 0]
    assert L.default_kind([100, 100, 100], [1, 2, 0]).tolist() == [L.MAGMA, L.OCEAN, L.WATER]


# ---------------------------------------------------------------------------------- real files
def test_continent4229_ocean(realdata):
    data = (realdata / "adt" / "continent4229.adt").read_bytes()
    t = AdtTile.from_bytes(data, "continent4229.adt")
    liq = L.tile_liquid(t)
    lay = liq.layers
    assert liq.source == L.SOURCE_MH2O
    assert len(lay) == 9 and len(np.unique(lay["chunk"])) == 9        # one layer in each of 9 MCNKs
    assert (lay["type"] == 2).all() and (lay["kind"] == L.OCEAN).all()  # LiquidType 2, ocean
    assert (lay["min_height"] == 0.0).all() and (lay["max_height"] == 0.0).all()   # sea level
    assert (lay["heights"] == 0.0).all()
    assert (lay["format"] == L.LVF_DEPTH).all()
    s = liq.summary()
    assert s["chunks"] == 9 and s["layers"] == 9 and s["height"] == {"min": 0.0, "max": 0.0}
    assert L.write_mh2o(liq) == t.mh2o          # the real chunk back byte for byte
    # the ocean lies over terrain that goes down to -515
    assert float(t.abs_heights[lay["chunk"].astype(int)].min()) < -100


def test_azeroth_38_46_has_no_liquid(realdata):
    t = AdtTile.from_bytes((realdata / "adt" / "Azeroth_38_46.adt").read_bytes(), "Azeroth_38_46.adt")
    assert t.mh2o is None
    liq = L.tile_liquid(t)
    assert liq.source == L.SOURCE_NONE and len(liq.layers) == 0
