"""Liquid surfaces: every resident tile's liquid mesh (render/world/liquid_tiles.py) in one
buffer, drawn in one call per view after the opaque sources, blended by depth over the terrain
(``shaders/liquid.glsl``).

A tile's arrival appends its vertices and indices; a departure rewrites the buffers from the
tiles left (a tile's liquid is kilobytes: flat water is a few large quads, see
render/world/liquid_tiles.py); buffers grow by doubling. A tile whose joined quads read their depth
from a depth map (129x129 bytes) gets a slice of one array texture for it, taken on arrival and
freed on departure (the array doubles when full, rewritten from the tiles' own copies). Each kind's 30 texture
frames go into one array texture (slices ``kind * 30 ..``) the first time a tile brings that
kind; a kind without frames in the data is drawn in its colour (wowgrass.game.liquid_types.KIND_COLOURS).
The frame shown follows the scene time (one every 60 ms, as the client steps them). Liquids cast
no shadow: the shadow pass draws nothing here.
"""

from __future__ import annotations

import numpy as np

from wowgrass.game.liquid_types import FRAME_SECONDS, FRAMES, KIND_COLOURS

from ..gl.memory import gpu_memory
from ..gl.meshes import edge_indices
from ..gl.programs import LINK_TIME_UNIFORMS, VaoCache, read_by
from ..gl.state import disable, enable, set_uniform, use_texture
from ..world.liquid_tiles import (DEPTH_MAP, DEPTH_MAP_SCALE, DEPTH_RANGE, VIEW_ATTRS, VIEW_DTYPE, VIEW_FORMAT,
                                  view_vertices)

VERTEX_DTYPE, VERTEX_FORMAT, VERTEX_ATTRS = VIEW_DTYPE, VIEW_FORMAT, VIEW_ATTRS
DEPTH_UNIT = LINK_TIME_UNIFORMS["uDepthMaps"]  # texture unit of the depth maps
from . import DrawCounts, Source

FRAME_SIZE = 128


def _resize(rgba) -> np.ndarray:
    if rgba.shape[:2] == (FRAME_SIZE, FRAME_SIZE):
        return np.ascontiguousarray(rgba, np.uint8)
    from PIL import Image

    img = Image.fromarray(np.ascontiguousarray(rgba, np.uint8), "RGBA")
    return np.asarray(img.resize((FRAME_SIZE, FRAME_SIZE), Image.BILINEAR), np.uint8)


class LiquidSet(Source):
    name = "liquids"

    def __init__(self, ctx, programs):
        self.ctx, self.programs = ctx, programs
        self.parts: dict = {}           # tile -> LiquidMesh
        self.vbo = self.ibo = self.lbo = None
        self.vertex_count = self.index_count = 0
        self._added: list = []          # meshes waiting to be appended
        self._removed = False
        self.frames = None              # texture array: 4 kinds x 30 frames
        self.has_texture = [0.0, 0.0, 0.0, 0.0]
        self._vaos = None
        self.depth_maps = None          # texture array: a slice per tile with a depth map
        self.depth_slots: dict = {}     # tile -> slice
        self._free_slots: list = []

    # -- residency --
    def add(self, tile, mesh, frames: dict | None = None) -> None:
        """A tile's liquid mesh; ``frames``: {kind: [RGBA] x 30} for kinds not textured yet."""
        for kind, images in (frames or {}).items():
            self.set_frames(kind, images)
        if not mesh:
            return
        old = self.parts.get(tile)
        if old is not None:
            self._removed = True
        mesh = self._with_slot(tile, mesh)
        self.parts[tile] = mesh
        self._added.append(mesh)
        gpu_memory(self.ctx).use(tile, "liquids", mesh.nbytes + 2 * mesh.indices.nbytes)

    def remove_tile(self, tile) -> None:
        if self.parts.pop(tile, None) is not None:
            self._removed = True
            gpu_memory(self.ctx).use(tile, "liquids", 0)
        slot = self.depth_slots.pop(tile, None)
        if slot is not None:
            self._free_slots.append(slot)

    def _with_slot(self, tile, mesh):
        """``mesh`` in the view layout with its depth map's slice in its vertices (the map written)."""
        from dataclasses import replace

        v = view_vertices(mesh.vertices)
        if mesh.depth_map is None:
            slot = self.depth_slots.pop(tile, None)
            if slot is not None:
                self._free_slots.append(slot)
            return replace(mesh, vertices=v) if v is not mesh.vertices else mesh
        slot = self.depth_slots.get(tile)
        if slot is None:
            slot = self._free_slots.pop() if self._free_slots else len(self.depth_slots)
            self.depth_slots[tile] = slot
        v = v.copy()
        mapped = v["tex"][:, 2] >= 0
        v["tex"][mapped, 2] = slot
        mesh = replace(mesh, vertices=v)
        self._write_depth(slot, mesh.depth_map)
        return mesh

    def _depth_array(self, layers: int):
        mem = gpu_memory(self.ctx)
        tex = mem.track(self.ctx.texture_array((DEPTH_MAP, DEPTH_MAP, layers), 1, alignment=1), "liquids")
        import moderngl

        tex.filter = (moderngl.LINEAR, moderngl.LINEAR)
        tex.repeat_x = tex.repeat_y = False
        return tex

    def _write_depth(self, slot: int, depth_map) -> None:
        if self.depth_maps is None or self.depth_maps.size[2] <= slot:
            old = self.depth_maps
            self.depth_maps = self._depth_array(max(4, 1 << slot.bit_length()))
            if old is not None:
                old.release()
                for t, k in self.depth_slots.items():  # the tiles' own copies into the new array
                    part = self.parts.get(t)
                    if part is not None and part.depth_map is not None and k != slot:
                        self._write_depth(k, part.depth_map)
            _unbind(self.ctx, DEPTH_UNIT)
        self.depth_maps.write(np.ascontiguousarray(depth_map, np.uint8).tobytes(),
                              viewport=(0, 0, slot, DEPTH_MAP, DEPTH_MAP, 1), alignment=1)

    def set_frames(self, kind: int, images) -> None:
        if not images or self.has_texture[kind]:
            return
        import moderngl

        if self.frames is None:
            self.frames = gpu_memory(self.ctx).track(
                self.ctx.texture_array((FRAME_SIZE, FRAME_SIZE, 4 * FRAMES), 4), "liquids", mipmaps=True)
            self.frames.filter = (moderngl.LINEAR_MIPMAP_LINEAR, moderngl.LINEAR)
        for k in range(FRAMES):
            img = _resize(images[k % len(images)])
            self.frames.write(img.tobytes(), viewport=(0, 0, kind * FRAMES + k, FRAME_SIZE, FRAME_SIZE, 1))
        self.frames.build_mipmaps()    # at most once per kind a session
        self.has_texture[kind] = 1.0

    @property
    def triangles(self) -> int:
        return self.index_count // 3

    @property
    def cells(self) -> int:
        return sum(m.cells for m in self.parts.values())

    def _update(self):
        if self._removed or self.vbo is None:
            meshes, base_v, base_i = list(self.parts.values()), 0, 0
        else:
            meshes, base_v, base_i = self._added, self.vertex_count, self.index_count
        self._added, self._removed = [], False
        if not meshes and base_v == 0:
            self.vertex_count = self.index_count = 0
            return
        verts = np.concatenate([m.vertices for m in meshes]) if meshes else np.zeros(0, VERTEX_DTYPE)
        offs = np.cumsum([base_v] + [len(m.vertices) for m in meshes[:-1]]) if meshes else []
        idx = np.concatenate([m.indices + np.uint32(o) for m, o in zip(meshes, offs)]) if meshes else \
            np.zeros(0, np.uint32)
        edges = edge_indices(idx)
        need_v, need_i = (base_v + len(verts)) * VERTEX_DTYPE.itemsize, (base_i + len(idx)) * 4
        if self.vbo is None or self.vbo.size < need_v or self.ibo.size < need_i:
            old = (self.vbo, self.ibo, self.lbo)
            size_v = 1 << max(need_v - 1, 1023).bit_length()
            size_i = 1 << max(need_i - 1, 1023).bit_length()
            mem = gpu_memory(self.ctx)
            self.vbo = mem.track(self.ctx.buffer(reserve=size_v), "liquids")
            self.ibo = mem.track(self.ctx.buffer(reserve=size_i), "liquids")
            self.lbo = mem.track(self.ctx.buffer(reserve=2 * size_i), "liquids")
            if base_v and old[0] is not None:   # appending: keep what is there
                self.ctx.copy_buffer(self.vbo, old[0], size=base_v * VERTEX_DTYPE.itemsize)
                self.ctx.copy_buffer(self.ibo, old[1], size=base_i * 4)
                self.ctx.copy_buffer(self.lbo, old[2], size=base_i * 8)
            for b in old:
                if b is not None:
                    b.release()
            if self._vaos is not None:
                for c in self._vaos:
                    c.release()
            self._vaos = None
        if len(verts):
            self.vbo.write(verts.tobytes(), offset=base_v * VERTEX_DTYPE.itemsize)
            self.ibo.write(idx.tobytes(), offset=base_i * 4)
            self.lbo.write(edges.tobytes(), offset=base_i * 8)
        self.vertex_count, self.index_count = base_v + len(verts), base_i + len(idx)

    def prepare(self, frame) -> None:
        if self._added or self._removed:
            self._update()

    def _vao(self, prog, lines: bool):
        if self._vaos is None:
            self._vaos = tuple(VaoCache(lambda p, ib=ib: self.ctx.vertex_array(
                p, [(self.vbo, *read_by(p, VERTEX_FORMAT, *VERTEX_ATTRS))], index_buffer=ib, index_element_size=4))
                for ib in (self.ibo, self.lbo))
        return self._vaos[1 if lines else 0](prog)

    def warm_programs(self, pass_, view) -> list:
        if pass_.name == "shadow":
            return []
        return [(pass_.program(self.programs, "liquid", view), "opaque" if view.fill == "lines" else "blend")]

    def draw(self, pass_, view) -> DrawCounts:
        import moderngl

        if pass_.name == "shadow":
            return DrawCounts()
        if self._added or self._removed:
            self._update()
        if not self.index_count:
            return DrawCounts()
        prog = pass_.program(self.programs, "liquid", view)
        lines = view.fill == "lines"
        if lines:
            self._vao(prog, True).render(moderngl.LINES, vertices=2 * self.index_count)
            return DrawCounts(1, 0, self.triangles)
        if self.frames is not None:
            use_texture(self.ctx, self.frames, 0)
        if self.depth_maps is None:
            self.depth_maps = self._depth_array(4)
        use_texture(self.ctx, self.depth_maps, DEPTH_UNIT)
        set_uniform(prog, "uHasTexture", tuple(self.has_texture))
        for name, value in STATIC_UNIFORMS.items():
            set_uniform(prog, name, value)
        enable(self.ctx, moderngl.BLEND)
        blend_alpha(self.ctx)
        fbo = self.ctx.fbo
        fbo.depth_mask = False         # blended over what is drawn; hides nothing behind it
        self._vao(prog, False).render(vertices=self.index_count)
        fbo.depth_mask = True
        disable(self.ctx, moderngl.BLEND)
        return DrawCounts(1, 0, self.triangles)

    def release(self):
        if self._vaos is not None:
            for c in self._vaos:
                c.release()
        for b in (self.vbo, self.ibo, self.lbo, self.frames, self.depth_maps):
            if b is not None:
                b.release()
        if self.depth_maps is not None:
            _unbind(self.ctx, DEPTH_UNIT)
        self.vbo = self.ibo = self.lbo = self.frames = self.depth_maps = None
        self.depth_slots.clear()
        self._free_slots = []
        self.parts.clear()
        self._added = []
        self.vertex_count = self.index_count = 0


STATIC_UNIFORMS = {"uKindColour": tuple(tuple(KIND_COLOURS[k]) for k in range(4)), "uDepthRange": DEPTH_RANGE,
                   "uFrameSeconds": FRAME_SECONDS, "uDepthMapScale": DEPTH_MAP_SCALE}


def _unbind(ctx, unit: int) -> None:
    """Forget what use_texture last bound on ``unit`` (a texture released or replaced there)."""
    bound = getattr(ctx, "_textures_bound", None)
    if bound is not None:
        bound.pop(unit, None)


def blend_alpha(ctx) -> None:
    """Blending by source alpha, set once per context (every blend in the renderer uses it)."""
    import moderngl

    if getattr(ctx, "_blend_alpha", False) is not True:
        ctx.blend_func = moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA
        ctx._blend_alpha = True
