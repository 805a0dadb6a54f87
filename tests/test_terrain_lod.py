"""Terrain LOD, geomorphing, cracks, MCSH and the first frame (render/terrain.py, render/firstframe.py)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from loose_world import loose_world

from wowgrass.formats.adt import AdtTile
from wowgrass.render.sources import terrain_mesh as T
from wowgrass.render.sources.terrain import TerrainSet
from wowgrass.render.world.synthetic import SyntheticSource, synthetic_tile

BACKGROUND = (1.0, 0.0, 1.0)  # a clear colour no terrain or fog has


# --- the level meshes (CPU) -------------------------------------------------------------------
def _collapse(level: int) -> np.ndarray:
    """(145,) where each vertex ends once level ``level``'s odd vertices have fully collapsed."""
    out = np.arange(145)
    odd = T.VERTEX_LEVEL == level
    out[odd] = T.MORPH_TARGET[odd]
    return out


def _tris(cells: np.ndarray, keep: np.ndarray) -> set:
    t = cells[keep].reshape(-1, 3)
    return set(map(tuple, t))


def test_each_vertex_is_odd_on_one_level_and_collapses_onto_the_next_levels_mesh():
    # 64 inner vertices, then 81 - 25, 25 - 9, 9 - 4 outer ones; the 4 corners never move
    assert np.bincount(T.VERTEX_LEVEL, minlength=5).tolist() == [64, 56, 16, 5, 4]
    rng = np.random.default_rng(2)
    holes0 = rng.random((256, 8, 8)) < 0.3
    holes = T.level_holes(holes0)
    for lv in range(T.LEVELS - 1):
        f = _collapse(lv)
        for c in range(0, 256, 37):
            fine = T.LEVEL_CELLS[lv].reshape(*T.LEVEL_CELLS[lv].shape[:2], -1, 3)
            kept = f[fine[~holes[lv][c]].reshape(-1, 3)]
            nondegenerate = kept[(kept[:, 0] != kept[:, 1]) & (kept[:, 1] != kept[:, 2]) & (kept[:, 0] != kept[:, 2])]
            coarse = _tris(T.LEVEL_CELLS[lv + 1], ~holes[lv + 1][c])
            # the fine mesh at the end of its morph is the coarse mesh: same triangles, same winding
            assert sorted(map(tuple, nondegenerate)) == sorted(coarse), (lv, c)


def test_level_index_ranges_cover_each_chunk_and_cut_holes():
    tile = synthetic_tile(32, 32, hole_chunk=5)
    a = T.build_terrain_arrays(tile)
    assert a.lod_count[5].tolist() == [0] * 5
    full = [64 * 12, 64 * 6, 16 * 6, 4 * 6, 6]
    assert a.lod_count[0].tolist() == full and a.lod_count.sum() == len(a.indices)
    for lv in range(T.LEVELS):
        i = a.indices[a.lod_first[0, lv]:a.lod_first[0, lv] + a.lod_count[0, lv]]
        assert i.min() >= 0 and i.max() < 145  # chunk 0's own vertices


def _edge_pairs(arrays):
    """(a, b) vertex indices of every outer vertex that two chunks of one tile share."""
    g = arrays.vertices["grid"].reshape(256, 145, 2)
    outer = T.ROWS % 1 == 0
    key = {}
    pairs = []
    for c in range(256):
        for v in np.flatnonzero(outer):
            k = (float(g[c, v, 0]), float(g[c, v, 1]))
            if k in key:
                pairs.append((key[k], c * 145 + v))
            else:
                key[k] = c * 145 + v
    return np.array(pairs)


def test_chunks_sharing_a_vertex_give_it_bit_identical_values(realdata):
    """The seams of the real tiles: MCNK origins are float32 and disagree by up to 0.0015 units
    along shared edges; vertices now come from the map-wide grid and agree exactly."""
    for name in ("continent4229.adt", "Azeroth_38_46.adt"):
        tile = AdtTile.from_bytes((realdata / "adt" / name).read_bytes(), name)
        pos = tile.vertex_positions().reshape(-1, 3)
        a = T.build_terrain_arrays(tile)
        pairs = _edge_pairs(a)
        assert len(pairs) > 4000
        assert np.abs(pos[pairs[:, 0], :2] - pos[pairs[:, 1], :2]).max() > 1e-4  # the file's own positions differ
        v = a.vertices
        for f in ("height", "normal", "grid"):
            assert np.array_equal(v[f][pairs[:, 0]], v[f][pairs[:, 1]]), (name, f)
        # and they stay on the file's positions (within float32 rounding of the grid)
        assert np.abs(a.positions[:, :2] - pos[:, :2]).max() < 2e-3


def test_neighbouring_tiles_share_their_border_vertices_exactly():
    a = T.build_terrain_arrays(synthetic_tile(32, 32))
    b = T.build_terrain_arrays(synthetic_tile(33, 32))  # east of it
    ga, gb = a.vertices["grid"].reshape(256, 145, 2), b.vertices["grid"].reshape(256, 145, 2)
    east = ga[15::16][:, T.COLS == 8]
    west = gb[0::16][:, T.COLS == 0]
    assert np.array_equal(east, west)
    assert np.array_equal(T.grid_to_world(east), T.grid_to_world(west))


# --- GL ------------------------------------------------------------------------------------------
def terrain_viewer(ctx, source, size=(256, 144)):
    from wowgrass.render.camera import Camera
    from wowgrass.render.gl.context import create_offscreen_target
    from wowgrass.render.gl.programs import make_programs
    from wowgrass.render.world.streaming import Scene, tiles_centre
    from wowgrass.render.viewer import Toggles, Viewer

    tg = create_offscreen_target(size, samples=0, ctx=ctx)
    sc = Scene(ctx, make_programs(ctx), source, threaded=False, reach=4000.0)
    sc.update((*tiles_centre(source.tiles), 0.0), block=True)
    v = Viewer(tg, sc, Camera(), Toggles(grass=False, doodads=False), time_query=False)
    v.passes[0].clear = BACKGROUND
    return v


def background_below_terrain(img, *, column: bool = True) -> np.ndarray:
    """Background pixels that are seams or cracks: with terrain within 3 pixels above and below,
    and with ``column`` (views near level) any with terrain above it in its column (beyond the
    last tile the background shows above the terrain, never under it; from high up a tile's
    side edge breaks that rule, and a notch between far hills is background left and right)."""
    bg = np.abs(img[..., :3].astype(int) - np.array(BACKGROUND) * 255).sum(-1) < 8
    ground = ~bg

    def near(axis, sign):
        out = np.zeros_like(ground)
        for k in range(1, 4):
            out |= np.roll(ground, sign * k, axis=axis) & _valid(ground.shape, axis, sign * k)
        return out

    bad = bg & near(0, 1) & near(0, -1)
    if column:
        bad |= bg & np.maximum.accumulate(ground, axis=0)  # row 0 is the top
    return bad


def _valid(shape, axis, shift):
    """Mask of the pixels np.roll filled from inside the frame (not wrapped around)."""
    m = np.ones(shape, bool)
    idx = [slice(None)] * 2
    idx[axis] = slice(0, shift) if shift > 0 else slice(shift, None)
    m[tuple(idx)] = False
    return m


def _aim(v, x, y, up, yaw, pitch_deg):
    g = v.scene.ground_height(x, y)
    v.camera.position = np.array([x, y, g + up])
    v.camera.yaw, v.camera.pitch = yaw, math.radians(pitch_deg)


class _NoHoles:
    """A tile source whose ADTs have their holes filled (continent4229's one hole chunk is a real
    cave mouth: background through it is right, and not what the crack test looks for)."""

    def __init__(self, src):
        self.src, self.tiles = src, src.tiles

    def load_tile(self, col, row):
        p = self.src.load_tile(col, row)
        p["adt"].holes[:] = 0
        return p

    def load_model(self, path):
        return self.src.load_model(path)


def _game_source(root, map_name):
    from wowgrass.game.data import open_data
    from wowgrass.render.world.game_tiles import GameSource

    data = open_data(root)
    return data, GameSource(data, map_name)


WORLDS = {
    "continent": ("continent4229.adt", "continent", 42, 29, "continent.wdt"),
    "azeroth": ("Azeroth_38_46.adt", "Azeroth", 38, 46, None),
}


@pytest.fixture(params=["continent", "azeroth", "sample"])
def world(request, tmp_path):
    """(tile source, data to close) for the two real tiles and the sample world."""
    if request.param == "sample":
        from wowgrass.grass.bake import default_data

        root, map_name = default_data()
        data, src = _game_source(root, map_name)
    else:
        import os
        from pathlib import Path

        if not os.environ.get("WOWGRASS_REALDATA"):
            pytest.skip("WOWGRASS_REALDATA is not set (real client files are not available)")
        adt, map_name, col, row, wdt = WORLDS[request.param]
        root = loose_world(tmp_path, Path(os.environ["WOWGRASS_REALDATA"]), adt, map_name, col, row, wdt)
        data, src = _game_source(root, map_name)
    yield _NoHoles(src)
    data.close()


def test_camera_sweep_shows_no_background_under_the_terrain(ctx, world):
    """Eye height (1.7) in 16 directions over the data, plus two views from 120 units up (steep
    enough not to see past a single tile's edge): chunk, tile and LOD borders all in view, not
    one background pixel under the terrain (640x360: the old seams were a few dots a frame)."""
    from wowgrass.render.world.streaming import tiles_centre

    v = terrain_viewer(ctx, world, size=(640, 360))
    cx, cy = tiles_centre(world.tiles)
    rng = np.random.default_rng(7)
    bad = []
    for i in range(18):
        high = i >= 16
        r = 50.0 if high else 180.0
        x, y = cx + rng.uniform(-r, r), cy + rng.uniform(-r, r)
        up, pitch = (120.0, -75.0) if high else (1.7, -6.0)
        _aim(v, x, y, up, i * 2 * math.pi / 16 + rng.uniform(0, 0.3), pitch)
        v.render_frame(0.0)
        n = int(background_below_terrain(v.read_rgba(), column=not high).sum())
        if n:
            bad.append((i, n))
    levels = np.bincount(v.scene.terrain.read_commands(v.views[0])["base_instance"], minlength=5)
    v.scene.release()
    assert not bad, f"background pixels under the terrain (frame, count): {bad}"
    assert (levels[1:] > 0).sum() >= 2  # the sweep did cross LOD borders


def test_compute_pass_picks_the_levels_and_chunks_of_the_cpu_reference(ctx):
    v = terrain_viewer(ctx, SyntheticSource(tiles=[(32, 32), (33, 32), (32, 33), (33, 33)], relief=30.0))
    ts = v.scene.terrain
    lo = np.zeros((ts.arena.slots * 256, 3))
    hi = np.zeros((ts.arena.slots * 256, 3))
    for t in ts.tiles.values():
        lo[t.slot * 256:(t.slot + 1) * 256], hi[t.slot * 256:(t.slot + 1) * 256] = t.chunk_lo, t.chunk_hi
    from wowgrass.render.constants import ZEROPOINT, TILE_SIZE

    x0, y0 = ZEROPOINT - 33 * TILE_SIZE, ZEROPOINT - 33 * TILE_SIZE  # the four tiles' shared corner
    checked, seen = 0, set()
    for eye, yaw, pitch in [((x0 + 20, y0 - 30, 0), 0.3, -5), ((x0 - 200, y0 + 100, 0), 2.0, -10),
                            ((x0, y0, 300), 4.0, -40)]:
        _aim(v, eye[0], eye[1], 1.7 + eye[2], yaw, pitch)
        v.render_frame(0.0)
        cmds = ts.read_commands(v.views[0])
        vis, level = T.select_lod(lo, hi, v.camera.position, v.views[0].planes(), v.camera.far)
        drawable = np.concatenate([t.lod_count[:, 0] > 0 for t in sorted(ts.tiles.values(), key=lambda t: t.slot)])
        vis &= drawable
        assert np.array_equal(cmds["count"] > 0, vis)
        assert np.array_equal(cmds["base_instance"][vis], level[vis])
        seen |= set(level[vis].tolist())
        checked += int(vis.sum())
    assert checked > 300 and len(seen) >= 4
    v.scene.release()


def test_one_dispatch_gives_every_view_its_own_commands(ctx):
    """A split screen with shadows (three views: the filled half, the wireframe half, the sun's):
    one compute dispatch a frame writes each view's section, culled with that view's frustum,
    levels from the main camera, and the wireframe half's counts doubled (edge lists)."""
    from wowgrass.render.gl import native

    v = terrain_viewer(ctx, SyntheticSource(tiles=[(32, 32), (33, 32), (32, 33), (33, 33)], relief=30.0))
    ts = v.scene.terrain
    tiles = sorted(ts.tiles.values(), key=lambda t: t.slot)
    lo = np.concatenate([t.chunk_lo for t in tiles])
    hi = np.concatenate([t.chunk_hi for t in tiles])
    counts = np.concatenate([t.lod_count for t in tiles])  # (chunks, levels) triangle indices
    from wowgrass.render.constants import TILE_SIZE, ZEROPOINT

    x0, y0 = ZEROPOINT - 33 * TILE_SIZE, ZEROPOINT - 33 * TILE_SIZE
    _aim(v, x0 + 20, y0 - 30, 1.7, 0.3, -5)
    v.toggles.split, v.toggles.shadows = True, True
    v.render_frame(0.0)
    runs = []
    real = native.run_compute
    native.run_compute = lambda cs, *args: runs.append(args) or real(cs, *args)
    try:
        v.render_frame(0.0)
    finally:
        native.run_compute = real
    assert [r[2] for r in runs] == [3]  # the terrain's one dispatch (grass and doodads are off): z = 3 views
    main = v.views[0].camera.position
    views = [*v.views, v.passes[0]._view]  # the camera views, then the sun's (the shadow pass's own)
    assert [x.fill for x in views] == ["filled", "lines", "filled"]
    for view in views:
        cmds = ts.read_commands(view)
        vis, level = T.select_lod(lo, hi, view.camera.position, view.planes(), view.camera.far, lod_eye=main)
        vis &= counts[:, 0] > 0
        assert np.array_equal(cmds["count"] > 0, vis), view.name
        k = 2 if view.fill == "lines" else 1
        assert np.array_equal(cmds["count"][vis], k * counts[vis, level[vis]]), view.name
        assert vis.sum() > 20, view.name
    v.scene.release()


def _switches(v, p0, p1, n=120):
    """Camera positions (a, b) 0.01 units apart on the line p0 -> p1 between which a visible
    chunk changes level (found with the CPU reference, then bisected)."""
    ts = v.scene.terrain
    tiles = sorted(ts.tiles.values(), key=lambda t: t.slot)
    lo = np.concatenate([t.chunk_lo for t in tiles])
    hi = np.concatenate([t.chunk_hi for t in tiles])

    def levels(t):
        v.camera.position = p0 + (p1 - p0) * t
        vis, lv = T.select_lod(lo, hi, v.camera.position, v.views[0].planes(), v.camera.far)
        return np.where(vis, lv, -1)

    out = []
    ts_ = np.linspace(0.0, 1.0, n)
    for a, b in zip(ts_[:-1], ts_[1:]):
        la, lb = levels(a), levels(b)
        changed = (la != lb) & (la >= 0) & (lb >= 0)
        if not changed.any():
            continue
        while (b - a) * np.linalg.norm(p1 - p0) > 0.01:
            m = (a + b) / 2
            if ((levels(m) != la) & changed).any():
                b = m
            else:
                a = m
        out.append((p0 + (p1 - p0) * a, p0 + (p1 - p0) * b))
    return out


def _changed(v, a, b) -> int:
    """Pixels whose colour moves by more than 24 (|dR|+|dG|+|dB|) from camera a to camera b."""
    imgs = []
    for p in (a, b):
        v.camera.position = p
        v.render_frame(0.0)
        imgs.append(v.read_rgba()[..., :3].astype(int))
    return int((np.abs(imgs[0] - imgs[1]).sum(-1) > 24).sum())


def test_a_chunk_crossing_an_lod_band_changes_almost_no_pixels(ctx):
    """The measure: over the sample world, 40 units up, the camera moves 0.01 units across the
    distance where a chunk switches to the next level; count the pixels whose colour changes by
    more than 24 (|dR|+|dG|+|dB|) at 256x144. With geomorphing the chunk already has its coarser
    shape when it switches: at most 4 pixels change (the same as a 0.01 move that crosses no
    band); the same switches without geomorphing change up to ~20."""
    from wowgrass.grass.bake import default_data
    from wowgrass.render.world.streaming import tiles_centre

    root, map_name = default_data()
    data, src = _game_source(root, map_name)
    v = terrain_viewer(ctx, src)
    cx, cy = tiles_centre(src.tiles)
    g = v.scene.ground_height(cx, cy)
    v.camera.yaw, v.camera.pitch = 0.3, math.radians(-15)
    sw = _switches(v, np.array([cx - 150, cy + 40, g + 40]), np.array([cx - 30, cy + 40, g + 40]))
    assert len(sw) >= 20
    morphed, popped = [], []
    for a, b in sw:
        v.scene.terrain.lod.morph = True
        morphed.append(_changed(v, a, b))
        v.scene.terrain.lod.morph = False
        popped.append(_changed(v, a, b))
    v.scene.release()
    data.close()
    assert max(morphed) <= 4, morphed
    assert max(popped) >= 12, popped  # the measure does see a pop


# --- MCSH ------------------------------------------------------------------------------------
def _ground_under_pixels(v, size) -> np.ndarray:
    """(h, w, 3) where each pixel's ray meets the terrain (bisection against the ground heights)."""
    from wowgrass.render.world.firstframe import ground_heights

    w, h = size
    inv = np.linalg.inv(v.views[0].view_proj())
    ys, xs = np.mgrid[0:h, 0:w]
    ndc = np.stack([(xs + 0.5) / w * 2 - 1, 1 - (ys + 0.5) / h * 2, np.ones((h, w)), np.ones((h, w))], -1)
    far = ndc @ inv.T
    eye = v.camera.position
    d = far[..., :3] / far[..., 3:] - eye
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    lo, hi = np.zeros((h, w)), np.full((h, w), 300.0)
    for _ in range(40):
        mid = (lo + hi) / 2
        p = eye + d * mid[..., None]
        above = p[..., 2] > ground_heights(v.scene, p[..., 0], p[..., 1])
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    return eye + d * lo[..., None]


@pytest.mark.realdata
def test_mcsh_darkens_the_terrain_where_the_baked_shadow_is_set(ctx, tmp_path, realdata):
    from wowgrass.formats.adt import CHUNK_SIZE

    tile = AdtTile.from_bytes((realdata / "adt" / "continent4229.adt").read_bytes(), "continent4229.adt")
    c = int(np.argmin(np.abs(tile.shadow.reshape(256, -1).mean(axis=1) - 0.5)))  # half in shadow
    root = loose_world(tmp_path, realdata, "continent4229.adt", "continent", 42, 29)
    data, src = _game_source(root, "continent")
    v = terrain_viewer(ctx, src)
    # straight down over that chunk
    x, y = tile.positions[c, 0] - CHUNK_SIZE / 2, tile.positions[c, 1] - CHUNK_SIZE / 2
    v.camera.position = np.array([x, y, v.scene.ground_height(x, y) + 60.0])
    v.camera.yaw, v.camera.pitch = 0.0, -math.pi / 2 + 1e-3
    frames = []
    for mcsh in (False, True):
        v.toggles.mcsh = mcsh
        v.render_frame(0.0)
        frames.append(v.read_rgba()[..., :3].astype(int))
    # the MCSH bit under every pixel, from the file
    p = _ground_under_pixels(v, (256, 144))
    ch = tile.chunk_index_at(p[..., 0], p[..., 1])
    r = np.clip(((tile.positions[ch, 0] - p[..., 0]) / CHUNK_SIZE * 64).astype(int), 0, 63)
    col = np.clip(((tile.positions[ch, 1] - p[..., 1]) / CHUNK_SIZE * 64).astype(int), 0, 63)
    shadow = tile.shadow[ch, r, col] & (ch >= 0)
    v.scene.release()
    data.close()
    darker = (frames[0] - frames[1]).sum(-1) > 20
    assert 0.15 < shadow.mean() < 0.85 and 0.15 < darker.mean() < 0.85
    assert (darker == shadow).mean() > 0.9  # darker where the bit is set, and only there
    assert (frames[1] <= frames[0]).all()  # only ever darker


# --- the first frame -------------------------------------------------------------------------------
@pytest.mark.realdata
def test_a_wdt_listing_tiles_the_data_lacks_starts_on_one_it_has(tmp_path, realdata):
    from click.testing import CliRunner

    from wowgrass.cli.main import cli

    root = loose_world(tmp_path, realdata, "continent4229.adt", "continent", 42, 29, wdt="continent.wdt")
    r = CliRunner().invoke(cli, ["view", "--data", str(root), "--output", str(tmp_path / "f.png"),
                                 "--size", "160x90", "--json"])
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    assert res["tiles"] == [[42, 29]] and res["tile_errors"] == {}  # 687 listed, one there
    x, y, z = res["camera"]
    tile = AdtTile.from_bytes((realdata / "adt" / "continent4229.adt").read_bytes(), "c")
    ch = int(tile.chunk_index_at(x, y))
    assert ch >= 0 and abs(z - 1.7 - float(tile.heights_at(ch, x, y))) < 1e-3  # eye height, on the tile


def _first_view(tmp_path, data_args):
    from click.testing import CliRunner
    from PIL import Image

    from wowgrass.cli.main import cli

    out = tmp_path / "first.png"
    r = CliRunner().invoke(cli, ["view", *data_args, "--output", str(out), "--size", "256x144", "--json",
                                 "--placeholders"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout), np.asarray(Image.open(out))[..., :3].astype(int)


def _sky(img):
    from wowgrass.render.frame import SKY

    return np.abs(img - np.array(SKY) * 255).sum(-1) < 12


def test_first_frame_of_the_sample_world_looks_across_grass(tmp_path):
    res, img = _first_view(tmp_path, [])
    assert res["frame"]["grass_instance_count"] > 2000  # grass in view
    sky = _sky(img)
    assert 0.05 < sky[:48].mean() and sky[96:].mean() < 0.01  # the horizon in view, ground below
    assert res["pitch_deg"] > -20


@pytest.mark.realdata
@pytest.mark.parametrize("name", ["continent", "azeroth"])
def test_first_frame_of_a_real_tile_stands_in_its_grass_and_shows_some_sky(tmp_path, realdata, name):
    adt, map_name, col, row, wdt = WORLDS[name]
    root = loose_world(tmp_path, realdata, adt, map_name, col, row, wdt)
    res, img = _first_view(tmp_path, ["--data", str(root)])
    assert res["frame"]["grass_instance_count"] > 100  # stand-ins for the tile's (missing) grass models
    assert _sky(img)[:72].mean() > 0.02  # not a wall of hillside
    assert _sky(img)[100:].mean() < 0.01


def test_first_frame_does_not_look_down_a_road(ctx):
    """A village green with a bare 8-unit road leaving it between dense hedges, along one of the
    headings the start tries (the most grass of any view is down that road), and a thinner meadow
    behind: no 4-unit corridor 16..60 units ahead within 6 units of the view's centre line is bare
    (without the road rule the view looks down the road)."""
    from wowgrass.render.world.firstframe import choose_start
    from wowgrass.grass.bundle import INSTANCE_DTYPE
    from wowgrass.render.world.synthetic import tile_origin
    from wowgrass.render.constants import TILE_SIZE

    x0, y0 = tile_origin(32, 32)
    px, py = x0 - TILE_SIZE / 2, y0 - TILE_SIZE / 2
    tile = synthetic_tile(32, 32, relief=0.5)
    rng = np.random.default_rng(4)
    # (u along the road, w across it): green, hedges, meadow
    u, w = np.concatenate([np.stack([rng.uniform(a, b, n), rng.uniform(c, d, n)]) for n, (a, b, c, d) in
                           ((3000, (-8, 8, -8, 8)), (8000, (8, 90, -14, 14)), (2000, (-90, -8, -30, 30)))],
                          axis=1)
    keep = ~((u > 8) & (np.abs(w) < 4))  # the road
    u, w = u[keep], w[keep]
    th = math.radians(11.25)  # heading 0 of the 16 the start tries
    x, y = px + u * math.cos(th) - w * math.sin(th), py + u * math.sin(th) + w * math.cos(th)
    inst = np.zeros(len(x), INSTANCE_DTYPE)
    inst["pos"][:, 0], inst["pos"][:, 1] = x, y
    inst["pos"][:, 2] = tile.heights_at(tile.chunk_index_at(x, y), x, y)
    inst["scale"] = 4096
    src = SyntheticSource(tiles=[(32, 32)], instances={(32, 32): {"synthetic\\grass0.m2": inst}}, relief=0.5)
    v = terrain_viewer(ctx, src)
    pos, yaw, pitch = choose_start(v.scene, (32, 32))
    d = np.array([math.cos(yaw), math.sin(yaw)])
    rel = np.stack([x, y], -1) - pos[:2]
    along = rel @ d
    across = rel[:, 0] * d[1] - rel[:, 1] * d[0]
    # the barest 4-unit corridor 16..60 units ahead within 6 units of the view's centre line
    span = (along > 16) & (along < 60)
    barest = min(int((span & (np.abs(across - off) < 2)).sum()) for off in np.arange(-6.0, 6.5, 1.0))
    assert barest >= 20, (barest, pos[:2] - (px, py), math.degrees(yaw))
    assert abs(v.scene.ground_height(*pos[:2]) + 1.7 - pos[2]) < 1e-3
    v.scene.release()


def test_view_lod_colors_and_stats_from_the_command_line(tmp_path):
    """--lod-colors tints the terrain by level (near red, far violet); --stats reads back the
    chunks the compute pass put at each level."""
    from click.testing import CliRunner
    from PIL import Image

    from wowgrass.cli.main import cli

    args = ["view", "--camera", "60,60", "--size", "160x90", "--samples", "0",
            "--no-grass", "--no-doodads", "--json"]
    frames = {}
    for name, extra in (("plain", []), ("lod", ["--lod-colors", "--stats"])):
        out = tmp_path / f"{name}.png"
        r = CliRunner().invoke(cli, [*args, *extra, "--output", str(out)])
        assert r.exit_code == 0, r.output
        frames[name] = (json.loads(r.stdout), np.asarray(Image.open(out))[..., :3].astype(int))
    res, img = frames["lod"]
    per_level = res["frame"]["terrain_chunks_per_level"]
    if per_level is None:
        pytest.skip("no OpenGL 4.3 (no compute pass): no LOD levels to colour")
    assert sum(1 for n in per_level if n) >= 3 and res["frame"]["triangle_count"] > 0
    changed = np.abs(img - frames["plain"][1]).sum(-1) > 40
    assert changed[45:].mean() > 0.5  # the ground is tinted
    bottom = img[80:].reshape(-1, 3).mean(axis=0)
    assert bottom[0] > bottom[2]  # near: red-ish (level 0/1), not blue


def test_the_arena_grows_and_reuses_slots_without_changing_the_picture(ctx):
    """Nine tiles (the arena starts with room for four; 18 layer names, room for 16): grown by GPU
    copies, then two tiles removed and added again into reused slots: the same frame as an arena
    that had the room from the start."""
    from wowgrass.render.camera import Camera
    from wowgrass.render.gl.context import create_offscreen_target
    from wowgrass.render.frame import Frame, FrameUniforms, draw_frame
    from wowgrass.render.passes import ColourPass
    from wowgrass.render.gl.programs import make_programs
    from wowgrass.render.world.streaming import tiles_centre
    from wowgrass.render.views import View

    keys = [(c, r) for c in range(31, 34) for r in range(31, 34)]
    arrays = {}
    for k in keys:
        a = T.build_terrain_arrays(synthetic_tile(*k, relief=20.0))
        a.layer_names = [f"{n}#{k}" for n in a.layer_names]  # distinct names: the layer array grows too
        a.layers[1, ..., 0] = (k[0] * 40 + k[1] * 17) % 256  # and distinct pictures
        arrays[k] = a
    tg = create_offscreen_target((192, 108), samples=0, ctx=ctx)
    progs = make_programs(ctx)
    cx, cy = tiles_centre(keys)
    cam = Camera(position=np.array([cx - 500.0, cy + 300.0, 250.0]))
    cam.look_at((cx, cy, 0.0))
    cam.far = 3000.0
    uniforms = FrameUniforms(ctx)

    def frame(ts):
        draw_frame(Frame(views=[View(cam, (0, 0, 192, 108))]), [ColourPass(tg)], [ts], uniforms)
        return tg.read_rgba()

    roomy = TerrainSet(ctx, progs)
    roomy.arena._grow(16)
    roomy.arena._grow_layers(32)
    for k in keys:
        roomy.add(k, arrays[k])
    want = frame(roomy)
    roomy.release()
    grown = TerrainSet(ctx, progs)
    for k in keys:
        grown.add(k, arrays[k])
    assert grown.arena.capacity == 16 and grown.arena._layer_capacity == 32
    assert np.array_equal(frame(grown), want)
    for k in keys[2:4]:
        grown.remove(k)
    for k in keys[2:4]:
        grown.add(k, arrays[k])
    assert grown.arena.slots == 9
    assert np.array_equal(frame(grown), want)
    assert (np.abs(want[..., :3].astype(int) - np.array([158, 189, 219])).sum(-1) > 30).mean() > 0.3
    grown.release()
    uniforms.release()


def test_a_slot_handed_out_before_its_tile_is_registered_is_not_read_or_drawn(ctx):
    """A tile's terrain uploads in steps (TerrainArena.add_steps): its slot exists from the first
    step, its tile only after the last. Frames in between must cover only the slots whose chunk
    tables were written: reading past them made the compute pass write commands from
    uninitialised memory (on the H200: a 6 s frame drawing garbage ranges)."""
    v = terrain_viewer(ctx, SyntheticSource(tiles=[(32, 32), (33, 32), (32, 33), (33, 33)], relief=30.0))
    ts = v.scene.terrain
    from wowgrass.render.constants import TILE_SIZE, ZEROPOINT

    _aim(v, ZEROPOINT - 33 * TILE_SIZE + 20, ZEROPOINT - 33 * TILE_SIZE - 30, 1.7, 0.3, -5)
    v.render_frame(0.0)
    covered = ts.arena.slots
    assert covered == 4 == len(ts.tiles)
    steps = ts.arena.add_steps(T.build_terrain_arrays(synthetic_tile(34, 32)))
    steps[0][1]()  # the vertices: a fifth slot, past the tables' capacity of four
    assert ts.arena.slots == covered + 1
    v.render_frame(0.0)
    cmds = ts.read_commands(v.views[0])
    assert len(cmds) == covered * 256
    limit = max(int(t.lod_count.max()) for t in ts.tiles.values())
    assert cmds["count"].max() <= limit and cmds["count"].max() > 0
    for _, step in steps[1:-1]:
        step()
    ts.register((34, 32), steps[-1][1]())
    v.render_frame(0.0)
    assert len(ts.read_commands(v.views[0])) == 5 * 256
    v.scene.release()
