"""Bundles: instance packing, the byte layout, round trips, and damage detection."""

from __future__ import annotations

import math
import mmap
import struct
import zlib

import numpy as np
import pytest

from wowgrass.grass import bundle as B
from wowgrass.errors import ChecksumError, FormatError, StaleBundleError, TruncatedError

PROV = {"format": "wowgrass-bundle", "map": "Test", "tile": [3, 4], "placement": "coverage", "constants": {"a": 1}}


def sample_inputs(n=1000, seed=0):
    rng = np.random.default_rng(seed)
    models = [
        B.ModelInfo("World\\NoDXT\\Detail\\A.m2", True, (-1.0, -2.0, 0.0), (1.0, 2.0, 0.5), 0.0, 0.5),
        B.ModelInfo("World\\NoDXT\\Detail\\Unused.m2"),
        B.ModelInfo("World\\NoDXT\\Detail\\Missing.m2"),
    ]
    model_index = rng.choice([0, 2], size=n)
    pos = rng.uniform(-17000, 17000, size=(n, 3)).astype(np.float32)
    yaw16 = rng.integers(0, 65536, size=n)
    yaw = (yaw16 * (2 * math.pi / 65536)).astype(np.float32)
    scale = rng.choice([1.0, 0.9, 1.25], size=n).astype(np.float32)
    cells = rng.integers(0, 20, size=(256, 8, 8)).astype(np.uint16)
    return dict(model_index=model_index, pos=pos, yaw=yaw, scale=scale, models=models, provenance=PROV,
                tile=(3, 4), cell_counts=cells), yaw16


def test_instance_dtype_is_the_contract():
    assert B.INSTANCE_DTYPE.itemsize == 16
    assert B.INSTANCE_DTYPE.names == ("pos", "yaw", "scale")
    assert B.INSTANCE_DTYPE["pos"].shape == (3,) and B.INSTANCE_DTYPE.fields["yaw"][1] == 12
    assert B.INSTANCE_DTYPE.fields["scale"][1] == 14


def test_pack_instances_encodes_yaw_and_scale():
    arr = B.pack_instances([[1, 2, 3], [4, 5, 6], [7, 8, 9], [0, 0, 0]], [0.0, math.pi, 2 * math.pi, -math.pi / 2],
                           [1.0, 0.5, 2.0, 1.33])
    assert arr["yaw"].tolist() == [0, 32768, 0, 49152]  # wraps both ways
    assert arr["scale"].tolist() == [4096, 2048, 8192, round(1.33 * 4096)]
    raw = arr.tobytes()
    # hand-read the second record: three f4 then u2 yaw, u2 scale
    assert struct.unpack_from("<3fHH", raw, 16) == (4.0, 5.0, 6.0, 32768, 2048)
    pos, yaw, scale = B.unpack_instances(arr)
    assert np.allclose(yaw, [0, math.pi, 0, 1.5 * math.pi])
    assert np.allclose(scale, [1, 0.5, 2, 1.33], atol=1 / 4096)
    assert pos.dtype == np.float32 and pos[3].tolist() == [0, 0, 0]


def test_round_trip(tmp_path):
    kw, yaw16 = sample_inputs()
    path = B.write_bundle(tmp_path / "t.wgb", **kw)
    with B.read_bundle(path, expect_key=B.provenance_key(PROV)) as b:
        assert b.tile == (3, 4)
        assert b.provenance == PROV
        assert b.instance_count == 1000
        assert [m.path for m in b.models] == ["World\\NoDXT\\Detail\\A.m2", "World\\NoDXT\\Detail\\Missing.m2"]
        a, missing = b.models
        assert a.info.present and a.info.bbox_min == (-1.0, -2.0, 0.0) and a.info.z_max == 0.5
        assert not missing.info.present and all(math.isnan(v) for v in missing.info.bbox_min)
        for mi, m in zip([0, 2], b.models):
            sel = kw["model_index"] == mi
            assert len(m) == sel.sum()
            assert np.array_equal(m.instances["pos"], kw["pos"][sel])  # stable order within a model
            assert np.array_equal(m.instances["yaw"], yaw16[sel])
            assert np.array_equal(m.instances["scale"], np.round(kw["scale"][sel] * 4096))
            # loads as is: an aligned, contiguous view of the memory map
            assert m.instances.dtype == B.INSTANCE_DTYPE and m.instances.flags.c_contiguous
            base = m.instances.base
            assert isinstance(getattr(base, "obj", base), mmap.mmap)  # no copy: a view of the map
            assert m.instances.ctypes.data % 16 == 0
        assert np.array_equal(b.cell_counts, kw["cell_counts"])
        stats = b.stats()
        assert stats["bytes_per_instance"] == 16
        assert stats["missing_models"] == ["World\\NoDXT\\Detail\\Missing.m2"]
        assert stats["cells"]["with_grass"] == int((kw["cell_counts"] > 0).sum())


def test_byte_layout_by_hand(tmp_path):
    kw, _ = sample_inputs(n=5)
    raw = B.bundle_bytes(**kw)
    # header, field by field (docs/bake.md)
    assert raw[0:4] == b"WGBN"
    assert struct.unpack_from("<H", raw, 4)[0] == B.FORMAT_VERSION
    assert struct.unpack_from("<H", raw, 6)[0] == 128  # header size
    assert struct.unpack_from("<I", raw, 12)[0] == 2  # models with instances
    assert struct.unpack_from("<hh", raw, 16) == (3, 4)  # tile col, row
    assert struct.unpack_from("<Q", raw, 20)[0] == 5  # instances
    models_off, strings_off, strings_size, prov_off, prov_size, cells_off = struct.unpack_from("<6I", raw, 28)
    data_off, file_size = struct.unpack_from("<QQ", raw, 52)
    assert models_off == 128 and strings_off == 128 + 2 * 64
    assert file_size == len(raw) and data_off % 64 == 0 and cells_off % 64 == 0
    assert raw[68:100] == bytes.fromhex(B.provenance_key(PROV))
    assert raw[prov_off : prov_off + prov_size] == B.canonical_json(PROV)
    assert raw[strings_off : strings_off + strings_size].split(b"\0")[:2] == [b"World\\NoDXT\\Detail\\A.m2",
                                                                              b"World\\NoDXT\\Detail\\Missing.m2"]
    # model record 0: path offset/size, data offset, count, flags, bbox, z range
    po, ps, doff, count, flags = struct.unpack_from("<IIQII", raw, models_off)
    assert (po, ps, flags) == (0, len("World\\NoDXT\\Detail\\A.m2"), 1)
    assert doff == data_off and doff % 64 == 0
    assert struct.unpack_from("<8f", raw, models_off + 24) == (-1.0, -2.0, 0.0, 1.0, 2.0, 0.5, 0.0, 0.5)
    assert struct.unpack_from("<I", raw, models_off + 64 + 20)[0] == 0  # model 2: not present
    # checksum: crc32 of everything but its own 4 bytes at 124
    crc = zlib.crc32(raw[128:], zlib.crc32(raw[:124])) & 0xFFFFFFFF
    assert struct.unpack_from("<I", raw, 124)[0] == crc


def test_empty_bundle(tmp_path):
    kw, _ = sample_inputs(n=0)
    path = B.write_bundle(tmp_path / "e.wgb", **kw)
    with B.read_bundle(path) as b:
        assert b.instance_count == 0 and b.models == []
        assert b.stats()["cells"]["max"] >= 0


def _patched(raw: bytes, offset: int, value: bytes, fix_checksum=True) -> bytes:
    buf = bytearray(raw)
    buf[offset : offset + len(value)] = value
    if fix_checksum:
        struct.pack_into("<I", buf, 124, zlib.crc32(buf[128:], zlib.crc32(buf[:124])) & 0xFFFFFFFF)
    return bytes(buf)


def test_damage_is_detected(tmp_path):
    kw, _ = sample_inputs(n=300)
    raw = B.bundle_bytes(**kw)
    p = tmp_path / "b.wgb"
    # a flipped bit anywhere (instances, provenance, header) fails the checksum
    for off in (len(raw) - 20, 200, 30):
        p.write_bytes(_patched(raw, off, bytes([raw[off] ^ 0x10]), fix_checksum=False))
        with pytest.raises(ChecksumError):
            B.read_bundle(p)
    # truncation at any length
    for n in (0, 3, 100, 127, 128, 500, len(raw) // 2, len(raw) - 1):
        p.write_bytes(raw[:n])
        with pytest.raises(TruncatedError):
            B.read_bundle(p)
    # another format version: stale, even with a valid checksum
    p.write_bytes(_patched(raw, 4, struct.pack("<H", B.FORMAT_VERSION + 1)))
    with pytest.raises(StaleBundleError, match="format version"):
        B.read_bundle(p)
    # a provenance key other than the expected one: stale
    p.write_bytes(raw)
    with pytest.raises(StaleBundleError, match="provenance key"):
        B.read_bundle(p, expect_key="0" * 64)
    # not a bundle at all
    p.write_bytes(b"MZ" + raw[2:])
    with pytest.raises(FormatError, match="not a wowgrass bundle"):
        B.read_bundle(p)
    # a model range pointing past the end (checksum fixed so the structure check is what fires)
    p.write_bytes(_patched(raw, 128 + 16, struct.pack("<I", 10**6)))
    with pytest.raises(FormatError, match="outside the file|instances"):
        B.read_bundle(p)


def test_write_is_atomic(tmp_path, monkeypatch):
    kw, _ = sample_inputs(n=50)
    path = B.write_bundle(tmp_path / "a.wgb", **kw)
    before = path.read_bytes()

    import wowgrass.fileio as fileio

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(fileio.os, "replace", boom)
    kw2, _ = sample_inputs(n=60, seed=1)
    with pytest.raises(OSError, match="disk full"):
        B.write_bundle(path, **kw2)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.wgb"]  # no temporary left over


def test_scatter_order_block_puts_the_instances_back_in_input_order(tmp_path):
    from wowgrass.grass.bundle import FLAG_CAPACITY, FLAG_SCATTER_ORDER, ModelInfo, bundle_bytes, read_bundle, read_header

    rng = np.random.default_rng(5)
    n = 257
    model = rng.integers(0, 3, n)
    pos = rng.uniform(-500, 500, (n, 3)).astype(np.float32)
    models = [ModelInfo(f"World\\NoDXT\\Detail\\M{i}.m2") for i in range(3)]
    args = dict(model_index=model, pos=pos, yaw=np.zeros(n), scale=np.ones(n), models=models,
                provenance={"tile": [1, 2]}, tile=(1, 2))
    p = tmp_path / "o.wgb"
    p.write_bytes(bundle_bytes(**args, scatter_order=True, capacity_dropped=9))
    h = read_header(p.read_bytes())
    assert h["flags"] == FLAG_SCATTER_ORDER | FLAG_CAPACITY and h["order_offset"] % 64 == 0
    with read_bundle(p) as b:
        rows = b.instances()
        back = np.empty_like(rows)
        back[b.scatter_order] = rows
        assert np.array_equal(back["pos"], pos) and b.capacity_dropped == 9
        assert b.stats()["scatter_order"] is True and b.stats()["capacity_dropped_count"] == 9
    # without them: the layout of before (flags 0, zeros where the fields are)
    p.write_bytes(bundle_bytes(**args))
    h = read_header(p.read_bytes())
    assert (h["flags"], h["order_offset"], h["capacity_dropped"]) == (0, 0, 0)
    with read_bundle(p) as b:
        assert b.scatter_order is None and b.capacity_dropped is None
