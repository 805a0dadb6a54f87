"""``wowgrass view``: render a zone (terrain, doodads, instanced wind-swayed grass)."""

from __future__ import annotations

import re

import click

from wowgrass.errors import UsageError
from wowgrass.render.constants import WIND_FALLOFFS, WIND_MODES

from .common import (
    PlacementChoice,
    build_option,
    data_option,
    dbc_option,
    echo_json,
    json_option,
    map_option,
    note,
    option_group,
    output_path,
    parse_tiles,
    tile_option,
)


#: a map's world coordinates: 64 tiles of 533⅓ yards about the origin (a camera off the map is
#: a warning, one past LIMIT a mistake)
MAP_HALF = 32 * 1600.0 / 3.0
LIMIT = 1e6


def _vec(text, name, sizes=(3,)):
    if text is None:
        return None
    parts = re.split(r"[,\s]+", text.strip())
    try:
        vals = tuple(float(p) for p in parts)
    except ValueError:
        vals = ()
    if len(vals) not in sizes or not all(v == v for v in vals):
        want = " or ".join({2: "X,Y", 3: "X,Y,Z"}[n] for n in sizes)
        raise UsageError(f"{name} must be {want}, got {text!r}")
    for axis, v in zip("XYZ", vals):
        if not abs(v) < LIMIT:
            raise UsageError(f"{name} {text}: {axis} = {v:g} is out of the map's range (a map spans "
                             f"{-MAP_HALF:,.1f} .. {MAP_HALF:,.1f} yards in X and Y)")
    return vals


def _numbers(text, name):
    try:
        return tuple(float(p) for p in re.split(r"[,\s]+", text.strip()) if p)
    except ValueError:
        raise UsageError(f"{name} must be comma-separated numbers, got {text!r}") from None


def _loose_input(source, data_path, dbc_dir, map_name, tiles):
    """``view ADT|DIR`` as bake reads it: a folder is --data; an ADT file is its map and tile (from a
    ``<Map>_<col>_<row>.adt`` name, else the file's stem and its chunks' position) in its folder,
    which also serves its WDT, models and textures; the tables from --dbc, beside or above the
    file, or the sample world's for its own tiles. Returns (data, map, tiles, dbc, {game path: file})."""
    from pathlib import Path

    from wowgrass.game.tiles import adt_game_path, tile_from_name

    if data_path:
        raise UsageError(f"give {source} or --data, not both")
    path = Path(source)
    if path.is_dir():
        return source, map_name, tiles, dbc_dir, None
    name, tile = tile_from_name(path)
    if tile is None:
        from wowgrass.game.maps import adt_name_problem
        from wowgrass.game.tiles import read_adt

        t = read_adt(path.read_bytes(), str(path))
        tile = (t.col, t.row)
        why = adt_name_problem(path.name, name) if path.suffix.lower() == ".adt" else None
        if why is not None and name != path.stem:   # one rule with `maps`: such a name is no tile
            note(f"note: {path.name} is not named as the client loads tiles ({why}): "
                 f"tile {tile[0]},{tile[1]} from its chunks' position")
    map_name = map_name or name
    if not dbc_dir:
        from wowgrass.grass.bake import tables_for

        data, dbc_dir = tables_for(path)
        if data is not None:   # the sample world's tile
            return str(data), map_name, (f"{tile[0]},{tile[1]}",), None, {adt_game_path(map_name, *tile): path}
    return (str(path.parent), map_name, (f"{tile[0]},{tile[1]}",), str(dbc_dir),
            {adt_game_path(map_name, *tile): path})


def _size(text):
    """``WxH`` in pixels, or one number for a square frame (as adt image takes it)."""
    m = re.fullmatch(r"\s*(\d+)\s*(?:[xX*]\s*(\d+)\s*)?", text or "")
    if not m:
        raise UsageError(f"--size must be WxH (e.g. 1280x720) or PIXELS (a square), got {text!r}")
    w = int(m.group(1))
    return w, int(m.group(2)) if m.group(2) is not None else w


@click.command()
@click.argument("source", required=False, type=click.Path(exists=True), metavar="[ADT|DIR]")
@option_group(
    "data",
    data_option,
    map_option("Map to show (default: the only map in --data; the sample world's)."),
    tile_option,
    dbc_option,
    build_option("Client build of the data (default: detected)."),
    click.option("--placement", type=PlacementChoice(), default=None,
                 help="Grass placement strategy of tiles baked on the way: coverage (the grass reference's formula; "
                      "the default) or client (what the 1.12/2.4.3/3.3.5 clients scatter; the default with --look "
                      "client)."),
    click.option("-C", "--constant", "overrides", multiple=True, metavar="NAME=VALUE",
                 help="Override a placement constant for the tiles baked on the way, e.g. -C client_picks=48 "
                      "(names in docs/bake.md)."),
)
@option_group(
    "look",
    click.option("--look", "name", type=click.Choice(["default", "client"]), default="default", show_default=True,
                 help="default: the grass reference's look (draw distance 220, fade from 160, wind sway, LOD rings). "
                      "client: what the clients draw (draw distance 70 faded as the build does: 3.3.5 over its last "
                      "15%, 1.12/2.4.3 over its last quarter; no wind, lit by the terrain's normal, MCCV vertex colour "
                      "and MCSH darkening, alpha test at 128, the draw capacity's four texture batches a chunk); "
                      "implies --placement client."),
    click.option("--grass-distance", type=float, default=None, metavar="UNITS",
                 help="Grass draw distance (default: the look's, 220 or 70); the fade moves with it."),
)
@option_group(
    "light",
    click.option("--clock", metavar="HH:MM", default=None,
                 help="Light the view from the client's light tables (Light.dbc ...) for this hour: sky, fog, sun "
                      "and ambient colours, water colours, the sun's direction; [ and ] step it an hour in a window. "
                      "--look client takes them at 12:00 without it; otherwise the fixed sun (docs/light.md)."),
    click.option("--weather", type=click.Choice(["clear", "storm"]), default="clear", show_default=True,
                 help="With the light tables: storm mixes each light's storm parameter set in fully, as the "
                      "client's weather does (docs/light.md)."),
)
@option_group(
    "camera",
    click.option("--camera", "position", metavar="X,Y[,Z]",
                 help="Camera position in world units; X,Y alone stands at eye height on the ground "
                      "(default: at eye height where grass grows on the tile nearest the centre of the data)."),
    click.option("--target", metavar="X,Y,Z", help="Point the camera looks at."),
    click.option("--time", "time", type=float, default=0.0, show_default=True, help="Scene time in seconds (wind phase)."),
)
@option_group(
    "output",
    click.option("--size", default="1280x720", show_default=True, metavar="WxH|PIXELS",
                 help="Frame size in pixels: WxH, or one number for a square."),
    click.option("--samples", type=int, default=None,
                 help="Multisampling: 0 (off) or a power of two the GPU supports; alpha to coverage when on "
                      "(default: 4, or the most the GPU has)."),
    click.option("--output", "-o", "file", type=click.Path(dir_okay=False),
                 help="Render offscreen and write this image (.png, .jpg, .webp, ...: the suffix names the format)."),
    click.option("--frames", type=int,
                 help="Render N frames offscreen and print the frame statistics (with --window: close the window "
                      "after N frames)."),
    click.option("--window/--offscreen", "window", default=None,
                 help="Force a window (error without a display) or offscreen rendering; default: a window when a "
                      "display exists and neither --output nor --frames is given."),
    click.option("--quit-after", type=float, metavar="SECONDS",
                 help="Window: close after this many seconds (implies --window)."),
    click.option("--screenshot", type=click.Path(dir_okay=False),
                 help="Window: write the last frame shown, read back from the window, to this PNG (implies --window)."),
    click.option("--vsync/--no-vsync", default=True, show_default=True, help="Window: wait for the display's refresh."),
)
@option_group(
    "look",
    click.option("--no-grass", is_flag=True, help="Start with grass off (r_grass 0; key G)."),
    click.option("--no-doodads", is_flag=True, help="Start with doodads off (r_doodads 0; key O)."),
    click.option("--no-terrain", is_flag=True, help="Start with terrain off (r_terrain 0; key T)."),
    click.option("--no-liquids", is_flag=True, help="Start with water, ocean, magma and slime off (key R)."),
    click.option("--no-wmos", is_flag=True, help="Start with WMOs (buildings: MODF placements) off (key B)."),
)
@option_group("output", click.option("--stats", is_flag=True, help="Print frame statistics (r_stats 1; key F3)."))
@option_group(
    "look",
    click.option("--mcsh", is_flag=True,
                 help="Darken the terrain where the ADT's baked MCSH shadow map is set (key M)."),
    click.option("--lod-colors", is_flag=True,
                 help="Colour the terrain by LOD level: red (full detail) to violet (2x2 per chunk) (key L)."),
    click.option("--grass", "grass_path", type=click.Choice(["instanced", "grid"]), default="instanced",
                 show_default=True,
                 help="Grass path: 'instanced' draws the baked bundles; 'grid' the camera-centred grid of 181x181 "
                      "slots 2.5 units apart over per-tile control textures (the same counts per cell and model)."),
    click.option("--grid-draw", type=click.Choice(["compact", "full"]), default="compact", show_default=True,
                 help="How --grass grid draws: 'compact' runs a compute pass per view that keeps the blades to "
                      "draw, then indirect draws (GL 4.3; else 'full'); 'full' is the grass reference's literal "
                      "path, every slot x layer through the vertex stage."),
    click.option("--wind", type=click.Choice(list(WIND_MODES)), default="classic", show_default=True,
                 help="Wind sway of both grass paths: 'classic' (one sine, the grass reference), 'two-axis' "
                      "(independent X/Y sines at 1.3 and 0.9 rad/s) or 'gust' (a travelling raised-cosine gust "
                      "band)."),
    click.option("--wind-falloff", type=click.Choice(list(WIND_FALLOFFS)), default="smoothstep", show_default=True,
                 help="How sway grows with blade height: smoothstep from the root fraction, or quadratic."),
    click.option("--placeholders/--no-placeholders", default=True, show_default=True,
                 help="Draw grass models missing from the data (common in extracts) as straw-coloured stand-in "
                      "clumps, so the placement still shows (as export gltf does); --no-placeholders leaves them "
                      "out."),
    click.option("--culling", type=click.Choice(["auto", "gpu", "cpu"]), default="auto", show_default=True,
                 help="Grass culling: on the GPU (compute shader, OpenGL 4.3), per chunk on the CPU, or auto (GPU "
                      "where possible)."),
    click.option("--rings/--no-rings", default=True, show_default=True,
                 help="LOD density rings: thin the grass with distance (a stable per-instance hash, cross-faded)."),
    click.option("--ring-radii", metavar="R1,R2,R3", default="70,120,170", show_default=True,
                 help="Where LOD rings 1.. start (world units from the camera, increasing; up to 3)."),
    click.option("--ring-keep", metavar="K1,K2,K3", default="0.6,0.35,0.2", show_default=True,
                 help="Fraction of the grass each ring keeps (0..1, not increasing outwards; one per radius)."),
    click.option("--debug-rings", is_flag=True, help="Colour the grass by LOD ring (white, yellow, orange, red)."),
    click.option("--split", is_flag=True,
                 help="Split screen: the left half filled, the right half the same view as a wireframe (key V)."),
)
@option_group("light", click.option("--no-shadows", is_flag=True, help="Start with the sun's shadow map off (key H)."))
@option_group(
    "look",
    click.option("--wireframe", is_flag=True, help="Start with the whole view as a wireframe (key F)."),
    click.option("--horizon/--no-horizon", default=True, show_default=True,
                 help="Draw the map's WDL (its low-resolution heights) beyond the loaded terrain, out to the "
                      "whole map under the fog, as the clients do (key Z); a map without a WDL has none."),
)
@option_group(
    "data",
    click.option("--procedural", is_flag=True,
                 help="Show the procedural meadow (fBm terrain, GPU-generated segmented grass blades); needs no "
                      "game data."),
    click.option("--meadow-seed", "seed", type=click.IntRange(0, 2**32 - 1), default=None,
                 help="--procedural: seed of the meadow's terrain and blades (default 1). (Not the placement's "
                      "--seed of bake and export, which view's tiles take from -C seed=N.)"),
    click.option("--seed", "old_seed", type=click.IntRange(0, 2**32 - 1), default=None, hidden=True),
    click.option("--cpu-instances", is_flag=True,
                 help="--procedural: place the blades on the CPU and upload them every frame (the slower way, "
                      "for comparison) instead of generating them on the GPU."),
)
@option_group(
    "workbench",
    click.option("--panels/--no-panels", default=None,
                 help="Window: the workbench's panels (status line, overlays, pick, findings, tools, save; F1 lists "
                      "the keys); default: on where imgui-bundle is installed (pip install 'wowgrass[workbench]'). "
                      "Offscreen frames never have them."),
    click.option("--overlay", "overlays", multiple=True,
                 type=click.Choice(["sets", "unassigned", "stale", "excluded", "holes", "chunks", "tiles", "rules"]),
                 help="Window with panels: start with this terrain overlay on (repeatable; keys 1-8)."),
    click.option("--watch", is_flag=True,
                 help="Window: reload a tile, the WDT or a ground-effect table when another program (a map editor) "
                      "saves it into the loose folder of --data (its grass too), without a restart."),
    click.option("--rules", "rules_path", type=click.Path(dir_okay=False), default=None, metavar="FILE",
                 help="Window: the ground-effect rules file (docs/rules.md; default: wowgrass-rules.toml in the top "
                      "loose --data folder, where it exists): the Cell panel says why a cell is as it is, overlay 8 "
                      "colours cells by their rule, drift is marked, a stroke can be kept as a rule; with --watch "
                      "the rules are re-applied to each tile another editor saves."),
    click.option("--audit/--no-audit", "run_audit", default=True, show_default=True,
                 help="Window with panels: audit the map in the background for the findings list."),
)
@json_option
def view(source, data, look, light, camera, output, workbench, as_json):
    """Render a zone: terrain, its doodads, WMOs and liquids, and resident instanced grass with the
    wind-sway shader.

    With a display this opens a window (WASD, mouse drag to look, Shift to go faster, G/O/T/B/R toggle
    grass/doodads/terrain/WMOs/liquids, L/M terrain LOD colours/MCSH shadows, H sun shadows, V split view, F
    wireframe, F3 stats, Esc quits). --output or --frames render offscreen through EGL (what CI
    and headless machines use). For scripted window runs: --window --frames N (or --quit-after S)
    --screenshot PNG. ADT|DIR takes what `bake` takes: one <Map>_<col>_<row>.adt (with --dbc for
    its tables) or a Data or map folder. With no --data it shows the built-in sample world, and without --camera it
    starts at eye height where grass grows, looking across it; terrain reaches to the horizon in
    five levels of detail. --procedural shows a generated meadow instead (no game data). Sun
    shadows are on by default (--no-shadows); --split shows the view filled on the left and as a
    wireframe on the right.
    """
    from wowgrass.render.app import ViewOptions, output_mode, run_view

    opts = ViewOptions(data=_data_options(source, data, look), look=_look_options(look),
                       light=_light_options(light, look, data), camera=_camera_options(camera),
                       output=_output_options(output), log=note)
    mode = output_mode(opts.output, note)  # window or offscreen: decided here, once
    opts.workbench.ui = _workbench(workbench, data, look, mode)
    result = run_view(opts, mode)
    _print_result(result, as_json, output.stats, output.frames, output.quit_after)
    failed = result.get("tile_errors") or {}
    if failed:   # each was named on its own line as it failed
        raise UsageError(f"{len(failed)} tile(s) could not be loaded; the frame shows the others")


def _data_options(source, d, look):
    """The data group (``--data`` ... ``-C``, ``--procedural`` ...) as render's DataOptions, or ``error:``."""
    from wowgrass.render.app import DataOptions

    seed = d.seed
    if d.old_seed is not None:   # the old name: say which seed it is
        if seed is not None:
            raise UsageError("give --meadow-seed once (--seed is its old name)")
        note("note: view --seed is now --meadow-seed (the procedural meadow's; bake's --seed is the placement's)")
        seed = d.old_seed
    if seed is not None and not d.procedural:
        raise UsageError("--meadow-seed is for --procedural; the grass placement's seed is -C seed=N")
    seed = 1 if seed is None else seed
    data_path, map_name, tiles, dbc_dir, files = d.data_path, d.map_name, d.tiles, d.dbc_dir, None
    if source is not None:
        data_path, map_name, tiles, dbc_dir, files = _loose_input(source, data_path, dbc_dir, map_name, tiles)
    if d.procedural and (data_path or map_name or tiles or dbc_dir):
        raise UsageError("--procedural needs no game data: drop --data/--map/--tile/--dbc")
    if d.cpu_instances and not d.procedural:
        raise UsageError("--cpu-instances is for --procedural")
    if d.procedural and (look.name != "default" or d.placement or d.overrides):
        raise UsageError("--look, --placement and -C are for game data, not --procedural")
    constants = None
    if d.overrides:
        from wowgrass.grass.placement import PlacementConstants

        constants = PlacementConstants().with_overrides(d.overrides)
    return DataOptions(path=data_path, map_name=map_name, tiles=parse_tiles(tiles), dbc=dbc_dir, build=d.build,
                       placement=d.placement, constants=constants, files=files, procedural=d.procedural, seed=seed,
                       cpu_instances=d.cpu_instances)


def _look_options(k):
    """The look group (``--look``, ``--grass``, the rings, what starts shown) as render's LookOptions."""
    from wowgrass.render.app import LookOptions
    from wowgrass.render.constants import RingSettings

    try:
        rings = RingSettings(radii=_numbers(k.ring_radii, "--ring-radii"), keep=_numbers(k.ring_keep, "--ring-keep"),
                             enabled=k.rings, debug=k.debug_rings)
    except ValueError as exc:
        raise UsageError(f"--ring-radii/--ring-keep: {exc}") from exc
    return LookOptions(name=k.name, grass_distance=k.grass_distance, grass_path=k.grass_path, grid_draw=k.grid_draw,
                       wind=k.wind, wind_falloff=k.wind_falloff, grass_culling=k.culling, rings=rings,
                       placeholders=k.placeholders, grass=not k.no_grass, doodads=not k.no_doodads,
                       terrain=not k.no_terrain, liquids=not k.no_liquids, wmos=not k.no_wmos, horizon=k.horizon,
                       mcsh=k.mcsh, lod_colors=k.lod_colors, split=k.split, wireframe=k.wireframe)


def _light_options(g, look, d):
    """The light group (``--clock``, ``--weather``, ``--no-shadows``) as render's LightOptions, or ``error:``."""
    from wowgrass.render.app import LightOptions

    if g.clock is not None:
        from wowgrass.game.light import parse_clock

        parse_clock(g.clock)  # out of range: refused with the accepted range, before anything loads
        if d.procedural:
            raise UsageError("--clock lights game data from its light tables: not for --procedural")
    if g.weather != "clear" and g.clock is None and look.name != "client":
        raise UsageError("--weather is the light tables' weather: give --clock (or --look client)")
    return LightOptions(clock=g.clock, weather=g.weather, shadows=not g.no_shadows)


def _camera_options(c):
    from wowgrass.render.app import CameraOptions

    return CameraOptions(position=_vec(c.position, "--camera", (2, 3)), target=_vec(c.target, "--target"), time=c.time)


def _output_options(o):
    """The output group (``--size`` ... ``--vsync``, ``--stats``) as render's OutputOptions, or ``error:``."""
    from wowgrass.fileio import IMAGE_FORMATS
    from wowgrass.render.app import OutputOptions

    if o.frames is not None and o.frames < 1:
        raise UsageError("--frames must be at least 1")
    if o.samples is not None and (o.samples < 0 or o.samples > 1 and o.samples & (o.samples - 1)):
        raise UsageError(f"--samples {o.samples}: must be 0 (off) or a power of two (2, 4, 8 ...)")
    for path, option in ((o.file, "-o/--output"), (o.screenshot, "--screenshot")):
        if path is not None:   # the format follows the suffix, as every image output's
            output_path(path, tuple(sorted(IMAGE_FORMATS)), option=option)
    return OutputOptions(size=_size(o.size), samples=o.samples, file=o.file, frames=o.frames, window=o.window,
                         quit_after=o.quit_after, screenshot=o.screenshot, vsync=o.vsync, stats=o.stats)


def _workbench(w, data, look, mode):
    """The window's workbench factory for ViewOptions.workbench.ui (None: no panels), or ``error:``
    for a combination that cannot work; ``mode``: the window-or-offscreen decision (output_mode)."""
    panels, overlays, watch, run_audit, build = w.panels, w.overlays, w.watch, w.run_audit, data.build
    rules_path = w.rules_path
    if rules_path:  # the whole file checked before anything opens: error: FILE:LINE: [[rule]] key: why
        from wowgrass.edit.rules import load_rules

        load_rules(rules_path)
    if rules_path and (data.procedural or not mode.window):
        raise UsageError("--rules is for the window's workbench (game data, not --procedural; not offscreen frames)")
    if data.procedural:
        if panels or watch or overlays:
            raise UsageError("--panels, --overlay and --watch work on game data, not --procedural")
        return None
    if not mode.window and not mode.headless:
        if panels or watch or overlays:
            raise UsageError("--panels, --overlay and --watch are for the window (offscreen frames have no panels)")
        return None
    if not mode.window:  # no display: the view falls back to one offscreen frame: what was asked would be lost
        if panels or watch or overlays:
            raise UsageError("--panels, --overlay and --watch are for the window, and there is no display "
                             "(DISPLAY/WAYLAND_DISPLAY unset): run under a desktop or xvfb-run, or drop them "
                             "to render a frame offscreen")
        return None
    from wowgrass.workbench.panels import imgui_available

    why = imgui_available()
    if panels and why:
        raise UsageError(f"--panels: {why}")
    if panels is False and (overlays or watch):
        if overlays:
            raise UsageError("--overlay draws with the panels: drop --no-panels")
    with_panels = why is None if panels is None else panels
    if panels is None and why:
        note(f"note: no workbench panels: {why}")
    if not with_panels and not watch:
        return None

    def make(viewer, scene, src, data):
        from wowgrass.errors import WowgrassError
        from wowgrass.workbench.controller import open_workbench
        try:
            return open_workbench(viewer, scene, src, data, panels=with_panels, overlays=overlays, watch=watch,
                                  audit=run_audit, build=build, log=note, rules=rules_path)
        except WowgrassError as exc:
            if panels or watch or overlays:  # asked for: an error
                raise
            note(f"note: no workbench panels ({exc}); the view goes on without them")
            return None

    return make


def _print_result(result, as_json, stats, frames, quit_after):
    if as_json:
        echo_json(result)
        return
    if "file" in result:
        note(f"wrote {result['file']} ({result['size'][0]}x{result['size'][1]}, {result['renderer']})")
    if "screenshot" in result:
        note(f"wrote {result['screenshot']} ({result['size'][0]}x{result['size'][1]}, window, {result['renderer']})")
    if result.get("window"):
        if (stats or frames or quit_after) and "stats_line" in result:
            click.echo(f"{result['frames']} frame(s) in {result['seconds']:.1f} s ({result['fps']:.1f} fps): "
                       f"{result['stats_line']}")
        return
    if "frames" in result and (stats or frames):
        click.echo(f"{result['frames']} frame(s): {result['stats_line']}")
        cpu, gpu = result["cpu_ms"], result["gpu_ms"]
        click.echo(f"cpu ms median {cpu['median']:.3f}  gpu ms median "
                   + (f"{gpu['median']:.3f}" if gpu else "n/a")
                   + f"  wall ms/frame {result['wall_ms_per_frame']:.3f}  "
                   + (f"blades drawn {result['blades']:,}" if result.get("procedural")
                      else f"resident grass instances {result['resident_grass_instances']:,}"))
        click.echo("  cpu: CPU time to record and submit a frame; gpu: the GPU's own time for a frame (timer "
                   "queries, read once the frame finished); wall: elapsed time per frame, waiting for the GPU included")
    if stats and "gpu_memory" in result:
        click.echo(memory_line(result["gpu_memory"]))


def memory_line(m: dict) -> str:
    """``--stats``: the GPU bytes by kind and per resident tile (``--json``: ``gpu_memory``)."""
    kinds = ", ".join(f"{k} {v / 1e6:.1f}" for k, v in m["by_kind"].items() if v)
    tiles = "; ".join(f"{t['tiles']} {name} tile(s) {t['mean_bytes'] / 1e6:.2f} MB each"
                      for name, t in m["per_tile"].items() if t["tiles"])
    return f"gpu memory {m['total_bytes'] / 1e6:.1f} MB ({kinds}; MB){'; ' + tiles if tiles else ''}"
