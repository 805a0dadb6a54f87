"""Picking: the ground point under a pixel of the window, by a ray over the resident tiles' heights.

The ray from the camera through the pixel is sampled every ``step`` units (one numpy pass per tile
it crosses: the samples' chunks and fan heights, as :class:`~wowgrass.formats.adt.AdtTile` computes
them), the first sample under the ground and the one before it are bisected. No GPU read-back: a
pick never waits for the frame in flight.
"""

from __future__ import annotations

import numpy as np

from wowgrass.formats.adt import TILE_SIZE


def pixel_ray(camera, size, x: float, y: float) -> tuple[np.ndarray, np.ndarray]:
    """(origin, unit direction) of the ray through window pixel (x, y) (y down from the top) of a
    view of ``size`` (width, height) pixels that fills the window."""
    w, h = size
    ndc = np.array([2.0 * (x + 0.5) / w - 1.0, 1.0 - 2.0 * (y + 0.5) / h], np.float64)
    cam = camera
    cam.aspect = w / max(h, 1)
    inv = np.linalg.inv(np.asarray(cam.view_proj(), np.float64))
    p = inv @ np.array([ndc[0], ndc[1], -1.0, 1.0])
    q = inv @ np.array([ndc[0], ndc[1], 1.0, 1.0])
    a, b = p[:3] / p[3], q[:3] / q[3]
    d = b - a
    return np.asarray(cam.position, np.float64).copy(), d / np.linalg.norm(d)


def ground_heights(scene, xy: np.ndarray) -> np.ndarray:
    """(n,) ground heights at world points ``xy`` (n, 2) over the scene's resident tiles (NaN
    where none covers them), one numpy pass per tile the points fall in."""
    out = np.full(len(xy), np.nan)
    if not len(xy):
        return out
    cols = np.floor(32.0 - xy[:, 1] / TILE_SIZE).astype(np.int64)
    rows = np.floor(32.0 - xy[:, 0] / TILE_SIZE).astype(np.int64)
    keys = cols * 4096 + rows
    for k in np.unique(keys).tolist():
        t = scene.tiles.get((k // 4096, k % 4096))
        if t is None or t.adt is None:
            continue
        sel = np.flatnonzero(keys == k)
        ch = t.adt.chunk_index_at(xy[sel, 0], xy[sel, 1])
        ok = ch >= 0
        if ok.any():
            out[sel[ok]] = t.adt.heights_at(ch[ok], xy[sel[ok], 0], xy[sel[ok], 1])
    return out


def pick_ground(scene, origin, direction, *, reach: float = 1500.0, step: float = 2.0,
                refine: int = 64) -> np.ndarray | None:
    """World (X, Y, Z) where the ray first meets the resident ground, None where it does not
    within ``reach`` units: samples every ``step`` units, then ``refine`` samples across the step
    where it went under (three numpy passes in all, about step / refine units exact)."""
    o, d = np.asarray(origin, np.float64), np.asarray(direction, np.float64)
    t = np.arange(0.0, reach, step)
    hit = _first_below(scene, o, d, t)
    if hit is None:
        return None
    if hit == 0:
        p = o
    else:
        lo, hi = t[hit - 1], t[hit]
        for _ in range(2):  # twice: step / refine**2 units
            fine = np.linspace(lo, hi, refine + 1)
            k = _first_below(scene, o, d, fine)
            k = len(fine) - 1 if k is None else max(k, 1)
            lo, hi = fine[k - 1], fine[k]
        p = o + hi * d
    z = ground_heights(scene, p[None, :2])[0]
    return np.array([p[0], p[1], z])


def _first_below(scene, o, d, t) -> int | None:
    """Index of the first ray parameter in ``t`` whose point lies on or under the ground."""
    p = o[None, :] + t[:, None] * d[None, :]
    h = ground_heights(scene, p[:, :2])
    below = np.flatnonzero(p[:, 2] <= h)  # NaN compares False: no ground, no hit
    return int(below[0]) if len(below) else None
