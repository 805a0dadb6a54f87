"""``wowgrass effects new-set`` and ``effects diff``: new ground-effect sets, and a patch's effect on
a map's grass. Plain commands, attached to the ``effects`` group of ``cli/effects.py``."""

from __future__ import annotations

from pathlib import Path

import click

from wowgrass.cli.common import (
    constants_options,
    data_option,
    dbc_option,
    echo_json,
    json_option,
    note,
    output_path,
    parse_tiles,
    placement_constants,
    plural,
    progress_bar,
    text_console,
    tile_option,
)
from wowgrass.errors import UsageError


def _weights(text):
    if text is None:
        return None
    try:
        return [int(v) for v in text.replace(" ", "").split(",") if v != ""]
    except ValueError:
        raise UsageError(f"--weights {text!r}: whole numbers separated by commas, e.g. 8,4,4") from None


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
@click.option("--build", type=click.Choice(["1.12", "2.4.3", "3.3.5"]), default=None,
              help="The tables' layout (default: detected; 2.4.3 from the Data folder's archives).")
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Folder to write DBFilesClient/GroundEffectTexture.dbc (and GroundEffectDoodad.dbc) into.")
@click.option("-f", "--force", is_flag=True, help="Replace tables already under -o DIR.")
@click.option("--in-place", is_flag=True, help="Allow -o DIR to be where the input tables are (a .bak is kept).")
@json_option
def new_set(data_path, dbc_dir, doodads, weights, density, sound, new_id, build, out_dir, force, in_place, as_json):
    """Add a GroundEffectTexture row naming the --doodad models, in the tables' own layout (1.12/2.4.3:
    DoodadID names a GroundEffectDoodad DoodadIdTag and there are no weights; 3.3.5: an ID, with
    weights). A model without a GroundEffectDoodad row gets one. Every existing row and string keeps
    its bytes; the new rows and strings are appended. Writes the changed tables under -o DIR in the
    client's layout (DBFilesClient/...), ready for `patch build`; prints the new effect id.
    """
    from wowgrass.edit.effect_sets import add_effect_set, read_tables, write_tables
    from wowgrass.game.effects import DOODAD_PATH, TEXTURE_PATH

    if (data_path is None) == (dbc_dir is None):
        raise UsageError("give the tables: --data DIR (a Data folder or extract) or --dbc DIR")
    data = None
    if data_path is not None:
        from wowgrass.game.data import open_data

        data = open_data(data_path)
    try:
        tex, dood, inputs, hint = read_tables(data=data, dbc_dir=dbc_dir)
        report = []
        tex2, dood2, eid = add_effect_set(tex, dood, build, doodads=list(doodads), weights=_weights(weights),
                                          density=density, sound=sound, id=new_id, hint=hint, report=report)
        done = report[0]
        missing = [m for m in dict.fromkeys(done.doodads) if data is not None and not data.exists(m)]
    finally:
        if data is not None:
            data.close()
    outputs = {TEXTURE_PATH: tex2}
    if dood2 != dood or (Path(out_dir) / "DBFilesClient" / "GroundEffectDoodad.dbc").exists():
        outputs[DOODAD_PATH] = dood2   # the pair under -o DIR always matches
    files = write_tables(out_dir, outputs, force=force, in_place=in_place, inputs=inputs)
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
    names = ", ".join(m.rsplit("\\", 1)[-1] for m in done.doodads)
    weights_text = f", weights {','.join(map(str, done.weights))}" if done.weights else ""
    note(f"effect set {eid} ({done.build}): {names}{weights_text}, density {done.density}, sound {done.sound}")
    for f in files:
        note(f"wrote {f}")
    note(f"note: `wowgrass effects assign --data {data_path or 'D'} --texture GLOB --effect {eid} -o {out_dir}` "
         f"gives it to a texture's layers; `wowgrass patch build {out_dir}` ships the tables and tiles together")
    click.echo(eid)


@click.command("diff")
@data_option
@click.option("--map", "map_name", metavar="NAME", help="The map (default: the only map in --data).")
@click.option("--patch", "patch_path", required=True, type=click.Path(exists=True, dir_okay=False),
              help="The patch MPQ, mounted where the client would mount it by its name.")
@tile_option
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False),
              help="Write the before | after | change picture here (PNG or another image suffix).")
@click.option("--placement", type=click.Choice(["client", "coverage"]), default="client", show_default=True,
              help="Which placement the picture draws (both are counted).")
@click.option("--size", type=click.IntRange(64, 2048), default=None,
              help="Pixels per tile in the picture (default: about 1024 across each of its three panels).")
@constants_options
@json_option
def diff(data_path, map_name, patch_path, tiles, out, placement, size, seed, overrides, as_json):
    """Before and after: the grass of each tile without and with the patch placed in the Data folder,
    counted with the client placement and with coverage (instances, and cells whose grass changed).
    Default tiles: those whose ADT the patch holds (every tile of the map when it changes only the
    ground-effect tables). -o draws the selection top down: before | after (a dot per instance,
    coloured by model, the cells whose grass changed outlined) | the change per cell, with the legend.
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
        write_image(out, diff_picture(diffs, placement, size, Path(patch_path).name))
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
    text_console().print(table)
    if where["file"] is None:
        note("note: the patch answers first, over the loose folder")
    else:
        note(f"note: the patch is mounted as {where['file']} (archive {where['rank']} of {where['archive_count']})")
    if out is not None:
        note(f"wrote {out} ({plural(len(diffs), 'tile')}, {placement} placement)")

