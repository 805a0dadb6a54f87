"""``wowgrass wmo info/export`` and the liquid and MODF lines of ``adt info``, through CliRunner."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pygltflib
import pytest
from click.testing import CliRunner

from wowgrass.cli.main import cli
from wowgrass.samples import building

HERE = Path(__file__).parent


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture(scope="module")
def house(tmp_path_factory):
    """The sample house's root, groups and textures as loose files in one folder."""
    d = tmp_path_factory.mktemp("house")
    for path, data in building.building_files("2.4.3").items():
        (d / path.rsplit("\\", 1)[-1]).write_bytes(data)
    return d / "SampleHouse.wmo"


def test_wmo_info_inn(realdata):
    res = run("wmo", "info", realdata / "wmo" / "inn.wmo")
    assert res.exit_code == 0, res.output
    out = res.output
    assert "11 groups (2 present, 9 missing)" in out
    assert "863 placements of 74 models (MOHD says 913)" in out
    assert "inn_001.wmo" in out and "inn_010.wmo" in out and "kitchen" in out
    res = run("wmo", "info", realdata / "wmo" / "inn.wmo", "--json")
    assert res.exit_code == 0
    d = json.loads(res.output)
    assert d["groups_present"] == [0, 3] and len(d["groups_missing"]) == 9
    assert d["vertex_count"] == 2759 + 2310 and d["triangle_count"] == 1924 + 2026 and d["batch_count"] == 26
    assert len(d["materials"]) == 22 and len(d["textures"]) == 22 and d["doodad_count"] == 863
    assert [s["name"] for s in d["doodad_sets"]] == ["Set_$DefaultGlobal", "Set_B", "Set_C", "Set_A"]
    g3 = d["group_info"][3]
    assert g3["vertex_colours"] and g3["interior"] and g3["batch_count"] == 13


def test_wmo_info_group_alone(realdata):
    res = run("wmo", "info", realdata / "wmo" / "inn_003.wmo", "--json")
    assert res.exit_code == 0
    d = json.loads(res.output)
    assert d["kind"] == "group" and d["vertex_count"] == 2310 and d["index_count"] == 6078


def _glb(path):
    return pygltflib.GLTF2().load_binary(str(path))


def test_wmo_export_inn(realdata, tmp_path):
    out = tmp_path / "inn.glb"
    res = run("wmo", "export", realdata / "wmo" / "inn.wmo", "-o", out, "--json")
    assert res.exit_code == 0, res.output
    s = json.loads(res.output)
    assert s["groups"] == [0, 3] and len(s["groups_missing"]) == 9
    assert len(s["missing_textures"]) >= 1       # the inn's BLPs are not among the test files
    doc = _glb(out)
    meshes = {m.name: m for m in doc.meshes}
    assert set(meshes) == {"group 000 exterior", "group 003 kitchen"}
    assert len(meshes["group 000 exterior"].primitives) == 13
    prim = meshes["group 003 kitchen"].primitives[0]
    assert prim.attributes.COLOR_0 is not None          # MOCV
    assert meshes["group 000 exterior"].primitives[0].attributes.COLOR_0 is None


def test_wmo_export_house_is_validator_clean(house, tmp_path):
    from test_export import _validator   # skips without node and the Khronos validator

    node, env = _validator()
    out = tmp_path / "house.glb"
    res = run("wmo", "export", house, "-o", out, "--json")
    assert res.exit_code == 0, res.output
    s = json.loads(res.output)
    assert s["groups"] == [0, 1] and not s["missing_textures"]
    assert s["missing_doodads"] == ["World\\Generic\\Sample\\Rocks\\SampleRock01.m2"]   # no M2 beside it
    doc = _glb(out)
    assert len(doc.images) == 5          # plaster, timber, thatch, stone, floor
    proc = subprocess.run([node, str(HERE / "gltf_validate.js"), str(out)], env=env, capture_output=True,
                          text=True, timeout=120)
    report = json.loads(proc.stdout)
    assert report["errors"] == 0 and report["warnings"] == 0, report


def test_wmo_command_errors(house, tmp_path, realdata):
    res = run("wmo", "info", tmp_path / "nope.wmo")
    assert res.exit_code == 2 and "error:" in res.output
    res = run("wmo", "export", realdata / "wmo" / "inn_000.wmo", "-o", tmp_path / "g.glb")
    assert res.exit_code == 2 and "group file" in res.output
    res = run("wmo", "export", house, "-o", tmp_path / "x.obj")
    assert res.exit_code == 2 and ".glb" in res.output
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    (lonely / "SampleHouse.wmo").write_bytes(house.read_bytes())
    res = run("wmo", "export", lonely / "SampleHouse.wmo", "-o", tmp_path / "l.glb")
    assert res.exit_code == 2 and "none of its 2 group files" in res.output
    res = run("wmo", "info", lonely / "SampleHouse.wmo")
    assert res.exit_code == 0 and "2 missing" in res.output
    (lonely / "SampleHouse_000.wmo").write_bytes(b"REVM\x04\x00\x00\x00\x11\x00\x00\x00PGOM\xff\xff\x00\x00")
    res = run("wmo", "info", lonely / "SampleHouse.wmo", "--json")
    assert res.exit_code == 0
    d = json.loads(res.output)
    assert list(d["group_errors"]) == [str(lonely / "SampleHouse_000.wmo")]


def test_adt_info_liquid_and_modf(realdata):
    res = run("adt", "info", realdata / "adt" / "continent4229.adt", "--json")
    assert res.exit_code == 0
    d = json.loads(res.output)
    assert d["mcnk"]["liquid_chunk_count"] == 9
    lq = d["liquid"]
    assert lq["format"] == "MH2O" and lq["chunk_count"] == 9 and lq["layer_count"] == 9
    assert lq["types"] == [{"id": 2, "kind": "ocean", "name": "Ocean", "layer_count": 9}]
    assert lq["height"] == {"min": 0.0, "max": 0.0}
    assert d["modf"]["count"] == 19 and d["modf"]["wmo_count"] == 11
    p = d["modf"]["placements"][0]
    assert p["wmo"].endswith("REDRIDGE_BARRACKS.WMO") and p["doodad_set"] == 2 and p["scale"] == 1.0
    text = run("adt", "info", realdata / "adt" / "continent4229.adt").output
    assert "liquid (MH2O): 9 chunks, 9 layers" in text and "WMO placements (MODF): 19" in text
    text = run("adt", "info", realdata / "adt" / "Azeroth_38_46.adt").output
    assert "liquid: none" in text
