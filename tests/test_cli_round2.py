"""The command line, round two (issue 33): closed pipes, Ctrl-C, -v, warnings that go on, why a
tile has no grass, names maps skip, WMO triangle counts, conventions, JSON keys, messages, the
cache. Real subprocesses where a signal or a pipe is the point, CliRunner elsewhere."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from wowgrass.cli.main import cli
from wowgrass.formats.adt import TILE_SIZE, AdtTile, write_adt
from wowgrass.grass.bundle import read_bundle
from wowgrass.samples import MAP_NAME, build_sample_world


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return build_sample_world(tmp_path_factory.mktemp("round2") / "w", "3.3.5", (2, 1), seed=0)


@pytest.fixture(scope="module")
def loose(world, tmp_path_factory):
    """The sample world extracted to loose files (tables, models, both ADTs and the WDT)."""
    out = tmp_path_factory.mktemp("round2-loose") / "x"
    res = CliRunner().invoke(cli, ["mpq", "extract", "--data", str(world), "-o", str(out), "-q"])
    assert res.exit_code == 0, res.output
    return out


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def sub(*args, **kw):
    return subprocess.run([sys.executable, "-m", "wowgrass", *map(str, args)], capture_output=True, text=True,
                          timeout=120, **kw)


def map_dir(loose: Path) -> Path:
    return loose / "World" / "Maps" / MAP_NAME


# ----------------------------------------------------------------------------- 1. closed pipes


def _closed_pipe(*args):
    """The command with stdout a pipe whose reader has gone (what `| head -1` leaves)."""
    r, w = os.pipe()
    os.close(r)
    try:
        proc = subprocess.run([sys.executable, "-m", "wowgrass", *map(str, args)], stdout=w, stderr=subprocess.PIPE,
                              text=True, timeout=120)
    finally:
        os.close(w)
    return proc


@pytest.mark.parametrize("args", [
    ("mpq", "ls", "--data", "{world}"),
    ("maps", "--json", "--data", "{world}"),
    ("dbc", "dump", "--data", "{world}", "GroundEffectDoodad"),
    ("mpq", "cat", "--data", "{world}", "DBFilesClient\\Map.dbc"),
    ("adt", "info", "--data", "{world}", "--tile", "31,32"),
])
def test_a_closed_pipe_is_silent_and_exits_0(world, args):
    proc = _closed_pipe(*(a.format(world=world) for a in args))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "", proc.stderr


# ----------------------------------------------------------------------------- 2. Ctrl-C, SIGTERM


@pytest.fixture(scope="module")
def many_tiles(loose, tmp_path_factory):
    """A loose map of 120 tiles (no WDT: the ADT files are the map), each a copy of one tile moved to
    its own place (a bundle of its own), slow enough to stop (a fast CI machine bakes 40 in 0.9 s)."""
    root = tmp_path_factory.mktemp("round2-many") / "x"
    shutil.copytree(loose / "DBFilesClient", root / "DBFilesClient")
    shutil.copytree(loose / "World" / "NoDXT", root / "World" / "NoDXT")
    folder = root / "World" / "Maps" / MAP_NAME
    folder.mkdir(parents=True)
    src = AdtTile.from_bytes((map_dir(loose) / f"{MAP_NAME}_31_32.adt").read_bytes(), big_alpha=True)
    base = src.positions.copy()
    for c in range(20, 32):
        for r in range(20, 30):
            src.positions = base + np.array([(32 - r) * TILE_SIZE, (31 - c) * TILE_SIZE, 0], "<f4")
            (folder / f"{MAP_NAME}_{c}_{r}.adt").write_bytes(write_adt(src))
    return root


def _workers(pid: int) -> list[int]:
    """The child processes of ``pid`` (a bake's workers), from /proc (cheap enough to poll)."""
    found = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                found += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return found


def _running_in_group(pgid: int) -> list[str]:
    """Names of the live processes of process group ``pgid`` (zombies left to init to reap are not:
    a worker stopped while it ran ``ldconfig`` leaves one for a second or two)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            state, _ppid, pgrp = stat.rsplit(")", 1)[1].split()[:3]
            if int(pgrp) == pgid and state not in "ZX":
                found.append(f"{entry} {stat[stat.index('(') + 1:stat.rindex(')')]}")
    return found


def _children_gone(pgid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while _running_in_group(pgid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _bundles(cache: Path) -> list[Path]:
    return sorted((cache / "bundles").rglob("*.wgb"))


def _wait_for(event: str, ready, proc, timeout: float = 60.0) -> None:
    """Wait until ``ready()`` holds; FAIL when the bake ends first or ``timeout`` passes (a hang guard,
    not a figure: the stop latency is benchmarks/bench_stop.py's)."""
    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None:
            pytest.fail(f"the bake ended before {event}: {proc.communicate()}")
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail(f"no {event} within {timeout:.0f} s")
        time.sleep(0.005)


STOP_LINE = re.compile(r"^(interrupted|stopped by SIGTERM) after (\d+) of 120 tiles; (\d+) (?:is|are) cached "
                       r"\(bake again to finish\)$")


def _bake_until(phase: str, sig, whole_group: bool, cache: Path, data: Path):
    """Start a 2-worker bake, wait for ``phase``'s event, send ``sig``; (stdout, stderr, return code,
    bundles on disk when the signal was sent, seconds from the signal to the exit)."""
    env = dict(os.environ, WOWGRASS_CACHE=str(cache))
    proc = subprocess.Popen([sys.executable, "-m", "wowgrass", "bake", "--data", str(data), "--jobs", "2",
                             "--force"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    try:
        if phase == "workers":
            _wait_for("a bake worker", lambda: _workers(proc.pid), proc)
        else:
            _wait_for("a bundle in the cache", lambda: _bundles(cache), proc)
        on_disk = len(_bundles(cache))
        sent = time.monotonic()
        (os.killpg if whole_group else os.kill)(proc.pid, sig)
        out, err = proc.communicate(timeout=60)   # a hang guard; the latency is bench_stop.py's
        stopped = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert _children_gone(proc.pid, 5.0), f"a bake worker is still running: {_running_in_group(proc.pid)}"
    return out, err, proc.returncode, on_disk, stopped


@pytest.mark.parametrize("phase, sig, whole_group", [
    ("workers", signal.SIGINT, False),   # the first worker is forked, no tile baked: the pool is starting
    ("workers", signal.SIGINT, True),    # Ctrl-C at a terminal: the whole group
    ("baking", signal.SIGTERM, False),   # (before the command starts, SIGTERM ends Python at once: -15)
    ("baking", signal.SIGINT, False),    # a bundle is on disk: tiles are being baked
    ("baking", signal.SIGINT, True),
])
def test_a_signal_stops_a_parallel_bake_and_says_what_is_cached(many_tiles, tmp_path, phase, sig, whole_group):
    # the workers' start lasts about 0.1 s before their first bundle: a test process kept off the CPU
    # that long misses it, and tries again (three times at most)
    for attempt in range(3 if phase == "workers" else 1):
        cache = tmp_path / f"cache{attempt}"
        out, err, code, on_disk, stopped = _bake_until(phase, sig, whole_group, cache, many_tiles)
        if phase == "baking" or on_disk == 0:
            break
    print(f"stopped {stopped:.2f} s after {sig.name} ({phase}, {on_disk} bundles on disk)")
    if phase == "workers":
        assert on_disk == 0, "a tile was baked before the signal each time: the workers' start was missed"
    else:
        assert on_disk >= 1
    assert code == 128 + sig, (code, err)
    for bad in ("Traceback", "Exception in initializer", "cannot join", "error: aborted"):
        assert bad not in err, err
    assert out == "", out
    # what was done, and that it is cached: the last line names both, whatever the phase
    last = STOP_LINE.match(err.strip().splitlines()[-1])
    assert last, err
    assert last[1] == ("interrupted" if sig == signal.SIGINT else "stopped by SIGTERM")
    done, cached = int(last[2]), int(last[3])
    assert cached <= done < 120, err
    bundles = _bundles(cache)
    assert len(bundles) >= max(cached, on_disk), (len(bundles), err)   # one bundle a tile
    assert len({p.name.split(".")[0] for p in bundles}) == len(bundles)
    for path in bundles:   # a stopped worker never leaves half a bundle under a bundle's name
        with read_bundle(path) as b:
            assert b.stats()["instances"] > 0, path


# ----------------------------------------------------------------------------- 10. JSON keys

#: plural names that are a measure in a unit or a bit field, not a count (docs/cli.md)
UNITS = ("bytes", "seconds", "flags", "pos")


def _plural_numbers(obj, where="") -> list[str]:
    """Keys holding a number under a plural name (docs/cli.md: counts are ``*_count``)."""
    bad = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in ("constants", "histogram"):   # names of their own (-C client_picks=48)
                continue
            if (isinstance(v, int) and not isinstance(v, bool) and k.endswith("s")
                    and k.rsplit("_", 1)[-1] not in UNITS):
                bad.append(f"{where}.{k}")
            bad += _plural_numbers(v, f"{where}.{k}")
    elif isinstance(obj, list):
        for v in obj[:4]:
            bad += _plural_numbers(v, where + "[]")
    return bad


def test_json_counts_are_named_count_and_files_file(world, loose, tmp_path):
    detail = loose / "World" / "NoDXT" / "Detail"
    bake = json.loads(run("bake", "--data", world, "--json").stdout)
    docs = {
        "m2 info": json.loads(run("m2", "info", detail / "ElwGra01.m2", "--json").stdout),
        "blp info": json.loads(run("blp", "info", detail / "ElwGra01.blp", "--json").stdout),
        "adt info": json.loads(run("adt", "info", "--data", world, "--tile", "31,32", "--json").stdout),
        "maps": json.loads(run("maps", "--data", world, "--json").stdout),
        "bake": bake,
        "bundle info": json.loads(run("bundle", "info", bake["tiles"][0]["file"], "--json").stdout),
        "dbc info": json.loads(run("dbc", "info", "--data", world, "GroundEffectTexture", "--json").stdout),
        "mpq ls": json.loads(run("mpq", "ls", "--data", world, "--json").stdout),
    }
    for name, doc in docs.items():
        assert isinstance(doc, dict), name
        assert _plural_numbers(doc) == [], name
    assert docs["m2 info"]["file"] == str(detail / "ElwGra01.m2") and "path" not in docs["m2 info"]
    assert docs["m2 info"]["vertex_count"] > 0 and docs["m2 info"]["view"]["triangle_count"] > 0
    assert docs["blp info"]["file"] == str(detail / "ElwGra01.blp") and docs["blp info"]["mip_count"] >= 1
    assert docs["bundle info"]["instance_count"] == bake["tiles"][0]["instance_count"] > 0
    ls = docs["mpq ls"]
    assert ls["file_count"] == len(ls["files"]) > 0 and {"name", "size"} <= set(ls["files"][0])


# ----------------------------------------------------------------------------- 8. wmo info vs export


def test_wmo_info_splits_rendered_and_collision_triangles_as_export_counts(loose, tmp_path):
    import numpy as np

    from wowgrass.formats.wmo import MOPY_DTYPE, NO_MATERIAL, WmoGroup, write_wmo_group

    src = loose / "World" / "wmo" / "Sample" / "Buildings" / "SampleHouse"
    dst = tmp_path / "house"
    shutil.copytree(src, dst)
    g = WmoGroup.from_bytes((dst / "SampleHouse_000.wmo").read_bytes())
    extra = 5   # collision-only triangles, in no batch, as real tents and inns have them
    g.indices = np.concatenate([g.indices, np.zeros(3 * extra, g.indices.dtype)])
    mopy = np.zeros(extra, MOPY_DTYPE)
    mopy["flags"], mopy["material"] = 0x08, NO_MATERIAL
    g.triangles = np.concatenate([g.triangles, mopy])
    (dst / "SampleHouse_000.wmo").write_bytes(write_wmo_group(g))
    root = dst / "SampleHouse.wmo"
    info = json.loads(run("wmo", "info", root, "--json").stdout)
    exported = json.loads(run("wmo", "export", root, "-o", tmp_path / "h.glb", "--no-doodads", "--json").stdout)
    assert info["collision_triangle_count"] == extra
    assert info["rendered_triangle_count"] == exported["triangle_count"] == info["triangle_count"] - extra
    text = run("wmo", "info", root).stdout
    assert f"{info['rendered_triangle_count']:,} rendered, {extra} collision only" in text


# ----------------------------------------------------------------------------- 7. ADT names maps skips


def test_maps_notes_adts_whose_names_the_client_would_not_load(loose, tmp_path):
    root = tmp_path / "x"
    shutil.copytree(loose, root)
    folder = map_dir(root)
    tile = folder / f"{MAP_NAME}_31_32.adt"
    for bad in (f"{MAP_NAME}_01_01.adt", "continent4229.adt", f"Other_3_4.adt"):
        shutil.copy(tile, folder / bad)
    res = run("maps", "--data", root)
    assert res.exit_code == 0, res.output
    assert f"{MAP_NAME}_01_01.adt (zero-padded" in res.stderr and "continent4229.adt (not" in res.stderr
    assert "Other_3_4.adt (named for map 'Other'" in res.stderr and "3 ADT files ignored" in res.stderr
    js = json.loads(run("maps", "--data", root, "--json").stdout)
    assert sorted(i["file"] for i in js["ignored_adts"]) == sorted(
        [f"{MAP_NAME}_01_01.adt", "continent4229.adt", "Other_3_4.adt"])
    # without a WDT the map is its ADT files: the zero-padded one is not tile 1,1 either
    (folder / f"{MAP_NAME}.wdt").unlink()
    js = json.loads(run("maps", "--data", root, "--json").stdout)
    assert [m["adt_tiles"] for m in js["maps"]] == [[[31, 32], [32, 32]]]


# ----------------------------------------------------------------------------- 11. messages


def test_a_png_named_adt_says_what_it_is(tmp_path):
    from PIL import Image

    f = tmp_path / f"{MAP_NAME}_31_32.adt"
    Image.new("RGB", (4, 4)).save(f, "PNG")
    res = run("adt", "info", f)
    assert res.exit_code == 2
    assert "a PNG image" in res.stderr and "expected b'REVM'" in res.stderr and "declares" not in res.stderr


def test_wmo_info_on_a_folder_says_it_is_a_folder(tmp_path):
    res = run("wmo", "info", tmp_path)
    assert res.exit_code == 2 and "is a folder" in res.stderr and "no such file" not in res.stderr


def test_a_data_folder_without_its_locale_folder_says_so(world, tmp_path):
    data = tmp_path / "Data"
    shutil.copytree(world, data)
    shutil.rmtree(data / "enUS")
    for args in (("bake", "--data", data), ("dbc", "info", "--data", data, "GroundEffectTexture")):
        res = run(*args)
        assert res.exit_code == 2, res.output
        assert "no locale folder" in res.stderr and "locale-<locale>.MPQ" in res.stderr, res.stderr


def test_a_camera_far_outside_the_map_is_out_of_range():
    res = run("view", "--camera", "1e9,1e9,1e9", "-o", "x.png")
    assert res.exit_code == 2 and "out of the map's range" in res.stderr and "must be X,Y" not in res.stderr


def test_an_absent_skin_is_not_found_and_lists_the_skins_present_and_skin_picks_one(loose, tmp_path):
    src = loose / "World" / "NoDXT" / "Detail"
    d = tmp_path / "m"
    d.mkdir()
    shutil.copy(src / "ElwGra01.m2", d / "ElwGra01.m2")
    shutil.copy(src / "ElwGra01.blp", d / "ElwGra01.blp")
    shutil.copy(src / "ElwGra0100.skin", d / "ElwGra0101.skin")   # only level of detail 1
    res = run("m2", "export", d / "ElwGra01.m2", "-o", tmp_path / "a.glb")
    assert res.exit_code == 2
    assert "ElwGra0100.skin not found" in res.stderr and "ElwGra0101.skin" in res.stderr and "--skin" in res.stderr
    res = run("m2", "export", d / "ElwGra01.m2", "-o", tmp_path / "a.glb", "--skin", "1", "--json")
    assert res.exit_code == 0, res.output
    js = json.loads(res.stdout)
    assert js["file"] == str(tmp_path / "a.glb") and js["skin"].endswith("ElwGra0101.skin") and js["triangle_count"] > 0
    info = json.loads(run("m2", "info", d / "ElwGra01.m2", "--skin", "1", "--json").stdout)
    assert info["view_index"] == 1 and info["view"]["triangle_count"] == js["triangle_count"]


def test_the_legend_title_keeps_its_colon_and_space():
    import numpy as np

    from wowgrass.game.tiles import legend_strip

    rgb = np.zeros((256, 256, 3), np.uint8)   # the smallest text: where spaces used to round away
    legend = [{"label": "40.0 .. 54.7 yd", "rgb": "#6e944b"}]

    def title(text):
        return legend_strip(rgb, legend, text)[256:256 + 17].min(axis=2) < 160   # the title's dark pixels

    def right(text):
        return int(np.nonzero(title(text).any(axis=0))[0].max())

    assert right("heights: 0.0") - right("heights:0.0") >= 4   # a space a reader sees
    assert title("a:").sum() > title("a").sum()                # and the colon is drawn


# ----------------------------------------------------------------------------- 9. conventions


def test_blp_convert_takes_o_and_refuses_a_missing_folder(loose, tmp_path):
    blp = loose / "World" / "NoDXT" / "Detail" / "ElwGra01.blp"
    res = run("blp", "convert", blp, "-o", tmp_path / "a.png")
    assert res.exit_code == 0, res.output and (tmp_path / "a.png").is_file()
    res = run("blp", "convert", blp, "-o", tmp_path / "no" / "a.png")
    assert res.exit_code == 2 and "does not exist" in res.stderr and not (tmp_path / "no").exists()
    res = run("blp", "convert", blp, tmp_path / "b.png")   # the old form still works, and says so
    assert res.exit_code == 0 and (tmp_path / "b.png").is_file() and "-o" in res.stderr


def test_view_output_follows_the_suffix(world, tmp_path, egl):
    out = tmp_path / "f.jpg"
    res = run("view", "--data", world, "--tile", "31,32", "-o", out, "--size", "48x32", "--samples", 0)
    assert res.exit_code == 0, res.output
    assert out.read_bytes()[:3] == b"\xff\xd8\xff"   # a JPEG, not a PNG named .jpg


def test_size_takes_one_number_or_wxh_in_adt_image_and_view(world, tmp_path):
    for size in ("64", "64x64"):
        js = json.loads(run("adt", "image", "--data", world, "--tile", "31,32", "-o", tmp_path / "a.png",
                            "--size", size, "--json").stdout)
        assert js["size"] == [64, 64]
    res = run("adt", "image", "--data", world, "--tile", "31,32", "-o", tmp_path / "a.png", "--size", "64x32")
    assert res.exit_code == 2 and "W = H" in res.stderr
    from wowgrass.cli.view import _size

    assert _size("64") == (64, 64) and _size("64x32") == (64, 32)


def test_the_meadow_seed_is_named_for_the_meadow():
    res = run("view", "--meadow-seed", "3", "--data", ".", "-o", "x.png")
    assert res.exit_code == 2 and "--meadow-seed is for --procedural" in res.stderr
    help_text = run("view", "--help").output
    assert "--meadow-seed" in help_text and "\n  --seed" not in help_text
    bake_help = " ".join(run("bake", "--help").output.split())
    assert "--seed" in bake_help


def test_export_maps_and_adt_info_take_a_folder_as_bake_does(world, tmp_path):
    js = json.loads(run("maps", world, "--json").stdout)
    assert [m["map"] for m in js["maps"]] == [MAP_NAME]
    res = run("adt", "info", world, "--tile", "31,32", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["tile"] == {"col": 31, "row": 32}
    res = run("adt", "info", world)   # two tiles: which one?
    assert res.exit_code == 2 and "2 tiles" in res.stderr and "--tile" in res.stderr
    out = tmp_path / "t.glb"
    res = run("export", "gltf", world, "--tile", "31,32", "--no-grass", "--no-wmos", "--no-liquids", "-o", out,
              "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["tiles"] == [[31, 32]] and out.is_file()


# ----------------------------------------------------------------------------- 12. the cache


def test_one_set_of_bundles_when_folder_and_map_name_differ_in_case(world, loose, tmp_path, monkeypatch):
    monkeypatch.setenv("WOWGRASS_CACHE", str(tmp_path / "cache"))
    first = json.loads(run("bake", "--data", world, "--tile", "31,32", "--json").stdout)
    lower = tmp_path / f"{MAP_NAME.lower()}_31_32.adt"
    shutil.copy(map_dir(loose) / f"{MAP_NAME}_31_32.adt", lower)
    again = json.loads(run("bake", lower, "--data", world, "--json").stdout)
    assert [p.name for p in (tmp_path / "cache" / "bundles").iterdir()] == [MAP_NAME]
    assert again["cache_hit"] and again["file"] == first["tiles"][0]["file"]


def test_cache_ls_names_each_bundle_folders_data_source(world, tmp_path, monkeypatch):
    monkeypatch.setenv("WOWGRASS_CACHE", str(tmp_path / "cache"))
    assert run("bake", "--data", world, "--tile", "31,32").exit_code == 0
    text = run("cache", "ls").stdout
    assert f"from {world.resolve()} (build 3.3.5, 1 tile" in text, text
    js = json.loads(run("cache", "ls", "--json").stdout)
    (entry,) = [e for e in js["entries"] if e["kind"] == "bundles"]
    assert entry["sources"][0]["data"] == str(world.resolve()) and entry["sources"][0]["tiles"] == [[31, 32]]


def test_cache_prune_removes_stale_bundles_only(world, tmp_path, monkeypatch):
    monkeypatch.setenv("WOWGRASS_CACHE", str(tmp_path / "cache"))
    good = Path(json.loads(run("bake", "--data", world, "--json").stdout)["tiles"][0]["file"])
    old_format = good.with_name(good.name.replace(".coverage.", ".coverage.0ld").replace(MAP_NAME + "_31", MAP_NAME + "_9"))
    raw = bytearray(good.read_bytes())
    raw[4] = 99   # another bundle format version
    old_format.write_bytes(bytes(raw))
    broken = good.with_name(f"{MAP_NAME}_8_8.coverage.0000000000000000.wgb")
    broken.write_bytes(b"not a bundle")
    js = json.loads(run("cache", "prune", "--dry-run", "--json").stdout)
    assert sorted(Path(e["file"]).name for e in js["deleted"]) == sorted([old_format.name, broken.name])
    assert js["deleted_count"] == 2 and js["dry_run"] and old_format.exists() and broken.exists()
    assert any("format version" in e["reason"] for e in js["deleted"])
    res = run("cache", "prune")
    assert res.exit_code == 0 and "deleted 2 stale bundles" in res.stdout
    assert not old_format.exists() and not broken.exists() and good.exists()
    assert "deleted 0 stale bundles" in run("cache", "prune").stdout


# ----------------------------------------------------------------------------- 5. export goes on


def test_a_whole_map_export_warns_on_a_damaged_tile_and_writes_the_others(loose, tmp_path, monkeypatch):
    monkeypatch.setenv("WOWGRASS_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "x"
    shutil.copytree(loose, root)
    bad = map_dir(root) / f"{MAP_NAME}_32_32.adt"
    bad.write_bytes(bad.read_bytes()[:5000])
    out = tmp_path / "t.glb"
    res = run("export", "gltf", "--data", root, "--no-wmos", "--no-liquids", "-o", out, "--json")
    assert res.exit_code == 2, res.output
    assert "warning: tile 32,32 left out" in res.stderr and "1 tile could not be read" in res.stderr
    js = json.loads(res.stdout)
    assert js["tiles"] == [[31, 32]] and list(js["tile_errors"]) == ["32,32"] and out.is_file()


# ----------------------------------------------------------------------------- 6. why no grass


def _empty_tile(loose, tmp_path, change):
    from wowgrass.formats.adt import write_adt
    from wowgrass.game.tiles import read_adt

    src = map_dir(loose) / f"{MAP_NAME}_31_32.adt"
    tile = read_adt(src.read_bytes(), str(src))
    change(tile)
    out = tmp_path / f"{MAP_NAME}_31_32.adt"
    out.write_bytes(write_adt(tile))
    return out


@pytest.mark.parametrize("change, why", [
    (lambda t: t.layer_effect.fill(0), "name no ground effect"),
    (lambda t: t.no_effect_doodad.fill(True), "every cell where its effects grow is excluded"),
])
def test_a_tile_with_no_grass_says_why(world, loose, tmp_path, monkeypatch, change, why):
    monkeypatch.setenv("WOWGRASS_CACHE", str(tmp_path / "cache"))
    adt = _empty_tile(loose, tmp_path, change)
    res = run("bake", adt, "--data", world)
    assert res.exit_code == 0, res.output
    assert "0 instances" in res.stdout and "no grass on tile 31,32" in res.stderr and why in res.stderr
    js = json.loads(run("bake", adt, "--data", world, "--json").stdout)
    assert js["instance_count"] == 0 and why in js["no_grass"]
    res = run("adt", "image", adt, "--dbc", loose / "DBFilesClient", "--kind", "grass", "--legend", "-o",
              tmp_path / "g.png")
    assert res.exit_code == 0, res.output
    assert "no legend drawn: the tile has no grass" in res.stderr and why in res.stderr


# ----------------------------------------------------------------------------- 3. -v and -vv


@pytest.mark.parametrize("args, said", [
    (("maps", "--data", "{world}"), "map folders"),
    (("adt", "info", "--data", "{world}", "--tile", "31,32"), "read World\\Maps"),
    (("mpq", "ls", "--data", "{world}"), "unnamed (no listfile names them)"),
    (("bake", "--data", "{world}"), "tile 31,32:"),
    (("dbc", "info", "--data", "{world}", "GroundEffectTexture"), "records of"),
    (("export", "gltf", "--data", "{world}", "--tile", "31,32", "--no-grass", "-o", "{tmp}/t.glb"), "tables"),
])
def test_verbose_says_what_is_read_and_skipped(world, tmp_path, args, said):
    args = [a.format(world=world, tmp=tmp_path) for a in args]
    plain, verbose, debug = run(*args), run(*args, "-v"), run(*args, "-vv")
    assert plain.exit_code == verbose.exit_code == debug.exit_code == 0, verbose.output
    assert said not in plain.stderr and said in verbose.stderr, verbose.stderr
    assert len(verbose.stderr.splitlines()) > len(plain.stderr.splitlines())
    assert len(debug.stderr.splitlines()) > len(verbose.stderr.splitlines())   # -vv: each file read


def test_verbose_view_and_maps_name_what_they_skip(loose, tmp_path, egl):
    root = tmp_path / "x"
    shutil.copytree(loose, root)
    shutil.copy(map_dir(root) / f"{MAP_NAME}_31_32.adt", map_dir(root) / f"{MAP_NAME}_01_01.adt")
    res = run("maps", "--data", root, "-v")
    assert f"{MAP_NAME}_01_01.adt" in res.stderr and "no map reads" in res.stderr
    res = run("view", "--data", root, "--tile", "31,32", "-o", tmp_path / "v.png", "--size", "32x32", "--samples", 0,
              "-v")
    assert res.exit_code == 0, res.output
    assert "tile 31,32: " in res.stderr and "info " in res.stderr


@pytest.mark.realdata
def test_the_real_inn_info_and_export_agree_on_triangles(realdata, tmp_path):
    inn = realdata / "wmo" / "inn.wmo"
    info = json.loads(run("wmo", "info", inn, "--json").stdout)
    exported = json.loads(run("wmo", "export", inn, "-o", tmp_path / "i.glb", "--no-doodads", "--json").stdout)
    assert info["rendered_triangle_count"] == exported["triangle_count"] < info["triangle_count"]
    assert info["rendered_triangle_count"] + info["collision_triangle_count"] == info["triangle_count"]
