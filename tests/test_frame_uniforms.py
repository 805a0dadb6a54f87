"""The frame block packer: a view's block is reused as a template while nothing but time changed."""

from types import SimpleNamespace

import numpy as np

from wowgrass.render.camera import Camera
from wowgrass.render.constants import GrassSettings
from wowgrass.render.frame import _CAMERA, _FLOATS, _GRASS, _SHADOW, Frame, FrameUniforms
from wowgrass.render.views import View


def packer():
    return FrameUniforms(SimpleNamespace(info={"GL_UNIFORM_BUFFER_OFFSET_ALIGNMENT": 256}))


def fresh(frame, view):
    """The block packed with no template (a new view of the same camera and rect)."""
    return packer().pack(frame, View(view.camera, view.rect, view.fill))


def test_a_frame_like_the_last_changes_only_the_time():
    u = packer()
    view = View(Camera(position=np.array([10.0, 20.0, 5.0])), (0, 0, 320, 200))
    wind = GrassSettings()
    a = u.pack(Frame(time=1.0, views=[view], wind=wind), view).copy()
    b = u.pack(Frame(time=2.5, views=[view], wind=wind), view).copy()
    assert set(np.nonzero(a != b)[0].tolist()) == {_CAMERA + 3, _GRASS + 4}
    assert b[_CAMERA + 3] == b[_GRASS + 4] == 2.5
    assert np.array_equal(b, fresh(Frame(time=2.5, views=[view], wind=wind), view))


def test_settings_camera_and_shadows_are_packed_again_when_they_change():
    u = packer()
    cam = Camera(position=np.array([10.0, 20.0, 5.0]))
    view = View(cam, (0, 0, 320, 200))
    wind = GrassSettings()
    u.pack(Frame(time=1.0, views=[view], wind=wind), view)
    wind.enabled = False  # the sway switch (a toggle in the viewer)
    wind.rings.debug = True
    f = Frame(time=1.0, views=[view], wind=wind)
    assert np.array_equal(u.pack(f, view), fresh(f, view))
    cam.position = np.array([11.0, 20.0, 5.0])
    assert np.array_equal(u.pack(f, view), fresh(f, view))
    row = np.zeros(_FLOATS, np.float32)  # one slot's row, reused frame after frame as write() does
    f.shadow_map = SimpleNamespace(matrix=np.eye(4) * 2.0, params=lambda: (1.0, 0.01, 0.002, 120.0))
    assert u.pack(f, view, row)[_SHADOW] == 1.0
    f.shadow_map = None  # shadows off, same view: no stale shadow map in the block
    off = u.pack(f, view, row)
    assert off[_SHADOW:_SHADOW + 4].tolist() == [0.0] * 4 and np.array_equal(off, fresh(f, view))
    f.shadow_map = SimpleNamespace(matrix=np.eye(4) * 2.0, params=lambda: (1.0, 0.01, 0.002, 120.0))
    u.pack(f, view, row)
    f.shadow_map = None
    cam.position = np.array([12.0, 20.0, 5.0])  # and the camera moved: a new template, from this row
    off = u.pack(f, view, row)
    assert off[_SHADOW:_SHADOW + 4].tolist() == [0.0] * 4 and np.array_equal(off, fresh(f, view))
