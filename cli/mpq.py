"""``wowgrass mpq``: inspect, list, extract and print files of MPQ archives or a whole Data folder."""

from __future__ import annotations

import errno
import fnmatch
import logging
import re
import sys
from pathlib import Path

import click

from wowgrass.cli.common import data_option, echo_json, json_option, note, plural, progress_bar
from wowgrass.errors import GameFileNotFound, OutputError, UsageError, WowgrassError

log = logging.getLogger("wowgrass.cli.mpq")

STOP_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)  # extraction stops: no other file would fit

_GLOB = re.compile(r"[*?\[]")
ARCHIVE_SUFFIXES = (".mpq", ".w3m", ".w3x", ".sc2map", ".sc2replay", ".s2ma")


class _Source:
    """One archive or a mounted Data folder, behind the few calls the commands need."""

    def __init__(self, archive: str | None, data_path: str | None, listfiles=(), locale: str | None = None):
        if archive and data_path:
            raise UsageError("give an ARCHIVE or --data DIR, not both")
        if not archive and not data_path:
            raise UsageError("give an ARCHIVE (an .MPQ file) or --data DIR (a client's Data folder)")
        if archive and Path(archive).is_dir():
            if Path(archive).suffix.lower() in ARCHIVE_SUFFIXES:
                raise UsageError(f"{archive} is a folder, not an MPQ archive (to read a folder of archives or of "
                                 f"loose files, give --data {archive})")
            data_path, archive = archive, None
        self.label = archive or data_path
        from wowgrass.game.data import LOCALES

        if locale is not None and locale not in LOCALES:
            raise UsageError(f"--locale {locale}: not a client locale ({', '.join(LOCALES)})")
        self.lcid = LOCALES.get(locale) if locale else None
        extra = _listfile_names(listfiles)
        if data_path:
            from wowgrass.game.data import open_data

            self.data = open_data(data_path, locale=locale)
            self.mpq = None
            for p in self.data.archives:
                self.data.archive(p).add_names(extra)
        else:
            from wowgrass.formats.mpq import MpqArchive

            self.mpq = MpqArchive.open(archive)
            self.mpq.add_names(extra)
            self.data = None

        for a in self.archives() if log.isEnabledFor(logging.INFO) else ():   # -v: what each archive holds
            entries = a.entries()
            unnamed = sum(1 for e in entries if e.name is None and not e.is_delete_marker)
            log.info("%s: %d entries, %d named, %d unnamed (no listfile names them), %d delete markers", a.path,
                     len(entries), sum(1 for e in entries if e.name is not None), unnamed,
                     sum(1 for e in entries if e.is_delete_marker))

    def close(self):
        (self.mpq or self.data).close()

    def names(self) -> list[str]:
        return self.mpq.names() if self.mpq else self.data.list()

    def archives(self):
        return [self.mpq] if self.mpq else [self.data.archive(p) for p in self.data.archives]

    def unreachable(self) -> list[str]:
        """Names the listfiles give that no lookup can reach (and no other archive provides)."""
        found = {n for a in self.archives() for n in a.unreachable_names()}
        if self.data is not None:
            found = {n for n in found if not self.data.exists(n)}
        return sorted(found, key=str.lower)

    def warn(self) -> None:
        """One line for what opening the archives tolerated, one for unreachable names."""
        for a in self.archives():
            for w in a.warnings:
                note(f"warning: {a.path}: {w}")
        lost = self.unreachable()
        if lost:
            note(f"warning: {plural(len(lost), 'name')} from the listfile with no hash entry on its probe path "
                 f"(skipped; a damaged or protected archive): " + ", ".join(lost[:5]) + (" …" if len(lost) > 5 else ""))

    def read(self, name: str) -> bytes:
        return self.mpq.read(name, self.lcid) if self.mpq else self.data.read(name)

    def read_many(self, names):
        """(name, bytes or error) in order, decompressed in parallel."""
        return self.mpq.read_many(names, self.lcid) if self.mpq else self.data.read_many(names)

    def rows(self, patterns=()) -> list[dict]:
        pats = [p.replace("/", "\\").upper() for p in patterns]

        def wanted(name):
            return not pats or (name is not None and any(fnmatch.fnmatchcase(name.upper(), p) for p in pats))

        out = []
        if self.mpq:
            for e in sorted(self.mpq.entries(), key=lambda e: ((e.name or "\uffff").lower(), e.block_index)):
                if wanted(e.name):
                    out.append(_row(e))
            return out
        for name in self.data.list():
            if not wanted(name):
                continue
            found = self.data.locate(name)
            if found is None:
                continue
            where, arc = found
            if arc is None:
                size = where.stat().st_size
                out.append({"name": name, "size": size, "packed_size": size, "flags": 0, "flag_names": [],
                            "locale": 0, "block": None, "archive": str(where.relative_to(self.data.root))})
            else:
                row = _row(arc.lookup(name, self.data._lcid))
                row["archive"] = str(where.relative_to(self.data.root))
                out.append(row)
        listed = {r["name"].upper() for r in out}
        for p in self.data.archives:  # what no listfile names (or no lookup reaches), as `mpq ls ARCHIVE` shows it
            for e in sorted(self.data.archive(p).entries(), key=lambda e: e.block_index):
                if e.is_delete_marker:
                    continue
                lost = e.name is not None and not e.reachable and e.name.upper() not in listed
                if (e.name is None and not pats) or (lost and wanted(e.name)):
                    out.append(dict(_row(e), archive=str(p.relative_to(self.data.root))))
        return out

    def select(self, patterns) -> list[str]:
        """Names for NAMES/GLOBS (all named files when none); unknown literal names are an error."""
        names = self.names()
        if not patterns:
            return names
        chosen: dict[str, str] = {}
        for p in patterns:
            if _GLOB.search(p):
                pat = p.replace("/", "\\").upper()
                for n in names:
                    if fnmatch.fnmatchcase(n.replace("/", "\\").upper(), pat):
                        chosen.setdefault(n.upper(), n)
            else:
                if not (self.mpq.exists(p, self.lcid) if self.mpq else self.data.exists(p)):
                    if self.mpq:
                        raise self.mpq.missing_error(p)
                    raise GameFileNotFound(f"{self.label}: no file {p!r}")
                chosen.setdefault(p.replace("/", "\\").upper(), p)
        return list(chosen.values())


def _listfile_names(paths) -> list[str]:
    names = []
    for path in paths:
        text = Path(path).read_bytes().decode("utf-8", "surrogateescape")
        names += [n.strip() for n in text.replace("\r", "\n").replace(";", "\n").split("\n") if n.strip()]
    return names


def source_options(f):
    """--data, --listfile and --locale, shared by ls, extract and cat."""
    f = click.option("--locale", metavar="NAME", default=None,
                     help="Client locale to read (enUS, deDE, ...): files stored per locale take that "
                          "version; with --data, the locale folder to mount (default: detected).")(f)
    f = click.option("-L", "--listfile", "listfiles", multiple=True, type=click.Path(exists=True, dir_okay=False),
                     help="A listfile (one name a line) naming files the archives' own (listfile) lacks, like "
                          "smpq -L; repeatable.")(f)
    return data_option(f)


def _row(e) -> dict:
    return {"name": e.name, "size": e.size, "packed_size": e.packed_size, "flags": e.flags,
            "flag_names": e.flag_names, "locale": e.locale, "block": e.block_index, "reachable": e.reachable}


def safe_target(out_dir: Path, name: str) -> Path | None:
    """Where ``name`` goes under ``out_dir``: '..', '.', drive letters and leading separators are
    dropped, so no archive name can write outside ``out_dir``. None when nothing is left."""
    parts = [p for p in re.split(r"[\\/]+", name)
             if p not in ("", ".", "..") and not re.fullmatch(r"[A-Za-z]:", p) and "\0" not in p]
    if not parts:
        return None
    target = out_dir.joinpath(*parts)
    try:
        target.resolve().relative_to(out_dir.resolve())
    except ValueError:   # a symlink inside out_dir pointing elsewhere
        return None
    return target


@click.group()
def mpq():
    """Inspect, list and extract MPQ archives, or a whole client Data folder with --data."""


@mpq.command()
@click.argument("archive", required=False)
@data_option
@json_option
def info(archive, data_path, as_json):
    """Header of ARCHIVE (format, sector size, tables, files), or the archives --data mounts, in order."""
    src = _Source(archive, data_path)
    try:
        if not as_json:
            src.warn()
        if src.mpq:
            obj = _archive_info(src.mpq)
        else:
            d = src.data
            obj = {"root": str(d.root), "kind": d.kind, "build": d.build, "locale": d.locale,
                   "archives": [dict(_archive_info(d.archive(p)), file=str(p.relative_to(d.root)),
                                     priority=i) for i, p in enumerate(d.archives)]}
    finally:
        src.close()
    if as_json:
        echo_json(obj)
        return
    if src.mpq:
        for k, v in obj.items():
            click.echo(f"{k:20} {_text(v)}")
        return
    click.echo(f"root      {obj['root']}")
    click.echo(f"kind      {obj['kind']}")
    click.echo(f"build     {obj['build'] or 'unknown'}")
    click.echo(f"locale    {obj['locale'] or '-'}")
    if obj["archives"]:
        click.echo("archives (lowest priority first; later ones override earlier ones):")
        for a in obj["archives"]:
            click.echo(f"  {a['priority']:2}  {a['file']:40} v{a['format_version'] + 1}  {plural(a['file_count'], 'file'):>12}")


def _text(v) -> str:
    """A value as people read it: yes/no, '-' for nothing (never Python's True/None)."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return str(v)


def _archive_info(a) -> dict:
    h = a.header
    entries = a.entries()
    return {
        "file": a.path, "header_offset": h.offset, "user_data_offset": h.user_data_offset,
        "user_data_size": h.user_data_size, "format_version": h.format_version, "header_size": h.header_size,
        "archive_size": h.archive_size, "sector_size": h.sector_size,
        "hash_table_pos": h.hash_table_pos, "hash_table_size": h.hash_table_size,
        "block_table_pos": h.block_table_pos, "block_table_size": h.block_table_size,
        "hi_block_table_pos": h.hi_block_table_pos,
        "file_count": sum(1 for e in entries if not e.is_delete_marker),
        "delete_marker_count": sum(1 for e in entries if e.is_delete_marker),
        "named_count": sum(1 for e in entries if e.name is not None),
        "listfile": a.exists("(listfile)"),
    }


LS_COLUMNS = ("size", "packed", "locale", "flags", "name", "archive")


@mpq.command("ls")
@click.argument("args", nargs=-1, metavar="[ARCHIVE] [GLOBS...]")
@source_options
@json_option
def ls(args, data_path, listfiles, locale, as_json):
    """List the files of ARCHIVE (or of the whole --data chain).

    \b
    Columns, in order: size (bytes), packed (bytes stored), locale (hex LCID, 0000 = neutral),
    flags, name, and with --data the archive that provides the file.

    Entries no listfile names are shown as <unnamed #block> (give names with -L FILE); a listed
    name whose entry no lookup by that name reaches (a damaged or protected archive) is marked
    <no hash entry> and cannot be read. GLOBS filter by name ('*', '?').
    """
    archive, patterns = _split(args, data_path)
    src = _Source(archive, data_path, listfiles, locale)
    try:
        rows = src.rows(patterns)
        if not as_json:
            for a in src.archives():
                for w in a.warnings:
                    note(f"warning: {a.path}: {w}")
    finally:
        src.close()
    if locale and src.mpq:
        lcid = src.lcid
        rows = [r for r in rows if r["locale"] in (0, lcid)]
    if as_json:   # an object, as every --json: the source, the count and the rows
        echo_json({"archive": archive, "data": str(data_path) if data_path else None, "file_count": len(rows),
                   "files": rows})
        return
    head = f"{'size':>10} {'packed':>10}  {'locale':6}  {'flags':32} name" + ("  [archive]" if data_path else "")
    click.echo(head)
    for r in rows:
        name = r["name"] if r["name"] is not None else f"<unnamed #{r['block']}>"
        if not r.get("reachable", True):
            name += "  <no hash entry>"
        extra = f"  [{r['archive']}]" if "archive" in r else ""
        flags = "|".join(n.lower() for n in r["flag_names"] if n != "EXISTS") or "-"
        click.echo(f"{r['size']:>10} {r['packed_size']:>10}  {r['locale']:04x}    {flags:32} {name}{extra}".rstrip())


def _split(args, data_path, *, need_name=False):
    args = list(args)
    if data_path:
        archive = None
    elif args:
        archive = args.pop(0)
    else:
        raise UsageError("give an ARCHIVE (an .MPQ file) or --data DIR (a client's Data folder)")
    if need_name and not args:
        raise UsageError("name the file to print, e.g. DBFilesClient\\GroundEffectTexture.dbc")
    return archive, args


@mpq.command()
@click.argument("args", nargs=-1, metavar="[ARCHIVE] [NAMES|GLOBS...]")
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Folder to extract into (created if missing).")
@click.option("-f", "--force", is_flag=True, hidden=True, help="(Files already there are always replaced.)")
@click.option("--unnamed", is_flag=True,
              help="Also extract the entries no name was found for, as File%08X.ext (block index, extension "
                   "from the file's first bytes; with --data under the archive's name), as MPQ editors do.")
@source_options
@json_option
def extract(args, out_dir, force, unnamed, data_path, listfiles, locale, as_json):
    """Extract NAMES or GLOBS (default: every named file) from ARCHIVE or the --data chain into -o DIR.

    Entries no listfile names are named where the client would name them (Map.dbc's maps and their
    tiles, the WDTs', ADTs', WMOs' and M2s' references, the tables it knows, GroundEffectDoodad's
    models, LiquidType's textures); how many stay unnamed is always said, and --unnamed extracts
    those too. Paths keep their folders; '..' and absolute parts are dropped so nothing lands
    outside DIR. Each file is written atomically. DIR is checked first (made, and a file made
    there): a place that takes no files is one error before anything is read. A file that cannot
    be read or written gets a warning and the rest still come out; the exit status is then 2.
    Files already there are replaced (and counted), as every output is.
    """
    from wowgrass.fileio import check_output_folder

    archive, patterns = _split(args, data_path)
    out = check_output_folder(out_dir)
    src = _Source(archive, data_path, listfiles, locale)
    run = _Extraction(out)
    try:
        named = _name_entries(src) if not patterns or any(_GLOB.search(p) for p in patterns) else []
        names = src.select(patterns)
        unreachable = src.unreachable()
        left = _unnamed_entries(src)
        if named:
            log_verbose(f"named {plural(len(named), 'entry', 'entries')} no listfile names, from the client's own "
                        f"references: " + ", ".join(named[:5]) + (" …" if len(named) > 5 else ""))
        if not as_json:
            src.warn()
        targets = {n: safe_target(out, n) for n in names}
        run.skipped = [n for n, t in targets.items() if t is None]
        with progress_bar("extract", "files", total=len(names), quiet=as_json) as bar:
            bar.advance("", len(run.skipped))
            # decompression runs ahead on worker threads while files are written here
            for name, data in src.read_many(n for n in names if targets[n] is not None):
                bar.advance(f"{run.total / 1e6:,.1f} MB")
                if isinstance(data, WowgrassError):
                    run.failed.append({"name": name, "error": str(data)})
                else:
                    run.write(name, targets[name], data)
            if unnamed:
                _extract_unnamed(run, left, patterns)
    finally:
        src.close()
    _report_extraction(run, out, names, unreachable, named, len(left), unnamed, as_json)


class _Extraction:
    """What an extraction wrote, skipped, replaced and failed to write, and the bytes written."""

    def __init__(self, out: Path):
        self.out = out
        self.done, self.skipped, self.failed, self.existing, self.total = [], [], [], [], 0

    def write(self, name: str, target: Path, data: bytes, **extra) -> None:
        from wowgrass.fileio import write_atomic

        existed = target.exists()
        # a name the file system refuses (too long, a file where a folder must go) is reported
        # like a corrupt file, and the rest still come out
        try:
            write_atomic(target, data)
        except OutputError as exc:
            if exc.errno in STOP_ERRNOS:
                raise  # a full or read-only place takes none of the rest either
            self.failed.append({"name": name, "error": str(exc)})
            return
        except OSError as exc:
            self.failed.append({"name": name, "error": exc.strerror or str(exc)})
            return
        if existed:
            self.existing.append(name)
        self.total += len(data)
        self.done.append({"name": name, "path": str(target), "size": len(data), **extra})


def _extract_unnamed(run: _Extraction, left, patterns) -> None:
    """--unnamed: the entries without a name, as File%08X.ext (the extension from their bytes)."""
    from wowgrass.game.name_finder import unnamed_entry_name

    for label, a, e in left:
        try:
            data = a.read_entry(e)
        except WowgrassError as exc:
            run.failed.append({"name": f"{label}block #{e.block_index}", "error": str(exc)})
            continue
        name = label + unnamed_entry_name(e, data)
        if patterns and not any(fnmatch.fnmatchcase(name.upper(), p.replace("/", "\\").upper()) for p in patterns):
            continue
        run.write(name, safe_target(run.out, name), data, block=e.block_index, unnamed=True)


def _report_extraction(run: _Extraction, out, names, unreachable, named, n_unnamed, unnamed, as_json) -> None:
    if as_json:
        echo_json({"output": str(out), "files": run.done, "skipped": run.skipped, "replaced": run.existing,
                   "failed": run.failed, "unreachable": unreachable, "bytes": run.total,
                   "named_by_references": len(named), "unnamed": n_unnamed, "unnamed_extracted": bool(unnamed)})
    else:
        if n_unnamed and not unnamed:
            note(f"note: {plural(n_unnamed, 'entry', 'entries')} {'has' if n_unnamed == 1 else 'have'} no name "
                 "(no listfile or reference names them): not extracted; --unnamed writes them as File%08X.ext")
        elif n_unnamed:
            note(f"note: {plural(n_unnamed, 'entry', 'entries')} without a name written as File%08X.ext")
        for s in run.skipped:
            note(f"warning: skipped {s!r} (no safe path under {out})")
        for f in run.failed:
            note(f"warning: {f['name']} not extracted: {f['error']}")
        if run.existing:
            note(f"note: {plural(len(run.existing), 'file')} already in {out} replaced")
        note(f"extracted {plural(len(run.done), 'file')} ({plural(run.total, 'byte')}) to {out}")
    if run.failed:
        raise UsageError(f"{len(run.failed)} of {plural(len(names), 'file')} could not be read or written "
                         f"(the others were extracted); the first: {run.failed[0]['error']}")


def _name_entries(src) -> list[str]:
    """Names for the entries no listfile names, as the client derives them (game/name_finder.py)."""
    from wowgrass.game.name_finder import find_names

    return find_names(src.archives(), src.read, src.names())


def _unnamed_entries(src) -> list:
    """(label, archive, entry) of every existing entry still without a name; label is the folder it
    goes in with --unnamed ('' for one archive, the archive's name with --data)."""
    out = []
    for a in src.archives():
        label = "" if src.mpq else Path(a.path).name + "\\"
        for e in sorted(a.entries(), key=lambda e: e.block_index):
            if e.name is None and not e.is_delete_marker and e.flags & 0x80000000:
                out.append((label, a, e))
    return out


def log_verbose(message: str) -> None:
    from wowgrass.cli.common import verbosity

    if verbosity() >= 1:
        note(message)


@mpq.command()
@click.argument("args", nargs=-1, required=True, metavar="[ARCHIVE] NAME")
@source_options
def cat(args, data_path, listfiles, locale):
    """Write the raw bytes of NAME from ARCHIVE (or the --data chain) to stdout."""
    archive, names = _split(args, data_path, need_name=True)
    if len(names) != 1:
        raise UsageError(f"cat takes one NAME, got {len(names)}")
    src = _Source(archive, data_path, listfiles, locale)
    try:
        data = src.read(names[0])
    finally:
        src.close()
    stream = sys.stdout.buffer
    stream.write(data)
    stream.flush()
