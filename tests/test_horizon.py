"""The horizon (render/sources/horizon.py): the WDL's mesh, drawn where no ADT terrain is
resident and nowhere else, a map without a WDL, a damaged one (the view's --json horizon and
--no-horizon: tests/test_render_cli.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from wowgrass.formats.wdl import WdlFile, wdl_tile_from_adt
from wowgrass.render.constants import CHUNK_SIZE, TILE_SIZE, ZEROPOINT
from wowgrass.render.sources.horizon import horizon_mesh
from wowgrass.render.world.synthetic import SyntheticSource, synthetic_tile, tile_origin


def _plane_wdl(tiles, a=0.2, b=-0.1, holes=None):
    """A WDL whose heights lie on z = a X + b Y (world units) over ``tiles``."""
    outs, ins = [], []
    for c, r in tiles:
        x0, y0 = ZEROPOINT - r * TILE_SIZE, ZEROPOINT - c * TILE_SIZE
        k = np.arange(17) * CHUNK_SIZE
        m = (np.arange(16) + 0.5) * CHUNK_SIZE
        outs.append(a * (x0 - k[:, None]) + b * (y0 - k[None, :]))
        ins.append(a * (x0 - m[:, None]) + b * (y0 - m[None, :]))
    h = np.zeros((len(tiles), 16), np.uint16) if holes is None else holes
    return WdlFile(tiles, np.round(outs), np.round(ins), h)


def test_the_mesh_stands_on_the_wdl_points_with_the_planes_normal_and_holes_cut():
    holes = np.zeros((2, 16), np.uint16)
    holes[1, 3] = 1 << 5  # tile 1: chunk x 5, y 3
    wdl = _plane_wdl([(30, 31), (40, 2)], a=0.03, b=0.0, holes=holes)  # a whole unit a chunk: no rounding
    v, idx, tris = horizon_mesh(wdl)
    assert len(v) == 2 * 545 and tris.tolist() == [1024, 1020] and len(idx) == 3 * 2044
    x0, y0 = ZEROPOINT - 31 * TILE_SIZE, ZEROPOINT - 30 * TILE_SIZE
    assert np.allclose(v["pos"][0], (x0, y0, wdl.outer[0, 0, 0]))  # outer (0, 0): the north-west corner
    assert np.allclose(v["pos"][17 * 2 + 5, :2], (x0 - 2 * CHUNK_SIZE, y0 - 5 * CHUNK_SIZE), atol=1e-2)
    assert np.allclose(v["pos"][289 + 16 * 4 + 7, :2], (x0 - 4.5 * CHUNK_SIZE, y0 - 7.5 * CHUNK_SIZE), atol=1e-2)
    assert v["tile"][0] == 31 * 64 + 30 and v["tile"][545] == 2 * 64 + 40
    n = v["normal"][:, :3].astype(float)
    want = np.array([-0.03, 0.0, 1.0]) / math.hypot(0.03, 1.0)  # z = 0.03 X
    assert np.abs(n - want).max() < 4e-3
    p = v["pos"][idx.reshape(-1, 3)]
    up = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])[:, 2]
    assert (up > 0).all()  # counter-clockwise from above, as the terrain's
    t = idx.reshape(-1, 3) // 545
    assert (t == t[:, :1]).all()  # a triangle's vertices are one tile's (the mask moves them together)
    centre = 545 + 289 + 3 * 16 + 5  # the holed chunk's centre vertex is in no triangle
    assert centre not in set(idx.tolist()) and 289 + 3 * 16 + 5 in set(idx.tolist())


@pytest.mark.gl
def test_the_horizon_draws_where_no_adt_terrain_is_and_nowhere_else(ctx):
    """A 2x1 synthetic map inside a 6x5 WDL: from high up, with the ADT terrain off, the horizon
    leaves exactly the two resident tiles empty (sky) and covers the rest; with the terrain on,
    nothing is sky; without a horizon, the 28 other tiles are sky."""
    from wowgrass.render.camera import Camera
    from wowgrass.render.gl.context import create_offscreen_target
    from wowgrass.render.gl.programs import make_programs
    from wowgrass.render.viewer import Toggles, Viewer
    from wowgrass.render.world.streaming import Scene

    adt_tiles = [(32, 32), (33, 32)]
    wdl_tiles = [(c, r) for r in range(30, 35) for c in range(30, 36)]
    outs, ins = [], []
    for c, r in wdl_tiles:
        o, i, _ = wdl_tile_from_adt(synthetic_tile(c, r))
        outs.append(o)
        ins.append(i)
    wdl = WdlFile(wdl_tiles, outs, ins, np.zeros((len(wdl_tiles), 16)))
    tg = create_offscreen_target((120, 100), samples=0, ctx=ctx)
    x0, y0 = tile_origin(33, 32)
    sky = (1.0, 0.0, 1.0)

    def frame(horizon, terrain=True):
        sc = Scene(ctx, make_programs(ctx), SyntheticSource(tiles=adt_tiles, density=0.0), threaded=False,
                   reach=1e5, horizon=wdl if horizon else None)
        cam = Camera(position=np.array([x0 - TILE_SIZE / 2, y0, 6000.0]), fov_y=20.0)  # the view inside the WDL
        cam.pitch = -math.pi / 2 + 1e-3
        sc.update(cam.position, block=True)
        v = Viewer(tg, sc, cam, Toggles(grass=False, doodads=False, shadows=False, terrain=terrain),
                   time_query=False, fog=(1e5, 2e5))
        v.passes[0].clear = sky
        v.render_frame(0.0)
        img = v.read_rgba()[..., :3].astype(int)
        mem = sc.memory_report()["by_kind"].get("horizon", 0)
        sc.release()
        return np.abs(img - np.array(sky) * 255).sum(-1) < 8, mem

    only_horizon, mem = frame(True, terrain=False)
    both, _ = frame(True)
    terrain_alone, mem_none = frame(False)
    assert mem > 30 * 545 * 24 and mem_none == 0
    assert not both.any()  # the WDL fills every tile the terrain leaves
    # the horizon alone leaves a hole exactly where the terrain draws
    hole, ground = only_horizon, ~terrain_alone
    assert hole.sum() > 200 and ground.sum() == hole.sum()
    assert (hole == ground).mean() > 0.995  # (edge pixels: the WDL's rounded heights, the ADT's fans)


def test_a_map_without_a_wdl_has_no_horizon_and_a_damaged_one_is_said_and_skipped(tmp_path):
    from wowgrass.game.data import open_data
    from wowgrass.render.app import LookOptions, open_horizon
    from wowgrass.samples import sample_data_path, wdl_path

    class Source:  # the sample world's data with its WDL left out, then damaged
        def __init__(self, wdl):
            self.wdl = wdl

        def load_horizon(self):
            return None if self.wdl is None else WdlFile.from_bytes(self.wdl, wdl_path())

    data = open_data(sample_data_path())
    good = data.read(wdl_path())
    data.close()
    said = []
    assert open_horizon(Source(None), LookOptions(), said.append) is None and not said
    assert len(open_horizon(Source(good), LookOptions(), said.append)) >= 1
    assert open_horizon(Source(good), LookOptions(horizon=False), said.append) is None
    bad = bytearray(good)
    bad[20:24] = (len(good) - 10).to_bytes(4, "little")  # MAOF[0][0] past the end
    assert open_horizon(Source(bytes(bad)), LookOptions(), said.append) is None
    assert len(said) == 1 and said[0].startswith("no horizon:") and wdl_path() in said[0]
