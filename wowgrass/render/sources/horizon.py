"""The horizon: the map's WDL drawn wherever no ADT terrain is resident, out to the whole map,
under the fog, as the clients draw theirs.

A WDL (:class:`~wowgrass.formats.wdl.WdlFile`) holds every tile's 17x17 chunk corners and 16x16
chunk centres; :func:`horizon_mesh` makes each chunk the four triangles around its centre (MAHO
holes left out) with normals from the heights, every tile of the map in one vertex and one index
buffer (24-byte vertices: a 700-tile continent is 9 MB of vertices, 8.6 MB of indices). The
:class:`Horizon` source draws them in one call; a 64x64 mask texture, rewritten when the
terrain's resident set changes (``TerrainSet.version``), tells the vertex shader which tiles the
ADT terrain covers (those triangles are moved out of the clip volume), so the horizon fills in
beyond the far tiles, and where a tile has not arrived yet. Its colour is the resident far
tiles' mean colour, lit by the sun; it casts no shadow (the sun's map covers 120 units).
"""

from __future__ import annotations

import numpy as np

from wowgrass.game.coords import tile_origin

from ..constants import CHUNK_SIZE
from ..gl.memory import gpu_memory
from ..gl.meshes import edge_indices
from ..gl.programs import VaoCache, read_by
from ..gl.state import set_uniform, use_texture
from . import DrawCounts, Source

HORIZON_DTYPE = np.dtype([("pos", "<f4", 3), ("normal", "<f2", 4), ("tile", "<f4")])  # tile: row * 64 + col
assert HORIZON_DTYPE.itemsize == 24
HORIZON_FORMAT = "3f 4f2 f"
HORIZON_ATTRS = ("in_position", "in_normal", "in_tile")
HORIZON_UNIT = 6  # texture unit of the mask (gl.programs.LINK_TIME_UNIFORMS)
DEFAULT_COLOUR = (0.33, 0.42, 0.2)  # before any far tile gives its colour: a grassy brown-green


def _fan() -> np.ndarray:
    """(16, 16, 12) vertex indices (within a tile's 545) of each chunk's four triangles around its
    centre, counter-clockwise from above as the terrain's fans (render/sources/terrain.py)."""
    i, j = np.meshgrid(np.arange(16), np.arange(16), indexing="ij")
    tl = i * 17 + j
    tr, bl, br, ctr = tl + 1, tl + 17, tl + 18, 289 + i * 16 + j
    tris = [(ctr, tr, tl), (ctr, br, tr), (ctr, bl, br), (ctr, tl, bl)]
    return np.stack([np.stack(t, axis=-1) for t in tris], axis=2).reshape(16, 16, 12)


FAN = _fan()


def horizon_mesh(wdl) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(vertices (n * 545,) HORIZON_DTYPE, indices (k,) u4, triangles (n,) per tile) of every tile
    of ``wdl``, in its order."""
    n = len(wdl)
    cols, rows = wdl.tiles[:, 0].astype(np.float64), wdl.tiles[:, 1].astype(np.float64)
    x0, y0 = tile_origin(cols, rows)  # each tile's north-west corner
    outer = wdl.outer.astype(np.float64)  # (n, 17, 17): rows south, columns east
    inner = wdl.inner.astype(np.float64)
    k = np.arange(17, dtype=np.float64) * CHUNK_SIZE
    c = (np.arange(16, dtype=np.float64) + 0.5) * CHUNK_SIZE
    v = np.zeros((n, 545), HORIZON_DTYPE)
    ox = x0[:, None, None] - k[None, :, None]
    oy = y0[:, None, None] - k[None, None, :]
    v["pos"][:, :289, 0] = np.broadcast_to(ox, (n, 17, 17)).reshape(n, -1)
    v["pos"][:, :289, 1] = np.broadcast_to(oy, (n, 17, 17)).reshape(n, -1)
    v["pos"][:, :289, 2] = outer.reshape(n, -1)
    v["pos"][:, 289:, 0] = np.broadcast_to(x0[:, None, None] - c[None, :, None], (n, 16, 16)).reshape(n, -1)
    v["pos"][:, 289:, 1] = np.broadcast_to(y0[:, None, None] - c[None, None, :], (n, 16, 16)).reshape(n, -1)
    v["pos"][:, 289:, 2] = inner.reshape(n, -1)
    # normals (X north, Y west, Z up): the height's slope southwards (+row) and eastwards (+col)
    d_row = np.gradient(outer, CHUNK_SIZE, axis=1)
    d_col = np.gradient(outer, CHUNK_SIZE, axis=2)
    in_row = (outer[:, 1:, :-1] + outer[:, 1:, 1:] - outer[:, :-1, :-1] - outer[:, :-1, 1:]) / (2 * CHUNK_SIZE)
    in_col = (outer[:, :-1, 1:] + outer[:, 1:, 1:] - outer[:, :-1, :-1] - outer[:, 1:, :-1]) / (2 * CHUNK_SIZE)
    # z = h(X, Y) with dX = -d(row), dY = -d(col): the normal is (-dz/dX, -dz/dY, 1) = (d_row, d_col, 1)
    nrm = np.concatenate([np.stack([d_row, d_col, np.ones_like(d_row)], -1).reshape(n, 289, 3),
                          np.stack([in_row, in_col, np.ones_like(in_row)], -1).reshape(n, 256, 3)], axis=1)
    nrm /= np.linalg.norm(nrm, axis=-1, keepdims=True)
    v["normal"][..., :3] = nrm
    v["tile"] = (wdl.tiles[:, 1] * 64 + wdl.tiles[:, 0]).astype(np.float32)[:, None]
    keep = ~wdl.hole_chunks()  # (n, 16, 16) [chunk_y, chunk_x] = [row, col]
    base = (np.arange(n, dtype=np.int64) * 545)[:, None, None, None]
    idx = (FAN[None] + base)[keep].reshape(-1).astype(np.uint32)
    return v.reshape(-1), idx, keep.reshape(n, -1).sum(axis=1) * 4


class Horizon(Source):
    """The WDL of the whole map, drawn where ``terrain`` (a :class:`~.terrain.TerrainSet`) has no
    tile: one draw, nothing per frame on the CPU but a version check (a colour pass only)."""

    name = "horizon"

    def __init__(self, ctx, programs, wdl, terrain):
        import moderngl

        self.ctx, self.programs, self.terrain, self.wdl = ctx, programs, terrain, wdl
        mem = gpu_memory(ctx)
        v, idx, self._tile_triangles = horizon_mesh(wdl)
        self.index_count = len(idx)
        self.vbo = mem.track(ctx.buffer(v.tobytes() or bytes(HORIZON_DTYPE.itemsize)), "horizon")
        self.ibo = mem.track(ctx.buffer(idx.tobytes() or bytes(12)), "horizon")
        self.lbo = None  # edge list, made when a lines view first asks
        self.mask = mem.track(ctx.texture((64, 64), 1), "horizon")
        self.mask.filter = (moderngl.NEAREST, moderngl.NEAREST)
        self._mask_version = None
        self.colour = DEFAULT_COLOUR
        self.triangles = int(self._tile_triangles.sum())  # those drawn (tiles not under ADT terrain)
        self.vao = VaoCache(lambda prog: self._vao(prog, self.ibo))
        self.line_vao = VaoCache(lambda prog: self._vao(prog, self._lines()))

    def _vao(self, prog, index_buffer):
        return self.ctx.vertex_array(prog, [(self.vbo, *read_by(prog, HORIZON_FORMAT, *HORIZON_ATTRS))],
                                     index_buffer=index_buffer, index_element_size=4)

    def _lines(self):
        if self.lbo is None:
            idx = horizon_mesh(self.wdl)[1]
            self.lbo = gpu_memory(self.ctx).track(self.ctx.buffer(edge_indices(idx).tobytes() or bytes(24)), "horizon")
        return self.lbo

    def covered(self) -> np.ndarray:
        """(64, 64) bool [row][col]: the tiles the terrain draws (the horizon leaves them out)."""
        m = np.zeros((64, 64), bool)
        keys = np.array(list(self.terrain.tiles), np.int64).reshape(-1, 2)
        ok = (keys >= 0).all(axis=1) & (keys < 64).all(axis=1)
        m[keys[ok, 1], keys[ok, 0]] = True
        return m

    def prepare(self, frame):
        """The mask and colour again when the terrain's resident set changed (not every frame)."""
        if self.terrain.version == self._mask_version:
            return
        self._mask_version = self.terrain.version
        covered = self.covered()
        self.mask.write((covered * np.uint8(255)).tobytes())
        drawn = ~covered[self.wdl.tiles[:, 1], self.wdl.tiles[:, 0]]
        self.triangles = int(self._tile_triangles[drawn].sum())
        mean = self.terrain.far_mean_colour()
        if mean is not None:
            self.colour = tuple(float(c) for c in mean)

    def warm_programs(self, pass_, view) -> list:
        return [(pass_.program(self.programs, "horizon", view), "opaque")] if pass_.colour else []

    def draw(self, pass_, view) -> DrawCounts:
        import moderngl

        if not pass_.colour or not self.index_count:  # the sun's map covers 120 units: no shadows here
            return DrawCounts()
        if self._mask_version is None:  # drawn without prepare (tests, tools)
            self.prepare(None)
        prog = pass_.program(self.programs, "horizon", view)
        set_uniform(prog, "uHorizonColour", self.colour)
        use_texture(self.ctx, self.mask, HORIZON_UNIT)
        if view.fill == "lines":
            self.line_vao(prog).render(moderngl.LINES)
        else:
            self.vao(prog).render()
        return DrawCounts(1, 0, self.triangles)

    def release(self):
        self.vao.release()
        self.line_vao.release()
        for obj in (self.vbo, self.ibo, self.lbo, self.mask):
            if obj is not None:
                obj.release()
        self.vbo = self.ibo = self.lbo = self.mask = None
