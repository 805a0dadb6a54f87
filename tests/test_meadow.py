"""The procedural meadow (view --procedural): meshes, placement, wind, shadows, geomorphing, split view.

GL tests render small frames on whatever EGL gives (llvmpipe on CI) with a small meadow.
"""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

from conftest import require_tool
from wowgrass.render.sources.blades import INSTANCE_FLOATS, BladeRing, BladeSettings, blade_tip, place_blades
from wowgrass.render.sources.heightfield import Heightfield, TerrainSettings, cell_hash, fbm_heightmap, wang_hash
from wowgrass.render.gl.meshes import blade_strip, line_indices, plane_grid

DEBUG_PNG = os.environ.get("WOWGRASS_TEST_PNG")  # folder to keep test frames in
SKY = np.array([0.62, 0.74, 0.86]) * 255


def small_settings(**kw):
    from wowgrass.render.sources.meadow import MeadowSettings

    s = MeadowSettings(
        terrain=TerrainSettings(samples=257, world_size=256.0, amplitude=10.0, base_wavelength=80.0),
        tile_size=16.0, lod_cells=(16, 8, 4, 2), lod_band_ends=(32.0, 64.0, 128.0),
        blades=BladeSettings(spacing=0.5, rings=(BladeRing(6.0, 1.0, 5), BladeRing(15.0, 0.5, 3),
                                                BladeRing(30.0, 0.25, 1))),
        shadow_size=512, shadow_reach=25.0)
    for k, v in kw.items():
        setattr(s, k, v)
    return s


def edges_of(tris):
    t = np.asarray(tris).reshape(-1, 3)
    e = {tuple(sorted(p)) for tri in t for p in ((tri[0], tri[1]), (tri[1], tri[2]), (tri[2], tri[0]))}
    return {x for x in e if x[0] != x[1]}


# -- meshes and placement (no GL) --

@pytest.mark.parametrize("n", [1, 2, 4, 7])
def test_blade_strip_counts_and_height_t(n):
    verts, tris = blade_strip(n)
    assert verts.shape == (2 * (n + 1), 3)
    assert len(tris) == 3 * 2 * n
    t = verts[:, 2]
    assert t.min() == 0.0 and t.max() == 1.0
    assert np.all(verts[:, 1] == t)  # height follows height_t
    assert np.all(np.diff(t[::2]) > 0)  # rows rise from the root to the tip
    width = np.abs(verts[1::2, 0] - verts[0::2, 0])
    assert np.all(np.diff(width) < 0)  # tapered toward the tip
    assert set(tris.tolist()) == set(range(len(verts)))


@pytest.mark.parametrize("mesh", ["blade1", "blade6", "plane1", "plane4", "plane16"])
def test_line_index_buffer_is_exactly_the_triangle_edges(mesh):
    tris = blade_strip(int(mesh[5:]))[1] if mesh.startswith("blade") else plane_grid(int(mesh[5:]), 16.0)[1]
    lines = line_indices(tris).reshape(-1, 2)
    pairs = [tuple(sorted(p)) for p in lines.tolist()]
    assert len(pairs) == len(set(pairs))  # each edge once
    assert set(pairs) == edges_of(tris)


def morph_grid(grid_pos, fine_step, k):
    """numpy twin of geomorph.glsl's morph_grid (the test's reference)."""
    odd = np.mod(np.round(grid_pos / fine_step), 2.0)
    return grid_pos - odd * (fine_step * k)


@pytest.mark.parametrize("cells", [2, 4, 16])
def test_fully_morphed_plane_lays_the_coarser_planes_triangles(cells):
    size = 16.0
    pos, tris = plane_grid(cells, size)
    cpos, ctris = plane_grid(cells // 2, size)
    moved = morph_grid(pos.astype(np.float64), size / cells, 1.0)
    key = {tuple(p): i for i, p in enumerate(np.round(cpos, 6).tolist())}
    as_coarse = np.array([key[tuple(p)] for p in np.round(moved, 6).tolist()])
    fine = {tuple(sorted(t)) for t in as_coarse[tris.reshape(-1, 3)].tolist() if len(set(t)) == 3}
    coarse = {tuple(sorted(t)) for t in ctris.reshape(-1, 3).tolist()}
    assert fine == coarse


def test_wang_hash_known_values_and_placement_is_deterministic():
    # Thomas Wang's 32-bit hash (61 xor, >>16, *9, >>4, *0x27d4eb2d, >>15)
    def ref(s):
        s = ((s ^ 61) ^ (s >> 16)) & 0xFFFFFFFF
        s = (s * 9) & 0xFFFFFFFF
        s = s ^ (s >> 4)
        s = (s * 0x27D4EB2D) & 0xFFFFFFFF
        return s ^ (s >> 15)
    xs = np.array([0, 1, 2, 12345, 0xFFFFFFFF], np.uint32)
    assert wang_hash(xs).tolist() == [ref(int(x)) for x in xs]
    assert not np.array_equal(cell_hash(np.arange(5), 0, 1), cell_hash(np.arange(5), 0, 2))
    ts = TerrainSettings(samples=65, world_size=64.0)
    assert np.array_equal(fbm_heightmap(ts, 3), fbm_heightmap(ts, 3))
    assert not np.array_equal(fbm_heightmap(ts, 3), fbm_heightmap(ts, 4))
    f = Heightfield(fbm_heightmap(ts, 3), 64.0)
    b = BladeSettings(spacing=0.5, rings=(BladeRing(8.0, 1.0, 3), BladeRing(16.0, 0.4, 1)))
    a1 = place_blades(f, b, 7, (32.0, 32.0, 5.0))
    a2 = place_blades(f, b, 7, (32.0, 32.0, 5.0))
    assert all(np.array_equal(x, y) for x, y in zip(a1, a2))
    d = [np.hypot(r[:, 0] - 32, r[:, 1] - 32) for r in a1]
    assert d[0].max() < 8.0 and d[1].min() >= 8.0 and d[1].max() < 16.0
    # ring density: the outer ring keeps ~40% of its cells' blades (area 3x the inner ring's)
    assert 0.25 < len(a1[1]) / (3 * len(a1[0])) < 0.55
    assert np.allclose(a1[0][:, 2], f.sample(a1[0][:, 0], a1[0][:, 1]))  # on the heightmap


def test_steep_slopes_grow_no_blades():
    n = 65
    h = np.zeros((n, n), np.float32)
    h[:, 32:] = (np.arange(n - 32, dtype=np.float32) * 2.0)[None, :]  # x >= 32: a 63 degree slope
    f = Heightfield(h, 64.0)
    b = BladeSettings(spacing=0.5, rings=(BladeRing(20.0, 1.0, 3),), max_slope_deg=35.0)
    inst = place_blades(f, b, 1, (32.0, 32.0, 2.0))[0]
    assert len(inst) > 500
    assert inst[:, 0].max() < 33.0  # nothing on the slope (normals one texel either side of its edge)
    assert inst[:, 0].max() > 30.0


# -- GL --

@pytest.fixture(scope="module")
def ctx(ctx):
    if ctx.version_code < 430:
        pytest.skip("the meadow needs OpenGL 4.3")
    return ctx


@pytest.fixture(scope="module")
def cache():
    return {}


def make_viewer(ctx, cache, *, size=(256, 144), settings=None, eye=(128.0, 128.0), target=None,
                height=None, fixed_blades=None, heightfield=None, cpu=False, **toggles):
    from wowgrass.render.camera import Camera
    from wowgrass.render.gl.context import create_offscreen_target
    from wowgrass.render.sources.meadow import Meadow
    from wowgrass.render.app import meadow_viewer
    from wowgrass.render.viewer import Toggles

    m = Meadow(ctx, settings or small_settings(), 5, cpu_instances=cpu, fixed_blades=fixed_blades,
               heightfield=heightfield, program_cache=cache)
    if len(eye) == 2:
        eye = (*eye, m.ground_height(*eye) + (height or 1.7))
    cam = Camera(position=np.array(eye, np.float64))
    if target is not None:
        cam.look_at(target)
    tg = create_offscreen_target(size, samples=0, ctx=ctx)
    tog = Toggles(**{"stats": False, **toggles})
    return meadow_viewer(tg, m, cam, tog, time_query=False)


def release(v):
    v.release()
    v.scene.release()
    v.target.release()


def frame(v, t=0.0, name=None):
    v.render_frame(t)
    img = v.read_rgba()[..., :3]
    if DEBUG_PNG and name:
        from wowgrass.render.viewer import write_png

        os.makedirs(DEBUG_PNG, exist_ok=True)
        write_png(os.path.join(DEBUG_PNG, f"meadow_{name}.png"), img)
    return img


def is_sky(img):
    return np.abs(img.astype(float) - SKY).sum(axis=-1) < 12


def test_gpu_generated_blades_are_the_cpu_placed_ones(ctx, cache):
    """The compute pass makes the blades heightfield/blades.py places (the same hash, heights,
    rings, slope and frustum tests); nothing is uploaded per frame on the GPU path."""
    v = make_viewer(ctx, cache, target=(160.0, 140.0, 0.0))
    try:
        m = v.scene
        v.render_frame(0.0)
        assert m.upload_bytes == 0
        got = m.drawn_counts()["blades_per_ring"]
        cam = v.views[0].camera
        from wowgrass.render.camera import planes_of
        from wowgrass.render.app import MEADOW_SUN

        want = place_blades(m.field, m.settings.blades, m.seed, cam.position, planes_of(cam.view_proj()),
                            m.shadow_margin(MEADOW_SUN))
        assert sum(got) > 1000
        for g, w in zip(got, want):
            assert abs(g - len(w)) <= max(3, 0.002 * len(w))
        # the ring-0 blades themselves (order differs: compare sorted positions)
        raw = np.frombuffer(m.grass.instances.read(size=got[0] * INSTANCE_FLOATS * 4), np.float32)
        gpu = raw.reshape(-1, INSTANCE_FLOATS)
        a = gpu[np.lexsort((gpu[:, 1], gpu[:, 0]))]
        b = want[0][np.lexsort((want[0][:, 1], want[0][:, 0]))]
        if len(a) == len(b):
            assert np.allclose(a, b, atol=1e-3)
        # the lesson's way uploads them every frame
        v2 = make_viewer(ctx, cache, target=(160.0, 140.0, 0.0), cpu=True)
        try:
            v2.render_frame(0.0)
            assert v2.scene.upload_bytes >= sum(len(w) for w in want) * 40
            assert v2.scene.drawn_counts()["blades_per_ring"] == [len(w) for w in want]
        finally:
            release(v2)
    finally:
        release(v)


def one_blade(x, y, *, height=3.0, width=0.3, rot=0.0):
    b = np.zeros((1, INSTANCE_FLOATS), np.float32)
    b[0, :3] = (x, y, 0.0)
    b[0, 3], b[0, 4], b[0, 5] = rot, width, height
    b[0, 6:9] = (0.3, 0.6, 0.2)
    return b


def flat(n=257, size=256.0):
    return Heightfield(np.zeros((n, n), np.float32), size)


WIND = dict(wind_speed=1.0, wind_strength=0.8, wind_dir=(1.0, 0.0))
T0, T1 = 0.0, math.pi  # sin(phase) flips sign: the tip swings 2 x 0.8 x sin(phase0) apart


def blade_phase(x, y):
    return x * 0.7 + y * 0.3


def test_wind_moves_blade_tips_not_roots(ctx, cache):
    bx, by = 128.0, 128.4  # sin(phase) near +-0.9: a clear swing
    v = make_viewer(ctx, cache, size=(192, 192), settings=small_settings(**WIND), eye=(128.0, 123.5, 1.5),
                    target=(128.0, by, 1.5), fixed_blades=one_blade(bx, by), heightfield=flat(),
                    terrain=False, shadows=False)
    try:
        imgs = [frame(v, t, f"wind_t{t:.1f}") for t in (T0, T1)]
    finally:
        release(v)
    masks = [~is_sky(i) for i in imgs]
    rows = np.flatnonzero(masks[0].any(axis=1) | masks[1].any(axis=1))
    assert len(rows) > 60  # the blade spans many rows
    cols = np.arange(imgs[0].shape[1])

    def centre(mask, r):
        return (mask[r] * cols).sum() / max(mask[r].sum(), 1)

    bottom, top = rows[-4:], rows[:4]  # image rows: the root at the bottom
    root_shift = max(abs(centre(masks[0], r) - centre(masks[1], r)) for r in bottom)
    tip_shift = min(abs(centre(masks[0], r) - centre(masks[1], r)) for r in top)
    assert root_shift <= 1.0
    assert tip_shift > 15.0


def test_shadow_of_a_blade_moves_with_the_blade(ctx, cache):
    """The shadow map at two times differs where the blade is, and its tip's texel is where the
    CPU puts the bent blade's tip (the shadow pass applies the colour pass's wind)."""
    from wowgrass.render.app import MEADOW_SUN

    bx, by = 128.0, 128.4
    s = small_settings(**WIND, shadow_size=1024, shadow_reach=12.0)
    blade = one_blade(bx, by, rot=math.pi / 2)  # the blade's face across the wind
    v = make_viewer(ctx, cache, size=(128, 96), settings=s, eye=(122.0, 128.0, 2.0), target=(bx, by, 1.0),
                    fixed_blades=blade, heightfield=flat(), shadows=True)
    try:
        depth, tips = [], []
        for t in (T0, T1):
            v.render_frame(t)
            depth.append(v.shadow_map.read_depth().copy())
            tips.append(blade_tip(blade, t, s.wind_speed, s.wind_strength, s.wind_dir)[0])
        v.toggles.grass = False
        v.render_frame(T0)
        ground = v.shadow_map.read_depth().copy()
        size, matrix = v.shadow_map.size, v.shadow_map.matrix
    finally:
        release(v)
    masks = [d < ground - 1e-5 for d in depth]
    assert masks[0].sum() > 20 and masks[1].sum() > 20
    assert (masks[0] != masks[1]).sum() > 20  # the shadow moved
    for mask, d, tip in zip(masks, depth, tips):
        p = matrix @ np.r_[tip, 1.0]
        u, w = p[0] * size, p[1] * size  # texel coordinates (row = v)
        ys, xs = np.nonzero(mask)
        dist = np.hypot(xs + 0.5 - u, ys + 0.5 - w)
        i = int(np.argmin(dist))
        assert dist[i] <= 1.5, f"tip's texel {u:.1f},{w:.1f} is {dist[i]:.1f} texels from the blade's shadow"
        # the blade's depth there is the tip's (a texel's depth spread allowed)
        assert abs(float(d[ys[i], xs[i]]) - p[2]) < 0.002
    # and the two tips are far apart in the map (a shadow without wind would stay put)
    q = [matrix @ np.r_[t, 1.0] for t in tips]
    assert np.hypot(*(q[0][:2] - q[1][:2])) * size > 20
    assert MEADOW_SUN[2] > 0


def sweep(ctx, cache, name, *, geomorph=True, steps=10, x0=100.0, y=128.0, dx=0.6, height=18.0,
          yaw=20.0, pitch=-40.0, terrain=None):
    """Frames of a camera moving along +X at a fixed height above the ground (no grass, no fog:
    only the terrain's geometry changes them), and each frame's tile LODs."""
    from wowgrass.render.camera import Camera

    s = small_settings(geomorph=geomorph, **({"terrain": terrain} if terrain else {}))
    v = make_viewer(ctx, cache, settings=s, grass=False, shadows=False)
    v.fog = (2000.0, 4000.0)  # no fog: far ground keeps its colour, only a crack shows the background
    imgs, lods = [], []
    try:
        m = v.scene
        for i in range(steps):
            x = x0 + i * dx
            cam = Camera(position=np.array([x, y, m.ground_height(x, y) + height]))
            cam.yaw, cam.pitch = math.radians(yaw), math.radians(pitch)
            v.camera = cam
            imgs.append(frame(v, 0.0, f"{name}_{i}" if i in (0, steps - 1) else None).astype(np.int16))
            lods.append(tile_lods(m, cam.position))
    finally:
        release(v)
    return imgs, lods


def tile_lods(m, eye):
    """The LOD of every tile by its nearest distance to the camera (the tile pass's rule)."""
    n, ts = m.tiles_per_side, m.settings.tile_size
    lo = np.stack(np.meshgrid(np.arange(n), np.arange(n)), -1).reshape(-1, 2) * ts
    near = np.clip(np.asarray(eye[:2]), lo, lo + ts)
    d = np.hypot(*(near - eye[:2]).T)
    return np.searchsorted(np.asarray(m.settings.lod_band_ends), d, side="right")


ROUGH = TerrainSettings(samples=257, world_size=256.0, amplitude=30.0, base_wavelength=40.0, gain=0.6)


def test_no_cracks_while_sweeping_across_lod_bands(ctx, cache):
    """Looking down the view from above rough ground, every pixel is ground: a background pixel is
    a crack between tiles (of different LODs, or morphing). Without geomorphing the same sweep
    shows them (the control: the test can see a crack)."""
    imgs, lods = sweep(ctx, cache, "cracks", terrain=ROUGH, dx=1.3, steps=8)
    assert any((a != b).any() for a, b in zip(lods, lods[1:]))  # tiles changed LOD during the sweep
    assert all(len(set(l.tolist())) >= 3 for l in lods)  # several LODs on screen at once
    for i, img in enumerate(imgs):
        assert is_sky(img).sum() == 0, f"frame {i}: {is_sky(img).sum()} background pixels through the terrain"
    raw, _ = sweep(ctx, cache, "cracks_nomorph", terrain=ROUGH, dx=1.3, steps=3, geomorph=False)
    assert all(is_sky(img).sum() > 10 for img in raw)


def test_no_popping_when_tiles_cross_lod_boundaries(ctx, cache):
    """The measure: the mean absolute RGB change per pixel (summed over channels) between
    consecutive frames of a camera gliding 2 cm a frame, across the moment the tiles ahead
    (x 128..144) cross the end of LOD band 0 (32 units). The step that switches their mesh
    changes the frame no more than the steps that switch none; without geomorphing it changes
    it by more than a third more (the control: the measure sees a pop)."""
    def steps(geomorph):
        imgs, lods = sweep(ctx, cache, f"pop_morph{int(geomorph)}", geomorph=geomorph, steps=10, x0=95.91,
                           y=136.0, dx=0.02, height=10.0, yaw=0.0, pitch=-20.0)
        diffs = np.array([np.abs(a - b).sum(axis=-1).mean() for a, b in zip(imgs, imgs[1:])])
        crossing = np.array([(a != b).any() for a, b in zip(lods, lods[1:])])
        assert crossing.sum() == 1
        return diffs[crossing].max(), diffs[~crossing].max()

    pop, steady = steps(True)
    assert pop <= steady
    pop_raw, steady_raw = steps(False)
    assert pop_raw > 1.2 * steady_raw


def test_split_view_halves_aspect_lines_and_full_width_overlay(ctx, cache):
    from wowgrass.render.overlay import BAR
    from wowgrass.render.passes import LINES_BACKGROUND

    w, h = 256, 144
    v = make_viewer(ctx, cache, size=(w, h), target=(150.0, 140.0, 0.0), split=True, stats=True)
    try:
        v.render_frame(0.5)  # the stats line shows the frame before
        img = frame(v, 0.5, "split")
        views = list(v.views)
        v.toggles.split = False
        single = frame(v, 0.5, "single")
        single_views = list(v.views)
    finally:
        release(v)
    assert [x.fill for x in views] == ["filled", "lines"]
    assert views[0].rect == (0, 0, w // 2, h) and views[1].rect == (w // 2, 0, w - w // 2, h)
    for x in views:
        p = x.camera.proj()
        assert p[1, 1] / p[0, 0] == pytest.approx((w / 2) / h)
    p = single_views[0].camera.proj()
    assert p[1, 1] / p[0, 0] == pytest.approx(w / h)
    # rows between the labels and the status bar, below the horizon (lower half of the frame)
    rows = slice(h // 2, h - 20)
    left, right = img[rows, : w // 2], img[rows, w // 2:]
    wire_bg = np.array(LINES_BACKGROUND) * 255
    bg_right = (np.abs(right.astype(float) - wire_bg).sum(axis=-1) < 12).mean()
    bg_left = (np.abs(left.astype(float) - wire_bg).sum(axis=-1) < 12).mean()
    assert bg_left == 0.0  # filled: nothing shows through
    assert bg_right > 0.2  # lines only: the background shows between them
    assert not is_sky(right).any()  # and no filled sky either: the right half is the wireframe's
    # the overlay's status bar runs along the whole bottom edge, across the seam between the halves
    bottom = img[-3]
    bar = np.array(BAR[:3]) * BAR[3] / 255.0
    assert np.all(np.abs(bottom[[2, w // 2 - 1, w // 2, w - 3]].astype(float) - bar).max(axis=1) < 60)
    assert not is_sky(single[h // 2: h - 20]).any() and single_views[0].fill == "filled"


def test_steady_frames_write_only_the_lod_uniforms_and_changes_still_land(ctx, cache, monkeypatch):
    """Uniforms are set when they change: with the camera still, a frame (split + shadows) writes
    only each terrain LOD's ``uLod``; a changed setting (the LOD colours) is still written."""
    import _moderngl

    written = []
    real = _moderngl.Uniform.write
    monkeypatch.setattr(_moderngl.Uniform, "write", lambda u, data: (written.append(u.name), real(u, data))[1])
    v = make_viewer(ctx, cache, target=(150.0, 140.0, 0.0), split=True, shadows=True)
    try:
        plain = frame(v, 0.5)
        written.clear()
        again = frame(v, 0.5)
        steady = list(written)
        written.clear()
        v.toggles.lod_colors = True
        coloured = frame(v, 0.5)
    finally:
        release(v)
    lods = len(v.scene.terrain.meshes)
    rings = len(v.scene.grass.meshes)
    # the meadow's: uLod per LOD draw (shadow + two views), and the command pass's slot count,
    # shared by tiles and rings (written twice when their counts differ); the overlay's uRect
    meadow = [n for n in steady if n != "uRect"]
    assert sorted(meadow) == sorted(["uLod"] * 3 * lods + ["uSlots"] * (2 if lods != rings else 0))
    assert np.array_equal(plain, again)
    assert "uLodColours" in written and not np.array_equal(plain, coloured)


def test_cli_procedural_json_and_errors(tmp_path):
    from click.testing import CliRunner

    from cli.main import cli

    out = tmp_path / "m.png"
    r = CliRunner().invoke(cli, ["view", "--procedural", "--meadow-seed", "3", "--size", "160x90", "--samples", "0",
                                 "--split", "--output", str(out), "--frames", "1", "--json"])
    if r.exit_code != 0 and "EGL" in r.output:
        require_tool("an EGL OpenGL context", r.output.strip(), found=False)
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    assert res["procedural"] and res["seed"] == 3 and res["split"] and res["shadows"]
    assert res["blade_count"] > 0 and res["upload_bytes_per_frame"] == 0
    assert out.exists()
    r = CliRunner().invoke(cli, ["view", "--cpu-instances", "--output", str(out)])
    assert r.exit_code == 2 and "error:" in r.output and "--procedural" in r.output
