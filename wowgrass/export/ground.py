"""A tile's terrain for export: the MCVT mesh (holes cut) and its layers baked into one texture.

Why baked: glTF's core materials have one base colour texture per primitive; the four MTEX
layers blended by MCAL alpha maps would need a custom shader or node setup that no importer
builds on its own. One texture over the whole tile looks the same in Blender, engines and
viewers, and costs one image per tile instead of up to 16 textures plus 256 alpha maps.
"""

from __future__ import annotations

import numpy as np

from wowgrass.formats.adt import CHUNK_SIZE, TILE_SIZE
from wowgrass.game.coords import corner_steps, tile_offset, tile_origin
from wowgrass.render.sources.terrain_mesh import build_terrain_arrays, resize_rgba

TEXTURE_REPEAT = 8  # layer texture repeats across one chunk, as the viewer draws it
NO_LAYER = np.array([115, 107, 89], np.float32)  # a chunk without layers (the viewer's grey-brown)


def tiles_origin(tiles) -> np.ndarray:
    """World (X, Y, 0) of the centre of the bounding box of ``tiles`` ((col, row) pairs): the
    exports' scene origin, which keeps float32 positions precise."""
    cols = [c for c, _r in tiles]
    rows = [r for _c, r in tiles]
    x0, y0 = tile_origin(min(cols), min(rows))
    x1, y1 = tile_origin(max(cols) + 1, max(rows) + 1)
    return np.array([(x0 + x1) / 2, (y0 + y1) / 2, 0.0])


def chunk_grid(tile) -> tuple[np.ndarray, np.ndarray]:
    """(iy, ix) of every MCNK in the tile's 16x16 grid, from its position (its north-west corner,
    float32: the chunk half a chunk inside it, game.coords.corner_steps)."""
    p = np.asarray(tile.positions, np.float64)
    gx, gy = corner_steps(p[:, 0], p[:, 1], CHUNK_SIZE)
    return np.clip(gy - 16 * tile.row, 0, 15), np.clip(gx - 16 * tile.col, 0, 15)


def bake_texture(tile, arrays, size: int = 1024) -> np.ndarray:
    """(size, size, 3) u1 albedo of the whole tile: layers blended by their alpha maps.

    ``arrays`` is the tile's :func:`~wowgrass.render.sources.terrain_mesh.build_terrain_arrays` (layers resized,
    placeholders for missing names). ``size`` must be a multiple of 16 * TEXTURE_REPEAT (128). Row 0 is the tile's north edge,
    column 0 its west edge (the glTF UV origin is the image's top left)."""
    ppc = size // 16
    per_repeat = max(ppc // TEXTURE_REPEAT, 1)
    small = np.stack([resize_rgba(layer, per_repeat)[..., :3] for layer in arrays.layers]).astype(np.float32)
    tiles = np.tile(small, (1, TEXTURE_REPEAT, TEXTURE_REPEAT, 1))[:, :ppc, :ppc]
    tiles = np.concatenate([tiles, np.broadcast_to(NO_LAYER, (1, ppc, ppc, 3))])  # index -1 -> last
    layer_of = arrays.vertices["layers"].reshape(256, 145, 4)[:, 0].astype(np.int64)  # (256, 4), -1 absent
    pick = ((np.arange(ppc) + 0.5) * 64 / ppc).astype(np.int64)  # alpha texel under each pixel
    iy, ix = chunk_grid(tile)
    out = np.zeros((16 * ppc, 16 * ppc, 3), np.uint8)
    for start in range(0, 256, 16):  # 16 chunks at a time bounds memory at large sizes
        sl = slice(start, start + 16)
        lay = layer_of[sl]
        albedo = tiles[lay[:, 0]]
        alpha = arrays.alpha[sl][:, pick][:, :, pick].astype(np.float32) / 255.0  # (16, ppc, ppc, 4)
        for k in range(1, 4):
            a = np.where((lay[:, k] >= 0)[:, None, None, None], alpha[..., k - 1 : k], 0.0)
            albedo = albedo * (1.0 - a) + tiles[lay[:, k]] * a
        for j, chunk in enumerate(range(start, start + 16)):
            y0, x0 = iy[chunk] * ppc, ix[chunk] * ppc
            out[y0 : y0 + ppc, x0 : x0 + ppc] = np.clip(albedo[j] + 0.5, 0, 255).astype(np.uint8)
    return out


def export_terrain(tile, textures: dict[str, np.ndarray], size: int = 1024):
    """World positions (n, 3), normals (n, 3), tile-wide UVs (n, 2), triangle indices (holes cut),
    the baked (size, size, 3) texture and the MTEX names the textures lacked."""
    arrays = build_terrain_arrays(tile, textures)
    v = arrays.vertices
    pos = arrays.positions.astype(np.float64)
    uv = np.empty((len(pos), 2), np.float32)
    east, south = tile_offset(pos[:, 0], pos[:, 1], tile.col, tile.row)
    uv[:, 0], uv[:, 1] = east / TILE_SIZE, south / TILE_SIZE
    # level 0 only: the arrays stack all five LOD levels (the viewer picks one per chunk); exporting
    # them all would lay five overlapping surfaces, the coarse ones poking through the full one
    idx = arrays.indices[: int(arrays.lod_count[:, 0].sum())]
    nrm = v["normal"][:, :3].astype(np.float32)
    return pos, nrm, uv, idx, bake_texture(tile, arrays, size), arrays.missing_textures
