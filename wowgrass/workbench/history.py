"""Undo and redo: each step keeps what it changed. A tile's change is a :class:`TilePatch` (the
bytes that differ, before and after, and the edited field arrays), a few kilobytes where the tile
is a megabyte, so an hour of brush strokes holds no copies of tiles; going back re-applies it to the
current bytes and parses nothing. The tables' change keeps both states whole (a new row changes
their length; a step of them is rare)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class TilePatch:
    """The bytes a tile edit changed (``at`` offsets, ``before``/``after`` values) and the edited
    parsed arrays before and after ({AdtTile field name: array})."""

    at: np.ndarray
    before: np.ndarray
    after: np.ndarray
    fields_before: dict
    fields_after: dict

    @classmethod
    def between(cls, old: bytes, new: bytes, fields_before: dict, fields_after: dict) -> "TilePatch":
        if len(old) != len(new):
            raise ValueError("a tile edit never changes the tile's length")
        a, b = np.frombuffer(old, np.uint8), np.frombuffer(new, np.uint8)
        at = np.flatnonzero(a != b)
        return cls(at, a[at].copy(), b[at].copy(), fields_before, fields_after)

    def apply(self, raw: bytes, which: int) -> bytes:
        """``raw`` (the state on the other side) turned into the state before (0) or after (1)."""
        buf = bytearray(raw)
        np.frombuffer(buf, np.uint8)[self.at] = self.before if which == 0 else self.after
        return bytes(buf)

    def fields(self, which: int) -> dict:
        return self.fields_before if which == 0 else self.fields_after

    @classmethod
    def chain(cls, patches: list["TilePatch"]) -> "TilePatch":
        """One patch doing ``patches`` in order: each byte's first before and last after."""
        at = np.concatenate([p.at for p in patches])
        before = np.concatenate([p.before for p in patches])
        after = np.concatenate([p.after for p in patches])
        first = np.unique(at, return_index=True)[1]
        last = len(at) - 1 - np.unique(at[::-1], return_index=True)[1]
        fb, fa = {}, {}
        for p in patches:
            for k, v in p.fields_before.items():
                fb.setdefault(k, v)
            fa.update(p.fields_after)
        for k in fb.keys() - fa.keys():   # cannot happen: every step records both sides of a field
            fa[k] = fb[k]
        keep = before[first] != after[last]
        return cls(at[first][keep], before[first][keep], after[last][keep], fb, fa)


@dataclass
class Step:
    """One change: ``tiles`` {tile: TilePatch}, ``tables`` (before, after) or None (the session's
    states of the tables, opaque here)."""

    label: str
    tiles: dict = field(default_factory=dict)
    tables: tuple | None = None


class History:
    """A linear undo stack: a new step drops the steps undone before it."""

    def __init__(self, limit: int = 1000):
        self.limit = int(limit)
        self._done: list[Step] = []
        self._undone: list[Step] = []

    def push(self, step: Step) -> None:
        self._done.append(step)
        self._undone.clear()
        if len(self._done) > self.limit:
            del self._done[0]

    def undo(self) -> Step | None:
        if not self._done:
            return None
        step = self._done.pop()
        self._undone.append(step)
        return step

    def redo(self) -> Step | None:
        if not self._undone:
            return None
        step = self._undone.pop()
        self._done.append(step)
        return step

    def forget(self, tile=None, *, tables: bool = False) -> None:
        """Drop the steps touching ``tile`` (or the tables) and every step before them, and the redo
        stack: the file was reloaded from disk, so the old states no longer lead to it."""
        hit = [i for i, s in enumerate(self._done) if (tile is not None and tile in s.tiles)
               or (tables and s.tables is not None)]
        if hit:
            del self._done[:max(hit) + 1]
        self._undone.clear()

    def merge_last(self, n: int, label: str | None = None) -> None:
        """The last ``n`` steps as one (a brush stroke's dabs): each tile's state before the first
        and after the last, the tables' likewise; ``label`` names it (default: the first's)."""
        if n < 1 or len(self._done) < n:
            return
        steps = self._done[-n:]
        merged = Step(label or steps[0].label)
        for key in {k for step in steps for k in step.tiles}:
            merged.tiles[key] = TilePatch.chain([step.tiles[key] for step in steps if key in step.tiles])
        for step in steps:
            if step.tables is not None:
                merged.tables = (merged.tables[0] if merged.tables is not None else step.tables[0], step.tables[1])
        self._done[-n:] = [merged]

    @property
    def done_count(self) -> int:
        return len(self._done)

    @property
    def can_undo(self) -> bool:
        return bool(self._done)

    @property
    def can_redo(self) -> bool:
        return bool(self._undone)

    @property
    def labels(self) -> list[str]:
        return [s.label for s in self._done]

    @property
    def redo_labels(self) -> list[str]:
        return [s.label for s in reversed(self._undone)]
