"""The few GL entry points called from the system's GL library through ctypes, beside moderngl.

moderngl exposes neither sync objects nor ``GL_QUERY_RESULT_AVAILABLE`` (the frame timer's fences:
:mod:`.timer`), and it keeps the GIL through every call. A GL call through ctypes lets go of it; on
a driver that does the work in the call (Mesa's llvmpipe runs a compute dispatch on the CPU before
it returns) the view's other threads run meanwhile (:func:`run_compute`: the workbench's grass
thread waited 170-360 ms for 10-20 ms of work behind the grass cull's dispatch). The entry points dispatch
to the current context, EGL or GLX alike. Where no library has them, callers fall back to moderngl.
"""

from __future__ import annotations

import ctypes
import ctypes.util


class NativeGL:
    """The entry points, from the system library ``lib``."""

    def __init__(self, lib):
        c = ctypes
        sig = {
            "glGenQueries": (None, [c.c_int, c.POINTER(c.c_uint)]),
            "glDeleteQueries": (None, [c.c_int, c.POINTER(c.c_uint)]),
            "glBeginQuery": (None, [c.c_uint, c.c_uint]),
            "glEndQuery": (None, [c.c_uint]),
            "glGetQueryObjectui64v": (None, [c.c_uint, c.c_uint, c.POINTER(c.c_uint64)]),
            "glFenceSync": (c.c_void_p, [c.c_uint, c.c_uint]),
            "glClientWaitSync": (c.c_uint, [c.c_void_p, c.c_uint, c.c_uint64]),
            "glDeleteSync": (None, [c.c_void_p]),
            "glUseProgram": (None, [c.c_uint]),
            "glDispatchCompute": (None, [c.c_uint, c.c_uint, c.c_uint]),
        }
        for name, (res, args) in sig.items():
            f = getattr(lib, name)
            f.restype, f.argtypes = res, args
            setattr(self, name, f)


_GL: NativeGL | None | bool = False  # False: not looked for yet


def native_gl() -> NativeGL | None:
    """The entry points, or None where no system GL library has them."""
    global _GL
    if _GL is False:
        _GL = None
        names = ["libOpenGL.so.0", "libGL.so.1", ctypes.util.find_library("OpenGL"), ctypes.util.find_library("GL")]
        for name in filter(None, names):
            try:
                _GL = NativeGL(ctypes.CDLL(name))
                break
            except (OSError, AttributeError):
                continue
    return _GL


SOFTWARE_RENDERERS = ("llvmpipe", "softpipe", "swrast", "lavapipe")
_IN_CALL: dict = {}  # id(context) -> whether its driver does a dispatch's work in the call


def works_in_the_call(renderer: str) -> bool:
    """Whether a driver named ``renderer`` (``GL_RENDERER``) runs a compute dispatch before the call
    returns: Mesa's software rasterizers do; a GPU driver queues it."""
    r = renderer.lower()
    return any(name in r for name in SOFTWARE_RENDERERS)


def run_compute(cs, x: int = 1, y: int = 1, z: int = 1) -> None:
    """``cs.run(x, y, z)``; where the driver does the work in the call, through ctypes with the GIL
    let go meanwhile (on a GPU moderngl's own call is kept: two ctypes calls could each wait for
    the GIL once let go). moderngl binds the program it uses before each call of its own and sets
    uniforms without binding, so nothing it tracks changes."""
    ctx = cs.ctx
    in_call = _IN_CALL.get(id(ctx))
    if in_call is None:
        in_call = _IN_CALL[id(ctx)] = works_in_the_call(str(ctx.info.get("GL_RENDERER", "")))
    gl = native_gl() if in_call else None
    if gl is None:
        cs.run(x, y, z)
        return
    gl.glUseProgram(cs.glo)
    gl.glDispatchCompute(x, y, z)
