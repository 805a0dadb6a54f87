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
