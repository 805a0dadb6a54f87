"""Liquids and WMOs of exported tiles: a water mesh per tile and LiquidType (named for it), and
each WMO's groups written once with its placements as instances or nodes.

Water: the tile's MH2O/MCLQ layers of one LiquidType make one mesh (``water`` / ``<name> (id)``),
with a blended material in the kind's colour, or the LiquidType's first texture frame where the
data has it; the MLIQ of the tile's WMOs joins it in world space. WMOs: every group of a WMO is a
mesh written once (:class:`~wowgrass.export.wmo_meshes.WmoLibrary`); a tile's placements of it are
``wmos`` / ``<wmo>`` / ``group NNN`` nodes with EXT_mesh_gpu_instancing (or one node each), and
the doodad sets' M2s go under ``wmo doodads``. A WMO listed by several tiles (it spans them) is
written once, with the first tile that lists it.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pygltflib as g

from wowgrass.errors import FormatError, GameFileNotFound

from .gltf import MeshPart, Primitive, matrices_to_trs, to_gltf

log = logging.getLogger(__name__)


def _water_material(b, lib, types, type_id: int, kind: int, read) -> int:
    from wowgrass.game.liquid_types import KIND_COLOURS, kind_name

    t = types.get(type_id)
    tex = None
    frames = t.frame_paths(1)
    if frames and read is not None:
        tex = lib.texture(frames[0])
    r, gr, bl, a = KIND_COLOURS.get(kind, KIND_COLOURS[0])
    colour = (1.0, 1.0, 1.0, a) if tex is not None else (r, gr, bl, a)
    alpha = g.BLEND if a < 1.0 else g.OPAQUE
    return b.material(f"{kind_name(kind)}: {t.name}", tex, alpha=alpha, double_sided=True, colour=colour)


def add_water(b, lib, tile_node: int, meshes: dict, types, origin, read) -> int:
    """``meshes``: {LiquidType id: LiquidMesh} of one tile; returns the cells written."""
    if not any(m for m in meshes.values()):
        return 0
    group = b.node("water", parent=tile_node)
    cells = 0
    for type_id, mesh in sorted(meshes.items()):
        if not mesh:
            continue
        t = types.get(type_id)
        kind = int(mesh.vertices["kind"][0])
        mat = _water_material(b, lib, types, type_id, kind, read)
        up = np.tile(np.float32([0.0, 1.0, 0.0]), (len(mesh.vertices), 1))
        part = MeshPart(f"{t.name} ({type_id})", to_gltf(mesh.vertices["pos"] - origin), up,
                        mesh.vertices["uv"], [Primitive(mesh.indices, mat)])
        b.node(f"{t.name} ({type_id})", mesh=b.mesh(part), parent=group,
               extras={"kind": "liquid", "liquid_type": type_id, "cells": mesh.cells})
        cells += mesh.cells
    return cells


def tile_wmos(adt, read, cache: dict, seen: set, missing: set) -> list:
    """The tile's MODF placements not written yet: (path, Wmo, world matrix, doodad set, uid)."""
    from wowgrass.formats.wmo import load_wmo
    from wowgrass.game.mapobjects import modf_placements

    if not len(adt.modf) or read is None:
        return []
    p = modf_placements(adt)
    out = []
    for k, name in enumerate(p.names):
        uid = int(p.unique_id[k])
        if not name or uid in seen:
            continue
        seen.add(uid)
        key = name.lower()
        if key not in cache:
            try:
                cache[key] = load_wmo(name, read)
            except (GameFileNotFound, FileNotFoundError, FormatError) as exc:
                log.info("WMO %s: %s", name, exc)
                cache[key] = None
        w = cache[key]
        if w is None or not w.present:
            missing.add(name)
            continue
        out.append((name, w, p.matrices[k], int(p.doodad_set[k]), uid))
    return out


def add_wmos(b, wlib, models, tile_node: int, placements: list, origin, instancing: str) -> dict:
    """Write a tile's WMO placements; returns counts (placements, doodads) and doodads missing."""
    from wowgrass.game.mapobjects import wmo_doodads

    out = {"placements": 0, "doodads": 0, "missing_doodads": set()}
    if not placements:
        return out
    group = b.node("wmos", parent=tile_node)
    og = to_gltf(origin)[0]
    by_name: dict = {}
    for name, w, m, dset, uid in placements:
        by_name.setdefault(name, []).append((w, m, dset, uid))
    doodads: dict = {}
    for name, items in sorted(by_name.items()):
        w = items[0][0]
        meshes = wlib.meshes(w)
        node = b.node(Path(name.replace("\\", "/")).stem, parent=group,
                      extras={"kind": "wmo", "wmo": name, "unique_ids": [it[3] for it in items],
                              "groups_missing": w.missing})
        mats = np.stack([it[1] for it in items])
        cols = np.ascontiguousarray(mats.transpose(0, 2, 1)).reshape(-1, 16)
        t, r, s = matrices_to_trs(cols)
        t = t - og
        for gi, mesh in meshes.items():
            label = f"group {gi:03d}" + (f" {w.group_name(gi)}" if w.group_name(gi) else "")
            b.instances(label, mesh, node, t, r, s, instancing, extras={"kind": "wmo group", "group": gi})
        out["placements"] += len(items)
        for w_, m, dset, _uid in items:
            names, dm = wmo_doodads(w_.root, m, dset)
            for n, mm in zip(names, dm):
                doodads.setdefault(n, []).append(mm)
    if doodads:
        dnode = b.node("wmo doodads", parent=group)
        for n, mats in sorted(doodads.items()):
            mesh = models.m2(n) if n else None
            if mesh is None:
                out["missing_doodads"].add(n)
                continue
            cols = np.ascontiguousarray(np.stack(mats).transpose(0, 2, 1)).reshape(-1, 16)
            t, r, s = matrices_to_trs(cols)
            b.instances(Path(n.replace("\\", "/")).stem, mesh, dnode, t - og, r, s, instancing,
                        extras={"kind": "wmo doodad", "model": n})
            out["doodads"] += len(mats)
    return out
