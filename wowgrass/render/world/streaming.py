"""Tile streaming: the resident set of terrain, grass and doodads around the camera.

A *tile source* produces CPU-side tile payloads (thread-safe, numpy only)::

    source.tiles                   -> list of (col, row) the data has
    source.load_tile(col, row)     -> {"adt": AdtTile, "textures": {name: RGBA}, "grass": {model: instances},
                                       "doodads": {model: (n, 16) matrices}, "missing": [names]}
    source.load_model(path)        -> MeshData | None (None: the data source lacks it)
    source.load_terrain(col, row)  -> {"adt": ..., "textures": ...} (optional: far tiles, no bake)

:class:`Scene` asks a background worker thread for every tile within ``reach`` of the camera
(loading it, baking its bundle on demand or reading the cached one, decoding its textures and
models, building every array the GPU takes: mesh buffers, the alpha atlas, chunk-sorted grass),
uploads finished payloads on the GL thread as a list of steps (new MTEX layers, the terrain slot's
vertices, indices, edges and alpha atlas, new meshes, grass and doodads) run at most
``upload_budget`` bytes a frame, grass instances included (a step larger than that has a frame to
itself), so a tile arrives over several frames
and flying stays smooth (its terrain draws from its step on, the tile counts as resident after its
last; the arenas are sized ahead for what can be resident at once), and releases tiles that fall
beyond ``reach + hysteresis``. Tiles beyond ``reach`` but
within ``terrain_reach`` (the far view) are loaded as terrain alone (no bake, no models) and
completed when they come within ``reach``; a complete tile that falls back beyond
``reach + hysteresis`` keeps only its terrain. GL objects are only touched on the thread that
calls :meth:`Scene.update`.
"""

from __future__ import annotations

import logging
import math
import queue
import threading
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from wowgrass.errors import WowgrassError

from wowgrass.game.coords import tile_centre, tile_of, tile_origin

from ..constants import HORIZON_REACH, TILE_SIZE
from ..sources.doodads import DoodadSet
from ..sources.liquids import LiquidSet
from ..sources.wmo import WmoSet
from ..sources.grass_cpu import GrassField
from ..gl.meshes import GpuMesh, MeshData, crossed_quads, placeholder_texture
from ..sources.terrain import TerrainSet
from ..sources.terrain_arenas import TerrainTile
from ..sources.terrain_mesh import LAYER_SIZE, far_level_for
from .tile_payload import prepare_payload

log = logging.getLogger(__name__)


LAYER_BYTES = LAYER_SIZE * LAYER_SIZE * 4 * 4 // 3  # an MTEX layer slice with its mipmaps
DONE_AHEAD = 2  # payloads the worker may have ready before the GL thread takes them
FIRST_LAYERS = 16  # the layer array's first size (MTEX names are shared: it doubles when it must)


def tiles_within(radius: float, available: int) -> int:
    """How many tiles can lie within ``radius`` of a point: the tile centres in the disc grown by
    a tile (its Minkowski sum with a tile square: pi r^2 + 4 r T + T^2), at most ``available``."""
    r, t = float(radius), TILE_SIZE
    return int(min(available, math.ceil((math.pi * r * r + 4 * r * t + t * t) / (t * t))))


def tile_distances(keys: np.ndarray, x: float, y: float) -> np.ndarray:
    """Distance in XY from a point to each (col, row) tile's square; ``keys`` is (n, 2)."""
    keys = np.asarray(keys, np.float64).reshape(-1, 2)
    x_hi, y_hi = tile_origin(keys[:, 0], keys[:, 1])
    dx = np.maximum(np.maximum(x_hi - TILE_SIZE - x, x - x_hi), 0.0)
    dy = np.maximum(np.maximum(y_hi - TILE_SIZE - y, y - y_hi), 0.0)
    return np.hypot(dx, dy)


def tile_distance(col: int, row: int, x: float, y: float) -> float:
    """Distance in XY from a point to a tile's square (:func:`tile_distances` for one tile, in
    plain Python: it runs per resident tile)."""
    x_hi, y_hi = tile_origin(col, row)
    dx = max(x_hi - TILE_SIZE - x, x - x_hi, 0.0)
    dy = max(y_hi - TILE_SIZE - y, y - y_hi, 0.0)
    return math.hypot(dx, dy)


def tiles_centre(tiles) -> tuple[float, float]:
    """World (X, Y) of the centre of a set of (col, row) tiles (the mean of their centres)."""
    keys = np.array(tiles, np.float64)
    x, y = tile_centre(float(keys[:, 0].mean()), float(keys[:, 1].mean()))
    return float(x), float(y)


GRASS_CULLING = ("auto", "gpu", "cpu")


def make_grass(ctx, programs, settings=None, *, culling: str = "auto", indirect: bool | None = None,
               layout: str | None = None, extra: bool = False):
    """The grass source: GPU-driven culling (:class:`~wowgrass.render.sources.grass_gpu.GpuGrass`) where
    compute shaders exist (GL 4.3) and the instance layout is the bundle's 16 bytes; per-chunk
    culling on the CPU (:class:`~wowgrass.render.sources.grass_cpu.GrassField`) otherwise or when asked."""
    if culling not in GRASS_CULLING:
        raise ValueError(f"grass culling must be one of {GRASS_CULLING}, not {culling!r}")
    can_gpu = ctx.version_code >= 430 and (layout or "16p") == "16p" and indirect is not False
    if culling == "gpu" and not can_gpu:
        from wowgrass.errors import UsageError

        raise UsageError(f"GPU culling needs OpenGL 4.3 and the packed instance layout "
                         f"(this context: {ctx.version_code // 100}.{ctx.version_code % 100 // 10})")
    if culling == "cpu" or not can_gpu:
        return GrassField(ctx, programs, settings, indirect=indirect, layout=layout, extra=extra)
    from ..sources.grass_gpu import GpuGrass

    return GpuGrass(ctx, programs, settings, extra=extra)


@dataclass
class ResidentTile:
    key: tuple[int, int]
    terrain: TerrainTile | None
    adt: object  # a TileGround: the tile's heights (ground_height)
    grass_instances: int = 0
    doodad_instances: int = 0
    missing: list = field(default_factory=list)
    grass_xy: np.ndarray | None = None  # (<= 4096, 2) of the bundle's grass, drawn or not (start-up choices)
    full: bool = True  # False: terrain only (a far tile)
    liquid_cells: int = 0
    wmo_instances: int = 0
    grass: dict | None = None  # model -> its instances, kept where the scene keeps them (keep_grass)


class Scene:
    def __init__(self, ctx, programs: dict, source, *, grass_settings=None, reach: float = 800.0,
                 hysteresis: float = 300.0, threaded: bool = True, max_uploads: int = 1,
                 indirect: bool | None = None, instance_layout: str | None = None,
                 placeholders: bool = False, grass_culling: str = "auto", grass_path: str = "instanced",
                 terrain_reach: float | None = None, upload_budget: int = 4 << 20, grid_draw: str = "compact",
                 client_look: bool = False, horizon=None, horizon_reach: float = HORIZON_REACH,
                 moving: bool = True, tile_process: bool = False):
        """``horizon``: the map's :class:`~wowgrass.formats.wdl.WdlFile` (None: no horizon), drawn
        where no ADT terrain is resident; the fog may then open up to ``horizon_reach``.
        ``moving``: the camera moves (a window, a flight): the arenas of complete tiles are sized at
        their first upload for every tile that can be complete at once, so that no growth (a copy
        of everything resident, 25-90 ms on the H200) falls inside the flight; a still frame
        (False) sizes them for the tiles in reach now. ``tile_process``: prepare tiles in a process
        of their own (tile_process.py; a threaded scene over a source with ``worker_spec``), so
        that the frame's thread never waits for the GIL while tiles stream in."""
        self.ctx, self.programs, self.source = ctx, programs, source
        self.grass_path = grass_path  # "instanced" (bundles) or "grid" (control textures: render/grid.py)
        # view --look client: each instance gets the client look's 16 bytes (world/client_look.py)
        self.client_look = bool(client_look)
        if self.client_look and grass_path != "instanced":
            raise ValueError("the client look draws the instanced grass path")
        self._source_keys = np.array(source.tiles, np.int64).reshape(-1, 2)  # wanted() tests them
        # grass models the data lacks drawn as a stand-in clump (still reported as missing)
        self.placeholders = placeholders
        self._placeholder: GpuMesh | None = None
        self.reach, self.hysteresis = reach, hysteresis
        self.terrain_reach = max(terrain_reach or reach, reach)  # far tiles: terrain alone
        self.max_uploads = max_uploads
        self.moving = bool(moving)
        # what can be resident at once: the arenas' first sizes (complete tiles: grass too)
        self._expected_near = tiles_within(self.reach + hysteresis, len(source.tiles))
        self._expected_tiles = tiles_within(self.terrain_reach + hysteresis, len(source.tiles))
        if grass_path == "grid":
            from ..sources.grass_grid import GridGrass

            self.grass = GridGrass(ctx, programs, grass_settings, draw_mode=grid_draw)
        else:
            self.grass = make_grass(ctx, programs, grass_settings, culling=grass_culling, indirect=indirect,
                                    layout=instance_layout, extra=self.client_look)
        # the instanced grass's arena writes share the scene's budget: made here, after the tiles' steps
        self._grass_upload = getattr(self.grass, "upload", None)
        if self._grass_upload is not None:
            self.grass.upload_budget = 0
        self.doodads = DoodadSet(ctx, programs)
        self.liquids = LiquidSet(ctx, programs)
        self.wmos = WmoSet(ctx, programs)
        # a far tile keeps the levels a tile beyond reach is drawn at: from the reach's band on
        self.terrain = TerrainSet(ctx, programs, indirect=indirect, far_level=far_level_for(self.reach))
        if hasattr(source, "far_liquid_step"):  # a far tile's liquid on its lean terrain's grid
            source.far_liquid_step = 1 << max(self.terrain.far_level - 1, 0)
        self.horizon = None
        if horizon is not None and len(horizon):
            from ..sources.horizon import Horizon

            self.horizon = Horizon(ctx, programs, horizon, self.terrain)
        self.horizon_reach = max(float(horizon_reach), self.terrain_reach)
        self.tiles: dict[tuple[int, int], ResidentTile] = {}
        # hooks for an interactive layer (the workbench): fn(key) once a tile is resident again;
        # keep_grass: resident tiles keep their grass arrays (a chunk's grass can then be replaced)
        self.on_resident: list = []
        self.keep_grass = False
        self.version = 0  # bumped when a tile is uploaded or released (per-frame caches key on it)
        self.meshes: dict[str, GpuMesh | None] = {}  # GPU meshes by model path (None = missing)
        self._mesh_data: dict[str, MeshData | None] = {}  # CPU cache, shared with the worker
        self._mesh_lock = threading.Lock()
        self.missing_grass_models: set[str] = set()  # in a bundle, absent from the data: not drawn
        self.missing_doodad_models: set[str] = set()  # MDDF models absent from the data
        self.missing_textures: set[str] = set()
        self.errors: dict[tuple[int, int], str] = {}
        self._pending: dict[tuple[int, int], bool] = {}  # requested tiles -> complete (not terrain alone)
        self._residency_key = None  # what the last residency pass saw (camera cell, reach, counts)
        self._wanted_count = 0
        self.spare_tiles = 0  # complete tiles' room kept free: a tile loaded again is drawn twice a while
        # a tile's GL uploads, (bytes, step) run in order under upload_budget bytes a frame
        self.upload_budget = int(upload_budget)
        self._steps: deque = deque()
        self.uploaded_bytes = self.uploaded_steps = 0  # by the last update
        self._requests: queue.Queue = queue.Queue()
        # a worker runs at most DONE_AHEAD payloads ahead of the uploads (each holds a tile's
        # arrays until uploaded: unbounded, a start-up held dozens of them at once)
        self._done: queue.Queue = queue.Queue(maxsize=DONE_AHEAD if threaded else 0)
        self._threaded = threaded
        self._worker = None
        self._closing = False
        self._process = None
        if threaded and tile_process and hasattr(source, "worker_spec"):
            from .tile_process import TileProcess

            self._process = TileProcess(source.worker_spec(), self.prepare_options())
        if threaded:
            self._worker = threading.Thread(target=self._work, name="wowgrass-tiles", daemon=True)
            self._worker.start()

    # -- worker side (no GL) --
    def _mesh(self, path: str) -> MeshData | None:
        with self._mesh_lock:
            if path in self._mesh_data:
                return self._mesh_data[path]
        try:
            data = self.source.load_model(path)
        except Exception as exc:  # a broken model must not stop the tile
            log.warning("model %s: %s", path, exc)
            data = None
        if data is not None:
            data.upload_arrays()  # built here, off the GL thread
        with self._mesh_lock:
            self._mesh_data[path] = data
        return data

    def prepare(self, key, full: bool = True) -> dict:
        """Everything for tile ``key`` that can be done off the GL thread (``full`` False: its
        terrain alone, where the source can load that by itself)."""
        payload = prepare_payload(self.source, key, full, **self.prepare_options())
        return self._with_meshes(payload)

    def prepare_options(self) -> dict:
        """What :func:`prepare_payload` needs of this scene (a tile process gets it once)."""
        return {"far_level": self.terrain.far_level, "grass_path": self.grass_path, "client_look": self.client_look}

    def _with_meshes(self, payload: dict) -> dict:
        """The payload's models as CPU meshes (each loaded once, shared by the tiles)."""
        payload["meshes"] = {m: self._mesh(m) for m in payload.pop("models")}
        return payload

    def _prepared_elsewhere(self, key, full: bool) -> dict | None:
        """The tile from the tile process (None: it is not ready, or gone: prepare it here)."""
        proc = self._process
        if proc is None or not proc.ready():
            return None
        from .tile_process import TileProcessGone

        try:
            payload = proc.prepare(key, full, lambda notes: self.source.add_notes(key, notes))
        except TileProcessGone as exc:
            log.warning("the tile process %s: tiles are prepared in the viewer's process from now on", exc)
            self._process = None
            proc.close(0.1)
            return None
        if payload.get("liquid") is not None and payload.get("liquid_frames") is None:
            payload["liquid_frames"] = self.source.frames_for(payload["liquid"])
        return self._with_meshes(payload)

    def _prepare_into_done(self, key, full: bool = True):
        try:
            payload = self._prepared_elsewhere(key, full)
            item = (key, payload if payload is not None else self.prepare(key, full), None)
        except WowgrassError as exc:  # bad data: reported once on the GL side, the tile stays out
            item = (key, None, exc)
        except Exception as exc:  # a bug: its traceback is worth seeing
            log.exception("tile %s failed", key)
            item = (key, None, exc)
        while True:  # the queue is bounded (threaded): wait for room, unless the scene closes
            try:
                self._done.put(item, timeout=0.1)
                return
            except queue.Full:
                if self._closing:
                    return

    def _work(self):
        while (req := self._requests.get()) is not None:
            if not self._closing:   # released: what is still queued is not loaded
                self._prepare_into_done(*req)

    # -- GL side --
    @property
    def missing_models(self) -> set[str]:
        return self.missing_grass_models | self.missing_doodad_models

    def _upload_steps(self, key, payload) -> list:
        """A tile's GL uploads as ``(bytes, step)`` pairs, run in order over as many frames as
        ``upload_budget`` asks (everything CPU-side was done by the worker); the last step returns
        True. Its terrain draws from its step on, its grass once the grass source has its
        instances (the budget's rest each frame), the tile counts as resident after the last step.
        A step that grows an arena (a copy of everything resident) is given a frame of its own."""
        steps = []
        missing = list(payload.get("missing", []))
        self.missing_grass_models.update(missing)
        made = {"terrain": None, "grass": 0, "doodads": 0}
        arrays = payload["terrain"]
        if arrays is not None and payload.get("full", True):
            arena = self.terrain.arena
            n_layers = len(set(arrays.layer_names))
            grow = 0 if arena.fits(1, n_layers) else self.upload_budget
            # first sized for the tiles in reach now, then at once for what can be complete at once
            # (each growth is a copy of everything resident: one, not a doubling after another)
            steps.append((grow, lambda: arena.reserve(1, n_layers, self._near_size(arena), FIRST_LAYERS)))
            for i, name in enumerate(arrays.layer_names):
                if not arena.has_layer(name):
                    steps.append((LAYER_BYTES, lambda n=name, i=i: arena.upload_layer(n, arrays.layers[i])))
        elif arrays is not None:
            arena = self.terrain.far
            grow = 0 if arena.fits(1) else self.upload_budget
            steps.append((grow, lambda: arena.reserve(1, self._expected_tiles)))
        if arrays is not None:
            parts = arena.add_steps(arrays)  # vertices, indices (edges), alpha or colour: a step each
            steps.extend(parts[:-1])
            last_size, last = parts[-1]

            def terrain():
                tile = last()
                self._unload(key)  # a far tile's terrain, replaced by the complete tile
                made["terrain"] = self.terrain.register(key, tile)
                self.missing_textures.update(arrays.missing_textures)

            steps.append((last_size, terrain))
        else:
            steps.append((0, lambda: self._unload(key)))
        for name, data in payload["meshes"].items():
            if name not in self.meshes:
                size = data.upload_bytes if data is not None else 0
                steps.append((size, lambda n=name, d=data: self._add_mesh(n, d)))
        grass = payload.get("grass", {})
        groups = payload.get("grass_groups", {})
        if self._grass_upload is not None and groups:
            n_inst = sum(len(grass[n]) for n in groups)
            n_groups = sum(len(t.keys) for t in groups.values())
            grow = 0 if self.grass.fits(n_inst, n_groups) else self.upload_budget
            steps.append((grow, lambda: self.grass.reserve(n_inst, n_groups, self._near_tiles_hint())))

        def add_grass():
            made["grass"] = self._add_grass(key, payload, missing)

        steps.append((0, add_grass))
        for name, mats in payload.get("doodads", {}).items():
            steps.append((int(mats.nbytes), lambda n=name, m=mats: self._add_doodads(key, n, m, made, missing)))
        steps.extend(self._water_and_wmo_steps(key, payload, made))

        def resident():
            self.tiles[key] = ResidentTile(key, made["terrain"], payload.get("ground"), made["grass"], made["doodads"],
                                           missing, payload.get("grass_xy"), payload.get("full", True),
                                           made.get("liquid", 0), made.get("wmos", 0),
                                           grass=dict(payload.get("grass", {})) if self.keep_grass else None)
            self._pending.pop(key, None)
            self.version += 1
            for fn in self.on_resident:
                fn(key)
            return True

        steps.append((0, resident))
        return steps

    def _near_size(self, arena) -> int:
        """The complete tiles' arena size to grow to: what can be complete at once (within reach +
        hysteresis); for a still frame the tiles in reach now at first."""
        near = max(self._wanted_count, 1) if not arena.capacity and not self.moving else self._expected_near
        return near + self.spare_tiles

    def _near_tiles_hint(self) -> int:
        """How many complete tiles' grass the grass arena makes room for when it grows."""
        return (self._expected_near if self.moving else max(self._wanted_count, 1)) + self.spare_tiles

    def keep_spare(self, tiles: int = 1):
        """Keep room for ``tiles`` complete tiles more than reach needs, so that a tile loaded again
        while drawn (a file another program saved) needs no arena growth, a copy of everything
        resident, inside a frame. Grows now where the terrain arena exists and lacks it."""
        self.spare_tiles = int(tiles)
        arena = self.terrain.arena
        if arena.capacity and not arena.fits(self.spare_tiles):
            arena.reserve(self.spare_tiles, 0)

    def _water_and_wmo_steps(self, key, payload, made) -> list:
        """The tile's WMO models (each uploaded once), its placements and its liquid mesh."""
        steps = []
        for name, model in payload.get("wmo_models", {}).items():
            if not self.wmos.has_model(name):
                steps.append((model.upload_bytes, lambda n=name, m=model: self.wmos.add_model(n, m)))
        if payload.get("wmos"):
            steps.append((0, lambda: made.__setitem__("wmos", self.wmos.add(key, payload["wmos"]))))
        mesh = payload.get("liquid")
        if mesh is not None:
            def liquid():
                self.liquids.add(key, mesh, payload.get("liquid_frames"))
                made["liquid"] = mesh.cells

            steps.append((mesh.nbytes, liquid))
        return steps

    def _add_mesh(self, name: str, data: MeshData | None):
        if name not in self.meshes:
            self.meshes[name] = GpuMesh(self.ctx, data) if data is not None else None

    def _model_missing(self, name: str, missing: list, grass: bool) -> bool:
        if self.meshes.get(name) is not None:
            return False
        missing.append(name)
        (self.missing_grass_models if grass else self.missing_doodad_models).add(name)
        return True

    def _add_grass(self, key, payload, missing: list) -> int:
        """A tile's grass queued into the grass source (its meshes uploaded); instances added."""
        n_grass = 0
        grass_meshes, samples = {}, []
        groups = payload.get("grass_groups", {})
        extras = payload.get("grass_extra", {})
        more = {}
        for name, inst in payload.get("grass", {}).items():
            self._model_missing(name, missing, grass=True)
            mesh = self.meshes.get(name)
            if mesh is None and self.placeholders:
                mesh = self._placeholder_mesh()
            if mesh is not None and len(inst):
                n_grass += len(inst)
                if self.grass_path == "grid":  # the instanced path's start-up sample (GrassBatch.sample_xy)
                    grass_meshes[name] = mesh
                    samples.append(np.array(inst["pos"][:: max(1, len(inst) // 4096), :2], np.float64))
                else:
                    if self.client_look:
                        more = {"extra": extras[name]}
                    if name in groups and self._grass_upload is not None:  # the GPU path (GpuGrass)
                        self.grass.add(mesh, inst, tile=key, groups=groups[name], **more)
                    else:
                        self.grass.add(mesh, inst, tile=key, **more)
        if self.grass_path == "grid" and payload.get("grid") is not None:
            self.grass.add_tile(key, payload["grid"], grass_meshes, np.concatenate(samples) if samples else None)
        return n_grass

    def replace_grass(self, key, grass: dict, extra: dict | None = None, groups: dict | None = None) -> int:
        """Draw ``grass`` (model -> INSTANCE_DTYPE instances) as resident tile ``key``'s grass in place
        of what it had (an edit placed some of its chunks again): its instances leave the grass
        source and the new ones are queued under the frame's upload budget (the instanced path;
        ``extra``: the client look's per-instance bytes, white where not given; ``groups``: model ->
        :func:`~wowgrass.render.sources.grass_cpu.group_by_chunk`'s table where the caller sorted
        and grouped the instances off the frame's thread). Returns the instances drawn; 0 where
        ``key`` is not a complete resident tile."""
        t = self.tiles.get(key)
        if t is None or not t.full or self.grass_path != "instanced":
            return 0
        from ..sources.grass_cpu import group_by_chunk

        self.grass.remove_tile(key)
        payload = {"grass": {}, "grass_groups": {}}
        extras = {}
        for name, inst in grass.items():
            if len(inst) == 0:
                continue
            given = (groups or {}).get(name)
            inst, table = (inst, given) if given is not None else group_by_chunk(np.ascontiguousarray(inst))
            payload["grass"][name], payload["grass_groups"][name] = inst, table
            if self.client_look:
                from .client_look import white_extras

                e = (extra or {}).get(name)
                extras[name] = e if e is not None and len(e) == len(inst) else white_extras(len(inst))
        payload["grass_extra"] = extras
        if self._grass_upload is not None and payload["grass_groups"]:
            n_inst = sum(len(v) for v in payload["grass"].values())
            n_groups = sum(len(g.keys) for g in payload["grass_groups"].values())
            self.grass.reserve(n_inst, n_groups, self._near_tiles_hint())
        for name in payload["grass"]:  # a model the tile did not draw before
            if name not in self.meshes:
                self._add_mesh(name, self._mesh(name))
        t.grass_instances = self._add_grass(key, payload, [])
        if self.keep_grass:
            t.grass = payload["grass"]
        self.version += 1
        return t.grass_instances

    def reload_tile(self, key) -> bool:
        """Load resident (or wanted) tile ``key`` again from the source (the file changed on disk):
        prepared on the worker as any tile, it replaces the one drawn once uploaded (the old one is
        drawn until then). False where the source has no such tile."""
        if tuple(key) not in set(self.source.tiles):
            return False
        key = tuple(key)
        t = self.tiles.get(key)
        self._request(key, t.full if t is not None else True)
        return True

    def _add_doodads(self, key, name: str, mats: np.ndarray, made: dict, missing: list):
        if name in self.meshes and self.meshes[name] is None and name in missing:
            return  # a grass model too, reported with the grass
        if not self._model_missing(name, missing, grass=False) and len(mats):
            self.doodads.add(self.meshes[name], mats, tile=key)
            made["doodads"] += len(mats)

    def _placeholder_mesh(self) -> GpuMesh:
        if self._placeholder is None:
            data = crossed_quads(width=0.8, height=0.5)
            data.name = "placeholder"
            data.texture = placeholder_texture(data.texture)
            self._placeholder = GpuMesh(self.ctx, data)
        return self._placeholder

    def _unload(self, key):
        t = self.tiles.pop(key, None)
        if t is None:
            return
        self.version += 1
        self.terrain.remove(key)
        self.grass.remove_tile(key)
        self.doodads.remove_tile(key)
        self.wmos.remove_tile(key)
        self.liquids.remove_tile(key)

    def _drop_models(self, key):
        """A complete tile that moved out of reach keeps its terrain (far view) and liquids only: its
        grass, doodads and WMOs go now, its complete terrain once the far one (asked for here) replaces it."""
        t = self.tiles[key]
        self.grass.remove_tile(key)
        self.doodads.remove_tile(key)
        self.wmos.remove_tile(key)
        t.full, t.grass_instances, t.doodad_instances = False, 0, 0
        self.version += 1
        if key not in self._pending and not (t.terrain is not None and t.terrain.far):
            self._request(key, False)

    def _request(self, key, full: bool):
        self._pending[key] = full
        if self._threaded:
            self._requests.put((key, full))
        else:
            self._prepare_into_done(key, full)

    def wanted(self, x: float, y: float, reach: float | None = None) -> list[tuple[int, int]]:
        """The source's tiles within ``reach`` (default: the scene's) of (x, y), nearest first
        (one numpy pass a frame)."""
        d = tile_distances(self._source_keys, x, y)
        near = np.flatnonzero(d <= (self.reach if reach is None else reach))
        return [self.source.tiles[i] for i in near[np.argsort(d[near], kind="stable")]]

    def _residency(self, x: float, y: float):
        want = self.wanted(x, y)
        self._wanted_count = len(want)
        near = set(want)
        far = self.wanted(x, y, self.terrain_reach) if self.terrain_reach > self.reach else want
        for key in far:
            full = key in near
            have = self.tiles.get(key)
            if (have is None or (full and not have.full)) and key not in self._pending and key not in self.errors:
                self._request(key, full)
        for key in list(self.tiles):
            d = tile_distance(*key, x, y)
            if d > self.terrain_reach + self.hysteresis:
                self._unload(key)
            elif self.tiles[key].full and d > self.reach + self.hysteresis:
                self._drop_models(key)

    def update(self, camera_pos, *, block: bool = False, block_far: bool = False) -> int:
        """Request, upload and release tiles for a camera at ``camera_pos``; returns uploads done.
        ``block``: wait for the complete tiles in reach; ``block_far``: for the far ones too."""
        x, y = float(camera_pos[0]), float(camera_pos[1])
        # which tiles to request, drop or unload: only again once the camera has moved to another
        # 4-unit cell, the reach changed or tiles came, went or failed (not every frame: it is a
        # pass over the map's tiles and the resident ones)
        key = (math.floor(x / 4.0), math.floor(y / 4.0), self.reach, self.terrain_reach, self.hysteresis,
               len(self.tiles), len(self._pending), len(self.errors))
        if block or key != self._residency_key:
            self._residency(x, y)
            self._residency_key = (*key[:5], len(self.tiles), len(self._pending), len(self.errors))
        uploads = 0
        spent = steps = 0  # bytes and steps this frame
        # blocking waits for the complete tiles; far tiles (terrain alone) keep streaming in
        while True:
            wait = block and (block_far or any(self._pending.values()) or bool(self._steps))
            if not self._steps:
                if not self._pending or (uploads >= self.max_uploads and not wait):
                    break
                try:
                    key, payload, err = self._done.get(block=wait, timeout=None if wait else 0)
                except queue.Empty:
                    break
                if err is not None:
                    self._pending.pop(key, None)
                    self.errors[key] = f"{type(err).__name__}: {err}"
                    if block and isinstance(err, Exception) and self._wanted_count == 1:
                        raise err
                    if isinstance(err, WowgrassError):
                        log.warning("tile %d_%d not loaded: %s", key[0], key[1], err)
                    continue
                reach = self.reach if payload["full"] else self.terrain_reach
                if tile_distance(*key, x, y) > reach + self.hysteresis:
                    self._pending.pop(key, None)
                    continue
                self._steps.extend(self._upload_steps(key, payload))  # pending until its last step
                continue
            size, step = self._steps[0]
            if spent and spent + size > self.upload_budget and not wait:
                break  # the rest next frame (a step bigger than the budget gets a frame of its own)
            self._steps.popleft()
            if step():
                uploads += 1
            spent += max(size, 1)
            steps += 1
        if self._grass_upload is not None and spent < self.upload_budget:  # instances: the budget's rest
            spent += self._grass_upload(self.upload_budget - spent)
        self.uploaded_bytes, self.uploaded_steps = spent, steps
        if block and hasattr(self.grass, "flush_uploads"):  # blocking means everything in place now
            self.grass.flush_uploads()
        return uploads

    @property
    def sources(self) -> list:
        """What a frame draws, in order (terrain first: early depth rejection of what it hides;
        the horizon, beyond it all, next; liquids last: blended over the rest)."""
        if self.horizon is not None:
            return [self.terrain, self.horizon, self.wmos, self.doodads, self.grass, self.liquids]
        return [self.terrain, self.wmos, self.doodads, self.grass, self.liquids]

    @property
    def view_reach(self) -> float:
        """How far there is something to see: the far tiles' reach, or with a horizon the horizon's."""
        return self.horizon_reach if self.horizon is not None else self.terrain_reach

    def memory_report(self) -> dict:
        """The GPU bytes of this scene's context (:mod:`~wowgrass.render.gl.memory`): per kind,
        per resident tile (near: complete; far: terrain alone) and each tile's own figures."""
        from ..gl.memory import gpu_memory, tile_summary

        mem = gpu_memory(self.ctx)
        near = [k for k, t in self.tiles.items() if t.full]
        far = [k for k, t in self.tiles.items() if not t.full]
        use = mem.tiles()
        return {**mem.report(), "per_tile": tile_summary(mem, {"near": near, "far": far}),
                "tiles": {f"{c},{r}": {"full": self.tiles[(c, r)].full, **use.get((c, r), {})}
                          for c, r in sorted(self.tiles)}}

    def ground_height(self, x: float, y: float) -> float | None:
        """Terrain height under (x, y) where a resident tile covers it."""
        t = self.tiles.get(tile_of(x, y))
        if t is None or t.adt is None:
            return None
        ch = t.adt.chunk_index_at(x, y)
        if int(ch) < 0:
            return None
        return float(t.adt.heights_at(int(ch), x, y))

    def liquid_at(self, x: float, y: float) -> tuple | None:
        """(surface height, LiquidType ID, kind) of the highest liquid over (x, y) where a resident
        tile has liquid in that cell, else None (the light's under-water and liquid sets)."""
        t = self.tiles.get(tile_of(x, y))
        at = getattr(t.adt, "liquid_at", None) if t is not None and t.adt is not None else None
        return at(x, y) if at is not None else None

    def release(self):
        """Stop the worker (the tile it is loading finishes, nothing queued starts) and wait for it,
        so no load reads the data source after the caller closes it; then free the GL objects."""
        if self._worker is not None:
            self._closing = True
            self._requests.put(None)
            self._worker.join()
            self._worker = None
        if self._process is not None:
            self._process.close()
            self._process = None
        self._steps.clear()
        for key in list(self.tiles):
            self._unload(key)
        self.grass.release()
        self.doodads.release()
        self.liquids.release()
        self.wmos.release()
        self.terrain.release()
        if self.horizon is not None:
            self.horizon.release()
            self.horizon = None
        for m in [*self.meshes.values(), self._placeholder]:
            if m is not None:
                m.release()
        self.meshes.clear()
        self._placeholder = None
