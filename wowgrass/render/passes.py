"""Passes: what is drawn, with which program variants, into what.

A pass is called by :func:`wowgrass.render.frame.draw_frame` as::

    pass_.setup(frame)                 # once: add views of its own (frame.add_view), make targets
    for view in pass_.views(frame):    # the camera views (ColourPass), or its own (the sun's view)
        pass_.begin(frame, view)       # bind its framebuffer, viewport, states
        ...every source's draw(pass_, view)...
        pass_.end(frame, view)

Sources ask ``pass_.program(programs, name)`` for their program: the same ``.glsl`` file built
with the pass's ``defines``. To add a pass (a shadow pass, say): subclass :class:`Pass`, give it
``defines = {"SHADOW_PASS": True}`` (the shaders' depth-only branch; grass keeps ``sway.glsl``, so
its shadows sway with it), draw into its own depth texture in ``begin``, and return the sun's view
from ``views`` (added with ``frame.add_view`` in ``setup``). Put it before the colour pass.
"""

from __future__ import annotations

from .frame import SKY


class Pass:
    name = "pass"
    defines: dict = {}
    colour = False  # lit colour output (grass uses alpha to coverage there)

    def setup(self, frame) -> None:
        pass

    def views(self, frame) -> list:
        return frame.views

    def program(self, programs, name: str):
        """``programs``' program ``name`` built with this pass's defines."""
        return programs.variant(name, self.defines)

    def begin(self, frame, view) -> None:
        pass

    def end(self, frame, view) -> None:
        pass


class ColourPass(Pass):
    """The lit, fogged picture of each camera view into ``target.fbo`` (cleared to the sky)."""

    name = "colour"
    colour = True

    def __init__(self, target, clear=SKY):
        self.target, self.clear = target, clear
        self.alpha_to_coverage = target.samples > 0

    def begin(self, frame, view):
        import moderngl

        ctx = self.target.ctx
        self.target.fbo.use()
        ctx.viewport = view.rect
        ctx.clear(*self.clear, 1.0, depth=1.0, viewport=view.rect)
        ctx.enable_only(moderngl.DEPTH_TEST)
        ctx.wireframe = view.fill == "lines"

    def end(self, frame, view):
        self.target.ctx.wireframe = False
