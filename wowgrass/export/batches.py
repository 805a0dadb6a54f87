"""Which M2 batches an export writes (glTF, OBJ and the Blender import share it; no glTF library
needed, so the Blender extension imports it without pygltflib)."""

from __future__ import annotations

from wowgrass.formats.m2 import BlendMode


def face_batches(batches) -> list[tuple[int, object]]:
    """One ``(batch index, batch)`` per submesh's triangles: its first batch that writes depth
    (opaque or alpha-keyed), else its first. Further batches of the same triangles (an environment
    map's reflection, an additive glow) draw them again; exporting those too doubles every face
    (z-fighting in Blender; wow.export leaves them out too). OBJ and glTF exports both use this."""
    chosen: dict[tuple[int, int], tuple[int, object]] = {}
    for i, b in enumerate(batches):
        key = (b.index_start, b.index_count)
        if key not in chosen or (chosen[key][1].blend_mode > BlendMode.ALPHA_KEY >= b.blend_mode):
            chosen[key] = (i, b)
    return sorted(chosen.values(), key=lambda ib: ib[0])
