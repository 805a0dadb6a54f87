"""Per-cell footprints (edit/footprints.py): the cells under buildings, models, liquid, holes, steep
ground and textures, checked against cells derived here independently: plain-Python polygons from
the placements as formats.md describes them (file axes: X = ZEROPOINT - p[2], Y = ZEROPOINT - p[0];
a heading h turns a placement by h + 180 degrees about Z), each tested against each cell's square
by separating axes (margin 0) or by the polygons' distance (margin > 0)."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest

from wowgrass.errors import UsageError
from wowgrass.formats.adt import MDDF_DTYPE, MODF_DTYPE, AdtTile, write_adt
from wowgrass.formats.m2 import make_vertices, write_m2

TILE = 1600.0 / 3.0
U = TILE / 128
ZP = 32 * TILE


# ----------------------------------------------------------------------------- plain-Python geometry

def cell_square(col, row, r, c):
    """World (X, Y) corners of cell (r, c) of the tile's 128x128 grid (r south, c east)."""
    x0, y0 = ZP - row * TILE, ZP - col * TILE
    xs, ys = (x0 - (r + 1) * U, x0 - r * U), (y0 - (c + 1) * U, y0 - c * U)
    return [(xs[0], ys[0]), (xs[1], ys[0]), (xs[1], ys[1]), (xs[0], ys[1])]


def _axes(poly):
    out = []
    for i in range(len(poly)):
        (ax, ay), (bx, by) = poly[i], poly[(i + 1) % len(poly)]
        if (ax, ay) != (bx, by):
            out.append((ay - by, bx - ax))
    return out


def overlap(a, b) -> bool:
    """Convex polygons sharing area (touching is not overlapping): no separating axis."""
    for nx, ny in _axes(a) + _axes(b):
        pa = [x * nx + y * ny for x, y in a]
        pb = [x * nx + y * ny for x, y in b]
        if max(pa) <= min(pb) or max(pb) <= min(pa):
            return False
    return True


def _seg(p, a, b):
    ex, ey = b[0] - a[0], b[1] - a[1]
    L = ex * ex + ey * ey
    t = 0.0 if L == 0 else max(0.0, min(1.0, ((p[0] - a[0]) * ex + (p[1] - a[1]) * ey) / L))
    return math.hypot(p[0] - a[0] - t * ex, p[1] - a[1] - t * ey)


def distance(a, b) -> float:
    if overlap(a, b):
        return 0.0
    return min(min(_seg(p, q[i], q[(i + 1) % len(q)]) for p in s for i in range(len(q))) for s, q in ((a, b), (b, a)))


def brute_cells(col, row, polys, margin=0.0) -> set:
    """Cells (r, c) whose square shares area with a polygon (margin 0) or comes nearer than ``margin``."""
    x0, y0 = ZP - row * TILE, ZP - col * TILE
    out = set()
    for poly in polys:
        xs, ys = [p[0] for p in poly], [p[1] for p in poly]
        r_lo, r_hi = int((x0 - max(xs) - margin) // U) - 1, int((x0 - min(xs) + margin) // U) + 1
        c_lo, c_hi = int((y0 - max(ys) - margin) // U) - 1, int((y0 - min(ys) + margin) // U) + 1
        for r in range(max(r_lo, 0), min(r_hi, 127) + 1):
            for c in range(max(c_lo, 0), min(c_hi, 127) + 1):
                sq = cell_square(col, row, r, c)
                if (overlap(poly, sq) if margin == 0 else distance(poly, sq) < margin):
                    out.add((r, c))
    return out


def cells_of(tile, mask) -> set:
    """(256, 8, 8) in MCNK order -> {(r, c)} on the tile's grid, through the chunks' own IndexX/IndexY."""
    out = set()
    for i, r, c in zip(*np.nonzero(mask)):
        ix, iy = (int(v) for v in tile.index_xy[i])
        out.add((iy * 8 + int(r), ix * 8 + int(c)))
    return out


def box_polygon(pos, heading, lo, hi, scale=1.0):
    """A placement's model box on the ground (no tilt): formats.md's axes, turned by heading + 180."""
    px, py = ZP - float(pos[2]), ZP - float(pos[0])
    a = math.radians(float(heading) + 180.0)
    ca, sa = math.cos(a), math.sin(a)
    out = []
    for x, y in ((lo[0], lo[1]), (hi[0], lo[1]), (hi[0], hi[1]), (lo[0], hi[1])):
        x, y = x * scale, y * scale
        out.append((px + x * ca - y * sa, py + x * sa + y * ca))
    return out


def extents_polygon(ext):
    """A MODF's extents (file axes) as a world box."""
    xs = sorted(ZP - float(e[2]) for e in ext)
    ys = sorted(ZP - float(e[0]) for e in ext)
    return [(xs[0], ys[0]), (xs[1], ys[0]), (xs[1], ys[1]), (xs[0], ys[1])]


class FakeData:
    """Game data of a few files; counts reads."""

    def __init__(self, files):
        self.files = {k.lower().replace("/", "\\"): v for k, v in files.items()}
        self.reads = []

    def read(self, path):
        self.reads.append(path)
        try:
            return self.files[path.lower().replace("/", "\\")]
        except KeyError:
            raise FileNotFoundError(path) from None


def box_model(lo, hi, version=264) -> bytes:
    """An M2 whose header box is (lo, hi)."""
    corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])], "f4")
    m2, _skin = write_m2(make_vertices(corners), [0, 1, 2], name="Box", version=version)
    return m2


def flat_tile(col=32, row=32, **fields) -> AdtTile:
    return AdtTile.from_arrays(col, row, n_layers=np.ones(256, np.uint8), **fields)


def world_to_file(x, y, z=0.0):
    return (ZP - y, z, ZP - x)


# ----------------------------------------------------------------------------- the sample world

@pytest.fixture(scope="module")
def terrain():
    from wowgrass.samples.heights import SampleTerrain

    return SampleTerrain((1, 1), seed=0)


def _sample_tile(terrain, build):
    from wowgrass.samples.sample_world import tile_object

    t = tile_object(build, terrain, 32, 32, 1000)
    return AdtTile.from_bytes(write_adt(t), big_alpha=build == "3.3.5")     # through the file's bytes


@pytest.fixture(scope="module")
def sample(terrain):
    return _sample_tile(terrain, "3.3.5")


@pytest.fixture(scope="module")
def sample_112(terrain):
    return _sample_tile(terrain, "1.12")


@pytest.fixture(scope="module")
def sample_data():
    from wowgrass.samples.sample_world import model_files

    return FakeData(model_files("3.3.5"))


def test_sample_house_covers_the_cells_under_its_box(sample, terrain):
    from wowgrass.edit.footprints import footprint
    from wowgrass.samples.features import house_bounds

    assert len(sample.modf) == 1
    for margin in (0.0, 2.5):
        got = cells_of(sample, footprint("buildings", sample, margin=margin))
        assert got == brute_cells(32, 32, [extents_polygon(sample.modf["extents"][0])], margin)
        # the house the sample placed (its world box, from the generator, not the file)
        (x0, y0, _), (x1, y1, _) = house_bounds(terrain)
        assert got == brute_cells(32, 32, [[(x0, y0), (x1, y0), (x1, y1), (x0, y1)]], margin)
    hx, hy = terrain.house_xy
    assert (int(-hx // U), int(-hy // U)) in got                # tile 32_32's corner is the world's (0, 0)
    assert 16 <= len(cells_of(sample, footprint("buildings", sample))) <= 36     # a 15 x 17 yard house


def test_sample_models_cover_their_turned_and_scaled_boxes(sample, terrain, sample_data):
    from wowgrass.edit.footprints import FootprintContext, footprint
    from wowgrass.samples import models as M

    boxes = {}
    for key, mesh in (("rock", M.rock()), ("human", M.human_figure())):
        p = np.asarray(mesh.positions, np.float64)
        boxes[key] = (p.min(axis=0), p.max(axis=0))
    placed = terrain.tile(32, 32).doodads            # (key, X, Y, dz, yaw, scale) as generated
    assert len(placed) == len(sample.mddf) >= 2
    polys = [box_polygon(world_to_file(x, y), yaw, *boxes[key], scale) for key, x, y, _dz, yaw, scale in placed]
    ctx = FootprintContext(sample_data)
    for margin in (0.0, 1.5):
        got = cells_of(sample, footprint("models", sample, margin=margin, context=ctx))
        assert got == brute_cells(32, 32, polys, margin)
    assert ctx.notes == []
    # without data: the cell of each position as the file stores it (the generator puts them on cell
    # corners; the file's float32 decides which cell), and a note saying so
    ctx = FootprintContext()
    got = cells_of(sample, footprint("models", sample, context=ctx))
    p = sample.mddf["position"].astype(np.float64)
    assert got == {(int((p[k, 2] - ZP) // U), int((p[k, 0] - ZP) // U)) for k in range(len(p))}
    assert len(ctx.notes) == 1 and "no game data" in ctx.notes[0]


def test_objects_at_names_what_covers_a_cell(sample, sample_data):
    """Every covered cell has an object that covers it, no cell outside has one, and it is the house
    (or a rock) by its unique id."""
    from wowgrass.edit.footprints import FootprintContext, footprint, objects_at
    from wowgrass.samples.features import HOUSE_UID

    ctx = FootprintContext(sample_data)
    for kind, margin in (("buildings", 0.0), ("buildings", 3.0), ("models", 0.0), ("models", 2.0)):
        mask = footprint(kind, sample, margin=margin, context=ctx)
        chunks = np.flatnonzero(mask.reshape(256, -1).any(axis=1))
        for i in np.unique(np.concatenate([chunks, np.clip(chunks + 1, 0, 255), np.clip(chunks + 16, 0, 255)])):
            for k in range(64):
                found = objects_at(kind, sample, int(i), k, margin=margin, context=ctx)
                assert bool(found) == bool(mask[i].flat[k]), (kind, margin, i, k)
                if found and kind == "buildings":
                    assert found == [{"index": 0, "unique_id": HOUSE_UID, "name": sample.wmos[0]}]
                if found and kind == "models":
                    assert {f["name"] for f in found} <= set(sample.models)
    with pytest.raises(UsageError):
        objects_at("liquid", sample, 0, 0)


@pytest.mark.parametrize("build", ["3.3.5", "2.4.3", "1.12"])
def test_sample_lake_covers_its_wet_cells(terrain, build, request):
    from wowgrass.edit.footprints import footprint
    from wowgrass.samples.features import tile_features

    tile = {"3.3.5": request.getfixturevalue("sample"), "1.12": request.getfixturevalue("sample_112")}.get(build)
    tile = _sample_tile(terrain, build) if tile is None else tile
    assert (tile.mh2o is not None) == (build == "3.3.5")
    gen = terrain.tile(32, 32, alpha_bits=8 if build == "3.3.5" else 4, fix_alpha=build == "1.12")
    liq = tile_features(build, terrain, gen, 32, 32)["liquid"]      # what the generator made wet
    wet = np.zeros((256, 8, 8), bool)
    for layer in liq.layers:
        wet[layer["chunk"]] |= layer["exists"]
    got = footprint("liquid", tile)
    assert np.array_equal(got, wet) and 50 < got.sum() < 400
    lx, ly = terrain.lake_xy
    assert (int(-lx // U), int(-ly // U)) in cells_of(tile, got)


def test_mclq_tile_bytes_0x0f_are_dry(sample_112):
    """1.12: the cells come from each chunk's MCLQ tile bytes (0x0F: no liquid), read here by hand."""
    from wowgrass.edit.footprints import footprint

    assert sample_112.mh2o is None
    want = np.zeros((256, 8, 8), bool)
    n = 0
    for i, payload in enumerate(sample_112.liquids):
        if payload:
            tiles = np.frombuffer(bytes(payload[8 + 81 * 8:8 + 81 * 8 + 64]), np.uint8).reshape(8, 8)
            want[i] = tiles != 0x0F
            n += 1
    assert n > 0 and want.any() and not want.all()
    assert np.array_equal(footprint("liquid", sample_112), want)
    assert footprint("liquid", sample_112, margin=0.5).sum() > want.sum()


def test_sample_world_built_for_112(sample, sample_data):
    """The 1.12 sample world as `wowgrass sample build --build 1.12` writes it (MPQs, v256 models,
    MCLQ): the tile and the models' bounds read through the game data cover what the 3.3.5 tile
    covers with its models served directly (the same placements, the same boxes)."""
    from wowgrass.edit.footprints import FootprintContext, footprint
    from wowgrass.game.data import open_data
    from wowgrass.game.tiles import load_tile
    from wowgrass.samples import sample_data_path

    data = open_data(sample_data_path("1.12", (1, 1), 0))
    tile, _raw, _src = load_tile(data=data, map_name="WowgrassSample", tile=(32, 32))
    assert tile.mh2o is None and any(p is not None for p in tile.liquids)
    ctx = FootprintContext(data)
    for kind in ("buildings", "models", "liquid"):          # (holes follow the 4- or 8-bit rock alpha)
        for margin in (0.0, 2.0):
            want = footprint(kind, sample, margin=margin, context=FootprintContext(sample_data))
            assert np.array_equal(footprint(kind, tile, margin=margin, context=ctx), want), (kind, margin)
    assert ctx.notes == [] and footprint("models", tile, context=ctx).sum() > len(tile.mddf)


def test_footprint_picture_tints_the_sample(sample, terrain, sample_data, tmp_path):
    from wowgrass.edit.footprints import KIND_COLOURS, FootprintContext, footprint, footprint_image
    from wowgrass.edit.masks import chunks_to_grid
    from wowgrass.fileio import write_image

    ctx = FootprintContext(sample_data)
    masks = {k: footprint(k, sample, context=ctx) for k in ("liquid", "buildings", "models")}
    img = footprint_image(sample, masks, 512, context=ctx)
    write_image(tmp_path / "footprints.png", img)
    px = 512 / TILE                                      # pixels a yard; tile 32_32's corner is (0, 0)

    def at(x, y):
        return img[int(-x * px), int(-y * px)].astype(int)

    lake, house = at(*terrain.lake_xy), at(*terrain.house_xy)
    assert lake[2] > 200 and lake[0] < 120                 # blue
    assert abs(house - np.array(KIND_COLOURS["buildings"])).max() < 60 or house.min() == 255   # orange (or its outline)
    far = at(-400.0, -400.0)
    assert not (far[2] > 200 and far[0] < 120)
    # the white outlines (the house's box, the models' boxes) lie in the cells their footprints tint
    white = (img == 255).all(axis=-1)
    tinted = np.kron(chunks_to_grid(sample, masks["buildings"] | masks["models"]), np.ones((4, 4), bool))
    assert white.sum() > 40 and (white & ~tinted).sum() == 0
    assert not (footprint_image(sample, masks, 512, context=ctx, outlines=False) == 255).all(axis=-1).any()


# ----------------------------------------------------------------------------- a real tile

@pytest.fixture(scope="module")
def real(realdata):
    return AdtTile.from_bytes((realdata / "adt" / "continent4229.adt").read_bytes(), "continent4229.adt")


def test_real_placements_are_in_the_file_axes(real):
    # formats.md: X = ZEROPOINT - p[2], Y = ZEROPOINT - p[0]; the tile is column 42, row 29
    p = real.mddf["position"].astype(np.float64)
    x, y = ZP - p[:, 2], ZP - p[:, 0]
    x0, y0 = ZP - 29 * TILE, ZP - 42 * TILE
    def within(yards):
        return (x <= x0 + yards) & (x >= x0 - TILE - yards) & (y <= y0 + yards) & (y >= y0 - TILE - yards)

    assert within(100).all() and within(0).mean() > 0.95      # a placement near the tile may be listed too
    for rec in real.modf:          # a building's position lies in its extents
        box = extents_polygon(rec["extents"])
        px, py = ZP - float(rec["position"][2]), ZP - float(rec["position"][0])
        assert box[0][0] <= px <= box[2][0] and box[0][1] <= py <= box[2][1]


def test_real_buildings_holes_and_liquid(real):
    from wowgrass.edit.footprints import footprint

    assert len(real.modf) == 19
    for margin in (0.0, 3.0):
        got = cells_of(real, footprint("buildings", real, margin=margin))
        assert got == brute_cells(42, 29, [extents_polygon(e) for e in real.modf["extents"]], margin)
    # holes: one chunk's low-resolution bits, each 2x2 cells (README: 1 chunk with holes)
    holes = footprint("holes", real)
    want = set()
    for i in np.flatnonzero(real.holes):
        ix, iy = (int(v) for v in real.index_xy[i])
        for b in range(16):
            if int(real.holes[i]) >> b & 1:
                want |= {(iy * 8 + 2 * (b // 4) + dr, ix * 8 + 2 * (b % 4) + dc) for dr in (0, 1) for dc in (0, 1)}
    assert cells_of(real, holes) == want and len(want) == 8
    # liquid: MH2O read here by hand (README: one ocean layer in each of 9 chunks)
    raw = real.mh2o
    want = np.zeros((256, 8, 8), bool)
    for i in range(256):
        ofs, count, _attr = struct.unpack_from("<3I", raw, i * 12)
        for k in range(count):
            _t, _f, _lo, _hi, x, y, w, h, ofs_ex, _ofs_v = struct.unpack_from("<2H2f4B2I", raw, ofs + 24 * k)
            bits = int.from_bytes(raw[ofs_ex:ofs_ex + (w * h + 7) // 8], "little") if ofs_ex else (1 << w * h) - 1
            for j in range(w * h):
                if bits >> j & 1:
                    want[i, y + j // w, x + j % w] = True
    got = footprint("liquid", real)
    assert np.array_equal(got, want)
    assert np.count_nonzero(got.reshape(256, -1).any(axis=1)) == 9


def test_real_models_with_and_without_their_bounds(real, realdata):
    from wowgrass.edit.footprints import FootprintContext, footprint

    ids = real.mddf["name_id"]
    # the data has none of the tile's models: positions only, one note per model named
    ctx = FootprintContext(FakeData({}))
    got = footprint("models", real, context=ctx)
    p = real.mddf["position"].astype(np.float64)
    x0, y0 = ZP - 29 * TILE, ZP - 42 * TILE
    r, c = np.floor((x0 - (ZP - p[:, 2])) / U), np.floor((y0 - (ZP - p[:, 0])) / U)
    keep = (r >= 0) & (r < 128) & (c >= 0) & (c < 128)
    assert cells_of(real, got) == set(zip(r[keep].astype(int).tolist(), c[keep].astype(int).tolist()))
    assert len(ctx.notes) == len(np.unique(ids)) == 67
    assert all("not in the data" in n for n in ctx.notes)
    assert any("PLAGUELANDWESTERNBUSH01.M2" in n for n in ctx.notes)

    # one model served by the real Rabbit.m2 (README: box (-0.6341, -0.3106, -0.1567)..(0.4769, 0.4701, 0.8001))
    rabbit = (realdata / "m2" / "v264" / "Rabbit.m2").read_bytes()
    bush = real.models[61]
    lo, hi = (-0.6341, -0.3106, -0.1567), (0.4769, 0.4701, 0.8001)
    sel = real.mddf[(ids == 61) & (real.mddf["rotation"][:, 0] == 0) & (real.mddf["rotation"][:, 2] == 0)]
    assert len(sel) == 51
    one = AdtTile.from_arrays(42, 29, models=real.models, mddf=sel)
    ctx = FootprintContext(FakeData({bush: rabbit}))
    for margin in (0.0, 2.0):
        got = cells_of(one, footprint("models", one, margin=margin, context=ctx))
        polys = [box_polygon(m["position"], m["rotation"][1], lo, hi, m["scale"] / 1024) for m in sel]
        assert got == brute_cells(42, 29, polys, margin)
    assert ctx.notes == []


# ----------------------------------------------------------------------------- margins, turns, scales

def _one_wmo(x, y, half_x, half_y) -> AdtTile:
    rec = np.zeros(1, MODF_DTYPE)
    rec["position"] = world_to_file(x, y)
    rec["extents"] = [world_to_file(x - half_x, y - half_y), world_to_file(x + half_x, y + half_y)]
    return flat_tile(modf=rec, wmos=["a.wmo"])


def test_a_tile_without_placements_covers_nothing():
    from wowgrass.edit.footprints import footprint

    t = flat_tile(modf=np.zeros(0, MODF_DTYPE), wmos=[])
    for kind in ("buildings", "models"):
        for margin in (0.0, 5.0):
            cells = footprint(kind, t, margin=margin)
            assert cells.shape == (256, 8, 8) and not cells.any()


def test_margin_grows_a_box_with_rounded_corners():
    from wowgrass.edit.footprints import footprint

    # a 2 x 2 yard box in the middle of cell (10, 20): 1.083 yards from each of its edges
    t = _one_wmo(-(10.5 * U), -(20.5 * U), 1.0, 1.0)
    gap = (U - 2.0) / 2
    counts = {m: int(footprint("buildings", t, margin=m).sum()) for m in (0.0, gap - 0.01, gap + 0.01,
                                                                          math.hypot(gap, gap) + 0.01)}
    assert list(counts.values()) == [1, 1, 5, 9]     # the cross first: the corners are farther
    assert cells_of(t, footprint("buildings", t)) == {(10, 20)}


def test_cell_kinds_grow_by_whole_cells_across_chunk_borders():
    from wowgrass.edit.footprints import footprint

    holes = np.zeros(256, "<u2")
    holes[0] = 0x8000                         # chunk 0's south-east 2x2 block: cells (6..7, 6..7)
    t = flat_tile(holes=holes)
    assert cells_of(t, footprint("holes", t)) == {(6, 6), (6, 7), (7, 6), (7, 7)}
    grown = cells_of(t, footprint("holes", t, margin=0.1))
    assert grown == {(r, c) for r in range(5, 9) for c in range(5, 9)}         # into chunks 1, 16 and 17
    grown = cells_of(t, footprint("holes", t, margin=U + 0.1))
    assert grown == {(r, c) for r in range(4, 10) for c in range(4, 10)} - {(4, 4), (4, 9), (9, 4), (9, 9)}
    # the same rule as for a box: a box that is exactly that 2x2 block grows alike
    w = _one_wmo(-(7.0 * U), -(7.0 * U), U - 0.01, U - 0.01)      # float32 file axes: 0.002 yards here
    for m in (0.0, 0.1, U + 0.1, 2 * U + 0.1, 2.5 * U):
        assert np.array_equal(footprint("buildings", w, margin=m), footprint("holes", t, margin=m)), m
    # the tile's own edge clips (across tile borders is out of scope)
    holes[:] = 0
    holes[0] = 0x0001
    assert cells_of(t, footprint("holes", t, margin=0.1)) == {(r, c) for r in range(3) for c in range(3)}


def test_touching_is_not_covering():
    """Exactly on the cells' borders (float64, tile 32_32 whose corner is world (0, 0); 7U / U is 7.0):
    a box that is exactly a 2x2 block covers those 4 cells, and grown by exactly one cell side it
    covers the cells nearer than that, not those exactly that far (the same as holes grown)."""
    from wowgrass.edit.footprints import cover_grid, footprint

    t = flat_tile()
    block = {(r, c) for r in (6, 7) for c in (6, 7)}
    ring = {(r, c) for r in range(5, 9) for c in range(5, 9)}
    for margin, want in ((0.0, block), (U, ring)):
        grid = cover_grid(t, [[-7 * U, -7 * U]], [[[2 * U, 0.0], [0.0, 2 * U]]], margin)
        assert {(int(r), int(c)) for r, c in zip(*np.nonzero(grid))} == want
    holes = np.zeros(256, "<u2")
    holes[0] = 0x8000
    assert cells_of(flat_tile(holes=holes), footprint("holes", flat_tile(holes=holes), margin=U)) == ring
    # a point (a model without bounds) on a cell corner: the cell it belongs to, south-east of it
    grid = cover_grid(t, [[-7 * U, -7 * U]], np.zeros((1, 3, 2)), 0.0)
    assert {(int(r), int(c)) for r, c in zip(*np.nonzero(grid))} == {(7, 7)}


def test_chunks_out_of_order_keep_their_cells():
    """MCNK order is IndexY * 16 + IndexX in every real file, but the footprints follow each chunk's
    own IndexX/IndexY: a tile whose chunks are stored backwards covers the same ground."""
    from wowgrass.edit.footprints import footprint

    t = _one_wmo(-(30.5 * U), -(70.5 * U), 9.0, 3.0)
    t.holes = np.zeros(256, "<u2")
    t.holes[3 * 16 + 9] = 0x0021
    back = np.arange(256)[::-1]
    b = AdtTile.from_arrays(32, 32, positions=t.positions[back], index_xy=t.index_xy[back], holes=t.holes[back],
                            n_layers=np.ones(256, np.uint8), modf=t.modf, wmos=t.wmos)
    for kind in ("buildings", "holes"):
        for margin in (0.0, 3.0):
            got, want = footprint(kind, b, margin=margin), footprint(kind, t, margin=margin)
            assert cells_of(b, got) == cells_of(t, want) and not np.array_equal(got, want), (kind, margin)


def test_holes_map_each_bit_to_2x2_cells():
    from wowgrass.edit.footprints import footprint

    holes = np.zeros(256, "<u2")
    holes[17] = (1 << 0) | (1 << 6)           # chunk IndexX 1, IndexY 1: block (0, 0) and block (1, 2)
    t = flat_tile(holes=holes)
    want = {(8 + r, 8 + c) for r in (0, 1) for c in (0, 1)} | {(8 + 2 + r, 8 + 4 + c) for r in (0, 1) for c in (0, 1)}
    assert cells_of(t, footprint("holes", t)) == want


def _one_model(heading=0.0, scale=1024, tilt=0.0, lo=(-5.0, -0.5, 0.0), hi=(5.0, 0.5, 2.0), at=(20.5, 30.5)):
    rec = np.zeros(1, MDDF_DTYPE)
    rec["position"] = world_to_file(-at[0] * U, -at[1] * U)
    rec["rotation"] = (tilt, heading, 0.0)
    rec["scale"] = scale
    t = flat_tile(mddf=rec, models=["World\\Box.mdx"])      # 1.12 names: read as .m2
    return t, FakeData({"World\\Box.m2": box_model(lo, hi)}), rec


@pytest.mark.parametrize("heading, scale", [(0.0, 1024), (90.0, 1024), (33.0, 1024), (33.0, 2048), (-150.0, 700)])
def test_a_turned_and_scaled_box_covers_its_cells(heading, scale):
    from wowgrass.edit.footprints import FootprintContext, footprint

    lo, hi = (-5.0, -0.5, 0.0), (5.0, 0.5, 2.0)
    t, data, rec = _one_model(heading, scale, lo=lo, hi=hi)
    ctx = FootprintContext(data)
    for margin in (0.0, 1.0):
        got = cells_of(t, footprint("models", t, margin=margin, context=ctx))
        want = brute_cells(32, 32, [box_polygon(rec["position"][0], heading, lo, hi, scale / 1024)], margin)
        assert got == want
    assert data.reads == ["World\\Box.m2"] and ctx.notes == []


def test_turning_and_scaling_change_the_cells():
    from wowgrass.edit.footprints import footprint

    cells = {}
    for key, heading, scale in (("plain", 0.0, 1024), ("turned", 90.0, 1024), ("scaled", 0.0, 3072)):
        t, data, _ = _one_model(heading, scale)
        cells[key] = cells_of(t, footprint("models", t, data=data))
    # a 10 x 1 yard box: along X (north-south) unturned, along Y turned; three times as long scaled
    rows = {k: {r for r, _ in v} for k, v in cells.items()}
    cols = {k: {c for _, c in v} for k, v in cells.items()}
    assert len(rows["plain"]) >= 3 and len(cols["plain"]) == 1
    assert len(cols["turned"]) >= 3 and len(rows["turned"]) == 1
    assert len(rows["scaled"]) >= 3 * len(rows["plain"]) - 1


def test_a_tilted_box_covers_its_projection():
    from wowgrass.edit.footprints import footprint
    from wowgrass.game.mapobjects import placement_matrices

    lo, hi = (-2.0, -1.0, 0.0), (2.0, 1.0, 30.0)          # a tall post, tilted 60 degrees
    t, data, rec = _one_model(heading=25.0, tilt=60.0, lo=lo, hi=hi)
    got = cells_of(t, footprint("models", t, data=data))
    # points through the whole box, placed by the client's matrix: every cell they fall in is covered,
    # and the covered cells are no more than those within a sample step of them
    m = placement_matrices(rec["position"], rec["rotation"], 1.0)[0]
    g = np.stack(np.meshgrid(*[np.linspace(lo[i], hi[i], 41) for i in range(3)], indexing="ij"), -1).reshape(-1, 3)
    w = g @ m[:3, :3].T + m[:3, 3]
    x0, y0 = ZP - 32 * TILE, ZP - 32 * TILE
    hit = set(zip(np.floor((x0 - w[:, 0]) / U).astype(int).tolist(), np.floor((y0 - w[:, 1]) / U).astype(int).tolist()))
    assert hit <= got
    upright = cells_of(t, footprint("models", _one_model(heading=25.0, lo=lo, hi=hi)[0], data=data))
    assert len(got) > len(upright) + 3                     # tilted, the post lies over more ground


def test_missing_model_is_noted_once_and_read_once():
    from wowgrass.edit.footprints import FootprintContext, footprint

    t, data, _ = _one_model()
    t.models = ["World\\Gone.mdx"]
    ctx = FootprintContext(data)
    for _ in range(3):                         # three tiles of a map
        assert cells_of(t, footprint("models", t, context=ctx)) == {(20, 30)}
    assert data.reads == ["World\\Gone.m2"]
    assert ctx.notes == ["model World\\Gone.m2: not in the data: its placements cover the cell of their position only"]


def test_unreadable_model_and_a_box_that_is_not_one_are_noted():
    from wowgrass.edit.footprints import FootprintContext, footprint

    t, _data, _ = _one_model()
    t.models = ["World\\Bad.m2", "World\\Nan.m2"]
    t.mddf = np.concatenate([t.mddf, t.mddf])
    t.mddf["name_id"] = [0, 1]
    nan = box_model((float("nan"), 0.0, 0.0), (1.0, 1.0, 1.0))
    ctx = FootprintContext(FakeData({"World\\Bad.m2": b"MD20\x08\x01\x00\x00" + b"\0" * 40, "World\\Nan.m2": nan}))
    assert cells_of(t, footprint("models", t, context=ctx)) == {(20, 30)}
    assert len(ctx.notes) == 2
    assert ctx.notes[0].startswith("model World\\Bad.m2: unreadable (")
    assert ctx.notes[1].startswith("model World\\Nan.m2: its bounding box [[nan")
    # a context without data notes that once, and a later call with data still reads the model
    t, data, _ = _one_model()
    ctx = FootprintContext()
    assert cells_of(t, footprint("models", t, context=ctx)) == {(20, 30)}
    assert len(cells_of(t, footprint("models", t, context=ctx, data=data))) > 1
    assert ctx.notes == ["models: no game data given: every model covers the cell of its position only"]


def test_damaged_placements_cover_nothing_quietly():
    """Positions or rotations that are not finite, or far off the map, cover nothing, warn nothing;
    a name id past the model names is a position alone, and noted."""
    import warnings

    from wowgrass.edit.footprints import FootprintContext, footprint, objects_at

    rec = np.zeros(5, MDDF_DTYPE)
    rec["position"] = [(1e30, 0, 1e30), (np.nan, 0, 0), (np.inf, 0, 5), (3e38, 0, -3e38), world_to_file(-2.5 * U, -3.5 * U)]
    rec["rotation"][3] = (np.nan, 0, 0)
    rec["scale"] = 1024
    rec["name_id"] = [0, 0, 0, 0, 7]
    t, data, _ = _one_model()
    t.mddf = rec
    ctx = FootprintContext(data)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for margin in (0.0, 3.0):
            got = cells_of(t, footprint("models", t, margin=margin, context=ctx))
            assert got == ({(2, 3)} if margin == 0 else {(r, c) for r in (1, 2, 3) for c in (2, 3, 4)})
        assert [o["index"] for o in objects_at("models", t, 0, (2, 3), context=ctx)] == [4]
    assert ctx.notes == ["MDDF name id 7 is past the tile's 1 model names: positions only"]


# ----------------------------------------------------------------------------- slope, texture, arguments

def test_slope_footprint_is_the_steep_cells_grown():
    from wowgrass.edit.footprints import footprint
    from wowgrass.edit.masks import slope_mask

    from wowgrass.formats.adt import VERTEX_ROWCOL

    h = np.zeros((256, 145), np.float32)
    h[5] = VERTEX_ROWCOL[:, 0] * U * np.tan(np.radians(50))     # chunk 5 (IndexX 5, IndexY 0): 50 degrees
    t = AdtTile.from_arrays(32, 32, heights=h)
    got = footprint("slope", t, degrees=40)
    assert np.array_equal(got, slope_mask(t, 40)) and got[5].all() and got.sum() == 64
    assert footprint("slope", t, degrees=55).sum() == 0
    grown = cells_of(t, footprint("slope", t, degrees=40, margin=0.1))
    assert grown == {(r, c) for r in range(0, 9) for c in range(39, 49)}     # row -1 is the next tile's


def _two_layer_tile(road_alpha, top_alpha=None):
    """Chunk 0: grass, a road layer (alpha per cell from ``road_alpha`` (8, 8)), maybe a top layer."""
    n = np.ones(256, np.uint8)
    n[0] = 2 if top_alpha is None else 3
    tex = np.full((256, 4), -1, "<i4")
    tex[:, 0] = 0
    tex[0, 1] = 1
    tex[0, 2] = 2
    alpha = np.zeros((256, 4, 64, 64), np.uint8)
    alpha[0, 1] = np.kron(np.asarray(road_alpha, np.uint8), np.ones((8, 8), np.uint8))
    if top_alpha is not None:
        alpha[0, 2] = top_alpha
    return AdtTile.from_arrays(32, 32, n_layers=n, layer_texture=tex, alpha=alpha,
                               textures=["Tileset\\Grass.blp", "Tileset\\Elwynn\\ElwynnRoad.blp", "Tileset\\Moss.blp"])


def test_texture_share_threshold():
    from wowgrass.edit.footprints import footprint

    a = np.zeros((8, 8), np.uint8)
    a[0, 0], a[0, 1], a[0, 2] = 51, 128, 204                 # shares 0.2, 0.502, 0.8
    t = _two_layer_tile(a)
    at = {s: cells_of(t, footprint("texture", t, patterns=["*road*"], share=s)) for s in (0.1, 0.5, 0.7)}
    assert at == {0.1: {(0, 0), (0, 1), (0, 2)}, 0.5: {(0, 1), (0, 2)}, 0.7: {(0, 2)}}
    assert cells_of(t, footprint("texture", t, patterns="Tileset\\Elwynn\\*", share=0.7)) == {(0, 2)}
    assert not footprint("texture", t, patterns=["*cobble*"], share=0.1).any()
    assert cells_of(t, footprint("texture", t, patterns=["*road*"], share=0.0)) == {(0, 0), (0, 1), (0, 2)}
    # the grass patterns: the base layer shows what the road leaves
    assert (0, 2) not in cells_of(t, footprint("texture", t, patterns=["grass"], share=0.5))
    # a layer above covers half of the road: what shows is what counts
    t = _two_layer_tile(np.full((8, 8), 255, np.uint8), top_alpha=128)
    assert not footprint("texture", t, patterns=["*road*"], share=0.5).any()
    assert footprint("texture", t, patterns=["*road*"], share=0.45)[0].all()
    assert footprint("texture", t, patterns=["*road*"], share=0.45, margin=0.1).sum() == 64 + 8 + 8 + 1


def test_bad_arguments_are_usage_errors():
    from wowgrass.edit.footprints import footprint

    t = flat_tile()
    for kind, kw in (("trees", {}), ("slope", {}), ("slope", {"degrees": "steep"}), ("holes", {"margin": -1}),
                     ("holes", {"margin": float("nan")}), ("liquid", {"degrees": 3}), ("texture", {}),
                     ("texture", {"patterns": ["*"], "share": 1.5})):
        with pytest.raises(UsageError):
            footprint(kind, t, **kw)
