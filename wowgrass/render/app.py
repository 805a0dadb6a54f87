"""``wowgrass view`` as a library call: options -> data -> target -> scene -> viewer -> present.

:func:`run_view` is the whole command in six steps, each one call below it: check the options
(window or offscreen, the PNG), open the data (a :class:`~wowgrass.render.world.game_tiles.GameSource`),
open the target (a window or an EGL offscreen framebuffer), build the scene (programs, tile
streaming, the first tiles), make the viewer (camera, toggles), present (the window loop, or
offscreen frames and the PNG). ``--procedural`` takes the same steps over the meadow
(:func:`run_meadow`).
"""

from __future__ import annotations

import math
import statistics
import sys
import time as _time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from wowgrass.errors import UsageError


@dataclass
class CameraOptions:
    """Where the view stands and when (``--camera``, ``--target``, ``--time``)."""

    position: tuple | None = None  # None: the first frame's choice (world/firstframe.py)
    target: tuple | None = None
    time: float = 0.0


@dataclass
class DataOptions:
    """What the view shows: the data, map, tiles and tables, and how tiles baked on the way are
    placed; or the procedural meadow."""

    path: str | None = None  # None: the built-in sample world
    map_name: str | None = None
    tiles: list | None = None  # --tile selections: (col, row) or ((c0, c1), (r0, r1)); None: all
    dbc: str | None = None
    build: str | None = None
    placement: str | None = None  # None: coverage, or client with the client look
    constants: object = None  # PlacementConstants for tiles baked on the way (-C), None: the defaults
    files: dict | None = None  # {game path: file}: loose files answering for those paths (view ADT)
    procedural: bool = False  # the procedural meadow instead of game data
    seed: int = 1  # procedural: terrain and blade placement
    cpu_instances: bool = False  # procedural: the lesson's per-frame CPU placement and upload
    meadow_settings: object = field(default=None, repr=False)  # procedural: a MeadowSettings (None: defaults)


@dataclass
class LookOptions:
    """How it is drawn: the look, the grass paths, wind and rings, and what starts shown."""

    name: str = "default"  # "client": what the clients draw (docs/view.md); implies --placement client
    grass_distance: float | None = None  # grass draw distance; None: the look's (220, client 70)
    grass_path: str = "instanced"  # "grid": the camera-grid path over control textures (wowgrass.grass.grid_tiles)
    grid_draw: str = "compact"  # the grid's draw: "compact" (compute compaction) or "full" (render/grid.py)
    wind: str = "classic"  # sway.glsl's wind option (constants.WIND_MODES), both grass paths
    wind_falloff: str = "smoothstep"  # constants.WIND_FALLOFFS
    grass_culling: str = "auto"  # "gpu" (compute shader), "cpu" (per chunk), "auto" (GPU where GL 4.3)
    rings: object = None  # constants.RingSettings; None: the defaults
    placeholders: bool = True  # draw grass models missing from the data as stand-in clumps (as export does)
    grass: bool = True
    doodads: bool = True
    terrain: bool = True
    liquids: bool = True  # water, ocean, magma, slime (key R)
    wmos: bool = True  # WMOs placed by MODF (key B)
    horizon: bool = True  # the map's WDL beyond the far tiles, where the data has one (key Z)
    mcsh: bool = False  # darken the terrain where the ADT's baked MCSH shadow map is set
    lod_colors: bool = False  # colour the terrain by LOD level
    split: bool = False  # left half filled, right half wireframe (key V)
    wireframe: bool = False  # the whole view as a wireframe (key F)


@dataclass
class LightOptions:
    """The light: the light tables' hour and weather, the sun's shadows."""

    clock: str | None = None  # "HH:MM": the light tables' light for that hour (docs/light.md); the
    # client look takes them at 12:00 without it; otherwise None keeps the fixed sun
    weather: str = "clear"  # "storm": each light's storm set mixed in fully (the light tables' weather)
    shadows: bool = True  # the sun's shadow map (key H)


@dataclass
class OutputOptions:
    """Where frames go and how many: a window or offscreen, the size, the files written."""

    size: tuple[int, int] = (1280, 720)
    samples: int | None = None  # None: 4, or the most the context has; a number must be supported
    file: str | None = None  # offscreen: the image written (--output)
    frames: int | None = None
    window: bool | None = None  # None: a window when a display exists and no offscreen output is asked
    quit_after: float | None = None  # window: close after this many seconds
    screenshot: str | None = None  # window: write the last frame shown (read from the window) here
    vsync: bool = True  # window: swap interval 1
    stats: bool = False
    warm_up: bool | None = None  # compile and draw every program once before the first frame (None: in a window)


@dataclass
class WorkbenchOptions:
    """The window's workbench (render never imports it)."""

    ui: object = field(default=None, repr=False)  # window only: ui(viewer, scene, src, data) -> a
    # render.window.WindowUi (the workbench's panels), or None


@dataclass
class ViewOptions:
    """``wowgrass view``'s options by what they are about; each step of :func:`run_view` takes the
    groups it needs."""

    camera: CameraOptions = field(default_factory=CameraOptions)
    data: DataOptions = field(default_factory=DataOptions)
    look: LookOptions = field(default_factory=LookOptions)
    light: LightOptions = field(default_factory=LightOptions)
    output: OutputOptions = field(default_factory=OutputOptions)
    workbench: WorkbenchOptions = field(default_factory=WorkbenchOptions)
    log: object = field(default=None, repr=False)  # callable(str) for progress lines (stderr)

    @property
    def say(self):
        return self.log or (lambda s: print(s, file=sys.stderr))


@dataclass
class OutputMode:
    """Where frames go: a window, or offscreen with ``output`` the PNG to write (None: none)."""

    window: bool
    output: str | None
    headless: bool = False  # offscreen because there is no display (not because it was asked)


def run_view(opts: ViewOptions, mode: OutputMode | None = None) -> dict:
    """Render as ``opts`` asks; returns what the command prints (paths, frame statistics, missing
    models). ``mode``: :func:`output_mode`'s decision when the caller made it already (the command
    line does, for the workbench's options), else made here."""
    say = opts.say
    check_look(opts.look)
    mode = output_mode(opts.output, say) if mode is None else mode
    if opts.data.procedural:
        return run_meadow(opts, mode, say)
    ui_factory = opts.workbench.ui
    with ExitStack() as cleanup:  # released in reverse: scene, target, data
        data, src = open_source(opts.data, opts.look)
        cleanup.callback(data.close)
        t_load = _time.perf_counter()
        target, mode = open_target(opts.output, mode, say, f"wowgrass - {src.map}")
        cleanup.callback(target.release)
        scene = open_scene(target, src, opts.look, say, moving=mode.window)  # offscreen frames stand still
        cleanup.callback(scene.release)
        scene.keep_grass = ui_factory is not None and mode.window  # the window's edits replace chunks' grass
        viewer = open_viewer(target, scene, src, opts, mode)
        result = describe_view(opts, data, src, scene, viewer, load_s=_time.perf_counter() - t_load)
        result["light"] = describe_light(viewer)
        report_missing(scene, opts.look, say)
        ui = ui_factory(viewer, scene, src, data) if ui_factory is not None and mode.window else None
        result.update(present(viewer, target, opts.output, opts.camera.time, say, mode, keys=ZONE_KEYS,
                              before_frame=last_frame_stats(viewer, opts.output), ui=ui))
        result["resident_grass_instances"] = scene.grass.total_instances  # at the end: the window's edits counted
        if ui is not None and hasattr(ui, "report"):
            result["workbench"] = ui.report()
        result["gpu_memory"] = scene.memory_report()
        return result


ZONE_KEYS = ("G grass, O doodads, T terrain, B WMOs, R liquids, Z horizon, C culling, L terrain LOD colours, M MCSH shadows, "
             "[ ] the hour (--clock)")
MEADOW_KEYS = "G grass, T terrain, V split view, H shadows, F wireframe, L LOD colours"


def output_mode(opts: OutputOptions, say) -> OutputMode:
    """Whether ``opts`` asks for a window, and the PNG to write offscreen (checked, with readable
    errors): the one place that decides between a window and offscreen frames."""
    from .gl.context import has_display

    window_only = opts.quit_after is not None or opts.screenshot is not None
    if opts.window is False and window_only:
        raise UsageError("--quit-after and --screenshot are for the window; offscreen, use --output/--frames")
    if opts.window or window_only:
        if opts.file is not None:
            raise UsageError("--output renders offscreen; to save the window's last frame use --screenshot")
        if not has_display():
            raise UsageError("no display for a window (DISPLAY/WAYLAND_DISPLAY unset); "
                             "use --output PNG (or --frames N) to render offscreen")
        want_window = True  # --frames then bounds the window run
        headless = False
    else:
        asked_offscreen = opts.window is False or opts.file is not None or opts.frames is not None
        headless = not asked_offscreen and not has_display()  # offscreen for want of a display
        want_window = not asked_offscreen and not headless
    if opts.quit_after is not None and not opts.quit_after > 0:
        raise UsageError("--quit-after must be a positive number of seconds")
    output = opts.file
    if not want_window and output is None and opts.frames is None:
        output = "view.png"  # headless and nothing asked: one offscreen frame
        say(f"no display: rendering one frame offscreen to {Path(output).resolve()} (-o FILE.png chooses the file)")
    w, h = opts.size
    if w < 16 or h < 16 or w > 16384 or h > 16384:
        raise UsageError(f"--size {w}x{h}: width and height must be 16..16384")
    return OutputMode(want_window, output, headless)


def view_placement(data: DataOptions, look: LookOptions) -> str:
    """The placement the view bakes with: as asked, else client for the client look, else coverage."""
    if data.placement is not None:
        return data.placement
    return "client" if look.name == "client" else "coverage"


def check_look(opts: LookOptions) -> None:
    """``--look``, ``--grass-distance`` and what they go with, or ``error:``."""
    from .gl.programs import LOOKS

    if opts.name not in LOOKS:
        raise UsageError(f"--look {opts.name}: choose one of {', '.join(LOOKS)}")
    if opts.name == "client" and opts.grass_path != "instanced":
        raise UsageError("--look client draws the instanced grass (the clients have no camera grid): drop --grass grid")
    if opts.grass_distance is not None and not 1.0 <= opts.grass_distance <= 3000.0:
        raise UsageError(f"--grass-distance {opts.grass_distance:g}: give 1 .. 3000 world units")


def open_source(opts: DataOptions, look: LookOptions | None = None):
    """The data source and a :class:`~wowgrass.render.world.game_tiles.GameSource` for ``opts``
    (drawn with ``look``: the placement and grass path follow it)."""
    from wowgrass.game.data import choose_map, open_data

    from .world.game_tiles import GameSource

    look = look or LookOptions()
    if opts.path is None:
        from wowgrass.grass.bake import default_data

        root, sample_map = default_data()
        data = open_data(root, build=opts.build)
        map_name = opts.map_name or sample_map
    else:
        data = open_data(opts.path, build=opts.build)
        map_name = opts.map_name
    for game_path, file in (opts.files or {}).items():
        data.add_file(game_path, file)
    try:
        map_name = choose_map(data, map_name)
        src = GameSource(data, map_name, tiles=opts.tiles, placement=view_placement(opts, look),
                         build=opts.build, dbc_dir=opts.dbc, grass_path=look.grass_path, constants=opts.constants)
    except BaseException:
        data.close()
        raise
    return data, src



def open_target(opts: OutputOptions, mode: OutputMode, say, title: str):
    """The window (or, when a display cannot be opened and no window was demanded, an offscreen
    target as if headless) or the offscreen target: (target, the mode it gives). ``--samples``
    the context cannot do is an error."""
    from .gl.context import GLUnavailableError, WindowTarget, create_offscreen_target

    samples = 4 if opts.samples is None else opts.samples
    target = None
    if mode.window:
        try:
            target = WindowTarget(opts.size, samples, title=title, vsync=opts.vsync)
        except GLUnavailableError as exc:
            if opts.window or opts.quit_after is not None or opts.screenshot is not None:
                raise
            # a DISPLAY that cannot be opened (stale ssh forwarding, no X server): as if headless
            mode = OutputMode(False, "view.png")
            say(f"no window ({exc}); rendering offscreen to {mode.output}")
    if target is None:
        target = create_offscreen_target(opts.size, samples)
    if opts.samples is not None and target.samples != (opts.samples if opts.samples > 1 else 0):
        target.release()
        raise UsageError(f"--samples {opts.samples}: this OpenGL context supports at most {target.max_samples}")
    return target, mode


def open_scene(target, src, opts: LookOptions, say, moving: bool = True):
    """The zone's programs and tile streaming (:class:`~wowgrass.render.world.streaming.Scene`)."""
    from .constants import TERRAIN_REACH, GrassSettings, RingSettings
    from .gl.programs import make_programs
    from .world.streaming import Scene, tiles_centre

    progs = make_programs(target.ctx, alpha_to_coverage=target.samples > 0, grass_path=opts.grass_path,
                          wind=opts.wind, wind_falloff=opts.wind_falloff, look=opts.name)
    rings = opts.rings if opts.rings is not None else RingSettings()
    catalog = getattr(src, "catalog", None)
    build = getattr(catalog, "build", None)
    grass_settings = GrassSettings.for_look(opts.name, opts.grass_distance, rings, build=build)
    if getattr(src, "placement", None) == "client" and catalog is not None:
        from wowgrass.grass.placement import PlacementConstants, client_picks_note

        line = client_picks_note(src.constants or PlacementConstants(), catalog)
        if line:
            say(line)
    scene = Scene(target.ctx, progs, src, placeholders=opts.placeholders, grass_settings=grass_settings,
                  grass_culling=opts.grass_culling, grass_path=opts.grass_path, terrain_reach=TERRAIN_REACH,
                  grid_draw=opts.grid_draw, client_look=opts.name == "client", horizon=open_horizon(src, opts, say),
                  moving=moving, tile_process=moving)  # a window streams as it flies
    if src.note:   # a partial extract: the WDT lists tiles the data lacks
        say(src.note)
    say(f"loading {src.map}: {len(scene.wanted(*tiles_centre(src.tiles)))} tile(s) near the start "
        f"(baked on demand, cached in {_cache()})")
    return scene


def open_horizon(src, opts: LookOptions, say):
    """The map's WDL for the horizon (None with ``--no-horizon``, for a map without one, or, said
    on a line of its own, for a damaged one: the view goes on without it)."""
    from wowgrass.errors import FormatError

    if not opts.horizon or not hasattr(src, "load_horizon"):
        return None
    try:
        return src.load_horizon()
    except FormatError as exc:
        say(f"no horizon: {exc}")
        return None


def start_toggles(look: LookOptions, light: LightOptions, out: OutputOptions):
    """The viewer's toggles as the options start them (keys change them in a window)."""
    from .viewer import Toggles

    return Toggles(grass=look.grass, doodads=look.doodads, terrain=look.terrain, liquids=look.liquids,
                   wmos=look.wmos, stats=out.stats, mcsh=look.mcsh, lod_colors=look.lod_colors, split=look.split,
                   shadows=light.shadows, wireframe=look.wireframe, horizon=look.horizon)


def open_viewer(target, scene, src, opts: ViewOptions, mode: OutputMode):
    """The camera (``--camera``/``--target``, or the first frame's choice), the tiles around it
    (offscreen: the whole far view too) and a :class:`~wowgrass.render.viewer.Viewer` with the
    options' toggles."""
    from .viewer import Viewer
    from .world.firstframe import camera_warnings, default_camera

    cam = opts.camera
    camera = default_camera(scene, src, camera=cam.position, target=cam.target)
    scene.update(camera.position, block=True, block_far=not mode.window)
    trim_heap()  # the first tiles' arrays are uploaded and freed
    if cam.position is not None:   # a frame of sky or of the underside of the ground: say why
        for line in camera_warnings(scene, src, camera.position):
            opts.say(line)
    toggles = start_toggles(opts.look, opts.light, opts.output)
    zone_light = open_zone_light(target, scene, src, opts.light, opts.data, opts.look, opts.say)
    viewer = Viewer(target, scene, camera, toggles, zone_light=zone_light)
    warm_up = opts.output.warm_up
    if mode.window if warm_up is None else warm_up:  # every program before the first frame
        viewer.warm_up()
    return viewer


def open_zone_light(target, scene, src, opts: LightOptions, data_opts: DataOptions, look: LookOptions, say):
    """The light tables' light for the view (``--clock``, or ``--look client`` at 12:00), or None:
    the fixed sun (also, after a warning line, when the tables are missing, short or of another
    build, or have no light for the map)."""
    from wowgrass.errors import FormatError, UsageError as _Usage
    from wowgrass.game.light import LightUnavailable, load_light_tables, parse_clock, resolve_map

    if opts.clock is None and look.name != "client":
        return None
    half = parse_clock(opts.clock if opts.clock is not None else "12:00")
    data = getattr(src, "data", None)
    dbc, build = data_opts.dbc, data_opts.build
    tables = load_light_tables(data, dbc, warn=lambda m: say(f"warning: {m}"), build=build)
    if tables is None:
        return None
    try:
        map_id, _ = resolve_map(dbc if dbc is not None else data, src.map)
        map_light = tables.map_light(map_id, storm=1.0 if opts.weather == "storm" else 0.0)
    except (LightUnavailable, FormatError, _Usage) as exc:
        say(f"warning: no light for map {src.map} ({exc}); keeping the fixed sun")
        return None
    for w in map_light.warnings:   # tables that do not belong together: said, not a black view alone
        say(f"warning: {w}")
    from .sources.sky import SkyDome
    from .viewer import ZoneLight

    return ZoneLight(map_light, half, SkyDome(target.ctx, scene.programs))


def trim_heap() -> None:
    """Give the heap's free pages back to the system (glibc's ``malloc_trim``): the tile worker's
    arrays, freed once uploaded, otherwise stay mapped (~60 MB on the 8x8 sample world, whose
    resident memory benchmarks/bench_memory.py measures). Elsewhere nothing."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        pass


def describe_view(opts: ViewOptions, data, src, scene, viewer, *, load_s: float) -> dict:
    """What the view shows and how it was made, for ``--json`` (frame figures are added by :func:`present`)."""
    target, camera = viewer.target, viewer.camera
    rings = scene.grass.settings.rings
    look = opts.look
    w, h = opts.output.size
    return {
        "map": src.map, "data": str(data.root), "tiles": [list(k) for k in scene.tiles],
        "camera": [float(v) for v in camera.position], "yaw_deg": math.degrees(camera.yaw),
        "pitch_deg": math.degrees(camera.pitch), "time": opts.camera.time, "size": [w, h],
        "split": look.split, "shadows": opts.light.shadows,
        "horizon": ({"tiles": len(scene.horizon.wdl), "triangles": scene.horizon.index_count // 3,
                     "reach": scene.view_reach} if scene.horizon is not None else None),
        "renderer": target.ctx.info.get("GL_RENDERER"), "gl_version": target.ctx.version_code,
        "samples": target.samples, "resident_grass_instances": scene.grass.total_instances,
        "grass_culling": ("grid" if look.grass_path == "grid"  # the grid is its own cull
                          else "gpu" if hasattr(scene.grass, "read_stats") else "cpu"),
        "rings": {"enabled": rings.enabled, "radii": list(rings.radii), "keep": list(rings.keep),
                  "band": rings.band, "debug": rings.debug},
        "missing_models": sorted(scene.missing_grass_models),
        "missing_doodad_models": sorted(scene.missing_doodad_models),
        "missing_textures": sorted(scene.missing_textures),
        "liquid_cells": scene.liquids.cells, "liquid_triangles": scene.liquids.triangles,
        "wmo_placements": scene.wmos.placement_count, "wmo_models": len(scene.wmos.models),
        "missing_wmos": sorted(getattr(src, "missing_wmos", ())),
        "liquid_errors": {f"{c},{r}": e for (c, r), e in getattr(src, "liquid_errors", {}).items()},
        "tile_errors": {f"{c},{r}": e for (c, r), e in scene.errors.items()},
        "load_seconds": load_s,
        "bundles": [{"tile": list(b.tile), "cache_hit": b.cache_hit, "file": b.path,
                     "capacity_dropped_count": b.capacity_dropped} for b in src.bakes],
        "grass_path": look.grass_path, "wind": look.wind, "wind_falloff": look.wind_falloff,
        "look": look.name, "placement": src.placement, "grass_distance": scene.grass.settings.draw_distance,
        "grass_fade_start": scene.grass.settings.fade_start,
        "grid_draw": getattr(scene.grass, "draw_mode", None),
        "grid_tiles": [{"tile": list(t), "path": p, "cache_hit": hit} for t, p, hit in src.grids],
    }


def describe_light(viewer) -> dict | None:
    """The light tables' light at the start camera, for ``--json`` (None: the fixed sun)."""
    zl = viewer.zone_light
    if zl is None:
        return None
    from wowgrass.game.light import clock_text

    ml = zl.map_light
    sl = zl.at(viewer.camera.position, viewer.scene)
    return {"clock": clock_text(zl.clock), "map_id": ml.map_id, "build": ml.tables.build, "storm": ml.storm,
            "lights": ml.lights_used(), "under_water": zl.under_water, "liquid_params": ml.liquid,
            "sun_dir": list(sl.sun_dir), "sun_color": list(sl.sun_color), "ambient": list(sl.ambient),
            "model_ambient": list(sl.model_ambient), "model_diffuse": list(sl.model_diffuse),
            "fog_color": list(sl.fog_color), "fog": list(sl.fog)}


def report_missing(scene, opts: LookOptions, say) -> None:
    """One line each for the grass models, doodad models and textures the data lacks."""
    if scene.missing_grass_models:
        how = ("drawn as straw-coloured stand-ins; --no-placeholders leaves them out" if opts.placeholders
               else "not drawn")
        say(f"note: missing grass models ({len(scene.missing_grass_models)}, {how}): "
            + ", ".join(sorted(scene.missing_grass_models)))
    if scene.missing_doodad_models:
        names = sorted(scene.missing_doodad_models)
        say(f"note: missing doodad models ({len(names)}, not drawn): " + ", ".join(names[:5])
            + (f", ... (--json lists all {len(names)})" if len(names) > 5 else ""))
    if scene.missing_textures:
        say(f"note: missing textures ({len(scene.missing_textures)}, drawn in a flat colour)")


def last_frame_stats(viewer, opts: OutputOptions):
    """Offscreen: statistics on for the last frame (which reads the GPU culling's counters back, once)."""
    def before_frame(i, n):
        viewer.toggles.stats = opts.stats or i == n - 1

    return before_frame


def present(viewer, target, opts: OutputOptions, time: float, say, mode: OutputMode, *, keys: str,
            before_frame=None, counts=None, ui=None) -> dict:
    """Run ``viewer`` in its window (``keys``: the view's own keys, for the help line; ``ui``: the
    window's panels) or render ``opts.frames`` offscreen frames from scene time ``time`` after a
    warm-up and write the last to ``mode.output``; returns the figures for the ``--json`` result.
    ``before_frame(i, n)`` runs before offscreen frame ``i``."""
    from .viewer import write_png
    from .window import run_window

    if mode.window:
        say(f"window: WASD move, mouse drag look, Shift fast, wheel speed, Q/E down/up, {keys}, "
            "F3 stats, Esc quit")
        run = run_window(viewer, start_time=time, on_stats=say, frames=opts.frames,
                         quit_after=opts.quit_after, screenshot=opts.screenshot is not None, ui=ui)
        result = _window_result(run, viewer, target)
        if opts.screenshot is not None and run.image is not None:
            write_png(opts.screenshot, run.image)
            result["screenshot"] = str(Path(opts.screenshot).resolve())
        return result
    n = max(int(opts.frames or 1), 1)
    viewer.status_every = 0.0  # the overlay's stats line: the frame before the one written
    viewer.render_frame(time)  # warm-up: shader compilation and first uploads are not a frame
    frames = []
    t0 = _time.perf_counter()
    for i in range(n):
        if before_frame is not None:
            before_frame(i, n)
        frames.append(viewer.render_frame(time + i / 60.0))
    target.ctx.finish()
    if counts is not None:   # what the GPU drew where only it knows (the meadow's indirect draws)
        c = counts()
        frames[-1].instances += int(c.get("instances", 0))
        frames[-1].triangles += int(c.get("triangles", 0))
    result = summarise_frames(viewer, frames, (_time.perf_counter() - t0) * 1000.0 / n)
    if viewer.overlay_shown:
        # the picture's stats line is the console's: the last frame again (same time, same picture)
        # with the summary's line, which exists only once the frames' GPU times are back
        viewer.status_fixed = result["stats_line"]
        viewer.render_frame(time + (n - 1) / 60.0)
        target.ctx.finish()
        viewer.drain_gpu_times()
        viewer.status_fixed = None
    result["overlay_status"] = viewer.overlay_status
    if mode.output is not None:
        viewer.save_png(mode.output)
        result["file"] = str(Path(mode.output).resolve())
    return result


def summarise_frames(viewer, frames, wall_ms: float) -> dict:
    """The offscreen run's figures: last frame, CPU and GPU milliseconds (timer queries are read
    once their frame finished, up to two frames in flight: the timed frames' GPU times are
    collected here), wall time per frame."""
    last = frames[-1]
    gpu = {f: ms for f, ms in viewer.drain_gpu_times() if frames[0].frame <= f <= last.frame}
    if last.frame in gpu:
        last.gpu_frame, last.gpu_ms = last.frame, gpu[last.frame]
    return {"frames": len(frames), "frame": last.as_dict(), "cpu_ms": _summary([f.cpu_ms for f in frames]),
            "gpu_ms": _summary(list(gpu.values()) or [float("nan")]), "wall_ms_per_frame": wall_ms,
            "stats_line": last.line()}


def _window_result(run, viewer, target) -> dict:
    """The window session in the shape of the offscreen result (frames, statistics) plus its end state."""
    out = {"window": True, "frames": run.frames, "seconds": run.seconds,
           "fps": run.frames / run.seconds if run.seconds > 0 else None,
           "size": list(target.size), "toggles": {k: bool(v) for k, v in vars(viewer.toggles).items()},
           "camera_end": [float(v) for v in viewer.camera.position]}
    if run.stats:
        out["frame"] = run.stats[-1].as_dict()
        out["cpu_ms"] = _summary([f.cpu_ms for f in run.stats])
        out["gpu_ms"] = _summary([f.gpu_ms for f in run.stats])
        out["stats_line"] = run.stats[-1].line()
    return out


def _summary(values):
    vals = [v for v in values if v == v]
    if not vals:
        return None
    return {"mean": statistics.fmean(vals), "median": statistics.median(vals), "min": min(vals), "max": max(vals)}


def _cache():
    from wowgrass.paths import cache_dir

    return cache_dir() / "bundles"


# -- the procedural meadow (``--procedural``) --

MEADOW_SUN = np.array([0.55, 0.32, 0.52])
MEADOW_SUN = MEADOW_SUN / np.linalg.norm(MEADOW_SUN)
MEADOW_FOG = (140.0, 470.0)  # the meadow is 1024 units wide: its edge stays in the fog


def run_meadow(opts: ViewOptions, mode: OutputMode, say) -> dict:
    """``wowgrass view --procedural``: the same steps as :func:`run_view` over the meadow."""
    from .sources.meadow import Meadow
    from .viewer import Toggles
    from .world.firstframe import start_camera

    t_load = _time.perf_counter()
    d, look = opts.data, opts.look
    with ExitStack() as cleanup:  # released in reverse: viewer, meadow, target
        target, mode = open_target(opts.output, mode, say, f"wowgrass - procedural meadow (seed {d.seed})")
        cleanup.callback(target.release)
        meadow = Meadow(target.ctx, d.meadow_settings, d.seed, cpu_instances=d.cpu_instances)
        cleanup.callback(meadow.release)
        camera = start_camera(meadow, camera=opts.camera.position, target=opts.camera.target)
        toggles = Toggles(grass=look.grass, terrain=look.terrain, stats=opts.output.stats, split=look.split,
                          shadows=opts.light.shadows, lod_colors=look.lod_colors, wireframe=look.wireframe)
        viewer = meadow_viewer(target, meadow, camera, toggles)
        cleanup.callback(viewer.release)
        result = {"procedural": True, "seed": meadow.seed, "size": list(target.size),
                  "renderer": target.ctx.info.get("GL_RENDERER"), "gl_version": target.ctx.version_code,
                  "samples": target.samples, "camera": [float(v) for v in camera.position],
                  "yaw_deg": math.degrees(camera.yaw), "pitch_deg": math.degrees(camera.pitch), "time": opts.camera.time,
                  "split": toggles.split, "shadows": toggles.shadows,
                  "blade_source": "cpu-upload" if meadow.cpu_instances else "gpu-generated",
                  "load_seconds": _time.perf_counter() - t_load}
        result.update(present(viewer, target, opts.output, opts.camera.time, say, mode, keys=MEADOW_KEYS,
                              counts=meadow_counts(meadow)))
        if not mode.window:
            result.update(meadow.drawn_counts())
            result["upload_bytes_per_frame"] = meadow.upload_bytes
        return result


def meadow_counts(meadow):
    """The meadow's instances (terrain tiles and blades) and triangles of the last frame: its draws
    are indirect, so only a read of the GPU's draw commands knows them."""
    def counts() -> dict:
        c = meadow.drawn_counts()
        return {"instances": sum(c["tiles_per_lod"]) + c["blades"], "triangles": c["triangles"]}
    return counts


def meadow_viewer(target, meadow: Meadow, camera: Camera, toggles: Toggles | None = None, **kw) -> Viewer:
    """A :class:`Viewer` of the meadow: its sun (lower than the zone view's: longer blade shadows),
    a shadow map fitted to the near grass, fog that hides the meadow's edge."""
    from .viewer import Light, Viewer

    s = meadow.settings
    light = Light(sun_dir=tuple(MEADOW_SUN), sun_color=(0.95, 0.88, 0.72), ambient=(0.36, 0.42, 0.50),
                  shadow_reach=s.shadow_reach, shadow_size=s.shadow_size, caster_height=120.0)
    return Viewer(target, meadow, camera, toggles, fog=MEADOW_FOG, light=light, **kw)
