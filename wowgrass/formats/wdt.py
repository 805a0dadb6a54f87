"""WDT v18 (1.12 – 3.3.5): the map's tile table and its global flags.

``World\\Maps\\<Map>\\<Map>.wdt`` holds MVER (18), MPHD (32 bytes: flags + 7 more u32) and MAIN
(64×64 entries of ``u32 flags; u32 asyncId``, row-major ``[row][col]``; flag 0x1 = the ADT
``<Map>_<col>_<row>.adt`` exists), then optional MWMO/MODF for WMO-only maps, kept as raw bytes.
MPHD flag 0x4 (big alpha) — or 0x80 (height texturing, later clients) — makes every ADT of the map
use 8-bit (optionally RLE-compressed) alpha maps instead of 4-bit ones.
See https://wowdev.wiki/WDT.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from enum import IntFlag

import numpy as np

from wowgrass.errors import FormatError, TruncatedError
from wowgrass.formats.chunks import disk_tag, iter_chunks, write_chunk

VERSION = 18
MAIN_DTYPE = np.dtype([("flags", "<u4"), ("async_id", "<u4")])
assert MAIN_DTYPE.itemsize == 8
MAIN_SIZE = 64 * 64 * MAIN_DTYPE.itemsize
MPHD_SIZE = 32


class MphdFlags(IntFlag):
    WMO_ONLY = 0x1
    VERTEX_COLOURS = 0x2      # ADTs carry MCCV
    BIG_ALPHA = 0x4           # 8-bit MCAL
    DOODADREFS_SORTED = 0x8
    MCLV = 0x10
    UPSIDE_DOWN = 0x20
    HEIGHT_TEXTURING = 0x80   # later clients; also implies 8-bit alpha


@dataclass(eq=False)
class WdtFile:
    """A WDT's flags and tile table. ``main`` is a (64, 64) bool array indexed ``[row][col]``."""

    flags: int = 0
    main: np.ndarray = field(default_factory=lambda: np.zeros((64, 64), bool))
    main_flags: np.ndarray | None = None          # (64, 64) u4 raw MAIN flags (None: 1 where main)
    mphd_rest: bytes = b"\0" * 28                 # MPHD after the flags word
    extra_chunks: list = field(default_factory=list)   # [(tag, payload)] after MAIN (MWMO, MODF, ...)
    version: int = VERSION
    path: str | None = None

    def __post_init__(self):
        self.main = np.asarray(self.main, bool)
        if self.main.shape != (64, 64):
            raise ValueError(f"main must be (64, 64), got {self.main.shape}")
        if self.main_flags is None:
            self.main_flags = self.main.astype("<u4")

    @property
    def big_alpha(self) -> bool:
        return bool(self.flags & (MphdFlags.BIG_ALPHA | MphdFlags.HEIGHT_TEXTURING))

    @property
    def has_vertex_colours(self) -> bool:
        return bool(self.flags & MphdFlags.VERTEX_COLOURS)

    def tiles(self) -> list[tuple[int, int]]:
        """Present tiles as ``(col, row)`` pairs (the order of the ADT file name)."""
        rows, cols = np.nonzero(self.main)
        return [(int(c), int(r)) for r, c in zip(rows, cols)]

    def has_tile(self, col: int, row: int) -> bool:
        return bool(self.main[row, col])

    @classmethod
    def from_bytes(cls, data, path: str | None = None) -> "WdtFile":
        chunks = {}
        extra = []
        for ch in iter_chunks(data, path):
            if ch.tag in (b"MVER", b"MPHD", b"MAIN") and ch.tag not in chunks:
                chunks[ch.tag] = ch
            else:
                extra.append((ch.tag, bytes(ch.payload)))
        for tag in (b"MVER", b"MPHD", b"MAIN"):
            if tag not in chunks:
                raise TruncatedError(f"WDT has no {tag.decode()} chunk", path=path, offset=len(data))
        mver = chunks[b"MVER"]
        if mver.size < 4:
            raise TruncatedError("MVER: expected 4 bytes", path=path, offset=mver.offset)
        (version,) = struct.unpack_from("<I", mver.payload)
        if version != VERSION:
            raise FormatError(f"WDT version {version}, expected {VERSION}", path=path, offset=mver.offset)
        mphd = chunks[b"MPHD"]
        if mphd.size < 4:
            raise TruncatedError(f"MPHD: expected {MPHD_SIZE} bytes, got {mphd.size}", path=path, offset=mphd.offset)
        (flags,) = struct.unpack_from("<I", mphd.payload)
        main = chunks[b"MAIN"]
        if main.size != MAIN_SIZE:
            raise FormatError(f"MAIN: expected {MAIN_SIZE} bytes, got {main.size}", path=path, offset=main.offset)
        entries = np.frombuffer(main.payload, MAIN_DTYPE).reshape(64, 64)
        main_flags = entries["flags"].copy()
        return cls(flags=flags, main=(main_flags & 1).astype(bool), main_flags=main_flags,
                   mphd_rest=bytes(mphd.payload[4:]), extra_chunks=extra, version=version, path=path)


def write_wdt(wdt: WdtFile | np.ndarray, *, flags: int | None = None) -> bytes:
    """Serialize a :class:`WdtFile` (or a (64, 64) bool ``[row][col]`` tile table plus ``flags``)."""
    if not isinstance(wdt, WdtFile):
        wdt = WdtFile(flags=flags or 0, main=wdt)
    elif flags is not None:
        wdt = WdtFile(flags=flags, main=wdt.main, main_flags=wdt.main_flags, mphd_rest=wdt.mphd_rest,
                      extra_chunks=wdt.extra_chunks, version=wdt.version)
    main_flags = np.asarray(wdt.main_flags, "<u4").copy()
    main_flags = np.where(wdt.main, main_flags | 1, main_flags & ~np.uint32(1)).astype("<u4")
    entries = np.zeros((64, 64), MAIN_DTYPE)
    entries["flags"] = main_flags
    rest = bytes(wdt.mphd_rest).ljust(MPHD_SIZE - 4, b"\0")
    out = [write_chunk(b"MVER", struct.pack("<I", wdt.version)),
           write_chunk(b"MPHD", struct.pack("<I", wdt.flags) + rest),
           write_chunk(b"MAIN", entries.tobytes())]
    out += [write_chunk(tag, payload) for tag, payload in wdt.extra_chunks]
    return b"".join(out)


def sniff(prefix: bytes) -> bool:
    return len(prefix) >= 16 and prefix[:4] == disk_tag(b"MVER") and prefix[12:16] == disk_tag(b"MPHD")
