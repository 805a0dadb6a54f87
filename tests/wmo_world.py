"""A loose client folder whose one flat tile places the real inn (its root and the two group
files the test data has) by MODF, for the view and export tests."""

from __future__ import annotations

import shutil

import numpy as np

INN = "World\\wmo\\Test\\Inn.wmo"
MAP = "InnTest"
TILE = (32, 32)
GROUND = 10.0


def inn_world(tmp_path, realdata, *, heading: float = 30.0, ground: float = GROUND):
    """``tmp_path/Data``: map InnTest, tile 32_32 flat at ``ground`` with the inn at the tile's
    north-west corner area (world X, Y = -60, -60), the 3.3.5 ground-effect tables; returns
    (root, world position of the inn)."""
    from wowgrass.formats.adt import MODF_DTYPE, AdtTile, write_adt
    from wowgrass.formats.wdt import WdtFile, write_wdt
    from wowgrass.game.mapobjects import placement_matrices, transformed_bounds, world_to_file
    from wowgrass.formats.wmo import WmoRoot

    root = tmp_path / "Data"
    maps = root / "World" / "Maps" / MAP
    maps.mkdir(parents=True)
    wmo_dir = root / "World" / "wmo" / "Test"
    wmo_dir.mkdir(parents=True)
    for src, dst in (("inn.wmo", "Inn.wmo"), ("inn_000.wmo", "Inn_000.wmo"), ("inn_003.wmo", "Inn_003.wmo")):
        shutil.copy(realdata / "wmo" / src, wmo_dir / dst)
    pos = np.array([-60.0, -60.0, ground + 2.5])
    fpos = world_to_file(pos[None])[0]
    mat = placement_matrices(fpos[None], [[0.0, heading, 0.0]])[0]
    bbox = WmoRoot.from_bytes((wmo_dir / "Inn.wmo").read_bytes()).bbox
    bounds = transformed_bounds(mat[None], bbox)[0]
    ext = world_to_file(bounds)
    modf = np.zeros(1, MODF_DTYPE)
    modf["unique_id"] = 42
    modf["position"] = fpos
    modf["rotation"] = (0.0, heading, 0.0)
    modf["extents"] = np.stack([ext.min(axis=0), ext.max(axis=0)])
    t = AdtTile.from_arrays(*TILE, abs_heights=np.full((256, 145), ground), n_layers=np.ones(256, np.uint8),
                            textures=["Tileset\\Test\\Flat.blp"], wmos=[INN], modf=modf)
    (maps / f"{MAP}_{TILE[0]}_{TILE[1]}.adt").write_bytes(write_adt(t))
    main = np.zeros((64, 64), bool)
    main[TILE[1], TILE[0]] = True
    (maps / f"{MAP}.wdt").write_bytes(write_wdt(WdtFile(flags=0, main=main)))
    dbc = root / "DBFilesClient"
    dbc.mkdir()
    for name in ("GroundEffectTexture.dbc", "GroundEffectDoodad.dbc"):
        shutil.copy(realdata / "dbc" / "3.3.5" / name, dbc / name)
    return root, pos
