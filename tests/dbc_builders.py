"""Independent WDBC byte builders for the dbc/effects tests (plain struct, no wowgrass.formats).

The synthetic ground-effect tables mirror the real layouts (formats.md §3.2/§3.3) with a handful of
rows that exercise every rule: tag keying (1.12) vs ID keying (3.3.5), empty slots, .mdl/.mdx names,
density 0 / > 12 / > 24, unsorted IDs.
"""

from __future__ import annotations

import struct


def dbc_bytes(rows, strings: bytes = b"\0", *, magic=b"WDBC", field_count=None, record_size=None,
              record_count=None, string_block_size=None) -> bytes:
    """Header + rows of 32-bit ints (negative values written as two's complement) + string block."""
    f = field_count if field_count is not None else (len(rows[0]) if rows else 0)
    rs = record_size if record_size is not None else 4 * f
    body = b"".join(struct.pack(f"<{len(r)}I", *[v & 0xFFFFFFFF for v in r]) for r in rows)
    n = record_count if record_count is not None else len(rows)
    sb = string_block_size if string_block_size is not None else len(strings)
    return struct.pack("<4s4I", magic, n, f, rs, sb) + body + strings


def string_block(names):
    """A block starting with the empty string; returns (bytes, offsets)."""
    buf = b"\0"
    offsets = []
    for name in names:
        offsets.append(len(buf))
        buf += name.encode() + b"\0"
    return buf, offsets


DOODAD_PATHS = ["ElwFlo01.mdl", "ElwGra01.mdl", "ElwGra02.mdx", "Some\\Dir\\Foo.MDX", "NoExt"]
DOODAD_FLAGS = [0, 1, 0, 2, 0]


def doodad_112(paths=DOODAD_PATHS) -> bytes:
    """1.12/2.4.3: ID (1-based), DoodadIdTag (= ID - 1), Doodadpath."""
    block, offs = string_block(paths)
    return dbc_bytes([[i + 1, i, o] for i, o in enumerate(offs)], block)


def doodad_335(paths=DOODAD_PATHS, flags=DOODAD_FLAGS) -> bytes:
    """3.3.5: ID, Doodadpath, Flags."""
    block, offs = string_block(paths)
    return dbc_bytes([[i + 1, o, fl] for i, (o, fl) in enumerate(zip(offs, flags))], block)


# (ID, DoodadID[4], Density, Sound): DoodadIDs are tags (0 = ElwFlo01, 1 = ElwGra01, 2 = ElwGra02 …)
TEXTURE_112_ROWS = [
    (453, [1, 2, 0, -1], 5, 7),
    (12, [-1, -1, -1, -1], 0, 5),
    (99, [3, 3, -1, -1], 30, 1),
    (7, [2, -1, -1, -1], 13, 2),
    (300, [4, -1, -1, -1], 0, 3),
]


def texture_112(rows=TEXTURE_112_ROWS) -> bytes:
    return dbc_bytes([[i, *d, dens, snd] for i, d, dens, snd in rows])


# (ID, DoodadID[4], DoodadWeight[4], Density, Sound): DoodadIDs are doodad IDs (1 = ElwFlo01 …), 0 empty
TEXTURE_335_ROWS = [
    (453, [2, 3, 1, 0], [8, 4, 4, 0], 5, 7),
    (12, [0, 0, 0, 0], [1, 1, 1, 1], 0, 5),
    (99, [4, 4, 0, 0], [1, 1, 1, 1], 30, 1),
    (7, [3, 0, 0, 0], [16, 0, 0, 0], 13, 2),
    (40199, [5, 0, 0, 0], [1, 1, 1, 1], 3, 9),
]


def texture_335(rows=TEXTURE_335_ROWS) -> bytes:
    return dbc_bytes([[i, *d, *w, dens, snd] for i, d, w, dens, snd in rows])


def texture_110(rows=TEXTURE_112_ROWS) -> bytes:
    """Pre-1.11: ID, Datestamp, ContinentID, TextureID, TextureName, DoodadID[4], Density, Sound."""
    block, offs = string_block([f"Tileset\\Tex{i}.blp" for i in range(len(rows))])
    return dbc_bytes([[i, 0, 1, 100 + k, offs[k], *d, dens, snd] for k, (i, d, dens, snd) in enumerate(rows)],
                     block)


class FakeData:
    """Stand-in for wowgrass.game.data.GameData: case-insensitive dict of path → bytes."""

    def __init__(self, files: dict[str, bytes], build: str | None = None):
        self.files = {k.replace("/", "\\").lower(): v for k, v in files.items()}
        self.build = build

    def read(self, path: str) -> bytes:
        from wowgrass.errors import GameFileNotFound

        try:
            return self.files[path.replace("/", "\\").lower()]
        except KeyError:
            raise GameFileNotFound(path) from None

    def exists(self, path: str) -> bool:
        return path.replace("/", "\\").lower() in self.files
