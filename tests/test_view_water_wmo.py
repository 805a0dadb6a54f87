"""Liquids and WMOs in the view (llvmpipe, small frames): the sample world's lake and house in
make demo's frame, their toggles, the GPU culling of WMO placements against a CPU reference,
the real inn and continent4229's ocean, animation, shadows; the liquid meshes without GL."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

pytestmark = pytest.mark.gl

DEMO_CAMERA, DEMO_TARGET = (-28.0, -38.0, 71.0), (-62.0, -95.0, 58.0)   # the Makefile's make demo
DEBUG_PNG = os.environ.get("WOWGRASS_TEST_PNG")


class Session:
    """One scene and viewer over a data source (the app's own steps), frames read back."""

    def __init__(self, opts):
        from wowgrass.render.app import OutputMode, open_scene, open_source, open_target, open_viewer

        self.data, self.src = open_source(opts.data, opts.look)
        self.target, _ = open_target(opts.output, OutputMode(False, None), lambda s: None, "test")
        self.scene = open_scene(self.target, self.src, opts.look, lambda s: None)
        self.viewer = open_viewer(self.target, self.scene, self.src, opts, OutputMode(False, None))

    def frame(self, t=0.0, name=None, **toggles):
        for k, v in toggles.items():
            setattr(self.viewer.toggles, k, v)
        self.viewer.render_frame(t)
        st = self.viewer.render_frame(t)
        img = self.viewer.read_rgba()[..., :3].astype(np.int32)
        if DEBUG_PNG and name:
            from PIL import Image

            Image.fromarray(img.astype(np.uint8)).save(os.path.join(DEBUG_PNG, f"{name}.png"))
        return img, st

    def project(self, p):
        """Pixel (col, row) of world point ``p`` in the frame (None when behind the camera)."""
        view = self.viewer.views[0]
        clip = view.view_proj() @ np.r_[np.asarray(p, np.float64), 1.0]
        if clip[3] <= 0:
            return None
        w, h = self.target.size
        ndc = clip[:3] / clip[3]
        return int((ndc[0] + 1) / 2 * w), int((1 - ndc[1]) / 2 * h)

    def close(self):
        self.scene.release()
        self.viewer.release()
        self.target.release()
        self.data.close()


@pytest.fixture(scope="module")
def demo(egl):
    from wowgrass.render.app import CameraOptions, OutputOptions, ViewOptions

    s = Session(ViewOptions(camera=CameraOptions(DEMO_CAMERA, DEMO_TARGET), output=OutputOptions(size=(320, 180))))
    yield s
    s.close()


def _bluer(a, b, mask):
    """How much bluer (b / (r + g + b)) ``a`` is than ``b`` over ``mask``."""
    fa = a[mask][:, 2] / np.maximum(a[mask].sum(axis=1), 1)
    fb = b[mask][:, 2] / np.maximum(b[mask].sum(axis=1), 1)
    return float(fa.mean() - fb.mean())


def test_demo_frame_shows_the_lake_and_the_house(demo):
    from wowgrass.samples.heights import SampleTerrain

    sc = demo.scene
    assert sc.liquids.cells > 0 and sc.wmos.placement_count == 1
    both, st = demo.frame(name="demo-both", liquids=True, wmos=True, stats=True)
    no_water, _ = demo.frame(name="demo-no-water", liquids=False, wmos=True)
    no_house, _ = demo.frame(name="demo-no-house", liquids=True, wmos=False)
    water = np.abs(both - no_water).sum(axis=2) > 24
    house = np.abs(both - no_house).sum(axis=2) > 24
    n = both.shape[0] * both.shape[1]
    assert 0.005 * n < water.sum() < 0.3 * n, water.sum()
    assert 0.005 * n < house.sum() < 0.3 * n, house.sum()
    assert _bluer(both, no_water, water) > 0.03          # the lake's pixels turn blue
    # where the terrain model says they are: the lake's centre and the house's in their pixels
    terrain = SampleTerrain((2, 2), 0)
    for xy, z, mask in ((terrain.lake_xy, terrain.lake_level, water), (terrain.house_xy, terrain.house_z + 3, house)):
        col, row = demo.project((xy[0], xy[1], z))
        rows, cols = np.nonzero(mask)
        assert abs(np.median(cols) - col) < 40 and abs(np.median(rows) - row) < 30
    assert st.wmo_instances == 2                       # the house's two groups, one placement
    assert st.liquid_triangles == 2 * sc.liquids.cells   # two a cell: the lake's and the basin's (one MLIQ tile)


def test_wmo_casts_into_the_shadow_map(demo):
    from wowgrass.samples.heights import SampleTerrain

    terrain = SampleTerrain((2, 2), 0)
    hx, hy = terrain.house_xy
    cam = demo.viewer.camera
    old = cam.position.copy(), cam.yaw, cam.pitch
    try:
        cam.position = np.array([hx - 16.0, hy - 8.0, terrain.house_z + 6.0])
        cam.look_at((hx, hy, terrain.house_z + 1.0))
        demo.scene.update(cam.position, block=True)
        lit, _ = demo.frame(name="house-shadows", shadows=True, wmos=True)
        flat, _ = demo.frame(name="house-no-shadows", shadows=False, wmos=True)
        without, _ = demo.frame(name="house-shadows-no-wmo", shadows=True, wmos=False)
        flat_no, _ = demo.frame(shadows=False, wmos=False)
        # the house's shadow: ground darker with shadows than without, but only with the house there
        with_house = (flat.sum(axis=2) - lit.sum(axis=2)) > 30
        no_house = (flat_no.sum(axis=2) - without.sum(axis=2)) > 30
        assert with_house.sum() > no_house.sum() + 150
    finally:
        cam.position, cam.yaw, cam.pitch = old
        demo.viewer.toggles.shadows = True


def test_liquid_is_animated(demo):
    a, _ = demo.frame(0.0, liquids=True, wmos=True)
    b, _ = demo.frame(0.7)
    off_a, _ = demo.frame(0.0, liquids=False)
    off_b, _ = demo.frame(0.7)
    demo.viewer.toggles.liquids = True
    water = np.abs(a - off_a).sum(axis=2) > 24
    moved = np.abs(a - b).sum(axis=2) > 6
    assert moved[water].mean() > 0.2       # the lake changes with time
    # elsewhere only the grass sways: the lake alone accounts for the difference it makes
    assert (np.abs(off_a - off_b).sum(axis=2) > 6)[water].mean() < moved[water].mean()


def _frustum_outside(planes, lo, hi):
    c, e = (lo + hi) / 2, (hi - lo) / 2
    out = np.zeros(len(lo), bool)
    for p in planes:
        out |= (c @ p[:3] + np.abs(p[:3]) @ e.T + p[3]) < 0
    return out


def test_gpu_culling_matches_a_cpu_reference(demo):
    """Many placements of the house around the camera: what the compute pass draws per view is
    exactly what a frustum test of their boxes on the CPU keeps."""
    from wowgrass.game.mapobjects import placement_matrices, transformed_bounds, world_to_file

    sc, w = demo.scene, demo.scene.wmos
    if not w.gpu_cull:
        pytest.skip("GPU culling needs GL 4.3")
    key = next(iter(w.models))
    cam = demo.viewer.camera
    rng = np.random.default_rng(4)
    ang = rng.uniform(0, 2 * math.pi, 60)
    dist = rng.uniform(20, 400, 60)
    pos = np.stack([cam.position[0] + dist * np.cos(ang), cam.position[1] + dist * np.sin(ang),
                    np.full(60, cam.position[2] - 5)], axis=1)
    mats = placement_matrices(world_to_file(pos), np.c_[np.zeros(60), rng.uniform(-180, 180, 60), np.zeros(60)])
    w.add("test", [(key, m) for m in mats])
    try:
        demo.frame(wmos=True, stats=True)
        view = demo.viewer.views[0]
        got = w.read_stats(view)
        planes = np.asarray(view.planes(), np.float64)
        want = 0
        for g in w.models[key].groups:
            box = transformed_bounds(np.concatenate([mats, *[m[None] for _, m in sc.wmos.placed[(32, 32)]]]), g.bbox)
            want += int((~_frustum_outside(planes, box[:, 0], box[:, 1])).sum())
        assert got["instances"] == want and 0 < want < 2 * (60 + 1)
    finally:
        w.remove_tile("test")
        demo.frame()


@pytest.fixture(scope="module")
def inn(egl, realdata, tmp_path_factory):
    from wmo_world import MAP, inn_world

    from wowgrass.render.app import CameraOptions, DataOptions, OutputOptions, ViewOptions

    root, pos = inn_world(tmp_path_factory.mktemp("inn"), realdata)
    s = Session(ViewOptions(data=DataOptions(str(root), MAP),
                            camera=CameraOptions((pos[0] + 45.0, pos[1] + 30.0, pos[2] + 28.0), tuple(pos)),
                            output=OutputOptions(size=(320, 180))))
    yield s, pos
    s.close()


def test_the_real_inn_is_drawn_with_its_groups(inn):
    s, pos = inn
    with_inn, st = s.frame(name="inn", wmos=True, stats=True)
    without, _ = s.frame(name="inn-off", wmos=False)
    drawn = np.abs(with_inn - without).sum(axis=2) > 24
    assert drawn.mean() > 0.08
    col, row = s.project(pos)
    rows, cols = np.nonzero(drawn)
    assert cols.min() < col < cols.max() and rows.min() < row < rows.max()
    assert st.wmo_instances == 2                      # groups 000 and 003; nine are missing
    model = next(iter(s.scene.wmos.models.values())).model
    assert model.missing_groups and len(model.missing_groups) == 9
    assert len(model.textures) == 22 - 0 or model.missing_textures   # its BLPs are not in the test data


@pytest.fixture(scope="module")
def ocean(egl, realdata, tmp_path_factory):
    from loose_world import loose_world

    from wowgrass.render.app import CameraOptions, DataOptions, LookOptions, OutputOptions, ViewOptions

    root = loose_world(tmp_path_factory.mktemp("ocean"), realdata, "continent4229.adt", "Continent", 42, 29,
                       wdt="continent.wdt")
    s = Session(ViewOptions(data=DataOptions(str(root), "Continent"),
                            camera=CameraOptions((1060.0, -5860.0, 45.0), (1125.0, -5700.0, 5.0)),
                            output=OutputOptions(size=(320, 180)), look=LookOptions(grass=False)))
    yield s
    s.close()


def test_continent4229_ocean(ocean):
    sc = ocean.scene
    assert sc.liquids.cells == 330
    on, st = ocean.frame(name="ocean", liquids=True)
    off, _ = ocean.frame(name="ocean-off", liquids=False)
    sea = np.abs(on - off).sum(axis=2) > 24
    assert sea.mean() > 0.05
    assert _bluer(on, off, sea) > 0.05
    assert st.liquid_triangles == 660


# -- the meshes, without GL ----------------------------------------------------------------------
def test_ocean_mesh_of_the_real_tile(realdata):
    from wowgrass.formats.adt import AdtTile
    from wowgrass.game.liquid_types import LiquidTypes
    from wowgrass.render.world.liquid_tiles import adt_liquid_mesh

    t = AdtTile.from_bytes((realdata / "adt" / "continent4229.adt").read_bytes(), "continent4229.adt")
    mesh, err = adt_liquid_mesh(t, LiquidTypes())
    assert err is None and mesh.cells == 330 and mesh.triangles == 660 and mesh.layers == 9
    v = mesh.vertices
    assert (v["pos"][:, 2] == 0.0).all() and (v["kind"] == 1).all()     # sea level, ocean
    # depth: the surface minus the terrain under each vertex
    assert v["depth"].min() >= 0.0 and v["depth"].max() > 100.0
    assert mesh.types == {2: 330}


def test_broken_liquid_keeps_the_tile():
    from wowgrass.formats.adt import AdtTile
    from wowgrass.game.liquid_types import LiquidTypes
    from wowgrass.render.world.liquid_tiles import adt_liquid_mesh

    t = AdtTile.from_arrays(30, 30, abs_heights=np.zeros((256, 145)))
    t.mh2o = b"\0" * 100          # truncated MH2O
    mesh, err = adt_liquid_mesh(t, LiquidTypes())
    assert not mesh and "MH2O" in err


def test_house_basin_mesh_in_world_space():
    from wowgrass.formats.wmo import load_wmo
    from wowgrass.game.mapobjects import placement_matrices
    from wowgrass.render.world.liquid_tiles import wmo_liquid_mesh
    from wowgrass.samples import building

    root, groups = building.building()
    lq = groups[0].liquid
    m = placement_matrices([[100.0, 20.0, 300.0]], [[0.0, 90.0, 0.0]])[0]
    mesh = wmo_liquid_mesh(lq, m, 0)
    assert mesh.cells == 1 and mesh.triangles == 2
    local = np.c_[lq.corner[0] + np.array([0, 1, 0, 1]) * building.UNIT,
                  lq.corner[1] + np.array([0, 0, 1, 1]) * building.UNIT, lq.heights.ravel()]
    want = local @ m[:3, :3].T + m[:3, 3]
    got = mesh.vertices["pos"]
    assert np.allclose(np.sort(got, axis=0), np.sort(want, axis=0), atol=1e-3)
    del load_wmo
