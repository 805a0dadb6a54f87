"""The terrain and object masks of edit/masks.py against references written here from the formats'
description (formats.md: MCVT's 9x9 outer and 8x8 inner vertices, a cell drawn as a fan of four
triangles around its centre), not from the module: slopes of planes in both directions and of
bumpy cells, the slope threshold, cells near doodads and near WMO boxes at exactly the distance."""

from __future__ import annotations

import numpy as np
import pytest

from wowgrass.edit.masks import cell_slopes, map_objects, near_objects_mask, slope_mask
from wowgrass.formats.adt import MDDF_DTYPE, MODF_DTYPE, UNIT_SIZE, VERTEX_ROWCOL, AdtTile


def fan_slope(heights_145: np.ndarray, r: int, c: int) -> float:
    """The slope (degrees) of cell (r, c): the mean of the unit normals of its four triangles
    (centre, corner, next corner), each turned upward, measured from the vertical."""
    def vertex(row, col, inner=False):
        i = row * 17 + col + (9 if inner else 0)
        x = (col + (0.5 if inner else 0.0)) * UNIT_SIZE      # east
        y = (row + (0.5 if inner else 0.0)) * UNIT_SIZE      # south
        return np.array([x, y, float(heights_145[i])])

    centre = vertex(r, c, inner=True)
    ring = [vertex(r, c), vertex(r, c + 1), vertex(r + 1, c + 1), vertex(r + 1, c)]
    total = np.zeros(3)
    for a, b in zip(ring, ring[1:] + ring[:1]):
        n = np.cross(a - centre, b - centre)
        n = n if n[2] >= 0 else -n
        total += n / np.linalg.norm(n)
    return float(np.degrees(np.arccos(min(1.0, total[2] / np.linalg.norm(total)))))


def test_slope_of_a_plane_rising_southwards():
    for deg in (0.0, 20.0, 50.0):
        h = np.tan(np.radians(deg)) * VERTEX_ROWCOL[:, 0] * UNIT_SIZE
        t = AdtTile.from_arrays(31, 32, heights=np.tile(h, (256, 1)))
        assert np.allclose(cell_slopes(t), deg, atol=1e-6)


def test_slope_of_bumpy_cells_is_the_mean_of_its_four_unit_normals():
    rng = np.random.default_rng(5)
    heights = rng.normal(0.0, 3.0, (256, 145))
    heights[1, 9::17] += 6.0                       # chunk 1: raised centres (a symmetric bump reads flat-ish)
    t = AdtTile.from_arrays(31, 32, heights=heights)
    got = cell_slopes(t)
    for chunk in (0, 1, 200):
        want = np.array([[fan_slope(heights[chunk], r, c) for c in range(8)] for r in range(8)])
        assert np.allclose(got[chunk], want, atol=1e-9), chunk
    assert got.std() > 5


def test_slope_mask_is_strictly_steeper():
    h = np.tan(np.radians(35.0)) * VERTEX_ROWCOL[:, 1] * UNIT_SIZE
    t = AdtTile.from_arrays(31, 32, heights=np.tile(h, (256, 1)))
    s = cell_slopes(t)
    at = float(s[0, 0, 0])
    assert not slope_mask(t, at)[0, 0, 0] and slope_mask(t, np.nextafter(at, 0.0))[0, 0, 0]
    assert slope_mask(t, 34.9).all() and not slope_mask(t, 35.1).any()


def _near_reference(tile, yards, pts, boxes):
    """Cells within ``yards`` of a point, or of a box (the distance to its nearest point)."""
    x, y = (v.reshape(-1, 1) for v in np.moveaxis(tile.cell_centres().reshape(-1, 2), 1, 0))
    out = np.zeros(x.shape[0], bool)
    if len(pts):
        out |= ((x - pts[:, 0]) ** 2 + (y - pts[:, 1]) ** 2 <= yards * yards).any(axis=1)
    if len(boxes):
        gx = np.maximum(np.maximum(boxes[:, 0, 0] - x, x - boxes[:, 1, 0]), 0.0)
        gy = np.maximum(np.maximum(boxes[:, 0, 1] - y, y - boxes[:, 1, 1]), 0.0)
        out |= (gx * gx + gy * gy <= yards * yards).any(axis=1)
    return out.reshape(256, 8, 8)


def test_cells_near_doodads_and_wmo_boxes():
    t = AdtTile.from_arrays(31, 32)
    cen = t.cell_centres().reshape(-1, 2)
    lo, hi = cen.min(axis=0), cen.max(axis=0)
    c = cen[1000]
    yards = 7.25
    # a doodad exactly `yards` east of a cell centre, one far off the tile; boxes: one over a cell,
    # one with its west edge exactly `yards` from a centre, one long thin one, one off the tile
    p = np.array([[c[0], c[1] + yards], [hi[0] + 500.0, hi[1] + 500.0], [lo[0] + 3.0, lo[1] + 40.0]])
    yards_exact = float(p[0, 1] - c[1])
    d = cen[9000]
    boxes = np.array([[[d[0] - 1.0, d[1] - 2.0], [d[0] + 1.5, d[1] + 0.5]],
                      [[d[0] - 30.0, d[1] + yards_exact + 0.0], [d[0] - 20.0, d[1] + 60.0]],
                      [[lo[0] + 100.0, lo[1] - 3.0], [lo[0] + 101.0, hi[1] + 3.0]],
                      [[hi[0] + 300.0, hi[1] + 300.0], [hi[0] + 310.0, hi[1] + 320.0]]])
    boxes[1, 0, 1] = d[1] + yards_exact     # the west edge at exactly the distance (same float)
    want = _near_reference(t, yards_exact, p, boxes)
    got = near_objects_mask(t, yards_exact, objects=(p, boxes))
    assert np.array_equal(got, want)
    flat = want.reshape(-1)
    assert flat[1000] and 30 < flat.sum() < 4000
    # each kind alone, and the exact-distance cells
    assert np.array_equal(near_objects_mask(t, yards_exact, objects=(p, np.zeros((0, 2, 2)))),
                          _near_reference(t, yards_exact, p, np.zeros((0, 2, 2))))
    only_boxes = near_objects_mask(t, yards_exact, objects=(np.zeros((0, 2)), boxes))
    assert np.array_equal(only_boxes, _near_reference(t, yards_exact, np.zeros((0, 2)), boxes))
    assert only_boxes.reshape(-1)[9000] and only_boxes.sum() > 100
    # a box whose south edge is exactly `yb` from a cell centre, across its x range: that cell is in
    e = cen[5000]
    box = np.array([[[e[0] - 5.0, e[1] + 3.5], [e[0] + 5.0, e[1] + 20.0]]])
    yb = float(box[0, 0, 1] - e[1])
    edge = near_objects_mask(t, yb, objects=(np.zeros((0, 2)), box))
    assert edge.reshape(-1)[5000] and np.array_equal(edge, _near_reference(t, yb, np.zeros((0, 2)), box))
    assert not near_objects_mask(t, np.nextafter(yb, 0.0), objects=(np.zeros((0, 2)), box)).reshape(-1)[5000]
    # more than 256 objects: they are taken in slices, all of them
    many = np.stack([np.full(600, c[0]), c[1] + np.linspace(-400.0, 400.0, 600)], axis=1)
    many_boxes = np.repeat(boxes[:1], 300, axis=0) + np.linspace(-300.0, 300.0, 300)[:, None, None]
    assert np.array_equal(near_objects_mask(t, 3.0, objects=(many, many_boxes)),
                          _near_reference(t, 3.0, many, many_boxes))


def test_map_objects_lists_each_placement_once():
    from wowgrass.game.mapobjects import file_to_world, modf_bounds

    a, b = AdtTile.from_arrays(31, 32), AdtTile.from_arrays(32, 32)
    mddf = np.zeros(3, MDDF_DTYPE)
    mddf["unique_id"] = [7, 8, 9]
    mddf["position"] = [[100.0, 5.0, 200.0], [120.0, 6.0, 210.0], [130.0, 7.0, 220.0]]
    modf = np.zeros(3, MODF_DTYPE)
    modf["unique_id"] = [70, 71, 72]
    modf["extents"] = [[[100, 0, 100], [110, 10, 130]], [[200, 0, 200], [205, 5, 260]], [[300, 0, 300], [340, 5, 310]]]
    a.mddf, a.modf = mddf[:2], modf[:2]
    b.mddf, b.modf = mddf[1:], modf[1:]        # 8 and 71 on both tiles (near their border)
    pts, boxes = map_objects([a, b])
    assert np.allclose(pts, file_to_world(mddf["position"])[:, :2])
    assert np.allclose(boxes, modf_bounds(modf)[:, :, :2]) and boxes.shape == (3, 2, 2)
    assert (boxes[:, 0] <= boxes[:, 1]).all()


def test_map_objects_of_tiles_without_any():
    pts, boxes = map_objects([AdtTile.from_arrays(31, 32), AdtTile.from_arrays(32, 32)])
    assert pts.shape == (0, 2) and boxes.shape == (0, 2, 2)
    assert not near_objects_mask(AdtTile.from_arrays(31, 32), 50.0).any()


def test_mask_pictures_of_several_tiles_and_wrong_sizes():
    from PIL import Image

    from wowgrass.edit.masks import CELLS, mask_from_array, picture_grey
    from wowgrass.errors import UsageError

    tiles = [(31, 32), (31, 33), (32, 32)]                  # 2 x 2 tiles' box, one of them not selected
    grey = np.zeros((2 * CELLS, 2 * CELLS), np.float32)
    grey[:CELLS, :CELLS] = 200                                # (31, 32): all
    grey[CELLS:, :CELLS][::2] = 255                           # (31, 33): every other row
    grey[:CELLS, CELLS:][:, :5] = 128                         # (32, 32): five columns, 128 selects
    masks = mask_from_array(grey, tiles)
    assert sorted(masks) == sorted(tiles) and all(m.shape == (CELLS, CELLS) for m in masks.values())
    assert masks[(31, 32)].all()
    assert masks[(31, 33)][::2].all() and not masks[(31, 33)][1::2].any()
    assert masks[(32, 32)][:, :5].all() and not masks[(32, 32)][:, 5:].any()
    twice = mask_from_array(np.repeat(np.repeat(grey, 2, axis=0), 2, axis=1), tiles)   # a 2x painting
    assert all(np.array_equal(twice[k], masks[k]) for k in tiles)
    for shape in ((CELLS, CELLS + 2), (CELLS + 2, CELLS), (CELLS - 1, CELLS - 1), (2 * CELLS, 3 * CELLS)):
        with pytest.raises(UsageError, match=r"^mask: .* need 128x128"):
            mask_from_array(np.zeros(shape, np.float32), [(31, 32)])
    one_bit = Image.fromarray(np.array([[0, 255, 255]], np.uint8)).convert("1")
    assert picture_grey(one_bit).tolist() == [[0.0, 255.0, 255.0]]


def _picture_of_mode(mode):
    """Black, white and grey 200 in a picture of ``mode`` (palettes made for its colours)."""
    from PIL import Image

    grey = Image.fromarray(np.array([[0, 255, 200]], np.uint8))
    if mode in ("P", "PA"):
        return grey.convert("RGB").convert("P", palette=Image.Palette.ADAPTIVE).convert(mode)
    if mode == "La":
        return grey.convert("LA").convert(mode)
    return grey.convert("RGB").convert(mode)


@pytest.mark.parametrize("mode", ["L", "LA", "La", "P", "PA", "RGB", "RGBA", "RGBX", "CMYK", "YCbCr", "LAB", "HSV",
                                  "RGBa"])
def test_mask_pictures_of_every_8_bit_mode_read_as_their_grey(mode):
    """A mask painted in any 8-bit mode Pillow hands over reads as its grey, 0..255 (LAB's round
    trip through RGB is a level off at black and white)."""
    from wowgrass.edit.masks import picture_grey

    im = _picture_of_mode(mode)
    assert im.mode == mode
    grey = picture_grey(im)
    assert grey.dtype == np.float32 and grey.shape == (1, 3)
    assert np.abs(grey[0] - [0.0, 255.0, 200.0]).max() <= 1.0, grey


def test_one_bit_mask_pictures_read_as_float_grey():
    from PIL import Image

    from wowgrass.edit.masks import picture_grey

    grey = picture_grey(Image.fromarray(np.array([[0, 255, 255]], np.uint8)).convert("1"))
    assert grey.dtype == np.float32 and grey.tolist() == [[0.0, 255.0, 255.0]]


def test_deep_mask_pictures_out_of_range_are_black_or_white():
    """A float picture's values below 0.0 are black and above 1.0 white (a 32-bit integer's below 0
    black): what a k x k block of a scaled-up painting averages is that clipped grey."""
    from PIL import Image

    from wowgrass.edit.masks import CELLS, mask_from_array, picture_grey

    values = np.array([[-1.0, 0.0, 0.5, 1.0, 3.0]], np.float32)
    assert picture_grey(Image.fromarray(values)).tolist() == [[0.0, 0.0, 127.5, 255.0, 255.0]]
    assert picture_grey(Image.fromarray(np.array([[-5, 2**31 - 1]], np.int32))).tolist() == [[0.0, 255.0]]
    # a painting at 2 pixels a cell: each cell one pixel out of range among three of 1.0 or 0.0
    block = np.zeros((2 * CELLS, 2 * CELLS), np.float32)
    block[0::2, 0::2] = -1.0                      # with three white: 191 of 255, selected
    block[0::2, 1::2] = block[1::2, :] = 1.0
    block[:, :CELLS] = np.where(block[:, :CELLS] == -1.0, 3.0, 0.0)  # west half: one 3.0 and three black
    mask = mask_from_array(picture_grey(Image.fromarray(block)), [(31, 32)])[(31, 32)]
    assert not mask[:, :CELLS // 2].any() and mask[:, CELLS // 2:].all()


def test_read_mask_picture_names_the_file_in_its_errors(tmp_path):
    import re

    from PIL import Image

    from wowgrass.edit.masks import CELLS, read_mask_picture
    from wowgrass.errors import UsageError

    small = tmp_path / "small.png"
    Image.fromarray(np.zeros((2, 3), np.uint8)).save(small)
    with pytest.raises(UsageError, match=rf"^{re.escape(str(small))}: 3x2 pixels; .* need 128x128"):
        read_mask_picture(small, [(31, 32)])
    text = tmp_path / "notes.png"
    text.write_text("not a picture")
    with pytest.raises(UsageError, match=rf"^--mask {re.escape(str(text))}: not a picture Pillow reads \("):
        read_mask_picture(text, [(31, 32)])
    nan = tmp_path / "nan.tif"
    Image.fromarray(np.full((CELLS, CELLS), np.nan, np.float32)).save(nan)
    with pytest.raises(UsageError, match=rf"^--mask {re.escape(str(nan))}: a mask picture of mode F holds NaN or "
                                         "infinite values$"):
        read_mask_picture(nan, [(31, 32)])
    good = tmp_path / "good.png"
    grey = np.zeros((CELLS, CELLS), np.uint8)
    grey[:, :7] = 128
    Image.fromarray(grey).save(good)
    mask = read_mask_picture(good, [(31, 32)])
    assert list(mask) == [(31, 32)] and mask[(31, 32)][:, :7].all() and not mask[(31, 32)][:, 7:].any()


def test_objects_at_exactly_the_distance_beyond_the_outermost_cells_count():
    """A doodad or a WMO box exactly ``yards`` outside the tile's outermost cell centres, level
    with one of them, marks that cell (on each of the four sides)."""
    t = AdtTile.from_arrays(31, 32)
    cen = t.cell_centres().reshape(-1, 2)
    yards = 2.0
    for axis in (0, 1):
        for side in (-1, 1):
            edge = cen[:, axis].min() if side < 0 else cen[:, axis].max()
            cell = int(np.flatnonzero(cen[:, axis] == edge)[3])
            at = cen[cell].copy()
            at[axis] = edge + side * yards            # the reach's bound, the same float as the mask's
            box = np.stack([at, at])
            box[1 if side > 0 else 0, axis] = at[axis] + side * 5.0    # the box extends away from the tile
            box[:, 1 - axis] += [-1.0, 1.0]
            for objects in ((at[None], np.zeros((0, 2, 2))), (np.zeros((0, 2)), box[None])):
                want = _near_reference(t, yards, *objects)
                assert want.reshape(-1)[cell], (axis, side)
                assert np.array_equal(near_objects_mask(t, yards, objects=objects), want), (axis, side)


def test_every_one_of_many_objects_counts():
    """Hundreds of doodads and of WMO boxes, each the only object near its own cell: every one marks
    its cell and no other (they are measured 256 at a time)."""
    t = AdtTile.from_arrays(31, 32)
    cen = t.cell_centres().reshape(-1, 2)
    rng = np.random.default_rng(5)
    for n in (300, 600):
        cells = rng.choice(len(cen), n, replace=False)
        pts = cen[cells] + 0.25
        boxes = np.stack([cen[cells] - 0.5, cen[cells] + 0.25], axis=1)
        for objects in ((pts, np.zeros((0, 2, 2))), (np.zeros((0, 2)), boxes)):
            got = near_objects_mask(t, 1.0, objects=objects).reshape(-1)
            assert np.array_equal(np.flatnonzero(got), np.sort(cells)), n


def test_a_deep_mask_picture_of_several_channels_is_refused_naming_its_mode():
    from wowgrass.edit.masks import picture_grey
    from wowgrass.errors import UsageError

    class Picture:                               # a picture-like object: a deep mode, three channels
        def __init__(self, mode):
            self.mode = mode

        def __array__(self, dtype=None, copy=None):
            return np.zeros((2, 2, 3), dtype or np.uint16)

    for mode in ("I;16", "F"):
        with pytest.raises(UsageError, match=rf"^a mask picture of mode {mode} must have one channel$"):
            picture_grey(Picture(mode))


@pytest.mark.parametrize("mode", ["RGB", "RGBA", "RGBX", "CMYK", "RGBa"])
def test_a_colour_mask_pictures_grey_is_the_mean_of_its_channels(mode):
    from PIL import Image

    from wowgrass.edit.masks import picture_grey

    rgb = Image.fromarray(np.array([[[10, 100, 250], [200, 100, 30]]], np.uint8))
    assert picture_grey(rgb.convert(mode)).tolist() == [[120.0, 110.0]]


def test_a_mask_picture_of_a_mode_it_cannot_read_says_how_to_save_it():
    from types import SimpleNamespace

    from wowgrass.edit.masks import picture_grey
    from wowgrass.errors import UsageError

    with pytest.raises(UsageError) as exc:
        picture_grey(SimpleNamespace(mode="BGR;24"))
    assert str(exc.value) == ("a mask picture of mode 'BGR;24' cannot be read: save it as 8-bit or 16-bit grey "
                              "(or RGB, a 32-bit integer or a float picture)")


@pytest.mark.parametrize("mode", ["La", "RGBa"])
def test_a_premultiplied_mask_picture_reads_as_its_unpremultiplied_grey(mode):
    """A TIFF with premultiplied alpha opens as La (or RGBa): its grey is the painted one, not the
    grey times the alpha (and not Pillow's "conversion from La to L not supported")."""
    from PIL import Image

    from wowgrass.edit.masks import picture_grey

    plain = "LA" if mode == "La" else "RGBA"
    colour = (200, 128) if mode == "La" else (200, 200, 200, 128)
    im = Image.new(plain, (3, 1), colour).convert(mode)
    assert np.asarray(im)[0, 0, 0] < 110   # stored premultiplied
    assert np.abs(picture_grey(im) - 200.0).max() <= 1.0
