"""The workbench in the view (issue 40): edit to visible, the panels' CPU cost, pick time, a watched
tile's reload.

Offscreen (EGL: Mesa llvmpipe here, the NVIDIA driver on the lent H200), over the sample world or
``--data``/``--map``, the camera at ``--camera``/``--target`` (default: looking down at the densest
grass chunk of the start tile). Prints and (``--json``) writes:

* ``edit_to_visible``: an exclusion brush stroke over the densest chunk in view; frames drawn after
  the edit until the picture equals the settled one (frame 10 after it; same scene time, so wind
  and rings do not move), and the milliseconds from the call to the scene holding the new grass.
  Target: at most 2 frames.
* ``panels``: CPU milliseconds of a frame with the panels (built and submitted by Dear ImGui after
  the frame) against the same frames without; target: at most 0.3 ms more.
* ``pick``: a ray pick of the cell under 200 pixels of the lower half of the view (ground point and
  cell); target: at most 1 ms.
* ``watch``: the start tile as a loose file (``view ADT``'s way), rewritten with changed bytes
  while frames run at 60 fps pace: ms until the watcher saw it, until the view drew the tile again,
  and frame time median / max while it reloaded; targets: within 1 s, no frame over 4x the median.
* ``fly`` (``--fly``): the camera flies along the map at a 60 fps pace with an overlay on, so the
  worker processes compute the overlays of the tiles that stream in, while every frame picks
  (``--picks-per-frame`` random pixels of the lower half: ground point and cell, as the cursor
  does) and an edit burst runs (20 exclusion dabs in one second, from frame 60). Over the sample
  world's largest map (``--fly-sample 4x4``: built once, cached) and over the shared real tiles
  laid out as a map (``--fly-real``: ``WOWGRASS_REALDATA``'s continent4229.adt copied to
  ``--fly-real-tiles`` positions, its chunks' positions moved there, the real 3.3.5 tables).
  Targets: pick median <= 0.3 ms, p99 <= 0.5, max <= 1; no frame over 2x the median; edit to
  visible <= 2 frames (the frames from the dab to the scene holding its grass, + 1 to draw it).
  Also reported: frames over 2x the median (wall, and the frame thread's own CPU: the honest figure on
  a shared machine), a dab's CPU on the frame's thread (its grass is placed on the bridge's grass
  thread) and the workbench's CPU on the frame's thread each frame (before_frame's hand-overs and the
  dab), the median and the worst frame of the burst.
  ``--workers 0`` computes the overlays on the workbench's thread instead (the old way: compare).
  A frame waits for the GPU as the window does, the GIL let go (``--gpu-wait``, :func:`gpu_wait`).
  Prints an ``issue48`` JSON line per map (the figures above, their targets, met or not); parts
  mode prints ``issue48 parts`` (panels, the saved tile's reload, edit to visible, the idle pick).

    python benchmarks/bench_workbench.py                                  # here (llvmpipe)
    python benchmarks/bench_workbench.py --size 1920x1080 --json --out out/workbench   # the H200 run
    python benchmarks/bench_workbench.py --fly --skip edit,panels,pick,watch --json --out out/fly   # fly mode
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def open_view(args, files=None, camera=None, target=None, size=None):
    from wowgrass.render.app import (CameraOptions, DataOptions, LookOptions, OutputMode, OutputOptions, ViewOptions,
                                     open_scene, open_source, open_target, open_viewer)

    opts = ViewOptions(data=DataOptions(args.data, args.map, files=files), camera=CameraOptions(camera, target),
                       output=OutputOptions(size=size or args.size, file="x.png", window=False),
                       look=LookOptions(name=args.look), log=lambda s: None)
    data, src = open_source(opts.data, opts.look)
    tgt, mode = open_target(opts.output, OutputMode(False, None), lambda s: None, "bench")
    scene = open_scene(tgt, src, opts.look, lambda s: None, moving=True)
    scene.keep_grass = True  # as view does for its workbench
    viewer = open_viewer(tgt, scene, src, opts, mode)
    return data, src, tgt, scene, viewer


GPU_WAIT = {"how": "gl", "fn": None}  # --gpu-wait; the glFinish found


def gpu_wait(viewer) -> str:
    """Wait for the frame's GPU work as the window does: its ``glfw.swap_buffers`` (ctypes) lets go
    of the GIL while it waits, moderngl's ``ctx.finish()`` holds it (a Python thread then runs 1-3%
    of a llvmpipe frame's time: the workbench's threads would wait out whole frames, which no
    window makes them do). glFinish through ctypes where libOpenGL loads (``--gpu-wait gl``), else
    ``ctx.finish()``. Returns which."""
    if GPU_WAIT["how"] == "gl" and GPU_WAIT["fn"] is None:
        import ctypes

        GPU_WAIT["how"] = "moderngl"  # unless a library has it
        for name in ("libOpenGL.so.0", "libGL.so.1"):
            try:
                GPU_WAIT["fn"], GPU_WAIT["how"] = ctypes.CDLL(name).glFinish, "gl"
                break
            except (OSError, AttributeError):
                continue
    if GPU_WAIT["how"] == "gl":
        GPU_WAIT["fn"]()
        return "glFinish"
    viewer.ctx.finish()
    return "ctx.finish"


def close_view(data, tgt, scene, viewer):
    scene.release()
    viewer.release()
    tgt.release()
    data.close()


def settle(viewer, frames=6, t=0.0):
    for _ in range(frames):
        viewer.scene.update(viewer.camera.position)
        viewer.render_frame(t)
    viewer.ctx.finish()


def densest_chunk(bench, scene):
    """(tile, MCNK index, world X, Y) of the resident chunk with the most grass."""
    best = None
    for key, t in scene.tiles.items():
        if not t.full or not t.grass:
            continue
        counts = np.zeros(256, np.int64)
        for inst in t.grass.values():
            ch = t.adt.chunk_index_at(inst["pos"][:, 0], inst["pos"][:, 1])
            counts += np.bincount(ch[ch >= 0], minlength=256)
        k = int(counts.argmax())
        if best is None or counts[k] > best[0]:
            pos = t.adt.positions[k]
            best = (int(counts[k]), key, k, float(pos[0]) - 16.6667, float(pos[1]) - 16.6667)
    return best


def bench_edit(bench, viewer, out):
    """Frames from an exclusion stroke over the densest chunk to the settled picture."""
    scene = viewer.scene
    n, key, k, x, y = densest_chunk(bench, scene)
    z = scene.ground_height(x, y) or 0.0
    cam = viewer.camera
    cam.position = np.array([x + 40.0, y + 12.0, z + 35.0])
    cam.look_at((x, y, z))
    settle(viewer, 10)
    before = viewer.read_rgba()[..., :3].astype(int)
    t0 = time.perf_counter()
    bench.tools.tool, bench.tools.radius = "exclude", 12.0
    change = bench.apply_tool(x, y)   # the brush, as a click of the exclusion tool does
    applied_ms = (time.perf_counter() - t0) * 1000.0
    images = []
    for _ in range(10):
        bench.before_frame(1 / 60)  # the frame hands over the grass the bridge's grass thread made
        scene.update(cam.position)
        viewer.render_frame(0.0)
        gpu_wait(viewer)  # as the window's swap: the GIL let go while the GPU works (the read then waits for nothing)
        images.append(viewer.read_rgba()[..., :3].astype(int))
    final = images[-1]
    changed = float((np.abs(final - before).sum(-1) > 30).mean())
    frames = next((i + 1 for i, img in enumerate(images) if float((np.abs(img - final).sum(-1) > 30).mean()) < 1e-4), None)
    if out:
        from wowgrass.render.viewer import write_png

        write_png(out / "edit-before.png", before.astype(np.uint8))
        write_png(out / "edit-after.png", final.astype(np.uint8))
    return {"chunk_grass_instance_count": n, "tile": list(key), "mcnk": k,
            "changed_chunk_count": sum(len(v) for v in change.chunks.values()) if change else 0,
            "apply_ms": applied_ms, "frames_to_visible": frames, "changed_pixel_share": changed}


def bench_panels(bench, viewer, frames):
    from wowgrass.workbench.panels import Panels

    panels = Panels(bench, viewer.target)
    bench.ui = panels
    bench.toggle_overlay("sets", True)
    bench.pick_at(viewer.target.size[0] / 2, viewer.target.size[1] * 0.75)  # the Cell panel shows
    wait_idle(bench)  # its info, where the session had not read the tile, comes from the worker
    bench.before_frame(0.0)
    bench.tools.tool = "pick"
    without, with_, ui_ms, build, submit = [], [], [], [], []
    try:
        for i in range(frames * 2 + 10):
            on = i % 2 == 1
            t0 = time.perf_counter()
            viewer.scene.update(viewer.camera.position)
            viewer.render_frame(0.0)
            if on:
                viewer.target.fbo.use()
                n0 = panels.builds
                panels.draw()
                ui_ms.append(panels.cpu_ms)
                if panels.builds > n0:
                    build.append(panels.build_ms)
                submit.append(panels.submit_ms)
            cpu = (time.perf_counter() - t0) * 1000.0
            viewer.ctx.finish()  # the CPU times apart from the GPU's
            if i >= 10:
                (with_ if on else without).append(cpu)
        # the panels alone at a 60 fps pace (the scene's frames here are far slower than 60 fps, so
        # the refresh rule above builds every frame): per-frame CPU as a 60 fps window pays it
        alone = []
        for _ in range(120):
            t0 = time.perf_counter()
            viewer.target.fbo.use()
            panels.draw()
            alone.append((time.perf_counter() - t0) * 1000.0)
            viewer.ctx.finish()
            time.sleep(max(0.0, 1 / 60 - (time.perf_counter() - t0)))
    finally:
        bench.ui = None
        panels.close()
    return {"frame_count": frames, "alone_60fps_cpu_ms_mean": statistics.fmean(alone[10:]),
            "alone_60fps_cpu_ms_median": statistics.median(alone[10:]), "cpu_ms_without_median": statistics.median(without),
            "cpu_ms_with_median": statistics.median(with_),
            "panels_cpu_ms_median": statistics.median(ui_ms[5:]), "panels_cpu_ms_max": max(ui_ms[5:]),
            "widgets_cpu_ms_median": statistics.median(build[2:] or build), "gl_submit_cpu_ms_median": statistics.median(submit[5:]),
            "built_frame_share": len(build) / len(ui_ms),
            # the widgets are built again at most every REFRESH_S without input: at 60 fps
            "at_60fps_cpu_ms_estimate": statistics.median(submit[5:])
            + statistics.median(build[2:] or build) * min(1.0, 1.0 / (60 * Panels.REFRESH_S)),
            "difference_ms": statistics.median(with_) - statistics.median(without)}


def wait_idle(bench, timeout=30.0):
    """Until the workbench's thread has no job left (the overlays an edit asked for): the picks are
    then timed apart from that thread's work (it holds the GIL in numpy calls)."""
    deadline = time.monotonic() + timeout
    while not bench.idle and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)


def bench_pick(bench, viewer, count=200, seed=1):
    wait_idle(bench)
    bench.bridge.sync_ground()  # the tiles that arrived into the pick's arrays, as each frame's before_frame does
    rng = np.random.default_rng(seed)
    w, h = viewer.target.size
    times, hits = [], 0
    for _ in range(count):
        x, y = rng.uniform(0, w), rng.uniform(h * 0.5, h)
        t0 = time.perf_counter()
        p = bench.ground_at(x, y)
        ref = bench.cell_at(float(p[0]), float(p[1])) if p is not None else None
        times.append((time.perf_counter() - t0) * 1000.0)
        hits += ref is not None
    return {"pick_count": count, "hit_count": hits, "ms_median": statistics.median(times),
            "ms_p99": float(np.percentile(times, 99)), "ms_max": max(times)}


def slowest(times, parts, spike) -> dict:
    """The slowest frame from the write on: its CPU split (before_frame, scene update, render
    submit, finish) and, under ``--profile-spike``, the functions that took its time."""
    i = 30 + int(np.argmax(times[30:]))
    out = {"frame": i, "ms": times[i], "split_ms": dict(zip(("before_frame", "update", "render", "finish"), parts[i]))}
    if spike is not None:
        st = pstats.Stats(spike[2])
        rows = sorted(st.stats.items(), key=lambda kv: kv[1][3], reverse=True)[:25]
        out["profiled_frame"] = spike[1]
        out["top_cumulative"] = [f"{v[3] * 1000:.2f} ms {k[2]} ({Path(k[0]).name}:{k[1]})" for k, v in rows]
    return out


def bench_watch(args, out):
    """The start tile as a loose file, rewritten while the view runs at 60 fps pace."""
    from wowgrass.edit.adt_edit import exclude_cells
    from wowgrass.fileio import write_atomic
    from wowgrass.game.data import choose_map, open_data
    from wowgrass.game.coords import tile_centre
    from wowgrass.game.tiles import adt_game_path
    from wowgrass.grass.bake import default_data
    from wowgrass.workbench.controller import open_workbench
    from wowgrass.workbench.overlays import give_marks

    root, sample_map = default_data() if args.data is None else (args.data, args.map)
    d = open_data(root)
    map_name = choose_map(d, sample_map)
    from wowgrass.game.maps import map_tiles

    tiles = map_tiles(d, map_name).tiles
    col, row = tiles[0] if args.watch_tile is None else args.watch_tile
    gp = adt_game_path(map_name, col, row)
    raw = d.read(gp)
    d.close()
    tmp = Path(tempfile.mkdtemp(prefix="wowgrass-watch-"))
    loose = tmp / Path(gp.replace("\\", "/")).name
    loose.write_bytes(raw)
    cx, cy = tile_centre(col, row)
    args.map = map_name
    data, src, tgt, scene, viewer = open_view(args, files={gp: loose}, camera=(cx + 80, cy + 20, 0.0),
                                              target=None)
    give_marks(scene.terrain.cells)
    bench = open_workbench(viewer, scene, src, data, panels=False, watch=True, audit=False)
    bench.viewer = viewer
    bench.install(viewer, None)
    try:
        settle(viewer, 10)
        n_before = scene.tiles[(col, row)].grass_instances if (col, row) in scene.tiles else None
        mask = np.zeros((256, 8, 8), bool)
        mask[:128] = True  # half the tile's cells excluded: a real change of bytes
        new, _report = exclude_cells(raw, gp, mask)
        times, parts, spike, t_write = [], [], None, None
        t_end = None
        t0 = time.perf_counter()
        frame = 0
        while True:
            t = time.perf_counter()
            if frame == 30:
                write_atomic(loose, new)
                t_write = t
            prof = cProfile.Profile() if args.profile_spike and frame >= 30 else None
            if prof:
                prof.enable()
            bench.before_frame(1 / 60)
            t1 = time.perf_counter()
            scene.update(viewer.camera.position)
            t2 = time.perf_counter()
            viewer.render_frame(0.0)
            t3 = time.perf_counter()
            gpu_wait(viewer)
            t4 = time.perf_counter()
            if prof:
                prof.disable()
            times.append((t4 - t) * 1000.0)
            parts.append([round((b - a) * 1000.0, 3) for a, b in ((t, t1), (t1, t2), (t2, t3), (t3, t4))])
            if prof and (spike is None or times[-1] > spike[0]):
                spike = (times[-1], frame, prof)
            frame += 1
            done = bench.reloads and "drawn_s" in bench.reloads[-1]
            if done and t_end is None:
                t_end = frame + 10
            if (t_end is not None and frame >= t_end) or time.perf_counter() - t0 > args.watch_timeout:
                break
            rest = 1 / 60 - (time.perf_counter() - t)
            if rest > 0:
                time.sleep(rest)
        r = bench.reloads[-1] if bench.reloads else {}
        med = statistics.median(times)
        around = times[30:]
        if out:
            viewer.save_png(out / "watch-after.png")
        n_after = scene.tiles[(col, row)].grass_instances if (col, row) in scene.tiles else None
        return {"tile": [col, row], "event_ms": (r["t0"] - t_write) * 1000.0 if r else None,
                "grass_instance_count_before": n_before, "grass_instance_count_after": n_after,
                "seen_ms": (r["t0"] - t_write) * 1000.0 + r["seen_s"] * 1000.0 if r else None,
                "drawn_ms": (r["t0"] - t_write) * 1000.0 + r["drawn_s"] * 1000.0 if r and "drawn_s" in r else None,
                "frame_ms_median": med, "frame_ms_max_while_reloading": max(around),
                "max_over_median": max(around) / med, "frame_count": len(times),
                "slowest_frame": slowest(times, parts, spike)}
    finally:
        bench.close()
        close_view(data, tgt, scene, viewer)


def real_tiles_map(realdata: Path, out: Path, cols: int, rows: int) -> tuple[Path, str]:
    """A loose Data folder whose map ``RealTiles`` is ``cols`` x ``rows`` copies of the real
    continent4229.adt, each copy's MCNK positions moved to its tile (heights, layers, alpha maps and
    liquids as the real tile has them), with the real 3.3.5 ground-effect tables."""
    from wowgrass.edit.adt_edit import read_tile
    from wowgrass.formats.adt import TILE_SIZE

    name = "RealTiles"
    raw = (realdata / "adt" / "continent4229.adt").read_bytes()
    tile = read_tile(raw, "continent4229.adt")
    pos_at = tile.field_offsets()["doodad_mapping"].astype(np.int64) + 40  # MCNK position: 40 bytes after doodadMapping
    maps = out / "World" / "Maps" / name
    maps.mkdir(parents=True, exist_ok=True)
    c0, r0 = 30, 30
    for c in range(c0, c0 + cols):
        for r in range(r0, r0 + rows):
            buf = bytearray(raw)
            xy = np.stack([np.frombuffer(bytes(buf[o:o + 8]), "<f4") for o in pos_at]).astype(np.float64)
            xy[:, 0] -= (r - tile.row) * TILE_SIZE
            xy[:, 1] -= (c - tile.col) * TILE_SIZE
            for o, v in zip(pos_at, xy.astype("<f4")):
                buf[o:o + 8] = v.tobytes()
            (maps / f"{name}_{c}_{r}.adt").write_bytes(bytes(buf))
    dbc = out / "DBFilesClient"
    dbc.mkdir(exist_ok=True)
    for t in ("GroundEffectTexture.dbc", "GroundEffectDoodad.dbc"):
        (dbc / t).write_bytes((realdata / "dbc" / "3.3.5" / t).read_bytes())
    return out, name


def bench_fly(args, label, data_path, map_name, out):
    """The camera flies along the map's middle row while workers compute the overlays of the tiles
    streaming in, the frame picks and an edit burst runs (see the module docstring)."""
    from wowgrass.workbench.controller import open_workbench

    args.data, args.map = str(data_path), map_name
    data, src, tgt, scene, viewer = open_view(args, size=args.fly_size)
    kw = {} if args.switch_interval is None else {"switch_interval": args.switch_interval}
    bench = open_workbench(viewer, scene, src, data, panels=False, audit=False, overlays=("sets",),
                           workers=args.workers, **kw)
    bench.viewer = viewer
    try:
        tiles = list(src.tiles)
        cols = sorted({c for c, _r in tiles})
        rows = sorted({r for _c, r in tiles})
        row = rows[len(rows) // 2]
        from wowgrass.formats.adt import TILE_SIZE, ZEROPOINT

        x = ZEROPOINT - (row + 0.5) * TILE_SIZE
        y0, y1 = ZEROPOINT - (cols[0] + 0.2) * TILE_SIZE, ZEROPOINT - (cols[-1] + 0.8) * TILE_SIZE
        cam = viewer.camera
        height = {"z": None}

        def place(f):
            """Along the row, 110 yards over the ground ahead (eased, so the camera does not jump)."""
            y = y0 + (y1 - y0) * f
            g = scene.ground_height(x - 40.0, y - 120.0)
            want = (g if g is not None else (height["z"] or 0.0) - 110.0) + 110.0
            height["z"] = want if height["z"] is None else height["z"] + (want - height["z"]) * 0.1
            z = height["z"]
            cam.position = np.array([x + 60.0, y + 40.0, z])
            cam.look_at((x - 40.0, y - 120.0, z - 110.0))

        cam.position = np.array([x + 60.0, y0 + 40.0, 200.0])
        scene.update(cam.position, block=True)
        place(0.0)
        scene.update(cam.position, block=True)
        settle(viewer, 4)
        bench.before_frame(1 / 60)
        rng = np.random.default_rng(7)
        w, h = viewer.target.size
        frames, picks, dabs, parts, cpu, wb_cpu = [], [], [], [], [], []
        n = args.fly_frames
        bench.tools.radius = 8.0
        bench.choose_tool("exclude")  # a brush in hand: the session reads the tiles as they arrive (off the frame)
        import gc

        pauses, gc_t = [], {}
        if args.gc_freeze:
            gc.collect()
            gc.freeze()
        switch_s = sys.getswitchinterval()  # the workbench's (GIL_SWITCH_S) unless --switch-interval

        def on_gc(phase, info):  # the interpreter's collections: a pause every thread waits out
            if phase == "start":
                gc_t["t"] = time.perf_counter()
            elif "t" in gc_t:
                pauses.append(((time.perf_counter() - gc_t.pop("t")) * 1000.0, info.get("generation")))

        gc.callbacks.append(on_gc)
        t_start = time.perf_counter()
        shown0 = bench.overlays_shown
        bench.bridge.place_times.clear()
        for i in range(n):
            t, c = time.perf_counter(), time.thread_time()
            place(i / max(n - 1, 1))
            cb = time.thread_time()
            bench.before_frame(1 / 60)
            t1, c1 = time.perf_counter(), time.thread_time()
            frame_dab_cpu = 0.0
            for _ in range(args.picks_per_frame):
                px, py = rng.uniform(0, w), rng.uniform(h * 0.5, h)
                p0, c0 = time.perf_counter(), time.thread_time()
                p = bench.ground_at(px, py)
                ref = bench.cell_at(float(p[0]), float(p[1])) if p is not None else None
                picks.append(((time.perf_counter() - p0) * 1000.0, ref is not None, bench.overlays_shown, not bench.idle,
                              (time.thread_time() - c0) * 1000.0, bench.bridge.ground.tests, bench.bridge.ground.passes))
            t2 = time.perf_counter()
            if 60 <= i < 120 and (i - 60) % 3 == 0:  # 20 dabs in a second at 60 fps
                p = bench.ground_at(w * 0.5, h * 0.7)
                if p is not None:
                    n_applied = len(bench.edits_applied)
                    d0, dc0 = time.perf_counter(), time.thread_time()
                    change = bench.apply_tool(float(p[0]), float(p[1]))
                    dabs.append({"frame": bench.frames, "ms": (time.perf_counter() - d0) * 1000.0,
                                 "cpu_ms": (time.thread_time() - dc0) * 1000.0,
                                 "chunks": sum(len(v) for v in change.chunks.values()) if change else 0,
                                 "applied_before": n_applied, "label": change.label if change else None})
                    frame_dab_cpu = dabs[-1]["cpu_ms"]
            t3 = time.perf_counter()
            # the workbench's CPU on the frame's thread: before_frame (the hand-over) and the dab
            wb_cpu.append((c1 - cb) * 1000.0 + frame_dab_cpu)
            scene.update(cam.position)
            viewer.render_frame(time.perf_counter() - t_start)
            waited = gpu_wait(viewer)
            t4 = time.perf_counter()
            frames.append((t4 - t) * 1000.0)
            cpu.append((time.thread_time() - c) * 1000.0)
            parts.append([round((b - a) * 1000.0, 3) for a, b in ((t, t1), (t1, t2), (t2, t3), (t3, t4))])
            rest = 1 / 60 - (time.perf_counter() - t)
            if rest > 0:
                time.sleep(rest)
        gc.callbacks.remove(on_gc)
        grass_jobs = list(bench.bridge.place_times)
        if args.gc_freeze:
            gc.unfreeze()
        # edit to visible: the frame the scene got the dab's grass (edits_applied), + 1 to draw it
        applied = list(bench.edits_applied)
        to_visible = []
        for d in dabs:
            if not d["chunks"]:
                continue
            hit = next((f for lb, f in applied[d["applied_before"]:] if lb == d["label"]), None)
            to_visible.append(None if hit is None else hit - d["frame"] + 1)
        pick_ms = [p[0] for p in picks]
        busy_ms = [p[0] for p in picks if p[3]]
        med = statistics.median(frames)
        pick_share = [pt[1] for pt in parts]
        res = {"label": label, "map": map_name, "tiles": len(tiles), "size": list(viewer.target.size),
               "gpu_wait": waited,  # glFinish: the GIL let go while the GPU works, as the window's swap does
               "workers": "in-thread" if args.workers == 0 else (bench.workers.n if bench.workers else None),
               "switch_interval_s": switch_s, "gc_frozen": bool(args.gc_freeze),
               "frame_count": n, "frame_ms_median": med, "frame_ms_max": max(frames),
               "frames_over_2x_median": sum(f > 2 * med for f in frames), "max_over_median": max(frames) / med,
               "pick_count": len(pick_ms), "pick_hit_count": sum(p[1] for p in picks),
               "pick_ms_median": statistics.median(pick_ms), "pick_ms_p99": float(np.percentile(pick_ms, 99)),
               "pick_ms_max": max(pick_ms),
               # the pick thread's own CPU time: wall minus this is waiting (the GIL, or a shared machine's
               # other processes holding the cores)
               "pick_cpu_ms_median": statistics.median(p[4] for p in picks),
               "pick_cpu_ms_p99": float(np.percentile([p[4] for p in picks], 99)),
               "pick_cpu_ms_max": max(p[4] for p in picks),
               # the march's samples the pick tested one at a time, and the picks a graze finished in one numpy pass
               "pick_tests_median": statistics.median(p[5] for p in picks), "pick_tests_max": max(p[5] for p in picks),
               "pick_numpy_pass_count": sum(p[6] > 0 for p in picks),
               "picks_while_workbench_busy": len(busy_ms),
               "pick_ms_max_while_busy": max(busy_ms) if busy_ms else None,
               "pick_ms_p99_while_busy": float(np.percentile(busy_ms, 99)) if busy_ms else None,
               "overlays_done": bench.overlays_shown - shown0, "overlays_dropped": bench.overlays_dropped, "dab_count": len(dabs),
               "dab_ms_median": statistics.median([d["ms"] for d in dabs]) if dabs else None,
               "dab_ms_max": max(d["ms"] for d in dabs) if dabs else None,
               # a dab's CPU on the frame's thread (the session's edit; its grass is placed off the frame)
               "dab_cpu_ms_median": statistics.median([d["cpu_ms"] for d in dabs]) if dabs else None,
               "dab_cpu_ms_max": max(d["cpu_ms"] for d in dabs) if dabs else None,
               # the grass thread's jobs in the flight (the dabs' grass placed, merged, grouped): wall
               # against its own CPU (the rest is waiting for the GIL or a core)
               "grass_job_ms_median": statistics.median(g[0] for g in grass_jobs) if grass_jobs else None,
               "grass_job_ms_max": max((g[0] for g in grass_jobs), default=None),
               "grass_job_cpu_ms_median": statistics.median(g[1] for g in grass_jobs) if grass_jobs else None,
               "grass_job_cpu_ms_max": max((g[1] for g in grass_jobs), default=None),
               # the workbench's CPU on the frame's thread each frame: before_frame (hand-overs, mapped
               # results) and the frame's dab
               "workbench_frame_cpu_ms_median": statistics.median(wb_cpu),
               "workbench_frame_cpu_ms_max": max(wb_cpu),
               "workbench_frame_cpu_ms_max_in_burst": max(wb_cpu[60:125]) if len(wb_cpu) > 60 else None,
               # the frame's thread's own CPU (the honest figure on a shared machine: wall time there
               # counts other processes' turns on the cores)
               "frame_cpu_ms_median": statistics.median(cpu), "frame_cpu_ms_max": max(cpu),
               "frames_cpu_over_2x_median": sum(f > 2 * statistics.median(cpu) for f in cpu),
               "frames_over_2x_median_at": [i for i, f in enumerate(frames) if f > 2 * med][:20],
               "edit_to_visible_frames_max": max((v for v in to_visible if v is not None), default=None),
               "edits_not_visible": sum(v is None for v in to_visible),
               "edit_to_visible_frames": to_visible,
               "picks_ms_per_frame_median": statistics.median(pick_share),
               "gc_collections": len(pauses), "gc_pause_ms_max": max((p[0] for p in pauses), default=0.0),
               # every thread waits out a collection: the long ones (ms, generation) to set against slow frames
               "gc_pauses_over_2ms": [[round(ms, 2), gen] for ms, gen in pauses if ms > 2.0][:20],
               "slowest_picks_ms": sorted(pick_ms)[-5:],
               "slowest_frame": {"index": int(np.argmax(frames)), "ms": max(frames),
                                 "split_ms": dict(zip(("before_frame", "picks", "dab", "update_render_finish"),
                                                      parts[int(np.argmax(frames))]))}}
        if out:
            viewer.save_png(out / f"fly-{label}.png")
        return res
    finally:
        bench.close()
        close_view(data, tgt, scene, viewer)


def issue48(r) -> dict:
    """The fly run's figures issue 48 names, with their targets and whether each is met."""
    def one(value, target):
        return {"value": value, "target": target, "met": value is not None and value <= target}

    return {"map": r["label"], "size": r["size"], "workers": r["workers"],
            "pick_ms_median": one(round(r["pick_ms_median"], 4), 0.3),
            "pick_ms_p99": one(round(r["pick_ms_p99"], 4), 0.5),
            "pick_ms_max": one(round(r["pick_ms_max"], 4), 1.0),
            "frames_over_2x_median": one(r["frames_over_2x_median"], 0),
            "edit_to_visible_frames": one(r["edit_to_visible_frames_max"], 2),
            "edits_not_visible": r["edits_not_visible"],
            "pick_cpu_ms": {"median": round(r["pick_cpu_ms_median"], 4), "p99": round(r["pick_cpu_ms_p99"], 4),
                            "max": round(r["pick_cpu_ms_max"], 4)},
            "frame_ms_median": round(r["frame_ms_median"], 3)}


def print_fly(r):
    print(f"fly [{r['label']}] {r['map']} ({r['tiles']} tiles, {r['size'][0]}x{r['size'][1]}, workers {r['workers']}): "
          f"pick median {r['pick_ms_median']:.3f} ms, p99 {r['pick_ms_p99']:.3f}, max {r['pick_ms_max']:.3f} "
          f"({r['pick_count']} picks, {r['pick_hit_count']} on the ground, {r['picks_while_workbench_busy']} while the workbench had work; "
          f"targets 0.3 / 0.5 / 1; the pick's own CPU: median {r['pick_cpu_ms_median']:.3f}, p99 "
          f"{r['pick_cpu_ms_p99']:.3f}, max {r['pick_cpu_ms_max']:.3f}); frames median {r['frame_ms_median']:.1f} ms, max {r['frame_ms_max']:.1f} "
          f"= {r['max_over_median']:.2f}x, {r['frames_over_2x_median']} over 2x (target 0); "
          f"frame thread CPU median {r['frame_cpu_ms_median']:.1f} ms, max {r['frame_cpu_ms_max']:.1f}, "
          f"{r['frames_cpu_over_2x_median']} over 2x; "
          f"{r['overlays_done']} overlays computed in flight; {r['dab_count']} dabs (median "
          f"{r['dab_ms_median'] or 0:.1f} ms wall, frame-thread CPU median {r['dab_cpu_ms_median'] or 0:.2f} ms, "
          f"max {r['dab_cpu_ms_max'] or 0:.2f}; the grass thread's jobs median {r['grass_job_ms_median'] or 0:.1f} ms wall, "
          f"{r['grass_job_cpu_ms_median'] or 0:.1f} ms CPU, max {r['grass_job_ms_max'] or 0:.1f} / "
          f"{r['grass_job_cpu_ms_max'] or 0:.1f}); the workbench's frame-thread CPU a frame: median "
          f"{r['workbench_frame_cpu_ms_median']:.2f} ms, max {r['workbench_frame_cpu_ms_max']:.2f} "
          f"(in the burst {r['workbench_frame_cpu_ms_max_in_burst'] or 0:.2f}); edit to visible <= "
          f"{r['edit_to_visible_frames_max']} frame(s), {r['edits_not_visible']} not shown (target 2); the pick "
          f"tested {r['pick_tests_median']:g} of the march's samples (median; max {r['pick_tests_max']}), "
          f"{r['pick_numpy_pass_count']} pick(s) finished with a numpy pass")
    print("issue48 " + json.dumps(issue48(r)))


def main_parts(args, res, skip):
    """edit to visible, pick and panels on one view of ``--data`` (the sample world without it)."""
    from wowgrass.workbench.controller import open_workbench
    from wowgrass.workbench.overlays import give_marks

    data, src, tgt, scene, viewer = open_view(args)
    res["renderer"] = tgt.ctx.info.get("GL_RENDERER")
    give_marks(scene.terrain.cells)
    bench = open_workbench(viewer, scene, src, data, panels=False, audit=False)
    bench.viewer = viewer
    try:
        if "edit" not in skip:
            res["edit_to_visible"] = bench_edit(bench, viewer, args.out)
            e = res["edit_to_visible"]
            print(f"edit to visible: {e['frames_to_visible']} frame(s) (target <= 2); the stroke changed "
                  f"{e['changed_chunk_count']} chunk(s), its call {e['apply_ms']:.1f} ms (the grass is placed on "
                  f"the bridge's grass thread); "
                  f"{e['changed_pixel_share'] * 100:.1f}% of the picture changed")
        if "pick" not in skip:
            res["pick"] = bench_pick(bench, viewer)
            p = res["pick"]
            print(f"pick: median {p['ms_median']:.3f} ms, p99 {p['ms_p99']:.3f}, max {p['ms_max']:.3f} "
                  f"({p['hit_count']}/{p['pick_count']} on the ground; target <= 1 ms)")
        if "panels" not in skip:
            try:
                res["panels"] = bench_panels(bench, viewer, args.frames)
            except Exception as exc:  # imgui's renderer on a context it cannot use: the rest still runs
                res["panels"] = {"error": f"{type(exc).__name__}: {exc}"}
                print(f"panels: not measured ({res['panels']['error']})")
        if "panels" in res and "error" not in res["panels"]:
            p = res["panels"]
            print(f"panels: {p['panels_cpu_ms_median']:.3f} ms CPU a frame here (building the widgets "
                  f"{p['widgets_cpu_ms_median']:.3f} ms on {p['built_frame_share'] * 100:.0f}% of the frames, GL submit "
                  f"{p['gl_submit_cpu_ms_median']:.3f}; max {p['panels_cpu_ms_max']:.3f}; at 60 fps without input "
                  f"{p['at_60fps_cpu_ms_estimate']:.3f}, measured alone at 60 fps: mean "
                  f"{p['alone_60fps_cpu_ms_mean']:.3f}, median {p['alone_60fps_cpu_ms_median']:.3f}); frame "
                  f"CPU median {p['cpu_ms_without_median']:.3f} -> {p['cpu_ms_with_median']:.3f} ms "
                  f"(+{p['difference_ms']:.3f}; target <= 0.3)")
        if args.out:
            viewer.save_png(args.out / "view.png")
    finally:
        bench.close()
        close_view(data, tgt, scene, viewer)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data")
    ap.add_argument("--map")
    ap.add_argument("--look", default="default", choices=["default", "client"],
                    help="client: the clients' scatter (3.3.5 ignores noEffectDoodad: the stroke changes nothing there)")
    ap.add_argument("--size", default="960x600")
    ap.add_argument("--frames", type=int, default=40, help="frames with and without panels")
    ap.add_argument("--json", action="store_true", help="write workbench.json into --out (and print it)")
    ap.add_argument("--out", type=Path, default=None, help="folder for the JSON and PNGs")
    ap.add_argument("--watch-tile", type=lambda s: tuple(int(v) for v in s.split(",")), default=None)
    ap.add_argument("--watch-timeout", type=float, default=20.0)
    ap.add_argument("--profile-spike", action="store_true",
                    help="profile each frame after the watched write; report the slowest one's functions")
    ap.add_argument("--skip", default="", help="comma list of parts to skip: edit,panels,pick,watch")
    ap.add_argument("--fly", action="store_true", help="the fly mode over the sample map and the real tiles")
    ap.add_argument("--fly-sample", default="4x4", help="the sample world's map for --fly (tiles; built once)")
    ap.add_argument("--fly-real-tiles", default="4x4", help="copies of the real tile laid out for --fly")
    ap.add_argument("--fly-size", default=None, help="frame size of --fly (default --size)")
    ap.add_argument("--fly-frames", type=int, default=240)
    ap.add_argument("--fly-only", default="sample,real", help="which maps --fly flies: sample, real")
    ap.add_argument("--picks-per-frame", type=int, default=2)
    ap.add_argument("--gpu-wait", choices=["gl", "moderngl"], default="gl",
                    help="how a frame waits for the GPU in the fly and watch loops: gl (glFinish through ctypes, the GIL "
                    "let go as the window's swap_buffers does) or moderngl (ctx.finish, which holds the GIL: before 2026-12-07)")
    ap.add_argument("--workers", type=int, default=None, help="worker processes (0: overlays on the workbench's "
                    "thread, the old way; default: a core each but one, at most 4)")
    ap.add_argument("--switch-interval", type=float, default=None,
                    help="the GIL switch interval in seconds while the workbench is open (default: the workbench's "
                         "GIL_SWITCH_S, 0.0005; 0: Python's own, 0.005)")
    ap.add_argument("--gc-freeze", action="store_true",
                    help="gc.freeze() once the flight's scene is up (what is alive then is never scanned again)")
    args = ap.parse_args(argv)
    GPU_WAIT["how"] = args.gpu_wait
    args.size = tuple(int(v) for v in args.size.lower().split("x"))
    args.fly_size = tuple(int(v) for v in args.fly_size.lower().split("x")) if args.fly_size else args.size
    skip = set(filter(None, args.skip.split(",")))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
    res = {"size": list(args.size), "look": args.look}
    if not {"edit", "pick", "panels"} <= skip:
        main_parts(args, res, skip)
    if "watch" not in skip:
        res["watch"] = bench_watch(args, args.out)
        w = res["watch"]
        drawn = f"{w['drawn_ms']:.0f} ms" if w["drawn_ms"] is not None else "not within the timeout"
        print(f"watch: the watcher's event {w['event_ms'] or float('nan'):.0f} ms after the write, the session's "
              f"reload seen after {w['seen_ms'] or float('nan'):.0f} ms, drawn again after {drawn} (target <= 1000); "
              f"frames median {w['frame_ms_median']:.1f} ms, max while reloading {w['frame_ms_max_while_reloading']:.1f} "
              f"= {w['max_over_median']:.2f}x (target <= 4x); the tile's grass {w['grass_instance_count_before']} -> "
              f"{w['grass_instance_count_after']} instances (half its cells excluded on disk)")
    if args.fly:
        import os

        from wowgrass.samples import MAP_NAME, sample_data_path

        res["fly"] = []
        only = set(args.fly_only.split(","))
        if "sample" in only:
            st = tuple(int(v) for v in args.fly_sample.lower().split("x"))
            res["fly"].append(bench_fly(args, f"sample-{args.fly_sample}", sample_data_path(tiles=st), MAP_NAME, args.out))
            print_fly(res["fly"][-1])
            res.setdefault("issue48", []).append(issue48(res["fly"][-1]))
        real = os.environ.get("WOWGRASS_REALDATA")
        if "real" in only and real:
            ct, rt = (int(v) for v in args.fly_real_tiles.lower().split("x"))
            with tempfile.TemporaryDirectory(prefix="wowgrass-real-map-") as tmp:
                root, name = real_tiles_map(Path(real), Path(tmp), ct, rt)
                res["fly"].append(bench_fly(args, f"real-{args.fly_real_tiles}", root, name, args.out))
                print_fly(res["fly"][-1])
                res.setdefault("issue48", []).append(issue48(res["fly"][-1]))
        elif "real" in only:
            print("fly over the real tiles: not run (WOWGRASS_REALDATA is not set)")
    parts = {}
    if "panels" in res and "error" not in res["panels"]:
        parts["panels_cpu_ms_a_frame"] = {"value": round(res["panels"]["difference_ms"], 4), "target": 0.3,
                                          "met": res["panels"]["difference_ms"] <= 0.3,
                                          "alone_at_60fps_median": round(res["panels"]["alone_60fps_cpu_ms_median"], 4)}
    if "watch" in res:
        d = res["watch"]["drawn_ms"]
        parts["saved_tile_drawn_again_ms"] = {"value": None if d is None else round(d, 1), "target": 1000,
                                              "met": d is not None and d <= 1000}
    if "edit_to_visible" in res:
        f = res["edit_to_visible"]["frames_to_visible"]
        parts["edit_to_visible_frames"] = {"value": f, "target": 2, "met": f is not None and f <= 2}
    if "pick" in res:
        parts["pick_ms_idle"] = {k: round(res["pick"][f"ms_{k}"], 4) for k in ("median", "p99", "max")}
    if parts:
        res["issue48_parts"] = parts
        print("issue48 parts " + json.dumps(parts))
    if args.json:
        text = json.dumps(res, indent=2)
        if args.out:
            (args.out / "workbench.json").write_text(text)
        print(text)
    return res


if __name__ == "__main__":
    main()
