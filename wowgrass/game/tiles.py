"""Terrain tiles for people: load an ADT from a file or a data source, summarize it, draw it.

The format itself lives in :mod:`wowgrass.formats.adt`; this module adds what the ``wowgrass adt``
commands need: finding a tile's WDT (for the big-alpha flag), a JSON-able summary and pictures of
the tile drawn with numpy (north up, east to the right; one 64×64 alpha texel = one pixel at 1024).
"""

from __future__ import annotations

import logging
import re
import zlib
from collections import Counter
from pathlib import Path

import numpy as np

from wowgrass.errors import UsageError
from wowgrass.formats.adt import ALPHA_ENCODING_NAMES, NO_EFFECT_IDS, TILE_SIZE, UNIT_SIZE, AdtTile, McnkFlags
from wowgrass.formats.chunks import iter_chunks
from wowgrass.formats.wdt import WdtFile
from wowgrass.game.coords import tile_offset
from wowgrass.game.maps import adt_game_path, wdt_game_path  # noqa: F401  (the game paths live with the maps)
from wowgrass.paths import find_file

log = logging.getLogger(__name__)

IMAGE_KINDS = ("height", "layers", "effects", "mask")
_TILE_NAME = re.compile(r"^(?P<map>.+)_(?P<col>\d+)_(?P<row>\d+)\.adt$", re.IGNORECASE)


def parse_tile_arg(text: str) -> tuple[int, int]:
    """``"COL,ROW"`` → (col, row) within 0..63."""
    m = re.fullmatch(r"\s*(\d+)\s*[,_ ]\s*(\d+)\s*", text or "")
    if not m:
        raise UsageError(f"--tile must be COL,ROW (e.g. 32,48), got {text!r}")
    col, row = int(m.group(1)), int(m.group(2))
    if not (0 <= col < 64 and 0 <= row < 64):
        raise UsageError(f"--tile {col},{row}: column and row must be 0..63")
    return col, row


def select_tiles(listed, ranges, map_name: str) -> list[tuple[int, int]]:
    """The listed tiles inside any of ``ranges`` (((c0, c1), (r0, r1)) each, or a plain (col, row));
    all when None. A range that matches no listed tile is an error naming it."""
    if not ranges:
        return list(listed)
    out = []
    for rng in ranges:
        (c0, c1), (r0, r1) = ((rng[0], rng[0]), (rng[1], rng[1])) if isinstance(rng[0], int) else rng
        got = [(c, r) for c, r in listed if c0 <= c <= c1 and r0 <= r <= r1]
        if not got:
            text = f"tile {c0},{r0}" if (c0, r0) == (c1, r1) else f"tile in {c0}:{c1},{r0}:{r1}"
            raise UsageError(f"map {map_name!r} has no {text} (`wowgrass maps --long` lists them)")
        out += [t for t in got if t not in out]
    return out


def tile_from_name(path: Path) -> tuple[str, tuple[int, int] | None]:
    """``<Map>_<col>_<row>.adt`` → (map, (col, row)); any other name → (stem, None). A name the
    client would not ask for (zero-padded ``Map_032_048.adt``, a column past 63) names no tile,
    as ``maps`` says too (``maps.adt_name_problem``): (map, None), the tile then comes from the
    file's chunks."""
    m = _TILE_NAME.match(path.name)
    if m:
        col, row = m.group("col"), m.group("row")
        if col != str(int(col)) or row != str(int(row)) or not (int(col) < 64 and int(row) < 64):
            return m.group("map"), None
        return m.group("map"), (int(col), int(row))
    return path.stem, None


def sibling_wdt(adt_path: Path) -> Path | None:
    """``<dir>/<Map>.wdt`` beside ``<dir>/<Map>_<col>_<row>.adt``, when it exists."""
    map_name, tile = tile_from_name(adt_path)
    return find_file(adt_path.parent, f"{map_name}.wdt") if tile is not None else None


def read_adt(raw: bytes, path: str | None = None, big_alpha: bool | None = None, **kw) -> AdtTile:
    """Parse an ADT; ``big_alpha`` None (no WDT says which): 8-bit / RLE alpha maps when the tile
    parses so (a 4-bit tile never does: each of its maps is 2048 bytes, an 8-bit read needs 4096),
    else 4-bit (an 8-bit tile read as 4-bit would parse, wrongly: hence this order)."""
    from wowgrass.errors import FormatError

    if big_alpha is not None:
        return AdtTile.from_bytes(raw, path, big_alpha=big_alpha, **kw)
    try:
        return AdtTile.from_bytes(raw, path, big_alpha=True, **kw)
    except FormatError:
        return AdtTile.from_bytes(raw, path, big_alpha=False, **kw)


def load_tile(file=None, *, data=None, map_name=None, tile=None, wdt=None, big_alpha=None,
              doodad_map_msb_first=False) -> tuple[AdtTile, bytes, dict]:
    """Read a tile from ``file`` or from a data source (``data`` folder + ``map_name`` + (col, row)).

    The big-alpha flag comes from ``big_alpha`` when given, else from the map's WDT (``wdt`` path,
    the WDT beside the file, or the data source's); without a WDT, from the tile (:func:`read_adt`).
    Returns (tile, raw bytes, source description).
    """
    wdt_bytes = wdt_name = None
    if file is not None:
        if data is not None or map_name or tile:
            raise UsageError("give either FILE or --data with --map and --tile, not both")
        path = Path(file)
        raw = path.read_bytes()
        name = str(path)
        wdt_path = Path(wdt) if wdt else (sibling_wdt(path) if big_alpha is None else None)
        if wdt_path is not None:
            wdt_bytes, wdt_name = wdt_path.read_bytes(), str(wdt_path)
    else:
        if data is None or not map_name or tile is None:
            raise UsageError("give an ADT FILE, or --data DIR with --map NAME and --tile COL,ROW")
        from wowgrass.game.data import open_data

        source = open_data(data) if not hasattr(data, "read") else data
        col, row = tile
        name = adt_game_path(map_name, col, row)
        raw = source.read(name)
        if wdt:
            wdt_bytes, wdt_name = Path(wdt).read_bytes(), str(wdt)
        elif big_alpha is None and source.exists(wdt_game_path(map_name)):
            wdt_name = wdt_game_path(map_name)
            wdt_bytes = source.read(wdt_name)
    wdt_info = None
    if big_alpha is None and wdt_bytes is not None:
        w = WdtFile.from_bytes(wdt_bytes, wdt_name)
        big_alpha = w.big_alpha
        wdt_info = {"path": wdt_name, "flags": w.flags, "big_alpha": w.big_alpha, "tiles": int(w.main.sum())}
    t = read_adt(raw, name, big_alpha, doodad_map_msb_first=doodad_map_msb_first)
    big_alpha = t.big_alpha
    log.info("read %s (%s bytes, tile %d,%d); alpha maps %s%s", name, f"{len(raw):,}", t.col, t.row,
             "8-bit" if big_alpha else "4-bit", f" (MPHD of {wdt_name})" if wdt_info else " (as the tile parses)")
    return t, raw, {"path": name, "wdt": wdt_info, "big_alpha": bool(big_alpha)}


def chunk_name(tag: bytes) -> str:
    """A chunk's id as text a terminal and grep take: bytes outside printable ASCII escaped
    (``\\x00\\x00\\x00\\x00`` for a padding chunk with an empty name)."""
    return "".join(chr(b) if 0x20 <= b < 0x7F and b != 0x5C else f"\\x{b:02x}" for b in tag)


def tile_summary(t: AdtTile, raw: bytes | None = None) -> dict:
    """A JSON-able description of a tile (what ``wowgrass adt info`` prints)."""
    from wowgrass.formats.liquid import tile_liquid
    from wowgrass.game.liquid_types import DEFAULT_NAMES
    from wowgrass.game.mapobjects import modf_summary

    liquid = tile_liquid(t).summary(DEFAULT_NAMES)
    exists = np.arange(4)[None, :] < t.n_layers[:, None]
    effects = Counter(t.layer_effect[exists].tolist())
    enc = Counter(ALPHA_ENCODING_NAMES[int(e)] for e in t.alpha_encoding[:, 1:][exists[:, 1:]])
    textures_used = Counter(t.layer_texture[exists].tolist())
    ah = t.abs_heights
    holes = t.hole_cells()
    out = {
        "tile": {"col": t.col, "row": t.row},
        "version": t.version,
        "big_alpha": t.big_alpha,
        "chunks": [],
        "mcnk": {
            "chunk_count": 256,
            "layers_per_chunk": {str(n): int((t.n_layers == n).sum()) for n in range(5) if (t.n_layers == n).any()},
            "layers_total": int(t.n_layers.sum()),
            "do_not_fix_alpha_chunks": int(((t.chunk_flags & McnkFlags.DO_NOT_FIX_ALPHA_MAP) != 0).sum()),
            "shadow_chunks": int(((t.chunk_flags & McnkFlags.HAS_MCSH) != 0).sum()),
            "mccv_chunks": int(t.has_mccv.sum()) if t.has_mccv is not None else 0,
            "liquid_chunks": liquid["chunks"],
        },
        "textures": [{"index": i, "path": p, "layers": textures_used.get(i, 0)} for i, p in enumerate(t.textures)],
        "models": len(t.models), "wmos": len(t.wmos),
        "doodads": int(len(t.mddf)), "wmo_instances": int(len(t.modf)),
        "alpha_encodings": dict(sorted(enc.items())),
        "layers_with_alpha_flag": int(((t.layer_flags & 0x100) != 0)[exists].sum()),
        "effect_ids": [{"id": int(k), "layers": int(v)} for k, v in effects.most_common()],
        "no_effect_doodad_cells": int(t.no_effect_doodad.sum()),
        "doodad_mapping_nonzero_chunks": int((t.doodad_mapping.reshape(256, -1) != 0).any(axis=1).sum()),
        "hole_chunks": int((t.holes != 0).sum()),
        "hole_cells": int(holes.sum()),
        "height": {"min": float(ah.min()), "max": float(ah.max())},
        "chunk0_position": [float(v) for v in t.positions[0]],
        "liquid": {"mh2o": t.mh2o is not None, "mclq_chunks": sum(1 for x in t.liquids if x), **liquid},
        "modf": modf_summary(t),
    }
    if raw is not None:
        counts: Counter = Counter()
        sizes: Counter = Counter()
        for ch in iter_chunks(raw, t.path):
            counts[chunk_name(ch.tag)] += 1
            sizes[chunk_name(ch.tag)] += ch.size
        out["chunks"] = [{"id": k, "chunk_count": counts[k], "bytes": sizes[k]} for k in counts]
        out["file_size"] = len(raw)
    return out


# --- pictures ------------------------------------------------------------------------------------
def tile_grid(t, per_chunk: np.ndarray) -> np.ndarray:
    """(256, n, n, ...) per-chunk arrays in MCNK order → one (16n, 16n, ...) tile picture, north up
    (rows: IndexY, columns: IndexX). ``t`` is the AdtTile, or its (256, 2) ``index_xy``."""
    ixy = np.asarray(getattr(t, "index_xy", t))
    per_chunk = np.asarray(per_chunk)
    n = per_chunk.shape[1]
    grid = np.zeros((16, 16) + per_chunk.shape[1:], per_chunk.dtype)
    grid[ixy[:, 1], ixy[:, 0]] = per_chunk
    axes = (0, 2, 1, 3) + tuple(range(4, grid.ndim))
    return grid.transpose(axes).reshape((16 * n, 16 * n) + per_chunk.shape[3:])


def grid_chunks(t, grid: np.ndarray) -> np.ndarray:
    """The inverse of :func:`tile_grid`: a (16n, 16n, ...) tile picture → (256, n, n, ...) in MCNK order."""
    ixy = np.asarray(getattr(t, "index_xy", t))
    grid = np.asarray(grid)
    n = grid.shape[0] // 16
    g = grid.reshape((16, n, 16, n) + grid.shape[2:]).transpose((0, 2, 1, 3) + tuple(range(4, grid.ndim + 2)))
    return g[ixy[:, 1], ixy[:, 0]]


def _pixel_points(t: AdtTile, size: int):
    """World (x, y) and chunk index of every pixel centre of a size×size picture of the tile."""
    origin = t.positions[(t.index_xy[:, 0] == 0) & (t.index_xy[:, 1] == 0)]
    ox, oy = (origin[0, 0], origin[0, 1]) if len(origin) else (t.positions[0, 0], t.positions[0, 1])
    step = 128 * UNIT_SIZE / size
    k = (np.arange(size) + 0.5) * step
    x = ox - k[:, None]                      # rows go south
    y = oy - k[None, :]                      # columns go east
    x, y = np.broadcast_arrays(x, y)
    return x, y, t.chunk_index_at(x, y)


def _hash_colour(values: np.ndarray, seed: int = 0) -> np.ndarray:
    """A stable, well-spread RGB colour per integer value."""
    uniq, inv = np.unique(values, return_inverse=True)
    cols = np.zeros((len(uniq), 3), np.uint8)
    for i, v in enumerate(uniq.tolist()):
        h = zlib.crc32(f"{seed}:{v}".encode())
        hue = (h % 360) / 360.0
        sat = 0.55 + ((h >> 9) % 40) / 100.0
        val = 0.75 + ((h >> 17) % 25) / 100.0
        cols[i] = _hsv(hue, sat, val)
    return cols[inv.reshape(values.shape)]


# distinct colours (ColorBrewer "Dark2" + "Set1"-like): categories in an image are told apart
_PALETTE = np.array([[27, 158, 119], [217, 95, 2], [117, 112, 179], [231, 41, 138], [102, 166, 30],
                     [230, 171, 2], [166, 118, 29], [55, 126, 184], [228, 26, 28], [77, 175, 74],
                     [152, 78, 163], [255, 127, 0], [166, 206, 227], [251, 154, 153]], np.uint8)


def _category_colour(values: np.ndarray, seed: int = 0, skip=(-1,)) -> np.ndarray:
    """Distinct colours for the distinct values present (in sorted order); hashed beyond the palette."""
    values = np.asarray(values)
    uniq = np.unique(values[~np.isin(values, skip)])
    if len(uniq) > len(_PALETTE):
        return _hash_colour(values, seed)
    out = np.zeros(values.shape + (3,), np.uint8)
    idx = np.searchsorted(uniq, values)
    ok = ~np.isin(values, skip)
    out[ok] = _PALETTE[idx[ok]]
    return out


def _hsv(h, s, v):
    i = int(h * 6) % 6
    f = h * 6 - int(h * 6)
    p, q, w = v * (1 - s), v * (1 - f * s), v * (1 - (1 - f) * s)
    r, g, b = [(v, w, p), (q, v, p), (p, v, w), (p, q, v), (w, p, v), (v, p, q)][i]
    return (int(r * 255), int(g * 255), int(b * 255))


def _hillshade(z: np.ndarray, pixel_yards: float) -> np.ndarray:
    """Lambert shading of a height image lit from the north-west, 0..1."""
    dz_row, dz_col = np.gradient(z.astype(np.float64), pixel_yards)
    # image rows go south (−X), columns east (−Y): normal = (-dz/dx, -dz/dy, 1) in (south, east, up)
    n = np.stack([-dz_row, -dz_col, np.ones_like(z, dtype=np.float64)], axis=-1)
    n /= np.linalg.norm(n, axis=-1, keepdims=True)
    light = np.array([-1.0, -1.0, 1.5])           # from the north-west, above
    light /= np.linalg.norm(light)
    return np.clip(n @ light, 0, 1)


# Land from low to high (greens, dry grass, earth, rock, snow) over the tile's range above sea level,
# and blues below it (sea level is 0 in the clients' worlds: the oceans' MH2O height): a mountain
# tile never looks like sea, and a coast shows where the water is.
_LAND_RAMP = np.array([[72, 128, 62], [134, 160, 84], [176, 158, 100], [146, 112, 80], [132, 126, 122],
                       [242, 242, 244]], float)
_SEA_RAMP = np.array([[18, 42, 96], [46, 96, 160], [96, 150, 196]], float)
SEA_LEVEL = 0.0


def _ramp(v: np.ndarray, ramp: np.ndarray = _LAND_RAMP) -> np.ndarray:
    v = np.clip(v, 0, 1) * (len(ramp) - 1)
    i = np.minimum(v.astype(int), len(ramp) - 2)
    f = (v - i)[..., None]
    return ramp[i] * (1 - f) + ramp[i + 1] * f


def height_colours(z: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """RGB (float) of heights ``z`` (yards) on a tile spanning ``lo`` .. ``hi``: the land ramp over the
    part above sea level, the sea ramp (deep to shallow) below it."""
    z = np.asarray(z, np.float64)
    land_lo = max(lo, SEA_LEVEL)
    land = _ramp((z - land_lo) / max(hi - land_lo, 1e-6))
    sea = _ramp((z - lo) / max(min(hi, SEA_LEVEL) - lo, 1e-6), _SEA_RAMP)
    return np.where((z < SEA_LEVEL)[..., None], sea, land)


def height_picture_z(t: AdtTile, size: int) -> np.ndarray:
    """The terrain height (yards) at each pixel centre of a size×size picture of the tile."""
    return _relief(t, size)[0]


def height_bands(t: AdtTile) -> list[tuple[float, float]]:
    """The legend's height bands (yards): four over the land range, two under the sea."""
    lo, hi = float(t.abs_heights.min()), float(t.abs_heights.max())
    out = []
    if lo < SEA_LEVEL:
        top = min(hi, SEA_LEVEL)
        out += [(float(a), float(b)) for a, b in zip(np.linspace(lo, top, 3)[:-1], np.linspace(lo, top, 3)[1:])]
    if hi > SEA_LEVEL or lo >= SEA_LEVEL:
        base = max(lo, SEA_LEVEL)
        edges = np.linspace(base, hi, 5) if hi > base else np.array([base, hi])
        out += [(float(a), float(b)) for a, b in zip(edges[:-1], edges[1:])]
    return out


def _relief(t: AdtTile, size: int) -> tuple[np.ndarray, np.ndarray]:
    x, y, ci = _pixel_points(t, size)
    z = t.heights_at(np.maximum(ci, 0), x, y)
    return z, _hillshade(z, 128 * UNIT_SIZE / size)


def tile_image(t: AdtTile, kind: str = "height", size: int = 1024) -> np.ndarray:
    """A (size, size, 3) uint8 RGB picture of the tile, north up, east right.

    ``height``: shaded relief coloured by height, a land ramp above sea level (0) over the tile's
    range and blues below it (:func:`image_legend` gives the bands in yards); ``layers``: texture colours blended by the
    alpha maps; ``effects``: each cell coloured by the effectId its doodadMapping layer selects
    (dark where there is none); ``mask``: noEffectDoodad cells red, holes black, over the relief.
    """
    from PIL import Image

    if kind not in IMAGE_KINDS:
        raise UsageError(f"unknown image kind {kind!r}; choose from {', '.join(IMAGE_KINDS)}")
    if not 16 <= size <= 8192:
        raise UsageError(f"image size {size} outside 16..8192")

    def resize(img, nearest):
        if img.shape[0] == size:
            return img
        im = Image.fromarray(img)
        return np.asarray(im.resize((size, size), Image.NEAREST if nearest else Image.BILINEAR))

    if kind == "height":
        z, shade = _relief(t, size)
        lo, hi = float(t.abs_heights.min()), float(t.abs_heights.max())
        rgb = height_colours(z, lo, hi) * (0.55 + 0.45 * shade[..., None])
        return np.clip(rgb, 0, 255).astype(np.uint8)
    if kind == "layers":
        tex = np.where(t.layer_texture >= 0, t.layer_texture, -1)
        colours = _category_colour(tex, seed=1).astype(np.float32)      # (256, 4, 3)
        w = t.alpha.astype(np.float32)
        w[:, 0] = np.clip(255 - w[:, 1:].sum(axis=1), 0, 255)
        exists = np.arange(4)[None, :] < t.n_layers[:, None]
        w *= exists[:, :, None, None]
        total = np.maximum(w.sum(axis=1, keepdims=True), 1)
        rgb = np.einsum("clyx,clk->cyxk", w / total, colours)         # (256, 64, 64, 3)
        img = tile_grid(t, np.clip(rgb, 0, 255).astype(np.uint8))
        return resize(img, nearest=False)
    if kind == "effects":
        eff = _cell_effects(t)
        col = _category_colour(eff, seed=2, skip=NO_EFFECT_IDS)
        col[np.isin(eff, NO_EFFECT_IDS)] = (30, 30, 30)
        img = resize(tile_grid(t, col), nearest=True)
        return _grid_lines(img)
    # mask
    z, shade = _relief(t, size)
    base = (110 + 120 * shade)[..., None] * np.array([0.8, 1.0, 0.8])
    cells = np.zeros((256, 8, 8), np.uint8)
    cells[t.no_effect_doodad] = 1
    cells[t.hole_cells()] = 2
    cell_img = resize(tile_grid(t, cells), nearest=True)
    rgb = base.copy()
    rgb[cell_img == 1] = rgb[cell_img == 1] * 0.3 + np.array([230, 40, 40]) * 0.7
    rgb[cell_img == 2] = (0, 0, 0)
    return _grid_lines(np.clip(rgb, 0, 255).astype(np.uint8))


def legend_strip(rgb: np.ndarray, legend: list[dict], title: str = "", max_items: int = 32) -> np.ndarray:
    """``rgb`` with its legend drawn in a white strip below it: a swatch and the label of each entry
    (its colour's meaning: a height band in yards, a texture, an effect, a model), in as many
    columns as fit, the first ``max_items`` entries and a count of the rest."""
    from PIL import Image, ImageDraw, ImageFont

    h, w = rgb.shape[:2]
    # the text's size: readable from a 256 to an 8192 picture; below 12 px the default font's
    # colon and spaces round away ("heights0.0")
    px = max(12, min(16, w // 48))
    try:
        font = ImageFont.load_default(size=px)
    except TypeError:  # Pillow < 10.1: the fixed bitmap font
        font = ImageFont.load_default()
    items = list(legend[:max_items])
    labels = [str(it["label"]) for it in items]
    if len(legend) > max_items:
        labels.append(f"... {len(legend) - max_items} more (--json lists all)")
    probe = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    row_h = px + 6
    cell = max((probe.textlength(s, font=font) + s.count(" ") * px / 3 for s in labels), default=0) + px + 14
    cols = max(1, int((w - 8) // cell))
    rows = -(-len(labels) // cols)
    top = row_h + 4 if title else 4
    out = Image.new("RGB", (w, h + top + rows * row_h + 4), (255, 255, 255))
    out.paste(Image.fromarray(np.ascontiguousarray(rgb[..., :3])), (0, 0))
    d = ImageDraw.Draw(out)
    gap = max(probe.textlength(" ", font=font), px / 3)   # small sizes round a space down to a pixel or two

    def words(x, y, text):   # word by word, so every space shows ("heights: 0.0", not "heights0.0")
        for word in text.split(" "):
            if word:
                d.text((x, y), word, fill=(0, 0, 0), font=font)
            x += probe.textlength(word, font=font) + gap

    if title:
        words(6, h + 4, title)
    for k, text in enumerate(labels):
        x, y = 6 + (k % cols) * cell, h + top + (k // cols) * row_h
        if k < len(items):
            d.rectangle([x, y + 2, x + px, y + 2 + px], fill=items[k]["rgb"], outline=(0, 0, 0))
        words(x + px + 6, y + 1, text)
    return np.asarray(out)


def label_tiles(rgb: np.ndarray, tiles, origin, tile_px: int, offset=(0, 0)) -> np.ndarray:
    """``rgb`` with each tile's "col,row" written in its north-west corner (white on a dark box),
    where a tile is ``tile_px`` pixels across (nothing below 40: the label would hide the tile).
    ``origin`` is the (col, row) drawn at ``offset`` (x, y) pixels."""
    if tile_px < 40 or not len(tiles):
        return rgb
    from PIL import Image, ImageDraw, ImageFont

    px = int(np.clip(tile_px // 10, 10, 18))
    try:
        font = ImageFont.load_default(size=px)
    except TypeError:  # Pillow < 10.1
        font = ImageFont.load_default()
    img = Image.fromarray(np.ascontiguousarray(rgb[..., :3]))
    d = ImageDraw.Draw(img)
    for c, r in tiles:
        x = offset[0] + (c - origin[0]) * tile_px + 2
        y = offset[1] + (r - origin[1]) * tile_px + 2
        text = f"{c},{r}"
        d.rectangle((x, y, x + d.textlength(text, font=font) + 4, y + px + 4), fill=(20, 20, 20))
        d.text((x + 2, y + 1), text, fill=(255, 255, 255), font=font)
    return np.asarray(img)


def image_legend(t: AdtTile, kind: str, size: int = 1024) -> list[dict]:
    """What the colours of :func:`tile_image` stand for: ``[{"label", "rgb", "count", "unit"}]``
    (``height``: bands in yards, the pixels of a ``size`` picture in each)."""
    def hexrgb(c):
        return "#%02x%02x%02x" % tuple(int(v) for v in c)

    if kind == "height":
        lo, hi = float(t.abs_heights.min()), float(t.abs_heights.max())
        z = np.clip(height_picture_z(t, size), lo, hi)
        bands = height_bands(t)
        out = []
        for k, (a, b) in enumerate(bands):
            last = k == len(bands) - 1
            n = int(((z >= a) & ((z <= b) if last else (z < b))).sum())
            mid = height_colours(np.array([(a + b) / 2]), lo, hi)[0]
            out.append({"label": f"{a:.1f} .. {b:.1f} yd", "rgb": hexrgb(mid), "count": n, "unit": "pixels",
                        "below_sea_level": b <= SEA_LEVEL and a < SEA_LEVEL})
        return out

    if kind == "layers":
        used = t.layer_texture[t.layer_texture >= 0]
        ids, counts = np.unique(used, return_counts=True)
        cols = _category_colour(ids, seed=1)
        return [{"label": t.textures[i] if i < len(t.textures) else f"texture #{i}", "rgb": hexrgb(c),
                 "count": int(n), "unit": "layers"} for i, c, n in zip(ids.tolist(), cols, counts.tolist())]
    if kind == "effects":
        ids, counts = np.unique(_cell_effects(t), return_counts=True)
        none = np.isin(ids, NO_EFFECT_IDS)
        cols = _category_colour(ids, seed=2, skip=NO_EFFECT_IDS)
        cols[none] = (30, 30, 30)
        return [{"label": "no effect" if z else f"effect {i}", "rgb": hexrgb(c), "count": int(n), "unit": "cells"}
                for i, c, n, z in zip(ids.tolist(), cols, counts.tolist(), none.tolist())]
    if kind == "mask":
        return [{"label": "noEffectDoodad cell", "rgb": "#e62828", "count": int(t.no_effect_doodad.sum()),
                 "unit": "cells"},
                {"label": "hole", "rgb": "#000000", "count": int(t.hole_cells().sum()), "unit": "cells"}]
    return []


def _cell_effects(t: AdtTile) -> np.ndarray:
    """(256, 8, 8) effectId of the layer each cell's doodadMapping selects (0 where that layer is absent)."""
    layer = t.doodad_mapping.astype(np.int64)
    eff = np.take_along_axis(t.layer_effect.astype(np.int64), layer.reshape(256, -1), axis=1).reshape(256, 8, 8)
    return np.where(layer < t.n_layers[:, None, None], eff, 0)


def _grid_lines(img: np.ndarray) -> np.ndarray:
    """Darken the chunk borders so cells can be told apart."""
    img = img.copy()
    size = img.shape[0]
    edges = np.unique(np.round(np.arange(1, 16) * size / 16).astype(int))
    img[edges] = (img[edges] * 0.5).astype(np.uint8)
    img[:, edges] = (img[:, edges] * 0.5).astype(np.uint8)
    return img


def write_tile_image(t: AdtTile, path, kind: str = "height", size: int = 1024) -> Path:
    """Draw the tile and write it atomically, in the image format the suffix names."""
    from wowgrass.fileio import write_image

    return write_image(path, tile_image(t, kind, size))


def model_colours(names) -> dict[str, tuple[int, int, int]]:
    """One colour per model name (case-insensitive) over a whole set of names: pictures of several
    tiles (or before and after) given the same mapping colour a model alike everywhere."""
    keys = sorted({str(n).lower() for n in names})
    cols = _category_colour(np.array([zlib.crc32(k.encode()) & 0x7FFFFFFF for k in keys] or [0]), seed=3)
    return {k: tuple(int(v) for v in c) for k, c in zip(keys, cols)}


def grass_image(t: AdtTile, instances, size: int = 1024, colours: dict | None = None
                ) -> tuple[np.ndarray, list[dict]]:
    """Where the grass was placed: one dot per instance, coloured by model, over the grey relief.

    ``instances`` is a :class:`wowgrass.grass.placement.Instances` of this tile; ``colours`` a
    :func:`model_colours` mapping (default: one made of this tile's models). Returns the (size,
    size, 3) picture and its legend (one entry per model, with its instance count)."""
    if not 16 <= size <= 8192:
        raise UsageError(f"image size {size} outside 16..8192")
    _z, shade = _relief(t, size)
    rgb = ((25 + 70 * shade)[..., None] * np.ones(3)).astype(np.float32)  # dark, so the dots stand out
    names = np.array([str(m) for m in instances.models] or [""], dtype=object)
    colours = model_colours(names.tolist()) if colours is None else colours
    cols = np.array([colours[n.lower()] for n in names.tolist()], np.float32).reshape(-1, 3)
    pos = np.asarray(instances.pos, np.float64)
    east, south = tile_offset(pos[:, 0], pos[:, 1], t.col, t.row)
    px, py = east / TILE_SIZE * size, south / TILE_SIZE * size
    ix = np.clip(px.astype(np.int64), 0, size - 1)
    iy = np.clip(py.astype(np.int64), 0, size - 1)
    model = np.asarray(instances.model, np.int64)
    dot = max(1, size // 512)  # dots stay visible on big pictures
    for dy in range(dot):
        for dx in range(dot):
            rgb[np.minimum(iy + dy, size - 1), np.minimum(ix + dx, size - 1)] = cols[model]
    counts = np.bincount(model, minlength=len(instances.models)) if len(model) else np.zeros(len(names), int)
    legend = [{"label": names[i], "rgb": "#%02x%02x%02x" % tuple(int(v) for v in cols[i]), "count": int(n),
               "unit": "instances"} for i, n in sorted(enumerate(counts.tolist()), key=lambda c: -c[1]) if n]
    return np.clip(rgb, 0, 255).astype(np.uint8), legend


__all__ = ["IMAGE_KINDS", "adt_game_path", "grass_image", "grid_chunks", "image_legend", "label_tiles", "legend_strip", "load_tile", "model_colours", "parse_tile_arg", "select_tiles", "tile_image",
           "tile_grid", "tile_summary", "write_tile_image"]
