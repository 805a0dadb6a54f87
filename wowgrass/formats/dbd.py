"""WoWDBDefs ``.dbd`` definitions → numpy record dtypes for one client build.

A ``.dbd`` file (https://github.com/wowdev/WoWDBDefs) has a ``COLUMNS`` section (type and name of
every column the table ever had) and then one block per layout: ``LAYOUT``/``BUILD``/``COMMENT`` lines
followed by the fields in record order, e.g. ``$id$ID<32>``, ``DoodadID<32>[4]``, ``Doodadpath``.
``<32>`` is a signed 32-bit integer, ``<u32>`` unsigned; strings are 4-byte offsets into the string
block; floats are 4 bytes; ``locstring`` is one offset per locale plus a flags word ``<name>_flags`` (8+1 fields in
1.x, 16+1 in 2.x/3.x).

Only the definitions wowgrass needs are vendored, as package data in ``formats/dbd/``
(GroundEffectTexture, GroundEffectDoodad, TerrainType, LiquidType, the light tables, AreaTable;
CC BY-SA 4.0, see ``dbd/README.md``);
nothing is downloaded. Fields marked ``noninline`` (WDB5+ only) take no space in the record.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources

import numpy as np

from wowgrass.errors import FormatError, UnsupportedError

Build = tuple[int, int, int, int]

_FIELD_RE = re.compile(
    r"^(?:\$(?P<ann>[^$]*)\$)?(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"(?:<(?P<unsigned>u?)(?P<size>\d+)>)?(?:\[(?P<count>\d+)\])?\s*(?://\s*(?P<comment>.*))?$"
)
_COLUMN_RE = re.compile(
    r"^(?P<type>int|float|string|locstring)(?:<(?P<foreign>[^>]*)>)?\s+(?P<name>[A-Za-z_][A-Za-z0-9_]*)\??"
    r"\s*(?://\s*(?P<comment>.*))?$"
)


def parse_build(text: str) -> Build:
    """``"3.3.5.12340"`` → ``(3, 3, 5, 12340)``."""
    parts = text.strip().split(".")
    if len(parts) != 4 or not all(p.isdigit() for p in parts):
        raise ValueError(f"not a build number (expected a.b.c.build): {text!r}")
    return tuple(int(p) for p in parts)  # type: ignore[return-value]


@dataclass(frozen=True)
class Column:
    """One entry of the COLUMNS section."""

    type: str  # int | float | string | locstring
    name: str
    foreign: str | None = None
    comment: str | None = None


@dataclass(frozen=True)
class Field:
    """One field of a layout block, in record order."""

    name: str
    type: str  # from COLUMNS
    size: int | None  # bits, for ints
    unsigned: bool
    count: int  # array length, 1 for a scalar
    annotations: frozenset[str]
    comment: str | None = None

    @property
    def is_id(self) -> bool:
        return "id" in self.annotations

    @property
    def inline(self) -> bool:
        return "noninline" not in self.annotations

    def numpy_type(self) -> str:
        if self.type in ("string", "locstring"):
            return "<u4"
        if self.type == "float":
            return "<f4"
        size = self.size or 32
        if size not in (8, 16, 32, 64):
            raise UnsupportedError(f"field {self.name}: integer size {size} bits")
        return f"<{'u' if self.unsigned else 'i'}{size // 8}"


@dataclass(frozen=True)
class Definition:
    """A layout block: the builds it covers and its fields."""

    builds: tuple[Build, ...]
    ranges: tuple[tuple[Build, Build], ...]
    layouts: tuple[str, ...]
    fields: tuple[Field, ...]

    def covers(self, build: Build) -> bool:
        return build in self.builds or any(lo <= build <= hi for lo, hi in self.ranges)

    def covering(self, build: Build) -> str:
        """The BUILD entry (range or single build) that covers ``build``."""
        for lo, hi in self.ranges:
            if lo <= build <= hi:
                return f"{'.'.join(map(str, lo))}-{'.'.join(map(str, hi))}"
        return ".".join(map(str, build))

    def dtype(self, build: Build) -> np.dtype:
        """The record dtype (explicit little-endian, no padding) this layout has in ``build``."""
        names, formats = [], []
        for f in self.fields:
            if not f.inline:
                continue
            count = f.count
            if f.type == "locstring":   # one offset per locale, then a flags word that is no string
                names += [f.name, f"{f.name}_flags"]
                formats += [(f.numpy_type(), (8 if build[0] < 2 else 16,)), "<u4"]
                continue
            names.append(f.name)
            formats.append(f.numpy_type() if count == 1 else (f.numpy_type(), (count,)))
        return np.dtype({"names": names, "formats": formats})


@dataclass(frozen=True)
class DbdFile:
    """A parsed ``.dbd``: columns by name and the layout blocks in file order."""

    name: str
    columns: dict[str, Column]
    definitions: tuple[Definition, ...]

    @classmethod
    def from_bytes(cls, data: bytes | str, name: str = "<dbd>") -> "DbdFile":
        """Parse a ``.dbd`` file (UTF-8 bytes, or its text) of table ``name`` (FormatError names the
        line on anything unexpected)."""
        if isinstance(data, (bytes, bytearray, memoryview)):
            try:
                data = bytes(data).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise FormatError(f"not UTF-8 text: {exc.reason}", path=f"{name}.dbd", offset=exc.start) from None
        return _parse_dbd(data, name)

    def definition_for(self, build: str | Build) -> Definition:
        b = parse_build(build) if isinstance(build, str) else build
        for d in self.definitions:
            if d.covers(b):
                return d
        raise UnsupportedError(f"{self.name}.dbd has no layout for build {'.'.join(map(str, b))}")

    def dtype(self, build: str | Build) -> np.dtype:
        b = parse_build(build) if isinstance(build, str) else build
        return self.definition_for(b).dtype(b)


def _parse_builds(rest: str, path: str, lineno: int):
    singles, ranges = [], []
    for token in rest.split(","):
        token = token.strip()
        try:
            if "-" in token:
                lo, hi = token.split("-", 1)
                ranges.append((parse_build(lo), parse_build(hi)))
            else:
                singles.append(parse_build(token))
        except ValueError as exc:
            raise FormatError(f"line {lineno}: {exc}", path=path) from None
    return singles, ranges


def _parse_dbd(text: str, name: str) -> DbdFile:
    path = f"{name}.dbd"
    lines = text.splitlines()
    columns: dict[str, Column] = {}
    i = 0
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i >= len(lines) or lines[i].strip() != "COLUMNS":
        raise FormatError("expected COLUMNS on the first line", path=path)
    i += 1
    while i < len(lines) and lines[i].strip():
        m = _COLUMN_RE.match(lines[i].strip())
        if not m:
            raise FormatError(f"line {i + 1}: bad column {lines[i]!r}", path=path)
        columns[m["name"]] = Column(m["type"], m["name"], m["foreign"], m["comment"])
        i += 1

    definitions: list[Definition] = []
    block: list[tuple[int, str]] = []
    for lineno, line in list(enumerate(lines, 1))[i:] + [(len(lines) + 1, "")]:
        line = line.strip()
        if line:
            block.append((lineno, line))
            continue
        if not block:
            continue
        singles, ranges, layouts, fields = [], [], [], []
        for ln, entry in block:
            if entry.startswith("BUILD "):
                s, r = _parse_builds(entry[6:], path, ln)
                singles += s
                ranges += r
            elif entry.startswith("LAYOUT "):
                layouts += [x.strip() for x in entry[7:].split(",")]
            elif entry.startswith("COMMENT"):
                continue
            else:
                m = _FIELD_RE.match(entry)
                if not m:
                    raise FormatError(f"line {ln}: bad field {entry!r}", path=path)
                col = columns.get(m["name"])
                if col is None:
                    raise FormatError(f"line {ln}: field {m['name']} is not in COLUMNS", path=path)
                ann = frozenset(a for a in (m["ann"] or "").split(",") if a)
                fields.append(Field(m["name"], col.type, int(m["size"]) if m["size"] else None,
                                    m["unsigned"] == "u", int(m["count"] or 1), ann, m["comment"]))
        definitions.append(Definition(tuple(singles), tuple(ranges), tuple(layouts), tuple(fields)))
        block = []
    return DbdFile(name, columns, tuple(definitions))


@functools.lru_cache(maxsize=None)
def vendored_tables() -> tuple[str, ...]:
    """Names of the tables whose ``.dbd`` ships with wowgrass."""
    folder = resources.files("wowgrass.formats").joinpath("dbd")
    return tuple(sorted(p.name[:-4] for p in folder.iterdir() if p.name.endswith(".dbd")))


@functools.lru_cache(maxsize=None)
def load_dbd(table: str) -> DbdFile:
    """The vendored definition of ``table`` (case-insensitive); UnsupportedError if none ships."""
    for name in vendored_tables():
        if name.lower() == table.lower():
            text = resources.files("wowgrass.formats").joinpath("dbd", f"{name}.dbd").read_text("utf-8")
            return DbdFile.from_bytes(text, name)
    raise UnsupportedError(f"no vendored .dbd for table {table!r} (have: {', '.join(vendored_tables())})")
