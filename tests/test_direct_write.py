"""Bundles written past the page cache (O_DIRECT) by a map's bake, and what the bake's writer
takes from the placement (issue 32: the bundle write)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import numpy as np
import pytest

from wowgrass import fileio
from wowgrass.errors import OutputError
from wowgrass.grass import bundle as B
from wowgrass.grass.bake import bake_map
from wowgrass.samples import MAP_NAME, build_sample_world

direct_only = pytest.mark.skipif(not fileio.direct_writes(), reason="no O_DIRECT on this system")


def _block(payload: bytes) -> fileio.AlignedBlock:
    buf = fileio.aligned_scratch(len(payload))
    buf[: len(payload)] = payload
    buf[len(payload):] = b"\xee" * (len(buf) - len(payload))  # padding that must not reach the file
    return fileio.AlignedBlock(buf, len(payload))


@pytest.mark.parametrize("size", [1, 4095, 4096, 4097, 3 * 4096 + 5])
def test_an_aligned_block_lands_as_its_bytes(tmp_path, size):
    payload = os.urandom(size)
    out = fileio.write_atomic(tmp_path / "f.bin", _block(payload), durable=True)
    assert out.read_bytes() == payload
    assert [p.name for p in tmp_path.iterdir()] == ["f.bin"]  # no temporary left


def _file_system(path) -> str:
    """The type of the file system holding ``path`` (/proc/self/mounts' longest mount point above it)."""
    path, best = str(Path(path).resolve()), ("", "unknown")
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                _dev, point, kind = line.split()[:3]
                point = point.replace("\\040", " ")
                if (path == point or path.startswith(point.rstrip("/") + "/")) and len(point) > len(best[0]):
                    best = (point, kind)
    except OSError:
        pass
    return best[1]


def _takes_direct_writes(folder) -> bool:
    fd = os.open(Path(folder) / "probe", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        took = fileio._write_direct(fd, _block(b"abc"))
    finally:
        os.close(fd)
    if took:
        assert (Path(folder) / "probe").read_bytes() == b"abc"
    os.unlink(Path(folder) / "probe")
    return took


@pytest.fixture
def direct_folder(tmp_path):
    """``tmp_path`` where its file system takes O_DIRECT writes; a skip naming the file system where
    it does not (tmpfs before Linux 6.6: the bake then writes plain, which the tests above cover)."""
    if not fileio.direct_writes():
        pytest.skip("no O_DIRECT on this system: the bake writes through the page cache")
    if not _takes_direct_writes(tmp_path):
        pytest.skip(f"{tmp_path} is on {_file_system(tmp_path)}, which takes no O_DIRECT writes: the direct "
                    "path cannot be checked here (set TMPDIR to a disk's folder)")
    return tmp_path


def test_the_direct_path_is_taken_where_the_file_system_takes_it(direct_folder):
    assert _takes_direct_writes(direct_folder)


@pytest.fixture
def write_paths(monkeypatch):
    """How many writes went past the page cache (``direct``) and how many tried and were refused."""
    taken = {"direct": 0, "refused": 0}
    real = fileio._write_direct

    def spy(fd, block):
        took = real(fd, block)
        taken["direct" if took else "refused"] += 1
        return took

    monkeypatch.setattr(fileio, "_write_direct", spy)
    return taken


@direct_only
def test_a_file_system_that_refuses_direct_writes_gets_plain_ones(tmp_path, monkeypatch):
    import fcntl

    real_write = os.write
    refused = []

    def write(fd, data):
        if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_DIRECT:
            refused.append(fd)
            raise OSError(errno.EINVAL, "Invalid argument")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", write)
    payload = os.urandom(10_000)
    fileio.write_atomic(tmp_path / "f.bin", _block(payload), durable=False)
    assert refused and (tmp_path / "f.bin").read_bytes() == payload


@direct_only
def test_a_full_disk_during_a_direct_write_is_an_output_error(tmp_path, monkeypatch):
    import fcntl

    real_write = os.write

    def write(fd, data):
        if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_DIRECT:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", write)
    (tmp_path / "f.bin").write_bytes(b"old")
    with pytest.raises(OutputError, match="no space left"):
        fileio.write_atomic(tmp_path / "f.bin", _block(b"new" * 5000), durable=False)
    assert (tmp_path / "f.bin").read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.bin"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this system")
def test_a_forked_worker_does_not_share_the_scratch_buffer():
    """Bake workers are forked from a process that may have baked already: each must fill a
    buffer of its own (a shared one mixed two tiles' bundles into one file)."""
    parent = fileio.aligned_scratch(8192)
    parent[:4] = b"PPPP"
    pid = os.fork()
    if pid == 0:  # the child: writes into its buffer, and into the one it inherited, and leaves
        child = fileio.aligned_scratch(8192)
        child[:4] = b"CCCC"
        parent[4:8] = b"CCCC"
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert bytes(fileio.aligned_scratch(8192)[:4]) == b"PPPP"
    assert bytes(parent[4:8]) != b"CCCC"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return build_sample_world(tmp_path_factory.mktemp("direct") / "w", "3.3.5", (2, 1), seed=0)


def test_direct_and_page_cache_bakes_write_the_same_bundles(world, direct_folder, monkeypatch, write_paths):
    out = {}
    for direct in (True, False):
        monkeypatch.setenv("WOWGRASS_CACHE", str(direct_folder / f"c{direct}"))
        before = dict(write_paths)
        results, failures = bake_map(world, MAP_NAME, jobs=1, direct=direct)
        assert not failures and len(results) == 2
        # the path taken: both bundles past the page cache, or both through it
        went = {k: write_paths[k] - before[k] for k in write_paths}
        assert went == {"direct": 2 if direct else 0, "refused": 0}, went
        out[direct] = {r.tile: Path(r.path).read_bytes() for r in results}
        for r in results:  # each reads back valid: size, checksum, key
            with B.read_bundle(r.path, expect_key=r.key) as b:
                assert b.instance_count == r.instances > 0
    assert out[True] == out[False]


def test_what_the_coverage_placement_hands_the_writer_is_what_it_would_compute(world):
    from wowgrass.game.data import open_data
    from wowgrass.game.maps import map_tiles
    from wowgrass.game.tiles import adt_game_path, read_adt
    from wowgrass.grass.bake import load_catalog, make_strategy
    from wowgrass.grass.placement import Instances

    with open_data(world) as data:
        catalog = load_catalog(data=data)
        mt = map_tiles(data, MAP_NAME)
        name = adt_game_path(MAP_NAME, *mt.tiles[0])
        tile = read_adt(data.read(name), name, mt.big_alpha)
    inst = make_strategy("coverage", None).place(tile, catalog, map_name=MAP_NAME)
    assert inst.per_cell is not None and inst.records is not None and len(inst) > 1000
    plain = Instances(inst.model, np.array(inst.pos), inst.yaw, inst.scale, inst.chunk, inst.cell, inst.models)
    assert np.array_equal(inst.cell_counts(), plain.cell_counts())
    assert np.array_equal(inst.records, B._pack_words(plain.pos, plain.yaw, plain.scale))


def test_bake_no_direct_io_on_the_command_line(world, direct_folder, monkeypatch, write_paths):
    from click.testing import CliRunner

    from wowgrass.cli.main import cli

    out = {}
    for flag in ("--direct-io", "--no-direct-io"):
        monkeypatch.setenv("WOWGRASS_CACHE", str(direct_folder / flag))
        before = write_paths["direct"]
        res = CliRunner().invoke(cli, ["bake", "--data", str(world), flag, "--json"])
        assert res.exit_code == 0, res.output
        assert write_paths["direct"] - before == (2 if flag == "--direct-io" else 0), (flag, write_paths)
        out[flag] = sorted(Path(p).read_bytes() for p in (direct_folder / flag).rglob("*.wgb"))
    assert len(out["--direct-io"]) == 2 and out["--direct-io"] == out["--no-direct-io"]


def test_background_writes_run_one_at_a_time_and_raise_where_waited_for():
    import threading

    from wowgrass.grass.bake import BackgroundWrites

    writes, order, gate = BackgroundWrites(), [], threading.Event()
    try:
        writes.submit(lambda: (gate.wait(5), order.append("first")))
        gate.set()
        writes.submit(lambda: order.append("second"))  # waits for the first
        writes.wait()
        assert order == ["first", "second"]

        def full():
            raise OutputError(Path("x.wgb"), None, "no space left on the device")

        writes.submit(full)
        with pytest.raises(OutputError, match="no space left"):
            writes.wait()
        writes.wait()  # reported once
    finally:
        writes.close()
