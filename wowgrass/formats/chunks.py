"""IFF-style chunk container shared by WDT and ADT (1.12 – 3.3.5).

Every chunk is ``u32 magic; u32 size; u8 data[size]``. The magic is a FourCC written as a
little-endian ``uint32`` of its ASCII name, so on disk the bytes are reversed (``MVER`` is stored as
``REVM``). This module is the only place that reversal happens: callers always use reading-order
tags (``b"MVER"``). It knows nothing about payloads. See https://wowdev.wiki/ADT/v18.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import NamedTuple

from wowgrass.errors import FormatError, TruncatedError

HEADER_SIZE = 8
_HEADER = struct.Struct("<4sI")


class Chunk(NamedTuple):
    tag: bytes          # reading order, e.g. b"MCNK"
    offset: int         # offset of the 8-byte chunk header in the buffer
    size: int           # declared payload size
    payload: memoryview

    @property
    def data_offset(self) -> int:
        return self.offset + HEADER_SIZE

    @property
    def end(self) -> int:
        return self.offset + HEADER_SIZE + self.size


#: what a file's first bytes say it is, for "expected X, found Y" messages
KNOWN_MAGICS = {b"\x89PNG": "a PNG image", b"\xff\xd8\xff": "a JPEG image", b"BLP2": "a BLP2 texture",
                b"BLP1": "a BLP1 texture", b"MD20": "an M2 model", b"SKIN": "an M2 .skin file",
                b"WDBC": "a DBC table", b"MPQ\x1a": "an MPQ archive", b"PK\x03\x04": "a ZIP archive",
                b"glTF": "a glTF binary", b"WGB": "a wowgrass bundle"}


def describe_magic(prefix: bytes) -> str:
    """``b'\\x89PNG' (a PNG image)``: a file's first four bytes and, when known, what they make it."""
    prefix = bytes(prefix[:4])
    what = next((v for k, v in KNOWN_MAGICS.items() if prefix.startswith(k)), None)
    return f"{prefix!r}" + (f" ({what})" if what else "")


def disk_tag(tag: bytes) -> bytes:
    """The four bytes a reading-order ``tag`` occupies on disk."""
    if len(tag) != 4:
        raise ValueError(f"chunk tag must be 4 bytes, got {tag!r}")
    return bytes(tag[::-1])


def tag_from_disk(raw: bytes) -> bytes:
    """The reading-order tag of four bytes found on disk."""
    return bytes(raw[::-1])


def tag_u32(tag: bytes) -> int:
    """The ``<u4`` value a chunk header holds for ``tag`` (for vectorized magic checks)."""
    return int.from_bytes(disk_tag(tag), "little")


def read_header(buf, offset: int, path: str | None = None, *, limit: int | None = None) -> tuple[bytes, int]:
    """``(tag, size)`` of the chunk at ``offset``; its payload must end by ``limit`` (default: buffer end)."""
    end = len(buf) if limit is None else limit
    if offset < 0 or offset + HEADER_SIZE > end:
        raise TruncatedError(
            f"chunk header: needs 8 bytes at offset {offset}, only {max(0, end - offset)} left",
            path=path, offset=offset)
    raw, size = _HEADER.unpack_from(buf, offset)
    tag = tag_from_disk(raw)
    if offset + HEADER_SIZE + size > end:
        raise TruncatedError(
            f"chunk {tag!r}: declares {size} bytes, only {end - offset - HEADER_SIZE} left",
            path=path, offset=offset)
    return tag, size


def iter_chunks(buf, path: str | None = None, *, start: int = 0, end: int | None = None) -> Iterator[Chunk]:
    """Walk the chunks of ``buf[start:end]`` in order, checking every size against the bytes present.

    Always steps to the declared end of each chunk, so a payload handler can never desync the walk.
    Fewer than 8 trailing bytes raise :class:`TruncatedError`.
    """
    mv = memoryview(buf)
    if mv.ndim != 1 or mv.itemsize != 1:
        mv = mv.cast("B")
    end = len(mv) if end is None else end
    if not 0 <= start <= end <= len(mv):
        raise FormatError(f"chunk range {start}..{end} outside the buffer ({len(mv)} bytes)", path=path, offset=start)
    off = start
    while off < end:
        tag, size = read_header(mv, off, path, limit=end)
        yield Chunk(tag, off, size, mv[off + HEADER_SIZE: off + HEADER_SIZE + size])
        off += HEADER_SIZE + size


def read_chunks(buf, path: str | None = None, **kw) -> list[Chunk]:
    return list(iter_chunks(buf, path, **kw))


def write_chunk(tag: bytes, payload=b"", *, size: int | None = None) -> bytes:
    """One chunk: header + payload. ``size`` overrides the declared size (MCLQ writes 0)."""
    payload = bytes(payload)
    return _HEADER.pack(disk_tag(tag), len(payload) if size is None else size) + payload


def sniff(prefix: bytes) -> bool:
    """True when ``prefix`` starts with a reversed ``MVER`` chunk (a WDT or ADT)."""
    return len(prefix) >= 4 and prefix[:4] == disk_tag(b"MVER")
