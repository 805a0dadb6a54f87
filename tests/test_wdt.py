import struct

import numpy as np
import pytest

from wowgrass.errors import FormatError
from wowgrass.formats.wdt import MphdFlags, WdtFile, sniff, write_wdt


def test_real_continent_wdt(realdata):
    data = (realdata / "adt" / "continent.wdt").read_bytes()
    wdt = WdtFile.from_bytes(data, "continent.wdt")
    assert wdt.flags == 0 and not wdt.big_alpha
    assert int(wdt.main.sum()) == 687
    assert wdt.main[29, 42] and wdt.has_tile(42, 29)       # [row][col]
    assert wdt.main[46, 38] and wdt.has_tile(38, 46)
    assert (42, 29) in wdt.tiles()
    assert write_wdt(wdt) == data


def test_main_is_row_major_row_col_on_disk():
    main = np.zeros((64, 64), bool)
    main[3, 7] = True                                      # row 3, column 7
    data = write_wdt(main, flags=0)
    # MVER (12) + MPHD (8 + 32) + MAIN header (8); entry (row*64 + col) * 8
    entry = 12 + 40 + 8 + (3 * 64 + 7) * 8
    assert struct.unpack_from("<I", data, entry)[0] == 1
    assert data.count(b"\x01\x00\x00\x00") >= 1
    wdt = WdtFile.from_bytes(data)
    assert wdt.tiles() == [(7, 3)]


@pytest.mark.parametrize(("flags", "big"), [(0, False), (0x4, True), (0x80, True), (0x2, False), (0x86, True)])
def test_big_alpha_flag(flags, big):
    wdt = WdtFile.from_bytes(write_wdt(np.ones((64, 64), bool), flags=flags))
    assert wdt.big_alpha is big
    assert wdt.flags == flags
    assert wdt.has_vertex_colours is bool(flags & MphdFlags.VERTEX_COLOURS)


def test_round_trip_keeps_extra_chunks_and_flags():
    main = np.random.default_rng(0).random((64, 64)) < 0.3
    wdt = WdtFile(flags=4, main=main, extra_chunks=[(b"MWMO", b"x.wmo\0")])
    data = write_wdt(wdt)
    back = WdtFile.from_bytes(data)
    assert np.array_equal(back.main, main) and back.flags == 4
    assert back.extra_chunks == [(b"MWMO", b"x.wmo\0")]
    assert write_wdt(back) == data
    assert sniff(data)


def test_errors():
    data = write_wdt(np.zeros((64, 64), bool))
    with pytest.raises(FormatError, match="version 17"):
        WdtFile.from_bytes(data[:8] + struct.pack("<I", 17) + data[12:])
    with pytest.raises(FormatError, match="MAIN"):
        WdtFile.from_bytes(data[:52])
    # MAIN of the wrong size
    bad = data[:52] + b"NIAM" + struct.pack("<I", 8) + b"\0" * 8
    with pytest.raises(FormatError, match="MAIN: expected 32768"):
        WdtFile.from_bytes(bad)


def test_truncation_sweep():
    data = write_wdt(np.ones((64, 64), bool), flags=4)
    for cut in list(range(0, 80)) + list(range(80, len(data), 997)) + [len(data) - 1]:
        with pytest.raises(FormatError):
            WdtFile.from_bytes(data[:cut], "t.wdt")
