"""The ground-effect rules in the workbench (issue 47 items 3-5), through the session and the
window's Workbench without a window: the Cell panel's why and the rules overlay (computed off the
frame's thread), the view's watch re-applying the rules to each save, a brush stroke kept as a rule
that survives an editor's repaint, and the drift marker of a tile on disk."""

from __future__ import annotations

import dataclasses
import shutil
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from wowgrass.edit.adt_edit import read_tile
from wowgrass.edit.masks import chunks_to_grid
from wowgrass.edit.rules import load_rules
from wowgrass.edit.rules_engine import apply_tile, evaluate, governing, prepare
from wowgrass.edit.rules_explain import explain_cell
from wowgrass.game.data import open_data
from wowgrass.game.maps import adt_game_path
from wowgrass.samples import MAP_NAME, build_sample_world
from wowgrass.workbench.controller import Workbench
from wowgrass.workbench.panels import pick_lines
from wowgrass.workbench.rules_bench import overlay_cells, rule_palette
from wowgrass.workbench.session import CellRef, EditSession

T0, T1 = (31, 32), (32, 32)
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


def game_file(root: Path, gp: str) -> Path:
    return root.joinpath(*gp.split("\\"))


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    """The 3.3.5 sample world (2x1 tiles) as a loose folder."""
    base = tmp_path_factory.mktemp("rulesview")
    mpq = build_sample_world(base / "mpq", "3.3.5", (2, 1), seed=0)
    loose = base / "loose"
    with open_data(mpq) as g:
        for name in g.list("*"):
            p = game_file(loose, name)
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(g.read(name))
    return loose


@pytest.fixture
def project(client, tmp_path):
    """A project folder over the client, holding both tiles (what an editor saves into)."""
    proj = tmp_path / "project"
    for key in (T0, T1):
        gp = adt_game_path(MAP_NAME, *key)
        dest = game_file(proj, gp)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(game_file(client, gp), dest)
    return proj


class Cells:
    """The terrain's cell overlays as the bridge drives them."""

    def __init__(self):
        self.mask, self.brush, self.pick, self.palette, self.data = 0, (0,) * 4, (0,) * 4, (), {}

    def look(self, palette=None, marks=None):
        if palette is not None:
            self.palette = tuple(palette)

    def set(self, key, img):
        self.data[key] = img


def fake_scene(resident=()):
    return SimpleNamespace(tiles={k: SimpleNamespace(full=True) for k in resident},
                           terrain=SimpleNamespace(cells=Cells()), on_resident=[], keep_grass=False)


def settle(bench, timeout=60.0):
    """Frames until the workbench's thread and its jobs are done (and their results mapped)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        bench.before_frame(0.016)
        if bench.idle:
            bench.before_frame(0.016)
            if bench.idle:
                return
        time.sleep(0.01)
    raise AssertionError("the workbench never settled")


def threads_of(obj, name, seen: list):
    """Record the thread each call of ``obj.name`` runs on."""
    fn = getattr(obj, name)

    def wrapped(*a, **kw):
        seen.append(threading.get_ident())
        return fn(*a, **kw)

    setattr(obj, name, wrapped)


def repaint(raw: bytes, gp: str) -> bytes:
    """A careless repaint, as an editor saves it: every noEffectDoodad bit dropped, a road layer
    without an effect id added in a band of chunks, written by another writer's layout."""
    from wowgrass.formats.adt import alpha_encodings, write_adt

    t = read_tile(raw, gp)
    n = t.n_layers.astype(np.int64).copy()
    tex, eff, flags, alpha = t.layer_texture.copy(), t.layer_effect.copy(), t.layer_flags.copy(), t.alpha.copy()
    road = t.textures.index("Tileset\\Sample\\SampleRoad.blp")
    yy, xx = np.mgrid[0:64, 0:64]
    for i in range(96, 128):
        if n[i] < 4:
            k = n[i]
            tex[i, k], eff[i, k], flags[i, k] = road, 0, flags[i, 1] if n[i] > 1 else 0x100
            alpha[i, k] = np.where(np.abs(xx - yy) < 6, 255, 0).astype(np.uint8)
            n[i] += 1
    new = dataclasses.replace(t, n_layers=n.astype(t.n_layers.dtype), layer_texture=tex, layer_effect=eff,
                              layer_flags=flags, alpha=alpha,
                              alpha_encoding=alpha_encodings(flags, n, t.big_alpha).astype(t.alpha_encoding.dtype),
                              no_effect_doodad=np.zeros_like(t.no_effect_doodad))
    return write_adt(new)


def water_cell(data, key=T1):
    from wowgrass.edit.footprints import footprint

    gp = adt_game_path(MAP_NAME, *key)
    t = read_tile(data.read(gp), gp)
    idx, r, c = (int(v) for v in np.argwhere(footprint("liquid", t))[0])
    return t, idx, CellRef(key, tuple(int(v) for v in t.index_xy[idx]), (c, r))


# ----------------------------------------------------------------------------- item 3

def test_the_cell_panel_says_which_rule_decided_the_cell_worked_out_off_the_frames_thread(client, tmp_path):
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES)
    with open_data(client) as data:
        bench = Workbench(EditSession(data, MAP_NAME), fake_scene(), audit=False, panels=False, workers=0,
                          rules=rules)
        try:
            seen: list = []
            threads_of(bench.rules, "explain", seen)
            t, idx, ref = water_cell(data)
            bench.show_cell(ref)
            assert bench.picked_info is None  # the pick itself does no rules work
            settle(bench)
            info = bench.picked_info
            assert seen and threading.get_ident() not in seen
            want = explain_cell(data, prepare(load_rules(rules), data), T1, idx, ref.cell)
            assert info["rules"] == want
            assert info["rules"]["governed_by"] == 'exclude "water" (line 21)'
            lines = pick_lines(ref, info, None)
            assert 'governed by exclude "water" (line 21)' in lines
            assert any(ln.startswith("why: bare: excluded by exclude \"water\"") for ln in lines), lines
            assert any("the client scatters: nothing here" in ln for ln in lines), lines
            # the file changed on disk: the next pick reads it again (the water rule gone)
            rules.write_text(RULES.replace('[[exclude]]\nname = "water"\nunder = "liquid"\n', ""))
            bench.show_cell(None)
            bench.show_cell(ref)
            settle(bench)
            assert "water" not in " ".join(pick_lines(ref, bench.picked_info, None))
        finally:
            bench.close()


def test_the_rules_overlay_colours_each_cell_by_its_rule_and_names_them(client, tmp_path):
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES)
    with open_data(client) as data:
        scene = fake_scene([T0, T1])
        bench = Workbench(EditSession(data, MAP_NAME), scene, audit=False, panels=False, workers=0, rules=rules)
        try:
            seen: list = []
            threads_of(bench.rules, "governing_image", seen)
            bench.toggle_overlay("sets", True)
            settle(bench)
            regular = {k: scene.terrain.cells.data[k].copy() for k in (T0, T1)}
            bench.toggle_overlay("rules", True)
            assert not bench.overlays["sets"]  # one palette: the two overlays take turns
            settle(bench)
            cells = scene.terrain.cells
            assert seen and threading.get_ident() not in seen
            assert cells.palette == tuple(rule_palette()) and cells.mask == 1
            plan = prepare(load_rules(rules), data)
            for key in (T0, T1):
                gp = adt_game_path(MAP_NAME, *key)
                t = read_tile(data.read(gp), gp)
                gov = overlay_cells(governing(t, key, plan, evaluate(t, key, plan, data=data)))
                img = cells.data[key]
                assert (img[..., 0] == np.where(gov >= 0, gov % 20 + 1, 0)).all()
                assert (img[..., 1] == regular[key][..., 1]).all()  # the regular flags stay under it
                assert len(np.unique(gov)) >= 3
            legend = bench.rules.legend()
            assert [lb for lb, _rgb in legend] == [r.label for r in plan.rules.rules]
            bench.toggle_overlay("sets", True)  # back: the sets' palette and colours
            settle(bench)
            assert not bench.overlays["rules"] and cells.palette == tuple(bench.colours.shader_colours())
            assert all((cells.data[k][..., 0] == regular[k][..., 0]).all() for k in (T0, T1))
        finally:
            bench.close()


# ----------------------------------------------------------------------------- item 4

def test_the_views_watch_re_applies_the_rules_to_each_saved_tile_and_says_it(client, project):
    (project / "wowgrass-rules.toml").write_text(RULES)  # the project's default rules file
    from wowgrass.workbench.rules_bench import default_rules_file

    with open_data(client, over=[project]) as data:
        assert default_rules_file(data) == project / "wowgrass-rules.toml"
        bench = Workbench(EditSession(data, MAP_NAME), fake_scene(), audit=False, panels=False, workers=0,
                          watch=[project], rules=default_rules_file(data))
        bench.install(SimpleNamespace(target=None), SimpleNamespace())
        try:
            gp = adt_game_path(MAP_NAME, *T0)
            path = game_file(project, gp)
            saved = repaint(path.read_bytes(), gp)
            path.write_bytes(saved)
            deadline = time.monotonic() + 30
            while not bench.rules.saves and time.monotonic() < deadline:
                time.sleep(0.05)
            settle(bench)
            res = bench.rules.saves[0]
            assert res.status == "applied" and res.tile == T0 and res.bytes_changed > 0
            plan = prepare(load_rules(project / "wowgrass-rules.toml"), data)
            want, rep = apply_tile(saved, gp, T0, plan, data=data)
            assert path.read_bytes() == want  # as a batch apply of the same rules on the editor's save
            line = next(m for m in bench.messages if m.startswith("rules: 31,32:"))
            assert f"{rep.bytes_changed:,} bytes changed" in line
            assert all(plan.rule(o).name in line for o in rep.fired()) and "fired" in line
            time.sleep(1.0)  # the rules' own write comes back from the watcher: not reloaded a second time
            settle(bench)
            reloads = lambda p: [r for r in bench.reloads if str(p) in r["paths"]]  # noqa: E731
            assert len(reloads(path)) == 1, bench.reloads
            # the rules file saved (it lies in the watched project): read again and applied to every
            # tile, as `effects apply --watch` does; the window's rules follow it
            (project / "wowgrass-rules.toml").write_text(RULES + '\n[[exclude]]\nname = "steep"\nslope_above = 25\n')
            deadline = time.monotonic() + 30
            while not any(r.status == "rules-reloaded" for r in bench.rules.saves) and time.monotonic() < deadline:
                time.sleep(0.05)
            settle(bench)
            assert any(m.startswith("rules: wowgrass-rules.toml: rules read again") for m in bench.messages), \
                bench.messages
            plan = prepare(load_rules(project / "wowgrass-rules.toml"), data)
            assert bench.rules.plan.rules.rules[-1].name == "steep"
            deadline = time.monotonic() + 30
            while len(reloads(path)) < 2 and time.monotonic() < deadline:  # the tiles it rewrote: reloaded
                time.sleep(0.05)
                settle(bench)
            assert len(reloads(path)) == 2, bench.reloads
            for key in (T0, T1):
                gp = adt_game_path(MAP_NAME, *key)
                raw = game_file(project, gp).read_bytes()
                assert apply_tile(raw, gp, key, plan, data=data)[1].bytes_changed == 0  # as the new rules want
        finally:
            bench.close()


# ----------------------------------------------------------------------------- item 5

def test_a_stroke_kept_as_a_rule_survives_an_editors_repaint_and_drift_is_marked(client, project):
    from wowgrass.edit.rules_apply import apply_rules, write_files

    with open_data(client, over=[project]) as data:
        session = EditSession(data, MAP_NAME)
        bench = Workbench(session, fake_scene(), audit=False, panels=False, workers=0,
                          rules=project / "wowgrass-rules.toml")
        try:
            rules_file = project / "wowgrass-rules.toml"
            assert not rules_file.exists()
            before = session.tile(T0).no_effect_doodad.copy()
            bench.choose_tool("rule")
            bench.tools.extra["rule"] = {"name": "glade", "reason": "an empty glade", "include": False, "dabs": []}
            bench.tools.radius = 12.0
            x0, y0 = (float(v) for v in session.tile(T0).cell_centres()[120, 4, 4])
            bench.begin_stroke()
            for k in range(4):
                bench.apply_tool(x0 - 8.0 * k, y0 + 3.0 * k)
            bench.end_stroke()
            settle(bench)
            assert any(m.startswith("kept as exclude rule 'glade'") for m in bench.messages), bench.messages
            rs = load_rules(rules_file)
            assert [(r.kind, r.name, r.reason) for r in rs.rules] == [("exclude", "glade", "an empty glade")]
            painted = session.tile(T0).no_effect_doodad
            from PIL import Image

            pic = np.asarray(Image.open(project / "masks" / "glade.png")) > 0
            assert pic.shape == (128, 128)
            grid = chunks_to_grid(session.tile(T0), painted & ~before)
            assert grid.any() and (pic[grid]).all()  # every cell the stroke excluded is in the picture
            assert chunks_to_grid(session.tile(T0), painted)[pic].all()  # and nothing the stroke did not paint
            assert session.history == [h for h in session.history if h.startswith("rule stroke")]

            bench.save(None, in_place=True)
            settle(bench)
            gp = adt_game_path(MAP_NAME, *T0)
            path = game_file(project, gp)
            # the editor repaints the tile: the bits zeroed, a layer added
            path.write_bytes(repaint(path.read_bytes(), gp))
        finally:
            bench.close()
        # the view opened again on the repainted map: as each tile arrives, its drift from the rules
        # is checked (off the frame's thread) and the drifted one marked
        scene = fake_scene()
        bench = Workbench(EditSession(data, MAP_NAME), scene, audit=False, panels=False, workers=0, rules=rules_file)
        try:
            seen: list = []
            threads_of(bench.rules, "check_drift", seen)
            for key in (T0, T1):
                for fn in scene.on_resident:
                    fn(key)
            settle(bench)
            assert seen and threading.get_ident() not in seen
            assert sorted(bench.rules.drifts) == [T0, T1] and T0 in dict(bench.rules.drifted())
            d0, d1 = bench.rules.drifts[T0], bench.rules.drifts[T1]
            assert d0.exclude_cells == int(pic.sum()) and d1.exclude_cells == 0  # the glade's cells, lost
            assert list(T0) in [d["tile"] for d in bench.report()["rules"]["drifted"]]
            # the rules applied (as `effects apply` or the watch would): the stroke's cells excluded again
            plan = prepare(load_rules(rules_file), data)
            write_files(apply_rules(data, plan).files, data, in_place=True)
            t = read_tile(path.read_bytes(), gp)
            assert chunks_to_grid(t, t.no_effect_doodad)[pic].all()
            assert bench.rules.check_drift([T0])[T0].drifted is False and T0 not in dict(bench.rules.drifted())
        finally:
            bench.close()


def test_keeping_a_stroke_needs_a_rules_file(client):
    with open_data(client) as data:
        bench = Workbench(EditSession(data, MAP_NAME), fake_scene(), audit=False, panels=False, workers=0)
        try:
            bench.choose_tool("rule")
            bench.begin_stroke()
            assert not bench.painting and "no rules file" in bench.messages[-1]
        finally:
            bench.close()


def test_the_worker_processes_give_the_same_why_rules_overlay_and_drift(client, tmp_path):
    from wowgrass.edit.rules_explain import drift

    rules = tmp_path / "rules.toml"
    rules.write_text(RULES)
    with open_data(client) as data:
        scene = fake_scene([T0, T1])
        bench = Workbench(EditSession(data, MAP_NAME), scene, audit=False, panels=False, workers=1, rules=rules)
        try:
            seen: list = []
            threads_of(bench.rules, "governing_image", seen)
            threads_of(bench.rules, "check_drift", seen)
            threads_of(bench.rules, "explain", seen)
            bench.toggle_overlay("rules", True)
            for key in (T0, T1):
                for fn in scene.on_resident:
                    fn(key)
            _t, idx, ref = water_cell(data)
            bench.show_cell(ref)
            settle(bench)
            assert bench.workers is not None and bench.workers.pids and not seen  # done in the processes
            plan = prepare(load_rules(rules), data)
            assert bench.picked_info["rules"] == explain_cell(data, plan, T1, idx, ref.cell)
            assert 'governed by exclude "water" (line 21)' in pick_lines(ref, bench.picked_info, None)
            for key in (T0, T1):
                gp = adt_game_path(MAP_NAME, *key)
                t = read_tile(data.read(gp), gp)
                d = evaluate(t, key, plan, data=data)
                gov = overlay_cells(governing(t, key, plan, d))
                assert (scene.terrain.cells.data[key][..., 0] == np.where(gov >= 0, gov % 20 + 1, 0)).all()
                want = drift(t, key, plan, data=data, decision=d)
                got = bench.rules.drifts[key]
                assert got.to_json() == want.to_json() and got.drifted
        finally:
            bench.close()


def test_view_rules_is_for_the_windows_workbench(tmp_path):
    from click.testing import CliRunner

    from wowgrass.cli.main import cli

    rules = tmp_path / "rules.toml"
    rules.write_text(RULES)
    res = CliRunner().invoke(cli, ["view", "--rules", str(rules), "--output", str(tmp_path / "a.png")])
    assert res.exit_code == 2 and "--rules is for the window's workbench" in res.output, res.output
    bad = tmp_path / "bad.toml"
    bad.write_text("version = 1\n\n[[exclude]]\nname = 'x'\nunder = 'trees'\n")
    res = CliRunner().invoke(cli, ["view", "--rules", str(bad), "--output", str(tmp_path / "a.png")])
    assert res.exit_code == 2 and "bad.toml:5" in res.output and "under" in res.output, res.output
    res = CliRunner().invoke(cli, ["view", "--rules", str(tmp_path / "none.toml"), "--output", str(tmp_path / "a.png")])
    assert res.exit_code == 2 and "none.toml" in res.output and "Traceback" not in res.output, res.output
    res = CliRunner().invoke(cli, ["view", "--help"])
    assert "--rules FILE" in res.output and "rules" in res.output.split("--overlay")[1].split("\n")[0]


def test_a_stroke_kept_as_an_include_rule_clears_its_cells_again(client, project):
    from wowgrass.edit.rules_apply import apply_rules, write_files
    from wowgrass.workbench.rules_bench import brush_cells, keep_stroke

    rules_file = project / "wowgrass-rules.toml"
    rules_file.write_text(RULES.split("[[include]]")[0])  # no include rule: a set bit stays unless one clears it
    with open_data(client, over=[project]) as data:
        session = EditSession(data, MAP_NAME)
        t = session.tile(T1)
        x, y = (float(v) for v in t.cell_centres()[100, 3, 3])
        dabs = [(x, y, 10.0), (x - 6.0, y + 4.0, 10.0)]
        with session.stroke("include stroke"):
            for dx, dy, r in dabs:
                session.exclude(dx, dy, r, clear=True)
        res = keep_stroke(session, dabs, rules_file, include=True, name="grass")  # the name is taken
        assert res["kind"] == "include" and res["rule"] == "grass 2"
        cells = brush_cells(session, *dabs[0]) [T1] | brush_cells(session, *dabs[1])[T1]
        assert res["cell_count"] == int(cells.sum())
        rs = load_rules(rules_file)
        assert (rs.rules[-1].kind, rs.rules[-1].name) == ("include", "grass 2")
        # every bit set on the tile (a careless editor), the rules applied: the include clears the
        # stroke's cells again except where an exclude rule holds (an exclude wins)
        from wowgrass.edit.adt_edit import exclude_cells

        gp = adt_game_path(MAP_NAME, *T1)
        path = game_file(project, gp)
        path.write_bytes(exclude_cells(path.read_bytes(), gp, np.ones((256, 8, 8), bool))[0])
        plan = prepare(rs, data)
        write_files(apply_rules(data, plan).files, data, in_place=True)
        after = read_tile(path.read_bytes(), gp)
        d = evaluate(after, T1, plan, data=data)
        assert not after.no_effect_doodad[cells & (d.exclude_rule < 0)].any()
        assert (cells & (d.exclude_rule < 0)).any()
        assert after.no_effect_doodad[~cells].all()  # the rest as the editor set it


REAL = {"3.3.5": ("continent4229.adt", "continent", (42, 29), "continent.wdt", "*MudGrass*", 453),
        "1.12": ("Azeroth_38_46.adt", "Azeroth", (38, 46), None, "*Ash*", 1493)}


@pytest.mark.parametrize("build", sorted(REAL))
def test_the_rules_in_the_workbench_on_a_real_tile(realdata, tmp_path, build):
    """The shared real tiles (continent4229.adt, 3.3.5 with its WDT; Azeroth_38_46.adt, 1.12)
    in a project over their tables: the Cell panel's why, the overlay, the drift marker, and a
    stroke kept as a rule that an apply puts back after the tile's bits are dropped."""
    from wowgrass.edit.adt_edit import exclude_cells
    from wowgrass.edit.rules_apply import apply_rules, write_files
    from wowgrass.workbench.rules_bench import keep_stroke

    name, map_name, key, wdt, glob, effect = REAL[build]
    client, project = tmp_path / "client", tmp_path / "project"
    client.mkdir()
    if wdt:
        shutil.copy(realdata / "adt" / wdt, client / wdt)
    for t in ("GroundEffectTexture.dbc", "GroundEffectDoodad.dbc"):
        shutil.copy(realdata / "dbc" / build / t, client / t)
    gp = adt_game_path(map_name, *key)
    path = game_file(project, gp)
    path.parent.mkdir(parents=True)
    shutil.copy(realdata / "adt" / name, path)
    rules_file = project / "wowgrass-rules.toml"
    rules_file.write_text(f'[[assign]]\nname = "ground"\ntextures = ["{glob}"]\neffect = {effect}\n\n'
                          '[[exclude]]\nname = "steep"\nslope_above = 30\nmargin = 2\n')
    with open_data(client, over=[project]) as data:
        scene = fake_scene([key])
        session = EditSession(data, map_name)
        bench = Workbench(session, scene, audit=False, panels=False, workers=0, rules=rules_file)
        try:
            plan = prepare(load_rules(rules_file), data)
            t = session.tile(key)
            d = evaluate(t, key, plan, data=data)
            gov = governing(t, key, plan, d)
            steep = next(r.order for r in plan.rules.rules if r.name == "steep")
            idx, r, c = (int(v) for v in np.argwhere(gov == steep)[0])
            ref = CellRef(key, tuple(int(v) for v in t.index_xy[idx]), (c, r))
            bench.show_cell(ref)
            bench.toggle_overlay("rules", True)
            for fn in scene.on_resident:
                fn(key)
            settle(bench)
            assert bench.picked_info["rules"] == explain_cell(data, plan, key, idx, (c, r), t=t)
            assert f"governed by {plan.rule(steep).label}" in pick_lines(ref, bench.picked_info, None)
            img = scene.terrain.cells.data[key]
            assert (img[..., 0] == np.where(overlay_cells(gov) >= 0, overlay_cells(gov) % 20 + 1, 0)).all()
            assert dict(bench.rules.drifted()).get(key, 0) > 0  # the steep cells are not excluded on disk
            x, y = (float(v) for v in t.cell_centres()[200, 4, 4])
            res = keep_stroke(session, [(x, y, 15.0)], rules_file, name="glade")
        finally:
            bench.close()
        raw = path.read_bytes()
        path.write_bytes(exclude_cells(raw, gp, np.ones((256, 8, 8), bool), clear=True)[0])  # the bits dropped
        plan = prepare(load_rules(rules_file), data)
        write_files(apply_rules(data, plan).files, data, in_place=True)
        after = read_tile(path.read_bytes(), gp)
        from PIL import Image

        pic = np.asarray(Image.open(res["picture"])) > 0
        assert pic.any() and chunks_to_grid(after, after.no_effect_doodad)[pic].all()
