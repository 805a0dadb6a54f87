"""The GPU frame timer: fences bound the frames in flight, queries are read without blocking."""

from __future__ import annotations

import numpy as np
import pytest

from wowgrass.render.gl.timer import GpuTimer, sync_gl


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
    if fences is None and sync_gl() is None:
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
    if sync_gl() is None:
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
