"""Issue 33 item 13: a GroundEffectDoodad table whose header declares 0 records (the fuzzer's case:
the first 66 bytes, record count set to 0, the other 46 bytes read as the string block) is an empty
doodad table; the catalogue joins it (every slot empty, a warning), and bake, view and dbc info run
on a world holding it instead of raising IndexError from the join."""

from __future__ import annotations

import shutil
import struct

import pytest
from click.testing import CliRunner

from dbc_builders import doodad_335, texture_335
from wowgrass.cli.main import cli
from wowgrass.game.effects import GroundEffectCatalog


def _emptied(doodad: bytes) -> bytes:
    cut = bytearray(doodad[:66])
    struct.pack_into("<I", cut, 4, 0)             # record count
    struct.pack_into("<I", cut, 16, len(cut) - 20)  # the rest is the string block
    return bytes(cut)


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The sample world extracted loose, its GroundEffectDoodad.dbc replaced by the emptied one."""
    from wowgrass.samples import build_sample_world

    root = tmp_path_factory.mktemp("empty-doodad")
    data = build_sample_world(root / "w", tiles=(1, 1))
    assert run("mpq", "extract", "--data", data, "-o", root / "Data").exit_code == 0
    table = root / "Data" / "DBFilesClient" / "GroundEffectDoodad.dbc"
    table.write_bytes(_emptied(table.read_bytes()))
    return root / "Data"


def test_catalog_of_an_empty_doodad_table(world):
    tex = (world / "DBFilesClient" / "GroundEffectTexture.dbc").read_bytes()
    c = GroundEffectCatalog.from_dbc_bytes(tex, (world / "DBFilesClient" / "GroundEffectDoodad.dbc").read_bytes())
    assert len(c) > 0 and c.models == [] and (c.slot_model == -1).all() and c.no_doodads.all()
    assert any("GroundEffectDoodad has no rows" in w for w in c.warnings)
    # the same with a table built from scratch
    c2 = GroundEffectCatalog.from_dbc_bytes(texture_335(), _emptied(doodad_335()), build="3.3.5")
    assert (c2.slot_model == -1).all()


def test_dbc_info_and_show_on_an_empty_doodad_table(world):
    tex = (world / "DBFilesClient" / "GroundEffectTexture.dbc").read_bytes()
    first = struct.unpack_from("<I", tex, 20)[0]
    for args in (["dbc", "info", "--data", world, "GroundEffectTexture"],
                 ["dbc", "info", world / "DBFilesClient" / "GroundEffectDoodad.dbc"],
                 ["dbc", "show", "--data", world, "GroundEffectTexture", "--id", first]):  # joins the two
        r = run(*args)
        assert r.exit_code == 0 and "Traceback" not in r.output, (args, r.output)
    r = run("dbc", "show", "--data", world, "GroundEffectTexture", "--id", first, "--json")
    assert '"models": [' in r.output and "ElwGra" not in r.output


def test_bake_on_an_empty_doodad_table(world, tmp_path):
    adt = next((world / "World" / "Maps").rglob("*.adt"))
    r = run("bake", adt, "--data", world, "-o", tmp_path / "t.wgb")
    assert r.exit_code == 0 and "Traceback" not in r.output, r.output
    assert "0 instances" in r.output
    assert (tmp_path / "t.wgb").is_file()


def test_view_on_an_empty_doodad_table(egl, world, tmp_path):
    out = tmp_path / "v.png"
    r = run("view", "--data", world, "--output", out, "--size", "64x36")
    assert r.exit_code == 0 and "Traceback" not in r.output, r.output
    assert out.is_file() and out.stat().st_size > 0
