"""``wowgrass light``: the zone's light from the client's light tables, by place and time of day."""

from __future__ import annotations

import click

from wowgrass.cli.common import build_option, data_option_with, echo_json, json_option, map_option, note
from wowgrass.errors import UsageError

#: the map's world coordinates: 64 tiles of 533 1/3 yards about the origin (as ``view``)
MAP_HALF = 32 * 1600.0 / 3.0
Z_LIMIT = 1e6


def parse_at(text: str) -> tuple[tuple[float, float, float], bool]:
    """``X,Y[,Z]`` (world yards: X north, Y west, Z up) -> ((x, y, z), z given); X and Y on the map."""
    try:
        vals = [float(v) for v in str(text).split(",")]
    except ValueError:
        vals = []
    if len(vals) not in (2, 3) or not all(v == v for v in vals):
        raise UsageError(f"--at {text!r}: expected X,Y or X,Y,Z (world yards)")
    for axis, v, limit in zip("XYZ", vals, (MAP_HALF, MAP_HALF, Z_LIMIT)):
        if not abs(v) <= limit:
            raise UsageError(f"--at {text}: {axis} = {v:g} is out of the map's range (a map spans "
                             f"{-MAP_HALF:,.1f} .. {MAP_HALF:,.1f} yards in X and Y)")
    return (vals[0], vals[1], vals[2] if len(vals) == 3 else 0.0), len(vals) == 3


@click.group()
def light():
    """The client's light (sky, fog, sun, water colours) for a map, a place and an hour."""


@light.command("show")
@data_option_with("A client's Data folder, or a folder of loose tables (Light.dbc, ..., Map.dbc); repeat it to "
                  "lay loose folders over the first (the last wins).")
@click.option("--dbc", "dbc_dir", type=click.Path(exists=True, file_okay=False), default=None,
              help="A folder of loose light tables (or its DBFilesClient subfolder); overrides --data's.")
@map_option("Map directory (Map.dbc, e.g. Azeroth) or numeric map ID.", metavar=None, required=True)
@click.option("--at", "at", required=True,
              help="X,Y[,Z]: world position in yards (X north, Y west, Z up); X and Y within +-17,066.7.")
@click.option("--clock", "clock", required=True, help="Time of day HH:MM (00:00 to 23:59).")
@build_option("The client build the tables must be (default: detected from Light.dbc's layout).")
@click.option("--weather", type=click.Choice(["clear", "storm"]), default="clear", show_default=True,
              help="storm: each light's storm parameter set (LightParamsID[2], [3] under water) mixed "
                   "in fully, as the client's weather does.")
@click.option("--under-liquid", type=click.Choice(["water", "ocean", "magma", "slime"]), default=None,
              help="The camera below this liquid's surface: water and ocean take the lights' under-water "
                   "sets (LightParamsID[1]); magma and slime their own set alone (LiquidType.LightID).")
@click.option("--exact", is_flag=True, help="Blend in floats (default: whole bytes, as the client does).")
@json_option
def show(data_path, dbc_dir, map_name, at, clock, build, weather, under_liquid, exact, as_json):
    """Print the lights found at a place in the order the client blends them, their weights, every
    blended colour and float by name, the colours models and WMOs take, and the rules followed
    where the public decodes disagree. Missing or unusable tables are an error (exit 2).

    \b
    Example: wowgrass light show --data ../shared/realdata/dbc/3.3.5 --map Kalimdor --at 7542,-3656,390 --clock 12:00
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
    problems: list[str] = []
    tables = load_light_tables(source, folder, warn=problems.append, build=build)
    if tables is None:
        raise LightUnavailable(problems[0].replace("; keeping the fixed sun", "") if problems
                               else "light tables unusable")
    map_id, directory = resolve_map(folder if folder is not None else source, map_name)
    ml = tables.map_light(map_id, exact=exact, storm=1.0 if weather == "storm" else 0.0)
    liquid_params = None
    if under_liquid is not None:
        from wowgrass.formats.liquid import BASIC_TYPE_IDS, KIND_NAMES

        kind = KIND_NAMES.index(under_liquid)
        liquid_params = tables.liquid_params(BASIC_TYPE_IDS[kind], kind)
    result = ml.result(pos, half, under_water=under_liquid is not None, liquid_params=liquid_params)
    for w in [*problems, *ml.warnings]:
        note(f"warning: {w}")
    for n in result["notes"]:
        note(f"note: {n}")
    if not z_given:
        note("note: Z 0 assumed (the lights' reach is a distance in 3D: give X,Y,Z)")
    if as_json:
        echo_json(result)
        return
    click.echo(f"map {directory} (ID {map_id}) at ({pos[0]:.1f}, {pos[1]:.1f}, {pos[2]:.1f}), {clock_text(half)} "
               f"(half-minute {half}), build {tables.build}, {weather}"
               f"{f', under {under_liquid}' if under_liquid else ''}, "
               f"{'exact' if exact else 'byte'} blending")
    click.echo("lights, in the order blended (weight: the blend factor; share: of the result):"
               if result["lights"] else "lights: none (the liquid's own set)")
    for li in result["lights"]:
        if li["global"]:
            click.echo(f"  Light {li['id']:>5}  global (the base)      params {li['params_id']:>5}  "
                       f"weight {li['weight']:.4f}  share {li['share']:.4f}")
        else:
            click.echo(f"  Light {li['id']:>5}  at {li['distance']:8.1f} yd (falloff {li['falloff'][0]:.1f}..."
                       f"{li['falloff'][1]:.1f})  params {li['params_id']:>5}  weight {li['weight']:.4f}  "
                       f"share {li['share']:.4f}")
    click.echo("colours (0..255):")

    def line(name, rgb):
        r, g, b = rgb
        hexv = f"#{int(round(r)):02x}{int(round(g)):02x}{int(round(b)):02x}"
        click.echo(f"  {name:<22} {r:7.2f} {g:7.2f} {b:7.2f}  {hexv}")

    for name in COLOR_BANDS:
        line(name, result["colors"][name])
    click.echo("floats:")
    for name, v in result["floats"].items():
        unit = " yd" if name == "fog_end" else ""
        click.echo(f"  {name:<22} {v:10.4f}{unit}")
    click.echo("models and WMOs:")
    for name, rgb in result["model_colors"].items():
        line(name, rgb)
    click.echo("rules followed (where the decodes disagree):")
    for name, text in result["rules"].items():
        click.echo(f"  {name}: {text}")
