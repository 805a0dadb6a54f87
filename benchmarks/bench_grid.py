"""Grass paths benchmark: the camera-grid path (``view --grass grid``, compact and full draws) against the instanced path.

Prints and writes (``--out DIR``: ``grid.json`` and PNG frames):
  * resident - per resident set (the instanced benchmark's field of 0.35 instances per square unit,
               100k .. 45M instances, 45M being a continent; the grid holds the same area as
               control tiles): CPU ms (pipelined, and ``cpu_submit_ms``: a frame submitted to an
               idle GPU, its own work alone), GPU ms and wall ms a frame at eye height in the
               middle, and the instances submitted and drawn, for the GPU-driven instanced path and
               for the grid's compact and full draws. Targets on the H200: the grid's CPU under
               0.1 ms a frame and its cost flat however much is resident (it draws the grid, not
               the resident set). ``submitted``/``drawn``: for indirect draws (instanced, grid
               compact) the instances the GPU's culling kept, read back after the timed frames;
               for the full draw the instances it submits (181^2 x layers a model), of which the
               vertex stage drops most.
  * sample   - the sample world's zone on the three paths from the same cameras (start view and the
               grass view at 60,60; the sun's shadows on), frames side by side
               (``sample_<view>_paths.png``: instanced | grid compact | grid full).
  * wind     - each wind option (classic, two-axis, gust; gust also with the quadratic falloff) on
               the instanced path and the compact grid, a short sequence (t = 0 .. 1.75 s) as
               contact sheets (``wind_<option>_<falloff>_<path>_{a,b}.png``).

    python benchmarks/bench_grid.py --out /tmp/grid                 # llvmpipe-friendly defaults
    python benchmarks/bench_grid.py --out $OUT --size 1920x1080 --counts 100000,1000000,4000000,16000000,45000000 \\
        --frames 200                                                 # the H200 run (docs/grid.md)

Frame timing is bench_render's (pipelined timer queries, wall = N frames / N).
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
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_render import (DENSITY, WARM_S, clump, eye_camera, field_instances, frame, make_field, median,  # noqa: E402
                          time_viewer)

from wowgrass.grass.grid_tiles import GridTile, build_grid_tile, tile_slots  # noqa: E402
from wowgrass.game.coords import tile_of  # noqa: E402
from wowgrass.render.constants import TILE_SIZE, GrassSettings  # noqa: E402
from wowgrass.render.gl.context import create_offscreen_target  # noqa: E402
from wowgrass.render.frame import FrameUniforms  # noqa: E402
from wowgrass.render.gl.timer import GpuTimer  # noqa: E402
from wowgrass.render.sources.grass_grid import GridGrass  # noqa: E402
from wowgrass.render.gl.meshes import GpuMesh  # noqa: E402
from wowgrass.render.gl.programs import make_programs  # noqa: E402
from wowgrass.render.world.synthetic import synthetic_tile, tile_origin  # noqa: E402
from wowgrass.render.viewer import write_png  # noqa: E402

WIND_RUNS = (("classic", "smoothstep"), ("two-axis", "smoothstep"), ("gust", "smoothstep"), ("gust", "quadratic"))
SEQUENCE = (0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75)


def field_tiles(n: int) -> list[tuple[int, int]]:
    """The tiles the instanced benchmark's field of ``n`` instances covers (it is centred on the map)."""
    half = math.sqrt(n / DENSITY) / 2
    lo, hi = tile_of(half, half)[0], tile_of(-half, -half)[0]
    return [(c, r) for c in range(lo, hi + 1) for r in range(lo, hi + 1)]


def grid_field(ctx, progs, mesh, n: int, settings, draw_mode="compact"):
    """A GridGrass holding the area of the ``n``-instance field: one control tile built from the
    field's density, copied to every tile (the grid's cost does not depend on what the tiles hold)."""
    tiles = field_tiles(n)
    c0, r0 = tiles[0]
    adt = synthetic_tile(c0, r0, relief=2.0)
    x0, y0 = tile_origin(c0, r0)
    k = int(DENSITY * TILE_SIZE * TILE_SIZE)
    rng = np.random.default_rng(0)
    from wowgrass.grass.bundle import pack_instances

    pos = np.column_stack([x0 - rng.uniform(0, TILE_SIZE, k), y0 - rng.uniform(0, TILE_SIZE, k), np.zeros(k)])
    template = build_grid_tile(adt, {"bench\\clump.m2": pack_instances(pos, 0.0, 1.0)})
    grid = GridGrass(ctx, progs, settings, capacity=len(tiles), draw_mode=draw_mode)
    meshes = {"bench\\clump.m2": mesh}
    t0 = time.perf_counter()
    for c, r in tiles:
        i0, i1, j0, j1 = tile_slots(c, r)
        control = np.zeros((i1 - i0, j1 - j0, 4), np.uint32)  # 213 or 214 cells a side
        a, b = min(i1 - i0, template.control.shape[0]), min(j1 - j0, template.control.shape[1])
        control[:a, :b] = template.control[:a, :b]
        grid.add_tile((c, r), GridTile(c, r, i0, j0, control, template.heights, template.models), meshes)
    return grid, len(tiles), time.perf_counter() - t0


class KeptTimes:
    """A GpuTimer whose finished frames are kept: bench_render's ``frame`` drops what ``end()``
    returns, and with fences most frames finish (and are reported) before ``drain()``."""

    def __init__(self, timer):
        self.timer, self.done = timer, []

    @property
    def frame(self):
        return self.timer.frame

    def begin(self):
        return self.timer.begin()

    def end(self):
        got = self.timer.end()
        self.done.extend(got)
        return got

    def drain(self):
        out, self.done = self.done + self.timer.drain(), []
        return out


def time_source(ctx, target, source, cam, frames):
    """Pipelined frames of ``source`` alone: medians of CPU and GPU ms, wall ms; then the CPU time
    of frames submitted to an idle GPU (``cpu_submit_ms``, as bench_render's) and, from one more
    frame with the GPU's counters on (not timed), the instances drawn."""
    from wowgrass.render.views import View

    timer, uniforms = KeptTimes(GpuTimer(ctx)), FrameUniforms(ctx)
    t0 = time.perf_counter()
    # warm-up: compilation, then frames for WARM_S (the H200 ramps up after idling: bench_render)
    for i in range(3):
        frame(target, uniforms, source, cam, 0.0, timer)
    while time.perf_counter() - t0 < WARM_S:
        frame(target, uniforms, source, cam, 0.0, timer)
    timer.drain()
    ctx.finish()
    first, cpus = timer.frame, []
    t0 = time.perf_counter()
    for i in range(frames):
        c, counts = frame(target, uniforms, source, cam, i / 60.0, timer)
        cpus.append(c)
    ctx.finish()
    wall = (time.perf_counter() - t0) * 1000 / frames
    gpus = [ms for f, ms in timer.drain() if f >= first]
    submit = []
    for i in range(min(frames, 30)):
        ctx.finish()
        submit.append(frame(target, uniforms, source, cam, i / 60.0, timer)[0])
    ctx.finish()
    timer.drain()
    out = {"cpu_ms": median(cpus), "cpu_ms_max": max(cpus), "cpu_submit_ms": median(submit),
           "cpu_submit_ms_max": max(submit), "gpu_ms": median(gpus), "wall_ms": wall,
           "submitted": counts.instances, "draw_calls": counts.draw_calls}
    source.collect_stats = True
    frame(target, uniforms, source, cam, 0.0, timer)
    st = source.read_stats(View(cam, (0, 0, *target.size)))
    source.collect_stats = False
    timer.drain()
    out["drawn"] = st["drawn"]
    if getattr(source, "indirect", False) or getattr(source, "draw_mode", "") == "compact":
        out["submitted"] = st["drawn"]  # indirect draws: what the GPU's culling kept is what is submitted
    uniforms.release()
    return out


GRID_DRAWS = ("compact", "full")


def bench_resident(size, counts, frames, grid_draws=GRID_DRAWS):
    target = create_offscreen_target(size, 0)
    ctx = target.ctx
    progs = make_programs(ctx, grass_path="grid")
    progs_16p = {"16p": progs}
    mesh = GpuMesh(ctx, clump("indexed12"))
    settings = GrassSettings()
    cam = eye_camera(size[0] / size[1])
    out = []
    for n in counts:
        row = {"instances": n}
        inst = field_instances(n)
        field = make_field(ctx, progs_16p, mesh, inst, path="gpu", settings=settings)
        row["instanced"] = time_source(ctx, target, field, cam, frames)
        field.release()
        del inst
        i = row["instanced"]
        line = (f"{n:>11,d} resident  instanced cpu {i['cpu_ms']:.3f} submit {i['cpu_submit_ms']:.3f} "
                f"gpu {i['gpu_ms']:.3f} wall {i['wall_ms']:.3f} submitted {i['submitted']:,d} drawn {i['drawn']:,d}")
        for mode in grid_draws:
            grid, tiles, secs = grid_field(ctx, progs, mesh, n, settings, mode)
            g = row[f"grid_{mode}"] = time_source(ctx, target, grid, cam, frames)
            g.update(tiles=tiles, upload_s=secs, blades=grid.total_instances, draw_mode=grid.draw_mode)
            grid.release()
            line += (f"  | grid {mode} ({tiles} tiles) cpu {g['cpu_ms']:.3f} submit {g['cpu_submit_ms']:.3f} "
                     f"gpu {g['gpu_ms']:.3f} wall {g['wall_ms']:.3f} submitted {g['submitted']:,d} drawn {g['drawn']:,d}")
        out.append(row)
        print(line, flush=True)
    mesh.release()
    target.release()
    return out


def side_by_side(images, path):
    w, h = images[0].shape[1], images[0].shape[0]
    sheet = np.full((h, len(images) * (w + 4) - 4, 3), 255, np.uint8)
    for k, img in enumerate(images):
        sheet[:, k * (w + 4): k * (w + 4) + w] = img[..., :3]
    write_png(path, sheet)


SAMPLE_PATHS = (("instanced", "instanced", None), ("grid_compact", "grid", "compact"), ("grid_full", "grid", "full"))


def bench_sample(size, frames, samples, out_dir, paths=SAMPLE_PATHS):
    """The paths on the sample world from the same cameras (the sun's shadows on, as the viewer
    starts); wind sequences of each option on the instanced path and the compact grid."""
    from wowgrass.render.app import DataOptions, LookOptions, open_source
    from wowgrass.render.world.streaming import Scene
    from wowgrass.render.viewer import Toggles, Viewer
    from wowgrass.render.world.firstframe import default_camera

    results, shots = {}, {}
    cams = {}
    for label, path, grid_draw in paths:
        sequences = out_dir is not None and grid_draw != "full"  # wind sequences: instanced and compact grid
        winds = (("classic", "smoothstep"),) + (WIND_RUNS[1:] if sequences else ())
        for wind, falloff in winds:
            data, src = open_source(DataOptions(), LookOptions(grass_path=path))
            target = create_offscreen_target(size, samples)
            progs = make_programs(target.ctx, alpha_to_coverage=target.samples > 0, grass_path=path, wind=wind,
                                  wind_falloff=falloff)
            scene = Scene(target.ctx, progs, src, grass_path=path, grid_draw=grid_draw or "compact")
            for view_name, cam_xy in (("start", None), ("grass_60_60", (60.0, 60.0))):
                cam = default_camera(scene, src, camera=cam_xy)
                if view_name in cams:  # the same camera on every path
                    cam.position, cam.yaw, cam.pitch = cams[view_name]
                cams.setdefault(view_name, (cam.position.copy(), cam.yaw, cam.pitch))
                scene.update(cam.position, block=True)
                v = Viewer(target, scene, cam, Toggles())
                if wind == "classic":
                    r = results[f"{label}_{view_name}"] = time_viewer(v, target, frames)
                    r["resident"] = scene.grass.total_instances
                    r["grid_draw"] = getattr(scene.grass, "draw_mode", None)
                    v.toggles.stats = True  # one more frame with the GPU's counters: blades drawn (not timed)
                    st = v.render_frame(0.0)
                    v.toggles.stats = False
                    r["grass_drawn"] = st.grass_instances
                    if getattr(scene.grass, "indirect", False) or r["grid_draw"] == "compact":
                        r["grass_submitted"] = st.grass_instances  # indirect draws: what the GPU kept
                    v.render_frame(0.0)
                    shots[(view_name, label)] = v.read_rgba()
                if sequences and view_name == "grass_60_60":
                    seq = []
                    for t in SEQUENCE:
                        v.render_frame(t)
                        seq.append(v.read_rgba())
                    side_by_side(seq[:4], Path(out_dir) / f"wind_{wind}_{falloff}_{path}_a.png")
                    side_by_side(seq[4:], Path(out_dir) / f"wind_{wind}_{falloff}_{path}_b.png")
            scene.release()
            target.release()
            data.close()
        for view_name in ("start", "grass_60_60"):
            r = results[f"{label}_{view_name}"]
            print(f"sample {view_name:<12} {label:<12} cpu {r['cpu_ms']:.3f} submit {r['cpu_submit_ms']:.3f} "
                  f"gpu {r['gpu_ms'] or float('nan'):.3f} wall {r['wall_ms']:.3f} ms  draws {r['draw_calls']}  "
                  f"grass submitted {r['grass_submitted']:,d} drawn {r['grass_drawn']:,d}  resident {r['resident']:,}",
                  flush=True)
    if out_dir:
        for view_name in ("start", "grass_60_60"):
            side_by_side([shots[(view_name, label)] for label, _, _ in paths],
                         Path(out_dir) / f"sample_{view_name}_paths.png")
    return results


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="folder for grid.json and the PNG frames")
    ap.add_argument("--size", default="480x270", help="frame size WxH (default 480x270; 1920x1080 on a GPU)")
    ap.add_argument("--counts", default="100000,1000000", help="resident instance counts of the field")
    ap.add_argument("--frames", type=int, default=5)
    ap.add_argument("--samples", type=int, default=4, help="MSAA samples of the sample-world frames")
    ap.add_argument("--grid-draws", default="compact,full", help="the grid's draw modes to measure (compact, full)")
    ap.add_argument("--no-sample", action="store_true", help="skip the sample world (frames and wind sequences)")
    a = ap.parse_args(argv)
    size = tuple(int(v) for v in a.size.lower().split("x"))
    out_dir = Path(a.out) if a.out else None
    if out_dir:
        out_dir.mkdir(parents=True, exist_ok=True)
    draws = tuple(d for d in a.grid_draws.split(",") if d)
    res = {"size": list(size), "frames": a.frames}
    res["resident"] = bench_resident(size, [int(c) for c in a.counts.split(",") if c], a.frames, draws)
    if not a.no_sample:
        res["sample"] = bench_sample(size, a.frames, a.samples, out_dir,
                                     [p for p in SAMPLE_PATHS if p[2] is None or p[2] in draws])
    summary = res["summary"] = {}
    for d in draws if res["resident"] else ():  # --counts "": the sample world only
        rows = [r[f"grid_{d}"] for r in res["resident"]]
        gpu = [r["gpu_ms"] for r in rows]
        summary[d] = {"cpu_submit_ms_max": max(r["cpu_submit_ms"] for r in rows),
                      "cpu_ms_max": max(r["cpu_ms"] for r in rows),
                      "gpu_ms_spread": max(gpu) / max(min(gpu), 1e-9) if all(g == g for g in gpu) else None}
        print(f"grid {d}: CPU (submitted to an idle GPU) <= {summary[d]['cpu_submit_ms_max']:.3f} ms a frame "
              f"(target < 0.1 on the H200); GPU max/min over resident sets "
              f"{summary[d]['gpu_ms_spread'] or float('nan'):.2f}x (flat is 1.0)")
    for view_name in ("start", "grass_60_60") if not a.no_sample else ():
        inst = res["sample"][f"instanced_{view_name}"]["gpu_ms"]
        for d in draws:
            g = res["sample"][f"grid_{d}_{view_name}"]["gpu_ms"]
            if inst and g:
                summary[f"sample_{view_name}_{d}_vs_instanced_gpu"] = g / inst
                print(f"sample {view_name}: grid {d} GPU {g:.3f} ms = {g / inst:.2f}x the instanced path's {inst:.3f} ms")
    if out_dir:
        (out_dir / "grid.json").write_text(json.dumps(res, indent=1))
    return res


if __name__ == "__main__":
    main()
