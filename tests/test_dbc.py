"""WDBC reader/writer: hand-annotated bytes, round trips, strict and lenient validation."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from dbc_builders import dbc_bytes, doodad_112, doodad_335, string_block, texture_335
from wowgrass.errors import FormatError, TruncatedError, UnsupportedError
from wowgrass.formats.dbc import (
    DbcFile,
    DbcStringBlock,
    build_string_block,
    read_table,
    schema_for,
    sniff,
    write_dbc,
)

# A 2-record, 3-field GroundEffectDoodad (1.12 layout), one comment per field.
HAND = bytes.fromhex(
    "57444243"  # 'WDBC'
    "02000000"  # recordCount 2
    "03000000"  # fieldCount 3
    "0c000000"  # recordSize 12
    "0a000000"  # stringBlockSize 10
    "01000000" "00000000" "01000000"  # ID 1, DoodadIdTag 0, Doodadpath -> 1 "Abc.mdl"
    "02000000" "01000000" "00000000"  # ID 2, DoodadIdTag 1, Doodadpath -> 0 ""
    "00" "4162632e6d646c" "00" "00"  # "", "Abc.mdl", one spare NUL
)


def test_hand_annotated_bytes():
    f = DbcFile.from_bytes(HAND, "hand.dbc")
    assert (f.record_count, f.field_count, f.record_size, f.string_block_size) == (2, 3, 12, 10)
    assert f.raw.dtype == np.dtype("<u4") and f.raw.shape == (2, 3)
    assert f.raw.tolist() == [[1, 0, 1], [2, 1, 0]]
    assert f.string(1) == "Abc.mdl" and f.string(0) == "" and f.string(3) == "c.mdl"
    assert f.strings([1, 0, 1]) == ["Abc.mdl", "", "Abc.mdl"]
    assert f.warnings == []
    typed = f.with_schema(schema_for("GroundEffectDoodad", "1.12"))
    assert typed.records["DoodadIdTag"].tolist() == [0, 1]
    assert typed.column_names() == ["ID", "DoodadIdTag", "Doodadpath"]
    assert typed.columns_flat()["Doodadpath"] == ["Abc.mdl", ""]
    assert typed.row_index(2) == 1
    with pytest.raises(KeyError):
        typed.row_index(3)


def test_records_are_zero_copy_views():
    data = texture_335()
    f, det = read_table(data, "GroundEffectTexture.dbc")
    assert det.build == "3.3.5"
    assert not f.records.flags.owndata and not f.raw.flags.owndata
    assert f.records["DoodadID"].shape == (5, 4)
    assert f.records.dtype.itemsize == 44


@pytest.mark.parametrize("make", [doodad_112, doodad_335, texture_335])
def test_round_trip_raw_and_structured(make):
    data = make()
    f, _ = read_table(data, "GroundEffectTexture.dbc" if make is texture_335 else "GroundEffectDoodad.dbc")
    assert write_dbc(f.raw, f.string_block) == data
    assert write_dbc(f.records, f.string_block) == data


def test_writer_signed_and_errors():
    rows = np.array([[1, -1, 5], [2, 0, 7]], dtype=np.int64)
    out = write_dbc(rows)
    f = DbcFile.from_bytes(out)
    assert f.raw[0, 1] == 0xFFFFFFFF and f.string_block == b"\0"
    assert write_dbc(np.array([[0xFFFFFFFF]], dtype=np.int64))[20:24] == b"\xff\xff\xff\xff"
    with pytest.raises(ValueError, match="do not fit"):
        write_dbc(np.array([[2**33]], dtype=np.int64))
    with pytest.raises(ValueError):
        write_dbc(np.zeros(3, dtype=np.int32))
    with pytest.raises(ValueError, match="4 bytes"):
        write_dbc(np.zeros(2, dtype=[("a", "<u2")]))
    big_endian = np.array([(1, 2)], dtype=[("a", ">u4"), ("b", ">i4")])
    assert DbcFile.from_bytes(write_dbc(big_endian)).raw.tolist() == [[1, 2]]


def test_string_block_dedup():
    sb = DbcStringBlock()
    assert sb.add("") == 0
    a = sb.add("ElwGra01.mdl")
    assert sb.add("ElwGra01.mdl") == a == 1
    b = sb.add("x")
    assert bytes(sb) == b"\0ElwGra01.mdl\0x\0" and b == 14 and len(sb) == 16
    block, offs = build_string_block(["a", "b", "a", ""])
    assert block == b"\0a\0b\0" and offs == [1, 3, 1, 0]
    with pytest.raises(ValueError):
        sb.add("bad\0name")


def test_truncation_sweep():
    # every prefix of a valid file is a FormatError subclass, never anything else
    for n in range(len(HAND)):
        with pytest.raises(FormatError):
            DbcFile.from_bytes(HAND[:n], "cut.dbc")


@pytest.mark.parametrize("make", [texture_335, doodad_112, doodad_335])
def test_truncation_sweep_typed(make):
    data = make()
    table = "GroundEffectTexture.dbc" if make is texture_335 else "GroundEffectDoodad.dbc"
    for n in range(len(data)):
        with pytest.raises(FormatError):
            read_table(data[:n], table)


def test_truncated_records_message():
    data = dbc_bytes([[1, 2, 3]] * 4)[:40]
    with pytest.raises(TruncatedError, match=r"4 records × 12 bytes") as e:
        DbcFile.from_bytes(data, "t.dbc")
    assert e.value.path == "t.dbc" and e.value.offset == 20


def test_wrong_magic_and_unsupported_versions():
    with pytest.raises(FormatError, match="not a DBC file") as e:
        DbcFile.from_bytes(b"XXXX" + HAND[4:], "x.dbc")
    assert not isinstance(e.value, UnsupportedError)
    with pytest.raises(UnsupportedError, match="WDB2"):
        DbcFile.from_bytes(b"WDB2" + HAND[4:])
    assert sniff(HAND) and not sniff(b"MPQ\x1a")


def test_impossible_counts_fail_before_allocating():
    huge = struct.pack("<4s4I", b"WDBC", 0xFFFFFFFF, 3, 12, 1) + b"\0" * 32
    with pytest.raises(TruncatedError):
        DbcFile.from_bytes(huge)
    fields_too_many = struct.pack("<4s4I", b"WDBC", 1, 0x40000000, 12, 1) + b"\0" * 13
    with pytest.raises(FormatError, match="fields need"):
        DbcFile.from_bytes(fields_too_many)
    size_zero = struct.pack("<4s4I", b"WDBC", 5, 0, 0, 1) + b"\0"
    with pytest.raises(FormatError, match="size 0"):
        DbcFile.from_bytes(size_zero)
    # no records, but a field count no record size can hold (the fuzzer's 21-byte file: 2**32-1 fields)
    no_records = struct.pack("<4s4I", b"WDBC", 0, 0xFFFFFFFF, 0xFFFF, 1) + b"\0"
    with pytest.raises(FormatError, match="fields are implausible"):
        DbcFile.from_bytes(no_records)


def test_record_size_not_fields_times_four_is_kept_as_bytes():
    data = struct.pack("<4s4I", b"WDBC", 2, 1, 6, 1) + bytes(range(12)) + b"\0"
    f = DbcFile.from_bytes(data)
    assert f.raw.shape == (2, 6) and f.raw.dtype == np.uint8
    assert any("not 4 ×" in w for w in f.warnings)
    assert f.ids().tolist() == [0x03020100, 0x09080706]


def test_string_offset_out_of_range():
    block, offs = string_block(["ElwGra01.mdl"])
    data = dbc_bytes([[1, 0, offs[0]], [2, 1, 999]], block)
    f = DbcFile.from_bytes(data, "bad.dbc")  # untyped: the reader cannot know which fields are strings
    with pytest.raises(FormatError, match="1 Doodadpath string offsets outside") as e:
        f.with_schema(schema_for("GroundEffectDoodad", "1.12"))
    assert e.value.offset == 20 + 12 + 8  # row 1, field 2
    with pytest.raises(FormatError, match="outside"):
        f.string(999)
    lenient = f.with_schema(schema_for("GroundEffectDoodad", "1.12"), strict=False)
    assert any("outside" in w for w in lenient.warnings)


def test_header_understating_string_block_strict_vs_lenient():
    block, offs = string_block(["ElwGra01.mdl", "ElwGra02.mdl"])
    data = dbc_bytes([[1, 0, offs[0]], [2, 1, offs[1]]], block, string_block_size=14)  # covers the first only
    with pytest.raises(FormatError, match="strict=False, reads them"):
        read_table(data, "GroundEffectDoodad.dbc", build="1.12")
    f, det = read_table(data, "GroundEffectDoodad.dbc", build="1.12", strict=False)
    assert f.strings(f.records["Doodadpath"]) == ["ElwGra01.mdl", "ElwGra02.mdl"]
    assert f.string_block_size == 14 and len(f.string_block) == len(block)
    assert any("understates" in w or "declares a 14-byte" in w for w in f.warnings)


def test_header_overstating_string_block():
    data = dbc_bytes([[1, 0, 0]], b"\0", string_block_size=50)
    with pytest.raises(TruncatedError, match="declares 50 bytes"):
        DbcFile.from_bytes(data)
    f = DbcFile.from_bytes(data, strict=False)
    assert f.string_block == b"\0" and f.warnings


def test_trailing_bytes_are_a_warning_and_unterminated_block_an_error():
    f = DbcFile.from_bytes(HAND + b"junk")
    assert f.warnings == ["4 bytes after the declared string block ignored"]
    unterminated = dbc_bytes([[1, 0, 1]], b"\0abc")
    with pytest.raises(FormatError, match="does not end with a NUL"):
        DbcFile.from_bytes(unterminated)
    lenient = DbcFile.from_bytes(unterminated, strict=False)
    with pytest.raises(TruncatedError, match="not terminated"):
        lenient.string(1)


def test_empty_table():
    data = dbc_bytes([], b"", field_count=3)
    f = DbcFile.from_bytes(data)
    assert f.record_count == 0 and f.raw.shape == (0, 3)
    assert f.string(0) == ""
