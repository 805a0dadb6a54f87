"""Plain per-cell reference implementations of both placement strategies.

Written as a straightforward loop over chunks, cells (or picks) and clumps, in Python scalars,
with its own pure-Python SplitMix64 (integers masked to 64 bits) and its own coverage, road,
fan-height and slot logic. It consumes the very same random draws as the vectorized code (same
per-chunk keys, same counters), so the two must agree bit for bit.
"""

from __future__ import annotations

import fnmatch
import hashlib
import math
from fractions import Fraction

import numpy as np

from wowgrass.placement import UNIT, PlacementConstants

MASK = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15
NO_EFFECT = (0, 0xFFFF, 0xFFFFFFFF)


def mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def chunk_key(map_name: str, col: int, row: int, chunk: int, seed: int = 0) -> int:
    text = f"wowgrass-placement|{map_name.lower()}|{col}|{row}|{seed}".encode()
    base = int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little")
    return mix((base + (chunk + 1) * GAMMA) & MASK)


def draw(key: int, a: int, b: int, stream: int) -> int:
    counter = (a << 24) | (b << 4) | stream
    return mix((key + (counter + 1) * GAMMA) & MASK)


def fan_height(heights, ch, r, c, u, v):
    """(height, normal z) on the cell's 4-triangle fan, written out per triangle."""
    i0 = r * 17 + c
    h_tl = float(heights[ch, i0])
    h_tr = float(heights[ch, i0 + 1])
    h_bl = float(heights[ch, i0 + 17])
    h_br = float(heights[ch, i0 + 18])
    h_c = float(heights[ch, i0 + 9])
    dx = u - 0.5
    dy = v - 0.5
    if abs(dy) >= abs(dx):
        if dy <= 0:  # north: centre, TL, TR
            gx, gy = h_tr - h_tl, 2.0 * h_c - h_tl - h_tr
        else:  # south: centre, BL, BR
            gx, gy = h_br - h_bl, h_bl + h_br - 2.0 * h_c
    elif dx <= 0:  # west: centre, TL, BL
        gx, gy = 2.0 * h_c - h_tl - h_bl, h_bl - h_tl
    else:  # east: centre, TR, BR
        gx, gy = h_tr + h_br - 2.0 * h_c, h_br - h_tr
    z = h_c + gx * dx + gy * dy
    sx, sy = gx / UNIT, gy / UNIT
    return z, 1.0 / math.sqrt(1.0 + sx * sx + sy * sy)


def position(tile, ch, r, c, u, v):
    px, py, pz = (float(x) for x in tile.positions[ch])
    x = np.float32(px - (r + v) * UNIT)
    y = np.float32(py - (c + u) * UNIT)
    v2 = min(max((px - float(x)) / UNIT - r, 0.0), 1.0)
    u2 = min(max((py - float(y)) / UNIT - c, 0.0), 1.0)
    h, nz = fan_height(tile.heights, ch, r, c, u2, v2)
    return (float(x), float(y), float(np.float32(pz + h))), nz


def layer_sum(tile, ch, layer, r, c) -> int:
    """Effective weight of ``layer`` summed over the cell's 8x8 texels (layer 0 = 255 - others)."""
    n = int(tile.n_layers[ch])
    if layer >= n or int(tile.layer_texture[ch, layer]) < 0:
        return 0
    block = tile.alpha[ch, :, r * 8 : r * 8 + 8, c * 8 : c * 8 + 8].astype(int)
    if layer > 0:
        return int(block[layer].sum())
    return int(np.clip(255 - block[1:].sum(axis=0), 0, 255).sum())  # per texel, then summed


def is_road(tile, ch, layer, patterns) -> bool:
    if layer >= int(tile.n_layers[ch]):
        return False
    t = int(tile.layer_texture[ch, layer])
    if t < 0 or t >= len(tile.textures):
        return False
    name = tile.textures[t].replace("/", "\\").rsplit("\\", 1)[-1].lower()
    return any(fnmatch.fnmatchcase(name, p.lower()) for p in patterns)


def effect_row(tile, catalog, ch, layer) -> int:
    if layer >= int(tile.n_layers[ch]):
        return -1
    if int(tile.layer_texture[ch, layer]) < 0:
        return -1
    eff = int(tile.layer_effect[ch, layer])
    if eff in NO_EFFECT:
        return -1
    return int(catalog.lookup(np.array([eff], dtype=np.uint32))[0])


def in_hole(tile, ch, r, c) -> bool:
    return bool((int(tile.holes[ch]) >> ((r >> 1) * 4 + (c >> 1))) & 1)


def coverage_reference(tile, catalog, map_name, k: PlacementConstants | None = None):
    """List of (model, x, y, z, yaw16, scale, chunk, cell) in (chunk, cell, clump) order."""
    k = k or PlacementConstants()
    out = []
    for ch in range(256):
        key = chunk_key(map_name, tile.col, tile.row, ch, k.seed)
        rows = [effect_row(tile, catalog, ch, L) for L in range(4)]
        grassy = [row >= 0 and any(int(m) >= 0 for m in catalog.slot_model[row]) for row in rows]
        roads = [is_road(tile, ch, L, k.road_patterns) for L in range(4)]
        for r in range(8):
            for c in range(8):
                cell = r * 8 + c
                if tile.no_effect_doodad[ch, r, c] or in_hole(tile, ch, r, c):
                    continue
                if not any(grassy):
                    continue
                sums = [layer_sum(tile, ch, L, r, c) for L in range(4)]
                best = None
                for L in range(4):
                    if grassy[L] and (best is None or sums[L] > sums[best]):
                        best = L
                coverage = Fraction(sums[best], 64)
                road = max([Fraction(sums[L], 64) for L in range(4) if roads[L]], default=Fraction(0))
                if coverage < k.coverage_min or road >= k.road_coverage_min:
                    continue
                row = rows[best]
                d = min(max(int(catalog.density[row]), 0), k.dbc_density_max)
                clumps = min(max(1, math.ceil(coverage / 255 * d)), k.max_placements_per_sample)
                models = [int(m) for m in catalog.slot_model[row]]
                if catalog.has_weights:
                    w = [max(int(x), 0) if m >= 0 else 0 for m, x in zip(models, catalog.slot_weight[row])]
                    if sum(w) == 0:
                        w = [1 if m >= 0 else 0 for m in models]
                else:
                    w = [1 if m >= 0 else 0 for m in models]
                for j in range(clumps):
                    a = draw(key, cell, j, 0)
                    u, v = (a >> 32) / 2**32, (a & 0xFFFFFFFF) / 2**32
                    b = draw(key, cell, j, 1)
                    yaw16, s = b >> 48, (b & 0xFFFFFFFF) / 2**32
                    target = s * float(sum(w))
                    acc, slot = 0.0, 3
                    for kk in range(4):
                        acc += w[kk]
                        if target < acc:
                            slot = kk
                            break
                    (x, y, z), _ = position(tile, ch, r, c, u, v)
                    out.append((models[slot], x, y, z, yaw16, k.coverage_scale, ch, cell))
    return out


def bag_reference(weights) -> list[int]:
    """3.3.5's 16-slot bag, dealt one entry at a time as formats.md §6.3 describes."""
    bag = [0] * 16
    pos = 0
    dealt = 0
    for k in range(4):
        for _ in range(max(int(weights[k]), 0)):
            bag[pos & 15] = k
            pos += 13
            dealt += 1
    while dealt < 16:
        bag[pos & 15] = dealt & 3
        pos += 13
        dealt += 1
    return bag


def client_reference(tile, catalog, map_name, k: PlacementConstants | None = None):
    k = k or PlacementConstants()
    out = []
    bag_mode = bool(catalog.has_weights)
    for ch in range(256):
        key = chunk_key(map_name, tile.col, tile.row, ch, k.seed)
        n_layers = int(tile.n_layers[ch])
        if n_layers == 0:
            continue
        for i in range(k.client_picks):
            p = draw(key, i, 0, 2)
            c, r = p & 7, (p >> 3) & 7
            if tile.no_effect_doodad[ch, r, c] or in_hole(tile, ch, r, c):
                continue
            layer = int(tile.doodad_mapping[ch, r, c])
            if layer >= n_layers:
                continue
            row = effect_row(tile, catalog, ch, layer)
            if row < 0:
                continue
            d = int(catalog.density[row])
            count = k.client_zero_density if d <= 0 else min(d, k.client_density_max)
            models = [int(m) for m in catalog.slot_model[row]]
            bag = bag_reference(catalog.slot_weight[row]) if bag_mode else None
            for n in range(count):
                slot = bag[(n + i) & 15] if bag_mode else (n + i) & 3
                a = draw(key, i, n, 0)
                u, v = (a >> 32) / 2**32, (a & 0xFFFFFFFF) / 2**32
                b = draw(key, i, n, 1)
                yaw16 = b >> 48
                rs = ((b >> 32) & 0xFFFF) / 32768.0 - 1.0
                model = models[slot]
                if model < 0:
                    continue
                (x, y, z), nz = position(tile, ch, r, c, u, v)
                if bag_mode and nz < k.client_min_normal_z:
                    continue
                jitter = k.client_scale_jitter_335 if bag_mode else k.client_scale_jitter_112
                out.append((model, x, y, z, yaw16, float(np.float32(1.0 + rs * jitter)), ch, r * 8 + c))
    return out


def as_rows(inst) -> list[tuple]:
    """Instances -> the reference's tuples (yaw back to its 16-bit value)."""
    yaw16 = np.round(inst.yaw.astype(np.float64) / (2 * math.pi) * 65536).astype(np.int64) % 65536
    return [
        (int(m), float(p[0]), float(p[1]), float(p[2]), int(y), float(s), int(ch), int(cl))
        for m, p, y, s, ch, cl in zip(inst.model, inst.pos, yaw16, inst.scale, inst.chunk, inst.cell)
    ]
