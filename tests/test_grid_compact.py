"""The camera grid's compaction pass (render/grid.py's compact draw mode) against the reference's
literal path (the full draw): the same blades, read back by transform feedback, on the sample world."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytestmark = pytest.mark.gl

from test_grid_render import camera, keyed, make_grid  # noqa: E402

from wowgrass.render.world.synthetic import tile_origin  # noqa: E402

SIZE = (256, 144)


@pytest.fixture(scope="module")
def sample_grid(ctx):
    if ctx.version_code < 430:
        pytest.skip("no OpenGL 4.3 here: no compute compaction")
    from wowgrass.game.data import open_data
    from wowgrass.render.world.game_tiles import GameSource
    from wowgrass.samples import MAP_NAME, sample_data_path

    with open_data(sample_data_path()) as data:
        src = GameSource(data, MAP_NAME, grass_path="grid")
        payloads = {key: src.load_tile(*key) for key in src.tiles}
    grid = make_grid(ctx, [(key, p["grid"]) for key, p in payloads.items()], rings=True)
    assert grid.draw_mode == "compact"
    yield grid, sorted(payloads)
    grid.release()


def looking(x, y, z, yaw_deg, pitch_deg=-20.0):
    cam = camera(x, y, z)
    cam.yaw, cam.pitch = math.radians(yaw_deg), math.radians(pitch_deg)
    cam.aspect = SIZE[0] / SIZE[1]
    return cam


def outside_by(view, roots, mesh):
    """How far (world units) each blade's frustum-test sphere lies outside the view's frustum
    (> 0: outside; the compaction pass's test, grass_grid_cull.glsl)."""
    from wowgrass.render.sources.grass_grid import GRID_DEFINES

    planes = view.planes()
    c = roots + np.array([0.0, 0.0, mesh.bound_z])
    r = mesh.bound_radius + GRID_DEFINES["GRID_WIND_REACH"]
    return (-(c @ planes[:, :3].T + planes[:, 3]) - r).max(axis=1)


def test_compact_draws_the_full_paths_blades_in_the_frustum(sample_grid):
    from wowgrass.render.views import View

    grid, keys = sample_grid
    x0, y0 = tile_origin(*keys[-1])  # the corner the sample world's four tiles share
    cams = {"tile corner": looking(x0 + 0.4, y0 - 0.3, 40.0, 35.0),
            "inside a tile": looking(x0 + 180.0, y0 + 140.0, 60.0, 200.0, -35.0)}
    for name, cam in cams.items():
        view = View(cam, (0, 0, *SIZE))
        n_full = n_compact = 0
        for m in grid.models:
            mesh = grid.meshes[grid._index[m]]
            full = grid.capture(cam, 0.7, m, vertex="tip", mode="full")
            compact = grid.capture(cam, 0.7, m, vertex="tip", mode="compact", size=SIZE)
            kf, kc = keyed(full), keyed(compact)
            assert len(kc) == len(compact["cell"]), f"{name} {m}: a blade appended twice"
            # every compacted blade is one of the full path's, at the same root, its tip in the same place
            assert set(kc) <= set(kf), f"{name} {m}: {len(set(kc) - set(kf))} blades the full path does not draw"
            tips_f = {k: t for k, t in zip(keyed(full), full["vertex"])}
            for k, t in zip(kc, compact["vertex"]):
                np.testing.assert_allclose(kc[k], kf[k], atol=1e-4)
                np.testing.assert_allclose(t, tips_f[k], atol=1e-4)
            # the full path's blades missing from the compacted list are exactly those outside the frustum
            out = outside_by(view, np.array(full["root"]), mesh)
            in_compact = np.array([k in kc for k in kf])
            clear = np.abs(out) > 1e-3  # float32 against float64 on the plane itself
            assert (in_compact[clear] == (out[clear] < 0)).all(), f"{name} {m}: the frustum test disagrees"
            n_full, n_compact = n_full + len(kf), n_compact + len(kc)
        # the camera sees part of the grid: the frustum test has something to keep and to drop
        assert 0 < n_compact < n_full / 2, (name, n_compact, n_full)


def test_each_view_gets_its_own_commands_and_blades(sample_grid, ctx):
    """Two views of different cameras in one frame (split screen, one in lines): each view's
    counts are what a compaction for its camera alone keeps."""
    from wowgrass.render.frame import Frame, FrameUniforms
    from wowgrass.render.views import View

    grid, keys = sample_grid
    x0, y0 = tile_origin(*keys[-1])
    a, b = looking(x0 + 20.0, y0 - 10.0, 40.0, 10.0), looking(x0 - 90.0, y0 + 60.0, 50.0, 250.0)
    views = [View(a, (0, 0, *SIZE)), View(b, (0, 0, *SIZE), "lines")]
    uniforms = FrameUniforms(ctx)
    frame = Frame(time=0.0, views=views, wind=grid.settings)
    frame.uniforms = uniforms
    uniforms.write(frame)
    grid.prepare(frame)
    both = [grid.read_counts(v) for v in views]
    alone = [{m: len(grid.capture(cam, 0.0, m, mode="compact", size=SIZE)["cell"]) for m in grid.models}
             for cam in (a, b)]
    for got, want in zip(both, alone):
        assert {m: n for m, n in got.items() if n} == {m: n for m, n in want.items() if n}
    assert both[0] != both[1] and sum(both[0].values()) > 0 and sum(both[1].values()) > 0
    uniforms.release()


def test_frames_in_turn_count_afresh_with_one_dispatch_for_every_view(sample_grid, ctx):
    """Frames use the two command sets in turn (each dispatch zeroes the other): frame after frame
    of the same two views, the counts are the same, never an earlier frame's added on; and the
    frame is one dispatch whatever the number of views."""
    from wowgrass.render.gl import native

    from wowgrass.render.frame import Frame, FrameUniforms
    from wowgrass.render.views import View

    grid, keys = sample_grid
    x0, y0 = tile_origin(*keys[-1])
    a, b = looking(x0 + 20.0, y0 - 10.0, 40.0, 10.0), looking(x0 - 90.0, y0 + 60.0, 50.0, 250.0)
    views = [View(a, (0, 0, *SIZE)), View(b, (0, 0, *SIZE), "lines")]
    uniforms = FrameUniforms(ctx)
    runs = []
    real = native.run_compute
    native.run_compute = lambda cs, *args: runs.append(args) or real(cs, *args)
    try:
        seen = []
        for t in range(5):
            frame = Frame(time=0.1 * t, views=views, wind=grid.settings)
            frame.uniforms = uniforms
            uniforms.write(frame)
            grid.prepare(frame)
            seen.append([grid.read_counts(v) for v in views])
    finally:
        native.run_compute = real
    assert all(s == seen[0] for s in seen) and sum(seen[0][0].values()) > 0
    assert len(runs) == 5 and all(r[2] == 2 for r in runs)  # one dispatch a frame, z = the two views
    uniforms.release()


def test_view_split_screen_with_shadows_looks_the_same_compact_and_full(tmp_path, monkeypatch, ctx):
    """`view --grass grid` with the sun's shadow pass and a split screen (a filled and a lines view):
    the compact and the full draw give the same frame."""
    import json

    from click.testing import CliRunner
    from PIL import Image

    from wowgrass.cli.main import cli
    from wowgrass.samples import sample_data_path

    if ctx.version_code < 430:
        pytest.skip("no OpenGL 4.3 here: no compute compaction")
    monkeypatch.setenv("WOWGRASS_CACHE", str(tmp_path / "cache"))
    frames = {}
    for mode in ("compact", "full"):
        out = tmp_path / f"{mode}.png"
        r = CliRunner().invoke(cli, ["view", "--data", str(sample_data_path()), "--size", "240x120", "--samples", "0",
                                     "--camera", "120,80,68", "--target", "150,120,62", "--split", "--grass", "grid",
                                     "--grid-draw", mode, "--json", "-o", str(out)])
        assert r.exit_code == 0, r.output
        res = json.loads(r.stdout)
        assert res["grid_draw"] == mode and res["shadows"] and res["split"]
        frames[mode] = np.asarray(Image.open(out).convert("RGB")).astype(int)
    assert res["frame"]["grass_instance_count"] > 0
    # above the statistics line (its CPU and GPU times differ); only blades drawn in another order may differ
    differ = np.abs(frames["compact"][:95] - frames["full"][:95]).max(axis=2) > 40
    assert differ.mean() < 0.002, differ.mean()
    green = (frames["compact"][..., 1] > frames["compact"][..., 0] + 10)
    assert green[:, :120].mean() > 0.2  # the filled half shows grass


def test_without_compute_the_grid_falls_back_to_the_full_draw(ctx):
    """GL < 4.3 (no compute shaders): GridGrass draws the reference's literal path."""
    from test_grid_render import synthetic

    from wowgrass.grass.grid_tiles import build_grid_tile
    from wowgrass.render.sources.grass_grid import GridGrass
    from wowgrass.render.gl.programs import make_programs

    class Gl41:  # the context as a GL 4.1 driver shows it
        version_code = 410

        def __getattr__(self, name):
            return getattr(ctx, name)

    adt, grass = synthetic(32, 32, n=3000, models=1)
    tile = build_grid_tile(adt, grass)
    grid = make_grid(Gl41(), [((32, 32), tile)])
    assert grid.draw_mode == "full"
    x0, y0 = tile_origin(32, 32)
    cam = camera(x0 - 100.0, y0 - 100.0)
    assert len(grid.capture(cam, 0.0, tile.models[0])["cell"]) > 0
    with pytest.raises(ValueError, match="compact capture"):
        grid.capture(cam, 0.0, tile.models[0], mode="compact")
    grid.release()
    with pytest.raises(ValueError, match="draw_mode"):
        GridGrass(ctx, make_programs(ctx, grass_path="grid"), draw_mode="instanced")
