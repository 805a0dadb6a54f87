"""``export layers``: a tile's ground-effect data as images with a JSON sidecar, for engines and
DCC tools that scatter their own foliage (Blender geometry nodes, Godot, Unity, Unreal).

Every image of a tile shares one orientation: image +x (columns, left to right) is east (WoW -Y),
image +y (rows, top to bottom) is south (WoW -X); the top-left corner is the tile's north-west
corner, world (X, Y) = (ZEROPOINT - row * TILE, ZEROPOINT - col * TILE). Grids:

- cells: 128 x 128 (16 chunks x 8 cells a side), 4.1667 yards a pixel: ``effect.png`` (16-bit:
  the GroundEffectTexture id of the layer the cell's doodadMapping names; 0: none; where an id
  needs more than 16 bits, its low 16 bits, and ``effect_high.png`` the high ones),
  ``no_effect_doodad.png`` (255 where the MCNK's noEffectDoodad bit is set),
  ``doodad_mapping.png`` (the layer 0..3 each cell's ground effect comes from),
  ``texture.png`` (16-bit: the MTEX index of the texture dominant on most of the cell's alpha
  texels; 65535: none);
- alpha texels: 1024 x 1024 (16 chunks x 64 texels), 0.52 yards a pixel: ``alpha.NN.<name>.png``,
  one per MTEX texture NN the tile uses: its weight 0..255 at each texel (each layer over those
  below by its alpha, as the view blends them: the weights sum to 255);
- vertices: 129 x 129 (16 chunks x 8 cells + 1; chunk edges shared), 4.1667 yards apart, the
  first on the north-west corner: ``heights.png`` (16-bit; height = offset + value * scale).

Every file name begins with its kind, inside a folder named for the tile, so none can collide
with a baked texture or another tile's files.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np

from wowgrass.fileio import write_atomic
from wowgrass.formats.adt import TILE_SIZE
from wowgrass.game.coords import tile_origin
from wowgrass.game.tiles import tile_grid

CELLS = 128
TEXELS = 1024
VERTICES = 129
CELL_SIZE = TILE_SIZE / CELLS


def png(arr: np.ndarray) -> bytes:
    """8-bit (u1) or 16-bit (u2) greyscale PNG bytes."""
    from PIL import Image

    buf = io.BytesIO()
    if arr.dtype == np.uint16:
        Image.fromarray(np.ascontiguousarray(arr, "<u2")).save(buf, "PNG")   # mode I;16
    else:
        Image.fromarray(np.ascontiguousarray(arr, np.uint8)).save(buf, "PNG")   # mode L
    return buf.getvalue()


def cell_effects(tile) -> np.ndarray:
    """(256, 8, 8) effect id of each cell: its doodadMapping layer's MCLY effect (0 where that
    layer does not exist, or the id is 0xFFFF / 0xFFFFFFFF: none)."""
    layer = np.asarray(tile.doodad_mapping, np.int64)
    eff = np.asarray(tile.layer_effect, np.int64)
    ids = np.take_along_axis(eff, np.minimum(layer, 3).reshape(256, 64), axis=1).reshape(256, 8, 8)
    exists = layer < np.asarray(tile.n_layers, np.int64)[:, None, None]
    return np.where(exists & (ids != 0xFFFF) & (ids != 0xFFFFFFFF), ids, 0)


def texture_weights(tile) -> np.ndarray:
    """(256, 4, 64, 64) u1 weight of each layer at each alpha texel, as the view blends the layers
    (each layer over those below by its alpha): layer k keeps its alpha times (1 - alpha) of every
    layer above it; layer 0 (alpha 1) what is left. They sum to 255 (rounding aside)."""
    a = np.asarray(tile.alpha, np.float64) / 255.0
    exists = np.arange(4)[None, :] < np.asarray(tile.n_layers)[:, None]
    a = np.where(exists[:, :, None, None], a, 0.0)
    a[:, 0] = np.where(exists[:, 0, None, None], 1.0, 0.0)
    w = np.empty_like(a)
    rest = np.ones(a.shape[:1] + a.shape[2:])
    for k in (3, 2, 1, 0):
        w[:, k] = a[:, k] * rest
        rest = rest * (1.0 - a[:, k])
    return np.round(w * 255.0).astype(np.uint8)


def dominant_textures(tile) -> np.ndarray:
    """(256, 8, 8) MTEX index of the texture dominant on most of each cell's 8x8 texels; -1: none."""
    layer = tile.computed_doodad_mapping().astype(np.int64)
    tex = np.take_along_axis(np.asarray(tile.layer_texture, np.int64), layer.reshape(256, 64), axis=1)
    exists = layer.reshape(256, 64) < np.asarray(tile.n_layers, np.int64)[:, None]
    return np.where(exists, tex, -1).reshape(256, 8, 8)


def vertex_heights(tile) -> np.ndarray:
    """(129, 129) f4 absolute heights of the MCVT outer vertices on the tile's grid."""
    h = np.asarray(tile.heights, np.float64).reshape(256, 145)
    outer = (np.arange(9)[:, None] * 17 + np.arange(9)[None, :])   # row i of 9, col j
    blocks = h[:, outer] + np.asarray(tile.positions, np.float64)[:, 2, None, None]
    out = np.zeros((VERTICES, VERTICES))
    ix, iy = np.asarray(tile.index_xy[:, 0], np.int64), np.asarray(tile.index_xy[:, 1], np.int64)
    for i in range(9):   # 9 rows of a chunk's outer vertices: shared edges written twice, the same value
        out[iy[:, None] * 8 + i, ix[:, None] * 8 + np.arange(9)[None, :]] = blocks[:, i, :]
    return out


def safe_name(path: str) -> str:
    stem = re.split(r"[\\/]", path)[-1].rsplit(".", 1)[0]
    return re.sub(r"[^A-Za-z0-9_-]+", "_", stem) or "texture"


def export_tile_layers(tile, catalog, out: Path, map_name: str) -> dict:
    """Write one tile's images and ``layers.json`` into ``out`` (a folder of its own); returns the JSON."""
    col, row = int(tile.col), int(tile.row)
    files = {}

    def put(name, arr):
        data = png(arr)
        write_atomic(out / name, data)
        files[name] = len(data)

    eff = tile_grid(tile, cell_effects(tile))
    put("effect.png", (eff & 0xFFFF).astype(np.uint16))
    wide = eff.max(initial=0) > 0xFFFF   # ids past 16 bits (3.3.5 has them): their high bits beside
    if wide:
        put("effect_high.png", (eff >> 16).astype(np.uint16))
    put("no_effect_doodad.png", tile_grid(tile, np.asarray(tile.no_effect_doodad, bool)).astype(np.uint8) * 255)
    put("doodad_mapping.png", tile_grid(tile, np.asarray(tile.doodad_mapping, np.uint8) & 3))
    dom = tile_grid(tile, dominant_textures(tile))
    put("texture.png", np.where(dom < 0, 0xFFFF, dom).astype(np.uint16))

    weights = texture_weights(tile)
    tex_of_layer = np.asarray(tile.layer_texture, np.int64)
    alphas = []
    for t in np.unique(tex_of_layer[tex_of_layer >= 0]):
        per_chunk = np.zeros((256, 64, 64), np.uint16)
        for k in range(4):   # a texture may sit in different layer slots in different chunks
            sel = tex_of_layer[:, k] == t
            per_chunk[sel] += weights[sel, k]
        img = tile_grid(tile, np.minimum(per_chunk, 255).astype(np.uint8))
        if not img.any():
            continue
        name = f"alpha.{int(t):02d}.{safe_name(tile.textures[t])}.png"
        put(name, img)
        alphas.append({"file": name, "texture_index": int(t), "texture": tile.textures[t],
                       "coverage": round(float(img.mean() / 255.0), 4)})

    heights = vertex_heights(tile)
    lo, hi = float(heights.min()), float(heights.max())
    scale = (hi - lo) / 65535.0 if hi > lo else 1.0
    put("heights.png", np.round((heights - lo) / scale).astype(np.uint16))

    ids = np.unique(eff[eff > 0])
    effects = {}
    for e in ids.tolist():
        r = catalog.row(int(e)) if catalog is not None else None
        effects[str(e)] = ({"density": r["density"], "models": r["models"], "weights": r["weights"],
                            "doodads": r["doodads"], "cell_count": int((eff == e).sum())}
                           if r else {"missing": True, "cell_count": int((eff == e).sum())})
    north, west = tile_origin(col, row)
    doc = {
        "format": "wowgrass-layers 1",
        "map": map_name, "tile": [col, row],
        "world": {"north_x": north, "south_x": north - TILE_SIZE, "west_y": west, "east_y": west - TILE_SIZE,
                  "axes": "WoW world: X north, Y west, Z up (yards)"},
        "orientation": "image +x = east (-Y), image +y = south (-X); pixel (0, 0) at the north-west corner",
        "grids": {
            "cells": {"size": [CELLS, CELLS], "yards": CELL_SIZE,
                      "pixel_centre": "X = north_x - (py + 0.5) * yards, Y = west_y - (px + 0.5) * yards"},
            "alpha": {"size": [TEXELS, TEXELS], "yards": TILE_SIZE / TEXELS,
                      "pixel_centre": "X = north_x - (py + 0.5) * yards, Y = west_y - (px + 0.5) * yards"},
            "vertices": {"size": [VERTICES, VERTICES], "yards": CELL_SIZE,
                         "pixel": "X = north_x - py * yards, Y = west_y - px * yards"},
        },
        "files": {
            "effect.png": {"grid": "cells", "bits": 16, "value": "GroundEffectTexture id (0: none)"},
            "no_effect_doodad.png": {"grid": "cells", "bits": 8, "value": "255: noEffectDoodad set"},
            "doodad_mapping.png": {"grid": "cells", "bits": 8, "value": "MCLY layer 0..3 of the cell's effect"},
            "texture.png": {"grid": "cells", "bits": 16, "value": "index into textures (65535: none)"},
            "heights.png": {"grid": "vertices", "bits": 16, "value": "height = offset + value * scale",
                            "offset": lo, "scale": scale},
        },
        "alpha": alphas,
        "textures": list(tile.textures),
        "effects": effects,
        "effect_cell_count": int((eff > 0).sum()),
        "no_effect_doodad_cell_count": int(np.asarray(tile.no_effect_doodad, bool).sum()),
        "bytes": sum(files.values()),
    }
    if wide:
        doc["files"]["effect.png"]["value"] = "GroundEffectTexture id's low 16 bits (0: none)"
        doc["files"]["effect_high.png"] = {"grid": "cells", "bits": 16, "value": "GroundEffectTexture id's high "
                                           "16 bits: id = effect.png + 65536 * effect_high.png"}
    for a in alphas:
        doc["files"][a["file"]] = {"grid": "alpha", "bits": 8, "value": f"weight of {a['texture']} (0..255)"}
    data = json.dumps(doc, indent=1).encode()
    write_atomic(out / "layers.json", data)
    doc["bytes"] += len(data)
    return doc


# --- a map's tiles, in this process or --jobs workers -------------------------------------------------
_WORKER: dict = {}


def _open(spec, dbc_dir, build, map_name, big_alpha):
    """This process's data (``spec``: the parent's GameData.spec()) and tables."""
    from wowgrass.grass.bake import load_catalog

    data = spec.open()
    try:
        catalog = load_catalog(data=data, dbc_dir=dbc_dir, build=build or data.build)
    except Exception as exc:  # noqa: BLE001 - no tables: the images still go out, the effects unresolved
        catalog, why = None, str(exc)
    else:
        why = None
    _WORKER.update(data=data, catalog=catalog, map_name=map_name, big_alpha=big_alpha, catalog_error=why)
    return _WORKER


def _tile(job):
    """(col, row, folder) -> (col, row, the JSON or None, error or None, the tables' error or None)."""
    from wowgrass.errors import WowgrassError
    from wowgrass.game.tiles import adt_game_path, read_adt

    col, row, folder = job
    w = _WORKER
    name = adt_game_path(w["map_name"], col, row)
    try:
        adt = read_adt(w["data"].read(name), name, w["big_alpha"])
    except WowgrassError as exc:
        return col, row, None, TileError(str(exc), "read"), w["catalog_error"]
    try:
        return col, row, export_tile_layers(adt, w["catalog"], Path(folder), w["map_name"]), None, w["catalog_error"]
    except (WowgrassError, OSError) as exc:   # a full disk, a file where its folder goes
        return col, row, None, TileError(_write_error(exc), "written"), w["catalog_error"]


class TileError(str):
    """Why a tile is missing from the export, and whether it could not be ``read`` or ``written``."""

    def __new__(cls, why: str, failed: str):
        self = super().__new__(cls, why)
        self.failed = failed
        return self

    def __reduce__(self):   # back from a worker process whole
        return TileError, (str(self), self.failed)


def _write_error(exc) -> str:
    from wowgrass.errors import OUTPUT_REASONS

    if isinstance(exc, OSError):
        reason = OUTPUT_REASONS.get(exc.errno) or exc.strerror or str(exc)
        return f"cannot write {exc.filename}: {reason}" if exc.filename else reason
    return str(exc)


def export_layers(data_path, map_name, out: Path, *, ranges=None, dbc_dir=None, build=None, jobs: int = 1,
                  on_start=None, progress=None):
    """Each tile of the map (or of ``ranges``) into ``out/<map>_<col>_<row>/``; returns (the tiles'
    JSON documents, {(col, row): why (a :class:`TileError`)} for tiles that could not be read or
    written, the catalog's error or None)."""
    from wowgrass.game.data import open_data
    from wowgrass.game.maps import choose_map, map_tiles

    with open_data(data_path, build=build) as data:
        map_name = choose_map(data, map_name)
        mt = map_tiles(data, map_name, ranges)
    spec = data.spec()
    jobs_list = [(c, r, str(out / f"{map_name}_{c}_{r}")) for c, r in mt.tiles]
    if on_start:
        on_start(len(jobs_list), map_name, mt.note())
    docs, errors, tables = [], {}, set()

    def keep(res):
        col, row, doc, why, tables_error = res
        if tables_error:
            tables.add(tables_error)
        if doc is None:
            errors[(col, row)] = why
        else:
            docs.append(doc)
        if progress:
            progress(f"{col}_{row}")

    if jobs <= 1 or len(jobs_list) <= 1:
        w = _open(spec, dbc_dir, build, map_name, mt.big_alpha)
        try:
            for job in jobs_list:
                keep(_tile(job))
        finally:
            w["data"].close()
            _WORKER.clear()
    else:
        import multiprocessing as mp

        from wowgrass.pools import map_in, worker_pool

        with worker_pool(min(jobs, len(jobs_list)), _open, (spec, dbc_dir, build, map_name, mt.big_alpha),
                         mp_context=mp.get_context("spawn")) as pool:
            for res in map_in(pool, _tile, jobs_list, chunksize=4):
                keep(res)
    docs.sort(key=lambda d: (d["tile"][1], d["tile"][0]))
    return map_name, docs, errors, next(iter(tables), None)
