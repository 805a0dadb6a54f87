"""WMO v17: the real inn's facts, byte-exact round trips, the sample house through the writer,
truncated and hostile roots and groups, doodad sets and MODF placement transforms."""

from __future__ import annotations

import functools
import struct

import numpy as np
import pytest

from wowgrass.errors import FormatError, GameFileNotFound, TruncatedError, UnsupportedError
from wowgrass.formats import wmo as W
from wowgrass.formats.chunks import iter_chunks
from wowgrass.game.mapobjects import (
    file_to_world, modf_bounds, modf_matrices, placement_matrices, transformed_bounds, wmo_doodads, world_to_file,
)
from wowgrass.samples import building


@pytest.fixture(scope="module")
def inn(realdata):
    folder = realdata / "wmo"

    def read(name):
        p = folder / name
        if not p.is_file():
            raise GameFileNotFound(name)
        return p.read_bytes()

    return W.load_wmo("inn.wmo", read), read


def test_inn_root_facts(inn):
    w, read = inn
    r = w.root
    h = r.header
    assert int(h["n_textures"]) == 22          # MOHD's first count is the MOMT records
    assert len(r.materials) == 22 and int(h["n_groups"]) == 11 and len(r.groups) == 11
    assert int(h["n_portals"]) == 10 and int(h["n_lights"]) == 10 and len(r.doodad_sets) == 4
    names = [n for _, n in r.textures.names()]
    assert len(names) == 22 and names[0] == "DUNGEONS\\TEXTURES\\WALLS\\MM_DUSKWOOD_WALL_01.BLP"
    assert len(r.doodads) == 863 and int(h["n_doodad_defs"]) == 913      # the chunk wins
    np.testing.assert_allclose(r.bbox, [[-37.773, -13.525, -6.762], [21.943, 18.767, 23.277]], atol=1e-3)
    assert w.present == [0, 3]
    assert w.missing == [f"inn_{i:03d}.wmo" for i in (1, 2, 4, 5, 6, 7, 8, 9, 10)]
    info = w.info()
    assert info["groups_present"] == [0, 3] and len(info["groups_missing"]) == 9
    assert r.doodad_set_indices(0).tolist() == list(range(80))
    assert len(r.doodad_set_indices(1)) == 80 + 215


def test_inn_group_facts(inn):
    w, _ = inn
    g0, g3 = w.groups[0], w.groups[3]
    assert len(g0.vertices) == 2759 and len(g0.indices) == 5772 and g0.triangle_count == 1924
    assert len(g0.batches) == 13 and g0.vertex_colours is None and g0.liquid is None
    assert len(g3.vertices) == 2310 and len(g3.indices) == 6078 and g3.triangle_count == 2026
    assert len(g3.batches) == 13 and g3.vertex_colours is not None and g3.liquid is None
    assert g0.is_exterior and not g3.is_exterior
    # every batch lies inside MOVI and its vertex range holds the indices it uses
    for g in (g0, g3):
        for b in g.batches:
            idx = g.indices[int(b["start_index"]):int(b["start_index"]) + int(b["count"])]
            assert idx.min() >= b["min_index"] and idx.max() <= b["max_index"]
            assert b["material"] < len(w.root.materials)


def test_inn_round_trips_byte_for_byte(inn):
    w, read = inn
    assert W.write_wmo_root(w.root) == read("inn.wmo")
    for i in w.present:
        assert W.write_wmo_group(w.groups[i]) == read(f"inn_{i:03d}.wmo")


def test_inn_fixed_vertex_colours(inn):
    w, _ = inn
    g3 = w.groups[3]
    fixed = W.fixed_vertex_colours(w.root, g3)
    raw = g3.vertex_colours.astype(np.float64)
    # no transparent batches: every vertex gains colour*alpha/64, loses the ambient (25), halves
    assert int(g3.header["trans_batches"]) == 0
    expect = np.clip((raw[:, [2, 1, 0]] * raw[:, 3:4] / 64 + raw[:, [2, 1, 0]] - 25) / 2, 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(fixed[:, :3], expect)
    assert (fixed[:, 3] == 0).all()               # an interior group
    assert W.fixed_vertex_colours(w.root, w.groups[0]) is None


@functools.lru_cache(maxsize=1)
def _house_files():
    return dict(building.building_files("3.3.5"))


def _house():
    """The sample house's files and a fresh parse of them (tests may change what they parse)."""
    files = _house_files()
    return files, W.load_wmo(building.WMO_PATH, lambda p: files[p])


def test_sample_house_through_the_writer():
    files, w = _house()
    assert not w.missing and w.present == [0, 1]
    ext, room = w.groups
    assert ext.is_exterior and room.flags & W.GroupFlags.INTERIOR and not room.is_exterior
    assert room.vertex_colours is not None and ext.vertex_colours is None
    assert ext.liquid is not None and ext.liquid.exists.all()
    assert W.group_liquid_type(w.root, ext) == 13          # MOHD 0x4: id 1 (water) -> WMO Water
    # batches: one per material, in material order, covering every triangle
    for g in (ext, room):
        assert sum(int(b["count"]) for b in g.batches) == len(g.indices)
        assert np.all(np.diff(g.batches["material"].astype(int)) > 0)
        mats = g.triangles["material"]
        for b in g.batches:
            s, n = int(b["start_index"]) // 3, int(b["count"]) // 3
            assert (mats[s:s + n] == b["material"]).all()
    assert int(room.header["int_batches"]) == len(room.batches) and int(ext.header["ext_batches"]) == len(ext.batches)
    # read -> write gives the bytes back
    assert W.write_wmo_root(w.root) == files[building.WMO_PATH]
    for i, g in enumerate(w.groups):
        assert W.write_wmo_group(g) == files[W.group_file_name(building.WMO_PATH, i)]
    names, mats = wmo_doodads(w.root, np.eye(4), 1)
    assert names == ["World\\Generic\\Sample\\Rocks\\SampleRock01.m2"] * 3
    np.testing.assert_allclose(mats[0][:3, 3], (2.4, -5.6, -0.2), atol=1e-6)


def test_root_built_from_scratch_round_trips():
    _, w = _house()
    root = w.root
    again = W.WmoRoot.from_bytes(W.write_wmo_root(root), "again.wmo")
    for name in ("materials", "groups", "doodad_sets", "doodads", "fogs"):
        np.testing.assert_array_equal(getattr(again, name), getattr(root, name), err_msg=name)
    assert again.textures.raw == root.textures.raw and again.header.tobytes() == root.header.tobytes()
    # the MOTX offsets the materials use are 4-byte aligned names
    for m in again.materials:
        assert int(m["texture1"]) % 4 == 0 and again.texture(m["texture1"]).startswith("World\\wmo")


def test_group_liquid_round_trip_and_types():
    _, w = _house()
    lq = w.groups[0].liquid
    back = W.WmoLiquid.from_bytes(W.write_wmo_liquid(lq))
    assert (back.x_verts, back.y_verts, back.x_tiles, back.y_tiles) == (2, 2, 1, 1)
    np.testing.assert_array_equal(back.heights, lq.heights)
    g = w.groups[0]
    root = w.root
    root.header["flags"] = 0            # the old local numbering: 0 water (ocean with 0x80000), 1 ocean, 2 magma
    for gl, flags, want in ((0, 0, 13), (0, W.GroupFlags.OCEAN, 14), (1, 0, 14), (2, 0, 19), (3, 0, 20), (21, 0, 22)):
        g.header["group_liquid"] = gl
        g.header["flags"] = (int(g.header["flags"]) & ~W.GroupFlags.OCEAN) | flags
        assert W.group_liquid_type(root, g) == want, (gl, flags)
    root.header["flags"] = W.MohdFlags.USE_LIQUID_TYPE_ID
    for gl, want in ((1, 13), (3, 19), (4, 20), (2, 14), (41, 41)):
        g.header["group_liquid"] = gl
        g.header["flags"] = int(g.header["flags"]) & ~W.GroupFlags.OCEAN
        assert W.group_liquid_type(root, g) == want


def _chunk_offsets(data):
    return [c.offset for c in iter_chunks(data)]


def test_truncated_roots_and_groups():
    files, _ = _house()
    root = files[building.WMO_PATH]
    group = files[W.group_file_name(building.WMO_PATH, 0)]
    for data, parse in ((root, W.WmoRoot.from_bytes), (group, W.WmoGroup.from_bytes)):
        cuts = {1, 7, 9, len(data) - 1, len(data) - 5}
        for off in _chunk_offsets(data):
            cuts.update({off + 3, off + 8, off + 20})
        for cut in sorted(c for c in cuts if c < len(data)):
            try:
                parse(data[:cut], "cut.wmo")
            except FormatError as exc:
                assert exc.offset is not None and "cut.wmo" in str(exc)


def _patch_group(data, tag, fn):
    """Apply ``fn(bytearray, payload_offset, size)`` to the first ``tag`` sub-chunk of a group."""
    b = bytearray(data)
    mogp = next(c for c in iter_chunks(data) if c.tag == b"MOGP")
    for c in iter_chunks(data, start=mogp.data_offset + 68, end=mogp.end):
        if c.tag == tag:
            fn(b, c.data_offset, c.size)
            return bytes(b)
    raise AssertionError(tag)


@pytest.mark.parametrize("tag,fn,match", [
    (b"MOVI", lambda b, o, n: struct.pack_into("<H", b, o + 6, 60000), "names vertex 60000"),
    (b"MOBA", lambda b, o, n: struct.pack_into("<I", b, o + 12, 1 << 30), "do not fit MOVI"),
    (b"MOBA", lambda b, o, n: struct.pack_into("<B", b, o + 23, 200), "material 200"),
    (b"MOVT", lambda b, o, n: struct.pack_into("<f", b, o + 4, float("nan")), "not finite"),
    (b"MLIQ", lambda b, o, n: struct.pack_into("<ii", b, o, 100000, 100000), "not plausible"),
    (b"MLIQ", lambda b, o, n: struct.pack_into("<ii", b, o, 50, 50), "need"),
    (b"MOPY", lambda b, o, n: None, None),
])
def test_hostile_groups(tag, fn, match):
    files, _ = _house()
    data = _patch_group(files[W.group_file_name(building.WMO_PATH, 0)], tag, fn)
    if match is None:
        W.WmoGroup.from_bytes(data, "g.wmo", n_materials=5)
        return
    with pytest.raises(FormatError, match=match) as e:
        W.WmoGroup.from_bytes(data, "g.wmo", n_materials=5)
    assert e.value.offset is not None


def test_group_count_mismatches():
    files, _ = _house()
    g1 = files[W.group_file_name(building.WMO_PATH, 1)]
    # a MOCV one record short of MOVT
    b = bytearray(g1)
    mogp = next(c for c in iter_chunks(g1) if c.tag == b"MOGP")
    sub = [c for c in iter_chunks(g1, start=mogp.data_offset + 68, end=mogp.end)]
    mocv = next(c for c in sub if c.tag == b"MOCV")
    del b[mocv.end - 4:mocv.end]
    struct.pack_into("<I", b, mocv.offset + 4, mocv.size - 4)
    struct.pack_into("<I", b, mogp.offset + 4, mogp.size - 4)
    with pytest.raises(FormatError, match="MOCV: .* for 48 vertices"):
        W.WmoGroup.from_bytes(bytes(b), "g.wmo")


def test_hostile_roots():
    files, _ = _house()
    root = files[building.WMO_PATH]
    chunks = {c.tag: c for c in iter_chunks(root)}
    b = bytearray(root)
    struct.pack_into("<I", b, chunks[b"MODS"].data_offset + 32 + 24, 1000)     # set 1 counts 1000 doodads
    with pytest.raises(FormatError, match="MODS set 1") as e:
        W.WmoRoot.from_bytes(bytes(b), "r.wmo")
    assert e.value.offset == chunks[b"MODS"].data_offset + 32 + 20
    b = bytearray(root)
    struct.pack_into("<I", b, chunks[b"MVER"].data_offset, 14)
    with pytest.raises(UnsupportedError, match="version 14"):
        W.WmoRoot.from_bytes(bytes(b), "r.wmo")
    with pytest.raises(FormatError, match="group file"):
        W.WmoRoot.from_bytes(files[W.group_file_name(building.WMO_PATH, 0)], "g.wmo")
    with pytest.raises(FormatError, match="root file"):
        W.WmoGroup.from_bytes(root, "r.wmo")
    b = bytearray(root)
    struct.pack_into("<f", b, chunks[b"MODD"].data_offset + 40 + 16, float("inf"))
    with pytest.raises(FormatError, match="MODD doodad 1"):
        W.WmoRoot.from_bytes(bytes(b), "r.wmo")
    # MOMT one byte short of a record
    b = bytearray(root)
    c = chunks[b"MOMT"]
    struct.pack_into("<I", b, c.offset + 4, c.size - 1)
    b[c.offset + 8 + c.size - 1:c.offset + 8 + c.size] = b""
    with pytest.raises(FormatError):
        W.WmoRoot.from_bytes(bytes(b), "r.wmo")


def test_missing_and_broken_groups_are_named():
    files, _ = _house()
    g0 = W.group_file_name(building.WMO_PATH, 0)
    g1 = W.group_file_name(building.WMO_PATH, 1)
    partial = {k: v for k, v in files.items() if k != g0}
    partial[g1] = partial[g1][:100]

    def read(p):
        if p not in partial:
            raise GameFileNotFound(p)
        return partial[p]

    w = W.load_wmo(building.WMO_PATH, read)
    assert w.present == [] and w.missing == [g0] and list(w.errors) == [g1]
    assert "MOGP" in w.errors[g1] or "declares" in w.errors[g1]


def test_doodad_matrices():
    _, w = _house()
    r = w.root
    r.doodads["rotation"][0] = (0, 0, np.sin(np.pi / 4), np.cos(np.pi / 4))   # 90° about +Z
    r.doodads["scale"][0] = 2.0
    m = W.doodad_matrices(r, [0])[0]
    np.testing.assert_allclose(m[:3, :3], [[0, -2, 0], [2, 0, 0], [0, 0, 2]], atol=1e-6)
    np.testing.assert_allclose(m @ [1, 0, 0, 1], [*(np.asarray(r.doodads["position"][0]) + [0, 2, 0]), 1],
                               atol=1e-5)


def test_placement_matrices_follow_the_client():
    """The composition WebWowViewerCpp uses (adtToWorld · T · S(-1,1,-1) · Ry(b-270) · Rz(-a) ·
    Rx(c-90)), built here from plain rotation matrices, equals placement_matrices; a heading of 0
    turns an object's +X to world -X."""
    zp = 32 * 1600 / 3

    def rot(axis, deg):
        a = np.radians(deg)
        c, s = np.cos(a), np.sin(a)
        m = np.eye(4)
        i, j = [(1, 2), (2, 0), (0, 1)][axis]
        m[i, i], m[i, j], m[j, i], m[j, j] = c, -s, s, c
        return m

    adt_to_world = np.array([[0, 0, -1, zp], [-1, 0, 0, zp], [0, 1, 0, 0], [0, 0, 0, 1.0]])
    rng = np.random.default_rng(2)
    pos = rng.uniform(0, 30000, (6, 3))
    ang = rng.uniform(-180, 180, (6, 3))
    got = placement_matrices(pos, ang, 1.5)
    for k in range(6):
        t = np.eye(4)
        t[:3, 3] = pos[k]
        want = adt_to_world @ t @ np.diag([-1, 1, -1, 1]) @ rot(1, ang[k, 1] - 270) @ rot(2, -ang[k, 0]) @ \
            rot(0, ang[k, 2] - 90) @ np.diag([1.5, 1.5, 1.5, 1])
        np.testing.assert_allclose(got[k], want, atol=1e-7)
    m = placement_matrices([[0, 0, 0]], [[0, 0, 0]])[0]
    np.testing.assert_allclose(m[:3, :3] @ [1, 0, 0], [-1, 0, 0], atol=1e-12)
    np.testing.assert_allclose(file_to_world(world_to_file([[1.0, 2.0, 3.0]])), [[1.0, 2.0, 3.0]])


def test_modf_on_the_real_tile(realdata):
    from wowgrass.formats.adt import AdtTile

    t = AdtTile.from_bytes((realdata / "adt" / "continent4229.adt").read_bytes(), "continent4229.adt")
    assert len(t.modf) == 19 and len(t.wmos) == 11
    mats = modf_matrices(t.modf)
    bounds = modf_bounds(t.modf)
    # every placement's origin lies in its extents, and those lie on the tile (col 42, row 29)
    inside = (mats[:, :3, 3] >= bounds[:, 0] - 1e-3) & (mats[:, :3, 3] <= bounds[:, 1] + 1e-3)
    assert inside.all()
    south = 32 * 1600 / 3 - 30 * 1600 / 3          # row 29 spans X from 1066.7 (south) to 1600 (north)
    centre = mats[:, :3, 3]
    # (a tile lists every WMO that reaches into it: origins may lie just past its edges)
    assert (centre[:, 0] >= south - 200).all() and (centre[:, 0] <= south + 1600 / 3 + 200).all()
    assert (bounds[:, :, 0] >= south - 200).all() and (bounds[:, :, 0] <= south + 1600 / 3 + 200).all()
    # a box turned by a placement keeps its size
    bb = transformed_bounds(mats[:1], [[-1, -1, -1], [1, 1, 1]])
    assert np.all(bb[0, 1] - bb[0, 0] > 1.99)


def test_mddf_doodads_use_the_same_placement_as_modf():
    from wowgrass.formats.adt import MDDF_DTYPE
    from wowgrass.render.sources.doodads import mddf_matrices

    rec = np.zeros(3, MDDF_DTYPE)
    rec["position"] = [[100, 50, 200], [17000, 12, 3], [5, 6, 7]]
    rec["rotation"] = [[0, 30, 0], [10, 20, 30], [-5, 270, 2]]
    rec["scale"] = [1024, 512, 2048]
    got = mddf_matrices(rec).reshape(-1, 4, 4).transpose(0, 2, 1)
    want = placement_matrices(rec["position"], rec["rotation"], rec["scale"] / 1024.0)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-3)


def test_batch_material_large_flag():
    _, w = _house()
    g = w.groups[0]
    mats = g.batch_materials()
    assert mats.tolist() == g.batches["material"].tolist()
    g.batches["flags"][0] |= W.BATCH_MATERIAL_LARGE
    g.batches["bbox"][0, 0, 2] = 3            # the u16 material of a large-id batch
    assert g.batch_materials()[0] == 3
