"""The workbench in the view's window (issue 40), driven under a private Xvfb with xdotool: open,
pick, paint with the exclusion brush, undo, save, F1; and ``view --watch`` reloading a tile that
the test rewrites on disk. The pictures (F12 screenshots) are compared where the brush went.

Under ``CI=true`` a missing Xvfb, xdotool or imgui-bundle fails these tests (CI installs them);
elsewhere they are skipped with the reason.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from conftest import require_tool
from xvfb import ViewWindow, private_xvfb

pytestmark = pytest.mark.window

SIZE = (800, 600)
CAMERA = ["--camera", "470,400,78", "--target", "430,360,50"]  # grass over the lower half of the view


def _need(what: str, ok: bool, how: str):
    require_tool(what, f"not installed ({how})", found=ok)


@pytest.fixture(scope="module")
def xdisplay():
    xvfb = shutil.which("Xvfb")
    _need("Xvfb", xvfb is not None, "apt-get install xvfb xdotool")
    _need("xdotool", shutil.which("xdotool") is not None, "apt-get install xdotool")
    try:
        import imgui_bundle  # noqa: F401
        has_imgui = True
    except ImportError:
        has_imgui = False
    _need("imgui-bundle", has_imgui, "pip install 'wowgrass[workbench]'; make install does")
    with private_xvfb(xvfb, SIZE) as display:
        yield display


def _png(path):
    from PIL import Image

    return np.asarray(Image.open(path).convert("RGB")).astype(int)


def _window(display, cwd, *args):
    return ViewWindow(display, cwd, ["--quit-after", "600", "--no-audit", "--json", *args], size=SIZE)


def _new_text(before, after, box) -> int:
    """Pixels of ``box`` (x0, y0, x1, y1) near-white (text: never terrain, grass or sky) in
    ``after`` and not in ``before``."""
    x0, y0, x1, y1 = (int(round(v)) for v in box)
    white = [(_png(p)[y0:y1, x0:x1] > 220).all(-1) for p in (before, after)]
    return int((white[1] & ~white[0]).sum())


def test_window_pick_paint_undo_save(xdisplay, tmp_path):
    # the client look has no wind (pictures comparable); coverage placement honours noEffectDoodad.
    # Every step waits for the window to have taken the input before it (an F12 screenshot, which
    # the workbench writes after every earlier event), never for a fixed time.
    win = _window(xdisplay, tmp_path, *CAMERA, "--overlay", "excluded", "--look", "client", "--placement", "coverage")
    try:
        win.shot()  # the first frames are in
        # pick: a click of the pick tool on the ground
        win.click(400, 520)
        first = win.shot()
        # the exclusion brush: a stroke across the near ground; each picture with the pick tool on
        # (no brush circle) and the cursor in the same place
        win.key("F6")
        win.move(300, 490)
        win.shot()
        win.xdo("mousedown", "1")
        for x in (340, 380, 420, 460):
            win.move(x, 490)
            win.shot()  # a frame at each point: a dab each
        win.xdo("mouseup", "1")
        win.key("F5")
        win.move(400, 520)
        win.shot()
        painted = win.shot()  # the stroke's grass handed to the scene a frame later
        win.key("ctrl+z")  # undo the stroke
        win.shot()
        undone = win.shot()
        # again, then save (to the Changes panel's folder, workbench-out, in the working directory)
        win.key("F6")
        win.click(380, 490)
        mark = win.mark()
        win.key("ctrl+s")
        win.wait_line(r"^saved \d+ file\(s\) to workbench-out", start=mark)
        win.key("F5")
        no_help = win.shot()
        win.key("F1")
        help_shot = win.shot()
    finally:
        rc, out, err = win.finish()
    assert rc == 0, err
    assert "Traceback" not in err, err
    res = json.loads(out)
    wb = res["workbench"]
    assert wb["picked"] is not None and len(wb["picked"]["tile"]) == 2
    assert wb["pick_ms"] is not None
    assert any(m.startswith("undo exclude stroke") for m in wb["messages"]), wb["messages"]  # the stroke, as one step
    assert wb["history"] == [h for h in wb["history"] if h.startswith("exclude")] and wb["edit_count"] == 1, \
        json.dumps(wb)  # the undone stroke is gone; the click after it is the one edit
    assert any(m.startswith("saved") for m in wb["messages"]), wb["messages"]
    saved = [p for p in (tmp_path / "workbench-out").rglob("*") if p.is_file()]
    assert any(p.suffix.lower() == ".adt" for p in saved), saved
    assert len(wb["edits_applied"]) >= 3  # the stroke, its undo, the second click: each reached the scene
    before, painted, undone = _png(first), _png(painted), _png(undone)
    band = (slice(460, 540), slice(300, 460))  # where the stroke went (the panels are elsewhere)
    moved = (np.abs(painted[band] - before[band]).sum(-1) > 40).mean()
    back = (np.abs(undone[band] - before[band]).sum(-1) > 40).mean()
    assert moved > 0.02, moved  # the grass under the stroke went, the excluded overlay came
    assert back < moved / 3, (back, moved)  # undo brought the picture back
    # F1: the help panel is drawn in the window, all of it, with every line of the keys
    from wowgrass.workbench.panels import keys_help

    assert _png(help_shot).shape == (SIZE[1], SIZE[0], 3)
    rect = wb["layout"]["panels"]["Keys and mouse (F1)"]
    assert rect["line_count"] == len(keys_help())  # ("lines" in the report: --json names counts *_count)
    assert rect["x"] >= 0 and rect["y"] >= 0 and rect["x"] + rect["w"] <= SIZE[0] and rect["y"] + rect["h"] <= SIZE[1]
    assert rect["h"] >= len(keys_help()) * 13, rect  # a text line each
    box = (rect["x"], rect["y"] + 20, rect["x"] + rect["w"], rect["y"] + rect["h"])
    assert _new_text(no_help, help_shot, box) > 40 * len(keys_help())  # its text came with F1


def test_watch_reloads_a_rewritten_tile(xdisplay, tmp_path):
    from wowgrass.edit.adt_edit import exclude_cells
    from wowgrass.fileio import write_atomic
    from wowgrass.game.data import open_data
    from wowgrass.grass.bake import default_data

    root, map_name = default_data()
    with open_data(root) as d:
        gp = f"World\\Maps\\{map_name}\\{map_name}_31_31.adt"
        raw = d.read(gp)
    loose = tmp_path / "maps"
    loose.mkdir()
    adt = loose / f"{map_name}_31_31.adt"
    adt.write_bytes(raw)
    win = _window(xdisplay, tmp_path, str(adt), "--watch", "--camera", "300,150,80", "--target", "270,110,50")
    try:
        win.shot()  # the tile is drawn
        mask = np.zeros((256, 8, 8), bool)
        mask[:, 2:6, 2:6] = True
        new, _ = exclude_cells(raw, gp, mask)
        mark = win.mark()
        write_atomic(adt, new)
        win.wait_line(r"reloaded tile 31,31", start=mark, timeout=120)
        win.shot()
    finally:
        rc, out, err = win.finish()
    assert rc == 0 and "Traceback" not in err, err
    res = json.loads(out)
    reloads = res["workbench"]["reloads"]
    assert reloads, (res["workbench"], err)
    assert [31, 31] in reloads[0]["tiles"]
    assert reloads[0]["drawn_ms"] is not None, reloads  # the tile was drawn again
    before, after = reloads[0]["grass_instance_counts"]["31,31"]
    assert before and after is not None and after < before, reloads  # from the new bytes: cells excluded
