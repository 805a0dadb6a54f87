"""The edit session's grass: each tile's live placement and its chunks', kept until a change makes
them stale. The cache subscribes to the session's changes (``at_once``: it hears them under the
session's lock, as they are made, so nobody reads a placement of bytes that are gone) and drops
what a change names: the tile's whole placement and its changed chunks, or everything when the
tables changed.

A chunk placed alone is its part of the whole tile's placement (a chunk's grass depends on its own
data only; tests compare), so an edit's chunks are placed again for a fraction of a tile's time.
A placement runs outside the session's lock, from the tile and tables as they were when it began
(an edit on the frame's thread never waits for it); it is kept only while they still are.
"""

from __future__ import annotations

import dataclasses

import numpy as np


class PlacementCache:
    """Placements of ``session``'s tiles as a bake of the saved tile gives them (the session's
    strategy, tables and bytes); see the module docstring."""

    def __init__(self, session):
        self.session = session
        self._model_table = None  # detail models' geometry for the draw capacity, read on demand
        self._placed: dict = {}  # tile -> its whole placement
        self._chunk_placed: dict = {}  # (tile, MCNK index) -> Instances
        session.subscribe(self.changed, at_once=True)

    def changed(self, change) -> None:
        """Drop what ``change`` made stale (called by the session, under its lock)."""
        if change.tables:
            self._placed.clear()
            self._chunk_placed.clear()
        for key, chunks in (change.chunks or {}).items():
            self._placed.pop(key, None)
            for i in chunks:
                self._chunk_placed.pop((key, int(i)), None)

    def _place(self, tile, catalog):
        """The strategy's placement of a tile, less what the client's draw capacity drops (as a
        client bake of the saved tile keeps it: grass/bake.py)."""
        from wowgrass.grass.bake import ModelTable, client_draw_capacity

        s = self.session
        if self._model_table is None:
            self._model_table = ModelTable(s.data.read)
        inst = s.strategy.place(tile, catalog, map_name=s.placement_map_name)
        return client_draw_capacity(inst, catalog, s.strategy, self._model_table)[0]

    def _snapshot(self, key):
        """(tile, tables, versions) read together under the session's lock: what a placement
        outside the lock works from (an edit landing meanwhile makes a new tile object)."""
        s = self.session
        with s.lock:
            return s.tile(key), s.catalog, (s.tile_version(key), s.tables_version)

    def _current(self, versions, key) -> bool:
        s = self.session
        return versions == (s.tile_version(key), s.tables_version)

    def tile_instances(self, tile):
        """The live placement of a whole tile (placed again after a change, kept until the next).
        Placed outside the session's lock (an edit on another thread does not wait for it): the
        placement of the bytes as they were when it began."""
        key = (int(tile[0]), int(tile[1]))
        with self.session.lock:
            inst = self._placed.get(key)
            if inst is not None:
                return inst
            t, cat, versions = self._snapshot(key)
        inst = self._place(t, cat)
        with self.session.lock:
            if self._current(versions, key):
                self._placed[key] = inst
        return inst

    def place_chunks(self, tile, chunk_indices) -> dict:
        """{MCNK index: Instances} of some chunks of a tile, placed now: the tile is placed with
        every other chunk's layers hidden (see the module docstring). Placed outside the session's
        lock, from the bytes as they were when it began (kept only while they still are)."""
        from wowgrass.grass.placement import Instances

        want = sorted({int(i) for i in chunk_indices})
        key = (int(tile[0]), int(tile[1]))
        with self.session.lock:
            full = self._placed.get(key)
            out = {}
            todo = []
            for i in want:
                hit = self._chunk_placed.get((key, i))
                if hit is not None:
                    out[i] = hit
                elif full is None:
                    todo.append(i)
            t, cat, versions = self._snapshot(key)
        if full is None and todo:
            keep = np.zeros(256, bool)
            keep[todo] = True
            masked = dataclasses.replace(t, n_layers=np.where(keep, t.n_layers, 0).astype(t.n_layers.dtype))
            full_part = self._place(masked, cat)
        else:
            full_part = full
        made = {}
        if full_part is not None:
            order = np.argsort(full_part.chunk, kind="stable")
            chunks = full_part.chunk[order]
            for i in (want if full is not None else todo):
                if i in out:
                    continue
                lo, hi = np.searchsorted(chunks, i), np.searchsorted(chunks, i, side="right")
                sel = order[lo:hi]
                made[i] = out[i] = Instances(full_part.model[sel], np.ascontiguousarray(full_part.pos[sel]),
                                             full_part.yaw[sel], full_part.scale[sel], full_part.chunk[sel],
                                             full_part.cell[sel], full_part.models)
        with self.session.lock:
            if self._current(versions, key):
                self._chunk_placed.update({(key, i): inst for i, inst in made.items()})
        return out

    def chunk_instances(self, tile, chunk_index: int):
        """The grass of one chunk as grass/placement.py's Instances."""
        return self.place_chunks(tile, [chunk_index])[int(chunk_index)]
