"""WMOs: each group of each resident WMO one mesh on the GPU, drawn with one instanced draw over
every placement in view (``shaders/wmo.glsl``), casting into the sun's shadow map.

Resident data (rewritten when placements come or go, never per frame):
  * per WMO its groups' vertex and index buffers (render/world/wmo_models.py) and one texture
    array of its textures;
  * the *record table*: one 112-byte record per (placement, group): the placement's matrix, the
    group's world box under it, the group's slot;
  * the *slot table*: per group slot its first draw command and its region of the compacted
    matrices (as many as it has placements).
Per frame, GL 4.3: ``shaders/wmo_cull.glsl`` tests every record against every view's frustum in
one dispatch (z: the view) and appends the visible placements' matrices to their group's region
of that view, counting them in the group's two indirect commands (its solid batches, then its
blended ones); the draws read the counts from there: the CPU reads nothing back, and its work per
frame is one dispatch and a draw per resident group, whatever the placements. Below GL 4.3, and
for wireframe views, every placement is drawn (no culling).

Placements are deduplicated by MODF unique id by the tile source (a WMO that spans tiles is
listed by each).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wowgrass.game.mapobjects import transformed_bounds

from ..gl.memory import gpu_memory
from ..gl import native
from ..gl.meshes import CMD_DTYPE, edge_indices
from ..gl.programs import VaoCache, frame_slot_defines, read_by
from ..gl.readback import Readback
from ..gl.state import DRAW_BARRIER, bind_storage, disable, enable, set_uniform, use_texture
from ..world.wmo_models import TEXTURE_SIZE, VERTEX_ATTRS, VERTEX_FORMAT, WmoModel
from . import DrawCounts, Source

RECORD_DTYPE = np.dtype([("model", "<f4", 16), ("lo", "<f4", 4), ("hi", "<f4", 4), ("info", "<u4", 4)])
assert RECORD_DTYPE.itemsize == 112
FRAME_BINDING = 6          # the frame block's buffer as storage (shaders/frame.glsl FRAME_SLOTS), as grass uses
FIRST_BINDING = 8          # records, slots, commands, visible (above the grass's 0..6: no rebinding each frame)
TRIANGLES, LINES = 0x0004, 0x0001


@dataclass(eq=False)
class GpuGroup:
    vbo: object
    ibo: object
    lbo: object
    solid: int          # indices of the solid batches (first), then the blended ones up to ``total``
    total: int
    bbox: np.ndarray    # (2, 3) local

    @property
    def triangles(self) -> int:
        return self.total // 3


class GpuWmo:
    """One WMO's groups and texture array (uploaded once, shared by its placements)."""

    def __init__(self, ctx, model: WmoModel):
        import moderngl

        mem = gpu_memory(ctx)
        n = max(len(model.textures), 1)
        data = model.images.tobytes() if len(model.images) else bytes(TEXTURE_SIZE * TEXTURE_SIZE * 4)
        self.textures = mem.track(ctx.texture_array((TEXTURE_SIZE, TEXTURE_SIZE, n), 4, data=data), "wmo",
                                  mipmaps=True)
        self.textures.filter = (moderngl.LINEAR_MIPMAP_LINEAR, moderngl.LINEAR)
        self.textures.build_mipmaps()
        self.groups = []
        for g in model.groups:
            self.groups.append(GpuGroup(mem.track(ctx.buffer(g.vertices.tobytes()), "wmo"),
                                        mem.track(ctx.buffer(g.indices.tobytes()), "wmo"),
                                        mem.track(ctx.buffer(edge_indices(g.indices).tobytes()), "wmo"),
                                        g.solid, len(g.indices), g.bbox))
        self.model = model

    def release(self):
        self.textures.release()
        for g in self.groups:
            for b in (g.vbo, g.ibo, g.lbo):
                b.release()


@dataclass(eq=False)
class Slot:
    wmo: GpuWmo
    group: GpuGroup
    count: int            # placements
    region: int           # first matrix of its region in a view's part of the compacted buffer
    matrices: object      # buffer of all its placements' matrices (unculled draws)
    vaos: tuple = None    # (culled, all, all-lines) vertex array caches


class WmoSet(Source):
    name = "wmos"

    def __init__(self, ctx, programs):
        self.ctx, self.programs = ctx, programs
        self.gpu_cull = ctx.version_code >= 430
        self.models: dict = {}        # key -> GpuWmo
        self.placed: dict = {}        # tile -> [(key, (4, 4) matrix)]
        self.slots: list[Slot] = []
        self._dirty = False
        self.records = self.slot_table = self.commands = self.visible = None
        self._n_records = 0
        self._n_views = 0
        self._per_view = 0            # matrices per view in the compacted buffer
        self._set = 1
        self._culls = None
        self._static = None
        self._readback = None
        if self.gpu_cull:
            defines = {**frame_slot_defines(ctx, FRAME_BINDING), "WMO_RECORDS": FIRST_BINDING,
                       "WMO_SLOTS": FIRST_BINDING + 1, "WMO_COMMANDS": FIRST_BINDING + 2,
                       "WMO_VISIBLE": FIRST_BINDING + 3}
            self._culls = tuple(programs.variant("wmo_cull", {**defines, "CULL_SET": k}) for k in (0, 1))

    # -- residency --
    def has_model(self, key) -> bool:
        return key in self.models

    def add_model(self, key, model: WmoModel | None) -> None:
        if key not in self.models and model is not None and model.groups:
            self.models[key] = GpuWmo(self.ctx, model)

    def add(self, tile, placements) -> int:
        """``placements``: [(model key, (4, 4) world matrix)] of one tile (keys without an uploaded
        model are skipped); returns how many were added."""
        keep = [(k, np.asarray(m, np.float64)) for k, m in placements if k in self.models]
        if keep:
            self.placed.setdefault(tile, []).extend(keep)
            self._dirty = True
            # a placement's matrices (all, and compacted in each of two views) and its records
            n = sum(len(self.models[k].groups) for k, _ in keep)
            gpu_memory(self.ctx).add_use(tile, "wmo", n * (RECORD_DTYPE.itemsize + 3 * 64))
        return len(keep)

    def remove_tile(self, tile) -> None:
        if self.placed.pop(tile, None) is not None:
            self._dirty = True
            gpu_memory(self.ctx).use(tile, "wmo", 0)

    @property
    def placement_count(self) -> int:
        return sum(len(p) for p in self.placed.values())

    # -- tables --
    def _release_slots(self):
        for s in self.slots:
            s.matrices.release()
            for c in s.vaos or ():
                c.release()
        self.slots = []

    def _rebuild(self):
        self._dirty = False
        self._release_slots()
        by_key: dict = {}
        for plist in self.placed.values():
            for key, m in plist:
                by_key.setdefault(key, []).append(m)
        records, region = [], 0
        for key in sorted(by_key, key=str):
            wmo = self.models[key]
            mats = np.stack(by_key[key])
            cols = np.ascontiguousarray(mats.transpose(0, 2, 1), np.float32).reshape(-1, 16)
            for g in wmo.groups:
                slot = len(self.slots)
                rec = np.zeros(len(mats), RECORD_DTYPE)
                rec["model"] = cols
                box = transformed_bounds(mats, g.bbox)
                rec["lo"][:, :3], rec["hi"][:, :3] = box[:, 0], box[:, 1]
                rec["info"][:, 0] = slot
                records.append(rec)
                self.slots.append(Slot(wmo, g, len(mats), region,
                                       gpu_memory(self.ctx).track(self.ctx.buffer(cols.tobytes()), "wmo")))
                region += len(mats)
        self._per_view = region
        rec = np.concatenate(records) if records else np.zeros(0, RECORD_DTYPE)
        self._n_records = len(rec)
        for b in (self.records, self.slot_table):
            if b is not None:
                b.release()
        self.records = self.slot_table = None
        if self.gpu_cull and len(rec):
            table = np.zeros((len(self.slots), 4), np.uint32)
            table[:, 0] = 2 * np.arange(len(self.slots))
            table[:, 1] = [s.region for s in self.slots]
            table[:, 2] = [s.count for s in self.slots]
            mem = gpu_memory(self.ctx)
            self.records = mem.track(self.ctx.buffer(rec.tobytes()), "wmo")
            self.slot_table = mem.track(self.ctx.buffer(table.tobytes()), "wmo")
        self._n_views = 0          # commands and the compacted buffer follow at the next prepare
        self._static = None

    def _relayout(self, n_views: int):
        n = len(self.slots)
        self._n_views = max(n_views, 1)
        cmds = np.zeros((self._n_views, n, 2), CMD_DTYPE)
        cmds["count"][:, :, 0] = [s.group.solid for s in self.slots]
        cmds["count"][:, :, 1] = [s.group.total - s.group.solid for s in self.slots]
        cmds["first_index"][:, :, 1] = [s.group.solid for s in self.slots]
        base = np.arange(self._n_views)[:, None] * self._per_view + np.array([s.region for s in self.slots])[None]
        cmds["base_instance"] = base[:, :, None]
        if self.commands is not None:
            self.commands.release()
        mem = gpu_memory(self.ctx)
        self.commands = mem.track(self.ctx.buffer(cmds.tobytes() * 2), "wmo")  # set 0, set 1 (counts zero)
        need = max(self._n_views * self._per_view * 64, 64)
        if self.visible is None or self.visible.size < need:
            if self.visible is not None:
                self.visible.release()
            self.visible = mem.track(self.ctx.buffer(reserve=need), "wmo")
            for s in self.slots:
                if s.vaos is not None:
                    s.vaos[0].release()
        self._static = None

    def _vaos(self, s: Slot) -> tuple:
        if s.vaos is None:
            ctx, g = self.ctx, s.group

            def make(buffer_of, ibo):
                return VaoCache(lambda prog: ctx.vertex_array(
                    prog, [(g.vbo, *read_by(prog, VERTEX_FORMAT, *VERTEX_ATTRS)), (buffer_of(), "16f/i", "i_model")],
                    index_buffer=ibo, index_element_size=4))

            s.vaos = (make(lambda: self.visible, g.ibo), make(lambda: s.matrices, g.ibo),
                      make(lambda: s.matrices, g.lbo))
        return s.vaos

    # -- a frame --
    def prepare(self, frame) -> None:
        if self._dirty:
            self._rebuild()
        if not self.gpu_cull or not self._n_records:
            return
        views = frame.all_views
        if len(views) > self._n_views:
            self._relayout(len(views))
        bind_storage(self.ctx, (self.records, self.slot_table, self.commands, self.visible), FIRST_BINDING)
        bind_storage(self.ctx, (frame.uniforms.buffer,), FRAME_BINDING)
        n_cmd = 2 * len(self.slots)
        key = (self._n_records, self._n_views, n_cmd)
        if self._static != key:
            for cs in self._culls:
                for name, value in (("uRecordCount", self._n_records), ("uCommandsPerView", n_cmd),
                                    ("uCommandCount", n_cmd * self._n_views), ("uVisiblePerView", self._per_view)):
                    set_uniform(cs, name, value)
            self._static = key
        self._set ^= 1
        native.run_compute(self._culls[self._set], -(-self._n_records // 64), 1, len(views))
        self.ctx.memory_barrier(DRAW_BARRIER)

    def warm_programs(self, pass_, view) -> list:
        prog = pass_.program(self.programs, "wmo", view)
        return [(prog, "opaque"), (prog, "blend")]    # its blended batches draw with blending on

    def draw(self, pass_, view) -> DrawCounts:
        import moderngl

        if self._dirty:
            self._rebuild()
        if not self.slots:
            return DrawCounts()
        prog = pass_.program(self.programs, "wmo", view)
        lines = view.fill == "lines"
        culled = self.gpu_cull and not lines and self.commands is not None and view.slot < self._n_views
        shadow = pass_.name == "shadow"
        n_cmd = 2 * len(self.slots)
        first = self._set * n_cmd * self._n_views + view.slot * n_cmd
        out = DrawCounts()
        blended = []
        set_uniform(prog, "uBlended", False)
        for k, s in enumerate(self.slots):
            use_texture(self.ctx, s.wmo.textures, 0)
            vaos = self._vaos(s)
            if culled:
                if s.group.solid:
                    vaos[0](prog).render_indirect(self.commands, mode=TRIANGLES, count=1, first=first + 2 * k)
                    out += DrawCounts(1, 0, 0)     # instances and triangles: the GPU's (read_stats)
            elif lines:
                vaos[2](prog).render(moderngl.LINES, vertices=2 * s.group.total, instances=s.count)
                out += DrawCounts(1, s.count, s.count * s.group.triangles)
            elif s.group.solid:
                vaos[1](prog).render(TRIANGLES, vertices=s.group.solid, instances=s.count)
                out += DrawCounts(1, s.count, s.count * s.group.solid // 3)
            if s.group.total > s.group.solid and not shadow and not lines:
                blended.append((k, s))
        if blended:
            from .liquids import blend_alpha

            set_uniform(prog, "uBlended", True)
            enable(self.ctx, moderngl.BLEND)
            blend_alpha(self.ctx)
            fbo = self.ctx.fbo
            fbo.depth_mask = False
            for k, s in blended:
                use_texture(self.ctx, s.wmo.textures, 0)
                vaos = self._vaos(s)
                if culled:
                    vaos[0](prog).render_indirect(self.commands, mode=TRIANGLES, count=1, first=first + 2 * k + 1)
                    out += DrawCounts(1, 0, 0)
                else:
                    n = s.group.total - s.group.solid
                    vaos[1](prog).render(TRIANGLES, first=s.group.solid, vertices=n, instances=s.count)
                    out += DrawCounts(1, s.count, s.count * n // 3)
            fbo.depth_mask = True
            disable(self.ctx, moderngl.BLEND)
            set_uniform(prog, "uBlended", False)
        return out

    # -- read back (statistics and tests) --
    def read_stats(self, view) -> dict:
        """The last frame's placements and triangles drawn in ``view`` (waits for the GPU)."""
        if not self.slots:
            return {"instances": 0, "triangles": 0, "groups": 0}
        if not (self.gpu_cull and self.commands is not None and view.slot < self._n_views):
            return {"instances": sum(s.count for s in self.slots),
                    "triangles": sum(s.count * s.group.triangles for s in self.slots), "groups": len(self.slots)}
        if self._readback is None:
            self._readback = Readback(self.ctx)
        n_cmd = 2 * len(self.slots)
        first = self._set * n_cmd * self._n_views + view.slot * n_cmd
        raw = self._readback.read(self.commands, n_cmd * CMD_DTYPE.itemsize, first * CMD_DTYPE.itemsize)
        cmds = np.frombuffer(raw, CMD_DTYPE).reshape(-1, 2)
        inst = cmds["instances"][:, 0].astype(np.int64)
        tris = (inst * (cmds["count"][:, 0] + cmds["count"][:, 1]).astype(np.int64) // 3).sum()
        return {"instances": int(inst.sum()), "triangles": int(tris), "groups": int((inst > 0).sum())}

    def release(self):
        self._release_slots()
        for b in (self.records, self.slot_table, self.commands, self.visible):
            if b is not None:
                b.release()
        self.records = self.slot_table = self.commands = self.visible = None
        for m in self.models.values():
            m.release()
        self.models.clear()
        self.placed.clear()
        if self._readback is not None:
            self._readback.release()
            self._readback = None
