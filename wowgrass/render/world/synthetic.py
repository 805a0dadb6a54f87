"""Synthetic scenes for tests and benchmarks: no game data, no bake.

A real :class:`~wowgrass.formats.adt.AdtTile` built from arrays (a smooth heightfield, a grass and
a dirt layer blended by an alpha map, an optional hole), crossed-quad grass models and random
instances in ``INSTANCE_DTYPE`` standing on the terrain.
"""

from __future__ import annotations

import numpy as np

from wowgrass.game.coords import tile_origin
from wowgrass.grass.bundle import INSTANCE_DTYPE

from ..constants import CHUNK_SIZE, TILE_SIZE, UNIT_SIZE
from ..gl.meshes import MeshData, crossed_quads
from ..sources.terrain_mesh import COLS, ROWS


def synthetic_tile(col: int = 32, row: int = 32, *, hole_chunk: int | None = None, relief: float = 6.0):
    from wowgrass.formats.adt import AdtTile

    x0, y0 = tile_origin(col, row)
    i = np.arange(256)
    px = x0 - (i // 16)[:, None] * CHUNK_SIZE - ROWS[None, :] * UNIT_SIZE
    py = y0 - (i % 16)[:, None] * CHUNK_SIZE - COLS[None, :] * UNIT_SIZE
    h = relief * (np.sin(px / 37.0) * np.cos(py / 53.0)) + 0.02 * (px - x0)
    # normals of the analytic surface
    dhdx = relief * np.cos(px / 37.0) / 37.0 * np.cos(py / 53.0) + 0.02
    dhdy = -relief * np.sin(px / 37.0) * np.sin(py / 53.0) / 53.0
    n = np.stack([-dhdx, -dhdy, np.ones_like(h)], axis=-1)
    n /= np.linalg.norm(n, axis=-1, keepdims=True)
    normals = np.clip(np.round(n * 127), -127, 127).astype(np.int8)
    alpha = np.zeros((256, 4, 64, 64), np.uint8)
    yy, xx = np.mgrid[0:64, 0:64]
    alpha[:, 1] = (((xx // 16 + yy // 16) % 2) * 255).astype(np.uint8)[None]  # dirt patches
    holes = np.zeros(256, np.uint16)
    if hole_chunk is not None:
        holes[hole_chunk] = 0xFFFF
    return AdtTile.from_arrays(
        col, row, abs_heights=h.astype(np.float32), normals=normals,
        textures=["synthetic\\grass.blp", "synthetic\\dirt.blp"],
        n_layers=np.full(256, 2, np.uint8),
        layer_texture=np.tile(np.array([0, 1, -1, -1], np.int32), (256, 1)),
        alpha=alpha, holes=holes,
    )


def synthetic_textures() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    g = np.empty((64, 64, 4), np.uint8)
    g[..., 0], g[..., 1], g[..., 2], g[..., 3] = 60, 110, 40, 255
    g[..., :3] = np.clip(g[..., :3].astype(int) + rng.integers(-12, 12, (64, 64, 1)), 0, 255)
    d = np.empty((64, 64, 4), np.uint8)
    d[..., 0], d[..., 1], d[..., 2], d[..., 3] = 120, 95, 70, 255
    return {"synthetic\\grass.blp": g, "synthetic\\dirt.blp": d}


def random_instances(n: int, lo_xy, hi_xy, *, tile=None, seed: int = 0, scale=(0.8, 1.2)) -> np.ndarray:
    """``n`` instances uniformly in the box [lo_xy, hi_xy], on ``tile``'s terrain when given."""
    rng = np.random.default_rng(seed)
    inst = np.zeros(n, INSTANCE_DTYPE)
    x = rng.uniform(lo_xy[0], hi_xy[0], n)
    y = rng.uniform(lo_xy[1], hi_xy[1], n)
    inst["pos"][:, 0], inst["pos"][:, 1] = x, y
    if tile is not None:
        ch = tile.chunk_index_at(x, y)
        ok = ch >= 0
        inst["pos"][ok, 2] = tile.heights_at(ch[ok], x[ok], y[ok])
    inst["yaw"] = rng.integers(0, 65536, n, dtype=np.uint32).astype(np.uint16)
    inst["scale"] = np.round(rng.uniform(*scale, n) * 4096).astype(np.uint16)
    return inst


class SyntheticSource:
    """A :class:`~wowgrass.render.world.streaming.TileSource` over synthetic tiles (tests, benchmarks)."""

    name = "synthetic"

    def __init__(self, tiles=((32, 32),), density: float = 0.05, seed: int = 0, models: int = 2,
                 instances: dict | None = None, hole_chunk: int | None = None, quads: int = 3,
                 mesh_factory=None, relief: float = 6.0):
        self.tiles = [tuple(t) for t in tiles]
        self.density, self.seed, self.n_models = density, seed, models
        self._instances = instances  # {(col, row): {model: array}} overrides the random ones
        self.hole_chunk = hole_chunk
        self.quads = quads
        self.mesh_factory = mesh_factory  # path -> MeshData, replaces the crossed quads
        self.missing_models: set[str] = set()
        self.relief = relief  # height amplitude of the terrain (world units)

    def model_names(self):
        return [f"synthetic\\grass{k}.m2" for k in range(self.n_models)]

    def load_tile(self, col: int, row: int) -> dict:
        tile = synthetic_tile(col, row, hole_chunk=self.hole_chunk, relief=self.relief)
        if self._instances is not None:
            grass = self._instances.get((col, row), {})
        else:
            x0, y0 = tile_origin(col, row)
            n = int(self.density * TILE_SIZE * TILE_SIZE)
            inst = random_instances(n, (x0 - TILE_SIZE, y0 - TILE_SIZE), (x0, y0), tile=tile,
                                    seed=self.seed + col * 64 + row)
            names = self.model_names()
            grass = {names[k]: inst[k::len(names)] for k in range(len(names))}
        return {"adt": tile, "textures": synthetic_textures(), "grass": grass, "doodads": {}}

    def load_terrain(self, col: int, row: int) -> dict:
        return {"adt": synthetic_tile(col, row, hole_chunk=self.hole_chunk, relief=self.relief),
                "textures": synthetic_textures()}

    def load_model(self, path: str) -> MeshData | None:
        if self.mesh_factory is not None:
            return self.mesh_factory(path)
        stem = path[:-3] if path.endswith(".m2") else path
        k = int(stem[-1]) if stem[-1:].isdigit() else 0
        m = crossed_quads(width=0.9 + 0.2 * k, height=0.55 + 0.1 * k, n=self.quads)
        m.name = path
        return m

    def ground_height(self, x: float, y: float) -> float | None:
        return None
