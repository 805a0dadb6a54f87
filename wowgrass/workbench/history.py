"""Undo and redo: each step keeps the state before and after it of what it touched (tile bytes and
parsed tiles, the ground-effect tables), so going back and forth copies nothing and parses nothing."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Step:
    """One change: ``tiles`` {tile: (before, after)}, ``tables`` (before, after) or None; each state
    is whatever the session stores for it (opaque here)."""

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
        for step in steps:
            for key, (before, after) in step.tiles.items():
                merged.tiles[key] = (merged.tiles[key][0] if key in merged.tiles else before, after)
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
