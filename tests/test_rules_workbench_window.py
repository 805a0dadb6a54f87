"""The ground-effect rules in the view's window (issue 47 items 3 and 5), under a private Xvfb with
xdotool: a pick whose Cell panel names the rule that decided the cell, the rules overlay, and a
stroke of the "exclusion kept as a rule" tool that ends as a mask picture and a rule in the file.

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
CAMERA = ["--camera", "470,400,78", "--target", "430,360,50"]  # ground and grass below the panels
RULES = """\
version = 1

[[assign]]
name = "grass"
textures = ["SampleGrass"]
effect = 1001

[[exclude]]
name = "roads"
textures = ["SampleRoad*"]
share = 0.3
reason = "no grass on the road"

[[exclude]]
name = "water"
under = "liquid"

[[exclude]]
name = "steep"
slope_above = 30
reason = "too steep for grass"
"""
RULE_TOOL = (27, 458)  # the Tools panel's fifth choice, "exclusion kept as a rule" (the panel at 8,330)


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


def test_pick_names_the_rule_and_a_stroke_is_kept_as_a_rule(xdisplay, tmp_path):
    from wowgrass.edit.rules import load_rules
    from wowgrass.edit.rules_engine import prepare
    from wowgrass.edit.rules_explain import explain_cell
    from wowgrass.game.data import open_data
    from wowgrass.grass.bake import default_data

    rules = tmp_path / "rules.toml"
    rules.write_text(RULES)
    # each step waits for what it needs (a screenshot taken after the events before it, a line said)
    # instead of fixed sleeps: the workbench takes clicks and keys in order (workbench/input_gate.py)
    win = ViewWindow(xdisplay, tmp_path, ["--quit-after", "300", "--no-audit", "--json", *CAMERA, "--look", "client",
                                          "--rules", str(rules), "--overlay", "rules"], size=SIZE)
    try:
        # pick a cell of the ground between the panels: the Cell panel says why, with its rule
        win.click(380, 300)
        shot1 = win.shot()
        # the tool that keeps its strokes as rules, chosen in the Tools panel, and one stroke right of it
        win.click(*RULE_TOOL)
        win.move(330, 410)
        win.shot()
        win.xdo("mousedown", "1")
        win.shot()  # the button is down in a frame before the cursor moves on
        for x in (355, 380, 405, 430):
            win.move(x, 410)
            win.shot()  # a frame at each point of the stroke
        mark = win.mark()
        win.xdo("mouseup", "1")
        win.wait_line(r"kept as exclude rule 'kept stroke'", start=mark)
        win.key("F5")
        win.move(380, 300)
        shot2 = win.shot()
    finally:
        if win.proc.poll() is None:
            # the stroke's edits are unsaved: Esc asks first; D discards and quits
            mark = win.mark()
            win.key("Escape")
            win.wait_line(r"^quit: unsaved edits", start=mark)
            win.key("d")
        rc, out, err = win.finish(keys=())
    assert rc == 0 and "Traceback" not in err, err
    assert "quit: unsaved edits" in err, err  # Esc asked before quitting (issue 49 item 5)
    wb = json.loads(out)["workbench"]

    # the pick: the Cell panel names the rule governing the cell, as `effects why` finds it
    lines = wb["picked_lines"]
    p = wb["picked"]
    root, _map = default_data()
    with open_data(root) as data:
        plan = prepare(load_rules(rules), data)
        from wowgrass.edit.adt_edit import read_tile
        from wowgrass.game.maps import adt_game_path

        gp = adt_game_path(plan.map, *p["tile"])
        t = read_tile(data.read(gp), gp)
        idx = int(np.flatnonzero((t.index_xy[:, 0] == p["chunk"][0]) & (t.index_xy[:, 1] == p["chunk"][1]))[0])
        want = explain_cell(data, plan, tuple(p["tile"]), idx, tuple(p["cell"]))
    assert want["governed_by"] and f"governed by {want['governed_by']}" in lines, lines
    assert any(ln.startswith("why: ") for ln in lines), lines
    assert wb["overlays"] == ["rules"]
    assert [r.split(" (")[0] for r in wb["rules"]["rules"][:4]] == ['assign "grass"', 'exclude "roads"',
                                                                    'exclude "water"', 'exclude "steep"']

    # the stroke: kept as a rule (a picture beside the file, an [[exclude]] naming it)
    assert any(h.startswith("rule stroke") for h in wb["history"]), wb["history"]
    kept = [m for m in wb["messages"] if m.startswith("kept as exclude rule 'kept stroke'")]
    assert kept, wb["messages"]
    rs = load_rules(rules)
    rule = rs.rules[-1]
    assert (rule.kind, rule.name) == ("exclude", "kept stroke") and len(rs.rules) == 5
    from PIL import Image

    pic = np.asarray(Image.open(tmp_path / "masks" / "kept-stroke.png")) > 0
    assert pic.any() and f"{int(pic.sum())} cells" in kept[0]
    assert wb["rules"]["rules"][-1].startswith('exclude "kept stroke"')  # the window read the file again
    # the pictures: the Cell panel's place filled by the pick (the top right), the stroke's band changed
    first, second = _png(shot1), _png(shot2)
    assert first.shape == (SIZE[1], SIZE[0], 3)
    band = (slice(390, 430), slice(330, 430))
    assert (np.abs(second[band] - first[band]).sum(-1) > 40).mean() > 0.02
