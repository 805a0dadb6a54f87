"""The game-data source: a client's ``Data`` folder (an ordered MPQ chain) or a folder of loose files.

Archive order follows the client's mount order, lowest priority first (a later archive overrides
an earlier one; a DELETE_MARKER entry in a later archive hides earlier copies), see
``shared/docs/formats.md`` §5.5:

* 1.12: ``dbc speech fonts interface misc sound wmo terrain texture model`` (``.MPQ``), then
  ``patch.MPQ``, then every ``patch-?.MPQ`` (one character, ascending), then ``speech2.MPQ``.
* 2.4.3 / 3.3.5: ``common common-2 expansion lichking``, the locale archives
  ``<loc>/locale-<loc> expansion-locale-<loc> lichking-locale-<loc>``, then ``patch.MPQ`` and
  ``patch-?.MPQ``, then the locale patches ``<loc>/patch-<loc>.MPQ`` and ``patch-<loc>-?.MPQ``.

**Layered data**: loose folders laid over the base (``layers``, the last one winning), as the
client lays its patches over its archives: a map editor's project folder over a client's Data
folder gives the project's tiles and WDT, and the client's textures, models and tables for what the
project lacks (``open_data([CLIENT, PROJECT])``; the CLI's repeated ``--data``).

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


def loose_index(folder: Path) -> dict[str, Path]:
    """Normalised game path -> file of every file under ``folder``. A folder that *is*
    ``DBFilesClient`` (.dbc files at its top) or a map folder (.adt/.wdt files at its top) also
    answers for the game paths those files have in a client (``DBFilesClient\\X.dbc``,
    ``World\\Maps\\<folder>\\X.adt``)."""
    idx: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        rel = Path(dirpath).relative_to(folder)
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
    return idx


def loose_name(folder: Path, key: str, path: Path) -> str:
    """The game path shown for a loose file of ``folder`` (its alias when it answers for one)."""
    rel = str(path.relative_to(folder)).replace(os.sep, "\\")
    if "\\" in key and "\\" not in rel:  # an alias: DBFilesClient\\ or World\\Maps\\<map>\\
        m = _MAP_FILE.match(rel.upper())
        head = "DBFilesClient" if key.startswith("DBFILESCLIENT\\") else f"World\\Maps\\{rel[:len(m.group(1))]}"
        return f"{head}\\{rel}"
    return rel


_SKIP_LAYER_FILE = re.compile(r"(^|\\)\.|\.(BAK|TMP)$")   # hidden files, temporaries, backups


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
    ``layers``: loose folders over all of them, the last the highest (see the module docstring);
    ``threads`` decompress big files and batches of files (default: one per CPU).
    """

    def __init__(self, root: Path, *, archives: list[Path] | None = None, build: str | None = None,
                 locale: str | None = None, threads: int | None = None, layers: list[Path] | None = None):
        self.root = Path(root)
        self.threads = default_threads() if threads is None else max(1, int(threads))
        self.build = build
        self.locale = locale
        self.archives: list[Path] = list(archives or [])
        self._mpqs: list[MpqArchive] = []
        self._loose: dict[str, Path] | None = None
        self.layers: list[Path] = [Path(p) for p in (layers or [])]
        self._layer_index: list[dict[str, Path]] | None = None
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
                        tuple((shown, str(f)) for shown, f in self._files.values()),
                        tuple(str(p) for p in self.layers))

    def describe(self) -> str:
        """The source in words: its root, and the folders laid over it (``CLIENT + PROJECT``)."""
        return " + ".join(str(p) for p in [self.root, *self.layers])

    def refresh(self) -> None:
        """Forget the listings of the loose folders (files were added or removed on disk)."""
        self._loose = None
        self._layer_index = None

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
        over = f" layers={len(self.layers)}" if self.layers else ""
        return (f"<GameData {self.root} {self.kind} build={self.build} locale={self.locale} "
                f"archives={len(self.archives)}{over}>")

    # loose files ------------------------------------------------------------------------------
    def _loose_index(self) -> dict[str, Path]:
        """The base loose folder's index (see :func:`loose_index`)."""
        if self._loose is None:
            self._loose = loose_index(self.root)
        return self._loose

    def _layers(self) -> list[dict[str, Path]]:
        """Each layer's index, highest first, without hidden files, temporaries and backups (an
        editor's save in progress)."""
        if self._layer_index is None:
            self._layer_index = [{k: p for k, p in loose_index(f).items() if not _SKIP_LAYER_FILE.search(k)}
                                 for f in reversed(self.layers)]
        return self._layer_index

    def _loose_name(self, key: str, path: Path) -> str:
        return loose_name(self.root, key, path)

    def add_file(self, path: str, file) -> None:
        """Let the loose ``file`` answer for the game path ``path``, above every archive and folder
        (``view map.adt`` streams that file as its map's tile)."""
        self._files[_norm(path)] = (path.replace("/", "\\"), Path(file))

    def added_files(self) -> list[tuple[str, Path]]:
        """(game path, file) of every loose file :meth:`add_file` lent the source."""
        return list(self._files.values())

    # lookup -----------------------------------------------------------------------------------
    def locate(self, path: str) -> tuple[Path, MpqArchive | None] | None:
        """(archive path, archive) providing ``path`` (or (file, None) when loose), else None."""
        added = self._files.get(_norm(path))
        if added is not None:
            return added[1], None
        if self.layers:
            key = _norm(path)
            for idx in self._layers():
                p = idx.get(key)
                if p is not None:
                    return p, None
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
            where = f"{len(self.archives)} archives, build {self.build or 'unknown'}" + (f"; {hint}" if hint else "")
        else:
            where = "loose files"
        if self.layers:
            where += " under " + ", ".join(str(p) for p in self.layers)
        return where

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
        if self.layers:
            seen = {_norm(n) for n in added}
            for folder, idx in zip(reversed(self.layers), self._layers()):
                for k, p in idx.items():
                    if k not in seen and fnmatch.fnmatchcase(k, pat):
                        seen.add(k)
                        added.append(loose_name(folder, k, p))
        out = {_norm(n): n for n in added}      # a path the layers or added files have: named once
        if not self.archives:
            for k, p in self._loose_index().items():
                if fnmatch.fnmatchcase(k, pat):
                    out.setdefault(k, self._loose_name(k, p))
            return sorted(out.values(), key=str.lower)
        names: dict[str, str] = {}
        for arc in self._mpqs:
            for n in arc.names():
                names.setdefault(_norm(n), n)
        for k, n in names.items():
            if k not in out and fnmatch.fnmatchcase(k, pat) and self.exists(n):
                out[k] = n
        return sorted(out.values(), key=str.lower)


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
    layers: tuple = ()

    def open(self) -> GameData:
        data = GameData(self.root, archives=list(self.archives), build=self.build, locale=self.locale,
                        threads=self.threads, layers=[Path(p) for p in self.layers])
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


class DataLayers(tuple):
    """Data folders given together (``--data CLIENT --data PROJECT``): the base first, then the
    loose folders laid over it, the last the highest; shown as ``CLIENT + PROJECT``."""

    def __str__(self) -> str:
        return " + ".join(str(p) for p in self)


def open_data(path, *, build: str | None = None, locale: str | None = None,
              order: list[str] | None = None, threads: int | None = None, over=()) -> GameData:
    """Open a client's Data folder (or the client folder holding ``Data``) or a loose folder
    (see :func:`_open_data`), with the loose folders ``over`` laid over it, the last winning;
    ``path`` may also be a sequence, its first the base and the rest laid over it (a
    :class:`DataLayers`). -v says what was mounted, -vv each archive."""
    if isinstance(path, (list, tuple)):
        if not path:
            raise UsageError("no data folder given")
        path, over = path[0], [*path[1:], *over]
    layers = [_layer(p) for p in over]
    data = _open_data(path, build=build, locale=locale, order=order, threads=threads)
    data.layers = layers
    for p in layers:
        log.info("data layer %s: loose files over the rest", p)
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


def _layer(path) -> Path:
    """A loose folder to lay over a data source (not a client's MPQ folder: those are the base)."""
    folder = Path(path)
    if not folder.is_dir():
        if folder.exists():
            raise UsageError(f"{folder} is not a folder (a folder of loose files goes over the data)")
        raise GameFileNotFound(f"no such folder: {folder}")
    data_dir = _child_ci(folder, "Data")
    if _mpqs_in(folder) or (data_dir is not None and _mpqs_in(data_dir)):
        raise UsageError(f"{folder} holds MPQ archives: only the first --data may be a client's Data folder; the "
                         "folders laid over it are loose files (a map editor's project, a fix's -o DIR)")
    return folder


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
