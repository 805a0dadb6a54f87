"""The procedural meadow (``wowgrass view --procedural``): the grass lesson's scene on the GPU.

Terrain: an fBm heightmap (:mod:`.heightfield`) uploaded once as an R32F texture; square tiles
drawn from a few plane meshes of different resolutions, each with a triangle and a line index
buffer; a compute pass picks each tile's mesh by its distance to the camera and culls it against
the view, and the vertex shader geomorphs toward the coarser mesh over the last 20% of each band
(``shaders/geomorph.glsl``), so switching meshes neither pops nor cracks.

Blades: segmented strips (:func:`.meshes.blade_strip`) at one segment count per LOD ring. A
compute pass generates the blades around the camera every frame from the Wang hash of each grid
cell (:mod:`.blades` has the CPU twin), culls them (distance, ring density, slope, frustum) and
appends them to per-ring instance lists; a second tiny pass turns the counts into indirect draw
commands. The CPU uploads nothing per frame but a few uniforms. ``cpu_instances`` is the lesson's
way instead: place on the CPU and upload the instance buffer every frame (the measured
alternative).

:class:`Meadow` holds the GPU resources; its two renderer sources, ``meadow.terrain`` and
``meadow.grass`` (:mod:`.sources`), draw for any pass and view: the shadow pass's sun view (the
near rings only), filled views, and ``"lines"`` views through the line index buffers, with the
same blade wind in all of them (``shaders/blade_wind.glsl``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .blades import INSTANCE_ATTRS, INSTANCE_FLOATS, INSTANCE_FORMAT, BladeSettings, place_blades
from ..constants import GrassSettings
from ..gl.memory import gpu_memory
from ..gl.state import bind_storage, disable, enable, set_uniform, use_texture
from .heightfield import Heightfield, TerrainSettings
from ..gl.meshes import CMD_DTYPE, blade_strip, line_indices, plane_grid
from ..gl.programs import HEIGHT_UNIT, ProgramSet, VaoCache, load_program, read_by
from ..gl.readback import read_buffer
from . import DrawCounts, Source
from .terrain import TerrainLod


def _buffer(ctx, *args, **kw):
    """A buffer counted as the meadow's (gl.memory)."""
    return gpu_memory(ctx).track(ctx.buffer(*args, **kw), "meadow")


@dataclass
class MeadowSettings:
    terrain: TerrainSettings = field(default_factory=TerrainSettings)
    tile_size: float = 32.0  # world units per terrain tile
    lod_cells: tuple = (32, 16, 8, 4)  # quads per tile side of each LOD mesh (each half the one before)
    # the far end of each LOD band but the last; each band at least 0.8 x its width plus a tile's
    # diagonal from the next one's morph zone (what keeps neighbouring tiles crack-free)
    lod_band_ends: tuple = (64.0, 128.0, 256.0)
    blades: BladeSettings = field(default_factory=BladeSettings)
    wind_speed: float = 1.6  # rad / s
    wind_strength: float = 0.22  # world units at the tip
    wind_dir: tuple = (0.8, 0.6)
    shadow_reach: float = 45.0  # world units of shadowed view (the near grass)
    shadow_size: int = 2048
    geomorph: bool = True  # off: tiles switch LOD meshes abruptly (to see what the morph hides)

    def check(self):
        t = self.terrain
        per = t.world_size / (t.samples - 1)
        for cells in self.lod_cells:
            step = self.tile_size / cells
            if step < per * 0.999 or abs(step / per - round(step / per)) > 1e-6:
                raise ValueError(f"LOD grid step {step} must be a whole number of heightmap texels ({per})")
        if len(self.lod_band_ends) != len(self.lod_cells) - 1:
            raise ValueError("lod_band_ends needs one value fewer than lod_cells")
        diag = self.tile_size * math.sqrt(2.0)
        ends = (0.0, *self.lod_band_ends)
        for i in range(1, len(ends) - 1):
            if ends[i] + diag > ends[i + 1] - 0.2 * (ends[i + 1] - ends[i]):
                raise ValueError(f"LOD band {i} ({ends[i]}..{ends[i + 1]}) is too narrow for {self.tile_size} "
                                 "unit tiles: neighbouring tiles could crack")


_PLANS_KEPT = 16  # (pass, fill) draw plans a source keeps (passes are made once; a bound all the same)


class Meadow:
    """The meadow's GPU resources and its two sources: ``terrain`` (the tiles) and ``grass`` (the blades).

    Also what a viewer asks of a scene: ``sources``, ``ground_height``, ``update`` (nothing
    streams), ``tiles`` and ``version``."""

    version = 0
    tiles: tuple = ()
    terrain_reach = 1e9  # the whole meadow is resident: fog, not residency, bounds the view

    def __init__(self, ctx, settings: MeadowSettings | None = None, seed: int = 1, *,
                 cpu_instances: bool = False, heightfield: Heightfield | None = None,
                 fixed_blades: np.ndarray | None = None, program_cache: dict | None = None):
        import moderngl

        if ctx.version_code < 430:
            from wowgrass.errors import WowgrassError

            raise WowgrassError(f"the procedural meadow needs OpenGL 4.3 (compute shaders); this context "
                                f"is {ctx.version_code // 100}.{ctx.version_code % 100 // 10}")
        self.ctx, self.seed = ctx, int(seed)
        self.settings = s = settings or MeadowSettings()
        s.check()
        self.cpu_instances = bool(cpu_instances or fixed_blades is not None)
        self.fixed_blades = (None if fixed_blades is None
                             else np.asarray(fixed_blades, np.float32).reshape(-1, INSTANCE_FLOATS))
        self.field = heightfield or Heightfield.generate(s.terrain, self.seed)
        f = self.field
        self.height_texture = gpu_memory(ctx).track(ctx.texture((f.n, f.n), 1, f.heights.tobytes(), dtype="f4"), "meadow")
        self.height_texture.filter = (moderngl.NEAREST, moderngl.NEAREST)
        self.height_texture.repeat_x = self.height_texture.repeat_y = False
        self.programs = ProgramSet(ctx, {"meadow_terrain.glsl": {}, "blade.glsl": {}}, program_cache)
        self.tiles_cs = load_program(ctx, "meadow_tiles.glsl", cache=program_cache)
        self.blades_cs = load_program(ctx, "meadow_blades.glsl", cache=program_cache)
        self.commands_cs = load_program(ctx, "meadow_commands.glsl", cache=program_cache)
        self.height_info = (f.texel, float(f.n))
        for p in (self.tiles_cs, self.blades_cs):
            set_uniform(p, "uHeightInfo", self.height_info)
        self._planes = (None, b"")  # the culling view's planes and their float32 bytes
        self._margin = (None, 0.0)  # sun direction -> shadow culling margin
        self.terrain = MeadowTerrain(self)
        self.grass = MeadowBlades(self)
        self.sources = [self.terrain, self.grass]

    def compute_camera(self, frame):
        """The camera the frame's culling is for: the first camera view's (a split screen's two
        halves share it)."""
        view = frame.views[0]
        view.view_proj()  # the camera takes its view's aspect
        return view

    def use_heights(self, program):
        use_texture(self.ctx, self.height_texture, HEIGHT_UNIT)
        set_uniform(program, "uHeightInfo", self.height_info)

    def planes_bytes(self, view) -> bytes:
        """``view``'s frustum planes as the compute passes take them (packed once per camera)."""
        planes = view.planes()
        if self._planes[0] is not planes:
            self._planes = (planes, planes.astype("f4").tobytes())
        return self._planes[1]

    def _commands(self, counters, commands, slots, n):
        """Counters -> indirect commands (and counters zeroed), on the GPU."""
        cs = self.commands_cs
        set_uniform(cs, "uSlots", n)
        bind_storage(self.ctx, (counters, commands, slots), first=1)
        cs.run((n + 31) // 32)

    def shadow_margin(self, sun_dir) -> float:
        """How far outside the view a blade can still cast a shadow into it (culling margin)."""
        key = tuple(float(v) for v in sun_dir)
        if self._margin[0] != key:
            elev = max(key[2] / max(float(np.linalg.norm(sun_dir)), 1e-9), 0.2)
            self._margin = (key, self.settings.blades.height[1] / math.tan(math.asin(elev)) + 1.0)
        return self._margin[1]

    def drawn_counts(self) -> dict:
        """Tiles per LOD and blades per ring of the last frame, read back from the GPU's draw
        commands (a synchronising read: reports and tests, never the frame loop)."""
        s = self.settings
        tc = np.frombuffer(read_buffer(self.ctx, self.terrain.commands), CMD_DTYPE)[: len(s.lod_cells)]
        bc = np.frombuffer(read_buffer(self.ctx, self.grass.commands), CMD_DTYPE)[: len(s.blades.rings)]
        tiles = [int(v) for v in tc["instances"]]
        blades = [int(v) for v in bc["instances"]]
        tris = sum(n * m["triangles"] for n, m in zip(tiles, self.terrain.meshes))
        tris += sum(n * m["triangles"] for n, m in zip(blades, self.grass.meshes))
        return {"tiles_per_lod": tiles, "blades_per_ring": blades, "blades": sum(blades), "triangles": tris}

    @property
    def upload_bytes(self) -> int:
        """Instance and command bytes the CPU wrote in the last frame (0 with GPU generation)."""
        return self.grass.upload_bytes

    @property
    def tiles_per_side(self) -> int:
        return self.terrain.tiles_per_side

    def update(self, camera_pos, *, block: bool = False) -> int:
        """Nothing streams: the whole meadow is resident (the window loop calls this per frame)."""
        return 0

    def ground_height(self, x: float, y: float) -> float:
        return float(self.field.sample(x, y))

    def release(self):
        for src in self.sources:
            src.release()
        self.height_texture.release()


class _Fill:
    """What ``Pass.program`` reads of a view: its fill."""

    def __init__(self, fill):
        self.fill = fill


_FILL_VIEWS = {False: _Fill("filled"), True: _Fill("lines")}


def _mesh_vaos(ctx, vbo, vbo_format, vbo_attrs, instances, inst_format, inst_attrs, ibo, lbo):
    """Vertex arrays of one mesh per program variant: triangles, and lines for WIREFRAME programs."""
    def make(index_buffer):
        # a variant may not read every attribute (the shadow pass: no colour): read_by pads those
        return VaoCache(lambda prog: ctx.vertex_array(
            prog, [c for c in ((vbo, *read_by(prog, vbo_format, *vbo_attrs)),
                               (instances, *read_by(prog, inst_format, *inst_attrs))) if len(c) > 1],
            index_buffer=index_buffer, index_element_size=4))
    return make(ibo), make(lbo)


def _release_meshes(meshes):
    """The GL objects of a source's meshes (``_mesh_vaos``' VAO caches and their buffers)."""
    for m in meshes:
        m["tri_vaos"].release()
        m["line_vaos"].release()
        for b in m["buffers"]:
            b.release()


def _draw_plan(plans: dict, pass_, lines: bool, programs, shader: str, meshes, n_commands: int):
    """The program and the (vertex array, mode, first command) of each mesh's draw for a pass and
    fill, kept in ``plans``; a lines view's commands follow the ``n_commands`` triangle ones."""
    import moderngl

    plan = plans.get((pass_, lines))
    if plan is None:
        if len(plans) >= _PLANS_KEPT:
            plans.clear()
        prog = pass_.program(programs, shader, _FILL_VIEWS[lines])
        mode = moderngl.LINES if lines else moderngl.TRIANGLES
        plan = plans[(pass_, lines)] = (prog, [
            ((m["line_vaos"] if lines else m["tri_vaos"])(prog), mode, n_commands + k if lines else k)
            for k, m in enumerate(meshes)])
    return plan


class MeadowTerrain(Source):
    """The heightmap's tiles: one instanced indirect draw per LOD mesh, tiles picked on the GPU."""

    name = "terrain"

    def __init__(self, meadow: Meadow):
        ctx, s = meadow.ctx, meadow.settings
        self.meadow, self.ctx = meadow, ctx
        self.lod = TerrainLod(morph=s.geomorph)  # the viewer's L key sets .debug (LOD colours), as for ADT terrain
        self.tiles_per_side = int(round(meadow.field.world_size / s.tile_size))
        n = self.tiles_per_side ** 2
        self.lists = _buffer(ctx, reserve=8 * n * len(s.lod_cells))
        self.tile_z = _buffer(ctx, meadow.field.tile_z_ranges(s.tile_size).reshape(-1, 2).tobytes())
        self.counters = _buffer(ctx, reserve=4 * len(s.lod_cells))
        self.counters.clear()
        self.commands = _buffer(ctx, reserve=CMD_DTYPE.itemsize * 2 * len(s.lod_cells))
        self.commands.clear()
        self.meshes, slots = [], []
        for lod, cells in enumerate(s.lod_cells):
            pos, tris = plane_grid(cells, s.tile_size)
            lines = line_indices(tris)
            vbo, ibo, lbo = _buffer(ctx, pos.tobytes()), _buffer(ctx, tris.tobytes()), _buffer(ctx, lines.tobytes())
            tri_vaos, line_vaos = _mesh_vaos(ctx, vbo, "2f", ("in_grid",), self.lists, "2f/i", ("i_tile",), ibo, lbo)
            self.meshes.append({"step": s.tile_size / cells, "buffers": (vbo, ibo, lbo), "tri_vaos": tri_vaos,
                                "line_vaos": line_vaos, "triangles": len(tris) // 3})
            slots.append((len(tris), len(lines), lod * n, n))
        self.slots = _buffer(ctx, np.array(slots, np.uint32).tobytes())
        cs = meadow.tiles_cs
        ends = list(s.lod_band_ends) + [1e9] * (4 - len(s.lod_band_ends))
        set_uniform(cs, "uBandEnds", tuple(ends[:4]))
        set_uniform(cs, "uLodCount", len(s.lod_cells))
        set_uniform(cs, "uTiles", self.tiles_per_side)
        set_uniform(cs, "uTileSize", s.tile_size)
        self._plans = {}
        self._lod_uniforms = (None, ())

    def band(self, lod: int) -> tuple[float, float]:
        """The distance band of LOD ``lod`` as the vertex shader's morph sees it (no geomorphing:
        a band that never ends)."""
        ends = (0.0, *self.meadow.settings.lod_band_ends, 1e9)
        return ends[lod], (ends[lod + 1] if self.lod.morph else 1e9)

    def prepare(self, frame):
        """Pick each tile's LOD mesh and cull the tiles against the camera view (widened: hills
        just outside it still shade into it and cast into the shadow map)."""
        import moderngl

        m = self.meadow
        view = m.compute_camera(frame)
        cs = m.tiles_cs
        set_uniform(cs, "uCameraPos", tuple(view.camera.position.tolist()))
        set_uniform(cs, "uPlanes", m.planes_bytes(view))
        set_uniform(cs, "uCullMargin", 30.0)
        bind_storage(self.ctx, (self.lists, self.counters, None, None, self.tile_z))
        cs.run((self.tiles_per_side ** 2 + 63) // 64)
        self.ctx.memory_barrier(moderngl.SHADER_STORAGE_BARRIER_BIT)
        m._commands(self.counters, self.commands, self.slots, len(self.meshes))
        self.ctx.memory_barrier(moderngl.ALL_BARRIER_BITS)

    def lod_uniforms(self) -> tuple:
        """Each LOD mesh's ``uLod`` (grid step, band start, band end, index) as bytes."""
        if self._lod_uniforms[0] != self.lod.morph:
            self._lod_uniforms = (self.lod.morph, tuple(
                np.array((m["step"], *self.band(lod), lod), np.float32).tobytes()
                for lod, m in enumerate(self.meshes)))
        return self._lod_uniforms[1]

    def _plan(self, pass_, lines: bool):
        """Each LOD's draw for a pass and fill (looked up once, not per frame)."""
        return _draw_plan(self._plans, pass_, lines, self.meadow.programs, "meadow_terrain.glsl",
                          self.meshes, len(self.meshes))

    def draw(self, pass_, view) -> DrawCounts:
        import moderngl

        lines = view.fill == "lines"
        prog, draws = self._plan(pass_, lines)
        self.meadow.use_heights(prog)
        set_uniform(prog, "uLodColours", 1 if self.lod.debug else 0)
        culled = pass_.colour and not lines
        if culled:
            enable(self.ctx, moderngl.CULL_FACE)
        for lod_uniform, (vao, mode, first) in zip(self.lod_uniforms(), draws):
            set_uniform(prog, "uLod", lod_uniform)
            vao.render_indirect(self.commands, mode=mode, count=1, first=first)
        if culled:
            disable(self.ctx, moderngl.CULL_FACE)
        return DrawCounts(draw_calls=len(draws))

    def release(self):
        _release_meshes(self.meshes)
        for b in (self.lists, self.tile_z, self.counters, self.commands, self.slots):
            b.release()


class MeadowBlades(Source):
    """The blades: generated (or, with ``cpu_instances``, uploaded) per frame into per-ring
    instance lists, one indirect draw per ring (fewer segments farther out)."""

    name = "grass"

    def __init__(self, meadow: Meadow):
        ctx, s = meadow.ctx, meadow.settings
        b = s.blades
        self.meadow, self.ctx = meadow, ctx
        self.settings = GrassSettings()  # the frame block's grass columns (the WoW grass's; unused here)
        self.cull = True
        rings = b.rings
        if len(rings) > 8:
            raise ValueError("at most 8 LOD rings")
        caps = b.capacities()
        if meadow.fixed_blades is not None:
            caps = np.full(len(rings), max(len(meadow.fixed_blades), 1), np.int64)
        self.caps, self.bases = caps, np.r_[0, np.cumsum(caps)[:-1]]
        self.instances = _buffer(ctx, reserve=int(caps.sum()) * INSTANCE_FLOATS * 4)
        self.counters = _buffer(ctx, reserve=4 * len(rings))
        self.counters.clear()
        self.commands = _buffer(ctx, reserve=CMD_DTYPE.itemsize * 2 * len(rings))
        self.commands.clear()
        self.meshes, slots = [], []
        for k, ring in enumerate(rings):
            verts, tris = blade_strip(ring.segments, b.tip_taper)
            lines = line_indices(tris)
            vbo, ibo, lbo = _buffer(ctx, verts.tobytes()), _buffer(ctx, tris.tobytes()), _buffer(ctx, lines.tobytes())
            tri_vaos, line_vaos = _mesh_vaos(ctx, vbo, "3f", ("in_blade",), self.instances, INSTANCE_FORMAT,
                                             INSTANCE_ATTRS, ibo, lbo)
            self.meshes.append({"buffers": (vbo, ibo, lbo), "tri_vaos": tri_vaos, "line_vaos": line_vaos,
                                "triangles": len(tris) // 3, "indices": len(tris), "line_indices": len(lines)})
            slots.append((len(tris), len(lines), int(self.bases[k]), int(caps[k])))
        self.slots = _buffer(ctx, np.array(slots, np.uint32).tobytes())
        cs = meadow.blades_cs
        table = b.ring_table()
        set_uniform(cs, "uRingCount", len(rings))
        set_uniform(cs, "uRings", np.vstack([table, np.zeros((8 - len(rings), 4), np.float32)]).tobytes())
        set_uniform(cs, "uRingSlots", np.array([[self.bases[k], caps[k]] if k < len(rings) else [0, 0]
                                         for k in range(8)], np.uint32).tobytes())
        set_uniform(cs, "uSpacing", b.spacing)
        set_uniform(cs, "uSeed", meadow.seed & 0xFFFFFFFF)
        set_uniform(cs, "uMinNormalZ", b.min_normal_z)
        set_uniform(cs, "uBladeShape", (b.height[0], b.height[1] - b.height[0], b.width[0], b.width[1] - b.width[0]))
        self._plans = {}
        # the shadow pass draws the rings that start within the shadow's reach
        inner = np.r_[0.0, [r.outer for r in rings[:-1]]]
        self.shadow_rings = int(np.sum(inner < s.shadow_reach))
        wd = np.asarray(s.wind_dir, np.float64)
        wd = wd / max(float(np.linalg.norm(wd)), 1e-9)
        self.wind = (s.wind_speed, s.wind_strength, float(wd[0]), float(wd[1]))
        self.upload_bytes = 0

    def prepare(self, frame):
        import moderngl

        m = self.meadow
        view = m.compute_camera(frame)
        eye = tuple(view.camera.position.tolist())
        margin = m.shadow_margin(frame.sun_dir) if frame.shadow_map is not None else 1.0
        self.upload_bytes = 0
        if m.cpu_instances:
            self._upload(eye, view.planes(), margin)
            return
        (x0, y0), (nx, ny) = m.settings.blades.cell_window(eye, m.field.world_size)
        if nx and ny:
            cs = m.blades_cs
            set_uniform(cs, "uCameraPos", eye)
            set_uniform(cs, "uPlanes", m.planes_bytes(view))
            set_uniform(cs, "uCullMargin", margin)
            set_uniform(cs, "uCellOrigin", (x0, y0))
            set_uniform(cs, "uCellCount", (nx, ny))
            use_texture(self.ctx, m.height_texture, HEIGHT_UNIT)
            bind_storage(self.ctx, (self.instances, self.counters))
            cs.run((nx + 15) // 16, (ny + 15) // 16)
            self.ctx.memory_barrier(moderngl.SHADER_STORAGE_BARRIER_BIT)
        m._commands(self.counters, self.commands, self.slots, len(self.meshes))
        self.ctx.memory_barrier(moderngl.ALL_BARRIER_BITS)

    def _upload(self, eye, planes, margin):
        """The lesson's way: blades placed on the CPU and uploaded with their draw commands."""
        m = self.meadow
        if m.fixed_blades is not None:
            per_ring = [m.fixed_blades] + [m.fixed_blades[:0]] * (len(self.meshes) - 1)
        else:
            per_ring = place_blades(m.field, m.settings.blades, m.seed, eye, planes, margin)
        n = len(per_ring)
        cmds = np.zeros(2 * n, CMD_DTYPE)
        for k, inst in enumerate(per_ring):
            inst = inst[: int(self.caps[k])]
            if len(inst):
                self.instances.write(inst.tobytes(), offset=int(self.bases[k]) * INSTANCE_FLOATS * 4)
                self.upload_bytes += inst.nbytes
            mesh = self.meshes[k]
            cmds[k] = (mesh["indices"], len(inst), 0, 0, int(self.bases[k]))
            cmds[n + k] = (mesh["line_indices"], len(inst), 0, 0, int(self.bases[k]))
        self.commands.write(cmds.tobytes())
        self.upload_bytes += cmds.nbytes

    def _plan(self, pass_, lines: bool):
        """Each ring's draw for a pass and fill (the shadow pass: the near rings only)."""
        n = len(self.meshes)
        return _draw_plan(self._plans, pass_, lines, self.meadow.programs, "blade.glsl",
                          self.meshes[: n if pass_.colour else self.shadow_rings], n)

    def draw(self, pass_, view) -> DrawCounts:
        prog, draws = self._plan(pass_, view.fill == "lines")
        set_uniform(prog, "uBladeWind", self.wind)
        for vao, mode, first in draws:
            vao.render_indirect(self.commands, mode=mode, count=1, first=first)
        return DrawCounts(draw_calls=len(draws))

    def release(self):
        _release_meshes(self.meshes)
        for b in (self.instances, self.counters, self.commands, self.slots):
            b.release()
