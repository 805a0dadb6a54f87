"""The command line's edges, round three (issue 42): closed pipes, global options, JSON key names,
overwrite and unwritable outputs, exports of odd models, patch building, table display, maps and
doctor. Real subprocesses where a pipe is the point, CliRunner elsewhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from wowgrass.cli.main import cli
from wowgrass.samples import MAP_NAME, build_sample_world

REAL = os.environ.get("WOWGRASS_REALDATA")


def real(*parts) -> Path:
    if not REAL or not Path(REAL).is_dir():
        pytest.skip("WOWGRASS_REALDATA is not set (real client files)")
    p = Path(REAL).joinpath(*parts)
    assert p.exists(), p
    return p


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return build_sample_world(tmp_path_factory.mktemp("edges") / "w", "3.3.5", (1, 1), seed=0)


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _closed_pipe(*args):
    """The command with stdout a pipe whose reader has gone (what `| head -1` leaves)."""
    r, w = os.pipe()
    os.close(r)
    try:
        return subprocess.run([sys.executable, "-m", "wowgrass", *map(str, args)], stdout=w,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(w)


# ----------------------------------------------------------------------------- 42.8 closed pipes

@pytest.mark.parametrize("args", [
    ("dbc", "info", "--data", "{world}", "GroundEffectTexture"),
    ("dbc", "show", "--data", "{world}", "GroundEffectDoodad", "--id", "4"),
])
def test_rich_tables_on_a_closed_pipe_exit_0_silently(world, args):
    """rich's own closed-pipe handling exits 1; the tables go through the one handler as all output."""
    proc = _closed_pipe(*(a.format(world=world) for a in args))
    assert (proc.returncode, proc.stderr) == (0, "")


# ----------------------------------------------------------------------------- 42.13 global options

def test_quiet_and_verbose_before_the_command(world):
    r = run("-q", "maps", "--data", world)
    assert r.exit_code == 0, r.output
    assert MAP_NAME in r.stdout
    loud = run("-v", "maps", "--data", world)
    assert loud.exit_code == 0, loud.output
    assert "info " in loud.stderr          # -v's detail lines ("info wowgrass...: ...")
    assert "info " not in run("maps", "--data", world).stderr


def test_a_global_quiet_does_not_leak_into_the_next_command_line(world):
    assert run("-q", "maps", "--data", world).exit_code == 0
    assert "info " in run("maps", "-v", "--data", world).stderr


def test_the_group_lists_every_command():
    from wowgrass.cli.main import COMMANDS

    r = run("--help")
    assert r.exit_code == 0
    for name in COMMANDS:
        assert f"  {name} " in r.stdout, name


# ----------------------------------------------------------------------------- 42.11 unwritable outputs

UNWRITABLE = ["/proc/edges-test.png", "/proc/1/cwd/edges-test.png"]


@pytest.mark.parametrize("target", UNWRITABLE)
def test_an_unwritable_image_names_itself_and_the_reason(world, target):
    r = run("adt", "image", "--data", world, "--tile", "32,32", "-o", target)
    assert r.exit_code == 2
    assert r.stderr.startswith(f"error: cannot write {target}: ") and ".tmp" not in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1


def test_view_checks_its_output_before_rendering(world, monkeypatch):
    import wowgrass.render.app as app

    def no_render(*a, **k):
        raise AssertionError("rendered before checking the output")

    monkeypatch.setattr(app, "run_view", no_render)
    r = run("view", "--data", world, "--output", "/proc/edges-view.png", "--frames", "1")
    assert r.exit_code == 2 and r.stderr.startswith("error: cannot write /proc/edges-view.png: "), r.stderr


def test_mpq_extract_checks_the_folder_before_reading(world):
    r = run("mpq", "extract", "--data", world, "-o", "/proc/edges-extract")
    assert r.exit_code == 2
    assert r.stderr == "error: cannot write /proc/edges-extract: the folder above takes no new folders\n" or (
        r.stderr.startswith("error: cannot write /proc/edges-extract: ") and r.stderr.count("\n") == 1), r.stderr


def test_write_atomic_names_the_target_not_its_temporary(tmp_path):
    from wowgrass.errors import OutputError
    from wowgrass.fileio import check_output_file, write_atomic

    with pytest.raises(OutputError) as e:
        write_atomic("/proc/edges-atomic.bin", b"x")
    assert e.value.filename == "/proc/edges-atomic.bin" and ".tmp" not in str(e.value)
    with pytest.raises(OutputError, match="does not exist"):
        check_output_file(tmp_path / "nope" / "x.bin")
    assert check_output_file(tmp_path / "x.bin") is False and list(tmp_path.iterdir()) == []
    (tmp_path / "x.bin").write_bytes(b"1")
    assert check_output_file(tmp_path / "x.bin") is True


# ----------------------------------------------------------------------------- 42.10 one overwrite rule

@pytest.mark.parametrize("command", [
    ("adt", "image", "--data", "{world}", "--tile", "32,32", "-o", "{out}.png"),
    ("export", "gltf", "--data", "{world}", "--tile", "32,32", "-o", "{out}.glb"),
    ("effects", "audit", "--data", "{world}", "-o", "{out}.png"),
    ("dbc", "dump", "--data", "{world}", "GroundEffectDoodad", "-o", "{out}.csv"),
])
def test_every_output_is_replaced_and_said(world, tmp_path, command):
    out = tmp_path / "out"
    args = [a.format(world=world, out=out) for a in command]
    target = Path(args[-1])
    target.write_bytes(b"old")
    r = run(*args)
    assert r.exit_code == 0, r.output
    assert f"note: {target} exists: replacing it" in r.stderr
    assert target.read_bytes() != b"old"


# ----------------------------------------------------------------------------- 42.13 JSON keys, messages

def test_bundle_export_names_both_suffixes(tmp_path):
    r = run("bundle", "export", __file__, "-o", tmp_path / "x.txt")
    assert r.exit_code == 2 and ".csv or .json" in r.stderr, r.stderr


def test_blp_convert_json(tmp_path):
    src = real("blp", "WHITE8X8.blp")
    r = run("blp", "convert", src, "-o", tmp_path / "w.png", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert (doc["width"], doc["height"], doc["mip"], doc["format"]) == (8, 8, 0, "PNG")
    assert doc["file"] == str(tmp_path / "w.png") and doc["mip_level_count"] >= 1
    back = run("blp", "convert", tmp_path / "w.png", "-o", tmp_path / "w.blp", "--encoding", "dxt1", "--json")
    assert back.exit_code == 0, back.output
    doc = json.loads(back.stdout)
    assert (doc["width"], doc["encoding"], doc["size"]) == (8, "dxt1", (tmp_path / "w.blp").stat().st_size)


def test_adt_info_json_names_the_file_and_counts_chunks(world):
    r = run("adt", "info", "--data", world, "--tile", "32,32", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["file"].lower().endswith(f"{MAP_NAME}_32_32.adt".lower())
    assert {"MVER": 1, "MCNK": 256}.items() <= {c["id"]: c["chunk_count"] for c in doc["chunks"]}.items()
    assert all("count" not in c for c in doc["chunks"]) and doc["mcnk"]["chunk_count"] == 256


def test_adt_info_escapes_an_empty_chunk_name(tmp_path):
    """42.12: a padding chunk named with four NUL bytes is printed escaped, never raw."""
    import struct

    adt = real("adt", "Azeroth_38_46.adt").read_bytes()
    path = tmp_path / "padded.adt"
    path.write_bytes(adt + b"\0\0\0\0" + struct.pack("<I", 0))
    r = run("adt", "info", path)
    assert r.exit_code == 0, r.output
    assert "\0" not in r.stdout and "\\x00\\x00\\x00\\x00" in r.stdout
    doc = json.loads(run("adt", "info", path, "--json").stdout)
    assert doc["chunks"][-1] == {"id": "\\x00\\x00\\x00\\x00", "chunk_count": 1, "bytes": 0}


def test_bundle_info_cells_count(world, tmp_path):
    from wowgrass.grass.bundle import read_bundle

    cache = tmp_path / "cache"
    r = CliRunner(env={"WOWGRASS_CACHE": str(cache)}).invoke(cli, ["bake", "--data", str(world), "--json"])
    assert r.exit_code == 0, r.output
    (bundle,) = [p for p in cache.rglob("*.wgb")]
    doc = json.loads(run("bundle", "info", bundle, "--json").stdout)
    assert doc["cells"]["cell_count"] == 256 * 64 and "total" not in doc["cells"]
    with read_bundle(bundle) as b:
        n = b.instance_count
    out = tmp_path / "rows.json"
    out.write_text("old")
    r = run("bundle", "export", bundle, "-o", out)
    assert r.exit_code == 0 and json.loads(out.read_text())["row_count"] == n
    assert f"note: {out} exists: replacing it" in r.stderr


# ----------------------------------------------------------------------------- 42.14 dbc show / dump

def _wdbc_field(path: Path, row: int, field: int) -> int:
    """A record's field read straight from the file (header 20 B, record size from the header)."""
    import struct

    data = path.read_bytes()
    _magic, _n, _fields, size, _strings = struct.unpack_from("<4sIIII", data)
    return struct.unpack_from("<I", data, 20 + row * size + field * 4)[0]


def test_dbc_show_takes_the_build_from_the_tables_beside_it_and_prints_colours_in_hex(tmp_path):
    src = real("dbc", "3.3.5", "LightIntBand.dbc")
    r = run("dbc", "show", src, "--id", "1")
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0].endswith("(LightIntBand 3.3.5)"), r.stdout.splitlines()[0]
    colour = _wdbc_field(src, 0, 18)                    # ID, Num, Time[16], then Data[0]
    assert f"Data[0]  │ #{colour & 0xFFFFFF:06x}" in r.stdout
    assert f"│ {colour} " not in r.stdout
    doc = json.loads(run("dbc", "show", src, "--id", "1", "--json").stdout)
    assert doc["build"] == "3.3.5" and doc["row"]["Data"][0] == colour       # JSON keeps the number
    alone = tmp_path / "LightIntBand.dbc"                 # nothing beside it: the build is not guessed
    alone.write_bytes(src.read_bytes())
    r = run("dbc", "show", alone, "--id", "1")
    assert "build unknown" in r.stdout.splitlines()[0] and "1.12)" not in r.stdout.splitlines()[0]
    assert json.loads(run("dbc", "show", alone, "--id", "1", "--json").stdout)["build"] is None


def test_dbc_dump_area_table_names_its_columns(tmp_path):
    import csv

    src = real("dbc", "3.3.5", "AreaTable.dbc")
    out = tmp_path / "area.csv"
    r = run("dbc", "dump", src, "-o", out)
    assert r.exit_code == 0, r.output
    rows = list(csv.reader(out.open(encoding="utf-8")))
    head = rows[0]
    assert len(head) == 36 and len(rows) == 2307 + 1                     # the shared README's 2,307 x 36
    assert head[:3] == ["ID", "ContinentID", "ParentAreaID"] and head[-1] == "LightID"
    assert not any(h.startswith("field") for h in head)
    # the first row's English name, read from the string block by hand (field 11 = AreaName_lang[0])
    data = src.read_bytes()
    n, fields, size = (int.from_bytes(data[4 + 4 * k:8 + 4 * k], "little") for k in range(3))
    block = data[20 + n * size:]
    off = _wdbc_field(src, 0, 11)
    assert rows[1][head.index("AreaName_lang[0]")] == block[off:block.index(b"\0", off)].decode("utf-8")
    assert rows[1][head.index("ID")] == str(_wdbc_field(src, 0, 0))


# ----------------------------------------------------------------------------- 42.4 / 42.12 m2 export

def _glb_doc(path):
    import pygltflib

    return pygltflib.GLTF2.load(str(path))


def test_m2_export_glb_writes_each_triangle_once_as_obj_does(tmp_path):
    """An environment map's reflection batch over a submesh's triangles: the .glb drew them twice."""
    from test_reliability import _two_batch_model

    p = _two_batch_model(tmp_path, 1, 4)      # submesh 0: alpha-keyed base + additive reflection
    glb = run("m2", "export", p, "-o", tmp_path / "two.glb", "--json", "--no-textures")
    obj = run("m2", "export", p, "-o", tmp_path / "two.obj", "--json", "--no-textures")
    assert glb.exit_code == obj.exit_code == 0, glb.output + obj.output
    assert json.loads(glb.stdout)["triangle_count"] == json.loads(obj.stdout)["triangle_count"] == 4
    doc = _glb_doc(tmp_path / "two.glb")
    counts = [doc.accessors[pr.indices].count for pr in doc.meshes[0].primitives]
    assert sum(counts) == 12 and len(counts) == 2        # one primitive for each submesh's triangles


def test_m2_export_glb_warns_of_missing_textures_as_obj_does(tmp_path):
    from test_reliability import _two_batch_model

    p = _two_batch_model(tmp_path, 0, 4)                 # a.blp is not beside it
    for suffix in ("glb", "obj"):
        r = run("m2", "export", p, "-o", tmp_path / f"two.{suffix}")
        assert r.exit_code == 0, r.output
        assert "warning: texture a.blp not found; batch 0 has no map" in r.stderr, (suffix, r.stderr)


def test_m2_export_of_a_model_without_geometry_is_valid_gltf(tmp_path):
    """Spell effects are particle emitters only: no vertices. A node with the model's extras, no mesh."""
    from test_export import _validator
    from wowgrass.formats.m2 import make_vertices, write_m2

    import numpy as np

    m2, skin = write_m2(make_vertices(np.zeros((0, 3), np.float32)), [], name="Spell", version=264)
    (tmp_path / "Spell.m2").write_bytes(m2)
    (tmp_path / "Spell00.skin").write_bytes(skin)
    out = tmp_path / "spell.glb"
    r = run("m2", "export", tmp_path / "Spell.m2", "-o", out)
    assert r.exit_code == 0, r.output
    assert "has no geometry" in r.stderr and "node without a mesh" in r.stderr
    doc = _glb_doc(out)
    assert doc.meshes == [] and doc.buffers == [] and doc.accessors == []
    assert doc.nodes[0].mesh is None and doc.nodes[0].extras["name"] == "Spell"
    node, env = _validator()
    proc = subprocess.run([node, str(Path(__file__).parent / "gltf_validate.js"), str(out)], env=env,
                          capture_output=True, text=True, timeout=120)
    report = json.loads(proc.stdout)
    assert report["errors"] == 0 and report["warnings"] == 0, report


# ----------------------------------------------------------------------------- 42.15 maps, doctor, cache

def test_maps_says_what_a_loose_adt_at_the_top_is_and_how_to_view_it(tmp_path):
    adt = tmp_path / "continent4229.adt"
    adt.write_bytes(real("adt", "continent4229.adt").read_bytes())
    r = run("maps", tmp_path)
    assert r.exit_code == 0, r.output
    assert "0 maps" in r.stdout
    assert "continent4229.adt" in r.stderr and "outside World/Maps/<map>/" in r.stderr
    assert f"wowgrass view {adt}" in r.stderr
    doc = json.loads(run("maps", tmp_path, "--json").stdout)
    assert [(i["folder"], i["file"]) for i in doc["ignored_adts"]] == [("", "continent4229.adt")]


def test_a_zero_padded_tile_name_is_no_tile_name_for_maps_and_view_alike(tmp_path, monkeypatch):
    """One rule (the client's): Azeroth_038_046.adt is not a tile name. `maps` says so; `view` of
    the file alone takes its tile from its chunks, and says why."""
    import wowgrass.cli.view as V
    from wowgrass.game.tiles import tile_from_name

    folder = tmp_path / "World" / "Maps" / "Azeroth"
    folder.mkdir(parents=True)
    padded = folder / "Azeroth_038_046.adt"
    padded.write_bytes(real("adt", "Azeroth_38_46.adt").read_bytes())
    doc = json.loads(run("maps", tmp_path, "--json").stdout)
    (ignored,) = doc["ignored_adts"]
    assert ignored["file"] == "Azeroth_038_046.adt" and "zero-padded" in ignored["reason"]
    assert tile_from_name(padded) == ("Azeroth", None)
    assert tile_from_name(folder / "Azeroth_38_46.adt") == ("Azeroth", (38, 46))
    said = []
    monkeypatch.setattr(V, "note", said.append)
    _data, map_name, tiles, _dbc, files = V._loose_input(str(padded), None, str(real("dbc", "1.12")), None, ())
    assert (map_name, tiles) == ("Azeroth", ("38,46",))     # the chunks' position: column 38, row 46 (README)
    assert list(files.values()) == [padded]
    assert any("zero-padded" in n and "from its chunks" in n for n in said), said


def _loose_map(tmp_path):
    root = tmp_path / "data"
    maps = root / "World" / "Maps" / "continent"
    maps.mkdir(parents=True)
    (maps / "continent_42_29.adt").write_bytes(real("adt", "continent4229.adt").read_bytes())
    (maps / "continent.wdt").write_bytes(real("adt", "continent.wdt").read_bytes())
    dbc = root / "DBFilesClient"
    dbc.mkdir()
    for t in ("GroundEffectTexture", "GroundEffectDoodad"):
        (dbc / f"{t}.dbc").write_bytes(real("dbc", "3.3.5", f"{t}.dbc").read_bytes())
    return root


def _doctor_data(root, *extra):
    r = run("doctor", "--data", root, "--json", *extra)
    (data,) = [c for c in json.loads(r.stdout)["checks"] if c["check"] == "data"]
    return r.exit_code, data


def test_doctor_reports_light_tables_without_their_bands(tmp_path):
    root = _loose_map(tmp_path)
    code, data = _doctor_data(root)
    assert data["ok"] and "no light tables" in data["detail"] and "liquids of 1 tile read" in data["detail"]
    (root / "DBFilesClient" / "Light.dbc").write_bytes(real("dbc", "3.3.5", "Light.dbc").read_bytes())
    code, data = _doctor_data(root)
    assert code == 1 and not data["ok"]
    assert "lack LightParams.dbc, LightIntBand.dbc, LightFloatBand.dbc" in data["detail"]
    for t in ("LightParams", "LightIntBand", "LightFloatBand"):
        (root / "DBFilesClient" / f"{t}.dbc").write_bytes(real("dbc", "3.3.5", f"{t}.dbc").read_bytes())
    code, data = _doctor_data(root)
    assert data["ok"] and "light tables read (715 lights)" in data["detail"]     # the README's 715 rows


def test_doctor_reports_a_tile_whose_liquid_does_not_parse(tmp_path):
    import struct

    import numpy as np

    from wowgrass.formats.chunks import iter_chunks

    root = _loose_map(tmp_path)
    tile = root / "World" / "Maps" / "continent" / "continent_42_29.adt"
    raw = bytearray(tile.read_bytes())
    (mh2o,) = [c for c in iter_chunks(raw) if c.tag == b"MH2O"]
    headers = np.frombuffer(bytes(raw[mh2o.data_offset:mh2o.data_offset + 256 * 12]), "<u4").reshape(256, 3)
    chunk = int(np.flatnonzero(headers[:, 1])[0])       # the first chunk with a liquid layer (README: 9 of them)
    struct.pack_into("<I", raw, mh2o.data_offset + chunk * 12, mh2o.size + 1000)   # its instances: past the chunk
    tile.write_bytes(raw)
    code, data = _doctor_data(root)
    assert code == 1 and not data["ok"]
    assert "1 tile whose liquid does not parse: continent 42,29" in data["detail"] and "MH2O" in data["detail"]
    code, data = _doctor_data(root, "--no-tiles")
    assert data["ok"] and "liquids of" not in data["detail"]


def test_cache_ls_names_every_data_folder_and_the_build_of_loose_files(world, tmp_path):
    loose = tmp_path / "loose"
    assert run("mpq", "extract", "--data", world, "-o", loose, "-q").exit_code == 0
    env = {"WOWGRASS_CACHE": str(tmp_path / "cache")}
    runner = CliRunner(env=env)
    assert runner.invoke(cli, ["bake", "--data", str(world), "-q"]).exit_code == 0
    r = runner.invoke(cli, ["export", "gltf", "--data", str(loose), "-o", str(tmp_path / "x.glb"), "-q"])
    assert r.exit_code == 0, r.output
    doc = json.loads(runner.invoke(cli, ["cache", "ls", "--json"]).stdout)
    (entry,) = [e for e in doc["entries"] if e["kind"] == "bundles"]
    sources = {Path(s["data"]).resolve(): s["build"] for s in entry["sources"]}
    assert sources == {Path(world).resolve(): "3.3.5", loose.resolve(): "3.3.5"}
    text = runner.invoke(cli, ["cache", "ls"]).stdout
    assert "build unknown" not in text and str(loose.resolve()) in text


# ----------------------------------------------------------------------------- 42.16 the first frame

def test_the_default_camera_over_a_tile_without_grass_frames_the_ground(tmp_path):
    """continent4229.adt read with the 1.12 tables: its 3.3.5 effect ids name no grass. Eye height
    over that bare tile looked into a hillside (3% of the tile's vertices within 30 degrees of the
    view's axis); the first frame now looks down across the tile."""
    import math

    import numpy as np

    from wowgrass.game.tiles import read_adt

    adt = real("adt", "continent4229.adt")
    r = run("view", adt, "--dbc", real("dbc", "1.12"), "-o", tmp_path / "f.png", "--size", "96x54", "--json",
            "--samples", "0", "-q")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    pos, yaw, pitch = np.array(doc["camera"]), math.radians(doc["yaw_deg"]), math.radians(doc["pitch_deg"])
    axis = np.array([math.cos(pitch) * math.cos(yaw), math.cos(pitch) * math.sin(yaw), math.sin(pitch)])
    ground = read_adt(adt.read_bytes(), str(adt)).vertex_positions().reshape(-1, 3)
    to = ground - pos
    to /= np.linalg.norm(to, axis=1)[:, None]
    seen = float((np.degrees(np.arccos(np.clip(to @ axis, -1, 1))) < 30).mean())
    assert seen > 0.5, (seen, doc["camera"], doc["yaw_deg"], doc["pitch_deg"])
    assert pitch < 0 and pos[2] > ground[:, 2].max()            # above the tile, looking down at it
