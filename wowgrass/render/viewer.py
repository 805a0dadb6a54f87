"""The viewer: frames of a scene (:func:`wowgrass.render.frame.draw_frame` over its sources),
stats, runtime toggles, PNG output, the window.

Toggles mirror the grass reference's cvars: ``r_grass`` (G), ``r_doodads`` (O), ``r_terrain`` (T),
``r_stats`` (F3, printed on the console once a second and drawn as the window title; in a split
screen also along the bottom of the frame), plus the sun's shadows (H), the split filled/wireframe screen (V), a
wireframe view (F) and LOD colours (L). A frame: the shadow pass (the sun's view), the colour
pass over the views (one, or the split screen's two halves), then the viewport and scissor back
to the whole frame for the overlay (stats line, a label per half).
Frame statistics: CPU milliseconds to build and submit the frame, GPU milliseconds from a
``GL_TIME_ELAPSED`` query, draw calls, instances and triangles submitted.
"""

from __future__ import annotations

import math
import time as _time
from collections import deque
from dataclasses import asdict, dataclass

import numpy as np

from .camera import Camera
from .constants import EYE_HEIGHT, FOG_START, VIEW_DISTANCE
from .frame import AMBIENT, SKY, SUN_COLOR, SUN_DIR, Frame, FrameUniforms, draw_frame  # noqa: F401 - SKY: for callers
from .gputimer import GpuTimer
from .passes import ColourPass, ShadowPass
from .views import frame_views, reset_viewport


@dataclass
class FrameStats:
    cpu_ms: float = 0.0
    gpu_ms: float = 0.0
    draw_calls: int = 0
    instances: int = 0
    triangles: int = 0
    grass_instances: int = 0
    resident_tiles: int = 0
    frame: int = -1  # index of this frame (the viewer's count)
    gpu_frame: int = -1  # the frame gpu_ms measured: read once its fence signalled (no stall)
    # GPU-driven grass (read back only when statistics are on): instances the compute pass tested
    # (those in chunk groups that passed the group test), kept per LOD ring, drawn
    grass_tested: int | None = None
    grass_kept_per_ring: list | None = None
    grass_culling: str = "cpu"
    # terrain LOD (read back only when statistics are on): chunks drawn at levels 0..4
    terrain_chunks_per_level: list | None = None

    def line(self) -> str:
        gpu = f"{self.gpu_ms:7.3f}" if self.gpu_ms == self.gpu_ms else "    n/a"
        line = (f"cpu {self.cpu_ms:6.3f} ms  gpu {gpu} ms  draws {self.draw_calls:4d}  "
                f"instances {self.instances:9,d}  triangles {self.triangles:11,d}  tiles {self.resident_tiles}")
        if self.grass_tested is not None:
            line += (f"  grass: gpu-tested {self.grass_tested:,d} kept per ring "
                     + "/".join(f"{k:,d}" for k in self.grass_kept_per_ring) + f" drawn {self.grass_instances:,d}")
        if self.terrain_chunks_per_level is not None:
            line += "  terrain chunks per level " + "/".join(f"{k:,d}" for k in self.terrain_chunks_per_level)
        return line

    def as_dict(self) -> dict:
        d = asdict(self)
        if d["gpu_ms"] != d["gpu_ms"]:
            d["gpu_ms"] = None
        return d


@dataclass
class Toggles:
    grass: bool = True  # r_grass
    doodads: bool = True  # r_doodads
    terrain: bool = True  # r_terrain
    stats: bool = False  # r_stats
    cull: bool = True  # per-chunk culling of grass (off: one draw per model, shader-only cull)
    lod_colors: bool = False  # terrain coloured by LOD level (key L, --lod-colors)
    mcsh: bool = False  # terrain darkened by the ADT's baked MCSH shadow map (key M, --mcsh)
    split: bool = False  # two views: filled left, wireframe right (key V, --split)
    shadows: bool = True  # the sun's shadow map (key H, --no-shadows)
    wireframe: bool = False  # the single view as a wireframe (key F, --wireframe)


@dataclass
class Light:
    sun_dir: tuple = tuple(SUN_DIR)  # towards the sun
    sun_color: tuple = SUN_COLOR
    ambient: tuple = AMBIENT
    shadow_reach: float = 120.0  # world units of the view the shadow map covers (then fades out)
    shadow_size: int = 2048  # shadow map texels per side
    caster_height: float = 250.0  # world units above the fitted view that can still cast into it


class Viewer:
    """Draws frames of a scene: the sun's shadow pass (toggle ``shadows``) and the colour pass
    over the views (one filling the target, or the split screen), the scene's sources that the
    toggles leave on; an overlay after the views."""

    def __init__(self, target, scene, camera: Camera, toggles: Toggles | None = None, *,
                 fog=(FOG_START, VIEW_DISTANCE), time_query: bool = True, light: Light | None = None):
        self.target, self.scene, self.camera = target, scene, camera
        self.ctx = target.ctx
        self.toggles = toggles or Toggles()
        self.fog = fog
        self.light = light or Light()
        self.views = frame_views(camera, target.size)
        self._views_key = None  # (camera, size, split, wireframe) self.views were made for
        self.colour_pass = ColourPass(target)
        self._shadow_pass = None  # made when shadows are first drawn
        self._overlay = None
        self.status = ""  # the stats line the overlay shows
        self.status_every = 0.5  # seconds between its refreshes (a window's; offscreen runs: 0, every frame)
        self._status_at = -1e9
        self.last_stats: FrameStats | None = None
        self.uniforms = FrameUniforms(self.ctx)
        self.camera.far = max(fog[1] * 1.1, 500.0)
        self._timer = GpuTimer(self.ctx) if time_query else None
        self.gpu_times: deque = deque(maxlen=4096)  # (frame, gpu ms) as the timer queries come back
        self._frame = 0
        self._ground = (None, None)  # (camera xy and scene version, ground height there)
        self.last_frame: Frame | None = None

    def render_frame(self, t: float) -> FrameStats:
        """Draw one frame at scene time ``t`` (seconds) into the target's framebuffer.

        ``gpu_ms`` of the returned stats is the GPU time of frame ``gpu_frame``, the newest one
        finished (NaN until one is): the CPU waits only while two frames are in flight.
        :meth:`drain_gpu_times` collects the rest."""
        cam, tg, sc = self.camera, self.toggles, self.scene
        t0 = _time.perf_counter()
        st = FrameStats(resident_tiles=len(sc.tiles), frame=self._frame)
        px, py, pz = (float(v) for v in cam.position)
        # fog and far plane open up with height above the ground (a flight sees to the horizon),
        # never past the far tiles the scene loads
        key = (px, py, sc.version)
        if self._ground[0] != key:
            self._ground = (key, sc.ground_height(px, py))
        ground = self._ground[1]
        above = max(pz - ground, 0.0) if ground is not None else 0.0
        end = min(self.fog[1] + 4.0 * above, max(sc.terrain_reach, self.fog[1]))
        fog = (min(self.fog[0] + above, 0.5 * end), end)
        cam.far = max(fog[1] * 1.1, 500.0)
        self.views = self._frame_views(cam, tg)
        lt = self.light
        frame = Frame(time=t, views=list(self.views), wind=sc.grass.settings, fog=fog, index=self._frame,
                      sun_dir=lt.sun_dir, sun_color=lt.sun_color, ambient=lt.ambient)
        self._frame += 1
        grass = sc.grass
        grass.cull = tg.cull
        gpu_stats = hasattr(grass, "read_stats") and tg.stats and tg.grass
        if hasattr(grass, "collect_stats"):
            grass.collect_stats = gpu_stats
        sc.terrain.lod.debug, sc.terrain.lod.mcsh = tg.lod_colors, tg.mcsh
        sources = [s for s in sc.sources if getattr(tg, s.name, True)]
        if self._timer is not None:
            self._timer.begin()
        total = draw_frame(frame, self.passes, sources, self.uniforms)
        self.last_frame = frame
        self._draw_overlay(st)
        st.draw_calls, st.instances, st.triangles = total.draw_calls, total.instances, total.triangles
        st.grass_instances = frame.counts["grass"].instances if "grass" in frame.counts else 0
        st.cpu_ms = (_time.perf_counter() - t0) * 1000.0
        if hasattr(grass, "read_stats"):
            st.grass_culling = "gpu" if tg.cull else "off"
        if gpu_stats and tg.cull:  # the GPU decided what is drawn: read its counters (waits for it)
            g = [grass.read_stats(v) for v in frame.views]
            st.grass_tested = sum(x["gpu_tested"] for x in g)
            st.grass_kept_per_ring = [sum(x["kept_per_ring"][k] for x in g) for k in range(4)]
            st.grass_instances = sum(x["drawn"] for x in g)
            st.instances += st.grass_instances
            st.triangles += sum(x["drawn_triangles"] for x in g)
        if tg.stats and tg.terrain and getattr(sc.terrain, "indirect", False) and sc.terrain.tiles:  # the same for the terrain
            t = [sc.terrain.read_stats(v) for v in frame.views]
            st.terrain_chunks_per_level = [sum(x["chunks_per_level"][k] for x in t) for k in range(5)]
            st.triangles += sum(x["triangles"] for x in t)
        st.gpu_ms = float("nan")
        if self._timer is not None:
            done = self._timer.end()  # finished frames; waits only with 2 frames in flight
            self.gpu_times.extend(done)
            if done:
                st.gpu_frame, st.gpu_ms = done[-1]
        self.last_stats = st
        return st

    def _frame_views(self, cam, tg) -> list:
        """The frame's views, kept while the camera, size and layout stay (and their matrices
        with them, recomputed only when the camera moves); a split screen's copies of the camera
        take its current state."""
        key = (id(cam), tuple(self.target.size), tg.split, tg.wireframe)
        if self._views_key != key:
            self._views_key = key
            return frame_views(cam, self.target.size, split=tg.split, wireframe=tg.wireframe)
        for v in self.views:
            if v.camera is not cam:
                v.camera.__dict__.update(cam.__dict__)
        return self.views

    @property
    def passes(self) -> list:
        if not self.toggles.shadows:
            return [self.colour_pass]
        if self._shadow_pass is None:
            from .shadow import ShadowMap

            lt = self.light
            self._shadow_pass = ShadowPass(ShadowMap(self.ctx, lt.shadow_size, reach=lt.shadow_reach,
                                                     caster_height=lt.caster_height))
        return [self._shadow_pass, self.colour_pass]

    @property
    def shadow_map(self):
        """The sun's shadow map (None until shadows were drawn)."""
        return self._shadow_pass.map if self._shadow_pass is not None else None

    def _draw_overlay(self, st: FrameStats):
        """After the views: viewport and scissor back to the whole frame; a split screen then gets
        a label per half and, with stats on, the stats line along the whole bottom edge (a single
        view keeps its picture clean: stats go to the console and the window title)."""
        reset_viewport(self.ctx, self.target.size)
        if len(self.views) < 2:
            return
        if self._overlay is None:
            from .overlay import Overlay
            from .programs import load_program

            self._overlay = Overlay(self.ctx, load_program(self.ctx, "overlay.glsl"))
        now = _time.perf_counter()
        if self.toggles.stats and self.last_stats is not None and now - self._status_at >= self.status_every:
            self._status_at = now
            self.status = self.last_stats.line()  # the last finished frame's figures
        labels = ["filled" if v.fill == "filled" else "wireframe" for v in self.views]
        self._overlay.draw(self.target.size, self.views, labels, self.status if self.toggles.stats else None)

    def release(self):
        """The viewer's own GL objects (shadow map, overlay, uniform buffer, timer queries)."""
        if self._shadow_pass is not None:
            self._shadow_pass.map.release()
        if self._overlay is not None:
            self._overlay.release()
        self.uniforms.release()
        if self._timer is not None:
            self.gpu_times.extend(self._timer.drain())
            self._timer.release()

    def drain_gpu_times(self) -> deque:
        """Wait for the frames in flight and return ``gpu_times``: (frame, GPU ms), oldest first."""
        if self._timer is not None:
            self.gpu_times.extend(self._timer.drain())
        return self.gpu_times

    def read_rgba(self) -> np.ndarray:
        return self.target.read_rgba()

    def save_png(self, path) -> None:
        write_png(path, self.read_rgba()[..., :3])

    # -- interactive --
    def run_window(self, *, start_time: float = 0.0, speed: float = 12.0, on_stats=print,
                   frames: int | None = None, quit_after: float | None = None,
                   screenshot: bool = False) -> WindowRun:
        """The interactive loop on a :class:`~wowgrass.render.context.WindowTarget` (controls in
        :class:`WindowControls`). Ends on Esc, the close button, after ``frames`` frames or after
        ``quit_after`` seconds; with ``screenshot`` the last frame shown is read back from the
        window (``WindowRun.image``)."""
        win = self.target
        glfw = win.glfw
        controls = WindowControls(self, glfw, win.window, speed=speed)
        controls.install()
        run = WindowRun()
        t_start = _time.perf_counter()
        last = t_start
        last_print = t_start
        title_has_stats = False
        try:
            while not glfw.window_should_close(win.window):
                glfw.poll_events()
                now = _time.perf_counter()
                if quit_after is not None and now - t_start >= quit_after and run.frames:
                    break
                dt = min(now - last, 0.1)
                last = now
                if win.framebuffer_size()[0] <= 0 or win.framebuffer_size()[1] <= 0:
                    glfw.wait_events_timeout(0.1)  # minimised: nothing to draw
                    continue
                controls.step(dt)
                win.resize_if_needed()  # the next frame's views follow the new size
                self.scene.update(self.camera.position)
                st = self.render_frame(start_time + now - t_start)
                run.frames += 1
                final = (frames is not None and run.frames >= frames) or (
                    quit_after is not None and _time.perf_counter() - t_start >= quit_after)
                img = win.present(read_back=screenshot and final)
                run.stats.append(st)
                if img is not None:
                    run.image = img
                if self.toggles.stats and (now - last_print >= 1.0 or run.frames == 1):
                    last_print = now
                    glfw.set_window_title(win.window, f"{win.title}  {st.line()}")
                    title_has_stats = True
                    on_stats(st.line())
                elif not self.toggles.stats and title_has_stats:
                    glfw.set_window_title(win.window, win.title)
                    title_has_stats = False
                if final:
                    break
            if screenshot and run.image is None and run.frames:  # closed by Esc / the window manager
                run.image = win.present(read_back=True)
        finally:
            controls.uninstall()
        run.seconds = _time.perf_counter() - t_start
        return run


@dataclass
class WindowRun:
    """What a window session did: per-frame statistics, wall seconds, the last frame if asked."""

    frames: int = 0
    seconds: float = 0.0
    stats: list = None
    image: np.ndarray | None = None

    def __post_init__(self):
        if self.stats is None:
            self.stats = []


class WindowControls:
    """Keyboard and mouse of the window: a fly camera and the grass reference's cvar toggles.

    W/A/S/D fly (never below 0.5 units above the ground), Q/E (or Space) down/up, Shift 6x speed, mouse drag (left or right button,
    cursor captured while held) looks around, the wheel scales the base speed; G ``r_grass``,
    O ``r_doodads``, T ``r_terrain``, C per-chunk culling, L terrain LOD colours, M MCSH shadows,
    V split view, H sun shadows, F wireframe, F3 ``r_stats``; Esc quits. The handlers
    are plain methods, so tests can call :meth:`on_key` without a window system sending events.
    """

    LOOK_RADIANS_PER_PIXEL = 0.003
    FAST = 6.0
    MIN_CLEARANCE = 0.5  # world units the camera keeps above the ground

    def __init__(self, viewer: Viewer, glfw, window, *, speed: float = 12.0):
        self.viewer, self.glfw, self.window = viewer, glfw, window
        self.speed = float(speed)
        self.keys_down: set[int] = set()
        self.looking = False
        self._last_cursor = None
        g = glfw
        self.toggle_keys = {g.KEY_G: "grass", g.KEY_O: "doodads", g.KEY_T: "terrain", g.KEY_C: "cull",
                            g.KEY_L: "lod_colors", g.KEY_M: "mcsh", g.KEY_F3: "stats", g.KEY_V: "split",
                            g.KEY_H: "shadows", g.KEY_F: "wireframe"}

    def install(self):
        g, w = self.glfw, self.window
        g.set_key_callback(w, self.on_key)
        g.set_mouse_button_callback(w, self.on_button)
        g.set_cursor_pos_callback(w, self.on_cursor)
        g.set_scroll_callback(w, self.on_scroll)
        g.set_window_focus_callback(w, self.on_focus)

    def uninstall(self):
        g, w = self.glfw, self.window
        for setter in (g.set_key_callback, g.set_mouse_button_callback, g.set_cursor_pos_callback,
                       g.set_scroll_callback, g.set_window_focus_callback):
            setter(w, None)

    def on_key(self, _window, key, _scancode, action, _mods):
        g, tg = self.glfw, self.viewer.toggles
        if action == g.PRESS:
            self.keys_down.add(key)
            if key == g.KEY_ESCAPE:
                g.set_window_should_close(self.window, True)
            elif key in self.toggle_keys:
                name = self.toggle_keys[key]
                setattr(tg, name, not getattr(tg, name))
        elif action == g.RELEASE:
            self.keys_down.discard(key)

    def on_button(self, _window, button, action, _mods):
        g = self.glfw
        if button in (g.MOUSE_BUTTON_LEFT, g.MOUSE_BUTTON_RIGHT):
            self.looking = action == g.PRESS
            g.set_input_mode(self.window, g.CURSOR, g.CURSOR_DISABLED if self.looking else g.CURSOR_NORMAL)
            self._last_cursor = None

    def on_cursor(self, _window, x, y):
        if not self.looking:
            return
        if self._last_cursor is not None:
            k = self.LOOK_RADIANS_PER_PIXEL
            self.viewer.camera.turn(-(x - self._last_cursor[0]) * k, -(y - self._last_cursor[1]) * k)
        self._last_cursor = (x, y)

    def on_scroll(self, _window, _dx, dy):
        self.speed = float(np.clip(self.speed * 1.25 ** dy, 0.5, 2000.0))

    def on_focus(self, _window, focused):
        if not focused:  # key releases that happen elsewhere never arrive: do not keep flying
            self.keys_down.clear()
            if self.looking:
                self.on_button(self.window, self.glfw.MOUSE_BUTTON_LEFT, self.glfw.RELEASE, 0)

    def step(self, dt: float):
        """Move the camera for ``dt`` seconds of the keys held."""
        g, k = self.glfw, self.keys_down
        v = self.speed * (self.FAST if (g.KEY_LEFT_SHIFT in k or g.KEY_RIGHT_SHIFT in k) else 1.0)
        fwd = (g.KEY_W in k) - (g.KEY_S in k)
        right = (g.KEY_D in k) - (g.KEY_A in k)
        up = (g.KEY_E in k or g.KEY_SPACE in k) - (g.KEY_Q in k)
        if fwd or right or up:
            cam = self.viewer.camera
            cam.move(fwd * v * dt, right * v * dt, up * v * dt)
            # no flying into hills: under the terrain one sees its underside and an upside-down sky
            ground = self.viewer.scene.ground_height(float(cam.position[0]), float(cam.position[1]))
            if ground is not None and cam.position[2] < ground + self.MIN_CLEARANCE:
                cam.position[2] = ground + self.MIN_CLEARANCE


def write_png(path, rgb: np.ndarray) -> None:
    """Write an (H, W, 3) uint8 frame as a PNG, atomically."""
    import io

    from PIL import Image

    from wowgrass.fileio import write_atomic

    buf = io.BytesIO()
    Image.fromarray(rgb, "RGB").save(buf, format="PNG")
    write_atomic(path, buf.getvalue())


def default_camera(scene, source, *, camera=None, target=None, eye_height: float = EYE_HEIGHT) -> Camera:
    """``--camera``/``--target`` when given (a camera of two numbers X,Y stands at eye height above
    the ground there); else :mod:`.firstframe`'s choice: at eye height where grass grows on a tile
    the data has, looking along the ground across it."""
    if camera is not None and len(camera) == 3:
        cam = Camera(position=np.asarray(camera, np.float64))
        if target is not None:
            cam.look_at(target)
        return cam
    from .scene import tiles_centre

    if camera is None:
        from .firstframe import choose_start, start_tile

        tile = start_tile(source)
        scene.update((*tiles_centre([tile]), 0.0), block=True)
        pos, yaw, pitch = choose_start(scene, tile, eye_height=eye_height)
        cam = Camera(position=pos, yaw=yaw, pitch=pitch)
        if target is not None:
            cam.look_at(target)
        return cam
    x, y = float(camera[0]), float(camera[1])  # X,Y only: at eye height above the ground there
    scene.update((x, y, 0.0), block=True)
    z = scene.ground_height(x, y)
    z = (z if z is not None else 0.0) + eye_height
    cam = Camera(position=np.array([x, y, z]))
    if target is not None:
        cam.look_at(target)
    else:
        cam.yaw, cam.pitch = grassiest_heading(scene, x, y), math.radians(-8.0)
    return cam


def grassiest_heading(scene, x: float, y: float, radius: float = 60.0, bins: int = 16) -> float:
    """Yaw (radians) towards the most resident grass within ``radius`` of (x, y); 30 deg if none."""
    pts = scene.grass.sample_xy()
    if not len(pts):
        return math.radians(30.0)
    p = pts - (x, y)
    d = np.hypot(p[:, 0], p[:, 1])
    p = p[(d > 3.0) & (d < radius)]
    if not len(p):
        return math.radians(30.0)
    k = np.floor((np.arctan2(p[:, 1], p[:, 0]) % (2 * math.pi)) / (2 * math.pi) * bins).astype(int) % bins
    counts = np.bincount(k, minlength=bins)
    smooth = counts + np.roll(counts, 1) + np.roll(counts, -1)
    return (int(np.argmax(smooth)) + 0.5) * 2 * math.pi / bins
