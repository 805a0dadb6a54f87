"""Doodads: one instanced draw per model over every resident tile's instances."""

import numpy as np
import pytest

pytestmark = pytest.mark.gl


def translations(xy, z=0.0):
    m = np.tile(np.eye(4, dtype=np.float32), (len(xy), 1, 1))
    m[:, :2, 3] = xy
    m[:, 2, 3] = z
    return np.ascontiguousarray(m.transpose(0, 2, 1)).reshape(-1, 16)  # column-major, as mddf_matrices


def frame_of(ctx, doodads, target):
    from wowgrass.render.camera import Camera
    from wowgrass.render.frame import Frame, FrameUniforms, draw_frame
    from wowgrass.render.passes import ColourPass
    from wowgrass.render.views import View

    cam = Camera.looking_at((0.0, -30.0, 20.0), (0.0, 0.0, 0.0))
    uniforms = FrameUniforms(ctx)
    fr = Frame(views=[View(cam, (0, 0, *target.size))], fog=(1000.0, 2000.0))
    counts = draw_frame(fr, [ColourPass(target)], [doodads], uniforms)
    uniforms.release()
    return counts, target.read_rgba()[..., :3].astype(int)


def test_draws_per_model_not_per_tile_and_follow_residency(ctx):
    from wowgrass.render.gl.context import create_offscreen_target
    from wowgrass.render.sources.doodads import DoodadSet
    from wowgrass.render.gl.meshes import GpuMesh, crossed_quads
    from wowgrass.render.gl.programs import make_programs
    from wowgrass.render.gl.readback import read_buffer

    target = create_offscreen_target((96, 64), samples=0, ctx=ctx)
    meshes = [GpuMesh(ctx, crossed_quads(width=3.0, height=4.0)), GpuMesh(ctx, crossed_quads(width=2.0, height=2.0))]
    ds = DoodadSet(ctx, make_programs(ctx))
    rng = np.random.default_rng(5)
    per_tile = {}
    for t in range(6):  # six tiles, both models in each
        for k, mesh in enumerate(meshes):
            mats = translations(rng.uniform(-12, 12, (5 + k, 2)))
            per_tile[(t, k)] = mats
            ds.add(mesh, mats, tile=(t, 0))
    counts, img_all = frame_of(ctx, ds, target)
    assert counts.draw_calls == 2  # one per model, six tiles resident
    assert counts.instances == sum(len(m) for m in per_tile.values())
    extra = translations(rng.uniform(-12, 12, (4, 2)))  # a tile arriving: appended to the buffer
    ds.add(meshes[0], extra, tile=(9, 0))
    counts, _ = frame_of(ctx, ds, target)
    m0 = ds.models[id(meshes[0])]
    got = np.frombuffer(read_buffer(ctx, m0.buffer, m0.count * 64), np.float32).reshape(-1, 16)
    want = np.concatenate([per_tile[(t, 0)] for t in range(6)] + [extra])
    assert sorted(map(bytes, got)) == sorted(map(bytes, want)) and counts.draw_calls == 2
    ds.remove_tile((9, 0))
    for t in (0, 3, 5):
        ds.remove_tile((t, 0))
    counts, _ = frame_of(ctx, ds, target)
    assert counts.draw_calls == 2
    for k, mesh in enumerate(meshes):  # the model's buffer holds the remaining tiles' matrices
        m = ds.models[id(mesh)]
        got = np.frombuffer(read_buffer(ctx, m.buffer, m.count * 64), np.float32).reshape(-1, 16)
        want = np.concatenate([per_tile[(t, k)] for t in (1, 2, 4)])
        assert sorted(map(bytes, got)) == sorted(map(bytes, want))
    for t in (1, 2, 4):
        ds.remove_tile((t, 0))
    counts, img_none = frame_of(ctx, ds, target)
    assert counts.draw_calls == 0 and not ds.models  # a model no tile has is released
    assert (np.abs(img_all - img_none).sum(axis=-1) > 30).mean() > 0.01  # the doodads were drawn
    ds.add(meshes[0], per_tile[(0, 0)], tile=(0, 0))  # back again: drawn the same as before
    counts, _ = frame_of(ctx, ds, target)
    assert counts.draw_calls == 1 and counts.instances == len(per_tile[(0, 0)])
    ds.release()
    for m in meshes:
        m.release()
    target.release()
