"""``wowgrass export gltf``: tiles (terrain, doodads, grass) to a glTF 2.0 binary for Blender and engines."""

from __future__ import annotations

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


MODE_NOTES = {"ext": "EXT_mesh_gpu_instancing; for Blender write --instancing merged", "nodes": "one node per instance",
              "merged": "grass merged per chunk and model"}


@click.group()
def export():
    """Export tiles for other tools: glTF (Blender, Godot, Unity), a web page, ground-effect layers."""


@export.command()
@click.argument("adt", nargs=-1, type=click.Path(exists=True), metavar="[ADT...|DIR]")
@data_option
@dbc_option
@map_option("Map to export (with --data; default: the only map there, or the sample world's).")
@tile_option
@build_option()
@placement_option
@constants_options
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="The .glb file to write.")
@click.option("--instancing", type=click.Choice(["ext", "nodes", "merged"]), default="ext", show_default=True,
              help="ext: EXT_mesh_gpu_instancing for groups of 4 or more (engines; an importer without it shows "
                   "one copy at the first placement); merged: the grass as one mesh per chunk and model, "
                   "doodads and WMOs one node each (Blender, any version: seconds); nodes: one node per "
                   "instance (warns over 10,000 nodes). A single placement is always a plain node.")
@click.option("--texture-size", type=int, default=1024, show_default=True, metavar="PIXELS",
              help="Side of each tile's baked terrain texture (a multiple of 128).")
@click.option("--origin", type=click.Choice(["centre", "world"]), default="centre", show_default=True,
              help="centre: the export sits at the origin; world: the root node moves it to its WoW world "
                   "position (glTF +X north, +Y up, +Z east).")
@click.option("--no-terrain", is_flag=True, help="Leave the terrain out.")
@click.option("--no-doodads", is_flag=True, help="Leave the tiles' own doodads (MDDF) out.")
@click.option("--no-grass", is_flag=True, help="Leave the ground-effect grass out.")
@click.option("--placeholders/--no-placeholders", default=True, show_default=True,
              help="Draw grass models missing from the data as straw-coloured stand-ins (as view does); "
                   "--no-placeholders leaves their instances out.")
@click.option("--no-liquids", is_flag=True, help="Leave the water, ocean, magma and slime out.")
@click.option("--no-wmos", is_flag=True, help="Leave the WMOs (MODF placements) and their doodads out.")
@click.option("--clock", metavar="HH:MM", default=None,
              help="Add the light tables' light for this hour at the tiles' centre: the sun as a KHR_lights_punctual "
                   "directional light, sky/fog/water colours as the scene's extras (docs/light.md).")
@json_option
def gltf(adt, data_path, dbc_dir, map_name, tiles, build, placement, seed, overrides, output, instancing,
         texture_size, origin, no_terrain, no_doodads, no_grass, placeholders, no_liquids, no_wmos, clock, as_json):
    """Write tiles as one glTF 2.0 binary (.glb): terrain, its doodads, liquids, WMOs and the grass.

    \b
    wowgrass export gltf map.adt (--data DIR | --dbc DIR) -o tile.glb    loose ADT files
    wowgrass export gltf --data DIR [--map NAME] --tile 32,48 -o t.glb   tiles of a map
    wowgrass export gltf DIR --tile 32,48 -o t.glb                       a Data or map folder (--data)
    wowgrass export gltf -o sample.glb                                   the sample world

    The terrain's texture layers are baked into one texture per tile (what every importer shows
    the same way); each model's mesh and textures are written once and its instances use
    EXT_mesh_gpu_instancing (or one node each with --instancing nodes; --instancing merged for
    Blender: the grass as one mesh per chunk and model). Grass models the data
    lacks are drawn as straw-coloured stand-ins (--no-placeholders leaves them out), as in view.
    Grass comes from the tiles' bundles (baked first when the cache has none). A map's tiles are
    the ADTs present (see `wowgrass maps`). See docs/export.md.
    """
    from wowgrass.cli.bake import say_notes, warn_unknown_effects
    from wowgrass.export.scene import check_texture_size, export_scene
    from wowgrass.export.inputs import open_tiles
    from wowgrass.fileio import write_atomic
    from pathlib import Path

    from wowgrass.errors import UsageError

    folders = [a for a in adt if Path(a).is_dir()]
    if folders:   # `export gltf DIR` is --data DIR, as `bake DIR`
        if len(adt) != 1 or data_path:
            raise UsageError(f"give one folder ({folders[0]}) or --data or ADT files, not several")
        data_path, adt = folders[0], ()
    out = output_path(output, (".glb",))
    check_texture_size(texture_size)  # before any bake
    if clock is not None:
        from wowgrass.game.light import parse_clock

        parse_clock(clock)  # out of range: refused before anything is baked
    constants = placement_constants(seed, overrides)
    baked = []
    with progress_bar("bake", "tiles", quiet=as_json) as bar:
        def on_tile(res):
            baked.append(res)
            bar.advance(f"{res.tile[0]}_{res.tile[1]}")

        def on_error(tile, why):   # named as it fails; the export goes on without it
            note(f"warning: tile {tile[0]},{tile[1]} left out: {why}")

        src = open_tiles(adt_files=list(adt), data_path=data_path, dbc_dir=dbc_dir, map_name=map_name,
                         ranges=parse_tiles(tiles), build=build, placement=placement, constants=constants,
                         on_tile=on_tile, on_error=on_error)
    if src.note:
        note(src.note)
    if src.errors and not src.tiles:
        src.close()
        raise UsageError(f"none of the {plural(len(src.errors), 'tile')} could be read; nothing written "
                         f"(the first: {next(iter(src.errors.values()))})")
    warn_unknown_effects(baked)
    say_notes(baked)   # -C client_picks below what 3.3.5 takes, ...
    try:
        light = _export_light(src, dbc_dir, clock) if clock is not None else None
        with progress_bar("export", "tiles", total=len(src.tiles), quiet=as_json) as bar:
            glb, summary = export_scene(src.tiles, src.read, map_name=src.map_name, instancing=instancing,
                                        texture_size=texture_size, origin=origin, terrain=not no_terrain,
                                        doodads=not no_doodads, grass=not no_grass, placeholders=placeholders,
                                        liquids=not no_liquids, wmos=not no_wmos, progress=bar.advance,
                                        light=light)
    finally:
        src.close()
    write_atomic(out, glb)
    summary.file = str(out)
    failed = {f"{c},{r}": why for (c, r), why in src.errors.items()}
    for w in summary.warnings:
        note(f"warning: {w}")
    if as_json:
        echo_json({**summary.to_dict(), "tile_errors": failed})
    else:
        _echo_summary(summary, out, instancing)
    if failed:   # as bake and view: the others written, the exit status says some are missing
        raise UsageError(f"{plural(len(failed), 'tile')} could not be read; {out} holds the other "
                         f"{plural(len(summary.tiles), 'tile')}")


def _echo_summary(summary, out, instancing):
    s = summary
    note(f"wrote {out}: {plural(len(s.tiles), 'tile')}, {s.grass_instances:,} grass and "
         f"{s.doodad_instances:,} doodad instances, {plural(s.meshes, 'mesh', 'meshes')}, "
         f"{s.bytes / 1e6:.1f} MB ({MODE_NOTES[instancing]})")
    if s.liquid_cells or s.wmo_placements:
        note(f"  liquids: {plural(s.liquid_cells, 'cell')}; WMOs: {plural(s.wmo_placements, 'placement')} "
             f"with {s.wmo_doodad_instances:,} doodads")
    _say_missing(s)


def _say_missing(s):
    """What the data lacks (an ExportSummary's), as export gltf and export web say it."""
    if s.missing_wmos:
        note(f"note: {plural(len(s.missing_wmos), 'WMO')} missing from the data, left out: "
             + ", ".join(s.missing_wmos[:3]) + (" …" if len(s.missing_wmos) > 3 else ""))
    if s.stand_ins:
        note(f"note: {plural(len(s.stand_ins), 'grass model')} missing from the data, drawn as stand-ins "
             "(--no-placeholders leaves them out): " + ", ".join(s.stand_ins[:3]) + (" …" if len(s.stand_ins) > 3 else ""))
    if s.missing_grass:
        note(f"note: {plural(len(s.missing_grass), 'grass model')} missing from the data, left out: "
             + ", ".join(s.missing_grass[:3]) + (" …" if len(s.missing_grass) > 3 else ""))
    if s.missing_doodads:
        note(f"note: {plural(len(s.missing_doodads), 'doodad model')} missing from the data, left out: "
             + ", ".join(s.missing_doodads[:3]) + (" …" if len(s.missing_doodads) > 3 else ""))
    if s.missing_textures:
        note(f"note: {plural(len(s.missing_textures), 'terrain texture')} missing, painted flat: "
             + ", ".join(s.missing_textures[:3]) + (" …" if len(s.missing_textures) > 3 else ""))


def _export_light(src, dbc_dir, clock):
    """(SceneLight, info) for the tiles' centre at ``clock``, or None after a warning (no tables)."""
    import numpy as np

    from wowgrass.errors import FormatError
    from wowgrass.export.scene import scene_origin
    from wowgrass.game.light import LightUnavailable, clock_text, load_light_tables, parse_clock, resolve_map, \
        scene_light

    from wowgrass.errors import UsageError

    half = parse_clock(clock)
    data = src.data
    if data is None and dbc_dir is None:
        note("warning: no data source for the light tables (give --data or --dbc); the export carries no light")
        return None
    tables = load_light_tables(data, dbc_dir, warn=lambda m: note(f"warning: {m}"))
    if tables is None:
        return None
    try:
        map_id, directory = resolve_map(dbc_dir if dbc_dir is not None else data, src.map_name)
        ml = tables.map_light(map_id)
    except (LightUnavailable, FormatError, UsageError) as exc:
        note(f"warning: no light for map {src.map_name} ({exc}); the export carries no light")
        return None
    for w in ml.warnings:
        note(f"warning: {w}")
    centre = np.asarray(scene_origin(src.tiles), np.float64)
    centre[2] = float(np.mean([t.adt.positions[:, 2].mean() for t in src.tiles]))  # about the ground
    sl = scene_light(ml, centre, half)
    info = {"clock": clock_text(half), "half_minutes": half, "map": directory, "map_id": map_id,
            "position": [float(v) for v in centre], "build": tables.build,
            "lights": ml.lights_used()}
    return sl, info


@export.command()
@data_option
@dbc_option
@map_option("Map to export (default: the only map in --data, or the sample world's).")
@tile_option
@build_option()
@placement_option
@constants_options
@click.option("-o", "--output", required=True, type=click.Path(file_okay=False), help="The folder to write.")
@click.option("--clock", metavar="HH:MM", default=None,
              help="The hour the page starts at (default 12:00); the zone's light for every half hour comes "
                   "from the light tables of --dbc or --data (without them: the view's fixed sun).")
@click.option("--three", "three_dir", type=click.Path(exists=True, file_okay=False), default=None,
              help="The folder of an `npm install three@0.180.0`: its files are copied beside the page (checked "
                   "against the pinned hashes), so the page needs no network; default: the pinned CDN address "
                   "with integrity hashes.")
@click.option("--texture-size", type=int, default=1024, show_default=True, metavar="PIXELS",
              help="Side of each tile's baked terrain texture (a multiple of 128).")
@click.option("--placeholders/--no-placeholders", default=True, show_default=True,
              help="Draw grass models missing from the data as straw-coloured stand-ins (as view does).")
@click.option("-j", "--jobs", type=click.IntRange(1, 256), default=1, show_default=True,
              help="Tiles baked and exported at once (processes).")
@json_option
def web(data_path, dbc_dir, map_name, tiles, build, placement, seed, overrides, output, clock, three_dir,
        texture_size, placeholders, jobs, as_json):
    """Write a web page of tiles: terrain, WMOs, doodads, liquids and the swaying grass, lit by the
    zone's light with an hour slider and a fly camera (WASD and mouse, as view).

    \b
    wowgrass export web --data DIR --map Azeroth --tile 32,48 -o zone/
    wowgrass export web -o sample/ --three node_modules/three      the sample world, three.js beside it
    python3 -m http.server -d zone/                                 then open http://localhost:8000/

    The folder holds index.html, its script, scene.json and one .glb per tile (what export gltf
    writes). three.js is loaded from the copy --three writes beside the page, else from the pinned
    CDN address with integrity hashes. Browsers that do not load module scripts from files need the
    folder served (any static server). The URL's #camera=X,Y,Z&target=X,Y,Z&clock=HH:MM set the
    start. See docs/export.md.
    """
    from pathlib import Path

    from wowgrass.cli.bake import say_notes, warn_unknown_effects
    from wowgrass.errors import UsageError
    from wowgrass.export import web as W
    from wowgrass.export.inputs import open_tiles
    from wowgrass.export.scene import check_texture_size, scene_origin
    from wowgrass.game.light import parse_clock

    out = Path(output)
    check_texture_size(texture_size)
    earlier = W.check_folder(out)   # refused before anything is baked
    from wowgrass.fileio import check_output_folder

    check_output_folder(out.parent)   # the export is made beside out, then put in its place
    local = W.three_package(three_dir) if three_dir else None
    start = parse_clock(clock if clock is not None else "12:00")
    constants = placement_constants(seed, overrides)
    if data_path is None:
        from wowgrass.grass.bake import default_data

        data_path, sample_map = default_data()
        map_name = map_name or sample_map
    if earlier:
        note(f"note: {out} holds an earlier web export: replacing it")
    if jobs > 1:
        _bake_first(data_path, map_name, tiles, jobs, build, placement, constants, dbc_dir, as_json)
    baked = []
    with progress_bar("bake", "tiles", quiet=as_json) as bar:
        def on_tile(res):
            baked.append(res)
            bar.advance(f"{res.tile[0]}_{res.tile[1]}")

        src = open_tiles(data_path=data_path, dbc_dir=dbc_dir, map_name=map_name, ranges=parse_tiles(tiles),
                         build=build, placement=placement, constants=constants, on_tile=on_tile,
                         on_error=lambda tile, why: note(f"warning: tile {tile[0]},{tile[1]} left out: {why}"))
    if src.note:
        note(src.note)
    if not src.tiles:
        src.close()
        raise UsageError("no tile could be read; nothing written"
                         + (f" (the first: {next(iter(src.errors.values()))})" if src.errors else ""))
    warn_unknown_effects(baked)
    say_notes(baked)   # as export gltf: -C client_picks below what 3.3.5 takes, ...
    staged = None
    try:
        table, source = _light_table(src, dbc_dir)
        big_alpha = _big_alpha(src)
        staged = W.stage_folder(out)   # out itself changes only once the export is complete
        with progress_bar("export", "tiles", total=len(src.tiles), quiet=as_json) as bar:
            web_tiles, missing = W.export_tiles(src, staged, big_alpha=big_alpha, texture_size=texture_size,
                                                placeholders=placeholders, jobs=jobs, progress=bar.advance)
        origin = [float(v) for v in scene_origin(src.tiles)]
        camera = W.start_camera(src.tiles)
        camera["ground"] = camera["position"][2] - 1.7
        grids = {(t.adt.col, t.adt.row): W.height_grid(t.adt) for t in src.tiles}
        scene = {"format": "wowgrass-web 1", "map": src.map_name, "origin": origin, "three": W.THREE_VERSION,
                 "tiles": [{**t.__dict__, "heights": grids[(t.col, t.row)]} for t in web_tiles], "camera": camera, "grass": W.grass_constants(),
                 "light": {"source": source, "start": start / 60.0, "table": table}}
        page_bytes = W.write_page(staged, local_three=local, title=f"{src.map_name}: wowgrass", scene=scene)
        W.publish_folder(staged, out)
    except BaseException:   # failed or interrupted: nothing of it left, an earlier export as it was
        if staged is not None:
            import shutil

            shutil.rmtree(staged, ignore_errors=True)
        raise
    finally:
        src.close()
    summary = W.WebSummary(folder=str(out), map=src.map_name, tiles=web_tiles, tile_count=len(web_tiles),
                           tile_bytes=sum(t.bytes for t in web_tiles), three="local" if local else W.THREE_CDN,
                           light=source, clock=clock or "12:00")
    summary.bytes = summary.tile_bytes + page_bytes
    failed = {f"{c},{r}": why for (c, r), why in src.errors.items()}
    for w in missing.warnings:
        note(f"warning: {w}")
    if as_json:
        echo_json({**summary.to_dict(), **{k: getattr(missing, k) for k in W.MISSING}, "tile_errors": failed})
    else:
        note(f"wrote {out}/index.html: {plural(len(web_tiles), 'tile')}, "
             f"{sum(t.grass_instance_count for t in web_tiles):,} grass instances, {summary.bytes / 1e6:.1f} MB "
             f"({summary.tile_bytes / max(len(web_tiles), 1) / 1e6:.1f} MB a tile); three.js "
             + ("beside the page" if local else f"from {W.THREE_CDN}") + f"; light: {source}")
        note(f"  serve it: python3 -m http.server -d {out}   (then http://localhost:8000/)")
        _say_missing(missing)
    if failed:
        raise UsageError(f"{plural(len(failed), 'tile')} could not be read; {out} holds the other "
                         f"{plural(len(web_tiles), 'tile')}")


def _bake_first(data_path, map_name, tiles, jobs, build, placement, constants, dbc_dir, quiet):
    """--jobs: the tiles' bundles baked in parallel first (the export then finds them cached)."""
    from wowgrass.cli.bake import _bake_with_progress
    from wowgrass.game.data import open_data
    from wowgrass.game.maps import choose_map, map_tiles
    from wowgrass.grass.bake import bake_map

    with open_data(data_path, build=build) as data:
        name = choose_map(data, map_name)
        wanted = map_tiles(data, name, parse_tiles(tiles)).tiles
    _bake_with_progress(bake_map, data_path, name, wanted, jobs, build, placement, constants, False, dbc_dir, quiet)


def _big_alpha(src) -> bool:
    from wowgrass.game.maps import map_tiles

    return map_tiles(src.data, src.map_name, None).big_alpha if src.data is not None else False


def _light_table(src, dbc_dir):
    """(the zone's light every half hour at the tiles' centre, "tables"), or the view's fixed sun."""
    import numpy as np

    from wowgrass.errors import FormatError, UsageError
    from wowgrass.export import web as W
    from wowgrass.export.scene import scene_origin
    from wowgrass.game.light import LightUnavailable, load_light_tables, resolve_map

    fixed = [W.fixed_light()], "fixed"
    if src.data is None and dbc_dir is None:
        return fixed
    tables = load_light_tables(src.data, dbc_dir, warn=lambda m: note(f"warning: {m}"))
    if tables is None:
        note("note: no light tables; the page has the view's fixed sun")
        return fixed
    try:
        map_id, _directory = resolve_map(dbc_dir if dbc_dir is not None else src.data, src.map_name)
        ml = tables.map_light(map_id)
    except (LightUnavailable, FormatError, UsageError) as exc:
        note(f"warning: no light for map {src.map_name} ({exc}); the page has the view's fixed sun")
        return fixed
    for w in ml.warnings:
        note(f"warning: {w}")
    centre = np.asarray(scene_origin(src.tiles), np.float64)
    centre[2] = float(np.mean([t.adt.positions[:, 2].mean() for t in src.tiles]))
    return W.light_table(ml, centre), "tables"


@export.command()
@data_option
@dbc_option
@map_option("Map to export (default: the only map in --data, or the sample world's).")
@tile_option
@build_option()
@click.option("-o", "--output", required=True, type=click.Path(file_okay=False),
              help="The folder to write (a folder per tile inside).")
@click.option("-j", "--jobs", type=click.IntRange(1, 256), default=1, show_default=True,
              help="Tiles written at once (processes).")
@json_option
def layers(data_path, dbc_dir, map_name, tiles, build, output, jobs, as_json):
    """Write each tile's ground-effect data as images with a JSON sidecar, for engines and DCC tools
    that scatter their own foliage.

    \b
    wowgrass export layers --data DIR --map Azeroth --tile 32,48 -o layers/
    wowgrass export layers -o layers/                  the sample world

    Per tile, in OUT/<map>_<col>_<row>/: effect.png (16-bit effect id per cell; for ids past 16 bits
    their low 16, effect_high.png the high ones), no_effect_doodad.png,
    doodad_mapping.png, texture.png (16-bit dominant MTEX index per cell), alpha.NN.<texture>.png
    (each texture's weight per alpha texel), heights.png (16-bit) and layers.json (grids, orientation,
    the effects' models and densities, the heights' scale and offset). Image +x is east, +y south;
    the top-left pixel is the tile's north-west corner. See docs/export.md.
    """
    from pathlib import Path

    from wowgrass.errors import UsageError
    from wowgrass.export.layers import export_layers

    if data_path is None:
        from wowgrass.grass.bake import default_data

        data_path, sample_map = default_data()
        map_name = map_name or sample_map
    out = Path(output)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out} is a file; -o takes a folder")
    from wowgrass.fileio import check_output_folder

    check_output_folder(out)   # before any tile is read (docs/cli.md)
    with progress_bar("layers", "tiles", quiet=as_json) as bar:
        def on_start(n, name, partial):
            bar.total(n)
            if partial:
                note(partial)

        map_name, docs, errors, catalog_error = export_layers(
            data_path, map_name, out, ranges=parse_tiles(tiles), dbc_dir=dbc_dir, build=build, jobs=jobs,
            on_start=on_start, progress=bar.advance)
    if catalog_error:
        note(f"warning: the ground-effect tables: {catalog_error}; effect ids are written, their models not")
    failed = {f"{c},{r}": why for (c, r), why in errors.items()}
    for t, why in failed.items():
        note(f"warning: tile {t} left out: {why}")
    unwritten = [t for t, why in errors.items() if getattr(why, "failed", "read") == "written"]
    if not docs:
        raise UsageError("no tile could be " + ("written" if len(unwritten) == len(errors) else "read")
                         + "; nothing written" + (f" (the first: {next(iter(failed.values()))})" if failed else ""))
    total = sum(d["bytes"] for d in docs)
    if as_json:
        echo_json({"folder": str(out), "map": map_name, "tile_count": len(docs), "bytes": total,
                   "tiles": [{"tile": d["tile"], "folder": str(out / f"{map_name}_{d['tile'][0]}_{d['tile'][1]}"),
                              "effect_cell_count": d["effect_cell_count"], "effect_count": len(d["effects"]),
                              "alpha_count": len(d["alpha"]), "bytes": d["bytes"]} for d in docs],
                   "tile_errors": failed})
    else:
        note(f"wrote {out}: {plural(len(docs), 'tile')} of {map_name}, {total / 1e6:.1f} MB "
             f"(effect, no_effect_doodad, doodad_mapping, texture, alpha and heights images, layers.json)")
    if failed:
        unread = len(failed) - len(unwritten)
        what = "; ".join(f"{plural(n, 'tile')} could not be {how}" for n, how in ((unread, "read"),
                                                                                   (len(unwritten), "written")) if n)
        raise UsageError(f"{what}; {out} holds the other {plural(len(docs), 'tile')}")
