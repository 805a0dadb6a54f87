"""The edit session's disk side: save, patch, reload and conflicts. The session (session.py) holds
the bytes and says what changed; this module compares them with the files, writes them and reads
other programs' saves back, through the session's public names. The session never imports it.

``save`` writes every changed file at once through :func:`~wowgrass.edit.adt_edit.write_edited`
(all or none), after checking that no file changed on disk since it was loaded (a loose file's
content hash, an archive's size and time) and that the out folder holds nothing the session
neither loaded nor saved. ``reload`` reads the files another editor saved and hands them to
:meth:`EditSession.take_reloaded`; its subscribers hear ``fn(change, paths)`` after each reload.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from wowgrass.edit.adt_edit import disk_path, write_edited
from wowgrass.errors import OutputError, UsageError
from wowgrass.game.maps import wdt_game_path
from wowgrass.workbench.session import TABLES


def _sha(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


class SessionFiles:
    """The files of one :class:`~wowgrass.workbench.session.EditSession` (see the module docstring)."""

    def __init__(self, session):
        self.session = session
        self._saved: dict[str, str] = {}  # file written by save -> sha256 (saving again over it is fine)
        self._listeners: list = []

    def subscribe(self, fn) -> None:
        """``fn(change, paths)`` after each :meth:`reload` (on the thread that called it), the
        session's Change (empty where nothing the session holds changed) and the files reported."""
        self._listeners.append(fn)

    @property
    def data(self):
        return self.session.data

    # ------------------------------------------------------------------------------------ conflicts
    def _changed_on_disk(self, game_path: str, source: tuple, print_: tuple) -> tuple | None:
        """(file, why) when the file behind ``game_path`` is not as it was loaded, else None."""
        where, in_archive = source
        if where is None:
            return None
        try:
            if in_archive:
                st = Path(where).stat()
                if ("stat", st.st_size, st.st_mtime_ns) != print_:
                    return where, f"the archive holding {game_path} changed on disk since it was loaded"
                return None
            if _sha(Path(where).read_bytes()) != print_[1]:
                return where, "changed on disk since it was loaded"
        except FileNotFoundError:
            return where, "removed since it was loaded"
        return None

    def _conflicts(self, files=None) -> list[tuple]:
        files = self.session.files_since_saved() if files is None else files
        out = []
        for gp, source, print_ in self.session.origins(list(files)):
            why = self._changed_on_disk(gp, source, print_)
            if why:
                out.append(why)
        return out

    def conflicts(self) -> list[str]:
        """The files behind the session's changed tiles and tables that changed on disk since they
        were loaded (another editor saved them): ``PATH: why`` each."""
        return [f"{p}: {why}" for p, why in self._conflicts()]

    # ------------------------------------------------------------------------------------ save
    def save(self, out_dir=None, *, in_place: bool = False, backups: bool = True) -> dict:
        """Write the changed tiles and tables: under ``out_dir`` in the client's layout (as
        ``effects ... -o DIR``), or ``in_place`` over the loose files they came from (a backup
        ``<name>.bak`` kept beside each unless ``backups`` is False; with layered data a file that
        came from an archive goes into the top loose folder). Only the bytes the edits touched
        differ. All files or none; a file changed on disk since it was loaded is an OutputError
        naming it, and nothing is written."""
        from wowgrass.edit.adt_edit import BACKUP_SUFFIX
        from wowgrass.edit.batch import base_data

        s = self.session
        with s.lock:  # no edit lands between what is checked and what is written
            if (out_dir is None) == (not in_place):
                raise UsageError("give out_dir or in_place=True (not both)")
            files = s.files_since_saved()
            if not files:
                return {"files": [], "tiles": [], "tables": [], "changed_byte_count": 0, "backups": []}
            problems = self._conflicts(files)
            if out_dir is not None:
                for gp in files:
                    dest = Path(out_dir) / disk_path(gp)
                    if dest.is_file() and self._saved.get(str(dest)) != _sha(dest.read_bytes()) and \
                            not self._is_source(gp, dest):
                        problems.append((dest, "exists and is not what this session loaded or saved"))
            if problems:
                more = "".join(f"; {p}: {why}" for p, why in problems[1:])
                raise OutputError(problems[0][0], None, f"{problems[0][1]}{more}; nothing written (reload, or save "
                                  "elsewhere)")
            data = base_data(self.data)
            tops = [f for f in files if not self._loose(f)] if in_place else []
            layers = list(getattr(data, "layers", ()) or ())
            if tops and not layers:
                where = self.data.locate(tops[0])
                raise UsageError(f"{tops[0]} is inside {where[0] if where else 'no file'}: only loose files are saved "
                                 "in place; save to a folder (and build a patch) instead")
            before = {}
            if in_place:
                for gp in files:
                    if gp not in tops:
                        dest = Path(self.data.locate(gp)[0])
                        before[gp] = dest.with_name(dest.name + BACKUP_SUFFIX).exists()
            written: list[Path] = []
            if tops:   # archived files of layered data: new files in the top loose folder
                written += write_edited({layer_path(Path(layers[-1]), gp): files[gp] for gp in tops},
                                        Path(layers[-1]), data=None)
            try:
                rest = {gp: raw for gp, raw in files.items() if gp not in tops}
                if in_place:
                    written += write_edited(rest, None, in_place=True, data=data)
                else:
                    written += write_edited(rest, out_dir, data=data)
            except BaseException:
                for p in written:   # the new files of the first part: all or none
                    Path(p).unlink(missing_ok=True)
                raise
            made_backups = []
            for gp, had in before.items():
                dest = Path(self.data.locate(gp)[0])
                b = dest.with_name(dest.name + BACKUP_SUFFIX)
                if not had and not backups:
                    b.unlink(missing_ok=True)
                elif not had:
                    made_backups.append(str(b))
            changed = sum(bytes_differing(s.saved_bytes(gp), raw) for gp, raw in files.items())
            for p in written:
                self._saved[str(p)] = _sha(Path(p).read_bytes())
            tiles = s.mark_saved(files, in_place=in_place)
            tables = [p for p in TABLES if p in files]
            return {"files": [str(p) for p in written], "tiles": [list(k) for k in sorted(tiles)],
                    "tables": tables, "changed_byte_count": changed, "backups": made_backups}

    def _loose(self, gp: str) -> bool:
        found = self.data.locate(gp)
        return found is not None and found[1] is None

    def _is_source(self, gp: str, dest: Path) -> bool:
        found = self.data.locate(gp)
        try:
            return found is not None and found[1] is None and Path(found[0]).resolve() == dest.resolve()
        except OSError:
            return False

    # ------------------------------------------------------------------------------------ patch
    def build_patch(self, out_path, *, force: bool = False, locale: str | None = None) -> dict:
        """A patch MPQ of every tile and table that differs from what was loaded (saved or not),
        through :func:`wowgrass.edit.patch.build_patch` (checked by reading it back)."""
        import tempfile

        from wowgrass.edit.patch import build_patch

        files = self.session.files_since_loaded()
        if not files:
            raise UsageError("nothing differs from the data: no patch to build")
        build = self.session.catalog.build
        with tempfile.TemporaryDirectory(prefix=".wowgrass-patch-") as tmp:
            write_edited(files, tmp)
            result = build_patch(tmp, out_path, build=build if build != "1.10" else None, locale=locale, force=force)
        return result.to_dict()

    # ------------------------------------------------------------------------------------ reload
    def watch(self, *, poll: bool | None = None, debounce_ms: int = 150):
        """A started :class:`~wowgrass.workbench.watch.FileWatcher` over the loose folders of the data
        (its layers, or a loose root) calling :meth:`reload`; its Changes reach the session's
        subscribers on the watcher's thread (a window hands them to its frame). ``stop()`` it when done."""
        from wowgrass.workbench.watch import FileWatcher, watched_folders

        folders = watched_folders(self.data)
        if not folders:
            raise UsageError(f"{self.data.root} is a client's MPQ chain: nothing there is saved as loose files; lay "
                             "the folder another program saves into over it (--data CLIENT --data PROJECT)")
        w = FileWatcher(folders, self.reload, poll=poll, debounce_ms=debounce_ms)
        w.start()
        return w

    def reload(self, paths):
        """Take files changed on disk (another editor saved them): each loaded tile, the WDT or a
        table whose file is among ``paths`` is read again and handed to the session
        (:meth:`~wowgrass.workbench.session.EditSession.take_reloaded`: a tile with unsaved edits
        keeps them, and :meth:`save` will refuse it); a new tile of the map joins it."""
        s = self.session
        wanted = {Path(p).resolve() for p in paths}
        if hasattr(self.data, "refresh"):
            self.data.refresh()

        loaded = s.loaded_paths()
        # the file each was loaded from: one removed from an upper layer leaves the layer below
        # answering, which is read again (as ``bake --watch`` reads it)
        sources = {gp: src[0] for gp, src, _print in s.origins(list(loaded)) if src[0] is not None}

        def hit(gp):
            found = self.data.locate(gp)
            if found is not None and Path(found[0]).resolve() in wanted:
                return True
            return gp in sources and Path(sources[gp]).resolve() in wanted

        relist = hit(wdt_game_path(s.map_name)) or any(Path(p).suffix.lower() in (".adt", ".wdt") for p in wanted)
        tiles = {key: self.data.read(gp) for gp, key in loaded.items() if key is not None and hit(gp)}
        tables = {p: self.data.read(p) for p in TABLES} if any(hit(p) for p in TABLES) else None
        change = s.take_reloaded(tiles, tables, relist=relist)
        for fn in list(self._listeners):
            fn(change, sorted(str(p) for p in paths))
        return change


def layer_path(folder: Path, game_path: str) -> str:
    """Where a file goes in a loose folder: the client's layout, except that a folder which *is* a
    map folder (its tiles at its top, no World folder) takes the map's files at its top, so they
    keep answering for their game paths (game.data.loose_index)."""
    parts = game_path.replace("/", "\\").split("\\")
    is_map_folder = not any(p.is_dir() and p.name.lower() == "world" for p in folder.iterdir()) and any(
        p.suffix.lower() in (".adt", ".wdt") for p in folder.iterdir() if p.is_file())
    if is_map_folder and len(parts) == 4 and parts[0].lower() == "world" and parts[1].lower() == "maps":
        return parts[3]
    return game_path


def bytes_differing(a: bytes, b: bytes) -> int:
    if len(a) != len(b):
        return max(len(a), len(b))
    return int(np.count_nonzero(np.frombuffer(a, np.uint8) != np.frombuffer(b, np.uint8)))


__all__ = ["SessionFiles", "bytes_differing", "layer_path"]
