"""Ground-effect placement: one ADT tile's arrays + the GroundEffectCatalog -> grass instances.

Pure numpy: arrays in, arrays out; no I/O, no GL. Two strategies share one interface
(:class:`PlacementStrategy`): ``place(tile, catalog, map_name=...) -> Instances``.

* :class:`CoveragePlacement` (``--placement coverage``, the default) is the grass reference's
  "M2 instanced path":
  every 8x8 cell of every MCNK is visited once; its MCAL coverage decides the clump count with
  ``clumps = min(max(1, ceil(coverage/255 * min(density, 24))), 12)``.
* :class:`ClientPlacement` (``--placement client``) follows what the 1.12 and 3.3.5 clients do
  (formats.md §6): random cell picks *with repetition* per chunk, the pre-baked 2-bit
  doodadMapping instead of MCAL, ``Density`` doodads per pick (0 means 8), round-robin slots
  (1.12/2.4.3) or the 3.3.5 16-slot weight bag, and the 3.3.5 slope limit (normal z >= 0.4).

Builds: 1.12, 2.4.3 and 3.3.5 (the catalogue says which; 1.12/2.4.3 rows carry no weights).

Decisions the grass reference leaves open (also in docs/bake.md), each a named constant where it is a number:

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

Random numbers: every draw is ``splitmix64(key[chunk] + (counter + 1) * GAMMA)``, a SplitMix64
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

from wowgrass.effects import NO_EFFECT_IDS
from wowgrass.errors import UsageError
from wowgrass.formats.adt import UNIT_SIZE as UNIT

# Bump when a code change moves any instance: it is part of every bundle's provenance.
PLACEMENT_VERSION = 1

CELLS = 64  # 8x8 cells per chunk
TEXELS_PER_CELL = 64  # 8x8 alpha texels per cell

# Random streams (low 4 bits of the counter).
STREAM_JITTER = 0  # high 32 bits -> u (east), low 32 bits -> v (south)
STREAM_CHOICE = 1  # high 16 bits -> yaw, bits 32..47 -> scale, low 32 bits -> slot
STREAM_PICK = 2  # client: bits 0..2 -> column, 3..5 -> row

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
    "client_picks": (0, (1 << 20) - 1, "cell picks per chunk"),
    "client_zero_density": (0, (1 << 20) - 1, "doodads per pick"),
    "client_density_max": (0, (1 << 20) - 1, "doodads per pick"),
    "client_min_normal_z": (-1.0, 1.0, "the z of a unit normal"),
    "client_scale_jitter_112": (0.0, 0.99, "scale 1 + r * jitter must stay above 0"),
    "client_scale_jitter_335": (0.0, 0.99, "scale 1 + r * jitter must stay above 0"),
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
    # --- client strategy (formats.md §6) ---
    client_picks: int = 16  # frillDensity / groundEffectDensity default: cell picks per chunk
    client_zero_density: int = 8  # Density 0 means 8 doodads per pick
    client_density_max: int = 24  # wiki: Density above 24 acts as 24
    client_min_normal_z: float = 0.4  # 3.3.5 MIN_NORMAL_Z slope limit (~66 degrees)
    client_scale_jitter_112: float = 0.1  # 1.12/2.4.3: scale = 1 + r*0.1, r in [-1, 1)
    client_scale_jitter_335: float = 0.33  # 3.3.5: scale = 1 + r*0.33
    # --- both ---
    seed: int = 0  # mixed into every chunk key; change it for a different but stable layout

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

    ``model`` indexes ``models`` (the catalogue's model list); ``yaw`` is radians in [0, 2*pi);
    ``chunk`` is the MCNK index (IndexY*16+IndexX), ``cell`` is r*8+c inside it.
    """

    model: np.ndarray  # (n,) i4
    pos: np.ndarray  # (n, 3) f4 world X (north), Y (west), Z (up)
    yaw: np.ndarray  # (n,) f4
    scale: np.ndarray  # (n,) f4
    chunk: np.ndarray  # (n,) u2
    cell: np.ndarray  # (n,) u1
    models: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return int(self.model.shape[0])

    def cell_counts(self) -> np.ndarray:
        """Instances per cell, (256, 8, 8) u2 (saturating at 65535)."""
        flat = self.chunk.astype(np.int64) * CELLS + self.cell
        counts = np.bincount(flat, minlength=256 * CELLS)
        return np.minimum(counts, 65535).astype(np.uint16).reshape(256, 8, 8)

    def model_counts(self) -> np.ndarray:
        return np.bincount(self.model, minlength=len(self.models)).astype(np.int64)


# ----------------------------------------------------------------------------- random numbers


def _mix64(z: np.ndarray) -> np.ndarray:
    """SplitMix64's output function (Stafford variant 13) on uint64 arrays."""
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


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


_U32 = np.uint64(0xFFFFFFFF)
_INV32 = 1.0 / 4294967296.0


def split_jitter(bits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(u, v) in [0, 1) from one 64-bit draw (high and low 32 bits)."""
    u = (bits >> np.uint64(32)).astype(np.float64) * _INV32
    v = (bits & _U32).astype(np.float64) * _INV32
    return u, v


def split_choice(bits: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(yaw16 in 0..65535, signed r in [-1, 1), slot uniform in [0, 1)) from one 64-bit draw."""
    yaw16 = (bits >> np.uint64(48)).astype(np.int64)
    r = ((bits >> np.uint64(32)) & np.uint64(0xFFFF)).astype(np.float64) / 32768.0 - 1.0
    s = (bits & _U32).astype(np.float64) * _INV32
    return yaw16, r, s


def yaw_radians(yaw16: np.ndarray) -> np.ndarray:
    """A 16-bit yaw as radians in [0, 2*pi); round-trips through INSTANCE_DTYPE exactly."""
    return (np.asarray(yaw16, dtype=np.float64) * (_TWO_PI / 65536.0)).astype(np.float32)


# ----------------------------------------------------------------------------- terrain


def fan_planes(heights: np.ndarray, cells: np.ndarray | None = None):
    """The planes of the 4 fan triangles of ``cells``: (h_centre (k,), gx, gy (k, 4)).

    ``heights`` (256, 145) relative MCVT as float64; ``cells`` flat indices ``chunk*64 + r*8 + c``
    (all 16,384 when None). Triangle 0 is (centre, TL, TR) to the north, 1 (centre, BL, BR)
    south, 2 (centre, TL, BL) west, 3 (centre, TR, BR) east. On triangle t the height at cell
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
    gx = np.stack([h_tr - h_tl, h_br - h_bl, 2.0 * h_c - h_tl - h_bl, h_tr + h_br - 2.0 * h_c], axis=1)
    gy = np.stack([2.0 * h_c - h_tl - h_tr, h_bl + h_br - 2.0 * h_c, h_bl - h_tl, h_br - h_tr], axis=1)
    return h_c, gx, gy


def fan_triangle(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Which fan triangle (0 N, 1 S, 2 W, 3 E) holds cell fractions (u east, v south)."""
    dx = u - 0.5
    dy = v - 0.5
    vertical = np.abs(dy) >= np.abs(dx)
    return np.where(vertical, np.where(dy <= 0, 0, 1), np.where(dx <= 0, 2, 3))


def fan_surface(planes, plane, u, v, *, normals: bool = False):
    """Height (relative to the chunk base) and, optionally, unit-normal z on the cell's fan.

    ``plane`` indexes the cells ``planes`` were made for (:func:`fan_planes`).
    """
    h_c, gx, gy = planes
    k = plane * 4 + fan_triangle(u, v)
    px = gx.reshape(-1)[k]
    py = gy.reshape(-1)[k]
    z = h_c[plane] + px * (u - 0.5) + py * (v - 0.5)
    if not normals:
        return z, None
    sx = px / UNIT
    sy = py / UNIT
    return z, 1.0 / np.sqrt(1.0 + sx * sx + sy * sy)


def _place_on_fan(tile_pos, planes, plane, chunk, r, c, u, v, *, normals=False):
    """World float32 positions of cell-local (u, v); Z sampled at the stored float32 X/Y."""
    base = tile_pos[chunk]
    x = (base[:, 0] - (r + v) * UNIT).astype(np.float32)
    y = (base[:, 1] - (c + u) * UNIT).astype(np.float32)
    # Re-derive the cell fractions from the rounded coordinates so Z is the terrain height
    # exactly under the stored position (float32 X/Y near 17000 yd move by up to ~1e-3).
    v2 = np.clip((base[:, 0] - x.astype(np.float64)) / UNIT - r, 0.0, 1.0)
    u2 = np.clip((base[:, 1] - y.astype(np.float64)) / UNIT - c, 0.0, 1.0)
    h, nz = fan_surface(planes, plane, u2, v2, normals=normals)
    z = (base[:, 2] + h).astype(np.float32)
    return np.stack([x, y, z], axis=1), nz


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
    """Sum an axis of length 8 by slice additions (much faster than a strided reduce)."""
    a = np.moveaxis(a, axis, 0)
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]))


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

    Deal ``weight[k]`` copies of slot k at stride 13 (positions ``13*j & 15``), then fill the
    remaining ``16 - sum(w)`` deals with slot ``j & 3``; later deals overwrite earlier ones.
    """
    w = np.maximum(np.asarray(catalog.slot_weight)[rows], 0).astype(np.int64)
    cum = np.cumsum(w, axis=1)
    total = cum[:, 3]
    deals = int(max(16, total.max(initial=0)))
    bag = np.zeros((len(rows), 16), dtype=np.int64)
    for j in range(deals):
        weighted = j < total
        slot = np.where(weighted, (cum <= j).sum(axis=1), j & 3)
        live = weighted | (j < 16)
        pos = (13 * j) & 15
        bag[live, pos] = slot[live]
    return bag


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
        cells = np.nonzero(flat)[0]
        if cells.size == 0:
            return _empty(catalog.models)
        n = flat[cells]
        inst_cell = np.repeat(cells, n)
        total = int(n.sum())
        starts = np.cumsum(n) - n
        clump = np.arange(total, dtype=np.int64) - np.repeat(starts, n)
        chunk = inst_cell >> 6
        cell = inst_cell & 63
        r = cell >> 3
        c = cell & 7
        keys = _tile_keys(tile, map_name, k)[chunk]
        u, v = split_jitter(draw(keys, counters(cell, clump, STREAM_JITTER)))
        yaw16, _r, s = split_choice(draw(keys, counters(cell, clump, STREAM_CHOICE)))
        # weighted choice over the few rows in use: slot = first k with target < cum[k]
        cell_row = eff_row.reshape(-1)[cells]
        urows = np.unique(cell_row)
        cum = np.cumsum(slot_probabilities(catalog, urows), axis=1)
        inv = np.repeat(np.searchsorted(urows, cell_row), n)
        target = s * cum[inv, 3]
        slot = (cum[inv, 0] <= target).astype(np.int64)
        slot += cum[inv, 1] <= target
        slot += cum[inv, 2] <= target
        model = np.asarray(catalog.slot_model)[urows[inv], slot].astype(np.int32)
        pos, _nz = _place_on_fan(
            np.asarray(tile.positions, dtype=np.float64),
            fan_planes(np.asarray(tile.heights, dtype=np.float64), cells),
            np.repeat(np.arange(cells.size), n),
            chunk,
            r,
            c,
            u,
            v,
        )
        return Instances(
            model=model,
            pos=pos,
            yaw=yaw_radians(yaw16),
            scale=np.full(total, k.coverage_scale, dtype=np.float32),
            chunk=chunk.astype(np.uint16),
            cell=cell.astype(np.uint8),
            models=list(catalog.models),
        )


@dataclass
class ClientPlacement:
    """What the 1.12 / 3.3.5 clients do (formats.md §6), with wowgrass's own random stream."""

    constants: PlacementConstants = field(default_factory=PlacementConstants)
    name: str = "client"

    def place(self, tile, catalog, *, map_name: str) -> Instances:
        k = self.constants
        bag_mode = bool(catalog.has_weights)  # 3.3.5: weight bag + slope limit
        picks = int(k.client_picks)
        keys_all = _tile_keys(tile, map_name, k)
        # picks: (256, P) random cells, with repetition
        pick_idx = np.arange(picks, dtype=np.int64)
        pbits = draw(keys_all[:, None], counters(pick_idx[None, :], 0, STREAM_PICK))
        pc = (pbits & np.uint64(7)).astype(np.int64)
        pr = ((pbits >> np.uint64(3)) & np.uint64(7)).astype(np.int64)
        chunk_p = np.broadcast_to(np.arange(256)[:, None], pc.shape)
        n_layers = np.asarray(tile.n_layers).astype(np.int64)
        ok = n_layers[chunk_p] > 0
        ok &= ~np.asarray(tile.no_effect_doodad, dtype=bool).reshape(256, 8, 8)[chunk_p, pr, pc]
        ok &= ~hole_cells(tile.holes)[chunk_p, pr, pc]
        layer = np.asarray(tile.doodad_mapping).astype(np.int64).reshape(256, 8, 8)[chunk_p, pr, pc]
        ok &= layer < n_layers[chunk_p]
        rows = resolve_effects(tile, catalog)
        row = np.where(ok, rows[chunk_p, np.minimum(layer, 3)], -1)
        ok &= row >= 0
        density = np.asarray(catalog.density).astype(np.int64)
        d = density[np.where(ok, row, 0)]
        d = np.where(d <= 0, k.client_zero_density, np.minimum(d, k.client_density_max))
        count = np.where(ok, d, 0).reshape(-1)
        sel = np.nonzero(count)[0]
        if sel.size == 0:
            return _empty(catalog.models)
        cnt = count[sel]
        total = int(cnt.sum())
        src = np.repeat(sel, cnt)  # flat (chunk, pick)
        starts = np.cumsum(cnt) - cnt
        n = np.arange(total, dtype=np.int64) - np.repeat(starts, cnt)
        chunk = src // picks
        pick = src % picks
        r = pr.reshape(-1)[src]
        c = pc.reshape(-1)[src]
        irow = row.reshape(-1)[src]
        slot_model = np.asarray(catalog.slot_model)
        if bag_mode:
            sel_rows = row.reshape(-1)[sel]  # per pick, then repeated: no per-instance sort
            urows = np.unique(sel_rows)
            bag_of = np.repeat(np.searchsorted(urows, sel_rows), cnt)
            slot = weight_bags(catalog, urows)[bag_of, (n + pick) & 15]
        else:
            slot = (n + pick) & 3
        model = slot_model[irow, slot]
        keys = keys_all[chunk]
        u, v = split_jitter(draw(keys, counters(pick, n, STREAM_JITTER)))
        yaw16, rs, _s = split_choice(draw(keys, counters(pick, n, STREAM_CHOICE)))
        sel_cells = (sel // picks) * 64 + pr.reshape(-1)[sel] * 8 + pc.reshape(-1)[sel]
        pos, nz = _place_on_fan(
            np.asarray(tile.positions, dtype=np.float64),
            fan_planes(np.asarray(tile.heights, dtype=np.float64), sel_cells),
            np.repeat(np.arange(sel.size), cnt),
            chunk,
            r,
            c,
            u,
            v,
            normals=bag_mode,
        )
        keep = model >= 0
        if bag_mode:
            keep &= nz >= k.client_min_normal_z
        jitter = k.client_scale_jitter_335 if bag_mode else k.client_scale_jitter_112
        scale = (1.0 + rs * jitter).astype(np.float32)
        return Instances(
            model=model[keep].astype(np.int32),
            pos=pos[keep],
            yaw=yaw_radians(yaw16[keep]),
            scale=scale[keep],
            chunk=chunk[keep].astype(np.uint16),
            cell=(r * 8 + c)[keep].astype(np.uint8),
            models=list(catalog.models),
        )


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
