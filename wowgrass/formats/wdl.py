"""WDL v18 (1.12 – 3.3.5): a map's low-resolution heights, what the clients draw as the horizon.

``World\\Maps\\<Map>\\<Map>.wdl`` (https://wowdev.wiki/WDL/v18; the 0.5.3 client's
``CMap::LoadWdl`` as reconstructed publicly reads it the same way):

* ``MVER`` first, version 18.
* Optionally chunks before ``MAOF`` — ``MWMO``/``MWID``/``MODF``, the low-detail WMO
  silhouettes the 3.3.5 parser accepts there (later clients write them) — kept as raw bytes.
* ``MAOF``: 64 x 64 ``u32``, row-major ``[row][col]``: the absolute file offset of each tile's
  ``MARE`` chunk header, 0 where the map has no tile.
* ``MARE`` (at those offsets): 545 ``i16`` heights in world units: the 17 x 17 *outer* points
  (the tile's chunk corners, row-major, rows going south, columns east), then the 16 x 16
  *inner* points (the chunk centres).
* ``MAHO`` right after a ``MARE`` (2.4.3 and 3.3.5 write it for every tile; 1.12 files have
  none, and a client treats a missing one as no holes): 16 ``u16``, value ``y`` bit ``x`` set =
  chunk ``(x, y)`` is a hole (set where all 16 of the ADT chunk's low-resolution holes are).

The reader checks every offset and size against the bytes present and raises
:class:`~wowgrass.errors.FormatError` naming the file and offset; :func:`write_wdl` writes the
same layout (``maho=False``: the 1.12 one). :func:`wdl_tile_from_adt` samples an ADT tile the way
the WDL's points stand on it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

from wowgrass.errors import FormatError, TruncatedError
from wowgrass.formats.chunks import HEADER_SIZE, disk_tag, iter_chunks, write_chunk

VERSION = 18
MAOF_SIZE = 64 * 64 * 4
MARE_HEIGHTS = 17 * 17 + 16 * 16  # 545
MARE_SIZE = MARE_HEIGHTS * 2  # 1090
MAHO_SIZE = 16 * 2


@dataclass(eq=False)
class WdlFile:
    """A WDL's tiles: ``tiles`` (n, 2) ``(col, row)`` in MAOF order (row-major), with per tile
    ``outer`` (n, 17, 17) and ``inner`` (n, 16, 16) int16 heights and ``holes`` (n, 16) u16 (MAHO;
    ``has_maho`` (n,) says which tiles carried one)."""

    tiles: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int64))
    outer: np.ndarray = field(default_factory=lambda: np.zeros((0, 17, 17), "<i2"))
    inner: np.ndarray = field(default_factory=lambda: np.zeros((0, 16, 16), "<i2"))
    holes: np.ndarray = field(default_factory=lambda: np.zeros((0, 16), "<u2"))
    has_maho: np.ndarray | None = None
    extra_chunks: list = field(default_factory=list)  # [(tag, payload)] between MVER and MAOF
    version: int = VERSION
    path: str | None = None

    def __post_init__(self):
        self.tiles = np.asarray(self.tiles, np.int64).reshape(-1, 2)
        n = len(self.tiles)
        self.outer = np.asarray(self.outer, "<i2").reshape(n, 17, 17)
        self.inner = np.asarray(self.inner, "<i2").reshape(n, 16, 16)
        self.holes = np.asarray(self.holes, "<u2").reshape(n, 16)
        self.has_maho = np.ones(n, bool) if self.has_maho is None else np.asarray(self.has_maho, bool).reshape(n)
        if ((self.tiles < 0) | (self.tiles > 63)).any():
            raise ValueError("WDL tiles must be (col, row) within 0..63")
        self._index = np.full((64, 64), -1, np.int64)  # [row][col] -> tile index
        self._index[self.tiles[:, 1], self.tiles[:, 0]] = np.arange(n)

    def __len__(self) -> int:
        return len(self.tiles)

    @property
    def present(self) -> np.ndarray:
        """(64, 64) bool ``[row][col]``: the tiles the WDL has heights for."""
        return self._index >= 0

    def index(self, col: int, row: int) -> int:
        """The tile's index in the arrays, -1 where the WDL has none."""
        return int(self._index[row, col]) if 0 <= col < 64 and 0 <= row < 64 else -1

    def hole_chunks(self) -> np.ndarray:
        """(n, 16, 16) bool ``[tile, chunk_y, chunk_x]``: MAHO's hole bits."""
        bit = np.arange(16, dtype=np.uint32)
        return ((self.holes.astype(np.uint32)[:, :, None] >> bit[None, None, :]) & 1).astype(bool)

    @classmethod
    def from_bytes(cls, data, path: str | None = None) -> "WdlFile":
        buf = np.frombuffer(memoryview(data).cast("B"), np.uint8)
        n_bytes = len(buf)
        walk = iter_chunks(data, path)
        first = next(walk, None)
        if first is None or first.tag != b"MVER":
            raise FormatError("WDL does not start with an MVER chunk", path=path, offset=0)
        if first.size < 4:
            raise TruncatedError("MVER: expected 4 bytes", path=path, offset=first.offset)
        (version,) = struct.unpack_from("<I", first.payload)
        if version != VERSION:
            raise FormatError(f"WDL version {version}, expected {VERSION}", path=path, offset=first.offset)
        extra, maof = [], None
        for ch in walk:
            if ch.tag == b"MAOF":
                maof = ch
                break
            if ch.tag in (b"MARE", b"MAHO"):
                raise FormatError(f"{ch.tag.decode()} before MAOF", path=path, offset=ch.offset)
            extra.append((ch.tag, bytes(ch.payload)))
        if maof is None:
            raise TruncatedError("WDL has no MAOF chunk", path=path, offset=n_bytes)
        if maof.size != MAOF_SIZE:
            raise FormatError(f"MAOF: expected {MAOF_SIZE} bytes, got {maof.size}", path=path, offset=maof.offset)
        offsets = np.frombuffer(maof.payload, "<u4").reshape(64, 64).astype(np.int64)
        rows, cols = np.nonzero(offsets)
        at = offsets[rows, cols]
        tiles = np.stack([cols, rows], axis=1)
        # every MARE header and payload within the file, checked before anything is gathered
        bad = np.flatnonzero(at + HEADER_SIZE + MARE_SIZE > n_bytes)
        if len(bad):
            i = bad[0]
            raise TruncatedError(f"MAOF[{rows[i]}][{cols[i]}]: a MARE at offset {at[i]} runs past the end "
                                 f"({n_bytes} bytes)", path=path, offset=maof.data_offset + 4 * (rows[i] * 64 + cols[i]))
        head = buf[at[:, None] + np.arange(HEADER_SIZE)[None, :]]
        tags, sizes = head[:, :4], head[:, 4:8].copy().view("<u4")[:, 0].astype(np.int64)
        wrong = np.flatnonzero((tags != np.frombuffer(disk_tag(b"MARE"), np.uint8)[None]).any(axis=1))
        if len(wrong):
            i = wrong[0]
            raise FormatError(f"MAOF[{rows[i]}][{cols[i]}] points at offset {at[i]}, which holds no MARE chunk",
                              path=path, offset=int(at[i]))
        short = np.flatnonzero(sizes < MARE_SIZE)
        if len(short):
            i = short[0]
            raise FormatError(f"MARE of tile {cols[i]}_{rows[i]}: {sizes[i]} bytes, expected {MARE_SIZE}",
                              path=path, offset=int(at[i]))
        end = at + HEADER_SIZE + sizes
        if (end > n_bytes).any():
            i = int(np.flatnonzero(end > n_bytes)[0])
            raise TruncatedError(f"MARE of tile {cols[i]}_{rows[i]} declares {sizes[i]} bytes past the end",
                                 path=path, offset=int(at[i]))
        heights = buf[(at + HEADER_SIZE)[:, None] + np.arange(MARE_SIZE)[None, :]].copy().view("<i2")
        outer = heights[:, :289].reshape(-1, 17, 17)
        inner = heights[:, 289:].reshape(-1, 16, 16)
        # a MAHO right after its MARE (2.4.3+)
        holes = np.zeros((len(at), 16), "<u2")
        has = np.zeros(len(at), bool)
        room = end + HEADER_SIZE <= n_bytes
        if room.any():
            nxt = buf[end[room][:, None] + np.arange(HEADER_SIZE)[None, :]]
            is_maho = np.zeros(len(at), bool)
            is_maho[room] = (nxt[:, :4] == np.frombuffer(disk_tag(b"MAHO"), np.uint8)[None]).all(axis=1)
            msize = np.zeros(len(at), np.int64)
            msize[room] = nxt[:, 4:8].copy().view("<u4")[:, 0]
            bad = np.flatnonzero(is_maho & ((msize < MAHO_SIZE) | (end + HEADER_SIZE + MAHO_SIZE > n_bytes)))
            if len(bad):
                i = bad[0]
                raise FormatError(f"MAHO of tile {cols[i]}_{rows[i]}: {msize[i]} bytes (expected {MAHO_SIZE}) "
                                  f"or past the end", path=path, offset=int(end[i]))
            if is_maho.any():
                sel = np.flatnonzero(is_maho)
                holes[sel] = buf[(end[sel] + HEADER_SIZE)[:, None] + np.arange(MAHO_SIZE)[None, :]].copy().view("<u2")
                has = is_maho
        return cls(tiles, outer, inner, holes, has, extra, version, path)


def write_wdl(wdl: WdlFile, *, maho: bool = True) -> bytes:
    """Serialize ``wdl``: MVER, its extra chunks, MAOF, then each tile's MARE (and MAHO, unless
    ``maho`` is False: the 1.12 layout) in MAOF order."""
    order = np.lexsort((wdl.tiles[:, 0], wdl.tiles[:, 1]))  # row-major, as the offsets run
    head = [write_chunk(b"MVER", struct.pack("<I", wdl.version))]
    head += [write_chunk(tag, payload) for tag, payload in wdl.extra_chunks]
    start = sum(len(h) for h in head) + HEADER_SIZE + MAOF_SIZE
    per = HEADER_SIZE + MARE_SIZE + ((HEADER_SIZE + MAHO_SIZE) if maho else 0)
    offsets = np.zeros((64, 64), "<u4")
    body = []
    for k, i in enumerate(order):
        c, r = wdl.tiles[i]
        offsets[r, c] = start + k * per
        heights = np.concatenate([wdl.outer[i].reshape(-1), wdl.inner[i].reshape(-1)]).astype("<i2")
        body.append(write_chunk(b"MARE", heights.tobytes()))
        if maho:
            body.append(write_chunk(b"MAHO", np.asarray(wdl.holes[i], "<u2").tobytes()))
    return b"".join(head + [write_chunk(b"MAOF", offsets.tobytes())] + body)


def wdl_tile_from_adt(tile) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An :class:`~wowgrass.formats.adt.AdtTile`'s WDL entry: (17, 17) outer heights (its chunk
    corners), (16, 16) inner heights (its chunk centres), both rounded to int16, and the (16,) MAHO
    words (a chunk is a hole when all 16 of its holes are)."""
    h = np.asarray(tile.heights, np.float64) + np.asarray(tile.positions, np.float64)[:, 2:3]  # (256, 145)
    iy = np.asarray(tile.index_xy[:, 1], np.int64)
    ix = np.asarray(tile.index_xy[:, 0], np.int64)
    grid = np.zeros((16, 16, 145))
    grid[iy, ix] = h
    # outer vertex (r, c) of a chunk is MCVT index 17 r + c; the centre (4, 4) is 72
    outer = np.empty((17, 17))
    outer[:16, :16] = grid[:, :, 0]
    outer[16, :16] = grid[15, :, 17 * 8]
    outer[:16, 16] = grid[:, 15, 8]
    outer[16, 16] = grid[15, 15, 17 * 8 + 8]
    inner = grid[:, :, 17 * 4 + 4]
    full = np.zeros((16, 16), bool)
    full[iy, ix] = np.asarray(tile.holes, np.uint32) & 0xFFFF == 0xFFFF
    words = (full.astype(np.uint32) << np.arange(16, dtype=np.uint32)[None, :]).sum(axis=1).astype("<u2")

    def i16(a):
        return np.clip(np.round(a), -32768, 32767).astype("<i2")

    return i16(outer), i16(inner), words


def sniff(prefix: bytes) -> bool:
    return len(prefix) >= 16 and prefix[:4] == disk_tag(b"MVER") and prefix[12:16] in (
        disk_tag(b"MAOF"), disk_tag(b"MWMO"))
