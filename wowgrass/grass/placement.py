"""Ground-effect placement: one ADT tile's arrays + the GroundEffectCatalog -> grass instances.

Pure numpy: arrays in, arrays out; no I/O, no GL. Two strategies share one interface
(:class:`PlacementStrategy`): ``place(tile, catalog, map_name=...) -> Instances``.

* :class:`CoveragePlacement` (``--placement coverage``, the default) is the grass reference's
  "M2 instanced path":
  every 8x8 cell of every MCNK is visited once; its MCAL coverage decides the clump count with
  ``clumps = min(max(1, ceil(coverage/255 * min(density, 24))), 12)``.
* :class:`ClientPlacement` (``--placement client``) is what the 1.12, 2.4.3 and 3.3.5 clients
  scatter, draw for draw (client.md in the shared docs): their table-driven generator seeded per
  chunk from global chunk coordinates, ``client_picks`` cell picks with repeats, the 2-bit
  doodadMapping, ``Density`` doodads per pick (0 means 8, no cap), round-robin slots (1.12/2.4.3)
  or the 16-slot weight bag and the slope rule (3.3.5), in float32 as the clients compute.
  noEffectDoodad cells are skipped in every build (``client_no_effect_335=0``: the first 3.3.5
  decode's untested variant); 3.3.5 takes at least 16 picks, as its CVar's clamp. What the
  clients' draw side keeps of the scatter is grass/capacity.py's (applied by the bake).

Builds: 1.12, 2.4.3 and 3.3.5 (the catalogue says which; 1.12/2.4.3 rows carry no weights).

Decisions the grass reference leaves open for the coverage strategy (also in docs/bake.md), each a
named constant where it is a number:

* coverage of a layer at a cell = the mean of its effective weight over the cell's 8x8 alpha
  texels; layer 0's weight at a texel is ``clip(255 - sum(other layers), 0, 255)``. It is kept
  exactly as the integer texel sum (``coverage = sum / 64``), so the clump formula is evaluated
  in integers: ``ceil(sum * d / (64*255))`` -- no floating-point edge cases.
* the cell's grass layer is the one with the highest coverage among the chunk's existing layers
  whose effect has at least one doodad; ties go to the lower layer index.
* road layers are identified by their MTEX texture name (``fnmatch`` patterns on the lower-case
  basename, :attr:`PlacementConstants.road_patterns`); the road alpha at a cell is the highest
  coverage among road layers, compared with ``road_coverage_min`` the same way.
* height is evaluated on the cell's 4-triangle fan (centre vertex + two corners), never bilinear;
  it is sampled at the *stored* float32 position, so the instance sits on the terrain exactly.
* the coverage strategy's scale is 1.0 (the grass reference's size oracle); yaw is uniform over a full turn.
* slot choice: 3.3.5 rows draw a slot with probability weight/sum(weights) among non-empty
  slots (uniform if all their weights are 0); 1.12/2.4.3 rows choose uniformly among non-empty
  slots. A density of 0 (or less) gives ``max(1, ...)`` = 1 clump in the coverage formula.
* effect ids 0, 0xFFFF, 0xFFFFFFFF and ids the table lacks mean "no effect".

Random numbers (coverage): every draw is ``splitmix64(key[chunk] + (counter + 1) * GAMMA)``, a SplitMix64
stream seeded per chunk by (map name, tile column, tile row, chunk index, constants.seed) and
read by index (counter-based). ``counter`` encodes (cell or pick, clump, stream), so the
vectorized code and a plain per-cell loop draw the very same numbers, and a tile gives the same
instances whatever order or process bakes it.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
import math
import threading
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from wowgrass.game.effects import NO_EFFECT_IDS
from wowgrass.errors import UsageError
from wowgrass.formats.adt import UNIT_SIZE as UNIT
from wowgrass.grass.bundle import scale_word

# Bump when a code change moves any instance: it is part of every bundle's provenance.
PLACEMENT_VERSION = 3

CELLS = 64  # 8x8 cells per chunk
TEXELS_PER_CELL = 64  # 8x8 alpha texels per cell

# Random streams (low 4 bits of the counter).
STREAM_JITTER = 0  # high 32 bits -> u (east), low 32 bits -> v (south)
STREAM_CHOICE = 1  # high 16 bits -> yaw, low 32 bits -> slot (bits 32..47 unused)

_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_TWO_PI = 2.0 * math.pi


#: constant names from before the coverage strategy had its name (``-C seed_scale=...``)
CONSTANT_ALIASES = {"seed_scale": "coverage_scale"}


# valid values of each number (inclusive) and why; bundles store scale * 4096 in 16 bits
_SCALE_MAX = 65535 / 4096
CONSTANT_RANGES = {
    "coverage_min": (0, 255, "alpha is 0 .. 255"),
    "road_coverage_min": (0, 256, "alpha is 0 .. 255; 256 never counts a road"),
    "dbc_density_max": (0, 1 << 20, "a doodad count"),
    # the random counters hold a cell/pick index below 2**40 and a clump index below 2**20
    "max_placements_per_sample": (0, (1 << 20) - 1, "clumps per cell"),
    "coverage_scale": (1 / 4096, _SCALE_MAX, "bundles store scale in 1/4096 steps below 16"),
    "client_picks": (1, 256, "1.12 clamps frillDensity to 1 .. 256 (3.3.5 groundEffectDensity to 16 .. 256)"),
    "client_min_normal_z": (-1.0, 1.0, "the z of a unit normal"),
    "client_no_effect_335": (0, 1, "1 = tested, as the 3.3.5 client does; 0 = the first decode's untested variant"),
    "client_capacity": (0, 1, "1 = keep what the client's draw capacity keeps; 0 = the whole scatter"),
    "seed": (-(1 << 63), (1 << 63) - 1, "a 64-bit integer"),
}


@dataclass(frozen=True)
class PlacementConstants:
    """Every tunable number of both strategies; the defaults are the grass reference's constants table.

    A bundle's provenance records all of them, so changing one re-bakes.
    """

    # --- coverage strategy (r_wowmap.h table) ---
    coverage_min: int = 32  # WOW_GRASS_COVERAGE_MIN: mean coverage needed to spawn at all
    road_coverage_min: int = 24  # WOW_GRASS_ROAD_COVERAGE_MIN: road alpha that suppresses grass
    dbc_density_max: int = 24  # WOW_GRASS_DBC_DENSITY_MAX: cap on GroundEffectTexture.Density
    max_placements_per_sample: int = 12  # WOW_GRASS_MAX_PLACEMENTS_PER_SAMPLE: clumps per cell
    coverage_scale: float = 1.0  # the 2004 size oracle: detail models at scale 1.0
    road_patterns: tuple[str, ...] = ("*road*", "*cobble*", "*path*", "*trail*")
    # --- client strategy (client.md; docs/bake.md) ---
    client_picks: int = 16  # frillDensity / groundEffectDensity (default 16): cell picks per chunk
    client_min_normal_z: float = 0.4  # 3.3.5 MIN_NORMAL_Z (0.4f): steeper triangles get nothing
    client_no_effect_335: int = 1  # 3.3.5 skips noEffectDoodad cells; 0: the first decode's untested variant
    client_capacity: int = 1  # drop what the client's draw capacity drops (grass/capacity.py)
    # --- coverage strategy ---
    seed: int = 0  # mixed into every chunk key; the client strategy's seeds are the clients' own

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["road_patterns"] = list(self.road_patterns)
        return d

    def __post_init__(self):
        for name, (lo, hi, why) in CONSTANT_RANGES.items():
            v = getattr(self, name)
            if not lo <= v <= hi:
                raise UsageError(f"placement constant {name}={v} is outside {lo} .. {hi} ({why})")

    def with_overrides(self, pairs) -> PlacementConstants:
        """Apply ``"name=value"`` strings (``road_patterns`` takes a comma-separated list)."""
        types = {f.name: f.type for f in dataclasses.fields(self)}
        changes = {}
        for pair in pairs:
            name, sep, text = pair.partition("=")
            name = name.strip().replace("-", "_")
            name = CONSTANT_ALIASES.get(name, name)
            if not sep or name not in types:
                known = ", ".join(types)
                raise UsageError(f"bad constant {pair!r}: give NAME=VALUE with NAME one of {known}")
            kind = str(types[name])
            try:
                if name == "road_patterns":
                    value = tuple(p.strip() for p in text.split(",") if p.strip())
                elif kind == "int":
                    value = int(text)
                else:
                    value = float(text)
            except ValueError:
                raise UsageError(f"bad constant {pair!r}: {text!r} is not {'an int' if kind == 'int' else 'a number'}") from None
            changes[name] = value
        return dataclasses.replace(self, **changes)


@dataclass
class Instances:
    """Placed instances of one tile, ordered by (chunk, cell or pick, clump).

    ``model`` indexes ``models`` (the catalogue's model list); ``yaw`` is radians about +Z (the
    coverage strategy's in [0, 2*pi); the client strategy keeps the client's own float32 angle:
    1.12/2.4.3 in [-pi, pi], 3.3.5 in [0, 2*pi]);
    ``chunk`` is the MCNK index (IndexY*16+IndexX), ``cell`` is r*8+c inside it.
    """

    model: np.ndarray  # (n,) i4
    pos: np.ndarray  # (n, 3) f4 world X (north), Y (west), Z (up)
    yaw: np.ndarray  # (n,) f4
    scale: np.ndarray  # (n,) f4
    chunk: np.ndarray  # (n,) u2
    cell: np.ndarray  # (n,) u1
    models: list[str] = field(default_factory=list)
    #: what a strategy may hand on when it has them anyway (the bundle writer then skips a pass):
    #: the bundle's records as (n, 4) little-endian words (``pos`` is then a view of their first
    #: three), and the instances per cell (256, 8, 8) u2
    records: np.ndarray | None = None
    per_cell: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.model.shape[0])

    def cell_counts(self) -> np.ndarray:
        """Instances per cell, (256, 8, 8) u2 (saturating at 65535)."""
        if self.per_cell is not None:
            return self.per_cell
        flat = np.left_shift(self.chunk, 6, dtype=np.uint16)  # chunk * CELLS + cell: 16 bits
        flat |= self.cell
        counts = np.bincount(flat, minlength=256 * CELLS)
        return np.minimum(counts, 65535).astype(np.uint16).reshape(256, 8, 8)

    def model_counts(self) -> np.ndarray:
        return np.bincount(self.model, minlength=len(self.models)).astype(np.int64)

    def take(self, keep: np.ndarray) -> Instances:
        """The instances where ``keep`` (bool, (n,)) is set, in the same order."""
        return Instances(model=self.model[keep], pos=np.ascontiguousarray(self.pos[keep]), yaw=self.yaw[keep],
                         scale=self.scale[keep], chunk=self.chunk[keep], cell=self.cell[keep],
                         models=list(self.models))


# ----------------------------------------------------------------------------- random numbers


def _mix64(z: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """SplitMix64's output function (Stafford variant 13) on uint64 arrays (into ``out``: may be ``z``)."""
    z = np.asarray(z, np.uint64)
    if out is None:
        out = np.empty_like(z)
    t = np.right_shift(z, np.uint64(30))
    np.bitwise_xor(z, t, out=out)
    out *= _MIX1
    np.right_shift(out, np.uint64(27), out=t)
    out ^= t
    out *= _MIX2
    np.right_shift(out, np.uint64(31), out=t)
    out ^= t
    return out


def chunk_keys(map_name: str, col: int, row: int, seed: int = 0) -> np.ndarray:
    """The 256 per-chunk stream keys of tile (col, row) of ``map_name`` (case-insensitive)."""
    text = f"wowgrass-placement|{map_name.lower()}|{int(col)}|{int(row)}|{int(seed)}".encode()
    base = np.uint64(int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little"))
    with np.errstate(over="ignore"):
        return _mix64(base + np.arange(1, 257, dtype=np.uint64) * _GAMMA)


def counters(a, b, stream: int) -> np.ndarray:
    """Counter of draw ``stream`` for clump ``b`` of cell/pick ``a`` (a < 2**40, b < 2**20)."""
    a = np.asarray(a, dtype=np.uint64)
    b = np.asarray(b, dtype=np.uint64)
    return (a << np.uint64(24)) | (b << np.uint64(4)) | np.uint64(stream)


def draw(keys: np.ndarray, counter: np.ndarray) -> np.ndarray:
    """64 random bits per element: SplitMix64 at position ``counter`` of the stream ``keys``."""
    keys = np.asarray(keys, dtype=np.uint64)
    counter = np.asarray(counter, dtype=np.uint64)
    with np.errstate(over="ignore"):
        return _mix64(keys + (counter + np.uint64(1)) * _GAMMA)


_INV32 = 1.0 / 4294967296.0


def _halves(bits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(high, low) 32-bit halves of uint64 ``bits`` as strided uint32 views, no copy (a
    little-endian host, as :func:`coverage_sums`). numpy converts uint32 to float64 in SIMD but
    uint64 one element at a time: converting the halves is several times faster."""
    words = bits.view(np.uint32).reshape(-1, 2)
    return words[:, 1], words[:, 0]


def _unit(word32: np.ndarray) -> np.ndarray:
    """A 32-bit word as a float64 in [0, 1): ``word * 2**-32``."""
    return np.multiply(word32, _INV32, dtype=np.float64)


def split_jitter(bits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(u, v) in [0, 1) from one 64-bit draw (high and low 32 bits)."""
    high, low = _halves(bits)
    return _unit(high), _unit(low)


def split_choice(bits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(yaw16 in 0..65535, the slot's 32-bit word: uniform ``word * 2**-32`` in [0, 1)) from one
    64-bit draw, as uint16 and uint32 views (bits 32..47 are not used: the coverage strategy's
    scale is a constant)."""
    return bits.view(np.uint16)[3::4], _halves(bits)[1]


def slot_thresholds(cum: np.ndarray) -> np.ndarray:
    """(k, 3) int64: for cumulative slot weights ``cum`` (k, 4) float64 with ``cum[:, 3] > 0``,
    the least word ``w`` in 0 .. 2**32 with ``cum[j] <= (w * 2**-32) * cum[3]`` in float64.

    The weighted choice ``slot = #{j < 3 : cum[j] <= u * cum[3]}`` with ``u = word * 2**-32`` is
    then ``#{j < 3 : word >= threshold[j]}``: integer compares instead of a float pass per
    instance. The product is monotone in ``w`` and its roundings move the exact threshold
    ``cum[j] / cum[3] * 2**32`` by far less than 1, so it lies among a few words around that
    estimate; each is tested with the very float64 steps (2**32 always passes: never chosen)."""
    total = cum[:, 3:]
    guess = np.ceil(cum[:, :3] / total * 4294967296.0)
    words = np.clip(guess[..., None] + np.arange(-3.0, 4.0), 0.0, 4294967296.0)  # (k, 3, 7)
    passes = (words * _INV32) * total[..., None] >= cum[:, :3, None]
    return words[np.arange(cum.shape[0])[:, None], np.arange(3), passes.argmax(axis=2)].astype(np.int64)


def yaw_radians(yaw16: np.ndarray) -> np.ndarray:
    """A 16-bit yaw as radians in [0, 2*pi); round-trips through INSTANCE_DTYPE exactly."""
    return (np.asarray(yaw16, dtype=np.float64) * (_TWO_PI / 65536.0)).astype(np.float32)


# ----------------------------------------------------------------------------- terrain


def fan_planes(heights: np.ndarray, cells: np.ndarray | None = None):
    """The planes of the 4 fan triangles of ``cells``: (h_centre (k,), gx, gy (k, 4)).

    ``heights`` (256, 145) relative MCVT as float64; ``cells`` flat indices ``chunk*64 + r*8 + c``
    (all 16,384 when None). Triangle 0 is (centre, TR, BR) to the east, 1 (centre, TL, BL) west,
    2 (centre, BL, BR) south, 3 (centre, TL, TR) north. On triangle t the height at cell
    fractions (u east, v south) is ``h_c + gx[t]*(u-0.5) + gy[t]*(v-0.5)``.
    """
    if cells is None:
        cells = np.arange(256 * 64)
    chunk = cells >> 6
    r = (cells >> 3) & 7
    c = cells & 7
    i0 = r * 17 + c
    h_tl = heights[chunk, i0]
    h_tr = heights[chunk, i0 + 1]
    h_bl = heights[chunk, i0 + 17]
    h_br = heights[chunk, i0 + 18]
    h_c = heights[chunk, i0 + 9]
    gx = np.stack([h_tr + h_br - 2.0 * h_c, 2.0 * h_c - h_tl - h_bl, h_br - h_bl, h_tr - h_tl], axis=1)
    gy = np.stack([h_br - h_tr, h_bl - h_tl, h_bl + h_br - 2.0 * h_c, 2.0 * h_c - h_tl - h_tr], axis=1)
    return h_c, gx, gy


def fan_surface(planes, first, u, v) -> np.ndarray:
    """Height relative to the chunk base on the cell's fan at cell fractions (u east, v south).

    ``first`` is 4 * the index of the cell among those ``planes`` were made for (:func:`fan_planes`):
    its first triangle in the flat (cell, triangle) planes. The triangle is 3 (north) or 2
    (south) where ``|v - 0.5| >= |u - 0.5|``, else 1 (west) or 0 (east).
    """
    h_c, gx, gy = planes
    dx = u - 0.5
    dy = v - 0.5
    vertical = np.abs(dy) >= np.abs(dx)
    # the triangle, 2 * vertical + (vertical ? dy <= 0 : dx <= 0), in byte-wide logic (np.where
    # branches on random masks)
    west = dx <= 0
    low_bit = np.bitwise_xor(west, dy <= 0)
    low_bit &= vertical
    low_bit ^= west
    tri = np.left_shift(vertical.view(np.uint8), 1)
    tri += low_bit
    k = first + tri
    z = np.repeat(h_c, 4).take(k)  # h_c + px * dx + py * dy, in that order
    px = gx.reshape(-1).take(k)
    px *= dx
    z += px
    py = gy.reshape(-1).take(k, out=px)
    py *= dy
    z += py
    return z


def _place_on_fan(tile_pos, planes, counts, chunk, r, c, u, v, out=None):
    """World float32 positions of cell-local (u, v) (per instance; both are overwritten) in the
    cells ``planes`` were made for, ``counts`` instances each; ``chunk``, ``r``, ``c`` are per
    cell. Z is sampled at the stored float32 X/Y. ``out``: an (n, 3) float32 array (or view) to fill."""
    if out is None:
        out = np.empty((u.shape[0], 3), np.float32)
    bx = np.repeat(tile_pos[chunk, 0], counts)
    by = np.repeat(tile_pos[chunk, 1], counts)
    rows = np.repeat(r.astype(np.float64), counts)
    cols = np.repeat(c.astype(np.float64), counts)
    # the same float64 steps as (base - (r + v) * UNIT).astype(float32), in place
    t = np.add(v, rows, out=v)
    t *= UNIT
    out[:, 0] = np.subtract(bx, t, out=t)
    t = np.add(u, cols, out=u)
    t *= UNIT
    out[:, 1] = np.subtract(by, t, out=t)
    # Re-derive the cell fractions from the rounded coordinates so Z is the terrain height
    # exactly under the stored position (float32 X/Y near 17000 yd move by up to ~1e-3).
    v2 = np.subtract(bx, out[:, 0], out=bx)
    v2 /= UNIT
    v2 -= rows
    u2 = np.subtract(by, out[:, 1], out=by)
    u2 /= UNIT
    u2 -= cols
    for w in (u2, v2):  # NaN stays NaN; -0.0 may turn 0.0, the same once fan_surface takes 0.5 off
        np.clip(w, 0.0, 1.0, out=w)
    h = fan_surface(planes, np.repeat(np.arange(0, 4 * counts.size, 4), counts), u2, v2)
    h += np.repeat(tile_pos[chunk, 2], counts)  # float64 addition commutes exactly
    out[:, 2] = h
    return out


def hole_cells(holes: np.ndarray) -> np.ndarray:
    """(256, 8, 8) bool from the low-res holes bitmask: bit (r>>1)*4 + (c>>1)."""
    rr = np.arange(8)[:, None] >> 1
    cc = np.arange(8)[None, :] >> 1
    bit = (rr * 4 + cc).astype(np.uint32)
    return ((np.asarray(holes, dtype=np.uint32)[:, None, None] >> bit) & 1).astype(bool)


# ----------------------------------------------------------------------------- layers & effects


def layer_exists(tile) -> np.ndarray:
    """(256, 4) bool: the MCLY layer is present."""
    n = np.asarray(tile.n_layers).astype(np.int64)
    exists = np.arange(4)[None, :] < n[:, None]
    tex = getattr(tile, "layer_texture", None)
    if tex is not None:
        exists &= np.asarray(tex) >= 0
    return exists


_SCRATCH = threading.local()


def _scratch(name: str, shape, dtype) -> np.ndarray:
    """A per-thread reusable work buffer (contents undefined)."""
    store = _SCRATCH.__dict__.setdefault("buffers", {})
    key = (name, tuple(shape), np.dtype(dtype).str)
    buf = store.get(key)
    if buf is None:
        buf = store[key] = np.empty(shape, dtype)
    return buf


def _sum8(a: np.ndarray, axis: int) -> np.ndarray:
    """Sum an axis of length 8 by halving it (much faster than a strided reduce: each addition
    runs over contiguous blocks of the axes after it). Integers only: the order differs."""
    a = np.moveaxis(a, axis, 0)  # a view: numpy still iterates in memory order
    half = a[:4] + a[4:]
    quarter = half[:2] + half[2:]
    return quarter[0] + quarter[1]


_EVEN = np.uint64(0x00FF00FF00FF00FF)
_HIGH = np.uint64(0xFF00FF00FF00FF00)
_LANES = np.uint64(0x0001000100010001)


def coverage_sums(tile) -> np.ndarray:
    """(256, 4, 8, 8) int32: each layer's effective weight summed over each cell's 64 texels.

    Layer 0's weight is ``clip(255 - sum(others), 0, 255)`` per texel. Divide by 64 for the mean.
    Eight texels of a row are one little-endian uint64, summed as four 16-bit lanes (SWAR): the
    whole tile costs a few passes over 3 MB instead of a 4-million-element reduction. (Assumes a
    little-endian host, as numpy's uint16 view of the lanes does.)
    """
    alpha = np.ascontiguousarray(tile.alpha, dtype=np.uint8)
    exists = layer_exists(tile)
    words = alpha[:, 1:].view("<u8")  # (256, 3, 64 texel rows, 8 cells)
    # Work in reused scratch buffers: fresh 3 MB temporaries per tile cost more in page faults
    # than the arithmetic itself.
    even = np.bitwise_and(words, _EVEN, out=_scratch("even", words.shape, np.uint64))
    odd = np.right_shift(words, np.uint64(8), out=_scratch("odd", words.shape, np.uint64))
    odd &= _EVEN
    e = np.add(even[:, 0], even[:, 1], out=_scratch("e", (256, 64, 8), np.uint64))
    e += even[:, 2]
    o = np.add(odd[:, 0], odd[:, 1], out=_scratch("o", (256, 64, 8), np.uint64))
    o += odd[:, 2]
    pair = np.add(even, odd, out=even)  # 4 lanes of 2 texels, <= 510
    rows8 = _sum8(pair.reshape(256, 3, 8, 8, 8), axis=3)  # lanes <= 4080
    others_sums = ((rows8 * _LANES) >> np.uint64(48)).astype(np.int32)  # (256, 3, 8, 8)
    sums = np.empty((256, 4, 8, 8), dtype=np.int32)
    sums[:, 1:] = others_sums
    sums[:, 0] = 255 * TEXELS_PER_CELL - others_sums.sum(axis=1)
    # Where the other layers sum past 255 at a texel (common: 3.x layers are authored
    # independently) layer 0's weight clips at 0 there. Per-texel sums of the three layers in
    # 16-bit lanes (<= 765): even texel columns in ``e``, odd ones in ``o``.
    over = (((e | o) & _HIGH) != 0).any(axis=(1, 2))
    bad = np.nonzero(over)[0]
    if bad.size:
        e16 = np.ascontiguousarray(e[bad]).view(np.uint16)  # (k, 64, 32) little-endian lanes
        o16 = np.ascontiguousarray(o[bad]).view(np.uint16)
        sat = np.minimum(e16, 255) + np.minimum(o16, 255)  # clipped pair sums, <= 510
        rows = _sum8(sat.reshape(-1, 8, 8, 8, 4), axis=2)  # (k, cell row, cell col, lane) <= 4080
        blocks = rows[..., 0].astype(np.int32) + rows[..., 1] + rows[..., 2] + rows[..., 3]
        sums[bad, 0] = 255 * TEXELS_PER_CELL - blocks
    sums[~exists] = 0
    return sums


def road_layers(tile, patterns) -> np.ndarray:
    """(256, 4) bool: the layer's MTEX texture name matches a road pattern."""
    names = [str(t).replace("/", "\\").rsplit("\\", 1)[-1].lower() for t in getattr(tile, "textures", [])]
    pats = [p.lower() for p in patterns]
    is_road = np.array([any(fnmatch.fnmatchcase(n, p) for p in pats) for n in names] + [False], dtype=bool)
    tex = np.asarray(tile.layer_texture).astype(np.int64)
    tex = np.where((tex >= 0) & (tex < len(names)), tex, len(names))
    return is_road[tex] & layer_exists(tile)


def resolve_effects(tile, catalog) -> np.ndarray:
    """(256, 4) i8: catalogue row of each layer's effect, -1 for none or absent layers."""
    eff = np.asarray(tile.layer_effect).astype(np.uint32)
    rows = np.asarray(catalog.lookup(eff.reshape(-1))).astype(np.int64).reshape(256, 4)
    none = np.isin(eff, np.array(NO_EFFECT_IDS, dtype=np.uint32)) | ~layer_exists(tile)
    return np.where(none, -1, rows)


def used_effect_ids(tile, catalog) -> np.ndarray:
    """Sorted unique effect ids of the tile's layers that resolve in the catalogue."""
    rows = resolve_effects(tile, catalog)
    eff = np.asarray(tile.layer_effect).astype(np.uint32)
    return np.unique(eff[rows >= 0])


def unknown_effect_ids(tile, catalog) -> tuple[np.ndarray, int]:
    """Effect ids the tile's layers use that the catalogue lacks (sorted), and how many cells lie in
    chunks with such a layer: the grass the tables cannot describe (placement treats them as none)."""
    eff = np.asarray(tile.layer_effect).astype(np.uint32)
    rows = np.asarray(catalog.lookup(eff.reshape(-1))).astype(np.int64).reshape(256, 4)
    unknown = (rows < 0) & layer_exists(tile) & ~np.isin(eff, np.array(NO_EFFECT_IDS, dtype=np.uint32))
    return np.unique(eff[unknown]), int(unknown.any(axis=1).sum()) * CELLS


def why_no_grass(tile, catalog) -> str:
    """Why ``tile`` gets no grass with ``catalog``'s tables, in words (for a tile baked empty)."""
    exists = layer_exists(tile)
    if not exists.any():
        return "the tile has no texture layers"
    eff = np.asarray(tile.layer_effect).astype(np.uint32)
    named = exists & ~np.isin(eff, np.array(NO_EFFECT_IDS, dtype=np.uint32))
    if not named.any():
        return "its texture layers name no ground effect (effectId 0 everywhere)"
    rows = np.asarray(catalog.lookup(eff.reshape(-1))).astype(np.int64).reshape(256, 4)
    known = named & (rows >= 0)
    if not known.any():
        ids = ", ".join(str(i) for i in np.unique(eff[named])[:8].tolist())
        return f"its effect ids ({ids}) are not in these tables (from another client build?)"
    slot_model = np.asarray(catalog.slot_model)[np.where(known, rows, 0)]        # (256, 4, 4)
    with_models = known & (slot_model >= 0).any(axis=-1)
    if not with_models.any():
        return "its effects have no doodads (grass models) in these tables"
    density = np.asarray(catalog.density)[np.where(with_models, rows, 0)]
    growing = with_models & (density > 0)
    if not growing.any():
        return "its effects have density 0 in these tables"
    chunks = growing.any(axis=1)
    free = ~np.asarray(tile.no_effect_doodad, bool) & ~tile.hole_cells()
    if not free[chunks].any():
        return "every cell where its effects grow is excluded (noEffectDoodad bits or holes)"
    return "the placement drew no instance where its effects grow (too sparse for these constants?)"


def slot_probabilities(catalog, rows: np.ndarray) -> np.ndarray:
    """(len(rows), 4) float64 slot weights of catalogue ``rows`` for the coverage strategy's choice (0 = never)."""
    slot_model = np.asarray(catalog.slot_model)[rows]
    nonempty = slot_model >= 0
    if catalog.has_weights:
        weight = np.asarray(catalog.slot_weight)[rows]
        w = np.where(nonempty, np.maximum(weight, 0), 0).astype(np.float64)
        zero = w.sum(axis=1) == 0
        w[zero] = nonempty[zero]
    else:
        w = nonempty.astype(np.float64)
    return w


def weight_bags(catalog, rows: np.ndarray) -> np.ndarray:
    """3.3.5's 16-slot bag for each catalogue row in ``rows``: (len(rows), 16) slot index.

    Deal ``weight[k]`` copies of slot k at stride 13 (deal j lands on ``13*j & 15``), then, while
    fewer than 16 were dealt, deal slot ``j & 3``; later deals overwrite earlier ones. So position p
    keeps the last deal ``j ≡ 5p (mod 16)`` (13 * 5 ≡ 1): a closed form whatever the weights.
    """
    w = np.maximum(np.asarray(catalog.slot_weight)[rows].astype(np.int64), 0).reshape(-1, 4)
    cum = np.cumsum(w, axis=1)
    total = cum[:, 3:4]
    deals = np.maximum(total, 16)
    last = deals - 1 - ((deals - 1 - 5 * np.arange(16)[None, :]) % 16)
    weighted_slot = (cum[:, None, :] <= last[:, :, None]).sum(axis=2)
    return np.where(last < total, weighted_slot, last & 3).astype(np.int64)


# ----------------------------------------------------------------------------- strategies


class PlacementStrategy(Protocol):
    name: str
    constants: PlacementConstants

    def place(self, tile, catalog, *, map_name: str) -> Instances: ...


def _tile_keys(tile, map_name: str, constants: PlacementConstants) -> np.ndarray:
    return chunk_keys(map_name, int(tile.col), int(tile.row), constants.seed)


def _empty(models) -> Instances:
    return Instances(
        model=np.zeros(0, np.int32),
        pos=np.zeros((0, 3), np.float32),
        yaw=np.zeros(0, np.float32),
        scale=np.zeros(0, np.float32),
        chunk=np.zeros(0, np.uint16),
        cell=np.zeros(0, np.uint8),
        models=list(models),
    )


@dataclass
class CoveragePlacement:
    """The grass reference's per-cell MCAL-coverage placement (the default)."""

    constants: PlacementConstants = field(default_factory=PlacementConstants)
    name: str = "coverage"

    def cell_clumps(self, tile, catalog) -> tuple[np.ndarray, np.ndarray]:
        """(clumps, effect row) per cell, both (256, 8, 8); clumps 0 where nothing grows."""
        k = self.constants
        rows = resolve_effects(tile, catalog)  # (256, 4)
        slot_model = np.asarray(catalog.slot_model)
        has_doodads = np.zeros(rows.shape, dtype=bool)
        ok = rows >= 0
        has_doodads[ok] = (slot_model[rows[ok]] >= 0).any(axis=1)
        sums = coverage_sums(tile)  # (256, 4, 8, 8)
        road = road_layers(tile, k.road_patterns)
        # per layer over (256, 8, 8) slices: cheaper than reductions across the layer axis
        cov = np.full((256, 8, 8), -1, dtype=np.int32)  # -1: no layer with doodads
        layer = np.zeros((256, 8, 8), dtype=np.int64)
        road_sum = np.zeros((256, 8, 8), dtype=np.int32)
        for L in range(4):
            s_l = sums[:, L]
            cand = np.where(has_doodads[:, L, None, None], s_l, -1)
            better = cand > cov  # strict: ties keep the lower layer
            cov = np.where(better, cand, cov)
            layer[better] = L
            if road[:, L].any():
                road_sum = np.maximum(road_sum, np.where(road[:, L, None, None], s_l, 0))
        eff_row = np.take_along_axis(rows, layer.reshape(256, 64), axis=1).reshape(256, 8, 8)
        keep = (cov >= k.coverage_min * TEXELS_PER_CELL) & (road_sum < k.road_coverage_min * TEXELS_PER_CELL)
        keep &= ~np.asarray(tile.no_effect_doodad, dtype=bool).reshape(256, 8, 8)
        keep &= ~hole_cells(tile.holes)
        density = np.asarray(catalog.density).astype(np.int64)
        d = np.clip(density[np.where(keep, eff_row, 0)], 0, k.dbc_density_max)
        denom = 255 * TEXELS_PER_CELL
        clumps = (np.where(keep, cov, 0).astype(np.int64) * d + denom - 1) // denom
        clumps = np.minimum(np.maximum(1, clumps), k.max_placements_per_sample)
        clumps = np.where(keep, clumps, 0)
        return clumps, np.where(keep, eff_row, -1)

    def place(self, tile, catalog, *, map_name: str) -> Instances:
        k = self.constants
        clumps, eff_row = self.cell_clumps(tile, catalog)
        flat = clumps.reshape(-1)
        cells = np.flatnonzero(flat)
        if cells.size == 0:
            return _empty(catalog.models)
        n = flat[cells]  # clumps of each cell that grows; per-cell values reach them by np.repeat
        total = int(n.sum())
        chunk = cells >> 6
        cell = cells & 63
        # draw(keys, counters(cell, clump, stream)) for both streams: in uint64's modular arithmetic
        # keys + (counter + 1) * GAMMA splits into a per-cell part, a per-clump part and the stream's
        # constant (the stream sits in the counter's low 4 bits, which cell and clump leave zero).
        # The clump is the instance's index less its cell's first, so the per-clump part is
        # index * 16 * GAMMA with the cell's first index's share moved into the per-cell part.
        with np.errstate(over="ignore"):
            clump_step = np.uint64(1 << 4) * _GAMMA
            cell_part = _tile_keys(tile, map_name, k)[chunk] + cell.astype(np.uint64) * (np.uint64(1 << 24) * _GAMMA)
            cell_part -= (np.cumsum(n) - n).astype(np.uint64) * clump_step
            cell_part += np.uint64(STREAM_JITTER + 1) * _GAMMA
            mixed = np.arange(total, dtype=np.uint64)
            mixed *= clump_step
            mixed += np.repeat(cell_part, n)
            u, v = split_jitter(_mix64(mixed))
            mixed += np.uint64(STREAM_CHOICE - STREAM_JITTER) * _GAMMA
            yaw16, word = split_choice(_mix64(mixed, out=mixed))
        # weighted choice over the few rows in use: slot = first k with target < cum[k]
        cell_row = eff_row.reshape(-1)[cells]
        urows = np.flatnonzero(np.bincount(cell_row))  # np.unique of small row numbers, without a sort
        at = np.searchsorted(urows, cell_row)
        thresholds = slot_thresholds(np.cumsum(slot_probabilities(catalog, urows), axis=1))
        # A threshold no 32-bit word reaches (2**32) counts as one every word reaches (0), less one
        # in the row's first slot: the words are then compared as uint32, as drawn.
        never = thresholds >> 32
        first_slot = np.arange(0, 4 * urows.size, 4) - never.sum(axis=1)  # into the (row, slot) model table
        thresholds = np.where(never, 0, thresholds).astype(np.uint32)[at]  # per cell
        passed = np.zeros(total, np.uint8)  # thresholds each word reaches: its slot
        for j in range(3):
            passed += (word >= np.repeat(thresholds[:, j], n)).view(np.uint8)
        slot = np.repeat(first_slot[at], n)
        slot += passed
        slot_model = np.asarray(catalog.slot_model)[urows].astype(np.int32)
        # the bundle's records, (x, y, z, yaw | scale << 16) words: the positions land in place
        records = np.empty((total, 4), "<u4")
        pos = records[:, :3].view("<f4")
        scale16 = scale_word(np.float32(k.coverage_scale))   # as the writer packs a float32 scale
        np.bitwise_or(yaw16, scale16 << np.uint32(16), out=records[:, 3], casting="unsafe")
        _place_on_fan(
            np.asarray(tile.positions, dtype=np.float64),
            fan_planes(np.asarray(tile.heights, dtype=np.float64), cells),
            n,
            chunk,
            cell >> 3,
            cell & 7,
            u,
            v,
            out=pos,
        )
        return Instances(
            model=slot_model.reshape(-1).take(slot),
            pos=pos,
            yaw=yaw_radians(yaw16),
            scale=np.full(total, k.coverage_scale, dtype=np.float32),
            chunk=np.repeat(chunk.astype(np.uint16), n),
            cell=np.repeat(cell.astype(np.uint8), n),
            models=list(catalog.models),
            records=records,
            per_cell=np.minimum(clumps, 65535).astype(np.uint16),  # one instance a clump
        )


# ----------------------------------------------------------------------------- the clients' own scatter
#
# ``--placement client`` reproduces the scatter of the real clients (client.md in the shared docs):
# [B] the 1.12.1 routine as ported in steel97/benilla (ground_effects.rs; 2.4.3 shares it) and [F]
# the 3.3.5a one as decoded in zeruth/FrozenClient (DetailDoodad.cpp). Where a decode computes in
# float32, so does this code: one float32 rounding per operation, in the decode's order.

#: ``gnoise32_``: the clients' 256-byte noise table as 64 little-endian words (a permutation of 0..255)
CLIENT_NOISE = np.array([
    0x9927148E, 0x08C7AAFD, 0x1F3EE6D5, 0xDA55BBF6, 0x6A4AA075, 0xFF97BDE8, 0x9FBC9BDE, 0x46A18A81,
    0x63E30B6E, 0x5D6C7A76, 0xCA69D388, 0x25B947C3, 0x3FA2AB83, 0xBA7C41A6, 0x0195ACE5, 0xC109CF7E,
    0x717062D9, 0x0205DB8D, 0x54EF8724, 0x3037D4C6, 0x7BCB1BD0, 0xECD8E4B8, 0xDCADCE49, 0xC494A913,
    0x0DAE398F, 0x0EDD5218, 0x85F5FA78, 0x6DAFD258, 0x3B53B2A4, 0xBE50A551, 0x11F42DFC, 0xF1169848,
    0x663DDF86, 0x2F2E445E, 0x176B0736, 0xB64C298B, 0xE75F89E2, 0xE121A7CD, 0xED65C94D, 0x239CEEFE,
    0x04B77D33, 0x402A9A9E, 0xF35B10B3, 0x921C7782, 0x571E4E20, 0x8C067222, 0xFB732C67, 0xBF0AC259,
    0x0CF95C79, 0x68121A28, 0x42193474, 0xF884C0B1, 0x9D15F038, 0x6F3AF260, 0x91EB90B4, 0x61357F1D,
    0x5603325A, 0x932BC5A3, 0x434B0F80, 0x3CE0A8F7, 0x2664D196, 0x4FCC45D7, 0xB5E9B0C8, 0xEA31D600,
], dtype="<u4")

# The generator's four byte lanes each count down by a fixed step modulo their own period and
# always hold a multiple of 4, so after t draws lane L holds 4 * ((q0 - step * t) mod period) with
# q0 = seed mod period: every draw's increment is a closed form of (seed, t), and the 256 chunk
# streams are whole arrays (the running sum is a uint32 cumsum) instead of 256 sequential loops.
# (period, step, left rotation of its noise word), for state bytes 0 .. 3.
_RNG_LANES = ((61, 7, 0), (59, 6, 3), (53, 3, 2), (47, 1, 1))


def _noise_word(offset: int) -> int:
    return int.from_bytes(CLIENT_NOISE.tobytes()[offset:offset + 4], "little")


def _rotl32(x: int, k: int) -> int:
    return ((x << k) | (x >> (32 - k))) & 0xFFFFFFFF if k else x


_RNG_TERMS = tuple(np.array([_rotl32(_noise_word(4 * q), rot) for q in range(period)], dtype=np.uint32)
                   for period, _step, rot in _RNG_LANES)
# The same terms in the order one lane visits them: after t draws lane L reads
# _RNG_SEQ[L][(j0 + t) % period] with j0 = -q0 / step (mod period), so a run of draws is a slice.
_RNG_SEQ = tuple(terms[(-step * np.arange(period)) % period]
                 for (period, step, _rot), terms in zip(_RNG_LANES, _RNG_TERMS))
_RNG_INV = tuple(pow(step, -1, period) for period, step, _rot in _RNG_LANES)
_RNG_EXT: dict = {}  # lane -> its sequence repeated, for slicing runs without a modulo


def _lane_ext(lane: int, length: int) -> np.ndarray:
    period = _RNG_LANES[lane][0]
    ext = _RNG_EXT.get(lane)
    if ext is None or ext.size < length + period:
        reps = (length + period) // period + 1
        ext = _RNG_EXT[lane] = np.tile(_RNG_SEQ[lane], max(reps, 64))
    return ext


def client_seed(gx, gy) -> np.ndarray:
    """The clients' chunk seed ``(gy << 16) | gx`` from global chunk coordinates (client.md §2)."""
    gx = np.asarray(gx, dtype=np.int64) & 0xFFFF
    gy = np.asarray(gy, dtype=np.int64) & 0xFFFF
    return ((gy << 16) | gx).astype(np.uint32)


def client_chunk_seeds(tile) -> np.ndarray:
    """(256,) u4: each MCNK's seed, ``gx = 16 * column + IndexX``, ``gy = 16 * row + IndexY``."""
    idx = np.asarray(tile.index_xy, dtype=np.int64).reshape(256, 2)
    return client_seed(16 * int(tile.col) + idx[:, 0], 16 * int(tile.row) + idx[:, 1])


def _lane_offsets(seeds: np.ndarray, lane: int, t0) -> np.ndarray:
    """Where lane ``lane`` of each stream reads its sequence for draw number ``t0 + 1``."""
    period, _step, _rot = _RNG_LANES[lane]
    q0 = seeds.astype(np.int64) % period
    return (-q0 * _RNG_INV[lane] + np.asarray(t0, dtype=np.int64) + 1) % period


def _stream_rows(seeds: np.ndarray, after: np.ndarray, first: int, length: int) -> np.ndarray:
    """(len(seeds), length) u4: draws ``first + 1 .. first + length`` of each stream, whose sum after
    ``first`` draws is ``after``. A lane's run is a window of its repeated sequence, so each row is
    copied out whole; then one uint32 cumsum per row."""
    inc = None
    for lane in range(4):
        windows = np.lib.stride_tricks.sliding_window_view(_lane_ext(lane, length), length)
        term = windows[_lane_offsets(seeds, lane, first)]
        if inc is None:
            inc = term
        else:
            inc ^= term
    np.cumsum(inc, axis=1, dtype=np.uint32, out=inc)
    inc += np.asarray(after, dtype=np.uint32)[:, None]
    return inc


def client_draws(seeds, count: int) -> np.ndarray:
    """``CRandom::uint32``: the first ``count`` draws of each seed's stream, (len(seeds), count) u4."""
    seeds = np.asarray(seeds, dtype=np.uint32).reshape(-1)
    if count <= 0:
        return np.zeros((seeds.size, 0), np.uint32)
    return _stream_rows(seeds, seeds, 0, int(count))


def _client_stream(seeds, after, first: int, counts) -> tuple[np.ndarray, np.ndarray]:
    """Draws ``first + 1 .. first + counts[k]`` of every stream k (its sum after ``first`` draws is
    ``after[k]``) as one flat u4 array, and where each stream's run starts in it. Rows of equal
    length when the runs are alike (fast), end to end otherwise (no padding)."""
    seeds = np.asarray(seeds, dtype=np.uint32)
    counts = np.asarray(counts, dtype=np.int64)
    longest = int(counts.max(initial=0))
    total = int(counts.sum())
    if longest == 0:
        return np.zeros(0, np.uint32), np.zeros(counts.size, np.int64)
    if counts.size * longest <= 2 * total + 4096:
        rows = _stream_rows(seeds, after, first, longest)
        return rows.reshape(-1), np.arange(counts.size, dtype=np.int64) * longest
    live = np.flatnonzero(counts)
    starts = np.cumsum(counts) - counts
    lane_of = np.repeat(live, counts[live])
    local = np.arange(total, dtype=np.int64) - starts[lane_of]
    inc = None
    for lane in range(4):
        term = _lane_ext(lane, longest)[_lane_offsets(seeds, lane, first)[lane_of] + local]
        inc = term if inc is None else inc ^ term
    cs = np.cumsum(inc, dtype=np.uint32)
    before = np.zeros(counts.size, dtype=np.uint32)
    before[live] = np.where(starts[live] > 0, cs[np.maximum(starts[live] - 1, 0)], 0)
    return (np.asarray(after, dtype=np.uint32) - before)[lane_of] + cs, starts


def client_reals(draws) -> np.ndarray:
    """``reals_``: a draw as a float32 in [-1, 1]: the float ``f`` in [1, 2) with the draw's low 23
    bits as mantissa, then ``2 - f`` where the draw's sign bit is set, else ``f - 2``."""
    u = np.asarray(draws, dtype=np.uint32)
    f = ((u & np.uint32(0x7FFFFF)) | np.uint32(0x3F800000)).view(np.float32)
    # f - 2 is exact and never 0, and 2 - f is exactly its negation: flip its sign bit
    return ((f - _F2).view(np.uint32) ^ (u & np.uint32(0x80000000))).view(np.float32)


def _mask32(cond: np.ndarray) -> np.ndarray:
    """A bool array as uint32 all-ones / zero, for :func:`_pick32`."""
    return np.negative(cond.view(np.uint8), dtype=np.uint8).astype(np.uint32) * np.uint32(0x01010101)


def _pick32(mask: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``where(mask, a, b)`` for float32 arrays by bits (np.where branches on random masks)."""
    av = np.asarray(a, dtype=np.float32).view(np.uint32)
    bv = np.asarray(b, dtype=np.float32).view(np.uint32)
    return (bv ^ ((av ^ bv) & mask)).view(np.float32)


_F0, _F05, _F1, _F2 = (np.float32(x) for x in (0.0, 0.5, 1.0, 2.0))
_PI_F = np.float32(math.pi)  # 3.1415927f, both decodes
_SCALE_112 = np.float32(0.1)  # [B]: scale = r * 0.1 + 1.0, yaw = r * pi
_SCALE_335 = np.float32(0.33)  # [F] SCALE_JITTER 0.33000001f: scale = r * 0.33 + 1
_CELL_HALF = np.float32(2.0833332538604736)  # [F] DAT_00a40474
_CELL_POS = np.float32(4.166666507720947)  # [F] CELL_SIZE_POS (and -CELL_STEP)
_CHUNK_F = np.float32(33.33333206176758)  # [F] CHUNK_SIZE
_MAP_HALF = np.float32(17066.666015625)  # [F] MAP_HALF_EXTENT
_CLIENT_DRAW_LIMIT = 1 << 27  # doodads one tile may ask for before the bake refuses (absurd Density)

# [F] a cell's four triangles: the two corners (chunk-local (x, y) steps of CELL_STEP) and the
# matching MCVT offsets from the cell's first vertex, for t = 0 west, 1 north, 2 south, 3 east.
_TRI_CORNERS = ((3, 0), (0, 1), (2, 3), (1, 2))
_TRI_VERTICES = ((17, 0), (0, 1), (18, 17), (1, 18))
_CELL_CORNER = ((0, 0), (0, -1), (-1, -1), (-1, 0))  # in units of CELL_STEP's magnitude


def is_335_routine(catalog) -> bool:
    """The 3.3.5 routine (weight bag, slope rule, rotation before scale) or the 1.12/2.4.3 one."""
    return getattr(catalog, "build", None) == "3.3.5" or bool(catalog.has_weights)


#: 3.3.5 clamps groundEffectDensity to 16 .. 256 ([F] CWorldParam, [C]); 1.12 frillDensity to 1 .. 256 [B]
PICKS_MIN_335 = 16


def client_picks(constants: PlacementConstants, catalog) -> int:
    """The cell picks per chunk the client takes for ``constants.client_picks``: 3.3.5 raises a
    value below 16 to 16, as its CVar does; 1.12/2.4.3 take 1 .. 256 as asked."""
    picks = int(constants.client_picks)
    return max(picks, PICKS_MIN_335) if is_335_routine(catalog) else picks


def client_picks_note(constants: PlacementConstants, catalog) -> str | None:
    """The line to show where ``-C client_picks`` asks 3.3.5 for fewer picks than its client takes."""
    asked = int(constants.client_picks)
    taken = client_picks(constants, catalog)
    if taken == asked:
        return None
    return (f"note: client_picks={asked} is below what the 3.3.5 client takes (groundEffectDensity is clamped to "
            f"{PICKS_MIN_335} .. 256): placing with {taken} picks a chunk")


def _exact_effect_rows(tile, catalog) -> np.ndarray:
    """(256, 4) i8: the table row whose ID is the layer's effectId, -1 past nLayers or when the
    table has no such row. As the clients look it up: no id is special."""
    ids = np.asarray(catalog.ids, dtype=np.uint32)
    eff = np.asarray(tile.layer_effect, dtype=np.uint32).reshape(256, 4)
    exists = np.arange(4)[None, :] < np.asarray(tile.n_layers, dtype=np.int64)[:, None]
    if ids.size == 0:
        return np.full((256, 4), -1, dtype=np.int64)
    order = None if bool((ids[1:] >= ids[:-1]).all()) else np.argsort(ids, kind="stable")
    sids = ids if order is None else ids[order]
    pos = np.minimum(np.searchsorted(sids, eff), sids.size - 1)
    hit = (sids[pos] == eff) & exists
    rows = pos if order is None else order[pos]
    return np.where(hit, rows, -1).astype(np.int64)


def _slot_doodads(catalog, rows) -> np.ndarray:
    """(len(rows), 4) DoodadID of catalogue ``rows`` as stored (u32 values); where a catalogue lacks
    them, 1 for a slot with a model and 0 for an empty one."""
    sd = getattr(catalog, "slot_doodad", None)
    if sd is not None:
        return np.asarray(sd)[rows].astype(np.int64).reshape(-1, 4) & 0xFFFFFFFF
    return np.where(np.asarray(catalog.slot_model)[rows] >= 0, 1, 0).astype(np.int64).reshape(-1, 4)


def _client_planes_335(heights, cells) -> tuple[np.ndarray, ...]:
    """[F] PrepareCell: the planes of the four triangles of ``cells`` (flat chunk*64 + r*8 + c),
    in the chunk's own space, as PlaneFromPoints(centre, corner B, corner A) builds them in float32.
    Returns nx, ny, nz, d, each (len(cells), 4) f4."""
    r = (cells >> 3) & 7
    c = cells & 7
    h = np.asarray(heights, dtype=np.float32).reshape(-1)
    i0 = (cells >> 6) * 145 + r * 17 + c
    step = -_CELL_POS
    base_x = r.astype(np.float32) * step
    base_y = c.astype(np.float32) * step
    mid = np.float32(-2.0833332538604736)  # CELL_MID
    ax_ = base_x + mid  # the centre: a in PlaneFromPoints
    ay_ = base_y + mid
    az_ = h[i0 + 9]
    out = [np.empty((cells.size, 4), np.float32) for _ in range(4)]
    for t, ((ca, cb), (va, vb)) in enumerate(zip(_TRI_CORNERS, _TRI_VERTICES)):
        # b = corner B, c = corner A
        bx = base_x + (np.float32(_CELL_CORNER[cb][0]) * _CELL_POS if _CELL_CORNER[cb][0] else _F0)
        by = base_y + (np.float32(_CELL_CORNER[cb][1]) * _CELL_POS if _CELL_CORNER[cb][1] else _F0)
        cx = base_x + (np.float32(_CELL_CORNER[ca][0]) * _CELL_POS if _CELL_CORNER[ca][0] else _F0)
        cy = base_y + (np.float32(_CELL_CORNER[ca][1]) * _CELL_POS if _CELL_CORNER[ca][1] else _F0)
        bz = h[i0 + vb]
        cz = h[i0 + va]
        bxa, bya, bza = bx - ax_, by - ay_, bz - az_
        cxa, cya, cza = cx - ax_, cy - ay_, cz - az_
        nx = bya * cza - bza * cya
        ny = bza * cxa - cza * bxa
        nz = bxa * cya - bya * cxa
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            inv = _F1 / np.sqrt(nx * nx + ny * ny + nz * nz)
            d = -(((ny * inv) * ay_ + (ax_ * nx) * inv) + (az_ * nz) * inv)
            out[0][:, t], out[1][:, t], out[2][:, t], out[3][:, t] = nx * inv, ny * inv, nz * inv, d
    return tuple(out)


def _segment_starts(key: np.ndarray, n: int) -> np.ndarray:
    """For sorted ``key`` in 0..n-1: index of each key's first element (n + 1 entries)."""
    return np.concatenate(([0], np.cumsum(np.bincount(key, minlength=n))))


@dataclass
class ClientPlacement:
    """What the real clients scatter, draw for draw (client.md; docs/bake.md): the 1.12/2.4.3
    routine [B] or the 3.3.5 one [F], by the catalogue's build."""

    constants: PlacementConstants = field(default_factory=PlacementConstants)
    name: str = "client"

    def place(self, tile, catalog, *, map_name: str) -> Instances:  # noqa: ARG002 (the seeds are global)
        k = self.constants
        wotlk = is_335_routine(catalog)
        picks = client_picks(k, catalog)
        seeds = client_chunk_seeds(tile)
        n_layers = np.asarray(tile.n_layers).astype(np.int64).reshape(256)
        rows = _exact_effect_rows(tile, catalog)  # (256, 4)
        if not (rows >= 0).any():  # no layer's effect has a row (an empty table among them): no grass
            return _empty(catalog.models)
        # the few table rows the tile's layers reach, renumbered 0 .. len(used) - 1
        used, urow = np.unique(np.maximum(rows, 0), return_inverse=True)
        urow = np.where(rows >= 0, urow.reshape(256, 4), -1)
        slot_model = np.asarray(catalog.slot_model)[used].astype(np.int64).reshape(-1, 4)
        slot_doodad = _slot_doodads(catalog, used)
        density = np.asarray(catalog.density)[used].astype(np.int64).reshape(-1) & 0xFFFFFFFF

        # the picks: column then row, three bits of a draw each, with repeats
        pick_draws = client_draws(seeds, 2 * picks)
        pc = (pick_draws[:, 0::2] & np.uint32(7)).astype(np.int64)
        pr = (pick_draws[:, 1::2] & np.uint32(7)).astype(np.int64)
        pcell = pr * 8 + pc + (np.arange(256) * 64)[:, None]  # flat chunk*64 + r*8 + c
        ok = np.broadcast_to((n_layers > 0)[:, None], pc.shape)
        if wotlk:
            # [F] DetailDoodadsReady: a non-zero DoodadID of any layer's effect that names no doodad
            # the client can load keeps the whole chunk waiting: it never scatters
            blocked_row = ((slot_doodad != 0) & (slot_model < 0)).any(axis=1)
            blocked = np.where(urow >= 0, blocked_row[np.maximum(urow, 0)], False).any(axis=1)
            ok = ok & ~blocked[:, None]
        if not wotlk or k.client_no_effect_335:
            ok = ok & ~np.asarray(tile.no_effect_doodad, dtype=bool).reshape(-1)[pcell]
        ok = ok & ~hole_cells(np.asarray(tile.holes).reshape(256)).reshape(-1)[pcell]
        layer = np.asarray(tile.doodad_mapping).astype(np.int64).reshape(-1)[pcell]
        ok &= layer < n_layers[:, None]
        row = np.take_along_axis(urow, np.minimum(layer, 3), axis=1)
        ok &= row >= 0
        row = np.maximum(row, 0)
        if not wotlk:  # [B]: an effect none of whose slots names a doodad is no effect at all
            ok &= (slot_model >= 0).any(axis=1)[row]
        d = density[row]
        count = np.where(ok, np.where(d == 0, 8, d), 0).reshape(-1)
        total = int(count.sum())
        if total > _CLIENT_DRAW_LIMIT:
            raise UsageError(f"client placement: this tile asks for {total} doodads (GroundEffectTexture Density "
                             f"up to {int(d[ok].max())}); wowgrass stops at {_CLIENT_DRAW_LIMIT}")
        sel = np.flatnonzero(count)
        if sel.size == 0:
            return _empty(catalog.models)

        # per pick that scatters (p), then per doodad it visits, in the client's order
        cnt = count[sel]
        row_p = row.reshape(-1)[sel]
        cell_p = pcell.reshape(-1)[sel]
        chunk_p = cell_p >> 6
        start_p = np.cumsum(cnt) - cnt  # its first doodad
        chunk_first = np.concatenate(([0], np.cumsum(np.bincount(chunk_p, weights=cnt, minlength=256)))).astype(np.int64)
        of = np.repeat(np.arange(sel.size), cnt)  # the pick of each doodad
        every = np.arange(total, dtype=np.int64)
        turn = every - (start_p - sel % picks)[of]  # n + the pick's index: the slot key
        if wotlk:
            bags = weight_bags(catalog, used) + 4 * np.arange(used.size)[:, None]  # into the flat slot tables
            slot = bags.reshape(-1)[(row_p * 16)[of] + (turn & 15)]
            kind = slot_doodad.reshape(-1)[slot] != 0
            model = slot_model.reshape(-1)[slot]
            # the slope rule needs the point; first what is certain without it
            mark = np.zeros(256 * 64, dtype=bool)
            mark[cell_p] = True
            ucells = np.flatnonzero(mark)
            dense = np.zeros(256 * 64, dtype=np.int64)
            dense[ucells] = np.arange(ucells.size)
            plane_p = dense[cell_p]
            planes = _client_planes_335(np.asarray(tile.heights).reshape(256, 145), ucells)
            nz = planes[2]
            tri_ok = ~(nz < np.float32(k.client_min_normal_z)) & (nz != _F0)
            n_ok = tri_ok.sum(axis=1)[plane_p][of]
            placed = kind & (n_ok == 4)
            unsure = kind & (n_ok > 0) & (n_ok < 4)
            possible = placed | unsure
        else:
            model = slot_model[row_p].reshape(-1)[of * 4 + (turn & 3)]
            placed = possible = model >= 0
            unsure = None

        # every doodad takes two draws (its point), a placed one two more (1.12: scale, yaw;
        # 3.3.5: rotation, scale). Only a 3.3.5 point on a cell of mixed slope is not known here.
        chunk_cnt = np.diff(chunk_first)
        cs = np.concatenate(([0], np.cumsum(possible)))
        need = 2 * (chunk_cnt + (cs[chunk_first[1:]] - cs[chunk_first[:-1]]))
        stream, stream_start = _client_stream(seeds, pick_draws[:, -1], 2 * picks, need)
        # where each doodad's draws start if none before it in its chunk were placed
        first = 2 * every + (stream_start - 2 * chunk_first[:-1])[chunk_p][of]
        if unsure is not None and unsure.any():
            placed = self._settle_slopes(placed, unsure, chunk_p[of], first, chunk_first, stream, tri_ok,
                                         plane_p[of])
        idx = np.flatnonzero(placed)
        cs = np.cumsum(placed)
        chunk = chunk_p[of[idx]]
        before = (cs[idx] - 1) - np.concatenate(([0], cs))[chunk_first[:-1]][chunk]
        at = first[idx] + 2 * before
        ja, jb, e1, e2 = (client_reals(stream[at + i]) for i in range(4))
        cell = cell_p[of[idx]] & 63
        if wotlk:
            pos = self._positions_335(tile, seeds, chunk, cell, ja, jb, planes, plane_p[of[idx]])
            yaw = (e1 + _F1) * _PI_F
            scale = e2 * _SCALE_335 + _F1
        else:
            pos = self._positions_112(tile, chunk, cell, ja, jb)
            scale = e1 * _SCALE_112 + _F1
            yaw = e2 * _PI_F
        return Instances(
            model=model[idx].astype(np.int32),
            pos=pos,
            yaw=yaw,
            scale=scale,
            chunk=chunk.astype(np.uint16),
            cell=cell.astype(np.uint8),
            models=list(catalog.models),
        )

    @staticmethod
    def _settle_slopes(placed, unsure, chunk, first, chunk_first, stream, tri_ok, plane):
        """3.3.5 points on cells whose triangles differ in the slope rule: where each one's draws
        start depends on how many before it in its chunk were placed, so walk them in order, all
        chunks at once."""
        placed = placed.copy()
        certain = placed & ~unsure
        cs = np.concatenate(([0], np.cumsum(certain)))
        u = np.flatnonzero(unsure)  # by chunk, then in order within it
        uc = chunk[u]
        det_before = cs[u] - cs[chunk_first[:-1]][uc]
        rank = np.arange(u.size) - _segment_starts(uc, 256)[uc]
        order = np.argsort(rank, kind="stable")
        bounds = _segment_starts(rank[order], int(rank.max()) + 1)
        at0 = first[u] + 2 * det_before
        plane_u = plane[u]
        ok_u = np.zeros(u.size, dtype=bool)
        done = np.zeros(256, dtype=np.int64)  # unsure doodads placed so far, per chunk
        for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            g = order[lo:hi]  # the k-th unsure doodad of every chunk that has one
            gc = uc[g]
            at = at0[g] + 2 * done[gc]
            ja = client_reals(stream[at])
            jb = client_reals(stream[at + 1])
            ok = tri_ok[plane_u[g], _triangle_335(ja * _CELL_HALF + _CELL_HALF, jb * _CELL_HALF + _CELL_HALF)]
            ok_u[g] = ok
            done[gc] += ok
        placed[u] = ok_u
        return placed

    @staticmethod
    def _positions_335(tile, seeds, chunk, cell, ja, jb, planes, plane):
        """[F]: the point in the chunk's own space on its triangle's plane, then the chunk origin
        the client draws it at (from the global chunk indices), all float32."""
        r = (cell >> 3).astype(np.float32)
        c = (cell & 7).astype(np.float32)
        ox = ja * _CELL_HALF + _CELL_HALF
        oy = jb * _CELL_HALF + _CELL_HALF
        at = plane * 4 + _triangle_335(ox, oy)
        x = -oy - r * _CELL_POS
        y = -ox - c * _CELL_POS
        nx, ny, nz, dd = (p.reshape(-1)[at] for p in planes)
        z = -(((y * ny + nx * x) + dd) / nz)
        gx = (seeds & np.uint32(0xFFFF)).astype(np.float32)
        gy = (seeds >> np.uint32(16)).astype(np.float32)
        origin_x = (-(_CHUNK_F * gy) + _MAP_HALF)[chunk]
        origin_y = (-(gx * _CHUNK_F) + _MAP_HALF)[chunk]
        base_z = np.ascontiguousarray(np.asarray(tile.positions, dtype=np.float32).reshape(256, 3)[:, 2])[chunk]
        return np.stack([origin_x + x, origin_y + y, base_z + z], axis=1)

    @staticmethod
    def _positions_112(tile, chunk, cell, rx, ry):
        """[B]: ``u = (rx + 1) / 2`` east, ``v = (ry + 1) / 2`` south; the height on the cell's fan
        as the port's fan_point weighs it (float32 barycentric weights of the wedge the point is in,
        over the vertices' absolute heights); X and Y the exact ``pos - (cell + f) * UNIT``."""
        fx = (rx + _F1) * _F05
        fy = (ry + _F1) * _F05
        pos = np.asarray(tile.positions, dtype=np.float32).reshape(256, 3)
        h = np.asarray(tile.heights, dtype=np.float32).reshape(-1)
        r = cell >> 3
        c = cell & 7
        i0 = chunk * 145 + r * 17 + c
        wz = np.ascontiguousarray(pos[:, 2])[chunk]
        tl, tr, bl, br, ctr = (wz + h[i0 + o] for o in (0, 1, 17, 18, 9))
        sum_ = fx + fy
        low = _mask32(sum_ <= _F1)
        north = _mask32(fy <= fx)  # in the low half; west otherwise
        south = _mask32(fy >= fx)  # in the high half; east otherwise

        def wedge(n, w, s, e):  # north (centre, TL, TR), west (BL, TL), south (BR, BL), east (TR, BR)
            return _pick32(low, _pick32(north, n, w), _pick32(south, s, e))

        rest = (_F1 - fx) - fy  # 1 - fx - fy
        over = sum_ - _F1  # fx + fy - 1
        wc = _F2 * wedge(fy, fx, _F1 - fy, _F1 - fx)
        wa = wedge(rest, fy - fx, over, fx - fy)
        wb = wedge(fx - fy, rest, fy - fx, over)
        z = (wc * ctr + wa * wedge(tl, bl, br, tr)) + wb * wedge(tr, tl, bl, br)
        px = pos[:, 0].astype(np.float64)[chunk]
        py = pos[:, 1].astype(np.float64)[chunk]
        x = (px - (r + fy.astype(np.float64)) * UNIT).astype(np.float32)
        y = (py - (c + fx.astype(np.float64)) * UNIT).astype(np.float32)
        return np.stack([x, y, z], axis=1)


def _triangle_335(ox, oy) -> np.ndarray:
    """[F]: which triangle (0 west, 1 north, 2 south, 3 east) holds the cell offsets (ox east, oy
    south), by the signs the decode tests in float32 (x = -oy, y = -ox)."""
    x = -oy
    y = -ox
    return ((y - x) < _F0).view(np.int8) + 2 * (((-y - _CELL_POS) - x) > _F0).view(np.int8)

STRATEGIES = {"coverage": CoveragePlacement, "client": ClientPlacement}
#: old names still accepted (``--placement seed`` before the strategies were named for what they do)
STRATEGY_ALIASES = {"seed": "coverage"}


def make_strategy(name: str, constants: PlacementConstants | None = None) -> PlacementStrategy:
    """``"coverage"`` or ``"client"`` (or an alias) with ``constants`` (the defaults when None)."""
    try:
        cls = STRATEGIES[STRATEGY_ALIASES.get(name, name)]
    except KeyError:
        raise UsageError(f"unknown placement {name!r}; choose one of {', '.join(STRATEGIES)}") from None
    return cls(constants or PlacementConstants())
