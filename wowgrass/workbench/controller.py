"""The workbench in the view's window: the glue between an :class:`EditSession`, the scene (through
bridge.py) and the panels (panels.py draws them; this module holds what they show and does what
they ask).

The rooms (docs/architecture.md draws them): the session (session.py) holds the bytes and says what
changed; the tools (tools.py) turn a click or a dab into a session call; the disk side (disk.py)
saves, patches and reloads; the placement cache (placing.py) and this controller subscribe to the
session's changes; the bridge (bridge.py, the one module importing render) hands the scene its
grass, cell marks and reloads; worker processes (workers.py) compute each tile's overlay facts and
the audit and hand arrays back through shared memory.

Frame thread (``before_frame``): input routed (one place: "input" below), a dab's edit of the
session's bytes, finished results mapped: grass the bridge's grass thread placed, merged and grouped
(an edit's chunks, or whole tiles after a table changed) handed to the scene's upload path, a frame
or two after the edit. The workbench's thread: reloads, a picked cell's details, and feeding the
worker processes. The pick never reads or computes a tile: the cell comes from the resident tile's grid
and the Cell panel's details from the workbench's thread.
"""

from __future__ import annotations

import itertools
import math
import queue
import sys
import threading
import time as _time
from dataclasses import dataclass

import numpy as np

from .bridge import SceneBridge, WindowUi, tile_grass
from .findings import Finding
from .geometry import cell_corner, chunk_centre
from .input_gate import InputGate
from .overlays import OVERLAYS, SetColours, cell_overlay, tile_grass_textures
from .rules_bench import RulesView
from .tools import TOOLS, ToolRefused, ToolState, tool_keys
from .unsaved import UnsavedGuard

__all__ = ["Finding", "Hover", "Workbench", "add_table_files", "cell_corner", "changed_names", "chunk_centre",
           "open_workbench", "tile_grass", "watch_roots"]

@dataclass
class Hover:
    """What lies under the cursor (the status line)."""

    world: np.ndarray | None = None
    ref: object = None
    at: float = 0.0
    key: tuple | None = None  # (cursor, camera) of the last pick


def changed_names(paths) -> str:
    """The files of a watcher's batch as the panel says them: folders left out (a folder's own
    event is no changed file), a removed file said so."""
    from pathlib import Path

    out = []
    for p in sorted(str(p) for p in paths):
        path = Path(p)
        if path.is_dir():
            continue
        out.append(path.name if path.exists() else f"{path.name} (removed)")
    return ", ".join(out)
class _JobQueue:
    """The workbench thread's jobs by kind: a file another program saved is reloaded before the
    overlays of tiles that arrived are handed to the workers."""

    ORDER = {None: -1, "info": 0, "reload": 0, "call": 1, "read": 2, "overlay": 2, "audit": 3}

    def __init__(self):
        self._q: queue.PriorityQueue = queue.PriorityQueue()
        self._seq = itertools.count()

    def put(self, job) -> None:
        self._q.put((self.ORDER[None if job is None else job[0]], next(self._seq), job))

    def get(self):
        return self._q.get()[2]

    def empty(self) -> bool:
        return self._q.empty()


#: The GIL switch interval while a workbench is open (Python's is 5 ms): the frame's thread, asking for
#: the GIL for a pick while the grass thread or a result's hand-over runs Python, waits at most this
#: long (docs/view.md: at 5 ms the slowest picks in flight were 4-5 ms of waiting, at 0.5 ms ~1 ms)
GIL_SWITCH_S = 0.0005


class Workbench(WindowUi):
    """The window's workbench (the window's ``ui``): see the module docstring."""

    def __init__(self, session, scene, *, watch=None, audit: bool = True, log=None, panels: bool = True,
                 workers: int | None = None, rules=None, switch_interval: float | None = GIL_SWITCH_S):
        from .disk import SessionFiles

        self._switch0 = sys.getswitchinterval()
        if switch_interval:  # None or 0: the interpreter's own
            sys.setswitchinterval(switch_interval)

        self.session, self.scene = session, scene
        self.files = SessionFiles(session)  # save, patch, reload
        self.log = log or (lambda s: None)
        self.colours = SetColours()
        self.bridge = SceneBridge(session, scene, self.colours)
        self.bridge.on_error = lambda text: self._main.put(lambda: self.say(text))
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
        self.viewer = self.controls = None
        self.cursor = (0.0, 0.0)
        self.painting = False
        self._stroke = None
        self._last_dab = None
        self._frame_thread = threading.get_ident()  # changes made here are shown at once
        self._main: queue.Queue = queue.Queue()  # callables for the frame thread
        self._jobs = _JobQueue()  # reloads first, then grass, then overlays, the audit last
        self._stop = False
        self._busy = False  # the worker is on a job
        self._info_cache: dict = {}  # CellRef -> (tile version, tables version, info): a pick shows it at once
        self._overlay_fresh: set = set()  # tiles whose overlay data is current
        self._overlay_queued: set = set()  # tiles with an overlay job waiting
        self._rules_queued: set = set()  # tiles with a rules overlay job waiting
        self._reading: set = set()  # tiles the session is asked to read ahead of a brush
        self._after_read: dict = {}  # tile -> workbench-thread jobs waiting for a worker's reading of it
        self._read_lock = threading.Lock()
        self._parse_failed: set = set()  # tiles a worker could not read: read on the workbench's thread
        self._audit = audit
        self._n_workers = workers  # worker processes for overlays and the audit (0: on the workbench's thread)
        self.workers = None  # TileWorkers, started with the first overlay or the audit
        self.overlays_shown = 0  # overlay images put in place
        self.overlays_dropped = 0  # worker results for bytes changed since (a newer job followed)
        self._watch_roots = watch
        self.watcher = None
        self.reloads: list[dict] = []  # {paths, tiles, seen (s), drawn (s) once resident again}
        self._pending_reload: dict = {}  # tile -> reload entry waiting for its tile
        self._reload_t0 = None
        self.ui = None
        self.gate = InputGate()
        self.unsaved = UnsavedGuard(self)  # the quit question, the recovery file (unsaved.py)
        self._replaying = False  # a held event on its way to the window's controls
        self._want_panels = panels
        self.layout = None  # the panels' layout as last drawn (report)
        self.shots: list[str] = []  # screenshots written (F12)
        self.shots_pending: list = []
        self.shot_prefix = "wowgrass-shot"
        self.save_dir = "workbench-out"  # Ctrl+S and the Save panel's folder (an overlay folder)
        self.patch_path = _default_patch_path(session)  # a name the client loads (patching.py)
        # the rules file (rules_bench.py): the Cell panel's why, the rules overlay, drift, the watch's re-apply
        self.rules = None if rules is None else RulesView(session, rules, watch=bool(watch),
                                                          on_line=lambda s: self.later(lambda: self.say(s)))
        session.subscribe(self._session_changed)
        self.files.subscribe(self._files_reloaded)
        self.bridge.on_resident(self.tile_resident)
        self._worker = threading.Thread(target=self._work, name="wowgrass-workbench", daemon=True)
        self._worker.start()

    def later(self, fn) -> None:
        """Run ``fn`` on the frame's thread, before the next frame."""
        self._main.put(fn)

    def in_background(self, fn) -> None:
        """Run ``fn`` on the workbench's thread (never on the frame's); what it raises is said."""
        self._jobs.put(("call", fn))

    @property
    def edits_applied(self) -> list:
        """(change label, frame) of every change whose grass the scene got."""
        return self.bridge.edits_applied

    @property
    def idle(self) -> bool:
        """No job waiting or under way on the workbench's thread nor in its worker processes."""
        return (self._jobs.empty() and not self._busy and not self.bridge.placing and not self._after_read
                and (self.workers is None or not self.workers.busy))

    @property
    def jobs_waiting(self) -> bool:
        """Jobs queued for the workbench's thread that it has not taken yet."""
        return not self._jobs.empty()

    def _pool(self):
        """The worker processes (started on first use), or None: computed on the workbench's thread."""
        if self._n_workers == 0:
            return None
        if self.workers is None:
            from .workers import TileWorkers

            self.workers = TileWorkers(self.session, self._worker_result, n=self._n_workers)
        return self.workers

    def _worker_result(self, kind, job, payload):
        """A worker's result (the pool's thread): mapped on the frame's thread."""
        if kind == "overlay":
            self._main.put(lambda: self._overlay_mapped(job, *payload))
        elif kind == "audit":
            self._audit_done(payload)
        elif kind == "parse":  # a tile read ahead: the session keeps it (a lock, a dict entry: no parsing here)
            raw, tile, centres = payload
            try:
                self.session.take_read(job.key, raw, tile, centres)
            finally:
                self._read_done(job.key)
        elif kind == "rules":
            self._main.put(lambda: self._rules_result(job, *payload))
        else:
            if job is not None and job.kind == "parse":  # read where it is needed instead
                self._parse_failed.add(job.key)
                self._read_done(job.key)
            self._main.put(lambda: self.say(f"{job.kind if job else 'worker'} failed: {payload}"))
            if job is not None and job.kind == "audit":  # the Findings panel says it, no longer "runs"
                self._main.put(lambda: self._audit_failed(str(payload)))

    def _read_done(self, key) -> None:
        """A worker's reading of ``key`` is over: the jobs that waited for it queued again."""
        self._reading.discard(key)
        with self._read_lock:
            for fn in self._after_read.get(key, []):
                self._jobs.put(fn)
            self._after_read.pop(key, None)

    # -- WindowUi --
    def install(self, viewer, controls) -> None:
        self.viewer, self.controls = viewer, controls
        if self._want_panels:
            from .panels import Panels

            self.ui = Panels(self, viewer.target)
            self.unsaved.look_for_recovery()
        self.unsaved.install_signals()
        if self._audit:
            self._jobs.put(("audit", None))
        if self.rules is not None:  # the tiles resident already: their drift from the rules
            resident = self.bridge.resident_tiles()
            self.in_background(lambda: self._check_drift(resident))
        if self._watch_roots:
            from .watch import FileWatcher

            self.bridge.keep_spare()  # a reloaded tile's second copy, drawn until it replaces the first
            self.watcher = FileWatcher(self._watch_roots, self._files_changed)
            self.watcher.start()

    def may_close(self) -> bool:
        return self.unsaved.may_close()

    def close(self) -> None:
        sys.setswitchinterval(self._switch0)
        self.unsaved.on_close()
        self._stop = True
        self._jobs.put(None)
        self.session.unsubscribe(self._session_changed)
        self.bridge.close()
        if self.workers is not None:
            self.workers.close()
        if self.watcher is not None:
            self.watcher.stop()
        if self.ui is not None:
            self.layout = self.ui.layout()
            self.ui.close()
            self.ui = None

    def before_frame(self, dt: float) -> None:
        t0 = _time.perf_counter()
        self._frame_thread = threading.get_ident()
        self.bridge.sync_ground()  # tiles that arrived: their heights into the pick's arrays, before any pick
        self.frames += 1
        self.bridge.frame = self.frames
        # the wall time between frames (the window's dt is clamped for the camera's sake)
        self.frame_ms = (t0 - self._frame_t) * 1000.0 if self._frame_t is not None else dt * 1000.0
        self._frame_t = t0
        while True:
            try:
                fn = self._main.get_nowait()
            except queue.Empty:
                break
            fn()
        self.bridge.hand_over_ready()  # grass the grass thread finished: buffers to the scene's upload
        self._release_input()
        if self.viewer is not None and (self.ui is not None or self.tools.tool != "pick"):
            self.update_hover()
        if self.painting and self.viewer is not None and not self._panels_want_mouse():
            self._dab()
        if self._pending_reload:
            self._reload_failures()
        self._sync_terrain()
        self.work_ms = (_time.perf_counter() - t0) * 1000.0

    def draw(self) -> None:
        if self.ui is not None:
            self.ui.draw()
        if self.shots_pending:
            self._write_shot(self.shots_pending.pop(0))

    def _write_shot(self, path):
        """The window's back buffer as drawn (frame and panels) to ``path`` (F12)."""
        from .bridge import write_screen_png

        write_screen_png(self.viewer.target, path)
        self.shots.append(str(path))
        self.say(f"screenshot {path}")

    # -- input: every event reaches the panels first (input_gate.py: what they take, nothing else
    # sees), then the workbench's bindings, then the view --
    def _panels_want_mouse(self) -> bool:
        return self.ui is not None and self.ui.wants_mouse()

    def _key_action(self, key, mods):
        """The workbench's binding of a pressed key (a callable), or None (the view's keys then)."""
        g = self.controls.glfw
        ctrl, shift = bool(mods & g.MOD_CONTROL), bool(mods & g.MOD_SHIFT)
        if ctrl and key == g.KEY_Z:
            return self.redo if shift else self.undo
        if ctrl and key == g.KEY_Y:
            return self.redo
        if ctrl and key == g.KEY_S:
            return lambda: self.save(self.save_dir)
        if key == g.KEY_F1:
            return self.toggle_help
        if key == g.KEY_F12:
            return self.screenshot
        for name, k, _l in OVERLAYS:
            if key == getattr(g, f"KEY_{k}", None):
                return lambda n=name: self.toggle_overlay(n)
        for k, name in tool_keys().items():
            if key == getattr(g, f"KEY_{k}", None):
                return lambda n=name: self.choose_tool(n)
        return None

    def on_key(self, key, scancode, action, mods) -> bool:
        if self._replaying:
            return False
        if self.ui is not None:
            self.ui.on_key(key, scancode, action, mods)
            self.gate.hold("key", (key, scancode, action, mods), self.ui.last_event_id())
            return True
        return self._bench_key(key, scancode, action, mods)

    def _bench_key(self, key, scancode, action, mods) -> bool:
        if action != self.controls.glfw.PRESS:
            return False
        act = self._key_action(key, mods)
        if act is None:
            return False
        act()
        return True

    def on_char(self, codepoint) -> bool:
        return self.ui is not None and self.ui.on_char(codepoint)

    def on_cursor(self, x, y) -> bool:
        self.cursor = (float(x), float(y))
        if self.ui is not None:
            self.ui.on_cursor(x, y)
        return False

    def on_button(self, button, action, mods) -> bool:
        if self._replaying:
            return False
        if self.ui is not None:
            self.ui.on_button(button, action, mods)
            self.gate.hold("button", (button, action, mods), self.ui.last_event_id(), self.cursor)
            return True
        return self._bench_button(button, action, mods, self.cursor)

    def _bench_button(self, button, action, mods, at) -> bool:
        g = self.controls.glfw
        if self.painting and button == g.MOUSE_BUTTON_LEFT and action == g.RELEASE:
            self.end_stroke()  # wherever the stroke ends, over a panel too
            return True
        if button != g.MOUSE_BUTTON_LEFT:
            return False  # the right button looks around, as in 3D editors
        if action == g.PRESS:
            if self.tools.brush():
                self.begin_stroke(at)
            else:
                self.pick_at(*at)
        return True

    def on_scroll(self, dx, dy) -> bool:
        if self._replaying:
            return False
        g = self.controls.glfw
        held = (g.get_key(self.controls.window, g.KEY_LEFT_CONTROL) == g.PRESS,
                g.get_key(self.controls.window, g.KEY_LEFT_ALT) == g.PRESS)
        if self.ui is not None:
            self.ui.on_scroll(dx, dy)
            self.gate.hold("scroll", (dx, dy, *held), self.ui.last_event_id())
            return True
        return self._bench_scroll(dx, dy, *held)

    def _bench_scroll(self, dx, dy, ctrl, alt) -> bool:
        if ctrl or (self.tools.tool != "pick" and alt):
            self.tools.radius = float(np.clip(self.tools.radius * 1.15 ** dy, 0.5, 200.0))
            return True
        return False

    # -- what the bindings do --
    def choose_tool(self, name: str) -> None:
        self.tools.tool = name
        self.ui_version += 1
        self._sync_terrain()
        self._read_ahead(self.bridge.resident_tiles())

    def _read_ahead(self, keys) -> None:
        """With a brush in hand, the session reads the resident tiles on the workbench's thread, so
        that a dab never waits for a tile's first reading on the frame's thread."""
        if not self.tools.brush():
            return
        for key in keys:
            if key not in self._reading and not self.session.has_read(key):
                self._reading.add(key)
                self._jobs.put(("read", key))

    def toggle_help(self) -> None:
        self.help = not self.help
        self.ui_version += 1

    def screenshot(self) -> None:
        self.shots_pending.append(f"{self.shot_prefix}-{len(self.shots) + len(self.shots_pending) + 1}.png")

    def _release_input(self):
        """The held events a frame of panels has seen: imgui's, or the tools' and the camera's."""
        if self.ui is None:
            return
        c = self.controls
        for ev, taken in self.gate.ready():
            kind, args = ev.kind, ev.args
            if kind == "key":
                key, _sc, action, _mods = args
                if self.unsaved.open and action != c.glfw.RELEASE and key != c.glfw.KEY_F12:
                    continue  # the question's keys (imgui has them); a screenshot still goes
                if taken and action == c.glfw.PRESS and not self._field_free(key, _mods):
                    continue  # typed into a field: never the view's keys
                if not (action == c.glfw.PRESS and self._bench_key(*args)):
                    self._replay(c.on_key, c.window, *args)
            elif kind == "button":
                button, action, mods = args
                ending = self.painting and action == c.glfw.RELEASE
                if taken and not ending:
                    if action == c.glfw.RELEASE:
                        self._replay(c.on_button, c.window, *args)  # a look that began before stays consistent
                    continue
                if not self._bench_button(button, action, mods, ev.cursor):
                    self._replay(c.on_button, c.window, *args)
            elif kind == "scroll" and not taken:
                dx, dy, ctrl, alt = args
                if not self._bench_scroll(dx, dy, ctrl, alt):
                    self._replay(c.on_scroll, c.window, dx, dy)

    def _field_free(self, key, mods) -> bool:
        """Keys no text field uses (F1..F12, Ctrl+S): the view's even while a field is active."""
        g = self.controls.glfw
        return g.KEY_F1 <= key <= g.KEY_F12 or (bool(mods & g.MOD_CONTROL) and key == g.KEY_S)

    def _replay(self, handler, *args):
        """A held event to the window's own controls (the workbench passes it on this time)."""
        self._replaying = True
        try:
            handler(*args)
        finally:
            self._replaying = False

    def begin_stroke(self, at=None):
        """A brush stroke: every dab until :meth:`end_stroke` is one undo step (EditSession.stroke);
        ``at``: the window pixel of its first dab (the cursor where the button went down)."""
        try:
            TOOLS[self.tools.tool].begin(self, self.tools)
        except ToolRefused as exc:
            self.say(str(exc))
            return
        self.painting = True
        self._last_dab = None
        self._stroke = self.session.stroke(f"{self.tools.tool} stroke r={self.tools.radius:g}")
        self._stroke.__enter__()
        if self.viewer is not None:
            self._dab(at)

    def end_stroke(self):
        self.painting = False
        stroke, self._stroke = self._stroke, None
        if stroke is not None:
            stroke.__exit__(None, None, None)
            TOOLS[self.tools.tool].end(self, self.tools)

    # -- picking --
    def ground_at(self, x: float, y: float):
        """World point under window pixel (x, y) (screen units scaled to the framebuffer)."""
        return self.bridge.ground_at(self.viewer, x, y)

    def cell_at(self, x: float, y: float):
        """The cell under world (X, Y) from the resident tiles' grids (``EditSession.cell_at``'s rule
        on the pick's arrays; None where no tile is resident there: the pick never reads a tile)."""
        from .session import CellRef

        self.bridge.sync_ground()
        hit = self.bridge.ground.cell(x, y)
        if hit is None:
            return None
        key, _idx, chunk, cell = hit
        return CellRef(key, chunk, cell)

    def pick_at(self, x: float, y: float):
        """Pick the cell under pixel (x, y): its outline at once; its details (``picked_info``)
        from the workbench's thread a frame or two later, or at once where they were worked out
        for this cell's tile as it is now."""
        t0 = _time.perf_counter()
        p = self.ground_at(x, y)
        ref = self.cell_at(float(p[0]), float(p[1])) if p is not None else None
        self.pick_ms = (_time.perf_counter() - t0) * 1000.0
        return self.show_cell(ref, p)

    def show_cell(self, ref, p=None):
        """Show ``ref`` (a CellRef, None: nothing) as picked at world point ``p``: its outline at
        once, its details (the rules' why too) from the workbench's thread."""
        self.picked = ref
        self.picked_info = None
        self.ui_version += 1
        if ref is not None:
            world = [float(v) for v in p] if p is not None else None
            light = self.light_at(p) if p is not None and self.viewer is not None else None
            hit = self._info_cache.get(ref)
            now = (self.session.tile_version(ref.tile), self.session.tables_version)
            if self.rules is not None:
                now = (*now, self.rules.key())  # the file as it is now (a stat, once a pick)
            if hit is not None and hit[:-1] == now:
                self._show_info(ref, dict(hit[-1]), world, light)
            else:
                self._jobs.put(("info", (ref, world, light)))
        self._sync_terrain()
        return ref

    def _cell_info(self, ref) -> dict:
        """The session's cell info (the workbench's thread), kept for a pick of the same cell."""
        versions = (self.session.tile_version(ref.tile), self.session.tables_version)
        info = self.session.cell_info(ref)
        if self.rules is not None:
            versions = (*versions, self.rules.key())
        if len(self._info_cache) > 256:
            self._info_cache.clear()
        entry = self._info_cache[ref] = (*versions, dict(info))  # before a worker's why can come back
        if self.rules is not None:
            try:
                if not self._rules_submit([ref], "explain"):  # the why from a worker process, a moment later
                    info["rules"] = entry[-1]["rules"] = self.rules.explain(ref)  # or here
            except Exception as exc:  # the rules cannot explain it: said in the panel, the pick stands
                info["rules"] = entry[-1]["rules"] = {"error": f"{type(exc).__name__}: {exc}"}
        return info

    def _show_info(self, ref, info, world, light):
        if self.picked != ref:  # picked elsewhere meanwhile
            return
        hit = self._info_cache.get(ref)
        if "rules" not in info and hit is not None and "rules" in hit[-1]:  # the worker's why came first
            info["rules"] = hit[-1]["rules"]
        if world is not None:
            info["world"] = world
        info["light"] = light
        self.picked_info = info
        self.ui_version += 1

    def _refresh_pick(self):
        self.ui_version += 1
        if self.picked is None or self.picked_info is None:
            return
        self._jobs.put(("info", (self.picked, self.picked_info.get("world"), self.picked_info.get("light"))))

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
        """The map's MapLight from the session's data (once; False cached when it has none). What
        is wrong with tables that read is said once, as `view` says it: parts ignored, or tables
        that do not belong together (the Cell panel's light then reads black)."""
        if getattr(self, "_map_light", None) is None:
            self._map_light = False
            said: list[str] = []
            try:
                from wowgrass.game.light import load_light_tables, resolve_map

                tables = load_light_tables(self.session.data, warn=said.append, build=self.session.build)
                if tables is not None:
                    map_id, _ = resolve_map(self.session.data, self.session.map_name)
                    self._map_light = tables.map_light(map_id)
                    said += self._map_light.warnings
                else:   # none, or ones that do not read: the pick says there is no light
                    said.clear()
            except Exception:  # no Map.dbc row, no global light: the pick says there is no light
                self._map_light = False
            for w in said:
                self.say(f"warning: {w}")
        return self._map_light or None

    def update_hover(self):
        """The ground under the cursor (status line, brush circle): picked again when the cursor or
        the camera moved, at most 20 times a second."""
        now = _time.perf_counter()
        cam = self.viewer.camera
        key = (self.cursor, tuple(cam.position.tolist()), cam.yaw, cam.pitch, self.bridge.scene_version())
        if key == self.hover.key or now - self.hover.at < 0.05:
            return
        self.hover.at, self.hover.key = now, key
        p = self.ground_at(*self.cursor)
        self.ui_version += 1
        self.hover.world = p
        self.hover.ref = self.cell_at(float(p[0]), float(p[1])) if p is not None else None

    # -- tools --
    def _dab(self, at=None):
        """One dab of the brush tool under the cursor (a stroke: a dab each half radius moved)."""
        p = self.ground_at(*(at or self.cursor))
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
        """The current tool's dab at world (x, y) (the registry's ``apply``); the Change it makes
        reaches the scene through the session's subscription. A tool that cannot act as set, or an
        edit the session refuses (a texture no layer matches), is said in the window once, not once
        a dab, and never raised out of the frame loop."""
        from wowgrass.errors import WowgrassError

        try:
            return TOOLS[self.tools.tool].apply(self.session, (x, y), self.tools)
        except ToolRefused as exc:
            self._say_once(str(exc))
        except WowgrassError as exc:
            self._say_once(f"{self.tools.tool}: {exc}")
        return None

    def _say_once(self, text: str) -> None:
        """``text`` said unless it is the last thing said (a stroke's dabs refused alike)."""
        if not self.messages or self.messages[-1] != text:
            self.say(text)

    def assign_scope(self):
        """The panel's button (an edit the session refuses is said, not raised)."""
        from wowgrass.errors import WowgrassError

        try:
            return self._assign_scope()
        except WowgrassError as exc:
            self.say(f"assign scope: {exc}")
            return None

    def _assign_scope(self):
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
        return self.session.assign_texture(ts.texture, ts.effect_id, **kw)

    def preview_set(self):
        """The panel's button (an edit the session refuses is said, not raised)."""
        from wowgrass.errors import WowgrassError

        try:
            return self._preview_set()
        except WowgrassError as exc:
            self.say(f"preview set: {exc}")
            return None

    def _preview_set(self):
        ts = self.tools
        models = [m for m in ts.set_models if m]
        # untouched weights: None, the library's default (effects new-set's: 16 points shared evenly)
        weights = None if ts.set_weights_even else [int(w) for m, w in zip(ts.set_models, ts.set_weights) if m]
        if not models:
            self.say("effect set: choose at least one model")
            return None
        eid = self.session.preview_set(models, weights, int(ts.set_density), effect_id=ts.set_effect or None)
        ts.preview_id = eid
        ts.effect_id = eid
        self.say(f"effect set {eid} previewed (no table written; assign it to a texture to see it)")
        return eid

    def undo(self):
        change = self.session.undo()
        if change is not None:
            self.say(change.label)
        return change

    def redo(self):
        change = self.session.redo()
        if change is not None:
            self.say(change.label)
        return change

    def save(self, out_dir=None, *, in_place: bool = False):
        try:
            if out_dir is not None:  # the panel names a folder: made if new (as effects -o takes one)
                from pathlib import Path

                Path(out_dir).mkdir(parents=True, exist_ok=True)
            saved_tiles = list(self.session.changed_tiles)
            res = self.files.save(out_dir, in_place=in_place)
        except Exception as exc:  # a file changed on disk, a folder not writable: said, not raised
            self.say(f"save failed: {exc}")
            return None
        if self.rules is not None and saved_tiles:  # the files on disk changed: their drift again
            self.in_background(lambda: self._check_drift(saved_tiles))
        self.say(f"saved {len(res.get('files', res.get('written', [])) or [])} file(s)"
                 + (f" to {out_dir}" if out_dir else " in place" if in_place else ""))
        self.unsaved.saved()
        return res

    def build_patch(self, out_path=None):
        """The Changes panel's Build patch (patching.py: patch build's names, rules and notes)."""
        from .patching import build_window_patch

        return build_window_patch(self.files, out_path, self.say)

    def say(self, text: str):
        self.ui_version += 1
        self.messages.append(text)
        del self.messages[:-8]
        self.log(text)

    # -- changes reach the screen (the session's subscriber) --
    def _session_changed(self, change):
        """Every Change the session makes: shown now where it was made on the frame's thread (a
        tool's dab: drawn in the next frame), else handed to that thread. A reload comes with its
        files through the disk side's subscription instead (the scene reads those files itself)."""
        if change.source == "reload":
            return
        if threading.get_ident() == self._frame_thread:
            self.apply_change(change)
        else:
            self._main.put(lambda c=change: self.apply_change(c))

    def apply_change(self, change):
        """The chunks ``change`` touched (the tables undone: every resident tile): queued for the
        bridge's grass thread, whose result a later frame hands to the scene; their tiles'
        overlays again."""
        self.ui_version += 1
        if change is None:
            return
        if self.picked is not None and (change.tables or self.picked.tile in (change.chunks or {})):
            self._main.put(self._refresh_pick)  # the Cell panel shows the edited cell (next frame)
        if change.tables and change.source != "edit":  # an edit names every chunk its tables change touches
            for key in self.bridge.resident_tiles():
                self.bridge.queue(key, None, change.label)
            self._overlays_stale(self.bridge.resident_tiles(full=False))
            return
        resident = [k for k in (change.chunks or {}) if self.bridge.resident(k)]
        for key in resident:
            self.bridge.queue(key, change.chunks[key], change.label)
        self._overlays_stale(self.bridge.resident_tiles(full=False) if change.tables else resident)

    # -- overlays --
    def toggle_overlay(self, name: str, on: bool | None = None):
        self.ui_version += 1
        self.overlays[name] = (not self.overlays[name]) if on is None else bool(on)
        if name in ("rules", "sets") and self.overlays[name]:  # both colour the cells from one palette
            self.overlays["sets" if name == "rules" else "rules"] = False
        if name in ("rules", "sets"):
            self._rules_shown(self.overlays["rules"])
        self._sync_terrain()
        self._overlays_stale([])  # the first overlay on: the resident tiles' data, where not current

    def _overlays_stale(self, keys):
        """``keys``' overlay data no longer current; while an overlay is shown, every resident
        complete tile whose data is not current is computed again (none is computed while every
        overlay is off: tiles arriving in a flight cost nothing then)."""
        for key in keys:
            self._overlay_fresh.discard(key)
        if not any(self.overlays.values()):
            return
        for key in self.bridge.resident_tiles():
            if key not in self._overlay_fresh and key not in self._overlay_queued:
                self._overlay_queued.add(key)
                self._jobs.put(("overlay", key))

    def _sync_terrain(self):
        brush = None
        if self.tools.brush() and self.hover.world is not None and not self._panels_want_mouse():
            brush = (float(self.hover.world[0]), float(self.hover.world[1]), self.tools.radius)
        self.bridge.show(self.overlays, self.picked, brush)

    def tile_resident(self, key):
        """The scene's hook: ``key`` is resident (again: its bytes may be new, a reload)."""
        self._overlays_stale([key])
        self._read_ahead([key])
        entry = self._pending_reload.pop(key, None)
        if self.rules is not None:
            self._rules_stale([key])
            if entry is not None or key not in self.rules.drifts:  # new bytes on disk: their drift
                self.in_background(lambda k=key: self._check_drift([k]))
        if entry is not None:
            entry["drawn_s"] = _time.perf_counter() - entry["t0"]
            entry.setdefault("grass_after", {})[key] = self.bridge.grass_count(key)
            self.say(f"reloaded tile {key[0]},{key[1]} in {entry['drawn_s'] * 1000:.0f} ms")

    def _reload_failures(self):
        """A tile saved on disk that the scene could not read again (not an ADT, cut short): said in
        the window, not only on stderr (the tile drawn before stays)."""
        errors = getattr(self.scene, "errors", {}) or {}
        for key, entry in list(self._pending_reload.items()):
            err = errors.get(key)
            if err is not None and err != entry.setdefault("errors_before", {}).get(key, None):
                del self._pending_reload[key]
                self.say(f"tile {key[0]},{key[1]} could not be read again ({err}): the tile drawn before stays")

    def _overlay_ready(self, key, img):
        self.overlays_shown += 1
        if self.rules is not None:  # the rules overlay's colours over the regular flags
            img = self.rules.compose(key, img, shown=self.overlays["rules"])
        self.bridge.set_cells(key, img)
        if key not in self._overlay_queued:  # no newer request on the way
            self._overlay_fresh.add(key)

    def _overlay_mapped(self, job, img, effect_ids, grass):
        """A worker's overlay of ``job.key`` (the frame's thread): its colours mapped to the
        window's, put in place; dropped where the tile or the tables changed since the job was made
        (that change asked for a newer one)."""
        from .workers import map_overlay

        key = job.key
        if job.version != (self.session.tile_version(key), self.session.tables_version):
            self.overlays_dropped += 1
            return
        self.grass_textures |= grass
        self._overlay_ready(key, map_overlay(img, effect_ids, self.colours))

    def overlay_for(self, key) -> np.ndarray:
        """Tile ``key``'s cell marks computed here (the worker processes give the same)."""
        tile = self.session.tile(key)
        cat = self.session.catalog
        self.grass_textures |= tile_grass_textures(tile, cat)
        return cell_overlay(tile, key, cat, self.colours, self.grass_textures)

    # -- watching another editor --
    def _files_changed(self, paths):
        t0 = _time.perf_counter()
        if self.rules is not None:  # the watcher's thread: the rules put each saved tile right first
            from pathlib import Path

            if self.rules.path.resolve() in {Path(p).resolve() for p in paths}:
                self.in_background(self.rules_changed)
            try:
                own = self.rules.reloaded_already(self.rules.saved(paths))
            except Exception as exc:  # the reload goes on; the panel says what failed
                self.later(lambda e=exc: self.say(f"rules on save failed: {type(e).__name__}: {e}"))
                own = set()
            # the rules' own write of a save was reloaded with that save already: not again
            paths = [p for p in paths if Path(p).resolve() not in own]
            if not paths:
                return
        self._jobs.put(("reload", (set(paths), t0)))

    # -- the rules (rules_bench.py): the rules overlay, drift; all computed on the workbench's thread --
    def _rules_shown(self, on: bool) -> None:
        """The rules overlay on or off: the palette, and every tile's image as it now shows."""
        from .rules_bench import rule_palette

        if on and self.rules is None:
            self.overlays["rules"] = False
            self.say("the rules overlay: the view has no rules file (view --rules FILE)")
            return
        self.bridge.set_palette(rule_palette() if on else self.colours.shader_colours())
        if self.rules is None:
            return
        for key in self.rules.known_tiles():
            img = self.rules.compose(key, shown=on)
            if img is not None:
                self.bridge.set_cells(key, img)
        if on:
            self._rules_stale(self.bridge.resident_tiles())

    def _rules_stale(self, keys) -> None:
        """The rules overlay of ``keys`` computed again (while it is shown)."""
        if self.rules is None or not self.overlays["rules"]:
            return
        for key in keys:
            if key not in self._rules_queued:
                self._rules_queued.add(key)
                self.in_background(lambda k=key: self._rules_image(k))

    def _rules_submit(self, keys, what: str) -> bool:
        """Hand ``keys``' rules jobs (``what``: "governing" or "drift" of tiles, "explain" of a
        picked CellRef) to the worker processes (the workbench's thread); False where there are
        none (computed on this thread then)."""
        if self.rules.current() is None:
            return True  # no valid rules: nothing to compute
        pool = self._pool()
        if pool is None:
            return False
        try:
            for key in keys:
                if what == "explain":  # key: the picked CellRef
                    pool.submit_rules(key.tile, what, self.rules.spec(), ref=key,
                                      mcnk=self.session.chunk_index(key), cell=tuple(key.cell))
                else:
                    pool.submit_rules(key, what, self.rules.spec())
        except (OSError, RuntimeError):  # no processes here: this thread then (the overlays say so)
            self._n_workers = 0
            return False
        return True

    def _rules_result(self, job, what, img, found) -> None:
        """A worker's rules result (the frame's thread): a drift kept, an image put in place;
        dropped where the rules, the tile or the tables changed since (a newer job follows)."""
        version = job.args["rules"][0]
        if what == "drift":
            self.rules.put_drift(job.key, found, version)
            self._touch()
            return
        if what == "explain":  # the picked cell's why: into its cached info and the panel
            ref = job.args["ref"]
            if version != self.rules.version or job.version[0] != self.session.tile_version(ref.tile):
                return  # the rules or the tile changed since: a newer pick asks again
            hit = self._info_cache.get(ref)
            if hit is not None:
                hit[-1]["rules"] = found
            if self.picked == ref and self.picked_info is not None:
                self.picked_info["rules"] = found
                self._touch()
            return
        if img is None or version != self.rules.version or \
                job.version != (self.session.tile_version(job.key), self.session.tables_version):
            return
        self.bridge.set_cells(job.key, self.rules.compose(job.key, rules=img, shown=self.overlays["rules"]))

    def _rules_image(self, key) -> None:
        self._rules_queued.discard(key)
        if self._rules_submit([key], "governing"):
            return
        made = (self.session.tile_version(key), self.session.tables_version)
        img = self.rules.governing_image(key)
        rv = self.rules.version

        def on_main():
            if img is None or made != (self.session.tile_version(key), self.session.tables_version) \
                    or rv != self.rules.version:  # changed since: a newer one is on its way
                return
            self.bridge.set_cells(key, self.rules.compose(key, rules=img, shown=self.overlays["rules"]))

        self.later(on_main)

    def _check_drift(self, keys) -> None:
        if self._rules_submit(keys, "drift"):
            return
        self.rules.check_drift(keys)
        self.later(self._touch)

    def _touch(self) -> None:
        self.ui_version += 1

    def rules_changed(self) -> None:
        """The rules file changed (a kept stroke, another program): read again, every resident
        tile's rules overlay and drift again, the picked cell's why again (the workbench's thread)."""
        if self.rules is None:
            return
        self.rules.current()
        resident = self.bridge.resident_tiles()
        self.later(lambda: (self._rules_stale(resident), self._refresh_pick(), self._touch()))
        self._check_drift(resident)

    def _files_reloaded(self, change, paths):
        """The disk side's subscriber: files another program saved were read again (the
        workbench's thread); the scene reads the tiles they name again on the frame's thread."""
        t0 = self._reload_t0 if self._reload_t0 is not None else _time.perf_counter()
        tiles = [k for k in (change.chunks or {})]
        tiles += [k for k in self.resident_files_in(paths) if k not in tiles]

        def on_main():
            entry = {"paths": list(paths), "tiles": tiles, "t0": t0, "seen_s": _time.perf_counter() - t0}
            self.reloads.append(entry)
            if change.tables:
                self.bridge.tables_changed(self.session.catalog)  # tiles loaded from now on
                for key in self.bridge.resident_tiles():
                    if key not in tiles:
                        self.bridge.queue(key, None, "tables reloaded")
            for key in tiles:
                entry.setdefault("grass_before", {})[key] = self.bridge.grass_count(key)
                if self.bridge.reload_tile(key):
                    entry.setdefault("errors_before", {})[key] = (getattr(self.scene, "errors", {}) or {}).get(key)
                    self._pending_reload[key] = entry
            names = changed_names(entry["paths"])
            if names:
                self.say(f"changed on disk: {names}")

        self._main.put(on_main)

    def resident_files_in(self, paths) -> list:
        """Resident tiles whose ADT is one of ``paths`` (the session reports the tiles it had
        loaded; the view draws more: those it never needed, with every overlay off)."""
        from pathlib import Path

        from wowgrass.game.maps import adt_game_path

        wanted = {Path(p).resolve() for p in paths}
        gone = {Path(p).name.lower() for p in paths if not Path(p).exists()}  # removed: the layer below answers
        out = []
        for key in self.bridge.resident_tiles(full=False):
            gp = adt_game_path(self.session.map_name, *key)
            found = self.session.data.locate(gp)
            if (found is not None and found[1] is None and Path(found[0]).resolve() in wanted) or \
                    gp.rsplit("\\", 1)[-1].lower() in gone:
                out.append(key)
        return out

    # -- the workbench's thread --
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
                    pool = self._pool()
                    try:
                        if pool is not None:
                            pool.submit_overlay(arg, self.grass_textures)
                    except (OSError, RuntimeError) as exc:  # no processes or shared memory here: the thread then
                        self._main.put(lambda e=exc: self.say(f"worker processes unavailable ({e}): overlays "
                                                              "computed on the workbench's thread"))
                        self._n_workers, pool = 0, None
                    if pool is None:
                        img = self.overlay_for(arg)
                        self._main.put(lambda k=arg, i=img: self._overlay_ready(k, i))
                elif kind == "info":
                    ref, world, light = arg
                    if self._read_elsewhere(ref.tile, job):  # the tile parsed in a worker first
                        continue
                    info = self._cell_info(ref)
                    self._main.put(lambda r=ref, i=info, w=world, li=light: self._show_info(r, i, w, li))
                elif kind == "call":
                    arg()
                elif kind == "audit":
                    self._run_audit()
                elif kind == "read":
                    if self._read_elsewhere(arg, None):
                        continue
                    try:
                        self.session.tile(arg)
                    finally:
                        self._reading.discard(arg)
                elif kind == "reload":
                    paths, self._reload_t0 = arg
                    self.files.reload(paths)
            except Exception as exc:  # the view goes on; the panel says what failed
                self._main.put(lambda e=exc, k=kind: self.say(f"{k} failed: {type(e).__name__}: {e}"))
                if kind == "audit":  # the Findings panel says it too, no longer "runs in the background"
                    self._main.put(lambda e=exc: self._audit_failed(f"{type(e).__name__}: {e}"))
            finally:
                self._busy = False

    def _read_elsewhere(self, key, then) -> bool:
        """Have a worker process read and parse tile ``key`` for the session (the workbench's
        thread would parse it under the frame's GIL), ``then`` (a job) queued again once it has;
        False where the session has it already or there are no workers (read it here)."""
        if self.session.has_read(key) or key in self._parse_failed:
            return False
        pool = self._pool()
        if pool is None:
            return False
        with self._read_lock:
            waiting = self._after_read.get(key)
            if waiting is not None:
                if then is not None:
                    waiting.append(then)
                return True
            self._after_read[key] = [then] if then is not None else []
        try:
            pool.submit_parse(key)
        except (OSError, RuntimeError):
            with self._read_lock:
                self._after_read.pop(key, None)
            return False
        return True

    def _run_audit(self):
        pool = self._pool()
        if pool is not None:
            pool.submit_audit()
            return
        from .findings import audit_findings

        self._audit_done(audit_findings(self.session.data, self.session.map_name))

    def _audit_done(self, res):
        found, grass, n = res["findings"], res["grass_textures"], res["tile_count"]

        def on_main():
            self.ui_version += 1
            self.findings = found
            self.findings_note = f"{len(found)} finding(s) over {n} tile(s)"
            self.grass_textures |= grass  # the map's grass textures: every tile's unassigned cells again
            self._overlays_stale(list(self._overlay_fresh))

        self._main.put(on_main)

    def _audit_failed(self, why: str):
        self.ui_version += 1
        self.findings_note = f"the audit failed: {why}"

    def fly_to(self, finding: Finding):
        """Put the camera 60 units from the finding's place, looking down at it."""
        if finding.target is None:
            return
        x, y = finding.target
        z = 0.0
        key = self.session.tile_of(x, y)
        ground = self.bridge.grid(key)
        try:
            if ground is None:  # not resident: the session's tile (read here once)
                ground = self.session.tile(key)
            ch = int(ground.chunk_index_at(x, y))
            if ch >= 0:
                z = float(ground.heights_at(ch, x, y))
        except Exception:  # a tile the session cannot read: the height stays 0
            pass
        self.bridge.move_camera(self.viewer, [x + 45.0, y + 10.0, z + 40.0], (x, y, z))

    def report(self) -> dict:
        """What the session did, for ``view --json`` (``workbench``)."""
        out = self._report()
        if self.picked is not None and self.picked_info is not None:
            from .panels import pick_lines

            out["picked_lines"] = pick_lines(self.picked, self.picked_info, self.pick_ms)  # the Cell panel's text
        r = self.rules
        if r is not None:
            out["rules"] = {"path": str(r.path), "error": r.error, "watching": r.watching,
                            "rules": [] if r.plan is None else [x.label for x in r.plan.rules.rules],
                            "drifted": [{"tile": list(k), "cell_count": n} for k, n in r.drifted()],
                            "checked_tiles": [list(k) for k in sorted(r.drifts)],
                            "saves": [x.to_json() for x in r.saves], "watch_lines": list(r.watch_lines)}
        return out

    def _report(self) -> dict:
        s = self.session
        return {"panels": self.ui is not None or self._want_panels, "edit_count": len(s.history),
                "history": list(s.history), "changed_tiles": [list(k) for k in s.changed_tiles],
                "changed_tables": list(s.changed_tables), "picked": None if self.picked is None else
                {"tile": list(self.picked.tile), "chunk": list(self.picked.chunk), "cell": list(self.picked.cell)},
                "layout": self.layout if self.ui is None else self.ui.layout(),
                "pick_ms": self.pick_ms, "overlays": [n for n, on in self.overlays.items() if on],
                "messages": list(self.messages), "finding_count": len(self.findings),
                "findings_note": self.findings_note, "screenshots": list(self.shots),
                "edits_applied": [{"label": lb, "frame": f} for lb, f in self.edits_applied],
                "reloads": [{"paths": r["paths"], "tiles": [list(t) for t in r["tiles"]],
                             "seen_ms": r["seen_s"] * 1000.0,
                             "drawn_ms": r["drawn_s"] * 1000.0 if "drawn_s" in r else None,
                             "grass_instance_counts": {f"{k[0]},{k[1]}": [r.get("grass_before", {}).get(k),
                                                                          r.get("grass_after", {}).get(k)]
                                                       for k in r["tiles"]}} for r in self.reloads]}


def _default_patch_path(session) -> str:
    from .patching import default_patch_path

    try:
        return default_patch_path(session)
    except Exception:  # noqa: BLE001 - a session without data (tests): Build patch says what it needs
        return ""


def watch_roots(data) -> list:
    """The loose folders of ``data`` a watcher follows (its layers, a loose root, and the folder of a
    file ``view ADT`` added; an MPQ chain alone has none)."""
    from pathlib import Path

    from .watch import watched_folders

    roots = list(watched_folders(data))
    for _game_path, f in (data.added_files() if hasattr(data, "added_files") else []):  # view ADT: its folder
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
                   audit: bool = True, build=None, log=None, workers: int | None = None,
                   rules=None, switch_interval: float | None = GIL_SWITCH_S) -> Workbench:
    """The workbench over the view's map (``view`` builds it for its window): an EditSession with
    the view's placement, overlays ``overlays`` on, a watcher of the data's loose folders. ``rules``:
    the rules file (``view --rules``); None: ``wowgrass-rules.toml`` in the project folder (the top
    loose folder of the data), used where it exists or a kept stroke makes it."""
    from pathlib import Path

    from wowgrass.errors import UsageError

    from .session import EditSession

    add_table_files(data, getattr(src, "dbc_dir", None))
    session = EditSession(data, src.map, placement=getattr(src, "placement", "client"), build=build,
                          constants=getattr(src, "constants", None))
    roots = None
    if watch:
        roots = watch_roots(data)
        if not roots:
            raise UsageError("--watch follows loose folders: --data is an MPQ chain with none laid over it")
        if log:
            log("watching " + ", ".join(str(r) for r in roots))
    if rules is None:
        from .rules_bench import default_rules_file

        rules = default_rules_file(data)
    elif not Path(rules).is_file():
        raise UsageError(f"--rules {rules}: no such file")
    if rules is not None and log and Path(rules).is_file():
        log(f"rules: {rules}" + (" (re-applied to each tile saved)" if watch else ""))
    bench = Workbench(session, scene, watch=roots, audit=audit and panels, log=log, panels=panels, workers=workers,
                      rules=rules, switch_interval=switch_interval)
    for name in overlays:
        bench.toggle_overlay(name, True)
    return bench
