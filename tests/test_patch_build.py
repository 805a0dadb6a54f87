"""`patch build` (wowgrass.edit.patch): a folder of changed files -> a patch MPQ the client loads,
read back through wowgrass's archive chain (the patch wins) and through StormLib (libstorm9)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

import _storm as S
import faults
from wowgrass.cli.main import cli
from wowgrass.edit.patch import build_patch, collect_files, name_kind
from wowgrass.errors import UsageError
from wowgrass.formats.mpq import MpqArchive, write_mpq_file
from wowgrass.game.data import open_data

STORM = S.load()
RNG = np.random.default_rng(34)
ADT = "World\\Maps\\Azeroth\\Azeroth_32_48.adt"
DBC = "DBFilesClient\\GroundEffectTexture.dbc"
CHANGED = {
    ADT: RNG.integers(0, 60, 70_000, dtype=np.uint8).tobytes(),           # several sectors
    DBC: b"WDBC" + RNG.integers(0, 256, 3000, dtype=np.uint8).tobytes(),
    "World\\NoDXT\\Detail\\New01.m2": b"MD20" + bytes(100),
    "empty.txt": b"",
}


def _tree(folder, files):
    for name, data in files.items():
        p = folder.joinpath(*name.split("\\"))
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return folder


def _client(root, build):
    """A small Data folder of ``build`` whose base archives hold old copies of the changed files."""
    data = root / "Data"
    data.mkdir(parents=True)
    old = {ADT: b"old adt", DBC: b"old dbc", "World\\Other.txt": b"untouched"}
    if build == "1.12":
        write_mpq_file(data / "terrain.MPQ", {ADT: old[ADT], "World\\Other.txt": old["World\\Other.txt"]},
                       listfile=False)
        write_mpq_file(data / "dbc.MPQ", {DBC: old[DBC]}, listfile=False)
        write_mpq_file(data / "patch.MPQ", {ADT: b"blizzard's patch"})
    else:
        write_mpq_file(data / "common.MPQ", {"World\\Other.txt": old["World\\Other.txt"]})
        write_mpq_file(data / "lichking.MPQ", {ADT: old[ADT]}, format_version=1)
        (data / "enUS").mkdir()
        write_mpq_file(data / "enUS" / "locale-enUS.MPQ", {DBC: old[DBC]}, format_version=1)
        write_mpq_file(data / "enUS" / "patch-enUS.MPQ", {DBC: b"blizzard's locale patch"}, format_version=1)
        write_mpq_file(data / "patch.MPQ", {ADT: b"blizzard's patch"}, format_version=1)
    return data


@pytest.mark.parametrize("build,where", [("1.12", "patch-2.MPQ"), ("3.3.5", "enUS/patch-enUS-2.MPQ"),
                                         ("2.4.3", "enUS/patch-enUS-2.MPQ")])
def test_patch_wins_in_the_archive_chain(tmp_path, build, where):
    data = _client(tmp_path / "client", build)
    if build == "2.4.3":   # expansion.MPQ is what says 2.4.3
        (data / "lichking.MPQ").rename(data / "expansion.MPQ")
    src = _tree(tmp_path / "fix", CHANGED)
    out = data / where
    result = build_patch(src, out, build=build)
    assert result.chain["mounted"] and result.chain["highest"] and not result.chain["hidden"]
    assert result.warnings == [] and result.place == "Data\\" + where.replace("/", "\\")
    with open_data(data) as d:
        assert d.build == build and d.archives[-1] == out
        for name, body in CHANGED.items():
            assert d.read(name) == body, name              # the patch's bytes, not the base archives'
        assert d.read("World\\Other.txt") == b"untouched"  # the rest still comes from below
    arc = MpqArchive.open(out)
    assert arc.header.format_version == 0                  # the v1 header every client reads
    assert sorted(arc.names(), key=str.lower) == sorted([*CHANGED, "(listfile)"], key=str.lower)
    arc.close()


def test_a_data_patch_under_locale_tables_is_hidden_and_said(tmp_path):
    data = _client(tmp_path / "client", "3.3.5")
    src = _tree(tmp_path / "fix", {DBC: b"new", ADT: b"new adt"})
    result = build_patch(src, data / "patch-2.MPQ")
    assert result.build is None and result.kind == "data"
    assert result.chain["hidden"] == {DBC: "patch-enUS.MPQ"}         # the ADT wins, the table does not
    assert any("hidden by patch-enUS.MPQ" in w for w in result.warnings)
    result = build_patch(src, data / "patch-3.MPQ", build="3.3.5")
    assert any("keeps its DBCs in the locale archives" in w for w in result.warnings)
    # written elsewhere, checked against the Data folder as if it lay there by its name
    result = build_patch(src, tmp_path / "patch-4.MPQ", data=data)
    assert (result.chain["rank"], result.chain["archive_count"]) == (7, 8)   # after patch-2, patch-3; below patch-enUS
    assert result.chain["hidden"] == {DBC: "patch-enUS.MPQ"}
    result = build_patch(src, tmp_path / "patch-enUS-4.MPQ", data=data)
    assert result.chain["highest"] and not result.chain["hidden"]
    assert not (data / "patch-4.MPQ").exists()               # nothing is put into the Data folder


@pytest.mark.storm
@pytest.mark.parametrize("build", ["1.12", "3.3.5"])
def test_stormlib_reads_every_file_of_the_patch(tmp_path, build):
    S.required()
    src = _tree(tmp_path / "fix", CHANGED)
    out = tmp_path / "patch-4.MPQ"
    r = CliRunner().invoke(cli, ["patch", "build", str(src), "-o", str(out), "--build", build, "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["file_count"] == len(CHANGED)
    got = STORM.read_archive(out, [*CHANGED, "(listfile)"], check_crc=True)
    for name, body in CHANGED.items():
        assert got[name] == body, name
    listed = [n for n in got["(listfile)"].decode().replace("\r\n", "\n").split("\n") if n]
    assert sorted(listed, key=str.lower) == sorted(CHANGED, key=str.lower)


@pytest.mark.parametrize("name,kind,loc", [("patch-4.MPQ", "data", None), ("Patch-z.mpq", "data", None),
                                           ("patch-enUS-4.MPQ", "locale", "enUS"), ("patch-10.MPQ", "unloaded", None),
                                           ("patch-é.MPQ", "unloaded", None), ("patch-enUS-é.MPQ", "unloaded", None),
                                           ("mypatch.MPQ", "unloaded", None), ("patch.MPQ", "unloaded", None)])
def test_names_the_client_loads(name, kind, loc):
    assert name_kind(name) == (kind, loc)


def test_cli_advice_refusals_and_replacing(tmp_path):
    src = _tree(tmp_path / "fix", {ADT: b"x" * 5000})
    out = tmp_path / "patch-10.MPQ"
    r = CliRunner().invoke(cli, ["patch", "build", str(src), "-o", str(out), "--build", "1.12"])
    assert r.exit_code == 0 and "does not load patch-10.MPQ" in r.output and "Data\\patch-N.MPQ" in r.output
    _tree(src, {ADT: b"y" * 5000})   # an existing archive is replaced, as every output (docs/cli.md), and said
    r = CliRunner().invoke(cli, ["patch", "build", str(src), "-o", str(out)])
    assert r.exit_code == 0 and f"{out} exists: replacing it" in r.stderr
    assert MpqArchive.open(out).read(ADT) == b"y" * 5000
    r = CliRunner().invoke(cli, ["patch", "build", str(src), "-o", str(out), "--force", "-q"])   # the old flag
    assert r.exit_code == 0 and r.stderr == ""
    for args, message in ((["-o", str(src / "patch-2.MPQ")], "inside"),
                          (["-o", str(tmp_path / "p.zip")], "ends in .MPQ"),
                          (["-o", str(tmp_path / "patch-2.MPQ"), "--build", "1.12", "--locale", "enUS"], "1.12"),
                          (["-o", str(tmp_path / "nope" / "patch-2.MPQ")], "does not exist")):
        r = CliRunner().invoke(cli, ["patch", "build", str(src), *args])
        assert r.exit_code == 2 and message in r.output and "Traceback" not in r.output, (args, r.output)
    (tmp_path / "empty").mkdir()
    r = CliRunner().invoke(cli, ["patch", "build", str(tmp_path / "empty"), "-o", str(tmp_path / "patch-3.MPQ")])
    assert r.exit_code == 2 and "no files" in r.output


def test_skips_hidden_files_temporaries_and_backups(tmp_path):
    src = _tree(tmp_path / "fix", {ADT: b"a", ADT + ".bak": b"b", "World\\.x.adt.123.ab.tmp": b"c",
                                   ".DS_Store": b"d", "old.MPQ": b"e"})
    files, skipped = collect_files(src)
    assert list(files) == [ADT]
    assert len(skipped) == 4
    (src / "World" / "maps").mkdir()
    (src / "World" / "maps" / "x.adt").write_bytes(b"1")
    (src / "World" / "Maps" / "x.adt").write_bytes(b"2")
    with pytest.raises(UsageError, match="same game path"):
        collect_files(src)


@pytest.mark.parametrize("errno", ["ENOSPC", "EROFS", "EACCES"])
def test_full_or_read_only_output_is_an_error_and_leaves_nothing(tmp_path, errno):
    src = _tree(tmp_path / "fix", CHANGED)
    out_dir = tmp_path / "Data"
    out_dir.mkdir()
    with faults.failing_folder(out_dir, errno):
        r = CliRunner().invoke(cli, ["patch", "build", str(src), "-o", str(out_dir / "patch-4.MPQ")])
    assert r.exit_code == 2 and r.output.startswith("error: ") and "Traceback" not in r.output
    assert faults.tree(out_dir) == []


def test_archive_order_places_an_extra_archive_by_its_name(tmp_path):
    from wowgrass.game.data import archive_order

    data = _client(tmp_path / "client", "3.3.5")
    write_mpq_file(data / "patch-3.MPQ", {"a": b"1"})
    mine = write_mpq_file(tmp_path / "patch-2.MPQ", {"a": b"2"})
    names = [p.name for p in archive_order(data, "3.3.5", "enUS", extra={"patch-2.MPQ": mine})]
    assert names == ["common.MPQ", "lichking.MPQ", "locale-enUS.MPQ", "patch.MPQ", "patch-2.MPQ", "patch-3.MPQ",
                     "patch-enUS.MPQ"]
    other = write_mpq_file(tmp_path / "x" / "patch-3.MPQ", {"a": b"3"})   # same name: replaces the one there
    order = archive_order(data, "3.3.5", "enUS", extra={"enUS/patch-enUS-2.MPQ": mine, "patch-3.MPQ": other})
    assert order[-1] == mine and other in order and data / "patch-3.MPQ" not in order
    assert archive_order(data, "3.3.5", "enUS", extra={"deDE/patch-deDE-2.MPQ": mine}) == archive_order(
        data, "3.3.5", "enUS")                                            # another locale's folder: not mounted


def test_a_bad_data_folder_leaves_no_archive(tmp_path):
    """Issue 42.6: the chain of --data is opened before the archive is written."""
    src = _tree(tmp_path / "fix", {ADT: b"x"})
    bad = tmp_path / "client"
    bad.mkdir()
    (bad / "common.MPQ").write_bytes(b"\0" * 4096)            # no MPQ header anywhere
    out = tmp_path / "patch-4.MPQ"
    r = CliRunner().invoke(cli, ["patch", "build", str(src), "-o", str(out), "--data", str(bad)])
    assert r.exit_code == 2 and "common.MPQ" in r.output and "Traceback" not in r.output
    assert not out.exists() and list(tmp_path.glob(".patch-4.MPQ*")) == []


def test_a_fifo_in_the_folder_is_skipped_with_a_warning(tmp_path):
    """Reading a FIFO waits for a writer for ever: only regular files are read."""
    src = _tree(tmp_path / "fix", {ADT: b"x"})
    os.mkfifo(src / "World" / "pipe.adt")
    out = tmp_path / "patch-4.MPQ"
    proc = subprocess.run([sys.executable, "-m", "wowgrass", "patch", "build", str(src), "-o", str(out)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "warning: skipped World\\pipe.adt (not a regular file)" in proc.stderr
    assert MpqArchive.open(out).read(ADT) == b"x"


def test_a_backslash_in_a_file_name_is_the_same_game_path_not_a_case_difference(tmp_path):
    src = tmp_path / "fix"
    (src / "a").mkdir(parents=True)
    (src / "a" / "b.txt").write_bytes(b"1")
    (src / "a\\b.txt").write_bytes(b"2")
    with pytest.raises(UsageError, match=r"same game path a\\b.txt \(a \\ in a file name separates folders") as e:
        collect_files(src)
    assert "case" not in str(e.value)


def test_a_non_ascii_patch_name_is_said_not_to_load(tmp_path):
    src = _tree(tmp_path / "fix", {ADT: b"x"})
    r = CliRunner().invoke(cli, ["patch", "build", str(src), "-o", str(tmp_path / "patch-é.MPQ"), "--build", "1.12"])
    assert r.exit_code == 0 and "does not load patch-é.MPQ" in r.output


def test_default_patch_name_ranks_above_the_clients_patches():
    """The window's Build patch default (edit.patch.default_patch_name): one rank above the
    highest patch of the data's client, a locale patch for 2.4.3/3.3.5, a Data patch for 1.12."""
    from types import SimpleNamespace

    from wowgrass.edit.patch import default_patch_name

    def data(*names, locale="enUS"):
        return SimpleNamespace(root="Data", archives=[f"Data/{n}" for n in names], locale=locale)

    assert default_patch_name(data("common.MPQ", "patch-enUS.MPQ"), "3.3.5") == "patch-enUS-2.MPQ"
    assert default_patch_name(data("patch-enUS-2.MPQ", "patch-enUS-3.MPQ", "patch-4.MPQ"), "3.3.5") == "patch-enUS-4.MPQ"
    assert default_patch_name(data("patch-deDE-9.MPQ", locale="deDE"), "2.4.3") == "patch-deDE-a.MPQ"
    assert default_patch_name(data("patch.MPQ", "patch-2.MPQ", "patch-3.MPQ", locale=None), "1.12") == "patch-4.MPQ"
    assert default_patch_name(data(locale=None), "3.3.5") == "patch-enUS-2.MPQ"   # loose data: enUS
