"""The dbc/ facts of shared/realdata/README.md, through the API and through `wowgrass dbc` (loose
files, the same files packed with wowgrass's MPQ writer, and client-shaped Data folders)."""

from __future__ import annotations

import csv
import io
import json

import pytest
from click.testing import CliRunner

from wowgrass.cli.main import cli
from wowgrass.formats.dbc import read_table

pytestmark = pytest.mark.realdata

FACTS = {
    ("1.12", "GroundEffectTexture"): dict(records=11791, fields=7, record_size=28, string_block=1,
                                          dmin=0, dmax=99, zero=10815, over24=1),
    ("3.3.5", "GroundEffectTexture"): dict(records=24982, fields=11, record_size=44, string_block=1,
                                           dmin=0, dmax=123, zero=23797, over24=4),
    ("1.12", "GroundEffectDoodad"): dict(records=520, fields=3, record_size=12),
    ("3.3.5", "GroundEffectDoodad"): dict(records=580, fields=3, record_size=12),
}
ROWS = {
    ("1.12", 453): {"ID": 453, "DoodadID": [102, 116, 107, 106], "Density": 5, "Sound": 7},
    ("1.12", 1493): {"ID": 1493, "DoodadID": [-1, -1, -1, -1], "Density": 0, "Sound": 5},
    ("3.3.5", 453): {"ID": 453, "DoodadID": [103, 106, 108, 107], "DoodadWeight": [1, 1, 1, 1],
                     "Density": 5, "Sound": 7},
    ("3.3.5", 40199): {"ID": 40199, "DoodadID": [277, 283, 284, 293], "DoodadWeight": [1, 1, 1, 1],
                       "Density": 3, "Sound": 9},
}
ELWGRA = [f"ElwGra0{i}.mdl" for i in range(1, 9)]
T = "DBFilesClient\\GroundEffectTexture.dbc"
DD = "DBFilesClient\\GroundEffectDoodad.dbc"


def run(*args):
    result = CliRunner().invoke(cli, ["dbc", *map(str, args)])
    assert result.exit_code == 0, result.output
    return result.output


def real(realdata, build, table):
    return realdata / "dbc" / build / f"{table}.dbc"


@pytest.mark.parametrize(("build", "table"), list(FACTS))
def test_api_facts(realdata, build, table):
    f, det = read_table(real(realdata, build, table).read_bytes(), f"{table}.dbc")
    facts = FACTS[(build, table)]
    assert det.build == build and not det.ambiguous and f.warnings == []
    assert (f.record_count, f.field_count, f.record_size) == (facts["records"], facts["fields"], facts["record_size"])
    if table == "GroundEffectTexture":
        d = f.records["Density"]
        assert f.string_block_size == facts["string_block"]
        assert (d.min(), d.max(), (d == 0).sum(), (d > 24).sum()) == (
            facts["dmin"], facts["dmax"], facts["zero"], facts["over24"])
        for (b, rid), row in ROWS.items():
            if b == build:
                rec = f.records[f.row_index(rid)]
                assert {k: rec[k].tolist() for k in row} == row
    else:
        ids = f.records["ID"]
        paths = f.strings(f.records["Doodadpath"])
        by_id = dict(zip(ids.tolist(), paths))
        assert [by_id[i] for i in range(4, 12)] == ELWGRA
        if build == "1.12":
            tags = dict(zip(ids.tolist(), f.records["DoodadIdTag"].tolist()))
            assert by_id[1] == "ElwFlo01.mdl" and tags[1] == 0
            assert [tags[i] for i in range(4, 12)] == list(range(3, 11))
        else:
            flags = dict(zip(ids.tolist(), f.records["Flags"].tolist()))
            assert [flags[i] for i in range(4, 12)] == [0] * 8


@pytest.fixture(scope="module")
def sources(realdata, tmp_path_factory):
    """Per build: the loose folder, an MPQ holding both tables, and a client-shaped Data folder."""
    from wowgrass.formats.mpq import write_mpq

    out = {}
    base = tmp_path_factory.mktemp("realdbc")
    for build in ("1.12", "3.3.5"):
        files = {T: real(realdata, build, "GroundEffectTexture").read_bytes(),
                 DD: real(realdata, build, "GroundEffectDoodad").read_bytes()}
        root = base / build / "Data"
        if build == "3.3.5":  # 3.3.5 keeps DBCs in the locale archive
            (root / "enUS").mkdir(parents=True)
            mpq = root / "enUS" / "locale-enUS.MPQ"
        else:
            root.mkdir(parents=True)
            mpq = root / "dbc.MPQ"
        mpq.write_bytes(write_mpq(files))
        out[build] = {"loose": realdata / "dbc" / build, "mpq": mpq, "data": root}
    return out


def _via(sources, build, how, table):
    s = sources[build]
    if how == "loose":
        return (s["loose"] / f"{table}.dbc",)
    if how == "mpq":
        return ("--mpq", s["mpq"], f"DBFilesClient\\{table}.dbc")
    return ("--data", s["data"], table)


def _origin_free(text_json: str) -> dict:
    return {k: v for k, v in json.loads(text_json).items() if k not in ("file", "source")}


@pytest.mark.parametrize("build", ["1.12", "3.3.5"])
@pytest.mark.parametrize("how", ["loose", "mpq", "data"])
def test_cli_info_facts(sources, build, how):
    facts = FACTS[(build, "GroundEffectTexture")]
    r = json.loads(run("info", *_via(sources, build, how, "GroundEffectTexture"), "--json"))
    h = r["header"]
    assert (h["record_count"], h["field_count"], h["record_size"], h["string_block_size"]) == (
        facts["records"], facts["fields"], facts["record_size"], facts["string_block"])
    assert r["schema"]["build"] == build
    d = r["density"]
    assert (d["min"], d["max"], d["zero"], d["over_density_cap"]["row_count"]) == (
        facts["dmin"], facts["dmax"], facts["zero"], facts["over24"])
    assert d["over_density_cap"]["cap"] == 24 and d["over_clump_cap"]["cap"] == 12
    dd = json.loads(run("info", *_via(sources, build, how, "GroundEffectDoodad"), "--json"))
    assert dd["header"]["record_count"] == FACTS[(build, "GroundEffectDoodad")]["records"]
    assert dd["schema"]["build"] == build and not dd["schema"]["ambiguous"]


@pytest.mark.parametrize("build", ["1.12", "3.3.5"])
def test_cli_same_output_through_every_source(sources, build):
    for table in ("GroundEffectTexture", "GroundEffectDoodad"):
        outs = [_origin_free(run("info", *_via(sources, build, how, table), "--json"))
                for how in ("loose", "mpq", "data")]
        assert outs[0] == outs[1] == outs[2]
        texts = [run("info", *_via(sources, build, how, table)).split("\n", 1)[1] for how in ("loose", "mpq", "data")]
        assert texts[0] == texts[1] == texts[2]
    dumps = [run("dump", *_via(sources, build, how, "GroundEffectDoodad")) for how in ("loose", "mpq", "data")]
    assert dumps[0] == dumps[1] == dumps[2]


@pytest.mark.parametrize(("build", "rid"), list({(b, r) for b, r in ROWS}))
@pytest.mark.parametrize("how", ["loose", "data"])
def test_cli_show_rows(sources, build, rid, how):
    r = json.loads(run("show", *_via(sources, build, how, "GroundEffectTexture"), "--id", rid, "--json"))
    assert r["row"] == ROWS[(build, rid)]
    empty = rid == 1493 and build == "1.12"
    assert all(m is None for m in r["models"]) if empty else all(
        m.startswith("World\\NoDXT\\Detail\\") and m.endswith(".m2") for m in r["models"])


@pytest.mark.parametrize("build", ["1.12", "3.3.5"])
def test_cli_doodads_elwgra(sources, build):
    rows = list(csv.DictReader(io.StringIO(run("dump", *_via(sources, build, "mpq", "GroundEffectDoodad")))))
    by_id = {int(r["ID"]): r for r in rows}
    assert len(rows) == FACTS[(build, "GroundEffectDoodad")]["records"]
    assert [by_id[i]["Doodadpath"] for i in range(4, 12)] == ELWGRA
    if build == "1.12":
        assert [int(by_id[i]["DoodadIdTag"]) for i in range(4, 12)] == list(range(3, 11))
        assert by_id[1]["Doodadpath"] == "ElwFlo01.mdl" and by_id[1]["DoodadIdTag"] == "0"
    else:
        assert all(by_id[i]["Flags"] == "0" for i in range(4, 12))
    r = json.loads(run("show", *_via(sources, build, "data", "GroundEffectDoodad"), "--id", 4, "--json"))
    assert r["model"] == "World\\NoDXT\\Detail\\ElwGra01.m2"


def test_cli_text_mentions_the_coverage_caps(sources):
    text = run("info", *_via(sources, "3.3.5", "mpq", "GroundEffectTexture"))
    assert "density > 24" in text and "4 rows" in text and "24,089" in text
    assert "density > 12" in text and "60 rows" in text


@pytest.mark.parametrize("build", ["1.12", "3.3.5"])
def test_catalog_from_a_real_data_folder(sources, build):
    from wowgrass.game.data import open_data
    from wowgrass.game.effects import GroundEffectCatalog

    cat = GroundEffectCatalog.from_data(open_data(sources[build]["data"]))
    assert cat.build == build and len(cat) == FACTS[(build, "GroundEffectTexture")]["records"]
    assert cat.has_weights == (build == "3.3.5") and cat.unresolved == 0
    assert [f"World\\NoDXT\\Detail\\ElwGra0{i}.m2" for i in range(1, 9)] == cat.models[3:11]
    assert cat.row(453)["density"] == 5 and cat.row(453)["sound"] == 7
