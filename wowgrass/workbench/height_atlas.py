"""The pick's ground: every resident tile's chunk positions and heights stacked into one set of
arrays, so a ray's samples over several tiles take one numpy pass, not one per tile (a pick is then
a handful of numpy calls: render/pick.py's march, its per-tile calls fused).

The atlas is brought up to date with the scene's resident tiles before a frame's picks (a tile's
arrays are copied once, when it arrives: the pick itself never reads or computes a tile). Heights
are the fan triangles' (:meth:`AdtTile.heights_at`'s arithmetic on the same float32 values), so a
pick here lands where ``render.pick.pick_ground`` lands (tests compare).

The pick takes the march's samples (every ``step`` along the ray, then ``refine`` across the step
where it went under) and finds the same first sample under the ground without computing the ground
under most of them (a numpy pass costs a few microseconds whatever its length, and a march of two
full passes was 0.25-0.8 ms): one numpy pass over the coarse samples against each cell's highest
ground (a margin over rounding; samples within 0.02 yards of a cell's edge, where the float32 chunk
positions may put them in the neighbour's fan, kept) leaves the samples that may be under; those are
tested one at a time in plain Python (the same float arithmetic as :meth:`GroundAtlas.heights`,
so the same bits), and a sample found above the ground by ``f`` yards proves the next samples in
the same chunk above it too, as far as the chunk's steepest slope lets the ray come down ``f``
(the fan is continuous within a chunk). A pick is then a few dozen microseconds; a ray grazing
the ground, that needs more than ``MAX_TESTS`` (``FINE_TESTS``) such tests, has the rest of its
candidates computed in one numpy pass (the same answer).
"""

from __future__ import annotations

import math
import struct

import numpy as np

from wowgrass.formats.adt import CHUNK_SIZE, TILE_SIZE, UNIT_SIZE
from wowgrass.game import coords

MAX_TESTS = 40  # coarse samples tested one at a time before the rest take one numpy pass
FINE_TESTS = 24  # the same for the refinement's samples
EDGE_CELLS = 0.005  # samples this close to a cell's edge (0.02 yards) are tested: chunk positions are float32
BLOCK = 240  # coarse samples bounded in one numpy pass (under numpy's 500 values that let go of the GIL)
_F32 = struct.Struct("<f")
_FAN = np.array([0, 1, 9, 17, 18])  # a cell's fan vertices from its top-left: tl, tr, centre, bl, br
_CELL_BASE = (np.arange(8)[:, None] * 17 + np.arange(8)[None, :]).reshape(-1)  # (r, c) -> top-left vertex
_APRON = 130  # a tile's 128 x 128 cell bounds with a cell of apron around them


def _f32(v: float) -> float:
    """``v`` rounded to float32 (numpy's astype: to nearest), as a Python float."""
    return _F32.unpack(_F32.pack(v))[0]


def _tile_step(v: float) -> int:
    """:func:`coords.tile_of`'s rule for one coordinate (the same floor and edge corrections)."""
    return coords.step(v, TILE_SIZE)


def chunk_bounds(pos: np.ndarray, h: np.ndarray, ixy: np.ndarray):
    """A tile's (128, 128) highest ground per cell (row: IndexY * 8 + cell row) and (256, 64)
    steepest slope per chunk and cell (yards of height per yard, the fan triangles' gradients), from
    its chunk positions (256, 3), heights (256, 145) relative to them and IndexX / IndexY (256, 2)."""
    v = h[:, _CELL_BASE[:, None] + _FAN]  # (256, 64, 5)
    tl, tr, c, bl, br = (v[..., i] for i in range(5))
    c2 = 2 * c
    grad = np.zeros(v.shape[:2])
    for a, b in ((tr - tl, c2 - tl - tr), (br - bl, bl + br - c2), (c2 - tl - bl, bl - tl), (tr + br - c2, br - tr)):
        grad = np.maximum(grad, a * a + b * b)
    slope = np.sqrt(grad) / UNIT_SIZE
    top = v.max(-1) + pos[:, 2:3]  # (256, 64): the fan lies between its vertices
    grid = np.full((128, 128), -np.inf)
    rows = (ixy[:, 1, None] * 8 + np.arange(8)[None, :])  # (256, 8)
    cols = (ixy[:, 0, None] * 8 + np.arange(8)[None, :])
    grid[rows[:, :, None], cols[:, None, :]] = top.reshape(256, 8, 8)
    return grid, slope


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
        # the fast pick's: slot + 1 by [col + 1, row + 1] (0: no tile, off the map too), per slot + 1
        # its cells' highest ground with an apron (row 0: no tile, -inf), chunk 0's (X, Y); per chunk its steepest slope
        self.slot_of = np.zeros(66 * 66, np.int64)
        self.top = np.full((1, _APRON * _APRON), -np.inf)
        self.top_origin = np.zeros((1, 2))
        self.slope = np.zeros((0, 64))
        self._slot_py: dict = {}  # (col, row) -> (slot, chunk 0's X, Y, lookup as a list)
        self._chunks: dict = {}  # chunk row -> (X, Y, Z, heights as a list, slope): what a one-sample test reads
        self.lo = self.hi = None  # the lowest and highest resident ground
        self.tests = 0  # samples tested one at a time by the last pick (a figure for the bench)
        self.passes = 0  # numpy passes the last pick finished with (a graze)
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
            self.slot_of[(key[0] % 64 + 1) * 66 + key[1] % 64 + 1] = 0
            self._slot_py.pop((key[0] % 64, key[1] % 64), None)
            self.span[slot] = np.nan
            self._forget(slot)
        live = self.span[~np.isnan(self.span[:, 0])]
        self.lo, self.hi = (float(live[:, 0].min()), float(live[:, 1].max())) if len(live) else (None, None)

    def _forget(self, slot: int) -> None:
        for g in range(slot * 256, slot * 256 + 256):
            self._chunks.pop(g, None)

    def _grow(self, n: int) -> None:
        old = self._n
        self.pos = np.concatenate([self.pos, np.zeros(((n - old) * 256, 3))])
        self.h = np.concatenate([self.h, np.zeros(((n - old) * 256, 145))])
        self.lookup = np.concatenate([self.lookup, np.zeros((n - old, 256), np.int64)])
        self.origin = np.concatenate([self.origin, np.zeros((n - old, 2))])
        self.span = np.concatenate([self.span, np.full((n - old, 2), np.nan)])
        self.top = np.concatenate([self.top, np.full((n - old, _APRON * _APRON), -np.inf)])
        self.top_origin = np.concatenate([self.top_origin, np.zeros((n - old, 2))])
        self.slope = np.concatenate([self.slope, np.zeros(((n - old) * 256, 64))])
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
        # the fast pick's bounds: each cell's highest ground, a margin over the arithmetic's
        # rounding (a sample's cell by the tile's regular grid is its fan cell but within 0.01 of a
        # cell's edge: those are tested); the apron and a tile whose chunks are off its grid: +inf
        grid, slope = chunk_bounds(pos, h, ixy)
        top = np.full((_APRON, _APRON), np.inf)
        ox, oy = pos[0, :2]
        regular = (np.abs(pos[:, 0] - (ox - ixy[:, 1] * CHUNK_SIZE)).max() < 0.01
                   and np.abs(pos[:, 1] - (oy - ixy[:, 0] * CHUNK_SIZE)).max() < 0.01)
        if regular and np.isfinite(grid).all():
            top[1:-1, 1:-1] = grid + (0.05 + 1e-6 * np.abs(grid))
        self.top[slot + 1] = top.reshape(-1)
        self.top_origin[slot + 1] = (ox, oy)
        self.slope[slot * 256:slot * 256 + 256] = np.where(np.isnan(slope), np.inf, slope)
        self.slope[slot * 256:slot * 256 + 256][np.isinf(self.slope[slot * 256:slot * 256 + 256]).any(1)] = np.inf
        self.slot_of[(key[0] % 64 + 1) * 66 + key[1] % 64 + 1] = slot + 1
        self._forget(slot)
        self._slot_py[key[0] % 64, key[1] % 64] = (slot, float(ox), float(oy), self.lookup[slot].tolist())
        live = self.span[~np.isnan(self.span[:, 0])]
        self.lo, self.hi = float(live[:, 0].min()), float(live[:, 1].max())

    def heights(self, xy: np.ndarray) -> np.ndarray:
        """(n,) ground heights at world points ``xy`` (n, 2), NaN where no resident tile covers them."""
        out = np.full(len(xy), np.nan)
        if not len(xy) or not self._by_key:
            return out
        xy = np.asarray(xy, np.float64)
        x, y = xy[:, 0], xy[:, 1]
        i = coords.steps_float(xy, TILE_SIZE)  # coords.tile_of's rule, both coordinates at once: (row, col)
        np.clip(i, -1, 64, out=i)
        slot = self.slot_of[(i @ (1.0, 66.0) + 67.0).astype(np.int64)] - 1
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
        col, row = coords.tile_of(x, y)
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
        if not self._by_key or self.lo is None:
            return None
        lo, hi = self.lo, self.hi
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
        ray between the lowest and highest ground, then ``refine`` across the step it went under),
        its samples tested as the module docstring says (the same point, bit for bit)."""
        o, d = np.asarray(origin, np.float64), np.asarray(direction, np.float64)
        self.tests = self.passes = 0
        span = self._height_span(o, d, reach)
        if span is None:
            return None
        t = np.arange(span[0], span[1] + step, step)
        ray = (float(o[0]), float(o[1]), float(o[2]), float(d[0]), float(d[1]), float(d[2]))
        hit, h = self._first_below_coarse(o, d, t, ray)
        if hit is None:
            return None
        th = float(t[hit])
        if hit > 0:
            start, stop = float(t[hit - 1]), th
            fine_step = (stop - start) / refine  # np.linspace's own arithmetic: k * step + start, the last: stop
            if fine_step != 0.0:
                k, hk = self._first_below_fine(ray, start, stop, fine_step, refine)
                if k is not None:
                    th, h = (stop if k == refine else k * fine_step + start), hk
            else:  # a step too small to split (linspace's other branch): the numpy pass
                fine = np.linspace(start, stop, refine + 1)
                k, hf = self._first_below(o, d, fine)
                if k is not None:
                    th, h = float(fine[k]), float(hf[k])
        return np.array([ray[0] + th * ray[3], ray[1] + th * ray[4], h])

    def _chunk(self, g: int):
        c = self._chunks.get(g)
        if c is None:
            p = self.pos[g]
            s = self.slope[g]
            c = self._chunks[g] = (float(p[0]), float(p[1]), float(p[2]), self.h[g].tolist(),
                                   float(s.max()), s.tolist())
        return c

    def _sample(self, x: float, y: float):
        """(height, chunk row, (slope, edges) of its chunk, (slope, edges) of its cell) of the
        ground at (x, y), None off the resident tiles: :meth:`heights`' arithmetic on one point in
        plain Python (float64 as numpy's, then float32). Edges: (x low, x high, y low, y high)
        of the chunk's square (within the tile) and of the cell's."""
        col, row = _tile_step(y), _tile_step(x)
        at = self._slot_py.get((col, row))
        if at is None:
            return None
        slot, ox, oy, lookup = at
        iy, ix = math.floor((ox - x) / CHUNK_SIZE), math.floor((oy - y) / CHUNK_SIZE)
        if not (0 <= ix < 16 and 0 <= iy < 16):
            return None
        g = slot * 256 + lookup[iy * 16 + ix]
        px, py, pz, hl, slope, cell_slopes = self._chunk(g)
        dr, dc = (px - x) / UNIT_SIZE, (py - y) / UNIT_SIZE
        r = float(min(max(math.floor(dr), 0), 7))
        c = float(min(max(math.floor(dc), 0), 7))
        dv = min(max(dr - r, 0.0), 1.0) - 0.5
        du = min(max(dc - c, 0.0), 1.0) - 0.5
        base = int(r) * 17 + int(c)
        h_tl, h_tr, h_c, h_bl, h_br = hl[base], hl[base + 1], hl[base + 9], hl[base + 17], hl[base + 18]
        if abs(dv) >= abs(du):
            if dv < 0:
                a, b = h_tr - h_tl, 2 * h_c - h_tl - h_tr
            else:
                a, b = h_br - h_bl, h_bl + h_br - 2 * h_c
        elif du < 0:
            a, b = 2 * h_c - h_tl - h_bl, h_bl - h_tl
        else:
            a, b = h_tr + h_br - 2 * h_c, h_br - h_tr
        h = _f32(h_c + a * du + b * dv + pz)
        edges = (max(ox - (iy + 1) * CHUNK_SIZE, coords.edge(row + 1, TILE_SIZE)),
                 min(ox - iy * CHUNK_SIZE, coords.edge(row, TILE_SIZE)),
                 max(oy - (ix + 1) * CHUNK_SIZE, coords.edge(col + 1, TILE_SIZE)),
                 min(oy - ix * CHUNK_SIZE, coords.edge(col, TILE_SIZE)))
        cell = (max(edges[0], px - (r + 1.0) * UNIT_SIZE), min(edges[1], px - r * UNIT_SIZE),
                max(edges[2], py - (c + 1.0) * UNIT_SIZE), min(edges[3], py - c * UNIT_SIZE))
        return h, g, (slope, edges), (cell_slopes[base - int(r) * 9], cell)

    @staticmethod
    def _safe(ray, x, y, z, s, spacing: float) -> int:
        """How many samples after one at (x, y, z), ``s`` (:meth:`_sample`'s) the ground under it,
        are above the ground for certain: within its chunk (or cell) the ground rises at most the
        chunk's (cell's) slope a yard, so the ray meets it no sooner than (z - h) / (|dz| + slope
        |dxy|) on, unless it left the chunk (cell) first; samples ``spacing`` apart."""
        _ox, _oy, _oz, dx, dy, dz = ray
        h = s[0]
        room = z - h - 2e-3 - 1e-6 * abs(h)  # the float32 heights' rounding, twice
        if room <= 0.0:
            return 0
        flat = math.hypot(dx, dy)
        best = 0.0
        for slope, (x_lo, x_hi, y_lo, y_hi) in (s[2], s[3]):
            k = abs(dz) + slope * flat
            reach = room / k if k > 0.0 else math.inf
            if dx > 0.0:
                reach = min(reach, (x_hi - x) / dx)
            elif dx < 0.0:
                reach = min(reach, (x_lo - x) / dx)
            if dy > 0.0:
                reach = min(reach, (y_hi - y) / dy)
            elif dy < 0.0:
                reach = min(reach, (y_lo - y) / dy)
            best = max(best, reach - 1e-3)  # 1 mm short of the edge
        return int(best / spacing * (1.0 - 1e-9))

    def _candidates(self, o, d, t):
        """The march's points at ``t`` (the same arithmetic), their heights and which of them the
        cell bounds leave (indices into ``t``)."""
        xy = o[None, :2] + t[:, None] * d[None, :2]
        z = o[2] + t * d[2]
        q = coords.fraction_steps(xy, TILE_SIZE)
        tc = np.floor(q)  # the tile by a plain floor: tile_of's edge rule can differ within rounding of an edge,
        edge = (np.abs(q - tc - 0.5) > 0.5 - 1e-9).any(1)  # so samples that close to one are tested
        np.clip(tc, -1, 64, out=tc)
        slot = self.slot_of[(tc @ (1.0, 66.0) + 67.0).astype(np.int64)]
        at = (self.top_origin[slot] - xy) / UNIT_SIZE
        cell = np.floor(at)
        edge |= (np.abs(at - cell - 0.5) > 0.5 - EDGE_CELLS).any(1)  # near a cell's edge: maybe its neighbour's fan
        cell += 1.0
        np.clip(cell, 0, _APRON - 1, out=cell)
        top = self.top.reshape(-1)[(cell @ (float(_APRON), 1.0)).astype(np.int64) + slot * (_APRON * _APRON)]
        return xy, z, np.flatnonzero((z <= top) | edge)

    def _first_below_coarse(self, o, d, t, ray):
        """(index, height) of the first sample of ``t`` on or under the ground, (None, None) if
        none. The samples go in blocks of ``BLOCK`` (most rays meet the ground in the first; and
        numpy lets go of the GIL in a pass over more than 500 values, where a waiting thread may keep
        it for the interpreter's switch interval, 5 ms)."""
        n = len(t)
        spacing = float(t[1] - t[0]) if n > 1 else 1.0
        ox, oy, oz, dx, dy, dz = ray
        nxt = 0  # the first sample not proven above the ground
        for b0 in range(0, n, BLOCK):
            if nxt >= b0 + BLOCK:
                continue
            xy, z, cand = self._candidates(o, d, t[b0:b0 + BLOCK])
            cand = cand + b0
            j = int(cand.searchsorted(nxt))
            while j < len(cand):
                i = int(cand[j])
                if self.tests >= MAX_TESTS:  # a long graze: one numpy pass over the candidates left
                    self.passes += 1
                    rest = cand[j:]
                    h = self.heights(xy[rest - b0])
                    below = np.flatnonzero(z[rest - b0] <= h)
                    if len(below):
                        return int(rest[below[0]]), float(h[below[0]])
                    if b0 + BLOCK < n:
                        xy, z, later = self._candidates(o, d, t[b0 + BLOCK:])
                        h = self.heights(xy[later])
                        below = np.flatnonzero(z[later] <= h)
                        if len(below):
                            return int(later[below[0]]) + b0 + BLOCK, float(h[below[0]])
                    return None, None
                self.tests += 1
                ti = float(t[i])
                x, y, zz = ox + ti * dx, oy + ti * dy, oz + ti * dz
                s = self._sample(x, y)
                if s is not None and zz <= s[0]:
                    return i, s[0]
                nxt = i + 1 + (0 if s is None else self._safe(ray, x, y, zz, s, spacing))
                j = int(cand.searchsorted(nxt)) if nxt > i + 1 else j + 1
        return None, None

    def _fine_pass(self, ray, start, stop, refine, k):
        """The refinement's samples from ``k`` on in one numpy pass: the fan of their one chunk
        (both ends in one chunk and tile: every sample between is) or :meth:`heights`."""
        fine = np.linspace(start, stop, refine + 1)[k:]
        self.passes += 1
        o, d = np.array(ray[:3]), np.array(ray[3:])
        p = o[None, :] + fine[:, None] * d[None, :]
        a, b = self._sample(float(p[0, 0]), float(p[0, 1])), self._sample(float(p[-1, 0]), float(p[-1, 1]))
        if a is not None and b is not None and a[1] == b[1] and a[2][1] == b[2][1]:
            h = self._fan(a[1], p[:, 0], p[:, 1])
        else:
            h = self.heights(p[:, :2])
        below = np.flatnonzero(p[:, 2] <= h)
        return (None, None) if not len(below) else (k + int(below[0]), float(h[below[0]]))

    def _fan(self, g: int, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """:meth:`heights` of points that all lie in chunk row ``g`` (its arithmetic, one chunk)."""
        px, py, pz = (float(v) for v in self.pos[g])
        hrow = self.h[g]
        dr = (px - x) / UNIT_SIZE
        dc = (py - y) / UNIT_SIZE
        r = np.minimum(np.maximum(np.floor(dr), 0), 7)
        c = np.minimum(np.maximum(np.floor(dc), 0), 7)
        dv = np.minimum(np.maximum(dr - r, 0.0), 1.0) - 0.5
        du = np.minimum(np.maximum(dc - c, 0.0), 1.0) - 0.5
        base = (r * 17 + c).astype(np.int64)
        h_tl, h_tr, h_c, h_bl, h_br = hrow[base], hrow[base + 1], hrow[base + 9], hrow[base + 17], hrow[base + 18]
        vertical = np.abs(dv) >= np.abs(du)
        north = vertical & (dv < 0)
        south = vertical & ~north
        west = ~vertical & (du < 0)
        a = np.where(north, h_tr - h_tl, np.where(south, h_br - h_bl,
                                                 np.where(west, 2 * h_c - h_tl - h_bl, h_tr + h_br - 2 * h_c)))
        b = np.where(north, 2 * h_c - h_tl - h_tr, np.where(south, h_bl + h_br - 2 * h_c,
                                                           np.where(west, h_bl - h_tl, h_br - h_tr)))
        return (h_c + a * du + b * dv + pz).astype(np.float32).astype(np.float64)

    def _first_below_fine(self, ray, start, stop, fine_step, refine):
        """:meth:`_first_below_coarse` over the refinement's ``refine + 1`` samples (none of which
        the cell bounds would rule out: they lie across the step where the ray went under)."""
        ox, oy, oz, dx, dy, dz = ray
        k, tested = 0, 0
        while k <= refine:
            if tested >= FINE_TESTS:  # one numpy pass over the samples left
                return self._fine_pass(ray, start, stop, refine, k)
            self.tests += 1
            tested += 1
            tk = stop if k == refine else k * fine_step + start
            x, y, zz = ox + tk * dx, oy + tk * dy, oz + tk * dz
            s = self._sample(x, y)
            if s is not None and zz <= s[0]:
                return k, s[0]
            k += 1 + (0 if s is None else self._safe(ray, x, y, zz, s, fine_step))
        return None, None

    def pick_marched(self, origin, direction, *, reach: float = 1500.0, step: float = 2.0, refine: int = 256):
        """:meth:`pick` by two numpy passes over every sample (``render.pick.pick_ground``'s march
        over the atlas): what :meth:`pick` equals, and its fallback."""
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
