"""The fixes over a map: assign, remap and exclude for every selected tile of a data source.

```python
assign_map(data, map_name, texture_glob, effect_id, *, tiles=None, only_unassigned=False,
           allow_missing=False, msb_first=False, progress=None) -> MapEdit
remap_map(data, map_name, *, tiles=None, margin=STALE_MARGIN, msb_first=False, progress=None) -> MapEdit
exclude_map(data, map_name, *, tiles=None, mask=None, slope_above=None, under_liquid=False,
            near_objects=None, clear=False, msb_first=False, progress=None) -> MapEdit
MapEdit: map, kind, files {game path: new bytes} (changed tiles only), reports [EditReport] (every
         tile), notes; to_json();  write(out_dir, in_place=False, data=None) -> [Path]
```
``data`` is a :class:`~wowgrass.game.data.GameData`, or an :class:`Overlay` of one: a folder of
files in the client's layout (a fix's ``-o DIR``) answering before it, so fixes written there
build on each other (and a table ``effects new-set`` wrote there counts); ``tiles`` ranges as
``--tile`` gives them (:func:`wowgrass.game.maps.map_tiles`); ``progress(done, total, what)``.
Nothing is written until :meth:`MapEdit.write` (:func:`~wowgrass.edit.adt_edit.write_edited`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from wowgrass.edit.adt_edit import (
    STALE_MARGIN, assign_effect, closest_textures, exclude_cells, match_textures, read_tile, remap_mapping,
    write_edited,
)
from wowgrass.errors import UsageError, WowgrassError
from wowgrass.formats.adt import NO_EFFECT_IDS

Progress = Callable[[int, int, str], None]


def _game_key(path: str) -> str:
    return path.replace("/", "\\").strip("\\").upper()


class Overlay:
    """``data`` with other files answering first: those under ``folder`` (laid out as the client's
    paths: ``World/Maps/...``, ``DBFilesClient/...``; a fix's ``-o DIR``), or those of a patch MPQ
    (``folder`` a file: ``effects diff`` over a loose folder, where the patch simply answers first;
    a delete marker there hides the file below). Hidden files, temporaries and ``.bak`` backups are
    not game files. Reads only: writes go through :func:`write_edited`, given the data underneath."""

    def __init__(self, data, folder):
        from pathlib import Path

        from wowgrass.formats.mpq import MpqArchive

        self.data = data
        self.folder = Path(folder)
        self.files: dict[str, tuple[str, Path]] = {}
        self.archive = MpqArchive.open(self.folder) if self.folder.is_file() else None
        if self.folder.is_dir():
            for p in sorted(self.folder.rglob("*")):
                rel = p.relative_to(self.folder)
                if not p.is_file() or any(part.startswith(".") for part in rel.parts) or p.suffix.lower() in (
                        ".bak", ".tmp", ".mpq"):
                    continue
                name = "\\".join(rel.parts)
                self.files[_game_key(name)] = (name, p)

    def __getattr__(self, name):        # root, build, locale, archives, ... of the data underneath
        return getattr(self.data, name)

    def _mine(self, path: str):
        """(True, (file, archive or None)) where this layer answers (None: deleted), else (False, None)."""
        if self.archive is not None:
            e = self.archive.lookup(path, None)
            if e is None:
                return False, None
            return True, (None if e.is_delete_marker else (self.folder, self.archive))
        hit = self.files.get(_game_key(path))
        return (True, (hit[1], None)) if hit else (False, None)

    def locate(self, path: str):
        mine, found = self._mine(path)
        return found if mine else self.data.locate(path)

    def exists(self, path: str) -> bool:
        mine, found = self._mine(path)
        return found is not None if mine else self.data.exists(path)

    def read(self, path: str) -> bytes:
        mine, found = self._mine(path)
        if not mine:
            return self.data.read(path)
        if found is None:
            from wowgrass.errors import GameFileNotFound

            raise GameFileNotFound(f"{path}: deleted by {self.folder.name}")
        return found[1].read(path) if found[1] is not None else found[0].read_bytes()

    def list(self, pattern: str = "*") -> list[str]:
        import fnmatch

        pat = _game_key(pattern) if pattern not in ("", "*") else "*"
        names = self.archive.names() if self.archive is not None else [n for n, _p in self.files.values()]
        mine = [n for n in names if fnmatch.fnmatchcase(_game_key(n), pat)]
        have = {_game_key(n) for n in mine}
        return sorted(mine + [n for n in self.data.list(pattern) if _game_key(n) not in have], key=str.lower)

    def close(self) -> None:
        """Close the patch archive (the data underneath belongs to the caller)."""
        if self.archive is not None:
            self.archive.close()
            self.archive = None


def base_data(data):
    """The data source under any overlays (what an edit must never overwrite without --in-place)."""
    while isinstance(data, Overlay):
        data = data.data
    return data


@dataclass
class MapEdit:
    """An edit of a map's tiles, not yet written."""

    map: str
    kind: str
    files: dict = field(default_factory=dict)      # game path -> new bytes (tiles that changed)
    reports: list = field(default_factory=list)    # EditReport per tile examined
    notes: list = field(default_factory=list)
    params: dict = field(default_factory=dict)

    def totals(self) -> dict:
        keys = ("layers", "cells", "chunks", "bytes_changed")
        out = {k: sum(getattr(r, k) for r in self.reports) for k in keys}
        fields: Counter = Counter()
        for r in self.reports:
            fields.update(r.fields)
        out["fields"] = dict(fields)
        return out

    def to_json(self) -> dict:
        t = self.totals()
        return {"map": self.map, "kind": self.kind, **self.params, "tile_count": len(self.reports),
                "changed_tile_count": len(self.files), "layer_count": t["layers"], "cell_count": t["cells"],
                "chunk_count": t["chunks"], "changed_byte_count": t["bytes_changed"], "by_field": t["fields"],
                "notes": list(self.notes), "tiles": [r.to_json() for r in self.reports]}

    def write(self, out_dir=None, *, in_place: bool = False, data=None):
        return write_edited(self.files, out_dir, in_place=in_place, data=None if data is None else base_data(data))


def load_map_tiles(data, map_name: str, tiles=None):
    """The map's :class:`~wowgrass.game.maps.MapTiles` for a selection (its note, if any, kept)."""
    from wowgrass.game.maps import map_tiles

    return map_tiles(data, map_name, tiles)


def iter_tiles(data, mt, *, msb_first: bool = False, progress: Progress | None = None):
    """(game path, (col, row), raw bytes, AdtTile) of every tile of ``mt``."""
    from wowgrass.game.maps import adt_game_path

    total = len(mt.tiles)
    for k, (c, r) in enumerate(mt.tiles):
        gp = adt_game_path(mt.name, c, r)
        raw = data.read(gp)
        yield gp, (c, r), raw, read_tile(raw, gp, big_alpha=mt.big_alpha, msb_first=msb_first)
        if progress:
            progress(k + 1, total, f"{c},{r}")


def check_effect(data, effect_id: int, *, allow_missing: bool = False) -> dict | None:
    """The GroundEffectTexture row of ``effect_id`` (None for the 'no effect' ids 0/0xFFFF/0xFFFFFFFF);
    UsageError when the tables lack it (or cannot be read) unless ``allow_missing``."""
    from wowgrass.game.effects import GroundEffectCatalog

    if not 0 <= int(effect_id) <= 0xFFFFFFFF:
        raise UsageError(f"--effect {effect_id}: effect ids are 0 .. 4294967295")
    if int(effect_id) in NO_EFFECT_IDS:
        return None
    try:
        cat = GroundEffectCatalog.from_data(data)
    except WowgrassError as exc:
        if allow_missing:
            return None
        raise UsageError(f"cannot check effect {effect_id}: the ground-effect tables cannot be read ({exc}); "
                         "--allow-missing assigns it anyway") from None
    row = cat.row(int(effect_id))
    if row is None and not allow_missing:
        near = sorted(cat.ids.tolist(), key=lambda i: abs(int(i) - int(effect_id)))[:5]
        raise UsageError(f"effect {effect_id} has no GroundEffectTexture row in {data.root} (nearest ids: "
                         f"{', '.join(map(str, sorted(near)))}); add it with `wowgrass effects new-set`, or "
                         "--allow-missing to assign it anyway")
    return row


def no_texture_matches(map_name: str, tile_count: int, seen, texture_glob: str) -> UsageError:
    """The error for a texture glob that no texture of the tiles (``seen``) matches, naming the closest."""
    near = closest_textures(seen, texture_glob)
    return UsageError(f"no texture of map {map_name!r} ({tile_count} tile(s)) matches {texture_glob!r}"
                      + (f"; closest: {', '.join(near)}" if near else "") + " (`wowgrass effects audit` lists them)")


def assign_map(data, map_name: str, texture_glob: str, effect_id: int, *, tiles=None, only_unassigned=False,
               allow_missing=False, msb_first=False, progress: Progress | None = None) -> MapEdit:
    """:func:`~wowgrass.edit.adt_edit.assign_effect` on every selected tile. A texture that no tile
    of the selection uses is an error listing the map's closest ones."""
    row = check_effect(data, effect_id, allow_missing=allow_missing)
    mt = load_map_tiles(data, map_name, tiles)
    edit = MapEdit(mt.name, "assign", params={"texture": texture_glob, "effect": int(effect_id),
                                             "only_unassigned": bool(only_unassigned),
                                             "effect_row": row is not None or int(effect_id) in NO_EFFECT_IDS})
    if mt.note():
        edit.notes.append(mt.note())
    seen: set[str] = set()
    for gp, _cr, raw, t in iter_tiles(data, mt, msb_first=msb_first, progress=progress):
        seen.update(t.textures)
        new, rep = assign_effect(raw, gp, texture_glob, effect_id, only_unassigned, tile=t)
        edit.reports.append(rep)
        if rep.changed:
            edit.files[gp] = new
    if not any(r.textures for r in edit.reports):
        raise no_texture_matches(mt.name, len(edit.reports), seen, texture_glob)
    if row is None and int(effect_id) not in NO_EFFECT_IDS:
        edit.notes.append(f"warning: effect {effect_id} has no GroundEffectTexture row here, or the tables cannot be "
                          "read (--allow-missing): the client grows nothing there until the row is shipped")
    return edit


def remap_map(data, map_name: str, *, tiles=None, margin: float = STALE_MARGIN, msb_first=False,
              progress: Progress | None = None) -> MapEdit:
    """:func:`~wowgrass.edit.adt_edit.remap_mapping` on every selected tile."""
    if not 0.0 <= float(margin) <= 1.0:
        raise UsageError(f"--margin {margin}: a share of the cell, 0 .. 1")
    mt = load_map_tiles(data, map_name, tiles)
    edit = MapEdit(mt.name, "remap", params={"margin": float(margin), "msb_first": bool(msb_first)})
    if mt.note():
        edit.notes.append(mt.note())
    for gp, _cr, raw, t in iter_tiles(data, mt, msb_first=msb_first, progress=progress):
        new, rep = remap_mapping(raw, gp, margin=margin, tile=t)
        edit.reports.append(rep)
        if rep.changed:
            edit.files[gp] = new
    return edit


def exclude_map(data, map_name: str, *, tiles=None, mask=None, slope_above=None, under_liquid=False,
                near_objects=None, clear=False, msb_first=False, progress: Progress | None = None) -> MapEdit:
    """Set (or ``clear``) noEffectDoodad where any of the criteria holds: ``mask`` (a picture path or
    an (h, w) grey array on the selection's grid, :mod:`wowgrass.edit.masks`), ``slope_above``
    degrees, ``under_liquid``, ``near_objects`` yards of a doodad or WMO."""
    from wowgrass.edit import masks as M

    if mask is None and slope_above is None and not under_liquid and near_objects is None:
        raise UsageError("say which cells: --mask PNG, --slope-above DEG, --under-liquid or --near-objects YARDS")
    if slope_above is not None and not 0 <= float(slope_above) <= 90:
        raise UsageError(f"--slope-above {slope_above}: degrees, 0 .. 90")
    if near_objects is not None and float(near_objects) < 0:
        raise UsageError(f"--near-objects {near_objects}: yards, 0 or more")
    mt = load_map_tiles(data, map_name, tiles)
    params = {"clear": bool(clear), "mask": None if mask is None else (str(mask) if not isinstance(mask, np.ndarray)
                                                                         else "array"),
              "slope_above": slope_above, "under_liquid": bool(under_liquid), "near_objects": near_objects}
    edit = MapEdit(mt.name, "exclude", params=params)
    if mt.note():
        edit.notes.append(mt.note())
    pictures = None
    if mask is not None:
        pictures = (M.mask_from_array(np.asarray(mask, np.float32), mt.tiles) if isinstance(mask, np.ndarray)
                    else M.read_mask_picture(mask, mt.tiles))
    objects = None
    if near_objects is not None:   # every selected tile's objects first (one near a border counts for both)
        from types import SimpleNamespace

        objects = M.map_objects([SimpleNamespace(mddf=t.mddf, modf=t.modf)
                                 for *_x, t in iter_tiles(data, mt, msb_first=msb_first)])
    for gp, cr, raw, t in iter_tiles(data, mt, msb_first=msb_first, progress=progress):
        sel = np.zeros((256, 8, 8), bool)
        if pictures is not None:
            sel |= M.grid_to_chunks(t, pictures[cr])
        if slope_above is not None:
            sel |= M.slope_mask(t, slope_above)
        if under_liquid:
            sel |= M.liquid_mask(t)
        if near_objects is not None:
            sel |= M.near_objects_mask(t, near_objects, objects)
        new, rep = exclude_cells(raw, gp, sel, clear, tile=t)
        edit.reports.append(rep)
        if rep.changed:
            edit.files[gp] = new
    return edit


__all__ = ["MapEdit", "Overlay", "assign_map", "base_data", "check_effect", "exclude_map", "iter_tiles",
           "load_map_tiles", "match_textures", "remap_map"]
