"""The sample world at scale: banded lattice == whole lattice, parallel build == serial build."""

from __future__ import annotations

import numpy as np
import pytest

from wowgrass.errors import UsageError
from wowgrass.samples import parse_tiles, world_files
from wowgrass.samples.heights import FINE_PER_CHUNK, SampleTerrain

FIELDS = ("fine", "fine_normal", "fine_slope", "fine_dirt", "fine_jitter", "fine_region", "fine_wobble",
          "fine_shade")


def test_each_band_holds_the_whole_lattice_values():
    t = SampleTerrain((2, 3), seed=3)
    whole = t.lattice()
    n = 16 * FINE_PER_CHUNK
    for tr in range(3):
        band = t.band(tr)
        # the rows tile row tr reads: its own plus one each way (central differences)
        lo, hi = tr * n, tr * n + n + 3
        for name in FIELDS:
            got = getattr(band, name)[lo - band.r0:hi - band.r0]
            assert np.array_equal(got, getattr(whole, name)[lo:hi]), (tr, name)


def test_parallel_world_is_the_serial_world():
    serial = world_files("1.12", (2, 3), seed=1)
    steps = []
    parallel = world_files("1.12", (2, 3), seed=1, jobs=2, progress=lambda what, done, total: steps.append(what))
    assert parallel == serial
    assert [s for s in steps if s.startswith("tile ")] == [f"tile {c}_{r}" for r in (31, 32, 33) for c in (31, 32)]


def test_continent_sized_samples_are_accepted():
    assert parse_tiles("26x26") == (26, 26)
    with pytest.raises(UsageError, match="32x32"):
        parse_tiles("33x2")
