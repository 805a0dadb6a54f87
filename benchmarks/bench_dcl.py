"""PKWARE DCL explode speed: wowgrass's own decoder (formats/dcl.py, the fallback where the
``dclimplode`` binding is not installed) vs the binding, on random bytes (literals only, the worst
case), text and 4 KiB MPQ-sized sectors; both outputs are checked against the original.
Run: ``.venv/bin/python benchmarks/bench_dcl.py [--mb 1] [--out DIR]`` (``--out`` writes bench_dcl.json).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from wowgrass.formats import dcl
from wowgrass.formats.mpq import dcl_binding


def _best(fn, runs=3):
    """Best CPU seconds of a few runs: the process's own time, as wall time on a shared machine
    mostly measures the other jobs."""
    best = float("inf")
    for _ in range(runs):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return max(best, 1e-9)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=1.0, help="plain megabytes per case")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    b = dcl_binding()
    if b is None:
        raise SystemExit("error: the dclimplode binding is needed to make the test streams")
    size = int(a.mb * 1e6)
    text = (Path(__file__).resolve().parents[1] / "wowgrass" / "formats" / "mpq.py").read_bytes()
    cases = {"random": os.urandom(size), "text": (text * (size // len(text) + 1))[:size]}
    rows = {}
    for name, plain in cases.items():
        for mode, mname in ((b.CMP_BINARY, "binary"), (b.CMP_ASCII, "ascii")):
            whole = b.compressobj(mode, 4096)
            packed = whole.compress(plain) + whole.flush()
            sectors = []
            for i in range(0, len(plain), 4096):
                c = b.compressobj(mode, 4096)
                sectors.append(c.compress(plain[i:i + 4096]) + c.flush())
            assert dcl.explode(packed) == plain
            assert b"".join(dcl.explode(s) for s in sectors) == plain
            ours = _best(lambda: dcl.explode(packed))
            ours_sec = _best(lambda: [dcl.explode(s, limit=4096) for s in sectors])
            theirs = _best(lambda: b.decompressobj().decompress(packed))
            key = f"{name}/{mname}"
            rows[key] = {"plain_mb": len(plain) / 1e6, "ratio": round(len(packed) / len(plain), 3),
                         "wowgrass_mb_s": round(len(plain) / 1e6 / ours, 2),
                         "wowgrass_4k_sectors_mb_s": round(len(plain) / 1e6 / ours_sec, 2),
                         "per_sector_ms": round(1000 * ours_sec / len(sectors), 3),
                         "dclimplode_mb_s": round(len(plain) / 1e6 / theirs, 1)}
            r = rows[key]
            print(f"{key:14} ratio {r['ratio']:.2f}  wowgrass {r['wowgrass_mb_s']:6.2f} MB/s "
                  f"(4 KiB sectors {r['wowgrass_4k_sectors_mb_s']:.2f} MB/s, {r['per_sector_ms']:.2f} ms each)  "
                  f"dclimplode {r['dclimplode_mb_s']:.0f} MB/s")
    if a.out:
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "bench_dcl.json").write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
