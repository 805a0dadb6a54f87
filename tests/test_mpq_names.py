"""Issue 33 item 4: ``mpq extract`` names what the client would name (game/name_finder.py) in archives
without a (listfile), says how many entries stayed unnamed (text and --json), and with --unnamed
writes those as File%08X.ext, as MPQ editors do."""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from wowgrass.cli.main import cli
from wowgrass.formats.mpq import MpqArchive, write_mpq
from wowgrass.game.name_finder import find_names, guess_extension, map_names

sys.path.insert(0, str(Path(__file__).parent))


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture(scope="module")
def world112(tmp_path_factory):
    """A 1x1 1.12 sample world: its base archives have no (listfile), as a 1.12 client's."""
    from wowgrass.samples import build_sample_world

    root = tmp_path_factory.mktemp("names112")
    return build_sample_world(root / "w", build="1.12", tiles=(1, 1))


def test_a_listfile_less_world_is_extracted_whole(world112, tmp_path):
    from wowgrass.game.data import open_data
    from wowgrass.samples import sample_world

    data = open_data(world112)
    unnamed = sum(1 for p in data.archives for e in data.archive(p).entries() if e.name is None)
    data.close()
    assert unnamed > 30                                    # the reproduction: most entries have no name
    r = run("mpq", "extract", "--data", world112, "-o", tmp_path / "x", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["unnamed"] == 0 and d["named_by_reference_count"] >= unnamed and not d["failed"]
    got = {f["name"].upper() for f in d["files"]}
    want = {n for files in sample_world.world_files("1.12", tiles=(1, 1)).values() for n in files}
    assert {n.upper() for n in want} <= got, sorted(n for n in want if n.upper() not in got)[:5]
    x = tmp_path / "x"
    assert (x / "World" / "Maps" / "WowgrassSample" / "WowgrassSample_32_32.adt").read_bytes()[:4] == b"REVM"
    # and the text output says nothing is left without a name
    r = run("mpq", "extract", "--data", world112, "-o", tmp_path / "y")
    assert r.exit_code == 0 and "no name" not in r.output and f"extracted {len(d['files'])} files" in r.output


def _sc_map(tmp_path):
    from test_mpq_storm import protected_starcraft_map

    data, files = protected_starcraft_map()
    path = tmp_path / "protected.scx"
    path.write_bytes(data)
    return path, files


def test_unnamed_entries_are_counted_and_extracted_on_request(tmp_path):
    path, files = _sc_map(tmp_path)
    r = run("mpq", "extract", path, "-o", tmp_path / "a")
    assert r.exit_code == 0, r.output
    assert "1 entry has no name" in r.output and "--unnamed" in r.output and "extracted 1 file " in r.output
    assert (tmp_path / "a" / "staredit" / "scenario.chk").read_bytes() == files["staredit\\scenario.chk"]
    r = run("mpq", "extract", path, "-o", tmp_path / "b", "--json")
    d = json.loads(r.stdout)
    assert d["unnamed"] == 1 and not d["unnamed_extracted"] and [f["name"] for f in d["files"]] == ["staredit\\scenario.chk"]
    r = run("mpq", "extract", path, "-o", tmp_path / "c", "--unnamed", "--json")
    d = json.loads(r.stdout)
    assert r.exit_code == 0 and d["unnamed"] == 1 and d["unnamed_extracted"]
    wav = [f for f in d["files"] if f.get("unnamed")]
    with MpqArchive.open(path) as a:
        block = a.lookup("staredit\\wav\\intro.wav").block_index
    assert [f["name"] for f in wav] == [f"File{block:08X}.wav"]
    assert (tmp_path / "c" / f"File{block:08X}.wav").read_bytes() == files["staredit\\wav\\intro.wav"]


def test_unnamed_under_a_data_folder_go_under_their_archive(tmp_path):
    data = tmp_path / "Data"
    data.mkdir()
    (data / "common.MPQ").write_bytes(write_mpq({"Sound\\x.wav": b"RIFF" + bytes(100),
                                                 "DBFilesClient\\Map.dbc": _map_dbc(["Tiny"])}, listfile=False))
    r = run("mpq", "extract", "--data", data, "-o", tmp_path / "o", "--unnamed", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    names = sorted(f["name"] for f in d["files"])
    assert names[0] == "DBFilesClient\\Map.dbc" and names[1].startswith("common.MPQ\\File") and names[1].endswith(".wav")


def _map_dbc(dirs) -> bytes:
    from dbc_builders import dbc_bytes, string_block

    strings, offs = string_block(dirs)
    return dbc_bytes([[i + 1, offs[i]] for i in range(len(dirs))], strings)


def test_name_finder_follows_map_dbc_to_the_tiles():
    adt = b"REVM" + struct.pack("<I", 4) + struct.pack("<I", 18) + b"XETM" + struct.pack("<I", 11) + b"a\\b\\c.blp\0x"
    files = {"DBFilesClient\\Map.dbc": _map_dbc(["Tiny"]), "World\\Maps\\Tiny\\Tiny_10_20.adt": adt,
             "a\\b\\c.blp": b"BLP2", "a\\b\\c_s.blp": b"BLP2"}
    a = MpqArchive.from_bytes(write_mpq(files, listfile=False))
    assert a.names() == []
    found = find_names([a], a.read)
    assert sorted(found) == sorted(files) and sorted(a.names()) == sorted(files)
    assert "World\\Maps\\Tiny\\Tiny_63_63.adt" in map_names("Tiny") and len(map_names("Tiny")) == 2 + 64 * 64


@pytest.mark.parametrize(("head", "ext"), [
    (b"REVM\x04\x00\x00\x00\x12\x00\x00\x00RDHM", "adt"), (b"REVM\x04\x00\x00\x00\x12\x00\x00\x00DHPM", "wdt"),
    (b"REVM\x04\x00\x00\x00\x12\x00\x00\x00FOAM", "wdl"), (b"REVM\x04\x00\x00\x00\x11\x00\x00\x00DHOM", "wmo"),
    (b"WDBC\x00", "dbc"), (b"MD20\x08\x01", "m2"), (b"BLP2\x01", "blp"), (b"SKIN", "skin"), (b"RIFF....WAVE", "wav"),
    (b"hello world\r\n", "txt"), (b"\x00\x01\x02", "xxx")])
def test_extension_from_the_magic(head, ext):
    assert guess_extension(head) == ext


def test_a_damaged_table_is_a_warning_and_other_errors_are_not_swallowed(tmp_path, monkeypatch, caplog):
    """Issue 42.17: the finder's errors were caught (every Exception) and never shown."""
    import logging

    from wowgrass.formats.mpq import MpqArchive, write_mpq
    from wowgrass.game import name_finder

    raw = write_mpq({"DBFilesClient\\Map.dbc": b"WDBC" + b"\xff" * 12, "x.txt": b"x"}, listfile=False)
    arc = MpqArchive.from_bytes(raw, "damaged.mpq")
    with caplog.at_level(logging.WARNING, logger="wowgrass"):
        assert find_names([arc], arc.read) == ["DBFilesClient\\Map.dbc"]
    (rec,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert rec.getMessage().startswith("DBFilesClient\\Map.dbc names no other files: ")

    def broken(*a, **k):
        raise RuntimeError("a bug, not a damaged file")

    monkeypatch.setattr(name_finder, "references", broken)
    arc = MpqArchive.from_bytes(raw, "damaged.mpq")
    with pytest.raises(RuntimeError, match="a bug"):
        find_names([arc], arc.read)
