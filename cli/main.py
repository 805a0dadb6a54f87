"""``wowgrass``: the click group, lazy subcommand loading and the one place errors become exit codes."""

from __future__ import annotations

import errno
import importlib
import os
import signal
import sys

import click

from wowgrass import __version__
from wowgrass.errors import WowgrassError

# name -> "module:attribute"; modules import lazily so `wowgrass dbc info` never loads moderngl.
COMMANDS = {
    "mpq": ("wowgrass.cli.mpq:mpq", "Inspect, list and extract MPQ archives."),
    "dbc": ("wowgrass.cli.dbc:dbc", "Inspect DBC tables (ground-effect density fields)."),
    "adt": ("wowgrass.cli.adt:adt", "Inspect terrain tiles (ADT) and draw them."),
    "m2": ("wowgrass.cli.m2:m2", "Inspect and export M2 models."),
    "wmo": ("wowgrass.cli.wmo:wmo", "Inspect and export WMO world map objects (buildings)."),
    "blp": ("wowgrass.cli.blp:blp", "Inspect and convert BLP textures."),
    "sample": ("wowgrass.cli.sample:sample", "Build the built-in sample world."),
    "bake": ("wowgrass.cli.bake:bake", "Precompute grass placements into cached bundles."),
    "bundle": ("wowgrass.cli.bake:bundle", "Inspect baked instance bundles."),
    "effects": ("wowgrass.cli.effects:effects", "Audit and fix a map's ground effects (the workbench)."),
    "view": ("wowgrass.cli.view:view", "Render a zone: terrain plus instanced, wind-swayed grass."),
    "export": ("wowgrass.cli.export:export", "Export tiles to glTF (Blender, engines)."),
    "blender": ("wowgrass.cli.blender:blender", "Import tiles into a .blend through Blender (grass as instances)."),
    "light": ("wowgrass.cli.light:light", "The zone's light (sky, fog, sun, water) from the client's tables."),
    "maps": ("wowgrass.cli.system:maps", "List the maps of a data source and their tiles."),
    "cache": ("wowgrass.cli.system:cache", "Show or empty the cache (sample worlds, bundles)."),
    "doctor": ("wowgrass.cli.system:doctor", "Check Python, OpenGL (EGL, window), data, cache, StormLib."),
    "patch": ("wowgrass.cli.patch:patch", "Pack changed files into a patch MPQ the client loads."),
}


def with_verbosity(cmd: click.Command) -> click.Command:
    """Give ``cmd`` and every subcommand ``-q/--quiet`` and ``-v/--verbose`` (defined once, in common)."""
    from wowgrass.cli.common import VERBOSITY_PARAMS

    if not any(p.name == "quiet" for p in cmd.params):
        cmd.params.extend(VERBOSITY_PARAMS)
    for sub in getattr(cmd, "commands", {}).values():
        with_verbosity(sub)
    return cmd


def fail(message: str) -> "NoReturn":  # noqa: F821
    """Print ``error: message`` on stderr and exit with status 2."""
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


def pipe_closed() -> "NoReturn":  # noqa: F821
    """stdout's reader went away (``| head -1``): stop silently, exit 0, as Unix tools do. stdout
    is pointed at /dev/null so the flush at interpreter shutdown cannot fail again (Python's docs,
    "Note on SIGPIPE")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    sys.exit(0)


def _is_pipe_error(exc: BaseException) -> bool:
    return isinstance(exc, BrokenPipeError) or (isinstance(exc, OSError) and exc.errno == errno.EPIPE)


def interrupted(message: str = "", signum: int = signal.SIGINT) -> "NoReturn":  # noqa: F821
    """Ctrl-C (or SIGTERM where a command catches it: bake): what was done (``message``) on stderr
    and exit 128 + the signal."""
    name = "interrupted" if signum == signal.SIGINT else f"stopped by {signal.Signals(signum).name}"
    text = message or name
    try:
        click.echo(text if text.startswith(("interrupted", "stopped")) else f"{name}: {text}", err=True)
    except OSError:
        pass
    sys.exit(128 + int(signum))


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return sorted(set(super().list_commands(ctx)) | set(COMMANDS))

    def get_command(self, ctx, name):
        cmd = super().get_command(ctx, name)
        if cmd is not None or name not in COMMANDS:
            return cmd
        target, _help = COMMANDS[name]
        mod_name, attr = target.split(":")
        try:
            mod = importlib.import_module(mod_name)
        except ModuleNotFoundError as exc:
            if exc.name == mod_name:
                return None
            raise
        return with_verbosity(getattr(mod, attr))

    def format_commands(self, ctx, formatter):
        rows = [(n, COMMANDS[n][1]) for n in self.list_commands(ctx) if n in COMMANDS]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        """click's own usage errors in wowgrass's form too: ``error: ...`` on stderr, exit status 2."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
            sys.stdout.flush()   # a closed pipe shows here for output still buffered
        except OSError as exc:
            if _is_pipe_error(exc):
                pipe_closed()
            raise
        except click.exceptions.NoArgsIsHelpError as exc:
            exc.show()  # plain `wowgrass`: the help, as click prints it
            sys.exit(exc.exit_code)
        except click.exceptions.Abort as exc:
            if isinstance(exc.__context__, KeyboardInterrupt):   # click's own prompts, Ctrl-C
                interrupted()
            click.echo("error: aborted", err=True)
            sys.exit(1)
        except click.ClickException as exc:
            hint = ""
            if isinstance(exc, click.UsageError):
                hint = f" (see `{exc.ctx.command_path if exc.ctx else 'wowgrass'} --help`)"
            click.echo(f"error: {exc.format_message()}{hint}", err=True)
            sys.exit(exc.exit_code)
        sys.exit(rv if isinstance(rv, int) else 0)

    def invoke(self, ctx):
        try:
            if getattr(signal.getsignal(signal.SIGINT), "wowgrass_program", False):   # wowgrass/__main__.py's
                signal.signal(signal.SIGINT, signal.default_int_handler)   # Ctrl-C raises from here on
            return super().invoke(ctx)
        except KeyboardInterrupt as exc:   # Ctrl-C (a bake's SIGTERM too): exit 128 + signal, what was done
            interrupted(str(exc), getattr(exc, "signum", signal.SIGINT))
        except BrokenPipeError:
            pipe_closed()
        except WowgrassError as exc:
            fail(str(exc))
        except FileNotFoundError as exc:
            name = exc.filename or str(exc)
            fail(f"no such file: {name}" if exc.filename else str(exc))
        except IsADirectoryError as exc:
            fail(f"is a directory: {exc.filename}")
        except PermissionError as exc:
            fail(f"permission denied: {exc.filename}")
        except OSError as exc:  # a disk error, a full disk behind a library's own write: no traceback
            from wowgrass.errors import OUTPUT_REASONS

            if _is_pipe_error(exc):
                pipe_closed()
            reason = OUTPUT_REASONS.get(exc.errno) or exc.strerror or str(exc)
            fail(f"{exc.filename}: {reason}" if exc.filename else reason)
        except Exception as exc:
            # Ctrl-C inside a class body's set-up (a lazy import) comes out wrapped: Python 3.11 turns
            # it into "RuntimeError: Error calling __set_name__", the KeyboardInterrupt as its cause
            stop = _interrupt_in_chain(exc)
            if stop is None:
                raise
            interrupted(str(stop), getattr(stop, "signum", signal.SIGINT))


def _interrupt_in_chain(exc: BaseException):
    """The KeyboardInterrupt an exception was raised from or during, if any."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="wowgrass")
def cli():
    """wowgrass reads World of Warcraft 1.12 / 2.4.3 / 3.3.5 client data, works out where the
    ground-effect grass grows, bakes the placements and renders a zone with wind-swayed grass.

    Every command that reads game data takes --data PATH: a client's Data folder (MPQ chain)
    or a folder of loose extracted files. With no --data, wowgrass uses its built-in sample world.

    -q and -v go before the command (wowgrass -q maps) or after it (wowgrass maps -q).
    """
    from wowgrass.cli.common import reset_verbosity

    if not click.get_current_context().meta.get("wowgrass.verbosity"):
        reset_verbosity()  # this command line's level only (tests run many in one process)


def _group_verbosity(setter: str):
    """-q/-v before the command: the callbacks of cli/common.py's options, loaded when one is given
    (cli/common.py loads numpy: at start-up, before Ctrl-C is handled, it would not be)."""
    def callback(ctx, param, value):
        if value:
            from wowgrass.cli import common

            ctx.meta["wowgrass.verbosity"] = True
            getattr(common, setter)(ctx, param, value)
        return value

    return callback


cli.params += [   # the same options as every subcommand's (common.VERBOSITY_PARAMS), lazily
    click.Option(["-q", "--quiet"], is_flag=True, expose_value=False, is_eager=True,
                 callback=_group_verbosity("_set_quiet"), help="Print only results and errors."),
    click.Option(["-v", "--verbose"], count=True, expose_value=False, is_eager=True,
                 callback=_group_verbosity("_set_verbose"), help="Say more: -v what is read, -vv debugging detail."),
]


def main(argv=None):
    try:
        cli.main(args=argv, prog_name="wowgrass")
    finally:   # output still buffered for a reader that went away: no "Exception ignored" at exit
        try:
            sys.stdout.flush()
        except OSError as exc:
            if _is_pipe_error(exc):
                try:
                    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                except (OSError, ValueError):
                    pass


if __name__ == "__main__":
    main()
