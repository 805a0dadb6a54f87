"""The sample world's lake and house in the tiles that hold them: the lake's MCLQ (1.12, 2.4.3)
or MH2O (3.3.5) layers, the house's MODF placement (and the MCRF references of the chunks under
it), and no ground effects under water or under the house, as a map maker would leave them.

The terrain (:mod:`wowgrass.samples.heights`) digs the lake's basin and levels the house's pad;
this module only describes what stands and lies on them.

With a sea (``sample build --sea``, the benchmark world of docs/sample.md) every chunk of every
tile also gets an ocean layer as a map editor's ocean map has one: all 8x8 cells, one level
across the map (:data:`SEA_LEVEL`), the depth to the ground under each vertex; no ground effect
grows in cells under it.
"""

from __future__ import annotations

import functools

import numpy as np

from wowgrass.formats import liquid as L
from wowgrass.formats.adt import MODF_DTYPE, TILE_SIZE, UNIT_SIZE
from wowgrass.game.coords import tile_origin
from wowgrass.game.mapobjects import placement_matrices, transformed_bounds, world_to_file

HOUSE_UID = 7_000_001
WATER_TYPE = 1                  # LiquidType "Water" in every build's table
OCEAN_TYPE = 2                  # LiquidType "Ocean"
SEA_LEVEL = 57.0                # yards: about a third of the sample's ground lies below it (its lows, the lake's basin)
HOUSE_DOODAD_SET = 1            # Set_Yard (set 0 is shown as well)


@functools.lru_cache(maxsize=1)
def house_bbox() -> np.ndarray:
    from wowgrass.samples.building import building

    root, _ = building()
    return np.asarray(root.bbox, np.float64)


def house_matrix(terrain) -> np.ndarray:
    pos = world_to_file([[terrain.house_xy[0], terrain.house_xy[1], terrain.house_z]])
    return placement_matrices(pos, [[0.0, terrain.HOUSE_HEADING, 0.0]])[0]


def house_bounds(terrain) -> np.ndarray:
    """World (min, max) of the placed house."""
    return transformed_bounds(house_matrix(terrain)[None], house_bbox())[0]


def _tile_box(col: int, row: int):
    x_hi, y_hi = tile_origin(col, row)
    return x_hi - TILE_SIZE, x_hi, y_hi - TILE_SIZE, y_hi


def tile_features(build: str, terrain, t, col: int, row: int, sea: float | None = None) -> dict:
    """What the lake and the house put into tile (col, row) of ``terrain``: ``liquid`` (a
    TileLiquid or None), ``modf`` records with their ``wmos`` names, ``map_obj_refs`` per chunk
    and the cells where no ground effect grows (``no_effect``, (256, 8, 8)). ``sea``: the level
    of an ocean layer in every chunk (None: none)."""
    out = {"liquid": None, "modf": np.zeros(0, MODF_DTYPE), "wmos": [], "map_obj_refs": [[] for _ in range(256)],
           "no_effect": np.zeros((256, 8, 8), bool)}
    r = np.arange(9)
    # outer vertices of every chunk in world space, and the ground there
    vx = t.positions[:, 0, None, None] - r[None, :, None] * UNIT_SIZE
    vy = t.positions[:, 1, None, None] - r[None, None, :] * UNIT_SIZE
    vx, vy = np.broadcast_arrays(vx, vy)
    ground = (t.positions[:, 2:3] + t.heights)[:, (r[:, None] * 17 + r[None, :]).ravel()].reshape(256, 9, 9)
    cx, cy = vx[:, :8, :8] - UNIT_SIZE / 2, vy[:, :8, :8] - UNIT_SIZE / 2   # cell centres

    # the lake: cells of the basin whose lowest corner is under the surface
    level = terrain.lake_level
    corner_min = np.minimum.reduce([ground[:, :8, :8], ground[:, 1:, :8], ground[:, :8, 1:], ground[:, 1:, 1:]])
    wet = (corner_min < level) & (terrain.lake_depth(cx, cy) > 0.02)
    chunks = np.flatnonzero(wet.reshape(256, -1).any(axis=1))
    if len(chunks):
        depth = np.clip(np.round((level - ground) * 24.0), 0, 255).astype(np.uint8)
        if build == "3.3.5":
            layers = [L.mh2o_layer(int(c), WATER_TYPE, L.WATER, level, wet[c], depth=depth[c],
                                   fmt=L.LVF_HEIGHT_DEPTH) for c in chunks]
            liq = L.TileLiquid(layers=np.concatenate(layers), source=L.SOURCE_MH2O)
            liq.has_attributes[chunks] = True
            liq.fishable[chunks] = L.pack_8x8(wet[chunks])
        else:
            layers = [L.mclq_layer(int(c), L.WATER, level, wet[c], depth=depth[c]) for c in chunks]
            liq = L.TileLiquid(layers=np.concatenate(layers), source=L.SOURCE_MCLQ)
        out["liquid"] = liq
        out["no_effect"] |= wet
    if sea is not None:
        _add_sea(build, out, ground, float(sea))

    # the house: listed by every tile its bounds reach (as real tiles list a WMO), no grass under it
    bounds = house_bounds(terrain)
    x0, x1, y0, y1 = _tile_box(col, row)
    if bounds[0, 0] < x1 and bounds[1, 0] > x0 and bounds[0, 1] < y1 and bounds[1, 1] > y0:
        from wowgrass.samples.building import WMO_PATH

        rec = np.zeros(1, MODF_DTYPE)
        rec["name_id"] = 0
        rec["unique_id"] = HOUSE_UID
        rec["position"] = world_to_file([[terrain.house_xy[0], terrain.house_xy[1], terrain.house_z]])[0]
        rec["rotation"] = (0.0, terrain.HOUSE_HEADING, 0.0)
        ext = world_to_file(bounds)
        rec["extents"] = np.stack([ext.min(axis=0), ext.max(axis=0)])
        rec["doodad_set"] = HOUSE_DOODAD_SET
        out["modf"], out["wmos"] = rec, [WMO_PATH]
        # chunks whose square meets the bounds reference it (MCRF, after their doodads)
        px, py = t.positions[:, 0], t.positions[:, 1]
        side = TILE_SIZE / 16
        meets = (px - side < bounds[1, 0]) & (px > bounds[0, 0]) & (py - side < bounds[1, 1]) & (py > bounds[0, 1])
        for c in np.flatnonzero(meets).tolist():
            out["map_obj_refs"][c].append(0)
        lx, ly = terrain.house_local(cx, cy)
        (hx0, hy0), (hx1, hy1) = terrain.HOUSE_PAD
        out["no_effect"] |= (lx > hx0 + 0.5) & (lx < hx1 - 0.5) & (ly > hy0 + 0.5) & (ly < hy1 - 0.5)
    return out


def _add_sea(build: str, out: dict, ground: np.ndarray, level: float) -> None:
    """An ocean layer over all 8x8 cells of every chunk at ``level``, its depth to ``ground``
    (256, 9, 9) (the lake's byte scale), added to ``out``'s liquid; no ground effect under it."""
    depth = np.clip(np.round((level - ground) * 24.0), 0, 255).astype(np.uint8)
    old = out["liquid"]
    if build == "3.3.5":
        sea = [L.mh2o_layer(c, OCEAN_TYPE, L.OCEAN, level, depth=depth[c], fmt=L.LVF_HEIGHT_DEPTH) for c in range(256)]
        layers = np.concatenate(([old.layers] if old is not None else []) + sea)
        liq = L.TileLiquid(layers=layers, source=L.SOURCE_MH2O)
        if old is not None:
            liq.fishable[:] = old.fishable
        liq.has_attributes[:] = True
        liq.fishable |= np.uint64(0xFFFFFFFFFFFFFFFF)
    else:
        sea = [L.mclq_layer(c, L.OCEAN, level, depth=depth[c]) for c in range(256)]
        layers = np.concatenate(([old.layers] if old is not None else []) + sea)
        liq = L.TileLiquid(layers=layers, source=L.SOURCE_MCLQ)
    out["liquid"] = liq
    corner_min = np.minimum.reduce([ground[:, :8, :8], ground[:, 1:, :8], ground[:, :8, 1:], ground[:, 1:, 1:]])
    out["no_effect"] |= corner_min < level
