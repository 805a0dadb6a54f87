"""The workbench in the view's window (issue 40), driven under a private Xvfb with xdotool: open,
pick, paint with the exclusion brush, undo, save, F1; and ``view --watch`` reloading a tile that
the test rewrites on disk. The pictures (F12 screenshots) are compared where the brush went.

Under ``CI=true`` a missing Xvfb, xdotool or imgui-bundle fails these tests (CI installs them);
elsewhere they are skipped with the reason.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import require_tool
from xvfb import private_xvfb, x_env

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


def _env(display):
    return x_env(display)


def _xdo(display, *args):
    subprocess.run(["xdotool", *args], env=_env(display), check=True, timeout=30)


def _png(path):
    from PIL import Image

    return np.asarray(Image.open(path).convert("RGB")).astype(int)


def _start(display, cwd, *args):
    cmd = [sys.executable, "-m", "wowgrass", "view", "--window", "--size", f"{SIZE[0]}x{SIZE[1]}",
           "--quit-after", "240", "--no-audit", "--json", *args]
    proc = subprocess.Popen(cmd, env=_env(display), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = subprocess.run(["xdotool", "search", "--sync", "--onlyvisible", "--name", "wowgrass"], env=_env(display),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return proc, out.stdout.split()[0]


def _wait_for(path: Path, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert path.exists(), f"{path} never appeared"
    time.sleep(0.3)  # written atomically, but let the writer finish its rename


def _finish(proc, display):
    _xdo(display, "key", "Escape")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "Traceback" not in err, err
    return json.loads(out), err


def test_window_pick_paint_undo_save(xdisplay, tmp_path):
    # the client look has no wind (pictures comparable); coverage placement honours noEffectDoodad
    proc, wid = _start(xdisplay, tmp_path, *CAMERA, "--overlay", "excluded", "--look", "client", "--placement", "coverage")
    try:
        time.sleep(4)
        shot = lambda n: tmp_path / f"wowgrass-shot-{n}.png"  # noqa: E731 (F12's names)
        # pick: a click of the pick tool on the ground
        _xdo(xdisplay, "mousemove", "--window", wid, "400", "520", "click", "1")
        time.sleep(1.5)
        # the exclusion brush: a stroke across the near ground; each picture with the pick tool on
        # (no brush circle) and the cursor in the same place
        _xdo(xdisplay, "key", "F12")
        _wait_for(shot(1))
        _xdo(xdisplay, "key", "F6")
        _xdo(xdisplay, "mousemove", "--window", wid, "300", "490")
        time.sleep(1.0)
        _xdo(xdisplay, "mousedown", "1")
        for x in (340, 380, 420, 460):
            _xdo(xdisplay, "mousemove", "--window", wid, str(x), "490")
            time.sleep(0.5)
        _xdo(xdisplay, "mouseup", "1")
        _xdo(xdisplay, "key", "F5")
        _xdo(xdisplay, "mousemove", "--window", wid, "400", "520")
        time.sleep(1.5)
        _xdo(xdisplay, "key", "F12")
        _wait_for(shot(2))
        _xdo(xdisplay, "key", "ctrl+z")  # undo the stroke
        time.sleep(1.5)
        _xdo(xdisplay, "key", "F12")
        _wait_for(shot(3))
        # again, then save (to the Changes panel's folder, workbench-out, in the working directory)
        _xdo(xdisplay, "key", "F6")
        _xdo(xdisplay, "mousemove", "--window", wid, "380", "490", "click", "1")
        time.sleep(1.5)
        _xdo(xdisplay, "key", "ctrl+s")
        time.sleep(2.0)
        _xdo(xdisplay, "key", "F1")
        time.sleep(1.0)
        _xdo(xdisplay, "key", "F12")
        _wait_for(shot(4))
    finally:
        if proc.poll() is None:
            res, err = _finish(proc, xdisplay)
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
    before, painted, undone = _png(shot(1)), _png(shot(2)), _png(shot(3))
    band = (slice(460, 540), slice(300, 460))  # where the stroke went (the panels are elsewhere)
    moved = (np.abs(painted[band] - before[band]).sum(-1) > 40).mean()
    back = (np.abs(undone[band] - before[band]).sum(-1) > 40).mean()
    assert moved > 0.02, moved  # the grass under the stroke went, the excluded overlay came
    assert back < moved / 3, (back, moved)  # undo brought the picture back
    help_shot = _png(shot(4))
    assert help_shot.shape == (SIZE[1], SIZE[0], 3)


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
    proc, wid = _start(xdisplay, tmp_path, str(adt), "--watch", "--camera", "300,150,80", "--target", "270,110,50")
    try:
        time.sleep(5)
        mask = np.zeros((256, 8, 8), bool)
        mask[:, 2:6, 2:6] = True
        new, _ = exclude_cells(raw, gp, mask)
        write_atomic(adt, new)
        deadline = time.monotonic() + 60
        time.sleep(3)
        _xdo(xdisplay, "key", "F12")
        _wait_for(tmp_path / "wowgrass-shot-1.png", timeout=max(deadline - time.monotonic(), 5))
    finally:
        if proc.poll() is None:
            res, err = _finish(proc, xdisplay)
    reloads = res["workbench"]["reloads"]
    assert reloads, (res["workbench"], err)
    assert [31, 31] in reloads[0]["tiles"]
    assert reloads[0]["drawn_ms"] is not None, reloads  # the tile was drawn again
    before, after = reloads[0]["grass_instance_counts"]["31,31"]
    assert before and after is not None and after < before, reloads  # from the new bytes: cells excluded
