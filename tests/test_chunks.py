import struct

import pytest

from wowgrass.errors import FormatError, TruncatedError
from wowgrass.formats.chunks import (disk_tag, iter_chunks, read_chunks, read_header, sniff, tag_u32,
                                     write_chunk)

# MVER (version 18) then an MTEX holding "a.blp\0", written by hand:
#   'REVM' size=4 u32 18 | 'XETM' size=6 "a.blp\0"
HAND = b"REVM" + b"\x04\x00\x00\x00" + b"\x12\x00\x00\x00" + b"XETM" + b"\x06\x00\x00\x00" + b"a.blp\x00"


def test_iter_chunks_reads_reversed_tags_in_reading_order():
    chunks = read_chunks(HAND)
    assert [c.tag for c in chunks] == [b"MVER", b"MTEX"]
    assert [c.offset for c in chunks] == [0, 12]
    assert [c.size for c in chunks] == [4, 6]
    assert bytes(chunks[1].payload) == b"a.blp\0"
    assert chunks[1].data_offset == 20 and chunks[1].end == len(HAND)


def test_write_chunk_matches_hand_bytes():
    assert write_chunk(b"MVER", struct.pack("<I", 18)) + write_chunk(b"MTEX", b"a.blp\0") == HAND
    # declared size can differ from the payload (MCLQ declares 0)
    assert write_chunk(b"MCLQ", b"xy", size=0) == b"QLCM\x00\x00\x00\x00xy"


def test_tag_helpers():
    assert disk_tag(b"MCNK") == b"KNCM"
    assert tag_u32(b"MVER") == struct.unpack("<I", b"REVM")[0]
    assert sniff(HAND) and not sniff(b"MVER")
    with pytest.raises(ValueError):
        disk_tag(b"MCN")


def test_range_walk():
    chunks = read_chunks(HAND, start=12)
    assert [c.tag for c in chunks] == [b"MTEX"]
    assert read_chunks(HAND, end=12)[0].tag == b"MVER"
    with pytest.raises(FormatError):
        read_chunks(HAND, start=5, end=999)


@pytest.mark.parametrize("cut", range(1, len(HAND)))
def test_every_truncation_raises_truncated_error(cut):
    if cut == 12:   # a clean chunk boundary is a valid (shorter) chunk list
        assert len(read_chunks(HAND[:cut])) == 1
        return
    with pytest.raises(TruncatedError) as exc:
        read_chunks(HAND[:cut], path="x.adt")
    assert "x.adt" in str(exc.value)


def test_size_past_end_names_offset_and_sizes():
    bad = HAND[:16] + b"\xff\x00\x00\x00" + HAND[20:]
    with pytest.raises(TruncatedError) as exc:
        read_chunks(bad, path="bad.adt")
    assert exc.value.offset == 12
    assert "declares 255 bytes" in str(exc.value) and "bad.adt" in str(exc.value)


def test_read_header_limit():
    assert read_header(HAND, 12) == (b"MTEX", 6)
    with pytest.raises(TruncatedError):
        read_header(HAND, 12, limit=20)


def test_iter_chunks_accepts_memoryview_and_bytearray():
    assert [c.tag for c in iter_chunks(memoryview(bytearray(HAND)))] == [b"MVER", b"MTEX"]
