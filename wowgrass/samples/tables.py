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
from wowgrass.formats.dbc import GROUND_EFFECT_DOODAD, GROUND_EFFECT_TEXTURE, StringBlock, schema_for, write_dbc
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
    sb = StringBlock()
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
    sb = StringBlock()
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
    sb = StringBlock()
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
