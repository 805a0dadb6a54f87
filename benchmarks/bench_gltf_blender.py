"""Blender imports of a dense tile in each ``--instancing`` mode: import seconds, objects, a render.

Exports the sample world's tile 32,32 with the default (coverage) placement, about 159,000 grass
instances, once per mode, then imports each file headless in every Blender given and renders it
with ``tests/blender_import.py`` (an overview and a view at the house). Writes ``results.json``
and the PNGs into OUT; look at the pictures: the house on its hill, the grass on the terrain.

    .venv/bin/python benchmarks/bench_gltf_blender.py OUT [--blender blender] [--bpy PYTHON]
        [--modes merged,ext,nodes] [--views overview,house]

``--blender``: a Blender executable (Debian's 3.4: ``apt-get install blender python3-numpy``);
``--bpy``: a Python with the PyPI module (``python3.11 -m venv v && v/bin/pip install bpy``).
Either may repeat; none given: ``blender`` from PATH. ``nodes`` takes minutes and gigabytes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def export(out: Path, mode: str, cache: Path) -> dict:
    glb = out / f"dense_{mode}.glb"
    env = dict(os.environ, WOWGRASS_CACHE=str(cache))
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "wowgrass", "export", "gltf", "--tile", "32,32", "--instancing",
                           mode, "-o", str(glb), "--json"], capture_output=True, text=True, env=env, check=True)
    s = json.loads(proc.stdout)
    return {"file": str(glb), "export_s": round(time.perf_counter() - t0, 2), "bytes": s["bytes"],
            "nodes": s["node_count"], "meshes": s["mesh_count"], "grass_instances": s["grass_instance_count"],
            "merged_meshes": s["merged_mesh_count"], "warnings": s["warnings"]}


def blender_run(cmd: list[str], glb: str, out: Path, label: str, views: str) -> dict:
    report = out / f"{label}.json"
    t0 = time.perf_counter()
    proc = subprocess.run([*cmd, str(ROOT / "tests" / "blender_import.py"), "--", glb, str(report),
                           str(out / f"{label}.png"), views], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if not report.is_file():
        return {"error": (proc.stdout + proc.stderr)[-2000:], "wall_s": round(wall, 1)}
    r = json.loads(report.read_text())
    keep = ("blender", "import_s", "import_cpu_s", "objects", "mesh_objects", "meshes", "reads_instancing",
            "off_terrain",
            "bottom_above_ground", "wmo_box", "wmo_ground", "render_s")
    return {**{k: r.get(k) for k in keep}, "wall_s": round(wall, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--blender", action="append", default=[])
    ap.add_argument("--bpy", action="append", default=[])
    ap.add_argument("--modes", default="merged,ext,nodes")
    ap.add_argument("--views", default="overview,house")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    importers = [(f"blender{i}", [b, "-b", "--factory-startup", "--python"]) for i, b in enumerate(a.blender)]
    importers += [(f"bpy{i}", [p]) for i, p in enumerate(a.bpy)]
    if not importers:
        importers = [("blender0", ["blender", "-b", "--factory-startup", "--python"])]
    results = {"modes": {}, "imports": []}
    for mode in a.modes.split(","):
        results["modes"][mode] = e = export(a.out, mode, a.out / "cache")
        print(f"{mode}: export {e['export_s']} s, {e['bytes'] / 1e6:.1f} MB, {e['nodes']:,} nodes", flush=True)
        for name, cmd in importers:
            r = blender_run(cmd, e["file"], a.out, f"{name}_{mode}", a.views)
            r.update(importer=name, mode=mode)
            results["imports"].append(r)
            if "error" in r:
                print(f"  {name}: failed: {r['error'][-300:]}", flush=True)
            else:
                print(f"  Blender {r['blender']}: import {r['import_s']} s ({r['import_cpu_s']} s CPU), "
                      f"{r['objects']:,} objects "
                      f"(wall {r['wall_s']} s)", flush=True)
    (a.out / "results.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
