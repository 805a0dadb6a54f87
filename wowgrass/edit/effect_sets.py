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


read_table = _read  # the public name (the workbench's session reads a table it changes one row of)


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


def even_weights(n: int) -> list[int]:
    """The default weights of ``n`` doodads (3.3.5): the 16-point bag shared evenly (16; 8,8; 6,5,5;
    4,4,4,4), so every draw lands on a doodad (the window's set editor starts from them too)."""
    return [BAG // n + (1 if k < BAG % n else 0) for k in range(n)] if n else []


def _check_weights(short: str, models: list, weights) -> tuple[list | None, list[str]]:
    """``weights`` checked against the layout and the models (3.3.5 default: the bag shared evenly)."""
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
        weights = even_weights(len(models))
    return (weights if wotlk else None), warnings


def _check_models(doodads) -> list[str]:
    models = [check_doodad_path(d) for d in doodads]
    if not 1 <= len(models) <= SLOTS:
        raise UsageError(f"an effect set has 1 to {SLOTS} doodads, got {len(models)}")
    return models


def _check_density_sound(density, sound) -> None:
    if density is not None and not 0 <= int(density) <= 0x7FFFFFFF:
        raise UsageError(f"--density {density}: must be 0 or more (0 means the client's default, 8)")
    if sound is not None and not -(2**31) <= int(sound) <= 2**31 - 1:
        raise UsageError(f"--sound {sound}: not a 32-bit value")


def _new_id(tex: DbcFile, id: int | None, reserved=()) -> int:
    """The new row's ID: ``id`` (refused when taken or reserved), else one above the highest of the
    table's and ``reserved`` (ids handed out before, never given again)."""
    taken = np.concatenate([tex.records["ID"].astype(np.int64) & 0xFFFFFFFF,
                            np.asarray(list(reserved), np.int64)])
    top = int(taken.max()) if taken.size else 0
    if id is None:
        new_id = top + 1
        while new_id in NO_EFFECT_IDS:
            new_id += 1
        if new_id > MAX_ID:
            raise UsageError("GroundEffectTexture has no free id above its highest; give --id")
        return new_id
    new_id = int(id)
    if new_id in NO_EFFECT_IDS or not 0 < new_id <= MAX_ID:
        raise UsageError(f"--id {new_id}: effect ids 0, 65535 and 4294967295 mean 'no effect' in MCLY")
    if (taken == new_id).any():
        raise UsageError(f"--id {new_id} is taken: GroundEffectTexture already has (or had) a row {new_id} "
                         f"(the next free id is {top + 1})")
    return new_id


def _doodad_slots(dood: DbcFile, models: list[str]) -> tuple[list[int], bytes | None, list[dict]]:
    """The DoodadID of each model: its existing GroundEffectDoodad row (the first by model), else a
    new row after the highest ID (1.12/2.4.3: tag ID - 1 as in 5875, else the next free tag).
    Returns (slot ids, the doodad table's new bytes or None when no row was added, rows added)."""
    d = dood.records
    ids = d["ID"].astype(np.int64)
    tagged = "DoodadIdTag" in d.dtype.names
    keys = d["DoodadIdTag"].astype(np.int64) if tagged else ids
    paths = dood.strings(d["Doodadpath"]) if len(d) else []
    by_model: dict[str, int] = {}
    for r, p in enumerate(paths):  # hundreds of rows, once
        if resolve_model(p):
            by_model.setdefault(_model_key(p), r)
    new_rows, strings, new_doodads = [], bytearray(), []
    block_len = len(dood.string_block)
    existing_strings = _string_offsets(dood.string_block)
    next_id = int(ids.max()) + 1 if ids.size else 1
    used_keys = set(keys.tolist())
    slot_ids: list[int] = []
    added: dict[str, int] = {}
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
        row = np.zeros(1, d.dtype)
        row["ID"] = next_id
        row["Doodadpath"] = off
        key = next_id
        entry = {"id": next_id, "path": name, "model": m}
        if tagged:
            # 5875 keeps tag = ID - 1; where that tag is taken, the next tag above the highest
            key = next_id - 1 if next_id - 1 not in used_keys else max(used_keys) + 1
            row["DoodadIdTag"] = key
            entry["tag"] = key
        used_keys.add(key)
        new_rows.append(row)
        new_doodads.append(entry)
        added[k] = key
        slot_ids.append(key)
        next_id += 1
    out = append_rows(dood, np.concatenate(new_rows), bytes(strings)) if new_rows else None
    return slot_ids, out, new_doodads


def _fill_row(row, short: str, slot_ids, weights) -> None:
    """DoodadID (and 3.3.5's DoodadWeight) of one texture row: the slots given, the rest empty."""
    wotlk = short == "3.3.5"
    row["DoodadID"] = list(slot_ids) + [0 if wotlk else -1] * (SLOTS - len(slot_ids))
    if wotlk:
        row["DoodadWeight"] = list(weights) + [0] * (SLOTS - len(weights))


def _read_pair(texture_dbc_bytes, doodad_dbc_bytes, short):
    tex = _read(texture_dbc_bytes, TEXTURE_PATH, GROUND_EFFECT_TEXTURE, short)
    dood = _read(doodad_dbc_bytes, DOODAD_PATH, GROUND_EFFECT_DOODAD, "1.12" if short == "2.4.3" else short)
    return tex, dood


def add_effect_set(texture_dbc_bytes: bytes, doodad_dbc_bytes: bytes, build: str | None = None, *,
                   doodads, weights=None, density: int = DEFAULT_DENSITY, sound: int = 0,
                   id: int | None = None, hint: str | None = None, report: list | None = None, reserved=()):
    """Add one GroundEffectTexture row naming ``doodads`` (model paths; 1 to 4) in the layout of
    ``build`` (detected from the texture table when None). Models without a GroundEffectDoodad row
    get one. ``id``: the new row's ID (refused when taken), else the next free one (one above the
    highest of the table's and ``reserved``: ids given before that must never be given again).
    ``weights``: 3.3.5 only, one per doodad (default: the 16-point bag shared evenly).

    Returns ``(texture_bytes, doodad_bytes, new_id)``; ``doodad_bytes`` is the input unchanged when
    no doodad row was needed. ``report`` (a list) receives the :class:`EffectSet`.
    """
    short = table_build(texture_dbc_bytes, build, hint)
    models = _check_models(doodads)
    weights, warnings = _check_weights(short, models, weights)
    _check_density_sound(density, sound)
    density, sound = int(density), int(sound)
    tex, dood = _read_pair(texture_dbc_bytes, doodad_dbc_bytes, short)
    new_id = _new_id(tex, id, reserved)
    slot_ids, dood_out, new_doodads = _doodad_slots(dood, models)
    row = np.zeros(1, tex.records.dtype)
    row["ID"] = new_id
    _fill_row(row, short, slot_ids, weights)
    row["Density"] = density
    row["Sound"] = sound
    if report is not None:
        report.append(EffectSet(new_id, short, models, slot_ids, weights, density, sound, new_doodads, warnings))
    return append_rows(tex, row), dood_out if dood_out is not None else bytes(doodad_dbc_bytes), new_id


def edit_effect_set(texture_dbc_bytes: bytes, doodad_dbc_bytes: bytes, effect_id: int, build: str | None = None,
                    *, doodads=None, weights=None, density: int | None = None, sound: int | None = None,
                    hint: str | None = None, report: list | None = None) -> tuple[bytes, bytes]:
    """Change the GroundEffectTexture row ``effect_id``: its models (``doodads``, 1 to 4, replacing
    every slot; new GroundEffectDoodad rows as :func:`add_effect_set` makes them), ``weights``
    (3.3.5; with ``doodads`` one per model, else one per filled slot; default with new models: the
    bag shared evenly), ``density``, ``sound``; what is not given stays. Only that record's bytes
    change (and the doodad table gains rows at its end). Returns ``(texture_bytes, doodad_bytes)``."""
    from wowgrass.game.effects import empty_slot_mask

    short = table_build(texture_dbc_bytes, build, hint)
    if doodads is None and weights is None and density is None and sound is None:
        raise UsageError("say what to change: --doodad, --weights, --density or --sound")
    _check_density_sound(density, sound)
    tex, dood = _read_pair(texture_dbc_bytes, doodad_dbc_bytes, short)
    records = np.array(tex.records)
    at = np.flatnonzero((records["ID"].astype(np.int64) & 0xFFFFFFFF) == int(effect_id))
    if at.size == 0:
        raise UsageError(f"GroundEffectTexture has no row {effect_id} (`wowgrass effects new-set` adds one)")
    row = records[at[0]:at[0] + 1]
    dood_out, new_doodads, warnings = None, [], []
    if doodads is not None:
        models = _check_models(doodads)
        weights, warnings = _check_weights(short, models, weights)
        slot_ids, dood_out, new_doodads = _doodad_slots(dood, models)
        _fill_row(row, short, slot_ids, weights)
    elif weights is not None:
        filled = np.flatnonzero(~empty_slot_mask(row["DoodadID"][0], short))
        weights, warnings = _check_weights(short, [None] * len(filled), weights)
        w = np.zeros(SLOTS, np.int64)
        w[filled] = weights
        row["DoodadWeight"] = w
    if density is not None:
        row["Density"] = int(density)
    if sound is not None:
        row["Sound"] = int(sound)
    records[at[0]] = row[0]
    tex_out = write_dbc(records, bytes(tex.string_block))
    dood_out = dood_out if dood_out is not None else bytes(doodad_dbc_bytes)
    if report is not None:
        from wowgrass.game.effects import GroundEffectCatalog

        now = GroundEffectCatalog.from_dbc_bytes(tex_out, dood_out, build=short).row(int(effect_id))
        filled = ~empty_slot_mask(row["DoodadID"][0], short)
        report.append(EffectSet(int(effect_id), short, [m for m in now["models"] if m],
                                [int(v) for v, f in zip(row["DoodadID"][0].tolist(), filled) if f],
                                row["DoodadWeight"][0].tolist() if short == "3.3.5" else None,
                                int(row["Density"][0]), int(row["Sound"][0]), new_doodads, warnings))
    return tex_out, dood_out


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


def read_tables(*, data=None, dbc_dir=None, over=None) -> tuple[bytes, bytes, list, str | None]:
    """Both ground-effect tables' bytes: ``(texture, doodad, input files, build hint)``.

    Each table comes from the first of ``over`` (an output folder: tables an earlier ``new-set``
    or ``edit-set`` wrote there, so sets add up), ``dbc_dir`` (a ``--dbc`` folder) and ``data`` (a
    data source) that has it. The input files are those on disk under ``dbc_dir`` or a loose
    ``data`` (never overwritten without ``--in-place``), None where not on disk."""
    from pathlib import Path

    from wowgrass.paths import find_table

    names = ("GroundEffectTexture.dbc", "GroundEffectDoodad.dbc")
    game = (TEXTURE_PATH, DOODAD_PATH)
    if data is None and dbc_dir is None and over is None:
        raise UsageError("give the tables: --data DIR (a Data folder or extract) or --dbc DIR")
    over_dir = Path(over) / "DBFilesClient" if over is not None else None
    if dbc_dir is not None and over_dir is not None and over_dir.is_dir() and \
            Path(dbc_dir).resolve() in (Path(over).resolve(), over_dir.resolve()):
        dbc_dir = None                       # --dbc DIR -o DIR: the output folder, read first anyway
    out, inputs = [], []
    for name, gp in zip(names, game):
        mine = find_table(over_dir, name) if over_dir is not None and over_dir.is_dir() else None
        given = find_table(dbc_dir, name) if dbc_dir is not None else None
        loose = None
        if data is not None and not getattr(data, "archives", None) and data.exists(gp):
            loose = data.locate(gp)[0]
        if mine is not None:
            out.append(mine.read_bytes())
        elif given is not None:
            out.append(given.read_bytes())
        elif data is not None and data.exists(gp):
            out.append(data.read(gp))
        else:
            searched = dict.fromkeys(str(w) for w in (over, dbc_dir, getattr(data, "root", None)) if w is not None)
            raise UsageError(f"no {name} in {' nor '.join(searched)} (nor in a DBFilesClient folder there)")
        inputs.append(given or loose)
    return out[0], out[1], inputs, getattr(data, "build", None)


def table_ids(texture_bytes: bytes) -> np.ndarray:
    """Every row ID of a GroundEffectTexture table (any layout: the ID is its first field)."""
    dbc = DbcFile.from_bytes(texture_bytes, TEXTURE_PATH)
    raw = np.frombuffer(bytes(texture_bytes), np.uint8, dbc.record_count * dbc.record_size, HEADER_SIZE)
    return raw.reshape(-1, dbc.record_size)[:, :4].copy().view("<u4").ravel().astype(np.int64)


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
