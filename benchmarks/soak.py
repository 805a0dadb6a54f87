"""Soak: fly a scripted loop over the sample world for minutes and watch for growth.

    python benchmarks/soak.py --minutes 10 --size 320x180 --json out/soak.json --png-dir out

The camera flies a figure-eight through an NxN sample world (``--tiles``, default 4x4) again and
again: it turns all the time (the yaw follows the path), its speed swings between a third and twice
``--speed`` (units per second of real time, so a slow renderer still covers the ground) and its
height between 8 and 40 units over the ground, and every loop goes back over the tiles the last one
visited, so tiles stream in, are dropped and come back. Tiles stream as in the viewer (Scene,
background loading).

Every ``--every`` seconds it prints: resident memory (VmRSS), the GPU bytes of the live buffers,
textures and renderbuffers (summed here from every object the GL context made and has not
released; textures at their base level, mipmaps not counted), the renderer's own books of GPU
memory (``books``: render/gl/memory.py, mipmaps counted), the live GL objects by kind, the
resident tiles, uploads so far, frames per second and GL errors so far (glGetError after every
frame). At the end: each figure's change from the end of the first loop to the end of the run
(flat: within ``--tolerance``), and whether any GL error or tile error was seen.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wowgrass.render.camera import Camera  # noqa: E402
from wowgrass.render.gl.context import create_offscreen_target  # noqa: E402
from wowgrass.render.gl.programs import make_programs  # noqa: E402

#: context methods that make GL objects, and the kind each one is counted as
MAKERS = {"buffer": "buffer", "texture": "texture", "texture_array": "texture", "texture3d": "texture",
          "texture_cube": "texture", "depth_texture": "texture", "depth_texture_cube": "texture",
          "renderbuffer": "renderbuffer", "depth_renderbuffer": "renderbuffer", "framebuffer": "framebuffer",
          "simple_framebuffer": "framebuffer", "vertex_array": "vertex_array", "simple_vertex_array": "vertex_array",
          "program": "program", "compute_shader": "program", "query": "query", "sampler": "sampler"}
DTYPE_BYTES = {"f1": 1, "u1": 1, "i1": 1, "f2": 2, "u2": 2, "i2": 2, "f4": 4, "u4": 4, "i4": 4, "nu1": 1, "nu2": 2,
               "ni1": 1, "ni2": 2}


class GlLedger:
    """Every GL object the context makes, to count those alive and the bytes they hold."""

    def __init__(self, ctx):
        self.objects: list = []
        for name, kind in MAKERS.items():
            real = getattr(ctx, name, None)
            if real is not None:
                setattr(ctx, name, self._wrap(real, kind))

    def _wrap(self, real, kind):
        def make(*a, **k):
            obj = real(*a, **k)
            self.objects.append((kind, obj))
            return obj
        return make

    def live(self) -> list:
        alive = [(k, o) for k, o in self.objects if type(getattr(o, "mglo", None)).__name__ != "InvalidObject"]
        self.objects = alive  # forget released ones
        return alive

    def counts(self) -> dict:
        return dict(Counter(k for k, _ in self.live()))

    def bytes(self) -> dict:
        out = Counter()
        for kind, o in self.live():
            if kind == "buffer":
                out["buffers"] += int(o.size)
            elif kind in ("texture", "renderbuffer"):
                w, h = o.size[:2] if hasattr(o, "size") else (o.width, o.height)
                depth = getattr(o, "layers", None) or getattr(o, "depth", None) or 1
                if type(o).__name__ == "TextureCube":
                    depth = 6
                comps = getattr(o, "components", 1) or 1
                per = DTYPE_BYTES.get(getattr(o, "dtype", "f1"), 4)
                samples = max(1, getattr(o, "samples", 0) or 0)
                out["textures" if kind == "texture" else "renderbuffers"] += int(w * h * depth * comps * per * samples)
        out["total"] = sum(out.values())
        return dict(out)


def _books(ctx) -> int | None:
    """The renderer's own GPU memory books (render/gl/memory.py, mipmaps counted), where it keeps them."""
    try:
        from wowgrass.render.gl.memory import gpu_memory
    except ImportError:
        return None
    return int(gpu_memory(ctx).total())


def rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class Path8:
    """A figure-eight through the world's middle, by arc length; speed and height swing along it."""

    def __init__(self, cx, cy, radius, samples=4096):
        t = np.linspace(0.0, 2 * math.pi, samples + 1)
        self.xy = np.stack([cx + radius * np.sin(t), cy + radius * np.sin(t) * np.cos(t)], axis=1)
        seg = np.linalg.norm(np.diff(self.xy, axis=0), axis=1)
        self.s = np.r_[0.0, np.cumsum(seg)]
        self.length = float(self.s[-1])

    def at(self, dist: float):
        """(x, y, yaw) at ``dist`` along the loop (wrapping)."""
        d = dist % self.length
        i = int(np.clip(np.searchsorted(self.s, d) - 1, 0, len(self.s) - 2))
        f = (d - self.s[i]) / max(self.s[i + 1] - self.s[i], 1e-9)
        p = self.xy[i] + f * (self.xy[i + 1] - self.xy[i])
        dx, dy = self.xy[i + 1] - self.xy[i]
        return float(p[0]), float(p[1]), math.atan2(dy, dx)


def soak(minutes: float, size, tiles: int, speed: float, every: float, samples: int, png_dir=None, say=print):
    from wowgrass.game.data import open_data
    from wowgrass.render.viewer import Toggles, Viewer
    from wowgrass.render.world.game_tiles import GameSource
    from wowgrass.render.world.streaming import Scene, tiles_centre
    from wowgrass.samples import MAP_NAME, sample_data_path

    root = sample_data_path(tiles=(tiles, tiles), jobs=2)
    data = open_data(root)
    src = GameSource(data, MAP_NAME)
    target = create_offscreen_target(size, samples)
    ledger = GlLedger(target.ctx)
    progs = make_programs(target.ctx, alpha_to_coverage=target.samples > 0)
    cx, cy = tiles_centre(src.tiles)
    path = Path8(cx, cy, radius=tiles * 533.333 * 0.36)
    scene = Scene(target.ctx, progs, src)
    x, y, yaw = path.at(0.0)
    cam = Camera(position=np.array([x, y, 0.0]))
    cam.yaw, cam.pitch = yaw, math.radians(-12.0)
    scene.update(cam.position, block=True)
    v = Viewer(target, scene, cam, Toggles())
    gl_errors: Counter = Counter()
    rows, frames, uploads, dist = [], 0, 0, 0.0
    t_start = time.perf_counter()
    last_t, next_row, frames_at_row = t_start, t_start, 0
    end = t_start + minutes * 60.0
    say(f"soak: {tiles}x{tiles} tiles, {size[0]}x{size[1]}, loop {path.length:,.0f} units, speed "
        f"{speed / 3:.0f}..{speed * 2:.0f} units/s, {minutes:g} min")
    say(f"{'t s':>6} {'loop':>5} {'fps':>5} {'rss MB':>7} {'gpu MB':>7} {'buf MB':>7} {'tex MB':>7} {'books':>7} "
        f"{'objects':>7} {'tiles':>5} {'uploads':>7} {'gl err':>6}  objects by kind")
    while True:
        now = time.perf_counter()
        dt = min(now - last_t, 3.0)  # a stalled frame (tile upload) does not jump the camera across the map
        last_t = now
        phase = dist / path.length * 2 * math.pi
        dist += dt * speed * (1.15 + 0.85 * math.sin(3 * phase))   # between ~0.3x and 2x --speed
        x, y, yaw = path.at(dist)
        cam.position = np.array([x, y, cam.position[2]])
        cam.yaw = yaw
        uploads += scene.update(cam.position)
        g = scene.ground_height(x, y)
        if g is not None:
            cam.position[2] = g + 24.0 + 16.0 * math.sin(5 * phase)
        v.render_frame(now - t_start)
        frames += 1
        err = target.ctx.error
        if err != "GL_NO_ERROR":
            gl_errors[err] += 1
        if now >= next_row or now >= end:
            target.ctx.finish()
            b = ledger.bytes()
            books = _books(target.ctx)
            row = {"t": round(now - t_start, 1), "loop": round(dist / path.length, 2),
                   "fps": round((frames - frames_at_row) / max(now - (next_row - every), 1e-9), 2) if rows else None,
                   "rss": rss_bytes(), "gpu_bytes": b.get("total", 0), "buffer_bytes": b.get("buffers", 0),
                   "texture_bytes": b.get("textures", 0) + b.get("renderbuffers", 0), "objects": ledger.counts(),
                   "books_bytes": books,
                   "tiles": len(scene.tiles), "uploads": uploads, "gl_errors": sum(gl_errors.values()),
                   "tile_errors": len(scene.errors), "frames": frames}
            rows.append(row)
            frames_at_row = frames
            n_obj = sum(row["objects"].values())
            kinds = " ".join(f"{k}={n}" for k, n in sorted(row["objects"].items()))
            say(f"{row['t']:>6.0f} {row['loop']:>5.2f} {row['fps'] or 0:>5.1f} {row['rss'] / 2**20:>7.1f} "
                f"{row['gpu_bytes'] / 2**20:>7.1f} {row['buffer_bytes'] / 2**20:>7.1f} "
                f"{row['texture_bytes'] / 2**20:>7.1f} {(books or 0) / 2**20:>7.1f} {n_obj:>7} {row['tiles']:>5} {uploads:>7} "
                f"{row['gl_errors']:>6}  {kinds}")
            next_row += every
            if now >= end:
                break
    if png_dir:
        Path(png_dir).mkdir(parents=True, exist_ok=True)
        v.save_png(Path(png_dir) / f"soak_end_{size[0]}x{size[1]}.png")
    scene.release()
    target.release()
    data.close()
    return {"rows": rows, "gl_errors": dict(gl_errors), "loop_length": path.length, "tiles": tiles,
            "size": list(size), "speed": speed, "minutes": minutes, "frames": frames}


def verdict(result: dict, tolerance: float) -> dict:
    """Each figure from the end of the first loop on: the mean of the last third of the samples
    against the mean of the first third (growth that keeps going shows; the allocator's ups and
    downs and a buffer grown once to a new peak of residency do not), and the highest value seen."""
    rows = result["rows"]
    after = [r for r in rows if r["loop"] >= 1.0]
    out = {"loops": rows[-1]["loop"] if rows else 0, "gl_errors": sum(result["gl_errors"].values()),
           "tile_errors": rows[-1]["tile_errors"] if rows else 0}
    if len(after) < 3:
        out["flat"] = None
        out["why"] = "fewer than three samples after the first loop: fly longer"
        return out
    third = max(1, len(after) // 3)
    for key in ("rss", "gpu_bytes", "buffer_bytes", "texture_bytes", "books_bytes"):
        vals = [r.get(key) for r in after]
        if any(v is None for v in vals):
            continue
        first, last = float(np.mean(vals[:third])), float(np.mean(vals[-third:]))
        growth = (last - first) / max(first, 1)
        out[key] = {"first_third": first, "last_third": last, "max_after": max(vals), "min_after": min(vals),
                    "growth": round(growth, 4), "flat": growth <= tolerance}
    objs = [sum(r["objects"].values()) for r in after]
    out["objects"] = {"after_first_loop": objs[0], "max_after": max(objs), "end": objs[-1],
                      "flat": max(objs) - objs[0] <= max(8, tolerance * objs[0])}
    out["flat"] = all(out[k]["flat"] for k in ("rss", "gpu_bytes", "objects")) and out["gl_errors"] == 0
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--size", default="320x180", help="WxH of the offscreen frame")
    ap.add_argument("--samples", type=int, default=0, help="MSAA samples")
    ap.add_argument("--tiles", type=int, default=5, help="the sample world is NxN tiles")
    ap.add_argument("--speed", type=float, default=60.0, help="units per second (swings 1/3x .. 2x)")
    ap.add_argument("--every", type=float, default=30.0, help="seconds between rows")
    ap.add_argument("--tolerance", type=float, default=0.05, help="growth after the first loop that counts as flat")
    ap.add_argument("--json", type=Path, help="write the rows and the verdict here")
    ap.add_argument("--png-dir", type=Path, help="the last frame as a PNG here")
    ap.add_argument("--judge", type=Path, help="judge the rows of an earlier --json again; fly nothing")
    args = ap.parse_args(argv)
    w, h = (int(v) for v in args.size.lower().split("x"))
    if args.judge:
        result = json.loads(args.judge.read_text())
    else:
        result = soak(args.minutes, (w, h), args.tiles, args.speed, args.every, args.samples, args.png_dir)
    result["verdict"] = verdict(result, args.tolerance)
    vd = result["verdict"]
    print(f"after the first loop ({vd['loops']:.1f} loops flown), last third against first third: " + ", ".join(
        f"{k} {vd[k]['growth'] * 100:+.1f}%" for k in ("rss", "gpu_bytes", "buffer_bytes", "texture_bytes",
                                                        "books_bytes")
        if isinstance(vd.get(k), dict)) + (f", objects {vd['objects']['after_first_loop']} -> "
                                           f"{vd['objects']['end']} (max {vd['objects']['max_after']})"
                                           if "objects" in vd else "")
          + f"; GL errors {vd['gl_errors']}, tile errors {vd['tile_errors']}; flat: {vd['flat']}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1))
    return 0 if vd["flat"] else 1


if __name__ == "__main__":
    sys.exit(main())
