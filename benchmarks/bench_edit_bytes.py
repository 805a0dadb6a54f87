"""Bytes each ground-effect edit changes on the real tiles (``$WOWGRASS_REALDATA/adt``), and where.

For every edit kind (assign, remap, exclude by mask, slope, liquid and objects) on
``continent4229.adt`` and ``Azeroth_38_46.adt``: the bytes that differ from the input, the fields
they fall in (found by walking the file's chunks with ``struct``, independently of the edit code),
and any byte outside those fields (there must be none). For scale, the bytes ``write_adt`` moves
when it re-serialises the same tile: none on these two (Blizzard's layout is wowgrass's), many on
the same tile laid out as another map editor writes it (``tests/adt_build.editor_layout``: sub-chunks
reversed, padding chunks, MCIN sizes without headers), where the edits still touch only their
fields. Prints a table (``--json OUT`` writes it too).
Run: ``WOWGRASS_REALDATA=../shared/realdata .venv/bin/python benchmarks/bench_edit_bytes.py``.
"""

from __future__ import annotations

import json
import os
import struct
import sys
from pathlib import Path

import numpy as np

from wowgrass.edit import masks as M
from wowgrass.edit.adt_edit import assign_effect, exclude_cells, read_tile, remap_mapping
from wowgrass.formats.adt import write_adt


def field_bytes(data: bytes) -> dict[str, set[int]]:
    """Offsets of each MCNK's effectId (per MCLY record), doodadMapping and noEffectDoodad bytes."""
    out = {"effect_id": set(), "doodad_mapping": set(), "no_effect_doodad": set()}
    off = 0
    while off + 8 <= len(data):
        tag, size = struct.unpack_from("<4sI", data, off)
        if tag == b"KNCM":
            h = off + 8
            n, = struct.unpack_from("<I", data, h + 0x0C)
            ofs, = struct.unpack_from("<I", data, h + 0x1C)
            for k in range(n):
                out["effect_id"].update(range(off + ofs + 8 + 16 * k + 12, off + ofs + 8 + 16 * k + 16))
            out["doodad_mapping"].update(range(h + 0x40, h + 0x50))
            out["no_effect_doodad"].update(range(h + 0x50, h + 0x58))
        off += 8 + size
    return out


def diff(a: bytes, b: bytes) -> np.ndarray:
    n = min(len(a), len(b))
    d = np.flatnonzero(np.frombuffer(a[:n], np.uint8) != np.frombuffer(b[:n], np.uint8))
    return np.concatenate([d, np.arange(n, max(len(a), len(b)))])


def main() -> None:
    root = os.environ.get("WOWGRASS_REALDATA")
    if not root:
        sys.exit("set WOWGRASS_REALDATA to the real-data folder")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from adt_build import editor_layout

    rows = []
    tiles = [(n, (Path(root) / "adt" / n).read_bytes()) for n in ("continent4229.adt", "Azeroth_38_46.adt")]
    tiles.append(("continent4229 (editor layout)", editor_layout(tiles[0][1], mcin="payload", pad=True)))
    for name, raw in tiles:
        t = read_tile(raw, name, big_alpha=False)
        tex = t.textures[0].rsplit("\\", 1)[-1]
        mask = np.zeros((256, 8, 8), bool)
        mask[::5, 2:6, 1:7] = True
        edits = {
            f"assign {tex} -> 1493": lambda: assign_effect(raw, name, tex, 1493, tile=t),
            "assign * -> 454 (every layer)": lambda: assign_effect(raw, name, "*", 454, tile=t),
            "remap --margin 0": lambda: remap_mapping(raw, name, margin=0.0, tile=t),
            "remap (margin 0.25)": lambda: remap_mapping(raw, name, tile=t),
            "exclude mask (every 5th chunk, 4x6 cells)": lambda: exclude_cells(raw, name, mask, tile=t),
            "exclude --slope-above 30": lambda: exclude_cells(raw, name, M.slope_mask(t, 30), tile=t),
            "exclude --under-liquid": lambda: exclude_cells(raw, name, M.liquid_mask(t), tile=t),
            "exclude --near-objects 5": lambda: exclude_cells(raw, name, M.near_objects_mask(t, 5), tile=t),
            "exclude --clear (every cell)": lambda: exclude_cells(raw, name, np.ones((256, 8, 8), bool), True, tile=t),
        }
        fields = field_bytes(raw)
        for what, run in edits.items():
            new, rep = run()
            d = diff(raw, new)
            where = {k: int(np.isin(d, list(v)).sum()) for k, v in fields.items()}
            outside = int(d.size - sum(where.values()))
            rows.append({"tile": name, "edit": what, "changed_byte_count": int(d.size),
                         "by_field": {k: v for k, v in where.items() if v}, "outside_count": outside,
                         "layer_count": rep.layers, "cell_count": rep.cells, "length_same": len(new) == len(raw)})
        moved = diff(raw, write_adt(t))
        rows.append({"tile": name, "edit": "write_adt(read) for scale", "changed_byte_count": int(moved.size),
                     "by_field": {}, "outside_count": None, "layer_count": 0, "cell_count": 0,
                     "length_same": len(write_adt(t)) == len(raw)})
    w = max(len(r["edit"]) for r in rows)
    for r in rows:
        fields = ", ".join(f"{k} {v:,}" for k, v in r["by_field"].items()) or "-"
        out = "" if r["outside_count"] is None else f"; outside the fields: {r['outside_count']}"
        print(f"{r['tile']:<29} {r['edit']:<{w}}  {r['changed_byte_count']:>9,} bytes ({fields}){out}; "
              f"{r['layer_count']:,} layers, {r['cell_count']:,} cells")
    if "--json" in sys.argv:
        Path(sys.argv[sys.argv.index("--json") + 1]).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
