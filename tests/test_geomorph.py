"""shaders/geomorph.glsl (shared by the ADT terrain and the procedural meadow) against numpy."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gl


@pytest.fixture(scope="module")
def ctx(ctx):
    fbo = ctx.simple_framebuffer((4, 4))  # surfaceless EGL has no default framebuffer, even for feedback
    fbo.use()
    yield ctx
    fbo.release()


def _run(ctx, body: str, inputs: np.ndarray, fmt: str, names: tuple, n_out: int) -> np.ndarray:
    """Evaluate ``body`` (writes ``out_v``, a vec4) per input row through transform feedback."""
    from wowgrass.render.gl.programs import preprocess_source

    decl = "\n".join(f"in {t} {n};" for t, n in zip(fmt.split(), names))
    src = f'#version 330 core\n#include "geomorph.glsl"\n{decl}\nout vec4 out_v;\nvoid main() {{ {body} }}\n'
    prog = ctx.program(vertex_shader=preprocess_source(src, "VERTEX_SHADER"), varyings=["out_v"])
    vin = ctx.buffer(np.ascontiguousarray(inputs, "f4").tobytes())
    out = ctx.buffer(reserve=len(inputs) * 16)
    vao = ctx.vertex_array(prog, [(vin, " ".join(f"{t[-1]}f" if t != "float" else "1f" for t in fmt.split()), *names)])
    vao.transform(out, vertices=len(inputs))
    got = np.frombuffer(out.read(), "f4").reshape(-1, 4)[:, :n_out].copy()
    for o in (vao, vin, out, prog):
        o.release()
    return got


def test_morph_factor_is_zero_until_the_last_fifth_of_the_band_then_ramps_to_one(ctx):
    d = np.linspace(0.0, 400.0, 801)
    rows = np.column_stack([d, np.full_like(d, 100.0), np.full_like(d, 300.0)])
    got = _run(ctx, "out_v = vec4(morph_factor(in_d, in_s, in_e));", rows, "float float float",
               ("in_d", "in_s", "in_e"), 1)[:, 0]
    want = np.clip((d - 260.0) / 40.0, 0.0, 1.0)  # morph over the last 20% (260..300)
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert np.all(got[d <= 260.0] == 0.0) and np.all(got[d >= 300.0] == 1.0)


def test_morph_grid_slides_odd_vertices_onto_the_coarser_grid(ctx):
    step = 33.3333 / 8.0  # an ADT unit: not a power of two, the snap must still be exact
    idx = np.stack(np.meshgrid(np.arange(-4, 9), np.arange(-4, 9)), -1).reshape(-1, 2).astype(np.float64)
    for k in (0.0, 0.35, 1.0):
        rows = np.column_stack([idx * np.float32(step), np.full(len(idx), k)])
        got = _run(ctx, "out_v = vec4(morph_grid(in_p, in_step, in_k), 0.0, 0.0);",
                   np.column_stack([rows[:, :2], np.full(len(idx), step), rows[:, 2]]),
                   "vec2 float float", ("in_p", "in_step", "in_k"), 2)
        odd = np.mod(idx, 2)
        np.testing.assert_allclose(got, (idx - odd * k) * step, atol=1e-3)
        if k == 1.0:  # collapsed exactly onto the even neighbour's position: bit for bit
            assert np.array_equal(got, (idx - odd).astype(np.float32) * np.float32(step))
        if k == 0.0:
            assert np.array_equal(got, (idx * np.float32(step)).astype(np.float32))
