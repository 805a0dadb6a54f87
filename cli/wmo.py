"""``wowgrass wmo``: inspect WMO world map objects and export them to glTF."""

from __future__ import annotations

from pathlib import Path

import click

from wowgrass.cli.common import (GameOrDiskFiles, echo_json, game_file_data_option, json_option, note,
                                 output_path, plural)

data_opt = game_file_data_option("FILE", "World\\wmo\\Azeroth\\Buildings\\Inn\\Inn.wmo")


def _load(file, data_path):
    from wowgrass.export.wmo_meshes import open_wmo
    from wowgrass.formats.wmo import WmoGroup, sniff_group

    src = GameOrDiskFiles(file, data_path)
    head = src.read(file)
    if sniff_group(head[:16]):
        g = WmoGroup.from_bytes(head, file)
        return None, g, src
    return open_wmo(file, src.read), None, src


@click.group()
def wmo():
    """Inspect and export WMO world map objects (version 17: 1.12 – 3.3.5)."""


@wmo.command()
@click.argument("file")
@data_opt
@json_option
def info(file, data_path, as_json):
    """Print a WMO: groups present and missing, vertices, triangles, batches, materials, textures,
    doodad sets, bounding box.

    FILE is a root .wmo; its group files (<name>_000.wmo ...) are read beside it or from --data,
    and the ones that are missing are listed. A group file given alone is described alone.
    """
    w, group, _src = _load(file, data_path)
    if group is not None:
        out = {"file": file, "kind": "group", **group.info()}
        if as_json:
            echo_json(out)
            return
        click.echo(f"{file}: WMO group (give the root .wmo for the whole object)")
        _echo_group(out)
        return
    out = {"kind": "root", **w.info()}
    if as_json:
        echo_json(out)
        return
    h = out["header"]
    bb = out["bbox"]
    click.echo(f"{file}: WMO v{out['version']} root, {plural(out['groups'], 'group')} "
               f"({len(out['groups_present'])} present, {len(out['groups_missing'])} missing"
               + (f", {len(out['group_errors'])} unreadable" if out["group_errors"] else "") + ")")
    click.echo(f"  {plural(out['vertices'], 'vertex', 'vertices')}, {_triangles(out)}, "
               f"{plural(out['batches'], 'batch', 'batches')} in the groups present")
    click.echo(f"  materials {len(out['materials'])}, textures {len(out['textures'])}, portals {h['portals']}, "
               f"lights {h['lights']}, fogs {out['fogs']}, MOHD flags 0x{h['flags']:X}")
    click.echo("  bbox min ({:.3f}, {:.3f}, {:.3f})".format(*bb["min"])
               + "  max ({:.3f}, {:.3f}, {:.3f})".format(*bb["max"]))
    click.echo(f"  doodads: {out['doodads']} placements of {out['doodad_models']} models"
               + (f" (MOHD says {h['doodads']})" if h["doodads"] != out["doodads"] else ""))
    for s in out["doodad_sets"]:
        click.echo(f"    set {s['index']} {s['name']!r}: {s['count']} doodads from {s['start']}")
    for gi in out["group_info"]:
        if gi is not None:
            click.echo(f"  group {gi['index']:03d} {gi['name'] or ''}".rstrip() + ":")
            _echo_group(gi, indent="    ")
    if out["groups_missing"]:
        click.echo(f"  missing group files ({len(out['groups_missing'])}): " + ", ".join(
            Path(m.replace("\\", "/")).name for m in out["groups_missing"]))
    for name, why in out["group_errors"].items():
        click.echo(f"  unreadable group {name}: {why}")
    click.echo(f"  textures ({len(out['textures'])}):")
    for t in out["textures"]:
        click.echo(f"    {t}")


def _triangles(d: dict) -> str:
    """``1,228 triangles (672 rendered, 556 collision only)``: an export writes the rendered ones."""
    text = plural(d["triangles"], "triangle")
    if d["rendered_triangles"] != d["triangles"]:
        other = d["triangles"] - d["rendered_triangles"] - d["collision_triangles"]
        text += (f" ({d['rendered_triangles']:,} rendered, {d['collision_triangles']:,} collision only"
                 + (f", {other:,} in no batch" if other else "") + ")")
    return text


def _echo_group(gi: dict, indent: str = "  ") -> None:
    side = "exterior" if gi["exterior"] else ("interior" if gi["interior"] else "neither exterior nor interior")
    split = gi["batch_split"]
    click.echo(f"{indent}{side}, flags 0x{gi['flags']:X}: {plural(gi['vertices'], 'vertex', 'vertices')}, "
               f"{gi['indices']:,} indices ({_triangles(gi)}), "
               f"{plural(gi['batches'], 'batch', 'batches')} (trans {split['trans']}, int {split['int']}, "
               f"ext {split['ext']})")
    extras = []
    if gi["vertex_colours"]:
        extras.append("vertex colours (MOCV)")
    if gi["liquid"]:
        extras.append(f"liquid {gi['liquid']['tiles'][0]}×{gi['liquid']['tiles'][1]} tiles")
    if gi["doodad_refs"]:
        extras.append(f"{gi['doodad_refs']} doodad references")
    if extras:
        click.echo(f"{indent}" + ", ".join(extras))


@wmo.command()
@click.argument("file")
@data_opt
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True, help="The .glb file to write.")
@click.option("--doodad-set", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Which MODS doodad set to place (set 0, the global one, is always placed).")
@click.option("--no-doodads", is_flag=True, help="Leave the doodad sets' M2 models out.")
@click.option("--instancing", type=click.Choice(["ext", "nodes"]), default="ext", show_default=True,
              help="ext: EXT_mesh_gpu_instancing for the doodads; nodes: one node per doodad.")
@json_option
def export(file, data_path, output, doodad_set, no_doodads, instancing, as_json):
    """Export a WMO as glTF 2.0 binary: one mesh per group (a primitive per batch, its texture,
    vertex colours), the doodad set's M2s placed. Missing group files are left out and listed.

    Axes: glTF +X = WMO +X, +Y up (WMO +Z), +Z = WMO -Y, as the other exports.
    """
    from wowgrass.errors import UsageError
    from wowgrass.export.wmo_meshes import export_wmo
    from wowgrass.fileio import write_atomic

    out = output_path(output, (".glb",))
    w, group, src = _load(file, data_path)
    if group is not None:
        raise UsageError(f"{file} is a WMO group file: give its root .wmo")
    data, s = export_wmo(w, src.read, doodads=not no_doodads, doodad_set=doodad_set, instancing=instancing)
    write_atomic(out, data)
    s.file = str(out)
    if as_json:
        echo_json(s.to_dict())
        return
    note(f"wrote {out} ({s.bytes:,} bytes): {plural(len(s.groups), 'group')}, "
         f"{plural(s.triangles, 'triangle')}, {plural(s.doodad_instances, 'doodad')}")
    if s.groups_missing:
        note(f"  {plural(len(s.groups_missing), 'group file')} missing: "
             + ", ".join(Path(m.replace(chr(92), '/')).name for m in s.groups_missing))
    if s.missing_doodads:
        note(f"  {plural(len(s.missing_doodads), 'doodad model')} not in the data (left out)")
    if s.missing_textures:
        note(f"  {plural(len(s.missing_textures), 'texture')} not in the data (drawn in a flat colour)")
