"""The bridge from the workbench to the view's scene: the one workbench module that imports render.

What the session's changes become on screen goes through here: a changed chunk's grass placed again
and merged into the tile's resident grass (:meth:`Scene.replace_grass`), a tile's cell marks
(terrain's ``CellMarks``), the overlay, brush and picked-cell uniforms, reloads of files another
program saved (:meth:`Scene.reload_tile`), and the ray pick (``render.pick``). Render never imports
the workbench: it offers these hooks, and :class:`WindowUi` (re-exported here for the controller).

The frame never places grass: :meth:`SceneBridge.queue` hands the changed chunks to the bridge's
grass thread, which places them (outside the session's lock), merges them into the tile's grass,
sorts and groups it by chunk as the scene's upload path takes it, and leaves the result; the frame
then only hands finished buffers to the scene (:meth:`SceneBridge.hand_over_ready`). Dabs that land
while a tile is placed are placed together next. A result made on grass the scene no longer holds
(the tile streamed in again) is placed again on the new grass.
"""

from __future__ import annotations

import inspect
import threading
import time
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from wowgrass.formats.adt import CHUNK_SIZE, UNIT_SIZE
from wowgrass.grass.bundle import pack_instances
from wowgrass.render.pick import pick_ground
from wowgrass.render.sources.grass_cpu import chunk_keys, group_by_chunk
from wowgrass.render.window import WindowUi

from .geometry import cell_corner
from .height_atlas import GroundAtlas
from .overlays import OVERLAY_BITS, give_marks

__all__ = ["SceneBridge", "WindowUi", "tile_grass"]


def tile_grass(instances) -> dict:
    """A placement's :class:`~wowgrass.grass.placement.Instances` as the scene takes grass:
    model path -> INSTANCE_DTYPE (the bundle's records)."""
    out = {}
    if instances is None or len(instances) == 0:
        return out
    model = np.asarray(instances.model)
    for m in np.unique(model).tolist():
        sel = model == m
        out[instances.models[m]] = pack_instances(instances.pos[sel], instances.yaw[sel], instances.scale[sel])
    return out


@dataclass
class _Placed:
    """A tile's grass made on the grass thread, waiting for a frame to hand it to the scene."""

    grass: dict  # model -> instances, chunk-sorted
    groups: dict  # model -> group_by_chunk's table
    extra: dict | None  # the client look's bytes
    chunks: set | None  # what was placed again (None: the whole tile)
    labels: list = field(default_factory=list)  # the changes it shows
    base_gen: int | None = None  # the scene's grass it was merged into (None: made whole)
    handed_gen: int | None = None  # the scene's grass once it was handed over


def merge_grass(old: dict, ground, chunks, placed: dict) -> dict:
    """``old`` (model -> instances) with the instances in MCNK ``chunks`` of ``ground`` (the tile's
    grid) replaced by ``placed``. Grass sorted by chunk (as the scene keeps it) stays sorted: the new
    instances go in at their chunk's place, so grouping it again sorts nothing."""
    out = {}
    drop = np.zeros(256, bool)
    drop[list(chunks)] = True
    box = None
    if ground is not None and drop.any():  # the changed chunks' box: only the instances in it are tested
        o = np.asarray(ground.positions, np.float64)[0, :2]  # the grid chunk_index_at uses
        ixy = np.asarray(ground.index_xy, np.float64)[drop]
        box = (o[0] - (ixy[:, 1].max() + 1) * CHUNK_SIZE - 1e-3, o[0] - ixy[:, 1].min() * CHUNK_SIZE + 1e-3,
               o[1] - (ixy[:, 0].max() + 1) * CHUNK_SIZE - 1e-3, o[1] - ixy[:, 0].min() * CHUNK_SIZE + 1e-3)
    for name, inst in old.items():
        if len(inst) and box is not None:
            p = inst["pos"]
            near = np.flatnonzero((p[:, 0] >= box[0]) & (p[:, 0] <= box[1]) & (p[:, 1] >= box[2]) & (p[:, 1] <= box[3]))
            if near.size:
                ch = ground.chunk_index_at(p[near, 0], p[near, 1])
                gone = near[drop[np.clip(ch, 0, 255)] & (ch >= 0)]
                if gone.size:
                    keep = np.ones(len(inst), bool)
                    keep[gone] = False
                    inst = inst[keep]
        out[name] = inst
    for name, inst in placed.items():
        if name not in out or not len(out[name]):
            out[name] = inst
            continue
        have = out[name]
        keys = chunk_keys(have["pos"])
        if len(keys) > 1 and np.any(keys[1:] < keys[:-1]):  # not chunk-sorted: the scene sorts it
            out[name] = np.concatenate([have, inst])
            continue
        new_keys = chunk_keys(inst["pos"])
        order = np.argsort(new_keys, kind="stable")
        out[name] = np.insert(have, np.searchsorted(keys, new_keys[order], side="right"), inst[order])
    return out


class SceneBridge:
    """``scene`` as the workbench changes it (see the module docstring). ``session``: the
    EditSession whose placements and tiles it hands over."""

    def __init__(self, session, scene, colours):
        self.session, self.scene = session, scene
        scene.keep_grass = True
        give_marks(scene.terrain.cells)  # the overlays' names and colours for render's cell marks
        self.edits_applied: list = []  # (change label, frame the scene got its grass)
        self.frame = 0  # the controller's frame count (edits_applied names it)
        self.ground = GroundAtlas()  # the resident tiles' heights in one set of arrays (the pick's)
        self._ray_key = None  # the camera and view size the inverse below is for
        self._ray_inv = None
        self.on_error = None  # fn(text): the grass thread's failures (the controller shows them)
        replace = getattr(scene, "replace_grass", None)
        self._grouped = replace is not None and "groups" in inspect.signature(replace).parameters
        self._cv = threading.Condition()
        self._todo: dict = {}  # tile -> [chunks (None: all), labels] waiting for the grass thread
        self._ready: dict = {}  # tile -> _Placed waiting for a frame
        self._gen: dict = {}  # tile -> grass the scene got for it (hand-overs, arrivals): a result
        # merged into older grass is placed again
        self._placing = False
        self._thread = None
        self._stop = False
        # the grass thread's last jobs: (wall ms, its own CPU ms); wall well over CPU is waiting for
        # the GIL or a core (bench_workbench.py reports them)
        self.place_times: deque = deque(maxlen=256)
        if hasattr(scene, "on_resident"):
            scene.on_resident.append(self._arrived)

    # -- what is resident --
    def resident(self, key) -> bool:
        return key in self.scene.tiles

    def resident_tiles(self, *, full: bool = True) -> list:
        return [k for k, t in list(self.scene.tiles.items()) if t.full or not full]

    def grid(self, key):
        """The resident tile's ground (chunk positions and order: what a cell lookup needs), or None."""
        t = self.scene.tiles.get(key)
        return getattr(t, "adt", None)

    def on_resident(self, fn) -> None:
        """``fn(key)`` once a tile is resident (again: a reload)."""
        self.scene.on_resident.append(fn)

    def grass_count(self, key):
        t = self.scene.tiles.get(key)
        return None if t is None else t.grass_instances

    # -- the pick --
    def sync_ground(self) -> None:
        """The pick's ground follows the resident tiles (a tile's heights copied once, as it arrives;
        before the frame's picks)."""
        self.ground.sync(self.scene.tiles, getattr(self.scene, "version", None))

    def ground_at(self, viewer, x: float, y: float):
        """World point under window pixel (x, y) (screen units scaled to the framebuffer): a ray over
        the resident tiles' heights (``render.pick``'s march over :class:`GroundAtlas`)."""
        target = viewer.target
        ws = target.glfw.get_window_size(target.window) if hasattr(target, "glfw") else target.size
        sx, sy = target.size[0] / max(ws[0], 1), target.size[1] / max(ws[1], 1)
        o, d = self.ray(viewer.camera, target.size, x * sx, y * sy)
        self.sync_ground()
        return self.ground.pick(o, d)

    def ray(self, cam, size, x: float, y: float):
        """``render.pick.pixel_ray`` (the same arithmetic, the same ray), the camera's inverse
        view-projection kept while the camera and the view's size stay (a frame's picks share it)."""
        w, h = size
        key = (cam.position.tobytes(), cam.yaw, cam.pitch, cam.fov_y, cam.near, cam.far, w, h)
        cam.aspect = w / max(h, 1)
        if key != self._ray_key:
            self._ray_inv = np.linalg.inv(np.asarray(cam.view_proj(), np.float64))
            self._ray_key = key
        ndc = np.array([2.0 * (x + 0.5) / w - 1.0, 1.0 - 2.0 * (y + 0.5) / h], np.float64)
        p = self._ray_inv @ np.array([ndc[0], ndc[1], -1.0, 1.0])
        q = self._ray_inv @ np.array([ndc[0], ndc[1], 1.0, 1.0])
        a, b = p[:3] / p[3], q[:3] / q[3]
        d = b - a
        return np.asarray(cam.position, np.float64).copy(), d / np.linalg.norm(d)

    def ground_at_by_tile(self, o, d):
        """``render.pick.pick_ground`` itself (per-tile passes): what the atlas's pick equals."""
        return pick_ground(self.scene, o, d)

    # -- the terrain's uniforms and cell marks --
    def show(self, overlays: dict, picked, brush) -> None:
        """The overlays shown ({name: on}), the picked cell's outline (a CellRef or None) and the
        brush circle ((x, y, radius) or None)."""
        from .overlays import DRAWN_AS

        cells = self.scene.terrain.cells
        mask = 0
        for n, on in overlays.items():
            if on:
                mask |= OVERLAY_BITS[DRAWN_AS.get(n, n)]
        cells.mask = mask
        if picked is not None:
            x, y = cell_corner(picked)
            cells.pick = (x, y, UNIT_SIZE, 1.0)
        else:
            cells.pick = (0.0, 0.0, 0.0, 0.0)
        cells.brush = (float(brush[0]), float(brush[1]), float(brush[2]), 1.0) if brush is not None else \
            (0.0, 0.0, 0.0, 0.0)

    def set_palette(self, colours) -> None:
        """The cell palette (20 RGB, 0..1): the effect sets' or the rules overlay's."""
        self.scene.terrain.cells.look(palette=tuple(colours))

    def set_cells(self, key, img) -> None:
        """A tile's cell marks: (128, 128, 4) u1 (overlays.py's layout)."""
        self.scene.terrain.cells.set(key, img)

    # -- grass --
    def placed(self, key, chunks) -> dict:
        """Model -> instances of ``chunks`` of tile ``key`` (None: every chunk), as the session
        places them now."""
        if chunks is None:
            return tile_grass(self.session.tile_instances(key))
        placed = self.session.place_chunks(key, chunks)
        parts: dict = {}
        for inst in placed.values():
            for name, arr in tile_grass(inst).items():
                parts.setdefault(name, []).append(arr)
        return {n: np.concatenate(a) for n, a in parts.items()}

    def merged(self, key, chunks, placed) -> dict:
        """The tile's resident grass with ``chunks`` replaced by ``placed``."""
        t = self.scene.tiles.get(key)
        if chunks is None:
            return placed
        return merge_grass((t.grass or {}) if t is not None else {}, t.adt if t is not None else None, chunks, placed)

    def keeps_grass(self, key) -> bool:
        """Whether the scene kept ``key``'s grass arrays (so some chunks can be replaced in them)."""
        t = self.scene.tiles.get(key)
        return t is None or t.grass is not None

    # -- the grass thread: edits placed, merged and packed off the frame's thread --
    def queue(self, key, chunks, label) -> None:
        """Place ``chunks`` of ``key`` (None: the whole tile) again on the grass thread; a frame
        hands the result to the scene (:meth:`hand_over_ready`)."""
        key = (int(key[0]), int(key[1]))
        with self._cv:
            cur = self._todo.get(key)
            if cur is None:
                self._todo[key] = [None if chunks is None else {int(i) for i in chunks}, [label]]
            else:
                cur[0] = None if chunks is None or cur[0] is None else cur[0] | {int(i) for i in chunks}
                cur[1].append(label)
            if self._thread is None and not self._stop:
                self._thread = threading.Thread(target=self._place_loop, name="wowgrass-grass", daemon=True)
                self._thread.start()
            self._cv.notify_all()

    @property
    def placing(self) -> bool:
        """Grass queued or being placed (a finished result waits for a frame: :attr:`handing`)."""
        with self._cv:
            return bool(self._todo or self._placing)

    @property
    def handing(self) -> bool:
        """Placed grass waiting for a frame to hand it to the scene."""
        with self._cv:
            return bool(self._ready)

    def wait_placed(self, timeout: float = 30.0) -> bool:
        """Until nothing is queued or being placed (what is placed then waits for a frame's
        :meth:`hand_over_ready`); False at the timeout."""
        with self._cv:
            return self._cv.wait_for(lambda: not self._todo and not self._placing, timeout)

    def close(self) -> None:
        with self._cv:
            self._stop = True
            self._cv.notify_all()
        if self._thread is not None:
            self._thread.join(5.0)

    def _arrived(self, key) -> None:
        """The scene's hook: ``key`` resident (again): results merged into its old grass are stale."""
        with self._cv:
            self._gen[key] = self._gen.get(key, 0) + 1

    def _place_loop(self) -> None:
        while True:
            with self._cv:
                self._cv.wait_for(lambda: self._todo or self._stop)
                if self._stop:
                    return
                key = min(self._todo, key=lambda k: self._todo[k][0] is None)  # dabs before whole tiles
                chunks, labels = self._todo.pop(key)
                waiting = self._ready.get(key)
                gen = self._gen.get(key, 0)
                self._placing = True
            t0, c0 = time.perf_counter(), time.thread_time()
            try:
                made = self._make(key, chunks, labels, waiting)
            except Exception as exc:  # the view goes on; the panel says what failed
                made = None
                if self.on_error is not None:
                    self.on_error(f"placing grass of {key[0]},{key[1]} failed: {type(exc).__name__}: {exc}")
            self.place_times.append(((time.perf_counter() - t0) * 1000.0, (time.thread_time() - c0) * 1000.0))
            with self._cv:
                if made is not None:
                    replaces = waiting is not None and self._ready.get(key) is waiting  # it waits still
                    if replaces:
                        made.labels = waiting.labels + made.labels
                        if made.chunks is not None:
                            made.chunks = None if waiting.chunks is None else made.chunks | waiting.chunks
                    if made.base_gen is not None:  # merged: valid while the scene holds the grass it was merged into
                        if waiting is None:
                            made.base_gen = gen
                        elif replaces:
                            made.base_gen = waiting.base_gen
                        else:  # a frame took it meanwhile: this one follows it (-1: it was dropped)
                            made.base_gen = -1 if waiting.handed_gen is None else waiting.handed_gen
                    self._ready[key] = made
                self._placing = False
                self._cv.notify_all()

    def _make(self, key, chunks, labels, waiting) -> _Placed | None:
        """The tile's grass with ``chunks`` placed again (the grass thread), chunk-sorted and grouped."""
        t = self.scene.tiles.get(key)
        if t is None:
            return None  # not resident: the scene places it as it streams in
        base = waiting.grass if waiting is not None else t.grass
        if base is None:
            chunks = None  # the scene did not keep this tile's grass: all of it again
        placed = self.placed(key, chunks)
        grass = placed if chunks is None else merge_grass(base, t.adt, chunks, placed)
        groups = {}
        for name in list(grass):
            if not len(grass[name]):
                continue
            grass[name], groups[name] = group_by_chunk(np.ascontiguousarray(grass[name]))
        extra = self.extras(key, grass) if getattr(self.scene, "client_look", False) else None
        return _Placed(grass, groups, extra, chunks, list(labels), None if chunks is None else 0)

    def hand_over_ready(self) -> int:
        """The frame's part: the grass the grass thread finished, handed to the scene's upload
        path (buffers sorted and grouped already). Returns the tiles handed over."""
        n = 0
        with self._cv:  # the grass thread only books its result under it: a short wait at most
            ready, self._ready = self._ready, {}
            for key, r in ready.items():
                if r.base_gen is not None and self._gen.get(key, 0) != r.base_gen:
                    # merged into grass the scene no longer holds: placed again on what it holds
                    for label in r.labels:
                        self.queue(key, r.chunks, label)
                    continue
                if key not in self.scene.tiles:
                    continue
                self.hand_over(key, r.grass, r.labels, extra=r.extra, groups=r.groups)
                r.handed_gen = self._gen[key]
                n += 1
        return n

    def replace_chunks(self, key, chunks, label) -> None:
        """Place ``chunks`` of ``key`` again now and hand the tile's grass to the scene (on the
        calling thread: the frame's thread uses :meth:`queue`)."""
        if not self.keeps_grass(key):  # the scene did not keep this tile's grass: all of it again
            chunks = None
        self.hand_over(key, self.merged(key, chunks, self.placed(key, chunks)), [label])

    def hand_over(self, key, grass, labels, *, extra=None, groups=None) -> None:
        if extra is None and self.scene.client_look:
            extra = self.extras(key, grass)
        if groups is not None and self._grouped:
            self.scene.replace_grass(key, grass, extra, groups=groups)
        else:
            self.scene.replace_grass(key, grass, extra)
        with self._cv:
            self._gen[key] = self._gen.get(key, 0) + 1
        self.edits_applied.extend((label, self.frame) for label in labels)
        del self.edits_applied[:-64]

    def extras(self, key, grass) -> dict:
        from wowgrass.render.world.client_look import tuft_extras

        adt = self.session.tile(key)
        flags = getattr(self.scene.source, "grass_flags", {})
        build = getattr(getattr(self.session, "catalog", None), "build", "3.3.5")
        return {n: tuft_extras(adt, inst, flags=flags.get(n, 0), build=build) for n, inst in grass.items()}

    # -- reloads --
    def reload_tile(self, key) -> bool:
        """The scene reads the tile's files again (the old tile drawn until the new one is uploaded)."""
        return bool(self.scene.reload_tile(key))

    def tables_changed(self, catalog) -> None:
        """Tiles loaded from now on are placed with ``catalog`` (the view's source)."""
        if hasattr(self.scene.source, "catalog"):
            self.scene.source.catalog = catalog

    def keep_spare(self) -> None:
        """A reloaded tile's second copy is drawn until it replaces the first: room kept for it."""
        if hasattr(self.scene, "keep_spare"):
            self.scene.keep_spare(1)

    def move_camera(self, viewer, position, target) -> None:
        cam = viewer.camera
        cam.position = np.array(position, float)
        cam.look_at(target)
        self.scene.update(cam.position)

    def scene_version(self):
        return getattr(self.scene, "version", 0)


def write_screen_png(target, path) -> None:
    """The window's back buffer as drawn (frame and panels) to ``path``."""
    from wowgrass.render.viewer import write_png

    w, h = target.size
    data = target.ctx.screen.read(viewport=(0, 0, w, h), components=3, alignment=1)
    write_png(path, np.frombuffer(data, np.uint8).reshape(h, w, 3)[::-1])

