import subprocess
import sys

from click.testing import CliRunner

from wowgrass.cli.main import cli


def test_help_lists_commands():
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    assert "wowgrass" in result.output.lower()


def test_every_subcommand_has_help():
    runner = CliRunner()
    names = cli.list_commands(None)
    for name in names:
        result = runner.invoke(cli, [name, "--help"])
        assert result.exit_code == 0, (name, result.output)


def test_python_dash_m_works():
    out = subprocess.run([sys.executable, "-m", "wowgrass", "--version"], capture_output=True, text=True)
    assert out.returncode == 0
    assert "wowgrass" in out.stdout


def test_cli_is_not_a_top_level_module(tmp_path):
    # From a folder outside the checkout, only wowgrass.cli exists; a bare `cli` must not.
    code = "import importlib.util, wowgrass.cli; print(importlib.util.find_spec('cli'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "None"


def test_log_warnings_read_as_the_commands_own_lines():
    import logging

    from wowgrass.cli.common import _LogFormat

    fmt = _LogFormat()
    warn = logging.LogRecord("wowgrass.paths", logging.WARNING, __file__, 1, "cannot write %s: read-only", ("/c",), None)
    assert fmt.format(warn) == "warning: cannot write /c: read-only"
    info = logging.LogRecord("wowgrass.game.data", logging.INFO, __file__, 1, "reading %s", ("x.mpq",), None)
    assert fmt.format(info) == "info wowgrass.game.data: reading x.mpq"
