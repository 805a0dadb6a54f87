"""Maps and their tiles, one rule for every command (issue 25): maps a listfile-less client knows
from DBFilesClient\\Map.dbc, partial extracts (the WDT lists tiles the folder lacks) and maps
without a WDT (the ADTs present make the map)."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from wowgrass.cli.main import cli
from wowgrass.game.data import open_data
from wowgrass.samples import MAP_NAME, build_sample_world

TILES = [[31, 32], [32, 32]]   # the (2, 1) sample world's tiles
FAST_EXPORT = ["--texture-size", "128", "--no-doodads"]


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture(scope="module")
def vanilla(tmp_path_factory):
    """A 1.12 sample world: its base archives carry no (listfile), as a real 1.12 client's."""
    return build_sample_world(tmp_path_factory.mktemp("vanilla") / "w", "1.12", (2, 1), seed=0)


@pytest.fixture(scope="module")
def extract(tmp_path_factory):
    """The 3.3.5 sample world extracted to loose files (World\\Maps, DBFilesClient, models ...)."""
    world = build_sample_world(tmp_path_factory.mktemp("wotlk") / "w", "3.3.5", (2, 1), seed=0)
    out = tmp_path_factory.mktemp("loose") / "Data"
    res = run("mpq", "extract", "--data", world, "-o", out, "-q")
    assert res.exit_code == 0, res.output
    return out


def _copy(extract, tmp_path, drop=()):
    root = tmp_path / "Data"
    shutil.copytree(extract, root)
    for rel in drop:
        (root / rel).unlink()
    return root


def _map_dir(root):
    return root / "World" / "Maps" / MAP_NAME


# ----------------------------------------------------------------------------- 1. no listfile


def test_sample_world_has_a_map_table(vanilla):
    from wowgrass.game.maps import map_directories

    with open_data(vanilla) as data:
        assert not any(n.lower().startswith("world\\maps\\") for n in data.list())   # no listfile names them
        dirs = map_directories(data)
    assert MAP_NAME in dirs and "Azeroth" in dirs   # Map.dbc also names maps the sample lacks


def test_maps_without_a_listfile_are_found_through_map_dbc(vanilla):
    res = run("maps", "--data", vanilla, "--json")
    assert res.exit_code == 0, res.output
    js = json.loads(res.stdout)
    assert [m["map"] for m in js["maps"]] == [MAP_NAME]   # Azeroth's WDT is not in the data
    m = js["maps"][0]
    assert m["wdt"] and m["wdt_tiles"] == TILES and m["found_in"] == "Map.dbc"
    text = run("maps", "--data", vanilla).output
    assert f"{MAP_NAME}: WDT lists 2 tiles" in text and "Azeroth" not in text


def test_bake_and_export_default_to_the_map_map_dbc_knows(vanilla, tmp_path):
    res = run("bake", "--data", vanilla, "--tile", "31,32", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["map"] == MAP_NAME
    res = run("export", "gltf", "--data", vanilla, "--tile", "31,32", "-o", tmp_path / "v.glb", *FAST_EXPORT, "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["tiles"] == [[31, 32]]


def test_view_defaults_to_the_map_map_dbc_knows(vanilla, tmp_path, egl):
    res = run("view", "--data", vanilla, "--tile", "31,32", "-o", tmp_path / "v.png", "--size", "64x48",
              "--samples", 0, "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["map"] == MAP_NAME


# ----------------------------------------------------------------------------- 2. partial extracts


def test_partial_extract_bakes_and_exports_the_tiles_present(extract, tmp_path):
    root = _copy(extract, tmp_path, drop=[f"World/Maps/{MAP_NAME}/{MAP_NAME}_32_32.adt"])
    res = run("bake", "--data", root, "--jobs", 2, "--json")
    assert res.exit_code == 0, res.output
    js = json.loads(res.stdout)
    assert [t["tile"] for t in js["tiles"]] == [[31, 32]] and js["failures"] == []
    notes = [line for line in res.stderr.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "lists 2 tiles" in notes[0] and "1 of them" in notes[0] and "32,32" in notes[0], res.stderr
    res = run("export", "gltf", "--data", root, "-o", tmp_path / "p.glb", *FAST_EXPORT, "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["tiles"] == [[31, 32]] and (tmp_path / "p.glb").is_file()
    assert "lists 2 tiles" in res.stderr
    # a tile the WDT lists but the folder lacks, asked for by name: said so
    res = run("bake", "--data", root, "--tile", "32,32")
    assert res.exit_code == 2 and "not in" in res.stderr and "32,32" in res.stderr, res.output


def test_maps_json_counts_the_absent_tiles(extract, tmp_path):
    root = _copy(extract, tmp_path, drop=[f"World/Maps/{MAP_NAME}/{MAP_NAME}_32_32.adt"])
    m = json.loads(run("maps", "--data", root, "--json").stdout)["maps"][0]
    assert m["wdt_tile_count"] == 2 and m["adt_tiles"] == [[31, 32]] and m["absent_tiles"] == [[32, 32]]


# ----------------------------------------------------------------------------- 3. no WDT


def test_a_map_without_a_wdt_is_its_adts(extract, tmp_path):
    root = _copy(extract, tmp_path, drop=[f"World/Maps/{MAP_NAME}/{MAP_NAME}.wdt"])
    text = run("maps", "--data", root).output
    assert f"{MAP_NAME}: no WDT; 2 ADT files listed" in text
    for args in (["bake", "--data", root, "--map", MAP_NAME, "--tile", "31,32", "--json"],
                 ["export", "gltf", "--data", root, "--map", MAP_NAME, "--tile", "31,32", "-o", tmp_path / "n.glb",
                  *FAST_EXPORT, "--json"],
                 ["bake", "--data", root, "--json"]):             # and the only map, all its tiles
        res = run(*args)
        assert res.exit_code == 0, (args, res.output)
    assert sorted(t["tile"] for t in json.loads(res.stdout)["tiles"]) == TILES
