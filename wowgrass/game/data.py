"""The game-data source: a client's ``Data`` folder (an ordered MPQ chain) or a folder of loose files.

Archive order follows the client's mount order, lowest priority first (a later archive overrides
an earlier one; a DELETE_MARKER entry in a later archive hides earlier copies), see
``shared/docs/formats.md`` §5.5:

* 1.12: ``dbc speech fonts interface misc sound wmo terrain texture model`` (``.MPQ``), then
  ``patch.MPQ``, then every ``patch-?.MPQ`` (one character, ascending), then ``speech2.MPQ``.
* 2.4.3 / 3.3.5: ``common common-2 expansion lichking``, the locale archives
  ``<loc>/locale-<loc> expansion-locale-<loc> lichking-locale-<loc>``, then ``patch.MPQ`` and
  ``patch-?.MPQ``, then the locale patches ``<loc>/patch-<loc>.MPQ`` and ``patch-<loc>-?.MPQ``.

Archive and folder names are matched case-insensitively. The build is guessed from archive names
(``lichking*`` -> 3.3.5, ``expansion*`` -> 2.4.3, ``dbc``/``terrain``/``model`` -> 1.12); the locale
from the ``Data/<loc>`` folder. Both can be given explicitly, as can the whole ``order``.
"""

from __future__ import annotations

import fnmatch
import functools
import logging
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from wowgrass.errors import GameFileNotFound, UsageError, WowgrassError
from wowgrass.formats.mpq import CHUNK_BYTES, MpqArchive, decode_files, default_threads

log = logging.getLogger(__name__)

VANILLA_BASE = ("dbc", "speech", "fonts", "interface", "misc", "sound", "wmo", "terrain", "texture", "model")
MODERN_BASE = ("common", "common-2", "expansion", "lichking")
MODERN_LOCALE = ("locale-{loc}", "expansion-locale-{loc}", "lichking-locale-{loc}")
LOCALES = {
    "enUS": 0x409, "enGB": 0x809, "deDE": 0x407, "frFR": 0x40C, "esES": 0x40A, "esMX": 0x80A,
    "ruRU": 0x419, "koKR": 0x412, "zhCN": 0x804, "zhTW": 0x404, "enCN": 0x804, "enTW": 0x404,
    "ptBR": 0x416, "ptPT": 0x816, "itIT": 0x410,
}
_LOCALE_RE = re.compile(r"^[a-z]{2}[A-Z]{2}$")


# <Map>_<col>_<row>.adt or <Map>.wdt (upper-case keys): the map a loose file belongs to
_MAP_FILE = re.compile(r"^(.+?)(?:_\d{1,2}_\d{1,2}\.ADT|\.WDT)$")


def _norm(path: str) -> str:
    """Key for case-insensitive game paths with either separator."""
    return path.replace("/", "\\").strip("\\").upper()


def _mpqs_in(folder: Path) -> dict[str, Path]:
    """Lower-cased file name -> path of every ``*.mpq`` directly in ``folder``."""
    out = {}
    if folder.is_dir():
        for p in sorted(folder.iterdir()):
            if p.is_file() and p.suffix.lower() == ".mpq":
                out.setdefault(p.name.lower(), p)
    return out


def _patches(found: dict[str, Path], stem: str) -> list[Path]:
    """``<stem>.mpq`` then ``<stem>-?.mpq`` (exactly one character, ascending)."""
    out = [found[stem + ".mpq"]] if stem + ".mpq" in found else []
    rx = re.compile(re.escape(stem) + r"-(.)\.mpq$")
    numbered = sorted((m.group(1), p) for n, p in found.items() if (m := rx.match(n)))
    return out + [p for _, p in numbered]


def detect_build(names) -> str | None:
    """Client build from archive file names (case-insensitive), or None."""
    low = [n.lower() for n in names]
    if any(n.startswith("lichking") for n in low):
        return "3.3.5"
    if any(n.startswith("expansion") for n in low):
        return "2.4.3"
    if any(n in ("dbc.mpq", "terrain.mpq", "model.mpq") for n in low):
        return "1.12"
    return None


def archive_order(root: Path, build: str | None, locale: str | None, *,
                  extra: dict[str, Path] | None = None) -> list[Path]:
    """The archives of a Data folder in mount order, lowest priority first. ``extra`` adds archives
    as if they lay in the folder: ``{"patch-4.MPQ": file, "enUS/patch-enUS-4.MPQ": file}`` (one
    replaces an archive of the same name)."""
    top = _mpqs_in(root)
    extra_top, extra_loc = {}, {}
    for rel, file in (extra or {}).items():
        parts = rel.replace("\\", "/").split("/")
        if len(parts) == 1:
            extra_top[parts[0].lower()] = Path(file)
        elif len(parts) == 2 and locale and parts[0].lower() == locale.lower():
            extra_loc[parts[1].lower()] = Path(file)
    top.update(extra_top)
    if build == "1.12":
        order = [top[b + ".mpq"] for b in VANILLA_BASE if b + ".mpq" in top]
        order += _patches(top, "patch")
        if "speech2.mpq" in top:
            order.append(top["speech2.mpq"])
        return order
    order = [top[b + ".mpq"] for b in MODERN_BASE if b + ".mpq" in top]
    loc_files: dict[str, Path] = {}
    if locale:
        loc_dir = _child_ci(root, locale)
        loc_files = _mpqs_in(loc_dir) if loc_dir else {}
        loc_files.update(extra_loc)
        lo = locale.lower()
        order += [loc_files[n.format(loc=lo) + ".mpq"] for n in MODERN_LOCALE if n.format(loc=lo) + ".mpq" in loc_files]
    order += _patches(top, "patch")
    if locale:
        order += _patches(loc_files, f"patch-{locale.lower()}")
    return order


def _child_ci(folder: Path, name: str) -> Path | None:
    if not folder.is_dir():
        return None
    for p in folder.iterdir():
        if p.name.lower() == name.lower() and p.is_dir():
            return p
    return None


def detect_locale(root: Path) -> str | None:
    """The ``Data/<loc>`` folder holding MPQs (enUS preferred when several exist)."""
    cands = sorted(p.name for p in root.iterdir() if p.is_dir() and _LOCALE_RE.match(p.name) and _mpqs_in(p))
    if not cands:
        return None
    for pref in ("enUS", "enGB"):
        if pref in cands:
            return pref
    return cands[0]


class GameData:
    """Read game files by their in-game path from an MPQ chain or a loose folder.

    ``archives`` lists the mounted MPQs lowest priority first (empty for a loose folder);
    ``threads`` decompress big files and batches of files (default: one per CPU).
    """

    def __init__(self, root: Path, *, archives: list[Path] | None = None, build: str | None = None,
                 locale: str | None = None, threads: int | None = None):
        self.root = Path(root)
        self.threads = default_threads() if threads is None else max(1, int(threads))
        self.build = build
        self.locale = locale
        self.archives: list[Path] = list(archives or [])
        self._mpqs: list[MpqArchive] = []
        self._loose: dict[str, Path] | None = None
        self._files: dict[str, tuple[str, Path]] = {}   # add_file: normalised path -> (shown path, file)
        self._lcid = LOCALES.get(locale) if locale else None
        try:
            for p in self.archives:
                self._mpqs.append(MpqArchive.open(p, threads=self.threads))
        except BaseException:
            self.close()
            raise

    @property
    def kind(self) -> str:
        return "mpq" if self.archives else "loose"

    def spec(self) -> "DataSpec":
        """What reopens this data source in another process (the viewer's tile process)."""
        return DataSpec(self.root, tuple(self.archives), self.build, self.locale, self.threads,
                        tuple((shown, str(f)) for shown, f in self._files.values()))

    def archive(self, path) -> MpqArchive:
        """The opened archive for one of ``archives``."""
        return self._mpqs[self.archives.index(Path(path))]

    def close(self) -> None:
        for a in self._mpqs:
            a.close()
        self._mpqs = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"<GameData {self.root} {self.kind} build={self.build} locale={self.locale} archives={len(self.archives)}>"

    # loose files ------------------------------------------------------------------------------
    def _loose_index(self) -> dict[str, Path]:
        """Normalised game path -> file. A folder that *is* ``DBFilesClient`` (.dbc files at its top)
        or a map folder (.adt/.wdt files at its top) also answers for the game paths those files
        have in a client (``DBFilesClient\\X.dbc``, ``World\\Maps\\<folder>\\X.adt``)."""
        if self._loose is None:
            idx: dict[str, Path] = {}
            for dirpath, dirnames, filenames in os.walk(self.root):
                dirnames.sort()
                rel = Path(dirpath).relative_to(self.root)
                for f in sorted(filenames):
                    idx.setdefault(_norm(str(rel / f)), Path(dirpath) / f)
            top = [k for k in idx if "\\" not in k]
            if not any(k.startswith("DBFILESCLIENT\\") for k in idx):
                for k in top:
                    if k.endswith(".DBC"):
                        idx["DBFILESCLIENT\\" + k] = idx[k]
            if not any(k.startswith("WORLD\\") for k in idx):
                for k in top:
                    m = _MAP_FILE.match(k)
                    if m:
                        idx[f"WORLD\\MAPS\\{m.group(1)}\\{k}"] = idx[k]
            self._loose = idx
        return self._loose

    def _loose_name(self, key: str, path: Path) -> str:
        """The game path shown for a loose file (its alias when it answers for one)."""
        rel = str(path.relative_to(self.root)).replace(os.sep, "\\")
        if "\\" in key and "\\" not in rel:  # an alias: DBFilesClient\\ or World\\Maps\\<map>\\
            m = _MAP_FILE.match(rel.upper())
            head = "DBFilesClient" if key.startswith("DBFILESCLIENT\\") else f"World\\Maps\\{rel[:len(m.group(1))]}"
            return f"{head}\\{rel}"
        return rel

    def add_file(self, path: str, file) -> None:
        """Let the loose ``file`` answer for the game path ``path``, above every archive and folder
        (``view map.adt`` streams that file as its map's tile)."""
        self._files[_norm(path)] = (path.replace("/", "\\"), Path(file))

    # lookup -----------------------------------------------------------------------------------
    def locate(self, path: str) -> tuple[Path, MpqArchive | None] | None:
        """(archive path, archive) providing ``path`` (or (file, None) when loose), else None."""
        added = self._files.get(_norm(path))
        if added is not None:
            return added[1], None
        if not self.archives:
            p = self._loose_index().get(_norm(path))
            return (p, None) if p is not None else None
        for apath, arc in zip(reversed(self.archives), reversed(self._mpqs)):
            e = arc.lookup(path, self._lcid)
            if e is None:
                continue
            if e.is_delete_marker:
                return None
            return apath, arc
        return None

    def exists(self, path: str) -> bool:
        return self.locate(path) is not None

    def read(self, path: str) -> bytes:
        """The bytes of ``path`` ('/' or '\\', any case) from the highest-priority source."""
        found = self.locate(path)
        if found is None:
            raise GameFileNotFound(f"{path}: not in {self.root} ({self._where()})")
        where, arc = found
        log.debug("read %s from %s", path, where)
        if arc is None:
            return where.read_bytes()
        return arc.read(path, self._lcid)

    def read_many(self, paths: Iterable[str], *, threads: int | None = None,
                  chunk: int = CHUNK_BYTES) -> Iterator[tuple[str, bytes | WowgrassError]]:
        """``(path, bytes)`` for each of ``paths`` in order, decompressed on ``threads`` threads; a
        file that cannot be read comes back as ``(path, error)`` and the others still come out."""
        def plan(path):
            found = self.locate(path)
            if found is None:
                raise GameFileNotFound(f"{path}: not in {self.root} ({self._where()})")
            where, arc = found
            if arc is None:
                return [(where.read_bytes, 1)]
            return arc.decode_plan(arc.lookup(path, self._lcid), chunk)

        return decode_files(((p, functools.partial(plan, p)) for p in paths),
                            self.threads if threads is None else threads, chunk)

    def _where(self) -> str:
        if self.archives:
            hint = self.locale_note()
            return f"{len(self.archives)} archives, build {self.build or 'unknown'}" + (f"; {hint}" if hint else "")
        return "loose files"

    def locale_note(self) -> str | None:
        """Why a 2.4.3/3.3.5 chain lacks its tables: no locale folder was found beside the MPQs."""
        if self.archives and self.locale is None and self.build in ("2.4.3", "3.3.5"):
            return (f"no locale folder (enUS, deDE, ...) in {self.root}: a {self.build} client keeps its "
                    "tables (DBFilesClient) in <locale>/locale-<locale>.MPQ; copy that folder too")
        return None

    def list(self, pattern: str = "*") -> list[str]:
        """Known paths matching a case-insensitive glob ('/' or '\\'); MPQs need a (listfile)."""
        pat = _norm(pattern) if pattern not in ("", "*") else "*"
        added = [shown for k, (shown, _) in self._files.items() if fnmatch.fnmatchcase(k, pat)]
        if not self.archives:
            idx = self._loose_index()
            listed = {self._loose_name(k, p) for k, p in idx.items() if fnmatch.fnmatchcase(k, pat)}
            return sorted(listed | set(added), key=str.lower)
        names: dict[str, str] = {}
        for arc in self._mpqs:
            for n in arc.names():
                names.setdefault(_norm(n), n)
        out = [n for k, n in names.items() if fnmatch.fnmatchcase(k, pat) and self.exists(n)]
        return sorted(set(out) | set(added), key=str.lower)


@dataclass(frozen=True)
class DataSpec:
    """A :class:`GameData` as a picklable description: the same archives in the same order, the
    same build and locale, the same added files."""

    root: Path
    archives: tuple
    build: str | None
    locale: str | None
    threads: int
    files: tuple = ()

    def open(self) -> GameData:
        data = GameData(self.root, archives=list(self.archives), build=self.build, locale=self.locale,
                        threads=self.threads)
        for shown, f in self.files:
            data.add_file(shown, f)
        return data


def list_maps(data, **kw) -> dict[str, dict]:
    """Maps of a data source (see :func:`wowgrass.game.maps.list_maps`, where the rule lives)."""
    from wowgrass.game.maps import list_maps as _list_maps

    return _list_maps(data, **kw)


def choose_map(data, map_name: str | None, **kw) -> str:
    """``map_name``, or the data source's only map (see :func:`wowgrass.game.maps.choose_map`)."""
    from wowgrass.game.maps import choose_map as _choose_map

    return _choose_map(data, map_name, **kw)


def open_data(path, *, build: str | None = None, locale: str | None = None,
              order: list[str] | None = None, threads: int | None = None) -> GameData:
    """Open a client's Data folder (or the client folder holding ``Data``) or a loose folder
    (see :func:`_open_data`); -v says what was mounted, -vv each archive."""
    data = _open_data(path, build=build, locale=locale, order=order, threads=threads)
    if data.archives:
        log.info("data %s: %d archives, build %s, locale %s", data.root, len(data.archives), data.build or "unknown",
                 data.locale or "none")
        for i, a in enumerate(data.archives):
            log.debug("  archive %d: %s", i, a)
        hint = data.locale_note()
        if hint:
            log.info("%s", hint)
    else:
        log.info("data %s: loose files", data.root)
    return data


def _open_data(path, *, build: str | None = None, locale: str | None = None,
               order: list[str] | None = None, threads: int | None = None) -> GameData:
    """Open a client's Data folder (or the client folder holding ``Data``) or a loose folder.

    ``build`` and ``locale`` override detection; ``order`` names the archives explicitly
    (paths relative to the Data folder, lowest priority first); ``threads``: see GameData.
    """
    root = Path(path)
    if not root.is_dir():
        if root.exists():
            raise UsageError(f"{root} is not a folder (give a client's Data folder or a folder of files)")
        raise GameFileNotFound(f"no such folder: {root}")
    if build is not None and build not in ("1.12", "2.4.3", "3.3.5"):
        raise UsageError(f"unknown build {build!r} (1.12, 2.4.3 or 3.3.5)")
    data_dir = _child_ci(root, "Data")
    if not _mpqs_in(root) and data_dir is not None and _mpqs_in(data_dir):
        root = data_dir
    if order is not None:
        archives = []
        for rel in order:
            p = root / rel
            if not p.is_file():
                raise GameFileNotFound(f"archive {rel} not found in {root}")
            archives.append(p)
        return GameData(root, archives=archives, build=build or detect_build(p.name for p in archives),
                        locale=locale, threads=threads)
    top = _mpqs_in(root)
    if locale is None:
        locale = detect_locale(root)
        loc_dir = _child_ci(root, locale) if locale else None
    else:
        loc_dir = _child_ci(root, locale)
        if loc_dir is None and top:
            raise UsageError(f"no locale folder {locale} in {root}")
    loc_mpqs = _mpqs_in(loc_dir) if loc_dir else {}
    if not top and not loc_mpqs:
        return GameData(root, build=build, locale=locale, threads=threads)
    if build is None:
        build = detect_build(list(top) + list(loc_mpqs))
    archives = archive_order(root, build, locale)
    if not archives:
        raise UsageError(f"{root} holds MPQs but none that a {build or 'WoW'} client mounts: "
                         f"{', '.join(sorted(top)) or '(none)'}")
    return GameData(root, archives=archives, build=build, locale=locale, threads=threads)
