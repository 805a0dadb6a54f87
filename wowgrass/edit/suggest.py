"""Suggestions from the client's own maps: for a texture whose layers carry no effect id, the
effect ids the client's maps give that texture most often, with their counts.

A scan reads every ADT of every map of a data source, but only what it needs: the MTEX names and
each MCNK's MCLY records (texture index and effect id), found through the MCNK header's layer
offset (or, where a map editor wrote it otherwise, the MCNK's sub-chunks), so no alpha map or
height is decoded. The result is cached in ``cache_dir()/suggest`` under a key of the data
source (every archive's path, size and modification time; a loose folder's ADT files), so the
second ask is a file read.

```python
scan = client_effects(data, refresh=False, progress=None)   # TextureEffects (cached scan)
scan.suggest("Tileset\\Elwynn\\ElwynnGrass.blp", n=5) -> [(effect_id, layer_count), ...] best first
assign_suggested(data, map_name, scan, ...) -> (MapEdit, {texture: effect id chosen})
```
With layered data the scan covers the base (the client) only: the suggestions are the client's,
not the project's own choices.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from wowgrass.errors import FormatError, WowgrassError
from wowgrass.formats.adt import NO_EFFECT_IDS
from wowgrass.formats.chunks import disk_tag, iter_chunks

log = logging.getLogger(__name__)

SCAN_VERSION = 1
_MCLY = int.from_bytes(disk_tag(b"MCLY"), "little")


def _key(texture: str) -> str:
    return texture.replace("/", "\\").lower()


def layer_effects(raw: bytes, path: str | None = None) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(MTEX names, texture index per layer, effect id per layer) of an ADT's layers, read without
    parsing the rest of the tile; FormatError when the chunks do not hold together."""
    textures: list[str] = []
    mcnk = []
    for ch in iter_chunks(raw, path):
        if ch.tag == b"MTEX":
            textures = [s.decode("utf-8", "replace") for s in bytes(ch.payload).split(b"\0") if s]
        elif ch.tag == b"MCNK":
            mcnk.append((ch.offset, ch.size))
    if not mcnk:
        return textures, np.zeros(0, np.int64), np.zeros(0, np.int64)
    arr = np.frombuffer(raw, np.uint8)
    m = np.asarray(mcnk, np.int64)
    base, end = m[:, 0], m[:, 0] + 8 + m[:, 1]
    if (m[:, 1] < 128).any():
        raise FormatError("MCNK shorter than its header", path=path, offset=int(base[m[:, 1] < 128][0]))
    head = arr[(base + 8)[:, None] + np.arange(32)].view("<u4")
    n = head[:, 3].astype(np.int64)
    ofs = head[:, 7].astype(np.int64)
    at = base + ofs
    ok = (n <= 4) & (at + 8 + 16 * n <= end) & (ofs >= 136)
    ok[ok] &= arr[at[ok, None] + np.arange(4)].view("<u4")[:, 0] == _MCLY
    for i in np.flatnonzero(~ok & (n > 0) & (n <= 4)).tolist():   # an editor's own layout: look for MCLY
        for sub in iter_chunks(raw, path, start=int(base[i]) + 8 + 128, end=int(end[i])):
            if sub.tag == b"MCLY":
                at[i], ok[i] = sub.offset, sub.size >= 16 * n[i]
                break
    tex, eff = [], []
    for k in range(1, 5):
        sel = np.flatnonzero(ok & (n == k))
        if sel.size:
            rec = arr[(at[sel] + 8)[:, None] + np.arange(16 * k)].view("<u4").reshape(-1, 4)
            tex.append(rec[:, 0])
            eff.append(rec[:, 3])
    if not tex:
        return textures, np.zeros(0, np.int64), np.zeros(0, np.int64)
    return textures, np.concatenate(tex).astype(np.int64), np.concatenate(eff).astype(np.int64)


@dataclass
class TextureEffects:
    """Per texture (lower-cased path), the effect ids the scanned maps give its layers."""

    counts: dict = field(default_factory=dict)       # texture key -> {effect id: layers}
    names: dict = field(default_factory=dict)        # texture key -> the path as a map spells it
    tile_count: int = 0
    map_count: int = 0
    failed: list = field(default_factory=list)       # tiles that could not be read: (path, why)
    seconds: float = 0.0
    cached: bool = False
    source: str = ""

    def suggest(self, texture: str, n: int = 5) -> list[tuple[int, int]]:
        """The effect ids most often on ``texture``'s layers (ties: the lower id), with their counts."""
        c = self.counts.get(_key(texture), {})
        return sorted(((int(k), int(v)) for k, v in c.items()), key=lambda kv: (-kv[1], kv[0]))[:n]

    def to_json(self) -> dict:
        return {"version": SCAN_VERSION, "source": self.source, "tile_count": self.tile_count,
                "map_count": self.map_count, "seconds": round(self.seconds, 3), "failed": self.failed,
                "textures": {k: {"name": self.names.get(k, k), "effects": {str(e): c for e, c in v.items()}}
                             for k, v in sorted(self.counts.items())}}

    @classmethod
    def from_json(cls, doc: dict) -> "TextureEffects":
        out = cls(tile_count=doc["tile_count"], map_count=doc["map_count"], seconds=doc["seconds"],
                  failed=[tuple(f) for f in doc.get("failed", [])], cached=True, source=doc.get("source", ""))
        for k, v in doc["textures"].items():
            out.names[k] = v["name"]
            out.counts[k] = {int(e): int(c) for e, c in v["effects"].items()}
        return out


def client_source(data):
    """The data under any overlays and without its layers (the client the suggestions come from)."""
    from wowgrass.edit.batch import base_data

    data = base_data(data)
    if getattr(data, "layers", None):
        from dataclasses import replace

        return replace(data.spec(), layers=(), files=()).open(), True
    return data, False


def source_key(data) -> str:
    """A key of what a scan of ``data`` read: each archive's path, size and modification time, or
    for loose files each ADT's."""
    h = hashlib.sha256(f"v{SCAN_VERSION}".encode())
    if getattr(data, "archives", None):
        items = [Path(a) for a in data.archives]
    else:
        items = sorted(Path(p) for p in Path(data.root).rglob("*") if p.suffix.lower() in (".adt", ".dbc"))
    for p in items:
        st = p.stat()
        h.update(f"{p.resolve()}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:32]


def scan_effects(data, *, progress: Callable[[int, int, str], None] | None = None) -> TextureEffects:
    """Scan every ADT of every map of ``data`` (uncached; see :func:`client_effects`)."""
    from wowgrass.game.maps import adt_game_path, list_maps

    t0 = time.perf_counter()
    out = TextureEffects()
    names = []
    maps = list_maps(data, warn=lambda msg: log.info("%s", msg))
    for name in maps:
        from wowgrass.game.maps import map_tiles

        try:
            tiles = map_tiles(data, name, need_tiles=False).tiles
        except WowgrassError as exc:
            log.info("map %s skipped: %s", name, exc)
            continue
        names += [adt_game_path(name, c, r) for c, r in tiles]
        out.map_count += 1
    counts: dict[str, Counter] = {}
    total = len(names)
    for k, (gp, raw) in enumerate(data.read_many(names)):
        try:
            if isinstance(raw, WowgrassError):
                raise raw
            textures, tex, eff = layer_effects(raw, gp)
        except (WowgrassError, ValueError) as exc:
            out.failed.append((gp, str(exc)))
            continue
        out.tile_count += 1
        keep = ~np.isin(eff, NO_EFFECT_IDS) & (tex < len(textures))
        if keep.any():
            pairs, n = np.unique(np.stack([tex[keep], eff[keep]], axis=1), axis=0, return_counts=True)
            for (ti, e), c in zip(pairs.tolist(), n.tolist()):
                key = _key(textures[ti])
                out.names.setdefault(key, textures[ti])
                counts.setdefault(key, Counter())[int(e)] += int(c)
        if progress:
            progress(k + 1, total, gp.rsplit("\\", 1)[-1])
    out.counts = {k: dict(v) for k, v in counts.items()}
    out.seconds = time.perf_counter() - t0
    return out


def client_effects(data, *, refresh: bool = False,
                   progress: Callable[[int, int, str], None] | None = None) -> TextureEffects:
    """The scan of the client's maps under ``data`` (see :func:`client_source`), from the cache when
    that data was scanned before (``refresh`` scans again)."""
    from wowgrass.fileio import write_atomic
    from wowgrass.paths import cache_dir

    client, opened = client_source(data)
    try:
        key = source_key(client)
        path = cache_dir() / "suggest" / f"{key}.json"
        if path.is_file() and not refresh:
            try:
                doc = json.loads(path.read_text())
                if doc.get("version") == SCAN_VERSION:
                    return TextureEffects.from_json(doc)
            except (OSError, ValueError, KeyError) as exc:
                log.info("suggestion cache %s unreadable (%s): scanning again", path, exc)
        scan = scan_effects(client, progress=progress)
        scan.source = client.describe() if hasattr(client, "describe") else str(client.root)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, json.dumps(scan.to_json(), indent=1).encode())
        except (OSError, WowgrassError) as exc:   # a read-only cache: the scan is still good
            log.info("could not keep the scan in %s: %s", path, exc)
        return scan
    finally:
        if opened:
            client.close()


def _exact(texture: str) -> str:
    """A glob matching exactly this texture path (``[`` escaped)."""
    return texture.replace("[", "[[]")


def assign_suggested(data, map_name: str, scan: TextureEffects, *, textures: str | None = None, tiles=None,
                     msb_first: bool = False, catalog=None, progress=None):
    """Give the layers without an effect id of each texture (matching the glob ``textures``, all by
    default) the top suggestion of ``scan`` that the tables have a row for. Returns (MapEdit,
    {texture: {"effect": id, "count": n, "others": [(id, n), ...]}}, [textures with no suggestion])."""
    from wowgrass.edit.adt_edit import EditReport, assign_effect, match_textures, read_tile
    from wowgrass.edit.batch import MapEdit, iter_tiles, load_map_tiles
    from wowgrass.game.effects import GroundEffectCatalog

    cat = catalog if catalog is not None else GroundEffectCatalog.from_data(data)
    mt = load_map_tiles(data, map_name, tiles)
    edit = MapEdit(mt.name, "assign", params={"suggest": True, "texture": textures, "only_unassigned": True})
    if mt.note():
        edit.notes.append(mt.note())
    chosen: dict[str, dict] = {}
    none: dict[str, str] = {}

    def choice(texture: str):
        k = _key(texture)
        if k in chosen:
            return chosen[k]["effect"]
        if k in none:
            return None
        ranked = [(e, c) for e, c in scan.suggest(texture, n=50) if cat.row(e) is not None]
        if not ranked:
            none[k] = texture
            return None
        chosen[k] = {"texture": texture, "effect": ranked[0][0], "count": ranked[0][1], "others": ranked[1:5]}
        return ranked[0][0]

    seen, matched, tile_count = set(), False, 0
    for gp, _cr, raw, t in iter_tiles(data, mt, msb_first=msb_first, progress=progress):
        exists = np.arange(4)[None, :] < t.n_layers[:, None]
        bare = exists & np.isin(t.layer_effect, NO_EFFECT_IDS)
        want = set(match_textures(t.textures, textures)) if textures else set(range(len(t.textures)))
        seen.update(t.textures)
        matched |= bool(want)
        tile_count += 1
        used = sorted({int(i) for i in np.unique(t.layer_texture[bare]).tolist()} & want)
        new, layers, done = raw, 0, []
        for i in used:
            eid = choice(t.textures[i])
            if eid is None:
                continue
            new, rep = assign_effect(new, gp, _exact(t.textures[i]), eid, True, big_alpha=t.big_alpha,
                                     msb_first=t.doodad_map_msb_first)
            layers += rep.layers
            done.append(t.textures[i])
        rep = EditReport(gp, "assign", layers=layers, textures=done)
        if new != raw:
            after = read_tile(new, gp, big_alpha=t.big_alpha, msb_first=t.doodad_map_msb_first)
            changed = after.layer_effect != t.layer_effect
            rep.chunks = int(changed.any(axis=1).sum())
            rep.bytes_changed = int(np.count_nonzero(np.frombuffer(new, np.uint8) != np.frombuffer(raw, np.uint8)))
            rep.fields = {"effect_id": rep.bytes_changed}
            rep.before = dict(Counter(t.layer_effect[changed].tolist()))
            edit.files[gp] = new
        edit.reports.append(rep)
    if textures and not matched:   # as assign without --suggest: an error naming the closest textures
        from wowgrass.edit.batch import no_texture_matches

        raise no_texture_matches(mt.name, tile_count, seen, textures)
    missing = sorted(none.values(), key=str.lower)
    return edit, chosen, missing


__all__ = ["TextureEffects", "assign_suggested", "client_effects", "client_source", "layer_effects", "scan_effects",
           "source_key"]
