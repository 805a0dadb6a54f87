"""A bundle's instances as placement rows (CSV or JSON), like wow.export's placement CSV.

One row per instance: model path, world position (X north, Y west, Z up, yards), yaw (degrees
about Z, counter-clockwise from +X), scale, and the MCNK chunk (IndexY*16+IndexX) and cell
(r*8+c) the stored position lies in. Bundles store no per-instance cell, so it is derived from the
position; a position within float32 rounding of a cell edge may land in the neighbouring cell.

The rows stream: :func:`row_blocks` yields bytes tile by tile and, within a tile, in blocks of
:data:`BLOCK` rows, so memory stays flat whatever the row count. A block is formatted in bulk:
every field is a run of byte slots in one (rows, width) uint8 matrix (0 = no byte), and the row
text is the matrix's non-zero bytes. The text is numpy's: positions in the shortest form that
reads back as the same float32 (what ``str(np.float32(x))`` prints), yaw rounded to 4 decimals.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from functools import lru_cache

import numpy as np

from wowgrass.grass.bundle import read_bundle, read_header, unpack_instances
from wowgrass.game.coords import cell_of

COLUMNS = ("model", "x", "y", "z", "yaw", "scale", "tile_col", "tile_row", "chunk", "cell")
BLOCK = 1 << 14  # rows formatted at once: their slots (about 1.6 MB) stay in the cache

_P10 = 10.0 ** np.arange(23)  # exact in float64
_I10 = 10 ** np.arange(19, dtype=np.int64)
_MAX_DIGITS = 12  # a * 10**d stays exact in float64 up to here (24 + 28 bits)


def chunk_cell(pos: np.ndarray, col: int, row: int) -> tuple[np.ndarray, np.ndarray]:
    """MCNK index and cell index (r*8+c) of world positions inside tile (col, row)."""
    p = np.asarray(pos, np.float64)
    fx, fy = (np.clip(v, 0, 127) for v in cell_of(p[:, 0], p[:, 1], col, row))
    return ((fy // 8) * 16 + fx // 8).astype(np.int32), ((fy % 8) * 8 + fx % 8).astype(np.int32)


def bundle_rows(bundle) -> dict[str, np.ndarray]:
    """Column arrays of every instance of an open :class:`~wowgrass.grass.bundle.Bundle`, model by model."""
    col, row = (int(v) for v in bundle.tile)
    counts = [len(m) for m in bundle.models]
    inst = bundle.instances()
    pos, yaw, scale = unpack_instances(inst)
    chunk, cell = chunk_cell(pos, col, row)
    names = np.array([m.path for m in bundle.models] or [""], dtype=object)
    n = len(inst)
    return {
        "model": np.repeat(names[: len(counts)], counts) if counts else np.zeros(0, object),
        "x": pos[:, 0], "y": pos[:, 1], "z": pos[:, 2],
        "yaw": np.degrees(yaw.astype(np.float64)),
        "scale": scale,
        "tile_col": np.full(n, col, np.int32), "tile_row": np.full(n, row, np.int32),
        "chunk": chunk, "cell": cell,
    }


# ----------------------------------------------------------------------------- text in bulk


def _words(slots: np.ndarray) -> np.ndarray:
    """A slot table padded to whole uint64 words, as (rows, words) uint64: rows gather as words."""
    w = -(-slots.shape[1] // 8) * 8
    padded = np.zeros((slots.shape[0], w), np.uint8)
    padded[:, : slots.shape[1]] = slots
    return padded.view(np.uint64)


def _gather(words: np.ndarray, idx) -> np.ndarray:
    """Rows ``idx`` of a :func:`_words` table as (n, bytes) uint8 slots (word gathers: twice as fast)."""
    return np.take(words, idx, axis=0, mode="clip").view(np.uint8)


def _slots(strings) -> np.ndarray:
    """(n, width) uint8 of byte strings, NUL-padded."""
    arr = np.array(list(strings), dtype="S")
    return arr.view(np.uint8).reshape(len(arr), arr.dtype.itemsize)


@lru_cache(maxsize=None)
def _u16_tables() -> tuple[np.ndarray, np.ndarray]:
    """Slots of every stored yaw and scale (both 16-bit): the text ``astype(str)`` gives them."""
    every = np.zeros(65536, np.dtype([("pos", "<f4", 3), ("yaw", "<u2"), ("scale", "<u2")]))
    every["yaw"] = every["scale"] = np.arange(65536)
    _, yaw, scale = unpack_instances(every)
    yaw4 = np.round(np.degrees(yaw.astype(np.float64)), 4)
    # numpy prints a float64 rounded to 4 decimals as that decimal (7 digits at most: the nearest
    # float64 reads back from it), trailing zeros dropped; tests check all 65,536 against astype(str)
    return _decimal_slots(np.rint(yaw4 * 1e4).astype(np.int64), 4), float32_slots(scale)


def _decimal_slots(k: np.ndarray, decimals: int) -> np.ndarray:
    """Slots of non-negative ``k / 10**decimals`` as ``123.45`` (no trailing zeros, at least one decimal)."""
    ip, fp = np.divmod(k, _I10[decimals])
    ni = max(1, len(str(int(ip.max()))))
    out = np.zeros((k.shape[0], ni + 1 + decimals), np.uint8)
    for i in range(ni):
        p = _I10[ni - 1 - i]
        digit = ((ip // p) % 10 + 48).astype(np.uint8)
        out[:, i] = digit if i == ni - 1 else digit * (ip >= p)
    out[:, ni] = ord(".")
    for j in range(decimals):
        rest = fp % _I10[decimals - j]  # this digit and the ones after it
        digit = (rest // _I10[decimals - 1 - j] + 48).astype(np.uint8)
        out[:, ni + 1 + j] = digit if j == 0 else digit * (rest != 0)
    return out


@lru_cache(maxsize=None)
def _word_tables() -> tuple[np.ndarray, ...]:
    """yaw, scale, chunk and cell texts as :func:`_words` tables."""
    return (*(_words(t) for t in _u16_tables()), _words(_int_table(256)), _words(_int_table(64)))


@lru_cache(maxsize=None)
def _quad_table() -> np.ndarray:
    """uint32 whose 4 bytes are the ASCII digits of 0..9999 (zero-padded), in order."""
    return np.array([f"{i:04d}".encode() for i in range(10000)], "S4").view("<u4")


@lru_cache(maxsize=None)
def _int_table(n: int) -> np.ndarray:
    return _slots(np.arange(n).astype("S"))


def _shortest(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """(K, D, top) of magnitudes ``a`` (float64 of float32 values; zero or 1e-4 <= a < 1e6):
    the shortest text with D decimals that reads back as the same float32 is K / 10**top
    (K an integer in float64, a multiple of 10**(top - D)); ties of the last digit go to the even one.

    Exact: a float32 (24 bits) times 10**d (5**d: 28 bits for d <= 12) fits in 53 bits, and so
    do the half gaps to the neighbouring float32s; a candidate counts when strictly inside them,
    as numpy's Dragon4 has it. A candidate at d decimals is one at d + 1 too, so the search walks
    down from a d where every value has one (10**-d under its smaller half gap) and stops at the
    first d where none has. Whole-array steps: gathers cost ten times an arithmetic step here.
    """
    m, e = np.frexp(a)
    half = np.ldexp(1.0, e - 25)  # half the gap to the next float32 up
    low = np.where(m == 0.5, half * 0.5, half)  # below a power of two the gap down is half as wide
    top = int(np.clip(np.ceil((26 - e.min()) * np.log10(2.0)), 0, _MAX_DIGITS))
    n = a.shape[0]
    K = np.zeros(n)
    D = np.full(n, top, np.int64)
    live = None  # all
    for dd in range(top, -1, -1):
        al, hl, ll = (a, half, low) if live is None else (a[live], half[live], low[live])
        p = _P10[dd]
        s = al * p
        f = np.floor(s)
        dl = s - f  # exact
        dh = 1.0 - dl
        in_lo = dl < ll * p
        in_hi = dh < hl * p
        hit = in_lo | in_hi
        if dd < top and not hit.any():
            break
        up = in_hi & (~in_lo | (dh < dl))
        tie = in_lo & in_hi & (dh == dl)
        if tie.any():  # exactly halfway between two candidates: the even one
            up[tie] = (f[tie] * 0.5 - np.floor(f[tie] * 0.5)) == 0.5
        k = (f + up) * _P10[top - dd]
        if live is None:
            K = np.where(hit, k, K)
            D[hit] = dd
            if hit.sum() * 8 < n:
                live = np.nonzero(hit)[0]
        else:
            live = live[hit]
            K[live] = k[hit]
            D[live] = dd
            if not live.size:
                break
    return K, D, top


def float32_slots(v32: np.ndarray) -> np.ndarray:
    """(n, width) uint8 slots of float32 values as ``np.asarray(v, np.float32).astype(str)`` prints
    them: positional for zero and 1e-4 <= |v| < 1e6 (numpy's own scientific text for the rest)."""
    v32 = np.asarray(v32, np.float32)
    n = v32.shape[0]
    a = np.abs(v32).astype(np.float64)
    with np.errstate(invalid="ignore"):
        ok = (a == 0) | ((a >= 1e-4) & (a < 1e6))
    if not n:
        return np.zeros((0, 1), np.uint8)
    a[~ok] = 1.0
    amax = a.max()
    K, D, top = _shortest(a)
    if amax * _P10[top] >= 2.0**52:  # K would lose exactness: large and tiny values apart
        small = np.nonzero(a < 1.0)[0]
        big = np.nonzero(a >= 1.0)[0]
        parts = [float32_slots(np.where(ok, v32, 1.0).astype(np.float32)[i]) for i in (small, big)]
        out = np.zeros((n, max(p.shape[1] for p in parts)), np.uint8)
        for i, p in zip((small, big), parts):
            out[i, : p.shape[1]] = p
    else:
        nf = max(1, int(D.max()))
        Ki = (K / _P10[top - nf]).astype(np.int64)  # exact: a multiple of that power of ten
        ip = Ki // _I10[nf]
        ni = max(1, len(str(int(ip.max()))))
        groups = -(-(ni + nf) // 4)
        quads = np.empty((n, groups), np.uint32)  # K's digits, most significant first, 4 a word
        rest = Ki
        for g in range(groups - 1, -1, -1):
            quads[:, g] = np.take(_quad_table(), rest % 10000)
            rest = rest // 10000
        digits = quads.view(np.uint8)[:, 4 * groups - ni - nf :]
        out = np.empty((n, ni + nf + 2), np.uint8)
        out[:, 0] = np.signbit(v32) * np.uint8(ord("-"))
        # column by column: whole-column steps, not broadcasts over a few slots (slow here)
        for i in range(ni - 1):
            out[:, 1 + i] = digits[:, i] * (ip >= _I10[ni - 1 - i])  # no leading zeros
        out[:, ni] = digits[:, ni - 1]
        out[:, ni + 1] = ord(".")
        out[:, ni + 2] = digits[:, ni]
        for j in range(1, nf):
            out[:, ni + 2 + j] = digits[:, ni + j] * (D > j)  # no digits past the shortest
    bad = np.nonzero(~ok)[0]
    if bad.size:  # NaN, inf, tiny or huge values: numpy's own text
        text = _slots(v32[bad].astype("S"))
        if text.shape[1] > out.shape[1]:
            out = np.pad(out, ((0, 0), (0, text.shape[1] - out.shape[1])))
        out[bad] = 0
        out[bad, : text.shape[1]] = text
    return out


def _csv_field(text: str) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow([text])
    return buf.getvalue()


def _rows_bytes(parts: list) -> bytes:
    """Concatenate per-row fields (each a bytes constant or an (n, w) slot matrix) and keep the bytes."""
    n = next(p.shape[0] for p in parts if isinstance(p, np.ndarray))
    widths = [len(p) if isinstance(p, bytes) else p.shape[1] for p in parts]
    mat = np.empty((n, sum(widths)), np.uint8)
    at = 0
    for p, w in zip(parts, widths):
        if isinstance(p, bytes):
            mat[:, at : at + w] = np.frombuffer(p, np.uint8)
        else:
            mat[:, at : at + w] = p
        at += w
    flat = mat.reshape(-1)
    return np.compress(flat != 0, flat).tobytes()  # several times faster than a boolean index here


def tile_row_blocks(bundle, fmt: str, first: bool = True, block: int = BLOCK) -> Iterator[bytes]:
    """The rows of one open bundle as byte blocks (CSV lines, or JSON arrays each after ``,\\n``
    but the very first of the document when ``first``)."""
    col, row = (int(v) for v in bundle.tile)
    yaw_t, scale_t, chunk_t, cell_t = _word_tables()
    quote = _csv_field if fmt == "csv" else json.dumps
    pre, post = (b"", b"\n") if fmt == "csv" else (b",\n[", b"]")
    tile = f",{col},{row},".encode()
    for m in bundle.models:
        name = pre + quote(m.path).encode() + b","
        inst = m.instances
        for s in range(0, len(inst), block):
            part = inst[s : s + block]
            pos = part["pos"]
            chunk, cell = chunk_cell(pos, col, row)
            text = _rows_bytes([name, float32_slots(pos[:, 0]), b",", float32_slots(pos[:, 1]), b",",
                                float32_slots(pos[:, 2]), b",", _gather(yaw_t, part["yaw"]), b",",
                                _gather(scale_t, part["scale"]), tile, _gather(chunk_t, chunk), b",",
                                _gather(cell_t, cell), post])
            if first and fmt == "json":
                text = text[2:]
            first = False
            yield text


def count_rows(files: Iterable) -> int:
    """Instances in the bundles, from their headers (the rows are checked as they are read)."""
    total = 0
    for f in files:
        with open(f, "rb") as fh:
            total += int(read_header(fh.read(128), str(f))["instance_count"])
    return total


def row_blocks(files: list, fmt: str, *, block: int = BLOCK, on_file=None) -> Iterator[bytes]:
    """The whole document (CSV, or JSON ``{"files", "columns", "row_count", "rows"}``) for bundle
    ``files`` as byte blocks, one bundle open at a time. ``on_file(path, rows)`` after each."""
    if fmt == "csv":
        yield (",".join(COLUMNS) + "\n").encode()
    else:
        head = json.dumps({"files": [str(s) for s in files], "columns": list(COLUMNS), "row_count": count_rows(files)})
        yield (head[:-1] + ',"rows":[\n').encode()
    first = True
    for f in files:
        with read_bundle(f) as b:
            for text in tile_row_blocks(b, fmt, first, block):
                first = False
                yield text
            n = b.instance_count
        if on_file is not None:
            on_file(f, n)
    if fmt == "json":
        yield b"\n]}\n"


def rows_text(files: list, fmt: str, **kwargs) -> bytes:
    """:func:`row_blocks` joined (small exports, tests)."""
    return b"".join(row_blocks(files, fmt, **kwargs))
