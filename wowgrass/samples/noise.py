"""Deterministic 2-D gradient noise and fBm in numpy, for the sample world.

Only integer hashing and polynomial arithmetic (no sin/exp), so the same seed gives the same
floats on every platform.  Lattice corners are hashed through permutation tables drawn from
``numpy.random.default_rng(seed)``; a ``period`` makes the noise tile (for textures).
"""

from __future__ import annotations

import numpy as np

_D = 0.7071067811865476  # 1/sqrt(2), spelled out so the gradient table is exact everywhere
GRADIENTS = np.array(
    [(1, 0), (0, 1), (-1, 0), (0, -1), (_D, _D), (-_D, _D), (_D, -_D), (-_D, -_D)], dtype=np.float64
)


def permutation(seed: int, salt: int) -> np.ndarray:
    """A 256-entry permutation, doubled to 512 so two chained look-ups need no mask."""
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, int(salt)])
    perm = rng.permutation(256).astype(np.int64)
    return np.concatenate([perm, perm])


def _fade(t):
    return t * t * t * (t * (t * 6.0 - 15.0) + 10.0)


def gradient_noise(x, y, perm: np.ndarray, period: int | None = None) -> np.ndarray:
    """Perlin-style gradient noise at ``(x, y)`` (broadcast arrays), roughly in [-1, 1]."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    x0 = np.floor(x)
    y0 = np.floor(y)
    fx = x - x0
    fy = y - y0
    ix = x0.astype(np.int64)
    iy = y0.astype(np.int64)
    ix1 = ix + 1
    iy1 = iy + 1
    if period:
        ix, ix1, iy, iy1 = ix % period, ix1 % period, iy % period, iy1 % period
    ix, ix1, iy, iy1 = ix & 255, ix1 & 255, iy & 255, iy1 & 255

    # the gradient of lattice corner (cx, cy) is GRADIENTS[perm[perm[cx] + cy] & 7]: looked up
    # through two 512-entry tables indexed by perm[cx] + cy (one gather less per sample)
    gx = GRADIENTS[perm & 7, 0]
    gy = GRADIENTS[perm & 7, 1]

    def corner(cx, cy, dx, dy):
        i = perm[cx] + cy
        return gx.take(i) * dx + gy.take(i) * dy

    n00 = corner(ix, iy, fx, fy)
    n10 = corner(ix1, iy, fx - 1.0, fy)
    n01 = corner(ix, iy1, fx, fy - 1.0)
    n11 = corner(ix1, iy1, fx - 1.0, fy - 1.0)
    u = _fade(fx)
    v = _fade(fy)
    nx0 = n00 + u * (n10 - n00)
    nx1 = n01 + u * (n11 - n01)
    return (nx0 + v * (nx1 - nx0)) * 1.4142135623730951


def fbm(x, y, seed: int, *, octaves: int = 5, lacunarity: float = 2.0, gain: float = 0.5,
        salt: int = 0, period: int | None = None) -> np.ndarray:
    """Fractal Brownian motion: ``octaves`` of gradient noise, normalised to about [-1, 1].

    Each octave has its own permutation (so octaves do not line up at the origin).  With
    ``period`` the base octave tiles every ``period`` lattice units (``lacunarity`` must be 2).
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    total = np.zeros(np.broadcast_shapes(x.shape, y.shape))
    amp = 1.0
    freq = 1.0
    norm = 0.0
    for o in range(octaves):
        perm = permutation(seed, salt * 64 + o)
        p = period * int(freq) if period else None
        total += amp * gradient_noise(x * freq, y * freq, perm, p)
        norm += amp
        amp *= gain
        freq *= lacunarity
    return total / norm


def smoothstep(e0: float, e1: float, x) -> np.ndarray:
    """Hermite step from 0 at ``e0`` to 1 at ``e1``; keeps float32 input in float32."""
    x = np.asarray(x)
    if x.dtype != np.float32:
        x = x.astype(np.float64)
    t = (x - x.dtype.type(e0)) * x.dtype.type(1.0 / (e1 - e0))
    t = np.clip(t, 0, 1)
    return t * t * (3 - 2 * t)


def value_curve(t, seed: int, salt: int) -> np.ndarray:
    """A smooth 1-D random curve in [-1, 1] (cubic Hermite through random knots at integers)."""
    t = np.asarray(t, dtype=np.float64)
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, 1000 + int(salt)])
    knots = rng.uniform(-1.0, 1.0, 256)
    i0 = np.floor(t).astype(np.int64)
    f = t - i0
    a = knots[i0 & 255]
    b = knots[(i0 + 1) & 255]
    return a + (b - a) * (f * f * (3.0 - 2.0 * f))
