"""The sample world's building: a small timber-framed house written as a WMO v17 by wowgrass's
own writer (:mod:`wowgrass.formats.wmo`), with its textures, and the liquid textures the sample
world's lake uses.

Two groups, as real buildings have them: an exterior one (plaster walls with a door opening,
timber beams, a stone base, a thatched gable roof, a chimney, and a stone basin whose water is
an MLIQ) and an interior one (floor, inner walls and ceiling, lit by MOCV vertex
colours). One doodad set places the sample's rocks by the house (MODN names them .mdx, as
1.x files do). Local space: X along the ridge, Y across, Z up; the door faces −Y; the floor is at
Z = 0.
"""

from __future__ import annotations

import numpy as np

from wowgrass.formats.blp import write_blp
from wowgrass.formats.wmo import (
    BLEND_OPAQUE, GroupFlags, MaterialFlags, MohdFlags, WmoLiquid, make_group, make_root, write_wmo_group, write_wmo_root,
)
from wowgrass.samples.noise import fbm

WMO_PATH = "World\\wmo\\Sample\\Buildings\\SampleHouse\\SampleHouse.wmo"
TEXTURES = {
    "plaster": "World\\wmo\\Sample\\Textures\\SamplePlaster.blp",
    "timber": "World\\wmo\\Sample\\Textures\\SampleTimber.blp",
    "thatch": "World\\wmo\\Sample\\Textures\\SampleThatch.blp",
    "stone": "World\\wmo\\Sample\\Textures\\SampleStone.blp",
    "floor": "World\\wmo\\Sample\\Textures\\SampleFloor.blp",
}
MATERIALS = ("plaster", "timber", "thatch", "stone", "floor")
HALF_X, HALF_Y = 6.0, 4.0        # footprint 12 × 8 yards
WALL = 4.2                       # eaves height
RIDGE = 7.6
DOOR_W, DOOR_H = 1.6, 2.7
UNIT = 1600.0 / 3 / 128          # an MLIQ tile is one terrain cell
BASIN = ((-5.9, -5.4 - UNIT), (-5.9 + UNIT, -5.4))   # (x0, y0), (x1, y1) inside the basin before the house
BASIN_TOP = 0.55
LIQUID_TEXTURE_SIZE = 64


class _Mesh:
    """Triangles with per-vertex normals and uvs, collected by material."""

    def __init__(self):
        self.pos, self.nrm, self.uv, self.tri, self.mat, self.col = [], [], [], [], [], []
        self.n = 0

    def quad(self, p0, p1, p2, p3, material, uv_scale=0.5, colour=None):
        """A planar quad p0→p1→p2→p3 (counter-clockwise seen from the front)."""
        p = np.array([p0, p1, p2, p3], np.float64)
        n = np.cross(p[1] - p[0], p[3] - p[0])
        n /= max(np.linalg.norm(n), 1e-9)
        u_axis = (p[1] - p[0]) / max(np.linalg.norm(p[1] - p[0]), 1e-9)
        v_axis = np.cross(n, u_axis)
        rel = p - p[0]
        uv = np.stack([rel @ u_axis, -(rel @ v_axis)], axis=1) * uv_scale
        self._add(p, np.repeat(n[None], 4, axis=0), uv, [[0, 1, 2], [0, 2, 3]], material, colour)

    def triangle(self, p0, p1, p2, material, uv_scale=0.5, colour=None):
        p = np.array([p0, p1, p2], np.float64)
        n = np.cross(p[1] - p[0], p[2] - p[0])
        n /= max(np.linalg.norm(n), 1e-9)
        u_axis = (p[1] - p[0]) / max(np.linalg.norm(p[1] - p[0]), 1e-9)
        v_axis = np.cross(n, u_axis)
        rel = p - p[0]
        uv = np.stack([rel @ u_axis, -(rel @ v_axis)], axis=1) * uv_scale
        self._add(p, np.repeat(n[None], 3, axis=0), uv, [[0, 1, 2]], material, colour)

    def box(self, lo, hi, material, uv_scale=0.5, skip=()):
        (x0, y0, z0), (x1, y1, z1) = lo, hi
        faces = {
            "-y": ((x0, y0, z0), (x1, y0, z0), (x1, y0, z1), (x0, y0, z1)),
            "+y": ((x1, y1, z0), (x0, y1, z0), (x0, y1, z1), (x1, y1, z1)),
            "-x": ((x0, y1, z0), (x0, y0, z0), (x0, y0, z1), (x0, y1, z1)),
            "+x": ((x1, y0, z0), (x1, y1, z0), (x1, y1, z1), (x1, y0, z1)),
            "+z": ((x0, y0, z1), (x1, y0, z1), (x1, y1, z1), (x0, y1, z1)),
            "-z": ((x0, y1, z0), (x1, y1, z0), (x1, y0, z0), (x0, y0, z0)),
        }
        for k, f in faces.items():
            if k not in skip:
                self.quad(*f, material, uv_scale)

    def _add(self, p, n, uv, tris, material, colour):
        self.pos.append(p)
        self.nrm.append(n)
        self.uv.append(uv)
        self.tri.append(np.asarray(tris) + self.n)
        self.mat += [material] * len(tris)
        c = (128, 128, 128, 255) if colour is None else colour
        self.col.append(np.tile(np.asarray(c, np.uint8), (len(p), 1)))
        self.n += len(p)

    def arrays(self):
        return (np.concatenate(self.pos).astype(np.float32), np.concatenate(self.nrm).astype(np.float32),
                np.concatenate(self.uv).astype(np.float32), np.concatenate(self.tri), np.asarray(self.mat),
                np.concatenate(self.col))


def _m(name: str) -> int:
    return MATERIALS.index(name)


def _exterior() -> _Mesh:
    m = _Mesh()
    x0, x1, y0, y1 = -HALF_X, HALF_X, -HALF_Y, HALF_Y
    base = 0.6
    # stone base band, slightly proud of the walls
    m.box((x0 - 0.12, y0 - 0.12, -0.8), (x1 + 0.12, y1 + 0.12, base), _m("stone"), skip=("+z", "-z", "-y"))
    # the front base band, split round the door
    for a, b in ((x0 - 0.12, -DOOR_W / 2), (DOOR_W / 2, x1 + 0.12)):
        m.quad((a, y0 - 0.12, -0.8), (b, y0 - 0.12, -0.8), (b, y0 - 0.12, base), (a, y0 - 0.12, base), _m("stone"))
    m.quad((x0 - 0.12, y0 - 0.12, base), (x1 + 0.12, y0 - 0.12, base), (x1 + 0.12, y0, base), (x0 - 0.12, y0, base),
           _m("stone"))
    # plaster walls: back, sides, front split round the door
    m.quad((x1, y1, base), (x0, y1, base), (x0, y1, WALL), (x1, y1, WALL), _m("plaster"), 0.35)
    m.quad((x0, y1, base), (x0, y0, base), (x0, y0, WALL), (x0, y1, WALL), _m("plaster"), 0.35)
    m.quad((x1, y0, base), (x1, y1, base), (x1, y1, WALL), (x1, y0, WALL), _m("plaster"), 0.35)
    d0, d1 = -DOOR_W / 2, DOOR_W / 2
    m.quad((x0, y0, base), (d0, y0, base), (d0, y0, WALL), (x0, y0, WALL), _m("plaster"), 0.35)
    m.quad((d1, y0, base), (x1, y0, base), (x1, y0, WALL), (d1, y0, WALL), _m("plaster"), 0.35)
    m.quad((d0, y0, DOOR_H), (d1, y0, DOOR_H), (d1, y0, WALL), (d0, y0, WALL), _m("plaster"), 0.35)
    # gables
    m.triangle((x0, y1, WALL), (x0, y0, WALL), (x0, 0.0, RIDGE), _m("plaster"), 0.35)
    m.triangle((x1, y0, WALL), (x1, y1, WALL), (x1, 0.0, RIDGE), _m("plaster"), 0.35)
    # timber frame: corner posts, a beam under the eaves, door frame, a cross brace on each side
    t = 0.22
    for cx in (x0, x1):
        for cy in (y0, y1):
            m.box((cx - t, cy - t, base), (cx + t, cy + t, WALL - 0.25), _m("timber"))
    # (kept under the roof: its outer edge stays below the roof's slope)
    m.box((x0 - t, y0 - t, WALL - 0.5), (x1 + t, y0 + 0.02, WALL - 0.25), _m("timber"), skip=("+y",))
    m.box((x0 - t, y1 - 0.02, WALL - 0.5), (x1 + t, y1 + t, WALL - 0.25), _m("timber"), skip=("-y",))
    for dx in (d0 - t, d1):
        m.box((dx, y0 - t, base), (dx + t, y0 + 0.02, DOOR_H + t), _m("timber"), skip=("+y",))
    m.box((d0 - t, y0 - t, DOOR_H), (d1 + t, y0 + 0.02, DOOR_H + t), _m("timber"), skip=("+y",))
    for sx in (-3.0, 3.0):
        m.box((sx - t / 2, y0 - t, base), (sx + t / 2, y0 + 0.02, WALL - 0.5), _m("timber"), skip=("+y",))
        m.box((sx - t / 2, y1 - 0.02, base), (sx + t / 2, y1 + t, WALL - 0.5), _m("timber"), skip=("-y",))
    # the door's reveal (the wall's thickness) and threshold
    m.quad((d0, y0, base), (d0, y0 + 0.3, base), (d0, y0 + 0.3, DOOR_H), (d0, y0, DOOR_H), _m("timber"))
    m.quad((d1, y0 + 0.3, base), (d1, y0, base), (d1, y0, DOOR_H), (d1, y0 + 0.3, DOOR_H), _m("timber"))
    m.quad((d0, y0 + 0.3, DOOR_H), (d1, y0 + 0.3, DOOR_H), (d1, y0, DOOR_H), (d0, y0, DOOR_H), _m("timber"))
    m.quad((d0, y0 - 0.5, base), (d1, y0 - 0.5, base), (d1, y0, base), (d0, y0, base), _m("stone"))
    m.quad((d0, y0 - 0.5, -0.8), (d1, y0 - 0.5, -0.8), (d1, y0 - 0.5, base), (d0, y0 - 0.5, base), _m("stone"))
    # thatched roof with an overhang, its thickness shown at the eaves and gables
    ov, th = 0.8, 0.35
    slope = (RIDGE - WALL) / HALF_Y
    ez = WALL - ov * slope
    for side in (-1, 1):
        ye = side * (HALF_Y + ov)
        lo = (x0 - ov, ye, ez)
        hi = (x1 + ov, ye, ez)
        top0, top1 = (x0 - ov, 0.0, RIDGE), (x1 + ov, 0.0, RIDGE)
        if side < 0:
            m.quad(lo, hi, top1, top0, _m("thatch"), 0.3)
            m.quad((x1 + ov, ye, ez - th), (x0 - ov, ye, ez - th), (x0 - ov, 0.0, RIDGE - th),
                   (x1 + ov, 0.0, RIDGE - th), _m("thatch"), 0.3)
            m.quad((x0 - ov, ye, ez - th), (x1 + ov, ye, ez - th), hi, lo, _m("thatch"), 0.3)
        else:
            m.quad(hi, lo, top0, top1, _m("thatch"), 0.3)
            m.quad((x0 - ov, ye, ez - th), (x1 + ov, ye, ez - th), (x1 + ov, 0.0, RIDGE - th),
                   (x0 - ov, 0.0, RIDGE - th), _m("thatch"), 0.3)
            m.quad((x1 + ov, ye, ez - th), (x0 - ov, ye, ez - th), lo, hi, _m("thatch"), 0.3)
    for gx, sgn in ((x0 - ov, -1), (x1 + ov, 1)):
        for side in (-1, 1):
            ye = side * (HALF_Y + ov)
            a, b = (gx, ye, ez), (gx, 0.0, RIDGE)
            a2, b2 = (gx, ye, ez - th), (gx, 0.0, RIDGE - th)
            if (side > 0) != (sgn > 0):
                m.quad(a, a2, b2, b, _m("thatch"), 0.3)
            else:
                m.quad(a2, a, b, b2, _m("thatch"), 0.3)
    # chimney through the roof near the +X gable
    m.box((3.4, 0.8, 2.0), (4.4, 1.8, RIDGE + 1.3), _m("stone"), skip=("-z",))
    # a stone basin before the house, its water an MLIQ (see _basin_liquid)
    (tx0, ty0), (tx1, ty1) = BASIN
    w = 0.3
    m.box((tx0 - w, ty0 - w, -0.6), (tx1 + w, ty0, BASIN_TOP), _m("stone"))
    m.box((tx0 - w, ty1, -0.6), (tx1 + w, ty1 + w, BASIN_TOP), _m("stone"))
    m.box((tx0 - w, ty0, -0.6), (tx0, ty1, BASIN_TOP), _m("stone"))
    m.box((tx1, ty0, -0.6), (tx1 + w, ty1, BASIN_TOP), _m("stone"))
    m.quad((tx0, ty0, -0.2), (tx1, ty0, -0.2), (tx1, ty1, -0.2), (tx0, ty1, -0.2), _m("stone"))
    return m


def _interior() -> _Mesh:
    """Floor, inner wall faces and ceiling, with warm vertex colours that fade from the hearth."""
    m = _Mesh()
    x0, x1, y0, y1 = -HALF_X + 0.3, HALF_X - 0.3, -HALF_Y + 0.3, HALF_Y - 0.3
    base = 0.6
    ceil = WALL - 0.3
    m.quad((x0, y0, base), (x1, y0, base), (x1, y1, base), (x0, y1, base), _m("floor"), 0.4)
    m.quad((x0, y0, ceil), (x0, y1, ceil), (x1, y1, ceil), (x1, y0, ceil), _m("timber"), 0.4)
    m.quad((x0, y1, base), (x1, y1, base), (x1, y1, ceil), (x0, y1, ceil), _m("plaster"), 0.35)
    m.quad((x0, y0, base), (x0, y1, base), (x0, y1, ceil), (x0, y0, ceil), _m("plaster"), 0.35)
    m.quad((x1, y1, base), (x1, y0, base), (x1, y0, ceil), (x1, y1, ceil), _m("plaster"), 0.35)
    d0, d1 = -DOOR_W / 2, DOOR_W / 2
    m.quad((d0, y0, base), (x0, y0, base), (x0, y0, ceil), (d0, y0, ceil), _m("plaster"), 0.35)
    m.quad((x1, y0, base), (d1, y0, base), (d1, y0, ceil), (x1, y0, ceil), _m("plaster"), 0.35)
    m.quad((d1, y0, DOOR_H), (d0, y0, DOOR_H), (d0, y0, ceil), (d1, y0, ceil), _m("plaster"), 0.35)
    # a hearth block under the chimney
    m.box((3.4, 0.8, base), (4.4, y1, base + 1.1), _m("stone"), skip=("-z", "+y"))
    pos = np.concatenate(m.pos)
    hearth = np.array([3.9, 2.0, base + 0.8])
    d = np.linalg.norm(pos - hearth, axis=1)
    glow = np.clip(1.0 - d / 11.0, 0.0, 1.0)
    # BGRA: the stored colours before the client's fix (see formats.wmo.fixed_vertex_colours)
    rgb = np.stack([70 + 150 * glow, 60 + 110 * glow, 50 + 60 * glow], axis=1)
    bgra = np.empty((len(pos), 4), np.uint8)
    bgra[:, 0], bgra[:, 1], bgra[:, 2] = rgb[:, 2], rgb[:, 1], rgb[:, 0]
    bgra[:, 3] = np.round(40 + 60 * glow)
    m.col = [bgra]
    return m


def _basin_liquid() -> WmoLiquid:
    (tx0, ty0), _ = BASIN
    nx = ny = 1
    heights = np.full((ny + 1, nx + 1), BASIN_TOP - 0.12, np.float32)
    vb = np.zeros((ny + 1, nx + 1, 4), np.uint8)
    vb[..., 0] = 40     # flow / depth bytes of water vertices
    tiles = np.zeros((ny, nx), np.uint8)   # type 0: water, rendered
    return WmoLiquid(nx + 1, ny + 1, nx, ny, np.array([tx0, ty0, 0.0], np.float32), 0, heights, vb, tiles)


def building(doodad_paths=("World\\Generic\\Sample\\Rocks\\SampleRock01.mdx",)):
    """``(root, [groups])`` of the sample house."""
    ext = _exterior()
    v, n, uv, tri, mat, _ = ext.arrays()
    g0 = make_group(v, tri, mat, normals=n, uvs=uv, flags=GroupFlags.EXTERIOR | GroupFlags.EXTERIOR_LIT,
                    liquid=_basin_liquid(), group_liquid=1)
    inner = _interior()
    v, n, uv, tri, mat, col = inner.arrays()
    g1 = make_group(v, tri, mat, normals=n, uvs=uv, colours=col, flags=GroupFlags.INTERIOR)
    # int batches for the interior group (make_group files everything as exterior batches)
    g1.header["int_batches"], g1.header["ext_batches"] = g1.header["ext_batches"], 0
    mats = [{"texture1": TEXTURES[k], "blend": BLEND_OPAQUE,
             "flags": MaterialFlags.TWO_SIDED if k == "thatch" else 0} for k in MATERIALS]
    rock = doodad_paths[0]
    s45 = np.sin(np.pi / 8)
    doodads = [
        (rock, (2.4, -5.6, -0.2), (0.0, 0.0, s45, np.cos(np.pi / 8)), 0.8, (255, 255, 255, 255)),
        (rock, (3.3, -5.0, -0.3), (0.0, 0.0, -0.3, 0.954), 0.55, (255, 255, 255, 255)),
        (rock, (-5.2, 5.1, -0.3), (0.0, 0.0, 0.7, 0.714), 1.0, (255, 255, 255, 255)),
    ]
    root = make_root([g0, g1], mats, group_names=["outside", "room"], doodads=doodads,
                     doodad_sets=[("Set_$DefaultGlobal", 0, 2), ("Set_Yard", 2, 1)], ambient=(48, 52, 60, 255),
                     flags=MohdFlags.USE_LIQUID_TYPE_ID)
    return root, [g0, g1]


def _texture(kind: str, size: int = 128) -> np.ndarray:
    u = (np.arange(size) + 0.5) / size
    x, y = np.meshgrid(u, u)
    n = fbm(x * 8, y * 8, 3, octaves=4, salt=len(kind) * 7, period=8)
    if kind == "plaster":
        base, var = np.array([222, 210, 182]), 24
        v = n
    elif kind == "timber":
        grain = fbm(x * 2, y * 24, 5, octaves=3, salt=11, period=2)
        base, var = np.array([92, 62, 38]), 30
        v = 0.6 * grain + 0.4 * n
    elif kind == "thatch":
        strands = fbm(x * 32, y * 3, 9, octaves=3, salt=13, period=32)
        base, var = np.array([176, 146, 84]), 50
        v = 0.8 * strands + 0.2 * n
    elif kind == "stone":
        rows = (np.floor(y * 4) % 2) * 0.5
        cx, cy = (x * 4 + rows) % 1.0, (y * 4) % 1.0
        mortar = np.minimum(np.minimum(cx, 1 - cx), np.minimum(cy, 1 - cy)) < 0.05
        base, var = np.array([128, 124, 116]), 36
        v = np.where(mortar, -1.2, n)
    else:   # floor planks
        plank = np.floor(x * 6)
        seam = ((x * 6) % 1.0) < 0.06
        base, var = np.array([120, 84, 52]), 26
        v = np.where(seam, -1.4, fbm(x * 3, y * 20, 4, octaves=2, salt=17, period=3) + 0.15 * np.sin(plank * 2.3))
    rgb = np.clip(base[None, None, :] + var * v[..., None], 0, 255)
    out = np.empty((size, size, 4), np.uint8)
    out[..., :3] = rgb
    out[..., 3] = 255
    return out


def liquid_frame(kind: str, frame: int, size: int = LIQUID_TEXTURE_SIZE) -> np.ndarray:
    """Frame ``frame`` (0-based) of an animated liquid texture: noise drifting over the 30 frames."""
    u = (np.arange(size) + 0.5) / size
    x, y = np.meshgrid(u, u)
    phase = frame / 30.0
    a = fbm(x * 4 + phase, y * 4, 21, octaves=3, salt=3, period=4)
    b = fbm(x * 4, y * 4 - phase, 22, octaves=3, salt=5, period=4)
    v = 0.5 + 0.5 * (a + b)
    cols = {"water": ((38, 86, 100), (120, 170, 180)), "ocean": ((20, 58, 86), (90, 140, 170)),
            "magma": ((170, 40, 0), (255, 190, 60)), "slime": ((40, 90, 10), (120, 190, 40))}
    lo, hi = (np.asarray(c, np.float64) for c in cols[kind])
    rgb = lo + np.clip(v, 0, 1)[..., None] ** 1.5 * (hi - lo)
    out = np.empty((size, size, 4), np.uint8)
    out[..., :3] = np.clip(rgb, 0, 255)
    out[..., 3] = 255
    return out


def building_files(build: str) -> dict[str, bytes]:
    """The WMO root, its group files and its textures."""
    from wowgrass.formats.wmo import group_file_name

    root, groups = building()
    out = {WMO_PATH: write_wmo_root(root)}
    for i, g in enumerate(groups):
        out[group_file_name(WMO_PATH, i)] = write_wmo_group(g)
    enc = "dxt5" if build == "3.3.5" else "dxt1"
    for k, path in TEXTURES.items():
        out[path] = write_blp(_texture(k), enc)
    return out


def liquid_texture_files(build: str, kinds=("water",)) -> dict[str, bytes]:
    """The lake's 30 animation frames, under the names the build's client uses."""
    from wowgrass.formats.liquid import KIND_NAMES
    from wowgrass.game.liquid_types import CLASSIC_TEXTURES

    out = {}
    enc = "dxt5" if build == "3.3.5" else "dxt1"
    for kind in kinds:
        pattern = CLASSIC_TEXTURES[KIND_NAMES.index(kind)]
        for f in range(30):
            out[pattern % (f + 1)] = write_blp(liquid_frame(kind, f), enc)
    return out
