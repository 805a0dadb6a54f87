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
import struct
from fractions import Fraction

import numpy as np

from wowgrass.grass.placement import UNIT, PlacementConstants

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


# ----------------------------------------------------------------------------- the clients' scatter
#
# A plain transcription of the two decodes (client.md in the shared docs; [B] benilla's port of the
# 1.12.1 CMapChunk::CreateDetailDoodads, [F] FrozenClient's decode of the 3.3.5a routine), one
# doodad at a time, with its own copy of the generator and float32 emulated by rounding every
# operation's double result (exact for + - * / and sqrt of float32 operands).

CLIENT_NOISE_WORDS = """
9927148E 08C7AAFD 1F3EE6D5 DA55BBF6 6A4AA075 FF97BDE8 9FBC9BDE 46A18A81
63E30B6E 5D6C7A76 CA69D388 25B947C3 3FA2AB83 BA7C41A6 0195ACE5 C109CF7E
717062D9 0205DB8D 54EF8724 3037D4C6 7BCB1BD0 ECD8E4B8 DCADCE49 C494A913
0DAE398F 0EDD5218 85F5FA78 6DAFD258 3B53B2A4 BE50A551 11F42DFC F1169848
663DDF86 2F2E445E 176B0736 B64C298B E75F89E2 E121A7CD ED65C94D 239CEEFE
04B77D33 402A9A9E F35B10B3 921C7782 571E4E20 8C067222 FB732C67 BF0AC259
0CF95C79 68121A28 42193474 F884C0B1 9D15F038 6F3AF260 91EB90B4 61357F1D
5603325A 932BC5A3 434B0F80 3CE0A8F7 2664D196 4FCC45D7 B5E9B0C8 EA31D600
"""
NOISE = b"".join(int(w, 16).to_bytes(4, "little") for w in CLIENT_NOISE_WORDS.split())
_F32 = struct.Struct("<f")
_U32 = struct.Struct("<I")


def f32(x: float) -> float:
    """Round a double to the nearest float32."""
    return _F32.unpack(_F32.pack(x))[0]


def _noise(i: int) -> int:
    return NOISE[i] | NOISE[i + 1] << 8 | NOISE[i + 2] << 16 | NOISE[i + 3] << 24


def _rotl(x: int, k: int) -> int:
    return ((x << k) | (x >> (32 - k))) & 0xFFFFFFFF


class ClientRandom:
    """CRndSeed / CRandom::uint32 / reals_ as client.md section 1 spells them out."""

    def __init__(self, seed: int):
        self.acc = seed & 0xFFFFFFFF
        self.vls = 4 * (seed % 61) | (seed % 59) << 10 | (seed % 53) << 18 | (seed % 47) << 26

    def uint32(self) -> int:
        v = self.vls
        r1 = (v >> 24) - 4
        if r1 < 0:
            r1 += 188
        r2 = ((v >> 16) & 255) - 12
        if r2 < 0:
            r2 += 212
        r3 = ((v >> 8) & 255) - 24
        if r3 < 0:
            r3 += 236
        r4 = (v & 255) - 28
        if r4 < 0:
            r4 += 244
        self.acc = (self.acc + (_rotl(_noise(r3), 3) ^ _rotl(_noise(r2), 2) ^ _noise(r4) ^ _rotl(_noise(r1), 1))) & 0xFFFFFFFF
        self.vls = r1 << 24 | r2 << 16 | r3 << 8 | r4
        return self.acc

    def real(self) -> float:
        u = self.uint32()
        f = _F32.unpack(_U32.pack((u & 0x7FFFFF) | 0x3F800000))[0]
        return f32(2.0 - f) if u & 0x80000000 else f32(f - 2.0)


PI_F = f32(math.pi)
CELL_HALF = f32(2.0833332538604736)
CELL_SIZE = f32(4.166666507720947)
CELL_STEP = -CELL_SIZE
CELL_MID = -CELL_HALF
CHUNK_SIZE = f32(33.33333206176758)
MAP_HALF = f32(17066.666015625)
MIN_NZ = f32(0.4)
CELL_CORNER = [(0.0, 0.0), (0.0, CELL_STEP), (CELL_STEP, CELL_STEP), (CELL_STEP, 0.0)]
TRI_CORNER = [(3, 0), (0, 1), (2, 3), (1, 2)]
TRI_VERTEX = [(17, 0), (0, 1), (18, 17), (1, 18)]


def _doodad_ids(catalog, row):
    sd = getattr(catalog, "slot_doodad", None)
    if sd is not None:
        return [int(x) & 0xFFFFFFFF for x in sd[row]]
    return [1 if int(m) >= 0 else 0 for m in catalog.slot_model[row]]


def plane_from_points(a, b, c):
    """[F] PlaneFromPoints: facing (b - a) x (c - a), normalised, in float32."""
    bax, bay, baz = f32(b[0] - a[0]), f32(b[1] - a[1]), f32(b[2] - a[2])
    cax, cay, caz = f32(c[0] - a[0]), f32(c[1] - a[1]), f32(c[2] - a[2])
    x = f32(f32(bay * caz) - f32(baz * cay))
    y = f32(f32(baz * cax) - f32(caz * bax))
    z = f32(f32(bax * cay) - f32(bay * cax))
    length = f32(math.sqrt(f32(f32(f32(x * x) + f32(y * y)) + f32(z * z))))
    inv = f32(1.0 / length)
    d = -f32(f32(f32(f32(y * inv) * a[1]) + f32(f32(a[0] * x) * inv)) + f32(f32(a[2] * z) * inv))
    return f32(x * inv), f32(y * inv), f32(z * inv), d


def client_reference(tile, catalog, k: PlacementConstants | None = None):
    """(model, x, y, z, yaw, scale, chunk, cell) per doodad the client places, in its order."""
    k = k or PlacementConstants()
    wotlk = getattr(catalog, "build", None) == "3.3.5" or bool(catalog.has_weights)
    by_id = {}
    for i, e in enumerate(catalog.ids.tolist()):
        by_id.setdefault(int(e), i)
    out = []
    for ch in range(256):
        n_layers = int(tile.n_layers[ch])
        ix, iy = (int(v) for v in tile.index_xy[ch])
        gx, gy = (16 * int(tile.col) + ix) & 0xFFFF, (16 * int(tile.row) + iy) & 0xFFFF
        rng = ClientRandom((gy << 16) | gx)
        if n_layers == 0:
            continue
        effects = [by_id.get(int(tile.layer_effect[ch, layer])) for layer in range(n_layers)]
        if wotlk:  # DetailDoodadsReady
            ready = True
            for row in effects:
                if row is None:
                    continue
                for slot in range(4):
                    if _doodad_ids(catalog, row)[slot] != 0 and int(catalog.slot_model[row][slot]) < 0:
                        ready = False
            if not ready:
                continue
        cells = []
        picks = max(k.client_picks, 16) if wotlk else k.client_picks  # 3.3.5 clamps to 16 .. 256
        for _ in range(picks):
            col = rng.uint32() & 7
            row_ = rng.uint32() & 7
            cells.append((row_, col))
        for i, (r, c) in enumerate(cells):
            if (not wotlk or k.client_no_effect_335) and tile.no_effect_doodad[ch, r, c]:
                continue
            if int(tile.holes[ch]) & (1 << ((r >> 1) * 4 + (c >> 1))):
                continue
            layer = int(tile.doodad_mapping[ch, r, c])
            if layer >= n_layers:
                continue
            row = effects[layer]
            if row is None:
                continue
            models = [int(m) for m in catalog.slot_model[row]]
            if not wotlk and all(m < 0 for m in models):
                continue
            density = int(catalog.density[row]) & 0xFFFFFFFF
            count = density if density else 8
            if wotlk:
                out.extend(_scatter_335(tile, catalog, k, rng, ch, gx, gy, i, r, c, row, count))
            else:
                out.extend(_scatter_112(tile, rng, ch, i, r, c, models, count))
    return out


def _scatter_112(tile, rng, ch, i, r, c, models, count):
    wx, wy, wz = (float(v) for v in tile.positions[ch])
    h = [float(v) for v in tile.heights[ch]]

    def vz(index):
        return f32(wz + h[index])

    tl, tr = vz(r * 17 + c), vz(r * 17 + c + 1)
    bl, br = vz((r + 1) * 17 + c), vz((r + 1) * 17 + c + 1)
    ctr = vz(r * 17 + 9 + c)
    for n in range(count):
        rx = rng.real()
        ry = rng.real()
        model = models[(n + i) & 3]
        if model < 0:
            continue
        scale = f32(f32(rng.real() * f32(0.1)) + 1.0)
        yaw = f32(rng.real() * PI_F)
        fx = f32(f32(rx + 1.0) * 0.5)
        fy = f32(f32(ry + 1.0) * 0.5)
        if f32(fx + fy) <= 1.0:
            if fy <= fx:  # north: centre, TL, TR
                wc, wa, wb, va, vb = f32(2.0 * fy), f32(f32(1.0 - fx) - fy), f32(fx - fy), tl, tr
            else:  # west: centre, BL, TL
                wc, wa, wb, va, vb = f32(2.0 * fx), f32(fy - fx), f32(f32(1.0 - fx) - fy), bl, tl
        elif fy >= fx:  # south: centre, BR, BL
            wc, wa, wb, va, vb = f32(2.0 * f32(1.0 - fy)), f32(f32(fx + fy) - 1.0), f32(fy - fx), br, bl
        else:  # east: centre, TR, BR
            wc, wa, wb, va, vb = f32(2.0 * f32(1.0 - fx)), f32(fx - fy), f32(f32(fx + fy) - 1.0), tr, br
        z = f32(f32(f32(wc * ctr) + f32(wa * va)) + f32(wb * vb))
        x = f32(wx - (r + fy) * UNIT)
        y = f32(wy - (c + fx) * UNIT)
        yield model, x, y, z, yaw, scale, ch, r * 8 + c


def _scatter_335(tile, catalog, k, rng, ch, gx, gy, i, r, c, row, count):
    h = [float(v) for v in tile.heights[ch]]
    base = r * 17 + c
    base_x = f32(r * CELL_STEP)
    base_y = f32(c * CELL_STEP)
    centre = (f32(base_x + CELL_MID), f32(base_y + CELL_MID), h[base + 9])
    planes = []
    for (ca, cb), (va, vb) in zip(TRI_CORNER, TRI_VERTEX):
        corner_a = (f32(base_x + CELL_CORNER[ca][0]), f32(base_y + CELL_CORNER[ca][1]), h[base + va])
        corner_b = (f32(base_x + CELL_CORNER[cb][0]), f32(base_y + CELL_CORNER[cb][1]), h[base + vb])
        planes.append(plane_from_points(centre, corner_b, corner_a))
    ids = _doodad_ids(catalog, row)
    weights = [int(w) for w in catalog.slot_weight[row]]
    bag = [0] * 16
    deal = 0
    dealt = 0
    for kk in range(4):
        for _ in range(weights[kk]):
            bag[deal & 15] = kk
            deal += 13
            dealt += 1
    while dealt < 16:
        bag[deal & 15] = dealt & 3
        deal += 13
        dealt += 1
    min_nz = f32(k.client_min_normal_z)
    ox0 = f32(-f32(CHUNK_SIZE * gy) + MAP_HALF)
    oy0 = f32(-f32(gx * CHUNK_SIZE) + MAP_HALF)
    wz = float(tile.positions[ch][2])
    for n in range(count):
        ja = rng.real()
        jb = rng.real()
        slot = bag[(n + i) & 15]
        if ids[slot] == 0:
            continue
        ox = f32(f32(ja * CELL_HALF) + CELL_HALF)
        oy = f32(f32(jb * CELL_HALF) + CELL_HALF)
        x, y = -oy, -ox
        tri = 1 if f32(y - x) < 0.0 else 0
        if f32(f32(-y - CELL_SIZE) - x) > 0.0:
            tri += 2
        nx, ny, nz, d = planes[tri]
        if nz < min_nz or nz == 0.0:
            continue
        x = f32(x - f32(r * CELL_SIZE))
        y = f32(y - f32(c * CELL_SIZE))
        z = -f32(f32(f32(f32(y * ny) + f32(nx * x)) + d) / nz)
        rotation = f32(f32(rng.real() + 1.0) * PI_F)
        scale = f32(f32(rng.real() * f32(0.33)) + 1.0)
        model = int(catalog.slot_model[row][slot])
        yield model, f32(ox0 + x), f32(oy0 + y), f32(wz + z), rotation, scale, ch, r * 8 + c


def as_client_rows(inst) -> list[tuple]:
    """Instances -> the client reference's tuples (every field as stored, yaw in radians)."""
    return [
        (int(m), float(p[0]), float(p[1]), float(p[2]), float(y), float(s), int(ch), int(cl))
        for m, p, y, s, ch, cl in zip(inst.model, inst.pos, inst.yaw, inst.scale, inst.chunk, inst.cell)
    ]


def as_rows(inst) -> list[tuple]:
    """Instances -> the reference's tuples (yaw back to its 16-bit value)."""
    yaw16 = np.round(inst.yaw.astype(np.float64) / (2 * math.pi) * 65536).astype(np.int64) % 65536
    return [
        (int(m), float(p[0]), float(p[1]), float(p[2]), int(y), float(s), int(ch), int(cl))
        for m, p, y, s, ch, cl in zip(inst.model, inst.pos, yaw16, inst.scale, inst.chunk, inst.cell)
    ]
