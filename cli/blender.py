"""``wowgrass blender import``: tiles into a .blend through Blender itself, headless (docs/blender.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import click

from wowgrass.cli.common import data_option, echo_json, json_option, note, output_path, progress_bar, tile_option
from wowgrass.errors import UsageError

PLACEMENTS = ("client", "coverage")


@click.group()
def blender():
    """Blender: import tiles as a .blend (terrain, water, buildings, doodads, the grass as instances)."""


def blender_command(blender_exe: str | None, bpy_python: str | None) -> list[str]:
    """The command that runs a script in Blender: ``--bpy PYTHON`` (the PyPI bpy module), ``--blender
    EXE``, else ``blender`` on PATH."""
    if blender_exe and bpy_python:
        raise UsageError("--blender and --bpy say the same thing: give one")
    if bpy_python:
        exe = shutil.which(bpy_python) or bpy_python
        if not Path(exe).is_file():
            raise UsageError(f"--bpy {bpy_python}: no such Python")
        return [exe]
    exe = blender_exe or "blender"
    found = shutil.which(exe) or (exe if Path(exe).is_file() else None)
    if not found:
        raise UsageError(f"{exe} not found: give --blender EXE (Blender 4.2 or later) or --bpy PYTHON "
                         "(a Python 3.11 with `pip install bpy`; `make bpy` makes one)")
    return [found, "-b", "--factory-startup", "--python"]


def _package_path(tmp: Path) -> Path:
    """A folder holding only wowgrass and platformdirs (links), for Blender's Python: the rest of
    this environment (its numpy, moderngl) must not shadow Blender's own."""
    import platformdirs

    import wowgrass

    folder = tmp / "path"
    folder.mkdir()
    for mod in (wowgrass, platformdirs):
        src = Path(mod.__file__).parent
        (folder / src.name).symlink_to(src, target_is_directory=True)
    return folder


def run_headless(cmd: list[str], job: dict, *, on_progress=None, timeout: float | None = None) -> dict:
    """Run wowgrass/blender/headless.py in Blender with ``job``; returns its report."""
    from wowgrass.blender import headless

    with tempfile.TemporaryDirectory(prefix="wowgrass-blender-") as tmp:
        t = Path(tmp)
        job = {**job, "path": str(_package_path(t)), "report": str(t / "report.json")}
        (t / "job.json").write_text(json.dumps(job))
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        proc = subprocess.Popen([*cmd, headless.__file__, "--", str(t / "job.json")], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, env=env)
        tail: list[str] = []
        for line in proc.stdout:
            if line.startswith("wowgrass-progress ") and on_progress:
                done, total, what = line.split(" ", 3)[1:]
                on_progress(int(done), int(total), what.strip())
            else:
                tail = (tail + [line.rstrip()])[-30:]
        proc.wait(timeout=timeout)
        report_file = t / "report.json"
        if not report_file.is_file():
            raise UsageError(f"{cmd[0]} stopped (exit {proc.returncode}) before it could say why:\n  "
                             + "\n  ".join(tail[-12:]))
        return json.loads(report_file.read_text())


@blender.command("import")
@data_option
@click.option("--map", "map_name", metavar="NAME", help="The map (default: the data's only map, or the sample world's).")
@tile_option
@click.option("--build", type=click.Choice(["1.12", "2.4.3", "3.3.5"]), default=None,
              help="Client build of the tables (default: detected).")
@click.option("--placement", type=click.Choice(PLACEMENTS), default="client", show_default=True,
              help="client: the clients' scatter and draw capacity; coverage: wowgrass's per-cell coverage. "
                   "The bundle is the one `bake --placement` makes (the same cache).")
@click.option("--picks", type=click.IntRange(1, 256), default=None, help="Client picks per chunk (default: the client's).")
@click.option("--capacity/--no-capacity", default=True, show_default=True,
              help="Drop what the client's draw capacity drops (client placement).")
@click.option("--clock", default="12:00", show_default=True, metavar="HH:MM",
              help="The zone's light (sun, sky, fog) at this hour, from the light tables.")
@click.option("--no-terrain", is_flag=True, help="Leave the terrain out.")
@click.option("--no-liquids", is_flag=True, help="Leave the water out.")
@click.option("--no-wmos", is_flag=True, help="Leave the buildings (WMOs) out.")
@click.option("--no-doodads", is_flag=True, help="Leave the doodads (M2) out.")
@click.option("--no-grass", is_flag=True, help="Leave the ground-effect grass out.")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="The .blend to write.")
@click.option("--render", "render_png", type=click.Path(dir_okay=False), default=None,
              help="Also render the tiles from above (Cycles, CPU) to this PNG: a check of the scene.")
@click.option("--size", default="960x540", show_default=True, metavar="WxH", help="The --render picture's size.")
@click.option("--blender", "blender_exe", metavar="EXE", help="The Blender to run (4.2 or later; default: blender on PATH).")
@click.option("--bpy", "bpy_python", metavar="PYTHON", help="A Python with the PyPI bpy module instead of Blender.")
@json_option
def import_(data_path, map_name, tiles, build, placement, picks, capacity, clock, no_terrain, no_liquids, no_wmos,
            no_doodads, no_grass, output, render_png, size, blender_exe, bpy_python, as_json):
    """Import tiles into a .blend, headless: the terrain per tile (its layers blended by their alpha
    maps, MCCV, MCSH), water, WMOs and M2 doodads as instances, the ground effects as one point cloud
    per tile instanced by geometry nodes, and the zone's light at --clock. Collections per tile
    (Terrain, Water, Buildings, Doodads, Grass); WoW's axes (X north, Y west, Z up) around the
    origin, the offset in the root collection's wow_origin. The same import as Blender's
    File > Import > WoW zone (the extension: make blender-extension)."""
    from wowgrass.game.light import parse_clock

    parse_clock(clock)   # a bad hour is a usage error here, not in Blender
    try:
        w, h = (int(v) for v in size.lower().split("x"))
    except ValueError:
        raise UsageError(f"--size {size!r}: expected WxH, e.g. 960x540") from None
    out = output_path(output, (".blend",))
    png = output_path(render_png, (".png",)) if render_png else None
    cmd = blender_command(blender_exe, bpy_python)
    layers = [] if not data_path else [data_path] if isinstance(data_path, str) else list(data_path)
    options = {"data": [str(Path(p).resolve()) for p in layers], "map_name": map_name, "tiles": list(tiles), "build": build,
               "placement": placement, "picks": picks, "capacity": capacity, "clock": clock,
               "terrain": not no_terrain, "liquids": not no_liquids, "wmos": not no_wmos, "doodads": not no_doodads,
               "grass": not no_grass}
    job = {"options": options, "output": str(Path(out).resolve()), "render": str(Path(png).resolve()) if png else None,
           "size": [w, h]}
    with progress_bar("blender import", "steps") as bar:
        report = run_headless(cmd, job, on_progress=lambda d, t, what: bar.set(d, t, what))
    if "error" in report:
        raise UsageError(report["error"])
    for tile, why in sorted(report.get("errors", {}).items()):
        note(f"warning: tile {tile} left out: {why}")
    for w in report.get("light_warnings", []):   # tables that do not belong together: a black sun, said
        note(f"warning: {w}")
    if not report.get("tiles"):
        raise UsageError("no tile could be imported")
    if as_json:
        echo_json({"file": str(out), "render": str(png) if png else None, **report})
        return
    note(f"{out}: {len(report['tiles'])} tile(s) of {report['map']}, {report['grass_points']:,} grass points, "
         f"{report['objects']:,} objects; import {report['import_s']:.2f} s in Blender {report['blender']}, "
         f"peak {report['peak_rss_mb']:,.0f} MB" + (f"; rendered {png}" if png else ""))
