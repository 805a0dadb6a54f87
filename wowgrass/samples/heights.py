"""Procedural terrain for the sample world: heights, normals, texture layers, masks, holes.

Everything is generated on *global* lattices indexed by integers (fine height lattice at half a
cell, alpha texel lattice at 1/64 chunk), so two chunks or tiles that share an edge read the very
same array entries: borders are continuous by construction, not by stitching.  Heights are
quantised to 1/1024 yard, which keeps ``base + relative`` exact in float32.

Axes follow the ADT convention (formats.md §0): +X north, +Y west, +Z up; lattice rows step
south (-X), lattice columns step east (-Y).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from wowgrass.formats.adt import CHUNK_SIZE, TILE_SIZE, UNIT_SIZE, VERTEX_ROWCOL
from wowgrass.game.coords import map_offset, map_point, tile_origin
from wowgrass.samples.noise import fbm, smoothstep, value_curve

HALF = UNIT_SIZE / 2.0                # fine lattice spacing
FINE_PER_CHUNK = 16                   # fine lattice steps per chunk side
TEXELS = 64                           # alpha texels per chunk side
HEIGHT_QUANTUM = 1.0 / 1024.0
SUN_TAN = 0.36                        # tan of the baked shadows' sun elevation (about 20 degrees)

# Layer kinds, in the order they are stacked inside a chunk (grass is always layer 0).
GRASS, DIRT, ROCK, ROAD = 0, 1, 2, 3
KINDS = ("grass", "dirt", "rock", "road")

# MCVT vertex order (formats.md §1.4) as fine-lattice offsets (half cells) inside a chunk.
MCVT_FINE_ROW, MCVT_FINE_COL = (2 * VERTEX_ROWCOL).astype(np.int64).T


@dataclass
class TileTerrain:
    """One ADT tile's worth of generated arrays, in MCNK order (IndexY*16 + IndexX)."""

    col: int
    row: int
    positions: np.ndarray        # (256, 3) f4: X north, Y west, Z base of the chunk's NW corner
    heights: np.ndarray          # (256, 145) f4 relative to positions[:, 2]
    normals: np.ndarray          # (256, 145, 3) i1, 127 = 1.0
    index_xy: np.ndarray         # (256, 2) u4 (IndexX, IndexY)
    n_layers: np.ndarray         # (256,) u1
    layer_kind: np.ndarray       # (256, 4) i1: GRASS/DIRT/ROCK/ROAD, -1 where no layer
    alpha: np.ndarray            # (256, 4, 64, 64) u1, 0..255 (4-bit data already expanded ×17)
    doodad_mapping: np.ndarray   # (256, 8, 8) u1: local layer index of the dominant layer per cell
    no_effect_doodad: np.ndarray # (256, 8, 8) bool
    holes: np.ndarray            # (256,) u2
    shadow: np.ndarray           # (256, 64, 64) bool: baked MCSH, cast by a low western sun
    grass_variant: np.ndarray    # (256,) u1: which grass effect row the grass layer uses (0..2)
    doodads: list = field(default_factory=list)   # [(model_key, X, Y, dz, yaw_deg, scale)]

    @property
    def abs_heights(self) -> np.ndarray:
        return self.positions[:, 2:3] + self.heights


def _bilinear_axis(n_out: int, per_fine: int, n_fine: int, start: int = 0):
    """Indices and weights to sample a fine lattice at texel centres ``start ..`` along one axis."""
    pos = (start + np.arange(n_out, dtype=np.float64) + 0.5) / per_fine
    i0 = np.minimum(np.floor(pos).astype(np.int64), n_fine - 2)
    return i0, (pos - i0).astype(np.float32)


def _sample(grid: np.ndarray, ri, rw, ci, cw) -> np.ndarray:
    g = grid.astype(np.float32, copy=False)
    a = g[ri, :] * (1 - rw)[:, None] + g[ri + 1, :] * rw[:, None]
    return a[:, ci] * (1 - cw)[None, :] + a[:, ci + 1] * cw[None, :]


@dataclass
class Lattice:
    """Fine-lattice fields for rows ``r0 ..`` of the sample's lattice (every column).

    Every field is a pointwise function of the global lattice coordinates except the slope and
    normal (central differences: one row each way) and the cast shadow (a running maximum along
    a row), so a band of rows computes exactly the values the whole lattice would hold there.
    """

    r0: int
    fine: np.ndarray             # quantised heights (float64)
    fine_normal: np.ndarray      # (rows, cols, 3)
    fine_slope: np.ndarray       # tan(slope angle)
    fine_dirt: np.ndarray
    fine_jitter: np.ndarray
    fine_region: np.ndarray
    fine_wobble: np.ndarray
    fine_shade: np.ndarray       # > 0 where a low western sun is blocked


class SampleTerrain:
    """The whole sample's terrain; ``tile(col, row, alpha_bits)`` cuts out one ADT's arrays.

    The fine lattice is computed one band of tile rows at a time (the band of the last tile asked
    for is kept), so memory does not grow with the number of tile rows.
    """

    MAX_TILES = 64

    def __init__(self, tiles=(2, 2), seed: int = 0):
        self.ncols, self.nrows = int(tiles[0]), int(tiles[1])
        if not (1 <= self.ncols <= self.MAX_TILES and 1 <= self.nrows <= self.MAX_TILES):
            raise ValueError(f"tiles must be between 1x1 and {self.MAX_TILES}x{self.MAX_TILES}, "
                             f"got {self.ncols}x{self.nrows}")
        self.seed = int(seed)
        self.col0 = 32 - self.ncols // 2
        self.row0 = 32 - self.nrows // 2
        # Fine lattice covering every tile plus a one-step margin (for central differences).
        self.fi0 = self.row0 * 16 * FINE_PER_CHUNK - 1
        self.fj0 = self.col0 * 16 * FINE_PER_CHUNK - 1
        self.nrf = self.nrows * 16 * FINE_PER_CHUNK + 3
        self.ncf = self.ncols * 16 * FINE_PER_CHUNK + 3
        self.width_e = self.ncols * TILE_SIZE
        self.width_s = self.nrows * TILE_SIZE
        self._band: tuple[int, Lattice] | None = None
        self._features()

    # -- the lake and the house (sample_world.py writes their MCLQ/MH2O and MODF) -----------
    # world (X, Y) in tile 32_32, which every sample size has (heights do not depend on the size):
    # ahead of make demo's camera at (-28, -38)
    LAKE_XY = (-56.0, -121.0)
    LAKE_RADIUS = 27.0
    LAKE_DEPTH = 7.5                 # the basin's depth below the ground it is dug into
    LAKE_FREEBOARD = 2.4             # the water's surface below that ground
    HOUSE_XY = (-76.0, -63.5)
    HOUSE_HEADING = -95.0            # MODF rotation[1] (degrees): the door faces a little west of north
    HOUSE_PAD = ((-7.8, -11.2), (7.8, 5.8))   # the levelled ground, in the house's own (x, y)

    def _features(self):
        self.lake_xy, self.house_xy = self.LAKE_XY, self.HOUSE_XY
        a = np.radians(self.HOUSE_HEADING + 180.0)    # the client turns a placement by heading + 180
        self._house_rot = (np.cos(a), np.sin(a))
        self.lake_level = float(np.round((self._raw_at(*self.lake_xy) - self.LAKE_FREEBOARD) / HEIGHT_QUANTUM)
                                * HEIGHT_QUANTUM)
        self.house_z = float(np.round(self._raw_at(*self.house_xy) / HEIGHT_QUANTUM) * HEIGHT_QUANTUM)

    def _raw_at(self, x, y):
        east, south = map_offset(np.asarray(x), np.asarray(y))
        return self._raw_height(south / HALF, east / HALF)

    def house_local(self, x, y):
        """World (x, y) in the house's own axes (x along the ridge, y across; the door faces -y)."""
        c, s = self._house_rot
        dx, dy = np.asarray(x, np.float64) - self.house_xy[0], np.asarray(y, np.float64) - self.house_xy[1]
        return c * dx + s * dy, -s * dx + c * dy

    def lake_depth(self, x, y) -> np.ndarray:
        """How far the basin lowers the ground at world (x, y): the lake's bowl, its shore wavy."""
        dx, dy = np.asarray(x, np.float64) - self.lake_xy[0], np.asarray(y, np.float64) - self.lake_xy[1]
        ang = np.arctan2(dy, dx)
        r = self.LAKE_RADIUS * (1.0 + 0.16 * np.sin(3 * ang + 1.0) + 0.09 * np.sin(5 * ang + 2.3))
        return self.LAKE_DEPTH * (1.0 - smoothstep(0.4, 1.0, np.hypot(dx, dy) / r))

    def house_pad(self, x, y) -> np.ndarray:
        """Weight (0..1) of the house's level pad at world (x, y): 1 under it, 0 from 7 yards out."""
        lx, ly = self.house_local(x, y)
        (x0, y0), (x1, y1) = self.HOUSE_PAD
        dx = np.maximum(np.maximum(x0 - lx, lx - x1), 0.0)
        dy = np.maximum(np.maximum(y0 - ly, ly - y1), 0.0)
        return 1.0 - smoothstep(0.0, 7.0, np.hypot(dx, dy))

    # -- heights ---------------------------------------------------------------------------
    def height_at_fine(self, fi, fj) -> np.ndarray:
        """Raw (unquantised) height at global fine-lattice coordinates (may be fractional): the
        rolling ground, the lake's basin dug into it, the house's pad levelled."""
        h = self._raw_height(fi, fj)
        x, y = map_point(np.asarray(fj, dtype=np.float64), np.asarray(fi, dtype=np.float64), HALF)
        h = h - self.lake_depth(x, y)
        w = self.house_pad(x, y)
        return h * (1.0 - w) + self.house_z * w

    def _raw_height(self, fi, fj) -> np.ndarray:
        e = np.asarray(fj, dtype=np.float64) * HALF      # yards east of the map's west edge
        s = np.asarray(fi, dtype=np.float64) * HALF      # yards south of the map's north edge
        seed = self.seed
        base = fbm(e / 420.0, s / 420.0, seed, octaves=6, salt=1)
        hills = fbm(e / 170.0, s / 170.0, seed, octaves=3, salt=2)
        # Steep spots: a ridged term switched on only where a low-frequency mask is high.
        mask = smoothstep(0.18, 0.42, fbm(e / 260.0, s / 260.0, seed, octaves=2, salt=3))
        ridge = 1.0 - np.abs(fbm(e / 90.0, s / 90.0, seed, octaves=3, salt=4))
        return 60.0 + 42.0 * base + 9.0 * hills + 34.0 * mask * ridge * ridge

    def lattice(self, lo: int = 0, hi: int | None = None) -> Lattice:
        """The fields on lattice rows ``lo .. hi`` (exclusive; default: all of them). The first
        and last row's slope and normal are exact only at the lattice's own edges (where they are
        zero and straight up): ask for one row more each way than you use."""
        hi = self.nrf if hi is None else hi
        fi = (self.fi0 + np.arange(lo, hi))[:, None]
        fj = (self.fj0 + np.arange(self.ncf))[None, :]
        h = self.height_at_fine(fi, fj)
        fine = np.round(h / HEIGHT_QUANTUM) * HEIGHT_QUANTUM          # float64, exact grid
        # d/dX and d/dY (X north = -rows, Y west = -cols), spacing HALF each way.
        dhdx = np.zeros_like(fine)
        dhdy = np.zeros_like(fine)
        dhdx[1:-1, :] = -(fine[2:, :] - fine[:-2, :]) / (2 * HALF)
        dhdy[:, 1:-1] = -(fine[:, 2:] - fine[:, :-2]) / (2 * HALF)
        n = np.stack([-dhdx, -dhdy, np.ones_like(dhdx)], axis=-1)
        n /= np.linalg.norm(n, axis=-1, keepdims=True)
        # Low-frequency fields; texel weights are cut per tile from them.
        seed = self.seed
        e, s = fj * HALF, fi * HALF
        # Cast shadows of a sun low in the west (light travelling east, along lattice columns): a
        # point is shaded when any point west of it rises above the sun ray through it, i.e. when
        # the running maximum of h + distance * tan(elevation) exceeds its own value.
        g = fine + np.arange(self.ncf)[None, :] * (HALF * SUN_TAN)
        return Lattice(
            r0=lo, fine=fine, fine_normal=n, fine_slope=np.hypot(dhdx, dhdy),
            fine_dirt=fbm(e / 60.0, s / 60.0, seed, octaves=3, salt=10),
            fine_jitter=fbm(e / 25.0, s / 25.0, seed, octaves=2, salt=11),
            fine_region=fbm(e / 300.0, s / 300.0, seed, octaves=2, salt=12),
            fine_wobble=fbm(e / 140.0, s / 140.0, seed, octaves=2, salt=13),
            fine_shade=np.maximum.accumulate(g, axis=1) - g,
        )

    def band(self, tr: int) -> Lattice:
        """The lattice rows tile row ``tr`` (0-based in the sample) reads, one spare row each way."""
        if self._band is None or self._band[0] != tr:
            n = 16 * FINE_PER_CHUNK
            self._band = tr, self.lattice(max(0, tr * n - 1), min(self.nrf, tr * n + n + 4))
        return self._band[1]

    def road_east(self, ts) -> np.ndarray:
        """East offset (yards from the sample's west edge) of the north-south road at ``ts``
        yards south of the sample's north edge."""
        amp = min(0.1 * self.width_e, 70.0)
        return 0.47 * self.width_e + amp * value_curve(np.asarray(ts, np.float64) / 160.0, self.seed, 1)

    def _tile_weights(self, tr: int, tc: int):
        """Texel weights (4, 1024, 1024) f4 and shadow (1024, 1024) of tile (tc, tr) of the sample."""
        n = 16 * TEXELS
        per = TEXELS // FINE_PER_CHUNK
        band = self.band(tr)
        # texel centres in fine units, shifted by the one-step margin of the fine lattice; rows
        # relative to the band, columns to the tile's own window (same values, less work)
        ri, rw = _bilinear_axis(n, per, self.nrf, start=tr * n)
        ci, cw = _bilinear_axis(n, per, self.ncf, start=tc * n)
        ri = ri + 1 - band.r0
        c0, c1 = int(ci.min()) + 1, int(ci.max()) + 3
        ci = ci + 1 - c0
        slope = _sample(band.fine_slope[:, c0:c1], ri, rw, ci, cw)
        dirt_t = _sample(band.fine_dirt[:, c0:c1], ri, rw, ci, cw)
        jit_t = _sample(band.fine_jitter[:, c0:c1], ri, rw, ci, cw)
        wobble = _sample(band.fine_wobble[:, c0:c1], ri, rw, ci, cw)
        shadow = _sample(band.fine_shade[:, c0:c1], ri, rw, ci, cw) > np.float32(0.05)

        # Roads: a meandering north-south road and a wobbly ring around the sample's centre,
        # so every tile of a 2x2 sample (and a lone tile) has some road; distances in yards.
        step = CHUNK_SIZE / TEXELS
        te64 = (tc * n + np.arange(n, dtype=np.float64) + 0.5) * step        # yards east of the west edge
        ts64 = (tr * n + np.arange(n, dtype=np.float64) + 0.5) * step        # yards south of the north edge
        te, ts = te64.astype(np.float32), ts64.astype(np.float32)
        road_e = self.road_east(ts64)
        slope_e = (self.road_east(ts64 + 0.5) - self.road_east(ts64 - 0.5))    # per yard
        d1 = np.abs(te[None, :] - road_e[:, None].astype(np.float32))
        d1 *= (1 / np.sqrt(1 + slope_e * slope_e))[:, None].astype(np.float32)
        radius = np.float32(0.3 * min(self.width_e, self.width_s))
        ce, cs = np.float32(0.5 * self.width_e), np.float32(0.52 * self.width_s)
        ring = np.sqrt((te[None, :] - ce) ** 2 + (ts[:, None] - cs) ** 2)
        d2 = np.abs(ring - radius * (1 + np.float32(0.12) * wobble))
        dist = np.minimum(d1, d2)
        edge = (3.6 + 0.9 * value_curve(ts64 / 9.0, self.seed, 3))[:, None].astype(np.float32)
        road = 1 - smoothstep(0.0, 1.0, (dist - edge + np.float32(1.3)) / np.float32(2.6))
        shoulder = np.float32(0.55) * (1 - smoothstep(0.0, 1.0, (dist - edge) / np.float32(5.0)))

        rock = smoothstep(0.62, 0.95, slope + np.float32(0.25) * jit_t)
        dirt_w = np.maximum(smoothstep(0.22, 0.5, dirt_t) * np.float32(0.85), shoulder)
        w = np.empty((4, n, n), dtype=np.float32)
        w[ROAD] = road
        w[ROCK] = (1 - road) * rock
        w[DIRT] = (1 - road) * (1 - rock) * dirt_w
        w[GRASS] = 1 - w[ROAD] - w[ROCK] - w[DIRT]
        return w, shadow

    # -- per tile --------------------------------------------------------------------------
    def tile(self, col: int, row: int, alpha_bits: int = 8, fix_alpha: bool = False) -> TileTerrain:
        """Arrays of tile (col, row).  ``alpha_bits`` 4 or 8 quantises the alpha maps;
        ``fix_alpha`` authors 63×63 maps (column/row 63 copy 62) as 1.12 clients expect."""
        tc, tr = col - self.col0, row - self.row0
        if not (0 <= tc < self.ncols and 0 <= tr < self.nrows):
            raise ValueError(f"tile {col}_{row} is not part of this sample")
        iy, ix = np.divmod(np.arange(256), 16)
        band = self.band(tr)
        # heights (rows relative to the tile row's band of the lattice)
        rbase = 1 + (tr * 16 + iy) * FINE_PER_CHUNK - band.r0
        cbase = 1 + (tc * 16 + ix) * FINE_PER_CHUNK
        ri = rbase[:, None] + MCVT_FINE_ROW[None, :]
        ci = cbase[:, None] + MCVT_FINE_COL[None, :]
        absh = band.fine[ri, ci]
        base = absh.min(axis=1)
        heights = (absh - base[:, None]).astype(np.float32)
        normals = np.round(band.fine_normal[ri, ci] * 127.0).astype(np.int8)
        gx = (col * 16 + ix).astype(np.float64)
        gy = (row * 16 + iy).astype(np.float64)
        positions = np.stack([*map_point(gx, gy, CHUNK_SIZE), base], axis=1)
        positions = positions.astype(np.float32)

        # alpha maps: (256, 4 kinds, 64, 64)
        wt, sh = self._tile_weights(tr, tc)
        wt = wt.reshape(4, 16, TEXELS, 16, TEXELS).transpose(1, 3, 0, 2, 4).reshape(256, 4, TEXELS, TEXELS)
        shadow = sh.reshape(16, TEXELS, 16, TEXELS).transpose(0, 2, 1, 3).reshape(256, TEXELS, TEXELS).copy()
        levels = 15 if alpha_bits == 4 else 255
        q = np.floor(np.clip(wt, 0.0, 1.0) * (levels + 0.999)).astype(np.int32)
        q[:, GRASS] = 0
        if fix_alpha:
            q[..., :, 63] = q[..., :, 62]
            q[..., 63, :] = q[..., 62, :]
            shadow[..., :, 63] = shadow[..., :, 62]
            shadow[..., 63, :] = shadow[..., 62, :]
        present = q.reshape(256, 4, -1).max(axis=2) > 0
        present[:, GRASS] = True
        scale = 17 if alpha_bits == 4 else 1
        kind_alpha = (q * scale).astype(np.uint8)                        # (256, 4 kinds, 64, 64)

        # local layer order: grass, then present kinds in DIRT, ROCK, ROAD order
        local_of_kind = np.cumsum(present, axis=1) - 1                   # (256, 4)
        local_of_kind[~present] = -1
        n_layers = present.sum(axis=1).astype(np.uint8)
        layer_kind = np.full((256, 4), -1, dtype=np.int8)
        alpha = np.zeros((256, 4, TEXELS, TEXELS), dtype=np.uint8)
        cidx, kidx = np.nonzero(present)
        lidx = local_of_kind[cidx, kidx]
        layer_kind[cidx, lidx] = kidx
        alpha[cidx, lidx] = kind_alpha[cidx, kidx]

        # dominant kind per texel (grass weight = 255 - sum), majority per 8x8 cell
        full = kind_alpha.astype(np.int32)
        full[:, GRASS] = 255 - full[:, 1:].sum(axis=1)
        dom = full.argmax(axis=1)                                        # (256, 64, 64)
        cells = dom.reshape(256, 8, 8, 8, 8).transpose(0, 1, 3, 2, 4).reshape(256, 8, 8, 64)
        counts = np.stack([(cells == k).sum(axis=-1) for k in range(4)], axis=-1)
        dom_cell = counts.argmax(axis=-1)                                # (256, 8, 8) kind
        doodad_mapping = np.take_along_axis(local_of_kind, dom_cell.reshape(256, 64), axis=1)
        doodad_mapping = doodad_mapping.reshape(256, 8, 8).astype(np.uint8)

        road_cell = kind_alpha[:, ROAD].reshape(256, 8, 8, 8, 8).max(axis=(2, 4))
        no_effect = road_cell >= 24

        # holes: in each tile the steepest chunk with rock gets one 2x2-cell hole
        holes = np.zeros(256, dtype=np.uint16)
        rock_cells = kind_alpha[:, ROCK].reshape(256, 4, 16, 4, 16).astype(np.int32).sum(axis=(2, 4))
        best = int(rock_cells.reshape(256, -1).max(axis=1).argmax())
        if rock_cells[best].max() > 0:
            br, bc = np.unravel_index(int(rock_cells[best].argmax()), (4, 4))
            holes[best] = 1 << (br * 4 + bc)
            hole_cells = np.zeros((8, 8), dtype=bool)
            hole_cells[2 * br:2 * br + 2, 2 * bc:2 * bc + 2] = True
            no_effect[best] |= hole_cells

        # grass effect variant by a low-frequency region field at the chunk centre
        region = band.fine_region[rbase + 8, cbase + 8]
        grass_variant = np.digitize(region, [-0.12, 0.18]).astype(np.uint8)

        return TileTerrain(
            col=col, row=row, positions=positions, heights=heights, normals=normals,
            index_xy=np.stack([ix, iy], axis=1).astype(np.uint32), n_layers=n_layers,
            layer_kind=layer_kind, alpha=alpha, doodad_mapping=doodad_mapping,
            no_effect_doodad=no_effect, holes=holes, shadow=shadow, grass_variant=grass_variant,
            doodads=self._doodads(col, row),
        )

    # -- placed doodads (MDDF) -------------------------------------------------------------
    def _doodads(self, col: int, row: int) -> list:
        """A reference figure beside the road in one tile, two rocks on steep ground per tile.

        ``dz`` is the height above the ground (on the cell's triangle fan, which the writer
        evaluates): 0 for the figure's feet, rocks sink a little.
        """
        out = []
        tc, tr = col - self.col0, row - self.row0
        north, west = tile_origin(col, row)
        if tc == self.ncols // 2 - (1 if self.ncols % 2 == 0 else 0) and tr == self.nrows // 2:
            # beside the north-south road, at the tile's first texel row south of its north edge
            east = float(self.road_east(tr * TILE_SIZE + 40.0)) + 9.0
            if tc * TILE_SIZE < east < (tc + 1) * TILE_SIZE:
                X = north - 40.0
                Y = west - (east - tc * TILE_SIZE)
                out.append(("human", X, Y, 0.0, 90.0, 1.0))
        # rocks: steepest fine-lattice points of this tile, at least 60 yards apart
        n = 16 * FINE_PER_CHUNK
        band = self.band(tr)
        r0, c0 = 1 + tr * n - band.r0, 1 + tc * n
        slope = band.fine_slope[r0 + 4:r0 + n - 4, c0 + 4:c0 + n - 4]
        order = np.argsort(slope, axis=None, kind="stable")[::-1]
        picked = []
        for flat in order[:4000]:
            i, j = divmod(int(flat), slope.shape[1])
            if all((i - pi) ** 2 + (j - pj) ** 2 > (60 / HALF) ** 2 for pi, pj in picked):
                picked.append((i, j))
            if len(picked) == 2:
                break
        for k, (i, j) in enumerate(picked):
            X = north - (i + 4) * HALF
            Y = west - (j + 4) * HALF
            out.append(("rock", X, Y, -0.3, 37.0 + 71.0 * k, 1.0 + 0.25 * k))
        return out
