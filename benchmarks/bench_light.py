"""Benchmark: the per-frame light lookup with every light of a real map loaded.

Target: under 0.05 ms a frame (median), no allocation per frame. The camera flies a path across
the map that passes through lights' falloffs (some frames inside none, some inside two or three),
at a fixed hour, as the view does (the hour changes only on a key press: that cost, all the lights'
bands at a new time, is printed separately).

    python benchmarks/bench_light.py [DBC_FOLDER] [--map ID] [--json OUT.json]
    python benchmarks/bench_light.py --synthetic 265 --json OUT.json     # no real tables needed

DBC_FOLDER holds the 3.3.5 light tables (default ``$WOWGRASS_REALDATA/dbc/3.3.5``); the map
defaults to 0 (Eastern Kingdoms, 265 lights). ``--synthetic N``: a map of N local lights (random
places and falloffs over a continent, the sample world's day curves) and a global one.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

from wowgrass.game.light import load_light_tables, scene_light

TARGET_MS = 0.05


def synthetic_tables(n: int):
    """A map (9001) of ``n`` local lights over a continent's extent plus a global light, every one
    with the sample world's global day (parameter set 1)."""
    from wowgrass.formats.dbc import schema_for, write_dbc
    from wowgrass.game.light import CORNER, UNITS, LightTables
    from wowgrass.samples import tables as T

    raw = {p.split("\\")[-1][:-4]: b for p, b in T.light_tables("3.3.5", (0.0, 0.0, 0.0)).items()}
    rng = np.random.default_rng(7)
    L = np.zeros(n + 1, schema_for("Light", "3.3.5").dtype)
    L["ID"] = np.arange(1, n + 2)
    L["ContinentID"] = 9001
    L["LightParamsID"] = 1
    xy = rng.uniform(-12000, 4000, (n, 2))
    z = rng.uniform(0, 300, n)
    L["GameCoords"][1:] = np.stack([(CORNER - xy[:, 1]) * UNITS, z * UNITS, (CORNER - xy[:, 0]) * UNITS], 1)
    r1 = rng.uniform(50, 900, n)
    L["GameFalloffStart"][1:], L["GameFalloffEnd"][1:] = r1 * UNITS, (r1 * rng.uniform(1.1, 1.5, n)) * UNITS
    raw["Light"] = write_dbc(L)
    return LightTables.from_bytes(raw)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder", nargs="?", default=None)
    ap.add_argument("--map", type=int, default=0)
    ap.add_argument("--frames", type=int, default=20000)
    ap.add_argument("--json", default=None)
    ap.add_argument("--synthetic", type=int, default=None, metavar="N")
    a = ap.parse_args(argv)
    folder = a.folder or (Path(os.environ.get("WOWGRASS_REALDATA", "")) / "dbc" / "3.3.5")
    if a.synthetic:
        tables, a.map = synthetic_tables(a.synthetic), 9001
    else:
        tables = load_light_tables(folder=folder, warn=lambda m: print(m, file=sys.stderr))
    if tables is None:
        print(f"no light tables in {folder}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    m = tables.map_light(a.map)
    build_ms = (time.perf_counter() - t0) * 1e3
    # a path from light to light: each local light's centre and a point in its falloff, in turn
    n = m.n_local
    rng = np.random.default_rng(1)
    pick = rng.choice(n, size=min(n, 64), replace=False)
    pts = []
    for i in pick:
        c, (r1, r2) = m.position[i], m.falloff[i]
        pts += [c, c + np.array([(r1 + r2) / 2, 0, 0]), c + np.array([r2 * 1.5 + 10, 0, 0])]
    path = np.array(pts)
    steps = np.linspace(0, len(path) - 1, a.frames)
    frames = path[np.floor(steps).astype(int)] + (path[np.minimum(np.floor(steps).astype(int) + 1, len(path) - 1)]
                                                  - path[np.floor(steps).astype(int)]) * (steps % 1)[:, None]
    t0 = time.perf_counter()
    m.set_time(1440)
    time_ms = (time.perf_counter() - t0) * 1e3
    for p in frames[:200]:      # warm-up
        m.evaluate(p, 1440)
    per, active = [], []
    for p in frames:
        s = time.perf_counter()
        m.evaluate(p, 1440)
        per.append(time.perf_counter() - s)
        active.append(len(m.active))
    per_ms = np.array(per) * 1e3
    # allocation: what evaluate() keeps allocated over many frames (tracemalloc sees numpy's buffers)
    tracemalloc.start()
    for p in frames[:2000]:
        m.evaluate(p, 1440)
    snap0 = tracemalloc.take_snapshot()
    for p in frames[2000:4000]:
        m.evaluate(p, 1440)
    snap1 = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in snap1.compare_to(snap0, "filename") if s.size_diff > 0)
    # the renderer's full per-frame step (the lookup plus the colours it hands to the frame)
    s = time.perf_counter()
    for p in frames[:5000]:
        scene_light(m, p, 1440)
    scene_ms = (time.perf_counter() - s) / 5000 * 1e3
    act = np.array(active)
    out = {
        "map": a.map, "lights": len(m), "local_lights": n, "frames": a.frames,
        "evaluate_ms_median": float(np.median(per_ms)), "evaluate_ms_p95": float(np.percentile(per_ms, 95)),
        "evaluate_ms_inside_none": float(np.median(per_ms[act == 0])) if (act == 0).any() else None,
        "evaluate_ms_inside_some": float(np.median(per_ms[act > 0])) if (act > 0).any() else None,
        "frames_inside_lights": int((act > 0).sum()), "max_active": int(act.max()),
        "scene_light_ms": scene_ms, "set_time_ms": time_ms, "map_build_ms": build_ms,
        "bytes_kept_over_2000_frames": int(grown), "target_ms": TARGET_MS,
    }
    print(f"map {a.map}: {len(m)} lights ({n} local), {a.frames} frames along a path through their falloffs "
          f"({out['frames_inside_lights']} inside one or more, at most {out['max_active']})")
    print(f"light lookup per frame: median {out['evaluate_ms_median']:.4f} ms, p95 {out['evaluate_ms_p95']:.4f} ms "
          f"(inside no local light {out['evaluate_ms_inside_none'] or 0:.4f}, inside some "
          f"{out['evaluate_ms_inside_some'] or 0:.4f}); target {TARGET_MS} ms: "
          f"{'met' if out['evaluate_ms_median'] < TARGET_MS else 'NOT met'}")
    print(f"with the colours handed to the frame (scene_light): {scene_ms:.4f} ms")
    print(f"memory kept by 2000 more frames: {grown} bytes")
    print(f"a new hour (every light's bands): {time_ms:.2f} ms; building the map's tables: {build_ms:.1f} ms")
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
