"""Options and output helpers shared by the command modules."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from wowgrass.errors import UsageError

json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON on stdout.")

def _data_layers(ctx, param, value):
    """Repeated ``--data``: None, one folder (a str), or a DataLayers (the first the base, the
    others loose folders laid over it, the last winning)."""
    if not value:
        return None
    if len(value) == 1:
        return value[0]
    from wowgrass.game.data import DataLayers

    return DataLayers(value)


DATA_HELP = ("A client's Data folder (MPQ chain) or a folder of loose extracted files. Repeat it to lay loose "
             "folders over the first, the last winning: --data CLIENT/Data --data PROJECT reads the project's "
             "tiles and the client's textures, models and tables.")


def data_option_with(help: str = DATA_HELP):
    """``--data`` (repeatable: layered data, see :func:`_data_layers`) with its own help text."""
    return click.option("--data", "data_path", type=click.Path(exists=True, file_okay=False), multiple=True,
                        callback=_data_layers, metavar="DIR", help=help)


data_option = data_option_with()


def game_file_data_option(argument: str, example: str):
    """``--data`` for a command whose ``argument`` is a file on disk or, with it, a game path (``example``)."""
    return click.option(
        "--data", "data_path", type=click.Path(exists=True, file_okay=False), default=None,
        help=f"A client's Data folder or loose folder; {argument} is then a game path such as '{example}'.",
    )


class GameOrDiskFiles:
    """A file argument and its companions (skins, group files, textures, doodads): from ``--data``
    when given, else from the disk, game paths found by base name beside the file (any case)."""

    def __init__(self, file: str, data_path):
        from wowgrass.game.data import open_data
        from wowgrass.errors import GameFileNotFound

        self.data = open_data(data_path) if data_path else None
        self.file = file
        if self.data is None and Path(file).is_dir():
            raise UsageError(f"{file} is a folder; give a file (or a game path with --data)")
        if self.data is None and not Path(file).is_file():
            raise GameFileNotFound(f"{file}: no such file")

    def read(self, path: str) -> bytes:
        from wowgrass.errors import GameFileNotFound
        from wowgrass.paths import find_file

        if self.data is not None:
            return self.data.read(path)
        p = Path(path)
        if p.is_file():
            return p.read_bytes()
        found = find_file(Path(self.file).parent, path.replace("\\", "/").rsplit("/", 1)[-1])
        if found is None:
            raise GameFileNotFound(f"{path} (looked beside {self.file})")
        return found.read_bytes()


class PlacementChoice(click.Choice):
    """``coverage`` or ``client``; the old name ``seed`` is still accepted (with a note on stderr)."""

    def __init__(self):
        from wowgrass.grass.placement import STRATEGIES

        super().__init__(list(STRATEGIES))

    def convert(self, value, param, ctx):
        from wowgrass.grass.placement import STRATEGY_ALIASES

        if value in STRATEGY_ALIASES:
            new = STRATEGY_ALIASES[value]
            note(f"note: --placement {value} is now called --placement {new}")
            return new
        return super().convert(value, param, ctx)


placement_option = click.option(
    "--placement",
    type=PlacementChoice(),
    default="coverage",
    show_default=True,
    help="Grass placement strategy: coverage = per-cell MCAL coverage and clumps (the grass reference's "
    "formula); client = what the 1.12/2.4.3/3.3.5 clients do.",
)


tile_option = click.option(
    "--tile",
    "tiles",
    multiple=True,
    metavar="C,R|C0:C1,R0:R1",
    help="A tile (column,row) or an inclusive range of columns and rows, e.g. 32,48 or 30:33,40:45; "
    "repeatable. Default: every tile the map lists.",
)


def tile_option_with(help: str):
    """``--tile`` (as :data:`tile_option`) with a command's own help text."""
    return click.option("--tile", "tiles", multiple=True, metavar="C,R|C0:C1,R0:R1", help=help)


BUILDS = ("1.12", "2.4.3", "3.3.5")


def build_option(help: str = "Client build of the tables (default: detected).", default: str | None = None, **kw):
    """``--build`` 1.12 | 2.4.3 | 3.3.5 (default None: detected), with a command's own help text."""
    return click.option("--build", type=click.Choice(list(BUILDS)), default=default, help=help, **kw)


def map_option(help: str = "Map folder name, e.g. Azeroth (default: the only map in --data).",
               metavar: str | None = "NAME", **kw):
    """``--map NAME`` (the ``map_name`` parameter), with a command's own help text."""
    return click.option("--map", "map_name", metavar=metavar, help=help, **kw)


def option_group(name: str, *options):
    """Apply click ``options`` (in the order given, as if written as decorators in that order) and
    hand their values to the command as one object, ``name`` (a SimpleNamespace by each option's
    parameter name), instead of one parameter each. Several groups of one ``name`` add up. No
    option's parameter name may be a group's name."""
    import functools
    from types import SimpleNamespace

    def deco(f):
        before = len(getattr(f, "__click_params__", ()))
        for opt in reversed(options):
            f = opt(f)
        names = [p.name for p in f.__click_params__[before:]]

        @functools.wraps(f)
        def wrapper(*args, **kw):
            group = kw.get(name)
            if group is None:
                group = kw[name] = SimpleNamespace()
            for n in names:
                setattr(group, n, kw.pop(n))
            return f(*args, **kw)

        return wrapper

    return deco


def parse_tiles(values) -> list | None:
    """``--tile`` values -> [((c0, c1), (r0, r1)), ...] (None when none were given)."""
    if not values:
        return None
    from wowgrass.grass.bake import parse_tile_ranges

    return [parse_tile_ranges(v) for v in values]


def text_console():
    """A rich Console on stdout whose lines lose their trailing spaces (tables pad every cell)."""
    import io

    from rich.console import Console

    class _Stripped(io.TextIOBase):
        def __init__(self):
            self._pending = ""

        def write(self, s):
            self._pending += s
            *done, self._pending = self._pending.split("\n")
            for line in done:
                click.echo(line.rstrip())
            return len(s)

        def flush(self):
            if self._pending:
                click.echo(self._pending.rstrip(), nl=False)
                self._pending = ""

    class _Console(Console):
        def on_broken_pipe(self):
            """rich exits 1 on a closed pipe; hand it to cli/main.py, which exits 0 as for any output."""
            self.quiet = True
            raise BrokenPipeError

    return _Console(file=_Stripped(), highlight=False)


#: plural names whose number is a measure in that unit or a bit field, not a count of things
_NOT_COUNTS = frozenset({"bytes", "seconds", "flags", "pos", "trans", "samples"})
#: subtrees whose keys are names of their own (placement constants: -C client_picks=48; GPU memory
#: by kind of resource)
_VERBATIM = frozenset({"constants", "overrides", "histogram", "by_kind", "mean_by_kind"})


def count_name(key: str) -> str:
    """The JSON name of a count: ``vertices`` -> ``vertex_count``, ``batches`` -> ``batch_count``,
    ``wmo_instances`` -> ``wmo_instance_count`` (docs/cli.md: a plural name is a list)."""
    if key.endswith("ices"):
        stem = key[:-4] + "ex"
    elif key.endswith(("ches", "shes", "xes", "sses")):
        stem = key[:-2]
    else:
        stem = key[:-1]
    return f"{stem}_count"


def json_keys(obj):
    """``obj`` with every count under a plural name renamed ``*_count`` (recursively)."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if (isinstance(k, str) and k.endswith("s") and not k.endswith("ss") and isinstance(v, int)
                    and not isinstance(v, bool) and k.rsplit("_", 1)[-1] not in _NOT_COUNTS and "-" not in k):
                k = count_name(k)
            elif k == "with_grass" and isinstance(v, int):
                k = "with_grass_count"
            out[k] = v if k in _VERBATIM or "," in str(k) else json_keys(v)   # "31,32": a tile's own
        return out
    if isinstance(obj, (list, tuple)):
        return [json_keys(v) for v in obj]
    return obj


def echo_json(obj) -> None:
    """Write ``obj`` as indented JSON to stdout (numpy scalars and arrays converted; counts named
    ``*_count``, see :func:`json_keys`)."""
    import numpy as np

    def default(o):
        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
        if isinstance(o, (bytes, bytearray)):
            return o.hex()
        if hasattr(o, "__fspath__"):
            return str(o)
        raise TypeError(f"not JSON serializable: {type(o).__name__}")

    def plain(o):   # numpy scalars to Python ones first, so counts are seen as ints
        if isinstance(o, dict):
            return {k: plain(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [plain(v) for v in o]
        if isinstance(o, np.integer):
            return int(o)
        return o

    json.dump(json_keys(plain(obj)), sys.stdout, indent=2, default=default)
    sys.stdout.write("\n")


dbc_option = click.option(
    "--dbc",
    "dbc_dir",
    type=click.Path(exists=True, file_okay=False),
    default=None,
    help="A folder holding GroundEffectTexture.dbc and GroundEffectDoodad.dbc (or its DBFilesClient subfolder).",
)


def constants_options(f):
    """``--seed N`` and ``-C NAME=VALUE`` (placement constants), as bake has them."""
    f = click.option("-C", "--constant", "overrides", multiple=True, metavar="NAME=VALUE",
                     help="Override a placement constant, e.g. -C coverage_min=48 -C client_picks=64 "
                          "-C road_patterns='*road*,*cobble*' (names in docs/bake.md).")(f)
    f = click.option("--seed", type=int, default=0, show_default=True,
                     help="Extra random seed mixed into every chunk's random stream.")(f)
    return f


def placement_constants(seed: int, overrides):
    """The :class:`~wowgrass.grass.placement.PlacementConstants` that ``--seed`` and ``-C`` ask for (None: defaults)."""
    if not seed and not overrides:
        return None
    from wowgrass.grass.placement import PlacementConstants

    return PlacementConstants(seed=seed).with_overrides(overrides)


def plural(n: int, one: str, many: str | None = None) -> str:
    """``1 row``, ``2 rows``, ``1,024 meshes`` (with ``many``)."""
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def output_path(path, suffixes: tuple[str, ...] | None = None, *, option: str = "-o/--output", say: bool = True):
    """``path`` as a Path after checking, before any work, that its suffix is one of ``suffixes``
    and that it can be written (its folder exists and takes a new file: the error names ``path``
    and why). An existing file is replaced, with a note saying so (``say``; not for `bake -o`,
    whose file is a cache entry kept while valid): docs/cli.md, "Outputs"."""
    from pathlib import Path

    from wowgrass.fileio import check_output_file

    out = Path(path)
    try:
        if out.is_dir():
            raise UsageError(f"{option} {out}: is a folder; give a file name")
        if not out.parent.is_dir():
            raise UsageError(f"{option} {out}: folder {out.parent} does not exist")
    except OSError:
        pass   # no permission to look: check_output_file names the output and the reason
    if suffixes and out.suffix.lower() not in suffixes:
        raise UsageError(f"{option} {out}: the file name must end in {' or '.join(suffixes)} "
                         f"(the format follows the suffix)")
    if check_output_file(out) and say:
        note(f"note: {out} exists: replacing it")
    return out


class _Bar:
    def __init__(self, progress, task):
        self.progress, self.task = progress, task

    def total(self, n: int | None) -> None:
        self.progress.update(self.task, total=n)
        if n and not self.progress.live.is_started and not self.progress.disable:
            self.progress.start()

    def set(self, done: int, total: int | None, description: str = "") -> None:
        """Absolute progress (for callbacks that report ``done`` of ``total``)."""
        self.progress.update(self.task, completed=done, total=total, description=str(description))
        if total and not self.progress.live.is_started and not self.progress.disable:
            self.progress.start()

    def advance(self, description: str = "", n: int = 1) -> None:
        self.progress.update(self.task, advance=n, description=str(description))
        if not self.progress.live.is_started and not self.progress.disable:
            self.progress.start()


def count_text(done, total, unit: str) -> str:
    """``3/12 tiles`` with a total, ``3 tiles`` (``1 tile``) without one: never ``3/None``."""
    done = int(done)
    if total is None:
        return plural(done, unit[:-1]) if unit.endswith("s") else f"{done:,} {unit}"
    return f"{done:,}/{int(total):,} {unit}"


def progress_bar(label: str, unit: str, *, total: int | None = None, quiet: bool = False, rate: bool = False):
    """A transient progress bar on stderr: ``label [bar] 3/12 tiles`` (a count alone while the total
    is unknown; with ``rate`` the speed, ``2.5 tiles/s``, and an ETA). The description column says
    what is being done (a tile, the megabytes written). Hidden with ``quiet`` or -q, and when stderr
    is not a terminal."""
    import contextlib

    from rich.console import Console
    from rich.progress import BarColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
    from rich.text import Text

    class Count(ProgressColumn):
        def render(self, task):
            return Text(count_text(task.completed, task.total, unit))

    class Rate(ProgressColumn):
        def render(self, task):
            return Text(f"{task.speed:,.1f} {unit}/s" if task.speed else "")

    speed = (Rate(), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn()) if rate else (TimeElapsedColumn(),)
    console = Console(stderr=True)
    progress = Progress(TextColumn(f"[bold]{label}"), BarColumn(), Count(), *speed,
                        TextColumn("{task.description}"), console=console, transient=True,
                        disable=quiet or verbosity() < 0 or not console.is_terminal)
    task = progress.add_task("", total=total)

    @contextlib.contextmanager
    def run():
        try:
            yield _Bar(progress, task)
        finally:
            if progress.live.is_started:  # stop() on a bar never started still prints a newline
                progress.stop()

    return run()


# ----------------------------------------------------------------------------- -q / -v

_VERBOSITY = {"level": 0}


def verbosity() -> int:
    """-1 with -q (no progress bars, no notes), 0 by default, 1 with -v, 2 with -vv."""
    return _VERBOSITY["level"]


def reset_verbosity() -> None:
    _set_level(0)


def _set_quiet(ctx, param, value):
    if value:
        _set_level(-1)
    return value


def _set_verbose(ctx, param, value):
    if value:
        _set_level(min(value, 2))
    return value


class _LogFormat:
    """Warnings read as the commands' own ``warning: ...`` lines; -v/-vv detail names its module."""

    def format(self, record) -> str:
        import logging

        if record.levelno >= logging.WARNING:
            return f"{record.levelname.lower()}: {record.getMessage()}"
        return f"{record.levelname.lower()} {record.name}: {record.getMessage()}"


def _stderr_handler():
    import logging

    class StderrHandler(logging.Handler):
        """Each record to the stderr of the moment (click's: a test runner swaps it per command)."""

        def emit(self, record):
            try:
                click.echo(self.format(record), err=True)
            except Exception:  # a closed stderr: nothing to tell anyone
                self.handleError(record)

    return StderrHandler()


def _set_level(level: int) -> None:
    import logging

    _VERBOSITY["level"] = level
    logger = logging.getLogger("wowgrass")
    if not any(getattr(h, "_wowgrass", False) for h in logger.handlers):
        handler = _stderr_handler()
        handler._wowgrass = True
        handler.setFormatter(_LogFormat())
        logger.addHandler(handler)   # (the root logger has none of ours: caplog still hears them)
    logger.setLevel({-1: logging.ERROR, 0: logging.WARNING, 1: logging.INFO, 2: logging.DEBUG}[level])


VERBOSITY_PARAMS = (
    click.Option(["-q", "--quiet"], is_flag=True, expose_value=False, is_eager=True, callback=_set_quiet,
                 help="Print only results and errors (no progress bars, notes or warnings)."),
    click.Option(["-v", "--verbose"], count=True, expose_value=False, is_eager=True, callback=_set_verbose,
                 help="Say more: -v what is read and skipped, -vv debugging detail."),
)


def note(message: str) -> None:
    """A ``note: ...`` or ``warning: ...`` line on stderr, unless -q."""
    if verbosity() >= 0:
        click.echo(message, err=True)
