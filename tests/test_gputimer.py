"""The GPU frame timer: fences bound the frames in flight, queries are read without blocking."""

from __future__ import annotations

import numpy as np
import pytest

from wowgrass.render.gl.native import native_gl
from wowgrass.render.gl.timer import GpuTimer


def _busy_frame(ctx, fbo, n=40):
    fbo.use()
    for _ in range(n):
        fbo.clear(0.2, 0.3, 0.4, 1.0)


@pytest.fixture(scope="module")
def fbo(ctx):
    f = ctx.simple_framebuffer((256, 256))
    yield f
    f.release()


@pytest.mark.parametrize("fences", [None, False])
def test_every_frame_timed_once_in_order(ctx, fbo, fences):
    if fences is None and native_gl() is None:
        pytest.skip("no system GL library with glFenceSync here")
    t = GpuTimer(ctx, lag=2, fences=fences)
    assert t.uses_fences == (fences is None)
    got = []
    for i in range(12):
        assert t.begin() == i
        _busy_frame(ctx, fbo)
        got += t.end()
        assert len(t._pending) <= 2  # never more than ``lag`` frames in flight
    got += t.drain()
    frames = [f for f, _ in got]
    assert frames == list(range(12))
    ms = np.array([m for _, m in got])
    assert np.all(np.isfinite(ms)) and np.all(ms > 0)
    t.release()


def test_fence_reads_do_not_wait_for_unfinished_frames(ctx, fbo):
    """With fences, ``end`` reports a frame as soon as it finished, not ``lag`` frames later:
    after a finish every pending frame is done and comes back from the next ``end``."""
    if native_gl() is None:
        pytest.skip("no system GL library with glFenceSync here")
    t = GpuTimer(ctx, lag=8)
    t.begin()
    _busy_frame(ctx, fbo)
    done = t.end()
    ctx.finish()
    t.begin()
    _busy_frame(ctx, fbo, 1)
    done += t.end()
    assert 0 in [f for f, _ in done]
    t.release()


def test_run_compute_dispatches_through_the_system_library(ctx):
    """A compute dispatch through ctypes (the GIL let go while the driver works: llvmpipe runs it in
    the call) writes what moderngl's own dispatch writes, and never calls moderngl's."""
    import moderngl

    from wowgrass.render.gl import native

    if native_gl() is None:
        pytest.skip("no system GL library with the entry points (moderngl's dispatch is used)")
    if ctx.version_code < 430:
        pytest.skip("no OpenGL 4.3 here: no compute shaders")
    if not native.works_in_the_call(ctx.info["GL_RENDERER"]):
        pytest.skip("a GPU driver: moderngl's own dispatch is kept")
    cs = ctx.compute_shader("""#version 430
layout(local_size_x = 8) in;
layout(std430, binding = 0) buffer Out { uint v[]; };
uniform uint uAdd;
void main() { uint i = gl_GlobalInvocationID.x + 64u * gl_GlobalInvocationID.y;
              v[i] = i * 3u + uAdd + gl_GlobalInvocationID.z; }""")
    other = ctx.compute_shader("""#version 430
layout(local_size_x = 1) in;
void main() {}""")
    buf = ctx.buffer(reserve=64 * 4 * 4)
    buf.bind_to_storage_buffer(0)
    cs["uAdd"].value = 7
    real = moderngl.ComputeShader.run

    def refused(self, *a):
        raise AssertionError("moderngl's dispatch was called")
    moderngl.ComputeShader.run = refused
    try:
        native.native_gl().glUseProgram(other.glo)  # another program bound last: the right one still runs
        native.run_compute(cs, 8, 4, 1)
    finally:
        moderngl.ComputeShader.run = real
    ctx.finish()
    got = np.frombuffer(buf.read(), np.uint32)[:256]
    assert np.array_equal(got, np.arange(256, dtype=np.uint32) * 3 + 7)
    buf.release(), cs.release(), other.release()


def test_only_software_drivers_dispatch_through_ctypes():
    from wowgrass.render.gl.native import works_in_the_call

    assert works_in_the_call("llvmpipe (LLVM 15.0.6, 256 bits)") and works_in_the_call("softpipe")
    assert not works_in_the_call("NVIDIA H100 80GB HBM3/PCIe/SSE2")
    assert not works_in_the_call("AMD Radeon RX 7900 XTX (radeonsi, navi31, LLVM 17.0.6, DRM 3.57)")
