"""``wowgrass m2``: inspect M2 models and export them to Wavefront OBJ (+ MTL + PNG textures)."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import click
import numpy as np

from wowgrass.cli.common import (GameOrDiskFiles, echo_json, game_file_data_option, json_option, note,
                                 output_path, plural)
from wowgrass.errors import GameFileNotFound, UsageError

data_opt = game_file_data_option("MODEL", "World\\NoDXT\\Detail\\ElwGra01.m2")
skin_opt = click.option("--skin", "skin", type=click.IntRange(0, 3), default=0, show_default=True,
                        help="Level of detail of a v264 model: <name>0N.skin (0, the finest, is what the game "
                             "draws up close).")
log = logging.getLogger("wowgrass.cli.m2")


def skins_present(model: str, src, count: int = 4) -> list[str]:
    """The ``.skin`` files of ``model`` that ``src`` has (levels of detail 00 .. 03)."""
    from wowgrass.formats.m2 import skin_path

    found = []
    for i in range(count):
        try:
            src.read(skin_path(model, i))
        except GameFileNotFound:
            continue
        found.append(skin_path(model, i))
    return found


def load_model(model: str, data_path, *, need_view: bool, skin: int = 0):
    """The model and its files; a v264 model's view from its ``skin``-th .skin (an error naming the
    skins present when that one is absent and ``need_view``, else the header alone and a note)."""
    from wowgrass.formats.m2 import M2Model, skin_path

    src = GameOrDiskFiles(model, data_path)
    data = src.read(model)
    try:
        m = M2Model.from_bytes(data, model, read=src.read, skin_index=skin)
        if m.skin_path:
            log.info("read %s (view %d)", m.skin_path, skin)
        return m, src
    except GameFileNotFound:
        m = M2Model.from_bytes(data, model)
        present = skins_present(model, src, max(4, m.view_count))
        names = ", ".join(Path(p.replace("\\", "/")).name for p in present)
        why = (f"{skin_path(model, skin)} not found; "
               + (f"the skins present: {names} (--skin N picks a level of detail, 0 the finest)" if present
                  else "no .skin of this model is there"))
        if need_view:
            raise GameFileNotFound(why) from None
        note(f"note: {why}")
        return m, src


@click.group()
def m2():
    """Inspect and export M2 models (versions 256–264)."""


@m2.command()
@click.argument("model")
@data_opt
@skin_opt
@json_option
def info(model, data_path, skin, as_json):
    """Print an M2's header, view 0, textures and materials.

    MODEL is a file, or a game path with --data. A version-264 model's view is read from
    <name>00.skin beside it; without it the header is still shown.
    """
    m, _src = load_model(model, data_path, need_view=False, skin=skin)
    out = m.info()
    out = {"file": out.pop("path"), **out}   # docs/cli.md: `file` is the file a command read
    out["view"] = out.pop("view0")   # the view --skin picked (0: the finest)
    out["view_index"] = skin
    if m.view is not None:
        rm = m.render_mesh()
        out["z_min"], out["z_max"] = rm.z_min, rm.z_max
    if as_json:
        echo_json(out)
        return
    click.echo(f"{model}: M2 version {m.version}, name {m.name!r}, global flags 0x{m.global_flags:X}")
    click.echo(f"  vertices {len(m.vertices)}, views {m.view_count}, bones {out['bones']}, "
               f"animations {out['animations']}")
    click.echo("  bbox min ({:.4f}, {:.4f}, {:.4f})".format(*m.bbox_min)
               + "  max ({:.4f}, {:.4f}, {:.4f})".format(*m.bbox_max) + f"  radius {m.radius:.4f}")
    v0 = out["view"]
    if v0 is None:
        click.echo(f"  view {skin}: not loaded (its .skin was not found)")
    else:
        src = f" from {v0['skin']}" if v0["skin"] else " (inline)"
        click.echo(f"  view {skin}{src}: {v0['indices']} indices, {v0['triangle_indices']} triangle indices "
                   f"({v0['triangles']} triangles), {v0['submeshes']} submeshes, z {out['z_min']:.4f}..{out['z_max']:.4f}")
        for i, b in enumerate(v0["batches"]):
            mat = out["materials"][b["material"]] if out["materials"] else {"blend": 0, "flags": 0}
            click.echo(f"    batch {i}: submesh {b['submesh']}, blend {mat['blend']}, flags 0x{mat['flags']:X}, "
                       f"texture {b['texture'] or '(replaceable)'}")
    for i, t in enumerate(m.textures):
        click.echo(f"  texture {i}: type {t.type}, flags 0x{t.flags:X}, {t.filename or '(replaceable, no file name)'}")


FORMATS = {"gltf": (".glb",), "obj": (".obj",)}


@m2.command()
@click.argument("model")
@data_opt
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True,
              help="The file to write: .glb (glTF binary) or .obj.")
@click.option("--format", "fmt", type=click.Choice(list(FORMATS)), default=None,
              help="gltf: one .glb with its textures inside; obj: .obj + .mtl + PNG textures "
                   "(default: from the suffix of -o).")
@click.option("--texture", "texture_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="A BLP to use for batches whose texture has no file name (replaceable textures).")
@click.option("--no-textures", is_flag=True, help="Write the geometry only (no materials' images).")
@skin_opt
@json_option
def export(model, data_path, output, fmt, texture_file, no_textures, skin, as_json):
    """Export view 0 of an M2 as glTF 2.0 binary (.glb) or Wavefront OBJ (with an MTL and PNGs).

    Textures are looked up in --data, or next to the model file. Both formats are written Y-up
    (WoW's Z-up model space turned as most tools expect: glTF +X = model +X, +Y up).
    """
    suffix = Path(output).suffix.lower()
    if fmt is None:
        fmt = next((k for k, v in FORMATS.items() if suffix in v), None)
        if fmt is None:
            raise UsageError(f"-o {output}: give a .glb or .obj file name, or --format gltf|obj")
    out = output_path(output, FORMATS[fmt])
    m, src = load_model(model, data_path, need_view=True, skin=skin)
    if fmt == "gltf":
        summary = _export_gltf(m, src, out, texture_file, no_textures)
    else:
        summary = _export_obj(m, src, out, texture_file, no_textures)
    summary = {"file": str(out), "format": fmt, "model": model, "skin": m.skin_path, **summary}
    if as_json:
        echo_json(summary)
    else:
        note(f"wrote {out} ({plural(summary['vertex_count'], 'vertex', 'vertices')}, "
             f"{plural(summary['triangle_count'], 'triangle')}, {plural(summary['texture_count'], 'texture')})")


def _no_map(texture: str, batch: int, why: str) -> None:
    note(f"warning: texture {texture} {why}; batch {batch} has no map")


def _export_gltf(m, src, out, texture_file, no_textures):
    from wowgrass.export.gltf import GltfBuilder
    from wowgrass.export.model_meshes import face_batches
    from wowgrass.export.scene import ModelLibrary
    from wowgrass.fileio import write_atomic

    b = GltfBuilder()
    lib = ModelLibrary(b, None if no_textures else src.read)
    override = None
    if texture_file and not no_textures:
        from wowgrass.formats.blp import BlpImage

        override = b.texture(BlpImage.from_bytes(Path(texture_file).read_bytes(), texture_file).mip(0), Path(texture_file).name)
    part = lib.part(m, override)
    triangles = sum(len(p.indices) for p in part.primitives) // 3
    extras = {"model": m.path, "name": m.name, "version": m.version}
    if len(part.positions) and triangles:
        b.node(part.name, mesh=b.mesh(part), extras=extras)
    else:   # particle or ribbon emitters only (spell effects): a node to place, no empty mesh
        hdr = m.header
        extras.update(particle_emitters=int(hdr["particle_emitters"][0]), ribbon_emitters=int(hdr["ribbon_emitters"][0]))
        b.node(part.name, extras=extras)
        note(f"warning: {m.path or m.name} has no geometry (particle emitters {extras['particle_emitters']}, "
             f"ribbon emitters {extras['ribbon_emitters']}): wrote a node without a mesh")
    for i, batch in face_batches(m.render_mesh().batches):   # as the OBJ export says it
        if batch.texture in lib.missing:
            _no_map(batch.texture, i, lib.missing[batch.texture])
    data = b.glb()
    write_atomic(out, data)
    textures = sum(t is not None for t in lib.textures.values()) + (override is not None)
    return {"vertex_count": len(part.positions) if triangles else 0, "triangle_count": triangles,
            "texture_count": textures, "files": [str(out)]}


def _export_obj(m, src, out, texture_file, no_textures):
    """The .obj, its .mtl and PNGs; a write that fails (full disk) takes back the files written before it."""
    from wowgrass.errors import OutputError
    from wowgrass.fileio import write_atomic as write_one

    written: list[Path] = []

    def write_atomic(path, data):
        write_one(path, data)
        written.append(Path(path))

    try:
        summary = _write_obj(m, src, out, texture_file, no_textures, write_atomic)
        summary["files"] = [str(p) for p in written]
        if not summary["triangle_count"]:
            note(f"warning: {m.path or m.name} has no geometry (particle or ribbon emitters only): the OBJ has no faces")
        return summary
    except OutputError:
        for p in written:
            p.unlink(missing_ok=True)
        raise


def _write_obj(m, src, out, texture_file, no_textures, write_atomic):
    from wowgrass.export.model_meshes import face_batches
    from wowgrass.formats.blp import BlpImage

    rm = m.render_mesh()
    faces = face_batches(rm.batches)
    stem = out.stem
    mtl_lines, material_names, pngs = [], [], {}
    if not no_textures:
        for i, b in faces:
            name = f"batch{i}"
            material_names.append(name)
            png_name = None
            tex = b.texture
            try:
                if tex:
                    blob = src.read(tex)
                    key = tex
                elif texture_file:
                    blob, key = Path(texture_file).read_bytes(), texture_file
                else:
                    blob = None
                if blob is not None:
                    if key not in pngs:
                        img = BlpImage.from_bytes(blob, key)
                        png_name = f"{stem}_{Path(key.replace(chr(92), '/')).stem}.png"
                        buf = io.BytesIO()
                        img.image(0).save(buf, "PNG")
                        write_atomic(out.parent / png_name, buf.getvalue())
                        pngs[key] = png_name
                    png_name = pngs[key]
            except GameFileNotFound:
                _no_map(tex, i, "not found")
            mtl_lines += [f"newmtl {name}", "Kd 1.0 1.0 1.0", "illum 1"]
            if png_name:
                mtl_lines += [f"map_Kd {png_name}"]
                if b.blend_mode != 0:
                    mtl_lines += [f"map_d {png_name}"]
            mtl_lines.append("")
    write_atomic(out, _obj_text(rm, faces, f"{stem}.mtl" if mtl_lines else None, material_names).encode())
    if mtl_lines:
        write_atomic(out.with_suffix(".mtl"), "\n".join(mtl_lines).encode())
    return {"vertex_count": len(rm.positions), "triangle_count": len(rm.indices) // 3, "texture_count": len(pngs)}


def _obj_text(rm, faces, mtl_name, material_names) -> str:
    f = io.StringIO()
    f.write("# exported by wowgrass m2 export (Y up)\n")
    if mtl_name:
        f.write(f"mtllib {mtl_name}\n")
    p = rm.positions
    np.savetxt(f, np.stack([p[:, 0], p[:, 2], -p[:, 1]], 1), fmt="v %.6f %.6f %.6f")
    uv = rm.uv0
    np.savetxt(f, np.stack([uv[:, 0], 1.0 - uv[:, 1]], 1), fmt="vt %.6f %.6f")
    nrm = rm.normals
    np.savetxt(f, np.stack([nrm[:, 0], nrm[:, 2], -nrm[:, 1]], 1), fmt="vn %.6f %.6f %.6f")
    for k, (i, b) in enumerate(faces):
        f.write(f"g batch{i}\n")
        if material_names:
            f.write(f"usemtl {material_names[k]}\n")
        tri = rm.indices[b.index_start:b.index_start + b.index_count].astype(np.int64).reshape(-1, 3) + 1
        if len(tri):
            np.savetxt(f, np.repeat(tri, 3, axis=1), fmt="f %d/%d/%d %d/%d/%d %d/%d/%d")
    if not rm.batches and len(rm.indices):
        tri = rm.indices.astype(np.int64).reshape(-1, 3) + 1
        np.savetxt(f, np.repeat(tri, 3, axis=1), fmt="f %d/%d/%d %d/%d/%d %d/%d/%d")
    return f.getvalue()

