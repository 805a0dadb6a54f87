"""``wowgrass light``: the zone's light from the client's light tables, by place and time of day."""

from __future__ import annotations

import click

from wowgrass.cli.common import data_option_with, echo_json, json_option, note
from wowgrass.errors import UsageError


@click.group()
def light():
    """The client's light (sky, fog, sun, water colours) for a map, a place and an hour."""


def parse_at(text: str) -> tuple[tuple[float, float, float], bool]:
    """``X,Y[,Z]`` (world yards: X north, Y west, Z up) -> ((x, y, z), z given)."""
    try:
        vals = [float(v) for v in str(text).split(",")]
    except ValueError:
        vals = []
    if len(vals) not in (2, 3):
        raise UsageError(f"--at {text!r}: expected X,Y or X,Y,Z (world yards)")
    return (vals[0], vals[1], vals[2] if len(vals) == 3 else 0.0), len(vals) == 3


@light.command("show")
@data_option_with("A client's Data folder, or a folder of loose tables (Light.dbc, ..., Map.dbc); repeat it to "
                  "lay loose folders over the first (the last wins).")
@click.option("--dbc", "dbc_dir", type=click.Path(exists=True, file_okay=False), default=None,
              help="A folder of loose light tables (or its DBFilesClient subfolder); overrides --data's.")
@click.option("--map", "map_name", required=True, help="Map directory (Map.dbc, e.g. Azeroth) or numeric map ID.")
@click.option("--at", "at", required=True, help="X,Y[,Z]: world position in yards (X north, Y west, Z up).")
@click.option("--clock", "clock", required=True, help="Time of day HH:MM (00:00 to 23:59).")
@click.option("--build", type=click.Choice(["1.12", "2.4.3", "3.3.5"]), default=None,
              help="The client build the tables must be (default: detected from Light.dbc's layout).")
@click.option("--exact", is_flag=True, help="Blend in floats (default: whole bytes, as the client's colours).")
@json_option
def show(data_path, dbc_dir, map_name, at, clock, build, exact, as_json):
    """Print the lights found at a place, their weights, and every blended colour and float by name.

    \b
    Example: wowgrass light show --data ../shared/realdata/dbc/3.3.5 --map Azeroth --at -9464,62,56 --clock 12:00
    """
    from wowgrass.game.light import COLOR_BANDS, LightUnavailable, clock_text, load_light_tables, parse_clock, \
        resolve_map

    half = parse_clock(clock)
    pos, z_given = parse_at(at)
    if data_path is None and dbc_dir is None:
        raise UsageError("give --data (a Data folder or a folder of tables) or --dbc")
    source = None
    if data_path is not None:
        from wowgrass.game.data import open_data

        source = open_data(data_path)
    folder = dbc_dir
    warnings = []
    tables = load_light_tables(source, folder, warn=warnings.append, build=build)
    map_id, directory = resolve_map(folder if folder is not None else source, map_name)
    result = None
    if tables is not None:
        try:
            result = tables.map_light(map_id, exact=exact).result(pos, half)
        except LightUnavailable as exc:
            warnings.append(f"{exc}; keeping the fixed sun")
    for w in warnings:
        note(f"warning: {w}")
    if not z_given:
        note("note: Z 0 assumed (the lights' falloff is by distance in 3D: give X,Y,Z)")
    if result is None:
        result = {"colors": {}, "floats": {}, "lights": []}
        if as_json:
            echo_json(result)
        else:
            click.echo("no light tables to use: the view keeps its fixed sun (25 degrees up in the south-west)")
        return
    if as_json:
        echo_json(result)
        return
    click.echo(f"map {directory} (ID {map_id}) at ({pos[0]:.1f}, {pos[1]:.1f}, {pos[2]:.1f}), {clock_text(half)} "
              f"(half-minute {half}), build {tables.build}, {'exact' if exact else 'byte'} blending")
    click.echo("lights:")
    for li in result["lights"]:
        if li["global"]:
            click.echo(f"  Light {li['id']:>5}  global          params {li['params_id']:>5}  weight {li['weight']:.4f}")
        else:
            click.echo(f"  Light {li['id']:>5}  at {li['distance']:8.1f} yd (falloff {li['falloff'][0]:.1f}..."
                      f"{li['falloff'][1]:.1f})  params {li['params_id']:>5}  weight {li['weight']:.4f}")
    click.echo("colours (0..255):")
    for name in COLOR_BANDS:
        r, g, b = result["colors"][name]
        hexv = f"#{int(round(r)):02x}{int(round(g)):02x}{int(round(b)):02x}"
        click.echo(f"  {name:<22} {r:7.2f} {g:7.2f} {b:7.2f}  {hexv}")
    click.echo("floats:")
    for name, v in result["floats"].items():
        unit = " yd" if name == "fog_end" else ""
        click.echo(f"  {name:<22} {v:10.4f}{unit}")
