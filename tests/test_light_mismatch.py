"""Light tables that do not belong together (issue 49.18): LightIntBand.dbc of another build (its
rows numbered otherwise) under the sample client's Light and LightParams. The map's global light
then has no keys for its diffuse and ambient colours, which read as 0: the page and the window were
lit black without a word, while `light show` noted the empty bands. Every consumer of the light
says it (the commands, the workbench's Cell panel, the Blender import, `doctor`); the client's own
tables say nothing of the kind."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from wowgrass.cli.main import cli
from wowgrass.formats.dbc import DbcFile, write_dbc
from wowgrass.game.data import open_data
from wowgrass.samples import MAP_NAME, build_sample_world

BLACK = "lit black"


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    base = tmp_path_factory.mktemp("light-mix")
    client = build_sample_world(base / "client", "3.3.5", (2, 1), seed=0)
    with open_data(client) as g:
        dbc = DbcFile.from_bytes(g.read("DBFilesClient\\LightIntBand.dbc"))
    rows = np.array(dbc.raw)
    rows[:, 0] += 100_000          # another build's numbering: no row where LightParams points
    other = base / "other" / "DBFilesClient"
    other.mkdir(parents=True)
    (other / "LightIntBand.dbc").write_bytes(write_dbc(rows, bytes(dbc.string_block)))
    return {"client": client, "mixed": ("--data", client, "--data", base / "other"), "own": ("--data", client)}


def warned(res) -> list[str]:
    return [ln for ln in res.stderr.splitlines() if ln.startswith("warning: ") and BLACK in ln]


@pytest.mark.parametrize("tables", ["mixed", "own"])
def test_light_show_and_exports_say_the_light_reads_black(mixed, tables, tmp_path):
    data = mixed[tables]
    show = run("light", "show", *data, "--map", MAP_NAME, "--at", "-200,380,40", "--clock", "12:00")
    gltf = run("export", "gltf", *data, "--tile", "31,32", "--clock", "12:00", "--no-doodads", "--no-wmos",
               "--no-liquids", "--texture-size", "128", "-o", tmp_path / "t.glb")
    web = run("export", "web", *data, "--tile", "31,32", "--texture-size", "128", "-o", tmp_path / "web")
    for res in (show, gltf, web):
        assert res.exit_code == 0, res.output
        if tables == "mixed":
            (line,) = warned(res)
            assert "Light 1, LightParams 1" in line and "diffuse and ambient" in line
        else:
            assert warned(res) == []


@pytest.mark.gl
@pytest.mark.usefixtures("egl")
def test_view_says_the_light_reads_black(mixed, tmp_path):
    res = run("view", *mixed["mixed"], "--tile", "31,32", "--clock", "12:00", "--size", "64x48",
              "-o", tmp_path / "v.png")
    assert res.exit_code == 0, res.output
    assert len(warned(res)) == 1


@pytest.mark.parametrize("tables", ["mixed", "own"])
def test_the_workbench_pick_says_the_light_reads_black_once(mixed, tables):
    # without --clock the window keeps its fixed sun, but the Cell panel shows the tables' light
    # at the picked point (noon): black, and it said nothing
    from types import SimpleNamespace

    from test_workbench_view import _stub_scene

    from wowgrass.workbench.controller import Workbench
    from wowgrass.workbench.session import EditSession

    paths = [p for p in mixed[tables] if p != "--data"]
    with open_data(paths) as data:
        session = EditSession(data, MAP_NAME, placement="coverage")
        scene, _calls = _stub_scene(session)
        bench = Workbench(session, scene, audit=False, panels=False)
        try:
            bench.viewer = SimpleNamespace(zone_light=None)
            first = bench.light_at((300.0, 150.0, 50.0))
            bench.light_at((310.0, 160.0, 50.0))       # a second pick: said once
            said = [m for m in bench.messages if m.startswith("warning: ")]
        finally:
            bench.close()
    assert first is not None and first["fixed_sun"] is True
    if tables == "mixed":
        assert len(said) == 1 and BLACK in said[0] and "Light 1, LightParams 1" in said[0]
        assert first["ambient"] == [0.0, 0.0, 0.0]     # what the warning is about
    else:
        assert said == [] and any(first["ambient"])


@pytest.mark.parametrize("tables", ["mixed", "own"])
def test_the_blender_zone_light_says_the_light_reads_black(mixed, tables):
    # the sun and world of `blender import --clock` and the add-on's import (wowgrass/blender/zone.py)
    from wowgrass.blender.zone import Zone, ZoneOptions

    paths = [str(p) for p in mixed[tables] if p != "--data"]
    with Zone(ZoneOptions(data=paths, map_name=MAP_NAME, tiles=["31,32"], clock="12:00")) as zone:
        sl, info = zone.light()
    said = [w for w in info["warnings"] if BLACK in w]
    if tables == "mixed":
        assert len(said) == 1 and "Light 1, LightParams 1" in said[0]
        assert not np.any(sl.sun_color) and not np.any(sl.ambient)   # what the warning is about
    else:
        assert said == [] and np.any(sl.sun_color)


def test_cli_blender_import_says_the_light_reads_black(mixed, tmp_path):
    from test_blender_ext import need_bpy

    py = need_bpy()
    res = run("blender", "import", *mixed["mixed"], "--tile", "31,32", "--clock", "12:00", "--no-grass",
              "--no-doodads", "--no-wmos", "--no-liquids", "-o", tmp_path / "z.blend", "--bpy", py)
    assert res.exit_code == 0, res.output
    (line,) = warned(res)
    assert "Light 1, LightParams 1" in line


@pytest.mark.parametrize("tables", ["mixed", "own"])
def test_doctor_says_the_light_reads_black(mixed, tables):
    import json

    res = run("doctor", *mixed[tables], "--no-tiles", "--json")
    (data,) = [c for c in json.loads(res.stdout)["checks"] if c["check"] == "data"]
    if tables == "mixed":
        assert res.exit_code == 1 and not data["ok"] and BLACK in data["detail"]
        assert f"{MAP_NAME}: the map's global light (Light 1, LightParams 1)" in data["detail"]
    else:
        assert data["ok"] and "light tables read" in data["detail"], data
