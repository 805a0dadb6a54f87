"""Ground-effect rules (issue 47): ``effects apply`` over a 200-tile map (target <= 10 s on 2
cores), the watch's latency from an editor's save to the written tile (target p95 <= 300 ms), and
``effects why`` for a cell of a resident tile (target <= 100 ms).

Builds (once, then cached like every sample world) the 10x20 sample world bench_audit.py uses and a
rules file over it (assign by texture with a painted override, exclusions under liquid, buildings
and models with margins, on the road texture, on steep slopes; doodadMapping where stale; a new
set), then:

* **apply**: ``apply_rules`` over all 200 tiles with 1 and ``--jobs`` processes (best of
  ``--runs``), and writing the changed tiles under a fresh ``-o`` folder; then the same over that
  folder again (the idempotent second apply: nothing to write); then the command a user runs,
  ``wowgrass effects apply --jobs N -o DIR``, from its start to its exit.
* **watch**: a project folder holding one tile, watched by ``RulesOnSave`` through the
  ``FileWatcher`` (file events, 50 ms grouping); ``--saves`` repaints saved in place; for each,
  the time from the end of the editor's write (and from the file event reaching the watch) to the
  rules' result renamed into place.
* **why**: ``explain_cell`` for ``--cells`` random cells of a resident tile (the tile read once).

Run: ``nice -n 10 .venv/bin/python benchmarks/bench_rules.py [--jobs 2] [--runs 2] [--saves 30]
[--cells 50] [--size 10x20] [--json OUT]``. On a shared machine the figures move with its load:
the load average before each part is printed beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from wowgrass.edit.adt_edit import read_tile
from wowgrass.edit.batch import Overlay
from wowgrass.edit.rules import parse_rules
from wowgrass.edit.rules_apply import RulesOnSave, apply_rules, write_files
from wowgrass.edit.rules_engine import prepare
from wowgrass.edit.rules_explain import explain_cell
from wowgrass.game.data import open_data
from wowgrass.game.maps import adt_game_path
from wowgrass.samples import MAP_NAME, parse_tiles, sample_data_path

RULES = """\
version = 1
map = "WowgrassSample"

[mapping]
mode = "stale"

[[set]]
name = "meadow"
doodads = ["ElwGra01", "ElwGra05"]
weights = [12, 4]
density = 10

[[assign]]
name = "grass"
textures = ["Tileset/Sample/SampleGrass*"]
effect = 1002

[[assign]]
name = "rock tufts"
textures = ["SampleRock"]
set = "meadow"
slope = [0, 35]

[[assign]]
name = "dirt"
textures = ["SampleDirt"]
effect = 1004
mode = "only_unassigned"

[[exclude]]
name = "water"
under = "liquid"
margin = 1

[[exclude]]
name = "houses"
under = "buildings"
margin = 3

[[exclude]]
name = "rocks"
under = "models"
margin = 1

[[exclude]]
name = "road"
textures = ["SampleRoad"]
share = 0.4

[[exclude]]
name = "cliffs"
slope_above = 50
"""

TARGET_APPLY_S = 10.0
TARGET_WATCH_P95_S = 0.300
TARGET_WHY_S = 0.100


def _load() -> float:
    return os.getloadavg()[0]


def _cpu() -> float:
    """CPU seconds of this process and its finished children (the apply's worker processes)."""
    import resource

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _pct(xs, q):
    return float(np.percentile(np.asarray(xs), q))


def bench_apply(data_path, rules_path, jobs_list, runs, figures):
    rules = parse_rules(rules_path.read_text(), rules_path)
    for jobs in jobs_list:
        times, writes, cpus = [], [], []
        for _ in range(runs):
            out = Path(tempfile.mkdtemp(prefix="bench-rules-"))
            try:
                with open_data(data_path) as base:
                    data = Overlay(base, out)
                    load = _load()
                    c0 = _cpu()
                    t0 = time.perf_counter()
                    plan = prepare(rules, data)
                    res = apply_rules(data, plan, jobs=jobs)
                    t1 = time.perf_counter()
                    write_files(res.files, data, out)
                    t2 = time.perf_counter()
                    cpus.append(_cpu() - c0)
                    times.append(t1 - t0)
                    writes.append(t2 - t1)
                    tot = res.totals()
                with open_data(data_path) as base:       # again over its own output: nothing to do
                    data = Overlay(base, out)
                    t3 = time.perf_counter()
                    again = apply_rules(data, prepare(rules, data), jobs=jobs)
                    second = time.perf_counter() - t3
                    assert not again.files, "the second apply changed something"
            finally:
                shutil.rmtree(out, ignore_errors=True)
        best = min(t + w for t, w in zip(times, writes))
        ok = "ok" if best <= TARGET_APPLY_S else "MISSED"
        figures["apply"][jobs] = {"best_s": round(best, 3), "apply_s": [round(t, 3) for t in times],
                                  "write_s": [round(w, 3) for w in writes], "second_apply_s": round(second, 3),
                                  "cpu_s": [round(c, 3) for c in cpus],
                                  "load_before": round(load, 2), **tot}
        print(f"  apply, {jobs} job(s): best {best:.2f} s ({min(times):.2f} s rules + {min(writes):.2f} s writing "
              f"{tot['changed_tile_count']} tiles, {tot['changed_byte_count']:,} bytes) for {tot['tile_count']} tiles "
              f"(target <= {TARGET_APPLY_S:.0f} s: {ok}); CPU {min(cpus):.2f} s in all processes "
              f"({min(cpus) / tot['tile_count'] * 1000:.0f} ms a tile); the second apply {second:.2f} s, 0 bytes; "
              f"load average {load:.1f} before (other work on the machine stretches the wall time)")


def bench_command(data_path, rules_path, jobs, figures):
    out = Path(tempfile.mkdtemp(prefix="bench-rules-cmd-"))
    try:
        cmd = [sys.executable, "-m", "wowgrass", "effects", "apply", "--data", str(data_path), "--rules",
               str(rules_path), "--jobs", str(jobs), "-o", str(out), "--json", "-q"]
        t0 = time.perf_counter()
        r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - t0
        if r.returncode:
            raise SystemExit(f"effects apply failed: {r.stderr}")
    finally:
        shutil.rmtree(out, ignore_errors=True)
    figures["command_wall_s"] = round(wall, 3)
    print(f"  `wowgrass effects apply --jobs {jobs} -o DIR`: a user waits {wall:.2f} s (start to exit)")


def _repaint(raw: bytes, gp: str, step: int) -> bytes:
    """An editor's repaint: alpha maps moved and the grass layers' effect ids cleared (wowgrass's writer)."""
    import dataclasses

    from wowgrass.formats.adt import write_adt

    t = read_tile(raw, gp)
    eff = t.layer_effect.copy()
    eff[:, :] = np.where(np.arange(4)[None, :] < t.n_layers[:, None], 0, eff)
    alpha = np.roll(t.alpha, 3 + step % 5, axis=-1)
    return write_adt(dataclasses.replace(t, layer_effect=eff, alpha=alpha))


def bench_watch(data_path, rules_path, saves, figures):
    from wowgrass.workbench.watch import FileWatcher

    tmp = Path(tempfile.mkdtemp(prefix="bench-rules-watch-"))
    try:
        project = tmp / "project"
        gp = adt_game_path(MAP_NAME, 0, 0)
        with open_data(data_path) as g:
            from wowgrass.game.maps import map_tiles

            c, r = map_tiles(g, MAP_NAME).tiles[0]
            gp = adt_game_path(MAP_NAME, c, r)
            raw = g.read(gp)
        tile = project.joinpath(*gp.split("\\"))
        tile.parent.mkdir(parents=True)
        tile.write_bytes(raw)
        versions = [_repaint(raw, gp, k) for k in range(saves)]
        data = open_data(data_path, over=[project])
        rules = parse_rules(rules_path.read_text(), rules_path)
        plan = prepare(rules, data, ranges=[((c, c), (r, r))])
        results: queue.Queue = queue.Queue()
        job = RulesOnSave(data, plan, on_result=results.put)
        watcher = FileWatcher([project], job, debounce_ms=50)
        watcher.start()
        from_save, from_event = [], []
        load = _load()
        try:
            for k, v in enumerate(versions):
                with open(tile, "r+b") as f:
                    f.truncate(0)
                    f.write(v)
                saved = time.perf_counter()
                res = results.get(timeout=30)
                while res.status != "applied":
                    res = results.get(timeout=30)
                done = res.event_time + res.seconds
                from_save.append(done - saved)
                from_event.append(res.seconds)
                time.sleep(0.15)                 # editors do not save ten times a second
        finally:
            watcher.stop()
            data.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    p95 = _pct(from_save, 95)
    ok = "ok" if p95 <= TARGET_WATCH_P95_S else "MISSED"
    figures["watch"] = {"saves": saves, "mode": watcher.mode, "from_save_p50_s": round(_pct(from_save, 50), 4),
                        "from_save_p95_s": round(p95, 4), "from_event_p50_s": round(_pct(from_event, 50), 4),
                        "from_event_p95_s": round(_pct(from_event, 95), 4), "load_before": round(load, 2)}
    print(f"  watch ({watcher.mode}), {saves} saves: editor's write done -> rules' tile renamed into place "
          f"p50 {_pct(from_save, 50) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms (target <= 300 ms: {ok}); from the file "
          f"event reaching the watch p50 {_pct(from_event, 50) * 1000:.0f} ms, p95 "
          f"{_pct(from_event, 95) * 1000:.0f} ms (the rest is the 50 ms grouping of events); load average {load:.1f}")


def bench_why(data_path, rules_path, cells, figures):
    """``explain_cell``: the first cell of a tile (the rules evaluated over the tile: what a pick
    waits for when the cursor reaches a tile), then cells of that resident tile. The process's
    very first call (imports, model bounds read once) is timed apart."""
    rules = parse_rules(rules_path.read_text(), rules_path)
    with open_data(data_path) as g:
        plan = prepare(rules, g, ranges=[((0, 63), (0, 63))])
        tiles = plan.tiles[:: max(1, len(plan.tiles) // 8)][:8]
        resident = []
        for c, r in tiles:
            gp = adt_game_path(MAP_NAME, c, r)
            resident.append(((c, r), read_tile(g.read(gp), gp)))     # resident: read once
        load = _load()
        t0 = time.perf_counter()
        explain_cell(g, plan, resident[0][0], 0, (0, 0), t=resident[0][1])
        cold = time.perf_counter() - t0
        first, first_cpu = [], []
        for tile, t in resident[1:]:
            t0, c0 = time.perf_counter(), time.process_time()
            explain_cell(g, plan, tile, 17, (3, 4), t=t)
            first.append(time.perf_counter() - t0)
            first_cpu.append(time.process_time() - c0)
        tile, t = resident[-1]
        rng = np.random.default_rng(0)
        times = []
        for _ in range(cells):
            idx, cr = int(rng.integers(256)), (int(rng.integers(8)), int(rng.integers(8)))
            t0 = time.perf_counter()
            explain_cell(g, plan, tile, idx, cr, t=t)
            times.append(time.perf_counter() - t0)
    p50, p95 = _pct(times, 50), _pct(times, 95)
    f50, fmax = _pct(first, 50), max(first)
    ok = "ok" if p95 <= TARGET_WHY_S else "MISSED"
    ok_first = "ok" if fmax <= TARGET_WHY_S else "MISSED"
    figures["why"] = {"cells": cells, "cold_s": round(cold, 4), "first_p50_s": round(f50, 4),
                      "first_max_s": round(fmax, 4), "first_cpu_p50_s": round(_pct(first_cpu, 50), 4),
                      "p50_s": round(p50, 4), "p95_s": round(p95, 4), "max_s": round(max(times), 4),
                      "load_before": round(load, 2)}
    print(f"  why: the process's first call {cold * 1000:.0f} ms (imports, model bounds); the first cell of a "
          f"resident tile (the rules evaluated over it), {len(first)} tiles: p50 {f50 * 1000:.0f} ms, max "
          f"{fmax * 1000:.0f} ms, CPU p50 {_pct(first_cpu, 50) * 1000:.0f} ms (target <= 100 ms: {ok_first}); "
          f"then {cells} cells of that tile: p50 {p50 * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms, max "
          f"{max(times) * 1000:.1f} ms ({ok}); load average {load:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="10x20")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--saves", type=int, default=30)
    ap.add_argument("--cells", type=int, default=50)
    ap.add_argument("--build-jobs", type=int, default=2)
    ap.add_argument("--json", default=None)
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: apply,command,watch,why")
    a = ap.parse_args()
    cols, rows = parse_tiles(a.size)
    t0 = time.perf_counter()
    data_path = sample_data_path("3.3.5", (cols, rows), 0, jobs=a.build_jobs)
    print(f"sample world 3.3.5 {cols}x{rows} ({cols * rows} tiles) at {data_path} ({time.perf_counter() - t0:.1f} s); "
          f"{len(os.sched_getaffinity(0))} cores for this process; load average {_load():.1f}")
    tmp = Path(tempfile.mkdtemp(prefix="bench-rules-file-"))
    rules_path = tmp / "wowgrass-rules.toml"
    rules_path.write_text(RULES)
    skip = set(a.skip.split(","))
    figures = {"tiles": cols * rows, "apply": {}}
    try:
        if "apply" not in skip:
            bench_apply(data_path, rules_path, sorted({1, a.jobs}), a.runs, figures)
        if "command" not in skip:
            bench_command(data_path, rules_path, a.jobs, figures)
        if "watch" not in skip:
            bench_watch(data_path, rules_path, a.saves, figures)
        if "why" not in skip:
            bench_why(data_path, rules_path, a.cells, figures)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if a.json:
        Path(a.json).write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
