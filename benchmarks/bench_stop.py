"""How fast Ctrl-C / SIGTERM stops a parallel bake; target: the command gone within 1 s of the signal.

A loose map of ``--tiles`` copies of one sample tile is baked with ``--jobs`` workers; the signal is
sent when the first worker is forked (``workers``: the pool is starting) or when the first bundle is
on disk (``baking``); the figure is the wall time from the signal to the command's exit, worst of
``--runs``. tests/test_cli_round2.py checks what a stop says and leaves; the time is measured here.
Run: ``.venv/bin/python benchmarks/bench_stop.py [--tiles 120] [--jobs 2] [--runs 5] [--json OUT.json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from wowgrass.formats.adt import TILE_SIZE, AdtTile, write_adt
from wowgrass.samples import MAP_NAME, build_sample_world

TARGET_S = 1.0


def _loose_map(root: Path, tiles: int) -> Path:
    """The sample world's tables and models as loose files and ``tiles`` copies of one of its tiles."""
    world = build_sample_world(root / "w", "3.3.5", (2, 1), seed=0)
    loose = root / "loose"
    subprocess.run([sys.executable, "-m", "wowgrass", "mpq", "extract", "--data", str(world), "-o", str(loose),
                    "-q"], check=True)
    data = root / "x"
    shutil.copytree(loose / "DBFilesClient", data / "DBFilesClient")
    shutil.copytree(loose / "World" / "NoDXT", data / "World" / "NoDXT")
    folder = data / "World" / "Maps" / MAP_NAME
    folder.mkdir(parents=True)
    src = AdtTile.from_bytes((loose / "World" / "Maps" / MAP_NAME / f"{MAP_NAME}_31_32.adt").read_bytes(),
                             big_alpha=True)
    base = src.positions.copy()
    for i in range(tiles):   # the tile moved to each place: one bundle a tile, as a real map's
        c, r = i % 64, i // 64
        src.positions = base + np.array([(32 - r) * TILE_SIZE, (31 - c) * TILE_SIZE, 0], "<f4")
        (folder / f"{MAP_NAME}_{c}_{r}.adt").write_bytes(write_adt(src))
    return data


def _has_children(pid: int) -> bool:
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                if f.read().strip():
                    return True
    except OSError:
        pass
    return False


def _stop_once(data: Path, cache: Path, jobs: int, phase: str, sig: int) -> float:
    env = dict(os.environ, WOWGRASS_CACHE=str(cache))
    proc = subprocess.Popen([sys.executable, "-m", "wowgrass", "bake", "--data", str(data), "--jobs", str(jobs),
                             "--force", "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                            start_new_session=True)
    try:
        ready = ((lambda: _has_children(proc.pid)) if phase == "workers"
                 else (lambda: any((cache / "bundles").rglob("*.wgb"))))
        while not ready():
            if proc.poll() is not None:
                raise SystemExit(f"the bake ended before the {phase} phase: use more --tiles")
            time.sleep(0.005)
        pidfd = os.pidfd_open(proc.pid)   # readable when the process ends (Popen.wait polls in 50 ms steps)
        try:
            sent = time.perf_counter()
            os.kill(proc.pid, sig)
            if not select.select([pidfd], [], [], 60)[0]:
                raise SystemExit(f"the bake did not stop within 60 s of {signal.Signals(sig).name}")
            return time.perf_counter() - sent
        finally:
            os.close(pidfd)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tiles", type=int, default=120)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", default=None, help="also write the figures here")
    a = ap.parse_args()
    figures = {"target_s": TARGET_S, "tiles": a.tiles, "jobs": a.jobs, "runs": a.runs, "cases": []}
    with tempfile.TemporaryDirectory(prefix="bench-stop-") as tmp:
        data = _loose_map(Path(tmp), a.tiles)
        for phase, sig in (("workers", signal.SIGINT), ("baking", signal.SIGINT), ("baking", signal.SIGTERM)):
            times = [_stop_once(data, Path(tmp) / f"cache-{phase}-{sig}-{i}", a.jobs, phase, sig)
                     for i in range(a.runs)]
            worst, median = max(times), sorted(times)[len(times) // 2]
            name = signal.Signals(sig).name
            print(f"{name:7s} while {phase:7s}: stopped in {median:.3f} s median, {worst:.3f} s worst of {a.runs} "
                  f"(target {TARGET_S:.1f} s: {worst / TARGET_S:.2f}x)")
            figures["cases"].append({"signal": name, "phase": phase, "median_s": round(median, 4),
                                     "worst_s": round(worst, 4), "ratio_to_target": round(worst / TARGET_S, 3)})
    if a.json:
        Path(a.json).write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
