"""WMOs → glTF: each group one mesh (a primitive per MOBA batch, its MOMT texture and blending,
MOCV colours as COLOR_0), the doodad sets' M2s as instances.

``export_wmo`` writes one WMO in its own space (``wmo export``); :class:`WmoLibrary` writes each
WMO's meshes once into a builder so that the scene export can place them at every MODF record.
Colours follow the client's fix (:func:`wowgrass.formats.wmo.fixed_vertex_colours`) doubled as
its shader doubles them, clamped to glTF's 0..1.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pygltflib as g

from wowgrass.errors import FormatError, GameFileNotFound, UsageError
from wowgrass.formats.wmo import (
    BLEND_ALPHA_KEY, BLEND_OPAQUE, NO_MATERIAL, MaterialFlags, Wmo, fixed_vertex_colours, load_wmo,
)
from wowgrass.game.mapobjects import wmo_doodads

from .gltf import INSTANCING_MODES, GltfBuilder, MeshPart, Primitive, matrices_to_trs, to_gltf

log = logging.getLogger(__name__)


@dataclass
class WmoExportSummary:
    file: str = ""
    wmo: str = ""
    groups: list = field(default_factory=list)          # indices written
    groups_missing: list = field(default_factory=list)  # group files not found
    group_errors: dict = field(default_factory=dict)
    triangles: int = 0
    doodad_set: int = 0
    doodad_instances: int = 0
    missing_doodads: list = field(default_factory=list)
    missing_textures: list = field(default_factory=list)
    meshes: int = 0
    nodes: int = 0
    bytes: int = 0

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def group_part(wmo: Wmo, index: int, material: Callable[[int], int | None], name: str | None = None) -> MeshPart:
    """One group as a :class:`MeshPart`; ``material(momt_index)`` gives the builder's material."""
    grp = wmo.groups[index]
    uv = grp.uvs[0] if grp.uvs else None
    col = fixed_vertex_colours(wmo.root, grp)
    colours = None
    if col is not None:
        colours = np.concatenate([np.minimum(col[:, :3] / 127.5, 1.0), np.ones((len(col), 1))], axis=1)
    part = MeshPart(name or f"group {index:03d}", to_gltf(grp.vertices),
                    None if grp.normals is None else to_gltf(grp.normals), uv, colours=colours)
    for b, mat in zip(grp.batches, grp.batch_materials().tolist()):
        s, n = int(b["start_index"]), int(b["count"])
        if n and mat != NO_MATERIAL:
            part.primitives.append(Primitive(grp.indices[s:s + n].astype(np.uint32), material(mat)))
    return part


class WmoLibrary:
    """WMO groups, their materials and textures, written once into a :class:`GltfBuilder`."""

    def __init__(self, builder: GltfBuilder, models):
        self.b = builder
        self.models = models          # export.model_meshes.ModelLibrary: textures and M2s
        self.cache: dict = {}         # (wmo path lower) -> {group index: mesh}
        self.missing_textures: set = set()

    def material(self, wmo: Wmo, i: int) -> int | None:
        root = wmo.root
        if not 0 <= i < len(root.materials):
            return self.b.material("WMO missing material", None, colour=(0.6, 0.6, 0.6, 1.0))
        m = root.materials[i]
        tex_name = root.texture(m["texture1"])
        tex = self.models.texture(tex_name) if tex_name else None
        if tex is None and tex_name:
            self.missing_textures.add(tex_name)
        blend = int(m["blend"])
        alpha = g.OPAQUE if blend == BLEND_OPAQUE else (g.MASK if blend == BLEND_ALPHA_KEY else g.BLEND)
        colour = (1.0, 1.0, 1.0, 1.0) if tex is not None else (0.62, 0.58, 0.52, 1.0)
        return self.b.material(f"{Path((tex_name or 'untextured').replace(chr(92), '/')).stem}", tex, alpha=alpha,
                               double_sided=bool(m["flags"] & MaterialFlags.TWO_SIDED), colour=colour)

    def meshes(self, wmo: Wmo) -> dict[int, int]:
        key = (wmo.path or id(wmo)).lower() if isinstance(wmo.path, str) else id(wmo)
        if key not in self.cache:
            out = {}
            for i in wmo.present:
                part = group_part(wmo, i, lambda k: self.material(wmo, k), _group_label(wmo, i))
                if part.primitives:
                    out[i] = self.b.mesh(part)
            self.cache[key] = out
        return self.cache[key]


def _group_label(wmo: Wmo, i: int) -> str:
    name = wmo.group_name(i)
    return f"group {i:03d}" + (f" {name}" if name else "")


def export_wmo(wmo: Wmo, read: Callable[[str], bytes] | None, *, doodads: bool = True, doodad_set: int = 0,
               instancing: str = "ext") -> tuple[bytes, WmoExportSummary]:
    """The .glb bytes of one WMO (its own space: glTF +X = WMO +X, +Y up) and what went in."""
    from .model_meshes import ModelLibrary

    if instancing not in INSTANCING_MODES:
        raise UsageError(f"instancing must be one of {', '.join(INSTANCING_MODES)}")
    if not wmo.present:
        raise UsageError(f"{wmo.path}: none of its {len(wmo.groups)} group files could be read "
                         f"(missing: {', '.join(wmo.missing[:3])}{' ...' if len(wmo.missing) > 3 else ''})")
    b = GltfBuilder()
    models = ModelLibrary(b, read)
    lib = WmoLibrary(b, models)
    name = Path(str(wmo.path).replace("\\", "/")).stem
    s = WmoExportSummary(wmo=str(wmo.path), groups_missing=list(wmo.missing), group_errors=dict(wmo.errors),
                         doodad_set=doodad_set)
    root = b.node(name, extras={"wmo": str(wmo.path), "groups_missing": wmo.missing,
                                "wow_axes": "glTF +X = WMO +X, +Y up, +Z = WMO -Y"})
    for i, mesh in lib.meshes(wmo).items():
        b.node(_group_label(wmo, i), mesh=mesh, parent=root,
               extras={"group": i, "flags": wmo.groups[i].flags, "exterior": wmo.groups[i].is_exterior})
        s.groups.append(i)
        s.triangles += sum(int(bb["count"]) // 3 for bb in wmo.groups[i].batches)
    if doodads and len(wmo.root.doodads):
        missing = set()
        names, mats = wmo_doodads(wmo.root, np.eye(4), doodad_set)
        group = b.node("doodads", parent=root, extras={"doodad_set": doodad_set})
        keys = np.array([n.lower() for n in names])
        for key in sorted(set(keys.tolist())):
            sel = np.flatnonzero(keys == key)
            model = names[int(sel[0])]
            mesh = models.m2(model) if model else None
            if mesh is None:
                missing.add(model)
                continue
            cols = np.ascontiguousarray(mats[sel].transpose(0, 2, 1)).reshape(-1, 16)
            t, r, sc = matrices_to_trs(cols)
            b.instances(Path(model.replace("\\", "/")).stem, mesh, group, t, r, sc, instancing,
                        extras={"kind": "wmo doodad", "model": model})
            s.doodad_instances += len(sel)
        s.missing_doodads = sorted(missing)
    data = b.glb()
    s.missing_textures = sorted(lib.missing_textures)
    s.meshes, s.nodes, s.bytes = len(b.doc.meshes), len(b.doc.nodes), len(data)
    return data, s


def open_wmo(path: str, read: Callable[[str], bytes]) -> Wmo:
    """:func:`load_wmo` with the error a user gets when the root itself is not there."""
    try:
        return load_wmo(path, read)
    except (GameFileNotFound, FileNotFoundError) as exc:
        raise GameFileNotFound(f"WMO root {path}: {exc}") from None
    except FormatError:
        raise
