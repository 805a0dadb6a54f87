"""Tile sources over game data: a :class:`~wowgrass.game.data.GameData` + map name -> tile payloads.

:class:`GameSource` is what ``wowgrass view`` streams from. For each tile it reads the ADT, asks
:func:`wowgrass.grass.bake.bake_tile` for the tile's bundle (a cache hit when a valid bundle with the same
provenance key exists, a bake otherwise; this runs on the scene's worker thread), reads the bundle's
per-model instance arrays, decodes the MTEX textures (BLP) and turns the MDDF placements into
model matrices. Models are read through the same data source (M2 + skin + first texture); models
the data lacks are reported, never fatal: the rest of the tile is drawn.
"""

from __future__ import annotations

import logging
import threading

import numpy as np

from wowgrass.errors import FormatError, GameFileNotFound, UsageError

from ..sources.doodads import mddf_matrices
from ..gl.meshes import MeshData

log = logging.getLogger(__name__)

#: MTEX textures a source keeps decoded (a 256x256 one is 256 KB; a tile uses 4-8 of a neighbourhood's few dozen)
TEXTURE_CACHE = 96


def m2_name(path: str) -> str:
    p = path.replace("/", "\\")
    low = p.lower()
    if low.endswith(".mdx") or low.endswith(".mdl"):
        p = p[:-4] + ".m2"
    return p


class GameSource:
    def __init__(self, data, map_name: str, *, tiles=None, placement: str = "coverage", build: str | None = None,
                 dbc_dir=None, grass_path: str = "instanced", constants=None):
        from wowgrass.grass.bake import ModelTable, load_catalog
        from wowgrass.game.maps import map_tiles

        self.data, self.map = data, map_name
        # what reopens this source in the viewer's tile process (tile_process.py)
        self._args = {"tiles": tiles, "placement": placement, "build": build, "dbc_dir": dbc_dir,
                      "grass_path": grass_path, "constants": constants}
        self.name = f"{map_name} ({data.root})"
        self.dbc_dir = dbc_dir  # the tables' own folder (view --dbc), None: the data's
        self.placement = placement
        self.constants = constants  # PlacementConstants for the bakes (view -C), None: the defaults
        self.catalog = load_catalog(data=data, dbc_dir=dbc_dir, build=build or data.build)
        from .client_look import model_flags

        self.grass_flags = model_flags(self.catalog)  # GroundEffectDoodad.Flags per model (the client look)
        self.model_table = ModelTable(data.read)
        self._lock = threading.Lock()  # GameData and the model table are not promised to be thread-safe
        self._texture_lock = threading.Lock()
        self._texture_cache: dict = {}  # MTEX path (lower case) -> RGBA | None, least recently used first
        # the ADTs present: those the WDT lists that the data has, or without a WDT the ADT files
        # (wowgrass.game.maps, as bake and export read a map); --tile selects among them
        mt = map_tiles(data, map_name, tiles)
        self.big_alpha = mt.big_alpha   # None without a WDT: each tile as it parses
        self.note = mt.note()
        listed = mt.tiles
        self.tiles = listed
        self.bakes: list = []  # BakeResult per loaded tile (cache hit or not)
        self.grass_path = grass_path  # "grid": each tile also gets its control texture (wowgrass.grass.grid_tiles)
        self.grids: list = []  # (tile, control file, cache hit) per loaded tile, grid path only
        from wowgrass.game.liquid_types import LiquidTypes

        self.liquid_types = LiquidTypes.from_data(data, build or data.build)
        self._tile_set = set(self.tiles)
        self._wmo_models: dict = {}  # WMO path (lower case) -> WmoModel | None (the data lacks it)
        self._frames: dict = {}  # liquid texture pattern (lower case) -> [RGBA] x 30 | None
        self.missing_wmos: set = set()
        self.liquid_errors: dict = {}  # (col, row) -> why its liquid is not drawn
        # a far tile's liquid keeps every step-th vertex, as its terrain does (the scene sets it)
        self.far_liquid_step = 4
        self.liquid_merge = True  # False: a quad a cell, as before liquids at map scale (benchmarks compare)
        self.with_frames = True  # False: payloads name their liquid textures, the caller decodes them (once)

    def worker_spec(self) -> dict:
        """A picklable description of this source (:meth:`from_spec` rebuilds it in another process)."""
        return {"data": self.data.spec(), "map": self.map, "args": self._args,
                "far_liquid_step": self.far_liquid_step, "liquid_merge": self.liquid_merge}

    @classmethod
    def from_spec(cls, spec: dict) -> "GameSource":
        src = cls(spec["data"].open(), spec["map"], **spec["args"])
        src.far_liquid_step, src.liquid_merge = spec["far_liquid_step"], spec["liquid_merge"]
        return src

    def notes_mark(self) -> tuple:
        """Where this source's reports stand (:meth:`notes_since` gives what came after)."""
        return len(self.bakes), len(self.grids), len(self.missing_wmos)

    def notes_since(self, mark: tuple, key) -> dict:
        """What loading tile ``key`` added to the reports since ``mark``: bakes, grid tiles, WMOs
        missing, the tile's liquid error (a tile process sends these with its payload)."""
        return {"bakes": self.bakes[mark[0]:], "grids": self.grids[mark[1]:],
                "missing_wmos": sorted(self.missing_wmos) if len(self.missing_wmos) != mark[2] else [],
                "liquid_error": self.liquid_errors.get(tuple(key))}

    def add_notes(self, key, notes: dict) -> None:
        """Take in the reports another process's source made loading tile ``key``."""
        self.bakes.extend(notes["bakes"])
        self.grids.extend(notes["grids"])
        self.missing_wmos.update(notes["missing_wmos"])
        if notes["liquid_error"]:
            self.liquid_errors[tuple(key)] = notes["liquid_error"]

    def frames_for(self, mesh) -> dict:
        """The animation frames of a liquid mesh's kinds (decoded once per texture pattern)."""
        return {k: f for k, pat in mesh.textures.items() if (f := self.liquid_frames(pat)) is not None}

    def _read(self, path: str) -> bytes:
        with self._lock:
            return self.data.read(path)

    def _texture(self, path: str) -> np.ndarray | None:
        """An MTEX texture's RGBA (read-only; None: the data lacks it or it is damaged), decoded once
        for the tiles around it: neighbours share most of their textures."""
        key = path.lower()
        with self._texture_lock:
            if key in self._texture_cache:
                rgba = self._texture_cache.pop(key)
                self._texture_cache[key] = rgba  # the most recently used last
                return rgba
        from wowgrass.formats.blp import read_blp

        try:
            rgba = read_blp(self._read(path), path).mip(0)
            rgba.setflags(write=False)  # shared by every tile that uses it
        except (GameFileNotFound, FileNotFoundError, FormatError) as exc:
            log.info("texture %s: %s", path, exc)
            rgba = None
        with self._texture_lock:
            self._texture_cache[key] = rgba
            while len(self._texture_cache) > TEXTURE_CACHE:
                self._texture_cache.pop(next(iter(self._texture_cache)))
        return rgba

    def _adt(self, col: int, row: int):
        from wowgrass.game.tiles import adt_game_path, read_adt

        name = adt_game_path(self.map, col, row)
        raw = self._read(name)
        return name, raw, read_adt(raw, name, self.big_alpha)

    def _textures(self, adt) -> dict:
        textures = {}
        for t in adt.textures:
            rgba = self._texture(t)
            if rgba is not None:
                textures[t] = rgba
        return textures

    def load_terrain(self, col: int, row: int) -> dict:
        """The tile's terrain alone (ADT and MTEX textures) and its liquids: far tiles, drawn
        without grass, doodads or WMOs."""
        adt = self._adt(col, row)[2]
        return {"adt": adt, "textures": self._textures(adt), **self._liquids(col, row, adt, [], self.far_liquid_step)}

    # -- liquids and WMOs --
    def _liquids(self, col, row, adt, wmos, step: int = 1) -> dict:
        """The tile's liquid mesh (its own layers, flat ones merged, and the MLIQ of its WMOs) and
        the frames of its kinds; ``step`` > 1: a far tile's lean liquid (liquid_tiles.merged_mesh)."""
        from .liquid_tiles import MERGE_MIN_CELLS, adt_liquid_mesh, merge, wmo_liquid_mesh

        mesh, err = adt_liquid_mesh(adt, self.liquid_types, merged=self.liquid_merge, step=step,
                                    merge_from=MERGE_MIN_CELLS)
        if err:
            self.liquid_errors[(col, row)] = err
        parts = [mesh]
        for model, matrix in wmos:
            for _gi, liquid, type_id in model.liquids:
                t = self.liquid_types.get(type_id)
                part = wmo_liquid_mesh(liquid, matrix, t.kind)
                if part:
                    part.textures[t.kind] = t.texture
                    part.types[int(type_id)] = part.cells
                parts.append(part)
        mesh = merge(parts)
        return {"liquid": mesh, "liquid_frames": self.frames_for(mesh) if self.with_frames else None}

    def liquid_frames(self, pattern: str | None):
        """The 30 RGBA frames of a LiquidType texture pattern (None: the data lacks them)."""
        if not pattern:
            return None
        key = pattern.lower()
        if key not in self._frames:
            from wowgrass.game.liquid_types import LiquidType

            frames = []
            for path in LiquidType(0, "", 0, pattern).frame_paths():
                rgba = self._texture(path)
                if rgba is None:
                    break
                frames.append(rgba)
            self._frames[key] = frames or None
            if not frames:
                log.info("liquid texture %s: not in the data (drawn in its colour)", pattern)
        return self._frames[key]

    def load_wmo(self, path: str):
        """A WMO as the renderer takes it (cached per path; None when the data lacks its root or
        it does not parse: reported in ``missing_wmos``)."""
        key = path.lower()
        if key in self._wmo_models:
            return self._wmo_models[key]
        from wowgrass.formats.wmo import load_wmo

        from .wmo_models import build_wmo_model

        try:
            wmo = load_wmo(path, self._read)
            model = build_wmo_model(wmo, self._texture)
            if wmo.missing or wmo.errors:
                log.info("WMO %s: %d group files missing, %d unreadable", path, len(wmo.missing), len(wmo.errors))
        except (GameFileNotFound, FileNotFoundError, FormatError) as exc:
            log.info("WMO %s: %s", path, exc)
            model = None
            self.missing_wmos.add(path)
        self._wmo_models[key] = model
        return model

    def _wmos(self, col: int, row: int, adt) -> list:
        """The tile's MODF placements this tile draws: (path, model, world matrix, doodad set).
        A WMO spanning tiles is listed by each: the tile holding its origin draws it (or this one,
        where the data lacks that tile), once per unique id."""
        if not len(adt.modf):
            return []
        from wowgrass.formats.adt import TILE_SIZE, ZEROPOINT
        from wowgrass.game.mapobjects import modf_placements

        p = modf_placements(adt)
        out, seen = [], set()
        for k, name in enumerate(p.names):
            uid = int(p.unique_id[k])
            if not name or uid in seen:
                continue
            x, y = p.matrices[k, 0, 3], p.matrices[k, 1, 3]
            owner = (int(np.floor((ZEROPOINT - y) / TILE_SIZE)), int(np.floor((ZEROPOINT - x) / TILE_SIZE)))
            if owner != (col, row) and owner in self._tile_set:
                continue
            seen.add(uid)
            model = self.load_wmo(name)
            if model is not None:
                out.append((name, model, p.matrices[k], int(p.doodad_set[k])))
        return out

    def load_tile(self, col: int, row: int) -> dict:
        from wowgrass.grass.bake import bake_tile, record_source
        from wowgrass.grass.bundle import read_bundle

        name, raw, adt = self._adt(col, row)  # parsed once: bake and terrain share it
        with self._lock:
            res = bake_tile(raw, self.catalog, map_name=self.map, placement=self.placement, constants=self.constants,
                            models=self.model_table, big_alpha=self.big_alpha, adt_path=name, tile=adt)
            # `cache ls` names every data source whose tiles the map's bundles hold
            record_source(res.map, self.data.root, self.catalog.build, [res.tile])
        self.bakes.append(res)
        grass, missing = {}, []
        with read_bundle(res.path, expect_key=res.key) as b:
            for m in b.models:
                if len(m) == 0:
                    continue
                if not m.info.present:  # named as missing; the scene may draw a stand-in
                    missing.append(m.path)
                grass[m.path] = np.array(m.instances)  # copy: the map closes with the bundle
        textures = self._textures(adt)
        doodads = {}
        if len(adt.mddf) and adt.models:
            ids = adt.mddf["name_id"].astype(np.int64)
            ok = ids < len(adt.models)
            mats = mddf_matrices(adt.mddf[ok])
            for k in np.unique(ids[ok]).tolist():
                doodads[m2_name(adt.models[k])] = mats[ids[ok] == k]
        wmos = self._wmos(col, row, adt)
        if wmos:
            from wowgrass.game.mapobjects import wmo_doodads

            for _name, model, matrix, dset in wmos:  # the WMOs' doodad sets: M2s like the MDDF ones
                names, mats = wmo_doodads(model.root, matrix, dset)
                cols = np.ascontiguousarray(mats.transpose(0, 2, 1), np.float32).reshape(-1, 16)
                keys, inverse = np.unique(np.array([m2_name(n) for n in names], dtype=object), return_inverse=True)
                for k, key in enumerate(keys.tolist()):
                    sel = cols[inverse == k]
                    doodads[key] = np.concatenate([doodads[key], sel]) if key in doodads else sel
        payload = {"adt": adt, "textures": textures, "grass": grass, "doodads": doodads, "missing": missing,
                   "grass_flags": self.grass_flags, "build": self.catalog.build,
                   "wmos": [(name, matrix) for name, _m, matrix, _d in wmos],
                   "wmo_models": {name: model for name, model, _x, _d in wmos},
                   **self._liquids(col, row, adt, [(model, matrix) for _n, model, matrix, _d in wmos])}
        if self.grass_path == "grid":
            from wowgrass.grass.grid_tiles import grid_path_for, load_grid_tile

            payload["grid"], hit = load_grid_tile(adt, grass, bundle_path=res.path, bundle_key=res.key)
            self.grids.append(((col, row), str(grid_path_for(res.path)), hit))
        return payload

    def load_horizon(self):
        """The map's WDL (:class:`~wowgrass.formats.wdl.WdlFile`: every tile's low-resolution
        heights, the horizon), None when the data has none. A damaged one raises FormatError."""
        from wowgrass.formats.wdl import WdlFile
        from wowgrass.game.tiles import wdt_game_path

        path = wdt_game_path(self.map)[:-4] + ".wdl"
        if not self.data.exists(path):
            return None
        return WdlFile.from_bytes(self._read(path), path)

    def load_model(self, path: str) -> MeshData | None:
        from wowgrass.formats.m2 import M2Model

        path = m2_name(path)
        try:
            with self._lock:
                model = M2Model.from_bytes(self.data.read(path), path, read=self.data.read)
            mesh = model.render_mesh()
        except (GameFileNotFound, FileNotFoundError, FormatError, UsageError) as exc:
            log.info("model %s: %s", path, exc)
            return None
        tex_name = next((b.texture for b in mesh.batches if b.texture), None)
        tex = self._texture(tex_name) if tex_name else None
        data = MeshData.from_render_mesh(path, mesh, tex, tex_name)
        return data
