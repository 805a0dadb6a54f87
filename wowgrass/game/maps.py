"""The maps of a data source and their tiles: one rule for every command.

Maps are found the way the client knows them: the Directory column of ``DBFilesClient\\Map.dbc``,
each name's WDT then looked up by hash (so base archives without a ``(listfile)``, normal in 1.12
clients, still show their maps), then the names a listing holds (loose folders, listfiles). A map
of this data source is one with a WDT or with ADT files.

A map's tiles are the ADTs present: those its WDT lists that the data has (a partial extract lists
687 and holds one: that one, with a note saying how many are absent), or without a WDT the ADT files
the listing holds. ``bake``, ``export``, ``view``, ``maps``, ``adt`` and ``doctor`` all ask here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from wowgrass.errors import FormatError, UsageError, WowgrassError

log = logging.getLogger(__name__)

MAP_TABLE = "DBFilesClient\\Map.dbc"
# ID is field 0 and Directory (a string) field 1 in the Map.dbc of every build here (the layouts:
# formats.dbc.MAP_LAYOUTS); only those two are read, so a table of another build reads too.
ID_FIELD, DIRECTORY_FIELD = 0, 1

Warn = Callable[[str], None]


def wdt_game_path(map_name: str) -> str:
    return f"World\\Maps\\{map_name}\\{map_name}.wdt"


def adt_game_path(map_name: str, col: int, row: int) -> str:
    return f"World\\Maps\\{map_name}\\{map_name}_{col}_{row}.adt"


def _row_major(tiles) -> list[tuple[int, int]]:
    return sorted({(int(c), int(r)) for c, r in tiles}, key=lambda t: (t[1], t[0]))


# ----------------------------------------------------------------------------- Map.dbc

def read_map_table(raw: bytes, path: str = MAP_TABLE) -> list[tuple[int, str]]:
    """(ID, Directory) of every row of a Map.dbc (any of the three builds' layouts)."""
    from wowgrass.formats.dbc import DbcFile

    dbc = DbcFile.from_bytes(raw, path)
    if dbc.record_count and (dbc.raw.dtype.itemsize != 4 or dbc.field_count <= DIRECTORY_FIELD):
        raise FormatError(f"Map.dbc has {dbc.field_count} fields of {dbc.record_size} B records: no Directory "
                          "column (field 1)", path=path, offset=8)
    if not dbc.record_count:
        return []
    offsets = dbc.raw[:, DIRECTORY_FIELD]
    ok = dbc.valid_string_starts(offsets)
    if not ok.all():
        row = int((~ok).nonzero()[0][0])
        raise FormatError(f"Map.dbc row {row}: Directory offset {int(offsets[row])} is not a string in the "
                          f"{len(dbc.string_block)}-byte string block", path=path,
                          offset=20 + row * dbc.record_size + 4 * DIRECTORY_FIELD)
    names = dbc.strings(offsets)
    ids = dbc.raw[:, ID_FIELD].astype("<i4").tolist()
    return [(i, n) for i, n in zip(ids, names) if n]


def map_directories(data) -> list[str]:
    """The Directory column of the data source's Map.dbc ([] without one); FormatError if it is broken."""
    if not data.exists(MAP_TABLE):
        return []
    return [name for _, name in read_map_table(data.read(MAP_TABLE), MAP_TABLE)]


# ----------------------------------------------------------------------------- maps


def list_maps(data, *, warn: Warn | None = None) -> dict[str, dict]:
    """Maps of a data source: name -> {"wdt": bool, "adts": [(col, row), ...], "found_in": "Map.dbc" |
    "listing"}, sorted by name. ``warn`` hears of a Map.dbc that cannot be read (the listing still counts)."""
    maps: dict[str, dict] = {}
    by_key: dict[str, str] = {}

    def entry(name: str, found_in: str) -> dict:
        key = name.upper()
        if key not in by_key:
            by_key[key] = name
            maps[name] = {"wdt": False, "adts": [], "found_in": found_in}
        return maps[by_key[key]]

    try:
        directories = map_directories(data)
    except WowgrassError as exc:
        (warn or log.warning)(f"warning: {MAP_TABLE} cannot be read ({exc}); maps come from the listing only")
        directories = []
    for name in directories:          # the client's own list, each WDT found by hash
        if data.exists(wdt_game_path(name)):
            entry(name, "Map.dbc")["wdt"] = True
        else:
            log.debug("Map.dbc names %s; no WDT of it in the data (skipped)", name)
    log.info("%s names %d map folders, %d with a WDT in the data", MAP_TABLE, len(directories), len(maps))
    for n in data.list("world\\maps\\*"):
        p = n.replace("/", "\\").split("\\")
        if len(p) != 4:
            continue
        low = p[3].lower()
        if low.endswith(".wdt") and low[:-4] == p[2].lower():
            entry(p[2], "listing")["wdt"] = True
        elif low.endswith(".adt"):
            if adt_name_problem(p[3], p[2]) is None:   # as the client names them (see ignored_adts)
                parts = p[3][:-4].rsplit("_", 2)
                entry(p[2], "listing")["adts"].append((int(parts[1]), int(parts[2])))
    return {k: maps[k] for k in sorted(maps, key=str.lower)}


def adt_name_problem(name: str, map_name: str) -> str | None:
    """Why the client would not load ``name`` (a file in ``map_name``'s folder) as one of its tiles,
    or None for a proper ``<Map>_<col>_<row>.adt`` (decimal, no leading zeros, 0..63)."""
    parts = name[:-4].rsplit("_", 2) if name.lower().endswith(".adt") else []
    if len(parts) != 3 or not (parts[1].isdigit() and parts[2].isdigit()):
        return f"not {map_name}_<col>_<row>.adt"
    if parts[0].lower() != map_name.lower():
        return f"named for map {parts[0]!r}, not {map_name!r}"
    if parts[1] != str(int(parts[1])) or parts[2] != str(int(parts[2])):
        return f"zero-padded (the client asks for {map_name}_{int(parts[1])}_{int(parts[2])}.adt)"
    if not (0 <= int(parts[1]) < 64 and 0 <= int(parts[2]) < 64):
        return "column or row past 63"
    return None


#: why an ADT outside World\Maps\<map>\ is read by no map
OUTSIDE_MAPS = "not in a map folder (World\\Maps\\<map>\\): no map reads it; `wowgrass view FILE` or `adt info FILE` read it alone"


def _map_folder_tile(data, name: str) -> bool:
    """Whether the ADT ``name`` at the top of a folder is read as a map's tile: a bare map folder
    (``--data`` or a layer of ``<Map>_<col>_<row>.adt`` files) answers for ``World\\Maps\\<Map>\\``."""
    parts = name[:-4].rsplit("_", 2)
    if len(parts) != 3 or adt_name_problem(name, parts[0]) is not None:
        return False
    here = data.locate(name)
    return here is not None and data.locate(f"World\\Maps\\{parts[0]}\\{name}") == here


def ignored_adts(data) -> dict[str, list[tuple[str, str]]]:
    """ADT files that no map reads: folder -> [(file name, why)], sorted. Those in a map folder
    named otherwise than the client asks for, and those outside any map folder (a loose tile at
    the top of a folder: its folder is ``""``, or the path above it)."""
    out: dict[str, list[tuple[str, str]]] = {}
    for n in data.list("*.adt"):
        p = n.replace("/", "\\").split("\\")
        if len(p) == 4 and p[0].lower() == "world" and p[1].lower() == "maps":
            why = adt_name_problem(p[3], p[2])
            if why is not None:
                out.setdefault(p[2], []).append((p[3], why))
        elif not (len(p) == 1 and _map_folder_tile(data, n)):
            out.setdefault("\\".join(p[:-1]), []).append((p[-1], OUTSIDE_MAPS))
    if out:
        log.info("ADT files no map reads: %s", ", ".join(f"{f}\\{n}" for f, v in out.items() for n, _ in v))
    return {k: sorted(v, key=lambda t: t[0].lower()) for k, v in sorted(out.items(), key=lambda kv: kv[0].lower())}


def choose_map(data, map_name: str | None, *, warn: Warn | None = None) -> str:
    """``map_name``, or the data source's only map; an error listing them when there are several."""
    if map_name:
        return map_name
    names = list(list_maps(data, warn=warn))
    if len(names) != 1:
        shown = ", ".join(names[:20]) + (" …" if len(names) > 20 else "")
        raise UsageError(f"{data.root} holds {len(names)} maps; choose one with --map ({shown or 'none found'}; "
                         "`wowgrass maps --data DIR` lists them)")
    return names[0]


# ----------------------------------------------------------------------------- tiles


@dataclass
class MapTiles:
    """What a map's tiles are in one data source."""

    name: str
    tiles: list[tuple[int, int]]                 # the ADTs present (row-major): what commands use
    wdt: str | None = None                       # the WDT's game path, when the data has it
    wdt_tiles: list[tuple[int, int]] | None = None   # what the WDT lists (None without a WDT)
    absent: list[tuple[int, int]] = field(default_factory=list)   # listed by the WDT, no ADT present
    big_alpha: bool | None = None                # the WDT's flag (8-bit alpha maps); None without a WDT
                                                 # (each tile as it parses: terrain.read_adt)
    root: str = ""

    def note(self) -> str | None:
        """``note: ...`` for a partial extract (the WDT lists tiles the data lacks), else None."""
        if not self.absent or self.wdt_tiles is None:
            return None
        shown = " ".join(f"{c},{r}" for c, r in self.absent[:4]) + (" …" if len(self.absent) > 4 else "")
        return (f"note: {self.name}'s WDT lists {len(self.wdt_tiles):,} tiles; {len(self.absent):,} of them are not in "
                f"{self.root} ({shown}): using the {len(self.tiles):,} present")

    def select(self, ranges) -> list[tuple[int, int]]:
        """The present tiles inside any of ``ranges`` (as ``--tile`` gives them), all when None; a
        range matching none is an error (saying so when the WDT lists the tile but its ADT is absent)."""
        if not ranges:
            return list(self.tiles)
        out: list[tuple[int, int]] = []
        for rng in ranges:
            (c0, c1), (r0, r1) = ((rng[0], rng[0]), (rng[1], rng[1])) if isinstance(rng[0], int) else rng
            got = [(c, r) for c, r in self.tiles if c0 <= c <= c1 and r0 <= r <= r1]
            if not got:
                text = f"tile {c0},{r0}" if (c0, r0) == (c1, r1) else f"tile in {c0}:{c1},{r0}:{r1}"
                absent = [(c, r) for c, r in self.absent if c0 <= c <= c1 and r0 <= r <= r1]
                if absent:
                    c, r = absent[0]
                    raise UsageError(f"map {self.name!r}: its WDT lists {text.replace('tile in', 'tiles in')} but "
                                     f"{adt_game_path(self.name, c, r)} is not in {self.root}")
                raise UsageError(f"map {self.name!r} has no {text} (`wowgrass maps --long` lists them)")
            out += [t for t in got if t not in out]
        return out


def map_tiles(data, map_name: str, ranges=None, *, need_tiles: bool = True) -> MapTiles:
    """The tiles of ``map_name`` in ``data`` (see the module docstring); ``ranges`` selects among them.
    A map with neither a WDT nor ADT files is an error, and (``need_tiles``) one whose WDT lists
    tiles none of which is present."""
    from wowgrass.formats.wdt import WdtFile

    root = str(data.root)
    wpath = wdt_game_path(map_name)
    if data.exists(wpath):
        wdt = WdtFile.from_bytes(data.read(wpath), wpath)
        listed = _row_major(wdt.tiles())
        present = [t for t in listed if data.exists(adt_game_path(map_name, *t))]
        out = MapTiles(map_name, present, wpath, listed, [t for t in listed if t not in set(present)],
                       bool(wdt.big_alpha), root)
        if listed and not present and need_tiles:
            raise UsageError(f"map {map_name!r}: its WDT lists {len(listed):,} tiles and none of their ADT files "
                             f"is in {root} (e.g. {adt_game_path(map_name, *listed[0])})")
    else:
        pat = f"world\\maps\\{map_name}\\{map_name}_*_*.adt"
        adts = []
        for n in data.list(pat):
            base = n.replace("/", "\\").rsplit("\\", 1)[-1]
            if adt_name_problem(base, map_name) is None:
                parts = base[:-4].rsplit("_", 2)
                adts.append((int(parts[1]), int(parts[2])))
            else:
                log.info("skipped %s: %s", n, adt_name_problem(base, map_name))
        out = MapTiles(map_name, _row_major(adts), root=root)
        if not out.tiles:
            raise UsageError(f"map {map_name!r}: {wpath} is not in {root}, nor is any of its ADT files "
                             "(`wowgrass maps --data DIR` lists the maps there)")
    if ranges is not None:
        out.tiles = _row_major(out.select(ranges))
    log.info("map %s: %s; %d tiles to read%s", map_name,
             f"WDT lists {len(out.wdt_tiles)} tiles" if out.wdt_tiles else "no WDT tiles, its ADT files",
             len(out.tiles), f", {len(out.absent)} listed but absent (skipped)" if out.absent else "")
    return out


__all__ = ["MAP_TABLE", "MapTiles", "adt_game_path", "adt_name_problem", "ignored_adts", "choose_map", "list_maps", "map_directories", "map_tiles", "read_map_table", "wdt_game_path"]
