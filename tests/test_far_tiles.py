"""Lean far tiles (render/sources/terrain_mesh.py FarArrays, terrain_arenas.py FarArena): what a far tile keeps, what it
costs on the GPU, that it draws the picture its complete tile draws at the switch distance, and
that a tile changes between the two as the camera comes and goes without a frame missing it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from wowgrass.render.sources import terrain_arenas as A
from wowgrass.render.sources import terrain_mesh as T
from wowgrass.render.world.synthetic import SyntheticSource, synthetic_tile, synthetic_textures


# --- the arrays (CPU) --------------------------------------------------------------------------
def test_a_far_tile_keeps_exactly_the_coarse_levels_triangles():
    tile = synthetic_tile(32, 32, hole_chunk=40)
    full = T.build_terrain_arrays(tile, synthetic_textures())
    far = T.build_far_arrays(tile, synthetic_textures(), first_level=3)
    assert len(far.vertices) == 256 * 9 and far.vertices.dtype == T.VERTEX_DTYPE
    assert (far.lod_count[:, :3] == 0).all()
    assert np.array_equal(far.lod_count[:, 3:], full.lod_count[:, 3:])
    fp, np_ = far.positions, full.positions
    for lv in (3, 4):  # the same triangles, vertex for vertex (heights, grid, morph, normals)
        a = far.indices[far.lod_first[0, lv]:far.lod_first[0, lv] + far.lod_count[:, lv].sum()]
        b = full.indices[full.lod_first[0, lv]:full.lod_first[0, lv] + full.lod_count[:, lv].sum()]
        assert np.array_equal(fp[a], np_[b])
        for f in ("height", "grid", "morph_height", "normal", "morph_normal", "uv"):
            assert np.array_equal(far.vertices[f][a], full.vertices[f][b]), (lv, f)
    # the complete tile's chunk boxes: the LOD pass picks the same levels for either
    assert np.array_equal(far.chunk_lo, full.chunk_lo) and np.array_equal(far.chunk_hi, full.chunk_hi)
    # no alpha maps, no layer textures: one 256x256 colour
    assert far.colour.shape == (T.FAR_ATLAS, T.FAR_ATLAS, 4) and far.colour.dtype == np.uint8
    assert not hasattr(far, "alpha") and not hasattr(far, "layers")


def test_the_far_colour_is_the_blend_of_the_layers_mean_colours():
    tile = synthetic_tile(32, 32)
    k = np.arange(256)
    level = (k * 255 // 255).astype(np.uint8)  # chunk k blends its second layer by k / 255
    tile.alpha[:, 1] = level[:, None, None]
    tile.shadow[:] = False
    tile.shadow[k % 2 == 1] = True
    tex = synthetic_textures()
    means, missing = T.layer_means(tile, tex)
    assert not missing
    for name, m in zip(tile.textures, means):  # a layer's mean: its resized image's
        assert np.allclose(m, T.resize_rgba(tex[name])[..., :3].reshape(-1, 3).mean(0))
    img = T.far_colour(tile, means).reshape(16, T.FAR_COLOUR, 16, T.FAR_COLOUR, 4)
    for c in (0, 17, 128, 255):
        iy, ix = divmod(c, 16)
        block = img[iy, :, ix, :].astype(float)
        a = c / 255
        want = means[0] * (1 - a) + means[1] * a
        assert np.abs(block[..., :3] - want).max() <= 0.5 + 1e-6, c
        assert (block[..., 3] == (255 if c % 2 else 0)).all()  # MCSH's share in A


def test_slot_sizes_meet_the_targets():
    assert A.SLOT_BYTES <= 8_000_000  # a complete tile's terrain (vertices, 5 levels, alpha atlas)
    v, i = A.far_slot_sizes(A.FAR_LEVEL)
    far = v * T.VERTEX_DTYPE.itemsize + i * 4 + T.FAR_ATLAS ** 2 * 4 * 4 // 3
    assert far <= 1_000_000
    assert T.far_level_for(800.0) == 3 and T.far_level_for(300.0) == 2 and T.far_level_for(5000.0) == 4


# --- GL --------------------------------------------------------------------------------------------
TILES = [(32, 32), (33, 32), (34, 32), (35, 32)]


def _scene(ctx, tiles=TILES, reach=600.0, **kw):
    from wowgrass.render.gl.programs import make_programs
    from wowgrass.render.world.streaming import Scene

    return Scene(ctx, make_programs(ctx), SyntheticSource(tiles=tiles, density=0.005), threaded=False,
                 reach=reach, terrain_reach=4000.0, hysteresis=100.0, **kw)


@pytest.mark.gl
def test_a_far_tile_has_no_alpha_atlas_no_line_buffers_and_fits_in_a_megabyte(ctx):
    from wowgrass.render.gl.memory import gpu_memory
    from wowgrass.render.world.synthetic import tile_origin

    sc = _scene(ctx)
    x0, y0 = tile_origin(32, 32)
    sc.update((x0 - 100.0, y0 - 100.0, 0.0), block=True, block_far=True)
    ts = sc.terrain
    near = {k for k, t in sc.tiles.items() if t.full}
    far = {k for k, t in sc.tiles.items() if not t.full}
    assert near == {(32, 32), (33, 32)} and far == {(34, 32), (35, 32)}
    assert all(ts.tiles[k].far for k in far) and not any(ts.tiles[k].far for k in near)
    assert ts.arena.slots == 2 and ts.far.slots == 2  # far tiles hold no slot of the alpha atlases
    assert ts.arena.lbo is None and ts.far.lbo is None  # no lines view yet: no edge lists
    assert ts.far.tex.width == T.FAR_ATLAS and ts.far.tex.layers == ts.far.capacity
    use = gpu_memory(ctx).tiles()
    for k in far:
        assert set(use[k]) == {"terrain-far"}, use[k]
        assert use[k]["terrain-far"] <= 1_000_000
    for k in near:
        assert use[k]["terrain-near"] <= 8_000_000 and "terrain-lines" not in use[k] and use[k]["grass"] > 0

    # a lines view asks: both arenas get their edge lists (every triangle's three edges)
    from wowgrass.render.camera import Camera
    from wowgrass.render.gl.context import create_offscreen_target
    from wowgrass.render.gl.readback import read_buffer
    from wowgrass.render.viewer import Toggles, Viewer

    tg = create_offscreen_target((96, 64), samples=0, ctx=ctx)
    cam = Camera.looking_at((x0 + 200.0, y0 + 200.0, 300.0), (x0 - 1000.0, y0 - 1200.0, 0.0))
    v = Viewer(tg, sc, cam, Toggles(grass=False, doodads=False, shadows=False, split=True), time_query=False)
    v.render_frame(0.0)
    for arena in (ts.arena, ts.far):
        assert arena.lbo is not None
        n = arena.slots * arena.slot_indices
        tris = np.frombuffer(read_buffer(ctx, arena.ibo, n * 4), np.uint32).reshape(-1, 3)
        lines = np.frombuffer(read_buffer(ctx, arena.lbo, n * 8), np.uint32).reshape(-1, 3, 2)
        assert np.array_equal(lines, tris[:, [[0, 1], [1, 2], [2, 0]]])
    use = gpu_memory(ctx).tiles()
    assert all(use[k]["terrain-lines"] == ts.far.slot_indices * 8 for k in far)
    far_cmds = ts.read_commands(v.views[1], far=True)
    assert (far_cmds["count"] > 0).any() and (far_cmds["base_instance"][far_cmds["count"] > 0] >= 3).all()
    sc.release()
    tg.release()


def _switch_views(ctx, size=(320, 180), fov=10.0, up=150.0):
    """The sample world's first tile alone, the camera 810 units west of it (beyond the 800-unit
    reach: a far tile), looking at its middle with a field of view that gives its pixels the size
    they have at 1920x1080 with 60 degrees (0.8 units at 810). Returns the frame drawn with it far,
    then with it complete, and the LOD pass's choices each time."""
    from wowgrass.grass.bake import default_data
    from wowgrass.game.data import open_data
    from wowgrass.render.camera import Camera
    from wowgrass.render.constants import TILE_SIZE, ZEROPOINT
    from wowgrass.render.gl.context import create_offscreen_target
    from wowgrass.render.gl.programs import make_programs
    from wowgrass.render.viewer import Toggles, Viewer
    from wowgrass.render.world.game_tiles import GameSource
    from wowgrass.render.world.streaming import Scene

    root, map_name = default_data()
    data = open_data(root)
    src = GameSource(data, map_name)
    key = src.tiles[0]

    class TerrainOnly:  # the one tile, no bake
        tiles = [key]

        def load_tile(self, c, r):
            return {**src.load_terrain(c, r), "grass": {}, "doodads": {}}

        def load_terrain(self, c, r):
            return src.load_terrain(c, r)

        def load_model(self, path):
            return None

    tg = create_offscreen_target(size, samples=0, ctx=ctx)
    sc = Scene(ctx, make_programs(ctx), TerrainOnly(), threaded=False, reach=800.0, terrain_reach=3200.0)
    c, r = key
    x_hi, y_hi = ZEROPOINT - r * TILE_SIZE, ZEROPOINT - c * TILE_SIZE  # the tile's north-west corner
    cx, cy = x_hi - TILE_SIZE / 2, y_hi - TILE_SIZE / 2
    eye = np.array([cx, y_hi + 810.0, 0.0])
    sc.update(eye, block=True, block_far=True)
    assert sc.terrain.tiles[key].far
    g = sc.ground_height(cx, cy)
    eye[2] = g + up
    cam = Camera(position=eye, fov_y=fov)
    cam.look_at((cx, cy, g))
    v = Viewer(tg, sc, cam, Toggles(grass=False, doodads=False, shadows=False), time_query=False)
    out = []
    payload = src.load_terrain(c, r)
    for complete in (False, True):
        if complete:
            sc.terrain.add(key, T.build_terrain_arrays(payload["adt"], payload["textures"]))
            assert not sc.terrain.tiles[key].far
        v.render_frame(0.0)
        out.append((v.read_rgba()[..., :3].astype(int), v.scene.terrain.read_stats(v.views[0])))
    layers = [T.resize_rgba(t) for t in payload["textures"].values()]
    sc.release()
    tg.release()
    data.close()
    return out, layers


def _mip_drift(ctx, layers) -> float:
    """How far this driver's mipmaps of the layer textures drift from their true means (the far
    colour's): llvmpipe's chain rounds up at every level (grass 75 -> 79 at 1x1)."""
    import moderngl

    tex = ctx.texture_array((T.LAYER_SIZE, T.LAYER_SIZE, len(layers)), 4, b"".join(x.tobytes() for x in layers))
    tex.build_mipmaps()
    tex.filter = (moderngl.LINEAR_MIPMAP_LINEAR, moderngl.LINEAR)
    cs = ctx.compute_shader("""#version 430
    layout(local_size_x = 1) in;
    uniform sampler2DArray t;
    uniform int n;
    layout(std430, binding = 0) buffer O { vec4 o[]; };
    void main() { for (int s = 0; s < n; ++s) for (int l = 0; l < 9; ++l)
        o[s * 9 + l] = textureLod(t, vec3(0.5, 0.5, float(s)), float(l)); }""")
    buf = ctx.buffer(reserve=16 * 9 * len(layers))
    buf.bind_to_storage_buffer(0)
    tex.use(0)
    cs["t"], cs["n"] = 0, len(layers)
    cs.run(1)
    got = np.frombuffer(buf.read(), np.float32).reshape(len(layers), 9, 4)[:, 4:, :3] * 255  # levels 16x16 ..
    want = np.array([x[..., :3].reshape(-1, 3).mean(0) for x in layers])[:, None]
    for o in (tex, cs, buf):
        o.release()
    return float(np.abs(got - want).max())


@pytest.mark.gl
def test_far_and_complete_tiles_draw_the_same_picture_at_the_switch_distance(ctx):
    """The bound, and why: the geometry is the same triangles at the same LOD levels, so the
    terrain covers exactly the same pixels. The far colour is, texel for texel, the blend the
    complete tile's shader computes with each layer at its mean colour: over the picture the two
    agree up to the driver's mipmap drift (the complete tile reads its layers' coarse mips, which
    llvmpipe rounds up a little at every level; measured here, not assumed), and at the scale of
    4x4-pixel blocks (a far texel is 2.2 units, ~3 pixels here) up to that drift plus 6/255 where
    a layer border is softer in the 16-texel colour than in the 64-texel alpha map. Pixels that
    change by more than 24 (|dR|+|dG|+|dB|, the LOD-band test's measure of a visible change) lie
    on those borders and texture detail: at most 3% of the tile's pixels."""
    views, layers = _switch_views(ctx)
    (far, far_lod), (near, near_lod) = views
    drift = _mip_drift(ctx, layers)
    assert far_lod == near_lod and far_lod["chunks_per_level"][:3] == [0, 0, 0]
    sky = far[0, 0]
    cov_far, cov_near = np.any(far != sky, -1), np.any(near != sky, -1)
    assert np.array_equal(cov_far, cov_near) and cov_far.sum() > 5000
    m = cov_far
    bias = np.abs((near - far)[m].mean(0)).max()
    assert bias <= drift + 1.0, (bias, drift)
    k = 4
    h, w = (far.shape[0] // k) * k, (far.shape[1] // k) * k

    def blocks(img):
        return img[:h, :w].reshape(h // k, k, w // k, k, -1).mean((1, 3))

    full = blocks(m[..., None].astype(float))[..., 0] == 1
    bd = np.abs(blocks(near) - blocks(far)).max(-1)[full]
    assert np.percentile(bd, 99) <= drift + 6.0, (np.percentile(bd, 99), drift)
    changed = (np.abs(near - far).sum(-1) > 24)[m].mean()
    assert changed <= 0.03, changed


@pytest.mark.gl
def test_a_tile_goes_far_and_comes_back_without_a_frame_missing_it(ctx):
    """Streaming moves east along a row of four tiles and back: the last comes into reach
    (complete), the first leaves it (far), and back. A camera high above sees all four; every
    frame the terrain covers exactly the same pixels (a swap draws one or the other, never
    neither, and both the same triangles from up there)."""
    from wowgrass.render.camera import Camera
    from wowgrass.render.constants import TILE_SIZE
    from wowgrass.render.gl.context import create_offscreen_target
    from wowgrass.render.viewer import Toggles, Viewer
    from wowgrass.render.world.synthetic import tile_origin

    sc = _scene(ctx, upload_budget=1 << 20)  # a tile over several frames
    x0, y0 = tile_origin(32, 32)
    tg = create_offscreen_target((64, 48), samples=0, ctx=ctx)
    cam = Camera(position=np.array([x0 - TILE_SIZE / 2, y0 - 2 * TILE_SIZE, 1500.0]), fov_y=120.0)
    cam.pitch = -math.pi / 2 + 0.01
    v = Viewer(tg, sc, cam, Toggles(grass=False, doodads=False, shadows=False), time_query=False)
    v.passes[0].clear = (1.0, 0.0, 1.0)
    path = [np.array([x0 - TILE_SIZE / 2, y0 - TILE_SIZE / 2 - s, 0.0]) for s in np.linspace(0, 3 * TILE_SIZE, 30)]
    sc.update(path[0], block=True, block_far=True)
    seen = []
    for p in path + path[::-1]:
        for _ in range(3):
            sc.update(p)
            v.render_frame(0.0)
            img = v.read_rgba()[..., :3].astype(int)
            seen.append((int((np.abs(img - [255, 0, 255]).sum(-1) < 8).sum()),
                         {k: t.terrain.far for k, t in sc.tiles.items()}))
    states = {k: {s[1].get(k) for s in seen} for k in TILES}
    assert {True, False} <= states[(32, 32)] and {True, False} <= states[(35, 32)]  # both ways, both
    holes = [h for h, _ in seen]
    assert max(holes) == min(holes) > 0, (min(holes), max(holes))  # no frame lost a tile's ground
    sc.release()
    tg.release()


@pytest.mark.gl
def test_without_indirect_draws_far_tiles_cover_what_the_lod_pass_covers(ctx):
    """The GL < 4.3 path (no compute: each tile's finest level drawn whole, morphed by distance)
    draws far tiles from their own slots too: from high up, the same pixels as the LOD pass."""
    from wowgrass.render.camera import Camera
    from wowgrass.render.constants import TILE_SIZE
    from wowgrass.render.gl.context import create_offscreen_target
    from wowgrass.render.viewer import Toggles, Viewer
    from wowgrass.render.world.synthetic import tile_origin

    tg = create_offscreen_target((96, 64), samples=0, ctx=ctx)
    x0, y0 = tile_origin(32, 32)
    sky = {}
    for indirect in (True, False):
        sc = _scene(ctx, indirect=indirect)
        sc.update((x0 - 100.0, y0 - 100.0, 0.0), block=True, block_far=True)
        assert {k for k, t in sc.tiles.items() if t.terrain.far} == {(34, 32), (35, 32)}
        cam = Camera(position=np.array([x0 - TILE_SIZE / 2, y0 - 2 * TILE_SIZE, 1500.0]), fov_y=120.0)
        cam.pitch = -math.pi / 2 + 0.01
        v = Viewer(tg, sc, cam, Toggles(grass=False, doodads=False, shadows=False), time_query=False)
        v.passes[0].clear = (1.0, 0.0, 1.0)
        st = v.render_frame(0.0)
        img = v.read_rgba()[..., :3].astype(int)
        sky[indirect] = np.abs(img - [255, 0, 255]).sum(-1) < 8
        if not indirect:
            assert st.draw_calls == 4  # a draw a tile, far ones at their level 3
        sc.release()
    assert 0 < sky[True].sum() < sky[True].size
    assert np.array_equal(sky[True], sky[False])
    tg.release()


@pytest.mark.gl
@pytest.mark.parametrize("moving", [True, False])
def test_a_moving_view_sizes_its_arenas_once_before_the_flight(ctx, moving):
    """A growth copies everything resident (25-90 ms in an H200 flight): a moving view's first
    upload makes room for every tile that can be complete at once, so none falls inside the flight;
    a still frame's arena holds the tiles in reach now."""
    from wowgrass.render.constants import TILE_SIZE
    from wowgrass.render.world.synthetic import tile_origin

    row = [(32 + i, 32) for i in range(8)]
    sc = _scene(ctx, tiles=row, moving=moving)
    arena = sc.terrain.arena
    grows = []
    real_grow = arena._grow
    arena._grow = lambda capacity: (grows.append(capacity), real_grow(capacity))[1]
    x0, y0 = tile_origin(32, 32)
    start = np.array([x0 - TILE_SIZE / 2, y0 - TILE_SIZE / 2, 0.0])
    sc.update(start, block=True)
    wanted_at_start = len(sc.wanted(float(start[0]), float(start[1])))
    first = arena.capacity
    for s in np.linspace(0, 7 * TILE_SIZE, 28):  # east along the row: every tile comes into reach
        sc.update(start - [0.0, s, 0.0], block=True)
    assert wanted_at_start < 4  # the arena's smallest size
    if moving:
        assert first == len(row) and grows == [len(row)]  # sized once, at the first upload
    else:
        assert first == 4 and grows == [4]  # room for the tiles in reach now (a row: never more)
    assert sum(not t.terrain.far for t in sc.tiles.values()) >= 2
    sc.release()


def test_a_source_decodes_each_texture_once_and_far_colours_do_not_change():
    """GameSource keeps decoded MTEX textures (read-only, shared by the tiles around them): a
    second load of a tile decodes nothing and builds the same far arrays; a texture the data lacks
    is remembered as lacking."""
    from wowgrass.formats import blp
    from wowgrass.game.data import open_data
    from wowgrass.grass.bake import default_data
    from wowgrass.render.sources.terrain_mesh import build_far_arrays
    from wowgrass.render.world import game_tiles
    from wowgrass.render.world.game_tiles import GameSource

    root, map_name = default_data()
    with open_data(root) as data:
        src = GameSource(data, map_name)
        key = src.tiles[0]
        first = src.load_terrain(*key)
        far1 = build_far_arrays(first["adt"], first["textures"])
        decoded = []
        saved, real = blp.BlpImage.__dict__["from_bytes"], blp.BlpImage.from_bytes
        blp.BlpImage.from_bytes = classmethod(lambda cls, *a, **k: decoded.append(a[1]) or real(*a, **k))
        try:
            again = src.load_terrain(*key)
        finally:
            blp.BlpImage.from_bytes = saved
        assert decoded == [] and again["textures"]
        for name, rgba in again["textures"].items():
            assert rgba is first["textures"][name] and not rgba.flags.writeable
        far2 = build_far_arrays(again["adt"], again["textures"])
        np.testing.assert_array_equal(far1.colour, far2.colour)
        assert far1.mean_colour == far2.mean_colour
        assert src._texture("tileset\\no such texture.blp") is None
        assert "tileset\\no such texture.blp" in src._texture_cache
        for i in range(game_tiles.TEXTURE_CACHE + 5):   # bounded
            src._texture_cache[f"x{i}"] = None
        src._texture("tileset\\another missing.blp")
        assert len(src._texture_cache) <= game_tiles.TEXTURE_CACHE
