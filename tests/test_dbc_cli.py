"""`wowgrass dbc info/show/dump`: help, golden text, JSON, MPQ and Data-folder sources, errors."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from dbc_builders import dbc_bytes, doodad_112, doodad_335, string_block, texture_112, texture_335
from wowgrass.cli.main import cli

GOLDEN = Path(__file__).parent / "fixtures" / "golden"
T = "DBFilesClient\\GroundEffectTexture.dbc"
DD = "DBFilesClient\\GroundEffectDoodad.dbc"


def run(*args, ok=True):
    result = CliRunner().invoke(cli, ["dbc", *map(str, args)], env={"COLUMNS": "100"})
    if ok:
        assert result.exit_code == 0, result.output
    return result


def check_error(result, text):
    assert result.exit_code == 2, result.output
    assert "error:" in result.output and text in result.output
    assert "Traceback" not in result.output


@pytest.fixture()
def loose(tmp_path):
    for build, tex, dood in (("335", texture_335(), doodad_335()), ("112", texture_112(), doodad_112())):
        d = tmp_path / build
        d.mkdir()
        (d / "GroundEffectTexture.dbc").write_bytes(tex)
        (d / "GroundEffectDoodad.dbc").write_bytes(dood)
    return tmp_path


def golden(name: str, text: str):
    path = GOLDEN / name
    lines = "\n".join(line.rstrip() for line in text.splitlines()) + "\n"
    if os.environ.get("WOWGRASS_UPDATE_GOLDENS"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(lines)
    assert lines == path.read_text()


@pytest.mark.parametrize("sub", [[], ["info"], ["show"], ["dump"]])
def test_help(sub):
    r = run(*sub, "--help")
    assert "Usage:" in r.output
    if sub:
        assert "--mpq" in r.output and "--data" in r.output and "SOURCE [TABLE]" in r.output


@pytest.mark.parametrize(("build", "table"), [("335", "GroundEffectTexture"), ("112", "GroundEffectDoodad"),
                                              ("335", "GroundEffectDoodad"), ("112", "GroundEffectTexture")])
def test_info_golden(loose, build, table, monkeypatch):
    monkeypatch.chdir(loose)
    r = run("info", f"{build}/{table}.dbc")
    golden(f"dbc_info_{table}_{build}.txt", r.output)


def test_info_json(loose):
    r = json.loads(run("info", loose / "335" / "GroundEffectTexture.dbc", "--json").output)
    assert r["header"] == {"magic": "WDBC", "record_count": 5, "field_count": 11, "record_size": 44, "string_block_size": 1}
    assert r["schema"]["build"] == "3.3.5" and r["schema"]["columns"][2] == "DoodadWeight[4]"
    d = r["density"]
    assert (d["min"], d["max"], d["median"], d["no_doodad_count"]) == (0, 30, 5.0, 1)
    assert d["over_density_cap"]["row_count"] == 1 and d["over_clump_cap"]["row_count"] == 2
    r = json.loads(run("info", loose / "112" / "GroundEffectDoodad.dbc", "--json").output)
    assert r["schema"]["candidates"] == ["1.12", "2.4.3"]
    assert r["doodads"]["extensions"] == {"": 1, "mdl": 2, "mdx": 2}


def test_info_build_option(loose):
    r = json.loads(run("info", loose / "112" / "GroundEffectTexture.dbc", "--build", "2.4.3", "--json").output)
    assert r["schema"]["build"] == "2.4.3" and r["schema"]["reason"] == "build 2.4.3 given"
    check_error(run("info", loose / "112" / "GroundEffectTexture.dbc", "--build", "3.3.5", ok=False),
                "has 11 fields")
    r = run("info", loose / "112" / "GroundEffectTexture.dbc", "--build", "9.9", ok=False)
    check_error(r, "error: unknown build '9.9'")


def test_show(loose):
    r = json.loads(run("show", loose / "112" / "GroundEffectTexture.dbc", "--id", 453, "--json").output)
    assert r["row"] == {"ID": 453, "DoodadID": [1, 2, 0, -1], "Density": 5, "Sound": 7}
    assert r["models"] == ["World\\NoDXT\\Detail\\ElwGra01.m2", "World\\NoDXT\\Detail\\ElwGra02.m2",
                           "World\\NoDXT\\Detail\\ElwFlo01.m2", None]
    text = run("show", loose / "335" / "GroundEffectDoodad.dbc", "--id", 2).output
    assert "ElwGra01.mdl" in text and "World\\NoDXT\\Detail\\ElwGra01.m2" in text
    (loose / "335" / "GroundEffectDoodad.dbc").unlink()
    r = json.loads(run("show", loose / "335" / "GroundEffectTexture.dbc", "--id", 453, "--json").output)
    assert r["models"] is None and "not found" in r["note"]
    check_error(run("show", loose / "335" / "GroundEffectTexture.dbc", "--id", 5, ok=False), "no row with ID 5")


def test_dump_csv_json_and_output_file(loose, tmp_path):
    text = run("dump", loose / "335" / "GroundEffectDoodad.dbc").output
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["ID", "Doodadpath", "Flags"] and rows[4] == ["4", "Some\\Dir\\Foo.MDX", "2"]
    j = json.loads(run("dump", loose / "335" / "GroundEffectTexture.dbc", "--json").output)
    assert j["build"] == "3.3.5" and j["columns"][1] == "DoodadID[0]" and len(j["rows"]) == 5
    assert j["rows"][0]["ID"] == 453 and j["rows"][0]["DoodadWeight[0]"] == 8
    out = tmp_path / "out.csv"
    r = run("dump", loose / "112" / "GroundEffectTexture.dbc", "-o", out)
    assert "wrote 5 rows" in r.output
    assert out.read_text().splitlines()[1] == "453,1,2,0,-1,5,7"


def test_errors(loose, tmp_path):
    bad = tmp_path / "bad.dbc"
    bad.write_bytes(b"XXXX" + texture_335()[4:])
    check_error(run("info", bad, ok=False), "not a DBC file")
    cut = tmp_path / "GroundEffectTexture.dbc"
    cut.write_bytes(texture_335()[:100])
    check_error(run("info", cut, ok=False), "5 records × 44 bytes")
    check_error(run("info", tmp_path / "missing.dbc", ok=False), "no such file")
    check_error(run("info", loose / "335" / "GroundEffectTexture.dbc", "X", ok=False), "TABLE is only for")
    check_error(run("info", ok=False), "give a .dbc file")
    check_error(run("info", loose / "335", ok=False), "name the TABLE")


def test_lenient_reads_an_understated_string_block(tmp_path):
    block, offs = string_block(["ElwGra01.mdl", "ElwGra02.mdl"])
    path = tmp_path / "GroundEffectDoodad.dbc"
    path.write_bytes(dbc_bytes([[1, 0, offs[0]], [2, 1, offs[1]]], block, string_block_size=14))
    check_error(run("info", path, ok=False), "lenient mode")
    r = run("info", path, "--lenient")
    assert "warning: header declares a 14-byte string block but 27 bytes follow" in r.output
    assert run("dump", path, "--lenient").output.splitlines()[2] == "2,1,ElwGra02.mdl"


# ------------------------------------------------------------------------------ MPQ and Data folder
def _strip_origin(r: dict) -> dict:
    return {k: v for k, v in r.items() if k not in ("file", "source")}


@pytest.fixture()
def containers(tmp_path):
    from wowgrass.formats.mpq import write_mpq

    out = {}
    for build, tex, dood in (("3.3.5", texture_335(), doodad_335()), ("1.12", texture_112(), doodad_112())):
        root = tmp_path / build / "Data"
        if build == "3.3.5":
            (root / "enUS").mkdir(parents=True)
            mpq = root / "enUS" / "locale-enUS.MPQ"
        else:
            root.mkdir(parents=True)
            mpq = root / "dbc.MPQ"
        mpq.write_bytes(write_mpq({T: tex, DD: dood}))
        loose = tmp_path / build / "loose"
        loose.mkdir()
        (loose / "GroundEffectTexture.dbc").write_bytes(tex)
        (loose / "GroundEffectDoodad.dbc").write_bytes(dood)
        out[build] = (root, mpq, loose)
    return out


@pytest.mark.parametrize("build", ["3.3.5", "1.12"])
@pytest.mark.parametrize("table", ["GroundEffectTexture", "GroundEffectDoodad"])
def test_mpq_and_data_match_loose(containers, build, table):
    root, mpq, loose = containers[build]
    ref = run("info", loose / f"{table}.dbc", "--json").output
    variants = [
        ("info", "--mpq", mpq, f"DBFilesClient\\{table}.dbc", "--json"),  # the grass reference's dbctool shape
        ("info", mpq, table, "--json"),
        ("info", "--data", root, table, "--json"),
        ("info", root, f"DBFilesClient/{table}.dbc", "--json"),
    ]
    for args in variants:
        got = json.loads(run(*args).output)
        assert _strip_origin(got) == _strip_origin(json.loads(ref)), args
    text_ref = run("info", loose / f"{table}.dbc").output.split("\n", 1)[1]
    assert run("info", "--mpq", mpq, f"DBFilesClient\\{table}.dbc").output.split("\n", 1)[1] == text_ref
    assert run("info", "--data", root, table).output.split("\n", 1)[1] == text_ref
    assert run("dump", "--data", root, table).output == run("dump", loose / f"{table}.dbc").output


def test_show_through_data_resolves_models(containers):
    root, mpq, _ = containers["3.3.5"]
    r = json.loads(run("show", "--data", root, "GroundEffectTexture", "--id", 453, "--json").output)
    assert r["models"][0] == "World\\NoDXT\\Detail\\ElwGra01.m2"
    r = json.loads(run("show", "--mpq", mpq, "GroundEffectTexture", "--id", 453, "--json").output)
    assert r["models"][0] == "World\\NoDXT\\Detail\\ElwGra01.m2"


def test_container_errors(containers):
    root, mpq, loose = containers["1.12"]
    check_error(run("info", "--mpq", mpq, "GroundEffectSomething", ok=False), "GroundEffectSomething")
    check_error(run("info", "--mpq", mpq, ok=False), "name a table")
    check_error(run("info", "--mpq", mpq, "--data", root, "X", ok=False), "not both")
    check_error(run("info", mpq, ok=False), "name the TABLE")
    check_error(run("info", "--data", root, "A", "B", ok=False), "give only the TABLE")
