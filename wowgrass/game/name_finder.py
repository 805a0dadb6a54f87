"""Names for the files of archives that have no ``(listfile)`` (normal in 1.12 base archives): the
names the client itself derives, found by hashing candidates in bulk against the archives' unnamed
hash entries (``mpq.hash_strings``).

Candidates, as the client comes by them: the ``DBFilesClient\\*.dbc`` tables it knows (those
wowgrass reads and the well-known ones); ``Map.dbc``'s directories, giving each map's WDT and WDL
and the ADT of every tile (64 x 64); the WDTs' global WMO; the ADTs' MTEX textures (and their
``_s``/``_h`` variants), MMDX models and MWMO map objects; each M2's textures and skins; each WMO
root's groups, textures and doodad models; GroundEffectDoodad's model paths; LiquidType's texture
frames. Every file found is read in turn for the names it holds, until nothing new turns up.

What stays unnamed is what no reference names (sounds, interface art...): ``unnamed_entry_name``
gives such an entry the ``File%08X.ext`` name MPQ editors use (block index, extension from the
file's first bytes).
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Iterable

from wowgrass.errors import WowgrassError
from wowgrass.formats.mpq import HASH_A, HASH_B, MpqArchive, MpqEntry, hash_strings

log = logging.getLogger(__name__)

#: tables the client loads by name (wowgrass reads the first ones; the rest are the well-known
#: tables of 1.12-3.3.5, so that an extract of DBFilesClient is whole)
KNOWN_TABLES = (
    "GroundEffectTexture", "GroundEffectDoodad", "Map", "AreaTable", "LiquidType", "Light", "LightFloatBand",
    "LightIntBand", "LightParams", "LightSkybox", "TerrainType", "TerrainTypeSounds", "WMOAreaTable",
    "ZoneMusic", "ZoneIntroMusicTable", "SoundAmbience", "SoundEntries", "AreaPOI", "AreaTrigger", "WorldMapArea",
    "WorldMapContinent", "WorldMapOverlay", "WorldSafeLocs", "CreatureDisplayInfo", "CreatureModelData",
    "CreatureDisplayInfoExtra", "CharSections", "CharBaseInfo", "CharHairGeosets", "ChrRaces", "ChrClasses",
    "Faction", "FactionTemplate", "GameObjectDisplayInfo", "Item", "ItemDisplayInfo", "ItemClass", "ItemSubClass",
    "ItemSet", "Spell", "SpellIcon", "SpellVisual", "SpellVisualKit", "SpellItemEnchantment", "SkillLine",
    "SkillLineAbility", "Talent", "TalentTab", "TaxiNodes", "TaxiPath", "TaxiPathNode", "Emotes", "EmotesText",
    "Languages", "Lock", "LoadingScreens", "Movie", "NameGen", "NPCSounds", "Startup_Strings", "Stationery",
    "StringLookups", "CinematicCamera", "CinematicSequences", "DeathThudLookups", "FootprintTextures",
    "FootstepTerrainLookup", "GMSurveyQuestions", "AnimationData", "CameraShakes", "DurabilityCosts",
    "DurabilityQuality", "Exhaustion", "SheatheSoundLookups", "UnitBlood", "WeaponSwingSounds2",
    "WeaponImpactSounds", "BankBagSlotPrices", "AttackAnimKits", "AttackAnimTypes", "ChatChannels",
    "ChatProfanity", "LFGDungeons", "Achievement", "Achievement_Criteria", "Vehicle", "VehicleSeat",
    "MapDifficulty", "DungeonMap", "DungeonMapChunk", "ScreenEffect", "SpellRadius", "SpellRange",
    "SpellDuration", "SpellCastTimes", "LiquidMaterial", "Material", "GroundEffectDoodadDetail",
)
TABLES = tuple(f"DBFilesClient\\{t}.dbc" for t in KNOWN_TABLES)
#: files other Blizzard games' maps hold (StarCraft and Warcraft III maps often ship without a listfile)
KNOWN_FILES = ("staredit\\scenario.chk", "war3map.j", "scripts\\war3map.j", "war3map.w3e", "war3map.w3i",
               "war3map.wts", "war3map.shd", "war3map.wpm", "war3map.doo", "war3mapUnits.doo", "war3map.mmp",
               "war3mapMap.blp", "war3mapMap.tga", "war3mapPreview.tga", "war3map.w3r", "war3map.w3c", "war3map.w3u",
               "war3map.w3a", "war3map.w3b", "war3map.w3d", "war3map.w3h", "war3map.w3q", "war3map.w3t",
               "war3map.w3s", "war3map.wtg", "war3map.wct", "war3map.imp", "war3mapExtra.txt", "war3mapMisc.txt",
               "war3mapSkin.txt")
TILES = 64


def _strings(payload: bytes) -> list[str]:
    return [s.decode("latin-1") for s in bytes(payload).split(b"\0") if s]


def _chunks(data: bytes) -> dict[bytes, list[bytes]]:
    """Top-level IFF chunks (tag as read, i.e. reversed on disk, put right) -> payloads; stops at the
    first chunk that does not fit (a damaged file gives what came before)."""
    out: dict[bytes, list[bytes]] = {}
    pos, n = 0, len(data)
    while pos + 8 <= n:
        tag = bytes(data[pos:pos + 4])[::-1]
        (size,) = struct.unpack_from("<I", data, pos + 4)
        if pos + 8 + size > n:
            break
        out.setdefault(tag, []).append(bytes(data[pos + 8:pos + 8 + size]))
        pos += 8 + size
    return out


def _model_names(path: str) -> list[str]:
    """An MDX/MDL/M2 reference as the client loads it: the .m2 and its skins (3.3.5 keeps view 0-3 there)."""
    from wowgrass.formats.m2 import skin_path

    p = path.replace("/", "\\")
    stem = p.rsplit(".", 1)[0] if "." in p.rsplit("\\", 1)[-1] else p
    m2 = stem + ".m2"
    return [m2, stem + ".mdx"] + [skin_path(m2, i) for i in range(4)]


def _texture_names(path: str) -> list[str]:
    p = path.replace("/", "\\")
    out = [p]
    if p.lower().endswith(".blp"):
        out += [p[:-4] + "_s.blp", p[:-4] + "_h.blp"]
    return out


def map_names(directory: str) -> list[str]:
    """A map's WDT, WDL and the ADT of every tile of its 64 x 64 grid."""
    base = f"World\\Maps\\{directory}\\{directory}"
    return [base + ".wdt", base + ".wdl"] + [f"{base}_{c}_{r}.adt" for r in range(TILES) for c in range(TILES)]


def references(name: str, data: bytes, read: Callable[[str], bytes] | None = None) -> list[str]:
    """The names one file makes the client ask for (empty for kinds that name nothing)."""
    low = name.lower().replace("/", "\\")
    out: list[str] = []
    if low.endswith("\\map.dbc"):
        from wowgrass.game.maps import read_map_table

        for _, directory in read_map_table(data, name):
            out += map_names(directory)
    elif low.endswith("\\groundeffectdoodad.dbc"):
        from wowgrass.formats.dbc import DbcFile

        from wowgrass.game.effects import resolve_model

        dbc = DbcFile.from_bytes(data, name)
        if dbc.record_count and dbc.raw.dtype.itemsize == 4:
            for j in range(1, dbc.field_count):          # the path column is 1 or 2 by build
                col = dbc.raw[:, j]
                ok = dbc.valid_string_starts(col)
                for s in dbc.strings(col[ok]):
                    if s.lower().endswith((".mdl", ".mdx", ".m2")):
                        out += _model_names(resolve_model(s))
    elif low.endswith("\\liquidtype.dbc"):
        from wowgrass.game.liquid_types import LiquidTypes

        for lt in LiquidTypes.from_bytes(data).rows.values():
            out += lt.frame_paths()
    elif low.endswith((".wdt", ".adt")):
        ch = _chunks(data)
        for p in ch.get(b"MTEX", []):
            for s in _strings(p):
                out += _texture_names(s)
        for p in ch.get(b"MMDX", []):
            for s in _strings(p):
                out += _model_names(s)
        for p in ch.get(b"MWMO", []):
            out += [s.replace("/", "\\") for s in _strings(p)]
    elif low.endswith(".wmo"):
        ch = _chunks(data)
        if b"MOHD" in ch and len(ch[b"MOHD"][0]) >= 8:          # a root: its groups, textures, doodads
            groups = min(struct.unpack_from("<I", ch[b"MOHD"][0], 4)[0], 512)
            out += [f"{name[:-4]}_{g:03d}.wmo" for g in range(groups)]
            for p in ch.get(b"MOTX", []):
                out += [s.replace("/", "\\") for s in _strings(p)]
            for p in ch.get(b"MODN", []):
                for s in _strings(p):
                    out += _model_names(s)
    elif low.endswith(".m2"):
        from wowgrass.formats.m2 import M2Model

        out += _model_names(name)[2:]
        model = M2Model.from_bytes(data, name, read=read)
        out += [t.filename for t in model.textures if getattr(t, "filename", None)]
    return out


class NameFinder:
    """Names the unnamed entries of ``archives`` (an archive, or a Data folder's chain, highest
    priority last or first: it does not matter) by the candidates above; ``read(name)`` reads a
    named file through the same source, ``known`` are the names the source already has."""

    def __init__(self, archives: Iterable[MpqArchive], read: Callable[[str], bytes], known: Iterable[str] = ()):
        self.archives = list(archives)
        self.read = read
        self.known = list(known)
        self.found: list[str] = []
        self.errors: list[str] = []

    def _unnamed(self) -> dict[tuple[int, int], list[MpqArchive]]:
        out: dict[tuple[int, int], list[MpqArchive]] = {}
        for a in self.archives:
            for e in a.entries():
                if e.name is None and not e.is_delete_marker:
                    out.setdefault((e.hash_a, e.hash_b), []).append(a)
        return out

    def run(self) -> list[str]:
        """Find names until nothing new turns up; each archive learns its names (``add_names``).
        Returns the names found (in the order found)."""
        unnamed = self._unnamed()
        if not unnamed:
            return []
        seen: set[str] = set()
        todo = list(TABLES) + list(KNOWN_FILES) + list(self.known)    # the known names are read for what they name
        parsed: set[str] = set()
        while todo and unnamed:
            cands = list(dict.fromkeys(c for c in todo if c.upper() not in seen))
            seen.update(c.upper() for c in cands)
            hits = []
            if cands:
                pairs = zip(hash_strings(cands, HASH_A).tolist(), hash_strings(cands, HASH_B).tolist())
                for name, pair in zip(cands, pairs):
                    arcs = unnamed.pop(pair, None)
                    if arcs is not None:
                        hits.append(name)
                        for a in arcs:
                            a.add_names([name])
                self.found += hits
            todo = []
            for name in hits + [k for k in self.known if k.upper() not in parsed]:
                if name.upper() in parsed:
                    continue
                parsed.add(name.upper())
                if not name.lower().endswith((".dbc", ".wdt", ".adt", ".wmo", ".m2")):
                    continue
                try:
                    todo += references(name, self.read(name), self.read)
                except WowgrassError as exc:   # a damaged file names nothing; the rest goes on, and it is said
                    self.errors.append(f"{name}: {exc}")
                    log.warning("%s names no other files: %s", name, exc)
            self.known = []
        return self.found


def find_names(archives, read, known=()) -> list[str]:
    return NameFinder(archives, read, known).run()


# --------------------------------------------------------------------------- the unnamed rest
_SECOND_CHUNK = {b"MHDR": "adt", b"MPHD": "wdt", b"MAOF": "wdl", b"MOHD": "wmo", b"MOGP": "wmo"}
_MAGIC = [(b"WDBC", "dbc"), (b"WDB2", "db2"), (b"MD20", "m2"), (b"MD21", "m2"), (b"SKIN", "skin"),
          (b"BLP2", "blp"), (b"BLP1", "blp"), (b"MPQ\x1a", "mpq"), (b"RIFF", "wav"), (b"ID3", "mp3"),
          (b"\xff\xfb", "mp3"), (b"\x89PNG", "png"), (b"OggS", "ogg"), (b"GIF8", "gif"), (b"BM", "bmp")]


def guess_extension(data: bytes) -> str:
    """The extension a file's first bytes suggest (``xxx`` when they suggest none): MVER files by
    their second chunk (MHDR adt, MPHD wdt, MAOF wdl, MOHD/MOGP wmo)."""
    head = bytes(data[:16])
    if head[:4] == b"REVM" and len(head) >= 16:
        return _SECOND_CHUNK.get(head[12:16][::-1], "xxx")
    for magic, ext in _MAGIC:
        if head.startswith(magic):
            return ext
    if head and all(32 <= b < 127 or b in (9, 10, 13) for b in head):
        return "txt"
    return "xxx"


def unnamed_entry_name(e: MpqEntry, data: bytes) -> str:
    """``File%08X.ext`` by block index, as MPQ editors name a file no listfile names."""
    return f"File{e.block_index:08X}.{guess_extension(data)}"
