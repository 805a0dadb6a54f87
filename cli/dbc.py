"""``wowgrass dbc``: inspect WDBC tables (header, detected schema, ground-effect density fields)."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import click

from wowgrass.cli.common import echo_json, json_option, note, plural, text_console
from wowgrass.errors import GameFileNotFound, UsageError

SOURCE_HELP = """
SOURCE is a loose .dbc file, an MPQ archive or a Data folder; TABLE names the table inside an MPQ or
Data folder, as a bare name (GroundEffectTexture) or an archive path
('DBFilesClient\\GroundEffectTexture.dbc'). With --mpq ARCHIVE or --data DIR the first argument is
the TABLE.
"""


@click.group()
def dbc():
    """Inspect DBC tables: header, detected schema, ground-effect density fields."""


# ------------------------------------------------------------------------------------- sources
@dataclass
class Source:
    data: bytes
    name: str  # the table's path as shown (archive path or file path)
    origin: str  # "file", "MPQ <path>", "Data folder <path>"
    read: Callable[[str], bytes]  # reads a sibling table by archive path
    build: str | None = None


def archive_name(table: str) -> str:
    """``GroundEffectTexture`` → ``DBFilesClient\\GroundEffectTexture.dbc``; paths are kept."""
    t = table.replace("/", "\\")
    if "\\" in t:
        return t
    return "DBFilesClient\\" + (t if t.lower().endswith(".dbc") else t + ".dbc")


def _open_mpq(path):
    from wowgrass.formats.mpq import MpqArchive

    return MpqArchive.open(path)


def _open_data(path):
    from wowgrass.game.data import open_data

    return open_data(path)


def _loose_reader(folder: Path) -> Callable[[str], bytes]:
    def read(name: str) -> bytes:
        from wowgrass.paths import find_file

        base = name.replace("\\", "/").rsplit("/", 1)[-1].lower()
        found = find_file(folder, base)
        if found is None:
            raise GameFileNotFound(f"{base} not found in {folder}")
        return found.read_bytes()

    return read


def load_source(source, table, mpq_path, data_path) -> Source:
    if mpq_path and data_path:
        raise UsageError("give --mpq or --data, not both")
    if mpq_path or data_path:
        if source and table:
            raise UsageError("with --mpq/--data give only the TABLE")
        name = source or table
        if not name:
            raise UsageError("name a table, e.g. GroundEffectTexture")
        if mpq_path:
            return _from_container(_open_mpq(mpq_path), name, f"MPQ {mpq_path}")
        return _from_container(_open_data(data_path), name, f"Data folder {data_path}")
    if not source:
        raise UsageError("give a .dbc file, an MPQ archive or a Data folder (see --help)")
    p = Path(source)
    if p.is_dir():
        if not table:
            raise UsageError(f"{source} is a folder: name the TABLE to read from it")
        return _from_container(_open_data(p), table, f"Data folder {source}")
    with open(p, "rb") as f:  # a missing file becomes "error: no such file" in cli/main.py
        head = f.read(4)
    if head[:3] == b"MPQ" or p.suffix.lower() == ".mpq":
        if not table:
            raise UsageError(f"{source} is an MPQ archive: name the TABLE to read from it")
        return _from_container(_open_mpq(p), table, f"MPQ {source}")
    if table:
        raise UsageError(f"{source} is a single .dbc file; TABLE is only for an MPQ or a Data folder")
    return Source(p.read_bytes(), str(p), "file", _loose_reader(p.parent if str(p.parent) else Path(".")))


def _from_container(container, table, origin) -> Source:
    name = archive_name(table)
    return Source(container.read(name), name, origin, container.read, getattr(container, "build", None))


def source_options(f):
    f = click.option("--lenient", is_flag=True,
                     help="Tolerate a header that understates its string block (reported as a warning).")(f)
    f = click.option("--build", "build", default=None, metavar="BUILD",
                     help="Client build whose layout to use: 1.12, 2.4.3, 3.3.5 (or 1.10 for pre-1.11); "
                          "detected when omitted.")(f)
    f = click.option("--data", "--dbc", "data_path", type=click.Path(exists=True, file_okay=False), default=None,
                     help="A client's Data folder (MPQ chain), a folder of loose files, or a folder of .dbc "
                          "tables (DBFilesClient itself or the folder holding it).")(f)
    f = click.option("--mpq", "mpq_path", type=click.Path(exists=True, dir_okay=False), default=None,
                     help="Read the table from this MPQ archive.")(f)
    f = click.argument("table", required=False, metavar="[TABLE]")(f)
    f = click.argument("source", required=False, metavar="SOURCE")(f)
    return f


def _typed(src: Source, build, lenient):
    """The table read with its schema. A layout several builds share (the light tables') takes
    its build from the source (a Data folder's archives) or from a table beside it whose layout
    tells the builds apart (Map.dbc, GroundEffectTexture.dbc); else the build is said to be unknown."""
    from wowgrass.formats.dbc import GROUND_EFFECT_DOODAD, GROUND_EFFECT_TEXTURE, read_table

    f, det = read_table(src.data, src.name, build=build, hint=src.build, strict=not lenient)
    if (build is None and src.build is None and det.schema is not None and len(det.candidates) > 1
            and det.table not in (GROUND_EFFECT_TEXTURE, GROUND_EFFECT_DOODAD)):   # those tell by their columns
        sibling = _sibling_build(src)
        if sibling in det.candidates:
            f, det = read_table(src.data, src.name, hint=sibling, strict=not lenient)
            det.notes = [n for n in det.notes if not n.endswith("from the data source")]
            det.notes.append(f"build {sibling} from the tables beside it (their layout is {sibling}'s)")
        else:
            det.build_known = False
            det.notes.append("the build is unknown: the layout is the same in " + ", ".join(det.candidates))
    return f, det


def _sibling_build(src: Source) -> str | None:
    """The build whose layout Map.dbc (its field count differs in every build) or, failing that,
    GroundEffectTexture.dbc beside the table has; None when neither tells."""
    from wowgrass.errors import FormatError
    from wowgrass.formats.dbc import MAP_LAYOUTS, DbcFile

    def header(table):
        try:
            return DbcFile.from_bytes(src.read(archive_name(table)), table)
        except (GameFileNotFound, FormatError, OSError):
            return None

    m = header("Map")
    if m is not None:
        for b, (fields, _, _) in MAP_LAYOUTS.items():
            if m.field_count == fields:
                return b
    t = header("GroundEffectTexture")
    return "3.3.5" if t is not None and (t.field_count, t.record_size) == (11, 44) else None


#: columns that hold colours (0xRRGGBB in the low 24 bits): `dbc show` prints them as #rrggbb
COLOUR_COLUMNS = {"LightIntBand": ("Data",)}


# ---------------------------------------------------------------------------------------- info
def info_report(src: Source, build=None, lenient=False) -> dict:
    """Everything `dbc info` shows, as plain data."""
    import numpy as np

    from wowgrass.game.effects import density_stats, empty_slot_mask, resolve_model
    from wowgrass.formats.dbc import GROUND_EFFECT_DOODAD, GROUND_EFFECT_TEXTURE

    f, det = _typed(src, build, lenient)
    import logging

    log = logging.getLogger("wowgrass.cli.dbc")
    log.info("read %s from %s: %d records of %d bytes, %d fields; schema %s", src.name, src.origin,
             f.record_count, f.record_size, f.field_count, det.to_dict())
    for w in f.warnings:
        log.info("%s: tolerated: %s", src.name, w)
    report = {
        "file": src.name,
        "source": src.origin,
        "size": len(src.data),
        "header": {"magic": "WDBC", "records": f.record_count, "fields": f.field_count,
                   "record_size": f.record_size, "string_block_size": f.string_block_size},
        "schema": det.to_dict(),
        "warnings": f.warnings,
    }
    if det.table == GROUND_EFFECT_TEXTURE and det.schema is not None:
        empty = empty_slot_mask(f.records["DoodadID"], det.build).all(axis=1)
        report["density"] = density_stats(f.records["Density"], empty)
    if det.table == GROUND_EFFECT_DOODAD and det.schema is not None:
        paths = f.strings(f.records["Doodadpath"])
        exts: dict[str, int] = {}
        for p in set(paths):
            ext = p.rsplit(".", 1)[-1].lower() if "." in p else ""
            exts[ext] = exts.get(ext, 0) + 1
        models = {resolve_model(p).lower() for p in paths if p}
        doodads = {"rows": f.record_count, "distinct_paths": len(set(paths)), "distinct_models": len(models),
                   "extensions": dict(sorted(exts.items()))}
        if "Flags" in f.records.dtype.names:
            flags = f.records["Flags"]
            doodads["flags"] = {"0x1 follow slope": int(np.count_nonzero(flags & 1)),
                                "0x2 ignore vertex colour": int(np.count_nonzero(flags & 2))}
        report["doodads"] = doodads
    return report


def _print_info(r: dict) -> None:
    from rich.table import Table

    con = text_console()
    h = r["header"]
    s = r["schema"]
    con.print(f"[bold]{r['file']}[/bold]  ({r['source']}, {r['size']:,} bytes)", soft_wrap=True)
    t = Table(show_header=False, box=None, pad_edge=False)
    t.add_column(style="bold")
    t.add_column()
    t.add_row("records", f"{h['records']:,}")
    t.add_row("fields", f"{h['fields']}")
    t.add_row("record size", f"{h['record_size']} B")
    t.add_row("string block", f"{h['string_block_size']:,} B")
    if s["table"] and s["columns"] is not None:
        amb = "  [yellow](ambiguous)[/yellow]" if s["ambiguous"] else ""
        if s["build_known"]:
            t.add_row("schema", f"{s['table']} {s['build']} (layout of {s['layout_builds']}){amb}")
        else:
            t.add_row("schema", f"{s['table']}, build unknown (one layout in {', '.join(s['candidates'])})")
        t.add_row("columns", ", ".join(s["columns"]))
        if len(s["candidates"]) > 1:
            t.add_row("builds", ", ".join(s["candidates"]))
    else:
        t.add_row("schema", f"unknown ({s['table'] or 'unnamed table'})")
    t.add_row("detected", s["reason"])
    for text in s["notes"]:
        t.add_row("note", text)
    con.print(t)
    d = r.get("density")
    if d:
        con.print("[bold]Density[/bold] (doodads per visited cell; 0 means the client uses 8)")
        hist = Table()
        hist.add_column("density")
        hist.add_column("rows", justify="right")
        for b in d["histogram"]:
            hist.add_row(b["range"], f"{b['count']:,}")
        con.print(hist)
        sm = Table(show_header=False, box=None, pad_edge=False)
        sm.add_column(style="bold")
        sm.add_column()
        sm.add_row("min / median / max", f"{d['min']} / {d['median']:g} / {d['max']}" if d["rows"] else "-")
        w = d["with_doodads"]
        if w["rows"]:
            sm.add_row("rows with doodads", f"{w['rows']:,}: min {w['min']}, median {w['median']:g}, max {w['max']}")
        sm.add_row("rows with no doodads", f"{d['no_doodads']:,}")
        sm.add_row(f"density > {d['over_density_cap']['cap']}",
                   f"{plural(d['over_density_cap']['rows'], 'row')} clipped by the coverage placement's density cap")
        sm.add_row(f"density > {d['over_clump_cap']['cap']}",
                   f"{plural(d['over_clump_cap']['rows'], 'row')} clipped by the coverage placement's clump cap at full coverage")
        con.print(sm)
    dd = r.get("doodads")
    if dd:
        sm = Table(show_header=False, box=None, pad_edge=False)
        sm.add_column(style="bold")
        sm.add_column()
        sm.add_row("distinct paths", f"{dd['distinct_paths']:,} ({dd['distinct_models']:,} models)")
        sm.add_row("extensions", ", ".join(f".{k or '(none)'} {v}" for k, v in dd["extensions"].items()))
        for k, v in dd.get("flags", {}).items():
            sm.add_row(f"flag {k}", plural(v, 'row'))
        con.print(sm)
    for w in r["warnings"]:
        con.print(f"[yellow]warning:[/yellow] {w}")


@dbc.command("info", epilog=SOURCE_HELP)
@source_options
@json_option
def info(source, table, mpq_path, data_path, build, lenient, as_json):
    """Header figures, detected schema and (for ground-effect tables) the density distribution."""
    r = info_report(load_source(source, table, mpq_path, data_path), build, lenient)
    if as_json:
        echo_json(r)
    else:
        _print_info(r)


# ---------------------------------------------------------------------------------------- show
def show_report(src: Source, record_id: int, build=None, lenient=False) -> dict:
    from wowgrass.game.effects import GroundEffectCatalog, resolve_model
    from wowgrass.formats.dbc import GROUND_EFFECT_DOODAD, GROUND_EFFECT_TEXTURE

    f, det = _typed(src, build, lenient)
    try:
        i = f.row_index(record_id)
    except KeyError:
        raise UsageError(f"{src.name}: no row with ID {record_id}") from None
    row = _row_dict(f, i)
    out = {"file": src.name, "table": det.table, "build": det.build if det.build_known else None,
           "candidates": det.candidates, "row_index": i, "row": row,
           "colour_columns": list(COLOUR_COLUMNS.get(det.table or "", ()))}
    if det.table == GROUND_EFFECT_DOODAD and det.schema is not None:
        out["model"] = resolve_model(row["Doodadpath"])
    if det.table == GROUND_EFFECT_TEXTURE and det.schema is not None:
        try:
            doodads = src.read(archive_name(GROUND_EFFECT_DOODAD))
        except (GameFileNotFound, FileNotFoundError):
            out["models"] = None
            out["note"] = "GroundEffectDoodad.dbc not found beside it: doodad paths unresolved"
        else:
            cat = GroundEffectCatalog.from_dbc_bytes(src.data, doodads, det.build, strict=not lenient,
                                                     texture_path=src.name)
            out["models"] = cat.row(record_id)["models"]
    return out


def _row_dict(f, i: int) -> dict:
    if f.schema is None:
        return {f"field{k}": int(v) for k, v in enumerate(f.raw[i].tolist())}
    rec = f.records[i]
    row = {}
    for name in f.schema.dtype.names:
        v = rec[name]
        if name in f.schema.string_fields:
            row[name] = f.string(int(v)) if not f.schema.dtype[name].shape else f.strings(v)
        else:
            row[name] = v.tolist()
    return row


@dbc.command("show", epilog=SOURCE_HELP)
@source_options
@click.option("--id", "record_id", type=int, required=True, help="The row's ID.")
@json_option
def show(source, table, mpq_path, data_path, build, lenient, record_id, as_json):
    """One row with named columns (ground effects: with resolved doodad model paths)."""
    r = show_report(load_source(source, table, mpq_path, data_path), record_id, build, lenient)
    if as_json:
        echo_json(r)
        return
    from rich.table import Table

    con = text_console()
    # the title on its own line: a table title would wrap a long path mid-word
    if r["build"]:
        what = f"{r['table']} {r['build']}"
    elif r["table"] and r["candidates"]:
        what = f"{r['table']}, build unknown: the layout of {'/'.join(r['candidates'])}"
    else:
        what = r["table"] or "unknown table"
    con.print(f"{r['file']} ID {record_id} ({what})", soft_wrap=True)
    t = Table()
    t.add_column("column")
    t.add_column("value")
    for k, v in r["row"].items():  # arrays one element a row, named as `dbc dump` names its columns
        colour = k in r["colour_columns"]
        for name, value in ([(f"{k}[{i}]", x) for i, x in enumerate(v)] if isinstance(v, list) else [(k, v)]):
            t.add_row(name, f"#{int(value) & 0xFFFFFF:06x}" if colour else str(value))
    if "model" in r:
        t.add_row("model", r["model"])
    if r.get("models") is not None:
        for k, m in enumerate(r["models"]):
            t.add_row(f"model[{k}]", m or "(empty)")
    con.print(t)
    if r.get("note"):
        con.print(f"note: {r['note']}")


# ---------------------------------------------------------------------------------------- dump
@dbc.command("dump", epilog=SOURCE_HELP)
@source_options
@click.option("--csv", "fmt", flag_value="csv", default=True, help="CSV with a header row (default).")
@click.option("--json", "fmt", flag_value="json", help="JSON: file, table, build, columns, rows.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Write to this file (atomically) instead of stdout.")
def dump(source, table, mpq_path, data_path, build, lenient, fmt, output):
    """The whole table, one row per record, strings decoded."""
    import json

    if output:
        from wowgrass.cli.common import output_path

        output_path(output)   # writable (replacing?) before the table is read
    src = load_source(source, table, mpq_path, data_path)
    f, det = _typed(src, build, lenient)
    cols = f.columns_flat()
    names = list(cols)
    rows = zip(*cols.values()) if names else iter([[]] * f.record_count)
    if fmt == "json":
        text = json.dumps({"file": src.name, "table": det.table, "build": det.build, "columns": names,
                           "rows": [dict(zip(names, r)) for r in rows]}, indent=1) + "\n"
    else:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(names)
        w.writerows(rows)
        text = buf.getvalue()
    if output:
        from wowgrass.fileio import write_atomic

        write_atomic(output, text.encode("utf-8"))
        note(f"wrote {plural(f.record_count, 'row')} to {output}")
    else:
        click.echo(text, nl=False)
