"""A loose client folder around one real ADT (and its WDT), with the ground-effect tables."""

from __future__ import annotations

import shutil


def loose_world(tmp_path, realdata, adt, map_name, col, row, wdt=None, build="3.3.5"):
    """``tmp_path/Data`` holding the real ``adt`` as ``map_name``'s tile (col, row), ``wdt`` as its
    WDT when given, and ``build``'s GroundEffectTexture/GroundEffectDoodad tables; returns it."""
    root = tmp_path / "Data"
    maps = root / "World" / "Maps" / map_name
    maps.mkdir(parents=True)
    shutil.copy(realdata / "adt" / adt, maps / f"{map_name}_{col}_{row}.adt")
    if wdt:
        shutil.copy(realdata / "adt" / wdt, maps / f"{map_name}.wdt")
    dbc = root / "DBFilesClient"
    dbc.mkdir()
    for name in ("GroundEffectTexture.dbc", "GroundEffectDoodad.dbc"):
        shutil.copy(realdata / "dbc" / build / name, dbc / name)
    return root
