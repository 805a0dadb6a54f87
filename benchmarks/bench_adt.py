"""Parse continent4229.adt (256 MCNK, 483 4-bit alpha maps) into all AdtTile arrays; target: under 15 ms.

Reads the real file from ``$WOWGRASS_REALDATA`` (default ``../shared/realdata``); without it, a
writer-made tile of the same shape is used and the output says so. Prints best and median of
several runs, the target, and the time of a straightforward per-chunk ``struct`` parser that decodes
the same arrays (heights, normals, layers, alpha maps, shadows, masks) with the ratio between them.
Run: ``.venv/bin/python benchmarks/bench_adt.py``.
"""

from __future__ import annotations

import os
import statistics
import struct
import sys
import time
from pathlib import Path

import numpy as np

from wowgrass.formats.adt import AdtTile, write_adt

TARGET_MS = 15.0
RUNS = 40


def load() -> tuple[bytes, str]:
    root = Path(os.environ.get("WOWGRASS_REALDATA", Path(__file__).resolve().parents[2] / "shared" / "realdata"))
    path = root / "adt" / "continent4229.adt"
    if path.is_file():
        return path.read_bytes(), str(path)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from adt_build import generated_tile

    return write_adt(generated_tile(1)), "a writer-made 4-bit tile (real file not found)"


def baseline(data: bytes, big_alpha: bool = False) -> dict:
    """A per-chunk struct parser: walk the chunks, then 256 × (header, MCVT, MCNR, MCLY, MCAL, MCSH)."""
    off, mcnks = 0, []
    while off < len(data):
        tag, size = struct.unpack_from("<4sI", data, off)
        if tag == b"KNCM":
            mcnks.append(off)
        off += 8 + size
    heights = np.zeros((256, 145), np.float32)
    normals = np.zeros((256, 145, 3), np.int8)
    alpha = np.zeros((256, 4, 64, 64), np.uint8)
    shadow = np.zeros((256, 64, 64), bool)
    effects = np.zeros((256, 4), np.uint32)
    no_effect = np.zeros((256, 8, 8), bool)
    mapping = np.zeros((256, 8, 8), np.uint8)
    for i, base in enumerate(mcnks):
        h = struct.unpack_from("<15IHH16s8s4I3f3I", data, base + 8)
        flags, n_layers = h[0], h[3]
        o_h, o_n, o_l, o_a, o_s = h[5], h[6], h[7], h[9], h[11]
        heights[i] = struct.unpack_from("<145f", data, base + o_h + 8)
        normals[i] = np.array(struct.unpack_from("<435b", data, base + o_n + 8)).reshape(145, 3)
        for k in range(n_layers):
            tex, lflags, lofs, eff = struct.unpack_from("<4I", data, base + o_l + 8 + 16 * k)
            effects[i, k] = eff
            if k and lflags & 0x100:
                raw = np.frombuffer(data, np.uint8, 2048, base + o_a + 8 + lofs).reshape(64, 32)
                a = np.empty((64, 64), np.uint8)
                a[:, 0::2] = raw & 15
                a[:, 1::2] = raw >> 4
                a *= 17
                if not flags & 0x8000:
                    a[:, 63] = a[:, 62]
                    a[63] = a[62]
                alpha[i, k] = a
        if flags & 1 and o_s:
            bits = np.unpackbits(np.frombuffer(data, np.uint8, 512, base + o_s + 8).reshape(64, 8),
                                 axis=1, bitorder="little")
            shadow[i] = bits.astype(bool)
        dm, ne = h[17], h[18]
        for r in range(8):
            row = dm[2 * r] | dm[2 * r + 1] << 8
            for c in range(8):
                mapping[i, r, c] = (row >> (2 * c)) & 3
                no_effect[i, r, c] = (ne[r] >> c) & 1
    return {"heights": heights, "normals": normals, "alpha": alpha, "shadow": shadow, "effects": effects,
            "no_effect": no_effect, "mapping": mapping}


def timed(fn, runs=RUNS) -> list[float]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def main() -> int:
    data, source = load()
    print(f"file: {source}, {len(data):,} bytes")
    tile = AdtTile.from_bytes(data)
    ref = baseline(data)
    # the baseline decodes the same arrays (a cross-check, not only a stopwatch)
    assert np.array_equal(ref["heights"], tile.heights) and np.array_equal(ref["alpha"], tile.alpha)
    assert np.array_equal(ref["no_effect"], tile.no_effect_doodad)
    assert np.array_equal(ref["mapping"], tile.doodad_mapping)
    fast = timed(lambda: AdtTile.from_bytes(data))
    slow = timed(lambda: baseline(data), runs=10)
    best, med = min(fast), statistics.median(fast)
    sbest, smed = min(slow), statistics.median(slow)
    print(f"AdtTile.from_bytes (all arrays): best {best:.2f} ms, median {med:.2f} ms over {RUNS} runs; "
          f"target {TARGET_MS:.0f} ms; median/target = {med / TARGET_MS:.2f}")
    print(f"per-chunk struct baseline:       best {sbest:.2f} ms, median {smed:.2f} ms over 10 runs")
    print(f"speed-up (baseline median / from_bytes median): {smed / med:.1f}x")
    t = time.perf_counter()
    out = write_adt(tile)
    print(f"write_adt: {(time.perf_counter() - t) * 1000:.2f} ms ({len(out):,} bytes, identical: {out == data})")
    return 0 if med < TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
