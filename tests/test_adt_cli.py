import json

import numpy as np
import pytest
from adt_build import generated_tile
from click.testing import CliRunner
from PIL import Image

from wowgrass.cli.main import cli
from wowgrass.formats.adt import write_adt
from wowgrass.formats.wdt import write_wdt


@pytest.fixture(scope="module")
def tile():
    return generated_tile(1, seed=4)


@pytest.fixture()
def adt_file(tmp_path, tile):
    p = tmp_path / "Test_31_47.adt"
    p.write_bytes(write_adt(tile))
    return p


@pytest.fixture()
def data_dir(tmp_path):
    """A loose data folder with a big-alpha (compressed) tile and its WDT."""
    t = generated_tile(3, seed=6, col=20, row=21)
    folder = tmp_path / "Data" / "World" / "Maps" / "Test"
    folder.mkdir(parents=True)
    (folder / "Test_20_21.adt").write_bytes(write_adt(t))
    main = np.zeros((64, 64), bool)
    main[21, 20] = True
    (folder / "Test.wdt").write_bytes(write_wdt(main, flags=0x4))
    return tmp_path / "Data", t


def run(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_help():
    for args in (["adt", "--help"], ["adt", "info", "--help"], ["adt", "image", "--help"]):
        r = run(*args)
        assert r.exit_code == 0 and "Usage" in r.output


def test_info_text(adt_file, tile):
    r = run("adt", "info", str(adt_file))
    assert r.exit_code == 0, r.output
    assert "tile 31,47" in r.output and "4-bit" in r.output and "MCNK×256" in r.output
    exists = np.arange(4)[None, :] < tile.n_layers[:, None]
    assert f"noEffectDoodad cells: {int(tile.no_effect_doodad.sum())}" in r.output
    assert f"({int(exists.sum())} layers)" in r.output


def test_info_json(adt_file, tile):
    r = run("adt", "info", str(adt_file), "--json")
    assert r.exit_code == 0, r.output
    s = json.loads(r.output)
    assert s["tile"] == {"col": 31, "row": 47}
    exists = np.arange(4)[None, :] < tile.n_layers[:, None]
    counts = {e["id"]: e["layer_count"] for e in s["effect_ids"]}
    ids, n = np.unique(tile.layer_effect[exists], return_counts=True)
    assert counts == dict(zip(ids.tolist(), n.tolist()))
    assert s["alpha_encodings"] == {"4-bit": int((tile.alpha_encoding == 1).sum())}
    assert s["hole_chunk_count"] == int((tile.holes != 0).sum())
    assert s["hole_cell_count"] == int(tile.hole_cells().sum())
    assert np.isclose(s["height"]["min"], tile.abs_heights.min(), atol=1e-3)
    assert s["mcnk"]["layers_per_chunk"] == {str(k): int((tile.n_layers == k).sum()) for k in range(1, 5)}
    assert [c["id"] for c in s["chunks"]][:3] == ["MVER", "MHDR", "MCIN"]


def test_info_from_data_folder_uses_wdt_big_alpha(data_dir):
    folder, t = data_dir
    r = run("adt", "info", "--data", str(folder), "--map", "Test", "--tile", "20,21", "--json")
    assert r.exit_code == 0, r.output
    s = json.loads(r.output)
    assert s["big_alpha"] is True and s["source"]["wdt"]["flags"] == 4
    assert s["alpha_encodings"] == {"compressed": int((t.alpha_encoding == 3).sum())}
    assert s["tile"] == {"col": 20, "row": 21}


def test_sibling_wdt_is_found_for_a_file(data_dir):
    folder, _ = data_dir
    adt = folder / "World" / "Maps" / "Test" / "Test_20_21.adt"
    s = json.loads(run("adt", "info", str(adt), "--json").output)
    assert s["big_alpha"] is True
    # --small-alpha overrides the WDT: the same layers are now read as 4-bit maps
    s = json.loads(run("adt", "info", str(adt), "--json", "--small-alpha").output)
    assert s["big_alpha"] is False and list(s["alpha_encodings"]) == ["4-bit"]


@pytest.mark.parametrize("kind", ["height", "layers", "effects", "mask"])
def test_image(adt_file, tmp_path, kind):
    out = tmp_path / f"{kind}.png"
    r = run("adt", "image", str(adt_file), "--kind", kind, "-o", str(out), "--size", "256")
    assert r.exit_code == 0, r.output
    img = np.asarray(Image.open(out))
    assert img.shape == (256, 256, 3)
    assert img.std() > 5          # not a flat picture


def test_mask_image_marks_masked_cells_and_holes(adt_file, tmp_path, tile):
    out = tmp_path / "mask.png"
    assert run("adt", "image", str(adt_file), "--kind", "mask", "-o", str(out)).exit_code == 0
    img = np.asarray(Image.open(out)).astype(int)
    # sample every cell's centre pixel (1024 px / 128 cells = 8 px per cell)
    centres = img[4::8, 4::8]
    red = (centres[..., 0] > centres[..., 1] + 60)
    black = centres.sum(axis=-1) == 0
    from wowgrass.game.tiles import tile_grid

    holes = tile_grid(tile, tile.hole_cells())
    masked = tile_grid(tile, tile.no_effect_doodad) & ~holes
    assert np.array_equal(black, holes)
    assert np.array_equal(red, masked)


def test_layers_image_legend_names_each_texture_in_distinct_colours(adt_file, tmp_path, tile):
    out = tmp_path / "layers.png"
    r = run("adt", "image", str(adt_file), "--kind", "layers", "-o", str(out), "--size", "128")
    assert r.exit_code == 0, r.output
    legend = [ln.split() for ln in r.stdout.splitlines() if ln.strip().startswith("#")]
    used = sorted(set(tile.layer_texture[tile.layer_texture >= 0].tolist()))
    assert [row[1] for row in legend] == [tile.textures[i] for i in used]
    colours = [row[0] for row in legend]
    assert len(set(colours)) == len(colours)
    # a pixel inside a single-layer chunk shows exactly its texture's legend colour
    single = np.flatnonzero(tile.n_layers == 1)
    assert len(single)
    c = int(single[0])
    cy, cx = divmod(c, 16)
    px = np.asarray(Image.open(out))[cy * 8 + 4, cx * 8 + 4]
    want = colours[used.index(int(tile.layer_texture[c, 0]))]
    assert "#%02x%02x%02x" % tuple(int(v) for v in px) == want


def test_errors(tmp_path):
    bad = tmp_path / "bad.adt"
    bad.write_bytes(b"REVM\x04\x00\x00\x00\x11\x00\x00\x00")
    r = CliRunner().invoke(cli, ["adt", "info", str(bad)])
    assert r.exit_code == 2 and "error:" in r.output and "version 17" in r.output
    assert "Traceback" not in r.output
    r = CliRunner().invoke(cli, ["adt", "info"])
    assert r.exit_code == 2 and "error:" in r.output
    r = CliRunner().invoke(cli, ["adt", "info", "--data", str(tmp_path), "--map", "X", "--tile", "nope"])
    assert r.exit_code == 2 and "COL,ROW" in r.output
    r = CliRunner().invoke(cli, ["adt", "info", "--data", str(tmp_path), "--map", "X", "--tile", "1,2"])
    assert r.exit_code == 2 and "error:" in r.output and "X_1_2.adt" in r.output
    out = tmp_path / "x.png"
    r = CliRunner().invoke(cli, ["adt", "image", str(bad), "-o", str(out)])
    assert r.exit_code == 2 and not out.exists()


def _blueish(img, where=None):
    img = img.astype(int)
    blue = (img[..., 2] > img[..., 0] + 25) & (img[..., 2] > img[..., 1] + 10)
    return blue if where is None else blue[where]


@pytest.mark.realdata
def test_height_image_is_a_terrain_ramp_with_a_legend_in_yards(realdata, tmp_path):
    """Issue 25: a mountain tile (170.9 .. 445.8 yd) looked like sea (the ramp started at deep blue)."""
    out = tmp_path / "h.png"
    r = run("adt", "image", str(realdata / "adt" / "Azeroth_38_46.adt"), "--kind", "height", "--size", "256",
            "-o", str(out), "--json")
    assert r.exit_code == 0, r.output
    js = json.loads(r.stdout)
    assert js["height"]["unit"] == "yards"
    assert js["height"]["min"] == pytest.approx(170.881, abs=0.01) and js["height"]["max"] == pytest.approx(445.756, abs=0.01)
    legend = js["legend"]
    assert len(legend) >= 3 and all(item["label"].endswith(" yd") for item in legend)
    assert legend[0]["label"].startswith("170.9") and legend[-1]["label"].endswith("445.8 yd")
    assert sum(item["count"] for item in legend) == 256 * 256
    img = np.asarray(Image.open(out))
    assert _blueish(img).mean() == 0               # no sea on a mountain
    text = run("adt", "image", str(realdata / "adt" / "Azeroth_38_46.adt"), "--kind", "height", "--size", "256",
               "-o", str(out)).stdout
    assert "170.9" in text and "445.8 yd" in text


@pytest.mark.realdata
def test_height_image_is_blue_only_below_sea_level(realdata, tmp_path):
    from wowgrass.game.tiles import load_tile

    adt = realdata / "adt" / "continent4229.adt"      # -515 .. 263 yd: a coast
    out = tmp_path / "c.png"
    r = run("adt", "image", str(adt), "--kind", "height", "--size", "128", "-o", str(out), "--json")
    assert r.exit_code == 0, r.output
    img = np.asarray(Image.open(out))
    t = load_tile(adt)[0]
    from wowgrass.game.tiles import height_picture_z

    z = height_picture_z(t, 128)
    blue = _blueish(img)
    assert blue[z < -5].mean() > 0.95 and blue[z > 5].mean() < 0.02


@pytest.mark.parametrize("kind", ["height", "effects"])
def test_legend_strip_draws_every_entry_below_the_unchanged_picture(adt_file, tmp_path, kind):
    """--legend: the tile's picture as without it, then a strip with a swatch of each legend colour."""
    plain, with_legend = tmp_path / "p.png", tmp_path / "l.png"
    assert run("adt", "image", str(adt_file), "--kind", kind, "-o", str(plain), "--size", "256").exit_code == 0
    r = run("adt", "image", str(adt_file), "--kind", kind, "-o", str(with_legend), "--size", "256", "--legend",
            "--json")
    assert r.exit_code == 0, r.output
    js = json.loads(r.stdout)
    a, b = np.asarray(Image.open(plain)), np.asarray(Image.open(with_legend))
    assert b.shape[1] == 256 and b.shape[0] > 256 + 16 and js["size"] == [256, b.shape[0]]
    assert np.array_equal(a, b[:256])
    strip = b[256:].reshape(-1, 3)
    colours = {tuple(int(strip_px) for strip_px in px) for px in np.unique(strip, axis=0)}
    for item in js["legend"][:32]:
        rgb = tuple(int(item["rgb"][k:k + 2], 16) for k in (1, 3, 5))
        assert rgb in colours, item
    assert (strip.min(-1) < 60).mean() > 0.002  # the labels' text
