"""Following another program's saves: a file watcher over loose data folders, and the bake that
re-bakes the tiles saved there (``bake --watch``).

:class:`FileWatcher` takes the operating system's file events through watchfiles (the notify crate:
inotify, FSEvents, ReadDirectoryChangesW), and polls where events do not arrive: on request
(``poll=True``), on a network or shared folder (NFS, SMB, 9p, sshfs: their changes made elsewhere
raise no event here), under WSL or ``WATCHFILES_FORCE_POLLING``, and when the event watcher cannot
start (the inotify watch limit reached). The watch is set up before :meth:`FileWatcher.start`
returns, so a change made after it is always seen. Changes are grouped over ``debounce_ms`` (an
editor's temporary file and its rename arrive as one); hidden files, temporaries and backups are
not reported.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

POLL_MS = 250           # a polled folder is scanned this often
#: file systems whose changes made by other machines raise no local event
REMOTE_FS = frozenset({"nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "fuse.sshfs", "fuse.rclone", "afs", "vboxsf",
                       "davfs", "fuse.davfs2", "virtiofs", "fuse.gvfsd-fuse"})
_IGNORED = re.compile(r"(^\.|\.tmp$|\.bak$|~$|\.sw.$)", re.IGNORECASE)


def _mount_type(path: Path) -> str | None:
    """The file system type of the mount holding ``path`` (Linux's /proc/mounts), else None."""
    try:
        lines = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return None
    best, kind = "", None
    target = str(path.resolve())
    for line in lines:
        parts = line.split()
        if len(parts) < 3:
            continue
        mnt = parts[1].replace("\\040", " ")
        if (target == mnt or target.startswith(mnt.rstrip("/") + "/")) and len(mnt) > len(best):
            best, kind = mnt, parts[2]
    return kind


def needs_polling(roots) -> str | None:
    """Why events cannot be trusted for ``roots`` (so the watcher polls), or None."""
    env = os.environ.get("WATCHFILES_FORCE_POLLING")
    if env and env.lower() not in ("0", "false", "no"):
        return "WATCHFILES_FORCE_POLLING is set"
    try:
        if "microsoft" in Path("/proc/version").read_text().lower():
            return "WSL"
    except OSError:
        pass
    for r in roots:
        kind = _mount_type(Path(r))
        if kind in REMOTE_FS:
            return f"{r} is on a {kind} file system (changes made elsewhere raise no event)"
    return None


class FileWatcher:
    """Calls ``on_change(set[Path])`` on a daemon thread with the files changed (written, added,
    removed) under ``roots`` (folders or files), grouped over ``debounce_ms``. ``poll``: True polls,
    False takes events only, None (default) decides (see the module docstring). ``mode`` says which
    was taken once started."""

    def __init__(self, roots, on_change: Callable[[set], None], *, debounce_ms: int = 150, poll: bool | None = None,
                 poll_ms: int = POLL_MS):
        self.roots = [Path(r) for r in roots]
        if not self.roots:
            raise ValueError("nothing to watch")
        for r in self.roots:
            if not r.exists():
                raise FileNotFoundError(f"cannot watch {r}: no such file or folder")
        self.on_change = on_change
        self.debounce_ms = int(debounce_ms)
        self.poll = poll
        self.poll_ms = int(poll_ms)
        self.mode: str | None = None          # "events" or "polling" once started
        self.why_polling: str | None = None
        self.errors: list[BaseException] = []  # what on_change raised (the watch goes on)
        self._stop = threading.Event()
        self.fell_back = threading.Event()      # set once the event watcher broke and polling took over
        self._thread: threading.Thread | None = None
        self._notify = None

    def _make(self, polling: bool):
        """The event watcher (watchfiles' RustNotify: watchfiles.watch() builds the same object in
        its generator; made here, the watches are in place before start() returns), or for polling
        the first snapshot of the files (their own poller: the notify crate's compares modification
        times in whole seconds, so a second save within the same second would go unseen)."""
        if polling:
            return _snapshot(self.roots)
        from watchfiles._rust_notify import RustNotify

        return RustNotify([str(r) for r in self.roots], False, False, self.poll_ms, True, False)

    def start(self) -> None:
        if self._thread is not None:
            return
        polling = self.poll
        if polling is None:
            self.why_polling = needs_polling(self.roots)
            polling = self.why_polling is not None
        elif polling:
            self.why_polling = "asked for"
        try:
            self._notify = self._make(polling)
        except (OSError, RuntimeError) as exc:   # the inotify limit, a file system without events
            if polling or self.poll is False:
                raise
            self.why_polling = f"file events unavailable ({exc})"
            polling = True
            self._notify = self._make(True)
        self.mode = "polling" if polling else "events"
        self._roots_ino = {r: _inode(r) for r in self.roots}
        log.info("watching %s (%s%s)", ", ".join(map(str, self.roots)), self.mode,
                 f": {self.why_polling}" if polling else "")
        self._thread = threading.Thread(target=self._poll if polling else self._run, name="wowgrass-watch",
                                        daemon=True)
        self._thread.start()

    def _deliver(self, paths: set) -> None:
        paths = {p for p in paths if not _IGNORED.search(p.name)}
        if not paths:
            return
        try:
            self.on_change(paths)
        except Exception as exc:  # noqa: BLE001 - one bad reload must not end the watch
            log.warning("while taking changes to %s: %s", ", ".join(sorted(map(str, paths))[:3]), exc)
            self.errors.append(exc)

    def _run(self) -> None:
        notify = self._notify
        failed = None
        try:
            while not self._stop.is_set():
                raw = notify.watch(self.debounce_ms, 50, 1000, self._stop)
                if raw in ("stop", "signal"):
                    break
                if raw != "timeout":
                    self._deliver({Path(p) for _kind, p in raw})
                gone = [r for r, ino in self._roots_ino.items() if _inode(r) != ino]
                if gone:   # inotify forgets a removed root: polling sees it made again
                    failed = FileNotFoundError(f"{gone[0]} was removed")
                    break
        except Exception as exc:  # noqa: BLE001 - the event watcher broke (a root removed, ...): poll
            failed = exc
        finally:
            try:
                notify.close()
            except Exception:  # noqa: BLE001 - closing a watcher that failed
                pass
        if failed is not None and not self._stop.is_set():
            log.warning("file events stopped (%s); polling %s instead", failed, ", ".join(map(str, self.roots)))
            self.errors.append(failed)
            self._notify = _snapshot(self.roots)
            self.mode, self.why_polling = "polling", f"file events stopped ({failed})"
            self.fell_back.set()
            self._poll()

    def _poll(self) -> None:
        """Compare snapshots every ``poll_ms``; changes are held until a poll finds no new ones (or
        ``debounce_ms`` passed), so a save in several writes is reported once."""
        import time

        last, pending, since = self._notify, set(), None
        while not self._stop.wait(self.poll_ms / 1000):
            now = _snapshot(self.roots)
            new = {p for p in now.keys() | last.keys() if now.get(p) != last.get(p)}
            last = now
            if new:
                pending |= new
                since = since or time.monotonic()
                if (time.monotonic() - since) * 1000 < self.debounce_ms:
                    continue
            if pending:
                self._deliver(pending)
                pending, since = set(), None

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread (waits for it, ``timeout`` seconds at most)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()


def _inode(path: Path) -> int | None:
    try:
        return path.stat().st_ino
    except OSError:
        return None


def _snapshot(roots) -> dict:
    """{file: (modification time in ns, size, inode)} of every file under ``roots``."""
    out = {}
    for root in roots:
        root = Path(root)
        if root.is_file():
            st = root.stat()
            out[root] = (st.st_mtime_ns, st.st_size, st.st_ino)
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            for f in filenames:
                p = Path(dirpath) / f
                try:
                    st = os.stat(p)
                except OSError:      # removed while walking: gone from this snapshot
                    continue
                out[p] = (st.st_mtime_ns, st.st_size, st.st_ino)
    return out


# ----------------------------------------------------------------------------- bake --watch

def _tile_of(path: Path, map_name: str) -> tuple[int, int] | None:
    """(col, row) of ``<map>_<col>_<row>.adt`` (any case), else None."""
    m = re.fullmatch(re.escape(map_name) + r"_(\d{1,2})_(\d{1,2})\.adt", path.name, re.IGNORECASE)
    return (int(m.group(1)), int(m.group(2))) if m else None


def watched_folders(data) -> list[Path]:
    """The loose folders of a data source: its layers and, when it has no archives, its root."""
    out = list(getattr(data, "layers", []) or [])
    if not getattr(data, "archives", None):
        out.insert(0, Path(data.root))
    return out


def watchable_folders(data) -> list[Path]:
    """:func:`watched_folders`, or an error when there are none (an MPQ chain alone)."""
    folders = watched_folders(data)
    if not folders:
        from wowgrass.errors import UsageError

        raise UsageError(f"{data.root} is a client's MPQ chain: nothing there is saved as loose files, so it cannot "
                         "be watched; lay the folder that another program saves into over it (--data CLIENT --data "
                         "PROJECT)")
    return folders


class BakeOnSave:
    """Bake ``map_name``'s tiles into the cache as they are saved into the loose folders of
    ``data`` (a tile's ADT, or every tile when its WDT or the ground-effect tables change).
    ``on_result(BakeResult | (tile, error))`` hears of each bake, ``on_note(text)`` of a saved tile
    that is not baked (its WDT does not list it); start()/stop() as FileWatcher."""

    def __init__(self, data, map_name: str, *, placement: str = "coverage", constants=None, dbc_dir=None,
                 on_result=None, on_note=None, poll: bool | None = None, debounce_ms: int = 150):
        from wowgrass.grass.bake import ModelTable, load_catalog

        folders = watchable_folders(data)
        self.data = data
        self.map_name = map_name
        self.placement = placement
        self.constants = constants
        self.dbc_dir = dbc_dir
        self.on_result = on_result or (lambda res: None)
        self.on_note = on_note or log.warning
        self.catalog = load_catalog(data=data, dbc_dir=dbc_dir, build=getattr(data, "build", None))
        self.models = ModelTable(data.read)
        self.watcher = FileWatcher(folders, self._changed, poll=poll, debounce_ms=debounce_ms)
        self.lock = threading.Lock()

    def start(self) -> None:
        self.watcher.start()

    def stop(self) -> None:
        self.watcher.stop()

    def _changed(self, paths: set) -> None:
        from wowgrass.game.maps import map_tiles

        with self.lock:
            if hasattr(self.data, "refresh"):
                self.data.refresh()
            names = {p.name.lower() for p in paths}
            tables = any(n in ("groundeffecttexture.dbc", "groundeffectdoodad.dbc") for n in names)
            wdt = f"{self.map_name}.wdt".lower() in names
            if tables:
                from wowgrass.grass.bake import load_catalog

                self.catalog = load_catalog(data=self.data, dbc_dir=self.dbc_dir, build=getattr(self.data, "build", None))
            mt = map_tiles(self.data, self.map_name, need_tiles=False)
            if tables or wdt:
                todo = list(mt.tiles)
            else:
                saved = {t: p for p in paths if (t := _tile_of(p, self.map_name)) is not None}
                todo = sorted(set(saved) & set(mt.tiles), key=lambda t: (t[1], t[0]))
                for (c, r), p in sorted(saved.items()):
                    if (c, r) not in mt.tiles and p.is_file():
                        self.on_note(f"{p}: tile {c},{r} is not one of the tiles {self.map_name}'s WDT lists, so "
                                     "no client loads it: not baked (list it in the WDT)")
            for tile in todo:
                self._bake(tile, mt.big_alpha)

    def _bake(self, tile, big_alpha) -> None:
        from wowgrass.errors import WowgrassError
        from wowgrass.game.maps import adt_game_path
        from wowgrass.grass.bake import bake_tile, record_source

        gp = adt_game_path(self.map_name, *tile)
        try:
            raw = self.data.read(gp)
            res = bake_tile(raw, self.catalog, map_name=self.map_name, placement=self.placement,
                            constants=self.constants, models=self.models, big_alpha=big_alpha, adt_path=gp)
            source = [self.data.root, *getattr(self.data, "layers", [])]
            record_source(res.map, source if len(source) > 1 else source[0], self.catalog.build, [res.tile])
        except WowgrassError as exc:   # a tile saved half-way, a broken file: said, and the watch goes on
            self.on_result((tile, exc))
            return
        self.on_result(res)


__all__ = ["BakeOnSave", "FileWatcher", "needs_polling", "watchable_folders", "watched_folders"]
