"""Exports: glTF tiles (read back with pygltflib, the Khronos validator, Blender), placement rows."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pygltflib
import pytest
from click.testing import CliRunner
from conftest import require_tool
from wowgrass.cli.main import cli

from wowgrass.grass.bundle import read_bundle, unpack_instances
from wowgrass.export.gltf import matrices_to_trs, rotation_quaternions, to_gltf, yaw_quaternions
from wowgrass.samples import MAP_NAME, build_sample_world

HERE = Path(__file__).parent
# the client placement at its fewest picks keeps the files smaller and Blender quicker (the 3.3.5 sample
# world takes 16 picks however few are asked, as the client does; its draw capacity thins them further)
SPARSE = ("--placement", "client", "-C", "client_picks=1")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return build_sample_world(tmp_path_factory.mktemp("export-world") / "w", "3.3.5", (2, 1), seed=0)


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def accessor(doc: pygltflib.GLTF2, index: int) -> np.ndarray:
    acc = doc.accessors[index]
    view = doc.bufferViews[acc.bufferView]
    blob = doc.binary_blob()
    dtype = {pygltflib.FLOAT: "<f4", pygltflib.UNSIGNED_INT: "<u4", pygltflib.UNSIGNED_SHORT: "<u2"}[acc.componentType]
    width = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4}[acc.type]
    start = view.byteOffset + (acc.byteOffset or 0)
    arr = np.frombuffer(blob, dtype, acc.count * width, start)
    return arr.reshape(acc.count, width) if width > 1 else arr


def from_gltf(v: np.ndarray) -> np.ndarray:
    return np.stack([v[:, 0], -v[:, 2], v[:, 1]], axis=1)


def trs_matrices(t, r, s) -> np.ndarray:
    """(n, 4, 4) glTF-space matrices T R S from translations, xyzw quaternions, scales."""
    t, r, s = (np.asarray(a, np.float64).reshape(len(a), -1) for a in (t, r, s))
    x, y, z, w = r.T
    rot = np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], 1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], 1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], 1)], 1)
    m = np.tile(np.eye(4), (len(t), 1, 1))
    m[:, :3, :3] = rot * s[:, None, :]
    m[:, :3, 3] = t
    return m


def yaw_matrices(yaw, scale) -> np.ndarray:
    """(n, 3, 3) WoW's turn by ``yaw`` about its up axis (Z), scaled, as seen in glTF space: a turn
    about glTF's up axis (+Y) by the same angle (WoW X, Y, Z -> glTF x, z, -y)."""
    c, s = np.cos(yaw), np.sin(yaw)
    m = np.zeros((len(yaw), 3, 3))
    m[:, 0, 0], m[:, 0, 2], m[:, 1, 1], m[:, 2, 0], m[:, 2, 2] = c, s, 1.0, -s, c
    return m * np.asarray(scale, np.float64)[:, None, None]


def node_matrix(nd) -> np.ndarray:
    return trs_matrices([nd.translation or [0, 0, 0]], [nd.rotation or [0, 0, 0, 1]], [nd.scale or [1, 1, 1]])[0]


def placed_matrices(doc, nd) -> np.ndarray:
    """Every instance a group node places, as matrices in its parent's space: the extension's
    accessors composed with the node's own transform, a plain node, or one child node each."""
    ext = (nd.extensions or {}).get("EXT_mesh_gpu_instancing")
    if ext:
        a = ext["attributes"]
        rel = trs_matrices(*(accessor(doc, a[k]) for k in ("TRANSLATION", "ROTATION", "SCALE")))
        return node_matrix(nd) @ rel
    if nd.mesh is not None:
        return node_matrix(nd)[None]
    return np.stack([node_matrix(doc.nodes[i]) for i in nd.children])


def grass_nodes(doc):
    """model path -> instance matrices of every grass group, any instancing mode but merged."""
    out = {}
    for nd in doc.nodes:
        if (nd.extras or {}).get("kind") != "grass" or nd.extras.get("merged"):
            continue
        out.setdefault(nd.extras["model"], []).append(placed_matrices(doc, nd))
    return out


def bundle_instances(cache_root: Path) -> dict:
    out = {}
    for p in sorted(cache_root.rglob("*.wgb")):
        with read_bundle(p) as b:
            for m in b.models:
                pos, yaw, scale = unpack_instances(m.instances)
                out.setdefault(m.path, []).append((pos, yaw, scale))
    return out


# ----------------------------------------------------------------------------- transforms


def test_axes_and_rotations():
    # WoW north (X) stays +X, west (Y) becomes -Z, up (Z) becomes +Y: a proper rotation
    np.testing.assert_array_equal(to_gltf(np.array([[1.0, 2.0, 3.0]])), [[1.0, 3.0, -2.0]])
    q = yaw_quaternions(np.array([np.pi / 2]))[0]
    np.testing.assert_allclose(q, [0, np.sqrt(0.5), 0, np.sqrt(0.5)], atol=1e-7)
    # a WoW yaw matrix about Z, scaled 2, at (10, 20, 30) -> TRS in glTF space
    c, s = np.cos(0.7), np.sin(0.7)
    m = np.array([[c, -s, 0, 10], [s, c, 0, 20], [0, 0, 1, 30], [0, 0, 0, 1]], np.float64)
    m[:3, :3] *= 2
    t, r, sc = matrices_to_trs(m.T.reshape(1, 16))
    np.testing.assert_allclose(t[0], [10, 30, -20], atol=1e-5)
    np.testing.assert_allclose(sc[0], [2, 2, 2], atol=1e-6)
    np.testing.assert_allclose(np.abs(r[0]), np.abs(yaw_quaternions(np.array([0.7]))[0]), atol=1e-6)
    # arbitrary rotations round-trip through quaternions (every branch of the conversion)
    rng = np.random.default_rng(0)
    qs = rng.normal(size=(200, 4))
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)
    x, y, z, w = qs.T
    mats = np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], 1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], 1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], 1)], 1)
    got = rotation_quaternions(mats)
    np.testing.assert_allclose(np.abs(np.sum(got * qs, axis=1)), 1.0, atol=1e-5)


# ----------------------------------------------------------------------------- glTF export


@pytest.mark.parametrize("mode", ["ext", "nodes"])
def test_gltf_instances_match_the_bundles(world, tmp_path, monkeypatch, mode):
    monkeypatch.setenv("WOWGRASS_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "t.glb"
    # nodes: one tile (a node an instance: pygltflib takes ~15 s a tile to read them back)
    tiles = [[31, 32], [32, 32]] if mode == "ext" else [[32, 32]]
    res = run("export", "gltf", "--data", world, "--tile", "31:32,32" if mode == "ext" else "32,32", *SPARSE,
              "--instancing", mode, "-o", out, "--json")
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["file"] == str(out) and summary["tiles"] == tiles
    doc = pygltflib.GLTF2().load(str(out))
    assert doc.asset.version == "2.0"
    if mode == "ext":
        assert "EXT_mesh_gpu_instancing" in doc.extensionsUsed and not doc.extensionsRequired
    else:
        assert not doc.extensionsUsed
    want = bundle_instances(tmp_path / "cache")
    got = grass_nodes(doc)
    assert set(got) == set(want) and summary["grass_instance_count"] == sum(len(p) for v in want.values() for p, _, _ in v)
    origin = np.array(doc.nodes[doc.scenes[0].nodes[0]].extras["wow_origin"])
    for model, groups in want.items():
        pos = np.concatenate([p for p, _, _ in groups])
        yaw = np.concatenate([y for _, y, _ in groups])
        scale = np.concatenate([s for _, _, s in groups])
        m = np.concatenate(got[model])
        assert len(m) == len(pos) > 0
        np.testing.assert_allclose(from_gltf(m[:, :3, 3]) + origin, pos, atol=2e-3)
        np.testing.assert_allclose(m[:, :3, :3], yaw_matrices(yaw, scale), atol=2e-6)
    # each model's mesh once, shared by every tile's group
    names = [m.name for m in doc.meshes]
    assert len(names) == len(set(names))
    # the terrain of each tile, with their baked textures
    assert sum(m.name.startswith("terrain") for m in doc.meshes) == len(tiles)
    assert len(doc.images) >= 2 and all(i.mimeType == "image/png" for i in doc.images)


def _tile_bundles(cache_root: Path) -> dict:
    """(col, row) -> {model: (pos, yaw, scale)} of the baked bundles."""
    out = {}
    for p in sorted(cache_root.rglob("*.wgb")):
        with read_bundle(p) as b:
            out[tuple(int(v) for v in b.tile)] = {m.path: unpack_instances(m.instances) for m in b.models}
    return out


def _tile_of(doc, i):
    parent = {c: n for n, nd in enumerate(doc.nodes) for c in nd.children}
    while i in parent:
        i = parent[i]
        if "tile" in (doc.nodes[i].extras or {}):
            return tuple(doc.nodes[i].extras["tile"])
    return None


def test_single_placements_are_plain_nodes_and_instanced_nodes_carry_the_first(tmp_path, monkeypatch):
    from wowgrass.export.gltf import EXT_MIN_INSTANCES
    from wowgrass.samples.features import house_matrix
    from wowgrass.samples.heights import SampleTerrain

    monkeypatch.setenv("WOWGRASS_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "s.glb"
    res = run("export", "gltf", "--tile", "32,32", *SPARSE, "-o", out, "--json")  # the house, the lake
    assert res.exit_code == 0, res.output
    doc = pygltflib.GLTF2().load(str(out))
    assert "EXT_mesh_gpu_instancing" in doc.extensionsUsed and not doc.extensionsRequired
    origin = np.array(doc.nodes[doc.scenes[0].nodes[0]].extras["wow_origin"])
    placed = [(i, nd) for i, nd in enumerate(doc.nodes) if (nd.extras or {}).get("kind") in
              ("grass", "doodad", "wmo group", "wmo doodad")]
    ext = [(i, nd) for i, nd in placed if nd.extensions]
    plain = [(i, nd) for i, nd in placed if nd.mesh is not None and not nd.extensions]
    groups = [(i, nd) for i, nd in placed if nd.mesh is None]
    assert ext and plain
    # the house (one MODF placement) is plain nodes at its placement, on the ground, not at the origin
    house = [nd for _, nd in plain if nd.extras["kind"] == "wmo group"]
    assert len(house) == 2
    want = house_matrix(SampleTerrain((2, 2), 0))[:3, 3] - origin
    for nd in house:
        np.testing.assert_allclose(from_gltf(np.array([nd.translation])), [want], atol=1e-3)
    for _, nd in ext:  # the extension only where it pays; never required
        assert accessor(doc, nd.extensions["EXT_mesh_gpu_instancing"]["attributes"]["TRANSLATION"]).shape[0] >= (
            EXT_MIN_INSTANCES)
    for _, nd in groups:
        assert 1 < len(nd.children) < EXT_MIN_INSTANCES
    # an importer without the extension sees the node's own transform: the first grass instance
    bundles = _tile_bundles(tmp_path / "cache")
    checked = 0
    for i, nd in ext:
        if nd.extras["kind"] != "grass":
            continue
        pos, yaw, scale = bundles[_tile_of(doc, i)][nd.extras["model"]]
        np.testing.assert_allclose(from_gltf(np.array([nd.translation])) + origin, pos[:1], atol=2e-3)
        np.testing.assert_allclose(node_matrix(nd)[:3, :3], yaw_matrices(yaw[:1], scale[:1])[0], atol=2e-6)
        # and the accessors hold every instance relative to it: the first is the identity
        a = nd.extensions["EXT_mesh_gpu_instancing"]["attributes"]
        np.testing.assert_array_equal(accessor(doc, a["TRANSLATION"])[0], 0)
        np.testing.assert_array_equal(accessor(doc, a["ROTATION"])[0], [0, 0, 0, 1])
        np.testing.assert_array_equal(accessor(doc, a["SCALE"])[0], 1)
        checked += 1
    assert checked > 0


def test_terrain_is_one_surface_and_the_grass_stands_on_it(tmp_path, monkeypatch):
    from wowgrass.formats.adt import AdtTile
    from wowgrass.game.data import open_data
    from wowgrass.samples import adt_path, sample_data_path

    monkeypatch.setenv("WOWGRASS_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "t.glb"
    res = run("export", "gltf", "--tile", "32,32", *SPARSE, "--texture-size", 128, "--no-doodads", "--no-wmos",
              "--no-liquids", "-o", out)
    assert res.exit_code == 0, res.output
    doc = pygltflib.GLTF2().load(str(out))
    prim = next(m for m in doc.meshes if m.name == "terrain 32_32").primitives[0]
    tri = accessor(doc, prim.attributes.POSITION).astype(np.float64)[accessor(doc, prim.indices).reshape(-1, 3)]
    with open_data(sample_data_path()) as data:
        holes = AdtTile.from_bytes(data.read(adt_path(32, 32)), big_alpha=True).hole_cells()
    assert len(tri) == 4 * int((~holes).sum())  # each cell's four fan triangles, once (no LOD levels)
    m = np.concatenate([mm for v in grass_nodes(doc).values() for mm in v])[::7][:300]
    p = m[:, :3, 3]  # glTF x north, z east: the ground plane
    a, b, c = (tri[None, :, k][..., [0, 2]] for k in range(3))
    q = p[:, None, [0, 2]]
    d = (b[..., 0] - a[..., 0]) * (c[..., 1] - a[..., 1]) - (c[..., 0] - a[..., 0]) * (b[..., 1] - a[..., 1])
    l1 = ((q[..., 0] - a[..., 0]) * (c[..., 1] - a[..., 1]) - (c[..., 0] - a[..., 0]) * (q[..., 1] - a[..., 1])) / d
    l2 = ((b[..., 0] - a[..., 0]) * (q[..., 1] - a[..., 1]) - (q[..., 0] - a[..., 0]) * (b[..., 1] - a[..., 1])) / d
    inside = (l1 >= -1e-6) & (l2 >= -1e-6) & (l1 + l2 <= 1 + 1e-6)
    h0, h1, h2 = (tri[None, :, k, 1] for k in range(3))
    y = h0 + l1 * (h1 - h0) + l2 * (h2 - h0)
    for k in range(len(p)):
        h = y[k, inside[k]]
        assert len(h) >= 1 and np.abs(h - p[k, 1]).max() < 2e-3, (p[k], h)


def _mesh_arrays(doc, mesh):
    prim = doc.meshes[mesh].primitives[0]
    return accessor(doc, prim.attributes.POSITION).astype(np.float64), accessor(doc, prim.attributes.NORMAL)


def test_merged_grass_is_the_instances_transformed_vertices(world, tmp_path, monkeypatch):
    from wowgrass.formats.adt import CHUNK_SIZE, TILE_SIZE, ZEROPOINT

    monkeypatch.setenv("WOWGRASS_CACHE", str(tmp_path / "cache"))
    docs = {}
    for mode in ("ext", "merged"):
        out = tmp_path / f"{mode}.glb"
        res = run("export", "gltf", "--data", world, "--tile", "31,32", *SPARSE, "--instancing", mode,
                  "--texture-size", 128, "-o", out, "--json")
        assert res.exit_code == 0, res.output
        docs[mode] = pygltflib.GLTF2().load(str(out)), json.loads(res.stdout)
    ext, _ = docs["ext"]
    merged, summary = docs["merged"]
    assert "EXT_mesh_gpu_instancing" not in (merged.extensionsUsed or [])
    used = {nd.mesh for nd in merged.nodes if nd.mesh is not None}
    assert used == set(range(len(merged.meshes)))  # no model mesh written unused
    origin = np.array(merged.nodes[merged.scenes[0].nodes[0]].extras["wow_origin"])
    models = {nd.extras["model"]: nd.mesh if nd.mesh is not None else ext.nodes[nd.children[0]].mesh
              for nd in ext.nodes if (nd.extras or {}).get("kind") == "grass"}
    instances = grass_nodes(ext)
    pieces = [nd for nd in merged.nodes if (nd.extras or {}).get("merged")]
    assert len(pieces) == summary["merged_mesh_count"] > len(models)
    assert sum(nd.extras["instances"] for nd in pieces) == summary["grass_instance_count"]
    for model, mesh in models.items():
        p, n = _mesh_arrays(ext, mesh)
        m = np.concatenate(instances[model])
        want = np.einsum("kij,vj->kvi", m[:, :3, :3], p) + m[:, None, :3, 3]
        want_n = np.einsum("kij,vj->kvi", m[:, :3, :3], n)
        want_n /= np.linalg.norm(want_n, axis=2, keepdims=True)
        got, got_n, chunk = [], [], []
        for nd in (nd for nd in pieces if nd.extras["model"] == model):
            gp, gn = _mesh_arrays(merged, nd.mesh)
            got.append(gp.reshape(-1, len(p), 3))
            got_n.append(gn.reshape(-1, len(p), 3))
            chunk += [nd.extras["chunk"]] * len(got[-1])
            assert len(got[-1]) == nd.extras["instances"]
        got, got_n, chunk = np.concatenate(got), np.concatenate(got_n), np.array(chunk)
        assert got.shape == want.shape
        # the same copies, whatever their order: sort both by where each copy sits; copies whose
        # centres lie within float32 noise of each other may trade places, so each is paired with the
        # nearest of its neighbours in that order
        ow = np.argsort(want.mean(axis=1)[:, 0], kind="stable")
        og = np.argsort(got.mean(axis=1)[:, 0], kind="stable")
        cw = want.mean(axis=1)[ow]
        cg = got.mean(axis=1)[og]
        at = np.clip(np.arange(len(ow))[:, None] + np.arange(-3, 4), 0, len(ow) - 1)  # neighbours in order
        ow = ow[at[np.arange(len(ow)), np.abs(cg[:, None, :] - cw[at]).max(axis=2).argmin(axis=1)]]
        assert len(np.unique(ow)) == len(ow)  # one to one
        np.testing.assert_allclose(got[og], want[ow], atol=2e-3)
        np.testing.assert_allclose(got_n[og], want_n[ow], atol=1e-4)
        # each copy is in the mesh of the chunk its instance stands in
        w = from_gltf(m[ow, :3, 3]) + origin
        c = chunk[og]
        north = ZEROPOINT - 32 * TILE_SIZE - (c // 16) * CHUNK_SIZE
        west = ZEROPOINT - 31 * TILE_SIZE - (c % 16) * CHUNK_SIZE
        assert ((w[:, 0] <= north + 1e-2) & (w[:, 0] >= north - CHUNK_SIZE - 1e-2)).all()
        assert ((w[:, 1] <= west + 1e-2) & (w[:, 1] >= west - CHUNK_SIZE - 1e-2)).all()


def test_nodes_mode_warns_over_its_limit(world, tmp_path, monkeypatch):
    import wowgrass.export.scene as scene

    monkeypatch.setenv("WOWGRASS_CACHE", str(tmp_path / "cache"))
    assert scene.NODES_LIMIT == 10_000  # the limit docs/export.md states
    args = ["export", "gltf", "--data", world, "--tile", "31,32", *SPARSE, "--texture-size", 128, "--json"]
    res = run(*args, "--instancing", "ext", "-o", tmp_path / "e.glb")
    ext = json.loads(res.stdout)
    assert res.exit_code == 0 and not ext["warnings"] and "warning" not in res.stderr
    assert "note: client_picks=1 is below what the 3.3.5 client takes" in res.stderr  # and 16 were taken
    # a limit the ext export stays within and the nodes export does not: only the latter warns
    monkeypatch.setattr(scene, "NODES_LIMIT", ext["node_count"])
    res = run(*args, "--instancing", "nodes", "-o", tmp_path / "n.glb")
    assert res.exit_code == 0, res.output
    s = json.loads(res.stdout)
    assert s["node_count"] > ext["node_count"] and len(s["warnings"]) == 1
    assert f"warning: {s['node_count']:,} nodes" in res.stderr and "--instancing merged" in res.stderr
    res = run(*args, "--instancing", "ext", "-o", tmp_path / "e2.glb")
    assert res.exit_code == 0 and "warning" not in res.stderr


def test_gltf_origin_world_puts_the_root_at_the_world_position(world, tmp_path):
    out = tmp_path / "w.glb"
    res = run("export", "gltf", "--data", world, "--tile", "31,32", *SPARSE, "--origin", "world", "-o", out,
              "--no-grass")
    assert res.exit_code == 0, res.output
    doc = pygltflib.GLTF2().load(str(out))
    root = doc.nodes[doc.scenes[0].nodes[0]]
    origin = np.array(root.extras["wow_origin"])
    np.testing.assert_allclose(root.translation, to_gltf(origin[None])[0], atol=1e-3)
    assert not any((n.extras or {}).get("model", "").startswith("World\\NoDXT") for n in doc.nodes)


def test_real_tiles_with_tables_only_use_stand_ins(realdata, tmp_path):
    out = tmp_path / "c.glb"
    res = run("export", "gltf", realdata / "adt" / "continent4229.adt", "--dbc", realdata / "dbc" / "3.3.5",
              "-o", out, "--json")
    assert res.exit_code == 0, res.output
    s = json.loads(res.stdout)
    assert s["tiles"] == [[42, 29]] and s["grass_instance_count"] > 0 and len(s["stand_ins"]) > 0
    assert len(s["missing_textures"]) == 16  # MTEX has 16 names; --dbc gives no textures
    doc = pygltflib.GLTF2().load(str(out))
    assert sum(len(m) for v in grass_nodes(doc).values() for m in v) == s["grass_instance_count"]


def _validator():
    node = require_tool("node", "the Khronos glTF validator runs on it (.ci/run installs both)")
    env = dict(os.environ)
    root = subprocess.run(["npm", "root", "-g"], capture_output=True, text=True).stdout.strip() if shutil.which(
        "npm") else ""
    env["NODE_PATH"] = os.pathsep.join(p for p in (env.get("NODE_PATH", ""), root) if p)
    probe = subprocess.run([node, "-e", "require('gltf-validator')"], env=env, capture_output=True)
    require_tool("the Khronos glTF validator", "npm install -g gltf-validator", found=probe.returncode == 0)
    return node, env


def test_khronos_validator_reports_no_errors(world, realdata, tmp_path):
    node, env = _validator()
    files = []
    for args in (
        ["--data", world, "--tile", "31:32,32", *SPARSE],
        ["--data", world, "--tile", "31,32", *SPARSE, "--instancing", "nodes", "--origin", "world"],
        ["--data", world, "--tile", "32,32", *SPARSE, "--instancing", "merged"],
        [realdata / "adt" / "continent4229.adt", "--dbc", realdata / "dbc" / "3.3.5"],
        [realdata / "adt" / "Azeroth_38_46.adt", "--dbc", realdata / "dbc" / "1.12"],
    ):
        out = tmp_path / f"v{len(files)}.glb"
        res = run("export", "gltf", *args, "-o", out)
        assert res.exit_code == 0, res.output
        files.append(str(out))
    proc = subprocess.run([node, str(HERE / "gltf_validate.js"), *files], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    reports = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(reports) == len(files)
    for r in reports:
        assert r["errors"] == 0 and r["warnings"] == 0, r


def _blender(kind):
    """The command line that runs a script in Blender: Debian's ``blender`` or a Python with the PyPI
    ``bpy`` module (``WOWGRASS_BPY_PYTHON``; about 1 GB, so never installed by default)."""
    if kind == "blender":
        blender = require_tool("blender", "Debian: apt-get install blender python3-numpy (.ci/run installs it)")
        return [blender, "-b", "--factory-startup", "--python"]
    py = os.environ.get("WOWGRASS_BPY_PYTHON")
    if not py:
        pytest.skip("WOWGRASS_BPY_PYTHON is not set (a python3.11 with `pip install bpy`; docs/export.md)")
    return [py]


@pytest.mark.parametrize("kind,mode", [("blender", "nodes"), ("blender", "ext"), ("blender", "merged"),
                                       ("bpy", "ext"), ("bpy", "merged")])
def test_blender_places_an_exported_tile(world, tmp_path, monkeypatch, kind, mode):
    cmd = _blender(kind)
    if (kind, mode) != ("blender", "merged") and not os.environ.get("WOWGRASS_BLENDER_ALL"):
        # each run starts Blender (20-40 s on two busy cores): the default run keeps one
        pytest.skip("WOWGRASS_BLENDER_ALL is not set (every importer x mode; the default run imports merged once)")
    monkeypatch.setenv("WOWGRASS_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "b.glb"
    # tile 32,32: the house (one WMO placement) on its hill, the lake, the grass
    res = run("export", "gltf", "--tile", "32,32", *SPARSE, "--instancing", mode, "--texture-size", 128, "-o", out,
              "--json")
    assert res.exit_code == 0, res.output
    s = json.loads(res.stdout)
    report = tmp_path / "blender.json"
    proc = subprocess.run([*cmd, str(HERE / "blender_import.py"), "--", str(out), str(report)], capture_output=True,
                          text=True, timeout=600)
    assert report.is_file(), proc.stdout[-3000:] + proc.stderr[-3000:]
    r = json.loads(report.read_text())
    users = r["mesh_users"]
    doc = pygltflib.GLTF2().load(str(out))
    grass_meshes = {doc.meshes[nd.mesh].name for nd in doc.nodes if (nd.extras or {}).get("kind") == "grass"
                    and nd.mesh is not None} | {doc.meshes[doc.nodes[c].mesh].name for nd in doc.nodes
                                                if (nd.extras or {}).get("kind") == "grass" for c in nd.children}
    grass_objects = sum(n for name, n in users.items() if name.split(".")[0] in grass_meshes)
    if mode == "merged":  # one object per chunk and model
        assert grass_objects == s["merged_mesh_count"] > 0
    elif mode == "nodes" or r["reads_instancing"]:  # one object per instance
        assert grass_objects == s["grass_instance_count"]
    else:  # Blender 3.4 ignores the extension: one object per grass node, at its first instance
        nodes = sum(1 for nd in doc.nodes if (nd.extras or {}).get("kind") == "grass" and nd.mesh is not None) + sum(
            len(nd.children) for nd in doc.nodes if (nd.extras or {}).get("kind") == "grass")
        assert grass_objects == nodes < s["grass_instance_count"]
    assert users.get("terrain 32_32") == 1
    # everything stands on the terrain: nothing off it, nothing floating, the house on its hill
    assert r["off_terrain"] == 0 and r["sampled"] > 5
    assert r["bottom_above_ground"]["max"] < 1.0
    if mode != "merged":  # each grass object one clump: its base at the ground (merged chunks span slopes)
        low = [v for name, v in r["lowest_by_mesh"].items() if name in grass_meshes]
        assert low and min(low) > -2.0, r["lowest_by_mesh"]
    lo, hi = r["wmo_box"]
    assert -3.0 < lo[2] - r["wmo_ground"] < 1.0


# ----------------------------------------------------------------------------- placement rows


def test_bundle_export_rows_match_the_bundle_and_the_placement(world, tmp_path, monkeypatch):
    import csv

    from wowgrass.grass.bake import load_catalog
    from wowgrass.game.data import open_data
    from wowgrass.formats.adt import AdtTile
    from wowgrass.grass.placement import make_strategy
    from wowgrass.game.tiles import adt_game_path

    monkeypatch.setenv("WOWGRASS_CACHE", str(tmp_path / "cache"))
    csv_out, json_out = tmp_path / "rows.csv", tmp_path / "rows.json"
    res = run("bake", "--data", world, "--tile", "31,32", "--export", csv_out, "--json")
    assert res.exit_code == 0, res.output
    bundle = json.loads(res.stdout)["tiles"][0]["file"]
    res = run("bundle", "export", bundle, "--json", "-o", json_out)
    assert res.exit_code == 0, res.output
    assert "rows, JSON" in res.stderr
    doc = json.loads(json_out.read_text())
    with open(csv_out, newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == doc["columns"] == ["model", "x", "y", "z", "yaw", "scale", "tile_col", "tile_row", "chunk",
                                          "cell"]
    assert doc["files"] == [bundle] and doc["row_count"] == len(doc["rows"]) == len(rows) - 1
    with read_bundle(bundle) as b:
        assert doc["row_count"] == b.instance_count
        pos = np.concatenate([unpack_instances(m.instances)[0] for m in b.models])
        counts = b.cell_counts.reshape(-1).astype(np.int64)
    got = np.array([r[1:4] for r in doc["rows"]], np.float32)
    np.testing.assert_array_equal(got, pos)  # float32 positions round-trip exactly
    np.testing.assert_array_equal(np.array([r[1:4] for r in rows[1:]], np.float32), pos)
    # chunk and cell: per-cell counts as the bundle's, but for positions within float32 of a cell edge
    flat = np.array([r[8] * 64 + r[9] for r in doc["rows"]])
    hist = np.bincount(flat, minlength=256 * 64)
    assert np.abs(hist - counts).sum() <= max(4, len(flat) // 2000)
    # and the placement's own (chunk, cell) for the same instances, model by model
    with open_data(world) as data:
        name = adt_game_path(MAP_NAME, 31, 32)
        tile = AdtTile.from_bytes(data.read(name), name, big_alpha=True)
        inst = make_strategy("coverage").place(tile, load_catalog(data=data), map_name=MAP_NAME)
    order = np.argsort(inst.model, kind="stable")
    want = inst.chunk.astype(np.int64)[order] * 64 + inst.cell[order]
    assert (want == flat).mean() > 0.999


def test_bundle_export_formats_and_errors(world, tmp_path):
    res = run("bake", "--data", world, "--tile", "32,32", "--json")
    bundle = json.loads(res.stdout)["tiles"][0]["file"]
    res = run("bundle", "export", bundle)  # CSV on stdout by default
    assert res.exit_code == 0 and res.stdout.startswith("model,x,y,z,yaw,scale,tile_col,tile_row,chunk,cell\n")
    for args, text in [
        (["bundle", "export", bundle, "-o", tmp_path / "rows.txt"], ".csv"),
        (["bundle", "export", bundle, "--json", "-o", tmp_path / "rows.csv"], ".json"),
        (["bundle", "export", bundle, "-o", tmp_path / "nope" / "rows.csv"], "does not exist"),
        (["bake", "--data", world, "--tile", "32,32", "--export", tmp_path / "rows.xml"], "--export"),
    ]:
        res = run(*args)
        assert res.exit_code == 2 and text in res.stderr, (args, res.output)


# ----------------------------------------------------------------------------- single models, grass image


def test_m2_export_gltf_and_obj(realdata, tmp_path):
    from wowgrass.formats.m2 import M2Model

    src = realdata / "m2" / "v264" / "Rabbit.m2"
    out = tmp_path / "rabbit.glb"
    res = run("m2", "export", src, "--texture", realdata / "m2" / "v264" / "RabbitSkin.blp", "-o", out)
    assert res.exit_code == 0, res.output
    assert "154 vertices, 107 triangles, 1 texture)" in res.stderr
    doc = pygltflib.GLTF2().load(str(out))
    assert len(doc.meshes) == 1 and len(doc.images) == 1 and len(doc.nodes) == 1
    prim = doc.meshes[0].primitives
    pos = accessor(doc, prim[0].attributes.POSITION)
    m = M2Model.from_bytes(src.read_bytes(), str(src), read=lambda p: (src.parent / Path(p.replace("\\", "/")).name).read_bytes())
    np.testing.assert_allclose(from_gltf(pos), m.render_mesh().positions, atol=1e-6)
    assert sum(accessor(doc, p.indices).size for p in prim) == 321  # the skin's triangle indices
    # the format follows the suffix, or --format says it; anything else is an error
    res = run("m2", "export", src, "-o", tmp_path / "rabbit.obj")
    assert res.exit_code == 0 and (tmp_path / "rabbit.obj").read_text().count("\nf ") == 107
    for args, text in [(["-o", tmp_path / "r.fbx"], ".glb or .obj"),
                       (["--format", "gltf", "-o", tmp_path / "r.obj"], ".glb"),
                       (["-o", tmp_path / "missing" / "r.glb"], "does not exist")]:
        res = run("m2", "export", src, *args)
        assert res.exit_code == 2 and text in res.stderr, res.output


def test_adt_image_grass_dots_follow_the_placement(world, tmp_path):
    from PIL import Image

    out = tmp_path / "g.png"
    res = run("adt", "image", "--data", world, "--map", MAP_NAME, "--tile", "31,32", "--kind", "grass", "--size",
              256, "-o", out, "--json")
    assert res.exit_code == 0, res.output
    js = json.loads(res.stdout)
    assert js["file"] == str(out) and js["kind"] == "grass"
    img = np.asarray(Image.open(out).convert("RGB"))
    assert img.shape == (256, 256, 3)
    # every model of the legend shows as its colour; the dark relief itself is grey
    colours = {tuple(int(item["rgb"][i:i + 2], 16) for i in (1, 3, 5)) for item in js["legend"]}
    flat = img.reshape(-1, 3)
    found = {c for c in colours if (flat == c).all(axis=1).any()}
    assert found == colours and sum(i["count"] for i in js["legend"]) > 1000
    grey = (flat.max(axis=1) - flat.min(axis=1)) < 4
    assert 0.05 < grey.mean() < 0.95  # roads and bare ground stay visible between the dots
    # a JPEG when the suffix says so; an unknown suffix is an error, not a PNG under another name
    res = run("adt", "image", "--data", world, "--map", MAP_NAME, "--tile", "31,32", "-o", tmp_path / "h.jpg")
    assert res.exit_code == 0 and Image.open(tmp_path / "h.jpg").format == "JPEG"
    res = run("adt", "image", "--data", world, "--map", MAP_NAME, "--tile", "31,32", "-o", tmp_path / "h.xyz")
    assert res.exit_code == 2 and "suffix" in res.stderr


def test_adt_image_grass_of_a_real_tile_needs_tables(realdata, tmp_path):
    adt = realdata / "adt" / "continent4229.adt"
    res = run("adt", "image", adt, "--kind", "grass", "-o", tmp_path / "g.png")
    assert res.exit_code == 2 and "--dbc" in res.stderr and "--data" in res.stderr
    res = run("adt", "image", adt, "--kind", "grass", "--dbc", realdata / "dbc" / "3.3.5", "-o", tmp_path / "g.png",
              "--json")
    assert res.exit_code == 0, res.output
    assert len(json.loads(res.stdout)["legend"]) == 16


@pytest.mark.parametrize("args", [
    ["export", "gltf", "-o", "{tmp}/x.glb", "--tile", "99,1"],
    ["export", "gltf", "-o", "{tmp}/nope/x.glb"],
    ["export", "gltf", "-o", "{tmp}/x.glb", "--texture-size", "100"],
    ["export", "gltf", "{tmp}/bad.adt", "--dbc", "{tmp}", "-o", "{tmp}/x.glb"],
    ["export", "gltf", "{tmp}/bad.adt", "-o", "{tmp}/x.glb"],  # a real ADT without its tables
    ["bundle", "export", "{tmp}/bad.adt"],
    ["m2", "export", "{tmp}/bad.adt", "-o", "{tmp}/x.glb"],
    ["adt", "image", "{tmp}/bad.adt", "--kind", "grass", "-o", "{tmp}/x.png"],
])
def test_bad_input_exits_2_without_a_traceback(tmp_path, args):
    (tmp_path / "bad.adt").write_bytes(b"REVM\x04\0\0\0\x12\0\0\0garbage")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args]
    proc = subprocess.run([sys.executable, "-m", "wowgrass", *argv], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, (argv, proc.stdout, proc.stderr)
    assert proc.stderr.startswith("error: ") and "Traceback" not in proc.stderr, proc.stderr
