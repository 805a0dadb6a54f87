"""An edit session over one map: the workbench's tools as library calls, with undo and redo, the
grass placed again per chunk as edits land, and saving only the bytes the edits touched.

Every tool works on the session's copy of a tile's bytes through the edit layer's primitive
(:func:`wowgrass.edit.adt_edit.patch_fields`: new values written over the old bytes, nothing
re-serialised), so a saved tile is byte for byte what the batch commands (``effects exclude``,
``assign``, ``remap``) write for the same cells. Tables change through
:mod:`wowgrass.edit.effect_sets` (rows appended, or one row's values replaced). ``save`` writes
The session is the one source of truth and says what changed: every edit, undo, redo and reload
is a :class:`Change` its subscribers hear (the placement cache, placing.py, at once under its lock;
the rest once it lets go). What reaches the disk (save, patch, reload, conflicts) is disk.py's
:class:`~wowgrass.workbench.disk.SessionFiles`, which this module does not import: it reads and
writes through the public names below (``files_since_saved``, ``mark_saved``, ``take_reloaded``).

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
    best_layers, closest_textures, match_textures, patch_fields, read_tile, stale_cells, visible_shares,
)
from wowgrass.errors import UsageError
from wowgrass.formats.adt import NO_EFFECT_IDS, UNIT_SIZE
from wowgrass.game import coords
from wowgrass.game.effects import DOODAD_PATH, TEXTURE_PATH, GroundEffectCatalog
from wowgrass.game.maps import adt_game_path, map_tiles
from wowgrass.workbench.history import History, Step, TilePatch
from wowgrass.workbench.placing import PlacementCache

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
    source: str = "edit"                          # "edit", "undo", "redo" or "reload" (files read again from disk)

    @property
    def empty(self) -> bool:
        return not self.chunks and not self.tables


@dataclass
class _Tile:
    """One tile's states: as loaded from the data, as last saved (the base of ``changed``), now."""

    game_path: str
    loaded: bytes                 # the bytes read from the data source
    source: tuple                 # (path on disk, is inside an archive) it came from
    fingerprint: tuple            # what the source looked like then (see fingerprint)
    base: bytes                   # the bytes last loaded or saved
    raw: bytes                    # now
    tile: object                  # the AdtTile of ``raw``
    centres: np.ndarray           # (256, 8, 8, 2) world X, Y of every cell's centre
    version: int = 0              # bumped by every change of ``raw`` (a result computed from an older one is stale)


def _sha(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def fingerprint(data, game_path: str, raw: bytes) -> tuple[tuple, tuple]:
    """((file, inside an archive), fingerprint) of where ``game_path`` comes from in ``data``: a
    loose file's content hash, an archive's size and modification time (what disk.py compares to
    find a file another program changed)."""
    found = data.locate(game_path)
    if found is None:
        return (None, False), (None,)
    where, arc = found
    if arc is None:
        return (Path(where), False), ("sha256", _sha(raw))
    st = Path(where).stat()
    return (Path(where), True), ("stat", st.st_size, st.st_mtime_ns)


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
        from wowgrass.grass.bake import canonical_map

        self.placement_map_name = canonical_map(map_name)   # the map name a bake mixes into the random streams
        self._lock = threading.RLock()
        self._listeners: list = []
        self._at_once: list = []            # subscribers hearing a change under the lock, as it is made
        self._outbox: list = []             # Changes made by the call under way (see _emit)
        self._depth = 0
        self._history = History()
        self._tiles: dict[tuple[int, int], _Tile] = {}
        self._scan = None                          # the client's maps' effects per texture (suggestions)
        self.tables_version = 0                    # bumped by every change of the tables
        self._mt = map_tiles(data, map_name, need_tiles=False)
        self._present = set(self._mt.tiles)
        self._tables_loaded: dict[str, bytes] = {}
        self._tables_source: dict[str, tuple] = {}
        self._tables_print: dict[str, tuple] = {}
        self._tables_from(data, dbc_dir)
        for p in TABLES:
            raw = data.read(p)
            self._tables_loaded[p] = raw
            self._tables_source[p], self._tables_print[p] = fingerprint(data, p, raw)
        self._tables_base = dict(self._tables_loaded)
        self._tables = dict(self._tables_loaded)
        self._build = build                 # forces the tables' layout (None: detected)
        self.catalog = self._make_catalog(self._tables)
        self.build = self.catalog.build if build is None else build
        self.grass = PlacementCache(self)  # subscribes: a change drops the placements it made stale

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
    def subscribe(self, fn, *, at_once: bool = False) -> None:
        """``fn(change)`` after every edit, undo, redo and reload, in the order they were made, on
        the thread that made it (a watcher's for a reload) once the session's lock is free again.
        ``at_once``: as the change is made, under the lock (state derived from the session that must
        never be stale, as the placement cache: such a subscriber must not wait for another thread)."""
        (self._at_once if at_once else self._listeners).append(fn)

    def unsubscribe(self, fn) -> None:
        for group in (self._at_once, self._listeners):
            if fn in group:
                group.remove(fn)

    @property
    def lock(self):
        """The session's lock (re-entrant): held while it changes; the placement cache places under it."""
        return self._lock

    def _emit(self, change: Change) -> Change:
        """``change`` to the at-once subscribers now, and queued for the others: they hear it when
        the public call that made it returns, outside the session's lock (a subscriber may then call
        the session from any thread, or wait for one that does, without a deadlock)."""
        for key in change.chunks or {}:
            st = self._tiles.get(key)
            if st is not None:
                st.version += 1
        if change.tables:
            self.tables_version += 1
        for fn in list(self._at_once):
            fn(change)
        self._outbox.append(change)
        return change

    @property
    def tiles(self) -> list[tuple[int, int]]:
        """The map's tiles present in the data (row-major)."""
        return list(self._mt.tiles)

    def _make_catalog(self, tables: dict) -> GroundEffectCatalog:
        return GroundEffectCatalog.from_dbc_bytes(tables[TEXTURE_PATH], tables[DOODAD_PATH], self._build,
                                                  hint=getattr(self.data, "build", None))

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
            source, fp = fingerprint(self.data, gp, raw)
            st = _Tile(gp, raw, source, fp, raw, raw, t, t.cell_centres())
            self._tiles[key] = st
        return st

    def take_read(self, tile, raw: bytes, parsed, centres) -> bool:
        """Tile ``tile`` as another process read and parsed it from this session's data (the
        workbench's worker processes: no parsing under this process's GIL): kept where the
        session has not read it meanwhile. True if kept."""
        key = (int(tile[0]), int(tile[1]))
        if key not in self._present:
            return False
        gp = adt_game_path(self.map_name, *key)
        source, fp = fingerprint(self.data, gp, raw)
        with self._lock:
            if key in self._tiles:
                return False
            self._tiles[key] = _Tile(gp, raw, source, fp, raw, raw, parsed, centres)
            return True

    def has_read(self, tile) -> bool:
        """Whether ``tile`` is read already (asking for its cells then costs no file read)."""
        return (int(tile[0]), int(tile[1])) in self._tiles

    def tile_version(self, tile) -> int:
        """How many changes the tile has had (0 where not read yet): a result computed from an older
        version is stale."""
        st = self._tiles.get((int(tile[0]), int(tile[1])))
        return 0 if st is None else st.version

    def tile_state(self, tile) -> tuple:
        """(bytes, version) of the tile now, read together (what a worker process computes from)."""
        with self._lock:
            st = self._state(tile)
            return st.raw, st.version

    @property
    def tables_build(self) -> str | None:
        """The tables' layout the session was told (None: detected from the tables)."""
        return self._build

    @property
    def big_alpha(self):
        """The map's alpha format (its WDT's), None without a WDT: each tile as it parses."""
        return self._mt.big_alpha

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
        col, row = coords.tile_of(x, y)
        return int(col), int(row)

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
        if tables is not None and tables != self._tables:
            new = dict(self._tables)
            new.update(tables)
            step.tables = ((dict(self._tables), self.catalog), (new, self._make_catalog(new)))
            self._tables, self.catalog = step.tables[1]
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
    def set_fields(self, tile, label: str = "set fields", **values) -> Change:
        """Give a tile new field arrays (``effect`` (256, 4), ``doodad_mapping`` (256, 8, 8),
        ``no_effect`` (256, 8, 8): patch_fields' names) as one undo step: the primitive every tool's
        edit is made of."""
        with self._lock:
            key = (int(tile[0]), int(tile[1]))
            self._state(key)
            return self._apply(label, {key: self._fields(key, **values)})

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
        change = Change(("undo " if which == 0 else "redo ") + step.label, source="undo" if which == 0 else "redo")
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
        if step.tables is not None:
            self._tables, self.catalog = step.tables[which]
            self._tables = dict(self._tables)
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
        """The live placement of a whole tile (:class:`~.placing.PlacementCache`)."""
        return self.grass.tile_instances(tile)

    def place_chunks(self, tile, chunk_indices) -> dict:
        """{MCNK index: Instances} of some chunks of a tile, placed now (what a viewer re-uploads
        after a Change): each chunk exactly its part of the whole tile's placement."""
        return self.grass.place_chunks(tile, chunk_indices)

    def chunk_instances(self, tile, chunk_index: int):
        """The grass of one chunk as grass/placement.py's Instances: the placement a bake of the
        saved tile gives (the same strategy, tables and bytes)."""
        return self.grass.chunk_instances(tile, chunk_index)

    # ------------------------------------------------------------------------------------ files
    # what disk.py's SessionFiles reads and sets (this module never writes a file)
    def files_since_saved(self) -> dict[str, bytes]:
        """{game path: bytes now} of the tiles and tables that differ from those last loaded or saved."""
        with self._lock:
            out = {st.game_path: st.raw for _k, st in sorted(self._tiles.items(), key=lambda kv: (kv[0][1], kv[0][0]))
                   if st.raw != st.base}
            out.update({p: self._tables[p] for p in self.changed_tables})
            return out

    def unsaved_files(self) -> dict[str, bytes]:
        """:meth:`files_since_saved` (what a recovery file keeps: workbench/unsaved.py)."""
        return self.files_since_saved()

    @_announces
    def restore_files(self, files: dict, label: str) -> Change:
        """Put ``files`` {game path: bytes} (tiles of this map, the ground-effect tables) in place of
        the session's as one undoable step (a recovery file's edits: workbench/unsaved.py)."""
        with self._lock:
            edits, tables = {}, {}
            for gp, raw in files.items():
                if gp in TABLES:
                    tables[gp] = bytes(raw)
                    continue
                key = next((k for k in self._present if adt_game_path(self.map_name, *k).lower() == gp.lower()), None)
                if key is None:
                    raise UsageError(f"{gp} is not a tile of map {self.map_name!r} in the data")
                self._state(key)
                t = read_tile(bytes(raw), gp, big_alpha=self._mt.big_alpha, msb_first=self.msb_first)
                edits[key] = (bytes(raw), t, range(256))
            return self._apply(label, edits, tables=tables or None)

    def files_since_loaded(self) -> dict[str, bytes]:
        """{game path: bytes now} of the tiles and tables that differ from those loaded (saved or not)."""
        with self._lock:
            files = {st.game_path: st.raw for st in self._tiles.values() if st.raw != st.loaded}
            files.update({p: self._tables[p] for p in TABLES if self._tables[p] != self._tables_loaded[p]})
            return files

    def saved_bytes(self, game_path: str) -> bytes:
        """The bytes of a loaded tile or table as last loaded or saved."""
        with self._lock:
            if game_path in self._tables_base:
                return self._tables_base[game_path]
            return next(st.base for st in self._tiles.values() if st.game_path == game_path)

    def origins(self, game_paths) -> list[tuple[str, tuple, tuple]]:
        """(game path, (file, inside an archive), fingerprint) each of ``game_paths`` was loaded
        from (a loose file's hash, an archive's size and time then)."""
        with self._lock:
            by_path = {st.game_path: st for st in self._tiles.values()}
            out = []
            for gp in game_paths:
                if gp in by_path:
                    out.append((gp, by_path[gp].source, by_path[gp].fingerprint))
                elif gp in self._tables_source:
                    out.append((gp, self._tables_source[gp], self._tables_print[gp]))
            return out

    def mark_saved(self, game_paths, *, in_place: bool = False) -> list[tuple[int, int]]:
        """The files ``game_paths`` were written as they are now: the base of ``changed_tiles`` /
        ``changed_tables``; ``in_place``: they are now the files the data reads (their origins again).
        Returns the tiles among them."""
        game_paths = set(game_paths)
        with self._lock:
            if in_place and hasattr(self.data, "refresh"):
                self.data.refresh()
            tiles = [k for k, st in self._tiles.items() if st.game_path in game_paths]
            for k in tiles:
                st = self._tiles[k]
                st.base = st.raw
                if in_place:
                    st.source, st.fingerprint = fingerprint(self.data, st.game_path, st.raw)
            for p in TABLES:
                if p in game_paths:
                    self._tables_base[p] = self._tables[p]
                    if in_place:
                        self._tables_source[p], self._tables_print[p] = fingerprint(self.data, p, self._tables[p])
            return tiles

    def loaded_paths(self) -> dict:
        """{game path: tile (col, row) or None for a table} of every file the session has read."""
        with self._lock:
            out = {st.game_path: k for k, st in self._tiles.items()}
            out.update({p: None for p in TABLES})
            return out

    @_announces
    def take_reloaded(self, tiles: dict, tables: dict | None = None, *, relist: bool = False) -> Change:
        """Take files another program saved (disk.py reads them): ``tiles`` {tile: new bytes} of
        loaded tiles, ``tables`` {path: bytes} (both tables) or None, ``relist``: the map's tiles
        are listed again (a tile or the WDT came or went). A tile whose bytes changed is read again
        and its history forgotten; one with unsaved edits keeps them (a note says so); a new tile of
        the map joins it, a tile gone leaves. Subscribers hear a Change naming the tiles' 256 chunks."""
        with self._lock:
            change = Change("reload", source="reload")
            if relist:
                old = set(self._present)
                self._mt = map_tiles(self.data, self.map_name, need_tiles=False)
                self._present = set(self._mt.tiles)
                for key in self._present - old:
                    change.chunks[key] = set(range(256))
            for key, st in list(self._tiles.items()):
                if key not in self._present:
                    del self._tiles[key]
                    self._history.forget(key)
                    change.chunks[key] = set(range(256))
                    continue
                if key not in tiles:
                    continue
                raw = tiles[key]
                if st.raw != st.base:
                    change.notes.append(f"{st.game_path} changed on disk while it has unsaved edits: kept the edits "
                                        "(saving it is refused; undo them to take the new file)")
                    continue
                if raw == st.raw:
                    st.source, st.fingerprint = fingerprint(self.data, st.game_path, raw)
                    continue
                version = st.version
                del self._tiles[key]
                self._history.forget(key)
                self._state(key).version = version
                change.chunks[key] = set(range(256))
            if tables:
                if self.changed_tables:
                    change.notes.append("the ground-effect tables changed on disk while the session has unsaved "
                                        "table edits: kept the edits")
                else:
                    for p, raw in tables.items():
                        self._tables_source[p], self._tables_print[p] = fingerprint(self.data, p, raw)
                    if tables != self._tables:     # not just this session's own save coming back
                        for p, raw in tables.items():
                            self._tables_loaded[p] = self._tables_base[p] = self._tables[p] = raw
                        self.catalog = self._make_catalog(self._tables)
                        self._history.forget(tables=True)
                        change.tables = True
            return self._emit(change) if not change.empty or change.notes else change


def _replace_row(texture_bytes: bytes, appended: bytes, effect_id: int, hint, build=None) -> bytes:
    """``texture_bytes`` with row ``effect_id`` given the doodads, weights and density of the row
    :func:`add_effect_set` appended in ``appended`` (its doodad rows were made there); every other
    byte kept."""
    from wowgrass.edit.effect_sets import read_table, table_build
    from wowgrass.formats.dbc import GROUND_EFFECT_TEXTURE, write_dbc

    short = table_build(texture_bytes, build, hint)
    old = read_table(texture_bytes, TEXTURE_PATH, GROUND_EFFECT_TEXTURE, short)
    new = read_table(appended, TEXTURE_PATH, GROUND_EFFECT_TEXTURE, short)
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
