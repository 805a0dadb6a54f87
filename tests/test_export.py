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
from wowgrass.cli.main import cli

from wowgrass.grass.bundle import read_bundle, unpack_instances
from wowgrass.export.gltf import matrices_to_trs, rotation_quaternions, to_gltf, yaw_quaternions
from wowgrass.samples import MAP_NAME, build_sample_world

HERE = Path(__file__).parent
# few instances per tile keep the files small and Blender quick
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


def grass_nodes(doc):
    """model path -> (translations, rotations, scales) of every grass group, any instancing mode."""
    out = {}
    for nd in doc.nodes:
        if (nd.extras or {}).get("kind") != "grass":
            continue
        model = nd.extras["model"]
        ext = (nd.extensions or {}).get("EXT_mesh_gpu_instancing")
        if ext:
            a = ext["attributes"]
            t, r, s = (accessor(doc, a[k]) for k in ("TRANSLATION", "ROTATION", "SCALE"))
        else:
            kids = [doc.nodes[i] for i in nd.children]
            t = np.array([k.translation for k in kids], np.float32).reshape(-1, 3)
            r = np.array([k.rotation for k in kids], np.float32).reshape(-1, 4)
            s = np.array([k.scale for k in kids], np.float32).reshape(-1, 3)
        out.setdefault(model, []).append((t, r, s))
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
    res = run("export", "gltf", "--data", world, "--tile", "31:32,32", *SPARSE, "--instancing", mode, "-o", out,
              "--json")
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["file"] == str(out) and summary["tiles"] == [[31, 32], [32, 32]]
    doc = pygltflib.GLTF2().load(str(out))
    assert doc.asset.version == "2.0"
    if mode == "ext":
        assert "EXT_mesh_gpu_instancing" in doc.extensionsUsed
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
        t = np.concatenate([t for t, _, _ in got[model]])
        r = np.concatenate([r for _, r, _ in got[model]])
        s = np.concatenate([s for _, _, s in got[model]])
        assert len(t) == len(pos) > 0
        np.testing.assert_allclose(from_gltf(t.astype(np.float64)) + origin, pos, atol=2e-3)
        np.testing.assert_allclose(r, yaw_quaternions(yaw), atol=1e-6)
        np.testing.assert_allclose(s[:, 0], scale)
    # each model's mesh once, shared by every tile's group
    names = [m.name for m in doc.meshes]
    assert len(names) == len(set(names))
    # the terrain of both tiles, with their baked textures
    assert sum(m.name.startswith("terrain") for m in doc.meshes) == 2
    assert len(doc.images) >= 2 and all(i.mimeType == "image/png" for i in doc.images)


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
    assert sum(len(t) for v in grass_nodes(doc).values() for t, _, _ in v) == s["grass_instance_count"]


def _validator():
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (CI installs it with the Khronos glTF validator)")
    env = dict(os.environ)
    root = subprocess.run(["npm", "root", "-g"], capture_output=True, text=True).stdout.strip() if shutil.which(
        "npm") else ""
    env["NODE_PATH"] = os.pathsep.join(p for p in (env.get("NODE_PATH", ""), root) if p)
    probe = subprocess.run([node, "-e", "require('gltf-validator')"], env=env, capture_output=True)
    if probe.returncode != 0:
        pytest.skip("the Khronos glTF validator is not installed (npm install -g gltf-validator)")
    return node, env


def test_khronos_validator_reports_no_errors(world, realdata, tmp_path):
    node, env = _validator()
    files = []
    for args in (
        ["--data", world, "--tile", "31:32,32", *SPARSE],
        ["--data", world, "--tile", "31,32", *SPARSE, "--instancing", "nodes", "--origin", "world"],
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


def test_blender_imports_an_exported_tile(world, tmp_path):
    blender = shutil.which("blender")
    if blender is None:
        pytest.skip("blender is not installed (Debian: apt-get install blender)")
    out = tmp_path / "b.glb"
    res = run("export", "gltf", "--data", world, "--tile", "31,32", *SPARSE, "--instancing", "nodes", "-o", out,
              "--json")
    assert res.exit_code == 0, res.output
    s = json.loads(res.stdout)
    report = tmp_path / "blender.json"
    cmd = [blender, "-b", "--factory-startup", "--python", str(HERE / "blender_import.py"), "--", str(out), str(report)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert report.is_file(), proc.stdout[-3000:] + proc.stderr[-3000:]
    r = json.loads(report.read_text())
    # one object per grass instance and per doodad, the terrain, and the group empties
    assert sum(n for name, n in r["mesh_users"].items() if not name.startswith("terrain")) == (
        s["grass_instance_count"] + s["doodad_instance_count"])
    assert r["mesh_users"].get("terrain 31_32") == 1
    assert r["images"] >= 2


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
    assert doc["files"] == [bundle] and doc["count"] == len(doc["rows"]) == len(rows) - 1
    with read_bundle(bundle) as b:
        assert doc["count"] == b.instance_count
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
