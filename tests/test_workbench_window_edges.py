"""The workbench's window at its edges (issue 49): input the panels take never reaches the tools or
the view's keys, unsaved edits are never lost silently, Build patch names a patch the client loads,
a watched tile deleted on disk falls back to the layer below, the effect-set editor fits the window,
the panels' text, the instance count after edits, the start camera. Each in a real window on a
private Xvfb, driven with xdotool; each waits for what it needs (a stderr line, a screenshot that
the workbench writes only after every earlier event), never for a fixed time.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from xvfb import ViewWindow, private_xvfb

from conftest import require_tool

pytestmark = pytest.mark.window

SIZE = (1280, 720)


@pytest.fixture(scope="module")
def xdisplay():
    xvfb = require_tool("Xvfb", "no X server for the window tests (apt-get install xvfb xdotool)")
    require_tool("xdotool", "no input into the window (apt-get install xdotool)")
    try:
        import imgui_bundle  # noqa: F401
        ok = True
    except ImportError:
        ok = False
    require_tool("imgui-bundle", "the workbench's panels (pip install 'wowgrass[workbench]')", found=ok)
    with private_xvfb(xvfb, SIZE) as display:
        yield display


def _png(path):
    from PIL import Image

    return np.asarray(Image.open(path).convert("RGB")).astype(int)


def _view(xdisplay, cwd, *args, size=SIZE, env=None):
    return ViewWindow(xdisplay, cwd, ["--panels", "--no-audit", "--json", "--quit-after", "600", *args], size=size,
                      env=env)


def _result(win, keys=("Escape",)):
    rc, out, err = win.finish(keys=keys)
    assert "Traceback" not in err and "Fatal Python error" not in err, err
    assert rc == 0, err
    return json.loads(out)


def _discard_and_quit(win):
    """Esc, then D once the unsaved-edits question is up; the result."""
    if win.proc.poll() is None:
        mark = win.mark()
        win.key("Escape")
        try:
            win.wait_line(r"^quit: unsaved edits", start=mark)
            win.key("d")
        except AssertionError:
            if win.proc.poll() is None:  # neither asked nor gone
                raise
    return _result(win, keys=())


def test_clicks_and_keys_the_panels_take_never_reach_the_tools(xdisplay, tmp_path):
    """A click on a panel with the exclusion brush on paints nothing behind it, even when the cursor
    arrives and clicks before a frame has drawn it there; keys typed into a field right after the
    click that focused it (G, 1) toggle neither the grass nor an overlay; a click on the terrain
    still paints, and Ctrl+S saves to the folder typed into the field."""
    win = _view(xdisplay, tmp_path)
    try:
        win.key("F6")
        win.move(700, 600)  # over the terrain: the panels' last frame says "not ours"
        win.shot()
        win.click(150, 367)  # in the Tools panel, right of "F5 pick": no widget, terrain behind it
        win.click(620, 60)   # the Changes panel's empty corner (sky behind it: no paint either way)
        win.shot()
        win.click(400, 95)   # the overlay folder field, and typing at once
        win.key("ctrl+a")
        win.xdo("type", "--window", win.wid, "--delay", "20", "g1typed-out")
        win.key("Return")
        win.move(700, 600)
        win.shot()
        win.click(700, 600)  # the terrain: one stroke
        win.move(700, 600)
        mark = win.mark()
        win.key("ctrl+s")
        win.wait_line(r"saved \d+ file\(s\) to g1typed-out", start=mark)
    finally:
        res = _result(win) if win.proc.poll() is None else None
    wb = res["workbench"]
    assert wb["history"] and all(h.startswith("exclude") for h in wb["history"]), wb["history"]
    assert wb["edit_count"] == 1, wb["history"]  # the terrain click; none from the panel clicks
    assert res["toggles"]["grass"] is True  # the G typed into the field
    assert wb["overlays"] == []  # the 1 typed into the field
    assert any(p.suffix.lower() == ".adt" for p in (tmp_path / "g1typed-out").rglob("*")), list(tmp_path.iterdir())


def _title_blue(png, box=(360, 300, 920, 420)) -> int:
    """Pixels of Dear ImGui's active title bar blue (41, 74, 122) in ``box`` (x0, y0, x1, y1): the
    middle of a 1280x720 window, where a modal question is drawn, terrain and grass otherwise."""
    x0, y0, x1, y1 = box
    a = _png(png)[y0:y1, x0:x1]
    return int((np.abs(a - np.array([41, 74, 122])).sum(-1) < 12).sum())


def test_unsaved_edits_are_asked_about_and_kept_through_a_signal(xdisplay, tmp_path):
    """Esc with unsaved edits (after typing into a field and Return, as the issue's user did) asks in
    the window instead of quitting; C cancels; SIGTERM then keeps the edits in a recovery file,
    which the next view of the same data offers; R restores them (one undoable step); Esc asks
    again and S saves them to the Changes panel's folder and quits; the recovery file is gone."""
    import signal

    env = {"WOWGRASS_CACHE": str(tmp_path / "cache")}
    win = _view(xdisplay, tmp_path, env=env)
    try:
        win.key("F6")
        win.click(700, 600)  # one exclusion dab: tile 31,31
        before = win.shot()
        win.click(400, 112)  # the overlay folder field (one history line above it now)
        win.xdo("type", "--window", win.wid, "--delay", "20", "x")
        win.key("Return")
        mark = win.mark()
        win.key("Escape")
        win.wait_line(r"quit: unsaved edits \(tile 31,31\): the window asks", start=mark)
        asked = win.shot()
        assert win.proc.poll() is None  # still there
        assert _title_blue(before) < 200 and _title_blue(asked) > 5000  # the question is drawn
        mark = win.mark()
        win.key("c")
        win.wait_line(r"quit cancelled", start=mark)
        win.proc.send_signal(signal.SIGTERM)
        rc, out, err = win.finish(keys=())
    finally:
        win.kill()
    assert rc == 128 + signal.SIGTERM, err
    assert "Traceback" not in err, err
    kept = [p for p in (tmp_path / "cache" / "recovery").rglob("*.zip")]
    assert len(kept) == 1 and f"unsaved edits kept in {kept[0]}" in err, err
    assert not (tmp_path / "workbench-out").exists()

    win = _view(xdisplay, tmp_path, env=env)
    try:
        win.wait_line(rf"note: unsaved edits of an earlier session are kept in {kept[0]} \(1 tile\(s\): "
                      r"WowgrassSample_31_31\.adt")
        mark = win.mark()
        win.key("r")
        win.wait_line(r"restored 1 file\(s\)", start=mark)
        mark = win.mark()
        win.key("Escape")
        win.wait_line(r"quit: unsaved edits \(tile 31,31\)", start=mark)
        win.key("s")
        win.proc.wait(120)
    finally:
        res = _result(win, keys=())
    wb = res["workbench"]
    assert wb["history"] == [h for h in wb["history"] if h.startswith("restored 1 file(s)")] and wb["edit_count"] == 1
    assert any(m.startswith("saved 1 file(s) to workbench-out") for m in wb["messages"]), wb["messages"]
    assert [p.name for p in (tmp_path / "workbench-out").rglob("*.adt")] == ["WowgrassSample_31_31.adt"]
    assert not kept[0].exists()  # saved: the kept edits are done with


def test_quit_question_discard_by_mouse(xdisplay, tmp_path):
    """The question's buttons take clicks: Discard and quit ends the window at once, nothing saved
    and nothing kept."""
    env = {"WOWGRASS_CACHE": str(tmp_path / "cache")}
    win = _view(xdisplay, tmp_path, env=env)
    try:
        win.key("F6")
        win.click(700, 600)
        mark = win.mark()
        win.key("Escape")
        win.wait_line(r"quit: unsaved edits", start=mark)
        win.shot()
        win.click(575, 386)  # "Discard and quit (D)"
        win.proc.wait(120)
    finally:
        res = _result(win, keys=())
    assert any(m.startswith("discarded 1 unsaved file(s)") for m in res["workbench"]["messages"])
    assert not (tmp_path / "workbench-out").exists()
    assert not list((tmp_path / "cache").rglob("*.zip"))


def test_build_patch_names_a_patch_the_client_loads_and_says_where(xdisplay, tmp_path):
    """Build patch with the field's default: the next locale patch above the sample client's own
    (patch-enUS.MPQ: so patch-enUS-2.MPQ), written in the current folder; an earlier one there is
    replaced and said; then patch build's notes (where the client loads it) and the whole path."""
    from wowgrass.formats.mpq import MpqArchive

    old = tmp_path / "patch-enUS-2.MPQ"
    old.write_bytes(b"an earlier build")
    win = _view(xdisplay, tmp_path)
    try:
        win.key("F6")
        win.click(700, 600)  # one exclusion dab: tile 31,31
        win.shot()
        mark = win.mark()
        win.click(350, 181)  # "Build patch" (one history line above it)
        line = win.wait_line(r"^wrote .*patch-enUS-2\.MPQ", start=mark)
        lines = win.lines[mark:]
    finally:
        res = _discard_and_quit(win)
    assert line == (f"wrote {old} (1 file, {old.stat().st_size:,} bytes, MPQ v1, a locale patch (enUS) for 3.3.5)"), line
    assert f"note: {old} exists: replacing it" in lines, lines
    assert "note: the client loads it as Data\\enUS\\patch-enUS-2.MPQ" in lines, lines
    assert not list(tmp_path.glob("patch-wowgrass*"))
    arc = MpqArchive.from_bytes(old.read_bytes(), str(old))
    assert arc.read("World\\Maps\\WowgrassSample\\WowgrassSample_31_31.adt")[:4] == b"REVM"
    assert res["workbench"]["edit_count"] == 1


def test_json_counts_the_grass_an_edit_removed(xdisplay, tmp_path):
    """``view --json``'s resident instance count is the grass drawn at the end: an exclusion dab
    (coverage placement: it removes grass) lowers it below the same view's without the dab."""
    counts = []
    for dab in (False, True):
        win = _view(xdisplay, tmp_path, "--placement", "coverage")
        try:
            if dab:
                win.key("F6")
                win.click(700, 600)
            win.shot()
            win.shot()  # a frame later: the dab's grass handed to the scene
        finally:
            res = _discard_and_quit(win) if dab else _result(win)
        assert sorted(map(tuple, res["tiles"])) == [(31, 31), (31, 32), (32, 31), (32, 32)]
        counts.append(res["resident_grass_instance_count"])
        if dab:
            assert res["workbench"]["edit_count"] == 1 and res["workbench"]["edits_applied"], res["workbench"]
    assert counts[1] < counts[0], counts


@pytest.mark.parametrize("size", [(1280, 720), (1400, 800)])
def test_effect_set_editor_fits_the_window_and_the_wheel_scrolls_it(xdisplay, tmp_path, size):
    """The Tools panel with the effect-set editor open stays above the status line; what does not
    fit scrolls, by the wheel over the panel, so the density field and Preview set are reachable."""
    w, h = size
    win = _view(xdisplay, tmp_path, size=size)
    try:
        win.shot()
        win.click(100, 486)  # the "Effect set editor" header (the Tools panel at y 330, five tools above it)
        win.shot()
        win.move(150, h - 120)
        win.xdo("click", "--repeat", "12", "5")  # the wheel, down, over the panel
        win.shot()
    finally:
        res = _result(win)
    layout = res["workbench"]["layout"]
    tools = layout["panels"]["Tools"]
    assert layout["size"] == [w, h]
    assert tools["y"] >= 0 and tools["y"] + tools["h"] <= h - 26, tools  # above the status line
    assert tools["x"] >= 0 and tools["x"] + tools["w"] <= w, tools
    assert tools["scroll_max_y"] == 0 or tools["scroll_y"] > 0, tools  # all in view, or the wheel scrolled it
    if h == 720:
        assert tools["scroll_max_y"] > 0, tools  # 720 pixels: the open editor needs the wheel
    for item in ("density", "Preview set"):
        r = layout["items"][item]
        assert tools["y"] + 19 <= r["y"] and r["y"] + r["h"] <= tools["y"] + tools["h"], (item, r, tools)  # in view


def test_effect_set_editor_weights_default_to_new_sets(tmp_path):
    """The editor's weights start as `effects new-set`'s: the 16-point bag shared evenly over the
    models given (not 1,1,1,1), until one is moved."""
    from wowgrass.edit.effect_sets import even_weights
    from wowgrass.workbench.tools import ToolState

    import threading

    from wowgrass.workbench.controller import Workbench

    assert even_weights(1) == [16] and even_weights(2) == [8, 8] and even_weights(3) == [6, 5, 5]
    assert even_weights(4) == [4, 4, 4, 4]
    got = []

    class Session:
        def preview_set(self, models, weights, density, effect_id=None):
            got.append((models, weights))
            return 1009

    bench = object.__new__(Workbench)  # the editor's state and its Preview, without a window
    bench.tools, bench.session, bench.lock = ToolState(), Session(), threading.RLock()
    bench.messages, bench.ui_version, bench.log = [], 0, lambda s: None
    bench.tools.set_models[:2] = ["ElwGra01", "ElwGra05"]
    assert bench.preview_set() == 1009
    assert got[-1] == (["ElwGra01", "ElwGra05"], None)  # None: add_effect_set shares the bag evenly (8, 8)
    bench.tools.set_weights[:2], bench.tools.set_weights_even = [12, 4], False  # a slider moved
    bench.preview_set()
    assert got[-1] == (["ElwGra01", "ElwGra05"], [12, 4])


def test_watch_falls_back_to_the_layer_below_a_deleted_tile(xdisplay, tmp_path):
    """``view --watch`` over two layers: the project's copy of tile 31,31 (every cell excluded:
    no grass with the coverage placement) deleted on disk, the client's tile below is drawn again
    (its grass back); a file that is no ADT saved over a tile is said in the window's messages."""
    from wowgrass.edit.adt_edit import exclude_cells
    from wowgrass.fileio import write_atomic
    from wowgrass.game.data import open_data
    from wowgrass.grass.bake import default_data

    root, map_name = default_data()
    folder = tmp_path / "project" / "World" / "Maps" / map_name
    folder.mkdir(parents=True)
    gp = f"World\\Maps\\{map_name}\\{map_name}_31_31.adt"
    with open_data(root) as d:
        raw = d.read(gp)
    bare, _ = exclude_cells(raw, gp, np.ones((256, 8, 8), bool))
    tile = folder / f"{map_name}_31_31.adt"
    tile.write_bytes(bare)
    win = _view(xdisplay, tmp_path, "--data", str(root), "--data", str(tmp_path / "project"), "--watch",
                "--placement", "coverage")
    try:
        win.shot()
        mark = win.mark()
        tile.unlink()
        win.wait_line(r"reloaded tile 31,31", start=mark, timeout=120)
        mark = win.mark()
        write_atomic(folder / f"{map_name}_32_31.adt", b"this is no ADT at all")
        win.wait_line(r"WowgrassSample_32_31\.adt", start=mark, timeout=120)
        win.shot()
    finally:
        res = _result(win)
    wb = res["workbench"]
    first = wb["reloads"][0]
    assert [31, 31] in first["tiles"], wb["reloads"]
    before, after = first["grass_instance_counts"]["31,31"]
    assert before == 0 and after > 10_000, first  # the client's tile, its grass back
    said = [m for m in wb["messages"] if "32_31" in m]
    assert any("not" in m.lower() and ("adt" in m.lower() or "read" in m.lower()) for m in said), wb["messages"]


def test_findings_panel_says_the_audit_failed(xdisplay, tmp_path):
    """A tile that is no ADT makes the background audit fail: the Findings panel says so instead of
    "the audit runs in the background"."""
    from wowgrass.grass.bake import default_data

    root, map_name = default_data()
    folder = tmp_path / "project" / "World" / "Maps" / map_name
    folder.mkdir(parents=True)
    (folder / f"{map_name}_32_32.adt").write_bytes(b"no ADT")
    win = ViewWindow(xdisplay, tmp_path, ["--panels", "--json", "--quit-after", "600", "--data", str(root),
                                          "--data", str(tmp_path / "project")], size=SIZE)
    try:
        win.wait_line(r"audit failed", timeout=180)
        win.shot()
    finally:
        rc, out, err = win.finish()
    assert "Traceback" not in err, err
    res = json.loads(out)
    note = res["workbench"]["findings_note"]
    assert note.startswith("the audit failed: ") and "32_32" in note, note


def test_the_issues_sequence_then_save_to_folder_clicks_each_save(xdisplay, tmp_path):
    """Issue 49 item 4's report: F8, the effect-set editor opened, an assign over the map, Ctrl+S
    to a folder, an exclusion dab, then clicks on "Save to folder" (the report: two clicks did
    nothing, the third crashed the window). Each click saves; the window ends cleanly."""
    win = _view(xdisplay, tmp_path)
    try:
        win.key("F8")
        win.shot()
        win.click(100, 578)   # the "Effect set editor" header (below the assign tool's settings)
        win.click(100, 504)   # the texture field
        win.xdo("type", "--window", win.wid, "--delay", "20", "*SampleGrass*")
        win.key("Return")
        win.click(95, 527)    # the effect id field
        win.key("ctrl+a")
        win.xdo("type", "--window", win.wid, "--delay", "20", "1004")
        win.key("Return")
        win.click(150, 550)   # scope: map
        win.shot()
        win.click(85, 573)    # "assign over the map" (the map scope's button, above the editor)
        win.move(900, 600)
        mark = win.mark()
        win.key("ctrl+s")
        win.wait_line(r"^saved [1-9]\d* file\(s\) to workbench-out", start=mark)
        win.key("F6")
        win.click(900, 600)   # one exclusion dab, right of the Tools panel
        win.shot()
        mark = win.mark()
        win.click(390, 152)   # "Save to folder (Ctrl+S)", two history lines above it
        win.wait_line(r"^saved 1 file\(s\) to workbench-out", start=mark)
        mark = win.mark()
        win.click(390, 152)
        win.wait_line(r"^saved 0 file\(s\) to workbench-out", start=mark)
    finally:
        res = _result(win)
    wb = res["workbench"]
    assert wb["history"][0].startswith("assign") and wb["history"][-1].startswith("exclude"), wb["history"]
    assert wb["changed_tiles"] == [], wb  # all saved
    assert any(p.suffix.lower() == ".adt" for p in (tmp_path / "workbench-out").rglob("*"))
