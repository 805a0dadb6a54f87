"""Which cells to exclude (noEffectDoodad): a painted mask, steep ground, liquid, map objects.

Every mask is (256, 8, 8) bool in a tile's MCNK order (as ``AdtTile.no_effect_doodad``).

The picture grid (``--mask PNG``): **one pixel a cell**, 8x8 cells a chunk, 16x16 chunks a tile, so
one tile is 128x128 pixels, north up and east to the right (pixel x = chunk IndexX * 8 + cell
column, y = IndexY * 8 + cell row). Several tiles: the picture covers the bounding box of the
selected tiles, their columns left to right and rows top to bottom: (128 * columns) x (128 * rows)
pixels, tile (c, r) at pixel (128 * (c - c_min), 128 * (r - r_min)); a picture of such a selection
is what ``effects audit --cells-png`` writes. A picture k times that size in both directions (a
painting over a scaled-up audit picture) is reduced by averaging each k x k block. A pixel whose
grey level (mean of its colour channels) is 128 or more selects its cell; pictures of more than 8
bits a channel are scaled by their depth first (16-bit grey: 32,896 of 65,535; floats: 0.502).

``effects exclude --near-objects`` measures from each cell's centre (:func:`near_objects_mask`); the
ground-effect rules' footprints (:mod:`wowgrass.edit.footprints`) measure each cell's whole square
against buildings' extents and models' turned and scaled boxes, and grow liquid, holes, slopes and
textures by a margin; they reuse :func:`slope_mask` and :func:`liquid_mask`.
"""

from __future__ import annotations

import numpy as np

from wowgrass.errors import UsageError
from wowgrass.formats.adt import UNIT_SIZE, AdtTile
from wowgrass.game.tiles import grid_chunks, tile_grid

CELLS = 128                                  # cells across a tile


# ----------------------------------------------------------------------------- grids

# the one chunk <-> cell-grid conversion (game.tiles), under the names this module has always had
chunks_to_grid = tile_grid       # (256, 8, 8, ...) in MCNK order -> (128, 128, ...) north up
grid_to_chunks = grid_chunks     # (128, 128, ...) -> (256, 8, 8, ...) in MCNK order


def selection_box(tiles) -> tuple[int, int, int, int]:
    """(c_min, r_min, columns, rows) of the bounding box of ``tiles`` [(col, row)]."""
    cs = [c for c, _ in tiles]
    rs = [r for _, r in tiles]
    return min(cs), min(rs), max(cs) - min(cs) + 1, max(rs) - min(rs) + 1


#: white of each single-channel mode Pillow opens that is not 8-bit (its grey is scaled to 0..255)
MODE_WHITE = {"I;16": 65535.0, "I;16B": 65535.0, "I;16L": 65535.0, "I;16N": 65535.0,
              "I": 2.0 ** 31 - 1,          # 32-bit integer (Pillow's is signed)
              "F": 1.0}                    # floating point: 0.0 black, 1.0 white


def picture_grey(im) -> np.ndarray:
    """(h, w) float32 grey 0..255 of a Pillow image, scaled by its bit depth: 8-bit modes the mean of
    their colour channels, 16-bit grey by 65535, 32-bit integers by 2**31 - 1, floats by 1.0 (so a
    near-black 16-bit picture stays near black). UsageError naming a mode it cannot read."""
    mode = im.mode
    if mode == "1":
        return np.asarray(im.convert("L"), np.float32)
    if mode in MODE_WHITE:
        grey = np.asarray(im)    # clipped against float bounds below: float64 (float32 for F, exact here)
        if grey.ndim != 2:
            raise UsageError(f"a mask picture of mode {mode} must have one channel")
        if not np.isfinite(grey).all():
            raise UsageError(f"a mask picture of mode {mode} holds NaN or infinite values")
        return (np.clip(grey, 0.0, MODE_WHITE[mode]) * (255.0 / MODE_WHITE[mode])).astype(np.float32)
    if mode in ("L", "LA", "P", "PA", "RGB", "RGBA", "RGBX", "CMYK", "YCbCr", "LAB", "HSV", "La", "RGBa"):
        if mode == "La":   # premultiplied alpha: Pillow converts La only to LA (RGBa to RGB it un-premultiplies itself)
            im = im.convert(mode.upper())
        # a grey picture's three channels are equal: their mean is its grey, exactly
        return np.asarray(im.convert("RGB"), np.float32).mean(axis=-1)
    raise UsageError(f"a mask picture of mode {mode!r} cannot be read: save it as 8-bit or 16-bit grey "
                     "(or RGB, a 32-bit integer or a float picture)")


def read_mask_picture(path, tiles) -> dict:
    """``{(col, row): (128, 128) bool}`` from a mask picture of the selection ``tiles`` (see the
    module docstring for the grid; :func:`picture_grey` for the bit depths); a picture of another
    size is an error giving the expected one."""
    from PIL import Image

    try:
        with Image.open(path) as im:
            im.load()
            grey = picture_grey(im)
    except UsageError as exc:
        raise UsageError(f"--mask {path}: {exc}") from None
    except OSError as exc:
        raise UsageError(f"--mask {path}: not a picture Pillow reads ({exc})") from None
    return mask_from_array(grey, tiles, name=str(path))


def mask_from_array(grey: np.ndarray, tiles, *, name: str = "mask") -> dict:
    """:func:`read_mask_picture` for an (h, w) grey array (0..255)."""
    c0, r0, nc, nr = selection_box(tiles)
    h, w = grey.shape
    want_h, want_w = nr * CELLS, nc * CELLS
    k = w // want_w
    if k < 1 or w != k * want_w or h != k * want_h:
        raise UsageError(f"{name}: {w}x{h} pixels; the {len(tiles)} tile(s) selected ({nc} x {nr} tiles from "
                         f"{c0},{r0}) need {want_w}x{want_h} (one pixel a cell) or a whole multiple of it")
    sel = grey.reshape(want_h, k, want_w, k).mean(axis=(1, 3)) >= 128   # k x k pixels a cell
    return {(c, r): sel[(r - r0) * CELLS:(r - r0 + 1) * CELLS, (c - c0) * CELLS:(c - c0 + 1) * CELLS]
            for c, r in tiles}


# ----------------------------------------------------------------------------- terrain masks

def cell_slopes(tile: AdtTile) -> np.ndarray:
    """(256, 8, 8) float degrees: the slope of each cell, from the mean of the unit normals of its
    four fan triangles (centre vertex and two corners each, as the client draws it)."""
    h = np.asarray(tile.heights, dtype=np.float64)   # a float32 height difference would round
    r = np.arange(8)[:, None]
    c = np.arange(8)[None, :]
    tl = r * 17 + c
    corners = {"tl": (h[:, tl], 0.0, 0.0), "tr": (h[:, tl + 1], 1.0, 0.0), "bl": (h[:, tl + 17], 0.0, 1.0),
               "br": (h[:, tl + 18], 1.0, 1.0)}
    hc = h[:, tl + 9]
    tx = ty = tz = 0.0
    for a, b in (("tl", "tr"), ("tr", "br"), ("br", "bl"), ("bl", "tl")):
        ha, xa, ya = corners[a]
        hb, xb, yb = corners[b]
        # local axes: x east, y south (cells), z up (yards); vectors from the centre (0.5, 0.5);
        # the cross product by components: x and y of u, v are constants, so nz is one too, +U²/2
        # for this winding (every normal points up, whatever the heights)
        ux, uy, uz = (xa - 0.5) * UNIT_SIZE, (ya - 0.5) * UNIT_SIZE, ha - hc
        vx, vy, vz = (xb - 0.5) * UNIT_SIZE, (yb - 0.5) * UNIT_SIZE, hb - hc
        nx, ny, nz = uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx
        length = np.sqrt(nx * nx + ny * ny + nz * nz)
        tx, ty, tz = tx + nx / length, ty + ny / length, tz + nz / length
    return np.degrees(np.arctan2(np.hypot(tx, ty), tz))   # well conditioned near flat, unlike arccos


def slope_mask(tile: AdtTile, degrees: float) -> np.ndarray:
    """Cells steeper than ``degrees``."""
    return cell_slopes(tile) > float(degrees)


def liquid_mask(tile: AdtTile) -> np.ndarray:
    """Cells under liquid (any MH2O or MCLQ layer covering them)."""
    from wowgrass.formats.liquid import tile_liquid

    return tile_liquid(tile).cells()


def map_objects(tiles) -> tuple[np.ndarray, np.ndarray]:
    """World positions of the doodads (MDDF, (n, 2) X, Y) and boxes of the WMOs (MODF, (m, 2, 2)
    min/max X, Y) of ``tiles`` (AdtTiles), each placement once (objects near a tile border are
    listed by every tile they touch)."""
    from wowgrass.game.mapobjects import file_to_world, modf_bounds

    pts, boxes, seen_d, seen_w = [], [], set(), set()
    for t in tiles:
        if len(t.mddf):
            keep = [i for i, u in enumerate(t.mddf["unique_id"].tolist()) if u not in seen_d]
            seen_d.update(t.mddf["unique_id"][keep].tolist())
            pts.append(file_to_world(t.mddf["position"][keep])[:, :2])
        if len(t.modf):
            keep = [i for i, u in enumerate(t.modf["unique_id"].tolist()) if u not in seen_w]
            seen_w.update(t.modf["unique_id"][keep].tolist())
            boxes.append(modf_bounds(t.modf[keep])[:, :, :2])
    p = np.concatenate(pts) if pts else np.zeros((0, 2))
    b = np.concatenate(boxes) if boxes else np.zeros((0, 2, 2))
    return p, b


def near_objects_mask(tile: AdtTile, yards: float, objects=None) -> np.ndarray:
    """Cells whose centre lies within ``yards`` (on the ground plane) of a doodad's position or of
    a WMO's bounding box; ``objects`` from :func:`map_objects` (default: this tile's own)."""
    pts, boxes = map_objects([tile]) if objects is None else objects
    yards = float(yards)
    centre = tile.cell_centres().reshape(256 * 64, 2)
    lo, hi = centre.min(axis=0) - yards, centre.max(axis=0) + yards
    out = np.zeros(len(centre), bool)
    if len(pts):
        p = pts[((pts >= lo) & (pts <= hi)).all(axis=1)]
        for s in range(0, len(p), 256):          # bounded memory: 16,384 cells x 256 objects at a time
            d2 = ((centre[:, None, :] - p[None, s:s + 256]) ** 2).sum(axis=-1)
            out |= (d2 <= yards * yards).any(axis=1)
    if len(boxes):
        b = boxes[((boxes[:, 1] >= lo) & (boxes[:, 0] <= hi)).all(axis=1)]
        for s in range(0, len(b), 256):
            bb = b[s:s + 256]
            gap = np.maximum(np.maximum(bb[None, :, 0] - centre[:, None], centre[:, None] - bb[None, :, 1]), 0.0)
            out |= ((gap ** 2).sum(axis=-1) <= yards * yards).any(axis=1)
    return out.reshape(256, 8, 8)


__all__ = ["CELLS", "cell_slopes", "chunks_to_grid", "grid_to_chunks", "liquid_mask", "map_objects", "mask_from_array",
           "near_objects_mask", "picture_grey", "read_mask_picture", "selection_box", "slope_mask"]
