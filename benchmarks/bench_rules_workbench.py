"""The rules in the workbench (issue 47 items 3-5): what they cost the frame's thread and how soon
their answers are there. No window: the window's Workbench over a stand-in scene (the cost measured
is the workbench's, not the GPU's), over the sample world (``--tiles``, built once, cached).

* ``pick``: the frame thread's part of a pick (``show_cell``: the outline, a look in the cache,
  a stat of the rules file) with and without a rules file; ms median / max.
* ``why``: pick to the Cell panel's why (explain_cell in a worker process; ``--workers 0``: on the
  workbench's thread), the first cell of a tile and further cells of it; ms.
* ``overlay`` / ``drift``: every tile's rules overlay image, and every tile's drift, computed in the
  worker processes (``--workers 0``: on the workbench's thread): ms a tile.
* ``stall``: while those run, the frame's thread does a frame's worth of Python work (``--work-ms``)
  every 16 ms: how much longer it takes than when the workbench is idle (the GIL), median / p99 /
  max ms. The figure to keep small: a frame waits that long for the rules.

    nice -n 10 python benchmarks/bench_rules_workbench.py [--tiles 4x4] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

RULES = """\
version = 1

[[assign]]
name = "grass"
textures = ["SampleGrass"]
effect = 1001

[[exclude]]
name = "roads"
textures = ["SampleRoad*"]
share = 0.3

[[exclude]]
name = "water"
under = "liquid"
margin = 2

[[exclude]]
name = "houses"
under = "buildings"
margin = 2

[[exclude]]
name = "steep"
slope_above = 30
"""


class _Cells:
    def __init__(self):
        self.mask, self.brush, self.pick, self.set_colours, self.data = 0, (0,) * 4, (0,) * 4, (), {}

    def set(self, key, img):
        self.data[key] = img


def _scene(keys):
    return SimpleNamespace(tiles={k: SimpleNamespace(full=True) for k in keys}, terrain=SimpleNamespace(cells=_Cells()),
                           on_resident=[], keep_grass=False)


def _settle(bench, timeout=600.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        bench.before_frame(0.016)
        if bench.idle:
            bench.before_frame(0.016)
            if bench.idle:
                return
        time.sleep(0.002)
    raise RuntimeError("the workbench never settled")


def _work(ms: float) -> float:
    """About ``ms`` of pure-Python work (a frame's bookkeeping); its wall time in ms."""
    t0 = time.perf_counter()
    n = 0
    while (time.perf_counter() - t0) * 1000.0 < ms:
        for _ in range(200):
            n += 1
    return (time.perf_counter() - t0) * 1000.0


def _frames_while(busy, work_ms: float) -> list[float]:
    """Each 16 ms a frame's work while ``busy()``; how much longer than ``work_ms`` each took."""
    out = []
    while busy():
        t0 = time.perf_counter()
        _work(work_ms)
        out.append((time.perf_counter() - t0) * 1000.0 - work_ms)
        time.sleep(max(0.0, 0.016 - (time.perf_counter() - t0)))
    return out


def _stats(xs) -> dict:
    xs = sorted(xs)
    if not xs:
        return {"n": 0}
    return {"n": len(xs), "median": round(statistics.median(xs), 3),
            "p99": round(xs[min(len(xs) - 1, int(0.99 * len(xs)))], 3), "max": round(xs[-1], 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tiles", default="4x4", help="the sample world's map (columns x rows)")
    ap.add_argument("--work-ms", type=float, default=2.0, help="the frame thread's Python work a frame")
    ap.add_argument("--workers", type=int, default=None,
                    help="worker processes for the overlay and the drift (0: the workbench's thread)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    from wowgrass.game.data import open_data
    from wowgrass.samples import MAP_NAME, build_sample_world
    from wowgrass.workbench.controller import Workbench
    from wowgrass.workbench.session import CellRef, EditSession

    cols, rows = (int(v) for v in args.tiles.split("x"))
    tmp = Path(tempfile.mkdtemp(prefix="bench-rules-wb-"))
    root = build_sample_world(tmp / "world", "3.3.5", (cols, rows), seed=0)
    rules = tmp / "rules.toml"
    rules.write_text(RULES)
    out: dict = {"tiles": args.tiles, "workers": "default" if args.workers is None else args.workers}
    with open_data(root) as data:
        keys = list(EditSession(data, MAP_NAME).tiles)
        for label, path in (("without rules", None), ("with rules", rules)):
            session = EditSession(data, MAP_NAME)
            bench = Workbench(session, _scene(keys), audit=False, panels=False, workers=args.workers, rules=path)
            try:
                t = session.tile(keys[0])
                refs = [CellRef(keys[0], tuple(int(v) for v in t.index_xy[i]), (c, r))
                        for i in range(0, 256, 37) for c, r in ((1, 2), (5, 6))]
                ms = []
                for ref in refs:
                    t0 = time.perf_counter()
                    bench.show_cell(ref)
                    ms.append((time.perf_counter() - t0) * 1000.0)
                    _settle(bench)
                out[f"pick ({label})"] = _stats(ms)
                if path is None:
                    out["stall (idle)"] = _stats([_work(args.work_ms) - args.work_ms for _ in range(200)])
                    continue
                # why: the first cell of each tile, then another cell of it
                first, again = [], []
                for key in keys[1:]:
                    tk = session.tile(key)
                    for store, (i, cr) in ((first, (40, (2, 3))), (again, (200, (6, 1)))):
                        ref = CellRef(key, tuple(int(v) for v in tk.index_xy[i]), cr)
                        t0 = time.perf_counter()
                        bench.show_cell(ref)
                        while bench.picked_info is None or "rules" not in bench.picked_info:
                            bench.before_frame(0.016)
                            time.sleep(0.0005)
                        store.append((time.perf_counter() - t0) * 1000.0)
                out["why, first cell of a tile (ms)"] = _stats(first)
                out["why, another cell of it (ms)"] = _stats(again)
                # the overlay and the drift of every tile on the workbench's thread, frames running
                t0 = time.perf_counter()
                bench.toggle_overlay("rules", True)
                for key in keys:
                    bench.tile_resident(key)  # as each tile arrives: its drift
                state = {"idle": 0}

                def busy():
                    bench.before_frame(0.016)  # results mapped as a frame does
                    state["idle"] = state["idle"] + 1 if bench.idle else 0
                    return state["idle"] < 3

                stalls = _frames_while(busy, args.work_ms)
                spent = (time.perf_counter() - t0) * 1000.0
                _settle(bench)
                out["overlay + drift, every tile (ms a tile)"] = round(spent / len(keys), 1)
                out["stall (rules overlay and drift running)"] = _stats(stalls)
                out["drifted tiles"] = len(bench.rules.drifted())
            finally:
                bench.close()
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        for k, v in out.items():
            print(f"{k:45s} {v}")


if __name__ == "__main__":
    main()
