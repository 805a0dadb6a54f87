"""Terrain meshes and LOD: ADT arrays -> a tile's mesh with five LOD index sets, its MTEX layers and
MCAL alpha maps (pure numpy, thread-safe: built off the GL thread).

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

The GPU side: terrain_arenas.py (where the tiles live on the GPU), terrain.py (the Source).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from wowgrass.formats.adt import UNIT_SIZE, VERTEX_ROWCOL, ZEROPOINT
from wowgrass.game.coords import corner_steps

from ..gl.meshes import edge_indices

LAYER_SIZE = 256  # every MTEX texture is resized to this square for the texture array
LAYER_LEVELS = LAYER_SIZE.bit_length()  # its mipmap levels, down to 1x1
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


ATLAS = 1024  # a tile's alpha maps as one 1024x1024 slice: 16x16 chunks of 64x64
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
    col0, row0 = corner_steps(pos[:, 0], pos[:, 1], HALF_UNIT)
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


def far_level_for(reach: float, bands=LOD_BANDS) -> int:
    """The level of the LOD band ``reach`` falls in: the finest a tile beyond ``reach`` is drawn at
    (a chunk's LOD distance is never below its tile's distance in XY)."""
    return int(np.searchsorted(np.asarray(bands, np.float64), float(reach), side="right"))
