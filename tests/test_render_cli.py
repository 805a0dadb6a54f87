"""``wowgrass view``: help, the sample world offscreen, JSON, error exits, real tiles."""

from __future__ import annotations

import json

import numpy as np
import pytest
from loose_world import loose_world
from click.testing import CliRunner

from wowgrass.cli.main import cli

pytestmark = [pytest.mark.gl, pytest.mark.usefixtures("egl")]

SKY = np.array([0.62, 0.74, 0.86]) * 255


def read_png(path):
    from PIL import Image

    return np.asarray(Image.open(path).convert("RGB"))


def drawn_fraction(img):
    return float((np.abs(img.astype(float) - SKY).sum(axis=-1) > 30).mean())


def test_view_help():
    r = CliRunner().invoke(cli, ["view", "--help"])
    assert r.exit_code == 0
    for opt in ("--output", "--frames", "--camera", "--no-grass", "--stats", "--size", "--tile"):
        assert opt in r.output


def test_view_sample_world_offscreen_png_and_json(tmp_path):
    out = tmp_path / "frame.png"
    r = CliRunner().invoke(cli, ["view", "--output", str(out), "--size", "160x90", "--camera", "60,60",
                                 "--frames", "2", "--json"])
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    assert res["file"] == str(out.resolve()) and out.exists()
    assert res["frame_count"] == 2 and res["frame"]["grass_instance_count"] > 0
    assert res["frame"]["draw_call_count"] >= 2 and res["resident_grass_instance_count"] > 100_000
    assert res["missing_models"] == []
    # the sample world's WDL: the horizon is there, in the GPU books too
    assert res["horizon"]["tile_count"] >= 1 and res["horizon"]["reach"] > 3200
    assert res["gpu_memory"]["by_kind"]["horizon"] > 0 and res["gpu_memory"]["per_tile"]["near"]["tile_count"] >= 1
    img = read_png(out)
    assert img.shape == (90, 160, 3)
    # lower half is ground covered in grass: mostly green
    low = img[45:].reshape(-1, 3).astype(int)
    assert (low[:, 1] > low[:, 0]).mean() > 0.8
    # grass off: the same view has fewer grass-dark pixels
    out2 = tmp_path / "nograss.png"
    r = CliRunner().invoke(cli, ["view", "--output", str(out2), "--size", "160x90", "--camera", "60,60",
                                 "--no-grass", "--stats", "--no-horizon"])
    assert r.exit_code == 0, r.output
    assert "instances" in r.output
    memory = next(line for line in r.output.splitlines() if line.startswith("gpu memory"))
    assert "terrain-near" in memory and "horizon" not in memory  # --no-horizon: none made
    assert not np.array_equal(read_png(out2), img)


@pytest.mark.parametrize("args, message", [
    (["--size", "12x9000"], "--size"),
    (["--size", "big"], "--size"),
    (["--camera", "1,2,3,4"], "--camera"),
    (["--tile", "70,3"], "--tile"),
    (["--frames", "0"], "--frames"),
    (["--tile", "5,5"], "no tile 5,5"),
])
def test_view_errors_exit_2(tmp_path, args, message):
    r = CliRunner().invoke(cli, ["view", "--output", str(tmp_path / "x.png"), *args])
    assert r.exit_code == 2, r.output
    assert "error:" in r.output and message in r.output
    assert "Traceback" not in r.output


@pytest.mark.realdata
def test_real_tile_continent_4229_names_missing_models(tmp_path, realdata):
    root = loose_world(tmp_path, realdata, "continent4229.adt", "continent", 42, 29, wdt="continent.wdt")
    out = tmp_path / "continent.png"
    r = CliRunner().invoke(cli, ["view", "--data", str(root), "--map", "continent", "--tile", "42,29",
                                 "--build", "3.3.5", "--output", str(out), "--size", "160x120", "--json",
                                 "--no-placeholders"])
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    assert res["tiles"] == [[42, 29]]
    # no grass model of this tile is in the data: each is named, the terrain is still drawn
    assert res["missing_models"]
    assert all(m.lower().startswith("world\\nodxt\\detail\\") for m in res["missing_models"])
    assert "missing grass models" in r.stderr and res["missing_models"][0] in r.stderr
    assert res["resident_grass_instance_count"] == 0 and res["frame"]["grass_instance_count"] == 0
    assert len(res["missing_doodad_models"]) > 10  # MDDF models are not in the folder either
    assert len(res["missing_textures"]) == 16  # MTEX names (no tileset BLPs either)
    assert drawn_fraction(read_png(out)) > 0.3


@pytest.mark.realdata
def test_real_tile_azeroth_38_46(tmp_path, realdata):
    root = loose_world(tmp_path, realdata, "Azeroth_38_46.adt", "Azeroth", 38, 46)
    out = tmp_path / "azeroth.png"
    r = CliRunner().invoke(cli, ["view", "--data", str(root), "--output", str(out), "--size", "160x120",
                                 "--json"])
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    assert res["map"] == "Azeroth" and res["tiles"] == [[38, 46]]
    assert res["missing_models"]  # effect 453's grass models are not in the folder
    x, y, z = res["camera"]
    assert 170.0 < z - 1.7 < 446.0  # on the terrain (heights 170.881 .. 445.756)
    assert drawn_fraction(read_png(out)) > 0.3


@pytest.mark.realdata
def test_real_tile_placeholders_draw_missing_grass_models(tmp_path, realdata):
    root = loose_world(tmp_path, realdata, "continent4229.adt", "continent", 42, 29, wdt="continent.wdt")
    out = tmp_path / "continent.png"
    args = ["view", "--data", str(root), "--map", "continent", "--tile", "42,29", "--build", "3.3.5",
            "--size", "160x120", "--json", "--camera", "1595,-5440"]
    plain = json.loads(CliRunner().invoke(cli, [*args, "--no-placeholders", "--output",
                                                str(tmp_path / "plain.png")]).stdout)
    r = CliRunner().invoke(cli, [*args, "--placeholders", "--output", str(out)])
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    # still named as missing, but now drawn: the bundle's 8,887 instances are resident
    assert res["missing_models"] == plain["missing_models"] and len(res["missing_models"]) == 16
    assert "stand-ins" in r.stderr
    assert plain["resident_grass_instance_count"] == 0 and plain["frame"]["grass_instance_count"] == 0
    assert res["resident_grass_instance_count"] == 8887 and res["frame"]["grass_instance_count"] > 0
    assert (read_png(out) != read_png(tmp_path / "plain.png")).any()
