"""The edit session's grass: each tile's live placement and its chunks', kept until a change makes
them stale. The cache subscribes to the session's changes (``at_once``: it hears them under the
session's lock, as they are made, so nobody reads a placement of bytes that are gone) and drops
what a change names: the tile's whole placement and its changed chunks, or everything when the
tables changed.

A chunk placed alone is its part of the whole tile's placement (a chunk's grass depends on its own
data only; tests compare), so an edit's chunks are placed again for a fraction of a tile's time.
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

    def _place(self, tile):
        """The strategy's placement of a tile, less what the client's draw capacity drops (as a
        client bake of the saved tile keeps it: grass/bake.py)."""
        from wowgrass.grass.bake import ModelTable, client_draw_capacity

        s = self.session
        if self._model_table is None:
            self._model_table = ModelTable(s.data.read)
        inst = s.strategy.place(tile, s.catalog, map_name=s.placement_map_name)
        return client_draw_capacity(inst, s.catalog, s.strategy, self._model_table)[0]

    def tile_instances(self, tile):
        """The live placement of a whole tile (placed again after a change, kept until the next)."""
        with self.session.lock:
            key = (int(tile[0]), int(tile[1]))
            inst = self._placed.get(key)
            if inst is None:
                inst = self._place(self.session.tile(key))
                self._placed[key] = inst
            return inst

    def place_chunks(self, tile, chunk_indices) -> dict:
        """{MCNK index: Instances} of some chunks of a tile, placed now: the tile is placed with
        every other chunk's layers hidden (see the module docstring)."""
        from wowgrass.grass.placement import Instances

        want = sorted({int(i) for i in chunk_indices})
        with self.session.lock:
            key = (int(tile[0]), int(tile[1]))
            full = self._placed.get(key)
            out = {}
            todo = []
            for i in want:
                hit = self._chunk_placed.get((key, i))
                if hit is not None:
                    out[i] = hit
                elif full is None:
                    todo.append(i)
            if full is None and todo:
                t = self.session.tile(key)
                keep = np.zeros(256, bool)
                keep[todo] = True
                masked = dataclasses.replace(t, n_layers=np.where(keep, t.n_layers, 0).astype(t.n_layers.dtype))
                full_part = self._place(masked)
            else:
                full_part = full
            if full_part is not None:
                order = np.argsort(full_part.chunk, kind="stable")
                chunks = full_part.chunk[order]
                for i in (want if full is not None else todo):
                    if i in out:
                        continue
                    lo, hi = np.searchsorted(chunks, i), np.searchsorted(chunks, i, side="right")
                    sel = order[lo:hi]
                    inst = Instances(full_part.model[sel], np.ascontiguousarray(full_part.pos[sel]), full_part.yaw[sel],
                                     full_part.scale[sel], full_part.chunk[sel], full_part.cell[sel], full_part.models)
                    self._chunk_placed[(key, i)] = out[i] = inst
            return out

    def chunk_instances(self, tile, chunk_index: int):
        """The grass of one chunk as grass/placement.py's Instances."""
        return self.place_chunks(tile, [chunk_index])[int(chunk_index)]
