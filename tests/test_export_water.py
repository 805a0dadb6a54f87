"""``export gltf`` with liquids and WMOs, ``wmo export``: meshes named for their liquid type,
WMO groups written once with their placements, validator-clean files."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pygltflib
import pytest
from click.testing import CliRunner

from wowgrass.cli.main import cli

HERE = Path(__file__).parent
SPARSE = ("--placement", "client")  # the fewest picks the 3.3.5 sample world takes (16, as its client)


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture(scope="module")
def sample_glb(tmp_path_factory):
    """The default sample world's tile 32_32: the house and the lake."""
    out = tmp_path_factory.mktemp("water-export") / "s.glb"
    res = run("export", "gltf", "--tile", "32,32", *SPARSE, "-o", out, "--json")
    assert res.exit_code == 0, res.output
    return out, json.loads(res.output)


def _nodes(doc, pred):
    return [n for n in doc.nodes if pred(n.extras or {})]


def test_water_meshes_named_for_their_liquid_type(sample_glb):
    from wowgrass.formats.adt import AdtTile
    from wowgrass.formats.liquid import tile_liquid
    from wowgrass.samples import adt_path, sample_data_path
    from wowgrass.game.data import open_data

    out, s = sample_glb
    doc = pygltflib.GLTF2().load_binary(str(out))
    water = _nodes(doc, lambda e: e.get("kind") == "liquid")
    names = {n.name for n in water}
    # the lake (type 1, Water) and the house's basin (type 13, WMO Water: its MLIQ)
    assert names == {"Water (1)", "WMO Water (13)"}
    with open_data(sample_data_path()) as data:
        lake = tile_liquid(AdtTile.from_bytes(data.read(adt_path(32, 32)), big_alpha=True))
    cells = {n.name: n.extras["cells"] for n in water}
    assert cells["Water (1)"] == int(lake.layers["exists"].sum()) and cells["WMO Water (13)"] == 1
    assert s["liquid_cell_count"] == sum(cells.values())
    mesh = doc.meshes[next(n.mesh for n in water if n.name == "Water (1)")]
    mat = doc.materials[mesh.primitives[0].material]
    assert mat.alphaMode == pygltflib.BLEND and mat.pbrMetallicRoughness.baseColorTexture is not None  # lake_a.1


def test_wmo_groups_once_and_their_placement(sample_glb):
    from wowgrass.samples.features import house_matrix
    from wowgrass.samples.heights import SampleTerrain

    out, s = sample_glb
    doc = pygltflib.GLTF2().load_binary(str(out))
    assert s["wmo_placement_count"] == 1 and s["wmo_doodad_instance_count"] == 3
    groups = _nodes(doc, lambda e: e.get("kind") == "wmo group")
    assert sorted(n.extras["group"] for n in groups) == [0, 1]
    assert len({n.mesh for n in groups}) == 2       # each group's mesh once
    # one placement: plain nodes (no extension) at the MODF placement, relative to the scene origin
    root = doc.nodes[doc.scenes[0].nodes[0]]
    origin = np.array(root.extras["wow_origin"])
    from test_export import from_gltf

    want = house_matrix(SampleTerrain((2, 2), 0))[:3, 3] - origin
    for n in groups:
        assert not n.extensions and not n.children
        np.testing.assert_allclose(from_gltf(np.array([n.translation]))[0], want, atol=1e-3)


def test_exports_are_validator_clean(sample_glb, tmp_path, realdata):
    from test_export import _validator
    from wmo_world import MAP, inn_world

    node, env = _validator()
    out, _ = sample_glb
    root, _pos = inn_world(tmp_path, realdata)
    files = [str(out)]
    for args in (["--data", root, "--map", MAP, "--instancing", "nodes"],
                 [realdata / "adt" / "continent4229.adt", "--dbc", realdata / "dbc" / "3.3.5", "--no-grass"]):
        f = tmp_path / f"x{len(files)}.glb"
        res = run("export", "gltf", *args, "-o", f)
        assert res.exit_code == 0, res.output
        files.append(str(f))
    f = tmp_path / "inn.glb"
    assert run("wmo", "export", realdata / "wmo" / "inn.wmo", "-o", f).exit_code == 0
    files.append(str(f))
    proc = subprocess.run([node, str(HERE / "gltf_validate.js"), *files], env=env, capture_output=True, text=True,
                          timeout=300)
    for line in proc.stdout.splitlines():
        r = json.loads(line)
        assert r["errors"] == 0 and r["warnings"] == 0, r


def test_export_leaves_them_out(tmp_path):
    f = tmp_path / "n.glb"
    res = run("export", "gltf", "--tile", "32,32", *SPARSE, "--no-liquids", "--no-wmos", "--no-grass", "-o", f,
              "--json")
    assert res.exit_code == 0, res.output
    s = json.loads(res.output)
    assert s["liquid_cell_count"] == 0 and s["wmo_placement_count"] == 0
    doc = pygltflib.GLTF2().load_binary(str(f))
    assert not [n for n in doc.nodes if (n.extras or {}).get("kind") in ("liquid", "wmo group")]
