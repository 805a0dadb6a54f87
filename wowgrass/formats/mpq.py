"""MPQ archives (Blizzard's "Mo'PaQ"), as used by the WoW 1.12, 2.4.3 and 3.3.5 clients.

Reads header formats v1-v4 (the classic hash and block tables only; v3/v4 headers are accepted,
HET/BET-only archives are not), a user-data block (``MPQ\\x1b``) in front of the header, a header
at any 512-byte boundary, the v2 high block table, encrypted tables, file flags COMPRESS,
IMPLODE, ENCRYPTED, FIX_KEY, SINGLE_UNIT, SECTOR_CRC, DELETE_MARKER and compression masks zlib,
bzip2, PKWARE DCL and LZMA. Huffman, ADPCM and sparse (WAV/SC2 codecs) raise UnsupportedError.
Spec digest: ``shared/docs/formats.md`` §5; https://wowdev.wiki/MPQ, StormLib's SBaseCommon.cpp.

Quirks worth knowing:

* Decryption looks sequential (each word feeds the next state) but the state after word n
  depends only on the previous 32 words, since bit j of the next state depends only on bits
  < j of the current one. So long tables are decrypted as many short lanes in parallel with
  numpy, each lane warmed up on the 32 words before it. The key schedule does not depend on
  the data and falls into a cycle of a few words, so it is tiled.
* Sector checksums are zlib's adler32 seeded with 0 (not 1), taken over the stored (compressed,
  decrypted) sector; 0 and 0xFFFFFFFF mean "no checksum".
* A sector is compressed only when its stored size is smaller than its plain size.
* Lookups prefer the requested locale, then the neutral one (0), then any copy.
"""

from __future__ import annotations

import bz2
import functools
import lzma
import math
import mmap
import os
import struct
import threading
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from enum import IntFlag
from pathlib import Path

import numpy as np

from wowgrass.binary import unpack_from
from wowgrass.errors import (
    ChecksumError,
    FormatError,
    GameFileNotFound,
    TruncatedError,
    UnsupportedError,
    UsageError,
    WowgrassError,
)
from wowgrass.fileio import write_atomic
from wowgrass.formats import dcl

# --- constants ---------------------------------------------------------------------------------

MPQ_MAGIC = b"MPQ\x1a"
USER_DATA_MAGIC = b"MPQ\x1b"
HEADER_ALIGN = 512
HEADER_SIZES = {0: 0x20, 1: 0x2C, 2: 0x44, 3: 0xD0}
MAX_SECTOR_SHIFT = 24          # 8 GiB sectors would be absurd; bigger shifts are corruption

HASH_ENTRY_EMPTY = 0xFFFFFFFF
HASH_ENTRY_DELETED = 0xFFFFFFFE
KEY_HASH_TABLE = 0xC3AF3770    # hash_string("(hash table)", HASH_KEY)
KEY_BLOCK_TABLE = 0xEC83B3A3   # hash_string("(block table)", HASH_KEY)

HASH_OFFSET, HASH_A, HASH_B, HASH_KEY = 0, 1, 2, 3
SPECIAL_FILES = ("(listfile)", "(attributes)", "(signature)")


class FileFlags(IntFlag):
    IMPLODE = 0x00000100
    COMPRESS = 0x00000200
    ENCRYPTED = 0x00010000
    FIX_KEY = 0x00020000
    PATCH_FILE = 0x00100000
    SINGLE_UNIT = 0x01000000
    DELETE_MARKER = 0x02000000
    SECTOR_CRC = 0x04000000
    EXISTS = 0x80000000


class Compression(IntFlag):
    HUFFMAN = 0x01
    ZLIB = 0x02
    PKWARE = 0x08
    BZIP2 = 0x10
    SPARSE = 0x20
    ADPCM_MONO = 0x40
    ADPCM_STEREO = 0x80


COMPRESSION_LZMA = 0x12        # SC2: a value, not a bit combination

# Plain-int copies for hot paths (IntFlag arithmetic costs microseconds per operation).
_IMPLODE, _COMPRESS, _ENCRYPTED, _FIX_KEY = 0x100, 0x200, 0x10000, 0x20000
_PATCH_FILE, _SINGLE_UNIT, _DELETE_MARKER, _SECTOR_CRC, _EXISTS = 0x100000, 0x1000000, 0x2000000, 0x4000000, 0x80000000
_C_ZLIB, _C_PKWARE, _C_BZIP2 = 0x02, 0x08, 0x10
_SUPPORTED_BITS = 0x02 | 0x08 | 0x10
_COMPRESSION_NAMES = {"zlib": Compression.ZLIB, "bzip2": Compression.BZIP2, "pkware": Compression.PKWARE,
                      "lzma": COMPRESSION_LZMA}

# --- record layouts ----------------------------------------------------------------------------

# Header fields as (name, struct code); v2..v4 extend v1. Sizes asserted against the spec.
_HEADER_V1 = [("magic", "4s"), ("header_size", "I"), ("archive_size", "I"), ("format_version", "H"),
              ("sector_shift", "H"), ("hash_table_pos", "I"), ("block_table_pos", "I"),
              ("hash_table_size", "I"), ("block_table_size", "I")]
_HEADER_V2 = _HEADER_V1 + [("hi_block_table_pos", "Q"), ("hash_table_pos_hi", "H"), ("block_table_pos_hi", "H")]
_HEADER_V3 = _HEADER_V2 + [("archive_size64", "Q"), ("bet_table_pos", "Q"), ("het_table_pos", "Q")]
_HEADER_V4 = _HEADER_V3 + [("hash_table_size64", "Q"), ("block_table_size64", "Q"), ("hi_block_table_size64", "Q"),
                           ("het_table_size64", "Q"), ("bet_table_size64", "Q"), ("raw_chunk_size", "I"),
                           ("md5s", "96s")]
_HEADER_STRUCTS = {v: (struct.Struct("<" + "".join(c for _, c in spec)), [n for n, _ in spec])
                   for v, spec in enumerate((_HEADER_V1, _HEADER_V2, _HEADER_V3, _HEADER_V4))}
for _v, (_s, _) in _HEADER_STRUCTS.items():
    assert _s.size == HEADER_SIZES[_v], (_v, _s.size)
_USER_DATA = struct.Struct("<4sIII")   # magic, user data size, header offset, user data header size

HASH_DTYPE = np.dtype([("hash_a", "<u4"), ("hash_b", "<u4"), ("locale", "<u2"), ("platform", "<u1"),
                       ("flags", "<u1"), ("block_index", "<u4")])
BLOCK_DTYPE = np.dtype([("file_pos", "<u4"), ("packed_size", "<u4"), ("size", "<u4"), ("flags", "<u4")])
assert HASH_DTYPE.itemsize == 16 and BLOCK_DTYPE.itemsize == 16

# --- crypto ------------------------------------------------------------------------------------

_M32 = 0xFFFFFFFF


def _build_crypt_table() -> np.ndarray:
    table = np.zeros(0x500, np.uint32)
    seed = 0x00100001
    for i in range(0x100):
        for j in range(5):
            seed = (seed * 125 + 3) % 0x2AAAAB
            hi = (seed & 0xFFFF) << 16
            seed = (seed * 125 + 3) % 0x2AAAAB
            table[i + j * 0x100] = hi | (seed & 0xFFFF)
    return table


CRYPT_TABLE = _build_crypt_table()
_CRYPT_LIST = CRYPT_TABLE.tolist()            # Python ints: fast scalar indexing in hash_string
_DECRYPT_T = CRYPT_TABLE[0x400:0x500].copy()
_DECRYPT_LIST = _DECRYPT_T.tolist()


def _name_bytes(name: str | bytes) -> bytes:
    if isinstance(name, str):
        name = name.encode("utf-8", "surrogateescape")
    return name.upper().replace(b"/", b"\\")


def hash_string(name: str | bytes, kind: int) -> int:
    """StormLib's HashString: ASCII upper-case, '/' as '\\', table region ``kind`` (0..3)."""
    t = _CRYPT_LIST
    off = kind << 8
    s1, s2 = 0x7FED7FED, 0xEEEEEEEE
    for ch in _name_bytes(name):
        s1 = (t[off + ch] ^ (s1 + s2)) & _M32
        s2 = (ch + s1 + s2 + (s2 << 5) + 3) & _M32
    return s1


def hash_strings(names, kind: int) -> np.ndarray:
    """:func:`hash_string` of many names at once (uint32), one numpy step per character column."""
    enc = [_name_bytes(n) for n in names]
    if not enc:
        return np.zeros(0, np.uint32)
    lengths = np.fromiter((len(b) for b in enc), np.int64, len(enc))
    width = int(lengths.max())
    chars = np.frombuffer(b"".join(b.ljust(width, b"\0") for b in enc), np.uint8).reshape(len(enc), width)
    table = CRYPT_TABLE[kind << 8:(kind << 8) + 256]
    s1 = np.full(len(enc), 0x7FED7FED, np.uint32)
    s2 = np.full(len(enc), 0xEEEEEEEE, np.uint32)
    with np.errstate(over="ignore"):
        for j in range(width):
            on = lengths > j
            ch = chars[:, j].astype(np.uint32)
            n1 = table[chars[:, j]] ^ (s1 + s2)
            n2 = ch + n1 + s2 + (s2 << np.uint32(5)) + np.uint32(3)
            s1 = np.where(on, n1, s1)
            s2 = np.where(on, n2, s2)
    return s1


@functools.lru_cache(maxsize=4096)
def _name_hashes(name: str) -> tuple[int, int, int]:
    """(table offset, hash A, hash B) of ``name``; cached because a Data folder probes every archive
    of its chain with the same name, then reads it by name once more."""
    return hash_string(name, HASH_OFFSET), hash_string(name, HASH_A), hash_string(name, HASH_B)


def file_key(name: str, file_pos: int = 0, size: int = 0, fix_key: bool = False) -> int:
    """Encryption key of a file: hash of its base name, adjusted by position and size for FIX_KEY."""
    base = name.replace("/", "\\").rsplit("\\", 1)[-1]
    key = hash_string(base, HASH_KEY)
    if fix_key:
        key = ((key + file_pos) & _M32) ^ size
    return key


def _next_key(k: int) -> int:
    return (((~k << 21) + 0x11111111) | (k >> 11)) & _M32


def _key_schedule(key: int, limit: int = 4096) -> tuple[list[int], list[int]] | None:
    """(pre-period, cycle) of the per-word keys; they do not depend on the data and fall into a
    cycle of a few words within a few steps. None if no cycle shows up within ``limit`` keys."""
    keys: list[int] = []
    seen: dict[int, int] = {}
    k = key & _M32
    while len(keys) < limit:
        if k in seen:
            i = seen[k]
            return keys[:i], keys[i:]
        seen[k] = len(keys)
        keys.append(k)
        k = _next_key(k)
    return None


def _key_stream(key: int, n: int) -> np.ndarray:
    """The first ``n`` per-word keys as uint32."""
    sched = _key_schedule(key)
    if sched is None:   # never seen in practice; stay correct anyway
        keys, k = [], key & _M32
        for _ in range(n):
            keys.append(k)
            k = _next_key(k)
        return np.array(keys, np.uint32)
    pre, cyc = sched
    if n <= len(pre):
        return np.array(pre[:n], np.uint32)
    rest = n - len(pre)
    return np.concatenate([np.array(pre, np.uint32), np.tile(np.array(cyc, np.uint32), -(-rest // len(cyc)))[:rest]])


def _decrypt_py(words: list[int], key: int) -> list[int]:
    t = _DECRYPT_LIST
    s2 = 0xEEEEEEEE
    out = []
    for w in words:
        s2 = (s2 + t[key & 0xFF]) & _M32
        v = w ^ ((key + s2) & _M32)
        out.append(v)
        key = (((~key << 21) + 0x11111111) | (key >> 11)) & _M32
        s2 = (v + s2 + (s2 << 5) + 3) & _M32
    return out


_WARMUP = 32   # words after which the decryption state no longer depends on where it started


def decrypt_words(words: np.ndarray, key: int) -> np.ndarray:
    """Decrypt a ``<u4`` array with ``key`` (returns a new uint32 array).

    Long inputs are cut into lanes of M words (M a multiple of the key cycle, so every lane but
    the first sees the same key per column); lanes run in lock-step as numpy vectors, each warmed
    up on the 32 words before it. The first lane (which holds the key pre-period) runs in Python.
    """
    words = np.asarray(words, dtype="<u4")
    n = len(words)
    sched = _key_schedule(key) if n >= 1024 else None
    if sched is None or len(sched[1]) > 64 or len(sched[0]) > 64:
        return np.array(_decrypt_py(words.tolist(), key), np.uint32)
    pre, cyc = sched
    period = len(cyc)
    lane = period * -(-256 // period)              # >= 256 >= warm-up + pre-period
    lanes = -(-n // lane)
    grid = np.zeros((lanes, lane), np.uint32)
    grid.reshape(-1)[:n] = words
    out = np.empty((lanes, lane), np.uint32)
    out[0] = _decrypt_py(grid[0].tolist(), key)
    if lanes > 1:
        ext = np.empty((lanes - 1, _WARMUP + lane), np.uint32)
        ext[:, _WARMUP:] = grid[1:]
        ext[:, :_WARMUP] = grid[:-1, lane - _WARMUP:]
        body = out[1:]
        s = np.zeros(lanes - 1, np.uint32)          # any start; exact after the warm-up
        tmp = np.empty(lanes - 1, np.uint32)
        scratch = np.empty(lanes - 1, np.uint32)
        t = _DECRYPT_LIST
        for c in range(_WARMUP + lane):
            k = cyc[(c - _WARMUP - len(pre)) % period]   # word index l*lane + c - 32, l*lane = 0 mod period
            np.add(s, (t[k & 0xFF] + 3) & _M32, out=s)  # "+ 3" of the previous update folded in
            np.add(s, k, out=tmp)
            v = body[:, c - _WARMUP] if c >= _WARMUP else scratch
            np.bitwise_xor(ext[:, c], tmp, out=v)
            np.multiply(s, np.uint32(33), out=s)
            np.add(s, v, out=s)
    return out.reshape(-1)[:n]


def encrypt_words(words: np.ndarray, key: int) -> np.ndarray:
    """Encrypt a ``<u4`` array: the state recurrence is linear in known plaintext, so it is a cumsum."""
    v = np.asarray(words, dtype=np.uint32)
    n = len(v)
    if n == 0:
        return v.copy()
    keys = _key_stream(key, n)
    t = _DECRYPT_T[keys & 0xFF]
    # s_{i+1} = 33*s_i + c_i with c_i = v_i + 3 + t_{i+1};  s_0 = 0xEEEEEEEE + t_0
    c = v[:-1] + np.uint32(3) + t[1:]
    pw = np.cumprod(np.full(n, 33, np.uint32), dtype=np.uint32)        # 33^(i+1)
    inv = np.cumprod(np.full(n, pow(33, -1, 1 << 32), np.uint32), dtype=np.uint32)  # 33^-(i+1)
    acc = np.zeros(n, np.uint32)
    acc[1:] = np.cumsum(c * inv[:-1], dtype=np.uint32)
    s0 = np.uint32((0xEEEEEEEE + int(t[0])) & _M32)
    p = np.empty(n, np.uint32)
    p[0] = 1
    p[1:] = pw[:-1]
    s = p * (s0 + acc)
    return v ^ (keys + s)


def decrypt_bytes(data, key: int) -> bytes:
    """Decrypt whole little-endian words of ``data``; trailing bytes (len % 4) stay as stored."""
    n = len(data) // 4
    if n == 0:
        return bytes(data)
    dec = decrypt_words(np.frombuffer(data, "<u4", count=n), key).astype("<u4").tobytes()
    return dec + bytes(data[n * 4:])


def encrypt_bytes(data, key: int) -> bytes:
    n = len(data) // 4
    if n == 0:
        return bytes(data)
    enc = encrypt_words(np.frombuffer(data, "<u4", count=n), key).astype("<u4").tobytes()
    return enc + bytes(data[n * 4:])


# --- codecs ------------------------------------------------------------------------------------

#: decoder state beside the dictionary (literal coder tables for the largest lc+lp, range coder)
_LZMA_MEM_SLACK = 16 << 20


def _bounded(decomp, data, limit: int) -> bytes:
    out = decomp.decompress(data, limit + 1)
    return out


def decompress_sector(data, expected: int, *, path=None, offset=None) -> bytes:
    """Decompress a COMPRESS sector (first byte = compression mask) to ``expected`` bytes."""
    if len(data) == 0:
        raise FormatError("empty compressed sector", path=path, offset=offset)
    mask = data[0]
    payload = memoryview(data)[1:]
    try:
        if mask == COMPRESSION_LZMA:
            # SC2 layout after the mask: a filter byte (0 = none), then the .lzma "alone" header
            # (5 property bytes, u64 size) and the stream.
            if len(payload) < 14 or payload[0] != 0:
                raise FormatError(f"LZMA sector: filter byte {payload[0] if len(payload) else None} "
                                  f"(expected 0) or short header", path=path, offset=offset)
            # The header declares the dictionary size and liblzma reserves it up front; a sector
            # never needs more than its own size, so cap the decoder's memory by that.
            memlimit = expected + _LZMA_MEM_SLACK
            out = _bounded(lzma.LZMADecompressor(format=lzma.FORMAT_ALONE, memlimit=memlimit), payload[1:], expected)
        else:
            unsupported = mask & ~_SUPPORTED_BITS
            if unsupported or mask == 0:
                names = ", ".join(m.name for m in Compression if m & mask) or "none"
                raise UnsupportedError(f"compression mask 0x{mask:02X} ({names}) is not supported",
                                       path=path, offset=offset)
            out = payload
            # Undo in StormLib's order: bzip2, then PKWARE, then zlib. An intermediate stage holds
            # still-compressed data, so it gets some slack over the final size.
            slack = 2 * expected + 64
            if mask & _C_BZIP2:
                out = _bounded(bz2.BZ2Decompressor(), out, expected if mask == _C_BZIP2 else slack)
            if mask & _C_PKWARE:
                out = explode(out, limit=slack if mask & _C_ZLIB else expected, path=path, offset=offset)
            if mask & _C_ZLIB:
                out = _bounded(zlib.decompressobj(), out, expected)
    except (zlib.error, OSError, lzma.LZMAError, EOFError, ValueError) as exc:
        if isinstance(exc, FormatError):
            raise
        raise FormatError(f"corrupt sector (mask 0x{mask:02X}): {exc}", path=path, offset=offset) from None
    if len(out) != expected:
        raise FormatError(f"sector decompressed to {len(out)} bytes, expected {expected}", path=path, offset=offset)
    return bytes(out)


@functools.lru_cache(maxsize=1)
def dcl_binding():
    """The ``dclimplode`` module (zlib's blast.c and PKWARE's implode in C), or None where it is
    not installed: it is optional (wheels for CPython 3.10 and 3.11 only), and wowgrass's own
    decoder (:mod:`wowgrass.formats.dcl`, plain Python, a few MB/s) reads the sectors then."""
    try:
        import dclimplode
    except ImportError:
        return None
    return dclimplode


def explode(data, *, limit: int | None = None, path=None, offset=None) -> bytes:
    """PKWARE DCL explode (the IMPLODE flag and compression bit 0x08): through the ``dclimplode``
    binding where it is installed, else wowgrass's own decoder (the same bytes).

    Input is fed in 16 KiB pieces (DCL expands at most ~140x) so a hostile stream stops soon
    after passing ``limit`` output bytes instead of filling memory.
    """
    binding = dcl_binding()
    if binding is None:
        return dcl.explode(data, limit=limit, path=path, offset=offset)
    d = binding.decompressobj()
    out = []
    total = 0
    try:
        for i in range(0, len(data), 16384):
            piece = d.decompress(bytes(data[i:i + 16384]))
            total += len(piece)
            out.append(piece)
            if limit is not None and total > limit:
                break
    except Exception as exc:  # the binding raises plain RuntimeErrors on bad input
        raise FormatError(f"corrupt PKWARE DCL data: {exc}", path=path, offset=offset) from None
    return b"".join(out)


def implode(data: bytes, dict_size: int = 4096) -> bytes:
    """PKWARE DCL implode (writing ``compression="pkware"``): needs the ``dclimplode`` binding."""
    binding = dcl_binding()
    if binding is None:
        raise UnsupportedError("writing PKWARE DCL (compression 'pkware') needs the optional dclimplode package "
                               "(pip install 'wowgrass[dcl]'; wheels for CPython 3.10 and 3.11, a C compiler "
                               "elsewhere); zlib, bzip2 and lzma need nothing")
    c = binding.compressobj(binding.CMP_BINARY, dict_size)
    return c.compress(data) + c.flush()


def compress_sector(data: bytes, method: str) -> bytes:
    """Compress with the mask byte in front (COMPRESS flag) or raw DCL (``pkware`` -> IMPLODE)."""
    if method == "zlib":
        return b"\x02" + zlib.compress(data, 6)
    if method == "bzip2":
        return b"\x10" + bz2.compress(data, 9)
    if method == "pkware":
        return implode(data)
    if method == "lzma":
        return b"\x12\x00" + lzma.compress(data, format=lzma.FORMAT_ALONE, preset=6)
    raise UsageError(f"unknown compression {method!r} (zlib, bzip2, pkware, lzma or None)")


# --- parallel decoding -------------------------------------------------------------------------
# zlib, bz2 and lzma release the GIL while they work, so sectors decompress in parallel on threads.

CHUNK_BYTES = 256 << 10        # stored bytes per task: small files are batched up to it, big ones cut
_POOLS: dict[int, ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()


def _forget_pools_after_fork() -> None:
    """A forked child has none of the parent's threads (and maybe a lock taken by one of them)."""
    global _POOLS_LOCK
    _POOLS_LOCK = threading.Lock()
    _POOLS.clear()


os.register_at_fork(after_in_child=_forget_pools_after_fork)


def _stop_pools_at_exit() -> None:
    """Wake every decoding thread at interpreter exit, before it joins them: one whose start Ctrl-C
    cut short was never registered with concurrent.futures' own exit hook, and would be waited for
    forever (the process hung after saying "interrupted")."""
    for pool in list(_POOLS.values()):
        pool.shutdown(wait=False)


threading._register_atexit(_stop_pools_at_exit)   # the hook concurrent.futures' own pools use


def default_threads() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:    # not on Linux
        return os.cpu_count() or 1


def _pool(threads: int) -> ThreadPoolExecutor:
    with _POOLS_LOCK:
        pool = _POOLS.get(threads)
        if pool is None:
            pool = _POOLS[threads] = ThreadPoolExecutor(threads, thread_name_prefix="wowgrass-mpq")
        return pool


def release_threads() -> None:
    """Stop the idle decompression threads (they start again when next needed). Call it before
    forking worker processes, while no other thread of this process is reading: a fork copies no
    threads, and forking a threaded process is what Python 3.12 warns about."""
    with _POOLS_LOCK:
        pools = list(_POOLS.values())
        _POOLS.clear()
    for pool in pools:
        pool.shutdown(wait=True)


def _run_task(pieces) -> list:
    """Decode a task's pieces in order; a piece's WowgrassError is its result (the file fails, the
    rest of the task goes on)."""
    out = []
    for _, _, decode in pieces:
        try:
            out.append(decode())
        except WowgrassError as exc:
            out.append(exc)
    return out


def decode_files(jobs: Iterable[tuple[object, Callable[[], list]]], threads: int = 1,
                 chunk: int = CHUNK_BYTES) -> Iterator[tuple[object, bytes | WowgrassError]]:
    """``(key, bytes or error)`` for each ``(key, plan)`` of ``jobs``, in order.

    ``plan()`` checks a file and returns its pieces ``(decode, stored bytes)`` (see
    ``MpqArchive.decode_plan``); it runs here, the pieces run on ``threads`` threads,
    consecutive ones batched into tasks of about ``chunk`` stored bytes. At most ``4 * threads`` tasks are in
    flight, so memory stays bounded however many files are asked for. With ``threads <= 1``
    everything runs here, in the same order: the bytes are the same either way.
    """
    pool = _pool(threads) if threads > 1 else None
    window = 4 * max(threads, 1)
    files: deque[list] = deque()          # [key, parts, pieces not yet decoded] in job order
    inflight: deque[tuple[Future, list]] = deque()
    task: list = []
    task_bytes = 0

    def submit():
        nonlocal task, task_bytes
        if pool is not None:
            fut = pool.submit(_run_task, task)
        else:
            fut = Future()
            fut.set_result(_run_task(task))
        inflight.append((fut, task))
        task, task_bytes = [], 0

    def settle_oldest():
        fut, pieces = inflight.popleft()
        for (rec, i, _), out in zip(pieces, fut.result()):
            rec[1][i] = out
            rec[2] -= 1

    def finished():
        while files and files[0][2] == 0:
            key, parts, _ = files.popleft()
            err = next((p for p in parts if isinstance(p, BaseException)), None)
            yield key, err if err is not None else b"".join(parts)

    try:
        for key, plan in jobs:
            try:
                pieces = plan()
            except WowgrassError as exc:
                pieces, failed = [], exc
            else:
                failed = None
            rec = [key, [failed] if failed is not None else [b""] * len(pieces), len(pieces)]
            files.append(rec)
            for i, (decode, stored) in enumerate(pieces):
                task.append((rec, i, decode))
                task_bytes += stored
                if task_bytes >= chunk:
                    submit()
                    if len(inflight) >= window:
                        settle_oldest()
                        yield from finished()
            yield from finished()
        if task:
            submit()
        while inflight:
            settle_oldest()
            yield from finished()
        yield from finished()
    finally:   # abandoned early: let running tasks finish before the archive can close
        for fut, _ in inflight:
            fut.cancel()
        for fut, _ in inflight:
            if not fut.cancelled():
                fut.exception()


# --- public records ----------------------------------------------------------------------------

@dataclass(frozen=True)
class MpqHeader:
    """The archive header (positions are relative to ``offset``, the header's place in the file)."""

    offset: int
    header_size: int
    archive_size: int
    format_version: int
    sector_shift: int
    hash_table_pos: int
    block_table_pos: int
    hash_table_size: int
    block_table_size: int
    hi_block_table_pos: int = 0
    user_data_offset: int | None = None
    user_data_size: int = 0
    het_table_pos: int = 0
    bet_table_pos: int = 0

    @property
    def sector_size(self) -> int:
        return 512 << self.sector_shift


@dataclass(frozen=True)
class MpqEntry:
    """One used hash-table slot and its block: ``name`` is None when no listfile names it."""

    name: str | None
    size: int
    packed_size: int
    flags: int
    locale: int
    platform: int = 0
    block_index: int = 0
    hash_index: int = 0
    file_pos: int = 0
    hash_a: int = field(default=0, repr=False)
    hash_b: int = field(default=0, repr=False)
    reachable: bool = True    # False: a lookup by ``name`` cannot reach this entry (see MpqArchive.entries)

    @property
    def is_delete_marker(self) -> bool:
        return bool(self.flags & _DELETE_MARKER)

    @property
    def flag_names(self) -> list[str]:
        return [f.name for f in FileFlags if self.flags & f]


# --- reader ------------------------------------------------------------------------------------

def _find_header(buf, path) -> tuple[int, int | None, int]:
    """(header offset, user-data offset or None, user-data size) of the first valid header."""
    n = len(buf)
    pos = 0
    while pos + 32 <= n:
        magic = buf[pos:pos + 4]
        if magic == USER_DATA_MAGIC and pos + _USER_DATA.size <= n:
            _, ud_size, hdr_off, _ = _USER_DATA.unpack_from(buf, pos)
            target = pos + hdr_off
            if hdr_off and target + 32 <= n and buf[target:target + 4] == MPQ_MAGIC:
                return target, pos, ud_size
        elif magic == MPQ_MAGIC:
            return pos, None, 0
        # jump to the next 512-aligned candidate with a C-speed find
        nxt = buf.find(b"MPQ", pos + 1)
        if nxt < 0:
            break
        pos = -(-nxt // HEADER_ALIGN) * HEADER_ALIGN
    raise FormatError("no MPQ header (MPQ\\x1a) at any 512-byte boundary", path=path, offset=0)


class MpqArchive:
    """A read-only MPQ archive: header and decrypted hash/block tables; files read on request.

    Spec: https://wowdev.wiki/MPQ (see the module docstring for the builds and quirks covered).
    """

    def __init__(self, buf, path: str | None = None, *, threads: int | None = None, _mmap=None, _file=None):
        self._buf = buf
        self.path = path
        self.threads = default_threads() if threads is None else max(1, int(threads))
        self._mmap = _mmap
        self._file = _file
        self._name_map: dict[tuple[int, int], str] | None = None
        self._listfile: list[str] | None = None
        self._reach: dict[int, bool] | None = None   # hash index of a named entry -> a lookup finds it
        self._lost: list[str] | None = None           # unreachable_names(), once known
        self.warnings: list[str] = []   # what was tolerated while opening (protected-map quirks)
        self.header = self._read_header()
        self._read_tables()

    # construction -----------------------------------------------------------------------------
    @classmethod
    def open(cls, path, *, threads: int | None = None) -> "MpqArchive":
        """Map the file and read only the header and the hash/block tables. ``threads``: how many
        threads decompress a big file or a batch of files (default: one per CPU)."""
        path = Path(path)
        f = open(path, "rb")
        try:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                raise TruncatedError("empty file", path=str(path), offset=0)
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except BaseException:
            f.close()
            raise
        try:
            return cls(mm, str(path), threads=threads, _mmap=mm, _file=f)
        except BaseException:
            try:
                mm.close()
            except BufferError:   # a view the failed __init__ made (Ctrl-C mid-way): the map goes with it
                pass
            f.close()
            raise

    @classmethod
    def from_bytes(cls, data, path=None, *, threads: int | None = None) -> "MpqArchive":
        return cls(bytes(data) if not isinstance(data, (bytes, mmap.mmap)) else data,
                   None if path is None else str(path), threads=threads)

    def close(self) -> None:
        if self._mmap is not None:
            try:
                self._mmap.close()
            except BufferError:   # a caller still holds a view; the map goes with the last one
                pass
            self._mmap = None
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"<MpqArchive {self.path or '<bytes>'} v{self.header.format_version + 1} {len(self._hash_block)} slots>"

    # header and tables ------------------------------------------------------------------------
    def _err(self, reason, offset=None, cls=FormatError):
        return cls(reason, path=self.path, offset=offset)

    def _is_warcraft3_map(self) -> bool:
        """A Warcraft III map (``HM3W`` block first, or a .w3m/.w3x name): Storm.dll of Warcraft III
        reads its header as format v1 whatever the header claims, and map protectors rely on that."""
        name = (self.path or "").lower()
        return bytes(self._buf[:4]) == b"HM3W" or name.endswith((".w3m", ".w3x"))

    def _read_header(self) -> MpqHeader:
        """The header, trusting the fields StormLib trusts (SFileOpenArchive / ConvertMpqHeaderToFormat4):
        a Warcraft III map, an unknown format version, or a v2 header whose size is not 44 is read as
        v1; a v1 header's size and archive size are ignored and only the low byte of its sector
        shift counts; v1 table positions are 32-bit (they wrap)."""
        buf, path = self._buf, self.path
        off, ud_off, ud_size = _find_header(buf, path)
        stored_size, fmt_field = unpack_from("<I4xH", buf, off + 4, "MPQ header", path)
        fmt_version = fmt_field
        if fmt_field > 3 or self._is_warcraft3_map() or (fmt_field == 1 and stored_size != HEADER_SIZES[1]):
            fmt_version = 0
        elif fmt_field == 2 and stored_size < HEADER_SIZES[2]:   # v3's extra fields are optional
            fmt_version = 1 if stored_size >= HEADER_SIZES[1] else 0
        st, names = _HEADER_STRUCTS[fmt_version]
        if fmt_version == 3 and stored_size < st.size:
            raise self._err(f"header size {stored_size} is too small for format v4 (expected {st.size})", off + 4)
        vals = dict(zip(names, unpack_from("<" + st.format[1:], buf, off, "MPQ header", path)))
        if fmt_version == 0:
            vals["sector_shift"] &= 0xFF
        if vals["sector_shift"] > MAX_SECTOR_SHIFT:
            raise self._err(f"sector shift {vals['sector_shift']} is implausible (max {MAX_SECTOR_SHIFT})", off + 14)
        hash_pos = vals["hash_table_pos"] | (vals.get("hash_table_pos_hi", 0) << 32)
        block_pos = vals["block_table_pos"] | (vals.get("block_table_pos_hi", 0) << 32)
        return MpqHeader(
            offset=off, header_size=st.size if fmt_version == 0 else stored_size,
            archive_size=vals.get("archive_size64") or vals["archive_size"],
            format_version=fmt_version, sector_shift=vals["sector_shift"],
            hash_table_pos=hash_pos, block_table_pos=block_pos,
            hash_table_size=vals["hash_table_size"], block_table_size=vals["block_table_size"],
            hi_block_table_pos=vals.get("hi_block_table_pos", 0),
            user_data_offset=ud_off, user_data_size=ud_size,
            het_table_pos=vals.get("het_table_pos", 0), bet_table_pos=vals.get("bet_table_pos", 0),
        )

    def _abs(self, pos: int) -> int:
        """File offset of an archive offset (v1 offsets are 32-bit and wrap, as in Storm.dll)."""
        start = self.header.offset + pos
        return start & 0xFFFFFFFF if self.header.format_version == 0 else start

    def _table(self, pos: int, count: int, key: int, dtype, what: str, *, need: int | None = None) -> np.ndarray:
        """``count`` decrypted entries at ``pos``; a table running past the end of the file is a
        ``TruncatedError`` with the file's size and ``need``, the size the header's tables call for
        (a v1 hash table that only *runs* past the end is read as StormLib reads it: _read_tables)."""
        start = self._abs(pos)
        nbytes = count * 16
        size = len(self._buf)
        need = max(need or 0, start + nbytes)
        if start + nbytes > size:
            where = "start" if start >= size else "run"
            raise self._err(f"{what}: {count:,} entries at 0x{start:X} {where} past the end of the file: it has "
                            f"{size:,} bytes, the header's tables need {need:,} (a truncated copy?)",
                            start, TruncatedError)
        raw = np.frombuffer(self._buf, "<u4", count=nbytes // 4, offset=start if nbytes else 0)
        return decrypt_words(raw, key).view(dtype)

    def _read_tables(self) -> None:
        h = self.header
        if h.hash_table_size == 0 and (h.het_table_pos or h.bet_table_pos):
            raise self._err("archive has only HET/BET tables (format v3+ without a hash table)",
                            h.offset, UnsupportedError)
        if h.hash_table_size == 0:
            raise self._err("hash table size 0: the archive has no hash table", h.offset + 24)
        # A size that is not a power of two (a map protector's trick) is read as StormLib reads it:
        # the whole table is loaded and indices are masked with size - 1 (see _candidates).
        # A v1 hash table that runs past the end of the file (protected StarCraft and Warcraft III
        # maps: "Spazzler" declares 0x100000 entries, others 0x10001000) is read as StormLib reads
        # it: its byte size is a 32-bit product (it wraps), as much as the file holds is loaded (the
        # rest would be zeros before decryption), and the cut table is defragmented: its valid
        # entries packed into the smallest power of two, the rest marked deleted, so that a lookup
        # probes them all (SBaseFileTable.cpp: LoadMpqTable, DefragmentHashTable).
        # A table that starts past the end of the file is a truncated copy (StormLib refuses it).
        size = len(self._buf)
        hash_start = self._abs(h.hash_table_pos)
        hash_bytes = 16 * h.hash_table_size
        cut = h.format_version == 0 and hash_start < size and hash_start + hash_bytes > size
        if cut:
            hash_bytes &= _M32
        lenient = h.format_version == 0 and self._is_warcraft3_map()
        need = max(hash_start + hash_bytes, self._abs(h.block_table_pos) + 16 * h.block_table_size)
        if cut:
            present = min(hash_bytes, size - hash_start) // 16
            self._hash = self._table(h.hash_table_pos, present, KEY_HASH_TABLE, HASH_DTYPE, "hash table")
            self.warnings.append(f"hash table: {h.hash_table_size:,} entries declared ({hash_bytes // 16:,} as a "
                                 f"32-bit byte count), {present:,} in the file; read as StormLib reads a "
                                 "protected map (cut and defragmented)")
        else:
            self._hash = self._table(h.hash_table_pos, h.hash_table_size, KEY_HASH_TABLE, HASH_DTYPE, "hash table",
                                     need=need)
        if lenient:   # the block table is cut to the entries present (EWIX-style sizes)
            start = self._abs(h.block_table_pos)
            if h.block_table_size and start >= len(self._buf):
                raise self._err(f"block table: {h.block_table_size:,} entries at 0x{start:X} start past the end "
                                f"of the file: it has {len(self._buf):,} bytes, the header's tables need "
                                f"{need:,} (a truncated copy?)", start, TruncatedError)
            fits = max(0, len(self._buf) - start) // 16
            if fits < h.block_table_size:
                self.warnings.append(f"block table: {h.block_table_size:,} entries declared, {fits:,} in the file "
                                     "(cut to those, as Storm.dll does)")
                h = self.header = replace(h, block_table_size=fits)
        self._block = self._table(h.block_table_pos, h.block_table_size, KEY_BLOCK_TABLE, BLOCK_DTYPE, "block table",
                                  need=need)
        self._hi = None
        if h.hi_block_table_pos:
            start = h.offset + h.hi_block_table_pos
            if start + 2 * h.block_table_size > len(self._buf):
                raise self._err("high block table runs past the end of the file", start, TruncatedError)
            self._hi = np.frombuffer(self._buf, "<u2", count=h.block_table_size, offset=start).astype(np.uint64)
        if cut:
            self._hash = self._defragmented(self._hash)
            h = self.header = replace(h, hash_table_size=len(self._hash))
        self._mask = h.hash_table_size - 1
        # Columns as plain arrays for probing (views; no per-entry Python work at open time).
        self._hash_a = self._hash["hash_a"]
        self._hash_b = self._hash["hash_b"]
        self._hash_block = self._hash["block_index"]

    def _defragmented(self, table: np.ndarray) -> np.ndarray:
        """StormLib's DefragmentHashTable for a cut v1 hash table: the valid entries (a block index
        inside the block table, a block that EXISTS and starts inside the file) packed to the front
        of a table of the nearest power of two (4 at least) entries, the others deleted (not
        empty), so a lookup walks the whole table whatever slot a name hashes to."""
        nblocks = self.header.block_table_size
        bi = table["block_index"]
        ok = bi < nblocks
        if ok.any():
            blk = self._block[bi[ok]]
            pos = blk["file_pos"].astype(np.int64)
            if self._hi is not None:
                pos |= self._hi[bi[ok]].astype(np.int64) << 32
            starts = (self.header.offset + pos) & _M32
            ok[np.flatnonzero(ok)] = (blk["flags"] & _EXISTS != 0) & (starts < len(self._buf))
        valid = table[ok]
        n = 4
        while n < len(valid):
            n <<= 1
        out = np.zeros(n, HASH_DTYPE)
        out["hash_a"] = _M32
        out["hash_b"] = _M32
        out["locale"] = 0xFFFF
        out["platform"] = 0xFF
        out["flags"] = 0xFF
        out["block_index"] = HASH_ENTRY_DELETED
        out[:len(valid)] = valid
        return out

    # lookup -----------------------------------------------------------------------------------
    def _candidates(self, name: str) -> list[int]:
        """Hash-table indices whose name hashes match ``name``, in probe order: from the name's
        index & mask, one slot on (& mask) at a time, to an empty slot or back to the start (a mask
        that is not all ones, from a size that is not a power of two, cycles sooner)."""
        i, a, b = _name_hashes(name)
        mask = self._mask
        start = i = i & mask
        nblocks = self.header.block_table_size
        ha, hb, hblk = self._hash_a, self._hash_b, self._hash_block
        found = []
        while True:
            blk = int(hblk[i])
            if blk == HASH_ENTRY_EMPTY:
                break
            if blk < nblocks and int(ha[i]) == a and int(hb[i]) == b:
                found.append(i)
            i = (i + 1) & mask
            if i == start:
                break
        return found

    def _find(self, name: str, locale: int | None = None) -> int | None:
        """Best hash index for ``name``: the locale asked for, else neutral, else the first copy."""
        cands = self._candidates(name)
        if not cands:
            return None
        locs = [int(self._hash["locale"][i]) for i in cands]
        if locale is not None and locale in locs:
            return cands[locs.index(locale)]
        if 0 in locs:
            return cands[locs.index(0)]
        return cands[0]

    def _entry(self, hi: int, name: str | None, reachable: bool = True) -> MpqEntry:
        he = self._hash[hi]
        bi = int(he["block_index"])
        be = self._block[bi]
        return MpqEntry(name=name, size=int(be["size"]), packed_size=int(be["packed_size"]),
                        flags=int(be["flags"]), locale=int(he["locale"]), platform=int(he["platform"]),
                        block_index=bi, hash_index=hi, file_pos=self._file_pos(bi),
                        hash_a=int(he["hash_a"]), hash_b=int(he["hash_b"]), reachable=reachable)

    def _file_pos(self, bi: int) -> int:
        pos = int(self._block["file_pos"][bi])
        if self._hi is not None:
            pos |= int(self._hi[bi]) << 32
        return pos

    def lookup(self, name: str, locale: int | None = None) -> MpqEntry | None:
        """The entry ``read`` would use (delete markers included), or None."""
        hi = self._find(name, locale)
        return None if hi is None else self._entry(hi, name)

    def exists(self, name: str, locale: int | None = None) -> bool:
        e = self.lookup(name, locale)
        return e is not None and not e.is_delete_marker and bool(e.flags & _EXISTS)

    def read(self, name: str, locale: int | None = None) -> bytes:
        """The file's bytes; GameFileNotFound when absent or hidden by a delete marker."""
        e = self.lookup(name, locale)
        if e is None or e.is_delete_marker or not e.flags & _EXISTS:
            raise self.missing_error(name)
        return self.read_entry(e)

    def missing_error(self, name: str) -> GameFileNotFound:
        """The error for a name no lookup finds (saying so when the listfile names it all the same)."""
        where = self.path or "<bytes>"
        try:
            unreachable = {n.upper() for n in self.unreachable_names()}
        except WowgrassError:   # an unreadable (listfile): the plain message
            unreachable = set()
        if name.upper().replace("/", "\\") in unreachable:
            return GameFileNotFound(f"{where}: no file {name!r}: the listfile names it but no hash entry on its "
                                    "probe path leads to it (a damaged or protected archive)")
        return GameFileNotFound(f"{where}: no file {name!r}")

    # listing ----------------------------------------------------------------------------------
    def _listfile_names(self) -> list[str]:
        if self._listfile is None:
            names: list[str] = []
            if self.exists("(listfile)"):
                text = self.read("(listfile)").decode("utf-8", "surrogateescape")
                for line in text.replace("\r", "\n").replace(";", "\n").split("\n"):
                    line = line.strip()
                    if line:
                        names.append(line)
            self._listfile = names
        return self._listfile

    def add_names(self, names) -> None:
        """Names from an outside listfile (like smpq's -L), for archives whose (listfile) lacks them."""
        self._listfile = self._listfile_names() + [n.strip() for n in names if n.strip()]
        self._name_map = None
        self._reach = self._lost = None

    def _names_by_hash(self) -> dict[tuple[int, int], str]:
        if self._name_map is None:
            m: dict[tuple[int, int], str] = {}
            names = list(SPECIAL_FILES) + self._listfile_names()
            for a, b, n in zip(hash_strings(names, HASH_A).tolist(), hash_strings(names, HASH_B).tolist(), names):
                m.setdefault((a, b), n)
            self._name_map = m
        return self._name_map

    def _reachable(self) -> dict[int, bool]:
        """Hash index -> whether a lookup by its (listfile) name reaches it, for every named entry.
        An entry off its name's probe path (an empty slot comes first: damage, or a protector's
        trick) is there but cannot be read by name, as in StormLib."""
        if self._reach is None:
            used = np.nonzero(self._hash_block < self.header.block_table_size)[0]
            names = self._names_by_hash()
            named = [(hi, n) for hi in used.tolist()
                     if (n := names.get((int(self._hash_a[hi]), int(self._hash_b[hi])))) is not None]
            size, mask = len(self._hash), self._mask
            empty = self._hash_block == HASH_ENTRY_EMPTY
            if size & (size - 1) == 0 and empty.any():
                # run[i]: non-empty slots ending at slot i (cyclic); slot s reaches i when the walk
                # s, s+1, ... i never meets an empty slot, i.e. (i - s) & mask < run[i]
                idx = np.arange(size)
                shift = int(np.flatnonzero(empty)[-1]) + 1         # start the scan right after an empty
                rolled = np.roll(np.where(empty, idx, -1), -shift)
                last = np.maximum.accumulate(np.where(rolled >= 0, np.arange(size), -1))
                run = np.roll(np.arange(size) - last, shift)
                his = np.fromiter((hi for hi, _ in named), np.int64, len(named))
                starts = hash_strings([n for _, n in named], HASH_OFFSET).astype(np.int64) & mask
                ok = ((his - starts) & mask) < run[his]
                self._reach = dict(zip(his.tolist(), ok.tolist()))
            elif size & (size - 1) == 0:    # no empty slot: every walk goes round the whole table
                self._reach = {hi: True for hi, _ in named}
            else:                           # a mask that is not all ones: walk each name's cycle
                self._reach = {hi: hi in self._candidates(n) for hi, n in named}
        return self._reach

    def entries(self) -> list[MpqEntry]:
        """Every used hash slot with a valid block (all locales, delete markers included); a named
        entry a lookup by that name cannot reach has ``reachable`` False."""
        used = np.nonzero(self._hash_block < self.header.block_table_size)[0]
        names = self._names_by_hash()
        reach = self._reachable()
        out = []
        for hi in used.tolist():
            key = (int(self._hash_a[hi]), int(self._hash_b[hi]))
            out.append(self._entry(hi, names.get(key), reach.get(hi, True)))
        return out

    def names(self) -> list[str]:
        """Names of existing files known from ``(listfile)`` (plus the special files present) that a
        lookup by name finds (:meth:`unreachable_names` lists the others)."""
        seen = set()
        out = []
        names = self._names_by_hash()
        for e in self.entries():
            # a slot whose block lacks EXISTS holds no file (a deleted one): not listed
            if e.name is None or e.is_delete_marker or not e.flags & _EXISTS or not e.reachable:
                continue
            key = (e.hash_a, e.hash_b)
            if key in seen:
                continue
            seen.add(key)
            out.append(names[key])
        return sorted(out, key=str.lower)

    def unreachable_names(self) -> list[str]:
        """Names the listfile gives to entries a lookup by that name cannot reach (no hash entry on
        the name's probe path leads to them): shown by ``mpq ls``, skipped by :meth:`names`."""
        if self._lost is None:
            if not any(not ok for ok in self._reachable().values()):
                self._lost = []
            else:
                found = {e.name for e in self.entries() if e.name is not None and not e.reachable}
                self._lost = sorted(found - set(self.names()), key=str.lower)
        return list(self._lost)

    # file data --------------------------------------------------------------------------------
    def read_entry(self, e: MpqEntry) -> bytes:
        """Decode one entry (its name is needed only when the file is encrypted). A big compressed
        file is decompressed by sector ranges on ``threads`` threads."""
        (_, out), = decode_files([(e, functools.partial(self.decode_plan, e, CHUNK_BYTES))], self.threads)
        if isinstance(out, BaseException):
            raise out
        return out

    def read_many(self, names: Iterable[str], locale: int | None = None, *, threads: int | None = None,
                  chunk: int = CHUNK_BYTES) -> Iterator[tuple[str, bytes | WowgrassError]]:
        """``(name, bytes)`` for each of ``names``, in order, decoded on ``threads`` threads (default:
        the archive's). A file that cannot be read comes back as ``(name, error)`` and the others
        still come out. Small files are batched, big ones cut into sector ranges of about ``chunk``
        stored bytes; at most a few chunks per thread are held at once."""
        def plan(name):
            e = self.lookup(name, locale)
            if e is None or e.is_delete_marker or not e.flags & _EXISTS:
                raise self.missing_error(name)
            return self.decode_plan(e, chunk)

        return decode_files(((n, functools.partial(plan, n)) for n in names),
                            self.threads if threads is None else threads, chunk)

    def decode_plan(self, e: MpqEntry, chunk: int | None = None) -> list[tuple[Callable[[], bytes], int]]:
        """Check ``e`` and cut its decoding into pieces ``(decode, stored bytes)`` whose outputs,
        joined, are the file. Compressed sectored files are cut into sector ranges of about
        ``chunk`` stored bytes (None: one piece); anything else is one piece."""
        flags, size, csize = e.flags, e.size, e.packed_size
        label = e.name or f"block #{e.block_index}"
        start = self._abs(e.file_pos)
        if flags & _PATCH_FILE:
            raise self._err(f"{label}: incremental patch files (Cataclysm+) are not supported", start,
                            UnsupportedError)
        if size == 0:
            return []
        if start + csize > len(self._buf):
            raise self._err(f"{label}: block of {csize} bytes at 0x{start:X} runs past the end of the file "
                            f"({len(self._buf)} bytes)", start, TruncatedError)
        raw = memoryview(self._buf)[start:start + csize]
        key = None
        if flags & _ENCRYPTED:
            if e.name is None:
                raise self._err(f"{label}: encrypted file without a known name (no key)", start, UnsupportedError)
            key = file_key(e.name, e.file_pos & _M32, size, bool(flags & _FIX_KEY))
        if flags & _SINGLE_UNIT or not flags & (_COMPRESS | _IMPLODE):
            return [(functools.partial(self._unsectored, raw, size, flags, key, label, start), csize)]

        ss = self.header.sector_size
        nsec = -(-size // ss)
        has_crc = bool(flags & _SECTOR_CRC)
        nent = nsec + 1 + has_crc
        if nent * 4 > csize:
            raise self._err(f"{label}: sector table of {nent} entries does not fit in {csize} stored bytes",
                            start, TruncatedError)
        table = np.frombuffer(raw, "<u4", count=nent)
        if key is not None:
            table = decrypt_words(table, (key - 1) & _M32)
        offs = table.tolist()
        if offs[0] < nent * 4 - 4 * has_crc or any(b < a for a, b in zip(offs, offs[1:])) or offs[-1] > csize:
            raise self._err(f"{label}: bad sector offset table {offs[:4]}{'...' if nent > 4 else ''} "
                            f"for {csize} stored bytes", start)
        crcs = None
        if has_crc and offs[nsec + 1] > offs[nsec]:
            crcs = self._sector_crcs(raw[offs[nsec]:offs[nsec + 1]], nsec, label, start + offs[nsec])
        last = size - (nsec - 1) * ss
        spans = [0, nsec]
        if chunk is not None and offs[nsec] - offs[0] >= 2 * chunk:
            cuts = np.searchsorted(table[:nsec], np.arange(offs[0] + chunk, offs[nsec], chunk, dtype=np.int64))
            spans = sorted({0, nsec, *cuts.tolist()})
        return [(functools.partial(self._sectors, raw, offs, lo, hi, nsec, ss, last, flags, key, crcs, label, start),
                 offs[hi] - offs[lo]) for lo, hi in zip(spans, spans[1:])]

    def _unsectored(self, raw, size: int, flags: int, key: int | None, label: str, start: int) -> bytes:
        """A SINGLE_UNIT file, or a sectored file stored without compression."""
        csize = len(raw)
        if flags & _SINGLE_UNIT:
            unit = decrypt_bytes(raw, key) if key is not None else raw
            if flags & (_COMPRESS | _IMPLODE) and csize < size:
                return self._unpack(unit, size, flags, label, start)
            if csize < size:
                raise self._err(f"{label}: stored {csize} bytes for a {size}-byte file", start, TruncatedError)
            return bytes(unit[:size])
        if csize < size:
            raise self._err(f"{label}: stored {csize} bytes for a {size}-byte file", start, TruncatedError)
        if key is None:
            return bytes(raw[:size])
        ss = self.header.sector_size
        return b"".join(decrypt_bytes(raw[i * ss:min(size, (i + 1) * ss)], (key + i) & _M32)
                        for i in range(-(-size // ss)))

    def _sectors(self, raw, offs: list[int], lo: int, hi: int, nsec: int, ss: int, last: int, flags: int,
                 key: int | None, crcs: list[int] | None, label: str, start: int) -> bytes:
        """Sectors ``lo`` to ``hi`` (exclusive) of a compressed sectored file, decoded and joined."""
        if key is None and crcs is None and flags & _COMPRESS:
            fast = self._zlib_sectors(raw, offs, lo, hi, nsec, ss, last)
            if fast is not None:
                return fast
        parts = []
        for i in range(lo, hi):
            a, b = offs[i], offs[i + 1]
            want = ss if i < nsec - 1 else last
            sec = raw[a:b]
            if key is not None:
                sec = decrypt_bytes(sec, (key + i) & _M32)
            if crcs is not None:
                exp = crcs[i]
                if exp not in (0, _M32) and zlib.adler32(sec, 0) != exp:
                    raise self._err(f"{label}: sector {i} of {nsec} fails its checksum "
                                    f"(adler32 0x{zlib.adler32(sec, 0):08X}, stored 0x{exp:08X})",
                                    start + a, ChecksumError)
            n = b - a
            if n < want:
                parts.append(self._unpack(sec, want, flags, f"{label} sector {i}", start + a))
            elif n == want:
                parts.append(sec)
            else:
                raise self._err(f"{label}: sector {i} stores {n} bytes for {want} plain bytes", start + a)
        return b"".join(parts)

    @staticmethod
    def _zlib_sectors(raw, offs, lo, hi, nsec, ss, last):
        """The common case (plain zlib or stored sectors) with no per-sector Python beyond a slice
        and one call; None sends anything unusual (other codecs, errors) down the general path."""
        parts = []
        append = parts.append
        dobj = zlib.decompressobj
        try:
            for i in range(lo, hi):
                a = offs[i]
                n = offs[i + 1] - a
                want = ss if i < nsec - 1 else last
                if n == want:
                    append(raw[a:a + n])
                elif n < want and n > 1 and raw[a] == 2:
                    out = dobj().decompress(raw[a + 1:a + n], want + 1)
                    if len(out) != want:
                        return None
                    append(out)
                else:
                    return None
        except zlib.error:
            return None
        return b"".join(parts)

    def _unpack(self, data, want: int, flags: int, label: str, offset: int) -> bytes:
        if flags & _IMPLODE and not flags & _COMPRESS:
            out = explode(data, limit=want, path=self.path, offset=offset)
            if len(out) != want:
                raise self._err(f"{label}: exploded to {len(out)} bytes, expected {want}", offset)
            return out
        try:
            return decompress_sector(data, want, path=self.path, offset=offset)
        except FormatError as exc:
            raise type(exc)(f"{label}: {exc.reason}", path=self.path, offset=offset) from None

    def _sector_crcs(self, blob, nsec: int, label: str, offset: int) -> list[int]:
        if len(blob) < nsec * 4:
            blob = self._unpack(blob, nsec * 4, _COMPRESS, f"{label} sector checksums", offset)
        return np.frombuffer(blob, "<u4", count=nsec).tolist()


def sniff(prefix: bytes) -> bool:
    """True when ``prefix`` starts like an MPQ (header or user-data block at offset 0)."""
    return prefix[:4] in (MPQ_MAGIC, USER_DATA_MAGIC)


# --- writer ------------------------------------------------------------------------------------

_FILE_OPTIONS = ("compression", "single_unit", "encrypt", "fix_key", "sector_crc", "locale", "delete")


def _items(files) -> list[tuple[str, bytes, dict]]:
    if isinstance(files, Mapping):
        seq = [(n, d, {}) for n, d in files.items()]
    else:
        seq = []
        for item in files:
            if len(item) == 2:
                seq.append((item[0], item[1], {}))
            else:
                seq.append((item[0], item[1], dict(item[2] or {})))
    for name, _data, opts in seq:
        bad = set(opts) - set(_FILE_OPTIONS)
        if bad:
            raise UsageError(f"{name}: unknown file options {sorted(bad)} (known: {', '.join(_FILE_OPTIONS)})")
    return seq


def _compress_sectors(plains: list[bytes], method: str, threads: int) -> list[bytes]:
    """``compress_sector`` of each, on ``threads`` threads (zlib, bz2 and lzma release the GIL) in
    a few batches per thread; the same bytes in the same order either way."""
    def batch(part):
        return [compress_sector(p, method) for p in part]

    if threads <= 1 or len(plains) < 16:
        return batch(plains)
    step = -(-len(plains) // (4 * threads))
    return [c for part in _pool(threads).map(batch, [plains[i:i + step] for i in range(0, len(plains), step)])
            for c in part]


def _pack_file(name: str, data: bytes, pos: int, o: dict, ss: int, threads: int = 1) -> tuple[bytes, int]:
    size = len(data)
    flags = FileFlags.EXISTS
    if size == 0:
        return b"", int(flags)
    key = None
    if o["encrypt"]:
        flags |= FileFlags.ENCRYPTED
        if o["fix_key"]:
            flags |= FileFlags.FIX_KEY
        key = file_key(name, pos, size, o["fix_key"])
    method = o["compression"]
    if method is not None and method not in _COMPRESSION_NAMES:
        raise UsageError(f"unknown compression {method!r} (zlib, bzip2, pkware, lzma or None)")
    cflag = FileFlags.IMPLODE if method == "pkware" else FileFlags.COMPRESS

    if o["single_unit"]:
        flags |= FileFlags.SINGLE_UNIT
        unit = data
        if method is not None:
            flags |= cflag
            c = compress_sector(data, method)
            if len(c) < size:
                unit = c
        return (encrypt_bytes(unit, key) if key is not None else unit), int(flags)

    nsec = -(-size // ss)
    if method is None:
        if key is None:
            return data, int(flags)
        return b"".join(encrypt_bytes(data[i * ss:(i + 1) * ss], (key + i) & _M32) for i in range(nsec)), int(flags)

    flags |= cflag
    plains = [data[i * ss:(i + 1) * ss] for i in range(nsec)]
    sectors = [c if len(c) < len(p) else p for c, p in zip(_compress_sectors(plains, method, threads), plains)]
    crc_blob = b""
    if o["sector_crc"]:
        flags |= FileFlags.SECTOR_CRC
        crc_blob = struct.pack(f"<{nsec}I", *(zlib.adler32(s, 0) for s in sectors))
        packed = b"\x02" + zlib.compress(crc_blob, 6)
        if len(packed) < len(crc_blob):
            crc_blob = packed
    nent = nsec + 1 + bool(o["sector_crc"])
    offs = [nent * 4]
    for s in sectors:
        offs.append(offs[-1] + len(s))
    if o["sector_crc"]:
        offs.append(offs[-1] + len(crc_blob))
    table = struct.pack(f"<{nent}I", *offs)
    if key is not None:
        table = encrypt_bytes(table, (key - 1) & _M32)
        sectors = [encrypt_bytes(s, (key + i) & _M32) for i, s in enumerate(sectors)]
    return table + b"".join(sectors) + crc_blob, int(flags)


def _listfile_bytes(names: Iterable[str]) -> bytes:
    uniq: dict[str, str] = {}
    for n in names:
        if n.lower() in SPECIAL_FILES:
            continue
        uniq.setdefault(n.upper(), n)
    return "".join(n + "\r\n" for n in sorted(uniq.values(), key=str.upper)).encode("utf-8", "surrogateescape")


def write_mpq(files: Mapping[str, bytes] | Iterable[tuple], *, format_version: int = 0,
              compression: str | None = "zlib", single_unit: bool = False, encrypt: bool = False,
              fix_key: bool = False, sector_crc: bool = False, sector_shift: int = 3,
              hash_table_size: int | None = None, listfile: bool = True, locale: int = 0,
              threads: int | None = None) -> bytes:
    """Build an MPQ archive (format v1 with ``format_version=0``, v2 with ``1``) in memory.

    ``files`` maps names to bytes, or yields ``(name, bytes, options)`` where options override the
    keyword defaults per file (``compression``, ``single_unit``, ``encrypt``, ``fix_key``,
    ``sector_crc``, ``locale``) or ask for a delete marker (``delete=True``). Output is
    deterministic: the same input gives the same bytes. ``threads`` compress a big file's
    sectors in parallel (default: one per CPU; the bytes do not depend on it).
    """
    threads = default_threads() if threads is None else threads
    if format_version not in (0, 1):
        raise UsageError(f"format_version {format_version}: only 0 (v1) and 1 (v2) are written")
    if not 1 <= sector_shift <= 16:
        # StormLib refuses archives with 512-byte sectors (shift 0), so none are written
        raise UsageError(f"sector_shift {sector_shift} outside 1..16")
    defaults = dict(compression=compression, single_unit=single_unit, encrypt=encrypt, fix_key=fix_key,
                    sector_crc=sector_crc, locale=locale, delete=False)
    items = [(n.replace("/", "\\"), bytes(d), {**defaults, **o}) for n, d, o in _items(files)]
    if listfile and not any(n.lower() == "(listfile)" for n, _, _ in items):
        items.append(("(listfile)", _listfile_bytes(n for n, _, _ in items), dict(defaults, locale=0)))

    nslots = len(items)
    if hash_table_size is None:
        hash_table_size = max(16, 1 << math.ceil(math.log2(nslots * 4 // 3 + 1)))
    if hash_table_size & (hash_table_size - 1) or hash_table_size < nslots:
        raise UsageError(f"hash_table_size {hash_table_size} must be a power of two >= {nslots} entries")

    header_size = HEADER_SIZES[format_version]
    ss = 512 << sector_shift
    out = bytearray(header_size)
    blocks = np.zeros(nslots, BLOCK_DTYPE)
    hashes = np.zeros(hash_table_size, HASH_DTYPE)
    hashes["hash_a"] = _M32
    hashes["hash_b"] = _M32
    hashes["locale"] = 0xFFFF
    hashes["platform"] = 0xFF
    hashes["flags"] = 0xFF
    hashes["block_index"] = HASH_ENTRY_EMPTY
    taken: set[tuple[str, int]] = set()
    mask = hash_table_size - 1
    for bi, (name, data, o) in enumerate(items):
        key_name = (name.upper(), int(o["locale"]))
        if key_name in taken:
            raise UsageError(f"{name}: listed twice for locale 0x{o['locale']:04X}")
        taken.add(key_name)
        pos = len(out)
        if o["delete"]:
            payload, flags, size = b"", int(FileFlags.EXISTS | FileFlags.DELETE_MARKER), 0
        else:
            payload, flags = _pack_file(name, data, pos, o, ss, threads)
            size = len(data)
        out += payload
        blocks[bi] = (pos, len(payload), size, flags)
        i = hash_string(name, HASH_OFFSET) & mask
        while hashes["block_index"][i] != HASH_ENTRY_EMPTY:
            i = (i + 1) & mask
        hashes[i] = (hash_string(name, HASH_A), hash_string(name, HASH_B), o["locale"], 0, 0, bi)

    hash_pos = len(out)
    out += encrypt_words(hashes.view("<u4"), KEY_HASH_TABLE).astype("<u4").tobytes()
    block_pos = len(out)
    out += encrypt_words(blocks.view("<u4"), KEY_BLOCK_TABLE).astype("<u4").tobytes()
    if len(out) > _M32:
        raise UsageError("archive larger than 4 GiB")
    fields = [MPQ_MAGIC, header_size, len(out), format_version, sector_shift, hash_pos, block_pos,
              hash_table_size, nslots]
    if format_version == 1:
        fields += [0, 0, 0]      # no high block table: nothing lies past 4 GiB
    st, _ = _HEADER_STRUCTS[format_version]
    st.pack_into(out, 0, *fields)
    return bytes(out)


def write_mpq_file(path, files, **options) -> Path:
    """``write_mpq`` straight to ``path``, atomically (temp file + rename)."""
    return write_atomic(path, write_mpq(files, **options))
