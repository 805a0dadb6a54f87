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
from .gl.state import enable_only
from .gl.programs import SHADOW_UNIT

LINES_BACKGROUND = (0.07, 0.08, 0.11)  # behind a wireframe view: the lines stand out, gaps show


class Pass:
    name = "pass"
    defines: dict = {}
    colour = False  # lit colour output (grass uses alpha to coverage there)

    def setup(self, frame) -> None:
        pass

    def views(self, frame) -> list:
        return frame.views

    def program(self, programs, name: str, view=None, extra: dict | None = None):
        """``programs``' program ``name`` built with this pass's defines (and ``WIREFRAME`` for a
        view drawn in lines: flat colour, fed by the sources' line index buffers), plus a source's
        own ``extra`` defines (a variant of its program: the far terrain's, say)."""
        if view is not None and view.fill == "lines":
            return programs.variant(name, {**self.defines, **(extra or {}), "WIREFRAME": True})
        return programs.variant(name, {**self.defines, **extra} if extra else self.defines)

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

        ctx, fbo = self.target.ctx, self.target.fbo
        if ctx.fbo is not fbo:
            fbo.use()
        if ctx.viewport != view.rect:
            ctx.viewport = view.rect
        clear = LINES_BACKGROUND if view.fill == "lines" else self.clear
        if view.rect == (0, 0, *self.target.size):
            ctx.clear(*clear, 1.0, depth=1.0)
        else:  # a split view draws (and clears) its part only
            ctx.scissor = view.rect
            ctx.clear(*clear, 1.0, depth=1.0, viewport=view.rect)
        # no polygon line mode: every source draws a lines view as line lists from its line index
        # buffers (a line-list pipeline, not a triangle one drawn as outlines)
        enable_only(ctx, moderngl.DEPTH_TEST)
        if frame.shadow_map is not None:
            frame.shadow_map.use(SHADOW_UNIT)

    def end(self, frame, view):
        if view.rect != (0, 0, *self.target.size):
            self.target.ctx.scissor = None


class ShadowPass(Pass):
    """Depth from the sun into a :class:`~wowgrass.render.shadow.ShadowMap` fitted to the first
    camera view: sources draw their ``SHADOW_PASS`` variants (grass with the same wind as its
    colour pass) for the sun's view, which gets a uniform slot and a culling of its own."""

    name = "shadow"
    defines = {"SHADOW_PASS": True}

    def __init__(self, shadow_map):
        self.map = shadow_map
        self._view = None
        self._fit_key = None  # (camera, its matrices' key, sun direction) the map was fitted for

    def setup(self, frame):
        from .views import SunView

        main = frame.views[0]
        main.view_proj()  # the camera takes its view's aspect before the map is fitted to it
        # refitted only when the camera, the sun or the map (fitted elsewhere) changed
        key = (main.camera, main._key, tuple(frame.sun_dir))
        if (self._fit_key is None or self._fit_key[0] is not main.camera or self._fit_key[1:] != key[1:]
                or self._view._vp is not self.map.view_proj):
            self.map.fit(main.camera, frame.sun_dir)
            self._view = SunView(main.camera, self.map.size, self.map.view_proj)
            self._fit_key = key
        frame.add_view(self._view)
        frame.shadow_map = self.map

    def views(self, frame):
        return [self._view]

    def begin(self, frame, view):
        import moderngl

        self.map.begin()
        enable_only(self.map.ctx, moderngl.DEPTH_TEST)
        self.map.ctx.polygon_offset = (1.5, 2.0)  # slope-scaled depth bias against shadow acne

    def end(self, frame, view):
        self.map.ctx.polygon_offset = (0.0, 0.0)
