"""Liquids at map scale (render/world/liquid_tiles.merged_mesh): flat liquid joined into a few
quads that cover exactly the cells the per-cell mesh does, at the same heights and depths; far
tiles' lean liquid; the sample world's sea (every chunk an ocean layer, the default world's
bytes unchanged)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from wowgrass.formats import liquid as L
from wowgrass.formats.adt import ZEROPOINT, AdtTile
from wowgrass.game.liquid_types import LiquidTypes
from wowgrass.render.world import liquid_tiles as LT

COL, ROW = 31, 33


def _tile(level=10.0):
    """A tile sloping from 0 (north) to 30 (south) with: an ocean at ``level`` over every chunk
    but cells missing in chunk 5, a water layer at 20 sharing chunk 40 with the ocean, and a
    sloping river in chunk 200."""
    from wowgrass.formats.adt import VERTEX_ROWCOL

    r = np.arange(256) // 16
    h = (r[:, None] * 8 + VERTEX_ROWCOL[None, :, 0]) * (30.0 / 128)   # cell rows south -> height
    t = AdtTile.from_arrays(COL, ROW, abs_heights=h)
    layers = []
    for c in range(256):
        ex = np.ones((8, 8), bool)
        if c == 5:
            ex[2:5, 3:7] = False
        layers.append(L.mh2o_layer(c, 2, L.OCEAN, level, ex, fmt=L.LVF_HEIGHT_DEPTH))
    layers.append(L.mh2o_layer(40, 1, L.WATER, 20.0, fmt=L.LVF_HEIGHT_DEPTH))
    slope = 5.0 + np.arange(9)[:, None] * 0.5 + np.zeros((1, 9))
    layers.append(L.mh2o_layer(200, 1, L.WATER, slope, fmt=L.LVF_HEIGHT_DEPTH))
    L.put_tile_liquid(t, L.TileLiquid(layers=np.concatenate(layers), source=L.SOURCE_MH2O), fmt="mh2o")
    return t


def _cell_centres(mesh):
    """(k, 2) XY of each cell centre of a per-cell mesh and the heights/depths at them."""
    tri = mesh.vertices[mesh.indices.reshape(-1, 6)]           # two triangles a cell
    p = tri["pos"][:, [0, 2]].mean(axis=1)                       # the diagonal's midpoint: the centre
    return p[:, :2], p[:, 2], tri["depth"][:, [0, 2]].mean(axis=1)


def _covering(mesh, xy):
    """For each point: how many triangles of ``mesh`` cover it, and the height there (XY projection)."""
    tri = mesh.vertices["pos"][mesh.indices.reshape(-1, 3)].astype(np.float64)   # (m, 3, 3)
    a, b, c = tri[:, 0, :2], tri[:, 1, :2], tri[:, 2, :2]
    p = xy[:, None, :]

    def cross(o, u, v):
        return (u[..., 0] - o[..., 0]) * (v[..., 1] - o[..., 1]) - (u[..., 1] - o[..., 1]) * (v[..., 0] - o[..., 0])

    area = cross(a, b, c)[None]
    wa, wb, wc = cross(p, b, c) / area, cross(a, p, c) / area, cross(a, b, p) / area
    inside = (wa > 1e-9) & (wb > 1e-9) & (wc > 1e-9)
    z = wa * tri[None, :, 0, 2] + wb * tri[None, :, 1, 2] + wc * tri[None, :, 2, 2]
    return inside.sum(axis=1), np.where(inside, z, 0).sum(axis=1) / np.maximum(inside.sum(axis=1), 1)


def test_merged_mesh_covers_the_same_cells_with_far_fewer_triangles():
    t = _tile()
    cells, err = LT.adt_liquid_mesh(t, LiquidTypes())
    merged, err2 = LT.adt_liquid_mesh(t, LiquidTypes(), merged=True)
    assert err is None and err2 is None
    assert merged.cells == cells.cells == 256 * 64 - 12 + 64 + 64
    assert merged.types == cells.types
    # the ocean over 254 chunks joins; chunks 40 and 200 (two layers each, one the sloping river)
    # stay a quad a cell: 4 x 64 cells
    assert merged.triangles < 2 * 4 * 64 + 40, merged.triangles
    assert cells.triangles == 2 * cells.cells
    xy, _, _ = _cell_centres(cells)
    xy = xy + np.array([0.13, 0.31]) * LT.UNIT     # off the cells' diagonals and edges
    chunk = LT.UNIT * 8
    near = np.zeros(len(xy), bool)                 # every cell of chunks 5, 40, 200, a sample elsewhere
    for c in (5, 40, 200):
        px, py = t.positions[c, 0], t.positions[c, 1]
        near |= (xy[:, 0] < px) & (xy[:, 0] > px - chunk) & (xy[:, 1] < py) & (xy[:, 1] > py - chunk)
    xy = xy[near | (np.arange(len(xy)) % 97 == 0)]
    n0, z = _covering(cells, xy)
    n, zm = _covering(merged, xy)
    assert (n == n0).all()
    shared = np.zeros(len(xy), bool)
    for c in (40, 200):
        px, py = t.positions[c, 0], t.positions[c, 1]
        shared |= (xy[:, 0] < px) & (xy[:, 0] > px - chunk) & (xy[:, 1] < py) & (xy[:, 1] > py - chunk)
    # every cell centre covered once (twice where two layers share the cell, as before) at its height
    assert (n[~shared] == 1).all()
    assert (n[shared] == 2).all()
    assert np.allclose(zm[~shared], z[~shared], atol=1e-4)
    assert (z[shared] > 5.0).all()
    # a missing cell stays uncovered
    hole = t.positions[5, :2] - np.array([3.5, 4.5]) * LT.UNIT
    assert _covering(merged, hole[None])[0][0] == 0


def test_merged_depth_comes_from_the_tile_depth_map():
    t = _tile()
    merged, _ = LT.adt_liquid_mesh(t, LiquidTypes(), merged=True)
    v = merged.vertices
    mapped = v["tex"][:, 2] >= 0
    assert mapped.any() and merged.depth_map is not None and merged.depth_map.shape == (129, 129)
    # texel (x, y) of a mapped vertex is its place on the tile's vertex grid; the map holds the
    # ocean's depth over the ground there (over DEPTH_MAP_SCALE, 8 bits)
    tx, ty = v["tex"][mapped, 0].astype(int), v["tex"][mapped, 1].astype(int)
    assert np.allclose(v["tex"][mapped, :2], np.stack([tx, ty], axis=1)) and tx.max() == ty.max() == 128
    # the slope: the ground at texel row ty is ty * 30/128 high
    want = np.clip((10.0 - ty * (30.0 / 128)) / LT.DEPTH_MAP_SCALE, 0, 1)
    got = merged.depth_map[ty, tx] / 255.0
    assert np.allclose(got, want, atol=1 / 255 + 1e-6)
    # the per-cell vertices keep their own depth
    own = ~mapped
    assert (v["depth"][own] >= 0).all()


def test_lean_far_liquid_leaves_out_what_its_ground_hides():
    t = _tile()
    near, _ = LT.adt_liquid_mesh(t, LiquidTypes(), merged=True)
    far, _ = LT.adt_liquid_mesh(t, LiquidTypes(), merged=True, step=4)
    assert 0 < far.triangles <= near.triangles
    assert far.vertices["pos"].nbytes <= near.vertices["pos"].nbytes
    # the ocean at 10 lies under the ground south of row 42 (10 / (30/128)): nothing drawn there
    south = ZEROPOINT - ROW * 1600 / 3 - 60 * LT.UNIT
    xy = np.array([[south, ZEROPOINT - COL * 1600 / 3 - 100.3]])
    assert _covering(near, xy)[0][0] == 1 and _covering(far, xy)[0][0] == 0
    north = xy + np.array([[50 * LT.UNIT, 0.0]])
    assert _covering(far, north)[0][0] == 1


def test_ocean_tile_of_one_level_is_two_triangles():
    t = AdtTile.from_arrays(COL, ROW, abs_heights=np.full((256, 145), -50.0))
    layers = [L.mh2o_layer(c, 2, L.OCEAN, 0.0, fmt=L.LVF_DEPTH) for c in range(256)]
    L.put_tile_liquid(t, L.TileLiquid(layers=np.concatenate(layers), source=L.SOURCE_MH2O), fmt="mh2o")
    merged, _ = LT.adt_liquid_mesh(t, LiquidTypes(), merged=True)
    per_cell, _ = LT.adt_liquid_mesh(t, LiquidTypes())
    assert per_cell.triangles == 2 * 256 * 64 and merged.triangles == 2 and merged.cells == 256 * 64
    lo, hi = merged.vertices["pos"].min(axis=0), merged.vertices["pos"].max(axis=0)
    assert np.allclose(hi[:2] - lo[:2], 1600 / 3, atol=1e-3)


@pytest.mark.parametrize("build", ["3.3.5", "1.12"])
def test_sample_sea_gives_every_chunk_an_ocean_layer(build):
    from wowgrass.formats.adt import write_adt
    from wowgrass.game.tiles import read_adt
    from wowgrass.samples.features import SEA_LEVEL
    from wowgrass.samples.heights import SampleTerrain
    from wowgrass.samples.sample_world import tile_object

    terrain = SampleTerrain((1, 1), 0)
    plain = write_adt(tile_object(build, terrain, 32, 32, 1))
    sea = write_adt(tile_object(build, terrain, 32, 32, 1, SEA_LEVEL))
    assert plain == write_adt(tile_object(build, terrain, 32, 32, 1, None))   # no sea: the same bytes
    t = read_adt(sea, "sea.adt", build == "3.3.5")
    lay = L.tile_liquid(t).layers
    ocean = lay[lay["kind"] == L.OCEAN]
    assert sorted(ocean["chunk"].tolist()) == list(range(256)) and ocean["exists"].all()
    assert np.allclose(L.heights_in_use(ocean), SEA_LEVEL)
    assert (ocean["depth"] > 0).any() and (ocean["depth"] == 0).any()    # deep water and dry land
    assert (lay["kind"] == L.WATER).any()                                # the lake is still there
    # no grass grows under the sea
    ground = t.abs_heights[:, 0::17][:, :1]
    low = np.flatnonzero(ground[:, 0] < SEA_LEVEL - 5)
    if len(low):
        assert t.no_effect_doodad[low].any()


@pytest.mark.gl
def test_merged_liquid_draws_like_the_per_cell_one(ctx):
    """The GL side: a tile's depth map gets a slice (the array grows, a freed slice is taken
    again), and the joined quads draw the shore as the quad a cell does."""
    from wowgrass.render.camera import Camera
    from wowgrass.render.frame import Frame, FrameUniforms, draw_frame
    from wowgrass.render.gl.context import create_offscreen_target
    from wowgrass.render.gl.programs import make_programs
    from wowgrass.render.passes import ColourPass
    from wowgrass.render.sources.liquids import LiquidSet
    from wowgrass.render.views import View

    t = _tile()
    merged, _ = LT.adt_liquid_mesh(t, LiquidTypes(), merged=True)
    cells, _ = LT.adt_liquid_mesh(t, LiquidTypes())
    target = create_offscreen_target((160, 90), 0, ctx=ctx)
    progs = make_programs(ctx)
    uniforms = FrameUniforms(ctx)
    x0, y0 = ZEROPOINT - ROW * 1600 / 3, ZEROPOINT - COL * 1600 / 3
    cam = Camera(position=np.array([x0 - 266.0 + 1.0, y0 - 266.0, 420.0]))
    cam.look_at((x0 - 266.0, y0 - 266.0, 10.0))
    cam.far, cam.near = 2000.0, 1.0
    images = []
    try:
        for mesh in (cells, merged):
            liq = LiquidSet(ctx, progs)
            liq.add((COL, ROW), mesh)
            view = View(cam, (0, 0, 160, 90))
            draw_frame(Frame(views=[view], fog=(5000.0, 6000.0)), [ColourPass(target)], [liq], uniforms)
            images.append(target.read_rgba()[..., :3].astype(np.int32))
            if mesh is merged:
                for k in range(6):          # more tiles than the array's first 4 slices
                    liq.add(("t", k), merged)
                assert sorted(liq.depth_slots.values()) == list(range(7)) and liq.depth_maps.size[2] == 8
                freed = liq.depth_slots[("t", 2)]
                liq.remove_tile(("t", 2))
                liq.add(("t", 9), merged)
                assert liq.depth_slots[("t", 9)] == freed and ("t", 2) not in liq.depth_slots
                sl = liq.parts[("t", 9)].vertices["tex"][:, 2]
                assert set(sl[sl >= 0].tolist()) == {float(freed)}
                raw = np.frombuffer(liq.depth_maps.read(alignment=1), np.uint8).reshape(8, 129, 129)
                assert (raw[liq.depth_slots[("t", 4)]] == merged.depth_map).all()
            liq.release()
    finally:
        uniforms.release()
        target.release()
    a, b = images
    if os.environ.get("WOWGRASS_TEST_PNG"):
        from PIL import Image

        Image.fromarray(np.concatenate([a, b], axis=1).astype(np.uint8)).save(
            os.path.join(os.environ["WOWGRASS_TEST_PNG"], "liquid-cells-vs-merged.png"))
    sky = np.abs(a - a[0, 0]).sum(axis=2) < 6
    assert 0.3 < 1 - sky.mean() < 1.0                      # water on screen, over the shore
    diff = np.abs(a - b).sum(axis=2)
    assert diff.mean() < 3.0 and (diff > 24).mean() < 0.01, (diff.mean(), (diff > 24).mean())
    # the shallows fade to the shore the same way: the per-row mean colour along the slope
    assert np.abs(a.mean(axis=(1, 2)) - b.mean(axis=(1, 2))).max() < 4.0
