"""Where resident terrain tiles live on the GPU: two arenas of fixed-size slots, one for complete
tiles (:class:`TerrainArena`: vertices, five index levels, the alpha atlas, MTEX layers shared by
reference count) and one for far tiles (:class:`FarArena`: levels ``first_level``..4 and a colour).
Uploads can be spread over frames (``add_steps``); the arenas grow by doubling, on the GPU where GL
4.3 allows (the compute copies in shaders/terrain_copy.glsl, terrain_mip_copy.glsl,
terrain_edges.glsl)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..gl.memory import gpu_memory
from ..gl.meshes import edge_indices
from ..gl.programs import VaoCache, preprocess, read_by
from ..gl.state import bind_storage
from .terrain_mesh import (ATLAS, FAR_ATLAS, LAYER_SIZE, LEVEL_CELLS, LEVELS, VERTEX_ATTRS, VERTEX_DTYPE,
                           VERTEX_FORMAT, FarArrays, TerrainArrays, far_vertex_set)

ANISOTROPY = 4.0  # layer textures' anisotropic filtering (not on llvmpipe, where it costs minutes);
# on the H200 at 1920x1080 8x cost ~1 ms a frame over 1x (benchmarks/bench_render.py --variants)


def _compute(ctx, name: str):
    """A compute shader of shaders/, compiled when an arena first needs it (directly, as these
    always were: not in load_program's compile log, which the viewer's warm-up counts)."""
    return ctx.compute_shader(preprocess(name, "COMPUTE_SHADER"))


SLOT_VERTICES = 256 * 145
SLOT_INDICES = 256 * sum(int(np.prod(c.shape)) for c in LEVEL_CELLS)  # all levels, no holes: the most a tile uses
SLOT_BYTES = SLOT_VERTICES * VERTEX_DTYPE.itemsize + SLOT_INDICES * 4 + ATLAS * ATLAS * 4  # a complete tile's slot
LINE_SLOT_BYTES = SLOT_INDICES * 8  # its edge list, where a lines view asked for one
FAR_LEVEL = 3  # the finest level a far tile keeps by default (the band 400-900 units: reach 800 is in it)


def far_slot_sizes(first_level: int) -> tuple[int, int]:
    """(vertices, indices) of a far tile's slot that keeps levels ``first_level``..4."""
    return (256 * len(far_vertex_set(first_level)),
            256 * sum(int(np.prod(LEVEL_CELLS[lv].shape)) for lv in range(first_level, LEVELS)))


@dataclass
class TerrainTile:
    """A resident tile's place in an arena: its slot, level ranges (absolute), boxes, layer names."""

    slot: int
    lod_first: np.ndarray  # (256, LEVELS) first index in the arena's index buffer
    lod_count: np.ndarray  # (256, LEVELS)
    chunk_lo: np.ndarray
    chunk_hi: np.ndarray
    layer_names: list
    triangles: int  # at its finest level (0 for a complete tile)
    far: bool = False  # in the far arena (FarArrays)
    first_level: int = 0
    mean_colour: tuple | None = None  # a far tile's mean colour (0..1 RGB)


class _SlotArena:
    """What both terrain arenas share: a vertex and an index buffer of fixed-size slots (one tile
    each, indices absolute), one RGBA texture array with a slice per slot, an edge-list buffer made
    only when a lines view first asks for it (:meth:`lines`), growth by doubling (buffers by a GPU
    copy, textures by a compute copy on GL 4.3, from CPU copies kept for that on older GL)."""

    kind = "terrain-near"

    def __init__(self, ctx, slot_vertices: int, slot_indices: int, tex_size: int, tex_mipmaps: bool):
        self.ctx = ctx
        self.slot_vertices, self.slot_indices = slot_vertices, slot_indices
        self.tex_size, self.tex_mipmaps = tex_size, tex_mipmaps
        self.capacity = 0  # slots
        self.vbo = self.ibo = self.lbo = self.tex = None
        self._free: list[int] = []
        self._used = 0  # slots handed out so far (free ones are reused first)
        self._copy = self._mip = self._mip_tex = self._edge_cs = None
        self._stage = None  # the pixel buffer texture slices are uploaded through (_staged)
        self._gpu_copy = ctx.version_code >= 430  # else textures grow from CPU copies
        self._cpu_tex: dict[int, bytes] = {}  # GL < 4.3 only: what a texture grow re-uploads
        self._cpu_indices: dict[int, np.ndarray] = {}  # GL < 4.3 with lines: a slot's indices (edges)
        self.vao = VaoCache(lambda prog: self._make_vao(prog, self.ibo))
        self.line_vao = VaoCache(lambda prog: self._make_vao(prog, self.lines()))  # lines views
        self._mem = gpu_memory(ctx)

    def _make_vao(self, prog, index_buffer):
        return self.ctx.vertex_array(prog, [(self.vbo, *read_by(prog, VERTEX_FORMAT, *VERTEX_ATTRS))],
                                     index_buffer=index_buffer, index_element_size=4)

    @property
    def slots(self) -> int:
        return self._used

    @property
    def slot_bytes(self) -> int:
        """GPU bytes of one slot (vertices, indices, its texture slice)."""
        tex = self.tex_size * self.tex_size * 4
        return (self.slot_vertices * VERTEX_DTYPE.itemsize + self.slot_indices * 4
                + (tex * 4 // 3 if self.tex_mipmaps else tex))

    def _take_slot(self) -> int:
        slot = self._free.pop() if self._free else self._used
        self._used = max(self._used, slot + 1)
        if slot >= self.capacity:
            self._grow(max(4, 2 * self.capacity))
        return slot

    def _free_slot(self, slot: int):
        self._free.append(slot)
        self._cpu_tex.pop(slot, None)
        self._cpu_indices.pop(slot, None)

    def _write_indices(self, slot: int, indices: np.ndarray):
        """A slot's indices (made absolute), and its edges where a lines buffer exists."""
        shift = np.uint32(slot * self.slot_vertices)
        self.ibo.write((indices + shift).tobytes(), offset=slot * self.slot_indices * 4)
        if not self._gpu_copy:
            self._cpu_indices[slot] = indices
        if self.lbo is not None:
            self._edges_of(slot)

    def fits(self, slots: int) -> bool:
        return self._used - len(self._free) + slots <= self.capacity

    def _reserve_slots(self, slots: int, at_least: int = 0):
        if not self.fits(slots):  # at least half again: a bounded number of copies of everything
            self._grow(max(4, self.capacity + self.capacity // 2, self._used + slots, at_least))

    def _grow(self, capacity: int):
        import moderngl

        ctx, mem, kind = self.ctx, self._mem, self.kind
        vbo = mem.track(ctx.buffer(reserve=capacity * self.slot_vertices * VERTEX_DTYPE.itemsize), kind)
        ibo = mem.track(ctx.buffer(reserve=capacity * self.slot_indices * 4), kind)
        lbo = None if self.lbo is None else mem.track(ctx.buffer(reserve=capacity * self.slot_indices * 8),
                                                      "terrain-lines")
        tex = mem.track(ctx.texture_array((self.tex_size, self.tex_size, capacity), 4), kind,
                        mipmaps=self.tex_mipmaps)
        tex.repeat_x = tex.repeat_y = False
        if self.tex_mipmaps:
            tex.filter = (moderngl.LINEAR_MIPMAP_LINEAR, moderngl.LINEAR)
            if self._gpu_copy:
                tex.build_mipmaps()  # allocates the levels the copies write
        else:
            tex.filter = (moderngl.LINEAR, moderngl.LINEAR)
        if self.capacity:
            ctx.copy_buffer(vbo, self.vbo)
            ctx.copy_buffer(ibo, self.ibo)
            if lbo is not None:
                ctx.copy_buffer(lbo, self.lbo)
            self._copy_levels(tex, self.tex, self._cpu_tex, self.tex_size, self.tex_mipmaps)
            for obj in (self.vbo, self.ibo, self.lbo, self.tex):
                if obj is not None:
                    obj.release()
            self.vao.release()
            self.line_vao.release()
        self.vbo, self.ibo, self.lbo, self.tex, self.capacity = vbo, ibo, lbo, tex, capacity

    # -- the edge lists of lines views --
    def lines(self):
        """The edge-list buffer (index k of the triangles is index 2k of the edges: a line command
        is a triangle one doubled), made from the triangle indices the first time a lines view
        draws, and kept up as tiles arrive from then on."""
        if self.lbo is None:
            self.lbo = self._mem.track(self.ctx.buffer(reserve=max(self.capacity, 1) * self.slot_indices * 8),
                                       "terrain-lines")
            self.line_vao.release()
            for slot in range(self._used):
                if slot not in self._free:
                    self._edges_of(slot)
        return self.lbo

    def _edges_of(self, slot: int):
        """Write slot ``slot``'s edges from its triangle indices (a compute pass; GL < 4.3: from the
        CPU copy of its indices)."""
        if not self._gpu_copy:
            idx = self._cpu_indices.get(slot)
            if idx is not None:
                shift = np.uint32(slot * self.slot_vertices)
                self.lbo.write((edge_indices(idx) + shift).tobytes(), offset=slot * self.slot_indices * 8)
            return
        if self._edge_cs is None:
            self._edge_cs = _compute(self.ctx, "terrain_edges.glsl")
        tris = self.slot_indices // 3
        self._edge_cs["uFirst"] = slot * tris
        self._edge_cs["uCount"] = tris
        bind_storage(self.ctx, (self.ibo, self.lbo))
        self._edge_cs.run((tris + 63) // 64)
        self.ctx.memory_barrier()

    # -- texture slices with their mipmaps --
    def _mip_slice(self, dst, i: int, data: bytes, size: int):
        """Slice ``i`` of ``dst`` with its mipmap levels: built by the driver in a 2D texture (the
        levels a whole-array ``build_mipmaps`` gives), then copied level by level into the slice."""
        import moderngl

        if self._mip_tex is None or self._mip_tex.width != size:
            if self._mip_tex is not None:
                self._mip_tex.release()
            self._mip = self._mip or _compute(self.ctx, "terrain_mip_copy.glsl")
            self._mip_tex = self._mem.track(self.ctx.texture((size, size), 4), self.kind, mipmaps=True)
            self._mip_tex.filter = (moderngl.LINEAR_MIPMAP_LINEAR, moderngl.LINEAR)
        self._mip_tex.write(self._staged(data))
        self._mip_tex.build_mipmaps()
        self._mip["slice_"] = i
        for level in range(size.bit_length()):
            self._mip_tex.bind_to_image(1, read=True, write=False, level=level)
            dst.bind_to_image(0, read=False, write=True, level=level)
            s = size >> level
            self._mip.run(group_x=(s + 7) // 8, group_y=(s + 7) // 8)
        self.ctx.memory_barrier()

    def _staged(self, data: bytes):
        """``data`` in the arena's pixel buffer, for a texture write to read on the GPU: written
        straight from the CPU into a slice of the array, the H200's driver took 10-80 ms for a 4 MB
        atlas in a flight (1 ms alone); through a buffer the copy is the GPU's. Orphaned first, so a
        write never waits for the last one's copy."""
        n = len(data)
        if self._stage is None or self._stage.size < n:  # the largest write so far (reads take their bytes)
            if self._stage is not None:
                self._stage.release()
            self._stage = self._mem.track(self.ctx.buffer(reserve=n), self.kind)
        else:
            self._stage.orphan()
        self._stage.write(data)
        return self._stage

    def _write_slice(self, dst, i: int, data: bytes, size: int, mipmaps: bool, cpu: dict):
        dst.write(self._staged(data), viewport=(0, 0, i, size, size, 1))
        if not self._gpu_copy:
            cpu[i] = data
            if mipmaps:
                dst.build_mipmaps()
        elif mipmaps:  # this slice's levels only: a whole-array rebuild grows with what is resident
            self._mip_slice(dst, i, data, size)

    def _copy_levels(self, dst, src, cpu: dict, size: int, mipmaps: bool):
        """Every slice of ``src`` (all its levels where ``mipmaps``) into ``dst``."""
        if not self._gpu_copy:
            for i, data in cpu.items():
                dst.write(data, viewport=(0, 0, i, size, size, 1))
            if mipmaps:
                dst.build_mipmaps()
            return
        for level in range(size.bit_length() if mipmaps else 1):
            self._copy_texture(dst, src, size >> level, level)

    def _copy_texture(self, dst, src, size: int, level: int = 0):
        """Level ``level`` (``size`` square) of every layer of ``src`` into ``dst`` (a compute copy)."""
        if self._copy is None:
            self._copy = _compute(self.ctx, "terrain_copy.glsl")
        src.bind_to_image(1, read=True, write=False, level=level)
        dst.bind_to_image(0, read=False, write=True, level=level)
        self._copy.run(group_x=(size + 7) // 8, group_y=(size + 7) // 8, group_z=src.layers)
        self.ctx.memory_barrier()

    def release(self):
        self.vao.release()
        self.line_vao.release()
        for obj in (self.vbo, self.ibo, self.lbo, self.tex, self._mip_tex, self._stage):
            if obj is not None:
                obj.release()
        self.vbo = self.ibo = self.lbo = self.tex = self._mip_tex = self._stage = None
        for obj in (self._copy, self._mip, self._edge_cs):
            if obj is not None:
                obj.release()
        self._copy = self._mip = self._edge_cs = None
        self.capacity = 0


class TerrainArena(_SlotArena):
    """Every complete tile's terrain in shared GPU storage, so that one draw covers them all: slots
    of a tile's 256 x 145 vertices and its five levels' indices, one RGBA texture array of alpha
    atlases (a 1024x1024 slice per slot) and one texture array of MTEX layers shared by name
    (reference-counted slices)."""

    kind = "terrain-near"

    def __init__(self, ctx):
        super().__init__(ctx, SLOT_VERTICES, SLOT_INDICES, ATLAS, False)
        self.layers = None
        self._names: dict[str, list] = {}  # MTEX name -> [slice, references]
        self._free_layers: list[int] = []
        self._layer_capacity = 0
        self._layer_used = 0
        self._cpu_layers: dict[int, bytes] = {}

    @property
    def alpha(self):
        """The alpha atlases (the arena's texture array)."""
        return self.tex

    def add(self, arrays: TerrainArrays) -> TerrainTile:
        """Upload a tile into a free slot at once (:meth:`add_steps` spreads it over frames)."""
        tile = None
        for _, step in self.add_steps(arrays):
            tile = step()
        return tile

    def add_steps(self, arrays: TerrainArrays) -> list:
        """A tile's upload as ``(bytes, step)`` pairs to run in order, one or more a frame: its
        vertices, triangle indices and alpha atlas, each written by a step of its own (on the
        H200 the driver copies such writes at 1-2 GB/s: the 11 MB of a tile in one frame took
        6-18 ms). The slot draws nothing until the last step returns its :class:`TerrainTile`
        (its level ranges are zero until the caller registers it)."""
        state = {}

        def vertices():
            slot = state["slot"] = self._take_slot()
            names = list(arrays.layer_names)
            slices = np.array([self._layer(n, arrays.layers[i]) for i, n in enumerate(names)], np.float32)
            v = arrays.vertices.copy()
            v["chunk"] += slot * 256
            lay = v["layers"].astype(np.int64)
            v["layers"] = np.where(lay >= 0, slices[np.clip(lay, 0, len(slices) - 1)], -1.0)
            self.vbo.write(v.tobytes(), offset=slot * SLOT_VERTICES * VERTEX_DTYPE.itemsize)

        def indices():
            self._write_indices(state["slot"], arrays.indices)

        def alpha():
            slot = state["slot"]
            self._write_slice(self.tex, slot, arrays.atlas(), ATLAS, False, self._cpu_tex)
            return TerrainTile(slot, arrays.lod_first + slot * SLOT_INDICES, arrays.lod_count, arrays.chunk_lo,
                               arrays.chunk_hi, list(arrays.layer_names), arrays.triangles)

        edges = 2 * arrays.indices.nbytes if self.lbo is not None else 0
        return [(arrays.vertices.nbytes, vertices), (arrays.indices.nbytes + edges, indices),
                (ATLAS * ATLAS * 4, alpha)]

    def remove(self, tile: TerrainTile):
        self._free_slot(tile.slot)
        for n in tile.layer_names:
            ref = self._names[n]
            ref[1] -= 1
            if ref[1] == 0:
                del self._names[n]
                self._free_layers.append(ref[0])
                self._cpu_layers.pop(ref[0], None)

    def _layer(self, name: str, rgba: np.ndarray) -> int:
        ref = self._names.get(name)
        if ref is None:
            i = self._free_layers.pop() if self._free_layers else self._layer_used
            self._layer_used = max(self._layer_used, i + 1)
            if i >= self._layer_capacity:
                self._grow_layers(max(16, 2 * self._layer_capacity))
            data = np.ascontiguousarray(rgba, np.uint8).tobytes()
            self._write_slice(self.layers, i, data, LAYER_SIZE, True, self._cpu_layers)
            ref = self._names[name] = [i, 0]
        ref[1] += 1
        return ref[0]

    def fits(self, slots: int, layers: int = 0) -> bool:
        """Whether ``slots`` more tiles and ``layers`` more MTEX layers fit without growing."""
        return (super().fits(slots)
                and self._layer_used - len(self._free_layers) + layers <= self._layer_capacity)

    def reserve(self, slots: int, layers: int, at_least: int = 0, layers_at_least: int = 0):
        """Grow ahead of need so that ``slots`` more tiles and ``layers`` more MTEX layers fit
        without a growth inside :meth:`add` (streaming does this as a step of its own), to at
        least ``at_least`` slots and ``layers_at_least`` layers when it grows (a first size
        for what will be resident: each growth is a copy of everything)."""
        self._reserve_slots(slots, at_least)
        if self._layer_used - len(self._free_layers) + layers > self._layer_capacity:
            self._grow_layers(max(16, 2 * self._layer_capacity, self._layer_used + layers, layers_at_least))

    def has_layer(self, name: str) -> bool:
        return name in self._names

    def upload_layer(self, name: str, rgba: np.ndarray):
        """MTEX layer ``name`` uploaded ahead of the tile that uses it (its :meth:`add` follows)."""
        if name not in self._names:
            self._layer(name, rgba)
            self._names[name][1] -= 1  # add() takes the reference

    def _grow_layers(self, capacity: int):
        import moderngl

        layers = self._mem.track(self.ctx.texture_array((LAYER_SIZE, LAYER_SIZE, capacity), 4),
                                 "terrain-layers", mipmaps=True)
        layers.filter = (moderngl.LINEAR_MIPMAP_LINEAR, moderngl.LINEAR)
        if "llvmpipe" not in self.ctx.info.get("GL_RENDERER", ""):  # llvmpipe: minutes per frame with it
            layers.anisotropy = ANISOTROPY
        if self._gpu_copy:
            layers.build_mipmaps()  # allocates the levels that _mip_slice and the copy write
        if self._layer_capacity:
            self._copy_levels(layers, self.layers, self._cpu_layers, LAYER_SIZE, True)
            self.layers.release()
        self.layers, self._layer_capacity = layers, capacity

    def release(self):
        super().release()
        if self.layers is not None:
            self.layers.release()
            self.layers = None
        self._layer_capacity = 0


class FarArena(_SlotArena):
    """Every far tile's terrain: slots of the vertices and indices of levels ``first_level``..4
    (a 2304-vertex slot at level 3 against a complete tile's 37120) and one texture array of the
    tiles' low-resolution colours (a 256x256 slice per slot, mipmapped); no alpha atlas, no
    layer textures (:class:`FarArrays`)."""

    kind = "terrain-far"

    def __init__(self, ctx, first_level: int = FAR_LEVEL):
        self.first_level = int(first_level)
        super().__init__(ctx, *far_slot_sizes(self.first_level), FAR_ATLAS, True)

    @property
    def colour(self):
        return self.tex

    def add(self, arrays: FarArrays) -> TerrainTile:
        tile = None
        for _, step in self.add_steps(arrays):
            tile = step()
        return tile

    def add_steps(self, arrays: FarArrays) -> list:
        """A far tile's upload in two steps (its vertices and indices; its colour)."""
        if arrays.first_level != self.first_level:
            raise ValueError(f"a far tile of levels {arrays.first_level}.. in an arena of levels {self.first_level}..")
        state = {}

        def mesh():
            slot = state["slot"] = self._take_slot()
            v = arrays.vertices.copy()
            v["chunk"] += slot * 256
            self.vbo.write(v.tobytes(), offset=slot * self.slot_vertices * VERTEX_DTYPE.itemsize)
            self._write_indices(slot, arrays.indices)

        def colour():
            slot = state["slot"]
            self._write_slice(self.tex, slot, arrays.colour.tobytes(), FAR_ATLAS, True, self._cpu_tex)
            return TerrainTile(slot, arrays.lod_first + slot * self.slot_indices, arrays.lod_count, arrays.chunk_lo,
                               arrays.chunk_hi, [], arrays.triangles, far=True, first_level=self.first_level,
                               mean_colour=arrays.mean_colour)

        edges = 2 * arrays.indices.nbytes if self.lbo is not None else 0
        return [(arrays.vertices.nbytes + arrays.indices.nbytes + edges, mesh), (arrays.colour.nbytes, colour)]

    def remove(self, tile: TerrainTile):
        self._free_slot(tile.slot)

    def reserve(self, slots: int, at_least: int = 0):
        self._reserve_slots(slots, at_least)

