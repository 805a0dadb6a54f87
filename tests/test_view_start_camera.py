"""Where ``view`` starts without --camera (issue 49, item 16): where grass grows, even when only one
tile of the map has any, and never over a tile that failed to load."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from conftest import require_tool
from wowgrass.cli.main import cli

TILES = [(31, 31), (31, 32), (32, 31), (32, 32)]


def _tile_of(x, y):
    from wowgrass.render.constants import TILE_SIZE, ZEROPOINT

    return int((ZEROPOINT - y) // TILE_SIZE), int((ZEROPOINT - x) // TILE_SIZE)


@pytest.fixture(scope="module")
def client():
    from wowgrass.grass.bake import default_data

    return default_data()


def _view(tmp_path, *data):
    out = tmp_path / "v.png"
    args = ["view", "--size", "160x90", "-o", str(out), "--json", "--placement", "coverage"]
    for d in data:
        args += ["--data", str(d)]
    r = CliRunner().invoke(cli, args)
    if "EGL" in r.output and r.exit_code != 0:
        require_tool("an EGL OpenGL context", r.output.strip(), found=False)
    return r


def _bare(client, project, tiles):
    """``project``: the client's tiles ``tiles`` with every layer's effect id removed (no grass)."""
    root, _map = client
    args = ["effects", "assign", "--data", str(root), "--texture", "*", "--effect", "0", "-o", str(project), "-q"]
    for c, r in tiles:
        args += ["--tile", f"{c},{r}"]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output


def test_start_camera_finds_the_one_tile_with_grass(client, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    grassy = (32, 32)
    _bare(client, project, [t for t in TILES if t != grassy])
    r = _view(tmp_path, client[0], project)
    assert r.exit_code == 0, r.output
    res = json.loads(r.output[r.output.index("{"):])
    x, y, _z = res["camera"]
    assert _tile_of(x, y) == grassy, (res["camera"], _tile_of(x, y))
    assert res["frame"]["grass_instance_count"] > 1000  # it looks at grass


def test_start_camera_is_never_over_a_broken_tile(client, tmp_path):
    from wowgrass.grass.bake import default_data

    root, map_name = default_data()
    project = tmp_path / "project"
    folder = project / "World" / "Maps" / map_name
    folder.mkdir(parents=True)
    from types import SimpleNamespace

    from wowgrass.render.world.firstframe import start_tile

    first = start_tile(SimpleNamespace(tiles=TILES))  # the tile the camera would start on: broken
    (folder / f"{map_name}_{first[0]}_{first[1]}.adt").write_bytes(b"MVER but not an ADT at all")
    r = _view(tmp_path, root, project)
    res = json.loads(r.output[r.output.index("{"):])
    assert f"{first[0]},{first[1]}" in res["tile_errors"], res["tile_errors"]
    x, y, _z = res["camera"]
    assert _tile_of(x, y) != first and _tile_of(x, y) in TILES, res["camera"]
    assert res["frame"]["grass_instance_count"] > 1000  # grass in view, not sky
