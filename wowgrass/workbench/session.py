"""An edit session over one map: the workbench's tools as library calls, with undo and redo, the
grass placed again per chunk as edits land, and saving only the bytes the edits touched.

Every tool works on the session's copy of a tile's bytes through the edit layer's primitive
(:func:`wowgrass.edit.adt_edit.patch_fields`: new values written over the old bytes, nothing
re-serialised), so a saved tile is byte for byte what the batch commands (``effects exclude``,
``assign``, ``remap``) write for the same cells. Tables change through
:mod:`wowgrass.edit.effect_sets` (rows appended, or one row's values replaced). ``save`` writes
every changed file at once through :func:`~wowgrass.edit.adt_edit.write_edited` (all or none),
after checking that no file changed on disk since it was loaded.

Coordinates are world yards: X north, Y west (as the rest of wowgrass). A tile is (col, row) as
``game.maps`` names them; a chunk index is the MCNK index of the tile's arrays.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from wowgrass.edit.adt_edit import (
    best_layers, closest_textures, disk_path, match_textures, patch_fields, read_tile, stale_cells, visible_shares,
    write_edited,
)
from wowgrass.errors import OutputError, UsageError
from wowgrass.formats.adt import CHUNK_SIZE, NO_EFFECT_IDS, TILE_SIZE, UNIT_SIZE, ZEROPOINT
from wowgrass.game.effects import DOODAD_PATH, TEXTURE_PATH, GroundEffectCatalog
from wowgrass.game.maps import adt_game_path, map_tiles, wdt_game_path
from wowgrass.workbench.history import History, Step, TilePatch

TABLES = (TEXTURE_PATH, DOODAD_PATH)
_FIELDS = ("layer_effect", "doodad_mapping", "no_effect_doodad")    # what the tools change in a tile


@dataclass(frozen=True)
class CellRef:
    tile: tuple[int, int]    # (col, row) of the ADT, as game/maps.py names tiles
    chunk: tuple[int, int]   # (cx, cy) 0..15 within the tile (MCNK IndexX, IndexY)
    cell: tuple[int, int]    # (x, y) 0..7 within the chunk (column, row)


@dataclass
class Change:
    label: str                                    # "exclude r=12 at (x, y)", for the undo list
    chunks: dict = field(default_factory=dict)    # tile -> MCNK indices whose grass must be placed again
    tables: bool = False                          # the ground-effect tables changed (every tile may re-place)
    notes: list = field(default_factory=list)     # what a reload could not take (a tile with unsaved edits)

    @property
    def empty(self) -> bool:
        return not self.chunks and not self.tables


@dataclass
class _Tile:
    """One tile's states: as loaded from the data, as last saved (the base of ``changed``), now."""

    game_path: str
    loaded: bytes                 # the bytes read from the data source
    source: tuple                 # (path on disk, is inside an archive) it came from
    fingerprint: tuple            # what the source looked like then (see _fingerprint)
    base: bytes                   # the bytes last loaded or saved
    raw: bytes                    # now
    tile: object                  # the AdtTile of ``raw``
    centres: np.ndarray           # (256, 8, 8, 2) world X, Y of every cell's centre


def _sha(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def _announces(method):
    """A public call that may change the session: it runs under the lock, and the Changes it made
    reach the subscribers once it has let go of the lock (in the order they were made)."""
    import functools

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        out: list = []
        try:
            with self._lock:
                self._depth += 1
                try:
                    return method(self, *args, **kwargs)
                finally:
                    self._depth -= 1
                    if self._depth == 0:
                        out, self._outbox = self._outbox, []
        finally:
            for change in out:
                for fn in list(self._listeners):
                    fn(change)

    return call


class EditSession:
    """The tools, history and saving of one map of ``data`` (a GameData, layered or not).

    ``placement``: the strategy :meth:`chunk_instances` places with ("client" or "coverage");
    ``constants``: its PlacementConstants; ``build``: the tables' layout when detection cannot tell;
    ``msb_first``: the tiles store doodadMapping MSB first (noggit3), kept on write."""

    def __init__(self, data, map_name: str, *, placement: str = "client", build: str | None = None,
                 constants=None, msb_first: bool = False, dbc_dir=None):
        from wowgrass.grass.placement import make_strategy

        self.data = data
        self.map_name = map_name
        self.placement = placement
        self.msb_first = bool(msb_first)
        self.strategy = make_strategy(placement, constants)
        self._model_table = None      # detail models' geometry for the draw capacity, read on demand
        from wowgrass.grass.bake import canonical_map

        self._placed_name = canonical_map(map_name)   # the map name a bake mixes into the random streams
        self._lock = threading.RLock()
        self._listeners: list = []
        self._outbox: list = []             # Changes made by the call under way (see _emit)
        self._depth = 0
        self._history = History()
        self._tiles: dict[tuple[int, int], _Tile] = {}
        self._placed: dict[tuple[int, int], object] = {}          # tile -> its whole placement
        self._chunk_placed: dict[tuple, object] = {}                 # (tile, MCNK index) -> Instances
        self._scan = None                          # the client's maps' effects per texture (suggestions)
        self._saved: dict[str, str] = {}          # file written by save -> sha256 (saving again over it is fine)
        self._mt = map_tiles(data, map_name, need_tiles=False)
        self._present = set(self._mt.tiles)
        self._tables_loaded: dict[str, bytes] = {}
        self._tables_source: dict[str, tuple] = {}
        self._tables_print: dict[str, tuple] = {}
        self._tables_from(data, dbc_dir)
        for p in TABLES:
            raw = data.read(p)
            self._tables_loaded[p] = raw
            self._tables_source[p], self._tables_print[p] = self._fingerprint(p, raw)
        self._tables_base = dict(self._tables_loaded)
        self._tables = dict(self._tables_loaded)
        self._build = build                 # forces the tables' layout (None: detected)
        self.catalog = self._make_catalog(self._tables)
        self.build = self.catalog.build if build is None else build

    @staticmethod
    def _tables_from(data, dbc_dir) -> None:
        """Let the tables of ``dbc_dir`` (as ``--dbc``; without it, for a loose folder lacking them,
        the nearest folder above holding them, as bake takes them) answer for the game paths: then
        they are loaded, checked for changes and saved in place like the rest."""
        from wowgrass.grass.bake import tables_above
        from wowgrass.paths import find_table

        if dbc_dir is None:
            if all(data.exists(p) for p in TABLES) or getattr(data, "archives", None):
                return
            dbc_dir = tables_above(data.root)
            if dbc_dir is None:
                raise UsageError(f"{data.root} has no {' nor '.join(p for p in TABLES if not data.exists(p))}: the "
                                 "session needs both ground-effect tables (give dbc_dir, or lay the folder over "
                                 "the client's Data: --data CLIENT --data PROJECT)")
        files = [find_table(Path(dbc_dir), p.rsplit("\\", 1)[-1]) for p in TABLES]
        if None in files:
            raise UsageError(f"{dbc_dir} has no GroundEffectTexture.dbc and GroundEffectDoodad.dbc (nor has its "
                             "DBFilesClient folder)")
        if not hasattr(data, "add_file"):
            raise UsageError("tables from a folder of their own need a GameData source")
        for p, f in zip(TABLES, files):
            data.add_file(p, f)

    # ------------------------------------------------------------------------------------ basics
    def subscribe(self, fn) -> None:
        """``fn(change)`` after every edit, undo, redo and reload, on the thread that made it (a
        watcher's for a reload) once the session's lock is free again."""
        self._listeners.append(fn)

    def _emit(self, change: Change) -> Change:
        """Queue ``change`` for the subscribers: they hear it when the public call that made it
        returns, outside the session's lock (a subscriber may then call the session from any
        thread, or wait for one that does, without a deadlock)."""
        self._outbox.append(change)
        return change

    @property
    def tiles(self) -> list[tuple[int, int]]:
        """The map's tiles present in the data (row-major)."""
        return list(self._mt.tiles)

    def _make_catalog(self, tables: dict) -> GroundEffectCatalog:
        return GroundEffectCatalog.from_dbc_bytes(tables[TEXTURE_PATH], tables[DOODAD_PATH], self._build,
                                                  hint=getattr(self.data, "build", None))

    def _fingerprint(self, game_path: str, raw: bytes) -> tuple[tuple, tuple]:
        """((file, inside an archive), fingerprint) of where ``game_path`` comes from: a loose file's
        content hash, an archive's size and modification time."""
        found = self.data.locate(game_path)
        if found is None:
            return (None, False), (None,)
        where, arc = found
        if arc is None:
            return (Path(where), False), ("sha256", _sha(raw))
        st = Path(where).stat()
        return (Path(where), True), ("stat", st.st_size, st.st_mtime_ns)

    def _changed_on_disk(self, game_path: str, source: tuple, fingerprint: tuple) -> tuple | None:
        """(file, why) when the file behind ``game_path`` is not as it was loaded, else None."""
        where, in_archive = source
        if where is None:
            return None
        try:
            if in_archive:
                st = Path(where).stat()
                if ("stat", st.st_size, st.st_mtime_ns) != fingerprint:
                    return where, f"the archive holding {game_path} changed on disk since it was loaded"
                return None
            if _sha(Path(where).read_bytes()) != fingerprint[1]:
                return where, "changed on disk since it was loaded"
        except FileNotFoundError:
            return where, "removed since it was loaded"
        return None

    # ------------------------------------------------------------------------------------ tiles
    def _state(self, tile) -> _Tile:
        key = (int(tile[0]), int(tile[1]))
        st = self._tiles.get(key)
        if st is None:
            if key not in self._present:
                raise UsageError(f"map {self.map_name!r} has no tile {key[0]},{key[1]} in the data")
            gp = adt_game_path(self.map_name, *key)
            raw = self.data.read(gp)
            t = read_tile(raw, gp, big_alpha=self._mt.big_alpha, msb_first=self.msb_first)
            source, fp = self._fingerprint(gp, raw)
            st = _Tile(gp, raw, source, fp, raw, raw, t, t.cell_centres())
            self._tiles[key] = st
        return st

    def has_read(self, tile) -> bool:
        """Whether ``tile`` is read already (asking for its cells then costs no file read)."""
        return (int(tile[0]), int(tile[1])) in self._tiles

    def tile(self, tile):
        """The current (edited) parsed tile (loads on demand)."""
        with self._lock:
            return self._state(tile).tile

    def tile_bytes(self, tile) -> bytes:
        with self._lock:
            return self._state(tile).raw

    def tables_bytes(self, game_path: str) -> bytes:
        """The current bytes of one of the ground-effect tables (``TABLES``)."""
        return self._tables[game_path]

    @staticmethod
    def tile_of(x: float, y: float) -> tuple[int, int]:
        return int(np.floor((ZEROPOINT - y) / TILE_SIZE)), int(np.floor((ZEROPOINT - x) / TILE_SIZE))

    def cell_at(self, x: float, y: float, grid=None) -> CellRef | None:
        """The cell under world (X, Y), None off the map's tiles. ``grid``: the same tile as the
        view already holds it (its chunks' positions and indices, which edits never change), so
        that a pick or the cursor over a tile the session has not read yet does not wait for it
        (reading a tile costs 14-16 ms: a frame)."""
        key = self.tile_of(x, y)
        if key not in self._present:
            return None
        if grid is not None:
            t = grid
        else:
            with self._lock:
                t = self._state(key).tile
        idx = int(t.chunk_index_at(x, y))
        if idx < 0:
            return None
        pos = t.positions[idx]
        r = int(np.clip(np.floor((pos[0] - x) / UNIT_SIZE), 0, 7))
        c = int(np.clip(np.floor((pos[1] - y) / UNIT_SIZE), 0, 7))
        ix, iy = (int(v) for v in t.index_xy[idx])
        return CellRef(key, (ix, iy), (c, r))

    def chunk_index(self, ref: CellRef) -> int:
        """The MCNK index of ``ref``'s chunk in its tile's arrays."""
        t = self.tile(ref.tile)
        hit = np.flatnonzero((t.index_xy[:, 0] == ref.chunk[0]) & (t.index_xy[:, 1] == ref.chunk[1]))
        return int(hit[0]) if hit.size else ref.chunk[1] * 16 + ref.chunk[0]

    def cell_info(self, ref: CellRef) -> dict:
        """What a pick shows of one cell: its chunk's layers (texture, effect id, the layer's mean
        alpha over the cell), the doodadMapping layer, the noEffectDoodad bit, hole, the effect set
        the cell takes and the grass placed in it."""
        with self._lock:
            t = self.tile(ref.tile)
            idx = self.chunk_index(ref)
            c, r = ref.cell
            n = int(t.n_layers[idx])
            layers = []
            for k in range(n):
                eid = int(t.layer_effect[idx, k])
                alpha = 1.0 if k == 0 else float(t.alpha[idx, k, r * 8:(r + 1) * 8, c * 8:(c + 1) * 8].mean()) / 255
                layers.append({"index": k, "texture": t.textures[int(t.layer_texture[idx, k])], "effect_id": eid,
                               "alpha_mean": round(alpha, 4)})
            dm = int(t.doodad_mapping[idx, r, c])
            effect = None
            if dm < n:
                eid = int(t.layer_effect[idx, dm])
                row = self.catalog.row(eid)
                effect = {"id": eid, "density": None, "models": [], "weights": None}
                if row is not None:
                    effect.update(density=row["density"], models=row["models"], weights=row["weights"])
            inst = self.chunk_instances(ref.tile, idx)
            sel = np.flatnonzero(inst.cell == r * 8 + c)
            grass = [{"model": inst.models[int(inst.model[i])], "x": float(inst.pos[i, 0]), "y": float(inst.pos[i, 1]),
                      "z": float(inst.pos[i, 2]), "yaw": float(inst.yaw[i]), "scale": float(inst.scale[i])}
                     for i in sel.tolist()]
            return {"tile": list(ref.tile), "chunk": list(ref.chunk), "cell": list(ref.cell), "mcnk_index": idx,
                    "layers": layers, "doodad_mapping": dm, "no_effect_doodad": bool(t.no_effect_doodad[idx, r, c]),
                    "hole": bool(t.hole_cells()[idx, r, c]), "effect": effect, "grass": grass}

    # ------------------------------------------------------------------------------------ brushes
    def _brush(self, x: float, y: float, radius: float) -> dict:
        """{tile: (256, 8, 8) bool} of the cells whose centre lies within ``radius`` of (x, y)."""
        radius = float(radius)
        if not radius >= 0:
            raise UsageError(f"brush radius {radius}: yards, 0 or more")
        c0, r0 = self.tile_of(x + radius, y + radius)
        c1, r1 = self.tile_of(x - radius, y - radius)
        out = {}
        for col in range(c0, c1 + 1):
            for row in range(r0, r1 + 1):
                if (col, row) not in self._present:
                    continue
                cen = self._state((col, row)).centres
                d2 = (cen[..., 0] - x) ** 2 + (cen[..., 1] - y) ** 2
                m = d2 <= radius * radius
                if m.any():
                    out[(col, row)] = m
        return out

    def _apply(self, label: str, edits: dict, *, tables: dict | None = None) -> Change:
        """Record and apply ``edits`` {tile: (new raw, new AdtTile, changed chunk indices)} and the
        new ``tables`` {path: bytes}; an edit changing nothing records nothing."""
        step = Step(label)
        change = Change(label)
        for key, (raw, t, chunks) in edits.items():
            st = self._tiles[key]
            if raw == st.raw:
                continue
            names = [n for n in _FIELDS if getattr(st.tile, n) is not getattr(t, n)]
            step.tiles[key] = TilePatch.between(st.raw, raw, {n: getattr(st.tile, n) for n in names},
                                                {n: getattr(t, n) for n in names})
            change.chunks[key] = set(int(i) for i in chunks)
            st.raw, st.tile = raw, t
            self._forget_placed(key, change.chunks[key])
        if tables is not None and tables != self._tables:
            new = dict(self._tables)
            new.update(tables)
            step.tables = ((dict(self._tables), self.catalog), (new, self._make_catalog(new)))
            self._tables, self.catalog = step.tables[1]
            self._forget_placed(None)
            change.tables = True
        if change.empty:
            return change
        self._history.push(step)
        return self._emit(change)

    def _fields(self, key, **values):
        """(raw, tile, changed chunks) for new field arrays of a tile (patch_fields' names)."""
        st = self._tiles[key]
        raw, _counts = patch_fields(st.raw, st.tile, **values)
        names = {"effect": "layer_effect", "doodad_mapping": "doodad_mapping", "no_effect": "no_effect_doodad"}
        old = {k: getattr(st.tile, names[k]) for k in values}
        repl = {names[k]: np.asarray(v).astype(old[k].dtype).reshape(old[k].shape) for k, v in values.items()}
        chunks = set()
        for k, v in repl.items():
            chunks |= set(np.flatnonzero((v != getattr(st.tile, k)).reshape(256, -1).any(axis=1)).tolist())
        return raw, dataclasses.replace(st.tile, **repl), chunks

    @_announces
    def exclude(self, x: float, y: float, radius: float, *, clear: bool = False) -> Change:
        """Set (or ``clear``) noEffectDoodad in the cells under the brush."""
        with self._lock:
            edits = {}
            for key, m in self._brush(x, y, radius).items():
                t = self._tiles[key].tile
                new = (t.no_effect_doodad & ~m) if clear else (t.no_effect_doodad | m)
                edits[key] = self._fields(key, no_effect=new)
            what = "clear exclusion" if clear else "exclude"
            return self._apply(f"{what} r={radius:g} at ({x:.1f}, {y:.1f})", edits)

    @_announces
    def paint_mapping(self, x: float, y: float, radius: float, layer: int | None) -> Change:
        """Set the doodadMapping of the cells under the brush to ``layer`` (cells of chunks without
        that layer keep theirs), or with None to the layer most visible in each cell where the
        mapping names another (what ``effects remap --margin 0`` does in those cells)."""
        if layer is not None and not 0 <= int(layer) <= 3:
            raise UsageError(f"layer {layer}: 0 .. 3")
        with self._lock:
            edits = {}
            for key, m in self._brush(x, y, radius).items():
                t = self._tiles[key].tile
                if layer is None:    # as `effects remap --margin 0` does in these cells
                    shares = visible_shares(t)
                    target = best_layers(t, shares)
                    sel = m & stale_cells(t, 0.0, shares) & (target != t.doodad_mapping)
                else:
                    target = np.full((256, 8, 8), int(layer), np.uint8)
                    sel = m & (t.n_layers[:, None, None] > int(layer))
                edits[key] = self._fields(key, doodad_mapping=np.where(sel, target, t.doodad_mapping))
            what = "remap" if layer is None else f"map layer {layer}"
            return self._apply(f"{what} r={radius:g} at ({x:.1f}, {y:.1f})", edits)

    @_announces
    def assign_texture(self, texture: str, effect_id: int, *, tile=None, at=None,
                       only_unassigned: bool = False) -> Change:
        """Give ``effect_id`` to the layers of the textures ``texture`` matches (a glob, as
        ``effects assign --texture``): over the map (``tile`` and ``at`` None), one ``tile``, or the
        chunks under the brush ``at=(x, y, radius)``. An id the tables (with previews) lack is refused."""
        eid = int(effect_id)
        if not 0 <= eid <= 0xFFFFFFFF:
            raise UsageError(f"effect {eid}: effect ids are 0 .. 4294967295")
        with self._lock:
            if eid not in NO_EFFECT_IDS and self.catalog.row(eid) is None:
                raise UsageError(f"effect {eid} has no GroundEffectTexture row (preview or add a set first)")
            if at is not None:
                scope = {k: m.reshape(256, -1).any(axis=1) for k, m in self._brush(*at).items()}
                where = f"r={at[2]:g} at ({at[0]:.1f}, {at[1]:.1f})"
            elif tile is not None:
                self._state(tile)
                scope = {(int(tile[0]), int(tile[1])): np.ones(256, bool)}
                where = f"tile {tile[0]},{tile[1]}"
            else:
                scope = {k: np.ones(256, bool) for k in self._mt.tiles}
                where = "the map"
            edits, seen, matched = {}, set(), False
            had = set(self._tiles)
            for key, chunks in scope.items():
                t = self._state(key).tile
                seen.update(t.textures)
                texs = match_textures(t.textures, texture)
                matched |= bool(texs)
                exists = np.arange(4)[None, :] < t.n_layers[:, None]
                sel = exists & np.isin(t.layer_texture, texs) & chunks[:, None]
                if only_unassigned:
                    sel &= np.isin(t.layer_effect, NO_EFFECT_IDS)
                if sel.any():
                    new = np.where(sel, eid, t.layer_effect.astype(np.int64))
                    edits[key] = self._fields(key, effect=new)
                elif key not in had:      # a map-wide pass keeps only the tiles it changed
                    del self._tiles[key]
            if not matched and scope:
                near = closest_textures(seen, texture)
                raise UsageError(f"no texture in {where} matches {texture!r}" + (f"; closest: {', '.join(near)}"
                                                                                 if near else ""))
            return self._apply(f"assign {texture} -> {eid} over {where}", edits)

    # ------------------------------------------------------------------------------------ tables
    @_announces
    def preview_set(self, models: list[str], weights: list[int] | None, density: int, *,
                    effect_id: int | None = None) -> int:
        """A new effect set (or, with an existing ``effect_id``, new values for that row) applied to
        the session's tables and catalogue; returns its id. Nothing is written until :meth:`save`;
        an undo takes it back. ``weights``: 3.3.5 only (None: the bag shared evenly)."""
        from wowgrass.edit.effect_sets import add_effect_set

        with self._lock:
            tex, dood = self._tables[TEXTURE_PATH], self._tables[DOODAD_PATH]
            hint = getattr(self.data, "build", None)
            exists = effect_id is not None and self.catalog.row(int(effect_id)) is not None
            if not self.catalog.has_weights:
                weights = None
            new_tex, new_dood, new_id = add_effect_set(tex, dood, self._build, doodads=models, weights=weights,
                                                       density=density, id=None if exists else effect_id, hint=hint)
            label = f"new set {new_id}"
            if exists:
                new_tex = _replace_row(tex, new_tex, int(effect_id), hint, self._build)
                new_id, label = int(effect_id), f"change set {effect_id}"
            chunks = {}
            for key, st in self._tiles.items():
                used = (st.tile.layer_effect == np.uint32(new_id)).any(axis=1)
                if used.any():
                    chunks[key] = np.flatnonzero(used)
            change = self._apply(label, {}, tables={TEXTURE_PATH: new_tex, DOODAD_PATH: new_dood})
            for key, idx in chunks.items():
                change.chunks.setdefault(key, set()).update(int(i) for i in idx)
            return new_id

    # ------------------------------------------------------------------------------------ suggestions
    def suggestions(self, texture: str, n: int = 5, *, progress=None) -> list[dict]:
        """For a texture: the effect ids the client's maps give it most often, best first, as
        ``{"effect_id", "layer_count", "has_row"}`` (``has_row``: the session's tables have it, so
        :meth:`assign_texture` takes it). The first call scans the client's maps (seconds; cached
        in the cache folder after): call it off the frame's thread."""
        from wowgrass.edit.suggest import client_effects

        scan = self._scan
        if scan is None:
            scan = self._scan = client_effects(self.data, progress=progress)
        return [{"effect_id": e, "layer_count": c, "has_row": self.catalog.row(e) is not None}
                for e, c in scan.suggest(texture, n)]

    def unassigned_textures(self) -> dict[str, int]:
        """Textures with layers carrying no effect id in the tiles loaded so far: {texture: layers}."""
        out: dict[str, int] = {}
        with self._lock:
            for st in self._tiles.values():
                t = st.tile
                exists = np.arange(4)[None, :] < t.n_layers[:, None]
                bare = exists & np.isin(t.layer_effect, NO_EFFECT_IDS)
                for i, n in zip(*np.unique(t.layer_texture[bare], return_counts=True)):
                    out[t.textures[int(i)]] = out.get(t.textures[int(i)], 0) + int(n)
        return out

    # ------------------------------------------------------------------------------------ history
    def _restore(self, step: Step, which: int) -> Change:
        change = Change(("undo " if which == 0 else "redo ") + step.label)
        for key, patch in step.tiles.items():
            st = self._tiles[key]
            before = st.tile
            raw = patch.apply(st.raw, which)
            t = dataclasses.replace(before, **patch.fields(which)) if patch.fields(which) else before
            st.raw, st.tile = raw, t
            diff = set()
            for name in _FIELDS:
                a, b = getattr(before, name), getattr(t, name)
                diff |= set(np.flatnonzero((a != b).reshape(256, -1).any(axis=1)).tolist())
            change.chunks[key] = diff
            self._forget_placed(key, diff)
        if step.tables is not None:
            self._tables, self.catalog = step.tables[which]
            self._tables = dict(self._tables)
            self._forget_placed(None)
            change.tables = True
        return self._emit(change)

    @contextlib.contextmanager
    def stroke(self, label: str | None = None):
        """Every edit made inside ``with session.stroke("exclude r=12"):`` becomes one undo step (a
        brush stroke's dabs); each dab still reaches the subscribers as it lands."""
        with self._lock:
            start = self._history.done_count
        try:
            yield self
        finally:
            with self._lock:
                n = self._history.done_count - start
                if n > 0:
                    first = self._history.labels[-n]
                    self._history.merge_last(n, label or (first if n == 1 else f"{first} (+{n - 1} dabs)"))

    @_announces
    def undo(self) -> Change | None:
        with self._lock:
            step = self._history.undo()
            return None if step is None else self._restore(step, 0)

    @_announces
    def redo(self) -> Change | None:
        with self._lock:
            step = self._history.redo()
            return None if step is None else self._restore(step, 1)

    @property
    def can_undo(self) -> bool:
        return self._history.can_undo

    @property
    def can_redo(self) -> bool:
        return self._history.can_redo

    @property
    def history(self) -> list[str]:
        """The labels of the steps that can be undone, oldest first."""
        return self._history.labels

    @property
    def changed_tiles(self) -> list[tuple[int, int]]:
        """Tiles whose bytes differ from those last loaded or saved (row-major)."""
        with self._lock:
            return sorted((k for k, st in self._tiles.items() if st.raw != st.base), key=lambda t: (t[1], t[0]))

    @property
    def changed_tables(self) -> list[str]:
        with self._lock:
            return [p for p in TABLES if self._tables[p] != self._tables_base[p]]

    # ------------------------------------------------------------------------------------ grass
    def tile_instances(self, tile):
        """The live placement of a whole tile (placed again after an edit, kept until the next)."""
        with self._lock:
            key = (int(tile[0]), int(tile[1]))
            inst = self._placed.get(key)
            if inst is None:
                inst = self._place(self._state(key).tile)
                self._placed[key] = inst
            return inst

    def _place(self, tile):
        """The strategy's placement of a tile, less what the client's draw capacity drops (as a
        client bake of the saved tile keeps it: grass/bake.py)."""
        from wowgrass.grass.bake import ModelTable, client_draw_capacity

        if self._model_table is None:
            self._model_table = ModelTable(self.data.read)
        inst = self.strategy.place(tile, self.catalog, map_name=self._placed_name)
        return client_draw_capacity(inst, self.catalog, self.strategy, self._model_table)[0]

    def place_chunks(self, tile, chunk_indices) -> dict:
        """{MCNK index: Instances} of some chunks of a tile, placed now (what a viewer re-uploads after
        a Change). Only those chunks are placed: the tile is placed with every other chunk's layers
        hidden, which gives each chunk exactly its part of the whole tile's placement (a chunk's grass
        depends on its own data only; tests compare), for a fraction of the time."""
        from wowgrass.grass.placement import Instances

        want = sorted({int(i) for i in chunk_indices})
        with self._lock:
            key = (int(tile[0]), int(tile[1]))
            full = self._placed.get(key)
            out = {}
            todo = []
            for i in want:
                hit = self._chunk_placed.get((key, i))
                if hit is not None:
                    out[i] = hit
                elif full is None:
                    todo.append(i)
            if full is None and todo:
                t = self._state(key).tile
                keep = np.zeros(256, bool)
                keep[todo] = True
                masked = dataclasses.replace(t, n_layers=np.where(keep, t.n_layers, 0).astype(t.n_layers.dtype))
                full_part = self._place(masked)
            else:
                full_part = full
            if full_part is not None:
                order = np.argsort(full_part.chunk, kind="stable")
                chunks = full_part.chunk[order]
                for i in (want if full is not None else todo):
                    if i in out:
                        continue
                    lo, hi = np.searchsorted(chunks, i), np.searchsorted(chunks, i, side="right")
                    sel = order[lo:hi]
                    inst = Instances(full_part.model[sel], np.ascontiguousarray(full_part.pos[sel]), full_part.yaw[sel],
                                     full_part.scale[sel], full_part.chunk[sel], full_part.cell[sel], full_part.models)
                    self._chunk_placed[(key, i)] = out[i] = inst
            return out

    def chunk_instances(self, tile, chunk_index: int):
        """The grass of one chunk as grass/placement.py's Instances: the placement a bake of the
        saved tile gives (the same strategy, tables and bytes)."""
        return self.place_chunks(tile, [chunk_index])[int(chunk_index)]

    def _forget_placed(self, key, chunks=None) -> None:
        """Drop the placements an edit made stale: a tile's chunks (all with None), or everything
        (key None: the tables changed)."""
        if key is None:
            self._placed.clear()
            self._chunk_placed.clear()
            return
        self._placed.pop(key, None)
        for i in (range(256) if chunks is None else chunks):
            self._chunk_placed.pop((key, int(i)), None)

    # ------------------------------------------------------------------------------------ save
    def _pending(self) -> dict[str, bytes]:
        out = {st.game_path: st.raw for _k, st in sorted(self._tiles.items(), key=lambda kv: (kv[0][1], kv[0][0]))
               if st.raw != st.base}
        out.update({p: self._tables[p] for p in self.changed_tables})
        return out

    def conflicts(self) -> list[str]:
        """The files behind the session's changed tiles and tables that changed on disk since they
        were loaded (another editor saved them): ``PATH: why`` each."""
        return [f"{p}: {why}" for p, why in self._conflicts()]

    def _conflicts(self) -> list[tuple]:
        with self._lock:
            out = []
            for st in self._tiles.values():
                if st.raw != st.base:
                    why = self._changed_on_disk(st.game_path, st.source, st.fingerprint)
                    if why:
                        out.append(why)
            for p in self.changed_tables:
                why = self._changed_on_disk(p, self._tables_source[p], self._tables_print[p])
                if why:
                    out.append(why)
            return out

    def save(self, out_dir=None, *, in_place: bool = False, backups: bool = True) -> dict:
        """Write the changed tiles and tables: under ``out_dir`` in the client's layout (as
        ``effects ... -o DIR``), or ``in_place`` over the loose files they came from (a backup
        ``<name>.bak`` kept beside each unless ``backups`` is False; with layered data a file that
        came from an archive goes into the top loose folder). Only the bytes the edits touched
        differ. All files or none; a file changed on disk since it was loaded is an OutputError
        naming it, and nothing is written."""
        from wowgrass.edit.adt_edit import BACKUP_SUFFIX
        from wowgrass.edit.batch import base_data

        with self._lock:
            if (out_dir is None) == (not in_place):
                raise UsageError("give out_dir or in_place=True (not both)")
            files = self._pending()
            if not files:
                return {"files": [], "tiles": [], "tables": [], "changed_byte_count": 0, "backups": []}
            problems = self._conflicts()
            if out_dir is not None:
                for gp in files:
                    dest = Path(out_dir) / disk_path(gp)
                    if dest.is_file() and self._saved.get(str(dest)) != _sha(dest.read_bytes()) and \
                            not self._is_source(gp, dest):
                        problems.append((dest, "exists and is not what this session loaded or saved"))
            if problems:
                more = "".join(f"; {p}: {why}" for p, why in problems[1:])
                raise OutputError(problems[0][0], None, f"{problems[0][1]}{more}; nothing written (reload, or save "
                                  "elsewhere)")
            data = base_data(self.data)
            tops = [f for f in files if not self._loose(gp=f)] if in_place else []
            layers = list(getattr(data, "layers", ()) or ())
            if tops and not layers:
                where = self.data.locate(tops[0])
                raise UsageError(f"{tops[0]} is inside {where[0] if where else 'no file'}: only loose files are saved "
                                 "in place; save to a folder (and build a patch) instead")
            before = {}
            if in_place:
                for gp in files:
                    if gp not in tops:
                        dest = Path(self.data.locate(gp)[0])
                        before[gp] = dest.with_name(dest.name + BACKUP_SUFFIX).exists()
            written: list[Path] = []
            if tops:   # archived files of layered data: new files in the top loose folder
                written += write_edited({_layer_path(Path(layers[-1]), gp): files[gp] for gp in tops},
                                        Path(layers[-1]), data=None)
            try:
                rest = {gp: raw for gp, raw in files.items() if gp not in tops}
                if in_place:
                    written += write_edited(rest, None, in_place=True, data=data)
                else:
                    written += write_edited(rest, out_dir, data=data)
            except BaseException:
                for p in written:   # the new files of the first part: all or none
                    Path(p).unlink(missing_ok=True)
                raise
            made_backups = []
            for gp, had in before.items():
                dest = Path(self.data.locate(gp)[0])
                b = dest.with_name(dest.name + BACKUP_SUFFIX)
                if not had and not backups:
                    b.unlink(missing_ok=True)
                elif not had:
                    made_backups.append(str(b))
            changed = 0
            for gp, raw in files.items():
                old = self._tables_base[gp] if gp in self._tables_base else self._tile_by_path(gp).base
                changed += _bytes_differing(old, raw)
            for p in written:
                self._saved[str(p)] = _sha(Path(p).read_bytes())
            tiles = [k for k, st in self._tiles.items() if st.game_path in files]
            for k in tiles:
                st = self._tiles[k]
                st.base = st.raw
                if in_place:
                    if hasattr(self.data, "refresh"):
                        self.data.refresh()
                    st.source, st.fingerprint = self._fingerprint(st.game_path, st.raw)
            tables = [p for p in TABLES if p in files]
            for p in tables:
                self._tables_base[p] = self._tables[p]
                if in_place:
                    if hasattr(self.data, "refresh"):
                        self.data.refresh()
                    self._tables_source[p], self._tables_print[p] = self._fingerprint(p, self._tables[p])
            return {"files": [str(p) for p in written], "tiles": [list(k) for k in sorted(tiles)],
                    "tables": tables, "changed_byte_count": changed, "backups": made_backups}

    def _tile_by_path(self, gp: str) -> _Tile:
        return next(st for st in self._tiles.values() if st.game_path == gp)

    def _loose(self, gp: str) -> bool:
        found = self.data.locate(gp)
        return found is not None and found[1] is None

    def _is_source(self, gp: str, dest: Path) -> bool:
        found = self.data.locate(gp)
        try:
            return found is not None and found[1] is None and Path(found[0]).resolve() == dest.resolve()
        except OSError:
            return False

    def build_patch(self, out_path, *, force: bool = False, locale: str | None = None) -> dict:
        """A patch MPQ of every tile and table that differs from what was loaded (saved or not),
        through :func:`wowgrass.edit.patch.build_patch` (checked by reading it back)."""
        import tempfile

        from wowgrass.edit.patch import build_patch

        with self._lock:
            files = {st.game_path: st.raw for st in self._tiles.values() if st.raw != st.loaded}
            files.update({p: self._tables[p] for p in TABLES if self._tables[p] != self._tables_loaded[p]})
            if not files:
                raise UsageError("nothing differs from the data: no patch to build")
        with tempfile.TemporaryDirectory(prefix=".wowgrass-patch-") as tmp:
            write_edited(files, tmp)
            result = build_patch(tmp, out_path, build=self.catalog.build if self.catalog.build != "1.10" else None,
                                 locale=locale, force=force)
        return result.to_dict()

    # ------------------------------------------------------------------------------------ reload
    def watch(self, *, poll: bool | None = None, debounce_ms: int = 150):
        """A started :class:`~wowgrass.workbench.watch.FileWatcher` over the loose folders of the data
        (its layers, or a loose root) calling :meth:`reload`; its Changes reach the subscribers on the
        watcher's thread (a window hands them to its frame). ``stop()`` it when done."""
        from wowgrass.workbench.watch import FileWatcher, watched_folders

        folders = watched_folders(self.data)
        if not folders:
            raise UsageError(f"{self.data.root} is a client's MPQ chain: nothing there is saved as loose files; lay "
                             "the folder another program saves into over it (--data CLIENT --data PROJECT)")
        w = FileWatcher(folders, self.reload, poll=poll, debounce_ms=debounce_ms)
        w.start()
        return w

    @_announces
    def reload(self, paths) -> Change:
        """Take files changed on disk (another editor saved them): each loaded tile, the WDT or a
        table whose file is among ``paths`` is read again (its history forgotten); a tile with
        unsaved edits keeps them (a note says so, and :meth:`save` will refuse it); a new tile of
        the map joins it."""
        wanted = {Path(p).resolve() for p in paths}
        with self._lock:
            if hasattr(self.data, "refresh"):
                self.data.refresh()
            change = Change("reload")

            def hit(gp):
                found = self.data.locate(gp)
                return found is not None and Path(found[0]).resolve() in wanted

            if hit(wdt_game_path(self.map_name)) or any(Path(p).suffix.lower() in (".adt", ".wdt") for p in wanted):
                old = set(self._present)
                self._mt = map_tiles(self.data, self.map_name, need_tiles=False)
                self._present = set(self._mt.tiles)
                for key in self._present - old:
                    change.chunks[key] = set(range(256))
            for key, st in list(self._tiles.items()):
                if key not in self._present:
                    del self._tiles[key]
                    self._forget_placed(key)
                    self._history.forget(key)
                    change.chunks[key] = set(range(256))
                    continue
                if not hit(st.game_path):
                    continue
                if st.raw != st.base:
                    change.notes.append(f"{st.game_path} changed on disk while it has unsaved edits: kept the edits "
                                        "(saving it is refused; undo them to take the new file)")
                    continue
                raw = self.data.read(st.game_path)
                if raw == st.raw:
                    st.source, st.fingerprint = self._fingerprint(st.game_path, raw)
                    continue
                del self._tiles[key]
                self._forget_placed(key)
                self._history.forget(key)
                self._state(key)
                change.chunks[key] = set(range(256))
            reread = [p for p in TABLES if hit(p)]
            if reread:
                if self.changed_tables:
                    change.notes.append("the ground-effect tables changed on disk while the session has unsaved "
                                        "table edits: kept the edits")
                else:
                    new = {p: self.data.read(p) for p in TABLES}
                    for p, raw in new.items():
                        self._tables_source[p], self._tables_print[p] = self._fingerprint(p, raw)
                    if new != self._tables:     # not just this session's own save coming back
                        for p, raw in new.items():
                            self._tables_loaded[p] = self._tables_base[p] = self._tables[p] = raw
                        self.catalog = self._make_catalog(self._tables)
                        self._forget_placed(None)
                        self._history.forget(tables=True)
                        change.tables = True
            return self._emit(change) if not change.empty or change.notes else change


def _layer_path(folder: Path, game_path: str) -> str:
    """Where a file goes in a loose folder: the client's layout, except that a folder which *is* a
    map folder (its tiles at its top, no World folder) takes the map's files at its top, so they
    keep answering for their game paths (game.data.loose_index)."""
    parts = game_path.replace("/", "\\").split("\\")
    is_map_folder = not any(p.is_dir() and p.name.lower() == "world" for p in folder.iterdir()) and any(
        p.suffix.lower() in (".adt", ".wdt") for p in folder.iterdir() if p.is_file())
    if is_map_folder and len(parts) == 4 and parts[0].lower() == "world" and parts[1].lower() == "maps":
        return parts[3]
    return game_path


def _bytes_differing(a: bytes, b: bytes) -> int:
    if len(a) != len(b):
        return max(len(a), len(b))
    return int(np.count_nonzero(np.frombuffer(a, np.uint8) != np.frombuffer(b, np.uint8)))


def _replace_row(texture_bytes: bytes, appended: bytes, effect_id: int, hint, build=None) -> bytes:
    """``texture_bytes`` with row ``effect_id`` given the doodads, weights and density of the row
    :func:`add_effect_set` appended in ``appended`` (its doodad rows were made there); every other
    byte kept."""
    from wowgrass.edit.effect_sets import _read, table_build
    from wowgrass.formats.dbc import GROUND_EFFECT_TEXTURE, write_dbc

    short = table_build(texture_bytes, build, hint)
    old = _read(texture_bytes, TEXTURE_PATH, GROUND_EFFECT_TEXTURE, short)
    new = _read(appended, TEXTURE_PATH, GROUND_EFFECT_TEXTURE, short)
    rec = np.array(old.records)
    at = np.flatnonzero((rec["ID"].astype(np.int64) & 0xFFFFFFFF) == effect_id)
    if not at.size:
        raise UsageError(f"GroundEffectTexture has no row {effect_id}")
    src = new.records[-1]
    for name in ("DoodadID", "DoodadWeight", "Density"):
        if name in rec.dtype.names:
            rec[name][at[0]] = src[name]
    return write_dbc(rec, bytes(old.string_block))


__all__ = ["TABLES", "CellRef", "Change", "EditSession"]
