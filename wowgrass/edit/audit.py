"""The ground-effect audit of a map: which textures carry which effects, and where grass goes missing.

```python
audit_map(data, map_name, tiles=None, *, jobs=1, margin=STALE_MARGIN, msb_first=False, progress=None,
          picture=True) -> Audit
Audit: map, tiles, build, margin, notes; textures [dict]; effects [dict]; cells {counts}; per_tile [dict];
       missing_rows, unresolved_rows, missing_models; to_json(); text_lines();
       picture(scale=None) -> (rgb, legend)   (the top-down picture, legend entries as legend_strip takes)
write_audit_picture(audit, path, scale=None) -> Path     # picture + legend strip (game.tiles.legend_strip)
write_cells_picture(audit, path) -> Path                 # one pixel a cell: the grid `exclude --mask` reads
```
What it finds (docs/workbench.md, "Audit"):

* per texture (MTEX path, case-insensitive): layers, chunks and tiles using it, the effect ids its
  layers carry with their layer counts;
* **unassigned** (the patchy-grass case): layers with no effect id (0, 0xFFFF, 0xFFFFFFFF) of a
  texture that carries grass elsewhere on the map (an effect whose row names doodads), and the
  cells whose doodadMapping picks such a layer;
* effect ids with no GroundEffectTexture row; rows whose DoodadID slots name no GroundEffectDoodad
  row; doodad models the data lacks;
* cells excluded by noEffectDoodad (and how many of them would grow grass), holes;
* **stale** cells: doodadMapping names a missing layer, or one showing ``margin`` less of the cell
  than the most visible layer (:func:`wowgrass.edit.adt_edit.stale_cells`).

Tiles are read and measured in ``jobs`` processes (each opens the data source itself); the totals
are gathered here.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from wowgrass.edit.adt_edit import STALE_MARGIN, read_tile, stale_cells, visible_shares
from wowgrass.errors import WowgrassError
from wowgrass.formats.adt import NO_EFFECT_IDS

Progress = Callable[[int, int, str], None]

# cell categories of the picture, in the order they win
HOLE, EXCLUDED, STALE, NO_ROW, UNASSIGNED, GRASS, NO_GRASS, BARE, ABSENT = range(9)
CATEGORY_RGB = {HOLE: (0, 0, 0), EXCLUDED: (38, 48, 110), STALE: (255, 214, 0), NO_ROW: (220, 20, 20),
                UNASSIGNED: (255, 0, 220), NO_GRASS: (196, 188, 172), BARE: (92, 92, 92), ABSENT: (240, 240, 240)}
CATEGORY_LABEL = {HOLE: "hole", EXCLUDED: "excluded (noEffectDoodad)", STALE: "stale doodadMapping",
                  NO_ROW: "effect id without a GroundEffectTexture row",
                  UNASSIGNED: "unassigned: grass texture without an effect id",
                  NO_GRASS: "effect without doodads (terrain type only)", BARE: "no effect id"}
# effect sets: distinct colours that none of the categories above uses
SET_PALETTE = _SET_PALETTE = [(27, 158, 119), (117, 112, 179), (102, 166, 30), (55, 126, 184), (217, 95, 2), (77, 175, 74),
                (152, 78, 163), (166, 206, 227), (31, 120, 180), (178, 223, 138), (166, 118, 29), (106, 61, 154),
                (141, 211, 199), (253, 180, 98), (128, 177, 211), (188, 128, 189), (0, 109, 44), (140, 81, 10),
                (1, 102, 94), (84, 39, 143)]


def _key(path: str) -> str:
    return path.replace("/", "\\").lower()


# ----------------------------------------------------------------------------- one tile (a worker)

_WORKER: dict = {}


def _open_worker(spec, overlay=None) -> None:
    from wowgrass.edit.batch import Overlay

    data = spec.open()
    _WORKER["data"] = Overlay(data, overlay) if overlay else data


def _tile_facts(job) -> dict:
    """What the audit needs of one tile: layers, and per cell the mapped layer's texture and effect,
    the best layer's, and the flags. Small arrays only (the tile itself stays in the worker)."""
    gp, cr, big_alpha, msb_first, margin = job
    data = _WORKER["data"]
    raw = data.read(gp)
    t = read_tile(raw, gp, big_alpha=big_alpha, msb_first=msb_first)
    return tile_facts(t, cr, margin)


def tile_facts(t, cr, margin: float = STALE_MARGIN) -> dict:
    n = t.n_layers.astype(np.int64)
    exists = np.arange(4)[None, :] < n[:, None]
    ci, li = np.nonzero(exists)
    shares = visible_shares(t)
    dm = t.doodad_mapping.astype(np.int64)
    valid = dm < n[:, None, None]
    k = np.minimum(dm, 3).reshape(256, 64)
    tex = np.where(valid, np.take_along_axis(t.layer_texture.astype(np.int64), k, 1).reshape(256, 8, 8), -1)
    eff = np.where(valid, np.take_along_axis(t.layer_effect.astype(np.int64), k, 1).reshape(256, 8, 8), 0)
    exists_c = np.arange(4)[None, :, None, None] < n[:, None, None, None]
    best = np.where(exists_c, shares, -1.0).argmax(axis=1).reshape(256, 64)
    best_eff = np.where(n[:, None, None] > 0,
                        np.take_along_axis(t.layer_effect.astype(np.int64), best, 1).reshape(256, 8, 8), 0)
    return {"tile": tuple(cr), "textures": list(t.textures), "index_xy": t.index_xy.astype(np.int16),
            "layer_chunk": ci.astype(np.int16), "layer_texture": t.layer_texture[ci, li].astype(np.int32),
            "layer_effect": t.layer_effect[ci, li].astype(np.uint32),
            "cell_texture": tex.astype(np.int16), "cell_effect": eff.astype(np.uint32),
            "best_effect": best_eff.astype(np.uint32), "valid": valid,
            "stale": stale_cells(t, margin, shares), "excluded": t.no_effect_doodad.copy(),
            "hole": t.hole_cells(), "has_layers": n > 0}


# ----------------------------------------------------------------------------- the result

@dataclass
class Audit:
    """The audit of a map's selected tiles (see the module docstring)."""

    map: str
    tiles: list
    build: str | None = None
    margin: float = STALE_MARGIN
    notes: list = field(default_factory=list)
    textures: list = field(default_factory=list)
    effects: list = field(default_factory=list)
    cells: dict = field(default_factory=dict)
    per_tile: list = field(default_factory=list)
    missing_rows: list = field(default_factory=list)
    unresolved_rows: list = field(default_factory=list)
    missing_models: list = field(default_factory=list)
    tables: bool = True
    tables_problem: str | None = None   # what is wrong with the ground-effect tables (a finding)
    _grids: dict = field(default_factory=dict, repr=False)     # (col, row) -> (128, 128) category, set, excluded
    _sets: list = field(default_factory=list, repr=False)      # effect ids in colour order

    def to_json(self) -> dict:
        """The audit as JSON (cli.md's names: ``*_count`` numbers, plural names lists)."""
        def counts(d):
            return {("cell_count" if k == "total" else f"{k}_cell_count"): v for k, v in d.items()}

        def texture(t):
            return {"path": t["path"], "layer_count": t["layers"], "chunk_count": t["chunks"],
                    "tile_count": t["tile_count"], "carries_grass": t["carries_grass"],
                    "effects": [{"id": e["id"], "layer_count": e["layers"]} for e in t["effects"]],
                    "unassigned_layer_count": t["unassigned_layers"], "unassigned_cell_count": t["unassigned_cells"],
                    "unassigned_chunk_count": t["unassigned_chunk_count"], "unassigned_chunks": t["unassigned_chunks"]}

        def effect(e):
            out = {k: v for k, v in e.items() if k not in ("layers", "cells")}
            out.update(layer_count=e["layers"], cell_count=e["cells"])
            return out

        return {"map": self.map, "build": self.build, "tile_count": len(self.tiles),
                "tiles": [list(t) for t in self.tiles], "margin": self.margin, "tables": self.tables,
                "tables_problem": self.tables_problem,
                "notes": list(self.notes), "summary": counts(self.cells),
                "findings": self.findings(),
                "textures": [texture(t) for t in self.textures], "effects": [effect(e) for e in self.effects],
                "missing_rows": [{"id": r["id"], "layer_count": r["layers"], "cell_count": r["cells"]}
                                 for r in self.missing_rows],
                "unresolved_rows": self.unresolved_rows, "missing_models": self.missing_models,
                "per_tile": [{"tile": t["tile"], **counts({k: v for k, v in t.items() if k != "tile"})}
                             for t in self.per_tile]}

    def findings(self) -> dict:
        """The problems found, counted (what the text and the docs headline)."""
        c = self.cells
        return {"unreadable_table_count": int(self.tables_problem is not None),
                "unassigned_layer_count": sum(t["unassigned_layers"] for t in self.textures),
                "unassigned_cell_count": c.get("unassigned", 0), "missing_row_count": len(self.missing_rows),
                "unresolved_row_count": len(self.unresolved_rows), "missing_model_count": len(self.missing_models),
                "stale_cell_count": c.get("stale", 0), "excluded_cell_count": c.get("excluded", 0)}

    def text_lines(self) -> list[str]:
        c = self.cells
        out = [f"{self.map}: {len(self.tiles):,} tile(s), {c['total']:,} cells; build {self.build or 'unknown'}"
               + ("" if self.tables else " (no readable ground-effect tables: rows not checked, grass not counted)")]

        def n(key):
            return "?" if c.get(key) is None else f"{c[key]:,}"

        shows_less = c["stale"] - c["invalid_mapping"]
        out.append(f"  cells: {n('grass')} grow grass, {n('unassigned')} unassigned (grass texture, no effect id), "
                   f"{n('no_row')} on effect ids without a row, {c['stale']:,} stale doodadMapping "
                   f"({c['invalid_mapping']:,} name a layer the chunk lacks, {shows_less:,} a layer showing less; "
                   f"{n('stale_grass_missing')} lose grass, {n('stale_wrong_ground')} grow it on the wrong ground), "
                   f"{c['excluded']:,} excluded by noEffectDoodad ({n('excluded_grass')} of them on grass), "
                   f"{c['hole']:,} in holes")
        out.append(f"  textures ({len(self.textures)}):")
        for t in self.textures:
            effs = ", ".join(f"{e['id']} x{e['layers']}" for e in t["effects"]) or "none"
            flag = f"   UNASSIGNED: {t['unassigned_layers']} layers in {t['unassigned_chunk_count']} chunks" \
                if t["unassigned_layers"] else ""
            out.append(f"    {t['path']}: {t['layers']} layers, {t['chunks']} chunks, "
                       f"{t['tile_count']} tile{'' if t['tile_count'] == 1 else 's'}; "
                       f"effects {effs}{flag}")
        out.append(f"  effect ids ({len(self.effects)}):")
        for e in self.effects:
            if e["row"] is False:
                what = "NO GroundEffectTexture ROW"
            elif e["row"] is None:
                what = "rows not checked"
            else:
                models = [m.rsplit("\\", 1)[-1] for m in e["models"] if m]
                what = (", ".join(models) if models else "no doodads") + f"; density {e['density']}"
                if e["unresolved_doodads"]:
                    what += f"; DoodadIDs without a GroundEffectDoodad row: {e['unresolved_doodads']}"
                if e["missing_models"]:
                    what += "; not in the data: " + ", ".join(m.rsplit("\\", 1)[-1] for m in e["missing_models"])
            out.append(f"    {e['id']:>10}: {e['layers']} layers, {e['cells']:,} cells; {what}")
        f = self.findings()
        problems = [self.tables_problem or "",
                    f"{f['unassigned_layer_count']} unassigned layers ({f['unassigned_cell_count']:,} cells)"
                    if f["unassigned_layer_count"] else "",
                    f"{f['missing_row_count']} effect ids without a row" if f["missing_row_count"] else "",
                    f"{f['unresolved_row_count']} rows with unknown doodads" if f["unresolved_row_count"] else "",
                    f"{f['missing_model_count']} doodad model{'s' * (f['missing_model_count'] != 1)} missing"
                    if f["missing_model_count"] else "",
                    f"{f['stale_cell_count']:,} stale cells" if f["stale_cell_count"] else ""]
        problems = [p for p in problems if p]
        out.append("  found: " + ("; ".join(problems) if problems else "nothing wrong"))
        return out

    # -- the picture --
    def picture(self, scale: int | None = None) -> tuple[np.ndarray, list[dict]]:
        """(rgb (h, w, 3) u1, legend) of the selection, north up, east right, ``scale`` pixels a cell."""
        if not self._grids:
            raise ValueError("this audit was made with picture=False")
        cs = [c for c, _ in self.tiles]
        rs = [r for _, r in self.tiles]
        c0, r0, nc, nr = min(cs), min(rs), max(cs) - min(cs) + 1, max(rs) - min(rs) + 1
        if scale is None:
            scale = int(np.clip(1024 // (128 * nc), 1, 8))
        cat = np.full((nr * 128, nc * 128), ABSENT, np.uint8)
        sets = np.full(cat.shape, -1, np.int32)
        for (c, r), (g_cat, g_set, _x) in self._grids.items():
            cat[(r - r0) * 128:(r - r0 + 1) * 128, (c - c0) * 128:(c - c0 + 1) * 128] = g_cat
            sets[(r - r0) * 128:(r - r0 + 1) * 128, (c - c0) * 128:(c - c0 + 1) * 128] = g_set
        palette = np.array([_set_colour(i, e) for i, e in enumerate(self._sets)] or [(0, 0, 0)], np.uint8)
        rgb = np.zeros(cat.shape + (3,), np.uint8)
        for k, col in CATEGORY_RGB.items():
            rgb[cat == k] = col
        g = cat == GRASS
        rgb[g] = palette[np.maximum(sets[g], 0)]
        if scale > 1:
            rgb = rgb.repeat(scale, 0).repeat(scale, 1)
            if scale >= 4:   # chunk borders, faint
                h, w = rgb.shape[:2]
                edge = np.arange(0, w, 8 * scale)
                rgb[:, edge] = (rgb[:, edge] * 0.8).astype(np.uint8)
                edge = np.arange(0, h, 8 * scale)
                rgb[edge] = (rgb[edge] * 0.8).astype(np.uint8)
        if (nc > 1 or nr > 1) and scale >= 4:  # tile borders (a line over one pixel of four or more)
            step = 128 * scale
            rgb[:, np.arange(step, rgb.shape[1], step)] = (255, 255, 255)
            rgb[np.arange(step, rgb.shape[0], step)] = (255, 255, 255)
        counts = Counter()
        for k in range(ABSENT):
            counts[k] = int((cat == k).sum())
        legend = []
        per_set = np.bincount(sets[g], minlength=len(self._sets)) if g.any() else np.zeros(len(self._sets), int)
        for i, e in enumerate(self._sets):
            if per_set[i]:
                legend.append({"label": f"effect {e} ({per_set[i]:,} cells)", "rgb": _hex(palette[i]),
                               "count": int(per_set[i]), "unit": "cells", "effect": int(e)})
        for k in (UNASSIGNED, STALE, NO_ROW, EXCLUDED, NO_GRASS, BARE, HOLE):
            if counts[k]:
                legend.append({"label": f"{CATEGORY_LABEL[k]} ({counts[k]:,})", "rgb": _hex(CATEGORY_RGB[k]),
                               "count": counts[k], "unit": "cells"})
        return rgb, legend

    def cells_picture(self) -> np.ndarray:
        """(h, w) u1 grey picture, one pixel a cell over the selection's bounding box (the grid
        ``exclude --mask`` reads): cells whose noEffectDoodad bit is set are white (255), unassigned
        ones grey 96, stale ones 64, the rest black: as a mask it selects what is excluded now."""
        cs = [c for c, _ in self.tiles]
        rs = [r for _, r in self.tiles]
        c0, r0 = min(cs), min(rs)
        out = np.zeros(((max(rs) - r0 + 1) * 128, (max(cs) - c0 + 1) * 128), np.uint8)
        for (c, r), (g_cat, _s, g_excl) in self._grids.items():
            out[(r - r0) * 128:(r - r0 + 1) * 128, (c - c0) * 128:(c - c0 + 1) * 128] = np.where(
                g_excl, 255, np.where(g_cat == UNASSIGNED, 96, np.where(g_cat == STALE, 64, 0)))
        return out


def _hex(c) -> str:
    return "#%02x%02x%02x" % tuple(int(v) for v in c)


def _set_colour(i: int, effect_id: int):
    if i < len(_SET_PALETTE):
        return _SET_PALETTE[i]
    from wowgrass.game.tiles import _hsv

    h = zlib.crc32(f"effect:{effect_id}".encode())
    return _hsv((h % 360) / 360.0, 0.5 + ((h >> 9) % 40) / 100.0, 0.55 + ((h >> 17) % 30) / 100.0)


# ----------------------------------------------------------------------------- the map

def _catalog(data):
    """(catalog or None, what is wrong with the tables or None): missing or unreadable tables are a
    finding of their own (the grass cannot be counted without them)."""
    from wowgrass.game.effects import DOODAD_PATH, TEXTURE_PATH, GroundEffectCatalog

    missing = [p.rsplit("\\", 1)[-1] for p in (TEXTURE_PATH, DOODAD_PATH) if not data.exists(p)]
    if missing:
        problem = f"no {' nor '.join(missing)} in the data"
    else:
        try:
            return GroundEffectCatalog.from_data(data), None
        except WowgrassError as exc:
            problem = f"the ground-effect tables cannot be read ({exc})"
    return None, problem   # a finding (the text's found:, JSON tables_problem), not only a warning


def audit_map(data, map_name: str, tiles=None, *, jobs: int = 1, margin: float = STALE_MARGIN,
              msb_first: bool = False, progress: Progress | None = None, picture: bool = True) -> Audit:
    """Audit ``map_name``'s tiles in ``data`` (a GameData, or a :class:`~wowgrass.edit.batch.Overlay` of
    one; ``tiles`` ranges as ``--tile`` gives them)."""
    from wowgrass.game.maps import adt_game_path, map_tiles

    mt = map_tiles(data, map_name, tiles)
    notes = [mt.note()] if mt.note() else []
    cat, problem = _catalog(data)
    jobs_list = [(adt_game_path(mt.name, c, r), (c, r), mt.big_alpha, msb_first, float(margin)) for c, r in mt.tiles]
    total = len(jobs_list)
    facts: list[dict] = []

    def collect(it):
        for k, f in enumerate(it):
            facts.append(f)
            if progress:
                progress(k + 1, total, "{},{}".format(*f["tile"]))

    if jobs > 1 and total > 1:
        from wowgrass.formats.mpq import release_threads

        release_threads()
        from wowgrass.edit.batch import Overlay

        overlay = str(data.folder) if isinstance(data, Overlay) else None
        with ProcessPoolExecutor(min(jobs, total), initializer=_open_worker,
                                 initargs=(data.spec(), overlay)) as pool:
            collect(pool.map(_tile_facts, jobs_list, chunksize=max(1, total // (4 * jobs))))
    else:
        _WORKER["data"] = data
        try:
            collect(map(_tile_facts, jobs_list))
        finally:
            _WORKER.pop("data", None)
    audit = _gather(mt.name, [tuple(t) for t in mt.tiles], facts, cat, data, float(margin), notes, picture)
    audit.tables_problem = problem
    return audit


#: cell counts that need the tables (which effects grow grass): None when they cannot be read
GRASS_COUNTS = ("grass", "unassigned", "stale_grass_missing", "stale_wrong_ground", "excluded_grass", "no_row")


def _classify_effects(facts, cat):
    """(every effect id used, its catalog row index or -1, the ids whose row names doodads, the ids
    without a row). Without tables no id is known to grow grass and none lacks a row."""
    no_eff = np.array(NO_EFFECT_IDS, np.uint32)
    used = np.unique(np.concatenate([f["layer_effect"] for f in facts] + [np.zeros(0, np.uint32)]))
    used = used[~np.isin(used, no_eff)]
    if cat is None:
        return used, np.full(len(used), -1), np.zeros(0, np.uint32), np.zeros(0, np.uint32)
    from wowgrass.game.effects import empty_slot_mask

    rows = cat.lookup(used)
    has_row = rows >= 0
    slots = np.where(has_row[:, None], cat.slot_doodad[np.maximum(rows, 0)], -1)
    empty = empty_slot_mask(slots, cat.build) | ~has_row[:, None]
    return used, rows, used[has_row & (~empty).any(axis=1)], used[~has_row]


def _grass_textures(facts, grass_ids) -> set[str]:
    """The textures (keys) some layer of which carries an effect that grows grass."""
    out: set[str] = set()
    for f in facts:
        keys = [_key(p) for p in f["textures"]]
        lt, le = f["layer_texture"], f["layer_effect"]
        for ti in np.unique(lt[np.isin(le, grass_ids)]).tolist():
            if 0 <= ti < len(keys):
                out.add(keys[ti])
    return out


class _Tally:
    """The map's totals, tile by tile."""

    def __init__(self, grass_ids, no_row_ids, grass_tex, picture):
        self.grass_ids, self.no_row_ids, self.grass_tex, self.picture = grass_ids, no_row_ids, grass_tex, picture
        self.no_eff = np.array(NO_EFFECT_IDS, np.uint32)
        self.tex_info: dict[str, dict] = {}
        self.eff_layers: Counter = Counter()
        self.eff_cells: Counter = Counter()
        self.eff_textures: dict[int, set] = {}
        self.totals: Counter = Counter()
        self.per_tile: list = []
        self.grids: dict = {}
        self.set_order: Counter = Counter()

    def add(self, f) -> None:
        names = f["textures"]
        keys = [_key(p) for p in names]
        is_grass_tex = np.array([k in self.grass_tex for k in keys] + [False], bool)   # last: out-of-range ids
        self._layers(f, names, keys, is_grass_tex)
        self._cells(f, keys, is_grass_tex)

    def _layers(self, f, names, keys, is_grass_tex) -> None:
        lt, le, lc, ixy = f["layer_texture"], f["layer_effect"], f["layer_chunk"], f["index_xy"]
        lt_i = np.where((lt >= 0) & (lt < len(keys)), lt, len(keys))
        unassigned_layer = is_grass_tex[lt_i] & np.isin(le, self.no_eff)
        for ti in np.unique(lt_i).tolist():
            sel = lt_i == ti
            name = names[ti] if ti < len(keys) else f"<MTEX index {int(lt[sel][0])} out of range>"
            key = keys[ti] if ti < len(keys) else name
            info = self.tex_info.setdefault(key, {"path": name, "layers": 0, "chunks": 0, "tiles": set(),
                                                  "effects": Counter(), "unassigned_layers": 0,
                                                  "unassigned_chunks": [], "cells": 0})
            info["layers"] += int(sel.sum())
            info["chunks"] += int(np.unique(lc[sel]).size)
            info["tiles"].add(f["tile"])
            info["effects"].update(le[sel].tolist())
            ua = sel & unassigned_layer
            if ua.any():
                info["unassigned_layers"] += int(ua.sum())
                for ch in np.unique(lc[ua]).tolist():
                    info["unassigned_chunks"].append({"tile": list(f["tile"]),
                                                      "chunk": [int(ixy[ch, 0]), int(ixy[ch, 1])], "mcnk": int(ch)})
        self.eff_layers.update(le.tolist())
        for ti, e in set(zip(lt_i.tolist(), le.tolist())):
            self.eff_textures.setdefault(int(e), set()).add(names[ti] if ti < len(keys) else "?")

    def _cells(self, f, keys, is_grass_tex) -> None:
        ct, ce = f["cell_texture"].astype(np.int64), f["cell_effect"]
        ct_i = np.where((ct >= 0) & (ct < len(keys)), ct, len(keys))
        valid, has = f["valid"], f["has_layers"][:, None, None]
        grows = np.isin(ce, self.grass_ids) & valid
        no_row = np.isin(ce, self.no_row_ids) & valid
        unassigned = is_grass_tex[ct_i] & np.isin(ce, self.no_eff) & valid
        no_grass = valid & ~grows & ~no_row & ~np.isin(ce, self.no_eff)
        stale, excl, hole = f["stale"], f["excluded"], f["hole"]
        best_grows = np.isin(f["best_effect"], self.grass_ids)
        live = ~excl & ~hole & has
        c = {"total": 256 * 64, "grass": int((grows & live & ~stale).sum()),
             "unassigned": int((unassigned & live).sum()), "stale": int((stale & live).sum()),
             "stale_grass_missing": int((stale & live & best_grows & ~grows).sum()),
             "stale_wrong_ground": int((stale & live & grows & ~best_grows).sum()),
             "excluded": int(excl.sum()), "excluded_grass": int((excl & grows).sum()), "hole": int(hole.sum()),
             # a layer the chunk lacks: part of the stale cells (counted over the same live cells)
             "invalid_mapping": int((has & ~valid & live).sum()), "no_row": int((no_row & live).sum())}
        self.totals.update(c)
        self.per_tile.append({"tile": list(f["tile"]), **{k: v for k, v in c.items() if k != "total"}})
        for ti in np.unique(ct_i[unassigned & live]).tolist():
            key = keys[ti] if ti < len(keys) else None
            if key in self.tex_info:
                self.tex_info[key]["cells"] += int((unassigned & live & (ct_i == ti)).sum())
        vals, n = np.unique(ce[valid & live], return_counts=True)
        self.eff_cells.update(dict(zip(vals.tolist(), n.tolist())))
        if self.picture:
            category = np.full((256, 8, 8), BARE, np.uint8)
            category[no_grass] = NO_GRASS
            category[grows] = GRASS
            category[unassigned] = UNASSIGNED
            category[no_row] = NO_ROW
            category[stale] = STALE
            category[excl] = EXCLUDED
            category[hole] = HOLE
            gv, gn = np.unique(ce[grows & (category == GRASS)], return_counts=True)
            self.set_order.update(dict(zip(gv.tolist(), gn.tolist())))
            self.grids[f["tile"]] = (category, ce, excl, f["index_xy"])

    def textures(self) -> list[dict]:
        out = []
        for key, info in sorted(self.tex_info.items(), key=lambda kv: (-kv[1]["layers"], kv[0])):
            out.append({"path": info["path"], "layers": info["layers"], "chunks": info["chunks"],
                        "tile_count": len(info["tiles"]), "carries_grass": key in self.grass_tex,
                        "effects": [{"id": int(i), "layers": int(n)} for i, n in info["effects"].most_common()],
                        "unassigned_layers": info["unassigned_layers"], "unassigned_cells": info["cells"],
                        "unassigned_chunk_count": len(info["unassigned_chunks"]),
                        "unassigned_chunks": info["unassigned_chunks"]})
        return out


def _effect_entries(used, rows, cat, data, tally: _Tally):
    """(effects [dict], {missing model: [effect ids]}, unresolved rows [dict])."""
    from wowgrass.game.effects import empty_slot_mask

    effects, missing_models, unresolved = [], {}, []
    exists: dict[str, bool] = {}
    for k, e in enumerate(used.tolist()):
        row = cat.row(e) if cat is not None else None
        entry = {"id": int(e), "layers": int(tally.eff_layers[e]), "cells": int(tally.eff_cells[e]),
                 "textures": sorted(tally.eff_textures.get(e, ()), key=str.lower),
                 "row": (row is not None) if cat is not None else None,
                 "grass": bool(np.isin(e, tally.grass_ids)), "models": [], "density": None,
                 "unresolved_doodads": [], "missing_models": []}
        if row is not None:
            r = int(rows[k])
            empty = empty_slot_mask(cat.slot_doodad[r], cat.build)
            entry["models"] = row["models"]
            entry["density"] = row["density"]
            entry["unresolved_doodads"] = [int(d) for d, m, z in zip(cat.slot_doodad[r].tolist(),
                                                                      cat.slot_model[r].tolist(), empty.tolist())
                                           if not z and m < 0]
            for m in dict.fromkeys(m for m in row["models"] if m):   # a model in two slots counts once
                if m not in exists:
                    exists[m] = data.exists(m)
                if not exists[m]:
                    entry["missing_models"].append(m)
                    missing_models.setdefault(m, []).append(int(e))
            if entry["unresolved_doodads"]:
                unresolved.append({"id": int(e), "doodad_ids": entry["unresolved_doodads"]})
        effects.append(entry)
    effects.sort(key=lambda d: (-d["layers"], d["id"]))
    return effects, missing_models, unresolved


def _gather(map_name, tiles, facts, cat, data, margin, notes, picture) -> Audit:
    """The map's totals from every tile's facts."""
    used, rows, grass_ids, no_row_ids = _classify_effects(facts, cat)
    tally = _Tally(grass_ids, no_row_ids, _grass_textures(facts, grass_ids), picture)
    for f in facts:
        tally.add(f)
    tally.totals["total"] = 256 * 64 * len(facts)
    cells = dict(tally.totals)
    if cat is None:          # which effects grow grass is unknown: those counts are not made
        for k in GRASS_COUNTS:
            cells[k] = None
        for t in tally.per_tile:
            t.update({k: None for k in GRASS_COUNTS})
    effects, missing_models, unresolved = _effect_entries(used, rows, cat, data, tally)
    audit = Audit(map_name, tiles, getattr(cat, "build", None) or getattr(data, "build", None), margin, notes,
                  tally.textures(), effects, cells, tally.per_tile,
                  missing_rows=[{"id": int(e), "layers": int(tally.eff_layers[e]), "cells": int(tally.eff_cells[e])}
                                for e in no_row_ids.tolist()],
                  unresolved_rows=unresolved,
                  missing_models=[{"model": m, "effects": ids} for m, ids in sorted(missing_models.items())],
                  tables=cat is not None)
    if picture:
        _picture_grids(audit, tally)
    return audit


def _picture_grids(audit: Audit, tally: _Tally) -> None:
    """The per-tile category, set-colour and excluded grids the pictures draw."""
    from wowgrass.game.tiles import tile_grid

    order = [e for e, _n in tally.set_order.most_common()]
    for t, (category, ce, excl, ixy) in tally.grids.items():
        set_idx = np.full(ce.shape, -1, np.int32)
        g = category == GRASS
        if g.any():
            set_idx[g] = _lookup_index(order, ce[g])
        audit._grids[t] = tuple(tile_grid(ixy, a) for a in (category, set_idx, excl))
    audit._sets = order


def _lookup_index(order: list, values: np.ndarray) -> np.ndarray:
    """Index in ``order`` of every value (all present)."""
    ids = np.array(order, np.int64)
    srt = np.argsort(ids)
    pos = np.searchsorted(ids[srt], values.astype(np.int64))
    return srt[np.minimum(pos, len(ids) - 1)].astype(np.int32)


def write_audit_picture(audit: Audit, path, scale: int | None = None):
    """The audit's picture, each tile labelled "col,row", with its legend drawn in below, written
    atomically (format by suffix)."""
    from wowgrass.fileio import write_image
    from wowgrass.game.tiles import label_tiles, legend_strip

    rgb, legend = audit.picture(scale)
    c0, r0 = min(c for c, _ in audit.tiles), min(r for _, r in audit.tiles)
    tile_px = rgb.shape[1] // (max(c for c, _ in audit.tiles) - c0 + 1)
    rgb = label_tiles(rgb, audit.tiles, (c0, r0), tile_px)
    f = audit.findings()
    ua = "?" if f["unassigned_cell_count"] is None else f"{f['unassigned_cell_count']:,}"
    title = (f"{audit.map}: {len(audit.tiles)} tile(s); unassigned {ua} cells, "
             f"stale {f['stale_cell_count']:,}, excluded {f['excluded_cell_count']:,}"
             + ("; TABLES UNREADABLE: grass not counted" if audit.tables_problem else ""))
    return write_image(path, legend_strip(rgb, legend, title))


def write_cells_picture(audit: Audit, path):
    """:meth:`Audit.cells_picture` as a grey PNG (the grid ``effects exclude --mask`` reads)."""
    from wowgrass.fileio import write_image

    return write_image(path, audit.cells_picture())


__all__ = ["Audit", "audit_map", "tile_facts", "write_audit_picture", "write_cells_picture"]
