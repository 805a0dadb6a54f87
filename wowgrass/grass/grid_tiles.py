"""The camera-grid grass path's per-tile data: control texture and height atlas (pure numpy, no GL).

The grass reference's second path draws a camera-centred grid of ``GRID_SIDE`` x ``GRID_SIDE``
slots ``SLOT_SPACING`` units apart; a slot's world cell is ``floor(camera / spacing) + offset``,
so every slot belongs to one integer cell of a global lattice ``(i, j) = floor((X, Y) / 2.5)``
and its blade stands at ``(cell + jitter * 0.72) * 2.5``. This module says what grows in each
lattice cell.

Which ADT cell owns a lattice cell: the one holding its *anchor* ``(cell + JITTER / 2) * 2.5``,
the centre of the square its jittered blades can reach. An ADT cell is 4.1667 units, so it owns
1 or 2 lattice cells per axis (1, 2 or 4 in all, 2.78 on average) and a blade lies at most 0.9
units outside its ADT cell. Anchors never come closer than 0.067 units to an ADT cell edge (they
sit at 2.5 i + 0.9, edges at multiples of 25/6), so float32 in the shader and float64 here give
the same owner.

**The control texture** (one per tile, (A, B) lattice cells, A, B <= ``CONTROL_SIDE``) encodes the
instanced path's bundle of the same tile: for every ADT cell, the bundle's number of instances of
each model, dealt round-robin over the lattice cells that ADT cell owns. A texel holds up to four
``(model, count)`` pairs (an ADT cell grows the doodads of one ground-effect row: at most four
models), one per RGBA32UI channel as ``model | count << 16``. A grid slot draws ``count`` blades
of a model, as ``count`` *layers* of the grid (layer ``g`` of a slot is its ``g``-th blade). So

    the grid path draws, per ADT cell and model, exactly the bundle's instance count, and counted
    by the ADT cell (hence chunk) of each blade's slot anchor, its per-chunk per-model counts equal
    the bundle's counted by the cell each instance lies in (:func:`instance_cells`: up to float32
    rounding over a cell edge).

Every placement rule (coverage and road thresholds, noEffectDoodad masks, holes, the density
formula, either strategy) reaches the grid through the bundle, so no rule is written twice.

**The height atlas** (257 x 257 float32 per tile) holds the tile's absolute MCVT heights: the
129 x 129 outer vertices at even texels ``(2R, 2C)`` and the 128 x 128 cell centres at odd texels
``(2r+1, 2c+1)``; the vertex shader evaluates the same 4-triangle fan as the placement
(:func:`wowgrass.grass.placement.fan_surface`), so a blade's root sits on the terrain.

Per-tile files (``.wgc``) are cached beside the bundles, keyed by the bundle's provenance key and
:data:`GRID_VERSION`, with the bundle's header conventions (CRC-32 checksum, sha256 key, atomic
write); see docs/grid.md.
"""

from __future__ import annotations

import json
import logging
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from wowgrass.grass.bundle import ALIGN, canonical_json, file_checksum, provenance_key
from wowgrass.errors import ChecksumError, FormatError, StaleBundleError, TruncatedError
from wowgrass.fileio import write_atomic
from wowgrass.formats.adt import CHUNK_SIZE, TILE_SIZE, UNIT_SIZE, VERTEX_ROWCOL
from wowgrass.game.coords import corner_steps, map_steps, tile_offset, tile_origin

# The reference's grid (r_wowmap_shader.c): odd side keeps one slot centred on the camera cell.
GRID_SIDE = 181
GRID_HALF = (GRID_SIDE - 1) // 2
SLOT_SPACING = 2.5
JITTER = 0.72  # a blade stands at (cell + hash * JITTER) * SLOT_SPACING
ANCHOR = JITTER / 2  # the owner of a lattice cell is the ADT cell holding (cell + ANCHOR) * spacing
CONTROL_SIDE = 214  # lattice cells per tile and axis: ceil(533.33 / 2.5) = 214 at most
ATLAS_SIDE = 257  # 2 * 128 + 1 height texels per tile and axis
CELLS_PER_TILE = 128  # ADT cells per tile and axis
MAX_CHANNELS = 4  # (model, count) pairs per lattice cell
GRID_VERSION = 2  # bump when the encoding changes: part of every control file's key

MAGIC = b"WGGC"
SUFFIX = ".wgc"
HEADER_SPEC = (
    ("magic", "4s"),
    ("version", "H"),
    ("header_size", "H"),
    ("tile_col", "h"),
    ("tile_row", "h"),
    ("slot_i0", "i"),
    ("slot_j0", "i"),
    ("rows", "H"),  # A: lattice cells along X
    ("cols", "H"),  # B: lattice cells along Y
    ("model_count", "I"),
    ("strings_offset", "I"),
    ("strings_size", "I"),
    ("provenance_offset", "I"),
    ("provenance_size", "I"),
    ("control_offset", "I"),
    ("heights_offset", "I"),
    ("file_size", "Q"),
    ("key", "32s"),
    ("reserved", "32s"),
    ("checksum", "I"),  # crc32 of the file without these 4 bytes (bundle.file_checksum)
)
_HEADER = struct.Struct("<" + "".join(code for _, code in HEADER_SPEC))
HEADER_SIZE = 128
assert _HEADER.size == HEADER_SIZE
KEY_OFFSET = 60

log = logging.getLogger(__name__)


# ----------------------------------------------------------------------------- lattice geometry


def slot_range(tile_lo: float, tile_hi: float) -> tuple[int, int]:
    """First and one-past-last lattice index whose anchor lies in (tile_lo, tile_hi] (world units)."""
    lo = int(np.floor(tile_lo / SLOT_SPACING - ANCHOR)) - 1
    idx = np.arange(lo, lo + CONTROL_SIDE + 3)
    a = (idx + ANCHOR) * SLOT_SPACING
    inside = idx[(a > tile_lo) & (a <= tile_hi)]
    return int(inside[0]), int(inside[-1]) + 1


def tile_slots(col: int, row: int) -> tuple[int, int, int, int]:
    """(i0, i1, j0, j1): the lattice cells of tile (col, row), X index i in [i0, i1), Y index j in [j0, j1)."""
    x_hi, y_hi = tile_origin(col, row)
    i0, i1 = slot_range(x_hi - TILE_SIZE, x_hi)
    j0, j1 = slot_range(y_hi - TILE_SIZE, y_hi)
    return i0, i1, j0, j1


def owner_cells(i, j) -> tuple[np.ndarray, np.ndarray]:
    """Global ADT cell (row from X, column from Y; 0..8191) owning lattice cells (i, j)."""
    ax = (np.asarray(i, np.float64) + ANCHOR) * SLOT_SPACING
    ay = (np.asarray(j, np.float64) + ANCHOR) * SLOT_SPACING
    cols, rows = map_steps(ax, ay, UNIT_SIZE)
    return rows, cols


EDGE_EPS = 0.01  # units: float32 rounding of a placed position (<= 0.002 near 17,066) can cross a cell edge


def instance_cells(col: int, row: int, grass: dict, models) -> list[np.ndarray]:
    """Per model of ``models``, the tile-local ADT cell (``r * 128 + c``, -1 outside the tile) each
    instance counts for: the cell holding its position, except that an instance within
    :data:`EDGE_EPS` of an edge, alone of its model in its cell, counts for the neighbour across that
    edge when the neighbour grows its model (the placement put it there; rounding its position to
    float32 moved it over the edge)."""
    eps = EDGE_EPS / UNIT_SIZE
    out = []
    for m in models:
        pos = np.asarray(grass[m]["pos"], np.float64).reshape(-1, 3)
        east, south = tile_offset(pos[:, 0], pos[:, 1], col, row)
        fr, fc = south / UNIT_SIZE, east / UNIT_SIZE
        r, c = np.floor(fr).astype(np.int64), np.floor(fc).astype(np.int64)
        inside = (r >= 0) & (r < CELLS_PER_TILE) & (c >= 0) & (c < CELLS_PER_TILE)
        ar = np.clip(np.where(fr - r < eps, r - 1, np.where(fr - r > 1 - eps, r + 1, r)), 0, CELLS_PER_TILE - 1)
        ac = np.clip(np.where(fc - c < eps, c - 1, np.where(fc - c > 1 - eps, c + 1, c)), 0, CELLS_PER_TILE - 1)
        cell = np.where(inside, r * CELLS_PER_TILE + c, -1)
        alt = np.where(inside, ar * CELLS_PER_TILE + ac, -1)
        n = np.bincount(cell[inside], minlength=CELLS_PER_TILE * CELLS_PER_TILE)
        move = inside & (alt != cell)
        move[move] = (n[cell[move]] == 1) & (n[alt[move]] >= 1)
        out.append(np.where(move, alt, cell))
    return out


def chunk_of_cells(gr, gc) -> np.ndarray:
    """MCNK index (IndexY * 16 + IndexX) inside its tile of global ADT cells."""
    return ((np.asarray(gr) % CELLS_PER_TILE) // 8) * 16 + (np.asarray(gc) % CELLS_PER_TILE) // 8


# ----------------------------------------------------------------------------- the per-tile data


@dataclass
class GridTile:
    """One tile's control texture and height atlas, with the model table its control indexes."""

    col: int
    row: int
    slot_i0: int
    slot_j0: int
    control: np.ndarray  # (A, B, 4) u4: model | count << 16 per channel (count 0: empty)
    heights: np.ndarray  # (257, 257) f4 absolute heights
    models: list[str]
    provenance: dict = field(default_factory=dict)
    key: str = ""
    dropped: int = 0  # instances of a fifth (or later) model in one ADT cell, left out (build only)

    @property
    def counts(self) -> np.ndarray:
        return (self.control >> 16).astype(np.int64)

    @property
    def model_index(self) -> np.ndarray:
        return (self.control & 0xFFFF).astype(np.int64)

    def model_layers(self) -> np.ndarray:
        """Per model of :attr:`models`: the most blades of it in one lattice cell (grid layers to draw)."""
        out = np.zeros(len(self.models), np.int64)
        c, m = self.counts.reshape(-1), self.model_index.reshape(-1)
        live = c > 0
        np.maximum.at(out, m[live], c[live])
        return out

    def model_totals(self) -> np.ndarray:
        """Blades per model over the tile."""
        c, m = self.counts.reshape(-1), self.model_index.reshape(-1)
        used = c > 0  # an empty channel's model field is 0, a model a bare tile does not have
        return np.bincount(m[used], weights=c[used], minlength=len(self.models)).astype(np.int64)

    def chunk_model_counts(self) -> np.ndarray:
        """(256, models) blades per chunk (the chunk holding each slot's anchor) and model."""
        a, b = self.control.shape[:2]
        i = self.slot_i0 + np.arange(a)[:, None]
        j = self.slot_j0 + np.arange(b)[None, :]
        gr, gc = owner_cells(np.broadcast_to(i, (a, b)), np.broadcast_to(j, (a, b)))
        chunk = np.repeat(chunk_of_cells(gr, gc).reshape(-1), MAX_CHANNELS)
        out = np.zeros((256, len(self.models)), np.int64)
        c, m = self.counts.reshape(-1), self.model_index.reshape(-1)
        used = c > 0
        np.add.at(out, (chunk[used], m[used]), c[used])
        return out


def height_atlas(adt) -> np.ndarray:
    """(257, 257) float32 absolute heights: outer vertices at even texels, cell centres at odd ones."""
    pos = np.asarray(adt.positions, np.float64)
    gx, gy = corner_steps(pos[:, 0], pos[:, 1], CHUNK_SIZE)  # the chunks' corners, float32
    cy = np.clip(gy - 16 * int(adt.row), 0, 15)  # chunk row
    cx = np.clip(gx - 16 * int(adt.col), 0, 15)
    tr = (cy[:, None] * 16 + (2 * VERTEX_ROWCOL[None, :, 0]).astype(np.int64))  # texel row
    tc = (cx[:, None] * 16 + (2 * VERTEX_ROWCOL[None, :, 1]).astype(np.int64))
    atlas = np.zeros((ATLAS_SIDE, ATLAS_SIDE), np.float32)
    atlas[tr, tc] = np.asarray(adt.abs_heights, np.float32)  # shared chunk edges: the later chunk's
    return atlas


def fan_heights(atlas: np.ndarray, col: int, row: int, x, y) -> np.ndarray:
    """Heights at world (x, y) inside tile (col, row) from its atlas, on the 4-triangle fans.

    The numpy twin of the vertex shader's ``gridTerrainHeight`` (tests compare them)."""
    east, south = tile_offset(np.asarray(x, np.float64), np.asarray(y, np.float64), col, row)
    lr, lc = south / UNIT_SIZE, east / UNIT_SIZE
    r = np.clip(np.floor(lr), 0, 127).astype(np.int64)
    c = np.clip(np.floor(lc), 0, 127).astype(np.int64)
    dv = np.clip(lr - r, 0, 1) - 0.5
    du = np.clip(lc - c, 0, 1) - 0.5
    h = atlas.astype(np.float64)
    tl, tr_ = h[2 * r, 2 * c], h[2 * r, 2 * c + 2]
    bl, br = h[2 * r + 2, 2 * c], h[2 * r + 2, 2 * c + 2]
    hc = h[2 * r + 1, 2 * c + 1]
    vertical = np.abs(dv) >= np.abs(du)
    north, west = vertical & (dv <= 0), ~vertical & (du <= 0)
    south, east = vertical & ~north, ~vertical & ~west
    a = np.select([north, south, west, east], [tr_ - tl, br - bl, 2 * hc - tl - bl, tr_ + br - 2 * hc])
    b = np.select([north, south, west, east], [2 * hc - tl - tr_, bl + br - 2 * hc, bl - tl, br - tr_])
    return hc + a * du + b * dv


def build_grid_tile(adt, grass: dict, *, provenance: dict | None = None) -> GridTile:
    """The control texture and height atlas of ``adt`` from its bundle's instances.

    ``grass``: model path -> INSTANCE_DTYPE array (what the instanced path draws). Each instance
    counts for its ADT cell (:func:`instance_cells`); a cell's count of each model is dealt
    round-robin over the lattice cells the cell owns. A cell keeps its four models with the most
    instances (one ground-effect row has four); any others are counted in ``dropped``.
    """
    col, row = int(adt.col), int(adt.row)
    models = [m for m, inst in grass.items() if len(inst)]
    if len(models) > 0xFFFF:
        raise ValueError(f"{len(models)} models: the control texture indexes at most 65535")
    i0, i1, j0, j1 = tile_slots(col, row)
    a, b = i1 - i0, j1 - j0
    # per tile-local ADT cell (r * 128 + c) and model: instance counts
    n_cells = CELLS_PER_TILE * CELLS_PER_TILE
    keys, counts = [], []
    for k, cell in enumerate(instance_cells(col, row, grass, models)):
        per = np.bincount(cell[cell >= 0], minlength=n_cells)
        nz = np.flatnonzero(per)
        keys.append(nz * len(models) + k)
        counts.append(per[nz])
    cell_model = np.zeros((n_cells, MAX_CHANNELS), np.int64)
    cell_count = np.zeros((n_cells, MAX_CHANNELS), np.int64)
    dropped = 0
    if keys:
        key = np.concatenate(keys)
        cnt = np.concatenate(counts)
        order = np.lexsort((-cnt, key // len(models)))  # by cell, most blades first
        key, cnt = key[order], cnt[order]
        cell, model = key // len(models), key % len(models)
        starts = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]])
        rank = np.arange(len(cell)) - np.repeat(starts, np.diff(np.r_[starts, len(cell)]))
        # a cell grows one ground-effect row: four models at most (a fifth would be a stray)
        over = rank >= MAX_CHANNELS
        dropped = int(cnt[over].sum())
        cell_model[cell[~over], rank[~over]] = model[~over]
        cell_count[cell[~over], rank[~over]] = cnt[~over]
    # owners of the tile's lattice cells, and each one's rank among its owner's lattice cells
    ii = np.arange(i0, i1)[:, None].repeat(b, axis=1)
    jj = np.arange(j0, j1)[None, :].repeat(a, axis=0)
    gr, gc = owner_cells(ii, jj)
    owner = ((gr - row * CELLS_PER_TILE) * CELLS_PER_TILE + (gc - col * CELLS_PER_TILE)).reshape(-1)
    assert owner.min() >= 0 and owner.max() < n_cells
    n_owned = np.bincount(owner, minlength=n_cells)
    order = np.argsort(owner, kind="stable")
    rank = np.empty(len(owner), np.int64)
    first = np.r_[0, np.cumsum(n_owned)[:-1]]
    rank[order] = np.arange(len(owner)) - first[owner[order]]
    # deal cell owner's blades (channel by channel) round-robin: blade n goes to rank n % k
    k = n_owned[owner][:, None]
    cnt = cell_count[owner]
    start = np.cumsum(cnt, axis=1) - cnt
    t = rank[:, None]

    def below(n):  # how many blades of 0 .. n-1 go to rank t
        return np.where(n > t, (n - 1 - t) // k + 1, 0)

    slot_count = below(start + cnt) - below(start)
    control = (cell_model[owner] & 0xFFFF) | (slot_count << 16)
    control = np.where(slot_count > 0, control, 0).astype("<u4").reshape(a, b, MAX_CHANNELS)
    tile = GridTile(col, row, i0, j0, control, height_atlas(adt), models, dict(provenance or {}), dropped=dropped)
    tile.key = grid_key(tile.provenance)
    return tile


def grid_key(provenance: dict) -> str:
    return provenance_key({"format": "wowgrass-grid", "grid_version": GRID_VERSION,
                           "grid": [GRID_SIDE, SLOT_SPACING, JITTER], **provenance})


# ----------------------------------------------------------------------------- the cache file


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def grid_tile_bytes(tile: GridTile) -> bytes:
    strings = "\n".join(tile.models).encode("utf-8")
    prov = canonical_json(tile.provenance)
    a, b = tile.control.shape[:2]
    strings_offset = HEADER_SIZE
    provenance_offset = strings_offset + len(strings)
    control_offset = _align(provenance_offset + len(prov))
    heights_offset = _align(control_offset + a * b * MAX_CHANNELS * 4)
    file_size = heights_offset + ATLAS_SIDE * ATLAS_SIDE * 4
    buf = bytearray(file_size)
    buf[strings_offset:provenance_offset] = strings
    buf[provenance_offset:provenance_offset + len(prov)] = prov
    buf[control_offset:control_offset + a * b * 16] = np.ascontiguousarray(tile.control, "<u4").tobytes()
    buf[heights_offset:] = np.ascontiguousarray(tile.heights, "<f4").tobytes()
    head = dict(magic=MAGIC, version=GRID_VERSION, header_size=HEADER_SIZE, tile_col=tile.col, tile_row=tile.row,
                slot_i0=tile.slot_i0, slot_j0=tile.slot_j0, rows=a, cols=b, model_count=len(tile.models),
                strings_offset=strings_offset, strings_size=len(strings), provenance_offset=provenance_offset,
                provenance_size=len(prov), control_offset=control_offset, heights_offset=heights_offset,
                file_size=file_size, key=bytes.fromhex(tile.key), reserved=b"", checksum=0)
    _HEADER.pack_into(buf, 0, *(head[name] for name, _ in HEADER_SPEC))
    struct.pack_into("<I", buf, HEADER_SIZE - 4, file_checksum(buf))
    return bytes(buf)


def write_grid_tile(path, tile: GridTile) -> Path:
    return write_atomic(path, grid_tile_bytes(tile), sweep=False)  # bake_map sweeps the folder


def read_grid_tile(path, *, expect_key: str | None = None) -> GridTile:
    """Read and check a ``.wgc`` file: TruncatedError / ChecksumError / StaleBundleError / FormatError."""
    spath = str(path)
    buf = Path(path).read_bytes()
    if len(buf) < HEADER_SIZE:
        raise TruncatedError(f"grid header needs {HEADER_SIZE} bytes, file has {len(buf)}", path=spath, offset=0)
    h = dict(zip((n for n, _ in HEADER_SPEC), _HEADER.unpack_from(buf, 0)))
    if h["magic"] != MAGIC:
        raise FormatError(f"not a wowgrass grid file (magic {h['magic']!r}, expected {MAGIC!r})", path=spath,
                          offset=0)
    if h["version"] != GRID_VERSION:
        raise StaleBundleError(f"grid format version {h['version']}, this wowgrass writes {GRID_VERSION}",
                               path=spath, offset=4)
    if h["file_size"] != len(buf):
        cls = TruncatedError if len(buf) < h["file_size"] else FormatError
        raise cls(f"grid file says {h['file_size']} bytes, file has {len(buf)}", path=spath, offset=len(buf))
    actual = file_checksum(buf)
    if actual != h["checksum"]:
        raise ChecksumError(f"checksum {actual:08x} does not match stored {h['checksum']:08x}", path=spath,
                            offset=HEADER_SIZE - 4)
    key = h["key"].hex()
    if expect_key is not None and key != expect_key:
        raise StaleBundleError(f"grid key {key[:16]}… differs from the expected {expect_key[:16]}…", path=spath,
                               offset=KEY_OFFSET)
    a, b = h["rows"], h["cols"]
    if not (0 < a <= CONTROL_SIDE and 0 < b <= CONTROL_SIDE):
        raise FormatError(f"control size {a}x{b} outside 1..{CONTROL_SIDE}", path=spath, offset=24)
    for what, off, size in (("string block", h["strings_offset"], h["strings_size"]),
                            ("provenance", h["provenance_offset"], h["provenance_size"]),
                            ("control", h["control_offset"], a * b * 16),
                            ("heights", h["heights_offset"], ATLAS_SIDE * ATLAS_SIDE * 4)):
        if off < HEADER_SIZE or off + size > len(buf):
            raise FormatError(f"{what} at {off}+{size} lies outside the file ({len(buf)} bytes)", path=spath,
                              offset=off)
    so = h["strings_offset"]
    text = buf[so:so + h["strings_size"]].decode("utf-8", "replace")
    models = text.split("\n") if text else []
    if len(models) != h["model_count"]:
        raise FormatError(f"{len(models)} model names, header says {h['model_count']}", path=spath, offset=so)
    po = h["provenance_offset"]
    try:
        prov = json.loads(buf[po:po + h["provenance_size"]])
    except ValueError as exc:
        raise FormatError(f"provenance is not JSON: {exc}", path=spath, offset=po) from None
    control = np.frombuffer(buf, "<u4", a * b * MAX_CHANNELS, h["control_offset"]).reshape(a, b, MAX_CHANNELS)
    named = (control & 0xFFFF)[(control >> 16) > 0]   # the model of every channel with blades
    if named.size and int(named.max()) >= len(models):
        raise FormatError(f"control counts blades of model {int(named.max())}, the model table has {len(models)}",
                          path=spath, offset=h["control_offset"])
    heights = np.frombuffer(buf, "<f4", ATLAS_SIDE * ATLAS_SIDE, h["heights_offset"]).reshape(ATLAS_SIDE, ATLAS_SIDE)
    return GridTile(h["tile_col"], h["tile_row"], h["slot_i0"], h["slot_j0"], control.copy(), heights.copy(), models,
                    prov, key)


def grid_path_for(bundle_path) -> Path:
    """The control file beside a bundle: same name, ``.wgc`` instead of ``.wgb``."""
    p = Path(bundle_path)
    return p.with_name(p.name[: -len(p.suffix)] + SUFFIX)


def load_grid_tile(adt, grass: dict, *, bundle_path, bundle_key: str) -> tuple[GridTile, bool]:
    """The tile's GridTile from the cache beside its bundle, or built and written there.

    Returns (tile, cache_hit). A corrupt, truncated or stale file is reported (a warning naming it
    and what was wrong) and rebuilt: its contents are never used."""
    prov = {"bundle_key": bundle_key, "tile": [int(adt.col), int(adt.row)]}
    key = grid_key(prov)
    path = grid_path_for(bundle_path)
    if path.exists():
        try:
            return read_grid_tile(path, expect_key=key), True
        except FormatError as exc:
            log.warning("%s; the grid file is built again", exc)
    tile = build_grid_tile(adt, grass, provenance=prov)
    if tile.dropped:
        log.warning("tile %d,%d: %d grass instances of a fifth model in an ADT cell are not on the grid",
                    tile.col, tile.row, tile.dropped)
    write_grid_tile(path, tile)
    stem = path.name.rsplit(".", 2)[0]  # <map>_<col>_<row>.<strategy>: drop other keys' files
    for other in path.parent.glob(f"{stem}.*{SUFFIX}"):
        if other != path and other.name.count(".") == path.name.count("."):
            other.unlink(missing_ok=True)
    return tile, False

