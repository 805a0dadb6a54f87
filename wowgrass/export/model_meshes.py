"""M2 meshes and BLP textures for glTF exports, each written once into a builder (the scene
export, ``m2 export`` and ``wmo export`` share it)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable

import pygltflib as g

from wowgrass.errors import FormatError, GameFileNotFound, UsageError
from wowgrass.formats.m2 import BlendMode, RenderFlags
from wowgrass.render.world.game_tiles import m2_name

from .batches import face_batches  # noqa: F401 - model_meshes.face_batches, as callers import it
from .gltf import GltfBuilder, MeshPart, Primitive, to_gltf

log = logging.getLogger(__name__)


class ModelLibrary:
    """M2 meshes and BLP textures written once into a :class:`GltfBuilder`. ``missing`` holds why
    each texture that could not be written failed (name -> reason), for a command to report."""

    def __init__(self, builder: GltfBuilder, read: Callable[[str], bytes] | None):
        self.b, self.read = builder, read
        self.meshes: dict[str, int | None] = {}
        self.textures: dict[str, int | None] = {}
        self.missing: dict[str, str] = {}
        self.parts: dict[str, MeshPart | None] = {}  # CPU meshes (merged grass copies them)

    def texture(self, name: str | None) -> int | None:
        if not name or self.read is None:
            return None
        key = name.lower()
        if key not in self.textures:
            from wowgrass.formats.blp import BlpImage

            try:
                rgba = BlpImage.from_bytes(self.read(name), name).mip(0)
                self.textures[key] = self.b.texture(rgba, name)
            except (GameFileNotFound, FileNotFoundError, FormatError) as exc:
                log.info("texture %s: %s", name, exc)
                self.textures[key] = None
                self.missing[name] = "not found" if isinstance(exc, (GameFileNotFound, FileNotFoundError)) \
                    else f"unreadable ({exc})"
        return self.textures[key]

    def m2_part(self, path: str, texture_override: int | None = None) -> MeshPart | None:
        """An M2's CPU mesh (its textures and materials written), without writing the mesh itself:
        merged grass copies it. None when the data lacks it or it has no view."""
        key = m2_name(path).lower()
        if key not in self.parts:
            part = None
            if self.read is not None:
                from wowgrass.formats.m2 import M2Model

                try:
                    model = M2Model.from_bytes(self.read(m2_name(path)), m2_name(path), read=self.read)
                    part = self.part(model, texture_override)
                except (GameFileNotFound, FileNotFoundError, FormatError, UsageError) as exc:
                    log.info("model %s: %s", path, exc)
            self.parts[key] = part
        return self.parts[key]

    def m2(self, path: str, texture_override: int | None = None) -> int | None:
        """The mesh index of an M2 (None when the data lacks it, it has no view or no triangles)."""
        key = m2_name(path).lower()
        if key not in self.meshes:
            part = self.m2_part(path, texture_override)
            empty = part is None or not len(part.positions) or not any(len(p.indices) for p in part.primitives)
            self.meshes[key] = None if empty else self.b.mesh(part)   # (particles only: no mesh is valid glTF)
        return self.meshes[key]

    def part(self, model, texture_override: int | None = None) -> MeshPart:
        """An M2's view 0 as a :class:`MeshPart`: one primitive per batch that draws its own
        triangles (:func:`face_batches`), its texture and blending."""
        rm = model.render_mesh()
        name = Path(model.path.replace("\\", "/")).stem if model.path else model.name
        part = MeshPart(name, to_gltf(rm.positions), to_gltf(rm.normals), rm.uv0)
        for b in [b for _, b in face_batches(rm.batches) if b.index_count] or [None]:
            if b is None:  # no batches: the whole index list, untextured
                part.primitives.append(Primitive(rm.indices, self.b.material(name, None)))
                continue
            tex = self.texture(b.texture) if b.texture else texture_override
            alpha = g.OPAQUE if b.blend_mode == BlendMode.OPAQUE else (
                g.MASK if b.blend_mode == BlendMode.ALPHA_KEY else g.BLEND)
            mat = self.b.material(f"{name} {b.texture or 'untextured'}", tex, alpha=alpha,
                                  double_sided=bool(b.render_flags & RenderFlags.TWO_SIDED))
            part.primitives.append(Primitive(rm.indices[b.index_start:b.index_start + b.index_count], mat))
        return part

    def stand_in_part(self) -> MeshPart:
        """The crossed-quad clump the viewer draws for a grass model the data lacks (CPU mesh)."""
        if "<stand-in>" not in self.parts:
            from wowgrass.render.gl.meshes import crossed_quads, placeholder_texture

            q = crossed_quads()
            tex = self.b.texture(placeholder_texture(q.texture), "stand-in blades")
            mat = self.b.material("grass stand-in", tex, alpha=g.MASK, double_sided=True)
            self.parts["<stand-in>"] = MeshPart("grass stand-in", to_gltf(q.positions), to_gltf(q.normals), q.uvs,
                                                [Primitive(q.indices, mat)])
        return self.parts["<stand-in>"]

    def stand_in(self) -> int:
        """The stand-in clump's mesh, written once."""
        if "<stand-in>" not in self.meshes:
            self.meshes["<stand-in>"] = self.b.mesh(self.stand_in_part())
        return self.meshes["<stand-in>"]
