"""A tile's payload: everything the scene uploads for a tile that needs neither the GL context nor
the scene, built by the scene's worker thread or by a tile process (tile_process.py)."""

from __future__ import annotations

import numpy as np

from wowgrass.formats.adt import CHUNK_SIZE, AdtTile
from wowgrass.grass.bundle import INSTANCE_DTYPE

from ..sources.grass_cpu import group_by_chunk
from ..sources.terrain_mesh import build_far_arrays, build_terrain_arrays


def liquid_tops(adt) -> tuple | None:
    """Each cell's highest liquid surface (its four corners' mean; NaN where no layer has liquid)
    and that layer's LiquidType ID and kind: ((256, 8, 8) float32, (256, 8, 8) int32, (256, 8, 8)
    uint8), or None for a tile without liquid (or whose liquid does not parse: the scene reports
    that where it draws it)."""
    from wowgrass.errors import FormatError
    from wowgrass.formats.liquid import tile_liquid

    try:
        layers = tile_liquid(adt).layers
    except (FormatError, AttributeError):
        return None
    if not len(layers):
        return None
    h = layers["heights"].astype(np.float32)
    mean = (h[:, :-1, :-1] + h[:, 1:, :-1] + h[:, :-1, 1:] + h[:, 1:, 1:]) * np.float32(0.25)
    mean = np.where(layers["exists"], mean, -np.inf)
    top = np.full((256, 8, 8), -np.inf, np.float32)
    types = np.full((256, 8, 8), -1, np.int32)
    kinds = np.full((256, 8, 8), 255, np.uint8)
    for k in np.argsort(mean.reshape(len(layers), -1).max(1), kind="stable"):   # the highest layer last
        ch = int(layers["chunk"][k])
        higher = mean[k] > top[ch]
        top[ch][higher] = mean[k][higher]
        types[ch][higher] = int(layers["type"][k])
        kinds[ch][higher] = int(layers["kind"][k])
    top[np.isinf(top)] = np.nan
    return top, types, kinds


class TileGround:
    """A resident tile's heights alone (``Scene.ground_height``, the first frame): the
    :class:`~wowgrass.formats.adt.AdtTile`'s chunk positions, heights and chunk order, the same
    height queries, without the alpha maps, shadows and the rest (a tile's ~5 MB)."""

    def __init__(self, adt):
        self.positions = np.array(adt.positions, np.float32)
        self.heights = np.array(adt.heights, np.float32)
        self.index_xy = np.array(adt.index_xy)
        self.liquid = liquid_tops(adt)

    def liquid_at(self, x: float, y: float) -> tuple | None:
        """(surface height, LiquidType ID, kind) of the highest liquid over (x, y) in this tile
        (its cell's mean height), else None."""
        if self.liquid is None:
            return None
        ch = int(self.chunk_index_at(x, y))
        if ch < 0:
            return None
        cell = CHUNK_SIZE / 8.0
        r = min(max(int((float(self.positions[ch, 0]) - x) // cell), 0), 7)
        c = min(max(int((float(self.positions[ch, 1]) - y) // cell), 0), 7)
        top = float(self.liquid[0][ch, r, c])
        return None if top != top else (top, int(self.liquid[1][ch, r, c]), int(self.liquid[2][ch, r, c]))

    chunk_index_at = AdtTile.chunk_index_at
    _fan = AdtTile._fan
    heights_at = AdtTile.heights_at
    height_at = AdtTile.height_at


def prepare_payload(source, key, full: bool, *, far_level: int, grass_path: str = "instanced",
                    client_look: bool = False) -> dict:
    """Everything for tile ``key`` that needs neither the GL context nor the scene (its arrays,
    grass grouped by chunk, its heights; ``models``: the model names it draws): in the scene's
    worker thread, or in a tile process (tile_process.py) with a source of its own. ``full``
    False: the terrain alone, where the source can load that by itself."""
    load_terrain = getattr(source, "load_terrain", None)
    if full or load_terrain is None:
        payload = source.load_tile(*key)
        payload["full"] = True
    else:
        payload = {**load_terrain(*key), "full": False}
    adt = payload["adt"]
    if adt is None:
        payload["terrain"] = None
    elif payload["full"]:
        payload["terrain"] = build_terrain_arrays(adt, payload.get("textures"))
        payload["terrain"].atlas()  # built here, off the GL thread
    else:  # a far tile: its coarse levels and a low-resolution colour
        payload["terrain"] = build_far_arrays(adt, payload.get("textures"), far_level)
    payload["textures"] = None  # decoded MTEX images: in the arrays now
    payload["ground"] = TileGround(adt) if adt is not None else None
    if grass_path == "instanced":  # chunk-sorted with its group table: GpuGrass.add skips both
        grouped = {name: group_by_chunk(inst) for name, inst in payload.get("grass", {}).items()
                   if inst.dtype == INSTANCE_DTYPE and len(inst)}
        payload["grass"] = {**payload.get("grass", {}), **{n: g[0] for n, g in grouped.items()}}
        payload["grass_groups"] = {n: g[1] for n, g in grouped.items()}
    if client_look and adt is not None:  # per tuft: its ground's normal, colour, flags
        from .client_look import tuft_extras, white_extras

        flags, build = payload.get("grass_flags", {}), payload.get("build", "3.3.5")
        payload["grass_extra"] = {n: tuft_extras(adt, inst, flags=flags.get(n, 0), build=build)
                                  for n, inst in payload.get("grass", {}).items()}
    elif client_look:
        payload["grass_extra"] = {n: white_extras(len(inst)) for n, inst in payload.get("grass", {}).items()}
    pos = [inst["pos"][:, :2] for inst in payload.get("grass", {}).values() if len(inst)]
    pos = np.concatenate(pos) if pos else np.zeros((0, 2))
    payload["grass_xy"] = np.array(pos[:: max(1, len(pos) // 4096)], np.float64)  # a sample, for start-up
    models = set(payload.get("grass", {})) | set(payload.get("doodads", {}))
    payload["models"] = sorted(models)
    if grass_path == "grid" and payload["full"] and "grid" not in payload and adt is not None:
        from wowgrass.grass.grid_tiles import build_grid_tile  # sources without a cache (synthetic ones)

        payload["grid"] = build_grid_tile(adt, payload.get("grass", {}))
    payload.pop("adt")  # its heights are in "ground", the rest in the arrays
    return payload
