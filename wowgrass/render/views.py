"""Views: a camera, a viewport rectangle of the target and a fill mode.

The projection uses the viewport's aspect, so a split screen is two views of half the width::

    w, h = target.size
    views = [View(cam_a, (0, 0, w // 2, h)), View(cam_b, (w // 2, 0, w - w // 2, h), fill="lines")]

A frame draws each pass over its views (:func:`wowgrass.render.frame.draw_frame`); a view's
``slot`` is its place in the frame's uniform buffer (set by :meth:`Frame.add_view`).
Overlays (stats text) draw after the viewport is reset to the whole target
(:func:`reset_viewport`). :func:`frame_views` makes the views a viewer shows: one, or the split
screen's filled left and wireframe right halves (the same camera, each with the half-width
aspect (W/2)/H: the grass lesson's first named mistake is forgetting that). A ``"lines"`` view is
drawn through line index buffers with a line-list primitive, not as polygons in line mode.
"""

from __future__ import annotations

import copy
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


def frame_views(camera: Camera, size, *, split: bool = False, wireframe: bool = False) -> list[View]:
    """The views of a frame of ``size`` (W, H): one of the whole frame (``wireframe``: in lines),
    or with ``split`` the left half filled and the right half in lines, each a copy of ``camera``
    whose aspect becomes its half's."""
    w, h = int(size[0]), int(size[1])
    if not split:
        return [View(camera, (0, 0, w, h), "lines" if wireframe else "filled")]
    half = w // 2
    return [View(copy.copy(camera), (0, 0, half, h), "filled", "left"),
            View(copy.copy(camera), (half, 0, w - half, h), "lines", "right")]


class SunView(View):
    """The sun's view for a shadow pass: its matrix is the shadow map's light projection; the
    camera (position, near, far: LOD and grass fade distances) stays the viewer's."""

    def __init__(self, camera: Camera, size: int, view_proj: np.ndarray):
        super().__init__(camera, (0, 0, size, size), "filled", "sun")
        self._vp, self._planes = view_proj, planes_of(view_proj)

    def _update(self):
        pass


def reset_viewport(ctx, size):
    """Viewport and scissor back to the whole frame (after the views, before an overlay)."""
    ctx.viewport = (0, 0, int(size[0]), int(size[1]))
    ctx.scissor = None
