"""Offscreen contexts: releasing one leaves the others usable."""

import pytest

pytestmark = [pytest.mark.gl, pytest.mark.usefixtures("egl")]


def test_releasing_a_second_context_leaves_the_first_one_working():
    """EGL leaves no context current after a release: the first target's clears and buffer reads
    went nowhere (a view run in the same process after a library user's own target)."""
    from wowgrass.render.gl.context import create_offscreen_target

    a = create_offscreen_target((8, 8), samples=0)
    try:
        buf = a.ctx.buffer(b"\x01" * 16)
        a.fbo.use()
        a.fbo.clear(1.0, 0.0, 0.0, 1.0)
        assert a.read_rgba()[0, 0].tolist() == [255, 0, 0, 255]
        for _ in range(2):  # a second target made and released, twice
            b = create_offscreen_target((8, 8), samples=0)
            b.fbo.use()
            b.fbo.clear(0.0, 0.0, 1.0, 1.0)
            assert b.read_rgba()[0, 0].tolist() == [0, 0, 255, 255]
            b.release()
        a.fbo.use()
        a.fbo.clear(0.0, 1.0, 0.0, 1.0)
        assert a.read_rgba()[0, 0].tolist() == [0, 255, 0, 255]
        buf.write(b"\x02" * 16)
        assert buf.read() == b"\x02" * 16
        buf.release()
    finally:
        a.release()
