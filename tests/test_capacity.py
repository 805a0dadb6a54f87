"""The clients' draw capacity (grass/capacity.py): what of the scatter a chunk draws, and how client
bakes keep it (the dropped count, the scatter order) in the bundle."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from wowgrass.cli.main import cli
from wowgrass.formats.m2 import M2Model, M2Texture, make_vertices, write_m2
from wowgrass.grass.bundle import read_bundle
from wowgrass.grass.capacity import ModelGeometry, budget_335, draw_capacity, missing_geometry, model_geometry


def port_reference(chunk, model, geometry, picks, wotlk):
    """The draw side as the second 3.3.5 port writes it, placement by placement (and 1.12's cap)."""
    keep = np.zeros(len(chunk), bool)
    if not wotlk:
        seen = {}
        for k, c in enumerate(chunk.tolist()):
            seen[c] = seen.get(c, 0) + 1
            keep[k] = seen[c] <= min(picks << 6, 8192)
        return keep
    budget = min(max(picks, 16) * 64, 4096)
    batches = {}  # chunk -> [[texture, vertices, indices], ...] (at most four)
    for k, (c, m) in enumerate(zip(chunk.tolist(), model.tolist())):
        g = geometry[m]
        open_ = batches.setdefault(c, [])
        use = next((b for b in open_ if b[0] == g.texture and b[1] + g.vertex_count < budget
                    and b[2] + g.index_count < budget), None)
        if use is None and len(open_) < 4:
            use = [g.texture, 0, 0]
            open_.append(use)
        if use is None:
            continue
        use[1] += g.vertex_count
        use[2] += g.index_count
        keep[k] = True
    return keep


def random_scatter(rng, n, chunks, models):
    chunk = np.sort(rng.integers(0, chunks, n)).astype(np.uint16)  # scatter order: chunk by chunk
    return chunk, rng.integers(0, models, n)


@pytest.mark.parametrize("sizes", ["none", "small", "filling", "filling-per-texture"])
@pytest.mark.parametrize("picks", [16, 48, 256])
def test_batches_match_the_ports_loop(sizes, picks):
    rng = np.random.default_rng(picks + len(sizes))
    textures = ["a.blp", "b.blp", "c.blp", "d.blp", "e.blp", "f.blp"]
    scale = {"none": 0, "small": 1, "filling": 60, "filling-per-texture": 60}[sizes]
    geometry = {m: ModelGeometry(textures[rng.integers(0, 6)], int(rng.integers(1, 9)) * scale,
                                 int(rng.integers(3, 30)) * scale) for m in range(12)}
    if sizes == "filling-per-texture":  # one size a texture: the closed form, not the steps
        geometry = {m: ModelGeometry(g.texture, 7 * len(g.texture) * (ord(g.texture[0]) - 90), 40 + ord(g.texture[0]))
                    for m, g in geometry.items()}
    chunk, model = random_scatter(rng, 6000, 40, 12)
    got = draw_capacity(chunk, model, geometry, max(picks, 16), True)
    want = port_reference(chunk, model, geometry, picks, True)
    assert (got == want).all()
    if sizes.startswith("filling"):  # the batches fill: more than the fifth texture goes
        assert (~got).sum() > (~draw_capacity(chunk, model, {m: ModelGeometry(g.texture) for m, g in
                                                              geometry.items()}, picks, True)).sum()


def test_a_fifth_texture_is_dropped_and_a_full_batch_opens_another():
    geometry = {m: ModelGeometry(f"t{m}", 100, 150) for m in range(6)}
    # one chunk: textures 0..4 in turn; the fifth never gets a batch
    chunk = np.zeros(10, np.uint16)
    model = np.array([0, 1, 2, 3, 4, 0, 1, 2, 3, 4])
    keep = draw_capacity(chunk, model, geometry, 16, True)
    assert keep.tolist() == [True, True, True, True, False] * 2
    # budget 1024 at 16 picks: a batch takes six of a 150-index model (900 + 150 = 1050 is not < 1024),
    # the seventh opens a second batch of the same texture, ... until four are open
    assert budget_335(16) == 1024 and budget_335(48) == 3072 and budget_335(256) == 4096
    model = np.zeros(30, np.int64)
    keep = draw_capacity(np.zeros(30, np.uint16), model, geometry, 16, True)
    assert keep.sum() == 4 * 6 and keep[:24].all()
    # a chunk's batches are its own
    keep = draw_capacity(np.repeat(np.arange(2, dtype=np.uint16), 30), np.zeros(60, np.int64), geometry, 16, True)
    assert keep.sum() == 2 * 24


def test_missing_models_are_textures_of_their_own_that_never_fill():
    g = missing_geometry("World\\NoDXT\\Detail\\Gone01.m2")
    assert not g.known and g.vertex_count == 0 and "gone01.m2" in g.texture
    geometry = {m: missing_geometry(f"m{m}.m2") for m in range(5)}
    keep = draw_capacity(np.zeros(5000, np.uint16), np.arange(5000) % 5, geometry, 16, True)
    assert keep.sum() == 4000 and not keep[4::5].any()


def test_112_keeps_the_instance_cap_of_its_decode():
    chunk = np.repeat(np.arange(3, dtype=np.uint16), [100, 2000, 9000])
    model = np.zeros(chunk.size, np.int64)
    for picks in (1, 16, 256):
        got = draw_capacity(chunk, model, {}, picks, False)
        assert (got == port_reference(chunk, model, {}, picks, False)).all()
    assert draw_capacity(chunk, model, {}, 16, False).sum() == 100 + 1024 + 1024
    assert draw_capacity(chunk, model, {}, 256, False).sum() == 100 + 2000 + 8192


def test_model_geometry_is_the_first_batch_by_index_start():
    verts = make_vertices(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 1], [2, 2, 2]], "f4"))
    m2, skin = write_m2(verts, [0, 1, 2, 1, 3, 2], name="Tuft", textures=[M2Texture(0, 0, "World/NoDXT/Detail/Tuft.BLP")])
    model = M2Model.from_bytes(m2, "Tuft.m2", skin=skin)
    g = model_geometry(model, "World\\NoDXT\\Detail\\Tuft.m2")
    assert g == ModelGeometry("world\\nodxt\\detail\\tuft.blp", int(model.view.submeshes[0]["vertex_count"]), 6, True)
    # a replaceable texture has no file: the model's own key
    m2, skin = write_m2(verts, [0, 1, 2], name="R", textures=[M2Texture(11, 0, "")])
    g = model_geometry(M2Model.from_bytes(m2, "R.m2", skin=skin), "R.m2")
    assert g.texture.startswith("<model r.m2") and g.index_count == 3


# ----------------------------------------------------------------------------- client bakes


def _five_per_chunk_reference(inst):
    """Placements a chunk keeps when every model is a texture of its own that never fills: those
    of its first four distinct models, in scatter order."""
    keep, seen = [], {}
    for c, m in zip(inst.chunk.tolist(), inst.model.tolist()):
        first = seen.setdefault(c, [])
        if m not in first and len(first) < 4:
            first.append(m)
        keep.append(m in first)
    return np.array(keep)


def test_real_tile_client_bake_drops_what_the_capacity_drops(realdata, tmp_path):
    from wowgrass.formats.adt import AdtTile
    from wowgrass.grass.bake import load_catalog
    from wowgrass.grass.placement import ClientPlacement

    adt = realdata / "adt" / "continent4229.adt"
    runner = CliRunner()
    r = runner.invoke(cli, ["bake", str(adt), "--dbc", str(realdata / "dbc" / "3.3.5"), "--placement", "client",
                            "-o", str(tmp_path / "c.wgb")])
    assert r.exit_code == 0, r.output
    # no grass model is public: all 16 are missing, each a texture of its own
    assert "317 placements of 6,149 dropped (5.2 %)" in r.output
    assert "each missing grass model counts as a texture of its own" in r.output
    r = runner.invoke(cli, ["bake", str(adt), "--dbc", str(realdata / "dbc" / "3.3.5"), "--placement", "client",
                            "-o", str(tmp_path / "c.wgb"), "--json"])
    d = json.loads(r.stdout)
    assert (d["capacity_dropped_count"], d["instance_count"], d["cache_hit"]) == (317, 6149 - 317, True)
    assert any("counts as a texture of its own" in n for n in d["notes"])
    r = runner.invoke(cli, ["bundle", "info", str(tmp_path / "c.wgb"), "--json"])
    info = json.loads(r.stdout)
    assert info["capacity_dropped_count"] == 317 and info["scatter_order"] is True
    assert "317 placements dropped" in runner.invoke(cli, ["bundle", "info", str(tmp_path / "c.wgb")]).output

    tile = AdtTile.from_bytes(adt.read_bytes())
    inst = ClientPlacement().place(tile, load_catalog(dbc_dir=realdata / "dbc" / "3.3.5"), map_name="c")
    kept = _five_per_chunk_reference(inst)
    assert (~kept).sum() == 317
    # the bundle's scatter order puts its instances back in the client's order: the kept placements
    with read_bundle(tmp_path / "c.wgb") as b:
        rows = b.instances()
        order = b.scatter_order
        paths = np.concatenate([[m.path] * len(m) for m in b.models])
    back = np.empty_like(rows)
    back[order] = rows
    assert np.array_equal(back["pos"], inst.pos[kept])
    names = np.empty(len(paths), object)
    names[order] = paths
    assert names.tolist() == [inst.models[m] for m in inst.model[kept].tolist()]


def test_capacity_off_keeps_the_whole_scatter_and_coverage_bundles_record_none(realdata, tmp_path):
    adt = str(realdata / "adt" / "continent4229.adt")
    dbc = str(realdata / "dbc" / "3.3.5")
    r = CliRunner().invoke(cli, ["bake", adt, "--dbc", dbc, "--placement", "client", "-C", "client_capacity=0",
                                 "-o", str(tmp_path / "all.wgb"), "--json"])
    d = json.loads(r.stdout)
    assert d["instance_count"] == 6149 and d["capacity_dropped_count"] is None
    with read_bundle(tmp_path / "all.wgb") as b:
        assert b.capacity_dropped is None and sorted(b.scatter_order.tolist()) == list(range(6149))
    r = CliRunner().invoke(cli, ["bake", adt, "--dbc", dbc, "-o", str(tmp_path / "cov.wgb"), "--json"])
    assert json.loads(r.stdout)["capacity_dropped_count"] is None
    with read_bundle(tmp_path / "cov.wgb") as b:
        assert b.scatter_order is None and b.capacity_dropped is None


def test_a_damaged_scatter_order_is_a_format_error(realdata, tmp_path):
    import struct

    from wowgrass.errors import FormatError
    from wowgrass.grass.bundle import file_checksum

    path = tmp_path / "c.wgb"
    r = CliRunner().invoke(cli, ["bake", str(realdata / "adt" / "continent4229.adt"), "--dbc",
                                 str(realdata / "dbc" / "3.3.5"), "--placement", "client", "-o", str(path)])
    assert r.exit_code == 0, r.output
    raw = bytearray(path.read_bytes())
    (order_at,) = struct.unpack_from("<Q", raw, 0x64)
    struct.pack_into("<I", raw, order_at, 10**9)  # a place past the instances
    struct.pack_into("<I", raw, 0x7C, file_checksum(raw))
    path.write_bytes(raw)
    with pytest.raises(FormatError, match="scatter order names place"):
        read_bundle(path)
    assert CliRunner().invoke(cli, ["bundle", "info", str(path)]).exit_code == 2


def test_sample_world_client_bake_takes_the_models_textures_and_counts(tmp_path):
    from wowgrass.game.data import open_data
    from wowgrass.game.maps import adt_game_path, map_tiles
    from wowgrass.game.tiles import read_adt
    from wowgrass.grass.bake import ModelTable, bake_tile, load_catalog
    from wowgrass.grass.placement import ClientPlacement
    from wowgrass.samples import MAP_NAME, build_sample_world

    data_dir = build_sample_world(tmp_path / "w", "3.3.5", (1, 1), seed=0)
    with open_data(data_dir) as data:
        cat = load_catalog(data=data)
        mt = map_tiles(data, MAP_NAME)
        raw = data.read(adt_game_path(MAP_NAME, *mt.tiles[0]))
        table = ModelTable(data.read)
        res = bake_tile(raw, cat, map_name=MAP_NAME, placement="client", models=table, big_alpha=mt.big_alpha,
                        out=tmp_path / "s.wgb")
        tile = read_adt(raw, None, mt.big_alpha)
    inst = ClientPlacement().place(tile, cat, map_name=MAP_NAME)
    geometry = {m: table.geometry(cat.models[m]) for m in np.unique(inst.model).tolist()}
    assert all(g.known and g.vertex_count > 0 and g.texture.endswith(".blp") for g in geometry.values())
    want = port_reference(inst.chunk, inst.model, geometry, 16, True)
    assert res.capacity_dropped == int((~want).sum()) > 0 and res.instances == int(want.sum())
    with read_bundle(res.path) as b:
        assert b.provenance["capacity_models"] and b.capacity_dropped == res.capacity_dropped


# ----------------------------------------------------------------------------- the batch budget's edges


@pytest.mark.parametrize(("picks", "size", "per_batch"),
                         [(48, 96, 31), (48, 192, 15), (16, 256, 3), (16, 1024, 1), (16, 1, 1023)])
def test_a_batch_stays_strictly_below_a_budget_its_model_divides(picks, size, per_batch):
    """A model whose size divides the budget: the batch that would reach the budget exactly is full
    (strictly below), so a batch holds budget/size - 1 placements, not budget/size (and one
    placement at least: a batch opened takes it whatever its size)."""
    n = 4 * per_batch + 7
    other = min(3, size)  # the smaller count never decides
    for vtx, idx in ((size, other), (other, size), (size, size)):
        geometry = {0: ModelGeometry("t.blp", vtx, idx)}
        keep = draw_capacity(np.zeros(n, np.uint16), np.zeros(n, np.int64), geometry, picks, True)
        assert keep.sum() == 4 * per_batch and keep[: 4 * per_batch].all()
        assert (keep == port_reference(np.zeros(n, np.uint16), np.zeros(n, np.int64), geometry, picks, True)).all()


def test_a_model_larger_than_the_budget_takes_a_batch_to_itself():
    geometry = {0: ModelGeometry("big.blp", 5000, 9000), 1: ModelGeometry("big.blp", 1100, 30)}
    for m in (0, 1):
        keep = draw_capacity(np.zeros(9, np.uint16), np.full(9, m), geometry, 16, True)
        assert keep.tolist() == [True] * 4 + [False] * 5


def test_a_texture_whose_models_differ_in_size_fills_placement_by_placement():
    """One texture, two sizes (10 and 40; budget 64 at one pick): the closed form does not apply,
    each placement goes into the first open batch of its texture with room, placement by placement."""
    geometry = {0: ModelGeometry("t.blp", 10, 10), 1: ModelGeometry("t.blp", 40, 40), 2: ModelGeometry("u.blp", 32, 1)}
    model = np.array([0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1])
    keep = draw_capacity(np.zeros(12, np.uint16), model, geometry, 1, True)
    # A: 10 40 10 (60) | B: 40 10 and the third 10 (60) | C: 40 10 | D: 40 10 | the 5th and 6th 40 fit nowhere
    assert keep.tolist() == [True] * 9 + [False, True, False]
    # a batch that would reach the budget exactly (32 + 32 = 64) is full: each u opens a batch
    keep = draw_capacity(np.zeros(6, np.uint16), np.array([0, 1, 2, 2, 2, 2]), geometry, 1, True)
    assert keep.tolist() == [True, True, True, True, True, False]


def test_a_missing_models_batch_never_fills_however_many_placements():
    geometry = {0: missing_geometry("gone.m2"), 1: ModelGeometry("one.blp", 1, 1)}
    keep = draw_capacity(np.zeros(300, np.uint16), np.zeros(300, np.int64), geometry, 1, True)
    assert keep.all()  # budget 64: size-0 placements never fill the one batch
    # size 1 fills at 63 a batch: four batches hold 252 of 300
    keep = draw_capacity(np.zeros(300, np.uint16), np.ones(300, np.int64), geometry, 1, True)
    assert keep.sum() == 252 and keep[:252].all()


def _real_models(realdata):
    """The real models' geometry: TalkToMe (two batches, a texture file), MinimapArrow, Rabbit (a
    replaceable texture: the model's own key)."""
    def load(p, skin=None):
        root = realdata / "m2"
        return M2Model.from_bytes((root / p).read_bytes(), p, skin=(root / skin).read_bytes() if skin else None)

    return [model_geometry(load("v256/TalkToMe.m2"), "World\\Talk.m2"),
            model_geometry(load("v256/MinimapArrow.m2"), "World\\Arrow.m2"),
            model_geometry(load("v264/Rabbit.m2", "v264/Rabbit00.skin"), "World\\Rabbit.m2")]


def test_real_models_geometry_is_their_first_batch(realdata):
    talk, arrow, rabbit = _real_models(realdata)
    # TalkToMe's two submeshes: the first by index start is 34 vertices, 180 indices
    assert talk == ModelGeometry("interface\\buttons\\yelloworange64.blp", 34, 180, True)
    assert arrow == ModelGeometry("interface\\minimap\\minimaparrow.blp", 4, 6, True)
    # Rabbit: one submesh (154 vertices, README: 321 triangle indices), its texture is replaceable
    assert rabbit == ModelGeometry("<model world\\rabbit.m2: texture type 11>", 154, 321, True)


@pytest.mark.parametrize("picks", [16, 45, 48])
def test_real_tile_with_real_model_geometry_matches_the_ports_loop(realdata, picks):
    """The real tile's client scatter drawn with real models' geometry (not missing models), at the
    default picks and where a real model's size divides the budget (45 picks: 2880 = 16 x 180)."""
    from wowgrass.formats.adt import AdtTile
    from wowgrass.grass.bake import load_catalog
    from wowgrass.grass.placement import ClientPlacement, PlacementConstants

    tile = AdtTile.from_bytes((realdata / "adt" / "continent4229.adt").read_bytes())
    constants = PlacementConstants(client_picks=picks)
    inst = ClientPlacement(constants).place(tile, load_catalog(dbc_dir=realdata / "dbc" / "3.3.5"), map_name="c")
    real = _real_models(realdata)
    geometry = {m: real[m % 3] for m in range(len(inst.models))}
    got = draw_capacity(inst.chunk, inst.model, geometry, picks, True)
    want = port_reference(inst.chunk, inst.model, geometry, picks, True)
    assert (got == want).all()
    assert 0 < (~got).sum() < got.size
    if picks == 45:
        assert budget_335(45) % 180 == 0


@pytest.mark.parametrize("differ", ["vertices", "indices"])
def test_a_texture_whose_models_differ_in_one_count_only_is_not_closed_form(differ):
    """Models of one texture alike in one count and not the other: the chunk is filled step by step."""
    rng = np.random.default_rng(7 if differ == "vertices" else 8)
    geometry = {}
    for m in range(8):
        a, b = 30, int(rng.integers(2, 40)) * 3
        geometry[m] = ModelGeometry(f"t{m % 2}.blp", *((b, a) if differ == "vertices" else (a, b)))
    chunk, model = random_scatter(rng, 3000, 6, 8)
    for picks in (16, 48):
        got = draw_capacity(chunk, model, geometry, picks, True)
        assert (got == port_reference(chunk, model, geometry, picks, True)).all()
    # the first placements of a chunk in the closed form's order would take a size of the wrong model
    geometry = {0: ModelGeometry("t.blp", *((40, 10) if differ == "vertices" else (10, 40))),
                1: ModelGeometry("t.blp", 10, 10)}
    model = np.array([0, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1])
    got = draw_capacity(np.zeros(model.size, np.uint16), model, geometry, 1, True)
    # one pick: batches of 64, filled placement by placement (a size a model, not a placement's own)
    assert got.tolist() == _steps(model, geometry, 64)
    # the two models strictly alternating (no two alike side by side), and a chunk whose first
    # placement (another texture) has the size most of the second texture's models have
    same, a, b = 30, 10, 40
    pair = (lambda one: (one, same)) if differ == "vertices" else (lambda one: (same, one))
    # (textures are numbered by their first model: s.blp's placements come first in the closed form's order)
    geometry = {0: ModelGeometry("s.blp", *pair(b)), 1: ModelGeometry("t.blp", *pair(a)),
                2: ModelGeometry("t.blp", *pair(b))}
    for model in (np.tile([1, 2], 10), np.array([0, 1, 2, 2, 2, 2, 2])):
        got = draw_capacity(np.zeros(model.size, np.uint16), model, geometry, 1, True)
        assert got.tolist() == _steps(model, geometry, 64), model


def _steps(model, geometry, budget):
    """The 3.3.5 rule for one chunk, placement by placement, at any budget (the port clamps picks)."""
    batches, keep = [], []
    for m in model.tolist():
        g = geometry[m]
        use = next((b for b in batches if b[0] == g.texture and b[1] + g.vertex_count < budget
                    and b[2] + g.index_count < budget), None)
        if use is None and len(batches) < 4:
            use = [g.texture, 0, 0]
            batches.append(use)
        if use is not None:
            use[1] += g.vertex_count
            use[2] += g.index_count
        keep.append(use is not None)
    return keep


def test_draw_capacity_of_nothing_one_placement_and_any_shape():
    geometry = {0: ModelGeometry("t.blp", 10, 10)}
    assert draw_capacity(np.zeros(0, np.uint16), np.zeros(0, np.int64), geometry, 16, True).shape == (0,)
    assert draw_capacity(np.zeros(0, np.uint16), np.zeros(0, np.int64), geometry, 16, False).shape == (0,)
    assert draw_capacity(np.zeros(1, np.uint16), np.zeros(1, np.int64), geometry, 16, True).tolist() == [True]
    chunk, model = random_scatter(np.random.default_rng(3), 400, 3, 1)
    flat = draw_capacity(chunk, model, geometry, 1, True)
    assert (draw_capacity(chunk[:, None], model[:, None].tolist(), geometry, 1, True) == flat).all()


def test_model_geometry_of_a_model_without_a_view_batches_or_texture_file():
    from types import SimpleNamespace as NS

    own = ModelGeometry("<model world\\grass\\tuft.m2>", 0, 0, True)
    assert model_geometry(NS(view=None), "World\\Grass\\Tuft.M2") == own
    assert model_geometry(NS(), "World\\Grass\\Tuft.M2") == own
    sub = np.array([(5, 9)], [("vertex_count", "<u2"), ("index_count", "<u2")])
    batch = np.array([(0,)], [("submesh", "<u2")])
    assert model_geometry(NS(view=NS(batches=batch[:0], submeshes=sub)), "World\\Grass\\Tuft.M2") == own
    assert model_geometry(NS(view=NS(batches=batch, submeshes=sub[:0])), "World\\Grass\\Tuft.M2") == own
    # a batch with no texture at all: the model's own key, type -1; one with a texture but no file: its type
    model = NS(view=NS(batches=batch, submeshes=sub), submesh_range=lambda s: (0, 9), batch_texture=lambda b: None)
    assert model_geometry(model, "A.m2") == ModelGeometry("<model a.m2: texture type -1>", 5, 9, True)
    model.batch_texture = lambda b: NS(filename="", type=2)
    assert model_geometry(model, "A.m2") == ModelGeometry("<model a.m2: texture type 2>", 5, 9, True)
    model.batch_texture = lambda b: NS(filename="World/Tex/Grass.BLP", type=0)
    assert model_geometry(model, "A.m2") == ModelGeometry("world\\tex\\grass.blp", 5, 9, True)
    # the batch of the lowest index start, wherever it is listed (here second; its submesh ends first
    # in the other one, which starts lower still)
    subs = np.array([(5, 90), (7, 12), (8, 30)], [("vertex_count", "<u2"), ("index_count", "<u2")])
    ranges = {0: (40, 130), 1: (0, 100), 2: (10, 40)}
    model = NS(view=NS(batches=np.array([(0,), (1,), (2,)], [("submesh", "<u2")]), submeshes=subs),
               submesh_range=lambda s: ranges[s], batch_texture=lambda b: NS(filename=f"t{int(b['submesh'])}.blp"))
    assert model_geometry(model, "B.m2") == ModelGeometry("t1.blp", 7, 12, True)


def test_missing_geometry_and_its_list_form():
    g = missing_geometry("World\\Gone.M2")
    assert g == ModelGeometry("<missing model world\\gone.m2>", 0, 0, False)
    assert g.to_list() == ["<missing model world\\gone.m2>", 0, 0, False]
    assert ModelGeometry("a.blp", 3, 6).to_list() == ["a.blp", 3, 6, True]


@pytest.mark.parametrize("chunks", [(0, 64), (0, 85), (0, 255), (3, 200)])
def test_chunks_far_apart_that_share_textures_keep_their_own_batches(chunks):
    """Two chunks of a tile drawing the same textures, whatever their numbers: each opens its own
    batches. (Chunks 0 and 64 with four textures, or 0 and 85 with three, are the pairs whose
    (chunk, texture) keys are 256 apart.)"""
    a, b = chunks
    for textures in (3, 4):
        geometry = {m: ModelGeometry(f"t{m}.blp", 400, 400) for m in range(textures)}  # two a batch at 16 picks
        # the first chunk: one placement of each texture; the second: seven of texture 1 (four
        # batches), then one of every other texture but 0 (no batch left)
        model = np.array(list(range(textures)) + [1] * 7 + list(range(2, textures)))
        chunk = np.array([a] * textures + [b] * (model.size - textures), np.uint16)
        got = draw_capacity(chunk, model, geometry, 16, True)
        assert got.tolist() == port_reference(chunk, model, geometry, 16, True).tolist()
        assert got[:textures].all() and got[textures:textures + 7].all() and not got[textures + 7:].any()


def test_uniform_chunks_are_exactly_those_whose_textures_each_have_one_size():
    """Which chunks the closed form settles: those where every placement of a texture adds the same
    vertex and index counts (checked against that definition on random tiles, and its shape)."""
    from wowgrass.grass.capacity import _uniform_chunks

    rng = np.random.default_rng(11)
    for trial in range(60):
        n, textures = int(rng.integers(1, 400)), int(rng.integers(1, 12))
        ch = np.sort(rng.choice(rng.choice(256, int(rng.integers(1, 30)), replace=False), n)).astype(np.int64)
        tex = rng.integers(0, textures, n)
        # sizes per texture, with a few placements given another count (then that chunk is not uniform)
        vtx, idx = (tex * 7 + 3).astype(np.int64), (tex * 5 + 1).astype(np.int64)
        odd = rng.random(n) < 0.01 * (trial % 4)
        (vtx if trial % 2 else idx)[odd] += 1
        want = np.ones(256, bool)
        for c in np.unique(ch):
            for t in np.unique(tex[ch == c]):
                at = (ch == c) & (tex == t)
                if len(set(zip(vtx[at].tolist(), idx[at].tolist()))) > 1:
                    want[c] = False
        got = _uniform_chunks(ch, tex, vtx, idx)
        assert got.shape == (256,) and got.dtype == bool
        assert (got == want).all(), trial


def test_chunk_texture_keys_are_one_per_pair_in_chunk_then_texture_order_in_the_narrowest_type():
    from wowgrass.grass.capacity import _chunk_texture_key

    ch = np.repeat(np.arange(256), 4).astype(np.int64)
    for textures in (1, 3, 4, 255):
        tex = np.tile(np.array([0, 1, textures - 1, textures // 2]), 256) % textures
        key = _chunk_texture_key(ch, tex)
        pairs = sorted(set(zip(ch.tolist(), tex.tolist())))
        # one key per (chunk, texture), and their order is the pairs' order
        by_pair = {p: k for p, k in zip(zip(ch.tolist(), tex.tolist()), key.tolist())}
        assert len(set(by_pair.values())) == len(pairs)
        assert [by_pair[p] for p in pairs] == sorted(by_pair.values())
        assert key.dtype == np.min_scalar_type(int(key.max())) and key.dtype.kind == "u"
    assert _chunk_texture_key(np.array([0, 1, 2]), np.array([0, 0, 0])).dtype == np.uint8
    assert _chunk_texture_key(np.array([255]), np.array([255])).dtype == np.uint16
