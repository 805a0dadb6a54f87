"""wowgrass.fileio's small parts directly: the umask read without changing it, folders made or
refused, checks before work, images by suffix, private temporary folders, the sweep of a dead
writer's temporaries, and write_atomic's blocks, streams and failures (test_write_all_or_none.py
has the several-files writer; test_direct_write.py the O_DIRECT path)."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from wowgrass import fileio as F
from wowgrass.errors import OutputError, UsageError


@pytest.fixture
def umask_027():
    old = os.umask(0o027)
    yield
    os.umask(old)


def test_current_umask_reads_it_and_leaves_it(umask_027):
    assert F.current_umask() == 0o027
    assert F.current_umask() == 0o027          # unchanged by the first read
    os.umask(0o002)
    assert F.current_umask() == 0o002


def test_current_umask_without_proc(umask_027, monkeypatch):
    import builtins

    real_open = builtins.open

    def no_proc(path, *a, **k):
        if str(path).startswith("/proc/"):
            raise OSError(errno.ENOENT, "no /proc")
        return real_open(path, *a, **k)

    monkeypatch.setattr(builtins, "open", no_proc)
    assert F.current_umask() == 0o027
    monkeypatch.undo()
    assert F.current_umask() == 0o027          # put back after the swap


def test_write_atomic_takes_bytes_blocks_and_the_umask(tmp_path, umask_027):
    p = F.write_atomic(tmp_path / "sub" / "a.bin", b"abc")
    assert p == tmp_path / "sub" / "a.bin" and p.read_bytes() == b"abc"
    assert stat.S_IMODE(p.stat().st_mode) == 0o640
    F.write_atomic(p, (b for b in (b"x", memoryview(b"yz"), bytearray(b"!"))), durable=False)
    assert p.read_bytes() == b"xyz!"
    assert sorted(q.name for q in p.parent.iterdir()) == ["a.bin"]


def test_write_atomic_of_a_failing_stream_leaves_the_old_file(tmp_path):
    p = tmp_path / "a.bin"
    p.write_bytes(b"old")

    def rows():
        yield b"new"
        raise ValueError("the rows ran out")

    with pytest.raises(ValueError):
        F.write_atomic(p, rows())
    assert p.read_bytes() == b"old" and [q.name for q in tmp_path.iterdir()] == ["a.bin"]


def test_write_atomic_on_a_folder_in_the_way(tmp_path):
    (tmp_path / "f").mkdir()
    with pytest.raises(IsADirectoryError):     # the caller's to word (its argument named a folder)
        F.write_atomic(tmp_path / "f", b"1")
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(OutputError, match="a file is in the way of this folder"):
        F.write_atomic(tmp_path / "file" / "x", b"1")
    assert [q.name for q in sorted(tmp_path.iterdir())] == ["f", "file"]


def test_make_dirs_and_its_errors(tmp_path):
    assert F.make_dirs(tmp_path / "a" / "b") == tmp_path / "a" / "b" and (tmp_path / "a" / "b").is_dir()
    assert F.make_dirs(tmp_path / "a" / "b") == tmp_path / "a" / "b"          # there already
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if os.geteuid() != 0:
            with pytest.raises(OutputError) as err:
                F.make_dirs(ro / "x")
            assert err.value.filename == str(ro / "x")
    finally:
        ro.chmod(0o700)


def test_sweep_removes_a_dead_writers_and_old_temporaries_only(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    me = os.getpid()
    names = {f".a.{dead}.xyz12345.tmp": True,      # its writer is gone
             f".a.{me}.abc98765.tmp": False,       # mine, fresh
             f".b.{me}.old12345.tmp": True,        # mine but older than the limit
             "a": False, ".a.nopid.tmp": False}
    for n in names:
        (tmp_path / n).write_bytes(b"t")
    old = time.time() - 7200
    os.utime(tmp_path / f".b.{me}.old12345.tmp", (old, old))
    removed = F.sweep_temporaries(tmp_path)
    assert removed == 2
    assert sorted(q.name for q in tmp_path.iterdir()) == sorted(n for n, gone in names.items() if not gone)
    assert F.sweep_temporaries(tmp_path, ".a.*.tmp", older_than=0.0) == 2   # the pattern, and age 0
    assert sorted(q.name for q in tmp_path.iterdir()) == ["a"]
    assert F.pid_alive(me) and not F.pid_alive(int(dead))


def test_image_format_and_write_image(tmp_path):
    from PIL import Image

    assert F.image_format("x.PNG") == "PNG" and F.image_format(Path("a/b.jpeg")) == "JPEG"
    assert F.image_format("t.tif") == "TIFF" and F.image_format("t.webp") == "WEBP"
    with pytest.raises(UsageError) as err:
        F.image_format("x.gif")
    assert str(err.value) == ("x.gif: the image format follows the file's suffix; use one of .bmp, .jpeg, .jpg, "
                              ".png, .tga, .tif, .tiff, .webp")
    rgba = np.zeros((4, 6, 4), np.uint8)
    rgba[..., 0], rgba[..., 3] = 200, 255
    for name, fmt, mode in (("a.png", "PNG", "RGBA"), ("a.jpg", "JPEG", "RGB"), ("a.bmp", "BMP", "RGB")):
        assert F.write_image(tmp_path / name, rgba) == tmp_path / name
        with Image.open(tmp_path / name) as im:
            assert (im.format, im.mode, im.size) == (fmt, mode, (6, 4))
            assert abs(int(np.asarray(im)[0, 0, 0]) - 200) <= 3
    F.write_image(tmp_path / "b.png", Image.fromarray(rgba[..., :3]))
    with Image.open(tmp_path / "b.png") as im:
        assert im.mode == "RGB"
    with pytest.raises(UsageError):
        F.write_image(tmp_path / "c.xyz", rgba)
    assert not (tmp_path / "c.xyz").exists()


def test_temp_dir_takes_the_umask(tmp_path, umask_027):
    d = F.temp_dir("work-", tmp_path)
    assert d.parent == tmp_path and d.name.startswith("work-") and d.is_dir()
    assert stat.S_IMODE(d.stat().st_mode) == 0o750
    with pytest.raises(OutputError) as err:
        F.temp_dir("x-", tmp_path / "missing")
    assert err.value.filename == str(tmp_path / "missing")


def test_check_output_file(tmp_path):
    assert F.check_output_file(tmp_path / "new.png") is False
    (tmp_path / "old.png").write_bytes(b"x")
    assert F.check_output_file(tmp_path / "old.png") is True
    with pytest.raises(OutputError) as err:
        F.check_output_file(tmp_path)
    assert (str(err.value), err.value.errno) == (f"cannot write {tmp_path}: is a folder; give a file name", errno.EISDIR)
    with pytest.raises(OutputError) as err:
        F.check_output_file(tmp_path / "no" / "x.png")
    assert (str(err.value), err.value.errno) == (
        f"cannot write {tmp_path / 'no' / 'x.png'}: folder {tmp_path / 'no'} does not exist", errno.ENOENT)
    with pytest.raises(OutputError) as err:
        F.check_output_file("/proc/x.png")
    assert (str(err.value), err.value.errno) == ("cannot write /proc/x.png: the folder takes no new files", errno.ENOENT)
    assert sorted(q.name for q in tmp_path.iterdir()) == ["old.png"]   # the probe left nothing


def test_check_output_folder(tmp_path):
    assert F.check_output_folder(tmp_path / "a" / "b") == tmp_path / "a" / "b"
    assert list((tmp_path / "a" / "b").iterdir()) == []
    with pytest.raises(OutputError) as err:
        F.check_output_folder("/proc/wowgrass-out")
    assert (str(err.value), err.value.errno) == (
        "cannot write /proc/wowgrass-out: the folder above takes no new folders", errno.ENOENT)
    with pytest.raises(OutputError) as err:
        F.check_output_folder("/proc/self")        # there, takes no new files
    assert (str(err.value), err.value.errno) == ("cannot write /proc/self: the folder takes no new files", errno.ENOENT)
    (tmp_path / "f").write_bytes(b"")
    with pytest.raises(OutputError, match="a file is in the way"):
        F.check_output_folder(tmp_path / "f")


def test_aligned_blocks(tmp_path):
    buf = F.aligned_scratch(10)
    assert len(buf) >= F.DIRECT_ALIGN and F.aligned_size(1) == F.DIRECT_ALIGN and F.aligned_size(0) == 0
    assert F.aligned_size(F.DIRECT_ALIGN + 1) == 2 * F.DIRECT_ALIGN
    buf[:5] = b"hello"
    block = F.AlignedBlock(buf, 5)
    assert bytes(block.data) == b"hello" and len(block.padded) == F.DIRECT_ALIGN
    assert [bytes(b) for b in block] == [b"hello"]
    with pytest.raises(ValueError, match="needs"):
        F.AlignedBlock(bytearray(10), F.DIRECT_ALIGN + 1)
    F.write_atomic(tmp_path / "d.bin", block)
    assert (tmp_path / "d.bin").read_bytes() == b"hello"


@pytest.mark.parametrize(("code", "reason"), [(28, "no space left on the device"), (13, "permission denied"),
                                              (5, "Input/output error")])
def test_checks_name_the_reason_a_folder_refuses_a_file(tmp_path, monkeypatch, code, reason):
    import tempfile

    def refuse(*a, **k):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    with pytest.raises(OutputError) as err:
        F.check_output_file(tmp_path / "x.png")
    assert (str(err.value), err.value.errno) == (f"cannot write {tmp_path / 'x.png'}: {reason}", code)
    with pytest.raises(OutputError) as err:
        F.check_output_folder(tmp_path / "out")
    assert (str(err.value), err.value.errno) == (f"cannot write {tmp_path / 'out'}: {reason}", code)


def test_sweep_goes_past_kept_old_bytes(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    for k in range(12):
        (tmp_path / f".f{k}.{dead}.abcdefgh.tmp").write_bytes(b"t")
        (tmp_path / f".f{k}.{dead}.old.tmp").write_bytes(b"old bytes")
    assert F.sweep_temporaries(tmp_path, older_than=0.0) == 12
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f".f{k}.{dead}.old.tmp" for k in range(12))


def test_direct_writes_where_the_system_has_them():
    assert F.direct_writes() is bool(getattr(os, "O_DIRECT", 0)) and (F.direct_writes() or sys.platform != "linux")
