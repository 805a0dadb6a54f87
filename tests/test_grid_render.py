"""The camera-grid grass path on llvmpipe: what its vertex stage computes, read back by transform
feedback (GridGrass.capture), and the wind options of both paths (sway.glsl)."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gl

from wowgrass.formats.adt import TILE_SIZE  # noqa: E402
from wowgrass.grass.grid_tiles import build_grid_tile, chunk_of_cells, fan_heights, instance_cells, owner_cells  # noqa: E402
from wowgrass.render.constants import WIND_FALLOFFS, WIND_MODES  # noqa: E402
from wowgrass.render.world.synthetic import random_instances, synthetic_tile, tile_origin  # noqa: E402

WIND_OPTIONS = [(w, f) for w in WIND_MODES for f in WIND_FALLOFFS]


def camera(x, y, z=30.0):
    from wowgrass.render.camera import Camera

    return Camera(position=np.array([x, y, z], np.float64))


def make_grid(ctx, tiles, *, wind="classic", falloff="smoothstep", mesh_height=0.6, rings=False):
    """A GridGrass with ``tiles`` [(key, GridTile)] resident, one crossed-quad mesh per model."""
    from wowgrass.render.sources.grass_grid import GridGrass
    from wowgrass.render.gl.meshes import GpuMesh, crossed_quads
    from wowgrass.render.gl.programs import make_programs

    from wowgrass.render.constants import GrassSettings, RingSettings

    progs = make_programs(ctx, grass_path="grid", wind=wind, wind_falloff=falloff)
    # LOD rings off: the counts compared with the bundle are before any thinning with distance
    settings = GrassSettings(rings=RingSettings(enabled=rings))
    grid = GridGrass(ctx, progs, settings, capacity=2)  # small: adding more tiles must grow it
    meshes = {}
    for key, tile in tiles:
        for m in tile.models:
            if m not in meshes:
                meshes[m] = GpuMesh(ctx, crossed_quads(height=mesh_height))
        grid.add_tile(key, tile, meshes)
    return grid


def synthetic(col, row, n=30000, models=3, seed=0, hole_chunk=None):
    adt = synthetic_tile(col, row, hole_chunk=hole_chunk)
    x0, y0 = tile_origin(col, row)
    inst = random_instances(n, (x0 - TILE_SIZE, y0 - TILE_SIZE), (x0, y0), tile=adt, seed=seed)
    grass = {f"m{k}.m2": inst[k::models] for k in range(models)}
    return adt, grass


def keyed(cap):
    """{(cell i, cell j, blade): root} of a capture."""
    return {(int(c[0]), int(c[1]), int(b)): tuple(r) for c, b, r in zip(cap["cell"], cap["blade"], cap["root"])}


def capture_tile(grid, tile, model, **kw):
    """Every live blade of ``model`` whose lattice cell ``tile`` owns: four captures, one camera per
    quadrant (each quadrant lies within the draw distance of its camera)."""
    x0, y0 = tile_origin(tile.col, tile.row)
    seen = {}
    for fx in (0.25, 0.75):
        for fy in (0.25, 0.75):
            cap = grid.capture(camera(x0 - fx * TILE_SIZE, y0 - fy * TILE_SIZE), 0.0, model, **kw)
            gr, gc = owner_cells(cap["cell"][:, 0], cap["cell"][:, 1])
            mine = (gr // 128 == tile.row) & (gc // 128 == tile.col)
            for c, b, r in zip(cap["cell"][mine], cap["blade"][mine], cap["root"][mine]):
                seen[(int(c[0]), int(c[1]), int(b))] = r
    if not seen:
        return np.zeros((0, 2), np.int64), np.zeros((0, 3))
    keys = np.array(list(seen), np.int64)
    return keys[:, :2], np.array(list(seen.values()))


def bundle_counts(tile, grass):
    """(256, models) bundle instances per chunk (of the cell each instance counts for) and model."""
    out = np.zeros((256, len(tile.models)), np.int64)
    for k, cell in enumerate(instance_cells(tile.col, tile.row, grass, tile.models)):
        out[:, k] = np.bincount(chunk_of_cells(cell // 128, cell % 128), minlength=256)
    return out


def test_blades_stand_within_the_jitter_reach_of_their_adt_cell(ctx):
    # so counted by where they stand instead, a blade can only change chunk within 0.9 units of an edge
    adt, grass = synthetic(32, 32, n=20000, models=1)
    tile = build_grid_tile(adt, grass)
    grid = make_grid(ctx, [((32, 32), tile)])
    cells, roots = capture_tile(grid, tile, tile.models[0])
    gr, gc = owner_cells(cells[:, 0], cells[:, 1])
    from wowgrass.formats.adt import UNIT_SIZE, ZEROPOINT

    x_hi, y_hi = ZEROPOINT - gr * UNIT_SIZE, ZEROPOINT - gc * UNIT_SIZE
    out_x = np.maximum(roots[:, 0] - x_hi, x_hi - UNIT_SIZE - roots[:, 0])
    out_y = np.maximum(roots[:, 1] - y_hi, y_hi - UNIT_SIZE - roots[:, 1])
    assert max(out_x.max(), out_y.max()) <= 0.36 * 2.5 + 1e-3


def grid_counts(grid, tile):
    """(256, models) grid blades per chunk and model, read back from the GPU, each counted for the
    chunk holding its slot's anchor (the rule that makes the paths comparable)."""
    out = np.zeros((256, len(tile.models)), np.int64)
    for k, m in enumerate(tile.models):
        cells, _ = capture_tile(grid, tile, m)
        out[:, k] = np.bincount(chunk_of_cells(*owner_cells(cells[:, 0], cells[:, 1])), minlength=256)
    return out


def assert_counts_match(grid, tile, grass, label):
    assert tile.dropped == 0
    want = bundle_counts(tile, grass)
    by_anchor = grid_counts(grid, tile)
    # the rule: a blade counts for the chunk of its slot anchor, an instance for the chunk it lies in
    rel = np.abs(by_anchor - want) / np.maximum(want, 1)
    assert rel.max() <= 0.10, f"{label}: per chunk and model off by up to {rel.max():.1%}"
    assert (by_anchor == want).all(), f"{label}: {np.abs(by_anchor - want).sum()} blades moved chunk"
    return by_anchor, want


# ----------------------------------------------------------------------------- stable cells


def test_blades_stay_on_their_world_cells_as_the_camera_moves(ctx):
    adt, grass = synthetic(32, 32, n=20000, models=2)
    tile = build_grid_tile(adt, grass)
    grid = make_grid(ctx, [((32, 32), tile)])
    x0, y0 = tile_origin(32, 32)
    a = camera(x0 - 250.0, y0 - 260.0)
    b = camera(x0 - 250.0 - 37.3, y0 - 260.0 + 51.9)  # 20.7 by 14.9 slots away
    for m in tile.models:
        ka, kb = keyed(grid.capture(a, 0.0, m)), keyed(grid.capture(b, 0.0, m))
        both = set(ka) & set(kb)
        assert len(both) > 1000
        assert all(ka[k] == kb[k] for k in both), "a blade moved with the camera"
        # and every cell both grids cover and both draw distances reach holds the same blades in both
        def near(k, cam):
            x, y = (np.array(k[:2]) + 0.36) * 2.5
            return np.hypot(x - cam.position[0], y - cam.position[1]) < 215.0
        assert {k for k in ka if near(k, b)} <= set(kb)
        assert {k for k in kb if near(k, a)} <= set(ka)


def test_blades_stand_on_the_terrain_and_inside_the_jitter_square(ctx):
    adt, grass = synthetic(32, 32, n=20000, models=1)
    tile = build_grid_tile(adt, grass)
    grid = make_grid(ctx, [((32, 32), tile)])
    x0, y0 = tile_origin(32, 32)
    cap = grid.capture(camera(x0 - 260.0, y0 - 270.0), 0.0, tile.models[0])
    r = cap["root"]
    assert np.abs(fan_heights(tile.heights, 32, 32, r[:, 0], r[:, 1]) - r[:, 2]).max() < 0.01
    frac = r[:, :2] / 2.5 - cap["cell"]
    assert frac.min() >= -1e-3 and frac.max() <= 0.72 + 1e-3


def test_lod_rings_thin_the_grid_with_distance(ctx):
    adt, grass = synthetic(32, 32, n=30000, models=1)
    tile = build_grid_tile(adt, grass)
    x0, y0 = tile_origin(32, 32)
    cam = camera(x0 - 266.0, y0 - 266.0)
    full = make_grid(ctx, [((32, 32), tile)]).capture(cam, 0.0, tile.models[0])
    thin = make_grid(ctx, [((32, 32), tile)], rings=True).capture(cam, 0.0, tile.models[0])
    d_full = np.hypot(*(full["root"][:, :2] - cam.position[:2]).T)
    d_thin = np.hypot(*(thin["root"][:, :2] - cam.position[:2]).T)
    near = (d_full < 60).sum(), (d_thin < 60).sum()
    far = (d_full > 180).sum(), (d_thin > 180).sum()
    assert near[0] == near[1]  # ring 0 keeps everything
    assert 0.1 < far[1] / far[0] < 0.3  # the outer ring keeps 0.2
    assert set(keyed(thin)) <= set(keyed(full))


# ----------------------------------------------------------------------------- control texture


def test_no_blade_where_the_control_texture_says_none(ctx):
    # a tile with random layers, noEffectDoodad masks, holes and a cobblestone (road) layer, placed
    # by the coverage strategy, its bundle's instances as the control's input
    from placement_fakes import random_tile, std_catalog

    from wowgrass.grass.bundle import pack_instances
    from wowgrass.formats.adt import AdtTile
    from wowgrass.grass.placement import CoveragePlacement

    fake, cat = random_tile(seed=4, col=36, row=29), std_catalog(has_weights=True)
    adt = AdtTile.from_arrays(fake.col, fake.row, heights=fake.heights, base_heights=fake.positions[:, 2],
                              textures=fake.textures, n_layers=fake.n_layers, layer_texture=fake.layer_texture,
                              layer_effect=fake.layer_effect, alpha=fake.alpha, holes=fake.holes,
                              no_effect_doodad=fake.no_effect_doodad, doodad_mapping=fake.doodad_mapping)
    inst = CoveragePlacement().place(adt, cat, map_name="Fake")
    clumps, _ = CoveragePlacement().cell_clumps(adt, cat)
    grass = {}
    for k in np.unique(inst.model):
        sel = inst.model == k
        grass[cat.models[k]] = pack_instances(inst.pos[sel], inst.yaw[sel], inst.scale[sel])
    tile = build_grid_tile(adt, grass)
    grid = make_grid(ctx, [((adt.col, adt.row), tile)])
    bare = clumps.reshape(-1) == 0  # per MCNK cell: masked, hole, road, uncovered or no effect
    assert bare.any() and not bare.all()
    drawn = 0
    for m in tile.models:
        cells, roots = capture_tile(grid, tile, m)
        gr, gc = owner_cells(cells[:, 0], cells[:, 1])
        flat = chunk_of_cells(gr, gc) * 64 + (gr % 8) * 8 + gc % 8
        assert not bare[flat].any(), f"{m}: a blade in a cell the placement leaves bare"
        # ... and the control texture's own count for each drawn slot is not zero
        li, lj = cells[:, 0] - tile.slot_i0, cells[:, 1] - tile.slot_j0
        assert (tile.counts[li, lj].sum(axis=1) > 0).all()
        drawn += len(cells)
    assert drawn == len(inst)


def test_counts_per_chunk_and_model_match_the_bundle_synthetic(ctx):
    adt, grass = synthetic(30, 34, n=40000, models=3, hole_chunk=100)
    tile = build_grid_tile(adt, grass)
    grid = make_grid(ctx, [((30, 34), tile)])
    assert_counts_match(grid, tile, grass, "synthetic")


def _bundle_grass(raw, catalog, map_name, **kw):
    from wowgrass.grass.bake import bake_tile
    from wowgrass.grass.bundle import read_bundle
    from wowgrass.formats.adt import AdtTile

    adt = AdtTile.from_bytes(raw, **kw)
    res = bake_tile(raw, catalog, map_name=map_name, tile=adt, big_alpha=kw.get("big_alpha", False))
    with read_bundle(res.path) as b:
        return adt, {m.path: np.array(m.instances) for m in b.models if len(m)}


def test_counts_per_chunk_and_model_match_the_bundle_sample_world(ctx):
    from wowgrass.game.data import open_data
    from wowgrass.render.world.game_tiles import GameSource
    from wowgrass.samples import MAP_NAME, sample_data_path

    with open_data(sample_data_path()) as data:
        src = GameSource(data, MAP_NAME, grass_path="grid")
        payloads = {key: src.load_tile(*key) for key in src.tiles}
    grid = make_grid(ctx, [(key, p["grid"]) for key, p in payloads.items()])
    assert len(payloads) == 4 and grid._capacity >= 4
    # two diagonal tiles of four (each read back costs seconds on llvmpipe; the tiles are alike)
    for key in sorted(payloads)[::3]:
        assert_counts_match(grid, payloads[key]["grid"], payloads[key]["grass"], f"sample tile {key}")


def test_counts_per_chunk_and_model_match_the_bundle_real_tiles(ctx, realdata):
    from wowgrass.grass.bake import load_catalog

    for name, dbc, map_name in (("continent4229.adt", "3.3.5", "Continent"), ("Azeroth_38_46.adt", "1.12", "Azeroth")):
        catalog = load_catalog(dbc_dir=realdata / "dbc" / dbc)
        adt, grass = _bundle_grass((realdata / "adt" / name).read_bytes(), catalog, map_name)
        tile = build_grid_tile(adt, grass)
        grid = make_grid(ctx, [((adt.col, adt.row), tile)])
        by_anchor, want = assert_counts_match(grid, tile, grass, name)
        assert want.sum() > 5000 and by_anchor.sum() == want.sum()


# ----------------------------------------------------------------------------- hashes


def hash_statistics(yaw: np.ndarray, phase: np.ndarray, bins: int = 8):
    """Pearson correlation and chi-square / dof of the (yaw, phase) joint histogram against independence."""
    r = float(np.corrcoef(yaw, phase)[0, 1])
    h, _, _ = np.histogram2d(yaw, phase, bins=bins, range=[[0, 1], [0, 1]])
    expect = np.outer(h.sum(1), h.sum(0)) / h.sum()
    return r, float(((h - expect) ** 2 / expect).sum() / (bins - 1) ** 2)


def test_yaw_and_phase_hashes_are_uncorrelated_over_a_tile(ctx):
    # a tile at the map's edge: world cells near 17,000 units, where sin() of unwrapped cells fails
    adt, grass = synthetic(1, 62, n=60000, models=1)
    tile = build_grid_tile(adt, grass)
    grid = make_grid(ctx, [((1, 62), tile)])
    x0, y0 = tile_origin(1, 62)
    cam = camera(x0 - 266.0, y0 - 266.0)
    m = tile.models[0]
    # yaw from a root-height vertex at model (1, 0): it stands at root + (cos yaw, sin yaw)
    ref = grid.capture(cam, 0.0, m, vertex=(1.0, 0.0, 0.0))
    d = ref["vertex"][:, :2] - ref["root"][:, :2]
    yaw = (np.arctan2(d[:, 1], d[:, 0]) / (2 * np.pi)) % 1.0
    # phase from the tip's classic sway (0.22 * sin(1.7 t + 2 pi phase) along (1, 0.35)) at two times
    t1 = np.pi / 2 / 1.7
    s = grid.capture(cam, 0.0, m, vertex="tip")
    c = grid.capture(cam, t1, m, vertex="tip")
    sin_p = (s["vertex"][:, 0] - s["root"][:, 0]) / 0.22
    cos_p = (c["vertex"][:, 0] - c["root"][:, 0]) / 0.22
    phase = (np.arctan2(sin_p, cos_p) / (2 * np.pi)) % 1.0
    assert len(yaw) == len(phase) > 20000
    r, chi = hash_statistics(yaw, phase)
    assert abs(r) < 0.02 and chi < 2.0, (r, chi)
    # each is uniform on its own (a degenerate hash piles up)
    for v in (yaw, phase):
        assert np.histogram(v, bins=16, range=(0, 1))[0].min() > len(v) / 16 * 0.85
    # the statistic does see a correlation when there is one
    r_same, chi_same = hash_statistics(yaw, np.clip(yaw + 0.05 * (phase - 0.5), 0.0, 0.999))
    assert r_same > 0.9 and chi_same > 50


# ----------------------------------------------------------------------------- wind


@pytest.mark.parametrize("wind,falloff", WIND_OPTIONS)
def test_grid_wind_moves_tips_not_roots(ctx, wind, falloff):
    adt, grass = synthetic(32, 32, n=6000, models=1)
    tile = build_grid_tile(adt, grass)
    grid = make_grid(ctx, [((32, 32), tile)], wind=wind, falloff=falloff)
    x0, y0 = tile_origin(32, 32)
    cam = camera(x0 - 266.0, y0 - 266.0)
    m = tile.models[0]
    roots = [grid.capture(cam, t, m, vertex="root")["vertex"] for t in (0.0, 0.7, 2.3)]
    tips = [grid.capture(cam, t, m, vertex="tip")["vertex"] for t in (0.0, 0.7, 2.3)]
    assert all(np.array_equal(roots[0], r) for r in roots[1:]), "roots moved"
    moved = np.hypot(*(tips[1] - tips[0])[:, :2].T)
    assert np.median(moved) > 0.02 and np.abs(tips[1][:, 2] - tips[0][:, 2]).max() == 0.0


SWAY_PROBE = """#version 330 core
#include "sway.glsl"
uniform float uTime;
uniform float uHeight;  // the height fraction of the "tip"
in vec2 in_xy;          // an instance's world XY
out vec4 t_offset;      // model-space sway offset at the root (xy) and at the tip (zw)
void main() {
    mat4 p = mat4(vec4(0.0, 0.0, 160.0, 220.0), vec4(uTime, WOW_GRASS_WIND_SPEED, WOW_GRASS_WIND_AMPLITUDE,
                  WOW_GRASS_WIND_ROOT_FRACTION), vec4(WOW_GRASS_WIND_PHASE_X, WOW_GRASS_WIND_PHASE_Y,
                  normalize(vec2(1.0, 0.35))), vec4(0.0, 0.6, 1.0, 0.0));
    vec2 wind = grassWindInModel(vec2(cos(in_xy.x), sin(in_xy.x)));
    t_offset = vec4(grassSwayOffset(0.0, in_xy, p, wind), grassSwayOffset(uHeight, in_xy, p, wind));
    gl_Position = vec4(0.0);
}
"""


def sway_offsets(ctx, wind, falloff, times, xy, height=1.0):
    """The instanced path's sway (grassSwayOffset, what grass.glsl adds) at root and tip."""
    import moderngl

    from wowgrass.render.constants import wind_defines
    from wowgrass.render.gl.programs import preprocess_source

    prog = ctx.program(vertex_shader=preprocess_source(SWAY_PROBE, "VERTEX_SHADER", wind_defines(wind, falloff)),
                       varyings=["t_offset"])
    vbo = ctx.buffer(np.asarray(xy, "f4").tobytes())
    vao = ctx.vertex_array(prog, [(vbo, "2f", "in_xy")])
    fbo = ctx.simple_framebuffer((1, 1))
    fbo.use()
    out = []
    for t in times:
        buf = ctx.buffer(reserve=len(xy) * 16)
        prog["uTime"].value = t
        prog["uHeight"].value = height
        vao.transform(buf, mode=moderngl.POINTS, vertices=len(xy))
        out.append(np.frombuffer(buf.read(), "f4").reshape(-1, 4).copy())
        buf.release()
    for o in (vao, vbo, prog, fbo):
        o.release()
    return out


@pytest.mark.parametrize("wind,falloff", WIND_OPTIONS)
def test_instanced_wind_moves_tips_not_roots(ctx, wind, falloff):
    rng = np.random.default_rng(3)
    xy = rng.uniform(-300, 300, (2000, 2))
    outs = sway_offsets(ctx, wind, falloff, (0.0, 0.7, 2.3), xy)
    for o in outs:
        assert np.abs(o[:, :2]).max() == 0.0, "the root moved"
    moved = np.hypot(*(outs[1][:, 2:] - outs[0][:, 2:]).T)
    assert np.median(moved) > 0.005


def test_wind_options_differ_and_the_gust_is_a_travelling_band(ctx):
    xy = np.column_stack([np.linspace(-60, 60, 600), np.zeros(600)])
    times = (0.0, 0.5)
    classic, two, gust = (sway_offsets(ctx, w, "smoothstep", times, xy) for w in WIND_MODES)
    assert not np.allclose(classic[0][:, 2:], two[0][:, 2:])
    extra = [g[:, 2:] - c[:, 2:] for g, c in zip(gust, classic)]  # the gust's push alone
    strength = [np.hypot(*e.T) for e in extra]
    # a band: pushed somewhere, calm elsewhere, and the band moves along the wind with time
    assert (strength[0] > 0.05).any() and (strength[0] < 1e-6).mean() > 0.3
    assert not np.array_equal(strength[0] > 1e-6, strength[1] > 1e-6)



def test_quadratic_falloff_is_the_height_fraction_squared(ctx):
    xy = np.random.default_rng(5).uniform(-100, 100, (500, 2))
    smooth = sway_offsets(ctx, "classic", "smoothstep", (0.4,), xy, height=0.5)[0]
    quad = sway_offsets(ctx, "classic", "quadratic", (0.4,), xy, height=0.5)[0]
    tip = sway_offsets(ctx, "classic", "quadratic", (0.4,), xy)[0]
    h = (0.5 - 0.15) / 0.85
    ok = np.abs(tip[:, 2]) > 1e-3
    assert np.allclose(quad[ok, 2] / tip[ok, 2], 0.25, atol=1e-4)
    assert np.allclose(smooth[ok, 2] / tip[ok, 2], h * h * (3 - 2 * h), atol=1e-4)


# ----------------------------------------------------------------------------- the command


def test_view_grass_grid_renders_like_the_instanced_path_and_caches_its_control(tmp_path, monkeypatch):
    import json

    from click.testing import CliRunner
    from PIL import Image

    from wowgrass.cli.main import cli
    from wowgrass.samples import sample_data_path

    data = str(sample_data_path())
    monkeypatch.setenv("WOWGRASS_CACHE", str(tmp_path / "cache"))  # bundles and control files of its own

    def view(*args):
        r = CliRunner().invoke(cli, ["view", "--data", data, "--size", "200x120", "--samples", "0", "--camera", "120,80,68",
                                     "--target", "150,120,62", "--json", *args])
        assert r.exit_code == 0, r.output
        return json.loads(r.stdout)

    frames = {}
    for path in ("instanced", "grid"):
        out = tmp_path / f"{path}.png"
        res = view("--grass", path, "-o", str(out))
        assert res["grass_path"] == path and res["frame"]["grass_instance_count"] > 0
        frames[path] = np.asarray(Image.open(out).convert("RGB")).astype(int)
    grid_run = res
    assert [t["cache_hit"] for t in grid_run["grid_tiles"]] == [False] * len(grid_run["grid_tiles"])
    assert all(t["path"].endswith(".wgc") for t in grid_run["grid_tiles"])
    again = view("--grass", "grid", "-o", str(tmp_path / "again.png"), "--wind", "gust", "--wind-falloff", "quadratic")
    assert all(t["cache_hit"] for t in again["grid_tiles"]) and again["wind"] == "gust"
    # the same camera sees grass in the same places: green where the ground is grassy, in both
    green = {k: (v[..., 1] > v[..., 0] + 10) & (v[..., 1] > v[..., 2] + 10) for k, v in frames.items()}
    rows = {k: g.mean(axis=1) for k, g in green.items()}
    assert abs(green["grid"].mean() - green["instanced"].mean()) < 0.1
    assert np.corrcoef(rows["grid"], rows["instanced"])[0, 1] > 0.8


def test_view_rejects_unknown_grass_and_wind():
    from click.testing import CliRunner

    from wowgrass.cli.main import cli

    for args in (["--grass", "meadow"], ["--wind", "storm"], ["--wind-falloff", "cubic"]):
        r = CliRunner().invoke(cli, ["view", *args])
        assert r.exit_code == 2 and "Invalid value" in r.output
