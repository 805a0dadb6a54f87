"""Terrain: ADT arrays -> a tile's mesh with five LOD index sets, its MTEX layers and MCAL alpha maps.

CPU part (:func:`build_terrain_arrays`, thread-safe, pure numpy) and GPU part
(:class:`TerrainSet` over a :class:`TerrainArena` shared by all resident tiles, main thread).
Each MCNK contributes its 145 MCVT vertices (9x9 outer + 8x8 inner, interleaved rows) with MCNR
normals. Level 0 draws each of its 8x8 cells as the 4-triangle fan around the inner vertex
(formats.md 1.4); levels 1-4 draw the outer vertices as grids of 9x9, 5x5, 3x3 and 2x2 (two
triangles a cell, the north-west/south-east diagonal). Texture layers are one ``sampler2DArray``
(one slice per MTEX name, resized to a common size, shared by the tiles that use it); alpha maps
a second one, a 1024x1024 atlas slice per tile of its 16x16 chunks' 64x64 maps (R, G, B =
layers 1..3, A = the MCSH shadow bit, drawn with ``--mcsh``). Builds: any ADT v18 (1.12, 2.4.3,
3.3.5).

Cracks and geomorphing (docs/view.md, "Terrain LOD"):

* Vertex XY comes from the vertex's index on one map-wide grid (half a cell per step), never from
  the chunk's own stored position: MCNK positions are float32 and neighbours disagree by up to
  0.0015 units on a shared edge, which left pixel-wide seams along chunk borders. Outer heights
  that two chunks share are made identical too. The vertex shader computes XY from the grid index.
* Each vertex is *odd* on exactly one level's grid (the inner vertices on level 0, every other
  outer vertex on level 1, ...; chunk corners never). Over the last 20% of that level's distance
  band it slides onto its even neighbour (``morph_grid`` of shaders/geomorph.glsl toward lower
  grid indices, with the neighbour's height and normal), so at the band's end the mesh is exactly
  the next level's mesh (degenerate triangles included) and switching index sets changes nothing.
  A chunk next to a coarser one meets it on the coarser grid's vertices: no T-junctions.
* A coarse cell is a hole when its fine cell at the odd-odd corner is (the one whose image is the
  whole coarse cell once the odd vertices have collapsed), so holes do not pop either.

LOD choice: a compute pass (``shaders/terrain_lod.glsl``) reads every resident chunk's box and
per-level index ranges, tests the frustum and the view distance, picks the level from the
distance to the box and writes that chunk's ``DrawElementsIndirectCommand`` (count 0 when
culled); one ``glMultiDrawElementsIndirect`` draws every resident chunk. Nothing is read back
and the CPU's work per frame does not grow with the resident tiles. A compute pass rather than a
vertex-shader decision because the triangles saved are the point (a vertex shader can only
collapse vertices, not drop them). GL < 4.3: each tile's level 0, morphed by the same distances
(a vertex collapses onto its neighbour's unmorphed position, so far away, where two levels'
vertices have both collapsed, the fans keep thin slivers the levels do not have).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from wowgrass.formats.adt import UNIT_SIZE, VERTEX_ROWCOL, ZEROPOINT

from ..gl.memory import gpu_memory
from ..gl.state import bind_storage, set_uniform, use_texture
from ..gl.meshes import CMD_DTYPE, edge_indices  # DrawElementsIndirectCommand, as grass has it
from ..gl.programs import VaoCache, load_program, read_by
from ..gl.readback import Readback
from . import DrawCounts, Source

LAYER_SIZE = 256  # every MTEX texture is resized to this square for the texture array
LAYER_LEVELS = LAYER_SIZE.bit_length()  # its mipmap levels, down to 1x1
ANISOTROPY = 4.0  # layer textures' anisotropic filtering (not on llvmpipe, where it costs minutes);
# on the H200 at 1920x1080 8x cost ~1 ms a frame over 1x (benchmarks/bench_render.py --variants)
VERTEX_FORMAT = "3f 3f 2f 1f 4f 2f 4f 1f"
VERTEX_ATTRS = ("in_position", "in_normal", "in_uv", "in_chunk", "in_layers", "in_grid", "in_morph", "in_level")
# pos: X, Y for the CPU's boxes (the shader computes them from grid), Z the height
VERTEX_DTYPE = np.dtype([("pos", "<f4", 3), ("normal", "<f4", 3), ("uv", "<f4", 2),
                         ("chunk", "<f4"), ("layers", "<f4", 4), ("grid", "<f4", 2),
                         ("morph", "<f4", 4), ("level", "<f4")])

LEVELS = 5  # 0: fans of 145 vertices; 1..4: grids of 9x9, 5x5, 3x3, 2x2 outer vertices
# Where each level's distance band ends (world units; level 4 has no end). A chunk takes the level
# of the band its box's nearest point is in; a vertex morphs over the last 20% of its level's band.
# No cracks needs a chunk's neighbours to be at most one level coarser and not yet morphing where
# they meet it: bands 1-3 wider than 1.25x a chunk's box diagonal (47 units in XY, height scaled).
LOD_BANDS = (40.0, 160.0, 400.0, 900.0)
LOD_Z_SCALE = 0.5  # heights count half in the LOD distance: a cliff chunk's box stays small
HALF_UNIT = UNIT_SIZE / 2.0  # one step of the map-wide vertex grid (inner vertices sit on odd steps)

# (145,) cell offsets (south, east) of each MCVT vertex from the chunk's NW corner
ROWS, COLS = VERTEX_ROWCOL[:, 0], VERTEX_ROWCOL[:, 1]
_OUTER = np.flatnonzero((ROWS % 1 == 0))  # the 81 outer vertices, row-major
_VID = np.full((9, 9), -1, np.int64)  # outer (row, col) -> MCVT index
_VID[ROWS[_OUTER].astype(int), COLS[_OUTER].astype(int)] = _OUTER


def _vertex_levels() -> tuple[np.ndarray, np.ndarray]:
    """(145,) the level on whose grid each vertex is odd (4: a chunk corner, never) and (145,) the
    MCVT index of the vertex it collapses onto (lower grid indices, as ``morph_grid``)."""
    level = np.full(145, 4, np.int64)
    target = np.arange(145)
    inner = ROWS % 1 != 0
    level[inner] = 0
    target[inner] = _VID[np.floor(ROWS[inner]).astype(int), np.floor(COLS[inner]).astype(int)]
    r, c = ROWS[_OUTER].astype(int), COLS[_OUTER].astype(int)
    for lv in (3, 2, 1):  # level lv's grid steps 2**(lv-1) cells
        s = 1 << (lv - 1)
        on = (r % s == 0) & (c % s == 0)
        odd = on & (((r // s) % 2 == 1) | ((c // s) % 2 == 1))
        level[_OUTER[odd]] = lv
        target[_OUTER[odd]] = _VID[r[odd] - s * ((r[odd] // s) % 2), c[odd] - s * ((c[odd] // s) % 2)]
    return level, target


VERTEX_LEVEL, MORPH_TARGET = _vertex_levels()


def _fan_indices() -> np.ndarray:
    """(8, 8, 12) vertex indices (within a chunk) of each cell's four fan triangles."""
    r, c = np.meshgrid(np.arange(8), np.arange(8), indexing="ij")
    tl = r * 17 + c
    tr, bl, br, ctr = tl + 1, tl + 17, tl + 18, tl + 9
    # counter-clockwise seen from above (+Z) in X-north / Y-west space
    tris = [(ctr, tr, tl), (ctr, br, tr), (ctr, bl, br), (ctr, tl, bl)]
    return np.stack([np.stack(t, axis=-1) for t in tris], axis=2).reshape(8, 8, 12)


def _grid_indices(level: int) -> np.ndarray:
    """(n, n, 6) vertex indices of the level's n x n cells (two triangles each, the NW-SE diagonal:
    the fan's triangles once its centre has collapsed onto the NW corner, same winding)."""
    s = 1 << (level - 1)
    n = 8 // s
    r, c = np.meshgrid(np.arange(n) * s, np.arange(n) * s, indexing="ij")
    tl, tr, bl, br = _VID[r, c], _VID[r, c + s], _VID[r + s, c], _VID[r + s, c + s]
    return np.stack([tl, br, tr, tl, bl, br], axis=-1)


FAN = _fan_indices()
LEVEL_CELLS = [FAN] + [_grid_indices(lv) for lv in range(1, LEVELS)]


def level_holes(holes: np.ndarray) -> list[np.ndarray]:
    """Per level, (256, n, n) hole cells from level 0's (256, 8, 8): a coarse cell is a hole when
    its odd-odd fine cell is (the fine cell that becomes the whole coarse cell as the morph ends)."""
    out = [holes, holes]
    for _ in range(2, LEVELS):
        out.append(out[-1][:, 1::2, 1::2])
    return out


@dataclass
class TerrainArrays:
    """Everything a tile's terrain needs on the GPU, built off the GL thread."""

    vertices: np.ndarray  # (256*145,) VERTEX_DTYPE
    indices: np.ndarray  # (k,) u4: level 0 of all chunks, then level 1, ... (hole cells left out)
    alpha: np.ndarray  # (256, 64, 64, 4) u1
    layers: np.ndarray  # (L, LAYER_SIZE, LAYER_SIZE, 4) u1, one per MTEX name (placeholders included)
    missing_textures: list[str] = field(default_factory=list)
    layer_names: list[str] = field(default_factory=list)  # the MTEX name of each of ``layers``
    lod_first: np.ndarray = None  # (256, LEVELS) first index of each chunk's triangles per level
    lod_count: np.ndarray = None  # (256, LEVELS) indices per chunk and level (0 where all holes)
    chunk_lo: np.ndarray = None  # (256, 3) chunk bounding boxes
    chunk_hi: np.ndarray = None

    _atlas: bytes | None = field(default=None, repr=False)
    _edges: np.ndarray | None = field(default=None, repr=False)

    @property
    def triangles(self) -> int:
        """Triangles of the full-detail mesh (level 0)."""
        return int(self.lod_count[:, 0].sum()) // 3

    def atlas(self) -> bytes:
        """The alpha maps as one ATLAS x ATLAS slice (16 x 16 chunks), built once (the tile worker
        calls this, off the GL thread)."""
        if self._atlas is None:
            a = self.alpha.reshape(16, 16, 64, 64, 4).transpose(0, 2, 1, 3, 4)
            self._atlas = a.reshape(ATLAS, ATLAS, 4).tobytes()
        return self._atlas

    def edges(self) -> np.ndarray:
        """:func:`~.meshes.edge_indices` of ``indices`` (the lines views'), built once (worker)."""
        if self._edges is None:
            self._edges = edge_indices(self.indices)
        return self._edges


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


def map_grid(tile) -> np.ndarray:
    """(256, 145, 2) every vertex's (column, row) on the map-wide half-cell grid (east, south from
    the map's north-west corner; whole numbers, so exact in float32). From the chunks' stored
    positions rounded to the grid: equal for every chunk and tile sharing a vertex."""
    pos = np.asarray(tile.positions, np.float64)
    row0 = np.round((ZEROPOINT - pos[:, 0]) / HALF_UNIT)
    col0 = np.round((ZEROPOINT - pos[:, 1]) / HALF_UNIT)
    out = np.empty((256, 145, 2), np.float64)
    out[..., 0] = col0[:, None] + 2 * COLS[None, :]
    out[..., 1] = row0[:, None] + 2 * ROWS[None, :]
    return out


def grid_to_world(grid: np.ndarray) -> np.ndarray:
    """World (X, Y) of map-grid (column, row) points, as the vertex shader computes them."""
    g = np.asarray(grid, np.float32)
    zp, hu = np.float32(ZEROPOINT), np.float32(HALF_UNIT)
    return np.stack([zp - g[..., 1] * hu, zp - g[..., 0] * hu], axis=-1)


def _shared_outer(tile, values: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """``values`` (256, 145, k) with every outer vertex that chunks of this tile share given one
    value (the last chunk's in MCNK order): bit-equal heights and normals along chunk edges."""
    g = grid[:, _OUTER].reshape(-1, 2)
    key = (g[:, 1] - g[:, 1].min()).astype(np.int64) * 4096 + (g[:, 0] - g[:, 0].min()).astype(np.int64)
    flat = values[:, _OUTER].reshape(len(g), -1)
    canon = np.empty((key.max() + 1, flat.shape[1]), flat.dtype)
    canon[key] = flat  # last write wins, identically for every copy
    out = values.copy()
    out[:, _OUTER] = canon[key].reshape(256, len(_OUTER), -1)
    return out


def build_terrain_arrays(tile, textures: dict[str, np.ndarray] | None = None) -> TerrainArrays:
    """Mesh (five levels) + alpha + layer textures of an :class:`~wowgrass.formats.adt.AdtTile`.

    ``textures`` maps MTEX names to decoded RGBA (mip 0); names missing from it get a placeholder
    and are listed in ``missing_textures``.
    """
    textures = textures or {}
    grid = map_grid(tile)
    n = np.asarray(tile.normals, np.float32) / 127.0
    norm = np.linalg.norm(n, axis=-1, keepdims=True)
    n = np.where(norm > 1e-6, n / np.maximum(norm, 1e-6), np.array([0, 0, 1], np.float32))
    hn = _shared_outer(tile, np.concatenate([np.asarray(tile.abs_heights, np.float32)[..., None], n], -1), grid)
    v = np.zeros((256, 145), VERTEX_DTYPE)
    v["pos"][..., :2] = grid_to_world(grid)
    v["pos"][..., 2] = hn[..., 0]
    v["normal"] = hn[..., 1:]
    v["uv"][..., 0] = COLS[None, :] / 8.0  # u east (alpha map column), v south (alpha map row)
    v["uv"][..., 1] = ROWS[None, :] / 8.0
    v["chunk"] = np.arange(256, dtype=np.float32)[:, None]
    lt = np.asarray(tile.layer_texture, np.int64)
    nl = np.asarray(tile.n_layers, np.int64)
    exists = (np.arange(4)[None, :] < nl[:, None]) & (lt >= 0) & (lt < max(len(tile.textures), 1))
    v["layers"] = np.where(exists, lt, -1).astype(np.float32)[:, None, :]
    v["grid"] = grid
    v["morph"][..., :3] = hn[:, MORPH_TARGET, 1:]
    v["morph"][..., 3] = hn[:, MORPH_TARGET, 0]
    v["level"] = VERTEX_LEVEL[None, :]

    holes = level_holes(tile.hole_cells())  # (256, 8, 8) per level, coarsened
    base = (np.arange(256) * 145)[:, None, None, None]
    parts, first, count, k0 = [], np.zeros((256, LEVELS), np.int64), np.zeros((256, LEVELS), np.int64), 0
    for lv in range(LEVELS):
        cells = LEVEL_CELLS[lv]
        idx = (cells[None] + base)[~holes[lv]].reshape(-1)  # chunk-major within the level
        per = (~holes[lv]).reshape(256, -1).sum(axis=1) * cells.shape[-1]
        count[:, lv] = per
        first[:, lv] = k0 + np.r_[0, np.cumsum(per)[:-1]]
        k0 += len(idx)
        parts.append(idx)
    indices = np.concatenate(parts).astype(np.uint32)

    alpha = np.zeros((256, 64, 64, 4), np.uint8)
    a = np.asarray(tile.alpha, np.uint8)
    alpha[..., 0], alpha[..., 1], alpha[..., 2] = a[:, 1], a[:, 2], a[:, 3]
    alpha[..., 3] = np.asarray(tile.shadow, bool) * np.uint8(255)  # MCSH: 255 where shadowed

    missing, layers = [], []
    for name in tile.textures or ["<none>"]:
        rgba = textures.get(name)
        if rgba is None:
            missing.append(name)
            rgba = placeholder_texture(name)
        layers.append(resize_rgba(rgba))
    return TerrainArrays(v.reshape(-1), indices, alpha, np.stack(layers), missing, list(tile.textures or ["<none>"]),
                         first, count, v["pos"].min(axis=1), v["pos"].max(axis=1))


def select_lod(lo, hi, eye, planes, far: float, bands=LOD_BANDS, z_scale: float = LOD_Z_SCALE,
               lod_eye=None):
    """CPU reference of shaders/terrain_lod.glsl: (visible (n,) bool, level (n,) int) of chunk
    boxes ``lo``/``hi`` (n, 3) for a camera at ``eye`` with frustum ``planes`` (6, 4) and view
    distance ``far``; levels are chosen from ``lod_eye`` (default ``eye``)."""
    lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    c, e = (lo + hi) * 0.5, (hi - lo) * 0.5
    q = np.maximum(np.abs(c - np.asarray(eye, np.float64)) - e, 0.0)
    vis = (q * q).sum(axis=1) < far * far
    if planes is not None:
        n = np.asarray(planes, np.float64)
        vis &= np.all(c @ n[:, :3].T + e @ np.abs(n[:, :3]).T >= -n[:, 3], axis=1)
    ql = np.maximum(np.abs(c - np.asarray(eye if lod_eye is None else lod_eye, np.float64)) - e, 0.0)
    ql[:, 2] *= z_scale
    d = np.sqrt((ql * ql).sum(axis=1))
    return vis, np.searchsorted(np.asarray(bands, np.float64), d, side="right")


SLOT_VERTICES = 256 * 145
SLOT_INDICES = 256 * sum(int(np.prod(c.shape)) for c in LEVEL_CELLS)  # all levels, no holes: the most a tile uses
ATLAS = 1024  # a tile's alpha maps as one 1024x1024 slice: 16x16 chunks of 64x64
SLOT_BYTES = SLOT_VERTICES * VERTEX_DTYPE.itemsize + SLOT_INDICES * 4 + ATLAS * ATLAS * 4  # a tile's slot


@dataclass
class TerrainTile:
    """A resident tile's place in the arena: its slot, level ranges (absolute), boxes, layer names."""

    slot: int
    lod_first: np.ndarray  # (256, LEVELS) first index in the arena's index buffer
    lod_count: np.ndarray  # (256, LEVELS)
    chunk_lo: np.ndarray
    chunk_hi: np.ndarray
    layer_names: list
    triangles: int  # at level 0


class TerrainArena:
    """Every resident tile's terrain in shared GPU storage, so that one draw covers them all: a
    vertex buffer and an index buffer of fixed-size slots (a tile's 256 x 145 vertices; its five
    levels' indices, absolute), one RGBA texture array of alpha atlases (a 1024x1024 slice per
    slot) and one texture array of MTEX layers shared by name (reference-counted slices). Grows by
    doubling: buffers by a GPU copy, textures by a compute copy (GL 4.3) or from CPU copies kept
    for that on older GL."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.capacity = 0  # slots
        self.vbo = self.ibo = self.lbo = self.alpha = self.layers = None
        self._free: list[int] = []
        self._used = 0  # slots handed out so far (free ones are reused first)
        self._names: dict[str, list] = {}  # MTEX name -> [slice, references]
        self._free_layers: list[int] = []
        self._layer_capacity = 0
        self._layer_used = 0
        self._copy = self._mip = self._mip_tex = None
        self._gpu_copy = ctx.version_code >= 430  # else textures grow from CPU copies
        self._cpu_alpha: dict[int, bytes] = {}  # GL < 4.3 only: what a texture grow re-uploads
        self._cpu_layers: dict[int, bytes] = {}
        self.vao = VaoCache(lambda prog: self._make_vao(prog, self.ibo))
        self.line_vao = VaoCache(lambda prog: self._make_vao(prog, self.lbo))  # lines views

    def _make_vao(self, prog, index_buffer):
        return self.ctx.vertex_array(prog, [(self.vbo, *read_by(prog, VERTEX_FORMAT, *VERTEX_ATTRS))],
                                     index_buffer=index_buffer, index_element_size=4)

    @property
    def slots(self) -> int:
        return self._used

    def add(self, arrays: TerrainArrays) -> TerrainTile:
        """Upload a tile into a free slot at once (:meth:`add_steps` spreads it over frames)."""
        tile = None
        for _, step in self.add_steps(arrays):
            tile = step()
        return tile

    def add_steps(self, arrays: TerrainArrays) -> list:
        """A tile's upload as ``(bytes, step)`` pairs to run in order, one or more a frame: its
        vertices, triangle indices, edge indices and alpha atlas, each written by a step of its
        own (on the H200 the driver copies such writes at 1-2 GB/s: the 11 MB of a tile in one
        frame took 6-18 ms). The slot draws nothing until the last step returns its
        :class:`TerrainTile` (its level ranges are zero until the caller registers it)."""
        state = {}

        def vertices():
            slot = state["slot"] = self._free.pop() if self._free else self._used
            self._used = max(self._used, slot + 1)
            if slot >= self.capacity:
                self._grow(max(4, 2 * self.capacity))
            names = list(arrays.layer_names)
            slices = np.array([self._layer(n, arrays.layers[i]) for i, n in enumerate(names)], np.float32)
            v = arrays.vertices.copy()
            v["chunk"] += slot * 256
            lay = v["layers"].astype(np.int64)
            v["layers"] = np.where(lay >= 0, slices[np.clip(lay, 0, len(slices) - 1)], -1.0)
            self.vbo.write(v.tobytes(), offset=slot * SLOT_VERTICES * VERTEX_DTYPE.itemsize)

        def indices():
            shift = np.uint32(state["slot"] * SLOT_VERTICES)
            self.ibo.write((arrays.indices + shift).tobytes(), offset=state["slot"] * SLOT_INDICES * 4)

        def edges():
            # index k of the triangles is index 2k of the edges: a line command is a triangle one doubled
            shift = np.uint32(state["slot"] * SLOT_VERTICES)
            self.lbo.write((arrays.edges() + shift).tobytes(), offset=state["slot"] * SLOT_INDICES * 8)

        def alpha():
            slot, atlas = state["slot"], arrays.atlas()
            self.alpha.write(atlas, viewport=(0, 0, slot, ATLAS, ATLAS, 1))
            if not self._gpu_copy:
                self._cpu_alpha[slot] = atlas
            return TerrainTile(slot, arrays.lod_first + slot * SLOT_INDICES, arrays.lod_count, arrays.chunk_lo,
                               arrays.chunk_hi, list(arrays.layer_names), arrays.triangles)

        return [(arrays.vertices.nbytes, vertices), (arrays.indices.nbytes, indices),
                (2 * arrays.indices.nbytes, edges), (ATLAS * ATLAS * 4, alpha)]

    def remove(self, tile: TerrainTile):
        self._free.append(tile.slot)
        self._cpu_alpha.pop(tile.slot, None)
        for n in tile.layer_names:
            ref = self._names[n]
            ref[1] -= 1
            if ref[1] == 0:
                del self._names[n]
                self._free_layers.append(ref[0])
                self._cpu_layers.pop(ref[0], None)

    def _layer(self, name: str, rgba: np.ndarray) -> int:
        ref = self._names.get(name)
        if ref is None:
            i = self._free_layers.pop() if self._free_layers else self._layer_used
            self._layer_used = max(self._layer_used, i + 1)
            if i >= self._layer_capacity:
                self._grow_layers(max(16, 2 * self._layer_capacity))
            data = np.ascontiguousarray(rgba, np.uint8).tobytes()
            self.layers.write(data, viewport=(0, 0, i, LAYER_SIZE, LAYER_SIZE, 1))
            if self._gpu_copy:  # this slice's levels only: a whole-array rebuild grows with what is resident
                self._mip_slice(i, data)
            else:
                self._cpu_layers[i] = data
                self.layers.build_mipmaps()
            ref = self._names[name] = [i, 0]
        ref[1] += 1
        return ref[0]

    def fits(self, slots: int, layers: int) -> bool:
        """Whether ``slots`` more tiles and ``layers`` more MTEX layers fit without growing."""
        return (self._used - len(self._free) + slots <= self.capacity
                and self._layer_used - len(self._free_layers) + layers <= self._layer_capacity)

    def reserve(self, slots: int, layers: int, at_least: int = 0, layers_at_least: int = 0):
        """Grow ahead of need so that ``slots`` more tiles and ``layers`` more MTEX layers fit
        without a growth inside :meth:`add` (streaming does this as a step of its own), to at
        least ``at_least`` slots and ``layers_at_least`` layers when it grows (a first size
        for what will be resident: each growth is a copy of everything)."""
        if self._used - len(self._free) + slots > self.capacity:
            self._grow(max(4, 2 * self.capacity, self._used + slots, at_least))
        if self._layer_used - len(self._free_layers) + layers > self._layer_capacity:
            self._grow_layers(max(16, 2 * self._layer_capacity, self._layer_used + layers, layers_at_least))

    def has_layer(self, name: str) -> bool:
        return name in self._names

    def upload_layer(self, name: str, rgba: np.ndarray):
        """MTEX layer ``name`` uploaded ahead of the tile that uses it (its :meth:`add` follows)."""
        if name not in self._names:
            self._layer(name, rgba)
            self._names[name][1] -= 1  # add() takes the reference

    def _grow(self, capacity: int):
        import moderngl

        ctx = self.ctx
        mem = gpu_memory(ctx)
        vbo = mem.track(ctx.buffer(reserve=capacity * SLOT_VERTICES * VERTEX_DTYPE.itemsize), "terrain-near")
        ibo = mem.track(ctx.buffer(reserve=capacity * SLOT_INDICES * 4), "terrain-near")
        lbo = mem.track(ctx.buffer(reserve=capacity * SLOT_INDICES * 8), "terrain-lines")
        alpha = mem.track(ctx.texture_array((ATLAS, ATLAS, capacity), 4), "terrain-near")
        alpha.repeat_x = alpha.repeat_y = False
        alpha.filter = (moderngl.LINEAR, moderngl.LINEAR)
        if self.capacity:
            ctx.copy_buffer(vbo, self.vbo)
            ctx.copy_buffer(ibo, self.ibo)
            ctx.copy_buffer(lbo, self.lbo)
            self._copy_texture(alpha, self.alpha, self._cpu_alpha, ATLAS)
            for obj in (self.vbo, self.ibo, self.lbo, self.alpha):
                obj.release()
            self.vao.release()
            self.line_vao.release()
        self.vbo, self.ibo, self.lbo, self.alpha, self.capacity = vbo, ibo, lbo, alpha, capacity

    def _grow_layers(self, capacity: int):
        import moderngl

        layers = gpu_memory(self.ctx).track(self.ctx.texture_array((LAYER_SIZE, LAYER_SIZE, capacity), 4),
                                            "terrain-layers", mipmaps=True)
        layers.filter = (moderngl.LINEAR_MIPMAP_LINEAR, moderngl.LINEAR)
        if "llvmpipe" not in self.ctx.info.get("GL_RENDERER", ""):  # llvmpipe: minutes per frame with it
            layers.anisotropy = ANISOTROPY
        if self._gpu_copy:
            layers.build_mipmaps()  # allocates the levels that _mip_slice and the copy write
        if self._layer_capacity:
            if self._gpu_copy:
                for level in range(LAYER_LEVELS):
                    self._copy_texture(layers, self.layers, self._cpu_layers, LAYER_SIZE >> level, level)
            else:
                self._copy_texture(layers, self.layers, self._cpu_layers, LAYER_SIZE)
                layers.build_mipmaps()
            self.layers.release()
        self.layers, self._layer_capacity = layers, capacity

    def _mip_slice(self, i: int, data: bytes):
        """Layer slice ``i`` with its mipmap levels: built by the driver in a 2D texture (the levels
        a whole-array ``build_mipmaps`` gives), then copied level by level into the slice."""
        if self._mip is None:
            import moderngl

            self._mip = self.ctx.compute_shader(_MIP_COPY_SHADER)
            self._mip_tex = gpu_memory(self.ctx).track(self.ctx.texture((LAYER_SIZE, LAYER_SIZE), 4), "terrain-layers",
                                                       mipmaps=True)
            self._mip_tex.filter = (moderngl.LINEAR_MIPMAP_LINEAR, moderngl.LINEAR)
        self._mip_tex.write(data)
        self._mip_tex.build_mipmaps()
        self._mip["slice_"] = i
        for level in range(LAYER_LEVELS):
            self._mip_tex.bind_to_image(1, read=True, write=False, level=level)
            self.layers.bind_to_image(0, read=False, write=True, level=level)
            size = LAYER_SIZE >> level
            self._mip.run(group_x=(size + 7) // 8, group_y=(size + 7) // 8)
        self.ctx.memory_barrier()

    def _copy_texture(self, dst, src, cpu: dict, size: int, level: int = 0):
        """Level ``level`` (``size`` square) of every layer of ``src`` into ``dst`` (a compute copy;
        on GL < 4.3 level 0 from ``cpu``)."""
        if not self._gpu_copy:
            for i, data in cpu.items():
                dst.write(data, viewport=(0, 0, i, size, size, 1))
            return
        if self._copy is None:
            self._copy = self.ctx.compute_shader(_COPY_SHADER)
        src.bind_to_image(1, read=True, write=False, level=level)
        dst.bind_to_image(0, read=False, write=True, level=level)
        self._copy.run(group_x=(size + 7) // 8, group_y=(size + 7) // 8, group_z=src.layers)
        self.ctx.memory_barrier()

    def release(self):
        self.vao.release()
        self.line_vao.release()
        for obj in (self.vbo, self.ibo, self.lbo, self.alpha, self.layers):
            if obj is not None:
                obj.release()
        self.vbo = self.ibo = self.lbo = self.alpha = self.layers = None
        for obj in (self._copy, self._mip, self._mip_tex):
            if obj is not None:
                obj.release()


_COPY_SHADER = """#version 430
layout(local_size_x = 8, local_size_y = 8) in;
layout(rgba8, binding = 0) writeonly uniform image2DArray dst;
layout(rgba8, binding = 1) readonly uniform image2DArray src;
void main() {
    ivec3 p = ivec3(gl_GlobalInvocationID);
    if (any(greaterThanEqual(p.xy, imageSize(dst).xy))) return;
    imageStore(dst, p, imageLoad(src, p));
}
"""

# a 2D texture's level into one slice of an array's level
_MIP_COPY_SHADER = """#version 430
layout(local_size_x = 8, local_size_y = 8) in;
layout(rgba8, binding = 0) writeonly uniform image2DArray dst;
layout(rgba8, binding = 1) readonly uniform image2D src;
uniform int slice_;
void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    if (any(greaterThanEqual(p, imageSize(src)))) return;
    imageStore(dst, ivec3(p, slice_), imageLoad(src, p));
}
"""


@dataclass
class TerrainLod:
    """Terrain LOD settings: band ends (``LOD_BANDS``), debug colouring of the levels, MCSH."""

    bands: tuple = LOD_BANDS
    enabled: bool = True  # off: every chunk at level 0 and no morph
    morph: bool = True  # off: levels switch without geomorphing (they pop; for comparison)
    debug: bool = False  # colour the terrain by level (key L, --debug-lod)
    mcsh: bool = False  # darken where the ADT's baked MCSH shadow map is set (--mcsh)

    def shader_bands(self) -> tuple:
        return tuple(self.bands) if self.enabled else (1e30,) * 4


FRAME_BINDING = 3  # storage binding of the frame block's buffer in terrain_lod.glsl (frame.glsl)


class TerrainSet(Source):
    """Resident terrain tiles in a :class:`TerrainArena`. GL 4.3: each frame one compute dispatch
    over every resident chunk (frustum, view distance, LOD level -> one indirect command per chunk
    and view) and one ``glMultiDrawElementsIndirect`` over all of them: the CPU's work per frame
    does not depend on how many tiles are resident, and it reads nothing back. The per-chunk
    inputs (boxes, index ranges per level) are uploaded when the resident set changes. Older GL:
    each tile's level 0 drawn whole (the vertex shader's morph still makes far terrain look as
    coarse as the levels would)."""

    name = "terrain"

    def __init__(self, ctx, programs=None, indirect: bool | None = None, lod: TerrainLod | None = None):
        self.ctx, self.programs = ctx, programs
        self.indirect = (ctx.version_code >= 430) if indirect is None else indirect
        self.lod = lod or TerrainLod()
        self.arena = TerrainArena(ctx)
        self.tiles: dict = {}
        self._capacity = 0  # slots the chunk and command buffers hold
        self._slots = 0  # slots the last _upload wrote (what the compute pass and the draw cover)
        self._dirty = True
        self._chunks = self._ranges = None
        self._commands = None  # a section of capacity * 256 commands per view
        self._command_views = 0  # the sections it holds
        self._lod_eye = None
        self._cull = None
        self._readback = Readback(ctx)  # statistics and tests

    def add(self, key, arrays: TerrainArrays) -> TerrainTile:
        """Upload a tile's :class:`TerrainArrays` into the arena."""
        return self.register(key, self.arena.add(arrays))

    def register(self, key, tile: TerrainTile) -> TerrainTile:
        """Draw ``tile`` (from the last of :meth:`TerrainArena.add_steps`) as ``key``'s terrain."""
        self.tiles[key] = tile
        self._dirty = True
        mem = gpu_memory(self.ctx)
        mem.use(key, "terrain-near", SLOT_BYTES)
        mem.use(key, "terrain-lines", SLOT_INDICES * 8)
        return tile

    def remove(self, key):
        t = self.tiles.pop(key, None)
        if t is not None:
            self.arena.remove(t)
            self._dirty = True
            mem = gpu_memory(self.ctx)
            mem.use(key, "terrain-near", 0)
            mem.use(key, "terrain-lines", 0)

    def _upload(self):
        """Per-chunk boxes and level ranges of every slot (zero counts in free slots)."""
        # the slots the tables cover: the arena may hand out a slot before its tile is registered
        # (add_steps), and the compute pass must not read past what was written here
        n = self._slots = max(self.arena.slots, 1)
        boxes = np.zeros((n, 256, 8), np.float32)
        ranges = np.zeros((n, 256, 2 * LEVELS), np.uint32)
        for t in self.tiles.values():
            boxes[t.slot, :, :3], boxes[t.slot, :, 4:7] = t.chunk_lo, t.chunk_hi
            ranges[t.slot, :, :LEVELS], ranges[t.slot, :, LEVELS:] = t.lod_first, t.lod_count
        if n > self._capacity:
            for b in (self._chunks, self._ranges, self._commands):
                if b is not None:
                    b.release()
            self._commands, self._command_views = None, 0
            self._capacity = max(n, 2 * self._capacity, 4)
            mem = gpu_memory(self.ctx)
            self._chunks = mem.track(self.ctx.buffer(reserve=self._capacity * 256 * 32), "terrain-tables")
            self._ranges = mem.track(self.ctx.buffer(reserve=self._capacity * 256 * 8 * LEVELS), "terrain-tables")
        self._chunks.write(boxes.tobytes())
        self._ranges.write(ranges.tobytes())
        self._dirty = False

    def _commands_for(self, n_views: int):
        """The command buffer, with a section for each of ``n_views`` views."""
        if self._commands is None or self._command_views < n_views:
            if self._commands is not None:
                self._commands.release()
            self._command_views = max(n_views, 2)
            self._commands = gpu_memory(self.ctx).track(
                self.ctx.buffer(reserve=self._command_views * self._capacity * 256 * CMD_DTYPE.itemsize), "terrain-tables")
        return self._commands

    def prepare(self, frame):
        """The compute pass for every view of ``frame`` in one dispatch: LOD levels from the first
        (main) view's camera in every view, so a shadow view draws the same geometry."""
        if not frame.views:
            return
        self._lod_eye = tuple(float(v) for v in frame.views[0].camera.position)
        if not self.tiles or not self.indirect:
            return
        if self._dirty:
            self._upload()
        if self._cull is None:
            from ..gl.programs import frame_slot_defines

            self._cull = load_program(self.ctx, "terrain_lod.glsl", frame_slot_defines(self.ctx, FRAME_BINDING))
        cs, views = self._cull, frame.all_views
        set_uniform(cs, "uChunks", self._slots * 256)
        set_uniform(cs, "uViewChunks", self._capacity * 256)
        set_uniform(cs, "uLodEye", self._lod_eye)
        set_uniform(cs, "uLodBands", self.lod.shader_bands())
        set_uniform(cs, "uLodZScale", LOD_Z_SCALE)
        set_uniform(cs, "uLineViews", sum(1 << v.slot for v in views if v.fill == "lines"))  # draw edge lists
        bind_storage(self.ctx, (self._chunks, self._ranges, self._commands_for(len(views)), frame.uniforms.buffer))
        cs.run((self._slots * 256 + 63) // 64, 1, len(views))
        self.ctx.memory_barrier()

    def read_commands(self, view) -> np.ndarray:
        """(slots * 256,) CMD_DTYPE the compute pass wrote for ``view`` (tests and statistics);
        slot ``t.slot`` of tile ``t`` holds its 256 chunks."""
        size = CMD_DTYPE.itemsize
        return np.frombuffer(self._readback.read(self._commands, self._slots * 256 * size,
                                                 view.slot * self._capacity * 256 * size), CMD_DTYPE)

    def read_stats(self, view) -> dict:
        """Triangles and chunks per level the compute pass chose for ``view`` (waits for the GPU:
        statistics only)."""
        cmds = self.read_commands(view)
        drawn = cmds["count"] > 0
        per_triangle = 6 if view.fill == "lines" else 3  # a lines view's commands count edge indices
        return {"triangles": int(cmds["count"].sum()) // per_triangle,
                "chunks_per_level": np.bincount(cmds["base_instance"][drawn], minlength=LEVELS).tolist()}

    def draw(self, pass_, view) -> DrawCounts:
        """All resident chunks in one indirect multi-draw (GL 4.3), or each tile's level 0."""
        import moderngl

        if not self.tiles:
            return DrawCounts()
        prog = pass_.program(self.programs, "terrain", view)
        for name, value in (("uLodEye", self._lod_eye or tuple(view.camera.position)),
                            ("uLodBands", self.lod.shader_bands()), ("uLodZScale", LOD_Z_SCALE),
                            ("uLodMorph", float(self.lod.morph)), ("uLodDebug", float(self.lod.debug)),
                            ("uMcsh", float(self.lod.mcsh))):
            set_uniform(prog, name, value)
        arena = self.arena
        use_texture(self.ctx, arena.layers, 0)
        use_texture(self.ctx, arena.alpha, 1)
        # a lines view: the edge list with a line-list pipeline (its commands were written doubled)
        k, mode, vao = (2, moderngl.LINES, arena.line_vao(prog)) if view.fill == "lines" else \
            (1, moderngl.TRIANGLES, arena.vao(prog))
        if self.indirect:
            if self._dirty:  # a tile arrived after prepare: drawn from the next frame on
                return DrawCounts()
            vao.render_indirect(self._commands, mode=mode, count=self._slots * 256, first=view.slot * self._capacity * 256)
            # triangles are counted on the GPU only (read_stats); the CPU reads nothing back
            return DrawCounts(1, 0, 0)
        for t in self.tiles.values():
            vao.render(mode, first=k * t.slot * SLOT_INDICES, vertices=k * int(t.lod_count[:, 0].sum()))
        return DrawCounts(len(self.tiles), 0, sum(t.triangles for t in self.tiles.values()))

    def release(self):
        self.tiles.clear()
        self.arena.release()
        for b in (self._chunks, self._ranges, self._commands):
            if b is not None:
                b.release()
        self._commands, self._command_views = None, 0
        self._chunks = self._ranges = None
        self._capacity = 0
        self._readback.release()
        if self._cull is not None:
            self._cull.release()
            self._cull = None
