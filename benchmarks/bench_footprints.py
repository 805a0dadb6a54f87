"""How long ``footprint()`` takes for each kind on one tile (edit/footprints.py), best of ``--runs``.

Tiles: the real ``continent4229.adt`` of ``$WOWGRASS_REALDATA`` (19 WMOs, 381 doodads, an ocean
in 9 chunks, 4 texture layers in many chunks) and the sample world's tile 32_32 (its house,
rocks and lake). Models are timed twice: without data (positions only) and with every model
given a box (the real tile's served by the real ``Rabbit.m2``; the sample's own models), the
bounds read once per model by a shared context (as the rules read a map) and not in the time.
Each kind is timed at margin 0 and at a margin of 5 yards.
Run: ``.venv/bin/python benchmarks/bench_footprints.py [--runs 20] [--json OUT.json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from wowgrass.edit.footprints import KINDS, FootprintContext, footprint
from wowgrass.formats.adt import AdtTile, write_adt

PARAMS = {"slope": {"degrees": 35.0}, "texture": {"patterns": ["*road*", "*dirt*"], "share": 0.4}}


class _Files:
    def __init__(self, files, default=None):
        self.files = {k.lower(): v for k, v in files.items()}
        self.default = default

    def read(self, path):
        got = self.files.get(path.lower(), self.default)
        if got is None:
            raise FileNotFoundError(path)
        return got


def _tiles():
    from wowgrass.samples.heights import SampleTerrain
    from wowgrass.samples.sample_world import model_files, tile_object

    sample = AdtTile.from_bytes(write_adt(tile_object("3.3.5", SampleTerrain((1, 1)), 32, 32, 1000)), big_alpha=True)
    out = [("sample 32_32", sample, _Files(model_files("3.3.5")))]
    root = os.environ.get("WOWGRASS_REALDATA")
    if root and (Path(root) / "adt" / "continent4229.adt").exists():
        real = AdtTile.from_bytes((Path(root) / "adt" / "continent4229.adt").read_bytes(), "continent4229.adt")
        rabbit = (Path(root) / "m2" / "v264" / "Rabbit.m2").read_bytes()
        out.insert(0, ("real continent4229", real, _Files({}, default=rabbit)))
    else:
        print("WOWGRASS_REALDATA is not set: the sample tile only")
    return out


def _best(fn, runs):
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args(argv)
    rows = []
    for name, tile, data in _tiles():
        print(f"{name}: {len(tile.modf)} WMOs, {len(tile.mddf)} doodads")
        print(f"  {'kind':<22} {'cells':>6} {'ms':>7} {'cells m=5':>10} {'ms m=5':>7}")
        for kind in KINDS + ("models+data",):
            k = kind.split("+")[0]
            ctx = FootprintContext(data if kind == "models+data" else None)
            figures = []
            for margin in (0.0, 5.0):
                cells = int(footprint(k, tile, margin=margin, context=ctx, **PARAMS.get(k, {})).sum())   # warm: bounds read
                s = _best(lambda: footprint(k, tile, margin=margin, context=ctx, **PARAMS.get(k, {})), args.runs)
                figures += [cells, s * 1e3]
            print(f"  {kind:<22} {figures[0]:>6} {figures[1]:>7.2f} {figures[2]:>10} {figures[3]:>7.2f}")
            rows.append({"tile": name, "kind": kind, "cells": figures[0], "ms": round(figures[1], 3),
                         "cells_margin5": figures[2], "ms_margin5": round(figures[3], 3)})
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
