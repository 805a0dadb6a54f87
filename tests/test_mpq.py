"""MPQ reader and writer: crypto, headers, round trips over flags and codecs, hostile input, real archives."""

from __future__ import annotations

import bz2
import hashlib
import lzma
import struct
import zlib

import numpy as np
import pytest

from wowgrass.errors import ChecksumError, FormatError, GameFileNotFound, TruncatedError, UnsupportedError, UsageError
from wowgrass.formats import mpq
from wowgrass.formats.mpq import (
    BLOCK_DTYPE,
    HASH_DTYPE,
    KEY_BLOCK_TABLE,
    KEY_HASH_TABLE,
    FileFlags,
    MpqArchive,
    decrypt_bytes,
    decrypt_words,
    encrypt_bytes,
    encrypt_words,
    hash_string,
    write_mpq,
    write_mpq_file,
)

from wowgrass.formats.mpq import dcl_binding as _dcl_binding  # noqa: E402

#: writing PKWARE DCL needs the optional dclimplode binding (no wheel for CPython 3.12+)
NEEDS_DCL = pytest.mark.skipif(_dcl_binding() is None, reason="writing PKWARE DCL needs the optional dclimplode binding")


RNG = np.random.default_rng(7)
TEXT = b"".join(b"line %05d of some grass text\n" % i for i in range(700))        # ~21 KB, 6 sectors
NOISE = RNG.integers(0, 256, 9000, dtype=np.uint8).tobytes()                    # incompressible
FILES = {
    "DBFilesClient\\GroundEffectTexture.dbc": TEXT,
    "World\\NoDXT\\Detail\\ElwGra01.m2": NOISE,
    "small.txt": b"grass",
    "exact4096.bin": bytes(range(256)) * 16,
    "empty.txt": b"",
    "three.bin": b"abc",
}


# --- crypto --------------------------------------------------------------------------------------

def test_table_keys_match_stormlib_constants():
    assert hash_string("(hash table)", 3) == 0xC3AF3770 == KEY_HASH_TABLE
    assert hash_string("(block table)", 3) == 0xEC83B3A3 == KEY_BLOCK_TABLE


def test_hash_is_case_and_slash_insensitive():
    for kind in range(4):
        assert hash_string("World/Maps/Azeroth", kind) == hash_string("WORLD\\maps\\azeroth", kind)


@pytest.mark.parametrize("n", [0, 1, 7, 1023, 1024, 4099, 70001])
def test_vectorized_decrypt_matches_reference_loop(n):
    words = RNG.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    for key in (0, 0xFFFFFFFF, KEY_HASH_TABLE, int(RNG.integers(0, 2**32))):
        ref = np.array(mpq._decrypt_py(words.tolist(), key), np.uint32)
        assert np.array_equal(decrypt_words(words, key), ref)
        assert np.array_equal(encrypt_words(ref, key), words)


def test_byte_encryption_keeps_trailing_bytes():
    data = b"0123456789"
    enc = encrypt_bytes(data, 1234)
    assert enc[8:] == b"89" and enc[:8] != data[:8]
    assert decrypt_bytes(enc, 1234) == data


# --- header --------------------------------------------------------------------------------------

def test_hand_annotated_v1_header():
    data = write_mpq({"a": b"x"}, listfile=False, hash_table_size=16, compression=None)
    hdr = struct.unpack_from("<4sIIHHIIII", data, 0)
    assert hdr[0] == b"MPQ\x1a"          # magic
    assert hdr[1] == 32                  # header size (v1)
    assert hdr[2] == len(data)           # archive size
    assert hdr[3] == 0                   # format version 0 = v1
    assert hdr[4] == 3                   # sector shift: 512 << 3 = 4096
    assert hdr[7] == 16 and hdr[8] == 1  # hash entries, block entries
    assert hdr[5] == 32 + 1 and hdr[6] == hdr[5] + 16 * 16   # file, then hash table, then block table
    a = MpqArchive.from_bytes(data)
    assert a.header.sector_size == 4096 and a.header.header_size == 32


def test_v2_header_fields():
    data = write_mpq(FILES, format_version=1)
    assert struct.unpack_from("<IH", data, 4)[0] == 44
    a = MpqArchive.from_bytes(data)
    assert a.header.format_version == 1 and a.header.hi_block_table_pos == 0
    assert a.read("small.txt") == b"grass"


def _with_big_header(version: int) -> tuple[bytes, dict]:
    """A v3/v4 archive: our v1 layout with a padding file under the longer header."""
    size = mpq.HEADER_SIZES[version]
    files = {"pad": bytes(size), **FILES}
    data = bytearray(write_mpq(files, compression=None))
    st, names = mpq._HEADER_STRUCTS[version]
    old = dict(zip(names[:9], struct.unpack_from("<4sIIHHIIII", data, 0)))
    vals = {n: 0 for n in names}
    vals.update(old, header_size=size, format_version=version, magic=b"MPQ\x1a", md5s=bytes(96))
    if version == 3:
        vals.update(hash_table_size64=old["hash_table_size"] * 16, block_table_size64=old["block_table_size"] * 16)
    st.pack_into(data, 0, *[vals[n] for n in names])
    return bytes(data), files


@pytest.mark.parametrize("version", [2, 3])
def test_v3_v4_headers_are_accepted(version):
    data, files = _with_big_header(version)
    a = MpqArchive.from_bytes(data)
    assert a.header.format_version == version
    assert a.read("three.bin") == b"abc"
    assert a.read("DBFilesClient\\GroundEffectTexture.dbc") == TEXT


def test_het_bet_only_archive_is_unsupported():
    data = bytearray(_with_big_header(2)[0])
    struct.pack_into("<I", data, 0x18, 0)              # no hash table
    struct.pack_into("<Q", data, 0x3C, 0x100)           # HET table position
    with pytest.raises(UnsupportedError, match="HET/BET"):
        MpqArchive.from_bytes(bytes(data))


def test_user_data_block_and_512_alignment():
    body = write_mpq(FILES)
    # header 1024 bytes in, behind a user-data block at 0 that points at it
    user = struct.pack("<4sIII", b"MPQ\x1b", 512, 1024, 16).ljust(1024, b"\0")
    a = MpqArchive.from_bytes(user + body)
    assert a.header.offset == 1024 and a.header.user_data_offset == 0 and a.header.user_data_size == 512
    assert a.read("small.txt") == b"grass"
    # plain header at the second 512-byte boundary, junk before (like a Warcraft III map)
    b = MpqArchive.from_bytes(b"HM3W" + bytes(508) + body)
    assert b.header.offset == 512 and b.header.user_data_offset is None
    assert b.read("three.bin") == b"abc"


def test_v2_high_block_table():
    base = write_mpq(FILES, format_version=1)
    a = MpqArchive.from_bytes(base)
    n = a.header.block_table_size
    data = bytearray(base + bytes(2 * n))                       # all high halves zero
    struct.pack_into("<Q", data, 0x20, len(base))
    b = MpqArchive.from_bytes(bytes(data))
    assert b.header.hi_block_table_pos == len(base)
    assert b.read("three.bin") == b"abc" and b.read("DBFilesClient\\GroundEffectTexture.dbc") == TEXT
    bi = b.lookup("three.bin").block_index
    struct.pack_into("<H", data, len(base) + 2 * bi, 1)         # that file now lies 4 GiB further on
    c = MpqArchive.from_bytes(bytes(data))
    assert c.lookup("three.bin").file_pos == (1 << 32) + a.lookup("three.bin").file_pos
    with pytest.raises(TruncatedError, match="past the end"):
        c.read("three.bin")
    struct.pack_into("<Q", data, 0x20, len(data) - 2)           # high table itself cut short
    with pytest.raises(TruncatedError, match="high block table"):
        MpqArchive.from_bytes(bytes(data))


def test_misaligned_header_is_not_found():
    with pytest.raises(FormatError, match="no MPQ header"):
        MpqArchive.from_bytes(b"x" * 100 + write_mpq(FILES))


# --- writer round trips --------------------------------------------------------------------------

OPTIONS = [
    {},
    {"compression": "bzip2"},
    pytest.param({"compression": "pkware"}, marks=NEEDS_DCL),
    {"compression": "lzma"},
    {"compression": None},
    {"single_unit": True},
    {"single_unit": True, "compression": "bzip2"},
    {"single_unit": True, "compression": None, "encrypt": True},
    {"encrypt": True},
    {"encrypt": True, "fix_key": True},
    {"encrypt": True, "fix_key": True, "compression": None},
    {"encrypt": True, "fix_key": True, "single_unit": True},
    {"sector_crc": True},
    {"sector_crc": True, "encrypt": True, "fix_key": True, "compression": "bzip2"},
    {"format_version": 1, "sector_shift": 1},
    {"format_version": 1, "sector_shift": 9, "sector_crc": True},
    {"listfile": False, "hash_table_size": 4096},
]


@pytest.mark.parametrize("opts", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default")
def test_round_trip(opts):
    data = write_mpq(FILES, **opts)
    assert write_mpq(FILES, **opts) == data          # deterministic
    a = MpqArchive.from_bytes(data)
    for name, payload in FILES.items():
        assert a.read(name) == payload, name
        assert a.read(name.lower().replace("\\", "/")) == payload
    if opts.get("listfile", True):
        assert set(a.names()) == set(FILES) | {"(listfile)"}
    else:
        assert a.names() == []
        assert all(e.name is None for e in a.entries())
    e = a.lookup("DBFilesClient\\GroundEffectTexture.dbc")
    if opts.get("encrypt"):
        assert e.flags & FileFlags.ENCRYPTED
        assert bool(e.flags & FileFlags.FIX_KEY) == bool(opts.get("fix_key"))
    if opts.get("sector_crc") and not opts.get("single_unit"):
        assert e.flags & FileFlags.SECTOR_CRC
    assert e.packed_size < e.size or opts.get("compression", "zlib") is None


def test_sectors_that_do_not_shrink_are_stored_raw():
    a = MpqArchive.from_bytes(write_mpq({"n": NOISE}))
    e = a.lookup("n")
    assert e.flags & FileFlags.COMPRESS
    assert e.packed_size == len(NOISE) + 4 * (3 + 1)   # 3 sectors + end offset, all stored


def test_per_file_options_locales_and_delete_markers():
    files = [
        ("a.txt", b"neutral", {}),
        ("a.txt", b"deutsch", {"locale": 0x407, "compression": "bzip2"}),
        ("gone.txt", b"", {"delete": True}),
        ("secret.txt", TEXT, {"encrypt": True, "fix_key": True}),
    ]
    a = MpqArchive.from_bytes(write_mpq(files))
    assert a.read("a.txt") == b"neutral"
    assert a.read("a.txt", locale=0x407) == b"deutsch"
    assert a.read("a.txt", locale=0x409) == b"neutral"     # falls back to neutral
    assert a.read("secret.txt") == TEXT
    assert not a.exists("gone.txt")
    assert a.lookup("gone.txt").is_delete_marker
    with pytest.raises(GameFileNotFound):
        a.read("gone.txt")
    assert {(e.name, e.locale) for e in a.entries()} >= {("a.txt", 0), ("a.txt", 0x407), ("gone.txt", 0)}
    assert "gone.txt" not in a.names()


def test_only_locale_copy_is_found_without_a_neutral_one():
    a = MpqArchive.from_bytes(write_mpq([("de.txt", b"de", {"locale": 0x407})]))
    assert a.read("de.txt") == b"de" and a.lookup("de.txt").locale == 0x407


def test_writer_rejects_bad_options(tmp_path):
    with pytest.raises(UsageError):
        write_mpq(FILES, hash_table_size=12)
    with pytest.raises(UsageError):
        write_mpq(FILES, hash_table_size=4)
    with pytest.raises(UsageError):
        write_mpq(FILES, compression="zstd")
    with pytest.raises(UsageError):
        write_mpq(FILES, format_version=3)
    with pytest.raises(UsageError):
        write_mpq(FILES, sector_shift=0)
    with pytest.raises(UsageError):
        write_mpq([("a", b"1", {}), ("A", b"2", {})])
    with pytest.raises(UsageError):
        write_mpq([("a", b"1", {"colour": "green"})])


def test_write_mpq_file_is_atomic_and_identical(tmp_path):
    path = write_mpq_file(tmp_path / "sub" / "x.mpq", FILES, encrypt=True)
    assert path.read_bytes() == write_mpq(FILES, encrypt=True)
    assert [p.name for p in path.parent.iterdir()] == ["x.mpq"]
    with MpqArchive.open(path) as a:
        assert a.read("three.bin") == b"abc"


def test_missing_file_and_sniff():
    a = MpqArchive.from_bytes(write_mpq(FILES))
    with pytest.raises(GameFileNotFound):
        a.read("nope.txt")
    assert not a.exists("nope.txt")
    assert mpq.sniff(b"MPQ\x1a....") and mpq.sniff(b"MPQ\x1b") and not mpq.sniff(b"WDBC")


def test_hand_built_lzma_sector():
    # SC2 layout: mask 0x12, filter byte 0, then the .lzma "alone" stream (made by the stdlib directly)
    payload = TEXT[:4096]
    sector = b"\x12\x00" + lzma.compress(payload, format=lzma.FORMAT_ALONE)
    assert mpq.decompress_sector(sector, 4096) == payload
    with pytest.raises(FormatError, match="filter byte"):
        mpq.decompress_sector(b"\x12\x5d" + bytes(20), 4096)


@NEEDS_DCL
def test_combined_pkware_zlib_mask():
    # compressed zlib first, then imploded; decompression undoes PKWARE before zlib
    payload = TEXT[:4096]
    sector = bytes([0x08 | 0x02]) + mpq.implode(zlib.compress(payload))
    assert mpq.decompress_sector(sector, 4096) == payload
    # 0x12 is LZMA, not bzip2 + zlib
    with pytest.raises(FormatError, match="LZMA"):
        mpq.decompress_sector(b"\x12" + bz2.compress(zlib.compress(payload)), 4096)


# --- hostile input -------------------------------------------------------------------------------

def _tables(data: bytes):
    a = MpqArchive.from_bytes(data)
    return a, a._hash.copy(), a._block.copy()


def _patched(data: bytes, *, block=None, hashes=None, header=None) -> bytes:
    """Re-encrypt edited tables into the archive (and optionally poke header fields)."""
    a, h, b = _tables(data)
    out = bytearray(data)
    if block is not None:
        pos = a.header.offset + a.header.block_table_pos
        enc = encrypt_words(block.view("<u4"), KEY_BLOCK_TABLE).astype("<u4").tobytes()
        out[pos:pos + len(enc)] = enc
    if hashes is not None:
        pos = a.header.offset + a.header.hash_table_pos
        enc = encrypt_words(hashes.view("<u4"), KEY_HASH_TABLE).astype("<u4").tobytes()
        out[pos:pos + len(enc)] = enc
    for off, fmt, value in header or ():
        struct.pack_into(fmt, out, off, value)
    return bytes(out)


def _block_index(data, name):
    return MpqArchive.from_bytes(data).lookup(name).block_index


@pytest.mark.parametrize("cut", [0, 3, 31, 40, 200, -300, -1])
def test_truncated_archives(cut):
    data = write_mpq(FILES)
    with pytest.raises(FormatError):
        MpqArchive.from_bytes(data[:cut])


def test_truncation_sweep_never_escapes_format_error():
    data = write_mpq({"a": TEXT[:3000], "b": b"bb"}, hash_table_size=16, sector_shift=1)
    for n in range(0, len(data), 7):
        try:
            a = MpqArchive.from_bytes(data[:n])
        except FormatError:
            continue
        for name in ("a", "b"):
            try:
                a.read(name)
            except (FormatError, GameFileNotFound):
                pass


@pytest.mark.parametrize(("off", "value", "match"), [
    (0x1C, 0x10000000, "past the end"),          # block table entries
    (0x10, 0xFFFFFF00, "past the end"),          # hash table position
    (0x0E, 40, "sector shift"),
])
def test_garbage_header_fields(off, value, match):
    data = _patched(write_mpq(FILES), header=[(off, "<I" if off != 0x0E else "<H", value)])
    with pytest.raises(FormatError, match=match):
        MpqArchive.from_bytes(data)


@pytest.mark.parametrize(("value", "found"), [(0x40000000, False), (100, True), (0x10000400, True)])
def test_v1_hash_table_running_past_the_end_reads_as_stormlib_reads_it(value, found):
    """A v1 hash table that runs past the end of the file: its byte size is a 32-bit product
    (0x40000000 entries wrap to 0 bytes: no file is found, as libstorm9 finds none), the entries the
    file holds are read and defragmented (tests/test_mpq_storm.py compares these with libstorm9)."""
    data = _patched(write_mpq(FILES), header=[(0x18, "<I", value)])
    a = MpqArchive.from_bytes(data)
    assert any("hash table" in w and f"{value:,} entries declared" in w for w in a.warnings)
    assert all(a.exists(n) == found for n in FILES)
    if found:
        assert {n: a.read(n) for n in FILES} == FILES


def test_unknown_format_version_reads_as_v1():
    """StormLib (and Storm.dll) read a header with an unknown format version as v1."""
    data = _patched(write_mpq(FILES), header=[(0x0C, "<H", 7)])
    a = MpqArchive.from_bytes(data)
    assert a.header.format_version == 0
    assert all(a.read(n) == d for n, d in FILES.items())


def test_block_past_end_of_file():
    data = write_mpq(FILES)
    _, _, block = _tables(data)
    bi = _block_index(data, "small.txt")
    block[bi]["file_pos"] = len(data) - 4
    a = MpqArchive.from_bytes(_patched(data, block=block))
    with pytest.raises(TruncatedError, match="past the end"):
        a.read("small.txt")
    assert a.read("three.bin") == b"abc"


def test_huge_declared_size_does_not_allocate():
    data = write_mpq(FILES)
    _, _, block = _tables(data)
    bi = _block_index(data, "DBFilesClient\\GroundEffectTexture.dbc")
    block[bi]["size"] = 0xFFFFFFF0            # a 4 GiB file in a 20 KB block: sector table cannot fit
    a = MpqArchive.from_bytes(_patched(data, block=block))
    with pytest.raises(TruncatedError, match="sector table"):
        a.read("DBFilesClient\\GroundEffectTexture.dbc")


def test_bad_sector_offset_tables():
    data = bytearray(write_mpq(FILES))
    a = MpqArchive.from_bytes(bytes(data))
    e = a.lookup("DBFilesClient\\GroundEffectTexture.dbc")
    start = e.file_pos
    for i, bad in [(1, 0xFFFFFF), (2, 5), (0, 0)]:
        d = bytearray(data)
        struct.pack_into("<I", d, start + 4 * i, bad)
        with pytest.raises(FormatError, match="sector"):
            MpqArchive.from_bytes(bytes(d)).read(e.name)


def test_corrupt_compressed_sector():
    data = bytearray(write_mpq(FILES))
    e = MpqArchive.from_bytes(bytes(data)).lookup("DBFilesClient\\GroundEffectTexture.dbc")
    first = struct.unpack_from("<I", data, e.file_pos)[0]
    data[e.file_pos + first + 3] ^= 0xFF
    with pytest.raises(FormatError):
        MpqArchive.from_bytes(bytes(data)).read(e.name)


def test_sector_checksum_mismatch_names_the_sector():
    files = {"t.txt": TEXT}
    data = bytearray(write_mpq(files, sector_crc=True))
    a = MpqArchive.from_bytes(bytes(data))
    e = a.lookup("t.txt")
    offs = struct.unpack_from("<4I", data, e.file_pos)
    # flip a byte inside sector 2's stored bytes, after its mask and zlib header
    data[e.file_pos + offs[2] + 5] ^= 0x01
    with pytest.raises(ChecksumError, match="sector 2 of 6"):
        MpqArchive.from_bytes(bytes(data)).read("t.txt")


@pytest.mark.parametrize(("mask", "name"), [(0x01, "HUFFMAN"), (0x40, "ADPCM_MONO"), (0x80, "ADPCM_STEREO"),
                                            (0x20, "SPARSE"), (0x41, "HUFFMAN"), (0x04, "none")])
def test_unsupported_compression_masks_are_named(mask, name):
    with pytest.raises(UnsupportedError, match=f"0x{mask:02X}.*{name}"):
        mpq.decompress_sector(bytes([mask]) + b"\x00" * 20, 4096)


def test_unsupported_mask_inside_an_archive():
    data = bytearray(write_mpq({"t.txt": TEXT}))
    e = MpqArchive.from_bytes(bytes(data)).lookup("t.txt")
    first = struct.unpack_from("<I", data, e.file_pos)[0]
    data[e.file_pos + first] = 0x41               # ADPCM mono + Huffman (WAV codecs)
    with pytest.raises(UnsupportedError, match="t.txt sector 0: compression mask 0x41"):
        MpqArchive.from_bytes(bytes(data)).read("t.txt")


def test_decompression_bomb_is_cut_at_the_expected_size():
    bomb = b"\x02" + zlib.compress(bytes(50_000_000))
    with pytest.raises(FormatError, match="expected 4096"):
        mpq.decompress_sector(bomb, 4096)


@NEEDS_DCL
def test_pkware_bomb_stops_early():
    bomb = mpq.implode(bytes(20_000_000))
    with pytest.raises(FormatError, match="expected 4096"):
        mpq.decompress_sector(b"\x08" + bomb, 4096)
    assert len(mpq.explode(bomb, limit=4096)) < 4_000_000


def test_encrypted_file_without_a_name_is_unsupported():
    a = MpqArchive.from_bytes(write_mpq({"s.txt": TEXT}, encrypt=True, listfile=False))
    (e,) = a.entries()
    with pytest.raises(UnsupportedError, match="without a known name"):
        a.read_entry(e)


def test_hash_entry_pointing_past_block_table_is_ignored():
    data = write_mpq(FILES)
    _, hashes, _ = _tables(data)
    hi = MpqArchive.from_bytes(data).lookup("small.txt").hash_index
    hashes[hi]["block_index"] = 0x00FFFFFF
    a = MpqArchive.from_bytes(_patched(data, hashes=hashes))
    assert not a.exists("small.txt")
    assert a.read("three.bin") == b"abc"


def test_full_hash_table_without_empty_slots_terminates():
    data = write_mpq({f"f{i}": b"x" for i in range(16)}, hash_table_size=16, listfile=False)
    a = MpqArchive.from_bytes(data)
    assert not a.exists("missing")
    assert all(a.read(f"f{i}") == b"x" for i in range(16))


def test_random_corruption_only_raises_format_errors():
    base = write_mpq({"t.txt": TEXT, "n.bin": NOISE, "s": b"s"}, sector_crc=True, encrypt=True, hash_table_size=16)
    rng = np.random.default_rng(3)
    for _ in range(150):
        d = bytearray(base)
        for pos in rng.integers(0, len(d), 3):
            d[pos] = int(rng.integers(0, 256))
        try:
            a = MpqArchive.from_bytes(bytes(d))
            for name in ("t.txt", "n.bin", "s"):
                try:
                    a.read(name)
                except GameFileNotFound:
                    pass
        except FormatError:
            pass


def test_open_missing_and_empty_files(tmp_path):
    with pytest.raises(FileNotFoundError):
        MpqArchive.open(tmp_path / "none.mpq")
    (tmp_path / "empty.mpq").write_bytes(b"")
    with pytest.raises(TruncatedError, match="empty"):
        MpqArchive.open(tmp_path / "empty.mpq")


def test_table_dtypes():
    assert HASH_DTYPE.itemsize == 16 and BLOCK_DTYPE.itemsize == 16


# --- real archives -------------------------------------------------------------------------------

WAR3 = {
    "(attributes)": (260, "b706fe2ccf4fb767e79b878203471b9b"),
    "(listfile)": (265, "ba98f016bc64680d8d915f206d5ce3ae"),
    "dummy.mdx": (35040, "77a2804dacfcec642951f0bf1ccde3a7"),
    "war3map.doo": (24, "5b0e44c5e2a6fb363b96ff3a7597e367"),
    "war3map.imp": (30, "0b579222ee1c0aac8c6bf960b5c1bcd3"),
    "war3map.j": (47789, "3ae2a452ae904fb1c6d799efc61b2fed"),
    "war3map.mmp": (24, "204c7b123e306d877961cee86e44cbe0"),
    "war3map.shd": (65536, "fcd6bcb56c1689fcef28b57c22475bad"),
    "war3map.w3a": (242, "3be2053d654816d773611fc7c6b0c4a6"),
    "war3map.w3c": (8, "7dea362b3fac8e00956a4952a3d4f474"),
    "war3map.w3e": (29644, "2f65427fab89030bc9f6bcceab4e0d7e"),
    "war3map.w3i": (261, "d299b5a4c9a20e7e0e0d3f150ccc08f4"),
    "war3map.w3r": (8, "3e27b3aa6b89137cce48b3379a2a6610"),
    "war3map.w3u": (587, "7937cba1d0a0e5da955afa3065cdf3ee"),
    "war3map.wct": (42586, "dea03eb210ac0fe3e95bec45c4d8cd4b"),
    "war3map.wpm": (65552, "512296430914a09f94a37ab404f16a9f"),
    "war3map.wtg": (125, "52dc20d8925c5430912a69ad3f1c2540"),
    "war3map.wts": (456, "168ca5578e3aa7517e175a47d3dde42e"),
    "war3mapImported\\tcBox.mdx": (2636, "61fa6f972bce7ae27c37f6e1ec0059cb"),
    "war3mapMap.blp": (7718, "b433e374d79e7f307cd8b3a07f6b48ac"),
    "war3mapUnits.doo": (460, "1be564c57d72e7ed8d17fb59cf7cd7fc"),
}
STANDARD = {
    "fixture.txt": (13, "2686602cf52e2fd47a6f08943a1718f3"),
    "(listfile)": (84, "2e5c36b15793eb1648cc87be0a9a0fa1"),
}
REAL = {
    "vanilla-standard.mpq": (STANDARD, 0, 0),
    "tbc-standard.mpq": (STANDARD, 1, 0),
    "size.mpq": ({"fixture-64kb.txt": (65536, "8ee4c0b78205d8d719dfed54cf02db96"),
                  "fixture-128kb.txt": (131072, "cf921be88115dee2d6ae220b220b6f25")}, 0, 0),
    "test.SC2Replay": ({"replay.details": (890, "812a12c7188634cee79c872750f754bc"),
                        "replay.game.events": (479869, "4ef83ff22d740dfcf1f6a7ee57d1e9fe"),
                        "replay.initData": (1257, "1fe55a1f71b0b99ae5a07bb924829ce7"),
                        "(listfile)": (164, "dcff1273db633327a771b62cfd667fe2")}, 1, 1024),
    "normalMap.w3x": (WAR3, 0, 512),
}


@pytest.mark.realdata
@pytest.mark.parametrize("name", sorted(REAL))
def test_real_archives(realdata, name):
    expect, version, offset = REAL[name]
    with MpqArchive.open(realdata / "mpq" / name) as a:
        assert a.header.format_version == version
        assert a.header.offset == offset
        names = a.names()
        for fname, (size, md5) in expect.items():
            assert fname in names
            data = a.read(fname)
            assert len(data) == size and hashlib.md5(data).hexdigest() == md5, fname
            assert a.lookup(fname).size == size
        # every listed file decodes to its declared size
        for fname in names:
            assert len(a.read(fname)) == a.lookup(fname).size
    if name == "normalMap.w3x":
        assert set(names) == set(WAR3)


@pytest.mark.realdata
def test_real_archive_details(realdata):
    with MpqArchive.open(realdata / "mpq" / "vanilla-standard.mpq") as a:
        assert a.header.hash_table_size == 4096 and a.header.header_size == 32
        assert a.lookup("fixture-deDE.txt").locale == 0x0407
        assert "nested\\fixture-nested.txt" in a.names()
        assert a.read("fixture.txt") == b"fixture-text\n"
        listed = a.read("(listfile)").decode().split()
        assert len(listed) == 5
    with MpqArchive.open(realdata / "mpq" / "test.SC2Replay") as a:
        assert a.header.user_data_offset == 0
    with MpqArchive.open(realdata / "mpq" / "normalMap.w3x") as a:
        for special in ("(listfile)", "(attributes)"):
            flags = a.lookup(special).flags
            assert flags & FileFlags.ENCRYPTED and flags & FileFlags.FIX_KEY
    with MpqArchive.open(realdata / "mpq" / "tbc-standard.mpq") as a:
        assert a.lookup("fixture.txt").flags & FileFlags.SECTOR_CRC


def test_reachability_of_named_entries_matches_a_walk_of_each_probe():
    """The vectorised run-length rule says the same as walking each name's probe path."""
    from mpq_builders import unreachable_entry

    files = {f"dir\\file{i:03d}.txt": b"x" * (i % 7) for i in range(40)}
    data = write_mpq(files, hash_table_size=64)          # 41 of 64 slots: long collision chains
    a = MpqArchive.from_bytes(data)
    assert all(e.reachable for e in a.entries()) and a.unreachable_names() == []
    for victim in ("dir\\file007.txt", "dir\\file031.txt"):
        b = MpqArchive.from_bytes(unreachable_entry(data, victim))
        walk = {e.hash_index: e.hash_index in b._candidates(e.name) for e in b.entries() if e.name}
        assert {e.hash_index: e.reachable for e in b.entries() if e.name} == walk
        assert b.unreachable_names() == [victim] and victim not in b.names()
        with pytest.raises(GameFileNotFound, match="no hash entry"):
            b.read(victim)
