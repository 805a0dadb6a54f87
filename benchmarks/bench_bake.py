"""Placement and bake speed on continent4229.adt with the 3.3.5 tables, and the client strategy on
both real tiles (continent4229.adt, 3.3.5 tables; Azeroth_38_46.adt, 1.12 tables).

Targets: placement of one tile under 10 ms; the whole bake (parse + place + write) under 25 ms,
with either strategy; each vectorized placement at least 50x faster than its plain-Python
reference (tests/placement_reference.py: the coverage one consumes the same random draws; the
client one is a doodad-by-doodad transcription of the clients' routines). Then a 16-tile bake of
the sample world with ``--jobs 2`` against ``--jobs 1`` (fresh cache each, so every tile is baked).

Reads ``$WOWGRASS_REALDATA`` (default ``../shared/realdata``). Prints best and median of several
runs. Run: ``.venv/bin/python benchmarks/bench_bake.py [--no-map | --map-only]``.
"""

from __future__ import annotations

import atexit
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[1] / "tests"))

PLACE_TARGET_MS = 10.0
BAKE_TARGET_MS = 25.0
RATIO_TARGET = 50.0
RUNS = 30


def _tempdir(prefix: str) -> str:
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def timed(fn, runs=RUNS, clock=time.perf_counter):
    fn()  # warm up
    ts = []
    for _ in range(runs):
        t0 = clock()
        fn()
        ts.append(clock() - t0)
    return min(ts) * 1e3, statistics.median(ts) * 1e3


def main(argv):
    root = Path(os.environ.get("WOWGRASS_REALDATA", HERE.parents[2] / "shared" / "realdata"))
    adt = root / "adt" / "continent4229.adt"
    dbc = root / "dbc" / "3.3.5"
    if "--map-only" in argv:
        os.environ["WOWGRASS_CACHE"] = _tempdir("wowgrass-bench-bake-")
        bench_map()
        return 0
    if not adt.is_file():
        print(f"real data not found under {root}; set WOWGRASS_REALDATA")
        return 1
    tmp = _tempdir("wowgrass-bench-bake-")
    os.environ["WOWGRASS_CACHE"] = tmp

    from placement_reference import coverage_reference

    from wowgrass.grass.bake import bake_tile, load_catalog
    from wowgrass.formats.adt import AdtTile
    from wowgrass.grass.placement import ClientPlacement, CoveragePlacement

    raw = adt.read_bytes()
    catalog = load_catalog(dbc_dir=dbc)
    tile = AdtTile.from_bytes(raw, str(adt))
    coverage = CoveragePlacement()
    n = len(coverage.place(tile, catalog, map_name="continent"))
    print(f"tile {adt.name}: {n} instances (coverage placement), 3.3.5 tables")

    best, med = timed(lambda: coverage.place(tile, catalog, map_name="continent"))
    print(f"placement (coverage): best {best:6.2f} ms  median {med:6.2f} ms  target < {PLACE_TARGET_MS:.0f} ms  "
          f"{'OK' if best < PLACE_TARGET_MS else 'MISSED'}")
    client = ClientPlacement()
    cbest, cmed = timed(lambda: client.place(tile, catalog, map_name="continent"))
    print(f"placement (client):  best {cbest:6.2f} ms  median {cmed:6.2f} ms")
    pbest, pmed = timed(lambda: AdtTile.from_bytes(raw, str(adt)))
    print(f"ADT parse alone (for reference): best {pbest:6.2f} ms  median {pmed:6.2f} ms")

    out = Path(tmp) / "bench.wgb"
    bbest, bmed = timed(lambda: bake_tile(raw, catalog, map_name="continent", out=out, force=True))
    print(f"bake (parse+place+write): best {bbest:6.2f} ms  median {bmed:6.2f} ms  target < {BAKE_TARGET_MS:.0f} ms  "
          f"{'OK' if bbest < BAKE_TARGET_MS else 'MISSED'}")
    hbest, hmed = timed(lambda: bake_tile(raw, catalog, map_name="continent", out=out))
    print(f"bake, cache hit (parse+key+verify): best {hbest:6.2f} ms  median {hmed:6.2f} ms")

    t0 = time.perf_counter()
    ref = coverage_reference(tile, catalog, "continent")
    ref_ms = (time.perf_counter() - t0) * 1e3
    assert len(ref) == n
    print(f"reference per-cell placement: {ref_ms:8.1f} ms  ratio {ref_ms / best:6.0f}x  target >= "
          f"{RATIO_TARGET:.0f}x  {'OK' if ref_ms / best >= RATIO_TARGET else 'MISSED'}")

    bench_client(root, tmp)
    if "--no-map" not in argv:
        bench_map()
    return 0


def bench_client(root: Path, tmp: str):
    """--placement client: placement, the whole bake and the oracle's time, per real tile."""
    from placement_reference import client_reference

    from wowgrass.grass.bake import bake_tile, load_catalog
    from wowgrass.formats.adt import AdtTile
    from wowgrass.grass.placement import ClientPlacement

    tiles = (("continent4229.adt", "3.3.5", "continent"), ("Azeroth_38_46.adt", "1.12", "Azeroth"))
    for name, build, map_name in tiles:
        raw = (root / "adt" / name).read_bytes()
        catalog = load_catalog(dbc_dir=root / "dbc" / build)
        tile = AdtTile.from_bytes(raw, name)
        client = ClientPlacement()
        n = len(client.place(tile, catalog, map_name=map_name))
        best, med = timed(lambda: client.place(tile, catalog, map_name=map_name))
        cbest, _ = timed(lambda: client.place(tile, catalog, map_name=map_name), clock=time.process_time)
        print(f"client {name} ({build} tables, {n} instances): placement best {best:6.2f} ms  median {med:6.2f} ms"
              f"  (CPU time best {cbest:6.2f} ms)")
        out = Path(tmp) / f"client-{name}.wgb"

        def bake():
            return bake_tile(raw, catalog, map_name=map_name, placement="client", out=out, force=True)

        bbest, bmed = timed(bake)
        bcpu, _ = timed(bake, clock=time.process_time)
        print(f"  client bake (parse+place+write): best {bbest:6.2f} ms  median {bmed:6.2f} ms  (CPU time best "
              f"{bcpu:6.2f} ms)  target <= {BAKE_TARGET_MS:.0f} ms  {'OK' if bbest <= BAKE_TARGET_MS else 'MISSED'}")
        bench_capacity(tile, catalog, map_name)
        t0 = time.perf_counter()
        ref = client_reference(tile, catalog)
        ref_ms = (time.perf_counter() - t0) * 1e3
        assert len(ref) == n
        print(f"  client reference (plain Python): {ref_ms:8.1f} ms  ratio {ref_ms / best:6.0f}x  target >= "
              f"{RATIO_TARGET:.0f}x  {'OK' if ref_ms / best >= RATIO_TARGET else 'MISSED'}")


def bench_capacity(tile, catalog, map_name):
    """The client's draw capacity on the tile's scatter at 16 and 256 picks: every model missing (a
    texture each, as on the real data) and every model a 24-vertex, 36-index tuft on six textures
    (batches that fill)."""
    import numpy as np

    from wowgrass.grass.capacity import ModelGeometry, draw_capacity, missing_geometry
    from wowgrass.grass.placement import ClientPlacement, PlacementConstants, client_picks, is_335_routine

    for picks in (16, 256):
        k = PlacementConstants(client_picks=picks)
        inst = ClientPlacement(k).place(tile, catalog, map_name=map_name)
        used = np.unique(inst.model).tolist()
        taken = client_picks(k, catalog)
        for what, geo in (("missing models", {m: missing_geometry(catalog.models[m]) for m in used}),
                          ("filling tufts", {m: ModelGeometry(f"t{m % 6}", 24, 36) for m in used})):
            keep = draw_capacity(inst.chunk, inst.model, geo, taken, is_335_routine(catalog))
            best, med = timed(lambda: draw_capacity(inst.chunk, inst.model, geo, taken, is_335_routine(catalog)))
            print(f"  draw capacity, {picks} picks, {what}: {len(inst)} -> {int(keep.sum())} kept, best {best:6.2f} ms"
                  f"  median {med:6.2f} ms")


def bench_map():
    from wowgrass import samples
    from wowgrass.grass.bake import bake_map

    t0 = time.perf_counter()
    data = samples.sample_data_path(tiles=(4, 4))
    print(f"sample world 4x4 ready in {time.perf_counter() - t0:.1f} s ({data})")
    times = {}
    for jobs in (1, 2) + ((4,) if (os.cpu_count() or 1) >= 4 else ()):
        os.environ["WOWGRASS_CACHE"] = _tempdir(f"wowgrass-bench-jobs{jobs}-")
        t0 = time.perf_counter()
        results, failures = bake_map(data, samples.MAP_NAME, jobs=jobs)
        times[jobs] = time.perf_counter() - t0
        inst = sum(r.instances for r in results)
        print(f"16-tile bake --jobs {jobs}: {times[jobs] * 1e3:8.1f} ms  ({len(results)} tiles, {inst} instances, "
              f"{len(failures)} failures)")
    for jobs in sorted(times)[1:]:
        print(f"--jobs {jobs} speed-up over --jobs 1: {times[1] / times[jobs]:.2f}x  (CPUs: {os.cpu_count()})")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
