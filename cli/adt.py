"""``wowgrass adt``: inspect terrain tiles and draw them."""

from __future__ import annotations

import functools

import click

from wowgrass.cli.common import data_option, echo_json, json_option
from wowgrass.errors import UsageError


def tile_source(func):
    """FILE | --data DIR --map NAME --tile COL,ROW, plus the alpha-format overrides."""

    @click.argument("file", required=False, type=click.Path(exists=True, dir_okay=False))
    @data_option
    @click.option("--map", "map_name", metavar="NAME", help="Map folder name, e.g. Azeroth (with --data).")
    @click.option("--tile", "tile", metavar="COL,ROW", help="Tile column and row, e.g. 32,48 (with --data).")
    @click.option("--wdt", type=click.Path(exists=True, dir_okay=False),
                  help="The map's WDT, for the big-alpha flag (default: the WDT beside FILE or in --data).")
    @click.option("--big-alpha/--small-alpha", "big_alpha", default=None,
                  help="Force 8-bit (big) or 4-bit alpha maps instead of asking the WDT.")
    @click.option("--doodad-map-msb-first", is_flag=True,
                  help="Read doodadMapping MSB first (maps saved by noggit3).")
    @functools.wraps(func)
    def wrapper(file, data_path, map_name, tile, wdt, big_alpha, doodad_map_msb_first, **kw):
        from wowgrass.terrain import load_tile, parse_tile_arg

        if file is None and data_path is None:
            raise UsageError("give an ADT FILE, or --data DIR with --map NAME and --tile COL,ROW")
        col_row = parse_tile_arg(tile) if tile is not None else None
        loaded = load_tile(file, data=data_path, map_name=map_name, tile=col_row, wdt=wdt, big_alpha=big_alpha,
                           doodad_map_msb_first=doodad_map_msb_first)
        return func(loaded, **kw)

    return wrapper


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
    from wowgrass.terrain import tile_summary

    tile, raw, source = loaded
    summary = {"source": source, **tile_summary(tile, raw)}
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
    echo("  chunks: " + ", ".join(f"{c['id']}" + (f"×{c['count']}" if c["count"] > 1 else "") for c in s["chunks"]))
    m = s["mcnk"]
    echo("  layers per chunk: " + ", ".join(f"{k}: {v}" for k, v in m["layers_per_chunk"].items())
         + f" ({m['layers_total']} layers)")
    echo("  alpha encodings: " + (", ".join(f"{k}: {v}" for k, v in s["alpha_encodings"].items()) or "none")
         + f"; MCNK 0x8000 (do not fix alpha): {m['do_not_fix_alpha_chunks']} chunks")
    echo(f"  height: {s['height']['min']:.3f} .. {s['height']['max']:.3f}")
    echo(f"  noEffectDoodad cells: {s['no_effect_doodad_cells']}; doodadMapping non-zero in "
         f"{s['doodad_mapping_nonzero_chunks']} chunks; holes in {s['hole_chunks']} chunks "
         f"({s['hole_cells']} cells)")
    echo(f"  doodads: {s['doodads']} ({s['models']} models), WMOs: {s['wmo_instances']} ({s['wmos']} names); "
         f"liquid: {'MH2O' if s['liquid']['mh2o'] else ''}"
         f"{'' if s['liquid']['mh2o'] else str(s['liquid']['mclq_chunks']) + ' MCLQ chunks'}")
    echo(f"  textures ({len(s['textures'])}):")
    for t in s["textures"]:
        echo(f"    {t['index']:3d} {t['path']}  ({t['layers']} layers)")
    echo(f"  effectIds ({len(s['effect_ids'])}):")
    for e in s["effect_ids"]:
        echo(f"    {e['id']:>10}  {e['layers']} layers")


@adt.command()
@tile_source
@click.option("--kind", type=click.Choice(["height", "layers", "effects", "mask"]), default="height",
              show_default=True, help="height: shaded relief; layers: textures blended by alpha; "
              "effects: effectId per cell; mask: noEffectDoodad cells and holes.")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="PNG file to write.")
@click.option("--size", default=1024, show_default=True, type=click.IntRange(16, 8192), help="Image width and height.")
def image(loaded, kind, output, size):
    """Draw a tile as a PNG, north up and east to the right."""
    from wowgrass.terrain import image_legend, write_tile_image

    tile, _raw, source = loaded
    path = write_tile_image(tile, output, kind, size)
    click.echo(f"wrote {path} ({size}×{size}, {kind}) from {source['path']}", err=True)
    for item in image_legend(tile, kind):  # what the colours mean
        click.echo(f"  {item['rgb']}  {item['label']}  ({item['count']:,} {item['unit']})")
