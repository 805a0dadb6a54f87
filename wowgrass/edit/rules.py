"""Ground-effect rules: a TOML file, kept beside a map in version control, that says which effect
each texture carries, where no grass grows and which sets exist, so that ``effects apply`` keeps a
map right however often another editor repaints it (docs/rules.md).

```python
rules = load_rules("project/wowgrass-rules.toml")       # the whole file checked: UsageError naming file:line key
plan = rules_engine.prepare(rules, data, map_name=None)  # checked against the data (ids, doodads, areas,
                                                          # masks, the 1.12 limits); the sets' rows and ids
```
The engine (the plan, and what a rule does to a tile) is :mod:`wowgrass.edit.rules_engine`; applying over a
map and following another editor's saves :mod:`wowgrass.edit.rules_apply`; explaining a cell,
drift, learning a starting file and adding a painted rule :mod:`wowgrass.edit.rules_explain`.

The file (every key is optional except where said)::

    version = 1
    map = "Azeroth"                  # the map (default: the data's only map, or --map)
    tiles = ["30:35,40:45"]          # tiles the rules look after (default: all the map's)
    target = "3.3.5"                 # the client the tables are for: 1.12 and 2.4.3 are checked against
                                     # their limits (effect ids their tables have, four slots, no weights)
    [mapping]
    mode = "stale"                   # "stale" (default): cells whose layer shows `margin` less than the
    margin = 0.25                    # most visible one; "best": every cell; "keep": never touched

    [[set]]                          # a new effect set (GroundEffectTexture row), referred to by name
    name = "meadow"
    doodads = ["ElwGra01", "ElwGra05"]
    weights = [12, 4]                # 3.3.5 only
    density = 10
    sound = 0
    id = 900001                      # optional: otherwise an identical row's id, or the next free one

    [[assign]]                       # textures -> an effect id (or a set)
    name = "elwynn grass"
    textures = ["Tileset/Elwynn/ElwynnGrass*"]
    effect = 1493                    # or set = "meadow"
    mode = "always"                  # or "only_unassigned": layers without an effect id
    tiles = ["31,32"]; areas = [12, "Goldshire"]; height = [0, 80]; slope = [0, 30]
    mask = "masks/x.png"             # only chunks at least half painted (tiles= gives the picture's box)

    [[exclude]]                      # noEffectDoodad set: exactly one of under / slope_above / textures / mask
    name = "houses"
    under = "buildings"              # buildings, models, liquid, holes (wowgrass.edit.footprints)
    margin = 2.0                     # yards
    reason = "no grass indoors"
    [[include]]                      # the same criteria: the bit cleared where no exclude rule holds

Order matters: for a layer several ``always`` rules match, the **last** in the file wins (general
rules first, specific ones after); an ``only_unassigned`` rule fills only layers no ``always`` rule
governs and that have no effect id. A cell any exclude rule selects is excluded whatever an include
rule says. Both disagreements are reported as conflicts.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path

from wowgrass.errors import UsageError

try:                                   # the standard library from 3.11
    import tomllib
except ModuleNotFoundError:            # pragma: no cover - Python 3.10
    import tomli as tomllib

DEFAULT_NAME = "wowgrass-rules.toml"
KINDS = ("assign", "exclude", "include")
UNDER = ("buildings", "models", "liquid", "holes")
MODES = ("always", "only_unassigned")
MAPPING_MODES = ("stale", "best", "keep")
TARGETS = ("1.12", "2.4.3", "3.3.5")
SLOTS = 4

TOP_KEYS = {"version", "map", "tiles", "target", "mapping", "set", "assign", "exclude", "include"}
MAPPING_KEYS = {"mode", "margin"}
SET_KEYS = {"name", "doodads", "weights", "density", "sound", "id", "comment"}
FILTER_KEYS = {"tiles", "areas", "height", "slope"}
ASSIGN_KEYS = {"name", "textures", "effect", "set", "mode", "mask", "comment", "allow_missing"} | FILTER_KEYS
EXCLUDE_KEYS = {"name", "under", "slope_above", "textures", "share", "mask", "margin", "reason", "comment"} | FILTER_KEYS
NO_EFFECT_IDS = (0, 0xFFFF, 0xFFFFFFFF)


# ----------------------------------------------------------------------------- the model

@dataclass
class EffectSetDecl:
    """A ``[[set]]``: a GroundEffectTexture row the rules make (its id resolved by :func:`prepare`)."""

    name: str
    doodads: list
    weights: list | None = None
    density: int = 8
    sound: int = 0
    id: int | None = None
    line: int = 0
    comment: str = ""


@dataclass
class Rule:
    """One ``[[assign]]``, ``[[exclude]]`` or ``[[include]]``; ``order`` is its place in the file."""

    kind: str
    name: str
    order: int
    line: int
    textures: list = field(default_factory=list)
    effect: int | None = None
    set: str | None = None
    mode: str = "always"
    allow_missing: bool = False
    tiles: list | None = None            # [((c0, c1), (r0, r1))]
    areas: list | None = None            # ids and names as written
    height: tuple | None = None
    slope: tuple | None = None
    under: str | None = None
    slope_above: float | None = None
    share: float | None = None
    mask: Path | None = None
    margin: float = 0.0
    reason: str = ""
    comment: str = ""

    @property
    def label(self) -> str:
        """How reports name the rule: ``exclude "houses" (line 12)``."""
        return f'{self.kind} "{self.name}" (line {self.line})'

    @property
    def criterion(self) -> str:
        """What an exclude/include rule selects, in words."""
        if self.under:
            return f"under {self.under}" + (f" + {self.margin:g} yd" if self.margin else "")
        if self.slope_above is not None:
            return f"slope above {self.slope_above:g} degrees"
        if self.mask is not None:
            return f"painted in {self.mask.name}"
        if self.textures:
            return f"{', '.join(self.textures)} over {self.share:g} of the cell"
        return ""

    def in_tiles(self, tile) -> bool:
        if self.tiles is None:
            return True
        c, r = tile
        return any(c0 <= c <= c1 and r0 <= r <= r1 for (c0, c1), (r0, r1) in self.tiles)

    def to_json(self) -> dict:
        out = {"kind": self.kind, "name": self.name, "line": self.line, "order": self.order}
        if self.kind == "assign":
            out.update(textures=list(self.textures), effect=self.effect, set=self.set, mode=self.mode)
        else:
            out["criterion"] = self.criterion
            if self.reason:
                out["reason"] = self.reason
        return out


@dataclass
class RuleSet:
    """A rules file as read (see the module docstring)."""

    path: Path
    text: str
    map: str | None = None
    tiles: list | None = None
    target: str | None = None
    mapping_mode: str = "stale"
    mapping_margin: float = 0.25
    sets: list = field(default_factory=list)
    rules: list = field(default_factory=list)

    @property
    def folder(self) -> Path:
        return self.path.parent

    def by_kind(self, kind: str) -> list:
        return [r for r in self.rules if r.kind == kind]

    def in_scope(self, tile) -> bool:
        if self.tiles is None:
            return True
        c, r = tile
        return any(c0 <= c <= c1 and r0 <= r <= r1 for (c0, c1), (r0, r1) in self.tiles)


# ----------------------------------------------------------------------------- where keys are

_HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-\"' ]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\-.]+|\"[^\"]*\"|'[^']*')\s*=")


def key_lines(text: str) -> dict:
    """``{(table, index, key): line}`` for every ``key = ...`` at the start of a line; ``table`` is
    "" for the top level, ``index`` the entry of an array of tables (0 for a plain table); a header
    itself is recorded under key None. tomllib gives no positions: this finds them for messages."""
    out: dict = {}
    counts: dict = {}
    table, index = "", 0
    depth = 0                                  # open brackets of a value spread over lines
    for no, line in enumerate(text.splitlines(), 1):
        body = line.split("#", 1)[0] if '"' not in line and "'" not in line else line
        if depth == 0:
            m = _HEADER.match(line)
            if m and not _KEY.match(line):
                table = m.group(2).strip().strip("\"'")
                if m.group(1) == "[[":
                    counts[table] = counts.get(table, -1) + 1
                    index = counts[table]
                else:
                    index = 0
                out.setdefault((table, index, None), no)
                continue
            k = _KEY.match(line)
            if k:
                key = k.group(1).strip("\"'")
                if "." in k.group(1):          # a dotted key: mapping.mode = ... is [mapping]'s mode
                    *head, key = key.split(".")
                    out.setdefault((".".join([table, *head] if table else head), index, key), no)
                else:
                    out.setdefault((table, index, key), no)
        depth += body.count("[") - body.count("]")
        depth = max(depth, 0)
    return out


class _Errors:
    def __init__(self, path: Path, lines: dict, text: str = ""):
        self.path, self.lines, self.items, self.text = path, lines, [], text

    def add(self, table: str, index: int, key, why: str) -> None:
        line = self.lines.get((table, index, key)) or self.lines.get((table, index, None)) or self._search(key)
        where = {"": "", "mapping": "[mapping] "}.get(table, f"[[{table}]] #{index + 1} ")
        what = f"{where}key '{key}'" if key else where.strip()
        self.items.append((line, f"{self.path}:{line}: {what}: {why}"))

    def _search(self, key) -> int:
        """The first line that sets ``key`` anywhere (keys written in a form key_lines does not follow)."""
        if key:
            for no, line in enumerate(self.text.splitlines(), 1):
                if re.match(rf"^\s*(\S*\.)?{re.escape(str(key))}\s*=", line):
                    return no
        return 0

    def raise_any(self) -> None:
        if self.items:
            msgs = [m for _l, m in sorted(self.items, key=lambda x: x[0])]
            raise UsageError("\n".join(msgs) if len(msgs) == 1 else
                             f"{len(msgs)} problems in the rules file:\n  " + "\n  ".join(msgs))


# ----------------------------------------------------------------------------- reading

def load_rules(path) -> RuleSet:
    """Read and check a rules file as a whole (the data-independent checks; :func:`prepare` does
    the rest). Every problem is reported at once: ``file:line: [[assign]] #2 key 'x': why``."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")      # a byte-order mark (Notepad) is not TOML
    except FileNotFoundError:
        raise UsageError(f"{path}: no such rules file (`wowgrass effects rules --init -o {path}` writes a "
                         "starting one)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read the rules file ({exc})") from None
    return parse_rules(text, path)


def parse_rules(text: str, path="rules.toml") -> RuleSet:
    """:func:`load_rules` of ``text`` (``path`` names it in messages and anchors mask pictures)."""
    path = Path(path)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        raise UsageError(f"{path}:{m.group(1) if m else '?'}: not TOML: {exc}") from None
    errs = _Errors(path, key_lines(text), text)
    rs = RuleSet(path, text)
    for k in doc:
        if k not in TOP_KEYS:
            errs.add("", 0, k, f"unknown key (known: {', '.join(sorted(TOP_KEYS))})")
    v = doc.get("version", 1)
    if v != 1:
        errs.add("", 0, "version", f"{v!r}: this wowgrass reads version 1")
    if "map" in doc:
        if isinstance(doc["map"], str) and doc["map"].strip():
            rs.map = doc["map"].strip()
        else:
            errs.add("", 0, "map", "a map's folder name (a string)")
    rs.tiles = _tiles(doc, "", 0, errs)
    if "target" in doc:
        t = str(doc["target"])
        if t not in TARGETS:
            errs.add("", 0, "target", f"{doc['target']!r}: one of {', '.join(TARGETS)}")
        else:
            rs.target = t
    _mapping(doc.get("mapping"), rs, errs)
    _sets(doc.get("set", []), rs, errs)
    order = 0
    for kind in KINDS:
        entries = doc.get(kind, [])
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            errs.add("", 0, kind, f"write each rule as a [[{kind}]] table")
            continue
        for i, e in enumerate(entries):
            rule = _rule(kind, i, e, rs, errs)
            if rule is not None:
                rs.rules.append(rule)
    # the order in the file decides conflicts: sort by line, whatever the kind
    rs.rules.sort(key=lambda r: r.line)
    for order, r in enumerate(rs.rules):
        r.order = order
    names: dict = {}
    for r in rs.rules:
        key = (r.kind, r.name.lower())
        if key in names:
            errs.items.append((r.line, f"{path}:{r.line}: [[{r.kind}]] key 'name': {r.name!r} is also the name of "
                                       f"the {r.kind} rule on line {names[key]}"))
        names[key] = r.line
    errs.raise_any()
    return rs


def _mapping(m, rs: RuleSet, errs: _Errors) -> None:
    if m is None:
        return
    if not isinstance(m, dict):
        errs.add("", 0, "mapping", "a [mapping] table")
        return
    for k in m:
        if k not in MAPPING_KEYS:
            errs.add("mapping", 0, k, f"unknown key (known: {', '.join(sorted(MAPPING_KEYS))})")
    mode = m.get("mode", "stale")
    if mode not in MAPPING_MODES:
        errs.add("mapping", 0, "mode", f"{mode!r}: one of {', '.join(MAPPING_MODES)}")
    else:
        rs.mapping_mode = mode
    if "margin" in m:
        mg = m["margin"]
        if not isinstance(mg, (int, float)) or isinstance(mg, bool) or not 0 <= mg <= 1:
            errs.add("mapping", 0, "margin", f"{mg!r}: a share of the cell, 0 .. 1")
        else:
            rs.mapping_margin = float(mg)
    if rs.mapping_mode == "best":
        rs.mapping_margin = 0.0


def _sets(entries, rs: RuleSet, errs: _Errors) -> None:
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        errs.add("", 0, "set", "write each set as a [[set]] table")
        return
    seen_names, seen_ids = {}, {}
    for i, e in enumerate(entries):
        for k in e:
            if k not in SET_KEYS:
                errs.add("set", i, k, f"unknown key (known: {', '.join(sorted(SET_KEYS))})")
        name = e.get("name")
        if not isinstance(name, str) or not name.strip():
            errs.add("set", i, "name", "every set needs a name (assign rules refer to it)")
            continue
        d = EffectSetDecl(name.strip(), [], line=errs.lines.get(("set", i, None), 0), comment=str(e.get("comment", "")))
        if name.lower() in seen_names:
            errs.add("set", i, "name", f"{name!r} is also the name of the set on line {seen_names[name.lower()]}")
        seen_names[name.lower()] = d.line
        doodads = e.get("doodads")
        if not isinstance(doodads, list) or not doodads or not all(isinstance(x, str) and x.strip() for x in doodads):
            errs.add("set", i, "doodads", "a list of 1 to 4 detail models, e.g. [\"ElwGra01\", \"ElwGra05\"]")
        elif len(doodads) > SLOTS:
            errs.add("set", i, "doodads", f"{len(doodads)} models: a set has four doodad slots")
        else:
            from wowgrass.edit.effect_sets import check_doodad_path

            try:
                d.doodads = [check_doodad_path(x) for x in doodads]
            except UsageError as exc:
                errs.add("set", i, "doodads", str(exc).replace("--doodad ", ""))
        if "weights" in e:
            w = e["weights"]
            if not isinstance(w, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in w):
                errs.add("set", i, "weights", "a list of whole numbers, one per doodad")
            elif doodads and isinstance(doodads, list) and len(w) != len(doodads):
                errs.add("set", i, "weights", f"{len(w)} weights for {len(doodads)} doodads")
            elif any(x < 0 or x > 16 for x in w) or sum(w) == 0:
                errs.add("set", i, "weights", "each weight is 0..16 (points of the 16-slot bag), not all 0")
            else:
                d.weights = list(w)
        for key, lo, hi in (("density", 0, 2**31 - 1), ("sound", -(2**31), 2**31 - 1), ("id", 1, 0xFFFFFFFE)):
            if key in e:
                val = e[key]
                if not isinstance(val, int) or isinstance(val, bool) or not lo <= val <= hi:
                    errs.add("set", i, key, f"{val!r}: a whole number {lo} .. {hi}")
                elif key == "id" and val in NO_EFFECT_IDS:
                    errs.add("set", i, "id", f"{val} means 'no effect' in MCLY")
                else:
                    setattr(d, key, int(val))
        if d.id is not None:
            if d.id in seen_ids:
                errs.add("set", i, "id", f"id {d.id} is also the id of set {seen_ids[d.id]!r}")
            seen_ids[d.id] = d.name
        rs.sets.append(d)


def _tiles(e: dict, table: str, index: int, errs: _Errors):
    if "tiles" not in e:
        return None
    v = e["tiles"]
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list) or not v or not all(isinstance(x, str) for x in v):
        errs.add(table, index, "tiles", 'a list of "C,R" or "C0:C1,R0:R1" ranges')
        return None
    from wowgrass.grass.bake import parse_tile_ranges

    out = []
    for x in v:
        try:
            out.append(parse_tile_ranges(x))
        except UsageError as exc:
            errs.add(table, index, "tiles", str(exc).replace("--tile ", "").replace("--tile", "tiles"))
    return out


def _range(e, table, index, key, lo, hi, errs):
    if key not in e:
        return None
    v = e[key]
    if (not isinstance(v, list) or len(v) != 2 or
            not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)):
        errs.add(table, index, key, f"{v!r}: [low, high]")
        return None
    a, b = float(v[0]), float(v[1])
    if a > b:
        errs.add(table, index, key, f"[{v[0]}, {v[1]}] runs backwards")
        return None
    if a < lo or b > hi:
        errs.add(table, index, key, f"[{v[0]}, {v[1]}]: within {lo:g} .. {hi:g}")
        return None
    return (a, b)


def check_glob(pattern) -> str | None:
    """Why ``pattern`` is not a usable texture pattern, or None."""
    if not isinstance(pattern, str) or not pattern.strip():
        return "an empty pattern"
    if "\0" in pattern:
        return "a NUL character"
    depth = 0
    for ch in pattern:
        if ch == "[":
            depth += 1
        elif ch == "]" and depth:
            depth -= 1
    if depth:
        return f"{pattern!r} opens a [ it never closes"
    try:
        re.compile(fnmatch.translate(pattern))
    except re.error as exc:
        return f"{pattern!r}: {exc}"
    return None


def _textures(e, table, index, errs):
    v = e.get("textures")
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list) or not v:
        errs.add(table, index, "textures", 'a list of texture patterns, e.g. ["Tileset/Elwynn/ElwynnGrass*"]')
        return []
    bad = [why for p in v if (why := check_glob(p))]
    for why in bad:
        errs.add(table, index, "textures", f"bad pattern: {why}")
    return [p.strip() for p in v] if not bad else []


def _rule(kind, i, e, rs: RuleSet, errs: _Errors):
    known = ASSIGN_KEYS if kind == "assign" else EXCLUDE_KEYS
    for k in e:
        if k not in known:
            errs.add(kind, i, k, f"unknown key (known: {', '.join(sorted(known))})")
    line = errs.lines.get((kind, i, None), 0)
    name = e.get("name", f"{kind} {i + 1}")
    if not isinstance(name, str) or not name.strip():
        errs.add(kind, i, "name", "a name (a string)")
        name = f"{kind} {i + 1}"
    r = Rule(kind, name.strip(), 0, line, comment=str(e.get("comment", "")))
    r.tiles = _tiles(e, kind, i, errs)
    if "areas" in e:
        a = e["areas"]
        if not isinstance(a, list) or not a or not all(
                (isinstance(x, int) and not isinstance(x, bool) and x >= 0) or (isinstance(x, str) and x.strip())
                for x in a):
            errs.add(kind, i, "areas", "a list of AreaTable ids or area names")
        else:
            r.areas = list(a)
    r.height = _range(e, kind, i, "height", -1e5, 1e5, errs)
    r.slope = _range(e, kind, i, "slope", 0, 90, errs)
    if "mask" in e:
        m = e["mask"]
        if not isinstance(m, str) or not m.strip():
            errs.add(kind, i, "mask", "a picture's path, relative to the rules file")
        else:
            r.mask = (rs.folder / m).resolve() if not Path(m).is_absolute() else Path(m)
            if r.tiles is None:
                errs.add(kind, i, "mask", 'a mask picture needs tiles = ["C0:C1,R0:R1"]: the tiles it covers')
    if kind == "assign":
        r.textures = _textures(e, kind, i, errs)
        has_e, has_s = "effect" in e, "set" in e
        if has_e == has_s:
            errs.add(kind, i, "effect", "give effect = ID or set = NAME (one of them)")
        elif has_e:
            v = e["effect"]
            if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= 0xFFFFFFFF:
                errs.add(kind, i, "effect", f"{v!r}: an effect id, 0 .. 4294967295 (0 removes the effect)")
            else:
                r.effect = int(v)
        else:
            v = e["set"]
            if not isinstance(v, str) or v.strip().lower() not in {s.name.lower() for s in rs.sets}:
                errs.add(kind, i, "set", f"{v!r}: no [[set]] of that name in this file"
                         + (f" (sets: {', '.join(s.name for s in rs.sets)})" if rs.sets else ""))
            else:
                r.set = next(s.name for s in rs.sets if s.name.lower() == v.strip().lower())
        mode = e.get("mode", "always")
        if mode not in MODES:
            errs.add(kind, i, "mode", f"{mode!r}: one of {', '.join(MODES)}")
        else:
            r.mode = mode
        am = e.get("allow_missing", False)
        if not isinstance(am, bool):
            errs.add(kind, i, "allow_missing", "true or false")
        r.allow_missing = bool(am)
        return r
    # exclude / include: exactly one criterion
    crit = [k for k in ("under", "slope_above", "textures", "mask") if k in e]
    if len(crit) != 1:
        errs.add(kind, i, crit[1] if len(crit) > 1 else None,
                 "give exactly one of under, slope_above, textures, mask" + (f" (not {', '.join(crit)})" if crit else ""))
    if "under" in e:
        if e["under"] not in UNDER:
            errs.add(kind, i, "under", f"{e['under']!r}: one of {', '.join(UNDER)}")
        else:
            r.under = e["under"]
    if "slope_above" in e:
        v = e["slope_above"]
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0 <= v <= 90:
            errs.add(kind, i, "slope_above", f"{v!r}: degrees, 0 .. 90")
        else:
            r.slope_above = float(v)
    if "textures" in e:
        r.textures = _textures(e, kind, i, errs)
        v = e.get("share", 0.5)
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0 <= v < 1:
            errs.add(kind, i, "share", f"{v!r}: the share of the cell the textures must show, 0 .. 1")
        else:
            r.share = float(v)
    elif "share" in e:
        errs.add(kind, i, "share", "share goes with textures = [...]")
    if "margin" in e:
        v = e["margin"]
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0 <= v <= 533.34:
            errs.add(kind, i, "margin", f"{v!r}: yards, 0 .. 533 (a tile)")
        elif "mask" in e and v:
            errs.add(kind, i, "margin", "a painted mask is taken as painted (no margin)")
        else:
            r.margin = float(v)
    reason = e.get("reason", "")
    if not isinstance(reason, str):
        errs.add(kind, i, "reason", "a few words (a string)")
    r.reason = str(reason)
    return r


__all__ = ["DEFAULT_NAME", "EffectSetDecl", "KINDS", "Rule", "RuleSet", "UNDER", "check_glob", "key_lines",
           "load_rules", "parse_rules", "tomllib"]
