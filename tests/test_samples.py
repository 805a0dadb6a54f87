"""The sample world end to end: written with wowgrass's writers, read back by its readers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from wowgrass.cli.main import cli
from wowgrass.game.data import open_data
from wowgrass.formats.adt import ZEROPOINT, AdtTile
from wowgrass.formats.blp import BlpImage
from wowgrass.formats.dbc import read_table
from wowgrass.formats.m2 import M2Model
from wowgrass.formats.mpq import MpqArchive
from wowgrass.formats.wdt import WdtFile
from wowgrass.samples import (
    MAP_NAME, SAMPLE_VERSION, adt_path, build_sample_world, sample_data_path, sample_root, wdt_path,
)
from wowgrass.samples import models as M
from wowgrass.samples import tables as T
from wowgrass.samples.heights import ROAD, SampleTerrain
from wowgrass.samples.sample_world import SAMPLE_VERSION, TERRAIN_TEXTURES, texture_files

BUILDS = ("1.12", "2.4.3", "3.3.5")
M2_VERSION = {"1.12": 256, "2.4.3": 263, "3.3.5": 264}
#: the archives of each client the sample copies (a subset of the real ones), in the 2.x/3.x clients'
#: mount order, lowest priority first: base, expansion(s), locale, patch, locale patch
CLIENT_ARCHIVES = {
    "1.12": ["dbc.MPQ", "terrain.MPQ", "model.MPQ", "texture.MPQ", "patch.MPQ"],
    "2.4.3": ["common.MPQ", "expansion.MPQ", "enUS/locale-enUS.MPQ", "patch.MPQ", "enUS/patch-enUS.MPQ"],
    "3.3.5": ["common.MPQ", "expansion.MPQ", "lichking.MPQ", "enUS/locale-enUS.MPQ", "patch.MPQ",
              "enUS/patch-enUS.MPQ"],
}


@pytest.fixture(scope="session")
def worlds(tmp_path_factory):
    """One 2x1-tile sample per build."""
    out = {}
    for b in BUILDS:
        root = tmp_path_factory.mktemp(f"sample-{b}")
        data = build_sample_world(root, b, (2, 1), seed=0)
        out[b] = (data, json.loads((root / "sample.json").read_text()))
    return out


@pytest.mark.parametrize("build", BUILDS)
def test_every_file_reads_back_with_its_reader(worlds, build):
    data_dir, manifest = worlds[build]
    data = open_data(data_dir)
    assert data.build == build
    assert manifest["wdt"] == wdt_path() and data.exists(wdt_path())
    # the client's archives, and the order the reader mounts them (lowest priority first); 1.12's base
    # archives hold no file twice, so only its patch's place matters
    mounted = [p.relative_to(data_dir).as_posix() for p in data.archives]
    assert sorted(manifest["archives"]) == sorted(mounted) == sorted(CLIENT_ARCHIVES[build])
    if build == "1.12":
        assert mounted[-1] == "patch.MPQ"
    else:
        assert mounted == CLIENT_ARCHIVES[build]
    seen = set()
    for archive, files in manifest["archives"].items():
        assert (data_dir / archive).is_file()
        for path in files:
            seen.add(path.lower())
    assert len(seen) >= 25
    for path in sorted(seen):
        raw = data.read(path)
        low = path.lower()
        if low.endswith(".adt"):
            t = AdtTile.from_bytes(raw, path, big_alpha=build == "3.3.5")
            assert (t.n_layers >= 1).all() and (t.n_layers <= 4).all()
            assert TERRAIN_TEXTURES["road"] in t.textures
            assert f"{MAP_NAME}_{t.col}_{t.row}.adt".lower() in low
        elif low.endswith(".wdt"):
            w = WdtFile.from_bytes(raw, path)
            assert sorted(w.tiles()) == [(31, 32), (32, 32)]
            assert w.big_alpha == (build == "3.3.5")
        elif low.endswith(".wdl"):  # the horizon's heights: every tile's, as its ADT has them
            from wowgrass.formats.adt import VERTEX_ROWCOL
            from wowgrass.formats.wdl import WdlFile

            w = WdlFile.from_bytes(raw, path)
            assert sorted(map(tuple, w.tiles.tolist())) == [(31, 32), (32, 32)]
            assert w.has_maho.all() == (build != "1.12") and w.has_maho.any() == (build != "1.12")
            vid = {tuple(rc): i for i, rc in enumerate(VERTEX_ROWCOL.tolist())}
            for (c, r), outer, inner in zip(w.tiles.tolist(), w.outer, w.inner):
                adt = AdtTile.from_bytes(data.read(f"World\\Maps\\{MAP_NAME}\\{MAP_NAME}_{c}_{r}.adt"),
                                         big_alpha=build == "3.3.5")
                h = np.round(adt.abs_heights)
                # outer: every chunk's north-west corner (the last row and column: the south-east
                # corners), inner: every chunk's centre vertex (row 4, column 4)
                assert outer[:16, :16].tolist() == h[:, vid[(0.0, 0.0)]].reshape(16, 16).tolist()
                assert outer[16, 16] == h[255, vid[(8.0, 8.0)]] and outer[16, 3] == h[15 * 16 + 3, vid[(8.0, 0.0)]]
                assert inner.tolist() == h[:, vid[(4.0, 4.0)]].reshape(16, 16).tolist()
        elif low.endswith(".m2"):
            m = M2Model.from_bytes(raw, path, read=data.read)
            assert m.version == M2_VERSION[build]
            assert len(m.triangles) > 0 and m.textures[0].filename
            assert data.exists(m.textures[0].filename)
        elif low.endswith(".skin"):
            assert build == "3.3.5" and raw[:4] == b"SKIN"
        elif low.endswith(".blp"):
            img = BlpImage.from_bytes(raw, path)
            assert img.mips[0].shape[:2] == (img.height, img.width)
        elif low.endswith(".dbc"):
            table, det = read_table(raw, path, build=build)
            assert det.schema is not None and table.record_count > 0
        elif low.endswith(".wmo"):
            from wowgrass.formats.wmo import WmoGroup, load_wmo, sniff_group

            if sniff_group(raw[:16]):
                assert WmoGroup.from_bytes(raw, path).triangle_count > 0
            else:
                w = load_wmo(path, data.read)
                assert not w.missing and not w.errors and len(w.present) == 2
        else:
            pytest.fail(f"unexpected file {path}")
    if build == "3.3.5":
        assert data.exists("World\\NoDXT\\Detail\\ElwGra0100.skin")


@pytest.mark.parametrize("build", BUILDS)
def test_patch_archives_override_base_files(worlds, build):
    data_dir, manifest = worlds[build]
    data = open_data(data_dir)
    assert data.read(T.TEXTURE_DBC) == T.ground_effect_texture(build)
    base_dbc = "dbc.MPQ" if build == "1.12" else "enUS/locale-enUS.MPQ"
    older = MpqArchive.open(data_dir / base_dbc).read(T.TEXTURE_DBC)
    assert older == T.ground_effect_texture(build, patched=False) != data.read(T.TEXTURE_DBC)
    grass = TERRAIN_TEXTURES["grass"]
    assert data.read(grass) == texture_files(build)[grass]
    assert grass in manifest["archives"]["patch.MPQ"]


@pytest.fixture(scope="module")
def terrain():
    return SampleTerrain((2, 1), seed=0)


@pytest.mark.parametrize("build", BUILDS)
def test_tiles_hold_what_was_generated(worlds, terrain, build):
    data = open_data(worlds[build][0])
    gen = terrain.tile(32, 32, alpha_bits=8 if build == "3.3.5" else 4, fix_alpha=build == "1.12")
    t = AdtTile.from_bytes(data.read(adt_path(32, 32)), big_alpha=build == "3.3.5")
    assert np.array_equal(t.abs_heights, gen.abs_heights)
    assert np.array_equal(t.normals, gen.normals)
    assert np.array_equal(t.n_layers, gen.n_layers)
    assert np.array_equal(t.alpha, gen.alpha)
    assert np.array_equal(t.doodad_mapping, gen.doodad_mapping)
    from wowgrass.samples.features import tile_features

    feat = tile_features(build, terrain, gen, 32, 32)   # no grass under the lake and the house
    assert feat["liquid"] is not None and len(feat["modf"]) == 1
    assert np.array_equal(t.no_effect_doodad, gen.no_effect_doodad | feat["no_effect"])
    assert np.array_equal(t.holes, gen.holes)
    assert np.array_equal(t.shadow, gen.shadow) and 0.01 < gen.shadow.mean() < 0.5
    # textures: the road layer uses a texture whose name says road
    road = np.array([p.endswith("SampleRoad.blp") for p in t.textures])
    lt = t.layer_texture
    assert np.array_equal(np.where(lt >= 0, road[np.maximum(lt, 0)], False), gen.layer_kind == ROAD)
    enc = set(np.unique(t.alpha_encoding[t.alpha_encoding > 0]).tolist())
    assert enc == ({2, 3} if build == "3.3.5" else {1})         # 3.3.5 mixes 8-bit and RLE maps
    # placed doodads: rocks (and maybe the figure) inside the tile, on or slightly in the ground
    assert M.ROCK_PATH in t.models
    assert len(t.mddf) >= 2
    p = t.mddf["position"].astype(np.float64)
    x, y, z = ZEROPOINT - p[:, 2], ZEROPOINT - p[:, 0], p[:, 1]
    chunk = t.chunk_index_at(x, y)
    assert (chunk >= 0).all()
    assert np.allclose(t.heights_at(chunk, x, y) - z, [0.3 if t.models[i] == M.ROCK_PATH else 0.0
                                                        for i in t.mddf["name_id"]], atol=0.01)  # f4 positions


def test_reference_figure_is_placed_and_human_sized(worlds):
    data = open_data(worlds["3.3.5"][0])
    t = AdtTile.from_bytes(data.read(adt_path(31, 32)), big_alpha=True)
    assert M.HUMAN_PATH in t.models
    m = M2Model.from_bytes(data.read(M.HUMAN_PATH), M.HUMAN_PATH, read=data.read)
    assert float(m.bbox_max[2]) - float(m.bbox_min[2]) == pytest.approx(2.035, abs=1e-4)


@pytest.mark.parametrize("build", BUILDS)
def test_ground_effects_resolve_to_grass_models(worlds, build):
    from wowgrass.game.effects import GroundEffectCatalog

    data = open_data(worlds[build][0])
    cat = GroundEffectCatalog.from_data(data, build=build)
    t = AdtTile.from_bytes(data.read(adt_path(31, 32)), big_alpha=build == "3.3.5")
    used = np.unique(t.layer_effect[t.layer_texture >= 0])
    rows = cat.lookup(used)
    assert (rows >= 0).all()
    with_models = [r for r in rows.tolist() if (cat.slot_model[r] >= 0).any()]
    assert len(with_models) >= 3                         # grass variants and dirt
    for r in with_models:
        assert (cat.slot_model[r] >= 0).sum() == 4
    assert sorted(cat.models) == sorted(g.model_path for g in M.GRASS)
    for path in cat.models:
        model = M2Model.from_bytes(data.read(path), path, read=data.read)
        height = float(model.bbox_max[2])
        assert 0.288 - 1e-4 <= height <= 0.620 + 1e-4 or abs(height - 1.593) < 1e-4


def test_same_seed_same_bytes_other_seed_differs(tmp_path):
    a = build_sample_world(tmp_path / "a", "3.3.5", (1, 1), seed=0)
    b = build_sample_world(tmp_path / "b", "3.3.5", (1, 1), seed=0)
    c = build_sample_world(tmp_path / "c", "3.3.5", (1, 1), seed=1)
    names = sorted(p.relative_to(a).as_posix() for p in a.rglob("*.MPQ"))
    assert names == sorted(p.relative_to(b).as_posix() for p in b.rglob("*.MPQ"))
    for n in names:
        assert (a / n).read_bytes() == (b / n).read_bytes(), n
    assert (tmp_path / "a/sample.json").read_bytes() == (tmp_path / "b/sample.json").read_bytes()
    assert (a / "lichking.MPQ").read_bytes() != (c / "lichking.MPQ").read_bytes()


def test_sample_data_path_builds_once_into_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("WOWGRASS_CACHE", str(tmp_path))
    stale = tmp_path / "sample" / ".tmp-999999999-3.3.5-1x1-0-v1-xyz"
    stale.mkdir(parents=True)                                  # left by a killed build
    calls = []
    data = sample_data_path("3.3.5", (1, 1), 0, progress=lambda *a: calls.append(a))
    assert data == sample_root("3.3.5", (1, 1), 0) / "Data" and data.is_dir()
    assert data.parent.parent == tmp_path / "sample"
    assert calls and calls[-1][1] == calls[-1][2]
    assert not stale.exists()
    assert [p.name for p in (tmp_path / "sample").iterdir()] == [data.parent.name]
    stamp = (data / "lichking.MPQ").stat().st_mtime_ns
    assert sample_data_path("3.3.5", (1, 1), 0) == data
    assert (data / "lichking.MPQ").stat().st_mtime_ns == stamp       # reused, not rebuilt
    os.utime(data / "lichking.MPQ", ns=(1, 1))
    assert sample_data_path("3.3.5", (1, 1), 0, force=True) == data
    assert (data / "lichking.MPQ").stat().st_mtime_ns != 1
    assert [p.name for p in (tmp_path / "sample").iterdir()] == [data.parent.name]


def test_a_failed_build_leaves_nothing(tmp_path, monkeypatch):
    from wowgrass.samples import sample_world as world

    monkeypatch.setenv("WOWGRASS_CACHE", str(tmp_path))

    def boom(*a, **k):
        raise RuntimeError("interrupted")

    monkeypatch.setattr(world, "build_sample_world", boom)
    with pytest.raises(RuntimeError):
        sample_data_path("1.12", (1, 1), 0)
    assert list((tmp_path / "sample").iterdir()) == []



def test_write_sample_world_replaces_only_when_complete(tmp_path, monkeypatch):
    from wowgrass.samples import sample_world as world

    out = tmp_path / "w"
    (out / "Data").mkdir(parents=True)
    (out / "Data" / "old.txt").write_text("old")
    (out / "keep.txt").write_text("mine")

    def boom(*a, **k):
        raise RuntimeError("interrupted")

    with monkeypatch.context() as m:
        m.setattr(world, "build_sample_world", boom)
        with pytest.raises(RuntimeError):
            world.write_sample_world(out, "1.12", (1, 1), 0)
    assert (out / "Data" / "old.txt").exists()  # a failed build leaves the old one alone
    data = world.write_sample_world(out, "1.12", (1, 1), 0)
    assert data == out / "Data" and not (data / "old.txt").exists() and (data / "dbc.MPQ").is_file()
    assert sorted(p.name for p in out.iterdir()) == ["Data", "keep.txt", "sample.json"]


# -- command line ------------------------------------------------------------------------------
def test_info_commands_work_on_the_sample(worlds):
    runner = CliRunner()
    data_dir = str(worlds["3.3.5"][0])
    r = runner.invoke(cli, ["dbc", "info", "--data", data_dir, "GroundEffectTexture", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["header"]["record_count"] == len(T.EFFECTS)
    r = runner.invoke(cli, ["adt", "info", "--data", data_dir, "--map", MAP_NAME, "--tile", "31,32", "--json"])
    assert r.exit_code == 0, r.output
    assert "SampleRoad" in r.stdout
    r = runner.invoke(cli, ["m2", "info", "--data", data_dir, "World\\NoDXT\\Detail\\ElwGra02.m2", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["version"] == 264
    data_dir = str(worlds["1.12"][0])
    r = runner.invoke(cli, ["dbc", "info", "--data", data_dir, "GroundEffectDoodad"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(cli, ["m2", "info", "--data", data_dir, "World\\NoDXT\\Detail\\ElwGra01.m2"])
    assert r.exit_code == 0 and "256" in r.output, r.output


def test_layers_picture_of_a_sample_tile(worlds, tmp_path):
    from PIL import Image

    out = tmp_path / "layers.png"
    r = CliRunner().invoke(cli, ["adt", "image", "--data", str(worlds["2.4.3"][0]), "--map", MAP_NAME,
                                 "--tile", "31,32", "--kind", "layers", "--size", "128", "-o", str(out)])
    assert r.exit_code == 0, r.output
    img = np.asarray(Image.open(out).convert("RGB"))
    assert img.shape == (128, 128, 3) and len(np.unique(img.reshape(-1, 3), axis=0)) > 16


def test_sample_cli_help_build_path_and_errors(tmp_path):
    runner = CliRunner()
    for args in (["sample", "--help"], ["sample", "build", "--help"], ["sample", "path", "--help"]):
        r = runner.invoke(cli, args)
        assert r.exit_code == 0 and "Usage" in r.output
    r = runner.invoke(cli, ["sample", "build", "-o", str(tmp_path / "w"), "--build", "1.12", "--tiles", "1x1",
                            "--json"])
    assert r.exit_code == 0, r.output
    info = json.loads(r.stdout)
    assert info["data"] == str(tmp_path / "w" / "Data") and info["built"]
    assert "dbc.MPQ" in info["archives"] and "patch.MPQ" in info["archives"]
    assert open_data(info["data"]).build == "1.12"
    assert not [p for p in (tmp_path / "w").iterdir() if p.name.startswith(".tmp")]
    r = runner.invoke(cli, ["sample", "build", "-o", str(tmp_path / "w"), "--tiles", "1x1"])
    assert r.exit_code == 2 and "error:" in r.output and "--force" in r.output and "Traceback" not in r.output
    r = runner.invoke(cli, ["sample", "build", "--tiles", "0x3"])
    assert r.exit_code == 2 and "error:" in r.output and "Traceback" not in r.output
    r = runner.invoke(cli, ["sample", "path", "--tiles", "1x1", "--seed", "5", "--json"])
    assert r.exit_code == 0
    p = json.loads(r.stdout)
    assert p["exists"] is False and p["data"].endswith(os.path.join(f"3.3.5-1x1-5-v{SAMPLE_VERSION}", "Data"))
    r = runner.invoke(cli, ["sample", "build", "--tiles", "1x1", "--seed", "5"])
    assert r.exit_code == 0, r.output
    assert Path(r.stdout.split()[0]).is_dir()


def test_vanilla_base_archives_have_no_listfile_like_the_real_client(worlds):
    data_dir, manifest = worlds["1.12"]
    model = MpqArchive.open(data_dir / "model.MPQ")
    assert model.names() == [] and not model.exists("(listfile)")
    assert model.exists("World\\NoDXT\\Detail\\ElwGra01.m2")              # found by hash
    patch = MpqArchive.open(data_dir / "patch.MPQ")
    assert T.TEXTURE_DBC in patch.names()
    modern = MpqArchive.open(worlds["3.3.5"][0] / "common.MPQ")
    assert sorted(n for n in modern.names() if n != "(listfile)") == sorted(manifest_names(worlds["3.3.5"][1], "common.MPQ"))


def manifest_names(manifest, archive):
    return list(manifest["archives"][archive])
