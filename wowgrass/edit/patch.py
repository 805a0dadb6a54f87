"""Patch MPQs: pack a folder of changed files (laid out as the client's paths) into an archive the
client mounts above its own (formats.md §5.5).

What the clients load:
* 1.12: ``Data\\patch.MPQ``, then ``Data\\patch-?.MPQ`` (one character, ascending); no locale archives.
* 2.4.3 / 3.3.5: the same in ``Data``, then ``Data\\<loc>\\patch-<loc>.MPQ`` and
  ``patch-<loc>-?.MPQ``, the highest of all. Their DBCs ship in the locale archives, so a table
  in a ``Data\\patch-?.MPQ`` is hidden by the locale archives' copy in the order wowgrass mounts
  (tools differ here, §5.5): tables belong in a locale patch.

The archive is MPQ format v1 (the 32-byte header every one of these clients reads; 2.4.3+ read v2
too, 1.12 only v1), zlib-compressed sectors of 4 KiB (all three read zlib), with a ``(listfile)``.
It is built in memory, read back and compared file by file before it is written atomically.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from wowgrass.errors import FormatError, UsageError
from wowgrass.fileio import check_output_file, write_atomic
from wowgrass.formats.mpq import MpqArchive, write_mpq

BUILDS = ("1.12", "2.4.3", "3.3.5")
FORMAT_VERSION = {"1.12": 0, "2.4.3": 0, "3.3.5": 0}   # v1 header: read by every client here
COMPRESSION = "zlib"
# N is one ASCII letter or digit: the clients' patch-?.MPQ never matches a non-ASCII name (patch-é.MPQ)
DATA_PATCH = re.compile(r"^patch-([0-9a-z])\.mpq$", re.IGNORECASE)
LOCALE_PATCH = re.compile(r"^patch-([a-z]{2}[A-Z]{2})-([0-9a-z])\.mpq$", re.IGNORECASE)
LOCALE_NAME = re.compile(r"^[a-z]{2}[A-Z]{2}$")
_SKIP = re.compile(r"^\.|\.tmp$|~$|\.bak$", re.IGNORECASE)   # hidden, temporaries, backups


@dataclass
class PatchResult:
    file: str
    build: str | None
    locale: str | None
    kind: str                          # "data" (Data\patch-N.MPQ), "locale" or "unloaded"
    files: list[str]
    size: int = 0
    format_version: int = 0
    skipped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    chain: dict | None = None          # when written into a Data folder: where it ranks, what it overrides
    place: str | None = None           # where the client loads it from (Data\patch-4.MPQ), None: nowhere

    def to_dict(self) -> dict:
        return {"file": self.file, "build": self.build, "locale": self.locale, "kind": self.kind,
                "files": self.files, "file_count": len(self.files), "size": self.size,
                "format_version": self.format_version, "compression": COMPRESSION,
                "skipped": self.skipped, "warnings": self.warnings, "chain": self.chain, "place": self.place}


def collect_files(folder) -> tuple[dict[str, bytes], list[str]]:
    """``{game path: bytes}`` of every regular file under ``folder`` (its relative path with ``\\``),
    and the names skipped: hidden files, temporaries and backups, archives, and what is not a
    regular file (a FIFO, a socket, a device: reading one could wait for ever), said as such."""
    import stat

    root = Path(folder)
    if not root.is_dir():
        raise UsageError(f"{root}: not a folder (give the folder of changed files, laid out as the client's paths)")
    files: dict[str, bytes] = {}
    seen: dict[str, tuple[Path, str]] = {}
    skipped: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for f in sorted(filenames):
            path = Path(dirpath) / f
            rel = path.relative_to(root)
            name = "\\".join(rel.parts)
            if _SKIP.search(f) or f.lower().endswith(".mpq") or f.lower() in ("(listfile)", "(attributes)"):
                skipped.append(name)
                continue
            try:
                regular = stat.S_ISREG(path.stat().st_mode)
            except OSError:   # a dangling link
                regular = False
            if not regular:
                skipped.append(f"{name} (not a regular file)")
                continue
            if not name.isascii():
                raise UsageError(f"{rel}: MPQ names are ASCII in these clients")
            key = name.upper()
            if key in seen:
                other, other_name = seen[key]
                why = ("a \\ in a file name separates folders in game paths" if other_name == name
                       else "the client ignores case")
                raise UsageError(f"{other.as_posix()} and {rel.as_posix()} are the same game path {name} ({why})")
            seen[key] = (rel, name)
            files[name] = path.read_bytes()
    if not files:
        raise UsageError(f"{root} holds no files to pack")
    return files, skipped


def detect_files_build(files: dict[str, bytes]) -> str | None:
    """The build a folder's GroundEffectTexture.dbc is laid out for (1.12 for the layout 2.4.3 shares),
    else None."""
    from wowgrass.edit.effect_sets import table_build

    for name, data in files.items():
        if name.lower().endswith("groundeffecttexture.dbc"):
            try:
                return table_build(data)
            except (FormatError, UsageError):
                return None
    return None


def name_kind(path) -> tuple[str, str | None]:
    """``("data", None)`` for ``patch-N.MPQ``, ``("locale", "enUS")`` for ``patch-enUS-N.MPQ``,
    ``("unloaded", None)`` for a name no client mounts as a patch of its own."""
    name = Path(path).name
    if DATA_PATCH.match(name):
        return "data", None
    m = LOCALE_PATCH.match(name)
    if m:
        return "locale", m.group(1)
    return "unloaded", None


def advice(out: Path, build: str | None, locale: str | None, files) -> tuple[str, str | None, list[str]]:
    """Where the clients would load ``out`` from: ``(kind, locale, warnings)``."""
    kind, name_loc = name_kind(out)
    warnings: list[str] = []
    name = out.name
    has_dbc = any(f.lower().startswith("dbfilesclient\\") for f in files)
    loc = locale or name_loc or "enUS"
    if kind == "unloaded":
        if name.lower() in ("patch.mpq",) or re.match(r"^patch-[a-z]{2}[A-Z]{2}\.mpq$", name, re.IGNORECASE):
            warnings.append(f"{name} is the client's own patch archive: it would replace it; "
                            "name yours patch-N.MPQ (one character above the client's: patch-4 over patch-3)")
        else:
            where = ("Data\\patch-N.MPQ" if build == "1.12" else
                     f"Data\\patch-N.MPQ or Data\\{loc}\\patch-{loc}-N.MPQ")
            warnings.append(f"the client does not load {name}: name it {where}, N one character "
                            "(patch-4.MPQ ranks above patch-3.MPQ)")
        return kind, locale, warnings
    if kind == "locale":
        if build == "1.12":
            warnings.append(f"{name}: 1.12 mounts no locale archives; name it patch-N.MPQ in Data")
        if locale and name_loc and locale.lower() != name_loc.lower():
            warnings.append(f"{name} is a {name_loc} patch but --locale says {locale}")
        parent = out.resolve().parent
        if LOCALE_NAME.match(parent.name) and parent.name.lower() != name_loc.lower():
            warnings.append(f"{name} is loaded from Data\\{name_loc}\\, not from the {parent.name} folder")
        elif _is_data_folder(parent):
            warnings.append(f"{name} is loaded from Data\\{name_loc}\\, not from Data itself")
        return kind, name_loc, warnings
    # a Data patch
    if locale and build != "1.12":
        warnings.append(f"--locale {locale}: a locale patch is named patch-{locale}-N.MPQ (in Data\\{locale}\\)")
    if LOCALE_NAME.match(out.parent.name):
        warnings.append(f"{name} is loaded from Data\\, not from the locale folder {out.parent.name}\\")
    if has_dbc and build in ("2.4.3", "3.3.5"):
        warnings.append(f"{build} keeps its DBCs in the locale archives, which rank above Data\\{name}: ship the "
                        f"tables in Data\\{loc}\\patch-{loc}-N.MPQ")
    return kind, None, warnings


def _is_data_folder(folder: Path) -> bool:
    """Whether ``folder`` holds a client's base archives."""
    from wowgrass.game.data import detect_build

    try:
        return detect_build(p.name for p in folder.iterdir() if p.suffix.lower() == ".mpq") is not None
    except OSError:
        return False


def place(kind: str, locale: str | None, name: str, build: str | None = None) -> str | None:
    """Where the client loads a patch of this name: ``Data\\patch-4.MPQ``, ``Data\\enUS\\...``."""
    if kind == "locale" and build == "1.12":
        return None
    return {"data": f"Data\\{name}", "locale": f"Data\\{locale}\\{name}"}.get(kind)


def _data_folder(out: Path) -> Path | None:
    """The client Data folder ``out`` lies in (directly or in its locale folder), if it looks like one."""
    from wowgrass.game.data import detect_build

    folders = [out.parent.parent] if LOCALE_NAME.match(out.parent.name) else [out.parent]
    for folder in folders:
        try:
            names = [p.name for p in folder.iterdir() if p.suffix.lower() == ".mpq" and p.name != out.name]
        except OSError:
            continue
        if detect_build(names) is not None:   # the base archives of a client
            return folder
    return None


def chain_check(out: Path, names, data_root=None) -> dict | None:
    """Whether a client's archive chain mounts ``out``, its rank, and the files of it a higher
    archive hides: the Data folder ``out`` sits in, or ``data_root`` as if ``out`` lay there (by its
    name, as ``effects diff`` mounts it)."""
    from wowgrass.game.data import GameData, archive_order, open_data

    root = Path(data_root) if data_root is not None else _data_folder(out)
    if root is None:
        return None
    try:
        base = open_data(root)
    except Exception:  # noqa: BLE001 - a folder that only looks like Data: no check, no failure
        if data_root is not None:
            raise
        return None
    me = out.resolve()
    data = base
    if data_root is not None and base.archives:
        kind, loc = name_kind(out)
        rel = f"{base.locale or loc}/{out.name}" if kind == "locale" else out.name
        order = archive_order(base.root, base.build, base.locale, extra={rel: out})
        base.close()
        data = GameData(base.root, archives=order, build=base.build, locale=base.locale)
    with data:
        root = data.root
        archives = [Path(a).resolve() for a in data.archives]
        if me not in archives:
            return {"data": str(root), "mounted": False, "rank": None, "archive_count": len(archives), "hidden": {}}
        hidden = {}
        for n in names:
            found = data.locate(n)
            if found is not None and Path(found[0]).resolve() != me:
                hidden[n] = Path(found[0]).name
        return {"data": str(root), "mounted": True, "rank": archives.index(me) + 1, "archive_count": len(archives),
                "highest": archives.index(me) == len(archives) - 1, "hidden": hidden}


def _open_chain(data_root) -> None:
    """Open ``data_root``'s archive chain (the error a bad one gives) and close it again."""
    from wowgrass.game.data import open_data

    open_data(data_root).close()


def pack(files: dict[str, bytes], build: str | None = None) -> bytes:
    """The patch archive's bytes, checked by reading every file back."""
    version = FORMAT_VERSION.get(build or "", 0)
    raw = write_mpq(files, format_version=version, compression=COMPRESSION, listfile=True)
    arc = MpqArchive.from_bytes(raw, "<patch>")
    for name, data in files.items():
        if arc.read(name) != data:  # pragma: no cover - the writer's own bug
            raise FormatError(f"{name} reads back different from what was packed", path="<patch>")
    return raw


def build_patch(folder, out, *, build: str | None = None, locale: str | None = None,
                force: bool = False, data=None) -> PatchResult:
    """Pack ``folder`` into the patch archive ``out`` (replaced when it exists; ``force`` is kept for
    old callers). ``data``: a client's Data folder to check the archive against as if it lay there,
    opened before anything is written."""
    out = Path(out)
    if build is not None and build not in BUILDS:
        raise UsageError(f"--build {build}: one of {', '.join(BUILDS)}")
    if locale is not None and not LOCALE_NAME.match(locale):
        raise UsageError(f"--locale {locale}: a locale looks like enUS or deDE")
    if build == "1.12" and locale:
        raise UsageError("--locale: 1.12 mounts no locale archives (its patches are Data\\patch-N.MPQ)")
    if out.suffix.lower() != ".mpq":
        raise UsageError(f"-o {out}: a patch archive's name ends in .MPQ")
    if out.is_dir():
        raise UsageError(f"-o {out}: is a folder; give the archive's file name")
    if not out.parent.is_dir():
        raise UsageError(f"-o {out}: folder {out.parent} does not exist")
    src = Path(folder).resolve()
    if src == out.resolve().parent or src in out.resolve().parents:
        raise UsageError(f"-o {out} lies inside {folder}, the folder being packed; write it elsewhere")
    check_output_file(out)   # an existing archive is replaced (docs/cli.md, "Outputs"); ``force`` is the old flag's
    if data is not None:
        _open_chain(data)     # a --data that is no Data folder fails here, before an archive exists
    files, skipped = collect_files(folder)
    detected = detect_files_build(files)
    if build is None:
        build = detected
        if build == "1.12" and name_kind(out)[0] == "locale":
            build = "2.4.3"   # 1.12 and 2.4.3 share the table layout; of the two only 2.4.3 loads locale patches
    kind, loc, warnings = advice(out, build, locale, files)
    if detected and build and detected != build and not (detected == "1.12" and build == "2.4.3"):
        warnings.append(f"the folder's GroundEffectTexture.dbc is laid out for {detected}, not {build}")
    raw = pack(files, build)
    write_atomic(out, raw)
    result = PatchResult(str(out), build, loc, kind, sorted(files, key=str.lower), len(raw),
                         FORMAT_VERSION.get(build or "", 0), skipped, warnings)
    result.place = place(kind, loc, out.name, build)
    result.chain = chain_check(out, files, data)
    if result.chain is not None:
        if not result.chain["mounted"]:
            warnings.append(f"the archive chain of {result.chain['data']} does not mount {out.name}"
                            + (" (placed by its name)" if data is not None else ""))
        for name, where in result.chain["hidden"].items():
            warnings.append(f"{name} is hidden by {where}, which ranks above {out.name}")
    return result


#: the N of patch-N.MPQ / patch-<loc>-N.MPQ in the order the clients rank them (ascending)
PATCH_RANKS = "23456789abcdefghijklmnopqrstuvwxyz"


def default_patch_name(data, build: str | None, locale: str | None = None) -> str:
    """The name of a patch the client loads above every patch ``data`` (a client's Data folder,
    opened) has: ``patch-<loc>-N.MPQ`` for 2.4.3/3.3.5 (the locale patches rank highest, and hold
    tables and tiles alike), ``patch-N.MPQ`` for 1.12; N the next rank above the highest taken."""
    from wowgrass.edit.batch import base_data

    d = base_data(data)
    names = [Path(a).name for a in (getattr(d, "archives", None) or ())]
    if build == "1.12":
        rx, fmt = DATA_PATCH, "patch-{n}.MPQ"
    else:
        loc = locale or getattr(d, "locale", None) or "enUS"
        rx = re.compile(rf"^patch-{loc}-([0-9a-z])\.mpq$", re.IGNORECASE)
        fmt = f"patch-{loc}-{{n}}.MPQ"
    taken = [PATCH_RANKS.find(m.group(1).lower()) for m in (rx.match(n) for n in names) if m]
    i = max(taken, default=-1) + 1
    return fmt.format(n=PATCH_RANKS[min(i, len(PATCH_RANKS) - 1)])


def patch_notes(result: dict, out) -> list[str]:
    """What ``patch build`` and the window's Build patch say after writing ``out`` (``result``:
    :meth:`PatchResult.to_dict`): skipped files, warnings, where the client loads it or where it
    ranks, and what was written, where. The file list is the caller's."""
    lines = []
    for s in result.get("skipped") or []:
        lines.append(f"warning: skipped {s}" if s.endswith("(not a regular file)") else f"note: skipped {s} (not a game file)")
    lines += [f"warning: {w}" for w in result.get("warnings") or []]
    chain = result.get("chain")
    if result.get("place") and not chain:
        lines.append(f"note: the client loads it as {result['place']}")
    if chain and chain["mounted"]:
        lines.append(f"note: {Path(out).name} ranks {chain['rank']} of {chain['archive_count']} archives in "
                     f"{chain['data']}" + (" (the highest)" if chain.get("highest") else ""))
    what = {"data": "a Data patch", "locale": f"a locale patch ({result.get('locale')})"}.get(result.get("kind"),
                                                                                             "a name no client loads")
    n = len(result.get("files") or [])
    lines.append(f"wrote {out} ({n:,} file{'s' if n != 1 else ''}, {result.get('size', 0):,} byte"
                 f"{'s' if result.get('size', 0) != 1 else ''}, MPQ v{result.get('format_version', 0) + 1}, {what}"
                 + (f" for {result['build']}" if result.get("build") else "") + ")")
    return lines
