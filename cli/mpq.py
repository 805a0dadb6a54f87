"""``wowgrass mpq``: inspect, list, extract and print files of MPQ archives or a whole Data folder."""

from __future__ import annotations

import fnmatch
import re
import sys
from pathlib import Path

import click

from wowgrass.cli.common import data_option, echo_json, json_option
from wowgrass.errors import GameFileNotFound, UsageError, WowgrassError

_GLOB = re.compile(r"[*?\[]")


class _Source:
    """One archive or a mounted Data folder, behind the few calls the commands need."""

    def __init__(self, archive: str | None, data_path: str | None):
        if archive and data_path:
            raise UsageError("give an ARCHIVE or --data DIR, not both")
        if not archive and not data_path:
            raise UsageError("give an ARCHIVE (an .MPQ file) or --data DIR (a client's Data folder)")
        if archive and Path(archive).is_dir():
            data_path, archive = archive, None
        self.label = archive or data_path
        if data_path:
            from wowgrass.data import open_data

            self.data = open_data(data_path)
            self.mpq = None
        else:
            from wowgrass.formats.mpq import MpqArchive

            self.mpq = MpqArchive.open(archive)
            self.data = None

    def close(self):
        (self.mpq or self.data).close()

    def names(self) -> list[str]:
        return self.mpq.names() if self.mpq else self.data.list()

    def read(self, name: str) -> bytes:
        return (self.mpq or self.data).read(name)

    def read_many(self, names):
        """(name, bytes or error) in order, decompressed in parallel."""
        return (self.mpq or self.data).read_many(names)

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
                if not (self.mpq or self.data).exists(p):
                    raise GameFileNotFound(f"{self.label}: no file {p!r}")
                chosen.setdefault(p.replace("/", "\\").upper(), p)
        return list(chosen.values())


def _row(e) -> dict:
    return {"name": e.name, "size": e.size, "packed_size": e.packed_size, "flags": e.flags,
            "flag_names": e.flag_names, "locale": e.locale, "block": e.block_index}


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
        if src.mpq:
            obj = _archive_info(src.mpq)
        else:
            d = src.data
            obj = {"root": str(d.root), "kind": d.kind, "build": d.build, "locale": d.locale,
                   "archives": [dict(_archive_info(d.archive(p)), path=str(p.relative_to(d.root)),
                                     priority=i) for i, p in enumerate(d.archives)]}
    finally:
        src.close()
    if as_json:
        echo_json(obj)
        return
    if src.mpq:
        for k, v in obj.items():
            click.echo(f"{k:20} {v}")
        return
    click.echo(f"root      {obj['root']}")
    click.echo(f"kind      {obj['kind']}")
    click.echo(f"build     {obj['build'] or 'unknown'}")
    click.echo(f"locale    {obj['locale'] or '-'}")
    if obj["archives"]:
        click.echo("archives (lowest priority first; later ones override earlier ones):")
        for a in obj["archives"]:
            click.echo(f"  {a['priority']:2}  {a['path']:40} v{a['format_version'] + 1}  {a['files']:6} files")


def _archive_info(a) -> dict:
    h = a.header
    entries = a.entries()
    return {
        "path": a.path, "header_offset": h.offset, "user_data_offset": h.user_data_offset,
        "user_data_size": h.user_data_size, "format_version": h.format_version, "header_size": h.header_size,
        "archive_size": h.archive_size, "sector_size": h.sector_size,
        "hash_table_pos": h.hash_table_pos, "hash_table_size": h.hash_table_size,
        "block_table_pos": h.block_table_pos, "block_table_size": h.block_table_size,
        "hi_block_table_pos": h.hi_block_table_pos,
        "files": sum(1 for e in entries if not e.is_delete_marker),
        "delete_markers": sum(1 for e in entries if e.is_delete_marker),
        "named": sum(1 for e in entries if e.name is not None),
        "listfile": a.exists("(listfile)"),
    }


@mpq.command("ls")
@click.argument("args", nargs=-1, metavar="[ARCHIVE] [GLOBS...]")
@data_option
@json_option
def ls(args, data_path, as_json):
    """List the files of ARCHIVE (or of the whole --data chain): name, size, packed size, flags, locale.

    Entries no (listfile) names are shown as <unnamed #block>; GLOBS filter by name ('*', '?').
    """
    archive, patterns = _split(args, data_path)
    src = _Source(archive, data_path)
    try:
        rows = src.rows(patterns)
    finally:
        src.close()
    if as_json:
        echo_json(rows)
        return
    for r in rows:
        name = r["name"] if r["name"] is not None else f"<unnamed #{r['block']}>"
        extra = f"  [{r['archive']}]" if "archive" in r else ""
        flags = "|".join(n.lower() for n in r["flag_names"] if n != "EXISTS") or "-"
        click.echo(f"{r['size']:>10} {r['packed_size']:>10}  {r['locale']:04x}  {flags:32} {name}{extra}")


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
@data_option
@json_option
def extract(args, out_dir, data_path, as_json):
    """Extract NAMES or GLOBS (default: every named file) from ARCHIVE or the --data chain into -o DIR.

    Paths keep their folders; '..' and absolute parts are dropped so nothing lands outside DIR.
    Each file is written atomically. A file that cannot be read or written gets a warning and the
    rest still come out; the exit status is then 2.
    """
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    from wowgrass.fileio import write_atomic

    archive, patterns = _split(args, data_path)
    out = Path(out_dir)
    src = _Source(archive, data_path)
    done, skipped, failed, total = [], [], [], 0
    try:
        names = src.select(patterns)
        targets = {n: safe_target(out, n) for n in names}
        skipped = [n for n, t in targets.items() if t is None]
        console = Console(stderr=True)
        with Progress(TextColumn("[bold]extract"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                      DownloadColumn(), TimeRemainingColumn(), console=console, transient=True) as bar:
            task = bar.add_task("extract", total=len(names))
            bar.advance(task, len(skipped))
            # decompression runs ahead on worker threads while files are written here
            for name, data in src.read_many(n for n in names if targets[n] is not None):
                bar.advance(task)
                if isinstance(data, WowgrassError):
                    failed.append({"name": name, "error": str(data)})
                    continue
                # a name the file system refuses (too long, a file where a folder must go) is
                # reported like a corrupt file, and the rest still come out
                try:
                    write_atomic(targets[name], data)
                except OSError as exc:
                    failed.append({"name": name, "error": exc.strerror or str(exc)})
                    continue
                total += len(data)
                done.append({"name": name, "path": str(targets[name]), "size": len(data)})
    finally:
        src.close()
    if as_json:
        echo_json({"output": str(out), "files": done, "skipped": skipped, "failed": failed, "bytes": total})
    else:
        for s in skipped:
            click.echo(f"warning: skipped {s!r} (no safe path under {out})", err=True)
        for f in failed:
            click.echo(f"warning: {f['name']} not extracted: {f['error']}", err=True)
        click.echo(f"extracted {len(done)} files ({total:,} bytes) to {out}", err=True)
    if failed:
        raise UsageError(f"{len(failed)} of {len(names)} files could not be read or written (the others were extracted)")


@mpq.command()
@click.argument("args", nargs=-1, required=True, metavar="[ARCHIVE] NAME")
@data_option
def cat(args, data_path):
    """Write the raw bytes of NAME from ARCHIVE (or the --data chain) to stdout."""
    archive, names = _split(args, data_path, need_name=True)
    if len(names) != 1:
        raise UsageError(f"cat takes one NAME, got {len(names)}")
    src = _Source(archive, data_path)
    try:
        data = src.read(names[0])
    finally:
        src.close()
    stream = sys.stdout.buffer
    stream.write(data)
    stream.flush()
