"""Several files written all or none (``fileio.write_files_atomic``), through both writers that use
it: the tile edits (``adt_edit.write_edited``, in place with backups and under -o DIR) and the new
effect set's tables (``effect_sets.write_tables``). A rename that fails in the middle must leave
every file with its old bytes, no temporary, no backup, no new folder, and raise OutputError."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from wowgrass.edit.adt_edit import write_edited
from wowgrass.edit.effect_sets import write_tables
from wowgrass.errors import OutputError
from wowgrass.fileio import write_files_atomic


def snapshot(root: Path) -> dict:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


def fail_nth(monkeypatch, n: int, name: str = "replace"):
    """os.replace (or os.rename) raises ENOSPC on its n-th call; returns the list of calls."""
    real = getattr(os, name)
    calls = []

    def wrapped(src, dst, *a, **k):
        calls.append((src, dst))
        if len(calls) == n:
            raise OSError(28, "No space left on device", str(dst))
        return real(src, dst, *a, **k)

    monkeypatch.setattr(os, name, wrapped)
    return calls


class LooseData:
    """The part of a loose GameData that write_edited --in-place uses."""

    def __init__(self, root: Path):
        self.root = root

    def locate(self, gp: str):
        p = self.root.joinpath(*gp.split("\\"))
        return (p, None) if p.exists() else None


TILES = [f"World\\Maps\\M\\M_{c}_1.adt" for c in range(3)]


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
def test_in_place_edit_of_three_tiles_rolls_back_a_failed_rename(tmp_path, monkeypatch, n):
    root = tmp_path / "Data"
    for k, gp in enumerate(TILES):
        p = root.joinpath(*gp.split("\\"))
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"old tile %d" % k)
    before = snapshot(root)
    calls = fail_nth(monkeypatch, n)
    # three backups, then three tiles: six renames; the n-th fails
    with pytest.raises(OutputError) as err:
        write_edited({gp: b"new tile %d" % k for k, gp in enumerate(TILES)}, in_place=True, data=LooseData(root))
    monkeypatch.undo()
    assert len(calls) >= n
    assert not isinstance(err.value, type(None)) and ".tmp" not in str(err.value)
    assert str(err.value).startswith("cannot write ") and "M_" in str(err.value)
    assert snapshot(root) == before          # every tile its old bytes; no .bak, no temporary


def test_in_place_edit_writes_all_and_keeps_backups(tmp_path):
    root = tmp_path / "Data"
    for k, gp in enumerate(TILES):
        p = root.joinpath(*gp.split("\\"))
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"old tile %d" % k)
    write_edited({gp: b"new tile %d" % k for k, gp in enumerate(TILES)}, in_place=True, data=LooseData(root))
    write_edited({gp: b"newer %d" % k for k, gp in enumerate(TILES)}, in_place=True, data=LooseData(root))
    folder = root / "World" / "Maps" / "M"
    assert sorted(p.name for p in folder.iterdir()) == sorted([f"M_{c}_1.adt" for c in range(3)]
                                                              + [f"M_{c}_1.adt.bak" for c in range(3)])
    assert (folder / "M_1_1.adt").read_bytes() == b"newer 1"
    assert (folder / "M_1_1.adt.bak").read_bytes() == b"old tile 1"     # the first input stays recoverable


@pytest.mark.parametrize("n", [2, 3])
def test_edit_under_output_folder_rolls_back(tmp_path, monkeypatch, n):
    out = tmp_path / "fix"
    out.mkdir()
    old = out / "World" / "Maps" / "M" / "M_0_1.adt"     # an earlier fix already there
    old.parent.mkdir(parents=True)
    old.write_bytes(b"earlier fix")
    before = snapshot(out)
    fail_nth(monkeypatch, n)
    with pytest.raises(OutputError):
        write_edited({gp: b"new" for gp in TILES}, out)
    monkeypatch.undo()
    assert snapshot(out) == before


def test_new_folders_are_removed_again(tmp_path, monkeypatch):
    fail_nth(monkeypatch, 2)
    with pytest.raises(OutputError):
        write_files_atomic({tmp_path / "a" / "x": b"1", tmp_path / "b" / "c" / "y": b"2"})
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_tables_in_place_roll_back_with_their_backups(tmp_path, monkeypatch, n):
    out = tmp_path / "o"
    folder = out / "DBFilesClient"
    folder.mkdir(parents=True)
    (folder / "GroundEffectTexture.dbc").write_bytes(b"old tex")
    (folder / "GroundEffectDoodad.dbc").write_bytes(b"old dood")
    inputs = [folder / "GroundEffectTexture.dbc", folder / "GroundEffectDoodad.dbc"]
    before = snapshot(out)
    fail_nth(monkeypatch, n)
    with pytest.raises(OutputError):
        write_tables(out, {"DBFilesClient\\GroundEffectTexture.dbc": b"new tex",
                           "DBFilesClient\\GroundEffectDoodad.dbc": b"new dood"}, in_place=True, inputs=inputs)
    monkeypatch.undo()
    assert snapshot(out) == before


def test_a_symlinked_input_comes_back_a_symlink(tmp_path, monkeypatch):
    real = tmp_path / "real.adt"
    real.write_bytes(b"shared bytes")
    a, b = tmp_path / "a.adt", tmp_path / "b.adt"
    a.symlink_to(real)
    b.write_bytes(b"b")
    fail_nth(monkeypatch, 2)
    with pytest.raises(OutputError):
        write_files_atomic({a: b"new a", b: b"new b"})
    monkeypatch.undo()
    assert a.is_symlink() and real.read_bytes() == b"shared bytes" and b.read_bytes() == b"b"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.adt", "b.adt", "real.adt"]


def test_roll_back_without_hard_links(tmp_path, monkeypatch):
    """A file system without hard links (vfat, some network mounts): the old bytes are copied aside."""
    files = {tmp_path / n: b"old " + n.encode() for n in ("a", "b", "c")}
    for p, raw in files.items():
        p.write_bytes(raw)

    def no_link(*a, **k):
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_link)
    fail_nth(monkeypatch, 3)
    with pytest.raises(OutputError):
        write_files_atomic({p: b"new" for p in files})
    monkeypatch.undo()
    assert {p: p.read_bytes() for p in files} == files
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b", "c"]


def fail_put_back(monkeypatch, fail_at: int, also_rename: bool = False, keep=()):
    """os.replace raises ENOSPC on its ``fail_at``-th call and EIO on every put-back of a file's old
    bytes (a replace from its ``.old.tmp`` second name); ``also_rename``: setting those bytes aside
    under another name (os.rename) fails too; ``keep``: files os.unlink cannot remove (EIO)."""
    real_replace, real_rename, real_unlink = os.replace, os.rename, os.unlink
    calls = []

    def replace(src, dst, *a, **k):
        calls.append((src, dst))
        if len(calls) == fail_at:
            raise OSError(28, "No space left on device", str(dst))
        if str(src).endswith(".old.tmp"):
            raise OSError(5, "Input/output error", str(dst))
        return real_replace(src, dst, *a, **k)

    def rename(src, dst, *a, **k):
        if also_rename and str(src).endswith(".old.tmp"):
            raise OSError(5, "Input/output error", str(dst))
        return real_rename(src, dst, *a, **k)

    def unlink(path, *a, **k):
        if Path(path) in keep:
            raise OSError(5, "Input/output error", str(path))
        return real_unlink(path, *a, **k)

    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(os, "rename", rename)
    monkeypatch.setattr(os, "unlink", unlink)


@pytest.mark.parametrize("also_rename", [False, True])
def test_a_put_back_that_fails_names_every_file_left_changed_and_its_old_bytes(tmp_path, monkeypatch, also_rename):
    import time

    from wowgrass.fileio import sweep_temporaries, write_atomic

    files = {tmp_path / n: b"old " + n.encode() for n in ("a", "b")}
    for p, raw in files.items():
        p.write_bytes(raw)
    new = tmp_path / "new"                      # did not exist before: left written
    plan = {tmp_path / "a": b"new a", new: b"new file", tmp_path / "b": b"new b", tmp_path / "c": b"new c"}
    fail_put_back(monkeypatch, 4, also_rename, keep={new})   # a, new and b replaced; c's rename fails
    with pytest.raises(OutputError) as err:
        write_files_atomic(plan)
    monkeypatch.undo()
    msg = str(err.value)
    assert msg.startswith(f"cannot write {tmp_path / 'c'}: no space left on the device")
    left = dict(err.value.left_changed)
    assert set(left) == {tmp_path / "a", tmp_path / "b", new} and left[new] is None
    for name in ("a", "b"):
        target, old = tmp_path / name, left[tmp_path / name]
        assert target.read_bytes() == b"new " + name.encode()         # left changed
        assert old.read_bytes() == files[target]                         # its old bytes, named
        assert f"{target} keeps the new bytes, its old bytes are in {old}" in msg
        assert old.name == (f".{name}.{os.getpid()}.old.tmp" if also_rename else f"{name}.old")
    assert f"{new} keeps the new bytes (it did not exist before)" in msg
    assert not (tmp_path / "c").exists() and new.read_bytes() == b"new file"
    # the next writes and sweeps (the writer long gone) leave the old bytes alone
    for old in (left[tmp_path / "a"], left[tmp_path / "b"]):
        os.utime(old, (time.time() - 86400, time.time() - 86400))
    write_atomic(tmp_path / "a", b"newer a")
    sweep_temporaries(tmp_path, older_than=0.0)
    assert left[tmp_path / "a"].read_bytes() == b"old a" and left[tmp_path / "b"].read_bytes() == b"old b"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp") and ".old." not in p.name]


def test_a_stuck_put_back_keeps_backups_lists_files_in_order_and_never_overwrites(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"old a")
    b.write_bytes(b"old b")
    (tmp_path / "a.old").write_bytes(b"someone's a.old")       # taken: the old bytes go to a.old.1
    fail_put_back(monkeypatch, 5)      # two backups, a and b replaced; c fails; a and b cannot go back
    with pytest.raises(OutputError) as err:
        write_files_atomic({a: b"new a", b: b"new b", tmp_path / "c": b"c"},
                           backups={a: tmp_path / "a.bak", b: tmp_path / "b.bak"})
    monkeypatch.undo()
    assert [t for t, _ in err.value.left_changed] == [a, b]                 # in the order written
    assert str(err.value).index(f"{a} keeps") < str(err.value).index(f"{b} keeps")
    assert dict(err.value.left_changed) == {a: tmp_path / "a.old.1", b: tmp_path / "b.old"}
    assert (tmp_path / "a.old").read_bytes() == b"someone's a.old"
    assert (tmp_path / "a.old.1").read_bytes() == b"old a" and (tmp_path / "b.old").read_bytes() == b"old b"
    # the backups this call made stay: a way back for files left changed
    assert (tmp_path / "a.bak").read_bytes() == b"old a" and (tmp_path / "b.bak").read_bytes() == b"old b"


def test_an_interrupt_with_a_stuck_put_back_goes_on_as_itself_naming_the_files(tmp_path, monkeypatch):
    a = tmp_path / "a"
    a.write_bytes(b"old a")
    real = os.replace
    calls = []

    def replace(src, dst, *x, **k):
        calls.append(src)
        if len(calls) == 2:
            raise KeyboardInterrupt
        if str(src).endswith(".old.tmp"):
            raise OSError(5, "Input/output error", str(dst))
        return real(src, dst, *x, **k)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(KeyboardInterrupt) as err:
        write_files_atomic({a: b"new a", tmp_path / "b": b"b"})
    monkeypatch.undo()
    assert err.value.left_changed == [(a, tmp_path / "a.old")] and a.read_bytes() == b"new a"
    notes = " ".join(getattr(err.value, "__notes__", []))
    assert not hasattr(err.value, "add_note") or f"{a} keeps the new bytes, its old bytes are in {tmp_path / 'a.old'}" in notes
