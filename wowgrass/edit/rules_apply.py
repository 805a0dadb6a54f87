"""Applying ground-effect rules over a map, writing the result, and following another editor's
saves (``effects apply`` and ``effects apply --watch``).

```python
result = apply_rules(data, plan, jobs=1, progress=None)    # RulesResult: files {game path: bytes}, reports
result.write(data, out_dir=None, in_place=False)           # all or none (wowgrass.fileio.write_files_atomic)
on_save = RulesOnSave(data, plan, out_dir=None, on_result=print)   # takes a FileWatcher's changes:
on_save(paths)                                             # one SaveResult per tile saved
```
Workers (``jobs`` > 1) reopen the data from its spec, layered folders and overlay included, as
``effects audit --jobs`` and ``bake --jobs`` do; the plan is handed to each once.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from wowgrass.edit.adt_edit import BACKUP_SUFFIX, disk_path, read_tile
from wowgrass.edit.rules_engine import Plan, TileApply, apply_tile
from wowgrass.errors import UsageError, WowgrassError
from wowgrass.fileio import write_files_atomic

Progress = Callable[[int, int, str], None]


# ----------------------------------------------------------------------------- the result

@dataclass
class RulesResult:
    """What applying a rules file over a map changes (nothing is written until :meth:`write`)."""

    plan: Plan
    files: dict = field(default_factory=dict)          # game path -> new bytes (tiles and tables changed)
    tiles: list = field(default_factory=list)          # TileApply per tile
    notes: list = field(default_factory=list)

    def per_rule(self) -> list[dict]:
        """Every rule with the layers, cells and tiles it changed, in file order."""
        out = []
        for r in self.plan.rules.rules:
            layers = sum(t.per_rule.get(r.order, {}).get("layers", 0) for t in self.tiles)
            cells = sum(t.per_rule.get(r.order, {}).get("cells", 0) for t in self.tiles)
            tiles = sum(1 for t in self.tiles if t.per_rule.get(r.order))
            d = {**r.to_json(), "layer_count": layers, "cell_count": cells, "tile_count": tiles}
            if r.kind == "assign":
                d["effect"] = self.plan.effect_of.get(r.order)
            out.append(d)
        return out

    def conflicts(self) -> list[dict]:
        """Where two rules disagree: which won, over which, how often, and why."""
        total: Counter = Counter()
        why = {}
        tiles: Counter = Counter()
        for t in self.tiles:
            seen = set()
            for w, lo, unit, n, because in t.conflicts:
                total[(w, lo, unit)] += n
                why[(w, lo, unit)] = because
                seen.add((w, lo, unit))
            tiles.update(seen)
        out = []
        for (w, lo, unit), n in sorted(total.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            rw, rl = self.plan.rule(w), self.plan.rule(lo)
            out.append({"winner": rw.label, "loser": rl.label, "winner_line": rw.line, "loser_line": rl.line,
                        f"{unit[:-1]}_count": n, "tile_count": tiles[(w, lo, unit)], "why": why[(w, lo, unit)]})
        return out

    def totals(self) -> dict:
        fields: Counter = Counter()
        for t in self.tiles:
            fields.update(t.fields)
        return {"tile_count": len(self.tiles), "changed_tile_count": sum(1 for t in self.tiles if t.changed),
                "changed_byte_count": sum(t.bytes_changed for t in self.tiles), "by_field": dict(fields),
                "mapping_cell_count": sum(t.mapping_cells for t in self.tiles)}

    def to_json(self) -> dict:
        p = self.plan
        return {"map": p.map, "rules": str(p.rules.path), "build": p.build, "target": p.target, **self.totals(),
                "sets": list(p.set_reports), "table_files": sorted(p.tables), "per_rule": self.per_rule(),
                "conflicts": self.conflicts(), "notes": list(self.notes) + list(p.warnings),
                "tiles": [{"tile": list(t.tile), "path": t.path, "changed_byte_count": t.bytes_changed,
                           "by_field": t.fields, "fired": [p.rule(o).name for o in t.fired()]}
                          for t in self.tiles if t.changed]}

    def text_lines(self) -> list[str]:
        p, tot = self.plan, self.totals()
        out = [f"apply {p.rules.path.name}: {tot['tile_count']:,} tile(s) of {p.map} read, "
               f"{tot['changed_tile_count']:,} changed, {tot['changed_byte_count']:,} bytes ("
               + (", ".join(f"{k} {v:,}" for k, v in tot["by_field"].items()) or "none") + ")"]
        for s in p.set_reports:
            out.append(f"  set {s['name']!r}: effect {s['id']}" + (" (new row)" if s["new"] else ""))
        for r in self.per_rule():
            what = (f"{r['layer_count']:,} layers, " if r["kind"] == "assign" else "") + f"{r['cell_count']:,} cells"
            out.append(f"  {r['kind']} {r['name']!r} (line {r['line']}): {what} in {r['tile_count']:,} tile(s)")
        if tot["mapping_cell_count"]:
            out.append(f"  doodadMapping ({p.rules.mapping_mode}): {tot['mapping_cell_count']:,} cells")
        for c in self.conflicts():
            n = c.get("layer_count", c.get("cell_count"))
            unit = "layers" if "layer_count" in c else "cells"
            out.append(f"  conflict: {c['winner']} won over {c['loser']} in {n:,} {unit} "
                       f"({c['tile_count']} tile(s)): {c['why']}")
        return out

    def write(self, data, out_dir=None, *, in_place: bool = False) -> list[Path]:
        return write_files(self.files, data, out_dir, in_place=in_place)


def write_targets(files: dict, data, out_dir=None, *, in_place: bool = False) -> tuple[list, dict]:
    """([(disk path, bytes)], {disk path: backup}) for game files: under ``out_dir`` in the client's
    layout, or in place: over a loose file (a ``.bak`` kept beside it), and a file that came from an
    archive into the top loose folder of ``data`` (the project; archives are never written)."""
    from wowgrass.edit.batch import base_data

    targets, backups = [], {}
    base = base_data(data)
    if in_place:
        top = Path(base.layers[-1]) if getattr(base, "layers", None) else (
            None if getattr(base, "archives", None) else Path(base.root))
        for gp, raw in files.items():
            found = base.locate(gp)
            if found is not None and found[1] is None:
                dest = Path(found[0])
                backups[dest] = dest.with_name(dest.name + BACKUP_SUFFIX)
            elif top is not None:
                dest = top / disk_path(gp)
            else:
                raise UsageError(f"{gp} is inside {found[0] if found else 'no file'}: an MPQ chain cannot be edited "
                                 "in place; lay a project folder over it (--data CLIENT --data PROJECT) or use -o DIR")
            targets.append((dest, raw))
        return targets, backups
    if out_dir is None:
        raise UsageError("give -o DIR (or --in-place)")
    out = Path(out_dir)
    if not out.is_dir():
        raise UsageError(f"-o {out}: folder does not exist" if not out.exists() else f"-o {out}: not a folder")
    for gp, raw in files.items():
        dest = out / disk_path(gp)
        found = base.locate(gp)
        if found is not None and found[1] is None and dest.exists() and os.path.samefile(found[0], dest):
            raise UsageError(f"{dest} is the input itself: give another -o folder, or --in-place")
        targets.append((dest, raw))
    return targets, backups


def write_files(files: dict, data, out_dir=None, *, in_place: bool = False) -> list[Path]:
    """Write ``files`` (tiles and tables) all or none (see :func:`write_targets`)."""
    if not files:
        return []
    targets, backups = write_targets(files, data, out_dir, in_place=in_place)
    return write_files_atomic(targets, backups=backups)


# ----------------------------------------------------------------------------- over a map

_WORKER: dict = {}


def _open_worker(spec, overlay, plan, picture) -> None:
    from wowgrass.edit.batch import Overlay

    data = spec.open()
    data = Overlay(data, overlay) if overlay else data
    _WORKER.update(data=data, plan=plan, context=_context(plan, data), picture=picture)


def _context(plan: Plan, data=None):
    """The footprints' per-map cache (model bounds read once), where some rule uses footprints."""
    if not any(r.kind != "assign" and r.mask is None for r in plan.rules.rules):
        return None
    from wowgrass.edit.footprints import FootprintContext

    return FootprintContext(data)


def _one(job) -> tuple[str, bytes | None, TileApply]:
    gp, cr = job
    data, plan = _WORKER["data"], _WORKER["plan"]
    raw = data.read(gp)
    new, rep = apply_tile(raw, gp, cr, plan, data=data, context=_WORKER.get("context"),
                          picture=_WORKER.get("picture", False))
    return gp, (new if rep.changed else None), rep


def apply_rules(data, plan: Plan, *, jobs: int = 1, progress: Progress | None = None,
                picture: bool = False) -> RulesResult:
    """Apply ``plan`` to every tile in its scope; the changed tiles' bytes, and the tables the sets
    changed, in ``files`` (nothing written). ``picture``: each tile's report keeps the rule
    governing each cell (for :func:`wowgrass.edit.rules_explain.rules_picture`)."""
    from wowgrass.game.maps import adt_game_path

    result = RulesResult(plan)
    todo = [(adt_game_path(plan.map, c, r), (c, r)) for c, r in plan.tiles]
    total = len(todo)

    def collect(it):
        for k, (gp, new, rep) in enumerate(it):
            result.tiles.append(rep)
            if new is not None:
                result.files[gp] = new
            if progress:
                progress(k + 1, total, "{},{}".format(*rep.tile))

    if jobs > 1 and total > 1:
        from wowgrass.edit.batch import Overlay, base_data
        from wowgrass.formats.mpq import release_threads

        release_threads()
        overlay = str(data.folder) if isinstance(data, Overlay) else None
        with ProcessPoolExecutor(min(jobs, total), initializer=_open_worker,
                                 initargs=(base_data(data).spec(), overlay, plan, picture)) as pool:
            collect(pool.map(_one, todo, chunksize=max(1, total // (4 * jobs))))
    else:
        _WORKER.update(data=data, plan=plan, context=_context(plan, data), picture=picture)
        try:
            collect(map(_one, todo))
        finally:
            _WORKER.clear()
    result.files.update(plan.tables)
    return result


# ----------------------------------------------------------------------------- following saves

@dataclass
class SaveResult:
    """One save of another editor, taken: the tile, the rules that fired, the bytes changed, or why
    it was left alone."""

    path: Path
    tile: tuple | None
    bytes_changed: int = 0
    fired: list = field(default_factory=list)
    written: Path | None = None
    status: str = "applied"       # applied | unchanged | unparsable | removed | changed-under | not-written
                                  # | failed | rules-reloaded | rules-error | own-write (not reported)
    message: str = ""
    seconds: float = 0.0
    event_time: float | None = None

    def line(self) -> str:
        where = f"{self.tile[0]},{self.tile[1]}" if self.tile else self.path.name
        if self.status == "applied":
            return (f"{where}: {', '.join(self.fired) or 'no rule'} fired, {self.bytes_changed:,} bytes changed"
                    f" -> {self.written}")
        if self.status == "unchanged":
            return f"{where}: as the rules want it (0 bytes changed)"
        if self.status == "rules-reloaded":
            return (f"{where}: rules read again: {self.message}, {self.bytes_changed:,} bytes"
                    + (f" ({', '.join(self.fired)} fired)" if self.fired else ""))
        return f"{where}: {self.status}: {self.message}"

    def to_json(self) -> dict:
        return {"path": str(self.path), "tile": list(self.tile) if self.tile else None, "status": self.status,
                "changed_byte_count": self.bytes_changed, "fired": list(self.fired),
                "written": str(self.written) if self.written else None, "message": self.message,
                "seconds": round(self.seconds, 4)}


def _fstat(fd: int):
    st = os.fstat(fd)
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def _stat(p: Path):
    try:
        st = os.stat(p)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino)


class RulesOnSave:
    """Re-apply the rules to each tile another editor saves into the watched loose folders.

    Call it with the changed paths (a :class:`wowgrass.workbench.watch.FileWatcher`'s
    ``on_change``, which groups a save's events over a quiet spell). For each tile of the plan's map
    it waits until the write is complete (size, time and inode the same before and after reading it,
    and the file parses; else again every ``settle_s``, ``parse_wait_s`` at most), applies the
    rules, and before replacing the file checks it is still the bytes it read (re-reading and
    trying again otherwise); the write is atomic (temporary and rename). In place (``out_dir``
    None) the editor's file is replaced by itself with only its ground-effect fields changed (held
    open through the rename: an editor that writes into it in that instant has its save put back
    and taken again, never lost); with ``out_dir`` the result goes there. Its own writes are
    recognised by their size, time and inode and not taken again.

    ``rules_path``: when that file is saved, it is read and checked again (with ``ranges``); a
    good file replaces the rules and is applied to every tile at once (as ``effects apply``); a bad
    one is reported and the rules in force stay."""

    def __init__(self, data, plan: Plan, *, out_dir=None, on_result=None, settle_s: float = 0.03,
                 parse_wait_s: float = 2.0, retries: int = 5, rules_path=None, ranges=None):
        self.data = data
        self.plan = plan
        self.rules_path = Path(rules_path).resolve() if rules_path is not None else None
        self.ranges = ranges
        self.out_dir = Path(out_dir) if out_dir is not None else None
        self.on_result = on_result or (lambda res: None)
        self.settle_s = settle_s
        self.parse_wait_s = parse_wait_s
        self.retries = retries
        self.context = _context(plan, data)
        self._mine: dict[Path, tuple] = {}
        self.results: list[SaveResult] = []
        self.own_writes = 0                    # events of its own writes seen (and not taken)
        import threading

        self.lock = threading.Lock()

    def tile_of(self, path: Path):
        import re

        m = re.fullmatch(re.escape(self.plan.map) + r"_(\d{1,2})_(\d{1,2})\.adt", path.name, re.IGNORECASE)
        if not m:
            return None
        t = (int(m.group(1)), int(m.group(2)))
        return t if self.plan.rules.in_scope(t) else None

    def __call__(self, paths) -> list[SaveResult]:
        event = time.perf_counter()
        out = []
        with self.lock:
            from wowgrass.edit.batch import base_data

            base = base_data(self.data)
            if hasattr(base, "refresh"):     # a tile new to the folders must be found
                base.refresh()
            if self.rules_path is not None and any(Path(x).resolve() == self.rules_path for x in paths):
                res = self._reload(base)
                res.event_time, res.seconds = event, time.perf_counter() - event
                self.results.append(res)
                self.on_result(res)
                out.append(res)
            for p in sorted(Path(x) for x in paths):
                tile = self.tile_of(p)
                if tile is None or not self._is_the_tile(base, p, tile):
                    continue
                try:
                    res = self.take(p, tile)
                except Exception as exc:  # noqa: BLE001 - one save must not end the watch; it is said
                    res = SaveResult(p, tile, status="failed", message=f"{type(exc).__name__}: {exc}")
                res.event_time = event
                res.seconds = time.perf_counter() - event
                if res.status == "own-write":
                    self.own_writes += 1
                else:
                    self.results.append(res)
                    self.on_result(res)
                out.append(res)
        return out

    def _reload(self, base) -> SaveResult:
        """The rules file saved: read, checked, and applied to every tile (or reported, the rules in
        force kept)."""
        from wowgrass.edit.rules import load_rules
        from wowgrass.edit.rules_engine import prepare

        p = self.rules_path
        try:
            plan = prepare(load_rules(p), self.data, self.plan.map, self.ranges, msb_first=self.plan.msb_first)
            result = apply_rules(self.data, plan)
            written = write_files(result.files, self.data, self.out_dir, in_place=self.out_dir is None)
        except WowgrassError as exc:
            return SaveResult(p, None, status="rules-error", message=f"{exc} (the rules in force stay)")
        self.plan, self.context = plan, _context(plan, self.data)
        for w in written:
            self._mine[Path(w).resolve()] = _stat(Path(w))
        tot = result.totals()
        fired = [plan.rule(o).name for o in sorted({o for t in result.tiles for o in t.fired()})]
        return SaveResult(p, None, tot["changed_byte_count"], fired, status="rules-reloaded",
                          message=f"{len(plan.rules.rules)} rules; {tot['changed_tile_count']} of "
                                  f"{tot['tile_count']} tiles changed, {len(written)} files written")

    def _is_the_tile(self, base, p: Path, tile) -> bool:
        """Whether ``p`` is the file the data reads for ``tile`` (not a copy elsewhere in the
        folders, nor a result under ``out_dir``); a file that is gone is taken (to say so)."""
        from wowgrass.game.maps import adt_game_path

        if self.out_dir is not None and self.out_dir.resolve() in p.resolve().parents:
            return False
        if not p.exists():
            return True
        found = base.locate(adt_game_path(self.plan.map, *tile))
        try:
            return found is not None and found[1] is None and os.path.samefile(found[0], p)
        except OSError:
            return False

    def _settled(self, p: Path):
        """The file's bytes once its size and time stop changing and it parses, else (None, why)."""
        deadline = time.monotonic() + self.parse_wait_s
        last = _stat(p)
        why = "removed"
        first = True                       # the watcher grouped the events over a quiet spell already
        while True:
            if last is None:
                return None, None, "removed"
            if not first:
                time.sleep(self.settle_s)
            first = False
            now = _stat(p)
            if now != last:
                last = now
                if time.monotonic() > deadline:
                    return None, None, "still being written"
                continue
            try:
                raw = p.read_bytes()
            except OSError as exc:
                return None, None, f"cannot read it ({exc})"
            if _stat(p) != now:
                last = _stat(p)
                continue
            try:
                t = read_tile(raw, str(p), big_alpha=self.plan.big_alpha, msb_first=self.plan.msb_first)
                return raw, t, now
            except (WowgrassError, ValueError) as exc:
                why = f"does not parse ({exc})"
            if time.monotonic() > deadline:
                return None, None, why
            last = _stat(p)

    def take(self, p: Path, tile) -> SaveResult:
        """Apply the rules to one saved tile (see the class docstring)."""
        from wowgrass.game.maps import adt_game_path

        key = p.resolve()
        if self._mine.get(key) is not None and _stat(p) == self._mine[key]:
            return SaveResult(p, tile, status="own-write")
        gp = adt_game_path(self.plan.map, *tile)
        for _attempt in range(self.retries):
            raw, t, st = self._settled(p)
            if raw is None:
                status = "removed" if st == "removed" else "unparsable"
                msg = "the tile is gone: nothing to do" if status == "removed" else f"{st}: left alone"
                return SaveResult(p, tile, status=status, message=msg)
            try:
                new, rep = apply_tile(raw, gp, tile, self.plan, data=self.data, context=self.context, tile=t)
            except (WowgrassError, ValueError) as exc:
                return SaveResult(p, tile, status="unparsable", message=f"{exc}: left alone")
            fired = [self.plan.rule(o).name for o in rep.fired()]
            dest = p if self.out_dir is None else self.out_dir / disk_path(gp)
            if not rep.changed and self.out_dir is None:
                return SaveResult(p, tile, 0, fired, status="unchanged")
            if self.out_dir is not None:
                try:
                    write_files_atomic([(dest, new)])
                except WowgrassError as exc:  # a full disk, a read-only folder: said, the editor's file intact
                    return SaveResult(p, tile, status="not-written", message=f"{exc}: the save is as the editor left it")
                return SaveResult(p, tile, rep.bytes_changed, fired, written=dest)
            try:                               # the editor's file as read, held open through the rename
                fd = os.open(p, os.O_RDONLY)
            except OSError:
                continue
            try:
                if _fstat(fd) != st or _stat(p) != st:     # saved again while the rules ran: take the new save
                    continue
                try:
                    write_files_atomic([(dest, new)])
                except WowgrassError as exc:
                    return SaveResult(p, tile, status="not-written", message=f"{exc}: the save is as the editor left it")
                if _fstat(fd) != st:
                    # the editor wrote into its file between the check and the rename: that save is in
                    # the file now unlinked; it goes back in place, and is taken as a new save
                    size = os.fstat(fd).st_size
                    write_files_atomic([(p, os.pread(fd, size, 0))])
                    continue
            finally:
                os.close(fd)
            self._mine[key] = _stat(p)
            return SaveResult(p, tile, rep.bytes_changed, fired, written=dest)
        return SaveResult(p, tile, status="changed-under",
                          message=f"the file changed {self.retries} times while the rules ran: left alone until the "
                                  "next save")


__all__ = ["RulesOnSave", "RulesResult", "SaveResult", "apply_rules", "write_files", "write_targets"]
