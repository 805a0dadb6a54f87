"""GPU-driven grass: every resident instance in one arena, culled by a compute shader per view.

Resident data (written when tiles arrive, never per frame):
  * the *arena*: one buffer of the bundles' 16-byte instances (as they are), a range per
    (tile, model) batch;
  * the *group table*: one 48-byte record per chunk group (a batch's instances in one chunk,
    consecutive in the arena): box, first instance, count, model. Free slots have count 0;
  * the *model table*: per model its bounding sphere and its regions of the compacted buffer.
Per frame: ``shaders/grass_cull.glsl`` runs one dispatch for every view at once, one work group
per group slot and view (the slot count changes only with residency, so the dispatch costs the
CPU the same for 100k or 45M instances, one view or three), appends survivors to each view's
compacted buffer and writes the DrawElementsIndirect commands' instance counts (clamped to the
regions' capacities); ``draw`` issues one ``glMultiDrawElementsIndirect`` of two commands (full
mesh, lighter mesh of the outer ring) per model. Commands and statistics come in two sets used
in turn, each dispatch zeroing the other set for the next: one dispatch and one barrier a frame,
no reset pass, and GL state set only when it changed (:mod:`.glstate`). The CPU reads nothing
back; :meth:`GpuGrass.read_stats` and :meth:`GpuGrass.read_visible` do, for ``--stats`` and tests.

With ``extra`` (``view --look client``) every arena and compacted record is 32 bytes: the
instance and the 16 bytes of the client look beside it (``render/world/client_look.py``), culled
and copied together (``GRASS_EXTRA`` in the cull pass; the vertex stage reads ``i_extra``).

Streaming: a new batch's instances are written into the arena at most ``upload_budget`` bytes a
frame, and its groups join the table once all of it is there; ranges of released batches are
zeroed in the table at once but handed out again only ``REUSE_DELAY`` frames later, so no write
lands on data a frame in flight may still read and nothing waits on the GPU.
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from wowgrass.grass.bundle import INSTANCE_DTYPE

from ..constants import GrassSettings
from ..gl.memory import gpu_memory
from ..gl import native
from ..gl.state import (ALPHA_TO_COVERAGE, DRAW_BARRIER, SSBO_BARRIER, bind_storage, set_uniform, uniform_serial,
                      use_texture)
from .grass_cpu import BatchedGrass, group_by_chunk, interleave, sort_with_extra
from ..gl.meshes import CMD_DTYPE, GpuMesh, line_commands
from ..gl.programs import frame_slot_defines
from ..gl.programs import VaoCache
from ..gl.readback import Readback, read_buffer
from . import DrawCounts, Source

STATS_SIZE = 8  # uints per view: instances tested, groups visible, kept per ring (4), two unused
FRAME_BINDING = 6  # storage binding of the frame block's buffer in the compute passes (frame.glsl)
GROUP_DTYPE = np.dtype([("lo", "<f4", 4), ("hi", "<f4", 4), ("info", "<u4", 4)])
MODEL_DTYPE = np.dtype([("bound", "<f4", 4), ("region", "<u4", 4)])
REUSE_DELAY = 4  # frames before a released range is handed out again (frames in flight + 1)
WORKGROUP_ROW = 65535  # work groups per row of the 2D dispatch (the guaranteed minimum in x)
TRIANGLES, LINES = 0x0004, 0x0001  # GL primitive modes (moderngl's constants are these)
# distance bands (chunk box to camera, world units) a view can be culled in, nearest first, so that
# the compacted buffer holds near grass before far grass (GpuGrass.bands; shaders/grass_cull.glsl).
# Off by default: on the H200 it saved 0.23 ms in the sample zone's grass view but cost 0.37 ms at
# 45M resident (each band's dispatch visits every group slot); docs/view.md
NEAR_FIRST_BANDS = ((0.0, 6.0), (6.0, 16.0), (16.0, 36.0), (36.0, 80.0), (80.0, 3.0e38))


class RangeAllocator:
    """First-fit ranges of ``[0, capacity)``; freed ranges are reusable ``REUSE_DELAY`` frames later."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.free: list[list[int]] = [[0, capacity]] if capacity else []
        self.pending: deque = deque()  # (frame freed, start, size)
        self.high = 0  # end of the highest range ever handed out

    def alloc(self, n: int) -> int | None:
        for f in self.free:
            if f[1] >= n:
                start = f[0]
                f[0] += n
                f[1] -= n
                if not f[1]:
                    self.free.remove(f)
                self.high = max(self.high, start + n)
                return start
        return None

    def release(self, start: int, n: int, frame: int):
        self.pending.append((frame, start, n))

    def collect(self, frame: int):
        while self.pending and self.pending[0][0] <= frame - REUSE_DELAY:
            _, start, n = self.pending.popleft()
            self._give_back(start, n)

    def grow(self, capacity: int):
        self._give_back(self.capacity, capacity - self.capacity)
        self.capacity = capacity

    def _give_back(self, start: int, n: int):
        self.free.append([start, n])
        self.free.sort()
        merged = [self.free[0]]
        for s, k in self.free[1:]:
            if merged[-1][0] + merged[-1][1] == s:
                merged[-1][1] += k
            else:
                merged.append([s, k])
        self.free = merged


@dataclass(eq=False)
class GpuBatch:
    """One model's instances of one tile in the arena."""

    mesh: GpuMesh
    tile: object
    model: int
    count: int
    start: int  # first instance in the arena
    group_start: int
    groups: np.ndarray  # GROUP_DTYPE records, written once the instances are all uploaded
    data: memoryview | None  # instance bytes still to upload (None once done)
    sample_xy: np.ndarray = field(repr=False, default=None)
    uploaded: int = 0  # bytes written so far

    @property
    def ready(self) -> bool:
        return self.data is None


def group_records(t, start: int, model: int, mesh: GpuMesh) -> np.ndarray:
    """The group-table records of a batch's chunk-sorted instances from their group table ``t``
    (:func:`~wowgrass.render.sources.grass_cpu.group_by_chunk`, which reduced the instances), the batch
    starting at arena ``start``: per-group arithmetic only, no pass over the instances."""
    rec = np.zeros(len(t.keys), GROUP_DTYPE)
    if not len(rec):
        return rec
    s_max = t.s_max
    lo_z, hi_z = mesh.bound_z - mesh.bound_radius, mesh.bound_z + mesh.bound_radius
    rec["lo"][:, :2] = t.xy_lo
    rec["hi"][:, :2] = t.xy_hi
    # z of the instances' bounding spheres, for any scale in [0, s_max]; xy pad for the frustum box
    rec["lo"][:, 2] = t.z_lo + np.minimum(lo_z * s_max, 0.0) - 0.01
    rec["hi"][:, 2] = t.z_hi + np.maximum(hi_z * s_max, 0.0) + 0.01
    rec["lo"][:, 3] = mesh.bound_radius * s_max + 0.01
    rec["info"][:, 0] = start + t.first
    rec["info"][:, 1] = t.count
    rec["info"][:, 2] = model
    return rec


class GpuGrass(BatchedGrass, Source):
    """All resident grass, culled and LOD-selected on the GPU (GL 4.3). Same residency calls as
    :class:`~wowgrass.render.sources.grass_cpu.GrassField` (``add``, ``remove_tile``, ``release``)."""

    name = "grass"
    indirect = True
    layout = "16p"

    def __init__(self, ctx, programs, settings: GrassSettings | None = None, *, upload_budget: int = 8 << 20,
                 max_visible: int = 1 << 18, reserve_instances: int = 1 << 16, extra: bool = False):
        self.ctx, self.programs = ctx, programs
        self.settings = settings or GrassSettings()
        self.upload_budget = int(upload_budget)
        self.max_visible = int(max_visible)  # compacted capacity per model and LOD mesh (grows to it)
        self.extra = bool(extra)  # 16 bytes of the client look beside each instance
        self.record = 32 if self.extra else 16  # bytes per arena and compacted record
        defines = {"STATS_SIZE": STATS_SIZE, "GRASS_EXTRA": self.extra, **frame_slot_defines(ctx, FRAME_BINDING)}
        # one program per command set (CULL_SET): which set a frame uses costs no uniform write
        self._culls = tuple(programs.variant("grass_cull", {**defines, "CULL_SET": k}) for k in (0, 1))
        self._set = 1  # the command set the last dispatch used (the first frame uses set 0)
        self.cull = True
        self.bands = ()  # () : one dispatch a view, the compacted order arbitrary; or NEAR_FIRST_BANDS
        self.collect_stats = False  # statistics atomics in the compute pass (--stats, --json, tests)
        self.batches: list[GpuBatch] = []
        self.buffers_created = 0  # batches written into the arena (once each, never per frame)
        self._queue: deque = deque()
        self._frame = 0
        self._inst = RangeAllocator(0)
        self._groups = RangeAllocator(0)
        self.arena = self.group_table = None
        self._grow_arena(max(int(reserve_instances), 1024))
        self._grow_groups(1024)
        self.models: list[GpuMesh] = []
        self._model_of: dict[int, int] = {}
        self._resident = np.zeros(0, np.int64)  # ready instances per model
        self._caps = np.zeros(0, np.int64)
        self._n_views = 0
        self._layout_dirty = True
        self._arena_dirty = True
        self._plans: dict = {}  # (program, lines) -> the culled draws of a view: (z range, texture, vao, command)
        self.model_table = self.commands = self.visible = self.stats = None
        self._vaos: list[VaoCache] = []
        self._line_vaos: list[VaoCache] = []  # the same over each mesh's edge list (lines views)
        self._line_views: frozenset = frozenset()  # view slots whose commands are line commands
        self._arena_vaos: list[VaoCache] = []
        self._arena_line_vaos: list[VaoCache] = []
        self._arena_cmds = None
        self._arena_draws: list = []
        self._cmd_per_view = 0
        self._visible_per_view = 0
        self._readback = Readback(ctx)  # statistics and tests
        self._static_uniforms = None  # the key of the cull programs' uniforms as last set
        self._layout_serial = 0  # layouts made (commands, regions)
        self._dispatch = (1, 1)  # work groups in x and y of the cull dispatch

    # -- residency --
    @property
    def pending_uploads(self) -> int:
        return len(self._queue)

    def fits(self, instances: int, groups: int) -> bool:
        """Whether ``instances`` and ``groups`` more fit without growing the arena or the table."""
        return (any(f[1] >= instances for f in self._inst.free) or not instances) and \
            (any(f[1] >= groups for f in self._groups.free) or not groups)

    def reserve(self, instances: int, groups: int, scale: int = 1):
        """Grow ahead (streaming runs this as a step of its own) so that batches of ``instances``
        and ``groups`` in all fit; a growth is a copy of everything resident, so it makes room for
        ``scale`` times that (the tiles that can be resident at once), a quarter more for denser
        tiles, where that is more."""
        if instances and not any(f[1] >= instances for f in self._inst.free):
            self._grow_arena(max(self._inst.capacity * 2, self._inst.capacity + instances, instances * scale * 5 // 4))
        if groups and not any(f[1] >= groups for f in self._groups.free):
            self._grow_groups(max(self._groups.capacity * 2, self._groups.capacity + groups, groups * scale * 5 // 4))

    def add(self, mesh: GpuMesh, instances: np.ndarray, *, tile=None, layout: str | None = None,
            groups=None, extra: np.ndarray | None = None) -> GpuBatch | None:
        """Queue a batch; ``groups``: its table when ``instances`` are chunk-sorted already
        (:func:`~wowgrass.render.sources.grass_cpu.group_by_chunk`, done off the GL thread);
        ``extra``: the 16 bytes per instance of the client look (required with ``extra``)."""
        inst = np.asarray(instances)
        if inst.dtype != INSTANCE_DTYPE:
            raise TypeError(f"instances must have INSTANCE_DTYPE, not {inst.dtype}")
        if not len(inst):
            return None
        if self.extra:  # in the order group_by_chunk leaves the instances (the groups follow it)
            inst, extra = sort_with_extra(inst, extra)
        inst, table = (inst, groups) if groups is not None else group_by_chunk(inst)
        m = self._model_of.get(id(mesh))
        if m is None:
            m = self._model_of[id(mesh)] = len(self.models)
            self.models.append(mesh)
            self._resident = np.r_[self._resident, 0]
            self._caps = np.r_[self._caps, 0]
            self._layout_dirty = True
        start = self._alloc(self._inst, len(inst), self._grow_arena)
        recs = group_records(table, start, m, mesh)
        gstart = self._alloc(self._groups, len(recs), self._grow_groups)
        # a view of the instances, not a copy: the GL thread writes slices of it over frames
        data = interleave(inst, extra) if self.extra else np.ascontiguousarray(inst)
        b = GpuBatch(mesh, tile, m, len(inst), start, gstart, recs, memoryview(data).cast("B"),
                     np.array(inst["pos"][:: max(1, len(inst) // 4096), :2], np.float64))
        self.batches.append(b)
        self._queue.append(b)
        self.buffers_created += 1
        gpu_memory(self.ctx).add_use(tile, "grass", len(inst) * self.record + len(recs) * GROUP_DTYPE.itemsize)
        return b

    def remove_tile(self, tile):
        gpu_memory(self.ctx).use(tile, "grass", 0)
        keep = []
        for b in self.batches:
            if b.tile != tile:
                keep.append(b)
                continue
            if b.ready:
                self._write(self.group_table, bytes(len(b.groups) * GROUP_DTYPE.itemsize),
                            b.group_start * GROUP_DTYPE.itemsize)
                self._resident[b.model] -= b.count
                self._residency_changed()
            else:
                self._queue.remove(b)
            self._inst.release(b.start, b.count, self._frame)
            self._groups.release(b.group_start, len(b.groups), self._frame)
        self.batches = keep

    def upload(self, budget: int | None = None) -> int:
        """Write queued instances into the arena, up to ``budget`` bytes (default: the per-frame
        budget); returns the bytes written. A batch's groups are published when it is complete."""
        budget = self.upload_budget if budget is None else budget
        done = 0
        while self._queue and done < budget:
            b = self._queue[0]
            n = min(len(b.data) - b.uploaded, budget - done)
            self._write(self.arena, b.data[b.uploaded:b.uploaded + n], b.start * self.record + b.uploaded)
            b.uploaded += n
            done += n
            if b.uploaded == len(b.data):
                self._queue.popleft()
                b.data = None
                self._write(self.group_table, b.groups.tobytes(), b.group_start * GROUP_DTYPE.itemsize)
                self._resident[b.model] += b.count
                cap = min(int(self._resident[b.model]), self.max_visible)
                if cap > self._caps[b.model]:  # capacities only grow (power of two): few relayouts
                    self._caps[b.model] = min(1 << (cap - 1).bit_length(), self.max_visible)
                    self._layout_dirty = True
                self._residency_changed()
        return done

    def _residency_changed(self):
        self._arena_dirty = True  # the culling-off draws' commands
        self._plans.clear()  # the culled draws' per-model lists

    def _write(self, buffer, data: bytes, offset: int):
        """Write ``data`` into ``buffer`` at ``offset`` through a fresh staging buffer and a GPU
        copy, not ``glBufferSubData``: on the H200 a direct write could land before an earlier
        GPU copy into the same buffer (the one that grows it), which then overwrote the new data
        (groups of the first tiles read as empty, their grass missing). Copies stay in order."""
        staging = self.ctx.buffer(data)
        self.ctx.copy_buffer(buffer, staging, size=len(data), write_offset=offset)
        staging.release()

    def flush_uploads(self):
        """Upload everything queued now (start-up, tests)."""
        while self._queue:
            self.upload(1 << 62)

    def _alloc(self, ranges: RangeAllocator, n: int, grow) -> int:
        start = ranges.alloc(n)
        while start is None:
            grow(max(ranges.capacity * 2, ranges.capacity + n))
            start = ranges.alloc(n)
        return start

    def _grow_arena(self, capacity: int):
        self.arena = self._grow(self.arena, self._inst, capacity, self.record, zero=False)
        for c in (*getattr(self, "_arena_vaos", ()), *getattr(self, "_arena_line_vaos", ())):  # the old buffer
            c.release()
        self._arena_vaos, self._arena_line_vaos = [], []  # made again over the new one (_draw_all)

    def _grow_groups(self, capacity: int):
        self.group_table = self._grow(self.group_table, self._groups, capacity, GROUP_DTYPE.itemsize, zero=True)

    def _grow(self, old, ranges: RangeAllocator, capacity: int, item: int, zero: bool):
        """A bigger buffer with the old one's contents (a GPU copy); ``zero``: zeros after them
        (free group slots must read as empty)."""
        new = gpu_memory(self.ctx).track(self.ctx.buffer(bytes(capacity * item)) if zero else self.ctx.buffer(reserve=capacity * item), "grass")
        if old is not None:
            self.ctx.copy_buffer(new, old, size=old.size)
            old.release()
        ranges.grow(capacity)
        return new

    # -- per-view layout: commands, compacted regions, statistics --
    def _relayout(self, n_views: int, line_views: frozenset = frozenset()):
        """Commands, regions and statistics of ``n_views`` views; the views in ``line_views`` (slots)
        get their commands' line form: the same GPU-written instance counts over the edge lists."""
        n = len(self.models)
        self._n_views = max(n_views, self._n_views, 1)
        caps = np.maximum(self._caps, 1)
        region = np.zeros((n, 4), np.int64)
        region[:, 1] = region[:, 3] = caps
        bases = np.r_[0, np.cumsum(2 * caps)]
        region[:, 0] = bases[:-1]
        region[:, 2] = bases[:-1] + caps
        per_view = int(bases[-1])
        models = np.zeros(n, MODEL_DTYPE)
        models["bound"][:, 0] = [m.bound_z for m in self.models]
        models["bound"][:, 1] = [m.bound_radius for m in self.models]
        models["region"] = region
        cmds = np.zeros((self._n_views, n, 2), CMD_DTYPE)
        cmds["count"][:, :, 0] = [m.index_count for m in self.models]
        cmds["count"][:, :, 1] = [m.lite_index_count for m in self.models]
        views = np.arange(self._n_views)[:, None, None] * per_view
        cmds["base_instance"] = views + np.stack([region[:, 0], region[:, 2]], axis=1)[None]
        for v in line_views:
            cmds[v] = line_commands(cmds[v])
        self._line_views = line_views
        for b in (self.model_table, self.commands, self.stats):
            if b is not None:
                b.release()
        self.model_table = gpu_memory(self.ctx).track(self.ctx.buffer(models.tobytes()), "grass")
        # both sets' commands, then both sets' counters (zero: the cull appends to them)
        self.commands = gpu_memory(self.ctx).track(self.ctx.buffer(cmds.tobytes() * 2 + bytes(2 * cmds.size * 4)), "grass")
        self.stats = gpu_memory(self.ctx).track(self.ctx.buffer(bytes(2 * self._n_views * STATS_SIZE * 4)), "grass")  # set 0, set 1
        need = per_view * self._n_views * self.record
        if self.visible is None or self.visible.size < need:
            if self.visible is not None:
                self.visible.release()
            self.visible = gpu_memory(self.ctx).track(self.ctx.buffer(reserve=need), "grass")
            for c in (*self._vaos, *self._line_vaos):
                c.release()
            self._vaos, self._line_vaos = [], []
        while len(self._vaos) < n:
            mesh = self.models[len(self._vaos)]
            self._vaos.append(self._vao_cache(mesh, lambda: self.visible))
            self._line_vaos.append(self._vao_cache(mesh, lambda: self.visible, mesh.lbo))
        self._cmd_per_view = 2 * n
        self._visible_per_view = per_view
        self._layout_dirty = False
        self._layout_serial += 1
        self._plans.clear()

    def _vao_cache(self, mesh, buffer, index_buffer=None):
        """Vertex arrays of ``mesh`` over the instance buffer ``buffer()`` returns when each is made
        (never a buffer a growth released)."""
        def inst():
            return (buffer(), "4u4 4u4/i", "i_packed", "i_extra") if self.extra else (buffer(), "4u4/i", "i_packed")

        return VaoCache(lambda prog: self.ctx.vertex_array(
            prog, [(mesh.grass_vbo, mesh.grass_format, "in_mesh"), inst()],
            index_buffer=index_buffer or mesh.ibo, index_element_size=4))

    # -- a frame --
    def prepare(self, frame):
        self._frame += 1
        if self._inst.pending or self._groups.pending:
            self._inst.collect(self._frame)
            self._groups.collect(self._frame)
        if self._queue:
            self.upload()
        if not self.cull or not self.models:
            return
        views = frame.all_views
        n_views = len(views)
        line_views = frozenset(v.slot for v in views if v.fill == "lines") if n_views > 1 or \
            views[0].fill == "lines" else frozenset()
        if self._layout_dirty or n_views > self._n_views or line_views != self._line_views:
            self._relayout(n_views, line_views)
        bind_storage(self.ctx, (self.arena, self.group_table, self.model_table, self.commands, self.visible,
                                self.stats, frame.uniforms.buffer))
        culls = self._culls
        key = (self._groups.high, self._layout_serial, self.settings.rings.lite_ring, self.collect_stats, self.bands,
               uniform_serial(culls[0]), uniform_serial(culls[1]))
        if key != self._static_uniforms:  # frame after frame the same (and no one else set them)
            self._set_static_uniforms()
            self._static_uniforms = (*key[:-2], uniform_serial(culls[0]), uniform_serial(culls[1]))
        # every view in one dispatch (z: the view's slot); views beyond this frame's (a pass that
        # added one earlier) keep zero counts
        self._set ^= 1
        cs = culls[self._set]
        gx, rows = self._dispatch
        if not self.bands:
            native.run_compute(cs, gx, rows, n_views)
            self.ctx.memory_barrier(DRAW_BARRIER)
            return
        for k, band in enumerate(self.bands):
            set_uniform(cs, "uBand", band)
            native.run_compute(cs, gx, rows, n_views)
            # this band's appends before the next band's and, after the last, before the draws
            self.ctx.memory_barrier(DRAW_BARRIER if k == len(self.bands) - 1 else SSBO_BARRIER)

    def _set_static_uniforms(self):
        """The cull programs' uniforms that change only with residency, the layout or settings."""
        n_groups = self._groups.high
        for cs in self._culls:
            for name, value in (("uGroupCount", n_groups), ("uRowGroups", WORKGROUP_ROW),
                                ("uLiteRing", self.settings.rings.lite_ring), ("uCollectStats", self.collect_stats),
                                ("uCommandCount", self._cmd_per_view * self._n_views),
                                ("uStatsCount", STATS_SIZE * self._n_views), ("uCommandsPerView", self._cmd_per_view),
                                ("uVisiblePerView", self._visible_per_view), ("uBand", (0.0, 3.0e38))):
                set_uniform(cs, name, value)
        # at least one work group: group 0 zeroes the other command set
        self._dispatch = (max(1, min(n_groups, WORKGROUP_ROW)), max(1, -(-n_groups // WORKGROUP_ROW)))

    def warm_programs(self, pass_, view) -> list:
        return [(pass_.program(self.programs, "grass", view),
                 "coverage" if getattr(pass_, "alpha_to_coverage", False) else "opaque")]

    def draw(self, pass_, view) -> DrawCounts:
        if not self.models:
            return DrawCounts()
        prog = pass_.program(self.programs, "grass", view)
        a2c = getattr(pass_, "alpha_to_coverage", False)
        if a2c:
            self.ctx.enable_direct(ALPHA_TO_COVERAGE)
        if self.cull:
            lines = view.slot in self._line_views  # line commands over the edge lists
            plan = self._plans.get((prog.glo, lines))
            if plan is None:
                plan = self._plans[(prog.glo, lines)] = self._plan(prog, lines)
            draws, mode, counts = plan
            first = self._set * self._cmd_per_view * self._n_views + view.slot * self._cmd_per_view
            commands = self.commands
            for z_range, texture, vao, k in draws:
                set_uniform(prog, "uModelZ", z_range)
                use_texture(self.ctx, texture, 0)
                vao.render_indirect(commands, mode=mode, count=2, first=first + k)
            out = counts  # instances and triangles drawn are the GPU's (read_stats)
        else:
            out = self._draw_all(prog, view.fill == "lines")
        if a2c:
            self.ctx.disable_direct(ALPHA_TO_COVERAGE)
        return out

    def _plan(self, prog, lines: bool) -> tuple:
        """The culled draws of a view: per model with ready instances, its z range, texture, vertex
        array and first command in a view's commands; kept until residency or the layout changes."""
        vaos, mode = (self._line_vaos, LINES) if lines else (self._vaos, TRIANGLES)
        # the z range as the uniform's raw bytes: set_uniform writes them without packing
        draws = [(struct.pack("<2f", mesh.z_min, mesh.z_max), mesh.texture, vaos[m](prog), 2 * m)
                 for m, mesh in enumerate(self.models) if self._resident[m] > 0]
        return draws, mode, DrawCounts(draw_calls=len(draws))

    def _draw_all(self, prog, lines: bool = False) -> DrawCounts:
        """Culling off: every ready instance, one multi-draw per model straight from the arena
        (the shader still drops what is beyond the draw distance or thinned by the rings); the
        commands' line forms follow them in the same buffer, for ``lines`` views."""
        if self._arena_dirty:
            ready = sorted((b for b in self.batches if b.ready), key=lambda b: b.model)
            cmds = np.zeros(len(ready), CMD_DTYPE)
            cmds["count"] = [b.mesh.index_count for b in ready]
            cmds["instances"] = [b.count for b in ready]
            cmds["base_instance"] = [b.start for b in ready]
            if self._arena_cmds is not None:
                self._arena_cmds.release()
            both = np.concatenate([cmds, line_commands(cmds)])
            self._arena_cmds = gpu_memory(self.ctx).track(self.ctx.buffer(both.tobytes() or bytes(CMD_DTYPE.itemsize)), "grass")
            self._arena_line_first = len(cmds)
            models = np.array([b.model for b in ready], np.int64)
            starts = np.searchsorted(models, np.arange(len(self.models) + 1))
            self._arena_draws = [(m, int(starts[m]), int(starts[m + 1] - starts[m]),
                                  sum(b.count for b in ready[starts[m]:starts[m + 1]]))
                                 for m in range(len(self.models)) if starts[m + 1] > starts[m]]
            self._arena_dirty = False
        while len(self._arena_vaos) < len(self.models):
            mesh = self.models[len(self._arena_vaos)]
            self._arena_vaos.append(self._vao_cache(mesh, lambda: self.arena))
            self._arena_line_vaos.append(self._vao_cache(mesh, lambda: self.arena, mesh.lbo))
        vaos, mode = (self._arena_line_vaos, LINES) if lines else (self._arena_vaos, TRIANGLES)
        shift = self._arena_line_first if lines else 0
        out = DrawCounts()
        for m, k0, k, n in self._arena_draws:
            mesh = self.models[m]
            set_uniform(prog, "uModelZ", (mesh.z_min, mesh.z_max))
            use_texture(self.ctx, mesh.texture, 0)
            vaos[m](prog).render_indirect(self._arena_cmds, mode=mode, count=k, first=shift + k0)
            out += DrawCounts(1, n, n * mesh.triangles)
        return out

    # -- read back (statistics and tests only) --
    def _read_commands(self, view) -> tuple[np.ndarray, np.ndarray]:
        """The last frame's commands of ``view`` and their counters (what the cull appended,
        before the clamp to the regions' capacities)."""
        per_set = self._cmd_per_view * self._n_views
        first = self._set * per_set + view.slot * self._cmd_per_view
        n = self._cmd_per_view
        cmds = np.frombuffer(self._readback.read(self.commands, n * CMD_DTYPE.itemsize, first * CMD_DTYPE.itemsize),
                             CMD_DTYPE).copy()
        counters = np.frombuffer(self._readback.read(self.commands, n * 4, 2 * per_set * CMD_DTYPE.itemsize + first * 4),
                                 np.uint32)
        return cmds, counters

    def read_stats(self, view) -> dict:
        """The last frame's counters of ``view`` (waits for the GPU; ``gpu_tested``,
        ``gpu_groups_visible`` and ``kept_per_ring`` need ``collect_stats``)."""
        if self.stats is None or view.slot >= self._n_views or not self.cull:
            s = np.zeros(STATS_SIZE, np.uint32)
            cmds, counters = np.zeros(0, CMD_DTYPE), np.zeros(0, np.uint32)
        else:
            at = (self._set * self._n_views + view.slot) * STATS_SIZE * 4
            s = np.frombuffer(self._readback.read(self.stats, STATS_SIZE * 4, at), np.uint32)
            cmds, counters = self._read_commands(view)
        n = cmds["instances"].astype(np.int64)
        # a line command counts its edges' indices (twice its triangles' indices)
        per_triangle = 6 if view.slot in self._line_views else 3
        return {"gpu_tested": int(s[0]), "gpu_groups_visible": int(s[1]), "kept_per_ring": s[2:6].tolist(),
                "drawn": int(n.sum()), "overflow": int((counters.astype(np.int64) - n).sum()),
                "drawn_triangles": int((n * (cmds["count"].astype(np.int64) // per_triangle)).sum())}

    def read_visible(self, view) -> dict:
        """{(model, lod): instances} the last frame drew for ``view`` (INSTANCE_DTYPE copies)."""
        cmds, _ = self._read_commands(view)
        out = {}
        for c, cmd in enumerate(cmds):
            n = int(cmd["instances"])
            raw = self._readback.read(self.visible, n * self.record, int(cmd["base_instance"]) * self.record)
            out[(c // 2, c % 2)] = self._instances_of(raw, n)
        return out

    def _instances_of(self, raw: bytes, n: int) -> np.ndarray:
        """INSTANCE_DTYPE copies of the first 16 bytes of ``n`` records."""
        rec = np.frombuffer(raw, np.uint8).reshape(n, self.record)[:, :16]
        return np.ascontiguousarray(rec).view(INSTANCE_DTYPE).reshape(n)

    def read_resident(self, model: int) -> np.ndarray:
        """Every uploaded instance of ``model``, read back from the arena (tests, validation)."""
        rec = self.record
        parts = [self._instances_of(read_buffer(self.ctx, self.arena, b.count * rec, b.start * rec), b.count)
                 for b in self.batches if b.model == model and b.ready]
        return np.concatenate(parts) if parts else np.zeros(0, INSTANCE_DTYPE)

    def check_against_reference(self, view) -> dict:
        """Compare the last frame's visible set of ``view`` with the numpy reference
        (:func:`wowgrass.render.sources.rings.reference_cull`): instances missing and extra per (model, lod)."""
        from .rings import reference_cull

        got = self.read_visible(view)
        out = {"missing": 0, "extra": 0, "reference": 0}
        void = np.dtype((np.void, 16))
        for m, mesh in enumerate(self.models):
            inst = self.read_resident(m)
            keep, lod = reference_cull(inst, camera_xy=view.camera.position[:2], planes=view.planes(),
                                       draw_distance=self.settings.draw_distance, bound_z=mesh.bound_z,
                                       bound_radius=mesh.bound_radius, rings=self.settings.rings)
            for lv in (0, 1):
                want = set(np.ascontiguousarray(inst[keep & (lod == lv)]).view(void).tolist())
                have = set(np.ascontiguousarray(got[(m, lv)]).view(void).tolist())
                out["missing"] += len(want - have)
                out["extra"] += len(have - want)
                out["reference"] += len(want)
        return out

    def release(self):
        for c in self._vaos + self._line_vaos + self._arena_vaos + self._arena_line_vaos:
            c.release()
        for b in (self.arena, self.group_table, self.model_table, self.commands, self.visible, self.stats,
                  self._arena_cmds):
            if b is not None:
                b.release()
        self.arena = self.group_table = self.model_table = self.commands = None
        self.visible = self.stats = self._arena_cmds = None
        self._readback.release()
        self.batches, self.models = [], []
        self._queue.clear()
