"""``wowgrass effects new-set`` and ``effects diff``: new ground-effect sets, and a patch's effect on
a map's grass. Plain commands, attached to the ``effects`` group of ``cli/effects.py``."""

from __future__ import annotations

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
    plural,
    progress_bar,
    text_console,
    tile_option_with,
)
from wowgrass.errors import UsageError


def _weights(text):
    if text is None:
        return None
    try:
        return [int(v) for v in text.replace(" ", "").split(",") if v != ""]
    except ValueError:
        raise UsageError(f"--weights {text!r}: whole numbers separated by commas, e.g. 8,4,4") from None


def _open_sources(data_path):
    if data_path is None:
        return None
    from wowgrass.game.data import open_data

    return open_data(data_path)


def _write_pair(out_dir, tex, dood, *, in_place, inputs) -> list[str]:
    """Both tables under -o DIR, always together (a set's rows and the doodad rows they name match)."""
    from wowgrass.edit.effect_sets import write_tables
    from wowgrass.game.effects import DOODAD_PATH, TEXTURE_PATH

    # what is under -o DIR was read first (or --force said to start again): replacing it loses nothing
    return write_tables(out_dir, {TEXTURE_PATH: tex, DOODAD_PATH: dood}, force=True, in_place=in_place,
                        inputs=inputs)


def _missing_models(data, models) -> list[str]:
    return [m for m in dict.fromkeys(models) if data is not None and not data.exists(m)]


def _report_set(done, files, missing, out_dir, as_json, verb: str) -> None:
    if as_json:
        echo_json({**done.to_dict(), "files": files, "missing_models": missing})
        return
    for w in done.warnings:
        note(f"warning: {w}")
    for m in missing:
        note(f"warning: {m} is not in the data: ship it in the patch too ({Path(out_dir) / 'World/NoDXT/Detail'})")
    for d in done.new_doodads:
        note(f"note: GroundEffectDoodad row {d['id']}" + (f" (tag {d['tag']})" if "tag" in d else "")
             + f" added for {d['path']}")
    names = ", ".join(m.rsplit("\\", 1)[-1] for m in done.doodads) or "no doodads"
    weights_text = f", weights {','.join(map(str, done.weights))}" if done.weights else ""
    note(f"effect set {done.id} {verb} ({done.build}): {names}{weights_text}, density {done.density}, "
         f"sound {done.sound}")
    for f in files:
        note(f"wrote {f}")


@click.command("new-set")
@data_option
@dbc_option
@click.option("--doodad", "doodads", multiple=True, required=True, metavar="PATH",
              help="A detail model, by name or path: ElwGra01, ElwGra01.mdl or World\\NoDXT\\Detail\\ElwGra01.m2; "
                   "repeat for up to four.")
@click.option("--weights", metavar="A,B,C,D",
              help="3.3.5: one weight per --doodad, points of the client's 16-slot bag (default: 16 shared evenly).")
@click.option("--density", type=click.IntRange(0, 2**31 - 1), default=8, show_default=True,
              help="Doodads per cell the client tries (0 means the client's default, 8).")
@click.option("--sound", type=int, default=0, show_default=True, help="TerrainType id (footstep sounds).")
@click.option("--id", "new_id", type=click.IntRange(1, 0xFFFFFFFE), default=None,
              help="The new row's ID (refused when taken; default: one above the highest).")
@build_option("The tables' layout (default: detected; 2.4.3 from the Data folder's archives).")
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Folder to write DBFilesClient/GroundEffectTexture.dbc and GroundEffectDoodad.dbc into; "
                   "tables already there are added to.")
@click.option("-f", "--force", is_flag=True,
              help="Start again from --data/--dbc instead of adding to the tables under -o DIR (the ids "
                   "there are still never given again).")
@click.option("--in-place", is_flag=True, help="Allow -o DIR to be where the input tables are (a .bak is kept).")
@json_option
def new_set(data_path, dbc_dir, doodads, weights, density, sound, new_id, build, out_dir, force, in_place, as_json):
    """Add a GroundEffectTexture row naming the --doodad models, in the tables' own layout (1.12/2.4.3:
    DoodadID names a GroundEffectDoodad DoodadIdTag and there are no weights; 3.3.5: an ID, with
    weights). A model without a GroundEffectDoodad row gets one. Every existing row and string keeps
    its bytes; the new rows and strings are appended. The tables are read from -o DIR where an earlier
    new-set or edit-set wrote them there (so sets add up), else from --dbc DIR, else from --data;
    both are written under -o DIR in the client's layout (DBFilesClient/...), ready for `patch
    build`; prints the new effect id.
    """
    from wowgrass.edit.effect_sets import add_effect_set, read_tables, table_ids
    from wowgrass.paths import find_table

    if data_path is None and dbc_dir is None:
        raise UsageError("give the tables: --data DIR (a Data folder or extract) or --dbc DIR")
    reserved = ()
    if force:   # ids handed out under -o DIR stay taken: tiles may already carry them
        mine = find_table(Path(out_dir) / "DBFilesClient", "GroundEffectTexture.dbc") \
            if (Path(out_dir) / "DBFilesClient").is_dir() else None
        reserved = table_ids(mine.read_bytes()) if mine is not None else ()
    data = _open_sources(data_path)
    try:
        tex, dood, inputs, hint = read_tables(data=data, dbc_dir=dbc_dir, over=None if force else out_dir)
        report = []
        tex2, dood2, eid = add_effect_set(tex, dood, build, doodads=list(doodads), weights=_weights(weights),
                                          density=density, sound=sound, id=new_id, hint=hint, report=report,
                                          reserved=reserved)
        done = report[0]
        missing = _missing_models(data, done.doodads)
    finally:
        if data is not None:
            data.close()
    files = _write_pair(out_dir, tex2, dood2, in_place=in_place, inputs=inputs)
    _report_set(done, files, missing, out_dir, as_json, "added")
    if as_json:
        return
    note(f"note: `wowgrass effects assign --data {data_path or 'D'} --texture GLOB --effect {eid} -o {out_dir}` "
         f"gives it to a texture's layers; `wowgrass patch build {out_dir}` ships the tables and tiles together")
    click.echo(eid)


@click.command("edit-set")
@click.argument("effect_id", type=click.IntRange(1, 0xFFFFFFFE), metavar="ID")
@data_option
@dbc_option
@click.option("--doodad", "doodads", multiple=True, metavar="PATH",
              help="Replace the set's models with these (1 to 4, as new-set takes them).")
@click.option("--weights", metavar="A,B,C,D",
              help="3.3.5: one weight per --doodad (or per model the set has): points of the 16-slot bag.")
@click.option("--density", type=click.IntRange(0, 2**31 - 1), default=None,
              help="Doodads per cell the client tries (0 means the client's default, 8).")
@click.option("--sound", type=int, default=None, help="TerrainType id (footstep sounds).")
@build_option("The tables' layout (default: detected; 2.4.3 from the Data folder's archives).")
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Folder to write both tables into (tables already there are the ones edited).")
@click.option("--in-place", is_flag=True, help="Allow -o DIR to be where the input tables are (a .bak is kept).")
@json_option
def edit_set(effect_id, data_path, dbc_dir, doodads, weights, density, sound, build, out_dir, in_place, as_json):
    """Change an existing effect set (a GroundEffectTexture row): its models (--doodad, replacing them
    all), --weights, --density or --sound; what is not given stays. Only that row's bytes change (a
    new model gets a GroundEffectDoodad row at the end). Reads and writes the tables as new-set does.
    """
    from wowgrass.edit.effect_sets import edit_effect_set, read_tables

    if data_path is None and dbc_dir is None:
        raise UsageError("give the tables: --data DIR (a Data folder or extract) or --dbc DIR")
    data = _open_sources(data_path)
    try:
        tex, dood, inputs, hint = read_tables(data=data, dbc_dir=dbc_dir, over=out_dir)
        report = []
        tex2, dood2 = edit_effect_set(tex, dood, effect_id, build, doodads=list(doodads) or None,
                                      weights=_weights(weights), density=density, sound=sound, hint=hint,
                                      report=report)
        done = report[0]
        missing = _missing_models(data, done.doodads)
    finally:
        if data is not None:
            data.close()
    files = _write_pair(out_dir, tex2, dood2, in_place=in_place, inputs=inputs)
    _report_set(done, files, missing, out_dir, as_json, "changed")


@click.command("diff")
@data_option
@map_option("The map (default: the only map in --data).")
@click.option("--patch", "patch_path", required=True, type=click.Path(exists=True, dir_okay=False),
              help="The patch MPQ, mounted where the client would mount it by its name.")
@tile_option_with("A tile (column,row) or an inclusive range, e.g. 32,48 or 30:33,40:45; repeatable. Default: "
                  "the tiles whose ADT the patch holds (every tile of the map when it changes only the "
                  "ground-effect tables).")
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False),
              help="Write the before | after | change picture here (PNG or another image suffix).")
@click.option("--placement", type=click.Choice(["client", "coverage"]), default="client", show_default=True,
              help="Which placement the picture draws (both are counted).")
@click.option("--size", type=click.IntRange(256, 16384), default=None, metavar="PIXELS",
              help="The picture's width: its three panels side by side (default 1536; a tile gets 16 to 512 "
                   "pixels, each panel at most as tall as it is wide).")
@constants_options
@json_option
def diff(data_path, map_name, patch_path, tiles, out, placement, size, seed, overrides, as_json):
    """Before and after: the grass of each tile without and with the patch placed in the Data folder,
    counted with the client placement and with coverage (instances, and cells whose grass changed).
    -o draws the selection top down: before | after (a dot per instance, coloured by model, the
    cells whose grass changed outlined) | the change per cell, each tile labelled, with the legend.
    """
    from wowgrass.edit.preview import before_after, diff_picture, diff_tiles, patch_tiles, tables_changed
    from wowgrass.fileio import image_format, write_image
    from wowgrass.formats.mpq import MpqArchive
    from wowgrass.game.maps import choose_map, map_tiles

    if data_path is None:
        raise UsageError("--data DIR: the client's Data folder the patch is for")
    if out is not None:
        output_path(out)
        image_format(out)
    constants = placement_constants(seed, overrides)
    with MpqArchive.open(patch_path) as arc:
        names = arc.names()
    with before_after(data_path, patch_path) as (before, after, where):
        map_name = map_name or choose_map(after, None, warn=note)
        known = map_tiles(after, map_name).tiles
        if tiles:
            chosen = map_tiles(after, map_name, parse_tiles(tiles)).tiles
        else:
            chosen = [t for t in patch_tiles(names, map_name) if t in known]
            if not chosen:
                if not tables_changed(before, after):
                    raise UsageError(f"{Path(patch_path).name} changes no tile of {map_name} and no ground-effect "
                                     "table (give --tile to compare tiles anyway)")
                chosen = known
        with progress_bar("diff", "tiles", total=len(chosen), quiet=as_json) as bar:
            diffs = diff_tiles(before, after, map_name, chosen, constants=constants,
                               progress=lambda done, total: bar.set(done, total))
    result = {"map": map_name, "patch": str(patch_path), "mounted": where,
              "tiles": [d.to_dict() for d in diffs], "tile_count": len(diffs)}
    for p in ("client", "coverage"):
        result[p] = {k: sum(d.counts[p][k] for d in diffs) for k in ("before", "after", "change", "changed_cell_count")}
    if out is not None:
        write_image(out, diff_picture(diffs, placement, patch_name=Path(patch_path).name, width=size))
        result["file"] = str(out)
    if as_json:
        echo_json(result)
        return
    from rich.table import Table

    table = Table(title=f"{map_name}: grass before | after {Path(patch_path).name}")
    for col in ("tile", "client", "coverage", "cells", "edits"):
        table.add_column(col, justify="right" if col != "edits" else "left", no_wrap=True)
    for d in diffs:
        c, v, e = d.counts["client"], d.counts["coverage"], d.edits
        edits = ", ".join(f"{n:,} {what}" for n, what in ((e["layer_effect_count"], "layers"),
                          (e["no_effect_doodad_cell_count"], "noEffect"), (e["doodad_mapping_cell_count"], "mapping")) if n) or "-"
        table.add_row(f"{d.tile[0]},{d.tile[1]}", f"{c['before']:,}>{c['after']:,}", f"{v['before']:,}>{v['after']:,}",
                      f"{c['changed_cell_count']:,}/{v['changed_cell_count']:,}", edits)
    table.caption = "instances before>after; cells whose grass changed (client/coverage); ADT fields edited"
    console = text_console()
    if not console.is_terminal:   # a log or a pipe: whole numbers, never cut to 80 columns
        console.width = max(80, console.measure(table).maximum)
    console.print(table)
    if where["file"] is None:
        note("note: the patch answers first, over the loose folder")
    else:
        note(f"note: the patch is mounted as {where['file']} (archive {where['rank']} of {where['archive_count']})")
    if out is not None:
        note(f"wrote {out} ({plural(len(diffs), 'tile')}, {placement} placement)")

