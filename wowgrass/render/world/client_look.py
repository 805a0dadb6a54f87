"""``view --look client``: what the clients work out for each tuft besides its place (client.md §5).

Per instance, from the tile it stands on (numpy, on the tile worker, once per tile):

* the unit normal of the terrain triangle under it (the cell's 4-triangle fan, the triangle
  chosen by the cell's diagonals as the 3.3.5 decode does): the clients light a tuft with the
  ground's normal, not the model's, and stand GroundEffectDoodad flag 0x1 models along it;
* its vertex colour: 3.3.5 interpolates the triangle's MCCV across the cell as the decode does
  (``FUN_007d3390``: the centre colour plus the corner deltas, doubled, clamped, rounded), white
  without MCCV or for a doodad flagged 0x2; 1.12/2.4.3 white. Inside the chunk's MCSH shadow the
  colour is darkened as the clients do it: 3.3.5's alpha ramp (``ShadeVertexColor``: 0.7 in the
  shadow, 0.996 out of it), 1.12's 0xC0 grey (0.753);
* the doodad's flags (0x1: along the slope).

Packed as :data:`EXTRA_DTYPE`, 16 bytes beside each instance's 16 (``shaders/grass.glsl``'s
``GRASS_CLIENT`` reads them as ``i_extra``). The cell offsets come back from the stored position,
so the colour interpolation is the client's to float32 rounding of a few thousandths of a yard.
"""

from __future__ import annotations

import numpy as np

from wowgrass.formats.adt import UNIT_SIZE as CELL

EXTRA_DTYPE = np.dtype([("colour", "<u4"), ("normal", "<u4"), ("flags", "<u4"), ("unused", "<u4")])
assert EXTRA_DTYPE.itemsize == 16

FOLLOW_SLOPE = 0x1  # GroundEffectDoodad.Flags: stand the model along the terrain normal
IGNORE_MCCV = 0x2  # GroundEffectDoodad.Flags: white, whatever the chunk's MCCV
SHADOW_GREY_112 = 0xC0  # 1.12: the diffuse constant inside MCSH shadow (0xFFC0C0C0)
_HALF = CELL / 2
# the 3.3.5 decode's triangles: 0 west, 1 north, 2 south, 3 east; corner A and B as MCVT offsets
# from the cell's first vertex and as (row, col) steps
_TRI_VERTEX = np.array([(17, 0), (0, 1), (18, 17), (1, 18)])
_TRI_CORNER = np.array([[(1, 0), (0, 0)], [(0, 0), (0, 1)], [(1, 1), (1, 0)], [(0, 1), (1, 1)]], np.float64)


def white_extras(n: int, flags: int = 0) -> np.ndarray:
    """Extras of ``n`` tufts on flat, unshadowed ground without vertex colour."""
    out = np.zeros(n, EXTRA_DTYPE)
    out["colour"] = 0xFFFFFFFF
    out["flags"] = flags
    return out


def model_flags(catalog) -> dict[str, int]:
    """GroundEffectDoodad.Flags per model path (OR over the table rows naming it; 0 without flags)."""
    sm = np.asarray(catalog.slot_model).reshape(-1)
    fl = np.asarray(getattr(catalog, "slot_flags", np.zeros_like(catalog.slot_model))).astype(np.int64).reshape(-1)
    out = np.zeros(len(catalog.models), np.int64)
    ok = sm >= 0
    np.bitwise_or.at(out, sm[ok], fl[ok])
    return {path: int(f) for path, f in zip(catalog.models, out.tolist()) if f}


def tuft_extras(adt, instances: np.ndarray, *, flags: int = 0, build: str = "3.3.5") -> np.ndarray:
    """:data:`EXTRA_DTYPE` for the bundle ``instances`` (INSTANCE_DTYPE) of one model on ``adt``."""
    n = len(instances)
    if n == 0:
        return np.zeros(0, EXTRA_DTYPE)
    pos = np.asarray(instances["pos"], np.float64)
    chunk = adt.chunk_index_at(pos[:, 0], pos[:, 1])
    outside = chunk < 0
    chunk = np.maximum(chunk, 0)
    base = np.asarray(adt.positions, np.float64)[chunk]
    dv = (base[:, 0] - pos[:, 0]) / CELL  # cells south of the chunk's corner
    du = (base[:, 1] - pos[:, 1]) / CELL  # cells east
    r = np.clip(np.floor(dv), 0, 7).astype(np.int64)
    c = np.clip(np.floor(du), 0, 7).astype(np.int64)
    oy = np.clip(dv - r, 0.0, 1.0) * CELL  # the decode's cell offsets, south and east
    ox = np.clip(du - c, 0.0, 1.0) * CELL
    tri = (oy < ox).astype(np.int64) + 2 * (ox + oy > CELL)

    # the triangle's plane through the centre and its two corners (heights relative to the chunk)
    h = np.asarray(adt.heights, np.float64).reshape(256, 145)
    i0 = r * 17 + c
    va, vb = _TRI_VERTEX[tri, 0], _TRI_VERTEX[tri, 1]
    ctr = np.stack([-np.full(n, _HALF), -np.full(n, _HALF), h[chunk, i0 + 9]], axis=1)
    corner_a = np.stack([-_TRI_CORNER[tri, 0, 0] * CELL, -_TRI_CORNER[tri, 0, 1] * CELL, h[chunk, i0 + va]], axis=1)
    corner_b = np.stack([-_TRI_CORNER[tri, 1, 0] * CELL, -_TRI_CORNER[tri, 1, 1] * CELL, h[chunk, i0 + vb]], axis=1)
    normal = np.cross(corner_b - ctr, corner_a - ctr)  # PlaneFromPoints(centre, B, A): facing up
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    normal[outside] = (0.0, 0.0, 1.0)

    # vertex colour, 0..255 per channel (R, G, B)
    rgb = np.full((n, 3), 255.0)
    mccv = getattr(adt, "mccv", None)
    if build == "3.3.5" and mccv is not None and not flags & IGNORE_MCCV:
        has = getattr(adt, "has_mccv", None)
        live = ~outside & (np.ones(n, bool) if has is None else np.asarray(has, bool)[chunk])
        ja, jb = ox / _HALF - 1.0, oy / _HALF - 1.0
        w = np.maximum(np.abs(ja), np.abs(jb))
        lead = np.where(np.abs(jb) > np.abs(ja), jb, ja)
        t2 = 0.5 - lead * 0.5
        t2 = np.where(oy < ox, 1.0 - t2, t2) * w
        col = np.asarray(mccv, np.float64).reshape(256, 145, 4)
        mid = col[chunk, i0 + 9, :3]  # bytes B, G, R(, A)
        bgr = 2.0 * mid + 2.0 * (col[chunk, i0 + va, :3] - mid) * w[:, None] + 2.0 * (col[chunk, i0 + vb, :3] - mid) * t2[:, None]
        bgr = np.floor(np.clip(bgr, 0.0, 255.0) + 0.5)
        rgb[live] = bgr[live][:, ::-1]

    # MCSH: the texel the decode reads (1.92 texels a yard, rounded to nearest)
    sx = np.rint((ox + c * CELL) * 1.92 - 0.5).astype(np.int64)
    sy = np.rint((oy + r * CELL) * 1.92 - 0.5).astype(np.int64)
    shadow = np.asarray(adt.shadow, bool).reshape(256, 64 * 64)[chunk, np.clip(sy * 64 + sx, 0, 64 * 64 - 1)]
    shadow &= ~outside
    if build == "3.3.5":  # ShadeVertexColor: alpha 0 in the shadow, then the 0.7 .. 1.0 ramp
        m = np.where(shadow, 0xB332, 255 * 0x4C + 0xB332)
        out_rgb = (rgb.astype(np.int64) * m[:, None]) >> 16
    else:
        out_rgb = np.where(shadow[:, None], SHADOW_GREY_112, 255).astype(np.int64) * np.ones((1, 3), np.int64)

    out = np.zeros(n, EXTRA_DTYPE)
    out["colour"] = (out_rgb[:, 0] | out_rgb[:, 1] << 8 | out_rgb[:, 2] << 16 | 255 << 24).astype(np.uint32)
    snorm = np.round(np.clip(normal[:, :2], -1.0, 1.0) * 32767.0).astype(np.int64) & 0xFFFF
    out["normal"] = (snorm[:, 0] | snorm[:, 1] << 16).astype(np.uint32)
    out["flags"] = flags & 0xFF
    return out
