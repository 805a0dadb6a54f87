"""A bundle's instances as placement rows (CSV or JSON), like wow.export's placement CSV.

One row per instance: model path, world position (X north, Y west, Z up, yards), yaw (degrees
about Z, counter-clockwise from +X), scale, and the MCNK chunk (IndexY*16+IndexX) and cell
(r*8+c) the stored position lies in. Bundles store no per-instance cell, so it is derived from the
position; a position within float32 rounding of a cell edge may land in the neighbouring cell.
"""

from __future__ import annotations

import csv
import io
import json

import numpy as np

from wowgrass.grass.bundle import unpack_instances
from wowgrass.formats.adt import TILE_SIZE, UNIT_SIZE, ZEROPOINT

COLUMNS = ("model", "x", "y", "z", "yaw", "scale", "tile_col", "tile_row", "chunk", "cell")


def chunk_cell(pos: np.ndarray, col: int, row: int) -> tuple[np.ndarray, np.ndarray]:
    """MCNK index and cell index (r*8+c) of world positions inside tile (col, row)."""
    p = np.asarray(pos, np.float64)
    south = ZEROPOINT - row * TILE_SIZE - p[:, 0]  # distance from the tile's north edge
    east = ZEROPOINT - col * TILE_SIZE - p[:, 1]  # from its west edge
    fy = np.clip(np.floor(south / UNIT_SIZE).astype(np.int64), 0, 127)
    fx = np.clip(np.floor(east / UNIT_SIZE).astype(np.int64), 0, 127)
    return ((fy // 8) * 16 + fx // 8).astype(np.int32), ((fy % 8) * 8 + fx % 8).astype(np.int32)


def bundle_rows(bundle) -> dict[str, np.ndarray]:
    """Column arrays of every instance of an open :class:`~wowgrass.grass.bundle.Bundle`, model by model."""
    col, row = (int(v) for v in bundle.tile)
    counts = [len(m) for m in bundle.models]
    inst = bundle.instances()
    pos, yaw, scale = unpack_instances(inst)
    chunk, cell = chunk_cell(pos, col, row)
    names = np.array([m.path for m in bundle.models] or [""], dtype=object)
    n = len(inst)
    return {
        "model": np.repeat(names[: len(counts)], counts) if counts else np.zeros(0, object),
        "x": pos[:, 0], "y": pos[:, 1], "z": pos[:, 2],
        "yaw": np.degrees(yaw.astype(np.float64)),
        "scale": scale,
        "tile_col": np.full(n, col, np.int32), "tile_row": np.full(n, row, np.int32),
        "chunk": chunk, "cell": cell,
    }


def _concat(tables: list[dict]) -> dict[str, np.ndarray]:
    if not tables:
        return {c: np.zeros(0, object if c == "model" else np.float32) for c in COLUMNS}
    return {c: np.concatenate([t[c] for t in tables]) for c in COLUMNS}


def _text_columns(t: dict, quote) -> list[np.ndarray]:
    """Every column as strings: floats in their shortest round-trip form (float32 positions stay
    exact), model names quoted once per distinct name with ``quote``."""
    names, inverse = np.unique(t["model"].astype(str), return_inverse=True)
    quoted = np.array([quote(n) for n in names.tolist()] or [""], dtype=object)
    out = [quoted[inverse].astype(str)]
    for c in COLUMNS[1:]:
        v = t[c]
        if c == "yaw":
            v = np.round(v.astype(np.float64), 4)
        out.append(np.asarray(v).astype(str))
    return out


def _lines(cols: list[np.ndarray], sep: str, prefix: str = "", suffix: str = "") -> list[str]:
    line = np.full(len(cols[0]), prefix, dtype=object)
    for i, c in enumerate(cols):
        line = line + (c.astype(object) if i == 0 else sep + c.astype(object))
    return (line + suffix).tolist()


def _csv_field(text: str) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow([text])
    return buf.getvalue()


def rows_csv(tables: list[dict]) -> bytes:
    """CSV: a header, then one line per instance."""
    t = _concat(tables)
    lines = [",".join(COLUMNS)] + _lines(_text_columns(t, _csv_field), ",")
    return ("\n".join(lines) + "\n").encode()


def rows_json(tables: list[dict], sources: list[str]) -> bytes:
    """``{"files": [...], "columns": [...], "count": n, "rows": [[...], ...]}``: one array per
    instance keeps a 100k-instance tile a few MB instead of repeating the keys in every row."""
    t = _concat(tables)
    rows = _lines(_text_columns(t, json.dumps), ",", "[", "]")
    head = json.dumps({"files": [str(s) for s in sources], "columns": list(COLUMNS), "count": len(rows)})
    return (head[:-1] + ',"rows":[\n' + ",\n".join(rows) + "\n]}\n").encode()
