"""Issue 33 item 14: wowgrass's own PKWARE DCL explode (formats/dcl.py), the fallback where the
``dclimplode`` binding is absent (it has wheels for CPython 3.10/3.11 only), gives the binding's bytes:
on random data in both literal modes and the three dictionary sizes, on IMPLODE and PKWARE-mask
archives StormLib writes (an independent implode), and on the real MPQs; and every runtime
dependency has a manylinux wheel for CPython 3.10-3.13 (dclimplode only where its marker asks)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from wowgrass.errors import FormatError, UnsupportedError
from wowgrass.formats import dcl, mpq

ROOT = Path(__file__).resolve().parents[1]


def _binding():
    return pytest.importorskip("dclimplode", reason="the dclimplode binding (the reference) is not installed")


def _implode(b, data: bytes, mode, dict_size: int) -> bytes:
    c = b.compressobj(mode, dict_size)
    return c.compress(data) + c.flush()


@pytest.fixture
def fallback(monkeypatch):
    """MPQ reading as on a machine without dclimplode."""
    monkeypatch.setattr(mpq, "dcl_binding", lambda: None)


def _cases():
    rng = np.random.default_rng(33)
    yield "empty", b""
    yield "one byte", b"x"
    yield "random", rng.integers(0, 256, 6000, dtype=np.uint8).tobytes()
    yield "few symbols", rng.integers(0, 4, 9000, dtype=np.uint8).tobytes()
    yield "runs", bytes(5000) + b"\xff" * 3000 + bytes(range(256)) * 12
    yield "text", (ROOT / "wowgrass" / "formats" / "dcl.py").read_bytes()


@pytest.mark.parametrize("dict_size", [1024, 2048, 4096])
@pytest.mark.parametrize("mode", ["binary", "ascii"])
def test_fallback_matches_the_binding_on_random_data(mode, dict_size):
    b = _binding()
    flag = b.CMP_BINARY if mode == "binary" else b.CMP_ASCII
    for name, data in _cases():
        packed = _implode(b, data, flag, dict_size)
        assert packed[0] == (mode == "ascii") and packed[1] == dict_size.bit_length() - 7
        assert b.decompressobj().decompress(packed) == data, name
        assert dcl.explode(packed) == data, name


def test_fallback_errors_and_limits():
    b = _binding()
    packed = _implode(b, b"grass " * 2000, b.CMP_BINARY, 4096)
    for bad, what in ((packed[:1], "2-byte header"), (b"\x02\x06" + packed[2:], "literal mode 2"),
                      (b"\x00\x07" + packed[2:], "dictionary size code 7"), (packed[:len(packed) // 2], "end code"),
                      (b"\x00\x06\x01" + bytes(6), "copy from")):
        with pytest.raises(FormatError, match=what):
            dcl.explode(bad, path="x.mpq", offset=7)
    bomb = _implode(b, bytes(3_000_000), b.CMP_BINARY, 4096)
    assert 5000 < len(dcl.explode(bomb, limit=5000)) < 6000          # stops soon after the limit
    # a stream without its end code is what StormLib accepts once the output is full
    assert dcl.explode(packed[:-1], limit=12000) == b"grass " * 2000   # its last byte: the end code


def test_mpq_reads_pkware_sectors_without_the_binding(tmp_path, fallback):
    b = _binding()
    files = {"a.txt": b"meadow " * 3000, "r.bin": os.urandom(9000)}
    for options in ({"compression": "pkware"}, {"compression": "pkware", "single_unit": True}):
        with pytest.MonkeyPatch.context() as m:
            m.setattr(mpq, "dcl_binding", lambda: b)
            data = mpq.write_mpq(files, **options)
        a = mpq.MpqArchive.from_bytes(data)
        assert {n: a.read(n) for n in files} == files
    # 0x08 | 0x02: imploded, then zlib
    payload = b"abc" * 900
    import zlib
    sector = bytes([0x0A]) + _implode(b, zlib.compress(payload), b.CMP_BINARY, 4096)
    assert mpq.decompress_sector(sector, len(payload)) == payload


def test_writing_pkware_without_the_binding_is_a_clean_error(fallback):
    with pytest.raises(UnsupportedError, match="needs the optional dclimplode package"):
        mpq.write_mpq({"a.txt": b"x" * 5000}, compression="pkware")


@pytest.mark.storm
@pytest.mark.parametrize("label", ["implode", "pkware-mask", "fix-key-implode", "sector-crc-implode"])
def test_fallback_reads_stormlib_imploded_archives(tmp_path, fallback, label):
    import _storm as S

    storm = S.required()
    flags, comp = {"implode": (S.MPQ_FILE_IMPLODE, 0), "pkware-mask": (S.MPQ_FILE_COMPRESS, S.MPQ_COMPRESSION_PKWARE),
                   "fix-key-implode": (S.MPQ_FILE_IMPLODE | S.MPQ_FILE_ENCRYPTED | S.MPQ_FILE_FIX_KEY, 0),
                   "sector-crc-implode": (S.MPQ_FILE_IMPLODE | S.MPQ_FILE_SECTOR_CRC, 0)}[label]
    rng = np.random.default_rng(5)
    files = {"DBFilesClient\\GroundEffectDoodad.dbc": b"".join(b"ElwGra%02d.mdl\0" % i for i in range(3000)),
             "noise.bin": rng.integers(0, 256, 5000, dtype=np.uint8).tobytes(),
             "few.bin": rng.integers(0, 40, 20000, dtype=np.uint8).tobytes(), "t.txt": b"t"}
    path = tmp_path / "storm.mpq"
    storm.create(path, [(n, d, flags, comp) for n, d in files.items()])
    calls = []
    real = dcl.explode

    def spy(*a, **k):
        calls.append(1)
        return real(*a, **k)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(dcl, "explode", spy)
        with mpq.MpqArchive.open(path) as a:
            assert {n: a.read(n) for n in files} == files
    assert calls, "no sector went through the fallback"


@pytest.mark.realdata
def test_fallback_on_the_real_mpqs(realdata, fallback):
    """The real MPQs (none of them implodes a sector: zlib throughout) read the same without the
    binding; every file's bytes are compared with the binding's reading."""
    paths = sorted((realdata / "mpq").iterdir())
    assert paths
    for p in paths:
        with mpq.MpqArchive.open(p) as a:
            ours = {n: a.read(n) for n in a.names()}
        with pytest.MonkeyPatch.context() as m:
            m.setattr(mpq, "dcl_binding", lambda: pytest.importorskip("dclimplode"))
            with mpq.MpqArchive.open(p) as a:
                assert {n: a.read(n) for n in a.names()} == ours, p.name


# -------------------------------------------------------------------------------- install paths
def _runtime_requirements():
    import tomllib

    from packaging.requirements import Requirement

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return [Requirement(d) for d in deps]


PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"]


def _wheel_fits(filename: str, minor: int) -> bool:
    """Whether the wheel ``filename`` installs on CPython 3.``minor`` for one of PLATFORMS: one of its
    tags (python-abi-platform, as its name spells them) is one that interpreter takes."""
    from packaging.tags import compatible_tags, cpython_tags
    from packaging.utils import parse_wheel_filename

    version = (3, minor)
    takes = {*cpython_tags(version, platforms=PLATFORMS),
             *compatible_tags(version, interpreter=f"cp3{minor}", platforms=PLATFORMS)}
    return any(tag in takes for tag in parse_wheel_filename(filename)[3])


@pytest.mark.parametrize("filename, minor, fits", [
    ("numpy-2.2.6-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", 11, True),
    ("numpy-2.2.6-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", 11, False),   # another Python
    ("numpy-2.2.6-cp311-cp311-musllinux_1_2_x86_64.whl", 11, False),                         # another libc
    ("numpy-2.2.6-cp311-cp311-manylinux_2_31_aarch64.whl", 11, False),                       # another CPU
    ("numpy-2.2.6-cp311-cp311-manylinux_2_34_x86_64.whl", 11, False),                        # a newer glibc
    ("numpy-2.2.6-cp311-cp311d-manylinux_2_17_x86_64.whl", 11, False),                       # a debug ABI
    ("cryptography-44.0.0-cp39-abi3-manylinux_2_28_x86_64.whl", 13, True),                   # the stable ABI
    ("click-8.1.8-py3-none-any.whl", 10, True),
    ("six-1.17.0-py2.py3-none-any.whl", 12, True),
    ("pywin32-308-cp311-cp311-win_amd64.whl", 11, False),
    ("dclimplode-0.0.4-cp310-cp310-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", 10, True),
])
def test_the_wheel_check_takes_exactly_the_wheels_that_install(filename, minor, fits):
    assert _wheel_fits(filename, minor) is fits


@pytest.mark.network   # deselected by default (pyproject addopts); run with -m network
@pytest.mark.parametrize("minor", [10, 11, 12, 13])
def test_every_runtime_dependency_has_a_wheel(tmp_path, minor):
    """pip resolves every runtime dependency (whose marker holds for 3.x) to a wheel for CPython
    3.x on manylinux x86-64, so installing needs no compiler. A dry run: pip reads the wheels'
    metadata, not the wheels. Skipped when the package index cannot be reached."""
    pytest.importorskip("tomllib")
    reqs = [r for r in _runtime_requirements()
            if r.marker is None or r.marker.evaluate({"python_version": f"3.{minor}", "python_full_version": f"3.{minor}.0"})]
    names = [str(r).split(";")[0] for r in reqs]
    if minor >= 12:
        assert not any(r.name == "dclimplode" for r in reqs)    # no wheel there: optional
    report = tmp_path / "report.json"
    cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-deps", "--quiet",
           "--timeout", "20", "--retries", "2",
           "--only-binary=:all:", "--python-version", f"3.{minor}", "--implementation", "cp",
           *[x for p in PLATFORMS for x in ("--platform", p)], "--target", str(tmp_path / "t"),
           "--report", str(report), *names]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode and any(s in r.stderr for s in ("NewConnectionError", "Network is unreachable",
                                                   "Temporary failure in name resolution", "ConnectTimeout",
                                                   "ProxyError", "Max retries exceeded")):
        pytest.skip(f"the package index is unreachable: {r.stderr.strip().splitlines()[-1]}")
    assert r.returncode == 0, r.stderr[-2000:]
    from packaging.utils import canonicalize_name

    got = {canonicalize_name(i["metadata"]["name"]): i["download_info"]["url"].rsplit("/", 1)[-1]
           for i in json.loads(report.read_text())["install"]}
    assert sorted(got) == sorted(canonicalize_name(q.name) for q in reqs)
    for req in reqs:
        wheel = got[canonicalize_name(req.name)]
        assert wheel.endswith(".whl"), wheel
        assert _wheel_fits(wheel, minor), f"{wheel} does not install on CPython 3.{minor} (manylinux x86-64)"
