"""Light tables that do not belong together (issue 49.18): LightIntBand.dbc of another build (its
rows numbered otherwise) under the sample client's Light and LightParams. The map's global light
then has no keys for its diffuse and ambient colours, which read as 0: the page and the window were
lit black without a word, while `light show` noted the empty bands. Every consumer of the light
says it; the client's own tables say nothing of the kind."""

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
