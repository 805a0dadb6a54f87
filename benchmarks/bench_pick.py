"""The workbench's pick alone (issue 48: median <= 0.3 ms, p99 <= 0.5, max <= 1): rays as the
cursor casts them over the sample world's map and over the shared real tile laid out as a map
(``WOWGRASS_REALDATA``), through ``GroundAtlas.pick`` (the fast pick) and ``pick_marched`` (the
march over every sample it equals), and the bridge's ray for a pixel. No GL, no other thread: the
pick's own cost, apart from a frame's and a shared machine's (bench_workbench.py --fly measures it
in flight). Each ray is timed ``--repeat`` times and its fastest kept (the scheduler's turns on a
shared machine are not the pick's); also reported: the samples the pick tested one at a time, the
rays that finished with a numpy pass, and that every point equals the march's.

    python benchmarks/bench_pick.py [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def rays_over(atlas, tiles, n, size, seed=3):
    """``n`` cursor rays: a camera 110 yards over a random chunk of a random tile looking ahead and
    down (bench_workbench.py --fly's camera), a pixel of the view's lower half."""
    from wowgrass.render.camera import Camera
    from wowgrass.render.pick import pixel_ray

    rng = np.random.default_rng(seed)
    keys = list(tiles)
    out = []
    for _ in range(n):
        t = tiles[keys[rng.integers(len(keys))]]
        x, y = (float(v) for v in t.positions[rng.integers(0, 256), :2])
        g = float(atlas.heights(np.array([[x, y]]))[0])
        cam = Camera.looking_at((x + 60.0, y + 40.0, g + 110.0), (x - 40.0, y - 120.0, g))
        out.append((cam, pixel_ray(cam, size, rng.uniform(0, size[0]), rng.uniform(size[1] * 0.5, size[1]))))
    return out


def bench_map(label, data_path, map_name, n, size, repeat):
    from wowgrass.game.data import open_data
    from wowgrass.render.pick import pixel_ray
    from wowgrass.render.world.tile_payload import TileGround
    from wowgrass.workbench.bridge import SceneBridge
    from wowgrass.workbench.height_atlas import GroundAtlas
    from wowgrass.workbench.session import EditSession

    with open_data(str(data_path)) as data:
        s = EditSession(data, map_name, placement="coverage")
        tiles = {k: TileGround(s.tile(k)) for k in s.tiles}
    atlas = GroundAtlas()
    atlas.sync({k: SimpleNamespace(adt=t) for k, t in tiles.items()})
    rays = rays_over(atlas, tiles, n, size)
    fast, cpu, march, tests, passes, same, hits = [], [], [], [], 0, 0, 0
    for _cam, (o, d) in rays:
        best = best_cpu = best_march = 1e9
        for _ in range(repeat):
            t0, c0 = time.perf_counter(), time.thread_time()
            got = atlas.pick(o, d)
            best, best_cpu = min(best, time.perf_counter() - t0), min(best_cpu, time.thread_time() - c0)
            t0 = time.perf_counter()
            want = atlas.pick_marched(o, d)
            best_march = min(best_march, time.perf_counter() - t0)
        fast.append(best * 1e3)
        cpu.append(best_cpu * 1e3)
        march.append(best_march * 1e3)
        tests.append(atlas.tests)
        passes += atlas.passes > 0
        hits += want is not None
        same += (got is None and want is None) or (got is not None and want is not None and np.array_equal(got, want))
    # the bridge's ray (the camera's inverse kept for a frame's picks) against render.pick's
    bridge = SceneBridge.__new__(SceneBridge)
    bridge._ray_key = None
    ray_ms, pixel_ray_ms = [], []
    for cam, _ray in rays[:100]:
        for fn, acc in ((lambda c=cam: bridge.ray(c, size, 10.0, 20.0), ray_ms),
                        (lambda c=cam: pixel_ray(c, size, 10.0, 20.0), pixel_ray_ms)):
            t0 = time.perf_counter()
            fn()
            fn()  # a frame's second pick
            acc.append((time.perf_counter() - t0) * 1e3 / 2)

    def stats(v):
        return {"median": round(statistics.median(v), 4), "p99": round(float(np.percentile(v, 99)), 4),
                "max": round(max(v), 4)}

    return {"map": label, "tiles": len(tiles), "size": list(size), "ray_count": n, "hit_count": hits,
            "same_as_march": same, "pick_ms": stats(fast), "pick_cpu_ms": stats(cpu), "march_ms": stats(march),
            "tested_samples": {"median": statistics.median(tests), "p99": float(np.percentile(tests, 99)),
                               "max": max(tests)},
            "numpy_pass_count": passes, "ray_ms_median": round(statistics.median(ray_ms), 4),
            "pixel_ray_ms_median": round(statistics.median(pixel_ray_ms), 4)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rays", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=5, help="times each ray is picked (its fastest kept)")
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--sample", default="4x4", help="the sample world's map (tiles)")
    ap.add_argument("--real-tiles", default="4x4", help="copies of the real tile laid out as a map")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    size = tuple(int(v) for v in args.size.lower().split("x"))
    from wowgrass.samples import MAP_NAME, sample_data_path

    res = [bench_map(f"sample-{args.sample}", sample_data_path(tiles=tuple(int(v) for v in args.sample.split("x"))),
                     MAP_NAME, args.rays, size, args.repeat)]
    real = os.environ.get("WOWGRASS_REALDATA")
    if real:
        from bench_workbench import real_tiles_map

        ct, rt = (int(v) for v in args.real_tiles.lower().split("x"))
        with tempfile.TemporaryDirectory(prefix="wowgrass-real-map-") as tmp:
            root, name = real_tiles_map(Path(real), Path(tmp), ct, rt)
            res.append(bench_map(f"real-{args.real_tiles}", root, name, args.rays, size, args.repeat))
    for r in res:
        p, m = r["pick_ms"], r["march_ms"]
        print(f"pick [{r['map']}]: median {p['median']:.3f} ms, p99 {p['p99']:.3f}, max {p['max']:.3f} (targets 0.3 / "
              f"0.5 / 1; fastest of {args.repeat} per ray, {r['ray_count']} rays, {r['hit_count']} on the ground); the march "
              f"over every sample: median {m['median']:.3f}, p99 {m['p99']:.3f}; {r['tested_samples']['median']:g} samples "
              f"tested (median, max {r['tested_samples']['max']}), {r['numpy_pass_count']} ray(s) finished with a numpy "
              f"pass; {r['same_as_march']}/{r['ray_count']} points the march's; the ray {r['ray_ms_median'] * 1000:.0f} us "
              f"(pixel_ray {r['pixel_ray_ms_median'] * 1000:.0f})")
    if args.json:
        print(json.dumps(res, indent=2))
    return res


if __name__ == "__main__":
    main()
