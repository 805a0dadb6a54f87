"""Map objects in the world: MODF (WMO) and MDDF (M2) placement transforms, a WMO's doodad sets.

Pure numpy. Placements use the file's own axes: world ``X = ZEROPOINT - p[2]``, ``Y = ZEROPOINT -
p[0]``, ``Z = p[1]`` (formats.md section 0), and the rotation is three angles in degrees about
the file's axes. The model matrix is the client's composition (as WebWowViewerCpp and noggit3
build it): file→world, translate, mirror (−1, 1, −1), then ``Ry(rot[1] − 270°) · Rz(−rot[0]) ·
Rx(rot[2] − 90°)``, then the scale. With the tilts at zero this is a turn of ``rot[1] + 180°``
about world Z: an object with heading 0 faces world −X (south).

MODF's extents are a world bounding box in the file's axes; :func:`modf_bounds` converts them.
From Legion on, MODF flag 0x4 says its last u16 is a scale (1024 = 1.0); 1.12 – 3.3.5 files keep
it 0 (scale 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wowgrass.formats.adt import ZEROPOINT

MODF_HAS_SCALE = 0x4

# file axes -> world: X = ZP - f2, Y = ZP - f0, Z = f1
_FILE_TO_WORLD = np.array([[0.0, 0.0, -1.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])


def _rot(axis: int, deg: np.ndarray) -> np.ndarray:
    a = np.radians(np.asarray(deg, np.float64))
    c, s = np.cos(a), np.sin(a)
    m = np.zeros(a.shape + (3, 3))
    i, j = [(1, 2), (2, 0), (0, 1)][axis]
    m[..., axis, axis] = 1
    m[..., i, i], m[..., i, j], m[..., j, i], m[..., j, j] = c, -s, s, c
    return m


def placement_matrices(position, rotation, scale=1.0) -> np.ndarray:
    """(n, 4, 4) float64 world matrices (column vectors) of placements in the file's axes."""
    p = np.asarray(position, np.float64).reshape(-1, 3)
    r = np.asarray(rotation, np.float64).reshape(-1, 3)
    s = np.broadcast_to(np.asarray(scale, np.float64), (len(p),))
    mirror = np.diag([-1.0, 1.0, -1.0])
    rot = _FILE_TO_WORLD @ mirror @ _rot(1, r[:, 1] - 270) @ _rot(2, -r[:, 0]) @ _rot(0, r[:, 2] - 90)
    m = np.zeros((len(p), 4, 4))
    m[:, :3, :3] = rot * s[:, None, None]
    m[:, :3, 3] = p @ _FILE_TO_WORLD.T + [ZEROPOINT, ZEROPOINT, 0.0]
    m[:, 3, 3] = 1
    return m


def file_to_world(points) -> np.ndarray:
    """(n, 3) positions in the file's axes (MDDF/MODF) → world."""
    return np.asarray(points, np.float64).reshape(-1, 3) @ _FILE_TO_WORLD.T + [ZEROPOINT, ZEROPOINT, 0.0]


def world_to_file(points) -> np.ndarray:
    """(n, 3) world positions → the file's axes (the inverse of :func:`file_to_world`)."""
    return (np.asarray(points, np.float64).reshape(-1, 3) - [ZEROPOINT, ZEROPOINT, 0.0]) @ _FILE_TO_WORLD


def modf_scale(modf: np.ndarray) -> np.ndarray:
    """(n,) scale of MODF records: the last u16 / 1024 where flag 0x4 says so, else 1."""
    has = ((modf["flags"] & MODF_HAS_SCALE) != 0) & (modf["pad"] != 0)
    return np.where(has, modf["pad"] / 1024.0, 1.0)


def modf_matrices(modf: np.ndarray) -> np.ndarray:
    """(n, 4, 4) world matrices of MODF records."""
    return placement_matrices(modf["position"], modf["rotation"], modf_scale(modf))


def modf_bounds(modf: np.ndarray) -> np.ndarray:
    """(n, 2, 3) world (min, max) boxes from MODF extents (stored in the file's axes)."""
    e = np.asarray(modf["extents"], np.float64).reshape(-1, 2, 3)
    a = file_to_world(e[:, 0]).reshape(-1, 3)
    b = file_to_world(e[:, 1]).reshape(-1, 3)
    return np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1)


def transformed_bounds(matrices: np.ndarray, bbox) -> np.ndarray:
    """(n, 2, 3) world boxes of a local ``bbox`` (2, 3) under each matrix (its 8 corners)."""
    bb = np.asarray(bbox, np.float64).reshape(2, 3)
    corners = np.array([[bb[i, 0], bb[j, 1], bb[k, 2]] for i in (0, 1) for j in (0, 1) for k in (0, 1)])
    m = np.asarray(matrices, np.float64).reshape(-1, 4, 4)
    pts = corners[None] @ m[:, :3, :3].transpose(0, 2, 1) + m[:, None, :3, 3]
    return np.stack([pts.min(axis=1), pts.max(axis=1)], axis=1)


@dataclass
class ModfPlacement:
    """The MODF records of one tile, resolved."""

    names: list          # WMO path per record ('' where the name id is out of range)
    matrices: np.ndarray  # (n, 4, 4) world
    bounds: np.ndarray    # (n, 2, 3) world, from the extents
    doodad_set: np.ndarray
    name_set: np.ndarray
    unique_id: np.ndarray
    scale: np.ndarray


def modf_placements(adt) -> ModfPlacement:
    m = adt.modf
    ids = m["name_id"].astype(np.int64)
    names = [adt.wmos[i] if 0 <= i < len(adt.wmos) else "" for i in ids.tolist()]
    return ModfPlacement(names, modf_matrices(m), modf_bounds(m), m["doodad_set"].astype(np.int64),
                         m["name_set"].astype(np.int64), m["unique_id"].astype(np.int64), modf_scale(m))


def modf_summary(adt) -> dict:
    """What ``adt info`` prints about a tile's WMO placements."""
    p = modf_placements(adt)
    per_name: dict = {}
    for n in p.names:
        per_name[n] = per_name.get(n, 0) + 1
    out = []
    for k in range(len(p.names)):
        pos = p.matrices[k, :3, 3]
        out.append({"wmo": p.names[k], "unique_id": int(p.unique_id[k]), "position": [float(v) for v in pos],
                    "rotation": [float(v) for v in adt.modf["rotation"][k]], "doodad_set": int(p.doodad_set[k]),
                    "name_set": int(p.name_set[k]), "scale": float(p.scale[k]), "flags": int(adt.modf["flags"][k]),
                    "bounds": {"min": [float(v) for v in p.bounds[k, 0]], "max": [float(v) for v in p.bounds[k, 1]]}})
    return {"count": len(p.names), "wmos": len(per_name), "bad_name_ids": sum(1 for n in p.names if not n),
            "placements": out}


def wmo_doodads(root, wmo_matrix: np.ndarray, doodad_set: int = 0) -> tuple[list[str], np.ndarray]:
    """The M2s of a placed WMO's doodad set: (model paths, (n, 4, 4) world matrices)."""
    from wowgrass.formats.wmo import doodad_matrices, model_path

    idx = root.doodad_set_indices(doodad_set)
    names = [model_path(root.doodad_name(i) or "") for i in idx.tolist()]
    local = doodad_matrices(root, idx)
    return names, np.asarray(wmo_matrix, np.float64) @ local
