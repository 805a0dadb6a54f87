"""Per-cell marks on the terrain (terrain.glsl): a texel a cell for each complete tile, and what each
mark looks like. Render knows mark slots, not what they mean: the caller names them and gives their
colours (the workbench's overlays: wowgrass/workbench/overlays.py).

A tile's marks are a (128, 128, 4) u1 image, rows south, columns east, chunks in MCNK order:
R: a palette index + 1 (0: none); G: one bit per mark slot (bit i: slot i); B, A unused.
:attr:`CellMarks.mask` says what is drawn: :data:`SHOW_PALETTE`, :func:`show_mark` of a slot, the
chunk and tile grids. Drawing them costs the terrain's fragment shader a branch when nothing is shown.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..constants import SHADER_DEFINES
from ..gl.memory import gpu_memory
from ..gl.state import set_uniform

CELLS = 128  # a tile's cells per side: 16 chunks of 8
MARK_SLOTS = SHADER_DEFINES["CELL_MARK_SLOTS"]  # bits of the G channel terrain.glsl reads
PALETTE_SIZE = 20  # colours of the R channel (index % 20)
SHOW_PALETTE = 1
SHOW_CHUNK_GRID = 2 << MARK_SLOTS
SHOW_TILE_GRID = 4 << MARK_SLOTS
MARK_STYLES = ("fill", "hatch", "border")  # terrain.glsl's MARK_FILL, MARK_HATCH, MARK_BORDER


def show_mark(slot: int) -> int:
    """The :attr:`CellMarks.mask` bit that draws mark slot ``slot``."""
    if not 0 <= slot < MARK_SLOTS:
        raise ValueError(f"mark slot {slot}: there are {MARK_SLOTS}")
    return 2 << slot


@dataclass(frozen=True)
class MarkLook:
    """How a mark slot is drawn: ``colour`` (0..1 RGB) mixed into the ground by ``amount``; "fill"
    the marked cells, "hatch" them (``hatch`` more on every other diagonal stripe, so the ground
    stays readable), or "border": the edges of the cells next to a marked one, facing it (for
    cells that have no triangles to draw on, as holes)."""

    colour: tuple
    amount: float
    style: str = "fill"
    hatch: float = 0.0

    def __post_init__(self):
        if self.style not in MARK_STYLES:
            raise ValueError(f"mark style {self.style!r}: one of {', '.join(MARK_STYLES)}")


class CellMarks:
    """The terrain's per-cell marks: a 128x128 RGBA8 slice per complete-tile slot, what the caller
    gave for each tile (kept, so a slot that moves or a texture that grows is written again), the
    palette and the marks' looks, and the brush and picked-cell uniforms."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.tex = None
        self.capacity = 0
        self.data: dict = {}  # tile key -> (128, 128, 4) u1
        self.written: dict = {}  # slot -> the data it holds (identity)
        self.mask = 0  # SHOW_* bits drawn
        self.brush = (0.0, 0.0, 0.0, 0.0)  # x, y, radius, shown
        self.pick = (0.0, 0.0, 0.0, 0.0)  # NW corner x, y, size, shown
        self.palette: tuple = tuple((0.5, 0.5, 0.5) for _ in range(PALETTE_SIZE))
        self.marks: tuple = (None,) * MARK_SLOTS  # a MarkLook per slot; None: not drawn
        self._serial = 0  # bumped by set(): what texture() last wrote is checked again
        self._seen = None  # (terrain version, serial, capacity) texture() last made current

    def look(self, palette=None, marks=None) -> None:
        """The palette (``PALETTE_SIZE`` RGB) and the marks (up to ``MARK_SLOTS`` :class:`MarkLook`
        or None, in slot order) the caller draws with."""
        if palette is not None:
            palette = tuple(tuple(float(v) for v in rgb) for rgb in palette)
            if len(palette) != PALETTE_SIZE:
                raise ValueError(f"cell mark palette: {len(palette)} colours, want {PALETTE_SIZE}")
            self.palette = palette
        if marks is not None:
            marks = tuple(marks)
            if len(marks) > MARK_SLOTS:
                raise ValueError(f"cell marks: {len(marks)} given, there are {MARK_SLOTS} slots")
            self.marks = marks + (None,) * (MARK_SLOTS - len(marks))

    def set(self, key, cells: np.ndarray | None) -> None:
        self._serial += 1
        if cells is None:
            self.data.pop(key, None)
        else:
            cells = np.ascontiguousarray(cells, np.uint8)
            if cells.shape != (CELLS, CELLS, 4):
                raise ValueError(f"cell marks of {key}: shape {cells.shape}, want ({CELLS}, {CELLS}, 4)")
            self.data[key] = cells

    @property
    def active(self) -> bool:
        return bool(self.mask) or self.brush[3] > 0.5 or self.pick[3] > 0.5

    def texture(self, tiles: dict, capacity: int, version: int):
        """The texture array with every resident complete tile's slice as given (written when the
        data or the slot changed; only while a mark is shown). The resident tiles are walked
        only when ``version`` (the terrain's: tiles came or went) or the data changed, not every
        frame."""
        import moderngl

        state = (version, self._serial, capacity)
        if self.tex is not None and state == self._seen:
            return self.tex
        self._seen = state

        if self.tex is None or self.capacity < capacity:
            if self.tex is not None:
                self.tex.release()
            self.capacity = max(capacity, 1)
            self.tex = gpu_memory(self.ctx).track(self.ctx.texture_array((CELLS, CELLS, self.capacity), 4),
                                                  "terrain-cells")
            self.tex.filter = (moderngl.NEAREST, moderngl.NEAREST)
            self.written = {}
        empty = None
        for key, t in tiles.items():
            if t.far:
                continue
            d = self.data.get(key)
            if self.written.get(t.slot, False) is d:
                continue
            if d is None:
                empty = np.zeros((CELLS, CELLS, 4), np.uint8) if empty is None else empty
            self.tex.write((d if d is not None else empty).tobytes(), viewport=(0, 0, t.slot, CELLS, CELLS, 1))
            self.written[t.slot] = d
        return self.tex

    def uniforms(self, prog) -> None:
        set_uniform(prog, "uMarksShown", int(self.mask))
        set_uniform(prog, "uBrush", tuple(float(v) for v in self.brush))
        set_uniform(prog, "uPick", tuple(float(v) for v in self.pick))
        if self.mask:
            set_uniform(prog, "uPalette", self.palette)
            set_uniform(prog, "uMarkColours", tuple((0.0, 0.0, 0.0, 0.0) if m is None else
                                                    (*(float(v) for v in m.colour), float(m.amount))
                                                    for m in self.marks))
            set_uniform(prog, "uMarkStyles", tuple((-1.0, 0.0) if m is None else
                                                   (float(MARK_STYLES.index(m.style)), float(m.hatch))
                                                   for m in self.marks))

    def release(self):
        if self.tex is not None:
            self.tex.release()
        self.tex, self.capacity, self.written, self._seen = None, 0, {}, None
