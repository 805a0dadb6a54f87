"""A tile's liquids as one mesh (numpy, off the GL thread): the ADT's MH2O or MCLQ layers and the
MLIQ of the WMOs placed on it, in world space.

Each liquid cell is a quad over its four corner vertices, which lie on the terrain's 9×9 outer
vertex grid; a vertex carries its height, the water's depth there (the surface minus the terrain
under it, which the colour pass turns into opacity: shallow water shows the ground), its kind
(water, ocean, magma, slime) and world-scaled texture coordinates. Heights outside a layer's own
range (unused vertices of MCLQ records hold garbage in some files) are clamped to it, as noggit3
does. A WMO's liquid has no terrain under it that the tile knows: its depth is a constant.

The viewer's meshes (``merged=True``, docs/view.md "Liquids at map scale") draw the same surface
with far fewer triangles: a cell whose four corners share one height and whose depth is
*saturated* there (all four at or past the kind's full-colour depth :data:`DEPTH_RANGE`, or all
four at 0: below the ground) looks the same whatever the size of the quad it belongs to, so such
cells of one level, kind and depth class are joined across chunks into rectangles (runs along
each cell row of the tile, then runs of equal rows); the other cells (sloping surfaces, the
shallows of a shore, cells two layers share) keep their own quad. Vertex XY then come from the
map-wide cell grid (as the terrain's do), so a rectangle and its per-cell neighbours meet on
exactly the same coordinates. A far tile's lean liquid (``step``) does the same on the coarse
grid its lean terrain keeps (every ``step``-th outer vertex) and leaves out the cells below its
ground, which that terrain hides.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from wowgrass.errors import FormatError
from wowgrass.formats.adt import UNIT_SIZE
from wowgrass.game.coords import corner_steps, map_point

log = logging.getLogger(__name__)

UNIT = UNIT_SIZE
UV_SCALE = 1.0 / (4.0 * UNIT)        # a texture repeats every 4 cells (16.7 yards)
WMO_LIQUID_DEPTH = 1.2               # yards: what a WMO's liquid is drawn as (no terrain below it known)
VERTEX_DTYPE = np.dtype([("pos", "<f4", 3), ("depth", "<f4"), ("kind", "<f4"), ("uv", "<f4", 2)])
VERTEX_FORMAT = "3f 1f 1f 2f"
VERTEX_ATTRS = ("in_position", "in_depth", "in_kind", "in_uv")
DEPTH_RANGE = (3.0, 9.0, 1.0, 1.0)   # yards of depth to full colour: water, ocean (magma, slime: opaque)
# the viewer's vertices: also where in its tile's depth map a vertex is (texel x, y, slice; slice
# -1: a cell's corner with its own depth, -2: a joined quad's, of its own constant depth);
# LiquidSet puts the tile's slice in when it takes the tile
VIEW_DTYPE = np.dtype(VERTEX_DTYPE.descr + [("tex", "<f4", 3)])
VIEW_FORMAT = VERTEX_FORMAT + " 3f"
VIEW_ATTRS = VERTEX_ATTRS + ("in_tex",)
DEPTH_MAP = 129                      # texels a side of a tile's depth map: its outer vertices
DEPTH_MAP_SCALE = max(DEPTH_RANGE[:2])   # yards of depth a depth map holds (deeper: full colour anyway)
CLS_DRY, CLS_DEEP, CLS_OPAQUE, CLS_MAPPED = 0, 1, 2, 3   # how a joined cell gets its depth
MAX_GRID = 4096                      # cells a side of a tile's merge grid (more: odd positions, no merging)
MERGE_MIN_CELLS = 2048               # the viewer joins the liquid of tiles with at least this many cells (8 chunks)


@dataclass
class LiquidMesh:
    vertices: np.ndarray = field(default_factory=lambda: np.zeros(0, VERTEX_DTYPE))
    indices: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))
    textures: dict = field(default_factory=dict)     # kind -> the texture pattern of its first LiquidType
    layers: int = 0
    cells: int = 0
    types: dict = field(default_factory=dict)        # LiquidType id -> cells
    depth_map: np.ndarray | None = None              # the viewer's mesh: (DEPTH_MAP, DEPTH_MAP) u1 (merged_mesh)

    @property
    def triangles(self) -> int:
        return len(self.indices) // 3

    @property
    def nbytes(self) -> int:
        return self.vertices.nbytes + self.indices.nbytes + (0 if self.depth_map is None else self.depth_map.nbytes)

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


def adt_liquid_mesh(adt, types, *, by_type: bool = False, merged: bool = False, step: int = 1,
                    merge_from: int = 0):
    """The ADT's own liquid layers as one mesh (``by_type``: a mesh per LiquidType id); a
    decoding error is returned (and logged), not raised: a tile whose liquid is broken still
    shows its terrain. ``merged``: the viewer's mesh (flat saturated cells joined, see above);
    ``step`` > 1 (with ``merged``): a far tile's lean mesh on every ``step``-th vertex;
    ``merge_from``: a tile with fewer liquid cells keeps a quad a cell (a pond's mesh is
    kilobytes either way, and draws exactly as it always did)."""
    from wowgrass.formats.liquid import SOURCE_MH2O, tile_liquid

    try:
        liq = tile_liquid(adt)
    except FormatError as exc:
        log.warning("liquid of %s not drawn: %s", adt.path or "tile", exc)
        return ({} if by_type else LiquidMesh()), str(exc)
    for note in liq.notes:
        log.info("%s: %s", adt.path or "tile", note)
    lay = liq.layers
    kinds = types.kinds(lay["type"], lay["format"]) if liq.source == SOURCE_MH2O else lay["kind"].astype(np.uint8)
    kinds = np.where(kinds > 3, 0, kinds)
    if merged and int(lay["exists"].sum()) < merge_from:
        merged = False
    build = (lambda a, ly, k, t: merged_mesh(a, ly, k, t, step=step)) if merged else layers_mesh
    if not by_type:
        return build(adt, lay, kinds, types), None
    return {int(t): build(adt, lay[lay["type"] == t], kinds[lay["type"] == t], types)
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


def _layer_vertices(adt, lay):
    """(heights (n, 9, 9), ground (n, 9, 9)) of layers: heights clamped to each layer's range."""
    from wowgrass.formats.liquid import heights_in_use

    n = len(lay)
    chunk = lay["chunk"].astype(np.int64)
    h = heights_in_use(lay)
    h = np.clip(np.where(np.isfinite(h), h, lay["min_height"][:, None, None]),
                lay["min_height"][:, None, None], lay["max_height"][:, None, None])
    r = np.arange(9)
    outer = (r[:, None] * 17 + r[None, :]).ravel()
    ground = adt.abs_heights[chunk][:, outer].reshape(n, 9, 9).astype(np.float64)
    return h, ground


def merged_mesh(adt, lay, kinds, types, *, step: int = 1) -> LiquidMesh:
    """The viewer's mesh of some of a tile's liquid layers (module docstring): flat cells joined
    into rectangles, the rest a quad a cell, in :data:`VIEW_DTYPE`; ``step`` > 1: the lean mesh
    of a far tile (cells of ``step`` x ``step``, those under the ground left out)."""
    n = len(lay)
    if not n:
        return LiquidMesh(np.zeros(0, VIEW_DTYPE))
    s = int(step) if int(step) in (1, 2, 4, 8) else 1
    k = 8 // s                                                   # cells a side of a chunk
    h_full, ground_full = _layer_vertices(adt, lay)
    h, ground = h_full[:, ::s, ::s], ground_full[:, ::s, ::s]    # the lean terrain's vertices
    depth = np.maximum(h - ground, 0.0)
    ex = lay["exists"].reshape(n, k, s, k, s).any(axis=(2, 4))
    kind = kinds.astype(np.int64)
    # the chunk's north-west corner on the map-wide grid of cells (as the terrain places vertices)
    pos = adt.positions[lay["chunk"].astype(np.int64)].astype(np.float64)
    g0 = np.stack(corner_steps(pos[:, 0], pos[:, 1], UNIT)[::-1], axis=1)  # (n, 2): rows (-X), cols (-Y)
    corners = lambda a: np.stack([a[:, :-1, :-1], a[:, 1:, :-1], a[:, :-1, 1:], a[:, 1:, 1:]])  # noqa: E731
    hc, dc = corners(h), corners(depth)
    flat = (hc == hc[0]).all(axis=0)
    rng = np.asarray(DEPTH_RANGE)[np.minimum(kind, 3)][:, None, None]
    deep, dry = (dc >= rng).all(axis=0), (dc <= 0.0).all(axis=0)
    wet = (kind < 2)[:, None, None]                              # water, ocean: drawn by depth
    cls = np.where(~wet, CLS_OPAQUE, np.where(deep, CLS_DEEP, np.where(dry, CLS_DRY, -1)))
    if s > 1:
        ex &= ~(dry & wet)                                       # under the lean terrain: hidden
    # every cell on the tile's grid of cells; a cell two layers claim stays per-cell in both
    li, ci, cj = np.nonzero(ex)
    gr, gc = g0[li, 0] + ci * s, g0[li, 1] + cj * s
    r0, c0 = (gr.min(), gc.min()) if len(li) else (0, 0)
    hgt, wid = ((gr.max() - r0) // s + 1, (gc.max() - c0) // s + 1) if len(li) else (0, 0)
    lin = ((gr - r0) // s) * wid + (gc - c0) // s
    _, at, counts = np.unique(lin, return_inverse=True, return_counts=True)
    cell_flat = flat[li, ci, cj] & ~(counts[at.reshape(-1)] > 1) & ((gr - r0) % s == 0) & ((gc - c0) % s == 0)
    cell_cls = cls[li, ci, cj]
    lvl = hc[0][li, ci, cj].astype(np.float32)
    # the tile's main wet level: its cells take their depth from the tile's depth map, whatever it
    # is, so that shores and shallows join the open water (other levels: saturated cells only)
    depth_map, origin = None, (0, 0)
    main = cell_flat & wet[li, 0, 0]
    if main.any():
        levels, votes = np.unique(lvl[main], return_counts=True)
        top = levels[np.argmax(votes)]
        depth_map, origin = tile_depth_map(adt, float(top))
        if depth_map is not None:
            cell_cls = np.where(main & (lvl == top), CLS_MAPPED, cell_cls)
    ok = cell_flat & (cell_cls >= 0)
    if hgt > MAX_GRID or wid > MAX_GRID:
        ok[:] = False
    parts = []
    if ok.any():
        key = np.stack([lvl[ok].view(np.uint32).astype(np.int64), kind[li[ok]], cell_cls[ok]], axis=1)
        keys, inv = np.unique(key, axis=0, return_inverse=True)
        grid = np.full((hgt, wid), -1, np.int64)
        grid.reshape(-1)[lin[ok]] = inv.reshape(-1)
        rect = _rectangles(grid)                                  # (m, 5): row0, col0, row1, col1, key
        kk = keys[rect[:, 4]]
        parts.append(_rect_vertices(r0 + rect[:, 0] * s, c0 + rect[:, 1] * s, r0 + rect[:, 2] * s,
                                    c0 + rect[:, 3] * s, kk[:, 0].astype(np.uint32).view(np.float32), kk[:, 1],
                                    kk[:, 2], origin))
    rest = ~ok
    if rest.any():  # a quad a cell over its own corners
        i, a, b = li[rest], ci[rest], cj[rest]
        rows = np.stack([a, a + 1, a + 1, a], axis=1)
        cols = np.stack([b, b, b + 1, b + 1], axis=1)
        # a layer's vertex once, whatever the cells sharing it
        used, inv = np.unique((i[:, None] * (k + 1) + rows) * (k + 1) + cols, return_inverse=True)
        vi, vr, vc = used // ((k + 1) * (k + 1)), used // (k + 1) % (k + 1), used % (k + 1)
        v = np.zeros(len(used), VIEW_DTYPE)
        x, y = map_point(g0[vi, 1] + vc * s, g0[vi, 0] + vr * s, UNIT)
        v["pos"] = np.stack([x, y, h[vi, vr, vc]], axis=-1)
        v["depth"] = depth[vi, vr, vc]
        v["kind"] = kind[vi]
        v["uv"] = np.stack([-y * UV_SCALE, -x * UV_SCALE], axis=-1)
        v["tex"] = (0.0, 0.0, -1.0)
        cell_quads = inv.reshape(-1, 4)
    else:
        v, cell_quads = np.zeros(0, VIEW_DTYPE), np.zeros((0, 4), np.int64)
    # two triangles a quad (v0 NW, v1 SW, v2 SE, v3 NE), the per-cell mesh's winding
    rect_v = parts[0].reshape(-1) if parts else np.zeros(0, VIEW_DTYPE)
    quads = np.concatenate([np.arange(len(rect_v)).reshape(-1, 4), cell_quads + len(rect_v)])
    verts = np.concatenate([rect_v, v])
    idx = quads[:, [0, 1, 2, 0, 2, 3]].astype(np.uint32).reshape(-1)
    if depth_map is not None and not (verts["tex"][:, 2] >= 0).any():
        depth_map = None
    textures = {}
    for kd, t in zip(kinds.tolist(), lay["type"].tolist()):
        textures.setdefault(int(kd), types.get(int(t)).texture)
    per_type: dict = {}
    cells_per_layer = lay["exists"].reshape(n, -1).sum(axis=1)
    for t, c in zip(lay["type"].tolist(), cells_per_layer.tolist()):
        per_type[int(t)] = per_type.get(int(t), 0) + int(c)
    return LiquidMesh(verts, idx, textures, n, int(cells_per_layer.sum()), per_type, depth_map)


def tile_depth_map(adt, level: float):
    """((DEPTH_MAP, DEPTH_MAP) u1, (row, col) of its first texel on the map-wide grid): the water's
    depth at ``level`` above each outer terrain vertex of the tile, over DEPTH_MAP_SCALE yards
    (what the liquid shader needs: deeper is full colour); None where the chunks do not lie on
    one tile's grid."""
    r = np.arange(9)
    outer = (r[:, None] * 17 + r[None, :]).ravel()
    ground = np.asarray(adt.abs_heights, np.float64)[:, outer].reshape(256, 9, 9)
    pos = np.asarray(adt.positions, np.float64)
    g0 = np.stack(corner_steps(pos[:, 0], pos[:, 1], UNIT)[::-1], axis=1)  # rows (-X), cols (-Y)
    t0 = g0.min(axis=0)
    loc = g0 - t0
    if loc.max() > DEPTH_MAP - 9 or (loc % 8).any():
        return None, (0, 0)
    rows = (loc[:, 0, None, None] + r[None, :, None]).repeat(9, axis=2)
    cols = (loc[:, 1, None, None] + r[None, None, :]).repeat(9, axis=1)
    out = np.zeros((DEPTH_MAP, DEPTH_MAP), np.uint8)
    d = np.clip((level - ground) / DEPTH_MAP_SCALE, 0.0, 1.0)
    out[rows, cols] = np.round(d * 255.0).astype(np.uint8)
    return out, (int(t0[0]), int(t0[1]))


def _rectangles(grid: np.ndarray) -> np.ndarray:
    """(m, 5) rectangles (row0, col0, row1, col1 exclusive, value) covering the cells of ``grid``
    (h, w) that hold a value >= 0, each of one value: the runs of equal values along each row,
    then the runs of equal (col0, col1, value) in consecutive rows joined."""
    h, w = grid.shape
    p = np.full((h, w + 2), -1, np.int64)
    p[:, 1:-1] = grid
    rr, cc = np.nonzero(p[:, 1:] != p[:, :-1])                  # boundaries before column cc
    same = rr[1:] == rr[:-1]
    r, a, b = rr[:-1][same], cc[:-1][same], cc[1:][same]
    val = p[r, a + 1]
    keep = val >= 0
    r, a, b, val = r[keep], a[keep], b[keep], val[keep]
    order = np.lexsort((r, val, b, a))
    r, a, b, val = r[order], a[order], b[order], val[order]
    new = np.ones(len(r), bool)
    new[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1]) | (val[1:] != val[:-1]) | (r[1:] != r[:-1] + 1)
    start = np.flatnonzero(new)
    end = np.r_[start[1:], len(r)] - 1
    return np.stack([r[start], a[start], r[end] + 1, b[start], val[start]], axis=1)


def _rect_vertices(r0, c0, r1, c1, level, kind, cls, origin) -> np.ndarray:
    """(m, 4) vertices of rectangles on the map-wide cell grid (NW, SW, SE, NE); a rectangle of
    :data:`CLS_MAPPED` reads its depth from the tile's depth map (``origin``: its first texel)."""
    rows = np.stack([r0, r1, r1, r0], axis=1)
    cols = np.stack([c0, c0, c1, c1], axis=1)
    x, y = map_point(cols, rows, UNIT)
    v = np.zeros(rows.shape, VIEW_DTYPE)
    v["pos"] = np.stack([x, y, np.broadcast_to(np.asarray(level, np.float64)[:, None], x.shape)], axis=-1)
    full = np.asarray(DEPTH_RANGE)[np.minimum(kind, 3)] * 2.0    # past full colour: smoothstep gives 1
    v["depth"] = np.where(cls == CLS_DRY, 0.0, full)[:, None]
    v["kind"] = np.asarray(kind)[:, None]
    v["uv"] = np.stack([-y * UV_SCALE, -x * UV_SCALE], axis=-1)
    mapped = (cls == CLS_MAPPED)[:, None]
    # slice -2: a joined quad of its own constant depth (the shader takes its distance per fragment)
    v["tex"] = np.stack([np.where(mapped, cols - origin[1], 0), np.where(mapped, rows - origin[0], 0),
                         np.where(mapped, 0.0, -2.0) + np.zeros(rows.shape)], axis=-1)
    return v


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
    if any(m.vertices.dtype == VIEW_DTYPE for m in meshes):  # the viewer's: every part in its layout
        meshes = [LiquidMesh(view_vertices(m.vertices), m.indices, m.textures, m.layers, m.cells, m.types,
                             m.depth_map) for m in meshes]
    base = np.cumsum([0] + [len(m.vertices) for m in meshes[:-1]])
    out = LiquidMesh(np.concatenate([m.vertices for m in meshes]),
                     np.concatenate([m.indices + np.uint32(b) for m, b in zip(meshes, base)]),
                     depth_map=next((m.depth_map for m in meshes if m.depth_map is not None), None))
    for m in meshes:
        for k, t in m.textures.items():
            out.textures.setdefault(k, t)
        for t, c in m.types.items():
            out.types[t] = out.types.get(t, 0) + c
        out.layers += m.layers
        out.cells += m.cells
    return out


def view_vertices(v: np.ndarray) -> np.ndarray:
    """Vertices in :data:`VIEW_DTYPE` (a WMO's, the exports' layout: their own depth)."""
    if v.dtype == VIEW_DTYPE:
        return v
    out = np.zeros(len(v), VIEW_DTYPE)
    for name in VERTEX_DTYPE.names:
        out[name] = v[name]
    out["tex"] = (0.0, 0.0, -1.0)
    return out
