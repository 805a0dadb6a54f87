"""MPQ extraction speed: wowgrass vs StormLib (libstorm9 via ctypes) vs mpyq.

Builds a ~50 MB archive of ~200 zlib-compressed files with a 262,144-entry hash table in a temp
folder (with wowgrass's writer), then times, best of several runs:

* open: open the archive (header + decrypted tables);
* read all: read every file into memory (after open);
* total: open + read all (what ``extract`` costs);
* open + lookup: open the archive and read one small file's bytes by name.

Targets: wowgrass total within 1.25x of StormLib and at least 2x faster than mpyq; open + lookup
under 50 ms. Run: ``.venv/bin/python benchmarks/bench_mpq.py [--files 200] [--mb 50]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from wowgrass.formats.mpq import MpqArchive, write_mpq_file  # noqa: E402


def make_files(n: int, total_mb: float, seed: int = 0) -> dict[str, bytes]:
    """Game-like payloads: partly compressible (small alphabets, repeats), partly noisy."""
    rng = np.random.default_rng(seed)
    sizes = rng.lognormal(0, 0.6, n)
    sizes = (sizes / sizes.sum() * total_mb * 1e6).astype(int) + 64
    sizes += sizes % 4096 == 0      # mpyq miscounts sectors of files that fill their last one
    words = [bytes(rng.integers(97, 123, rng.integers(3, 10)).astype(np.uint8)) for _ in range(500)]
    files = {}
    for i, size in enumerate(sizes):
        kind = i % 3
        if kind == 0:       # low-entropy binary (like heights/alpha maps)
            data = (rng.integers(0, 24, size) + rng.integers(0, 2, size) * 100).astype(np.uint8).tobytes()
        elif kind == 1:     # text-like
            idx = rng.integers(0, len(words), size // 5 + 1)
            data = b" ".join(words[j] for j in idx)[:size]
        else:               # noisy (textures), still compressible in every sector: mpyq cannot read
            data = rng.integers(0, 160, size, dtype=np.uint8).tobytes()   # raw mid-file sectors
        files[f"World\\Maps\\Bench\\file_{i:04d}.{['adt', 'txt', 'blp'][kind]}"] = data
    files["DBFilesClient\\Small.dbc"] = b"WDBC" + bytes(60)
    return files


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--mb", type=float, default=50.0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)

    import _storm

    storm = _storm.load()
    try:
        import mpyq
    except ImportError:
        mpyq = None

    files = make_files(args.files, args.mb)
    names = list(files)
    small = "DBFilesClient\\Small.dbc"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.mpq"
        t = time.perf_counter()
        write_mpq_file(path, files, compression="zlib", hash_table_size=262144)
        build_s = time.perf_counter() - t
        size_mb = path.stat().st_size / 1e6
        plain_mb = sum(map(len, files.values())) / 1e6
        print(f"archive: {len(files)} files, {plain_mb:.1f} MB plain, {size_mb:.1f} MB packed, "
              f"hash table 262144 entries, built in {build_s:.2f} s")

        results = {}

        # wowgrass -----------------------------------------------------------------------------
        def wg_open():
            MpqArchive.open(path).close()

        def wg_total():
            with MpqArchive.open(path) as a:
                for n in names:
                    a.read(n)

        def wg_lookup():
            with MpqArchive.open(path) as a:
                a.read(small)

        with MpqArchive.open(path) as a:
            assert all(a.read(n) == files[n] for n in names), "wowgrass read back different bytes"
        results["wowgrass"] = (best(wg_open, args.repeat), best(wg_total, args.repeat), best(wg_lookup, args.repeat))

        # StormLib -----------------------------------------------------------------------------
        if storm is not None:
            def st_open():
                storm.close(storm.open(path, check_crc=False))

            def st_total():
                h = storm.open(path, check_crc=False)
                try:
                    for n in names:
                        storm.read(h, n)
                finally:
                    storm.close(h)

            def st_lookup():
                h = storm.open(path, check_crc=False)
                try:
                    storm.read(h, small)
                finally:
                    storm.close(h)

            h = storm.open(path)
            assert all(storm.read(h, n) == files[n] for n in names), "StormLib read back different bytes"
            storm.close(h)
            results["StormLib"] = (best(st_open, args.repeat), best(st_total, args.repeat), best(st_lookup, args.repeat))
        else:
            print("StormLib: libstorm.so.9 not loadable, skipped")

        # mpyq ---------------------------------------------------------------------------------
        if mpyq is not None:
            def mq_open():
                mpyq.MPQArchive(str(path), listfile=False)

            def mq_total():
                arc = mpyq.MPQArchive(str(path), listfile=False)
                for n in names:
                    arc.read_file(n)

            def mq_lookup():
                mpyq.MPQArchive(str(path), listfile=False).read_file(small)

            arc = mpyq.MPQArchive(str(path), listfile=False)
            assert all(arc.read_file(n) == files[n] for n in names), "mpyq read back different bytes"
            results["mpyq"] = (best(mq_open, 1), best(mq_total, 1), best(mq_lookup, 1))
        else:
            print("mpyq: not installed (pip install -e '.[bench]'), skipped")

    print()
    print(f"{'reader':10} {'open':>10} {'read all':>10} {'total':>10} {'open+lookup':>12}")
    for name, (o, tot, lk) in results.items():
        print(f"{name:10} {o * 1e3:8.1f}ms {(tot - o) * 1e3:8.1f}ms {tot * 1e3:8.1f}ms {lk * 1e3:10.1f}ms")
    print()
    wg = results["wowgrass"]
    if "StormLib" in results:
        r = wg[1] / results["StormLib"][1]
        print(f"wowgrass / StormLib total: {r:.2f}x  (target <= 1.25x: {'met' if r <= 1.25 else 'NOT met'})")
    if "mpyq" in results:
        r = results["mpyq"][1] / wg[1]
        print(f"mpyq / wowgrass total:     {r:.2f}x  (target >= 2x: {'met' if r >= 2 else 'NOT met'})")
    print(f"wowgrass open + lookup:    {wg[2] * 1e3:.1f} ms (target < 50 ms: {'met' if wg[2] < 0.05 else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
