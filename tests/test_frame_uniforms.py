"""The frame block packer: a view's block is reused as a template while nothing but time changed;
its offsets are the std140 layout of the shader's block (computed here from frame.glsl's text)."""

import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np

import wowgrass.render.frame as F
from wowgrass.render.camera import Camera
from wowgrass.render.constants import GrassSettings
from wowgrass.render.frame import _FLOATS, Frame, FrameUniforms
from wowgrass.render.views import View

GLSL = Path(F.__file__).parent / "shaders" / "frame.glsl"
#: std140 base alignment and size in floats (a vec3 aligns as a vec4; a mat4 is four vec4 columns)
STD140 = {"float": (1, 1), "vec2": (2, 2), "vec3": (4, 3), "vec4": (4, 4), "mat4": (4, 16)}


def shader_offsets() -> dict[str, int]:
    """Float offset of every member of frame.glsl's ``uniform Frame`` block, by std140's rules."""
    text = GLSL.read_text()
    body = re.search(r"layout\(std140\) uniform Frame \{(.*?)\};", text, re.S)[1]
    body = re.sub(r"//[^\n]*", "", body)
    out, at = {}, 0
    for kind, name, count in re.findall(r"(float|vec[234]|mat4)\s+(\w+)(?:\[(\d+)\])?\s*;", body):
        align, size = STD140[kind]
        if count:   # an array: each element aligned (and strided) as a vec4
            align, size = 4, 4 * int(count) if kind == "vec4" else None
        at = -(-at // align) * align
        out[name] = at
        at += size
    out["end"] = -(-at // 4) * 4
    return out


OFS = shader_offsets()


def packer():
    return FrameUniforms(SimpleNamespace(info={"GL_UNIFORM_BUFFER_OFFSET_ALIGNMENT": 256}))


def fresh(frame, view):
    """The block packed with no template (a new view of the same camera and rect)."""
    return packer().pack(frame, View(view.camera, view.rect, view.fill))


def test_the_block_is_laid_out_as_the_shader_declares_it():
    assert OFS["end"] == _FLOATS
    want = {"_VIEW_PROJ": "uViewProj", "_CAMERA": "uCameraPos", "_SUN": "uSunDir", "_SUN_COLOR": "uSunColor",
            "_AMBIENT": "uAmbient", "_FOG_COLOR": "uFogColor", "_FOG": "uFog", "_GRASS": "uGrassFrame",
            "_FRUSTUM": "uFrustum", "_RINGS": "uRings", "_RING_KEEP": "uRingKeep", "_SHADOW_MATRIX": "uShadowMatrix",
            "_SHADOW": "uShadowParams", "_WATER": "uWaterLight"}
    assert {k: getattr(F, k) for k in want} == {k: OFS[v] for k, v in want.items()}
    assert OFS["uTime"] == OFS["uCameraPos"] + 3 and OFS["uNearFar"] == OFS["uFog"] + 2
    # the compute path reads the same buffer in vec4s (loadFrameSlot)
    slots = re.findall(r"(\w+) = (?:mat4\()?frameSlots\[b \+ (\d+)u\](\.zw)?", GLSL.read_text())
    assert {k: int(v) * 4 + (2 if zw else 0) for k, v, zw in slots} == {k: OFS[k] for k in ("uCameraPos", "uNearFar", "uGrassFrame",
                                                                             "uRings", "uRingKeep")}


def test_a_frame_like_the_last_changes_only_the_time():
    u = packer()
    view = View(Camera(position=np.array([10.0, 20.0, 5.0])), (0, 0, 320, 200))
    wind = GrassSettings()
    a = u.pack(Frame(time=1.0, views=[view], wind=wind), view).copy()
    b = u.pack(Frame(time=2.5, views=[view], wind=wind), view).copy()
    time_slots = {OFS["uTime"], OFS["uGrassFrame"] + 4}   # uTime, and uGrassFrame column 1's x
    assert set(np.nonzero(a != b)[0].tolist()) == time_slots
    assert all(b[i] == 2.5 for i in time_slots)
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
    assert u.pack(f, view, row)[OFS["uShadowParams"]] == 1.0
    f.shadow_map = None  # shadows off, same view: no stale shadow map in the block
    off = u.pack(f, view, row)
    assert off[OFS["uShadowParams"]:OFS["uShadowParams"] + 4].tolist() == [0.0] * 4 and np.array_equal(off, fresh(f, view))
    f.shadow_map = SimpleNamespace(matrix=np.eye(4) * 2.0, params=lambda: (1.0, 0.01, 0.002, 120.0))
    u.pack(f, view, row)
    f.shadow_map = None
    cam.position = np.array([12.0, 20.0, 5.0])  # and the camera moved: a new template, from this row
    off = u.pack(f, view, row)
    assert off[OFS["uShadowParams"]:OFS["uShadowParams"] + 4].tolist() == [0.0] * 4 and np.array_equal(off, fresh(f, view))
