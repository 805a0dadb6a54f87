"""The window: the interactive loop of a :class:`~wowgrass.render.viewer.Viewer` on a glfw window
(:class:`~wowgrass.render.gl.context.WindowTarget`), its keys and mouse."""

from __future__ import annotations

import time as _time
from dataclasses import dataclass

import numpy as np


def run_window(viewer, *, start_time: float = 0.0, speed: float = 12.0, on_stats=print,
               frames: int | None = None, quit_after: float | None = None,
               screenshot: bool = False, ui=None) -> WindowRun:
    """The interactive loop on a :class:`~wowgrass.render.gl.context.WindowTarget` (controls in
    :class:`WindowControls`). Ends on Esc, the close button, after ``frames`` frames or after
    ``quit_after`` seconds; with ``screenshot`` the last frame shown is read back from the
    window (``WindowRun.image``). ``ui``: a :class:`WindowUi` (the workbench's panels): it sees
    input first, works before each frame and draws over it."""
    win = viewer.target
    glfw = win.glfw
    controls = WindowControls(viewer, glfw, win.window, speed=speed, ui=ui)
    controls.install()
    if ui is not None:
        ui.install(viewer, controls)
    draw_over = ui.draw if ui is not None else None
    run = WindowRun()
    t_start = _time.perf_counter()
    last = t_start
    last_print = t_start
    title_has_stats = False
    try:
        while True:
            if glfw.window_should_close(win.window):
                if ui is None or ui.may_close():
                    break
                glfw.set_window_should_close(win.window, False)  # the ui asks first (unsaved edits)
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
            if ui is not None:
                ui.before_frame(dt)
            viewer.scene.update(viewer.camera.position)
            st = viewer.render_frame(start_time + now - t_start)
            run.frames += 1
            final = (frames is not None and run.frames >= frames) or (
                quit_after is not None and _time.perf_counter() - t_start >= quit_after)
            img = win.present(read_back=screenshot and final, draw_over=draw_over)
            run.stats.append(st)
            if img is not None:
                run.image = img
            if viewer.toggles.stats and (now - last_print >= 1.0 or run.frames == 1):
                last_print = now
                glfw.set_window_title(win.window, f"{win.title}  {st.line()}")
                title_has_stats = True
                on_stats(st.line())
            elif not viewer.toggles.stats and title_has_stats:
                glfw.set_window_title(win.window, win.title)
                title_has_stats = False
            if final:
                break
        if screenshot and run.image is None and run.frames:  # closed by Esc / the window manager
            run.image = win.present(read_back=True, draw_over=draw_over)
    finally:
        controls.uninstall()
        if ui is not None:
            ui.close()
    run.seconds = _time.perf_counter() - t_start
    return run


class WindowUi:
    """What :func:`run_window` asks of a ``ui`` (the workbench's panels; render never imports
    them). Input handlers return True when they took the event (the camera then ignores it)."""

    def install(self, viewer, controls) -> None: ...
    def before_frame(self, dt: float) -> None: ...  # edits, reloads, picks: before the scene's update
    def draw(self) -> None: ...  # into the window's back buffer, over the frame
    def close(self) -> None: ...
    def may_close(self) -> bool: return True  # Esc or the close button: False keeps the window (it asks)
    def on_key(self, key, scancode, action, mods) -> bool: return False
    def on_char(self, codepoint) -> bool: return False
    def on_button(self, button, action, mods) -> bool: return False
    def on_cursor(self, x, y) -> bool: return False
    def on_scroll(self, dx, dy) -> bool: return False


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

    def __init__(self, viewer: Viewer, glfw, window, *, speed: float = 12.0, ui: WindowUi | None = None):
        self.viewer, self.glfw, self.window = viewer, glfw, window
        self.ui = ui
        self.speed = float(speed)
        self.keys_down: set[int] = set()
        self.looking = False
        self._last_cursor = None
        g = glfw
        self.toggle_keys = {g.KEY_G: "grass", g.KEY_O: "doodads", g.KEY_T: "terrain", g.KEY_C: "cull",
                            g.KEY_L: "lod_colors", g.KEY_M: "mcsh", g.KEY_F3: "stats", g.KEY_V: "split",
                            g.KEY_H: "shadows", g.KEY_F: "wireframe", g.KEY_Z: "horizon",
                            g.KEY_B: "wmos", g.KEY_R: "liquids"}

    def install(self):
        g, w = self.glfw, self.window
        g.set_key_callback(w, self.on_key)
        g.set_mouse_button_callback(w, self.on_button)
        g.set_cursor_pos_callback(w, self.on_cursor)
        g.set_scroll_callback(w, self.on_scroll)
        g.set_window_focus_callback(w, self.on_focus)
        g.set_char_callback(w, self.on_char)

    def uninstall(self):
        g, w = self.glfw, self.window
        for setter in (g.set_key_callback, g.set_mouse_button_callback, g.set_cursor_pos_callback,
                       g.set_scroll_callback, g.set_window_focus_callback, g.set_char_callback):
            setter(w, None)

    def on_char(self, _window, codepoint):
        if self.ui is not None:
            self.ui.on_char(codepoint)

    def on_key(self, _window, key, _scancode, action, _mods):
        g, tg = self.glfw, self.viewer.toggles
        if self.ui is not None and self.ui.on_key(key, _scancode, action, _mods):
            if action == g.RELEASE:
                self.keys_down.discard(key)
            return
        if action == g.PRESS:
            self.keys_down.add(key)
            if key == g.KEY_ESCAPE:
                g.set_window_should_close(self.window, True)
            elif key in self.toggle_keys:
                name = self.toggle_keys[key]
                setattr(tg, name, not getattr(tg, name))
            elif key in (g.KEY_LEFT_BRACKET, g.KEY_RIGHT_BRACKET) and self.viewer.zone_light is not None:
                # the hour of the light tables' day, an hour back or on (view --clock)
                self.viewer.zone_light.step(-120 if key == g.KEY_LEFT_BRACKET else 120)
        elif action == g.RELEASE:
            self.keys_down.discard(key)

    def on_button(self, _window, button, action, _mods):
        g = self.glfw
        if self.ui is not None and not self.looking and self.ui.on_button(button, action, _mods):
            return
        if button in (g.MOUSE_BUTTON_LEFT, g.MOUSE_BUTTON_RIGHT):
            self.looking = action == g.PRESS
            g.set_input_mode(self.window, g.CURSOR, g.CURSOR_DISABLED if self.looking else g.CURSOR_NORMAL)
            self._last_cursor = None

    def on_cursor(self, _window, x, y):
        if self.ui is not None and not self.looking:
            self.ui.on_cursor(x, y)
        if not self.looking:
            return
        if self._last_cursor is not None:
            k = self.LOOK_RADIANS_PER_PIXEL
            self.viewer.camera.turn(-(x - self._last_cursor[0]) * k, -(y - self._last_cursor[1]) * k)
        self._last_cursor = (x, y)

    def on_scroll(self, _window, _dx, dy):
        if self.ui is not None and self.ui.on_scroll(_dx, dy):
            return
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
