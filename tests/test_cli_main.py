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
