"""Views: a camera, a viewport rectangle of the target and a fill mode.

The projection uses the viewport's aspect, so a split screen is two views of half the width::

    w, h = target.size
    views = [View(cam_a, (0, 0, w // 2, h)), View(cam_b, (w // 2, 0, w - w // 2, h), fill="lines")]

A frame draws each pass over its views (:func:`wowgrass.render.frame.draw_frame`); a view's
``slot`` is its place in the frame's uniform buffer (set by :meth:`Frame.add_view`).
Overlays (stats text) draw after the viewport is reset to the whole target.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .camera import Camera, planes_of

FILL_MODES = ("filled", "lines")


@dataclass(eq=False)
class View:
    camera: Camera
    rect: tuple[int, int, int, int]  # x, y, width, height in pixels (GL: y from the bottom)
    fill: str = "filled"
    name: str = "main"
    slot: int = 0

    def __post_init__(self):
        if self.fill not in FILL_MODES:
            raise ValueError(f"fill must be one of {FILL_MODES}, not {self.fill!r}")
        self.rect = tuple(int(v) for v in self.rect)
        self._key = None

    @property
    def aspect(self) -> float:
        return self.rect[2] / max(self.rect[3], 1)

    def _update(self):
        cam = self.camera
        cam.aspect = self.aspect
        key = (*cam.position.tolist(), cam.yaw, cam.pitch, cam.fov_y, cam.aspect, cam.near, cam.far)
        if key != self._key:  # the same camera gives the same matrices
            self._key = key
            self._vp = cam.view_proj()
            self._planes = planes_of(self._vp)

    def view_proj(self) -> np.ndarray:
        """Projection (with the viewport's aspect) times view, row-major float64."""
        self._update()
        return self._vp

    def planes(self) -> np.ndarray:
        """(6, 4) frustum planes of :meth:`view_proj`."""
        self._update()
        return self._planes
