"""Memory benchmark: resident memory and GPU bytes of ``wowgrass view`` over sample worlds.

For each world size (default 2x2, 8x8, 16x16; built once into the cache, bundles baked by a
first untimed view) one ``wowgrass view --data DIR -o v.png --size 640x360 --json`` runs in a
process of its own; its peak resident memory comes from ``wait4`` (what ``/usr/bin/time -v``
reports as "Maximum resident set size"), its GPU bytes from the view's ``gpu_memory`` (the
renderer's own books, render/gl/memory.py): the total, per kind, and the bytes of a near
(complete) and a far (terrain alone) tile. On llvmpipe GPU buffers live in process memory, so
the resident figure includes them; on a real card it is what the card must hold.

    python benchmarks/bench_memory.py                        # 2x2, 8x8, 16x16 at 640x360
    python benchmarks/bench_memory.py --sizes 8x8 --json out/memory.json
    python benchmarks/bench_memory.py --view-args="--no-horizon"   # extra view options

Targets (issue 26): the 8x8 view at or under 600 MB resident on llvmpipe; a far tile at or under
1 MB of GPU memory, a near tile at or under 8 MB (terrain; grass and doodads beside it).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TERRAIN_KINDS = ("terrain-near", "terrain-far", "terrain-lines")


def run_view(data: Path, size: str, extra: list[str], out_dir: Path) -> dict:
    """One view in its own process: its JSON result, peak RSS (bytes) and wall seconds."""
    png, js = out_dir / "v.png", out_dir / "v.json"
    cmd = [sys.executable, "-m", "wowgrass", "view", "--data", str(data), "-o", str(png), "--size", size,
           "--json", *extra]
    t0 = time.perf_counter()
    with open(js, "wb") as out, open(out_dir / "v.err", "wb") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"view failed ({code}): {' '.join(cmd)}\n{(out_dir / 'v.err').read_text()[-2000:]}")
    result = json.loads(js.read_text())
    return {"result": result, "max_rss_bytes": usage.ru_maxrss * 1024, "wall_s": wall}


def terrain_bytes(by_kind: dict) -> float:
    return sum(by_kind.get(k, 0) for k in TERRAIN_KINDS)


def measure(n: int, size: str, extra: list[str], warm: bool, jobs: int) -> dict:
    from wowgrass.samples import sample_data_path

    t0 = time.perf_counter()
    data = sample_data_path(tiles=(n, n), jobs=jobs)
    built = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        if warm:  # bundles baked on demand: not what a view of a cached world costs
            run_view(data, size, extra, Path(tmp))
        r = run_view(data, size, extra, Path(tmp))
    g = r["result"]["gpu_memory"]
    per = g["per_tile"]
    row = {"world": f"{n}x{n}", "data": str(data), "world_build_s": built, "size": size, "view_args": extra,
           "max_rss_bytes": r["max_rss_bytes"], "wall_s": r["wall_s"],
           "gpu_total_bytes": g["total_bytes"], "gpu_peak_bytes": g["peak_bytes"], "gpu_by_kind": g["by_kind"],
           "near_tiles": per["near"]["tile_count"], "far_tiles": per["far"]["tile_count"],
           "near_tile_bytes": per["near"]["mean_bytes"], "far_tile_bytes": per["far"]["mean_bytes"],
           "near_tile_terrain_bytes": terrain_bytes(per["near"]["mean_by_kind"]),
           "far_tile_terrain_bytes": terrain_bytes(per["far"]["mean_by_kind"]),
           "near_tile_by_kind": per["near"]["mean_by_kind"], "far_tile_by_kind": per["far"]["mean_by_kind"],
           "renderer": r["result"].get("renderer")}
    return row


def table(rows: list[dict]) -> str:
    mb = lambda v: f"{v / 1e6:,.1f}"  # noqa: E731
    head = (f"{'world':>6} {'tiles near/far':>14} {'RSS MB':>8} {'GPU MB':>8} {'near tile MB':>12} "
            f"{'(terrain)':>9} {'far tile MB':>11} {'(terrain)':>9} {'wall s':>7}  GPU MB by kind")
    lines = [head]
    for r in rows:
        kinds = ", ".join(f"{k} {mb(v)}" for k, v in r["gpu_by_kind"].items() if v >= 50_000)
        lines.append(f"{r['world']:>6} {str(r['near_tiles']) + '/' + str(r['far_tiles']):>14} {mb(r['max_rss_bytes']):>8} "
                     f"{mb(r['gpu_total_bytes']):>8} {mb(r['near_tile_bytes']):>12} {mb(r['near_tile_terrain_bytes']):>9} "
                     f"{mb(r['far_tile_bytes']):>11} {mb(r['far_tile_terrain_bytes']):>9} {r['wall_s']:>7.1f}  {kinds}")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="2,8,16", help="sample world sizes N (NxN tiles), comma-separated")
    ap.add_argument("--size", default="640x360", help="frame size of the view")
    ap.add_argument("--view-args", default="", help="more `wowgrass view` options, as one string")
    ap.add_argument("--no-warm", action="store_true", help="skip the first untimed view (bundles then bake inside)")
    ap.add_argument("--jobs", type=int, default=2, help="processes building a sample world the first time")
    ap.add_argument("--json", help="write the rows here")
    a = ap.parse_args(argv)
    rows = []
    for n in (int(v.lower().split("x")[0]) for v in a.sizes.split(",") if v):
        print(f"{n}x{n} ...", file=sys.stderr, flush=True)
        rows.append(measure(n, a.size, shlex.split(a.view_args), not a.no_warm, a.jobs))
        if a.json:
            Path(a.json).parent.mkdir(parents=True, exist_ok=True)
            Path(a.json).write_text(json.dumps(rows, indent=2))
    print(f"wowgrass view -o v.png --size {a.size} {a.view_args} ({rows[0]['renderer']}); "
          "RSS = peak resident memory of the process; GPU = the renderer's own books; a tile's MB: "
          "its share of the arenas plus its grass and doodads ((terrain): the terrain part alone)")
    print(table(rows))
    return rows


if __name__ == "__main__":
    main()
