"""A zone's arrays (:mod:`.zone`) made into Blender data: collections per tile, meshes written
once and placed as collection instances, a tile's grass as one point mesh with a geometry-nodes
modifier that instances the grass models on its points (nothing realized).

Runs inside Blender (bpy). :class:`ZoneImport` works in steps (a tile's part each) so that the
operator can show progress and stop between steps; :meth:`ZoneImport.cancel` removes every
datablock the import made, so a cancelled or failed import leaves nothing behind.
"""

from __future__ import annotations

import json
import time

import bpy
import numpy as np

from .zone import GrassPoints, Material, ModelMesh, Zone, ZoneOptions, tile_error

from . import GRASS_GROUP
KINDS = ("Terrain", "Water", "Buildings", "Doodads", "Grass")
ALPHA_REF = 0.5           # the viewer's alpha test (grass.glsl, doodad.glsl)
TEXTURE_REPEAT = 8        # a layer texture repeats 8 times a chunk, as the client draws it
ID_TYPES = ("objects", "meshes", "materials", "images", "collections", "node_groups", "lights", "worlds")


def _new_ids() -> dict:
    return {t: set(getattr(bpy.data, t)) for t in ID_TYPES}


# ----------------------------------------------------------------------------- meshes


def make_mesh(name: str, positions, triangles=None, *, uv=None, normals=None, colours=None, colour_name="Col"):
    """A mesh from arrays (bulk foreach_set, no per-vertex Python): vertices, triangles, a UV per
    vertex (spread to the loops), custom normals, a colour attribute per vertex."""
    me = bpy.data.meshes.new(name)
    pos = np.ascontiguousarray(positions, np.float32).reshape(-1, 3)
    me.vertices.add(len(pos))
    me.vertices.foreach_set("co", pos.ravel())
    if triangles is not None and len(triangles):
        tri = np.ascontiguousarray(triangles, np.int32).reshape(-1, 3)
        k = len(tri)
        me.loops.add(3 * k)
        me.loops.foreach_set("vertex_index", tri.ravel())
        me.polygons.add(k)
        me.polygons.foreach_set("loop_start", np.arange(0, 3 * k, 3, dtype=np.int32))
        if bpy.app.version < (4, 0):
            me.polygons.foreach_set("loop_total", np.full(k, 3, np.int32))
        me.update(calc_edges=True)
        if uv is not None:
            layer = me.uv_layers.new(name="UVMap")
            layer.data.foreach_set("uv", np.ascontiguousarray(np.asarray(uv, np.float32)[tri.ravel()]).ravel())
        me.polygons.foreach_set("use_smooth", np.ones(k, bool))
        if normals is not None:
            n = np.asarray(normals, np.float32).reshape(-1, 3)
            if bpy.app.version < (4, 1):
                me.use_auto_smooth = True
            me.normals_split_custom_set_from_vertices(n)
    else:
        me.update()
    if colours is not None:
        attr = me.color_attributes.new(colour_name, "FLOAT_COLOR", "POINT")
        c = np.ones((len(pos), 4), np.float32)
        c[:, :3] = np.asarray(colours, np.float32).reshape(-1, 3)
        attr.data.foreach_set("color", c.ravel())
    return me


def set_point_attributes(me, **attrs) -> None:
    """Point attributes from arrays: int32 -> INT, bool -> BOOLEAN, else FLOAT."""
    for name, arr in attrs.items():
        arr = np.asarray(arr)
        kind = "INT" if arr.dtype.kind in "iu" else ("BOOLEAN" if arr.dtype == bool else "FLOAT")
        if name in me.attributes:
            me.attributes.remove(me.attributes[name])
        a = me.attributes.new(name, kind, "POINT")
        a.data.foreach_set("value", arr.astype({"INT": np.int32, "BOOLEAN": bool, "FLOAT": np.float32}[kind]))


def points_mesh(name: str, g: GrassPoints):
    me = bpy.data.meshes.new(name)
    me.vertices.add(len(g.positions))
    me.vertices.foreach_set("co", np.ascontiguousarray(g.positions, np.float32).ravel())
    set_point_attributes(me, model=g.model.astype(np.int32), yaw=g.yaw, scale=g.scale,
                         visible=np.ones(len(g.positions), bool))
    me.update()
    return me


# ----------------------------------------------------------------------------- images, materials


def rgba_image(name: str, rgba: np.ndarray, *, non_colour: bool = False, flip: bool = True):
    """An image from (h, w, 4) u1 (row 0 at the top unless ``flip`` is False: Blender's rows go up)."""
    h, w = rgba.shape[:2]
    img = bpy.data.images.new(name, w, h, alpha=True, is_data=non_colour)
    if non_colour:   # before the pixels: a generated image's buffer is made again when these change
        img.colorspace_settings.name = "Non-Color"
        img.alpha_mode = "CHANNEL_PACKED"   # four weights, not a colour and its coverage
    px = np.asarray(rgba[::-1] if flip else rgba, np.float32) * (1.0 / 255.0)
    img.pixels.foreach_set(np.ascontiguousarray(px).ravel())
    img.update()
    img["wow_generated"] = True   # packed into the .blend when saved (pack_generated)
    return img


def pack_generated() -> int:
    """Pack the import's images into the .blend (a generated image is lost on save otherwise)."""
    n = 0
    for img in bpy.data.images:
        if img.get("wow_generated") and img.packed_file is None:
            img.pack()
            n += 1
    return n


def _link(nt, a, b):
    nt.links.new(a, b)


def _alpha_mode(mat, blend: str) -> None:
    if bpy.app.version >= (4, 2):
        mat.surface_render_method = "DITHERED" if blend != "blend" else "BLENDED"
    else:
        mat.blend_method = {"opaque": "OPAQUE", "clip": "CLIP", "blend": "BLEND"}[blend]
        if blend == "clip":
            mat.alpha_threshold = ALPHA_REF


class Library:
    """Images, materials, model collections: each made once per import."""

    def __init__(self, zone: Zone, root_name: str, models=None):
        self.zone = zone
        self.images: dict = {}
        self.materials: dict = {}
        self.m2: dict = {}
        self.wmo: dict = {}
        self.models = models or bpy.data.collections.new(f"{root_name} models")
        self.models.use_fake_user = True   # instanced, never drawn itself
        for c in self.models.children:     # a later re-scatter reuses the import's models
            if c.get("wow_model") and c.objects:
                self.m2.setdefault(c["wow_model"].lower(), c)

    def image(self, path: str | None):
        if not path:
            return None
        key = path.lower()
        if key not in self.images:
            rgba = self.zone.texture(path)
            self.images[key] = None if rgba is None else rgba_image(path.replace("\\", "/").split("/")[-1], rgba)
        return self.images[key]

    def material(self, m: Material):
        key = (m.name, m.texture, m.blend, m.two_sided, m.colour)
        if key in self.materials:
            return self.materials[key]
        mat = bpy.data.materials.new(m.name)
        mat.use_nodes = True
        mat.use_backface_culling = not m.two_sided
        nt = mat.node_tree
        bsdf = nt.nodes.get("Principled BSDF")
        bsdf.inputs["Roughness"].default_value = 1.0
        bsdf.inputs["Base Color"].default_value = m.colour
        img = self.image(m.texture)
        alpha = None
        if img is not None:
            tex = nt.nodes.new("ShaderNodeTexImage")
            tex.image = img
            tex.location = (-400, 200)
            _link(nt, tex.outputs["Color"], bsdf.inputs["Base Color"])
            alpha = tex.outputs["Alpha"]
        if m.blend == "clip" and alpha is not None:
            # the client's alpha test: a texel is drawn or not (no blending)
            gt = nt.nodes.new("ShaderNodeMath")
            gt.operation = "GREATER_THAN"
            gt.inputs[1].default_value = ALPHA_REF
            _link(nt, alpha, gt.inputs[0])
            _link(nt, gt.outputs[0], bsdf.inputs["Alpha"])
        elif m.blend == "blend":
            if alpha is not None and m.colour[3] >= 1.0:
                _link(nt, alpha, bsdf.inputs["Alpha"])
            else:
                bsdf.inputs["Alpha"].default_value = m.colour[3]
        _alpha_mode(mat, m.blend if (m.blend != "clip" or alpha is not None) else "opaque")
        self.materials[key] = mat
        return mat

    def mesh(self, mm: ModelMesh, name: str):
        """A Blender mesh of a model mesh, a material slot per part."""
        tris = [t for t, _m in mm.parts]
        uv = None
        if mm.uv is not None and len(mm.uv) == len(mm.positions):
            uv = np.stack([mm.uv[:, 0], 1.0 - mm.uv[:, 1]], axis=1)   # files count V down the image
        me = make_mesh(name, mm.positions, np.concatenate(tris), uv=uv,
                       normals=mm.normals if mm.normals is not None and len(mm.normals) == len(mm.positions) else None,
                       colours=mm.colours, colour_name="mocv")
        index = np.concatenate([np.full(len(t), i, np.int32) for i, t in enumerate(tris)])
        for _t, m in mm.parts:
            me.materials.append(self.material(m))
        me.polygons.foreach_set("material_index", index)
        return me

    def m2_collection(self, path: str):
        """The collection holding an M2's one object (None where the data lacks it)."""
        key = path.lower()
        if key not in self.m2:
            mm = self.zone.m2(path)
            coll = None
            if mm is not None:
                coll = bpy.data.collections.new(f"m2 {mm.name}")
                obj = bpy.data.objects.new(mm.name, self.mesh(mm, mm.name))
                obj["wow_model"] = path
                coll.objects.link(obj)
                coll["wow_model"] = path
                self.models.children.link(coll)
            self.m2[key] = coll
        return self.m2[key]

    def wmo_collection(self, path: str):
        key = path.lower()
        if key not in self.wmo:
            got = self.zone.wmo(path)
            coll = None
            if got is not None:
                stem = path.replace("\\", "/").split("/")[-1].rsplit(".", 1)[0]
                coll = bpy.data.collections.new(f"wmo {stem}")
                coll["wow_model"] = path
                for gi, mm in sorted(got[1].items()):
                    obj = bpy.data.objects.new(f"{stem} {mm.name}", self.mesh(mm, f"{stem} {mm.name}"))
                    obj["wow_group"] = gi
                    coll.objects.link(obj)
                self.models.children.link(coll)
            self.wmo[key] = coll
        return self.wmo[key]

    def stand_in_object(self):
        """The viewer's crossed-quad clump for a grass model the data lacks."""
        if "<stand-in>" not in self.m2:
            from wowgrass.render.gl.meshes import crossed_quads, placeholder_texture

            q = crossed_quads()
            img = rgba_image("grass stand-in", placeholder_texture(q.texture))
            mat = bpy.data.materials.new("grass stand-in")
            self.images["<stand-in>"] = img
            mm = ModelMesh("grass stand-in", np.asarray(q.positions, np.float32), np.asarray(q.normals, np.float32),
                           np.asarray(q.uvs, np.float32))
            mm.parts.append((np.asarray(q.indices, np.int64).reshape(-1, 3),
                             Material("grass stand-in", None, "clip", True, (0.75, 0.7, 0.45, 1.0))))
            obj = bpy.data.objects.new("grass stand-in", self.mesh(mm, "grass stand-in"))
            bpy.data.materials.remove(mat)
            self.m2["<stand-in>"] = obj
        return self.m2["<stand-in>"]


# ----------------------------------------------------------------------------- terrain material


def terrain_material(name: str, lib: Library, names: list, weights: list, shadow_img, has_mccv: bool):
    """Principled BSDF whose colour is the tile's MTEX layers blended by their weights (the alpha
    maps as the client lerps them, packed four to an image), times MCCV, darkened by MCSH."""
    mat = bpy.data.materials.new(name)
    mat.use_nodes = True
    nt = mat.node_tree
    bsdf = nt.nodes.get("Principled BSDF")
    bsdf.inputs["Roughness"].default_value = 1.0
    uvn = nt.nodes.new("ShaderNodeUVMap")
    uvn.uv_map = "UVMap"
    uvn.location = (-1600, 0)
    rep = nt.nodes.new("ShaderNodeVectorMath")
    rep.operation = "SCALE"
    rep.inputs["Scale"].default_value = 16.0 * TEXTURE_REPEAT
    rep.location = (-1400, 0)
    _link(nt, uvn.outputs["UV"], rep.inputs[0])
    seps = []
    for i, img in enumerate(weights):
        t = nt.nodes.new("ShaderNodeTexImage")
        t.image, t.extension, t.location = img, "EXTEND", (-1200, -300 * i)
        _link(nt, uvn.outputs["UV"], t.inputs["Vector"])
        s = nt.nodes.new("ShaderNodeSeparateColor")
        s.location = (-950, -300 * i)
        _link(nt, t.outputs["Color"], s.inputs["Color"])
        seps.append((s.outputs[0], s.outputs[1], s.outputs[2], t.outputs["Alpha"]))
    acc = None
    for k, tex_name in enumerate(names):
        img = lib.image(tex_name)
        col = nt.nodes.new("ShaderNodeTexImage")
        col.location = (-700, 300 - 250 * k)
        if img is not None:
            col.image = img
            if nt.nodes.active is None or k == 0:
                nt.nodes.active = col   # what the viewport's solid "texture" mode shows: the first layer
            _link(nt, rep.outputs["Vector"], col.inputs["Vector"])
        sc = nt.nodes.new("ShaderNodeVectorMath")
        sc.operation = "SCALE"
        sc.location = (-450, 300 - 250 * k)
        if img is not None:
            _link(nt, col.outputs["Color"], sc.inputs[0])
        else:   # a texture the data lacks: a flat grey-brown, as the viewer's placeholder
            sc.inputs[0].default_value = (0.45, 0.42, 0.35)
        _link(nt, seps[k // 4][k % 4], sc.inputs["Scale"])
        if acc is None:
            acc = sc.outputs["Vector"]
        else:
            add = nt.nodes.new("ShaderNodeVectorMath")
            add.operation = "ADD"
            add.location = (-250, 300 - 250 * k)
            _link(nt, acc, add.inputs[0])
            _link(nt, sc.outputs["Vector"], add.inputs[1])
            acc = add.outputs["Vector"]
    if has_mccv:
        attr = nt.nodes.new("ShaderNodeAttribute")
        attr.attribute_name = "mccv"
        attr.location = (-450, 500)
        mul = nt.nodes.new("ShaderNodeVectorMath")
        mul.operation = "MULTIPLY"
        mul.location = (-100, 500)
        _link(nt, acc, mul.inputs[0])
        _link(nt, attr.outputs["Color"], mul.inputs[1])
        acc = mul.outputs["Vector"]
    if shadow_img is not None:
        t = nt.nodes.new("ShaderNodeTexImage")
        t.image, t.extension, t.location = shadow_img, "EXTEND", (-450, 800)
        _link(nt, uvn.outputs["UV"], t.inputs["Vector"])
        dark = nt.nodes.new("ShaderNodeMath")
        dark.operation = "MULTIPLY_ADD"   # 1 - 0.45 * shadow
        dark.inputs[1].default_value = -0.45
        dark.inputs[2].default_value = 1.0
        _link(nt, t.outputs["Color"], dark.inputs[0])
        sc = nt.nodes.new("ShaderNodeVectorMath")
        sc.operation = "SCALE"
        _link(nt, acc, sc.inputs[0])
        _link(nt, dark.outputs[0], sc.inputs["Scale"])
        acc = sc.outputs["Vector"]
    if acc is not None:
        _link(nt, acc, bsdf.inputs["Base Color"])
    return mat


# ----------------------------------------------------------------------------- grass node group


def grass_node_group():
    """Geometry nodes: instance the collection's models on the points, model ``model`` (index into
    the collection's children in order), rotation (0, 0, ``yaw``), scale ``scale``, where ``visible``."""
    ng = bpy.data.node_groups.get(GRASS_GROUP)
    if ng is not None:
        return ng
    ng = bpy.data.node_groups.new(GRASS_GROUP, "GeometryNodeTree")
    if hasattr(ng, "interface"):
        ng.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
        ng.interface.new_socket("Models", in_out="INPUT", socket_type="NodeSocketCollection")
        ng.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
        if hasattr(ng, "is_modifier"):
            ng.is_modifier = True
    else:   # Blender 3.x
        ng.inputs.new("NodeSocketGeometry", "Geometry")
        ng.inputs.new("NodeSocketCollection", "Models")
        ng.outputs.new("NodeSocketGeometry", "Geometry")
    n = ng.nodes
    gi, go = n.new("NodeGroupInput"), n.new("NodeGroupOutput")
    ci = n.new("GeometryNodeCollectionInfo")
    ci.transform_space = "ORIGINAL"
    ci.inputs["Separate Children"].default_value = True
    ci.inputs["Reset Children"].default_value = True
    iop = n.new("GeometryNodeInstanceOnPoints")
    iop.inputs["Pick Instance"].default_value = True

    def attr(name, kind):
        a = n.new("GeometryNodeInputNamedAttribute")
        a.data_type = kind
        a.inputs["Name"].default_value = name
        return a.outputs["Attribute"] if "Attribute" in a.outputs else a.outputs[0]

    rot = n.new("ShaderNodeCombineXYZ")
    _link(ng, attr("yaw", "FLOAT"), rot.inputs["Z"])
    if iop.inputs["Rotation"].type == "ROTATION":
        e = n.new("FunctionNodeEulerToRotation")
        _link(ng, rot.outputs[0], e.inputs[0])
        _link(ng, e.outputs[0], iop.inputs["Rotation"])
    else:
        _link(ng, rot.outputs[0], iop.inputs["Rotation"])
    _link(ng, gi.outputs[0], iop.inputs["Points"])
    _link(ng, gi.outputs[1], ci.inputs["Collection"])
    _link(ng, ci.outputs[0], iop.inputs["Instance"])
    _link(ng, attr("model", "INT"), iop.inputs["Instance Index"])
    _link(ng, attr("scale", "FLOAT"), iop.inputs["Scale"])
    _link(ng, attr("visible", "BOOLEAN"), iop.inputs["Selection"])
    _link(ng, iop.outputs[0], go.inputs[0])
    for i, node in enumerate((gi, ci, iop, go)):
        node.location = (300 * i, 0)
    return ng


def _socket_id(ng, name: str) -> str:
    if hasattr(ng, "interface"):
        for item in ng.interface.items_tree:
            if getattr(item, "in_out", None) == "INPUT" and item.name == name:
                return item.identifier
    return next(s.identifier for s in ng.inputs if s.name == name)


# ----------------------------------------------------------------------------- the import


class ZoneImport:
    """One import in steps: ``for done, total, what in job.steps(): ...``; :meth:`cancel` removes
    whatever the import made so far. ``report`` (and ``errors``) say what went wrong per tile."""

    def __init__(self, opts: ZoneOptions, scene=None):
        self.opts = opts
        self.scene = scene or bpy.context.scene
        self.before = _new_ids()
        self.zone = Zone(opts)   # a bad folder or map raises here: nothing made yet
        self.errors: dict = {}
        self.light_warnings: list[str] = []   # what is wrong with the light tables (said, as `view` says it)
        self.seconds: dict = {}
        self.root = None
        self.tiles: dict = {}

    def total(self) -> int:
        return 1 + len(self.zone.tiles)

    def steps(self):
        """Yields (steps done, total, what) after each step."""
        z, o = self.zone, self.opts
        t0 = time.perf_counter()
        name = f"WoW {z.map_name}"
        self.root = bpy.data.collections.new(name)
        self.scene.collection.children.link(self.root)
        self.root["wow_origin"] = [float(v) for v in z.origin]
        self.root["wow_map"] = z.map_name
        self.root["wow_options"] = json.dumps({k: v for k, v in o.__dict__.items()})
        self.lib = Library(z, name)
        if o.clock:
            self._light()
        self.seconds["setup"] = time.perf_counter() - t0
        yield 1, self.total(), "light"
        for i, (col, row) in enumerate(z.tiles):
            t1 = time.perf_counter()
            try:
                self._tile(col, row)
            except Exception as exc:   # a damaged tile: reported, the others imported
                self.errors[(col, row)] = tile_error(exc)
                tc = self.tiles.pop((col, row), None)
                if tc is not None:
                    _remove_collection_tree(tc)
            self.seconds[f"{col}_{row}"] = time.perf_counter() - t1
            yield 2 + i, self.total(), f"tile {col},{row}"
        self.seconds["total"] = time.perf_counter() - t0

    def run(self):
        for _ in self.steps():
            pass
        return self

    def close(self):
        self.zone.close()

    def cancel(self):
        """Remove every datablock this import made."""
        now = _new_ids()
        ids = [i for t in ID_TYPES for i in now[t] - self.before[t]]
        if ids:
            bpy.data.batch_remove(ids)
        self.root = None
        self.tiles.clear()
        self.close()

    # ------------------------------------------------------------------ parts

    def _light(self):
        sl, info = self.zone.light()
        if sl is None:
            self.light_note = str(info)
            return
        self.light_warnings = list(info["warnings"])
        sun = bpy.data.lights.new("WoW sun", "SUN")
        sun.color = tuple(min(max(c, 0.0), 1.0) for c in sl.sun_color)
        sun.energy = 4.0
        obj = bpy.data.objects.new("WoW sun", sun)
        from mathutils import Vector

        obj.rotation_mode = "QUATERNION"
        obj.rotation_quaternion = Vector((0.0, 0.0, 1.0)).rotation_difference(Vector(sl.sun_dir))  # -Z: light travel
        obj["wow_light"] = json.dumps(info)
        self.root.objects.link(obj)
        world = bpy.data.worlds.new(f"WoW {self.zone.map_name} {info['clock']}")
        world.use_nodes = True
        bg = world.node_tree.nodes.get("Background")
        sky = sl.sky[1]
        if bg is not None:
            bg.inputs[0].default_value = (*sky, 1.0)
            bg.inputs[1].default_value = 1.0
        world.color = sky
        world.mist_settings.start = float(sl.fog[0])
        world.mist_settings.depth = max(float(sl.fog[1] - sl.fog[0]), 1.0)
        world["wow_fog"] = [float(sl.fog[0]), float(sl.fog[1])]
        world["wow_fog_color"] = [float(c) for c in sl.fog_color]
        world["wow_ambient"] = [float(c) for c in sl.ambient]
        self.scene.world = world
        for vl in self.scene.view_layers:
            vl.use_pass_mist = True

    def _tile(self, col: int, row: int):
        z, o, lib = self.zone, self.opts, self.lib
        tc = bpy.data.collections.new(f"{z.map_name} {col}_{row}")
        tc["wow_tile"] = [col, row]
        self.tiles[(col, row)] = tc
        self.root.children.link(tc)
        parts = {}
        for kind in KINDS:
            c = bpy.data.collections.new(f"{kind} {col}_{row}")
            tc.children.link(c)
            parts[kind] = c
        if o.terrain:
            self._terrain(col, row, parts["Terrain"])
        wmos, wmo_doodads = z.wmo_placements(col, row) if o.wmos else ([], [])
        if o.liquids:
            for w in z.water(col, row, wmos):
                me = make_mesh(w.name, w.positions, w.triangles, uv=w.uv)
                me.materials.append(lib.material(w.material))
                obj = bpy.data.objects.new(w.name, me)
                obj["wow_liquid_type"] = w.type_id
                obj["wow_cells"] = w.cells
                parts["Water"].objects.link(obj)
        for pl in wmos:
            self._instances(parts["Buildings"], pl, lib.wmo_collection(pl.path))
        if o.doodads:
            for pl in z.doodads(col, row) + wmo_doodads:
                coll = parts["Doodads"] if pl.kind == "doodad" else parts["Buildings"]
                self._instances(coll, pl, lib.m2_collection(pl.path))
        if o.grass:
            self.grass(col, row, parts["Grass"], z.grass(col, row))

    def _terrain(self, col, row, coll):
        z, lib = self.zone, self.lib
        t = z.terrain(col, row)
        me = make_mesh(f"terrain {col}_{row}", t.positions, t.triangles, uv=t.uv, normals=t.normals,
                       colours=t.colours, colour_name="mccv")
        weights = [rgba_image(f"terrain {col}_{row} weights {i}", w, non_colour=True, flip=False)
                   for i, w in enumerate(t.weights)]
        shadow = None
        if t.has_shadow:
            s = np.repeat(t.shadow[..., None], 4, axis=2)
            s[..., 3] = 255
            shadow = rgba_image(f"terrain {col}_{row} MCSH", s, non_colour=True, flip=False)
        me.materials.append(terrain_material(f"terrain {col}_{row}", lib, t.textures, weights, shadow,
                                             t.colours is not None))
        obj = bpy.data.objects.new(f"terrain {col}_{row}", me)
        obj["wow_tile"] = [col, row]
        obj["wow_textures"] = list(t.textures)
        coll.objects.link(obj)

    def _instances(self, coll, pl, model_coll):
        if model_coll is None:
            return
        from mathutils import Matrix

        stem = model_coll.name.split(" ", 1)[1]
        for k, m in enumerate(pl.matrices):
            e = bpy.data.objects.new(stem, None)
            e.instance_type = "COLLECTION"
            e.instance_collection = model_coll
            e.matrix_world = Matrix(m.tolist())
            e.empty_display_size = 0.5
            e["wow_model"] = pl.path
            e["wow_kind"] = pl.kind
            if pl.unique_ids:
                e["wow_unique_id"] = int(pl.unique_ids[k])
            coll.objects.link(e)

    def grass(self, col, row, coll, g: GrassPoints):
        """The tile's grass object: made, or its points and models replaced (re-scatter)."""
        return place_grass(self.lib, col, row, coll, g)


def place_grass(lib: Library, col: int, row: int, coll, g: GrassPoints):
    name = f"grass {col}_{row}"
    models = bpy.data.collections.new(f"grass models {col}_{row}")
    lib.models.children.link(models)
    # Collection Info's "separate children" takes the collection's objects in their order: the
    # k-th linked object is instance index k (names numbered so the outliner agrees)
    for k, (path, stand_in) in enumerate(zip(g.models, g.stand_in)):
        src = lib.stand_in_object() if stand_in else None
        if src is None:
            mc = lib.m2_collection(path)
            src = mc.objects[0] if mc is not None else lib.stand_in_object()
        obj = bpy.data.objects.new(f"{k:03d} {src.name}", src.data)
        obj["wow_model"] = path
        models.objects.link(obj)
    obj = next((o for o in coll.objects if o.get("wow_grass")), None)
    me = points_mesh(name, g)
    if obj is None:
        obj = bpy.data.objects.new(name, me)
        obj["wow_grass"] = True
        coll.objects.link(obj)
        mod = obj.modifiers.new("WoW grass", "NODES")
        mod.node_group = grass_node_group()
    else:   # re-scatter: the same object, new points and models
        old_me, old_models = obj.data, obj.modifiers["WoW grass"][_socket_id(grass_node_group(), "Models")]
        obj.data = me
        bpy.data.meshes.remove(old_me)
        if old_models is not None:
            for o in list(old_models.objects):
                bpy.data.objects.remove(o)
            bpy.data.collections.remove(old_models)
    obj.modifiers["WoW grass"][_socket_id(obj.modifiers["WoW grass"].node_group, "Models")] = models
    obj["wow_tile"] = [col, row]
    obj["wow_grass_models"] = list(g.models)
    obj["wow_stand_in"] = [bool(s) for s in g.stand_in]
    obj["wow_bundle"] = str(g.bundle)
    obj["wow_placement"] = g.placement
    obj["wow_hidden"] = []
    if g.capacity_dropped is not None:
        obj["wow_capacity_dropped"] = int(g.capacity_dropped)
    obj.data.update()
    return obj


def set_hidden(obj, hidden) -> None:
    """Hide the grass models listed (indices into ``wow_grass_models``): the ``visible`` attribute."""
    me = obj.data
    model = np.zeros(len(me.vertices), np.int32)
    me.attributes["model"].data.foreach_get("value", model)
    h = np.zeros(max(len(obj.get("wow_grass_models", [])), 1), bool)
    h[[int(i) for i in hidden if 0 <= int(i) < len(h)]] = True
    set_point_attributes(me, visible=~h[model] if len(model) else np.zeros(0, bool))
    obj["wow_hidden"] = sorted(int(i) for i in hidden)
    me.update()


def _remove_collection_tree(coll) -> None:
    ids = []

    def walk(c):
        ids.append(c)
        ids.extend(c.objects)
        for ch in c.children:
            walk(ch)
    walk(coll)
    bpy.data.batch_remove(ids)


def import_zone(opts: ZoneOptions, scene=None) -> ZoneImport:
    """Import the whole zone at once (headless, tests); the operator steps it instead."""
    job = ZoneImport(opts, scene)
    try:
        job.run()
    except BaseException:
        job.cancel()
        raise
    job.close()
    return job


__all__ = ["ZoneImport", "import_zone", "pack_generated", "place_grass", "set_hidden", "grass_node_group"]
