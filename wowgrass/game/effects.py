"""The ground-effect catalogue: MCLY effectId → GroundEffectTexture row → detail doodad models.

Joins ``DBFilesClient\\GroundEffectTexture.dbc`` and ``GroundEffectDoodad.dbc`` (formats.md §3.2,
§3.3, §6.3) into flat numpy arrays sorted by effect id, for builds 1.12, 2.4.3 and 3.3.5 (and the
pre-1.11 ``1.10`` texture layout):

* keying: 1.12/2.4.3 ``DoodadID`` matches the doodad's ``DoodadIdTag`` (ID − 1 in 5875; tag 0 is a
  real doodad); 3.3.5 matches the doodad's ``ID``.
* empty slots: ``-1`` (0xFFFFFFFF) in every build, and also ``0`` in 3.3.5.
* "no effect" ids in MCLY: 0, 0xFFFF, 0xFFFFFFFF and any id absent from the table → row -1.
* model paths: the DBC names ``ElwGra01.mdl`` / ``.mdx``; the client loads
  ``World\\NoDXT\\Detail\\<basename without extension>.m2``.
* weights exist from 3.0.1 (3.3.5: a 16-slot bag); 1.12/2.4.3 have none (``has_weights`` False).
* ``density`` is stored as is: the client uses 8 where it is 0 (:attr:`effective_density`).
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field

import numpy as np

from wowgrass.errors import FormatError
from wowgrass.formats.dbc import (
    GROUND_EFFECT_DOODAD,
    GROUND_EFFECT_TEXTURE,
    DbcFile,
    Detection,
    detect_schema,
    normalize_build,
    schema_for,
)

TEXTURE_PATH = "DBFilesClient\\GroundEffectTexture.dbc"
DOODAD_PATH = "DBFilesClient\\GroundEffectDoodad.dbc"
DETAIL_DIR = "World\\NoDXT\\Detail\\"
NO_EFFECT_IDS = (0, 0xFFFF, 0xFFFFFFFF)
DEFAULT_DENSITY = 8  # client: Density 0 → 8 (formats.md §3.2)
#: the coverage placement's caps (the grass reference): min(density, 24) per cell sample, at most 12 placements per sample
COVERAGE_DENSITY_CAP = 24
COVERAGE_CLUMP_CAP = 12
SLOTS = 4
DENSITY_BINS = ((0, 0), (1, 4), (5, 8), (9, 12), (13, 16), (17, 20), (21, 24), (25, None))
_CANON_VERSION = b"wowgrass-effects-rows-v1\0"


def resolve_model(doodad_path: str) -> str:
    """``'ElwGra01.mdl'`` (or ``.mdx``, a path, no extension) → ``'World\\\\NoDXT\\\\Detail\\\\ElwGra01.m2'``."""
    base = doodad_path.replace("/", "\\").rsplit("\\", 1)[-1]
    stem = base.rsplit(".", 1)[0] if "." in base else base
    return DETAIL_DIR + stem + ".m2" if stem else ""


def density_stats(density: np.ndarray, no_doodads: np.ndarray | None = None) -> dict:
    """Distribution of a Density column: min/max/median, histogram, clipping by the coverage caps, empty rows."""
    d = np.asarray(density, dtype=np.int64)
    out: dict = {"rows": int(d.size)}
    if d.size:
        out.update(min=int(d.min()), max=int(d.max()), median=float(np.median(d)))
    else:
        out.update(min=None, max=None, median=None)
    out["zero"] = int(np.count_nonzero(d == 0))
    hist = []
    for lo, hi in DENSITY_BINS:
        sel = (d >= lo) if hi is None else ((d >= lo) & (d <= hi))
        hist.append({"range": f"{lo}+" if hi is None else (str(lo) if lo == hi else f"{lo}-{hi}"),
                     "count": int(np.count_nonzero(sel))})
    out["histogram"] = hist
    out["over_density_cap"] = {"cap": COVERAGE_DENSITY_CAP, "rows": int(np.count_nonzero(d > COVERAGE_DENSITY_CAP))}
    # clumps = min(max(1, ceil(coverage * min(d, 24))), 12): at full coverage the 12 cap bites when d > 12
    out["over_clump_cap"] = {"cap": COVERAGE_CLUMP_CAP, "rows": int(np.count_nonzero(d > COVERAGE_CLUMP_CAP))}
    if no_doodads is not None:
        empty = np.asarray(no_doodads, dtype=bool)
        out["no_doodads"] = int(np.count_nonzero(empty))
        used = d[~empty]
        out["with_doodads"] = {
            "rows": int(used.size),
            "min": int(used.min()) if used.size else None,
            "max": int(used.max()) if used.size else None,
            "median": float(np.median(used)) if used.size else None,
            "zero": int(np.count_nonzero(used == 0)),
        }
    return out


def empty_slot_mask(doodad_ids: np.ndarray, build: str) -> np.ndarray:
    """True where a GroundEffectTexture DoodadID slot is empty in ``build``."""
    ids = np.asarray(doodad_ids, dtype=np.int64)
    empty = (ids == -1) | (ids == 0xFFFFFFFF)
    if normalize_build(build) == "3.3.5":
        empty |= ids == 0
    return empty


@dataclass
class GroundEffectCatalog:
    """Ground effects in flat arrays, one row per GroundEffectTexture ID, sorted by ID.

    ``slot_model[r, k]`` indexes :attr:`models` (-1 = empty or unresolved slot); ``slot_weight`` holds
    the 3.3.5 weights (zeros when ``has_weights`` is False); ``slot_flags`` the 3.3.5 doodad flags
    (0x1 follow slope, 0x2 ignore MCCV). See the module docstring for keying and empty markers.
    """

    build: str
    ids: np.ndarray  # (n,) u4, sorted
    density: np.ndarray  # (n,) i4, as stored
    sound: np.ndarray  # (n,) i4, TerrainType id
    slot_doodad: np.ndarray  # (n, 4) i4, DoodadID as stored
    slot_model: np.ndarray  # (n, 4) i4
    slot_weight: np.ndarray  # (n, 4) i4
    slot_flags: np.ndarray  # (n, 4) u4
    models: list[str]
    has_weights: bool
    unresolved: int = 0  # non-empty slots whose DoodadID names no doodad
    detection: list[Detection] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    # ------------------------------------------------------------------------------- building
    @classmethod
    def from_dbc_bytes(cls, texture_bytes, doodad_bytes, build: str | None = None, *, hint: str | None = None,
                       strict: bool = True, texture_path: str = TEXTURE_PATH,
                       doodad_path: str = DOODAD_PATH) -> "GroundEffectCatalog":
        """Join the two tables. ``build`` forces a layout; otherwise it is detected from the texture
        table, with ``hint`` (a data source's build) choosing between builds that share a layout.
        """
        tex = DbcFile.from_bytes(texture_bytes, texture_path, strict=strict)
        tdet = detect_schema(tex, GROUND_EFFECT_TEXTURE, build, hint)
        if tdet.schema is None:
            raise FormatError(f"cannot tell the GroundEffectTexture layout: {tdet.reason}", path=texture_path, offset=4)
        short = tdet.build
        tex = tex.with_schema(tdet.schema, strict=strict)

        dood = DbcFile.from_bytes(doodad_bytes, doodad_path, strict=strict)
        dbuild = "1.12" if short == "1.10" else short
        auto = detect_schema(dood, GROUND_EFFECT_DOODAD)
        if build is None and auto.build is not None and not auto.ambiguous and dbuild not in auto.candidates:
            raise FormatError(f"GroundEffectTexture looks like {short} but GroundEffectDoodad like {auto.build} "
                              f"({auto.reason}); pass build=", path=doodad_path, offset=4)
        ddet = auto if auto.build == dbuild else detect_schema(dood, GROUND_EFFECT_DOODAD, dbuild)
        dood = dood.with_schema(schema_for(GROUND_EFFECT_DOODAD, dbuild), strict=strict)
        return cls._join(short, tex, dood, [tdet, ddet])

    @classmethod
    def from_data(cls, data, build: str | None = None, *, strict: bool = True) -> "GroundEffectCatalog":
        """Read both tables through ``data.read(path) -> bytes`` (a GameData or any stand-in); the
        data source's ``build`` attribute, where it has one, picks 2.4.3 over the shared 1.12 layout.
        """
        return cls.from_dbc_bytes(data.read(TEXTURE_PATH), data.read(DOODAD_PATH), build,
                                  hint=getattr(data, "build", None), strict=strict)

    @classmethod
    def _join(cls, build: str, tex: DbcFile, dood: DbcFile, detection) -> "GroundEffectCatalog":
        warnings = list(tex.warnings) + list(dood.warnings)
        t = tex.records
        raw_ids = t["ID"].view(np.uint32)
        order = np.argsort(raw_ids)
        ids = raw_ids[order]
        dup = ids[1:] == ids[:-1]
        if dup.any():  # rare: redo stably so that the first of duplicate IDs wins
            order = np.argsort(raw_ids, kind="stable")
            ids = raw_ids[order]
            warnings.append(f"{int(dup.sum())} duplicate GroundEffectTexture IDs (first row kept)")
            order = order[np.concatenate(([True], ~dup))]
            ids = raw_ids[order]
        # gather field by field: fancy-indexing the structured records themselves is far slower
        slot_doodad = t["DoodadID"][order]
        density = t["Density"][order]
        sound = t["Sound"][order]
        has_weights = "DoodadWeight" in t.dtype.names
        weights = t["DoodadWeight"][order] if has_weights else np.zeros_like(slot_doodad)
        d = dood.records
        keys = np.ascontiguousarray(d["DoodadIdTag"] if "DoodadIdTag" in d.dtype.names else d["ID"], np.int32)
        flags = d["Flags"].astype(np.uint32) if "Flags" in d.dtype.names else np.zeros(len(d), np.uint32)
        paths = dood.strings(d["Doodadpath"])
        models: list[str] = []
        index: dict[str, int] = {}
        row_model = np.empty(len(d), dtype=np.int32)
        for r, p in enumerate(paths):  # one per doodad row (hundreds), not per texture row
            m = resolve_model(p)
            if not m:
                row_model[r] = -1
                continue
            if m.lower() not in index:
                index[m.lower()] = len(models)
                models.append(m)
            row_model[r] = index[m.lower()]

        korder = np.argsort(keys, kind="stable")
        ksorted = keys[korder]
        sid = slot_doodad  # int32 like keys: -1 and 0xFFFFFFFF are the same value here
        empty = sid == -1
        if build == "3.3.5":
            empty |= sid == 0
        if len(ksorted):
            pos = np.minimum(np.searchsorted(ksorted, sid), len(ksorted) - 1)
            found = (ksorted[pos] == sid) & ~empty
            drow = korder[pos]
            slot_model = np.where(found, row_model[drow], -1).astype(np.int32)
            slot_flags = np.where(found, flags[drow], 0).astype(np.uint32)
        else:   # a doodad table of no rows (a header declaring 0 records): no slot names a model
            found = np.zeros(sid.shape, bool)
            slot_model = np.full(sid.shape, -1, np.int32)
            slot_flags = np.zeros(sid.shape, np.uint32)
        unresolved = int(np.count_nonzero(~empty & ~found))
        if not len(ksorted):
            warnings.append("GroundEffectDoodad has no rows: no ground effect names a model")
        if unresolved:
            warnings.append(f"{unresolved} DoodadID slots name no GroundEffectDoodad row (treated as empty)")
        return cls(build, ids, density, sound, slot_doodad, slot_model, weights, slot_flags, models,
                   has_weights, unresolved, detection, warnings)

    # -------------------------------------------------------------------------------- queries
    def __len__(self) -> int:
        return len(self.ids)

    @property
    def effective_density(self) -> np.ndarray:
        """Density as the client uses it: 8 where the table says 0."""
        return np.where(self.density == 0, DEFAULT_DENSITY, self.density).astype(np.int32)

    @property
    def no_doodads(self) -> np.ndarray:
        """(n,) bool: rows whose four slots are all empty (terrain-type-only rows)."""
        return (self.slot_model < 0).all(axis=1)

    def lookup(self, effect_ids) -> np.ndarray:
        """Row index per effect id (any shape), -1 for 0 / 0xFFFF / 0xFFFFFFFF / absent ids."""
        e = np.asarray(effect_ids)
        if e.dtype.kind == "i":
            e = e.astype(np.int64) & 0xFFFFFFFF  # -1 written as a signed int is 0xFFFFFFFF
        e = e.astype(np.uint32, copy=False)
        if not len(self.ids):
            return np.full(e.shape, -1, dtype=np.int32)
        pos = np.minimum(np.searchsorted(self.ids, e), len(self.ids) - 1)
        hit = (self.ids[pos] == e) & (e != 0) & (e != 0xFFFF) & (e != 0xFFFFFFFF)
        return np.where(hit, pos, -1).astype(np.int32)

    def row(self, effect_id: int) -> dict | None:
        """One effect as a plain dict (resolved model paths per slot), or None."""
        r = int(self.lookup(np.array([effect_id], dtype=np.int64))[0])
        if r < 0:
            return None
        return {
            "id": int(self.ids[r]),
            "doodads": self.slot_doodad[r].tolist(),
            "models": [self.models[m] if m >= 0 else None for m in self.slot_model[r].tolist()],
            "weights": self.slot_weight[r].tolist() if self.has_weights else None,
            "flags": self.slot_flags[r].tolist(),
            "density": int(self.density[r]),
            "sound": int(self.sound[r]),
        }

    def rows_used(self, effect_ids) -> bytes:
        """Canonical bytes of the rows ``effect_ids`` reach (sorted by ID, with their model paths),
        for bundle provenance: changes exactly when a used row or its doodads change.
        """
        rows = np.unique(self.lookup(np.asarray(effect_ids).ravel()))
        rows = rows[rows >= 0]
        out = bytearray(_CANON_VERSION)
        out += self.build.encode() + b"\0" + struct.pack("<I", len(rows))
        rec = np.zeros(len(rows), dtype=[("id", "<u4"), ("doodad", "<i4", 4), ("weight", "<i4", 4),
                                          ("flags", "<u4", 4), ("density", "<i4"), ("sound", "<i4")])
        rec["id"], rec["doodad"], rec["weight"] = self.ids[rows], self.slot_doodad[rows], self.slot_weight[rows]
        rec["flags"], rec["density"], rec["sound"] = self.slot_flags[rows], self.density[rows], self.sound[rows]
        out += rec.tobytes()
        names = [self.models[m] if m >= 0 else "" for m in self.slot_model[rows].ravel().tolist()]
        out += "\0".join(names).encode("utf-8") + b"\0"
        return bytes(out)

    def rows_digest(self, effect_ids) -> str:
        """sha256 hex of :meth:`rows_used`."""
        return hashlib.sha256(self.rows_used(effect_ids)).hexdigest()

    def density_stats(self) -> dict:
        """:func:`density_stats` over every row, with rows carrying no doodads counted."""
        stats = density_stats(self.density, self.no_doodads)
        stats["unresolved_slots"] = self.unresolved
        return stats
