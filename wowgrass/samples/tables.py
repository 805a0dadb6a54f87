"""The sample world's GroundEffectTexture / GroundEffectDoodad rows, laid out per client build.

Column layouts follow WoWDBDefs (formats.md §3): 1.12 and 2.4.3 have no doodad weights and key
GroundEffectTexture.DoodadID to GroundEffectDoodad.DoodadIdTag (one less than the row ID, as in
the real 1.12 table); 3.3.5 adds four weights and keys by ID.  Doodad paths are stored the way
the clients store them: a bare ``ElwGra01.mdl`` relative to ``World\\NoDXT\\Detail\\``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wowgrass.game.effects import DOODAD_PATH as DOODAD_DBC
from wowgrass.game.effects import TEXTURE_PATH as TEXTURE_DBC
from wowgrass.formats.dbc import GROUND_EFFECT_DOODAD, GROUND_EFFECT_TEXTURE, DbcStringBlock, schema_for, write_dbc
from wowgrass.samples.models import GRASS

LIQUID_TYPE_DBC = "DBFilesClient\\LiquidType.dbc"
FIRST_DOODAD_ID = 4          # ElwGra01..08 are rows 4..11 in the real tables


def doodad_id(grass_index: int) -> int:
    return FIRST_DOODAD_ID + grass_index


def doodad_tag(grass_index: int) -> int:
    return doodad_id(grass_index) - 1


@dataclass(frozen=True)
class Effect:
    id: int
    name: str
    doodads: tuple          # indices into models.GRASS, or () for a terrain-type-only row
    weights: tuple          # 3.3.5 DoodadWeight (sum <= 16)
    density: int
    sound: int              # TerrainType id (footsteps)
    density_unpatched: int  # what the base archive's older table says (the patch overrides it)


# Grass variants by region (terrain.grass_variant 0..2), then the other layer kinds.
EFFECTS = (
    Effect(1001, "meadow", (0, 2, 3, 4), (4, 4, 4, 4), 8, 4, 8),
    Effect(1002, "lush", (0, 1, 5, 6), (6, 2, 4, 4), 16, 4, 12),
    Effect(1003, "overgrown", (2, 5, 6, 7), (5, 5, 3, 3), 30, 4, 20),   # above the 24 cap
    Effect(1004, "dirt", (3, 4, 7, 0), (2, 2, 2, 1), 12, 1, 12),        # weights < 16: bag fill
    Effect(1005, "rock", (), (), 0, 3, 0),
    Effect(1006, "road", (), (), 0, 1, 0),
)
GRASS_EFFECTS = (1001, 1002, 1003)
KIND_EFFECT = {"dirt": 1004, "rock": 1005, "road": 1006}


def ground_effect_texture(build: str, *, patched: bool = True) -> bytes:
    """GroundEffectTexture.dbc bytes; ``patched=False`` gives the older base-archive version."""
    wotlk = build == "3.3.5"
    rows = np.zeros(len(EFFECTS), schema_for(GROUND_EFFECT_TEXTURE, build).dtype)
    for i, e in enumerate(EFFECTS):
        key = doodad_id if wotlk else doodad_tag
        # empty slot: 0 in 3.3.5 (the client skips kind 0), -1 before (tag 0 is a real doodad)
        ids = [key(k) for k in e.doodads] + [0 if wotlk else -1] * (4 - len(e.doodads))
        rows[i]["ID"] = e.id
        rows[i]["DoodadID"] = ids
        if wotlk:
            rows[i]["DoodadWeight"] = list(e.weights) + [0] * (4 - len(e.weights))
        rows[i]["Density"] = e.density if patched else e.density_unpatched
        rows[i]["Sound"] = e.sound
    return write_dbc(rows, b"\0")


def ground_effect_doodad(build: str) -> bytes:
    """GroundEffectDoodad.dbc bytes: one row per ElwGra model."""
    wotlk = build == "3.3.5"
    rows = np.zeros(len(GRASS), schema_for(GROUND_EFFECT_DOODAD, build).dtype)
    sb = DbcStringBlock()
    for i, g in enumerate(GRASS):
        rows[i]["ID"] = doodad_id(i)
        rows[i]["Doodadpath"] = sb.add(f"{g.name}.mdl")
        if not wotlk:
            rows[i]["DoodadIdTag"] = doodad_tag(i)
    return write_dbc(rows, bytes(sb))


# Map.dbc rows: the sample map, and two maps a client's table names that the sample does not hold
# (as a real table names maps an extract lacks: their WDTs are looked up and not found).
MAP_ID = 9001
MAPS = ((0, "Azeroth", "Eastern Kingdoms"), (1, "Kalimdor", "Kalimdor"), (MAP_ID, "WowgrassSample", "Wowgrass Sample"))


def map_table(build: str) -> bytes:
    """Map.dbc bytes in ``build``'s layout (ID, Directory, ..., MapName_lang: formats.dbc.MAP_LAYOUTS);
    the fields the sample has no use for are 0."""
    rows = np.zeros(len(MAPS), schema_for("Map", build).dtype)
    sb = DbcStringBlock()
    for i, (map_id, directory, name) in enumerate(MAPS):
        rows[i]["ID"] = map_id
        rows[i]["Directory"] = sb.add(directory)
        rows[i]["MapName_lang"][0] = sb.add(name)      # enUS
    return write_dbc(rows, bytes(sb))


# LiquidType rows: (id, name, kind) as the real tables have them; 3.3.5 rows name their frames
LIQUID_TYPES = ((1, "Water", 0), (2, "Ocean", 1), (3, "Magma", 2), (4, "Slime", 3), (13, "WMO Water", 0),
                (14, "WMO Ocean", 1), (19, "WMO Magma", 2), (20, "WMO Slime", 3))


def liquid_type(build: str) -> bytes:
    """LiquidType.dbc: 1.12/2.4.3 ``ID, Name, Type, SpellID``; 3.3.5 the 45-field layout with the
    type in its fourth column and the texture frames' pattern in ``Texture[0]``."""
    from wowgrass.game.liquid_types import CLASSIC_TEXTURES

    rows = np.zeros(len(LIQUID_TYPES), schema_for("LiquidType", build).dtype)
    sb = DbcStringBlock()
    for i, (lid, name, kind) in enumerate(LIQUID_TYPES):
        rows[i]["ID"] = lid
        rows[i]["Name"] = sb.add(name)
        if build == "3.3.5":
            rows[i]["SoundBank"] = kind
            rows[i]["MaterialID"] = kind + 1
            tex = list(rows[i]["Texture"])
            tex[0] = sb.add(CLASSIC_TEXTURES[kind])
            rows[i]["Texture"] = tex
        else:
            rows[i]["Flags"] = kind
    return write_dbc(rows, bytes(sb))


# -------------------------------------------------------------------------------------- the light
# Light, LightParams, LightIntBand, LightFloatBand, LightSkybox: a global light and one local light
# around the lake (greener fog, nearer, bluer water), each with a day of keys (half-minutes:
# midnight, pre-dawn, dawn, morning, noon, afternoon, dusk, night). Positions and radii in the
# table's units (1/36 yard) and file axes, the inverse of wowgrass.game.light.light_world_positions.
LIGHT_TABLES = ("Light", "LightParams", "LightIntBand", "LightFloatBand", "LightSkybox")
LIGHT_KEYS = (0, 600, 780, 1080, 1440, 2100, 2340, 2580)
LAKE_LIGHT_FALLOFF = (40.0, 95.0)       # yards from the lake's centre: full inside, none beyond


def _rgb(*hexes):
    """``"rrggbb"`` keys -> ((r, g, b), ...)."""
    return tuple((int(h[:2], 16), int(h[2:4], 16), int(h[4:], 16)) for h in hexes)


#                 00:00     05:00     06:30     09:00     12:00     17:30     19:30     21:30
_GLOBAL_COLOURS = {
    "diffuse":    _rgb("29334d", "3a3f5c", "e0905a", "f2d7a6", "fff0d2", "f7d49c", "d87a4a", "2f3954"),
    "ambient":    _rgb("1c2538", "262e45", "5a5266", "6a7a90", "6f8298", "6a7488", "5a4a5e", "1f283c"),
    "sky_top":    _rgb("05080f", "0b1020", "2a4a7a", "1d5fae", "1a5cb8", "2463ac", "3a3f78", "070b16"),
    "sky_middle": _rgb("0b1222", "182038", "5a78a8", "4f8fd0", "4a94dc", "5a94cc", "8a6a98", "0e1628"),
    "sky_band1":  _rgb("111a2e", "2a3050", "c08a80", "8fbce4", "8cc2ee", "a0bede", "d08a78", "142036"),
    "sky_band2":  _rgb("16203a", "3a3a5a", "f0a070", "b0d4ee", "b4d8f2", "c8cfd8", "f09a60", "1a2640"),
    "sky_smog":   _rgb("1a2440", "484660", "ffb478", "c8dcec", "cce0f0", "e0d0c0", "ffa860", "1e2a44"),
    "fog":        _rgb("141c30", "2e3450", "b48c84", "a8c0d4", "a6c4dc", "b8b8b8", "b07868", "182238"),
    "shadow_opacity": _rgb("404040", "404040", "505050", "606060", "666666", "606060", "505050", "404040"),
    "sun":        _rgb("9aa8c8", "b0b0c8", "ffb070", "fff0c8", "fff8e8", "ffe8b8", "ff9a50", "a0b0d0"),
    "cloud_sun":  _rgb("30384c", "404860", "ffa060", "fff0d8", "ffffff", "ffe0b0", "ff9050", "303850"),
    "cloud_emissive": _rgb("0c1018", "141a28", "604848", "8090a8", "90a0b8", "8890a0", "684848", "10141c"),
    "cloud_layer1_ambient": _rgb("101420", "181e2c", "504858", "7888a0", "8090a8", "788090", "584850", "121826"),
    "cloud_layer2_ambient": _rgb("0c1018", "141a26", "403c4c", "607088", "687890", "606878", "483c48", "0e1420"),
    "ocean_shallow": _rgb("0c2a30", "123238", "2a5458", "2a6a70", "2c7078", "2a6468", "2a4a50", "0e2a30"),
    "ocean_deep": _rgb("04141a", "061a20", "10303a", "0e3c48", "0e4250", "0e3a44", "102c34", "04161c"),
    "river_shallow": _rgb("12302c", "183630", "3a5a4a", "3a7060", "3c7866", "3a6a5a", "3a5046", "143028"),
    "river_deep": _rgb("061a16", "0a201c", "183a30", "14483c", "144e40", "144438", "163428", "081c18"),
}
#            00:00    05:00    06:30    09:00    12:00    17:30    19:30    21:30
_GLOBAL_FLOATS = (
    (9000.0, 10800.0, 14400.0, 18000.0, 19800.0, 18000.0, 14400.0, 10800.0),   # fog end (1/36 yard)
    (0.10, 0.15, 0.25, 0.30, 0.35, 0.30, 0.25, 0.15),                          # fog start scaler
    (0.0, 0.1, 0.6, 0.9, 1.0, 0.9, 0.6, 0.1),                                  # celestial glow
    (0.3, 0.3, 0.4, 0.4, 0.35, 0.4, 0.5, 0.3),                                 # cloud density
    (0.95,) * 8,
    (1.0,) * 8,
)


def _lake_colours():
    """The lake's light: the global day with greener fog and sky near the horizon, bluer water."""
    out = {}
    for name, keys in _GLOBAL_COLOURS.items():
        arr = np.array(keys, np.float64)
        if name in ("fog", "sky_smog", "sky_band2"):
            arr = arr * np.array([0.80, 1.02, 0.90])
        elif name.startswith(("river", "ocean")):
            arr = arr * np.array([0.8, 1.0, 1.35])
        elif name == "ambient":
            arr = arr * np.array([0.92, 1.04, 1.0])
        out[name] = tuple(tuple(int(min(max(round(v), 0), 255)) for v in row) for row in arr)
    return out


def _lake_floats():
    f = [list(r) for r in _GLOBAL_FLOATS]
    f[0] = [v * 0.7 for v in f[0]]        # nearer fog over the water
    f[1] = [v * 0.6 for v in f[1]]
    return tuple(tuple(r) for r in f)


def light_tables(build: str, lake_xyz) -> dict[str, bytes]:
    """The sample's five light tables in ``build``'s layout: {path: bytes}."""
    from wowgrass.game.light import BANDS_PER_SET, COLOR_BANDS, CORNER, FLOATS_PER_SET, UNITS, table_path

    lights = np.zeros(2, schema_for("Light", build).dtype)
    x, y, z = (float(v) for v in lake_xyz)
    lights[0]["ID"], lights[0]["ContinentID"] = 1, MAP_ID          # global: at (0, 0, 0), radii 0
    lights[1]["ID"], lights[1]["ContinentID"] = 2, MAP_ID
    lights[1]["GameCoords"] = [(CORNER - y) * UNITS, z * UNITS, (CORNER - x) * UNITS]
    lights[1]["GameFalloffStart"], lights[1]["GameFalloffEnd"] = (r * UNITS for r in LAKE_LIGHT_FALLOFF)
    for i in range(2):
        ids = np.zeros(lights.dtype["LightParamsID"].shape, np.int32)
        ids[:] = i + 1                  # the same set for every weather
        lights[i]["LightParamsID"] = ids
    params = np.zeros(2, schema_for("LightParams", build).dtype)
    for i in range(2):
        params[i]["ID"] = i + 1
        params[i]["Glow"] = 0.5
        params[i]["WaterShallowAlpha"], params[i]["WaterDeepAlpha"] = 0.5, 0.9
        params[i]["OceanShallowAlpha"], params[i]["OceanDeepAlpha"] = 0.6, 1.0
    sets = ((_GLOBAL_COLOURS, _GLOBAL_FLOATS), (_lake_colours(), _lake_floats()))
    ints = np.zeros(2 * BANDS_PER_SET, schema_for("LightIntBand", build).dtype)
    floats = np.zeros(2 * FLOATS_PER_SET, schema_for("LightFloatBand", build).dtype)
    n = len(LIGHT_KEYS)
    for s, (colours, fl) in enumerate(sets):
        pid = s + 1
        for b, name in enumerate(COLOR_BANDS):
            row = ints[s * BANDS_PER_SET + b]
            row["ID"], row["Num"] = pid * BANDS_PER_SET - 17 + b, n
            t = np.zeros(16, np.int32); t[:n] = LIGHT_KEYS
            v = np.zeros(16, np.int32); v[:n] = [(r << 16) | (g << 8) | bl for r, g, bl in colours[name]]
            row["Time"], row["Data"] = t, v
            ints[s * BANDS_PER_SET + b] = row
        for b in range(FLOATS_PER_SET):
            row = floats[s * FLOATS_PER_SET + b]
            row["ID"], row["Num"] = pid * FLOATS_PER_SET - 5 + b, n
            t = np.zeros(16, np.int32); t[:n] = LIGHT_KEYS
            v = np.zeros(16, np.float32); v[:n] = fl[b]
            row["Time"], row["Data"] = t, v
            floats[s * FLOATS_PER_SET + b] = row
    skybox = np.zeros(1, schema_for("LightSkybox", build).dtype)
    sb = DbcStringBlock()
    skybox[0]["ID"], skybox[0]["Name"] = 1, sb.add("Environments\\Stars\\Stars.mdx")
    return {table_path("Light"): write_dbc(lights), table_path("LightParams"): write_dbc(params),
            table_path("LightIntBand"): write_dbc(ints), table_path("LightFloatBand"): write_dbc(floats),
            table_path("LightSkybox"): write_dbc(skybox, bytes(sb))}
