"""``wowgrass bake`` (place ground-effect grass into cached bundles) and ``wowgrass bundle info``."""

from __future__ import annotations

import time
from pathlib import Path

import click
from wowgrass.cli.common import (
    build_option,
    constants_options,
    data_option,
    dbc_option,
    echo_json,
    json_option,
    map_option,
    note,
    output_path,
    parse_tiles,
    placement_constants,
    placement_option,
    plural,
    progress_bar,
    tile_option,
)

from wowgrass.errors import UsageError
from wowgrass.paths import writable_cache_dir


def _open(data_path, build):
    from wowgrass.game.data import open_data

    return open_data(data_path, build=build)


@click.command()
@click.argument("source", required=False, type=click.Path(exists=True), metavar="[ADT|DIR]")
@data_option
@dbc_option
@build_option()
@placement_option
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False),
              help="Write the bundle here instead of the cache (one ADT file only).")
@map_option("Map to bake (default: the only map in --data, or the sample world's). For an ADT file: the "
            "map name mixed into the random streams (default: from the file name).")
@tile_option
@click.option("--tiles", "old_tiles", multiple=True, hidden=True)  # the old name of --tile's range form
@click.option("--all", "all_tiles", is_flag=True, help="Every tile of the map present in the data (the default).")
@click.option("-j", "--jobs", type=click.IntRange(1, 256), default=1, show_default=True,
              help="Processes baking tiles in parallel.")
@click.option("--big-alpha/--small-alpha", "big_alpha", default=None,
              help="Force 8-bit or 4-bit alpha maps for an ADT file (default: ask the WDT beside it or in --data).")
@constants_options
@click.option("--force", is_flag=True, help="Bake again even when a valid bundle is cached.")
@click.option("--direct-io/--no-direct-io", "direct_io", default=True, show_default=True,
              help="A map's bake writes its bundles straight to disk (O_DIRECT where the system takes it), "
                   "not through the page cache: gigabytes of bundles then neither push other files out of memory "
                   "nor pay for fresh cache pages. --no-direct-io writes them through the cache.")
@click.option("--export", "export_file", type=click.Path(dir_okay=False), metavar="FILE.csv|FILE.json",
              help="Also write every baked instance as placement rows (as `bundle export` does).")
@click.option("--watch", is_flag=True,
              help="After the bake, keep watching the loose folders of --data (a project laid over a client: "
                   "--data CLIENT --data PROJECT) and bake each tile into the cache as it is saved there (its WDT "
                   "or the ground-effect tables: every tile). Ctrl-C stops.")
@click.option("--poll/--no-poll", "poll", default=None,
              help="--watch: poll the folders instead of taking file events (default: events, polling where they "
                   "do not arrive: network folders, WSL, no event watcher).")
@click.option("--watch-count", type=click.IntRange(1), default=None, metavar="N",
              help="--watch: stop after N tiles were baked (for scripts).")
@json_option
def bake(source, data_path, dbc_dir, build, placement, out, map_name, tiles, old_tiles, all_tiles, jobs, big_alpha,
         seed, overrides, force, direct_io, export_file, watch, poll, watch_count, as_json):
    """Place ground-effect grass and write instance bundles (one per tile) into the cache.

    \b
    wowgrass bake map.adt [--data DIR | --dbc DIR] [-o FILE]    one ADT file
    wowgrass bake --data DIR [--map NAME] [--tile C,R ...]      many tiles, in parallel
    wowgrass bake DIR [--dbc DIR]                               a Data folder or a map folder
    wowgrass bake                                               the built-in sample world

    The tables come from --dbc, else --data, else the nearest folder above a map folder or ADT
    file that has them (an extracted client's DBFilesClient). A map's tiles are the ADTs present:
    those its WDT lists (a partial extract holds a few: a note says how many are absent) or, without
    a WDT, its ADT files. A repeated bake of unchanged inputs is a cache hit; a truncated, corrupt
    or stale bundle is rebuilt. See docs/bake.md.
    """
    from wowgrass.grass.bake import terminate_as_interrupt

    if not watch and (poll is not None or watch_count is not None):
        raise UsageError("--poll and --watch-count are for --watch")
    if watch and source is not None and not Path(source).is_dir():
        raise UsageError("--watch is for a map (--data, --map), not for one ADT file")
    if watch:   # said before anything is baked
        _check_watchable(source if source is not None else data_path, build)
    with terminate_as_interrupt():   # SIGTERM stops a bake as Ctrl-C does: exit 143, what was done said
        map_name = _bake(source, data_path, dbc_dir, build, placement, out, map_name, tiles, old_tiles, all_tiles,
                         jobs, big_alpha, seed, overrides, force, export_file, as_json, direct_io)
        if watch:   # Ctrl-C (or SIGTERM) ends the watch: exit 130 (143), every bake done already in the cache
            _watch(source if source is not None else data_path, map_name, build, placement, seed, overrides, dbc_dir,
                   poll, watch_count, as_json)


def _check_watchable(data_path, build) -> None:
    from wowgrass.workbench.watch import watchable_folders

    if data_path is None:
        raise UsageError("--watch needs --data: the sample world is an MPQ chain, nothing there is saved as loose "
                         "files; lay the folder that another program saves into over a client (--data CLIENT "
                         "--data PROJECT)")
    with _open(data_path, build) as data:
        watchable_folders(data)


def _watch(data_path, map_name, build, placement, seed, overrides, dbc_dir, poll, count, as_json):
    """Bake the tiles saved into the loose folders of ``data_path`` until Ctrl-C (or ``count``)."""
    import json
    import queue

    from wowgrass.workbench.watch import BakeOnSave

    results: queue.Queue = queue.Queue()
    with _open(data_path, build) as data:
        job = BakeOnSave(data, map_name, placement=placement, constants=placement_constants(seed, overrides),
                         dbc_dir=dbc_dir, on_result=results.put, on_note=results.put, poll=poll)
        done = 0
        try:      # Ctrl-C or SIGTERM from here on ends the watch: what it baked said, exit 130 (143)
            job.start()
            w = job.watcher
            note(f"watching {', '.join(map(str, w.roots))} for saved tiles of {map_name} ({w.mode}"
                 + (f": {w.why_polling}" if w.mode == "polling" else "") + "); Ctrl-C stops")
            while count is None or done < count:
                res = results.get()
                if isinstance(res, str):
                    note(f"note: {res}")
                    continue
                if isinstance(res, tuple):
                    (c, r), exc = res
                    if as_json:
                        click.echo(json.dumps({"tile": [c, r], "error": str(exc)}))
                    else:
                        note(f"error: tile {c},{r}: {exc}")
                    continue
                done += 1
                if as_json:   # one line per bake (JSON lines), counts named as everywhere
                    from wowgrass.cli.common import json_keys

                    click.echo(json.dumps(json_keys(res.to_dict()), default=str))
                else:
                    _echo_result(res)
        except KeyboardInterrupt as exc:
            exc.args = (f"the watch baked {plural(done, 'saved tile')} (each is in the cache)",)
            raise
        finally:
            job.stop()


def _bake(source, data_path, dbc_dir, build, placement, out, map_name, tiles, old_tiles, all_tiles, jobs, big_alpha,
          seed, overrides, force, export_file, as_json, direct_io=True):
    constants = placement_constants(seed, overrides)
    tiles = tuple(tiles) + tuple(old_tiles)
    export_fmt = None
    if export_file:
        export_fmt = Path(export_file).suffix.lower().lstrip(".")
        output_path(export_file, (".csv", ".json"), option="--export")
    adt = None
    if source is not None:
        if Path(source).is_dir():
            if data_path:
                raise UsageError(f"give the folder {source} or --data, not both")
            data_path = source
        else:
            adt = source
    if adt is not None:
        if tiles or all_tiles or jobs != 1:
            raise UsageError("--tile, --all and --jobs are for a map (--data, --map), not for one ADT file")
        if data_path and dbc_dir:
            raise UsageError("give --data or --dbc, not both")
        if out:
            output_path(out, (".wgb",), say=False)   # a valid bundle there is a cache hit, not replaced
        else:
            writable_cache_dir()  # the cache is this command's output: a read-only one is an error
        if not data_path and not dbc_dir:
            from wowgrass.grass.bake import tables_for

            data_path, dbc_dir = tables_for(adt)
        data = _open(data_path, build) if data_path else None
        from wowgrass.grass.bake import bake_file

        try:
            res = bake_file(adt, data=data, dbc_dir=dbc_dir, build=build, map_name=map_name, placement=placement,
                            constants=constants, out=out, force=force, big_alpha=big_alpha)
        finally:
            if data is not None:
                data.close()
        if export_file:
            write_rows([res.path], export_fmt, export_file)
        warn_unknown_effects([res])
        say_notes([res])
        if as_json:
            echo_json(res.to_dict())
        else:
            _echo_result(res)
        return res.map

    if out:
        raise UsageError("-o/--output is for one ADT file; a map's bundles go to the cache")
    if big_alpha is not None:
        raise UsageError("--big-alpha/--small-alpha is for one ADT file; a map's WDT says which")
    if tiles and all_tiles:
        raise UsageError("give --tile or --all, not both")
    from wowgrass.grass.bake import bake_map, default_data
    from wowgrass.game.maps import choose_map, map_tiles

    writable_cache_dir()
    if data_path is None:
        data_path, sample_map = default_data()
        map_name = map_name or sample_map
    with _open(data_path, build) as data:
        map_name = choose_map(data, map_name, warn=note)
        mt = map_tiles(data, map_name, parse_tiles(tiles))
    if mt.note():
        note(mt.note())
    t0 = time.perf_counter()
    results, failures = _bake_with_progress(bake_map, data_path, map_name, mt.tiles, jobs, build, placement,
                                            constants, force, dbc_dir, quiet=as_json, direct=direct_io)
    seconds = time.perf_counter() - t0
    warn_unknown_effects(results)
    say_notes(results)
    if export_file and results:
        write_rows([r.path for r in results], export_fmt, export_file)
    if as_json:
        dropped = [r.capacity_dropped for r in results if r.capacity_dropped is not None]
        echo_json({"map": map_name, "data": str(data_path), "seconds": round(seconds, 3),
                   "capacity_dropped_count": sum(dropped) if dropped else None,
                   "tiles": [r.to_dict() for r in results], "failures": [f.to_dict() for f in failures],
                   "absent_tiles": [list(t) for t in mt.absent]})
    else:
        hits = sum(r.cache_hit for r in results)
        rebuilt = sum(r.rebuilt is not None for r in results)
        inst = sum(r.instances for r in results)
        click.echo(f"{map_name}: {plural(len(results), 'tile')} baked ({hits} cached, {rebuilt} rebuilt), "
                   f"{plural(inst, 'instance')}, {seconds:.1f} s ({len(results) / max(seconds, 1e-9):.1f} tiles/s)")
        dropped = [r.capacity_dropped for r in results if r.capacity_dropped is not None]
        if dropped:
            echo_capacity(sum(dropped), inst)
        warn_missing_models(sorted({m for r in results for m in r.missing_models}))
        warn_no_grass(results)
        if results:
            click.echo(f"  bundles in {Path(results[0].path).parent}")
    if failures:
        lines = "; ".join(f"{f.tile[0]}_{f.tile[1]}: {f.error}" for f in failures[:3])
        raise UsageError(f"{plural(len(failures), 'tile')} failed: {lines}" + (" …" if len(failures) > 3 else ""))
    if not results:
        raise UsageError(f"map {map_name!r}: no tiles to bake" + (f" in {', '.join(tiles)}" if tiles else ""))
    return map_name


def warn_missing_models(names) -> None:
    """One warning for grass models the data lacks (their instances are baked all the same)."""
    if names:
        note(f"note: {plural(len(names), 'grass model')} missing from the data (view and export draw "
             "stand-ins; --no-placeholders leaves them out): " + ", ".join(names[:5]) + (" …" if len(names) > 5 else ""))


def echo_capacity(dropped: int, kept: int) -> None:
    """The line saying what the client's draw capacity left out of the scatter."""
    share = f" ({100.0 * dropped / (dropped + kept):.1f} %)" if dropped else ""
    click.echo(f"  draw capacity: {plural(dropped, 'placement')} of {dropped + kept:,} dropped{share}, as the "
               "client's batches leave them out (-C client_capacity=0 keeps the whole scatter)")


def say_notes(results) -> None:
    """Each distinct note of the bakes once (``-C client_picks`` below what 3.3.5 takes, ...)."""
    for line in dict.fromkeys(n for r in results for n in r.notes):
        note(line)


def warn_unknown_effects(results) -> None:
    """One line for every effect id the tiles use that the tables lack (their cells get no grass)."""
    ids = sorted({i for r in results for i in r.unknown_effects.get("ids", [])})
    if ids:
        cells = sum(r.unknown_effects.get("cells", 0) for r in results)
        shown = ", ".join(map(str, ids[:12])) + (" …" if len(ids) > 12 else "")
        note(f"warning: {plural(len(ids), 'effect id')} not in the tables ({shown}) in {plural(cells, 'cell')}: "
             "no grass there (are the tables from the tiles' client build?)")


def _bake_with_progress(bake_map, data_path, map_name, tiles, jobs, build, placement, constants, force, dbc_dir,
                        quiet, direct=True):
    with progress_bar("bake", "tiles", quiet=quiet, rate=True) as bar:
        def step(res):
            bar.advance(f"{res.tile[0]}_{res.tile[1]}")

        return bake_map(data_path, map_name, tiles=tiles, jobs=jobs, build=build, placement=placement,
                        constants=constants, force=force, progress=step, on_start=bar.total, dbc_dir=dbc_dir,
                        direct=direct)


def _echo_result(res):
    state = "cache hit" if res.cache_hit else ("rebuilt" if res.rebuilt else "baked")  # why: the warning before
    click.echo(f"{res.path}: {plural(res.instances, 'instance')}, {plural(res.models, 'model')}, tile {res.tile[0]},{res.tile[1]} "
               f"({state}, {res.seconds.get('total', 0) * 1e3:.1f} ms)")
    if res.capacity_dropped is not None:
        echo_capacity(res.capacity_dropped, res.instances)
    warn_missing_models(res.missing_models)
    if res.no_grass:
        note(f"note: no grass on tile {res.tile[0]},{res.tile[1]}: {res.no_grass}")


def warn_no_grass(results) -> None:
    """One line per reason for the tiles that got no grass (never a silent "0 instances")."""
    by_reason: dict[str, list] = {}
    for r in results:
        if r.no_grass:
            by_reason.setdefault(r.no_grass, []).append(r.tile)
    for why, tiles in by_reason.items():
        shown = " ".join(f"{c},{r}" for c, r in tiles[:8]) + (" …" if len(tiles) > 8 else "")
        note(f"note: no grass on {plural(len(tiles), 'tile')} ({shown}): {why}")


@click.group()
def bundle():
    """Inspect baked instance bundles (.wgb)."""


@bundle.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@json_option
def info(file, as_json):
    """Instances per model, per-cell statistics, bytes per instance and provenance of a bundle."""
    from wowgrass.grass.bundle import read_bundle

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
    if s["capacity_dropped_count"] is not None:
        echo(f"  draw capacity: {plural(s['capacity_dropped_count'], 'placement')} dropped (not in the bundle)")
    if s["scatter_order"]:
        echo("  scatter order: recorded (each instance's place in the client's scatter)")
    echo(f"  cells with grass: {c['with_grass']:,} of {c['cell_count']:,}; per filled cell min {c['min']}, "
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
@click.option("--json", "fmt", flag_value="json", help="One JSON document: files, columns, row_count and rows.")
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
    """Rows of ``files`` (bundle paths) to ``output`` or stdout as ``fmt``; returns the row count.

    The rows stream (one bundle open at a time, blocks of rows formatted in bulk): memory stays
    flat whatever the count; a file is written atomically all the same."""
    from wowgrass.export.placements import row_blocks

    if output is not None:
        suffix = Path(output).suffix.lower()
        if fmt is None and suffix in (".csv", ".json"):
            fmt = suffix[1:]
        out = output_path(output, (f".{fmt}",) if fmt else (".csv", ".json"))
    fmt = fmt or "csv"
    files = [str(f) for f in files]
    rows = [0]
    with progress_bar("export", "tiles", total=len(files), quiet=output is None, rate=True) as bar:
        def done(path, n):
            rows[0] += n
            bar.advance(Path(path).name)

        blocks = row_blocks(files, fmt, on_file=done)
        if output is None:
            for block in blocks:
                click.echo(block, nl=False)
        else:
            from wowgrass.fileio import write_atomic

            write_atomic(out, blocks)
            note(f"wrote {out} ({plural(rows[0], 'row')}, {fmt.upper()})")
    return rows[0]
