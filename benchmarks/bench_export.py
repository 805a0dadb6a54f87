"""Placement rows (``bundle export``) streamed as CSV and JSON: rows/s and peak memory.

Builds (once, cached like any sample) a multi-tile 3.3.5 sample world with the sample writer,
bakes it into a fresh bundle cache, then exports every bundle with ``wowgrass bundle export -o``
in a child process per format and prints rows/s (by the child's CPU time, which the other jobs
on a shared machine do not inflate, and by wall time), the wall time a user waits (the command
from start to exit, interpreter start-up included) and the child's peak resident memory
(ru_maxrss, the interpreter and numpy included).

Targets: at least 1 M rows/s; peak memory under 200 MB whatever the row count (``--repeat N``
exports every bundle N times in one document, N times the rows, to show it stays flat).
Run: ``.venv/bin/python benchmarks/bench_export.py [--tiles 2x2] [--repeat 1,4] [--out DIR]``
(``--out`` writes ``bench_export.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RATE_TARGET = 1e6
MEMORY_TARGET_MB = 200.0

CHILD = r"""
import resource, sys, time
t0, c0 = time.perf_counter(), time.process_time()
from wowgrass.cli.main import cli
try:
    cli.main(sys.argv[1:], standalone_mode=False)
finally:
    r = resource.getrusage(resource.RUSAGE_SELF)
    print("BENCH", time.perf_counter() - t0, time.process_time() - c0, r.ru_maxrss, file=sys.stderr)
"""


def export_once(files, fmt: str, out: Path) -> dict:
    """One ``bundle export`` in a child process: its wall and CPU seconds and peak RSS."""
    cmd = [sys.executable, "-c", CHILD, "bundle", "export", *map(str, files), "-o", str(out)]
    base = [sys.executable, "-c", CHILD, "bundle", "export", "--help"]  # start-up alone (interpreter, imports)
    startup = subprocess.run(base, capture_output=True, text=True, check=True)
    s_wall, s_cpu, _ = (float(v) for v in startup.stderr.split("BENCH")[1].split())
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True)
    waited = time.perf_counter() - t0   # what a user waits: the command from start to exit
    if res.returncode != 0:
        raise SystemExit(f"export failed: {res.stderr}")
    wall, cpu, rss_kb = (float(v) for v in res.stderr.split("BENCH")[1].split())
    return {"format": fmt, "wall_s": wall, "command_wall_s": waited, "cpu_s": cpu, "startup_cpu_s": s_cpu, "peak_rss_mb": rss_kb / 1024,
            "bytes": out.stat().st_size}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tiles", default="2x2", help="sample size COLSxROWS (default 2x2: about 660k rows)")
    ap.add_argument("--repeat", default="1,4", help="comma-separated: each bundle listed N times (N x the rows)")
    ap.add_argument("--formats", default="csv,json")
    ap.add_argument("--out", help="folder for bench_export.json")
    args = ap.parse_args(argv)

    from wowgrass import samples
    from wowgrass.grass.bake import bake_map
    from wowgrass.grass.bundle import read_bundle

    tiles = samples.parse_tiles(args.tiles)
    data = samples.sample_data_path(tiles=tiles, jobs=min(2, os.cpu_count() or 1))
    work = Path(tempfile.mkdtemp(prefix="wowgrass-bench-export-"))
    os.environ["WOWGRASS_CACHE"] = str(work / "cache")
    try:
        results, failures = bake_map(data, samples.MAP_NAME, jobs=1)
        if failures:
            raise SystemExit(f"bake failed: {failures[0].error}")
        files = [r.path for r in results]
        rows = 0
        for f in files:
            with read_bundle(f) as b:
                rows += b.instance_count
        print(f"sample world {tiles[0]}x{tiles[1]}: {len(files)} bundles, {rows:,} rows")
        runs = []
        for rep in [int(r) for r in args.repeat.split(",") if r]:
            for fmt in args.formats.split(","):
                r = export_once(files * rep, fmt, work / f"rows.{fmt}")
                r["rows"] = rows * rep
                cpu = max(r["cpu_s"] - r["startup_cpu_s"], 1e-9)
                r["rows_per_s_cpu"] = r["rows"] / cpu
                r["rows_per_s_wall"] = r["rows"] / r["wall_s"]
                runs.append(r)
                print(f"{fmt.upper():4} {r['rows']:>11,} rows, {r['bytes'] / 1e6:7.1f} MB: "
                      f"{r['rows_per_s_cpu'] / 1e6:5.2f} M rows/s by CPU ({cpu:.2f} s past start-up), "
                      f"{r['rows_per_s_wall'] / 1e6:5.2f} M rows/s by wall ({r['wall_s']:.2f} s), "
                      f"a user waits {r['command_wall_s']:.2f} s, "
                      f"peak {r['peak_rss_mb']:.0f} MB", flush=True)
                (work / f"rows.{fmt}").unlink()
        worst_rate = min(r["rows_per_s_cpu"] for r in runs)
        worst_mem = max(r["peak_rss_mb"] for r in runs)
        waits = max(r["command_wall_s"] for r in runs)
        print(f"slowest {worst_rate / 1e6:.2f} M rows/s by CPU (target >= {RATE_TARGET / 1e6:.0f} M: "
              f"{'met' if worst_rate >= RATE_TARGET else 'NOT met'}); a user waits at most {waits:.2f} s "
              f"({min(r['rows'] / r['command_wall_s'] for r in runs) / 1e6:.2f} M rows/s start to exit); "
              f"peak {worst_mem:.0f} MB "
              f"(target < {MEMORY_TARGET_MB:.0f} MB: {'met' if worst_mem < MEMORY_TARGET_MB else 'NOT met'})")
        if args.out:
            out = Path(args.out)
            out.mkdir(parents=True, exist_ok=True)
            (out / "bench_export.json").write_text(json.dumps(
                {"tiles": list(tiles), "rows_per_bundle_set": rows, "runs": runs}, indent=1) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
