"""The frame loop: terrain, doodads and grass, stats, runtime toggles, PNG output, the window.

Toggles mirror the seed's cvars: ``r_grass`` (G), ``r_doodads`` (O), ``r_terrain`` (T),
``r_stats`` (F3, printed on the console once a second and drawn as the window title).
Frame statistics: CPU milliseconds to build and submit the frame, GPU milliseconds from a
``GL_TIME_ELAPSED`` query, draw calls, instances and triangles submitted.
"""

from __future__ import annotations

import math
import time as _time
from dataclasses import asdict, dataclass

import numpy as np

from .camera import Camera
from .constants import EYE_HEIGHT

SUN_DIR = np.array([0.45, -0.35, 0.82])
SUN_DIR = SUN_DIR / np.linalg.norm(SUN_DIR)
SKY = (0.62, 0.74, 0.86)


@dataclass
class FrameStats:
    cpu_ms: float = 0.0
    gpu_ms: float = 0.0
    draw_calls: int = 0
    instances: int = 0
    triangles: int = 0
    grass_instances: int = 0
    resident_tiles: int = 0

    def line(self) -> str:
        gpu = f"{self.gpu_ms:7.3f}" if self.gpu_ms == self.gpu_ms else "    n/a"
        return (f"cpu {self.cpu_ms:6.3f} ms  gpu {gpu} ms  draws {self.draw_calls:4d}  "
                f"instances {self.instances:9,d}  triangles {self.triangles:11,d}  tiles {self.resident_tiles}")

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


class Viewer:
    def __init__(self, target, scene, camera: Camera, toggles: Toggles | None = None, *,
                 fog=(260.0, 900.0), time_query: bool = True):
        self.target, self.scene, self.camera = target, scene, camera
        self.ctx = target.ctx
        self.toggles = toggles or Toggles()
        self.fog = fog
        self.camera.aspect = target.size[0] / target.size[1]
        self.camera.far = max(fog[1] * 1.1, 500.0)
        self._query = self.ctx.query(time=True) if time_query else None
        self._uniforms_set = False
        self.alpha_to_coverage = target.samples > 0
        for prog in scene.programs.values():
            self._set(prog, "uSunDir", tuple(SUN_DIR))
            self._set(prog, "uSunColor", (0.75, 0.72, 0.62))
            self._set(prog, "uAmbient", (0.45, 0.48, 0.52))
            self._set(prog, "uFogColor", SKY)
            self._set(prog, "uFog", tuple(fog))
            self._set(prog, "uAlphaRef", 0.5)
            self._set(prog, "uTexRepeat", 8.0)
            self._set(prog, "uTexture", 0)
            self._set(prog, "uLayers", 0)
            self._set(prog, "uAlpha", 1)

    @staticmethod
    def _set(prog, name, value):
        if name in prog:
            prog[name].value = value

    def render_frame(self, t: float) -> FrameStats:
        """Draw one frame at scene time ``t`` (seconds) into the target's framebuffer."""
        import moderngl

        ctx, cam, tg, sc = self.ctx, self.camera, self.toggles, self.scene
        t0 = _time.perf_counter()
        st = FrameStats(resident_tiles=len(sc.tiles))
        # fog and far plane open up with height above the ground (fly-overs stay readable)
        ground = sc.ground_height(float(cam.position[0]), float(cam.position[1]))
        above = max(float(cam.position[2]) - ground, 0.0) if ground is not None else 0.0
        fog = (self.fog[0] + above, self.fog[1] + 1.5 * above)
        cam.far = max(fog[1] * 1.1, 500.0)
        vp = cam.view_proj_gl()
        eye = tuple(float(v) for v in cam.position)
        planes = cam.frustum_planes()
        for prog in sc.programs.values():
            self._set(prog, "uCameraPos", eye)
            self._set(prog, "uFog", fog)
            self._set(prog, "uNearFar", (cam.near, cam.far))
            if "uViewProj" in prog:
                prog["uViewProj"].write(vp)
        if self._query is not None:
            self._query.mglo.begin()
        tg_fbo = self.target.fbo
        tg_fbo.use()
        ctx.viewport = (0, 0, *self.target.size)
        ctx.clear(*SKY, 1.0, depth=1.0)
        ctx.enable_only(moderngl.DEPTH_TEST)
        if tg.terrain:
            calls, tris = sc.terrain.render(planes, np.asarray(cam.position, np.float64), cam.far)
            st.draw_calls += calls
            st.triangles += tris
        if tg.doodads:
            calls, inst, tris = sc.doodads.render()
            st.draw_calls += calls
            st.instances += inst
            st.triangles += tris
        if tg.grass:
            if self.alpha_to_coverage:
                ctx.enable_direct(0x809E)  # GL_SAMPLE_ALPHA_TO_COVERAGE
            sc.grass.cull = tg.cull
            g = sc.grass.render((float(cam.position[0]), float(cam.position[1])), t, planes)
            if self.alpha_to_coverage:
                ctx.disable_direct(0x809E)
            st.draw_calls += g.draw_calls
            st.instances += g.instances
            st.grass_instances = g.instances
            st.triangles += g.triangles
        if self._query is not None:
            self._query.mglo.end()
        st.cpu_ms = (_time.perf_counter() - t0) * 1000.0
        if self._query is not None:
            ns = self._query.elapsed  # waits for the GPU; read as a 32-bit value by moderngl
            st.gpu_ms = ns / 1e6 if 0 <= ns < 0xFFFFFFFF else float("nan")  # saturated: unknown
        return st

    def read_rgba(self) -> np.ndarray:
        return self.target.read_rgba()

    def save_png(self, path) -> None:
        import io

        from PIL import Image

        from wowgrass.fileio import write_atomic

        buf = io.BytesIO()
        Image.fromarray(self.read_rgba()[..., :3], "RGB").save(buf, format="PNG")
        write_atomic(path, buf.getvalue())

    # -- interactive --
    def run_window(self, *, start_time: float = 0.0, speed: float = 12.0, on_stats=print):
        """The interactive loop (glfw target): WASD + mouse look, shift to go faster."""
        win = self.target
        glfw = win.glfw
        handle = win.window
        keys_down: set[int] = set()
        state = {"last": None, "look": False}
        tg = self.toggles

        def on_key(_w, key, _sc, action, _mods):
            if action == glfw.PRESS:
                keys_down.add(key)
                if key == glfw.KEY_ESCAPE:
                    glfw.set_window_should_close(handle, True)
                elif key == glfw.KEY_G:
                    tg.grass = not tg.grass
                elif key == glfw.KEY_O:
                    tg.doodads = not tg.doodads
                elif key == glfw.KEY_T:
                    tg.terrain = not tg.terrain
                elif key == glfw.KEY_C:
                    tg.cull = not tg.cull
                elif key == glfw.KEY_F3:
                    tg.stats = not tg.stats
            elif action == glfw.RELEASE:
                keys_down.discard(key)

        def on_button(_w, button, action, _mods):
            if button == glfw.MOUSE_BUTTON_RIGHT or button == glfw.MOUSE_BUTTON_LEFT:
                state["look"] = action == glfw.PRESS
                glfw.set_input_mode(handle, glfw.CURSOR,
                                    glfw.CURSOR_DISABLED if state["look"] else glfw.CURSOR_NORMAL)
                state["last"] = None

        def on_cursor(_w, x, y):
            if state["look"]:
                if state["last"] is not None:
                    dx, dy = x - state["last"][0], y - state["last"][1]
                    self.camera.turn(-dx * 0.003, -dy * 0.003)
                state["last"] = (x, y)

        glfw.set_key_callback(handle, on_key)
        glfw.set_mouse_button_callback(handle, on_button)
        glfw.set_cursor_pos_callback(handle, on_cursor)
        t_start = _time.perf_counter()
        last = t_start
        last_print = t_start
        while not glfw.window_should_close(handle):
            glfw.poll_events()
            now = _time.perf_counter()
            dt = min(now - last, 0.1)
            last = now
            v = speed * (6.0 if (glfw.KEY_LEFT_SHIFT in keys_down or glfw.KEY_RIGHT_SHIFT in keys_down) else 1.0)
            fwd = (glfw.KEY_W in keys_down) - (glfw.KEY_S in keys_down)
            right = (glfw.KEY_D in keys_down) - (glfw.KEY_A in keys_down)
            up = (glfw.KEY_E in keys_down or glfw.KEY_SPACE in keys_down) - (glfw.KEY_Q in keys_down)
            self.camera.move(fwd * v * dt, right * v * dt, up * v * dt)
            if win.resize_if_needed():
                self.camera.aspect = win.size[0] / win.size[1]
            self.scene.update(self.camera.position)
            st = self.render_frame(start_time + now - t_start)
            win.present()
            if tg.stats and now - last_print >= 1.0:
                last_print = now
                glfw.set_window_title(handle, "wowgrass  " + st.line())
                on_stats(st.line())


def default_camera(scene, source, *, camera=None, target=None, eye_height: float = EYE_HEIGHT) -> Camera:
    """``--camera``/``--target`` when given (a camera of two numbers X,Y stands at eye height above
    the ground there); else above the centre of the data at eye height, looking towards the grass."""
    if camera is not None and len(camera) == 3:
        cam = Camera(position=np.asarray(camera, np.float64))
        if target is not None:
            cam.look_at(target)
        return cam
    from .constants import TILE_SIZE, ZEROPOINT

    if camera is not None:  # X,Y only: at eye height above the ground there
        x, y = float(camera[0]), float(camera[1])
    else:
        keys = np.array(source.tiles, np.float64)
        col_c, row_c = keys[:, 0].mean() + 0.5, keys[:, 1].mean() + 0.5
        x, y = ZEROPOINT - row_c * TILE_SIZE, ZEROPOINT - col_c * TILE_SIZE
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
    pts = [b.sample_xy for b in scene.grass.batches if len(b.sample_xy)]
    if not pts:
        return math.radians(30.0)
    p = np.concatenate(pts) - (x, y)
    d = np.hypot(p[:, 0], p[:, 1])
    p = p[(d > 3.0) & (d < radius)]
    if not len(p):
        return math.radians(30.0)
    k = np.floor((np.arctan2(p[:, 1], p[:, 0]) % (2 * math.pi)) / (2 * math.pi) * bins).astype(int) % bins
    counts = np.bincount(k, minlength=bins)
    smooth = counts + np.roll(counts, 1) + np.roll(counts, -1)
    return (int(np.argmax(smooth)) + 0.5) * 2 * math.pi / bins
