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
from .grass import FrameCounts
from .meshes import GpuMesh

SLOTS = GRID_SIDE * GRID_SIDE
GRID_WIND_AMPLITUDE = 0.22  # the reference's grid sway: world units at the tip
GRID_SWAY_DIRECTION = (1.0, 0.35)  # (wave, wave * 0.35): not normalised, as written
GRID_DEFINES = {
    "GRASS_GRID": True,
    "GRID_SIDE": GRID_SIDE,
    "GRID_HALF": GRID_HALF,
    "GRID_SPACING": SLOT_SPACING,
    "GRID_JITTER": JITTER,
    "GRID_ANCHOR": ANCHOR,
    "WOW_ZEROPOINT": ZEROPOINT,
    "WOW_UNIT_SIZE": UNIT_SIZE,
}
CAPTURE_VARYINGS = ("t_root", "t_cell", "t_vertex")
_REACH = (GRID_HALF + 1) * SLOT_SPACING  # the grid's half extent around the camera


def grid_params(settings: GrassSettings, camera_xy, time: float, z_min: float, z_max: float) -> np.ndarray:
    """``uGrassParams`` for the grid: the settings' fade and falloff, the reference's grid sway."""
    p = settings.params(camera_xy, time, z_min, z_max)
    p[1, 2] = GRID_WIND_AMPLITUDE
    p[2, 2:] = GRID_SWAY_DIRECTION
    return p


class GridGrass:
    """All resident grid tiles; ``add_tile``/``remove_tile`` as tiles stream, ``render`` each frame."""

    def __init__(self, ctx, program, settings: GrassSettings | None = None, *, capacity: int = 9,
                 wind: dict | None = None):
        self.ctx, self.program = ctx, program
        self.wind = dict(wind or {})  # the wind defines ``program`` was built with (the capture program's too)
        self.settings = settings or GrassSettings()
        self.tiles: dict = {}  # key -> (layer, GridTile, {global model: layers})
        self.models: list[str] = []  # global model table (the control texture's indices after upload)
        self._index: dict[str, int] = {}
        self.meshes: dict[int, GpuMesh] = {}
        self._vaos: dict[int, object] = {}
        self._table = np.full((64, 64, 4), -1, np.int32)
        self._table_tex = ctx.texture((64, 64), 4, self._table.tobytes(), dtype="i4")
        self._capacity = 0
        self._control = self._heights = None
        self._grow(capacity)
        self.version = 0
        self._draw_key = None
        self._draws: list[tuple[int, int]] = []
        self._capture = None
        for name, unit in (("uGridControl", 1), ("uGridHeights", 2), ("uGridTiles", 3)):
            if name in program:
                program[name].value = unit

    # -- residency --
    def _grow(self, capacity: int):
        import moderngl

        old = self.tiles
        for t in (self._control, self._heights):
            if t is not None:
                t.release()
        self._capacity = capacity
        self._control = self.ctx.texture_array((CONTROL_SIDE, CONTROL_SIDE, capacity), 4, dtype="u4")
        self._heights = self.ctx.texture_array((ATLAS_SIDE, ATLAS_SIDE, capacity), 1, dtype="f4")
        for t in (self._control, self._heights, self._table_tex):
            t.filter = (moderngl.NEAREST, moderngl.NEAREST)
        for layer, tile, _ in old.values():
            self._upload(layer, tile)

    def _upload(self, layer: int, tile: GridTile):
        a, b = tile.control.shape[:2]
        self._control.write(np.ascontiguousarray(tile.control, "<u4").tobytes(), viewport=(0, 0, layer, b, a, 1))
        self._heights.write(np.ascontiguousarray(tile.heights, "<f4").tobytes(),
                            viewport=(0, 0, layer, ATLAS_SIDE, ATLAS_SIDE, 1))

    def model_id(self, path: str) -> int:
        idx = self._index.get(path)
        if idx is None:
            if len(self.models) >= 0xFFFF:
                raise ValueError("the grid's model table is full (65535 models)")
            idx = self._index[path] = len(self.models)
            self.models.append(path)
        return idx

    def add_tile(self, key, tile: GridTile, meshes: dict):
        """Make ``tile`` resident; ``meshes``: model path -> GpuMesh (None: missing, not drawn)."""
        if key in self.tiles:
            self.remove_tile(key)
        used = {layer for layer, _, _ in self.tiles.values()}
        layer = next(i for i in range(self._capacity + 1) if i not in used)
        if layer >= self._capacity:
            self._grow(self._capacity * 2)
        remap = np.array([self.model_id(m) for m in tile.models] or [0], np.uint32)
        control = tile.control.copy()
        control = np.where(control >> 16 > 0, remap[control & 0xFFFF] | (control & 0xFFFF0000), 0).astype("<u4")
        glob = GridTile(tile.col, tile.row, tile.slot_i0, tile.slot_j0, control, tile.heights, self.models)
        layers = {int(remap[k]): int(n) for k, n in enumerate(tile.model_layers()) if n > 0}
        for path in tile.models:
            mesh = meshes.get(path)
            idx = self._index[path]
            if mesh is not None and idx not in self.meshes:
                self.meshes[idx] = mesh
                self._vaos[idx] = self.ctx.vertex_array(self.program, [(mesh.grass_vbo, mesh.grass_format, "in_mesh")],
                                                        index_buffer=mesh.ibo, index_element_size=4)
        self.tiles[key] = (layer, glob, layers)
        self._upload(layer, glob)
        self._set_table(tile.col, tile.row, (layer, tile.slot_i0, tile.slot_j0, 0))

    def _set_table(self, col: int, row: int, value):
        self._table[row, col] = value
        self._table_tex.write(self._table[row, col].tobytes(), viewport=(col, row, 1, 1))
        self.version += 1

    def remove_tile(self, key):
        entry = self.tiles.pop(key, None)
        if entry is not None:
            self._set_table(entry[1].col, entry[1].row, (-1, -1, -1, -1))

    def release(self):
        for v in self._vaos.values():
            v.release()
        self._vaos.clear()
        for t in (self._control, self._heights, self._table_tex):
            t.release()
        for obj in self._capture or ():
            obj.release()
        self.tiles.clear()

    @property
    def total_instances(self) -> int:
        """Blades the resident control textures hold (what the grid can draw where it stands)."""
        return sum(int(t.counts.sum()) for _, t, _ in self.tiles.values())

    # -- drawing --
    def draws(self, camera_xy) -> list[tuple[int, int]]:
        """(model, layers) to draw for a camera at ``camera_xy``: the models of the tiles under the grid."""
        x, y = float(camera_xy[0]), float(camera_xy[1])
        c0 = int(np.floor((ZEROPOINT - y - _REACH) / TILE_SIZE))
        c1 = int(np.floor((ZEROPOINT - y + _REACH) / TILE_SIZE))
        r0 = int(np.floor((ZEROPOINT - x - _REACH) / TILE_SIZE))
        r1 = int(np.floor((ZEROPOINT - x + _REACH) / TILE_SIZE))
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

    def render(self, camera_xy, time: float, planes=None) -> FrameCounts:
        """One instanced draw per model under the grid (``planes`` unused: the grid is the cull)."""
        out = FrameCounts()
        draws = self.draws(camera_xy)
        if not draws:
            return out
        self._bind()
        u_params, u_model = self.program["uGrassParams"], self.program["uGridModel"]
        for m, layers in draws:
            mesh = self.meshes[m]
            u_params.write(grid_params(self.settings, camera_xy, time, mesh.z_min, mesh.z_max).tobytes())
            u_model.value = m
            mesh.texture.use(location=0)
            n = layers * SLOTS
            self._vaos[m].render(instances=n)
            out.draw_calls += 1
            out.instances += n
            out.triangles += n * mesh.triangles
        return out

    # -- read-back (tests, tools) --
    def capture(self, camera_xy, time: float, model: str, vertex: str = "root", *, layers: int | None = None) -> dict:
        """Run the grid's vertex stage for one model by transform feedback, one vertex per slot and layer.

        ``vertex``: "root" (the model's lowest vertex) or "tip" (its highest). Returns numpy arrays
        of the live blades: ``root`` (n, 3) world, ``cell`` (n, 2) lattice cell, ``blade`` (n,) index
        in its slot, ``vertex`` (n, 3) the chosen vertex in the world (wind applied)."""
        import moderngl

        from .programs import preprocess

        idx = self._index[model]
        mesh = self.meshes[idx]
        if self._capture is None:
            defines = {**GRID_DEFINES, **self.wind, "GRID_CAPTURE": True}
            prog = self.ctx.program(vertex_shader=preprocess("grass.glsl", "VERTEX_SHADER", defines),
                                    varyings=list(CAPTURE_VARYINGS))
            for name, unit in (("uGridControl", 1), ("uGridHeights", 2), ("uGridTiles", 3)):
                prog[name].value = unit
            # transform feedback still needs a complete framebuffer bound (EGL has no default one)
            self._capture = (prog, self.ctx.simple_framebuffer((1, 1)))
        prog, fbo = self._capture
        if layers is None:
            layers = dict(self.draws(camera_xy)).get(idx, 0)
        empty = {"root": np.zeros((0, 3)), "cell": np.zeros((0, 2), np.int64), "blade": np.zeros(0, np.int64),
                 "vertex": np.zeros((0, 3))}
        if layers == 0:
            return empty
        z = mesh.z_min if vertex == "root" else mesh.z_max
        one = np.zeros(4, np.uint32)
        one[:3] = np.array([0.0, 0.0, z], np.float32).view(np.uint32)
        vbo = self.ctx.buffer(one.tobytes())
        vao = self.ctx.vertex_array(prog, [(vbo, "4u4", "in_mesh")])
        n = layers * SLOTS
        out = self.ctx.buffer(reserve=n * 48)
        prog["uGrassParams"].write(grid_params(self.settings, camera_xy, time, mesh.z_min, mesh.z_max).tobytes())
        prog["uGridModel"].value = idx
        self._bind()
        fbo.use()
        vao.transform(out, mode=moderngl.POINTS, vertices=1, instances=n)
        data = np.frombuffer(out.read(), np.float32).reshape(n, 12)
        for obj in (vao, vbo, out):
            obj.release()
        live = data[:, 3] > 0.5
        d = data[live]
        return {"root": d[:, 0:3].astype(np.float64), "cell": d[:, 4:6].astype(np.int64),
                "blade": d[:, 6].astype(np.int64), "vertex": d[:, 8:11].astype(np.float64)}
