"""The view's options by group and the command line's shared option groups (issue 48 item 4):
``option_group`` hands a command its options as one object; window or offscreen is decided once,
by ``render.app.output_mode``, and the workbench's checks read that decision."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner


def test_an_option_group_hands_its_options_as_one_object_in_the_order_written():
    from wowgrass.cli.common import build_option, map_option, option_group

    seen = {}

    @click.command()
    @option_group("where", map_option("Which map."), click.option("--size", type=int, default=3))
    @click.option("--loud", is_flag=True)
    @option_group("where", build_option())
    def cmd(where, loud):
        seen.update(vars(where), loud=loud)

    r = CliRunner().invoke(cmd, ["--map", "Azeroth", "--build", "3.3.5", "--loud"])
    assert r.exit_code == 0, r.output
    assert seen == {"map_name": "Azeroth", "size": 3, "build": "3.3.5", "loud": True}  # two groups of one name add up
    r = CliRunner().invoke(cmd, ["--help"])
    order = [line.split()[0] for line in r.output.splitlines() if line.strip().startswith("--")]
    assert order == ["--map", "--size", "--loud", "--build", "--help"]  # as if written as decorators
    assert CliRunner().invoke(cmd, ["--build", "2.0"]).exit_code == 2  # the shared option's choices


@pytest.mark.parametrize(("display", "window", "file", "frames", "want"), [
    (True, None, None, None, (True, None, False)),          # a display, nothing asked: the window
    (True, None, "a.png", None, (False, "a.png", False)),   # an image asked: offscreen
    (True, False, None, 2, (False, None, False)),           # --offscreen --frames 2
    (False, None, None, None, (False, "view.png", True)),   # no display: one frame offscreen, for want of one
    (False, False, None, None, (False, "view.png", False)),  # --offscreen: asked, not for want of a display
    (False, None, None, 3, (False, None, False)),
])
def test_window_or_offscreen_is_decided_in_one_place(monkeypatch, display, window, file, frames, want):
    from wowgrass.render import app
    from wowgrass.render.gl import context

    monkeypatch.setattr(context, "has_display", lambda: display)
    said = []
    mode = app.output_mode(app.OutputOptions(window=window, file=file, frames=frames), said.append)
    assert (mode.window, mode.output, mode.headless) == want
    assert bool(said) == (want[1] == "view.png")


def test_the_workbench_options_follow_that_decision(monkeypatch):
    """--panels with offscreen frames and --panels where there is no display are two errors, told
    apart by the one decision (not by a second look at the display)."""
    from wowgrass.cli import view as view_cli
    from wowgrass.errors import UsageError
    from wowgrass.render.app import OutputMode
    from types import SimpleNamespace

    w = SimpleNamespace(panels=True, overlays=(), watch=False, run_audit=False, rules_path=None)
    data = SimpleNamespace(build=None, procedural=False)
    look = SimpleNamespace(name="default")
    with pytest.raises(UsageError, match="offscreen frames have no panels"):
        view_cli._workbench(w, data, look, OutputMode(False, "a.png"))
    with pytest.raises(UsageError, match="there is no display"):
        view_cli._workbench(w, data, look, OutputMode(False, "view.png", headless=True))
    off = SimpleNamespace(panels=None, overlays=(), watch=False, run_audit=False, rules_path=None)
    assert view_cli._workbench(off, data, look, OutputMode(False, "view.png", headless=True)) is None
    with pytest.raises(UsageError, match="not --procedural"):
        view_cli._workbench(w, SimpleNamespace(build=None, procedural=True), look, OutputMode(True, None))


def test_view_help_keeps_every_option():
    """The view's options moved into groups; its --help lists what it did (names and defaults)."""
    from wowgrass.cli.main import cli

    out = CliRunner().invoke(cli, ["view", "--help"], terminal_width=200).output
    for text in ("--data DIR", "--map NAME", "--tile C,R|C0:C1,R0:R1", "--build [1.12|2.4.3|3.3.5]",
                 "--look [default|client]", "--camera X,Y[,Z]", "--time FLOAT", "[default: 0.0]",
                 "-o, --output FILE", "--window / --offscreen", "--no-shadows", "--meadow-seed",
                 "--panels / --no-panels", "--audit / --no-audit", "--ring-keep K1,K2,K3", "[default: 0.6,0.35,0.2]"):
        assert text in out, text
    assert not any(line.strip().startswith("--seed") for line in out.splitlines())  # the old name stays hidden
