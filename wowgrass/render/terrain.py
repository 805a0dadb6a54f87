"""Terrain: ADT arrays -> one GPU mesh per tile, its MTEX layers and MCAL alpha maps.

CPU part (:func:`build_terrain_arrays`, thread-safe, pure numpy) and GPU part
(:class:`TerrainTile`, main thread). Each MCNK contributes its 145 MCVT vertices (9x9 outer +
8x8 inner, interleaved rows) with MCNR normals; each of its 8x8 cells is the 4-triangle fan
around the inner vertex (formats.md 1.4), and cells in a low-res hole are left out of the index
buffer. Texture layers are one ``sampler2DArray`` per tile (one slice per MTEX name, resized to a
common size); alpha maps are a second array with one RGBA slice per chunk (R, G, B = layers 1..3).
Builds: any ADT v18 (1.12, 2.4.3, 3.3.5).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from wowgrass.formats.adt import VERTEX_ROWCOL

from .camera import BoxSet
from .grass import CMD_DTYPE, CommandRing  # DrawElementsIndirectCommand and its buffers, as grass has them
from .programs import VaoCache
from .sources import DrawCounts, Source

LAYER_SIZE = 256  # every MTEX texture is resized to this square for the texture array
ANISOTROPY = 4.0  # layer textures' anisotropic filtering (not on llvmpipe, where it costs minutes);
# on the H200 at 1920x1080 8x cost ~1 ms a frame over 1x (benchmarks/bench_render.py --variants)
VERTEX_FORMAT = "3f 3f 2f 1f 4f"
VERTEX_ATTRS = ("in_position", "in_normal", "in_uv", "in_chunk", "in_layers")
VERTEX_DTYPE = np.dtype([("pos", "<f4", 3), ("normal", "<f4", 3), ("uv", "<f4", 2),
                         ("chunk", "<f4"), ("layers", "<f4", 4)])


# (145,) cell offsets (south, east) of each MCVT vertex from the chunk's NW corner
ROWS, COLS = VERTEX_ROWCOL[:, 0], VERTEX_ROWCOL[:, 1]


def _fan_indices() -> np.ndarray:
    """(8, 8, 12) vertex indices (within a chunk) of each cell's four fan triangles."""
    r, c = np.meshgrid(np.arange(8), np.arange(8), indexing="ij")
    tl = r * 17 + c
    tr, bl, br, ctr = tl + 1, tl + 17, tl + 18, tl + 9
    # counter-clockwise seen from above (+Z) in X-north / Y-west space
    tris = [(ctr, tr, tl), (ctr, br, tr), (ctr, bl, br), (ctr, tl, bl)]
    return np.stack([np.stack(t, axis=-1) for t in tris], axis=2).reshape(8, 8, 12)


FAN = _fan_indices()


@dataclass
class TerrainArrays:
    """Everything a tile's terrain needs on the GPU, built off the GL thread."""

    vertices: np.ndarray  # (256*145,) VERTEX_DTYPE
    indices: np.ndarray  # (k,) u4, hole cells left out
    alpha: np.ndarray  # (256, 64, 64, 4) u1
    layers: np.ndarray  # (L, LAYER_SIZE, LAYER_SIZE, 4) u1, one per MTEX name (placeholders included)
    missing_textures: list[str] = field(default_factory=list)
    chunk_first: np.ndarray = None  # (256,) first index of each chunk's triangles in ``indices``
    chunk_count: np.ndarray = None  # (256,) indices per chunk (0 where the whole chunk is a hole)
    chunk_lo: np.ndarray = None  # (256, 3) chunk bounding boxes
    chunk_hi: np.ndarray = None

    @property
    def triangles(self) -> int:
        return len(self.indices) // 3


def placeholder_texture(name: str, size: int = LAYER_SIZE) -> np.ndarray:
    """A flat earthy colour derived from the name, for MTEX textures the data source lacks."""
    h = sum(name.lower().encode()) % 64
    rgb = np.array([90 + h, 80 + h // 2, 60], np.uint8)
    img = np.empty((size, size, 4), np.uint8)
    img[..., :3] = rgb
    img[..., 3] = 255
    return img


def resize_rgba(rgba: np.ndarray, size: int = LAYER_SIZE) -> np.ndarray:
    if rgba.shape[0] == size and rgba.shape[1] == size:
        return np.ascontiguousarray(rgba, np.uint8)
    from PIL import Image

    img = Image.fromarray(np.ascontiguousarray(rgba, np.uint8), "RGBA")
    return np.asarray(img.resize((size, size), Image.BILINEAR), np.uint8)


def build_terrain_arrays(tile, textures: dict[str, np.ndarray] | None = None) -> TerrainArrays:
    """Mesh + alpha + layer textures of an :class:`~wowgrass.formats.adt.AdtTile`.

    ``textures`` maps MTEX names to decoded RGBA (mip 0); names missing from it get a placeholder
    and are listed in ``missing_textures``.
    """
    textures = textures or {}
    v = np.zeros((256, 145), VERTEX_DTYPE)
    v["pos"] = tile.vertex_positions()
    n = np.asarray(tile.normals, np.float32) / 127.0
    norm = np.linalg.norm(n, axis=-1, keepdims=True)
    v["normal"] = np.where(norm > 1e-6, n / np.maximum(norm, 1e-6), np.array([0, 0, 1], np.float32))
    v["uv"][..., 0] = COLS[None, :] / 8.0  # u east (alpha map column), v south (alpha map row)
    v["uv"][..., 1] = ROWS[None, :] / 8.0
    v["chunk"] = np.arange(256, dtype=np.float32)[:, None]
    lt = np.asarray(tile.layer_texture, np.int64)
    nl = np.asarray(tile.n_layers, np.int64)
    exists = (np.arange(4)[None, :] < nl[:, None]) & (lt >= 0) & (lt < max(len(tile.textures), 1))
    v["layers"] = np.where(exists, lt, -1).astype(np.float32)[:, None, :]

    holes = tile.hole_cells()  # (256, 8, 8)
    idx = FAN[None, :, :, :] + (np.arange(256) * 145)[:, None, None, None]
    idx = idx[~holes].reshape(-1).astype(np.uint32)  # chunk-major: each chunk's indices are contiguous
    count = (~holes).reshape(256, 64).sum(axis=1).astype(np.int64) * 12
    first = np.r_[0, np.cumsum(count)[:-1]]

    alpha = np.zeros((256, 64, 64, 4), np.uint8)
    a = np.asarray(tile.alpha, np.uint8)
    alpha[..., 0], alpha[..., 1], alpha[..., 2] = a[:, 1], a[:, 2], a[:, 3]
    alpha[..., 3] = 255

    missing, layers = [], []
    for name in tile.textures or ["<none>"]:
        rgba = textures.get(name)
        if rgba is None:
            missing.append(name)
            rgba = placeholder_texture(name)
        layers.append(resize_rgba(rgba))
    return TerrainArrays(v.reshape(-1), idx, alpha, np.stack(layers), missing, first, count,
                         v["pos"].min(axis=1), v["pos"].max(axis=1))


class TerrainTile:
    """A tile's terrain on the GPU: VBO, IBO (holes cut), layer and alpha texture arrays."""

    def __init__(self, ctx, arrays: TerrainArrays):
        import moderngl

        self.arrays_triangles = arrays.triangles
        self.chunk_first, self.chunk_count = arrays.chunk_first, arrays.chunk_count
        self.chunk_lo, self.chunk_hi = arrays.chunk_lo, arrays.chunk_hi
        self.vbo = ctx.buffer(arrays.vertices.tobytes())
        self.ibo = ctx.buffer(arrays.indices.tobytes())
        self.vao = VaoCache(lambda prog: ctx.vertex_array(
            prog, [(self.vbo, VERTEX_FORMAT, *VERTEX_ATTRS)], index_buffer=self.ibo, index_element_size=4))
        n_layers = len(arrays.layers)
        self.layers = ctx.texture_array((LAYER_SIZE, LAYER_SIZE, n_layers), 4, arrays.layers.tobytes())
        self.layers.build_mipmaps()
        self.layers.filter = (moderngl.LINEAR_MIPMAP_LINEAR, moderngl.LINEAR)
        if "llvmpipe" not in ctx.info.get("GL_RENDERER", ""):  # llvmpipe: minutes per frame with it
            self.layers.anisotropy = ANISOTROPY
        self.alpha = ctx.texture_array((64, 64, 256), 4, arrays.alpha.tobytes())
        self.alpha.repeat_x = self.alpha.repeat_y = False
        self.alpha.filter = (moderngl.LINEAR, moderngl.LINEAR)

    def render(self, program, commands=None, first: int = 0, count: int = 0):
        """Draw the whole tile, or ``count`` indirect commands (visible chunks) from ``commands``."""
        self.layers.use(location=0)
        self.alpha.use(location=1)
        if commands is None:
            self.vao(program).render()
        else:
            self.vao(program).render_indirect(commands, count=count, first=first)

    def release(self):
        for obj in (self.vao, self.vbo, self.ibo, self.layers, self.alpha):
            obj.release()


class _ViewChunks:
    """One view's visible chunks of its last frame, their draws and command buffers."""

    def __init__(self, ctx):
        self.ring = CommandRing(ctx)
        self.sel = None
        self.indirect = None
        self.draws = []
        self.buf = None
        self.tris = 0


class TerrainSet(Source):
    """Resident terrain tiles, drawn chunk by chunk: the chunks inside the view frustum (and
    nearer than the far plane) become indirect commands, one ``glMultiDrawElementsIndirect`` per
    tile (GL 4.3; whole tiles otherwise). The command list is where terrain LOD (per-chunk index
    ranges of coarser meshes, geomorphing in the vertex shader) plugs in later."""

    name = "terrain"

    def __init__(self, ctx, programs=None, indirect: bool | None = None):
        self.ctx, self.programs = ctx, programs
        self.indirect = (ctx.version_code >= 430) if indirect is None else indirect
        self.tiles: dict = {}
        self._dirty = True
        self._views: dict[int, _ViewChunks] = {}

    def add(self, key, tile: TerrainTile):
        self.tiles[key] = tile
        self._dirty = True

    def remove(self, key):
        t = self.tiles.pop(key, None)
        if t is not None:
            t.release()
            self._dirty = True

    def _rebuild(self):
        ts = list(self.tiles.values())
        self._order = ts
        for v in self._views.values():
            v.sel = None  # the visible chunk set of the last frame (None: commands not written yet)
        if ts:
            lo = np.concatenate([t.chunk_lo for t in ts]).astype(np.float64)
            hi = np.concatenate([t.chunk_hi for t in ts]).astype(np.float64)
            self._boxes = BoxSet(lo, hi)
            cmds = np.zeros(256 * len(ts), CMD_DTYPE)
            cmds["count"] = np.concatenate([t.chunk_count for t in ts])
            cmds["first_index"] = np.concatenate([t.chunk_first for t in ts])
            cmds["instances"] = 1
            self._cmds = cmds
            self._drawable = cmds["count"] > 0
            self._tile_starts = np.arange(len(ts) + 1) * 256
        self._dirty = False

    def prepare(self, frame):
        for view in frame.all_views:
            self._select(view)

    def _select(self, view) -> _ViewChunks:
        """The visible chunks of ``view`` (chunks inside its frustum and nearer than its far plane).

        The indirect commands are rewritten only when the set of visible chunks changes (into the
        next buffer of a small ring, never one the GPU may still read); otherwise a frame is the
        culling test and one multi-draw per tile."""
        vs = self._views.get(view.slot)
        if vs is None:
            vs = self._views[view.slot] = _ViewChunks(self.ctx)
        if not self.tiles:
            vs.draws, vs.tris = [], 0
            return vs
        if self._dirty:
            self._rebuild()
        eye, far = view.camera.position, view.camera.far
        sel = self._boxes.visible(view.planes(), eye, far, mask=self._drawable)
        if vs.sel is None or vs.indirect != self.indirect or not np.array_equal(sel, vs.sel):
            vs.sel, vs.indirect = sel, self.indirect
            # front to back (nearest tile first, nearest chunk first within it): early depth
            # rejection of hidden terrain; the order is refreshed whenever the visible set changes
            tile = sel // 256
            d = np.einsum("ij,ij->j", self._boxes.centre[:, sel] - eye[:, None], self._boxes.centre[:, sel] - eye[:, None])
            nearest = np.full(len(self._order), np.inf)
            np.minimum.at(nearest, tile, d)
            rank = np.empty(len(nearest), np.int64)
            rank[np.argsort(nearest, kind="stable")] = np.arange(len(nearest))
            order = np.lexsort((d, rank[tile]))
            cmds = self._cmds[sel[order]]
            per_tile = np.bincount(tile, minlength=len(self._order))
            vs.draws, k0 = [], 0
            for i in np.argsort(nearest, kind="stable"):
                if per_tile[i]:
                    vs.draws.append((self._order[i], k0, int(per_tile[i])))
                    k0 += int(per_tile[i])
            vs.tris = int(cmds["count"].sum()) // 3
            if self.indirect and len(cmds):
                vs.ring.reserve(self._cmds.nbytes)
                vs.buf = vs.ring.write(cmds)
            else:  # whole tiles where a chunk of theirs is visible
                vs.tris = sum(t.arrays_triangles for t, _, _ in vs.draws)
        return vs

    def draw(self, pass_, view) -> DrawCounts:
        """Draw the visible chunks of ``view`` (one draw per tile with any)."""
        vs = self._views.get(view.slot)
        if vs is None or self._dirty:
            vs = self._select(view)
        prog = pass_.program(self.programs, "terrain")
        for t, k0, n in vs.draws:
            if self.indirect:
                t.render(prog, vs.buf, k0, n)
            else:
                t.render(prog)
        return DrawCounts(len(vs.draws), 0, vs.tris)

    def release(self):
        for t in self.tiles.values():
            t.release()
        self.tiles.clear()
        for v in self._views.values():
            v.ring.release()
        self._views.clear()
