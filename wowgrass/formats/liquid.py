"""Liquids of ADT tiles: MCLQ (per MCNK, 1.12 / 2.4.3) and MH2O (per tile, 3.3.5).

Both are decoded into one representation, :class:`TileLiquid`: a structured array of layers
(:data:`LAYER_DTYPE`), each the liquid surface of one chunk on its 9×9 vertex grid with an 8×8
mask of the cells that hold liquid. Grid order is the terrain's: row r steps south (−X), column
c steps east (−Y), from the chunk's north-west corner (``AdtTile.positions``).

**MCLQ** (inside MCNK, found through the header's ofsLiquid; the chunk header declares size 0 and
MCNK's sizeLiquid holds 8 + the payload). The payload is one 804-byte record per liquid the MCNK
flags name (0x4 river, 0x8 ocean, 0x10 magma, 0x20 slime, in that order): min and max height,
9×9 vertices of 8 bytes (water and ocean: depth, two flow bytes, a filler byte; magma and slime:
two u16 texture coordinates; then the absolute height as a float), 8×8 tile bytes (low three bits
a liquid type, 0x08 = no liquid there, 0x40, 0x80 = fatigue), a flow count and two 40-byte flow
records. The layout is the same in 1.12 and 2.4.3. When no flag is set but the payload holds
records, each record's kind comes from its tile bytes (1 ocean, 3 slime, 4 river, 6 magma), as
noggit3 reads such files.

**MH2O** (3.x): 256 headers of 12 bytes (offset of the chunk's instances, instance count, offset
of its 16-byte attributes: fishable and deep 8×8 bit masks), then 24-byte instances (LiquidType
id, liquid vertex format, min and max height, the covered rectangle x/y/width/height in cells,
the offsets of an exists bitmap and of vertex data), all offsets relative to the chunk's data.
Vertex formats (LVF) over the (width+1)×(height+1) vertices of the rectangle: 0 heights + depth,
1 heights + u16 texture coordinates, 2 depth only (ocean), 3 heights + texture coordinates +
depth. A zero bitmap offset means every cell of the rectangle exists; a zero vertex offset (or
format 2) means the surface is flat at the minimum height. A format wowgrass does not know (the
field became an id into LiquidObject after 3.x) keeps the layer, flat at its minimum height, and
is flagged in ``layer["flags"]``.

Sources: wowdev.wiki ADT/v18 (MCLQ, MH2O); noggit3 ``MapHeaders.h``, ``ChunkWater.cpp``,
``liquid_layer.cpp``; TrinityCore's map extractor. Read, not copied.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

from wowgrass.errors import FormatError, TruncatedError

# basic liquid kinds (LiquidType's "type" column in every build)
WATER, OCEAN, MAGMA, SLIME = 0, 1, 2, 3
KIND_NAMES = ("water", "ocean", "magma", "slime")
UNKNOWN_KIND = 255
#: MCNK flag of each kind, in the order MCLQ records follow them
MCNK_LIQUID_FLAGS = (0x4, 0x8, 0x10, 0x20)
MCNK_LIQUID_MASK = 0x3C
#: LiquidType ids of the basic liquids (rows 1-4 of LiquidType.dbc in 1.12, 2.4.3 and 3.3.5)
BASIC_TYPE_IDS = (1, 2, 3, 4)
#: MCLQ tile bytes: the low three bits name a liquid (noggit3's reading), 0x08 = no liquid here
_MCLQ_TILE_KIND = {1: OCEAN, 3: SLIME, 4: WATER, 6: MAGMA}
MCLQ_TILE_NONE = 0x08
MCLQ_TILE_FATIGUE = 0x80

# MH2O liquid vertex formats
LVF_HEIGHT_DEPTH, LVF_HEIGHT_UV, LVF_DEPTH, LVF_HEIGHT_UV_DEPTH = 0, 1, 2, 3
LVF_NAMES = {0: "height+depth", 1: "height+uv", 2: "depth", 3: "height+uv+depth"}
_LVF_PARTS = {0: (True, False, True), 1: (True, True, False), 2: (False, False, True), 3: (True, True, True)}

SOURCE_NONE, SOURCE_MCLQ, SOURCE_MH2O = 0, 1, 2
SOURCE_NAMES = {SOURCE_NONE: None, SOURCE_MCLQ: "MCLQ", SOURCE_MH2O: "MH2O"}

# layer["flags"]
HAS_EXISTS_BITMAP = 0x1      # MH2O: an exists bitmap was (is to be) written
HAS_VERTEX_DATA = 0x2        # MH2O: vertex data was (is to be) written
FORMAT_UNKNOWN = 0x4         # MH2O: a vertex format wowgrass cannot decode (surface left flat)

LAYER_DTYPE = np.dtype([
    ("chunk", "<u2"),                 # MCNK index (IndexY*16 + IndexX)
    ("source", "u1"),                 # SOURCE_MCLQ | SOURCE_MH2O
    ("kind", "u1"),                   # WATER..SLIME (UNKNOWN_KIND when neither data nor table says)
    ("type", "<u2"),                  # LiquidType id
    ("format", "<u2"),                # MH2O vertex format; MCLQ: 0 (water, ocean) or 1 (magma, slime)
    ("flags", "u1"),
    ("rect", "u1", 4),                # x (column), y (row), width, height in cells (MCLQ: 0, 0, 8, 8)
    ("min_height", "<f4"),
    ("max_height", "<f4"),
    ("heights", "<f4", (9, 9)),       # absolute; vertices outside the rectangle hold min_height
    ("depth", "u1", (9, 9)),
    ("uv", "<u2", (9, 9, 2)),
    ("exists", "?", (8, 8)),
    ("exists_bits", "<u8"),           # MH2O: the bitmap as stored (bits past width*height included)
    ("tiles", "u1", (8, 8)),          # MCLQ: the tile bytes as stored
    ("flow", "u1", (9, 9, 3)),        # MCLQ water vertices: flow0, flow1, filler bytes
    ("flow_count", "<u4"),            # MCLQ: nFlowvs and the two 40-byte flow records
    ("flows", "u1", 80),
])

MCLQ_RECORD_SIZE = 8 + 81 * 8 + 64 + 4 + 80
assert MCLQ_RECORD_SIZE == 804
MH2O_HEADER_DTYPE = np.dtype([("offset_instances", "<u4"), ("layer_count", "<u4"), ("offset_attributes", "<u4")])
MH2O_INSTANCE_DTYPE = np.dtype([("type", "<u2"), ("format", "<u2"), ("min_height", "<f4"), ("max_height", "<f4"),
                                ("x", "u1"), ("y", "u1"), ("width", "u1"), ("height", "u1"),
                                ("offset_exists", "<u4"), ("offset_vertices", "<u4")])
assert MH2O_HEADER_DTYPE.itemsize == 12 and MH2O_INSTANCE_DTYPE.itemsize == 24
MH2O_HEADERS_SIZE = 256 * 12
MH2O_ATTRIBUTES_SIZE = 16


def default_kind(type_id, fmt=None) -> np.ndarray:
    """The kind of a LiquidType id without its table: the basic rows repeat water, ocean, magma,
    slime (1-12: plain, slow, fast; 13/14 WMO water and ocean; 15 green lava; 17 WMO magma; 19, 20
    slime; 21 Coilfang water); other ids take the kind their vertex format implies (uv: magma,
    depth only: ocean) or water."""
    t = np.asarray(type_id, np.int64)
    out = np.where((t >= 1) & (t <= 12), (t - 1) % 4, UNKNOWN_KIND)
    for ids, kind in (((13, 21), WATER), ((14,), OCEAN), ((15, 17), MAGMA), ((19, 20), SLIME)):
        out = np.where(np.isin(t, ids), kind, out)
    if fmt is not None:
        f = np.asarray(fmt, np.int64)
        guess = np.where(f == LVF_HEIGHT_UV, MAGMA, np.where(f == LVF_DEPTH, OCEAN, WATER))
        out = np.where(out == UNKNOWN_KIND, guess, out)
    return out.astype(np.uint8)


def bit_mask_8x8(value) -> np.ndarray:
    """A u64 8×8 bit mask (bit r*8+c, LSB first) → (…, 8, 8) bool."""
    v = np.asarray(value, "<u8")
    bits = np.unpackbits(v[..., None].view(np.uint8), axis=-1, bitorder="little")
    return bits.reshape(v.shape + (8, 8)).astype(bool)


def pack_8x8(mask) -> np.ndarray:
    """(…, 8, 8) bool → u64 (bit r*8+c)."""
    m = np.asarray(mask, bool)
    packed = np.packbits(m.reshape(m.shape[:-2] + (64,)), axis=-1, bitorder="little")
    return np.ascontiguousarray(packed).view("<u8")[..., 0]


@dataclass(eq=False)
class TileLiquid:
    """Every liquid layer of one tile (any number per chunk), plus MH2O's per-chunk attributes."""

    layers: np.ndarray = field(default_factory=lambda: np.zeros(0, LAYER_DTYPE))
    source: int = SOURCE_NONE
    fishable: np.ndarray = field(default_factory=lambda: np.zeros(256, "<u8"))   # MH2O attributes
    deep: np.ndarray = field(default_factory=lambda: np.zeros(256, "<u8"))
    has_attributes: np.ndarray = field(default_factory=lambda: np.zeros(256, bool))
    notes: list = field(default_factory=list)    # tolerances met while reading (offsets past the chunk)

    def chunks(self) -> np.ndarray:
        """Sorted MCNK indices that hold at least one layer with liquid cells."""
        used = self.layers["exists"].reshape(len(self.layers), 64).any(axis=1)
        return np.unique(self.layers["chunk"][used]).astype(np.int64)

    def cells(self) -> np.ndarray:
        """(256, 8, 8) bool: cells with liquid in any layer."""
        out = np.zeros((256, 8, 8), bool)
        np.logical_or.at(out, self.layers["chunk"].astype(np.int64), self.layers["exists"])
        return out

    def summary(self, type_names: dict | None = None) -> dict:
        """Chunks with liquid, layers, types and the height range (``adt info``)."""
        lay = self.layers
        used = lay["exists"].reshape(len(lay), 64).any(axis=1)
        types: dict = {}
        for t, k in zip(lay["type"][used].tolist(), lay["kind"][used].tolist()):
            key = int(t)
            if key not in types:
                name = (type_names or {}).get(key)
                types[key] = {"id": key, "kind": KIND_NAMES[k] if k < 4 else "unknown",
                              "name": name, "layers": 0}
            types[key]["layers"] += 1
        lo = hi = None
        if used.any():
            hv = heights_in_use(lay[used])
            lo, hi = float(np.nanmin(hv)), float(np.nanmax(hv))
        formats = {}
        if self.source == SOURCE_MH2O:
            for f in lay["format"].tolist():
                name = LVF_NAMES.get(f, f"unknown {f}")
                formats[name] = formats.get(name, 0) + 1
        layers_per_chunk = np.bincount(lay["chunk"][used].astype(np.int64), minlength=256)
        return {
            "format": SOURCE_NAMES[self.source],
            "chunks": int((layers_per_chunk > 0).sum()),
            "layers": int(used.sum()),
            "empty_layers": int((~used).sum()),
            "max_layers_per_chunk": int(layers_per_chunk.max()) if len(lay) else 0,
            "cells": int(self.cells().sum()),
            "types": sorted(types.values(), key=lambda d: d["id"]),
            "height": {"min": lo, "max": hi},
            "vertex_formats": formats,
            "notes": list(self.notes),
        }


def heights_in_use(layers: np.ndarray) -> np.ndarray:
    """(n, 9, 9) heights with NaN at vertices no liquid cell touches (and non-finite values)."""
    ex = layers["exists"]
    touched = np.zeros((len(layers), 9, 9), bool)
    for dr in (0, 1):
        for dc in (0, 1):
            touched[:, dr:dr + 8, dc:dc + 8] |= ex
    h = layers["heights"].astype(np.float64)
    return np.where(touched & np.isfinite(h), h, np.nan)


def new_layers(n: int) -> np.ndarray:
    out = np.zeros(n, LAYER_DTYPE)
    out["rect"] = (0, 0, 8, 8)
    return out


# ----------------------------------------------------------------------------------------- MCLQ
def _mclq_records(payload, n: int) -> dict:
    """Column views of ``n`` MCLQ records (already bounds-checked)."""
    raw = np.frombuffer(bytes(payload[:n * MCLQ_RECORD_SIZE]), np.uint8).reshape(n, MCLQ_RECORD_SIZE)
    verts = raw[:, 8:8 + 648].reshape(n, 81, 8)
    return {
        "minmax": np.ascontiguousarray(raw[:, :8]).view("<f4").reshape(n, 2),
        "v4": verts[:, :, :4],
        "height": np.ascontiguousarray(verts[:, :, 4:]).view("<f4").reshape(n, 9, 9),
        "tiles": raw[:, 656:720].reshape(n, 8, 8),
        "flow_count": np.ascontiguousarray(raw[:, 720:724]).view("<u4")[:, 0],
        "flows": raw[:, 724:804],
    }


def read_mclq(payload, chunk: int, chunk_flags: int, path: str | None = None, offset: int | None = None) -> np.ndarray:
    """The layers of one MCNK's MCLQ payload (the bytes after its 8-byte header).

    The MCNK flags say how many records there are and of which kind; a payload shorter than they
    need is a TruncatedError. Records past the flags' count are ignored; without any flag, every
    whole record is read and its kind taken from its tile bytes.
    """
    payload = memoryview(payload).cast("B") if not isinstance(payload, (bytes, bytearray)) else payload
    kinds = [k for k, bit in enumerate(MCNK_LIQUID_FLAGS) if chunk_flags & bit]
    if kinds:
        if len(payload) < len(kinds) * MCLQ_RECORD_SIZE:
            raise TruncatedError(f"MCNK {chunk}: MCLQ for {len(kinds)} liquid(s) (MCNK flags "
                                 f"0x{chunk_flags & MCNK_LIQUID_MASK:X}) needs {len(kinds) * MCLQ_RECORD_SIZE} "
                                 f"bytes, sizeLiquid gives {len(payload)}", path=path, offset=offset or 0)
        n = len(kinds)
    else:
        n = len(payload) // MCLQ_RECORD_SIZE
    out = new_layers(n)
    if n == 0:
        return out
    rec = _mclq_records(payload, n)
    minmax = rec["minmax"]
    if not np.isfinite(minmax).all():
        i = int(np.flatnonzero(~np.isfinite(minmax).all(axis=1))[0])
        raise FormatError(f"MCNK {chunk}: MCLQ record {i} height range {minmax[i].tolist()} is not finite",
                          path=path, offset=(offset or 0) + i * MCLQ_RECORD_SIZE)
    tiles = rec["tiles"]
    if not kinds:
        present = (tiles & MCLQ_TILE_NONE) == 0
        first = np.where(present.reshape(n, 64).any(axis=1), tiles.reshape(n, 64)[
            np.arange(n), present.reshape(n, 64).argmax(axis=1)], 4)
        kinds = [_MCLQ_TILE_KIND.get(int(t) & 7, WATER) for t in first]
    kinds = np.asarray(kinds, np.uint8)
    uv_format = (kinds == MAGMA) | (kinds == SLIME)
    out["chunk"] = chunk
    out["source"] = SOURCE_MCLQ
    out["kind"] = kinds
    out["type"] = np.asarray(BASIC_TYPE_IDS, np.uint16)[kinds]
    out["format"] = uv_format.astype(np.uint16)
    out["min_height"], out["max_height"] = minmax[:, 0], minmax[:, 1]
    out["heights"] = rec["height"]
    v4 = rec["v4"].reshape(n, 9, 9, 4)
    water = ~uv_format
    out["depth"][water] = v4[water, :, :, 0]
    out["flow"][water] = v4[water, :, :, 1:]
    out["uv"][uv_format] = np.ascontiguousarray(v4[uv_format]).view("<u2").reshape(-1, 9, 9, 2)
    out["tiles"] = tiles
    out["exists"] = (tiles & MCLQ_TILE_NONE) == 0
    out["flow_count"] = rec["flow_count"]
    out["flows"] = rec["flows"]
    return out


def write_mclq(layers: np.ndarray) -> bytes:
    """The MCLQ payload of one chunk's layers (in the order the MCNK flags list their kinds)."""
    layers = np.asarray(layers, LAYER_DTYPE)
    n = len(layers)
    raw = np.zeros((n, MCLQ_RECORD_SIZE), np.uint8)
    raw[:, :8] = np.stack([layers["min_height"], layers["max_height"]], axis=1).astype("<f4").view(np.uint8)
    verts = np.zeros((n, 81, 8), np.uint8)
    uv_format = layers["format"] == 1
    v4 = np.zeros((n, 9, 9, 4), np.uint8)
    v4[~uv_format, :, :, 0] = layers["depth"][~uv_format]
    v4[~uv_format, :, :, 1:] = layers["flow"][~uv_format]
    v4[uv_format] = np.ascontiguousarray(layers["uv"][uv_format], "<u2").view(np.uint8).reshape(-1, 9, 9, 4)
    verts[:, :, :4] = v4.reshape(n, 81, 4)
    verts[:, :, 4:] = np.ascontiguousarray(layers["heights"], "<f4").reshape(n, 81, 1).view(np.uint8)
    raw[:, 8:656] = verts.reshape(n, 648)
    tiles = np.where(layers["exists"], layers["tiles"] & ~np.uint8(MCLQ_TILE_NONE),
                     layers["tiles"] | np.uint8(MCLQ_TILE_NONE))
    raw[:, 656:720] = tiles.reshape(n, 64)
    raw[:, 720:724] = layers["flow_count"].astype("<u4").reshape(n, 1).view(np.uint8)
    raw[:, 724:804] = layers["flows"]
    return raw.tobytes()


def mclq_tiles_for(kind: int, exists) -> np.ndarray:
    """The tile bytes a writer gives a new MCLQ layer of ``kind``: its type bits, 0x0F where empty."""
    code = {v: k for k, v in _MCLQ_TILE_KIND.items()}[int(kind)]
    return np.where(np.asarray(exists, bool), np.uint8(code), np.uint8(0x0F)).astype(np.uint8)


# ----------------------------------------------------------------------------------------- MH2O
def _vertex_bytes(fmt: int, n: int) -> int:
    h, uv, d = _LVF_PARTS[fmt]
    return n * (4 * h + 4 * uv + d)


def _mh2o_records(buf, end: int):
    """Headers, and per instance its chunk and start offset: the instances of chunks with layers whose
    instance arrays lie within the first ``end`` bytes (the others are the caller's error)."""
    headers = np.frombuffer(buf, MH2O_HEADER_DTYPE, 256)
    counts = headers["layer_count"].astype(np.int64)
    ofs_inst = headers["offset_instances"].astype(np.int64)
    fits = np.where((counts > 0) & (ofs_inst + 24 * counts <= end), counts, 0)
    chunk = np.repeat(np.arange(256), fits)
    starts = np.repeat(ofs_inst, fits) + 24 * (np.arange(len(chunk)) - np.repeat(np.cumsum(fits) - fits, fits))
    return headers, counts, ofs_inst, chunk, starts


def mh2o_reach(view, size: int) -> int:
    """How far past its start the client reads an MH2O chunk of ``size`` bytes, given ``view``
    (the chunk's payload followed by the rest of the file): its headers, then for each chunk WITH
    layers the instances, attributes, exists bitmaps and vertex data. Only chunks with layers count:
    the client never reads the attributes of a chunk without layers. Never less than ``size``; capped
    at ``len(view)`` (what lies past the file is :func:`read_mh2o`'s error to report)."""
    end = len(view)
    if size < MH2O_HEADERS_SIZE:
        return size
    headers, counts, ofs_inst, chunk, starts = _mh2o_records(view, end)
    lay = counts > 0
    if not lay.any():
        return size
    ofs_attr = headers["offset_attributes"].astype(np.int64)
    reach = max(size, int((ofs_inst + 24 * counts)[lay].max()))
    has_attr = lay & (ofs_attr != 0)
    if has_attr.any():
        reach = max(reach, int((ofs_attr + MH2O_ATTRIBUTES_SIZE)[has_attr].max()))
    if reach > end or not len(starts):
        return min(reach, end)
    inst = np.frombuffer(b"".join(bytes(view[s:s + 24]) for s in starts.tolist()), MH2O_INSTANCE_DTYPE)
    w, h = inst["width"].astype(np.int64), inst["height"].astype(np.int64)
    ofs_ex, ofs_v = inst["offset_exists"].astype(np.int64), inst["offset_vertices"].astype(np.int64)
    nbytes = (w * h + 7) // 8
    ex = (ofs_ex != 0) & (nbytes > 0)
    if ex.any():
        reach = max(reach, int((ofs_ex + nbytes)[ex].max()))
    for k in np.flatnonzero((ofs_v != 0) & np.isin(inst["format"], list(_LVF_PARTS))).tolist():
        reach = max(reach, int(ofs_v[k]) + _vertex_bytes(int(inst["format"][k]), (int(w[k]) + 1) * (int(h[k]) + 1)))
    return min(reach, end)


def read_mh2o(payload, path: str | None = None, offset: int = 0, *, beyond: bytes = b"") -> TileLiquid:
    """Decode an MH2O chunk's payload; ``offset`` is its file offset (for error messages).

    ``beyond``: the file's bytes right after the chunk, as far as :func:`mh2o_reach` says the client
    reads. Offsets that leave the chunk but stay in those bytes are read as the client reads them,
    with a note in ``TileLiquid.notes``; the attributes of a chunk without layers are never read
    (the client does not), so a bad offset there is a note, never an error.
    """
    size = len(payload)
    buf = bytes(payload) + bytes(beyond)
    end = len(buf)
    notes: list[str] = []
    if size < MH2O_HEADERS_SIZE:
        raise TruncatedError(f"MH2O: 256 chunk headers need {MH2O_HEADERS_SIZE} bytes, the chunk has {size}",
                             path=path, offset=offset)
    headers, counts, ofs_inst, chunk, starts = _mh2o_records(buf, end)
    ofs_attr = headers["offset_attributes"].astype(np.int64)
    past: dict[str, list[int]] = {}

    def fail(reason, at, cls=FormatError):
        raise cls(f"MH2O: {reason}", path=path, offset=offset + int(at))

    def where(what: str, chunks, ends) -> None:
        """Note the chunks whose ``what`` runs past the chunk (but not past the file)."""
        out = np.asarray(chunks)[np.asarray(ends) > size]
        if len(out):
            past.setdefault(what, []).extend(np.unique(out).tolist())

    bad = (counts > 0) & (ofs_inst + counts * 24 > end)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        fail(f"chunk {i}: {int(counts[i])} instances at +{int(ofs_inst[i])} need {int(counts[i]) * 24} bytes, "
             f"the chunk has {size}", 12 * i, TruncatedError)
    lay = counts > 0
    where("instances", np.flatnonzero(lay), (ofs_inst + counts * 24)[lay])
    attr_end = ofs_attr + MH2O_ATTRIBUTES_SIZE
    has_attr = (ofs_attr != 0) & (lay | (attr_end <= size))   # chunks without layers: only when inside
    ignored = np.flatnonzero((ofs_attr != 0) & ~lay & (attr_end > size))
    if len(ignored):
        notes.append(f"MH2O: {len(ignored)} chunk header(s) without liquid layers point their attributes past "
                     f"the chunk (chunks {', '.join(map(str, ignored[:8].tolist()))}"
                     f"{', ...' if len(ignored) > 8 else ''}); the client never reads them: ignored")
    bad = has_attr & (attr_end > end)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        fail(f"chunk {i}: attributes at +{int(ofs_attr[i])} run past the chunk ({size} bytes)", 12 * i + 8,
             TruncatedError)
    where("attributes", np.flatnonzero(has_attr), attr_end[has_attr])
    attrs = np.zeros((256, 2), "<u8")
    if has_attr.any():
        sel = np.flatnonzero(has_attr)
        raw = np.frombuffer(b"".join(buf[o:o + 16] for o in ofs_attr[sel].tolist()), "<u8").reshape(-1, 2)
        attrs[sel] = raw

    inst = np.frombuffer(b"".join(buf[s:s + 24] for s in starts.tolist()), MH2O_INSTANCE_DTYPE) if len(chunk) else \
        np.zeros(0, MH2O_INSTANCE_DTYPE)
    n = len(inst)
    x, y = inst["x"].astype(np.int64), inst["y"].astype(np.int64)
    w, h = inst["width"].astype(np.int64), inst["height"].astype(np.int64)
    bad = (x + w > 8) | (y + h > 8)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        fail(f"chunk {int(chunk[k])}: instance rectangle x {int(x[k])} y {int(y[k])} width {int(w[k])} "
             f"height {int(h[k])} leaves the 8×8 chunk", int(starts[k]) + 12)
    mm = np.stack([inst["min_height"], inst["max_height"]], axis=1)
    bad = ~np.isfinite(mm).all(axis=1)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        fail(f"chunk {int(chunk[k])}: instance height range {mm[k].tolist()} is not finite", int(starts[k]) + 4)

    out = new_layers(n)
    out["chunk"] = chunk
    out["source"] = SOURCE_MH2O
    out["type"] = inst["type"]
    out["format"] = inst["format"]
    out["kind"] = default_kind(inst["type"], inst["format"])
    out["min_height"], out["max_height"] = inst["min_height"], inst["max_height"]
    out["rect"] = np.stack([x, y, w, h], axis=1)
    out["heights"] = inst["min_height"][:, None, None]

    # exists bitmaps (≤ 8 bytes each: width*height ≤ 64 bits)
    ofs_ex = inst["offset_exists"].astype(np.int64)
    nbytes = (w * h + 7) // 8
    has_ex = (ofs_ex != 0) & (nbytes > 0)
    bad = has_ex & (ofs_ex + nbytes > end)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        fail(f"chunk {int(chunk[k])}: exists bitmap of {int(nbytes[k])} bytes at +{int(ofs_ex[k])} runs past the "
             f"chunk ({size} bytes)", int(starts[k]) + 16, TruncatedError)
    where("exists bitmaps", chunk[has_ex], (ofs_ex + nbytes)[has_ex])
    bits = np.full(n, np.uint64(0xFFFFFFFFFFFFFFFF), "<u8")
    if has_ex.any():
        sel = np.flatnonzero(has_ex)
        bits[sel] = np.frombuffer(b"".join(buf[o:o + b] + bytes(8 - b) for o, b in
                                           zip(ofs_ex[sel].tolist(), nbytes[sel].tolist())), "<u8")
    out["exists_bits"] = np.where(has_ex, bits, 0)
    # bit i of the bitmap is cell (y + i // width, x + i % width)
    rel = np.unpackbits(bits[:, None].view(np.uint8), axis=1, bitorder="little").astype(bool)    # (n, 64)
    for k in range(n):     # one small mask per instance (a chunk holds one or two)
        wk, hk = int(w[k]), int(h[k])
        if wk and hk:
            out["exists"][k, y[k]:y[k] + hk, x[k]:x[k] + wk] = rel[k, :wk * hk].reshape(hk, wk)
    flags = np.where(has_ex, HAS_EXISTS_BITMAP, 0)

    # vertex data
    ofs_v = inst["offset_vertices"].astype(np.int64)
    fmt = inst["format"].astype(np.int64)
    known = np.isin(fmt, list(_LVF_PARTS))
    has_v = ofs_v != 0
    flags = flags | np.where(has_v, HAS_VERTEX_DATA, 0) | np.where(~known, FORMAT_UNKNOWN, 0)
    out["flags"] = flags
    for k in np.flatnonzero(has_v & known).tolist():
        nv = (int(w[k]) + 1) * (int(h[k]) + 1)
        f = int(fmt[k])
        o = int(ofs_v[k])
        nb = _vertex_bytes(f, nv)
        if o + nb > end:
            fail(f"chunk {int(chunk[k])}: {LVF_NAMES[f]} vertex data of {nb} bytes at +{o} runs past the chunk "
                 f"({size} bytes)", int(starts[k]) + 20, TruncatedError)
        where("vertex data", [int(chunk[k])], [o + nb])
        has_h, has_uv, has_d = _LVF_PARTS[f]
        rows = slice(int(y[k]), int(y[k]) + int(h[k]) + 1)
        cols = slice(int(x[k]), int(x[k]) + int(w[k]) + 1)
        shape = (int(h[k]) + 1, int(w[k]) + 1)
        p = o
        if has_h:
            hv = np.frombuffer(buf, "<f4", nv, p).reshape(shape)
            if not np.isfinite(hv).all():
                j = int(np.flatnonzero(~np.isfinite(hv).ravel())[0])
                fail(f"chunk {int(chunk[k])}: liquid height {float(hv.ravel()[j])} is not finite", p + 4 * j)
            out["heights"][k, rows, cols] = hv
            p += 4 * nv
        if has_uv:
            out["uv"][k, rows, cols] = np.frombuffer(buf, "<u2", 2 * nv, p).reshape(shape + (2,))
            p += 4 * nv
        if has_d:
            out["depth"][k, rows, cols] = np.frombuffer(buf, "u1", nv, p).reshape(shape)
    for what, chunks in past.items():
        chunks = sorted(set(chunks))
        notes.append(f"MH2O: the {what} of {len(chunks)} chunk(s) (chunks {', '.join(map(str, chunks[:8]))}"
                     f"{', ...' if len(chunks) > 8 else ''}) lie past the MH2O chunk; read from the bytes that "
                     f"follow it in the file, as the client reads them")
    return TileLiquid(layers=out, source=SOURCE_MH2O, fishable=attrs[:, 0].copy(), deep=attrs[:, 1].copy(),
                      has_attributes=has_attr.copy(), notes=notes)


def write_mh2o(liquid: TileLiquid) -> bytes:
    """An MH2O payload: headers, every instance, then per chunk its attributes and each instance's
    exists bitmap and vertex data (the order the 3.3.5 files use; no padding)."""
    lay = np.asarray(liquid.layers, LAYER_DTYPE)
    order = np.argsort(lay["chunk"], kind="stable")
    lay = lay[order]
    counts = np.bincount(lay["chunk"].astype(np.int64), minlength=256)[:256]
    if len(lay) and int(lay["chunk"].max()) > 255:
        raise ValueError("MH2O layers name chunks past 255")
    bad = ~np.isin(lay["format"].astype(np.int64), list(_LVF_PARTS))
    if bad.any():
        raise ValueError(f"MH2O: vertex format {int(lay['format'][bad][0])} cannot be written")
    x, y, w, h = (lay["rect"][:, i].astype(np.int64) for i in range(4))
    if ((x + w > 8) | (y + h > 8)).any():
        raise ValueError("MH2O: an instance rectangle leaves the 8×8 chunk")
    headers = np.zeros(256, MH2O_HEADER_DTYPE)
    inst = np.zeros(len(lay), MH2O_INSTANCE_DTYPE)
    pos = MH2O_HEADERS_SIZE + 24 * len(lay)
    first = np.cumsum(counts) - counts
    headers["layer_count"] = counts
    headers["offset_instances"] = np.where(counts > 0, MH2O_HEADERS_SIZE + 24 * first, 0)
    tail = bytearray()
    for c in range(256):
        if liquid.has_attributes[c]:
            headers["offset_attributes"][c] = pos + len(tail)
            tail += struct.pack("<QQ", int(liquid.fishable[c]), int(liquid.deep[c]))
        for k in range(int(first[c]), int(first[c] + counts[c])):
            wk, hk = int(w[k]), int(h[k])
            rel_mask = lay["exists"][k, y[k]:y[k] + hk, x[k]:x[k] + wk].ravel()
            full = bool(rel_mask.all())
            if (lay["flags"][k] & HAS_EXISTS_BITMAP or not full) and wk * hk:
                nb = (wk * hk + 7) // 8
                stored = int(lay["exists_bits"][k])
                packed = int.from_bytes(np.packbits(rel_mask, bitorder="little").tobytes(), "little")
                # keep the stored padding bits past width*height when the cells agree with them
                lo = (1 << (wk * hk)) - 1
                value = stored if (stored & lo) == packed else packed
                inst["offset_exists"][k] = pos + len(tail)
                tail += value.to_bytes(8, "little")[:nb]
            if lay["flags"][k] & HAS_VERTEX_DATA:
                f = int(lay["format"][k])
                has_h, has_uv, has_d = _LVF_PARTS[f]
                rows, cols = slice(y[k], y[k] + hk + 1), slice(x[k], x[k] + wk + 1)
                inst["offset_vertices"][k] = pos + len(tail)
                if has_h:
                    tail += np.ascontiguousarray(lay["heights"][k, rows, cols], "<f4").tobytes()
                if has_uv:
                    tail += np.ascontiguousarray(lay["uv"][k, rows, cols], "<u2").tobytes()
                if has_d:
                    tail += np.ascontiguousarray(lay["depth"][k, rows, cols], "u1").tobytes()
    inst["type"] = lay["type"]
    inst["format"] = lay["format"]
    inst["min_height"], inst["max_height"] = lay["min_height"], lay["max_height"]
    inst["x"], inst["y"], inst["width"], inst["height"] = x, y, w, h
    return headers.tobytes() + inst.tobytes() + bytes(tail)


def mh2o_layer(chunk: int, type_id: int, kind: int, heights=None, exists=None, *, depth=None, fmt=None,
               uv=None) -> np.ndarray:
    """One MH2O layer over the bounding rectangle of ``exists`` (8×8 bool, default all).

    ``heights`` is the 9×9 surface (or a number: flat); ``fmt`` defaults to height+depth, or depth
    only for a flat ocean."""
    lay = new_layers(1)
    ex = np.ones((8, 8), bool) if exists is None else np.asarray(exists, bool)
    rows, cols = np.flatnonzero(ex.any(axis=1)), np.flatnonzero(ex.any(axis=0))
    if len(rows) == 0:
        raise ValueError("an MH2O layer needs at least one cell")
    x0, y0 = int(cols[0]), int(rows[0])
    lay["rect"] = (x0, y0, int(cols[-1]) - x0 + 1, int(rows[-1]) - y0 + 1)
    hv = np.broadcast_to(np.asarray(0.0 if heights is None else heights, np.float32), (9, 9))
    lay["chunk"], lay["source"], lay["type"], lay["kind"] = chunk, SOURCE_MH2O, type_id, kind
    lay["exists"] = ex
    lay["heights"] = hv
    if fmt is None:
        fmt = LVF_DEPTH if (kind == OCEAN and np.ptp(hv) == 0) else LVF_HEIGHT_DEPTH
    lay["format"] = fmt
    if depth is not None:
        lay["depth"] = np.broadcast_to(np.asarray(depth, np.uint8), (9, 9))
    if uv is not None:
        lay["uv"] = np.broadcast_to(np.asarray(uv, np.uint16), (9, 9, 2))
    used = hv[np.asarray(_touched(ex))]
    lay["min_height"], lay["max_height"] = float(used.min()), float(used.max())
    w, h = int(lay["rect"][0, 2]), int(lay["rect"][0, 3])
    rel = ex[y0:y0 + h, x0:x0 + w].ravel()
    lay["flags"] = HAS_VERTEX_DATA | (0 if rel.all() else HAS_EXISTS_BITMAP)
    if not rel.all():
        lay["exists_bits"] = int.from_bytes(np.packbits(rel, bitorder="little").tobytes(), "little")
    # what the file carries, nothing else: outside the rectangle the minimum height, parts the
    # format lacks zero (or flat), as reading it back gives
    inside = np.zeros((9, 9), bool)
    inside[y0:y0 + h + 1, x0:x0 + w + 1] = True
    has_h, has_uv, has_d = _LVF_PARTS.get(int(fmt), (True, True, True))
    lay["heights"][0] = np.where(inside & has_h, lay["heights"][0], lay["min_height"][0])
    lay["depth"][0] = np.where(inside & has_d, lay["depth"][0], 0)
    lay["uv"][0] = np.where((inside & has_uv)[..., None], lay["uv"][0], 0)
    return lay


def mclq_layer(chunk: int, kind: int, heights, exists=None, *, depth=None, uv=None) -> np.ndarray:
    """One MCLQ layer of ``kind`` with 9×9 absolute ``heights`` (its type follows the kind)."""
    lay = new_layers(1)
    ex = np.ones((8, 8), bool) if exists is None else np.asarray(exists, bool)
    hv = np.broadcast_to(np.asarray(heights, np.float32), (9, 9))
    lay["chunk"], lay["source"], lay["kind"] = chunk, SOURCE_MCLQ, kind
    lay["type"] = BASIC_TYPE_IDS[kind]
    lay["format"] = 1 if kind in (MAGMA, SLIME) else 0
    lay["heights"], lay["exists"] = hv, ex
    lay["tiles"] = mclq_tiles_for(kind, ex)
    if depth is not None:
        lay["depth"] = np.broadcast_to(np.asarray(depth, np.uint8), (9, 9))
    if uv is not None:
        lay["uv"] = np.broadcast_to(np.asarray(uv, np.uint16), (9, 9, 2))
    used = hv[_touched(ex)] if ex.any() else hv.ravel()
    lay["min_height"], lay["max_height"] = float(used.min()), float(used.max())
    return lay


def _touched(exists) -> np.ndarray:
    ex = np.asarray(exists, bool)
    t = np.zeros((9, 9), bool)
    for dr in (0, 1):
        for dc in (0, 1):
            t[dr:dr + 8, dc:dc + 8] |= ex
    return t


# ------------------------------------------------------------------------------------- the tile
def tile_liquid(adt) -> TileLiquid:
    """The liquids of an :class:`~wowgrass.formats.adt.AdtTile`: its MH2O when it has one, else the
    MCLQ payloads of its chunks."""
    if adt.mh2o is not None:
        return read_mh2o(adt.mh2o, adt.path, getattr(adt, "mh2o_offset", None) or 0,
                         beyond=getattr(adt, "mh2o_beyond", None) or b"")
    parts = []
    offsets = getattr(adt, "liquid_offsets", None)
    for i, payload in enumerate(adt.liquids):
        if payload is None or (len(payload) == 0 and not adt.chunk_flags[i] & MCNK_LIQUID_MASK):
            continue
        if len(payload) == 0:
            continue  # flags without a payload (sizeLiquid 8): the client reads nothing either
        parts.append(read_mclq(payload, i, int(adt.chunk_flags[i]), adt.path,
                               None if offsets is None else int(offsets[i])))
    if not parts:
        return TileLiquid(source=SOURCE_NONE)
    return TileLiquid(layers=np.concatenate(parts), source=SOURCE_MCLQ)


def put_tile_liquid(adt, liquid: TileLiquid, *, fmt: str) -> None:
    """Store ``liquid`` in ``adt`` as ``fmt`` ("mh2o" or "mclq") for :func:`write_adt`.

    MCLQ: each chunk's layers are sorted by kind, the MCNK liquid flags set to match and every
    other chunk's cleared. MH2O: the tile's MCLQ payloads are dropped and the flags cleared, as
    3.x files have them.
    """
    lay = np.asarray(liquid.layers, LAYER_DTYPE)
    flags = np.asarray(adt.chunk_flags, "<u4") & ~np.uint32(MCNK_LIQUID_MASK)
    if fmt == "mh2o":
        adt.mh2o = write_mh2o(liquid) if len(lay) or liquid.has_attributes.any() else None
        adt.liquids = [None] * 256
    elif fmt == "mclq":
        adt.mh2o = None
        liquids = [None] * 256
        for c in np.unique(lay["chunk"]).tolist():
            part = lay[lay["chunk"] == c]
            part = part[np.argsort(part["kind"], kind="stable")]
            if len(np.unique(part["kind"])) != len(part) or (part["kind"] > SLIME).any():
                raise ValueError(f"chunk {c}: MCLQ holds at most one layer of each kind")
            liquids[c] = write_mclq(part)
            for k in part["kind"].tolist():
                flags[c] |= np.uint32(MCNK_LIQUID_FLAGS[k])
        adt.liquids = liquids
    else:
        raise ValueError(f"liquid format {fmt!r}: choose mh2o or mclq")
    adt.chunk_flags = flags
