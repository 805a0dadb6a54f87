"""WDBC client database tables (WoW 1.x – 3.3.5), read into numpy and written back.

Layout (formats.md §3.1): a 20-byte header ``'WDBC', u32 recordCount, u32 fieldCount, u32 recordSize,
u32 stringBlockSize``, then ``recordCount × recordSize`` bytes of records (4-byte fields in 1.x–3.x),
then the string block. A string field is a byte offset into the string block; offset 0 is the empty
string. https://wowdev.wiki/DBC

Records are one ``np.frombuffer`` over the file: a ``(n, fieldCount) <u4`` matrix (:attr:`DbcFile.raw`),
or a structured array when a schema is applied. Schemas come from the vendored WoWDBDefs ``.dbd`` files
(:mod:`wowgrass.formats.dbd`) for builds 1.12.1, 2.4.3 and 3.3.5 (plus the pre-1.11 ``1.10`` layout),
picked by ``build=`` or detected from field count, record size and which columns hold string offsets
(:func:`detect_schema`).

Quirks:
* GroundEffectTexture has no strings in 1.12–3.3.5; its string block is a single NUL.
* GroundEffectDoodad has 3 fields in every build here: 1.12/2.4.3 ``ID, DoodadIdTag, Doodadpath``;
  3.3.5 ``ID, Doodadpath, Flags``. Only the column that holds string offsets tells them apart.
* Some tools write headers that understate the string block; ``strict=False`` reads strings up to
  the end of the file and records a warning instead of failing.
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass, field
from typing import Iterable

import numpy as np

from wowgrass.binary import array as bounded_array
from wowgrass.binary import unpack_from
from wowgrass.errors import FormatError, TruncatedError, UnsupportedError, UsageError
from wowgrass.formats import dbd

MAGIC = b"WDBC"
HEADER = struct.Struct("<4sIIII")
HEADER_SIZE = HEADER.size
assert HEADER_SIZE == 20

#: short build name → the exact build number looked up in the .dbd files
BUILDS = {"1.10": "1.10.2.5302", "1.12": "1.12.1.5875", "2.4.3": "2.4.3.8606", "3.3.5": "3.3.5.12340"}
_BUILD_ALIASES = {"1.12.1": "1.12", "1.12.x": "1.12", "vanilla": "1.12", "2.4": "2.4.3", "tbc": "2.4.3",
                  "3.3.5a": "3.3.5", "wotlk": "3.3.5", "1.10.2": "1.10", "pre-1.11": "1.10"}

#: bigger than any WDBC record of 1.x-3.x (the widest, Spell.dbc, is under 1 KB)
MAX_RECORD_SIZE = 1 << 16

GROUND_EFFECT_TEXTURE = "GroundEffectTexture"
GROUND_EFFECT_DOODAD = "GroundEffectDoodad"
MAP = "Map"

# Map.dbc, which wowgrass reads for its Directory column (the client's list of maps). No .dbd ships
# for it: the layout is written here, its field counts and the positions of the named fields read
# from WoWDBDefs' Map.dbd (1.12.1.5875, 2.4.3.8606, 3.3.5.12340). ID is field 0 and Directory field 1
# in all three; the fields wowgrass has no use for stay numbered. build -> (fields, MapName_lang's
# first field, locales in a locstring)
MAP_LAYOUTS = {"1.12": (42, 4, 8), "2.4.3": (125, 4, 16), "3.3.5": (66, 5, 16)}

# Sizes documented in formats.md §3.2/§3.3, checked against the .dbd-derived dtypes below.
DOCUMENTED_RECORD_SIZES = {
    (GROUND_EFFECT_TEXTURE, "1.10"): 44,
    (GROUND_EFFECT_TEXTURE, "1.12"): 28,
    (GROUND_EFFECT_TEXTURE, "2.4.3"): 28,
    (GROUND_EFFECT_TEXTURE, "3.3.5"): 44,
    (GROUND_EFFECT_DOODAD, "1.10"): 12,
    (GROUND_EFFECT_DOODAD, "1.12"): 12,
    (GROUND_EFFECT_DOODAD, "2.4.3"): 12,
    (GROUND_EFFECT_DOODAD, "3.3.5"): 12,
}


def normalize_build(build: str) -> str:
    """``"3.3.5.12340"``, ``"3.3.5a"``, ``"wotlk"`` → ``"3.3.5"``; UsageError otherwise."""
    b = str(build).strip().lower()
    if b in BUILDS:
        return b
    if b in _BUILD_ALIASES:
        return _BUILD_ALIASES[b]
    for short, full in BUILDS.items():
        if b == full or (b.count(".") == 3 and b.rsplit(".", 1)[0] == full.rsplit(".", 1)[0]):
            return short
    raise UsageError(f"unknown build {build!r} (expected one of {', '.join(BUILDS)})")


def table_name(path: str) -> str:
    """``'DBFilesClient\\\\GroundEffectTexture.dbc'`` → ``'GroundEffectTexture'``."""
    base = str(path).replace("\\", "/").rsplit("/", 1)[-1]
    return base[:-4] if base.lower().endswith(".dbc") else base


# --------------------------------------------------------------------------------------------- schema
@dataclass(frozen=True)
class DbcSchema:
    """Typed layout of one table in one build: a structured dtype plus which fields are strings."""

    table: str
    build: str  # short name, see BUILDS
    build_range: str  # the .dbd BUILD entry that covers it, e.g. "3.0.1.8681-3.3.5.12340"
    dtype: np.dtype
    string_fields: tuple[str, ...]
    id_field: str

    @property
    def record_size(self) -> int:
        return self.dtype.itemsize

    @property
    def field_count(self) -> int:
        return sum(int(np.prod(self.dtype[n].shape or (1,))) for n in self.dtype.names)

    def columns(self) -> list[str]:
        """Column names with array lengths, e.g. ``['ID', 'DoodadID[4]', 'Density', 'Sound']``."""
        out = []
        for n in self.dtype.names:
            shape = self.dtype[n].shape
            out.append(f"{n}[{shape[0]}]" if shape else n)
        return out

    def field_offsets(self) -> dict[str, tuple[int, int]]:
        """name → (first 4-byte field index, count)."""
        out = {}
        for n in self.dtype.names:
            sub, off = self.dtype.fields[n][:2]
            out[n] = (off // 4, int(np.prod(sub.shape or (1,))))
        return out


def _map_schema(short: str) -> DbcSchema:
    if short not in MAP_LAYOUTS:
        raise UnsupportedError(f"no Map.dbc layout for build {short} (have: {', '.join(MAP_LAYOUTS)})")
    count, name_at, locales = MAP_LAYOUTS[short]
    fields = [("ID", "<i4"), ("Directory", "<u4"), ("InstanceType", "<i4")]
    fields += [(f"field{i}", "<u4") for i in range(3, name_at)]
    fields += [("MapName_lang", "<u4", (locales,)), ("MapName_lang_flags", "<u4")]
    fields += [(f"field{i}", "<u4") for i in range(name_at + locales + 1, count)]
    return DbcSchema(MAP, short, BUILDS[short], np.dtype(fields), ("Directory", "MapName_lang"), "ID")


def schema_tables() -> tuple[str, ...]:
    """Tables with a schema: the vendored .dbd files, and Map."""
    return tuple(sorted(set(dbd.vendored_tables()) | {MAP}))


@functools.lru_cache(maxsize=None)
def schema_for(table: str, build: str) -> DbcSchema:
    """The schema of ``table`` in ``build`` from the vendored .dbd (UnsupportedError if none)."""
    short = normalize_build(build)
    if table.lower() == MAP.lower():
        return _map_schema(short)
    definition_file = dbd.load_dbd(table)
    full = dbd.parse_build(BUILDS[short])
    d = definition_file.definition_for(full)
    dtype = d.dtype(full)
    strings = tuple(f.name for f in d.fields if f.inline and f.type in ("string", "locstring"))
    ids = [f.name for f in d.fields if f.inline and f.is_id]
    schema = DbcSchema(definition_file.name, short, d.covering(full), dtype, strings,
                       ids[0] if ids else dtype.names[0])
    documented = DOCUMENTED_RECORD_SIZES.get((definition_file.name, short))
    if documented is not None and documented != schema.record_size:  # pragma: no cover - vendored data
        raise AssertionError(f"{table} {short}: .dbd gives {schema.record_size} B, formats.md says {documented}")
    return schema


@dataclass
class Detection:
    """How a schema was chosen: the build, the candidates that share its layout, why, and doubts."""

    table: str | None
    build: str | None
    schema: DbcSchema | None
    reason: str
    candidates: list[str] = field(default_factory=list)
    ambiguous: bool = False
    notes: list[str] = field(default_factory=list)
    build_known: bool = True   # False: ``build`` is only the first of ``candidates`` that share the layout

    def to_dict(self) -> dict:
        return {
            "table": self.table,
            "build": self.build if self.build_known else None,
            "build_known": self.build_known,
            "layout_builds": self.schema.build_range if self.schema else None,
            "columns": self.schema.columns() if self.schema else None,
            "reason": self.reason,
            "candidates": self.candidates,
            "ambiguous": self.ambiguous,
            "notes": self.notes,
        }


# ---------------------------------------------------------------------------------------------- file
class DbcFile:
    """A parsed WDBC file. Build with :meth:`from_bytes`; :attr:`records` is zero-copy numpy.

    ``records`` is the ``(n, field_count) <u4`` matrix, or the structured array of ``schema`` when
    one is applied; :attr:`raw` is always the untyped view. ``warnings`` lists tolerated oddities.
    """

    def __init__(self, data, path, record_count, field_count, record_size, string_block_size,
                 raw, string_block, warnings, schema=None, records=None):
        self.data = data
        self.path = path
        self.record_count = record_count
        self.field_count = field_count
        self.record_size = record_size
        self.string_block_size = string_block_size  # as declared in the header
        self.raw = raw
        self.string_block = string_block  # the bytes string offsets index (may differ when lenient)
        self.warnings: list[str] = warnings
        self.schema: DbcSchema | None = schema
        self.records = raw if records is None else records
        self._nul = None

    @classmethod
    def from_bytes(cls, data, path: str | None = None, *, strict: bool = True,
                   schema: DbcSchema | None = None) -> "DbcFile":
        """Parse ``data``; every size is checked against the bytes present before any view is made."""
        if isinstance(data, (bytearray, memoryview)):
            data = bytes(data)
        magic, n, f, rs, sb = unpack_from(HEADER.format, data, 0, "WDBC header", path)
        if magic != MAGIC:
            if magic[:3] == b"WDB" or magic == b"WCH2":
                raise UnsupportedError(f"{magic!r} tables are not supported (wowgrass reads WDBC, 1.x-3.x)",
                                       path=path, offset=0)
            raise FormatError(f"not a DBC file: magic {magic!r}, expected {MAGIC!r}", path=path, offset=0)
        warnings: list[str] = []
        # Every count and size is checked before anything is built from it: column lists come from
        # the field count and record size even when no record backs them.
        if rs > MAX_RECORD_SIZE:
            raise FormatError(f"record size {rs} is implausible (WDBC records are at most {MAX_RECORD_SIZE} B)",
                              path=path, offset=12)
        if n and rs == 0:
            raise FormatError(f"{n} records of size 0", path=path, offset=12)
        if n and f == 0:
            raise FormatError(f"{n} records of {rs} bytes but 0 fields", path=path, offset=8)
        if f * 4 > rs and n:
            raise FormatError(f"{f} fields need {f * 4} bytes per record, header says record size {rs}",
                              path=path, offset=8)
        if f * 4 > MAX_RECORD_SIZE:  # no records either: column lists are built from the field count
            raise FormatError(f"{f} fields are implausible (WDBC records are at most {MAX_RECORD_SIZE} B)",
                              path=path, offset=8)
        records_end = HEADER_SIZE + n * rs  # Python ints: no overflow on absurd counts
        if records_end > len(data):
            raise TruncatedError(f"{n} records × {rs} bytes need {n * rs} bytes at offset {HEADER_SIZE}, "
                                 f"file has {len(data) - HEADER_SIZE}", path=path, offset=HEADER_SIZE)
        present = len(data) - records_end
        block_len = sb
        if present < sb:
            msg = f"string block declares {sb} bytes, only {present} present"
            if strict:
                raise TruncatedError(msg, path=path, offset=records_end)
            warnings.append(msg + " (read what is there)")
            block_len = present
        elif present > sb:
            extra = present - sb
            if strict:
                warnings.append(f"{extra} bytes after the declared string block ignored")
            else:
                warnings.append(f"header declares a {sb}-byte string block but {present} bytes follow the "
                                f"records; reading strings up to the end of the file")
                block_len = present
        string_block = data[records_end:records_end + block_len]
        if block_len and string_block[-1:] != b"\0":
            msg = "string block does not end with a NUL"
            if strict:
                raise FormatError(msg, path=path, offset=records_end + block_len - 1)
            warnings.append(msg)
        if rs == f * 4:
            raw = bounded_array(data, HEADER_SIZE, n * f, "<u4", "records", path).reshape(n, f)
        else:
            warnings.append(f"record size {rs} is not 4 × {f} fields; raw records are bytes")
            raw = bounded_array(data, HEADER_SIZE, n * rs, "u1", "records", path).reshape(n, rs)
        out = cls(data, path, n, f, rs, sb, raw, string_block, warnings)
        if schema is not None:
            out = out.with_schema(schema, strict=strict)
        return out

    # ----------------------------------------------------------------------------------- schema
    def with_schema(self, schema: DbcSchema, *, strict: bool = True) -> "DbcFile":
        """The same file viewed through ``schema``; string offsets are checked against the block."""
        if schema.record_size != self.record_size or schema.field_count != self.field_count:
            raise FormatError(
                f"{schema.table} {schema.build} has {schema.field_count} fields / {schema.record_size} B per "
                f"record; the file has {self.field_count} / {self.record_size} B", path=self.path, offset=4)
        records = np.frombuffer(self.data, dtype=schema.dtype, count=self.record_count, offset=HEADER_SIZE)
        out = DbcFile(self.data, self.path, self.record_count, self.field_count, self.record_size,
                      self.string_block_size, self.raw, self.string_block, list(self.warnings), schema, records)
        for name in schema.string_fields:
            offsets = records[name]
            offsets = offsets[:, None] if offsets.ndim == 1 else offsets
            bad = offsets >= max(len(self.string_block), 1)  # offset 0 is "" even in an empty block
            if bad.any():
                row, col = (int(x) for x in np.argwhere(bad)[0])
                first, _count = schema.field_offsets()[name]
                offset = HEADER_SIZE + row * self.record_size + (first + col) * 4
                msg = (f"{int(bad.sum())} {name} string offsets outside the {len(self.string_block)}-byte string "
                       f"block (first: row {row}, value {int(offsets[row, col])})")
                if strict:
                    trailing = len(self.data) > HEADER_SIZE + self.record_count * self.record_size + len(self.string_block)
                    hint = "; bytes follow the declared string block (lenient mode, strict=False, reads them)" if trailing else ""
                    raise FormatError(msg + hint, path=self.path, offset=offset)
                out.warnings.append(msg)
        return out

    # ---------------------------------------------------------------------------------- strings
    def _nul_positions(self) -> np.ndarray:
        if self._nul is None:
            self._nul = np.flatnonzero(np.frombuffer(self.string_block, dtype=np.uint8) == 0)
        return self._nul

    def string(self, offset: int) -> str:
        """The NUL-terminated string at ``offset`` in the string block (FormatError if outside)."""
        offset = int(offset)
        block = self.string_block
        if not 0 <= offset < len(block):
            if offset == 0 and not block:
                return ""
            raise FormatError(f"string offset {offset} outside the {len(block)}-byte string block",
                              path=self.path, offset=HEADER_SIZE + self.record_count * self.record_size)
        end = block.find(b"\0", offset)
        if end < 0:
            raise TruncatedError(f"string at block offset {offset} is not terminated", path=self.path,
                                 offset=HEADER_SIZE + self.record_count * self.record_size + offset)
        return block[offset:end].decode("utf-8", "replace")

    def strings(self, offsets) -> list[str]:
        """Decode many offsets; each distinct offset is decoded once."""
        offsets = np.asarray(offsets, dtype=np.int64).ravel()
        uniq, inverse = np.unique(offsets, return_inverse=True)
        decoded = [self.string(o) for o in uniq.tolist()]
        return [decoded[i] for i in inverse.tolist()]

    def valid_string_starts(self, values, *, whole_tail: bool = False) -> np.ndarray:
        """Bool mask: value is an offset inside the block at the start of a string (or 0).
        ``whole_tail`` checks against every byte after the records (what a header may understate).
        """
        v = np.asarray(values, dtype=np.int64)
        if whole_tail:
            start = HEADER_SIZE + self.record_count * self.record_size
            block = np.frombuffer(self.data, dtype=np.uint8, offset=start)
        else:
            block = np.frombuffer(self.string_block, dtype=np.uint8)
        inside = (v >= 0) & (v < len(block))
        prev = np.where(inside & (v > 0), v - 1, 0)
        at_start = (v == 0) | (block[prev] == 0 if len(block) else np.zeros(v.shape, bool))
        return inside & at_start

    # -------------------------------------------------------------------------------- accessors
    def column(self, name: str) -> np.ndarray:
        if self.schema is None:
            raise UnsupportedError("no schema applied: use .raw[:, i]", path=self.path)
        return self.records[name]

    def ids(self) -> np.ndarray:
        """The ID column (schema's id field, else the first field) as int64."""
        if self.record_count == 0:   # nothing backs the header's field layout (it may be < 4 bytes)
            return np.zeros(0, np.int64)
        if self.schema is not None:
            return self.records[self.schema.id_field].astype(np.int64)
        if self.raw.dtype == np.uint8:
            return self.raw[:, :4].copy().view("<u4").ravel().astype(np.int64)
        return self.raw[:, 0].astype(np.int64) if self.field_count else np.zeros(self.record_count, np.int64)

    def row_index(self, record_id: int) -> int:
        """Index of the first row whose ID is ``record_id`` (KeyError if none)."""
        hits = np.flatnonzero(self.ids() == int(record_id))
        if not len(hits):
            raise KeyError(record_id)
        return int(hits[0])

    def column_names(self) -> list[str]:
        """Flat column names: ``DoodadID[0]`` … for arrays, ``field0`` … without a schema."""
        if self.schema is None:
            width = self.raw.shape[1] if self.raw.ndim == 2 else 0
            return [f"field{i}" for i in range(width)]
        out = []
        for n in self.schema.dtype.names:
            shape = self.schema.dtype[n].shape
            out += [f"{n}[{i}]" for i in range(shape[0])] if shape else [n]
        return out

    def columns_flat(self, decode_strings: bool = True) -> dict[str, list]:
        """Column name → Python list of values (strings decoded), for dumps; column-wise, not per row."""
        if self.schema is None:
            return {name: self.raw[:, i].tolist() for i, name in enumerate(self.column_names())}
        out: dict[str, list] = {}
        for name in self.schema.dtype.names:
            values = self.records[name]
            values = values[:, None] if values.ndim == 1 else values
            for i in range(values.shape[1]):
                key = f"{name}[{i}]" if self.schema.dtype[name].shape else name
                col = values[:, i]
                out[key] = self.strings(col) if decode_strings and name in self.schema.string_fields else col.tolist()
        return out


# ------------------------------------------------------------------------------------- detection
def _doodad_detection(dbc: DbcFile) -> Detection:
    if dbc.field_count != 3 or dbc.record_size != 12:
        return Detection(GROUND_EFFECT_DOODAD, None, None,
                         f"{dbc.field_count} fields × {dbc.record_size} B matches no GroundEffectDoodad layout "
                         f"of 1.12/2.4.3/3.3.5 (3 × 12 B)")
    raw = dbc.raw
    scores = {}
    for col in (1, 2):
        values = raw[:, col]
        valid = dbc.valid_string_starts(values, whole_tail=True)  # detection must not trip on a short header
        distinct = len(np.unique(values[valid & (values != 0)])) if valid.any() else 0
        scores[col] = (bool(valid.all()), distinct)
    old, new = scores[2], scores[1]  # 1.12 layout: path in column 2; 3.3.5: path in column 1

    def says(col, score):
        return f"column {col} holds string offsets ({score[1]} distinct)" if score[0] else \
            f"column {col} does not hold string offsets"

    desc = f"{says(1, new)}, {says(2, old)}"
    notes: list[str] = []
    if old[0] and not new[0]:
        build, ambiguous = "1.12", False
    elif new[0] and not old[0]:
        build, ambiguous = "3.3.5", False
    elif old[0] and new[0]:
        if new[1] != old[1]:
            build = "3.3.5" if new[1] > old[1] else "1.12"
            ambiguous = False
            notes.append("both columns read as string offsets; chose the one naming more distinct strings")
        else:
            build, ambiguous = "3.3.5", True
            notes.append("both columns read as equally plausible string offsets; assumed 3.3.5 (pass build=)")
    else:
        return Detection(GROUND_EFFECT_DOODAD, None, None, f"3 fields × 12 B, but {desc}: no layout fits",
                         ambiguous=True)
    candidates = ["1.12", "2.4.3"] if build == "1.12" else ["3.3.5"]
    if build == "1.12":
        notes.append("1.12 and 2.4.3 share this layout (ID, DoodadIdTag, Doodadpath)")
    if dbc.record_count == 0:
        ambiguous = True
        notes.append("empty table: nothing to tell the layouts apart")
    return Detection(GROUND_EFFECT_DOODAD, build, schema_for(GROUND_EFFECT_DOODAD, build),
                     f"3 fields × 12 B; {desc}", candidates, ambiguous, notes)


def _texture_detection(dbc: DbcFile) -> Detection:
    f, rs = dbc.field_count, dbc.record_size
    if (f, rs) == (7, 28):
        return Detection(GROUND_EFFECT_TEXTURE, "1.12", schema_for(GROUND_EFFECT_TEXTURE, "1.12"),
                         "7 fields × 28 B: ID, DoodadID[4], Density, Sound (no weights)", ["1.12", "2.4.3"], False,
                         ["1.12 and 2.4.3 share this layout"])
    if (f, rs) == (11, 44):
        names = dbc.raw[:, 4] if dbc.record_count else np.zeros(0, np.uint32)
        valid = dbc.valid_string_starts(names, whole_tail=True)
        named = int(np.count_nonzero(valid & (names != 0)))
        if dbc.record_count and valid.all() and named and len(dbc.string_block) > 1:
            return Detection(GROUND_EFFECT_TEXTURE, "1.10", schema_for(GROUND_EFFECT_TEXTURE, "1.10"),
                             f"11 fields × 44 B with texture names in column 4 ({named} rows): pre-1.11 layout",
                             ["1.10"])
        notes = []
        ambiguous = False
        if dbc.record_count and valid.all() and len(dbc.string_block) > 1:
            ambiguous = True
            notes.append("column 4 also reads as string offsets (all empty); pre-1.11 layout not excluded")
        return Detection(GROUND_EFFECT_TEXTURE, "3.3.5", schema_for(GROUND_EFFECT_TEXTURE, "3.3.5"),
                         "11 fields × 44 B without strings: ID, DoodadID[4], DoodadWeight[4], Density, Sound",
                         ["3.3.5"], ambiguous, notes)
    return Detection(GROUND_EFFECT_TEXTURE, None, None,
                     f"{f} fields × {rs} B matches no GroundEffectTexture layout (7 × 28 B or 11 × 44 B)")


def detect_schema(dbc: DbcFile, table: str | None = None, build: str | None = None,
                  hint: str | None = None) -> Detection:
    """Pick the schema of ``dbc`` (``table`` defaults to the file name). ``build`` forces a layout;
    ``hint`` (e.g. the build a Data folder's archive names suggest) only chooses among the builds
    that share the detected layout, such as 2.4.3 over 1.12.

    Returns a :class:`Detection` with ``schema=None`` when no vendored definition fits; raises
    FormatError when a forced ``build`` contradicts the header.
    """
    if hint is not None and build is None:
        det = detect_schema(dbc, table)
        short = normalize_build(hint)
        if det.schema is None or short == det.build:
            return det
        if short in det.candidates:
            det.build, det.schema = short, schema_for(det.table, short)
            det.notes.append(f"build {short} from the data source")
        else:
            det.notes.append(f"the data source says {short}; the table's layout says {det.build}")
        return det
    table = table or (table_name(dbc.path) if dbc.path else None)
    known = {t.lower(): t for t in schema_tables()}
    canonical = known.get((table or "").lower())
    if canonical is None:
        return Detection(table, None, None, "no vendored .dbd for this table" if table else "table name unknown")
    if build is not None:
        short = normalize_build(build)
        schema = schema_for(canonical, short)
        if (schema.field_count, schema.record_size) != (dbc.field_count, dbc.record_size):
            raise FormatError(f"--build {short}: {canonical} has {schema.field_count} fields × "
                              f"{schema.record_size} B, the file has {dbc.field_count} × {dbc.record_size} B",
                              path=dbc.path, offset=8)
        det = Detection(canonical, short, schema, f"build {short} given", [short])
        auto = detect_schema(dbc, canonical) if canonical in (GROUND_EFFECT_DOODAD, GROUND_EFFECT_TEXTURE) else None
        if auto is not None and auto.build and short not in auto.candidates and not auto.ambiguous:
            det.notes.append(f"the data looks like {auto.build} ({auto.reason})")
        return det
    if canonical == GROUND_EFFECT_DOODAD:
        return _doodad_detection(dbc)
    if canonical == GROUND_EFFECT_TEXTURE:
        return _texture_detection(dbc)
    fits = [b for b in ("1.12", "2.4.3", "3.3.5", "1.10")
            if _fits(canonical, b, dbc.field_count, dbc.record_size)]
    if not fits:
        return Detection(canonical, None, None,
                         f"{dbc.field_count} fields × {dbc.record_size} B matches no layout of {', '.join(BUILDS)}")
    schemas = {schema_for(canonical, b).dtype for b in fits}
    return Detection(canonical, fits[0], schema_for(canonical, fits[0]),
                     f"{dbc.field_count} fields × {dbc.record_size} B", fits, len(schemas) > 1,
                     [] if len(fits) == 1 else [f"builds {', '.join(fits)} fit"])


def _fits(table, build, f, rs) -> bool:
    try:
        s = schema_for(table, build)
    except UnsupportedError:
        return False
    return (s.field_count, s.record_size) == (f, rs)


def read_table(data, path: str | None = None, *, table: str | None = None, build: str | None = None,
               hint: str | None = None, strict: bool = True) -> tuple[DbcFile, Detection]:
    """Parse ``data`` and apply the detected (or given) schema: ``(typed file, detection)``."""
    dbc = DbcFile.from_bytes(data, path, strict=strict)
    det = detect_schema(dbc, table, build, hint)
    if det.schema is not None:
        dbc = dbc.with_schema(det.schema, strict=strict)
    return dbc, det


# ---------------------------------------------------------------------------------------- writing
class DbcStringBlock:
    """Deduplicating string block builder: ``add(s) -> offset``; offset 0 is the empty string."""

    def __init__(self):
        self._buf = bytearray(b"\0")
        self._offsets: dict[str, int] = {"": 0}

    def add(self, s: str) -> int:
        off = self._offsets.get(s)
        if off is None:
            encoded = s.encode("utf-8")
            if b"\0" in encoded:
                raise ValueError(f"string contains NUL: {s!r}")
            off = len(self._buf)
            self._buf += encoded + b"\0"
            self._offsets[s] = off
        return off

    def __bytes__(self) -> bytes:
        return bytes(self._buf)

    def __len__(self) -> int:
        return len(self._buf)


def build_string_block(strings: Iterable[str]) -> tuple[bytes, list[int]]:
    """Dedup ``strings`` into a block: ``(block, offsets)`` in input order."""
    sb = DbcStringBlock()
    offsets = [sb.add(s) for s in strings]
    return bytes(sb), offsets


def write_dbc(records: np.ndarray, strings: bytes = b"\0") -> bytes:
    """A WDBC file from ``records`` ((n, f) integers/floats, or a structured array of 4-byte fields)
    and a string block (offset 0 should be the empty string; ``b"\\0"`` by default).
    """
    records = np.asarray(records)
    if records.dtype.names:
        fields = 0
        for name in records.dtype.names:
            sub = records.dtype[name]
            base = sub.base if sub.shape else sub
            if base.itemsize != 4:
                raise ValueError(f"field {name}: {base.itemsize}-byte fields are not WDBC (4 bytes each)")
            fields += int(np.prod(sub.shape or (1,)))
        le = records.dtype.newbyteorder("<")  # applies to every field of a structured dtype
        body = np.ascontiguousarray(records.astype(le)).tobytes()
        n, rs = len(records), records.dtype.itemsize
    else:
        if records.ndim != 2:
            raise ValueError(f"records must be (n, fields) or structured, got shape {records.shape}")
        kind = records.dtype.kind
        target = {"i": "<i4", "u": "<u4", "f": "<f4", "b": "<u4"}.get(kind)
        if target is None:
            raise ValueError(f"records of dtype {records.dtype} cannot be written")
        if kind in "iu" and records.size:
            lo, hi = int(records.min()), int(records.max())
            if lo < -(2**31) or hi > 2**32 - 1 or (kind == "i" and hi > 2**31 - 1 and lo < 0):
                raise ValueError(f"values {lo}..{hi} do not fit 32-bit fields")
            if kind == "i" and hi > 2**31 - 1:
                target = "<u4"
        body = np.ascontiguousarray(records.astype(target)).tobytes()
        n, fields = records.shape
        rs = fields * 4
    strings = bytes(strings)
    return HEADER.pack(MAGIC, n, fields, rs, len(strings)) + body + strings


def sniff(prefix: bytes) -> bool:
    """True when ``prefix`` starts like a WDBC file."""
    return bytes(prefix[:4]) == MAGIC
