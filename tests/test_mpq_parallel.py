"""Parallel MPQ decoding: same bytes as the one-thread path, per-file errors, bounded look-ahead."""

from __future__ import annotations

import itertools
import json
import struct

import numpy as np
import pytest
from click.testing import CliRunner

from wowgrass.cli.main import cli
from wowgrass.game.data import open_data
from wowgrass.errors import ChecksumError, FormatError, GameFileNotFound
from wowgrass.formats import mpq
from wowgrass.formats.mpq import MpqArchive, write_mpq, write_mpq_file

from wowgrass.formats.mpq import dcl_binding as _dcl_binding  # noqa: E402

#: writing PKWARE DCL needs the optional dclimplode binding (no wheel for CPython 3.12+)
NEEDS_DCL = pytest.mark.skipif(_dcl_binding() is None, reason="writing PKWARE DCL needs the optional dclimplode binding")


RNG = np.random.default_rng(11)
TEXT = b"".join(b"row %06d: grass, dirt, rock\n" % i for i in range(6000))          # ~170 KB, 42 sectors
LOWENT = RNG.integers(0, 20, 300_000).astype(np.uint8).tobytes()                    # ~75 sectors
NOISE = RNG.integers(0, 256, 40_000, dtype=np.uint8).tobytes()                        # stored raw
FILES = {
    "World\\Maps\\Test\\Test_30_30.adt": LOWENT,
    "DBFilesClient\\Table.dbc": TEXT,
    "Textures\\noise.blp": NOISE,
    "tiny.txt": b"grass",
    "empty.txt": b"",
    **{f"Small\\f{i:02d}.txt": TEXT[i * 997:i * 997 + 3000 + i] for i in range(20)},
}

CODECS = [
    {},
    {"compression": "bzip2"},
    pytest.param({"compression": "pkware"}, marks=NEEDS_DCL),
    {"compression": "lzma"},
    {"compression": None},
    {"single_unit": True},
    {"encrypt": True},
    {"encrypt": True, "fix_key": True, "compression": "bzip2"},
    {"sector_crc": True},
    {"sector_crc": True, "encrypt": True},
    {"format_version": 1, "sector_shift": 1},
]


def serial(a: MpqArchive, names) -> dict[str, bytes]:
    """One thread, one piece per file: the plain sequential decode."""
    return {n: b"".join(fn() for fn, _ in a.decode_plan(a.lookup(n), None)) for n in names}


def parallel(a: MpqArchive, names, chunk=1, threads=4) -> dict[str, bytes]:
    out = {}
    for n, data in a.read_many(names, threads=threads, chunk=chunk):
        assert not isinstance(data, Exception), data
        out[n] = data
    return out


@pytest.mark.parametrize("opts", CODECS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "zlib")
def test_parallel_equals_serial_for_every_codec(opts):
    a = MpqArchive.from_bytes(write_mpq(FILES, **opts))
    names = a.names()
    want = serial(a, names)
    assert want == {**FILES, "(listfile)": a.read("(listfile)")}
    # chunk=1 cuts every multi-sector file into one task per sector; a mid-size chunk mixes batching and cuts
    for chunk in (1, 5000, mpq.CHUNK_BYTES):
        assert parallel(a, names, chunk) == want
    assert parallel(a, names, chunk=1, threads=1) == want
    assert {n: a.read(n) for n in names} == want


def test_big_file_is_cut_into_sector_ranges():
    a = MpqArchive.from_bytes(write_mpq(FILES))
    e = a.lookup("World\\Maps\\Test\\Test_30_30.adt")
    pieces = a.decode_plan(e, 4096)
    assert len(pieces) > 10
    assert sum(n for _, n in pieces) < e.packed_size           # the sector table is not in any piece
    assert b"".join(fn() for fn, _ in pieces) == LOWENT
    assert len(a.decode_plan(e, None)) == 1
    assert len(a.decode_plan(a.lookup("tiny.txt"), 1)) == 1


@pytest.mark.realdata
def test_parallel_equals_serial_on_real_archives(realdata):
    paths = sorted((realdata / "mpq").iterdir())
    assert len(paths) >= 5
    for path in paths:
        with MpqArchive.open(path) as a:
            names = a.names()
            assert names, path
            want = serial(a, names)
            assert parallel(a, names) == want, path.name
            assert parallel(a, names, chunk=mpq.CHUNK_BYTES, threads=2) == want, path.name


def _corrupt_sector(data: bytearray, a: MpqArchive, name: str, sector: int) -> None:
    e = a.lookup(name)
    offs = struct.unpack_from("<3I", data, a.header.offset + e.file_pos)
    data[a.header.offset + e.file_pos + offs[sector] + 7] ^= 0x5A


def test_corrupt_sector_fails_only_its_file():
    data = bytearray(write_mpq(FILES, sector_crc=True))
    _corrupt_sector(data, MpqArchive.from_bytes(bytes(data)), "DBFilesClient\\Table.dbc", 1)
    a = MpqArchive.from_bytes(bytes(data))
    names = list(FILES) + ["missing.txt"]
    got = dict(a.read_many(names, threads=3, chunk=1))
    assert list(got) == names
    assert isinstance(got["DBFilesClient\\Table.dbc"], ChecksumError)
    assert "Table.dbc: sector 1 of" in str(got["DBFilesClient\\Table.dbc"])
    assert isinstance(got["missing.txt"], GameFileNotFound)
    assert {n: got[n] for n in FILES if n != "DBFilesClient\\Table.dbc"} == {
        n: d for n, d in FILES.items() if n != "DBFilesClient\\Table.dbc"}
    with pytest.raises(ChecksumError):
        a.read("DBFilesClient\\Table.dbc")


def test_read_many_looks_ahead_a_bounded_number_of_files():
    a = MpqArchive.from_bytes(write_mpq(FILES))
    asked = itertools.count()

    def names():                           # endless: only a bounded look-ahead can serve it
        for n in itertools.cycle(FILES):
            next(asked)
            yield n

    it = a.read_many(names(), threads=2, chunk=1)
    first = [next(it) for _ in range(3)]
    assert [n for n, _ in first] == list(FILES)[:3] and first[0][1] == FILES[first[0][0]]
    assert next(asked) < 200
    it.close()


def test_data_chain_read_many(tmp_path):
    d = tmp_path / "Data"
    write_mpq_file(d / "common.MPQ", {"a.adt": LOWENT, "b.dbc": TEXT, "gone.txt": b"x"})
    write_mpq_file(d / "patch.MPQ", [("b.dbc", TEXT[::-1], {}), ("gone.txt", b"", {"delete": True})],
                   encrypt=True, compression="bzip2")
    with open_data(d) as g:
        got = dict(g.read_many(["A.ADT", "b.dbc", "gone.txt"], chunk=1))
        assert got["A.ADT"] == LOWENT and got["b.dbc"] == TEXT[::-1]
        assert isinstance(got["gone.txt"], GameFileNotFound)
    with open_data(d, threads=1) as g:
        assert g.threads == 1 and g.archive(d / "common.MPQ").threads == 1


def test_extract_reports_the_corrupt_file_and_writes_the_others(tmp_path):
    data = bytearray(write_mpq(FILES))
    _corrupt_sector(data, MpqArchive.from_bytes(bytes(data)), "World\\Maps\\Test\\Test_30_30.adt", 2)
    bad = tmp_path / "bad.MPQ"
    bad.write_bytes(bytes(data))
    with pytest.raises(FormatError):
        MpqArchive.open(bad).read("World\\Maps\\Test\\Test_30_30.adt")
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["mpq", "extract", str(bad), "-o", str(out)])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert "Test_30_30.adt not extracted" in r.output and "1 of 26 files could not be read" in r.output
    assert not (out / "World").exists()
    for name, payload in FILES.items():
        if not name.endswith(".adt"):
            assert (out / name.replace("\\", "/")).read_bytes() == payload, name
    r = CliRunner().invoke(cli, ["mpq", "extract", str(bad), "-o", str(tmp_path / "j"), "--json"])
    j = json.loads(r.stdout)
    assert [f["name"] for f in j["failed"]] == ["World\\Maps\\Test\\Test_30_30.adt"]
    assert len(j["files"]) == len(FILES)       # 25 good files + (listfile)


@pytest.mark.parametrize("opts", CODECS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "zlib")
def test_writer_threads_give_the_same_archive(opts):
    assert write_mpq(FILES, threads=3, **opts) == write_mpq(FILES, threads=1, **opts)


def test_released_threads_come_back_when_needed():
    import threading

    a = MpqArchive.from_bytes(write_mpq(FILES))
    parallel(a, a.names())
    mpq.release_threads()
    assert not any(t.name.startswith("wowgrass-mpq") for t in threading.enumerate())
    assert parallel(a, ["World\\Maps\\Test\\Test_30_30.adt"]) == {"World\\Maps\\Test\\Test_30_30.adt": LOWENT}


def test_a_forked_child_starts_its_own_threads():
    import multiprocessing

    a = MpqArchive.from_bytes(write_mpq(FILES))
    parallel(a, a.names())                       # the parent's pool is running
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:                     # would hang on the parent's (absent) threads
        got = pool.apply_async(_read_in_child, (bytes(a._buf),)).get(timeout=60)
    assert got == LOWENT


def _read_in_child(archive: bytes) -> bytes:
    a = MpqArchive.from_bytes(archive)
    return dict(a.read_many(["World\\Maps\\Test\\Test_30_30.adt"], threads=2, chunk=1))[
        "World\\Maps\\Test\\Test_30_30.adt"]
