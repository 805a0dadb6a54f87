"""Synthetic AdtTile-like and GroundEffectCatalog-like inputs for the placement/bundle/bake tests.

They carry exactly the contract attributes placement reads (docs/architecture.md), built from
plain numpy so placement can be tested without the ADT and DBC parsers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from wowgrass.formats.adt import CHUNK_SIZE as CHUNK
from wowgrass.formats.adt import TILE_SIZE as TILE


@dataclass
class FakeCatalog:
    ids: np.ndarray
    density: np.ndarray
    slot_model: np.ndarray
    slot_weight: np.ndarray
    models: list[str]
    has_weights: bool = False
    build: str = "1.12"
    slot_doodad: np.ndarray | None = None  # DoodadID as stored (the client strategy reads it)

    def lookup(self, effect_ids):
        effect_ids = np.asarray(effect_ids, dtype=np.uint32)
        order = np.argsort(self.ids)
        sorted_ids = self.ids[order]
        pos = np.clip(np.searchsorted(sorted_ids, effect_ids), 0, len(sorted_ids) - 1)
        found = sorted_ids[pos] == effect_ids
        return np.where(found, order[pos], -1).astype(np.int64)

    def rows_used(self, effect_ids):
        rows = self.lookup(effect_ids)
        rows = np.unique(rows[rows >= 0])
        return b"".join(
            self.ids[i : i + 1].tobytes() + self.density[i : i + 1].tobytes() + self.slot_model[i].tobytes()
            + self.slot_weight[i].tobytes()
            for i in rows
        )


def make_catalog(rows, models=None, *, has_weights=False, build=None, doodads=None):
    """rows: list of (id, density, [4 slot model indices, -1 empty], [4 weights]).

    ``doodads``: the rows' DoodadIDs as stored, (n, 4); by default model + 100 where a slot has a
    model, else the build's empty marker (0 in 3.3.5, 0xFFFFFFFF before)."""
    ids = np.array([r[0] for r in rows], dtype=np.uint32)
    density = np.array([r[1] for r in rows], dtype=np.int32)
    slot_model = np.array([r[2] for r in rows], dtype=np.int32).reshape(-1, 4)
    weights = np.array([r[3] if len(r) > 3 else [0, 0, 0, 0] for r in rows], dtype=np.int32).reshape(-1, 4)
    n_models = int(slot_model.max(initial=-1)) + 1
    models = models or [f"World\\NoDXT\\Detail\\Fake{i:02d}.m2" for i in range(n_models)]
    build = build or ("3.3.5" if has_weights else "1.12")
    if doodads is None:
        doodads = np.where(slot_model >= 0, slot_model + 100, 0 if build == "3.3.5" else -1)
    slot_doodad = np.asarray(doodads, dtype=np.int64).astype(np.uint32).view(np.int32).reshape(-1, 4)
    return FakeCatalog(ids, density, slot_model, weights, models, has_weights, build, slot_doodad)


@dataclass
class FakeTile:
    positions: np.ndarray
    heights: np.ndarray
    n_layers: np.ndarray
    layer_texture: np.ndarray
    layer_effect: np.ndarray
    alpha: np.ndarray
    holes: np.ndarray
    no_effect_doodad: np.ndarray
    doodad_mapping: np.ndarray
    textures: list[str] = field(default_factory=list)
    col: int = 32
    row: int = 32
    normals: np.ndarray | None = None
    index_xy: np.ndarray = field(default_factory=lambda: np.stack([np.arange(256) % 16, np.arange(256) // 16], axis=1))


def make_tile(col=32, row=32, *, n_layers=1, effects=(453,), textures=("Tileset\\Grass.blp",), seed=0,
              height_amp=5.0, alpha=None):
    """A flat-ish synthetic tile: every chunk has ``n_layers`` layers with ``effects``."""
    rng = np.random.default_rng(seed)
    zp = 32 * TILE
    iy, ix = np.divmod(np.arange(256), 16)
    positions = np.stack(
        [zp - row * TILE - iy * CHUNK, zp - col * TILE - ix * CHUNK, np.full(256, 100.0)], axis=1
    ).astype(np.float32)
    heights = (rng.standard_normal((256, 145)) * height_amp).astype(np.float32)
    nl = np.full(256, n_layers, dtype=np.uint8)
    layer_texture = np.full((256, 4), -1, dtype=np.int32)
    layer_effect = np.zeros((256, 4), dtype=np.uint32)
    for i in range(n_layers):
        layer_texture[:, i] = i % max(1, len(textures))
        layer_effect[:, i] = effects[i % len(effects)]
    if alpha is None:
        alpha = np.zeros((256, 4, 64, 64), dtype=np.uint8)
    return FakeTile(
        positions=positions,
        heights=heights,
        n_layers=nl,
        layer_texture=layer_texture,
        layer_effect=layer_effect,
        alpha=alpha,
        holes=np.zeros(256, dtype=np.uint16),
        no_effect_doodad=np.zeros((256, 8, 8), dtype=bool),
        doodad_mapping=np.zeros((256, 8, 8), dtype=np.uint8),
        textures=list(textures),
        col=col,
        row=row,
    )


def random_tile(seed=1, col=40, row=30):
    """Four layers with random alpha (summing to <= 255), random masks, holes and mapping."""
    rng = np.random.default_rng(seed)
    textures = ["Tileset\\Elwynn\\ElwynnGrassBase.blp", "Tileset\\Elwynn\\ElwynnDirtBase.blp",
                "Tileset\\Elwynn\\ElwynnCobblestoneBase.blp", "Tileset\\Elwynn\\ElwynnFlowers.blp"]
    t = make_tile(col, row, n_layers=4, effects=(453, 7043, 0, 40199), textures=textures, seed=seed,
                  height_amp=20.0)
    t.n_layers = rng.integers(1, 5, size=256).astype(np.uint8)
    for ch in range(256):
        t.layer_texture[ch, t.n_layers[ch]:] = -1
        t.layer_effect[ch, t.n_layers[ch]:] = 0
    # smooth-ish random alpha per layer: blocky 8x8 values plus noise, renormalised to <= 255
    a = rng.integers(0, 256, size=(256, 3, 8, 8)).repeat(8, axis=2).repeat(8, axis=3).astype(np.int32)
    a += rng.integers(-20, 21, size=a.shape)
    a = np.clip(a, 0, 255)
    tot = a.sum(axis=1, keepdims=True)
    a = np.where(tot > 255, a * 255 // np.maximum(tot, 1), a)
    alpha = np.zeros((256, 4, 64, 64), dtype=np.uint8)
    alpha[:, 1:] = a
    exists = np.arange(4)[None, :] < t.n_layers[:, None]
    alpha[~exists] = 0
    t.alpha = alpha
    t.no_effect_doodad = rng.random((256, 8, 8)) < 0.1
    t.holes = np.where(rng.random(256) < 0.05, rng.integers(0, 65536, 256), 0).astype(np.uint16)
    t.doodad_mapping = rng.integers(0, 4, size=(256, 8, 8)).astype(np.uint8)
    return t


def std_catalog(has_weights=False):
    return make_catalog(
        [
            (453, 5, [0, 1, 2, 3], [1, 1, 1, 1]),
            (7043, 12, [4, -1, 5, -1], [3, 0, 1, 0]),
            (40199, 0, [6, 7, 8, 9], [8, 4, 2, 2]),
            (1493, 0, [-1, -1, -1, -1], [0, 0, 0, 0]),
        ],
        has_weights=has_weights,
    )
