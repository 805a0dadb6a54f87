"""``wowgrass effects``: the ground-effect workbench: audit a map's grass, fix it, make new sets.

Sections: shared options; ``audit``; the fixes (``assign``, ``remap``, ``exclude``); then the new
sets and previews (``new-set``, ``edit-set``, ``diff``, written in cli/effects_sets.py) at the end.
"""

from __future__ import annotations

import functools

import click

from wowgrass.cli.common import (
    data_option, echo_json, json_option, note, parse_tiles, plural, progress_bar, tile_option,
)
from wowgrass.errors import UsageError


@click.group()
def effects():
    """The ground-effect workbench: find why a map's grass is patchy, fix it, ship it.

    `audit` shows which textures carry which effect ids and where grass goes missing; `assign`,
    `remap` and `exclude` fix the tiles, changing only the bytes they must (the MCLY effect ids,
    the MCNK doodadMapping or noEffectDoodad bits) and writing the changed ADTs under -o DIR in
    the client's folder layout (World/Maps/M/M_C_R.adt).
    """


# ============================================================================= shared options

def map_options(func):
    """--data, --map, --tile, --doodad-map-msb-first: the map and tiles a command works on."""

    @data_option
    @click.option("--map", "map_name", metavar="NAME", help="Map folder name, e.g. Azeroth (default: the only map).")
    @tile_option
    @click.option("--doodad-map-msb-first", "msb_first", is_flag=True,
                  help="The tiles store doodadMapping MSB first (saved by noggit3); edits keep that order.")
    @functools.wraps(func)
    def wrapper(data_path, map_name, tiles, msb_first, **kw):
        from wowgrass.game.data import open_data
        from wowgrass.game.maps import choose_map

        if data_path is None:
            from wowgrass.grass.bake import default_data

            data_path = str(default_data()[0])   # the sample world, as every command takes it
        ranges = parse_tiles(tiles)
        with open_data(data_path) as data:
            name = choose_map(data, map_name, warn=note)
            return func(data=data, map_name=name, ranges=ranges, msb_first=msb_first, **kw)

    return wrapper


def _progress(label: str):
    """(context manager, callback(done, total, what)) for a tile loop."""
    bar_cm = progress_bar(label, "tiles")
    state = {}

    def cb(done, total, what):
        bar = state.get("bar")
        if bar is not None:
            bar.set(done, total, what)

    return bar_cm, cb, state


# ============================================================================= audit

@effects.command("audit")
@map_options
@click.option("-j", "--jobs", type=click.IntRange(1, 256), default=1, show_default=True,
              help="Processes reading the tiles (the same result whatever the number).")
@click.option("--margin", type=click.FloatRange(0, 1), default=None,
              help="A cell's doodadMapping is stale when the layer it names shows this share of the cell "
                   "less than the most visible layer (default 0.25).")
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False), default=None,
              help="Draw the selection top down (one colour per effect set, unassigned and stale cells "
                   "in their own colours, the legend below) into this picture.")
@click.option("--cells-png", "cells_png", type=click.Path(dir_okay=False), default=None,
              help="The same picture at one pixel a cell without the legend: the grid `effects exclude "
                   "--mask` reads (paint over it).")
@click.option("--scale", type=click.IntRange(1, 16), default=None,
              help="Pixels per cell of the -o picture (default: about 1024 pixels across).")
@click.option("--overlay", "overlay", type=click.Path(exists=True), default=None, metavar="DIR|PATCH.MPQ",
              help="Files under DIR (a fix's -o DIR, in the client's layout), or those of a patch MPQ, answer "
                   "before --data's: audit the map as fixed there.")
@click.option("--rules", "rules_path", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="Also report drift: the cells where a tile disagrees with this rules file (what `effects apply` "
                   "would change).")
@json_option
def audit_cmd(data, map_name, ranges, msb_first, jobs, margin, output, cells_png, scale, overlay, rules_path, as_json):
    """Which textures carry which ground effects, and where the grass goes missing.

    Per texture: the layers and chunks using it and the effect ids it carries; the patchy-grass
    case (layers of a texture that carries grass elsewhere on the map with no effect id); effect
    ids with no GroundEffectTexture row, rows whose doodads have no GroundEffectDoodad row, doodad
    models missing from the data; cells excluded by noEffectDoodad; stale doodadMapping cells.
    Exit status 2 when the ground-effect tables are missing or cannot be read (grass not counted).
    """
    from wowgrass.cli.common import output_path
    from wowgrass.edit.adt_edit import STALE_MARGIN
    from wowgrass.edit.audit import audit_map, write_audit_picture, write_cells_picture

    out = output_path(output, _image_suffixes()) if output else None
    cells = output_path(cells_png, (".png",), option="--cells-png") if cells_png else None
    rules = None
    if rules_path:
        from wowgrass.edit.rules import load_rules

        rules = load_rules(rules_path)       # a bad file stops the audit before any tile is read
    if overlay:
        from wowgrass.edit.batch import Overlay

        data = Overlay(data, overlay)
    bar_cm, cb, state = _progress("audit")
    with bar_cm as bar:
        state["bar"] = bar
        result = audit_map(data, map_name, ranges, jobs=jobs, msb_first=msb_first,
                           margin=STALE_MARGIN if margin is None else margin, progress=cb,
                           picture=out is not None or cells is not None)
    for n in result.notes:
        note(n)
    drifts = None
    if rules is not None:
        from wowgrass.cli.effects_rules import audit_drift

        drifts = audit_drift(data, rules, map_name, ranges, msb_first, as_json)
    files = []
    if out is not None:
        files.append(str(write_audit_picture(result, out, scale=scale)))
    if cells is not None:
        files.append(str(write_cells_picture(result, cells)))
    if as_json:
        doc = result.to_json()
        if files:
            doc["files"] = files
        if drifts is not None:
            doc["drift"] = drifts
        echo_json(doc)
    else:
        for line in result.text_lines():
            click.echo(line)
        if drifts is not None:
            from wowgrass.cli.effects_rules import drift_lines

            for line in drift_lines(drifts):
                click.echo(line)
    for f in files:
        note(f"wrote {f}")
    if result.tables_problem:   # an audit that could not check the grass is no clean bill
        click.echo(f"error: the audit is incomplete: {result.tables_problem}", err=True)
        raise click.exceptions.Exit(2)


def _image_suffixes():
    from wowgrass.fileio import IMAGE_FORMATS

    return tuple(IMAGE_FORMATS)


# ============================================================================= fixes: assign, remap, exclude

def fix_outputs(func):
    """-o DIR, --in-place, -n/--dry-run, --json: where a fix writes. Files already under -o DIR
    (earlier fixes, a table `new-set` wrote) are read before --data's, so fixes add up there."""

    @click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False), default=None,
                  help="Write the changed ADTs under this folder in the client's layout (World/Maps/M/M_C_R.adt); "
                       "tiles and tables already there (earlier fixes) are read instead of --data's.")
    @click.option("--in-place", is_flag=True,
                  help="Replace the loose input tiles themselves (each old one kept beside it as <name>.bak).")
    @click.option("-n", "--dry-run", is_flag=True, help="Say what would change; write nothing.")
    @json_option
    @functools.wraps(func)
    def wrapper(out_dir, in_place, dry_run, as_json, data, **kw):
        if in_place and out_dir:
            raise UsageError("give -o DIR or --in-place, not both")
        if not dry_run and not in_place and not out_dir:
            raise UsageError("give -o DIR for the changed tiles (or --in-place, or -n to see what would change)")
        if out_dir:
            from pathlib import Path

            from wowgrass.edit.batch import Overlay

            if not Path(out_dir).is_dir():
                raise UsageError(f"-o {out_dir}: folder does not exist")
            data = Overlay(data, out_dir)
        return func(out=dict(out_dir=out_dir, in_place=in_place, dry_run=dry_run, as_json=as_json), data=data, **kw)

    return wrapper


def _finish(edit, data, out: dict) -> None:
    """Write (unless a dry run) and report an edit."""
    for n in edit.notes:
        note(n)
    files = []
    if not out["dry_run"] and edit.files:
        files = [str(p) for p in edit.write(out["out_dir"], in_place=out["in_place"], data=data)]
    if out["as_json"]:
        doc = edit.to_json()
        doc["dry_run"] = out["dry_run"]
        doc["files"] = files
        echo_json(doc)
        return
    tot = edit.totals()
    what = {"assign": plural(tot["layers"], "layer"), "remap": plural(tot["cells"], "cell"),
            "exclude": plural(tot["cells"], "cell")}[edit.kind]
    click.echo(f"{edit.kind}: {plural(len(edit.reports), 'tile')} of {edit.map} read, "
               f"{plural(len(edit.files), 'tile')} changed: {what} in {plural(tot['chunks'], 'chunk')}, "
               f"{plural(tot['bytes_changed'], 'byte')} ("
               + (", ".join(f"{k} {v:,}" for k, v in tot["fields"].items() if v) or "none") + ")")
    if edit.kind == "assign":
        matched = sorted({t for r in edit.reports for t in r.textures}, key=str.lower)
        click.echo(f"  textures: {', '.join(matched)}")
        before: dict = {}
        for r in edit.reports:
            for k, v in r.before.items():
                before[k] = before.get(k, 0) + v
        if before:
            click.echo("  effect ids replaced: " + ", ".join(f"{k} ({v})" for k, v in sorted(before.items())))
    if out["dry_run"]:
        click.echo("  dry run: nothing written")
    elif not edit.files:
        click.echo("  nothing to change: nothing written")
    for f in files:
        note(f"wrote {f}")


@effects.command("assign")
@map_options
@click.option("--texture", "texture", metavar="GLOB",
              help="The texture (MTEX path), a name or a glob: case-insensitive, / or \\; a bare name matches "
                   "the file name (e.g. 'ElwynnGrass*' or 'Tileset/Elwynn/*'). With --suggest: only these textures.")
@click.option("--effect", "effect_id", type=int, metavar="ID",
              help="The GroundEffectTexture id to give its layers (0 removes the effect).")
@click.option("--only-unassigned", is_flag=True, help="Only layers that carry no effect id (0, 0xFFFF, 0xFFFFFFFF).")
@click.option("--allow-missing", is_flag=True, help="Assign an effect id the tables do not have.")
@click.option("--suggest", is_flag=True,
              help="Instead of --effect: give the layers without an effect id of each texture the effect id the "
                   "client's own maps give that texture most often (a scan of every map of the client's data, "
                   "cached; with layered data the first --data only), and say what was chosen.")
@click.option("--rescan", is_flag=True, help="--suggest: scan the client's maps again (not the cached scan).")
@fix_outputs
def assign_cmd(data, map_name, ranges, msb_first, texture, effect_id, only_unassigned, allow_missing, suggest, rescan,
               out):
    """Give an effect id to every layer of a texture (over the map, --tile, or --only-unassigned);
    --suggest: to each texture without one, the id the client's maps give it most often."""
    from wowgrass.edit.batch import assign_map

    if suggest:
        if effect_id is not None or allow_missing or only_unassigned:
            raise UsageError("--suggest chooses the effect ids (of layers without one): drop --effect, "
                             "--allow-missing and --only-unassigned")
        return _assign_suggested(data, map_name, ranges, msb_first, texture, rescan, out)
    if rescan:
        raise UsageError("--rescan is for --suggest")
    if texture is None or effect_id is None:
        raise UsageError("give --texture GLOB and --effect ID (or --suggest)")

    bar_cm, cb, state = _progress("assign")
    with bar_cm as bar:
        state["bar"] = bar
        edit = assign_map(data, map_name, texture, effect_id, tiles=ranges, only_unassigned=only_unassigned,
                          allow_missing=allow_missing, msb_first=msb_first, progress=cb)
    _finish(edit, data, out)


def _assign_suggested(data, map_name, ranges, msb_first, texture, rescan, out) -> None:
    from wowgrass.edit.suggest import assign_suggested, client_effects

    with progress_bar("scan the client's maps", "tiles") as bar:
        scan = client_effects(data, refresh=rescan, progress=lambda d, t, what: bar.set(d, t, what))
    note(f"note: suggestions from {plural(scan.tile_count, 'tile')} of {plural(scan.map_count, 'map')} of "
         f"{scan.source or data.root}" + (" (cached scan)" if scan.cached else f" (scanned in {scan.seconds:.1f} s)"))
    bar_cm, cb, state = _progress("assign")
    with bar_cm as bar:
        state["bar"] = bar
        edit, chosen, missing = assign_suggested(data, map_name, scan, textures=texture, tiles=ranges,
                                                 msb_first=msb_first, progress=cb)
    edit.params["chosen"] = [{"texture": c["texture"], "effect": c["effect"], "layer_count": c["count"],
                              "others": [{"effect": e, "layer_count": n} for e, n in c["others"]]}
                             for c in chosen.values()]
    edit.params["no_suggestion"] = missing
    if not out["as_json"]:
        for c in chosen.values():
            others = ", ".join(f"{e} ({n:,})" for e, n in c["others"])
            click.echo(f"  {c['texture']}: effect {c['effect']} (on {plural(c['count'], 'layer')} of the client's "
                       f"maps" + (f"; then {others}" if others else "") + ")")
        for t in missing:
            note(f"note: {t}: the client's maps give it no effect the tables have; left as it is")
    _finish(edit, data, out)


@effects.command("remap")
@map_options
@click.option("--margin", type=click.FloatRange(0, 1), default=None,
              help="Remap cells whose doodadMapping layer shows this share of the cell less than the most "
                   "visible layer (default 0.25, the audit's stale cells; 0: every cell not naming the best).")
@fix_outputs
def remap_cmd(data, map_name, ranges, msb_first, margin, out):
    """Point doodadMapping at the layer most visible in each cell (the stale cells the audit shows)."""
    from wowgrass.edit.adt_edit import STALE_MARGIN
    from wowgrass.edit.batch import remap_map

    bar_cm, cb, state = _progress("remap")
    with bar_cm as bar:
        state["bar"] = bar
        edit = remap_map(data, map_name, tiles=ranges, margin=STALE_MARGIN if margin is None else margin,
                         msb_first=msb_first, progress=cb)
    _finish(edit, data, out)


@effects.command("exclude")
@map_options
@click.option("--mask", "mask", type=click.Path(exists=True, dir_okay=False), default=None,
              help="A grey picture, one pixel a cell (128x128 a tile; the selection's bounding box for several, "
                   "as --cells-png of `effects audit` draws it): light pixels (>= 128) select their cell.")
@click.option("--slope-above", type=float, default=None, metavar="DEG", help="Cells steeper than DEG degrees.")
@click.option("--under-liquid", is_flag=True, help="Cells under water, ocean, magma or slime.")
@click.option("--near-objects", type=float, default=None, metavar="YARDS",
              help="Cells within YARDS of a doodad (MDDF position) or a WMO (MODF bounding box).")
@click.option("--clear", is_flag=True, help="Clear the noEffectDoodad bit of those cells instead of setting it.")
@fix_outputs
def exclude_cmd(data, map_name, ranges, msb_first, mask, slope_above, under_liquid, near_objects, clear, out):
    """Set (or --clear) noEffectDoodad: no ground effect grows in the cells selected."""
    from wowgrass.edit.batch import exclude_map

    bar_cm, cb, state = _progress("exclude")
    with bar_cm as bar:
        state["bar"] = bar
        edit = exclude_map(data, map_name, tiles=ranges, mask=mask, slope_above=slope_above,
                           under_liquid=under_liquid, near_objects=near_objects, clear=clear,
                           msb_first=msb_first, progress=cb)
    _finish(edit, data, out)


# ============================================================================= new sets, previews
# `new-set`, `edit-set` and `diff` are written in cli/effects_sets.py.

from wowgrass.cli.effects_sets import diff, edit_set, new_set  # noqa: E402

for _command in (new_set, edit_set, diff):
    effects.add_command(_command)

# ============================================================================= rules
# `apply`, `why` and `rules` are written in cli/effects_rules.py.

from wowgrass.cli.effects_rules import apply_cmd, rules_cmd, why_cmd  # noqa: E402

for _command in (apply_cmd, why_cmd, rules_cmd):
    effects.add_command(_command)
