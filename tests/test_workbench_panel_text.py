"""The workbench panels' text (issue 49, item 11): findings lines name their tile first, F1 lists
every key the view takes, a watcher's batch names files, never folders."""

from __future__ import annotations

from types import SimpleNamespace

from wowgrass.workbench.controller import changed_names
from wowgrass.workbench.findings import findings_of
from wowgrass.workbench.panels import keys_help


def test_findings_lines_begin_with_their_tile():
    """The Findings panel is 352 pixels wide and cuts a line there: the tile and chunk come first."""
    a = SimpleNamespace(
        textures=[{"path": "Tileset\\Sample\\AVeryLongTextureNameThatFillsThePanel_Grass01.blp",
                   "unassigned_chunks": [{"tile": [31, 32], "chunk": [3, 4]}]}],
        per_tile=[{"tile": [32, 31], "stale": 5, "excluded_grass": 7}], missing_rows=[], missing_models=[])
    lines = [f.text for f in findings_of(a)]
    assert lines[0].startswith("tile 31,32 chunk 3,4: ") and "no effect id" in lines[0], lines
    assert all(line.startswith("tile ") for line in lines), lines


def test_f1_lists_every_key_the_view_toggles():
    """Each toggle key of the window's controls (render/window.py) is named in F1's help."""
    import glfw

    from wowgrass.render.window import WindowControls

    controls = WindowControls.__new__(WindowControls)
    WindowControls.__init__(controls, SimpleNamespace(), glfw, None)
    names = {getattr(glfw, n): n[4:] for n in dir(glfw) if n.startswith("KEY_")}
    keys = " ".join(k for k, _what in keys_help()).split()
    missing = [names[k] for k in controls.toggle_keys if names[k] not in keys]
    assert not missing, missing


def test_a_watchers_batch_names_files_not_folders(tmp_path):
    folder = tmp_path / "DBFilesClient"
    folder.mkdir()
    table = folder / "GroundEffectTexture.dbc"
    table.write_bytes(b"x")
    gone = tmp_path / "WowgrassSample_31_31.adt"
    assert changed_names([folder, table]) == "GroundEffectTexture.dbc"
    assert changed_names([gone]) == "WowgrassSample_31_31.adt (removed)"


def test_an_edit_the_session_refuses_is_said_not_raised():
    """A typed texture no layer matches (the soak's window exited 2 on it mid-stroke), a set of
    unknown models: said in the Changes panel's messages, once a stroke, the frame loop goes on."""
    import threading

    from wowgrass.errors import UsageError
    from wowgrass.workbench.controller import Workbench
    from wowgrass.workbench.tools import ToolState

    class Session:
        def assign_texture(self, *a, **k):
            raise UsageError("no texture matches 'zz*'")

        def preview_set(self, *a, **k):
            raise UsageError("no model Nope01")

    bench = object.__new__(Workbench)
    bench.tools, bench.session, bench.lock = ToolState(tool="assign", texture="zz*"), Session(), threading.RLock()
    bench.messages, bench.ui_version, bench.log = [], 0, lambda s: None
    assert bench.apply_tool(1.0, 2.0) is None and bench.apply_tool(3.0, 4.0) is None
    assert bench.messages == ["assign: no texture matches 'zz*'"]
    bench.tools.set_models[0] = "Nope01"
    assert bench.preview_set() is None and bench.messages[-1] == "preview set: no model Nope01"
    bench.tools.scope = "map"
    assert bench.assign_scope() is None and bench.messages[-1] == "assign scope: no texture matches 'zz*'"
