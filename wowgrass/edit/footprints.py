"""Per-cell footprints: the cells of a tile that a building, a model, liquid, a hole, steep ground or a
texture covers, for the ground-effect rules' exclusions (noEffectDoodad) (docs/footprints.md).

Every footprint is (256, 8, 8) bool in the tile's MCNK order (as ``AdtTile.no_effect_doodad`` and
:mod:`wowgrass.edit.masks`).

**A cell is covered** when its square (:data:`CELL` = 4.1667 yards a side) and the footprint grown
by ``margin`` share some area: with ``margin`` 0, the footprint reaches into the square (touching
its edge or corner is not enough); with ``margin`` > 0, the square comes nearer than ``margin``
yards to the footprint (Euclidean distance on the ground plane, so a grown box has rounded
corners). A footprint that is only a point (a model without bounds) also covers the cell it lies
in (each point of the ground belongs to one cell: its north and west edges included).

The footprints, on the ground plane (world X north, Y west; heights play no part):

* ``buildings``: each MODF placement's extents, its world bounding box as the file stores it.
* ``models``: each MDDF placement's model bounding box (the M2 header's bounds, read through
  ``data``), turned and scaled as the client places it (:func:`~wowgrass.game.mapobjects.placement_matrices`,
  scale / 1024) and projected onto the ground: a rectangle for a heading alone, a hexagon for a
  tilted model. Without data, or where the model is missing or unreadable, the placement's
  position alone (a point); the context's notes say so, once per model.
* ``liquid``, ``holes``, ``slope``, ``texture``: whole cells (liquid in any MH2O or MCLQ layer; the
  low-resolution holes, each bit 2x2 cells; cells steeper than ``degrees``; cells where the textures
  matching ``patterns`` together show more than ``share``). These footprints are unions of cell
  squares, so the same rule grows them by whole cells: a cell is added when its square comes
  nearer than ``margin`` to a covered one (any margin above 0 adds the eight neighbours, one above
  a cell side the next ring but its corners, ...), across chunk borders within the tile.

Only the tile's own data counts: a tile lists every object placed over it (real tiles list a
placement in each tile it reaches), but liquid, holes, slopes and textures of a neighbouring tile
do not grow into this one (across tile borders is out of scope).
"""

from __future__ import annotations

import math

import numpy as np

from wowgrass.edit.adt_edit import match_textures, visible_shares
from wowgrass.edit.masks import chunks_to_grid, grid_to_chunks, liquid_mask, slope_mask
from wowgrass.errors import FormatError, UsageError
from wowgrass.formats.adt import UNIT_SIZE, AdtTile
from wowgrass.formats.m2 import M2Model
from wowgrass.formats.wmo import model_path
from wowgrass.game import coords
from wowgrass.game.mapobjects import modf_bounds, placement_matrices
from wowgrass.game.tiles import tile_image

KINDS = ("buildings", "models", "liquid", "holes", "slope", "texture")
CELL = UNIT_SIZE                 # yards a side of a cell
CELLS = 128                      # cells across a tile
TEXTURE_SHARE = 0.5              # ``texture``'s default share
#: keyword parameters of each kind
PARAMS = {"buildings": (), "models": (), "liquid": (), "holes": (), "slope": ("degrees",),
          "texture": ("patterns", "share")}
_PAIRS = 1 << 17                 # (footprint, cell) pairs tested at once: bounded memory


class FootprintContext:
    """What footprints of several tiles of one map share: the game data, each model's bounds (read
    once per model path, missing ones remembered) and the notes (one line each, said once)."""

    def __init__(self, data=None):
        self.data = data
        self.notes: list[str] = []
        self._bounds: dict[str, np.ndarray | None] = {}

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def model_bounds(self, name: str, data=None) -> np.ndarray | None:
        """(2, 3) model-space (min, max) of the M2 that MMDX ``name`` names (``.mdx``/``.mdl`` read
        as ``.m2``), None (and a note) where there is no data, the model is missing or unreadable,
        or its box is not finite."""
        data = self.data if data is None else data
        if data is None:
            self.note("models: no game data given: every model covers the cell of its position only")
            return None
        path = model_path(name.replace("/", "\\"))
        key = path.lower()
        if key in self._bounds:
            return self._bounds[key]
        box = None
        only = "its placements cover the cell of their position only"
        try:
            m = M2Model.from_bytes(data.read(path), path)
            box = np.array([m.bbox_min, m.bbox_max], np.float64)
            if not (np.isfinite(box).all() and (box[1] >= box[0]).all()):
                self.note(f"model {path}: its bounding box {box.tolist()} is not a box: {only}")
                box = None
        except FileNotFoundError:       # GameFileNotFound too
            self.note(f"model {path}: not in the data: {only}")
        except (FormatError, UsageError) as exc:
            self.note(f"model {path}: unreadable ({exc}): {only}")
        self._bounds[key] = box
        return box


def footprint(kind: str, tile: AdtTile, *, data=None, margin: float = 0.0, context: FootprintContext | None = None,
              **params) -> np.ndarray:
    """(256, 8, 8) bool in MCNK order: the cells of ``tile`` that ``kind`` (one of :data:`KINDS`)
    covers, grown by ``margin`` yards (see the module docstring for what covered means).

    ``data`` (or ``context.data``) is the game data the models' bounds are read from; ``context``
    a :class:`FootprintContext` shared by the tiles of a map (bounds read once, notes collected).
    ``slope`` takes ``degrees=`` (cells steeper than that); ``texture`` takes ``patterns=`` (globs
    over MTEX paths, as :func:`wowgrass.edit.adt_edit.match_textures`) and ``share=`` (default 0.5).
    """
    if kind not in KINDS:
        raise UsageError(f"unknown footprint kind {kind!r}; choose from {', '.join(KINDS)}")
    extra = sorted(set(params) - set(PARAMS[kind]))
    if extra:
        takes = ", ".join(PARAMS[kind]) or "no parameters"
        raise UsageError(f"footprint {kind}: unknown parameter(s) {', '.join(extra)} ({kind} takes {takes})")
    margin = _number(margin, "margin")
    context = FootprintContext(data) if context is None else context
    if kind == "buildings":
        grid = cover_grid(tile, *building_shapes(tile), margin)
    elif kind == "models":
        grid = cover_grid(tile, *model_shapes(tile, context, data), margin)
    else:
        if kind == "liquid":
            cells = liquid_mask(tile)
        elif kind == "holes":
            cells = tile.hole_cells()
        elif kind == "slope":
            if "degrees" not in params:
                raise UsageError("footprint slope needs degrees= (cells steeper than that)")
            cells = slope_mask(tile, _number(params["degrees"], "degrees"))
        else:
            cells = texture_cells(tile, params.get("patterns"), params.get("share", TEXTURE_SHARE))
        return grow_cells(tile, cells, margin)
    return grid_to_chunks(tile, grid)


def _number(value, what: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"footprint {what} {value!r} is not a number") from None
    if not math.isfinite(v) or v < 0:
        raise UsageError(f"footprint {what} {value!r}: a number, 0 or more")
    return v


# ----------------------------------------------------------------------------- objects

def tile_origin(tile: AdtTile) -> tuple[float, float]:
    """World (X, Y) of the tile's north-west corner (:func:`wowgrass.game.coords.tile_origin`)."""
    return coords.tile_origin(tile.col, tile.row)


def building_shapes(tile: AdtTile) -> tuple[np.ndarray, np.ndarray]:
    """The buildings' footprints as (centres (n, 2) world X, Y; generators (n, 2, 2)): each MODF
    placement's extents (a world box; its two sides along X and Y)."""
    if not len(tile.modf):
        return np.zeros((0, 2)), np.zeros((0, 2, 2))
    with np.errstate(invalid="ignore", over="ignore"):      # damaged records: not finite, skipped later
        b = modf_bounds(tile.modf)[:, :, :2]
        gens = np.zeros((len(b), 2, 2))
        gens[:, 0, 0] = b[:, 1, 0] - b[:, 0, 0]
        gens[:, 1, 1] = b[:, 1, 1] - b[:, 0, 1]
        return (b[:, 0] + b[:, 1]) / 2, gens


def model_shapes(tile: AdtTile, context: FootprintContext, data=None) -> tuple[np.ndarray, np.ndarray]:
    """The models' footprints as (centres (n, 2), generators (n, 3, 2)): each MDDF placement's model
    box under its placement matrix, projected on the ground (the box's three edges, a zonotope);
    all generators 0 (its position alone) where the model's bounds are unknown."""
    mddf = tile.mddf
    n = len(mddf)
    if not n:
        return np.zeros((0, 2)), np.zeros((0, 3, 2))
    with np.errstate(invalid="ignore", over="ignore"):      # damaged records: not finite, skipped later
        m = placement_matrices(mddf["position"], mddf["rotation"], mddf["scale"].astype(np.float64) / 1024.0)
    ids = mddf["name_id"].astype(np.int64)
    lo = np.zeros((n, 3))
    hi = np.zeros((n, 3))
    for k in np.unique(ids).tolist():
        sel = ids == k
        if not 0 <= k < len(tile.models):
            context.note(f"MDDF name id {k} is past the tile's {len(tile.models)} model names: positions only")
            continue
        box = context.model_bounds(tile.models[k], data)
        if box is not None:
            lo[sel], hi[sel] = box
    with np.errstate(invalid="ignore", over="ignore"):
        centre = np.einsum("nij,nj->ni", m[:, :3, :3], (lo + hi) / 2) + m[:, :3, 3]
        gens = (m[:, :3, :3] * (hi - lo)[:, None, :]).transpose(0, 2, 1)    # column j scaled: edge j
    return centre[:, :2], gens[:, :, :2]


def cover_grid(tile: AdtTile, centres: np.ndarray, gens: np.ndarray, margin: float) -> np.ndarray:
    """(128, 128) bool, north up: the cells covered by the footprints ``centres`` (n, 2) world (X, Y)
    with edge vectors ``gens`` (n, k, 2) (each footprint the set of centre + sum of t_j * gen_j,
    t_j in [-1/2, 1/2]: a box, a turned rectangle, a projected box), grown by ``margin`` yards.

    A cell's square meets the footprint grown by ``margin`` exactly when the cell's centre lies
    within ``margin`` of the footprint grown by the square (its Minkowski sum with the square, again
    such a shape, with the square's two edges added): that shape's polygon is walked with its edges
    sorted by angle, and each cell near it tested against it."""
    out = np.zeros((CELLS, CELLS), bool)
    centres = np.asarray(centres, np.float64).reshape(-1, 2)
    if not len(centres):            # a tile without placements (reshape(0, -1, 2) cannot infer -1)
        return out
    gens = np.asarray(gens, np.float64).reshape(len(centres), -1, 2)
    ok = np.isfinite(centres).all(axis=1) & np.isfinite(gens).all(axis=(1, 2))
    centres, gens = centres[ok], gens[ok]
    if not len(centres):
        return out
    cu, g = _grown_by_square(tile, centres, gens)
    m = margin / CELL
    # the cell each centre lies in (what a point footprint covers; inside any other footprint anyway)
    cell = np.clip(np.floor(cu), -1, CELLS).astype(np.int64)
    inside = ((cell >= 0) & (cell < CELLS)).all(axis=1)
    out[cell[inside, 0], cell[inside, 1]] = True
    # the cells whose centre may be near: the grown shape's box, clipped to the tile
    half = np.abs(g).sum(axis=1) / 2 + m
    first = np.clip(np.floor(cu - half - 0.5), 0, CELLS).astype(np.int64)
    last = np.clip(np.ceil(cu + half - 0.5), -1, CELLS - 1).astype(np.int64)
    span = np.maximum(last - first + 1, 0)
    count = span[:, 0] * span[:, 1]
    poly = _zonotope_polygons(cu, g)
    starts = np.concatenate([[0], np.cumsum(count)])
    i = 0
    while i < len(cu):               # footprints in batches of at most _PAIRS cells (one may exceed it)
        j = max(i + 1, int(np.searchsorted(starts, starts[i] + _PAIRS, side="right")) - 1)
        j = min(j, len(cu))
        k = np.repeat(np.arange(i, j), count[i:j])
        if len(k):
            local = np.arange(len(k)) - np.repeat(starts[i:j] - starts[i], count[i:j])
            r = first[k, 0] + local // span[k, 1]
            c = first[k, 1] + local % span[k, 1]
            hit = _near_polygon(poly, np.stack([r + 0.5, c + 0.5], axis=1), m, which=k)
            out[r[hit], c[hit]] = True
        i = j
    return out


def _grown_by_square(tile: AdtTile, centres: np.ndarray, gens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Footprints in cell units (u rows south, v columns east from the tile's corner: cell (R, C) is
    the square [R, R+1] x [C, C+1]), their edges with the cell square's two added."""
    x0, y0 = tile_origin(tile)
    cu = np.stack([(x0 - centres[:, 0]) / CELL, (y0 - centres[:, 1]) / CELL], axis=1)
    return cu, np.concatenate([-gens / CELL, np.broadcast_to(np.eye(2), (len(cu), 2, 2))], axis=1)


def objects_at(kind: str, tile: AdtTile, chunk: int, cell, *, margin: float = 0.0,
               context: FootprintContext | None = None, data=None) -> list[dict]:
    """The placements of ``kind`` (``buildings`` or ``models``) whose footprint, grown by ``margin``,
    covers cell ``cell`` (0..63, or (row, column)) of MCNK ``chunk``: [{"index" (in MODF / MDDF),
    "unique_id", "name"}] (why a cell is bare)."""
    if kind not in ("buildings", "models"):
        raise UsageError(f"objects_at: {kind!r} is not buildings or models")
    margin = _number(margin, "margin")
    context = FootprintContext(data) if context is None else context
    r, c = divmod(int(cell), 8) if np.ndim(cell) == 0 else (int(cell[0]), int(cell[1]))
    ix, iy = (int(v) for v in tile.index_xy[int(chunk)])
    here = np.array([iy * 8 + r, ix * 8 + c])
    if kind == "buildings":
        centres, gens = building_shapes(tile)
        recs, names = tile.modf, tile.wmos
    else:
        centres, gens = model_shapes(tile, context, data)
        recs, names = tile.mddf, tile.models
    if not len(centres):
        return []
    cu, g = _grown_by_square(tile, centres, gens)
    ok = np.isfinite(cu).all(axis=1) & np.isfinite(g).all(axis=(1, 2))
    cu, g = np.where(ok[:, None], cu, -1e9), np.where(ok[:, None, None], g, 0.0)
    near = (np.abs(here + 0.5 - cu) <= np.abs(g).sum(axis=1) / 2 + margin / CELL).all(axis=1)   # as cover_grid's range
    hit = (np.clip(np.floor(cu), -1, CELLS) == here).all(axis=1) | near & _near_polygon(
        _zonotope_polygons(cu, g), np.broadcast_to(here + 0.5, cu.shape), margin / CELL)
    out = []
    for i in np.flatnonzero(hit & ok).tolist():
        k = int(recs["name_id"][i])
        out.append({"index": i, "unique_id": int(recs["unique_id"][i]), "name": names[k] if 0 <= k < len(names) else ""})
    return out


def _zonotope_polygons(centre: np.ndarray, gens: np.ndarray) -> np.ndarray:
    """(n, 2k, 2) counter-clockwise vertices of the shapes centre + sum t_j gen_j (t_j in [-1/2, 1/2]):
    from the lowest corner, the edges sorted by angle, each once forwards and once backwards
    (zero edges give repeated vertices)."""
    g = gens.copy()
    flip = (g[..., 1] < 0) | ((g[..., 1] == 0) & (g[..., 0] < 0))
    g[flip] *= -1                                       # every edge into the upper half-plane
    order = np.argsort(np.arctan2(g[..., 1], g[..., 0]), axis=1, kind="stable")
    g = np.take_along_axis(g, order[..., None], axis=1)
    steps = np.concatenate([g, -g], axis=1)
    start = centre - g.sum(axis=1) / 2
    return start[:, None, :] + np.concatenate([np.zeros_like(start)[:, None], np.cumsum(steps, axis=1)[:, :-1]],
                                              axis=1)


def _near_polygon(poly: np.ndarray, p: np.ndarray, m: float, which: np.ndarray | None = None) -> np.ndarray:
    """(n,) bool: point p[i] strictly inside convex polygon poly[which[i]] (counter-clockwise; ``which``
    None: poly[i]), or nearer than ``m`` to it. Component by component: numpy's reductions over an
    axis of 2 are slow."""
    ax, ay = poly[..., 0], poly[..., 1]
    ex, ey = np.roll(ax, -1, axis=1) - ax, np.roll(ay, -1, axis=1) - ay       # edges
    length2 = ex * ex + ey * ey
    if which is not None:
        ax, ay, ex, ey, length2 = ax[which], ay[which], ex[which], ey[which], length2[which]
    dx, dy = p[:, 0, None] - ax, p[:, 1, None] - ay
    inside = ((ex * dy - ey * dx > 0) | (length2 == 0)).all(axis=1)
    if m <= 0:
        return inside
    t = np.clip((dx * ex + dy * ey) / np.where(length2 > 0, length2, 1.0), 0.0, 1.0)
    dx -= t * ex
    dy -= t * ey
    return inside | ((dx * dx + dy * dy).min(axis=1) < m * m)


# ----------------------------------------------------------------------------- whole cells

def grow_offsets(margin: float) -> np.ndarray:
    """(k, 2) (row, column) offsets of the cells whose square comes nearer than ``margin`` yards to a
    cell's square (its own (0, 0) always): the gap between squares k apart is (|k| - 1) cells."""
    reach = int(math.ceil(margin / CELL)) + 1 if margin > 0 else 0
    d = np.arange(-reach, reach + 1)
    dr, dc = np.meshgrid(d, d, indexing="ij")
    gap = np.hypot(np.maximum(np.abs(dr) - 1, 0), np.maximum(np.abs(dc) - 1, 0)) * CELL
    keep = (gap < margin) | ((dr == 0) & (dc == 0))
    return np.stack([dr[keep], dc[keep]], axis=1)


def grow_cells(tile: AdtTile, cells: np.ndarray, margin: float) -> np.ndarray:
    """(256, 8, 8) ``cells`` with every cell added whose square comes nearer than ``margin`` yards to
    a covered one, across chunk borders within the tile."""
    cells = np.asarray(cells, bool)
    if margin <= 0 or not cells.any():
        return cells.copy()
    grid = chunks_to_grid(tile, cells)
    out = np.zeros_like(grid)
    for dr, dc in grow_offsets(margin).tolist():
        out[max(dr, 0):CELLS + min(dr, 0), max(dc, 0):CELLS + min(dc, 0)] |= \
            grid[max(-dr, 0):CELLS + min(-dr, 0), max(-dc, 0):CELLS + min(-dc, 0)]
    return grid_to_chunks(tile, out)


def texture_cells(tile: AdtTile, patterns, share=TEXTURE_SHARE, *, shares: np.ndarray | None = None) -> np.ndarray:
    """(256, 8, 8) bool: cells where the layers whose texture matches any of ``patterns`` (globs over
    MTEX paths) together show more than ``share`` of the cell (:func:`~wowgrass.edit.adt_edit.visible_shares`;
    ``shares``: those of the tile, when the caller has them already)."""
    if patterns is None:
        raise UsageError("footprint texture needs patterns= (globs over the tile's texture paths)")
    if isinstance(patterns, str):
        patterns = [patterns]
    share = _number(share, "share")
    if share >= 1.0:
        raise UsageError(f"footprint texture share {share}: a fraction, 0 or more and below 1")
    hit = sorted({i for p in patterns for i in match_textures(tile.textures, str(p))})
    if not hit:
        return np.zeros((256, 8, 8), bool)
    n = np.asarray(tile.n_layers, np.int64)
    matches = np.isin(np.asarray(tile.layer_texture, np.int64), hit) & (np.arange(4)[None, :] < n[:, None])
    shown = ((visible_shares(tile) if shares is None else shares) * matches[:, :, None, None]).sum(axis=1)
    return shown > share


# ----------------------------------------------------------------------------- pictures

#: tint of each kind in :func:`footprint_image`
KIND_COLOURS = {"buildings": (255, 120, 30), "models": (235, 50, 235), "liquid": (40, 130, 255),
                "holes": (0, 0, 0), "slope": (250, 230, 40), "texture": (40, 230, 220)}


def footprint_image(tile: AdtTile, masks: dict, size: int = 512, *, context: FootprintContext | None = None,
                    data=None, outlines: bool = True) -> np.ndarray:
    """(size, size, 3) uint8, north up: the tile's effect picture in grey (each cell's shade its
    effect's, :func:`wowgrass.game.tiles.tile_image`) with the cells of each footprint in ``masks``
    ({kind: (256, 8, 8) bool}) tinted in the kind's colour (:data:`KIND_COLOURS`, later kinds over
    earlier ones), and, with ``outlines``, the buildings' and models' own shapes drawn in white over
    them (what the cells should cover)."""
    eff = tile_image(tile, "effects", size).astype(np.float32)
    rgb = np.repeat(eff.mean(axis=-1, keepdims=True) * 0.55 + 45, 3, axis=-1)    # grey: only the tints have colour
    k = np.arange(size) * CELLS // size                 # the cell of each pixel row / column
    for kind, mask in masks.items():
        grid = chunks_to_grid(tile, np.asarray(mask, bool))[k[:, None], k[None, :]]
        rgb[grid] = rgb[grid] * 0.25 + np.array(KIND_COLOURS[kind], np.float32) * 0.75
    if outlines:
        context = FootprintContext(data) if context is None else context
        x0, y0 = tile_origin(tile)
        for kind, shapes in (("buildings", building_shapes(tile)), ("models", model_shapes(tile, context, data))):
            if kind not in masks:
                continue
            centres, gens = shapes
            cu = np.stack([(x0 - centres[:, 0]) / CELL, (y0 - centres[:, 1]) / CELL], axis=1)
            for poly in _zonotope_polygons(cu, -gens / CELL) * (size / CELLS):
                _draw_polygon(rgb, poly)
    return np.clip(rgb, 0, 255).astype(np.uint8)


def _draw_polygon(rgb: np.ndarray, poly: np.ndarray) -> None:
    """White outline of ``poly`` ((k, 2) pixel (row, column)); a point as a cross."""
    size = rgb.shape[0]
    ends = np.roll(poly, -1, axis=0)
    pts = [poly]
    for a, b in zip(poly, ends):
        n = int(np.ceil(np.abs(b - a).max() * 2)) + 1
        pts.append(a + (b - a) * np.linspace(0, 1, n)[:, None])
    p = np.concatenate(pts)
    arm = size // 512
    if np.ptp(poly, axis=0).max() == 0 and arm:         # a point: a cross, bigger on bigger pictures
        p = np.concatenate([p + [d, 0] for d in range(-arm, arm + 1)] + [p + [0, d] for d in range(-arm, arm + 1)])
    ij = np.floor(p).astype(np.int64)
    ok = ((ij >= 0) & (ij < size)).all(axis=1)
    rgb[ij[ok, 0], ij[ok, 1]] = 255


__all__ = ["CELL", "KINDS", "KIND_COLOURS", "FootprintContext", "building_shapes", "cover_grid", "footprint",
           "footprint_image", "grow_cells", "grow_offsets", "model_shapes", "objects_at", "texture_cells",
           "tile_origin"]
