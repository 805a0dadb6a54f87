"""Offscreen rendering on whatever EGL gives (llvmpipe on CI): small frames, small scenes."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gl

from wowgrass.grass.bundle import pack_instances  # noqa: E402
from wowgrass.render.constants import (  # noqa: E402
    DRAW_DISTANCE, ROOT_FRACTION, TILE_SIZE, WIND_AMPLITUDE, WIND_PHASE_X, WIND_PHASE_Y, WIND_SPEED,
    GrassSettings,
)
from wowgrass.render.world.synthetic import SyntheticSource, synthetic_tile, tile_origin  # noqa: E402

COL, ROW = 32, 32
X0, Y0 = tile_origin(COL, ROW)
CX, CY = X0 - TILE_SIZE / 2, Y0 - TILE_SIZE / 2  # tile centre
DEBUG_PNG = __import__("os").environ.get("WOWGRASS_TEST_PNG")  # folder to keep test frames in
SKY = np.array([0.62, 0.74, 0.86]) * 255


def make_viewer(ctx, instances, eye, target, *, size=(160, 120), samples=0, terrain=False, grass_culling="auto",
                **kw):
    from wowgrass.render.camera import Camera
    from wowgrass.render.gl.context import create_offscreen_target
    from wowgrass.render.gl.programs import make_programs
    from wowgrass.render.world.streaming import Scene
    from wowgrass.render.viewer import Toggles, Viewer

    tg = create_offscreen_target(size, samples=samples, ctx=ctx)
    progs = make_programs(ctx, alpha_to_coverage=tg.samples > 0)
    src = SyntheticSource(tiles=[(COL, ROW)], instances={(COL, ROW): instances}, **kw)
    sc = Scene(ctx, progs, src, threaded=False, grass_culling=grass_culling)
    sc.update(eye, block=True)
    cam = Camera.looking_at(eye, target)
    # statistics on: GPU-culled grass counts are read back only then
    return Viewer(tg, sc, cam, Toggles(terrain=terrain, doodads=False, stats=True, shadows=False))


def solid_instances(xy, z=0.0, scale=1.0):
    xy = np.asarray(xy, np.float64)
    return pack_instances(np.column_stack([xy, np.full(len(xy), z)]), 0.0, scale)


def not_sky(img):
    return np.abs(img[..., :3].astype(float) - SKY).sum(axis=-1) > 30


def test_grass_appears_where_the_bundle_has_it_and_vanishes_when_off(ctx):
    # instances only in the western half (+Y is west) of a 40x40 square, camera looking north and down
    rng = np.random.default_rng(0)
    xy = np.column_stack([CX + rng.uniform(-20, 20, 3000), CY + rng.uniform(0, 20, 3000)])
    v = make_viewer(ctx, {"synthetic\\grass0.m2": solid_instances(xy, scale=4.0)},
                    (CX - 45.0, CY, 35.0), (CX, CY, 0.0))
    st = v.render_frame(0.0)
    img = v.read_rgba()
    if DEBUG_PNG:
        from PIL import Image
        Image.fromarray(img).save(DEBUG_PNG + "/appear.png")
    grass = not_sky(img)
    # looking north (+X): screen left is west (+Y)
    left, right = grass[:, :70], grass[:, 90:]
    assert st.grass_instances > 0 and st.draw_calls >= 1
    assert left.mean() > 0.05, "no grass pixels where the bundle has grass"
    assert right.mean() == 0.0, "grass pixels where the bundle has none"
    v.toggles.grass = False
    st_off = v.render_frame(0.0)
    assert not not_sky(v.read_rgba()).any()
    assert st_off.instances == 0
    v.scene.release()


def test_same_frame_renders_identically_twice(ctx):
    src = SyntheticSource(tiles=[(COL, ROW)], density=0.02)
    from wowgrass.render.camera import Camera
    from wowgrass.render.gl.context import create_offscreen_target
    from wowgrass.render.gl.programs import make_programs
    from wowgrass.render.world.streaming import Scene
    from wowgrass.render.viewer import Viewer

    tg = create_offscreen_target((160, 120), samples=4, ctx=ctx)
    progs = make_programs(ctx, alpha_to_coverage=tg.samples > 0)
    sc = Scene(ctx, progs, src, threaded=True)
    sc.update((CX, CY, 0), block=True)
    cam = Camera.looking_at((CX, CY, 8.0), (CX + 30, CY + 10, 0.0))
    v = Viewer(tg, sc, cam)
    v.render_frame(1.25)
    a = v.read_rgba()
    v.render_frame(1.25)
    b = v.read_rgba()
    assert not_sky(a).mean() > 0.3  # terrain and grass are there
    assert np.array_equal(a, b)
    sc.release()


def test_tips_move_between_times_and_roots_do_not(ctx):
    # one big single-quad blade facing the camera (yaw 90 deg turns the model's X to world Y);
    # the grass reference sways in model space, so model X is across the screen
    inst = solid_instances(np.array([[CX, CY]]), scale=10.0)
    inst["yaw"] = 16384
    v = make_viewer(ctx, {"synthetic\\grass0.m2": inst}, (CX - 8.0, CY, 3.0), (CX, CY, 3.0), quads=1)
    v.scene.grass.settings.direction = (1.0, 0.0)
    frames = []
    for t in (0.0, 0.9):
        v.render_frame(t)
        img = v.read_rgba()
        frames.append(not_sky(img))
        if DEBUG_PNG:
            from PIL import Image
            Image.fromarray(img).save(f"{DEBUG_PNG}/sway_{t}.png")
    a, b = frames
    rows = np.flatnonzero(a.any(axis=1) | b.any(axis=1))
    top, bottom = rows.min(), rows.max()  # screen rows of tip and root
    h = bottom - top
    root_band = slice(bottom - int(0.10 * h), bottom + 1)  # below the root fraction (0.15)
    tip_band = slice(top, top + int(0.3 * h))
    assert h > 40
    assert np.array_equal(a[root_band], b[root_band]), "roots moved"
    assert (a[tip_band] != b[tip_band]).sum() > 20, "tips did not move"
    v.scene.release()


def flat_square(path):
    from wowgrass.render.gl.meshes import MeshData

    pos = np.array([[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0]], np.float32)
    tex = np.full((4, 4, 4), 255, np.uint8)
    return MeshData(path, pos, np.tile([0, 0, 1], (4, 1)).astype(np.float32),
                    np.array([[0, 0], [1, 0], [1, 1], [0, 1]], np.float32),
                    np.array([0, 1, 2, 0, 2, 3], np.uint32), texture=tex)


@pytest.mark.parametrize("cull", [True, False])
def test_nothing_beyond_the_draw_distance(ctx, cull):
    # flat squares in two rings: at 150 (drawn) and 235..300 (beyond 220: never drawn), seen from
    # straight above
    ang = np.linspace(0, 2 * np.pi, 400, endpoint=False)
    near = np.column_stack([CX + 150 * np.cos(ang), CY + 150 * np.sin(ang)])
    r = np.linspace(235, 300, 400)
    far = np.column_stack([CX + r * np.cos(ang * 7), CY + r * np.sin(ang * 7)])
    v = make_viewer(ctx, {"synthetic\\grass0.m2": solid_instances(np.r_[near, far], scale=15.9)},
                    (CX, CY, 520.0), (CX + 0.01, CY, 0.0), size=(200, 200), mesh_factory=flat_square)
    v.toggles.cull = cull
    v.camera.fov_y = 90.0
    st = v.render_frame(0.0)
    rgba = v.read_rgba()
    if DEBUG_PNG:
        from PIL import Image
        Image.fromarray(rgba).save(f"{DEBUG_PNG}/distance_{cull}.png")
    img = not_sky(rgba)
    yy, xx = np.mgrid[0:200, 0:200]
    # world units per pixel at ground level: 2 * 520 * tan(45 deg) / 200
    rpix = np.hypot(xx - 99.5, yy - 99.5) * (2 * 520.0 / 200)
    assert img[rpix < 200].sum() > 50, "the near ring is missing"
    assert img[rpix > DRAW_DISTANCE + 12].sum() == 0, "something drawn beyond the draw distance"
    if cull:
        assert st.grass_instances < len(near) + len(far)  # far chunks were not even submitted
    # control: with a longer draw distance the outer ring is there
    v.scene.grass.settings.draw_distance = 400.0
    v.scene.grass.settings.fade_start = 390.0
    v.render_frame(0.0)
    assert not_sky(v.read_rgba())[rpix > DRAW_DISTANCE + 12].sum() > 50
    v.scene.release()


@pytest.mark.parametrize("culling", ["cpu", "gpu"])
def test_instance_buffers_are_made_once_not_per_frame(ctx, culling):
    v = make_viewer(ctx, {"synthetic\\grass0.m2": solid_instances(np.array([[CX, CY], [CX + 40, CY]])),
                          "synthetic\\grass1.m2": solid_instances(np.array([[CX + 5, CY - 5]]))},
                    (CX - 10, CY, 2.0), (CX, CY, 0.0), grass_culling=culling)
    field = v.scene.grass
    assert field.buffers_created == 2
    made = []
    real = ctx.buffer
    ctx.buffer = lambda *a, **k: made.append(1) or real(*a, **k)
    try:
        v.render_frame(0.0)  # first frame may allocate the indirect command buffer once
        n_after_first = len(made)
        for i in range(5):
            v.render_frame(0.1 * i)
    finally:
        del ctx.buffer
    # once, in the first frame: the frame uniforms' ring of three, and the CPU path's small
    # indirect-command ring or the GPU path's model table, commands, compacted buffer, statistics
    # and the scratch buffer its statistics are read through
    assert len(made) == n_after_first <= {"cpu": 6, "gpu": 8}[culling]
    assert field.buffers_created == 2
    v.scene.release()


def test_terrain_mesh_fans_and_holes():
    from wowgrass.render.sources.terrain_mesh import build_terrain_arrays

    tile = synthetic_tile(COL, ROW, hole_chunk=17)
    arr = build_terrain_arrays(tile)
    assert len(arr.vertices) == 256 * 145
    assert arr.triangles == 256 * 64 * 4 - 64 * 4  # one chunk fully holed
    idx = arr.indices.reshape(-1, 3)
    assert not np.isin(np.arange(17 * 145, 18 * 145), idx).any()
    # every fan triangle has the cell's centre vertex and faces up (counter-clockwise from +Z)
    p = arr.positions[idx]
    nz = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])[:, 2]
    assert (nz > 0).all()
    assert arr.missing_textures == ["synthetic\\grass.blp", "synthetic\\dirt.blp"]


def test_terrain_hole_renders_as_a_hole(ctx):
    from wowgrass.render.constants import CHUNK_SIZE

    chunk = 16 * 7 + 7  # a chunk under the tile centre
    cx, cy = X0 - 7.5 * CHUNK_SIZE, Y0 - 7.5 * CHUNK_SIZE
    v = make_viewer(ctx, {}, (cx, cy, 186.0), (cx + 0.01, cy, 0.0), terrain=True, hole_chunk=chunk)
    v.camera.fov_y = 30.0
    v.render_frame(0.0)
    img = v.read_rgba()
    if DEBUG_PNG:
        from PIL import Image
        Image.fromarray(img).save(DEBUG_PNG + "/hole.png")
    sky = ~not_sky(img)
    assert sky[50:70, 70:90].all(), "the holed chunk was drawn"
    assert not sky[:8].any() and not sky[-8:].any(), "the chunks around it are missing"
    v.scene.release()


def test_sway_glsl_matches_the_reference_formula(ctx):
    """Transform feedback through sway.glsl against the grass reference's formula in numpy."""
    from wowgrass.render.gl.programs import preprocess_source

    src = """#version 330 core
#include "sway.glsl"
uniform mat4 uGrassParams;
in vec3 in_position; in vec2 in_xy;
out vec3 out_pos; out float out_fade; out vec4 out_default;
void main() {
    out_pos = grassSway(in_position, in_xy, uGrassParams);
    out_fade = grassFade(in_xy, uGrassParams);
    mat4 d = grassDefaultParams(vec2(0.0), 0.0, 0.0, 1.0, vec2(1.0, 0.0));
    out_default = vec4(d[1].yzw, d[2].x + d[2].y + d[0].z + d[0].w);
}
"""
    prog = ctx.program(vertex_shader=preprocess_source(src, "VERTEX_SHADER"),
                       varyings=["out_pos", "out_fade", "out_default"])
    rng = np.random.default_rng(5)
    n = 64
    pos = np.column_stack([rng.uniform(-0.5, 0.5, n), rng.uniform(-0.5, 0.5, n), rng.uniform(-0.1, 0.7, n)])
    xy = rng.uniform(-3000, 3000, (n, 2))
    t, zmin, zmax = 3.7, -0.05, 0.62
    params = GrassSettings().params((10.0, 20.0), t, zmin, zmax)
    prog["uGrassParams"].write(params.tobytes())
    vin = ctx.buffer(np.hstack([pos, xy]).astype("f4").tobytes())
    out = ctx.buffer(reserve=n * 8 * 4)
    vao = ctx.vertex_array(prog, [(vin, "3f 2f", "in_position", "in_xy")])
    vao.transform(out, vertices=n)
    got = np.frombuffer(out.read(), "f4").reshape(n, 8)
    # the grass reference (r_shader.c), in float64
    height = max(zmax - zmin, 0.001)
    x = np.clip((pos[:, 2] - zmin) / height, 0, 1)
    e = np.clip((x - ROOT_FRACTION) / (1 - ROOT_FRACTION), 0, 1)
    top = e * e * (3 - 2 * e)
    phase = xy @ np.array([WIND_PHASE_X, WIND_PHASE_Y])
    sway = np.sin(t * WIND_SPEED + phase) * WIND_AMPLITUDE * height * top
    d = np.array([1.0, 0.35]) / np.hypot(1.0, 0.35)
    want = pos.copy()
    want[:, :2] += d[None] * sway[:, None]
    np.testing.assert_allclose(got[:, :3], want, atol=2e-4)
    assert np.all(got[pos[:, 2] <= zmin + ROOT_FRACTION * height, :2] == pos[pos[:, 2] <= zmin + ROOT_FRACTION * height, :2].astype("f4"))
    dist = np.hypot(xy[:, 0] - 10, xy[:, 1] - 20)
    assert np.all(got[dist >= DRAW_DISTANCE, 3] == 0)
    # the compile-time defaults are the constants table
    np.testing.assert_allclose(got[0, 4:], [WIND_SPEED, WIND_AMPLITUDE, ROOT_FRACTION,
                                            WIND_PHASE_X + WIND_PHASE_Y + 160.0 + 220.0], rtol=1e-6)
    for o in (vao, vin, out, prog):
        o.release()


def test_programs_inject_defines_and_resolve_includes():
    from wowgrass.render.gl.programs import MANIFEST, preprocess, stages_of

    src = preprocess("grass.glsl", "VERTEX_SHADER", {"GRASS_A2C": True, "INSTANCE_MAT4": False})
    lines = src.splitlines()
    assert lines[0].startswith("#version") and lines[1] == "#define VERTEX_SHADER 1"
    assert "#define WOW_GRASS_WIND_PHASE_X 0.917" in lines and "#define GRASS_A2C 1" in lines
    assert not any(line.startswith("#define INSTANCE_MAT4") for line in lines)
    assert "float grassTopWeight(" in src and "#include" not in src.split("// begin sway.glsl")[1]
    assert src.count("float grassTopWeight(") == 1
    for name, fname in MANIFEST.items():
        want = ["COMPUTE_SHADER"] if name.endswith("_cull") else ["VERTEX_SHADER", "FRAGMENT_SHADER"]
        assert stages_of(fname) == want, name


def test_read_by_pads_the_attributes_a_program_does_not_read():
    from wowgrass.render.gl.programs import read_by

    prog = {"in_position": 0, "in_grid": 1, "i_model": 2}  # what a variant reads (names only matter)
    assert read_by(prog, "3f 3f 2f", "in_position", "in_normal", "in_uv") == ("3f 12x 8x", "in_position")
    assert read_by(prog, "3f 2u2 f/i", "in_uv", "in_grid", "i_model") == ("12x 2u2 f/i", "in_grid", "i_model")
    assert read_by(prog, "3f x4 2f/i", "in_position", "in_uv") == ("3f x4 8x/i", "in_position")  # padding kept
    assert read_by(prog, "3f 3f", "in_normal", "in_uv") == ()  # nothing read: the buffer is left out
    with pytest.raises(ValueError):
        read_by(prog, "3f 3f", "in_position")


def test_shader_compile_error_lists_numbered_source(ctx, monkeypatch):
    from wowgrass.render.gl import programs

    real = programs.read_source
    monkeypatch.setattr(programs, "read_source", lambda n: real(n).replace("vec4(in_uv,", "vec4(in_uvx,")
                        if n == "grass.glsl" else real(n))
    with pytest.raises(programs.ShaderError) as exc:
        programs.load_program(ctx, "grass")
    msg = str(exc.value)
    assert "grass.glsl" in msg and "in_uvx" in msg and "   1: #version" in msg


def test_terrain_chunk_culling_draws_what_whole_tiles_draw(ctx):
    """With LOD off, the compute pass's culled chunks give the frame whole tiles give (bit for bit)."""
    v = make_viewer(ctx, {}, (CX - 100, CY + 30, 25.0), (CX, CY, 0.0), terrain=True)
    terrain = v.scene.terrain
    terrain.lod.enabled = False
    v.render_frame(0.0)
    culled = v.read_rgba()
    assert terrain.indirect == (ctx.version_code >= 430)
    if ctx.version_code >= 430:
        cmds = terrain.read_commands(v.views[0])
        drawn = int(cmds["count"].sum()) // 3
    terrain.indirect = False
    st_all = v.render_frame(0.0)
    assert np.array_equal(culled, v.read_rgba())
    if ctx.version_code >= 430:
        assert 0 < drawn < st_all.triangles / 2  # most chunks are outside the frustum
    v.scene.release()


def test_instance_layouts_draw_the_same_grass(ctx):
    """The bundle bytes read as 3f 2u2 or as one 4u4 give the same frame; the grass reference's mat4 layout
    (built from the same instances) gives the same picture up to rounding."""
    from wowgrass.render.camera import Camera
    from wowgrass.render.gl.context import create_offscreen_target
    from wowgrass.render.frame import Frame, FrameUniforms, draw_frame
    from wowgrass.render.sources.grass_cpu import GrassField
    from wowgrass.render.gl.meshes import GpuMesh, crossed_quads
    from wowgrass.render.passes import ColourPass
    from wowgrass.render.gl.programs import make_programs
    from wowgrass.render.world.synthetic import random_instances
    from wowgrass.render.views import View

    tg = create_offscreen_target((160, 120), samples=0, ctx=ctx)
    mesh = GpuMesh(ctx, crossed_quads())
    inst = random_instances(400, (CX - 15, CY - 15), (CX + 15, CY + 15), seed=3, scale=(0.5, 3.0))
    cam = Camera.looking_at((CX - 25, CY, 6.0), (CX, CY, 0.0))
    frames = {}
    uniforms = FrameUniforms(ctx)
    for lay in ("16", "16p", "mat4"):
        progs = make_programs(ctx, instance_layout=lay)
        field = GrassField(ctx, progs, layout=lay)
        field.add(mesh, inst)
        frame = Frame(time=0.7, views=[View(cam, (0, 0, 160, 120))], wind=field.settings, fog=(1000.0, 2000.0),
                      sun_dir=(0.0, 0.0, 1.0), sun_color=(0.5, 0.5, 0.5), ambient=(0.5, 0.5, 0.5))
        counts = draw_frame(frame, [ColourPass(tg)], [field], uniforms)
        assert counts.instances == 400
        frames[lay] = tg.read_rgba()
        field.release()
    uniforms.release()
    assert not_sky(frames["16"]).mean() > 0.05
    assert np.array_equal(frames["16"], frames["16p"])
    assert (frames["16"] != frames["mat4"]).any(axis=-1).mean() < 0.01
    mesh.release()


def test_streaming_loads_near_tiles_and_unloads_far_ones(ctx):
    from wowgrass.render.gl.context import create_offscreen_target
    from wowgrass.render.gl.programs import make_programs
    from wowgrass.render.world.streaming import Scene

    tiles = [(30, 32), (31, 32), (32, 32), (33, 32), (34, 32)]
    src = SyntheticSource(tiles=tiles, density=0.002)
    tg = create_offscreen_target((32, 32), samples=0, ctx=ctx)
    sc = Scene(ctx, make_programs(ctx), src, reach=300.0, hysteresis=200.0, threaded=True)
    x = X0 - TILE_SIZE / 2

    def settle(y):
        sc.update((x, y, 0.0), block=True)

    settle(tile_origin(30, 32)[1] - TILE_SIZE / 2)  # over tile 30: it and its neighbour are in reach
    assert set(sc.tiles) == {(30, 32), (31, 32)}
    made = sc.grass.buffers_created
    assert {b.tile for b in sc.grass.batches} == {(30, 32), (31, 32)}
    settle(tile_origin(34, 32)[1] - TILE_SIZE / 2)  # fly east to tile 34
    assert set(sc.tiles) == {(33, 32), (34, 32)}
    assert {b.tile for b in sc.grass.batches} == {(33, 32), (34, 32)}
    assert set(sc.terrain.tiles) == {(33, 32), (34, 32)}
    assert sc.grass.buffers_created == 2 * made  # the new tiles' buffers, made once each
    sc.release()
    tg.release()


def test_residency_pass_runs_when_the_camera_moves_not_every_frame(ctx):
    """The pass over the map's tiles (what to request, drop, unload) runs again only once the
    camera reaches another 4-unit cell or tiles came or went; unblocked frames still stream."""
    from wowgrass.render.gl.programs import make_programs
    from wowgrass.render.world.streaming import Scene, tile_distance, tile_distances

    rng = np.random.default_rng(2)
    keys = rng.integers(0, 64, (50, 2))
    pts = rng.uniform(-17000, 17000, (50, 2))
    for (c, r), (x, y) in zip(keys, pts):  # the per-tile form agrees with the vectorised one
        assert tile_distance(int(c), int(r), x, y) == pytest.approx(float(tile_distances((c, r), x, y)[0]))

    tiles = [(30, 32), (31, 32), (32, 32), (33, 32), (34, 32)]
    sc = Scene(ctx, make_programs(ctx), SyntheticSource(tiles=tiles, density=0.002), reach=300.0,
               hysteresis=200.0, threaded=False)
    passes = []
    real = sc._residency
    sc._residency = lambda x, y: passes.append((x, y)) or real(x, y)
    x, y = X0 - TILE_SIZE / 2, tile_origin(30, 32)[1] - TILE_SIZE / 2
    for _ in range(40):  # unblocked frames: tiles arrive over several, the pass reruns as they do
        sc.update((x, y, 0.0))
    assert set(sc.tiles) == {(30, 32), (31, 32)}
    n = len(passes)
    for _ in range(10):
        sc.update((x + 1.0, y - 1.0, 0.0))  # the same 4-unit cell: no pass
    assert len(passes) == n
    sc.update((x + 8.0, y, 0.0))  # another cell
    assert len(passes) == n + 1
    y_far = tile_origin(34, 32)[1] - TILE_SIZE / 2
    for _ in range(40):
        sc.update((x, y_far, 0.0))
    assert set(sc.tiles) == {(33, 32), (34, 32)}
    sc.release()


def test_grass_mesh_stream_packs_position_bits_and_half_uv():
    # one 16-byte attribute per vertex: xyz float32 bits, then u and v as float16 (u low)
    from wowgrass.render.gl.meshes import crossed_quads

    m = crossed_quads()
    raw = np.frombuffer(m.packed_pos_uv(), np.uint32).reshape(-1, 4)
    assert raw.shape == (len(m.positions), 4)
    np.testing.assert_array_equal(raw[:, :3].view(np.float32), m.positions)
    u = (raw[:, 3] & 0xFFFF).astype(np.uint16).view(np.float16)
    v = (raw[:, 3] >> 16).astype(np.uint16).view(np.float16)
    np.testing.assert_allclose(np.stack([u, v], 1).astype(np.float32), m.uvs, atol=1e-3)
