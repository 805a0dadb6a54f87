"""GL contexts and render targets: an offscreen EGL context, or a glfw window where a display exists.

Both give a :class:`RenderTarget` with ``ctx`` (a moderngl context), ``fbo`` (what the renderer
draws into) and ``size``; the renderer does not know which one it has. Offscreen targets render
into a multisampled framebuffer (when ``samples`` > 0) that :meth:`RenderTarget.read_rgba`
resolves. Contexts ask for OpenGL 4.3 (indirect multi-draw for per-chunk culling) and fall back to
3.3, where grass is drawn with one instanced draw per model.
"""

from __future__ import annotations

import os
import weakref

import numpy as np

from wowgrass.errors import UsageError, WowgrassError


class GLUnavailableError(WowgrassError):
    """No OpenGL context could be created (no EGL driver, no display)."""


def has_display() -> bool:
    """True when a window system is reachable (X11 or Wayland)."""
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


_LIVE: list = []  # weak references to the offscreen contexts made here, oldest first


def create_offscreen_context(require: int = 430):
    """A standalone EGL context (Mesa llvmpipe on CI, the GPU's driver elsewhere). It is current
    once made; release it with :func:`release_context`."""
    import moderngl

    errors = []
    for req in (require, 330) if require > 330 else (330,):
        try:
            ctx = moderngl.create_standalone_context(backend="egl", require=req)
        except Exception as exc:  # glcontext raises plain Exceptions
            errors.append(f"GL {req // 100}.{req % 100 // 10}: {exc}")
            continue
        _LIVE.append(weakref.ref(ctx))
        return ctx
    raise GLUnavailableError(
        "cannot create an offscreen OpenGL context through EGL ("
        + "; ".join(errors)
        + "); install Mesa's EGL (libegl1, libegl-mesa0, libgl1-mesa-dri) or a GPU driver"
    )


def release_context(ctx) -> None:
    """Release ``ctx``; if it was made here and another offscreen context made here is still
    alive, make the newest of those current again. Releasing an EGL context leaves none current,
    so without this a program that made a second context (a second target, a view run in the
    same process) and released it found its first context dead: clears not done, buffers not
    readable."""
    from moderngl import InvalidObject

    was_ours = any(ref() is ctx for ref in _LIVE)
    ctx.release()
    alive = [ref for ref in _LIVE if ref() is not None and not isinstance(ref().mglo, InvalidObject)]
    _LIVE[:] = alive
    if was_ours and alive:
        alive[-1]().__enter__()


def release_framebuffers(*fbos) -> None:
    """Release framebuffers and their attachments (a framebuffer's release leaves its
    renderbuffers alive: a resized window kept every old size's)."""
    seen = set()
    for fbo in fbos:
        if fbo is None or id(fbo) in seen:
            continue
        seen.add(id(fbo))
        for att in [*fbo.color_attachments, fbo.depth_attachment]:
            if att is not None and id(att) not in seen:
                seen.add(id(att))
                att.release()
        fbo.release()


class RenderTarget:
    """Where frames go: ``ctx``, ``fbo`` and ``size``; :meth:`read_rgba` returns the last frame."""

    window = None

    def __init__(self, ctx, size, samples: int = 4, *, owns_ctx: bool = True):
        self.ctx = ctx
        self.size = (int(size[0]), int(size[1]))
        self.owns_ctx = owns_ctx
        if samples < 0 or samples & (samples - 1) and samples > 1:
            raise UsageError(f"--samples {samples}: must be 0 (off) or a power of two (2, 4, 8 ...)")
        self.max_samples = int(ctx.info.get("GL_MAX_SAMPLES", 0) or 0)
        self.samples = int(min(samples, self.max_samples)) if samples > 1 else 0
        import moderngl

        try:
            self._make_fbos()
        except moderngl.Error as exc:   # within the GL limits and still refused (memory)
            if owns_ctx:
                release_context(ctx)
            raise UsageError(f"--size {self.size[0]}x{self.size[1]} with --samples {self.samples}: this OpenGL "
                             f"context cannot make the framebuffer ({exc}); try a smaller size") from None

    def _make_fbos(self):
        from .memory import gpu_memory

        ctx, size, mem = self.ctx, self.size, gpu_memory(self.ctx)
        color = mem.track(ctx.renderbuffer(size, 4, samples=self.samples), "frame")
        depth = mem.track(ctx.depth_renderbuffer(size, samples=self.samples), "frame")
        self.fbo = ctx.framebuffer([color], depth)
        if self.samples:
            self._resolve = ctx.framebuffer([mem.track(ctx.renderbuffer(size, 4), "frame")])
        else:
            self._resolve = self.fbo

    def read_rgba(self) -> np.ndarray:
        """The framebuffer as an (H, W, 4) uint8 array, top row first."""
        if self.samples:
            self.ctx.copy_framebuffer(self._resolve, self.fbo)
        data = self._resolve.read(components=4, alignment=1)
        img = np.frombuffer(data, dtype=np.uint8).reshape(self.size[1], self.size[0], 4)
        return img[::-1].copy()

    def present(self):  # offscreen: nothing to show
        pass

    def release(self):
        release_framebuffers(getattr(self, "_resolve", None), getattr(self, "fbo", None))
        if self.owns_ctx:
            release_context(self.ctx)


def create_offscreen_target(size=(1280, 720), samples: int = 4, ctx=None) -> RenderTarget:
    """An offscreen target; pass ``ctx`` to share one context between several targets (tests)."""
    own = ctx is None
    return RenderTarget(ctx or create_offscreen_context(), size, samples, owns_ctx=own)


class WindowTarget(RenderTarget):
    """A glfw window. Frames are drawn into the target's own (multisampled) framebuffer, resolved
    into a single-sampled colour-only one and blitted from there to the window's back buffer: a
    colour-only source keeps the blit legal whatever depth/stencil/sample format the window got
    (moderngl's ``copy_framebuffer`` blits depth too, which fails when the formats differ).

    The window is asked for OpenGL 4.6..4.3 core (indirect multi-draw), then 3.3 core, forward
    compatible, with no depth, stencil or samples of its own. ``vsync`` sets the swap interval.
    """

    def __init__(self, size=(1280, 720), samples: int = 4, title: str = "wowgrass", *, vsync: bool = True,
                 visible: bool = True):
        try:
            import glfw
        except ImportError as exc:  # pragma: no cover - glfw is a core dependency
            raise GLUnavailableError(f"glfw is not importable: {exc}; use --output to render offscreen") from exc
        import moderngl

        errors: list[str] = []
        glfw.set_error_callback(lambda code, desc: errors.append(
            desc.decode("utf-8", "replace") if isinstance(desc, bytes) else str(desc)))
        where = os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or "no display"
        if not glfw.init():
            raise GLUnavailableError(f"cannot open a window on {where}: "
                                     + ("; ".join(errors) or "glfw could not initialise")
                                     + "; use --output PNG (or --frames N) to render offscreen through EGL")
        self.glfw = glfw
        window = None
        for major, minor in ((4, 6), (4, 5), (4, 3), (3, 3)):
            glfw.default_window_hints()
            glfw.window_hint(glfw.CONTEXT_VERSION_MAJOR, major)
            glfw.window_hint(glfw.CONTEXT_VERSION_MINOR, minor)
            glfw.window_hint(glfw.OPENGL_PROFILE, glfw.OPENGL_CORE_PROFILE)
            glfw.window_hint(glfw.OPENGL_FORWARD_COMPAT, True)
            glfw.window_hint(glfw.DOUBLEBUFFER, True)
            glfw.window_hint(glfw.DEPTH_BITS, 0)  # depth and MSAA live in our own framebuffer
            glfw.window_hint(glfw.STENCIL_BITS, 0)
            glfw.window_hint(glfw.SAMPLES, 0)
            glfw.window_hint(glfw.VISIBLE, bool(visible))
            window = glfw.create_window(int(size[0]), int(size[1]), title, None, None)
            if window:
                break
        if not window:
            glfw.terminate()
            raise GLUnavailableError(f"cannot open an OpenGL 3.3 core window on {where}: "
                                     + ("; ".join(dict.fromkeys(errors)) or "glfw gave no reason")
                                     + "; use --output PNG (or --frames N) to render offscreen through EGL")
        self.window = window
        glfw.make_context_current(window)
        glfw.swap_interval(1 if vsync else 0)
        try:
            ctx = moderngl.create_context(require=330)
        except Exception as exc:
            glfw.destroy_window(window)
            glfw.terminate()
            raise GLUnavailableError(f"the window's OpenGL context is not usable: {exc}") from exc
        self.title = title
        super().__init__(ctx, glfw.get_framebuffer_size(window), samples, owns_ctx=False)
        # something other than undefined memory while the tiles load
        ctx.screen.use()
        ctx.clear(0.62, 0.74, 0.86, 1.0, viewport=(0, 0, *self.size))
        glfw.swap_buffers(window)

    def _make_fbos(self):
        super()._make_fbos()
        if self.samples:
            self._present = self._resolve
        else:
            from .memory import gpu_memory

            self._present = self.ctx.framebuffer([gpu_memory(self.ctx).track(self.ctx.renderbuffer(self.size, 4), "frame")])

    def _release_fbos(self):
        release_framebuffers(getattr(self, "_present", None), getattr(self, "_resolve", None), getattr(self, "fbo", None))
        self._present = self._resolve = self.fbo = None

    def framebuffer_size(self) -> tuple[int, int]:
        return tuple(self.glfw.get_framebuffer_size(self.window))

    def resize_if_needed(self) -> bool:
        """Follow the window's framebuffer size (pixels, not screen units: HiDPI differs)."""
        size = self.framebuffer_size()
        if size != self.size and size[0] > 0 and size[1] > 0:
            self._release_fbos()
            self.size = size
            self._make_fbos()
            return True
        return False

    def present(self, *, read_back: bool = False, draw_over=None):
        """Show the frame; with ``read_back`` return it as (H, W, 3) uint8 read from the window's
        back buffer (glReadPixels on the default framebuffer) before the swap. ``draw_over()``
        draws into the back buffer after the frame is copied there (panels: single-sampled,
        never in the scene's framebuffer, so ``read_rgba`` stays the scene alone)."""
        ctx = self.ctx
        ctx.copy_framebuffer(self._present, self.fbo)  # MSAA resolve (or plain copy)
        ctx.copy_framebuffer(ctx.screen, self._present)
        if draw_over is not None:
            ctx.screen.use()
            draw_over()
            self.fbo.use()
        img = None
        if read_back:
            w, h = self.size
            data = ctx.screen.read(viewport=(0, 0, w, h), components=3, alignment=1)
            img = np.frombuffer(data, dtype=np.uint8).reshape(h, w, 3)[::-1].copy()
        self.glfw.swap_buffers(self.window)
        return img

    def read_rgba(self) -> np.ndarray:
        self.ctx.copy_framebuffer(self._present, self.fbo)
        data = self._present.read(components=4, alignment=1)
        return np.frombuffer(data, dtype=np.uint8).reshape(self.size[1], self.size[0], 4)[::-1].copy()

    def release(self):
        if self.window is None:
            return
        self._release_fbos()
        if self.owns_ctx:
            self.ctx.release()
        self.glfw.destroy_window(self.window)
        self.window = None
        self.glfw.terminate()
