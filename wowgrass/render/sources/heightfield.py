"""The procedural meadow's ground on the CPU (numpy; no GL).

An fBm heightmap (value noise summed over octaves; lacunarity and gain as settings, a seed) and
the Wang integer hash that the noise and the blade placement (:mod:`.blades`, and on the GPU
``shaders/meadow_blades.glsl``) draw their per-cell numbers from. The CPU and the shaders sample
the heightmap with the same bilinear filter (``shaders/heightfield.glsl``).

World space is the viewer's: +Z up, the meadow spans [0, world_size] in X and Y.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

U32 = np.uint32


def wang_hash(x) -> np.ndarray:
    """Thomas Wang's 32-bit integer hash (the lesson's ``forge_hash_wang``), wrapping uint32 arithmetic."""
    s = np.asarray(x, dtype=U32).copy()
    with np.errstate(over="ignore"):
        s = (s ^ U32(61)) ^ (s >> U32(16))
        s = s * U32(9)
        s = s ^ (s >> U32(4))
        s = s * U32(0x27D4EB2D)
        s = s ^ (s >> U32(15))
    return s


def hash_to_float(h) -> np.ndarray:
    """[0, 1) from the top 24 bits of a hash (exact in float32, as in the shader)."""
    return (np.asarray(h, U32) >> U32(8)).astype(np.float32) * np.float32(1.0 / 16777216.0)


def cell_hash(ix, iy, seed: int) -> np.ndarray:
    """The hash of grid cell (ix, iy) for a seed: the first of the numbers a blade draws."""
    ix, iy = np.asarray(ix).astype(np.int64), np.asarray(iy).astype(np.int64)
    with np.errstate(over="ignore"):
        k = (ix.astype(U32) * U32(73856093)) ^ (iy.astype(U32) * U32(19349663)) ^ U32(seed & 0xFFFFFFFF)
    return wang_hash(k)


def _value_noise(x: np.ndarray, y: np.ndarray, seed: int) -> np.ndarray:
    """Smoothly interpolated lattice noise in [-1, 1] (quintic fade between hashed corners)."""
    x0, y0 = np.floor(x), np.floor(y)
    fx, fy = x - x0, y - y0
    ux = fx * fx * fx * (fx * (fx * 6 - 15) + 10)
    uy = fy * fy * fy * (fy * (fy * 6 - 15) + 10)
    ix, iy = x0.astype(np.int64), y0.astype(np.int64)

    def corner(dx, dy):
        return hash_to_float(cell_hash(ix + dx, iy + dy, seed)).astype(np.float64) * 2.0 - 1.0

    a, b, c, d = corner(0, 0), corner(1, 0), corner(0, 1), corner(1, 1)
    return (a + (b - a) * ux) * (1 - uy) + (c + (d - c) * ux) * uy


@dataclass
class TerrainSettings:
    samples: int = 1025  # heightmap samples per side (texels are world_size / (samples - 1) apart)
    world_size: float = 1024.0  # metres (world units) per side
    octaves: int = 6
    lacunarity: float = 2.0
    gain: float = 0.5
    base_wavelength: float = 320.0  # world units of the first octave
    amplitude: float = 38.0  # world units of height at the first octave


def fbm_heightmap(settings: TerrainSettings, seed: int) -> np.ndarray:
    """(samples, samples) float32 heights; row j is world Y = j * texel, column i world X."""
    n = int(settings.samples)
    if n < 3 or n > 8193:
        raise ValueError(f"heightmap samples must be 3..8193, got {n}")
    t = np.arange(n, dtype=np.float64) * (settings.world_size / (n - 1))
    x, y = np.meshgrid(t, t)
    h = np.zeros((n, n))
    freq, amp = 1.0 / settings.base_wavelength, settings.amplitude
    for octave in range(int(settings.octaves)):
        h += amp * _value_noise(x * freq, y * freq, seed * 1013 + octave * 7919)
        freq *= settings.lacunarity
        amp *= settings.gain
    return h.astype(np.float32)


class Heightfield:
    """A heightmap over [0, world_size]^2 with the shader's bilinear sampling and normals."""

    def __init__(self, heights: np.ndarray, world_size: float):
        self.heights = np.ascontiguousarray(heights, np.float32)
        self.n = self.heights.shape[0]
        if self.heights.shape != (self.n, self.n) or self.n < 2:
            raise ValueError(f"heightmap must be square, got {self.heights.shape}")
        self.world_size = float(world_size)
        self.texel = self.world_size / (self.n - 1)

    @classmethod
    def generate(cls, settings: TerrainSettings | None = None, seed: int = 1) -> Heightfield:
        s = settings or TerrainSettings()
        return cls(fbm_heightmap(s, seed), s.world_size)

    def sample(self, x, y) -> np.ndarray:
        """Bilinear height at world (x, y) (clamped to the edge), float32 like the shader."""
        n = self.n
        u = np.clip(np.asarray(x, np.float32) / np.float32(self.texel), 0, n - 1)
        v = np.clip(np.asarray(y, np.float32) / np.float32(self.texel), 0, n - 1)
        i0 = np.minimum(np.floor(u).astype(np.int64), n - 2)
        j0 = np.minimum(np.floor(v).astype(np.int64), n - 2)
        fu, fv = (u - i0).astype(np.float32), (v - j0).astype(np.float32)
        h = self.heights
        a = h[j0, i0] + (h[j0, i0 + 1] - h[j0, i0]) * fu
        b = h[j0 + 1, i0] + (h[j0 + 1, i0 + 1] - h[j0 + 1, i0]) * fu
        return a + (b - a) * fv

    def normal(self, x, y) -> np.ndarray:
        """(..., 3) unit normals from central differences one texel apart."""
        e = self.texel
        x, y = np.asarray(x, np.float32), np.asarray(y, np.float32)
        dx = self.sample(x + e, y) - self.sample(x - e, y)
        dy = self.sample(x, y + e) - self.sample(x, y - e)
        nrm = np.stack([-dx, -dy, np.full_like(dx, 2 * e)], axis=-1)
        return nrm / np.linalg.norm(nrm, axis=-1, keepdims=True)

    def tile_z_ranges(self, tile_size: float) -> np.ndarray:
        """(tiles_y, tiles_x, 2) min and max height of each square tile (for culling its box)."""
        per = int(round(tile_size / self.texel))
        k = (self.n - 1) // per
        h = self.heights
        out = np.zeros((k, k, 2), np.float32)
        # each tile's samples including its far edge: a view of overlapping windows, reduced
        win = np.lib.stride_tricks.sliding_window_view(h, (per + 1, per + 1))[::per, ::per][:k, :k]
        out[..., 0] = win.min(axis=(2, 3))
        out[..., 1] = win.max(axis=(2, 3))
        return out
