"""Watching another editor's saves (issue 40.5): the file watcher (events and polling), an edit
session reloading a tile rewritten on disk, and ``bake --watch`` baking saved tiles into the cache.
Every wait is for an event, bounded: a change that is never reported fails the test."""

from __future__ import annotations

import hashlib
import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from wowgrass.edit.adt_edit import exclude_cells
from wowgrass.game.data import open_data
from wowgrass.game.maps import adt_game_path
from wowgrass.grass import bundle as B
from wowgrass.samples import MAP_NAME, build_sample_world
from wowgrass.workbench import watch as W
from wowgrass.workbench.disk import SessionFiles
from wowgrass.workbench.session import EditSession

WAIT = 30.0       # seconds: only a failure ever waits this long
TILE = (31, 32)


def expect(q: queue.Queue, what: str, pred=lambda item: True):
    """The first item of ``q`` for which ``pred`` holds; fails after WAIT seconds without one."""
    while True:
        try:
            item = q.get(timeout=WAIT)
        except queue.Empty:
            pytest.fail(f"no {what} within {WAIT:.0f} s")
        if pred(item):
            return item


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    return build_sample_world(tmp_path_factory.mktemp("client"), "3.3.5", (2, 1), seed=0)


@pytest.fixture
def project(client, tmp_path):
    """A loose project folder holding one tile of the sample map (as a map editor saved it)."""
    gp = adt_game_path(MAP_NAME, *TILE)
    with open_data(client) as g:
        raw = g.read(gp)
    p = tmp_path / "proj" / Path(*gp.split("\\"))
    p.parent.mkdir(parents=True)
    p.write_bytes(raw)
    return tmp_path / "proj", p, raw


def save_like_an_editor(path: Path, raw: bytes) -> None:
    """A temporary beside the file, then a rename over it (what careful editors do)."""
    tmp = path.with_name("." + path.name + ".tmp")
    tmp.write_bytes(raw)
    os.replace(tmp, path)


@pytest.mark.parametrize("poll", [False, True], ids=["events", "polling"])
def test_file_watcher_reports_a_saved_file(tmp_path, poll):
    (tmp_path / "sub").mkdir()
    changes: queue.Queue = queue.Queue()
    with W.FileWatcher([tmp_path], changes.put, poll=poll, debounce_ms=50) as w:
        assert w.mode == ("polling" if poll else "events")
        target = tmp_path / "sub" / "Map_1_2.adt"
        save_like_an_editor(target, b"tile")
        got = expect(changes, "change", lambda paths: target in paths)
        assert all(not p.name.startswith(".") for p in got)     # the temporary is not reported
        (tmp_path / "notes.bak").write_bytes(b"x")              # backups are not reported either
        target.write_bytes(b"tile again")
        got = expect(changes, "second change", lambda paths: target in paths)
        assert not any(p.suffix == ".bak" for p in got)
    assert w._thread is None


def test_file_watcher_polls_where_events_are_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("WATCHFILES_FORCE_POLLING", "1")
    assert W.needs_polling([tmp_path]) == "WATCHFILES_FORCE_POLLING is set"
    monkeypatch.delenv("WATCHFILES_FORCE_POLLING")
    assert W._mount_type(tmp_path) is not None            # /proc/mounts names this folder's file system
    monkeypatch.setattr(W, "_mount_type", lambda path: "nfs4")
    assert "nfs4" in W.needs_polling([tmp_path])
    monkeypatch.undo()
    real = W.FileWatcher._make

    def no_events(self, polling):
        if not polling:
            raise OSError(28, "inotify watch limit reached")
        return real(self, polling)

    monkeypatch.setattr(W.FileWatcher, "_make", no_events)
    changes: queue.Queue = queue.Queue()
    with W.FileWatcher([tmp_path], changes.put, debounce_ms=50) as w:
        assert w.mode == "polling" and "inotify" in w.why_polling
        (tmp_path / "a.adt").write_bytes(b"x")
        expect(changes, "change", lambda paths: tmp_path / "a.adt" in paths)
    with pytest.raises(OSError):
        W.FileWatcher([tmp_path], changes.put, poll=False).start()

    class Broken:      # an event watcher that fails once running
        def watch(self, *a):
            raise RuntimeError("watch descriptor lost")

        def close(self):
            pass

    monkeypatch.setattr(W.FileWatcher, "_make", lambda self, polling: Broken() if not polling else real(self, polling))
    with W.FileWatcher([tmp_path], changes.put, poll=False, debounce_ms=50) as w:
        assert w.fell_back.wait(WAIT), "the watcher did not fall back to polling"
        assert w.mode == "polling" and "watch descriptor lost" in w.why_polling
        (tmp_path / "b.adt").write_bytes(b"y")
        expect(changes, "change after the fallback", lambda paths: tmp_path / "b.adt" in paths)
    with pytest.raises(FileNotFoundError):
        W.FileWatcher([tmp_path / "missing"], changes.put)


def test_a_session_reloads_a_tile_rewritten_on_disk(client, project):
    root, path, raw = project
    data = open_data([client, root])
    s = EditSession(data, MAP_NAME)
    assert s.tile_bytes(TILE) == raw
    changes: queue.Queue = queue.Queue()
    s.subscribe(changes.put)
    new, _ = exclude_cells(raw, "x", np.ones((256, 8, 8), bool))
    w = SessionFiles(s).watch(debounce_ms=50)
    try:
        assert w.roots == [root]          # the project only: the client is archives
        save_like_an_editor(path, new)
        ch = expect(changes, "reload", lambda c: TILE in c.chunks)
    finally:
        w.stop()
    assert ch.label == "reload" and ch.chunks[TILE] == set(range(256))
    assert s.tile_bytes(TILE) == new and s.tile(TILE).no_effect_doodad.all() and not s.changed_tiles


def test_bake_on_save_bakes_each_saved_tile(client, project):
    root, path, raw = project
    results: queue.Queue = queue.Queue()
    with open_data([client, root]) as data:
        job = W.BakeOnSave(data, MAP_NAME, on_result=results.put)
        job.start()
        try:
            some = np.zeros((256, 8, 8), bool)
            some[:64] = True
            first, _ = exclude_cells(raw, "x", some)
            save_like_an_editor(path, first)
            res = expect(results, "bake", lambda r: not isinstance(r, tuple))
            assert res.tile == TILE and not res.cache_hit
            with B.read_bundle(res.path) as b:
                assert b.provenance["adt_sha256"] == hashlib.sha256(first).hexdigest()
                assert b.cell_counts[:64].sum() == 0
            second, _ = exclude_cells(raw, "x", np.ones((256, 8, 8), bool))
            save_like_an_editor(path, second)
            res2 = expect(results, "second bake", lambda r: not isinstance(r, tuple))
            with B.read_bundle(res2.path) as b:
                assert b.provenance["adt_sha256"] == hashlib.sha256(second).hexdigest()
                assert b.instance_count == 0
            assert res2.path != res.path and not Path(res.path).exists()    # the older bundle pruned
            path.write_bytes(b"MVER half a tile")                        # a broken save is said, not fatal
            tile, err = expect(results, "error", lambda r: isinstance(r, tuple))
            assert tile == TILE and f"{MAP_NAME}_31_32.adt" in str(err)
        finally:
            job.stop()


def test_bake_watch_command(client, project):
    root, path, raw = project
    cmd = [sys.executable, "-m", "wowgrass", "bake", "--data", str(client), "--data", str(root), "--tile", "31,32",
           "--watch", "--watch-count", "1", "--json"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue = queue.Queue()

    def read_err():
        for line in proc.stderr:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read_err, daemon=True).start()
    try:
        line = expect(lines, "'watching' line", lambda ln: ln is None or ln.startswith("watching"))
        assert line is not None, "bake --watch ended before watching"
        assert str(root) in line and "Ctrl-C" in line
        new, _ = exclude_cells(raw, "x", np.ones((256, 8, 8), bool))
        save_like_an_editor(path, new)
        out, _ = proc.communicate(timeout=WAIT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0
    first, watched = out.split("\n}\n", 1)                 # the bake's document, then one line per bake
    assert json.loads(first + "}")["tiles"][0]["tile"] == list(TILE)
    baked = json.loads(watched.strip())
    assert baked["tile"] == list(TILE) and baked["instance_count"] == 0 and Path(baked["file"]).exists()


def test_bake_watch_refusals(client):
    from click.testing import CliRunner

    from wowgrass.cli.main import cli

    r = CliRunner().invoke(cli, ["bake", "--data", str(client), "--watch-count", "1"])
    assert r.exit_code == 2 and "--watch" in r.stderr
    r = CliRunner().invoke(cli, ["bake", "--data", str(client), "--tile", "31,32", "--watch"])
    assert r.exit_code == 2 and "MPQ chain" in r.stderr and "Traceback" not in r.output


def test_bake_watch_stops_on_sigterm(client, project):
    import signal

    root, _path, _raw = project
    proc = subprocess.Popen([sys.executable, "-m", "wowgrass", "bake", "--data", str(client), "--data", str(root),
                             "--tile", "31,32", "--watch"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue = queue.Queue()

    def read_err():
        for ln in proc.stderr:
            lines.put(ln)
        lines.put(None)

    threading.Thread(target=read_err, daemon=True).start()
    try:
        line = expect(lines, "'watching' line", lambda ln: ln is None or ln.startswith("watching"))
        assert line is not None, "bake --watch ended before watching"
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=WAIT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    rest = []
    while (ln := lines.get(timeout=WAIT)) is not None:
        rest.append(ln)
    assert proc.returncode == 0 and not any("Traceback" in ln for ln in rest)
