"""The command line, round two (issue 33): closed pipes, Ctrl-C, -v, warnings that go on, why a
tile has no grass, names maps skip, WMO triangle counts, conventions, JSON keys, messages, the
cache. Real subprocesses where a signal or a pipe is the point, CliRunner elsewhere."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from wowgrass.cli.main import cli
from wowgrass.samples import MAP_NAME, build_sample_world


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return build_sample_world(tmp_path_factory.mktemp("round2") / "w", "3.3.5", (2, 1), seed=0)


@pytest.fixture(scope="module")
def loose(world, tmp_path_factory):
    """The sample world extracted to loose files (tables, models, both ADTs and the WDT)."""
    out = tmp_path_factory.mktemp("round2-loose") / "x"
    res = CliRunner().invoke(cli, ["mpq", "extract", "--data", str(world), "-o", str(out), "-q"])
    assert res.exit_code == 0, res.output
    return out


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def sub(*args, **kw):
    return subprocess.run([sys.executable, "-m", "wowgrass", *map(str, args)], capture_output=True, text=True,
                          timeout=120, **kw)


def map_dir(loose: Path) -> Path:
    return loose / "World" / "Maps" / MAP_NAME


# ----------------------------------------------------------------------------- 1. closed pipes


def _closed_pipe(*args):
    """The command with stdout a pipe whose reader has gone (what `| head -1` leaves)."""
    r, w = os.pipe()
    os.close(r)
    try:
        proc = subprocess.run([sys.executable, "-m", "wowgrass", *map(str, args)], stdout=w, stderr=subprocess.PIPE,
                              text=True, timeout=120)
    finally:
        os.close(w)
    return proc


@pytest.mark.parametrize("args", [
    ("mpq", "ls", "--data", "{world}"),
    ("maps", "--json", "--data", "{world}"),
    ("dbc", "dump", "--data", "{world}", "GroundEffectDoodad"),
    ("mpq", "cat", "--data", "{world}", "DBFilesClient\\Map.dbc"),
    ("adt", "info", "--data", "{world}", "--tile", "31,32"),
])
def test_a_closed_pipe_is_silent_and_exits_0(world, args):
    proc = _closed_pipe(*(a.format(world=world) for a in args))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "", proc.stderr


# ----------------------------------------------------------------------------- 2. Ctrl-C, SIGTERM


@pytest.fixture(scope="module")
def many_tiles(loose, tmp_path_factory):
    """A loose map of 40 copies of one tile (no WDT: the ADT files are the map), slow enough to stop."""
    root = tmp_path_factory.mktemp("round2-many") / "x"
    shutil.copytree(loose / "DBFilesClient", root / "DBFilesClient")
    shutil.copytree(loose / "World" / "NoDXT", root / "World" / "NoDXT")
    folder = root / "World" / "Maps" / MAP_NAME
    folder.mkdir(parents=True)
    src = map_dir(loose) / f"{MAP_NAME}_31_32.adt"
    for c in range(20, 28):
        for r in range(20, 25):
            shutil.copy(src, folder / f"{MAP_NAME}_{c}_{r}.adt")
    return root


def _children_gone(pgid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("delay, sig, whole_group", [
    (0.35, signal.SIGINT, False),   # while the workers start
    (0.5, signal.SIGINT, True),     # Ctrl-C at a terminal: the whole group
    (0.9, signal.SIGTERM, False),
    (2.0, signal.SIGINT, False),    # while tiles are baked
    (2.0, signal.SIGINT, True),
])
def test_a_signal_stops_a_parallel_bake_within_a_second(many_tiles, tmp_path, delay, sig, whole_group):
    env = dict(os.environ, WOWGRASS_CACHE=str(tmp_path / "cache"))
    proc = subprocess.Popen([sys.executable, "-m", "wowgrass", "bake", "--data", str(many_tiles), "--jobs", "2",
                             "--force"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    time.sleep(delay)
    if proc.poll() is not None:
        pytest.fail(f"the bake ended before the signal: {proc.communicate()}")
    sent = time.monotonic()
    (os.killpg if whole_group else os.kill)(proc.pid, sig)
    try:
        out, err = proc.communicate(timeout=5)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    stopped = time.monotonic() - sent
    assert stopped < 1.5, stopped
    assert proc.returncode == 128 + sig, (proc.returncode, err)
    assert _children_gone(proc.pid, 1.5), "a bake worker is still running"
    for bad in ("Traceback", "Exception in initializer", "cannot join", "error: aborted"):
        assert bad not in err, err
    assert err.strip().splitlines()[-1].startswith(("interrupted", "stopped by SIGTERM")), err
    if "after" in err:   # what was done, and that it is cached
        assert " of 40 tiles; " in err and "cached" in err, err
