"""Scatter one ground effect over a tile in Blender with geometry nodes, from `wowgrass export layers`.

    blender -b --factory-startup --python docs/recipes/blender_scatter_layers.py -- TILE_DIR \
        [--effect ID] [--factor F] [--model GRASS.glb] [--seed N] [--report OUT.json] \
        [--render OUT.png] [--save OUT.blend]

TILE_DIR is one tile's folder of `export layers` (layers.json, heights.png, effect.png,
no_effect_doodad.png, and effect_high.png where an id of the tile needs more than 16 bits). Without -b and with --save left out, run it from Blender's Text editor or
`blender --python ...` and keep working in the scene it builds.

What it builds (stock nodes, Blender 3.4 and later):
- the terrain: a 129x129 vertex grid from heights.png (height = offset + value x scale), centred on
  the tile (Blender X = WoW X - centre X, Blender Y = WoW Y - centre Y, Z = WoW Z);
- a geometry-nodes modifier on it: Distribute Points on Faces (the effect's density per 4.1667-yard
  cell x --factor), each point's position turned into the images' UV (u = 0.5 - Y / 533.33,
  v = 0.5 + X / 533.33), effect.png and no_effect_doodad.png sampled there (Closest), points deleted
  where the id is not --effect or noEffectDoodad is set (an id past 16 bits: effect.png holds its low
  16 bits and effect_high.png its high ones, each compared on its own: exact in the nodes' float32), Instance on Points (a cone, or the first mesh
  of --model: `wowgrass m2 export` writes one) with a random yaw and scale, joined to the terrain.

--report writes the instances' positions in WoW world coordinates (and what was built) as JSON;
--render a top-down picture (Workbench): cells of the effect green, noEffectDoodad cells red, the rest
grey, the instances dark.
"""

import argparse
import json
import math
import sys
from pathlib import Path

import bpy

TILE = 533.3333333333334
CELLS = 128


def parse_args():
    argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    ap = argparse.ArgumentParser(prog="blender_scatter_layers.py")
    ap.add_argument("tile_dir", type=Path)
    ap.add_argument("--effect", type=int, default=None,
                    help="GroundEffectTexture id to scatter (default: the one on most cells with a density)")
    ap.add_argument("--factor", type=float, default=1.0, help="multiplies the effect's density")
    ap.add_argument("--model", type=Path, default=None, help="a .glb whose first mesh is instanced")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--report", type=Path, default=None)
    ap.add_argument("--render", type=Path, default=None)
    ap.add_argument("--render-size", type=int, default=1024)
    ap.add_argument("--save", type=Path, default=None)
    return ap.parse_args(argv)


def load_grey(path: Path, scale: float):
    """A greyscale PNG's values as rows top-down (a list of lists), scaled: Blender stores rows
    bottom-up and 8/16-bit values as 0..1."""
    img = bpy.data.images.load(str(path), check_existing=True)
    img.colorspace_settings.name = "Non-Color"
    w, h = img.size
    px = list(img.pixels)  # RGBA floats
    rows = [[round(px[(y * w + x) * 4] * scale) for x in range(w)] for y in range(h)]
    rows.reverse()
    return img, rows


def build_terrain(doc, tile_dir: Path):
    hp = doc["files"]["heights.png"]
    _, heights = load_grey(tile_dir / "heights.png", 65535.0)
    n = len(heights)
    step = TILE / (n - 1)
    verts, uvs_at = [], []
    for py in range(n):
        for px in range(n):
            # vertex (px, py): WoW X = north_x - py * step, Y = west_y - px * step; centred on the tile
            verts.append((TILE / 2 - py * step, TILE / 2 - px * step, hp["offset"] + heights[py][px] * hp["scale"]))
    faces = []
    for py in range(n - 1):
        for px in range(n - 1):
            a = py * n + px
            faces.append((a, a + n, a + n + 1, a + 1))
    mesh = bpy.data.meshes.new("terrain")
    mesh.from_pydata(verts, [], faces)
    uv = mesh.uv_layers.new(name="UVMap")
    for loop in mesh.loops:
        x, y, _ = verts[loop.vertex_index]
        uv.data[loop.index].uv = (0.5 - y / TILE, 0.5 + x / TILE)
    mesh.update()
    obj = bpy.data.objects.new("terrain", mesh)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def group_sockets(tree):
    """Geometry in and out of a node group (the interface API changed in Blender 4.0)."""
    if hasattr(tree, "interface"):
        tree.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
        tree.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    else:
        tree.inputs.new("NodeSocketGeometry", "Geometry")
        tree.outputs.new("NodeSocketGeometry", "Geometry")


def image_node(nodes, links, image, uvw):
    node = nodes.new("GeometryNodeImageTexture")
    node.interpolation = "Closest"
    node.extension = "EXTEND"
    node.inputs["Image"].default_value = image
    links.new(uvw, node.inputs["Vector"])
    return node.outputs["Color"]


def math_node(nodes, op, a, b=None, c=None):
    node = nodes.new("ShaderNodeMath")
    node.operation = op
    for i, v in enumerate((a, b, c)):
        if v is None:
            continue
        if isinstance(v, (int, float)):
            node.inputs[i].default_value = v
        else:
            node.id_data.links.new(v, node.inputs[i])
    return node.outputs[0]


def compare(nodes, links, op, a, b: float, eps: float = 0.0):
    node = nodes.new("FunctionNodeCompare")
    node.data_type = "FLOAT"
    node.operation = op
    links.new(a, node.inputs[0])
    node.inputs[1].default_value = b
    if op in ("EQUAL", "NOT_EQUAL"):
        node.inputs["Epsilon"].default_value = eps
    return node.outputs[0]


def scatter_nodes(terrain, effect_imgs, noe_img, effect_id: int, density: float, seed: int, model):
    tree = bpy.data.node_groups.new("wowgrass scatter", "GeometryNodeTree")
    group_sockets(tree)
    nodes, links = tree.nodes, tree.links
    gin, gout = nodes.new("NodeGroupInput"), nodes.new("NodeGroupOutput")
    dist = nodes.new("GeometryNodeDistributePointsOnFaces")
    dist.distribute_method = "RANDOM"
    links.new(gin.outputs[0], dist.inputs["Mesh"])
    dist.inputs["Density"].default_value = density
    dist.inputs["Seed"].default_value = seed
    # the point's position -> the images' UV (image +x east = -Y, Blender's V up = north = +X)
    sep = nodes.new("ShaderNodeSeparateXYZ")
    links.new(nodes.new("GeometryNodeInputPosition").outputs[0], sep.inputs[0])
    u = math_node(nodes, "MULTIPLY_ADD", sep.outputs["Y"], -1.0 / TILE, 0.5)
    v = math_node(nodes, "MULTIPLY_ADD", sep.outputs["X"], 1.0 / TILE, 0.5)
    uvw = nodes.new("ShaderNodeCombineXYZ")
    links.new(u, uvw.inputs["X"])
    links.new(v, uvw.inputs["Y"])
    # the id's 16-bit words, low (effect.png) and high (effect_high.png, where the tile has one)
    other = None
    for shift, img in zip((0, 16), effect_imgs):
        word = math_node(nodes, "MULTIPLY", image_node(nodes, links, img, uvw.outputs[0]), 65535.0)
        differs = compare(nodes, links, "NOT_EQUAL", word, float((effect_id >> shift) & 0xFFFF), 0.5)
        if other is None:
            other = differs
        else:
            node = nodes.new("FunctionNodeBooleanMath")
            node.operation = "OR"
            links.new(other, node.inputs[0])
            links.new(differs, node.inputs[1])
            other = node.outputs[0]
    noe = compare(nodes, links, "GREATER_THAN", image_node(nodes, links, noe_img, uvw.outputs[0]), 0.5)
    either = nodes.new("FunctionNodeBooleanMath")
    either.operation = "OR"
    links.new(other, either.inputs[0])
    links.new(noe, either.inputs[1])
    delete = nodes.new("GeometryNodeDeleteGeometry")
    delete.domain = "POINT"
    links.new(dist.outputs["Points"], delete.inputs["Geometry"])
    links.new(either.outputs[0], delete.inputs["Selection"])
    inst = nodes.new("GeometryNodeInstanceOnPoints")
    links.new(delete.outputs[0], inst.inputs["Points"])
    if model is not None:
        info = nodes.new("GeometryNodeObjectInfo")
        info.inputs["Object"].default_value = model
        info.inputs["As Instance"].default_value = True
        links.new(info.outputs["Geometry"], inst.inputs["Instance"])
    else:
        cone = nodes.new("GeometryNodeMeshCone")
        cone.inputs["Radius Bottom"].default_value = 0.6
        cone.inputs["Depth"].default_value = 1.5
        links.new(cone.outputs["Mesh"], inst.inputs["Instance"])
    yaw = nodes.new("FunctionNodeRandomValue")
    yaw.data_type = "FLOAT_VECTOR"
    yaw.inputs["Max"].default_value = (0.0, 0.0, 2 * math.pi)
    yaw.inputs["Seed"].default_value = seed + 1
    links.new(yaw.outputs["Value"], inst.inputs["Rotation"])
    size = nodes.new("FunctionNodeRandomValue")
    size.data_type = "FLOAT"
    size.inputs[2].default_value, size.inputs[3].default_value = 0.8, 1.2  # Min, Max of the float kind
    size.inputs["Seed"].default_value = seed + 2
    links.new(size.outputs[1], inst.inputs["Scale"])
    mat = bpy.data.materials.new("grass")
    mat.diffuse_color = (0.02, 0.12, 0.02, 1.0)
    setmat = nodes.new("GeometryNodeSetMaterial")
    setmat.inputs["Material"].default_value = mat
    links.new(inst.outputs[0], setmat.inputs["Geometry"])
    join = nodes.new("GeometryNodeJoinGeometry")
    links.new(setmat.outputs[0], join.inputs[0])
    links.new(gin.outputs[0], join.inputs[0])
    links.new(join.outputs[0], gout.inputs[0])
    mod = terrain.modifiers.new("wowgrass scatter", "NODES")
    mod.node_group = tree
    return tree


def preview_material(effect_rows, noe_rows, effect_id):
    """The terrain's colour for the picture: the effect's cells green, noEffectDoodad red, else grey."""
    img = bpy.data.images.new("cells", CELLS, CELLS)
    px = []
    for py in reversed(range(CELLS)):  # Blender rows run bottom-up
        for x in range(CELLS):
            if noe_rows[py][x]:
                px += (0.75, 0.15, 0.1, 1.0)
            elif effect_rows[py][x] == effect_id:
                px += (0.35, 0.75, 0.3, 1.0)
            else:
                px += (0.55, 0.55, 0.55, 1.0)
    img.pixels = px
    mat = bpy.data.materials.new("cells")
    mat.use_nodes = True
    tex = mat.node_tree.nodes.new("ShaderNodeTexImage")
    tex.image = img
    tex.interpolation = "Closest"
    bsdf = mat.node_tree.nodes["Principled BSDF"]
    mat.node_tree.links.new(tex.outputs["Color"], bsdf.inputs["Base Color"])
    return mat


def render_top(path: Path, size: int, z_top: float):
    scene = bpy.context.scene
    cam_data = bpy.data.cameras.new("top")
    cam_data.type = "ORTHO"
    cam_data.ortho_scale = TILE
    cam_data.clip_end = 5000.0
    cam = bpy.data.objects.new("top", cam_data)
    cam.location = (0.0, 0.0, z_top + 100.0)
    # looking down with image up = north (+X) and image right = east (-Y)
    cam.rotation_euler = (0.0, 0.0, -math.pi / 2)
    scene.collection.objects.link(cam)
    scene.camera = cam
    scene.render.engine = "BLENDER_WORKBENCH"
    scene.display.shading.light = "FLAT"
    scene.display.shading.color_type = "TEXTURE"
    scene.render.resolution_x = scene.render.resolution_y = size
    scene.render.resolution_percentage = 100
    scene.render.filepath = str(path)
    bpy.ops.render.render(write_still=True)


def main():
    args = parse_args()
    tile_dir = args.tile_dir
    doc = json.loads((tile_dir / "layers.json").read_text())
    effects = {int(k): v for k, v in doc["effects"].items()}
    effect_id = args.effect
    if effect_id is None:
        with_density = {k: v for k, v in effects.items() if v.get("density")}
        if not with_density:
            sys.exit(f"{tile_dir}: no effect with a density in layers.json")
        effect_id = max(with_density, key=lambda k: with_density[k].get("cell_count", 0))
    if effect_id not in effects:
        sys.exit(f"{tile_dir}: effect {effect_id} is not on this tile (it has {sorted(effects)})")
    bpy.ops.wm.read_factory_settings(use_empty=True)
    effect_img, effect_rows = load_grey(tile_dir / "effect.png", 65535.0)
    effect_imgs = [effect_img]
    if "effect_high.png" in doc["files"]:   # ids past 16 bits: id = effect.png + 65536 x effect_high.png
        high_img, high_rows = load_grey(tile_dir / "effect_high.png", 65535.0)
        effect_imgs.append(high_img)
        effect_rows = [[lo + 65536 * hi for lo, hi in zip(a, b)] for a, b in zip(effect_rows, high_rows)]
    noe_img, noe_rows = load_grey(tile_dir / "no_effect_doodad.png", 1.0)
    terrain = build_terrain(doc, tile_dir)
    model = None
    if args.model is not None:
        import numpy

        if "bool" not in vars(numpy):  # Debian's Blender 3.4 importer calls numpy.bool
            numpy.bool = bool
        bpy.ops.import_scene.gltf(filepath=str(args.model))
        model = next((o for o in bpy.context.selected_objects if o.type == "MESH"), None)
        if model is None:
            sys.exit(f"{args.model}: no mesh in it")
        model.hide_render = True
        model.location = (0.0, 0.0, -10000.0)
    cell_area = (TILE / CELLS) ** 2
    density = effects[effect_id]["density"] * args.factor / cell_area  # per square yard of surface
    scatter_nodes(terrain, effect_imgs, noe_img, effect_id, density, args.seed, model)
    terrain.data.materials.append(preview_material(effect_rows, noe_rows, effect_id))

    depsgraph = bpy.context.evaluated_depsgraph_get()
    centre_x = (doc["world"]["north_x"] + doc["world"]["south_x"]) / 2
    centre_y = (doc["world"]["west_y"] + doc["world"]["east_y"]) / 2
    points = []
    for inst in depsgraph.object_instances:
        if inst.is_instance and inst.parent and inst.parent.original == terrain:
            t = inst.matrix_world.translation
            points.append((t.x + centre_x, t.y + centre_y, t.z))
    eligible = sum(1 for py in range(CELLS) for x in range(CELLS)
                   if effect_rows[py][x] == effect_id and not noe_rows[py][x])
    print(f"{tile_dir.name}: effect {effect_id} (density {effects[effect_id]['density']} a cell x {args.factor}): "
          f"{len(points)} instances over {eligible} cells (Blender {bpy.app.version_string})")
    if args.report:
        args.report.write_text(json.dumps({
            "blender": bpy.app.version_string, "tile_dir": str(tile_dir), "effect": effect_id,
            "density_per_square_yard": density, "eligible_cell_count": eligible,
            "world_centre": [centre_x, centre_y], "instance_count": len(points),
            "positions": [[round(c, 4) for c in p] for p in points]}))
    if args.render:
        z_top = max(v.co.z for v in terrain.data.vertices)
        render_top(args.render, args.render_size, z_top)
    if args.save:
        bpy.ops.wm.save_as_mainfile(filepath=str(args.save))


main()
