"""The tiles an export reads: loose ADT files or a map of a data source, each with its baked bundle.

Inputs mirror ``wowgrass bake``: ADT files (tables from ``data`` or ``dbc_dir``, else beside or
above the files), or ``data`` + map name + tile ranges (default: every tile of the map present,
:mod:`wowgrass.game.maps`; tables from ``dbc_dir`` when given), or nothing at all (the sample world).
Bundles come from the cache when valid, else they are baked first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from wowgrass.errors import OutputError, UsageError, WowgrassError

from .scene import TileInput


@dataclass
class ExportSource:
    map_name: str
    tiles: list[TileInput]
    read: Callable[[str], bytes] | None  # models and textures (None: tables only)
    data: object = None  # an open GameData to close
    note: str | None = None  # a partial extract's "note: ..." (the WDT lists tiles the data lacks)
    errors: dict = field(default_factory=dict)  # (col, row) -> why a damaged tile was left out

    def close(self):
        if self.data is not None:
            self.data.close()


def open_tiles(*, adt_files=(), data_path=None, dbc_dir=None, map_name=None, ranges=None, build=None,
               placement="coverage", constants=None, force=False, on_tile=None, on_error=None) -> ExportSource:
    from wowgrass.grass.bake import ModelTable, bake_file, bake_tile, default_data, load_catalog, tables_for
    from wowgrass.game.data import open_data
    from wowgrass.game.maps import choose_map, map_tiles
    from wowgrass.game.tiles import adt_game_path, load_tile, read_adt, tile_from_name

    if adt_files:
        if ranges:
            raise UsageError("--tile is for a map (--data, --map), not for ADT files")
        if not data_path and not dbc_dir:  # the sample world's, or tables beside or above the file
            data_path, dbc_dir = tables_for(adt_files[0])
        data = open_data(data_path, build=build) if data_path else None
        tiles = []
        for f in adt_files:
            res = bake_file(f, data=data, dbc_dir=dbc_dir, build=build, map_name=map_name, placement=placement,
                            constants=constants, force=force)
            adt, _raw, _src = load_tile(f)
            tiles.append(TileInput(adt, Path(res.path)))
            if on_tile:
                on_tile(res)
        name = map_name or tile_from_name(Path(adt_files[0]))[0]
        return ExportSource(name, tiles, data.read if data else None, data)

    if data_path is None:
        data_path, sample_map = default_data()
        map_name = map_name or sample_map
    data = open_data(data_path, build=build)
    try:
        map_name = choose_map(data, map_name)
        mt = map_tiles(data, map_name, ranges)
        wanted, big_alpha = mt.tiles, mt.big_alpha
        catalog = load_catalog(data=data, dbc_dir=dbc_dir, build=build or data.build)
        models = ModelTable(data.read)
        tiles, errors = [], {}
        for col, row in wanted:
            name = adt_game_path(map_name, col, row)
            try:
                raw = data.read(name)
                adt = read_adt(raw, name, big_alpha)
                res = bake_tile(raw, catalog, map_name=map_name, placement=placement, constants=constants,
                                models=models, big_alpha=big_alpha, adt_path=name, tile=adt, force=force)
            except OutputError:
                raise  # a full or read-only cache: every other tile would fail the same way
            except WowgrassError as exc:  # a damaged tile: left out, the others exported (as bake and view)
                errors[(col, row)] = str(exc)
                if on_error:
                    on_error((col, row), str(exc))
                continue
            tiles.append(TileInput(adt, Path(res.path)))
            if on_tile:
                on_tile(res)
        if tiles:   # `cache ls` names every data source that baked the map's bundles
            from wowgrass.grass.bake import record_source

            record_source(map_name, data.root, catalog.build, [(t.adt.col, t.adt.row) for t in tiles])
    except BaseException:
        data.close()
        raise
    return ExportSource(map_name, tiles, data.read, data, mt.note(), errors)
