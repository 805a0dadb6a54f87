"""The Blender extension (issue 50): installed from its zip into a clean Blender user folder,
File > Import > WoW zone, the grass as one instanced point cloud per tile, cancel, bad tiles, the
panel's operators, uninstall; and ``wowgrass blender import``.

How Blender is found: the PyPI ``bpy`` module (5.0.1, CPython 3.11 only) in the Python that
``WOWGRASS_BPY_PYTHON`` names, else ``$WOWGRASS_BPY_VENV/bin/python``, else the ``.venv-bpy`` that
``make bpy`` makes beside the repository. Debian's Blender 3.4 predates the extension format (4.2),
so it is not tried. Where none is found the Blender tests skip, and under ``CI=true`` they fail
(``require_tool``; .ci/run makes the venv). Blender runs three times in all: one session
(``tests/blender_ext_session.py``) shared by the module's assertions, and two CLI runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import require_tool
from wowgrass.cli.main import cli

HERE = Path(__file__).parent
ROOT = HERE.parent
MAP = "WowgrassSample"


def bpy_python() -> str | None:
    """A Python with the bpy module (see the module docstring), or None."""
    venv = os.environ.get("WOWGRASS_BPY_VENV")
    for cand in (os.environ.get("WOWGRASS_BPY_PYTHON"), venv and str(Path(venv) / "bin" / "python"),
                 str(ROOT / ".venv-bpy" / "bin" / "python")):
        if cand and Path(cand).is_file():
            return cand
    return None


def need_bpy() -> str:
    return require_tool("bpy", "a Python 3.11 with the PyPI bpy module: `make bpy` (or WOWGRASS_BPY_PYTHON)",
                        found=bpy_python())


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    from wowgrass.samples import build_sample_world

    return build_sample_world(tmp_path_factory.mktemp("blender-world") / "w", "3.3.5", (2, 1), seed=0)


def _bundle_rows(args, cache: Path) -> dict:
    """``bake`` then ``bundle export --json`` in this process (its own cache: baked apart from Blender)."""
    env = dict(os.environ, WOWGRASS_CACHE=str(cache))
    bake = subprocess.run([sys.executable, "-m", "wowgrass", "bake", *map(str, args), "--json"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert bake.returncode == 0, bake.stderr
    doc = json.loads(bake.stdout)
    bundle = doc["tiles"][0]["file"] if "tiles" in doc else doc["file"]   # a map's tiles, or one file
    rows = subprocess.run([sys.executable, "-m", "wowgrass", "bundle", "export", bundle, "--json"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert rows.returncode == 0, rows.stderr
    return json.loads(rows.stdout)


@pytest.fixture(scope="module")
def session(world, tmp_path_factory):
    py = need_bpy()
    from wowgrass.blender.package import build_zip

    tmp = tmp_path_factory.mktemp("blender-session")
    zip_path = build_zip(tmp / "wowgrass-blender.zip")
    damaged = _damaged_layer(world, tmp / "damaged")
    rules = tmp / "project"
    rules.mkdir()
    (rules / "wowgrass-rules.toml").write_text("version = 1\n")
    imports = {
        "sample": {"directory": str(world), "more_data": str(rules), "tiles": "32,32", "placement": "client",
                   "clock": "12:00"},
        "damaged": {"directory": str(world), "more_data": str(damaged), "tiles": "31:32,32", "placement": "client",
                    "clock": "12:00"},
        "missing": {"directory": str(world), "tiles": "5,5"},
    }
    real = os.environ.get("WOWGRASS_REALDATA")
    if real and Path(real).is_dir():
        imports["real"] = {"adt_files": str(Path(real) / "adt" / "continent4229.adt"),
                           "dbc": str(Path(real) / "dbc" / "3.3.5"), "placement": "client"}
    out = tmp / "out"
    out.mkdir()
    job = tmp / "job.json"
    job.write_text(json.dumps({"zip": str(zip_path), "out": str(out), "imports": imports, "data": str(world)}))
    user = tmp / "user"   # a clean Blender user folder: nothing installed, nothing downloaded
    user.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(BLENDER_USER_RESOURCES=str(user), WOWGRASS_CACHE=str(tmp / "blender-cache"))
    proc = subprocess.run([py, str(HERE / "blender_ext_session.py"), "--", str(job)], env=env, capture_output=True,
                          text=True, timeout=900, cwd=tmp)
    report = out / "report.json"
    assert report.is_file(), proc.stdout[-4000:] + proc.stderr[-4000:]
    return {"report": json.loads(report.read_text()), "out": out, "log": proc.stdout + proc.stderr, "user": user,
            "tmp": tmp}


# ----------------------------------------------------------------------------- without Blender


def test_the_extension_reads_without_moderngl_glfw_pygltflib_or_pillow(tmp_path):
    """The add-on's path (zone arrays of a sample tile) in a Python where those imports fail."""
    code = r"""
import importlib.abc, json, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in {"moderngl", "glfw", "pygltflib", "PIL", "imgui_bundle", "rich", "click"}:
            raise ImportError("blocked " + name)
sys.meta_path.insert(0, Block())
from wowgrass.blender.zone import Zone, ZoneOptions
with Zone(ZoneOptions(data=[sys.argv[1]], tiles=["32,32"])) as z:
    t = z.terrain(32, 32); g = z.grass(32, 32); w, d = z.wmo_placements(32, 32)
    print(json.dumps({"tri": len(t.triangles), "points": len(g.positions), "stand_in": sum(g.stand_in),
                      "wmos": len(w), "water": len(z.water(32, 32, w)), "missing": sorted(z.missing_textures)}))
"""
    from wowgrass.samples import sample_data_path

    proc = subprocess.run([sys.executable, "-c", code, str(sample_data_path())], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, WOWGRASS_CACHE=os.environ["WOWGRASS_CACHE"]))
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads(proc.stdout)
    assert r["tri"] > 60000 and r["points"] > 1000 and r["stand_in"] == 0 and r["wmos"] == 1 and r["water"] >= 1
    assert r["missing"] == []   # the DXT textures decoded without Pillow too


def test_terrain_layer_weights_are_the_clients_lerps(world):
    """Each texel's weights sum to 1 (a layer covers it), and a single-layer chunk is all its texture."""
    from wowgrass.blender.zone import ALPHA_SIZE, WEIGHT_SIZE, Zone, ZoneOptions
    from wowgrass.export.ground import chunk_grid
    from wowgrass.render.sources.terrain_mesh import chunk_layers

    with Zone(ZoneOptions(data=[str(world)], tiles=["32,32"])) as z:
        t = z.terrain(32, 32)
        adt = z.adt(32, 32)[0]
    w = t.weights.transpose(0, 3, 1, 2).reshape(-1, WEIGHT_SIZE, WEIGHT_SIZE).astype(np.int64)
    total = w.sum(axis=0)
    assert np.abs(total - 255).max() <= 2
    lay, (iy, ix) = chunk_layers(adt), chunk_grid(adt)
    # the top layer of a chunk with two or more: its weight is its alpha (it is drawn over the rest)
    c = int(np.flatnonzero((lay >= 0).sum(axis=1) >= 2)[0])
    k = int(np.flatnonzero(lay[c] >= 0)[-1])
    rows = slice(WEIGHT_SIZE - (iy[c] + 1) * ALPHA_SIZE, WEIGHT_SIZE - iy[c] * ALPHA_SIZE)   # row 0 south
    cols = slice(ix[c] * ALPHA_SIZE, (ix[c] + 1) * ALPHA_SIZE)
    got = w[lay[c, k]][rows, cols][::-1]
    want = np.asarray(adt.alpha[c, k], np.int64)
    assert np.abs(got - want).max() <= 1


# ----------------------------------------------------------------------------- in Blender


def test_installs_from_the_zip_offline_enables_and_uninstalls(session):
    r = session["report"]
    assert r["install"] == ["FINISHED"]
    assert "bl_ext.user_default.wowgrass_zone" in r["addons"] and r["operator"]
    # wowgrass came from the zip's wheel into the clean user folder, without the heavy modules
    assert r["wowgrass_file"].startswith(str(session["user"]))
    assert r["heavy_modules"] == []
    assert r["uninstall"] == ["FINISHED"]
    assert "bl_ext.user_default.wowgrass_zone" not in r["addons_after"]
    assert not r["operator_after"] and not r["package_dir_after"]


def _compare_with_rows(npz: Path, origin, doc: dict):
    """Blender's points (local + origin) against ``bundle export`` rows: the same models, positions
    within a float32 ulp, the same yaw and scale."""
    d = np.load(npz)
    cols = doc["columns"]
    rows = doc["rows"]
    assert len(rows) == len(d["pos"]) > 0
    models = d["models"][d["model"]]
    # Blender keeps float32 positions relative to the zone's origin (world - origin): within a float32
    # ulp of those local values (and so in order with the rows' world values)
    local = d["pos"]
    world = (local.astype(np.float64) + np.asarray(origin)).astype(np.float32)
    want_pos = np.array([[r[cols.index(k)] for k in ("x", "y", "z")] for r in rows], np.float32)
    want_model = np.array([r[cols.index("model")] for r in rows])
    want_yaw = np.array([r[cols.index("yaw")] for r in rows], np.float64)
    want_scale = np.array([r[cols.index("scale")] for r in rows], np.float64)
    a = np.lexsort((world[:, 2], world[:, 1], world[:, 0], models))
    b = np.lexsort((want_pos[:, 2], want_pos[:, 1], want_pos[:, 0], want_model))
    assert (models[a] == want_model[b]).all()
    exact = want_pos[b].astype(np.float64) - np.asarray(origin)
    assert (np.abs(local[a].astype(np.float64) - exact) <= np.spacing(np.abs(local[a]))).all()
    yaw = np.degrees(d["yaw"][a].astype(np.float64))
    assert np.abs((yaw - want_yaw[b] + 180.0) % 360.0 - 180.0).max() < 1e-3
    assert np.abs(d["scale"][a] - want_scale[b]).max() < 1e-4


def test_grass_points_equal_bundle_export_on_the_sample_world(session, world, tmp_path):
    imp = session["report"]["imports"]["sample"]
    assert imp["result"] == ["FINISHED"]
    doc = _bundle_rows(["--data", world, "--tile", "32,32", "--placement", "client"], tmp_path / "cache")
    _compare_with_rows(session["out"] / "sample_32_32.npz", imp["origin"], doc)


def test_grass_points_equal_bundle_export_on_a_real_tile(session, realdata, tmp_path):
    imp = session["report"]["imports"]["real"]
    assert imp["result"] == ["FINISHED"]
    doc = _bundle_rows([realdata / "adt" / "continent4229.adt", "--dbc", realdata / "dbc" / "3.3.5", "--placement",
                        "client"], tmp_path / "cache")
    _compare_with_rows(session["out"] / "real_42_29.npz", imp["origin"], doc)
    # no models in the data: every grass model a stand-in, still instanced on every point
    t = imp["tiles"][0]
    assert t["instances"] == len(doc["rows"]) and t["wrong_model"] == 0


def test_a_tiles_grass_is_one_point_cloud_instanced_by_geometry_nodes(session):
    from wowgrass.blender import GRASS_GROUP

    imp = session["report"]["imports"]["sample"]
    t = imp["tiles"][0]
    assert t["kinds"] == ["Buildings", "Doodads", "Grass", "Terrain", "Water"]
    assert t["objects"]["Grass"] == 1 and t["modifiers"] == [["NODES", GRASS_GROUP]]
    assert t["realized_meshes"] == 0
    n = len(np.load(session["out"] / "sample_32_32.npz")["pos"])
    # every point an instance of its own model, at the point, turned by its yaw
    assert t["instances"] == n
    assert t["wrong_model"] == 0 and t["off_point"] == 0 and t["wrong_yaw"] == 0
    assert t["objects"]["Terrain"] == 1 and t["objects"]["Water"] >= 1
    assert t["weights_error"] < 1e-3   # the material's weight images hold the tile's layer weights
    # the tile is light: a few dozen objects, not one per instance
    assert imp["made"]["objects"] < 60


def test_everything_stands_on_the_terrain(session):
    for name in ("sample", "real") if "real" in session["report"]["imports"] else ("sample",):
        t = session["report"]["imports"][name]["tiles"][0]
        assert t["grass_sampled"] > 100
        lo, hi = t["grass_above_ground"]
        assert -0.05 < lo and hi < 0.05, (name, lo, hi)   # on the client's triangles
        assert t["placed_off_terrain"] == 0
        kinds = {k for k, _dz in t["placed"]}
        assert name == "real" or {"doodad", "wmo"} <= kinds
        for kind, dz in t["placed"]:
            assert -6.0 < dz < 2.0, (name, kind, dz)


def test_cancel_halfway_leaves_nothing(session):
    c = session["report"]["cancel"]
    assert c["mid"]["objects"] > c["before"]["objects"] and c["mid"]["images"] > c["before"]["images"]
    assert c["after"] == c["before"] and c["scene_children"] == 0


def test_bad_tiles_are_reported_not_raised(session):
    imps, log = session["report"]["imports"], session["log"]
    missing = imps["missing"]
    assert missing["result"] == ["CANCELLED"] and "5" in missing["error"]
    assert not any(missing["made"].values())
    damaged = imps["damaged"]   # the damaged tile left out with a warning, its neighbour imported
    assert damaged["result"] == ["FINISHED"]
    assert [t["tile"] for t in damaged["tiles"]] == [[32, 32]]
    assert "tile 31,32 left out" in log
    assert "Traceback" not in log


def test_panel_rescatters_hides_a_model_and_says_where_the_rules_are(session):
    p = session["report"]["panel"]
    assert p["found"] and p["same_object"]
    # without the client's draw capacity the tile keeps what the capacity dropped
    assert p["points_no_capacity"] > p["points_before"]
    assert p["shown_after_hide"] == p["points_no_capacity"] - p["hidden_model0"] and p["hidden_model0"] > 0
    try:
        import wowgrass.edit.rules  # noqa: F401
    except ImportError:
        assert "no rules engine" in str(p["rules"])
    else:
        assert p["rules"] in (["FINISHED"], ["CANCELLED"]) or "RuntimeError" in p["rules"]


def test_cli_blender_import_writes_a_blend_and_reports_a_bad_tile(world, tmp_path):
    py = need_bpy()
    out = tmp_path / "zone.blend"
    res = run("blender", "import", "--data", world, "--tile", "32,32", "--placement", "client", "-o", out, "--bpy", py,
              "--json")
    assert res.exit_code == 0, res.output
    r = json.loads(res.stdout)
    assert out.stat().st_size > 1_000_000 and r["tiles"] == [[32, 32]] and r["grass_point_count"] > 1000
    assert r["missing_models"] == [] and r["light"] == "tables"
    bad = run("blender", "import", "--data", world, "--tile", "5,5", "-o", tmp_path / "bad.blend", "--bpy", py)
    assert bad.exit_code == 2 and "error:" in bad.output and "Traceback" not in bad.output
    assert not (tmp_path / "bad.blend").exists()


def test_bcn_decode_in_numpy_equals_pillows():
    """Blender's Python has no Pillow: formats/dxt.py decodes BC1-3 itself, byte for byte as Pillow
    (random blocks take every mode: 3-colour BC1 with its transparent texel, both BC3 alpha modes)."""
    from PIL import Image

    from wowgrass.formats.dxt import decode_bcn

    rng = np.random.default_rng(7)
    for n, block in ((1, 8), (2, 16), (3, 16)):
        raw = rng.integers(0, 256, block * 64, dtype=np.uint8).tobytes()
        want = np.array(Image.frombytes("RGBA", (32, 32), raw, "bcn", n))
        assert (decode_bcn(raw, 32, 32, n) == want).all(), n
    raw = rng.integers(0, 256, 8 * 4, dtype=np.uint8).tobytes()   # a 6x5 mip: blocks cut at the edge
    assert (decode_bcn(raw, 6, 5, 1) == np.array(Image.frombytes("RGBA", (6, 5), raw, "bcn", 1))).all()


def _damaged_layer(world, folder: Path) -> Path:
    """A loose folder holding a copy of tile 31,32 cut short, to lay over the sample world."""
    from wowgrass.game.data import open_data
    from wowgrass.game.tiles import adt_game_path

    with open_data(world) as data:
        raw = data.read(adt_game_path(MAP, 31, 32))
    adt = folder / "World" / "Maps" / MAP / f"{MAP}_31_32.adt"
    adt.parent.mkdir(parents=True)
    adt.write_bytes(raw[: len(raw) // 3])
    return folder


def test_in_a_window_the_import_shows_progress_cancels_on_esc_and_logs_a_bad_tile(world, tmp_path):
    """Debian's Blender 3.4 in a private Xvfb, the add-on registered from this checkout (3.4 cannot
    install extensions; the code is the same): the modal import, Esc from xdotool after the first
    tile, then an import to the end whose damaged tile is a warning in the info log."""
    from xvfb import private_xvfb, x_env

    from wowgrass.cli.blender import _package_path

    blender = require_tool("blender", "Debian: apt-get install blender python3-numpy (.ci/run installs it)")
    xvfb = require_tool("Xvfb", "apt-get install xvfb xdotool (.ci/run installs it)")
    require_tool("xdotool", "apt-get install xdotool (.ci/run installs it)")
    damaged = _damaged_layer(world, tmp_path / "damaged")
    job = {"path": str(_package_path(tmp_path)), "report": str(tmp_path / "report.json"),
           "screenshot": str(tmp_path / "window.png"),
           "cancel_import": {"directory": str(world), "tiles": "31:32,32", "placement": "client", "clock": "12:00"},
           "full_import": {"directory": str(world), "more_data": str(damaged), "tiles": "31:32,32",
                           "placement": "client", "clock": "12:00"}}
    (tmp_path / "job.json").write_text(json.dumps(job))
    with private_xvfb(xvfb, (1280, 800)) as display:
        env = {k: v for k, v in x_env(display).items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        env.update(WOWGRASS_CACHE=str(tmp_path / "cache"), BLENDER_USER_CONFIG=str(tmp_path / "config"))
        proc = subprocess.run([blender, "--factory-startup", "-noaudio", "--window-geometry", "0", "0", "1280", "800",
                               "--python", str(HERE / "blender_window_session.py"), "--", str(tmp_path / "job.json")],
                              env=env, capture_output=True, text=True, timeout=600)
    assert (tmp_path / "report.json").is_file(), proc.stdout[-3000:] + proc.stderr[-3000:]
    r = json.loads((tmp_path / "report.json").read_text())
    assert "timeout_in" not in r, r
    assert r["started"] == ["RUNNING_MODAL"] and r["status_seen"]
    assert r["mid"]["objects"] > r["before"]["objects"]
    assert not r.get("cancel_ignored") and r["after_cancel"] == r["before"]   # Esc: nothing stays
    assert r["started_full"] == ["RUNNING_MODAL"]
    assert r["tiles"] == ["WowgrassSample 32_32"]
    assert "tile 31,32 left out" in r["reports"] and "WoW zone: 1 tile(s) of WowgrassSample" in r["reports"]
    assert "Traceback" not in proc.stdout + proc.stderr
    assert (tmp_path / "window.png").stat().st_size > 10_000
