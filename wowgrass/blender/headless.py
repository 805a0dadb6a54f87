"""Run inside Blender: import a zone, save the .blend, optionally render a PNG; what
``wowgrass blender import`` runs (``blender -b --factory-startup --python headless.py -- JOB.json``
or ``PYTHON headless.py -- JOB.json`` with the PyPI bpy module).

JOB.json: {"path": folder holding wowgrass (put first on sys.path), "options": ZoneOptions fields,
"output": .blend or null, "render": PNG or null, "size": [w, h], "report": JSON path}. Progress
lines ``wowgrass-progress DONE TOTAL WHAT`` go to stdout; the report holds the counts, the seconds,
the peak memory and the tiles left out with why, or {"error": ...}.
"""

from __future__ import annotations

import json
import sys


def _job() -> dict:
    argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else sys.argv[1:]
    with open(argv[0]) as f:
        return json.load(f)


def camera_over(scene, objects, *, size=(960, 540), lens=35.0):
    """A camera looking down across the tiles from their south-west, over the terrain's bounds."""
    import bpy
    import mathutils
    import numpy as np

    boxes = []
    for o in objects:
        m = np.array(o.matrix_world)
        c = np.array([tuple(v) for v in o.bound_box]) @ m[:3, :3].T + m[:3, 3]
        boxes.append((c.min(axis=0), c.max(axis=0)))
    lo = np.min([b[0] for b in boxes], axis=0)
    hi = np.max([b[1] for b in boxes], axis=0)
    centre = (lo + hi) / 2
    span = float(max(hi[0] - lo[0], hi[1] - lo[1]))
    cam = bpy.data.objects.new("WoW camera", bpy.data.cameras.new("WoW camera"))
    scene.collection.objects.link(cam)
    # WoW +X is north, +Y west: stand south-east of the centre, looking north-west and down
    cam.location = mathutils.Vector((centre[0] - 0.42 * span, centre[1] - 0.42 * span, hi[2] + 0.22 * span))
    target = mathutils.Vector((centre[0], centre[1], centre[2]))
    cam.rotation_euler = (target - cam.location).to_track_quat("-Z", "Y").to_euler()
    cam.data.lens = lens
    cam.data.clip_start, cam.data.clip_end = 0.5, span * 4
    scene.camera = cam
    scene.render.resolution_x, scene.render.resolution_y = size
    return cam


def render(scene, png: str, size) -> float:
    import time

    import bpy

    terrain = [o for o in scene.objects if o.name.startswith("terrain ")]
    camera_over(scene, terrain or [o for o in scene.objects if o.type == "MESH"], size=size)
    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = 16
    scene.cycles.use_denoising = False
    scene.render.filepath = png
    scene.render.image_settings.file_format = "PNG"
    t0 = time.perf_counter()
    bpy.ops.render.render(write_still=True)
    return time.perf_counter() - t0


def main() -> int:
    job = _job()
    if job.get("path"):
        sys.path.insert(0, job["path"])
    report: dict = {}
    try:
        import resource
        import time

        import bpy

        from wowgrass.blender.build import ZoneImport, pack_generated
        from wowgrass.blender.zone import ZoneOptions

        bpy.ops.wm.read_factory_settings(use_empty=True)
        t0, c0 = time.perf_counter(), time.process_time()
        imp = ZoneImport(ZoneOptions(**job["options"]), bpy.context.scene)
        try:
            for done, total, what in imp.steps():
                print(f"wowgrass-progress {done} {total} {what}", flush=True)
        except BaseException:
            imp.cancel()
            raise
        imp.close()
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        report = {
            "blender": bpy.app.version_string, "map": imp.zone.map_name,
            "tiles": [list(t) for t in imp.zone.tiles if t not in imp.errors],
            "errors": {f"{c},{r}": why for (c, r), why in imp.errors.items()},
            "origin": [float(v) for v in imp.zone.origin], "import_s": round(seconds, 3), "import_cpu_s": round(cpu, 3), "steps_s": imp.seconds,
            "objects": len(bpy.data.objects), "meshes": len(bpy.data.meshes), "images": len(bpy.data.images),
            "grass_points": sum(len(o.data.vertices) for o in bpy.data.objects if o.get("wow_grass")),
            "missing_models": sorted(imp.zone.missing_models), "missing_textures": sorted(imp.zone.missing_textures),
            "light": getattr(imp, "light_note", None) or "tables",
            "light_warnings": imp.light_warnings,
        }
        if job.get("output"):
            pack_generated()
            bpy.ops.wm.save_as_mainfile(filepath=job["output"], compress=False)
        if job.get("render"):
            report["render_s"] = round(render(bpy.context.scene, job["render"], tuple(job.get("size") or (960, 540))), 2)
        report["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)
    except Exception as exc:   # noqa: BLE001 - reported as the command's error, never a traceback
        from wowgrass.errors import WowgrassError

        report = {"error": str(exc) if isinstance(exc, (WowgrassError, OSError)) else f"{type(exc).__name__}: {exc}"}
    with open(job["report"], "w") as f:
        json.dump(report, f, indent=1)
    return 0 if "error" not in report else 2


if __name__ == "__main__":
    sys.exit(main())
