"""New ground-effect sets (wowgrass.edit.effect_sets, `effects new-set`): rows appended in the
build's own layout, every old byte kept, on the real 1.12 and 3.3.5 tables and the sample world."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
from click.testing import CliRunner

import faults
from wowgrass.cli.main import cli
from wowgrass.edit.effect_sets import add_effect_set, append_rows
from wowgrass.errors import FormatError, UsageError
from wowgrass.formats.dbc import HEADER_SIZE, DbcFile, read_table, write_dbc
from wowgrass.game.data import open_data
from wowgrass.game.effects import DOODAD_PATH, TEXTURE_PATH, GroundEffectCatalog
from wowgrass.grass.placement import weight_bags

TABLES = ("GroundEffectTexture", "GroundEffectDoodad")


def _real(realdata, build):
    folder = realdata / "dbc" / build
    return tuple((folder / f"{t}.dbc").read_bytes() for t in TABLES)


def _parts(raw):
    n, f, rs, sb = struct.unpack_from("<4I", raw, 4)
    return n, rs, raw[HEADER_SIZE:HEADER_SIZE + n * rs], raw[HEADER_SIZE + n * rs:HEADER_SIZE + n * rs + sb]


@pytest.mark.parametrize("build", ["1.12", "3.3.5"])
def test_real_tables_round_trip_byte_for_byte(realdata, build):
    for table, raw in zip(TABLES, _real(realdata, build)):
        dbc, det = read_table(raw, f"{table}.dbc")
        assert det.build == ("1.12" if build == "1.12" else "3.3.5")
        assert write_dbc(dbc.records, dbc.string_block) == raw, table
        assert append_rows(dbc, dbc.records[:0]) == raw, table   # no new row: the same bytes


@pytest.mark.parametrize("build", ["1.12", "3.3.5"])
def test_real_tables_new_set_keeps_every_old_byte(realdata, build):
    tex, dood = _real(realdata, build)
    report = []
    models = ["ElwGra01", "World\\NoDXT\\Detail\\WowgrassTest01.m2"]
    tex2, dood2, new_id = add_effect_set(tex, dood, doodads=models, density=12, sound=4, report=report)
    # texture table: one more record, old records and string block untouched, new id past the highest
    n0, rs, rec0, sb0 = _parts(tex)
    n1, rs1, rec1, sb1 = _parts(tex2)
    assert (n1, rs1) == (n0 + 1, rs) and rec1[:len(rec0)] == rec0 and sb1 == sb0
    assert len(tex2) == len(tex) + rs
    old_ids = DbcFile.from_bytes(tex).raw[:, 0]
    assert new_id == int(old_ids.max()) + 1
    # doodad table: one new row, old records and old strings in place, the path appended
    m0, drs, drec0, dsb0 = _parts(dood)
    m1, _, drec1, dsb1 = _parts(dood2)
    assert m1 == m0 + 1 and drec1[:len(drec0)] == drec0
    assert dsb1[:len(dsb0)] == dsb0 and dsb1[len(dsb0):] == b"WowgrassTest01.mdl\0"
    # the catalogue joins the new row to both models, in the build's keying
    cat = GroundEffectCatalog.from_dbc_bytes(tex2, dood2)
    row = cat.row(new_id)
    assert [m for m in row["models"] if m] == ["World\\NoDXT\\Detail\\ElwGra01.m2",
                                              "World\\NoDXT\\Detail\\WowgrassTest01.m2"]
    assert row["density"] == 12 and row["sound"] == 4
    new = report[0].new_doodads[0]
    if build == "1.12":
        assert row["doodads"] == [3, new["tag"], -1, -1]    # ElwGra01 is ID 4, tag 3 (README)
        assert new["tag"] == new["id"] - 1 and row["weights"] is None
    else:
        assert row["doodads"] == [4, new["id"], 0, 0]       # keyed on ID; 0 is the empty slot
        assert row["weights"] == [8, 8, 0, 0]
    # every old row reads as before
    old = GroundEffectCatalog.from_dbc_bytes(tex, dood)
    keep = cat.ids != new_id
    assert np.array_equal(cat.ids[keep], old.ids)
    assert np.array_equal(cat.slot_model[keep], old.slot_model)
    assert np.array_equal(cat.density[keep], old.density)


def test_real_1_12_refuses_weights_and_a_taken_id(realdata):
    tex, dood = _real(realdata, "1.12")
    with pytest.raises(UsageError, match="no weights"):
        add_effect_set(tex, dood, doodads=["ElwGra01"], weights=[16])
    with pytest.raises(UsageError, match="453 is taken"):
        add_effect_set(tex, dood, doodads=["ElwGra01"], id=453)
    t2, d2, nid = add_effect_set(tex, dood, doodads=["ElwGra02"], id=60000)
    assert nid == 60000 and d2 == dood      # an existing model: the doodad table is unchanged
    assert GroundEffectCatalog.from_dbc_bytes(t2, d2).row(60000)["doodads"] == [4, -1, -1, -1]


def _sample_tables(build):
    from wowgrass.samples import tables as T

    return T.ground_effect_texture(build), T.ground_effect_doodad(build)


@pytest.mark.parametrize("build", ["1.12", "2.4.3", "3.3.5"])
def test_sample_tables_in_each_layout(build):
    tex, dood = _sample_tables(build)
    t2, d2, nid = add_effect_set(tex, dood, build, doodads=["SampleNew.m2", "ElwGra03.mdl", "SampleNew"])
    assert nid == 1007                      # one above 1006
    cat = GroundEffectCatalog.from_dbc_bytes(t2, d2, build)
    row = cat.row(nid)
    assert row["models"][:3] == ["World\\NoDXT\\Detail\\SampleNew.m2", "World\\NoDXT\\Detail\\ElwGra03.m2",
                                 "World\\NoDXT\\Detail\\SampleNew.m2"]
    assert row["doodads"][0] == row["doodads"][2]          # one new doodad row for the model named twice
    assert DbcFile.from_bytes(d2).record_count == DbcFile.from_bytes(dood).record_count + 1
    assert row["density"] == 8                             # the default, written explicitly


def test_default_weights_fill_the_bag():
    tex, dood = _sample_tables("3.3.5")
    for n in (1, 2, 3, 4):
        models = [f"ElwGra0{k + 1}" for k in range(n)]
        t2, d2, nid = add_effect_set(tex, dood, doodads=models)
        cat = GroundEffectCatalog.from_dbc_bytes(t2, d2)
        r = cat.lookup(np.array([nid]))
        assert int(cat.slot_weight[r].sum()) == 16             # 3.3.5 deals 16 doodads by weight
        bag = weight_bags(cat, r)[0]
        assert set(bag.tolist()) == set(range(n))             # every draw lands on a real doodad


@pytest.mark.parametrize("kw,message", [
    (dict(doodads=[]), "1 to 4"),
    (dict(doodads=["a", "b", "c", "d", "e"]), "1 to 4"),
    (dict(doodads=["World\\Generic\\Tree.m2"]), "NoDXT"),
    (dict(doodads=["ElwGra01.blp"]), "ends in .m2"),
    (dict(doodads=["ElwGra01"], id=0xFFFF), "no effect"),
    (dict(doodads=["ElwGra01"], weights=[1, 2]), "2 values for 1"),
    (dict(doodads=["ElwGra01"], weights=[0]), "all 0"),
    (dict(doodads=["ElwGra01"], weights=[17]), "0..16"),
])
def test_refusals(kw, message):
    tex, dood = _sample_tables("3.3.5")
    with pytest.raises(UsageError, match=message):
        add_effect_set(tex, dood, **kw)


def test_trailing_bytes_refused_not_rewritten():
    tex, dood = _sample_tables("3.3.5")
    with pytest.raises(FormatError, match="follow the declared string block"):
        add_effect_set(tex, dood + b"junk", doodads=["New01"])


# ------------------------------------------------------------------------------------ CLI
@pytest.fixture(scope="module")
def world(tmp_path_factory):
    from wowgrass.samples import build_sample_world

    return build_sample_world(tmp_path_factory.mktemp("sets") / "w", "3.3.5", (1, 1), seed=0)


def new_set(*args):
    return CliRunner().invoke(cli, ["effects", "new-set", *[str(a) for a in args]])


def pair(out):
    folder = out / "DBFilesClient"
    return (folder / "GroundEffectTexture.dbc").read_bytes(), (folder / "GroundEffectDoodad.dbc").read_bytes()


def test_cli_new_set_writes_both_tables(world, tmp_path):
    out = tmp_path / "fix"
    r = new_set("--data", world, "--doodad", "ElwGra01", "--doodad", "SampleFern", "--weights", "12,4",
                "--density", "20", "-o", out, "--json")
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    assert res["id"] == 1007 and res["weights"] == [12, 4] and res["new_doodad_count"] == 1
    assert res["missing_models"] == ["World\\NoDXT\\Detail\\SampleFern.m2"]
    tex, dood = pair(out)
    assert GroundEffectCatalog.from_dbc_bytes(tex, dood).row(1007)["weights"] == [12, 4, 0, 0]


def test_cli_new_set_writes_both_tables_even_when_no_doodad_row_is_added(world, tmp_path):
    out = tmp_path / "fix"
    r = new_set("--data", world, "--doodad", "ElwGra05", "--doodad", "ElwGra08", "-o", out, "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["new_doodad_count"] == 0
    with open_data(world) as d:
        assert pair(out)[1] == d.read(DOODAD_PATH)        # the data's doodad table, beside the new texture table


def test_sets_add_up_in_one_output_folder(world, tmp_path):
    out = tmp_path / "fix"
    assert new_set("--data", world, "--doodad", "ElwGra05", "-o", out, "-q").stdout.strip() == "1007"
    # the documented follow-up: the same command shape again, on the same folder
    r = new_set("--data", world, "--doodad", "SampleFern", "-o", out, "-q")
    assert r.exit_code == 0 and r.stdout.strip() == "1008", r.output
    r = new_set("--dbc", out, "--doodad", "ElwGra03", "-o", out, "-q")      # tables read back from DIR
    assert r.exit_code == 0 and r.stdout.strip() == "1009", r.output
    cat = GroundEffectCatalog.from_dbc_bytes(*pair(out))
    assert [m.rsplit("\\", 1)[-1] for m in cat.row(1007)["models"] if m] == ["ElwGra05.m2"]
    assert [m.rsplit("\\", 1)[-1] for m in cat.row(1008)["models"] if m] == ["SampleFern.m2"]
    assert [m.rsplit("\\", 1)[-1] for m in cat.row(1009)["models"] if m] == ["ElwGra03.m2"]
    with open_data(world) as d:
        base = DbcFile.from_bytes(d.read(TEXTURE_PATH))
    assert DbcFile.from_bytes(pair(out)[0]).record_count == base.record_count + 3
    assert not list(out.rglob("*.bak")) and not list(out.rglob("*.tmp"))


def test_force_starts_again_but_never_reuses_an_id(world, tmp_path):
    out = tmp_path / "fix"
    new_set("--data", world, "--doodad", "ElwGra05", "-o", out, "-q")
    new_set("--data", world, "--doodad", "ElwGra06", "-o", out, "-q")          # 1007, 1008
    r = new_set("--data", world, "--doodad", "ElwGra02", "-o", out, "--force", "-q")
    assert r.exit_code == 0 and r.stdout.strip() == "1009", r.output           # not 1007 again
    cat = GroundEffectCatalog.from_dbc_bytes(*pair(out))
    assert cat.row(1007) is None and cat.row(1008) is None and cat.row(1009) is not None
    r = new_set("--data", world, "--doodad", "ElwGra03", "-o", out, "--force", "-q")
    assert r.exit_code == 0 and r.stdout.strip() == "1010", r.output           # ids only go up
    r = new_set("--data", world, "--doodad", "ElwGra02", "-o", out, "--force", "--id", "1010")
    assert r.exit_code == 2 and "1010 is taken" in r.output


def test_data_and_dbc_together(world, tmp_path):
    out = tmp_path / "fix"
    new_set("--data", world, "--doodad", "ElwGra05", "-o", out, "-q")
    r = new_set("--data", world, "--dbc", out, "--doodad", "SampleFern", "-o", tmp_path / "other", "--json")
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    assert res["id"] == 1008                                     # on top of --dbc's tables
    assert res["missing_models"] == ["World\\NoDXT\\Detail\\SampleFern.m2"]     # checked in --data
    r = new_set("--doodad", "ElwGra05", "-o", out)
    assert r.exit_code == 2 and "give the tables" in r.output


def test_new_set_into_the_loose_data_itself_needs_in_place(world, tmp_path):
    loose = tmp_path / "loose"
    with open_data(world) as d:
        for n in (TEXTURE_PATH, DOODAD_PATH):
            p = loose.joinpath(*n.split("\\"))
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(d.read(n))
    before = pair(loose)
    r = new_set("--data", loose, "--doodad", "ElwGra05", "-o", loose)
    assert r.exit_code == 2 and "--in-place" in r.output and pair(loose) == before
    r = new_set("--data", loose, "--doodad", "ElwGra05", "-o", loose, "--in-place", "-q")
    assert r.exit_code == 0 and r.stdout.strip() == "1007"
    folder = loose / "DBFilesClient"
    assert (folder / "GroundEffectTexture.dbc.bak").read_bytes() == before[0]
    assert (folder / "GroundEffectDoodad.dbc.bak").read_bytes() == before[1]


def test_edit_set_changes_only_its_row(world, tmp_path):
    out = tmp_path / "fix"
    new_set("--data", world, "--doodad", "ElwGra05", "--doodad", "ElwGra08", "-o", out, "-q")
    tex0, dood0 = pair(out)
    r = CliRunner().invoke(cli, ["effects", "edit-set", "1007", "--data", str(world), "-o", str(out),
                                 "--density", "12", "--weights", "10,6", "--json"])
    assert r.exit_code == 0, r.output
    tex1, dood1 = pair(out)
    row = GroundEffectCatalog.from_dbc_bytes(tex1, dood1).row(1007)
    assert row["density"] == 12 and row["weights"] == [10, 6, 0, 0]
    rec = DbcFile.from_bytes(tex0)
    size, n = rec.record_size, rec.record_count
    diff = np.flatnonzero(np.frombuffer(tex0, np.uint8) != np.frombuffer(tex1, np.uint8))
    assert len(tex0) == len(tex1) and diff.size > 0
    assert set(((diff - 20) // size).tolist()) == {n - 1}          # only the last record (1007)
    assert dood1 == dood0
    # new models: a new doodad row appended, the slots replaced, weights shared evenly
    r = CliRunner().invoke(cli, ["effects", "edit-set", "1007", "--data", str(world), "-o", str(out),
                                 "--doodad", "SampleFern", "--json"])
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    assert res["new_doodad_count"] == 1 and res["weights"] == [16, 0, 0, 0]
    row = GroundEffectCatalog.from_dbc_bytes(*pair(out)).row(1007)
    assert [m.rsplit("\\", 1)[-1] for m in row["models"] if m] == ["SampleFern.m2"] and row["density"] == 12
    r = CliRunner().invoke(cli, ["effects", "edit-set", "4242", "--data", str(world), "-o", str(out),
                                 "--density", "3"])
    assert r.exit_code == 2 and "no row 4242" in r.output
    r = CliRunner().invoke(cli, ["effects", "edit-set", "1007", "--data", str(world), "-o", str(out)])
    assert r.exit_code == 2 and "say what to change" in r.output


def test_edit_set_1_12_keeps_other_rows_and_refuses_weights(tmp_path):
    from wowgrass.edit.effect_sets import edit_effect_set
    from wowgrass.samples import tables as T

    tex, dood = T.ground_effect_texture("1.12"), T.ground_effect_doodad("1.12")
    with pytest.raises(UsageError, match="1.12 GroundEffectTexture has no weights"):
        edit_effect_set(tex, dood, 1001, weights=[16])
    t2, d2 = edit_effect_set(tex, dood, 1001, doodads=["ElwGra07"], sound=9)
    cat = GroundEffectCatalog.from_dbc_bytes(t2, d2)
    assert [m.rsplit("\\", 1)[-1] for m in cat.row(1001)["models"] if m] == ["ElwGra07.m2"]
    assert cat.row(1002) == GroundEffectCatalog.from_dbc_bytes(tex, dood).row(1002)
    assert len(t2) == len(tex)


def test_cli_1_12_refuses_weights(tmp_path):
    from wowgrass.samples import tables as T

    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "GroundEffectTexture.dbc").write_bytes(T.ground_effect_texture("1.12"))
    (tmp_path / "t" / "GroundEffectDoodad.dbc").write_bytes(T.ground_effect_doodad("1.12"))
    r = CliRunner().invoke(cli, ["effects", "new-set", "--dbc", str(tmp_path / "t"), "--doodad", "ElwGra01",
                                 "--weights", "16", "-o", str(tmp_path / "o")])
    assert r.exit_code == 2 and r.output.startswith("error: --weights: 1.12") and "Traceback" not in r.output
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("errno", ["ENOSPC", "EROFS"])
def test_cli_full_or_read_only_output_leaves_nothing(world, tmp_path, errno):
    out = tmp_path / "out"
    out.mkdir()
    with faults.failing_folder(out, errno):
        r = CliRunner().invoke(cli, ["effects", "new-set", "--data", str(world), "--doodad", "ElwGra01",
                                     "--doodad", "SampleFern", "-o", str(out)])
    assert r.exit_code == 2 and r.output.startswith("error: ") and "Traceback" not in r.output
    assert faults.tree(out) == []                             # no table, no temporary, no folder


def test_a_failing_rename_puts_back_the_tables_already_replaced(tmp_path, monkeypatch):
    import os

    from wowgrass.edit.effect_sets import write_tables
    from wowgrass.errors import OutputError

    out = tmp_path / "o"
    write_tables(out, {"DBFilesClient\\A.dbc": b"old a", "DBFilesClient\\B.dbc": b"old b"})
    real = os.replace
    calls = []

    def replace(src, dst, *a, **k):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(28, "No space left on device", str(dst))
        return real(src, dst, *a, **k)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(OutputError):
        write_tables(out, {"DBFilesClient\\A.dbc": b"new a", "DBFilesClient\\B.dbc": b"new b"}, force=True)
    monkeypatch.undo()
    folder = out / "DBFilesClient"
    assert (folder / "A.dbc").read_bytes() == b"old a" and (folder / "B.dbc").read_bytes() == b"old b"
    assert sorted(p.name for p in folder.iterdir()) == ["A.dbc", "B.dbc"]     # no temporary left
