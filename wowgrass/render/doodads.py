"""The ADT's own doodads (MDDF): static M2 meshes drawn instanced per (tile, model).

MDDF positions are not in world space: world ``X = ZEROPOINT - p[2]``, ``Y = ZEROPOINT - p[0]``,
``Z = p[1]`` (formats.md section 0); rotations are degrees about the file's (x, y, z) axes, where
its y is up, so the heading is ``rot[1]`` about world Z; scale is ``u16 / 1024``. Models the data
source lacks are skipped and reported by the scene.
"""

from __future__ import annotations

import numpy as np

from .constants import ZEROPOINT
from .glstate import use_texture
from .meshes import MESH_ATTRS, MESH_FORMAT, GpuMesh
from .programs import VaoCache, read_by
from .sources import DrawCounts, Source


def mddf_matrices(mddf: np.ndarray) -> np.ndarray:
    """(n, 16) f4 column-major model matrices of MDDF records (world space, Z up)."""
    p = mddf["position"].astype(np.float64)
    r = np.radians(mddf["rotation"].astype(np.float64))
    s = mddf["scale"].astype(np.float64) / 1024.0
    t = np.stack([ZEROPOINT - p[:, 2], ZEROPOINT - p[:, 0], p[:, 1]], axis=1)
    # heading about world Z from the file's up axis (y); the small tilts about the horizontal axes
    yaw, pitch, roll = r[:, 1], r[:, 0], r[:, 2]
    cz, sz = np.cos(yaw), np.sin(yaw)
    cy, sy = np.cos(roll), np.sin(roll)
    cx, sx = np.cos(pitch), np.sin(pitch)
    rz = np.zeros((len(p), 3, 3))
    rz[:, 0, 0], rz[:, 0, 1], rz[:, 1, 0], rz[:, 1, 1], rz[:, 2, 2] = cz, -sz, sz, cz, 1
    ry = np.zeros((len(p), 3, 3))
    ry[:, 0, 0], ry[:, 0, 2], ry[:, 2, 0], ry[:, 2, 2], ry[:, 1, 1] = cy, sy, -sy, cy, 1
    rx = np.zeros((len(p), 3, 3))
    rx[:, 1, 1], rx[:, 1, 2], rx[:, 2, 1], rx[:, 2, 2], rx[:, 0, 0] = cx, -sx, sx, cx, 1
    rot = rz @ ry @ rx * s[:, None, None]
    m = np.zeros((len(p), 4, 4), np.float32)
    m[:, :3, :3] = rot
    m[:, :3, 3] = t
    m[:, 3, 3] = 1.0
    return np.ascontiguousarray(m.transpose(0, 2, 1)).reshape(-1, 16)  # column-major


class DoodadBatch:
    def __init__(self, ctx, mesh: GpuMesh, matrices: np.ndarray, tile=None):
        self.mesh, self.tile = mesh, tile
        self.count = len(matrices)
        self.buffer = ctx.buffer(np.ascontiguousarray(matrices, np.float32).tobytes())
        # the shadow pass's variant reads no normals: read_by pads what a variant does not read
        self.vao, self.line_vao = (VaoCache(lambda prog, ibo=ibo: ctx.vertex_array(
            prog, [(mesh.vbo, *read_by(prog, MESH_FORMAT, *MESH_ATTRS)), (self.buffer, "16f/i", "i_model")],
            index_buffer=ibo, index_element_size=4)) for ibo in (mesh.ibo, mesh.lbo))

    def release(self):
        self.vao.release()
        self.line_vao.release()
        self.buffer.release()


class DoodadSet(Source):
    """All resident doodad batches (a source: one instanced draw per (tile, model), no culling)."""

    name = "doodads"

    def __init__(self, ctx, programs):
        self.ctx, self.programs = ctx, programs
        self.batches: list[DoodadBatch] = []

    def add(self, mesh: GpuMesh, matrices: np.ndarray, tile=None):
        if len(matrices):
            self.batches.append(DoodadBatch(self.ctx, mesh, matrices, tile))

    def remove_tile(self, tile):
        for b in [b for b in self.batches if b.tile == tile]:
            b.release()
        self.batches = [b for b in self.batches if b.tile != tile]

    def draw(self, pass_, view) -> DrawCounts:
        import moderngl

        prog = pass_.program(self.programs, "doodad", view)
        lines = view.fill == "lines"
        out = DrawCounts()
        for b in self.batches:
            use_texture(self.ctx, b.mesh.texture, 0)
            if lines:  # the edge list: a line-list pipeline, not triangles in polygon line mode
                b.line_vao(prog).render(moderngl.LINES, instances=b.count)
            else:
                b.vao(prog).render(instances=b.count)
            out += DrawCounts(1, b.count, b.count * b.mesh.triangles)
        return out

    def release(self):
        for b in self.batches:
            b.release()
        self.batches = []
