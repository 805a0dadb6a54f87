"""Fault injection for the tests: a folder whose writes fail as a full disk, a read-only file
system or a forbidden folder would make them fail, without root tricks (chmod does not stop root,
and CI runs as root), by raising the errno at the calls wowgrass's writes go through."""

from __future__ import annotations

import contextlib
import errno as E
import io
import os
from pathlib import Path

ERRNOS = {"ENOSPC": E.ENOSPC, "EROFS": E.EROFS, "EACCES": E.EACCES}


def _under(path, folder: str) -> bool:
    try:
        p = os.path.abspath(os.fspath(path))
    except TypeError:
        return False
    return p == folder or p.startswith(folder + os.sep)


def _fd_path(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


@contextlib.contextmanager
def failing_folder(folder, name: str):
    """Writes under ``folder`` fail with ``name`` (ENOSPC, EROFS or EACCES).

    ENOSPC as a disk that fills up: files are created, then a write stops half-way (the bytes up to
    there do land, as on a real full disk). EROFS and EACCES as a folder that takes nothing: making
    a file or a folder, renaming into it and deleting in it fail."""
    import pytest

    from wowgrass import fileio

    monkeypatch = pytest.MonkeyPatch()
    folder = os.path.abspath(os.fspath(folder))
    err = ERRNOS[name]
    real_open, real_mkdir, real_replace, real_rename = os.open, os.mkdir, os.replace, os.rename
    real_write_file, real_io_open = fileio._write_file, io.open

    def fail(path):
        raise OSError(err, os.strerror(err), os.fspath(path))

    if name == "ENOSPC":
        def write_file(fd, data, durable):
            if _under(_fd_path(fd), folder):
                if not isinstance(data, (bytes, bytearray, memoryview)):   # a stream: its first block lands
                    data = next(iter(data), b"")
                view = memoryview(data)
                os.write(fd, view[: len(view) // 2])
                os.close(fd)
                fail(_fd_path(fd) or folder)
            return real_write_file(fd, data, durable)

        def io_open(file, mode="r", *a, **k):  # a library writing a file itself (PIL, pygltflib)
            if any(c in mode for c in "wax+") and _under(file, folder):
                fail(file)
            return real_io_open(file, mode, *a, **k)

        monkeypatch.setattr(fileio, "_write_file", write_file)
        monkeypatch.setattr(io, "open", io_open)
    else:
        def os_open(path, flags, *a, **k):
            if flags & (os.O_CREAT | os.O_WRONLY | os.O_RDWR) and _under(path, folder):
                fail(path)
            return real_open(path, flags, *a, **k)

        def os_mkdir(path, *a, **k):
            if _under(path, folder) and not os.path.isdir(path):
                fail(path)
            return real_mkdir(path, *a, **k)

        def os_move(real):
            def move(src, dst, *a, **k):
                if _under(dst, folder) or _under(src, folder):
                    fail(dst)
                return real(src, dst, *a, **k)
            return move

        def io_open(file, mode="r", *a, **k):
            if any(c in mode for c in "wax+") and _under(file, folder):
                fail(file)
            return real_io_open(file, mode, *a, **k)

        monkeypatch.setattr(os, "open", os_open)
        monkeypatch.setattr(os, "mkdir", os_mkdir)
        monkeypatch.setattr(os, "replace", os_move(real_replace))
        monkeypatch.setattr(os, "rename", os_move(real_rename))
        monkeypatch.setattr(io, "open", io_open)
    try:
        yield
    finally:
        monkeypatch.undo()


def reset_cache_state() -> None:
    """Forget which cache folders this process checked or replaced (each test starts afresh)."""
    from wowgrass import paths

    paths._CHECKED.clear()
    paths._STAND_IN.clear()


def tree(folder) -> list[str]:
    """Every path under ``folder`` (files and folders, hidden ones too), relative, sorted."""
    folder = Path(folder)
    if not folder.exists():
        return []
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))
