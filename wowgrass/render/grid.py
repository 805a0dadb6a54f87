"""The camera-grid grass source (``view --grass grid``): resident control and height textures, one
instanced draw per grass model over the camera-centred grid.

Per tile, :class:`~wowgrass.grid.GridTile` (control texture + height atlas, built from the tile's
bundle and cached beside it) goes into one layer of two texture arrays; a 64 x 64 tile table maps
a world tile to its layer. A frame issues, for each model growing in the tiles under the grid,
one draw of ``GRID_SIDE**2 * layers`` instances with no instance buffer (``grass_grid.glsl``);
slots without a blade of that model fall outside the clip volume in the vertex stage. A frame's
CPU work is the model list of the at most 3 x 3 tiles under the grid (recomputed only when the
camera crosses a tile line or residency changes) and one draw per model: it does not grow with
the resident set. The GPU work is fixed by the grid and the layer counts, not by residency either.
"""

from __future__ import annotations

import numpy as np

from wowgrass.grid import (ANCHOR, ATLAS_SIDE, CONTROL_SIDE, GRID_HALF, GRID_SIDE, JITTER, SLOT_SPACING,
                           GridTile)

from .constants import TILE_SIZE, UNIT_SIZE, ZEROPOINT, GrassSettings
from .meshes import GpuMesh
from .programs import VaoCache
from .sources import DrawCounts, Source

SLOTS = GRID_SIDE * GRID_SIDE
GRID_DEFINES = {
    "GRASS_GRID": True,
    "GRID_SIDE": GRID_SIDE,
    "GRID_HALF": GRID_HALF,
    "GRID_SPACING": SLOT_SPACING,
    "GRID_JITTER": JITTER,
    "GRID_ANCHOR": ANCHOR,
    "GRID_WIND_AMPLITUDE": 0.22,  # the reference's grid sway: world units at the tip ...
    "GRID_SWAY_X": 1.0,  # ... along (wave, wave * 0.35), not normalised, as written
    "GRID_SWAY_Y": 0.35,
    "WOW_ZEROPOINT": ZEROPOINT,
    "WOW_UNIT_SIZE": UNIT_SIZE,
}
CAPTURE_VARYINGS = ("t_root", "t_cell", "t_vertex")
_REACH = (GRID_HALF + 1) * SLOT_SPACING  # the grid's half extent around the camera


class GridGrass(Source):
    """All resident grid tiles; ``add_tile``/``remove_tile`` as tiles stream; a
    :class:`~wowgrass.render.sources.Source` drawing one instanced draw per model and view."""

    name = "grass"  # the grass toggle and counts, whichever path draws it

    def __init__(self, ctx, programs, settings: GrassSettings | None = None, *, capacity: int = 9,
                 program_name: str = "grass_grid"):
        self.ctx, self.programs, self.program_name = ctx, programs, program_name
        self.settings = settings or GrassSettings()
        self.cull = True  # the viewer's C toggle; the grid is its own cull
        self.tiles: dict = {}  # key -> (layer, GridTile with global model indices, {model: layers})
        self.models: list[str] = []  # global model table (the uploaded control's indices)
        self._index: dict[str, int] = {}
        self.meshes: dict[int, GpuMesh] = {}
        self._vaos: dict[int, VaoCache] = {}
        self._line_vaos: dict[int, VaoCache] = {}
        self._table = np.full((64, 64, 4), -1, np.int32)
        self._table_tex = ctx.texture((64, 64), 4, self._table.tobytes(), dtype="i4")
        self._capacity = 0
        self._control = self._heights = None
        self._grow(capacity)
        self.version = 0
        self._draw_key = None
        self._draws: list[tuple[int, int]] = []
        self._capture = None
        self._samples: dict = {}
        self._handles: dict = {}

    # -- residency --
    def _grow(self, capacity: int):
        import moderngl

        for t in (self._control, self._heights):
            if t is not None:
                t.release()
        self._capacity = capacity
        self._control = self.ctx.texture_array((CONTROL_SIDE, CONTROL_SIDE, capacity), 4, dtype="u4")
        self._heights = self.ctx.texture_array((ATLAS_SIDE, ATLAS_SIDE, capacity), 1, dtype="f4")
        for t in (self._control, self._heights, self._table_tex):
            t.filter = (moderngl.NEAREST, moderngl.NEAREST)
        for layer, tile, _ in self.tiles.values():
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

    def add_tile(self, key, tile: GridTile, meshes: dict, sample_xy=None):
        """Make ``tile`` resident; ``meshes``: model path -> GpuMesh (None: missing, not drawn);
        ``sample_xy``: a few grass positions of the tile (:meth:`sample_xy`)."""
        if key in self.tiles:
            self.remove_tile(key)
        used = {layer for layer, _, _ in self.tiles.values()}
        layer = next(i for i in range(self._capacity + 1) if i not in used)
        if layer >= self._capacity:
            self._grow(self._capacity * 2)
        remap = np.array([self._model_id(m) for m in tile.models] or [0], np.uint32)
        c = tile.control
        control = np.where(c >> 16 > 0, remap[c & 0xFFFF] | (c & 0xFFFF0000), 0).astype("<u4")
        glob = GridTile(tile.col, tile.row, tile.slot_i0, tile.slot_j0, control, tile.heights, self.models)
        layers = {int(remap[k]): int(n) for k, n in enumerate(tile.model_layers()) if n > 0}
        for path in tile.models:
            mesh, idx = meshes.get(path), self._index[path]
            if mesh is not None and idx not in self.meshes:
                self.meshes[idx] = mesh
                self._vaos[idx], self._line_vaos[idx] = (VaoCache(lambda prog, m=mesh, ibo=ibo: self.ctx.vertex_array(
                    prog, [(m.grass_vbo, m.grass_format, "in_mesh")], index_buffer=ibo, index_element_size=4))
                    for ibo in (mesh.ibo, mesh.lbo))  # triangles; the edge list for lines views
        self.tiles[key] = (layer, glob, layers)
        self._samples[key] = np.zeros((0, 2)) if sample_xy is None else np.asarray(sample_xy, np.float64)
        self._upload(layer, glob)
        self._set_table(tile.col, tile.row, (layer, tile.slot_i0, tile.slot_j0, 0))

    def _set_table(self, col: int, row: int, value):
        self._table[row, col] = value
        self._table_tex.write(self._table[row, col].tobytes(), viewport=(col, row, 1, 1))
        self.version += 1

    def remove_tile(self, key):
        entry = self.tiles.pop(key, None)
        self._samples.pop(key, None)
        if entry is not None:
            self._set_table(entry[1].col, entry[1].row, (-1, -1, -1, -1))

    def release(self):
        for v in (*self._vaos.values(), *self._line_vaos.values()):
            v.release()
        self._vaos.clear()
        self._line_vaos.clear()
        for t in (self._control, self._heights, self._table_tex, *(self._capture or ())):
            t.release()
        self.tiles.clear()

    @property
    def total_instances(self) -> int:
        """Blades the resident control textures hold (what the grid draws where it stands)."""
        return sum(int(t.counts.sum()) for _, t, _ in self.tiles.values())

    def sample_xy(self) -> np.ndarray:
        """(n, 2) world XY of a sample of the resident grass (start-up heuristics; the same
        sample as the instanced path's, taken from the bundles when tiles were added)."""
        pts = [p for p in self._samples.values() if len(p)]
        return np.concatenate(pts) if pts else np.zeros((0, 2))

    # -- drawing --
    def draws(self, camera_xy) -> list[tuple[int, int]]:
        """(model, layers) to draw for a camera at ``camera_xy``: the models of the tiles under the grid."""
        x, y = float(camera_xy[0]), float(camera_xy[1])
        c0, c1 = (int(np.floor((ZEROPOINT - y + d) / TILE_SIZE)) for d in (-_REACH, _REACH))
        r0, r1 = (int(np.floor((ZEROPOINT - x + d) / TILE_SIZE)) for d in (-_REACH, _REACH))
        key = (c0, c1, r0, r1, self.version)
        if key != self._draw_key:
            need: dict[int, int] = {}
            for c in range(c0, c1 + 1):
                for r in range(r0, r1 + 1):
                    entry = self.tiles.get((c, r))
                    for m, n in (entry[2].items() if entry else ()):
                        need[m] = max(need.get(m, 0), n)
            self._draws = sorted((m, n) for m, n in need.items() if m in self.meshes)
            self._draw_key = key
        return self._draws

    def _bind(self):
        self._control.use(location=1)
        self._heights.use(location=2)
        self._table_tex.use(location=3)

    def draw(self, pass_, view) -> DrawCounts:
        """One instanced draw per model under the grid around ``view``'s camera (the grid is the cull)."""
        out = DrawCounts()
        draws = self.draws(view.camera.position[:2])
        if not draws:
            return out
        import moderngl

        lines = view.fill == "lines"
        prog = pass_.program(self.programs, self.program_name, view)
        handles = self._handles.get(prog.glo)
        if handles is None:  # uniform lookups once per program variant, not per draw
            handles = self._handles[prog.glo] = (prog["uModelZ"], prog["uGridModel"])
        u_z, u_model = handles
        self._bind()
        a2c = getattr(pass_, "alpha_to_coverage", False)
        if a2c:
            self.ctx.enable_direct(0x809E)  # GL_SAMPLE_ALPHA_TO_COVERAGE
        for m, layers in draws:
            mesh = self.meshes[m]
            u_z.value = (mesh.z_min, mesh.z_max)
            u_model.value = m
            mesh.texture.use(location=0)
            n = layers * SLOTS
            if lines:
                self._line_vaos[m](prog).render(moderngl.LINES, instances=n)
            else:
                self._vaos[m](prog).render(instances=n)
            out += DrawCounts(1, n, n * mesh.triangles)
        if a2c:
            self.ctx.disable_direct(0x809E)
        return out

    # -- read-back (tests, tools) --
    def capture(self, camera, time: float, model: str, vertex: str = "root") -> dict:
        """Run the grid's vertex stage for one model by transform feedback, one vertex per slot and layer.

        ``camera``: a :class:`~wowgrass.render.camera.Camera` (the grid centres on it); ``vertex``:
        "root" (at the model's lowest z), "tip" (its highest) or a model-space (x, y, z). Returns the live blades: ``root``
        (n, 3) world, ``cell`` (n, 2) lattice cell, ``blade`` (n,) index in its slot, ``vertex``
        (n, 3) the chosen vertex in the world, wind applied."""
        import moderngl

        from .frame import Frame, FrameUniforms
        from .programs import preprocess
        from .views import View

        idx = self._index[model]
        mesh = self.meshes[idx]
        if self._capture is None:
            defines = {**self.programs.defines[self.program_name], "GRID_CAPTURE": True}
            prog = self.ctx.program(vertex_shader=preprocess("grass.glsl", "VERTEX_SHADER", defines),
                                    varyings=list(CAPTURE_VARYINGS))
            for name, unit in (("uGridControl", 1), ("uGridHeights", 2), ("uGridTiles", 3)):
                prog[name].value = unit
            prog["Frame"].binding = FrameUniforms.BINDING
            # transform feedback still needs a complete framebuffer bound (EGL has no default one)
            self._capture = (prog, self.ctx.simple_framebuffer((1, 1)), FrameUniforms(self.ctx))
        prog, fbo, uniforms = self._capture
        view = View(camera, (0, 0, 1, 1))
        uniforms.write(Frame(time=time, views=[view], wind=self.settings))
        uniforms.bind(view)
        layers = dict(self.draws(camera.position[:2])).get(idx, 0)
        if layers == 0:
            return {"root": np.zeros((0, 3)), "cell": np.zeros((0, 2), np.int64), "blade": np.zeros(0, np.int64),
                    "vertex": np.zeros((0, 3))}
        point = {"root": (0.0, 0.0, mesh.z_min), "tip": (0.0, 0.0, mesh.z_max)}.get(vertex, vertex)
        one = np.zeros(4, np.uint32)
        one[:3] = np.array(point, np.float32).view(np.uint32)
        vbo = self.ctx.buffer(one.tobytes())
        vao = self.ctx.vertex_array(prog, [(vbo, "4u4", "in_mesh")])
        n = layers * SLOTS
        out = self.ctx.buffer(reserve=n * 48)
        prog["uModelZ"].value = (mesh.z_min, mesh.z_max)
        prog["uGridModel"].value = idx
        self._bind()
        fbo.use()
        vao.transform(out, mode=moderngl.POINTS, vertices=1, instances=n)
        data = np.frombuffer(out.read(), np.float32).reshape(n, 12)
        for obj in (vao, vbo, out):
            obj.release()
        d = data[data[:, 3] > 0.5]
        return {"root": d[:, 0:3].astype(np.float64), "cell": d[:, 4:6].astype(np.int64),
                "blade": d[:, 6].astype(np.int64), "vertex": d[:, 8:11].astype(np.float64)}
