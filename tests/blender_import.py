"""Run inside Blender: ``blender -b --factory-startup --python tests/blender_import.py -- FILE.glb OUT.json
[OUT.png] [overview,ground,house] [workbench|eevee]``, or with the PyPI module: ``python
tests/blender_import.py -- ...``
(``pip install bpy``). Imports a .glb with Blender's own glTF importer, reports what it made as JSON
(import seconds, objects, where they sit against the terrain), optionally renders a PNG (Workbench)."""

import json
import math
import sys
import time

import bpy
import mathutils
import numpy

# Debian's Blender 3.4 importer (io_scene_gltf2/blender/imp/gltf2_blender_mesh.py) calls
# numpy.bool, which numpy 1.24 .. 1.26 removed (2.0 has it again); vars() asks without a warning
if "bool" not in vars(numpy):
    numpy.bool = bool

argv = sys.argv[sys.argv.index("--") + 1:]
glb, out_json = argv[0], argv[1]
png = argv[2] if len(argv) > 2 else None
# views, comma-separated: "overview", "ground" (low across the middle), "house" (at the WMO); several
# write OUT_<view>.png each
views = (argv[3] if len(argv) > 3 else "overview").split(",")
engine = argv[4] if len(argv) > 4 else "workbench"  # or "eevee" (Blender 4.2 and later)

bpy.ops.wm.read_factory_settings(use_empty=True)
t0, c0 = time.perf_counter(), time.process_time()
bpy.ops.import_scene.gltf(filepath=glb)
seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
objs = list(bpy.data.objects)


def importer_reads_instancing() -> bool:
    """Whether this Blender's glTF importer knows EXT_mesh_gpu_instancing (3.4's does not)."""
    import os

    import io_scene_gltf2

    root = os.path.dirname(io_scene_gltf2.__file__)
    for folder, _dirs, files in os.walk(os.path.join(root, "blender", "imp")):
        for name in files:
            if name.endswith(".py") and "EXT_mesh_gpu_instancing" in open(os.path.join(folder, name)).read():
                return True
    return False


meshes = [o for o in objs if o.type == "MESH"]
report = {
    "blender": bpy.app.version_string,
    "import_s": round(seconds, 2),
    "import_cpu_s": round(cpu, 2),  # on busy cores the wall time says more about the neighbours
    "objects": len(objs),
    "mesh_objects": len(meshes),
    "empties": sum(o.type == "EMPTY" for o in objs),
    "meshes": len(bpy.data.meshes),
    "materials": len(bpy.data.materials),
    "images": len(bpy.data.images),
    "names": sorted({o.name.split(".")[0] for o in objs})[:50],
    "reads_instancing": importer_reads_instancing(),
}
# instances the importer made: linked duplicates share their mesh data
users = {}
for o in meshes:
    users[o.data.name] = users.get(o.data.name, 0) + 1
report["mesh_users"] = users


def world_box(o):
    m = numpy.array(o.matrix_world)
    c = numpy.array([tuple(v) for v in o.bound_box])
    w = c @ m[:3, :3].T + m[:3, 3]
    return w.min(axis=0), w.max(axis=0)


boxes = {o.name: world_box(o) for o in meshes}
terrain = [o for o in meshes if o.data.name.startswith("terrain")]
if boxes:
    lo = numpy.min([b[0] for b in boxes.values()], axis=0)
    hi = numpy.max([b[1] for b in boxes.values()], axis=0)
    report["bounds"] = [lo.tolist(), hi.tolist()]
if terrain:
    # where the rest sits: the bottom of each object's box against the terrain under its centre
    deps = bpy.context.evaluated_depsgraph_get()
    from mathutils.bvhtree import BVHTree

    trees = [(BVHTree.FromObject(o, deps), o.matrix_world.copy()) for o in terrain]

    def ground(x, y):
        for tree, m in trees:
            inv = m.inverted()
            origin = inv @ mathutils.Vector((x, y, 1e5))
            hit = tree.ray_cast(origin, (inv.to_3x3() @ mathutils.Vector((0, 0, -1))).normalized())
            if hit[0] is not None:
                return (m @ hit[0]).z
        return None

    others = [o for o in meshes if o not in terrain and "water" not in o.data.name.lower()
              and "(" not in o.data.name]  # liquids are named "Water (1)" etc.
    step = max(1, len(others) // 400)
    above, off, lowest = [], 0, {}
    for o in others[::step]:
        blo, bhi = boxes[o.name]
        g = ground((blo[0] + bhi[0]) / 2, (blo[1] + bhi[1]) / 2)
        if g is None:
            off += 1
        else:
            above.append(float(blo[2] - g))
            key = o.data.name.split(".")[0]
            lowest[key] = min(lowest.get(key, 1e9), above[-1])
    report["lowest_by_mesh"] = lowest
    report["sampled"] = len(above) + off
    report["off_terrain"] = off
    if above:
        a = numpy.array(above)
        report["bottom_above_ground"] = {"min": float(a.min()), "median": float(numpy.median(a)),
                                         "max": float(a.max())}
    wmo = [o for o in meshes if o.name.startswith("group ")]
    if wmo:
        blo = numpy.min([boxes[o.name][0] for o in wmo], axis=0)
        bhi = numpy.max([boxes[o.name][1] for o in wmo], axis=0)
        g = ground((blo[0] + bhi[0]) / 2, (blo[1] + bhi[1]) / 2)
        report["wmo_box"] = [blo.tolist(), bhi.tolist()]
        report["wmo_ground"] = g
if png:
    scene = bpy.context.scene
    if engine == "eevee":
        # Workbench in 4.2+ ignores the importer's alpha-clip nodes (grass draws as dark cards); EEVEE reads
        # them, but compiles its shaders on the CPU here (minutes on llvmpipe)
        scene.render.engine = "BLENDER_EEVEE" if bpy.app.version >= (5, 0) else "BLENDER_EEVEE_NEXT"
        scene.eevee.taa_render_samples = 4
        sun = bpy.data.objects.new("sun", bpy.data.lights.new("sun", "SUN"))
        sun.data.energy = 4.0
        sun.rotation_euler = (0.6, 0.2, 0.8)
        scene.collection.objects.link(sun)
    else:
        scene.render.engine = "BLENDER_WORKBENCH"
        scene.display.shading.light = "STUDIO"
        scene.display.shading.color_type = "TEXTURE"
    scene.render.resolution_x, scene.render.resolution_y = 800, 500
    scene.render.filepath = png
    cam_data = bpy.data.cameras.new("cam")
    cam = bpy.data.objects.new("cam", cam_data)
    scene.collection.objects.link(cam)
    scene.camera = cam
    lo, hi = report["bounds"]
    cx, cy = (lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2
    span = max(hi[0] - lo[0], hi[1] - lo[1])
    scene.world = bpy.data.worlds.new("sky")
    scene.world.color = (0.45, 0.6, 0.8)
    if scene.world.node_tree is not None:  # EEVEE lights by the world's Background node
        bg = scene.world.node_tree.nodes.get("Background")
        if bg is not None:
            bg.inputs[0].default_value = (0.45, 0.6, 0.8, 1.0)
    report["render_s"] = {}
    for view in views:
        if len(views) > 1:
            scene.render.filepath = png[:-4] + f"_{view}.png" if png.endswith(".png") else f"{png}_{view}"
        if view == "house" and "wmo_box" in report:
            blo, bhi = report["wmo_box"]
            size = max(bhi[0] - blo[0], bhi[1] - blo[1], bhi[2] - blo[2])
            target = mathutils.Vector(((blo[0] + bhi[0]) / 2, (blo[1] + bhi[1]) / 2, (blo[2] + bhi[2]) / 2))
            cam.location = target + mathutils.Vector((-1.1 * size, -1.1 * size, 0.55 * size))
            cam.rotation_euler = (target - cam.location).to_track_quat("-Z", "Y").to_euler()
            cam_data.lens = 30
            clip = size * 4
        elif view == "ground":
            z0 = sum((o.matrix_world @ mathutils.Vector(c)).z for o in terrain for c in o.bound_box) / max(8 * len(terrain), 1)
            cam.location = (cx - 0.12 * span, cy - 0.12 * span, z0 + 0.03 * span)
            cam.rotation_euler = (math.radians(80), 0.0, math.radians(-45))
            cam_data.lens, clip = 35, span
        else:
            cam.location = (cx - 0.55 * span, cy - 0.55 * span, hi[2] + 0.45 * span)
            cam.rotation_euler = (1.05, 0.0, -0.785)
            cam_data.lens, clip = 50, span
        cam_data.clip_start, cam_data.clip_end = clip * 0.001, clip * 4
        t0 = time.perf_counter()
        bpy.ops.render.render(write_still=True)
        report["render_s"][view] = round(time.perf_counter() - t0, 2)
with open(out_json, "w") as f:
    json.dump(report, f, indent=1)
