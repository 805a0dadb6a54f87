"""Benchmark: what the tile worker costs the frame's thread (the GIL), without a GPU.

The H200's ocean flights at 150 units/s have frames of 14-29 ms of CPU where the median frame has
3 ms (docs/view.md): the streaming worker parses ADTs in Python while the frame's thread records
its frame, and both need the GIL. This flies the same path over the sea world (``sample build
--sea``), 60 frames a second in real time, calling ``Scene.update`` as the viewer does, and in
place of drawing runs a fixed CPU stand-in of a frame's work (small numpy and Python calls, about
6 ms alone here); the figures are the stand-in's time and the whole frame's (from its slot's start:
the wait for the GIL after the sleep, the update and the stand-in). Run with no scene at all
(the stand-in alone: the baseline), then with tiles streaming, prepared in the scene's worker
thread (``thread``) and in a tile process (``process``, as ``wowgrass view`` does in a window),
at each switch interval asked for. A ratio near 1 is a frame thread the tiles do not slow down.

    python benchmarks/bench_stream_cpu.py [--tiles 8] [--speed 150] [--frames 600]
        [--modes thread,process] [--intervals 0.005] [--json OUT.json]

The GL context is Mesa's (llvmpipe) or the machine's; only buffer uploads touch it.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def stand_in(state: dict) -> None:
    """A frame's CPU work in miniature: many small numpy calls and Python-level bookkeeping."""
    a = state["a"]
    for _ in range(state.get("steps", 360)):
        b = a @ state["m"]
        a = np.clip(b, -1.0, 1.0)
        state["acc"] = sum(float(x) for x in a[:8, 0])
    state["a"] = a


def fly(scene, start, step, frames: int) -> tuple[list[float], list[float]]:
    """Per frame: the stand-in's time, and the frame's (from the moment its slot began, the wait
    for the GIL after the sleep, the scene's update and the stand-in)."""
    state = {"a": np.random.default_rng(0).random((64, 4)), "m": np.eye(4) * 0.99, "acc": 0.0}
    work, whole = [], []
    due = time.perf_counter()
    pos = start.copy()
    for _ in range(frames):
        now = time.perf_counter()
        slot = max(due, now)
        if now < due:
            time.sleep(due - now)
        due = max(due + 1 / 60, time.perf_counter())
        if scene is not None:
            scene.update(pos)
        t0 = time.perf_counter()
        stand_in(state)
        t1 = time.perf_counter()
        work.append((t1 - t0) * 1000.0)
        whole.append((t1 - slot) * 1000.0)
        pos = pos + step
    return work, whole


def summary(times: list[float]) -> dict:
    t = np.array(times)
    med = float(np.median(t))
    return {"median_ms": med, "p99_ms": float(np.percentile(t, 99)), "max_ms": float(t.max()),
            "p99_x": float(np.percentile(t, 99)) / med, "max_x": float(t.max()) / med}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tiles", type=int, default=8)
    ap.add_argument("--speed", type=float, default=150.0)
    ap.add_argument("--frames", type=int, default=600)
    ap.add_argument("--intervals", default="0.005", help="GIL switch intervals to compare (seconds)")
    ap.add_argument("--modes", default="thread,process",
                    help="where tiles are prepared: thread (the scene's worker), process (a tile process)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)

    import bench_render as B
    from wowgrass.game.data import open_data
    from wowgrass.render.world.game_tiles import GameSource
    from wowgrass.render.world.streaming import tiles_centre
    from wowgrass.samples import MAP_NAME

    root, _built, _baked = B._sea_world(a.tiles)
    data = open_data(root)
    target = B.create_offscreen_target((32, 18), 0)
    progs = B.make_programs(target.ctx)
    src0 = GameSource(data, MAP_NAME)
    wdl = src0.load_horizon()
    cx, cy = tiles_centre(src0.tiles)
    span = a.frames * a.speed / 60.0
    start = np.array([cx - span / 2 / math.sqrt(2), cy - span / 2 / math.sqrt(2), 0.0])
    step = np.array([1.0, 1.0, 0.0]) / math.sqrt(2) * a.speed / 60.0
    out = {"world": f"{a.tiles}x{a.tiles}", "speed": a.speed, "frames": a.frames, "runs": {}}
    print(f"sea world {a.tiles}x{a.tiles}, {a.speed:g} u/s, {a.frames} frames at 60 fps; "
          f"the frame's CPU stand-in's time per frame:")
    for interval in (float(v) for v in a.intervals.split(",")):
        saved = sys.getswitchinterval()
        sys.setswitchinterval(interval)
        try:
            for mode in ("alone", *a.modes.split(",")):
                scene = None
                if mode != "alone":
                    scene = B._ocean_scene(target, progs, GameSource(data, MAP_NAME), wdl,
                                           tile_process=mode == "process")
                    scene.update(start, block=True)
                    B._process_ready(scene)  # flown once a tile process has opened its source
                work, whole = fly(scene, start, step, a.frames)
                s = {"stand_in": summary(work), "frame": summary(whole)}
                if scene is not None:
                    s["resident_tiles_end"] = len(scene.tiles)
                    scene.release()
                out["runs"][f"{mode}_{interval:g}"] = s
                for part in ("stand_in", "frame"):
                    f = s[part]
                    print(f"  switch {interval * 1000:.1f} ms, {mode:7s} {part:8s}: median {f['median_ms']:.2f} ms  "
                          f"p99 {f['p99_ms']:.2f} ({f['p99_x']:.2f}x)  max {f['max_ms']:.2f} ({f['max_x']:.2f}x)")
        finally:
            sys.setswitchinterval(saved)
    target.release()
    data.close()
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
