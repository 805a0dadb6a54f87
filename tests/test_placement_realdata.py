"""Placement on real client tiles (skips without WOWGRASS_REALDATA)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from placement_reference import as_client_rows, as_rows, client_reference, coverage_reference

from wowgrass.grass.bake import bake_file, load_catalog
from wowgrass.grass.bundle import read_bundle
from wowgrass.formats.adt import UNIT_SIZE, AdtTile
from wowgrass.grass.placement import ClientPlacement, PlacementConstants, CoveragePlacement


@pytest.fixture(scope="module")
def azeroth(realdata):
    tile = AdtTile.from_bytes((realdata / "adt" / "Azeroth_38_46.adt").read_bytes())
    return tile, load_catalog(dbc_dir=realdata / "dbc" / "1.12")


@pytest.fixture(scope="module")
def continent(realdata):
    tile = AdtTile.from_bytes((realdata / "adt" / "continent4229.adt").read_bytes())
    return tile, load_catalog(dbc_dir=realdata / "dbc" / "3.3.5")


def test_azeroth_every_cell_gets_the_formula_for_effect_453(azeroth):
    tile, cat = azeroth
    row = int(cat.lookup([453])[0])
    density = int(cat.density[row])
    assert density == 5  # realdata README
    k = PlacementConstants()
    # one layer, no alpha map: coverage 255 everywhere
    want = min(max(1, math.ceil(255 / 255 * min(density, k.dbc_density_max))), k.max_placements_per_sample)
    inst = CoveragePlacement().place(tile, cat, map_name="Azeroth")
    counts = inst.cell_counts()
    assert (counts == want).all()
    assert len(inst) == 256 * 64 * want
    # only the four models of row 453, chosen uniformly (1.12: no weights)
    slots = set(cat.slot_model[row].tolist())
    assert set(np.unique(inst.model).tolist()) == slots
    share = inst.model_counts()[sorted(slots)] / len(inst)
    assert np.allclose(share, 0.25, atol=0.01)


def test_azeroth_bundle_keeps_the_counts(realdata, tmp_path):
    res = bake_file(realdata / "adt" / "Azeroth_38_46.adt", dbc_dir=realdata / "dbc" / "1.12",
                    out=tmp_path / "az.wgb")
    assert res.tile == (38, 46) and res.instances == 256 * 64 * 5
    with read_bundle(res.path) as b:
        assert (b.cell_counts == 5).all()
        assert b.provenance["build"] == "1.12" and b.provenance["effect_ids"] == [453]
        # every instance inside the tile's footprint
        pos = b.instances()["pos"]
        assert pos[:, 0].max() <= -7466.666 + 1e-2 and pos[:, 1].max() <= -3200.0 + 1e-2


def check_instances(tile, inst, cap=None, masks=True):
    ch = inst.chunk.astype(np.int64)
    r, c = inst.cell.astype(np.int64) // 8, inst.cell.astype(np.int64) % 8
    # never in a masked cell (where the strategy honours the mask) or a hole
    assert not (masks and tile.no_effect_doodad[ch, r, c].any())
    assert not tile.hole_cells()[ch, r, c].any()
    # never outside its own cell
    base = tile.positions[ch].astype(np.float64)
    v = (base[:, 0] - inst.pos[:, 0]) / UNIT_SIZE - r
    u = (base[:, 1] - inst.pos[:, 1]) / UNIT_SIZE - c
    eps = 1e-3
    assert v.min() >= -eps and v.max() <= 1 + eps and u.min() >= -eps and u.max() <= 1 + eps
    # on the terrain (the ADT module's own fan evaluation)
    z = tile.heights_at(ch, inst.pos[:, 0], inst.pos[:, 1])
    assert np.abs(z - inst.pos[:, 2]).max() < 1e-3
    if cap is not None:
        assert inst.cell_counts().max() <= cap


def test_continent_coverage_placement_respects_masks_cells_and_terrain(continent):
    tile, cat = continent
    inst = CoveragePlacement().place(tile, cat, map_name="continent")
    assert len(inst) > 1000
    assert tile.no_effect_doodad.sum() == 340 and tile.hole_cells().any()  # the masks exist to be avoided
    check_instances(tile, inst, cap=12)


def test_continent_client_placement_respects_masks_cells_terrain_and_slope(continent):
    tile, cat = continent
    inst = ClientPlacement().place(tile, cat, map_name="continent")
    # issue 41: the 3.3.5 client tests noEffectDoodad; at 16 picks it places 6,149 (6,755 untested)
    assert len(inst) == 6149
    check_instances(tile, inst)
    nz = tile.fan_normal_z(inst.chunk.astype(np.int64), inst.pos[:, 0], inst.pos[:, 1])
    assert nz.min() >= 0.4 - 1e-4
    assert inst.scale.min() >= 0.67 - 1e-3 and inst.scale.max() <= 1.33 + 1e-3
    # the first decode's untested variant on request: masked cells get doodads too
    untested = ClientPlacement(PlacementConstants(client_no_effect_335=0)).place(tile, cat, map_name="continent")
    check_instances(tile, untested, masks=False)
    assert len(untested) == 6755
    assert tile.no_effect_doodad[untested.chunk, untested.cell // 8, untested.cell % 8].sum() == 6755 - 6149


def test_continent_vectorized_matches_reference(continent):
    tile, cat = continent
    assert as_rows(CoveragePlacement().place(tile, cat, map_name="continent")) == coverage_reference(tile, cat, "continent")


# ----------------------------------------------------------------------------- the clients' scatter


def test_azeroth_client_first_placements_and_total_are_the_clients(azeroth):
    tile, cat = azeroth
    inst = ClientPlacement().place(tile, cat, map_name="Azeroth")
    assert len(inst) == 20480  # client.md: the whole tile
    want = [("BstBra05.m2", -7479.7991, -3224.6984, 227.7145, 230.892, 1.01172),
            ("BstBra08.m2", -7482.7016, -3221.1281, 227.7145, 270.026, 1.09630),
            ("BstRoc02.m2", -7481.4758, -3222.5430, 227.7145, 8.361, 1.09083)]
    for i, (model, x, y, z, yaw, scale) in enumerate(want):
        assert cat.models[inst.model[i]].rsplit("\\", 1)[-1] == model
        assert inst.chunk[i] == 0 and inst.cell[i] == 29
        assert np.abs(inst.pos[i] - (x, y, z)).max() < 3e-4  # 4 decimals, float32 near 7480 steps 5e-4
        assert abs(math.degrees(inst.yaw[i]) % 360 - yaw) < 1e-3
        assert abs(inst.scale[i] - scale) < 1e-5
    # frillDensity 48 (the world-detail slider's top stop): three times the picks
    assert len(ClientPlacement(PlacementConstants(client_picks=48)).place(tile, cat, map_name="Azeroth")) == 3 * 20480


@pytest.mark.parametrize("adt", ["Azeroth_38_46.adt", "continent4229.adt"])
@pytest.mark.parametrize("build", ["1.12", "3.3.5"])
def test_client_vectorized_matches_reference_on_real_tiles(realdata, adt, build):
    tile = AdtTile.from_bytes((realdata / "adt" / adt).read_bytes())
    cat = load_catalog(dbc_dir=realdata / "dbc" / build)
    k = PlacementConstants()
    got = as_client_rows(ClientPlacement(k).place(tile, cat, map_name="m"))
    assert got == client_reference(tile, cat, k)
    assert len(got) > (10 if adt.startswith("continent") and build == "1.12" else 5000)


def test_bake_client_export_and_provenance_carry_the_clients_scatter(realdata, tmp_path):
    import csv
    import json

    from click.testing import CliRunner

    from wowgrass.cli.main import cli

    adt = tmp_path / "Azeroth_38_46.adt"
    adt.write_bytes((realdata / "adt" / "Azeroth_38_46.adt").read_bytes())
    rows = tmp_path / "rows.csv"
    r = CliRunner().invoke(cli, ["bake", str(adt), "--dbc", str(realdata / "dbc" / "1.12"), "--placement", "client",
                                 "-o", str(tmp_path / "az.wgb"), "--export", str(rows), "--json"])
    assert r.exit_code == 0, r.output
    with open(rows, newline="") as f:
        table = list(csv.DictReader(f))
    assert len(table) == 20480
    found = {(t["model"].rsplit("\\", 1)[-1], round(float(t["x"]), 3), round(float(t["y"]), 3)) for t in table}
    for model, x, y in (("BstBra05.m2", -7479.799, -3224.698), ("BstBra08.m2", -7482.702, -3221.128),
                        ("BstRoc02.m2", -7481.476, -3222.543)):  # client.md, chunk 0's first three
        assert any(m == model and abs(fx - x) < 2e-3 and abs(fy - y) < 2e-3 for m, fx, fy in found), model
    r = CliRunner().invoke(cli, ["bake", str(adt), "--dbc", str(realdata / "dbc" / "1.12"), "--placement", "client",
                                 "-C", "client_picks=48", "-o", str(tmp_path / "az48.wgb"), "--json"])
    assert r.exit_code == 0, r.output
    with read_bundle(tmp_path / "az48.wgb") as b:
        assert b.instance_count == 3 * 20480
        assert b.provenance["placement"] == "client" and b.provenance["constants"]["client_picks"] == 48


def test_bake_client_335_raises_picks_below_16_and_says_so(realdata, tmp_path):
    import json

    from click.testing import CliRunner

    from wowgrass.cli.main import cli

    adt, dbc = str(realdata / "adt" / "continent4229.adt"), str(realdata / "dbc" / "3.3.5")
    r = CliRunner().invoke(cli, ["bake", adt, "--dbc", dbc, "--placement", "client", "-C",
                                                 "client_picks=4", "-C", "client_capacity=0", "-o",
                                                 str(tmp_path / "p4.wgb"), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["instance_count"] == 6149  # as at 16 picks
    assert "client_picks=4 is below what the 3.3.5 client takes" in r.stderr and "16 picks" in r.stderr
    # 1.12 takes what is asked, without a note
    r = CliRunner().invoke(cli, ["bake", str(realdata / "adt" / "Azeroth_38_46.adt"), "--dbc",
                                                 str(realdata / "dbc" / "1.12"), "--placement", "client", "-C",
                                                 "client_picks=4", "-o", str(tmp_path / "a4.wgb"), "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["instance_count"] == 20480 // 4 and "below" not in r.stderr
    # 1.12 draws no texture batches: its models' textures do not matter, and no note says they do
    assert json.loads(r.stdout)["capacity_dropped_count"] == 0 and "texture of its own" not in r.stderr


def test_adt_image_of_the_client_scatter_says_where_picks_are_raised(realdata, tmp_path):
    from click.testing import CliRunner

    from wowgrass.cli.main import cli

    adt, dbc = str(realdata / "adt" / "continent4229.adt"), str(realdata / "dbc" / "3.3.5")
    for extra, noted in (([], False), (["-C", "client_picks=4"], True)):
        r = CliRunner().invoke(cli, ["adt", "image", adt, "--dbc", dbc, "--kind", "grass", "--placement", "client",
                                     *extra, "--size", "64", "-o", str(tmp_path / "g.png")])
        assert r.exit_code == 0, r.output
        assert ("client_picks=4 is below what the 3.3.5 client takes" in r.stderr) == noted
