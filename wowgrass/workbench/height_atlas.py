"""The pick's ground: every resident tile's chunk positions and heights stacked into one set of
arrays, so a ray's samples over several tiles take one numpy pass, not one per tile (a pick is then
a handful of numpy calls: render/pick.py's march, its per-tile calls fused).

The atlas is brought up to date with the scene's resident tiles before a frame's picks (a tile's
arrays are copied once, when it arrives: the pick itself never reads or computes a tile). Heights
are the fan triangles' (:meth:`AdtTile.heights_at`'s arithmetic on the same float32 values), so a
pick here lands where ``render.pick.pick_ground`` lands (tests compare).
"""

from __future__ import annotations

import numpy as np

from wowgrass.formats.adt import CHUNK_SIZE, TILE_SIZE, UNIT_SIZE


class GroundAtlas:
    """The resident tiles' ground in one place (see the module docstring)."""

    def __init__(self):
        self._by_key: dict = {}  # tile -> (ground object, slot)
        self._free: list = []
        self._n = 0
        self.pos = np.zeros((0, 3))  # (slots * 256, 3) chunk positions (float32 values as float64)
        self.h = np.zeros((0, 145))  # (slots * 256, 145) heights relative to the chunk's base
        self.lookup = np.zeros((0, 256), np.int64)  # slot, IndexY * 16 + IndexX -> MCNK index
        self.origin = np.zeros((0, 2))  # slot -> chunk 0's (X, Y)
        self.span = np.zeros((0, 2))  # slot -> lowest, highest ground (NaN: a free slot)
        self.slots = np.full((64, 64), -1, np.int64)  # [col, row] -> slot
        self._sig = object()

    def __len__(self) -> int:
        return len(self._by_key)

    def sync(self, tiles: dict, version=None) -> None:
        """Take ``tiles`` ({key: resident tile with ``.adt``}) as the resident set: new or replaced
        tiles' arrays copied in, gone ones' slots freed. With ``version`` (the scene's, bumped when
        tiles come or go) nothing is walked while it is unchanged."""
        if version is not None and version == self._sig:
            return
        self._sig = version
        seen = set()
        for key, t in list(tiles.items()):
            g = getattr(t, "adt", None)
            if g is None:
                continue
            seen.add(key)
            have = self._by_key.get(key)
            if have is None or have[0] is not g:
                self._put(key, g, None if have is None else have[1])
        for key in [k for k in self._by_key if k not in seen]:
            _g, slot = self._by_key.pop(key)
            self._free.append(slot)
            self.slots[key[0] % 64, key[1] % 64] = -1
            self.span[slot] = np.nan

    def _grow(self, n: int) -> None:
        old = self._n
        self.pos = np.concatenate([self.pos, np.zeros(((n - old) * 256, 3))])
        self.h = np.concatenate([self.h, np.zeros(((n - old) * 256, 145))])
        self.lookup = np.concatenate([self.lookup, np.zeros((n - old, 256), np.int64)])
        self.origin = np.concatenate([self.origin, np.zeros((n - old, 2))])
        self.span = np.concatenate([self.span, np.full((n - old, 2), np.nan)])
        self._free += list(range(n - 1, old - 1, -1))
        self._n = n

    def _put(self, key, g, slot) -> None:
        if slot is None:
            if not self._free:
                self._grow(max(4, self._n * 2))
            slot = self._free.pop()
        s = slice(slot * 256, slot * 256 + 256)
        pos = np.asarray(g.positions, np.float32).astype(np.float64)
        h = np.asarray(g.heights, np.float32).astype(np.float64)
        self.pos[s] = pos
        self.h[s] = h
        ixy = np.asarray(g.index_xy).astype(np.int64)
        self.lookup[slot, ixy[:, 1] * 16 + ixy[:, 0]] = np.arange(256)
        self.origin[slot] = pos[0, :2]
        ab = h + pos[:, 2:3]
        self.span[slot] = (ab.min(), ab.max())
        self._by_key[key] = (g, slot)
        self.slots[key[0] % 64, key[1] % 64] = slot

    def heights(self, xy: np.ndarray) -> np.ndarray:
        """(n,) ground heights at world points ``xy`` (n, 2), NaN where no resident tile covers them."""
        out = np.full(len(xy), np.nan)
        if not len(xy) or not self._by_key:
            return out
        x, y = xy[:, 0].astype(np.float64), xy[:, 1].astype(np.float64)
        cols = np.floor(32.0 - y / TILE_SIZE)
        rows = np.floor(32.0 - x / TILE_SIZE)
        ok = (cols >= 0) & (cols < 64) & (rows >= 0) & (rows < 64)
        slot = np.where(ok, self.slots[np.where(ok, cols, 0).astype(np.int64), np.where(ok, rows, 0).astype(np.int64)], -1)
        sel = np.flatnonzero(slot >= 0)
        if not len(sel):
            return out
        sl, x, y = slot[sel], x[sel], y[sel]
        o = self.origin[sl]
        iy = np.floor((o[:, 0] - x) / CHUNK_SIZE)
        ix = np.floor((o[:, 1] - y) / CHUNK_SIZE)
        inside = (ix >= 0) & (ix < 16) & (iy >= 0) & (iy < 16)
        if not inside.all():
            sel, sl, x, y, ix, iy = sel[inside], sl[inside], x[inside], y[inside], ix[inside], iy[inside]
        g = sl * 256 + self.lookup[sl, (iy * 16 + ix).astype(np.int64)]
        # the fan (AdtTile._fan / heights_at: the same arithmetic on the same values)
        pos = self.pos[g]
        dr = (pos[:, 0] - x) / UNIT_SIZE
        dc = (pos[:, 1] - y) / UNIT_SIZE
        r = np.minimum(np.maximum(np.floor(dr), 0), 7)
        c = np.minimum(np.maximum(np.floor(dc), 0), 7)
        dv = np.minimum(np.maximum(dr - r, 0.0), 1.0) - 0.5
        du = np.minimum(np.maximum(dc - c, 0.0), 1.0) - 0.5
        hf = self.h.reshape(-1)
        base = g * 145 + (r * 17 + c).astype(np.int64)  # a cell's fan: top-left, top-right, centre, bottom-left, -right
        h_tl, h_tr, h_c, h_bl, h_br = hf[base], hf[base + 1], hf[base + 9], hf[base + 17], hf[base + 18]
        vertical = np.abs(dv) >= np.abs(du)
        north = vertical & (dv < 0)
        south = vertical & ~north
        west = ~vertical & (du < 0)
        a = np.where(north, h_tr - h_tl, np.where(south, h_br - h_bl,
                                                 np.where(west, 2 * h_c - h_tl - h_bl, h_tr + h_br - 2 * h_c)))
        b = np.where(north, 2 * h_c - h_tl - h_tr, np.where(south, h_bl + h_br - 2 * h_c,
                                                           np.where(west, h_bl - h_tl, h_br - h_tr)))
        out[sel] = (h_c + a * du + b * dv + pos[:, 2]).astype(np.float32)
        return out

    def cell(self, x: float, y: float):
        """(tile, MCNK index, (IndexX, IndexY), (column, row) of the cell) under world (x, y), None
        off the resident tiles: ``EditSession.cell_at``'s rule on the atlas (plain arithmetic)."""
        import math

        col, row = math.floor(32.0 - y / TILE_SIZE), math.floor(32.0 - x / TILE_SIZE)
        if not (0 <= col < 64 and 0 <= row < 64):
            return None
        slot = int(self.slots[col, row])
        if slot < 0:
            return None
        ox, oy = self.origin[slot]
        iy, ix = math.floor((ox - x) / CHUNK_SIZE), math.floor((oy - y) / CHUNK_SIZE)
        if not (0 <= ix < 16 and 0 <= iy < 16):
            return None
        idx = int(self.lookup[slot, iy * 16 + ix])
        px, py = self.pos[slot * 256 + idx, :2]
        r = min(max(math.floor((px - x) / UNIT_SIZE), 0), 7)
        c = min(max(math.floor((py - y) / UNIT_SIZE), 0), 7)
        return (col, row), idx, (ix, iy), (c, r)

    def _height_span(self, o, d, reach: float):
        if not self._by_key:
            return None
        lo, hi = float(np.nanmin(self.span[:, 0])), float(np.nanmax(self.span[:, 1]))
        z, dz = float(o[2]), float(d[2])
        if abs(dz) < 1e-9:
            return (0.0, reach) if lo <= z <= hi else None
        a, b = (hi - z) / dz, (lo - z) / dz
        t0, t1 = max(min(a, b), 0.0), min(max(a, b), reach)
        return (t0, t1) if t0 <= t1 else None

    def _first_below(self, o, d, t):
        p = o[None, :] + t[:, None] * d[None, :]
        h = self.heights(p[:, :2])
        below = np.flatnonzero(p[:, 2] <= h)
        return (int(below[0]) if len(below) else None), h

    def pick(self, origin, direction, *, reach: float = 1500.0, step: float = 2.0, refine: int = 256):
        """World (X, Y, Z) where the ray first meets the ground, None where it does not within
        ``reach``: ``render.pick.pick_ground``'s march (samples every ``step`` over the part of the
        ray between the lowest and highest ground, then ``refine`` across the step it went under)."""
        o, d = np.asarray(origin, np.float64), np.asarray(direction, np.float64)
        span = self._height_span(o, d, reach)
        if span is None:
            return None
        t = np.arange(span[0], span[1] + step, step)
        hit, h = self._first_below(o, d, t)
        if hit is None:
            return None
        if hit > 0:
            fine = np.linspace(t[hit - 1], t[hit], refine + 1)
            k, hf = self._first_below(o, d, fine)
            if k is not None:
                t, hit, h = fine, k, hf
        p = o + t[hit] * d
        return np.array([p[0], p[1], h[hit]])
