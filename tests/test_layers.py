"""``export layers``: the images and layers.json of a tile, checked against the ADT they came from
(orientation, values, heights' scale and offset), on the sample world and a real 3.3.5 tile."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from PIL import Image

from conftest import require_tool
from wowgrass.cli.main import cli
from wowgrass.formats.adt import TILE_SIZE, ZEROPOINT
from wowgrass.game.tiles import read_adt

REAL = os.environ.get("WOWGRASS_REALDATA")


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def img(path) -> np.ndarray:
    return np.asarray(Image.open(path)).astype(np.int64)


def check_tile(folder: Path, adt, catalog_rows=None):
    doc = json.loads((folder / "layers.json").read_text())
    assert doc["tile"] == [adt.col, adt.row]
    eff, noe, dm, tex = (img(folder / n) for n in ("effect.png", "no_effect_doodad.png", "doodad_mapping.png",
                                                    "texture.png"))
    if (folder / "effect_high.png").exists():   # ids past 16 bits: their high bits beside
        eff = eff + (img(folder / "effect_high.png") << 16)
    assert eff.shape == noe.shape == dm.shape == tex.shape == (128, 128)
    assert Image.open(folder / "effect.png").mode == "I;16"
    # every cell against its chunk: pixel (x, y) = chunk IndexX*8 + col, IndexY*8 + row
    for k in range(256):
        ix, iy = (int(v) for v in adt.index_xy[k])
        block = (slice(iy * 8, iy * 8 + 8), slice(ix * 8, ix * 8 + 8))
        assert (noe[block] == adt.no_effect_doodad[k] * 255).all()
        assert (dm[block] == adt.doodad_mapping[k]).all()
        layer = adt.doodad_mapping[k].astype(int)
        want = np.where(layer < adt.n_layers[k], adt.layer_effect[k][np.minimum(layer, 3)].astype(np.int64), 0)
        want = np.where((want == 0xFFFF) | (want == 0xFFFFFFFF), 0, want)
        assert (eff[block] == want).all(), k
    assert doc["no_effect_doodad_cell_count"] == int(adt.no_effect_doodad.sum()) == int((noe == 255).sum())
    # orientation against world coordinates: a cell centre's chunk by position
    north, west = doc["world"]["north_x"], doc["world"]["west_y"]
    assert north == ZEROPOINT - adt.row * TILE_SIZE and west == ZEROPOINT - adt.col * TILE_SIZE
    for px, py in ((0, 0), (127, 0), (0, 127), (77, 31)):
        x, y = north - (py + 0.5) * TILE_SIZE / 128, west - (px + 0.5) * TILE_SIZE / 128
        k = int(np.argmin(np.where((adt.positions[:, 0] >= x) & (adt.positions[:, 1] >= y),
                                   (adt.positions[:, 0] - x) + (adt.positions[:, 1] - y), np.inf)))
        assert (int(adt.index_xy[k][0]), int(adt.index_xy[k][1])) == (px // 8, py // 8)
    # heights: 16-bit with the JSON's scale and offset, within one step of the ADT's vertices
    hv = img(folder / "heights.png")
    meta = doc["files"]["heights.png"]
    h = meta["offset"] + hv * meta["scale"]
    for px, py in ((0, 0), (128, 128), (64, 9), (3, 100)):
        x, y = north - py * TILE_SIZE / 128, west - px * TILE_SIZE / 128
        k = (min(py // 8, 15)) * 16 + min(px // 8, 15)
        k = int(np.flatnonzero((adt.index_xy[:, 0] == min(px // 8, 15)) & (adt.index_xy[:, 1] == min(py // 8, 15)))[0])
        assert abs(h[py, px] - adt.height_at(k, x, y)) <= meta["scale"] + 1e-3
    # alpha maps: weights of the textures sum to 255 where the chunk has layers
    total = sum(img(folder / a["file"]) for a in doc["alpha"])
    assert total.shape == (1024, 1024)
    assert np.abs(total - 255).max() <= 2
    for a in doc["alpha"]:
        assert a["file"].startswith("alpha.") and a["texture"] == adt.textures[a["texture_index"]]
    # the dominant texture is a texture the cell's chunk has
    for k in range(0, 256, 17):
        ix, iy = (int(v) for v in adt.index_xy[k])
        used = set(adt.layer_texture[k][: adt.n_layers[k]].tolist())
        assert set(np.unique(tex[iy * 8:iy * 8 + 8, ix * 8:ix * 8 + 8]).tolist()) <= used | {65535}
    return doc, eff


def test_sample_world_layers(tmp_path):
    from wowgrass.grass.bake import default_data
    from wowgrass.game.data import open_data

    r = run("export", "layers", "-o", tmp_path, "--json", "-q")
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    assert res["tile_count"] == len(res["tiles"]) >= 1
    from wowgrass.grass.bake import load_catalog

    data_path, name = default_data()
    with open_data(data_path) as data:
        catalog = load_catalog(data=data)
        for t in res["tiles"]:
            c, rw = t["tile"]
            raw = data.read(f"World\\Maps\\{name}\\{name}_{c}_{rw}.adt")
            doc, eff = check_tile(Path(t["folder"]), read_adt(raw))
            for e, info in doc["effects"].items():   # the palette: every id in the image, with its models
                assert info["cell_count"] == int((eff == int(e)).sum())
                row = catalog.row(int(e))
                assert (info["models"], info["density"]) == (row["models"], row["density"])
            assert any(any(i["models"]) for i in doc["effects"].values())


def test_jobs_write_the_same_files(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert run("export", "layers", "-o", a, "-q").exit_code == 0
    r = run("export", "layers", "-o", b, "-q", "--jobs", "2")
    assert r.exit_code == 0, r.output
    fa = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert fa == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file()) and fa
    for p in fa:
        assert (a / p).read_bytes() == (b / p).read_bytes(), p


def test_errors(tmp_path):
    (tmp_path / "f").write_text("x")
    r = run("export", "layers", "-o", tmp_path / "f")
    assert r.exit_code == 2 and "is a file" in r.output
    r = run("export", "layers", "-o", tmp_path / "o", "--tile", "5,5")
    assert r.exit_code == 2 and "error:" in r.output and "Traceback" not in r.output


def test_effect_ids_past_16_bits_are_written_whole(tmp_path):
    # issue 49.9: 3.3.5 tables have ids above 65535 (`effects new-set` hands them out); the tile was
    # refused ("does not fit a 16-bit image") and the command said it "could not be read"
    from wowgrass.edit.adt_edit import assign_effect
    from wowgrass.game.data import open_data
    from wowgrass.grass.bake import default_data

    data_path, name = default_data()
    gp = f"World\\Maps\\{name}\\{name}_31_32.adt"
    with open_data(data_path) as data:
        raw = data.read(gp)
    wide, _ = assign_effect(raw, gp, "*", 73190)
    layer = tmp_path / "proj"
    (layer / "World" / "Maps" / name).mkdir(parents=True)
    (layer / "World" / "Maps" / name / f"{name}_31_32.adt").write_bytes(wide)
    out = tmp_path / "out"
    r = run("export", "layers", "--data", data_path, "--data", layer, "-o", out, "--json", "-q")
    assert r.exit_code == 0, r.output
    folder = out / f"{name}_31_32"
    doc, eff = check_tile(folder, read_adt(wide))          # effect.png + 65536 * effect_high.png: the ids
    assert (eff == 73190).any() and doc["effects"]["73190"]["cell_count"] == int((eff == 73190).sum())
    assert "effect_high.png" in doc["files"] and doc["files"]["effect_high.png"]["bits"] == 16
    assert not (out / f"{name}_32_32" / "effect_high.png").exists()    # ids that fit: one image, as before

    # a tile that cannot be written is said so, not "could not be read"
    (out / f"{name}_32_32").rename(tmp_path / "moved")
    (out / f"{name}_32_32").write_text("a file where the tile's folder goes")
    r = run("export", "layers", "--data", data_path, "--data", layer, "-o", out)
    assert r.exit_code == 2 and "1 tile could not be written" in r.stderr and "could not be read" not in r.stderr
    assert "Traceback" not in r.output


@pytest.mark.parametrize("fault", ["EROFS", "ENOSPC"])
def test_an_output_that_takes_nothing_is_refused_first(tmp_path, fault):
    # issue 49.14: on a read-only file system every tile was read and failed on its own ("no tile could
    # be read"); docs/cli.md: the destination is checked before any work, one error naming it
    import faults

    out = tmp_path / "ro"
    out.mkdir()
    with faults.failing_folder(out, fault):
        r = run("export", "layers", "-o", out / "layers")
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    if fault == "EROFS":
        assert r.stderr == f"error: cannot write {out / 'layers'}: read-only file system\n"
        assert faults.tree(out) == []
    else:     # a full disk takes the probe's empty file: what fails is the first image, said as written
        assert "error: no tile could be written" in r.stderr and "could not be read" not in r.stderr


@pytest.mark.skipif(not REAL, reason="WOWGRASS_REALDATA is not set (real client files)")
def test_real_tile_layers(tmp_path):
    real = Path(REAL)
    world = tmp_path / "data"
    maps = world / "World" / "Maps" / "continent"
    maps.mkdir(parents=True)
    (world / "DBFilesClient").mkdir()
    (maps / "continent.wdt").symlink_to(real / "adt/continent.wdt")
    (maps / "continent_42_29.adt").symlink_to(real / "adt/continent4229.adt")
    for n in ("GroundEffectTexture", "GroundEffectDoodad"):
        (world / "DBFilesClient" / f"{n}.dbc").symlink_to(real / f"dbc/3.3.5/{n}.dbc")
    out = tmp_path / "out"
    r = run("export", "layers", "--data", world, "--tile", "42,29", "-o", out, "--json", "-q")
    assert r.exit_code == 0, r.output
    adt = read_adt((real / "adt/continent4229.adt").read_bytes(), big_alpha=False)
    doc, eff = check_tile(out / "continent_42_29", adt)
    # the README's facts: 340 noEffectDoodad bits, 16 MTEX names, the effects in the 3.3.5 table
    assert doc["no_effect_doodad_cell_count"] == 340 and len(doc["textures"]) == 16
    assert set(int(e) for e in doc["effects"]) <= {int(v) for v in np.unique(adt.layer_effect)}
    assert doc["effects"]["40199"]["density"] == 3 if "40199" in doc["effects"] else True
    assert not any(e.get("missing") for e in doc["effects"].values())


RECIPE = Path(__file__).resolve().parents[1] / "docs" / "recipes" / "blender_scatter_layers.py"


def scatter(tmp_path, folder: Path, *args) -> tuple[dict, np.ndarray, np.ndarray, np.ndarray]:
    """The recipe in Debian's Blender on one tile's folder, its instances checked against the
    layers: (report, ids per cell, noEffectDoodad per cell, instances per cell). Every instance
    stands in a cell of the chosen effect without noEffectDoodad, every such cell gets some, about
    the effect's density (x --factor) a cell, on the terrain's heights."""
    import subprocess

    blender = require_tool("blender", "Debian: apt-get install blender python3-numpy (.ci/run installs it)")
    doc = json.loads((folder / "layers.json").read_text())
    report = tmp_path / "scatter.json"
    proc = subprocess.run([blender, "-b", "--factory-startup", "--python", str(RECIPE), "--", str(folder),
                           "--report", str(report), *map(str, args)], capture_output=True, text=True, timeout=600)
    assert report.is_file(), proc.stdout[-3000:] + proc.stderr[-3000:]
    rep = json.loads(report.read_text())
    eff, noe = img(folder / "effect.png"), img(folder / "no_effect_doodad.png")
    if (folder / "effect_high.png").exists():
        eff = eff + (img(folder / "effect_high.png") << 16)
    effect = rep["effect"]
    factor = float(args[args.index("--factor") + 1]) if "--factor" in args else 1.0
    density = doc["effects"][str(effect)]["density"] * factor
    assert density > 0 and noe.any() and (noe[eff == effect] > 0).any()  # the case the recipe must handle
    pos = np.array(rep["positions"]).reshape(-1, 3)
    assert len(pos), "no instance: the recipe matched no cell"
    cell = TILE_SIZE / 128
    fx, fy = (doc["world"]["west_y"] - pos[:, 1]) / cell, (doc["world"]["north_x"] - pos[:, 0]) / cell
    px, py = np.floor(fx).astype(int), np.floor(fy).astype(int)
    assert px.min() >= 0 and py.min() >= 0 and px.max() < 128 and py.max() < 128
    on_edge = np.minimum(np.abs(fx - np.round(fx)), np.abs(fy - np.round(fy))) < 1e-3  # float32 at a boundary
    wrong = ((eff[py, px] != effect) | (noe[py, px] > 0)) & ~on_edge
    assert not wrong.any(), f"{wrong.sum()} of {len(pos)} instances in cells the layers exclude"
    eligible = (eff == effect) & (noe == 0)
    counts = np.zeros((128, 128), np.int64)
    np.add.at(counts, (py, px), 1)
    assert rep["eligible_cell_count"] == int(eligible.sum())
    assert (counts[eligible] > 0).mean() > 0.99
    per_cell = counts[eligible].mean()   # surface area: slopes hold a little more than the flat cell
    assert density * 0.95 < per_cell < density * 1.25, per_cell
    # on the terrain: heights.png's bilinear height under each instance, within a few of its steps
    meta = doc["files"]["heights.png"]
    h = img(folder / "heights.png") * meta["scale"] + meta["offset"]
    gx, gy = np.clip(fx, 0, 127.999), np.clip(fy, 0, 127.999)
    x0, y0 = gx.astype(int), gy.astype(int)
    tx, ty = gx - x0, gy - y0
    ground = (h[y0, x0] * (1 - tx) * (1 - ty) + h[y0, x0 + 1] * tx * (1 - ty) + h[y0 + 1, x0] * (1 - tx) * ty
              + h[y0 + 1, x0 + 1] * tx * ty)
    # a quad's two triangles (either diagonal) differ from the bilinear surface by at most a quarter
    # of its twist
    twist = np.abs(h[y0, x0] - h[y0, x0 + 1] - h[y0 + 1, x0] + h[y0 + 1, x0 + 1])
    assert (np.abs(pos[:, 2] - ground) <= twist / 4 + 0.01).all()
    return rep, eff, noe, counts


def test_blender_recipe_scatters_where_the_layers_say(tmp_path):
    """docs/recipes/blender_scatter_layers.py in Debian's Blender (geometry nodes over a tile's
    layers): see scatter(); the top-down picture puts the noEffectDoodad cells where
    no_effect_doodad.png has them."""
    r = run("export", "layers", "-o", tmp_path / "layers", "--tile", "32,32", "--json", "-q")
    assert r.exit_code == 0, r.output
    folder = Path(json.loads(r.stdout)["tiles"][0]["folder"])
    picture = tmp_path / "scatter.png"
    _rep, _eff, noe, _counts = scatter(tmp_path, folder, "--render", picture, "--render-size", 512)
    # the picture: one pixel block a cell, red exactly where no_effect_doodad.png is set
    shot = np.asarray(Image.open(picture).convert("RGB")).astype(int)[2::4, 2::4]
    red = (shot[..., 0] > 150) & (shot[..., 1] < 80)
    assert (red == (noe > 0)).mean() > 0.995


def test_blender_recipe_reads_effect_ids_past_16_bits(tmp_path):
    # issue 49.9: export layers writes an id past 16 bits as effect.png (low bits) + effect_high.png;
    # the recipe read effect.png alone, so effect 73190 matched no cell (and 7654, its low bits, would
    # have taken its place). The sample's effect 1002 becomes 73190 (a table row of its own, the same
    # density and models) and 1001 becomes 7654 on tile 32,32.
    from wowgrass.edit.adt_edit import assign_effect
    from wowgrass.formats.dbc import DbcFile, write_dbc
    from wowgrass.game.data import open_data
    from wowgrass.grass.bake import default_data

    wide, low = 73190, 73190 & 0xFFFF
    data_path, name = default_data()
    gp = f"World\\Maps\\{name}\\{name}_32_32.adt"
    with open_data(data_path) as data:
        raw = data.read(gp)
        table = DbcFile.from_bytes(data.read("DBFilesClient\\GroundEffectTexture.dbc"))
    tile = read_adt(raw)
    grass = tile.layer_effect[:, 0]
    for old, new in ((1002, wide), (1001, low)):
        raw, _ = assign_effect(raw, gp, "*SampleGrass*", new, chunks=grass == old)
    rows = np.array(table.raw)
    rows = np.concatenate([rows, rows[rows[:, 0] == 1002]])
    rows[-1, 0] = wide
    layer = tmp_path / "proj"
    (layer / "World" / "Maps" / name).mkdir(parents=True)
    (layer / "World" / "Maps" / name / f"{name}_32_32.adt").write_bytes(raw)
    (layer / "DBFilesClient").mkdir()
    (layer / "DBFilesClient" / "GroundEffectTexture.dbc").write_bytes(write_dbc(rows, bytes(table.string_block)))
    r = run("export", "layers", "--data", data_path, "--data", layer, "--tile", "32,32", "-o", tmp_path / "layers",
            "--json", "-q")
    assert r.exit_code == 0, r.output
    folder = Path(json.loads(r.stdout)["tiles"][0]["folder"])
    assert (folder / "effect_high.png").exists()
    rep, eff, noe, counts = scatter(tmp_path, folder, "--effect", wide, "--factor", 0.25)
    assert rep["effect"] == wide and (eff == low).sum() > 1000 and counts[eff == low].sum() == 0
