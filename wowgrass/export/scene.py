"""Tiles -> one glTF scene: terrain (baked texture), MDDF doodads and grass from the tiles' bundles.

Node tree: ``<map>`` (root) / ``tile C_R`` / ``terrain``, ``doodads`` / <model>, ``grass`` / <model>.
Each model's mesh and textures are written once and shared by every tile. Grass models the
data lacks (extracts often miss them; ``--dbc`` gives no models at all) get a straw-coloured
crossed-quad stand-in, so the placement still shows; doodads the data lacks are left out. Both
are listed in the summary. Vertex positions are relative to the scene origin (the centre of the
exported tiles on the ground plane), which keeps float32 precise; the root node carries the
origin (``extras.wow_origin``, and its translation with ``origin="world"``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from wowgrass.grass.bundle import read_bundle, unpack_instances
from wowgrass.errors import FormatError, GameFileNotFound, UsageError
from wowgrass.game.coords import chunk_of
from wowgrass.render.world.game_tiles import m2_name

from .gltf import (
    INSTANCING_MODES, NODES_LIMIT, GltfBuilder, MeshPart, Primitive, matrices_to_trs, merge_instances, to_gltf,
    yaw_quaternions,
)
from .model_meshes import ModelLibrary  # noqa: F401 - export.scene.ModelLibrary, as callers import it

log = logging.getLogger(__name__)

ORIGINS = ("centre", "world")


@dataclass
class TileInput:
    adt: object  # wowgrass.formats.adt.AdtTile
    bundle: Path | None  # the tile's baked grass (None: no grass)


@dataclass
class ExportSummary:
    file: str = ""
    tiles: list = field(default_factory=list)
    grass_instances: int = 0
    doodad_instances: int = 0
    meshes: int = 0
    nodes: int = 0
    liquid_cells: int = 0
    wmo_placements: int = 0
    wmo_doodad_instances: int = 0
    missing_wmos: list = field(default_factory=list)
    stand_ins: list = field(default_factory=list)  # grass models drawn as stand-ins
    missing_grass: list = field(default_factory=list)  # grass models left out (placeholders off)
    missing_doodads: list = field(default_factory=list)
    missing_textures: list = field(default_factory=list)
    merged_meshes: int = 0  # --instancing merged: grass meshes (one per chunk and model)
    warnings: list = field(default_factory=list)
    instancing: str = "ext"
    origin: list = field(default_factory=list)
    bytes: int = 0

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def check_texture_size(size: int) -> None:
    """A tile's baked texture: 16 chunks x 8 layer repeats divide it (128 .. 8192)."""
    if size % 128 or not 128 <= size <= 8192:
        raise UsageError(f"terrain texture size must be a multiple of 128 from 128 to 8192, got {size}")


def scene_origin(tiles: list[TileInput]) -> np.ndarray:
    """World (X, Y, 0) of the centre of the tiles' bounding box."""
    from .ground import tiles_origin

    return tiles_origin([(t.adt.col, t.adt.row) for t in tiles])


def export_scene(tiles: list[TileInput], read: Callable[[str], bytes] | None, *, map_name: str,
                 instancing: str = "ext", texture_size: int = 1024, origin: str = "centre",
                 doodads: bool = True, grass: bool = True, terrain: bool = True, placeholders: bool = True,
                 liquids: bool = True, wmos: bool = True,
                 progress: Callable[[str], None] | None = None, light=None) -> tuple[bytes, ExportSummary]:
    """The .glb bytes of ``tiles`` and what went into them. Grass models the data lacks are
    stand-in clumps (``placeholders``, as the viewer draws them) or left out."""
    if instancing not in INSTANCING_MODES:
        raise UsageError(f"instancing must be one of {', '.join(INSTANCING_MODES)}")
    if origin not in ORIGINS:
        raise UsageError(f"origin must be one of {', '.join(ORIGINS)}")
    check_texture_size(texture_size)
    if not tiles:
        raise UsageError("nothing to export: no tiles")
    b = GltfBuilder()
    lib = ModelLibrary(b, read)
    o = scene_origin(tiles)
    s = ExportSummary(instancing=instancing, origin=[float(v) for v in o])
    root = b.node(map_name, translation=to_gltf(o)[0] if origin == "world" else None,
                  extras={"wow_origin": s.origin, "wow_axes": "glTF +X north, +Y up, +Z east"})
    stand_ins, missing_doodads, missing_tex, missing_grass = set(), set(), set(), set()
    world_objects = _WorldObjects(b, lib, read, o, instancing) if (liquids or wmos) else None
    for t in tiles:
        col, row = t.adt.col, t.adt.row
        s.tiles.append([col, row])
        node = b.node(f"tile {col}_{row}", parent=root, extras={"tile": [col, row]})
        if world_objects is not None:
            world_objects.add_tile(t.adt, node, s, liquids=liquids, wmos=wmos)
        if terrain:
            textures = _layer_textures(t.adt, read)
            from .ground import export_terrain

            pos, nrm, uv, idx, image, missing = export_terrain(t.adt, textures, texture_size)
            missing_tex.update(missing)
            tex = b.texture(image, f"terrain {col}_{row}", clamp=True)
            mat = b.material(f"terrain {col}_{row}", tex)
            mesh = b.mesh(MeshPart(f"terrain {col}_{row}", to_gltf(pos - o), to_gltf(nrm), uv, [Primitive(idx, mat)]))
            b.node("terrain", mesh=mesh, parent=node)
        if doodads and len(t.adt.mddf) and t.adt.models:
            group = b.node("doodads", parent=node)
            from wowgrass.render.sources.doodads import mddf_matrices

            ids = t.adt.mddf["name_id"].astype(np.int64)
            ok = ids < len(t.adt.models)
            mats = mddf_matrices(t.adt.mddf[ok])
            for k in np.unique(ids[ok]).tolist():
                name = t.adt.models[k]
                mesh = lib.m2(name)
                if mesh is None:
                    missing_doodads.add(m2_name(name))
                    continue
                tr, rot, sc = matrices_to_trs(mats[ids[ok] == k])
                tr = tr - to_gltf(o)
                b.instances(Path(m2_name(name).replace("\\", "/")).stem, mesh, group, tr, rot, sc, instancing,
                            extras={"kind": "doodad", "model": m2_name(name)})
                s.doodad_instances += len(tr)
        if grass and t.bundle is not None:
            group = b.node("grass", parent=node)
            with read_bundle(t.bundle) as bundle:
                for m in bundle.models:
                    if len(m) == 0:
                        continue
                    stand_in = not m.info.present or (lib.m2_part(m.path) is None)
                    if stand_in and not placeholders:
                        missing_grass.add(m.path)
                        continue
                    if stand_in:
                        stand_ins.add(m.path)
                    pos, yaw, scale = unpack_instances(m.instances)
                    tr, rot, sc = to_gltf(pos - o), yaw_quaternions(yaw), np.repeat(scale[:, None], 3, axis=1)
                    stem = Path(m.path.replace("\\", "/")).stem
                    extras = {"kind": "grass", "model": m.path, "stand_in": stand_in}
                    if instancing == "merged":
                        part = lib.stand_in_part() if stand_in else lib.m2_part(m.path)
                        s.merged_meshes += _merged_grass(b, part, group, stem, pos, col, row, tr, rot, sc, extras)
                    else:
                        mesh = lib.stand_in() if stand_in else lib.m2(m.path)
                        b.instances(stem, mesh, group, tr, rot, sc, instancing, extras=extras)
                    s.grass_instances += len(m)
        if progress:
            progress(f"{col}_{row}")
    if light is not None:  # (SceneLight, info): the sun and the sky for the hour (export/daylight.py)
        from .daylight import add_light

        add_light(b, root, *light)
    data = b.glb()
    s.meshes, s.nodes, s.bytes = len(b.doc.meshes), len(b.doc.nodes), len(data)
    if s.nodes > NODES_LIMIT:
        s.warnings.append(nodes_warning(s.nodes, instancing))
    s.stand_ins, s.missing_doodads, s.missing_textures = sorted(stand_ins), sorted(missing_doodads), sorted(missing_tex)
    s.missing_grass = sorted(missing_grass)
    if world_objects is not None:
        s.missing_wmos = sorted(world_objects.missing)
        s.missing_doodads = sorted(set(s.missing_doodads) | world_objects.missing_doodads)
    return data, s


def nodes_warning(nodes: int, instancing: str) -> str:
    """What to say when an export has more nodes than importers handle well."""
    instead = ("--instancing merged (Blender: grass as one mesh per chunk and model) or ext (engines)"
               if instancing == "nodes" else "fewer tiles per file")
    return (f"{nodes:,} nodes, more than the {NODES_LIMIT:,} importers handle well (Blender takes minutes and "
            f"gigabytes for 160,000); use {instead}")


def chunk_index(pos: np.ndarray, col: int, row: int) -> np.ndarray:
    """MCNK index (IndexY*16+IndexX) of world positions in tile (col, row), clipped to the tile."""
    p = np.asarray(pos, np.float64)
    ix, iy = (np.clip(v, 0, 15) for v in chunk_of(p[:, 0], p[:, 1], col, row))
    return iy * 16 + ix


def _merged_grass(b, part, group, stem, pos, col, row, tr, rot, sc, extras) -> int:
    """One mesh per chunk of a model's instances, vertices pre-transformed; returns the meshes written."""
    chunk = chunk_index(pos, col, row)
    order = np.argsort(chunk, kind="stable")
    chunks, starts = np.unique(chunk[order], return_index=True)
    ends = np.append(starts[1:], len(order))
    for c, a, e in zip(chunks.tolist(), starts.tolist(), ends.tolist()):
        sel = order[a:e]
        name = f"{stem} chunk {c % 16}_{c // 16}"
        mesh = b.mesh(merge_instances(part, tr[sel], rot[sel], sc[sel], name))
        b.node(name, mesh=mesh, parent=group, extras={**extras, "chunk": c, "instances": len(sel), "merged": True})
    return len(chunks)


class _WorldObjects:
    """Each tile's water meshes and WMO placements (:mod:`.water`), WMOs shared across tiles."""

    def __init__(self, b, lib, read, origin, instancing):
        from wowgrass.game.liquid_types import LiquidTypes

        from .wmo_meshes import WmoLibrary

        self.b, self.lib, self.read, self.origin, self.instancing = b, lib, read, origin, instancing
        self.types = LiquidTypes.from_read(read)
        self.wlib = WmoLibrary(b, lib)
        self.cache: dict = {}
        self.seen: set = set()
        self.missing: set = set()
        self.missing_doodads: set = set()

    def add_tile(self, adt, node, s, *, liquids: bool, wmos: bool):
        from wowgrass.formats.wmo import group_liquid_type
        from wowgrass.render.world.liquid_tiles import adt_liquid_mesh, merge, wmo_liquid_mesh

        from .water import add_water, add_wmos, tile_wmos

        placed = tile_wmos(adt, self.read, self.cache, self.seen, self.missing) if wmos else []
        if liquids:
            meshes, _err = adt_liquid_mesh(adt, self.types, by_type=True)
            for _name, w, m, _d, _uid in placed:
                for gi in w.present:
                    grp = w.groups[gi]
                    if grp.liquid is None:
                        continue
                    tid = group_liquid_type(w.root, grp)
                    part = wmo_liquid_mesh(grp.liquid, m, self.types.get(tid).kind)
                    meshes[tid] = merge([meshes.get(tid), part]) if tid in meshes else part
            s.liquid_cells += add_water(self.b, self.lib, node, meshes, self.types, self.origin, self.read)
        if wmos:
            got = add_wmos(self.b, self.wlib, self.lib, node, placed, self.origin, self.instancing)
            s.wmo_placements += got["placements"]
            s.wmo_doodad_instances += got["doodads"]
            self.missing_doodads |= got["missing_doodads"]


def _layer_textures(adt, read) -> dict[str, np.ndarray]:
    out = {}
    if read is None:
        return out
    from wowgrass.formats.blp import BlpImage

    for name in adt.textures:
        try:
            out[name] = BlpImage.from_bytes(read(name), name).mip(0)
        except (GameFileNotFound, FileNotFoundError, FormatError) as exc:
            log.info("texture %s: %s", name, exc)
    return out
