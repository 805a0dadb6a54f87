"""``wowgrass mpq`` commands through click's CliRunner."""

from __future__ import annotations

import hashlib
import json

import pytest
from click.testing import CliRunner

from wowgrass.cli.main import cli
from wowgrass.cli.mpq import safe_target
from wowgrass.formats.mpq import write_mpq_file

FILES = {
    "DBFilesClient\\GroundEffectTexture.dbc": b"WDBC" + bytes(100),
    "World\\Maps\\Test\\Test_1_2.adt": b"adt" * 3000,
    "readme.txt": b"hello\n",
}


@pytest.fixture
def archive(tmp_path):
    return write_mpq_file(tmp_path / "test.MPQ", FILES, format_version=1)


@pytest.fixture
def data_dir(tmp_path):
    d = tmp_path / "Data"
    write_mpq_file(d / "common.MPQ", FILES)
    write_mpq_file(d / "lichking.MPQ", {"readme.txt": b"lichking\n"})
    write_mpq_file(d / "patch.MPQ", [("World\\Maps\\Test\\Test_1_2.adt", b"", {"delete": True})])
    return d


def run(*args, **kw):
    return CliRunner().invoke(cli, ["mpq", *map(str, args)], catch_exceptions=False, **kw)


@pytest.mark.parametrize("sub", [[], ["info"], ["ls"], ["extract"], ["cat"]])
def test_help(sub):
    r = run(*sub, "--help")
    assert r.exit_code == 0 and "Usage" in r.output


def test_info(archive):
    r = run("info", archive)
    assert r.exit_code == 0
    assert "format_version       1" in r.output and "sector_size          4096" in r.output
    j = json.loads(run("info", archive, "--json").stdout)
    assert j["file_count"] == 4 and j["header_offset"] == 0 and j["user_data_offset"] is None
    assert j["hash_table_size"] == 16 and j["block_table_size"] == 4 and j["listfile"] is True


def test_info_data_lists_archives_in_order(data_dir):
    r = run("info", "--data", data_dir)
    assert r.exit_code == 0
    assert r.output.index("common.MPQ") < r.output.index("lichking.MPQ") < r.output.index("patch.MPQ")
    j = json.loads(run("info", "--data", data_dir, "--json").stdout)
    assert j["build"] == "3.3.5"
    assert [a["file"] for a in j["archives"]] == ["common.MPQ", "lichking.MPQ", "patch.MPQ"]
    assert j["archives"][2]["delete_marker_count"] == 1


def test_ls(archive):
    r = run("ls", archive)
    assert r.exit_code == 0
    assert "World\\Maps\\Test\\Test_1_2.adt" in r.output and "9000" in r.output
    rows = json.loads(run("ls", archive, "--json").stdout)
    by = {row["name"]: row for row in rows}
    assert by["readme.txt"]["size"] == 6 and by["readme.txt"]["locale"] == 0
    assert "COMPRESS" in by["World\\Maps\\Test\\Test_1_2.adt"]["flag_names"]
    assert by["World\\Maps\\Test\\Test_1_2.adt"]["packed_size"] < 9000
    only = json.loads(run("ls", archive, "*.DBC", "--json").stdout)
    assert [row["name"] for row in only] == ["DBFilesClient\\GroundEffectTexture.dbc"]


def test_ls_unnamed_entries(tmp_path):
    path = write_mpq_file(tmp_path / "nolist.mpq", {"a": b"1", "b": b"22"}, listfile=False)
    r = run("ls", path)
    assert "<unnamed #0>" in r.output and "<unnamed #1>" in r.output
    rows = json.loads(run("ls", path, "--json").stdout)
    assert sorted((row["name"], row["size"]) for row in rows) == [(None, 1), (None, 2)]


def test_ls_data_chain(data_dir):
    rows = json.loads(run("ls", "--data", data_dir, "--json").stdout)
    by = {row["name"]: row for row in rows}
    assert by["readme.txt"]["archive"] == "lichking.MPQ" and by["readme.txt"]["size"] == 9
    assert "World\\Maps\\Test\\Test_1_2.adt" not in by          # deleted by patch.MPQ


def test_cat(archive, data_dir):
    r = run("cat", archive, "readme.txt")
    assert r.exit_code == 0 and r.stdout_bytes == b"hello\n"
    assert run("cat", archive, "dbfilesclient/groundeffecttexture.dbc").stdout_bytes == FILES[
        "DBFilesClient\\GroundEffectTexture.dbc"]
    assert run("cat", "--data", data_dir, "README.TXT").stdout_bytes == b"lichking\n"


def test_extract_all_and_globs(archive, tmp_path):
    out = tmp_path / "out"
    r = run("extract", archive, "-o", out)
    assert r.exit_code == 0
    for name, data in FILES.items():
        assert (out / name.replace("\\", "/")).read_bytes() == data
    out2 = tmp_path / "out2"
    j = json.loads(run("extract", archive, "World/*", "readme.txt", "-o", out2, "--json").stdout)
    assert sorted(f["name"] for f in j["files"]) == ["World\\Maps\\Test\\Test_1_2.adt", "readme.txt"]
    assert not (out2 / "DBFilesClient").exists()


def test_extract_data_chain(data_dir, tmp_path):
    out = tmp_path / "x"
    r = run("extract", "--data", data_dir, "-o", out)
    assert r.exit_code == 0
    assert (out / "readme.txt").read_bytes() == b"lichking\n"
    assert not (out / "World").exists()


def test_extract_never_escapes_the_output_folder(tmp_path):
    evil = write_mpq_file(tmp_path / "evil.mpq", {
        "..\\..\\escaped.txt": b"a", "/abs/path.txt": b"b", "C:\\Windows\\x.txt": b"c",
        "ok\\..\\..\\y.txt": b"d", "..": b"e",
    })
    out = tmp_path / "deep" / "out"
    r = run("extract", evil, "-o", out, "--json")
    assert r.exit_code == 0
    written = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert written == ["(listfile)", "Windows/x.txt", "abs/path.txt", "escaped.txt", "ok/y.txt"]
    assert not (tmp_path / "escaped.txt").exists() and not (tmp_path / "deep" / "escaped.txt").exists()
    assert json.loads(r.stdout)["skipped"] == [".."]


def test_safe_target_refuses_symlink_escape(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "link").symlink_to(tmp_path)
    assert safe_target(out, "link\\x.txt") is None
    assert safe_target(out, "a/b.txt") == out / "a" / "b.txt"


@pytest.mark.parametrize("args", [
    ["info", "{missing}"],
    ["ls", "{bad}"],
    ["cat", "{archive}", "nope.txt"],
    ["extract", "{archive}", "nope.txt", "-o", "{tmp}"],
    ["ls"],
    ["cat", "{archive}"],
    ["info", "{archive}", "--data", "{tmp}"],
])
def test_errors_exit_2_without_traceback(args, archive, tmp_path):
    bad = tmp_path / "bad.mpq"
    bad.write_bytes(b"MPQ\x1a" + bytes(60))
    fmt = {"missing": tmp_path / "missing.mpq", "bad": bad, "archive": archive, "tmp": tmp_path}
    r = CliRunner().invoke(cli, ["mpq", *[a.format(**fmt) for a in args]])
    assert r.exit_code == 2, r.output
    assert "error:" in r.output and "Traceback" not in r.output


@pytest.mark.realdata
def test_cli_real_archives(realdata, tmp_path):
    mpq_dir = realdata / "mpq"
    r = run("cat", mpq_dir / "vanilla-standard.mpq", "fixture.txt")
    assert r.stdout_bytes == b"fixture-text\n"
    j = json.loads(run("info", mpq_dir / "test.SC2Replay", "--json").stdout)
    assert j["header_offset"] == 1024 and j["user_data_offset"] == 0 and j["format_version"] == 1
    out = tmp_path / "w3x"
    assert run("extract", mpq_dir / "normalMap.w3x", "-o", out).exit_code == 0
    got = hashlib.md5((out / "war3mapImported" / "tcBox.mdx").read_bytes()).hexdigest()
    assert got == "61fa6f972bce7ae27c37f6e1ec0059cb"
    assert len([p for p in out.rglob("*") if p.is_file()]) == 21
    rows = json.loads(run("ls", mpq_dir / "size.mpq", "--json").stdout)
    assert {r["name"]: r["size"] for r in rows}["fixture-128kb.txt"] == 131072
