"""Why a cell is as it is under the rules, which rule governs each cell, drift from the rules,
adding a painted rule, and a starting rules file learned from a map (``effects why``,
``effects audit --rules``, ``effects rules --init``; the workbench's pick panel and overlay).

```python
explain_cell(data, plan, tile, chunk, cell, *, raw=None) -> dict      # JSON-ready (effects why --json)
cell_at(t, x, y) -> (mcnk index, (col, row)) | None
governing(t, tile, plan, decision=None) -> (256, 8, 8) i4              # rule order governing each cell, -1 none
drift(t, tile, plan) -> Drift                                         # cells where the tile disagrees with its rules
append_mask_rule(rules_path, kind, grids, name=..., reason=...) -> Path   # a painted exclude/include, kept
learn_rules(data, map_name, scan=None, out=PATH) -> str               # a starting rules file (TOML text)
```
"""

from __future__ import annotations

import dataclasses
from collections import Counter, OrderedDict, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from wowgrass.edit.adt_edit import read_tile
from wowgrass.edit.rules import NO_EFFECT_IDS
from wowgrass.edit.rules_engine import Decision, Plan, area_table, cell_heights, evaluate, governing
from wowgrass.errors import UsageError, WowgrassError


# ----------------------------------------------------------------------------- the rules' map

NO_RULE_RGB = (200, 200, 200)
ABSENT_RGB = (245, 245, 245)


def rule_colour(order: int) -> tuple[int, int, int]:
    """A colour per rule, the same for a rule's place in the file every time (hues a golden angle
    apart; exclude and include rules darker, so cells without grass read as such)."""
    import colorsys

    h = (order * 0.618034) % 1.0
    r, g, b = colorsys.hsv_to_rgb(h, 0.65, 0.9)
    return int(r * 255), int(g * 255), int(b * 255)


def rules_picture(plan: Plan, grids: dict, scale: int | None = None) -> tuple[np.ndarray, list[dict]]:
    """(rgb, legend) of the rule governing each cell (:func:`~wowgrass.edit.rules_engine.governing`):
    ``grids`` {(col, row): (128, 128) rule order, north up} (``TileApply.governing``), one colour a
    rule (:func:`rule_colour`), exclude/include rules hatched darker, no rule grey; the legend as
    ``game.tiles.legend_strip`` takes it, with each rule's cell count."""
    tiles = list(grids)
    cs, rs = [c for c, _ in tiles], [r for _, r in tiles]
    c0, r0, nc, nr = min(cs), min(rs), max(cs) - min(cs) + 1, max(rs) - min(rs) + 1
    if scale is None:
        scale = int(np.clip(1024 // (128 * nc), 1, 8))
    order = np.full((nr * 128, nc * 128), -2, np.int32)
    for (c, r), g in grids.items():
        order[(r - r0) * 128:(r - r0 + 1) * 128, (c - c0) * 128:(c - c0 + 1) * 128] = g
    n = len(plan.rules.rules)
    palette = np.array([rule_colour(k) for k in range(n)] + [NO_RULE_RGB, ABSENT_RGB], np.uint8)
    idx = np.where(order >= 0, order, np.where(order == -1, n, n + 1))
    rgb = palette[idx]
    bare = np.isin(order, [r.order for r in plan.rules.rules if r.kind == "exclude"])
    yy, xx = np.mgrid[0:order.shape[0], 0:order.shape[1]]
    rgb[bare & ((xx + yy) % 4 == 0)] = (40, 40, 40)            # excluded: hatched
    if scale > 1:
        rgb = rgb.repeat(scale, 0).repeat(scale, 1)
    if (nc > 1 or nr > 1) and scale >= 4:
        step = 128 * scale
        rgb[:, np.arange(step, rgb.shape[1], step)] = (255, 255, 255)
        rgb[np.arange(step, rgb.shape[0], step)] = (255, 255, 255)
    counts = np.bincount(idx.ravel(), minlength=n + 2)
    legend = []
    for r in plan.rules.rules:
        if counts[r.order]:
            what = {"assign": f"effect {plan.effect_of.get(r.order)}", "exclude": "no grass (hatched)",
                    "include": "noEffectDoodad cleared"}[r.kind]
            legend.append({"label": f"{r.kind} {r.name!r} (line {r.line}): {what} ({counts[r.order]:,} cells)",
                           "rgb": "#%02x%02x%02x" % rule_colour(r.order), "count": int(counts[r.order]),
                           "unit": "cells", "rule": r.name})
    if counts[n]:
        legend.append({"label": f"no rule ({counts[n]:,} cells)", "rgb": "#%02x%02x%02x" % NO_RULE_RGB,
                       "count": int(counts[n]), "unit": "cells"})
    return rgb, legend


def write_rules_picture(plan: Plan, grids: dict, path, scale: int | None = None):
    """:func:`rules_picture` with each tile labelled and the legend below, written atomically."""
    from wowgrass.fileio import write_image
    from wowgrass.game.tiles import label_tiles, legend_strip

    rgb, legend = rules_picture(plan, grids, scale)
    tiles = list(grids)
    c0, r0 = min(c for c, _ in tiles), min(r for _, r in tiles)
    tile_px = rgb.shape[1] // (max(c for c, _ in tiles) - c0 + 1)
    rgb = label_tiles(rgb, tiles, (c0, r0), tile_px)
    title = f"{plan.map}: the rule governing each cell ({plan.rules.path.name}, {len(tiles)} tile(s))"
    return write_image(path, legend_strip(rgb, legend, title))


# ----------------------------------------------------------------------------- drift

@dataclass
class Drift:
    """Where a tile on disk disagrees with its rules (what an apply would change)."""

    tile: tuple
    effect_layers: int = 0                   # MCLY effect ids the rules would change
    effect_cells: int = 0                    # cells whose doodadMapping layer is one of those
    mapping_cells: int = 0
    exclude_cells: int = 0                   # noEffectDoodad bits the rules would set
    include_cells: int = 0                   # ... and clear
    cells: np.ndarray | None = field(default=None, repr=False)   # (256, 8, 8) bool: any of those

    @property
    def cell_count(self) -> int:
        return int(self.cells.sum()) if self.cells is not None else 0

    @property
    def drifted(self) -> bool:
        return bool(self.effect_layers or self.mapping_cells or self.exclude_cells or self.include_cells)

    def to_json(self) -> dict:
        return {"tile": list(self.tile), "cell_count": self.cell_count, "effect_layer_count": self.effect_layers,
                "effect_cell_count": self.effect_cells, "mapping_cell_count": self.mapping_cells,
                "exclude_cell_count": self.exclude_cells, "include_cell_count": self.include_cells}


def drift(t, tile, plan: Plan, *, data=None, decision: Decision | None = None) -> Drift:
    """Cells of tile ``t`` that disagree with ``plan``'s rules: an effect id, a doodadMapping or a
    noEffectDoodad bit an apply would change."""
    d = decision if decision is not None else evaluate(t, tile, plan, data=data)
    exists = np.arange(4)[None, :] < t.n_layers[:, None]
    bad_layer = exists & (d.effect != t.layer_effect.astype(np.int64))
    k = np.minimum(d.mapping, 3).astype(np.int64)[:, None]
    eff_cells = np.take_along_axis(np.broadcast_to(bad_layer[:, :, None, None], (256, 4, 8, 8)), k, axis=1)[:, 0]
    eff_cells &= d.mapping < t.n_layers[:, None, None]
    mapping = d.mapping != t.doodad_mapping
    excl = d.no_effect & ~t.no_effect_doodad
    incl = ~d.no_effect & t.no_effect_doodad
    return Drift(tuple(tile), int(bad_layer.sum()), int(eff_cells.sum()), int(mapping.sum()), int(excl.sum()),
                 int(incl.sum()), eff_cells | mapping | excl | incl)


def drift_map(data, plan: Plan, *, progress=None) -> list[Drift]:
    """:func:`drift` of every tile in the plan."""
    from wowgrass.game.maps import adt_game_path

    out = []
    for k, (c, r) in enumerate(plan.tiles):
        gp = adt_game_path(plan.map, c, r)
        t = read_tile(data.read(gp), gp, big_alpha=plan.big_alpha, msb_first=plan.msb_first)
        out.append(drift(t, (c, r), plan, data=data))
        if progress:
            progress(k + 1, len(plan.tiles), f"{c},{r}")
    return out


# ----------------------------------------------------------------------------- one cell

def cell_at(t, x: float, y: float):
    """(MCNK index, (column, row) of the cell) under world (x, y), None off the tile."""
    from wowgrass.formats.adt import UNIT_SIZE

    idx = int(t.chunk_index_at(x, y))
    if idx < 0:
        return None
    pos = t.positions[idx]
    r = int(np.clip(np.floor((pos[0] - x) / UNIT_SIZE), 0, 7))
    c = int(np.clip(np.floor((pos[1] - y) / UNIT_SIZE), 0, 7))
    return idx, (c, r)


def tile_at(x: float, y: float) -> tuple[int, int]:
    """(column, row) of the tile under world (x, y)."""
    from wowgrass.formats.adt import TILE_SIZE, ZEROPOINT

    return int(np.floor((ZEROPOINT - y) / TILE_SIZE)), int(np.floor((ZEROPOINT - x) / TILE_SIZE))


_AREAS: dict = {}


def _area_name(data, area_id: int) -> str | None:
    key = id(data)
    if key not in _AREAS:
        try:
            table = area_table(data)
        except WowgrassError:
            table = None
        _AREAS.clear()
        _AREAS[key] = dict(zip(table[0].tolist(), table[2])) if table else {}
    return _AREAS[key].get(int(area_id))


#: per-tile work a pick repeats for every cell of a resident tile: (tile, plan, fingerprint) ->
#: (decision, rule per cell, heights, slopes); a few tiles kept, the tile and plan held so that
#: their ids are not reused
_RESIDENT: OrderedDict = OrderedDict()
_PER_DATA: dict = {}


def _fingerprint(t) -> int:
    return hash((t.n_layers.tobytes(), t.layer_texture.tobytes(), t.layer_effect.tobytes(),
                 t.doodad_mapping.tobytes(), t.no_effect_doodad.tobytes()))


def _per_data(data):
    """(FootprintContext, ModelTable) kept for the last data source asked about."""
    hit = _PER_DATA.get("data")
    if hit is None or hit[0] is not data:
        from wowgrass.edit.footprints import FootprintContext
        from wowgrass.grass.bake import ModelTable

        _PER_DATA["data"] = hit = (data, FootprintContext(data), ModelTable(data.read))
    return hit[1], hit[2]


def _resident(data, plan: Plan, t, tile):
    from wowgrass.edit.masks import cell_slopes

    key = (id(t), id(plan), _fingerprint(t))
    hit = _RESIDENT.get(key)
    if hit is not None and hit[0] is t and hit[1] is plan:
        _RESIDENT.move_to_end(key)
        return hit[2:]
    context, _models = _per_data(data)
    d = evaluate(t, tile, plan, data=data, context=context)
    entry = (t, plan, d, governing(t, tile, plan, d), cell_heights(t), cell_slopes(t))
    _RESIDENT[key] = entry
    while len(_RESIDENT) > 4:
        _RESIDENT.popitem(last=False)
    return entry[2:]


def _scatter(data, plan: Plan, t, d: Decision, idx: int, cell: int, placement: str) -> dict:
    """What the client scatters in one cell of the tile as the rules leave it."""
    from wowgrass.grass.bake import client_draw_capacity
    from wowgrass.grass.placement import make_strategy

    keep = np.zeros(256, bool)
    keep[idx] = True
    after = dataclasses.replace(t, n_layers=np.where(keep, t.n_layers, 0).astype(t.n_layers.dtype),
                                layer_effect=d.effect.astype(t.layer_effect.dtype), doodad_mapping=d.mapping,
                                no_effect_doodad=d.no_effect)
    strategy = make_strategy(placement)
    inst = strategy.place(after, plan.catalog, map_name=plan.map)
    try:
        inst = client_draw_capacity(inst, plan.catalog, strategy, _per_data(data)[1])[0]
    except WowgrassError:
        pass
    sel = np.flatnonzero((inst.chunk == idx) & (inst.cell == cell))
    models = Counter(inst.models[int(inst.model[i])].rsplit("\\", 1)[-1] for i in sel.tolist())
    return {"placement": placement, "count": int(sel.size), "by_model": dict(sorted(models.items()))}


def explain_cell(data, plan: Plan, tile, chunk_index: int, cell, *, raw: bytes | None = None, t=None,
                 placement: str = "client") -> dict:
    """Everything that decides one cell under the rules, JSON-ready: its layers (texture, effect id
    now and as the rules want it, the share of the cell each shows, the rule that decided it), the
    doodadMapping, the noEffectDoodad bit and the rules that set or cleared it, the effect set the
    cell takes and what the client scatters there (as the rules leave the tile), and ``verdict``,
    a sentence. ``cell`` is (column, row) inside the chunk. The tile's decision is kept for the
    next cells of the same tile (a pick panel asks cell after cell)."""
    from wowgrass.game.maps import adt_game_path

    tile = tuple(int(v) for v in tile)
    gp = adt_game_path(plan.map, *tile)
    if t is None:
        raw = data.read(gp) if raw is None else raw
        t = read_tile(raw, gp, big_alpha=plan.big_alpha, msb_first=plan.msb_first)
    idx = int(chunk_index)
    c, r = (int(v) for v in cell)
    if not (0 <= idx < 256 and 0 <= c < 8 and 0 <= r < 8):
        raise UsageError("a chunk is 0..255 and a cell 0..7, 0..7")
    d, gov_cells, heights, slopes = _resident(data, plan, t, tile)
    n = int(t.n_layers[idx])
    rule = plan.rule
    layers = []
    for k in range(n):
        tex = t.textures[int(t.layer_texture[idx, k])] if 0 <= int(t.layer_texture[idx, k]) < len(t.textures) else None
        o = int(d.effect_rule[idx, k])
        layers.append({"index": k, "texture": tex, "effect_id": int(t.layer_effect[idx, k]),
                       "effect_id_after": int(d.effect[idx, k]), "share": round(float(d.shares[idx, k, r, c]), 4),
                       "rule": rule(o).label if o >= 0 else None})
    ex, inc = int(d.exclude_rule[idx, r, c]), int(d.include_rule[idx, r, c])
    also = [rule(o).label for o, m in d.selected.items() if m[idx, r, c] and o not in (ex, inc)]
    dm_now, dm = int(t.doodad_mapping[idx, r, c]), int(d.mapping[idx, r, c])
    hole = bool(t.hole_cells()[idx, r, c])
    eid = int(d.effect[idx, dm]) if dm < n else None
    row = plan.catalog.row(eid) if eid is not None and eid not in NO_EFFECT_IDS else None
    effect = None if eid is None else {
        "id": eid, "has_row": row is not None,
        "models": [m for m in (row["models"] if row else []) if m],
        "weights": row["weights"] if row else None, "density": row["density"] if row else None,
        "set": next((s for s, i in plan.set_ids.items() if i == eid), None)}
    x, y = (float(v) for v in t.cell_centres()[idx, r, c])
    scatter = _scatter(data, plan, t, d, idx, r * 8 + c, placement) if not hole else {
        "placement": placement, "count": 0, "by_model": {}}
    gov = int(gov_cells[idx, r, c])
    out = {"tile": list(tile), "chunk": [int(v) for v in t.index_xy[idx]], "mcnk_index": idx, "cell": [c, r],
           "centre": [round(x, 3), round(y, 3)], "area": {"id": int(t.area_id[idx]),
                                                          "name": _area_name(data, int(t.area_id[idx]))},
           "height": round(float(heights[idx, r, c]), 3),
           "slope": round(float(slopes[idx, r, c]), 2), "hole": hole, "layers": layers,
           "doodad_mapping": {"now": dm_now, "after": dm, "best": int(np.argmax(
               np.where(np.arange(4) < n, d.shares[idx, :, r, c], -1.0))) if n else 0},
           "no_effect_doodad": {"now": bool(t.no_effect_doodad[idx, r, c]), "after": bool(d.no_effect[idx, r, c]),
                                "excluded_by": rule(ex).label if ex >= 0 else None,
                                "excluded_because": (rule(ex).reason or rule(ex).criterion) if ex >= 0 else None,
                                "included_by": rule(inc).label if inc >= 0 else None,
                                "also_selected_by": also},
           "effect": effect, "scatter": scatter, "governed_by": rule(gov).label if gov >= 0 else None,
           "drift": bool(dm_now != dm or bool(t.no_effect_doodad[idx, r, c]) != bool(d.no_effect[idx, r, c])
                         or any(lay["effect_id"] != lay["effect_id_after"] for lay in layers))}
    out["verdict"] = _verdict(out)
    return out


def _verdict(e: dict) -> str:
    if e["hole"]:
        return "bare: a hole in the terrain"
    if not e["layers"]:
        return "bare: the chunk has no texture layer"
    ne = e["no_effect_doodad"]
    if ne["after"]:
        if ne["excluded_by"]:
            return f"bare: excluded by {ne['excluded_by']}: {ne['excluded_because']}"
        return "bare: noEffectDoodad is set (by hand: no rule set it)"
    eff = e["effect"]
    layer = e["layers"][e["doodad_mapping"]["after"]] if e["doodad_mapping"]["after"] < len(e["layers"]) else None
    if eff is None or layer is None:
        return "bare: doodadMapping names a layer the chunk lacks"
    who = f" (effect set by {layer['rule']})" if layer["rule"] else ""
    if eff["id"] in NO_EFFECT_IDS:
        return f"bare: {layer['texture']}, the layer shown, carries no effect id{who}"
    if not eff["has_row"]:
        return f"bare: effect {eff['id']} has no GroundEffectTexture row{who}"
    if not eff["models"]:
        return f"bare: effect {eff['id']} names no doodads (a terrain type only){who}"
    sc = e["scatter"]
    if sc["count"] == 0:
        return (f"grows nothing this time: effect {eff['id']} ({', '.join(m.rsplit(chr(92), 1)[-1] for m in eff['models'])})"
                f"{who}, but the client's scatter put none in this cell")
    return (f"grows {', '.join(f'{m} x{k}' for m, k in sc['by_model'].items())}: effect {eff['id']} of "
            f"{layer['texture']}{who}")


# ----------------------------------------------------------------------------- a painted rule, kept

def _png(grey: np.ndarray) -> bytes:
    """An 8-bit grey PNG of ``grey`` (the mask pictures' format)."""
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(grey, np.uint8), "L").save(buf, format="PNG")
    return buf.getvalue()


def _toml_str(s: str) -> str:
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'


def append_mask_rule(rules_path, kind: str, grids: dict, *, name: str, reason: str = "", folder: str = "masks") -> Path:
    """Keep painted cells as a rule: ``grids`` {(col, row): (128, 128) bool, north up as
    ``effects audit --cells-png``} becomes a picture under ``folder`` beside the rules file
    (the tiles' bounding box, one pixel a cell) and an ``[[exclude]]`` or ``[[include]]`` rule
    naming it is appended to the file (made when missing). The file is checked before and after;
    both files are written all or none. Returns the picture's path."""
    from wowgrass.edit.masks import CELLS, selection_box
    from wowgrass.edit.rules import load_rules, parse_rules
    from wowgrass.fileio import write_files_atomic

    if kind not in ("exclude", "include"):
        raise UsageError("a painted rule is an exclude or an include")
    if not grids:
        raise UsageError("nothing painted")
    rules_path = Path(rules_path)
    text = rules_path.read_text(encoding="utf-8") if rules_path.exists() else "version = 1\n"
    if rules_path.exists():
        load_rules(rules_path)
    c0, r0, nc, nr = selection_box(list(grids))
    pic = np.zeros((nr * CELLS, nc * CELLS), np.uint8)
    for (c, r), g in grids.items():
        pic[(r - r0) * CELLS:(r - r0 + 1) * CELLS, (c - c0) * CELLS:(c - c0 + 1) * CELLS] = np.where(g, 255, 0)
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in name.strip().lower()) or kind
    rel = f"{folder}/{safe}.png"
    k = 2
    while (rules_path.parent / rel).exists():
        rel = f"{folder}/{safe}-{k}.png"
        k += 1
    rng = f"{c0}:{c0 + nc - 1},{r0}:{r0 + nr - 1}"
    block = (f"\n[[{kind}]]\nname = {_toml_str(name)}\nmask = {_toml_str(rel)}\ntiles = [{_toml_str(rng)}]\n"
             + (f"reason = {_toml_str(reason)}\n" if reason else ""))
    new_text = text + ("" if text.endswith("\n") else "\n") + block
    parse_rules(new_text, rules_path)       # the file as it will be: still valid
    picture = rules_path.parent / rel
    write_files_atomic([(picture, _png(pic)),
                        (rules_path, new_text.encode("utf-8"))])
    return picture


# ----------------------------------------------------------------------------- learning a starting file

def learn_rules(data, map_name: str, *, scan=None, out=None, ranges=None, progress=None) -> tuple[str, list]:
    """A starting rules file (TOML text) for ``map_name`` and the mask pictures it refers to
    (``[(path relative to the file, (h, w) u1 grey)]``), from:

    * the map as it is now: for each texture, the effect id most of its layers carry (an
      ``always`` rule), then, where some of its layers carry other ids, rules for those areas
      (AreaTable) where one id holds, and for what is left, painted rules (a picture of the
      chunks, beside the file): applied to the map as it is, the file changes no effect id;
    * the client's own maps (``scan``, the table ``effects assign --suggest`` learns): textures
      whose layers carry no id anywhere on the map get the id the client gives them most often
      (``only_unassigned``);
    * the noEffectDoodad bits: a footprint kind (buildings, models, liquid, holes) whose cells are
      at least 90 % excluded now becomes an exclude rule, and the excluded cells none of those
      explains a painted exclude rule (their picture beside the file);
    * ``[mapping]``: ``stale`` (the audit's rule).

    Each rule has a comment saying where it came from."""
    from wowgrass.edit.batch import iter_tiles, load_map_tiles
    from wowgrass.edit.masks import CELLS, chunks_to_grid, selection_box

    mt = load_map_tiles(data, map_name, ranges)
    layer_ids: dict = defaultdict(Counter)             # texture key -> {effect: layers}
    by_area: dict = defaultdict(lambda: defaultdict(Counter))   # texture -> area -> {effect: layers}
    names: dict = {}
    chunk_ids: dict = defaultdict(dict)                 # texture -> {(tile, mcnk): effect}
    chunk_area: dict = {}
    tiles_read = []
    excl_total = 0
    for _gp, cr, _raw, t in iter_tiles(data, mt, progress=progress):
        tiles_read.append((cr, t.index_xy.copy()))
        exists = np.arange(4)[None, :] < t.n_layers[:, None]
        excl_total += int(t.no_effect_doodad.sum())
        for ci, k in zip(*np.nonzero(exists)):
            ti = int(t.layer_texture[ci, k])
            if not 0 <= ti < len(t.textures):
                continue
            key = t.textures[ti].replace("/", "\\").lower()
            names.setdefault(key, t.textures[ti])
            e = int(t.layer_effect[ci, k])
            if e in NO_EFFECT_IDS:
                continue
            layer_ids[key][e] += 1
            by_area[key][int(t.area_id[ci])][e] += 1
            chunk_ids[key][(cr, int(ci))] = e
            chunk_area[(cr, int(ci))] = int(t.area_id[ci])
    try:
        areas = area_table(data)
    except WowgrassError:
        areas = None
    area_names = dict(zip(areas[0].tolist(), areas[2])) if areas else {}
    lines = [f"# Ground-effect rules for {mt.name}, learned by `wowgrass effects rules --init` from",
             f"# {len(mt.tiles)} tile(s) as they are now" + (" and from the client's own maps" if scan else "") + ".",
             "# Later rules win over earlier ones; an exclude wins over an include. docs/rules.md says more.",
             "version = 1", f"map = {_toml_str(mt.name)}", "", "[mapping]",
             "# the layer that shows most, where the named one shows 0.25 of the cell less (the audit's rule)",
             'mode = "stale"', "margin = 0.25", ""]
    pictures = []
    c0, r0, nc, nr = selection_box(mt.tiles)
    box = f"{c0}:{c0 + nc - 1},{r0}:{r0 + nr - 1}"
    ixy = dict(tiles_read)
    for key in sorted(layer_ids, key=lambda k: names[k].lower()):
        ids = layer_ids[key]
        top, top_n = ids.most_common(1)[0]
        total = sum(ids.values())
        lines += ["[[assign]]", f"name = {_toml_str(_stem(names[key]))}",
                  f"# from the map: {top_n:,} of its {total:,} layers carry {top}",
                  f"textures = [{_toml_str(names[key])}]", f"effect = {top}", 'mode = "always"', ""]
        if len(ids) == 1:
            continue
        rest: dict = {}                                   # effect -> {tile: [mcnk]}: what the areas leave
        mixed = {a for a, ac in by_area[key].items() if len(ac) > 1}
        for area, ac in sorted(by_area[key].items()):
            e = next(iter(ac))
            if len(ac) == 1 and e != top:
                an = area_names.get(area)
                lines += ["[[assign]]", f"name = {_toml_str(_stem(names[key]) + f' in area {area}')}",
                          f"# from the map: all {ac[e]:,} layers of this texture in area {area}"
                          + (f" ({an})" if an else "") + f" carry {e}",
                          f"textures = [{_toml_str(names[key])}]", f"effect = {e}", f"areas = [{area}]",
                          'mode = "always"', ""]
        for (cr, ci), e in chunk_ids[key].items():
            if e != top and chunk_area[(cr, ci)] in mixed:
                rest.setdefault(e, {}).setdefault(cr, []).append(ci)
        # painted rules for what the areas left: chunks of areas with several ids
        for e, todo in rest.items():
            grid = np.zeros((nr * CELLS, nc * CELLS), np.uint8)
            n_chunks = 0
            for cr, cis in todo.items():
                per = np.zeros((256, 8, 8), bool)
                for ci in cis:
                    per[ci] = True
                n_chunks += len(cis)
                c, r = cr
                grid[(r - r0) * CELLS:(r - r0 + 1) * CELLS, (c - c0) * CELLS:(c - c0 + 1) * CELLS] = np.where(
                    chunks_to_grid(ixy[cr], per), 255, 0)
            safe = "".join(ch if ch.isalnum() else "-" for ch in _stem(names[key]).lower())
            rel = f"masks/learned-{safe}-{e}.png"
            pictures.append((rel, grid))
            lines += ["[[assign]]", f"name = {_toml_str(_stem(names[key]) + f' -> {e} (painted)')}",
                      f"# from the map: {n_chunks:,} chunks where this texture carries {e} (painted in {rel})",
                      f"textures = [{_toml_str(names[key])}]", f"effect = {e}", f"mask = {_toml_str(rel)}",
                      f"tiles = [{_toml_str(box)}]", 'mode = "always"', ""]
    if scan is not None:
        from wowgrass.game.effects import GroundEffectCatalog

        try:
            cat = GroundEffectCatalog.from_data(data)
        except WowgrassError:
            cat = None
        for key in sorted(set(names) - set(layer_ids), key=lambda k: names[k].lower()):
            ranked = [(e, n) for e, n in scan.suggest(names[key], n=50) if cat is None or cat.row(e) is not None]
            if not ranked:
                lines += [f"# {names[key]}: no effect id on this map, and none in the client's maps", ""]
                continue
            e, n = ranked[0]
            lines += ["[[assign]]", f"name = {_toml_str(_stem(names[key]) + ' (client)')}",
                      f"# from the client's maps: {n:,} of their layers of this texture carry {e}"
                      + (f" (then {', '.join(f'{x} ({k:,})' for x, k in ranked[1:4])})" if len(ranked) > 1 else ""),
                      f"textures = [{_toml_str(names[key])}]", f"effect = {e}", 'mode = "only_unassigned"', ""]
    lines += _learned_exclusions(data, mt, excl_total, pictures)
    return "\n".join(lines).rstrip() + "\n", pictures


def _stem(texture: str) -> str:
    """``Tileset\\Elwynn\\ElwynnGrass.blp`` -> ``ElwynnGrass``."""
    return texture.replace("/", "\\").rsplit("\\", 1)[-1].rsplit(".", 1)[0]


def _learned_exclusions(data, mt, excl_total: int, pictures: list) -> list[str]:
    """Exclude rules for the footprint kinds the map's noEffectDoodad bits already follow, and a
    painted rule (a picture added to ``pictures``) for the excluded cells none of them explains
    (the map maker's hand-set bits: a repaint that drops them gets them back)."""
    from wowgrass.edit import footprints
    from wowgrass.edit.batch import iter_tiles
    from wowgrass.edit.masks import CELLS, chunks_to_grid, selection_box

    if not excl_total:
        return ["# noEffectDoodad: no cell of the map is excluded now: no exclude rule learned", ""]
    kinds = ("buildings", "models", "liquid", "holes")
    ctx = footprints.FootprintContext(data)
    covered: Counter = Counter()
    excluded: Counter = Counter()
    per_tile = {}
    for _gp, cr, _raw, t in iter_tiles(data, mt):
        fps = {}
        for kind in kinds:
            placed = {"buildings": t.modf, "models": t.mddf}.get(kind)
            if placed is not None and not len(placed):
                continue
            try:
                fps[kind] = fp = np.asarray(footprints.footprint(kind, t, data=data, context=ctx), bool)
            except (WowgrassError, ValueError):
                continue
            covered[kind] += int(fp.sum())
            excluded[kind] += int((fp & t.no_effect_doodad).sum())
        per_tile[cr] = (t.index_xy.copy(), t.no_effect_doodad.copy(), fps)
    out, made = [], []
    for kind in kinds:
        n, k = covered[kind], excluded[kind]
        if not n:
            continue
        share = k / n
        head = (f"# from the map: {k:,} of the {n:,} cells under {kind} are excluded now ({share:.0%})")
        block = ["[[exclude]]", f"name = {_toml_str('under ' + kind)}", f'under = "{kind}"',
                 f"reason = {_toml_str('learned: the map excludes the cells under ' + kind)}"]
        if share >= 0.9:
            out += [head, *block, ""]
            made.append(kind)
        else:
            out += [head + ": not made a rule (uncomment to exclude them all)", *("# " + b for b in block), ""]
    c0, r0, nc, nr = selection_box(mt.tiles)
    grid = np.zeros((nr * CELLS, nc * CELLS), np.uint8)
    rest = 0
    for (c, r), (ixy, bits, fps) in per_tile.items():
        left = bits.copy()
        for kind in made:
            if kind in fps:
                left &= ~fps[kind]
        rest += int(left.sum())
        grid[(r - r0) * CELLS:(r - r0 + 1) * CELLS, (c - c0) * CELLS:(c - c0 + 1) * CELLS] = np.where(
            chunks_to_grid(ixy, left), 255, 0)
    if rest:
        rel = "masks/learned-excluded.png"
        pictures.append((rel, grid))
        out += [f"# from the map: {rest:,} excluded cells no rule above explains (set by hand): painted in {rel}",
                "[[exclude]]", 'name = "excluded by hand"', f"mask = {_toml_str(rel)}",
                f"tiles = [{_toml_str(f'{c0}:{c0 + nc - 1},{r0}:{r0 + nr - 1}')}]",
                'reason = "learned: the cells the map excluded by hand"', ""]
    return out


def write_learned(path, text: str, pictures: list, *, force: bool = False) -> list[Path]:
    """Write a learned rules file and its pictures, all or none."""
    from wowgrass.edit.rules import parse_rules
    from wowgrass.fileio import write_files_atomic

    path = Path(path)
    if path.exists() and not force:
        raise UsageError(f"{path} exists; --force replaces it")
    parse_rules(text, path)                # what is written reads back
    files = [(path, text.encode("utf-8"))]
    for rel, grey in pictures:
        p = path.parent / rel
        files.append((p, _png(grey)))
    return write_files_atomic(files)


__all__ = ["Drift", "append_mask_rule", "rule_colour", "rules_picture", "write_rules_picture", "cell_at", "drift", "drift_map", "explain_cell", "governing", "learn_rules",
           "tile_at", "write_learned"]
