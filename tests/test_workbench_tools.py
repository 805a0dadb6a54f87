"""Tools as a registry (issue 48.1): adding a tool is one class; the keys, the Tools panel's list,
F1's help and the controller find it there."""

from __future__ import annotations

from types import SimpleNamespace

import pytest


@pytest.fixture()
def new_tool():
    from wowgrass.workbench.session import Change
    from wowgrass.workbench.tools import TOOLS, Tool

    calls = []

    class StampTool(Tool):  # the whole of a new tool: one class
        name, key, label, help, kind = "stamp", "F9", "stamp brush", "stamp", "brush"

        def apply(self, session, at, state):
            calls.append((session, at, state.radius))
            return Change(f"stamp at {at}")

    yield StampTool, calls
    TOOLS.pop("stamp", None)


def test_a_new_tool_class_is_in_the_keys_the_panel_and_the_help(new_tool):
    from wowgrass.workbench.panels import keys_help
    from wowgrass.workbench.tools import TOOLS, tool_choices, tool_keys

    cls, _calls = new_tool
    assert isinstance(TOOLS["stamp"], cls)
    assert tool_keys()["F9"] == "stamp" and tool_keys()["F5"] == "pick"
    assert ("stamp", "F9 stamp brush") in tool_choices()
    assert [n for n, _l in tool_choices()][:4] == ["pick", "exclude", "mapping", "assign"]
    rows = dict(keys_help())
    tools_row = next(k for k in rows if k.startswith("F5"))
    assert tools_row.split() == ["F5", "F6", "F7", "F8", "F9"] and rows[tools_row].endswith(", stamp")


def test_the_controller_takes_the_new_tool_by_its_key_and_paints_with_it(new_tool):
    from wowgrass.workbench.controller import Workbench

    _cls, calls = new_tool
    glfw = SimpleNamespace(PRESS=1, RELEASE=0, MOD_CONTROL=2, MOD_SHIFT=1, MOUSE_BUTTON_LEFT=0,
                           **{f"KEY_F{i}": 290 + i for i in range(1, 13)},
                           **{f"KEY_{k}": ord(k) for k in "1234567ZYS"})
    session = SimpleNamespace(subscribe=lambda fn, **kw: None, unsubscribe=lambda fn: None)
    scene = SimpleNamespace(tiles={}, terrain=SimpleNamespace(cells=SimpleNamespace(mask=0, brush=(0,) * 4,
                                                                                    pick=(0,) * 4,
                                                                                    look=lambda **kw: None)),
                            on_resident=[], keep_grass=False)
    bench = Workbench(session, scene, audit=False, panels=False)
    try:
        bench.controls = SimpleNamespace(glfw=glfw)
        assert bench.on_key(glfw.KEY_F9, 0, glfw.PRESS, 0) and bench.tools.tool == "stamp"
        assert bench.tools.brush()
        bench.tools.radius = 4.0
        bench.apply_tool(10.0, 20.0)
        assert calls and calls[-1][1:] == ((10.0, 20.0), 4.0) and calls[-1][0] is session
        assert bench.on_key(glfw.KEY_F5, 0, glfw.PRESS, 0) and bench.tools.tool == "pick" and not bench.tools.brush()
    finally:
        bench.close()


def test_a_key_two_tools_claim_is_refused(new_tool):
    from wowgrass.workbench.tools import Tool

    with pytest.raises(ValueError, match="F9 is taken"):
        class Other(Tool):  # noqa: F841
            name, key = "other", "F9"


def test_an_open_workbench_shortens_the_gil_switch_interval_and_close_gives_it_back():
    """While the workbench is open a pick waits at most GIL_SWITCH_S for the GIL (the grass thread
    and the hand-overs run Python beside the frame's thread); closing it puts the interpreter's back."""
    import sys

    from wowgrass.workbench.controller import GIL_SWITCH_S, Workbench

    session = SimpleNamespace(subscribe=lambda fn, **kw: None, unsubscribe=lambda fn: None)
    scene = SimpleNamespace(tiles={}, terrain=SimpleNamespace(cells=SimpleNamespace(mask=0, brush=(0,) * 4,
                                                                                    pick=(0,) * 4,
                                                                                    look=lambda **kw: None)),
                            on_resident=[], keep_grass=False)
    before = sys.getswitchinterval()
    assert GIL_SWITCH_S <= 0.001 < before
    for asked, want in ((None, GIL_SWITCH_S), (0.002, 0.002), (0, before)):
        kw = {} if asked is None else {"switch_interval": asked}
        bench = Workbench(session, scene, audit=False, panels=False, **kw)
        try:
            assert sys.getswitchinterval() == pytest.approx(want)
        finally:
            bench.close()
        assert sys.getswitchinterval() == pytest.approx(before)
