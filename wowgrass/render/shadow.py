"""The sun's shadow map, shared by the procedural meadow and the zone view.

One depth texture rendered from a directional sun with an orthographic projection fitted to the
near part of the view: the bounding sphere of the camera frustum between its near plane and
``reach`` (a sphere's size does not change as the camera turns, so the map's texel size stays
put), its centre snapped to whole texels in light space (moving the camera slides the map by
whole texels: no shimmering edges). A flight keeps the map around the camera, so shadows stay
sharp near it; beyond ``reach`` the colour passes fade to unshadowed (``shaders/shadow.glsl``).
Casters above the fitted sphere (hills between it and the sun) are kept by pulling the light's
near plane back by ``caster_height``.
"""

from __future__ import annotations

import math

import numpy as np

from .camera import look_at
from .gl.state import use_texture

BIAS = np.array([[0.5, 0, 0, 0.5], [0, 0.5, 0, 0.5], [0, 0, 0.5, 0.5], [0, 0, 0, 1.0]])


def ortho(left, right, bottom, top, near, far) -> np.ndarray:
    m = np.eye(4)
    m[0, 0], m[1, 1], m[2, 2] = 2 / (right - left), 2 / (top - bottom), -2 / (far - near)
    m[0, 3], m[1, 3], m[2, 3] = -(right + left) / (right - left), -(top + bottom) / (top - bottom), -(far + near) / (far - near)
    return m


def frustum_sphere(camera, reach: float) -> tuple[np.ndarray, float]:
    """Centre and radius of the smallest sphere holding the camera frustum from near to ``reach``."""
    n, f = camera.near, max(reach, camera.near * 2)
    ty = math.tan(math.radians(camera.fov_y) / 2)
    k2 = ty * ty * (1 + camera.aspect * camera.aspect)  # tan^2 of the half-diagonal angle
    zc = min(0.5 * (f + n) * (1 + k2), f)
    r = math.sqrt((f - zc) ** 2 + f * f * k2)
    return camera.position + camera.forward * zc, r


class ShadowMap:
    """A depth texture (hardware comparison: ``sampler2DShadow``) and its framebuffer."""

    def __init__(self, ctx, size: int = 2048, *, reach: float = 60.0, caster_height: float = 150.0,
                 depth_bias: float = 0.0003):
        import moderngl

        self.ctx, self.size = ctx, int(size)
        self.reach, self.caster_height, self.depth_bias = float(reach), float(caster_height), float(depth_bias)
        from .gl.memory import gpu_memory

        self.texture = gpu_memory(ctx).track(ctx.depth_texture((self.size, self.size)), "frame")
        self.texture.compare_func = "<="
        self.texture.filter = (moderngl.LINEAR, moderngl.LINEAR)
        self.texture.repeat_x = self.texture.repeat_y = False
        self.fbo = ctx.framebuffer(depth_attachment=self.texture)
        self.view_proj = np.eye(4)  # world -> light clip space (the depth pass's uViewProj)
        self.matrix = np.eye(4)  # world -> [0, 1]^3 shadow map coordinates (uShadowMatrix)
        self.radius = 1.0

    def fit(self, camera, sun_dir) -> np.ndarray:
        """Fit the map to ``camera`` (up to ``reach``) for a sun in direction ``sun_dir`` (towards
        the sun); returns and keeps the light's view-projection matrix."""
        sun = np.asarray(sun_dir, np.float64)
        sun = sun / np.linalg.norm(sun)
        centre, r = frustum_sphere(camera, self.reach)
        r = math.ceil(r * 4.0) / 4.0  # a radius that changes in steps only (texel size stays put)
        up = (0.0, 0.0, 1.0) if abs(sun[2]) < 0.99 else (1.0, 0.0, 0.0)
        back = r + self.caster_height
        view = look_at(centre + sun * back, centre, up)
        # snap the centre to whole texels in light space
        texel = 2.0 * r / self.size
        c = view @ np.r_[centre, 1.0]
        dx, dy = c[0] - np.round(c[0] / texel) * texel, c[1] - np.round(c[1] / texel) * texel
        proj = ortho(-r + dx, r + dx, -r + dy, r + dy, 0.0, back + r)
        self.view_proj = proj @ view
        self.matrix = BIAS @ self.view_proj
        self.radius = r
        return self.view_proj

    def params(self) -> tuple[float, float, float, float]:
        """``uShadowParams``: on, one texel in map units, depth bias, reach."""
        return (1.0, 1.0 / self.size, self.depth_bias, self.reach)

    def begin(self):
        """Bind and clear the map for the depth pass (the caller draws the casters)."""
        self.fbo.use()
        self.ctx.viewport = (0, 0, self.size, self.size)
        self.ctx.scissor = None
        self.fbo.clear(depth=1.0)

    def use(self, location: int):
        use_texture(self.ctx, self.texture, location)

    def read_depth(self) -> np.ndarray:
        """(size, size) float32 depths in [0, 1], row 0 at shadow-map v = 0 (tests)."""
        data = self.texture.read(alignment=1)
        return np.frombuffer(data, np.float32).reshape(self.size, self.size)

    def release(self):
        self.fbo.release()
        self.texture.release()
