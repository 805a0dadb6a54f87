"""`effects diff` (wowgrass.edit.preview): a patch's effect on the grass, before | after, with the
client placement and coverage; and `view` on the Data folder with the patch in it shows the change."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from click.testing import CliRunner
from PIL import Image

from wowgrass.cli.main import cli
from wowgrass.edit.effect_sets import add_effect_set
from wowgrass.edit.patch import build_patch
from wowgrass.formats.adt import write_adt
from wowgrass.game.data import open_data
from wowgrass.game.effects import DOODAD_PATH, TEXTURE_PATH, GroundEffectCatalog
from wowgrass.game.tiles import adt_game_path, load_tile
from wowgrass.grass.placement import make_strategy
from wowgrass.samples import MAP_NAME, build_sample_world

TILE = (32, 32)   # the 1x1 sample world's tile


@pytest.fixture(scope="module")
def edit(tmp_path_factory):
    """The sample world, a new effect set (dense ElwGra01) assigned to every layer of the western
    half of the tile's chunks, and the locale patch holding the tables and the ADT."""
    root = tmp_path_factory.mktemp("diff")
    data = build_sample_world(root / "w", "3.3.5", (1, 1), seed=0)
    with open_data(data) as d:
        tex, dood = d.read(TEXTURE_PATH), d.read(DOODAD_PATH)
        tile, raw, _ = load_tile(data=d, map_name=MAP_NAME, tile=TILE)
    tex2, dood2, eid = add_effect_set(tex, dood, doodads=["ElwGra01"], density=40)
    west = tile.index_xy[:, 0] < 8                   # chunk columns 0..7
    layers = west[:, None] & (np.arange(4)[None, :] < tile.n_layers[:, None])
    tile.layer_effect[layers] = eid
    fix = root / "fix"
    for name, body in ((TEXTURE_PATH, tex2), (adt_game_path(MAP_NAME, *TILE), write_adt(tile))):
        p = fix.joinpath(*name.split("\\"))
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(body)
    patch = root / "patch-enUS-2.MPQ"
    build_patch(fix, patch, build="3.3.5")
    return {"data": data, "patch": patch, "tile": tile, "tables": (tex2, dood2), "west": west, "root": root}


def test_diff_counts_match_placing_the_edited_tile(edit, tmp_path):
    png = tmp_path / "diff.png"
    r = CliRunner().invoke(cli, ["effects", "diff", "--data", str(edit["data"]), "--patch", str(edit["patch"]),
                                 "-o", str(png), "--size", "400", "--json"])
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    assert res["mounted"]["rank"] == res["mounted"]["archive_count"]          # a locale patch ranks highest
    (t,) = res["tiles"]
    assert t["tile"] == list(TILE) and t["adt_changed"]
    cat = GroundEffectCatalog.from_dbc_bytes(*edit["tables"])
    for placement in ("client", "coverage"):
        expect = make_strategy(placement).place(edit["tile"], cat, map_name=MAP_NAME)
        assert t[placement]["after"] == len(expect), placement            # the patched tile, the patched tables
        assert t[placement]["after"] > t[placement]["before"]              # density 40 over 8..30
        assert t[placement]["changed_cell_count"] > 0
    assert t["edits"]["layer_effect_count"] > 0 and t["edits"]["no_effect_doodad_cell_count"] == 0
    img = np.asarray(Image.open(png).convert("RGB"))
    assert img.shape[1] >= 3 * 128                                       # before | after | change
    top = 20                                                             # below the panel titles
    before = img[top:top + 128, :128]
    after = img[top:top + 128, 136:264]
    # the east half (not edited) is the same before and after; the west half differs
    assert np.array_equal(before[:, 70:], after[:, 70:])
    assert not np.array_equal(before[:, :60], after[:, :60])


def test_diff_needs_a_name_the_client_loads(edit, tmp_path):
    odd = tmp_path / "mypatch.mpq"
    shutil.copy(edit["patch"], odd)
    r = CliRunner().invoke(cli, ["effects", "diff", "--data", str(edit["data"]), "--patch", str(odd)])
    assert r.exit_code == 2 and "would not mount mypatch.mpq" in r.output and "Traceback" not in r.output


def _view(data, out, *extra):
    r = CliRunner().invoke(cli, ["view", "--data", str(data), "-o", str(out), "--size", "160x90",
                                 "--camera=-250,-60,75", "--target=-300,-130,58", "--frames", "1", *extra])
    assert r.exit_code == 0, r.output
    return np.asarray(Image.open(out).convert("RGB")).astype(np.int16)


def test_view_with_the_patch_in_data_shows_the_change(edit, tmp_path, egl):
    patched = tmp_path / "Data"
    shutil.copytree(edit["data"], patched, symlinks=True)
    shutil.copy(edit["patch"], patched / "enUS" / edit["patch"].name)
    before = _view(edit["data"], tmp_path / "before.png")   # over the edited (west) half of the tile
    after = _view(patched, tmp_path / "after.png")
    assert (np.abs(after - before).max(axis=2) > 40).mean() > 0.01   # the grass differs ...
    bare_b = _view(edit["data"], tmp_path / "bare_b.png", "--no-grass")
    bare_a = _view(patched, tmp_path / "bare_a.png", "--no-grass")
    assert np.array_equal(bare_a, bare_b)                    # ... and only the grass


def test_diff_picture_to_a_read_only_folder_is_an_error(edit, tmp_path):
    import faults

    out = tmp_path / "ro"
    out.mkdir()
    with faults.failing_folder(out, "EROFS"):
        r = CliRunner().invoke(cli, ["effects", "diff", "--data", str(edit["data"]), "--patch", str(edit["patch"]),
                                     "-o", str(out / "d.png"), "--size", "256", "--placement", "coverage"])
    assert r.exit_code == 2 and r.output.startswith("error: ") and "Traceback" not in r.output
    assert faults.tree(out) == []


def test_1_12_new_set_keyed_on_tags_grows_in_a_data_patch(tmp_path):
    """1.12: the new set's DoodadIDs are tags, the patch is Data/patch-2.MPQ above patch.MPQ."""
    data = build_sample_world(tmp_path / "w", "1.12", (1, 1), seed=0)
    with open_data(data) as d:
        tex, dood = d.read(TEXTURE_PATH), d.read(DOODAD_PATH)
        tile, _, _ = load_tile(data=d, map_name=MAP_NAME, tile=TILE)
    tex2, dood2, eid = add_effect_set(tex, dood, doodads=["ElwGra05"], density=20)
    rock = [i for i, n in enumerate(tile.textures) if "Rock" in n][0]
    tile.layer_effect[tile.layer_texture == rock] = eid
    fix = tmp_path / "fix"
    for name, body in ((TEXTURE_PATH, tex2), (adt_game_path(MAP_NAME, *TILE), write_adt(tile))):
        p = fix.joinpath(*name.split("\\"))
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(body)
    res = build_patch(fix, data / "patch-2.MPQ")
    assert res.build == "1.12" and res.chain["highest"] and res.warnings == []
    r = CliRunner().invoke(cli, ["effects", "diff", "--data", str(data), "--patch", str(data / "patch-2.MPQ"),
                                 "--json"])
    assert r.exit_code == 0, r.output
    (t,) = json.loads(r.stdout)["tiles"]
    assert t["client"]["after"] > t["client"]["before"] and t["coverage"]["after"] > t["coverage"]["before"]
    cat = GroundEffectCatalog.from_dbc_bytes(tex2, dood2)
    assert t["client"]["after"] == len(make_strategy("client").place(tile, cat, map_name=MAP_NAME))


def test_a_tables_only_patch_is_compared_on_the_maps_tiles(edit, tmp_path):
    from wowgrass.formats.dbc import read_table, write_dbc

    with open_data(edit["data"]) as d:
        dbc, _ = read_table(d.read(TEXTURE_PATH), TEXTURE_PATH)
    rows = dbc.records.copy()
    rows["Density"][rows["ID"] == 1001] = 0     # the meadow set: 8 -> 0 (the client's default 8: no change)
    rows["Density"][rows["ID"] == 1002] = 2     # the lush set: 16 -> 2
    fix = tmp_path / "fix" / "DBFilesClient"
    fix.mkdir(parents=True)
    (fix / "GroundEffectTexture.dbc").write_bytes(write_dbc(rows, dbc.string_block))
    patch = tmp_path / "patch-enUS-3.MPQ"
    build_patch(tmp_path / "fix", patch)
    r = CliRunner().invoke(cli, ["effects", "diff", "--data", str(edit["data"]), "--patch", str(patch), "--json"])
    assert r.exit_code == 0, r.output
    (t,) = json.loads(r.stdout)["tiles"]
    assert not t["adt_changed"] and t["edits"]["layer_effect_count"] == 0
    assert t["client"]["after"] < t["client"]["before"]


def test_real_tile_new_set_assign_patch_and_diff_over_a_loose_folder(realdata, tmp_path):
    """continent_42_29 with the real 3.3.5 tables, as a loose extract: a new set on the real table,
    its rock texture assigned to it byte-exactly, the patch compared over the loose folder."""
    from wowgrass.edit.adt_edit import assign_effect

    loose = tmp_path / "loose"
    maps = loose / "World" / "Maps" / "continent"
    maps.mkdir(parents=True)
    (loose / "DBFilesClient").mkdir()
    adt = (realdata / "adt" / "continent4229.adt").read_bytes()
    (maps / "continent_42_29.adt").write_bytes(adt)
    (maps / "continent.wdt").write_bytes((realdata / "adt" / "continent.wdt").read_bytes())
    tex, dood = ((realdata / "dbc" / "3.3.5" / f"{t}.dbc").read_bytes() for t in ("GroundEffectTexture",
                                                                                  "GroundEffectDoodad"))
    (loose / TEXTURE_PATH.replace("\\", "/")).write_bytes(tex)
    (loose / DOODAD_PATH.replace("\\", "/")).write_bytes(dood)
    tex2, dood2, eid = add_effect_set(tex, dood, doodads=["TifGra01", "WesGra03"], density=6)
    edited, rep = assign_effect(adt, "continent_42_29.adt", "WetlandsBaseRock", eid, big_alpha=False)
    assert rep.layers == 158                       # the README's most common id, 7043, is on this texture
    fix = tmp_path / "fix"
    for name, body in ((TEXTURE_PATH, tex2), ("World\\Maps\\continent\\continent_42_29.adt", edited)):
        p = fix.joinpath(*name.split("\\"))
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(body)
    build_patch(fix, tmp_path / "patch-enUS-4.MPQ", build="3.3.5")
    r = CliRunner().invoke(cli, ["effects", "diff", "--data", str(loose), "--patch", str(tmp_path / "patch-enUS-4.MPQ"),
                                 "--json", "-q"])
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    assert res["mounted"]["file"] is None                       # over a loose folder: the patch answers first
    (t,) = res["tiles"]
    assert t["tile"] == [42, 29] and t["edits"]["layer_effect_count"] == 158
    tile = load_tile(maps / "continent_42_29.adt")[0]
    tile.layer_effect[:] = load_tile(fix / "World" / "Maps" / "continent" / "continent_42_29.adt")[0].layer_effect
    cat = GroundEffectCatalog.from_dbc_bytes(tex2, dood2)
    for placement in ("client", "coverage"):
        assert t[placement]["after"] == len(make_strategy(placement).place(tile, cat, map_name="continent"))
        assert t[placement]["after"] > t[placement]["before"]


def test_diff_table_is_not_cut_when_stdout_is_not_a_terminal(edit):
    args = ["effects", "diff", "--data", str(edit["data"]), "--patch", str(edit["patch"])]
    doc = json.loads(CliRunner().invoke(cli, [*args, "--json"]).stdout)
    r = CliRunner(env={"COLUMNS": "40"}).invoke(cli, args)      # a narrow terminal setting, output to a pipe
    assert r.exit_code == 0, r.output
    (t,) = doc["tiles"]
    c, v = t["client"], t["coverage"]
    row = next(line for line in r.stdout.splitlines() if f"{TILE[0]},{TILE[1]}" in line)
    assert f"{c['before']:,}>{c['after']:,}" in row and f"{v['before']:,}>{v['after']:,}" in row
    assert "…" not in r.stdout


def _diffs(edit):
    from wowgrass.edit.preview import before_after, diff_tiles

    with before_after(edit["data"], edit["patch"]) as (before, after, _where):
        return diff_tiles(before, after, MAP_NAME, [TILE])


def test_diff_picture_is_bounded_over_many_tiles(edit):
    import dataclasses

    from wowgrass.edit.preview import PICTURE_WIDTH, diff_picture

    (d,) = _diffs(edit)
    img = diff_picture([d])
    assert img.shape[1] <= PICTURE_WIDTH
    many = [dataclasses.replace(d, tile=(28 + k % 7, 27 + k // 7)) for k in range(37)]   # 7 x 6 tiles
    img = diff_picture(many)
    assert img.shape[1] <= PICTURE_WIDTH and img.shape[0] <= PICTURE_WIDTH
    wide = diff_picture(many, width=3000)
    assert PICTURE_WIDTH < wide.shape[1] <= 3000


def test_diff_picture_outlines_only_cells_with_grass_and_labels_tiles(edit):
    from wowgrass.edit.preview import _label, diff_picture
    from wowgrass.game.tiles import tile_grid

    (d,) = _diffs(edit)
    size = 256
    img = diff_picture([d], size=size)
    top = _label(np.zeros((size, size, 3), np.uint8), "x").shape[0] - size     # the panel title's height
    tb, ta = d.tiles
    ib, ia = d.instances["client"]
    changed = d.changed_cells["client"]
    assert (changed & (ib.cell_counts() == 0)).any()          # cells that grow grass only after: not outlined before
    for k, (t, counts) in enumerate(((tb, ib.cell_counts()), (ta, ia.cell_counts()))):
        panel = img[top:top + size, k * (size + 8):k * (size + 8) + size]
        white = (panel == 255).all(axis=-1)
        white[:24, :64] = False                                              # the tile label
        may = tile_grid(ta, changed & (counts > 0)).repeat(2, 0).repeat(2, 1)
        assert white.any() and not (white & ~may).any()
        assert (panel[3, 3] == (20, 20, 20)).all()                           # the label's box


def test_a_model_has_one_colour_in_every_panel_and_tile(edit):
    from types import SimpleNamespace

    from wowgrass.game.tiles import grass_image, model_colours

    (d,) = _diffs(edit)
    ib, _ia = d.instances["client"]
    model = np.asarray(ib.model)
    keep = model < 3                                  # another tile growing only three of the models
    few = SimpleNamespace(models=list(ib.models)[:3], pos=np.asarray(ib.pos)[keep], model=model[keep])
    colours = model_colours(str(m) for m in ib.models)
    legends = [{e["label"].lower(): e["rgb"] for e in grass_image(d.tiles[0], inst, 64, colours)[1]}
               for inst in (ib, few)]
    assert len(legends[1]) == 3 and all(legends[0][k] == v for k, v in legends[1].items())


def test_diff_help_says_one_thing_about_tiles_and_size():
    r = CliRunner().invoke(cli, ["effects", "diff", "--help"], terminal_width=200)
    text = " ".join(r.output.split())
    assert "Default: the tiles whose ADT the patch holds" in text and "every tile the map lists" not in text
    assert "--size PIXELS The picture's width" in text and "per tile" not in text


def test_diff_table_on_a_closed_pipe_exits_0_silently(edit):
    """`effects diff ... | true` (issue 42.8): the rich table's closed pipe exits 0 as other output does."""
    import os
    import subprocess
    import sys

    r, w = os.pipe()
    os.close(r)
    try:
        proc = subprocess.run([sys.executable, "-m", "wowgrass", "effects", "diff", "--data", str(edit["data"]),
                               "--patch", str(edit["patch"])], stdout=w, stderr=subprocess.PIPE, text=True,
                              timeout=300)
    finally:
        os.close(w)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr


def test_diff_json_counts_end_in_count(edit):
    """Issue 42.13: counts are named *_count (cells changed, cells whose noEffectDoodad bits changed)."""
    r = CliRunner().invoke(cli, ["effects", "diff", "--data", str(edit["data"]), "--patch", str(edit["patch"]),
                                 "--json"])
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    (t,) = res["tiles"]
    assert set(t["edits"]) == {"layer_effect_count", "no_effect_doodad_cell_count", "doodad_mapping_cell_count",
                               "textures_changed"}
    assert t["coverage"]["changed_cell_count"] > 0 and res["coverage"]["changed_cell_count"] > 0
    assert t["edits"]["textures_changed"] is False
