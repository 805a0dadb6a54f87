"""Terrain on the GPU: :class:`TerrainSet`, the Source drawing every resident tile's terrain from
its arenas (terrain_arenas.py; the meshes and levels: terrain_mesh.py; per-cell marks: cell_marks.py).

LOD choice: a compute pass (``shaders/terrain_lod.glsl``) reads every resident chunk's box and
per-level index ranges, tests the frustum and the view distance, picks the level from the
distance to the box and writes that chunk's ``DrawElementsIndirectCommand`` (count 0 when
culled); one ``glMultiDrawElementsIndirect`` draws every resident chunk. Nothing is read back
and the CPU's work per frame does not grow with the resident tiles. A compute pass rather than a
vertex-shader decision because the triangles saved are the point (a vertex shader can only
collapse vertices, not drop them). GL < 4.3: each tile's level 0, morphed by the same distances
(a vertex collapses onto its neighbour's unmorphed position, so far away, where two levels'
vertices have both collapsed, the fans keep thin slivers the levels do not have).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..gl.memory import gpu_memory
from ..gl import native
from ..gl.meshes import CMD_DTYPE  # DrawElementsIndirectCommand, as grass has it
from ..gl.programs import load_program
from ..gl.readback import Readback
from ..gl.state import bind_storage, set_uniform, use_texture
from . import DrawCounts, Source
from .cell_marks import CellMarks
from .terrain_arenas import FAR_LEVEL, FarArena, TerrainArena, TerrainTile
from .terrain_mesh import LEVELS, LOD_BANDS, LOD_Z_SCALE, FarArrays


@dataclass
class TerrainLod:
    """Terrain LOD settings: band ends (``LOD_BANDS``), debug colouring of the levels, MCSH."""

    bands: tuple = LOD_BANDS
    enabled: bool = True  # off: every chunk at level 0 and no morph
    morph: bool = True  # off: levels switch without geomorphing (they pop; for comparison)
    debug: bool = False  # colour the terrain by level (key L, --debug-lod)
    mcsh: bool = False  # darken where the ADT's baked MCSH shadow map is set (--mcsh)

    def shader_bands(self) -> tuple:
        return tuple(self.bands) if self.enabled else (1e30,) * 4


FRAME_BINDING = 3  # storage binding of the frame block's buffer in terrain_lod.glsl (frame.glsl)


class _LodTables:
    """One arena's inputs to the LOD compute pass (per-chunk boxes and level ranges, uploaded when
    its resident set changes) and the indirect commands the pass writes for it, a section per view."""

    def __init__(self, ctx, arena):
        self.ctx, self.arena = ctx, arena
        self.capacity = 0  # slots the chunk and command buffers hold
        self.slots = 0  # slots the last upload wrote (what the compute pass and the draw cover)
        self.dirty = True
        self.chunks = self.ranges = self.commands = None
        self.command_views = 0

    def upload(self, tiles):
        """Per-chunk boxes and level ranges of every slot (zero counts in free slots)."""
        # the slots the tables cover: the arena may hand out a slot before its tile is registered
        # (add_steps), and the compute pass must not read past what was written here
        n = self.slots = max(self.arena.slots, 1)
        boxes = np.zeros((n, 256, 8), np.float32)
        ranges = np.zeros((n, 256, 2 * LEVELS), np.uint32)
        for t in tiles:
            boxes[t.slot, :, :3], boxes[t.slot, :, 4:7] = t.chunk_lo, t.chunk_hi
            ranges[t.slot, :, :LEVELS], ranges[t.slot, :, LEVELS:] = t.lod_first, t.lod_count
        if n > self.capacity:
            for b in (self.chunks, self.ranges, self.commands):
                if b is not None:
                    b.release()
            self.commands, self.command_views = None, 0
            self.capacity = max(n, 2 * self.capacity, 4)
            mem = gpu_memory(self.ctx)
            self.chunks = mem.track(self.ctx.buffer(reserve=self.capacity * 256 * 32), "terrain-tables")
            self.ranges = mem.track(self.ctx.buffer(reserve=self.capacity * 256 * 8 * LEVELS), "terrain-tables")
        self.chunks.write(boxes.tobytes())
        self.ranges.write(ranges.tobytes())
        self.dirty = False

    def commands_for(self, n_views: int):
        """The command buffer, with a section for each of ``n_views`` views."""
        if self.commands is None or self.command_views < n_views:
            if self.commands is not None:
                self.commands.release()
            self.command_views = max(n_views, 2)
            self.commands = gpu_memory(self.ctx).track(
                self.ctx.buffer(reserve=self.command_views * self.capacity * 256 * CMD_DTYPE.itemsize), "terrain-tables")
        return self.commands

    def release(self):
        for b in (self.chunks, self.ranges, self.commands):
            if b is not None:
                b.release()
        self.chunks = self.ranges = self.commands = None
        self.capacity = self.command_views = 0


class TerrainSet(Source):
    """Resident terrain tiles: complete ones in a :class:`TerrainArena`, far ones (terrain alone,
    levels ``far_level``..4, a low-resolution colour) in a :class:`FarArena`. GL 4.3: each frame
    one compute dispatch per arena over every resident chunk (frustum, view distance, LOD level
    -> one indirect command per chunk and view) and one ``glMultiDrawElementsIndirect`` per arena:
    the CPU's work per frame does not depend on how many tiles are resident, and it reads nothing
    back. The per-chunk inputs (boxes, index ranges per level) are uploaded when the resident set
    changes. Older GL: each tile's finest level drawn whole (the vertex shader's morph still makes
    far terrain look as coarse as the levels would)."""

    name = "terrain"

    def __init__(self, ctx, programs=None, indirect: bool | None = None, lod: TerrainLod | None = None,
                 far_level: int = FAR_LEVEL):
        self.ctx, self.programs = ctx, programs
        self.indirect = (ctx.version_code >= 430) if indirect is None else indirect
        self.lod = lod or TerrainLod()
        self.arena = TerrainArena(ctx)
        self.far = FarArena(ctx, far_level)
        self.tiles: dict = {}
        self.version = 0  # bumped when a tile is registered or removed (the horizon's mask follows it)
        self._colour_sum, self._colour_n = np.zeros(3), 0  # of the far tiles' mean colours
        self._tables = {id(self.arena): _LodTables(ctx, self.arena), id(self.far): _LodTables(ctx, self.far)}
        self._lod_eye = None
        self._cull = None
        self._readback = Readback(ctx)  # statistics and tests
        self.cells = CellMarks(ctx)  # per-cell marks the caller gives (terrain.glsl)

    @property
    def far_level(self) -> int:
        return self.far.first_level

    def _arena_of(self, tile: TerrainTile):
        return self.far if tile.far else self.arena

    def add(self, key, arrays) -> TerrainTile:
        """Upload a tile's :class:`TerrainArrays` (or :class:`FarArrays`) into its arena."""
        arena = self.far if isinstance(arrays, FarArrays) else self.arena
        return self.register(key, arena.add(arrays))

    def register(self, key, tile: TerrainTile) -> TerrainTile:
        """Draw ``tile`` (from the last of an arena's ``add_steps``) as ``key``'s terrain (in place
        of what ``key`` had: a far tile's complete one, or the other way round)."""
        old = self.tiles.get(key)
        if old is not None and old is not tile:
            self.remove(key)
        self.tiles[key] = tile
        self._tables[id(self._arena_of(tile))].dirty = True
        self.version += 1
        self._account(key, tile)
        self._count_colour(tile, 1)
        return tile

    def _count_colour(self, tile: TerrainTile, sign: int):
        if tile.mean_colour is not None:
            self._colour_sum += sign * np.asarray(tile.mean_colour)
            self._colour_n += sign

    def far_mean_colour(self):
        """The resident far tiles' mean colour (0..1 RGB), None without any."""
        return tuple(self._colour_sum / self._colour_n) if self._colour_n > 0 else None

    def _account(self, key, tile: TerrainTile | None):
        mem = gpu_memory(self.ctx)
        near = tile is not None and not tile.far
        mem.use(key, "terrain-near", self.arena.slot_bytes if near else 0)
        mem.use(key, "terrain-far", self.far.slot_bytes if tile is not None and tile.far else 0)
        arena = None if tile is None else self._arena_of(tile)
        lines = arena is not None and arena.lbo is not None
        mem.use(key, "terrain-lines", arena.slot_indices * 8 if lines else 0)

    def remove(self, key):
        t = self.tiles.pop(key, None)
        if t is not None:
            arena = self._arena_of(t)
            arena.remove(t)
            self._tables[id(arena)].dirty = True
            self.version += 1
            self._account(key, None)
            self._count_colour(t, -1)

    @property
    def _dirty(self) -> bool:
        return any(t.dirty for t in self._tables.values())

    def prepare(self, frame):
        """The compute pass for every view of ``frame``, one dispatch per arena: LOD levels from the
        first (main) view's camera in every view, so a shadow view draws the same geometry."""
        if not frame.views:
            return
        self._lod_eye = tuple(float(v) for v in frame.views[0].camera.position)
        if not self.tiles:
            return
        views = frame.all_views
        line_views = sum(1 << v.slot for v in views if v.fill == "lines")
        if line_views:  # the edge lists, made the first time a lines view asks
            for arena in (self.arena, self.far):
                if arena.capacity and arena.lbo is None:
                    arena.lines()
                    for key, t in self.tiles.items():
                        self._account(key, t)
        if not self.indirect:
            return
        if self._cull is None:
            from ..gl.programs import frame_slot_defines

            self._cull = load_program(self.ctx, "terrain_lod.glsl", frame_slot_defines(self.ctx, FRAME_BINDING))
        cs = self._cull
        set_uniform(cs, "uLodEye", self._lod_eye)
        set_uniform(cs, "uLodBands", self.lod.shader_bands())
        set_uniform(cs, "uLodZScale", LOD_Z_SCALE)
        set_uniform(cs, "uLineViews", line_views)  # draw edge lists
        dispatched = False
        for arena in (self.arena, self.far):
            tab = self._tables[id(arena)]
            if not arena.slots:
                continue
            if tab.dirty:
                tab.upload(t for t in self.tiles.values() if self._arena_of(t) is arena)
            set_uniform(cs, "uChunks", tab.slots * 256)
            set_uniform(cs, "uViewChunks", tab.capacity * 256)
            set_uniform(cs, "uMinLevel", getattr(arena, "first_level", 0))
            bind_storage(self.ctx, (tab.chunks, tab.ranges, tab.commands_for(len(views)), frame.uniforms.buffer))
            native.run_compute(cs, (tab.slots * 256 + 63) // 64, 1, len(views))
            dispatched = True
        if dispatched:
            self.ctx.memory_barrier()

    def read_commands(self, view, far: bool = False) -> np.ndarray:
        """(slots * 256,) CMD_DTYPE the compute pass wrote for ``view`` in the complete (or, with
        ``far``, the far) arena (tests and statistics); slot ``t.slot`` of tile ``t`` holds its 256
        chunks."""
        tab = self._tables[id(self.far if far else self.arena)]
        if tab.commands is None:
            return np.zeros(0, CMD_DTYPE)
        size = CMD_DTYPE.itemsize
        return np.frombuffer(self._readback.read(tab.commands, tab.slots * 256 * size,
                                                 view.slot * tab.capacity * 256 * size), CMD_DTYPE)

    def read_stats(self, view) -> dict:
        """Triangles and chunks per level the compute pass chose for ``view`` (waits for the GPU:
        statistics only), both arenas."""
        per_triangle = 6 if view.fill == "lines" else 3  # a lines view's commands count edge indices
        tris, per_level = 0, np.zeros(LEVELS, np.int64)
        for far in (False, True):
            cmds = self.read_commands(view, far)
            drawn = cmds["count"] > 0
            tris += int(cmds["count"].sum()) // per_triangle
            per_level += np.bincount(cmds["base_instance"][drawn], minlength=LEVELS)[:LEVELS]
        return {"triangles": tris, "chunks_per_level": per_level.tolist()}

    def warm_programs(self, pass_, view) -> list:
        if self.indirect and self._cull is None:  # the LOD pass, compiled here rather than at the first tile
            from ..gl.programs import frame_slot_defines

            self._cull = load_program(self.ctx, "terrain_lod.glsl", frame_slot_defines(self.ctx, FRAME_BINDING))
        return [(pass_.program(self.programs, "terrain", view, extra), "opaque") for extra in (None, {"FAR_TILE": True})]

    def draw(self, pass_, view) -> DrawCounts:
        """Each arena's resident chunks in one indirect multi-draw (GL 4.3), or each tile's finest level."""
        import moderngl

        if not self.tiles:
            return DrawCounts()
        lines = view.fill == "lines"
        k, mode = (2, moderngl.LINES) if lines else (1, moderngl.TRIANGLES)
        out = DrawCounts()
        for arena, texture in ((self.arena, self.arena.alpha), (self.far, self.far.colour)):
            if not arena.slots:
                continue
            far = arena is self.far
            prog = pass_.program(self.programs, "terrain", view, {"FAR_TILE": True} if far else None)
            for name, value in (("uLodEye", self._lod_eye or tuple(view.camera.position)),
                                ("uLodBands", self.lod.shader_bands()), ("uLodZScale", LOD_Z_SCALE),
                                ("uLodMorph", float(self.lod.morph)), ("uLodDebug", float(self.lod.debug)),
                                ("uMcsh", float(self.lod.mcsh))):
                set_uniform(prog, name, value)
            if not far:
                use_texture(self.ctx, self.arena.layers, 0)
                cells = self.cells
                cells.uniforms(prog)
                if cells.active:
                    from ..gl.programs import CELLS_UNIT

                    use_texture(self.ctx, cells.texture(self.tiles, arena.capacity, self.version), CELLS_UNIT)
            use_texture(self.ctx, texture, 1)
            # a lines view: the edge list with a line-list pipeline (its commands were written doubled)
            vao = arena.line_vao(prog) if lines else arena.vao(prog)
            tab = self._tables[id(arena)]
            if self.indirect:
                if tab.dirty or tab.commands is None:  # a tile arrived after prepare: drawn from the next frame on
                    continue
                vao.render_indirect(tab.commands, mode=mode, count=tab.slots * 256, first=view.slot * tab.capacity * 256)
                # triangles are counted on the GPU only (read_stats); the CPU reads nothing back
                out += DrawCounts(1, 0, 0)
                continue
            for t in self.tiles.values():
                if self._arena_of(t) is not arena:
                    continue
                lv = t.first_level
                first = int(t.lod_first[0, lv])
                vao.render(mode, first=k * first, vertices=k * int(t.lod_count[:, lv].sum()))
                out += DrawCounts(1, 0, t.triangles)
        return out

    def release(self):
        self.tiles.clear()
        self._colour_sum, self._colour_n = np.zeros(3), 0
        self.arena.release()
        self.far.release()
        for tab in self._tables.values():
            tab.release()
        self._readback.release()
        self.cells.release()
        if self._cull is not None:
            self._cull.release()
            self._cull = None
