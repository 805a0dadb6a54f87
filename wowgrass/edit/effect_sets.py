"""New ground-effect sets: GroundEffectTexture rows (and the GroundEffectDoodad rows their models
need) appended to a build's own tables, every existing byte kept.

Layouts (formats.md §3.2/§3.3, WoWDBDefs):
* 1.12 / 2.4.3: ``ID, DoodadID[4], Density, Sound``; a DoodadID names a GroundEffectDoodad
  ``DoodadIdTag`` (one less than its ID in 5875); an empty slot is -1; there are no weights.
* 3.3.5: ``ID, DoodadID[4], DoodadWeight[4], Density, Sound``; a DoodadID names a doodad ``ID``;
  an empty slot is 0 (as in the shipped table); the weights deal a 16-slot bag (§6.3).

A new table is the old one with rows appended: the header's record count and string-block size
change, the old records follow byte for byte, then the new records, then the old string block byte
for byte and the new strings after it (so no existing offset moves). Only the doodad table has
strings (its model paths).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from wowgrass.errors import FormatError, UsageError
from wowgrass.formats.dbc import (
    GROUND_EFFECT_DOODAD,
    GROUND_EFFECT_TEXTURE,
    HEADER_SIZE,
    DbcFile,
    detect_schema,
    write_dbc,
)
from wowgrass.game.effects import DETAIL_DIR, DOODAD_PATH, NO_EFFECT_IDS, SLOTS, TEXTURE_PATH, resolve_model

DEFAULT_DENSITY = 8       # what the client uses for a stored 0 (game.effects), written explicitly
BAG = 16                  # 3.3.5 deals 16 doodads by weight (formats.md §6.3)
MAX_ID = 0xFFFFFFFE       # 0xFFFFFFFF is "no effect" in MCLY


@dataclass
class EffectSet:
    """What :func:`add_effect_set` did: the new row and the doodad rows it made."""

    id: int
    build: str
    doodads: list[str]                # the models, as the client loads them
    doodad_ids: list[int]             # DoodadID per given model (a tag in 1.12/2.4.3, an ID in 3.3.5)
    weights: list[int] | None
    density: int
    sound: int
    new_doodads: list[dict] = field(default_factory=list)   # GroundEffectDoodad rows added
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"id": self.id, "build": self.build, "doodads": self.doodads, "doodad_ids": self.doodad_ids,
                "weights": self.weights, "density": self.density, "sound": self.sound,
                "new_doodads": self.new_doodads, "new_doodad_count": len(self.new_doodads),
                "warnings": self.warnings}


def _read(raw: bytes, path: str, table: str, build: str | None) -> DbcFile:
    dbc = DbcFile.from_bytes(raw, path)
    extra = len(raw) - HEADER_SIZE - dbc.record_count * dbc.record_size - dbc.string_block_size
    if extra:
        # appending strings would have to move these bytes: refuse rather than change them
        raise FormatError(f"{extra} bytes follow the declared string block; wowgrass adds rows only to tables "
                          "it can keep byte for byte", path=path, offset=len(raw) - extra)
    det = detect_schema(dbc, table, build)
    if det.schema is None:
        raise FormatError(f"cannot tell the {table} layout: {det.reason}", path=path, offset=4)
    return dbc.with_schema(det.schema)


def table_build(texture_bytes: bytes, build: str | None = None, hint: str | None = None) -> str:
    """The build whose layout the GroundEffectTexture bytes have (``build`` forces one; ``hint``
    picks 2.4.3 over the layout it shares with 1.12)."""
    dbc = DbcFile.from_bytes(texture_bytes, TEXTURE_PATH)
    det = detect_schema(dbc, GROUND_EFFECT_TEXTURE, build, hint)
    if det.build is None:
        raise FormatError(f"cannot tell the GroundEffectTexture layout: {det.reason}", path=TEXTURE_PATH, offset=4)
    if det.build == "1.10":
        raise UsageError("pre-1.11 GroundEffectTexture tables (texture names in the rows) are not edited")
    return det.build


def append_rows(dbc: DbcFile, rows: np.ndarray, new_strings: bytes = b"") -> bytes:
    """``dbc``'s bytes with ``rows`` (its schema's dtype) appended and ``new_strings`` added after its
    string block: old records and old strings stay where they were."""
    records = np.concatenate([np.asarray(dbc.records), rows.astype(dbc.records.dtype)])
    return write_dbc(records, bytes(dbc.string_block) + new_strings)


def _model_key(path: str) -> str:
    return resolve_model(path).lower()


def check_doodad_path(path: str) -> str:
    """A ``--doodad`` value as the client loads it (``World\\NoDXT\\Detail\\X.m2``); UsageError when it
    lies elsewhere (the clients load detail doodads from that folder only, by base name)."""
    text = str(path).strip().replace("/", "\\")
    if not text or text.endswith("\\"):
        raise UsageError(f"--doodad {path!r}: give a model (e.g. ElwGra01 or World\\NoDXT\\Detail\\ElwGra01.m2)")
    folder = text.rsplit("\\", 1)[0] + "\\" if "\\" in text else ""
    if folder and folder.lower() != DETAIL_DIR.lower():
        raise UsageError(f"--doodad {path}: the clients load ground-effect models from {DETAIL_DIR} only "
                         f"(by base name); put the model there")
    stem = text.rsplit("\\", 1)[-1]
    if "." in stem and stem.rsplit(".", 1)[1].lower() not in ("m2", "mdx", "mdl"):
        raise UsageError(f"--doodad {path}: a model ends in .m2 (or .mdx/.mdl as the tables write it)")
    return resolve_model(text)


def add_effect_set(texture_dbc_bytes: bytes, doodad_dbc_bytes: bytes, build: str | None = None, *,
                   doodads, weights=None, density: int = DEFAULT_DENSITY, sound: int = 0,
                   id: int | None = None, hint: str | None = None, report: list | None = None):
    """Add one GroundEffectTexture row naming ``doodads`` (model paths; 1 to 4) in the layout of
    ``build`` (detected from the texture table when None). Models without a GroundEffectDoodad row
    get one. ``id``: the new row's ID (refused when taken), else the next free one (max + 1).
    ``weights``: 3.3.5 only, one per doodad (default: the 16-point bag shared evenly).

    Returns ``(texture_bytes, doodad_bytes, new_id)``; ``doodad_bytes`` is the input unchanged when
    no doodad row was needed. ``report`` (a list) receives the :class:`EffectSet`.
    """
    short = table_build(texture_dbc_bytes, build, hint)
    models = [check_doodad_path(d) for d in doodads]
    if not 1 <= len(models) <= SLOTS:
        raise UsageError(f"an effect set has 1 to {SLOTS} doodads, got {len(models)}")
    wotlk = short == "3.3.5"
    warnings: list[str] = []
    if weights is not None:
        if not wotlk:
            raise UsageError(f"--weights: {short} GroundEffectTexture has no weights (they exist from 3.0.1)")
        weights = [int(w) for w in weights]
        if len(weights) != len(models):
            raise UsageError(f"--weights gives {len(weights)} values for {len(models)} doodads")
        if any(w < 0 or w > BAG for w in weights):
            raise UsageError(f"--weights: each weight is 0..{BAG} (points of the 16-slot bag)")
        if sum(weights) == 0:
            raise UsageError("--weights are all 0: nothing would be drawn")
        if sum(weights) > BAG:
            warnings.append(f"weights add up to {sum(weights)}: the client deals a {BAG}-slot bag, so later "
                            "doodads overwrite earlier ones")
    elif wotlk:
        n = len(models)
        weights = [BAG // n + (1 if k < BAG % n else 0) for k in range(n)]  # fills the bag: no empty draws
    density, sound = int(density), int(sound)
    if not 0 <= density <= 0x7FFFFFFF:
        raise UsageError(f"--density {density}: must be 0 or more (0 means the client's default, 8)")
    if not -(2**31) <= sound <= 2**31 - 1:
        raise UsageError(f"--sound {sound}: not a 32-bit value")

    tex = _read(texture_dbc_bytes, TEXTURE_PATH, GROUND_EFFECT_TEXTURE, short)
    dood = _read(doodad_dbc_bytes, DOODAD_PATH, GROUND_EFFECT_DOODAD, "1.12" if short == "2.4.3" else short)

    taken = tex.records["ID"].astype(np.int64) & 0xFFFFFFFF
    if id is None:
        new_id = int(taken.max()) + 1 if taken.size else 1
        while new_id in NO_EFFECT_IDS:
            new_id += 1
    else:
        new_id = int(id)
        if new_id in NO_EFFECT_IDS or not 0 < new_id <= MAX_ID:
            raise UsageError(f"--id {new_id}: effect ids 0, 65535 and 4294967295 mean 'no effect' in MCLY")
        if (taken == new_id).any():
            raise UsageError(f"--id {new_id} is taken: GroundEffectTexture already has a row {new_id} "
                             f"(the next free id is {int(taken.max()) + 1})")
    if new_id > MAX_ID:
        raise UsageError("GroundEffectTexture has no free id above its highest; give --id")

    # the doodad rows: existing ones by model (first row wins), new ones after the highest ID / tag
    d = dood.records
    ids = d["ID"].astype(np.int64)
    keys = d["DoodadIdTag"].astype(np.int64) if "DoodadIdTag" in d.dtype.names else ids
    paths = dood.strings(d["Doodadpath"]) if len(d) else []
    by_model: dict[str, int] = {}
    for r, p in enumerate(paths):  # hundreds of rows, once
        if resolve_model(p):
            by_model.setdefault(_model_key(p), r)
    new_rows = []
    strings = bytearray()
    block_len = len(dood.string_block)
    existing_strings = _string_offsets(dood.string_block)
    next_id = int(ids.max()) + 1 if ids.size else 1
    used_keys = set(keys.tolist())
    slot_ids: list[int] = []
    added: dict[str, int] = {}
    new_doodads: list[dict] = []
    for m in models:
        k = m.lower()
        if k in by_model:
            slot_ids.append(int(keys[by_model[k]]))
            continue
        if k in added:
            slot_ids.append(added[k])
            continue
        name = m.rsplit("\\", 1)[-1][:-3] + ".mdl"   # as the shipped tables write it: ElwGra01.mdl
        off = existing_strings.get(name)
        if off is None:
            off = block_len + len(strings)
            strings += name.encode("utf-8") + b"\0"
            existing_strings[name] = off
        row = np.zeros(1, dood.records.dtype)
        row["ID"] = next_id
        row["Doodadpath"] = off
        key = next_id
        if "DoodadIdTag" in row.dtype.names:
            # 5875 keeps tag = ID - 1; where that tag is taken, the next tag above the highest
            key = next_id - 1 if next_id - 1 not in used_keys else max(used_keys) + 1
            row["DoodadIdTag"] = key
        used_keys.add(key)
        new_rows.append(row)
        entry = {"id": next_id, "path": name, "model": m}
        if "DoodadIdTag" in row.dtype.names:
            entry["tag"] = key
        new_doodads.append(entry)
        added[k] = key
        slot_ids.append(key)
        next_id += 1

    row = np.zeros(1, tex.records.dtype)
    row["ID"] = new_id
    empty = 0 if wotlk else -1
    row["DoodadID"] = slot_ids + [empty] * (SLOTS - len(slot_ids))
    if wotlk:
        row["DoodadWeight"] = weights + [0] * (SLOTS - len(weights))
    row["Density"] = density
    row["Sound"] = sound
    tex_out = append_rows(tex, row)
    dood_out = append_rows(dood, np.concatenate(new_rows), bytes(strings)) if new_rows else bytes(doodad_dbc_bytes)
    if report is not None:
        report.append(EffectSet(new_id, short, models, slot_ids, weights if wotlk else None, density, sound,
                                new_doodads, warnings))
    return tex_out, dood_out, new_id


def _string_offsets(block: bytes) -> dict[str, int]:
    """Each whole string of a block and its first offset (a new path reuses one already there)."""
    out: dict[str, int] = {}
    start = 0
    raw = bytes(block)
    while start < len(raw):
        end = raw.find(b"\0", start)
        if end < 0:
            break
        out.setdefault(raw[start:end].decode("utf-8", "replace"), start)
        start = end + 1
    return out


def read_tables(*, data=None, dbc_dir=None) -> tuple[bytes, bytes, list, str | None]:
    """Both ground-effect tables' bytes from a data source or a ``--dbc`` folder:
    ``(texture, doodad, source files or None, build hint)`` (the files when they are on disk)."""
    from wowgrass.paths import find_table

    if dbc_dir is not None:
        found = [find_table(dbc_dir, n) for n in ("GroundEffectTexture.dbc", "GroundEffectDoodad.dbc")]
        missing = [n for n, p in zip(("GroundEffectTexture.dbc", "GroundEffectDoodad.dbc"), found) if p is None]
        if missing:
            raise UsageError(f"{dbc_dir} has no {' nor '.join(missing)} (nor has its DBFilesClient folder)")
        return found[0].read_bytes(), found[1].read_bytes(), found, None
    for p in (TEXTURE_PATH, DOODAD_PATH):
        if not data.exists(p):
            raise UsageError(f"{data.root} has no {p}")
    files = [None, None]
    if not getattr(data, "archives", None):   # a loose folder: the files on disk (never overwritten silently)
        files = [data.locate(p)[0] for p in (TEXTURE_PATH, DOODAD_PATH)]
    return data.read(TEXTURE_PATH), data.read(DOODAD_PATH), files, getattr(data, "build", None)


def write_tables(out_dir, outputs: dict[str, bytes], *, force: bool = False, in_place: bool = False,
                 inputs=()) -> list[str]:
    """Write ``{game path: bytes}`` under ``out_dir`` in the client's layout, all or nothing: every
    file goes to a temporary beside its target first, the renames come last. An existing file is
    replaced only with ``force``; one of ``inputs`` only with ``in_place`` (its old bytes kept
    beside it as ``<name>.bak``). A rename that fails puts back the files already replaced."""
    from pathlib import Path

    from wowgrass.fileio import write_files_atomic

    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise UsageError(f"-o {out}: not a folder")
    same = {Path(p).resolve() for p in inputs if p is not None}
    plan = []
    for name, data in outputs.items():
        target = out.joinpath(*name.replace("\\", "/").split("/"))
        if target.exists():
            if target.resolve() in same:
                if not in_place:
                    raise UsageError(f"{target} is the input table; --in-place replaces it (keeping a .bak)")
            elif not force:
                raise UsageError(f"{target} exists; --force replaces it")
        plan.append((target, data))
    backups = {t: t.with_name(t.name + ".bak") for t, _d in plan if t.exists() and t.resolve() in same}
    write_files_atomic(plan, backups=backups)
    return [str(t) for t, _ in plan]
