"""The camera-grid grass source (``view --grass grid``): resident control and height textures, one
draw per grass model over the camera-centred grid.

Per tile, :class:`~wowgrass.grass.grid_tiles.GridTile` (control texture + height atlas, built from the tile's
bundle and cached beside it) goes into one layer of two texture arrays; a 64 x 64 tile table maps
a world tile to its layer, and a model table texture holds each model's z range and bounding
sphere. Two ways to draw (``draw_mode``, docs/grid.md):

* ``"compact"`` (the default on GL 4.3): one compute dispatch over the grid's slots x blades x
  views (``grass_grid_cull.glsl``) makes the slot decisions, tests the blade's bounding sphere
  against each view's frustum and appends the survivors to the model's region of a compacted
  buffer, writing the instance counts of the view's indirect commands (two sets used in turn,
  each dispatch zeroing the other: no reset pass); then one ``render_indirect`` per model and
  view. The vertex stage runs only for drawn blades.
* ``"full"`` (the reference's literal path; the fallback without compute): one draw of
  ``GRID_SIDE**2 * layers`` instances per model with no instance buffer, slots without a blade of
  that model dropped in the vertex stage.

Both share the slot decisions through ``grid_slot.glsl``. A frame's CPU work is one dispatch,
one barrier and one draw per model and view, from plans kept until the tiles under the grid, the
views or the residency change: it does not grow with the resident set, and the CPU reads nothing
back. The GPU work is fixed by the grid and the layer counts, not by residency either.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from wowgrass.game.coords import tile_of
from wowgrass.grass.grid_tiles import ATLAS_SIDE, CONTROL_SIDE, GRID_HALF, GRID_SIDE, SLOT_SPACING, GridTile

from ..constants import GRID_DEFINES, GRID_STATS_SIZE as STATS_SIZE, GrassSettings
from ..gl.memory import gpu_memory
from ..gl import native
from ..gl.state import ALPHA_TO_COVERAGE, DRAW_BARRIER, bind_storage, set_uniform, use_texture
from ..gl.meshes import CMD_DTYPE, GpuMesh
from ..gl.programs import MODEL_UNIT, VaoCache
from ..gl.readback import Readback
from . import DrawCounts, Source

SLOTS = GRID_SIDE * GRID_SIDE
GRID_DRAW_MODES = ("compact", "full")
MODEL_ROW = 256  # models per row of the model table texture (grid_slot.glsl's gridModelInfo)
_FILL_VIEWS = {False: None, True: SimpleNamespace(fill="lines")}  # what pass_.program reads of a view
_PLANS_KEPT = 16
CAPTURE_VARYINGS = ("t_root", "t_cell", "t_vertex")
_REACH = (GRID_HALF + 1) * SLOT_SPACING  # the grid's half extent around the camera


def tile_range(x: float, y: float) -> tuple[int, int, int, int]:
    """The columns and rows (c0, c1, r0, r1) of the tiles under a grid centred at world (x, y)."""
    c0, r0 = tile_of(x + _REACH, y + _REACH)
    c1, r1 = tile_of(x - _REACH, y - _REACH)
    return c0, c1, r0, r1


class GridGrass(Source):
    """All resident grid tiles; ``add_tile``/``remove_tile`` as tiles stream; a
    :class:`~wowgrass.render.sources.Source` drawing one draw per model and view.

    ``draw_mode``: ``"compact"`` (a compute pass per view keeps the drawn blades, then indirect
    draws; needs GL 4.3, else it falls back to ``"full"``) or ``"full"`` (the reference's literal
    path: every slot x layer through the vertex stage)."""

    name = "grass"  # the grass toggle and counts, whichever path draws it

    def __init__(self, ctx, programs, settings: GrassSettings | None = None, *, capacity: int = 9,
                 draw_mode: str = "compact"):
        if draw_mode not in GRID_DRAW_MODES:
            raise ValueError(f"draw_mode must be one of {GRID_DRAW_MODES}, not {draw_mode!r}")
        self.ctx, self.programs = ctx, programs
        self._readback = Readback(ctx)  # statistics and tests
        self.draw_mode = draw_mode if ctx.version_code >= 430 else "full"
        self.settings = settings or GrassSettings()
        self.cull = True  # the viewer's C toggle; the grid is its own cull
        self.tiles: dict = {}  # key -> (layer, GridTile with global model indices, {model: layers}, blades a slot)
        self.models: list[str] = []  # global model table (the uploaded control's indices)
        self._index: dict[str, int] = {}
        self.meshes: dict[int, GpuMesh] = {}
        self._table = np.full((64, 64, 4), -1, np.int32)
        self._table_tex = gpu_memory(ctx).track(ctx.texture((64, 64), 4, self._table.tobytes(), dtype="i4"), "grass")
        self._model_tex = None
        self._write_model_table()
        self._capacity = 0
        self._control = self._heights = None
        self._grow(capacity)
        self.version = 0
        self._needs: dict = {}  # tile range -> {model: layers} (cleared when residency changes)
        self._capture = None  # (1 x 1 framebuffer, frame uniforms) of capture()
        self._capture_progs: dict = {}
        self._samples: dict = {}
        # compact mode: per-view commands and compacted regions, laid out for the tiles under the
        # frame's grids (_relayout); draw plans per (pass, fill), dropped with each layout
        self._layout_key = None
        self._layout: dict = {}
        self._plans: dict = {}
        self.regions = self.commands = self.visible = self.stats = None
        self.collect_stats = False  # the compaction's counters (--stats, --json): read_stats
        self._submitted: dict = {}  # full mode: view slot -> the last frame's DrawCounts (read_stats)
        self._cmd_per_view = self._visible_per_view = self._n_views = 0
        if self.draw_mode == "compact":
            # one program per command set (which set a frame uses costs no uniform write)
            self._culls = tuple(programs.variant("grass_grid_cull", {"CULL_SET": k}) for k in (0, 1))
            self._set = 1  # the set the last dispatch used (the first frame uses set 0)

    # -- residency --
    def _grow(self, capacity: int):
        import moderngl

        for t in (self._control, self._heights):
            if t is not None:
                t.release()
        self._capacity = capacity
        self._control = gpu_memory(self.ctx).track(self.ctx.texture_array((CONTROL_SIDE, CONTROL_SIDE, capacity), 4, dtype="u4"), "grass")
        self._heights = gpu_memory(self.ctx).track(self.ctx.texture_array((ATLAS_SIDE, ATLAS_SIDE, capacity), 1, dtype="f4"), "grass")
        for t in (self._control, self._heights, self._table_tex):
            t.filter = (moderngl.NEAREST, moderngl.NEAREST)
        for layer, tile, *_ in self.tiles.values():
            self._upload(layer, tile)

    def _upload(self, layer: int, tile: GridTile):
        a, b = tile.control.shape[:2]
        self._control.write(np.ascontiguousarray(tile.control, "<u4").tobytes(), viewport=(0, 0, layer, b, a, 1))
        self._heights.write(np.ascontiguousarray(tile.heights, "<f4").tobytes(),
                            viewport=(0, 0, layer, ATLAS_SIDE, ATLAS_SIDE, 1))

    def _model_id(self, path: str) -> int:
        idx = self._index.get(path)
        if idx is None:
            if len(self.models) >= 0xFFFF:
                raise ValueError("the grid's model table is full (65535 models)")
            idx = self._index[path] = len(self.models)
            self.models.append(path)
        return idx

    def _write_model_table(self):
        """The model table texture (z range, bounding sphere per model; zeros for a missing mesh)."""
        import moderngl

        n = len(self.models)
        rows = max(1, -(-n // MODEL_ROW))
        info = np.zeros((rows * MODEL_ROW, 4), np.float32)
        for m, mesh in self.meshes.items():
            info[m] = (mesh.z_min, mesh.z_max, mesh.bound_z, mesh.bound_radius)
        if self._model_tex is None or self._model_tex.size[1] != rows:
            if self._model_tex is not None:
                self._model_tex.release()
            self._model_tex = gpu_memory(self.ctx).track(self.ctx.texture((MODEL_ROW, rows), 4, dtype="f4"), "grass")
            self._model_tex.filter = (moderngl.NEAREST, moderngl.NEAREST)
        self._model_tex.write(info.tobytes())

    def add_tile(self, key, tile: GridTile, meshes: dict, sample_xy=None):
        """Make ``tile`` resident; ``meshes``: model path -> GpuMesh (None: missing, not drawn);
        ``sample_xy``: a few grass positions of the tile (:meth:`sample_xy`)."""
        if key in self.tiles:
            self.remove_tile(key)
        used = {entry[0] for entry in self.tiles.values()}
        layer = next(i for i in range(self._capacity + 1) if i not in used)
        if layer >= self._capacity:
            self._grow(self._capacity * 2)
        remap = np.array([self._model_id(m) for m in tile.models] or [0], np.uint32)
        c = tile.control
        control = np.where(c >> 16 > 0, remap[c & 0xFFFF] | (c & 0xFFFF0000), 0).astype("<u4")
        glob = GridTile(tile.col, tile.row, tile.slot_i0, tile.slot_j0, control, tile.heights, self.models)
        layers = {int(remap[k]): int(n) for k, n in enumerate(tile.model_layers()) if n > 0}
        new_mesh = False
        for path in tile.models:
            mesh, idx = meshes.get(path), self._index[path]
            if mesh is not None and idx not in self.meshes:
                self.meshes[idx] = mesh
                new_mesh = True
        if new_mesh:
            self._write_model_table()
        # the grid's layers of each model, and the most blades of any slot (the compaction's dispatch height)
        self.tiles[key] = (layer, glob, layers, int(tile.counts.sum(axis=-1).max(initial=0)))
        self._samples[key] = np.zeros((0, 2)) if sample_xy is None else np.asarray(sample_xy, np.float64)
        self._upload(layer, glob)
        self._set_table(tile.col, tile.row, (layer, tile.slot_i0, tile.slot_j0, 0))
        gpu_memory(self.ctx).use(key, "grass", CONTROL_SIDE * CONTROL_SIDE * 16 + ATLAS_SIDE * ATLAS_SIDE * 4)

    def _set_table(self, col: int, row: int, value):
        self._table[row, col] = value
        self._table_tex.write(self._table[row, col].tobytes(), viewport=(col, row, 1, 1))
        self.version += 1
        self._needs.clear()

    def remove_tile(self, key):
        entry = self.tiles.pop(key, None)
        self._samples.pop(key, None)
        gpu_memory(self.ctx).use(key, "grass", 0)
        if entry is not None:
            self._set_table(entry[1].col, entry[1].row, (-1, -1, -1, -1))

    def release(self):
        self._drop_plans()
        for t in (self._control, self._heights, self._table_tex, self._model_tex, self.regions, self.commands,
                  self.visible, self.stats, *(self._capture or ()), *self._capture_progs.values()):
            if t is not None:
                t.release()
        self.regions = self.commands = self.visible = self.stats = self._model_tex = None
        self._readback.release()
        self._capture, self._capture_progs = None, {}
        self.tiles.clear()

    @property
    def total_instances(self) -> int:
        """Blades the resident control textures hold (what the grid draws where it stands)."""
        return sum(int(t.counts.sum()) for _, t, *_ in self.tiles.values())

    def sample_xy(self) -> np.ndarray:
        """(n, 2) world XY of a sample of the resident grass (start-up heuristics; the same
        sample as the instanced path's, taken from the bundles when tiles were added)."""
        pts = [p for p in self._samples.values() if len(p)]
        return np.concatenate(pts) if pts else np.zeros((0, 2))

    # -- what the grid draws --
    def _need(self, key) -> tuple[dict, int]:
        """{model: layers} of the tiles ``key`` (:func:`tile_range`) for the models with a mesh,
        and the most blades (all models) a slot of them holds."""
        need = self._needs.get(key)
        if need is None:
            c0, c1, r0, r1 = key
            layers, blades = {}, 0
            for c in range(c0, c1 + 1):
                for r in range(r0, r1 + 1):
                    entry = self.tiles.get((c, r))
                    if entry is None:
                        continue
                    blades = max(blades, entry[3])
                    for m, n in entry[2].items():
                        if m in self.meshes:
                            layers[m] = max(layers.get(m, 0), n)
            need = self._needs[key] = (layers, blades)
        return need

    def draws(self, camera_xy) -> list[tuple[int, int]]:
        """(model, layers) to draw for a camera at ``camera_xy``: the models of the tiles under the grid."""
        return sorted(self._need(tile_range(float(camera_xy[0]), float(camera_xy[1])))[0].items())

    def _bind(self):
        use_texture(self.ctx, self._control, 1)
        use_texture(self.ctx, self._heights, 2)
        use_texture(self.ctx, self._table_tex, 3)
        use_texture(self.ctx, self._model_tex, MODEL_UNIT)

    # -- compact mode: the layout of commands and compacted regions --
    def _relayout(self, key):
        """Commands and regions for the frame's views: ``key`` = (tile range of each view, fills).
        Each view gets one command per model under any view's grid, and per model a region of
        ``GRID_SIDE**2 * layers`` entries: the most blades of it the grid can hold, so the
        appends never overflow."""
        ranges, fills = key
        need: dict[int, int] = {}
        blades = 0
        for r in set(ranges):
            layers, most = self._need(r)
            blades = max(blades, most)
            for m, n in layers.items():
                need[m] = max(need.get(m, 0), n)
        models = sorted(need)
        n_views = len(ranges)
        caps = np.array([SLOTS * need[m] for m in models], np.int64)
        bases = np.r_[0, np.cumsum(caps)].astype(np.int64)
        regions = np.zeros((max(len(self.models), 1), 4), np.uint32)
        regions[:, 2] = 0xFFFFFFFF
        for k, m in enumerate(models):
            regions[m] = (bases[k], caps[k], k, 0)
        per_view = int(bases[-1])
        cmds = np.zeros((n_views, len(models)), CMD_DTYPE)
        for v, fill in enumerate(fills):
            lines = fill == "lines"
            for k, m in enumerate(models):  # a lines view draws the edge list (twice the indices)
                cmds["count"][v, k] = self.meshes[m].index_count * (2 if lines else 1)
            cmds["base_instance"][v] = v * per_view + bases[:-1]
        for b in (self.regions, self.commands, self.stats):
            if b is not None:
                b.release()
        self.stats = gpu_memory(self.ctx).track(self.ctx.buffer(bytes(2 * n_views * STATS_SIZE * 4)), "grass")  # set 0, set 1
        self.regions = gpu_memory(self.ctx).track(self.ctx.buffer(regions.tobytes()), "grass")
        self.commands = gpu_memory(self.ctx).track(self.ctx.buffer(cmds.tobytes() * 2 or bytes(CMD_DTYPE.itemsize)), "grass")  # set 0, set 1
        need_bytes = max(per_view * n_views * 8, 8)
        if self.visible is None or self.visible.size < need_bytes:
            if self.visible is not None:
                self.visible.release()
            self.visible = gpu_memory(self.ctx).track(self.ctx.buffer(reserve=need_bytes), "grass")
        self._drop_plans()
        self._layout = {"models": models, "blades": blades, "version": self.version}
        self._cmd_per_view, self._visible_per_view, self._n_views = len(models), per_view, n_views
        self._layout_key = key

    def _drop_plans(self):
        for plan in self._plans.values():
            for vaos in plan[2]:
                vaos.release()
        self._plans.clear()

    def _plan(self, pass_, lines: bool, draws_key=None):
        """The program and, per model, (texture, vertex array, argument) of a pass's draws: the
        command index (compact) or the model and instance count (full, for the tile range
        ``draws_key``); kept until the layout or the residency changes."""
        key = (pass_, lines, draws_key)
        plan = self._plans.get(key)
        if plan is None:
            import moderngl

            if len(self._plans) >= _PLANS_KEPT:
                self._drop_plans()
            compact = self.draw_mode == "compact"
            prog = pass_.program(self.programs, "grass_grid_compact" if compact else "grass_grid", _FILL_VIEWS[lines])
            mode = moderngl.LINES if lines else moderngl.TRIANGLES
            models = self._layout["models"] if compact else sorted(self._need(draws_key[0])[0].items())
            caches, draws, counts = [], [], DrawCounts()
            for k, m in enumerate(models):
                if not compact:
                    m, layers = m
                    counts += DrawCounts(1, layers * SLOTS, layers * SLOTS * self.meshes[m].triangles)
                mesh = self.meshes[m]
                attrs = [(mesh.grass_vbo, mesh.grass_format, "in_mesh")]
                if compact:
                    attrs.append((self.visible, "2u4/i", "i_entry"))
                vao = VaoCache(lambda p, a=attrs, ibo=(mesh.lbo if lines else mesh.ibo): self.ctx.vertex_array(
                    p, a, index_buffer=ibo, index_element_size=4))
                caches.append(vao)
                draws.append((mesh.texture, vao(prog), k if compact else (m, layers * SLOTS)))
            if compact:
                counts = DrawCounts(draw_calls=len(draws))  # the blades drawn are the GPU's (read_counts)
            plan = self._plans[key] = (prog, mode, caches, draws, None if compact else prog["uGridModel"], counts)
        return plan

    # -- a frame --
    def prepare(self, frame):
        """Compact mode: per view, the compaction pass (the counts reset first); nothing read back."""
        if self.draw_mode != "compact":
            return
        views = frame.all_views
        key = (tuple(tile_range(float(v.camera.position[0]), float(v.camera.position[1])) for v in views),
               tuple(v.fill for v in views))
        if key != self._layout_key or self._layout.get("version") != self.version:
            self._relayout(key)
        if not self._cmd_per_view:
            return
        bind_storage(self.ctx, (self.regions, self.commands, self.visible, self.stats, frame.uniforms.buffer))
        self._bind()
        n_views = len(views)
        for cs in self._culls:  # recorded on the programs: a frame like the last writes none
            for name, value in (("uCommandCount", self._cmd_per_view * self._n_views),
                                ("uStatsCount", STATS_SIZE * self._n_views), ("uCommandsPerView", self._cmd_per_view),
                                ("uVisiblePerView", self._visible_per_view), ("uCollectStats", self.collect_stats)):
                set_uniform(cs, name, value)
        self._set ^= 1
        # every view in one dispatch (z: the view's slot); at least one row of blades: work group
        # 0 zeroes the other command set
        native.run_compute(self._culls[self._set], -(-SLOTS // 64), max(1, self._layout["blades"]), n_views)
        self.ctx.memory_barrier(DRAW_BARRIER)

    def warm_programs(self, pass_, view) -> list:
        name = "grass_grid_compact" if self.draw_mode == "compact" else "grass_grid"
        return [(pass_.program(self.programs, name, _FILL_VIEWS[view.fill == "lines"]),
                 "coverage" if getattr(pass_, "alpha_to_coverage", False) else "opaque")]

    def draw(self, pass_, view) -> DrawCounts:
        """One draw per model under the grid around ``view``'s camera (the grid is the cull):
        compact, an indirect draw of the blades the compaction kept; full, every slot x layer."""
        lines = view.fill == "lines"
        if self.draw_mode == "compact":
            if not self._cmd_per_view:
                return DrawCounts()
            prog, mode, _, draws, _, counts = self._plan(pass_, lines)
        else:
            pos = view.camera.position
            prog, mode, _, draws, u_model, counts = self._plan(
                pass_, lines, (tile_range(float(pos[0]), float(pos[1])), self.version))
            if not draws:
                return counts
        self._bind()
        a2c = getattr(pass_, "alpha_to_coverage", False)
        if a2c:
            self.ctx.enable_direct(ALPHA_TO_COVERAGE)
        if self.draw_mode == "compact":
            cmds, first = self.commands, self._first_command(view)
            for texture, vao, k in draws:
                use_texture(self.ctx, texture, 0)
                vao.render_indirect(cmds, mode=mode, count=1, first=first + k)
        else:
            for texture, vao, (m, n) in draws:
                use_texture(self.ctx, texture, 0)
                set_uniform(prog, "uGridModel", m)
                vao.render(mode, instances=n)
            self._submitted[view.slot] = counts
        if a2c:
            self.ctx.disable_direct(ALPHA_TO_COVERAGE)
        return counts

    def _first_command(self, view) -> int:
        """``view``'s first command in the command set the last dispatch wrote."""
        return self._set * self._cmd_per_view * self._n_views + view.slot * self._cmd_per_view

    # -- read-back (tests, tools, statistics) --
    def read_counts(self, view) -> dict:
        """Compact mode: {model path: blades} the last frame's compaction kept for ``view`` (waits for the GPU)."""
        if self.draw_mode != "compact" or not self._cmd_per_view:
            return {}
        cmds = np.frombuffer(self._readback.read(self.commands, self._cmd_per_view * CMD_DTYPE.itemsize,
                                                 self._first_command(view) * CMD_DTYPE.itemsize), CMD_DTYPE)
        return {self.models[m]: int(n) for m, n in zip(self._layout["models"], cmds["instances"])}

    def read_stats(self, view) -> dict:
        """The last frame's counters of ``view`` (waits for the GPU; needs ``collect_stats``), in
        :meth:`GpuGrass.read_stats`'s terms: ``gpu_tested`` the blades in reach (tile resident,
        a blade in the control texel), ``kept_per_ring`` those the draw distance and the rings
        kept and the frustum test then saw, ``drawn`` the blades drawn."""
        if self.draw_mode != "compact":  # the full draw decides in the vertex stage: what it submitted
            c = self._submitted.get(view.slot, DrawCounts())
            return {"gpu_tested": c.instances, "gpu_groups_visible": 0, "kept_per_ring": [0] * 4,
                    "drawn": c.instances, "overflow": 0, "drawn_triangles": c.triangles}
        if not self._cmd_per_view or view.slot >= self._n_views:
            return {"gpu_tested": 0, "gpu_groups_visible": 0, "kept_per_ring": [0] * 4, "drawn": 0,
                    "overflow": 0, "drawn_triangles": 0}
        at = (self._set * self._n_views + view.slot) * STATS_SIZE * 4
        s = np.frombuffer(self._readback.read(self.stats, STATS_SIZE * 4, at), np.uint32)
        counts = self.read_counts(view)
        return {"gpu_tested": int(s[0]), "gpu_groups_visible": 0, "kept_per_ring": s[1:5].tolist(),
                "drawn": sum(counts.values()), "overflow": 0,
                "drawn_triangles": sum(n * self.meshes[self._index[m]].triangles for m, n in counts.items())}

    def capture(self, camera, time: float, model: str, vertex: str = "root", mode: str = "full",
                size=(1, 1)) -> dict:
        """Run the grid's vertex stage for one model by transform feedback, one vertex per blade.

        ``camera``: a :class:`~wowgrass.render.camera.Camera` (the grid centres on it); ``vertex``:
        "root" (at the model's lowest z), "tip" (its highest) or a model-space (x, y, z).
        ``mode``: "full" runs the reference's literal path (every slot and layer, those without a
        blade dropped: every blade in reach, whatever the view); "compact" runs the compaction
        pass for a view of ``size`` pixels from ``camera`` and the vertex stage over what it kept
        (the blades in the view's frustum). Returns the live blades: ``root`` (n, 3) world,
        ``cell`` (n, 2) lattice cell, ``blade`` (n,) index in its slot, ``vertex`` (n, 3) the
        chosen vertex in the world, wind applied."""
        import moderngl

        from ..frame import Frame, FrameUniforms
        from ..views import View

        idx = self._index[model]
        mesh = self.meshes[idx]
        view = View(camera, (0, 0, *size))
        if self._capture is None:
            # transform feedback still needs a complete framebuffer bound (EGL has no default one)
            self._capture = (self.ctx.simple_framebuffer((1, 1)), FrameUniforms(self.ctx))
        fbo, uniforms = self._capture
        frame = Frame(time=time, views=[view], wind=self.settings)
        frame.uniforms = uniforms
        uniforms.write(frame)
        empty = {"root": np.zeros((0, 3)), "cell": np.zeros((0, 2), np.int64), "blade": np.zeros(0, np.int64),
                 "vertex": np.zeros((0, 3))}
        point = {"root": (0.0, 0.0, mesh.z_min), "tip": (0.0, 0.0, mesh.z_max)}.get(vertex, vertex)
        one = np.zeros(4, np.uint32)
        one[:3] = np.array(point, np.float32).view(np.uint32)
        vbo = self.ctx.buffer(one.tobytes())
        made = [vbo]
        if mode == "compact":
            if self.draw_mode != "compact":
                raise ValueError("compact capture needs the compact draw mode (GL 4.3)")
            self.prepare(frame)
            k = self._layout["models"].index(idx) if idx in self._layout["models"] else None
            cmd = None if k is None else np.frombuffer(
                self._readback.read(self.commands, CMD_DTYPE.itemsize, (self._first_command(view) + k) * CMD_DTYPE.itemsize),
                CMD_DTYPE)[0]
            n = 0 if cmd is None else int(cmd["instances"])
            if n:
                entries = self.ctx.buffer(reserve=n * 8)
                self.ctx.copy_buffer(entries, self.visible, size=n * 8, read_offset=int(cmd["base_instance"]) * 8)
                made.append(entries)
                prog = self._capture_program("grass_grid_compact")
                vao = self.ctx.vertex_array(prog, [(vbo, "4u4", "in_mesh"), (entries, "2u4/i", "i_entry")])
        else:
            n = dict(self.draws(camera.position[:2])).get(idx, 0) * SLOTS
            if n:
                prog = self._capture_program("grass_grid")
                prog["uGridModel"].value = idx
                vao = self.ctx.vertex_array(prog, [(vbo, "4u4", "in_mesh")])
        if not n:
            for obj in made:
                obj.release()
            return empty
        uniforms.bind(view)
        out = self.ctx.buffer(reserve=n * 48)
        self._bind()
        fbo.use()
        vao.transform(out, mode=moderngl.POINTS, vertices=1, instances=n)
        data = np.frombuffer(out.read(), np.float32).reshape(n, 12)
        for obj in (vao, out, *made):
            obj.release()
        d = data[data[:, 3] > 0.5]
        return {"root": d[:, 0:3].astype(np.float64), "cell": d[:, 4:6].astype(np.int64),
                "blade": d[:, 6].astype(np.int64), "vertex": d[:, 8:11].astype(np.float64)}

    def _capture_program(self, name: str):
        """``name``'s vertex stage with the transform-feedback outputs (GRID_CAPTURE), made once."""
        from ..frame import FrameUniforms
        from ..gl.programs import LINK_TIME_UNIFORMS, preprocess

        prog = self._capture_progs.get(name)
        if prog is None:
            defines = {**self.programs.defines[name], "GRID_CAPTURE": True}
            prog = self._capture_progs[name] = self.ctx.program(
                vertex_shader=preprocess("grass.glsl", "VERTEX_SHADER", defines), varyings=list(CAPTURE_VARYINGS))
            for u, unit in LINK_TIME_UNIFORMS.items():
                if u in prog:
                    prog[u].value = unit
            prog["Frame"].binding = FrameUniforms.BINDING
        return prog
