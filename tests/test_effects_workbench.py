"""`wowgrass effects audit | assign | remap | exclude` on a sample world with faults put in by hand
(grass layers without an effect id, stale doodadMapping, an effect without a row, a row naming no
doodad, a missing model), on the real tiles, and the CLI's outputs, refusals and failing disks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from faults import failing_folder, tree

from wowgrass.cli.main import cli
from wowgrass.edit.adt_edit import assign_effect, patch_fields, read_tile
from wowgrass.edit.audit import EXCLUDED, STALE, UNASSIGNED, CATEGORY_RGB, audit_map, write_audit_picture
from wowgrass.edit.batch import exclude_map, iter_tiles
from wowgrass.edit.masks import CELLS, cell_slopes, chunks_to_grid, grid_to_chunks, liquid_mask
from wowgrass.formats.adt import AdtTile
from wowgrass.game.data import open_data
from wowgrass.game.maps import map_tiles
from wowgrass.samples import MAP_NAME, build_sample_world

GRASS = "Tileset\\Sample\\SampleGrass.blp"


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def game_file(root: Path, gp: str) -> Path:
    return root.joinpath(*gp.split("\\"))


def no_effect_bits(adt: bytes) -> int:
    """The noEffectDoodad bits set in a tile, by a struct walk of its MCNK headers (not wowgrass's reader)."""
    import struct

    total, at = 0, 0
    while at + 8 <= len(adt):
        magic, size = adt[at:at + 4], struct.unpack_from("<I", adt, at + 4)[0]
        if magic == b"KNCM":                               # MCNK, stored reversed
            total += sum(bin(b).count("1") for b in adt[at + 8 + 0x50:at + 8 + 0x58])
        at += 8 + size
    return total


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The 3.3.5 sample world (2x1 tiles), as MPQs and as a loose copy of every file."""
    base = tmp_path_factory.mktemp("wb")
    data = build_sample_world(base / "mpq", "3.3.5", (2, 1), seed=0)
    loose = base / "loose"
    with open_data(data) as g:
        for name in g.list("*"):
            p = game_file(loose, name)
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(g.read(name))
    return {"mpq": data, "loose": loose}


@pytest.fixture(scope="module")
def broken(world, tmp_path_factory):
    """A loose copy with every kind of fault the audit looks for; returns what was put in."""
    from wowgrass.formats.dbc import GROUND_EFFECT_TEXTURE, DbcFile, schema_for, write_dbc

    root = tmp_path_factory.mktemp("broken") / "Data"
    shutil.copytree(world["loose"], root)
    g = open_data(root)
    mt = map_tiles(g, MAP_NAME)
    (g0, _c0, raw0, t0), (g1, _c1, raw1, t1) = list(iter_tiles(g, mt))
    live0 = ~t0.no_effect_doodad & ~t0.hole_cells()
    # tile 0: the grass layers of chunks 0..63 lose their effect id (the patchy-grass case)
    chunks = np.arange(256) < 64
    new0, _ = assign_effect(raw0, g0, "SampleGrass", 0, chunks=chunks)
    exists = np.arange(4)[None, :] < t0.n_layers[:, None]
    grass = t0.textures.index(GRASS)
    ua_layers = exists & (t0.layer_texture == grass) & chunks[:, None]
    dm_tex = np.take_along_axis(t0.layer_texture, t0.doodad_mapping.reshape(256, 64).astype(np.int64), 1)
    ua_cells = (dm_tex.reshape(256, 8, 8) == grass) & chunks[:, None, None] & live0
    game_file(root, g0).write_bytes(new0)
    # tile 1: stale cells (a layer the chunk lacks), effect 4242 (no row) on dirt, 1007 (a row naming
    # no doodad) on rock
    t1 = read_tile(raw1, g1, big_alpha=True)
    dm = t1.doodad_mapping.copy()
    pick = np.zeros((256, 8, 8), bool)
    few = np.flatnonzero(t1.n_layers < 4)[:12]
    pick[few, 2:5, 1:6] = True
    dm[pick] = 3
    new1, _ = patch_fields(raw1, t1, doodad_mapping=dm)
    live1 = ~t1.no_effect_doodad & ~t1.hole_cells()
    stale = pick & live1
    new1, _ = assign_effect(new1, g1, "SampleDirt", 4242)
    new1, _ = assign_effect(new1, g1, "SampleRock", 1007)
    game_file(root, g1).write_bytes(new1)
    # what those edits did, counted from the tile's own fields (not from what the edits report)
    exists1 = np.arange(4)[None, :] < t1.n_layers[:, None]
    dirt = exists1 & (t1.layer_texture == t1.textures.index("Tileset\\Sample\\SampleDirt.blp"))
    rock = exists1 & (t1.layer_texture == t1.textures.index("Tileset\\Sample\\SampleRock.blp"))
    mapped = np.take_along_axis(np.where(exists1, t1.layer_texture, -1), np.minimum(dm, 3).reshape(256, 64).astype(
        np.int64), 1).reshape(256, 8, 8)
    valid = dm < t1.n_layers[:, None, None]
    dirt_cells = (mapped == t1.textures.index("Tileset\\Sample\\SampleDirt.blp")) & valid & live1 \
        & (t1.n_layers > 0)[:, None, None]
    tex_path = "DBFilesClient\\GroundEffectTexture.dbc"
    schema = schema_for(GROUND_EFFECT_TEXTURE, "3.3.5")
    rows = DbcFile.from_bytes(g.read(tex_path)).with_schema(schema).records
    extra = np.zeros(1, rows.dtype)
    extra["ID"], extra["DoodadID"], extra["DoodadWeight"], extra["Density"] = 1007, [99, 0, 0, 0], [16, 0, 0, 0], 4
    game_file(root, tex_path).write_bytes(write_dbc(np.concatenate([rows, extra]), b"\0"))
    game_file(root, "World\\NoDXT\\Detail\\ElwGra02.m2").unlink()
    return {"root": root, "world": world["loose"], "tiles": mt.tiles, "ua_layers": int(ua_layers.sum()), "ua_cells": int(ua_cells.sum()),
            "ua_mask": ua_cells, "stale": stale, "put_in": int(pick.sum()), "dirt_layers": int(dirt.sum()),
            "dirt_cells": int(dirt_cells.sum()), "rock_layers": int(rock.sum())}


# ----------------------------------------------------------------------------- the audit

def test_sample_world_audits_clean(world):
    with open_data(world["mpq"]) as g:
        a = audit_map(g, MAP_NAME)
    f = a.findings()
    assert f["unassigned_layer_count"] == 0 and f["missing_row_count"] == 0 and f["unresolved_row_count"] == 0
    assert f["missing_model_count"] == 0 and f["stale_cell_count"] == 0
    exp = sum(no_effect_bits(p.read_bytes()) for p in sorted(world["loose"].rglob("*.adt")))   # a struct walk
    assert a.cells["excluded"] == exp > 0
    grass = next(t for t in a.textures if t["path"] == GRASS)
    assert grass["carries_grass"] and {e["id"] for e in grass["effects"]} <= {1001, 1002, 1003}
    road = next(t for t in a.textures if t["path"].endswith("SampleRoad.blp"))
    assert not road["carries_grass"]                     # effect 1006 names no doodads


def test_audit_finds_every_fault(broken):
    a = audit_map(open_data(broken["root"]), MAP_NAME)
    grass = next(t for t in a.textures if t["path"] == GRASS)
    assert grass["unassigned_layers"] == broken["ua_layers"] > 0
    assert a.cells["unassigned"] == grass["unassigned_cells"] == broken["ua_cells"] > 0
    assert {c["tile"][0] for c in grass["unassigned_chunks"]} == {broken["tiles"][0][0]}
    assert grass["unassigned_chunk_count"] == 64
    assert a.cells["stale"] == int(broken["stale"].sum()) > 0
    assert a.missing_rows == [{"id": 4242, "layers": broken["dirt_layers"], "cells": broken["dirt_cells"]}]
    assert broken["dirt_layers"] > 0 and broken["dirt_cells"] > 0
    assert a.unresolved_rows == [{"id": 1007, "doodad_ids": [99]}]
    assert next(e for e in a.effects if e["id"] == 1007)["layers"] == broken["rock_layers"]
    assert [m["model"] for m in a.missing_models] == ["World\\NoDXT\\Detail\\ElwGra02.m2"]
    assert set(a.missing_models[0]["effects"]) == {1002}     # the only set using ElwGra02 here
    text = "\n".join(a.text_lines())
    assert "UNASSIGNED" in text and "NO GroundEffectTexture ROW" in text and "stale" in text


@pytest.mark.parametrize("damage", ["truncated", "missing"])
def test_unreadable_tables_are_a_finding_and_grass_is_not_counted(world, tmp_path, damage):
    root = tmp_path / "Data"
    shutil.copytree(world["loose"], root)
    dood = game_file(root, "DBFilesClient\\GroundEffectDoodad.dbc")
    if damage == "truncated":
        dood.write_bytes(dood.read_bytes()[:30])          # the header, and 10 bytes of 12-byte records
    else:
        dood.unlink()
    res = run("effects", "audit", "--data", root)
    assert res.exit_code == 2, res.output
    found = [line for line in res.stdout.splitlines() if line.strip().startswith("found:")]
    assert len(found) == 1 and "nothing wrong" not in found[0]
    assert ("cannot be read" if damage == "truncated" else "no GroundEffectDoodad.dbc") in found[0]
    assert "grow grass" in res.stdout and "? grow grass" in res.stdout
    assert res.stderr.strip().splitlines()[-1].startswith("error: the audit is incomplete")
    doc = json.loads(run("effects", "audit", "--data", root, "--json").stdout)
    assert doc["findings"]["unreadable_table_count"] == 1 and doc["tables"] is False
    assert doc["summary"]["grass_cell_count"] is None and doc["summary"]["unassigned_cell_count"] is None
    assert all(t["grass_cell_count"] is None for t in doc["per_tile"])


def test_audit_text_and_json_counts_add_up(broken, tmp_path):
    res = run("effects", "audit", "--data", broken["root"], "--json")
    doc = json.loads(res.stdout)
    s = doc["summary"]
    # every stale cell of the fixture names layer 3 of a chunk with fewer layers: hand-made, all invalid
    assert s["invalid_mapping_cell_count"] == s["stale_cell_count"] == int(broken["stale"].sum()) > 0
    text = run("effects", "audit", "--data", broken["root"]).stdout
    cells = next(line for line in text.splitlines() if line.strip().startswith("cells:"))
    assert f"{s['stale_cell_count']:,} stale doodadMapping ({s['invalid_mapping_cell_count']:,} name a layer " \
           f"the chunk lacks, 0 a layer showing less" in cells
    assert f"{s['no_row_cell_count']:,} on effect ids without a row" in cells
    n = len(doc["missing_models"])
    assert n > 0 and f"{n} doodad model{'s' * (n != 1)} missing" in text


def test_a_model_in_two_slots_is_missing_once(broken, tmp_path):
    from wowgrass.formats.dbc import GROUND_EFFECT_TEXTURE, DbcFile, schema_for, write_dbc

    root = tmp_path / "Data"
    shutil.copytree(broken["root"], root)
    tex = game_file(root, "DBFilesClient\\GroundEffectTexture.dbc")
    rows = DbcFile.from_bytes(tex.read_bytes()).with_schema(schema_for(GROUND_EFFECT_TEXTURE, "3.3.5")).records.copy()
    rows["DoodadID"][rows["ID"] == 1002] = [4, 5, 5, 10]      # ElwGra02 (doodad 5, deleted) in two slots
    tex.write_bytes(write_dbc(rows, b"\0"))
    doc = json.loads(run("effects", "audit", "--data", root, "--json").stdout)
    assert doc["missing_models"] == [{"model": "World\\NoDXT\\Detail\\ElwGra02.m2", "effects": [1002]}]
    e1002 = next(e for e in doc["effects"] if e["id"] == 1002)
    assert e1002["missing_models"] == ["World\\NoDXT\\Detail\\ElwGra02.m2"]
    text = run("effects", "audit", "--data", root).stdout
    assert "1 doodad model missing" in text and "not in the data: ElwGra02.m2;" not in text
    assert text.count("not in the data: ElwGra02.m2") == 1


def test_audit_jobs_give_the_same_result(broken):
    g = open_data(broken["root"])
    assert audit_map(g, MAP_NAME, jobs=2).to_json() == audit_map(g, MAP_NAME, jobs=1).to_json()


def test_audit_picture_colours_the_faults(broken, tmp_path):
    a = audit_map(open_data(broken["root"]), MAP_NAME)
    rgb, legend = a.picture(scale=1)
    assert rgb.shape == (CELLS, 2 * CELLS, 3)
    g = open_data(broken["root"])
    t0 = read_tile(g.read(f"World\\Maps\\{MAP_NAME}\\{MAP_NAME}_31_32.adt"), None, big_alpha=True)
    ua = chunks_to_grid(t0, broken["ua_mask"])
    assert (rgb[:, :CELLS][ua] == CATEGORY_RGB[UNASSIGNED]).all()
    t1 = read_tile(g.read(f"World\\Maps\\{MAP_NAME}\\{MAP_NAME}_32_32.adt"), None, big_alpha=True)
    st = chunks_to_grid(t1, broken["stale"])
    assert (rgb[:, CELLS:][st] == CATEGORY_RGB[STALE]).all()
    ex = chunks_to_grid(t1, t1.no_effect_doodad & ~t1.hole_cells())
    assert (rgb[:, CELLS:][ex] == CATEGORY_RGB[EXCLUDED]).all()
    labels = " ".join(e["label"] for e in legend)
    assert "unassigned" in labels and "stale" in labels and "effect 1002" in labels
    out = write_audit_picture(a, tmp_path / "a.png")
    from PIL import Image

    w, h = Image.open(out).size
    assert w == 1024 and h > 512                 # 4 pixels a cell, the legend below
    # each tile labelled in its north-west corner: white text on a dark box, the two labels
    # ("31,32", "32,32") differing; the picture without labels has no such box there
    img = np.asarray(Image.open(out).convert("RGB")).astype(int)
    plain = a.picture(scale=4)[0].astype(int)
    corners = []
    for i in range(2):
        box = img[2:20, i * 512 + 2: i * 512 + 50]
        dark = (box == 20).all(axis=-1)
        white = (box == 255).all(axis=-1)
        assert dark.mean() > 0.4 and white.sum() > 10, (i, dark.mean(), white.sum())
        assert not (plain[2:20, i * 512 + 2: i * 512 + 50] == 20).all(axis=-1).any()
        corners.append(white)
    assert (corners[0] != corners[1]).any()
    assert (img[60:512, 60:500] == plain[60:512, 60:500]).all()  # the rest of the tile untouched


def test_fixes_clear_the_audit(broken, tmp_path):
    out = tmp_path / "fixed"
    out.mkdir()
    res = run("effects", "assign", "--data", broken["root"], "--texture", "samplegrass", "--effect", 1001,
              "--only-unassigned", "-o", out, "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["layer_count"] == broken["ua_layers"] and doc["changed_tile_count"] == 1
    assert doc["by_field"] == {"effect_id": doc["changed_byte_count"]}
    fixed = tmp_path / "Data"
    shutil.copytree(broken["root"], fixed)
    for f in doc["files"]:
        rel = Path(f).relative_to(out)
        shutil.copy(f, fixed / rel)
    # the remap of the unbroken world, plus exactly the cells the fixture pointed at a missing layer
    unbroken = json.loads(run("effects", "remap", "--data", broken["world"], "-n", "--json").stdout)["cell_count"]
    res = run("effects", "remap", "--data", fixed, "--in-place", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["cell_count"] == unbroken + broken["put_in"] and broken["put_in"] > 0
    a = audit_map(open_data(fixed), MAP_NAME)
    assert a.cells["unassigned"] == 0 and a.cells["stale"] == 0
    gp = game_file(fixed, f"World\\Maps\\{MAP_NAME}\\{MAP_NAME}_32_32.adt")
    assert gp.with_name(gp.name + ".bak").read_bytes() == game_file(broken["root"], f"World\\Maps\\{MAP_NAME}\\"
                                                                    f"{MAP_NAME}_32_32.adt").read_bytes()


# ----------------------------------------------------------------------------- exclusion masks

def test_exclude_from_a_mask_picture(world, tmp_path):
    from PIL import Image

    g = open_data(world["loose"])
    grey = np.zeros((CELLS, 2 * CELLS), np.uint8)
    grey[10:30, 120:140] = 255                           # across the border of the two tiles
    grey[100, 5] = 200
    Image.fromarray(grey).save(tmp_path / "m.png")
    big = np.kron(grey, np.ones((2, 2), np.uint8))       # the same at 2 pixels a cell
    Image.fromarray(big).save(tmp_path / "m2.png")
    e1 = exclude_map(g, MAP_NAME, mask=tmp_path / "m.png")
    e2 = exclude_map(g, MAP_NAME, mask=tmp_path / "m2.png")
    assert e1.files == e2.files and len(e1.files) == 2
    for k, (gp, raw) in enumerate(sorted(e1.files.items())):
        old = read_tile(g.read(gp), gp, big_alpha=True)
        new = read_tile(raw, gp, big_alpha=True)
        tile_grey = grey[:, k * CELLS:(k + 1) * CELLS]
        picked = np.array([tile_grey[iy * 8:iy * 8 + 8, ix * 8:ix * 8 + 8] >= 128      # chunk by chunk, by hand
                           for ix, iy in old.index_xy.tolist()])
        want = old.no_effect_doodad | picked
        assert np.array_equal(new.no_effect_doodad, want)
    res = run("effects", "exclude", "--data", world["loose"], "--mask", tmp_path / "m.png", "--tile", "31,32", "-n")
    assert res.exit_code == 2 and "need 128x128" in res.stderr


@pytest.mark.parametrize("value, dtype, suffix, selects", [
    (1000, np.uint16, ".png", False),         # near black in 16 bits: 1000/65535
    (60000, np.uint16, ".png", True),
    (32896, np.uint16, ".png", True),         # 128.0 of 255 exactly
    (32767, np.uint16, ".png", False),
    (32895, np.uint16, ".png", False),        # 127.996 of 255 (white 65280 would make it 128.5)
    (0.3, np.float32, ".tif", False),         # floats: 0.0 black, 1.0 white
    (0.9, np.float32, ".tif", True),
    (1 << 20, np.int32, ".tif", False),       # 32-bit integer: white is 2**31 - 1
    (2_000_000_000, np.int32, ".tif", True),
])
def test_mask_pictures_of_more_than_8_bits_scale_by_their_depth(world, tmp_path, value, dtype, suffix, selects):
    from PIL import Image

    path = tmp_path / f"deep{suffix}"
    Image.fromarray(np.full((CELLS, 2 * CELLS), value, dtype)).save(path)
    with Image.open(path) as im:                              # the mode the file really has
        assert im.mode == {np.uint16: "I;16", np.float32: "F", np.int32: "I"}[dtype]
    res = run("effects", "exclude", "--data", world["loose"], "--mask", path, "-n", "--json")
    assert res.exit_code == 0, res.output
    tiles = json.loads(res.stdout)["tiles"]
    assert [t["before"]["mask_cell_count"] for t in tiles] == [256 * 64 if selects else 0] * 2


def test_16_bit_grey_scales_by_65535_to_0_255():
    from PIL import Image

    from wowgrass.edit.masks import picture_grey

    values = np.array([[0, 257, 32895, 32896, 65278, 65535]], np.uint16)
    grey = picture_grey(Image.fromarray(values))
    assert grey.dtype == np.float32 and grey.shape == (1, 6)
    assert np.allclose(grey, values / 257.0, atol=1e-4)        # 65535 / 255 = 257 exactly
    assert grey[0, [0, 1, 3, 5]].tolist() == [0.0, 1.0, 128.0, 255.0]


def test_mask_picture_of_an_unreadable_mode_is_refused_naming_it():
    from types import SimpleNamespace

    from wowgrass.edit.masks import picture_grey
    from wowgrass.errors import UsageError

    with pytest.raises(UsageError, match="mode 'BGR;24'"):
        picture_grey(SimpleNamespace(mode="BGR;24"))


def test_grid_round_trip():
    t = AdtTile.from_arrays(31, 32)
    rng = np.random.default_rng(0)
    order = rng.permutation(256)                         # chunks stored out of order
    t.index_xy = t.index_xy[order]
    cells = rng.random((256, 8, 8)) < 0.5
    g = chunks_to_grid(t, cells)
    assert np.array_equal(grid_to_chunks(t, g), cells)
    ix, iy = (int(v) for v in t.index_xy[7])
    assert np.array_equal(g[iy * 8:iy * 8 + 8, ix * 8:ix * 8 + 8], cells[7])


def test_slope_of_a_plane():
    from wowgrass.formats.adt import UNIT_SIZE, VERTEX_ROWCOL

    for deg in (0.0, 30.0, 60.0):
        h = np.tan(np.radians(deg)) * VERTEX_ROWCOL[:, 1] * UNIT_SIZE         # rising eastwards
        t = AdtTile.from_arrays(31, 32, heights=np.tile(h, (256, 1)))
        assert np.allclose(cell_slopes(t), deg, atol=1e-6)
    from wowgrass.edit.masks import slope_mask

    assert slope_mask(t, 45.0).all() and not slope_mask(t, 61.0).any()   # t: the 60 degree plane


def test_exclude_under_liquid_and_near_objects(world):
    from wowgrass.formats.adt import ZEROPOINT

    g = open_data(world["loose"])
    # the sample already excludes its lake: clearing the cells under liquid takes them back
    assert exclude_map(g, MAP_NAME, under_liquid=True, tiles=[(32, 32)]).files == {}
    e = exclude_map(g, MAP_NAME, under_liquid=True, clear=True, tiles=[(32, 32)])
    (gp, raw), = e.files.items()
    old = read_tile(g.read(gp), gp, big_alpha=True)
    wet = liquid_mask(old)
    assert wet.sum() > 50 and e.totals()["cells"] == int((wet & old.no_effect_doodad).sum()) > 0
    assert np.array_equal(read_tile(raw, gp, big_alpha=True).no_effect_doodad, old.no_effect_doodad & ~wet)
    e = exclude_map(g, MAP_NAME, near_objects=6.0, tiles=[(31, 32)])
    (gp, raw), = e.files.items()
    old = read_tile(g.read(gp), gp, big_alpha=True)
    p = old.mddf["position"].astype(np.float64)
    x, y = ZEROPOINT - p[:, 2], ZEROPOINT - p[:, 0]      # the file's axes -> world
    c = old.cell_centres()
    d = np.sqrt((c[..., 0, None] - x) ** 2 + (c[..., 1, None] - y) ** 2).min(axis=-1)
    new = read_tile(raw, gp, big_alpha=True)
    assert np.array_equal(new.no_effect_doodad, old.no_effect_doodad | (d <= 6.0))
    assert (d <= 6.0).sum() > 0


# ----------------------------------------------------------------------------- the CLI's outputs and refusals

def test_assign_writes_the_client_layout_and_refuses(world, tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    res = run("effects", "assign", "--data", world["mpq"], "--texture", "SampleGrass.blp", "--effect", 1002,
              "--tile", "31,32", "-o", out)
    assert res.exit_code == 0, res.output
    assert tree(out) == ["World", "World/Maps", f"World/Maps/{MAP_NAME}", f"World/Maps/{MAP_NAME}/{MAP_NAME}_31_32.adt"]
    assert "layers" in res.stdout and "effect_id" in res.stdout
    res = run("effects", "assign", "--data", world["mpq"], "--texture", "SampleGras", "--effect", 1002, "-o", out)
    assert res.exit_code == 2 and "closest: Tileset\\Sample\\SampleGrass.blp" in res.stderr
    res = run("effects", "assign", "--data", world["mpq"], "--texture", "SampleGrass", "--effect", 31337, "-o", out)
    assert res.exit_code == 2 and "no GroundEffectTexture row" in res.stderr and "--allow-missing" in res.stderr
    res = run("effects", "assign", "--data", world["mpq"], "--texture", "SampleGrass", "--effect", 31337,
              "--allow-missing", "-n", "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["files"] == []
    res = run("effects", "assign", "--data", world["mpq"], "--texture", "SampleGrass", "--effect", 1002, "--in-place")
    assert res.exit_code == 2 and "only loose files" in res.stderr
    res = run("effects", "assign", "--data", world["loose"], "--texture", "SampleGrass", "--effect", 1002,
              "-o", world["loose"])
    assert res.exit_code == 2 and "input tile itself" in res.stderr
    res = run("effects", "assign", "--data", world["mpq"], "--texture", "SampleGrass", "--effect", 1002)
    assert res.exit_code == 2 and "-o DIR" in res.stderr
    res = run("effects", "remap", "--data", world["mpq"], "-o", tmp_path / "missing")
    assert res.exit_code == 2 and "does not exist" in res.stderr


@pytest.mark.parametrize("fault", ["ENOSPC", "EROFS"])
def test_failing_disk_leaves_nothing(world, tmp_path, fault):
    out = tmp_path / "o"
    out.mkdir()
    with failing_folder(out, fault):
        res = run("effects", "assign", "--data", world["mpq"], "--texture", "SampleGrass", "--effect", 1002, "-o", out)
    assert res.exit_code == 2 and res.stderr.startswith("error: ") and "Traceback" not in res.output
    assert tree(out) == []


def test_in_place_failure_keeps_the_inputs(world, tmp_path):
    root = tmp_path / "Data"
    shutil.copytree(world["loose"], root)
    before = {p: p.read_bytes() for p in root.rglob("*.adt")}
    with failing_folder(root / "World" / "Maps", "ENOSPC"):
        res = run("effects", "assign", "--data", root, "--texture", "SampleGrass", "--effect", 1002, "--in-place")
    assert res.exit_code == 2 and "error:" in res.stderr
    assert {p: p.read_bytes() for p in root.rglob("*.adt")} == before
    assert not list(root.rglob("*.bak")) and not list(root.rglob("*.tmp"))


# ----------------------------------------------------------------------------- the real tiles

def real_folder(realdata, tmp_path, build):
    d = tmp_path / build
    d.mkdir()
    if build == "3.3.5":
        (d / "continent.wdt").symlink_to(realdata / "adt" / "continent.wdt")
        (d / "continent_42_29.adt").symlink_to(realdata / "adt" / "continent4229.adt")
    else:
        (d / "Azeroth_38_46.adt").symlink_to(realdata / "adt" / "Azeroth_38_46.adt")
    for t in ("GroundEffectTexture.dbc", "GroundEffectDoodad.dbc"):
        (d / t).symlink_to(realdata / "dbc" / build / t)
    return d


def test_real_tiles_audit(realdata, tmp_path):
    res = run("effects", "audit", "--data", real_folder(realdata, tmp_path, "3.3.5"), "--json")
    assert res.exit_code == 0, res.output
    a = json.loads(res.stdout)
    layers = {e["id"]: e["layer_count"] for e in a["effects"]}
    assert len(layers) == 20 and layers[7043] == 124 and layers[1493] == 87 and layers[5677] == 74
    s = a["summary"]
    assert layers[40199] == 52 and len(a["textures"]) == 16 and s["excluded_cell_count"] == 340
    assert a["missing_rows"] == [] and s["stale_cell_count"] == 0 and s["unassigned_cell_count"] == 0
    assert a["missing_models"]                          # no detail models in a tiles-and-tables folder
    # the README's layer counts: 1 layer in 25 chunks, 2 in 47, 3 in 116, 4 in 68; one chunk has holes
    assert sum(t["layer_count"] for t in a["textures"]) == 25 + 2 * 47 + 3 * 116 + 4 * 68
    assert 0 < s["hole_cell_count"] <= 64 and s["cell_count"] == 256 * 64
    res = run("effects", "audit", "--data", real_folder(realdata, tmp_path, "1.12"), "--json")
    a = json.loads(res.stdout)
    assert [(e["id"], e["layer_count"]) for e in a["effects"]] == [(453, 256)]
    assert a["textures"][0]["path"].endswith("BurningSteppsAsh01.blp") and a["summary"]["excluded_cell_count"] == 0
    assert a["summary"]["cell_count"] == 16384 and a["findings"]["missing_model_count"] == 4
    assert a["summary"]["hole_cell_count"] == 0 and a["textures"][0]["layer_count"] == 256   # README: no holes


def test_real_tile_assign_through_the_cli(realdata, tmp_path):
    data = real_folder(realdata, tmp_path, "3.3.5")
    out = tmp_path / "out"
    out.mkdir()
    res = run("effects", "assign", "--data", data, "--texture", "WetlandsBaseRock", "--effect", 1493, "-o", out,
              "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["layer_count"] == 158
    assert doc["files"] == [str(out / "World" / "Maps" / "continent" / "continent_42_29.adt")]
    old = (realdata / "adt" / "continent4229.adt").read_bytes()
    new = Path(doc["files"][0]).read_bytes()
    diff = np.flatnonzero(np.frombuffer(old, np.uint8) != np.frombuffer(new, np.uint8))
    t, t2 = read_tile(old, None, big_alpha=False), read_tile(new, None, big_alpha=False)
    rock = t.textures.index("Tileset\\Wetlands\\WetlandsBaseRock.blp")
    exists = np.arange(4)[None, :] < t.n_layers[:, None]
    assert np.array_equal(t2.layer_effect, np.where(exists & (t.layer_texture == rock), 1493, t.layer_effect))
    assert diff.size == doc["changed_byte_count"] == doc["by_field"]["effect_id"] > 0
    spans = t.field_offsets()["effect_id"]
    assert set(diff.tolist()) <= set((spans[spans >= 0][:, None] + np.arange(4)).ravel().tolist())


def test_fixes_add_up_in_their_output_folder(broken, tmp_path):
    """A second fix into the same -o DIR starts from the first one's tiles, and a table there (as
    `effects new-set` writes it) counts for the effect check; `audit --overlay DIR` sees the result."""
    from wowgrass.formats.dbc import GROUND_EFFECT_TEXTURE, DbcFile, schema_for, write_dbc

    fix = tmp_path / "fix"
    fix.mkdir()
    g = open_data(broken["root"])
    tex_path = "DBFilesClient\\GroundEffectTexture.dbc"
    rows = DbcFile.from_bytes(g.read(tex_path)).with_schema(schema_for(GROUND_EFFECT_TEXTURE, "3.3.5")).records
    extra = rows[:1].copy()
    extra["ID"] = 5555
    game_file(fix, tex_path).parent.mkdir(parents=True)
    game_file(fix, tex_path).write_bytes(write_dbc(np.concatenate([rows, extra]), b"\0"))
    res = run("effects", "assign", "--data", broken["root"], "--texture", "SampleGrass", "--effect", 5555,
              "--only-unassigned", "-o", fix, "--json")
    assert res.exit_code == 0, res.output             # no --allow-missing: the row is in fix/
    assert json.loads(res.stdout)["layer_count"] == broken["ua_layers"]
    res = run("effects", "remap", "--data", broken["root"], "-o", fix, "--json")
    assert res.exit_code == 0, res.output
    res = run("effects", "audit", "--data", broken["root"], "--overlay", fix, "--json")
    a = json.loads(res.stdout)
    assert a["summary"]["unassigned_cell_count"] == 0 and a["summary"]["stale_cell_count"] == 0
    assert {e["id"] for e in a["effects"]} >= {5555}
    # the same fixes shipped as a patch: the audit over the patch sees what it sees over the folder
    from wowgrass.edit.patch import build_patch

    patch = tmp_path / "patch-enUS-2.MPQ"
    build_patch(fix, patch, build="3.3.5")
    res = run("effects", "audit", "--data", broken["root"], "--overlay", patch, "--json", "-j", "2")
    assert res.exit_code == 0, res.output
    assert {k: v for k, v in json.loads(res.stdout).items() if k != "notes"} == \
        {k: v for k, v in a.items() if k != "notes"}
    # the input folder itself stays as it was
    assert audit_map(open_data(broken["root"]), MAP_NAME).cells["unassigned"] == broken["ua_cells"]


def test_cells_png_is_the_grid_exclude_reads(world, tmp_path):
    cells = tmp_path / "cells.png"
    res = run("effects", "audit", "--data", world["loose"], "--cells-png", cells, "-q")
    assert res.exit_code == 0 and cells.is_file()
    res = run("effects", "exclude", "--data", world["loose"], "--mask", cells, "-n", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["cell_count"] == 0              # white = excluded already: nothing new
    res = run("effects", "exclude", "--data", world["loose"], "--mask", cells, "--clear", "-n", "--json")
    excluded = sum(no_effect_bits(p.read_bytes()) for p in sorted(world["loose"].rglob("*.adt")))   # struct walk
    assert json.loads(res.stdout)["cell_count"] == excluded > 0
