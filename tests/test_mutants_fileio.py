"""What fileio.py promises where the ordinary tests do not look (issue 49's mutation target): the
reason a failed roll-back gives for any kind of failure, a temporary of a live writer of another
user, systems without O_DIRECT or refusing it, short direct writes, and an aligned block's bytes."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import numpy as np
import pytest

from wowgrass import fileio as F
from wowgrass.errors import OutputError


def stuck_put_back(monkeypatch, failure: BaseException, fail_at: int):
    """os.replace raises ``failure`` on its ``fail_at``-th call, and EIO on every put-back of a
    file's old bytes (a replace from its ``.old.tmp`` second name)."""
    real = os.replace
    calls = []

    def replace(src, dst, *a, **k):
        calls.append(src)
        if len(calls) == fail_at:
            raise failure
        if str(src).endswith(".old.tmp"):
            raise OSError(errno.EIO, "Input/output error", str(dst))
        return real(src, dst, *a, **k)

    monkeypatch.setattr(os, "replace", replace)


def two_old_files(tmp_path: Path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"old a")
    b.write_bytes(b"old b")
    return a, b


@pytest.mark.parametrize(("failure", "reason", "code"), [
    (OSError(errno.EIO, "Input/output error"), "Input/output error", errno.EIO),    # no reason of ours: the system's
    (OSError(errno.ENOSPC, "No space left on device"), "no space left on the device", errno.ENOSPC),
    (OSError("the disk went away"), "the disk went away", None),                     # no errno: its own message
])
def test_a_stuck_roll_back_gives_the_failures_reason_and_every_file_left(tmp_path, monkeypatch, failure, reason,
                                                                         code):
    a, b = two_old_files(tmp_path)
    c = tmp_path / "c"
    stuck_put_back(monkeypatch, failure, 3)       # a and b replaced, c's rename fails, a and b cannot go back
    with pytest.raises(OutputError) as err:
        F.write_files_atomic({a: b"new a", b: b"new b", c: b"c"})
    monkeypatch.undo()
    assert str(err.value) == (f"cannot write {c}: {reason}; putting the files already written back failed too: "
                              f"{a} keeps the new bytes, its old bytes are in {tmp_path / 'a.old'}; "
                              f"{b} keeps the new bytes, its old bytes are in {tmp_path / 'b.old'}")
    assert err.value.errno == code and err.value.filename == str(c)
    assert err.value.left_changed == [(a, tmp_path / "a.old"), (b, tmp_path / "b.old")]


def test_an_interrupt_with_a_stuck_roll_back_names_itself_in_its_note(tmp_path, monkeypatch):
    a, b = two_old_files(tmp_path)
    c = tmp_path / "c"
    stuck_put_back(monkeypatch, KeyboardInterrupt(), 3)
    with pytest.raises(KeyboardInterrupt) as err:
        F.write_files_atomic({a: b"new a", b: b"new b", c: b"c"})
    monkeypatch.undo()
    assert err.value.left_changed == [(a, tmp_path / "a.old"), (b, tmp_path / "b.old")]   # in the order written
    notes = getattr(err.value, "__notes__", None)
    if notes is None:
        pytest.skip("exceptions take no notes before Python 3.11")
    assert notes == [f"cannot write {c}: KeyboardInterrupt; putting the files already written back failed too: "
                     f"{a} keeps the new bytes, its old bytes are in {tmp_path / 'a.old'}; "
                     f"{b} keeps the new bytes, its old bytes are in {tmp_path / 'b.old'}"]


def test_a_temporary_of_a_live_writer_of_another_user_stays(tmp_path, monkeypatch):
    """os.kill(pid, 0) of another user's process: PermissionError, so it is running."""
    me = os.getpid()
    name = f".a.{me + 1}.abcdefgh.tmp"
    (tmp_path / name).write_bytes(b"t")

    def kill(pid, sig):
        assert sig == 0
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "kill", kill)
    assert F.pid_alive(me + 1) is True
    assert F.sweep_temporaries(tmp_path) == 0 and (tmp_path / name).exists()


def block_of(payload: bytes) -> F.AlignedBlock:
    buf = F.aligned_scratch(len(payload))
    buf[: len(payload)] = payload
    buf[len(payload):] = b"\xee" * (len(buf) - len(payload))   # padding that must not reach the file
    return F.AlignedBlock(buf, len(payload))


def test_an_aligned_block_gives_its_bytes_as_bytes():
    payload = bytes(range(256)) * 3                     # values above 127 too
    block = block_of(payload)
    assert block.data == payload and block.data.tolist() == list(payload)
    assert block.buffer.format == "B" and block.padded.tolist()[len(payload):] == [0xEE] * (F.DIRECT_ALIGN - len(payload))


def test_a_system_without_o_direct_writes_aligned_blocks_plainly(tmp_path, monkeypatch):
    monkeypatch.delattr(os, "O_DIRECT", raising=False)
    assert F.direct_writes() is False
    payload = os.urandom(5000)
    fd = os.open(tmp_path / "probe", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        assert F._write_direct(fd, block_of(payload)) is False
    finally:
        os.close(fd)
    assert (tmp_path / "probe").read_bytes() == b""             # nothing written that way
    assert F.write_atomic(tmp_path / "f.bin", block_of(payload)).read_bytes() == payload


needs_o_direct = pytest.mark.skipif(not hasattr(os, "O_DIRECT"), reason="no O_DIRECT on this system")


@needs_o_direct
def test_a_file_that_refuses_the_o_direct_flag_is_written_plainly(tmp_path, monkeypatch):
    import fcntl

    real = fcntl.fcntl

    def refuse(fd, cmd, arg=0):
        if cmd == fcntl.F_SETFL and arg & os.O_DIRECT:
            raise OSError(errno.EINVAL, "Invalid argument")
        return real(fd, cmd, arg)

    monkeypatch.setattr(fcntl, "fcntl", refuse)
    payload = os.urandom(9000)
    fd = os.open(tmp_path / "probe", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        assert F._write_direct(fd, block_of(payload)) is False
    finally:
        os.close(fd)
    assert (tmp_path / "probe").read_bytes() == b""
    assert F.write_atomic(tmp_path / "f.bin", block_of(payload), durable=False).read_bytes() == payload


@needs_o_direct
def test_short_direct_writes_go_on_from_where_they_stopped(tmp_path, monkeypatch):
    """A file system taking O_DIRECT writes of aligned buffers (EINVAL otherwise), two pages a call."""
    import fcntl

    real = os.write
    writes = []

    def write(fd, data):
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        if not flags & os.O_DIRECT:
            return real(fd, data)
        assert len(writes) < 50, "the writer keeps writing the same bytes"
        view = np.frombuffer(data, np.uint8)
        if view.ctypes.data % F.DIRECT_ALIGN or view.size % F.DIRECT_ALIGN:
            raise OSError(errno.EINVAL, "Invalid argument")
        part = bytes(view[: 2 * F.DIRECT_ALIGN])
        writes.append(len(part))
        fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_DIRECT)   # (the real file system may not take it)
        try:
            return real(fd, part)
        finally:
            fcntl.fcntl(fd, fcntl.F_SETFL, flags)

    monkeypatch.setattr(os, "write", write)
    payload = os.urandom(5 * F.DIRECT_ALIGN + 123)
    fd = os.open(tmp_path / "f.bin", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        assert F._write_direct(fd, block_of(payload)) is True
    finally:
        os.close(fd)
    assert writes == [2 * F.DIRECT_ALIGN, 2 * F.DIRECT_ALIGN, 2 * F.DIRECT_ALIGN]
    assert (tmp_path / "f.bin").read_bytes() == payload


def test_a_bmp_of_rgba_pixels_is_written_24_bit(tmp_path):
    """BMP has no alpha most readers honour (Pillow reads a 32-bit BMP back as RGB too): the alpha
    is dropped, three bytes a pixel, as for JPEG."""
    rgba = np.zeros((2, 4, 4), np.uint8)
    rgba[..., 0], rgba[..., 3] = 200, 128
    raw = F.write_image(tmp_path / "a.bmp", rgba).read_bytes()
    bits, = np.frombuffer(raw[28:30], "<u2")
    assert raw[:2] == b"BM" and int(bits) == 24


def test_writes_are_flushed_to_disk_unless_told_not_to(tmp_path, monkeypatch):
    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd))[1])
    F.write_atomic(tmp_path / "a", b"a")
    assert len(synced) == 1
    F.write_atomic(tmp_path / "b", b"b", durable=False)
    F.write_atomic(tmp_path / "c", [b"c", b"d"], durable=False)
    assert len(synced) == 1
    F.write_files_atomic({tmp_path / "d": b"d", tmp_path / "e": b"e"})
    assert len(synced) == 3
    assert [(tmp_path / n).read_bytes() for n in "abcde"] == [b"a", b"b", b"cd", b"d", b"e"]


def test_the_temporary_is_a_hidden_file_beside_the_target_named_for_the_sweep(tmp_path, monkeypatch):
    """``.NAME.PID.XXXXXXXX.tmp`` in the target's folder: hidden, on the target's file system (the
    rename stays a rename), and what the next write's sweep removes once its writer is gone."""
    import re

    seen = []
    real = F._write_file

    def spy(fd, data, durable):
        seen.append(Path(os.readlink(f"/proc/self/fd/{fd}")))
        return real(fd, data, durable)

    if not Path("/proc/self/fd").is_dir():
        pytest.skip("no /proc to name an open file")
    monkeypatch.setattr(F, "_write_file", spy)
    target = tmp_path / "sub" / "tile.adt"
    F.write_atomic(target, b"x")
    F.write_files_atomic({target: b"y"})
    assert len(seen) == 2
    for tmp in seen:
        assert tmp.parent == target.parent
        assert re.fullmatch(rf"\.tile\.adt\.{os.getpid()}\.[^.]+\.tmp", tmp.name), tmp.name
    assert not [p for p in target.parent.iterdir() if p != target]


def test_a_folder_that_takes_no_temporary_file_is_named_with_the_reason(tmp_path, monkeypatch):
    import tempfile

    def refuse(code):
        def mkstemp(*a, **k):
            raise OSError(code, os.strerror(code))
        return mkstemp

    target = tmp_path / "t.bin"
    for code, reason in ((errno.ENOENT, "the folder takes no new files"), (errno.EACCES, "permission denied")):
        monkeypatch.setattr(tempfile, "mkstemp", refuse(code))
        with pytest.raises(OutputError) as err:
            F.write_atomic(target, b"x")
        assert (str(err.value), err.value.errno, err.value.filename) == (f"cannot write {target}: {reason}", code,
                                                                           str(target))


def test_a_rename_refused_names_the_target(tmp_path, monkeypatch):
    def refuse(src, dst):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OutputError) as err:
        F.write_atomic(tmp_path / "t.bin", b"x")
    assert (str(err.value), err.value.filename) == (f"cannot write {tmp_path / 't.bin'}: read-only file system",
                                                    str(tmp_path / "t.bin"))
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []


def test_a_failing_chmod_is_the_error_and_leaves_nothing(tmp_path, monkeypatch):
    def refuse(fd, mode):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "fchmod", refuse)
    with pytest.raises(OutputError, match="operation not permitted"):
        F.write_atomic(tmp_path / "t.bin", b"x")
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []


def test_a_written_file_takes_the_umask(tmp_path):
    import stat

    old = os.umask(0o002)
    try:
        F.write_atomic(tmp_path / "a", b"a")
        F.write_files_atomic({tmp_path / "b": b"b"})
    finally:
        os.umask(old)
    assert [stat.S_IMODE((tmp_path / n).stat().st_mode) for n in "ab"] == [0o664, 0o664]


def test_a_write_sweeps_its_own_files_dead_temporaries_only(tmp_path):
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    mine, other = tmp_path / f".t.bin.{dead}.abcdefgh.tmp", tmp_path / f".u.bin.{dead}.abcdefgh.tmp"
    mine.write_bytes(b"left by a killed writer")
    other.write_bytes(b"another file's")
    F.write_atomic(tmp_path / "t.bin", b"x")
    assert not mine.exists() and other.exists()
    mine.write_bytes(b"again")
    F.write_atomic(tmp_path / "t.bin", b"y", sweep=False)
    assert mine.exists()


@needs_o_direct
def test_a_short_write_off_the_alignment_falls_back_to_plain_writes(tmp_path, monkeypatch):
    import fcntl

    real = os.write

    def write(fd, data):
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        if not flags & os.O_DIRECT:
            return real(fd, data)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_DIRECT)
        try:
            return real(fd, bytes(data[:100]))               # a short write, off the alignment
        finally:
            fcntl.fcntl(fd, fcntl.F_SETFL, flags)

    monkeypatch.setattr(os, "write", write)
    payload = os.urandom(3 * F.DIRECT_ALIGN + 7)
    fd = os.open(tmp_path / "probe", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        assert F._write_direct(fd, block_of(payload)) is False
        assert os.lseek(fd, 0, os.SEEK_CUR) == 0
    finally:
        os.close(fd)
    assert (tmp_path / "probe").read_bytes() == b""
    assert F.write_atomic(tmp_path / "f.bin", block_of(payload), durable=False).read_bytes() == payload


def address(view) -> int:
    return np.frombuffer(view, np.uint8).ctypes.data


def test_the_scratch_buffer_is_kept_grows_and_is_one_a_thread(monkeypatch):
    import threading

    monkeypatch.setattr(F, "_SCRATCH", threading.local())      # a fresh start for this thread
    a = F.aligned_scratch(10)
    assert len(a) == F.DIRECT_ALIGN and address(a) % F.DIRECT_ALIGN == 0
    b = F.aligned_scratch(200_000)                             # within the first buffer (a MiB at least)
    assert address(b) == address(a) and len(b) == F.aligned_size(200_000)
    c = F.aligned_scratch(1 << 20)
    assert address(c) == address(a)
    d = F.aligned_scratch(3 << 20)                             # more: a new, larger buffer
    assert len(d) == 3 << 20 and address(d) % F.DIRECT_ALIGN == 0
    assert address(F.aligned_scratch(3 << 20)) == address(d)
    other = []
    t = threading.Thread(target=lambda: other.append(address(F.aligned_scratch(10))))
    t.start()
    t.join()
    assert other and other[0] not in (address(a), address(d))


def test_the_umask_is_read_without_swapping_it_where_proc_has_it(monkeypatch):
    """os.umask can only swap the mask: another thread creating a file meanwhile would get the
    temporary one. Where /proc gives it, it is only read."""
    if not Path("/proc/self/status").is_file():
        pytest.skip("no /proc: the mask is swapped and put back")
    swaps = []
    real = os.umask
    monkeypatch.setattr(os, "umask", lambda mask: (swaps.append(mask), real(mask))[1])
    mask = real(0o027)
    try:
        real(0o027)
        assert F.current_umask() == 0o027 and swaps == []
    finally:
        real(mask)


def test_a_live_writers_temporary_older_than_an_hour_is_swept(tmp_path):
    import time

    old, fresh = tmp_path / f".a.{os.getpid()}.abcdefgh.tmp", tmp_path / f".b.{os.getpid()}.abcdefgh.tmp"
    for p, age in ((old, 3600.3), (fresh, 3599.0)):
        p.write_bytes(b"t")
        os.utime(p, (time.time() - age, time.time() - age))
    assert F.sweep_temporaries(tmp_path) == 1 and not old.exists() and fresh.exists()


def test_a_file_in_the_way_of_a_folder_is_named(tmp_path):
    (tmp_path / "f").write_bytes(b"")
    with pytest.raises(OutputError) as err:
        F.make_dirs(tmp_path / "f")
    assert (str(err.value), err.value.filename) == (f"cannot write {tmp_path / 'f'}: a file is in the way of this "
                                                    "folder", str(tmp_path / "f"))


def test_an_aligned_block_written_plainly_is_flushed_once(tmp_path, monkeypatch):
    monkeypatch.delattr(os, "O_DIRECT", raising=False)
    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd))[1])
    payload = os.urandom(5000)
    assert F.write_atomic(tmp_path / "f.bin", block_of(payload)).read_bytes() == payload
    assert len(synced) == 1
    F.write_atomic(tmp_path / "g.bin", block_of(payload), durable=False)
    assert len(synced) == 1


def test_a_folder_that_cannot_be_made_is_named(tmp_path, monkeypatch):
    def refuse(self, *a, **k):
        raise PermissionError(errno.EACCES, "Permission denied", str(self))

    monkeypatch.setattr(Path, "mkdir", refuse)
    with pytest.raises(OutputError) as err:
        F.make_dirs(tmp_path / "a" / "b")
    assert (str(err.value), err.value.filename, err.value.errno) == (
        f"cannot write {tmp_path / 'a' / 'b'}: permission denied", str(tmp_path / "a" / "b"), errno.EACCES)
