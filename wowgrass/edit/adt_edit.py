"""Byte-exact ground-effect edits of ADT files: change the MCLY effectIds, the MCNK doodadMapping or
noEffectDoodad bits of a tile and nothing else.

``write_adt`` re-serialises a tile in wowgrass's own layout; map editors lay their files out
otherwise (MCIN sizes counted with or without headers, sub-chunks in another order, padding
chunks), so an edit through it would move hundreds of thousands of bytes. Here the reader gives
the file offset of every field (:meth:`AdtTile.field_offsets`), the new values are encoded exactly
as the reader decodes them and written over the old bytes of a copy; every edit re-reads its result
and checks it holds the intended values and only those. The public API (stable: the patch and
preview commands call it too):

```python
assign_effect(adt_bytes, path, texture_glob, effect_id, only_unassigned=False, *, big_alpha=None,
              msb_first=False, chunks=None) -> (new_bytes, EditReport)
    # every layer whose MTEX path matches texture_glob (case-insensitive, '/' or '\\', a bare name
    # matches the file name) gets effect_id; only_unassigned: only layers with 0/0xFFFF/0xFFFFFFFF
remap_mapping(adt_bytes, path, *, margin=STALE_MARGIN, big_alpha=None, msb_first=False)
    -> (new_bytes, EditReport)   # doodadMapping := the layer most visible in each cell, where stale
exclude_cells(adt_bytes, path, mask, clear=False, *, big_alpha=None, msb_first=False)
    -> (new_bytes, EditReport)   # mask (256, 8, 8) bool in MCNK order: set (or clear) noEffectDoodad
patch_fields(adt_bytes, tile, *, effect=None, doodad_mapping=None, no_effect=None) -> (bytes, dict)
    # the primitive: new (256, 4) effectIds / (256, 8, 8) mapping / (256, 8, 8) bits for a tile read
    # from adt_bytes; returns the new bytes and the changed-byte counts per field
write_edited(files: {game_path: bytes}, out_dir, *, in_place=False, data=None) -> [Path]
    # the client's layout under out_dir (World\\Maps\\M\\M_C_R.adt) or, in place, over the loose
    # files of ``data`` with a backup beside each; all files or none
visible_shares(tile) -> (256, 4, 8, 8) f4   # each layer's share of every cell as drawn
stale_cells(tile, margin=STALE_MARGIN) -> (256, 8, 8) bool;  best_layers(tile) -> (256, 8, 8) u1
```
Map-wide drivers (a data source, a map, tiles) are in :mod:`wowgrass.edit.batch`, the audit in
:mod:`wowgrass.edit.audit`, the exclusion masks in :mod:`wowgrass.edit.masks`.

Which layer a cell shows: layers are drawn one over the other, layer k with its alpha a_k, so its
visible share of a texel is ``a_k * prod_{j>k} (1 - a_j)`` (layer 0's alpha is 1); a cell's share is
the mean over its 8x8 texels. On the given Blizzard tile (continent4229.adt) the stored
doodadMapping names the layer with the largest share in all but 4 of 14,784 multi-layer cells
within 0.1 (the additive ``255 - sum`` weighting disagrees in 663), so that is the rule; a cell is
*stale* when the layer it names shows ``margin`` (default 0.25 of the cell) less than the best one,
or does not exist.
"""

from __future__ import annotations

import fnmatch
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from wowgrass.errors import UsageError
from wowgrass.formats.adt import NO_EFFECT_IDS, AdtTile, pack_doodad_mapping

STALE_MARGIN = 0.25
BACKUP_SUFFIX = ".bak"


# ----------------------------------------------------------------------------- reading

def read_tile(adt_bytes, path=None, *, big_alpha=None, msb_first=False) -> AdtTile:
    """The tile the edits work on (big_alpha None: as the tile parses, see game.tiles.read_adt)."""
    from wowgrass.game.tiles import read_adt

    return read_adt(bytes(adt_bytes), path, big_alpha, doodad_map_msb_first=msb_first)


def _norm_texture(name: str) -> str:
    return name.replace("/", "\\").lower()


def match_textures(textures, pattern: str) -> list[int]:
    """MTEX indices whose path matches ``pattern``: case-insensitive, ``/`` or ``\\``; a pattern
    without a folder matches the file name (with or without ``.blp``), one with a folder the whole
    path; ``*``, ``?`` and ``[...]`` as in shell globs."""
    pat = _norm_texture(pattern.strip())
    out = []
    for i, t in enumerate(textures):
        full = _norm_texture(t)
        base = full.rsplit("\\", 1)[-1]
        if "\\" in pat:
            hit = fnmatch.fnmatchcase(full, pat)
        else:
            hit = fnmatch.fnmatchcase(base, pat) or fnmatch.fnmatchcase(base.rsplit(".", 1)[0], pat)
        if hit:
            out.append(i)
    return out


def closest_textures(textures, pattern: str, n: int = 5) -> list[str]:
    """The names of ``textures`` nearest to ``pattern`` (difflib), for an error message."""
    import difflib

    textures = sorted(set(textures), key=str.lower)
    pat = _norm_texture(pattern)
    by_key = {}
    for t in textures:
        by_key.setdefault(_norm_texture(t), t)
        by_key.setdefault(_norm_texture(t).rsplit("\\", 1)[-1], t)
    keys = difflib.get_close_matches(pat.rsplit("\\", 1)[-1] if "\\" not in pat else pat, list(by_key), n=n * 2,
                                     cutoff=0.3)
    out = []
    for k in keys:
        if by_key[k] not in out:
            out.append(by_key[k])
    return out[:n]


# ----------------------------------------------------------------------------- which layer shows

def visible_shares(tile: AdtTile) -> np.ndarray:
    """(256, 4, 8, 8) float32: the share of each cell each layer shows when drawn (0 where absent)."""
    n = np.asarray(tile.n_layers, np.int64)
    out = np.zeros((256, 4, 8, 8), np.float32)
    out[:, 0] = 1.0
    multi = np.flatnonzero(n > 1)
    # chunks a block at a time: the texel arrays stay small (cache-sized, no fresh pages per tile)
    for s in range(0, multi.size, _SHARE_BLOCK):
        idx = multi[s:s + _SHARE_BLOCK]
        a = tile.alpha[idx]                  # absent layers and layers without a map read as 0
        rem = None                           # what the layers above left uncovered
        for k in range(int(n[idx].max()) - 1, 0, -1):     # the top layer first
            w = a[:, k].astype(np.float32)
            w *= np.float32(1 / 255)
            if rem is None:
                rem = 1.0 - w
            else:
                w *= rem
                rem -= w
            out[idx, k] = _cell_means(w)
        out[idx, 0] = _cell_means(rem)
    return out


_SHARE_BLOCK = 32


def _cell_means(w: np.ndarray) -> np.ndarray:
    """(m, 64, 64) texels -> (m, 8, 8) the mean of each cell's 8x8: the 8 texel rows of each cell
    row added up, then runs of 8 (no matrix products: BLAS threads would spin for such sizes)."""
    m = w.shape[0]
    rows = w.reshape(m, 8, 8, 64)
    acc = rows[:, :, 0].copy()
    for i in range(1, 8):
        acc += rows[:, :, i]
    out = acc.reshape(m, 8, 8, 8).sum(axis=3)
    out *= np.float32(1 / 64)
    return out


def best_layers(tile: AdtTile, shares: np.ndarray | None = None) -> np.ndarray:
    """(256, 8, 8) u1: the layer with the largest visible share of each cell (ties: the lower)."""
    s = visible_shares(tile) if shares is None else shares
    exists = np.arange(4)[None, :, None, None] < np.asarray(tile.n_layers)[:, None, None, None]
    return np.where(exists, s, -1.0).argmax(axis=1).astype(np.uint8)


def stale_cells(tile: AdtTile, margin: float = STALE_MARGIN, shares: np.ndarray | None = None) -> np.ndarray:
    """(256, 8, 8) bool: cells whose doodadMapping names a missing layer, or one showing ``margin``
    less of the cell than the best layer (chunks without layers have none)."""
    s = visible_shares(tile) if shares is None else shares
    n = np.asarray(tile.n_layers, np.int64)[:, None, None]
    dm = tile.doodad_mapping.astype(np.int64)
    cur = np.take_along_axis(s, np.minimum(dm, 3)[:, None], axis=1)[:, 0]
    return (n > 0) & ((dm >= n) | (cur < s.max(axis=1) - np.float32(margin)))


# ----------------------------------------------------------------------------- the report

@dataclass
class EditReport:
    """What one edit did to one tile."""

    path: str
    kind: str                          # "assign" | "remap" | "exclude"
    layers: int = 0                    # MCLY records whose effectId changed
    cells: int = 0                     # cells whose doodadMapping or noEffectDoodad bit changed
    chunks: int = 0                    # chunks touched
    bytes_changed: int = 0             # bytes that differ from the input
    fields: dict = field(default_factory=dict)   # bytes changed per field: effect_id, doodad_mapping, ...
    before: dict = field(default_factory=dict)   # assign: old effectId -> layers; exclude/remap: counts
    textures: list = field(default_factory=list)  # assign: the MTEX paths that matched

    @property
    def changed(self) -> bool:
        return self.bytes_changed > 0

    def to_json(self) -> dict:
        """cli.md's names: ``*_count`` numbers, plural names lists."""
        return {"path": self.path, "kind": self.kind, "changed": self.changed, "layer_count": self.layers,
                "cell_count": self.cells, "chunk_count": self.chunks, "changed_byte_count": self.bytes_changed,
                "by_field": dict(self.fields), "before": {str(k): v for k, v in self.before.items()},
                "textures": list(self.textures)}


# ----------------------------------------------------------------------------- the primitive

def _encode_bits(mask: np.ndarray) -> np.ndarray:
    """(n, 8, 8) bool -> (n, 8) bytes, bit c of byte r (LSB first)."""
    return np.packbits(np.asarray(mask, bool), axis=-1, bitorder="little").reshape(-1, 8)


def patch_fields(adt_bytes, tile: AdtTile, *, effect=None, doodad_mapping=None, no_effect=None) -> tuple[bytes, dict]:
    """``adt_bytes`` with new ground-effect values written over the old ones in place.

    ``tile`` is ``adt_bytes`` as read (its field offsets); ``effect`` (256, 4) u4 effectIds (only
    existing layers are written), ``doodad_mapping`` (256, 8, 8) layer indices (encoded in the
    tile's own bit order), ``no_effect`` (256, 8, 8) bool. Only chunks whose values change are
    written. Returns (bytes, {field: bytes changed})."""
    buf = bytearray(adt_bytes)
    arr = np.frombuffer(buf, np.uint8)
    old = np.frombuffer(bytes(adt_bytes), np.uint8)
    ofs = tile.field_offsets()
    counts = {}
    if effect is not None:
        new = np.asarray(effect, np.int64).reshape(256, 4)
        if (new < 0).any() or (new > 0xFFFFFFFF).any():
            raise UsageError("effect ids must be 0 .. 4294967295")
        where = (ofs["effect_id"] >= 0) & (new != tile.layer_effect.astype(np.int64))
        at = ofs["effect_id"][where]
        vals = new[where].astype("<u4").view(np.uint8).reshape(-1, 4)
        arr[at[:, None] + np.arange(4)[None, :]] = vals
        counts["effect_id"] = at.size
    if doodad_mapping is not None:
        dm = np.asarray(doodad_mapping, np.uint8).reshape(256, 8, 8)
        if (dm > 3).any():
            raise UsageError("doodadMapping layer indices must be 0..3")
        sel = np.flatnonzero((dm != tile.doodad_mapping).reshape(256, -1).any(axis=1))
        if sel.size:
            arr[ofs["doodad_mapping"][sel, None] + np.arange(16)[None, :]] = pack_doodad_mapping(
                dm[sel], tile.doodad_map_msb_first)
        counts["doodad_mapping"] = int(sel.size)
    if no_effect is not None:
        ne = np.asarray(no_effect, bool).reshape(256, 8, 8)
        sel = np.flatnonzero((ne != tile.no_effect_doodad).reshape(256, -1).any(axis=1))
        if sel.size:
            arr[ofs["no_effect_doodad"][sel, None] + np.arange(8)[None, :]] = _encode_bits(ne[sel])
        counts["no_effect_doodad"] = int(sel.size)
    out = bytes(buf)
    diff = np.flatnonzero(arr != old)
    return out, _byte_counts(diff, ofs, counts)


def _byte_counts(diff: np.ndarray, ofs: dict, written: dict) -> dict:
    """Changed bytes per field; AssertionError if one lies outside every field written."""
    allowed = {}
    if "effect_id" in written:
        e = ofs["effect_id"][ofs["effect_id"] >= 0]
        allowed["effect_id"] = (e[:, None] + np.arange(4)).ravel()
    if "doodad_mapping" in written:
        allowed["doodad_mapping"] = (ofs["doodad_mapping"][:, None] + np.arange(16)).ravel()
    if "no_effect_doodad" in written:
        allowed["no_effect_doodad"] = (ofs["no_effect_doodad"][:, None] + np.arange(8)).ravel()
    out, left = {}, diff
    for name, at in allowed.items():
        hit = np.isin(left, at)
        out[name] = int(hit.sum())
        left = left[~hit]
    if left.size:  # cannot happen: a bug here must never reach a user's map
        raise AssertionError(f"edit changed {left.size} bytes outside its fields (first at {int(left[0])})")
    return out


def _checked(new: bytes, path, tile: AdtTile, **want) -> AdtTile:
    """Re-read ``new`` and check it holds ``want`` (and the old values elsewhere)."""
    again = read_tile(new, path, big_alpha=tile.big_alpha, msb_first=tile.doodad_map_msb_first)
    exists = np.arange(4)[None, :] < tile.n_layers[:, None]
    checks = {"effect": (again.layer_effect, want.get("effect", tile.layer_effect), exists),
              "doodad_mapping": (again.doodad_mapping, want.get("doodad_mapping", tile.doodad_mapping), None),
              "no_effect": (again.no_effect_doodad, want.get("no_effect", tile.no_effect_doodad), None)}
    for name, (got, exp, sel) in checks.items():
        got, exp = np.asarray(got), np.asarray(exp).astype(np.asarray(got).dtype)
        if sel is not None:
            got, exp = got[sel], exp[sel]
        if not np.array_equal(got, exp):
            raise AssertionError(f"{path}: the edited tile does not read back its {name}")
    return again


# ----------------------------------------------------------------------------- the three edits

def assign_effect(adt_bytes, path, texture_glob: str, effect_id: int, only_unassigned: bool = False, *,
                  big_alpha=None, msb_first=False, chunks=None, tile: AdtTile | None = None
                  ) -> tuple[bytes, EditReport]:
    """Give ``effect_id`` to the layers of the textures matching ``texture_glob`` (see
    :func:`match_textures`); ``only_unassigned``: only layers without one (0, 0xFFFF, 0xFFFFFFFF);
    ``chunks``: (256,) bool, only those chunks. A tile using no such texture comes back unchanged."""
    t = tile if tile is not None else read_tile(adt_bytes, path, big_alpha=big_alpha, msb_first=msb_first)
    effect_id = int(effect_id)
    texs = match_textures(t.textures, texture_glob)
    exists = np.arange(4)[None, :] < t.n_layers[:, None]
    sel = exists & np.isin(t.layer_texture, texs)
    if only_unassigned:
        sel &= np.isin(t.layer_effect, NO_EFFECT_IDS)
    if chunks is not None:
        sel &= np.asarray(chunks, bool)[:, None]
    sel &= t.layer_effect != np.uint32(effect_id)
    new_eff = np.where(sel, effect_id, t.layer_effect).astype(np.int64)
    out, counts = patch_fields(adt_bytes, t, effect=new_eff)
    _checked(out, path, t, effect=new_eff)
    before = Counter(t.layer_effect[sel].tolist())
    rep = EditReport(str(path), "assign", layers=int(sel.sum()), chunks=int(sel.any(axis=1).sum()),
                     bytes_changed=sum(counts.values()), fields=counts,
                     before=dict(sorted(before.items())), textures=[t.textures[i] for i in texs])
    return out, rep


def remap_mapping(adt_bytes, path, *, margin: float = STALE_MARGIN, big_alpha=None, msb_first=False,
                  tile: AdtTile | None = None) -> tuple[bytes, EditReport]:
    """Point the stale cells' doodadMapping (:func:`stale_cells` with ``margin``; 0: every cell not
    naming its best layer) at the layer most visible there (:func:`best_layers`)."""
    t = tile if tile is not None else read_tile(adt_bytes, path, big_alpha=big_alpha, msb_first=msb_first)
    shares = visible_shares(t)
    stale = stale_cells(t, margin, shares)
    best = best_layers(t, shares)
    stale &= best != t.doodad_mapping
    new = np.where(stale, best, t.doodad_mapping).astype(np.uint8)
    out, counts = patch_fields(adt_bytes, t, doodad_mapping=new)
    _checked(out, path, t, doodad_mapping=new)
    rep = EditReport(str(path), "remap", cells=int(stale.sum()), chunks=int(stale.reshape(256, -1).any(axis=1).sum()),
                     bytes_changed=sum(counts.values()), fields=counts,
                     before={"stale_cells": int(stale.sum())})
    return out, rep


def exclude_cells(adt_bytes, path, mask, clear: bool = False, *, big_alpha=None, msb_first=False,
                  tile: AdtTile | None = None) -> tuple[bytes, EditReport]:
    """Set the noEffectDoodad bit of the cells in ``mask`` ((256, 8, 8) bool, MCNK order, as
    ``AdtTile.no_effect_doodad``), or clear it with ``clear``."""
    t = tile if tile is not None else read_tile(adt_bytes, path, big_alpha=big_alpha, msb_first=msb_first)
    m = np.asarray(mask, bool).reshape(256, 8, 8)
    old = t.no_effect_doodad
    new = (old & ~m) if clear else (old | m)
    changed = new != old
    out, counts = patch_fields(adt_bytes, t, no_effect=new)
    _checked(out, path, t, no_effect=new)
    rep = EditReport(str(path), "exclude", cells=int(changed.sum()),
                     chunks=int(changed.reshape(256, -1).any(axis=1).sum()),
                     bytes_changed=sum(counts.values()), fields=counts,
                     before={"excluded_cells": int(old.sum()), "mask_cells": int(m.sum())})
    return out, rep


# ----------------------------------------------------------------------------- writing

def disk_path(game_path: str) -> Path:
    """``World\\Maps\\M\\M_1_2.adt`` -> ``World/Maps/M/M_1_2.adt`` (the client's layout on disk)."""
    parts = [p for p in game_path.replace("/", "\\").split("\\") if p]
    if not parts or any(p in (".", "..") for p in parts):
        raise UsageError(f"not a game path: {game_path!r}")
    return Path(*parts)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def write_edited(files: dict, out_dir=None, *, in_place: bool = False, data=None) -> list[Path]:
    """Write edited files, all of them or none.

    ``out_dir``: each game path under it in the client's layout (``World/Maps/M/M_C_R.adt``); the
    folder must exist; an input of ``data`` (a loose folder) is never overwritten that way.
    ``in_place``: over the loose files of ``data`` themselves, each old file kept beside it as
    ``<name>.bak`` (an older backup is kept: the first edit's input stays recoverable); an MPQ
    source cannot be edited in place. Written by :func:`wowgrass.fileio.write_files_atomic`: a
    failure anywhere (full disk, read-only folder, a rename in the middle) puts every file back as
    it was and raises OutputError."""
    if not files:
        return []
    targets: list[tuple[Path, bytes, Path | None]] = []
    if in_place:
        if data is None:
            raise UsageError("--in-place needs the data source the tiles came from")
        for gp, raw in files.items():
            found = data.locate(gp)
            if found is None or found[1] is not None:
                where = "not in the data" if found is None else f"inside {found[0]}"
                raise UsageError(f"{gp} is {where}: only loose files can be edited in place; use -o DIR "
                                 "(and `wowgrass patch build` for an MPQ)")
            dest = Path(found[0])
            targets.append((dest, raw, dest.with_name(dest.name + BACKUP_SUFFIX)))
    else:
        if out_dir is None:
            raise UsageError("give -o DIR (or --in-place)")
        out = Path(out_dir)
        if not out.is_dir():
            raise UsageError(f"-o {out}: folder does not exist" if not out.exists() else f"-o {out}: not a folder")
        for gp, raw in files.items():
            dest = out / disk_path(gp)
            if data is not None:
                found = data.locate(gp)
                if found is not None and found[1] is None and _same_file(Path(found[0]), dest):
                    raise UsageError(f"{dest} is the input tile itself: give another -o folder, or --in-place "
                                     "to edit it (a backup is kept beside it)")
            targets.append((dest, raw, None))
    from wowgrass.fileio import write_files_atomic

    return write_files_atomic([(dest, raw) for dest, raw, _b in targets],
                              backups={dest: b for dest, _r, b in targets if b is not None})


__all__ = ["BACKUP_SUFFIX", "STALE_MARGIN", "EditReport", "assign_effect", "best_layers", "closest_textures",
           "disk_path", "exclude_cells", "match_textures", "patch_fields", "read_tile", "remap_mapping",
           "stale_cells", "visible_shares", "write_edited"]
