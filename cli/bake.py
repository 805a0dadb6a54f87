"""``wowgrass bake`` (place ground-effect grass into cached bundles) and ``wowgrass bundle info``."""

from __future__ import annotations

from pathlib import Path

import click
from wowgrass.cli.common import data_option, echo_json, json_option, note, output_path, placement_option, plural

from wowgrass.errors import UsageError

BUILDS = ("1.12", "2.4.3", "3.3.5")


def _constants(seed, overrides):
    from wowgrass.placement import PlacementConstants

    if not seed and not overrides:
        return None
    return PlacementConstants(seed=seed).with_overrides(overrides)


def _open(data_path, build):
    from wowgrass.data import open_data

    return open_data(data_path, build=build)


@click.command()
@click.argument("adt", required=False, type=click.Path(exists=True, dir_okay=False))
@data_option
@click.option("--dbc", "dbc_dir", type=click.Path(exists=True, file_okay=False),
              help="A folder holding GroundEffectTexture.dbc and GroundEffectDoodad.dbc (for a loose ADT).")
@click.option("--build", type=click.Choice(BUILDS), default=None,
              help="Client build of the tables (default: detected).")
@placement_option
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False),
              help="Write the bundle here instead of the cache (loose ADT only).")
@click.option("--map", "map_name", metavar="NAME",
              help="Map to bake (with --data; default: the sample world's map). For a loose ADT: the map name "
                   "that seeds the placement (default: from the file name).")
@click.option("--tiles", metavar="C0:C1,R0:R1", help="Inclusive column and row ranges, e.g. 30:33,40:45.")
@click.option("--all", "all_tiles", is_flag=True, help="Every tile the map's WDT lists (the default).")
@click.option("-j", "--jobs", type=click.IntRange(1, 256), default=1, show_default=True,
              help="Processes baking tiles in parallel.")
@click.option("--big-alpha/--small-alpha", "big_alpha", default=None,
              help="Force 8-bit or 4-bit alpha maps for a loose ADT (default: ask the WDT beside it or in --data).")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Extra seed mixed into every chunk's random stream.")
@click.option("-C", "--constant", "overrides", multiple=True, metavar="NAME=VALUE",
              help="Override a placement constant, e.g. -C coverage_min=48 -C client_picks=64 "
                   "-C road_patterns='*road*,*cobble*' (names in docs/bake.md).")
@click.option("--force", is_flag=True, help="Bake again even when a valid bundle is cached.")
@json_option
def bake(adt, data_path, dbc_dir, build, placement, out, map_name, tiles, all_tiles, jobs, big_alpha, seed,
         overrides, force, as_json):
    """Place ground-effect grass and write instance bundles (one per tile) into the cache.

    \b
    wowgrass bake map.adt (--data DIR | --dbc DIR) [-o FILE]      one loose ADT
    wowgrass bake --data DIR --map NAME [--tiles C0:C1,R0:R1]     many tiles, in parallel
    wowgrass bake                                                 the built-in sample world

    A repeated bake of unchanged inputs is a cache hit; a truncated, corrupt or stale bundle is
    rebuilt. See docs/bake.md.
    """
    constants = _constants(seed, overrides)
    if adt is not None:
        if tiles or all_tiles or jobs != 1:
            raise UsageError("--tiles, --all and --jobs are for a map (--map), not for one ADT file")
        if data_path and dbc_dir:
            raise UsageError("give --data or --dbc, not both")
        data = None
        if data_path:
            data = _open(data_path, build)
        elif not dbc_dir:
            from wowgrass.bake import default_data

            sample, _ = default_data()
            data = _open(sample, build)
        from wowgrass.bake import bake_file

        try:
            res = bake_file(adt, data=data, dbc_dir=dbc_dir, build=build, map_name=map_name, placement=placement,
                            constants=constants, out=out, force=force, big_alpha=big_alpha)
        finally:
            if data is not None:
                data.close()
        if as_json:
            echo_json(res.to_dict())
        else:
            _echo_result(res)
        return

    if out:
        raise UsageError("-o/--output is for one ADT file; a map's bundles go to the cache")
    if big_alpha is not None:
        raise UsageError("--big-alpha/--small-alpha is for one ADT file; a map's WDT says which")
    if dbc_dir:
        raise UsageError("--dbc is for one ADT file; a map reads its tables from --data")
    if tiles and all_tiles:
        raise UsageError("give --tiles or --all, not both")
    from wowgrass.bake import bake_map, default_data, parse_tile_ranges

    if data_path is None:
        data_path, sample_map = default_data()
        map_name = map_name or sample_map
    if not map_name:
        raise UsageError("give an ADT file, or --map NAME with --data DIR")
    ranges = parse_tile_ranges(tiles) if tiles else None
    results, failures = _bake_with_progress(bake_map, data_path, map_name, ranges, jobs, build, placement,
                                            constants, force, quiet=as_json)
    if as_json:
        echo_json({"map": map_name, "data": str(data_path), "tiles": [r.to_dict() for r in results],
                   "failures": [f.to_dict() for f in failures]})
    else:
        hits = sum(r.cache_hit for r in results)
        rebuilt = sum(r.rebuilt is not None for r in results)
        inst = sum(r.instances for r in results)
        click.echo(f"{map_name}: {len(results)} tiles baked ({hits} cached, {rebuilt} rebuilt), "
                   f"{inst:,} instances")
        missing = sorted({m for r in results for m in r.missing_models})
        if missing:
            click.echo(f"  {len(missing)} models missing from the data (the viewer names them; `view --placeholders` draws stand-ins): "
                       + ", ".join(missing[:5]) + (" …" if len(missing) > 5 else ""))
        if results:
            click.echo(f"  bundles in {Path(results[0].path).parent}")
    if failures:
        lines = "; ".join(f"{f.tile[0]}_{f.tile[1]}: {f.error}" for f in failures[:3])
        raise UsageError(f"{len(failures)} tile(s) failed: {lines}" + (" …" if len(failures) > 3 else ""))
    if not results:
        raise UsageError(f"map {map_name!r}: no tiles to bake" + (f" in {tiles}" if tiles else ""))


def _bake_with_progress(bake_map, data_path, map_name, ranges, jobs, build, placement, constants, force, quiet):
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    progress = Progress(TextColumn("[bold]bake"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        TextColumn("{task.description}"), console=Console(stderr=True), transient=True,
                        disable=quiet)
    task = progress.add_task("", total=None)

    def start(total):
        progress.update(task, total=total)
        if total:  # no bar (and no blank line it leaves) when there is nothing to bake
            progress.start()

    def step(res):
        progress.update(task, advance=1, description=f"{res.tile[0]}_{res.tile[1]}")

    try:
        return bake_map(data_path, map_name, ranges=ranges, jobs=jobs, build=build, placement=placement,
                        constants=constants, force=force, progress=step, on_start=start)
    finally:
        if progress.live.is_started:  # stop() on a bar never started still prints a newline
            progress.stop()


def _echo_result(res):
    state = "cache hit" if res.cache_hit else ("rebuilt: " + res.rebuilt if res.rebuilt else "baked")
    click.echo(f"{res.path}: {res.instances:,} instances, {res.models} models, tile {res.tile[0]},{res.tile[1]} "
               f"({state}, {res.seconds.get('total', 0) * 1e3:.1f} ms)")
    if res.missing_models:
        names = res.missing_models
        click.echo(f"  {len(names)} models missing from the data (the viewer names them; `view --placeholders` draws stand-ins): "
                   + ", ".join(names[:5]) + (" …" if len(names) > 5 else ""))


@click.group()
def bundle():
    """Inspect baked instance bundles (.wgb)."""


@bundle.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@json_option
def info(file, as_json):
    """Instances per model, per-cell statistics, bytes per instance and provenance of a bundle."""
    from wowgrass.bundle import read_bundle

    with read_bundle(file) as b:
        s = b.stats()
    if as_json:
        echo_json(s)
        return
    p = s["provenance"]
    echo = click.echo
    echo(f"{file}: wowgrass bundle v{s['format_version']}, {s['file_size']:,} bytes")
    echo(f"  map {p.get('map')} tile {s['tile'][0]},{s['tile'][1]}, build {p.get('build')}, "
         f"placement {p.get('placement')}")
    echo(f"  instances: {s['instances']:,} ({s['bytes_per_instance']} bytes each"
         + (f", {s['file_bytes_per_instance']:.1f} bytes per instance in the file)" if s["instances"] else ")"))
    c = s["cells"]
    echo(f"  cells with grass: {c['with_grass']:,} of {c['total']:,}; per filled cell min {c['min']}, "
         f"mean {c['mean']:.2f}, max {c['max']}")
    echo("  instances per cell: " + ", ".join(f"{k}: {v}" for k, v in c["histogram"].items()))
    echo(f"  models ({len(s['models'])}):")
    for m in s["models"]:
        if m["present"]:
            extra = f"z {m['z_min']:.3f}..{m['z_max']:.3f}"
        else:
            extra = "MISSING from the data"
        echo(f"    {m['instances']:>8,}  {m['path']}  ({extra})")
    echo(f"  provenance: key {s['key'][:16]}…, ADT sha256 {p.get('adt_sha256', '')[:16]}…, DBC rows sha256 "
         f"{p.get('dbc_rows_sha256', '')[:16]}… ({len(p.get('effect_ids', []))} effects), placement v"
         f"{p.get('placement_version')}")
    consts = p.get("constants", {})
    echo("  constants: " + ", ".join(f"{k}={v}" for k, v in consts.items()))


@bundle.command("export")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--csv", "fmt", flag_value="csv", help="Comma-separated rows with a header line (the default).")
@click.option("--json", "fmt", flag_value="json", help="One JSON document: files, columns, count and rows.")
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Write here (.csv or .json, which also picks the format) instead of stdout.")
def export_rows(files, fmt, output):
    """One row per grass instance of the bundles: model path, world position, yaw, scale, chunk, cell.

    Columns: model, x, y, z (world yards: X north, Y west, Z up), yaw (degrees about Z), scale,
    tile_col, tile_row, chunk (MCNK index) and cell (r*8+c in the chunk), like wow.export's
    placement CSV. See docs/export.md.
    """
    write_rows(files, fmt, output)


def write_rows(files, fmt, output) -> int:
    """Rows of ``files`` (bundle paths) to ``output`` or stdout as ``fmt``; returns the row count."""
    from wowgrass.bundle import read_bundle
    from wowgrass.export.placements import bundle_rows, rows_csv, rows_json

    if output is not None:
        suffix = Path(output).suffix.lower()
        if fmt is None and suffix in (".csv", ".json"):
            fmt = suffix[1:]
        out = output_path(output, (f".{fmt or 'csv'}",))
    fmt = fmt or "csv"
    tables = []
    for f in files:
        with read_bundle(f) as b:
            tables.append(bundle_rows(b))
    data = rows_csv(tables) if fmt == "csv" else rows_json(tables, [str(f) for f in files])
    n = sum(len(t["x"]) for t in tables)
    if output is None:
        click.get_binary_stream("stdout").write(data)
    else:
        from wowgrass.fileio import write_atomic

        write_atomic(out, data)
        note(f"wrote {out} ({plural(n, 'row')}, {fmt.upper()})")
    return n

