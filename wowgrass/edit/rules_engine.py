"""What the ground-effect rules (:mod:`wowgrass.edit.rules`) make of a tile.

```python
plan = prepare(rules, data, map_name=None, ranges=None)   # checked against the data; picklable
d = evaluate(tile, (col, row), plan, data=data)            # Decision: the fields the rules want, who decided
new, report = apply_tile(raw, game_path, (col, row), plan, data=data)   # bytes (only ground-effect fields)
```
:func:`prepare` does every check that needs the data before a tile is read: effect ids the tables
have (and, for a 1.12 or 2.4.3 target, the limits of those clients), the sets' doodads, ids and
rows (made here, the same ids on every apply), area names, mask pictures. :func:`evaluate` is pure
numpy over one tile; :func:`apply_tile` writes its result through the byte-exact patcher
(:func:`wowgrass.edit.adt_edit.patch_fields`), so nothing but MCLY effect ids, doodadMapping and
noEffectDoodad ever changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from wowgrass.edit.adt_edit import best_layers, match_textures, patch_fields, read_tile, stale_cells, visible_shares
from wowgrass.edit.rules import NO_EFFECT_IDS, Rule, RuleSet
from wowgrass.errors import UsageError, WowgrassError

AREA_TABLE = "DBFilesClient\\AreaTable.dbc"


# ----------------------------------------------------------------------------- the plan

@dataclass
class Plan:
    """A rules file checked against a data source, ready for tiles (picklable for workers)."""

    rules: RuleSet
    map: str
    tiles: list                                   # the present tiles in the rules' scope
    big_alpha: bool | None
    build: str                                    # the tables' layout
    target: str                                   # the client the rules are for
    effect_of: dict = field(default_factory=dict)     # rule order -> effect id (sets resolved)
    area_ids: dict = field(default_factory=dict)      # rule order -> np.ndarray of AreaTable ids
    masks: dict = field(default_factory=dict)         # rule order -> {tile: (128, 128) bool}
    set_ids: dict = field(default_factory=dict)       # set name -> effect id
    set_reports: list = field(default_factory=list)   # [{name, id, new: bool, line}]
    tables: dict = field(default_factory=dict)       # game path -> new bytes (sets added)
    catalog: object = None                            # GroundEffectCatalog with the sets
    warnings: list = field(default_factory=list)
    msb_first: bool = False

    def rule(self, order: int) -> Rule:
        return self.rules.rules[order]


def _fail(rs: RuleSet, line: int, what: str, why: str):
    raise UsageError(f"{rs.path}:{line}: {what}: {why}")


def prepare(rules: RuleSet, data, map_name: str | None = None, ranges=None, *, msb_first: bool = False) -> Plan:
    """Check ``rules`` against ``data`` (a GameData or an Overlay) and resolve what the tiles need.
    UsageError naming the file, line and key for: an effect id the tables lack (1.12/2.4.3: always;
    3.3.5: unless ``allow_missing``), a set's doodad that is neither a GroundEffectDoodad row nor a
    model in the data, a set id taken by another row, weights for a client without them, an unknown
    area name, a mask picture of the wrong size; a target that is not the tables' layout."""
    from wowgrass.edit.effect_sets import table_build
    from wowgrass.game.effects import DOODAD_PATH, TEXTURE_PATH, GroundEffectCatalog
    from wowgrass.game.maps import choose_map, map_tiles

    if rules.map and map_name and rules.map.lower() != map_name.lower():
        raise UsageError(f"--map {map_name}, but {rules.path} is for map {rules.map!r}")
    name = choose_map(data, map_name or rules.map)
    mt = map_tiles(data, name, ranges)
    tiles = [t for t in mt.tiles if rules.in_scope(t)]
    try:
        tex, dood = data.read(TEXTURE_PATH), data.read(DOODAD_PATH)
        build = table_build(tex, None, getattr(data, "build", None))
    except WowgrassError as exc:
        raise UsageError(f"the rules need the ground-effect tables, which cannot be read: {exc}") from None
    target = rules.target or build
    if target != build and not ({target, build} <= {"1.12", "2.4.3"}):
        raise UsageError(f"{rules.path}: target = {target!r}, but the ground-effect tables in the data have the "
                         f"{build} layout: the rules would write tables that client cannot load")
    plan = Plan(rules, name, tiles, mt.big_alpha, build, target, msb_first=msb_first)
    if mt.note():
        plan.warnings.append(mt.note())
    tex2, dood2 = _resolve_sets(rules, plan, data, tex, dood)
    if tex2 != tex:
        plan.tables[TEXTURE_PATH] = tex2
    if dood2 != dood:
        plan.tables[DOODAD_PATH] = dood2
    plan.catalog = cat = GroundEffectCatalog.from_dbc_bytes(tex2, dood2, build)
    old_client = target in ("1.12", "2.4.3")
    for r in rules.rules:
        if r.kind != "assign":
            continue
        eid = plan.set_ids[r.set] if r.set is not None else r.effect
        plan.effect_of[r.order] = eid
        if eid in NO_EFFECT_IDS or cat.row(eid) is not None:
            continue
        if old_client:
            _fail(rules, r.line, f"[[assign]] {r.name!r} key 'effect'",
                  f"effect {eid} has no row in the {target} client's GroundEffectTexture: that client cannot "
                  "load it (declare a [[set]] instead)")
        if not r.allow_missing:
            near = sorted(cat.ids.tolist(), key=lambda i: abs(int(i) - eid))[:5]
            _fail(rules, r.line, f"[[assign]] {r.name!r} key 'effect'",
                  f"effect {eid} has no GroundEffectTexture row (nearest: {', '.join(map(str, sorted(near)))}); "
                  "declare a [[set]], or allow_missing = true")
    _resolve_areas(rules, plan, data)
    _resolve_masks(rules, plan, mt)
    return plan


def _set_matches(cat, r: int, models: list, weights, density: int, sound: int) -> bool:
    have = [cat.models[m].lower() if m >= 0 else None for m in cat.slot_model[r].tolist()]
    want = [m.lower() for m in models] + [None] * (4 - len(models))
    if have != want or int(cat.density[r]) != density or int(cat.sound[r]) != sound:
        return False
    if cat.has_weights:
        return cat.slot_weight[r].tolist()[:len(models)] == list(weights)
    return True


def _resolve_sets(rules: RuleSet, plan: Plan, data, tex: bytes, dood: bytes) -> tuple[bytes, bytes]:
    """Each [[set]]'s effect id: its own ``id`` (added when the table lacks it; an error when that
    row is another set), else an identical row's, else a new row after the highest id. Applying
    again finds the rows the first apply added, so the ids stay the same."""
    from wowgrass.edit.effect_sets import BAG, add_effect_set
    from wowgrass.game.effects import GroundEffectCatalog

    if not rules.sets:
        return tex, dood
    wotlk = plan.build == "3.3.5"
    for s in rules.sets:
        what = f"[[set]] {s.name!r}"
        if s.weights is not None and not wotlk:
            _fail(rules, s.line, f"{what} key 'weights'", f"the {plan.target} client's GroundEffectTexture has no "
                  "weights (they exist from 3.0.1): drop them")
        cat = GroundEffectCatalog.from_dbc_bytes(tex, dood, plan.build)
        known = {m.lower() for m in cat.models}
        for m in s.doodads:
            if m.lower() not in known and not data.exists(m):
                _fail(rules, s.line, f"{what} key 'doodads'", f"{m} is neither a GroundEffectDoodad row nor a model "
                      "in the data (ship the model, or name one the tables have)")
        n = len(s.doodads)
        weights = s.weights if s.weights is not None else (
            [BAG // n + (1 if k < BAG % n else 0) for k in range(n)] if wotlk else None)
        if s.id is not None:
            r = int(cat.lookup(np.array([s.id], np.int64))[0])
            if r >= 0:
                if not _set_matches(cat, r, s.doodads, weights, s.density, s.sound):
                    row = cat.row(s.id)
                    _fail(rules, s.line, f"{what} key 'id'", f"id {s.id} is taken by another GroundEffectTexture row "
                          f"({', '.join(m.rsplit(chr(92), 1)[-1] for m in row['models'] if m) or 'no doodads'}, "
                          f"density {row['density']}): choose a free id, or leave id out")
                plan.set_ids[s.name] = s.id
                plan.set_reports.append({"name": s.name, "id": s.id, "new": False, "line": s.line})
                continue
        else:
            hit = [r for r in range(len(cat.ids)) if _set_matches(cat, r, s.doodads, weights, s.density, s.sound)] \
                if len(cat.ids) < 200_000 else []
            if hit:
                plan.set_ids[s.name] = int(cat.ids[hit[0]])
                plan.set_reports.append({"name": s.name, "id": int(cat.ids[hit[0]]), "new": False, "line": s.line})
                continue
        tex, dood, new_id = add_effect_set(tex, dood, plan.build, doodads=s.doodads, weights=weights,
                                           density=s.density, sound=s.sound, id=s.id)
        plan.set_ids[s.name] = new_id
        plan.set_reports.append({"name": s.name, "id": new_id, "new": True, "line": s.line})
    return tex, dood


def area_table(data) -> tuple[np.ndarray, np.ndarray, list[str]] | None:
    """(ids, parent ids, names) of the data's AreaTable, None without one."""
    from wowgrass.formats.dbc import read_table

    if not data.exists(AREA_TABLE):
        return None
    raw = data.read(AREA_TABLE)
    dbc, det = read_table(raw, AREA_TABLE, table="AreaTable", build=None, hint=getattr(data, "build", None))
    if det.schema is None:
        return None
    rec = dbc.records
    names = dbc.strings(rec["AreaName_lang"][:, 0] if rec["AreaName_lang"].ndim > 1 else rec["AreaName_lang"])
    return rec["ID"].astype(np.int64), rec["ParentAreaID"].astype(np.int64), list(names)


def _resolve_areas(rules: RuleSet, plan: Plan, data) -> None:
    """Area names -> AreaTable ids, each with the areas inside it (a zone's subzones)."""
    table = None
    for r in rules.rules:
        if r.areas is None:
            continue
        ids = {int(a) for a in r.areas if isinstance(a, int)}
        names = [a for a in r.areas if isinstance(a, str)]
        if table is None:
            try:
                table = area_table(data) or (np.zeros(0, np.int64), np.zeros(0, np.int64), [])
            except WowgrassError as exc:
                _fail(rules, r.line, f"[[{r.kind}]] {r.name!r} key 'areas'", f"AreaTable cannot be read ({exc})")
        aid, parent, anames = table
        lower = [n.lower() for n in anames]
        for n in names:
            hit = [int(aid[k]) for k, x in enumerate(lower) if x == n.strip().lower()]
            if not hit:
                import difflib

                near = difflib.get_close_matches(n.lower(), lower, 3, 0.6)
                _fail(rules, r.line, f"[[{r.kind}]] {r.name!r} key 'areas'",
                      f"no area named {n!r} in AreaTable" + (f" (closest: {', '.join(anames[lower.index(x)] for x in near)})"
                                                           if near else "" if len(aid) else " (the data has no AreaTable)"))
            ids.update(hit)
        if len(aid):                      # the areas inside those (subzones), to any depth
            parent_of = dict(zip(aid.tolist(), parent.tolist()))
            grew = True
            while grew:
                more = {a for a, p in parent_of.items() if p in ids and a not in ids}
                grew = bool(more)
                ids |= more
        plan.area_ids[r.order] = np.array(sorted(ids), np.int64)


def _resolve_masks(rules: RuleSet, plan: Plan, mt) -> None:
    from wowgrass.edit.masks import read_mask_picture

    for r in rules.rules:
        if r.mask is None:
            continue
        box = [(c, w) for (c0, c1), (r0, r1) in r.tiles for c in range(c0, c1 + 1) for w in range(r0, r1 + 1)]
        if not r.mask.is_file():
            _fail(rules, r.line, f"[[{r.kind}]] {r.name!r} key 'mask'", f"{r.mask}: no such picture")
        try:
            grids = read_mask_picture(r.mask, box)
        except UsageError as exc:
            _fail(rules, r.line, f"[[{r.kind}]] {r.name!r} key 'mask'", str(exc).replace("--mask ", ""))
        plan.masks[r.order] = {t: g for t, g in grids.items() if t in set(mt.tiles)}


# ----------------------------------------------------------------------------- one tile

@dataclass
class Decision:
    """What the rules want of one tile, and which rule decided each thing."""

    effect: np.ndarray               # (256, 4) i8: effect id per layer
    effect_rule: np.ndarray          # (256, 4) i4: the rule (order) deciding it, -1 none
    mapping: np.ndarray              # (256, 8, 8) u1
    no_effect: np.ndarray            # (256, 8, 8) bool
    exclude_rule: np.ndarray         # (256, 8, 8) i4: the first exclude rule selecting the cell, -1 none
    include_rule: np.ndarray         # (256, 8, 8) i4: the first include rule selecting the cell, -1 none
    shares: np.ndarray               # (256, 4, 8, 8) visible shares
    conflicts: list = field(default_factory=list)   # [(winner order, loser order, "layers"|"cells", n, why)]
    selected: dict = field(default_factory=dict)    # exclude/include rule order -> (256, 8, 8) bool


def cell_heights(t) -> np.ndarray:
    """(256, 8, 8) absolute height of each cell: the mean of its four corners and its centre."""
    h = t.abs_heights
    r = np.arange(8)[:, None]
    c = np.arange(8)[None, :]
    tl = r * 17 + c
    return (h[:, tl] + h[:, tl + 1] + h[:, tl + 17] + h[:, tl + 18] + h[:, tl + 9]) / 5.0


class _Terrain:
    """Per-tile measures the filters share, computed once and only when a rule asks."""

    def __init__(self, t):
        self.t = t
        self._h = self._s = None

    @property
    def heights(self):
        if self._h is None:
            self._h = cell_heights(self.t)
        return self._h

    @property
    def slopes(self):
        if self._s is None:
            from wowgrass.edit.masks import cell_slopes

            self._s = cell_slopes(self.t)
        return self._s


def _cell_filter(r: Rule, plan: Plan, t, cr, terrain: _Terrain) -> np.ndarray | None:
    """(256, 8, 8) bool of the cells the rule's filters keep (None: every cell)."""
    keep = None

    def both(a, b):
        return b if a is None else a & b

    if r.order in plan.area_ids:
        keep = both(keep, np.broadcast_to(np.isin(t.area_id.astype(np.int64), plan.area_ids[r.order])[:, None, None],
                                          (256, 8, 8)))
    if r.height is not None:
        h = terrain.heights
        keep = both(keep, (h >= r.height[0]) & (h <= r.height[1]))
    if r.slope is not None:
        s = terrain.slopes
        keep = both(keep, (s >= r.slope[0]) & (s <= r.slope[1]))
    return keep


def _mask_cells(r: Rule, plan: Plan, t, cr) -> np.ndarray:
    from wowgrass.edit.masks import grid_to_chunks

    grid = plan.masks.get(r.order, {}).get(tuple(cr))
    if grid is None:
        return np.zeros((256, 8, 8), bool)
    return np.asarray(grid_to_chunks(t, grid), bool)


def _criterion(r: Rule, plan: Plan, t, cr, terrain, data, context) -> np.ndarray:
    """(256, 8, 8) bool: the cells an exclude/include rule's criterion selects (a painted mask as
    painted; every other kind is :func:`wowgrass.edit.footprints.footprint`, grown by the margin)."""
    from wowgrass.edit.footprints import footprint

    if r.mask is not None:
        return _mask_cells(r, plan, t, cr)
    if r.under is not None:
        placed = {"buildings": t.modf, "models": t.mddf}.get(r.under)
        if placed is not None and not len(placed):
            # no placement, no footprint (footprints.cover_grid cannot reshape an empty list yet)
            return np.zeros((256, 8, 8), bool)
        cells = footprint(r.under, t, data=data, margin=r.margin, context=context)
    elif r.slope_above is not None:     # footprint("slope") itself, on the slopes the filters share
        from wowgrass.edit.footprints import grow_cells

        cells = grow_cells(t, terrain.slopes > r.slope_above, r.margin)
    else:
        cells = footprint("texture", t, data=data, margin=r.margin, context=context, patterns=list(r.textures),
                          share=r.share)
    return np.asarray(cells, bool)


def _why_later(winner: Rule, loser: Rule) -> str:
    return f"later in the file (line {winner.line} after line {loser.line})"


def evaluate(t, cr, plan: Plan, *, data=None, context=None, shares=None) -> Decision:
    """The fields the rules want for tile ``cr`` (read as ``t``), and which rule decided each."""
    cr = tuple(cr)
    n = t.n_layers.astype(np.int64)
    exists = np.arange(4)[None, :] < n[:, None]
    shares = visible_shares(t) if shares is None else shares
    terrain = _Terrain(t)
    old = t.layer_effect.astype(np.int64)
    eff = old.copy()
    who = np.full((256, 4), -1, np.int32)
    conflicts = []
    rules = [r for r in plan.rules.rules if r.in_tiles(cr)]
    assigns = [r for r in rules if r.kind == "assign"]
    always_orders = [a.order for a in assigns if a.mode == "always"]
    for mode in ("always", "only_unassigned"):
        for r in (a for a in assigns if a.mode == mode):
            idx = sorted({i for p in r.textures for i in match_textures(t.textures, p)})
            if not idx:
                continue
            sel = exists & np.isin(t.layer_texture, idx)
            if mode == "only_unassigned":
                sel &= np.isin(old, NO_EFFECT_IDS)
            keep = _cell_filter(r, plan, t, cr, terrain)
            if r.mask is not None:
                painted = _mask_cells(r, plan, t, cr)
                keep = painted if keep is None else keep & painted
            if keep is not None:
                # a layer is a chunk's: the chunk counts when at least half its cells pass
                sel &= (keep.reshape(256, 64).mean(axis=1) >= 0.5)[:, None]
            if not sel.any():
                continue
            eid = plan.effect_of[r.order]
            if mode == "only_unassigned":      # layers an always rule decided are not this rule's
                hard = sel & np.isin(who, always_orders)
                _note_conflicts(conflicts, plan, who, eff, hard, eid, r, loser_is_new=True,
                                why="only_unassigned yields to a rule that always assigns")
                sel &= ~hard
            _note_conflicts(conflicts, plan, who, eff, sel & (who >= 0), eid, r, loser_is_new=False)
            eff[sel] = eid
            who[sel] = r.order
    # doodadMapping: the layer that shows most, where the named one is stale
    mode = plan.rules.mapping_mode
    if mode == "keep":
        mapping = t.doodad_mapping.copy()
    else:
        best = best_layers(t, shares)
        if mode == "best":
            stale = (n > 0)[:, None, None] & (best != t.doodad_mapping)
        else:
            stale = stale_cells(t, plan.rules.mapping_margin, shares) & (best != t.doodad_mapping)
        mapping = np.where(stale, best, t.doodad_mapping).astype(np.uint8)
    # noEffectDoodad: excluded where any exclude rule holds, cleared where an include rule holds
    ex_rule = np.full((256, 8, 8), -1, np.int32)
    in_rule = np.full((256, 8, 8), -1, np.int32)
    selected = {}
    for r in rules:
        if r.kind == "assign":
            continue
        cells = _criterion(r, plan, t, cr, terrain, data, context)
        keep = _cell_filter(r, plan, t, cr, terrain)
        if keep is not None:
            cells = cells & keep
        selected[r.order] = cells
        target = ex_rule if r.kind == "exclude" else in_rule
        target[(target < 0) & cells] = r.order
    both = (ex_rule >= 0) & (in_rule >= 0)
    if both.any():
        pairs, counts = np.unique(np.stack([ex_rule[both], in_rule[both]]), axis=1, return_counts=True)
        for (w, lo), k in zip(pairs.T.tolist(), counts.tolist()):
            conflicts.append((w, lo, "cells", int(k), "an include rule clears only where no exclude rule holds"))
    no_effect = np.where(ex_rule >= 0, True, np.where(in_rule >= 0, False, t.no_effect_doodad))
    return Decision(eff, who, mapping, no_effect, ex_rule, in_rule, shares, conflicts, selected)


def _note_conflicts(conflicts, plan, who, eff, prior, eid, r, *, loser_is_new, why=None):
    """Record layers where rule ``r`` and the rule already deciding them want different ids."""
    differ = prior & (eff != eid)
    if not differ.any():
        return
    olds, counts = np.unique(who[differ], return_counts=True)
    for o, k in zip(olds.tolist(), counts.tolist()):
        other = plan.rule(o)
        if loser_is_new:
            conflicts.append((o, r.order, "layers", int(k), why))
        else:
            conflicts.append((r.order, o, "layers", int(k), why or _why_later(r, other)))


def governing(t, tile, plan: Plan, decision: Decision | None = None) -> np.ndarray:
    """(256, 8, 8) int32: the rule (its order in ``plan.rules.rules``) that governs each cell: the
    exclude rule that excludes it, else the assign rule that decided the effect id of the layer its
    doodadMapping names, else the include rule that clears it; -1 where no rule does."""
    d = decision if decision is not None else evaluate(t, tile, plan)
    k = np.minimum(d.mapping, 3).astype(np.int64)[:, None]
    by_layer = np.take_along_axis(np.broadcast_to(d.effect_rule[:, :, None, None], (256, 4, 8, 8)), k, axis=1)[:, 0]
    has = (d.mapping < t.n_layers[:, None, None])
    out = np.where(has, by_layer, -1).astype(np.int32)
    out = np.where((out < 0) & (d.include_rule >= 0), d.include_rule, out)
    return np.where(d.exclude_rule >= 0, d.exclude_rule, out).astype(np.int32)


# ----------------------------------------------------------------------------- apply to one tile

@dataclass
class TileApply:
    """What applying the rules did to one tile."""

    path: str
    tile: tuple
    bytes_changed: int = 0
    fields: dict = field(default_factory=dict)
    per_rule: dict = field(default_factory=dict)     # rule order -> {"layers": n, "cells": n}
    mapping_cells: int = 0
    conflicts: list = field(default_factory=list)
    error: str | None = None
    governing: np.ndarray | None = field(default=None, repr=False)   # (128, 128) i2 north up, when asked

    @property
    def changed(self) -> bool:
        return self.bytes_changed > 0

    def fired(self) -> list[int]:
        """The rules that changed something here, in file order."""
        return sorted(o for o, v in self.per_rule.items() if v.get("layers") or v.get("cells"))


def read_fields(raw: bytes, t) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ground-effect fields of ``raw`` at the offsets of ``t`` (``raw`` laid out as ``t`` was
    read, as after :func:`~wowgrass.edit.adt_edit.patch_fields`, which changes no other byte), decoded
    as the reader decodes them: (effect ids (256, 4) i8, -1 where no layer; doodadMapping; bits)."""
    from wowgrass.formats.adt import unpack_doodad_mapping

    arr = np.frombuffer(raw, np.uint8)
    ofs = t.field_offsets()
    e = ofs["effect_id"]
    eff = np.full((256, 4), -1, np.int64)
    at = e[e >= 0]
    eff[e >= 0] = arr[at[:, None] + np.arange(4)].copy().view("<u4").ravel()
    mapping = unpack_doodad_mapping(arr[ofs["doodad_mapping"][:, None] + np.arange(16)].copy(),
                                    t.doodad_map_msb_first).astype(np.uint8)
    bits = np.unpackbits(arr[ofs["no_effect_doodad"][:, None] + np.arange(8)], axis=-1, bitorder="little")
    return eff, mapping, bits.reshape(256, 8, 8).astype(bool)


def decide_bytes(raw: bytes, t, d: Decision) -> tuple[bytes, dict]:
    """The tile's bytes with the decided fields written over the old ones (only those bytes)."""
    return patch_fields(raw, t, effect=d.effect, doodad_mapping=d.mapping, no_effect=d.no_effect)


def apply_tile(raw: bytes, gp: str, cr, plan: Plan, *, data=None, context=None, tile=None,
               picture: bool = False) -> tuple[bytes, TileApply]:
    """The rules applied to one tile's bytes: (new bytes, what changed and which rule did it);
    ``picture``: the report also holds the rule governing each cell (:func:`governing`), north up."""
    t = tile if tile is not None else read_tile(raw, gp, big_alpha=plan.big_alpha, msb_first=plan.msb_first)
    d = evaluate(t, cr, plan, data=data, context=context)
    new, counts = decide_bytes(raw, t, d)
    rep = TileApply(gp, tuple(cr), conflicts=d.conflicts)
    if picture:
        from wowgrass.game.tiles import tile_grid

        rep.governing = tile_grid(t, governing(t, cr, plan, d).astype(np.int16))
    if new == raw:
        return raw, rep
    exists = np.arange(4)[None, :] < t.n_layers[:, None]
    eff, mapping, no_effect = read_fields(new, t)
    if not (np.array_equal(eff[exists], d.effect[exists]) and np.array_equal(mapping, d.mapping)
            and np.array_equal(no_effect, d.no_effect)):
        raise AssertionError(f"{gp}: the tile does not read back what the rules wrote")
    rep.bytes_changed = int(sum(counts.values()))
    rep.fields = {k: v for k, v in counts.items() if v}
    changed_layer = exists & (d.effect != t.layer_effect.astype(np.int64))
    mapped = np.take_along_axis(np.broadcast_to(changed_layer[:, :, None, None], (256, 4, 8, 8)),
                                np.minimum(d.mapping, 3).astype(np.int64)[:, None], axis=1)[:, 0]
    mapped_rule = np.take_along_axis(np.broadcast_to(d.effect_rule[:, :, None, None], (256, 4, 8, 8)),
                                     np.minimum(d.mapping, 3).astype(np.int64)[:, None], axis=1)[:, 0]
    for o in np.unique(d.effect_rule[changed_layer]).tolist():
        rep.per_rule[o] = {"layers": int((changed_layer & (d.effect_rule == o)).sum()),
                           "cells": int((mapped & (mapped_rule == o)).sum())}
    set_now = d.no_effect & ~t.no_effect_doodad
    cleared = ~d.no_effect & t.no_effect_doodad
    for sel, by in ((set_now, d.exclude_rule), (cleared, d.include_rule)):
        for o in np.unique(by[sel]).tolist():
            rep.per_rule.setdefault(o, {"layers": 0, "cells": 0})["cells"] += int((sel & (by == o)).sum())
    rep.mapping_cells = int((d.mapping != t.doodad_mapping).sum())
    return new, rep


__all__ = ["AREA_TABLE", "Decision", "Plan", "TileApply", "apply_tile", "area_table", "cell_heights", "decide_bytes",
           "evaluate", "governing", "prepare", "read_fields"]
