"""WMO v17 world map objects (1.12 – 3.3.5): a root file and up to 512 group files.

The root (``Name.wmo``) holds the header (MOHD), texture names (MOTX), materials (MOMT), group
names and infos (MOGN, MOGI), portals, lights, doodad sets, names and placements (MODS, MODN,
MODD) and fogs (MFOG). Each group (``Name_NNN.wmo``) is MVER + one MOGP chunk: a 68-byte header
followed by sub-chunks: MOPY (per triangle: flags, material), MOVI (u16 indices), MOVT, MONR,
MOTV (up to three uv sets), MOBA (render batches), and the optional MOLR, MODR, MOBN/MOBR, MOCV
(up to two colour sets), MLIQ (liquid). Sub-chunks are found by walking, not by the order the
header's flags imply, and their counts are checked against each other before anything is built.

Counts in MOHD are informative only: the chunks are the truth (a real root's MODD holds fewer
records than its MOHD says). Chunks wowgrass does not model (portals, lights, visibility, BSP, ...)
are kept as raw bytes so that read → write gives the file back byte for byte.

Quirks:
* MOBA is the 24-byte v17 batch: an int16 bounding box, the first MOVI index, the index count,
  the first and last vertex, a flags byte and the material (MOMT index; with batch flag 0x2, from
  Legion on, a u16 material in the box's third value instead). A batch's material 0xFF draws
  nothing (collision only).
* MOCV: with group flag 0x4 the first MOCV is the vertex colour (BGRA); flag 0x1000000 adds a
  second one whose alpha blends the material's second texture. Without 0x4 a single MOCV is
  that blend set. :func:`fixed_vertex_colours` applies the client's load-time fix (the MOHD
  ambient taken out, alpha folded in; see wowdev.wiki WMO "FixColorVertexAlpha").
* MODN names end in .mdx (1.x) or .mdl; the client loads .m2 (:func:`model_path`).
* MLIQ: header (verts x/y, tiles x/y, corner, material), 8-byte vertices (water: flow bytes,
  magma: u16 uv; then the height), one byte per tile (0x08: no liquid). Its LiquidType follows
  the group's groupLiquid and MOHD flag 0x4 (:func:`group_liquid_type`).

Coordinates are the WMO's local space, X/Y/Z like the world (Z up); MODF places it
(:mod:`wowgrass.game.mapobjects`). Sources: wowdev.wiki WMO; wowserhq/format ``mapobj``; noggit3
``WMO.cpp``, ``wmo_liquid.cpp``; pywowlib ``wmo_format_*``. Read, not copied.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from wowgrass.errors import FormatError, GameFileNotFound, TruncatedError, UnsupportedError
from wowgrass.formats.chunks import HEADER_SIZE, disk_tag, iter_chunks, write_chunk

VERSION = 17
MAX_GROUPS = 512

MOHD_DTYPE = np.dtype([("n_textures", "<u4"), ("n_groups", "<u4"), ("n_portals", "<u4"), ("n_lights", "<u4"),
                       ("n_doodad_names", "<u4"), ("n_doodad_defs", "<u4"), ("n_doodad_sets", "<u4"),
                       ("ambient", "u1", 4), ("wmo_id", "<u4"), ("bbox", "<f4", (2, 3)),
                       ("flags", "<u2"), ("num_lod", "<u2")])
MOMT_DTYPE = np.dtype([("flags", "<u4"), ("shader", "<u4"), ("blend", "<u4"), ("texture1", "<u4"),
                       ("emissive", "u1", 4), ("frame_emissive", "u1", 4), ("texture2", "<u4"),
                       ("diffuse", "u1", 4), ("ground_type", "<u4"), ("texture3", "<u4"), ("color2", "<u4"),
                       ("flags2", "<u4"), ("runtime", "<u4", 4)])
MOGI_DTYPE = np.dtype([("flags", "<u4"), ("bbox", "<f4", (2, 3)), ("name_offset", "<i4")])
MODS_DTYPE = np.dtype([("name", "S20"), ("start", "<u4"), ("count", "<u4"), ("pad", "<u4")])
MODD_DTYPE = np.dtype([("name_flags", "<u4"), ("position", "<f4", 3), ("rotation", "<f4", 4),  # x, y, z, w
                       ("scale", "<f4"), ("colour", "u1", 4)])
MFOG_DTYPE = np.dtype([("flags", "<u4"), ("position", "<f4", 3), ("small_radius", "<f4"), ("large_radius", "<f4"),
                       ("end", "<f4"), ("start_scalar", "<f4"), ("colour", "u1", 4),
                       ("uw_end", "<f4"), ("uw_start_scalar", "<f4"), ("uw_colour", "u1", 4)])
MOGP_DTYPE = np.dtype([("name_offset", "<u4"), ("description_offset", "<u4"), ("flags", "<u4"),
                       ("bbox", "<f4", (2, 3)), ("portal_start", "<u2"), ("portal_count", "<u2"),
                       ("trans_batches", "<u2"), ("int_batches", "<u2"), ("ext_batches", "<u2"), ("pad", "<u2"),
                       ("fogs", "u1", 4), ("group_liquid", "<u4"), ("unique_id", "<u4"), ("flags2", "<u4"),
                       ("unused", "<u4")])
MOBA_DTYPE = np.dtype([("bbox", "<i2", (2, 3)), ("start_index", "<u4"), ("count", "<u2"), ("min_index", "<u2"),
                       ("max_index", "<u2"), ("flags", "u1"), ("material", "u1")])
MOPY_DTYPE = np.dtype([("flags", "u1"), ("material", "u1")])
MLIQ_HEADER = struct.Struct("<4i3fH")
for _dt, _size in ((MOHD_DTYPE, 64), (MOMT_DTYPE, 64), (MOGI_DTYPE, 32), (MODS_DTYPE, 32), (MODD_DTYPE, 40),
                   (MFOG_DTYPE, 48), (MOGP_DTYPE, 68), (MOBA_DTYPE, 24)):
    assert _dt.itemsize == _size
assert MLIQ_HEADER.size == 30


class MohdFlags:
    DO_NOT_ATTENUATE = 0x1
    SKIP_BASE_COLOUR = 0x2        # unified render path: MOHD ambient not added to MOCV
    USE_LIQUID_TYPE_ID = 0x4      # MOGP groupLiquid is a LiquidType id
    LIGHTEN_INTERIORS = 0x8       # MOCV alpha not fixed (wowserhq: CVERTS_FIXED)


class GroupFlags:
    BSP = 0x1
    LIGHT_MAP = 0x2
    VERTEX_COLOURS = 0x4
    EXTERIOR = 0x8
    EXTERIOR_LIT = 0x40
    UNREACHABLE = 0x80
    LIGHTS = 0x200
    DOODADS = 0x800
    LIQUID = 0x1000
    INTERIOR = 0x2000
    ALWAYS_DRAW = 0x10000
    SKYBOX = 0x40000
    OCEAN = 0x80000               # group liquid is ocean (when it names water)
    MOCV2 = 0x1000000
    MOTV2 = 0x2000000
    ANTIPORTAL = 0x4000000
    MOTV3 = 0x40000000


class MaterialFlags:
    UNLIT = 0x1
    UNFOGGED = 0x2
    TWO_SIDED = 0x4               # F_UNCULLED
    EXTERIOR_LIGHT = 0x8
    EMISSIVE = 0x10               # F_SIDN: night glow
    WINDOW = 0x20
    CLAMP_S = 0x40
    CLAMP_T = 0x80


#: MOMT blend modes (EGxBlend) the renderer distinguishes
BLEND_OPAQUE, BLEND_ALPHA_KEY, BLEND_ALPHA, BLEND_ADD = 0, 1, 2, 3
NO_MATERIAL = 0xFF                # MOPY material of a collision-only triangle
BATCH_MATERIAL_LARGE = 0x2        # MOBA flag (Legion on): the material id is the u16 in the box's bz

ROOT_ORDER = (b"MVER", b"MOHD", b"MOTX", b"MOMT", b"MOGN", b"MOGI", b"MOSB", b"MOPV", b"MOPT", b"MOPR", b"MOVV",
              b"MOVB", b"MOLT", b"MODS", b"MODN", b"MODD", b"MFOG", b"MCVP")
ROOT_MODELLED = {b"MVER", b"MOHD", b"MOTX", b"MOMT", b"MOGN", b"MOGI", b"MOSB", b"MODS", b"MODN", b"MODD", b"MFOG"}
GROUP_ORDER = (b"MOPY", b"MOVI", b"MOVT", b"MONR", b"MOTV", b"MOBA", b"MOLR", b"MODR", b"MOBN", b"MOBR", b"MOCV",
               b"MLIQ")
GROUP_MODELLED = {b"MOPY", b"MOVI", b"MOVT", b"MONR", b"MOTV", b"MOBA", b"MOLR", b"MODR", b"MOCV", b"MLIQ"}


# ------------------------------------------------------------------------------------ strings
@dataclass
class WmoStringBlock:
    """A block of NUL-terminated names referenced by byte offset (MOTX, MOGN, MODN)."""

    raw: bytes = b""

    @classmethod
    def build(cls, names, align: int = 4) -> tuple["WmoStringBlock", list[int]]:
        """Names laid out one after the other, each padded with NULs to ``align`` bytes."""
        blob, offsets = bytearray(), []
        for name in names:
            offsets.append(len(blob))
            blob += name.encode("utf-8") + b"\0"
            blob += b"\0" * (-len(blob) % align)
        return cls(bytes(blob)), offsets

    def at(self, offset: int) -> str | None:
        """The name starting at ``offset`` (None when the offset is outside the block)."""
        if not 0 <= offset < len(self.raw):
            return None
        end = self.raw.find(b"\0", offset)
        return self.raw[offset:len(self.raw) if end < 0 else end].decode("utf-8", "replace")

    def names(self) -> list[tuple[int, str]]:
        """Every non-empty name with its offset."""
        out, pos = [], 0
        for part in self.raw.split(b"\0"):
            if part:
                out.append((pos, part.decode("utf-8", "replace")))
            pos += len(part) + 1
        return out


def model_path(name: str) -> str:
    """A MODN doodad name as the client loads it: ``.mdx``/``.mdl`` become ``.m2``."""
    low = name.lower()
    if low.endswith((".mdx", ".mdl")):
        return name[:-4] + ".m2"
    return name


def _records(payload, dtype, tag, path, offset) -> np.ndarray:
    size = len(payload)
    if size % dtype.itemsize:
        raise FormatError(f"{tag}: {size} bytes is not a whole number of {dtype.itemsize}-byte records",
                          path=path, offset=offset)
    return np.frombuffer(bytes(payload), dtype).copy()


def _finite(arr, what, path, offset, itemsize):
    a = np.asarray(arr, np.float32).reshape(len(arr), -1)
    bad = ~np.isfinite(a).all(axis=1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise FormatError(f"{what} {i} is not finite ({a[i].tolist()})", path=path, offset=offset + i * itemsize)


# --------------------------------------------------------------------------------------- root
@dataclass(eq=False)
class WmoRoot:
    header: np.ndarray = field(default_factory=lambda: np.zeros((), MOHD_DTYPE))
    textures: WmoStringBlock = field(default_factory=WmoStringBlock)       # MOTX
    materials: np.ndarray = field(default_factory=lambda: np.zeros(0, MOMT_DTYPE))
    group_names: WmoStringBlock = field(default_factory=WmoStringBlock)    # MOGN
    groups: np.ndarray = field(default_factory=lambda: np.zeros(0, MOGI_DTYPE))
    skybox: str | None = None                                        # MOSB
    doodad_sets: np.ndarray = field(default_factory=lambda: np.zeros(0, MODS_DTYPE))
    doodad_names: WmoStringBlock = field(default_factory=WmoStringBlock)   # MODN
    doodads: np.ndarray = field(default_factory=lambda: np.zeros(0, MODD_DTYPE))
    fogs: np.ndarray = field(default_factory=lambda: np.zeros(0, MFOG_DTYPE))
    chunks: list = field(default_factory=list)    # [(tag, raw payload or None = modelled)], file order
    mosb_raw: bytes | None = None
    version: int = VERSION
    path: str | None = None

    @classmethod
    def from_bytes(cls, data, path: str | None = None) -> "WmoRoot":
        buf = bytes(data)
        seen: dict = {}
        chunks = []
        for ch in iter_chunks(buf, path):
            if ch.tag in ROOT_MODELLED and ch.tag not in seen:
                seen[ch.tag] = ch
                chunks.append((ch.tag, None))
            else:
                chunks.append((ch.tag, bytes(ch.payload)))
        if b"MVER" not in seen:
            raise FormatError("no MVER chunk: not a WMO file", path=path, offset=0)
        mver = seen[b"MVER"]
        if mver.size < 4:
            raise TruncatedError("MVER: expected 4 bytes", path=path, offset=mver.offset)
        (version,) = struct.unpack_from("<I", buf, mver.data_offset)
        if version != VERSION:
            raise UnsupportedError(f"WMO version {version}; wowgrass reads version {VERSION} (1.x - 3.x)",
                                   path=path, offset=mver.data_offset)
        if b"MOGP" in {t for t, _ in chunks}:
            raise FormatError("this is a WMO group file (MOGP), not a root", path=path, offset=0)
        if b"MOHD" not in seen:
            raise FormatError("WMO root has no MOHD chunk", path=path, offset=len(buf))
        mohd = seen[b"MOHD"]
        if mohd.size < 64:
            raise TruncatedError(f"MOHD: expected 64 bytes, got {mohd.size}", path=path, offset=mohd.offset)
        header = np.frombuffer(buf, MOHD_DTYPE, 1, mohd.data_offset)[0].copy()
        if not np.isfinite(header["bbox"]).all():
            raise FormatError("MOHD: bounding box is not finite", path=path, offset=mohd.data_offset + 0x24)

        def rec(tag, dtype):
            ch = seen.get(tag)
            return np.zeros(0, dtype) if ch is None else _records(ch.payload, dtype, tag.decode(), path, ch.offset)

        def block(tag):
            ch = seen.get(tag)
            return WmoStringBlock(b"" if ch is None else bytes(ch.payload))

        groups = rec(b"MOGI", MOGI_DTYPE)
        if len(groups) > MAX_GROUPS:
            raise FormatError(f"MOGI: {len(groups)} groups, the client allows {MAX_GROUPS}", path=path,
                              offset=seen[b"MOGI"].offset)
        if len(groups):
            _finite(groups["bbox"], "MOGI group bounding box", path, seen[b"MOGI"].data_offset + 4, 32)
        doodads = rec(b"MODD", MODD_DTYPE)
        if len(doodads):
            off = seen[b"MODD"].data_offset
            _finite(np.concatenate([doodads["position"], doodads["rotation"], doodads["scale"][:, None]], axis=1),
                    "MODD doodad", path, off, 40)
        sets = rec(b"MODS", MODS_DTYPE)
        bad = sets["start"].astype(np.int64) + sets["count"] > len(doodads)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise FormatError(f"MODS set {i} ({_set_name(sets[i])!r}): doodads {int(sets['start'][i])}.."
                              f"{int(sets['start'][i]) + int(sets['count'][i]) - 1} past MODD's {len(doodads)}",
                              path=path, offset=seen[b"MODS"].data_offset + 32 * i + 20)
        mosb = seen.get(b"MOSB")
        skybox = None
        if mosb is not None:
            raw = bytes(mosb.payload)
            skybox = raw.split(b"\0", 1)[0].decode("utf-8", "replace") or None
        return cls(header=header, textures=block(b"MOTX"), materials=rec(b"MOMT", MOMT_DTYPE),
                   group_names=block(b"MOGN"), groups=groups, skybox=skybox, doodad_sets=sets,
                   doodad_names=block(b"MODN"), doodads=doodads, fogs=rec(b"MFOG", MFOG_DTYPE),
                   chunks=chunks, mosb_raw=None if mosb is None else bytes(mosb.payload), version=version, path=path)

    # -- names --
    def texture(self, offset: int) -> str | None:
        return self.textures.at(int(offset))

    def material_textures(self, i: int) -> tuple[str | None, str | None]:
        m = self.materials[i]
        return self.texture(m["texture1"]), (self.texture(m["texture2"]) if m["texture2"] else None)

    def group_name(self, i: int) -> str | None:
        off = int(self.groups["name_offset"][i])
        return None if off < 0 else self.group_names.at(off)

    def doodad_name(self, i: int) -> str | None:
        return self.doodad_names.at(int(self.doodads["name_flags"][i]) & 0xFFFFFF)

    @property
    def n_groups(self) -> int:
        """Groups as MOGI lists them (MOHD's count when there is no MOGI)."""
        return len(self.groups) if len(self.groups) else min(int(self.header["n_groups"]), MAX_GROUPS)

    @property
    def bbox(self) -> np.ndarray:
        return np.asarray(self.header["bbox"], np.float32)

    def doodad_set_indices(self, set_index: int = 0) -> np.ndarray:
        """MODD indices a placement with doodad set ``set_index`` shows: set 0 (the global set,
        always shown) plus the chosen one; an index past MODS shows set 0 alone."""
        sets = self.doodad_sets
        out = []
        for s in sorted({0, int(set_index)}):
            if s < len(sets):
                out.append(np.arange(int(sets["start"][s]), int(sets["start"][s]) + int(sets["count"][s])))
        return np.concatenate(out).astype(np.int64) if out else np.zeros(0, np.int64)

    def info(self) -> dict:
        h = self.header
        return {
            "version": self.version,
            "header": {"textures": int(h["n_textures"]), "groups": int(h["n_groups"]),
                       "portals": int(h["n_portals"]), "lights": int(h["n_lights"]),
                       "doodad_names": int(h["n_doodad_names"]), "doodads": int(h["n_doodad_defs"]),
                       "doodad_sets": int(h["n_doodad_sets"]), "flags": int(h["flags"]),
                       "ambient_bgra": [int(v) for v in h["ambient"]], "wmo_id": int(h["wmo_id"])},
            "bbox": {"min": [float(v) for v in h["bbox"][0]], "max": [float(v) for v in h["bbox"][1]]},
            "textures": [n for _, n in self.textures.names()],
            "materials": [{"index": i, "flags": int(m["flags"]), "shader": int(m["shader"]), "blend": int(m["blend"]),
                           "texture1": self.texture(m["texture1"]),
                           "texture2": self.texture(m["texture2"]) if m["texture2"] else None}
                          for i, m in enumerate(self.materials)],
            "groups": len(self.groups),
            "doodad_sets": [{"index": i, "name": _set_name(s), "start": int(s["start"]), "count": int(s["count"])}
                            for i, s in enumerate(self.doodad_sets)],
            "doodads": len(self.doodads),
            "doodad_models": len({(self.doodad_name(i) or "").lower() for i in range(len(self.doodads))}),
            "fogs": len(self.fogs),
            "skybox": self.skybox,
            "chunks": [t.decode("latin-1") for t, _ in self.chunks],
        }


def _set_name(s) -> str:
    return bytes(s["name"]).split(b"\0", 1)[0].decode("utf-8", "replace")


def write_wmo_root(root: WmoRoot) -> bytes:
    """Serialize a root: modelled chunks from the fields, the others as kept, in the file's order
    (a new root: the client's order). MOHD is written as it stands (:func:`make_root` fills its
    counts; a file's own counts are kept even where they disagree with its chunks)."""
    h = np.array(root.header, MOHD_DTYPE)
    modelled = {
        b"MVER": struct.pack("<I", root.version),
        b"MOHD": None,
        b"MOTX": root.textures.raw,
        b"MOMT": np.ascontiguousarray(root.materials, MOMT_DTYPE).tobytes(),
        b"MOGN": root.group_names.raw,
        b"MOGI": np.ascontiguousarray(root.groups, MOGI_DTYPE).tobytes(),
        b"MOSB": root.mosb_raw if root.mosb_raw is not None else
        ((root.skybox or "").encode("utf-8") + b"\0" + b"\0" * (-(len(root.skybox or "") + 1) % 4)),
        b"MODS": np.ascontiguousarray(root.doodad_sets, MODS_DTYPE).tobytes(),
        b"MODN": root.doodad_names.raw,
        b"MODD": np.ascontiguousarray(root.doodads, MODD_DTYPE).tobytes(),
        b"MFOG": np.ascontiguousarray(root.fogs, MFOG_DTYPE).tobytes(),
    }
    order = root.chunks or [(t, None) for t in ROOT_ORDER if t in modelled]
    out = []
    for tag, raw in order:
        if raw is not None:
            out.append(write_chunk(tag, raw))
        elif tag == b"MOHD":
            out.append(write_chunk(tag, h.tobytes()))
        else:
            out.append(write_chunk(tag, modelled[tag]))
    return b"".join(out)


# -------------------------------------------------------------------------------------- groups
@dataclass(eq=False)
class WmoLiquid:
    """A group's MLIQ: a grid of ``x_tiles`` × ``y_tiles`` cells of UNIT size from ``corner``."""

    x_verts: int = 0
    y_verts: int = 0
    x_tiles: int = 0
    y_tiles: int = 0
    corner: np.ndarray = field(default_factory=lambda: np.zeros(3, np.float32))
    material: int = 0
    heights: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float32))   # (y_verts, x_verts)
    vertex_bytes: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 4), np.uint8))  # flow / uv bytes
    tiles: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.uint8))        # (y_tiles, x_tiles)
    trailing: bytes = b""

    @property
    def exists(self) -> np.ndarray:
        """(y_tiles, x_tiles) bool: tiles that hold liquid (flag 0x08 clear)."""
        return (self.tiles & 0x08) == 0

    @classmethod
    def from_bytes(cls, payload, path=None, offset=0) -> "WmoLiquid":
        buf = bytes(payload)
        if len(buf) < MLIQ_HEADER.size:
            raise TruncatedError(f"MLIQ: header needs {MLIQ_HEADER.size} bytes, chunk has {len(buf)}",
                                 path=path, offset=offset)
        xv, yv, xt, yt, cx, cy, cz, mat = MLIQ_HEADER.unpack_from(buf, 0)
        if min(xv, yv, xt, yt) < 0 or max(xv, yv, xt, yt) > 4096:
            raise FormatError(f"MLIQ: grid of {xv}×{yv} vertices, {xt}×{yt} tiles is not plausible",
                              path=path, offset=offset)
        if not np.isfinite((cx, cy, cz)).all():
            raise FormatError("MLIQ: corner is not finite", path=path, offset=offset + 16)
        nv, nt = xv * yv, xt * yt
        size = MLIQ_HEADER.size + 8 * nv + nt
        if size > len(buf):
            raise TruncatedError(f"MLIQ: {xv}×{yv} vertices and {xt}×{yt} tiles need {size} bytes, chunk has "
                                 f"{len(buf)}", path=path, offset=offset)
        verts = np.frombuffer(buf, np.uint8, 8 * nv, MLIQ_HEADER.size).reshape(yv, xv, 8)
        heights = np.ascontiguousarray(verts[..., 4:]).view("<f4")[..., 0]
        if not np.isfinite(heights).all():
            j = int(np.flatnonzero(~np.isfinite(heights).ravel())[0])
            raise FormatError(f"MLIQ: vertex {j} height is not finite", path=path,
                              offset=offset + MLIQ_HEADER.size + 8 * j + 4)
        tiles = np.frombuffer(buf, np.uint8, nt, MLIQ_HEADER.size + 8 * nv).reshape(yt, xt)
        return cls(xv, yv, xt, yt, np.array([cx, cy, cz], np.float32), mat, heights.copy(),
                   np.ascontiguousarray(verts[..., :4]), tiles.copy(), buf[size:])



def write_wmo_liquid(liquid: WmoLiquid) -> bytes:
    """An MLIQ payload: header, vertices (4 kind bytes and a height each), tile flags, the bytes
    kept after them."""
    head = MLIQ_HEADER.pack(liquid.x_verts, liquid.y_verts, liquid.x_tiles, liquid.y_tiles,
                            *(float(v) for v in liquid.corner), liquid.material)
    verts = np.zeros((liquid.y_verts, liquid.x_verts, 8), np.uint8)
    verts[..., :4] = liquid.vertex_bytes
    verts[..., 4:] = np.ascontiguousarray(liquid.heights, "<f4")[..., None].view(np.uint8)
    return head + verts.tobytes() + np.ascontiguousarray(liquid.tiles, np.uint8).tobytes() + liquid.trailing


@dataclass(eq=False)
class WmoGroup:
    header: np.ndarray = field(default_factory=lambda: np.zeros((), MOGP_DTYPE))
    triangles: np.ndarray = field(default_factory=lambda: np.zeros(0, MOPY_DTYPE))   # MOPY, one per triangle
    indices: np.ndarray = field(default_factory=lambda: np.zeros(0, "<u2"))          # MOVI
    vertices: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), "<f4"))    # MOVT
    normals: np.ndarray | None = None                                                # MONR
    uvs: list = field(default_factory=list)                                          # MOTV sets
    batches: np.ndarray = field(default_factory=lambda: np.zeros(0, MOBA_DTYPE))
    colours: list = field(default_factory=list)                                      # MOCV sets, (n, 4) BGRA
    light_refs: np.ndarray | None = None                                             # MOLR
    doodad_refs: np.ndarray | None = None                                            # MODR
    liquid: WmoLiquid | None = None
    chunks: list = field(default_factory=list)     # [(tag, raw or None)], file order inside MOGP
    outer: list = field(default_factory=list)      # chunks after MOGP in the file, kept raw
    version: int = VERSION
    path: str | None = None

    @property
    def flags(self) -> int:
        return int(self.header["flags"])

    @property
    def vertex_colours(self) -> np.ndarray | None:
        """(n, 4) BGRA vertex colours (flag 0x4's MOCV), or None."""
        if self.flags & GroupFlags.VERTEX_COLOURS and self.colours:
            return self.colours[0]
        if not self.flags & (GroupFlags.VERTEX_COLOURS | GroupFlags.MOCV2) and self.colours:
            return self.colours[0]            # a MOCV the flags do not announce: take it as colours
        return None

    @property
    def blend_alpha(self) -> np.ndarray | None:
        """(n,) u1 second-texture blend weights (flag 0x1000000's MOCV), or None."""
        if not self.flags & GroupFlags.MOCV2:
            return None
        k = 1 if self.flags & GroupFlags.VERTEX_COLOURS else 0
        return self.colours[k][:, 3] if len(self.colours) > k else None

    def batch_materials(self) -> np.ndarray:
        """(n,) MOMT index of each batch: the u8 material, or where the batch's flag 0x2 says so
        (Legion's large material ids) the u16 kept in its box's third value."""
        b = self.batches
        large = (b["flags"] & BATCH_MATERIAL_LARGE) != 0
        return np.where(large, b["bbox"][:, 0, 2].view(np.uint16), b["material"]).astype(np.int64)

    @property
    def is_exterior(self) -> bool:
        return bool(self.flags & GroupFlags.EXTERIOR) and not self.flags & GroupFlags.INTERIOR

    @property
    def triangle_count(self) -> int:
        return len(self.indices) // 3

    @property
    def rendered_triangle_count(self) -> int:
        """Triangles the batches draw (what an export writes)."""
        return int(sum(int(b["count"]) for b in self.batches)) // 3

    @property
    def collision_triangle_count(self) -> int:
        """Collision-only triangles (MOPY material 0xFF: in no batch, never drawn)."""
        return int(np.count_nonzero(self.triangles["material"] == NO_MATERIAL))

    @classmethod
    def from_bytes(cls, data, path: str | None = None, *, n_materials: int | None = None) -> "WmoGroup":
        buf = bytes(data)
        top = list(iter_chunks(buf, path))
        mver = next((c for c in top if c.tag == b"MVER"), None)
        if mver is None:
            raise FormatError("no MVER chunk: not a WMO file", path=path, offset=0)
        if mver.size < 4:
            raise TruncatedError("MVER: expected 4 bytes", path=path, offset=mver.offset)
        (version,) = struct.unpack_from("<I", buf, mver.data_offset)
        if version != VERSION:
            raise UnsupportedError(f"WMO version {version}; wowgrass reads version {VERSION}", path=path,
                                   offset=mver.data_offset)
        mogp = next((c for c in top if c.tag == b"MOGP"), None)
        if mogp is None:
            if any(c.tag == b"MOHD" for c in top):
                raise FormatError("this is a WMO root file (MOHD), not a group", path=path, offset=0)
            raise FormatError("WMO group has no MOGP chunk", path=path, offset=len(buf))
        if mogp.size < MOGP_DTYPE.itemsize:
            raise TruncatedError(f"MOGP: header needs {MOGP_DTYPE.itemsize} bytes, chunk has {mogp.size}",
                                 path=path, offset=mogp.offset)
        header = np.frombuffer(buf, MOGP_DTYPE, 1, mogp.data_offset)[0].copy()
        if not np.isfinite(header["bbox"]).all():
            raise FormatError("MOGP: bounding box is not finite", path=path, offset=mogp.data_offset + 12)
        sub = {}
        chunks = []
        repeated = {b"MOTV": [], b"MOCV": []}
        for ch in iter_chunks(buf, path, start=mogp.data_offset + MOGP_DTYPE.itemsize, end=mogp.end):
            if ch.tag in repeated:
                repeated[ch.tag].append(ch)
                chunks.append((ch.tag, None))
            elif ch.tag in GROUP_MODELLED and ch.tag not in sub:
                sub[ch.tag] = ch
                chunks.append((ch.tag, None))
            else:
                chunks.append((ch.tag, bytes(ch.payload)))
        outer = [(c.tag, bytes(c.payload)) for c in top if c.tag not in (b"MVER", b"MOGP")]

        def arr(tag, dtype, per, what):
            ch = sub.get(tag)
            if ch is None:
                return None
            item = np.dtype(dtype).itemsize * per
            if ch.size % item:
                raise FormatError(f"{tag.decode()}: {ch.size} bytes is not a whole number of {item}-byte {what}",
                                  path=path, offset=ch.offset)
            a = np.frombuffer(buf, dtype, ch.size // np.dtype(dtype).itemsize, ch.data_offset).copy()
            return a.reshape(-1, per) if per > 1 else a

        vertices = arr(b"MOVT", "<f4", 3, "vertices")
        vertices = np.zeros((0, 3), "<f4") if vertices is None else vertices
        nv = len(vertices)
        if nv:
            _finite(vertices, "MOVT vertex", path, sub[b"MOVT"].data_offset, 12)
        indices = arr(b"MOVI", "<u2", 1, "indices")
        indices = np.zeros(0, "<u2") if indices is None else indices
        if len(indices) % 3:
            raise FormatError(f"MOVI: {len(indices)} indices is not a whole number of triangles", path=path,
                              offset=sub[b"MOVI"].offset)
        if len(indices) and int(indices.max()) >= nv:
            j = int(np.flatnonzero(indices >= nv)[0])
            raise FormatError(f"MOVI: index {j} names vertex {int(indices[j])}, MOVT has {nv}", path=path,
                              offset=sub[b"MOVI"].data_offset + 2 * j)
        ch = sub.get(b"MOPY")
        triangles = np.zeros(0, MOPY_DTYPE) if ch is None else _records(ch.payload, MOPY_DTYPE, "MOPY", path, ch.offset)
        if ch is not None and len(triangles) != len(indices) // 3:
            raise FormatError(f"MOPY: {len(triangles)} triangles, MOVI has {len(indices) // 3}", path=path,
                              offset=ch.offset)
        if ch is None:
            triangles = np.zeros(len(indices) // 3, MOPY_DTYPE)
            triangles["flags"] = 0x20
        normals = arr(b"MONR", "<f4", 3, "normals")
        if normals is not None:
            if len(normals) != nv:
                raise FormatError(f"MONR: {len(normals)} normals, MOVT has {nv} vertices", path=path,
                                  offset=sub[b"MONR"].offset)
            normals = np.where(np.isfinite(normals), normals, 0).astype("<f4")
        uvs = []
        for c in repeated[b"MOTV"]:
            if c.size != 8 * nv:
                raise FormatError(f"MOTV: {c.size} bytes for {nv} vertices (needs {8 * nv})", path=path,
                                  offset=c.offset)
            uv = np.frombuffer(buf, "<f4", 2 * nv, c.data_offset).reshape(nv, 2)
            uvs.append(np.where(np.isfinite(uv), uv, 0).astype("<f4"))
        colours = []
        for c in repeated[b"MOCV"]:
            if c.size != 4 * nv:
                raise FormatError(f"MOCV: {c.size} bytes for {nv} vertices (needs {4 * nv})", path=path,
                                  offset=c.offset)
            colours.append(np.frombuffer(buf, np.uint8, 4 * nv, c.data_offset).reshape(nv, 4).copy())
        ch = sub.get(b"MOBA")
        batches = np.zeros(0, MOBA_DTYPE) if ch is None else _records(ch.payload, MOBA_DTYPE, "MOBA", path, ch.offset)
        end = batches["start_index"].astype(np.int64) + batches["count"]
        bad = (end > len(indices)) | (batches["count"] % 3 != 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise FormatError(f"MOBA batch {i}: indices {int(batches['start_index'][i])}+{int(batches['count'][i])}"
                              f" do not fit MOVI's {len(indices)} (whole triangles)", path=path,
                              offset=ch.data_offset + 24 * i + 12)
        if n_materials is not None and len(batches):
            large = (batches["flags"] & BATCH_MATERIAL_LARGE) != 0
            mats = np.where(large, batches["bbox"][:, 0, 2].view(np.uint16), batches["material"]).astype(np.int64)
            bad = (mats >= n_materials) & (mats != NO_MATERIAL)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise FormatError(f"MOBA batch {i}: material {int(mats[i])}, the root has "
                                  f"{n_materials}", path=path, offset=ch.data_offset + 24 * i + 23)
        liquid = None
        if b"MLIQ" in sub:
            c = sub[b"MLIQ"]
            liquid = WmoLiquid.from_bytes(c.payload, path, c.data_offset)
        g = cls(header=header, triangles=triangles, indices=indices, vertices=vertices, normals=normals, uvs=uvs,
                batches=batches, colours=colours, light_refs=arr(b"MOLR", "<u2", 1, "light references"),
                doodad_refs=arr(b"MODR", "<u2", 1, "doodad references"), liquid=liquid, chunks=chunks,
                outer=outer, version=version, path=path)
        return g

    def info(self) -> dict:
        h = self.header
        b = self.batches
        return {
            "flags": self.flags,
            "exterior": bool(self.flags & GroupFlags.EXTERIOR), "interior": bool(self.flags & GroupFlags.INTERIOR),
            "vertices": len(self.vertices), "indices": len(self.indices), "triangles": self.triangle_count,
            "rendered_triangles": self.rendered_triangle_count, "collision_triangles": self.collision_triangle_count,
            "batches": len(b), "batch_split": {"trans": int(h["trans_batches"]), "int": int(h["int_batches"]),
                                               "ext": int(h["ext_batches"])},
            "materials": sorted({int(m) for m in self.batch_materials()}),
            "uv_sets": len(self.uvs), "colour_sets": len(self.colours),
            "vertex_colours": self.vertex_colours is not None,
            "liquid": None if self.liquid is None else {
                "tiles": [self.liquid.x_tiles, self.liquid.y_tiles], "material": self.liquid.material,
                "group_liquid": int(h["group_liquid"])},
            "doodad_refs": 0 if self.doodad_refs is None else len(self.doodad_refs),
            "bbox": {"min": [float(v) for v in h["bbox"][0]], "max": [float(v) for v in h["bbox"][1]]},
            "chunks": [t.decode("latin-1") for t, _ in self.chunks],
        }


def write_wmo_group(g: WmoGroup) -> bytes:
    """Serialize a group: MVER + MOGP(header + sub-chunks), the file's sub-chunk order when it was read."""
    modelled = {
        b"MOPY": np.ascontiguousarray(g.triangles, MOPY_DTYPE).tobytes(),
        b"MOVI": np.ascontiguousarray(g.indices, "<u2").tobytes(),
        b"MOVT": np.ascontiguousarray(g.vertices, "<f4").tobytes(),
        b"MONR": None if g.normals is None else np.ascontiguousarray(g.normals, "<f4").tobytes(),
        b"MOBA": np.ascontiguousarray(g.batches, MOBA_DTYPE).tobytes(),
        b"MOLR": None if g.light_refs is None else np.ascontiguousarray(g.light_refs, "<u2").tobytes(),
        b"MODR": None if g.doodad_refs is None else np.ascontiguousarray(g.doodad_refs, "<u2").tobytes(),
        b"MLIQ": None if g.liquid is None else write_wmo_liquid(g.liquid),
    }
    uvs = [np.ascontiguousarray(u, "<f4").tobytes() for u in g.uvs]
    cvs = [np.ascontiguousarray(c, np.uint8).tobytes() for c in g.colours]
    if g.chunks:
        order = list(g.chunks)
        # sets added since reading go after the last one of their kind
        for tag, items in ((b"MOTV", uvs), (b"MOCV", cvs)):
            have = sum(1 for t, r in order if t == tag and r is None)
            for _ in range(len(items) - have):
                order.append((tag, None))
    else:
        order = []
        for tag in GROUP_ORDER:
            if tag == b"MOTV":
                order += [(tag, None)] * (1 if uvs else 0)
            elif tag == b"MOCV":
                order += [(tag, None)] * (1 if (g.flags & GroupFlags.VERTEX_COLOURS and cvs) else 0)
            elif modelled.get(tag) is not None:
                order.append((tag, None))
        order += [(b"MOTV", None)] * max(0, len(uvs) - 1)
        order += [(b"MOCV", None)] * (len(cvs) - sum(1 for t, _ in order if t == b"MOCV"))
    parts, k_uv, k_cv = [], 0, 0
    for tag, raw in order:
        if raw is not None:
            parts.append(write_chunk(tag, raw))
        elif tag == b"MOTV":
            if k_uv < len(uvs):
                parts.append(write_chunk(tag, uvs[k_uv]))
            k_uv += 1
        elif tag == b"MOCV":
            if k_cv < len(cvs):
                parts.append(write_chunk(tag, cvs[k_cv]))
            k_cv += 1
        elif modelled.get(tag) is not None:
            parts.append(write_chunk(tag, modelled[tag]))
    body = np.array(g.header, MOGP_DTYPE).tobytes() + b"".join(parts)
    outer = b"".join(write_chunk(t, r) for t, r in g.outer)
    return write_chunk(b"MVER", struct.pack("<I", g.version)) + write_chunk(b"MOGP", body) + outer


# ----------------------------------------------------------------------------------- building
def group_file_name(root_path: str, index: int) -> str:
    """``World\\wmo\\X\\Inn.wmo``, 3 → ``World\\wmo\\X\\Inn_003.wmo``."""
    p = str(root_path)
    stem = p[:-4] if p.lower().endswith(".wmo") else p
    return f"{stem}_{index:03d}.wmo"


@dataclass(eq=False)
class Wmo:
    """A root and whichever of its groups could be read; ``missing`` names the rest."""

    root: WmoRoot
    groups: list                    # WmoGroup | None per MOGI entry
    missing: list = field(default_factory=list)      # group file names not found
    errors: dict = field(default_factory=dict)       # group file name -> reason it could not be read
    path: str | None = None

    @property
    def present(self) -> list[int]:
        return [i for i, g in enumerate(self.groups) if g is not None]

    def group_name(self, i: int) -> str | None:
        """A group's name: its own MOGP's, else MOGI's (the two disagree in some files)."""
        g = self.groups[i] if 0 <= i < len(self.groups) else None
        if g is not None:
            name = self.root.group_names.at(int(g.header["name_offset"]))
            if name:
                return name
        return self.root.group_name(i) if i < len(self.root.groups) else None

    def info(self) -> dict:
        out = self.root.info()
        verts = sum(len(g.vertices) for g in self.groups if g is not None)
        tris = sum(g.triangle_count for g in self.groups if g is not None)
        out.update({
            "file": self.path,
            "groups": len(self.groups),
            "groups_present": self.present,
            "groups_missing": self.missing,
            "group_errors": self.errors,
            "vertices": verts, "triangles": tris,
            "rendered_triangles": sum(g.rendered_triangle_count for g in self.groups if g is not None),
            "collision_triangles": sum(g.collision_triangle_count for g in self.groups if g is not None),
            "batches": sum(len(g.batches) for g in self.groups if g is not None),
            "group_info": [None if g is None else {"index": i, "name": self.group_name(i), **g.info()}
                           for i, g in enumerate(self.groups)],
        })
        return out


def load_wmo(path: str, read: Callable[[str], bytes]) -> Wmo:
    """Read a root with ``read(path)`` and each of its groups; groups ``read`` cannot find are
    listed in ``missing``, groups that do not parse in ``errors`` (the rest still load)."""
    root = WmoRoot.from_bytes(read(path), path)
    groups, missing, errors = [], [], {}
    for i in range(root.n_groups):
        name = group_file_name(path, i)
        try:
            data = read(name)
        except (GameFileNotFound, FileNotFoundError):
            groups.append(None)
            missing.append(name)
            continue
        try:
            groups.append(WmoGroup.from_bytes(data, name, n_materials=len(root.materials) or None))
        except FormatError as exc:
            groups.append(None)
            errors[name] = str(exc)
    return Wmo(root, groups, missing, errors, path)


def fixed_vertex_colours(root: WmoRoot, group: WmoGroup) -> np.ndarray | None:
    """(n, 4) RGBA u1 vertex colours as the 3.3.5 client keeps them after its load-time fix
    (CMapObjGroup::FixColorVertexAlpha); its shader doubles them, so 128 is "unchanged".

    The vertices of the transparent batches (up to the last one's maxIndex) lose the MOHD ambient
    and are darkened by their own alpha; the rest lose the ambient and gain ``colour * alpha / 64``;
    both are halved. MOHD flag 0x8 leaves the colours as stored (twice as bright: "lighten
    interiors"); flag 0x2 subtracts no ambient. The alpha of the non-transparent vertices becomes
    255 in exterior groups and 0 in interior ones.
    """
    bgra = group.vertex_colours
    if bgra is None:
        return None
    c = bgra[:, [2, 1, 0]].astype(np.float64)
    a = bgra[:, 3:4].astype(np.float64)
    n = len(c)
    first_int = 0
    trans = int(group.header["trans_batches"])
    if 0 < trans <= len(group.batches):
        first_int = min(n, int(group.batches["max_index"][trans - 1]) + 1)
    flags = int(root.header["flags"])
    alpha = a.copy()
    alpha[first_int:] = 255.0 if group.is_exterior else 0.0
    if flags & MohdFlags.LIGHTEN_INTERIORS:
        rgb = c
    else:
        amb = np.zeros(3) if flags & MohdFlags.SKIP_BASE_COLOUR else \
            np.asarray(root.header["ambient"][[2, 1, 0]], np.float64)
        rgb = np.empty_like(c)
        t = np.clip(c[:first_int] - amb, 0, 255)
        rgb[:first_int] = (t - t * a[:first_int] / 255.0) / 2
        rest = c[first_int:]
        rgb[first_int:] = (rest * a[first_int:] / 64.0 + rest - amb) / 2
    return np.concatenate([np.clip(rgb, 0, 255), alpha], axis=1).astype(np.uint8)


def group_liquid_type(root: WmoRoot, group: WmoGroup) -> int:
    """The LiquidType id of a group's MLIQ (wowdev.wiki WMO, "how to determine LiquidTypeRec"):
    with MOHD flag 0x4 groupLiquid is the id (the basic ones below 21 mapped to their WMO rows);
    without it the old local numbering, where 15 means "from the tiles" (green lava files)."""
    gl = int(group.header["group_liquid"])
    ocean = bool(group.flags & GroupFlags.OCEAN)

    def wmo_row(basic: int) -> int:
        b = basic & 3
        return {0: 14 if ocean else 13, 1: 14, 2: 19, 3: 20}[b]

    if root.header["flags"] & MohdFlags.USE_LIQUID_TYPE_ID:
        return wmo_row(gl - 1) if gl < 21 else gl
    if gl == 15 and group.liquid is not None:
        ex = group.liquid.exists
        t = group.liquid.tiles[ex]
        return wmo_row(int(t[-1]) & 7) if len(t) else wmo_row(0)
    return wmo_row(gl) if gl < 20 else gl + 1


def make_group(vertices, triangles, materials, *, normals=None, uvs=None, colours=None, flags=GroupFlags.EXTERIOR,
               name_offset: int = 0, group_liquid: int = 0, liquid: WmoLiquid | None = None,
               doodad_refs=None) -> WmoGroup:
    """A group from plain arrays: triangles (m, 3) with one material each are sorted into one batch
    per material (all exterior batches), and MOPY, MOBA and the bounding boxes computed."""
    v = np.ascontiguousarray(vertices, "<f4").reshape(-1, 3)
    tri = np.asarray(triangles, np.int64).reshape(-1, 3)
    mat = np.broadcast_to(np.asarray(materials, np.int64), (len(tri),))
    order = np.argsort(mat, kind="stable")
    tri, mat = tri[order], mat[order]
    if len(v) > 65536 or (len(tri) and tri.max() >= len(v)):
        raise ValueError("a WMO group holds at most 65536 vertices, and its triangles must name them")
    mats, starts, counts = np.unique(mat, return_index=True, return_counts=True)
    batches = np.zeros(len(mats), MOBA_DTYPE)
    for k, (m, s, c) in enumerate(zip(mats.tolist(), starts.tolist(), counts.tolist())):
        used = tri[s:s + c].ravel()
        pts = v[used]
        batches[k]["bbox"][0] = np.floor(pts.min(axis=0))
        batches[k]["bbox"][1] = np.ceil(pts.max(axis=0))
        batches[k]["start_index"] = 3 * s
        batches[k]["count"] = 3 * c
        batches[k]["min_index"], batches[k]["max_index"] = int(used.min()), int(used.max())
        batches[k]["material"] = m
    mopy = np.zeros(len(tri), MOPY_DTYPE)
    mopy["flags"] = 0x20       # F_RENDER
    mopy["material"] = mat
    h = np.zeros((), MOGP_DTYPE)
    h["name_offset"] = name_offset
    f = flags
    if colours is not None:
        f |= GroupFlags.VERTEX_COLOURS
    if liquid is not None:
        f |= GroupFlags.LIQUID
    if doodad_refs is not None and len(doodad_refs):
        f |= GroupFlags.DOODADS
    h["flags"] = f
    if len(v):
        h["bbox"][0], h["bbox"][1] = v.min(axis=0), v.max(axis=0)
    h["ext_batches"] = len(batches)
    h["fogs"] = 0
    h["group_liquid"] = group_liquid
    return WmoGroup(header=h, triangles=mopy, indices=tri.astype("<u2").ravel(), vertices=v,
                    normals=None if normals is None else np.ascontiguousarray(normals, "<f4").reshape(-1, 3),
                    uvs=[] if uvs is None else [np.ascontiguousarray(uvs, "<f4").reshape(-1, 2)],
                    batches=batches, colours=[] if colours is None else [np.ascontiguousarray(colours, np.uint8)],
                    doodad_refs=None if doodad_refs is None else np.asarray(doodad_refs, "<u2"), liquid=liquid)


def make_root(groups: list[WmoGroup], materials: list[dict], *, group_names=None, doodads=None,
              doodad_sets=None, ambient=(40, 40, 40, 255), flags: int = 0, wmo_id: int = 0) -> WmoRoot:
    """A root for ``groups``: ``materials`` are dicts (texture1 path, and optionally blend, flags,
    shader, texture2); ``doodads`` (path, position, rotation xyzw, scale, colour BGRA) and
    ``doodad_sets`` [(name, start, count)] default to one global set of all doodads."""
    textures = []
    for m in materials:
        for key in ("texture1", "texture2"):
            if m.get(key) and m[key] not in textures:
                textures.append(m[key])
    motx, tex_ofs = WmoStringBlock.build(textures)
    momt = np.zeros(len(materials), MOMT_DTYPE)
    for i, m in enumerate(materials):
        momt[i]["flags"] = m.get("flags", 0)
        momt[i]["shader"] = m.get("shader", 0)
        momt[i]["blend"] = m.get("blend", BLEND_OPAQUE)
        momt[i]["texture1"] = tex_ofs[textures.index(m["texture1"])]
        if m.get("texture2"):
            momt[i]["texture2"] = tex_ofs[textures.index(m["texture2"])]
        momt[i]["diffuse"] = m.get("diffuse", (127, 127, 127, 255))
    names = list(group_names or [f"group {i}" for i in range(len(groups))])
    mogn, gofs = WmoStringBlock.build([""] + names, align=1)
    mogi = np.zeros(len(groups), MOGI_DTYPE)
    for i, g in enumerate(groups):
        g.header["name_offset"] = gofs[i + 1]
        mogi[i]["flags"] = g.flags
        mogi[i]["bbox"] = g.header["bbox"]
        mogi[i]["name_offset"] = gofs[i + 1]
    doodads = list(doodads or [])
    model_names = []
    for d in doodads:
        if d[0] not in model_names:
            model_names.append(d[0])
    modn, mofs = WmoStringBlock.build(model_names)
    modd = np.zeros(len(doodads), MODD_DTYPE)
    for i, (p, pos, rot, scale, colour) in enumerate(doodads):
        modd[i] = (mofs[model_names.index(p)], pos, rot, scale, colour)
    sets = doodad_sets if doodad_sets is not None else [("Set_$DefaultGlobal", 0, len(doodads))]
    mods = np.zeros(len(sets), MODS_DTYPE)
    for i, (n, s, c) in enumerate(sets):
        mods[i] = (n.encode("utf-8")[:19], s, c, 0)
    h = np.zeros((), MOHD_DTYPE)
    h["ambient"] = ambient
    h["wmo_id"] = wmo_id
    h["flags"] = flags
    allv = [g.vertices for g in groups if len(g.vertices)]
    if allv:
        v = np.concatenate(allv)
        h["bbox"][0], h["bbox"][1] = v.min(axis=0), v.max(axis=0)
    fog = np.zeros(1, MFOG_DTYPE)
    fog["end"], fog["start_scalar"], fog["uw_end"], fog["uw_start_scalar"] = 444.4445, 0.25, 222.2222, -0.5
    fog["colour"] = (255, 255, 255, 255)
    h["n_textures"], h["n_groups"], h["n_doodad_names"] = len(textures), len(groups), len(model_names)
    h["n_doodad_defs"], h["n_doodad_sets"] = len(doodads), len(sets)
    return WmoRoot(header=h, textures=motx, materials=momt, group_names=mogn, groups=mogi, doodad_sets=mods,
                   doodad_names=modn, doodads=modd, fogs=fog)


def doodad_matrices(root: WmoRoot, indices=None) -> np.ndarray:
    """(n, 4, 4) float64 placements of MODD records in the WMO's space (translate · quaternion · scale)."""
    d = root.doodads if indices is None else root.doodads[np.asarray(indices, np.int64)]
    q = d["rotation"].astype(np.float64)
    norm = np.linalg.norm(q, axis=1, keepdims=True)
    q = np.where(norm > 1e-9, q / np.maximum(norm, 1e-12), [0, 0, 0, 1])
    x, y, z, w = q.T
    r = np.empty((len(d), 3, 3))
    r[:, 0, 0], r[:, 0, 1], r[:, 0, 2] = 1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)
    r[:, 1, 0], r[:, 1, 1], r[:, 1, 2] = 2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)
    r[:, 2, 0], r[:, 2, 1], r[:, 2, 2] = 2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)
    m = np.zeros((len(d), 4, 4))
    m[:, :3, :3] = r * d["scale"].astype(np.float64)[:, None, None]
    m[:, :3, 3] = d["position"]
    m[:, 3, 3] = 1
    return m


def sniff_root(prefix: bytes) -> bool:
    return len(prefix) >= 16 and prefix[:4] == disk_tag(b"MVER") and prefix[12:16] == disk_tag(b"MOHD")


def sniff_group(prefix: bytes) -> bool:
    return len(prefix) >= 16 and prefix[:4] == disk_tag(b"MVER") and prefix[12:16] == disk_tag(b"MOGP")


__all__ = ["WmoRoot", "WmoGroup", "WmoLiquid", "Wmo", "load_wmo", "write_wmo_root", "write_wmo_group",
           "write_wmo_liquid", "make_group", "make_root", "group_file_name", "model_path", "fixed_vertex_colours", "group_liquid_type",
           "doodad_matrices", "WmoStringBlock", "HEADER_SIZE"]
