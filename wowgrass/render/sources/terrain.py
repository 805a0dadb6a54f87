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

from functools import cached_property
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
# 48 bytes a vertex: XY come from the grid index (the shader computes them), heights and grid
# indices stay float32 (the geomorph's bit-exact collapse), normals, layer slices and the chunk's
# UV are half floats (whole numbers up to 2048 and k/8 are exact in them)
VERTEX_FORMAT = "f 2f f f 4f2 4f2 4f2 2f2"
VERTEX_ATTRS = ("in_height", "in_grid", "in_morph_height", "in_chunk", "in_normal", "in_morph_normal",
                "in_layers", "in_uv")
VERTEX_DTYPE = np.dtype([("height", "<f4"), ("grid", "<f4", 2), ("morph_height", "<f4"), ("chunk", "<f4"),
                         ("normal", "<f2", 4),  # xyz, w: the level on whose grid the vertex is odd
                         ("morph_normal", "<f2", 4),  # the collapse target's normal (w unused)
                         ("layers", "<f2", 4),  # texture array slice per layer, -1 where none
                         ("uv", "<f2", 2)])  # 0..1 across the chunk (the alpha map's space)
assert VERTEX_DTYPE.itemsize == 48

LEVELS = 5  # 0: fans of 145 vertices; 1..4: grids of 9x9, 5x5, 3x3, 2x2 outer vertices
# Where each level's distance band ends (world units; level 4 has no end). A chunk takes the level
# of the band its box's nearest point is in; a vertex morphs over the last 20% of its level's band.
# No cracks needs a chunk's neighbours to be at most one level coarser and not yet morphing where
# they meet it: bands 1-3 wider than 1.25x a chunk's box diagonal (47 units in XY, height scaled).
LOD_BANDS = (40.0, 160.0, 400.0, 900.0)
LOD_Z_SCALE = 0.5  # heights count half in the LOD distance: a cliff chunk's box stays small
HALF_UNIT = UNIT_SIZE / 2.0  # one step of the map-wide vertex grid (inner vertices sit on odd steps)
NO_LAYER = (0.45, 0.42, 0.35)  # a chunk without a first layer (terrain.glsl draws the same)

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
    """Everything a complete tile's terrain needs on the GPU, built off the GL thread."""

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

    @property
    def triangles(self) -> int:
        """Triangles of the full-detail mesh (level 0)."""
        return int(self.lod_count[:, 0].sum()) // 3

    @property
    def positions(self) -> np.ndarray:
        """(n, 3) float32 world positions of the vertices (as the vertex shader computes them)."""
        return vertex_positions(self.vertices)

    def atlas(self) -> bytes:
        """The alpha maps as one ATLAS x ATLAS slice (16 x 16 chunks), built once (the tile worker
        calls this, off the GL thread)."""
        if self._atlas is None:
            a = self.alpha.reshape(16, 16, 64, 64, 4).transpose(0, 2, 1, 3, 4)
            self._atlas = a.reshape(ATLAS, ATLAS, 4).tobytes()
        return self._atlas

    def edges(self) -> np.ndarray:
        """:func:`~.meshes.edge_indices` of ``indices`` (what a lines view draws)."""
        return edge_indices(self.indices)


FAR_COLOUR = 16  # a far tile's colour texels per chunk side (the alpha maps have 64)
FAR_ATLAS = 16 * FAR_COLOUR  # its colour as one 256x256 slice of 16x16 chunks


@dataclass
class FarArrays:
    """A far tile's terrain: the vertices and indices of levels ``first_level``..4 only, and one
    low-resolution colour image (the layers' mean colours blended by the alpha maps, MCSH in A)
    instead of the alpha atlas and the layer textures (built off the GL thread)."""

    vertices: np.ndarray  # (256 * per_chunk,) VERTEX_DTYPE
    indices: np.ndarray  # (k,) u4: levels first_level..4, chunk-major within a level
    colour: np.ndarray  # (FAR_ATLAS, FAR_ATLAS, 4) u1: the tile's colour, rows south, columns east
    first_level: int
    lod_first: np.ndarray = None  # (256, LEVELS); levels below first_level: count 0
    lod_count: np.ndarray = None
    chunk_lo: np.ndarray = None
    chunk_hi: np.ndarray = None
    missing_textures: list[str] = field(default_factory=list)

    @cached_property
    def mean_colour(self) -> tuple:
        """The tile's mean colour (0..1 RGB: the horizon beyond it takes it); cached, so the worker
        that builds the arrays pays for it, not the frame that uploads them."""
        return tuple(float(c) for c in self.colour[..., :3].reshape(-1, 3).mean(axis=0) / 255.0)

    @property
    def triangles(self) -> int:
        """Triangles at the tile's finest level (``first_level``)."""
        return int(self.lod_count[:, self.first_level].sum()) // 3

    @property
    def positions(self) -> np.ndarray:
        return vertex_positions(self.vertices)

    def edges(self) -> np.ndarray:
        return edge_indices(self.indices)


def vertex_positions(v: np.ndarray) -> np.ndarray:
    """(n, 3) float32 world positions of VERTEX_DTYPE vertices (XY from the grid index)."""
    out = np.empty((len(v), 3), np.float32)
    out[:, :2] = grid_to_world(v["grid"])
    out[:, 2] = v["height"]
    return out


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


def chunk_layers(tile) -> np.ndarray:
    """(256, 4) MTEX index of each chunk's layers, -1 where the layer does not exist."""
    lt = np.asarray(tile.layer_texture, np.int64)
    nl = np.asarray(tile.n_layers, np.int64)
    exists = (np.arange(4)[None, :] < nl[:, None]) & (lt >= 0) & (lt < max(len(tile.textures), 1))
    return np.where(exists, lt, -1)


def _tile_vertices(tile) -> np.ndarray:
    """(256, 145) VERTEX_DTYPE of every MCVT vertex, layers -1 (the caller fills them)."""
    grid = map_grid(tile)
    n = np.asarray(tile.normals, np.float32) / 127.0
    norm = np.linalg.norm(n, axis=-1, keepdims=True)
    n = np.where(norm > 1e-6, n / np.maximum(norm, 1e-6), np.array([0, 0, 1], np.float32))
    hn = _shared_outer(tile, np.concatenate([np.asarray(tile.abs_heights, np.float32)[..., None], n], -1), grid)
    v = np.zeros((256, 145), VERTEX_DTYPE)
    v["height"] = hn[..., 0]
    v["grid"] = grid
    v["morph_height"] = hn[:, MORPH_TARGET, 0]
    v["chunk"] = np.arange(256, dtype=np.float32)[:, None]
    v["normal"][..., :3] = hn[..., 1:]
    v["normal"][..., 3] = VERTEX_LEVEL[None, :]
    v["morph_normal"][..., :3] = hn[:, MORPH_TARGET, 1:]
    v["uv"][..., 0] = COLS[None, :] / 8.0  # u east (alpha map column), v south (alpha map row)
    v["uv"][..., 1] = ROWS[None, :] / 8.0
    v["layers"] = -1.0
    return v


def _level_indices(tile, levels, per_chunk: int = 145, remap: np.ndarray | None = None):
    """Triangle indices of ``levels`` (level-major, chunk-major within a level, hole cells left
    out), with each chunk's (first, count) per level; ``remap``: MCVT index -> the index among
    the ``per_chunk`` vertices a chunk keeps."""
    holes = level_holes(tile.hole_cells())  # (256, 8, 8) per level, coarsened
    base = (np.arange(256) * per_chunk)[:, None, None, None]
    parts, first, count, k0 = [], np.zeros((256, LEVELS), np.int64), np.zeros((256, LEVELS), np.int64), 0
    for lv in levels:
        cells = LEVEL_CELLS[lv] if remap is None else remap[LEVEL_CELLS[lv]]
        idx = (cells[None] + base)[~holes[lv]].reshape(-1)
        per = (~holes[lv]).reshape(256, -1).sum(axis=1) * cells.shape[-1]
        count[:, lv] = per
        first[:, lv] = k0 + np.r_[0, np.cumsum(per)[:-1]]
        k0 += len(idx)
        parts.append(idx)
    return np.concatenate(parts).astype(np.uint32), first, count


def _boxes(v: np.ndarray):
    p = vertex_positions(v.reshape(-1)).reshape(256, -1, 3)
    return p.min(axis=1), p.max(axis=1)


def build_terrain_arrays(tile, textures: dict[str, np.ndarray] | None = None) -> TerrainArrays:
    """Mesh (five levels) + alpha + layer textures of an :class:`~wowgrass.formats.adt.AdtTile`.

    ``textures`` maps MTEX names to decoded RGBA (mip 0); names missing from it get a placeholder
    and are listed in ``missing_textures``.
    """
    textures = textures or {}
    v = _tile_vertices(tile)
    v["layers"] = chunk_layers(tile).astype(np.float32)[:, None, :]
    indices, first, count = _level_indices(tile, range(LEVELS))

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
    lo, hi = _boxes(v)
    return TerrainArrays(v.reshape(-1), indices, alpha, np.stack(layers), missing, list(tile.textures or ["<none>"]),
                         first, count, lo, hi)


def far_vertex_set(first_level: int) -> np.ndarray:
    """The MCVT indices a chunk keeps when drawn at levels ``first_level``..4 only (every vertex of
    those levels' grids: their morph targets are among them)."""
    if first_level <= 0:
        return np.arange(145)
    s = 1 << (first_level - 1)
    r, c = ROWS[_OUTER].astype(int), COLS[_OUTER].astype(int)
    return _OUTER[(r % s == 0) & (c % s == 0)]


def layer_means(tile, textures: dict[str, np.ndarray] | None = None) -> tuple[np.ndarray, list[str]]:
    """(n, 3) float mean colour of each MTEX layer (what its coarsest mip is; placeholders where
    the data lacks a texture) and the names it lacked."""
    textures = textures or {}
    means, missing = [], []
    for name in tile.textures or ["<none>"]:
        rgba = textures.get(name)
        if rgba is None:
            missing.append(name)
            rgba = placeholder_texture(name, 4)
        # the mean of the texture as the GPU's mip chain sees it: resized to LAYER_SIZE first
        means.append(resize_rgba(rgba)[..., :3].reshape(-1, 3).astype(np.float64).mean(axis=0))
    return np.array(means), missing


def far_colour(tile, means: np.ndarray) -> np.ndarray:
    """(FAR_ATLAS, FAR_ATLAS, 4) u1: the tile's albedo as terrain.glsl blends it, with each layer
    at its mean colour, at FAR_COLOUR texels a chunk (A: the MCSH shadow's share). Texel j of a
    chunk stands where terrain.glsl samples the alpha map at uv j / (FAR_COLOUR - 1), the alpha
    box-filtered over the 5 texels around it (what a far texel stands for)."""
    lay = chunk_layers(tile)
    table = np.concatenate([means, np.array(NO_LAYER)[None] * 255.0]).astype(np.float32)  # index -1 -> no layer
    m = _RESAMPLE
    planes = np.empty((256, 4, FAR_COLOUR, FAR_COLOUR), np.float32)
    alpha = np.asarray(tile.alpha)
    for k in range(3):  # one plane at a time: (256, 64, 64) float32 at most
        planes[:, k] = m @ (alpha[:, k + 1].astype(np.float32) * np.float32(1 / 255)) @ m.T
    planes[:, 3] = m @ np.asarray(tile.shadow, np.float32) @ m.T
    albedo = np.repeat(table[lay[:, 0]][:, None, None, :], FAR_COLOUR, 1).repeat(FAR_COLOUR, 2)  # (256, F, F, 3)
    for k in range(1, 4):
        a = np.where((lay[:, k] >= 0)[:, None, None], planes[:, k - 1], 0.0)[..., None]
        albedo = albedo * (1.0 - a) + table[lay[:, k]][:, None, None, :] * a
    out = np.empty((256, FAR_COLOUR, FAR_COLOUR, 4), np.uint8)
    out[..., :3] = np.clip(np.round(albedo), 0, 255)
    out[..., 3] = np.clip(np.round(planes[:, 3] * 255.0), 0, 255)
    iy, ix = np.asarray(tile.index_xy[:, 1], np.int64), np.asarray(tile.index_xy[:, 0], np.int64)
    img = np.zeros((16, 16, FAR_COLOUR, FAR_COLOUR, 4), np.uint8)
    img[iy, ix] = out
    return np.ascontiguousarray(img.transpose(0, 2, 1, 3, 4).reshape(FAR_ATLAS, FAR_ATLAS, 4))


def _resample_matrix(n: int = 64, f: int = FAR_COLOUR, box: int = 5) -> np.ndarray:
    """(f, n) float32: a ``box``-texel box filter (clamped at the chunk's edge), then the values
    at the alpha map's continuous index (n - 1) j / (f - 1), linearly interpolated."""
    b = np.zeros((n, n))
    for i in range(n):
        for d in range(-(box // 2), box // 2 + 1):
            b[i, min(max(i + d, 0), n - 1)] += 1.0 / box
    t = np.arange(f) * ((n - 1) / (f - 1))
    i0 = np.minimum(np.floor(t).astype(np.int64), n - 2)
    w = t - i0
    s = np.zeros((f, n))
    s[np.arange(f), i0] = 1.0 - w
    s[np.arange(f), i0 + 1] += w
    return (s @ b).astype(np.float32)


_RESAMPLE = _resample_matrix()


def build_far_arrays(tile, textures: dict[str, np.ndarray] | None = None, first_level: int = 3) -> FarArrays:
    """A far tile's :class:`FarArrays`: levels ``first_level``..4 of the mesh and the colour."""
    first_level = int(min(max(first_level, 0), LEVELS - 1))
    keep = far_vertex_set(first_level)
    remap = np.full(145, -1, np.int64)
    remap[keep] = np.arange(len(keep))
    whole = _tile_vertices(tile)
    lo, hi = _boxes(whole)  # the complete tile's boxes: the LOD pass picks the same levels for both
    v = whole[:, keep]
    indices, first, count = _level_indices(tile, range(first_level, LEVELS), len(keep), remap)
    means, missing = layer_means(tile, textures)
    arrays = FarArrays(np.ascontiguousarray(v.reshape(-1)), indices, far_colour(tile, means), first_level,
                       first, count, lo, hi, missing)
    arrays.mean_colour  # noqa: B018 (computed here, in the worker)
    return arrays


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
SLOT_BYTES = SLOT_VERTICES * VERTEX_DTYPE.itemsize + SLOT_INDICES * 4 + ATLAS * ATLAS * 4  # a complete tile's slot
LINE_SLOT_BYTES = SLOT_INDICES * 8  # its edge list, where a lines view asked for one
FAR_LEVEL = 3  # the finest level a far tile keeps by default (the band 400-900 units: reach 800 is in it)


def far_slot_sizes(first_level: int) -> tuple[int, int]:
    """(vertices, indices) of a far tile's slot that keeps levels ``first_level``..4."""
    return (256 * len(far_vertex_set(first_level)),
            256 * sum(int(np.prod(LEVEL_CELLS[lv].shape)) for lv in range(first_level, LEVELS)))


def far_level_for(reach: float, bands=LOD_BANDS) -> int:
    """The level of the LOD band ``reach`` falls in: the finest a tile beyond ``reach`` is drawn at
    (a chunk's LOD distance is never below its tile's distance in XY)."""
    return int(np.searchsorted(np.asarray(bands, np.float64), float(reach), side="right"))


@dataclass
class TerrainTile:
    """A resident tile's place in an arena: its slot, level ranges (absolute), boxes, layer names."""

    slot: int
    lod_first: np.ndarray  # (256, LEVELS) first index in the arena's index buffer
    lod_count: np.ndarray  # (256, LEVELS)
    chunk_lo: np.ndarray
    chunk_hi: np.ndarray
    layer_names: list
    triangles: int  # at its finest level (0 for a complete tile)
    far: bool = False  # in the far arena (FarArrays)
    first_level: int = 0
    mean_colour: tuple | None = None  # a far tile's mean colour (0..1 RGB)


class _SlotArena:
    """What both terrain arenas share: a vertex and an index buffer of fixed-size slots (one tile
    each, indices absolute), one RGBA texture array with a slice per slot, an edge-list buffer made
    only when a lines view first asks for it (:meth:`lines`), growth by doubling (buffers by a GPU
    copy, textures by a compute copy on GL 4.3, from CPU copies kept for that on older GL)."""

    kind = "terrain-near"

    def __init__(self, ctx, slot_vertices: int, slot_indices: int, tex_size: int, tex_mipmaps: bool):
        self.ctx = ctx
        self.slot_vertices, self.slot_indices = slot_vertices, slot_indices
        self.tex_size, self.tex_mipmaps = tex_size, tex_mipmaps
        self.capacity = 0  # slots
        self.vbo = self.ibo = self.lbo = self.tex = None
        self._free: list[int] = []
        self._used = 0  # slots handed out so far (free ones are reused first)
        self._copy = self._mip = self._mip_tex = self._edge_cs = None
        self._stage = None  # the pixel buffer texture slices are uploaded through (_staged)
        self._gpu_copy = ctx.version_code >= 430  # else textures grow from CPU copies
        self._cpu_tex: dict[int, bytes] = {}  # GL < 4.3 only: what a texture grow re-uploads
        self._cpu_indices: dict[int, np.ndarray] = {}  # GL < 4.3 with lines: a slot's indices (edges)
        self.vao = VaoCache(lambda prog: self._make_vao(prog, self.ibo))
        self.line_vao = VaoCache(lambda prog: self._make_vao(prog, self.lines()))  # lines views
        self._mem = gpu_memory(ctx)

    def _make_vao(self, prog, index_buffer):
        return self.ctx.vertex_array(prog, [(self.vbo, *read_by(prog, VERTEX_FORMAT, *VERTEX_ATTRS))],
                                     index_buffer=index_buffer, index_element_size=4)

    @property
    def slots(self) -> int:
        return self._used

    @property
    def slot_bytes(self) -> int:
        """GPU bytes of one slot (vertices, indices, its texture slice)."""
        tex = self.tex_size * self.tex_size * 4
        return (self.slot_vertices * VERTEX_DTYPE.itemsize + self.slot_indices * 4
                + (tex * 4 // 3 if self.tex_mipmaps else tex))

    def _take_slot(self) -> int:
        slot = self._free.pop() if self._free else self._used
        self._used = max(self._used, slot + 1)
        if slot >= self.capacity:
            self._grow(max(4, 2 * self.capacity))
        return slot

    def _free_slot(self, slot: int):
        self._free.append(slot)
        self._cpu_tex.pop(slot, None)
        self._cpu_indices.pop(slot, None)

    def _write_indices(self, slot: int, indices: np.ndarray):
        """A slot's indices (made absolute), and its edges where a lines buffer exists."""
        shift = np.uint32(slot * self.slot_vertices)
        self.ibo.write((indices + shift).tobytes(), offset=slot * self.slot_indices * 4)
        if not self._gpu_copy:
            self._cpu_indices[slot] = indices
        if self.lbo is not None:
            self._edges_of(slot)

    def fits(self, slots: int) -> bool:
        return self._used - len(self._free) + slots <= self.capacity

    def _reserve_slots(self, slots: int, at_least: int = 0):
        if not self.fits(slots):  # at least half again: a bounded number of copies of everything
            self._grow(max(4, self.capacity + self.capacity // 2, self._used + slots, at_least))

    def _grow(self, capacity: int):
        import moderngl

        ctx, mem, kind = self.ctx, self._mem, self.kind
        vbo = mem.track(ctx.buffer(reserve=capacity * self.slot_vertices * VERTEX_DTYPE.itemsize), kind)
        ibo = mem.track(ctx.buffer(reserve=capacity * self.slot_indices * 4), kind)
        lbo = None if self.lbo is None else mem.track(ctx.buffer(reserve=capacity * self.slot_indices * 8),
                                                      "terrain-lines")
        tex = mem.track(ctx.texture_array((self.tex_size, self.tex_size, capacity), 4), kind,
                        mipmaps=self.tex_mipmaps)
        tex.repeat_x = tex.repeat_y = False
        if self.tex_mipmaps:
            tex.filter = (moderngl.LINEAR_MIPMAP_LINEAR, moderngl.LINEAR)
            if self._gpu_copy:
                tex.build_mipmaps()  # allocates the levels the copies write
        else:
            tex.filter = (moderngl.LINEAR, moderngl.LINEAR)
        if self.capacity:
            ctx.copy_buffer(vbo, self.vbo)
            ctx.copy_buffer(ibo, self.ibo)
            if lbo is not None:
                ctx.copy_buffer(lbo, self.lbo)
            self._copy_levels(tex, self.tex, self._cpu_tex, self.tex_size, self.tex_mipmaps)
            for obj in (self.vbo, self.ibo, self.lbo, self.tex):
                if obj is not None:
                    obj.release()
            self.vao.release()
            self.line_vao.release()
        self.vbo, self.ibo, self.lbo, self.tex, self.capacity = vbo, ibo, lbo, tex, capacity

    # -- the edge lists of lines views --
    def lines(self):
        """The edge-list buffer (index k of the triangles is index 2k of the edges: a line command
        is a triangle one doubled), made from the triangle indices the first time a lines view
        draws, and kept up as tiles arrive from then on."""
        if self.lbo is None:
            self.lbo = self._mem.track(self.ctx.buffer(reserve=max(self.capacity, 1) * self.slot_indices * 8),
                                       "terrain-lines")
            self.line_vao.release()
            for slot in range(self._used):
                if slot not in self._free:
                    self._edges_of(slot)
        return self.lbo

    def _edges_of(self, slot: int):
        """Write slot ``slot``'s edges from its triangle indices (a compute pass; GL < 4.3: from the
        CPU copy of its indices)."""
        if not self._gpu_copy:
            idx = self._cpu_indices.get(slot)
            if idx is not None:
                shift = np.uint32(slot * self.slot_vertices)
                self.lbo.write((edge_indices(idx) + shift).tobytes(), offset=slot * self.slot_indices * 8)
            return
        if self._edge_cs is None:
            self._edge_cs = self.ctx.compute_shader(_EDGE_SHADER)
        tris = self.slot_indices // 3
        self._edge_cs["uFirst"] = slot * tris
        self._edge_cs["uCount"] = tris
        bind_storage(self.ctx, (self.ibo, self.lbo))
        self._edge_cs.run((tris + 63) // 64)
        self.ctx.memory_barrier()

    # -- texture slices with their mipmaps --
    def _mip_slice(self, dst, i: int, data: bytes, size: int):
        """Slice ``i`` of ``dst`` with its mipmap levels: built by the driver in a 2D texture (the
        levels a whole-array ``build_mipmaps`` gives), then copied level by level into the slice."""
        import moderngl

        if self._mip_tex is None or self._mip_tex.width != size:
            if self._mip_tex is not None:
                self._mip_tex.release()
            self._mip = self._mip or self.ctx.compute_shader(_MIP_COPY_SHADER)
            self._mip_tex = self._mem.track(self.ctx.texture((size, size), 4), self.kind, mipmaps=True)
            self._mip_tex.filter = (moderngl.LINEAR_MIPMAP_LINEAR, moderngl.LINEAR)
        self._mip_tex.write(self._staged(data))
        self._mip_tex.build_mipmaps()
        self._mip["slice_"] = i
        for level in range(size.bit_length()):
            self._mip_tex.bind_to_image(1, read=True, write=False, level=level)
            dst.bind_to_image(0, read=False, write=True, level=level)
            s = size >> level
            self._mip.run(group_x=(s + 7) // 8, group_y=(s + 7) // 8)
        self.ctx.memory_barrier()

    def _staged(self, data: bytes):
        """``data`` in the arena's pixel buffer, for a texture write to read on the GPU: written
        straight from the CPU into a slice of the array, the H200's driver took 10-80 ms for a 4 MB
        atlas in a flight (1 ms alone); through a buffer the copy is the GPU's. Orphaned first, so a
        write never waits for the last one's copy."""
        n = len(data)
        if self._stage is None or self._stage.size < n:  # the largest write so far (reads take their bytes)
            if self._stage is not None:
                self._stage.release()
            self._stage = self._mem.track(self.ctx.buffer(reserve=n), self.kind)
        else:
            self._stage.orphan()
        self._stage.write(data)
        return self._stage

    def _write_slice(self, dst, i: int, data: bytes, size: int, mipmaps: bool, cpu: dict):
        dst.write(self._staged(data), viewport=(0, 0, i, size, size, 1))
        if not self._gpu_copy:
            cpu[i] = data
            if mipmaps:
                dst.build_mipmaps()
        elif mipmaps:  # this slice's levels only: a whole-array rebuild grows with what is resident
            self._mip_slice(dst, i, data, size)

    def _copy_levels(self, dst, src, cpu: dict, size: int, mipmaps: bool):
        """Every slice of ``src`` (all its levels where ``mipmaps``) into ``dst``."""
        if not self._gpu_copy:
            for i, data in cpu.items():
                dst.write(data, viewport=(0, 0, i, size, size, 1))
            if mipmaps:
                dst.build_mipmaps()
            return
        for level in range(size.bit_length() if mipmaps else 1):
            self._copy_texture(dst, src, size >> level, level)

    def _copy_texture(self, dst, src, size: int, level: int = 0):
        """Level ``level`` (``size`` square) of every layer of ``src`` into ``dst`` (a compute copy)."""
        if self._copy is None:
            self._copy = self.ctx.compute_shader(_COPY_SHADER)
        src.bind_to_image(1, read=True, write=False, level=level)
        dst.bind_to_image(0, read=False, write=True, level=level)
        self._copy.run(group_x=(size + 7) // 8, group_y=(size + 7) // 8, group_z=src.layers)
        self.ctx.memory_barrier()

    def release(self):
        self.vao.release()
        self.line_vao.release()
        for obj in (self.vbo, self.ibo, self.lbo, self.tex, self._mip_tex, self._stage):
            if obj is not None:
                obj.release()
        self.vbo = self.ibo = self.lbo = self.tex = self._mip_tex = self._stage = None
        for obj in (self._copy, self._mip, self._edge_cs):
            if obj is not None:
                obj.release()
        self._copy = self._mip = self._edge_cs = None
        self.capacity = 0


class TerrainArena(_SlotArena):
    """Every complete tile's terrain in shared GPU storage, so that one draw covers them all: slots
    of a tile's 256 x 145 vertices and its five levels' indices, one RGBA texture array of alpha
    atlases (a 1024x1024 slice per slot) and one texture array of MTEX layers shared by name
    (reference-counted slices)."""

    kind = "terrain-near"

    def __init__(self, ctx):
        super().__init__(ctx, SLOT_VERTICES, SLOT_INDICES, ATLAS, False)
        self.layers = None
        self._names: dict[str, list] = {}  # MTEX name -> [slice, references]
        self._free_layers: list[int] = []
        self._layer_capacity = 0
        self._layer_used = 0
        self._cpu_layers: dict[int, bytes] = {}

    @property
    def alpha(self):
        """The alpha atlases (the arena's texture array)."""
        return self.tex

    def add(self, arrays: TerrainArrays) -> TerrainTile:
        """Upload a tile into a free slot at once (:meth:`add_steps` spreads it over frames)."""
        tile = None
        for _, step in self.add_steps(arrays):
            tile = step()
        return tile

    def add_steps(self, arrays: TerrainArrays) -> list:
        """A tile's upload as ``(bytes, step)`` pairs to run in order, one or more a frame: its
        vertices, triangle indices and alpha atlas, each written by a step of its own (on the
        H200 the driver copies such writes at 1-2 GB/s: the 11 MB of a tile in one frame took
        6-18 ms). The slot draws nothing until the last step returns its :class:`TerrainTile`
        (its level ranges are zero until the caller registers it)."""
        state = {}

        def vertices():
            slot = state["slot"] = self._take_slot()
            names = list(arrays.layer_names)
            slices = np.array([self._layer(n, arrays.layers[i]) for i, n in enumerate(names)], np.float32)
            v = arrays.vertices.copy()
            v["chunk"] += slot * 256
            lay = v["layers"].astype(np.int64)
            v["layers"] = np.where(lay >= 0, slices[np.clip(lay, 0, len(slices) - 1)], -1.0)
            self.vbo.write(v.tobytes(), offset=slot * SLOT_VERTICES * VERTEX_DTYPE.itemsize)

        def indices():
            self._write_indices(state["slot"], arrays.indices)

        def alpha():
            slot = state["slot"]
            self._write_slice(self.tex, slot, arrays.atlas(), ATLAS, False, self._cpu_tex)
            return TerrainTile(slot, arrays.lod_first + slot * SLOT_INDICES, arrays.lod_count, arrays.chunk_lo,
                               arrays.chunk_hi, list(arrays.layer_names), arrays.triangles)

        edges = 2 * arrays.indices.nbytes if self.lbo is not None else 0
        return [(arrays.vertices.nbytes, vertices), (arrays.indices.nbytes + edges, indices),
                (ATLAS * ATLAS * 4, alpha)]

    def remove(self, tile: TerrainTile):
        self._free_slot(tile.slot)
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
            self._write_slice(self.layers, i, data, LAYER_SIZE, True, self._cpu_layers)
            ref = self._names[name] = [i, 0]
        ref[1] += 1
        return ref[0]

    def fits(self, slots: int, layers: int = 0) -> bool:
        """Whether ``slots`` more tiles and ``layers`` more MTEX layers fit without growing."""
        return (super().fits(slots)
                and self._layer_used - len(self._free_layers) + layers <= self._layer_capacity)

    def reserve(self, slots: int, layers: int, at_least: int = 0, layers_at_least: int = 0):
        """Grow ahead of need so that ``slots`` more tiles and ``layers`` more MTEX layers fit
        without a growth inside :meth:`add` (streaming does this as a step of its own), to at
        least ``at_least`` slots and ``layers_at_least`` layers when it grows (a first size
        for what will be resident: each growth is a copy of everything)."""
        self._reserve_slots(slots, at_least)
        if self._layer_used - len(self._free_layers) + layers > self._layer_capacity:
            self._grow_layers(max(16, 2 * self._layer_capacity, self._layer_used + layers, layers_at_least))

    def has_layer(self, name: str) -> bool:
        return name in self._names

    def upload_layer(self, name: str, rgba: np.ndarray):
        """MTEX layer ``name`` uploaded ahead of the tile that uses it (its :meth:`add` follows)."""
        if name not in self._names:
            self._layer(name, rgba)
            self._names[name][1] -= 1  # add() takes the reference

    def _grow_layers(self, capacity: int):
        import moderngl

        layers = self._mem.track(self.ctx.texture_array((LAYER_SIZE, LAYER_SIZE, capacity), 4),
                                 "terrain-layers", mipmaps=True)
        layers.filter = (moderngl.LINEAR_MIPMAP_LINEAR, moderngl.LINEAR)
        if "llvmpipe" not in self.ctx.info.get("GL_RENDERER", ""):  # llvmpipe: minutes per frame with it
            layers.anisotropy = ANISOTROPY
        if self._gpu_copy:
            layers.build_mipmaps()  # allocates the levels that _mip_slice and the copy write
        if self._layer_capacity:
            self._copy_levels(layers, self.layers, self._cpu_layers, LAYER_SIZE, True)
            self.layers.release()
        self.layers, self._layer_capacity = layers, capacity

    def release(self):
        super().release()
        if self.layers is not None:
            self.layers.release()
            self.layers = None
        self._layer_capacity = 0


class FarArena(_SlotArena):
    """Every far tile's terrain: slots of the vertices and indices of levels ``first_level``..4
    (a 2304-vertex slot at level 3 against a complete tile's 37120) and one texture array of the
    tiles' low-resolution colours (a 256x256 slice per slot, mipmapped); no alpha atlas, no
    layer textures (:class:`FarArrays`)."""

    kind = "terrain-far"

    def __init__(self, ctx, first_level: int = FAR_LEVEL):
        self.first_level = int(first_level)
        super().__init__(ctx, *far_slot_sizes(self.first_level), FAR_ATLAS, True)

    @property
    def colour(self):
        return self.tex

    def add(self, arrays: FarArrays) -> TerrainTile:
        tile = None
        for _, step in self.add_steps(arrays):
            tile = step()
        return tile

    def add_steps(self, arrays: FarArrays) -> list:
        """A far tile's upload in two steps (its vertices and indices; its colour)."""
        if arrays.first_level != self.first_level:
            raise ValueError(f"a far tile of levels {arrays.first_level}.. in an arena of levels {self.first_level}..")
        state = {}

        def mesh():
            slot = state["slot"] = self._take_slot()
            v = arrays.vertices.copy()
            v["chunk"] += slot * 256
            self.vbo.write(v.tobytes(), offset=slot * self.slot_vertices * VERTEX_DTYPE.itemsize)
            self._write_indices(slot, arrays.indices)

        def colour():
            slot = state["slot"]
            self._write_slice(self.tex, slot, arrays.colour.tobytes(), FAR_ATLAS, True, self._cpu_tex)
            return TerrainTile(slot, arrays.lod_first + slot * self.slot_indices, arrays.lod_count, arrays.chunk_lo,
                               arrays.chunk_hi, [], arrays.triangles, far=True, first_level=self.first_level,
                               mean_colour=arrays.mean_colour)

        edges = 2 * arrays.indices.nbytes if self.lbo is not None else 0
        return [(arrays.vertices.nbytes + arrays.indices.nbytes + edges, mesh), (arrays.colour.nbytes, colour)]

    def remove(self, tile: TerrainTile):
        self._free_slot(tile.slot)

    def reserve(self, slots: int, at_least: int = 0):
        self._reserve_slots(slots, at_least)


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

# a slot's triangle list as its edge list: triangle k's (a, b, c) -> (a b, b c, c a) at line index 6k
_EDGE_SHADER = """#version 430
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Tris { uint tris[]; };
layout(std430, binding = 1) writeonly buffer Lines { uint lines[]; };
uniform uint uFirst;
uniform uint uCount;
void main() {
    uint t = gl_GlobalInvocationID.x;
    if (t >= uCount) return;
    uint k = uFirst + t;
    uint a = tris[3u * k], b = tris[3u * k + 1u], c = tris[3u * k + 2u];
    lines[6u * k] = a; lines[6u * k + 1u] = b;
    lines[6u * k + 2u] = b; lines[6u * k + 3u] = c;
    lines[6u * k + 4u] = c; lines[6u * k + 5u] = a;
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


# the workbench's overlay bits (terrain.glsl OVERLAY_*) and per-cell flags (CELL_*)
OVERLAY_BITS = {"sets": 1, "unassigned": 2, "stale": 4, "excluded": 8, "holes": 16, "chunks": 32, "tiles": 64}
CELL_UNASSIGNED, CELL_STALE, CELL_EXCLUDED, CELL_HOLE = 1, 2, 4, 8
CELLS = 128  # a tile's cells per side: 16 chunks of 8


class CellOverlays:
    """Per-cell data for terrain.glsl's overlays: a 128x128 RGBA8 slice per complete-tile slot (a
    texel a cell, rows south, columns east, chunks in MCNK order; R: effect set colour index + 1,
    G: CELL_* bits), what the caller gave for each tile (kept, so a slot that moves or a texture
    that grows is written again), and the overlay, brush and picked-cell uniforms. Drawing them
    costs the terrain's fragment shader a branch when nothing is shown."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.tex = None
        self.capacity = 0
        self.data: dict = {}  # tile key -> (128, 128, 4) u1
        self.written: dict = {}  # slot -> the data it holds (identity)
        self.mask = 0  # OVERLAY_BITS shown
        self.brush = (0.0, 0.0, 0.0, 0.0)  # x, y, radius, shown
        self.pick = (0.0, 0.0, 0.0, 0.0)  # NW corner x, y, size, shown
        self.set_colours: tuple = tuple((0.5, 0.5, 0.5) for _ in range(20))
        self._serial = 0  # bumped by set(): what texture() last wrote is checked again
        self._seen = None  # (terrain version, serial, capacity) texture() last made current

    def set(self, key, cells: np.ndarray | None) -> None:
        self._serial += 1
        if cells is None:
            self.data.pop(key, None)
        else:
            cells = np.ascontiguousarray(cells, np.uint8)
            if cells.shape != (CELLS, CELLS, 4):
                raise ValueError(f"cell overlay of {key}: shape {cells.shape}, want ({CELLS}, {CELLS}, 4)")
            self.data[key] = cells

    @property
    def active(self) -> bool:
        return bool(self.mask) or self.brush[3] > 0.5 or self.pick[3] > 0.5

    def texture(self, tiles: dict, capacity: int, version: int):
        """The texture array with every resident complete tile's slice as given (written when the
        data or the slot changed; only while an overlay is shown). The resident tiles are walked
        only when ``version`` (the terrain's: tiles came or went) or the data changed, not every
        frame."""
        import moderngl

        state = (version, self._serial, capacity)
        if self.tex is not None and state == self._seen:
            return self.tex
        self._seen = state

        if self.tex is None or self.capacity < capacity:
            if self.tex is not None:
                self.tex.release()
            self.capacity = max(capacity, 1)
            self.tex = gpu_memory(self.ctx).track(self.ctx.texture_array((CELLS, CELLS, self.capacity), 4),
                                                  "terrain-cells")
            self.tex.filter = (moderngl.NEAREST, moderngl.NEAREST)
            self.written = {}
        empty = None
        for key, t in tiles.items():
            if t.far:
                continue
            d = self.data.get(key)
            if self.written.get(t.slot, False) is d:
                continue
            if d is None:
                empty = np.zeros((CELLS, CELLS, 4), np.uint8) if empty is None else empty
            self.tex.write((d if d is not None else empty).tobytes(), viewport=(0, 0, t.slot, CELLS, CELLS, 1))
            self.written[t.slot] = d
        return self.tex

    def uniforms(self, prog) -> None:
        set_uniform(prog, "uOverlay", int(self.mask))
        set_uniform(prog, "uBrush", tuple(float(v) for v in self.brush))
        set_uniform(prog, "uPick", tuple(float(v) for v in self.pick))
        if self.mask:
            set_uniform(prog, "uSetColours", self.set_colours)

    def release(self):
        if self.tex is not None:
            self.tex.release()
        self.tex, self.capacity, self.written, self._seen = None, 0, {}, None


FRAME_BINDING = 3  # storage binding of the frame block's buffer in terrain_lod.glsl (frame.glsl)


class _LodTables:
    """One arena's inputs to the LOD compute pass (per-chunk boxes and level ranges, uploaded when
    its resident set changes) and the indirect commands the pass writes for it, a section per view."""

    def __init__(self, ctx, arena):
        self.ctx, self.arena = ctx, arena
        self.capacity = 0  # slots the chunk and command buffers hold
        self.slots = 0  # slots the last upload wrote (what the compute pass and the draw cover)
        self.dirty = True
        self.chunks = self.ranges = self.commands = None
        self.command_views = 0

    def upload(self, tiles):
        """Per-chunk boxes and level ranges of every slot (zero counts in free slots)."""
        # the slots the tables cover: the arena may hand out a slot before its tile is registered
        # (add_steps), and the compute pass must not read past what was written here
        n = self.slots = max(self.arena.slots, 1)
        boxes = np.zeros((n, 256, 8), np.float32)
        ranges = np.zeros((n, 256, 2 * LEVELS), np.uint32)
        for t in tiles:
            boxes[t.slot, :, :3], boxes[t.slot, :, 4:7] = t.chunk_lo, t.chunk_hi
            ranges[t.slot, :, :LEVELS], ranges[t.slot, :, LEVELS:] = t.lod_first, t.lod_count
        if n > self.capacity:
            for b in (self.chunks, self.ranges, self.commands):
                if b is not None:
                    b.release()
            self.commands, self.command_views = None, 0
            self.capacity = max(n, 2 * self.capacity, 4)
            mem = gpu_memory(self.ctx)
            self.chunks = mem.track(self.ctx.buffer(reserve=self.capacity * 256 * 32), "terrain-tables")
            self.ranges = mem.track(self.ctx.buffer(reserve=self.capacity * 256 * 8 * LEVELS), "terrain-tables")
        self.chunks.write(boxes.tobytes())
        self.ranges.write(ranges.tobytes())
        self.dirty = False

    def commands_for(self, n_views: int):
        """The command buffer, with a section for each of ``n_views`` views."""
        if self.commands is None or self.command_views < n_views:
            if self.commands is not None:
                self.commands.release()
            self.command_views = max(n_views, 2)
            self.commands = gpu_memory(self.ctx).track(
                self.ctx.buffer(reserve=self.command_views * self.capacity * 256 * CMD_DTYPE.itemsize), "terrain-tables")
        return self.commands

    def release(self):
        for b in (self.chunks, self.ranges, self.commands):
            if b is not None:
                b.release()
        self.chunks = self.ranges = self.commands = None
        self.capacity = self.command_views = 0


class TerrainSet(Source):
    """Resident terrain tiles: complete ones in a :class:`TerrainArena`, far ones (terrain alone,
    levels ``far_level``..4, a low-resolution colour) in a :class:`FarArena`. GL 4.3: each frame
    one compute dispatch per arena over every resident chunk (frustum, view distance, LOD level
    -> one indirect command per chunk and view) and one ``glMultiDrawElementsIndirect`` per arena:
    the CPU's work per frame does not depend on how many tiles are resident, and it reads nothing
    back. The per-chunk inputs (boxes, index ranges per level) are uploaded when the resident set
    changes. Older GL: each tile's finest level drawn whole (the vertex shader's morph still makes
    far terrain look as coarse as the levels would)."""

    name = "terrain"

    def __init__(self, ctx, programs=None, indirect: bool | None = None, lod: TerrainLod | None = None,
                 far_level: int = FAR_LEVEL):
        self.ctx, self.programs = ctx, programs
        self.indirect = (ctx.version_code >= 430) if indirect is None else indirect
        self.lod = lod or TerrainLod()
        self.arena = TerrainArena(ctx)
        self.far = FarArena(ctx, far_level)
        self.tiles: dict = {}
        self.version = 0  # bumped when a tile is registered or removed (the horizon's mask follows it)
        self._colour_sum, self._colour_n = np.zeros(3), 0  # of the far tiles' mean colours
        self._tables = {id(self.arena): _LodTables(ctx, self.arena), id(self.far): _LodTables(ctx, self.far)}
        self._lod_eye = None
        self._cull = None
        self._readback = Readback(ctx)  # statistics and tests
        self.cells = CellOverlays(ctx)  # the workbench's overlays (terrain.glsl)

    @property
    def far_level(self) -> int:
        return self.far.first_level

    def _arena_of(self, tile: TerrainTile):
        return self.far if tile.far else self.arena

    def add(self, key, arrays) -> TerrainTile:
        """Upload a tile's :class:`TerrainArrays` (or :class:`FarArrays`) into its arena."""
        arena = self.far if isinstance(arrays, FarArrays) else self.arena
        return self.register(key, arena.add(arrays))

    def register(self, key, tile: TerrainTile) -> TerrainTile:
        """Draw ``tile`` (from the last of an arena's ``add_steps``) as ``key``'s terrain (in place
        of what ``key`` had: a far tile's complete one, or the other way round)."""
        old = self.tiles.get(key)
        if old is not None and old is not tile:
            self.remove(key)
        self.tiles[key] = tile
        self._tables[id(self._arena_of(tile))].dirty = True
        self.version += 1
        self._account(key, tile)
        self._count_colour(tile, 1)
        return tile

    def _count_colour(self, tile: TerrainTile, sign: int):
        if tile.mean_colour is not None:
            self._colour_sum += sign * np.asarray(tile.mean_colour)
            self._colour_n += sign

    def far_mean_colour(self):
        """The resident far tiles' mean colour (0..1 RGB), None without any."""
        return tuple(self._colour_sum / self._colour_n) if self._colour_n > 0 else None

    def _account(self, key, tile: TerrainTile | None):
        mem = gpu_memory(self.ctx)
        near = tile is not None and not tile.far
        mem.use(key, "terrain-near", self.arena.slot_bytes if near else 0)
        mem.use(key, "terrain-far", self.far.slot_bytes if tile is not None and tile.far else 0)
        arena = None if tile is None else self._arena_of(tile)
        lines = arena is not None and arena.lbo is not None
        mem.use(key, "terrain-lines", arena.slot_indices * 8 if lines else 0)

    def remove(self, key):
        t = self.tiles.pop(key, None)
        if t is not None:
            arena = self._arena_of(t)
            arena.remove(t)
            self._tables[id(arena)].dirty = True
            self.version += 1
            self._account(key, None)
            self._count_colour(t, -1)

    @property
    def _dirty(self) -> bool:
        return any(t.dirty for t in self._tables.values())

    def prepare(self, frame):
        """The compute pass for every view of ``frame``, one dispatch per arena: LOD levels from the
        first (main) view's camera in every view, so a shadow view draws the same geometry."""
        if not frame.views:
            return
        self._lod_eye = tuple(float(v) for v in frame.views[0].camera.position)
        if not self.tiles:
            return
        views = frame.all_views
        line_views = sum(1 << v.slot for v in views if v.fill == "lines")
        if line_views:  # the edge lists, made the first time a lines view asks
            for arena in (self.arena, self.far):
                if arena.capacity and arena.lbo is None:
                    arena.lines()
                    for key, t in self.tiles.items():
                        self._account(key, t)
        if not self.indirect:
            return
        if self._cull is None:
            from ..gl.programs import frame_slot_defines

            self._cull = load_program(self.ctx, "terrain_lod.glsl", frame_slot_defines(self.ctx, FRAME_BINDING))
        cs = self._cull
        set_uniform(cs, "uLodEye", self._lod_eye)
        set_uniform(cs, "uLodBands", self.lod.shader_bands())
        set_uniform(cs, "uLodZScale", LOD_Z_SCALE)
        set_uniform(cs, "uLineViews", line_views)  # draw edge lists
        dispatched = False
        for arena in (self.arena, self.far):
            tab = self._tables[id(arena)]
            if not arena.slots:
                continue
            if tab.dirty:
                tab.upload(t for t in self.tiles.values() if self._arena_of(t) is arena)
            set_uniform(cs, "uChunks", tab.slots * 256)
            set_uniform(cs, "uViewChunks", tab.capacity * 256)
            set_uniform(cs, "uMinLevel", getattr(arena, "first_level", 0))
            bind_storage(self.ctx, (tab.chunks, tab.ranges, tab.commands_for(len(views)), frame.uniforms.buffer))
            cs.run((tab.slots * 256 + 63) // 64, 1, len(views))
            dispatched = True
        if dispatched:
            self.ctx.memory_barrier()

    def read_commands(self, view, far: bool = False) -> np.ndarray:
        """(slots * 256,) CMD_DTYPE the compute pass wrote for ``view`` in the complete (or, with
        ``far``, the far) arena (tests and statistics); slot ``t.slot`` of tile ``t`` holds its 256
        chunks."""
        tab = self._tables[id(self.far if far else self.arena)]
        if tab.commands is None:
            return np.zeros(0, CMD_DTYPE)
        size = CMD_DTYPE.itemsize
        return np.frombuffer(self._readback.read(tab.commands, tab.slots * 256 * size,
                                                 view.slot * tab.capacity * 256 * size), CMD_DTYPE)

    def read_stats(self, view) -> dict:
        """Triangles and chunks per level the compute pass chose for ``view`` (waits for the GPU:
        statistics only), both arenas."""
        per_triangle = 6 if view.fill == "lines" else 3  # a lines view's commands count edge indices
        tris, per_level = 0, np.zeros(LEVELS, np.int64)
        for far in (False, True):
            cmds = self.read_commands(view, far)
            drawn = cmds["count"] > 0
            tris += int(cmds["count"].sum()) // per_triangle
            per_level += np.bincount(cmds["base_instance"][drawn], minlength=LEVELS)[:LEVELS]
        return {"triangles": tris, "chunks_per_level": per_level.tolist()}

    def warm_programs(self, pass_, view) -> list:
        if self.indirect and self._cull is None:  # the LOD pass, compiled here rather than at the first tile
            from ..gl.programs import frame_slot_defines

            self._cull = load_program(self.ctx, "terrain_lod.glsl", frame_slot_defines(self.ctx, FRAME_BINDING))
        return [(pass_.program(self.programs, "terrain", view, extra), "opaque") for extra in (None, {"FAR_TILE": True})]

    def draw(self, pass_, view) -> DrawCounts:
        """Each arena's resident chunks in one indirect multi-draw (GL 4.3), or each tile's finest level."""
        import moderngl

        if not self.tiles:
            return DrawCounts()
        lines = view.fill == "lines"
        k, mode = (2, moderngl.LINES) if lines else (1, moderngl.TRIANGLES)
        out = DrawCounts()
        for arena, texture in ((self.arena, self.arena.alpha), (self.far, self.far.colour)):
            if not arena.slots:
                continue
            far = arena is self.far
            prog = pass_.program(self.programs, "terrain", view, {"FAR_TILE": True} if far else None)
            for name, value in (("uLodEye", self._lod_eye or tuple(view.camera.position)),
                                ("uLodBands", self.lod.shader_bands()), ("uLodZScale", LOD_Z_SCALE),
                                ("uLodMorph", float(self.lod.morph)), ("uLodDebug", float(self.lod.debug)),
                                ("uMcsh", float(self.lod.mcsh))):
                set_uniform(prog, name, value)
            if not far:
                use_texture(self.ctx, self.arena.layers, 0)
                cells = self.cells
                cells.uniforms(prog)
                if cells.active:
                    from ..gl.programs import CELLS_UNIT

                    use_texture(self.ctx, cells.texture(self.tiles, arena.capacity, self.version), CELLS_UNIT)
            use_texture(self.ctx, texture, 1)
            # a lines view: the edge list with a line-list pipeline (its commands were written doubled)
            vao = arena.line_vao(prog) if lines else arena.vao(prog)
            tab = self._tables[id(arena)]
            if self.indirect:
                if tab.dirty or tab.commands is None:  # a tile arrived after prepare: drawn from the next frame on
                    continue
                vao.render_indirect(tab.commands, mode=mode, count=tab.slots * 256, first=view.slot * tab.capacity * 256)
                # triangles are counted on the GPU only (read_stats); the CPU reads nothing back
                out += DrawCounts(1, 0, 0)
                continue
            for t in self.tiles.values():
                if self._arena_of(t) is not arena:
                    continue
                lv = t.first_level
                first = int(t.lod_first[0, lv])
                vao.render(mode, first=k * first, vertices=k * int(t.lod_count[:, lv].sum()))
                out += DrawCounts(1, 0, t.triangles)
        return out

    def release(self):
        self.tiles.clear()
        self._colour_sum, self._colour_n = np.zeros(3), 0
        self.arena.release()
        self.far.release()
        for tab in self._tables.values():
            tab.release()
        self._readback.release()
        self.cells.release()
        if self._cull is not None:
            self._cull.release()
            self._cull = None
