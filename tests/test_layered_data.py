"""Layered data (issue 40.1): a map editor's loose project folder laid over a client's MPQ Data
folder (repeated ``--data``): tiles from the project, textures, models and tables from the client,
the last layer winning; ``maps`` lists the project's own maps; bake and view read through it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from wowgrass.cli.main import cli
from wowgrass.edit.adt_edit import exclude_cells
from wowgrass.errors import UsageError
from wowgrass.formats.wdt import WdtFile, write_wdt
from wowgrass.game.data import DataLayers, open_data
from wowgrass.game.effects import TEXTURE_PATH
from wowgrass.game.maps import adt_game_path, list_maps, map_tiles, wdt_game_path
from wowgrass.samples import MAP_NAME, build_sample_world

PROJ = "ProjMap"
TEXTURE = "Tileset\\Sample\\SampleGrass.blp"


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def put(root: Path, gp: str, raw: bytes) -> Path:
    p = root.joinpath(*gp.split("\\"))
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(raw)
    return p


@pytest.fixture(scope="module")
def layers(tmp_path_factory):
    """The 3.3.5 sample client (MPQs) and two loose project folders over it: ``proj`` holds a map
    of its own (ProjMap: one tile and a WDT listing it) and an edited copy of a sample tile;
    ``top`` another edit of that sample tile (it wins over ``proj``)."""
    base = tmp_path_factory.mktemp("layers")
    client = build_sample_world(base / "client", "3.3.5", (2, 1), seed=0)
    proj, top = base / "proj", base / "top"
    with open_data(client) as g:
        raw = g.read(adt_game_path(MAP_NAME, 31, 32))
        wdt = WdtFile.from_bytes(g.read(wdt_game_path(MAP_NAME)))
    some = np.zeros((256, 8, 8), bool)
    some[:40] = True
    proj_tile, _ = exclude_cells(raw, "p", some)
    top_tile, _ = exclude_cells(raw, "t", np.ones((256, 8, 8), bool))
    one = WdtFile(flags=wdt.flags, main=np.zeros((64, 64), bool))
    one.main[32, 31] = True
    put(proj, adt_game_path(PROJ, 31, 32), proj_tile)
    put(proj, wdt_game_path(PROJ), write_wdt(one))
    put(proj, adt_game_path(MAP_NAME, 31, 32), proj_tile)
    put(top, adt_game_path(MAP_NAME, 31, 32), top_tile)
    put(top, adt_game_path(MAP_NAME, 31, 32) + ".bak", b"a backup: not a game file")
    return {"client": client, "proj": proj, "top": top, "raw": raw, "proj_tile": proj_tile, "top_tile": top_tile}


def test_tiles_from_the_project_the_rest_from_the_client(layers):
    with open_data(layers["client"]) as client:
        texture, table = client.read(TEXTURE), client.read(TEXTURE_PATH)
    with open_data([layers["client"], layers["proj"]]) as data:
        assert data.layers == [layers["proj"]] and data.archives
        assert data.read(adt_game_path(PROJ, 31, 32)) == layers["proj_tile"]
        assert data.read(adt_game_path(MAP_NAME, 31, 32)) == layers["proj_tile"]
        assert data.read(adt_game_path(MAP_NAME, 32, 32)) != layers["proj_tile"]   # only the client has it
        assert data.read(TEXTURE) == texture and data.read(TEXTURE_PATH) == table
        assert data.locate(TEXTURE)[1] is not None and data.locate(adt_game_path(PROJ, 31, 32))[1] is None
        listed = data.list("world\\maps\\*")
        assert adt_game_path(PROJ, 31, 32) in listed and adt_game_path(MAP_NAME, 32, 32) in listed
        assert len([n for n in listed if n.lower() == adt_game_path(MAP_NAME, 31, 32).lower()]) == 1
        maps = list_maps(data)
        assert set(maps) == {MAP_NAME, PROJ} and maps[PROJ]["wdt"]
        assert map_tiles(data, PROJ).tiles == [(31, 32)]
        assert str(DataLayers((layers["client"], layers["proj"]))) == f"{layers['client']} + {layers['proj']}"
        assert data.describe() == f"{layers['client']} + {layers['proj']}"


def test_the_last_layer_wins_and_the_spec_reopens_the_layers(layers):
    with open_data(layers["client"], over=[layers["proj"], layers["top"]]) as data:
        gp = adt_game_path(MAP_NAME, 31, 32)
        assert data.read(gp) == layers["top_tile"]
        assert not data.exists(gp + ".bak")             # backups in a layer are not game files
        assert data.read(adt_game_path(PROJ, 31, 32)) == layers["proj_tile"]   # only proj has it
        again = data.spec().open()
    with again:
        assert again.layers == data.layers and again.read(gp) == layers["top_tile"]
    with open_data([layers["client"], layers["top"], layers["proj"]]) as data:   # order decides
        assert data.read(adt_game_path(MAP_NAME, 31, 32)) == layers["proj_tile"]


def test_a_layer_must_be_loose_files(layers, tmp_path):
    with pytest.raises(UsageError, match="holds MPQ archives"):
        open_data([layers["proj"], layers["client"]])
    res = run("maps", "--data", layers["proj"], "--data", layers["client"])
    assert res.exit_code == 2 and "error: " in res.stderr and "Traceback" not in res.output


def test_maps_lists_the_projects_maps(layers):
    res = run("maps", "--data", layers["client"], "--data", layers["proj"], "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    by = {m["map"]: m for m in doc["maps"]}
    assert set(by) == {MAP_NAME, PROJ} and by[PROJ]["adt_tiles"] == [[31, 32]] and by[PROJ]["wdt"]
    assert doc["data"] == f"{layers['client']} + {layers['proj']}"
    res = run("maps", "--data", layers["client"], "--json")
    assert [m["map"] for m in json.loads(res.stdout)["maps"]] == [MAP_NAME]


def test_bake_over_layered_data(layers):
    from wowgrass.grass import bundle as B

    res = run("bake", "--data", layers["client"], "--data", layers["proj"], "--map", PROJ, "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert [t["tile"] for t in doc["tiles"]] == [[31, 32]] and doc["tiles"][0]["instance_count"] > 0
    with B.read_bundle(doc["tiles"][0]["file"]) as b:
        assert b.provenance["adt_sha256"] == hashlib.sha256(layers["proj_tile"]).hexdigest()
        assert b.provenance["build"] == "3.3.5"       # the client's tables
        excluded = b.cell_counts[:40].sum()
    assert excluded == 0          # the project's excluded cells grow nothing (the coverage placement)
    res = run("bake", "--data", layers["client"], "--data", layers["proj"], "--data", layers["top"], "--map",
              MAP_NAME, "--tile", "31,32", "--jobs", "2", "--json")   # the workers open the same layers
    assert res.exit_code == 0, res.output
    tiles = json.loads(res.stdout)["tiles"]
    with B.read_bundle(tiles[0]["file"]) as b:
        assert b.provenance["adt_sha256"] == hashlib.sha256(layers["top_tile"]).hexdigest()
        assert b.instance_count == 0


def test_effects_audit_over_layered_data(layers):
    res = run("effects", "audit", "--data", layers["client"], "--data", layers["proj"], "--map", PROJ, "--json")
    assert res.exit_code == 0, res.output
    from wowgrass.edit.adt_edit import read_tile

    doc = json.loads(res.stdout)
    want = int(read_tile(layers["proj_tile"], big_alpha=True).no_effect_doodad.sum())
    assert want >= 40 * 64 and doc["summary"]["excluded_cell_count"] == want


@pytest.mark.gl
@pytest.mark.usefixtures("egl")
def test_view_over_layered_data(layers, tmp_path):
    out = tmp_path / "proj.png"
    res = run("view", "--data", layers["client"], "--data", layers["proj"], "--map", PROJ, "--output", out,
              "--size", "96x64", "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["map"] == PROJ and doc["tiles"] == [[31, 32]]
    # the project has no textures or models: every one came from the client beneath it
    assert doc["missing_textures"] == [] and doc["missing_models"] == []
    assert out.is_file()


def test_light_show_over_layered_data(layers):
    # the light tables come from the client under the project (the project has none)
    at = ["--at", "-200,380,40", "--clock", "06:30", "--json"]
    alone = run("light", "show", "--data", layers["client"], "--map", MAP_NAME, *at)
    over = run("light", "show", "--data", layers["client"], "--data", layers["proj"], "--map", MAP_NAME, *at)
    assert alone.exit_code == 0 and over.exit_code == 0, over.output
    assert json.loads(over.stdout) == json.loads(alone.stdout) and json.loads(over.stdout)["lights"]


def test_export_over_layered_data(layers, tmp_path):
    out = tmp_path / "proj.glb"
    res = run("export", "gltf", "--data", layers["client"], "--data", layers["proj"], "--map", PROJ, "-o", out,
              "--no-doodads", "--no-wmos", "--no-liquids", "--texture-size", "128", "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert out.is_file() and doc["tiles"] == [[31, 32]] and doc["grass_instance_count"] > 0
    # the project holds neither textures nor grass models: the client's were found under it
    assert doc["missing_textures"] == [] and doc["missing_grass"] == []


def test_effects_diff_over_layered_data(layers, tmp_path):
    # a patch MPQ ranks below the loose layers: its tile 32,32 (which the project lacks) shows, the
    # project's own tile 31,32 stays the project's
    from wowgrass.edit.patch import pack

    raw = open_data(layers["client"]).read(adt_game_path(MAP_NAME, 32, 32))
    bare, _ = exclude_cells(raw, "x", np.ones((256, 8, 8), bool))
    patch = tmp_path / "patch-4.MPQ"
    patch.write_bytes(pack({adt_game_path(MAP_NAME, 32, 32): bare, adt_game_path(MAP_NAME, 31, 32): layers["raw"]},
                           "3.3.5"))
    res = run("effects", "diff", "--data", layers["client"], "--data", layers["proj"], "--map", MAP_NAME,
              "--patch", patch, "--placement", "coverage", "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    by = {tuple(t["tile"]): t for t in doc["tiles"]}
    assert set(by) == {(31, 32), (32, 32)} and by[(32, 32)]["adt_changed"]
    assert not by[(31, 32)]["adt_changed"]          # the project's tile hides the patch's
    counts = by[(32, 32)]["coverage"]
    assert counts["before"] > 0 and counts["after"] == 0


def test_audit_workers_open_the_same_layers(layers):
    args = ("effects", "audit", "--data", layers["client"], "--data", layers["top"], "--map", MAP_NAME, "--json")
    one, two = run(*args), run(*args, "--jobs", "2")
    assert one.exit_code == 0 and two.exit_code == 0, two.output
    a, b = json.loads(one.stdout), json.loads(two.stdout)
    assert a["summary"] == b["summary"]
    assert a["summary"]["excluded_cell_count"] >= 256 * 64     # the top layer's tile: every cell excluded


def test_export_layers_workers_open_the_same_layers(layers, tmp_path):
    # issue 49.1: the workers were handed the layers' display string ("A + B") as a path
    args = ("export", "layers", "--data", layers["client"], "--data", layers["proj"], "--map", MAP_NAME, "--json")
    one, two = run(*args, "-o", tmp_path / "one"), run(*args, "-o", tmp_path / "two", "-j", "2")
    assert one.exit_code == 0 and two.exit_code == 0, two.output
    a, b = json.loads(one.stdout), json.loads(two.stdout)
    assert a["tile_count"] == b["tile_count"] == 2 and a["bytes"] == b["bytes"]
    doc = json.loads((tmp_path / "two" / f"{MAP_NAME}_31_32" / "layers.json").read_text())
    from wowgrass.edit.adt_edit import read_tile

    want = int(read_tile(layers["proj_tile"], big_alpha=True).no_effect_doodad.sum())
    assert want >= 40 * 64 and doc["no_effect_doodad_cell_count"] == want     # the project's tile
    assert doc == json.loads((tmp_path / "one" / f"{MAP_NAME}_31_32" / "layers.json").read_text())


def test_export_web_workers_open_the_same_layers(layers, tmp_path):
    out = tmp_path / "web"
    res = run("export", "web", "--data", layers["client"], "--data", layers["top"], "--map", MAP_NAME,
              "--texture-size", "128", "-j", "2", "-o", out, "--json")
    assert res.exit_code == 0, res.output
    by = {tuple(t["tile"] if "tile" in t else (t["col"], t["row"])): t for t in json.loads(res.stdout)["tiles"]}
    assert set(by) == {(31, 32), (32, 32)}
    assert by[(31, 32)]["grass_instance_count"] == 0     # the top layer's tile: every cell excluded
    assert by[(32, 32)]["grass_instance_count"] > 0


def test_maps_over_a_bare_map_folder_layer(layers, tmp_path):
    # issue 49.2: an upper layer that is a bare map folder (tiles at its top) with a loose ADT of no
    # map beside them: `maps` raised a TypeError on the DataLayers, and `maps --json` called the
    # tile bake reads from that layer "not in a map folder"
    from wowgrass.grass import bundle as B

    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / f"{MAP_NAME}_31_32.adt").write_bytes(layers["proj_tile"])
    (bare / "continent4229.adt").write_bytes(layers["proj_tile"])
    data = ("--data", layers["client"], "--data", bare)
    res = run("maps", *data)
    assert res.exit_code == 0, res.output
    assert f"view {bare / 'continent4229.adt'}" in res.stderr and f"{MAP_NAME}_31_32" not in res.stderr
    res = run("maps", *data, "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert [i["file"] for i in doc["ignored_adts"]] == ["continent4229.adt"]
    (m,) = doc["maps"]
    assert [31, 32] in m["adt_tiles"]
    res = run("bake", *data, "--map", MAP_NAME, "--tile", "31,32", "--json")
    assert res.exit_code == 0, res.output
    with B.read_bundle(json.loads(res.stdout)["tiles"][0]["file"]) as b:   # bake reads the layer's tile
        assert b.provenance["adt_sha256"] == hashlib.sha256(layers["proj_tile"]).hexdigest()
