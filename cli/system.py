"""``wowgrass maps``, ``wowgrass cache ls|clean`` and ``wowgrass doctor``: what is there, and what works."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import click

from wowgrass.cli.common import data_option, echo_json, json_option, map_option, note, plural, verbosity


def _tile_lines(tiles, indent: str) -> str:
    """Tiles as ``c,r`` sixteen to a line, so no tile is ever broken across lines."""
    words = [f"{c},{r}" for c, r in tiles]
    return "\n".join(indent + " ".join(words[i:i + 16]) for i in range(0, len(words), 16))


def _span(tiles) -> str:
    if not tiles:
        return ""
    cols = [c for c, _ in tiles]
    rows = [r for _, r in tiles]
    return f"columns {min(cols)}..{max(cols)}, rows {min(rows)}..{max(rows)}"


@click.command()
@click.argument("wdt", required=False, type=click.Path(exists=True), metavar="[WDT|DIR]")
@data_option
@click.option("-l", "--long", "list_tiles", is_flag=True, help="Also list every tile (column,row).")
@json_option
def maps(wdt, data_path, list_tiles, as_json):
    """List the maps of a data source and their tiles (or the tiles of one WDT file).

    Maps are found as the client knows them: DBFilesClient\\Map.dbc's directories (each WDT looked
    up by hash, so archives without a listfile show theirs), then the files listed. For each map:
    whether it has a WDT, the tiles its WDT lists and how many of their ADT files are present (a
    partial extract holds a few; commands use those). A map without a WDT is the ADT files present.
    With no --data, the sample world's. --long lists the tiles present.
    """
    from wowgrass.formats.wdt import WdtFile

    if wdt is not None and Path(wdt).is_dir():   # `maps DIR` is --data DIR, as `bake DIR`
        if data_path:
            from wowgrass.errors import UsageError

            raise UsageError(f"give the folder {wdt} or --data, not both")
        data_path, wdt = wdt, None
    if wdt is not None:
        w = WdtFile.from_bytes(Path(wdt).read_bytes(), wdt)
        tiles = sorted(w.tiles(), key=lambda t: (t[1], t[0]))
        if as_json:
            echo_json({"file": str(wdt), "tile_count": len(tiles), "tiles": [list(t) for t in tiles],
                       "big_alpha": bool(w.big_alpha)})
            return
        click.echo(f"{wdt}: {plural(len(tiles), 'tile')}" + (f" ({_span(tiles)})" if tiles else "")
                   + f", {'8-bit' if w.big_alpha else '4-bit'} alpha maps")
        if list_tiles:
            click.echo(_tile_lines(tiles, "  "))
        return

    from wowgrass.game.data import open_data
    from wowgrass.game.maps import OUTSIDE_MAPS, ignored_adts, list_maps, map_tiles

    if data_path is None:
        from wowgrass.grass.bake import default_data

        data_path = default_data()[0]
    out = []
    with open_data(data_path) as data:
        ignored = ignored_adts(data)
        # where each stray file is on disk (the layer holding it, with layered data)
        on_disk = {(folder, n): data.locate(f"{folder}\\{n}" if folder else n)
                 for folder, files in ignored.items() for n, why in files if why == OUTSIDE_MAPS}
        for name, found in list_maps(data, warn=note).items():
            mt = map_tiles(data, name, need_tiles=False) if found["wdt"] else None
            listed = mt.wdt_tiles if mt is not None else []
            adts = mt.tiles if mt is not None else sorted(set(found["adts"]), key=lambda t: (t[1], t[0]))
            out.append({"map": name, "wdt": found["wdt"], "found_in": found["found_in"],
                        "wdt_tile_count": len(listed), "wdt_tiles": [list(t) for t in listed],
                        "adt_count": len(adts), "adt_tiles": [list(t) for t in adts],
                        "absent_tiles": [list(t) for t in (mt.absent if mt is not None else [])],
                        "big_alpha": bool(mt.big_alpha) if mt is not None else False})
    ignored_list = [{"folder": folder, "file": name, "reason": why}
                    for folder, files in ignored.items() for name, why in files]
    if as_json:
        echo_json({"data": str(data_path), "map_count": len(out), "maps": out, "ignored_adts": ignored_list})
        return
    for folder, files in ignored.items():   # the client would not load them either
        stray = [n for n, why in files if why == OUTSIDE_MAPS]
        if stray:
            at = on_disk.get((folder, stray[0]))
            where = Path(at[0]).parent if at is not None else Path(str(data_path), *folder.split("\\"))
            note(f"note: {where}: {plural(len(stray), 'ADT file')} outside World/Maps/<map>/, so in no map: "
                 + ", ".join(stray[:5]) + (" …" if len(stray) > 5 else "")
                 + f"; read one alone with `wowgrass view {where / stray[0]}` (or `adt info`, `adt image`), "
                 "or move it to World/Maps/<Map>/<Map>_<col>_<row>.adt")
        files = [(n, why) for n, why in files if why != OUTSIDE_MAPS]
        if not files:
            continue
        shown = "; ".join(f"{n} ({why})" for n, why in files[:5]) + (" …" if len(files) > 5 else "")
        note(f"note: {folder}: {plural(len(files), 'ADT file')} ignored, not named as the client loads tiles "
             f"(<Map>_<col>_<row>.adt): {shown}")
    click.echo(f"{data_path}: {plural(len(out), 'map')}")
    for m in out:
        wdt_text = (f"WDT lists {plural(m['wdt_tile_count'], 'tile')}"
                    + (f" ({_span(m['wdt_tiles'])})" if m["wdt_tiles"] else "")) if m["wdt"] else "no WDT"
        if not m["wdt"]:
            adt_text = f"{plural(m['adt_count'], 'ADT file')} listed"
        elif m["absent_tiles"]:
            adt_text = (f"{m['adt_count']:,} of them present, {len(m['absent_tiles']):,} not in the data "
                        "(a partial extract)")
        else:
            adt_text = "all present"
        click.echo(f"  {m['map']}: {wdt_text}; {adt_text}"
                   + (" (known from Map.dbc)" if m["found_in"] == "Map.dbc" else ""))
        if list_tiles:
            tiles = m["adt_tiles"]
            click.echo(_tile_lines(tiles, "    "))


# ----------------------------------------------------------------------------- cache

def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def cache_entries() -> list[dict]:
    """What the cache holds: one entry per sample world and per map's bundle folder."""
    from wowgrass.paths import cache_dir

    root = cache_dir()
    out = []
    for kind, sub in (("sample", "sample"), ("bundles", "bundles")):
        folder = root / sub
        if not folder.is_dir():
            continue
        for entry in sorted(p for p in folder.iterdir() if not p.name.startswith(".")):
            files = [p for p in entry.rglob("*") if p.is_file()] if entry.is_dir() else [entry]
            e = {"kind": kind, "name": entry.name, "path": str(entry), "file_count": len(files),
                 "bytes": sum(p.stat().st_size for p in files)}
            if kind == "bundles":
                e["sources"] = _bundle_sources(entry)
            out.append(e)
    return out


def _bundle_sources(folder: Path) -> list[dict]:
    """Which data sources (and builds) baked a map's bundles: two clients' maps of one name."""
    import json

    from wowgrass.grass.bake import SOURCES_FILE

    try:
        known = json.loads((folder / SOURCES_FILE).read_text())
    except (OSError, ValueError):
        return []
    if not isinstance(known, dict):
        return []
    return [{"data": k, "build": v.get("build"), "tiles": v.get("tiles", []), "last_used": v.get("last_used")}
            for k, v in sorted(known.items()) if isinstance(v, dict)]


@click.group()
def cache():
    """Show or empty wowgrass's cache (sample worlds, baked bundles)."""


@cache.command("ls")
@json_option
def cache_ls(as_json):
    """List the cache: each sample world and each map's bundles, with their sizes."""
    from wowgrass.paths import cache_dir

    entries = cache_entries()
    total = sum(e["bytes"] for e in entries)
    if as_json:
        echo_json({"cache": str(cache_dir()), "bytes": total, "entries": entries})
        return
    click.echo(f"{cache_dir()}: {_mb(total)}")
    if not entries:
        click.echo("  (empty)")
    for e in entries:
        what = "sample world" if e["kind"] == "sample" else "bundles of map"
        click.echo(f"  {what} {e['name']}: {plural(e['file_count'], 'file')}, {_mb(e['bytes'])}")
        for src in e.get("sources", []):   # which client: two maps of one name are told apart here
            click.echo(f"    from {src['data']} (build {src['build'] or 'unknown'}, "
                       f"{plural(len(src['tiles']), 'tile')}, last baked {src['last_used']})")


@cache.command("clean")
@click.option("--bundles", "which", flag_value="bundles", help="Only baked bundles.")
@click.option("--samples", "which", flag_value="sample", help="Only sample worlds.")
@map_option("Only this map's bundles.")
@click.option("-n", "--dry-run", is_flag=True, help="Say what would be deleted; delete nothing.")
@json_option
def cache_clean(which, map_name, dry_run, as_json):
    """Delete cached sample worlds and bundles (all of them by default); they are rebuilt on demand."""
    entries = cache_entries()
    if map_name:
        which = "bundles"
        entries = [e for e in entries if e["kind"] == "bundles" and e["name"].lower() == map_name.lower()]
    elif which:
        entries = [e for e in entries if e["kind"] == which]
    for e in entries:
        if not dry_run:
            p = Path(e["path"])
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    freed = sum(e["bytes"] for e in entries)
    if as_json:
        echo_json({"deleted": [e["path"] for e in entries], "deleted_count": len(entries), "bytes": freed,
                   "dry_run": dry_run})
        return
    verb = "would delete" if dry_run else "deleted"
    click.echo(f"{verb} {plural(len(entries), 'cache entry', 'cache entries')} ({_mb(freed)})")


def stale_bundles() -> list[dict]:
    """Bundles no bake will use again: of another bundle format or placement version, or
    unreadable (each with why)."""
    from wowgrass.errors import FormatError, StaleBundleError
    from wowgrass.grass import bundle as B
    from wowgrass.grass.placement import PLACEMENT_VERSION
    from wowgrass.paths import cache_dir

    root = cache_dir() / "bundles"
    out = []
    if not root.is_dir():
        return out
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        for f in sorted(folder.iterdir()):
            why = None
            if f.suffix == B.SUFFIX:   # (temporaries of stopped runs: every bake sweeps its folder's)
                try:
                    with B.read_bundle(f, verify=False) as b:
                        version = b.provenance.get("placement_version")
                    if version != PLACEMENT_VERSION:
                        why = f"placement version {version}, this wowgrass places with {PLACEMENT_VERSION}"
                except StaleBundleError as exc:
                    why = exc.reason
                except (FormatError, OSError) as exc:
                    why = f"unreadable: {getattr(exc, 'reason', exc)}"
            if why:
                out.append({"file": str(f), "map": folder.name, "bytes": f.stat().st_size, "reason": why})
    return out


@cache.command("prune")
@click.option("-n", "--dry-run", is_flag=True, help="Say what would be deleted; delete nothing.")
@json_option
def cache_prune(dry_run, as_json):
    """Delete stale bundles: of an older bundle format or placement version (no bake reads them
    again) and unreadable ones. Current bundles stay (a bake replaces its own tile's older ones)."""
    stale = stale_bundles()
    if not dry_run:
        for e in stale:
            Path(e["file"]).unlink(missing_ok=True)
    freed = sum(e["bytes"] for e in stale)
    if as_json:
        echo_json({"deleted": stale, "deleted_count": len(stale), "bytes": freed, "dry_run": dry_run})
        return
    for e in stale:
        if verbosity() > 0 or dry_run:
            click.echo(f"  {e['file']}: {e['reason']}")
    verb = "would delete" if dry_run else "deleted"
    click.echo(f"{verb} {plural(len(stale), 'stale bundle')} ({_mb(freed)})")


# ----------------------------------------------------------------------------- doctor

def _check(name, fn, *, optional=False):
    """One check's line. ``optional``: failing it leaves the machine healthy (a note, exit 0)."""
    try:
        ok, detail, fix = fn()
    except Exception as exc:  # a check must report, never crash the report
        ok, detail, fix = False, f"{type(exc).__name__}: {exc}", "run with -v and report this"
    return {"check": name, "ok": bool(ok), "optional": optional, "detail": detail, "fix": None if ok else fix}


def _python():
    v = sys.version_info
    ok = v >= (3, 10)
    return ok, f"Python {v.major}.{v.minor}.{v.micro} ({sys.executable})", "install Python 3.10 or newer"


def _egl():
    from wowgrass.render.gl.context import create_offscreen_context

    ctx = create_offscreen_context()
    try:
        info = ctx.info
        return True, f"EGL: {info.get('GL_RENDERER')}, OpenGL {ctx.version_code // 100}.{ctx.version_code % 100 // 10}", ""
    finally:
        ctx.release()


def _window():
    from wowgrass.render.gl.context import has_display

    if not has_display():
        return False, "no display (DISPLAY and WAYLAND_DISPLAY unset)", (
            "windows need X11 or Wayland; use `view -o frame.png` offscreen, or run under xvfb-run")
    # in a process of its own: an X error (a GLX context beside the EGL check's, a screen without
    # a GL visual) ends the process that meets it, and the report must go on
    import json
    import subprocess

    where = os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    try:
        r = subprocess.run([sys.executable, "-c", "from wowgrass.cli.system import window_probe; window_probe()"],
                           capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return False, f"window on {where}: no answer in 60 s", "check that the display server answers"
    last = r.stdout.strip().splitlines()[-1:]
    if r.returncode == 0 and last:
        return True, f"window on {where}: {json.loads(last[0])['renderer']}", ""
    err = " ".join(r.stderr.strip().splitlines()[-3:]) or f"exit status {r.returncode}"
    return False, f"window on {where}: {err}", (
        "the display offers no OpenGL window (under Xvfb give it a 24-bit screen: "
        "xvfb-run -s '-screen 0 1280x1024x24'); `view -o frame.png` renders offscreen meanwhile")


def window_probe():
    """doctor's window check, run in a child process: a hidden window's renderer as JSON."""
    import json

    from wowgrass.render.gl.context import WindowTarget

    win = WindowTarget((64, 64), samples=0, visible=False)
    try:
        print(json.dumps({"renderer": win.ctx.info.get("GL_RENDERER")}))
    finally:
        win.release()


def _data(data_path, tiles: bool = True):
    def check():
        from wowgrass.grass.bake import load_catalog
        from wowgrass.game.data import open_data
        from wowgrass.game.effects import DOODAD_PATH, TEXTURE_PATH
        from wowgrass.errors import WowgrassError
        from wowgrass.game.maps import OUTSIDE_MAPS, ignored_adts, list_maps, map_tiles

        if data_path is None:
            from wowgrass.samples import sample_root

            built = (sample_root() / "Data").is_dir()
            return True, "no --data: the built-in sample world (" + (
                "built" if built else "built on first use, a few seconds") + ")", ""
        with open_data(data_path) as data:
            warnings: list[str] = []
            maps = list_maps(data, warn=warnings.append)
            what = f"{len(data.archives)} archives, build {data.build or 'unknown'}" if data.archives else "loose files"
            detail = f"{data.root}: {what}, {plural(len(maps), 'map')}"
            tables = [p for p in (TEXTURE_PATH, DOODAD_PATH) if not data.exists(p)]
            if tables:
                return False, detail + "; missing " + ", ".join(tables), (
                    data.locale_note() or "bake needs both ground-effect tables: point --data at the client's "
                    "Data folder, or give --dbc")
            try:   # present is not enough: they must parse, as the bake reads them
                catalog = load_catalog(data=data)
            except WowgrassError as exc:
                return False, f"{detail}; the ground-effect tables cannot be read: {exc}", (
                    "extract GroundEffectTexture.dbc and GroundEffectDoodad.dbc again from the client")
            bad = []
            for name, found in maps.items():
                if found["wdt"]:
                    try:
                        map_tiles(data, name, need_tiles=False)
                    except WowgrassError as exc:
                        bad.append(f"{name}: {exc}")
            if bad or warnings:
                return False, detail + "; " + "; ".join(bad + warnings), (
                    "extract the map's files again (a WDT that does not parse is not a map wowgrass can read)")
            light, light_problem = _light_state(data, maps)
            if light_problem:
                return False, f"{detail}; {light_problem}", (
                    "extract Light.dbc, LightParams.dbc, LightIntBand.dbc and LightFloatBand.dbc together "
                    "from the client (without them the view keeps its fixed sun)")
            read = []
            if tiles:
                read, broken = _tile_liquids(data, maps)
                if broken:
                    shown = "; ".join(broken[:5]) + (" …" if len(broken) > 5 else "")
                    return False, f"{detail}; {plural(len(broken), 'tile')} whose liquid does not parse: {shown}", (
                        "extract those tiles again (their water is not drawn or exported)")
            return True, (detail + f", ground-effect tables read ({catalog.build}, "
                          f"{plural(len(catalog.ids), 'effect')}, {plural(len(catalog.models), 'model')}), "
                          + light + (f", liquids of {plural(len(read), 'tile')} read" if tiles else "")), ""
    return check


def _light_state(data, maps=()) -> tuple[str, str | None]:
    """(what the light tables are, the problem with them or None). None at all is no problem (the
    view keeps its fixed sun); some of them, ones that do not read, or ones that do not belong
    together (a map's light reads black in the view, the exports, the workbench, Blender) are."""
    from wowgrass.errors import WowgrassError
    from wowgrass.game.light import load_light_tables, resolve_map

    names = ("Light", "LightParams", "LightIntBand", "LightFloatBand")
    present = [t for t in names if data.exists(f"DBFilesClient\\{t}.dbc")]
    if not present:
        return "no light tables (the view keeps its fixed sun)", None
    missing = [t for t in names if t not in present]
    if missing:
        return "", (f"the light tables lack {', '.join(t + '.dbc' for t in missing)} "
                    f"(present: {', '.join(t + '.dbc' for t in present)})")
    said: list[str] = []
    tables = load_light_tables(data=data, warn=said.append)
    if tables is None:
        return "", "; ".join(said) or "the light tables do not read"
    black = []
    for name in maps:
        try:
            black += [f"{name}: {w}" for w in tables.map_light(resolve_map(data, name)[0]).warnings]
        except WowgrassError:   # no light for the map: the view keeps its fixed sun and says why
            continue
    if black:
        return "", "; ".join(black)
    return f"light tables read ({plural(len(tables.lights), 'light')})", None


def _tile_liquids(data, maps) -> tuple[list[str], list[str]]:
    """Every present tile of every map read as `view` and `export` read it, its liquid decoded:
    (tiles read, 'Map c,r: why' for those that fail)."""
    from wowgrass.errors import WowgrassError
    from wowgrass.formats.liquid import tile_liquid
    from wowgrass.game.maps import map_tiles
    from wowgrass.game.tiles import load_tile

    from wowgrass.cli.common import progress_bar

    todo = []
    for name in maps:
        try:
            todo += [(name, t) for t in map_tiles(data, name, need_tiles=False).tiles]
        except WowgrassError:
            continue   # the map's own problem is reported above
    read, broken = [], []
    with progress_bar("doctor", "tiles", total=len(todo)) as bar:
        for name, (c, r) in todo:
            bar.advance(f"{name} {c},{r}")
            try:
                tile, _, _ = load_tile(data=data, map_name=name, tile=(c, r))
                tile_liquid(tile)
            except WowgrassError as exc:
                broken.append(f"{name} {c},{r}: {exc}")
            read.append(f"{name} {c},{r}")
    return read, broken


def _cache():
    from wowgrass.paths import cache_dir

    root = cache_dir()
    probe = root / f".doctor-{os.getpid()}"
    probe.write_bytes(b"ok")
    probe.unlink()
    total = sum(e["bytes"] for e in cache_entries())
    return True, f"{root}: writable, {_mb(total)} (`wowgrass cache ls`)", ""


def _storm():
    import ctypes.util

    name = ctypes.util.find_library("storm")
    if name is None:
        try:
            ctypes.CDLL("libstorm.so.9")
            name = "libstorm.so.9"
        except OSError:
            return False, "StormLib not found", ("only the cross-check tests need it: Debian `apt-get install "
                                                 "libstorm9` (or skip; wowgrass reads MPQs itself)")
    return True, f"StormLib {name} (for cross-checks)", ""


@click.command()
@data_option
@click.option("--no-tiles", "no_tiles", is_flag=True,
              help="Skip reading every tile of the data (their terrain and liquid): quicker on a whole client.")
@json_option
def doctor(data_path, no_tiles, as_json):
    """Check what wowgrass needs: Python, OpenGL through EGL and through a window, the data source,
    the cache and StormLib. One line each, OK or problem, and what to do about a problem.

    Exits 1 when a check fails. A machine without a display that renders offscreen through EGL is
    healthy (the window check is a note: `view -o` and `view --frames` work), and so is one without
    StormLib (only the cross-check tests need it). The data check reads the ground-effect tables,
    the light tables (all four or none), every map's WDT and every tile with its liquid (--no-tiles
    skips the tiles): present is not enough.
    """
    egl = _check("gl-egl", _egl)
    checks = [_check("python", _python), egl, _check("gl-window", _window, optional=egl["ok"]),
              _check("data", _data(data_path, not no_tiles)), _check("cache", _cache), _check("stormlib", _storm, optional=True)]
    healthy = all(c["ok"] or c["optional"] for c in checks)
    if as_json:
        echo_json({"ok": healthy, "checks": checks})
    else:
        width = max(len(c["check"]) for c in checks)
        for c in checks:
            state = "OK     " if c["ok"] else ("note   " if c["optional"] else "problem")
            click.echo(f"{state}  {c['check']:<{width}}  {c['detail']}")
            if not c["ok"]:
                click.echo(f"         {'':<{width}}  -> {c['fix']}")
        bad = [c for c in checks if not c["ok"] and not c["optional"]]
        if bad:
            note(f"{plural(len(bad), 'problem')} found")
        elif any(not c["ok"] for c in checks):
            note("note: healthy; " + ", ".join(c["check"] for c in checks if not c["ok"]) + " not available")
    if not healthy:
        sys.exit(1)
