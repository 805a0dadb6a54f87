"""Build the default sample world (3.3.5, 2×2 tiles, seed 0) from scratch; target: under 10 s.

Times the whole build (terrain, tables, models, textures, four ADT tiles, six MPQ archives) into a
temporary folder, several runs, and prints the best and median with the per-stage split of the
last run and the other builds' times for comparison.
Run: ``.venv/bin/python benchmarks/bench_sample.py [--runs N]``.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from wowgrass.samples import build_sample_world

TARGET_S = 10.0


def one(build: str, tiles=(2, 2)) -> tuple[float, dict]:
    stages: dict[str, float] = {}
    last = [time.perf_counter()]

    def progress(what, done, total):
        now = time.perf_counter()
        key = what.split(" ")[0]
        stages[key] = stages.get(key, 0.0) + now - last[0]
        last[0] = now

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        last[0] = t0
        data = build_sample_world(Path(tmp), build, tiles, 0, progress)
        dt = time.perf_counter() - t0
        size = sum(p.stat().st_size for p in data.rglob("*") if p.is_file())
    stages["bytes"] = size
    return dt, stages


def main() -> None:
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 3
    times = []
    for _ in range(runs):
        dt, stages = one("3.3.5")
        times.append(dt)
    best, med = min(times), statistics.median(times)
    print(f"sample world 3.3.5 2x2: best {best:.2f} s, median {med:.2f} s over {runs} runs "
          f"(target < {TARGET_S:.0f} s: {'ok' if med < TARGET_S else 'MISSED'}, {TARGET_S / med:.1f}x headroom)")
    size = stages.pop("bytes")
    print("  stages (last run): " + ", ".join(f"{k} {v:.2f} s" for k, v in stages.items())
          + f"; {size / 1e6:.1f} MB of archives")
    for build in ("1.12", "2.4.3"):
        dt, _ = one(build)
        print(f"  build {build} 2x2: {dt:.2f} s")


if __name__ == "__main__":
    main()
