"""``wowgrass adt``: inspect terrain tiles and draw them."""

from __future__ import annotations

import functools
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
    placement_constants,
    placement_option,
    plural,
)
from wowgrass.errors import UsageError


def tile_source(func):
    """FILE | --data DIR --map NAME --tile COL,ROW, plus the alpha-format overrides."""

    @click.argument("file", required=False, type=click.Path(exists=True), metavar="[FILE|DIR]")
    @data_option
    @map_option("Map folder name, e.g. Azeroth (with --data; default: the only map there).")
    @click.option("--tile", "tile", metavar="COL,ROW", help="Tile column and row, e.g. 32,48 (with --data).")
    @click.option("--wdt", type=click.Path(exists=True, dir_okay=False),
                  help="The map's WDT, for the big-alpha flag (default: the WDT beside FILE or in --data).")
    @click.option("--big-alpha/--small-alpha", "big_alpha", default=None,
                  help="Force 8-bit (big) or 4-bit alpha maps instead of asking the WDT.")
    @click.option("--doodad-map-msb-first", is_flag=True,
                  help="Read doodadMapping MSB first (maps saved by noggit3).")
    @functools.wraps(func)
    def wrapper(file, data_path, map_name, tile, wdt, big_alpha, doodad_map_msb_first, **kw):
        from wowgrass.game.tiles import load_tile, parse_tile_arg

        if file is not None and Path(file).is_dir():   # `adt info DIR` is --data DIR, as `bake DIR`
            if data_path:
                raise UsageError(f"give the folder {file} or --data, not both")
            data_path, file = file, None
            if tile is None:
                tile = _only_tile(data_path, map_name)
        if file is None and data_path is None:
            if tile is None:
                raise UsageError("give an ADT FILE, or --tile COL,ROW with --data DIR (and --map NAME when it "
                                 "holds several maps; no --data: the sample world)")
            from wowgrass.grass.bake import default_data

            data_path = str(default_data()[0])   # the sample world, as bake, view and export take it
        col_row = parse_tile_arg(tile) if tile is not None else None
        if file is None and not map_name:   # the only map, as bake, view and export take it
            from wowgrass.game.data import open_data
            from wowgrass.game.maps import choose_map

            with open_data(data_path) as data:
                map_name = choose_map(data, None, warn=note)
        loaded = load_tile(file, data=data_path, map_name=map_name, tile=col_row, wdt=wdt, big_alpha=big_alpha,
                           doodad_map_msb_first=doodad_map_msb_first)
        loaded[2].update(data_dir=data_path, map=map_name, file=file)  # what --kind grass needs for its tables
        return func(loaded, **kw)

    return wrapper


def _only_tile(data_path, map_name) -> str:
    """The tile of a folder holding one (``adt info DIR``); an error saying how many there are else."""
    from wowgrass.game.data import open_data
    from wowgrass.game.maps import choose_map, map_tiles

    with open_data(data_path) as data:
        name = choose_map(data, map_name, warn=note)
        tiles = map_tiles(data, name).tiles
    if len(tiles) != 1:
        raise UsageError(f"{data_path}: map {name} has {plural(len(tiles), 'tile')}; pick one with --tile COL,ROW "
                         "(`wowgrass maps --data DIR -l` lists them)")
    return f"{tiles[0][0]},{tiles[0][1]}"


@click.group()
def adt():
    """Inspect terrain tiles (ADT v18, 1.12 – 3.3.5) and draw them."""


@adt.command()
@tile_source
@json_option
def info(loaded, as_json):
    """Summarize a tile: chunks, layers, textures, alpha encodings, effectIds, masks, holes, heights.

    FILE is an .adt file; or read World\\Maps\\<map>\\<map>_<col>_<row>.adt from --data.
    """
    from wowgrass.game.tiles import tile_summary

    tile, raw, source = loaded
    summary = {"file": source["path"], "source": source, **tile_summary(tile, raw)}
    if as_json:
        echo_json(summary)
        return
    s = summary
    echo = click.echo
    echo(f"{source['path']}: ADT v{s['version']}, tile {s['tile']['col']},{s['tile']['row']}, "
         f"{s['file_size']:,} bytes")
    wdt = source.get("wdt")
    echo(f"  alpha maps: {'8-bit (big alpha)' if s['big_alpha'] else '4-bit'}"
         + (f" (from {wdt['path']}, MPHD flags 0x{wdt['flags']:X})" if wdt else ""))
    echo("  chunks: " + ", ".join(f"{c['id']}" + (f"×{c['chunk_count']}" if c["chunk_count"] > 1 else "") for c in s["chunks"]))
    m = s["mcnk"]
    echo("  layers per chunk: " + ", ".join(f"{k}: {v}" for k, v in m["layers_per_chunk"].items())
         + f" ({m['layers_total']} layers)")
    echo("  alpha encodings: " + (", ".join(f"{k}: {v}" for k, v in s["alpha_encodings"].items()) or "none")
         + f"; MCNK 0x8000 (do not fix alpha): {m['do_not_fix_alpha_chunks']} chunks")
    echo(f"  height: {s['height']['min']:.3f} .. {s['height']['max']:.3f}")
    echo(f"  noEffectDoodad cells: {s['no_effect_doodad_cells']}; doodadMapping non-zero in "
         f"{s['doodad_mapping_nonzero_chunks']} chunks; holes in {s['hole_chunks']} chunks "
         f"({s['hole_cells']} cells)")
    echo(f"  doodads: {s['doodads']} ({s['models']} models), WMOs: {s['wmo_instances']} ({s['wmos']} names)")
    _echo_liquid(s["liquid"])
    _echo_modf(s["modf"])
    echo(f"  textures ({len(s['textures'])}):")
    for t in s["textures"]:
        echo(f"    {t['index']:3d} {t['path']}  ({t['layers']} layers)")
    echo(f"  effectIds ({len(s['effect_ids'])}):")
    for e in s["effect_ids"]:
        echo(f"    {e['id']:>10}  {e['layers']} layers")


def _echo_liquid(lq: dict) -> None:
    for note in lq.get("notes", ()):
        click.echo(f"  note: {note}")
    if not lq["layers"]:
        click.echo("  liquid: none" + (" (MH2O present, no layers)" if lq["mh2o"] else ""))
        return
    types = ", ".join(f"{t['id']} {t['name'] or t['kind']} ({t['kind']}): {plural(t['layers'], 'layer')}"
                      for t in lq["types"])
    h = lq["height"]
    fmts = ", ".join(f"{k}: {v}" for k, v in lq["vertex_formats"].items())
    click.echo(f"  liquid ({lq['format']}): {plural(lq['chunks'], 'chunk')}, {plural(lq['layers'], 'layer')} "
               f"(up to {lq['max_layers_per_chunk']} per chunk), {plural(lq['cells'], 'cell')}; "
               f"height {h['min']:.3f} .. {h['max']:.3f}")
    click.echo(f"    types: {types}" + (f"; vertex formats: {fmts}" if fmts else ""))


def _echo_modf(mf: dict) -> None:
    if not mf["count"]:
        return
    click.echo(f"  WMO placements (MODF): {mf['count']}" + (f", {mf['bad_name_ids']} with a name id past MWID"
                                                          if mf["bad_name_ids"] else ""))
    for p in mf["placements"]:
        x, y, z = p["position"]
        name = p["wmo"].replace("/", "\\").rsplit("\\", 1)[-1] or "(bad name id)"
        click.echo(f"    {name}  at ({x:.1f}, {y:.1f}, {z:.1f}) heading {p['rotation'][1]:.1f}, "
                   f"doodad set {p['doodad_set']}, uid {p['unique_id']}")


@adt.command()
@tile_source
@click.option("--kind", type=click.Choice(["height", "layers", "effects", "mask", "grass"]), default="height",
              show_default=True, help="height: shaded relief, green lowlands to snowy peaks over the tile's range "
              "(blue below sea level), bands in yards as the legend; layers: textures blended by alpha; "
              "effects: effectId per cell; mask: noEffectDoodad cells and holes; grass: a dot per placed "
              "grass instance, coloured by model, over the relief (needs the tables: --data or --dbc).")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="The image to write; its suffix names the format (.png, .jpg, .webp, ...).")
@click.option("--size", default="1024", show_default=True, metavar="PIXELS|WxH",
              help="The image's size in pixels: one number, or WxH as view takes it (a tile is square: W = H).")
@click.option("--legend", "draw_legend", is_flag=True,
              help="Draw the legend (what each colour stands for: height bands in yards, textures, effects, "
                   "models) in a strip below the picture; it is printed (and in --json) either way.")
@dbc_option
@placement_option
@constants_options
@json_option
def image(loaded, kind, output, size, draw_legend, dbc_dir, placement, seed, overrides, as_json):
    """Draw a tile as an image, north up and east to the right."""
    from wowgrass.fileio import image_format, write_image
    from wowgrass.game.tiles import grass_image, image_legend, legend_strip, tile_image

    tile, _raw, source = loaded
    size = square_size(size)
    out = output_path(output)
    image_format(out)
    no_legend = "nothing to tell apart"
    if kind == "grass":
        inst, catalog = _place(tile, source, dbc_dir, placement, seed, overrides)
        rgb, legend = grass_image(tile, inst, size)
        if not len(inst):
            from wowgrass.grass.placement import why_no_grass

            no_legend = f"the tile has no grass: {why_no_grass(tile, catalog)}"
    else:
        if dbc_dir:
            raise UsageError("--dbc is for --kind grass")
        rgb, legend = tile_image(tile, kind, size), image_legend(tile, kind, size)
    heights = None
    if kind == "height":
        heights = {"min": float(tile.abs_heights.min()), "max": float(tile.abs_heights.max()), "unit": "yards",
                   "sea_level": 0.0}
    if draw_legend and not legend:   # say why it is not there
        note(f"note: no legend drawn: {no_legend}")
    if draw_legend and legend:
        name = Path(str(source["path"]).replace("\\", "/")).name   # a game path's file name too
        title = (f"heights: {heights['min']:.1f} .. {heights['max']:.1f} yd ({name})" if heights
                 else f"{kind}: {name}")
        rgb = legend_strip(rgb, legend, title)
    path = write_image(out, rgb)
    if as_json:
        echo_json({"file": str(path), "kind": kind, "size": [int(rgb.shape[1]), int(rgb.shape[0])], "source": source["path"], "legend": legend,
                   **({"height": heights} if heights else {})})
        return
    note(f"wrote {path} ({rgb.shape[1]}×{rgb.shape[0]}, {kind}{', with its legend' if draw_legend and legend else ''}) "
         f"from {source['path']}")
    if heights:
        click.echo(f"  heights {heights['min']:.1f} .. {heights['max']:.1f} yd (land ramp above sea level 0, "
                   "blue below it)")
    for item in legend:  # what the colours mean
        click.echo(f"  {item['rgb']}  {item['label']}  ({plural(item['count'], item['unit'].rstrip('s'))})")


def square_size(text) -> int:
    """``--size 512`` or ``--size 512x512`` (a tile's picture is square), 16 .. 8192 pixels."""
    import re

    m = re.fullmatch(r"\s*(\d+)\s*(?:[xX*]\s*(\d+)\s*)?", str(text))
    if not m or (m.group(2) is not None and m.group(1) != m.group(2)):
        raise UsageError(f"--size must be PIXELS or WxH with W = H (a tile is drawn square), got {text!r}")
    n = int(m.group(1))
    if not 16 <= n <= 8192:
        raise UsageError(f"--size {text}: 16 .. 8192 pixels")
    return n


def _place(tile, source, dbc_dir, placement, seed, overrides):
    """The tile's grass as the bake places it (tables from --data or --dbc)."""
    from wowgrass.grass.placement import client_picks_note, make_strategy
    from wowgrass.game.tiles import tile_from_name

    catalog = _tables(source, dbc_dir)
    map_name = source.get("map") or tile_from_name(Path(source["file"]))[0]
    constants = placement_constants(seed, overrides)
    strategy = make_strategy(placement, constants)
    line = client_picks_note(strategy.constants, catalog) if strategy.name == "client" else None
    if line:
        note(line)
    return strategy.place(tile, catalog, map_name=map_name), catalog


def _tables(source, dbc_dir, build=None):
    """The ground-effect catalogue for a tile: from --data or --dbc, else the sample world's or the
    tables beside or above the file; ``build`` forces a layout (2.4.3 reads 1.12's)."""
    from wowgrass.game.data import open_data
    from wowgrass.grass.bake import load_catalog

    data_dir = source.get("data_dir")
    if data_dir and dbc_dir:
        raise UsageError("give --data or --dbc, not both")
    if not data_dir and not dbc_dir:   # the sample world's, or tables beside or above the file
        from wowgrass.grass.bake import tables_for

        data_dir, dbc_dir = tables_for(Path(source["file"]))
    if data_dir:
        with open_data(data_dir) as data:
            return load_catalog(data=data, build=build)
    return load_catalog(dbc_dir=dbc_dir, build=build)


@adt.command()
@tile_source
@dbc_option
@build_option("The client build whose routine and table layout to take (default: the tables' own; 2.4.3 "
              "reads 1.12's tables and scatters as 1.12).")
@click.option("--picks", "picks_list", type=click.IntRange(1, 256), multiple=True, metavar="N",
              help="Cell picks per chunk (the clients' frillDensity / groundEffectDensity; 3.3.5 raises values "
                   "below 16 to 16); repeat for several. Default: 16.")
@constants_options
@json_option
def scatter(loaded, dbc_dir, build, picks_list, seed, overrides, as_json):
    """Test vectors of the clients' scatter of a tile: per chunk the placement count and hash.

    The same numbers as docs/client-scatter-vectors.json gives for the shared real tiles (the hash
    is defined in docs/bake.md#test-vectors-for-other-projects), for any tile, so a map editor or
    a client project can compare its own port of the scatter with wowgrass's --placement client.
    """
    import hashlib

    from wowgrass.grass.vectors import tile_vectors

    tile, raw, source = loaded
    catalog = _tables(source, dbc_dir, build)
    constants = placement_constants(seed, overrides)
    picks_list = picks_list or (16,)
    entries = [tile_vectors(tile, catalog, p, constants) for p in picks_list]
    for e in entries:
        if e["taken_pick_count"] != e["pick_count"]:
            note(f"note: --picks {e['pick_count']} is below what the 3.3.5 client takes (16 .. 256): "
                 f"{e['taken_pick_count']} picks")
    name = Path(str(source["path"]).replace("\\", "/")).name
    doc = {"tile": name, "adt_sha256": hashlib.sha256(raw).hexdigest(), "tile_col_row": [int(tile.col), int(tile.row)],
           "build": catalog.build, "entries": entries}
    if as_json:
        echo_json(doc)
        return
    click.echo(f"{source['path']}: tile {tile.col},{tile.row}, the {catalog.build} clients' scatter")
    for e in entries:
        taken = e["taken_pick_count"]
        click.echo(f"  picks {e['pick_count']}" + (f" (taken: {taken})" if taken != e["pick_count"] else "")
                   + f": {plural(e['placement_count'], 'placement')}, tile hash {e['tile_hash']}")
        for c, (n, h) in enumerate(zip(e["chunk_counts"], e["chunk_hashes"])):
            if n:
                click.echo(f"    chunk {c:3d}  {n:6d}  {h}")
