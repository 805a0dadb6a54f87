"""Static model meshes on the GPU (grass models and MDDF doodads share this).

:class:`MeshData` is the CPU side (built off the GL thread from an M2 ``RenderMesh`` and its
decoded BLP, or synthesised for tests); :class:`GpuMesh` uploads it once: one interleaved VBO
(``3f 3f 2f``), one u32 index buffer and one RGBA texture with mipmaps.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

MESH_FORMAT = "3f 3f 2f"
MESH_ATTRS = ("in_position", "in_normal", "in_uv")
GRASS_MESH_FORMAT = "4u4"  # in_mesh: position float bits + half2 UV
CMD_DTYPE = np.dtype([("count", "<u4"), ("instances", "<u4"), ("first_index", "<u4"),
                      ("base_vertex", "<i4"), ("base_instance", "<u4")])  # DrawElementsIndirectCommand


@dataclass
class MeshData:
    name: str
    positions: np.ndarray  # (n, 3) f4 model space, Z up
    normals: np.ndarray  # (n, 3) f4
    uvs: np.ndarray  # (n, 2) f4
    indices: np.ndarray  # (m,) u4
    texture: np.ndarray | None = None  # (h, w, 4) u1 RGBA, mip 0
    texture_name: str | None = None
    texture_missing: bool = False
    _upload: tuple | None = field(default=None, repr=False, compare=False)

    @property
    def z_min(self) -> float:
        used = self.positions[self.indices] if len(self.indices) else self.positions
        return float(used[:, 2].min()) if len(used) else 0.0

    @property
    def z_max(self) -> float:
        used = self.positions[self.indices] if len(self.indices) else self.positions
        return float(used[:, 2].max()) if len(used) else 0.0

    @property
    def radius_xy(self) -> float:
        return float(np.hypot(self.positions[:, 0], self.positions[:, 1]).max()) if len(self.positions) else 0.0

    @property
    def triangles(self) -> int:
        return len(self.indices) // 3

    @classmethod
    def from_render_mesh(cls, name: str, mesh, texture: np.ndarray | None = None,
                         texture_name: str | None = None) -> MeshData:
        """From :meth:`wowgrass.formats.m2.M2Model.render_mesh` (all batches, one texture)."""
        n = len(mesh.positions)
        # a few models carry UVs in the "flipped" (OpenGL) convention; BLP rows are top-first
        return cls(
            name=name,
            positions=np.ascontiguousarray(mesh.positions, np.float32).reshape(n, 3),
            normals=np.ascontiguousarray(mesh.normals, np.float32).reshape(n, 3),
            uvs=np.ascontiguousarray(mesh.uv0, np.float32).reshape(n, 2),
            indices=np.ascontiguousarray(mesh.indices, np.uint32),
            texture=texture,
            texture_name=texture_name,
            texture_missing=texture is None,
        )

    def lite_split(self) -> tuple[np.ndarray, int]:
        """The indices reordered so that a prefix is a lighter mesh, and that prefix's length.

        Grass models are a few crossing cards (quads); the lighter mesh (the outer LOD ring's)
        keeps the largest cards that make up at least half the area. Cards are the connected parts
        of the mesh, joined through shared vertex *positions* (a card's triangles may not share
        indices). A model of one part has no lighter mesh: the prefix is all of it."""
        tri = self.indices.reshape(-1, 3).astype(np.int64)
        if len(tri) < 2:
            return self.indices, len(self.indices)
        # weld vertices by position, then label triangles by union-find over their corners
        _, weld = np.unique(np.round(self.positions, 5), axis=0, return_inverse=True)
        corner = weld.reshape(-1)[tri]
        parent = np.arange(corner.max() + 1)

        def root(i):
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        for a, b, c in corner.tolist():  # once per model at load, a few dozen triangles
            ra, rb, rc = root(a), root(b), root(c)
            parent[rb] = ra
            parent[root(rc)] = ra
        part = np.array([root(a) for a in corner[:, 0].tolist()])
        labels, part = np.unique(part, return_inverse=True)
        if len(labels) < 2:
            return self.indices, len(self.indices)
        p = self.positions[tri]
        area = 0.5 * np.linalg.norm(np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0]), axis=1)
        part_area = np.bincount(part, area, minlength=len(labels))
        by_size = np.argsort(-part_area, kind="stable")
        n_keep = int(np.searchsorted(np.cumsum(part_area[by_size]), 0.5 * part_area.sum() - 1e-9) + 1)
        n_keep = min(n_keep, len(labels) - 1)  # lighter means at least one card fewer
        rank = np.empty(len(labels), np.int64)
        rank[by_size] = np.arange(len(labels))
        order = np.argsort(rank[part] >= n_keep, kind="stable")  # kept cards first, order kept within
        lite = int((rank[part] < n_keep).sum()) * 3
        return np.ascontiguousarray(tri[order].reshape(-1), np.uint32), lite

    def upload_arrays(self) -> tuple[bytes, bytes, bytes, bytes, int, np.ndarray]:
        """What :class:`GpuMesh` uploads (interleaved VBO, grass VBO, indices, their edges, lite
        count, RGBA texture), built once and kept: the tile worker calls this so the GL thread
        only uploads."""
        if self._upload is None:
            indices, lite = self.lite_split()
            tex = self.texture
            if tex is None:  # missing texture: visible magenta-free neutral grey
                tex = np.full((4, 4, 4), 160, np.uint8)
            indices = np.ascontiguousarray(indices, np.uint32)
            self._upload = (self.interleaved(), self.packed_pos_uv(), indices.tobytes(), edge_indices(indices).tobytes(),
                            lite, np.ascontiguousarray(tex, np.uint8))
        return self._upload

    @property
    def upload_bytes(self) -> int:
        vbo, grass_vbo, ibo, lbo, _, tex = self.upload_arrays()
        return len(vbo) + len(grass_vbo) + len(ibo) + len(lbo) + tex.nbytes * 4 // 3

    def interleaved(self) -> bytes:
        v = np.zeros(len(self.positions), [("p", "<f4", 3), ("n", "<f4", 3), ("t", "<f4", 2)])
        v["p"], v["n"], v["t"] = self.positions, self.normals, self.uvs
        return v.tobytes()

    def packed_pos_uv(self) -> bytes:
        """Position and UV only, 16 bytes a vertex read as one ``uvec4``: xyz float bits and the
        UV as two halves (``unpackHalf2x16``; u in the low 16 bits). All the grass shader reads."""
        v = np.zeros(len(self.positions), [("p", "<f4", 3), ("t", "<f2", 2)])
        v["p"], v["t"] = self.positions, self.uvs
        return v.tobytes()


def crossed_quads(width: float = 1.0, height: float = 0.6, n: int = 3,
                  rows=(0.0, 0.15, 0.45, 0.75, 1.0)) -> MeshData:
    """A synthetic grass clump: ``n`` vertical quads crossing at the origin (texture: blade mask).

    Each quad has vertex rows at the fractions ``rows`` of its height (one at the grass reference's root
    fraction, 0.15), so the per-vertex sway bends it instead of shearing it as one plane.
    """
    pos, uv, idx = [], [], []
    rows = np.asarray(rows, np.float64)
    for k in range(n):
        a = np.pi * k / n
        dx, dy = np.cos(a) * width / 2, np.sin(a) * width / 2
        for j, t in enumerate(rows):
            pos += [(-dx, -dy, t * height), (dx, dy, t * height)]
            uv += [(0.0, 1.0 - t), (1.0, 1.0 - t)]
            if j:
                b = len(pos) - 4  # previous row's left vertex
                idx += [b, b + 1, b + 3, b, b + 3, b + 2]
    positions = np.array(pos, np.float32)
    normals = np.zeros_like(positions)
    normals[:, 2] = 1.0
    return MeshData("synthetic/crossed_quads", positions, normals, np.array(uv, np.float32),
                    np.array(idx, np.uint32), texture=blade_texture(), texture_name="synthetic/blades")


def blade_texture(size: int = 64, blades: int = 7, seed: int = 1) -> np.ndarray:
    """RGBA grass blades on transparent ground: tapered vertical strokes, green, alpha 0/255."""
    rng = np.random.default_rng(seed)
    img = np.zeros((size, size, 4), np.uint8)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    t = 1.0 - yy / (size - 1)  # 0 at the bottom row (root), 1 at the top row (tip)
    for _ in range(blades):
        x0 = rng.uniform(0.15, 0.85) * size
        lean = rng.uniform(-0.25, 0.25) * size
        top = rng.uniform(0.6, 1.0)
        half_w = (1.0 - t / top) * size * 0.045 + 0.4
        cx = x0 + lean * t * t
        m = (np.abs(xx - cx) <= half_w) & (t <= top)
        g = (70 + 110 * t).astype(np.uint8)
        img[m, 0] = (30 + 40 * t[m]).astype(np.uint8)
        img[m, 1] = g[m]
        img[m, 2] = 25
        img[m, 3] = 255
    return img


def placeholder_texture(blades: np.ndarray) -> np.ndarray:
    """The blade mask in a flat straw colour: a stand-in for a grass model the data lacks."""
    out = blades.copy()
    out[..., :3] = np.array([196, 170, 90], np.uint8)
    return out


class GpuMesh:
    """A :class:`MeshData` uploaded once (VBO, IBO, mipmapped texture)."""

    def __init__(self, ctx, data: MeshData):
        import moderngl

        self.name = data.name
        self.z_min, self.z_max, self.radius_xy = data.z_min, data.z_max, data.radius_xy
        self.index_count = int(len(data.indices))
        self.triangles = data.triangles
        from .memory import gpu_memory

        mem = gpu_memory(ctx)
        vbo, grass_vbo, ibo, lbo, self.lite_index_count, tex = data.upload_arrays()
        self.vbo = mem.track(ctx.buffer(vbo), "models")
        # grass reads no normals; one attribute instead of two (see grass.glsl)
        self.grass_vbo = mem.track(ctx.buffer(grass_vbo), "models")
        self.grass_format = GRASS_MESH_FORMAT
        # a prefix of the indices is the lighter mesh of the outer LOD ring (lite_split)
        self.ibo = mem.track(ctx.buffer(ibo), "models")
        self.lbo = mem.track(ctx.buffer(lbo), "models")  # lines views (the lite prefix doubles too)
        # the bounding sphere about the model's axis (the GPU culling's per-instance test)
        self.bound_z = 0.5 * (self.z_min + self.z_max)
        self.bound_radius = float(np.hypot(self.radius_xy, 0.5 * (self.z_max - self.z_min)))
        self.texture = mem.track(ctx.texture((tex.shape[1], tex.shape[0]), 4, tex.tobytes()), "models", mipmaps=True)
        self.texture.build_mipmaps()
        self.texture.filter = (moderngl.LINEAR_MIPMAP_LINEAR, moderngl.LINEAR)
        self.texture.repeat_x = self.texture.repeat_y = False

    def release(self):
        for obj in (self.vbo, self.grass_vbo, self.ibo, self.lbo, self.texture):
            obj.release()


def edge_indices(triangles: np.ndarray) -> np.ndarray:
    """Each triangle's three edges as a line list (a b, b c, c a: six indices a triangle, shared
    edges repeated): the line index buffer beside a triangle index buffer whose draws are ranges
    chosen on the GPU. Triangle indices [first, first + count) are the line indices [2 first,
    2 first + 2 count), so a triangle draw command becomes its line command by doubling both
    (:func:`line_commands`)."""
    t = np.asarray(triangles, np.uint32).reshape(-1, 3)
    return np.ascontiguousarray(t[:, [0, 1, 1, 2, 2, 0]]).ravel()


def line_commands(cmds: np.ndarray) -> np.ndarray:
    """DrawElementsIndirect commands over a triangle index buffer as the same draws of its
    :func:`edge_indices` buffer (count and first index doubled)."""
    out = np.array(cmds, copy=True)
    out["count"] *= 2
    out["first_index"] *= 2
    return out


def line_indices(triangles: np.ndarray) -> np.ndarray:
    """The edges of a triangle list as a line list (each edge once, as two indices): the index
    buffer a wireframe view draws with a line-list pipeline instead of a triangle one."""
    t = np.asarray(triangles, np.uint32).reshape(-1, 3)
    e = np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]])
    e = np.sort(e, axis=1)
    e = e[e[:, 0] != e[:, 1]]
    return np.unique(e, axis=0).astype(np.uint32).ravel()


def plane_grid(cells: int, size: float) -> tuple[np.ndarray, np.ndarray]:
    """A square tile of ``cells`` x ``cells`` quads over [0, size]^2: (n, 2) f4 vertex positions
    (row-major, X fastest) and u4 triangle indices. Every quad is split along its low-low to
    high-high diagonal, so a grid whose odd vertices are moved onto the 2x coarser grid (a fully
    geomorphed tile) lays exactly the coarser tile's triangles."""
    n = int(cells)
    if n < 1:
        raise ValueError(f"a plane needs at least one cell, got {n}")
    t = np.arange(n + 1, dtype=np.float64) * (size / n)
    x, y = np.meshgrid(t, t)
    pos = np.column_stack([x.ravel(), y.ravel()]).astype(np.float32)
    i, j = np.meshgrid(np.arange(n), np.arange(n))
    a = (j * (n + 1) + i).ravel()
    b, c, d = a + 1, a + n + 2, a + n + 1
    tris = np.column_stack([a, b, c, a, c, d]).astype(np.uint32).ravel()
    return pos, tris


def blade_strip(segments: int, tip_taper: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
    """The lesson's segmented grass blade: 2(N+1) vertices (x across, y up, height_t) and 2N
    triangles; unit width and height, tapered toward the tip by ``tip_taper``."""
    n = int(segments)
    if n < 1:
        raise ValueError(f"a blade needs at least one segment, got {n}")
    t = np.arange(n + 1, dtype=np.float32) / n
    half_w = 0.5 * (1.0 - t * tip_taper)
    verts = np.zeros((n + 1, 2, 3), np.float32)
    verts[:, 0, 0], verts[:, 1, 0] = -half_w, half_w
    verts[:, :, 1] = t[:, None]
    verts[:, :, 2] = t[:, None]
    k = np.arange(n) * 2
    tris = np.column_stack([k, k + 1, k + 3, k, k + 3, k + 2]).astype(np.uint32).ravel()
    return verts.reshape(-1, 3), tris
