"""Bounded little-endian reads over bytes, shared by every format module.

Everything that takes a size or count from a file checks it against the bytes actually present
*before* allocating or slicing, and raises :class:`~wowgrass.errors.TruncatedError` otherwise.
"""

from __future__ import annotations

import struct

import numpy as np

from wowgrass.errors import FormatError, TruncatedError


def need(buf, offset: int, size: int, what: str, path: str | None = None) -> None:
    """Raise TruncatedError unless ``buf[offset:offset+size]`` lies inside ``buf``."""
    if offset < 0 or size < 0 or offset + size > len(buf):
        raise TruncatedError(
            f"{what}: needs {size} bytes at offset {offset}, file has {len(buf)}",
            path=path,
            offset=offset,
        )


def unpack_from(fmt: str, buf, offset: int, what: str, path: str | None = None) -> tuple:
    """``struct.unpack_from`` with the bounds check and a FormatError on failure."""
    s = struct.Struct(fmt)
    need(buf, offset, s.size, what, path)
    return s.unpack_from(buf, offset)


def array(buf, offset: int, count: int, dtype, what: str, path: str | None = None) -> np.ndarray:
    """``np.frombuffer`` of ``count`` items at ``offset``, bounds-checked first (no copy)."""
    dtype = np.dtype(dtype)
    if count < 0:
        raise FormatError(f"{what}: negative count {count}", path=path, offset=offset)
    need(buf, offset, count * dtype.itemsize, what, path)
    return np.frombuffer(buf, dtype=dtype, count=count, offset=offset)


def cstring(buf, offset: int, what: str, path: str | None = None, limit: int | None = None) -> str:
    """A NUL-terminated string starting at ``offset`` (bytes decoded as UTF-8, errors replaced)."""
    end_limit = len(buf) if limit is None else min(len(buf), limit)
    if not 0 <= offset <= end_limit:
        raise FormatError(f"{what}: string offset {offset} outside 0..{end_limit}", path=path, offset=offset)
    raw = bytes(buf[offset:end_limit])
    nul = raw.find(b"\0")
    if nul < 0:
        raise TruncatedError(f"{what}: string not terminated", path=path, offset=offset)
    return raw[:nul].decode("utf-8", "replace")
