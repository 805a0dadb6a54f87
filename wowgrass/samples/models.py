"""Meshes of the sample world's models as numpy arrays (positions, normals, UVs, triangles).

Grass clumps are 2–3 vertical quads crossing at the origin (the real ``ElwGra*`` detail doodads
are built the same way), sized after the original client's size oracle: visible heights mostly
0.288–0.620 world units, ``ElwGra02`` the 1.593-unit outlier, against a 2.035-unit human.
Model space is Z up, the clump's foot at z = 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wowgrass.game.effects import DETAIL_DIR

HUMAN_PATH = "Character\\Human\\Male\\HumanMale.m2"
HUMAN_TEXTURE = "Character\\Human\\Male\\HumanMaleSkin00_00.blp"
HUMAN_HEIGHT = 2.035
ROCK_PATH = "World\\Generic\\Sample\\Rocks\\SampleRock01.m2"


@dataclass(frozen=True)
class GrassSpec:
    name: str           # ElwGra01 ...
    height: float       # world units, = visible height (the blade sheet reaches its top row)
    width: float
    quads: int          # 2 or 3 crossing quads
    blades: int         # blades drawn on the sheet
    tex_height: int     # sheet pixels (width 64)

    @property
    def model_path(self) -> str:
        return f"{DETAIL_DIR}{self.name}.m2"

    @property
    def texture_path(self) -> str:
        return f"{DETAIL_DIR}{self.name}.blp"


GRASS = (
    GrassSpec("ElwGra01", 0.420, 0.70, 3, 9, 64),
    GrassSpec("ElwGra02", 1.593, 1.10, 3, 7, 128),
    GrassSpec("ElwGra03", 0.288, 0.55, 2, 10, 64),
    GrassSpec("ElwGra04", 0.350, 0.60, 2, 8, 64),
    GrassSpec("ElwGra05", 0.500, 0.80, 3, 9, 64),
    GrassSpec("ElwGra06", 0.620, 0.85, 3, 11, 64),
    GrassSpec("ElwGra07", 0.460, 0.75, 2, 9, 64),
    GrassSpec("ElwGra08", 0.550, 0.70, 3, 8, 64),
)

# Unit directions of the crossing quads (exact constants: no trig at build time).
_DIRS = {
    2: np.array([[1.0, 0.0], [0.0, 1.0]]),
    3: np.array([[1.0, 0.0], [-0.5, 0.8660254037844386], [-0.5, -0.8660254037844386]]),
}


@dataclass
class Mesh:
    positions: np.ndarray   # (n, 3) f4
    normals: np.ndarray     # (n, 3) f4
    uvs: np.ndarray         # (n, 2) f4
    triangles: np.ndarray   # (m,) u2, 3 per face


def grass_clump(spec: GrassSpec) -> Mesh:
    """``spec.quads`` vertical quads through the origin, UV (0, 0) at the top-left of the sheet."""
    d = _DIRS[spec.quads]
    hw = spec.width / 2
    n = len(d)
    pos = np.zeros((n, 4, 3))
    pos[:, 0, :2] = -hw * d
    pos[:, 1, :2] = hw * d
    pos[:, 2, :2] = hw * d
    pos[:, 3, :2] = -hw * d
    pos[:, 2:, 2] = spec.height
    uv = np.tile(np.array([[0.0, 1.0], [1.0, 1.0], [1.0, 0.0], [0.0, 0.0]]), (n, 1, 1))
    base = (np.arange(n) * 4)[:, None]
    tris = (base + np.array([0, 1, 2, 0, 2, 3])[None, :]).ravel()
    normals = np.zeros((n * 4, 3))
    normals[:, 2] = 1.0     # grass is lit like the ground it stands on
    return Mesh(pos.reshape(-1, 3).astype(np.float32), normals.astype(np.float32),
                uv.reshape(-1, 2).astype(np.float32), tris.astype(np.uint16))


def _boxes(boxes) -> Mesh:
    """Axis-aligned boxes ``(x0, y0, z0, x1, y1, z1)``, 4 vertices per face with face normals."""
    pos, nrm, uvs, tris = [], [], [], []
    faces = [  # (normal, 4 corners as (x, y, z) picks of lo/hi: 0 = lo, 1 = hi)
        ((1, 0, 0), [(1, 0, 0), (1, 1, 0), (1, 1, 1), (1, 0, 1)]),
        ((-1, 0, 0), [(0, 1, 0), (0, 0, 0), (0, 0, 1), (0, 1, 1)]),
        ((0, 1, 0), [(1, 1, 0), (0, 1, 0), (0, 1, 1), (1, 1, 1)]),
        ((0, -1, 0), [(0, 0, 0), (1, 0, 0), (1, 0, 1), (0, 0, 1)]),
        ((0, 0, 1), [(0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 1, 1)]),
        ((0, 0, -1), [(0, 1, 0), (1, 1, 0), (1, 0, 0), (0, 0, 0)]),
    ]
    for b in boxes:
        lo, hi = np.array(b[:3]), np.array(b[3:])
        v_top = 1.0 - b[5] / HUMAN_HEIGHT   # sample the sheet by height: head skin, body cloth
        v_bot = 1.0 - b[2] / HUMAN_HEIGHT
        for normal, corners in faces:
            start = len(pos)
            for k, c in enumerate(corners):
                pos.append(np.where(np.array(c) == 1, hi, lo))
                nrm.append(normal)
                uvs.append((float(k in (1, 2)), v_top if k >= 2 else v_bot))
            tris += [start, start + 1, start + 2, start, start + 2, start + 3]
    return Mesh(np.array(pos, np.float32), np.array(nrm, np.float32), np.array(uvs, np.float32),
                np.array(tris, np.uint16))


def human_figure() -> Mesh:
    """A box figure 2.035 units tall (feet at z = 0), facing +X."""
    h = HUMAN_HEIGHT
    return _boxes([
        (-0.12, -0.27, 0.00, 0.12, -0.05, 0.95),   # legs
        (-0.12, 0.05, 0.00, 0.12, 0.27, 0.95),
        (-0.16, -0.32, 0.95, 0.16, 0.32, 1.62),    # torso
        (-0.10, -0.48, 0.92, 0.10, -0.33, 1.60),   # arms
        (-0.10, 0.33, 0.92, 0.10, 0.48, 1.60),
        (-0.06, -0.06, 1.62, 0.06, 0.06, 1.71),    # neck
        (-0.14, -0.13, 1.71, 0.14, 0.13, h),       # head
    ])


def rock() -> Mesh:
    """A lumpy boulder: a once-subdivided icosahedron with fixed radial noise, ~2.4 units wide."""
    p = 1.618033988749895
    v = [(-1, p, 0), (1, p, 0), (-1, -p, 0), (1, -p, 0), (0, -1, p), (0, 1, p), (0, -1, -p), (0, 1, -p),
         (p, 0, -1), (p, 0, 1), (-p, 0, -1), (-p, 0, 1)]
    f = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4), (11, 10, 2),
         (10, 7, 6), (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8), (3, 8, 9), (4, 9, 5),
         (2, 4, 11), (6, 2, 10), (8, 6, 7), (9, 8, 1)]
    verts = [np.array(x, np.float64) / np.linalg.norm(x) for x in v]
    mids: dict = {}

    def mid(a, b):
        key = (min(a, b), max(a, b))
        if key not in mids:
            m = verts[a] + verts[b]
            verts.append(m / np.linalg.norm(m))
            mids[key] = len(verts) - 1
        return mids[key]

    faces = []
    for a, b, c in f:
        ab, bc, ca = mid(a, b), mid(b, c), mid(c, a)
        faces += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
    unit = np.array(verts)
    r = 1.0 + 0.18 * np.random.default_rng(0x7C0C).uniform(-1, 1, len(unit))
    pos = unit * r[:, None] * np.array([1.25, 1.0, 0.75])
    pos[:, 2] += 0.35                                         # a third of it sunk into the ground
    uv = np.stack([pos[:, 0] * 0.5 + pos[:, 1] * 0.25, pos[:, 2] * 0.5], axis=1)
    return Mesh(pos.astype(np.float32), unit.astype(np.float32), uv.astype(np.float32),
                np.array(faces, np.uint16).ravel())
