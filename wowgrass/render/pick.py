"""Picking: the ground point under a pixel of the window, by a ray over the resident tiles' heights.

The ray from the camera through the pixel is sampled every ``step`` units (one numpy pass per tile
it crosses: the samples' chunks and fan heights, as :class:`~wowgrass.formats.adt.AdtTile` computes
them), the first sample under the ground and the one before it are bisected. No GPU read-back: a
pick never waits for the frame in flight.
"""

from __future__ import annotations

import weakref

import numpy as np

from wowgrass.game.coords import tile_of


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
    cols, rows = tile_of(xy[:, 0], xy[:, 1])
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
                refine: int = 256) -> np.ndarray | None:
    """World (X, Y, Z) where the ray first meets the resident ground, None where it does not
    within ``reach`` units: samples every ``step`` units over the part of the ray between the
    ground's lowest and highest point, then ``refine`` samples across the step where it went under
    (two numpy passes in all; ``step / refine`` units exact, the height the ground's there)."""
    o, d = np.asarray(origin, np.float64), np.asarray(direction, np.float64)
    span = _height_span(scene, o, d, reach)
    if span is None:
        return None
    t = np.arange(span[0], span[1] + step, step)
    hit, h = _first_below(scene, o, d, t)
    if hit is None:
        return None
    if hit > 0:
        fine = np.linspace(t[hit - 1], t[hit], refine + 1)
        k, hf = _first_below(scene, o, d, fine)
        if k is not None:
            t, hit, h = fine, k, hf
    p = o + t[hit] * d
    return np.array([p[0], p[1], h[hit]])


_TILE_SPAN: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # AdtTile -> (lowest, highest)


def _tile_span(adt) -> tuple[float, float]:
    """A tile's lowest and highest ground, once per decoded tile (a reloaded tile is a new object):
    a pick after tiles arrive walks the resident tiles' two numbers, not their heights."""
    span = _TILE_SPAN.get(adt)
    if span is None:
        h = np.asarray(adt.heights, np.float64) + np.asarray(adt.positions, np.float64)[:, 2:3]
        span = _TILE_SPAN[adt] = (float(h.min()), float(h.max()))
    return span


def _height_span(scene, o, d, reach: float):
    """The part [t0, t1] of the ray within ``reach`` that lies between the resident ground's lowest
    and highest point (None: none of it): the march samples only there."""
    lo, hi = np.inf, -np.inf
    for t in scene.tiles.values():
        g = getattr(t, "adt", None)
        if g is not None:
            a, b = _tile_span(g)
            lo, hi = min(lo, a), max(hi, b)
    if not lo <= hi:
        return None
    z, dz = float(o[2]), float(d[2])
    if abs(dz) < 1e-9:
        return (0.0, reach) if lo <= z <= hi else None
    a, b = (hi - z) / dz, (lo - z) / dz  # where the ray crosses the highest and the lowest ground
    t0, t1 = max(min(a, b), 0.0), min(max(a, b), reach)
    return (t0, t1) if t0 <= t1 else None


def _first_below(scene, o, d, t):
    """(index of the first ray parameter in ``t`` whose point lies on or under the ground, or None;
    the ground's heights under every sample)."""
    p = o[None, :] + t[:, None] * d[None, :]
    h = ground_heights(scene, p[:, :2])
    below = np.flatnonzero(p[:, 2] <= h)  # NaN compares False: no ground, no hit
    return (int(below[0]) if len(below) else None), h
