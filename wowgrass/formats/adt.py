"""ADT v18 terrain tiles (1.12 – 3.3.5): one file per 533⅓-yard tile, 16×16 MCNK chunks.

Top level: MVER (18), MHDR, MCIN, MTEX, MMDX/MMID, MWMO/MWID, MDDF, MODF, (MH2O in 3.x), 256 MCNK,
(MFBO/MTXF in 3.x). Every MCNK has a 128-byte header followed by sub-chunks that are always found
through the header's ``ofs*`` fields (relative to the MCNK magic), never by walking: pre-Cataclysm
MCNR carries 13 padding bytes its size field does not count. All 256 headers are decoded at once
into one structured array; bulk payloads (MCVT, MCNR, MCLY, MCAL, MCSH, MCCV) are gathered with numpy.

Quirks handled here:
* MCAL has three encodings chosen per layer: 4-bit (2048 B, low nibble first, ×17) unless the WDT
  says big alpha (MPHD 0x4/0x80); then 8-bit (4096 B), or RLE-compressed when MCLY flag 0x200 is set.
  4-bit maps are authored 63×63: row/column 63 copy 62 unless MCNK flag 0x8000 (do not fix) is set.
  The same fix applies to MCSH shadows.
* doodadMapping (header 0x40) is 2 bits per cell, LSB first as the client reads it; noggit3 writes
  it MSB first, so ``doodad_map_msb_first=True`` reads such maps.
* "No effect" effectIds are written as 0, 0xFFFF or 0xFFFFFFFF by different tools; they are kept as is.
* MH2O, MCLQ, MCSE, MFBO, MTXF and unknown chunks are kept as raw bytes so read → write round-trips.

World space: +X north, +Y west, +Z up. A chunk's ``position`` is its north-west corner; cell row r
steps south (−X), column c steps east (−Y). See https://wowdev.wiki/ADT/v18 and docs/adt.md.
"""

from __future__ import annotations

import struct
import warnings
from dataclasses import dataclass, field
from enum import IntFlag

import numpy as np

from wowgrass.binary import cstring
from wowgrass.errors import FormatError, TruncatedError
from wowgrass.formats.chunks import HEADER_SIZE, disk_tag, iter_chunks, tag_u32, write_chunk
from wowgrass.formats.liquid import mh2o_reach

# --- constants ---------------------------------------------------------------------------------
VERSION = 18
TILE_SIZE = 1600.0 / 3.0            # yards
CHUNK_SIZE = TILE_SIZE / 16.0
UNIT_SIZE = CHUNK_SIZE / 8.0        # one cell
ZEROPOINT = 32.0 * TILE_SIZE        # map centre

ALPHA_NONE, ALPHA_4BIT, ALPHA_8BIT, ALPHA_COMPRESSED = 0, 1, 2, 3
ALPHA_ENCODING_NAMES = {ALPHA_NONE: "none", ALPHA_4BIT: "4-bit", ALPHA_8BIT: "8-bit",
                        ALPHA_COMPRESSED: "compressed"}
NO_EFFECT_IDS = (0, 0xFFFF, 0xFFFFFFFF)


class McnkFlags(IntFlag):
    HAS_MCSH = 0x1
    IMPASS = 0x2
    LQ_RIVER = 0x4
    LQ_OCEAN = 0x8
    LQ_MAGMA = 0x10
    LQ_SLIME = 0x20
    HAS_MCCV = 0x40
    DO_NOT_FIX_ALPHA_MAP = 0x8000


class MclyFlags(IntFlag):
    ANIMATE = 0x40
    OVERBRIGHT = 0x80
    USE_ALPHA_MAP = 0x100
    ALPHA_MAP_COMPRESSED = 0x200
    USE_CUBE_MAP_REFLECTION = 0x400


# --- record layouts ----------------------------------------------------------------------------
MHDR_FIELDS = ("flags", "mcin", "mtex", "mmdx", "mmid", "mwmo", "mwid", "mddf", "modf", "mfbo", "mh2o", "mtxf")
MHDR_SIZE = 64
MCIN_DTYPE = np.dtype([("offset", "<u4"), ("size", "<u4"), ("flags", "<u4"), ("async_id", "<u4")])
assert MCIN_DTYPE.itemsize == 16
MDDF_DTYPE = np.dtype([("name_id", "<u4"), ("unique_id", "<u4"), ("position", "<f4", 3),
                       ("rotation", "<f4", 3), ("scale", "<u2"), ("flags", "<u2")])
assert MDDF_DTYPE.itemsize == 36
MODF_DTYPE = np.dtype([("name_id", "<u4"), ("unique_id", "<u4"), ("position", "<f4", 3),
                       ("rotation", "<f4", 3), ("extents", "<f4", (2, 3)), ("flags", "<u2"),
                       ("doodad_set", "<u2"), ("name_set", "<u2"), ("pad", "<u2")])
assert MODF_DTYPE.itemsize == 64
MCNK_HEADER_DTYPE = np.dtype([
    ("flags", "<u4"), ("index_x", "<u4"), ("index_y", "<u4"), ("n_layers", "<u4"),
    ("n_doodad_refs", "<u4"), ("ofs_height", "<u4"), ("ofs_normal", "<u4"), ("ofs_layer", "<u4"),
    ("ofs_refs", "<u4"), ("ofs_alpha", "<u4"), ("size_alpha", "<u4"), ("ofs_shadow", "<u4"),
    ("size_shadow", "<u4"), ("area_id", "<u4"), ("n_map_obj_refs", "<u4"), ("holes", "<u2"),
    ("unknown_but_used", "<u2"), ("doodad_mapping", "u1", 16), ("no_effect_doodad", "u1", 8),
    ("ofs_snd_emitters", "<u4"), ("n_snd_emitters", "<u4"), ("ofs_liquid", "<u4"), ("size_liquid", "<u4"),
    ("position", "<f4", 3), ("ofs_mccv", "<u4"), ("ofs_mclv", "<u4"), ("unused", "<u4")])
assert MCNK_HEADER_DTYPE.itemsize == 128
MCNK_HEADER_SIZE = 128
MCLY_DTYPE = np.dtype([("texture_id", "<u4"), ("flags", "<u4"), ("offset_in_mcal", "<u4"), ("effect_id", "<u4")])
assert MCLY_DTYPE.itemsize == 16
MCVT_SIZE = 145 * 4
MCNR_SIZE = 145 * 3
MCNR_PAD = 13                       # pre-Cataclysm padding after MCNR that its size does not count
MCSH_SIZE = 512
MCCV_SIZE = 145 * 4
ALPHA_4BIT_SIZE = 2048
ALPHA_8BIT_SIZE = 4096

_SUB_TAGS = {name: tag_u32(name) for name in
             (b"MCVT", b"MCNR", b"MCLY", b"MCRF", b"MCSH", b"MCAL", b"MCLQ", b"MCSE", b"MCCV")}
_TOP_KNOWN = (b"MVER", b"MHDR", b"MCIN", b"MTEX", b"MMDX", b"MMID", b"MWMO", b"MWID", b"MDDF", b"MODF",
              b"MH2O", b"MFBO", b"MTXF")


# --- MCVT vertex layout -------------------------------------------------------------------------
def _vertex_grid():
    """(145, 2) (row, col) offsets in cells of every MCVT vertex from the chunk's NW corner."""
    rows, cols = [], []
    for j in range(17):
        n = 8 if j % 2 else 9
        off = 0.5 if j % 2 else 0.0
        rows += [j // 2 + off] * n
        cols += [k + off for k in range(n)]
    return np.stack([np.array(rows), np.array(cols)], axis=1)


VERTEX_ROWCOL = _vertex_grid()


# --- alpha-map codecs ----------------------------------------------------------------------------
def decode_alpha_4bit(raw: np.ndarray, fix: np.ndarray | bool = False) -> np.ndarray:
    """(L, 2048) u1 → (L, 64, 64) u1; low nibble first, ×17; ``fix`` (per layer) copies row/col 62 → 63."""
    raw = np.asarray(raw, np.uint8).reshape(-1, ALPHA_4BIT_SIZE)
    # widen each byte to a little-endian u16 holding (low nibble, high nibble); ×17 cannot carry
    wide = raw.astype("<u2")
    high = wide & 0xF0
    high <<= 4
    wide &= 0x0F
    wide |= high
    wide *= 17
    out = wide.view(np.uint8).reshape(-1, 64, 64)
    fix = np.broadcast_to(np.asarray(fix, bool), (raw.shape[0],))
    if fix.any():
        sel = np.flatnonzero(fix)
        out[sel, :, 63] = out[sel, :, 62]
        out[sel, 63, :] = out[sel, 62, :]
    return out


def encode_alpha_4bit(alpha: np.ndarray) -> np.ndarray:
    """(L, 64, 64) u1 → (L, 2048) u1 (rounded to the nearest of the 16 levels)."""
    a = np.asarray(alpha, np.uint8).reshape(-1, 64, 64)
    v = ((a.astype(np.uint16) * 15 + 127) // 255).astype(np.uint8)
    return (v[:, :, 0::2] | (v[:, :, 1::2] << 4)).reshape(-1, ALPHA_4BIT_SIZE)


def decode_alpha_rle(buf, start: int, end: int, path: str | None = None) -> tuple[np.ndarray, int]:
    """Decode one RLE-compressed alpha map from ``buf[start:end]``; returns (4096 u1, bytes consumed).

    Each run starts with a byte ``b``: ``n = b & 0x7F``; ``b & 0x80`` fills the next byte n times,
    otherwise the next n bytes are copied. Runs past 4096 are clamped, as the client does.
    A map has a hundred runs or more: each is one slice of ``buf`` and the pieces are joined once.
    """
    if not isinstance(buf, (bytes, bytearray)):
        buf = bytes(buf)
    parts = []
    total = 0
    p = start
    while total < ALPHA_8BIT_SIZE:
        if p >= end:
            raise TruncatedError(f"compressed alpha map ends after {total} of 4096 bytes",
                                 path=path, offset=p)
        b = buf[p]
        n = b & 0x7F
        p += 1
        if b & 0x80:
            if p >= end:
                raise TruncatedError("compressed alpha map: fill run without its value", path=path, offset=p)
            parts.append(buf[p:p + 1] * n)
            p += 1
        else:
            if p + n > end:
                raise TruncatedError(f"compressed alpha map: copy run of {n} bytes, {end - p} left",
                                     path=path, offset=p)
            parts.append(buf[p:p + n])
            p += n
        total += n
    return np.frombuffer(b"".join(parts)[:ALPHA_8BIT_SIZE], np.uint8), p - start


def encode_alpha_rle(alpha: np.ndarray) -> bytes:
    """(64, 64) u1 → compressed bytes: fill runs for repeats of 3+, copy runs for the rest."""
    a = np.asarray(alpha, np.uint8).reshape(-1)
    raw = a.tobytes()
    starts = np.concatenate(([0], np.flatnonzero(np.diff(a)) + 1))
    lengths = np.diff(np.concatenate((starts, [a.size])))
    fills = lengths >= 3
    out = bytearray()

    def copy(s, e):
        for k in range(s, e, 127):
            part = raw[k:min(e, k + 127)]
            out.append(len(part))
            out.extend(part)

    prev = 0
    for s, n in zip(starts[fills].tolist(), lengths[fills].tolist()):
        copy(prev, s)
        v = raw[s]
        prev = s + n
        while n > 0:
            k = min(n, 127)
            out.extend((0x80 | k, v))
            n -= k
    copy(prev, a.size)
    return bytes(out)


def alpha_encodings(layer_flags: np.ndarray, n_layers: np.ndarray, big_alpha: bool) -> np.ndarray:
    """(256, 4) u1 encoding of every layer from MCLY flags, layer count and the WDT big-alpha flag."""
    flags = np.asarray(layer_flags, np.uint32)
    exists = np.arange(4)[None, :] < np.asarray(n_layers)[:, None]
    uses = exists & ((flags & MclyFlags.USE_ALPHA_MAP) != 0)
    uses[:, 0] = False                  # layer 0 has no alpha map: its weight is 255 - sum(others)
    if big_alpha:
        enc = np.where((flags & MclyFlags.ALPHA_MAP_COMPRESSED) != 0, ALPHA_COMPRESSED, ALPHA_8BIT)
    else:
        enc = np.full(flags.shape, ALPHA_4BIT)
    return np.where(uses, enc, ALPHA_NONE).astype(np.uint8)


# --- the tile ------------------------------------------------------------------------------------
def _zeros(shape, dtype):
    return lambda: np.zeros(shape, dtype)


@dataclass(eq=False)
class AdtTile:
    """One ADT v18 tile decoded into numpy arrays indexed in MCNK order (``IndexY*16 + IndexX``).

    Construct with :meth:`from_bytes` (a file) or :meth:`from_arrays` / the dataclass fields (a
    generated tile), and serialize with :func:`write_adt`. Heights are relative to each chunk's
    base height ``positions[:, 2]``; :attr:`abs_heights` adds it. Spec: https://wowdev.wiki/ADT/v18.
    """

    textures: list = field(default_factory=list)
    models: list = field(default_factory=list)
    wmos: list = field(default_factory=list)
    mddf: np.ndarray = field(default_factory=_zeros(0, MDDF_DTYPE))
    modf: np.ndarray = field(default_factory=_zeros(0, MODF_DTYPE))
    chunk_flags: np.ndarray = field(default_factory=_zeros(256, "<u4"))
    index_xy: np.ndarray | None = None
    n_layers: np.ndarray = field(default_factory=_zeros(256, np.uint8))
    area_id: np.ndarray = field(default_factory=_zeros(256, "<u4"))
    positions: np.ndarray = field(default_factory=_zeros((256, 3), "<f4"))
    heights: np.ndarray = field(default_factory=_zeros((256, 145), "<f4"))
    normals: np.ndarray | None = None
    layer_texture: np.ndarray | None = None
    layer_flags: np.ndarray = field(default_factory=_zeros((256, 4), "<u4"))
    layer_effect: np.ndarray = field(default_factory=_zeros((256, 4), "<u4"))
    alpha: np.ndarray = field(default_factory=_zeros((256, 4, 64, 64), np.uint8))
    alpha_encoding: np.ndarray | None = None
    shadow: np.ndarray = field(default_factory=_zeros((256, 64, 64), bool))
    holes: np.ndarray = field(default_factory=_zeros(256, "<u2"))
    doodad_mapping: np.ndarray = field(default_factory=_zeros((256, 8, 8), np.uint8))
    no_effect_doodad: np.ndarray = field(default_factory=_zeros((256, 8, 8), bool))
    mccv: np.ndarray | None = None
    has_mccv: np.ndarray | None = None           # (256,) bool: chunks that carry MCCV
    big_alpha: bool = False
    doodad_map_msb_first: bool = False
    # raw parts kept for a faithful round trip
    mcnk_headers: np.ndarray | None = None       # (256,) MCNK_HEADER_DTYPE as read (spare fields)
    mcnr_pad: np.ndarray = field(default_factory=_zeros((256, MCNR_PAD), np.uint8))
    refs: list | None = None                     # per chunk MCRF u4 array
    liquids: list | None = None                  # per chunk MCLQ payload bytes or None
    liquid_offsets: np.ndarray | None = None     # (256,) file offset of each MCLQ payload (as read)
    sound_emitters: list | None = None           # per chunk MCSE payload bytes or None
    extra_subchunks: dict = field(default_factory=dict)   # chunk -> [(tag, payload)]
    mh2o: bytes | None = None
    mh2o_offset: int | None = None               # file offset of the MH2O payload (as read)
    mh2o_beyond: bytes | None = None             # file bytes past MH2O that its offsets reach (as read)
    mfbo: bytes | None = None
    mtxf: bytes | None = None
    mhdr_flags: int = 0
    mcin: np.ndarray | None = None               # (256,) MCIN_DTYPE as read
    # where a read tile's fields sit in its file, so an edit can patch bytes in place (edit/adt_edit.py)
    mcnk_offsets: np.ndarray | None = None       # (256,) i8 file offset of each MCNK's 8-byte chunk header
    mcly_offsets: np.ndarray | None = None       # (256,) i8 file offset of each MCLY payload, -1 where none
    extra_before: list = field(default_factory=list)   # unknown top-level chunks before the MCNKs
    extra_after: list = field(default_factory=list)    # ... and after them
    version: int = VERSION
    path: str | None = None

    def __post_init__(self):
        if self.index_xy is None:
            i = np.arange(256, dtype="<u4")
            self.index_xy = np.stack([i % 16, i // 16], axis=1)
        if self.normals is None:
            self.normals = np.zeros((256, 145, 3), np.int8)
            self.normals[..., 2] = 127
        if self.layer_texture is None:
            self.layer_texture = np.where(np.arange(4)[None, :] < np.asarray(self.n_layers)[:, None], 0, -1
                                          ).astype("<i4")
        if self.alpha_encoding is None:
            self.alpha_encoding = alpha_encodings(self.layer_flags, self.n_layers, self.big_alpha)
        if self.mccv is not None and self.has_mccv is None:
            self.has_mccv = np.ones(256, bool)
        if self.refs is None:
            self.refs = [np.zeros(0, "<u4") for _ in range(256)]
        if self.liquids is None:
            self.liquids = [None] * 256
        if self.sound_emitters is None:
            self.sound_emitters = [None] * 256

    # -- construction from generated arrays --
    @classmethod
    def from_arrays(cls, col: int, row: int, *, abs_heights=None, heights=None, base_heights=None,
                    alpha_encoding=None, **fields) -> "AdtTile":
        """A tile at map tile (``col``, ``row``) from plain arrays.

        Positions follow from the tile and chunk indices. Give either ``abs_heights`` (256, 145)
        (each chunk's base becomes its lowest vertex) or ``heights`` relative to ``base_heights``.
        ``alpha_encoding`` (256, 4) (1 = 4-bit, 2 = 8-bit, 3 = compressed) sets MCLY flags
        0x100/0x200 and ``big_alpha``; 4-bit cannot be mixed with 8-bit/compressed in one tile.
        Any other dataclass field may be passed by name.
        """
        i = np.arange(256)
        ix, iy = i % 16, i // 16
        pos = np.zeros((256, 3), "<f4")
        pos[:, 0] = ZEROPOINT - row * TILE_SIZE - iy * CHUNK_SIZE
        pos[:, 1] = ZEROPOINT - col * TILE_SIZE - ix * CHUNK_SIZE
        if abs_heights is not None:
            abs_heights = np.asarray(abs_heights, np.float32).reshape(256, 145)
            base = abs_heights.min(axis=1)
            heights = abs_heights - base[:, None]
        else:
            base = np.zeros(256, np.float32) if base_heights is None else np.broadcast_to(
                np.asarray(base_heights, np.float32), (256,))
            heights = np.zeros((256, 145), np.float32) if heights is None else np.asarray(heights, np.float32)
        pos[:, 2] = base
        fields.setdefault("positions", pos)
        fields["heights"] = np.ascontiguousarray(heights, "<f4").reshape(256, 145)
        if alpha_encoding is not None:
            enc = np.asarray(alpha_encoding, np.uint8).reshape(256, 4)
            used = set(np.unique(enc[enc > 0]).tolist())
            if ALPHA_4BIT in used and used & {ALPHA_8BIT, ALPHA_COMPRESSED}:
                raise ValueError("a tile cannot mix 4-bit alpha maps with 8-bit or compressed ones")
            flags = np.array(fields.get("layer_flags", np.zeros((256, 4), "<u4")), "<u4")
            flags &= ~np.uint32(MclyFlags.USE_ALPHA_MAP | MclyFlags.ALPHA_MAP_COMPRESSED)
            flags |= np.where(enc > 0, np.uint32(MclyFlags.USE_ALPHA_MAP), np.uint32(0))
            flags |= np.where(enc == ALPHA_COMPRESSED, np.uint32(MclyFlags.ALPHA_MAP_COMPRESSED), np.uint32(0))
            fields["layer_flags"] = flags
            fields.setdefault("big_alpha", bool(used & {ALPHA_8BIT, ALPHA_COMPRESSED}))
        for name in ("n_layers", "layer_effect", "layer_texture", "area_id", "chunk_flags", "holes"):
            if name in fields:
                fields[name] = np.asarray(fields[name])
        return cls(**fields)

    # -- reading --
    @classmethod
    def from_bytes(cls, data, path: str | None = None, *, big_alpha: bool = False,
                   doodad_map_msb_first: bool = False) -> "AdtTile":
        """Parse an ADT v18 file. ``big_alpha`` comes from the map's WDT (:attr:`WdtFile.big_alpha`)."""
        return _Reader(data, path, big_alpha, doodad_map_msb_first).tile()

    # -- derived arrays --
    @property
    def abs_heights(self) -> np.ndarray:
        return self.heights + self.positions[:, 2:3]

    @property
    def col(self) -> int:
        """Tile column (the first number of ``<Map>_<col>_<row>.adt``), from chunk 0's centre."""
        y = float(self.positions[0, 1]) - CHUNK_SIZE / 2
        return int(np.floor((ZEROPOINT - y) / TILE_SIZE))

    @property
    def row(self) -> int:
        x = float(self.positions[0, 0]) - CHUNK_SIZE / 2
        return int(np.floor((ZEROPOINT - x) / TILE_SIZE))

    def hole_cells(self) -> np.ndarray:
        """(256, 8, 8) bool: cells inside a low-res hole (bit ``(r>>1)*4 + (c>>1)``)."""
        r = np.arange(8)
        bit = (r[:, None] >> 1) * 4 + (r[None, :] >> 1)
        return ((self.holes.astype(np.uint32)[:, None, None] >> bit[None]) & 1).astype(bool)

    def cell_origins(self) -> np.ndarray:
        """(256, 8, 8, 2) world (X, Y) of every cell's north-west corner."""
        k = np.arange(8) * UNIT_SIZE
        out = np.empty((256, 8, 8, 2), np.float64)
        out[..., 0] = self.positions[:, 0, None, None] - k[None, :, None]
        out[..., 1] = self.positions[:, 1, None, None] - k[None, None, :]
        return out

    def cell_centres(self) -> np.ndarray:
        """(256, 8, 8, 2) world (X, Y) of every cell's centre."""
        return self.cell_origins() - UNIT_SIZE / 2

    def vertex_positions(self) -> np.ndarray:
        """(256, 145, 3) float32 world (X, Y, Z) of every MCVT vertex."""
        out = np.empty((256, 145, 3), np.float32)
        out[..., 0] = self.positions[:, 0, None] - VERTEX_ROWCOL[None, :, 0] * UNIT_SIZE
        out[..., 1] = self.positions[:, 1, None] - VERTEX_ROWCOL[None, :, 1] * UNIT_SIZE
        out[..., 2] = self.abs_heights
        return out

    def chunk_index_at(self, x, y) -> np.ndarray:
        """MCNK index holding each world point (x, y), −1 outside this tile."""
        x = np.asarray(x, np.float64)
        y = np.asarray(y, np.float64)
        # clipped before the cast: a far-away (or garbage) point must not overflow int64
        iy = np.clip(np.floor((self.positions[0, 0] - x) / CHUNK_SIZE), -1, 16).astype(np.int64)
        ix = np.clip(np.floor((self.positions[0, 1] - y) / CHUNK_SIZE), -1, 16).astype(np.int64)
        inside = (ix >= 0) & (ix < 16) & (iy >= 0) & (iy < 16)
        lookup = np.empty(256, np.int64)
        lookup[self.index_xy[:, 1].astype(np.int64) * 16 + self.index_xy[:, 0]] = np.arange(256)
        return np.where(inside, lookup[np.clip(iy, 0, 15) * 16 + np.clip(ix, 0, 15)], -1)

    def _fan(self, chunk_idx, x, y):
        """Centre height and plane gradient (per cell units) of the fan triangle under each point."""
        chunk_idx = np.asarray(chunk_idx, np.int64)
        x = np.asarray(x, np.float64)
        y = np.asarray(y, np.float64)
        chunk_idx, x, y = np.broadcast_arrays(chunk_idx, x, y)
        pos = self.positions[chunk_idx].astype(np.float64)
        dr = (pos[..., 0] - x) / UNIT_SIZE          # rows, south
        dc = (pos[..., 1] - y) / UNIT_SIZE          # columns, east
        r = np.clip(np.floor(dr), 0, 7).astype(np.int64)
        c = np.clip(np.floor(dc), 0, 7).astype(np.int64)
        dv = np.clip(dr - r, 0.0, 1.0) - 0.5
        du = np.clip(dc - c, 0.0, 1.0) - 0.5
        h = self.heights
        base = r * 17 + c
        h_tl = h[chunk_idx, base].astype(np.float64)
        h_tr = h[chunk_idx, base + 1].astype(np.float64)
        h_c = h[chunk_idx, base + 9].astype(np.float64)
        h_bl = h[chunk_idx, base + 17].astype(np.float64)
        h_br = h[chunk_idx, base + 18].astype(np.float64)
        vertical = np.abs(dv) >= np.abs(du)       # north/south triangle, else west/east
        north = vertical & (dv < 0)
        south = vertical & ~north
        west = ~vertical & (du < 0)
        a = np.select([north, south, west], [h_tr - h_tl, h_br - h_bl, 2 * h_c - h_tl - h_bl], h_tr + h_br - 2 * h_c)
        b = np.select([north, south, west], [2 * h_c - h_tl - h_tr, h_bl + h_br - 2 * h_c, h_bl - h_tl], h_br - h_tr)
        return chunk_idx, h_c, a, b, du, dv

    def heights_at(self, chunk_idx, x, y) -> np.ndarray:
        """Absolute heights at world points (x, y) in chunks ``chunk_idx``, on each cell's 4-triangle fan.

        Arrays broadcast together; points outside the chunk are clamped to its edge.
        """
        chunk_idx, h_c, a, b, du, dv = self._fan(chunk_idx, x, y)
        return (h_c + a * du + b * dv + self.positions[chunk_idx, 2]).astype(np.float32)

    def height_at(self, chunk: int, x: float, y: float) -> float:
        return float(self.heights_at(chunk, x, y))

    def fan_normals(self, chunk_idx, x, y) -> np.ndarray:
        """(..., 3) unit normals (X north, Y west, Z up) of the fan triangle under each point."""
        _, _, a, b, _, _ = self._fan(chunk_idx, x, y)
        # h rises by a per cell eastwards (−Y) and by b per cell southwards (−X)
        n = np.stack([b / UNIT_SIZE, a / UNIT_SIZE, np.ones_like(a)], axis=-1)
        return (n / np.linalg.norm(n, axis=-1, keepdims=True)).astype(np.float32)

    def fan_normal_z(self, chunk_idx, x, y) -> np.ndarray:
        """Z of the fan triangle's unit normal at each point (3.3.5 rejects doodads below 0.4)."""
        _, _, a, b, _, _ = self._fan(chunk_idx, x, y)
        return (1.0 / np.sqrt(1.0 + (a * a + b * b) / (UNIT_SIZE * UNIT_SIZE))).astype(np.float32)

    def dominant_layer(self) -> np.ndarray:
        """(256, 64, 64) u1: the layer with the highest weight at each alpha texel."""
        w = self.alpha.astype(np.int16)
        w0 = 255 - w[:, 1:].sum(axis=1)
        w[:, 0] = np.clip(w0, 0, 255)
        exists = np.arange(4)[None, :, None, None] < self.n_layers[:, None, None, None]
        w = np.where(exists, w, -1)
        return w.argmax(axis=1).astype(np.uint8)

    def computed_doodad_mapping(self) -> np.ndarray:
        """(256, 8, 8) u1: per cell, the layer dominant on most of its 8×8 alpha texels.

        This is how map tools bake doodadMapping (noggit3 ``update_lod_texture_map``); use it for
        maps whose stored map is all zero. Ties go to the lower layer.
        """
        dom = self.dominant_layer().reshape(256, 8, 8, 8, 8)           # chunk, row, y, col, x
        counts = np.stack([(dom == k).sum(axis=(2, 4)) for k in range(4)], axis=-1)
        return counts.argmax(axis=-1).astype(np.uint8)

    def field_offsets(self) -> dict:
        """File offsets of the ground-effect fields of a tile read by :meth:`from_bytes` (in MCNK
        order, as the arrays): ``effect_id`` (256, 4) i8, the u32 effectId of each MCLY record (-1
        where the layer does not exist); ``doodad_mapping`` (256,) the first of its 16 header bytes;
        ``no_effect_doodad`` (256,) the first of its 8. Found through each chunk's own ``ofs*``
        fields, so they hold in any editor's layout. A tile built from arrays has none (ValueError)."""
        if self.mcnk_offsets is None or self.mcly_offsets is None:
            raise ValueError("this tile was not read from a file: it has no file offsets")
        hdr = np.asarray(self.mcnk_offsets, np.int64) + HEADER_SIZE
        exists = np.arange(4)[None, :] < np.asarray(self.n_layers)[:, None]
        mcly = np.asarray(self.mcly_offsets, np.int64)[:, None] + MCLY_DTYPE.itemsize * np.arange(4)[None, :]
        effect = np.where(exists & (mcly >= 0), mcly + MCLY_DTYPE.fields["effect_id"][1], -1)
        return {"effect_id": effect,
                "doodad_mapping": hdr + MCNK_HEADER_DTYPE.fields["doodad_mapping"][1],
                "no_effect_doodad": hdr + MCNK_HEADER_DTYPE.fields["no_effect_doodad"][1]}


# --- reader --------------------------------------------------------------------------------------
def unpack_doodad_mapping(raw: np.ndarray, msb_first: bool) -> np.ndarray:
    """(n, 16) MCNK header bytes -> (n, 8, 8) layer index of each cell: 2 bits a cell, LSB first as
    the client reads them (``msb_first``: as noggit3 writes them)."""
    if msb_first:
        shifts = (3 - (np.arange(8) & 3)) * 2
        byte = raw[:, np.arange(8)[:, None] * 2 + (np.arange(8)[None, :] >> 2)]
        return (byte >> shifts[None, None, :]) & 3
    rows = raw.view("<u2")
    return (rows[:, :, None] >> (2 * np.arange(8, dtype=np.uint16))[None, None, :]) & 3


def pack_doodad_mapping(mapping, msb_first: bool) -> np.ndarray:
    """(n, 8, 8) layer indices -> (n, 16) header bytes, the inverse of :func:`unpack_doodad_mapping`."""
    dm = np.asarray(mapping, np.uint8) & 3
    n = len(dm)
    if msb_first:
        shifts = (3 - (np.arange(8) & 3)) * 2
        return (dm << shifts[None, None, :]).reshape(n, 8, 2, 4).sum(axis=-1, dtype=np.uint8).reshape(n, 16)
    rows = (dm.astype("<u2") << (2 * np.arange(8, dtype=np.uint16))[None, None, :]).sum(axis=-1, dtype="<u2")
    return rows.astype("<u2").view(np.uint8).reshape(n, 16)


#: each sub-chunk's offset field in the MCNK header, in the order their spans are checked
_SUB_OFFSET_FIELDS = {b"MCVT": "ofs_height", b"MCNR": "ofs_normal", b"MCLY": "ofs_layer", b"MCRF": "ofs_refs",
                      b"MCSH": "ofs_shadow", b"MCAL": "ofs_alpha", b"MCLQ": "ofs_liquid",
                      b"MCSE": "ofs_snd_emitters", b"MCCV": "ofs_mccv"}
_NO_SPAN = np.int64(1) << 40     # where a chunk lacks a sub-chunk: sorts after every real one


@dataclass
class _Subchunks:
    """Where the 256 chunks' sub-chunks are: offset from the MCNK's magic, which chunks have each,
    and the payload size each declares (MCLQ: the whole chunk, as the header's size_liquid says)."""

    ofs: dict       # tag -> (256,) i8
    present: dict   # tag -> (256,) bool
    size: dict      # tag -> (256,) i8, or a fixed size

    def spans(self) -> tuple[np.ndarray, np.ndarray]:
        """(256, 9) start and end of every sub-chunk (header included), ``_NO_SPAN`` where absent."""
        tags = list(_SUB_OFFSET_FIELDS)
        extent = {t: self.size[t] if t == b"MCLQ" else self.size[t] + 8 for t in tags}
        st = np.stack([np.where(self.present[t], self.ofs[t], _NO_SPAN) for t in tags], axis=1)
        en = np.stack([np.where(self.present[t], self.ofs[t] + extent[t], _NO_SPAN) for t in tags], axis=1)
        return st, en


class _Reader:
    def __init__(self, data, path, big_alpha, msb_first):
        self.buf = bytes(data)
        self.arr = np.frombuffer(self.buf, np.uint8)
        self.path = path
        self.big_alpha = bool(big_alpha)
        self.msb_first = bool(msb_first)

    def fail(self, reason, offset=None, cls=FormatError):
        raise cls(reason, path=self.path, offset=offset)

    def gather(self, starts, size):
        """(n, size) u1 copy of ``size`` bytes at each start (already bounds-checked)."""
        if len(starts) == 0:
            return np.zeros((0, size), np.uint8)
        buf = self.buf
        # bytearray.join gives a writable buffer without a second copy
        return np.frombuffer(bytearray().join([buf[s:s + size] for s in starts.tolist()]), np.uint8).reshape(-1, size)

    def tile(self) -> AdtTile:
        buf, path = self.buf, self.path
        if len(buf) >= 4 and bytes(buf[:4]) != disk_tag(b"MVER"):   # say what it is, not a chunk size
            from wowgrass.formats.chunks import describe_magic

            self.fail(f"not an ADT file: it starts with {describe_magic(buf[:4])}, expected "
                      f"{disk_tag(b'MVER')!r} (an ADT begins with its MVER chunk)", 0)
        top, mcnk, before, after = {}, [], [], []
        for ch in iter_chunks(buf, path):
            if ch.tag == b"MCNK":
                mcnk.append((ch.offset, ch.size))
            elif ch.tag in _TOP_KNOWN and ch.tag not in top:
                top[ch.tag] = ch
            else:
                (after if mcnk else before).append((ch.tag, bytes(ch.payload)))
        if b"MVER" not in top:
            self.fail("no MVER chunk: not an ADT file", 0)
        mver = top[b"MVER"]
        if mver.size < 4:
            self.fail("MVER: expected 4 bytes", mver.offset, TruncatedError)
        (version,) = struct.unpack_from("<I", buf, mver.data_offset)
        if version != VERSION:
            self.fail(f"ADT version {version}, expected {VERSION}", mver.offset)
        for tag in (b"MHDR", b"MCIN", b"MTEX"):
            if tag not in top:
                self.fail(f"ADT has no {tag.decode()} chunk", len(buf), TruncatedError)
        if len(mcnk) != 256:
            self.fail(f"expected 256 MCNK chunks, found {len(mcnk)}", len(buf), TruncatedError)
        mhdr = top[b"MHDR"]
        if mhdr.size < MHDR_SIZE:
            self.fail(f"MHDR: expected {MHDR_SIZE} bytes, got {mhdr.size}", mhdr.offset, TruncatedError)
        mhdr_flags = struct.unpack_from("<I", buf, mhdr.data_offset)[0]
        mcin = top[b"MCIN"]
        if mcin.size != 256 * 16:
            self.fail(f"MCIN: expected 4096 bytes, got {mcin.size}", mcin.offset)
        mcin_arr = np.frombuffer(buf, MCIN_DTYPE, 256, mcin.data_offset).copy()

        textures = _strings(top[b"MTEX"].payload)
        models = self._names(top, b"MMDX", b"MMID")
        wmos = self._names(top, b"MWMO", b"MWID")
        mddf = self._records(top, b"MDDF", MDDF_DTYPE)
        modf = self._records(top, b"MODF", MODF_DTYPE)
        raw = {t: (bytes(top[t].payload) if t in top else None) for t in (b"MH2O", b"MFBO", b"MTXF")}

        tile = AdtTile(textures=textures, models=models, wmos=wmos, mddf=mddf, modf=modf,
                       big_alpha=self.big_alpha, doodad_map_msb_first=self.msb_first,
                       mh2o=raw[b"MH2O"], mh2o_offset=top[b"MH2O"].data_offset if b"MH2O" in top else None,
                       mh2o_beyond=_mh2o_beyond(buf, top.get(b"MH2O")),
                       mfbo=raw[b"MFBO"], mtxf=raw[b"MTXF"], mhdr_flags=mhdr_flags,
                       mcin=mcin_arr, extra_before=before, extra_after=after, version=version, path=path,
                       **self._mcnks(np.array(mcnk, np.int64)))
        return tile

    def _names(self, top, names_tag, ids_tag):
        if names_tag not in top:
            return []
        names = top[names_tag].payload
        if ids_tag not in top:
            return _strings(names)
        ids = top[ids_tag]
        if ids.size % 4:
            self.fail(f"{ids_tag.decode()}: size {ids.size} is not a multiple of 4", ids.offset)
        offsets = np.frombuffer(ids.payload, "<u4")
        base = top[names_tag].data_offset
        try:
            return [cstring(names, int(o), names_tag.decode(), self.path) for o in offsets]
        except FormatError as exc:
            raise FormatError(exc.reason, path=self.path, offset=base + (exc.offset or 0)) from None

    def _records(self, top, tag, dtype):
        if tag not in top:
            return np.zeros(0, dtype)
        ch = top[tag]
        if ch.size % dtype.itemsize:
            self.fail(f"{tag.decode()}: size {ch.size} is not a multiple of {dtype.itemsize}", ch.offset)
        return np.frombuffer(ch.payload, dtype).copy()

    def _locate(self, base, end, ofs, present, tag, min_size=0):
        """Validate sub-chunk ``tag`` at ``base + ofs`` for the chunks in ``present``; return declared sizes."""
        arr = self.arr
        where = base + ofs
        bad = present & ((ofs < HEADER_SIZE + MCNK_HEADER_SIZE) | (where + HEADER_SIZE > end))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            self.fail(f"MCNK {i}: {tag.decode()} offset {int(ofs[i])} outside the chunk "
                      f"({int(end[i] - base[i])} bytes)", int(base[i]))
        w = np.where(present, where, 0)
        hdr = arr[w[:, None] + np.arange(8)].view("<u4")
        magic, size = hdr[:, 0], hdr[:, 1].astype(np.int64)
        bad = present & (magic != _SUB_TAGS[tag])
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            found = arr[int(where[i]):int(where[i]) + 4].tobytes()[::-1]
            self.fail(f"MCNK {i}: expected {tag.decode()} at offset {int(ofs[i])}, found {found!r}", int(where[i]))
        if tag == b"MCLQ":
            return np.where(present, 0, 0)
        bad = present & ((where + HEADER_SIZE + np.maximum(size, min_size) > end) | (size < min_size))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            self.fail(f"MCNK {i}: {tag.decode()} needs {max(int(size[i]), min_size)} bytes, "
                      f"chunk has {int(end[i] - where[i] - HEADER_SIZE)} left", int(where[i]), TruncatedError)
        return np.where(present, size, 0)

    def _mcnks(self, mcnk):
        """The 256 MCNKs' fields as AdtTile keyword arguments, checked in the order a reader meets
        them: headers, sub-chunk places, their overlaps and gaps, then each payload."""
        base = mcnk[:, 0]
        end = base + HEADER_SIZE + mcnk[:, 1]
        hdr, n_layers, idx_xy = self._headers(base, mcnk[:, 1])
        sub = self._subchunks(base, end, hdr, n_layers)
        mcnr_pad, extra = self._gaps(base, end, sub)
        heights, normals = self._geometry(base, hdr, sub)
        layer_texture, layer_flags, layer_effect, layer_ofs = self._layer_table(base, sub, n_layers)
        enc = alpha_encodings(layer_flags, n_layers, self.big_alpha)
        fix = (hdr["flags"] & McnkFlags.DO_NOT_FIX_ALPHA_MAP) == 0
        alpha = self._alpha_maps(base, sub, enc, layer_ofs, fix)
        shadow = self._shadows(base, sub, fix)
        mccv, has_mccv = self._vertex_colours(base, sub)
        no_effect = np.unpackbits(hdr["no_effect_doodad"], axis=-1, bitorder="little").reshape(256, 8, 8)
        refs, liquids, sounds, liquid_offsets = self._raw_parts(base, sub)
        return dict(chunk_flags=hdr["flags"].copy(), index_xy=idx_xy, n_layers=n_layers,
                    area_id=hdr["area_id"].copy(), positions=hdr["position"].copy(), heights=heights,
                    normals=normals, layer_texture=layer_texture, layer_flags=layer_flags,
                    layer_effect=layer_effect, alpha=alpha, alpha_encoding=enc, shadow=shadow,
                    holes=hdr["holes"].copy(),
                    doodad_mapping=unpack_doodad_mapping(hdr["doodad_mapping"], self.msb_first).astype(np.uint8),
                    no_effect_doodad=no_effect.astype(bool), mccv=mccv, has_mccv=has_mccv, mcnk_headers=hdr,
                    mcnr_pad=mcnr_pad, refs=refs, liquids=liquids, liquid_offsets=liquid_offsets,
                    sound_emitters=sounds, extra_subchunks=extra, mcnk_offsets=base.astype(np.int64),
                    mcly_offsets=np.where(sub.present[b"MCLY"], base + sub.ofs[b"MCLY"] + 8, -1).astype(np.int64))

    def _headers(self, base, sizes):
        """The 256 MCNK headers (one structured array), their layer counts and (IndexX, IndexY)."""
        short = sizes < MCNK_HEADER_SIZE
        if short.any():
            i = int(np.flatnonzero(short)[0])
            self.fail(f"MCNK {i}: expected {MCNK_HEADER_SIZE} header bytes, got {int(sizes[i])}",
                      int(base[i]), TruncatedError)
        hdr = self.gather(base + HEADER_SIZE, MCNK_HEADER_SIZE).view(MCNK_HEADER_DTYPE)[:, 0]
        n_layers = hdr["n_layers"]
        if (n_layers > 4).any():
            i = int(np.flatnonzero(n_layers > 4)[0])
            self.fail(f"MCNK {i}: nLayers {int(n_layers[i])} > 4", int(base[i]) + 8 + 0x0C)
        idx_xy = np.stack([hdr["index_x"], hdr["index_y"]], axis=1)
        if (idx_xy > 15).any():
            i = int(np.flatnonzero((idx_xy > 15).any(axis=1))[0])
            self.fail(f"MCNK {i}: IndexX/IndexY {tuple(idx_xy[i].tolist())} outside 0..15", int(base[i]) + 12)
        return hdr, n_layers.astype(np.uint8), idx_xy

    def _subchunks(self, base, end, hdr, n_layers) -> _Subchunks:
        """Where each chunk's sub-chunks are (checked against the chunk's bounds and magic), which
        chunks have them, and the sizes they declare."""
        flags = hdr["flags"]
        ofs = {tag: hdr[name].astype(np.int64) for tag, name in _SUB_OFFSET_FIELDS.items()}
        ones = np.ones(256, bool)
        present = {b"MCVT": ones, b"MCNR": ones, b"MCLY": (ofs[b"MCLY"] != 0) | (n_layers > 0),
                   b"MCRF": ofs[b"MCRF"] != 0,
                   b"MCSH": ((flags & McnkFlags.HAS_MCSH) != 0) & (ofs[b"MCSH"] != 0),
                   b"MCAL": ofs[b"MCAL"] != 0, b"MCLQ": ofs[b"MCLQ"] != 0, b"MCSE": ofs[b"MCSE"] != 0}
        size = {b"MCVT": MCVT_SIZE, b"MCNR": MCNR_SIZE}
        self._locate(base, end, ofs[b"MCVT"], ones, b"MCVT", MCVT_SIZE)
        self._locate(base, end, ofs[b"MCNR"], ones, b"MCNR", MCNR_SIZE)
        size[b"MCLY"] = self._locate(base, end, ofs[b"MCLY"], present[b"MCLY"], b"MCLY")
        short = size[b"MCLY"] < n_layers.astype(np.int64) * 16
        if short.any():
            i = int(np.flatnonzero(short)[0])
            self.fail(f"MCNK {i}: MCLY holds {int(size[b'MCLY'][i])} bytes, {int(n_layers[i])} layers need "
                      f"{int(n_layers[i]) * 16}", int(base[i] + ofs[b'MCLY'][i]), TruncatedError)
        size[b"MCRF"] = self._locate(base, end, ofs[b"MCRF"], present[b"MCRF"], b"MCRF")
        size[b"MCSH"] = self._locate(base, end, ofs[b"MCSH"], present[b"MCSH"], b"MCSH", MCSH_SIZE)
        size[b"MCAL"] = self._locate(base, end, ofs[b"MCAL"], present[b"MCAL"], b"MCAL")
        self._locate(base, end, ofs[b"MCLQ"], present[b"MCLQ"], b"MCLQ")
        # MCLQ's own size field is 0 in the client's files: the header's size_liquid counts
        size[b"MCLQ"] = np.where(present[b"MCLQ"], np.maximum(hdr["size_liquid"].astype(np.int64), HEADER_SIZE), 0)
        bad = present[b"MCLQ"] & (base + ofs[b"MCLQ"] + size[b"MCLQ"] > end)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            self.fail(f"MCNK {i}: MCLQ of {int(size[b'MCLQ'][i])} bytes runs past the chunk",
                      int(base[i] + ofs[b'MCLQ'][i]), TruncatedError)
        size[b"MCSE"] = self._locate(base, end, ofs[b"MCSE"], present[b"MCSE"], b"MCSE")
        present[b"MCCV"] = self._mccv_present(base, end, flags, ofs[b"MCCV"])
        size[b"MCCV"] = self._locate(base, end, ofs[b"MCCV"], present[b"MCCV"], b"MCCV", MCCV_SIZE)
        return _Subchunks(ofs, present, size)

    def _mccv_present(self, base, end, flags, ofs):
        present = ofs != 0
        if not (flags & McnkFlags.HAS_MCCV).any():
            # before 3.x the field is unused: only take it when it really points at an MCCV
            w = np.where(present & (base + ofs + 8 <= end) & (ofs >= 136), base + ofs, -1)
            ok = w >= 0
            magic = self.arr[np.where(ok, w, 0)[:, None] + np.arange(4)].view("<u4")[:, 0]
            present &= ok & (magic == _SUB_TAGS[b"MCCV"])
        return present

    def _gaps(self, base, end, sub: _Subchunks):
        """Refuse overlapping sub-chunks; keep MCNR's padding (up to 13 bytes before the next
        sub-chunk) and unknown sub-chunks found in the gaps (``extra_subchunks``)."""
        st, en = sub.spans()
        big = _NO_SPAN
        order = np.argsort(st, axis=1, kind="stable")
        st_s = np.take_along_axis(st, order, 1)
        en_s = np.take_along_axis(en, order, 1)
        overlap = (en_s[:, :-1] > st_s[:, 1:]) & (st_s[:, 1:] < big)
        if overlap.any():
            i = int(np.flatnonzero(overlap.any(axis=1))[0])
            self.fail(f"MCNK {i}: sub-chunks overlap (offsets {sorted(int(x) for x in st[i] if x < big)})",
                      int(base[i]))
        ofs_normal = sub.ofs[b"MCNR"]
        nr_end = ofs_normal + 8 + MCNR_SIZE
        nxt = np.where(st > ofs_normal[:, None], st, big).min(axis=1)
        nxt = np.minimum(nxt, end - base)
        has_pad = nxt - nr_end >= MCNR_PAD
        mcnr_pad = np.zeros((256, MCNR_PAD), np.uint8)
        if has_pad.any():
            mcnr_pad[has_pad] = self.gather((base + nr_end)[has_pad], MCNR_PAD)
        covered = np.where(st < big, en - st, 0).sum(axis=1) + 136 + np.where(has_pad, MCNR_PAD, 0)
        extra = {}
        for i in np.flatnonzero(covered < end - base).tolist():
            pad_end = int(nr_end[i]) + (MCNR_PAD if has_pad[i] else 0)
            extra_i = self._extra_subchunks(i, int(base[i]), int(end[i]), st[i], en[i], big,
                                            (int(nr_end[i]), pad_end))
            if extra_i:
                extra[i] = extra_i
        return mcnr_pad, extra

    def _geometry(self, base, hdr, sub: _Subchunks):
        """MCVT heights (256, 145) and MCNR normals (256, 145, 3)."""
        ofs_height = sub.ofs[b"MCVT"]
        heights = self.gather(base + ofs_height + 8, MCVT_SIZE).view("<f4")
        # Non-finite geometry is corrupt data (the client cannot place or draw it): refuse the tile
        # here so every accessor can rely on finite numbers.
        bad_pos = ~np.isfinite(hdr["position"]).all(axis=1)
        bad_h = ~np.isfinite(heights).all(axis=1)
        if bad_pos.any() or bad_h.any():
            i = int(np.flatnonzero(bad_pos | bad_h)[0])
            if bad_pos[i]:
                k = int(np.flatnonzero(~np.isfinite(hdr["position"][i]))[0])
                self.fail(f"MCNK {i}: position {'XYZ'[k]} is {float(hdr['position'][i, k])}",
                          int(base[i]) + HEADER_SIZE + MCNK_HEADER_DTYPE.fields["position"][1] + 4 * k)
            k = int(np.flatnonzero(~np.isfinite(heights[i]))[0])
            self.fail(f"MCNK {i}: MCVT height {k} is {float(heights[i, k])}",
                      int(base[i] + ofs_height[i]) + 8 + 4 * k)
        normals = self.gather(base + sub.ofs[b"MCNR"] + 8, MCNR_SIZE).view(np.int8).reshape(256, 145, 3)
        return heights, normals

    def _layer_table(self, base, sub: _Subchunks, n_layers):
        """MCLY: (256, 4) texture ids (-1 past nLayers), flags, effect ids and offsets into MCAL."""
        layer_rows = np.zeros((256, 4), MCLY_DTYPE)
        if sub.present[b"MCLY"].any():
            layer_rows = self._layers(base + sub.ofs[b"MCLY"] + 8, n_layers)
        exists = np.arange(4)[None, :] < n_layers[:, None]
        layer_texture = np.where(exists, layer_rows["texture_id"].astype(np.int64), -1).astype("<i4")
        layer_flags = np.where(exists, layer_rows["flags"], 0).astype("<u4")
        layer_effect = np.where(exists, layer_rows["effect_id"], 0).astype("<u4")
        return layer_texture, layer_flags, layer_effect, layer_rows["offset_in_mcal"].astype(np.int64)

    def _alpha_maps(self, base, sub: _Subchunks, enc, layer_ofs, fix):
        """MCAL: (256, 4, 64, 64) alpha of every layer, decoded as ``enc`` says."""
        alpha = np.zeros((256, 4, 64, 64), np.uint8)
        s_alpha = sub.size[b"MCAL"]
        need_alpha = (enc > 0).any(axis=1) & ~sub.present[b"MCAL"]
        if need_alpha.any():
            i = int(np.flatnonzero(need_alpha)[0])
            self.fail(f"MCNK {i}: layers use alpha maps but there is no MCAL", int(base[i]))
        mcal_data = base + sub.ofs[b"MCAL"] + 8
        for code, size in ((ALPHA_4BIT, ALPHA_4BIT_SIZE), (ALPHA_8BIT, ALPHA_8BIT_SIZE)):
            ci, li = np.nonzero(enc == code)
            if ci.size == 0:
                continue
            lo = layer_ofs[ci, li]
            bad = lo + size > s_alpha[ci]
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                self.fail(f"MCNK {int(ci[k])} layer {int(li[k])}: alpha map at MCAL+{int(lo[k])} needs {size} "
                          f"bytes, MCAL holds {int(s_alpha[ci[k]])}", int(mcal_data[ci[k]] + lo[k]), TruncatedError)
            raw = self.gather(mcal_data[ci] + lo, size)
            if code == ALPHA_4BIT:
                alpha[ci, li] = decode_alpha_4bit(raw, fix[ci])
            else:
                alpha[ci, li] = raw.reshape(-1, 64, 64)
        ci, li = np.nonzero(enc == ALPHA_COMPRESSED)
        for c, layer in zip(ci.tolist(), li.tolist()):
            lo = int(layer_ofs[c, layer])
            start, stop = int(mcal_data[c]) + lo, int(mcal_data[c] + s_alpha[c])
            if lo >= s_alpha[c]:
                self.fail(f"MCNK {c} layer {layer}: alpha map offset {lo} past MCAL ({int(s_alpha[c])} bytes)",
                          start, TruncatedError)
            alpha[c, layer] = decode_alpha_rle(self.buf, start, stop, self.path)[0].reshape(64, 64)
        return alpha

    def _shadows(self, base, sub: _Subchunks, fix):
        """MCSH: (256, 64, 64) bool; the 63x63 fix as for 4-bit alpha."""
        shadow = np.zeros((256, 64, 64), bool)
        present = sub.present[b"MCSH"]
        if present.any():
            sel = np.flatnonzero(present)
            bits = np.unpackbits(self.gather(base[sel] + sub.ofs[b"MCSH"][sel] + 8, MCSH_SIZE).reshape(-1, 64, 8),
                                 axis=-1, bitorder="little").astype(bool)
            f = fix[sel]
            bits[f, :, 63] = bits[f, :, 62]
            bits[f, 63, :] = bits[f, 62, :]
            shadow[sel] = bits
        return shadow

    def _vertex_colours(self, base, sub: _Subchunks):
        """MCCV: (256, 145, 4) colours (127 grey where a chunk has none) and which chunks have them;
        (None, None) where no chunk has any."""
        present = sub.present[b"MCCV"]
        if not present.any():
            return None, None
        mccv = np.full((256, 145, 4), 127, np.uint8)
        sel = np.flatnonzero(present)
        mccv[sel] = self.gather(base[sel] + sub.ofs[b"MCCV"][sel] + 8, MCCV_SIZE).reshape(-1, 145, 4)
        return mccv, present.copy()

    def _raw_parts(self, base, sub: _Subchunks):
        """What the tile keeps as read: MCRF references, MCLQ and MCSE payloads, MCLQ file offsets."""
        buf = self.buf
        refs, liquids, sounds = [], [], []
        r0 = (base + sub.ofs[b"MCRF"] + 8).tolist()
        l0 = (base + sub.ofs[b"MCLQ"] + 8).tolist()
        s0 = (base + sub.ofs[b"MCSE"] + 8).tolist()
        p_refs, p_liquid, p_snd = sub.present[b"MCRF"], sub.present[b"MCLQ"], sub.present[b"MCSE"]
        s_refs, s_liquid, s_snd = sub.size[b"MCRF"], sub.size[b"MCLQ"], sub.size[b"MCSE"]
        for i in range(256):
            refs.append(np.frombuffer(buf, "<u4", int(s_refs[i]) // 4, r0[i]) if p_refs[i] else np.zeros(0, "<u4"))
            liquids.append(buf[l0[i]:l0[i] + int(s_liquid[i]) - 8] if p_liquid[i] else None)
            sounds.append(buf[s0[i]:s0[i] + int(s_snd[i])] if p_snd[i] else None)
        return refs, liquids, sounds, np.asarray(l0, np.int64)

    def _layers(self, starts, n_layers):
        """(256, 4) MCLY records; slots past nLayers are zero (their bytes are not read)."""
        out = np.zeros((256, 4), MCLY_DTYPE)
        for n in range(1, 5):
            sel = np.flatnonzero(n_layers == n)
            if sel.size:
                out[sel, :n] = self.gather(starts[sel], 16 * n).view(MCLY_DTYPE)
        return out

    def _extra_subchunks(self, i, base, end, st, en, big, pad_span):
        """Unknown sub-chunks in the gaps between the known ones (rare: slow path)."""
        spans = sorted([(int(a), int(b)) for a, b in zip(st, en) if a < big] + [pad_span])
        gaps, cur = [], HEADER_SIZE + MCNK_HEADER_SIZE
        for s, e in spans:
            if s > cur:
                gaps.append((cur, s))
            cur = max(cur, e)
        if end - base > cur:
            gaps.append((cur, end - base))
        out = []
        for s, e in gaps:
            try:
                out += [(ch.tag, bytes(ch.payload))
                        for ch in iter_chunks(self.buf, self.path, start=base + s, end=base + e)]
            except FormatError:
                warnings.warn(f"{self.path or '<bytes>'}: MCNK {i}: {e - s} unreadable bytes at offset {s} dropped",
                              stacklevel=4)
        return out


def _mh2o_beyond(buf, chunk) -> bytes | None:
    """The file's bytes past an MH2O chunk that its offsets reach (a map editor's tiles have them):
    the client reads there, so :func:`~wowgrass.formats.liquid.read_mh2o` does too."""
    if chunk is None:
        return None
    size = len(chunk.payload)
    reach = mh2o_reach(memoryview(buf)[chunk.data_offset:], size)
    return bytes(buf[chunk.data_offset + size:chunk.data_offset + reach]) if reach > size else None


def _strings(payload) -> list[str]:
    raw = bytes(payload)
    if not raw:
        return []
    parts = raw.split(b"\0")
    if parts[-1] == b"":
        parts.pop()
    return [p.decode("utf-8", "replace") for p in parts]


# --- writer --------------------------------------------------------------------------------------
def _string_block(names) -> tuple[bytes, np.ndarray]:
    blob, offsets = bytearray(), []
    for name in names:
        offsets.append(len(blob))
        blob += name.encode("utf-8") + b"\0"
    return bytes(blob), np.array(offsets, "<u4")


def write_adt(tile: AdtTile) -> bytes:
    """Serialize ``tile`` as an ADT v18 file; offsets, sizes and counts are recomputed.

    The alpha encoding of every layer follows from its MCLY flags and ``tile.big_alpha`` exactly as
    the reader decides it (see :func:`alpha_encodings`).
    """
    n_layers, layer_flags, enc = _layer_encodings(tile)
    blobs = _alpha_blobs(np.asarray(tile.alpha, np.uint8), enc)
    mcnks = _McnkWriter(tile, n_layers, layer_flags, blobs)
    return _tile_bytes(tile, [mcnks.chunk(i) for i in range(256)])


def _layer_encodings(tile: AdtTile):
    """nLayers, MCLY flags and the alpha encoding they give each layer (checked against the tile's)."""
    n_layers = np.asarray(tile.n_layers, np.int64)
    if (n_layers > 4).any() or (n_layers < 0).any():
        raise FormatError("nLayers must be 0..4")
    layer_flags = np.asarray(tile.layer_flags, "<u4")
    enc = alpha_encodings(layer_flags, n_layers, tile.big_alpha)
    given = np.asarray(tile.alpha_encoding)
    if given.shape == enc.shape and (given != enc).any():
        i, j = (int(v[0]) for v in np.nonzero(given != enc))
        raise ValueError(f"chunk {i} layer {j}: alpha_encoding {int(given[i, j])} disagrees with MCLY flags "
                         f"0x{int(layer_flags[i, j]):X} and big_alpha={tile.big_alpha} (expected {int(enc[i, j])})")
    return n_layers, layer_flags, enc


def _alpha_blobs(alpha, enc) -> dict:
    """(chunk, layer) -> the layer's MCAL bytes in its encoding (the 4-bit ones packed at once)."""
    blobs = {}
    ci, li = np.nonzero(enc == ALPHA_4BIT)
    if ci.size:
        packed = encode_alpha_4bit(alpha[ci, li])
        blobs.update({(c, k): packed[n].tobytes() for n, (c, k) in enumerate(zip(ci.tolist(), li.tolist()))})
    for c, k in zip(*(a.tolist() for a in np.nonzero(enc == ALPHA_8BIT))):
        blobs[(c, k)] = alpha[c, k].tobytes()
    for c, k in zip(*(a.tolist() for a in np.nonzero(enc == ALPHA_COMPRESSED))):
        blobs[(c, k)] = encode_alpha_rle(alpha[c, k])
    return blobs


class _McnkWriter:
    """The 256 MCNK chunks of a tile: the headers' fields from the tile's arrays (spare fields as
    read), then each chunk's sub-chunks laid out behind its header (:meth:`chunk`)."""

    def __init__(self, tile: AdtTile, n_layers, layer_flags, blobs):
        self.tile, self.n_layers, self.layer_flags, self.blobs = tile, n_layers, layer_flags, blobs
        hdr = np.zeros(256, MCNK_HEADER_DTYPE) if tile.mcnk_headers is None else np.array(tile.mcnk_headers).copy()
        self.flags = np.asarray(tile.chunk_flags, "<u4").copy()
        self.has_mccv = (np.zeros(256, bool) if tile.mccv is None else
                         np.asarray(tile.has_mccv if tile.has_mccv is not None else np.ones(256, bool), bool))
        hdr["flags"] = self.flags
        hdr["index_x"] = np.asarray(tile.index_xy)[:, 0]
        hdr["index_y"] = np.asarray(tile.index_xy)[:, 1]
        hdr["n_layers"] = n_layers
        hdr["area_id"] = tile.area_id
        hdr["holes"] = tile.holes
        hdr["position"] = tile.positions
        hdr["doodad_mapping"] = pack_doodad_mapping(tile.doodad_mapping, tile.doodad_map_msb_first)
        hdr["no_effect_doodad"] = np.packbits(np.asarray(tile.no_effect_doodad, bool), axis=-1,
                                              bitorder="little").reshape(256, 8)
        self.hdr = hdr
        self.shadow = np.packbits(np.asarray(tile.shadow, bool), axis=-1, bitorder="little").reshape(256, MCSH_SIZE)
        self.heights = np.ascontiguousarray(tile.heights, "<f4").reshape(256, 145)
        self.normals = np.ascontiguousarray(tile.normals, np.int8).reshape(256, 145 * 3)
        self.pad = np.ascontiguousarray(tile.mcnr_pad, np.uint8).reshape(256, MCNR_PAD)
        self.mccv = None if tile.mccv is None else np.ascontiguousarray(tile.mccv, np.uint8).reshape(256, MCCV_SIZE)
        self.layer_texture = np.asarray(tile.layer_texture)
        self.layer_effect = np.asarray(tile.layer_effect, "<u4")

    def _layers(self, i: int) -> tuple[bytes, bytearray]:
        """Chunk ``i``'s MCLY records and its MCAL (each layer's alpha map where it has one)."""
        nl = int(self.n_layers[i])
        mcly = np.zeros(nl, MCLY_DTYPE)
        mcly["texture_id"] = self.layer_texture[i, :nl].astype(np.int64) & 0xFFFFFFFF
        mcly["flags"] = self.layer_flags[i, :nl]
        mcly["effect_id"] = self.layer_effect[i, :nl]
        mcal = bytearray()
        for k in range(nl):
            blob = self.blobs.get((i, k))
            if blob is not None:
                mcly["offset_in_mcal"][k] = len(mcal)
                mcal += blob
        return mcly.tobytes(), mcal

    def chunk(self, i: int) -> bytes:
        """MCNK ``i``'s payload: its header (offsets and sizes of what follows) and sub-chunks."""
        tile, h = self.tile, self.hdr[i]
        parts, pos = [], HEADER_SIZE + MCNK_HEADER_SIZE

        def add(tag, payload, declared=None):
            nonlocal pos
            data = write_chunk(tag, payload, size=declared)
            parts.append(data)
            start = pos
            pos += len(data)
            return start

        h["ofs_height"] = add(b"MCVT", self.heights[i].tobytes())
        h["ofs_normal"] = add(b"MCNR", self.normals[i].tobytes())
        parts.append(self.pad[i].tobytes())
        pos += MCNR_PAD
        mcly, mcal = self._layers(i)
        h["ofs_layer"] = add(b"MCLY", mcly)
        refs = np.asarray(tile.refs[i], "<u4")
        h["ofs_refs"] = add(b"MCRF", refs.tobytes())
        h["n_doodad_refs"] = min(int(h["n_doodad_refs"]), refs.size)
        h["n_map_obj_refs"] = refs.size - int(h["n_doodad_refs"])
        if self.flags[i] & McnkFlags.HAS_MCSH:
            h["ofs_shadow"] = add(b"MCSH", self.shadow[i].tobytes())
            h["size_shadow"] = MCSH_SIZE
        else:
            h["ofs_shadow"] = h["size_shadow"] = 0
        h["ofs_alpha"] = add(b"MCAL", mcal)
        h["size_alpha"] = len(mcal) + HEADER_SIZE
        liquid = tile.liquids[i]
        if liquid is not None:
            h["ofs_liquid"] = add(b"MCLQ", liquid, declared=0)   # the client's files declare 0
            h["size_liquid"] = len(liquid) + HEADER_SIZE
        else:
            h["ofs_liquid"] = h["size_liquid"] = 0
        snd = tile.sound_emitters[i]
        h["ofs_snd_emitters"] = add(b"MCSE", snd) if snd is not None else 0
        h["ofs_mccv"] = add(b"MCCV", self.mccv[i].tobytes()) if self.has_mccv[i] else 0
        for tag, payload in tile.extra_subchunks.get(i, ()):
            add(tag, payload)
        return b"".join([h.tobytes()] + parts)


def _tile_bytes(tile: AdtTile, chunks: list[bytes]) -> bytes:
    """The file: MVER, MHDR (offsets of the top-level chunks), MCIN (where each MCNK is), the name
    and placement chunks, the MCNKs, then MFBO/MTXF and unknown chunks where they were."""
    before = [write_chunk(b"MVER", struct.pack("<I", tile.version))]
    mhdr_pos = len(before[0])
    mhdr_data = mhdr_pos + HEADER_SIZE
    pos = mhdr_data + MHDR_SIZE
    ofs = dict.fromkeys(MHDR_FIELDS[1:], 0)
    body = []

    def put(tag, payload, key=None):
        nonlocal pos
        data = write_chunk(tag, payload)
        if key:
            ofs[key] = pos - mhdr_data
        body.append(data)
        pos += len(data)

    mcin_pos = pos
    put(b"MCIN", b"\0" * 4096, "mcin")
    mmdx, mmid = _string_block(tile.models)
    mwmo, mwid = _string_block(tile.wmos)
    put(b"MTEX", _string_block(tile.textures)[0], "mtex")
    put(b"MMDX", mmdx, "mmdx")
    put(b"MMID", mmid.tobytes(), "mmid")
    put(b"MWMO", mwmo, "mwmo")
    put(b"MWID", mwid.tobytes(), "mwid")
    put(b"MDDF", np.ascontiguousarray(tile.mddf, MDDF_DTYPE).tobytes(), "mddf")
    put(b"MODF", np.ascontiguousarray(tile.modf, MODF_DTYPE).tobytes(), "modf")
    if tile.mh2o is not None:
        put(b"MH2O", tile.mh2o, "mh2o")
    for tag, payload in tile.extra_before:
        put(tag, payload)
    mcin = np.zeros(256, MCIN_DTYPE) if tile.mcin is None else np.array(tile.mcin, MCIN_DTYPE).copy()
    for i, data in enumerate(chunks):
        mcin["offset"][i] = pos
        mcin["size"][i] = len(data)
        put(b"MCNK", data)
    if tile.mfbo is not None:
        put(b"MFBO", tile.mfbo, "mfbo")
    if tile.mtxf is not None:
        put(b"MTXF", tile.mtxf, "mtxf")
    for tag, payload in tile.extra_after:
        put(tag, payload)
    # MCIN stores the size of the whole chunk including its header
    mcin["size"] += HEADER_SIZE
    body[0] = write_chunk(b"MCIN", mcin.tobytes())
    assert mcin_pos == mhdr_data + MHDR_SIZE
    mhdr_flags = (tile.mhdr_flags | 1) if tile.mfbo is not None else (tile.mhdr_flags & ~1)
    mhdr = struct.pack("<12I", mhdr_flags, *(ofs[k] for k in MHDR_FIELDS[1:])) + b"\0" * 16
    return b"".join(before + [write_chunk(b"MHDR", mhdr)] + body)


def sniff(prefix: bytes) -> bool:
    """True for an ADT v18 prefix (MVER then MHDR)."""
    return len(prefix) >= 16 and prefix[:4] == disk_tag(b"MVER") and prefix[12:16] == disk_tag(b"MHDR")
