"""The Blender extension's import of dense sample tiles: seconds and memory in Blender, and the
viewport's frame time with the grass shown (issue 50's targets: one dense tile <= 2 s and 0.5 GB,
16 dense tiles <= 20 s and 4 GB).

    nice -n 10 .venv/bin/python benchmarks/bench_blender.py [--bpy PYTHON] [--tiles 1,16]
        [--placement coverage] [--window BLENDER]

Each count of tiles is a sample world of that many tiles (1: the dense tile 32,32 of the 2x2
world; 16: a 4x4 world), baked first into a private cache with `wowgrass bake` (the import then
reads the bundles, as a user's second import does; the bake's own seconds are printed apart). The
import runs headless in a Python with the PyPI bpy module (``--bpy``, default .venv-bpy) through
``wowgrass/blender/headless.py``, as ``wowgrass blender import`` runs it, without saving: import
seconds (Blender's wall clock from the data's opening to the last tile), the process's CPU time and
its peak resident memory, with bpy's own (an empty import) beside it.

``--window BLENDER``: the viewport's frame time, where the bpy module cannot draw (it has no window):
that Blender (Debian's 3.4 works) opens in a private Xvfb, imports the dense tile from this checkout,
looks at it in a 3D view (material preview) and times ``wm.redraw_timer`` (draw and swap the window).
Under Xvfb the GPU is llvmpipe (the CPU), so the figure is an upper bound for a workstation.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def sample(tiles: int) -> tuple[Path, list[str]]:
    from wowgrass.samples import sample_data_path

    if tiles == 1:
        return sample_data_path(tiles=(2, 2)), ["32,32"]
    side = int(round(tiles ** 0.5))
    return sample_data_path(tiles=(side, side)), []


def bake(data: Path, tiles: list[str], placement: str, env: dict) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "wowgrass", "bake", "--data", str(data), *sum((["--tile", t] for t in tiles), []),
                    "--placement", placement, "-j", "2", "-q"], env=env, check=True)
    return time.perf_counter() - t0


def bpy_baseline(py: str) -> float:
    code = ("import bpy, resource; bpy.ops.wm.read_factory_settings(use_empty=True); "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)")
    return float(subprocess.run([py, "-c", code], capture_output=True, text=True, check=True).stdout.split()[-1])


def import_in_bpy(py: str, data: Path, tiles: list[str], placement: str, env: dict) -> dict:
    from wowgrass.cli.blender import run_headless

    os.environ.update(env)
    job = {"options": {"data": [str(data)], "tiles": tiles, "placement": placement}, "output": None, "render": None}
    t0 = time.perf_counter()
    r = run_headless([py], job)
    r["process_s"] = round(time.perf_counter() - t0, 2)
    return r


WINDOW_SCRIPT = r"""
import bpy, json, sys, time
job = json.load(open(sys.argv[sys.argv.index("--") + 1]))
sys.path.insert(0, job["path"])
from wowgrass.blender.build import import_zone
from wowgrass.blender.zone import ZoneOptions

def run():
    out = {}
    t0 = time.perf_counter()
    imp = import_zone(ZoneOptions(data=[job["data"]], tiles=job["tiles"], placement=job["placement"]))
    out["import_s"] = time.perf_counter() - t0
    win = bpy.context.window_manager.windows[0]
    area = max((a for a in win.screen.areas), key=lambda a: a.width * a.height)
    area.type = "VIEW_3D"
    space = area.spaces.active
    space.overlay.show_overlays = False
    region = next(r for r in area.regions if r.type == "WINDOW")
    r3d = space.region_3d
    from mathutils import Vector, Euler
    r3d.view_location = Vector((0.0, 0.0, 60.0))
    r3d.view_rotation = Euler((1.1, 0.0, -0.8)).to_quaternion()
    r3d.view_distance = 300.0
    space.clip_end = 5000.0
    out["frame_ms"] = {}
    for shading in job["shading"]:
        space.shading.type = shading
        with bpy.context.temp_override(window=win, area=area, region=region):
            bpy.ops.wm.redraw_timer(type="DRAW_WIN_SWAP", iterations=2)   # first draws build the batches
            t0 = time.perf_counter()
            bpy.ops.wm.redraw_timer(type="DRAW_WIN_SWAP", iterations=job["frames"])
            out["frame_ms"][shading] = (time.perf_counter() - t0) * 1000.0 / job["frames"]
    out["size"] = [area.width, area.height]
    out["blender"] = bpy.app.version_string
    out["points"] = sum(len(o.data.vertices) for o in bpy.data.objects if o.get("wow_grass"))
    json.dump(out, open(job["report"], "w"))
    bpy.ops.wm.quit_blender()

bpy.app.timers.register(run, first_interval=2.0)
"""


WORKBENCH_SCRIPT = r"""
import bpy, json, sys, time
job = json.load(open(sys.argv[sys.argv.index("--") + 1]))
sys.path.insert(0, job["path"])
from wowgrass.blender.build import import_zone
from wowgrass.blender.headless import camera_over
from wowgrass.blender.zone import ZoneOptions

bpy.ops.wm.read_factory_settings(use_empty=True)
import_zone(ZoneOptions(data=[job["data"]], tiles=job["tiles"], placement=job["placement"]))
scene = bpy.context.scene
camera_over(scene, [o for o in scene.objects if o.name.startswith("terrain ")], size=(1280, 720))
scene.render.engine = "BLENDER_WORKBENCH"
scene.display.shading.color_type = "TEXTURE"
scene.render.filepath = job["png"]
bpy.ops.render.render(write_still=False)   # the first frame builds the draw batches
times = []
for _ in range(job["frames"]):
    t0 = time.perf_counter()
    bpy.ops.render.render(write_still=True)
    times.append((time.perf_counter() - t0) * 1000.0)
json.dump({"frame_ms": min(times), "frames_ms": times, "blender": bpy.app.version_string}, open(job["report"], "w"))
"""


def workbench_frame(py: str, data: Path, tiles: list[str], placement: str, env: dict) -> dict:
    """A Workbench frame of the dense tile in the bpy module (headless: EGL, llvmpipe here): Blender
    5's draw manager, what the viewport's solid mode draws, timed as a render (its setup included)."""
    from wowgrass.cli.blender import _package_path

    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        (t / "w.py").write_text(WORKBENCH_SCRIPT)
        job = {"path": str(_package_path(t)), "data": str(data), "tiles": tiles, "placement": placement, "frames": 3,
               "report": str(t / "r.json"), "png": str(t / "frame.png")}
        (t / "job.json").write_text(json.dumps(job))
        proc = subprocess.run([py, str(t / "w.py"), "--", str(t / "job.json")], env=env, capture_output=True, text=True,
                              timeout=900)
        if not (t / "r.json").is_file():
            return {"error": proc.stderr[-2000:]}
        return json.loads((t / "r.json").read_text())


def viewport(blender: str, data: Path, tiles: list[str], placement: str, env: dict) -> dict:
    from xvfb import private_xvfb, x_env

    from wowgrass.cli.blender import _package_path

    with tempfile.TemporaryDirectory() as tmp, private_xvfb("Xvfb", (1280, 800)) as display:
        t = Path(tmp)
        path = _package_path(t)
        (t / "w.py").write_text(WINDOW_SCRIPT)
        job = {"path": str(path), "data": str(data), "tiles": tiles, "placement": placement, "frames": 10,
               "report": str(t / "r.json"), "shading": ["SOLID", "MATERIAL"]}
        (t / "job.json").write_text(json.dumps(job))
        e = {**{k: v for k, v in env.items() if k != "PYTHONPATH"}, **x_env(display)}
        subprocess.run([blender, "--factory-startup", "-noaudio", "--window-geometry", "0", "0", "1280", "800",
                        "--python", str(t / "w.py"), "--", str(t / "job.json")], env=e, timeout=900,
                       capture_output=True, text=True)
        return json.loads((t / "r.json").read_text()) if (t / "r.json").is_file() else {"error": "no report"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bpy", default=str(ROOT / ".venv-bpy" / "bin" / "python"))
    ap.add_argument("--tiles", default="1,16")
    ap.add_argument("--placement", default="coverage")
    ap.add_argument("--window", metavar="BLENDER", default=None)
    ap.add_argument("--no-frames", action="store_true", help="Skip the Workbench frames (bpy)")
    args = ap.parse_args()
    cache = Path(tempfile.mkdtemp(prefix="bench-blender-"))
    env = dict(os.environ, WOWGRASS_CACHE=str(cache))
    os.environ["WOWGRASS_CACHE"] = str(cache)
    results = {"bpy_baseline_mb": round(bpy_baseline(args.bpy), 1), "load_average": os.getloadavg()}
    print(f"bpy alone: {results['bpy_baseline_mb']:.0f} MB; load average {results['load_average'][0]:.1f}")
    for n in (int(v) for v in args.tiles.split(",")):
        data, tiles = sample(n)
        bake_s = bake(data, tiles, args.placement, env)
        r = import_in_bpy(args.bpy, data, tiles, args.placement, env)
        if "error" in r:
            print(f"{n} tiles: error {r['error']}")
            continue
        results[f"{n}_tiles"] = {"bake_s": round(bake_s, 2), **r}
        print(f"{n} tile(s), {r['grass_points']:,} grass points, {r['objects']} objects: import {r['import_s']:.2f} s ({r['import_cpu_s']:.2f} s CPU) "
              f"(Blender {r['blender']}), peak {r['peak_rss_mb']:.0f} MB (bpy alone "
              f"{results['bpy_baseline_mb']:.0f} MB); bake first {bake_s:.1f} s; the process {r['process_s']:.1f} s")
    data, tiles = sample(1)
    for placement in [] if args.no_frames else dict.fromkeys([args.placement, "client"]):
        w = workbench_frame(args.bpy, data, tiles, placement, env)
        results[f"workbench_{placement}"] = w
        if "frame_ms" in w:
            print(f"Workbench frame, dense tile ({placement} placement), 1280x720, Blender {w['blender']} (bpy, "
                  f"llvmpipe): {w['frame_ms']:.0f} ms (best of {len(w['frames_ms'])})")
        else:
            print(f"Workbench frame: {w}")
    if args.window:
        data, tiles = sample(1)
        v = viewport(args.window, data, tiles, args.placement, env)
        results["viewport"] = v
        if "frame_ms" in v:
            ms = ", ".join(f"{k.lower()} {t:.0f} ms" for k, t in v["frame_ms"].items())
            print(f"viewport (Blender {v['blender']}, {v['size'][0]}x{v['size'][1]}, {v['points']:,} grass "
                  f"instances, llvmpipe): a frame {ms}; import in the window {v['import_s']:.2f} s")
        else:
            print(f"viewport: {v}")
    print(json.dumps(results, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
