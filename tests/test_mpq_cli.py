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
    rows = json.loads(run("ls", archive, "--json").stdout)["files"]
    by = {row["name"]: row for row in rows}
    assert by["readme.txt"]["size"] == 6 and by["readme.txt"]["locale"] == 0
    assert "COMPRESS" in by["World\\Maps\\Test\\Test_1_2.adt"]["flag_names"]
    assert by["World\\Maps\\Test\\Test_1_2.adt"]["packed_size"] < 9000
    only = json.loads(run("ls", archive, "*.DBC", "--json").stdout)["files"]
    assert [row["name"] for row in only] == ["DBFilesClient\\GroundEffectTexture.dbc"]


def test_ls_unnamed_entries(tmp_path):
    path = write_mpq_file(tmp_path / "nolist.mpq", {"a": b"1", "b": b"22"}, listfile=False)
    r = run("ls", path)
    assert "<unnamed #0>" in r.output and "<unnamed #1>" in r.output
    rows = json.loads(run("ls", path, "--json").stdout)["files"]
    assert sorted((row["name"], row["size"]) for row in rows) == [(None, 1), (None, 2)]


def test_ls_data_chain(data_dir):
    rows = json.loads(run("ls", "--data", data_dir, "--json").stdout)["files"]
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
    rows = json.loads(run("ls", mpq_dir / "size.mpq", "--json").stdout)["files"]
    assert {r["name"]: r["size"] for r in rows}["fixture-128kb.txt"] == 131072


# ----------------------------------------------------------------------------- real folders (issue 25)

def _cli(*args):
    """CliRunner with exceptions caught, as a user's shell sees the command (exit status, streams)."""
    return CliRunner().invoke(cli, ["mpq", *map(str, args)])


def _war3_map(archive: bytes) -> bytes:
    return b"HM3W" + bytes(508) + archive      # a Warcraft III map: the MPQ at the next 512-byte boundary


@pytest.mark.parametrize("keep", ["before the hash table", "before the block table"])
def test_truncated_protected_map_is_an_error_with_both_sizes(tmp_path, keep):
    data = _war3_map(write_mpq_file(tmp_path / "x.mpq", FILES).read_bytes())
    from wowgrass.formats.mpq import MpqArchive

    h = MpqArchive.from_bytes(data, "m.w3x").header
    cut = h.offset + (h.hash_table_pos - 100 if keep == "before the hash table" else h.block_table_pos - 8)
    path = tmp_path / "cut.w3x"
    path.write_bytes(data[:cut])
    for args in (["info", path], ["ls", path], ["extract", path, "-o", tmp_path / "o"]):
        r = _cli(*args)
        assert r.exit_code == 2, (args, r.output)
        assert "past the end" in r.stderr and f"{cut:,} bytes" in r.stderr and f"{len(data):,}" in r.stderr, r.stderr
        assert "Traceback" not in r.output
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


@pytest.mark.realdata
@pytest.mark.parametrize("keep", [30000, 44000])
def test_truncated_real_map_is_an_error(realdata, tmp_path, keep):
    whole = (realdata / "mpq" / "normalMap.w3x").read_bytes()
    assert len(whole) == 45170
    path = tmp_path / "cut.w3x"
    path.write_bytes(whole[:keep])
    for args in (["info", path], ["ls", path], ["extract", path, "-o", tmp_path / "o"]):
        r = _cli(*args)
        assert r.exit_code == 2 and "past the end" in r.stderr, (args, r.output)
        assert f"{keep:,} bytes" in r.stderr and "45,170" in r.stderr, r.stderr


def test_a_folder_named_like_an_archive_is_not_an_archive(tmp_path):
    folder = tmp_path / "x.mpq"
    folder.mkdir()
    for args in (["info", folder], ["ls", folder], ["extract", folder, "-o", tmp_path / "o"]):
        r = _cli(*args)
        assert r.exit_code == 2 and "is a folder" in r.stderr and "--data" in r.stderr, (args, r.output)


def _unreachable(tmp_path, name="readme.txt"):
    from mpq_builders import unreachable_entry
    from wowgrass.formats.mpq import write_mpq

    path = tmp_path / "unreachable.mpq"
    path.write_bytes(unreachable_entry(write_mpq(FILES, hash_table_size=64), name))
    return path


def test_listfile_names_without_a_hash_entry_are_marked_and_skipped(tmp_path):
    path = _unreachable(tmp_path)
    r = _cli("ls", path)
    assert r.exit_code == 0, r.output
    line = next(x for x in r.stdout.splitlines() if "readme.txt" in x)
    assert "<no hash entry>" in line
    rows = {row["name"]: row for row in json.loads(_cli("ls", path, "--json").stdout)["files"]}
    assert rows["readme.txt"]["reachable"] is False and rows["(listfile)"]["reachable"] is True
    out = tmp_path / "out"
    r = _cli("extract", path, "-o", out)
    assert r.exit_code == 0, r.output
    warnings = [x for x in r.stderr.splitlines() if x.startswith("warning:")]
    assert len(warnings) == 1 and "readme.txt" in warnings[0] and "no hash entry" in warnings[0], r.stderr
    assert (out / "World" / "Maps" / "Test" / "Test_1_2.adt").is_file() and not (out / "readme.txt").exists()
    r = _cli("cat", path, "readme.txt")
    assert r.exit_code == 2 and "no hash entry" in r.stderr, r.output
    # a Data folder skips it the same way (with one warning)
    d = tmp_path / "Data"
    d.mkdir()
    path.rename(d / "patch.MPQ")
    r = _cli("extract", "--data", d, "-o", tmp_path / "out2")
    assert r.exit_code == 0 and sum(x.startswith("warning:") for x in r.stderr.splitlines()) == 1, r.output
    assert "<no hash entry>" in _cli("ls", "--data", d).stdout


@pytest.mark.parametrize("size", [48, 24, 100])
def test_hash_table_size_not_a_power_of_two_reads_as_stormlib_reads_it(tmp_path, size):
    from mpq_builders import odd_hash_table
    from wowgrass.formats.mpq import write_mpq

    path = tmp_path / "odd.mpq"
    path.write_bytes(odd_hash_table(write_mpq(FILES), size))
    r = _cli("info", path, "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["hash_table_size"] == size
    rows = json.loads(_cli("ls", path, "--json").stdout)["files"]
    assert sorted(row["name"] for row in rows) == sorted([*FILES, "(listfile)"])
    out = tmp_path / "out"
    assert _cli("extract", path, "-o", out).exit_code == 0
    for name, data in FILES.items():
        assert (out / name.replace("\\", "/")).read_bytes() == data
    assert _cli("cat", path, "nope.txt").exit_code == 2   # a miss ends (the probe cycle is short)
