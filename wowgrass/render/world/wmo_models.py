"""WMOs as the renderer takes them (numpy, off the GL thread): each group one vertex and index
array, its batches' materials folded into the vertices, its textures decoded once per WMO.

A group's vertices are copied per batch (a vertex two batches of different materials share gets a
copy in each), each carrying its material's texture slot in the WMO's texture array, the batch's
flags (interior lighting, unlit, alpha key, vertex colours) and the MOCV colour after the
client's load-time fix. Indices come opaque and alpha-keyed batches first, then the blended
ones, so a group is at most two ranges: one draw for each, instanced over every placement.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from wowgrass.formats.wmo import (
    BLEND_ALPHA_KEY, BLEND_OPAQUE, NO_MATERIAL, GroupFlags, MaterialFlags, Wmo, fixed_vertex_colours,
    group_liquid_type,
)

log = logging.getLogger(__name__)

TEXTURE_SIZE = 256
VERTEX_DTYPE = np.dtype([("pos", "<f4", 3), ("normal", "<f4", 3), ("uv", "<f4", 2), ("colour", "u1", 4),
                         ("layer", "<f4"), ("flags", "<f4")])
VERTEX_FORMAT = "3f 3f 2f 4f1 1f 1f"
VERTEX_ATTRS = ("in_position", "in_normal", "in_uv", "in_colour", "in_layer", "in_flags")
# per-vertex flags (shaders/wmo.glsl)
V_INTERIOR, V_UNLIT, V_ALPHA_KEY, V_COLOURS, V_EXTERIOR_LIT = 1, 2, 4, 8, 16


@dataclass
class WmoGroupMesh:
    index: int
    vertices: np.ndarray
    indices: np.ndarray          # u4: solid (opaque + alpha key) first, then blended
    solid: int                   # indices in the first range
    bbox: np.ndarray             # (2, 3) local: of the vertices drawn
    exterior: bool

    @property
    def triangles(self) -> int:
        return len(self.indices) // 3


@dataclass
class WmoModel:
    """Everything the GPU needs of one WMO, shared by all its placements."""

    path: str
    groups: list                      # WmoGroupMesh (groups with something to draw)
    textures: list                    # texture names, slot order
    images: np.ndarray                # (n, 256, 256, 4) u1 (missing ones: a flat colour)
    missing_textures: list = field(default_factory=list)
    missing_groups: list = field(default_factory=list)
    group_errors: dict = field(default_factory=dict)
    liquids: list = field(default_factory=list)   # (group index, WmoLiquid, LiquidType id)
    root: object = None                           # the WmoRoot (doodad sets)
    bbox: np.ndarray = field(default_factory=lambda: np.zeros((2, 3), np.float32))

    @property
    def upload_bytes(self) -> int:
        return int(self.images.nbytes * 4 // 3 + sum(g.vertices.nbytes + g.indices.nbytes for g in self.groups))

    @property
    def triangles(self) -> int:
        return sum(g.triangles for g in self.groups)


def _resize(rgba, size=TEXTURE_SIZE) -> np.ndarray:
    if rgba.shape[0] == size and rgba.shape[1] == size:
        return np.ascontiguousarray(rgba, np.uint8)
    from PIL import Image

    return np.asarray(Image.fromarray(np.ascontiguousarray(rgba, np.uint8), "RGBA").resize((size, size),
                                                                                         Image.BILINEAR), np.uint8)


def _flat(name: str) -> np.ndarray:
    """A texture the data lacks: a muted colour hashed from its name (walls, roofs and floors of a
    building stay apart)."""
    import colorsys
    import zlib

    h = zlib.crc32(name.lower().encode())
    rgb = np.round(np.array(colorsys.hsv_to_rgb((h % 360) / 360.0, 0.25 + ((h >> 9) % 20) / 100.0,
                                                0.55 + ((h >> 17) % 30) / 100.0)) * 255).astype(np.uint8)
    img = np.empty((8, 8, 4), np.uint8)
    img[..., :3], img[..., 3] = rgb, 255
    return img


def build_wmo_model(wmo: Wmo, read_texture) -> WmoModel:
    """``read_texture(name) -> RGBA | None`` decodes a BLP (None: the data lacks it)."""
    root = wmo.root
    names: list[str] = []
    slot_of: dict[str, int] = {}
    missing: list[str] = []
    images = []

    def slot(name: str | None) -> int:
        key = (name or "").lower()
        if key not in slot_of:
            rgba = read_texture(name) if name else None
            if rgba is None:
                if name:
                    missing.append(name)
                rgba = _flat(name or "untextured")
            slot_of[key] = len(names)
            names.append(name or "")
            images.append(_resize(rgba))
        return slot_of[key]

    groups, liquids = [], []
    for gi in wmo.present:
        grp = wmo.groups[gi]
        if grp.liquid is not None:
            liquids.append((gi, grp.liquid, group_liquid_type(root, grp)))
        mesh = _group_mesh(root, grp, gi, slot)
        if mesh is not None:
            groups.append(mesh)
    if groups:
        lo = np.min([g.bbox[0] for g in groups], axis=0)
        hi = np.max([g.bbox[1] for g in groups], axis=0)
        bbox = np.stack([lo, hi]).astype(np.float32)
    else:
        bbox = np.asarray(root.bbox, np.float32)
    imgs = np.stack(images) if images else np.zeros((0, TEXTURE_SIZE, TEXTURE_SIZE, 4), np.uint8)
    return WmoModel(str(wmo.path), groups, names, imgs, missing, list(wmo.missing), dict(wmo.errors), liquids,
                    root, bbox)


def _group_mesh(root, grp, gi: int, slot) -> WmoGroupMesh | None:
    if not len(grp.batches) or not len(grp.vertices):
        return None
    colours = fixed_vertex_colours(root, grp)
    interior = not grp.is_exterior
    ext_lit = bool(grp.flags & GroupFlags.EXTERIOR_LIT)
    uv = grp.uvs[0] if grp.uvs else np.zeros((len(grp.vertices), 2), np.float32)
    normals = grp.normals if grp.normals is not None else np.tile(np.float32([0, 0, 1]), (len(grp.vertices), 1))
    verts_list, solid, blended_idx = [], [], []
    base = 0
    for b, mat_id in zip(grp.batches, grp.batch_materials().tolist()):
        s, n = int(b["start_index"]), int(b["count"])
        if not n or mat_id == NO_MATERIAL:
            continue
        mat = root.materials[mat_id] if mat_id < len(root.materials) else None
        blend = int(mat["blend"]) if mat is not None else BLEND_OPAQUE
        mflags = int(mat["flags"]) if mat is not None else 0
        layer = slot(root.texture(mat["texture1"]) if mat is not None else None)
        idx = grp.indices[s:s + n].astype(np.int64)
        used, local = np.unique(idx, return_inverse=True)
        v = np.zeros(len(used), VERTEX_DTYPE)
        v["pos"] = grp.vertices[used]
        v["normal"] = normals[used]
        v["uv"] = uv[used]
        v["colour"] = colours[used] if colours is not None else (128, 128, 128, 255)
        v["layer"] = layer
        v["flags"] = (V_INTERIOR if interior else 0) | (V_UNLIT if mflags & MaterialFlags.UNLIT else 0) | \
            (V_ALPHA_KEY if blend == BLEND_ALPHA_KEY else 0) | (V_COLOURS if colours is not None else 0) | \
            (V_EXTERIOR_LIT if ext_lit else 0)
        verts_list.append(v)
        (blended_idx if blend > BLEND_ALPHA_KEY else solid).append(local.astype(np.uint32) + np.uint32(base))
        base += len(v)
    if not verts_list:
        return None
    verts = np.concatenate(verts_list)
    indices = np.concatenate(solid + blended_idx).astype(np.uint32)
    p = verts["pos"]
    bbox = np.stack([p.min(axis=0), p.max(axis=0)]).astype(np.float32)
    return WmoGroupMesh(gi, verts, indices, int(sum(len(i) for i in solid)), bbox, grp.is_exterior)
