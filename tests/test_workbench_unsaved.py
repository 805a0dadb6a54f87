"""The recovery file of unsaved edits (workbench/unsaved.py): written from a session, read back,
restored as one undoable step; a file changed on disk since is not restored; a damaged one is a
FormatError."""

from __future__ import annotations

import pytest

from wowgrass.errors import FormatError
from wowgrass.game.data import open_data
from wowgrass.grass.bake import default_data
from wowgrass.workbench.session import EditSession
from wowgrass.workbench.unsaved import find_recovery, read_recovery, restore, write_recovery


@pytest.fixture
def loose(tmp_path, monkeypatch):
    """The sample client's tile 31,31 as a loose layer over it (a file a session can be told changed)."""
    monkeypatch.setenv("WOWGRASS_CACHE", str(tmp_path / "cache"))
    root, map_name = default_data()
    folder = tmp_path / "project" / "World" / "Maps" / map_name
    folder.mkdir(parents=True)
    gp = f"World\\Maps\\{map_name}\\{map_name}_31_31.adt"
    with open_data(root) as d:
        (folder / f"{map_name}_31_31.adt").write_bytes(d.read(gp))
    return root, tmp_path / "project", map_name, gp


def _session(root, project, map_name):
    return EditSession(open_data(root, over=[project]), map_name, placement="coverage")


def test_recovery_round_trip_restores_the_edits_as_one_step(loose):
    root, project, map_name, gp = loose
    s = _session(root, project, map_name)
    x, y = 300.0, 150.0  # on tile 31,31
    assert s.tile_of(x, y) == (31, 31)
    s.exclude(x, y, 9)
    s.exclude(x + 10, y, 9)
    edited = s.tile_bytes((31, 31))
    path = write_recovery(s, reason="test")
    assert path is not None and find_recovery(s.data, map_name) == [path]
    rec = read_recovery(path)
    assert rec.files == {gp: edited} and rec.manifest["map"] == map_name and len(rec.manifest["history"]) == 2

    fresh = _session(root, project, map_name)
    assert fresh.tile_bytes((31, 31)) != edited
    change, notes = restore(fresh, rec)
    assert notes == [] and change is not None and (31, 31) in change.chunks
    assert fresh.tile_bytes((31, 31)) == edited and fresh.changed_tiles == [(31, 31)]
    assert len(fresh.history) == 1  # one step: undo takes all of it back
    fresh.undo()
    assert fresh.changed_tiles == []


def test_a_file_changed_on_disk_since_is_not_restored(loose):
    root, project, map_name, gp = loose
    s = _session(root, project, map_name)
    s.exclude(300.0, 150.0, 9)
    rec = read_recovery(write_recovery(s))
    tile = project / "World" / "Maps" / map_name / f"{map_name}_31_31.adt"
    raw = bytearray(tile.read_bytes())
    raw[-1] ^= 0xFF  # another editor saved it meanwhile
    tile.write_bytes(bytes(raw))
    fresh = _session(root, project, map_name)
    change, notes = restore(fresh, rec)
    assert change is None and len(notes) == 1 and "changed on disk" in notes[0]
    assert fresh.changed_tiles == []


def test_nothing_unsaved_writes_nothing_and_a_damaged_file_is_a_format_error(loose, tmp_path):
    root, project, map_name, _gp = loose
    assert write_recovery(_session(root, project, map_name)) is None
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(FormatError):
        read_recovery(bad)
