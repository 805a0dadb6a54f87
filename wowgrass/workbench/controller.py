"""The workbench in the view's window: the glue between an :class:`EditSession`, the running scene
and the panels (panels.py draws them; this module holds what they show and does what they ask).

Frame thread (``before_frame``): input turned into tool calls, the grass of the chunks an edit
changed placed again and handed to the scene (:meth:`Scene.replace_grass`), overlay images and
reloads that the worker finished put in place. Worker thread: overlays of tiles as they become
resident, large re-placements (a table changed), reloads of files another program saved, the
audit's findings. Render never imports this module: it offers hooks (``WindowUi``, the terrain's
``CellOverlays``, ``Scene.replace_grass``/``reload_tile``/``on_resident``, ``render.pick``).
"""

from __future__ import annotations

import math
import queue
import threading
import time as _time
from dataclasses import dataclass, field

import numpy as np

from wowgrass.formats.adt import CHUNK_SIZE, TILE_SIZE, UNIT_SIZE, ZEROPOINT
from wowgrass.grass.bundle import pack_instances
from wowgrass.render.pick import pick_ground, pixel_ray
from wowgrass.render.sources.terrain import OVERLAY_BITS
from wowgrass.render.window import WindowUi

from .overlays import OVERLAYS, SetColours, cell_overlay, tile_grass_textures
from .tools import TOOLS, ToolRefused, ToolState, tool_keys

SYNC_CHUNKS = 16  # an edit touching at most this many chunks is placed again on the frame thread


@dataclass
class Finding:
    """One line of the audit's findings, with where the camera flies for it (None: nowhere)."""

    kind: str
    text: str
    target: tuple | None = None  # world (X, Y)


@dataclass
class Hover:
    """What lies under the cursor (the status line)."""

    world: np.ndarray | None = None
    ref: object = None
    at: float = 0.0
    key: tuple | None = None  # (cursor, camera) of the last pick


def chunk_centre(tile, chunk) -> tuple[float, float]:
    """World (X, Y) of chunk (cx, cy)'s centre in tile (col, row)."""
    col, row = tile
    cx, cy = chunk
    return (ZEROPOINT - row * TILE_SIZE - (cy + 0.5) * CHUNK_SIZE,
            ZEROPOINT - col * TILE_SIZE - (cx + 0.5) * CHUNK_SIZE)


def cell_corner(ref) -> tuple[float, float]:
    """World (X, Y) of a cell's north-west corner."""
    col, row = ref.tile
    cx, cy = ref.chunk
    x, y = ref.cell
    return (ZEROPOINT - row * TILE_SIZE - cy * CHUNK_SIZE - y * UNIT_SIZE,
            ZEROPOINT - col * TILE_SIZE - cx * CHUNK_SIZE - x * UNIT_SIZE)


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


class _JobQueue:
    """The worker's jobs by kind: a file another program saved is reloaded before the overlays of
    tiles that arrived are computed (each a few hundred ms on a slow machine)."""

    ORDER = {None: -1, "info": 0, "reload": 0, "replace": 1, "overlay": 2, "audit": 3}

    def __init__(self):
        import itertools

        self._q: queue.PriorityQueue = queue.PriorityQueue()
        self._seq = itertools.count()

    def put(self, job) -> None:
        self._q.put((self.ORDER[None if job is None else job[0]], next(self._seq), job))

    def get(self):
        return self._q.get()[2]

    def empty(self) -> bool:
        return self._q.empty()


class Workbench(WindowUi):
    """The window's workbench (the window's ``ui``): see the module docstring."""

    def __init__(self, session, scene, *, watch=None, audit: bool = True, log=None, panels: bool = True):
        self.session, self.scene = session, scene
        self.log = log or (lambda s: None)
        self.lock = threading.RLock()  # the session is used by the frame thread and the worker
        self.colours = SetColours()
        self.grass_textures: set[str] = set()
        self.overlays = {name: False for name, _k, _l in OVERLAYS}
        self.tools = ToolState()
        self.hover = Hover()
        self.picked = None  # CellRef
        self.picked_info: dict | None = None
        self.pick_ms: float | None = None
        self.help = False
        self.findings: list[Finding] = []
        self.findings_note = "the audit runs in the background" if audit else None
        self.messages: list[str] = []  # the last results (save, patch, reloads, errors)
        self.frame_ms = 0.0
        self.ui_version = 0  # bumped when something the panels show changed (they build again)
        self._frame_t = None
        self.frames = 0
        self.edits_applied: list = []  # (change label, frame the scene got its grass)
        self.viewer = self.controls = None
        self.cursor = (0.0, 0.0)
        self.painting = False
        self._stroke = None
        self._last_dab = None
        self._main: queue.Queue = queue.Queue()  # callables for the frame thread
        self._jobs = _JobQueue()  # reloads first, then grass, then overlays, the audit last
        self._stop = False
        self._busy = False  # the worker is on a job
        self._overlay_fresh: set = set()  # tiles whose overlay data is current
        self._overlay_queued: set = set()  # tiles with an overlay job waiting
        self._audit = audit
        self._watch_roots = watch
        self.watcher = None
        self.reloads: list[dict] = []  # {paths, tiles, seen (s), drawn (s) once resident again}
        self._pending_reload: dict = {}  # tile -> reload entry waiting for its tile
        self.ui = None
        self._want_panels = panels
        self.shots: list[str] = []  # screenshots written (F12)
        self.shots_pending: list = []
        self.shot_prefix = "wowgrass-shot"
        self.save_dir = "workbench-out"  # Ctrl+S and the Save panel's folder (an overlay folder)
        self.patch_path = "patch-wowgrass.MPQ"
        scene.keep_grass = True
        scene.on_resident.append(self._tile_resident)
        self.scene.terrain.cells.set_colours = self.colours.shader_colours()
        self._worker = threading.Thread(target=self._work, name="wowgrass-workbench", daemon=True)
        self._worker.start()

    # -- WindowUi --
    def install(self, viewer, controls) -> None:
        self.viewer, self.controls = viewer, controls
        if self._want_panels:
            from .panels import Panels

            self.ui = Panels(self, viewer.target)
        if self._audit:
            self._jobs.put(("audit", None))
        if self._watch_roots:
            from .watch import FileWatcher

            if hasattr(self.scene, "keep_spare"):
                self.scene.keep_spare(1)  # a reloaded tile's second copy, drawn until it replaces the first

            self.watcher = FileWatcher(self._watch_roots, self._files_changed)
            self.watcher.start()

    def close(self) -> None:
        self._stop = True
        self._jobs.put(None)
        if self.watcher is not None:
            self.watcher.stop()
        if self.ui is not None:
            self.ui.close()
            self.ui = None

    def before_frame(self, dt: float) -> None:
        t0 = _time.perf_counter()
        self.frames += 1
        # the wall time between frames (the window's dt is clamped for the camera's sake)
        self.frame_ms = (t0 - self._frame_t) * 1000.0 if self._frame_t is not None else dt * 1000.0
        self._frame_t = t0
        while True:
            try:
                fn = self._main.get_nowait()
            except queue.Empty:
                break
            fn()
        if self.viewer is not None and (self.ui is not None or self.tools.tool != "pick"):
            self.update_hover()
        if self.painting and not (self.ui is not None and self.ui.wants_mouse()):
            self._dab()
        self._sync_terrain()
        self.work_ms = (_time.perf_counter() - t0) * 1000.0

    def draw(self) -> None:
        if self.ui is not None:
            self.ui.draw()
        if self.shots_pending:
            self._write_shot(self.shots_pending.pop(0))

    def _write_shot(self, path):
        """The window's back buffer as drawn (frame and panels) to ``path`` (F12)."""
        from wowgrass.render.viewer import write_png

        target = self.viewer.target
        w, h = target.size
        data = target.ctx.screen.read(viewport=(0, 0, w, h), components=3, alignment=1)
        write_png(path, np.frombuffer(data, np.uint8).reshape(h, w, 3)[::-1])
        self.shots.append(str(path))
        self.say(f"screenshot {path}")

    # -- input (the panels see it first) --
    def on_key(self, key, scancode, action, mods) -> bool:
        g = self.controls.glfw
        if self.ui is not None and self.ui.on_key(key, scancode, action, mods):
            return True
        if action != g.PRESS:
            return False
        ctrl = bool(mods & g.MOD_CONTROL)
        if ctrl and key == g.KEY_Z:
            self.redo() if mods & g.MOD_SHIFT else self.undo()
            return True
        if ctrl and key == g.KEY_Y:
            self.redo()
            return True
        if ctrl and key == g.KEY_S:
            self.save(self.save_dir)
            return True
        if key == g.KEY_F1:
            self.help = not self.help
            return True
        if key == g.KEY_F12:
            self.shots_pending.append(f"{self.shot_prefix}-{len(self.shots) + len(self.shots_pending) + 1}.png")
            return True
        overlay_keys = {getattr(g, f"KEY_{k}"): name for name, k, _l in OVERLAYS}
        if key in overlay_keys:
            self.toggle_overlay(overlay_keys[key])
            return True
        keyed = {getattr(g, f"KEY_{k}"): name for k, name in tool_keys().items()}
        if key in keyed:
            self.tools.tool = keyed[key]
            self._sync_terrain()
            return True
        return False

    def on_char(self, codepoint) -> bool:
        return self.ui is not None and self.ui.on_char(codepoint)

    def on_cursor(self, x, y) -> bool:
        self.cursor = (float(x), float(y))
        if self.ui is not None:
            self.ui.on_cursor(x, y)
        return False

    def on_button(self, button, action, mods) -> bool:
        g = self.controls.glfw
        if self.painting and button == g.MOUSE_BUTTON_LEFT and action == g.RELEASE:
            self.end_stroke()  # wherever the stroke ends, over a panel too
            if self.ui is not None:
                self.ui.on_button(button, action, mods)
            return True
        if self.ui is not None and self.ui.on_button(button, action, mods):
            return True
        if button != g.MOUSE_BUTTON_LEFT:
            return False  # the right button looks around, as in 3D editors
        if action == g.PRESS:
            if self.tools.brush():
                self.begin_stroke()
            else:
                self.pick_at(*self.cursor)
        elif action == g.RELEASE and self.painting:
            self.end_stroke()
        return True

    def begin_stroke(self):
        """A brush stroke: every dab until :meth:`end_stroke` is one undo step (EditSession.stroke)."""
        self.painting = True
        self._last_dab = None
        self._stroke = self.session.stroke(f"{self.tools.tool} stroke r={self.tools.radius:g}")
        self._stroke.__enter__()
        if self.viewer is not None:
            self._dab()

    def end_stroke(self):
        self.painting = False
        stroke, self._stroke = self._stroke, None
        if stroke is not None:
            stroke.__exit__(None, None, None)

    def on_scroll(self, dx, dy) -> bool:
        if self.ui is not None and self.ui.on_scroll(dx, dy):
            return True
        g = self.controls.glfw
        ctrl = g.get_key(self.controls.window, g.KEY_LEFT_CONTROL) == g.PRESS
        if ctrl or (self.tools.tool != "pick" and g.get_key(self.controls.window, g.KEY_LEFT_ALT) == g.PRESS):
            self.tools.radius = float(np.clip(self.tools.radius * 1.15 ** dy, 0.5, 200.0))
            return True
        return False

    # -- picking --
    def ground_at(self, x: float, y: float):
        """World point under window pixel (x, y) (screen units scaled to the framebuffer)."""
        target = self.viewer.target
        ws = target.glfw.get_window_size(target.window) if hasattr(target, "glfw") else target.size
        sx, sy = target.size[0] / max(ws[0], 1), target.size[1] / max(ws[1], 1)
        o, d = pixel_ray(self.viewer.camera, target.size, x * sx, y * sy)
        return pick_ground(self.scene, o, d)

    def cell_at(self, x: float, y: float):
        """The cell under world (X, Y): from the resident tile's grid where the view has the tile
        (the session reads a tile only when its cell's details are asked for)."""
        t = self.scene.tiles.get(self.session.tile_of(x, y))
        return self.session.cell_at(x, y, grid=getattr(t, "adt", None))

    def pick_at(self, x: float, y: float):
        """Pick the cell under pixel (x, y): its outline, and its info (``picked_info``: on the
        worker, a frame or two later, where the session has not read that tile yet)."""
        t0 = _time.perf_counter()
        p = self.ground_at(x, y)
        ref = self.cell_at(float(p[0]), float(p[1])) if p is not None else None
        self.pick_ms = (_time.perf_counter() - t0) * 1000.0
        self.picked = ref
        self.picked_info = None
        self.ui_version += 1
        if ref is not None:
            world, light = [float(v) for v in p], self.light_at(p)
            if self.session.has_read(ref.tile):
                with self.lock:
                    info = self.session.cell_info(ref)
                self._show_info(ref, info, world, light)
            else:  # the session reads the tile (a frame's worth) on the worker; the panel follows
                self._jobs.put(("info", (ref, world, light)))
        self._sync_terrain()
        return ref

    def _show_info(self, ref, info, world, light):
        if self.picked != ref:  # picked elsewhere meanwhile
            return
        info["world"], info["light"] = world, light
        self.picked_info = info
        self.ui_version += 1

    def _refresh_pick(self):
        self.ui_version += 1
        if self.picked is None or self.picked_info is None:
            return
        with self.lock:
            info = self.session.cell_info(self.picked)
        info["world"], info["light"] = self.picked_info.get("world"), self.picked_info.get("light")
        self.picked_info = info

    def light_at(self, p) -> dict | None:
        """The light tables' light at ``p``: the view's hour (``--clock``), else noon from the
        data's tables (the view then draws its fixed sun; ``fixed_sun`` says so); None where the
        data has no light for the map."""
        from wowgrass.game.light import clock_text, scene_light

        zl = getattr(self.viewer, "zone_light", None)
        if zl is not None:
            map_light, clock, fixed = zl.map_light, zl.clock, False
        else:
            map_light, clock, fixed = self._tables_light(), 1440, True
            if map_light is None:
                return None
        sl = scene_light(map_light, np.asarray(p, np.float64), clock)
        return {"hour": clock_text(clock), "fixed_sun": fixed,
                "sun_dir": [round(float(v), 3) for v in sl.sun_dir],
                "sun_colour": [round(float(v), 3) for v in sl.sun_color],
                "ambient": [round(float(v), 3) for v in sl.ambient],
                "fog": [round(float(v), 1) for v in sl.fog]}

    def _tables_light(self):
        """The map's MapLight from the session's data (once; False cached when it has none)."""
        if getattr(self, "_map_light", None) is None:
            self._map_light = False
            try:
                from wowgrass.game.light import load_light_tables, resolve_map

                tables = load_light_tables(self.session.data, build=self.session.build)
                if tables is not None:
                    map_id, _ = resolve_map(self.session.data, self.session.map_name)
                    self._map_light = tables.map_light(map_id)
            except Exception:  # no Light.dbc, no Map.dbc row: the pick says there is no light
                self._map_light = False
        return self._map_light or None

    def update_hover(self):
        """The ground under the cursor (status line, brush circle): picked again when the cursor or
        the camera moved, at most 20 times a second."""
        now = _time.perf_counter()
        cam = self.viewer.camera
        key = (self.cursor, tuple(cam.position.tolist()), cam.yaw, cam.pitch, self.scene.version)
        if key == self.hover.key or now - self.hover.at < 0.05:
            return
        self.hover.at, self.hover.key = now, key
        p = self.ground_at(*self.cursor)
        self.ui_version += 1
        self.hover.world = p
        self.hover.ref = self.cell_at(float(p[0]), float(p[1])) if p is not None else None

    # -- tools --
    def _dab(self):
        """One dab of the brush tool under the cursor (a stroke: a dab each half radius moved)."""
        p = self.ground_at(*self.cursor)
        if p is None:
            return
        spacing = 0.5 * self.tools.radius
        last = self._last_dab
        if last is not None and math.dist(p[:2], last) < spacing:
            return
        # the cursor may have gone far between two frames: dabs along the way, half a radius apart
        n = 1 if last is None else max(1, int(math.dist(p[:2], last) // spacing))
        for i in range(1, n + 1):
            f = i / n
            x, y = (float(p[0]), float(p[1])) if last is None else (last[0] + (p[0] - last[0]) * f,
                                                                     last[1] + (p[1] - last[1]) * f)
            self.apply_tool(x, y)
        self._last_dab = (float(p[0]), float(p[1]))

    def apply_tool(self, x: float, y: float):
        """The current tool's dab at world (x, y) (the registry's ``apply``)."""
        try:
            with self.lock:
                change = TOOLS[self.tools.tool].apply(self.session, (x, y), self.tools)
        except ToolRefused as exc:
            self.say(str(exc))
            return None
        if change is None:
            return None
        self.apply_change(change)
        return change

    def assign_scope(self):
        """Assign the texture over the map or the picked tile (the panel's button)."""
        ts = self.tools
        if not ts.texture:
            self.say("assign: choose a texture first")
            return None
        kw = {}
        if ts.scope == "tile":
            if self.picked is None:
                self.say("assign to a tile: pick a cell of it first")
                return None
            kw["tile"] = self.picked.tile
        with self.lock:
            change = self.session.assign_texture(ts.texture, ts.effect_id, **kw)
        self.apply_change(change)
        return change

    def preview_set(self):
        ts = self.tools
        models = [m for m in ts.set_models if m]
        weights = [int(w) for m, w in zip(ts.set_models, ts.set_weights) if m]
        if not models:
            self.say("effect set: choose at least one model")
            return None
        with self.lock:
            eid = self.session.preview_set(models, weights, int(ts.set_density),
                                           effect_id=ts.set_effect or None)
        ts.preview_id = eid
        ts.effect_id = eid
        self.say(f"effect set {eid} previewed (no table written; assign it to a texture to see it)")
        return eid

    def undo(self):
        with self.lock:
            change = self.session.undo()
        if change is not None:
            self.apply_change(change)
            self.say(change.label)
        return change

    def redo(self):
        with self.lock:
            change = self.session.redo()
        if change is not None:
            self.apply_change(change)
            self.say(change.label)
        return change

    def save(self, out_dir=None, *, in_place: bool = False):
        try:
            if out_dir is not None:  # the panel names a folder: made if new (as effects -o takes one)
                from pathlib import Path

                Path(out_dir).mkdir(parents=True, exist_ok=True)
            with self.lock:
                res = self.session.save(out_dir, in_place=in_place)
        except Exception as exc:  # a file changed on disk, a folder not writable: said, not raised
            self.say(f"save failed: {exc}")
            return None
        self.say(f"saved {len(res.get('files', res.get('written', [])) or [])} file(s)"
                 + (f" to {out_dir}" if out_dir else " in place" if in_place else ""))
        return res

    def build_patch(self, out_path):
        try:
            with self.lock:
                res = self.session.build_patch(out_path)
        except Exception as exc:
            self.say(f"patch failed: {exc}")
            return None
        self.say(f"patch written: {out_path}")
        return res

    def say(self, text: str):
        self.ui_version += 1
        self.messages.append(text)
        del self.messages[:-8]
        self.log(text)

    # -- changes reach the screen --
    def apply_change(self, change):
        """The chunks ``change`` touched: placed again and handed to the scene now (a few) or by
        the worker (many, or the tables: every resident tile); their tiles' overlays again."""
        self.ui_version += 1
        if change is None:
            return
        if self.picked is not None and (change.tables or self.picked.tile in (change.chunks or {})):
            self._main.put(self._refresh_pick)  # the Cell panel shows the edited cell (next frame)
        resident = [k for k in (change.chunks or {}) if k in self.scene.tiles]
        if change.tables:
            for key in list(self.scene.tiles):
                if self.scene.tiles[key].full:
                    self._jobs.put(("replace", (key, None, change.label)))
            self._overlays_stale(list(self.scene.tiles))
            return
        n = sum(len(change.chunks[k]) for k in resident)
        for key in resident:
            if n <= SYNC_CHUNKS:
                self._replace_chunks(key, change.chunks[key], change.label)
            else:
                self._jobs.put(("replace", (key, set(change.chunks[key]), change.label)))
        self._overlays_stale(resident)

    def _placed(self, key, chunks) -> dict:
        """Model -> instances of ``chunks`` of tile ``key`` (None: every chunk), as the session
        places them now."""
        if chunks is None:
            with self.lock:
                return tile_grass(self.session.tile_instances(key))
        with self.lock:
            placed = self.session.place_chunks(key, chunks)
        parts: dict = {}
        for inst in placed.values():
            for name, arr in tile_grass(inst).items():
                parts.setdefault(name, []).append(arr)
        return {n: np.concatenate(a) for n, a in parts.items()}

    def _merged(self, key, chunks, placed) -> dict:
        """The tile's resident grass with ``chunks`` replaced by ``placed``."""
        t = self.scene.tiles.get(key)
        old = (t.grass or {}) if t is not None else {}
        if chunks is None:
            return placed
        out = {}
        ground = t.adt if t is not None else None
        drop = np.zeros(256, bool)
        drop[list(chunks)] = True
        for name, inst in old.items():
            if len(inst) and ground is not None:
                ch = ground.chunk_index_at(inst["pos"][:, 0], inst["pos"][:, 1])
                inst = inst[~drop[np.clip(ch, 0, 255)] | (ch < 0)]
            out[name] = inst
        for name, inst in placed.items():
            out[name] = np.concatenate([out[name], inst]) if name in out else inst
        return out

    def _replace_chunks(self, key, chunks, label):
        t = self.scene.tiles.get(key)
        if t is not None and t.grass is None:  # the scene did not keep this tile's grass: all of it again
            chunks = None
        grass = self._merged(key, chunks, self._placed(key, chunks))
        self._hand_over(key, grass, label)

    def _hand_over(self, key, grass, label):
        extra = None
        if self.scene.client_look:
            extra = self._extras(key, grass)
        self.scene.replace_grass(key, grass, extra)
        self.edits_applied.append((label, self.frames))
        del self.edits_applied[:-64]

    def _extras(self, key, grass) -> dict:
        from wowgrass.render.world.client_look import tuft_extras

        with self.lock:
            adt = self.session.tile(key)
        flags = getattr(self.scene.source, "grass_flags", {})
        build = getattr(getattr(self.session, "catalog", None), "build", "3.3.5")
        return {n: tuft_extras(adt, inst, flags=flags.get(n, 0), build=build) for n, inst in grass.items()}

    # -- overlays --
    def toggle_overlay(self, name: str, on: bool | None = None):
        self.ui_version += 1
        self.overlays[name] = (not self.overlays[name]) if on is None else bool(on)
        self._sync_terrain()
        self._overlays_stale([])  # the first overlay on: the resident tiles' data, where not current

    def _overlays_stale(self, keys):
        """``keys``' overlay data no longer current; while an overlay is shown, every resident
        complete tile whose data is not current is computed again on the worker (none is computed
        while every overlay is off: tiles arriving in a flight cost nothing then)."""
        for key in keys:
            self._overlay_fresh.discard(key)
        if not any(self.overlays.values()):
            return
        for key, t in list(self.scene.tiles.items()):
            if t.full and key not in self._overlay_fresh and key not in self._overlay_queued:
                self._overlay_queued.add(key)
                self._jobs.put(("overlay", key))

    def _sync_terrain(self):
        cells = self.scene.terrain.cells
        cells.mask = sum(OVERLAY_BITS[n] for n, on in self.overlays.items() if on)
        if self.picked is not None:
            x, y = cell_corner(self.picked)
            cells.pick = (x, y, UNIT_SIZE, 1.0)
        else:
            cells.pick = (0.0, 0.0, 0.0, 0.0)
        if self.tools.brush() and self.hover.world is not None and not (self.ui is not None and self.ui.wants_mouse()):
            cells.brush = (float(self.hover.world[0]), float(self.hover.world[1]), self.tools.radius, 1.0)
        else:
            cells.brush = (0.0, 0.0, 0.0, 0.0)

    def _tile_resident(self, key):
        self._overlays_stale([key])  # a tile (again): its bytes may be new (a reload)
        entry = self._pending_reload.pop(key, None)
        if entry is not None:
            entry["drawn_s"] = _time.perf_counter() - entry["t0"]
            entry.setdefault("grass_after", {})[key] = self.scene.tiles[key].grass_instances
            self.say(f"reloaded tile {key[0]},{key[1]} in {entry['drawn_s'] * 1000:.0f} ms")

    def _overlay_ready(self, key, img):
        self.scene.terrain.cells.set(key, img)
        if key not in self._overlay_queued:  # no newer request on the way
            self._overlay_fresh.add(key)

    def overlay_for(self, key) -> np.ndarray:
        with self.lock:
            tile = self.session.tile(key)
            cat = self.session.catalog
        self.grass_textures |= tile_grass_textures(tile, cat)
        return cell_overlay(tile, key, cat, self.colours, self.grass_textures)

    # -- watching another editor --
    def _files_changed(self, paths):
        self._jobs.put(("reload", (set(paths), _time.perf_counter())))

    # -- the worker --
    def _work(self):
        while not self._stop:
            job = self._jobs.get()
            if job is None:
                return
            kind, arg = job
            self._busy = True
            try:
                if kind == "overlay":
                    self._overlay_queued.discard(arg)
                    img = self.overlay_for(arg)
                    self._main.put(lambda k=arg, i=img: self._overlay_ready(k, i))
                elif kind == "replace":
                    key, chunks, label = arg
                    grass = self._placed(key, chunks)
                    self._main.put(lambda k=key, c=chunks, g=grass, lb=label:
                                   self._hand_over(k, self._merged(k, c, g), lb))
                elif kind == "info":
                    ref, world, light = arg
                    with self.lock:
                        info = self.session.cell_info(ref)
                    self._main.put(lambda r=ref, i=info, w=world, li=light: self._show_info(r, i, w, li))
                elif kind == "audit":
                    self._run_audit()
                elif kind == "reload":
                    self._reload(*arg)
            except Exception as exc:  # the view goes on; the panel says what failed
                self._main.put(lambda e=exc, k=kind: self.say(f"{k} failed: {type(e).__name__}: {e}"))
            finally:
                self._busy = False

    def _reload(self, paths, t0):
        with self.lock:
            change = self.session.reload(paths)
        tiles = [k for k in (change.chunks or {})]
        tiles += [k for k in self._resident_files_in(paths) if k not in tiles]

        def on_main():
            entry = {"paths": sorted(str(p) for p in paths), "tiles": tiles, "t0": t0,
                     "seen_s": _time.perf_counter() - t0}
            self.reloads.append(entry)
            if change.tables and hasattr(self.scene.source, "catalog"):
                self.scene.source.catalog = self.session.catalog  # tiles loaded from now on
                for key in list(self.scene.tiles):
                    if self.scene.tiles[key].full and key not in tiles:
                        self._jobs.put(("replace", (key, None, "tables reloaded")))
            for key in tiles:
                t = self.scene.tiles.get(key)
                entry.setdefault("grass_before", {})[key] = t.grass_instances if t is not None else None
                if self.scene.reload_tile(key):
                    self._pending_reload[key] = entry
            self.say(f"changed on disk: {', '.join(p.rsplit('/', 1)[-1] for p in entry['paths'])}")

        self._main.put(on_main)

    def _resident_files_in(self, paths) -> list:
        """Resident tiles whose ADT is one of ``paths`` (the session reports the tiles it had
        loaded; the view draws more: those it never needed, with every overlay off)."""
        from pathlib import Path

        from wowgrass.game.maps import adt_game_path

        wanted = {Path(p).resolve() for p in paths}
        out = []
        for key in list(self.scene.tiles):
            found = self.session.data.locate(adt_game_path(self.session.map_name, *key))
            if found is not None and found[1] is None and Path(found[0]).resolve() in wanted:
                out.append(key)
        return out

    def _run_audit(self):
        from wowgrass.edit.audit import audit_map

        a = audit_map(self.session.data, self.session.map_name, picture=False)
        found = []
        for tex in a.textures:
            for c in tex["unassigned_chunks"][:50]:
                found.append(Finding("unassigned", f"{tex['path'].rsplit(chr(92), 1)[-1]}: no effect id "
                                     f"(tile {c['tile'][0]},{c['tile'][1]} chunk {c['chunk'][0]},{c['chunk'][1]})",
                                     chunk_centre(tuple(c["tile"]), tuple(c["chunk"]))))
        for t in a.per_tile:
            col, row = t["tile"]
            centre = (ZEROPOINT - (row + 0.5) * TILE_SIZE, ZEROPOINT - (col + 0.5) * TILE_SIZE)
            if t.get("stale"):
                found.append(Finding("stale", f"tile {col},{row}: {t['stale']} stale doodadMapping cells", centre))
            if t.get("excluded_grass"):
                found.append(Finding("excluded", f"tile {col},{row}: {t['excluded_grass']} excluded cells "
                                     "that would grow grass", centre))
        for r in a.missing_rows:
            found.append(Finding("no row", f"effect {r['id']}: no GroundEffectTexture row ({r['cells']} cells)"))
        for m in a.missing_models:
            found.append(Finding("model", f"missing model {m['model']} (effects {m['effects']})"))
        grass = {t["path"].lower() for t in a.textures if t["carries_grass"]}

        def on_main():
            self.ui_version += 1
            self.findings = found
            self.findings_note = f"{len(found)} finding(s) over {len(a.tiles)} tile(s)"
            self.grass_textures |= grass  # the map's grass textures: every tile's unassigned cells again
            self._overlays_stale(list(self._overlay_fresh))

        self._main.put(on_main)

    def fly_to(self, finding: Finding):
        """Put the camera 60 units from the finding's place, looking down at it."""
        if finding.target is None:
            return
        x, y = finding.target
        cam = self.viewer.camera
        with self.lock:
            ref = self.session.cell_at(x, y)
        z = 0.0
        if ref is not None:
            try:
                with self.lock:
                    tile = self.session.tile(ref.tile)
                k = ref.chunk[1] * 16 + ref.chunk[0]
                ch = int(tile.chunk_index_at(x, y))
                z = float(tile.heights_at(ch if ch >= 0 else k, x, y))
            except Exception:  # a tile the session cannot read: the height stays 0
                pass
        cam.position = np.array([x + 45.0, y + 10.0, z + 40.0])
        cam.look_at((x, y, z))
        self.scene.update(cam.position)

    def report(self) -> dict:
        """What the session did, for ``view --json`` (``workbench``)."""
        s = self.session
        return {"panels": self.ui is not None or self._want_panels, "edit_count": len(s.history),
                "history": list(s.history), "changed_tiles": [list(k) for k in s.changed_tiles],
                "changed_tables": list(s.changed_tables), "picked": None if self.picked is None else
                {"tile": list(self.picked.tile), "chunk": list(self.picked.chunk), "cell": list(self.picked.cell)},
                "pick_ms": self.pick_ms, "overlays": [n for n, on in self.overlays.items() if on],
                "messages": list(self.messages), "finding_count": len(self.findings), "screenshots": list(self.shots),
                "edits_applied": [{"label": lb, "frame": f} for lb, f in self.edits_applied],
                "reloads": [{"paths": r["paths"], "tiles": [list(t) for t in r["tiles"]],
                             "seen_ms": r["seen_s"] * 1000.0,
                             "drawn_ms": r["drawn_s"] * 1000.0 if "drawn_s" in r else None,
                             "grass_instance_counts": {f"{k[0]},{k[1]}": [r.get("grass_before", {}).get(k),
                                                                          r.get("grass_after", {}).get(k)]
                                                       for k in r["tiles"]}} for r in self.reloads]}


def watch_roots(data) -> list:
    """The loose folders of ``data`` a watcher follows (its layers, a loose root, and the folder of a
    file ``view ADT`` added; an MPQ chain alone has none)."""
    from pathlib import Path

    from .watch import watched_folders

    roots = list(watched_folders(data))
    for _game_path, f in (getattr(data, "_files", None) or {}).values():  # view ADT: the file's folder
        roots.append(Path(f).parent)
    return list(dict.fromkeys(r.resolve() for r in roots if r.is_dir()))


def add_table_files(data, dbc_dir) -> None:
    """``view --dbc DIR``: the ground-effect tables of that folder (or its DBFilesClient) answer for
    their game paths in ``data``, so the session reads and saves the tables the view places with."""
    if not dbc_dir:
        return
    from pathlib import Path

    from .session import TABLES

    folders = [Path(dbc_dir), Path(dbc_dir) / "DBFilesClient"]
    for game_path in TABLES:
        name = game_path.replace("\\", "/").rsplit("/", 1)[-1].lower()
        for folder in folders:
            hit = [p for p in folder.glob("*") if p.name.lower() == name] if folder.is_dir() else []
            if hit:
                data.add_file(game_path, hit[0])
                break


def open_workbench(viewer, scene, src, data, *, panels: bool = True, overlays=(), watch: bool = False,
                   audit: bool = True, build=None, log=None) -> Workbench:
    """The workbench over the view's map (``view`` builds it for its window): an EditSession with
    the view's placement, overlays ``overlays`` on, a watcher of the data's loose folders."""
    from wowgrass.errors import UsageError

    from .session import EditSession

    add_table_files(data, (getattr(src, "_args", None) or {}).get("dbc_dir"))
    session = EditSession(data, src.map, placement=getattr(src, "placement", "client"), build=build,
                          constants=getattr(src, "constants", None))
    roots = None
    if watch:
        roots = watch_roots(data)
        if not roots:
            raise UsageError("--watch follows loose folders: --data is an MPQ chain with none laid over it")
        if log:
            log("watching " + ", ".join(str(r) for r in roots))
    bench = Workbench(session, scene, watch=roots, audit=audit and panels, log=log, panels=panels)
    for name in overlays:
        bench.toggle_overlay(name, True)
    return bench
