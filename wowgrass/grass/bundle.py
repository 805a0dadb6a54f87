"""Baked instance bundles (``.wgb``): one versioned binary file per ADT tile.

A bundle holds every grass instance of one tile, grouped per model into contiguous, 64-byte
aligned arrays of 16-byte :data:`INSTANCE_DTYPE` records, so a reader memory-maps the file and
hands each array to the GPU as is (no per-instance Python work). Layout (all little-endian;
byte-level spec in docs/bake.md)::

    0      header (128 B, HEADER_SPEC)         magic b"WGBN", format version, counts, offsets,
                                               sha256 provenance key, crc32 checksum
    128    model table (model_count x 64 B)    MODEL_DTYPE: path, instance range, flags, bbox, z range
    ...    strings                             model paths, UTF-8, NUL-terminated
    ...    provenance                          canonical JSON (ADT hash, DBC rows, strategy, constants, ...)
    64k    cell counts  u2[256*64]              instances per MCNK cell (chunk-major, r*8+c)
    64k    instances, model 0, model 1, ...     INSTANCE_DTYPE arrays, each 64-byte aligned
    64k    scatter order (flag 0x1)            u4 per instance in file order: its place in the scatter
    end    file_size

The checksum is CRC-32 of every byte of the file except the checksum field itself. A file that
is shorter than its header says is a :class:`TruncatedError`, a checksum mismatch a
:class:`ChecksumError`, another format version or provenance key a :class:`StaleBundleError`;
all are :class:`FormatError` subclasses, and the baker treats any of them as "rebuild".
Writes are atomic (temporary file, then rename), so a reader never sees half a bundle.
"""

from __future__ import annotations

import hashlib
import json
import math
import mmap
import os
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from wowgrass.errors import ChecksumError, FormatError, StaleBundleError, TruncatedError
from wowgrass.fileio import write_atomic

MAGIC = b"WGBN"
FORMAT_VERSION = 1
ALIGN = 64
SUFFIX = ".wgb"

INSTANCE_DTYPE = np.dtype(
    [
        ("pos", "<f4", 3),  # world X (north), Y (west), Z (up)
        ("yaw", "<u2"),  # yaw / (2*pi) * 65536, wraps
        ("scale", "<u2"),  # scale * 4096 (1.0 -> 4096)
    ]
)
assert INSTANCE_DTYPE.itemsize == 16

MODEL_PRESENT = 0x1  # the model file was found; bbox and z range are real

#: header flags
FLAG_SCATTER_ORDER = 0x1  # a u4 per instance (file order) gives its place in the placement's order
FLAG_CAPACITY = 0x2  # the client's draw capacity was applied: ``capacity_dropped`` placements left out

MODEL_DTYPE = np.dtype(
    [
        ("path_offset", "<u4"),  # into the string block
        ("path_size", "<u4"),  # bytes, without the NUL
        ("data_offset", "<u8"),  # absolute file offset of this model's instances (64-aligned)
        ("count", "<u4"),  # instances
        ("flags", "<u4"),  # MODEL_PRESENT
        ("bbox_min", "<f4", 3),  # model space; NaN when the model is missing
        ("bbox_max", "<f4", 3),
        ("z_min", "<f4"),  # vertex z range (wind sway); 0 when missing
        ("z_max", "<f4"),
        ("reserved", "<u4", 2),
    ]
)
assert MODEL_DTYPE.itemsize == 64

# (name, struct code) in file order; the header is exactly HEADER_SIZE bytes.
HEADER_SPEC = (
    ("magic", "4s"),
    ("version", "H"),
    ("header_size", "H"),
    ("flags", "I"),
    ("model_count", "I"),
    ("tile_col", "h"),
    ("tile_row", "h"),
    ("instance_count", "Q"),
    ("models_offset", "I"),
    ("strings_offset", "I"),
    ("strings_size", "I"),
    ("provenance_offset", "I"),
    ("provenance_size", "I"),
    ("cells_offset", "I"),
    ("data_offset", "Q"),
    ("file_size", "Q"),
    ("key", "32s"),  # sha256 of the canonical provenance JSON: the cache key
    ("order_offset", "Q"),  # the scatter order block (FLAG_SCATTER_ORDER), else 0
    ("capacity_dropped", "I"),  # placements the draw capacity left out (FLAG_CAPACITY), else 0
    ("reserved", "12s"),
    ("checksum", "I"),  # crc32 of the file with these 4 bytes left out
)
_HEADER = struct.Struct("<" + "".join(code for _, code in HEADER_SPEC))
HEADER_SIZE = 128
assert _HEADER.size == HEADER_SIZE
CHECKSUM_OFFSET = HEADER_SIZE - 4
KEY_OFFSET = 68
CELLS = 256 * 64
CELLS_BYTES = CELLS * 2


# ----------------------------------------------------------------------------- instances


def pack_instances(pos, yaw, scale) -> np.ndarray:
    """(n, 3) positions, yaw in radians, scale -> (n,) INSTANCE_DTYPE."""
    return _pack_words(pos, yaw, scale).view(INSTANCE_DTYPE).reshape(-1)


# a record's first 12 bytes as one field: numpy copies a (3,) float field element by element
_POS_BYTES = np.dtype({"names": ["pos"], "formats": ["V12"], "offsets": [0], "itemsize": INSTANCE_DTYPE.itemsize})


def yaw_turns16(yaw) -> np.ndarray:
    """Radians -> the stored yaw, ``round(yaw / 2pi * 65536) mod 65536``, as int64."""
    # the same float64 steps, in place (no temporaries of the tile's size)
    turns = np.divide(np.asarray(yaw).reshape(-1), 2.0 * math.pi, dtype=np.float64)
    turns *= 65536.0
    np.round(turns, out=turns)
    yaw16 = turns.astype(np.int64)
    yaw16 &= 0xFFFF
    return yaw16


def scale_word(scale) -> np.ndarray:
    """Scale factors -> the stored 16-bit scale (4096 = 1.0, clamped), as uint32."""
    return np.clip(np.round(np.asarray(scale, dtype=np.float64) * 4096.0), 0, 65535).astype(np.uint32)


def _pack_words(pos, yaw, scale) -> np.ndarray:
    """:func:`pack_instances` as (n, 4) little-endian words: x, y, z, then yaw | scale << 16."""
    pos = np.ascontiguousarray(pos, dtype="<f4").reshape(-1, 3)
    n = pos.shape[0]
    words = np.empty((n, 4), "<u4")
    words.view(_POS_BYTES).reshape(n)["pos"] = pos.view("V12").reshape(n)
    scale = np.asarray(scale).reshape(-1)
    if scale.size and scale.min() == scale.max():  # one scale for all (the coverage placement): once
        scale = scale[:1]
    s = scale_word(scale)
    s <<= 16
    np.bitwise_or(yaw_turns16(yaw), s, out=words[:, 3], casting="unsafe")
    return words


def unpack_instances(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """INSTANCE_DTYPE records -> (pos (n, 3) f4, yaw radians f4, scale f4)."""
    yaw = (arr["yaw"].astype(np.float64) * (2.0 * math.pi / 65536.0)).astype(np.float32)
    scale = (arr["scale"].astype(np.float64) / 4096.0).astype(np.float32)
    return np.array(arr["pos"], dtype=np.float32), yaw, scale


# ----------------------------------------------------------------------------- provenance


def canonical_json(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def provenance_key(provenance: dict) -> str:
    """sha256 hex of the canonical provenance JSON (the bundle's cache key)."""
    return hashlib.sha256(canonical_json(provenance)).hexdigest()


# ----------------------------------------------------------------------------- model table


@dataclass
class ModelInfo:
    """What the bundle records about one model besides its instances."""

    path: str
    present: bool = False
    bbox_min: tuple = (math.nan, math.nan, math.nan)
    bbox_max: tuple = (math.nan, math.nan, math.nan)
    z_min: float = 0.0
    z_max: float = 0.0

    def to_dict(self) -> dict:
        def num(v):
            return None if isinstance(v, float) and math.isnan(v) else v

        return {
            "path": self.path,
            "present": self.present,
            "bbox_min": [num(float(v)) for v in self.bbox_min],
            "bbox_max": [num(float(v)) for v in self.bbox_max],
            "z_min": float(self.z_min),
            "z_max": float(self.z_max),
        }


@dataclass
class BundleModel:
    info: ModelInfo
    instances: np.ndarray  # INSTANCE_DTYPE view into the file

    @property
    def path(self) -> str:
        return self.info.path

    def __len__(self) -> int:
        return int(self.instances.shape[0])


@dataclass
class Bundle:
    """A read bundle; ``models[i].instances`` are views into a memory map (close() when done)."""

    path: Path | None
    version: int
    key: str
    tile: tuple[int, int]
    provenance: dict
    models: list[BundleModel]
    cell_counts: np.ndarray  # (256, 8, 8) u2
    file_size: int
    _mmap: object = field(default=None, repr=False)
    #: (n,) u4 in file order (model by model): each instance's place in the placement's (scatter)
    #: order, or None where the bundle does not record it
    scatter_order: np.ndarray | None = None
    #: placements the client's draw capacity left out, or None where it was not applied
    capacity_dropped: int | None = None

    @property
    def instance_count(self) -> int:
        return sum(len(m) for m in self.models)

    def instances(self) -> np.ndarray:
        """All instances (a copy), model by model."""
        if not self.models:
            return np.zeros(0, INSTANCE_DTYPE)
        return np.concatenate([m.instances for m in self.models])

    def close(self) -> None:
        """Drop the arrays and unmap the file (views taken earlier must not be used after)."""
        mm, self._mmap = self._mmap, None
        for m in self.models:
            m.instances = np.zeros(0, INSTANCE_DTYPE)
        if mm is not None:
            try:
                mm.close()
            except BufferError:  # someone still holds a view; the map goes when they do
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def stats(self) -> dict:
        """Instances per model, per-cell statistics and sizes (what ``bundle info`` prints)."""
        counts = self.cell_counts.reshape(-1).astype(np.int64)
        filled = counts[counts > 0]
        n = self.instance_count
        hist = np.bincount(counts, minlength=1)
        return {
            "file": str(self.path) if self.path else None,
            "format_version": self.version,
            "tile": list(self.tile),
            "instances": n,
            "models": [
                {**m.info.to_dict(), "instances": len(m)} for m in self.models
            ],
            "missing_models": [m.path for m in self.models if not m.info.present],
            "cells": {
                "cell_count": int(counts.size),
                "with_grass": int(filled.size),
                "min": int(filled.min()) if filled.size else 0,
                "mean": float(filled.mean()) if filled.size else 0.0,
                "max": int(filled.max()) if filled.size else 0,
                "histogram": {str(i): int(hist[i]) for i in np.flatnonzero(hist).tolist()},
            },
            "scatter_order": self.scatter_order is not None,
            "capacity_dropped_count": self.capacity_dropped,
            "bytes_per_instance": INSTANCE_DTYPE.itemsize,
            "file_size": self.file_size,
            "file_bytes_per_instance": (self.file_size / n) if n else None,
            "key": self.key,
            "provenance": self.provenance,
        }


# ----------------------------------------------------------------------------- writing


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def bundle_bytes(
    *,
    model_index: np.ndarray,
    pos: np.ndarray,
    yaw: np.ndarray,
    scale: np.ndarray,
    models: Sequence[ModelInfo],  # indexed by model_index
    provenance: dict,
    tile: tuple[int, int],
    cell_counts: np.ndarray | None = None,
    scatter_order: bool = False,
    capacity_dropped: int | None = None,
) -> bytes:
    """Serialize a bundle. ``model_index`` indexes ``models``; only models with instances are kept."""
    return bytes(_bundle_buffer(model_index=model_index, pos=pos, yaw=yaw, scale=scale, models=models,
                                provenance=provenance, tile=tile, cell_counts=cell_counts,
                                scatter_order=scatter_order, capacity_dropped=capacity_dropped))


def _bundle_buffer(*, model_index, pos, yaw, scale, models, provenance, tile, cell_counts=None, records=None,
                   aligned: bool = False, scatter_order: bool = False, capacity_dropped: int | None = None):
    """:func:`bundle_bytes` without the final copy: the records are packed once, in input order,
    and gathered into model order straight into the file's buffer (a tile is 2.6 MB) as pairs
    of 8-byte words (which take copies fast); each model's block is checksummed as it lands
    (while it is in the cache), the header first. A bytearray, or with ``aligned`` an
    :class:`~wowgrass.fileio.AlignedBlock` in this thread's reused page-aligned buffer (valid
    until the thread's next aligned bundle). ``scatter_order``: also record each instance's
    place in the input order (the client placement's scatter order, which the grouping by model
    loses); ``capacity_dropped``: how many placements the client's draw capacity left out."""
    model_index = np.asarray(model_index).reshape(-1)
    n = model_index.shape[0]
    small = 0 < len(models) <= 0x10000
    # a stable sort on 8- or 16-bit keys is a radix sort (one pass a byte): the same order as on
    # int64, in linear time
    keys = model_index.astype(np.min_scalar_type(len(models) - 1)) if small else model_index
    order = np.argsort(keys, kind="stable")
    if n and small:  # the sorted keys' boundaries: cheaper than a bincount through intp
        counts = np.diff(np.searchsorted(keys.take(order), np.arange(len(models) + 1)))
    else:
        counts = np.bincount(model_index, minlength=len(models)) if n else np.zeros(len(models), np.int64)
    used = np.nonzero(counts)[0]
    # element-wise: packing then sorting is the same records (``records``: packed by the placement)
    words = (_pack_words(pos, yaw, scale) if records is None else np.ascontiguousarray(records, "<u4")).view(np.uint64)

    strings = bytearray()
    table = np.zeros(len(used), dtype=MODEL_DTYPE)
    for i, m in enumerate(used.tolist()):
        info = models[m]
        raw = info.path.encode("utf-8")
        table[i]["path_offset"] = len(strings)
        table[i]["path_size"] = len(raw)
        strings += raw + b"\0"
        table[i]["count"] = counts[m]
        table[i]["flags"] = MODEL_PRESENT if info.present else 0
        table[i]["bbox_min"] = info.bbox_min
        table[i]["bbox_max"] = info.bbox_max
        table[i]["z_min"] = info.z_min
        table[i]["z_max"] = info.z_max
    prov = canonical_json(provenance)

    models_offset = HEADER_SIZE
    strings_offset = models_offset + table.nbytes
    provenance_offset = strings_offset + len(strings)
    cells_offset = _align(provenance_offset + len(prov))
    offset = data_offset = _align(cells_offset + CELLS_BYTES)
    block_counts = counts[used].tolist()
    for i, c in enumerate(block_counts):
        table[i]["data_offset"] = offset
        offset = _align(offset + c * INSTANCE_DTYPE.itemsize)
    data_end = offset
    order_offset = 0
    if scatter_order:
        order_offset = offset
        offset = _align(offset + n * 4)
    file_size = offset

    if aligned:
        from wowgrass.fileio import AlignedBlock, aligned_scratch

        scratch = aligned_scratch(file_size)
        buf = scratch[:file_size]
        # only the records are written over: the rest (headers, padding, the aligned tail) is zeroed
        buf[:data_offset] = bytes(data_offset)
        for i, c in enumerate(block_counts):
            end = int(table[i]["data_offset"]) + c * INSTANCE_DTYPE.itemsize
            buf[end:_align(end)] = bytes(_align(end) - end)
        scratch[file_size:] = bytes(len(scratch) - file_size)
        if scatter_order:
            buf[order_offset + 4 * n : file_size] = bytes(file_size - order_offset - 4 * n)
    else:
        buf = bytearray(file_size)
    buf[models_offset:strings_offset] = table.tobytes()
    buf[strings_offset:provenance_offset] = strings
    buf[provenance_offset : provenance_offset + len(prov)] = prov
    cells = np.zeros(CELLS, "<u2") if cell_counts is None else np.asarray(cell_counts, "<u2").reshape(CELLS)
    buf[cells_offset : cells_offset + CELLS_BYTES] = cells.tobytes()
    header = {
        "magic": MAGIC,
        "version": FORMAT_VERSION,
        "header_size": HEADER_SIZE,
        "flags": (FLAG_SCATTER_ORDER if scatter_order else 0) | (FLAG_CAPACITY if capacity_dropped is not None else 0),
        "model_count": len(used),
        "tile_col": int(tile[0]),
        "tile_row": int(tile[1]),
        "instance_count": n,
        "models_offset": models_offset,
        "strings_offset": strings_offset,
        "strings_size": len(strings),
        "provenance_offset": provenance_offset,
        "provenance_size": len(prov),
        "cells_offset": cells_offset,
        "data_offset": data_offset,
        "file_size": file_size,
        "key": hashlib.sha256(prov).digest(),  # provenance_key() of the JSON written above
        "order_offset": order_offset,
        "capacity_dropped": 0 if capacity_dropped is None else int(capacity_dropped),
        "reserved": b"",
        "checksum": 0,
    }
    _HEADER.pack_into(buf, 0, *(header[name] for name, _ in HEADER_SPEC))
    view = memoryview(buf)
    crc = zlib.crc32(view[HEADER_SIZE:data_offset], zlib.crc32(view[:CHECKSUM_OFFSET]))  # as file_checksum
    start, dest = 0, None
    for i, c in enumerate(block_counts):
        at = int(table[i]["data_offset"])
        dest = np.frombuffer(buf, np.uint64, count=2 * c, offset=at).reshape(c, 2)
        np.take(words, order[start : start + c], axis=0, out=dest, mode="clip")  # "raise" buffers out
        start += c
        crc = zlib.crc32(view[at : int(table[i + 1]["data_offset"]) if i + 1 < len(block_counts) else data_end], crc)
    if scatter_order:  # file position j holds input record order[j]
        buf[order_offset : order_offset + 4 * n] = order.astype("<u4").tobytes()
    crc = zlib.crc32(view[data_end:file_size], crc)
    del dest, view  # the buffer's views go before it is handed on
    struct.pack_into("<I", buf, CHECKSUM_OFFSET, crc & 0xFFFFFFFF)
    return AlignedBlock(scratch, file_size) if aligned else buf


def write_bundle(path, *, durable: bool = True, **kwargs) -> Path:
    """:func:`bundle_bytes`, written atomically to ``path`` (``durable``: see write_atomic)."""
    return write_atomic(path, _bundle_buffer(**kwargs), durable=durable, sweep=False)  # bake_map sweeps the folder


def write_instances_bundle(path, instances, models: Sequence[ModelInfo], provenance: dict, *,
                           durable: bool = True, direct: bool = False) -> Path:
    """Write a :class:`wowgrass.grass.placement.Instances` (its ``models`` indexes ``models``)."""
    return write_atomic(path, instances_bundle_data(instances, models, provenance, direct=direct), durable=durable,
                        sweep=False)  # bake_map sweeps the folder


def instances_bundle_data(instances, models: Sequence[ModelInfo], provenance: dict, *, direct: bool = False,
                          scatter_order: bool = False, capacity_dropped: int | None = None):
    """The bundle file of :func:`write_instances_bundle`, to write later: a bytearray, or with
    ``direct`` (where the system has O_DIRECT) an :class:`~wowgrass.fileio.AlignedBlock` in
    this thread's aligned buffer, valid until the thread builds its next one."""
    from wowgrass.fileio import direct_writes

    return _bundle_buffer(
        aligned=direct and direct_writes(),
        records=getattr(instances, "records", None),
        model_index=instances.model,
        pos=instances.pos,
        yaw=instances.yaw,
        scale=instances.scale,
        models=models,
        provenance=provenance,
        tile=tuple(int(v) for v in provenance.get("tile", (0, 0))),
        cell_counts=instances.cell_counts(),
        scatter_order=scatter_order,
        capacity_dropped=capacity_dropped,
    )


# ----------------------------------------------------------------------------- reading
_INT, _STR, _BOOL = "int", "str", "bool"
#: the type of each provenance field bake writes (all optional; other keys may hold any JSON)
PROVENANCE_FIELDS = {
    "format": _STR, "format_version": _INT, "placement_version": _INT, "map": _STR, "tile": (_INT, _INT),
    "build": _STR, "big_alpha": _BOOL, "adt_sha256": _STR, "dbc_rows_sha256": _STR, "effect_ids": [_INT],
    "placement": _STR, "constants": {}, "models": [{}],
}
_MAX_DEPTH = 16


def _shape_problem(value, shape, where: str) -> str | None:
    ok = {_INT: lambda v: isinstance(v, int) and not isinstance(v, bool), _STR: lambda v: isinstance(v, str),
          _BOOL: lambda v: isinstance(v, bool)}
    if isinstance(shape, str):
        return None if ok[shape](value) else f"{where} should be {'an' if shape == _INT else 'a'} {shape}, " \
                                             f"not {type(value).__name__}"
    if isinstance(shape, tuple):
        if not isinstance(value, list) or len(value) != len(shape):
            return f"{where} should be a list of {len(shape)}"
        return next((p for i, (v, s) in enumerate(zip(value, shape)) if (p := _shape_problem(v, s, f"{where}[{i}]"))),
                    None)
    if isinstance(shape, list):
        if not isinstance(value, list):
            return f"{where} should be a list, not {type(value).__name__}"
        return next((p for i, v in enumerate(value) if (p := _shape_problem(v, shape[0], f"{where}[{i}]"))), None)
    return None if isinstance(value, dict) else f"{where} should be a table, not {type(value).__name__}"


def _json_problem(value, where: str, depth: int = 0) -> str | None:
    """Strings that cannot be printed (lone surrogates) or nesting past :data:`_MAX_DEPTH`."""
    if depth > _MAX_DEPTH:
        return f"{where} nests deeper than {_MAX_DEPTH} levels"
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return f"{where} holds a lone surrogate (not text)"
    elif isinstance(value, list):
        return next((p for i, v in enumerate(value) if (p := _json_problem(v, f"{where}[{i}]", depth + 1))), None)
    elif isinstance(value, dict):
        return next((p for k, v in value.items()
                     if (p := _json_problem(k, where, depth + 1) or _json_problem(v, f"{where}.{k}", depth + 1))), None)
    return None


def provenance_problem(prov) -> str | None:
    """What is wrong with a decoded provenance (None when it has the shape bake writes)."""
    if not isinstance(prov, dict):
        return f"should be a table, not {type(prov).__name__}"
    problem = _json_problem(prov, "provenance")
    if problem:
        return problem
    return next((p for k, shape in PROVENANCE_FIELDS.items() if k in prov and (p := _shape_problem(prov[k], shape, k))),
                None)



def file_checksum(buf) -> int:
    """CRC-32 of a file whose last 4 header bytes (offset 124) hold the checksum (bundles, grid files)."""
    view = memoryview(buf)
    crc = zlib.crc32(view[:CHECKSUM_OFFSET])
    return zlib.crc32(view[HEADER_SIZE:], crc) & 0xFFFFFFFF


def read_header(buf, path=None) -> dict:
    if len(buf) < HEADER_SIZE:
        raise TruncatedError(f"bundle header needs {HEADER_SIZE} bytes, file has {len(buf)}", path=path, offset=0)
    values = _HEADER.unpack_from(buf, 0)
    h = dict(zip((name for name, _ in HEADER_SPEC), values))
    if h["magic"] != MAGIC:
        raise FormatError(f"not a wowgrass bundle (magic {h['magic']!r}, expected {MAGIC!r})", path=path, offset=0)
    return h


def read_bundle(path, *, expect_key: str | None = None, verify: bool = True) -> Bundle:
    """Memory-map a bundle and check it.

    Raises TruncatedError / ChecksumError / StaleBundleError (format version or, when
    ``expect_key`` is given, provenance key mismatch) / FormatError. ``verify=False`` skips the
    checksum (structure and bounds are still checked).
    """
    path = Path(path)
    spath = str(path)
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size < HEADER_SIZE:
            raise TruncatedError(f"bundle header needs {HEADER_SIZE} bytes, file has {size}", path=spath, offset=0)
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        return _parse(mm, spath, path, expect_key, verify)
    except BaseException:
        try:
            mm.close()
        except BufferError:  # a view in the traceback still holds it; it goes with the traceback
            pass
        raise


def _parse(buf, spath, path, expect_key, verify) -> Bundle:
    h = read_header(buf, spath)
    if h["version"] != FORMAT_VERSION:
        raise StaleBundleError(
            f"bundle format version {h['version']}, this wowgrass writes {FORMAT_VERSION}", path=spath, offset=4
        )
    if h["header_size"] != HEADER_SIZE:
        raise FormatError(f"header size {h['header_size']}, expected {HEADER_SIZE}", path=spath, offset=6)
    if h["file_size"] != len(buf):
        cls = TruncatedError if len(buf) < h["file_size"] else FormatError
        raise cls(f"bundle says {h['file_size']} bytes, file has {len(buf)}", path=spath, offset=len(buf))
    if verify:
        stored = h["checksum"]
        actual = file_checksum(buf)
        if stored != actual:
            raise ChecksumError(f"checksum {actual:08x} does not match stored {stored:08x}", path=spath,
                                offset=CHECKSUM_OFFSET)
    key = h["key"].hex()
    if expect_key is not None and key != expect_key:
        raise StaleBundleError(f"provenance key {key[:16]}… differs from the expected {expect_key[:16]}…",
                               path=spath, offset=KEY_OFFSET)

    def region(off, size, what):
        if off < HEADER_SIZE or off + size > len(buf):
            raise FormatError(f"{what} at {off}+{size} lies outside the file ({len(buf)} bytes)", path=spath,
                              offset=off)

    mc = h["model_count"]
    region(h["models_offset"], mc * MODEL_DTYPE.itemsize, "model table")
    region(h["strings_offset"], h["strings_size"], "string block")
    region(h["provenance_offset"], h["provenance_size"], "provenance")
    region(h["cells_offset"], CELLS_BYTES, "cell counts")
    table = np.frombuffer(buf, MODEL_DTYPE, count=mc, offset=h["models_offset"])
    strings = bytes(buf[h["strings_offset"] : h["strings_offset"] + h["strings_size"]])
    try:
        prov = json.loads(bytes(buf[h["provenance_offset"] : h["provenance_offset"] + h["provenance_size"]]))
    except (ValueError, RecursionError) as exc:
        raise FormatError(f"provenance is not JSON: {exc}", path=spath, offset=h["provenance_offset"]) from None
    problem = provenance_problem(prov)
    if problem:
        raise FormatError(f"provenance: {problem}", path=spath, offset=h["provenance_offset"])
    cells = np.frombuffer(buf, "<u2", count=CELLS, offset=h["cells_offset"]).reshape(256, 8, 8).copy()
    models = []
    total = 0
    for i, rec in enumerate(table):
        po, ps = int(rec["path_offset"]), int(rec["path_size"])
        if po + ps > len(strings):
            raise FormatError(f"model {i}: path outside the string block", path=spath,
                              offset=h["models_offset"] + i * 64)
        off, count = int(rec["data_offset"]), int(rec["count"])
        if off % ALIGN:
            raise FormatError(f"model {i}: instances at {off} not {ALIGN}-byte aligned", path=spath, offset=off)
        region(off, count * INSTANCE_DTYPE.itemsize, f"model {i} instances")
        info = ModelInfo(
            path=strings[po : po + ps].decode("utf-8", "replace"),
            present=bool(rec["flags"] & MODEL_PRESENT),
            bbox_min=tuple(float(v) for v in rec["bbox_min"]),
            bbox_max=tuple(float(v) for v in rec["bbox_max"]),
            z_min=float(rec["z_min"]),
            z_max=float(rec["z_max"]),
        )
        models.append(BundleModel(info, np.frombuffer(buf, INSTANCE_DTYPE, count=count, offset=off)))
        total += count
    if total != h["instance_count"]:
        raise FormatError(f"models hold {total} instances, header says {h['instance_count']}", path=spath,
                          offset=0x14)
    order = None
    if h["flags"] & FLAG_SCATTER_ORDER:
        off = h["order_offset"]
        if off % ALIGN:
            raise FormatError(f"scatter order at {off} not {ALIGN}-byte aligned", path=spath, offset=off)
        region(off, 4 * total, "scatter order")
        order = np.frombuffer(buf, "<u4", count=total, offset=off).copy()  # small: outlives the map
        if total and int(order.max()) >= total:
            raise FormatError(f"scatter order names place {int(order.max())} of {total}", path=spath, offset=off)
    return Bundle(
        path=path,
        version=h["version"],
        key=key,
        tile=(h["tile_col"], h["tile_row"]),
        provenance=prov,
        models=models,
        cell_counts=cells,
        file_size=len(buf),
        _mmap=buf,
        scatter_order=order,
        capacity_dropped=int(h["capacity_dropped"]) if h["flags"] & FLAG_CAPACITY else None,
    )


def sniff(prefix: bytes) -> bool:
    return prefix[:4] == MAGIC
