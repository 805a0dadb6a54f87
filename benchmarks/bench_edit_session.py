"""The workbench's library half, timed: an edit session's brush strokes with their grass placed again
(what a window waits for between an edit and its upload), pick, undo, save, the client-maps scan for
suggestions, and the file watcher's delay from a save to its report (events and polling).

    python benchmarks/bench_edit_session.py [--real] [--strokes 40] [--json]

The sample world (3.3.5, 2x1 tiles, built into a temporary folder) always; with --real and
WOWGRASS_REALDATA the real continent4229.adt (3.3.5 tables) too. Prints medians and p90s in ms.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def ms(xs) -> dict:
    return {"median_ms": round(statistics.median(xs) * 1e3, 3), "p90_ms": round(pct(xs, 90) * 1e3, 3),
            "max_ms": round(max(xs) * 1e3, 3), "n": len(xs)}


def strokes(session, tile, n: int, radius: float, placement_chunks=True) -> dict:
    """n brush dabs (exclude, then clear) over the tile's cells, each followed by placing the changed chunks."""
    t = session.tile(tile)
    rng = np.random.default_rng(1)
    centres = t.cell_centres().reshape(-1, 2)
    edit, place, both = [], [], []
    for k in range(n):
        x, y = centres[rng.integers(len(centres))]
        t0 = time.perf_counter()
        ch = session.exclude(float(x), float(y), radius, clear=bool(k % 2))
        t1 = time.perf_counter()
        for key, chunks in ch.chunks.items():
            session.place_chunks(key, chunks)
        t2 = time.perf_counter()
        edit.append(t1 - t0)
        place.append(t2 - t1)
        both.append(t2 - t0)
    return {"edit": ms(edit), "place_changed_chunks": ms(place), "edit_to_placed": ms(both)}


def bench_session(data, map_name, tile, n, placement) -> dict:
    from wowgrass.workbench.session import EditSession

    t0 = time.perf_counter()
    s = EditSession(data, map_name, placement=placement)
    s.tile(tile)
    opened = time.perf_counter() - t0
    t0 = time.perf_counter()
    whole = s.tile_instances(tile)
    whole_s = time.perf_counter() - t0
    out = {"placement": placement, "open_s": round(opened, 3), "tile_instance_count": len(whole),
           "place_whole_tile_ms": round(whole_s * 1e3, 2)}
    out["brush_r8"] = strokes(s, tile, n, 8.0)
    out["brush_r25"] = strokes(s, tile, max(4, n // 4), 25.0)
    centres = s.tile(tile).cell_centres().reshape(-1, 2)
    picks = []
    for x, y in centres[:: max(1, len(centres) // 40)][:40]:
        t0 = time.perf_counter()
        s.cell_info(s.cell_at(float(x), float(y)))
        picks.append(time.perf_counter() - t0)
    out["pick_cell_at_and_info"] = ms(picks)
    undo = []
    while s.can_undo:
        t0 = time.perf_counter()
        s.undo()
        undo.append(time.perf_counter() - t0)
    out["undo"] = ms(undo)
    s.redo()
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        from wowgrass.workbench.disk import SessionFiles

        res = SessionFiles(s).save(tmp)
        out["save_one_tile_ms"] = round((time.perf_counter() - t0) * 1e3, 2)
        out["saved_changed_byte_count"] = res["changed_byte_count"]
    return out


def bench_watch(poll: bool, n: int = 10) -> dict:
    from wowgrass.workbench.watch import FileWatcher

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        q: queue.Queue = queue.Queue()
        delays = []
        with FileWatcher([root], lambda paths: q.put(time.perf_counter()), poll=poll, debounce_ms=50) as w:
            for k in range(n):
                p = root / f"Map_{k}_1.adt"
                t0 = time.perf_counter()
                p.write_bytes(b"x" * 1000)
                delays.append(q.get(timeout=30) - t0)
            mode = w.mode
    return {"mode": mode, **ms(delays)}


def bench_scan(real: Path, n: int) -> dict:
    """The suggestion scan over an MPQ holding ``n`` copies of the real continent4229.adt as one map's
    tiles (zlib sectors, as a client's archives), with the real 3.3.5 tables: reading and
    decompressing each tile, then its MTEX/MCLY records."""
    from wowgrass.edit.suggest import client_effects
    from wowgrass.formats.mpq import write_mpq
    from wowgrass.formats.wdt import WdtFile, write_wdt
    from wowgrass.game.data import open_data

    raw = (real / "adt" / "continent4229.adt").read_bytes()
    wdt = WdtFile(main=np.zeros((64, 64), bool))
    files = {}
    for k in range(n):
        c, r = k % 64, k // 64
        wdt.main[r, c] = True
        files[f"World\\Maps\\Bench\\Bench_{c}_{r}.adt"] = raw
    files["World\\Maps\\Bench\\Bench.wdt"] = write_wdt(wdt)
    for name in ("GroundEffectTexture.dbc", "GroundEffectDoodad.dbc"):
        files[f"DBFilesClient\\{name}"] = (real / "dbc" / "3.3.5" / name).read_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "Data"
        data_dir.mkdir()
        (data_dir / "common.MPQ").write_bytes(write_mpq(files, compression="zlib"))
        with open_data(data_dir) as data:
            t0 = time.perf_counter()
            scan = client_effects(data, refresh=True)
            first = time.perf_counter() - t0
            t0 = time.perf_counter()
            client_effects(data)
            cached = time.perf_counter() - t0
    return {"tile_count": scan.tile_count, "adt_bytes": len(raw), "first_s": round(first, 3),
            "ms_per_tile": round(first / max(1, scan.tile_count) * 1e3, 2), "cached_ms": round(cached * 1e3, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--strokes", type=int, default=40)
    ap.add_argument("--real", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--scan-tiles", type=int, default=200, help="--real: tiles in the suggestion scan's MPQ")
    a = ap.parse_args()
    from wowgrass.edit.suggest import client_effects
    from wowgrass.game.data import open_data
    from wowgrass.samples import MAP_NAME, build_sample_world

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("WOWGRASS_CACHE", str(Path(tmp) / "cache"))
        t0 = time.perf_counter()
        client = build_sample_world(Path(tmp) / "w", "3.3.5", (2, 1), seed=0)
        out["sample_world_build_s"] = round(time.perf_counter() - t0, 2)
        with open_data(client) as data:
            for placement in ("client", "coverage"):
                out[f"sample_{placement}"] = bench_session(data, MAP_NAME, (31, 32), a.strokes, placement)
            t0 = time.perf_counter()
            scan = client_effects(data, refresh=True)
            first = time.perf_counter() - t0
            t0 = time.perf_counter()
            client_effects(data)
            out["suggest_scan"] = {"tile_count": scan.tile_count, "first_s": round(first, 3),
                                   "cached_ms": round((time.perf_counter() - t0) * 1e3, 2)}
        if a.real and os.environ.get("WOWGRASS_REALDATA"):
            real = Path(os.environ["WOWGRASS_REALDATA"])
            root = Path(tmp) / "real"
            maps = root / "World" / "Maps" / "continent"
            maps.mkdir(parents=True)
            shutil.copy(real / "adt" / "continent4229.adt", maps / "continent_42_29.adt")
            shutil.copy(real / "adt" / "continent.wdt", maps / "continent.wdt")
            (root / "DBFilesClient").mkdir()
            for name in ("GroundEffectTexture.dbc", "GroundEffectDoodad.dbc"):
                shutil.copy(real / "dbc" / "3.3.5" / name, root / "DBFilesClient" / name)
            with open_data(root) as data:
                for placement in ("client", "coverage"):
                    out[f"continent4229_{placement}"] = bench_session(data, "continent", (42, 29), a.strokes, placement)
    if a.real and os.environ.get("WOWGRASS_REALDATA"):
        out["suggest_scan_mpq"] = bench_scan(Path(os.environ["WOWGRASS_REALDATA"]), a.scan_tiles)
    out["watch_events"] = bench_watch(False)
    out["watch_polling"] = bench_watch(True)
    if a.json:
        print(json.dumps(out, indent=1))
        return
    for k, v in out.items():
        print(f"{k}: {json.dumps(v)}")


if __name__ == "__main__":
    main()
