"""``wowgrass m2`` and ``wowgrass blp`` commands through click's CliRunner."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from PIL import Image

from wowgrass.cli.main import cli
from wowgrass.formats.blp import BlpImage, write_blp
from wowgrass.formats.m2 import make_vertices, write_m2

TEX = "World\\NoDXT\\Detail\\CliGrass.blp"


def run(*args):
    result = CliRunner().invoke(cli, list(args))
    return result


def grass_files(folder, version=264):
    pos = [(-0.5, 0, 0), (0.5, 0, 0), (0.5, 0, 1), (-0.5, 0, 1)]
    v = make_vertices(pos, uv0=[(0, 1), (1, 1), (1, 0), (0, 0)])
    m2, skin = write_m2(v, [0, 1, 2, 0, 2, 3], name="CliGrass", textures=[TEX], version=version)
    d = folder / "World" / "NoDXT" / "Detail"
    d.mkdir(parents=True, exist_ok=True)
    (d / "CliGrass.m2").write_bytes(m2)
    if skin:
        (d / "CliGrass00.skin").write_bytes(skin)
    rgba = np.zeros((16, 16, 4), np.uint8)
    rgba[..., 1] = 200
    rgba[..., 3] = np.where(np.arange(16)[None, :] < 8, 255, 0)
    (d / "CliGrass.blp").write_bytes(write_blp(rgba, "dxt1"))
    return d


@pytest.mark.parametrize("args", [["m2", "--help"], ["m2", "info", "--help"], ["m2", "export", "--help"],
                                  ["blp", "--help"], ["blp", "info", "--help"], ["blp", "convert", "--help"]])
def test_help(args):
    r = run(*args)
    assert r.exit_code == 0 and "Usage" in r.output


def test_m2_info_file_and_json(tmp_path):
    d = grass_files(tmp_path)
    r = run("m2", "info", str(d / "CliGrass.m2"))
    assert r.exit_code == 0, r.output
    assert "version 264" in r.output and "CliGrass00.skin" in r.output and TEX in r.output
    r = run("m2", "info", str(d / "CliGrass.m2"), "--json")
    out = json.loads(r.output)
    assert out["version"] == 264 and out["vertex_count"] == 4 and out["view"]["triangle_count"] == 2
    assert out["materials"] == [{"flags": 4, "blend": 1}] and (out["z_min"], out["z_max"]) == (0.0, 1.0)


def test_m2_info_without_skin(tmp_path):
    d = grass_files(tmp_path)
    (d / "CliGrass00.skin").unlink()
    r = run("m2", "info", str(d / "CliGrass.m2"), "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["view"] is None


def test_m2_info_with_data(tmp_path):
    grass_files(tmp_path)
    r = run("m2", "info", "--data", str(tmp_path), "World\\NoDXT\\Detail\\CliGrass.m2", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["view"]["skin"] == "World\\NoDXT\\Detail\\CliGrass00.skin"


@pytest.mark.parametrize("use_data", [False, True])
def test_m2_export(tmp_path, use_data):
    d = grass_files(tmp_path / "data")
    out = tmp_path / "out" / "grass.obj"
    out.parent.mkdir()  # -o into a folder that does not exist is an error
    if use_data:
        r = run("m2", "export", "--data", str(tmp_path / "data"), "World\\NoDXT\\Detail\\CliGrass.m2", "-o", str(out))
    else:
        r = run("m2", "export", str(d / "CliGrass.m2"), "-o", str(out))
    assert r.exit_code == 0, r.output
    text = out.read_text().splitlines()
    assert sum(1 for line in text if line.startswith("v ")) == 4
    assert sum(1 for line in text if line.startswith("f ")) == 2
    assert "v 0.500000 1.000000 -0.000000" in text or "v 0.500000 1.000000 0.000000" in text  # Y up
    mtl = (tmp_path / "out" / "grass.mtl").read_text()
    assert "map_Kd grass_CliGrass.png" in mtl and "map_d" in mtl
    png = np.asarray(Image.open(tmp_path / "out" / "grass_CliGrass.png"))
    assert png.shape == (16, 16, 4) and png[0, 0, 3] == 255 and png[0, 15, 3] == 0


def test_m2_export_real_rabbit_with_texture(realdata, tmp_path):
    folder = realdata / "m2" / "v264"
    out = tmp_path / "rabbit.obj"
    r = run("m2", "export", str(folder / "Rabbit.m2"), "-o", str(out), "--texture", str(folder / "RabbitSkin.blp"))
    assert r.exit_code == 0, r.output
    assert sum(1 for line in out.read_text().splitlines() if line.startswith("f ")) == 107
    assert Image.open(tmp_path / "rabbit_RabbitSkin.png").size == (128, 128)


def test_m2_errors(tmp_path):
    d = grass_files(tmp_path)
    bad = tmp_path / "bad.m2"
    bad.write_bytes((d / "CliGrass.m2").read_bytes()[:200])
    for args in (["m2", "info", str(bad)], ["m2", "info", str(tmp_path / "missing.m2")],
                 ["m2", "export", str(bad), "-o", str(tmp_path / "x.obj")]):
        r = run(*args)
        assert r.exit_code == 2 and "error:" in r.output and "Traceback" not in r.output, args
    (d / "CliGrass00.skin").unlink()
    r = run("m2", "export", str(d / "CliGrass.m2"), "-o", str(tmp_path / "x.obj"))
    assert r.exit_code == 2 and "CliGrass00.skin" in r.output
    assert not (tmp_path / "x.obj").exists()


def test_blp_info_and_convert(tmp_path):
    d = grass_files(tmp_path)
    blp = d / "CliGrass.blp"
    r = run("blp", "info", str(blp))
    assert r.exit_code == 0 and "BLP2 16×16 dxt1" in r.output
    info = json.loads(run("blp", "info", str(blp), "--json").output)
    assert info["encoding"] == "dxt1" and info["alpha_depth"] == 1 and info["mip_count"] == 5
    out = tmp_path / "g.png"
    r = run("blp", "convert", str(blp), "-o", str(out), "--mip", "1")
    assert r.exit_code == 0, r.output
    assert Image.open(out).size == (8, 8)
    # and back: PNG → BLP
    back = tmp_path / "g.blp"
    r = run("blp", "convert", str(out), "-o", str(back), "--encoding", "palette")
    assert r.exit_code == 0, r.output
    img = BlpImage.from_bytes(back.read_bytes())
    assert img.encoding == "palette" and img.width == 8


def test_blp_real_convert(realdata, tmp_path):
    out = tmp_path / "w.png"
    assert run("blp", "convert", str(realdata / "blp" / "WHITE8X8.blp"), str(out)).exit_code == 0
    assert (np.asarray(Image.open(out)) == (255, 251, 255, 255)).all()


def test_blp_errors(tmp_path):
    bad = tmp_path / "bad.blp"
    bad.write_bytes(b"BLP2" + b"\0" * 10)
    for args in (["blp", "info", str(bad)], ["blp", "convert", str(bad), str(tmp_path / "o.png")],
                 ["blp", "info", str(tmp_path / "none.blp")]):
        r = run(*args)
        assert r.exit_code == 2 and "error:" in r.output and "Traceback" not in r.output, args
    good = tmp_path / "g.blp"
    good.write_bytes(write_blp(np.zeros((4, 4, 4), np.uint8), "raw"))
    r = run("blp", "convert", str(good), str(tmp_path / "o.png"), "--mip", "9")
    assert r.exit_code == 2 and "mip 9" in r.output
    r = run("blp", "convert", str(good), str(tmp_path / "o.nosuchformat"))
    assert r.exit_code == 2 and "error:" in r.output
