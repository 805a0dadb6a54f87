"""LOD density rings and per-instance culling in numpy: the reference for ``shaders/rings.glsl``
and ``shaders/grass_cull.glsl`` (same float32 arithmetic, same integer hash), used by tests to
check the GPU's visible set exactly, and by tools that want to know what a camera keeps."""

from __future__ import annotations

import numpy as np

from wowgrass.grass.bundle import INSTANCE_DTYPE

from ..constants import RingSettings


def instance_hash(inst: np.ndarray) -> np.ndarray:
    """rings.glsl's ``grassInstanceHash``: a stable value in [0, 1) per instance (float32)."""
    p = np.ascontiguousarray(inst["pos"], np.float32).view(np.uint32).astype(np.uint64)
    m = np.uint64(0xFFFFFFFF)
    h = ((p[:, 0] * 0x8da6b343) & m) ^ ((p[:, 1] * 0xd8163841) & m) ^ ((p[:, 2] * 0xcb1ab31f) & m)
    h ^= h >> np.uint64(16)
    h = (h * 0x7feb352d) & m
    h ^= h >> np.uint64(15)
    h = (h * 0x846ca68b) & m
    h ^= h >> np.uint64(16)
    return (h >> np.uint64(8)).astype(np.float32) * np.float32(1.0 / 16777216.0)


def _radii_keep(rings: RingSettings):
    return np.array(rings.radii_padded(), np.float32), np.array(rings.keep_padded(), np.float32)


def ring_of(d: np.ndarray, rings: RingSettings) -> np.ndarray:
    """Ring index (0 = inner) of XY distances ``d``."""
    r, _ = _radii_keep(rings)
    return (d[:, None] >= r[None, :]).sum(axis=1)


def ring_keeps(d: np.ndarray, h: np.ndarray, rings: RingSettings) -> np.ndarray:
    """Whether the rings keep instances of hash ``h`` at distance ``d`` (rings.glsl's ``grassRingKeeps``)."""
    r, k = _radii_keep(rings)
    return np.all((h[:, None] < k[None, :]) | (d[:, None] < r[None, :]), axis=1)


def xy_distance(inst: np.ndarray, camera_xy) -> np.ndarray:
    p = np.asarray(inst["pos"], np.float32)
    c = np.asarray(camera_xy, np.float32)
    dx, dy = p[:, 0] - c[0], p[:, 1] - c[1]
    return np.sqrt(dx * dx + dy * dy)


def reference_cull(inst: np.ndarray, *, camera_xy, planes: np.ndarray, draw_distance: float,
                   bound_z: float, bound_radius: float, rings: RingSettings) -> tuple[np.ndarray, np.ndarray]:
    """What the GPU culling keeps of one model's instances for one view: a bool mask (draw
    distance, bounding sphere inside the frustum, the rings' keep hash) and each kept instance's
    LOD mesh (1 = the lighter mesh, from ``rings.lite_ring`` out)."""
    if inst.dtype != INSTANCE_DTYPE:
        raise TypeError(f"instances must have INSTANCE_DTYPE, not {inst.dtype}")
    d = xy_distance(inst, camera_xy)
    keep = d < np.float32(draw_distance)
    s = inst["scale"].astype(np.float32) * np.float32(1.0 / 4096.0)
    c = np.asarray(inst["pos"], np.float32).copy()
    c[:, 2] += np.float32(bound_z) * s
    r = np.float32(bound_radius) * s
    pl = np.asarray(planes, np.float32)
    for p in pl:
        keep &= c @ p[:3] + p[3] >= -r
    keep &= ring_keeps(d, instance_hash(inst), rings)
    lod = (ring_of(d, rings) >= rings.lite_ring).astype(np.int8)
    return keep, lod
