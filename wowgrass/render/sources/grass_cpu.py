"""Resident instanced grass: one static GL instance buffer per (tile, model), made once.

The bundle's 16-byte instances (``wowgrass.grass.bundle.INSTANCE_DTYPE``: ``pos 3f``, ``yaw u2``,
``scale u2``) are uploaded as they are. The vertex shader reads them as one ``4u4/i`` attribute
(layout ``"16p"``, the default: float bits of X, Y, Z and ``yaw | scale << 16``) or as
``3f 2u2/i`` (layout ``"16"``); the same bytes either way, and the same frame (a test checks it);
on the H200 the single attribute draws 1.3x faster. After the
upload no frame does per-instance CPU work: a frame tests the resident chunks (33.3-unit squares,
one group of consecutive instances each) against the draw distance and the view frustum, writes
one small indirect-command buffer (5 u32 per visible chunk and model) and issues one
``glMultiDrawElementsIndirect`` per (tile, model). Where GL 4.3 is missing, or culling is off, each
(tile, model) is one plain instanced draw of all its instances; the shader still drops every
instance beyond the draw distance. This is the fallback where compute shaders are missing (and
``--culling cpu``); :mod:`wowgrass.render.sources.grass_gpu` is the GPU-driven path.

Instances within a model's array are grouped by chunk at upload time (the placement already
emits them in chunk order; anything else is stably sorted once). With ``extra`` (``view --look
client``) each instance record is 32 bytes: the instance, then its 16 bytes of the client look
(``render/world/client_look.py``), read as a second attribute ``i_extra``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wowgrass.game.coords import map_point, map_steps
from wowgrass.grass.bundle import INSTANCE_DTYPE, unpack_instances  # the contract; render only reads it

from ..camera import BoxSet
from ..constants import CHUNK_SIZE, GrassSettings
from ..gl.memory import gpu_memory
from ..gl.state import ALPHA_TO_COVERAGE, set_uniform, use_texture
from ..gl.meshes import CMD_DTYPE, GpuMesh, line_commands
from ..gl.programs import DEFAULT_INSTANCE_LAYOUT, VaoCache
from . import DrawCounts, Source

assert INSTANCE_DTYPE.itemsize == 16

INSTANCE_FORMAT = "3f 2u2/i"
INSTANCE_ATTRS = ("i_pos", "i_yaw_scale")
PACKED_FORMAT = "4u4/i"  # the same 16 bytes read as one uvec4 (layout "16p")
MAT4_FORMAT = "16f/i"


class CommandRing:
    """Indirect-command buffers written in turn (three in flight): a frame's new commands never
    overwrite a buffer the GPU may still be reading (the CPU-culled grass keeps one per view)."""

    SIZE = 3

    def __init__(self, ctx):
        self.ctx = ctx
        self.buffers: list = []
        self._next = 0

    def reserve(self, nbytes: int):
        """Room for ``nbytes`` of commands (reallocated, with headroom, only when it grows)."""
        if not self.buffers or self.buffers[0].size < nbytes:
            self.release()
            size = max(nbytes, CMD_DTYPE.itemsize) * 2
            self.buffers = [gpu_memory(self.ctx).track(self.ctx.buffer(reserve=size, dynamic=True), "grass")
                            for _ in range(self.SIZE)]

    def write(self, cmds: np.ndarray):
        """Write ``cmds`` into the next buffer of the ring and return it."""
        self._next = (self._next + 1) % self.SIZE
        buf = self.buffers[self._next]
        buf.write(cmds.tobytes())
        return buf

    def release(self):
        for b in self.buffers:
            b.release()
        self.buffers = []


def chunk_keys(pos: np.ndarray) -> np.ndarray:
    """Global chunk index (gy * 1024 + gx) of world positions (n, 3); grid of formats.md section 0."""
    gx, gy = map_steps(pos[:, 0].astype(np.float64), pos[:, 1].astype(np.float64), CHUNK_SIZE)
    return np.clip(gy, 0, 1023) * 1024 + np.clip(gx, 0, 1023)


def chunk_bounds_xy(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(n, 2) min and max world XY of global chunks."""
    gy, gx = keys // 1024, keys % 1024
    hi = np.stack(map_point(gx, gy, CHUNK_SIZE), axis=1)
    return hi - CHUNK_SIZE, hi


def instances_to_mat4(inst: np.ndarray) -> np.ndarray:
    """The grass reference's 64-byte layout for the same instances: column-major model matrices (n, 16) f4."""
    pos, yaw, s = unpack_instances(inst)
    c, si = np.cos(yaw) * s, np.sin(yaw) * s
    m = np.zeros((len(inst), 16), np.float32)
    m[:, 0], m[:, 1] = c, si  # column 0
    m[:, 4], m[:, 5] = -si, c  # column 1
    m[:, 10] = s  # column 2
    m[:, 12:15] = pos  # column 3: translation
    m[:, 15] = 1.0
    return m


@dataclass
class GrassGroupTable:
    keys: np.ndarray  # (g,) global chunk key of each group
    first: np.ndarray  # (g,) first instance
    count: np.ndarray  # (g,) instances
    z_lo: np.ndarray
    z_hi: np.ndarray
    # per group: x/y extent of the positions and the largest scale (GpuGrass's group records;
    # reduced here, off the GL thread, with the rest)
    xy_lo: np.ndarray = None  # (g, 2)
    xy_hi: np.ndarray = None  # (g, 2)
    s_max: np.ndarray = None  # (g,) largest scale (1.0 = unscaled)


def sort_with_extra(inst: np.ndarray, extra) -> tuple[np.ndarray, np.ndarray]:
    """``inst`` in chunk order as :func:`group_by_chunk` puts it, and ``extra`` (16 bytes per
    instance, the client look's) in the same order."""
    if extra is None:
        raise ValueError("this grass source draws the client look: give each batch its extra bytes")
    extra = np.asarray(extra)
    if len(extra) != len(inst) or extra.dtype.itemsize != 16:
        raise ValueError(f"extra: {len(extra)} records of {extra.dtype.itemsize} bytes for {len(inst)} instances")
    keys = chunk_keys(inst["pos"])
    if len(keys) > 1 and np.any(keys[1:] < keys[:-1]):
        order = np.argsort(keys, kind="stable")
        return inst[order], extra[order]
    return inst, extra


def interleave(inst: np.ndarray, extra: np.ndarray) -> np.ndarray:
    """(n, 32) bytes: each instance's 16 bytes, then its extra 16."""
    out = np.empty((len(inst), 32), np.uint8)
    out[:, :16] = np.ascontiguousarray(inst).view(np.uint8).reshape(-1, 16)
    out[:, 16:] = np.ascontiguousarray(extra).view(np.uint8).reshape(-1, 16)
    return out


def group_by_chunk(inst: np.ndarray) -> tuple[np.ndarray, GrassGroupTable]:
    """Stable-sort instances by chunk (no copy when already sorted) and tabulate the groups."""
    keys = chunk_keys(inst["pos"])
    if len(keys) > 1 and np.any(keys[1:] < keys[:-1]):
        order = np.argsort(keys, kind="stable")
        inst, keys = inst[order], keys[order]
    if not len(keys):
        e = np.zeros(0, np.int64)
        return inst, GrassGroupTable(e, e, e, np.zeros(0), np.zeros(0), np.zeros((0, 2)), np.zeros((0, 2)), np.zeros(0))
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    counts = np.diff(np.r_[starts, len(keys)])
    pos = inst["pos"]
    return inst, GrassGroupTable(keys[starts], starts, counts,
                                 np.minimum.reduceat(pos[:, 2], starts), np.maximum.reduceat(pos[:, 2], starts),
                                 np.minimum.reduceat(pos[:, :2], starts, axis=0),
                                 np.maximum.reduceat(pos[:, :2], starts, axis=0),
                                 np.maximum.reduceat(inst["scale"], starts).astype(np.float64) / 4096.0)


class GrassBatch:
    """One model's instances of one tile: a static instance buffer (made once) and its VAO."""

    def __init__(self, ctx, mesh: GpuMesh, instances: np.ndarray, *,
                 layout: str = DEFAULT_INSTANCE_LAYOUT, tile=None, extra: np.ndarray | None = None):
        inst = np.asarray(instances)
        if inst.dtype != INSTANCE_DTYPE:
            raise TypeError(f"instances must have INSTANCE_DTYPE, not {inst.dtype}")
        if extra is not None:
            if layout == "mat4":
                raise ValueError("the client look's extra bytes go with the bundle's 16-byte layouts, not mat4")
            inst, extra = sort_with_extra(inst, extra)
        inst, self.groups = group_by_chunk(inst)
        self.mesh, self.tile, self.layout = mesh, tile, layout
        self.count = len(inst)
        self.max_scale = float(inst["scale"].max()) / 4096.0 if self.count else 1.0
        # a few thousand positions kept on the CPU (start-up heuristics, never per frame)
        self.sample_xy = np.array(inst["pos"][:: max(1, self.count // 4096), :2], np.float64)
        data = instances_to_mat4(inst) if layout == "mat4" else inst if extra is None else interleave(inst, extra)
        self.buffer = gpu_memory(ctx).track(ctx.buffer(np.ascontiguousarray(data).tobytes()), "grass")  # the bundle bytes
        inst_fmt = {"16": (self.buffer, INSTANCE_FORMAT, *INSTANCE_ATTRS),
                    "16p": (self.buffer, PACKED_FORMAT, "i_packed"),
                    "mat4": (self.buffer, MAT4_FORMAT, "i_instance")}[layout]
        if extra is not None:  # the client look's 16 bytes after each instance's
            inst_fmt = (self.buffer, inst_fmt[1].replace("/i", " 4u4/i"), *inst_fmt[2:], "i_extra")
        self.vao, self.line_vao = (VaoCache(lambda prog, ibo=ibo: ctx.vertex_array(
            prog, [(mesh.grass_vbo, mesh.grass_format, "in_mesh"), inst_fmt],
            index_buffer=ibo, index_element_size=4)) for ibo in (mesh.ibo, mesh.lbo))  # lines views: edges

    def release(self):
        self.vao.release()
        self.line_vao.release()
        self.buffer.release()


class _ViewCull:
    """One view's culling state: the visible groups of its last frame and their commands."""

    def __init__(self, ctx):
        self.ring = CommandRing(ctx)
        self.sel = None  # visible groups (None: commands not written yet)
        self.lines = False  # its commands draw the edge lists (a lines view in this slot)
        self.buffer = None
        self.draws = []


class BatchedGrass:
    """What both instanced grass sources (:class:`GrassField`, ``GpuGrass``) count from their
    ``batches``: resident instances and the start-up sample of their positions."""

    batches: list

    @property
    def total_instances(self) -> int:
        return sum(b.count for b in self.batches)

    def sample_xy(self) -> np.ndarray:
        """(n, 2) world XY of a sample of the resident instances (start-up heuristics)."""
        pts = [b.sample_xy for b in self.batches if len(b.sample_xy)]
        return np.concatenate(pts) if pts else np.zeros((0, 2))


class GrassField(BatchedGrass, Source):
    """All resident grass, culled per chunk on the CPU (the fallback where compute shaders are
    missing, and the reference the GPU-driven path is tested against). ``add``/``remove_tile``
    batches as tiles stream; as a :class:`~wowgrass.render.sources.Source`, ``prepare`` culls for
    every view and ``draw`` issues one indirect multi-draw per (tile, model)."""

    name = "grass"

    def __init__(self, ctx, programs, settings: GrassSettings | None = None, *, indirect: bool | None = None,
                 layout: str | None = None, program_name: str = "grass", extra: bool = False):
        self.ctx, self.programs, self.program_name = ctx, programs, program_name
        self.extra = bool(extra)  # batches carry the client look's 16 bytes per instance
        self.layout = layout or DEFAULT_INSTANCE_LAYOUT  # the layout the program was built for (make_programs)
        self.settings = settings or GrassSettings()
        self.indirect = (ctx.version_code >= 430) if indirect is None else indirect
        self.batches: list[GrassBatch] = []
        self.buffers_created = 0  # instance buffers made so far (tests: once per batch, never per frame)
        self._views: dict[int, _ViewCull] = {}
        self._dirty = True
        self.cull = True

    # -- residency --
    def add(self, mesh: GpuMesh, instances: np.ndarray, *, tile=None, layout: str | None = None,
            extra: np.ndarray | None = None) -> GrassBatch | None:
        if len(instances) == 0:
            return None
        if self.extra and extra is None:
            raise ValueError("this grass source draws the client look: give each batch its extra bytes")
        layout = layout or self.layout
        batch = GrassBatch(self.ctx, mesh, instances, layout=layout, tile=tile, extra=extra if self.extra else None)
        gpu_memory(self.ctx).add_use(tile, "grass", batch.buffer.size)
        self.buffers_created += 1  # a batch makes exactly one instance buffer
        self.batches.append(batch)
        self._dirty = True
        return batch

    def remove_tile(self, tile):
        gpu_memory(self.ctx).use(tile, "grass", 0)
        keep = []
        for b in self.batches:
            if b.tile == tile:
                b.release()
            else:
                keep.append(b)
        self.batches = keep
        self._dirty = True

    def release(self):
        for b in self.batches:
            b.release()
        self.batches = []
        for v in self._views.values():
            v.ring.release()
        self._views.clear()

    def _rebuild(self):
        """Concatenate the group tables of all batches (on residency changes only).

        Batches are drawn grouped by model (one ``uModelZ`` upload and one texture bind per
        model and frame, not per tile) and their commands are laid out in that order."""
        order = {}
        bs = sorted(self.batches, key=lambda b: order.setdefault(id(b.mesh), len(order)))
        self._order = bs
        g = [b.groups for b in bs]
        n = np.array([len(t.keys) for t in g], np.int64)
        self._group_offsets = np.r_[0, np.cumsum(n)]
        if len(bs):
            keys = np.concatenate([t.keys for t in g])
            first = np.concatenate([t.first for t in g])
            count = np.concatenate([t.count for t in g])
            pad_z = np.repeat([b.mesh.z_max * b.max_scale + 0.5 for b in bs], n)
            pad_lo = np.repeat([min(b.mesh.z_min, 0.0) * b.max_scale - 0.5 for b in bs], n)
            pad_xy = np.repeat([b.mesh.radius_xy * b.max_scale + 0.5 for b in bs], n)
            z_lo = np.concatenate([t.z_lo for t in g]) + pad_lo
            z_hi = np.concatenate([t.z_hi for t in g]) + pad_z
        else:
            keys = first = count = np.zeros(0, np.int64)
            z_lo = z_hi = pad_xy = np.zeros(0)
        lo_xy, hi_xy = chunk_bounds_xy(keys)
        self._lo = np.column_stack([lo_xy - pad_xy[:, None], z_lo])
        self._hi = np.column_stack([hi_xy + pad_xy[:, None], z_hi])
        # culled per chunk (all models of a chunk in one box), then mapped back to the groups
        ukeys, self._chunk_of_group = np.unique(keys, return_inverse=True)
        clo = np.full((len(ukeys), 3), np.inf)
        chi = np.full((len(ukeys), 3), -np.inf)
        np.minimum.at(clo, self._chunk_of_group, self._lo)
        np.maximum.at(chi, self._chunk_of_group, self._hi)
        self._chunks = BoxSet(clo, chi)
        cmds = np.zeros(len(keys), CMD_DTYPE)
        cmds["count"] = np.repeat([b.mesh.index_count for b in bs], n) if len(bs) else 0
        cmds["instances"] = count
        cmds["base_instance"] = first
        self._all_cmds = cmds
        self._all_draws = [(b, None, 0, b.count) for b in bs]
        for v in self._views.values():
            v.sel = None
            if self.indirect and len(keys):
                v.ring.reserve(cmds.nbytes)
        self._dirty = False

    def visible_groups(self, camera_xy, planes=None) -> np.ndarray:
        """Bool per resident chunk group: within the draw distance (and the frustum, when given)."""
        if self._dirty:
            self._rebuild()
        chunks = np.zeros(len(self._chunks), bool)
        chunks[self._chunks.visible(planes, camera_xy, self.settings.draw_distance, dims=2)] = True
        return chunks[self._chunk_of_group]

    def _visible_draws(self, vc: _ViewCull, camera_xy, planes, lines: bool = False):
        """(batch, first command, commands, instances) per batch with visible chunks; the command
        buffer is rewritten only when the visible set changes (no per-instance work either way)."""
        sel = np.flatnonzero(self.visible_groups(camera_xy, planes))
        if vc.sel is not None and vc.lines == lines and np.array_equal(sel, vc.sel):
            return vc.draws
        vc.sel, vc.lines = sel, lines
        cmds = line_commands(self._all_cmds[sel]) if lines else self._all_cmds[sel]
        if len(cmds):
            vc.ring.reserve(self._all_cmds.nbytes)
            vc.buffer = vc.ring.write(cmds)
        # commands are ordered by batch: offsets by binary search
        starts = np.searchsorted(sel, self._group_offsets)
        inst = np.r_[0, np.cumsum(cmds["instances"], dtype=np.int64)][starts]
        vc.draws = [(b, int(starts[i]), int(starts[i + 1] - starts[i]), int(inst[i + 1] - inst[i]))
                    for i, b in enumerate(self._order) if starts[i + 1] > starts[i]]
        return vc.draws

    def prepare(self, frame):
        """Cull the resident chunks for every view of the frame (when indirect draws exist)."""
        if not self.batches:
            return
        if self._dirty:
            self._rebuild()
        if not (self.indirect and self.cull):
            return
        for view in frame.all_views:
            vc = self._views.get(view.slot)
            if vc is None:
                vc = self._views[view.slot] = _ViewCull(self.ctx)
            self._visible_draws(vc, view.camera.position[:2], view.planes(), view.fill == "lines")

    def warm_programs(self, pass_, view) -> list:
        return [(pass_.program(self.programs, self.program_name, view),
                 "coverage" if getattr(pass_, "alpha_to_coverage", False) else "opaque")]

    def draw(self, pass_, view) -> DrawCounts:
        """Draw every resident batch; per-chunk culled with indirect draws where available."""
        import moderngl

        out = DrawCounts()
        if not self.batches:
            return out
        if self._dirty:
            self._rebuild()
        indirect = self.indirect and self.cull
        lines = view.fill == "lines"  # the edge lists, as a line-list pipeline
        vc = self._views.get(view.slot) if indirect else None
        if indirect and vc is None:  # a view prepare did not see
            vc = self._views[view.slot] = _ViewCull(self.ctx)
            self._visible_draws(vc, view.camera.position[:2], view.planes(), lines)
        draws = vc.draws if indirect else self._all_draws
        prog = pass_.program(self.programs, self.program_name, view)
        a2c = getattr(pass_, "alpha_to_coverage", False)
        if a2c:
            self.ctx.enable_direct(ALPHA_TO_COVERAGE)
        mesh = None
        for b, k0, k, n in draws:
            if b.mesh is not mesh:  # one uModelZ and texture per model (batches are grouped by model)
                mesh = b.mesh
                set_uniform(prog, "uModelZ", (mesh.z_min, mesh.z_max))
                use_texture(self.ctx, mesh.texture, 0)
            vao = (b.line_vao if lines else b.vao)(prog)
            mode = moderngl.LINES if lines else moderngl.TRIANGLES
            if indirect:
                vao.render_indirect(vc.buffer, mode=mode, count=k, first=k0)
            else:
                vao.render(mode, instances=n)
            out.draw_calls += 1
            out.instances += n
            out.triangles += n * b.mesh.triangles
        if a2c:
            self.ctx.disable_direct(ALPHA_TO_COVERAGE)
        return out
