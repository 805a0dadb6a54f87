"""Test vectors of the clients' scatter for other projects (docs/bake.md, issue 41.7).

Map editors, client re-implementations and viewers can check their own port of the clients'
ground-effect scatter against these: the generator's random numbers for a few seeds, and per chunk
of a tile the number of placements and a hash of them, for a build and a number of cell picks.

**The placement hash** of a chunk (:func:`chunk_hashes`): SHA-256 over the concatenation, in the
client's scatter order (pick by pick, doodad by doodad), of one record per placement:

* X, Y, Z: three little-endian float32, the world position as the client computes it (X north,
  Y west, Z up, yards);
* yaw: little-endian float32, radians about Z as the client computes it (1.12/2.4.3: in
  [-pi, pi]; 3.3.5: in [0, 2 pi]);
* scale: little-endian float32;
* cell: one byte, ``row * 8 + column`` inside the chunk;
* the model's file stem, lower-case ASCII (``World\\NoDXT\\Detail\\ElwGra01.m2`` and
  ``ElwGra01.mdl`` both give ``elwgra01``), then one zero byte.

The hash is written as the first 16 hex digits (8 bytes) of the digest; a chunk with no
placement has none (``null``). The tile hash is the same over every chunk's records, chunk 0 to
255 (MCNK order, ``IndexY * 16 + IndexX``), full length. The vectors are the scatter (what the
clients place, noEffectDoodad tested in every build), before the draw capacity.

Pure: tiles and catalogues in, plain dicts out.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re

import numpy as np

from wowgrass.grass.placement import ClientPlacement, PlacementConstants, client_draws, client_picks, client_reals

FORMAT = "wowgrass-client-scatter-vectors"
FORMAT_VERSION = 1
#: the hash's digits per chunk (8 bytes of the SHA-256)
CHUNK_HASH_DIGITS = 16
#: the seeds whose random numbers the file lists: client.md's two, chunk 0 of each shared real tile
#: among them, and the edges of the seed range
GENERATOR_SEEDS = (0x02E00260, 0x01D002A0, 0x00000000, 0x00000001, 0x7FFF7FFF, 0xFFFFFFFF)
PICKS = (16, 48, 256)


def model_stem(path: str) -> str:
    """``World\\NoDXT\\Detail\\ElwGra01.m2`` -> ``elwgra01``: how the hash names a model."""
    name = str(path).replace("/", "\\").rsplit("\\", 1)[-1]
    return name.rsplit(".", 1)[0].lower() if "." in name else name.lower()


#: the fixed part of a hash record: X, Y, Z, yaw, scale as float32, the cell as a byte (21 bytes, packed)
RECORD_DTYPE = np.dtype([("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("yaw", "<f4"), ("scale", "<f4"), ("cell", "u1")])
assert RECORD_DTYPE.itemsize == 21


def placement_records(inst) -> tuple[np.ndarray, np.ndarray]:
    """Every placement's hash record of ``inst`` (:class:`Instances`, in its order) end to end, as
    one uint8 buffer, and where each record starts in it (n + 1 offsets)."""
    n = len(inst)
    if n == 0:
        return np.zeros(0, np.uint8), np.zeros(1, np.int64)
    fixed = np.empty(n, RECORD_DTYPE)
    for name, values in (("x", inst.pos[:, 0]), ("y", inst.pos[:, 1]), ("z", inst.pos[:, 2]), ("yaw", inst.yaw),
                         ("scale", inst.scale), ("cell", inst.cell)):
        fixed[name] = values
    stems = [model_stem(m).encode("ascii", "replace") + b"\0" for m in inst.models] or [b"\0"]
    stem_len = np.array([len(t) for t in stems], np.int64)
    table = np.zeros((len(stems), int(stem_len.max())), np.uint8)
    for k, t in enumerate(stems):
        table[k, :len(t)] = np.frombuffer(t, np.uint8)
    model = np.asarray(inst.model, np.int64)
    lengths = RECORD_DTYPE.itemsize + stem_len[model]
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    buf = np.empty(int(offsets[-1]), np.uint8)
    buf[offsets[:-1, None] + np.arange(RECORD_DTYPE.itemsize)] = fixed.view(np.uint8).reshape(n, -1)
    own = stem_len[model]
    col = np.arange(int(own.sum())) - np.repeat(np.cumsum(own) - own, own)
    buf[np.repeat(offsets[:-1] + RECORD_DTYPE.itemsize, own) + col] = table[np.repeat(model, own), col]
    return buf, offsets


def chunk_hashes(inst) -> tuple[list[int], list[str | None], str]:
    """Per chunk (256) the placement count and hash of ``inst`` (in the client's scatter order,
    chunk by chunk), and the tile's hash (see the module's docstring)."""
    chunk = np.asarray(inst.chunk, dtype=np.int64)
    if chunk.size and (np.diff(chunk) < 0).any():
        raise ValueError("the placements are not grouped by chunk (the client's scatter order is)")
    buf, offsets = placement_records(inst)
    counts = np.bincount(chunk, minlength=256).astype(np.int64)
    bounds = offsets[np.concatenate(([0], np.cumsum(counts)))]
    hashes: list[str | None] = [None] * 256
    tile = hashlib.sha256()
    for c in np.flatnonzero(counts).tolist():
        blob = buf[bounds[c]:bounds[c + 1]].tobytes()
        hashes[c] = hashlib.sha256(blob).hexdigest()[:CHUNK_HASH_DIGITS]
        tile.update(blob)
    return counts.tolist(), hashes, tile.hexdigest()


def tile_vectors(tile, catalog, picks: int, constants: PlacementConstants | None = None) -> dict:
    """The counts and hashes of the clients' scatter of ``tile`` with ``catalog`` at ``picks``."""
    k = dataclasses.replace(constants or PlacementConstants(), client_picks=int(picks))
    inst = ClientPlacement(k).place(tile, catalog, map_name="vectors")
    counts, hashes, tile_hash = chunk_hashes(inst)
    return {"pick_count": int(picks), "taken_pick_count": client_picks(k, catalog), "placement_count": int(sum(counts)),
            "tile_hash": tile_hash, "chunk_counts": counts, "chunk_hashes": hashes}


def generator_vectors(seeds=GENERATOR_SEEDS, draws: int = 16, reals: int = 8) -> list[dict]:
    """For each seed: its first ``draws`` uint32 draws, and the first ``reals`` reals of a fresh stream
    as float32 bit patterns and as decimals."""
    out = []
    for seed in seeds:
        u = client_draws([seed], max(draws, reals))[0]
        r = client_reals(u[:reals])
        out.append({"seed": f"0x{int(seed):08X}", "uint32": [f"0x{int(v):08X}" for v in u[:draws].tolist()],
                    "reals_f32_bits": [f"0x{int(v):08X}" for v in r.view(np.uint32).tolist()],
                    "reals": [float(f"{float(v):.9g}") for v in r.tolist()]})
    return out


def realdata_vectors(realdata, *, tiles=("Azeroth_38_46.adt", "continent4229.adt"), builds=("1.12", "3.3.5"),
                     picks=PICKS) -> dict:
    """The whole vector file from the shared real tiles and tables under ``realdata`` (its ``adt``
    and ``dbc/<build>`` folders): every tile with every build's tables at every picks value."""
    from pathlib import Path

    from wowgrass.formats.adt import AdtTile
    from wowgrass.grass.bake import load_catalog

    root = Path(realdata)
    entries = []
    for name in tiles:
        raw = (root / "adt" / name).read_bytes()
        tile = AdtTile.from_bytes(raw, str(root / "adt" / name))
        for build in builds:
            catalog = load_catalog(dbc_dir=root / "dbc" / build)
            for p in picks:
                entries.append({"tile": name, "adt_sha256": hashlib.sha256(raw).hexdigest(),
                                "tile_col_row": [int(tile.col), int(tile.row)], "build": build,
                                "tables": f"dbc/{build}", **tile_vectors(tile, catalog, p)})
    return {"format": FORMAT, "format_version": FORMAT_VERSION,
            "description": "The 1.12/2.4.3 and 3.3.5 clients' ground-effect scatter as wowgrass reproduces it "
                           "(--placement client): random numbers for a few seeds, and per chunk of each tile "
                           "the placement count and hash. docs/bake.md (test vectors for other projects) defines every field.",
            "hash": "per chunk: sha256 over records <f4 X, <f4 Y, <f4 Z, <f4 yaw, <f4 scale, u8 cell, model stem "
                    "lower-case + NUL, in scatter order; first 16 hex digits. tile_hash: the same over all "
                    "chunks in MCNK order, full length",
            "rules": "noEffectDoodad tested in every build; 3.3.5 raises picks below 16 to 16; 2.4.3 shares the "
                     "1.12 routine and tables; before the draw capacity",
            "generator": generator_vectors(), "tiles": entries}


def to_json(doc) -> str:
    """``doc`` as indented JSON with each list of numbers or strings on one line (a modest file that
    still reads)."""
    text = json.dumps(doc, indent=1)
    return re.sub(r"\[\s*\n([^\[\]{}]*?)\n\s*\]", lambda m: "[" + re.sub(r",\s*\n\s*", ", ", m.group(1).strip()) + "]",
                  text) + "\n"


def main(argv=None) -> int:
    """``python -m wowgrass.grass.vectors REALDATA OUT.json``: write the vector file (make vectors)."""
    import sys

    from wowgrass.fileio import write_atomic

    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        print("usage: python -m wowgrass.grass.vectors REALDATA_DIR OUT.json", file=sys.stderr)
        return 2
    doc = realdata_vectors(args[0])
    write_atomic(args[1], to_json(doc).encode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
