"""M2 reader/writer: real files (versions 256, 260, 264), a hand-built file, round trips, bad input."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from wowgrass.errors import FormatError, GameFileNotFound, TruncatedError, UnsupportedError, UsageError
from wowgrass.formats.m2 import (
    HEADER_LEGACY,
    HEADER_WOTLK,
    VERTEX_DTYPE,
    BlendMode,
    M2Model,
    M2Texture,
    make_vertices,
    skin_path,
    sniff,
    write_m2,
)

GRASS_TEX = "World\\NoDXT\\Detail\\TestGrass.blp"


def grass_clump():
    """Two crossed quads: 8 vertices, 4 triangles."""
    pos = [(-0.5, 0, 0), (0.5, 0, 0), (0.5, 0, 1), (-0.5, 0, 1),
           (0, -0.5, 0), (0, 0.5, 0), (0, 0.5, 1), (0, -0.5, 1)]
    uv = [(0, 1), (1, 1), (1, 0), (0, 0)] * 2
    normal = [(0, 1, 0)] * 4 + [(1, 0, 0)] * 4
    tris = [0, 1, 2, 0, 2, 3, 4, 5, 6, 4, 6, 7]
    return make_vertices(pos, normal, uv), np.array(tris)


def read_m2(realdata, rel, **kw):
    return M2Model.from_bytes((realdata / "m2" / rel).read_bytes(), rel, **kw)


def loose_reader(folder):
    def read(path):
        p = folder / path.replace("\\", "/").rsplit("/", 1)[-1]
        if not p.is_file():
            raise GameFileNotFound(path)
        return p.read_bytes()
    return read


# -- real files ----------------------------------------------------------------------------------

def test_minimap_arrow(realdata):
    m = read_m2(realdata, "v256/MinimapArrow.m2")
    assert (m.version, m.name, len(m.vertices), m.view_count) == (256, "MinimapArrow", 4, 4)
    assert len(m.view.indices) == 4 and len(m.view.triangles) == 6 and m.triangle_count == 2
    np.testing.assert_allclose(m.bbox_min, (-0.0127, -0.0118, 0.0), atol=5e-5)
    np.testing.assert_allclose(m.bbox_max, (0.0135, 0.0145, 0.0), atol=5e-5)
    np.testing.assert_allclose(m.vertices["pos"][0], (-0.0127, 0.0145, 0.0), atol=5e-5)
    assert [t.filename for t in m.textures] == ["Interface\\Minimap\\MinimapArrow.blp"]


def test_talk_to_me_v256(realdata):
    m = read_m2(realdata, "v256/TalkToMe.m2")
    assert (m.version, m.name, len(m.vertices), m.view_count) == (256, "TalkToMe", 114, 4)
    assert len(m.view.indices) == 114 and len(m.view.triangles) == 360
    np.testing.assert_allclose(m.bbox_min, (-0.0793, -0.1098, 0.0756), atol=5e-5)
    np.testing.assert_allclose(m.bbox_max, (0.0807, 0.1066, 1.2875), atol=5e-5)
    assert m.radius == pytest.approx(0.6207, abs=5e-5)
    assert [t.filename for t in m.textures] == ["Interface\\Buttons\\YellowOrange64.blp",
                                                 "INTERFACE\\BUTTONS\\WHITE8X8.BLP"]
    assert all(t.type == 0 for t in m.textures)


def test_talk_to_me_v260_same_geometry(realdata):
    a = read_m2(realdata, "v256/TalkToMe.m2")
    b = read_m2(realdata, "v260/TalkToMe.m2")
    assert b.version == 260
    assert a.vertices.tobytes() == b.vertices.tobytes()
    assert a.bbox_min == b.bbox_min and a.bbox_max == b.bbox_max
    np.testing.assert_array_equal(a.view.indices, b.view.indices)
    np.testing.assert_array_equal(a.view.triangles, b.view.triangles)
    np.testing.assert_array_equal(a.triangles, b.triangles)
    # 256 has 32-byte submeshes, 260 the 48-byte form: the shared fields agree.
    for f in ("index_start", "index_count", "vertex_start", "vertex_count"):
        np.testing.assert_array_equal(a.view.submeshes[f], b.view.submeshes[f])
    ra, rb = a.render_mesh(), b.render_mesh()
    assert ra.batches == rb.batches
    assert ra.textures == ["Interface\\Buttons\\YellowOrange64.blp", "INTERFACE\\BUTTONS\\WHITE8X8.BLP"]


def test_rabbit_resolves_skin(realdata):
    folder = realdata / "m2" / "v264"
    asked = []

    def read(path):
        asked.append(path)
        return loose_reader(folder)(path)

    m = M2Model.from_bytes((folder / "Rabbit.m2").read_bytes(), "Creature\\Rabbit\\Rabbit.m2", read=read)
    assert asked == ["Creature\\Rabbit\\Rabbit00.skin"]
    assert (m.version, m.name, len(m.vertices), m.view_count) == (264, "Rabbit", 154, 1)
    assert m.header["bones"][0] == 40 and m.header["sequences"][0] == 7
    assert len(m.view.indices) == 154 and len(m.view.triangles) == 321 and m.triangle_count == 107
    np.testing.assert_allclose(m.bbox_min, (-0.6341, -0.3106, -0.1567), atol=5e-5)
    np.testing.assert_allclose(m.bbox_max, (0.4769, 0.4701, 0.8001), atol=5e-5)
    np.testing.assert_allclose(m.vertices["pos"][0], (-0.2735, -0.0035, 0.3579), atol=5e-5)
    assert m.textures == [M2Texture(11, m.textures[0].flags, "")]
    rm = m.render_mesh()
    assert rm.batches[0].texture is None and rm.batches[0].texture_type == 11
    assert rm.indices.dtype == np.uint16 and len(rm.indices) == 321
    used = rm.positions[rm.indices]
    assert rm.z_min == pytest.approx(used[:, 2].min()) and rm.z_max == pytest.approx(used[:, 2].max())


def test_rabbit_without_skin_keeps_header(realdata):
    m = read_m2(realdata, "v264/Rabbit.m2")
    assert m.view is None and len(m.triangles) == 0 and len(m.vertices) == 154
    with pytest.raises(UsageError):
        m.render_mesh()
    with pytest.raises(GameFileNotFound):
        read_m2(realdata, "v264/Rabbit.m2", read=lambda p: (_ for _ in ()).throw(GameFileNotFound(p)))


def test_real_models_rewrite(realdata, tmp_path):
    """Each real model's static parts survive write → read, also across versions."""
    src = read_m2(realdata, "v264/Rabbit.m2", read=loose_reader(realdata / "m2" / "v264"))
    for version in (264, 256):
        data, skin = src.to_bytes(version)
        back = M2Model.from_bytes(data, "R.m2", skin=skin)
        assert back.version == version
        assert back.vertices[back.triangles].tobytes() == src.vertices[src.triangles].tobytes()
        assert back.textures == src.textures and back.bbox_min == src.bbox_min
    talk = read_m2(realdata, "v256/TalkToMe.m2")
    data, skin = talk.to_bytes(264)
    back = M2Model.from_bytes(data, "T.m2", skin=skin)
    assert back.render_mesh().batches == talk.render_mesh().batches


# -- a hand-built v256 file (independent of the writer) ----------------------------------------

def hand_built_v256() -> bytes:
    """1 triangle: header (0x144) + pad, 3 vertices at 0x150, view at 0x1E0, its arrays after."""
    hdr = bytearray(0x150)
    struct.pack_into("<4sI", hdr, 0, b"MD20", 256)          # magic, version
    struct.pack_into("<II", hdr, 0x08, 4, 0x230)            # name "Tri\0"
    struct.pack_into("<II", hdr, 0x44, 3, 0x150)            # vertices
    struct.pack_into("<II", hdr, 0x4C, 1, 0x1E0)            # views (inline)
    struct.pack_into("<II", hdr, 0x5C, 1, 0x240)            # textures
    struct.pack_into("<II", hdr, 0x84, 1, 0x250)            # materials
    struct.pack_into("<II", hdr, 0x94, 1, 0x254)            # texture lookup
    struct.pack_into("<3f3ff", hdr, 0xB4, 0, 0, 0, 1, 0, 1, 0.75)   # bbox min, max, radius
    verts = b""
    for x, z in ((0, 0), (1, 0), (1, 1)):
        verts += struct.pack("<3f4B4B3f2f2f", x, 0, z, 255, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, x, 1 - z, 0, 0)
    assert len(verts) == 144                                 # 0x150 .. 0x1E0
    view = struct.pack("<10II", 3, 0x210, 3, 0x218, 0, 0, 1, 0x260, 1, 0x280, 0)   # 44 B at 0x1E0
    body = bytearray(0x300)
    body[0:0x150] = hdr
    body[0x150:0x1E0] = verts
    body[0x1E0:0x20C] = view
    body[0x210:0x216] = struct.pack("<3H", 2, 1, 0)           # indices: local → global (reversed)
    body[0x218:0x21E] = struct.pack("<3H", 0, 1, 2)           # triangles
    body[0x230:0x234] = b"Tri\0"
    body[0x240:0x250] = struct.pack("<IIII", 0, 0, 9, 0x2A0)  # texture type 0, name at 0x2A0
    body[0x250:0x254] = struct.pack("<HH", 0, 1)              # material: flags 0, blend 1
    body[0x254:0x256] = struct.pack("<H", 0)                  # texture lookup [0]
    # submesh (32 B, v256): id, level, vstart, vcount, istart, icount, ...
    body[0x260:0x280] = struct.pack("<10H3f", 0, 0, 0, 3, 0, 3, 0, 0, 0, 0, 0, 0, 0)
    # batch (24 B): flags, priority, shader, submesh, geoset, color, material, layer, texcount, combo...
    body[0x280:0x298] = struct.pack("<BbHHHhHHHHHHH", 16, 0, 0, 0, 0, -1, 0, 0, 1, 0, 0, 0, 0)
    body[0x2A0:0x2A9] = b"Tri.blp\0\0"
    return bytes(body)


def test_hand_built_v256():
    m = M2Model.from_bytes(hand_built_v256(), "Tri.m2")
    assert (m.version, m.name, len(m.vertices), m.view_count) == (256, "Tri", 3, 1)
    np.testing.assert_array_equal(m.triangles, [2, 1, 0])    # indirection applied
    rm = m.render_mesh()
    assert rm.batches[0].texture == "Tri.blp" and rm.batches[0].blend_mode == BlendMode.ALPHA_KEY
    assert (rm.z_min, rm.z_max) == (0.0, 1.0)
    np.testing.assert_array_equal(rm.uv0[2], (1, 0))
    assert m.radius == 0.75 and m.bbox_max == (1.0, 0.0, 1.0)


def test_header_layout_sizes():
    assert HEADER_LEGACY.size == 0x144 and HEADER_WOTLK.size == 0x130
    assert VERTEX_DTYPE.itemsize == 48
    offsets = {}
    pos = 0
    for name, code in HEADER_WOTLK.fields:
        offsets[name] = pos
        pos += struct.calcsize("<" + code)
    assert offsets["vertices"] == 0x3C and offsets["textures"] == 0x50 and offsets["bbox_min"] == 0xA0


# -- writer --------------------------------------------------------------------------------------

@pytest.mark.parametrize("version", [256, 260, 263, 264])
def test_write_read_grass(version):
    v, tris = grass_clump()
    data, skin = write_m2(v, tris, name="TestGrass", textures=[GRASS_TEX], version=version)
    assert (skin is None) == (version < 264)
    m = M2Model.from_bytes(data, "World\\NoDXT\\Detail\\TestGrass.m2", skin=skin)
    assert m.version == version and m.name == "TestGrass"
    assert m.vertices.tobytes() == v.tobytes()
    np.testing.assert_array_equal(m.triangles, tris)
    assert m.textures == [M2Texture(0, 0, GRASS_TEX)]
    assert m.bbox_min == (-0.5, -0.5, 0.0) and m.bbox_max == (0.5, 0.5, 1.0)
    rm = m.render_mesh()
    assert len(rm.batches) == 1
    b = rm.batches[0]
    assert (b.index_start, b.index_count, b.texture, b.blend_mode) == (0, 12, GRASS_TEX, 1)
    assert (rm.z_min, rm.z_max) == (0.0, 1.0)
    assert rm.positions.dtype == np.float32 and rm.uv0.shape == (8, 2)
    # write(read(write(x))) == write(x), byte for byte
    assert m.to_bytes() == (data, skin)


def test_write_skin_read_through_callable():
    v, tris = grass_clump()
    data, skin = write_m2(v, tris, name="G", textures=[GRASS_TEX], version=264)
    files = {"World\\NoDXT\\Detail\\G00.skin": skin}
    m = M2Model.from_bytes(data, "World\\NoDXT\\Detail\\G.m2", read=files.__getitem__)
    assert m.skin_path == "World\\NoDXT\\Detail\\G00.skin" and m.triangle_count == 4


def test_write_several_batches():
    v, tris = grass_clump()
    subs = np.zeros(2, [("index_start", "<u2"), ("index_count", "<u2"), ("vertex_count", "<u2")])
    subs["index_start"], subs["index_count"], subs["vertex_count"] = (0, 6), (6, 6), 8
    from wowgrass.formats.m2 import BATCH_DTYPE, MATERIAL_DTYPE
    batches = np.zeros(2, BATCH_DTYPE)
    batches["submesh"], batches["texture_combo"], batches["material"], batches["texture_count"] = (0, 1), (0, 1), (0, 1), 1
    mats = np.array([(0, 1), (4, 2)], MATERIAL_DTYPE)
    data, skin = write_m2(v, tris, name="G2", textures=["a.blp", "b.blp"], version=264,
                          submeshes=subs, batches=batches, materials=mats)
    rm = M2Model.from_bytes(data, "G2.m2", skin=skin).render_mesh()
    assert [(b.index_start, b.index_count, b.texture, b.blend_mode) for b in rm.batches] == [
        (0, 6, "a.blp", 1), (6, 6, "b.blp", 2)]


def test_writer_rejects_bad_input():
    v, tris = grass_clump()
    with pytest.raises(UsageError):
        write_m2(v, [0, 1], name="x")
    with pytest.raises(UsageError):
        write_m2(v, [0, 1, 8], name="x")
    with pytest.raises(UsageError):
        write_m2(v, tris, name="x", version=300)


def test_skin_path_and_sniff():
    assert skin_path("World\\NoDXT\\Detail\\ElwGra01.m2") == "World\\NoDXT\\Detail\\ElwGra0100.skin"
    assert skin_path("a/b.c/Model.MDX", 2) == "a/b.c/Model02.skin"
    assert skin_path("NoExt") == "NoExt00.skin"
    assert sniff(b"MD20\x08\x01") and not sniff(b"MD21")


# -- bad input -----------------------------------------------------------------------------------

def _assert_prefixes(data, parse, same, slack=0):
    """Every prefix raises FormatError, except (within ``slack`` end padding) ones that parse the same."""
    for n in range(len(data)):
        try:
            got = parse(data[:n])
        except FormatError:
            continue
        assert n >= len(data) - slack, f"prefix of {n} bytes parsed without error"
        assert same(got), f"prefix of {n} bytes parsed differently"


@pytest.mark.parametrize("version", [256, 264])
def test_truncation_sweep(version):
    v, tris = grass_clump()
    data, skin = write_m2(v, tris, name="G", textures=[GRASS_TEX], version=version)
    ref = M2Model.from_bytes(data, "G.m2", skin=skin)

    def same(m):
        return m.vertices.tobytes() == ref.vertices.tobytes() and np.array_equal(m.triangles, ref.triangles) \
            and m.textures == ref.textures

    _assert_prefixes(data, lambda d: M2Model.from_bytes(d, "G.m2", skin=skin), same, slack=15)
    if skin is not None:
        _assert_prefixes(skin, lambda s: M2Model.from_bytes(data, "G.m2", skin=s), same)


def _patched(data, offset, fmt, *values):
    b = bytearray(data)
    struct.pack_into(fmt, b, offset, *values)
    return bytes(b)


@pytest.mark.parametrize("field", ["vertices", "textures", "bones", "sequences", "materials", "name"])
def test_array_past_end(field):
    v, tris = grass_clump()
    data, _ = write_m2(v, tris, name="G", textures=[GRASS_TEX], version=256)
    off = _field_offsets(HEADER_LEGACY)[field]
    count, where = struct.unpack_from("<II", data, off)
    bad = _patched(data, off, "<II", 100000, where or 16)
    with pytest.raises(TruncatedError, match=field):
        M2Model.from_bytes(bad, "G.m2")


def _field_offsets(spec):
    out, pos = {}, 0
    for name, code in spec.fields:
        out[name] = pos
        pos += struct.calcsize("<" + code)
    return out


def test_huge_count_does_not_allocate():
    v, tris = grass_clump()
    data, _ = write_m2(v, tris, name="G", textures=[GRASS_TEX], version=264)
    bad = _patched(data, _field_offsets(HEADER_WOTLK)["vertices"], "<I", 0xFFFFFFFF)
    with pytest.raises(TruncatedError):
        M2Model.from_bytes(bad, "G.m2")


def test_triangle_index_out_of_range():
    v, tris = grass_clump()
    data, skin = write_m2(v, tris, name="G", textures=[GRASS_TEX], version=264)
    n_tri, o_tri = struct.unpack_from("<II", skin, 12)
    with pytest.raises(FormatError, match="out of range"):
        M2Model.from_bytes(data, "G.m2", skin=_patched(skin, o_tri, "<H", 8))
    n_idx, o_idx = struct.unpack_from("<II", skin, 4)
    with pytest.raises(FormatError, match="out of range"):
        M2Model.from_bytes(data, "G.m2", skin=_patched(skin, o_idx, "<H", 8))
    with pytest.raises(FormatError, match="multiple of 3"):
        M2Model.from_bytes(data, "G.m2", skin=_patched(skin, 12, "<I", n_tri - 1))


def test_bad_magic_version_and_batches():
    v, tris = grass_clump()
    data, skin = write_m2(v, tris, name="G", textures=[GRASS_TEX], version=264)
    with pytest.raises(FormatError, match="magic"):
        M2Model.from_bytes(b"MD21" + data[4:], "G.m2")
    with pytest.raises(UnsupportedError):
        M2Model.from_bytes(_patched(data, 4, "<I", 272), "G.m2")
    with pytest.raises(FormatError, match="not a .skin"):
        M2Model.from_bytes(data, "G.m2", skin=b"NIKS" + skin[4:])
    n_b, o_b = struct.unpack_from("<II", skin, 36)
    with pytest.raises(FormatError, match="submesh"):
        M2Model.from_bytes(data, "G.m2", skin=_patched(skin, o_b + 4, "<H", 5))
    with pytest.raises(FormatError, match="texture lookup"):
        M2Model.from_bytes(data, "G.m2", skin=_patched(skin, o_b + 16, "<H", 3))
    with pytest.raises(FormatError) as exc:
        M2Model.from_bytes(data[:100], "x/G.m2")
    assert "x/G.m2" in str(exc.value)
