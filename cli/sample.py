"""``wowgrass sample``: build the built-in sample world (a client-shaped ``Data`` folder)."""

from __future__ import annotations

import time
from pathlib import Path

import click

from wowgrass.cli.common import build_option, echo_json, json_option, progress_bar


def _options(f):
    f = click.option("--sea", is_flag=True,
                     help="An ocean layer in every chunk of every tile, one level across the map (the benchmark "
                          "ocean world; a world of its own in the cache).")(f)
    f = click.option("--seed", type=int, default=0, show_default=True, help="Terrain noise seed.")(f)
    # --size, not --tiles: everywhere else --tile selects tiles (C,R); --tiles is the old name, still read
    f = click.option("--size", "tiles", default="2x2", show_default=True, metavar="COLSxROWS",
                     callback=lambda ctx, p, v: ctx.meta.get("old_tiles") if v == "2x2" and ctx.meta.get("old_tiles") else v,
                     help="How many ADT tiles, COLSxROWS (1x1 .. 32x32), around the middle of the map grid.")(f)
    f = click.option("--tiles", hidden=True, expose_value=False,
                     callback=lambda ctx, p, v: ctx.meta.__setitem__("old_tiles", v) if v else None)(f)
    f = build_option("Client build whose archives, tables and formats to imitate.", default="3.3.5",
                     show_default=True)(f)
    return f


@click.group()
def sample():
    """Build the built-in sample world: a small procedural zone in a client-shaped Data folder.

    wowgrass uses it when a command gets no --data. It is written with wowgrass's own writers
    (MPQ, DBC, WDT/ADT, M2, BLP) and reads like a real 1.12, 2.4.3 or 3.3.5 client.
    """


def _summary(data: Path, build: str, tiles: str, seed: int, seconds: float | None, built: bool,
             sea: bool = False) -> dict:
    from wowgrass.samples import MAP_NAME, parse_tiles, wdt_path

    cols, rows = parse_tiles(tiles)
    archives = sorted(p.relative_to(data).as_posix() for p in data.rglob("*") if p.is_file())
    return {"data": str(data), "build": build, "size": [cols, rows], "tile_count": cols * rows, "seed": seed,
            "map": MAP_NAME, "sea": sea,
            "wdt": wdt_path(), "archives": archives, "built": built,
            "seconds": None if seconds is None else round(seconds, 3)}


@sample.command("build")
@click.option("-o", "--output", "output", type=click.Path(file_okay=False), default=None,
              help="Write DIR/Data (and DIR/sample.json) here instead of the cache.")
@_options
@click.option("--force", is_flag=True, help="Build again even if it already exists.")
@click.option("-j", "--jobs", type=click.IntRange(1, 256), default=1, show_default=True,
              help="Processes making the tiles (the same bytes whatever the number).")
@json_option
def build_cmd(output, build, tiles, seed, sea, force, jobs, as_json):
    """Write the sample world's Data folder (default: in the wowgrass cache) and print where."""
    from wowgrass.errors import UsageError
    from wowgrass.samples import parse_tiles, sample_data_path, sample_root, write_sample_world

    cols_rows = parse_tiles(tiles)
    if output is None:
        data = sample_root(build, cols_rows, seed, sea) / "Data"
        built = force or not data.is_dir()
    else:
        data = Path(output) / "Data"
        if data.exists() and not force:
            raise UsageError(f"{data} already exists (use --force to replace it)")
        built = True
    t0 = time.perf_counter()
    if built:
        with progress_bar("sample world", "steps", quiet=as_json) as bar:
            def update(what, done, total):
                bar.set(done, total, what)

            if output is None:
                data = sample_data_path(build, cols_rows, seed, force=force, progress=update, jobs=jobs, sea=sea)
            else:
                data = write_sample_world(output, build, cols_rows, seed, progress=update, jobs=jobs, sea=sea)
    seconds = time.perf_counter() - t0
    info = _summary(data, build, tiles, seed, seconds if built else None, built, sea)
    if as_json:
        echo_json(info)
    else:
        verb = f"built in {seconds:.1f} s" if built else "already built"
        click.echo(f"{data}  ({info['map']}, build {build}, {cols_rows[0]}x{cols_rows[1]} tiles, "
                   f"seed {seed}{', with a sea' if sea else ''}; {verb})")


@sample.command("path")
@_options
@json_option
def path_cmd(build, tiles, seed, sea, as_json):
    """Print the cached sample's Data folder (without building it)."""
    from wowgrass.samples import parse_tiles, sample_root

    cols, rows = parse_tiles(tiles)
    data = sample_root(build, (cols, rows), seed, sea) / "Data"
    if as_json:
        echo_json({"data": str(data), "exists": data.is_dir(), "build": build, "size": [cols, rows], "seed": seed,
                   "sea": sea})
    else:
        click.echo(str(data) + ("" if data.is_dir() else "  (not built yet: wowgrass sample build)"))
