"""`effects apply --watch` (issue 47): a scripted editor session repaints tiles of the sample world
and a real tile (a layer added with no effect id, alpha maps changed, layers reordered) and saves
them in place while the rules follow: the watched result equals a batch apply of the same rules
byte for byte, and every byte outside the ground-effect fields is the script's save. Two saves in
quick succession, a truncated save, a delete and a rename. Every wait is on a condition."""

from __future__ import annotations

import dataclasses
import json
import os
import queue
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from test_rules import RULES, game_file, outside_fields_equal

from wowgrass.edit.adt_edit import read_tile
from wowgrass.edit.rules import parse_rules
from wowgrass.edit.rules_apply import RulesOnSave, apply_rules, write_files
from wowgrass.edit.rules_engine import apply_tile, prepare
from wowgrass.formats.adt import write_adt
from wowgrass.game.data import open_data
from wowgrass.game.maps import adt_game_path
from wowgrass.samples import MAP_NAME, build_sample_world
from wowgrass.workbench.watch import FileWatcher

T0 = (31, 32)
WAIT = 20.0


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    base = tmp_path_factory.mktemp("watch")
    data = build_sample_world(base / "mpq", "3.3.5", (2, 1), seed=0)
    loose = base / "loose"
    with open_data(data) as g:
        for name in g.list("*"):
            p = game_file(loose, name)
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(g.read(name))
    return loose


def repaint(raw: bytes, gp: str, step: int) -> bytes:
    """An editor's repaint, saved in its own writer's layout: in some chunks a layer added (road or
    grass, no effect id), in others the alpha maps moved, in others layers 1 and 2 swapped."""
    t = read_tile(raw, gp)
    n = t.n_layers.astype(np.int64).copy()
    tex, eff, flags = t.layer_texture.copy(), t.layer_effect.copy(), t.layer_flags.copy()
    alpha = t.alpha.copy()
    road = t.textures.index("Tileset\\Sample\\SampleRoad.blp")
    grass = t.textures.index("Tileset\\Sample\\SampleGrass.blp")
    rng = np.random.default_rng(step)
    chunks = rng.permutation(256)
    add = [i for i in chunks[:80] if n[i] < 4][:40]
    for j, i in enumerate(add):
        k = n[i]
        tex[i, k], eff[i, k], flags[i, k] = (road, grass)[j % 2], 0, flags[i, 1] if n[i] > 1 else 0x100
        yy, xx = np.mgrid[0:64, 0:64]
        alpha[i, k] = np.where((xx + yy + step * 7) % 40 < 14, 230, 0).astype(np.uint8)
        n[i] += 1
    for i in chunks[80:160]:
        if n[i] > 1:
            alpha[i, 1:n[i]] = np.roll(alpha[i, 1:n[i]], 9 + step, axis=-1)
    for i in chunks[160:]:
        if n[i] > 2:
            for a in (tex, eff, flags):
                a[i, [1, 2]] = a[i, [2, 1]]
            alpha[i, [1, 2]] = alpha[i, [2, 1]]
    from wowgrass.formats.adt import alpha_encodings

    new = dataclasses.replace(t, n_layers=n.astype(t.n_layers.dtype), layer_texture=tex, layer_effect=eff,
                              layer_flags=flags, alpha=alpha,
                              alpha_encoding=alpha_encodings(flags, n, t.big_alpha).astype(t.alpha_encoding.dtype))
    out = write_adt(new)
    back = read_tile(out, gp)
    assert (back.n_layers == n).all() and (back.layer_effect[np.arange(256)[add], n[add] - 1] == 0).all()
    return out


class Session:
    """A project folder with rules, watched by RulesOnSave through the FileWatcher."""

    def __init__(self, client: Path, tmp: Path, rules_text: str = RULES, *, out_dir=None, tile_src=None,
                 map_name=MAP_NAME, tile=T0, rules_in_project: bool = False):
        self.project = tmp / "project"
        self.cr = tile
        self.gp = adt_game_path(map_name, *tile)
        self.tile = game_file(self.project, self.gp)
        self.tile.parent.mkdir(parents=True)
        shutil.copy(tile_src or game_file(client, self.gp), self.tile)
        self.data = open_data(client, over=[self.project])
        self.rules_path = (self.project if rules_in_project else tmp) / "rules.toml"
        self.rules_path.write_text(rules_text)
        self.plan = prepare(parse_rules(rules_text, self.rules_path), self.data)
        write_files(apply_rules(self.data, self.plan).files, self.data, in_place=True)   # the batch apply first
        self.results: queue.Queue = queue.Queue()
        self.job = RulesOnSave(self.data, self.plan, out_dir=out_dir, on_result=self.results.put,
                               rules_path=self.rules_path if rules_in_project else None)
        self.watcher = FileWatcher([self.project], self.job, debounce_ms=50)
        self.watcher.start()

    def batch(self, raw: bytes) -> bytes:
        """A batch apply of the same rules to ``raw``."""
        new, _rep = apply_tile(raw, self.gp, self.cr, self.plan, data=self.data)
        return new

    def next(self, status=None):
        deadline = time.monotonic() + WAIT
        while True:
            res = self.results.get(timeout=max(0.01, deadline - time.monotonic()))
            if status is None or res.status == status:
                return res

    def wait_for(self, cond, what: str):
        deadline = time.monotonic() + WAIT
        while not cond():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            time.sleep(0.01)

    def close(self):
        self.watcher.stop()
        self.data.close()


def save_in_place(path: Path, raw: bytes) -> None:
    """As an editor that writes over its file (truncate, write)."""
    with open(path, "r+b" if path.exists() else "wb") as f:
        f.truncate(0)
        f.write(raw)


@pytest.fixture
def session(client, tmp_path):
    s = Session(client, tmp_path)
    yield s
    s.close()


def test_a_repaint_saved_in_place_is_put_right_as_a_batch_apply_would(session):
    s = session
    for step in range(2):
        saved = repaint(s.tile.read_bytes(), s.gp, step)
        save_in_place(s.tile, saved)
        res = s.next()
        assert res.status == "applied" and res.bytes_changed > 0 and res.written == s.tile, res.line()
        assert "grass north" in res.fired or "grass" in res.fired
        now = s.tile.read_bytes()
        assert now == s.batch(saved)                      # byte for byte a batch apply
        assert outside_fields_equal(saved, now)           # the editor's work, every other byte
        t = read_tile(now, s.gp)
        exists = np.arange(4)[None, :] < t.n_layers[:, None]
        grass = t.textures.index("Tileset\\Sample\\SampleGrass.blp")
        assert set(t.layer_effect[exists & (t.layer_texture == grass)].tolist()) == {1002}
    # its own writes come back as events and are recognised, not taken again
    s.wait_for(lambda: s.job.own_writes >= 2, "the watch's own two writes seen as such")
    assert s.results.empty()


def test_two_saves_in_quick_succession_end_as_the_second(session):
    s = session
    a = repaint(s.tile.read_bytes(), s.gp, 3)
    b = repaint(a, s.gp, 4)
    save_in_place(s.tile, a)
    save_in_place(s.tile, b)
    want = s.batch(b)
    s.wait_for(lambda: s.tile.read_bytes() == want, "the second save put right")
    res = s.next("applied")
    assert res.written == s.tile
    assert outside_fields_equal(b, s.tile.read_bytes())


def test_a_truncated_save_is_reported_and_left_alone(session):
    s = session
    s.job.parse_wait_s = 0.3
    good = repaint(s.tile.read_bytes(), s.gp, 5)
    cut = good[: len(good) // 3]
    save_in_place(s.tile, cut)
    res = s.next()
    assert res.status == "unparsable" and "left alone" in res.message, res.line()
    assert s.tile.read_bytes() == cut
    save_in_place(s.tile, good)                       # the editor saves again, whole
    res = s.next()
    assert res.status == "applied" and s.tile.read_bytes() == s.batch(good)


def test_a_save_completed_late_is_waited_for(session):
    """An editor that writes its file in two parts with a pause: taken once it parses."""
    s = session
    good = repaint(s.tile.read_bytes(), s.gp, 6)
    with open(s.tile, "r+b") as f:
        f.truncate(0)
        f.write(good[:1000])
        f.flush()
        time.sleep(0.15)
        f.write(good[1000:])
    s.wait_for(lambda: s.tile.read_bytes() == s.batch(good), "the completed save put right")


def test_a_delete_and_a_rename(session):
    s = session
    s.tile.unlink()
    res = s.next()
    assert res.status == "removed" and not s.tile.exists()
    # the editor writes a new file under another name and renames it into place
    saved = repaint(game_file(s.data.root, s.gp).read_bytes(), s.gp, 7)
    tmp = s.tile.with_name("WowgrassSample_31_32.adt.new")
    tmp.write_bytes(saved)
    os.replace(tmp, s.tile)
    s.wait_for(lambda: s.tile.exists() and s.tile.read_bytes() == s.batch(saved), "the renamed save put right")
    # renamed away: the tile is gone
    os.replace(s.tile, s.tile.with_name("old_31_32.adt"))
    res = s.next("removed")
    assert res.tile == T0


def test_an_overlay_folder_takes_the_result_and_the_save_stays(client, tmp_path):
    out = tmp_path / "overlay"
    out.mkdir()
    s = Session(client, tmp_path, out_dir=out)
    try:
        saved = repaint(s.tile.read_bytes(), s.gp, 8)
        save_in_place(s.tile, saved)
        res = s.next("applied")
        target = game_file(out, s.gp)
        assert res.written == target and target.read_bytes() == s.batch(saved)
        assert s.tile.read_bytes() == saved           # the editor's file untouched
    finally:
        s.close()


REAL = {"3.3.5": ("continent4229.adt", "continent", (42, 29), "continent.wdt", "*MudGrass*", 453),
        "1.12": ("Azeroth_38_46.adt", "Azeroth", (38, 46), None, "*Ash*", 1493)}


@pytest.mark.parametrize("build", sorted(REAL))
def test_a_real_tile_repainted_under_the_watch(realdata, tmp_path, build):
    """The shared real tiles in a project over a client folder of their tables (and WDT):
    continent4229.adt (MH2O, 4-bit alpha, Blizzard's layout) and Azeroth_38_46.adt (1.12, MCLQ):
    the first save is the real file's own bytes, then an editor's repaint of it in wowgrass's
    writer's layout."""
    name, map_name, tile, wdt, glob, effect = REAL[build]
    client = tmp_path / "client"
    client.mkdir()
    if wdt:
        shutil.copy(realdata / "adt" / wdt, client / wdt)
    for t in ("GroundEffectTexture.dbc", "GroundEffectDoodad.dbc"):
        shutil.copy(realdata / "dbc" / build / t, client / t)
    real = (realdata / "adt" / name).read_bytes()
    text = (f'[[assign]]\nname = "ground"\ntextures = ["{glob}"]\neffect = {effect}\n\n'
            '[[exclude]]\nname = "steep"\nslope_above = 30\nmargin = 2\n')
    (tmp_path / "w").mkdir()
    s = Session(client, tmp_path / "w", text, tile_src=realdata / "adt" / name, map_name=map_name, tile=tile)
    try:
        save_in_place(s.tile, real)
        res = s.next("applied")
        now = s.tile.read_bytes()
        assert now == s.batch(real) and outside_fields_equal(real, now) and res.bytes_changed > 0
        t = read_tile(now, s.gp)
        assert t.no_effect_doodad.sum() > read_tile(real, s.gp).no_effect_doodad.sum()
        assert set(res.fired) == {"ground", "steep"}
        t0 = read_tile(real, s.gp)
        moved = dataclasses.replace(t0, alpha=np.roll(t0.alpha, 5, axis=-1), layer_effect=np.zeros_like(t0.layer_effect))
        saved = write_adt(moved)
        save_in_place(s.tile, saved)
        s.wait_for(lambda: s.tile.read_bytes() == s.batch(saved), "the repaint put right")
        assert outside_fields_equal(saved, s.tile.read_bytes())
        exists = np.arange(4)[None, :] < t0.n_layers[:, None]
        assert (read_tile(s.tile.read_bytes(), s.gp).layer_effect[exists] != 0).any()
    finally:
        s.close()


def test_the_command_follows_saves_one_line_each(client, tmp_path):
    """`wowgrass effects apply --watch --json --watch-count 1` in a process of its own."""
    import threading

    project = tmp_path / "project"
    gp = adt_game_path(MAP_NAME, *T0)
    tile = game_file(project, gp)
    tile.parent.mkdir(parents=True)
    shutil.copy(game_file(client, gp), tile)
    (project / "wowgrass-rules.toml").write_text(RULES)
    proc = subprocess.Popen([sys.executable, "-m", "wowgrass", "effects", "apply", "--data", str(client), "--data",
                             str(project), "--in-place", "--watch", "--watch-count", "1", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out: queue.Queue = queue.Queue()
    err: queue.Queue = queue.Queue()        # both pipes read on threads: every wait below is bounded
    for pipe, q in ((proc.stdout, out), (proc.stderr, err)):
        threading.Thread(target=lambda p=pipe, q=q: [q.put(x) for x in p], daemon=True).start()
    deadline = time.monotonic() + WAIT

    def line(q):
        return q.get(timeout=max(0.01, deadline - time.monotonic()))

    try:
        doc = line(out)                        # the batch apply's document first (indented JSON)
        while doc.count("{") != doc.count("}") or not doc.strip():
            doc += line(out)
        assert json.loads(doc)["map"] == MAP_NAME
        while "watching" not in line(err):
            pass
        saved = repaint(tile.read_bytes(), gp, 9)
        save_in_place(tile, saved)
        res = json.loads(line(out))
        assert res["status"] == "applied" and res["tile"] == [31, 32] and res["changed_byte_count"] > 0
        assert proc.wait(timeout=WAIT) == 0
        assert outside_fields_equal(saved, tile.read_bytes())
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_copy_of_a_tile_elsewhere_in_the_folder_is_not_touched(session):
    s = session
    stray = s.project / "A old copy" / s.tile.name      # sorts before World/: taken first if at all
    stray.parent.mkdir()
    saved = repaint(s.tile.read_bytes(), s.gp, 10)
    stray.write_bytes(saved)
    save_in_place(s.tile, saved)
    res = s.next()
    assert res.path == s.tile and res.status == "applied"
    assert stray.read_bytes() == saved


def test_a_save_that_cannot_be_written_is_said_and_the_watch_goes_on(client, tmp_path):
    from faults import failing_folder

    out = tmp_path / "overlay"
    out.mkdir()
    s = Session(client, tmp_path, out_dir=out)
    try:
        saved = repaint(s.tile.read_bytes(), s.gp, 11)
        with failing_folder(out, "ENOSPC"):
            save_in_place(s.tile, saved)
            res = s.next()
        assert res.status == "not-written" and "as the editor left it" in res.message, res.line()
        assert s.tile.read_bytes() == saved and not game_file(out, s.gp).exists()
        again = repaint(saved, s.gp, 12)
        save_in_place(s.tile, again)                    # the disk has room again: the next save is taken
        res = s.next("applied")
        assert game_file(out, s.gp).read_bytes() == s.batch(again)
    finally:
        s.close()


def test_an_editor_writing_during_the_rename_keeps_its_save(session, monkeypatch):
    """The editor writes into its file in the instant between the watch's last check and its rename
    (an editor that writes in place, its file open): that save is put back and taken, not lost."""
    from wowgrass.edit import rules_apply

    s = session
    first = repaint(s.tile.read_bytes(), s.gp, 13)
    late = repaint(first, s.gp, 14)
    real = rules_apply.write_files_atomic
    calls = []

    def racing(files, **kw):
        if not calls:                          # the first rename: the editor saves in place just before it
            with open(s.tile, "r+b") as f:
                f.truncate(0)
                f.write(late)
        calls.append(files)
        return real(files, **kw)

    monkeypatch.setattr(rules_apply, "write_files_atomic", racing)
    save_in_place(s.tile, first)
    s.wait_for(lambda: s.tile.read_bytes() == s.batch(late), "the late save put back and put right")
    assert outside_fields_equal(late, s.tile.read_bytes())


def test_a_saved_rules_file_is_read_again_and_applied_or_refused(client, tmp_path):
    s = Session(client, tmp_path, rules_in_project=True)
    try:
        steep = RULES + "\n[[exclude]]\nname = 'steep'\nslope_above = 20\n"
        s.rules_path.write_text(steep)
        res = s.next()
        assert res.status == "rules-reloaded" and res.bytes_changed > 0 and "steep" in res.fired, res.line()
        with open_data(s.data.root, over=[s.project]) as fresh:    # what a batch apply of the new file gives
            want = apply_tile(game_file(s.data.root, s.gp).read_bytes(), s.gp, T0,
                              prepare(parse_rules(steep, s.rules_path), fresh), data=fresh)[0]
        assert s.tile.read_bytes() == want
        s.wait_for(lambda: s.job.own_writes >= 1, "the reload's own write seen as such")
        assert s.results.empty()                                 # and not taken again
        s.rules_path.write_text(steep + "\n[[exclude]]\nunder = 'trees'\n")
        res = s.next()
        assert res.status == "rules-error" and "'under'" in res.message and "rules in force stay" in res.message
        assert s.tile.read_bytes() == want                       # nothing touched
        saved = repaint(s.tile.read_bytes(), s.gp, 15)           # the rules in force still follow the editor
        save_in_place(s.tile, saved)
        res = s.next("applied")
        assert [r.name for r in s.job.plan.rules.rules][-1] == "steep"
        now = s.tile.read_bytes()
        assert now == apply_tile(saved, s.gp, T0, s.job.plan, data=s.data)[0] != s.batch(saved)
        from wowgrass.edit.masks import cell_slopes

        assert read_tile(now, s.gp).no_effect_doodad[cell_slopes(read_tile(saved, s.gp)) > 20].all()
    finally:
        s.close()
