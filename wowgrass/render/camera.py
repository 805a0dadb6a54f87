"""Fly camera in WoW world space (+X north, +Y west, +Z up; right-handed).

Matrices are float32 numpy arrays in the row-major math convention (``clip = P @ V @ p``);
:meth:`Camera.view_proj_gl` returns them transposed into the column-major bytes GL expects.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


def perspective(fov_y_deg: float, aspect: float, near: float, far: float) -> np.ndarray:
    f = 1.0 / math.tan(math.radians(fov_y_deg) / 2.0)
    m = np.zeros((4, 4), dtype=np.float64)
    m[0, 0] = f / aspect
    m[1, 1] = f
    m[2, 2] = (far + near) / (near - far)
    m[2, 3] = 2.0 * far * near / (near - far)
    m[3, 2] = -1.0
    return m


def look_at(eye, target, up=(0.0, 0.0, 1.0)) -> np.ndarray:
    eye, target, up = (np.asarray(v, dtype=np.float64) for v in (eye, target, up))
    f = target - eye
    f /= max(np.linalg.norm(f), 1e-12)
    s = np.cross(f, up)
    if np.linalg.norm(s) < 1e-9:  # looking straight up or down
        s = np.cross(f, (1.0, 0.0, 0.0))
    s /= np.linalg.norm(s)
    u = np.cross(s, f)
    m = np.eye(4)
    m[0, :3], m[1, :3], m[2, :3] = s, u, -f
    m[:3, 3] = -m[:3, :3] @ eye
    return m


@dataclass
class Camera:
    """Position plus yaw/pitch (radians; yaw 0 looks north (+X), positive turns towards west)."""

    position: np.ndarray = field(default_factory=lambda: np.zeros(3))
    yaw: float = 0.0
    pitch: float = 0.0
    fov_y: float = 60.0
    near: float = 0.2
    far: float = 1500.0
    aspect: float = 16 / 9

    def __post_init__(self):
        self.position = np.asarray(self.position, dtype=np.float64)

    @classmethod
    def looking_at(cls, eye, target, **kw) -> Camera:
        cam = cls(position=np.asarray(eye, dtype=np.float64), **kw)
        cam.look_at(target)
        return cam

    def look_at(self, target):
        d = np.asarray(target, dtype=np.float64) - self.position
        self.yaw = math.atan2(d[1], d[0])
        self.pitch = math.atan2(d[2], math.hypot(d[0], d[1]))

    @property
    def forward(self) -> np.ndarray:
        cp = math.cos(self.pitch)
        return np.array([cp * math.cos(self.yaw), cp * math.sin(self.yaw), math.sin(self.pitch)])

    @property
    def right(self) -> np.ndarray:
        # east of north is -Y: right = forward x up
        return np.array([math.sin(self.yaw), -math.cos(self.yaw), 0.0])

    def view(self) -> np.ndarray:
        cp = math.cos(self.pitch)
        if abs(cp) < 1e-6:  # straight up or down: look_at picks the side vector
            return look_at(self.position, self.position + self.forward)
        # look_at's matrix written out for up = +Z (a per-frame cost, ~10x cheaper than look_at)
        cy, sy, sp = math.cos(self.yaw), math.sin(self.yaw), math.sin(self.pitch)
        f = (cp * cy, cp * sy, sp)
        k = 1.0 if cp > 0 else -1.0
        s = (k * sy, -k * cy, 0.0)
        u = (s[1] * f[2] - s[2] * f[1], s[2] * f[0] - s[0] * f[2], s[0] * f[1] - s[1] * f[0])
        x, y, z = (float(v) for v in self.position)
        return np.array([[s[0], s[1], s[2], -(s[0] * x + s[1] * y + s[2] * z)],
                         [u[0], u[1], u[2], -(u[0] * x + u[1] * y + u[2] * z)],
                         [-f[0], -f[1], -f[2], f[0] * x + f[1] * y + f[2] * z],
                         [0.0, 0.0, 0.0, 1.0]])

    def proj(self) -> np.ndarray:
        return perspective(self.fov_y, self.aspect, self.near, self.far)

    def view_proj(self) -> np.ndarray:
        return self.proj() @ self.view()

    def view_proj_gl(self) -> bytes:
        return self.view_proj().T.astype("f4").tobytes()

    def frustum_planes(self) -> np.ndarray:
        """(6, 4) planes (a, b, c, d), inside where a x + b y + c z + d >= 0 (Gribb-Hartmann)."""
        return planes_of(self.view_proj())

    def move(self, forward: float = 0.0, right: float = 0.0, up: float = 0.0):
        self.position = self.position + self.forward * forward + self.right * right
        self.position[2] += up

    def turn(self, d_yaw: float, d_pitch: float):
        self.yaw = (self.yaw + d_yaw) % (2 * math.pi)
        self.pitch = float(np.clip(self.pitch + d_pitch, -1.55, 1.55))


def planes_of(m: np.ndarray) -> np.ndarray:
    """(6, 4) frustum planes of a view-projection matrix (see :meth:`Camera.frustum_planes`)."""
    planes = np.array([m[3] + m[0], m[3] - m[0], m[3] + m[1], m[3] - m[1], m[3] + m[2], m[3] - m[2]])
    return planes / np.linalg.norm(planes[:, :3], axis=1, keepdims=True)


class BoxSet:
    """Axis-aligned boxes kept as contiguous (3, n) centre and half-extent arrays, for culling a
    few thousand boxes a frame in well under 0.1 ms: a distance test first (cheap, removes most),
    then the frustum planes on what is left (``n . c + |n| . e`` is the plane distance of the
    box's positive vertex)."""

    def __init__(self, lo: np.ndarray, hi: np.ndarray):
        lo, hi = np.asarray(lo, np.float64).reshape(-1, 3), np.asarray(hi, np.float64).reshape(-1, 3)
        self.centre = np.ascontiguousarray(((lo + hi) * 0.5).T)
        self.extent = np.ascontiguousarray(((hi - lo) * 0.5).T)

    def __len__(self) -> int:
        return self.centre.shape[1]

    def visible(self, planes, eye, max_dist: float, *, dims: int = 3, mask=None) -> np.ndarray:
        """Sorted indices of the boxes nearer than ``max_dist`` to ``eye`` (in XY when ``dims`` is
        2) and not wholly outside a frustum plane (none tested when ``planes`` is None)."""
        c, e = self.centre, self.extent
        d2 = None
        for k in range(dims):
            dk = np.abs(c[k] - float(eye[k]))
            dk -= e[k]
            np.maximum(dk, 0.0, out=dk)
            dk *= dk
            d2 = dk if d2 is None else np.add(d2, dk, out=d2)
        near = d2 < max_dist * max_dist
        if mask is not None:
            near &= mask
        idx = np.flatnonzero(near)
        if planes is None or not len(idx):
            return idx
        n = np.ascontiguousarray(planes[:, :3])
        dist = n @ c[:, idx] + np.abs(n) @ e[:, idx]
        return idx[np.all(dist >= -planes[:, 3:4], axis=0)]

