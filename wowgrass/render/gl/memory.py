"""GPU memory accounting: the bytes the renderer holds on the GPU, by kind and by resident tile.

Every source registers what it allocates (buffers, textures, render targets) with the context's
:class:`GpuMemory` (:func:`gpu_memory`), by *kind* (``KINDS``; a new source may bring its own),
and says how much of a pooled allocation each tile uses (an arena slot, a tile's instances):

    mem = gpu_memory(ctx)
    vbo = mem.track(ctx.buffer(reserve=n), "terrain-near")   # counted until vbo.release()
    mem.use((col, row), "terrain-near", slot_bytes)           # the tile's share (0: none)

``allocated()`` is what the GPU holds (arena capacity included: what a card must have);
``tiles()`` what each resident tile occupies of it. A tracked object's ``release()`` takes it
off the books, wherever it is called from. On llvmpipe these bytes are process memory too.
"""

from __future__ import annotations

import weakref
from collections import defaultdict

# The kinds the renderer uses; free strings, so a new source can add its own.
KINDS = (
    "terrain-near",    # complete tiles: vertices, five index levels, alpha atlas (sources/terrain.py)
    "terrain-far",     # lean far tiles: coarse levels' vertices and indices, a low-resolution colour
    "terrain-lines",   # edge lists of lines views (built when a lines view first asks)
    "terrain-layers",  # the MTEX texture array shared by name
    "terrain-tables",  # per-chunk boxes, level ranges, indirect commands
    "grass",           # instance arenas, compacted buffers, commands, grid textures
    "doodads",         # doodad instance matrices
    "models",          # model meshes and their textures (grass and doodads)
    "horizon",         # the WDL's low-resolution map (sources/horizon.py)
    "meadow",          # the procedural meadow (sources/meadow.py)
    "liquids", "wmo",
    "frame",           # render targets, the frame block ring, shadow map, overlay, readback scratch
)

_ITEM = {"f1": 1, "u1": 1, "i1": 1, "f2": 2, "u2": 2, "i2": 2, "f4": 4, "u4": 4, "i4": 4}


def mip_bytes(width: int, height: int, texel: int, layers: int = 1) -> int:
    """Bytes of a full mipmap chain down to 1x1."""
    total, w, h = 0, int(width), int(height)
    while True:
        total += w * h * texel
        if w == 1 and h == 1:
            return total * layers
        w, h = max(w // 2, 1), max(h // 2, 1)


def object_bytes(obj, mipmaps: bool = False) -> int:
    """Bytes a moderngl buffer, texture, texture array or renderbuffer holds."""
    size = getattr(obj, "size", None)
    if isinstance(size, int):  # a buffer
        return size
    w, h = int(obj.width), int(obj.height)
    texel = int(obj.components) * _ITEM.get(str(getattr(obj, "dtype", "f1")), 4)
    if getattr(obj, "depth", False):
        texel = 4
    layers = int(getattr(obj, "layers", 1) or 1) * max(int(getattr(obj, "samples", 0) or 0), 1)
    return mip_bytes(w, h, texel, layers) if mipmaps else w * h * texel * layers


class GpuMemory:
    """The books of one GL context: tracked objects by kind, and each tile's share."""

    def __init__(self):
        self._objects: dict[int, tuple[str, int]] = {}  # id(obj) -> (kind, bytes)
        self._use: dict = defaultdict(dict)  # tile -> {kind: bytes}
        self._total = 0  # kept as objects come and go: reading it costs nothing per frame
        self.peak = 0  # the most allocated at once

    def track(self, obj, kind: str, nbytes: int | None = None, *, mipmaps: bool = False):
        """Count ``obj`` as ``kind`` until its ``release()``; returns it. ``nbytes`` overrides
        the size worked out from the object (``mipmaps``: with its full mipmap chain)."""
        if obj is None:
            return None
        key = id(obj)
        self._set(key, kind, int(object_bytes(obj, mipmaps) if nbytes is None else nbytes))
        release = obj.release
        books = weakref.ref(self)

        def release_and_forget():
            m = books()
            if m is not None:
                m._forget(key)
            release()

        obj.release = release_and_forget
        return obj

    def retrack(self, obj, kind: str | None = None, nbytes: int | None = None, *, mipmaps: bool = False):
        """Count a tracked object again (its size changed: mipmaps built, say)."""
        old = self._objects.get(id(obj))
        if old is None:
            return self.track(obj, kind or "frame", nbytes, mipmaps=mipmaps)
        self._set(id(obj), kind or old[0], int(object_bytes(obj, mipmaps) if nbytes is None else nbytes))
        return obj

    def _set(self, key: int, kind: str, n: int):
        old = self._objects.get(key)
        self._total += n - (old[1] if old else 0)
        self._objects[key] = (kind, n)
        self.peak = max(self.peak, self._total)

    def _forget(self, key: int):
        old = self._objects.pop(key, None)
        if old is not None:
            self._total -= old[1]

    def use(self, tile, kind: str, nbytes: int):
        """Tile ``tile`` occupies ``nbytes`` of ``kind`` (replacing what it had; 0 clears it)."""
        if nbytes:
            self._use[tile][kind] = int(nbytes)
        else:
            u = self._use.get(tile)
            if u is not None:
                u.pop(kind, None)
                if not u:
                    del self._use[tile]

    def add_use(self, tile, kind: str, nbytes: int):
        """Add ``nbytes`` (may be negative) to ``tile``'s ``kind``."""
        self.use(tile, kind, self._use.get(tile, {}).get(kind, 0) + int(nbytes))

    def drop_tile(self, tile):
        self._use.pop(tile, None)

    def allocated(self) -> dict[str, int]:
        """Bytes held on the GPU per kind."""
        out: dict[str, int] = defaultdict(int)
        for kind, n in self._objects.values():
            out[kind] += n
        return dict(sorted(out.items()))

    def total(self) -> int:
        return self._total

    def tiles(self) -> dict:
        """``{tile: {kind: bytes}}`` of what each tile occupies."""
        return {t: dict(u) for t, u in self._use.items()}

    def objects(self) -> int:
        return len(self._objects)

    def report(self) -> dict:
        """JSON-ready: total, per kind, object count, peak (per-tile figures: :func:`tile_summary`)."""
        return {"total_bytes": self.total(), "peak_bytes": self.peak, "objects": len(self._objects),
                "by_kind": self.allocated()}


_BOOKS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def gpu_memory(ctx) -> GpuMemory:
    """The books of context ``ctx`` (made on first use)."""
    m = _BOOKS.get(ctx)
    if m is None:
        m = _BOOKS[ctx] = GpuMemory()
    return m


def tile_summary(mem: GpuMemory, groups: dict) -> dict:
    """Per-tile figures for each group of tiles (``{"near": [keys], "far": [keys]}``): how many,
    mean and largest total bytes, and the mean bytes per kind."""
    use = mem.tiles()
    out = {}
    for name, keys in groups.items():
        totals = [sum(use.get(k, {}).values()) for k in keys]
        kinds: dict[str, int] = defaultdict(int)
        for k in keys:
            for kind, n in use.get(k, {}).items():
                kinds[kind] += n
        n = max(len(keys), 1)
        out[name] = {"tiles": len(keys), "mean_bytes": sum(totals) / n if keys else 0,
                     "max_bytes": max(totals, default=0),
                     "mean_by_kind": {k: v / n for k, v in sorted(kinds.items())}}
    return out


def mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB"
