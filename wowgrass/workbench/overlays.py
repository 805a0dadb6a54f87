"""The terrain overlays: the workbench's names and colours for render's per-cell marks
(render/sources/cell_marks.py ``CellMarks``: mark slots, a palette, a 128x128 RGBA8 image per tile).

R: the effect set the cell grows (an index into :class:`SetColours` + 1; 0 where it grows no
grass); G: a bit per mark slot (``CELL_*``, :data:`MARKS`' order): a grass texture carrying no
effect id (the audit's "unassigned"), stale doodadMapping, noEffectDoodad, hole. Computed from the
parsed tile with the audit's own per-cell facts (:func:`wowgrass.edit.audit.tile_facts`), so the
window and ``effects audit`` agree.
"""

from __future__ import annotations

import threading

import numpy as np

from wowgrass.edit.audit import SET_PALETTE, tile_facts
from wowgrass.formats.adt import NO_EFFECT_IDS
from wowgrass.render.sources.cell_marks import (CELLS, SHOW_CHUNK_GRID, SHOW_PALETTE, SHOW_TILE_GRID, MarkLook,
                                                show_mark)

OVERLAYS = (  # (name, key, label): the checkboxes and their keys, in the panel's order
    ("sets", "1", "effect set per cell"),
    ("unassigned", "2", "grass texture without effect id"),
    ("stale", "3", "stale doodadMapping"),
    ("excluded", "4", "noEffectDoodad (excluded)"),
    ("holes", "5", "holes"),
    ("chunks", "6", "chunk grid"),
    ("tiles", "7", "tile grid"),
    ("rules", "8", "rule governing each cell"),
)
DRAWN_AS = {"rules": "sets"}  # the rules overlay colours the cells by the palette, as the sets do (rules_bench.py)

# the mark slots, in slot order: each overlay's look on the terrain
MARKS = (
    ("unassigned", MarkLook((1.0, 0.0, 0.86), 0.65)),
    ("stale", MarkLook((1.0, 0.84, 0.0), 0.6)),
    ("excluded", MarkLook((0.15, 0.19, 0.43), 0.35, "hatch", 0.4)),  # hatched: the ground stays readable
    ("holes", MarkLook((0.9, 0.05, 0.05), 0.8, "border")),  # no triangles: the neighbours' edges facing them
)
CELL_UNASSIGNED, CELL_STALE, CELL_EXCLUDED, CELL_HOLE = (1 << i for i in range(len(MARKS)))  # G bits
OVERLAY_BITS = {"sets": SHOW_PALETTE, **{name: show_mark(i) for i, (name, _) in enumerate(MARKS)},
                "chunks": SHOW_CHUNK_GRID, "tiles": SHOW_TILE_GRID}  # CellMarks.mask bit of each overlay


def give_marks(cells) -> None:
    """Hand the overlays' palette and mark looks to the terrain's :class:`CellMarks`."""
    cells.look(palette=SetColours.shader_colours(), marks=[look for _, look in MARKS])


class SetColours:
    """Effect id -> colour index, given in the order sets are first met (stable while the view
    runs), the audit picture's palette."""

    def __init__(self):
        self.index: dict[int, int] = {}
        self._lock = threading.Lock()

    def of(self, effect_ids: np.ndarray) -> np.ndarray:
        """Colour index of each id (new ids get the next ones)."""
        with self._lock:
            for e in np.unique(effect_ids).tolist():
                if e not in self.index:
                    self.index[e] = len(self.index)
            lut = self.index
        return np.array([lut[e] for e in effect_ids.tolist()], np.int64) if effect_ids.size else np.zeros(0, np.int64)

    @staticmethod
    def rgb(i: int) -> tuple[int, int, int]:
        return SET_PALETTE[i % len(SET_PALETTE)]

    @staticmethod
    def shader_colours() -> tuple:
        return tuple(tuple(c / 255.0 for c in rgb) for rgb in SET_PALETTE)

    def legend(self) -> list[tuple[int, tuple[int, int, int]]]:
        """(effect id, RGB) of every set met so far."""
        with self._lock:
            return [(e, self.rgb(i)) for e, i in self.index.items()]


def grass_effects(catalog, effect_ids) -> np.ndarray:
    """(n,) bool: the ids whose GroundEffectTexture row names doodads (they grow grass)."""
    ids = np.asarray(effect_ids, np.int64).reshape(-1)
    if catalog is None or not len(ids):
        return np.zeros(len(ids), bool)
    rows = catalog.lookup(ids)
    out = rows >= 0
    out[out] = ~catalog.no_doodads[rows[out]]
    return out


def tile_grass_textures(tile, catalog) -> set[str]:
    """Lower-case MTEX names whose layers carry a grass effect somewhere in ``tile``."""
    n = np.asarray(tile.n_layers, np.int64)
    ci, li = np.nonzero(np.arange(4)[None, :] < n[:, None])
    tex = np.asarray(tile.layer_texture, np.int64)[ci, li]
    eff = np.asarray(tile.layer_effect, np.int64)[ci, li]
    grows = grass_effects(catalog, eff)
    names = list(tile.textures)
    return {names[t].lower() for t in np.unique(tex[grows]).tolist() if 0 <= t < len(names)}


def cell_overlay(tile, key, catalog, colours: SetColours, grass_textures: set[str]) -> np.ndarray:
    """(128, 128, 4) u1 of ``tile`` (an :class:`~wowgrass.formats.adt.AdtTile`), rows south,
    columns east, chunk k's cells at rows (k // 16) * 8.., columns (k % 16) * 8.. (MCNK order,
    as terrain.glsl reads the chunk from the vertex)."""
    f = tile_facts(tile, key)
    ce = f["cell_effect"].astype(np.int64)  # (256, 8, 8)
    valid = f["valid"]
    grows = valid & grass_effects(catalog, ce).reshape(ce.shape)
    out = np.zeros((256, 8, 8, 4), np.uint8)
    if grows.any():
        out[..., 0][grows] = (colours.of(ce[grows]) % 255 + 1).astype(np.uint8)
    names = np.array([t.lower() for t in f["textures"]] + [""], dtype=object)
    ct = f["cell_texture"].astype(np.int64)
    ct = np.where((ct >= 0) & (ct < len(names) - 1), ct, len(names) - 1)
    is_grass_tex = np.array([n in grass_textures for n in names], bool)
    unassigned = is_grass_tex[ct] & np.isin(ce, list(NO_EFFECT_IDS)) & valid
    flags = (unassigned * CELL_UNASSIGNED) | (f["stale"] * CELL_STALE) | (f["excluded"] * CELL_EXCLUDED) \
        | (f["hole"] * CELL_HOLE)
    out[..., 1] = flags.astype(np.uint8)
    return np.ascontiguousarray(out.reshape(16, 16, 8, 8, 4).transpose(0, 2, 1, 3, 4).reshape(CELLS, CELLS, 4))
