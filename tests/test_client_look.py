"""``view --look client``: the per-tuft data (normal, MCCV colour, MCSH darkening, flags) and the
frames it draws (draw distance and fade, colour and shadow, flag 0x1 along the slope)."""

from __future__ import annotations

import numpy as np
import pytest

from wowgrass.grass.bundle import pack_instances
from wowgrass.formats.adt import UNIT_SIZE, AdtTile
from wowgrass.render.constants import CLIENT_DRAW_DISTANCE, TILE_SIZE, GrassSettings
from wowgrass.render.world.client_look import EXTRA_DTYPE, model_flags, tuft_extras, white_extras
from wowgrass.render.world.synthetic import SyntheticSource, synthetic_tile, tile_origin

COL, ROW = 32, 32
X0, Y0 = tile_origin(COL, ROW)
CX, CY = X0 - TILE_SIZE / 2, Y0 - TILE_SIZE / 2
SKY = np.array([0.62, 0.74, 0.86]) * 255


def at(tile, chunk, r, c, u, v):
    """An instance at cell fractions (u east, v south) of cell (r, c) of ``chunk``, on the ground."""
    x = tile.positions[chunk, 0] - (r + v) * UNIT_SIZE
    y = tile.positions[chunk, 1] - (c + u) * UNIT_SIZE
    z = tile.heights_at(np.array([chunk]), np.array([x]), np.array([y]))[0]
    return pack_instances(np.array([[x, y, z]]), 0.0, 1.0)


def colour(extra):
    c = int(extra["colour"])
    return c & 255, (c >> 8) & 255, (c >> 16) & 255


def test_extras_normal_is_the_fan_triangles():
    tile = synthetic_tile(COL, ROW, relief=9.0)
    rng = np.random.default_rng(1)
    inst = np.concatenate([at(tile, int(rng.integers(256)), int(rng.integers(8)), int(rng.integers(8)),
                              *rng.uniform(0.05, 0.95, 2)) for _ in range(300)])
    ex = tuft_extras(tile, inst)
    assert ex.dtype == EXTRA_DTYPE and len(ex) == 300
    raw = ex["normal"]
    nx = (raw & 0xFFFF).astype(np.uint16).view(np.int16) / 32767.0
    ny = (raw >> 16).astype(np.uint16).view(np.int16) / 32767.0
    ch = tile.chunk_index_at(inst["pos"][:, 0], inst["pos"][:, 1])
    want = tile.fan_normals(ch, inst["pos"][:, 0], inst["pos"][:, 1])
    # the fan's own triangle choice and the decode's agree but on the diagonals
    close = (np.abs(nx - want[:, 0]) < 2e-4) & (np.abs(ny - want[:, 1]) < 2e-4)
    assert close.mean() > 0.97
    assert np.abs(nx).max() > 0.05  # a relief, not a flat tile
    assert (ex["colour"] == 0xFF_FD_FD_FD).all()  # no MCCV: white, through the lit ramp (255 * 0.9957)


def _tile_with_colour():
    tile = AdtTile.from_arrays(COL, ROW, heights=np.zeros((256, 145), np.float32))
    mccv = np.full((256, 145, 4), 127, np.uint8)  # neutral grey, doubled to 254
    mccv[5, :, :3] = (0, 0, 127)  # chunk 5: B, G, R bytes: red
    tile.mccv, tile.has_mccv = mccv, np.ones(256, bool)
    tile.shadow[9] = True  # chunk 9 in MCSH shadow
    return tile


def test_extras_colour_follows_mccv_and_mcsh_as_the_335_client():
    tile = _tile_with_colour()
    centre = lambda ch: at(tile, ch, 3, 4, 0.5, 0.5)  # noqa: E731
    plain, red, dark = (tuft_extras(tile, centre(ch))[0] for ch in (0, 5, 9))
    # lit: the 3.3.5 alpha ramp at 255, (c * 65254) >> 16; in the shadow at 0, (c * 45874) >> 16
    assert colour(plain) == ((254 * 65254) >> 16,) * 3
    assert colour(red) == ((254 * 65254) >> 16, 0, 0)
    assert colour(dark) == ((254 * 45874) >> 16,) * 3
    # flag 0x2: white whatever the MCCV; 1.12: white, 0xC0 grey in the shadow
    assert colour(tuft_extras(tile, centre(5), flags=0x2)[0]) == ((255 * 65254) >> 16,) * 3
    assert colour(tuft_extras(tile, centre(5), build="1.12")[0]) == (255, 255, 255)
    assert colour(tuft_extras(tile, centre(9), build="1.12")[0]) == (0xC0, 0xC0, 0xC0)
    assert int(tuft_extras(tile, centre(0), flags=0x3)[0]["flags"]) == 0x3


def test_extras_colour_interpolates_the_triangle_as_decoded():
    tile = AdtTile.from_arrays(COL, ROW, heights=np.zeros((256, 145), np.float32))
    mccv = np.zeros((256, 145, 4), np.uint8)
    r, c = 2, 3
    i0 = r * 17 + c
    mccv[0, i0 + 9, 2] = 40  # centre red 40 (doubled 80)
    mccv[0, i0 + 1, 2] = 100  # TR corner red 100
    tile.mccv, tile.has_mccv = mccv, np.ones(256, bool)
    # north triangle (1: centre, corner A = TL, corner B = TR), point near the north edge's middle:
    # ja = 0.1, jb = -0.9 -> w = 0.9, lead = jb, t2 = 1 - (0.5 + 0.45) = 0.05, then * w = 0.045.
    # (The decode's weights, followed as they are: not the point's barycentric ones, 0.4 and 0.5.)
    u, v = (0.1 + 1) / 2, (-0.9 + 1) / 2
    got = colour(tuft_extras(tile, at(tile, 0, r, c, u, v))[0])[0]
    want = np.floor(min(max(80 + (0 - 80) * 0.9 + (200 - 80) * 0.045, 0), 255) + 0.5)
    assert abs(got - ((int(want) * 65254) >> 16)) <= 1


def test_model_flags_and_white_extras():
    from placement_fakes import make_catalog

    cat = make_catalog([(1, 8, [0, 1, -1, -1], [1, 1, 1, 1]), (2, 8, [1, 2, -1, -1], [1, 1, 1, 1])], has_weights=True)
    cat.slot_flags = np.array([[1, 0, 0, 0], [2, 0, 0, 0]], np.uint32)
    assert model_flags(cat) == {cat.models[0]: 1, cat.models[1]: 2}
    w = white_extras(3, flags=1)
    assert (w["colour"] == 0xFFFFFFFF).all() and (w["normal"] == 0).all() and (w["flags"] == 1).all()


def test_client_look_settings():
    s = GrassSettings.for_look("client")
    assert (s.draw_distance, s.fade_start, s.enabled, s.rings.enabled) == (70.0, 70.0 * 0.85, False, False)
    s = GrassSettings.for_look("client", 120.0)
    assert (s.draw_distance, s.fade_start) == (120.0, 102.0)
    # the fade as each build does it: 3.3.5 from 85 % of groundEffectDist, 1.12 and 2.4.3 over the
    # last quarter of their 70 yards (from 52.5)
    assert GrassSettings.for_look("client", build="3.3.5").fade_start == pytest.approx(59.5)
    for build in ("1.12", "2.4.3"):
        s = GrassSettings.for_look("client", build=build)
        assert (s.draw_distance, s.fade_start) == (70.0, 52.5)
        assert GrassSettings.for_look("client", 120.0, build=build).fade_start == 90.0
    d = GrassSettings.for_look("default", 110.0)
    assert (d.draw_distance, d.fade_start, d.enabled) == (110.0, 80.0, True)
    assert GrassSettings.for_look("default").draw_distance == 220.0


# ----------------------------------------------------------------------------- frames


def flat_square(path):
    from wowgrass.render.gl.meshes import MeshData

    pos = np.array([[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0]], np.float32)
    if path.endswith("1.m2"):  # a square north of its origin (model +X): shows which way the frame turns
        pos[:, 0] += 2.0
    tex = np.full((4, 4, 4), 100, np.uint8)  # grey: lit colours stay below white
    tex[..., 3] = 255
    return MeshData(path, pos, np.tile([0, 0, 1], (4, 1)).astype(np.float32),
                    np.array([[0, 0], [1, 0], [1, 1], [0, 1]], np.float32),
                    np.array([0, 1, 2, 0, 2, 3], np.uint32), texture=tex)


class LookSource(SyntheticSource):
    """Flat synthetic terrain with an MCCV chunk, an MCSH chunk, and grass flags per model."""

    def __init__(self, instances, flags=None, tile=None):
        super().__init__(tiles=[(COL, ROW)], instances={(COL, ROW): instances}, mesh_factory=flat_square,
                         relief=0.0)
        self.flags, self.tile = flags or {}, tile

    def load_tile(self, col, row):
        p = super().load_tile(col, row)
        if self.tile is not None:
            p["adt"] = self.tile
        p["grass_flags"], p["build"] = self.flags, "3.3.5"
        return p


def look_viewer(ctx, src, eye, target, *, size=(200, 200), culling="auto", distance=None, build=None):
    from wowgrass.render.camera import Camera
    from wowgrass.render.gl.context import create_offscreen_target
    from wowgrass.render.gl.programs import make_programs
    from wowgrass.render.viewer import Toggles, Viewer
    from wowgrass.render.world.streaming import Scene

    tg = create_offscreen_target(size, samples=0, ctx=ctx)
    sc = Scene(ctx, make_programs(ctx, look="client"), src, threaded=False, grass_culling=culling,
               grass_settings=GrassSettings.for_look("client", distance, build=build), client_look=True)
    sc.update(eye, block=True)
    cam = Camera.looking_at(eye, target)
    cam.fov_y = 90.0
    return Viewer(tg, sc, cam, Toggles(terrain=False, doodads=False, stats=True, shadows=False))


def not_sky(img):
    return np.abs(img[..., :3].astype(float) - SKY).sum(axis=-1) > 30


@pytest.mark.gl
@pytest.mark.parametrize("culling", ["gpu", "cpu"])
def test_client_look_draws_to_its_draw_distance(ctx, culling):
    if culling == "gpu" and ctx.version_code < 430:
        pytest.skip("GPU culling needs OpenGL 4.3")
    ang = np.linspace(0, 2 * np.pi, 300, endpoint=False)
    near = np.column_stack([CX + 40 * np.cos(ang), CY + 40 * np.sin(ang)])
    r = np.linspace(75, 110, 300)
    far = np.column_stack([CX + r * np.cos(ang * 7), CY + r * np.sin(ang * 7)])
    xy = np.r_[near, far]
    inst = pack_instances(np.column_stack([xy, np.zeros(len(xy))]), 0.0, 6.0)
    frames = {}
    for distance in (None, 130.0):
        v = look_viewer(ctx, LookSource({"synthetic\\grass0.m2": inst}), (CX, CY, 150.0), (CX + 0.01, CY, 0.0),
                        culling=culling, distance=distance)
        v.render_frame(0.0)
        frames[distance] = not_sky(v.read_rgba())
        v.scene.release()
    yy, xx = np.mgrid[0:200, 0:200]
    rpix = np.hypot(xx - 99.5, yy - 99.5) * (2 * 150.0 / 200)  # world units from the centre, at the ground
    img = frames[None]
    assert img[rpix < 45].sum() > 50, "the near ring is missing"
    assert img[rpix > CLIENT_DRAW_DISTANCE + 8].sum() == 0, "grass beyond the client's 70 yards"
    assert frames[130.0][rpix > CLIENT_DRAW_DISTANCE + 8].sum() > 50, "--grass-distance 130 did not reach further"


@pytest.mark.gl
def test_client_look_fades_from_52_5_in_112_and_from_59_5_in_335(ctx):
    # rings of opaque squares seen from above. The fade is an alpha ramp under the alpha test at 128:
    # a square goes where its fade drops below one half, at 61.25 yards in 1.12 (the ramp from 52.5
    # to 70) and at 64.75 in 3.3.5 (from 59.5). At 56 yards both builds draw every square; at 63
    # 3.3.5 still does and 1.12 draws none.
    ang = np.linspace(0, 2 * np.pi, 240, endpoint=False)
    yy, xx = np.mgrid[0:240, 0:240]
    rpix = np.hypot(xx - 119.5, yy - 119.5) * (2 * 150.0 / 240)
    drawn = {}
    for build in ("3.3.5", "1.12"):
        for r in (56.0, 63.0):
            xy = np.column_stack([CX + r * np.cos(ang), CY + r * np.sin(ang)])
            inst = pack_instances(np.column_stack([xy, np.zeros(len(xy))]), 0.0, 1.0)
            v = look_viewer(ctx, LookSource({"synthetic\\grass0.m2": inst}), (CX, CY, 150.0), (CX + 0.01, CY, 0.0),
                            size=(240, 240), build=build)
            v.render_frame(0.0)
            img = not_sky(v.read_rgba())
            v.scene.release()
            drawn[build, r] = int(img[np.abs(rpix - r) < 5].sum())
    assert drawn["3.3.5", 56.0] > 300 and drawn["1.12", 56.0] == drawn["3.3.5", 56.0]
    assert drawn["3.3.5", 63.0] > 300 and drawn["1.12", 63.0] == 0


@pytest.mark.gl
@pytest.mark.parametrize("culling", ["gpu", "cpu"])
def test_client_look_colours_by_mccv_and_darkens_in_mcsh(ctx, culling):
    if culling == "gpu" and ctx.version_code < 430:
        pytest.skip("GPU culling needs OpenGL 4.3")
    tile = _tile_with_colour()
    # one square per chunk, at the cell centre of cells far from the chunks' edges
    chunks = (0, 5, 9)
    inst = np.concatenate([at(tile, ch, 3, 3, 0.5, 0.5) for ch in chunks])
    inst["scale"] = 3 * 4096
    src = LookSource({"synthetic\\grass0.m2": inst}, tile=tile)
    means = []
    for ch, one in zip(chunks, inst):
        x, y, _ = one["pos"]
        v = look_viewer(ctx, src, (x, y, 6.0), (x + 0.01, y, 0.0), size=(64, 64), culling=culling)
        v.render_frame(0.0)
        img = v.read_rgba()[24:40, 24:40, :3].astype(float)  # the square fills the middle
        means.append(img.reshape(-1, 3).mean(axis=0))
        v.scene.release()
    plain, red, dark = means
    assert red[0] > 0.8 * plain[0] and red[1] < 0.2 * plain[1] and red[2] < 0.2 * plain[2]
    assert np.allclose(dark / plain, 45874 / 65254, atol=0.04)  # the 3.3.5 ramp: ~0.70 against ~1.0


@pytest.mark.gl
def test_client_look_flag_0x1_stands_the_model_in_the_decoded_frame(ctx):
    # model 1 is a square north (+X) of its origin; upright and turned by yaw 0 it stays north. In
    # FrozenClient's slope frame row 0 is n x u, which on flat ground is -X: it lands south.
    inst = pack_instances(np.array([[CX, CY, 0.0]]), 0.0, 1.5)
    centroids = {}
    for flags in ({}, {"synthetic\\grass1.m2": 0x1}):
        v = look_viewer(ctx, LookSource({"synthetic\\grass1.m2": inst}, flags=flags), (CX, CY, 12.0),
                        (CX, CY + 0.001, 0.0), size=(96, 96))
        # looking straight down with the view's up to +Y... screen rows follow world X
        v.render_frame(0.0)
        mask = not_sky(v.read_rgba())
        yy, xx = np.nonzero(mask)
        assert len(yy) > 20
        centroids[bool(flags)] = (yy.mean(), xx.mean())
        v.scene.release()
    (y0, x0), (y1, x1) = centroids[False], centroids[True]
    # the square moved to the other side of the origin (the frame's centre pixel)
    assert (y0 - 47.5) * (y1 - 47.5) + (x0 - 47.5) * (x1 - 47.5) < 0


# ----------------------------------------------------------------------------- the command


@pytest.mark.gl
def test_view_look_client_bakes_the_client_placement_with_its_constants(tmp_path, egl):
    import json

    from click.testing import CliRunner

    from wowgrass.grass.bundle import read_bundle
    from wowgrass.cli.main import cli

    out = tmp_path / "client.png"
    r = CliRunner().invoke(cli, ["view", "--look", "client", "-C", "client_picks=4", "--tile", "31,31",
                                 "--camera", "60,60", "--size", "96x54", "-o", str(out), "--json"])
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    assert (res["look"], res["placement"], res["grass_distance"]) == ("client", "client", 70.0)
    assert res["grass_fade_start"] == pytest.approx(59.5) and res["rings"]["enabled"] is False
    (bundle,) = res["bundles"]
    with read_bundle(bundle["file"]) as b:
        assert b.provenance["placement"] == "client" and b.provenance["constants"]["client_picks"] == 4
        # the client look draws what the draw capacity keeps: the sample's tufts fill their batches
        assert bundle["capacity_dropped_count"] == b.capacity_dropped > 0 and b.scatter_order is not None
    assert out.exists()
    # --grass-distance, and --placement coverage under the client look
    r = CliRunner().invoke(cli, ["view", "--look", "client", "--placement", "coverage", "--grass-distance", "40",
                                 "--tile", "31,31", "--camera", "60,60", "--size", "64x36", "-o",
                                 str(tmp_path / "c.png"), "--json"])
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    assert (res["placement"], res["grass_distance"]) == ("coverage", 40.0)
    assert res["bundles"][0]["capacity_dropped_count"] is None  # no scatter order: nothing dropped


@pytest.mark.gl
def test_view_look_client_fades_as_the_data_build_does(tmp_path, egl):
    import json

    from click.testing import CliRunner

    from wowgrass.cli.main import cli
    from wowgrass.samples import build_sample_world

    data = build_sample_world(tmp_path / "w112", "1.12", (1, 1), seed=0)
    r = CliRunner().invoke(cli, ["view", "--data", str(data), "--look", "client", "--camera", "60,60", "--size",
                                 "64x36", "-o", str(tmp_path / "v.png"), "--json"])
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    assert (res["grass_distance"], res["grass_fade_start"]) == (70.0, 52.5)
    # 3.3.5 (the default sample): from 85 %; -C client_picks below 16 is raised, and said
    r = CliRunner().invoke(cli, ["view", "--look", "client", "-C", "client_picks=8", "--tile", "31,31", "--camera",
                                 "60,60", "--size", "64x36", "-o", str(tmp_path / "w.png"), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["grass_fade_start"] == pytest.approx(59.5)
    assert "client_picks=8 is below what the 3.3.5 client takes" in r.stderr


@pytest.mark.parametrize("args, message", [
    (["--look", "client", "--grass", "grid"], "--look client draws the instanced grass"),
    (["--grass-distance", "0"], "--grass-distance 0: give 1 .. 3000"),
    (["--procedural", "--look", "client"], "--look, --placement and -C are for game data"),
    (["-C", "client_picks=999"], "client_picks=999 is outside 1 .. 256"),
])
def test_view_look_errors(args, message):
    from click.testing import CliRunner

    from wowgrass.cli.main import cli

    r = CliRunner().invoke(cli, ["view", "--size", "32x32", "-o", "x.png", *args])
    assert r.exit_code == 2 and message in r.output, r.output
