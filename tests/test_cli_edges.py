"""The command line's edges, round three (issue 42): closed pipes, global options, JSON key names,
overwrite and unwritable outputs, exports of odd models, patch building, table display, maps and
doctor. Real subprocesses where a pipe is the point, CliRunner elsewhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from wowgrass.cli.main import cli
from wowgrass.samples import MAP_NAME, build_sample_world

REAL = os.environ.get("WOWGRASS_REALDATA")


def real(*parts) -> Path:
    if not REAL or not Path(REAL).is_dir():
        pytest.skip("WOWGRASS_REALDATA is not set (real client files)")
    p = Path(REAL).joinpath(*parts)
    assert p.exists(), p
    return p


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return build_sample_world(tmp_path_factory.mktemp("edges") / "w", "3.3.5", (1, 1), seed=0)


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _closed_pipe(*args):
    """The command with stdout a pipe whose reader has gone (what `| head -1` leaves)."""
    r, w = os.pipe()
    os.close(r)
    try:
        return subprocess.run([sys.executable, "-m", "wowgrass", *map(str, args)], stdout=w,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(w)


# ----------------------------------------------------------------------------- 42.8 closed pipes

@pytest.mark.parametrize("args", [
    ("dbc", "info", "--data", "{world}", "GroundEffectTexture"),
    ("dbc", "show", "--data", "{world}", "GroundEffectDoodad", "--id", "4"),
])
def test_rich_tables_on_a_closed_pipe_exit_0_silently(world, args):
    """rich's own closed-pipe handling exits 1; the tables go through the one handler as all output."""
    proc = _closed_pipe(*(a.format(world=world) for a in args))
    assert (proc.returncode, proc.stderr) == (0, "")


# ----------------------------------------------------------------------------- 42.13 global options

def test_quiet_and_verbose_before_the_command(world):
    r = run("-q", "maps", "--data", world)
    assert r.exit_code == 0, r.output
    assert MAP_NAME in r.stdout
    loud = run("-v", "maps", "--data", world)
    assert loud.exit_code == 0, loud.output
    assert "info " in loud.stderr          # -v's detail lines ("info wowgrass...: ...")
    assert "info " not in run("maps", "--data", world).stderr


def test_a_global_quiet_does_not_leak_into_the_next_command_line(world):
    assert run("-q", "maps", "--data", world).exit_code == 0
    assert "info " in run("maps", "-v", "--data", world).stderr


def test_the_group_lists_every_command():
    from wowgrass.cli.main import COMMANDS

    r = run("--help")
    assert r.exit_code == 0
    for name in COMMANDS:
        assert f"  {name} " in r.stdout, name
