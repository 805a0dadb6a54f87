"""The meadow's grass blades: settings, LOD rings, and the CPU placement the lesson uploads per frame.

Every grid cell of ``spacing`` world units may hold one blade. Seven numbers of the cell's Wang
hash chain give its jitter (x, y), rotation, height, width, tint and a keep value; the blade is
dropped beyond the draw distance, when its keep value is not below its LOD ring's density
fraction, on slopes steeper than ``max_slope_deg`` and outside the view frustum. Farther rings
keep fewer blades and draw them with fewer segments; blades the next ring drops shrink away over
the last ``ring_fade`` of their ring instead of popping out.

:func:`place_blades` is the CPU version (numpy, float32 like the shader) used by
``--cpu-instances``; ``shaders/meadow_blades.glsl`` generates the same blades on the GPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .heightfield import Heightfield, cell_hash, hash_to_float, wang_hash

INSTANCE_FLOATS = 10  # the lesson's record: position 3f, rotation f, scale 2f, colour 3f, pad f (40 bytes)
INSTANCE_FORMAT = "3f f 2f 3f x4/i"
INSTANCE_ATTRS = ("i_pos", "i_rot", "i_scale", "i_color")


@dataclass(frozen=True)
class BladeRing:
    outer: float  # world units from the camera (XY) where the ring ends
    keep: float  # fraction of the cells' blades it keeps
    segments: int  # segments of the blade mesh it draws


@dataclass
class BladeSettings:
    spacing: float = 0.2  # world units between grid cells (at most one blade per cell)
    rings: tuple = field(default_factory=lambda: (
        BladeRing(10.0, 1.0, 6), BladeRing(25.0, 0.5, 4), BladeRing(50.0, 0.25, 2), BladeRing(80.0, 0.12, 1)))
    ring_fade: float = 0.3  # fraction of each ring's width over which dropped blades shrink away
    height: tuple[float, float] = (0.28, 0.65)  # world units, min and max
    width: tuple[float, float] = (0.035, 0.07)
    max_slope_deg: float = 35.0
    tip_taper: float = 0.9

    @property
    def radius(self) -> float:
        return float(self.rings[-1].outer)

    @property
    def min_normal_z(self) -> float:
        return math.cos(math.radians(self.max_slope_deg))

    def ring_table(self) -> np.ndarray:
        """(rings, 4) float32: outer radius, keep fraction, fade width, next ring's keep fraction."""
        out = np.zeros((len(self.rings), 4), np.float32)
        inner = 0.0
        for i, r in enumerate(self.rings):
            nxt = self.rings[i + 1].keep if i + 1 < len(self.rings) else 0.0
            out[i] = (r.outer, r.keep, self.ring_fade * (r.outer - inner), nxt)
            inner = r.outer
        return out

    def capacities(self) -> np.ndarray:
        """Blades each ring can hold: its annulus's cells times its fraction, with room to spare
        (the whole disc around the camera, before the frustum drops most of it)."""
        inner, caps = 0.0, []
        s2 = self.spacing * self.spacing
        for r in self.rings:
            area = math.pi * ((r.outer + 2 * self.spacing) ** 2 - max(inner - 2 * self.spacing, 0.0) ** 2)
            caps.append(int(area / s2 * min(r.keep * 1.2, 1.0)) + 1024)
            inner = r.outer
        return np.array(caps, np.int64)

    def cell_window(self, eye_xy, world_size: float) -> tuple[tuple[int, int], tuple[int, int]]:
        """First cell (ix, iy) and cell counts of the square around the camera that can hold blades."""
        s, r = self.spacing, self.radius
        n = int(math.floor(world_size / s))
        lo = [max(int(math.floor((float(e) - r) / s)), 0) for e in eye_xy[:2]]
        hi = [min(int(math.ceil((float(e) + r) / s)) + 1, n) for e in eye_xy[:2]]
        return (lo[0], lo[1]), (max(hi[0] - lo[0], 0), max(hi[1] - lo[1], 0))


BLADE_GREEN = np.array([[0.30, 0.52, 0.13], [0.50, 0.62, 0.20]], np.float32)
DRY = np.array([0.66, 0.62, 0.36], np.float32)


def place_blades(field: Heightfield, settings: BladeSettings, seed: int, eye, planes=None,
                 margin: float = 0.0) -> list[np.ndarray]:
    """The blades around ``eye`` as the GPU makes them: one (n, 10) float32 array per ring."""
    (x0, y0), (nx, ny) = settings.cell_window(eye, field.world_size)
    rings = settings.ring_table()
    out = [np.zeros((0, INSTANCE_FLOATS), np.float32) for _ in rings]
    if nx == 0 or ny == 0:
        return out
    iy, ix = np.divmod(np.arange(nx * ny, dtype=np.int64), nx)
    ix += x0
    iy += y0
    h = [cell_hash(ix, iy, seed)]
    for _ in range(6):
        h.append(wang_hash(h[-1]))
    u = [hash_to_float(v) for v in h]
    s = np.float32(settings.spacing)
    x = (ix.astype(np.float32) + u[0]) * s
    y = (iy.astype(np.float32) + u[1]) * s
    ex, ey = np.float32(eye[0]), np.float32(eye[1])
    d = np.sqrt((x - ex) ** 2 + (y - ey) ** 2)
    ring = np.searchsorted(rings[:, 0], d, side="right")
    ok = ring < len(rings)
    ring_c = np.minimum(ring, len(rings) - 1)
    ok &= u[6] < rings[ring_c, 1]
    idx = np.flatnonzero(ok)
    x, y, d, ring_c = x[idx], y[idx], d[idx], ring_c[idx]
    u = [v[idx] for v in u]
    ok = field.normal(x, y)[:, 2] >= np.float32(settings.min_normal_z)
    z = field.sample(x, y)
    hmin, hmax = settings.height
    height = np.float32(hmin) + u[3] * np.float32(hmax - hmin)
    if planes is not None:
        mid = np.stack([x, y, z + 0.5 * height], axis=1).astype(np.float64)
        dist = mid @ np.asarray(planes)[:, :3].T + np.asarray(planes)[:, 3]
        ok &= np.all(dist >= -(margin + height[:, None]), axis=1)
    r = rings[ring_c]
    t = np.clip((d - (r[:, 0] - r[:, 2])) / np.maximum(r[:, 2], 1e-6), 0.0, 1.0)
    shrink = np.where(u[6] >= r[:, 3], 1.0 - t * t * (3.0 - 2.0 * t), 1.0).astype(np.float32)
    height = height * shrink
    wmin, wmax = settings.width
    tint = u[5]
    color = BLADE_GREEN[0] + (BLADE_GREEN[1] - BLADE_GREEN[0]) * tint[:, None]
    color[tint > 0.93] = DRY
    inst = np.zeros((len(x), INSTANCE_FLOATS), np.float32)
    inst[:, 0], inst[:, 1], inst[:, 2] = x, y, z
    inst[:, 3] = u[2] * np.float32(6.28318530718)
    inst[:, 4] = np.float32(wmin) + u[4] * np.float32(wmax - wmin)
    inst[:, 5] = height
    inst[:, 6:9] = color
    for k in range(len(rings)):
        out[k] = inst[ok & (ring_c == k)]
    return out


def blade_tip(inst: np.ndarray, time: float, wind_speed: float, wind_strength: float, wind_dir) -> np.ndarray:
    """World positions (n, 3) of the blade tips' centres at ``time``: the blade shader's math
    (``shaders/blade.glsl`` + ``blade_wind.glsl``) on the CPU, for tests."""
    inst = np.asarray(inst, np.float64).reshape(-1, INSTANCE_FLOATS)
    tip = inst[:, 0:3].copy()
    tip[:, 2] += inst[:, 5]
    phase = time * wind_speed + tip[:, 0] * 0.7 + tip[:, 1] * 0.3
    off = np.sin(phase) * wind_strength
    d = np.asarray(wind_dir, np.float64)
    tip[:, 0] += d[0] * off
    tip[:, 1] += d[1] * off
    return tip
