"""Run inside a Blender with a window (Debian's 3.4 under a private Xvfb):
``blender --factory-startup -noaudio --python tests/blender_window_session.py -- JOB.json``.

The import as a person runs it: the add-on registered from this checkout (the extension format is
4.2's; its code is the same), File > Import > WoW zone started in the window (the modal operator:
progress bar, status text), Esc pressed with xdotool after the first tile (everything it made
removed), then an import to the end with a damaged tile (the warning and the summary in the info
log, read back with ui.reports_to_textblock), a screenshot of the window. Writes JOB's report."""

import json
import subprocess
import sys
import time

import bpy

job = json.load(open(sys.argv[sys.argv.index("--") + 1]))
sys.path.insert(0, job["path"])
from wowgrass.blender import addon  # noqa: E402

addon.register()
report = {"blender": bpy.app.version_string, "log": []}
state = {"phase": "start", "t": time.monotonic()}


def counts():
    return {t: len(getattr(bpy.data, t)) for t in ("objects", "meshes", "materials", "images", "collections",
                                                   "node_groups", "lights", "worlds")}


def window_override():
    win = bpy.context.window_manager.windows[0]
    area = max(win.screen.areas, key=lambda a: a.width * a.height)
    return {"window": win, "screen": win.screen, "area": area,
            "region": next(r for r in area.regions if r.type == "WINDOW")}


def start(props):
    with bpy.context.temp_override(**window_override()):
        return sorted(bpy.ops.import_scene.wow_zone("EXEC_DEFAULT", **props))


def info_log() -> str:
    """The Info editor's reports (the info log): an area turned into the Info editor, every report
    selected and copied, the clipboard read back."""
    o = window_override()
    area = min(o["window"].screen.areas, key=lambda a: a.width * a.height)
    old = area.type
    area.type = "INFO"
    region = next(r for r in area.regions if r.type == "WINDOW")
    with bpy.context.temp_override(window=o["window"], screen=o["screen"], area=area, region=region):
        bpy.ops.info.select_all(action="SELECT")
        bpy.ops.info.report_copy()
    area.type = old
    return bpy.context.window_manager.clipboard


def roots():
    return [c for c in bpy.data.collections if "wow_map" in c]


def finish():
    with open(job["report"], "w") as f:
        json.dump(report, f, indent=1)
    bpy.ops.wm.quit_blender()


def tick():
    s = state["phase"]
    now = time.monotonic()
    if state.get("seen") != s:   # a phase's own time limit, and when each began (seconds from the start)
        state["seen"], state["since"] = s, now
        report.setdefault("phases", []).append([s, round(now - state["t"], 1)])
    if now - state.get("since", state["t"]) > job.get("timeout", 240):
        report["timeout_in"] = s
        report["reports"] = info_log()
        report["collections"] = [c.name for c in bpy.data.collections]
        finish()
        return None
    if s == "start":
        report["before"] = counts()
        report["started"] = start(job["cancel_import"])
        state["phase"] = "wait_tile"
        return 0.05
    if s == "wait_tile":
        if any(c.get("wow_tile") for c in bpy.data.collections):   # the first tile is in: press Esc
            report["mid"] = counts()
            report["status_seen"] = True
            subprocess.run(["xdotool", "search", "--onlyvisible", "--name", "Blender", "windowfocus", "--sync"],
                           timeout=20)
            subprocess.run(["xdotool", "key", "Escape"], timeout=20)
            state["phase"], state["esc"] = "wait_cancel", now
        return 0.05
    if s == "wait_cancel":
        if not roots():
            report["after_cancel"] = counts()
            state["phase"] = "full"
        elif now - state["esc"] > 60 or any(c.name.endswith("32_32") for c in bpy.data.collections
                                             if c.get("wow_tile")):
            report["cancel_ignored"] = True
            report["after_cancel"] = counts()
            state["phase"] = "full"
        return 0.2
    if s == "full":
        report["started_full"] = start(job["full_import"])
        state["phase"], state["full"] = "wait_full", now
        return 0.2
    if s == "wait_full":
        # finished: a REGISTER operator that ends FINISHED joins the window manager's operator history
        done = any(op.bl_idname == "IMPORT_SCENE_OT_wow_zone" for op in bpy.context.window_manager.operators)
        if done:
            report["reports"] = info_log()
            report["tiles"] = sorted(c.name for c in bpy.data.collections if c.get("wow_tile"))
            # look at the tile in the 3D view (solid, textured: EEVEE compiles for minutes on llvmpipe)
            o = window_override()
            area = o["area"]
            area.type = "VIEW_3D"
            space = area.spaces.active
            space.shading.type = "SOLID"
            space.shading.color_type = "TEXTURE"
            space.overlay.show_overlays = False
            space.clip_end = 5000.0
            from mathutils import Euler, Vector

            r3d = space.region_3d
            r3d.view_location = Vector((-40.0, -80.0, 60.0))
            r3d.view_rotation = Euler((1.15, 0.0, -2.4)).to_quaternion()
            r3d.view_distance = 160.0
            state["phase"], state["shot"] = "shot", now
        return 0.5
    if s == "shot":
        if now - state["shot"] > 2.0:
            o = window_override()
            with bpy.context.temp_override(**o):
                bpy.ops.wm.redraw_timer(type="DRAW_WIN_SWAP", iterations=1)
                bpy.ops.screen.screenshot(filepath=job["screenshot"])
            finish()
            return None
        return 1.0
    return None


bpy.app.timers.register(tick, first_interval=2.0)
