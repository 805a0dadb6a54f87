"""The renderer's GPU bytes (render/gl/memory.py): what is tracked, what a release takes off, and
what a streamed scene reports per kind and per tile."""

from __future__ import annotations

import numpy as np
import pytest

from wowgrass.render.gl.memory import GpuMemory, gpu_memory, mip_bytes, object_bytes

pytestmark = pytest.mark.gl


def test_sizes_of_buffers_textures_and_mip_chains(ctx):
    b = ctx.buffer(reserve=1000)
    t = ctx.texture_array((64, 32, 3), 4)
    d = ctx.depth_texture((16, 16))
    r = ctx.renderbuffer((10, 10), 4, samples=4) if int(ctx.info.get("GL_MAX_SAMPLES", 0) or 0) >= 4 else None
    try:
        assert object_bytes(b) == 1000
        assert object_bytes(t) == 64 * 32 * 3 * 4
        # 64x32, 32x16, 16x8, 8x4, 4x2, 2x1, 1x1 texels of 4 bytes, 3 layers
        assert object_bytes(t, mipmaps=True) == (2048 + 512 + 128 + 32 + 8 + 2 + 1) * 4 * 3
        assert mip_bytes(4, 4, 1) == 16 + 4 + 1 and mip_bytes(4, 1, 1) == 4 + 2 + 1
        assert object_bytes(d) == 16 * 16 * 4
        if r is not None:
            assert object_bytes(r) == 10 * 10 * 4 * 4
    finally:
        for o in (b, t, d, r):
            if o is not None:
                o.release()


def test_a_release_anywhere_takes_the_object_off_the_books(ctx):
    mem = GpuMemory()
    a = mem.track(ctx.buffer(reserve=4096), "grass")
    b = mem.track(ctx.texture((8, 8), 4), "frame")
    assert mem.allocated() == {"frame": 256, "grass": 4096} and mem.total() == 4352
    a.release()  # the object's own release, not the books'
    assert mem.allocated() == {"frame": 256} and mem.total() == 256
    assert mem.peak == 4352
    b.release()
    assert mem.total() == 0 and mem.objects() == 0


def test_tile_shares_replace_and_clear():
    mem = GpuMemory()
    mem.use((1, 2), "terrain-near", 100)
    mem.add_use((1, 2), "grass", 30)
    mem.add_use((1, 2), "grass", 20)
    assert mem.tiles() == {(1, 2): {"terrain-near": 100, "grass": 50}}
    mem.use((1, 2), "terrain-near", 0)
    mem.use((1, 2), "grass", 0)
    assert mem.tiles() == {}


def test_a_streamed_scene_reports_its_bytes_and_gives_them_back(ctx):
    from wowgrass.render.gl.programs import make_programs
    from wowgrass.render.world.streaming import Scene
    from wowgrass.render.world.synthetic import SyntheticSource, tile_origin

    mem = gpu_memory(ctx)
    before = mem.allocated()
    src = SyntheticSource(tiles=[(32, 32), (33, 32)], density=0.01)
    x0, y0 = tile_origin(32, 32)
    sc = Scene(ctx, make_programs(ctx), src, threaded=False, reach=1e6)
    sc.update((x0 - 10.0, y0 - 10.0, 0.0), block=True)
    rep = sc.memory_report()
    assert rep["total_bytes"] == mem.total() > 0
    for kind in ("terrain-near", "terrain-layers", "grass", "models"):  # (tables: made by the first frame)
        assert rep["by_kind"].get(kind, 0) > before.get(kind, 0), kind
    near = rep["per_tile"]["near"]
    assert near["tiles"] == 2 and rep["per_tile"]["far"]["tiles"] == 0
    assert near["mean_by_kind"]["terrain-near"] > 0 and near["mean_by_kind"]["grass"] > 0
    # every tile's share fits in what is allocated of its kind
    for kind, n in near["mean_by_kind"].items():
        assert n * 2 <= rep["by_kind"][kind], kind
    sc.release()
    assert all(v == before.get(k, 0) for k, v in mem.allocated().items()), (before, mem.allocated())
    assert not any(k in mem.tiles() for k in src.tiles)
