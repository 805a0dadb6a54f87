"""LiquidType: what kind of liquid an id is, its name and its animated texture, per build.

``DBFilesClient\\LiquidType.dbc`` gives every id a name and a basic kind (water, ocean, magma,
slime): the third column in 1.12 and 2.4.3 (``ID, Name, Type, SpellID``), the fourth in 3.3.5
(WoWDBDefs calls it SoundBank; TrinityCore reads it as the type). 3.3.5 rows also name their
texture frames (``Texture[0]``, a pattern such as ``XTextures\\river\\lake_a.%d.blp``); the 1.12
and 2.4.3 clients choose the frames by kind from fixed names. Frames run 1..30 and the client
steps one every 60 ms.

Without the table (loose files, extracts) ids fall back to :func:`wowgrass.formats.liquid.default_kind`
and the fixed names; without the textures the renderer draws each kind in its colour
(:data:`KIND_COLOURS`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from wowgrass.errors import FormatError, GameFileNotFound
from wowgrass.formats.liquid import KIND_NAMES, MAGMA, OCEAN, SLIME, UNKNOWN_KIND, WATER, default_kind

log = logging.getLogger(__name__)

LIQUID_TYPE_DBC = "DBFilesClient\\LiquidType.dbc"
FRAMES = 30
FRAME_SECONDS = 0.06
#: the textures the 1.12 / 2.4.3 clients use for each kind
CLASSIC_TEXTURES = {
    WATER: "XTextures\\river\\lake_a.%d.blp",
    OCEAN: "XTextures\\ocean\\ocean_h.%d.blp",
    MAGMA: "XTextures\\lava\\lava.%d.blp",
    SLIME: "XTextures\\slime\\slime.%d.blp",
}
#: linear RGB and opacity of each kind where no texture is at hand
KIND_COLOURS = {
    WATER: (0.16, 0.36, 0.42, 0.62),
    OCEAN: (0.07, 0.22, 0.34, 0.72),
    MAGMA: (1.00, 0.36, 0.06, 1.00),
    SLIME: (0.28, 0.55, 0.10, 0.85),
}
DEFAULT_NAMES = {1: "Water", 2: "Ocean", 3: "Magma", 4: "Slime", 5: "Slow Water", 6: "Slow Ocean",
                 7: "Slow Magma", 8: "Slow Slime", 9: "Fast Water", 10: "Fast Ocean", 11: "Fast Magma",
                 12: "Fast Slime", 13: "WMO Water", 14: "WMO Ocean", 15: "Green Lava", 17: "WMO Magma",
                 19: "WMO Slime", 20: "Naxxramas - Slime", 21: "Coilfang Raid - Water"}


@dataclass
class LiquidType:
    id: int
    name: str
    kind: int
    texture: str | None            # frame pattern with one %d (1-based)

    def frame_paths(self, frames: int = FRAMES) -> list[str]:
        if not self.texture or "%d" not in self.texture:
            return [self.texture] if self.texture else []
        return [self.texture % (i + 1) for i in range(frames)]


@dataclass
class LiquidTypes:
    """Every LiquidType the data defines (or the defaults); ``get(id)`` never fails."""

    build: str | None = None
    rows: dict = field(default_factory=dict)
    source: str = "defaults"

    @classmethod
    def from_bytes(cls, data: bytes, build: str | None = None, path: str = LIQUID_TYPE_DBC) -> "LiquidTypes":
        from wowgrass.formats.dbc import read_table

        dbc, det = read_table(data, path, table="LiquidType", hint=build)
        if det.schema is None:
            raise FormatError(f"LiquidType: {det.reason}", path=path, offset=0)
        rec = dbc.records
        names = dbc.strings(rec["Name"].view(np.uint32))
        kind_col = rec["SoundBank"] if "SoundBank" in rec.dtype.names else rec["Flags"]
        textures = dbc.strings(rec["Texture"][:, 0].view(np.uint32)) if "Texture" in rec.dtype.names else None
        rows = {}
        for k, tid in enumerate(rec["ID"].astype(np.int64).tolist()):
            kind = int(kind_col[k])
            if not 0 <= kind <= 3:
                kind = int(default_kind(tid))
            tex = (textures[k] or None) if textures is not None else None
            if tex is None and kind != UNKNOWN_KIND:
                tex = CLASSIC_TEXTURES[kind]
            rows[tid] = LiquidType(tid, names[k], kind, tex)
        return cls(det.build, rows, path)

    @classmethod
    def from_data(cls, data, build: str | None = None) -> "LiquidTypes":
        """The data source's LiquidType.dbc, or the defaults when it has none (or it is unreadable:
        logged, the view goes on with the defaults)."""
        build = build or getattr(data, "build", None)
        try:
            return cls.from_bytes(data.read(LIQUID_TYPE_DBC), build)
        except (GameFileNotFound, FileNotFoundError):
            return cls(build)
        except FormatError as exc:
            log.warning("LiquidType.dbc unreadable (%s): using the default liquid types", exc)
            return cls(build, source=f"defaults ({exc.reason})")

    @classmethod
    def from_read(cls, read, build: str | None = None) -> "LiquidTypes":
        """:meth:`from_data` through a ``read(path) -> bytes`` callable (None: the defaults)."""
        if read is None:
            return cls(build)

        class _Read:
            def __init__(self, f):
                self.read, self.build = f, build

        return cls.from_data(_Read(read), build)

    def get(self, type_id: int, fmt: int | None = None) -> LiquidType:
        t = self.rows.get(int(type_id))
        if t is not None:
            return t
        kind = int(default_kind(type_id, fmt))
        if kind == UNKNOWN_KIND:
            kind = WATER
        return LiquidType(int(type_id), DEFAULT_NAMES.get(int(type_id), f"liquid {int(type_id)}"), kind,
                          CLASSIC_TEXTURES[kind])

    def kinds(self, type_ids, formats=None) -> np.ndarray:
        """(n,) u1 kinds of LiquidType ids (the table's, else the defaults)."""
        ids = np.asarray(type_ids, np.int64)
        fmts = np.zeros_like(ids) if formats is None else np.asarray(formats, np.int64)
        return np.array([self.get(i, f).kind for i, f in zip(ids.tolist(), fmts.tolist())], np.uint8)

    def names(self) -> dict:
        return {k: v.name for k, v in self.rows.items()} or dict(DEFAULT_NAMES)


def kind_name(kind: int) -> str:
    return KIND_NAMES[kind] if 0 <= kind < 4 else "unknown"


__all__ = ["LiquidType", "LiquidTypes", "KIND_COLOURS", "CLASSIC_TEXTURES", "FRAMES", "FRAME_SECONDS",
           "LIQUID_TYPE_DBC", "kind_name", "OCEAN", "MAGMA", "SLIME", "WATER"]
