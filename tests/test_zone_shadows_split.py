"""The zone view's sun shadows and split screen (the passes the procedural meadow shares).

Small offscreen frames of a synthetic tile on whatever EGL gives (llvmpipe on CI).
"""

from __future__ import annotations

import numpy as np
import pytest

from wowgrass.grass.bundle import pack_instances
from wowgrass.render.world.synthetic import SyntheticSource, tile_origin

pytestmark = pytest.mark.gl

COL, ROW = 32, 32
X0, Y0 = tile_origin(COL, ROW)
CX, CY = X0 - 266.0, Y0 - 266.0  # the tile's centre
# the sun these views were framed for: north-east, in front of a camera looking north, so the grass's
# shadows fall towards it (the zone view's default sun moved to the south-west in issue 25)
SUN = tuple(np.array([0.45, -0.35, 0.82]) / np.linalg.norm([0.45, -0.35, 0.82]))


def zone_viewer(ctx, eye, target, *, size=(192, 108), sway=True, **toggles):
    from wowgrass.render.camera import Camera
    from wowgrass.render.constants import GrassSettings
    from wowgrass.render.gl.context import create_offscreen_target
    from wowgrass.render.gl.programs import make_programs
    from wowgrass.render.world.streaming import Scene
    from wowgrass.render.viewer import Light, Toggles, Viewer

    tg = create_offscreen_target(size, samples=0, ctx=ctx)
    rng = np.random.default_rng(3)
    xy = np.column_stack([CX + rng.uniform(-4, 4, 60), CY + rng.uniform(-4, 4, 60)])
    inst = pack_instances(np.column_stack([xy, np.zeros(len(xy))]), 0.0, 4.0)  # clumps 2.4 units tall
    src = SyntheticSource(tiles=[(COL, ROW)], instances={(COL, ROW): {"synthetic\\grass0.m2": inst}}, relief=0.0)
    sc = Scene(ctx, make_programs(ctx), src, threaded=False, grass_settings=GrassSettings(enabled=sway))
    sc.update(eye, block=True)
    cam = Camera.looking_at(eye, target)
    tog = Toggles(**{"doodads": False, **toggles})
    return Viewer(tg, sc, cam, tog, time_query=False, light=Light(sun_dir=SUN, shadow_reach=20.0, shadow_size=1024))


def shadow_depths(v, times):
    out = []
    for t in times:
        v.render_frame(t)
        out.append(v.shadow_map.read_depth().copy())
    return out


def test_zone_grass_shadow_moves_with_the_grass(ctx):
    """The grass's shadow-pass variant sways with the same sway.glsl as its colour pass: the
    shadow map differs between two times where the grass is; with the sway off it does not."""
    eye, target = (CX - 12.0, CY, 4.0), (CX, CY, 0.0)
    times = (0.0, 0.9)  # wind phases ~1.5 rad apart
    v = zone_viewer(ctx, eye, target)
    try:
        swaying = shadow_depths(v, times)
        v.toggles.grass = False
        v.render_frame(0.0)
        ground = v.shadow_map.read_depth().copy()
    finally:
        v.scene.release()
        v.release()
    v = zone_viewer(ctx, eye, target, sway=False)
    try:
        still = shadow_depths(v, times)
    finally:
        v.scene.release()
        v.release()
    grass = [d < ground - 1e-5 for d in swaying]
    assert grass[0].sum() > 500  # the clumps are in the map
    moved = (grass[0] != grass[1]).sum()
    assert moved > 0.05 * grass[0].sum()
    assert np.array_equal(still[0], still[1])  # no sway: the same shadow at both times


def test_zone_shadows_darken_the_ground_under_the_grass(ctx):
    eye, target = (CX - 10.0, CY, 6.0), (CX, CY, 0.0)
    imgs = {}
    for on in (True, False):
        v = zone_viewer(ctx, eye, target, terrain=True, shadows=on)
        try:
            v.toggles.grass = False
            v.render_frame(0.0)
            bare = v.read_rgba()[..., :3].astype(int)
            v.toggles.grass = True
            v.render_frame(0.0)
            imgs[on] = (bare, v.read_rgba()[..., :3].astype(int))
        finally:
            v.scene.release()
            v.release()
    # ground pixels (no grass drawn on them: the same with and without grass, shadows off) that
    # the grass's shadow darkens
    bare, no_shadow = imgs[False]
    ground = np.abs(no_shadow - bare).sum(axis=-1) == 0
    shadowed = imgs[True][1]
    darker = (no_shadow.sum(axis=-1) - shadowed.sum(axis=-1) > 15) & ground
    assert darker.sum() > 30


def test_zone_split_view_halves_and_lines(ctx):
    from wowgrass.render.passes import LINES_BACKGROUND

    w, h = 192, 108
    v = zone_viewer(ctx, (CX - 15.0, CY, 2.0), (CX, CY, 0.5), size=(w, h), terrain=True, split=True, stats=True)
    try:
        v.render_frame(0.0)
        v.render_frame(0.0)  # the overlay's stats line shows the frame before
        img = v.read_rgba()[..., :3].astype(float)
        views = list(v.views)
    finally:
        v.scene.release()
        v.release()
    assert [x.fill for x in views] == ["filled", "lines"]
    for x in views:
        p = x.camera.proj()
        assert p[1, 1] / p[0, 0] == pytest.approx((w / 2) / h)
    rows = slice(h // 2, h - 16)  # below the horizon, above the stats line
    bg = np.array(LINES_BACKGROUND) * 255
    is_bg = np.abs(img - bg).sum(axis=-1) < 12
    assert is_bg[rows, : w // 2].mean() == 0.0  # filled: the ground covers the left half
    assert is_bg[rows, w // 2:].mean() > 0.3  # lines only: the background shows between them
    assert (~is_bg[rows, w // 2:]).mean() > 0.02  # and there are lines


def test_frames_leave_no_gl_error(ctx):
    """Every source in every pass variant (shadow, colour, wireframe) draws without a GL error: a
    variant that reads fewer attributes gets its vertex arrays with padding (programs.read_by),
    where moderngl's skip_errors left GL_INVALID_VALUE behind."""
    ctx.error  # noqa: B018 - reading it clears what earlier tests left
    v = zone_viewer(ctx, (CX - 15.0, CY, 2.0), (CX, CY, 0.5), terrain=True, doodads=True, split=True,
                    shadows=True, stats=True)
    try:
        for t in (0.0, 0.5):
            v.render_frame(t)
        v.read_rgba()
        assert ctx.error == "GL_NO_ERROR"
    finally:
        v.scene.release()
        v.release()
