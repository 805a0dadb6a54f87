"""The sky from the client's light tables (``view --clock``): a screen-filling triangle drawn
first in the colour pass, without depth, coloured by the view ray's elevation between the six sky
bands (shaders/sky.glsl). Without the tables the view keeps its flat clear colour and no sky."""

from __future__ import annotations

import numpy as np

from ..gl.state import disable, enable, set_uniform
from . import DrawCounts, Source


class SkyDome(Source):
    name = "sky"

    def __init__(self, ctx, programs):
        self.ctx, self.programs = ctx, programs
        self.colours = ((0.3, 0.5, 0.8),) * 6   # sky_top .. fog, 0..1
        self._vaos = {}

    def draw(self, pass_, view) -> DrawCounts:
        import moderngl

        if not pass_.colour or view.fill == "lines":
            return DrawCounts()
        prog = pass_.program(self.programs, "sky", view)
        vao = self._vaos.get(id(prog))
        if vao is None:
            vao = self._vaos[id(prog)] = self.ctx.vertex_array(prog, [])
        inv = np.linalg.inv(view.view_proj().astype(np.float64)).astype(np.float32)
        set_uniform(prog, "uInvViewProj", inv.T.tobytes())
        set_uniform(prog, "uSky", np.asarray(self.colours, np.float32).reshape(6, 3).tobytes())
        fbo = self.ctx.fbo
        disable(self.ctx, moderngl.DEPTH_TEST)
        fbo.depth_mask = False
        vao.render(moderngl.TRIANGLES, vertices=3)
        fbo.depth_mask = True
        enable(self.ctx, moderngl.DEPTH_TEST)
        return DrawCounts(1, 0, 1)

    def release(self):
        for vao in self._vaos.values():
            vao.release()
        self._vaos = {}
