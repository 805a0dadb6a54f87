"""A tile's liquids as one mesh (numpy, off the GL thread): the ADT's MH2O or MCLQ layers and the
MLIQ of the WMOs placed on it, in world space.

Each liquid cell is a quad over its four corner vertices, which lie on the terrain's 9×9 outer
vertex grid; a vertex carries its height, the water's depth there (the surface minus the terrain
under it, which the colour pass turns into opacity: shallow water shows the ground), its kind
(water, ocean, magma, slime) and world-scaled texture coordinates. Heights outside a layer's own
range (unused vertices of MCLQ records hold garbage in some files) are clamped to it, as noggit3
does. A WMO's liquid has no terrain under it that the tile knows: its depth is a constant.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from wowgrass.errors import FormatError

log = logging.getLogger(__name__)

UNIT = 1600.0 / 3.0 / 128.0
UV_SCALE = 1.0 / (4.0 * UNIT)        # a texture repeats every 4 cells (16.7 yards)
WMO_LIQUID_DEPTH = 1.2               # yards: what a WMO's liquid is drawn as (no terrain below it known)
VERTEX_DTYPE = np.dtype([("pos", "<f4", 3), ("depth", "<f4"), ("kind", "<f4"), ("uv", "<f4", 2)])
VERTEX_FORMAT = "3f 1f 1f 2f"
VERTEX_ATTRS = ("in_position", "in_depth", "in_kind", "in_uv")


@dataclass
class LiquidMesh:
    vertices: np.ndarray = field(default_factory=lambda: np.zeros(0, VERTEX_DTYPE))
    indices: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))
    textures: dict = field(default_factory=dict)     # kind -> the texture pattern of its first LiquidType
    layers: int = 0
    cells: int = 0
    types: dict = field(default_factory=dict)        # LiquidType id -> cells

    @property
    def triangles(self) -> int:
        return len(self.indices) // 3

    @property
    def nbytes(self) -> int:
        return self.vertices.nbytes + self.indices.nbytes

    def __bool__(self) -> bool:
        return len(self.indices) > 0


def _quads(n_grid: int, cols: int, cells: np.ndarray) -> np.ndarray:
    """(k, 6) vertex ids (into grids of ``n_grid`` vertices, ``cols`` + 1 per row) of the two
    triangles of each cell (grid, r, c) in ``cells`` (k, 3)."""
    g, r, c = cells[:, 0], cells[:, 1], cells[:, 2]
    w = cols + 1
    v00 = g * n_grid + r * w + c
    v01, v10 = v00 + 1, v00 + w
    v11 = v10 + 1
    return np.stack([v00, v10, v11, v00, v11, v01], axis=1)


def _compact(vertices: np.ndarray, quads: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The vertices the quads use, and the quads' indices into them."""
    used, inv = np.unique(quads.ravel(), return_inverse=True)
    return vertices[used], inv.astype(np.uint32)


def adt_liquid_mesh(adt, types, *, by_type: bool = False):
    """The ADT's own liquid layers as one mesh (``by_type``: a mesh per LiquidType id); a
    decoding error is returned (and logged), not raised: a tile whose liquid is broken still
    shows its terrain."""
    from wowgrass.formats.liquid import SOURCE_MH2O, tile_liquid

    try:
        liq = tile_liquid(adt)
    except FormatError as exc:
        log.warning("liquid of %s not drawn: %s", adt.path or "tile", exc)
        return ({} if by_type else LiquidMesh()), str(exc)
    lay = liq.layers
    kinds = types.kinds(lay["type"], lay["format"]) if liq.source == SOURCE_MH2O else lay["kind"].astype(np.uint8)
    kinds = np.where(kinds > 3, 0, kinds)
    if not by_type:
        return layers_mesh(adt, lay, kinds, types), None
    return {int(t): layers_mesh(adt, lay[lay["type"] == t], kinds[lay["type"] == t], types)
            for t in np.unique(lay["type"]).tolist()}, None


def layers_mesh(adt, lay, kinds, types) -> LiquidMesh:
    """The mesh of some of a tile's liquid layers (``kinds``: each layer's kind)."""
    from wowgrass.formats.liquid import heights_in_use

    n = len(lay)
    if not n:
        return LiquidMesh()
    chunk = lay["chunk"].astype(np.int64)
    pos = adt.positions[chunk].astype(np.float64)
    r = np.arange(9)
    x = pos[:, 0, None, None] - r[None, :, None] * UNIT
    y = pos[:, 1, None, None] - r[None, None, :] * UNIT
    x, y = np.broadcast_arrays(x, y)
    h = heights_in_use(lay)
    h = np.clip(np.where(np.isfinite(h), h, lay["min_height"][:, None, None]),
                lay["min_height"][:, None, None], lay["max_height"][:, None, None])
    outer = (r[:, None] * 17 + r[None, :]).ravel()
    ground = adt.abs_heights[chunk][:, outer].reshape(n, 9, 9).astype(np.float64)
    v = np.zeros((n, 9, 9), VERTEX_DTYPE)
    v["pos"] = np.stack([x, y, h], axis=-1)
    v["depth"] = np.maximum(h - ground, 0.0)
    v["kind"] = kinds[:, None, None]
    v["uv"] = np.stack([-y * UV_SCALE, -x * UV_SCALE], axis=-1)
    cells = np.argwhere(lay["exists"])
    if not len(cells):
        return LiquidMesh(layers=n)
    verts, idx = _compact(v.reshape(-1), _quads(81, 8, cells))
    textures = {}
    for k, t in zip(kinds.tolist(), lay["type"].tolist()):
        textures.setdefault(int(k), types.get(int(t)).texture)
    counts = np.bincount(cells[:, 0], minlength=n)
    per_type: dict = {}
    for t, c in zip(lay["type"].tolist(), counts.tolist()):
        per_type[int(t)] = per_type.get(int(t), 0) + int(c)
    return LiquidMesh(verts, idx, textures, n, len(cells), per_type)


def wmo_liquid_mesh(liquid, matrix: np.ndarray, kind: int) -> LiquidMesh:
    """A placed WMO group's MLIQ (``liquid``: :class:`~wowgrass.formats.wmo.WmoLiquid`) in world space."""
    if liquid.x_tiles <= 0 or liquid.y_tiles <= 0 or liquid.x_verts < liquid.x_tiles + 1 or \
            liquid.y_verts < liquid.y_tiles + 1:
        return LiquidMesh()
    yv, xv = liquid.heights.shape
    j, i = np.mgrid[0:yv, 0:xv]
    local = np.stack([liquid.corner[0] + i * UNIT, liquid.corner[1] + j * UNIT, liquid.heights], axis=-1)
    m = np.asarray(matrix, np.float64)
    world = local.reshape(-1, 3) @ m[:3, :3].T + m[:3, 3]
    v = np.zeros(len(world), VERTEX_DTYPE)
    v["pos"] = world
    v["depth"] = WMO_LIQUID_DEPTH
    v["kind"] = kind if 0 <= kind <= 3 else 0
    v["uv"] = np.stack([-world[:, 1] * UV_SCALE, -world[:, 0] * UV_SCALE], axis=-1)
    ex = liquid.exists
    cells = np.argwhere(ex[:liquid.y_tiles, :liquid.x_tiles])
    if not len(cells):
        return LiquidMesh()
    cells = np.concatenate([np.zeros((len(cells), 1), np.int64), cells], axis=1)
    # the MLIQ grid's rows are xv wide (x_verts may exceed x_tiles + 1)
    quads = _quads(yv * xv, xv - 1, cells)
    verts, idx = _compact(v, quads)
    return LiquidMesh(verts, idx, {}, 1, len(cells))


def merge(meshes) -> LiquidMesh:
    """One mesh of several (indices offset)."""
    meshes = [m for m in meshes if m]
    if not meshes:
        return LiquidMesh()
    if len(meshes) == 1:
        return meshes[0]
    base = np.cumsum([0] + [len(m.vertices) for m in meshes[:-1]])
    out = LiquidMesh(np.concatenate([m.vertices for m in meshes]),
                     np.concatenate([m.indices + np.uint32(b) for m, b in zip(meshes, base)]))
    for m in meshes:
        for k, t in m.textures.items():
            out.textures.setdefault(k, t)
        for t, c in m.types.items():
            out.types[t] = out.types.get(t, 0) + c
        out.layers += m.layers
        out.cells += m.cells
    return out
