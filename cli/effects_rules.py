"""``wowgrass effects apply``, ``effects why`` and ``effects rules``: ground-effect rules that keep a
map right while it is painted in another editor (docs/rules.md). Plain commands, attached to the
``effects`` group of ``cli/effects.py``; the work is in ``wowgrass.edit.rules*``."""

from __future__ import annotations

import json
from pathlib import Path

import click

from wowgrass.cli.common import data_option, echo_json, json_option, note, parse_tiles, plural, progress_bar, tile_option
from wowgrass.errors import UsageError


def rules_option(f):
    return click.option("--rules", "rules_path", type=click.Path(dir_okay=False), default=None, metavar="FILE",
                        help="The rules file (default: wowgrass-rules.toml in the last --data folder, the project).")(f)


def default_rules_path(data_path, given) -> Path:
    """--rules, else wowgrass-rules.toml in the top --data folder."""
    from wowgrass.edit.rules import DEFAULT_NAME

    if given:
        return Path(given)
    if data_path is None:
        raise UsageError("give --data (and --rules FILE)")
    top = data_path[-1] if isinstance(data_path, (list, tuple)) else data_path
    return Path(top) / DEFAULT_NAME


def _open(data_path):
    from wowgrass.game.data import open_data

    if data_path is None:
        raise UsageError("give --data CLIENT [--data PROJECT]")
    return open_data(data_path)


def _progress(label: str, quiet: bool):
    bar_cm = progress_bar(label, "tiles", quiet=quiet)
    state = {}

    def cb(done, total, what):
        if state.get("bar") is not None:
            state["bar"].set(done, total, what)

    return bar_cm, cb, state


def _map_opts(f):
    f = click.option("--doodad-map-msb-first", "msb_first", is_flag=True,
                     help="The tiles store doodadMapping MSB first (saved by noggit3); edits keep that order.")(f)
    f = tile_option(f)
    f = click.option("--map", "map_name", metavar="NAME",
                     help="The map (default: the rules file's map, else the data's only map).")(f)
    return data_option(f)


# ============================================================================= apply

@click.command("apply")
@_map_opts
@rules_option
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Write the changed tiles (and tables) under this folder in the client's layout; what is already "
                   "there is read first, so a second apply changes nothing.")
@click.option("--in-place", is_flag=True,
              help="Replace the loose tiles themselves (a .bak kept beside each); tiles and tables from the client's "
                   "archives are written into the top --data folder (the project).")
@click.option("-n", "--dry-run", is_flag=True, help="Say what would change; write nothing.")
@click.option("-j", "--jobs", type=click.IntRange(1, 256), default=1, show_default=True,
              help="Processes applying the rules (the same bytes whatever the number).")
@click.option("--picture", "picture", type=click.Path(dir_okay=False), default=None, metavar="PNG",
              help="Also draw the tiles top down, each cell coloured by the rule that governs it after the apply "
                   "(excluded cells hatched), the legend below.")
@click.option("--watch", is_flag=True,
              help="Then keep watching the loose folders of --data and re-apply the rules to each tile another "
                   "editor saves there: one line per save. Ctrl-C stops.")
@click.option("--poll/--no-poll", "poll", default=None,
              help="--watch: poll the folders instead of taking file events.")
@click.option("--watch-count", type=click.IntRange(1), default=None, metavar="N",
              help="--watch: stop after N saves were taken (for scripts).")
@json_option
def apply_cmd(data_path, map_name, tiles, msb_first, rules_path, out_dir, in_place, dry_run, jobs, picture, watch,
              poll, watch_count, as_json):
    """Apply a rules file to the map: effect ids by texture, noEffectDoodad by footprint, slope,
    texture or painted mask, doodadMapping where stale, and the sets the file declares.

    Only ground-effect fields change (MCLY effect ids, doodadMapping, noEffectDoodad; the
    GroundEffectTexture/Doodad rows of new sets), byte for byte, all files or none. A second apply
    changes nothing. The report names each rule's cells and tiles, and every conflict: which rule
    won and why (later rules win; an exclude wins over an include).
    """
    from wowgrass.edit.rules import load_rules

    if in_place and out_dir:
        raise UsageError("give -o DIR or --in-place, not both")
    if not dry_run and not in_place and not out_dir:
        raise UsageError("give -o DIR for the changed tiles (or --in-place, or -n to see what would change)")
    if watch and dry_run:
        raise UsageError("--watch writes each save's result: drop -n")
    if not watch and (poll is not None or watch_count is not None):
        raise UsageError("--poll and --watch-count are for --watch")
    if picture:
        from wowgrass.cli.common import output_path
        from wowgrass.fileio import IMAGE_FORMATS

        output_path(picture, tuple(IMAGE_FORMATS), option="--picture")
    path = default_rules_path(data_path, rules_path)
    rules = load_rules(path)                 # the whole file checked before any tile is read
    with _open(data_path) as base:
        data = base
        if out_dir:
            from wowgrass.edit.batch import Overlay

            if not Path(out_dir).is_dir():
                raise UsageError(f"-o {out_dir}: folder does not exist")
            data = Overlay(base, out_dir)
        result = _apply(data, rules, map_name, parse_tiles(tiles), msb_first, jobs, as_json, picture is not None)
        files = [] if dry_run else [str(p) for p in result.write(data, out_dir, in_place=in_place)]
        if picture:
            from wowgrass.edit.rules_explain import write_rules_picture

            grids = {t.tile: t.governing for t in result.tiles}
            if grids:
                files.append(str(write_rules_picture(result.plan, grids, picture)))
        _report(result, files, dry_run, as_json)
        if watch:      # Ctrl-C or SIGTERM ends the watch: exit 0, every save taken already written
            from wowgrass.grass.bake import Terminated, terminate_as_interrupt

            try:
                with terminate_as_interrupt():
                    _watch(base, result.plan, out_dir, poll, watch_count, as_json, path, parse_tiles(tiles))
            except Terminated:
                pass


def _apply(data, rules, map_name, ranges, msb_first, jobs, as_json, picture=False):
    from wowgrass.edit.rules_apply import apply_rules
    from wowgrass.edit.rules_engine import prepare

    plan = prepare(rules, data, map_name, ranges, msb_first=msb_first)
    for w in plan.warnings:
        note(w)
    bar_cm, cb, state = _progress("apply", as_json)
    with bar_cm as bar:
        state["bar"] = bar
        return apply_rules(data, plan, jobs=jobs, progress=cb, picture=picture)


def _report(result, files, dry_run, as_json) -> None:
    if as_json:
        doc = result.to_json()
        doc.update(dry_run=dry_run, files=files)
        echo_json(doc)
        return
    for line in result.text_lines():
        click.echo(line)
    if dry_run:
        click.echo("  dry run: nothing written")
    elif not result.files:
        click.echo("  nothing to change: nothing written")
    for f in files:
        note(f"wrote {f}")


def _watch(data, plan, out_dir, poll, count, as_json, rules_path=None, ranges=None) -> None:
    """Re-apply the rules to each tile saved into the loose folders of ``data`` (and to every tile
    when the rules file is saved)."""
    import queue

    from wowgrass.edit.rules_apply import RulesOnSave
    from wowgrass.workbench.watch import FileWatcher, watched_folders

    folders = watched_folders(data)
    if not folders:
        raise UsageError(f"{data.root} is a client's MPQ chain: nothing there is saved as loose files; lay the "
                         "project folder another editor saves into over it (--data CLIENT --data PROJECT)")
    results: queue.Queue = queue.Queue()
    job = RulesOnSave(data, plan, out_dir=out_dir, on_result=results.put, rules_path=rules_path, ranges=ranges)
    roots = list(folders)
    if rules_path is not None and not any(Path(f).resolve() in Path(rules_path).resolve().parents for f in folders):
        roots.append(Path(rules_path).parent)   # a rules file outside the project: its folder watched too
    watcher = FileWatcher(roots, job, poll=poll, debounce_ms=50)
    try:
        watcher.start()
        note(f"watching {', '.join(map(str, roots))} for saved tiles of {plan.map} and the rules ({watcher.mode}"
             + (f": {watcher.why_polling}" if watcher.mode == "polling" else "") + "); Ctrl-C stops")
        done = 0
        while count is None or done < count:
            res = results.get()
            done += 1
            if as_json:
                click.echo(json.dumps(res.to_json()), nl=True)
            else:
                click.echo(res.line())
    except KeyboardInterrupt:
        pass
    finally:
        watcher.stop()


# ============================================================================= why

def _pair(text, what):
    try:
        a, b = (float(v) for v in text.replace(" ", "").split(","))
    except ValueError:
        raise UsageError(f"{what} {text!r}: two numbers separated by a comma") from None
    return a, b


@click.command("why")
@_map_opts
@rules_option
@click.option("--at", "at", metavar="X,Y", help="World coordinates (X north, Y west, as the client's).")
@click.option("--chunk", "chunk", metavar="I|IX,IY", help="With --tile: the chunk, its MCNK index or IndexX,IndexY.")
@click.option("--cell", "cell", metavar="J|C,R", help="With --chunk: the cell, 0..63 (row * 8 + column) or column,row.")
@click.option("--placement", type=click.Choice(["client", "coverage"]), default="client", show_default=True,
              help="Whose scatter says what grows there.")
@json_option
def why_cmd(data_path, map_name, tiles, msb_first, rules_path, at, chunk, cell, placement, as_json):
    """Why is this cell bare (or not)? The rules that decided it, each layer's texture, effect id and
    share of the cell, the doodadMapping, the noEffectDoodad bit, the effect set and what the client
    scatters there, as the rules leave the tile."""
    from wowgrass.edit.rules import RuleSet, load_rules
    from wowgrass.edit.rules_engine import prepare
    from wowgrass.edit.rules_explain import cell_at, explain_cell, tile_at

    if (at is None) == (chunk is None):
        raise UsageError("say which cell: --at X,Y, or --tile C,R --chunk I --cell J")
    path = default_rules_path(data_path, rules_path)
    if rules_path is None and not path.exists():
        rules = RuleSet(path, "")
        note(f"note: no rules file ({path}): the cell as it is")
    else:
        rules = load_rules(path)
    with _open(data_path) as data:
        if at is not None:
            if tiles or cell:
                raise UsageError("--at says the cell: drop --tile and --cell")
            x, y = _pair(at, "--at")
            tile = tile_at(x, y)
            ranges = [((tile[0], tile[0]), (tile[1], tile[1]))]
        else:
            if not tiles or len(tiles) != 1 or cell is None:
                raise UsageError("--chunk needs --tile C,R (one tile) and --cell J")
            ranges = parse_tiles(tiles)
            (c0, c1), (r0, r1) = ranges[0]
            if (c0, r0) != (c1, r1):
                raise UsageError("--tile: one tile, not a range")
            tile = (c0, r0)
        try:
            plan = prepare(rules, data, map_name, ranges, msb_first=msb_first)
        except UsageError as exc:
            if at is not None and ("no tile" in str(exc).lower() or "matches" in str(exc).lower()):
                raise UsageError(f"--at {at} lies on tile {tile[0]},{tile[1]}, which the map does not have") from None
            raise
        from wowgrass.edit.adt_edit import read_tile
        from wowgrass.game.maps import adt_game_path

        gp = adt_game_path(plan.map, *tile)
        t = read_tile(data.read(gp), gp, big_alpha=plan.big_alpha, msb_first=msb_first)
        if at is not None:
            hit = cell_at(t, x, y)
            if hit is None:
                raise UsageError(f"--at {at}: not on tile {tile[0]},{tile[1]}")
            idx, cr = hit
        else:
            idx = _chunk_index(t, chunk)
            cr = _cell(cell)
        doc = explain_cell(data, plan, tile, idx, cr, t=t, placement=placement)
    if as_json:
        echo_json(doc)
        return
    for line in why_lines(doc):
        click.echo(line)


def _chunk_index(t, text) -> int:
    import numpy as np

    text = text.replace(" ", "")
    if "," in text:
        try:
            ix, iy = (int(v) for v in text.split(","))
        except ValueError:
            raise UsageError(f"--chunk {text!r}: an MCNK index or IndexX,IndexY") from None
        hit = np.flatnonzero((t.index_xy[:, 0] == ix) & (t.index_xy[:, 1] == iy))
        if not hit.size:
            raise UsageError(f"--chunk {text}: no such chunk (IndexX and IndexY are 0..15)")
        return int(hit[0])
    try:
        i = int(text)
    except ValueError:
        raise UsageError(f"--chunk {text!r}: an MCNK index or IndexX,IndexY") from None
    if not 0 <= i < 256:
        raise UsageError(f"--chunk {i}: 0..255")
    return i


def _cell(text) -> tuple[int, int]:
    text = text.replace(" ", "")
    try:
        if "," in text:
            c, r = (int(v) for v in text.split(","))
        else:
            j = int(text)
            if not 0 <= j < 64:
                raise ValueError
            c, r = j % 8, j // 8
    except ValueError:
        raise UsageError(f"--cell {text!r}: 0..63 (row * 8 + column) or column,row") from None
    if not (0 <= c < 8 and 0 <= r < 8):
        raise UsageError(f"--cell {text}: column and row are 0..7")
    return c, r


def why_lines(e: dict) -> list[str]:
    """``effects why`` in words."""
    out = [f"tile {e['tile'][0]},{e['tile'][1]} chunk {e['chunk'][0]},{e['chunk'][1]} (MCNK {e['mcnk_index']}) "
           f"cell {e['cell'][0]},{e['cell'][1]} at {e['centre'][0]:.1f},{e['centre'][1]:.1f}: "
           f"area {e['area']['id']}" + (f" ({e['area']['name']})" if e["area"]["name"] else "")
           + f", height {e['height']:.1f}, slope {e['slope']:.1f} degrees" + (", a hole" if e["hole"] else ""),
           f"  {e['verdict']}"]
    for lay in e["layers"]:
        eff = str(lay["effect_id"]) + (f" -> {lay['effect_id_after']}" if lay["effect_id_after"] != lay["effect_id"]
                                       else "")
        out.append(f"  layer {lay['index']}: {lay['texture']}, effect {eff}, shows {lay['share']:.0%} of the cell"
                   + (f"; {lay['rule']}" if lay["rule"] else ""))
    dm = e["doodad_mapping"]
    out.append(f"  doodadMapping: layer {dm['now']}" + (f" -> {dm['after']}" if dm["after"] != dm["now"] else "")
               + f" (the layer showing most: {dm['best']})")
    ne = e["no_effect_doodad"]
    state = lambda b: "set" if b else "clear"  # noqa: E731
    line = f"  noEffectDoodad: {state(ne['now'])}" + (f" -> {state(ne['after'])}" if ne["after"] != ne["now"] else "")
    if ne["excluded_by"]:
        line += f"; excluded by {ne['excluded_by']}: {ne['excluded_because']}"
    if ne["included_by"]:
        line += f"; {'included' if not ne['excluded_by'] else 'an include overruled'} by {ne['included_by']}"
    if ne["also_selected_by"]:
        line += f"; also {', '.join(ne['also_selected_by'])}"
    out.append(line)
    eff = e["effect"]
    if eff is not None:
        models = ", ".join(m.rsplit("\\", 1)[-1] for m in eff["models"]) or "no doodads"
        out.append(f"  effect {eff['id']}" + (f" (set {eff['set']!r})" if eff["set"] else "")
                   + (f": {models}, density {eff['density']}" if eff["has_row"] else ": no GroundEffectTexture row")
                   + (f", weights {eff['weights']}" if eff.get("weights") and eff["models"] else ""))
    sc = e["scatter"]
    out.append(f"  the {sc['placement']} scatter: " + (", ".join(f"{m} x{n}" for m, n in sc["by_model"].items())
                                                      or "nothing") + " in this cell")
    if e["drift"]:
        out.append("  drift: the tile on disk differs from its rules here (`effects apply` puts it right)")
    return out


# ============================================================================= rules --init / --check

@click.command("rules")
@data_option
@click.option("--map", "map_name", metavar="NAME", help="The map (default: the data's only map).")
@tile_option
@click.option("--init", "init", is_flag=True,
              help="Write a starting rules file learned from the map as it is now and from the client's own maps.")
@click.option("--check", "check", is_flag=True, help="Check a rules file against the data; write nothing.")
@rules_option
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False), default=None,
              help="--init: the rules file to write (mask pictures go into masks/ beside it).")
@click.option("-f", "--force", is_flag=True, help="--init: replace an existing file.")
@click.option("--no-client", is_flag=True, help="--init: do not scan the client's maps for suggestions.")
@json_option
def rules_cmd(data_path, map_name, tiles, init, check, rules_path, out, force, no_client, as_json):
    """Make or check a rules file.

    \b
    --init -o FILE    a starting file: per texture the effect id the map gives it (rules per area or
                      painted where it varies), the client's own choice for textures the map leaves
                      bare, exclusions the map's noEffectDoodad bits already follow; a comment per
                      rule says where it came from. Applied to the map as it is, it changes no id.
    --check           the whole file checked against the data (ids, doodads, areas, pictures).
    """
    if init == check:
        raise UsageError("say --init -o FILE or --check")
    with _open(data_path) as data:
        if check:
            from wowgrass.edit.rules import load_rules
            from wowgrass.edit.rules_engine import prepare

            path = default_rules_path(data_path, rules_path)
            plan = prepare(load_rules(path), data, map_name, parse_tiles(tiles))
            doc = {"rules": str(path), "map": plan.map, "tile_count": len(plan.tiles), "build": plan.build,
                   "target": plan.target, "rule_count": len(plan.rules.rules), "sets": plan.set_reports,
                   "warnings": plan.warnings}
            if as_json:
                echo_json(doc)
            else:
                click.echo(f"{path}: {plural(len(plan.rules.rules), 'rule')}, {plural(len(plan.rules.sets), 'set')} "
                           f"for {plan.map} ({plural(len(plan.tiles), 'tile')}, {plan.target} tables): ok")
            return
        if out is None:
            raise UsageError("--init needs -o FILE")
        from wowgrass.edit.rules_explain import learn_rules, write_learned
        from wowgrass.game.maps import choose_map

        name = choose_map(data, map_name, warn=note)
        scan = None
        if not no_client:
            from wowgrass.edit.suggest import client_effects

            with progress_bar("scan the client's maps", "tiles", quiet=as_json) as bar:
                scan = client_effects(data, progress=lambda d, t, w: bar.set(d, t, w))
        bar_cm, cb, state = _progress("learn", as_json)
        with bar_cm as bar:
            state["bar"] = bar
            text, pictures = learn_rules(data, name, scan=scan, ranges=parse_tiles(tiles), progress=cb)
        files = [str(p) for p in write_learned(out, text, pictures, force=force)]
    if as_json:
        echo_json({"map": name, "files": files, "rule_count": text.count("\n[[") + text.startswith("[["),
                   "picture_count": len(pictures)})
        return
    note(f"wrote {files[0]}" + (f" and {plural(len(pictures), 'mask picture')}" if pictures else ""))
    click.echo(files[0])


# ============================================================================= audit --rules: drift

def audit_drift(data, rules, map_name, ranges, msb_first, as_json) -> dict:
    """The drift document ``effects audit --rules`` adds: per tile and in all, the cells where the
    tiles disagree with the rules."""
    from wowgrass.edit.rules_engine import prepare
    from wowgrass.edit.rules_explain import drift_map

    plan = prepare(rules, data, map_name, ranges, msb_first=msb_first)
    bar_cm, cb, state = _progress("drift", as_json)
    with bar_cm as bar:
        state["bar"] = bar
        drifts = drift_map(data, plan, progress=cb)
    keys = ("cell_count", "effect_layer_count", "effect_cell_count", "mapping_cell_count", "exclude_cell_count",
            "include_cell_count")
    per = [d.to_json() for d in drifts]
    return {"rules": str(rules.path), **{k: sum(p[k] for p in per) for k in keys},
            "drifted_tile_count": sum(1 for d in drifts if d.drifted), "per_tile": [p for p in per if p["cell_count"]
                                                                                   or p["effect_layer_count"]]}


def drift_lines(doc: dict) -> list[str]:
    if not doc["drifted_tile_count"]:
        return [f"  drift: none: every tile is as {Path(doc['rules']).name} wants it"]
    out = [f"  drift from {Path(doc['rules']).name}: {doc['cell_count']:,} cells in {doc['drifted_tile_count']:,} "
           f"tile(s): {doc['effect_layer_count']:,} effect ids ({doc['effect_cell_count']:,} cells), "
           f"{doc['mapping_cell_count']:,} doodadMapping, {doc['exclude_cell_count']:,} to exclude, "
           f"{doc['include_cell_count']:,} to include (`wowgrass effects apply` puts them right)"]
    for p in doc["per_tile"][:20]:
        out.append(f"    {p['tile'][0]},{p['tile'][1]}: {p['cell_count']:,} cells")
    return out
