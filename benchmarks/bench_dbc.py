"""Benchmark: read the 3.3.5 GroundEffectTexture (~25k rows) and build the ground-effect catalogue.

Target: parse + catalogue under 20 ms (median of repeats). Also times a naive per-row ``struct``
reader of the same table as a baseline and prints the ratio.

    python benchmarks/bench_dbc.py [DBC_FOLDER]

DBC_FOLDER holds GroundEffectTexture.dbc and GroundEffectDoodad.dbc (3.3.5); default
``$WOWGRASS_REALDATA/dbc/3.3.5``.
"""

from __future__ import annotations

import os
import statistics
import struct
import sys
import time
from pathlib import Path

import numpy as np

from wowgrass.game.effects import GroundEffectCatalog
from wowgrass.formats.dbc import read_table

TARGET_MS = 20.0
REPEATS = 30


CPU_MS = {}


def median_ms(fn, repeats=REPEATS):
    """Median wall-clock ms; the median process CPU ms goes to CPU_MS (less sensitive to a busy box)."""
    fn()  # warm caches (the .dbd parse is cached once per process)
    times, cpu = [], []
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    CPU_MS[fn] = statistics.median(cpu) * 1e3
    return statistics.median(times) * 1e3


def naive_read(data: bytes):
    """Per-row struct baseline: what a straightforward reader does."""
    _magic, n, f, rs, sb = struct.unpack_from("<4sIIII", data, 0)
    rows = {}
    for i in range(n):
        v = struct.unpack_from("<11i", data, 20 + i * rs)
        rows[v[0]] = {"doodads": list(v[1:5]), "weights": list(v[5:9]), "density": v[9], "sound": v[10]}
    return rows


def main(argv):
    folder = Path(argv[1]) if len(argv) > 1 else None
    if folder is None:
        root = os.environ.get("WOWGRASS_REALDATA")
        if not root:
            sys.exit("usage: bench_dbc.py DBC_FOLDER (or set WOWGRASS_REALDATA)")
        folder = Path(root) / "dbc" / "3.3.5"
    tex = (folder / "GroundEffectTexture.dbc").read_bytes()
    dood = (folder / "GroundEffectDoodad.dbc").read_bytes()
    f, det = read_table(tex, "GroundEffectTexture.dbc")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{os.cpu_count()} CPUs, load average {load:.2f}")
    print(f"{folder}: GroundEffectTexture {f.record_count:,} rows × {f.record_size} B, build {det.build}; "
          f"GroundEffectDoodad {len(dood):,} bytes")

    read_ms = median_ms(lambda: read_table(tex, "GroundEffectTexture.dbc"))
    build = lambda: GroundEffectCatalog.from_dbc_bytes(tex, dood)  # noqa: E731
    cat_ms = median_ms(build)
    cat = GroundEffectCatalog.from_dbc_bytes(tex, dood)
    ids = np.random.default_rng(0).choice(cat.ids, 1_000_000)
    lookup_ms = median_ms(lambda: cat.lookup(ids), repeats=10)
    naive_ms = median_ms(lambda: naive_read(tex), repeats=10)

    print(f"read_table (typed records)        {read_ms:8.3f} ms")
    print(f"catalogue from both tables        {cat_ms:8.3f} ms   target < {TARGET_MS:.0f} ms: "
          f"{'OK' if cat_ms < TARGET_MS else 'MISSED'}  (CPU {CPU_MS[build]:.3f} ms)")
    print(f"lookup of 1,000,000 effect ids    {lookup_ms:8.3f} ms")
    print(f"naive per-row struct read         {naive_ms:8.3f} ms   "
          f"(x{naive_ms / read_ms:.0f} slower than read_table, x{naive_ms / cat_ms:.1f} than the whole catalogue)")
    return 0 if cat_ms < TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
