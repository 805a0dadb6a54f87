"""The Findings panel's lines: the audit of the map (edit/audit.py's ``audit_map``) as findings the
camera can fly to. :func:`audit_findings` takes a data spec, so it runs in a worker process (the
audit is seconds of numpy over a large map: never on a thread beside the frame's)."""

from __future__ import annotations

from dataclasses import dataclass

from .geometry import chunk_centre, tile_centre


@dataclass
class Finding:
    """One line of the audit's findings, with where the camera flies for it (None: nowhere)."""

    kind: str
    text: str
    target: tuple | None = None  # world (X, Y)


def findings_of(a) -> list[Finding]:
    """An :class:`~wowgrass.edit.audit.Audit` as the panel's findings: each line begins with where
    it is (tile, chunk), so a line the panel's width cuts still names its tile."""
    found = []
    for tex in a.textures:
        for c in tex["unassigned_chunks"][:50]:
            found.append(Finding("unassigned", f"tile {c['tile'][0]},{c['tile'][1]} chunk {c['chunk'][0]},"
                                 f"{c['chunk'][1]}: {tex['path'].rsplit(chr(92), 1)[-1]} has no effect id",
                                 chunk_centre(tuple(c["tile"]), tuple(c["chunk"]))))
    for t in a.per_tile:
        col, row = t["tile"]
        centre = tile_centre((col, row))
        if t.get("stale"):
            found.append(Finding("stale", f"tile {col},{row}: {t['stale']} stale doodadMapping cells", centre))
        if t.get("excluded_grass"):
            found.append(Finding("excluded", f"tile {col},{row}: {t['excluded_grass']} excluded cells "
                                 "that would grow grass", centre))
    for r in a.missing_rows:
        found.append(Finding("no row", f"effect {r['id']}: no GroundEffectTexture row ({r['cells']} cells)"))
    for m in a.missing_models:
        found.append(Finding("model", f"missing model {m['model']} (effects {m['effects']})"))
    return found


def audit_findings(data, map_name: str) -> dict:
    """The audit of ``map_name`` (``data``: a GameData or its ``spec()``, opened here): the findings,
    the map's grass textures (lower case) and the tile count; small enough to send between processes."""
    from wowgrass.edit.audit import audit_map

    opened = not hasattr(data, "read")
    d = data.open() if opened else data
    try:
        a = audit_map(d, map_name, picture=False)
    finally:
        if opened:
            d.close()
    return {"findings": findings_of(a), "grass_textures": {t["path"].lower() for t in a.textures if t["carries_grass"]},
            "tile_count": len(a.tiles)}
