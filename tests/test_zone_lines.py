"""The zone view's lines views (the split screen's right half, ``--wireframe``) are line lists
drawn from line index buffers, never triangles in polygon line mode (the grass lesson's named
mistake): with polygon line mode forbidden the frames still render, the line index buffers hold
exactly each triangle's edges, and the lines views' indirect commands are the filled views'
commands over them (count and first index doubled, the same GPU-culled instance counts).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from wowgrass.render.gl.meshes import edge_indices, line_commands

from test_zone_shadows_split import CX, CY, zone_viewer


def triangle_edges(tris: np.ndarray) -> np.ndarray:
    """(n, 3, 2) each triangle's edges (a b, b c, c a), the reference the line buffers must equal."""
    t = np.asarray(tris, np.uint32).reshape(-1, 3)
    return np.stack([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]], axis=1)


def test_edge_indices_are_each_triangles_edges_and_line_commands_double_the_ranges():
    from wowgrass.render.gl.meshes import CMD_DTYPE

    tris = np.array([0, 1, 2, 2, 1, 3, 4, 5, 6], np.uint32)
    lines = edge_indices(tris)
    assert np.array_equal(lines.reshape(-1, 3, 2), triangle_edges(tris))
    cmds = np.zeros(2, CMD_DTYPE)
    cmds[0] = (6, 5, 0, 0, 7)
    cmds[1] = (3, 2, 6, 0, 9)
    lc = line_commands(cmds)
    for c, l in zip(cmds, lc):  # each triangle range's edges, nothing else
        assert np.array_equal(lines[l["first_index"]:l["first_index"] + l["count"]],
                              edge_indices(tris[c["first_index"]:c["first_index"] + c["count"]]))
        assert (l["instances"], l["base_instance"], l["base_vertex"]) == (c["instances"], c["base_instance"], 0)
    assert cmds["count"].tolist() == [6, 3]  # the triangle commands are left as they were


@pytest.fixture
def no_polygon_lines(monkeypatch):
    """Switching polygon line mode on (``ctx.wireframe = True``) fails the test."""
    import moderngl

    prop = moderngl.Context.wireframe

    def setter(self, value):
        if value:
            raise AssertionError("polygon line mode: a lines view must draw line lists")
        prop.fset(self, value)

    monkeypatch.setattr(moderngl.Context, "wireframe", property(prop.fget, setter))


def _read(ctx, buf, dtype, n=None, offset=0):
    from wowgrass.render.gl.readback import read_buffer

    size = buf.size - offset if n is None else n * np.dtype(dtype).itemsize
    return np.frombuffer(read_buffer(ctx, buf, size, offset), dtype)


@pytest.mark.gl
def test_split_lines_view_draws_the_edge_buffers_with_the_culled_commands(ctx, no_polygon_lines):  # noqa: F811
    from wowgrass.render.gl.meshes import CMD_DTYPE
    from wowgrass.render.sources.terrain_arenas import SLOT_INDICES

    v = zone_viewer(ctx, (CX - 15.0, CY, 2.0), (CX, CY, 0.5), terrain=True, split=True)
    try:
        v.render_frame(0.0)
        left, right = v.views
        assert (left.fill, right.fill) == ("filled", "lines")
        ts, grass = v.scene.terrain, v.scene.grass
        # terrain: the arena's edge list is every triangle's three edges, slot by slot
        arena = ts.arena
        tris = _read(ctx, arena.ibo, np.uint32, arena.slots * SLOT_INDICES)
        lines = _read(ctx, arena.lbo, np.uint32, 2 * arena.slots * SLOT_INDICES)
        assert np.array_equal(lines.reshape(-1, 3, 2), triangle_edges(tris))
        # the LOD pass's commands for the lines half: the filled half's, count and first doubled
        tc, lc = ts.read_commands(left), ts.read_commands(right)
        assert tc["count"].sum() > 0
        assert np.array_equal(lc, line_commands(tc))
        assert ts.read_stats(right)["triangles"] == ts.read_stats(left)["triangles"]
        # GPU-culled grass: each model's edge list, and the same culled instances in both halves
        assert hasattr(grass, "read_visible"), "the GPU-driven grass on GL 4.3"
        for mesh in grass.models:
            assert np.array_equal(_read(ctx, mesh.lbo, np.uint32).reshape(-1, 3, 2),
                                  triangle_edges(_read(ctx, mesh.ibo, np.uint32)))
        per = grass._cmd_per_view
        cmds = _read(ctx, grass.commands, CMD_DTYPE, 2 * per).reshape(2, per)  # slots 0, 1: left, right
        assert (left.slot, right.slot) == (0, 1)
        assert cmds[0]["instances"].sum() > 0
        lc = line_commands(cmds[0])  # baseInstance: each view's own region of the compacted instances
        for f in ("count", "instances", "first_index"):
            assert np.array_equal(cmds[1][f], lc[f]), f
    finally:
        v.scene.release()
        v.release()


def _bg_and_lines(img, x0, x1):
    from wowgrass.render.passes import LINES_BACKGROUND

    h = img.shape[0]
    part = img[h // 2: h - 4, x0:x1].astype(float)  # below the horizon
    is_bg = np.abs(part - np.array(LINES_BACKGROUND) * 255).sum(axis=-1) < 12
    return is_bg.mean(), (~is_bg).mean()


@pytest.mark.gl
@pytest.mark.parametrize("args", [["--culling", "gpu"], ["--culling", "cpu"], ["--grass", "grid"]],
                         ids=["gpu-culled", "cpu-culled", "grid"])
def test_sample_zone_split_renders_with_polygon_line_mode_forbidden(tmp_path, no_polygon_lines, args):
    """Terrain, doodads and each grass path of the sample zone: the split frame renders with
    polygon line mode forbidden; its right half is lines over the background, its left half filled."""
    from PIL import Image

    from wowgrass.cli.main import cli

    def read_png(path):
        return np.asarray(Image.open(path).convert("RGB"))

    w, h = 192, 108
    out = tmp_path / "split.png"
    r = CliRunner().invoke(cli, ["view", "--output", str(out), "--size", f"{w}x{h}", "--camera", "60,60",
                                 "--samples", "0", "--frames", "2", "--split", "--json", *args])
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    assert res["frame"]["draw_call_count"] > 0
    img = read_png(out)
    bg, ink = _bg_and_lines(img, w // 2, w)
    assert bg > 0.2 and ink > 0.05  # lines, with the background between them
    assert _bg_and_lines(img, 0, w // 2)[0] == 0.0  # the filled half has no background below the horizon
    r = CliRunner().invoke(cli, ["view", "--output", str(out), "--size", f"{w}x{h}", "--camera", "60,60",
                                 "--samples", "0", "--frames", "1", "--wireframe", *args])
    assert r.exit_code == 0, r.output
    bg, ink = _bg_and_lines(read_png(out), 0, w)
    assert bg > 0.2 and ink > 0.05
