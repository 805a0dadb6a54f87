"""Before and after a patch: the grass of a map's tiles without and with a patch MPQ placed in the
client's Data folder, counted by the client placement and the coverage placement, and drawn side by
side (``effects diff``).

The patch is mounted where the client would mount it: the archive chain (formats.md §5.5) is worked
out for the Data folder as if the patch lay in it under its own name (``game.data.archive_order``'s
``extra``), so a ``patch-2.MPQ`` ranks below the locale patches and a ``patch-enUS-2.MPQ`` above
everything, as in the client; one of the same name as an archive there replaces it. A name the
client does not load is an error. Over a loose folder the patch simply answers first.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from wowgrass.errors import GameFileNotFound, UsageError
from wowgrass.formats.mpq import MpqArchive
from wowgrass.game.data import GameData, open_data
from wowgrass.game.effects import DOODAD_PATH, TEXTURE_PATH

PLACEMENTS = ("client", "coverage")
CHANGED_RGB = (255, 255, 255)  # the outline of cells whose grass changed (no model's colour is white)
MORE_RGB = np.array((60, 200, 80), np.float32)    # change panel: cells with more grass
LESS_RGB = np.array((230, 60, 50), np.float32)    # and with less


class _Overlay:
    """A loose folder with a patch archive answering first (what ``read``/``exists``/``list`` need)."""

    def __init__(self, base: GameData, patch: Path):
        self.base, self.root, self.build, self.locale = base, base.root, base.build, base.locale
        self.archives: list = []
        self._arc = MpqArchive.open(patch)
        self._patch = patch

    def locate(self, path):
        e = self._arc.lookup(path, None)
        if e is not None:
            return (None if e.is_delete_marker else (self._patch, self._arc))
        return self.base.locate(path)

    def exists(self, path) -> bool:
        return self.locate(path) is not None

    def read(self, path) -> bytes:
        found = self.locate(path)
        if found is None:
            raise GameFileNotFound(f"{path}: not in {self.root} nor in {self._patch.name}")
        return found[1].read(path) if found[1] is not None else found[0].read_bytes()

    def list(self, pattern="*"):
        import fnmatch

        pat = pattern.replace("/", "\\").upper()
        mine = [n for n in self._arc.names() if fnmatch.fnmatchcase(n.upper(), pat)]
        return sorted(set(self.base.list(pattern)) | set(mine), key=str.lower)

    def close(self):
        self._arc.close()
        self.base.close()


@contextlib.contextmanager
def before_after(data_path, patch_path):
    """``(before, after, where)``: the data source without and with the patch mounted; ``where``
    says where it ranks. The patch may already lie in the Data folder (then ``before`` leaves it out)."""
    patch = Path(patch_path)
    if not patch.is_file():
        raise GameFileNotFound(f"no such file: {patch}")
    MpqArchive.open(patch).close()   # a patch that is no MPQ fails here, naming it
    base = open_data(data_path)
    try:
        if not base.archives:
            after = _Overlay(open_data(data_path), patch)
            try:
                yield base, after, {"file": None, "rank": 1, "archive_count": 1}
            finally:
                after.close()
            return
        me = patch.resolve()
        resolved = [Path(a).resolve() for a in base.archives]
        if me in resolved:   # already placed in the Data folder
            keep = [a for a, r in zip(base.archives, resolved) if r != me]
            before = GameData(base.root, archives=keep, build=base.build, locale=base.locale, layers=base.layers)
            try:
                yield before, base, {"file": str(patch), "rank": resolved.index(me) + 1,
                                     "archive_count": len(resolved)}
            finally:
                before.close()
            return
        from wowgrass.edit.patch import advice, name_kind
        from wowgrass.game.data import archive_order

        kind, loc = name_kind(patch)
        rel = f"{loc}/{patch.name}" if kind == "locale" else patch.name
        if kind == "locale" and base.locale and loc.lower() == base.locale.lower():
            rel = f"{base.locale}/{patch.name}"
        order = archive_order(base.root, base.build, base.locale, extra={rel: patch})
        if me not in [Path(a).resolve() for a in order]:
            if kind == "unloaded":
                hint = advice(patch, base.build, base.locale, [])[2][0]
            elif kind == "locale":
                hint = ("1.12 mounts no locale archives" if base.build == "1.12" else
                        f"the Data folder's locale is {base.locale or 'none'}, the patch's {loc}")
            else:
                hint = "no rule of the archive order takes it"
            raise UsageError(f"a {base.build or 'WoW'} client would not mount {patch.name} in {base.root}: {hint}")
        after = GameData(base.root, archives=order, build=base.build, locale=base.locale, layers=base.layers)
        try:
            names = [Path(a).resolve() for a in after.archives]
            yield base, after, {"file": str(base.root / rel), "rank": names.index(me) + 1,
                                "archive_count": len(names)}
        finally:
            after.close()
    finally:
        base.close()


@dataclass
class TileDiff:
    tile: tuple[int, int]
    counts: dict                                  # placement -> {"before", "after", "change", "cells_changed"}
    edits: dict                                   # what changed in the ADT: layers, cells
    adt_changed: bool
    changed_cells: dict = field(default_factory=dict, repr=False)   # placement -> (256, 8, 8) bool
    tiles: tuple = field(default=(), repr=False)  # (before AdtTile, after AdtTile)
    instances: dict = field(default_factory=dict, repr=False)     # placement -> (before, after)

    def to_dict(self) -> dict:
        return {"tile": list(self.tile), "adt_changed": self.adt_changed, "edits": self.edits,
                **{p: c for p, c in self.counts.items()}}


def patch_tiles(after_names, map_name: str) -> list[tuple[int, int]]:
    """The tiles of ``map_name`` whose ADT a patch holds (from its file names)."""
    prefix = f"world\\maps\\{map_name.lower()}\\{map_name.lower()}_"
    out = []
    for n in after_names:
        low = n.replace("/", "\\").lower()
        if low.startswith(prefix) and low.endswith(".adt"):
            parts = low[len(prefix):-4].split("_")
            if len(parts) == 2 and all(p.isdigit() for p in parts):
                out.append((int(parts[0]), int(parts[1])))
    return sorted(set(out), key=lambda t: (t[1], t[0]))


def _edits(a, b) -> dict:
    """Which ground-effect fields of the ADT differ (counts), the rest as one flag."""
    la = np.asarray(a.layer_effect, np.int64) * (np.asarray(a.layer_texture) >= 0)
    lb = np.asarray(b.layer_effect, np.int64) * (np.asarray(b.layer_texture) >= 0)
    return {
        "layer_effects": int(np.count_nonzero(la != lb)),
        "no_effect_doodad": int(np.count_nonzero(a.no_effect_doodad != b.no_effect_doodad)),
        "doodad_mapping": int(np.count_nonzero(a.doodad_mapping != b.doodad_mapping)),
        "textures": int(a.textures != b.textures),
    }


def diff_tiles(before, after, map_name: str, tiles, *, placements=PLACEMENTS, constants=None,
               progress=None) -> list[TileDiff]:
    """Place the grass of each of ``tiles`` before and after, with each of ``placements``."""
    from wowgrass.game.tiles import load_tile
    from wowgrass.grass.bake import load_catalog
    from wowgrass.grass.placement import make_strategy

    cat_b, cat_a = load_catalog(data=before), load_catalog(data=after)
    strategies = {p: make_strategy(p, constants) for p in placements}
    out = []
    for k, (c, r) in enumerate(tiles):
        tb, raw_b, _ = load_tile(data=before, map_name=map_name, tile=(c, r))
        ta, raw_a, _ = load_tile(data=after, map_name=map_name, tile=(c, r))
        counts, changed, inst = {}, {}, {}
        for name, s in strategies.items():
            ib = s.place(tb, cat_b, map_name=map_name)
            ia = s.place(ta, cat_a, map_name=map_name)
            cells = ib.cell_counts() != ia.cell_counts()
            counts[name] = {"before": len(ib), "after": len(ia), "change": len(ia) - len(ib),
                            "cells_changed": int(cells.sum())}
            changed[name], inst[name] = cells, (ib, ia)
        out.append(TileDiff((c, r), counts, _edits(tb, ta), raw_a != raw_b, changed, (tb, ta), inst))
        if progress is not None:
            progress(k + 1, len(tiles))
    return out


def tables_changed(before, after) -> bool:
    """Whether the patch changes a ground-effect table."""
    return any(before.read(p) != after.read(p) for p in (TEXTURE_PATH, DOODAD_PATH)
               if before.exists(p) and after.exists(p))


def _outline(mask_img: np.ndarray, size: int) -> np.ndarray:
    """(size, size) bool: the border pixels of the True cells of a (128, 128) cell picture."""
    idx = (np.arange(size) * mask_img.shape[0] // size)
    big = mask_img[idx[:, None], idx[None, :]]
    edge = np.zeros_like(big)
    edge[1:] |= big[1:] != big[:-1]
    edge[:-1] |= big[1:] != big[:-1]
    edge[:, 1:] |= big[:, 1:] != big[:, :-1]
    edge[:, :-1] |= big[:, 1:] != big[:, :-1]
    return edge & big


def _label(img: np.ndarray, text: str) -> np.ndarray:
    from PIL import Image, ImageDraw, ImageFont

    h, w = img.shape[:2]
    px = max(10, min(16, w // 32))
    try:
        font = ImageFont.load_default(size=px)
    except TypeError:  # Pillow < 10.1
        font = ImageFont.load_default()
    out = Image.new("RGB", (w, h + px + 8), (255, 255, 255))
    out.paste(Image.fromarray(np.ascontiguousarray(img[..., :3])), (0, px + 8))
    ImageDraw.Draw(out).text((4, 3), text, fill=(0, 0, 0), font=font)
    return np.asarray(out)


def change_image(t, before_counts: np.ndarray, after_counts: np.ndarray, size: int) -> np.ndarray:
    """The tile's relief with each cell tinted by its change in instances: green more, red fewer
    (full colour at a change of half the densest cell's count or more)."""
    from wowgrass.game.tiles import _relief, tile_grid

    _z, shade = _relief(t, size)
    grey = (35 + 60 * shade)[..., None] * np.ones(3, np.float32)
    delta = tile_grid(t, after_counts.astype(np.int64) - before_counts.astype(np.int64))
    scale = max(1.0, 0.5 * float(max(before_counts.max(), after_counts.max())))
    idx = np.arange(size) * delta.shape[0] // size
    d = delta[idx[:, None], idx[None, :]].astype(np.float32)
    a = np.clip(np.abs(d) / scale, 0, 1)[..., None] * 0.5 + (d != 0)[..., None] * 0.5
    colour = np.where((d > 0)[..., None], MORE_RGB, LESS_RGB)
    return np.clip(grey * (1 - a) + colour * a, 0, 255).astype(np.uint8)


def diff_picture(diffs: list[TileDiff], placement: str = "client", size: int | None = None,
                 patch_name: str = "patch") -> np.ndarray:
    """The selection top down, three times side by side: its grass before | after (a dot per
    instance, coloured by model, over the relief; the cells whose grass changed outlined on both) |
    the change per cell (green more, red fewer), each tile where the map has it (north up), the
    legend drawn in below. ``size``: pixels per tile (default: about 1024 across a panel)."""
    from wowgrass.game.tiles import grass_image, legend_strip, tile_grid

    cols = [d.tile[0] for d in diffs]
    rows = [d.tile[1] for d in diffs]
    c0, r0 = min(cols), min(rows)
    nc, nr = max(cols) - c0 + 1, max(rows) - r0 + 1
    if size is None:
        size = int(np.clip(1024 // max(nc, nr), 64, 512))
    panels = [np.full((nr * size, nc * size, 3), 235, np.uint8) for _ in range(3)]
    legend: dict[str, dict] = {}
    more = fewer = 0
    for d in diffs:
        tb, ta = d.tiles
        ib, ia = d.instances[placement]
        edge = _outline(tile_grid(ta, d.changed_cells[placement]), size)
        y, x = (d.tile[1] - r0) * size, (d.tile[0] - c0) * size
        for k, (which, t, inst) in enumerate((("before", tb, ib), ("after", ta, ia))):
            rgb, leg = grass_image(t, inst, size)
            rgb = rgb.copy()
            rgb[edge] = CHANGED_RGB
            panels[k][y:y + size, x:x + size] = rgb
            for e in leg:
                slot = legend.setdefault(e["label"], {"label": e["label"], "rgb": e["rgb"], "before": 0, "after": 0})
                slot[which] += e["count"]
        cb, ca = ib.cell_counts(), ia.cell_counts()
        more += int((ca > cb).sum())
        fewer += int((ca < cb).sum())
        panels[2][y:y + size, x:x + size] = change_image(ta, cb, ca, size)
    total = {k: sum(d.counts[placement][k] for d in diffs) for k in ("before", "after", "change", "cells_changed")}
    where = f"{diffs[0].tile[0]},{diffs[0].tile[1]}" if len(diffs) == 1 else f"{len(diffs)} tiles"
    titles = (f"{where} before: {total['before']:,} instances",
              f"after {patch_name}: {total['after']:,} ({total['change']:+,}), "
              f"{total['cells_changed']:,} cells changed",
              f"change: {more:,} cells more, {fewer:,} fewer")
    labelled = [_label(p, t) for p, t in zip(panels, titles)]
    sep = np.full((labelled[0].shape[0], 8, 3), 255, np.uint8)
    img = np.concatenate([labelled[0], sep, labelled[1], sep, labelled[2]], axis=1)
    entries = [{"label": f"{e['label'].rsplit(chr(92), 1)[-1]}: {e['before']:,} -> {e['after']:,}", "rgb": e["rgb"]}
               for e in sorted(legend.values(), key=lambda e: -max(e["before"], e["after"]))]
    entries.append({"label": "cell whose grass changed (outline)", "rgb": "#%02x%02x%02x" % CHANGED_RGB})
    entries.append({"label": "more grass in the cell", "rgb": "#%02x%02x%02x" % tuple(int(v) for v in MORE_RGB)})
    entries.append({"label": "less grass in the cell", "rgb": "#%02x%02x%02x" % tuple(int(v) for v in LESS_RGB)})
    return legend_strip(img, entries, title=f"grass by model, {placement} placement: before | after | change")
