"""The ADT's own doodads (MDDF): static M2 meshes, one instanced draw per model over every
resident tile's instances of it (the draws a frame makes do not grow with the resident tiles).

MDDF positions are not in world space: world ``X = ZEROPOINT - p[2]``, ``Y = ZEROPOINT - p[0]``,
``Z = p[1]`` (formats.md section 0); rotations are degrees about the file's (x, y, z) axes, where
its y is up: with no tilt a turn of ``rot[1] + 180`` degrees about world Z, as the client places
them (wowgrass.game.mapobjects); scale is ``u16 / 1024``. Models the data
source lacks are skipped and reported by the scene.
"""

from __future__ import annotations

import numpy as np

from ..gl.memory import gpu_memory
from ..gl.state import use_texture
from ..gl.meshes import MESH_ATTRS, MESH_FORMAT, GpuMesh
from ..gl.programs import VaoCache, read_by
from . import DrawCounts, Source


def mddf_matrices(mddf: np.ndarray) -> np.ndarray:
    """(n, 16) f4 column-major model matrices of MDDF records (world space, Z up), composed as the
    client composes them (:func:`wowgrass.game.mapobjects.placement_matrices`, the same as MODF's)."""
    from wowgrass.game.mapobjects import placement_matrices

    m = placement_matrices(mddf["position"], mddf["rotation"], mddf["scale"].astype(np.float64) / 1024.0)
    return np.ascontiguousarray(m.transpose(0, 2, 1), np.float32).reshape(-1, 16)


class ModelDoodads:
    """Every resident instance of one model: the tiles' matrices, and one buffer holding them all.
    A tile's arrival appends its instances; a departure rewrites the buffer from the remaining
    tiles (a tile's doodads are kilobytes); the buffer grows by doubling."""

    def __init__(self, ctx, mesh: GpuMesh):
        self.ctx, self.mesh = ctx, mesh
        self.parts: dict = {}  # tile -> (n, 16) float32 matrices
        self.count = 0  # instances in the buffer
        self.buffer = None
        self.added: list = []  # matrices added since the last update, not in the buffer yet
        self.removed = False  # a tile left since the last update: the buffer is rewritten
        # the shadow pass's variant reads no normals: read_by pads what a variant does not read
        self.vao, self.line_vao = (VaoCache(lambda prog, ibo=ibo: ctx.vertex_array(
            prog, [(mesh.vbo, *read_by(prog, MESH_FORMAT, *MESH_ATTRS)), (self.buffer, "16f/i", "i_model")],
            index_buffer=ibo, index_element_size=4)) for ibo in (mesh.ibo, mesh.lbo))

    def update(self):
        """Bring the buffer up to ``parts``: append what was added, or rewrite it after a removal."""
        new = np.concatenate(self.added) if self.added else np.zeros((0, 16), np.float32)
        whole = self.removed or self.buffer is None or self.buffer.size < (self.count + len(new)) * 64
        data = np.concatenate(list(self.parts.values())) if whole else new
        self.added, self.removed = [], False
        if whole:
            self.count = 0
            if self.buffer is None or self.buffer.size < data.nbytes:
                if self.buffer is not None:
                    self.buffer.release()
                self.vao.release()  # vertex arrays of the old buffer
                self.line_vao.release()
                self.buffer = gpu_memory(self.ctx).track(
                    self.ctx.buffer(reserve=1 << max(data.nbytes - 1, 63).bit_length()), "doodads")
        if len(data):
            self.buffer.write(data.tobytes(), offset=self.count * 64)
            self.count += len(data)

    def release(self):
        self.vao.release()
        self.line_vao.release()
        if self.buffer is not None:
            self.buffer.release()
            self.buffer = None


class DoodadSet(Source):
    """All resident doodads (a source: one instanced draw per model, no culling)."""

    name = "doodads"

    def __init__(self, ctx, programs):
        self.ctx, self.programs = ctx, programs
        self.models: dict[int, ModelDoodads] = {}  # id(mesh) -> its instances (the entry keeps the mesh)
        self._dirty: set[int] = set()
        self._drawn: list[ModelDoodads] = []

    def add(self, mesh: GpuMesh, matrices: np.ndarray, tile=None):
        if not len(matrices):
            return
        m = self.models.get(id(mesh))
        if m is None:
            m = self.models[id(mesh)] = ModelDoodads(self.ctx, mesh)
        mats = np.ascontiguousarray(matrices, np.float32).reshape(-1, 16)
        old = m.parts.get(tile)
        m.parts[tile] = mats if old is None else np.concatenate([old, mats])
        gpu_memory(self.ctx).add_use(tile, "doodads", mats.nbytes)
        m.added.append(mats)
        self._dirty.add(id(mesh))

    def remove_tile(self, tile):
        gpu_memory(self.ctx).use(tile, "doodads", 0)
        for key, m in self.models.items():
            if m.parts.pop(tile, None) is not None:
                m.removed = True
                self._dirty.add(key)

    def _rebuild(self):
        for key in self._dirty:
            m = self.models[key]
            if m.parts:
                m.update()
            else:  # no tile has it any more
                m.release()
                del self.models[key]
        self._dirty.clear()
        self._drawn = [m for m in self.models.values() if m.count]

    def prepare(self, frame):
        if self._dirty:
            self._rebuild()

    def warm_programs(self, pass_, view) -> list:
        return [(pass_.program(self.programs, "doodad", view), "opaque")]

    def draw(self, pass_, view) -> DrawCounts:
        import moderngl

        if self._dirty:  # drawn without prepare (tests, tools)
            self._rebuild()
        prog = pass_.program(self.programs, "doodad", view)
        lines = view.fill == "lines"
        out = DrawCounts()
        for m in self._drawn:
            use_texture(self.ctx, m.mesh.texture, 0)
            if lines:  # the edge list: a line-list pipeline, not triangles in polygon line mode
                m.line_vao(prog).render(moderngl.LINES, instances=m.count)
            else:
                m.vao(prog).render(instances=m.count)
            out += DrawCounts(1, m.count, m.count * m.mesh.triangles)
        return out

    def release(self):
        for m in self.models.values():
            m.release()
        self.models, self._drawn = {}, []
        self._dirty.clear()
