"""``export web``: a dense tile's page in headless Chromium: bytes per tile, time to the first frame
(from the navigation's start, everything loaded and drawn), and the frame time.

    python benchmarks/bench_web.py [--three DIR] [--tile 32,32] [--loads 3] [--frames 30] [--json]

--three: the folder of an `npm install three@<pinned>` (default: the tests' cache folder, installed
with npm when missing). The first frame target is 3 s. Software WebGL (SwiftShader) here: a GPU
draws the frames far faster; the load is what the target checks.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def main(argv=None) -> int:
    from test_web import Server   # the tests' static server
    from chromium import Chromium, find_browser

    from wowgrass.export import web as W

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--three", type=Path, default=None)
    ap.add_argument("--tile", default="32,32", help="the sample world's dense tile (coverage placement)")
    ap.add_argument("--loads", type=int, default=3)
    ap.add_argument("--frames", type=int, default=30)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    three = a.three
    if three is None:
        cache = Path.home() / ".cache" / "wowgrass-test" / f"three-{W.THREE_VERSION}"
        if not (cache / "node_modules/three/package.json").is_file():
            subprocess.run(["npm", "install", "--prefix", str(cache), f"three@{W.THREE_VERSION}", "--no-audit",
                            "--no-fund", "--prefer-offline"], check=True, capture_output=True)
        three = cache
    browser = find_browser()
    if browser is None:
        print("no Chromium found (apt-get install chromium)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-web-") as tmp:
        site = Path(tmp) / "site"
        t = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "wowgrass.cli.main", "export", "web", "--tile", a.tile, "-o",
                            str(site), "--three", str(three), "--json", "-q"], capture_output=True, text=True)
        if r.returncode:
            print(r.stderr, file=sys.stderr)
            return 1
        export_s = time.perf_counter() - t
        res = json.loads(r.stdout)
        srv = Server(site)
        loads, stages, frame_ms, grass = [], [], None, 0
        try:
            for k in range(a.loads):
                with Chromium(browser) as b:   # a fresh browser each: nothing cached
                    b.navigate(srv.url + f"index.html?load={k}#still=1&ui=0&ratio=1")
                    b.wait_for("window.wowgrass && (wowgrass.ready || wowgrass.errors.length > 0)", 120)
                    state = json.loads(b.evaluate("JSON.stringify({ready: wowgrass.ready, first: wowgrass.firstFrameMs, timings: wowgrass.timings,"
                                                  " errors: wowgrass.errors, grass: wowgrass.grassInstances})"))
                    if not state["ready"] or b.errors():
                        print(f"page errors: {state['errors']} {b.errors()}", file=sys.stderr)
                        return 1
                    loads.append(state["first"])
                    stages.append(state["timings"])
                    grass = state["grass"]
                    if k == a.loads - 1:
                        frame_ms = b.evaluate(f"wowgrass.measure({a.frames})", timeout=600)
        finally:
            srv.close()
    tiles = res["tile_count"]
    out = {"tile": a.tile, "tile_count": tiles, "grass_instance_count": grass, "bytes": res["bytes"],
           "bytes_per_tile": res["tile_bytes"] / tiles, "page_bytes": res["bytes"] - res["tile_bytes"],
           "first_frame_ms": loads, "stages_ms": stages, "first_frame_ms_median": statistics.median(loads),
           "frame_ms": frame_ms, "export_s": export_s, "target_first_frame_ms": 3000,
           "first_frame_ratio_to_target": statistics.median(loads) / 3000.0}
    if a.json:
        print(json.dumps(out, indent=1))
    else:
        print(f"tile {a.tile}: {grass:,} grass instances; {out['bytes_per_tile'] / 1e6:.2f} MB a tile "
              f"(+{out['page_bytes'] / 1e6:.2f} MB page and three.js)")
        print(f"first frame: {', '.join(f'{v:.0f}' for v in loads)} ms (median {out['first_frame_ms_median']:.0f} ms, "
              f"{out['first_frame_ratio_to_target']:.2f}x the 3 s target)")
        last = stages[-1]
        print("stages of the last load (ms since navigation): " + ", ".join(f"{k} {v:.0f}" for k, v in last.items()))
        print(f"frame time: {frame_ms:.1f} ms ({a.frames} frames, each waited for; SwiftShader here)")
        print(f"export: {export_s:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
