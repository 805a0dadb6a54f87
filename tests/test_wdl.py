"""WDL v18 (formats/wdl.py): round trips of the 1.12 and 2.4.3/3.3.5 layouts, the heights an ADT
gives, and hostile or truncated files raising FormatError with an offset."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from wowgrass.errors import FormatError
from wowgrass.formats.wdl import WdlFile, sniff, wdl_tile_from_adt, write_wdl

MAOF_BYTES = 64 * 64 * 4                 # one u32 offset a tile
MARE_BYTES = (17 * 17 + 16 * 16) * 2     # outer and inner heights, int16: 1090


def _wdl(n=5, seed=0, extra=()):
    rng = np.random.default_rng(seed)
    cells = rng.choice(64 * 64, n, replace=False)
    tiles = np.stack([cells % 64, cells // 64], axis=1)
    return WdlFile(tiles, rng.integers(-2000, 3000, (n, 17, 17)), rng.integers(-2000, 3000, (n, 16, 16)),
                   rng.integers(0, 1 << 16, (n, 16)), extra_chunks=list(extra))


def test_round_trip_keeps_heights_holes_and_extra_chunks():
    w = _wdl(7, extra=[(b"MWMO", b"a.wmo\0"), (b"MWID", b"\0\0\0\0"), (b"MODF", b"")])
    data = write_wdl(w)
    back = WdlFile.from_bytes(data, "t.wdl")
    order = np.lexsort((w.tiles[:, 0], w.tiles[:, 1]))
    assert np.array_equal(back.tiles, w.tiles[order])
    for a in ("outer", "inner", "holes"):
        assert np.array_equal(getattr(back, a), getattr(w, a)[order]), a
    assert back.has_maho.all() and back.extra_chunks == w.extra_chunks
    assert write_wdl(back) == data and sniff(data)
    c, r = (int(v) for v in w.tiles[3])
    assert back.index(c, r) >= 0 and back.present[r, c] and back.present.sum() == 7
    assert np.array_equal(back.outer[back.index(c, r)], w.outer[3])


def test_the_1_12_layout_has_no_maho_and_reads_as_no_holes():
    w = _wdl(4)
    data = write_wdl(w, maho=False)
    assert b"OHAM" not in data
    back = WdlFile.from_bytes(data)
    assert not back.has_maho.any() and not back.holes.any()
    order = np.lexsort((w.tiles[:, 0], w.tiles[:, 1]))
    assert np.array_equal(back.outer, w.outer[order])
    assert write_wdl(back, maho=False) == data


def test_maof_holds_absolute_offsets_of_mare_headers_row_major():
    w = WdlFile([(7, 3), (2, 5)], np.zeros((2, 17, 17)), np.zeros((2, 16, 16)), np.zeros((2, 16)))
    data = write_wdl(w)
    maof = 12 + 8  # MVER (12), then MAOF's header
    off_73 = struct.unpack_from("<I", data, maof + (3 * 64 + 7) * 4)[0]  # [row 3][col 7]
    off_25 = struct.unpack_from("<I", data, maof + (5 * 64 + 2) * 4)[0]
    assert off_73 == maof + MAOF_BYTES and data[off_73:off_73 + 4] == b"ERAM"
    assert off_25 == off_73 + 8 + MARE_BYTES + 8 + 32 and data[off_25:off_25 + 4] == b"ERAM"
    assert struct.unpack_from("<I", data, off_73 + 4)[0] == MARE_BYTES


def test_an_adts_wdl_entry_is_its_chunk_corners_and_centres():
    from wowgrass.formats.adt import VERTEX_ROWCOL
    from wowgrass.render.world.synthetic import synthetic_tile

    tile = synthetic_tile(32, 32, hole_chunk=16 * 3 + 5, relief=40.0)  # chunk x 5, y 3 all holes
    outer, inner, holes = wdl_tile_from_adt(tile)
    h = tile.abs_heights
    c = lambda iy, ix: iy * 16 + ix  # noqa: E731  (synthetic tiles keep MCNK order)
    vid = {tuple(rc): i for i, rc in enumerate(VERTEX_ROWCOL.tolist())}
    assert outer[0, 0] == np.round(h[c(0, 0), vid[(0.0, 0.0)]])
    assert outer[2, 7] == np.round(h[c(2, 7), vid[(0.0, 0.0)]])
    assert outer[16, 16] == np.round(h[c(15, 15), vid[(8.0, 8.0)]])
    assert outer[16, 3] == np.round(h[c(15, 3), vid[(8.0, 0.0)]])
    assert outer[9, 16] == np.round(h[c(9, 15), vid[(0.0, 8.0)]])
    assert inner[4, 11] == np.round(h[c(4, 11), vid[(4.0, 4.0)]])
    assert holes[3] == 1 << 5 and holes.sum() == 1 << 5
    w = WdlFile([(32, 32)], outer[None], inner[None], holes[None])
    assert WdlFile.from_bytes(write_wdl(w)).hole_chunks()[0, 3, 5]


def test_errors_name_the_offset():
    good = write_wdl(_wdl(3))
    cases = {
        "version 17": good[:8] + struct.pack("<I", 17) + good[12:],
        "no MAOF": good[:12],
        "MAOF: expected": good[:12] + b"FOAM" + struct.pack("<I", 8) + b"\0" * 8,
        "holds no MARE": None,
        "runs past the end": None,
        "MARE of tile": None,
        "does not start": b"LHDM" + good[4:],
    }
    maof = 20
    off = [struct.unpack_from("<I", good, maof + 4 * i)[0] for i in range(4096)]
    first = next(i for i, o in enumerate(off) if o)
    b = bytearray(good)
    struct.pack_into("<I", b, maof + 4 * first, 40)  # into the MAOF itself
    cases["holds no MARE"] = bytes(b)
    b = bytearray(good)
    struct.pack_into("<I", b, maof + 4 * first, len(good) - 100)
    cases["runs past the end"] = bytes(b)
    b = bytearray(good)
    struct.pack_into("<I", b, off[first] + 4, 100)  # a MARE too small for 545 heights
    cases["MARE of tile"] = bytes(b)
    for msg, data in cases.items():
        with pytest.raises(FormatError, match=msg) as e:
            WdlFile.from_bytes(data, "bad.wdl")
        assert e.value.offset is not None and "bad.wdl" in str(e.value), msg


def test_truncation_sweep_and_random_damage_end_in_format_errors():
    data = write_wdl(_wdl(6, seed=3))
    for cut in list(range(0, 60)) + list(range(60, len(data), 331)) + [len(data) - 1]:
        try:
            WdlFile.from_bytes(data[:cut], "t.wdl")
        except FormatError as exc:
            assert exc.offset is not None
    rng = np.random.default_rng(5)
    for _ in range(300):
        b = bytearray(data)
        for _ in range(rng.integers(1, 6)):
            i = int(rng.integers(0, len(b) - 4))
            struct.pack_into("<I", b, i, int(rng.choice([0, 1, 0xFFFFFFFF, 0x7FFFFFFF, len(b), int(rng.integers(0, 1 << 32))])))
        try:
            w = WdlFile.from_bytes(bytes(b), "t.wdl")
            w.hole_chunks()
        except FormatError as exc:
            assert exc.offset is not None
