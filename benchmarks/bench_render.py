"""Render benchmark: resident grass from 100k to 45M instances, the sample zone, a streaming flight.

Prints, per resident instance count (camera at eye height in a field of 0.35 instances per square
unit; a bigger count is a bigger area, as a bigger zone is):
  * gpu     - GPU-driven culling (render/grass_gpu.py): a compute pass tests every resident chunk
              group then its instances (distance, frustum, LOD rings) into a compacted buffer and
              indirect commands; two-command multi-draw per model. Targets on the H200: CPU <= 0.1
              ms a frame, flat from 100k to 45M; wall <= 1.5 ms at 45M; no cliff 4M -> 16M.
  * cpu     - the per-chunk CPU culling path (the GL < 4.3 fallback, issue 8's viewer path).
  * probes  - at --probe-count (16M by default): why the CPU path's GPU time jumped between 4M and
              16M (docs/view.md): the same drawn set from one giant buffer with the drawn chunks in
              the middle (large baseInstance), with them first (small baseInstance), from 1M-instance
              buffers, and through the GPU path's compacted buffer.
  * layout  - (--layout-counts) every instance drawn, no culling: 16-byte instances vs 64-byte mat4.
Then the sample world's zone at the requested size (start view, grass view, walking; without the
sun's shadows, like for like with earlier runs; the grass view again with them), the grass view
as a split screen with shadows off and on (``passes_split*``), with PNGs
(normal and --debug-rings colouring) in --png-dir, and with --flight a straight flight at 50
units/s across a 6x6 sample world with a finish after every frame: median, p99, max frame time.

Each run starts with 10 untimed frames (their GPU times are kept as ``startup_gpu_ms``: a big
buffer's first frames can be slow), then 100 pipelined frames timed apart (``wall cold``: on the
H200 frames right after the GPU idled, as it does while a 45M field is built, run up to ~0.9 ms
longer apart than their GPU time for ~200 frames), then frames until a second has passed. Frames are pipelined as in the viewer: at most two frames in
flight, bounded by fences; a frame's timer query is read once its fence signalled, so the CPU never
waits on a query (``--timer query``: the older way, queries read two frames late, which blocks). ``wall`` = the time of N consecutive frames (one ``finish`` at the
end) / N, about max(CPU, GPU) per frame; ``gpu`` = the median of the N frames' timer queries;
``cpu`` = the median time to build and submit a frame (the bench's timer query left out);
``cpu sub`` = the same for frames that start with the GPU idle (after a finish), so that no wait
for a full driver queue lands in it: the frame's own CPU work; ``cpu thr`` = the median CPU time
the submitting thread itself used per frame (``time.thread_time``: no time off the CPU). The flight's frames start at 60 fps
in real time (``--flight-pace``), as the viewer's do, so that tiles have the time to stream in.

    python benchmarks/bench_render.py                       # llvmpipe-friendly defaults (small)
    python benchmarks/bench_render.py --size 1920x1080 --counts 100000,1000000,4000000,16000000,45000000 \
        --frames 200 --flight --json out/render.json --png-dir out     # the H200 run (docs/gpu.md)
    python benchmarks/bench_render.py --size 1920x1080 --counts "" --no-sample --horizon --flight \
        --frames 200 --json out/horizon.json --png-dir out             # issue 26: horizon + flight

With --horizon: the WDL horizon over a 16x16 sample world from 600 units up, on and off (frame
times, GPU bytes, a PNG of each); the world is built on first use (minutes).

Uses EGL offscreen (Mesa llvmpipe here; the NVIDIA driver on the lent H200, see docs/gpu.md).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wowgrass.render.camera import Camera  # noqa: E402
from wowgrass.render.constants import GrassSettings  # noqa: E402
from wowgrass.render.gl.context import create_offscreen_target  # noqa: E402
from wowgrass.render.frame import Frame, FrameUniforms, draw_frame  # noqa: E402
from wowgrass.render.gl.timer import GpuTimer  # noqa: E402
from wowgrass.grass.bundle import INSTANCE_DTYPE  # noqa: E402
from wowgrass.render.sources.grass_cpu import GrassField  # noqa: E402
from wowgrass.render.sources.grass_gpu import GpuGrass  # noqa: E402
from wowgrass.render.gl.meshes import GpuMesh, crossed_quads  # noqa: E402
from wowgrass.render.passes import ColourPass  # noqa: E402
from wowgrass.render.gl.programs import make_programs  # noqa: E402
from wowgrass.render.views import View  # noqa: E402

DENSITY = 0.35  # instances per square unit (docs/gpu.md)
CENTRE = (0.0, 0.0)  # the middle of the map
WARMUP_FRAMES = 60  # frames drawn at a view before it is timed (the water views)


def field_instances(n: int, seed: int = 0, near_first: bool = False) -> np.ndarray:
    """``n`` instances in a square around CENTRE at DENSITY, on a gently rolling ground, in chunk
    order (as a bundle has them); ``near_first``: chunks ordered by distance from CENTRE instead."""
    rng = np.random.default_rng(seed)
    half = math.sqrt(n / DENSITY) / 2
    inst = np.zeros(n, INSTANCE_DTYPE)
    x = rng.uniform(-half, half, n)
    y = rng.uniform(-half, half, n)
    inst["pos"][:, 0] = CENTRE[0] + x
    inst["pos"][:, 1] = CENTRE[1] + y
    inst["pos"][:, 2] = ground(x, y)
    inst["yaw"] = rng.integers(0, 65536, n).astype(np.uint16)
    inst["scale"] = np.round(rng.uniform(0.8, 1.2, n) * 4096).astype(np.uint16)
    # the placement emits instances chunk by chunk; so does a bundle
    from wowgrass.render.sources.grass_cpu import chunk_bounds_xy, chunk_keys

    keys = chunk_keys(inst["pos"])
    if near_first:
        lo, hi = chunk_bounds_xy(keys)
        d = np.hypot(*((lo + hi) / 2 - CENTRE).T)
        return inst[np.lexsort((keys, np.round(d, 3)))]
    return inst[np.argsort(keys, kind="stable")]


def ground(x, y):
    return 2.0 * np.sin(np.asarray(x) / 40.0) * np.cos(np.asarray(y) / 55.0)


def clump(kind: str = "ref18"):
    """3 crossed quads, 6 triangles. ``ref18``: 18 unshared vertices, docs/gpu.md's reference clump;
    ``indexed12``: 12 vertices shared through the index buffer (how M2 grass meshes come)."""
    m = crossed_quads(width=0.9, height=0.6, n=3, rows=(0.0, 1.0))
    if kind == "ref18":
        i = m.indices
        m.positions, m.normals, m.uvs = m.positions[i], m.normals[i], m.uvs[i]
        m.indices = np.arange(len(i), dtype=np.uint32)
    return m


_VIEWS: dict = {}  # one View per camera, kept across frames as the viewer keeps its views


_PASSES: dict = {}  # one colour pass per target, kept as the viewer keeps its passes
_TIMES: dict = {}  # id(timer) -> (frame, GPU ms) its end() reported, not taken yet
_THREAD_MS: list = []  # each frame's CPU time of the calling thread (not wall: no time off the CPU)


def reported(timer) -> list:
    """Every (frame, GPU ms) of ``timer`` not taken yet: those ``end`` returned, then the rest
    (waits for the GPU)."""
    return _TIMES.pop(id(timer), []) + timer.drain()


def frame(target, uniforms, field, cam, t, timer):
    """One frame; returns the CPU time of building and submitting it (the timer query around it
    is the benchmark's, not the frame's, and is left out) and its draw counts."""
    view = _VIEWS.get(id(cam))
    if view is None or view.camera is not cam:
        view = _VIEWS[id(cam)] = View(cam, (0, 0, *target.size))
    passes = _PASSES.get(id(target))
    if passes is None:
        passes = _PASSES[id(target)] = [ColourPass(target)]
    timer.begin()
    c0 = time.thread_time()  # outside the perf_counter interval: a thread clock read is a system call
    t0 = time.perf_counter()
    fr = Frame(time=t, views=[view], wind=field.settings)
    counts = draw_frame(fr, passes, [field], uniforms)
    cpu = (time.perf_counter() - t0) * 1000
    _THREAD_MS.append((time.thread_time() - c0) * 1000)
    _TIMES.setdefault(id(timer), []).extend(timer.end())  # waits only while two frames are in flight
    return cpu, counts


def median(values):
    v = [x for x in values if x == x]
    return statistics.median(v) if v else float("nan")


def make_field(ctx, progs, mesh, inst, *, path, layout="16p", cull=True, settings=None, split=0):
    """A grass source holding ``inst``: ``path`` "gpu" (GpuGrass) or "cpu" (GrassField, in
    ``split``-instance batches when given, as tiles would be)."""
    if path == "gpu":
        field = GpuGrass(ctx, progs["16p"], settings)
        field.add(mesh, inst)
        field.flush_uploads()
        return field
    field = GrassField(ctx, progs[layout], settings, layout=layout)
    field.cull = cull
    for k, i0 in enumerate(range(0, len(inst), split or len(inst))):
        field.add(mesh, inst[i0:i0 + (split or len(inst))], layout=layout, tile=k)
    return field


class NoTimer:
    """Stands in for GpuTimer with --timer-lag 0: no queries (is the pipelined wall time the wait
    for a query result?); GPU times read as unknown."""

    frame = 0

    def begin(self):
        self.frame += 1

    def end(self):
        return []

    def drain(self):
        return []


TIMER_LAG = 2  # frames in flight (--timer-lag)
TIMER_FENCES = True  # False: moderngl queries read TIMER_LAG frames late (--timer query)
CHECK = True  # compare the GPU's visible set with the numpy reference (--no-check)
COLD_FRAMES = 100  # pipelined frames timed right after the field is built (``wall_ms_cold``)
WARM_S = 1.0  # seconds of frames, from the cold ones on, before the timed frames


def run_field(ctx, target, progs, mesh, inst, *, path="cpu", layout="16p", cull=True, frames, cam, settings,
              split=0):
    field = make_field(ctx, progs, mesh, inst, path=path, layout=layout, cull=cull, settings=settings, split=split)
    timer = GpuTimer(ctx, lag=TIMER_LAG, fences=None if TIMER_FENCES else False) if TIMER_LAG > 0 else NoTimer()
    uniforms = FrameUniforms(ctx)
    for _ in range(10):  # warm-up: shader compilation, first command writes, buffer placement
        frame(target, uniforms, field, cam, 0.0, timer)
    startup = [round(ms, 4) for _, ms in reported(timer)]  # the first frames' GPU times, kept apart
    ctx.finish()
    # pipelined frames right after the GPU idled (building a 45M field takes ~3 s) ran 0.4-0.9 ms
    # longer apart than their GPU time on the H200 for ~200 frames, and again after 3 s idle, then
    # not at all: a power-state ramp, not a cost of the resident set. Measured apart ("cold"),
    # then frames run until WARM_S has passed before the timed ones.
    t0 = time.perf_counter()
    for i in range(COLD_FRAMES):
        frame(target, uniforms, field, cam, i / 60.0, timer)
    ctx.finish()
    cold = (time.perf_counter() - t0) * 1000 / max(COLD_FRAMES, 1)
    while time.perf_counter() - t0 < WARM_S:
        frame(target, uniforms, field, cam, 0.0, timer)
    reported(timer)
    ctx.finish()
    cpus = []
    first = timer.frame
    _THREAD_MS.clear()
    t0 = time.perf_counter()
    for i in range(frames):
        c, counts = frame(target, uniforms, field, cam, i / 60.0, timer)
        cpus.append(c)
    thread_ms = list(_THREAD_MS)
    ctx.finish()
    wall = (time.perf_counter() - t0) * 1000 / frames
    gpus = [ms for f, ms in reported(timer) if f >= first]
    # the same frames again with a finish after each: a frame's latency, and whether the pipelined
    # wall time above hides one-off stalls (a mean) that the GPU medians do not show
    # its CPU part is the submission alone: the GPU is idle when it starts, so no driver
    # throttling (a full command queue) lands in it, as it can in the pipelined frames' CPU time
    fin, submit = [], []
    for i in range(min(frames, 50)):
        t1 = time.perf_counter()
        c, _ = frame(target, uniforms, field, cam, i / 60.0, timer)
        ctx.finish()
        fin.append((time.perf_counter() - t1) * 1000)
        submit.append(c)
    reported(timer)
    nan = float("nan")
    out = {"cpu_ms": median(cpus), "cpu_ms_max": max(cpus), "gpu_ms": median(gpus), "wall_ms": wall,
           "wall_ms_cold": cold, "cold_frames": COLD_FRAMES, "gpu_frames": len(gpus),
           "cpu_thread_ms": median(thread_ms), "cpu_thread_ms_max": max(thread_ms),
           "gpu_ms_mean": statistics.fmean(gpus) if gpus else nan, "gpu_ms_max": max(gpus) if gpus else nan,
           "gpu_timeline_ms": [round(g, 4) for g in gpus], "startup_gpu_ms": startup, "finish_ms_median": median(fin), "finish_ms_max": max(fin),
           "cpu_submit_ms": median(submit), "cpu_submit_ms_max": max(submit),
           "submitted": counts.instances, "draw_calls": counts.draw_calls}
    if path == "gpu":  # one more frame with the counters on, read back (not timed)
        field.collect_stats = True
        frame(target, uniforms, field, cam, 0.0, timer)
        view = View(cam, (0, 0, *target.size))
        st = field.read_stats(view)
        out.update(st)
        if len(inst) <= 4_000_000 and CHECK:  # the visible set against the numpy reference (reads the arena back)
            out["check"] = field.check_against_reference(view)
        out["submitted"] = st["drawn"]
        reported(timer)
    field.release()
    uniforms.release()
    return out


def eye_camera(aspect):
    cam = Camera(position=np.array([CENTRE[0], CENTRE[1], float(ground(0.0, 0.0)) + 1.7]), aspect=aspect)
    cam.yaw, cam.pitch = math.radians(20.0), math.radians(-6.0)
    cam.far = 1000.0
    return cam


def overview_camera(n, aspect):
    # the whole field on screen: above its south edge looking north and down
    half = math.sqrt(n / DENSITY) / 2
    cam = Camera(position=np.array([CENTRE[0] - 1.6 * half, CENTRE[1], 1.2 * half]), aspect=aspect)
    cam.look_at((CENTRE[0], CENTRE[1], 0.0))
    cam.far = 6 * half + 100
    cam.near = 1.0
    return cam


def time_viewer(v, target, frames, walk=0.0):
    """Pipelined frames of a viewer: cpu/gpu medians and maxima, wall = total / frames."""
    cam = v.camera
    for _ in range(3):
        v.render_frame(0.0)
    first = v.render_frame(0.0).frame + 1
    v.drain_gpu_times()
    target.ctx.finish()
    start = cam.position.copy()
    fr = []
    t0 = time.perf_counter()
    for i in range(frames):
        if walk:
            cam.move(forward=walk)
        fr.append(v.render_frame(i / 60.0))
    target.ctx.finish()
    wall = (time.perf_counter() - t0) * 1000 / frames
    gp = [ms for f, ms in v.drain_gpu_times() if f >= first]
    cam.position = start
    # the CPU time of a frame submitted to an idle GPU: its own work alone (in the pipelined frames
    # a GPU-bound view makes the driver hold the CPU back somewhere inside the frame)
    submit = []
    for i in range(min(frames, 30)):
        target.ctx.finish()
        submit.append(v.render_frame(i / 60.0).cpu_ms)
    target.ctx.finish()
    v.drain_gpu_times()
    return {"cpu_ms": statistics.median(f.cpu_ms for f in fr), "cpu_ms_max": max(f.cpu_ms for f in fr),
            "cpu_submit_ms": statistics.median(submit),
            "gpu_ms": median(gp) if gp else None, "gpu_ms_max": max(gp) if gp else None,
            "wall_ms": wall, "gpu_frames": len(gp), "instances": fr[-1].instances,
            "draw_calls": fr[-1].draw_calls, "triangles": fr[-1].triangles,
            "grass_submitted": fr[-1].grass_instances}


def bench_sample(size, frames, png_dir, samples, layout="16p", parts=False, profile=False):
    """The sample world: the start view, the grass view, the grass view walking forward at
    12 units/s (60 fps; the matrices and now and then the visible chunk set change every frame).

    Like for like with the figures before the renderer of passes (docs/view.md): these views are
    drawn without the sun's shadow pass (the viewer's default now; ``grass_60_60_shadows`` is the
    grass view with it), and ``centre_as_before`` stands where the start view stood then (above
    the data's centre, facing the grassiest heading; the start view is now :mod:`.firstframe`'s).
    ``parts``: also the grass view with only terrain, only doodads, only grass, and the grass alone
    in variants that say what its time is made of (rings off, culling off, the GPU culling in
    distance bands nearest first, the CPU fallback's culling, no alpha to coverage, nothing)."""
    from wowgrass.render.app import DataOptions, open_source
    from wowgrass.render.world.streaming import Scene, tiles_centre
    from wowgrass.render.viewer import Toggles, Viewer
    from wowgrass.render.world.firstframe import default_camera

    data, src = open_source(DataOptions())
    target = create_offscreen_target(size, samples)
    progs = make_programs(target.ctx, alpha_to_coverage=target.samples > 0, instance_layout=layout)
    scene = Scene(target.ctx, progs, src, instance_layout=layout)
    no_shadows = {"shadows": False} if "shadows" in Toggles.__dataclass_fields__ else {}
    results = {}
    views = (("centre", None, 0.0, no_shadows), ("centre_as_before", tiles_centre(src.tiles), 0.0, no_shadows),
             ("grass_60_60", (60.0, 60.0), 0.0, no_shadows), ("grass_walk", (60.0, 60.0), 0.2, no_shadows))
    if no_shadows:
        views += (("grass_60_60_shadows", (60.0, 60.0), 0.0, {}),)
    grass_view = None
    for name, cam_xy, walk, toggles in views:
        cam = default_camera(scene, src, camera=cam_xy)
        scene.update(cam.position, block=True)
        v = Viewer(target, scene, cam, Toggles(**toggles))
        r = results[name] = time_viewer(v, target, frames, walk)
        r["resident"] = scene.grass.total_instances
        r["camera"] = [round(float(c), 2) for c in cam.position]
        r["yaw_pitch_deg"] = [round(math.degrees(cam.yaw), 2), round(math.degrees(cam.pitch), 2)]
        r["shadows"] = bool(getattr(v.toggles, "shadows", False))
        v.toggles.stats = True  # one more frame with the GPU culling's counters read back (not timed)
        st = v.render_frame(0.0)
        v.toggles.stats = False
        r.update(grass_drawn=st.grass_instances, grass_tested=st.grass_tested,
                 grass_kept_per_ring=st.grass_kept_per_ring, grass_culling=st.grass_culling)
        if hasattr(scene.grass, "check_against_reference"):
            scene.grass.collect_stats = False
            r["check"] = scene.grass.check_against_reference(v.views[0])
        if png_dir and not walk:
            v.render_frame(0.0)
            v.save_png(Path(png_dir) / f"sample_{name}_{size[0]}x{size[1]}.png")
            if name == "grass_60_60":
                rings = scene.grass.settings.rings
                rings.debug = True
                v.render_frame(0.0)
                v.save_png(Path(png_dir) / f"sample_{name}_{size[0]}x{size[1]}_debug_rings.png")
                rings.debug = False
        if profile and name == "grass_60_60":  # where a frame's CPU time goes (Python or GL calls)
            import cProfile
            import pstats

            pr = cProfile.Profile()
            pr.enable()
            for i in range(frames):
                v.render_frame(i / 60.0)
            pr.disable()
            target.ctx.finish()
            print(f"  profile of {frames} frames of the grass view (tottime, s):")
            pstats.Stats(pr).sort_stats("tottime").print_stats(14)
        if name == "grass_60_60":
            grass_view = v
    if parts and grass_view is not None:
        v = grass_view
        v.camera.position = np.array(results["grass_60_60"]["camera"], np.float64)
        for part in ("terrain", "doodads", "grass"):
            v.toggles = Toggles(**{k: k == part for k in ("terrain", "doodads", "grass")}, **no_shadows)
            results[f"only_{part}"] = time_viewer(v, target, frames)
        v.toggles = Toggles(terrain=False, doodads=False, grass=False, **no_shadows)
        results["only_nothing"] = time_viewer(v, target, frames)  # a frame's fixed cost (clear, timer)
        grass_alone = Toggles(terrain=False, doodads=False, grass=True, **no_shadows)
        rings = scene.grass.settings.rings
        rings.enabled = False
        v.toggles = grass_alone
        results["only_grass_rings_off"] = time_viewer(v, target, frames)
        rings.enabled = True
        v.toggles = Toggles(terrain=False, doodads=False, grass=True, cull=False, **no_shadows)
        results["only_grass_culling_off"] = time_viewer(v, target, frames)
        if hasattr(scene.grass, "bands"):  # culled in distance bands, nearest first (GpuGrass.bands)
            from wowgrass.render.sources.grass_gpu import NEAR_FIRST_BANDS

            bands, scene.grass.bands = scene.grass.bands, NEAR_FIRST_BANDS
            v.toggles = grass_alone
            results["only_grass_near_first"] = time_viewer(v, target, frames)
            scene.grass.bands = bands
        v.toggles = grass_alone
        v.colour_pass.alpha_to_coverage = False
        results["only_grass_no_a2c"] = time_viewer(v, target, frames)
        v.colour_pass.alpha_to_coverage = target.samples > 0
        # the split screen (grass_60_60 and grass_60_60_shadows are its single-view figures)
        for label, tg in (("split", Toggles(split=True, **no_shadows)), ("split_shadows", Toggles(split=True))):
            v.toggles = tg
            results[f"passes_{label}"] = time_viewer(v, target, frames)
            if png_dir:
                v.render_frame(0.0)
                v.save_png(Path(png_dir) / f"sample_grass_60_60_{size[0]}x{size[1]}_{label}.png")
    scene.release()
    if parts and grass_view is not None and target.ctx.version_code >= 430:
        # the same grass view through the CPU fallback's per-chunk culling (a scene of its own)
        scene = Scene(target.ctx, progs, src, instance_layout=layout, grass_culling="cpu")
        cam = default_camera(scene, src, camera=(60.0, 60.0))
        scene.update(cam.position, block=True)
        v = Viewer(target, scene, cam, Toggles(terrain=False, doodads=False, grass=True, **no_shadows))
        results["only_grass_cpu_culling"] = time_viewer(v, target, frames)
        scene.release()
    target.release()
    data.close()
    return results


def bench_flight(size, samples, tiles=6, frames=1200, speed=50.0, height=12.0, png_dir=None, pace=60.0,
                 shadows=False, warmup=60, water=False):
    """A straight flight over a ``tiles`` x ``tiles`` sample world at ``speed`` units/s (60 fps
    steps), ``height`` above the ground, streaming tiles as the viewer does; a finish after every
    frame so that a stall shows in its frame. Flown twice: first as the cache stands (bundles
    baked on demand on a fresh machine), then again with every bundle cached.

    ``pace``: frames start at this rate in real time (the viewer's vsync), so the background
    worker has the flight's real duration (frames x 1/60 s) to load tiles; flown as fast as the GPU
    allows (0), a fast GPU crosses the world in a quarter of that and no tile arrives before the
    flight ends. A frame's time is its own work (update, draw, finish), not the wait for its slot.
    Reported with it: the tiles that come into reach along the path (expected arrivals), the ones
    uploaded, the ones still missing in reach at the end, and how many slow frames had an upload.
    ``shadows``: a third flight, bundles cached, with the sun's shadow pass on (``cached_shadows``).
    ``warmup``: frames drawn at the start point before the flight, timed apart (``startup_ms_*``).
    The sample world's lake and house lie by its centre, on the flight's path; every run draws
    them, and ``water``: one more cached run with liquids and WMOs off (``cached_no_water``)."""
    from wowgrass.game.data import open_data
    from wowgrass.render.world.streaming import Scene, tile_distances, tiles_centre
    from wowgrass.render.world.game_tiles import GameSource
    from wowgrass.render.viewer import Toggles, Viewer
    from wowgrass.samples import MAP_NAME, sample_data_path

    root = sample_data_path(tiles=(tiles, tiles), jobs=4)
    data = open_data(root)
    src = GameSource(data, MAP_NAME)
    target = create_offscreen_target(size, samples)
    progs = make_programs(target.ctx, alpha_to_coverage=target.samples > 0)
    results = {}
    cx, cy = tiles_centre(src.tiles)
    span = frames * speed / 60.0
    # along the world's diagonal through its centre: tile borders in X and Y both get crossed
    start = np.array([cx - span / 2 / math.sqrt(2), cy - span / 2 / math.sqrt(2), 0.0])
    step = np.array([1.0, 1.0, 0.0]) / math.sqrt(2) * speed / 60.0
    keys = np.array(src.tiles, np.int64).reshape(-1, 2)
    slot = 1.0 / pace if pace > 0 else 0.0
    for run in ("first", "cached") + (("cached_shadows",) if shadows else ()) + (("cached_no_water",) if water else ()):
        scene = Scene(target.ctx, progs, src, tile_process=True)  # as a window flies
        cam = Camera(position=start.copy())
        cam.yaw, cam.pitch = math.radians(45.0), math.radians(-10.0)
        scene.update(cam.position, block=True)
        at_start = set(scene.tiles)
        # the tiles the path brings into reach that the start did not load: what must stream in
        path = start[None, :2] + np.arange(frames)[:, None] * step[None, :2]
        reached = np.zeros(len(keys), bool)
        for x, y in path[::10]:
            reached |= tile_distances(keys, float(x), float(y)) <= scene.reach
        expected = {tuple(int(v) for v in k) for k in keys[reached]} - at_start
        toggles = {"shadows": run == "cached_shadows"} if "shadows" in Toggles.__dataclass_fields__ else {}
        if run == "cached_no_water":
            toggles.update(liquids=False, wmos=False)
        v = Viewer(target, scene, cam, Toggles(**toggles))
        # the first frames at the start point, kept apart: the driver finishes compiling programs at
        # their first draw, and the GPU's clocks come up from idle (the H200's first ~15 frames
        # took 15 ms of GPU time against 6 ms later)
        startup = []
        for i in range(warmup):
            t0 = time.perf_counter()
            v.render_frame(0.0)
            target.ctx.finish()
            startup.append((time.perf_counter() - t0) * 1000.0)
        times, per_frame = [], []
        due = time.perf_counter()
        for i in range(frames):
            now = time.perf_counter()
            if now < due:
                time.sleep(due - now)
            due = max(due + slot, time.perf_counter()) if slot else due
            t0 = time.perf_counter()
            n_up = scene.update(cam.position)
            g = scene.ground_height(float(cam.position[0]), float(cam.position[1]))
            if g is not None:
                cam.position[2] = g + height
            v.render_frame(i / 60.0)
            target.ctx.finish()
            times.append((time.perf_counter() - t0) * 1000.0)
            per_frame.append(n_up)
            cam.position = cam.position + step
        med = statistics.median(times)
        in_reach_end = set(scene.wanted(float(cam.position[0]), float(cam.position[1])))
        missing_end = sorted(k for k in in_reach_end if k not in scene.tiles or not scene.tiles[k].full)
        slow = [i for i, t in enumerate(times) if t > 2 * med]
        results[run] = {"median_ms": med, "p99_ms": float(np.percentile(times, 99)), "max_ms": max(times),
                        "liquids": bool(getattr(v.toggles, "liquids", False)),
                        "wmos": bool(getattr(v.toggles, "wmos", False)),
                        "liquid_cells_end": scene.liquids.cells, "wmo_placements_end": scene.wmos.placement_count,
                        "frames_over_4x_median": sum(t > 4 * med for t in times), "frames": frames,
                        "pace_fps": pace, "tile_uploads": int(sum(per_frame)),
                        "tiles_expected": len(expected), "tiles_arrived": len(expected & set(scene.tiles)),
                        "missing_in_reach_end": [list(k) for k in missing_end],
                        "slow_frames": len(slow), "slow_frames_with_upload": sum(per_frame[i] > 0 for i in slow),
                        "max_ms_frame_upload": bool(per_frame[int(np.argmax(times))]),
                        "resident_tiles_end": len(scene.tiles),
                        "tile_errors": {f"{c},{r}": e for (c, r), e in list(scene.errors.items())[:5]},
                        "tile_error_count": len(scene.errors),
                        "startup_frames": warmup, "startup_ms_first": startup[0] if startup else None,
                        "startup_ms_max_after_first": max(startup[1:], default=None),
                        "frame_ms": [round(t, 3) for t in times]}
        if png_dir and run == "cached":
            v.save_png(Path(png_dir) / f"flight_end_{size[0]}x{size[1]}.png")
        scene.release()
    target.release()
    data.close()
    return results


def _flight_summary(times, gpu=None, compiles=None, uploads=None) -> dict:
    """Median, p99, max frame times (and their ratios to the median) of a flight."""
    med = statistics.median(times)
    out = {"frames": len(times), "median_ms": med, "p99_ms": float(np.percentile(times, 99)), "max_ms": max(times),
           "p99_x": float(np.percentile(times, 99)) / med, "max_x": max(times) / med,
           "frames_over_4x_median": sum(t > 4 * med for t in times), "slowest_frame": int(np.argmax(times))}
    if gpu:
        out.update(gpu_median_ms=statistics.median(gpu), gpu_p99_ms=float(np.percentile(gpu, 99)), gpu_max_ms=max(gpu))
    if compiles is not None:
        out["programs_compiled_in_frames"] = int(sum(compiles))
        out["frames_that_compiled"] = [i for i, c in enumerate(compiles) if c]
    if uploads is not None:
        out["tile_uploads"] = int(sum(uploads))
        out["slowest_frame_had_upload"] = bool(uploads[int(np.argmax(times))])
    return out


def _fly(target, scene, v, start, step, frames, *, pace=60.0, height=12.0, floor=None):
    """A paced straight flight (bench_flight's loop): per frame the time of update, draw and
    finish, the tile uploads, the programs compiled in it and its GPU time (the viewer's timer).
    ``floor``: the camera keeps ``height`` above max(ground, floor) (a sea's level)."""
    from wowgrass.render.gl.programs import compile_log

    log = compile_log(target.ctx)
    cam = v.camera
    cam.position = np.asarray(start, np.float64).copy()
    slot = 1.0 / pace if pace > 0 else 0.0
    times, uploads, compiles = [], [], []
    v.drain_gpu_times()
    first = v._frame
    due = time.perf_counter()
    for i in range(frames):
        now = time.perf_counter()
        if now < due:
            time.sleep(due - now)
        due = max(due + slot, time.perf_counter()) if slot else due
        n_log = len(log)
        t0 = time.perf_counter()
        n_up = scene.update(cam.position)
        g = scene.ground_height(float(cam.position[0]), float(cam.position[1]))
        if g is not None:
            cam.position[2] = max(g, floor if floor is not None else g) + height
        v.render_frame(i / 60.0)
        target.ctx.finish()
        times.append((time.perf_counter() - t0) * 1000.0)
        uploads.append(n_up)
        compiles.append(len(log) - n_log)
        cam.position = cam.position + step
    gpu = [ms for f, ms in v.drain_gpu_times() if f >= first]
    return times, gpu, compiles, uploads


def _sea_world(tiles: int):
    """The sample world with a sea (``sample build --sea``), built and baked with every core."""
    from wowgrass.grass.bake import bake_map
    from wowgrass.samples import MAP_NAME, sample_data_path

    jobs = max(1, min(16, os.cpu_count() or 1))
    t0 = time.perf_counter()
    root = sample_data_path(tiles=(tiles, tiles), jobs=jobs, sea=True)
    built = time.perf_counter() - t0
    t0 = time.perf_counter()
    bake_map(root, MAP_NAME, jobs=jobs)
    return root, built, time.perf_counter() - t0


#: where flights prepare their tiles: "process" (a tile process, as ``wowgrass view`` in a window) or
#: "thread" (the scene's worker thread; --tiles-in)
TILES_IN = {"where": "process"}


def _ocean_scene(target, progs, src, wdl, tile_process: bool | None = None):
    """A scene as ``wowgrass view`` opens one in a window (far tiles to TERRAIN_REACH, the WDL
    horizon, tiles prepared in a tile process unless --tiles-in thread)."""
    from wowgrass.render.constants import TERRAIN_REACH
    from wowgrass.render.world.streaming import Scene

    if tile_process is None:
        tile_process = TILES_IN["where"] == "process"
    return Scene(target.ctx, progs, src, terrain_reach=TERRAIN_REACH, horizon=wdl, tile_process=tile_process)


def _process_ready(scene, limit: float = 30.0) -> float | None:
    """Wait (at most ``limit`` s) for the scene's tile process to have opened its source, so that
    a flight measures tiles streaming through it; the seconds waited (None: no process)."""
    proc = getattr(scene, "_process", None)
    if proc is None:
        return None
    t0 = time.perf_counter()
    while not proc.ready() and proc.failed is None and time.perf_counter() - t0 < limit:
        time.sleep(0.02)
    return time.perf_counter() - t0


def _liquid_books(scene) -> dict:
    """The liquids' GPU bytes as render/gl/memory.py books them: each tile's mesh (vertices,
    indices, edges, depth map) and every object of kind "liquids" (buffers, depth maps, the
    texture frames)."""
    from wowgrass.render.gl.memory import gpu_memory

    mem = gpu_memory(scene.ctx)
    per_tile = sum(u.get("liquids", 0) for u in mem.tiles().values())
    return {"liquid_tile_bytes": int(per_tile), "liquid_objects_bytes": int(mem.allocated().get("liquids", 0)),
            "liquid_triangles_resident": scene.liquids.triangles, "liquid_cells": scene.liquids.cells,
            "resident_tiles": len(scene.tiles), "far_tiles": sum(not t.full for t in scene.tiles.values())}


def bench_ocean(size, samples, tiles=8, frames=1200, speeds=(50.0, 150.0), png_dir=None, pace=60.0, warmup=60,
                view_frames=60, height=12.0):
    """The benchmark ocean (docs/sample.md: the sample world with an ocean layer in every chunk,
    built with ``--sea``) as ``wowgrass view`` draws it (far tiles, horizon, the warm-up before
    the first frame): the ocean view from 150 units up, liquids on and off (GPU time, the
    liquid triangles drawn, the liquids' GPU bytes), once with the viewer's merged liquid and
    once a quad a cell (as before liquids at map scale); then straight flights along the
    world's diagonal at each of ``speeds`` with the sun's shadows on and off, and at the first
    speed with shadows and without liquids (the liquids' GPU cost in flight: the GPU medians'
    difference). Bundles are baked before the flights (every core)."""
    from wowgrass.game.data import open_data
    from wowgrass.render.viewer import Toggles, Viewer
    from wowgrass.render.world.game_tiles import GameSource
    from wowgrass.render.world.streaming import tiles_centre
    from wowgrass.samples import MAP_NAME
    from wowgrass.samples.features import SEA_LEVEL

    root, built, baked = _sea_world(tiles)
    data = open_data(root)
    target = create_offscreen_target(size, samples)
    progs = make_programs(target.ctx, alpha_to_coverage=target.samples > 0)
    out = {"world": f"{tiles}x{tiles}", "sea_level": SEA_LEVEL, "world_build_s": built, "bake_s": baked,
           "size": list(size), "samples": target.samples}
    src0 = GameSource(data, MAP_NAME)
    wdl = src0.load_horizon()
    cx, cy = tiles_centre(src0.tiles)
    # the ocean view: from the world's centre, 150 units over the sea, looking along the diagonal
    for mode in ("merged", "per_cell"):
        src = GameSource(data, MAP_NAME)
        src.liquid_merge = mode == "merged"
        scene = _ocean_scene(target, progs, src, wdl)
        cam = Camera(position=np.array([cx - 300.0, cy - 300.0, 0.0]))
        scene.update(cam.position, block=True, block_far=True)
        g = scene.ground_height(float(cam.position[0]), float(cam.position[1])) or 0.0
        cam.position[2] = max(g, SEA_LEVEL) + 150.0
        cam.yaw, cam.pitch = math.radians(45.0), math.radians(-12.0)
        v = Viewer(target, scene, cam, Toggles())
        v.warm_up()
        r = out[f"view_{mode}"] = {"camera": [round(float(c), 1) for c in cam.position]}
        for on in (True, False):
            v.toggles = Toggles(liquids=on)
            for _ in range(WARMUP_FRAMES if on else 10):
                v.render_frame(0.0)
            r["liquids_on" if on else "liquids_off"] = time_viewer(v, target, view_frames)
            if on:
                v.toggles = Toggles(liquids=True, stats=True)
                r["liquid_triangles_drawn"] = v.render_frame(0.0).liquid_triangles
            if png_dir:
                v.render_frame(0.0)
                v.save_png(Path(png_dir) / f"ocean_view_{mode}_{'liquids' if on else 'no_liquids'}_{size[0]}x{size[1]}.png")
        r.update(_liquid_books(scene))   # after frames: the liquid buffers fill at the first draw
        on_, off = r["liquids_on"]["gpu_ms"], r["liquids_off"]["gpu_ms"]
        r["liquid_gpu_ms"] = None if on_ is None or off is None else on_ - off
        v.release()
        scene.release()
    # the flights
    src = GameSource(data, MAP_NAME)
    runs = [(sp, sh, True) for sp in speeds for sh in (True, False)] + [(speeds[0], True, False)]
    for speed, shadows, liquids in runs:
        span = frames * speed / 60.0
        start = np.array([cx - span / 2 / math.sqrt(2), cy - span / 2 / math.sqrt(2), 0.0])
        step = np.array([1.0, 1.0, 0.0]) / math.sqrt(2) * speed / 60.0
        scene = _ocean_scene(target, progs, src, wdl)
        scene.update(start, block=True)
        waited = _process_ready(scene)
        cam = Camera(position=start.copy())
        cam.yaw, cam.pitch = math.radians(45.0), math.radians(-10.0)
        g = scene.ground_height(float(start[0]), float(start[1])) or 0.0
        cam.position[2] = max(g, SEA_LEVEL) + height
        v = Viewer(target, scene, cam, Toggles(shadows=shadows, liquids=liquids))
        warm = v.warm_up()
        for _ in range(warmup):
            v.render_frame(0.0)
            target.ctx.finish()
        times, gpu, compiles, uploads = _fly(target, scene, v, cam.position.copy(), step, frames, pace=pace,
                                             height=height, floor=SEA_LEVEL)
        name = f"flight_{speed:g}_{'shadows' if shadows else 'no_shadows'}{'' if liquids else '_no_liquids'}"
        proc = scene._process
        out[name] = {"speed": speed, "shadows": shadows, "liquids": liquids, "warm_up": warm, "pace_fps": pace,
                     "tiles_in": "process" if proc is not None else "thread", "tile_process_wait_s": waited,
                     "tiles_from_process": proc.tiles if proc is not None else 0,
                     **_flight_summary(times, gpu, compiles, uploads), **_liquid_books(scene),
                     "frame_ms": [round(t, 3) for t in times]}
        if png_dir and liquids:
            v.save_png(Path(png_dir) / f"ocean_{name}_end_{size[0]}x{size[1]}.png")
        v.release()
        scene.release()
    with_l = out.get(f"flight_{speeds[0]:g}_shadows", {}).get("gpu_median_ms")
    without = out.get(f"flight_{speeds[0]:g}_shadows_no_liquids", {}).get("gpu_median_ms")
    out["flight_liquid_gpu_ms"] = None if with_l is None or without is None else with_l - without
    target.release()
    data.close()
    return out


def bench_cold_start(size, samples, tiles=6, frames=600, speed=50.0, ocean=False, warm_up=True, pace=60.0,
                     height=12.0, png_dir=None):
    """The first flight of a fresh process (run it with the driver's shader cache off: NVIDIA
    ``__GL_SHADER_DISK_CACHE=0``, Mesa ``MESA_SHADER_CACHE_DISABLE=true``): programs built at
    scene creation, the viewer's warm-up (``warm_up``; off: the control), then the flight from
    its first frame, no start-up frames. Every frame's time and what it compiled; the target: no
    frame over 4x the median. Over the --flight world (bundles baked first, so that no bake
    lands in a frame), or with ``ocean`` the sea world."""
    from wowgrass.game.data import open_data
    from wowgrass.grass.bake import bake_map
    from wowgrass.render.gl.programs import compile_log
    from wowgrass.render.viewer import Toggles, Viewer
    from wowgrass.render.world.game_tiles import GameSource
    from wowgrass.render.world.streaming import tiles_centre
    from wowgrass.samples import MAP_NAME, sample_data_path
    from wowgrass.samples.features import SEA_LEVEL

    if ocean:
        root, _built, _baked = _sea_world(tiles)
    else:
        root = sample_data_path(tiles=(tiles, tiles), jobs=4)
        bake_map(root, MAP_NAME, jobs=max(1, min(16, os.cpu_count() or 1)))
    t_start = time.perf_counter()
    data = open_data(root)
    src = GameSource(data, MAP_NAME)
    target = create_offscreen_target(size, samples)
    progs = make_programs(target.ctx, alpha_to_coverage=target.samples > 0)
    log = compile_log(target.ctx)
    scene = _ocean_scene(target, progs, src, src.load_horizon())
    cx, cy = tiles_centre(src.tiles)
    span = frames * speed / 60.0
    start = np.array([cx - span / 2 / math.sqrt(2), cy - span / 2 / math.sqrt(2), 0.0])
    step = np.array([1.0, 1.0, 0.0]) / math.sqrt(2) * speed / 60.0
    scene.update(start, block=True)
    cam = Camera(position=start.copy())
    cam.yaw, cam.pitch = math.radians(45.0), math.radians(-10.0)
    v = Viewer(target, scene, cam, Toggles(shadows=True))
    at_creation = len(log)
    warm = v.warm_up() if warm_up else None
    ready = (time.perf_counter() - t_start) * 1000.0
    times, gpu, compiles, uploads = _fly(target, scene, v, start, step, frames, pace=pace, height=height,
                                         floor=SEA_LEVEL if ocean else None)
    out = {"world": f"{tiles}x{tiles}{' sea' if ocean else ''}", "speed": speed, "warm_up": warm,
           "programs_at_scene_creation": at_creation, "programs_total": len(log), "ready_ms": ready,
           "env": {k: os.environ.get(k) for k in ("__GL_SHADER_DISK_CACHE", "MESA_SHADER_CACHE_DISABLE")},
           **_flight_summary(times, gpu, compiles, uploads), "frame_ms": [round(t, 3) for t in times]}
    if png_dir:
        v.save_png(Path(png_dir) / f"cold_start_end_{size[0]}x{size[1]}.png")
    v.release()
    scene.release()
    target.release()
    data.close()
    return out


DEMO_CAMERA, DEMO_TARGET = (-28.0, -38.0, 71.0), (-62.0, -95.0, 58.0)   # make demo's view: the lake and the house


def bench_water(size, frames, samples, png_dir=None):
    """The sample zone's make-demo view (the lake on the left, the house on the right, grass in
    front; the sun's shadows on, as the viewer's default) with liquids and WMOs on, then without
    them, then each alone: the cost of water and the building, as GPU and wall ms and their
    difference (the target: within 1.0 ms at 1920x1080 on the H200). Also the view from beside
    the house (its shadow, the basin, the interior through the door) and over the lake."""
    from wowgrass.render.app import DataOptions, open_source
    from wowgrass.render.viewer import Toggles, Viewer
    from wowgrass.render.world.firstframe import default_camera
    from wowgrass.render.world.streaming import Scene
    from wowgrass.samples.heights import SampleTerrain

    data, src = open_source(DataOptions())
    target = create_offscreen_target(size, samples)
    progs = make_programs(target.ctx, alpha_to_coverage=target.samples > 0)
    scene = Scene(target.ctx, progs, src)
    terrain = SampleTerrain((2, 2), 0)
    hx, hy = terrain.house_xy
    lx, ly = terrain.lake_xy
    views = (("demo", DEMO_CAMERA, DEMO_TARGET),
             ("house", (hx + 16.0, hy + 8.0, terrain.house_z + 5.0), (hx, hy, terrain.house_z + 2.0)),
             ("lake", (lx + 40.0, ly + 10.0, terrain.lake_level + 9.0), (lx, ly, terrain.lake_level)))
    results = {}
    for name, cam_at, look in views:
        cam = default_camera(scene, src, camera=cam_at, target=look)
        scene.update(cam.position, block=True)
        v = Viewer(target, scene, cam, Toggles())
        # start-up apart, as in the flight: programs finish compiling at their first draw and the
        # GPU's clocks come up (the H200's first view with both on: one frame of 22 ms GPU time)
        for _ in range(WARMUP_FRAMES):
            v.render_frame(0.0)
        target.ctx.finish()
        r = results[name] = {}
        for label, tg in (("both", {}), ("none", {"liquids": False, "wmos": False}),
                          ("liquids_only", {"wmos": False}), ("wmos_only", {"liquids": False})):
            v.toggles = Toggles(**tg)
            r[label] = time_viewer(v, target, frames)
            if png_dir and label in ("both", "none"):
                v.render_frame(0.0)
                v.save_png(Path(png_dir) / f"water_{name}_{label}_{size[0]}x{size[1]}.png")
        v.toggles = Toggles(stats=True)
        st = v.render_frame(0.0)
        r["drawn"] = {"wmo_instances": st.wmo_instances, "liquid_triangles": st.liquid_triangles,
                      "liquid_cells": scene.liquids.cells, "wmo_placements": scene.wmos.placement_count,
                      "camera": [round(float(c), 2) for c in cam.position]}
        for key in ("gpu_ms", "wall_ms"):
            both, none = r["both"][key], r["none"][key]
            r[f"{key}_added"] = None if both is None or none is None else both - none
    scene.release()
    target.release()
    data.close()
    return results


class TerrainOnly:
    """A tile source serving only terrain (no bake, no models): terrain figures alone."""

    def __init__(self, src):
        self.src, self.tiles = src, src.tiles

    def load_tile(self, col, row):
        return {**self.src.load_terrain(col, row), "grass": {}, "doodads": {}}

    def load_model(self, path):
        return None


def terrain_triangles(scene, v):
    """Triangles the terrain's compute pass chose for the viewer's last frame (None without it)."""
    return scene.terrain.read_stats(v.views[0])["triangles"] if scene.terrain.indirect else None


def bench_terrain(size, samples, tiles=6, frames=60, png_dir=None):
    """Terrain LOD over a ``tiles`` x ``tiles`` sample world, terrain alone: three views (the far
    view from a corner 260 units up, eye height in the middle, a flight 500 up), LOD on and off
    (GPU ms, triangles the compute pass chose), and the CPU per frame as the resident set grows
    (1, 9, then all tiles): one dispatch and one multi-draw whatever the number of tiles (the
    CPU figure on llvmpipe includes its software vertex work). PNGs of the far view, normal and in
    the LOD debug colours."""
    from wowgrass.game.data import open_data
    from wowgrass.render.constants import TERRAIN_REACH, TILE_SIZE
    from wowgrass.render.world.streaming import Scene, tiles_centre
    from wowgrass.render.world.game_tiles import GameSource
    from wowgrass.render.viewer import Toggles, Viewer
    from wowgrass.samples import MAP_NAME, sample_data_path

    root = sample_data_path(tiles=(tiles, tiles), jobs=4)
    data = open_data(root)
    src = TerrainOnly(GameSource(data, MAP_NAME))
    target = create_offscreen_target(size, samples)
    progs = make_programs(target.ctx, alpha_to_coverage=target.samples > 0)
    cx, cy = tiles_centre(src.tiles)
    corner = (cx - (tiles / 2 - 0.4) * TILE_SIZE, cy + (tiles / 2 - 0.4) * TILE_SIZE)
    results = {}
    scene = Scene(target.ctx, progs, src, reach=TERRAIN_REACH * 2, threaded=False)
    scene.update((cx, cy, 0.0), block=True)
    ts = scene.terrain
    for name, (x, y, up, target_xyz) in {
            "far_corner_260": (corner[0], corner[1], 260.0, (cx, cy, 0.0)),
            "eye_middle": (cx + 40.0, cy - 30.0, 1.7, None),
            "flight_500": (cx - 600.0, cy + 200.0, 500.0, (cx + 400.0, cy - 100.0, 0.0))}.items():
        g = scene.ground_height(x, y) or 0.0
        cam = Camera(position=np.array([x, y, g + up]))
        if target_xyz is None:
            cam.yaw, cam.pitch = math.radians(30.0), math.radians(-6.0)
        else:
            cam.look_at(target_xyz)
        v = Viewer(target, scene, cam, Toggles(grass=False, doodads=False))
        for lod in (True, False):
            ts.lod.enabled = lod
            r = time_viewer(v, target, frames)
            v.render_frame(0.0)
            r["triangles"] = terrain_triangles(scene, v)
            r["resident_tiles"] = len(scene.tiles)
            results[f"{name}_lod_{'on' if lod else 'off'}"] = r
        ts.lod.enabled = True
        if png_dir and name == "far_corner_260":
            v.render_frame(0.0)
            v.save_png(Path(png_dir) / f"terrain_far_{tiles}x{tiles}_{size[0]}x{size[1]}.png")
            v.toggles.lod_colors = True
            v.render_frame(0.0)
            v.save_png(Path(png_dir) / f"terrain_far_{tiles}x{tiles}_{size[0]}x{size[1]}_lod_colors.png")
            v.toggles.lod_colors = False
    scene.release()
    for n in (1, 3):  # the CPU per frame with 1 and 9 resident tiles (all tiles: the views above)
        keys = [t for t in src.tiles if abs(t[0] - src.tiles[0][0] - tiles // 2) < n / 2 + 0.5
                and abs(t[1] - src.tiles[0][1] - tiles // 2) < n / 2 + 0.5][: n * n]
        sub = TerrainOnly(GameSource(data, MAP_NAME, tiles=keys))
        scene = Scene(target.ctx, progs, sub, reach=TERRAIN_REACH * 2, threaded=False)
        scx, scy = tiles_centre(keys)
        scene.update((scx, scy, 0.0), block=True)
        cam = Camera(position=np.array([scx, scy, (scene.ground_height(scx, scy) or 0.0) + 1.7]))
        cam.yaw, cam.pitch = math.radians(30.0), math.radians(-6.0)
        v = Viewer(target, scene, cam, Toggles(grass=False, doodads=False))
        r = time_viewer(v, target, frames)
        v.render_frame(0.0)
        r["triangles"] = terrain_triangles(scene, v)
        r["resident_tiles"] = len(scene.tiles)
        results[f"eye_{len(keys)}_tiles"] = r
        scene.release()
    target.release()
    data.close()
    return results


def bench_horizon(size, samples, tiles=16, height=600.0, frames=60, png_dir=None):
    """The horizon (render/sources/horizon.py) over a ``tiles`` x ``tiles`` sample world from a
    flight ``height`` above the ground at its south-west quarter, looking north-east across it:
    the view with the map's WDL drawn beyond the far tiles (the fog opening to the horizon's
    reach) and without it (the fog closing at the far tiles' 3200 units), timed as the viewer
    draws them (shadows on), with the GPU bytes and the PNG of each."""
    from wowgrass.game.data import open_data
    from wowgrass.render.constants import TILE_SIZE
    from wowgrass.render.viewer import Toggles, Viewer
    from wowgrass.render.world.game_tiles import GameSource
    from wowgrass.render.world.streaming import Scene, tiles_centre
    from wowgrass.samples import MAP_NAME, sample_data_path

    t0 = time.perf_counter()
    # a 16x16 world is ~8 minutes of one core's work the first time: every core the machine has
    root = sample_data_path(tiles=(tiles, tiles), jobs=max(1, min(16, os.cpu_count() or 1)))
    built = time.perf_counter() - t0
    data = open_data(root)
    src = GameSource(data, MAP_NAME)
    wdl = src.load_horizon()
    target = create_offscreen_target(size, samples)
    progs = make_programs(target.ctx, alpha_to_coverage=target.samples > 0)
    cx, cy = tiles_centre(src.tiles)
    x, y = cx - (tiles / 4 + 0.3) * TILE_SIZE, cy + (tiles / 4 + 0.3) * TILE_SIZE  # the south-west quarter
    scene = Scene(target.ctx, progs, src, terrain_reach=3200.0, horizon=wdl)
    t0 = time.perf_counter()
    scene.update((x, y, 0.0), block=True, block_far=True)
    load = time.perf_counter() - t0
    cam = Camera(position=np.array([x, y, (scene.ground_height(x, y) or 0.0) + height]))
    cam.yaw, cam.pitch = math.radians(-45.0), math.radians(-6.0)  # north-east, a little down
    v = Viewer(target, scene, cam, Toggles())
    results = {"world": f"{tiles}x{tiles}", "world_build_s": built, "load_s": load, "height": height,
               "camera": [float(c) for c in cam.position], "wdl_tiles": len(wdl) if wdl is not None else 0,
               "resident_tiles": len(scene.tiles),
               "far_tiles": sum(not t.full for t in scene.tiles.values()), "gpu_memory": scene.memory_report()}
    for on in (True, False):
        v.toggles.horizon = on
        r = time_viewer(v, target, frames)
        v.toggles.stats = True
        st = v.render_frame(0.0)
        v.toggles.stats = False
        r.update(fog_end=float(v.last_frame.fog[1]), triangles_with_terrain_lod=st.triangles,
                 horizon_triangles=scene.horizon.triangles if on and scene.horizon is not None else 0)
        if png_dir:
            name = f"horizon_{'on' if on else 'off'}_{tiles}x{tiles}_{size[0]}x{size[1]}.png"
            v.save_png(Path(png_dir) / name)
            r["png"] = name
        results["on" if on else "off"] = r
    v.release()
    scene.release()
    target.release()
    data.close()
    return results


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="640x360", help="frame size WxH (default 640x360; 1920x1080 on a GPU)")
    ap.add_argument("--counts", default="100000,1000000,4000000")
    ap.add_argument("--frames", type=int, default=5)
    ap.add_argument("--sample-frames", type=int, default=None, help="frames per sample-zone view (default: --frames)")
    ap.add_argument("--layout-counts", default="", help="counts for the no-culling layout runs (default: none)")
    ap.add_argument("--probe-count", type=int, default=None,
                    help="resident count of the cliff probes (default: 16M when --counts has it, else none; 0: none)")
    ap.add_argument("--timer-lag", type=int, default=2,
                    help="frames in flight in the field runs (0: no timer queries, no bound)")
    ap.add_argument("--timer", choices=("fence", "query"), default="fence",
                    help="field runs: bound frames in flight by fences and read finished queries (fence), or "
                         "read queries --timer-lag frames late, blocking (query: the older way)")
    ap.add_argument("--no-check", action="store_true",
                    help="skip comparing the GPU's visible set with the numpy reference (up to 4M resident)")
    ap.add_argument("--paths", default="gpu,cpu", help="field runs: culling paths to measure (gpu, cpu)")
    ap.add_argument("--flight", action="store_true", help="fly across a 6x6 sample world at 50 units/s")
    ap.add_argument("--flight-tiles", type=int, default=6, help="sample world size of --flight (NxN tiles)")
    ap.add_argument("--flight-shadows", action="store_true",
                    help="--flight also once more with the sun's shadow pass on (bundles cached)")
    ap.add_argument("--flight-frames", type=int, default=1200, help="frames of --flight (at 60 fps)")
    ap.add_argument("--flight-pace", type=float, default=60.0,
                    help="frames of --flight start at this rate in real time, as with vsync (0: as fast as possible)")
    ap.add_argument("--flight-warmup", type=int, default=60,
                    help="frames of --flight drawn at the start point before it, timed apart (start-up: program "
                         "compilation at first draw, GPU clocks coming up)")
    ap.add_argument("--ocean", action="store_true",
                    help="with --flight: the benchmark ocean instead (a --ocean-tiles sample world with a sea): the ocean "
                         "view (liquid triangles, GPU bytes, GPU cost; merged and a quad a cell) and flights at "
                         "--flight-speeds with shadows on and off; with --cold-start: its world")
    ap.add_argument("--ocean-tiles", type=int, default=8, help="sample world size of --ocean (NxN tiles)")
    ap.add_argument("--tiles-in", choices=("process", "thread"), default="process",
                    help="--ocean, --cold-start: flights prepare tiles in a tile process (as a window does) or in "
                         "the scene's worker thread")
    ap.add_argument("--flight-speeds", default="50,150", help="--ocean: flight speeds (units/s)")
    ap.add_argument("--cold-start", action="store_true",
                    help="the first flight of this process, every frame timed (run with the driver's shader cache off)")
    ap.add_argument("--no-warm-up", action="store_true", help="--cold-start without the viewer's warm-up (the control)")
    ap.add_argument("--out", help="a folder: --json OUT/render.json and --png-dir OUT unless given")
    ap.add_argument("--samples", type=int, default=4, help="MSAA samples of the sample-zone run")
    ap.add_argument("--horizon", action="store_true",
                    help="the WDL horizon over a --horizon-tiles sample world from a flight height, on and off "
                         "(frame times, GPU bytes, PNGs in --png-dir)")
    ap.add_argument("--horizon-tiles", type=int, default=16, help="sample world size of --horizon (NxN tiles)")
    ap.add_argument("--horizon-height", type=float, default=600.0, help="--horizon: the camera's height above the ground")
    ap.add_argument("--water", action="store_true",
                    help="the sample zone's lake and house: make demo's view (and two closer ones) with liquids and "
                         "WMOs on and off; with --flight also a cached flight with them off")
    ap.add_argument("--terrain", action="store_true",
                    help="terrain LOD figures over a --terrain-tiles sample world (far view, LOD on/off, CPU vs tiles)")
    ap.add_argument("--terrain-tiles", type=int, default=6, help="sample world size of --terrain (NxN tiles)")
    ap.add_argument("--grid", action="store_true",
                    help="also the camera-grid grass path against the instanced one (bench_grid.py: the --counts "
                         "fields and the sample zone; frames and wind sequences into --png-dir)")
    ap.add_argument("--no-sample", action="store_true", help="skip the sample-world zone")
    ap.add_argument("--variants", action="store_true",
                    help="also time instance-attribute variants and sample-zone settings (MSAA, anisotropy)")
    ap.add_argument("--profile", action="store_true", help="cProfile the sample zone's grass view (CPU per call)")
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--png-dir", help="write sample-zone frames here")
    a = ap.parse_args(argv)
    TILES_IN["where"] = a.tiles_in
    if a.out:
        a.json = a.json or str(Path(a.out) / "render.json")
        a.png_dir = a.png_dir or a.out
    w, h = (int(v) for v in a.size.lower().split("x"))
    if a.png_dir:
        Path(a.png_dir).mkdir(parents=True, exist_ok=True)
    counts = [int(c) for c in a.counts.split(",") if c]
    layout_counts = [int(c) for c in a.layout_counts.split(",") if c]
    global TIMER_LAG, TIMER_FENCES, CHECK
    TIMER_LAG, TIMER_FENCES, CHECK = a.timer_lag, a.timer == "fence", not a.no_check
    if a.probe_count is None:
        a.probe_count = 16_000_000 if 16_000_000 in counts else 0

    if a.cold_start:  # first, before this process builds any program
        print(f"cold-start flight ({'ocean ' + str(a.ocean_tiles) if a.ocean else 'sample ' + str(a.flight_tiles)}"
              f"x world, {w}x{h}, MSAA {a.samples}x, shadows, warm-up {'off' if a.no_warm_up else 'on'}; shader caches: "
              f"__GL_SHADER_DISK_CACHE={os.environ.get('__GL_SHADER_DISK_CACHE')} "
              f"MESA_SHADER_CACHE_DISABLE={os.environ.get('MESA_SHADER_CACHE_DISABLE')}):", flush=True)
        cs = bench_cold_start((w, h), a.samples, a.ocean_tiles if a.ocean else a.flight_tiles, a.flight_frames,
                              float(a.flight_speeds.split(",")[0]), ocean=a.ocean, warm_up=not a.no_warm_up,
                              pace=a.flight_pace, png_dir=a.png_dir)
        wu = cs["warm_up"]
        print(f"  ready after {cs['ready_ms']:.0f} ms ({cs['programs_at_scene_creation']} programs at scene creation"
              + (f", warm-up {wu['programs_compiled']} more in {wu['ms']:.0f} ms" if wu else ", no warm-up") + ")")
        print(f"  median {cs['median_ms']:.2f} ms  p99 {cs['p99_ms']:.2f} ({cs['p99_x']:.2f}x)  max {cs['max_ms']:.2f} ms "
              f"({cs['max_x']:.2f}x, frame {cs['slowest_frame']})  over 4x median: {cs['frames_over_4x_median']} of "
              f"{cs['frames']}  programs compiled in frames: {cs['programs_compiled_in_frames']} "
              f"(frames {cs['frames_that_compiled'][:10]})", flush=True)
        if a.json:
            Path(a.json).parent.mkdir(parents=True, exist_ok=True)
            Path(a.json).with_name(Path(a.json).stem + "_cold_start.json").write_text(json.dumps(cs, indent=2))

    target = create_offscreen_target((w, h), samples=0)
    ctx = target.ctx
    info = {"renderer": ctx.info["GL_RENDERER"], "version": ctx.info["GL_VERSION"], "size": [w, h],
            "frames": a.frames, "max_ssbo_bytes": ctx.info.get("GL_MAX_SHADER_STORAGE_BLOCK_SIZE")}
    print(f"renderer: {info['renderer']} | GL {info['version']} | {w}x{h} | {a.frames} frames per run | "
          f"max SSBO {info['max_ssbo_bytes']} bytes", flush=True)
    progs = {lay: make_programs(ctx, instance_layout=lay) for lay in ("16", "16p", "mat4")}
    mesh = GpuMesh(ctx, clump("ref18"))
    out = {"info": info, "gpu": [], "cpu": [], "probes": [], "layout": [], "sample": None, "flight": None,
           "horizon": None, "water": None, "ocean": None, "cold_start": None}

    def save():  # after every section: a run cut short still leaves its figures
        if a.json:
            Path(a.json).parent.mkdir(parents=True, exist_ok=True)
            Path(a.json).write_text(json.dumps(out, indent=2))
    settings = GrassSettings()
    hdr = (f"{'resident':>11} {'drawn':>8} {'draws':>6} {'cpu ms':>8} {'cpu max':>8} {'cpu sub':>8} {'gpu ms':>8} "
           f"{'gpu mean':>8} {'gpu max':>8} {'wall ms':>8} {'finish':>8} {'wall cold':>9} {'cpu thr':>8}")

    def row(n, r):
        return (f"{n:>11,} {r['submitted']:>8,} {r['draw_calls']:>6} {r['cpu_ms']:>8.3f} {r['cpu_ms_max']:>8.3f} "
                f"{r['cpu_submit_ms']:>8.3f} {r['gpu_ms']:>8.3f} {r['gpu_ms_mean']:>8.3f} {r['gpu_ms_max']:>8.3f} {r['wall_ms']:>8.3f} "
                f"{r['finish_ms_median']:>8.3f} {r['wall_ms_cold']:>9.3f} {r['cpu_thread_ms']:>8.3f}")

    if counts:  # the process's first field run had 2.5x the CPU time of the later ones (0.16 against
        # 0.06 ms on the H200): a throwaway run first, so that the first timed one is not the cold one
        w_inst = field_instances(min(counts))
        for path in a.paths.split(","):
            if path in ("gpu", "cpu") and (path == "cpu" or ctx.version_code >= 430):
                run_field(ctx, target, progs, mesh, w_inst, path=path, frames=20, cam=eye_camera(w / h),
                          settings=settings)
        del w_inst
    for path, title in (("gpu", "GPU-driven culling (compute pass: groups, then instances, LOD rings; indirect)"),
                        ("cpu", "CPU per-chunk culling (the fallback; issue 8's viewer path)")):
        if path not in a.paths.split(","):
            continue
        if path == "gpu" and ctx.version_code < 430:
            print("\nno OpenGL 4.3 here: no GPU-driven culling")
            continue
        print(f"\n{title}, eye height, 0.35 inst/unit^2:")
        print(hdr + ("  tested on the GPU / kept per ring" if path == "gpu" else ""))
        for n in counts:
            inst = field_instances(n)
            r = run_field(ctx, target, progs, mesh, inst, path=path, frames=a.frames, cam=eye_camera(w / h),
                          settings=settings)
            r["resident"] = n
            out[path].append(r)
            extra = (f"  {r['gpu_tested']:,} / {'/'.join(f'{k:,}' for k in r['kept_per_ring'])}"
                     + (f"  vs reference: {r['check']['missing']} missing, {r['check']['extra']} extra"
                        if "check" in r else "")) if path == "gpu" else ""
            print(row(n, r) + extra, flush=True)
            del inst
            save()
    if a.probe_count:
        n = a.probe_count
        print(f"\nthe 4M -> 16M cliff, probed at {n:,} resident (same camera, same drawn set):")
        print(f"{'probe':>28} " + hdr)
        probes = (("giant buffer, chunk order", "cpu", False, 0),
                  ("giant buffer, near first", "cpu", True, 0),
                  ("1M-instance buffers", "cpu", False, 1_000_000),
                  ("GPU path (compacted)", "gpu", False, 0))
        for name, path, near_first, split in probes:
            if path == "gpu" and ctx.version_code < 430:
                continue
            inst = field_instances(n, near_first=near_first)
            r = run_field(ctx, target, progs, mesh, inst, path=path, frames=a.frames, cam=eye_camera(w / h),
                          settings=settings, split=split)
            r.update(probe=name, resident=n)
            out["probes"].append(r)
            print(f"{name:>28} " + row(n, r), flush=True)
            del inst
            save()

    everything = GrassSettings(fade_start=1e9, draw_distance=2e9)
    # two views of the same instances: the whole field on screen from above (every clump lands
    # a few pixels; raster-bound, a cost both layouts share) and eye height (most clumps are
    # clipped after the vertex stage, so instance fetch and vertex work dominate)
    for kind, view in (("ref18", "overview"), ("ref18", "eye"), ("indexed12", "overview")) if layout_counts else ():
        m = mesh if kind == "ref18" else GpuMesh(ctx, clump(kind))
        print(f"\nno culling, every instance drawn (one instanced draw), clump {kind}, {view} camera: "
              "16-byte instances (one 4u4 attribute) vs the grass reference's 64-byte mat4")
        print(f"{'instances':>10} {'16B gpu':>9} {'16B wall':>9} {'64B gpu':>9} {'64B wall':>9} {'64/16 gpu':>10}"
              f" {'cpu16 ms':>9}")
        for n in layout_counts:
            inst = field_instances(n)
            cam = overview_camera(n, w / h) if view == "overview" else eye_camera(w / h)
            r16 = run_field(ctx, target, progs, m, inst, layout="16p", cull=False, frames=a.frames, cam=cam,
                            settings=everything)
            r64 = run_field(ctx, target, progs, m, inst, layout="mat4", cull=False, frames=a.frames, cam=cam,
                            settings=everything)
            ratio = r64["gpu_ms"] / r16["gpu_ms"] if r16["gpu_ms"] > 0 else float("nan")
            out["layout"].append({"clump": kind, "view": view, "instances": n, "b16": r16, "b64": r64,
                                  "ratio_gpu": ratio})
            print(f"{n:>10,} {r16['gpu_ms']:>9.3f} {r16['wall_ms']:>9.2f} {r64['gpu_ms']:>9.3f} "
                  f"{r64['wall_ms']:>9.2f} {ratio:>9.2f}x {r16['cpu_ms']:>9.3f}")
        if m is not mesh:
            m.release()
    if a.variants:
        print("\nlayout variants, no culling, clump ref18 (same instances, same bytes for 16 and 16p):")
        for n in layout_counts:
            inst = field_instances(n)
            cam = overview_camera(n, w / h)
            row = []
            for lay in ("16", "16p", "mat4"):
                r = run_field(ctx, target, progs, mesh, inst, layout=lay, cull=False, frames=a.frames, cam=cam,
                              settings=everything)
                out.setdefault("variants", []).append({"instances": n, "layout": lay, **r})
                row.append(f"{lay}: gpu {r['gpu_ms']:.3f} ms")
            print(f"{n:>10,}  " + "   ".join(row))
    mesh.release()
    target.release()

    if a.variants and not a.no_sample:
        import wowgrass.render.sources.terrain_arenas as terrain_mod

        print(f"\nsample zone variants at {w}x{h} (msaa samples, terrain anisotropy, grass layout):")
        for msaa, aniso, lay in ((4, 8.0, "16p"), (4, 2.0, "16p"), (4, 1.0, "16p"), (4, 4.0, "16"), (0, 4.0, "16p")):
            terrain_mod.ANISOTROPY = aniso
            s = bench_sample((w, h), a.frames, None, msaa, layout=lay)
            out.setdefault("sample_variants", []).append({"msaa": msaa, "aniso": aniso, "layout": lay, **s})
            print(f"  msaa {msaa} aniso {aniso:g} layout {lay:>3}: " + "   ".join(
                f"{k} gpu {r['gpu_ms']:.3f} cpu {r['cpu_ms']:.3f} wall {r['wall_ms']:.2f}" for k, r in s.items()))
        terrain_mod.ANISOTROPY = 4.0

    if not a.no_sample:
        print(f"\nsample world zone at {w}x{h} (terrain + doodads + grass, MSAA {a.samples}x, alpha to coverage):")
        sf = a.sample_frames or a.frames
        s = bench_sample((w, h), sf, a.png_dir, a.samples, parts=True, profile=a.profile)
        out["sample"] = s
        save()
        # the first sample run after the big fields is sometimes slow to settle: time it again
        s2 = bench_sample((w, h), sf, None, a.samples)
        for k in s2:
            s[k]["repeat"] = {"gpu_ms": s2[k]["gpu_ms"], "cpu_ms": s2[k]["cpu_ms"], "wall_ms": s2[k]["wall_ms"]}
        fmt = lambda v: f"{v:.3f}" if v is not None else "n/a"  # noqa: E731
        print(f"  ({sf} frames a view; cpu/gpu medians, wall = total / frames)")
        for name, r in s.items():
            if name.startswith("only_") or name.startswith("passes_"):
                what = ("the other parts off" if name.startswith("only_")
                        else {"split": "split screen, shadows off",
                              "split_shadows": "split screen, shadows on"}[name[7:]])
                sub = f", grass instances submitted {r['grass_submitted']:,}" if r["grass_submitted"] else ""
                print(f"  {name:<24} cpu {r['cpu_ms']:.3f} ms (submit {r['cpu_submit_ms']:.3f})  gpu {fmt(r['gpu_ms'])} ms"
                      f"  wall {r['wall_ms']:.2f} ms/frame  (grass view, {what}{sub})")
                continue
            rep = r["repeat"]
            print(f"  {name:<24} cpu {r['cpu_ms']:.3f} ms (submit {r['cpu_submit_ms']:.3f})  gpu {fmt(r['gpu_ms'])} ms  wall {r['wall_ms']:.2f} ms/frame"
                  f"  (max cpu {r['cpu_ms_max']:.3f} gpu {fmt(r['gpu_ms_max'])})  draws {r['draw_calls']}  "
                  f"camera {r['camera']} yaw/pitch {r['yaw_pitch_deg']} shadows {'on' if r['shadows'] else 'off'}  "
                  f"grass drawn {r['grass_drawn']:,} ({r['grass_culling']}) of {r['resident']:,} resident  "
                  f"triangles (non-grass) {r['triangles']:,}"
                  + f"  | again: cpu {rep['cpu_ms']:.3f} gpu {fmt(rep['gpu_ms'])} wall {rep['wall_ms']:.2f}"
                  + (f"  | vs reference: {r['check']['missing']} missing, {r['check']['extra']} extra of "
                     f"{r['check']['reference']:,}" if "check" in r else ""))
    if a.water:
        print(f"\nthe sample zone's lake and house at {w}x{h}, MSAA {a.samples}x, shadows on "
              f"(liquids and WMOs on vs off):")
        wr = out["water"] = bench_water((w, h), a.sample_frames or a.frames, a.samples, a.png_dir)
        fmt = lambda v: f"{v:.3f}" if v is not None else "n/a"  # noqa: E731
        for name, r in wr.items():
            d = r["drawn"]
            print(f"  {name:<6} " + "  ".join(f"{k} gpu {fmt(r[k]['gpu_ms'])} wall {r[k]['wall_ms']:.3f}"
                                              for k in ("both", "none", "liquids_only", "wmos_only"))
                  + f"  | added: gpu {fmt(r['gpu_ms_added'])} ms, wall {fmt(r['wall_ms_added'])} ms"
                  + f"  (wmo placements drawn {d['wmo_instances']}, liquid triangles {d['liquid_triangles']:,},"
                    f" camera {d['camera']})")
        save()
    if a.cold_start:
        out["cold_start"] = cs
    if a.flight and a.ocean:
        speeds = tuple(float(x) for x in a.flight_speeds.split(",") if x)
        print(f"\nthe benchmark ocean: a {a.ocean_tiles}x{a.ocean_tiles} sample world with a sea, {w}x{h}, MSAA "
              f"{a.samples}x, as the viewer draws it (far tiles, horizon, warm-up):", flush=True)
        oc = out["ocean"] = bench_ocean((w, h), a.samples, a.ocean_tiles, a.flight_frames, speeds, a.png_dir,
                                        a.flight_pace, a.flight_warmup, max(a.frames, 10))
        save()
        fmt = lambda v: f"{v:.3f}" if v is not None else "n/a"  # noqa: E731
        print(f"  world built in {oc['world_build_s']:.1f} s, baked in {oc['bake_s']:.1f} s; sea level {oc['sea_level']:g}")
        for mode in ("merged", "per_cell"):
            r = oc[f"view_{mode}"]
            print(f"  ocean view, liquid {mode:<8}: {r['resident_tiles']} tiles ({r['far_tiles']} far), liquid triangles "
                  f"drawn {r['liquid_triangles_drawn']:,} (resident {r['liquid_triangles_resident']:,}), liquid bytes "
                  f"per tile {r['liquid_tile_bytes'] / 1e6:.2f} MB (all liquid objects {r['liquid_objects_bytes'] / 1e6:.2f}"
                  f" MB); gpu {fmt(r['liquids_on']['gpu_ms'])} ms with liquids, {fmt(r['liquids_off']['gpu_ms'])} "
                  f"without: liquids {fmt(r['liquid_gpu_ms'])} ms")
        for name, r in oc.items():
            if not name.startswith("flight_") or not isinstance(r, dict):
                continue
            print(f"  {name:<34} median {r['median_ms']:.2f} ms  p99 {r['p99_ms']:.2f} ({r['p99_x']:.2f}x)  max "
                  f"{r['max_ms']:.2f} ({r['max_x']:.2f}x)  over 4x: {r['frames_over_4x_median']}  gpu median "
                  f"{fmt(r.get('gpu_median_ms'))} ms  uploads {r['tile_uploads']}  compiled in frames "
                  f"{r['programs_compiled_in_frames']}  liquid triangles resident {r['liquid_triangles_resident']:,}"
                  f"  tiles in {r['tiles_in']} ({r['tiles_from_process']} from it)")
        print(f"  liquids' GPU cost in flight ({speeds[0]:g} u/s, shadows): {fmt(oc['flight_liquid_gpu_ms'])} ms")
    elif a.flight:
        print(f"\nflight across a {a.flight_tiles}x{a.flight_tiles} sample world at 50 units/s, {w}x{h}, "
              f"MSAA {a.samples}x, finish after every frame, "
              f"frames paced at {a.flight_pace:g} fps (0: unpaced):")
        f = out["flight"] = bench_flight((w, h), a.samples, a.flight_tiles, a.flight_frames, png_dir=a.png_dir,
                                           pace=a.flight_pace, shadows=a.flight_shadows, warmup=a.flight_warmup,
                                           water=a.water)
        for run, r in f.items():
            print(f"  {run:<14} median {r['median_ms']:.2f} ms  p99 {r['p99_ms']:.2f} ms ({r['p99_ms'] / r['median_ms']:.2f}x)"
                  f"  max {r['max_ms']:.2f} ms ({r['max_ms'] / r['median_ms']:.2f}x)  over 4x median: "
                  f"{r['frames_over_4x_median']} of {r['frames']}  tile uploads {r['tile_uploads']} (tiles the path "
                  f"brings into reach {r['tiles_expected']}, arrived {r['tiles_arrived']}, missing in reach at the "
                  f"end {len(r['missing_in_reach_end'])})  frames over 2x median {r['slow_frames']}, with an upload "
                  f"{r['slow_frames_with_upload']}; slowest frame had an upload: {r['max_ms_frame_upload']}  "
                  f"tiles resident at the end {r['resident_tiles_end']}, failed {r['tile_error_count']}"
                  + (f" (first: {next(iter(r['tile_errors'].values()))})" if r["tile_errors"] else "")
                  + (f"; {r['startup_frames']} start-up frames before it: first {r['startup_ms_first']:.1f} ms, "
                     f"slowest of the rest {r['startup_ms_max_after_first'] or float('nan'):.1f} ms"
                     if r["startup_frames"] else ""))
    if a.horizon:
        print(f"\nthe horizon over a {a.horizon_tiles}x{a.horizon_tiles} sample world, {a.horizon_height:g} units up, "
              f"{w}x{h}, MSAA {a.samples}x, shadows on:", flush=True)
        hz = out["horizon"] = bench_horizon((w, h), a.samples, a.horizon_tiles, a.horizon_height,
                                            max(a.frames, 10), png_dir=a.png_dir)
        save()
        fmt = lambda v: f"{v:.3f}" if v is not None else "n/a"  # noqa: E731
        print(f"  {hz['resident_tiles']} tiles resident ({hz['far_tiles']} far), {hz['wdl_tiles']} WDL tiles, "
              f"GPU {hz['gpu_memory']['total_bytes'] / 1e6:.1f} MB; world built in {hz['world_build_s']:.1f} s, "
              f"loaded in {hz['load_s']:.1f} s")
        for k in ("on", "off"):
            r = hz[k]
            print(f"  horizon {k:<3}  gpu {fmt(r['gpu_ms'])} ms (max {fmt(r['gpu_ms_max'])})  cpu {r['cpu_ms']:.3f} ms  "
                  f"wall {r['wall_ms']:.2f} ms/frame  fog to {r['fog_end']:.0f}  horizon triangles "
                  f"{r['horizon_triangles']:,}  draws {r['draw_calls']}" + (f"  -> {r['png']}" if "png" in r else ""))
    if a.terrain:
        print(f"\nterrain LOD over a {a.terrain_tiles}x{a.terrain_tiles} sample world (terrain alone), {w}x{h}, "
              f"MSAA {a.samples}x:")
        tr = out["terrain"] = bench_terrain((w, h), a.samples, a.terrain_tiles, a.frames, png_dir=a.png_dir)
        for name, r in tr.items():
            tris = f"{r['triangles']:,}" if r.get("triangles") is not None else "n/a"
            gpu = f"{r['gpu_ms']:.3f}" if r["gpu_ms"] is not None else "n/a"
            print(f"  {name:<22} cpu {r['cpu_ms']:.3f} ms  gpu {gpu} ms  wall {r['wall_ms']:.2f} ms  "
                  f"triangles {tris}  tiles {r['resident_tiles']}  draws {r['draw_calls']}")
    if a.grid:  # bench_grid.py builds on this module's fields: run it as its own process (no import circle)
        import subprocess
        import tempfile

        print(f"\ngrass paths: camera grid vs instanced, {w}x{h} (bench_grid.py):", flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            grid_out = a.png_dir or tmp
            subprocess.run([sys.executable, str(Path(__file__).with_name("bench_grid.py")), "--size", a.size,
                            "--counts", a.counts, "--frames", str(a.frames), "--samples", str(a.samples),
                            "--out", grid_out] + (["--no-sample"] if a.no_sample else []), check=True)
            out["grid"] = json.loads((Path(grid_out) / "grid.json").read_text())
    save()
    return out


if __name__ == "__main__":
    main()
