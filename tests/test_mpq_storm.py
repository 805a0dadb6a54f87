"""Cross-reading with Debian's StormLib (libstorm9, through ctypes), both ways.

Our writer -> StormLib reads identical bytes; StormLib-created archives -> our reader. Skipped
(with the reason) only when ``libstorm.so.9`` cannot be loaded, and then failed under CI=true.
"""

from __future__ import annotations

import numpy as np
import pytest

import _storm as S
from wowgrass.errors import FormatError, UnsupportedError
from wowgrass.formats.mpq import FileFlags, MpqArchive, write_mpq, write_mpq_file

from wowgrass.formats.mpq import dcl_binding as _dcl_binding  # noqa: E402

#: writing PKWARE DCL needs the optional dclimplode binding (no wheel for CPython 3.12+)
NEEDS_DCL = pytest.mark.skipif(_dcl_binding() is None, reason="writing PKWARE DCL needs the optional dclimplode binding")


STORM = S.load()
pytestmark = pytest.mark.storm


@pytest.fixture(autouse=True)
def _stormlib():
    S.required()

RNG = np.random.default_rng(11)
FILES = {
    "DBFilesClient\\GroundEffectDoodad.dbc": b"".join(b"ElwGra%02d.mdl\0" % i for i in range(3000)),  # ~42 KB
    "World\\Maps\\Azeroth\\Azeroth_32_48.adt": RNG.integers(0, 40, 20000, dtype=np.uint8).tobytes(),
    "noise.bin": RNG.integers(0, 256, 5000, dtype=np.uint8).tobytes(),
    "tiny.txt": b"t",
    "exact.bin": bytes(4096),
    "empty.txt": b"",
}

WRITER_OPTIONS = [
    {},
    {"compression": "bzip2"},
    pytest.param({"compression": "pkware"}, marks=NEEDS_DCL),
    {"compression": None},
    {"single_unit": True},
    {"single_unit": True, "compression": "bzip2", "encrypt": True},
    {"encrypt": True},
    {"encrypt": True, "fix_key": True},
    {"encrypt": True, "fix_key": True, "compression": None},
    {"encrypt": True, "fix_key": True, "single_unit": True},
    {"sector_crc": True},
    {"sector_crc": True, "encrypt": True, "fix_key": True},
    {"format_version": 1, "sector_crc": True, "compression": "bzip2"},
    {"format_version": 1, "sector_shift": 1},
    {"hash_table_size": 65536},
]


@pytest.mark.parametrize("opts", WRITER_OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default")
def test_stormlib_reads_our_archives(tmp_path, opts):
    path = write_mpq_file(tmp_path / "ours.mpq", FILES, **opts)
    got = STORM.read_archive(path, list(FILES), check_crc=True)
    for name, data in FILES.items():
        assert got[name] == data, name
    h = STORM.open(path)
    try:
        assert STORM.has(h, "(listfile)")
        listed = STORM.read(h, "(listfile)").decode().split("\r\n")
        assert set(filter(None, listed)) == set(FILES)
    finally:
        STORM.close(h)


def test_stormlib_reads_our_locales(tmp_path):
    path = write_mpq_file(tmp_path / "loc.mpq", [("a.txt", b"neutral", {}), ("a.txt", b"deutsch", {"locale": 0x407})])
    h = STORM.open(path)
    try:
        assert STORM.read(h, "a.txt", locale=0) == b"neutral"
        assert STORM.read(h, "a.txt", locale=0x407) == b"deutsch"
    finally:
        STORM.close(h)
        STORM.lib.SFileSetLocale(0)


C, I, E, K, U, R = (S.MPQ_FILE_COMPRESS, S.MPQ_FILE_IMPLODE, S.MPQ_FILE_ENCRYPTED, S.MPQ_FILE_FIX_KEY,
                    S.MPQ_FILE_SINGLE_UNIT, S.MPQ_FILE_SECTOR_CRC)
STORM_COMBOS = [
    ("zlib", C, S.MPQ_COMPRESSION_ZLIB),
    ("bzip2", C, S.MPQ_COMPRESSION_BZIP2),
    ("pkware-mask", C, S.MPQ_COMPRESSION_PKWARE),
    ("implode", I, 0),
    ("stored", 0, 0),
    ("encrypted", C | E, S.MPQ_COMPRESSION_ZLIB),
    ("fix-key", C | E | K, S.MPQ_COMPRESSION_ZLIB),
    ("fix-key-stored", E | K, 0),
    ("fix-key-implode", I | E | K, 0),
    ("single-unit", C | U, S.MPQ_COMPRESSION_ZLIB),
    ("single-unit-bzip2-encrypted", C | U | E | K, S.MPQ_COMPRESSION_BZIP2),
    ("sector-crc", C | R, S.MPQ_COMPRESSION_ZLIB),
    ("sector-crc-encrypted", C | R | E | K, S.MPQ_COMPRESSION_BZIP2),
    ("sector-crc-implode", I | R, 0),
]


@pytest.mark.parametrize(("label", "flags", "comp"), STORM_COMBOS, ids=[c[0] for c in STORM_COMBOS])
@pytest.mark.parametrize("v2", [False, True], ids=["v1", "v2"])
def test_we_read_stormlib_archives(tmp_path, label, flags, comp, v2):
    path = tmp_path / "storm.mpq"
    STORM.create(path, [(n, d, flags, comp) for n, d in FILES.items()], v2=v2)
    with MpqArchive.open(path) as a:
        assert a.header.format_version == int(v2)
        for name, data in FILES.items():
            assert a.read(name) == data, name
        e = a.lookup("DBFilesClient\\GroundEffectDoodad.dbc")
        for bit in (FileFlags.ENCRYPTED, FileFlags.FIX_KEY, FileFlags.SINGLE_UNIT, FileFlags.IMPLODE):
            assert bool(e.flags & bit) == bool(flags & bit), bit
        assert set(FILES) <= set(a.names())


def test_we_read_stormlib_locales_and_crc_damage(tmp_path):
    path = tmp_path / "loc.mpq"
    text = bytes(range(256)) * 40
    STORM.create(path, [("a.txt", b"neutral", C, 2, 0), ("a.txt", b"francais", C, 2, 0x40C),
                        ("crc.bin", text, C | R, 2)])
    with MpqArchive.open(path) as a:
        assert a.read("a.txt") == b"neutral"
        assert a.read("a.txt", locale=0x40C) == b"francais"
        assert a.read("crc.bin") == text
        e = a.lookup("crc.bin")
    data = bytearray(path.read_bytes())
    first = int.from_bytes(data[e.file_pos:e.file_pos + 4], "little")
    data[e.file_pos + first + 6] ^= 0x10
    with pytest.raises(FormatError, match="sector 0"):
        MpqArchive.from_bytes(bytes(data)).read("crc.bin")


def test_stormlib_huffman_sectors_are_unsupported(tmp_path):
    path = tmp_path / "huff.mpq"
    STORM.create(path, [("h.txt", b"grass " * 2000, C, S.MPQ_COMPRESSION_HUFFMANN)])
    with MpqArchive.open(path) as a, pytest.raises(UnsupportedError, match="0x01 \\(HUFFMAN\\)"):
        a.read("h.txt")


def protected_starcraft_map() -> tuple[bytes, dict[str, bytes]]:
    """Issue 33 item 15, rebuilt: a ~90 KB v1 StarCraft map (``staredit\\scenario.chk``, 125,289 bytes,
    and a sound) whose header claims a hash table of 268,436,480 entries, far past the end of the
    file (a map protector's trick; 16 x that is 0x100004000, 0x4000 bytes as a 32-bit product)."""
    rng = np.random.default_rng(15)
    files = {"staredit\\scenario.chk": b"VER \x04\x00\x00\x00\xcd\x00" + rng.integers(0, 48, 125279, dtype=np.uint8).tobytes(),
             "staredit\\wav\\intro.wav": b"RIFF" + rng.integers(0, 256, 3000, dtype=np.uint8).tobytes()}
    data = bytearray(write_mpq(files, listfile=False))
    data[0x18:0x1C] = (268_436_480).to_bytes(4, "little")
    return bytes(data), files


def test_protected_starcraft_map_reads_as_stormlib_reads_it(tmp_path):
    data, files = protected_starcraft_map()
    assert 80_000 < len(data) < 100_000 and len(files["staredit\\scenario.chk"]) == 125_289
    path = tmp_path / "protected.scx"
    path.write_bytes(data)
    theirs = STORM.read_archive(path, list(files), check_crc=False)
    with MpqArchive.open(path) as a:
        assert a.header.hash_table_size == 4             # the two entries, defragmented
        ours = {n: a.read(n) for n in files}
        assert any("268,436,480 entries declared" in w for w in a.warnings)
    assert ours == theirs == files
