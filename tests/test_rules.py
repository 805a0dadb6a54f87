"""Ground-effect rules (issue 47): the file's checks, `effects apply` (only ground-effect bytes,
idempotent, all or none, conflicts, sets with stable ids, layered data in place), rules learned by
`effects rules --init` putting back a repaint's lost ids, `effects why`, drift, the per-cell rule
map and a painted rule kept, on the sample world and the real tiles."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from faults import failing_folder, tree

from wowgrass.cli.main import cli
from wowgrass.edit.adt_edit import assign_effect, read_tile
from wowgrass.edit.rules import load_rules, parse_rules
from wowgrass.edit.rules_apply import apply_rules
from wowgrass.edit.rules_engine import prepare
from wowgrass.edit.rules_explain import append_mask_rule, drift, explain_cell, governing, learn_rules, write_learned
from wowgrass.errors import UsageError
from wowgrass.game.data import open_data
from wowgrass.game.maps import adt_game_path
from wowgrass.samples import MAP_NAME, build_sample_world

GRASS = "Tileset\\Sample\\SampleGrass.blp"
T0 = (31, 32)


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def game_file(root: Path, gp: str) -> Path:
    return root.joinpath(*gp.split("\\"))


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The 3.3.5 sample world (2x1 tiles): its MPQ Data folder and a loose copy of every file."""
    base = tmp_path_factory.mktemp("rules")
    data = build_sample_world(base / "mpq", "3.3.5", (2, 1), seed=0)
    loose = base / "loose"
    with open_data(data) as g:
        for name in g.list("*"):
            p = game_file(loose, name)
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(g.read(name))
    return {"mpq": data, "loose": loose}


@pytest.fixture
def loose(world, tmp_path):
    d = tmp_path / "Data"
    shutil.copytree(world["loose"], d)
    return d


def tile_path(root, tile=T0) -> Path:
    return game_file(root, adt_game_path(MAP_NAME, *tile))


def mcnk_fields(adt: bytes):
    """Byte ranges of the ground-effect fields, found by a struct walk of the file (MCNK headers'
    doodadMapping and noEffectDoodad, each MCLY record's effectId), not by wowgrass's reader."""
    out = []
    at = 0
    while at + 8 <= len(adt):
        magic, size = adt[at:at + 4], struct.unpack_from("<I", adt, at + 4)[0]
        if magic == b"KNCM":
            h = at + 8
            out += [(h + 0x40, h + 0x50), (h + 0x50, h + 0x58)]   # doodadMapping, noEffectDoodad
            n_layers = struct.unpack_from("<I", adt, h + 0x0C)[0]
            ofs_layer = struct.unpack_from("<I", adt, h + 0x1C)[0]
            mcly = at + ofs_layer
            assert adt[mcly:mcly + 4] == b"YLCM"
            for k in range(n_layers):
                e = mcly + 8 + 16 * k + 12
                out.append((e, e + 4))
        at += 8 + size
    return out


def outside_fields_equal(a: bytes, b: bytes) -> bool:
    assert len(a) == len(b)
    x = np.frombuffer(a, np.uint8).copy()
    y = np.frombuffer(b, np.uint8).copy()
    for lo, hi in mcnk_fields(a):
        x[lo:hi] = 0
        y[lo:hi] = 0
    return bool((x == y).all())


RULES = """\
version = 1
map = "WowgrassSample"

[[assign]]
name = "grass"
textures = ["SampleGrass"]
effect = 1001

[[assign]]
name = "grass north"
textures = ["Tileset/Sample/SampleGrass.blp"]
effect = 1002
tiles = ["31,32"]

[[exclude]]
name = "roads"
textures = ["SampleRoad*"]
share = 0.3
reason = "no grass on the road"

[[exclude]]
name = "water"
under = "liquid"

[[include]]
name = "everything else"
slope_above = 0
"""


# ----------------------------------------------------------------------------- the file's checks

BAD = [
    ("unknown key", "[[assign]]\nname = 'a'\ntextures = ['x']\neffect = 1001\ntextur = 'y'\n", 5, "textur",
     "unknown key"),
    ("bad glob", "[[exclude]]\nname = 'r'\ntextures = ['Road[12']\n", 3, "textures", "never closes"),
    ("empty glob", "[[assign]]\ntextures = ['  ']\neffect = 1001\n", 2, "textures", "empty pattern"),
    ("both effect and set", "[[set]]\nname = 's'\ndoodads = ['ElwGra01']\n\n[[assign]]\ntextures = ['x']\n"
     "effect = 5\nset = 's'\n", 7, "effect", "one of them"),
    ("unknown set", "[[assign]]\ntextures = ['x']\nset = 'nope'\n", 3, "set", "no [[set]]"),
    ("set id clash", "[[set]]\nname = 'a'\ndoodads = ['ElwGra01']\nid = 900\n\n[[set]]\nname = 'b'\n"
     "doodads = ['ElwGra02']\nid = 900\n", 9, "id", "also the id"),
    ("five doodads", "[[set]]\nname = 'a'\ndoodads = ['A', 'B', 'C', 'D', 'E']\n", 3, "doodads", "four doodad slots"),
    ("height backwards", "[[assign]]\ntextures = ['x']\neffect = 1\nheight = [50, 10]\n", 4, "height",
     "runs backwards"),
    ("slope over 90", "[[exclude]]\nslope_above = 95\n", 2, "slope_above", "0 .. 90"),
    ("two criteria", "[[exclude]]\nname = 'x'\nunder = 'liquid'\nslope_above = 30\n", 4, "slope_above",
     "exactly one"),
    ("unknown footprint", "[[exclude]]\nunder = 'trees'\n", 2, "under", "buildings"),
    ("mask without tiles", "[[exclude]]\nmask = 'm.png'\n", 2, "mask", "tiles"),
    ("bad tile range", "tiles = ['40:30,1']\n", 1, "tiles", "backwards"),
    ("bad mapping mode", "[mapping]\nmode = 'always'\n", 2, "mode", "stale"),
    ("duplicate rule names", "[[assign]]\nname = 'a'\ntextures = ['x']\neffect = 1\n[[assign]]\nname = 'a'\n"
     "textures = ['y']\neffect = 2\n", 5, "name", "also the name"),
]


@pytest.mark.parametrize("label,text,line,key,why", BAD, ids=[b[0] for b in BAD])
def test_a_malformed_rules_file_is_an_error_naming_file_line_and_key(label, text, line, key, why, loose, tmp_path):
    rules = tmp_path / "bad-rules.toml"
    rules.write_text(text)
    out = tmp_path / "out"
    out.mkdir()
    res = run("effects", "apply", "--data", loose, "--rules", rules, "-o", out)
    assert res.exit_code == 2, res.output
    first = res.stderr.splitlines()[0]
    assert first.startswith("error: ") and f"{rules}:{line}:" in first and f"'{key}'" in first and why in first, \
        res.stderr
    assert "Traceback" not in res.output and tree(out) == []


def test_every_problem_is_listed_at_once(tmp_path):
    with pytest.raises(UsageError) as err:
        parse_rules("colour = 1\n[[assign]]\ntextures = ['x']\neffect = -4\n", tmp_path / "r.toml")
    text = str(err.value)
    assert "2 problems" in text and "r.toml:1:" in text and "r.toml:4:" in text and "'effect'" in text


def test_not_toml_is_an_error_with_its_line(tmp_path):
    with pytest.raises(UsageError, match=r"r\.toml:3: not TOML"):
        parse_rules("version = 1\n\n[[assign]\n", tmp_path / "r.toml")


DATA_BAD = [
    ("effect without a row", "[[assign]]\ntextures = ['SampleGrass']\neffect = 777777\n", 1, "effect", "no GroundEffect"),
    ("doodad that does not exist", "[[set]]\nname = 's'\ndoodads = ['NoSuchGrass01']\n", 1, "doodads",
     "neither a GroundEffectDoodad row nor a model"),
    ("set id of another row", "[[set]]\nname = 's'\ndoodads = ['ElwGra01']\nid = 1001\n", 1, "id", "taken"),
    ("unknown area", "[[assign]]\ntextures = ['x']\neffect = 1001\nareas = ['Nowhere Land']\n", 1, "areas",
     "no area named"),
    ("mask of the wrong size", "[[exclude]]\nmask = 'm.png'\ntiles = ['31:32,32']\n", 1, "mask", "need 256x128"),
]


@pytest.mark.parametrize("label,text,line,key,why", DATA_BAD, ids=[b[0] for b in DATA_BAD])
def test_rules_the_data_cannot_take_are_refused_before_any_tile(label, text, line, key, why, loose, tmp_path):
    from PIL import Image

    Image.new("L", (128, 128)).save(tmp_path / "m.png")
    rules = tmp_path / "r.toml"
    rules.write_text(text)
    before = tile_path(loose).read_bytes()
    res = run("effects", "apply", "--data", loose, "--rules", rules, "--in-place")
    assert res.exit_code == 2, res.output
    assert f"{rules}:{line}:" in res.stderr and key in res.stderr and why in res.stderr, res.stderr
    assert tile_path(loose).read_bytes() == before and not list(loose.rglob("*.bak"))


# ----------------------------------------------------------------------------- apply

def test_apply_changes_only_ground_effect_bytes_and_again_nothing(loose, tmp_path):
    (tmp_path / "rules.toml").write_text(RULES)
    out = tmp_path / "out"
    out.mkdir()
    res = run("effects", "apply", "--data", loose, "--rules", tmp_path / "rules.toml", "-o", out, "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["changed_byte_count"] > 0
    per = {r["name"]: r for r in doc["per_rule"]}
    for gp in (adt_game_path(MAP_NAME, 31, 32), adt_game_path(MAP_NAME, 32, 32)):
        old = game_file(loose, gp).read_bytes()
        new = game_file(out, gp).read_bytes()
        assert new != old and outside_fields_equal(old, new)
        t = read_tile(new, gp)
        g = t.textures.index(GRASS)
        exists = np.arange(4)[None, :] < t.n_layers[:, None]
        want = 1002 if gp.endswith("31_32.adt") else 1001          # the later rule wins on 31,32
        assert set(t.layer_effect[exists & (t.layer_texture == g)].tolist()) == {want}
        water = read_tile(old, gp)
        from wowgrass.edit.footprints import footprint

        assert t.no_effect_doodad[footprint("liquid", water)].all()
    assert per["grass"]["tile_count"] == 1 and per["grass north"]["tile_count"] == 1
    assert per["grass north"]["layer_count"] > 0
    # the include cleared hand-set bits where no exclude holds
    assert per["everything else"]["cell_count"] > 0
    conf = {(c["winner"], c["loser"]): c for c in doc["conflicts"]}
    c = conf[('assign "grass north" (line 9)', 'assign "grass" (line 4)')]
    assert c["layer_count"] == 256 and "later in the file" in c["why"]
    assert any("exclude" in w and "include" in lo for w, lo in conf)
    # idempotent: the second apply reads -o DIR first and changes nothing
    res = run("effects", "apply", "--data", loose, "--rules", tmp_path / "rules.toml", "-o", out, "--json")
    doc2 = json.loads(res.stdout)
    assert res.exit_code == 0 and doc2["changed_byte_count"] == 0 and doc2["files"] == []


def test_an_exclude_wins_over_an_include(loose, tmp_path):
    rules = parse_rules(RULES, tmp_path / "r.toml")
    with open_data(loose) as g:
        plan = prepare(rules, g)
        gp = adt_game_path(MAP_NAME, *T0)
        t = read_tile(g.read(gp), gp)
        from wowgrass.edit.rules_engine import evaluate

        d = evaluate(t, T0, plan, data=g)
    both = (d.exclude_rule >= 0) & (d.include_rule >= 0)
    assert both.any() and d.no_effect[both].all()
    only_in = (d.include_rule >= 0) & (d.exclude_rule < 0)
    assert only_in.any() and not d.no_effect[only_in].any()
    untouched = (d.include_rule < 0) & (d.exclude_rule < 0)
    assert (d.no_effect[untouched] == t.no_effect_doodad[untouched]).all()


def test_only_unassigned_fills_bare_layers_and_yields_to_always(loose, tmp_path):
    gp = adt_game_path(MAP_NAME, *T0)
    p = tile_path(loose)
    raw, _ = assign_effect(p.read_bytes(), gp, "SampleDirt", 0)
    p.write_bytes(raw)
    text = ("[[assign]]\nname = 'fill'\ntextures = ['Sample*']\neffect = 1003\nmode = 'only_unassigned'\n\n"
            "[[assign]]\nname = 'rock'\ntextures = ['SampleRock']\neffect = 1005\n")
    with open_data(loose) as g:
        res = apply_rules(g, prepare(parse_rules(text, tmp_path / "r.toml"), g))
    t = read_tile(res.files[gp], gp)
    exists = np.arange(4)[None, :] < t.n_layers[:, None]
    dirt, grass = t.textures.index("Tileset\\Sample\\SampleDirt.blp"), t.textures.index(GRASS)
    assert set(t.layer_effect[exists & (t.layer_texture == dirt)].tolist()) == {1003}
    before = read_tile(raw, gp)
    g_sel = exists & (t.layer_texture == grass)
    assert (t.layer_effect[g_sel] == before.layer_effect[g_sel]).all()      # had ids: kept
    assert res.to_json()["per_rule"][0]["layer_count"] == int((exists & (before.layer_texture == dirt)).sum())


def test_jobs_give_the_same_bytes(loose, tmp_path):
    rules = parse_rules(RULES, tmp_path / "r.toml")
    with open_data(loose) as g:
        plan = prepare(rules, g)
        one = apply_rules(g, plan, jobs=1)
        two = apply_rules(g, plan, jobs=2)
    assert one.files == two.files and one.to_json()["per_rule"] == two.to_json()["per_rule"]


@pytest.mark.parametrize("fault", ["ENOSPC", "EROFS"])
def test_a_failing_disk_leaves_nothing(loose, tmp_path, fault):
    (tmp_path / "rules.toml").write_text(RULES)
    out = tmp_path / "out"
    out.mkdir()
    with failing_folder(out, fault):
        res = run("effects", "apply", "--data", loose, "--rules", tmp_path / "rules.toml", "-o", out)
    assert res.exit_code == 2 and "error:" in res.stderr and "Traceback" not in res.output
    assert tree(out) == []


def test_in_place_over_layered_data_writes_the_project_only(world, tmp_path):
    """--data CLIENT(MPQ) --data PROJECT --in-place: the project's tile replaced (a .bak kept),
    the client's tiles and the set's tables written into the project, the archives untouched."""
    project = tmp_path / "project"
    gp0 = adt_game_path(MAP_NAME, *T0)
    with open_data(world["mpq"]) as g:
        raw0 = g.read(gp0)
    bare, _ = assign_effect(raw0, gp0, "SampleGrass", 0)
    p0 = game_file(project, gp0)
    p0.parent.mkdir(parents=True)
    p0.write_bytes(bare)
    archives = {p: p.stat().st_mtime_ns for p in Path(world["mpq"]).rglob("*.MPQ")}
    rules = project / "wowgrass-rules.toml"
    rules.write_text("[[set]]\nname = 'meadow'\ndoodads = ['ElwGra01', 'ElwGra05']\nweights = [12, 4]\ndensity = 10\n\n"
                     "[[assign]]\nname = 'grass'\ntextures = ['SampleGrass']\nset = 'meadow'\n")
    res = run("effects", "apply", "--data", world["mpq"], "--data", project, "--in-place", "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    sid = doc["sets"][0]["id"]
    assert doc["sets"][0]["new"] and sid > 1000
    assert (project / "DBFilesClient" / "GroundEffectTexture.dbc").is_file()
    assert p0.with_name(p0.name + ".bak").read_bytes() == bare
    other = game_file(project, adt_game_path(MAP_NAME, 32, 32))
    assert other.is_file() and not other.with_name(other.name + ".bak").exists()
    for gp, p in ((gp0, p0), (adt_game_path(MAP_NAME, 32, 32), other)):
        t = read_tile(p.read_bytes(), gp)
        exists = np.arange(4)[None, :] < t.n_layers[:, None]
        assert set(t.layer_effect[exists & (t.layer_texture == t.textures.index(GRASS))].tolist()) == {sid}
    assert {p: p.stat().st_mtime_ns for p in archives} == archives
    # again, in worker processes that reopen the layered data: the same id, nothing written
    res = run("effects", "apply", "--data", world["mpq"], "--data", project, "--in-place", "--json", "--jobs", "2")
    doc = json.loads(res.stdout)
    assert doc["sets"] == [{"name": "meadow", "id": sid, "new": False, "line": 1}]
    assert doc["changed_byte_count"] == 0 and doc["files"] == []


def test_sets_keep_their_ids_from_one_apply_to_the_next(loose, tmp_path):
    text = ("[[set]]\nname = 'a'\ndoodads = ['ElwGra01']\n\n[[set]]\nname = 'b'\ndoodads = ['ElwGra05']\nid = 900123\n\n"
            "[[assign]]\ntextures = ['SampleDirt']\nset = 'a'\n[[assign]]\ntextures = ['SampleRock']\nset = 'b'\n")
    (tmp_path / "r.toml").write_text(text)
    ids = []
    for k in range(2):
        out = tmp_path / f"out{k}"
        out.mkdir()
        res = run("effects", "apply", "--data", loose, "--rules", tmp_path / "r.toml", "-o", out, "--json")
        assert res.exit_code == 0, res.output
        ids.append({s["name"]: s["id"] for s in json.loads(res.stdout)["sets"]})
    assert ids[0] == ids[1] and ids[0]["b"] == 900123
    # applying over the first result finds the rows it added
    res = run("effects", "apply", "--data", loose, "--rules", tmp_path / "r.toml", "-o", tmp_path / "out0", "--json")
    doc = json.loads(res.stdout)
    assert {s["name"]: s["id"] for s in doc["sets"]} == ids[0] and not any(s["new"] for s in doc["sets"])
    assert doc["changed_byte_count"] == 0 and doc["table_files"] == []


def test_a_1_12_target_refuses_what_its_client_cannot_load(tmp_path):
    world = build_sample_world(tmp_path / "w112", "1.12", (1, 1), seed=0)
    r = tmp_path / "r.toml"
    r.write_text("[[assign]]\ntextures = ['SampleGrass']\neffect = 777777\nallow_missing = true\n")
    res = run("effects", "apply", "--data", world, "--rules", r, "-n")
    assert res.exit_code == 2 and "1.12 client's GroundEffectTexture" in res.stderr and f"{r}:1:" in res.stderr
    r.write_text("[[set]]\nname = 's'\ndoodads = ['ElwGra01']\nweights = [16]\n")
    res = run("effects", "apply", "--data", world, "--rules", r, "-n")
    assert res.exit_code == 2 and "has no weights" in res.stderr and "'weights'" in res.stderr
    r.write_text("target = '3.3.5'\n")
    res = run("effects", "apply", "--data", world, "--rules", r, "-n")
    assert res.exit_code == 2 and "1.12 layout" in res.stderr
    # what it can load goes through, in its own layout (no weights, DoodadIdTag slots)
    r.write_text("target = '1.12'\n[[set]]\nname = 's'\ndoodads = ['ElwGra01', 'ElwGra02']\n"
                 "[[assign]]\ntextures = ['SampleRock']\nset = 's'\n")
    out = tmp_path / "o"
    out.mkdir()
    res = run("effects", "apply", "--data", world, "--rules", r, "-o", out, "--json")
    assert res.exit_code == 0, res.output
    from wowgrass.game.effects import GroundEffectCatalog

    with open_data(world, over=[out]) as g:
        cat = GroundEffectCatalog.from_data(g)
    sid = json.loads(res.stdout)["sets"][0]["id"]
    assert cat.build == "1.12" and [m.rsplit("\\", 1)[-1] for m in cat.row(sid)["models"][:2]] == \
        ["ElwGra01.m2", "ElwGra02.m2"]


# ----------------------------------------------------------------------------- learned rules

def _zero_tile(path: Path, gp: str) -> bytes:
    """A careless repaint: every effect id and every noEffectDoodad bit of the tile gone."""
    from wowgrass.edit.adt_edit import exclude_cells

    raw, rep = assign_effect(path.read_bytes(), gp, "*", 0)
    assert rep.layers > 0
    raw, _ = exclude_cells(raw, gp, np.ones((256, 8, 8), bool), clear=True)
    assert not read_tile(raw, gp).no_effect_doodad.any()
    path.write_bytes(raw)
    return raw


def test_learned_rules_put_back_a_repaints_lost_ids_on_the_sample(loose, tmp_path):
    rules = tmp_path / "rules.toml"
    res = run("effects", "rules", "--data", loose, "--init", "-o", rules, "--no-client")
    assert res.exit_code == 0, res.output
    text = rules.read_text()
    assert "# from the map:" in text and "(painted)" in text and (tmp_path / "masks").is_dir()
    gp = adt_game_path(MAP_NAME, *T0)
    before = read_tile(tile_path(loose).read_bytes(), gp)
    # applied to the map as it is: no effect id changes
    res = run("effects", "apply", "--data", loose, "--rules", rules, "-n", "--json")
    assert json.loads(res.stdout)["by_field"].get("effect_id", 0) == 0
    _zero_tile(tile_path(loose), gp)
    res = run("effects", "apply", "--data", loose, "--rules", rules, "--in-place", "--json")
    assert res.exit_code == 0, res.output
    after = read_tile(tile_path(loose).read_bytes(), gp)
    assert np.array_equal(after.layer_effect, before.layer_effect)
    assert np.array_equal(after.no_effect_doodad, before.no_effect_doodad) and before.no_effect_doodad.any()


def test_learned_rules_put_back_a_repaints_lost_ids_on_a_real_tile(realdata, tmp_path):
    d = tmp_path / "real"
    d.mkdir()
    shutil.copy(realdata / "adt" / "continent.wdt", d / "continent.wdt")
    shutil.copy(realdata / "adt" / "continent4229.adt", d / "continent_42_29.adt")
    for t in ("GroundEffectTexture.dbc", "GroundEffectDoodad.dbc", "AreaTable.dbc"):
        shutil.copy(realdata / "dbc" / "3.3.5" / t, d / t)
    rules = tmp_path / "rules.toml"
    res = run("effects", "rules", "--data", d, "--init", "-o", rules, "--no-client")
    assert res.exit_code == 0, res.output
    text = rules.read_text()
    # WetlandsBaseRock carries 7043 and 5038: the areas tell them apart (no picture needed)
    assert "areas = [" in text and "(painted)" not in text
    gp = "World\\Maps\\continent\\continent_42_29.adt"
    tile = d / "continent_42_29.adt"
    before = read_tile(tile.read_bytes(), gp)
    res = run("effects", "apply", "--data", d, "--rules", rules, "-n", "--json")
    assert json.loads(res.stdout)["by_field"].get("effect_id", 0) == 0, res.output
    _zero_tile(tile, gp)
    res = run("effects", "apply", "--data", d, "--rules", rules, "--in-place", "--json")
    assert res.exit_code == 0, res.output
    after = read_tile(tile.read_bytes(), gp)
    assert np.array_equal(after.layer_effect, before.layer_effect)
    assert np.array_equal(after.no_effect_doodad, before.no_effect_doodad) and before.no_effect_doodad.sum() == 340
    assert outside_fields_equal(tile.with_name(tile.name + ".bak").read_bytes(), tile.read_bytes())
    res = run("effects", "apply", "--data", d, "--rules", rules, "--in-place", "--json")
    assert json.loads(res.stdout)["changed_byte_count"] == 0


# ----------------------------------------------------------------------------- why, governing, drift

def test_why_explains_an_excluded_cell_and_a_grassy_one(loose, tmp_path):
    (tmp_path / "rules.toml").write_text(RULES)
    rules = load_rules(tmp_path / "rules.toml")
    with open_data(loose) as g:
        plan = prepare(rules, g)
        gp = adt_game_path(MAP_NAME, 32, 32)
        t = read_tile(g.read(gp), gp)
        from wowgrass.edit.footprints import footprint

        water = np.argwhere(footprint("liquid", t))[0]
        e = explain_cell(g, plan, (32, 32), int(water[0]), (int(water[2]), int(water[1])))
    assert e["no_effect_doodad"]["after"] and e["no_effect_doodad"]["excluded_by"] == 'exclude "water" (line 21)'
    assert e["verdict"].startswith("bare: excluded by exclude \"water\"") and e["scatter"]["count"] == 0
    assert e["governed_by"] == 'exclude "water" (line 21)'
    json.dumps(e)
    # the same cell through the command, by world position and by tile/chunk/cell
    x, y = e["centre"]
    a = run("effects", "why", "--data", loose, "--rules", tmp_path / "rules.toml", "--at", f"{x},{y}", "--json")
    b = run("effects", "why", "--data", loose, "--rules", tmp_path / "rules.toml", "--tile", "32,32",
            "--chunk", str(int(water[0])), "--cell", f"{int(water[2])},{int(water[1])}", "--json")
    assert a.exit_code == 0 and b.exit_code == 0, a.output + b.output
    assert json.loads(a.stdout) == json.loads(b.stdout) == e
    text = run("effects", "why", "--data", loose, "--rules", tmp_path / "rules.toml", "--at", f"{x},{y}")
    assert "excluded by exclude \"water\"" in text.stdout and "layer 0:" in text.stdout


def test_why_names_the_grass_the_client_scatters(loose, tmp_path):
    (tmp_path / "rules.toml").write_text(RULES)
    with open_data(loose) as g:
        plan = prepare(load_rules(tmp_path / "rules.toml"), g)
        gp = adt_game_path(MAP_NAME, 32, 32)
        t = read_tile(g.read(gp), gp)
        from wowgrass.edit.rules_engine import evaluate

        d = evaluate(t, (32, 32), plan, data=g)
        gov = governing(t, (32, 32), plan, d)
        grass_rule = next(r.order for r in plan.rules.rules if r.name == "grass")
        cells = np.argwhere((gov == grass_rule) & ~d.no_effect)
        found = None
        for idx, r, c in cells[:: max(1, len(cells) // 40)]:
            e = explain_cell(g, plan, (32, 32), int(idx), (int(c), int(r)), t=t)
            if e["scatter"]["count"]:
                found = e
                break
    assert found is not None
    assert found["effect"]["id"] == 1001 and found["verdict"].startswith("grows ")
    assert sum(found["scatter"]["by_model"].values()) == found["scatter"]["count"]
    assert found["layers"][found["doodad_mapping"]["after"]]["rule"] == 'assign "grass" (line 4)'


def test_governing_names_the_deciding_rule_per_cell(loose, tmp_path):
    rules = parse_rules(RULES, tmp_path / "r.toml")
    with open_data(loose) as g:
        plan = prepare(rules, g)
        gp = adt_game_path(MAP_NAME, *T0)
        t = read_tile(g.read(gp), gp)
        from wowgrass.edit.rules_engine import evaluate

        d = evaluate(t, T0, plan, data=g)
    gov = governing(t, T0, plan, d)
    assert gov.shape == (256, 8, 8) and gov.dtype == np.int32
    assert (gov[d.exclude_rule >= 0] == d.exclude_rule[d.exclude_rule >= 0]).all()
    grass = t.textures.index(GRASS)
    k = np.minimum(d.mapping, 3).astype(np.int64)
    shown = np.take_along_axis(np.broadcast_to(t.layer_texture[:, :, None, None], (256, 4, 8, 8)), k[:, None], 1)[:, 0]
    free = (d.exclude_rule < 0) & (shown == grass)
    north = next(r.order for r in plan.rules.rules if r.name == "grass north")
    assert free.any() and (gov[free] == north).all()
    # cells whose shown layer no rule decided: the include rule that cleared them
    other = (d.exclude_rule < 0) & (shown != grass) & (d.include_rule >= 0)
    assert other.any() and (gov[other] == d.include_rule[other]).all()


def test_drift_counts_what_apply_changes(loose, tmp_path):
    rules = parse_rules(RULES, tmp_path / "r.toml")
    with open_data(loose) as g:
        plan = prepare(rules, g)
        result = apply_rules(g, plan)
        gp = adt_game_path(MAP_NAME, *T0)
        t = read_tile(g.read(gp), gp)
        dr = drift(t, T0, plan, data=g)
        fixed = read_tile(result.files[gp], gp)
        again = drift(fixed, T0, plan, data=g)
    rep = next(x for x in result.tiles if x.tile == T0)
    assert dr.drifted and not again.drifted and again.cell_count == 0
    assert dr.effect_layers == sum(v["layers"] for o, v in rep.per_rule.items() if plan.rule(o).kind == "assign")
    assert dr.exclude_cells + dr.include_cells == int((fixed.no_effect_doodad != t.no_effect_doodad).sum())
    res = run("effects", "audit", "--data", loose, "--rules", tmp_path / "r.toml", "--json")
    (tmp_path / "r.toml").write_text(RULES)
    res = run("effects", "audit", "--data", loose, "--rules", tmp_path / "r.toml", "--json")
    doc = json.loads(res.stdout)["drift"]
    assert doc["drifted_tile_count"] == 2 and doc["effect_layer_count"] > 0
    assert {tuple(p["tile"]) for p in doc["per_tile"]} == {(31, 32), (32, 32)}
    res = run("effects", "audit", "--data", loose, "--rules", tmp_path / "r.toml")
    assert "drift from r.toml" in res.stdout


def test_a_painted_stroke_kept_as_a_rule_survives_a_repaint(loose, tmp_path):
    rules = tmp_path / "rules.toml"
    rules.write_text("version = 1\n")
    grid = np.zeros((128, 128), bool)
    grid[10:30, 40:70] = True
    pic = append_mask_rule(rules, "exclude", {T0: grid}, name="glade", reason="an empty glade")
    assert pic == tmp_path / "masks" / "glade.png" and pic.is_file()
    rs = load_rules(rules)
    assert [r.name for r in rs.rules] == ["glade"] and rs.rules[0].reason == "an empty glade"
    # a second stroke: another picture, the file still valid
    pic2 = append_mask_rule(rules, "include", {(32, 32): grid}, name="glade")
    assert pic2.name == "glade-2.png" and len(load_rules(rules).rules) == 2
    res = run("effects", "apply", "--data", loose, "--rules", rules, "--in-place")
    assert res.exit_code == 0, res.output
    gp = adt_game_path(MAP_NAME, *T0)
    t = read_tile(tile_path(loose).read_bytes(), gp)
    from wowgrass.edit.masks import chunks_to_grid

    assert chunks_to_grid(t, t.no_effect_doodad)[grid].all()
    t2 = read_tile(tile_path(loose, (32, 32)).read_bytes(), adt_game_path(MAP_NAME, 32, 32))
    assert not chunks_to_grid(t2, t2.no_effect_doodad)[grid].any()
    with pytest.raises(UsageError):     # an invalid file is not appended to
        rules.write_text("colour = 1\n")
        append_mask_rule(rules, "exclude", {T0: grid}, name="x")
    assert rules.read_text() == "colour = 1\n"


def test_learn_rules_writes_only_valid_files(loose, tmp_path):
    with open_data(loose) as g:
        text, pics = learn_rules(g, MAP_NAME)
    files = write_learned(tmp_path / "r.toml", text, pics)
    assert len(files) == 1 + len(pics) and load_rules(tmp_path / "r.toml").rules
    with pytest.raises(UsageError, match="exists"):
        write_learned(tmp_path / "r.toml", text, pics)


def test_exclusions_under_buildings_and_models_on_every_tile(loose, tmp_path):
    """The sample's house and rocks (one tile has no building: no footprint there, no failure);
    the cells excluded are the footprints grown by each rule's margin, and no others changed."""
    from wowgrass.edit.footprints import footprint

    def fp(kind, t, g, margin):
        placed = t.modf if kind == "buildings" else t.mddf
        return footprint(kind, t, data=g, margin=margin) if len(placed) else np.zeros((256, 8, 8), bool)

    text = ("[[exclude]]\nname = 'house'\nunder = 'buildings'\nmargin = 2\n\n"
            "[[exclude]]\nname = 'rocks'\nunder = 'models'\nmargin = 1\n")
    changed, bare = 0, 0
    with open_data(loose) as g:
        res = apply_rules(g, prepare(parse_rules(text, tmp_path / "r.toml"), g))
        for tile in ((31, 32), (32, 32)):
            gp = adt_game_path(MAP_NAME, *tile)
            old = read_tile(g.read(gp), gp)
            new = read_tile(res.files.get(gp, g.read(gp)), gp)
            want = fp("buildings", old, g, 2) | fp("models", old, g, 1)
            assert (new.no_effect_doodad == (old.no_effect_doodad | want)).all()
            changed += int((new.no_effect_doodad != old.no_effect_doodad).sum())
            bare += not len(old.modf)
    per = {r["name"]: r["cell_count"] for r in res.to_json()["per_rule"]}
    assert changed > 0 and per["house"] > 0 and per["house"] + per["rocks"] == changed and bare == 1


def test_why_and_rules_check_refuse_clearly(loose, tmp_path):
    (tmp_path / "r.toml").write_text(RULES)
    res = run("effects", "why", "--data", loose, "--rules", tmp_path / "r.toml", "--at=5000,5000")
    assert res.exit_code == 2 and "lies on tile 22,22, which the map does not have" in res.stderr
    res = run("effects", "why", "--data", loose, "--rules", tmp_path / "r.toml", "--tile", "31,32", "--chunk", "300",
              "--cell", "1")
    assert res.exit_code == 2 and "--chunk 300: 0..255" in res.stderr
    res = run("effects", "why", "--data", loose, "--rules", tmp_path / "r.toml", "--tile", "31,32", "--chunk", "3,4",
              "--cell", "9,1")
    assert res.exit_code == 2 and "column and row are 0..7" in res.stderr
    res = run("effects", "rules", "--data", loose, "--rules", tmp_path / "r.toml", "--check", "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["rule_count"] == 5
    res = run("effects", "apply", "--data", loose, "--rules", tmp_path / "r.toml")
    assert res.exit_code == 2 and "give -o DIR" in res.stderr


def test_dotted_keys_crlf_and_a_byte_order_mark_keep_their_lines(tmp_path):
    p = tmp_path / "r.toml"
    p.write_bytes("\ufeffversion = 1\r\n\r\nmapping.mode = 'sideways'\r\n".encode("utf-8"))
    with pytest.raises(UsageError) as err:
        load_rules(p)
    assert f"{p}:3: [mapping] key 'mode'" in str(err.value)
    p.write_bytes("\ufeff[[exclude]]\r\nname = 'steep'\r\nslope_above = 40\r\n".encode("utf-8"))
    assert load_rules(p).rules[0].slope_above == 40.0


def test_a_dry_run_reports_what_a_real_run_writes_and_writes_nothing(loose, tmp_path):
    (tmp_path / "r.toml").write_text(RULES)
    before = {p: p.read_bytes() for p in loose.rglob("*") if p.is_file()}
    dry = run("effects", "apply", "--data", loose, "--rules", tmp_path / "r.toml", "-n", "--json")
    assert dry.exit_code == 0 and json.loads(dry.stdout)["dry_run"] is True
    assert {p: p.read_bytes() for p in loose.rglob("*") if p.is_file()} == before
    real = run("effects", "apply", "--data", loose, "--rules", tmp_path / "r.toml", "--in-place", "--json")
    a, b = json.loads(dry.stdout), json.loads(real.stdout)
    assert a["per_rule"] == b["per_rule"] and a["changed_byte_count"] == b["changed_byte_count"] > 0
    assert len(b["files"]) == b["changed_tile_count"] == 2 and not a["files"]
    assert sorted(p.name for p in loose.rglob("*.bak")) == sorted(Path(f).name + ".bak" for f in b["files"])


def test_the_rules_picture_colours_each_cell_by_its_governing_rule(loose, tmp_path):
    from wowgrass.edit.rules_explain import rule_colour, rules_picture
    from wowgrass.game.tiles import tile_grid

    rules = parse_rules(RULES, tmp_path / "r.toml")
    with open_data(loose) as g:
        plan = prepare(rules, g)
        res = apply_rules(g, plan, picture=True)
        gp = adt_game_path(MAP_NAME, *T0)
        t = read_tile(g.read(gp), gp)
        gov = tile_grid(t, governing(t, T0, plan))
    grids = {x.tile: x.governing for x in res.tiles}
    assert (grids[T0] == gov).all()
    rgb, legend = rules_picture(plan, grids, scale=1)
    tile0 = rgb[:, :128]                                     # 31,32 is the west tile
    excluded = np.isin(gov, [r.order for r in plan.rules.rules if r.kind == "exclude"])
    yy, xx = np.mgrid[0:128, 0:128]
    plain = ~excluded | ((xx + yy) % 4 != 0)
    for o in np.unique(gov[plain & (gov >= 0)]).tolist():
        sel = plain & (gov == o)
        assert (tile0[sel] == rule_colour(o)).all()
    assert {e["rule"]: e["count"] for e in legend if "rule" in e}["grass north"] == int((grids[T0] == 1).sum())
    out = tmp_path / "o"
    out.mkdir()
    (tmp_path / "r.toml").write_text(RULES)
    r = run("effects", "apply", "--data", loose, "--rules", tmp_path / "r.toml", "-n", "--picture", out / "rules.png")
    assert r.exit_code == 0 and (out / "rules.png").is_file(), r.output
