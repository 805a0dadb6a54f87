"""Decode a 512×512 DXT5 BLP with all its mips; target: under 10 ms.

The file is made with wowgrass's own writer in a temporary folder. Prints the best and median of
several runs, the target and the ratio; also times the encoder and the other decoders for context.
Run: ``.venv/bin/python benchmarks/bench_blp.py``.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from wowgrass.formats.blp import BlpImage, write_blp

TARGET_MS = 10.0
RUNS = 30


def texture(size=512, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:size, 0:size] / size
    rgba = np.empty((size, size, 4), np.uint8)
    rgba[..., 0] = 60 + 60 * np.sin(9 * x)
    rgba[..., 1] = 140 + 80 * np.cos(7 * y) * np.sin(5 * x)
    rgba[..., 2] = 40
    rgba[..., 3] = np.where(rng.random((size, size)) < 0.3, 0, 255)
    rgba[..., :3] += rng.integers(0, 20, (size, size, 3), dtype=np.uint8)
    return rgba


def time_decode(data: bytes) -> list[float]:
    out = []
    for _ in range(RUNS):
        t = time.perf_counter()
        img = BlpImage.from_bytes(data)
        for m in img.mips:
            pass
        out.append((time.perf_counter() - t) * 1000)
    return out


def main() -> int:
    rgba = texture()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench_dxt5.blp"
        t = time.perf_counter()
        path.write_bytes(write_blp(rgba, "dxt5"))
        enc_ms = (time.perf_counter() - t) * 1000
        data = path.read_bytes()
    img = BlpImage.from_bytes(data)
    print(f"file: 512×512 DXT5, {img.mip_count} mips, {len(data):,} bytes (encoded in {enc_ms:.1f} ms)")
    times = time_decode(data)
    best, med = min(times), statistics.median(times)
    print(f"decode all mips: best {best:.2f} ms, median {med:.2f} ms over {RUNS} runs; "
          f"target {TARGET_MS:.0f} ms; median/target = {med / TARGET_MS:.2f}")
    for enc in ("dxt1", "palette", "raw"):
        other = time_decode(write_blp(rgba, enc))
        print(f"  for context, {enc:7s}: median {statistics.median(other):.2f} ms")
    ok = med < TARGET_MS
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
