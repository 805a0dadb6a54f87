"""The workbench's panels: Dear ImGui (imgui-bundle) drawn into the view's window after its frame.

imgui's own OpenGL 3 renderer draws into the window's back buffer (after the scene's frame is
copied there: single-sampled, never in the scene's framebuffer); its glfw backend is fed the events
the window's callbacks receive (no callbacks of its own: the view keeps its camera controls). What
the panels show and do lives in controller.py; here: layout and widgets.
"""

from __future__ import annotations

import ctypes
import time as _time

from .overlays import OVERLAYS
from .rules_bench import rule_lines, rules_panel
from .tools import TOOLS, tool_choices, tools_help

_KEYS_BEFORE = (
    ("Right mouse drag", "look around (as 3D editors)"),
    ("W A S D / Q E", "fly forward, left, back, right / down, up"),
    ("Shift", "fly 6x faster"),
    ("Mouse wheel", "flying speed"),
    ("Ctrl + wheel (Alt + wheel)", "brush radius"),
    ("Left click", "pick the cell (pick tool) / paint (a brush tool)"),
)
_KEYS_AFTER = (
    ("1 .. 8", "overlays: effect sets, no effect id, stale mapping, excluded, holes, chunk grid, tile grid, "
               "the rule governing each cell"),
    ("Ctrl+Z / Ctrl+Y (Ctrl+Shift+Z)", "undo / redo"),
    ("Ctrl+S", "save the changed files (to the Changes panel's overlay folder)"),
    ("[ ]", "the hour, an hour back / on (with --clock)"),
    ("G O T B R Z", "grass, doodads, terrain, WMOs, liquids, horizon"),
    ("C L M", "per-chunk culling, terrain LOD colours, MCSH shadows"),
    ("V H F", "split view (wireframe right), sun shadows, wireframe"),
    ("F3", "frame statistics"),
    ("F12", "screenshot of the window (wowgrass-shot-N.png)"),
    ("F1", "this help"),
    ("Esc", "quit (with unsaved edits: asks save / discard / cancel)"),
)


def keys_help() -> tuple:
    """F1's rows (keys, what they do); the tools' row from the tool registry."""
    return (*_KEYS_BEFORE, tools_help(), *_KEYS_AFTER)


def imgui_available() -> str | None:
    """None when imgui-bundle is importable, else why not (pip install 'wowgrass[workbench]')."""
    try:
        import imgui_bundle  # noqa: F401
    except ImportError as exc:
        return f"imgui-bundle is not installed ({exc}): pip install 'wowgrass[workbench]'"
    return None


class Panels:
    """Dear ImGui on the view's window, drawing the :class:`~.controller.Workbench`'s state."""

    REFRESH_S = 0.25  # the widgets are built again at least this often (the status line's figures)

    def __init__(self, bench, target):
        from imgui_bundle import imgui

        self.imgui, self.bench, self.target = imgui, bench, target
        self.ctx = imgui.create_context()
        io = imgui.get_io()
        io.set_ini_filename("")  # no imgui.ini beside the user's files
        # a window: glfw's backend takes the events; an offscreen target (the benchmark): no input
        self._addr = None
        if getattr(target, "window", None) is not None:
            self._addr = ctypes.cast(target.window, ctypes.c_void_p).value
            imgui.backends.glfw_init_for_opengl(self._addr, False)
        imgui.backends.opengl3_init("#version 330")
        self._t = _time.perf_counter()
        self._input = True  # an event since the last build: build again
        self._key, self._built_at, self._draw_data = None, 0.0, None
        self.builds = 0
        self.cpu_ms = self.build_ms = self.submit_ms = 0.0  # the panels' CPU time of the last frame
        self.rects: dict = {}  # panel title -> its rectangle and scroll, as last drawn
        self.items: dict = {}
        self.texture_filter = ""
        self.model_filter = ""
        self._models = None

    def close(self):
        imgui = self.imgui
        imgui.backends.opengl3_shutdown()
        if self._addr is not None:
            imgui.backends.glfw_shutdown()
        imgui.destroy_context(self.ctx)

    # -- input --
    def last_event_id(self) -> int:
        """imgui's id of the last input event given to it (input_gate.py)."""
        return self.ctx.input_events_next_event_id - 1

    def wants_mouse(self) -> bool:
        return bool(self.imgui.get_io().want_capture_mouse)

    def on_key(self, key, scancode, action, mods) -> bool:
        self._input = True
        self.imgui.backends.glfw_key_callback(self._addr, key, scancode, action, mods)
        return bool(self.imgui.get_io().want_capture_keyboard)

    def on_char(self, c) -> bool:
        self._input = True
        self.imgui.backends.glfw_char_callback(self._addr, c)
        return bool(self.imgui.get_io().want_text_input)

    def on_cursor(self, x, y) -> bool:
        self._input = True
        self.imgui.backends.glfw_cursor_pos_callback(self._addr, x, y)
        return False

    def on_button(self, button, action, mods) -> bool:
        self._input = True
        self.imgui.backends.glfw_mouse_button_callback(self._addr, button, action, mods)
        return self.wants_mouse()

    def on_scroll(self, dx, dy) -> bool:
        self._input = True
        self.imgui.backends.glfw_scroll_callback(self._addr, dx, dy)
        return self.wants_mouse()

    # -- a frame of panels --
    def draw(self):
        """A frame of panels. The widgets are built again only when something asks (input, a change
        of what they show, the window's size, or REFRESH_S passed: the status line's figures);
        otherwise the last frame's draw lists are submitted again (they stay valid until the next
        ``new_frame``): the panels' CPU then is the GL submission alone."""
        imgui = self.imgui
        t0 = _time.perf_counter()
        key = (self.bench.ui_version, tuple(self.target.size))
        build = self._input or key != self._key or t0 - self._built_at >= self.REFRESH_S or self._draw_data is None
        if build:
            self._input = False
            self._key, self._built_at = key, t0
            imgui.backends.opengl3_new_frame()
            if self._addr is not None:
                imgui.backends.glfw_new_frame()
            else:
                io = imgui.get_io()
                io.display_size = imgui.ImVec2(*self.target.size)
                io.delta_time = max(t0 - self._t, 1e-4)
                self._t = t0
            imgui.new_frame()
            gate = getattr(self.bench, "gate", None)
            if gate is not None:  # what the events this frame processed asked for (input_gate.py)
                io, queue = imgui.get_io(), self.ctx.input_events_queue
                processed = queue[0].event_id - 1 if len(queue) else self.ctx.input_events_next_event_id - 1
                gate.record(processed, io.want_capture_mouse, io.want_capture_keyboard)
                self._input = self._input or bool(len(queue))  # imgui left some for the next frame: build again
            self._status()
            self._overlays()
            self._tools()
            self._pick()
            self._findings()
            self._changes()
            if self.bench.rules is not None:
                rules_panel(self, self.bench.rules)
            if self.bench.help:
                self._help()
            self.bench.unsaved.draw(imgui, self.target.size)
            imgui.render()
            self._draw_data = imgui.get_draw_data()
            self.builds += 1
        t1 = _time.perf_counter()
        imgui.backends.opengl3_render_draw_data(self._draw_data)
        t2 = _time.perf_counter()
        self.build_ms, self.submit_ms = (t1 - t0) * 1000.0, (t2 - t1) * 1000.0  # widgets; GL calls
        self.cpu_ms = (t2 - t0) * 1000.0

    def _window(self, title, x, y, w, h=0, flags=0):
        imgui = self.imgui
        imgui.set_next_window_pos(imgui.ImVec2(x, y), imgui.Cond_.first_use_ever)
        if w:
            imgui.set_next_window_size(imgui.ImVec2(w, h), imgui.Cond_.first_use_ever)
        shown = imgui.begin(title, None, flags)[0]
        pos, size = imgui.get_window_pos(), imgui.get_window_size()
        self.rects[title] = {"x": pos.x, "y": pos.y, "w": size.x, "h": size.y, "scroll_y": imgui.get_scroll_y(),
                             "scroll_max_y": imgui.get_scroll_max_y()}
        return shown

    def _item(self, name):
        """Where the last widget was drawn (the layout the report gives: tests check it fits)."""
        lo, hi = self.imgui.get_item_rect_min(), self.imgui.get_item_rect_max()
        self.items[name] = {"x": lo.x, "y": lo.y, "w": hi.x - lo.x, "h": hi.y - lo.y}

    def layout(self) -> dict:
        """The panels and some widgets as last drawn (window pixels): ``view --json``'s ``workbench``."""
        return {"size": list(self.target.size), "panels": dict(self.rects), "items": dict(self.items)}

    def _status(self):
        imgui, b = self.imgui, self.bench
        W, H = self.target.size
        imgui.set_next_window_pos(imgui.ImVec2(0, H - 26))
        imgui.set_next_window_size(imgui.ImVec2(W, 26))
        flags = (imgui.WindowFlags_.no_decoration | imgui.WindowFlags_.no_move | imgui.WindowFlags_.no_saved_settings
                 | imgui.WindowFlags_.no_focus_on_appearing | imgui.WindowFlags_.no_nav)
        imgui.begin("status", None, flags)
        imgui.text(status_line(b))
        imgui.end()

    def _overlays(self):
        imgui, b = self.imgui, self.bench
        if self._window("Overlays", 8, 8, 0, 0, self.imgui.WindowFlags_.always_auto_resize):
            for name, key, label in OVERLAYS:
                changed, on = imgui.checkbox(f"{key}  {label}", b.overlays[name])
                if changed:
                    b.toggle_overlay(name, on)
            if b.overlays["sets"]:
                imgui.separator()
                imgui.text("effect sets")
                for i, (eid, rgb) in enumerate(b.colours.legend()[:24]):
                    imgui.color_button(f"##set{eid}", imgui.ImVec4(rgb[0] / 255, rgb[1] / 255, rgb[2] / 255, 1.0),
                                       0, imgui.ImVec2(12, 12))
                    imgui.same_line()
                    imgui.text(f"{eid:<6d}")
                    if i % 3 != 2:
                        imgui.same_line()
            if b.overlays.get("rules") and b.rules is not None:
                imgui.separator()
                imgui.text("rules (the one governing each cell)")
                legend = b.rules.legend()
                for label, rgb in legend[:8]:  # the panel stays clear of the Tools panel below it
                    imgui.color_button(f"##rule{label}", imgui.ImVec4(rgb[0] / 255, rgb[1] / 255, rgb[2] / 255, 1.0),
                                       0, imgui.ImVec2(12, 12))
                    imgui.same_line()
                    imgui.text(label)
                if len(legend) > 8:
                    imgui.text(f"... {len(legend) - 8} more (colours repeat after 20)")
        imgui.end()

    def _tools(self):
        imgui, b = self.imgui, self.bench
        ts = b.tools
        W, H = self.target.size
        y = min(330, max(8, H - 270))  # below the Overlays panel; at least 236 pixels tall
        # never past the status line: taller content scrolls (the wheel over the panel scrolls it)
        imgui.set_next_window_size_constraints(imgui.ImVec2(0, 0), imgui.ImVec2(max(W - 16, 100), max(H - y - 34, 100)))
        if self._window("Tools", 8, y, 0, 0, self.imgui.WindowFlags_.always_auto_resize):
            for name, label in tool_choices():
                if imgui.radio_button(label, ts.tool == name) and ts.tool != name:
                    b.choose_tool(name)
            TOOLS[ts.tool].widgets(self, ts)
            imgui.separator()
            if imgui.collapsing_header("Effect set editor"):
                self._set_editor()
            imgui.separator()
            if imgui.button("Undo") and b.session.can_undo:
                b.undo()
            imgui.same_line()
            if imgui.button("Redo") and b.session.can_redo:
                b.redo()
        imgui.end()

    def assign_widgets(self, ts):
        """The assign tool's settings: the texture (typed or from the picked cell), the id, the scope."""
        imgui, b = self.imgui, self.bench
        _, ts.texture = imgui.input_text("texture", ts.texture)
        if b.picked_info is not None and b.picked_info.get("layers"):
            imgui.text("from the picked cell:")
            for layer in b.picked_info["layers"]:
                if imgui.small_button(f"{layer['index']}: {short(layer['texture'])}"):
                    ts.texture = layer["texture"]
        _, ts.effect_id = imgui.input_int("effect id", ts.effect_id)
        for scope in ("brush", "tile", "map"):
            if imgui.radio_button(scope, ts.scope == scope):
                ts.scope = scope
            imgui.same_line()
        imgui.new_line()
        if ts.scope != "brush" and imgui.button(f"assign over the {ts.scope}"):
            b.assign_scope()

    def _set_editor(self):
        from wowgrass.edit.effect_sets import BAG, even_weights

        imgui, b = self.imgui, self.bench
        ts = b.tools
        imgui.push_item_width(150)
        _, ts.set_effect = imgui.input_int("change id (0: new)", ts.set_effect)
        _, self.model_filter = imgui.input_text("model filter", self.model_filter)
        models = self._model_list()
        if ts.set_weights_even:  # effects new-set's default: the bag shared evenly over the models given
            given = [i for i, m in enumerate(ts.set_models) if m]
            ts.set_weights = [0, 0, 0, 0]
            for i, w in zip(given, even_weights(len(given))):
                ts.set_weights[i] = w
        for i in range(4):  # a model and its weight on one line: the editor fits a 720-pixel window
            _, ts.set_models[i] = imgui.input_text(f"##model{i}", ts.set_models[i])
            imgui.same_line()
            imgui.push_item_width(90)
            changed, w = imgui.slider_int(f"model {i}##w{i}", int(ts.set_weights[i]), 0, BAG)
            imgui.pop_item_width()
            if changed:
                ts.set_weights[i], ts.set_weights_even = w, False
        if not ts.set_weights_even and imgui.small_button("share the bag evenly"):
            ts.set_weights_even = True
        elif ts.set_weights_even:
            imgui.text_disabled(f"weights: the {BAG}-point bag shared evenly")
        _, ts.set_density = imgui.slider_int("density", int(ts.set_density), 0, 64)
        self._item("density")
        imgui.pop_item_width()
        if self.model_filter:
            shown = [m for m in models if self.model_filter.lower() in m.lower()][:12]
            for m in shown:
                if imgui.small_button(short(m)):
                    empty = next((i for i, x in enumerate(ts.set_models) if not x), 3)
                    ts.set_models[empty] = m
        if imgui.button("Preview set"):
            b.preview_set()
        self._item("Preview set")
        if ts.preview_id is not None:
            imgui.same_line()
            imgui.text(f"previewed as {ts.preview_id}")

    def _model_list(self) -> list:
        """The tables' models and the data's detail doodads (World\\NoDXT\\Detail), once."""
        if self._models is None:
            cat = getattr(self.bench.session, "catalog", None)
            names = set(m for m in (getattr(cat, "models", []) or []) if m)
            try:
                names.update(self.bench.session.data.list("World\\NoDXT\\Detail\\*.m2"))
            except Exception:  # an archive without a listfile lists nothing: the tables' models remain
                pass
            self._models = sorted(names, key=str.lower)
        return self._models

    def _pick(self):
        imgui, b = self.imgui, self.bench
        info = b.picked_info
        W = self.target.size[0]
        if info is None:
            return
        if self._window("Cell", W - 360, 8, 352, min(470, self.target.size[1] - 60)):
            for line in pick_lines(b.picked, info, b.pick_ms):
                imgui.text_wrapped(line)
        imgui.end()

    def _findings(self):
        imgui, b = self.imgui, self.bench
        W, H = self.target.size
        if b.findings_note is None:  # view --no-audit
            return
        if self._window("Findings", W - 360, min(486, H - 250), 352, 200):
            imgui.text(b.findings_note)
            for i, f in enumerate(b.findings[:400]):
                if imgui.selectable(f"[{f.kind}] {f.text}##f{i}", False)[0]:
                    b.fly_to(f)
        imgui.end()

    def _changes(self):
        imgui, b = self.imgui, self.bench
        s = b.session
        if self._window("Changes", 300, 8, 0, 0, self.imgui.WindowFlags_.always_auto_resize):
            imgui.text(f"history: {len(s.history)} edit(s)")
            for label in s.history[-6:]:
                imgui.bullet_text(label)
            tiles = ", ".join(f"{c},{r}" for c, r in s.changed_tiles) or "none"
            imgui.text_wrapped(f"changed tiles: {tiles}")
            imgui.text_wrapped(f"changed tables: {', '.join(s.changed_tables) or 'none'}")
            _, b.save_dir = imgui.input_text("overlay folder", b.save_dir)
            if imgui.button("Save to folder (Ctrl+S)"):
                b.save(b.save_dir)
            imgui.same_line()
            if imgui.button("Save in place"):
                b.save(None, in_place=True)
            _, b.patch_path = imgui.input_text("patch MPQ", b.patch_path)
            if imgui.button("Build patch"):
                b.build_patch(b.patch_path)
            for m in b.messages[-4:]:
                imgui.text_wrapped(m)
        imgui.end()

    def _help(self):
        imgui = self.imgui
        W, H = self.target.size
        imgui.set_next_window_pos(imgui.ImVec2(W * 0.5, H * 0.5), imgui.Cond_.always, imgui.ImVec2(0.5, 0.5))
        if imgui.begin("Keys and mouse (F1)", None, imgui.WindowFlags_.always_auto_resize)[0]:
            for k, what in keys_help():
                imgui.text(f"{k:32s} {what}")
        pos, size = imgui.get_window_pos(), imgui.get_window_size()
        self.rects["Keys and mouse (F1)"] = {"x": pos.x, "y": pos.y, "w": size.x, "h": size.y, "lines": len(keys_help())}
        imgui.end()


def short(path: str) -> str:
    return str(path).replace("\\", "/").rsplit("/", 1)[-1]


def status_line(b) -> str:
    """The status line: map, tile / chunk / cell under the cursor, world X Y Z, the hour, frame time."""
    parts = [b.session.map_name]
    r = b.hover.ref
    if r is not None:
        parts.append(f"tile {r.tile[0]},{r.tile[1]}  chunk {r.chunk[0]},{r.chunk[1]}  cell {r.cell[0]},{r.cell[1]}")
    else:
        parts.append("(no ground under the cursor)")
    if b.hover.world is not None:
        x, y, z = (float(v) for v in b.hover.world)
        parts.append(f"X {x:.1f}  Y {y:.1f}  Z {z:.1f}")
    zl = getattr(b.viewer, "zone_light", None)
    if zl is not None:
        from wowgrass.game.light import clock_text

        parts.append(clock_text(zl.clock))
    st = getattr(b.viewer, "last_stats", None)
    parts.append(f"{b.frame_ms:.1f} ms/frame" + (f" (cpu {st.cpu_ms:.2f})" if st is not None else ""))
    parts.append(f"tool {b.tools.tool}")
    return "   |   ".join(parts)


def pick_lines(ref, info: dict, pick_ms) -> list[str]:
    """The picked cell as lines of text (the Cell panel; tests read them too)."""
    out = [f"tile {ref.tile[0]},{ref.tile[1]}  chunk {ref.chunk[0]},{ref.chunk[1]}  cell {ref.cell[0]},{ref.cell[1]}"]
    if "world" in info:
        out.append("at X {:.1f} Y {:.1f} Z {:.1f}".format(*info["world"]) + (f"  (pick {pick_ms:.2f} ms)" if pick_ms else ""))
    rules = info.get("rules")
    if rules is not None and rules.get("error"):
        out.append(f"rules: {rules['error']}")
    else:
        out += rule_lines(rules)
    for layer in info.get("layers", []):
        out.append(f"layer {layer['index']}: {short(layer['texture'])}  effect {layer['effect_id']}  "
                   f"alpha {layer.get('alpha_mean', 0):.0f}")
    out.append(f"doodadMapping: layer {info.get('doodad_mapping')}   noEffectDoodad: {info.get('no_effect_doodad')}")
    eff = info.get("effect")
    if eff:
        out.append(f"effect set {eff.get('id')}  density {eff.get('density')}")
        for m, w in zip(eff.get("models") or [], eff.get("weights") or [None] * 4):
            if m:
                out.append(f"   {short(m)}" + (f"  weight {w}" if w is not None else ""))
    else:
        out.append("effect set: none")
    grass = info.get("grass") or []
    out.append(f"grass placed: {len(grass)}" + (" (the first 5:)" if len(grass) > 5 else ""))
    for g in grass[:5]:
        out.append(f"   {short(g['model'])}  ({g['x']:.1f}, {g['y']:.1f}, {g['z']:.1f})  yaw {g['yaw']:.2f}  "
                   f"scale {g['scale']:.2f}")
    light = info.get("light")
    if light:
        out.append(f"light at {light['hour']}: sun {light['sun_colour']} ambient {light['ambient']}  fog {light['fog']}"
                   + ("  (the tables' noon; the view draws its fixed sun: --clock HH:MM)" if light.get("fixed_sun") else ""))
    else:
        out.append("light: the data has no light tables for this map (the view's fixed sun)")
    return out
