"""Atomic output: write to a temporary file beside the target, then rename over it."""

from __future__ import annotations

import errno
import glob
import mmap
import os
import re
import tempfile
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from wowgrass.errors import OUTPUT_REASONS, OutputError


def current_umask() -> int:
    """The process umask, read without changing it where /proc allows (os.umask can only swap it)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(path: str | os.PathLike, data: bytes | bytearray | memoryview | Iterable[bytes], *,
                 durable: bool = True, sweep: bool = True) -> Path:
    """Write ``data`` to ``path`` so readers see either the old file or the whole new one.

    ``data`` is bytes, or an iterable of byte blocks written as they come (a stream of rows never
    held whole in memory); an exception from the iterable leaves no file behind, as a failed write.
    An :class:`AlignedBlock` is written past the page cache (O_DIRECT) where the system takes
    that, else as plain bytes: a bake of a whole map writes gigabytes nobody reads back soon, and
    fresh page-cache pages cost more than the copy (on a VM that returns free memory to its host,
    several times more).

    ``durable`` flushes the data to disk before the rename. A cache entry that is checked on every
    read (a bundle's checksum) can skip it: a power cut then leaves at worst a file that fails its
    check and is rebuilt, and a bake of many tiles does not wait for the disk once per tile.

    A place that cannot take the file (full disk, read-only, no permission) is an
    :class:`~wowgrass.errors.OutputError` naming ``path``; no temporary file is left behind. The
    temporary file's name holds the writer's pid, so one a killed process left (kill -9 runs no
    cleanup) is removed by the next write of the same file (``sweep``; a cache folder of many
    files sweeps itself once instead: :func:`sweep_temporaries`).
    """
    path = Path(path)
    tmp = None
    try:
        make_dirs(path.parent)
        if sweep:
            sweep_temporaries(path.parent, f".{glob.escape(path.name)}.*.tmp")
        tmp = _temp_beside(path, data, durable)
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        if isinstance(exc, OSError) and not isinstance(exc, (FileNotFoundError, IsADirectoryError)):
            raise OutputError.from_os(path, exc) from exc
        raise
    return path


def _temp_beside(target: Path, data, durable: bool = True) -> Path:
    """``data`` in a hidden temporary file beside ``target`` (its name holds the writer's pid;
    flushed to disk when ``durable``); nothing left behind and the OSError raised on failure."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:   # never the temporary file's name in the message: the target's
        raise OutputError(target, exc.errno, _reason(exc)) from None
    try:
        try:
            os.fchmod(fd, 0o666 & ~current_umask())  # mkstemp makes 0600; a plain open() would honour the umask
        except BaseException:
            os.close(fd)
            raise
        _write_file(fd, data, durable)
    except BaseException:
        _unlink_quietly(Path(tmp))
        raise
    return Path(tmp)


def _unlink_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _keep_old(target: Path) -> Path:
    """A second name for ``target``'s present bytes (a hard link, else a copy) to put back on a roll-back."""
    keep = target.with_name(f".{target.name}.{os.getpid()}.old.tmp")
    _unlink_quietly(keep)
    try:
        os.link(target, keep, follow_symlinks=False)   # a symlinked input comes back a symlink
    except OSError:          # a file system without hard links: a copy (renamed into place if needed)
        import shutil

        shutil.copy2(target, keep)
    return keep


def _set_aside(keep: Path, target: Path) -> Path:
    """Where the old bytes of ``target`` stay when putting them back failed: ``NAME.old`` beside it
    (``NAME.old.1``, ... where taken), a name no sweep of temporaries matches; the keep file itself
    (``.NAME.PID.old.tmp``, which sweeps leave alone too) where even that rename fails."""
    for k in range(1000):
        dest = target.with_name(f"{target.name}.old" + (f".{k}" if k else ""))
        if dest.exists() or dest.is_symlink():
            continue
        try:
            os.rename(keep, dest)
        except OSError:
            return keep
        return dest
    return keep


def _left_changed(current: Path, exc: BaseException, stuck) -> OutputError:
    """The error of a roll-back that could not put every file back: the failure, then each file
    left changed and where its old bytes are (``left_changed``: the same as (target, place) pairs)."""
    reason = OUTPUT_REASONS.get(getattr(exc, "errno", None)) or getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    parts = [f"{t} keeps the new bytes (it did not exist before)" if k is None else
             f"{t} keeps the new bytes, its old bytes are in {k}" for t, k in stuck]
    err = OutputError(current, getattr(exc, "errno", None),
                      f"{reason}; putting the files already written back failed too: " + "; ".join(parts))
    err.left_changed = list(stuck)
    return err


def write_files_atomic(files, *, backups=None) -> list[Path]:
    """Write several files all or none: ``files`` is ``{path: bytes}`` (or (path, bytes) pairs).

    Every file goes to a temporary beside its target first (missing folders made); only once all
    are written do the renames come. ``backups`` ``{path: backup path}``: the target's present bytes
    are kept there first (a backup already there is left alone: the first input stays
    recoverable). A failure anywhere, a rename in the middle included, puts back every target
    already replaced, removes the backups, temporaries and folders this call made, and raises
    :class:`~wowgrass.errors.OutputError` naming the file being written (never its temporary).
    Where putting a file back fails too, its old bytes stay beside it (``NAME.old``, see
    :func:`_set_aside`) and the error names every file left changed and where its old bytes are
    (``left_changed``); the backups this call made stay then as well."""
    plan = [(Path(p), data) for p, data in (files.items() if isinstance(files, dict) else files)]
    backups = {Path(k): Path(v) for k, v in (backups or {}).items()}
    temps: list[tuple[Path, Path]] = []        # (temporary, target)
    made_dirs: list[Path] = []
    made_backups: list[Path] = []
    done: list[tuple[Path, Path | None]] = []  # (target replaced, its old bytes' second name or None)
    current = plan[0][0] if plan else Path(".")
    try:
        for current, data in plan:
            missing = [d for d in [current.parent, *current.parent.parents] if not d.exists()]
            make_dirs(current.parent)
            made_dirs += [d for d in reversed(missing) if d not in made_dirs]
            temps.append((_temp_beside(current, data), current))
        for _tmp, current in temps:
            backup = backups.get(current)
            if backup is not None and current.exists() and not backup.exists():
                btmp = _temp_beside(backup, current.read_bytes())
                try:
                    os.replace(btmp, backup)
                except BaseException:
                    _unlink_quietly(btmp)
                    raise
                made_backups.append(backup)
        for tmp, current in temps:
            keep = _keep_old(current) if current.exists() else None
            try:
                os.replace(tmp, current)
            except BaseException:
                if keep is not None:
                    _unlink_quietly(keep)
                raise
            done.append((current, keep))
    except BaseException as exc:
        stuck: list[tuple[Path, Path | None]] = []   # (target left changed, where its old bytes are)
        for target, keep in reversed(done):      # put back the files already replaced
            try:
                if keep is not None:
                    os.replace(keep, target)
                else:
                    os.unlink(target)
            except OSError:
                stuck.append((target, _set_aside(keep, target) if keep is not None else None))
        for tmp, _ in temps:
            _unlink_quietly(tmp)
        for b in made_backups if not stuck else ():   # a file left changed: its backup may be the way back
            _unlink_quietly(b)
        for d in reversed(made_dirs):
            try:
                d.rmdir()
            except OSError:
                pass
        if stuck and isinstance(exc, OSError):
            raise _left_changed(current, exc, stuck[::-1]) from exc
        if stuck:   # an interrupt: it goes on as itself, carrying the files left changed
            exc.left_changed = stuck[::-1]
            if hasattr(exc, "add_note"):
                exc.add_note(str(_left_changed(current, exc, stuck[::-1])))
        if isinstance(exc, OSError):
            raise OutputError.from_os(current, exc) from exc
        raise
    for _target, keep in done:
        if keep is not None:
            _unlink_quietly(keep)
    return [t for t, _ in plan]


_TEMP_PID = re.compile(r"\.(\d+)\.[^.]+\.tmp$")


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_temporaries(folder, pattern: str = ".*.tmp", older_than: float = 3600.0) -> int:
    """Delete the temporary files of :func:`write_atomic` matching ``pattern`` in ``folder`` whose
    writer is gone (the pid in the name is not running) or that are older than ``older_than`` s.
    The second names :func:`write_files_atomic` keeps of files' old bytes (``.NAME.PID.old.tmp``)
    are never deleted: one left behind is the only copy of a file's bytes before a write that
    could not be rolled back (or was killed half-way)."""
    import time

    removed, now = 0, time.time()
    for tmp in Path(folder).glob(pattern):
        if tmp.name.endswith(".old.tmp"):   # a file's old bytes (write_files_atomic): never a leftover to delete
            continue
        m = _TEMP_PID.search(tmp.name)
        try:
            if (m and not pid_alive(int(m.group(1)))) or now - tmp.stat().st_mtime > older_than:
                tmp.unlink()
                removed += 1
        except OSError:
            pass
    return removed


#: what an O_DIRECT write's buffer address, length and file offset must be multiples of (the
#: page size: at least the logical block size of every common disk and file system)
DIRECT_ALIGN = mmap.PAGESIZE
_SCRATCH = threading.local()
_PRIVATE = {"flags": mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS} if hasattr(mmap, "MAP_PRIVATE") else {}


class AlignedBlock:
    """``size`` bytes at the start of a page-aligned buffer at least ``size`` rounded up to
    :data:`DIRECT_ALIGN` long: what :func:`write_atomic` can write past the page cache
    (``direct``). Iterating gives the bytes, once (so any writer of block streams takes it)."""

    def __init__(self, buffer, size: int):
        self.buffer = memoryview(buffer).cast("B")
        self.size = int(size)
        if len(self.buffer) < aligned_size(self.size):
            raise ValueError(f"an aligned block of {self.size} bytes needs {aligned_size(self.size)} of buffer")

    @property
    def data(self) -> memoryview:
        return self.buffer[: self.size]

    @property
    def padded(self) -> memoryview:
        return self.buffer[: aligned_size(self.size)]

    def __iter__(self) -> Iterator[memoryview]:
        yield self.data


def aligned_size(n: int) -> int:
    return (int(n) + DIRECT_ALIGN - 1) // DIRECT_ALIGN * DIRECT_ALIGN


def aligned_scratch(size: int) -> memoryview:
    """A page-aligned work buffer of at least ``size`` bytes (rounded up to :data:`DIRECT_ALIGN`),
    reused by the calling thread from one call to the next (contents undefined): a fresh buffer
    a call would fault in its pages again each time."""
    need = aligned_size(max(1, size))
    buf = getattr(_SCRATCH, "buffer", None)
    if buf is None or len(buf) < need or _SCRATCH.pid != os.getpid():  # the old one goes with its last view
        # anonymous (page-aligned) and private: a forked bake worker must not share its parent's
        _SCRATCH.buffer = buf = mmap.mmap(-1, max(need, 1 << 20), **_PRIVATE)
        _SCRATCH.pid = os.getpid()
    return memoryview(buf)[:need]


def direct_writes() -> bool:
    """Whether this system has O_DIRECT writes to try (:class:`AlignedBlock`)."""
    return bool(getattr(os, "O_DIRECT", 0))


def _write_direct(fd: int, block: AlignedBlock) -> bool:
    """Write ``block`` through ``fd`` past the page cache (O_DIRECT, then the file cut to its
    size); False, with nothing written, where the platform or file system takes no such write."""
    flag = getattr(os, "O_DIRECT", 0)
    if not flag:
        return False
    import fcntl

    try:
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | flag)
    except OSError:
        return False
    view, done = block.padded, 0
    try:
        while done < len(view):
            done += os.write(fd, view[done:])
            if done % DIRECT_ALIGN:      # a short write off the alignment: no more direct writes
                raise OSError(errno.EINVAL, "short direct write")
    except OSError as exc:
        if exc.errno != errno.EINVAL:   # a full disk is an error; EINVAL is "not this way"
            raise
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~flag)
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        return False
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~flag)
    os.ftruncate(fd, block.size)
    return True


def _write_file(fd: int, data, durable: bool) -> None:
    """The bytes into the open temporary file (one place for tests to inject a failing disk)."""
    if isinstance(data, AlignedBlock):
        try:
            direct = _write_direct(fd, data)
            if direct and durable:
                os.fsync(fd)    # the size and the block map (the data went to the device already)
        except BaseException:
            os.close(fd)
            raise
        if direct:
            os.close(fd)
            return
    with os.fdopen(fd, "wb") as f:
        if isinstance(data, (bytes, bytearray, memoryview)):
            f.write(data)
        else:
            for block in data:
                f.write(block)
        if durable:
            f.flush()
            os.fsync(f.fileno())


def make_dirs(folder) -> Path:
    """``mkdir -p`` whose failure (read-only, full, no permission) is an OutputError naming the folder."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise OutputError(folder, None, "a file is in the way of this folder") from None
    except OSError as exc:
        raise OutputError.from_os(folder, exc) from exc
    return folder


#: image formats by file suffix (Pillow's names); anything else is an error, never a silent PNG
IMAGE_FORMATS = {".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG", ".bmp": "BMP", ".tga": "TGA", ".tif": "TIFF",
                 ".tiff": "TIFF", ".webp": "WEBP"}


def image_format(path) -> str:
    """The Pillow format a file name's suffix asks for; UsageError for an unknown suffix."""
    from wowgrass.errors import UsageError

    fmt = IMAGE_FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise UsageError(f"{path}: the image format follows the file's suffix; use one of "
                         + ", ".join(sorted(IMAGE_FORMATS)))
    return fmt


def write_image(path, pixels) -> Path:
    """An (h, w, 3|4) uint8 array (or a PIL image) written atomically in the format its suffix names."""
    import io

    from PIL import Image

    fmt = image_format(path)
    img = pixels if isinstance(pixels, Image.Image) else Image.fromarray(pixels)
    if fmt in ("JPEG", "BMP") and img.mode == "RGBA":
        img = img.convert("RGB")
    buf = io.BytesIO()
    img.save(buf, format=fmt)
    return write_atomic(path, buf.getvalue())


def temp_dir(prefix: str, parent) -> Path:
    """A new private-named folder in ``parent`` with the umask's permissions (mkdtemp makes 0700,
    which would stick to a folder later renamed into place)."""
    try:
        path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        os.chmod(path, 0o777 & ~current_umask())
    except OSError as exc:
        raise OutputError.from_os(parent, exc) from exc
    return path


# ----------------------------------------------------------------------------- checks before work

def _probe(folder: Path, name: str) -> None:
    """Create and remove a temporary file in ``folder``, as :func:`write_atomic` will (OSError as it fails)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.{os.getpid()}.", suffix=".tmp", dir=folder)
    os.close(fd)
    os.unlink(tmp)


def _reason(exc: OSError) -> str | None:
    if exc.errno == errno.ENOENT:   # the folder is there (checked first): it takes no new files (/proc)
        return "the folder takes no new files"
    return OUTPUT_REASONS.get(exc.errno) or exc.strerror or None


def check_output_file(path) -> bool:
    """Check, before any work, that ``path`` can be written as :func:`write_atomic` writes it: not a
    folder, its folder exists and takes a new file (one is made there and removed). An
    :class:`~wowgrass.errors.OutputError` names ``path`` itself and the reason (never a temporary
    file). Returns whether a file is there already (it will be replaced)."""
    path = Path(path)
    try:
        if path.is_dir():
            raise OutputError(path, errno.EISDIR, "is a folder; give a file name")
        if not path.parent.is_dir():
            raise OutputError(path, errno.ENOENT, f"folder {path.parent} does not exist")
        existed = path.exists()
        _probe(path.parent, path.name)
    except OutputError:
        raise
    except OSError as exc:
        raise OutputError(path, exc.errno, _reason(exc)) from None
    return existed


def check_output_folder(folder) -> Path:
    """Make ``folder`` (``mkdir -p``) and check it takes new files, before any work; an
    :class:`~wowgrass.errors.OutputError` names ``folder`` and the reason."""
    try:
        folder = make_dirs(folder)
    except OutputError as exc:
        if exc.errno != errno.ENOENT or not Path(folder).parent.is_dir():
            raise
        raise OutputError(folder, exc.errno, "the folder above takes no new folders") from None
    try:
        _probe(folder, "probe")
    except OSError as exc:
        raise OutputError(folder, exc.errno, _reason(exc)) from None
    return folder
