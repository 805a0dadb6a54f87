"""The ground-effect rules in the window (issue 47 items 3-5; docs/rules.md "In the workbench").

:class:`RulesView` holds a rules file prepared against the session's data and answers, always off
the frame's thread (the workbench's thread, or the watcher's): why a picked cell is as it is
(``edit.rules_explain.explain_cell`` over the session's tile as edited), the rule governing each
cell of a tile (the "rules" overlay: one palette colour a rule, a legend naming them), whether a
tile *on disk* has drifted from its rules (``rules_explain.drift``, the Rules panel's marker),
and, with ``view --watch``, each tile another editor saves put right by ``RulesOnSave`` (what
``effects apply --watch`` runs) with a line per save.

:class:`KeepRuleTool` is the tool that records into the rules: a stroke of it excludes (or, with
"include", clears) the cells under the brush as the exclusion brush does, and at its end the
stroke's cells become a mask picture beside the rules file and an ``[[exclude]]`` (``[[include]]``)
rule appended to it (``rules_explain.append_mask_rule``), so the hand work survives the next
repaint. :func:`keep_stroke` is the same as a library call.

The file is read again when it changes on disk (its size and time, looked at when a job runs, never
per frame). Nothing here runs per frame: the frame's thread only maps finished results.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from wowgrass.errors import WowgrassError

from .tools import Tool, ToolRefused

PALETTE_SIZE = 20  # the terrain shader's palette (terrain.glsl uSetColours[20], index % 20)


def default_rules_file(data) -> Path | None:
    """``wowgrass-rules.toml`` in the top loose folder of ``data`` (the project, as ``effects apply``
    takes it by default), None where the data has no loose folder."""
    from wowgrass.edit.rules import DEFAULT_NAME

    layers = list(getattr(data, "layers", []) or [])
    if layers:
        return Path(layers[-1]) / DEFAULT_NAME
    if not getattr(data, "archives", None) and getattr(data, "root", None) is not None:
        return Path(data.root) / DEFAULT_NAME
    return None


def footprint_cache(plan, data):
    """The footprints' per-data cache (the models' bounds read once) where a rule of ``plan`` uses
    footprints, else None (as ``effects apply`` keeps one)."""
    if not any(r.kind != "assign" and r.mask is None for r in plan.rules.rules):
        return None
    from wowgrass.edit.footprints import FootprintContext

    return FootprintContext(data)


def rule_palette() -> tuple:
    """The shader palette of the rules overlay: rule order k draws ``palette[k % 20]``."""
    from wowgrass.edit.rules_explain import rule_colour

    return tuple(tuple(c / 255.0 for c in rule_colour(k)) for k in range(PALETTE_SIZE))


def overlay_cells(per_cell: np.ndarray) -> np.ndarray:
    """(256, 8, 8) per-cell values in MCNK order -> (128, 128), as the cell overlay images lay
    them out (rows: chunk IndexY * 8 + cell row; columns: IndexX * 8 + cell column)."""
    return np.ascontiguousarray(per_cell.reshape(16, 16, 8, 8).transpose(0, 2, 1, 3).reshape(128, 128))


def brush_cells(session, x: float, y: float, radius: float) -> dict:
    """{tile: (256, 8, 8) bool} of the cells whose centre lies within ``radius`` of (x, y): the
    exclusion brush's own test (``EditSession.exclude``), from the tiles' public cell centres."""
    out = {}
    c0, r0 = session.tile_of(x + radius, y + radius)
    c1, r1 = session.tile_of(x - radius, y - radius)
    present = set(session.tiles)
    for col in range(c0, c1 + 1):
        for row in range(r0, r1 + 1):
            if (col, row) not in present:
                continue
            cen = session.tile((col, row)).cell_centres()
            m = (cen[..., 0] - x) ** 2 + (cen[..., 1] - y) ** 2 <= radius * radius
            if m.any():
                out[(col, row)] = m
    return out


def unique_rule_name(rules_path: Path, name: str) -> str:
    """``name``, or ``name 2``, ``name 3``... where the file has a rule of that name already."""
    from wowgrass.edit.rules import load_rules

    taken = set()
    if Path(rules_path).exists():
        taken = {r.name for r in load_rules(rules_path).rules}
    out, k = name, 2
    while out in taken:
        out = f"{name} {k}"
        k += 1
    return out


def keep_stroke(session, dabs, rules_path, *, include: bool = False, name: str = "kept stroke",
                reason: str = "") -> dict:
    """Keep a brush stroke as a rule: the cells under ``dabs`` [(x, y, radius)] (the exclusion
    brush's cells) become a mask picture beside ``rules_path`` and an ``[[exclude]]`` rule
    (``include``: an ``[[include]]``) naming it, appended to the file (made when missing); both
    files written all or none. Returns {"picture", "rule", "kind", "cell_count", "tiles"}."""
    from wowgrass.edit.masks import chunks_to_grid
    from wowgrass.edit.rules_explain import append_mask_rule
    from wowgrass.errors import UsageError

    per_tile: dict = {}
    for x, y, r in dabs:
        for key, m in brush_cells(session, x, y, r).items():
            per_tile[key] = per_tile[key] | m if key in per_tile else m
    if not per_tile:
        raise UsageError("the stroke painted no cell of the map")
    grids = {key: chunks_to_grid(session.tile(key), m) for key, m in per_tile.items()}
    kind = "include" if include else "exclude"
    name = unique_rule_name(rules_path, name.strip() or "kept stroke")
    picture = append_mask_rule(rules_path, kind, grids, name=name, reason=reason)
    return {"picture": str(picture), "rule": name, "kind": kind, "tiles": sorted(per_tile),
            "cell_count": int(sum(int(m.sum()) for m in per_tile.values()))}


class RulesView:
    """A rules file in the window (see the module docstring). Every method but :meth:`legend`,
    :meth:`compose` and the properties runs off the frame's thread."""

    def __init__(self, session, path, *, watch: bool = False, on_line=None):
        self.session = session
        self.path = Path(path)
        self.watching = watch
        self.on_line = on_line or (lambda s: None)
        self.plan = None
        self.error: str | None = None  # why the file could not be used (said in the Rules panel)
        self.version = 0  # bumped by every (re)load of the file
        self._stamp = None
        self._lock = threading.RLock()  # loading the file (a plan takes a while: never on the frame's thread)
        self._kept = threading.Lock()  # the dicts below (the frame's thread takes it: held briefly only)
        self._context = None
        self._on_save = None
        self._written_in_place: set = set()  # saves the rules rewrote in place (their own-write event follows)
        self.drifts: dict = {}  # tile -> Drift of the file on disk (tiles checked so far)
        self._drifted: list = []  # [(tile, cells)] of the drifted ones, made when drifts change (the panel's)
        self.watch_lines: list[str] = []  # the watch's line per save (the last 20)
        self.saves: list = []  # SaveResult per save taken
        self.images: dict = {}  # tile -> (128, 128, 4) u1: R the governing rule's palette index + 1
        self.regular: dict = {}  # tile -> the tile's overlay image as the workbench computed it

    # -- the file --
    @property
    def exists(self) -> bool:
        return self.path.is_file()

    def _file_stamp(self):
        try:
            st = self.path.stat()
        except OSError:
            return None
        return (st.st_size, st.st_mtime_ns, st.st_ino)

    def key(self) -> tuple:
        """What a result computed from the rules depends on: the file as read and as it is now."""
        return self.version, self._file_stamp()

    def current(self):
        """The plan of the file as it is on disk now (read again when it changed), None when there
        is no file or it is not valid (``error`` says why)."""
        with self._lock:
            stamp = self._file_stamp()
            if stamp == self._stamp and (self.plan is not None or self.error is not None or stamp is None):
                return self.plan
            self._stamp = stamp
            self.plan, self.error = None, None
            self.version += 1
            with self._kept:
                self.images.clear()
                self.drifts.clear()
                self._drifted = []
            if stamp is None:
                return None
            from wowgrass.edit.rules import load_rules
            from wowgrass.edit.rules_engine import prepare

            s = self.session
            try:
                self.plan = prepare(load_rules(self.path), s.data, s.map_name, msb_first=s.msb_first)
            except WowgrassError as exc:
                self.error = str(exc)
            return self.plan

    def _ctx(self, plan):
        if self._context is None or self._context[0] is not plan:
            self._context = (plan, footprint_cache(plan, self.session.data))
        return self._context[1]

    def _tile_now(self, key):
        """The tile as the session holds it (edited), or as the data holds it where the session has
        not read it (not read into the session for an overlay)."""
        s = self.session
        if s.has_read(key):
            return s.tile(key)
        return self._tile_on_disk(key)

    def _tile_on_disk(self, key):
        from wowgrass.edit.adt_edit import read_tile
        from wowgrass.game.maps import adt_game_path

        s = self.session
        gp = adt_game_path(s.map_name, *key)
        return read_tile(s.data.read(gp), gp, big_alpha=s.big_alpha, msb_first=s.msb_first)

    # -- item 3: why, and the rule governing each cell --
    def explain(self, ref) -> dict | None:
        """``explain_cell`` of the picked cell over the session's tile as edited (None: no rules)."""
        from wowgrass.edit.rules_explain import explain_cell

        plan = self.current()
        if plan is None:
            return None
        key = tuple(ref.tile)
        if not plan.rules.in_scope(key):
            return {"out_of_scope": True, "tile": list(key)}
        s = self.session
        return explain_cell(s.data, plan, key, s.chunk_index(ref), tuple(ref.cell), t=s.tile(key))

    def governing_image(self, key) -> np.ndarray | None:
        """(128, 128, 4) u1 of tile ``key`` for the rules overlay: R the palette index + 1 of the
        rule governing the cell (0: none), G/B/A zero (:meth:`compose` adds the regular flags)."""
        from wowgrass.edit.rules_engine import evaluate, governing

        plan = self.current()
        if plan is None or not plan.rules.in_scope(key):
            return None
        t = self._tile_now(key)
        d = evaluate(t, key, plan, data=self.session.data, context=self._ctx(plan))
        return governing_picture(governing(t, key, plan, d))

    def compose(self, key, regular: np.ndarray | None = None, rules: np.ndarray | None = None, *,
                shown: bool) -> np.ndarray | None:
        """The image the terrain gets for ``key``: the regular overlay image (its flags), with R the
        governing rule's where the rules overlay is ``shown``. Either image may be given anew."""
        with self._kept:
            if regular is not None:
                self.regular[key] = regular
            if rules is not None:
                self.images[key] = rules
            base, mine = self.regular.get(key), self.images.get(key)
        if not shown:
            return base
        if mine is None:
            return base
        out = np.zeros((128, 128, 4), np.uint8) if base is None else base.copy()
        out[..., 0] = mine[..., 0]
        return out

    def known_tiles(self) -> set:
        """The tiles with an image kept (regular or the rules')."""
        with self._kept:
            return set(self.regular) | set(self.images)

    def legend(self) -> list:
        """[(label, (r, g, b) 0..255)] of every rule, in the file's order (the overlay's key)."""
        from wowgrass.edit.rules_explain import rule_colour

        plan = self.plan
        if plan is None:
            return []
        return [(r.label, rule_colour(r.order % PALETTE_SIZE)) for r in plan.rules.rules]

    # -- item 5: drift of the tiles on disk --
    def check_drift(self, keys) -> dict:
        """Drift of each of ``keys`` as its file is on disk now (tiles outside the file's scope: none)."""
        from wowgrass.edit.rules_explain import drift

        plan = self.current()
        out = {}
        if plan is None:
            return out
        for key in keys:
            key = tuple(key)
            if not plan.rules.in_scope(key) or key not in set(self.session.tiles):
                continue
            out[key] = drift(self._tile_on_disk(key), key, plan, data=self.session.data)
        with self._kept:
            self.drifts.update(out)
            self._list_drifted()
        return out

    def _list_drifted(self) -> None:
        self._drifted = sorted((k, d.cell_count) for k, d in self.drifts.items() if d.drifted)

    def reloaded_already(self, results) -> set:
        """The paths of ``results`` (:meth:`saved`'s) that are the rules' own rewrite of a save that
        the view reloaded already (it reads the file after the rules wrote it): no second reload. A
        rules file read again rewrites tiles the view has not reloaded: those are not among them."""
        out = {r.path.resolve() for r in results if r.status == "own-write"} & self._written_in_place
        self._written_in_place -= out
        return out

    def spec(self):
        """(version, path, text) of the rules as read: what a worker process prepares its plan
        from (None: no valid rules)."""
        plan = self.plan
        return None if plan is None else (self.version, str(self.path), plan.rules.text)

    def put_drift(self, key, d, version) -> None:
        """A worker's drift of ``key``, kept where the rules are still those of ``version``."""
        with self._kept:
            if version == self.version and d is not None:
                self.drifts[tuple(key)] = d
                self._list_drifted()

    def drifted(self) -> list:
        """[(tile, cell count)] of the tiles on disk that disagree with the rules, in tile order."""
        return self._drifted  # made when a drift came in, not per frame

    # -- item 4: the view's watch --
    def saved(self, paths) -> list:
        """Files another program saved (the watcher's thread): each tile of the map put right by the
        rules (``RulesOnSave``, as ``effects apply --watch``), a line each through ``on_line``."""
        if not self.watching:
            return []
        from wowgrass.edit.rules_apply import RulesOnSave

        plan = self.current()
        mine = self.path.resolve() in {Path(p).resolve() for p in paths}
        with self._lock:
            if self._on_save is None:
                if plan is None:
                    return []
                # one for the view's life: it knows its own writes, and a saved rules file is read,
                # checked and applied to every tile by it (as `effects apply --watch` does)
                self._on_save = RulesOnSave(self.session.data, plan, rules_path=self.path)
            elif plan is not None and not mine and self._on_save.plan.rules.text != plan.rules.text:
                # the file changed where the watcher does not look: the rules as they are now
                self._on_save.plan, self._on_save.context = plan, footprint_cache(plan, self.session.data)
            job = self._on_save
        results = job(paths)
        for res in results:
            if res.status == "applied" and res.written is not None and Path(res.written) == res.path:
                self._written_in_place.add(res.path.resolve())  # the view reloads it with the save
            if res.status == "own-write":
                continue
            self.saves.append(res)
            line = "rules: " + res.line().split(" -> ")[0]  # the window's line: tile, rules fired, bytes
            self.watch_lines.append(line)
            del self.watch_lines[:-20]
            self.on_line(line)
        again = {tuple(r.tile) for r in results if r.tile and r.status in ("applied", "unchanged")}
        if any(r.status == "rules-reloaded" for r in results):
            again |= set(self.drifts)
        if again:
            self.check_drift(sorted(again))
        return results


def worker_rules(cache: dict, data, args: dict, msb_first: bool, tile, key):
    """A worker process's rules job (workers.py ``TileWorkers.submit_rules``' ``args``): (image,
    None) of :meth:`RulesView.governing_image`, (None, Drift) of :meth:`RulesView.check_drift` or
    (None, dict) of :meth:`RulesView.explain` for one parsed tile, under the rules ``args["rules"]``
    (version, path, text), prepared once per version in ``cache``."""
    from wowgrass.edit.rules_explain import explain_cell

    spec, map_name, what = args["rules"], args["map"], args["what"]
    from wowgrass.edit.rules import parse_rules
    from wowgrass.edit.rules_engine import evaluate, governing, prepare
    from wowgrass.edit.rules_explain import drift

    version, path, text = spec
    hit = cache.get(version)
    if hit is None:
        cache.clear()
        plan = prepare(parse_rules(text, Path(path)), data, map_name, msb_first=msb_first)
        hit = cache[version] = (plan, footprint_cache(plan, data))
    plan, context = hit
    key = tuple(key)
    if not plan.rules.in_scope(key):
        return None, ({"out_of_scope": True, "tile": list(key)} if what == "explain" else None)
    if what == "explain":
        return None, explain_cell(data, plan, key, args["mcnk"], args["cell"], t=tile)
    d = evaluate(tile, key, plan, data=data, context=context)
    if what == "drift":
        return None, drift(tile, key, plan, data=data, decision=d)
    return governing_picture(governing(tile, key, plan, d)), None


def governing_picture(gov: np.ndarray) -> np.ndarray:
    """(256, 8, 8) rule orders -> the rules overlay's (128, 128, 4) u1 (R: palette index + 1)."""
    img = np.zeros((128, 128, 4), np.uint8)
    g = overlay_cells(gov)
    img[..., 0] = np.where(g >= 0, g % PALETTE_SIZE + 1, 0).astype(np.uint8)
    return img


def rule_lines(e: dict | None) -> list[str]:
    """The Cell panel's lines of ``explain_cell``'s dict: why the cell is as it is."""
    if not e:
        return []
    if e.get("out_of_scope"):
        return ["rules: this tile is outside the rules file's tiles"]
    out = [f"why: {e['verdict']}"]
    if e.get("governed_by"):
        out.append(f"governed by {e['governed_by']}")
    for lay in e["layers"]:
        eff = str(lay["effect_id"]) + (f" -> {lay['effect_id_after']}" if lay["effect_id_after"] != lay["effect_id"]
                                       else "")
        out.append(f"  layer {lay['index']} {short(lay['texture'])}: shows {lay['share']:.0%}, effect {eff}"
                   + (f"; {lay['rule']}" if lay["rule"] else ""))
    ne = e["no_effect_doodad"]
    if ne["excluded_by"]:
        out.append(f"  excluded by {ne['excluded_by']}: {ne['excluded_because']}")
    elif ne["included_by"]:
        out.append(f"  noEffectDoodad cleared by {ne['included_by']}")
    eff = e.get("effect")
    if eff is not None:
        models = ", ".join(short(m) for m in eff["models"]) or "no doodads"
        out.append(f"  effect set {eff['id']}" + (f" ({eff['set']})" if eff.get("set") else "") + f": {models}")
    sc = e["scatter"]
    out.append("  the client scatters: " + (", ".join(f"{short(m)} x{n}" for m, n in sc["by_model"].items())
                                             or "nothing") + " here")
    if e.get("drift"):
        out.append("  drift: the tile here differs from its rules (effects apply puts it right)")
    return out


def short(path) -> str:
    return str(path).replace("\\", "/").rsplit("/", 1)[-1]


class KeepRuleTool(Tool):
    """The exclusion brush whose strokes are kept as rules (see the module docstring)."""

    name, label, kind = "rule", "exclusion kept as a rule", "brush"
    help = "brush kept as a rule"

    @staticmethod
    def settings(state) -> dict:
        return state.extra.setdefault("rule", {"name": "kept stroke", "reason": "painted in the workbench",
                                               "include": False, "dabs": []})

    def begin(self, bench, state) -> None:
        rules = getattr(bench, "rules", None)
        if rules is None:
            raise ToolRefused("keep as a rule: the view has no rules file (view --rules FILE, or a project "
                              "folder laid over the client's data)")
        self.settings(state)["dabs"] = []

    def apply(self, session, at, state):
        st = self.settings(state)
        st["dabs"].append((float(at[0]), float(at[1]), float(state.radius)))
        return session.exclude(at[0], at[1], state.radius, clear=st["include"])

    def end(self, bench, state) -> None:
        st = self.settings(state)
        dabs, st["dabs"] = list(st["dabs"]), []
        rules = getattr(bench, "rules", None)
        if not dabs or rules is None:
            return
        session, path = bench.session, rules.path
        include, name, reason = bool(st["include"]), str(st["name"]), str(st["reason"])

        def keep():
            try:
                res = keep_stroke(session, dabs, path, include=include, name=name, reason=reason)
            except WowgrassError as exc:  # the file is not valid, a folder not writable: said, the stroke stays
                bench.later(lambda e=exc: bench.say(f"keep as a rule failed: {e}"))
                return
            rules.current()
            bench.later(lambda: bench.say(f"kept as {res['kind']} rule {res['rule']!r}: {res['cell_count']} cells, "
                                          f"{short(res['picture'])} in {path.name}"))
            bench.rules_changed()

        bench.in_background(keep)

    def widgets(self, ui, state):
        super().widgets(ui, state)
        st = self.settings(state)
        imgui = ui.imgui
        _, st["include"] = imgui.checkbox("include (clears)", st["include"])
        _, st["name"] = imgui.input_text("rule name", st["name"])
        _, st["reason"] = imgui.input_text("reason", st["reason"])
        rules = getattr(ui.bench, "rules", None)
        imgui.text(f"a stroke: a rule in {rules.path.name}" if rules is not None else "no rules file (--rules)")


def rules_panel(ui, rules) -> None:
    """The Rules panel (``ui``: the Panels): the file, each tile on disk drifted from it, the
    watch's last lines."""
    imgui = ui.imgui
    W, H = ui.target.size
    if rules.plan is None and rules.error is None and ui.bench.tools.tool != KeepRuleTool.name:
        return  # no rules file (yet): the panel shows with the tool that would make one
    # bottom middle, above the status line: clear of the Tools (left), Cell and Findings (right) panels
    if ui._window("Rules", max(230, W // 2 - 170), max(8, H - 122), 340, 92):  # noqa: SLF001 - the panels' helper
        plan = rules.plan
        if rules.error:
            imgui.text_wrapped(f"{rules.path.name}: {rules.error}")
        elif plan is None:
            imgui.text_wrapped(f"{rules.path}: no rules file yet (a kept stroke makes it)")
        else:
            imgui.text_wrapped(f"{rules.path.name}: {len(plan.rules.rules)} rule(s)"
                               + ("; the watch re-applies them to each save" if rules.watching else ""))
        drifted = rules.drifted()
        if drifted:
            imgui.text_colored(imgui.ImVec4(1.0, 0.35, 0.3, 1.0), f"drift: {len(drifted)} tile(s) on disk")
            for key, n in drifted[:6]:
                imgui.bullet_text(f"{key[0]},{key[1]}: {n:,} cells differ (effects apply)")
        elif plan is not None and rules.drifts:
            imgui.text(f"no drift: the {len(rules.drifts)} tile(s) checked are as the rules want them")
        for line in rules.watch_lines[-4:]:
            imgui.text_wrapped(line)
    imgui.end()


__all__ = ["KeepRuleTool", "RulesView", "brush_cells", "default_rules_file", "keep_stroke", "overlay_cells",
           "rule_lines", "rule_palette", "rules_panel", "unique_rule_name"]
