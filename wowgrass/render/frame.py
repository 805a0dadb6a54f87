"""A frame: for each pass, for each of its views, for each source: draw.

    frame = Frame(time=t, views=[View(camera, (0, 0, w, h))], wind=grass_settings)
    counts = draw_frame(frame, passes=[ColourPass(target)], sources=[terrain, doodads, grass],
                        uniforms=frame_uniforms)

Order inside :func:`draw_frame`: every pass's ``setup(frame)`` (a pass may add views of its own,
e.g. a shadow pass the sun's view), then the frame's uniform block is written once for every view
(one slot of :class:`FrameUniforms` per view), then every source's ``prepare(frame)`` (once per
frame: culling for each view, its indirect commands), then the draws. Nothing here knows what a
source draws; see :mod:`.sources` (adding a source), :mod:`.passes` (adding a pass) and
:mod:`.views` (views and split screens).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import math

import numpy as np

from .constants import GrassSettings
from .gl.programs import FRAME_BLOCK_BYTES, frame_stride
from .gl.state import bind_uniform_block
from .sources import DrawCounts

# The zone view's sun: an afternoon sun in the south-west (azimuth 130 deg from north towards west,
# X north, Y west), 25 deg up, so grass, doodads and relief cast shadows long enough to be seen
# (a sun 55 deg up in the north-east, behind the sample's views, left them hidden behind their
# casters: the pictures with and without shadows were nearly identical). Sun against ambient is
# about 2.3 : 1 on flat ground, so a shadow reads as one.
SUN_ELEVATION, SUN_AZIMUTH = 25.0, 130.0
SUN_DIR = np.array([math.cos(math.radians(SUN_ELEVATION)) * math.cos(math.radians(SUN_AZIMUTH)),
                    math.cos(math.radians(SUN_ELEVATION)) * math.sin(math.radians(SUN_AZIMUTH)),
                    math.sin(math.radians(SUN_ELEVATION))])
SUN_COLOR = (1.15, 1.10, 0.95)
AMBIENT = (0.40, 0.43, 0.48)
SKY = (0.62, 0.74, 0.86)

# std140 layout of shaders/frame.glsl's block, as float32 offsets
_FLOATS = FRAME_BLOCK_BYTES // 4  # 132
_VIEW_PROJ, _CAMERA, _SUN, _SUN_COLOR, _AMBIENT, _FOG_COLOR, _FOG = 0, 16, 20, 24, 28, 32, 36
_GRASS, _FRUSTUM, _RINGS, _RING_KEEP, _SHADOW_MATRIX, _SHADOW, _WATER = 40, 56, 80, 84, 88, 104, 108
_MODEL = 124
_F = struct.Struct("<f")
_SHADOW_PART = struct.Struct("<20f")  # uShadowMatrix, uShadowParams (consecutive)
# the scalar fields in the order _block lists them: one fancy-index write a view, not ten slices
_SCALARS = np.r_[_CAMERA:_CAMERA + 4, _SUN:_SUN + 3, _SUN_COLOR:_SUN_COLOR + 3, _AMBIENT:_AMBIENT + 3,
                 _FOG_COLOR:_FOG_COLOR + 3, _FOG:_FOG + 4, _GRASS:_GRASS + 13, _RINGS:_RINGS + 4,
                 _RING_KEEP:_RING_KEEP + 4]


@dataclass
class Frame:
    """What one frame draws: scene time, the views, lighting and the wind; counts accumulate in
    ``counts`` (per source name) while it is drawn."""

    time: float = 0.0
    views: list = field(default_factory=list)
    wind: GrassSettings = field(default_factory=GrassSettings)
    fog: tuple[float, float] = (260.0, 900.0)
    fog_color: tuple = SKY
    sun_dir: tuple = tuple(SUN_DIR)
    sun_color: tuple = SUN_COLOR
    ambient: tuple = AMBIENT
    index: int = 0
    counts: dict = field(default_factory=dict)
    pass_views: list = field(default_factory=list)  # views passes added (the sun's): not drawn in colour
    uniforms: FrameUniforms | None = None  # set by draw_frame; sources bind a view's block for compute work
    shadow_map: object = None  # the sun's ShadowMap when a shadow pass drew one (colour passes sample it)
    water: tuple | None = None  # the light tables' river shallow/deep, ocean shallow/deep (4 RGB, 0..1)
    model_light: tuple | None = None  # the light tables' model/WMO ambient and diffuse (2 RGB, 0..1)

    def add_view(self, view):
        """Add a pass's own view (e.g. the sun's); it gets a uniform slot and sources prepare it."""
        self.pass_views.append(view)
        return view

    @property
    def all_views(self) -> list:
        return self.views + self.pass_views


class FrameUniforms:
    """The ``Frame`` uniform block of every program: one slot per view in one buffer, written once
    a frame (``write``) and bound per view (``bind``). Binding point 0; programs are linked to it
    by :func:`wowgrass.render.gl.programs.load_program`. Compute passes that serve every view in one
    dispatch read the same buffer as storage (``buffer``; shaders/frame.glsl's ``FRAME_SLOTS``).

    The buffer is one of ``RING`` written in turn: a frame writes one the GPU is not reading
    (frames in flight are at most two, render.gputimer), with one ``glBufferSubData`` and no
    orphaning (the H200's driver took ~2 µs of CPU for each)."""

    BINDING = 0
    RING = 3

    def __init__(self, ctx):
        self.ctx = ctx
        self.stride = frame_stride(ctx)
        self.buffer = None  # the buffer the last write went to
        self._ring: list = []
        self._turn = 0
        self._slots = 0
        self._last = None

    def pack(self, frame: Frame, view, out: np.ndarray | None = None) -> np.ndarray:
        """The block for ``view`` of ``frame`` as float32 (shaders/frame.glsl's std140 layout)."""
        b = np.frombuffer(self._block(frame, view), np.float32, count=_FLOATS)
        if out is None:
            return b.copy()
        out[:] = b
        return out

    def _block(self, frame: Frame, view) -> bytearray:
        """The block for ``view`` of ``frame`` as ``stride`` bytes. A view keeps its last block as
        a template, valid while its matrix (a new array when the camera moves) and the settings
        (compared by a key of the objects themselves) stay; a frame like the last one then
        copies it and writes the time (and the shadow map's matrix, if it has one)."""
        cam, wind = view.camera, frame.wind
        rings = wind.rings
        vp = view.view_proj()
        key = (frame.sun_dir, frame.sun_color, frame.ambient, frame.fog_color, frame.fog, cam.near, cam.far,
               wind.fade_start, wind.draw_distance, wind.wind_speed, wind.wind_amplitude, wind.root_fraction,
               wind.phase, wind.direction, wind.enabled, rings.radii, rings.keep, rings.band, rings.enabled,
               rings.debug, frame.water, frame.model_light)
        tpl = getattr(view, "_frame_block", None)
        try:
            same = tpl is not None and tpl[0] is vp and tpl[1] == key
        except ValueError:  # a numpy array among the settings: compared as changed
            same = False
        if not same:
            b = np.zeros(self.stride // 4, np.float32)
            px, py, pz = cam.position.tolist()
            b[_VIEW_PROJ:_VIEW_PROJ + 16] = vp.T.reshape(-1)
            b[_FRUSTUM:_FRUSTUM + 24] = view.planes().reshape(-1)
            b[_SCALARS] = (px, py, pz, 0.0, *frame.sun_dir, *frame.sun_color, *frame.ambient, *frame.fog_color,
                           *frame.fog, cam.near, cam.far,
                           *wind.frame_columns((px, py), 0.0),  # sway.glsl's columns 0-2, sway on
                           *rings.radii_padded(), rings.band, *rings.keep_padded(), 1.0 if rings.debug else 0.0)
            if frame.water is not None:
                w = np.zeros((4, 4), np.float32)
                w[:, :3] = frame.water
                w[0, 3] = 1.0
                b[_WATER:_WATER + 16] = w.reshape(-1)
            if frame.model_light is not None:
                ml = np.zeros((2, 4), np.float32)
                ml[:, :3] = frame.model_light
                ml[0, 3] = 1.0
                b[_MODEL:_MODEL + 8] = ml.reshape(-1)
            tpl = view._frame_block = (vp, key, b.tobytes())  # no shadow map unless a frame has one
        block = bytearray(tpl[2])
        t = frame.time
        _F.pack_into(block, _CAMERA * 4 + 12, t)
        _F.pack_into(block, _GRASS * 4 + 16, t)  # sway.glsl's column 1: time, wind speed, amplitude, root fraction
        sm = frame.shadow_map
        if sm is not None:
            _SHADOW_PART.pack_into(block, _SHADOW_MATRIX * 4, *sm.matrix.T.reshape(-1).tolist(), *sm.params())
        return block

    def write(self, frame: Frame):
        """Give every view of ``frame`` its slot and write its block (skipped when nothing
        changed since the last frame)."""
        views = frame.all_views
        for i, v in enumerate(views):
            v.slot = i
        raw = self._block(frame, views[0]) if len(views) == 1 else \
            b"".join([self._block(frame, v) for v in views])
        if raw == self._last:
            return
        if self._slots < len(views):
            for buf in self._ring:
                buf.release()
            self._slots = max(len(views), 2)
            from .gl.memory import gpu_memory

            mem = gpu_memory(self.ctx)
            self._ring = [mem.track(self.ctx.buffer(reserve=self._slots * self.stride, dynamic=True), "frame")
                          for _ in range(self.RING)]
        self._turn = (self._turn + 1) % self.RING
        self.buffer = self._ring[self._turn]
        self.buffer.write(raw)
        self._last = raw

    def bind(self, view):
        bind_uniform_block(self.ctx, self.buffer, self.BINDING, view.slot * self.stride, _FLOATS * 4)

    def release(self):
        for buf in self._ring:
            buf.release()
        self._ring, self.buffer, self._slots, self._last = [], None, 0, None


def draw_frame(frame: Frame, passes, sources, uniforms: FrameUniforms) -> DrawCounts:
    """Draw ``frame``: passes in order, each over its views, each view over all ``sources``."""
    for p in passes:
        p.setup(frame)
    frame.uniforms = uniforms
    uniforms.write(frame)
    for s in sources:
        s.prepare(frame)
    total = DrawCounts()
    counts = frame.counts
    for p in passes:
        for view in p.views(frame):
            uniforms.bind(view)
            p.begin(frame, view)
            for s in sources:
                c = s.draw(p, view)
                total = total + c
                last = counts.get(s.name)
                counts[s.name] = c if last is None else last + c
            p.end(frame, view)
    return total
