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
