"""Run inside Blender (the PyPI bpy module: ``python tests/blender_ext_session.py -- JOB.json``; or
``blender -b --factory-startup --python tests/blender_ext_session.py -- JOB.json``, 4.2 or later).

One Blender session for tests/test_blender_ext.py: install the extension from its zip into the
(clean) user folder that BLENDER_USER_RESOURCES names, enable it, import through File > Import >
WoW zone's operator, dump the grass points and where things stand against the terrain, cancel an
import halfway, import a damaged tile, re-scatter and hide a model from the panel's operators, try
the rules button, uninstall. Writes OUT/report.json and OUT/<name>_<col>_<row>.npz."""

import json
import os
import sys

import bpy
import numpy as np

job = json.load(open(sys.argv[sys.argv.index("--") + 1]))
out = job["out"]
report = {"blender": bpy.app.version_string, "imports": {}}


def ids_count():
    return {t: len(getattr(bpy.data, t)) for t in ("objects", "meshes", "materials", "images", "collections",
                                                   "node_groups", "lights", "worlds")}


# ----------------------------------------------------------------------------- install, enable
res = bpy.ops.extensions.package_install_files(filepath=job["zip"], repo="user_default", enable_on_install=True)
report["install"] = sorted(res)
report["addons"] = [a.module for a in bpy.context.preferences.addons]
import wowgrass  # noqa: E402 - from the extension's wheel, once installed

report["wowgrass_file"] = wowgrass.__file__
report["heavy_modules"] = sorted(m for m in ("moderngl", "glfw", "pygltflib", "PIL", "imgui_bundle", "rich", "click")
                                 if m in sys.modules)
report["operator"] = hasattr(bpy.types, "IMPORT_SCENE_OT_wow_zone")

from mathutils import Vector  # noqa: E402
from mathutils.bvhtree import BVHTree  # noqa: E402


def ground_checker(root):
    trees = []
    for c in root.children_recursive:
        for o in c.objects:
            if o.name.startswith("terrain "):
                me = o.data
                v = np.zeros(len(me.vertices) * 3, np.float32)
                me.vertices.foreach_get("co", v)
                lp = np.zeros(len(me.loops), np.int32)
                me.loops.foreach_get("vertex_index", lp)
                trees.append(BVHTree.FromPolygons(v.reshape(-1, 3).tolist(), lp.reshape(-1, 3).tolist()))

    def ground(x, y):
        for t in trees:   # terrain objects sit at the identity: world = mesh space
            hit = t.ray_cast(Vector((x, y, 1e5)), Vector((0, 0, -1)))
            if hit[0] is not None:
                return hit[0].z
        return None
    return ground


def dump(name, root, scene):
    """The grass points of each tile, the evaluated instances and where objects stand."""
    info = {"tiles": [], "origin": list(root["wow_origin"])}
    ground = ground_checker(root)
    deps = scene.view_layers[0].depsgraph
    deps.update()
    for tile in root.children:
        grass = next((o for c in tile.children for o in c.objects if o.get("wow_grass")), None)
        entry = {"tile": list(tile["wow_tile"]), "kinds": sorted(c.name.split(" ")[0] for c in tile.children),
                 "objects": {c.name.split(" ")[0]: len(c.objects) for c in tile.children}}
        if grass is not None:
            me = grass.data
            n = len(me.vertices)
            pos = np.zeros(n * 3, np.float32)
            me.vertices.foreach_get("co", pos)
            model = np.zeros(n, np.int32)
            yaw = np.zeros(n, np.float32)
            scale = np.zeros(n, np.float32)
            me.attributes["model"].data.foreach_get("value", model)
            me.attributes["yaw"].data.foreach_get("value", yaw)
            me.attributes["scale"].data.foreach_get("value", scale)
            c, r = tile["wow_tile"]
            np.savez(os.path.join(out, f"{name}_{c}_{r}.npz"), pos=pos.reshape(-1, 3), model=model, yaw=yaw,
                     scale=scale, models=np.array(list(grass["wow_grass_models"])))
            entry["bundle"] = grass["wow_bundle"]
            entry["modifiers"] = [(m.type, m.node_group.name if m.node_group else None) for m in grass.modifiers]
            entry["realized_meshes"] = sum(1 for o in bpy.data.objects if o.type == "MESH" and len(o.data.polygons)
                                           and o.name.startswith("grass "))
            # the evaluated instances: each point's model object, at the point, turned by yaw
            inst, wrong_model, off_point, wrong_yaw = 0, 0, 0, 0
            pts = pos.reshape(-1, 3)
            paths = list(grass["wow_grass_models"])
            for d in deps.object_instances:
                if not d.is_instance or d.parent is None or d.parent.original != grass:
                    continue
                i = d.persistent_id[0]
                if inst < 3000:
                    # the shape instanced is the point's model (by its path, not by a name's number)
                    wrong_model += int(d.object.original.get("wow_model") != paths[model[i]])
                    m = np.array(d.matrix_world)
                    off_point += int(float(np.abs(m[:3, 3] - pts[i]).max()) > 1e-3)
                    ang = np.arctan2(m[1, 0], m[0, 0])
                    wrong_yaw += int(abs((ang - yaw[i] + np.pi) % (2 * np.pi) - np.pi) > 1e-3)
                inst += 1
            entry.update(instances=inst, wrong_model=wrong_model, off_point=off_point, wrong_yaw=wrong_yaw)
            step = max(1, n // 400)
            d = [pts[i, 2] - g for i in range(0, n, step) for g in [ground(*pts[i, :2])] if g is not None]
            entry["grass_above_ground"] = [float(min(d)), float(max(d))] if d else None
            entry["grass_sampled"] = len(d)
        # the terrain material's weight images as Blender holds them: a texel's weights sum to 1
        terrain = next((o for c in tile.children for o in c.objects if o.name.startswith("terrain ")), None)
        if terrain is not None:
            from wowgrass.blender.zone import Zone, ZoneOptions

            opts = ZoneOptions(**json.loads(root["wow_options"]))
            with Zone(opts) as z:
                want = z.terrain(*tile["wow_tile"]).weights.astype(np.float32) / 255.0   # (n, h, w, 4), row 0 south
            got = []
            for node in terrain.active_material.node_tree.nodes:
                if node.bl_idname == "ShaderNodeTexImage" and node.image is not None and "weights" in node.image.name:
                    img = node.image
                    px = np.zeros(img.size[0] * img.size[1] * 4, np.float32)
                    img.pixels.foreach_get(px)
                    got.append(px.reshape(img.size[1], img.size[0], 4))
            entry["weights_error"] = (float(np.abs(np.stack(got) - want).max()) if len(got) == len(want)
                                      else f"{len(got)} weight images, {len(want)} expected")
        placed = [o for c in tile.children for o in c.objects if o.instance_type == "COLLECTION"]
        stand = []
        off = 0
        for o in placed:
            g = ground(o.matrix_world.translation.x, o.matrix_world.translation.y)
            if g is None:
                off += 1
            else:
                stand.append((o["wow_kind"], float(o.matrix_world.translation.z - g)))
        entry["placed"] = stand
        entry["placed_off_terrain"] = off
        info["tiles"].append(entry)
    return info


def run_import(name, **props):
    scene = bpy.data.scenes.new(name)
    before = ids_count()
    entry = {}
    with bpy.context.temp_override(scene=scene):
        try:
            entry["result"] = sorted(bpy.ops.import_scene.wow_zone("EXEC_DEFAULT", **props))
        except RuntimeError as exc:   # the operator's ERROR report, as Blender hands it to a script
            entry["result"], entry["error"] = ["CANCELLED"], str(exc)
    root = next((c for c in scene.collection.children if "wow_map" in c), None)
    entry["made"] = {k: v - before[k] for k, v in ids_count().items()}
    if root is not None:
        entry.update(dump(name, root, scene))
        entry["root"] = root.name
    report["imports"][name] = entry
    return scene, root


for name, props in job["imports"].items():
    print(f"session: import {name}", flush=True)
    run_import(name, **props)

# ----------------------------------------------------------------------------- cancel halfway
from wowgrass.blender.build import ZoneImport, set_hidden  # noqa: E402
from wowgrass.blender.zone import ZoneOptions  # noqa: E402

scene = bpy.data.scenes.new("cancel")
before = ids_count()
imp = ZoneImport(ZoneOptions(data=[job["data"]], tiles=["31:32,32"]), scene)
steps = imp.steps()
next(steps)
next(steps)   # the light and one tile made
mid = ids_count()
imp.cancel()
report["cancel"] = {"before": before, "mid": mid, "after": ids_count(),
                    "scene_children": len(scene.collection.children)}

# ----------------------------------------------------------------------------- the panel's operators
from wowgrass.blender import addon  # noqa: E402

scene = bpy.data.scenes["sample"]
root = next(c for c in scene.collection.children if "wow_map" in c)
tile = root.children[0]
grass = next(o for c in tile.children for o in c.objects if o.get("wow_grass"))
panel = {"points_before": len(grass.data.vertices)}
with bpy.context.temp_override(scene=scene):
    found = addon.tile_of(grass)
    panel["found"] = found is not None and found[2] == grass
    obj = addon.rescatter(*found, placement="client", picks=None, capacity=False)
    panel["points_no_capacity"] = len(obj.data.vertices)
    panel["same_object"] = obj == grass
    panel["bundle_no_capacity"] = obj["wow_bundle"]
    model = np.zeros(len(obj.data.vertices), np.int32)
    obj.data.attributes["model"].data.foreach_get("value", model)
    set_hidden(obj, [0])
    deps = scene.view_layers[0].depsgraph
    deps.update()
    shown = sum(1 for d in deps.object_instances if d.is_instance and d.parent is not None
                and d.parent.original == obj)
    panel["hidden_model0"] = int((model == 0).sum())
    panel["shown_after_hide"] = shown
    # the rules button: a rules file beside the data (the top data folder)
    with bpy.context.temp_override(active_object=obj, object=obj):
        try:
            res = bpy.ops.wow.apply_rules()
        except RuntimeError as exc:   # an operator's ERROR report raises here in background mode
            res = {"RuntimeError": str(exc)}
    panel["rules"] = sorted(res) if isinstance(res, set) else res
report["panel"] = panel

# ----------------------------------------------------------------------------- uninstall
repo_index = next(i for i, r in enumerate(bpy.context.preferences.extensions.repos) if r.module == "user_default")
res = bpy.ops.extensions.package_uninstall(repo_index=repo_index, pkg_id="wowgrass_zone")
report["uninstall"] = sorted(res)
report["addons_after"] = [a.module for a in bpy.context.preferences.addons]
report["operator_after"] = hasattr(bpy.types, "IMPORT_SCENE_OT_wow_zone")
report["package_dir_after"] = os.path.exists(os.path.join(os.environ["BLENDER_USER_RESOURCES"], "extensions",
                                                          "user_default", "wowgrass_zone"))
with open(os.path.join(out, "report.json"), "w") as f:
    json.dump(report, f, indent=1, default=lambda v: v.item() if hasattr(v, 'item') else str(v))
print("session: done", flush=True)
