"""Run inside Blender (``blender -b --python tests/blender_import.py -- FILE.glb OUT.json [OUT.png]``):
import a .glb with Blender's own glTF importer, report what it made as JSON, optionally render a PNG."""

import json
import sys

import bpy
import numpy

if not hasattr(numpy, "bool"):  # Debian's Blender 3.4 importer uses numpy.bool, gone in numpy 1.24 .. 1.26
    numpy.bool = bool

argv = sys.argv[sys.argv.index("--") + 1:]
glb, out_json = argv[0], argv[1]
png = argv[2] if len(argv) > 2 else None
view = argv[3] if len(argv) > 3 else "overview"  # or "ground": a low view across the middle of the scene

bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.import_scene.gltf(filepath=glb)
objs = list(bpy.data.objects)
meshes = [o for o in objs if o.type == "MESH"]
report = {
    "blender": bpy.app.version_string,
    "objects": len(objs),
    "mesh_objects": len(meshes),
    "empties": sum(o.type == "EMPTY" for o in objs),
    "meshes": len(bpy.data.meshes),
    "materials": len(bpy.data.materials),
    "images": len(bpy.data.images),
    "names": sorted({o.name.split(".")[0] for o in objs})[:50],
    "instanced_by_importer": any(o.get("gltf_instancing") for o in objs),
}
# instances the importer made: linked duplicates share their mesh data
users = {}
for o in meshes:
    users[o.data.name] = users.get(o.data.name, 0) + 1
report["mesh_users"] = users
if meshes:
    import mathutils

    lo = mathutils.Vector((1e30, 1e30, 1e30))
    hi = -lo
    for o in meshes:
        for c in o.bound_box:
            w = o.matrix_world @ mathutils.Vector(c)
            lo = mathutils.Vector(map(min, lo, w))
            hi = mathutils.Vector(map(max, hi, w))
    report["bounds"] = [list(lo), list(hi)]
if png:
    scene = bpy.context.scene
    scene.render.engine = "BLENDER_WORKBENCH"
    scene.display.shading.light = "STUDIO"
    scene.display.shading.color_type = "TEXTURE"
    scene.render.resolution_x, scene.render.resolution_y = 640, 400
    scene.render.filepath = png
    cam_data = bpy.data.cameras.new("cam")
    cam = bpy.data.objects.new("cam", cam_data)
    scene.collection.objects.link(cam)
    scene.camera = cam
    lo, hi = report["bounds"]
    cx, cy = (lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2
    span = max(hi[0] - lo[0], hi[1] - lo[1])
    if view == "ground":
        import math

        ground = [o for o in meshes if o.data.name.startswith("terrain")]
        z0 = sum((o.matrix_world @ mathutils.Vector(c)).z for o in ground for c in o.bound_box) / max(8 * len(ground), 1)
        cam.location = (cx - 0.12 * span, cy - 0.12 * span, z0 + 0.03 * span)
        cam.rotation_euler = (math.radians(80), 0.0, math.radians(-45))
        cam_data.lens = 35
        scene.world = bpy.data.worlds.new("sky")
        scene.world.color = (0.45, 0.6, 0.8)
    else:
        cam.location = (cx - 0.55 * span, cy - 0.55 * span, hi[2] + 0.45 * span)
        cam.rotation_euler = (1.05, 0.0, -0.785)
    cam_data.clip_start, cam_data.clip_end = span * 0.001, span * 4
    bpy.ops.render.render(write_still=True)
with open(out_json, "w") as f:
    json.dump(report, f, indent=1)
