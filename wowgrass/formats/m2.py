"""M2 models (``MD20``), versions 256 (1.12), 260–263 (2.x) and 264 (3.3.5), and their ``.skin`` views.

An M2 starts with a fixed header of ``M2Array`` fields (``u32 count; u32 offset``, offsets from the
start of the file) followed by the arrays themselves. The header differs by era, so it is described
twice, once per layout (:data:`HEADER_LEGACY` for ≤263, :data:`HEADER_WOTLK` for 264), from one field
list each that drives both reading and writing.

Views ("skin profiles") say how to draw the vertices: ``indices`` (local → global vertex),
``triangles`` (3 per face, indexing ``indices``), submeshes and batches (texture units). Up to 263
the profiles sit inline in the M2 (44 bytes each, offsets into the M2); in 264 they live in
``<name>00.skin`` … ``03.skin`` (48 bytes with a ``SKIN`` magic, offsets into the .skin), which the
caller fetches for us through a ``read(path) -> bytes`` callable. Only view 0 (the most detailed) is
decoded.

Quirks:

* Submeshes are 32 bytes in 256 and 48 bytes (``sortCenter``, ``sortRadius`` appended) from 260 on:
  the real 1.12/2.x ``TalkToMe.m2`` pair shows 260 already uses the long form (some references say
  263).
* ``submesh.index_start`` wraps at 65536; ``level`` holds the high part (``index_start + level << 16``).
* Bones, sequences, colours and the other animated blocks are not decoded, but every ``M2Array``
  whose element size is known is bounds-checked (count × size inside the file).

See https://wowdev.wiki/M2 and https://wowdev.wiki/M2/.skin.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

import numpy as np

from wowgrass.binary import array as read_array
from wowgrass.binary import need
from wowgrass.errors import FormatError, UnsupportedError, UsageError

# -- constants -----------------------------------------------------------------------------------

MAGIC = b"MD20"
SKIN_MAGIC = b"SKIN"
VERSION_CLASSIC = 256       # 1.12
VERSION_TBC_FIRST = 260     # 2.0 – 2.4 use 260–263 (2.4.3 ships 263)
VERSION_TBC = 263
VERSION_WOTLK = 264         # 3.3.5
SUPPORTED_VERSIONS = (256, 260, 261, 262, 263, 264)

GLOBAL_FLAG_TEXTURE_COMBINER_COMBOS = 0x8   # 264: one more M2Array after the header


class BlendMode:
    """M2Material blending modes (wowdev names)."""

    OPAQUE = 0
    ALPHA_KEY = 1        # alpha test; what grass uses
    ALPHA = 2
    NO_ALPHA_ADD = 3
    ADD = 4
    MOD = 5
    MOD2X = 6
    NAMES = ("opaque", "alpha_key", "alpha", "no_alpha_add", "add", "mod", "mod2x")


class RenderFlags:
    UNLIT = 0x1
    UNFOGGED = 0x2
    TWO_SIDED = 0x4
    BILLBOARD = 0x8
    NO_DEPTH_WRITE = 0x10


# -- record layouts ------------------------------------------------------------------------------

VERTEX_DTYPE = np.dtype([
    ("pos", "<f4", 3),
    ("bone_weights", "u1", 4),
    ("bone_indices", "u1", 4),
    ("normal", "<f4", 3),
    ("uv0", "<f4", 2),
    ("uv1", "<f4", 2),
])
assert VERTEX_DTYPE.itemsize == 48

TEXTURE_DTYPE = np.dtype([("type", "<u4"), ("flags", "<u4"), ("name_count", "<u4"), ("name_offset", "<u4")])
assert TEXTURE_DTYPE.itemsize == 16

MATERIAL_DTYPE = np.dtype([("flags", "<u2"), ("blend", "<u2")])
assert MATERIAL_DTYPE.itemsize == 4

_SUBMESH_FIELDS = [
    ("id", "<u2"), ("level", "<u2"), ("vertex_start", "<u2"), ("vertex_count", "<u2"),
    ("index_start", "<u2"), ("index_count", "<u2"), ("bone_count", "<u2"), ("bone_combo_index", "<u2"),
    ("bone_influences", "<u2"), ("center_bone_index", "<u2"), ("center", "<f4", 3),
]
SUBMESH_DTYPE_CLASSIC = np.dtype(_SUBMESH_FIELDS)
SUBMESH_DTYPE = np.dtype(_SUBMESH_FIELDS + [("sort_center", "<f4", 3), ("sort_radius", "<f4")])
assert SUBMESH_DTYPE_CLASSIC.itemsize == 32
assert SUBMESH_DTYPE.itemsize == 48

BATCH_DTYPE = np.dtype([
    ("flags", "u1"), ("priority", "i1"), ("shader_id", "<u2"), ("submesh", "<u2"), ("geoset", "<u2"),
    ("color", "<i2"), ("material", "<u2"), ("material_layer", "<u2"), ("texture_count", "<u2"),
    ("texture_combo", "<u2"), ("texcoord_combo", "<u2"), ("weight_combo", "<u2"),
    ("transform_combo", "<u2"),
])
assert BATCH_DTYPE.itemsize == 24


class StructSpec:
    """Field names + ``struct`` codes → one little-endian struct; unpack to a dict, pack from one.

    Codes: ``"I"``, ``"f"``, ``"4s"``, ``"3f"``; ``"A"`` is an M2Array (``2I`` → ``(count, offset)``).
    """

    def __init__(self, fields):
        self.fields = [(name, "2I" if code == "A" else code) for name, code in fields]
        self.struct = struct.Struct("<" + "".join(code for _, code in self.fields))
        self.size = self.struct.size
        self._widths = []
        for _name, code in self.fields:
            n = int(code[:-1]) if code[:-1].isdigit() else 1
            self._widths.append(1 if code.endswith("s") else n)

    def unpack(self, buf, offset=0, what="header", path=None) -> dict:
        need(buf, offset, self.size, what, path)
        flat = self.struct.unpack_from(buf, offset)
        out, i = {}, 0
        for (name, _code), n in zip(self.fields, self._widths):
            out[name] = flat[i] if n == 1 else tuple(flat[i:i + n])
            i += n
        return out

    def pack(self, values: dict) -> bytes:
        flat = []
        for (name, _code), n in zip(self.fields, self._widths):
            v = values.get(name, 0 if n == 1 else (0,) * n)
            flat.extend([v] if n == 1 else v)
        return self.struct.pack(*flat)


_COMMON_HEAD = [("magic", "4s"), ("version", "I"), ("name", "A"), ("global_flags", "I"),
                ("global_loops", "A"), ("sequences", "A"), ("sequence_lookup", "A")]
_COMMON_TAIL = [
    ("bbox_min", "3f"), ("bbox_max", "3f"), ("radius", "f"),
    ("collision_box_min", "3f"), ("collision_box_max", "3f"), ("collision_radius", "f"),
    ("collision_triangles", "A"), ("collision_vertices", "A"), ("collision_normals", "A"),
    ("attachments", "A"), ("attachment_lookup", "A"), ("events", "A"), ("lights", "A"),
    ("cameras", "A"), ("camera_lookup", "A"), ("ribbon_emitters", "A"), ("particle_emitters", "A"),
]
_LOOKUPS = [("materials", "A"), ("bone_lookup", "A"), ("texture_lookup", "A"),
            ("texture_unit_lookup", "A"), ("transparency_lookup", "A"), ("texture_transform_lookup", "A")]

HEADER_LEGACY = StructSpec(_COMMON_HEAD + [
    ("playable_animation_lookup", "A"), ("bones", "A"), ("key_bone_lookup", "A"),
    ("vertices", "A"), ("views", "A"), ("colors", "A"), ("textures", "A"), ("texture_weights", "A"),
    ("texture_flipbooks", "A"), ("texture_transforms", "A"), ("replaceable_texture_lookup", "A"),
] + _LOOKUPS + _COMMON_TAIL)
assert HEADER_LEGACY.size == 0x144

HEADER_WOTLK = StructSpec(_COMMON_HEAD + [
    ("bones", "A"), ("key_bone_lookup", "A"), ("vertices", "A"), ("num_skin_profiles", "I"),
    ("colors", "A"), ("textures", "A"), ("texture_weights", "A"), ("texture_transforms", "A"),
    ("replaceable_texture_lookup", "A"),
] + _LOOKUPS + _COMMON_TAIL)
assert HEADER_WOTLK.size == 0x130

# Skin profile: inline (≤263, 44 B) or in a .skin file (264, 48 B with the magic).
PROFILE_INLINE = StructSpec([("indices", "A"), ("triangles", "A"), ("properties", "A"),
                             ("submeshes", "A"), ("batches", "A"), ("bone_count_max", "I")])
PROFILE_SKIN = StructSpec([("magic", "4s")] + PROFILE_INLINE.fields)
assert PROFILE_INLINE.size == 44
assert PROFILE_SKIN.size == 48


def _track_size(version):
    # M2Track: ≤263 interpolation, global seq, ranges, timestamps, values; 264 drops ranges.
    return 28 if version < VERSION_WOTLK else 20


def _element_sizes(version: int) -> dict[str, int]:
    """Bytes per element of every header M2Array, for bounds checks (1 where not known exactly)."""
    t = _track_size(version)
    return {
        "name": 1, "global_loops": 4, "sequences": 68 if version < VERSION_WOTLK else 64,
        "sequence_lookup": 2, "playable_animation_lookup": 4,
        # M2CompBone: 12 B head (+ u32 name CRC from 2.x), 3 tracks, pivot
        "bones": 12 + (4 if version >= VERSION_TBC_FIRST else 0) + 3 * t + 12,
        "key_bone_lookup": 2, "vertices": VERTEX_DTYPE.itemsize, "views": PROFILE_INLINE.size,
        "colors": 2 * t, "textures": TEXTURE_DTYPE.itemsize, "texture_weights": t,
        "texture_flipbooks": 1, "texture_transforms": 3 * t, "replaceable_texture_lookup": 2,
        "materials": MATERIAL_DTYPE.itemsize, "bone_lookup": 2, "texture_lookup": 2,
        "texture_unit_lookup": 2, "transparency_lookup": 2, "texture_transform_lookup": 2,
        "collision_triangles": 2, "collision_vertices": 12, "collision_normals": 12,
        "attachments": 1, "attachment_lookup": 2, "events": 1, "lights": 1, "cameras": 1,
        "camera_lookup": 2, "ribbon_emitters": 1, "particle_emitters": 1,
    }


def _check_array(buf, arr, size, what, path):
    count, offset = arr
    if count:
        need(buf, offset, count * size, f"{what} ({count} × {size} bytes)", path)


def skin_path(m2_path: str, index: int = 0) -> str:
    """``World\\X\\Grass.m2`` → ``World\\X\\Grass00.skin`` (any extension is replaced)."""
    sep = max(m2_path.rfind("\\"), m2_path.rfind("/"))
    dot = m2_path.rfind(".")
    stem = m2_path[:dot] if dot > sep else m2_path
    return f"{stem}{index:02d}.skin"


# -- public classes ------------------------------------------------------------------------------

class M2Texture(NamedTuple):
    """One M2Texture: ``type`` 0 = file name given; other types are replaceable (skins, …)."""

    type: int
    flags: int
    filename: str


@dataclass(eq=False)
class SkinProfile:
    """One view: raw ``indices`` (local → global), ``triangles`` (into ``indices``), ``properties``,
    ``submeshes``, ``batches`` as structured arrays, ``bone_count_max``."""

    indices: np.ndarray
    triangles: np.ndarray
    properties: np.ndarray
    submeshes: np.ndarray
    batches: np.ndarray
    bone_count_max: int = 0
    submeshes_at: int = 0        # file offsets of the two tables, for error messages
    batches_at: int = 0


class RenderBatch(NamedTuple):
    index_start: int           # into RenderMesh.indices
    index_count: int
    texture: str | None        # file name; None for a replaceable texture (see texture_type)
    texture_type: int
    blend_mode: int            # BlendMode
    render_flags: int          # RenderFlags


@dataclass(eq=False)
class RenderMesh:
    """What a renderer needs: float32 vertex streams, one index array, batches and the z range."""

    positions: np.ndarray      # (n, 3) f4, model space, Z up
    normals: np.ndarray        # (n, 3) f4
    uv0: np.ndarray            # (n, 2) f4
    indices: np.ndarray        # (m,) u2, or u4 beyond 65536 vertices
    batches: list[RenderBatch]
    z_min: float
    z_max: float
    bbox_min: tuple
    bbox_max: tuple

    @property
    def textures(self) -> list[str | None]:
        return [b.texture for b in self.batches]

    @property
    def blend_modes(self) -> list[int]:
        return [b.blend_mode for b in self.batches]


@dataclass(eq=False)
class M2Model:
    """A decoded M2: header fields, vertices, view 0, textures and materials.

    ``triangles`` are global vertex indices (the skin's ``indices`` indirection applied); the raw
    view is kept in ``view``. For version 264 ``view`` is ``None`` when no ``read``/``skin`` was given.
    See https://wowdev.wiki/M2.
    """

    version: int
    name: str
    global_flags: int
    vertices: np.ndarray
    view: SkinProfile | None
    textures: list[M2Texture]
    materials: np.ndarray
    texture_lookup: np.ndarray
    bbox_min: tuple
    bbox_max: tuple
    radius: float
    view_count: int = 1
    header: dict = field(default_factory=dict)
    path: str | None = None
    skin_path: str | None = None

    # -- reading --
    @classmethod
    def from_bytes(cls, data, path: str | None = None, *, read: Callable[[str], bytes] | None = None,
                   skin: bytes | None = None, skin_index: int = 0) -> "M2Model":
        """Parse an M2. For 264, the view comes from ``skin`` bytes or ``read(skin_path(path, skin_index))``
        (``skin_index`` 0 is the finest level of detail, ``<name>00.skin``)."""
        buf = memoryview(data).cast("B") if not isinstance(data, (bytes, bytearray)) else data
        need(buf, 0, 8, "M2 magic and version", path)
        if bytes(buf[:4]) != MAGIC:
            raise FormatError(f"not an M2: magic {bytes(buf[:4])!r}, expected {MAGIC!r}", path=path, offset=0)
        (version,) = struct.unpack_from("<I", buf, 4)
        if version not in SUPPORTED_VERSIONS:
            raise UnsupportedError(f"M2 version {version} is not supported (256, 260–264)", path=path, offset=4)
        spec = HEADER_WOTLK if version == VERSION_WOTLK else HEADER_LEGACY
        hdr = spec.unpack(buf, 0, f"M2 v{version} header", path)
        sizes = _element_sizes(version)
        for name, code in spec.fields:
            if code == "2I":
                _check_array(buf, hdr[name], sizes[name], f"M2 {name}", path)
        if version == VERSION_WOTLK and hdr["global_flags"] & GLOBAL_FLAG_TEXTURE_COMBINER_COMBOS:
            need(buf, spec.size, 8, "M2 texture_combiner_combos", path)
            combos = struct.unpack_from("<2I", buf, spec.size)
            _check_array(buf, combos, 2, "M2 texture_combiner_combos", path)
            hdr["texture_combiner_combos"] = combos

        name = _m2_string(buf, hdr["name"], "M2 name", path)
        n_vert, o_vert = hdr["vertices"]
        vertices = read_array(buf, o_vert, n_vert, VERTEX_DTYPE, "M2 vertices", path)
        textures = []
        for t in _arr(buf, hdr["textures"], TEXTURE_DTYPE, "M2 textures", path):
            fname = _m2_string(buf, (int(t["name_count"]), int(t["name_offset"])), "M2 texture file name", path)
            textures.append(M2Texture(int(t["type"]), int(t["flags"]), fname))
        materials = _arr(buf, hdr["materials"], MATERIAL_DTYPE, "M2 materials", path)
        texture_lookup = _arr(buf, hdr["texture_lookup"], "<u2", "M2 texture lookup", path)

        submesh_dtype = SUBMESH_DTYPE_CLASSIC if version < VERSION_TBC_FIRST else SUBMESH_DTYPE
        spath = None
        if version == VERSION_WOTLK:
            view_count = hdr["num_skin_profiles"]
            view = None
            if skin is None and read is not None and view_count:
                if path is None:
                    raise UsageError("an M2 of version 264 needs its path to find its .skin")
                spath = skin_path(path, skin_index)
                skin = read(spath)
            if skin is not None:
                spath = spath or (skin_path(path, skin_index) if path else None)
                sbuf = skin if isinstance(skin, (bytes, bytearray)) else bytes(skin)
                need(sbuf, 0, 4, "skin magic", spath)
                if bytes(sbuf[:4]) != SKIN_MAGIC:
                    raise FormatError(f"not a .skin: magic {bytes(sbuf[:4])!r}, expected {SKIN_MAGIC!r}",
                                      path=spath, offset=0)
                view = _read_profile(sbuf, 0, PROFILE_SKIN, submesh_dtype, n_vert, spath)
        else:
            view_count, o_views = hdr["views"]
            if view_count == 0:
                view = None
            else:
                view = _read_profile(buf, o_views, PROFILE_INLINE, submesh_dtype, n_vert, path)

        model = cls(
            version=version, name=name, global_flags=hdr["global_flags"], vertices=vertices, view=view,
            textures=textures, materials=materials, texture_lookup=texture_lookup,
            bbox_min=tuple(float(v) for v in hdr["bbox_min"]), bbox_max=tuple(float(v) for v in hdr["bbox_max"]),
            radius=float(hdr["radius"]), view_count=view_count, header=hdr, path=path, skin_path=spath,
        )
        if view is not None:
            model._check_batches(spath if version == VERSION_WOTLK else path)
        return model

    def _check_batches(self, where):
        v = self.view
        for i, b in enumerate(v.batches):
            at = v.batches_at + i * BATCH_DTYPE.itemsize

            def fail(reason, field):
                raise FormatError(f"batch {i}: {reason}", path=where, offset=at + BATCH_DTYPE.fields[field][1])

            if b["submesh"] >= len(v.submeshes):
                fail(f"submesh {b['submesh']} of {len(v.submeshes)}", "submesh")
            if len(self.materials) and b["material"] >= len(self.materials):
                fail(f"material {b['material']} of {len(self.materials)}", "material")
            if b["texture_count"] and b["texture_combo"] >= len(self.texture_lookup):
                fail(f"texture lookup {b['texture_combo']} of {len(self.texture_lookup)}", "texture_combo")
            if b["texture_count"] and self.texture_lookup[b["texture_combo"]] >= len(self.textures):
                fail(f"texture {self.texture_lookup[b['texture_combo']]} of {len(self.textures)}", "texture_combo")
        for i, s in enumerate(v.submeshes):
            start = int(s["index_start"]) + (int(s["level"]) << 16)
            if start + int(s["index_count"]) > len(v.triangles):
                raise FormatError(f"submesh {i}: triangles {start}+{s['index_count']} pass {len(v.triangles)}",
                                  path=where, offset=v.submeshes_at + i * v.submeshes.dtype.itemsize
                                  + v.submeshes.dtype.fields["index_start"][1])

    # -- derived --
    @property
    def triangles(self) -> np.ndarray:
        """View 0's triangle corners as global vertex indices (u2); empty without a view."""
        if self.view is None:
            return np.zeros(0, "<u2")
        return self.view.indices[self.view.triangles]

    @property
    def triangle_count(self) -> int:
        return 0 if self.view is None else len(self.view.triangles) // 3

    def submesh_range(self, i: int) -> tuple[int, int]:
        s = self.view.submeshes[i]
        return int(s["index_start"]) + (int(s["level"]) << 16), int(s["index_count"])

    def batch_texture(self, batch) -> M2Texture | None:
        if not batch["texture_count"] or not len(self.texture_lookup):
            return None
        return self.textures[int(self.texture_lookup[batch["texture_combo"]])]

    def render_mesh(self) -> RenderMesh:
        """Float32 streams, one index array and one batch per texture unit of view 0."""
        if self.view is None:
            raise UsageError(f"{self.path or 'M2'}: no view loaded (a v264 model needs its .skin)")
        v = self.vertices
        n = len(v)
        tris = self.triangles.astype("<u2" if n <= 65536 else "<u4")
        batches = []
        for b in self.view.batches:
            start, count = self.submesh_range(int(b["submesh"]))
            tex = self.batch_texture(b)
            mat = self.materials[b["material"]] if len(self.materials) else None
            batches.append(RenderBatch(
                start, count,
                (tex.filename or None) if tex else None, tex.type if tex else -1,
                int(mat["blend"]) if mat is not None else BlendMode.OPAQUE,
                int(mat["flags"]) if mat is not None else 0,
            ))
        used = v["pos"][tris] if len(tris) else v["pos"]
        z = used[:, 2] if len(used) else np.array([self.bbox_min[2], self.bbox_max[2]], "f4")
        return RenderMesh(
            positions=np.ascontiguousarray(v["pos"], "<f4"),
            normals=np.ascontiguousarray(v["normal"], "<f4"),
            uv0=np.ascontiguousarray(v["uv0"], "<f4"),
            indices=np.ascontiguousarray(tris),
            batches=batches, z_min=float(z.min()), z_max=float(z.max()),
            bbox_min=self.bbox_min, bbox_max=self.bbox_max,
        )

    def to_bytes(self, version: int | None = None) -> tuple[bytes, bytes | None]:
        """Write this model's static parts again (see :func:`write_m2`)."""
        if self.view is None:
            raise UsageError("cannot write an M2 without its view")
        v = self.view
        # Vertices go out in view order, so the written view's indices are the identity.
        return write_m2(
            self.vertices[v.indices], v.triangles, name=self.name, textures=self.textures,
            version=version or self.version, materials=self.materials, submeshes=v.submeshes,
            batches=v.batches, texture_lookup=self.texture_lookup, global_flags=self.global_flags,
            bbox=(self.bbox_min, self.bbox_max), radius=self.radius,
        )

    def info(self) -> dict:
        """A JSON-ready summary (what ``wowgrass m2 info`` prints)."""
        hdr = self.header
        out = {
            "path": self.path, "version": self.version, "name": self.name,
            "global_flags": self.global_flags, "vertices": len(self.vertices), "views": self.view_count,
            "bones": hdr["bones"][0], "animations": hdr["sequences"][0],
            "bbox_min": list(self.bbox_min), "bbox_max": list(self.bbox_max), "radius": self.radius,
            "textures": [{"type": t.type, "flags": t.flags, "filename": t.filename} for t in self.textures],
            "materials": [{"flags": int(m["flags"]), "blend": int(m["blend"])} for m in self.materials],
        }
        if self.view is not None:
            out["view0"] = {
                "skin": self.skin_path,
                "indices": len(self.view.indices), "triangle_indices": len(self.view.triangles),
                "triangles": self.triangle_count, "submeshes": len(self.view.submeshes),
                "batches": [{"submesh": int(b["submesh"]), "material": int(b["material"]),
                             "texture": (lambda t: (t.filename or None) if t else None)(self.batch_texture(b))}
                            for b in self.view.batches],
            }
        else:
            out["view0"] = None
        return out


def _arr(buf, arr, dtype, what, path):
    count, offset = arr
    if count == 0:
        return np.zeros(0, dtype)
    return read_array(buf, offset, count, dtype, what, path)


def _m2_string(buf, arr, what, path) -> str:
    count, offset = arr
    if count == 0:
        return ""
    need(buf, offset, count, what, path)
    raw = bytes(buf[offset:offset + count])
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


def _read_profile(buf, offset, spec, submesh_dtype, n_vertices, path) -> SkinProfile:
    p = spec.unpack(buf, offset, "skin profile", path)
    indices = _arr(buf, p["indices"], "<u2", "skin indices", path)
    triangles = _arr(buf, p["triangles"], "<u2", "skin triangles", path)
    properties = _arr(buf, p["properties"], ("u1", 4), "skin properties", path)
    submeshes = _arr(buf, p["submeshes"], submesh_dtype, "skin submeshes", path)
    batches = _arr(buf, p["batches"], BATCH_DTYPE, "skin batches", path)
    if len(triangles) % 3:
        raise FormatError(f"skin triangles: {len(triangles)} indices is not a multiple of 3",
                          path=path, offset=p["triangles"][1])
    if len(triangles) and int(triangles.max()) >= len(indices):
        raise FormatError(f"skin triangles: index {int(triangles.max())} out of range "
                          f"(view has {len(indices)} indices)", path=path, offset=p["triangles"][1])
    if len(indices) and int(indices.max()) >= n_vertices:
        raise FormatError(f"skin indices: vertex {int(indices.max())} out of range "
                          f"(model has {n_vertices} vertices)", path=path, offset=p["indices"][1])
    return SkinProfile(indices, triangles, properties, submeshes, batches, p["bone_count_max"],
                       p["submeshes"][1], p["batches"][1])


# -- writing -------------------------------------------------------------------------------------

def make_vertices(pos, normal=None, uv0=None, uv1=None) -> np.ndarray:
    """A :data:`VERTEX_DTYPE` array from positions (and optional normals/UVs), bound to bone 0."""
    pos = np.asarray(pos, "<f4").reshape(-1, 3)
    v = np.zeros(len(pos), VERTEX_DTYPE)
    v["pos"] = pos
    v["bone_weights"][:, 0] = 255
    v["normal"] = (0, 0, 1) if normal is None else np.asarray(normal, "<f4").reshape(-1, 3)
    if uv0 is not None:
        v["uv0"] = np.asarray(uv0, "<f4").reshape(-1, 2)
    if uv1 is not None:
        v["uv1"] = np.asarray(uv1, "<f4").reshape(-1, 2)
    return v


class _Blob:
    """Appends 16-byte-aligned arrays after a header and returns their (count, offset)."""

    def __init__(self, start: int):
        self.parts = []
        self.pos = start

    def add(self, data: bytes, count: int) -> tuple[int, int]:
        if count == 0:
            return (0, 0)
        pad = -self.pos % 16
        if pad:
            self.parts.append(b"\0" * pad)
            self.pos += pad
        off = self.pos
        self.parts.append(data)
        self.pos += len(data)
        return (count, off)

    def bytes(self) -> bytes:
        return b"".join(self.parts)


def write_m2(vertices, triangles, *, name: str, textures=(), version: int = VERSION_WOTLK,
             materials=None, submeshes=None, batches=None, texture_lookup=None, global_flags: int = 0,
             bbox=None, radius=None) -> tuple[bytes, bytes | None]:
    """Write a static M2 (no animation): ``(m2_bytes, skin_bytes)``; ``skin_bytes`` is None below 264.

    ``vertices``: a :data:`VERTEX_DTYPE` array (see :func:`make_vertices`); ``triangles``: flat vertex
    indices, 3 per face (the view's ``indices`` is the identity). ``textures``: file names or
    :class:`M2Texture`. Defaults make one submesh, one alpha-tested material (blend 1, two-sided) and one
    batch using texture 0 — a grass clump. One bone and no sequences are written; version 256 keeps
    one inline view, 264 returns the ``00.skin`` bytes.
    """
    if version not in (VERSION_CLASSIC, *range(VERSION_TBC_FIRST, VERSION_TBC + 1), VERSION_WOTLK):
        raise UsageError(f"cannot write M2 version {version}")
    vertices = np.asarray(vertices, VERTEX_DTYPE)
    if len(vertices) > 65536:
        raise UsageError("an M2 view addresses at most 65536 vertices")
    tris = np.asarray(triangles).astype("<u2", copy=False).ravel()
    if len(tris) % 3:
        raise UsageError(f"{len(tris)} triangle indices is not a multiple of 3")
    if len(tris) and int(np.max(triangles)) >= len(vertices):
        raise UsageError(f"triangle index {int(np.max(triangles))} out of range ({len(vertices)} vertices)")
    texs = [t if isinstance(t, M2Texture) else M2Texture(0, 0, str(t)) for t in textures]
    legacy = version < VERSION_WOTLK
    sub_dtype = SUBMESH_DTYPE_CLASSIC if version < VERSION_TBC_FIRST else SUBMESH_DTYPE

    pos = vertices["pos"].astype("f8")
    if bbox is None:
        lo = pos.min(0) if len(pos) else np.zeros(3)
        hi = pos.max(0) if len(pos) else np.zeros(3)
    else:
        lo, hi = np.asarray(bbox[0], "f8"), np.asarray(bbox[1], "f8")
    if radius is None:
        radius = float(np.linalg.norm((hi - lo) / 2)) if len(pos) else 0.0

    if materials is None:
        materials = np.array([(RenderFlags.TWO_SIDED, BlendMode.ALPHA_KEY)], MATERIAL_DTYPE)
    materials = np.asarray(materials, MATERIAL_DTYPE)
    if submeshes is None:
        submeshes = np.zeros(1, SUBMESH_DTYPE)
        submeshes["vertex_count"] = len(vertices)
        submeshes["index_count"] = len(tris)
        submeshes["bone_count"] = 1
        submeshes["bone_influences"] = 1
        submeshes["center"] = (lo + hi) / 2
        submeshes["sort_center"] = (lo + hi) / 2
        submeshes["sort_radius"] = radius
    sub = np.zeros(len(submeshes), sub_dtype)
    for f in sub_dtype.names:
        if f in submeshes.dtype.names:
            sub[f] = submeshes[f]
    if batches is None:
        batches = np.zeros(1 if texs else 0, BATCH_DTYPE)
        if texs:
            batches["flags"] = 16
            batches["color"] = -1
            batches["texture_count"] = 1
    batches = np.asarray(batches, BATCH_DTYPE)
    if texture_lookup is None:
        texture_lookup = np.arange(len(texs), dtype="<u2")
    texture_lookup = np.asarray(texture_lookup, "<u2")

    spec = HEADER_LEGACY if legacy else HEADER_WOTLK
    hdr = {"magic": MAGIC, "version": version, "global_flags": global_flags & ~GLOBAL_FLAG_TEXTURE_COMBINER_COMBOS,
           "bbox_min": tuple(lo), "bbox_max": tuple(hi), "radius": float(radius),
           "collision_box_min": tuple(lo), "collision_box_max": tuple(hi), "collision_radius": float(radius)}
    blob = _Blob(spec.size)
    name_b = name.encode() + b"\0"
    hdr["name"] = blob.add(name_b, len(name_b))
    # One bone at the origin with empty tracks (global sequence -1), so bone index 0 is valid.
    t = _track_size(version)
    track = struct.pack("<Hh", 0, -1) + b"\0" * (t - 4)
    bone = struct.pack("<iIhH", -1, 0, -1, 0) + (b"\0\0\0\0" if version >= VERSION_TBC_FIRST else b"")
    bone += track * 3 + b"\0" * 12
    hdr["bones"] = blob.add(bone, 1)
    hdr["key_bone_lookup"] = blob.add(struct.pack("<h", -1), 1)
    hdr["vertices"] = blob.add(vertices.tobytes(), len(vertices))

    indices = np.arange(len(vertices), dtype="<u2")
    props = np.zeros((len(vertices), 4), "u1")
    skin = None
    if legacy:
        # The profile goes first, its arrays after; fill the profile in once offsets are known.
        hdr["views"] = blob.add(b"\0" * PROFILE_INLINE.size, 1)
        view_part = len(blob.parts) - 1
        prof = {"indices": blob.add(indices.tobytes(), len(indices)),
                "triangles": blob.add(tris.tobytes(), len(tris)),
                "properties": blob.add(props.tobytes(), len(props)),
                "submeshes": blob.add(sub.tobytes(), len(sub)),
                "batches": blob.add(batches.tobytes(), len(batches)),
                "bone_count_max": 1 if len(vertices) else 0}
        blob.parts[view_part] = PROFILE_INLINE.pack(prof)
    else:
        hdr["num_skin_profiles"] = 1
        sb = _Blob(PROFILE_SKIN.size)
        prof = {"magic": SKIN_MAGIC,
                "indices": sb.add(indices.tobytes(), len(indices)),
                "triangles": sb.add(tris.tobytes(), len(tris)),
                "properties": sb.add(props.tobytes(), len(props)),
                "submeshes": sb.add(sub.tobytes(), len(sub)),
                "batches": sb.add(batches.tobytes(), len(batches)),
                "bone_count_max": 1 if len(vertices) else 0}
        skin = PROFILE_SKIN.pack(prof) + sb.bytes()

    tex_records = np.zeros(len(texs), TEXTURE_DTYPE)
    tex_at = blob.add(b"\0" * (16 * len(texs)), len(texs))
    tex_part = len(blob.parts) - 1
    for i, tx in enumerate(texs):
        fn = tx.filename.encode() + b"\0" if tx.filename else b""
        tex_records[i] = (tx.type, tx.flags, *blob.add(fn, len(fn)))
    if texs:
        blob.parts[tex_part] = tex_records.tobytes()
    hdr["textures"] = tex_at
    hdr["texture_weights"] = blob.add(track, 1)
    hdr["materials"] = blob.add(materials.tobytes(), len(materials))
    hdr["bone_lookup"] = blob.add(struct.pack("<H", 0), 1)
    hdr["texture_lookup"] = blob.add(texture_lookup.tobytes(), len(texture_lookup))
    hdr["texture_unit_lookup"] = blob.add(struct.pack("<h", 0), 1)
    hdr["transparency_lookup"] = blob.add(struct.pack("<H", 0), 1)
    hdr["texture_transform_lookup"] = blob.add(struct.pack("<h", -1), 1)
    hdr["replaceable_texture_lookup"] = blob.add(struct.pack("<h", -1), 1)
    body = blob.bytes()
    pad = -(spec.size + len(body)) % 16
    return spec.pack(hdr) + body + b"\0" * pad, skin


def sniff(prefix: bytes) -> bool:
    """True for bytes that start like an M2 (``MD20``)."""
    return prefix[:4] == MAGIC
