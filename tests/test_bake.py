"""Bake orchestration and the ``bake`` / ``bundle`` commands, on a small sample world."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from wowgrass.cli.main import cli

from wowgrass.grass import bundle as B
from wowgrass.grass.bake import bake_file, bake_map, bake_tile, load_catalog, map_tiles, parse_tile_ranges
from wowgrass.game.data import open_data
from wowgrass.errors import UsageError
from wowgrass.grass.placement import PlacementConstants
from wowgrass.samples import MAP_NAME, build_sample_world
from wowgrass.game.tiles import adt_game_path


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A 2x1-tile 3.3.5 sample world, a loose copy of one ADT and of the two tables."""
    root = tmp_path_factory.mktemp("bake-world")
    data_dir = build_sample_world(root / "w", "3.3.5", (2, 1), seed=0)
    loose = root / "loose"
    loose.mkdir()
    with open_data(data_dir) as data:
        tiles, _ = map_tiles(data, MAP_NAME)
        col, row = tiles[0]
        adt = loose / f"{MAP_NAME}_{col}_{row}.adt"
        adt.write_bytes(data.read(adt_game_path(MAP_NAME, col, row)))
        # the WDT beside it says the alpha maps are 8-bit (the bake finds it there)
        (loose / f"{MAP_NAME}.wdt").write_bytes(data.read(f"World\\Maps\\{MAP_NAME}\\{MAP_NAME}.wdt"))
        dbc = loose / "dbc"
        dbc.mkdir()
        for name in ("GroundEffectTexture.dbc", "GroundEffectDoodad.dbc"):
            (dbc / name).write_bytes(data.read("DBFilesClient\\" + name))
    return {"data": data_dir, "adt": adt, "dbc": dbc, "tiles": tiles}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("WOWGRASS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def bundles(cache: Path) -> list[Path]:
    return sorted(cache.rglob("*.wgb"))


def test_bake_then_cache_hit(world, cache):
    with open_data(world["data"]) as data:
        first = bake_file(world["adt"], data=data)
        assert not first.cache_hit and first.instances > 1000
        assert first.missing_models == []  # the sample world ships its models
        second = bake_file(world["adt"], data=data)
    assert second.cache_hit and second.path == first.path and second.key == first.key
    assert bundles(cache) == [Path(first.path)]
    with B.read_bundle(first.path, expect_key=first.key) as b:
        assert b.instance_count == first.instances
        assert b.provenance["map"] == MAP_NAME and b.provenance["placement"] == "coverage"
        assert b.provenance["adt_sha256"] == __import__("hashlib").sha256(world["adt"].read_bytes()).hexdigest()
        for m in b.models:  # bounding boxes and z range come from the M2s
            assert m.info.present and m.info.z_max > m.info.z_min
            assert all(lo <= hi for lo, hi in zip(m.info.bbox_min, m.info.bbox_max))


def test_provenance_changes_rebake(world, cache):
    with open_data(world["data"]) as data:
        a = bake_file(world["adt"], data=data)
        b = bake_file(world["adt"], data=data, constants=PlacementConstants(coverage_min=40))
        c = bake_file(world["adt"], data=data, placement="client")
    assert len({a.key, b.key, c.key}) == 3
    assert not b.cache_hit and not c.cache_hit
    # a new coverage bundle of the same tile replaces the older one; the client one sits beside it
    names = [p.name for p in bundles(cache)]
    assert len(names) == 2 and any(".client." in n for n in names) and any(".coverage." in n for n in names)


def test_loose_tables_match_data_tables(world, cache, tmp_path):
    with open_data(world["data"]) as data:
        a = bake_file(world["adt"], data=data, out=tmp_path / "a.wgb")
    b = bake_file(world["adt"], dbc_dir=world["dbc"], out=tmp_path / "b.wgb")
    # same placement; only the model table differs (no --data: models unknown, flagged missing)
    with B.read_bundle(a.path) as ba, B.read_bundle(b.path) as bb:
        assert np.array_equal(ba.instances(), bb.instances())
        assert all(not m.info.present for m in bb.models)
    assert len(b.missing_models) == b.models


def _flip(path: Path, offset: int):
    raw = bytearray(path.read_bytes())
    raw[offset] ^= 0xFF
    path.write_bytes(raw)


@pytest.mark.parametrize("damage", ["corrupt", "truncate", "stale", "garbage"])
def test_damaged_bundle_is_rebuilt(world, cache, damage):
    catalog = load_catalog(dbc_dir=world["dbc"])
    raw = world["adt"].read_bytes()
    first = bake_tile(raw, catalog, map_name=MAP_NAME, big_alpha=True)
    path = Path(first.path)
    good = path.read_bytes()
    if damage == "corrupt":
        _flip(path, len(good) - 7)
    elif damage == "truncate":
        path.write_bytes(good[: len(good) // 3])
    elif damage == "stale":  # an older format version with a valid checksum
        buf = bytearray(good)
        struct.pack_into("<H", buf, 4, B.FORMAT_VERSION + 1)
        struct.pack_into("<I", buf, 124, zlib.crc32(buf[128:], zlib.crc32(buf[:124])) & 0xFFFFFFFF)
        path.write_bytes(buf)
    else:
        path.write_bytes(b"\0" * 50)
    again = bake_tile(raw, catalog, map_name=MAP_NAME, big_alpha=True)
    assert not again.cache_hit
    want = {"corrupt": "ChecksumError", "truncate": "TruncatedError", "stale": "StaleBundleError",
            "garbage": "TruncatedError"}[damage]
    assert again.rebuilt.startswith(want)
    assert path.read_bytes() == good  # rebuilt exactly (deterministic)


KILL = """
import os, signal, sys
os.environ["WOWGRASS_CACHE"] = sys.argv[1]
import wowgrass.fileio as fileio
from wowgrass.grass.bake import bake_file
def die(*a, **k):
    os.kill(os.getpid(), signal.SIGKILL)
if sys.argv[4] == "rename":
    fileio.os.replace = die          # killed after the bytes are written, before the rename
else:                                # killed in the middle of writing
    real_fdopen = fileio.os.fdopen
    class HalfWritten:
        def __init__(self, f): self.f = f
        def __enter__(self): return self
        def __exit__(self, *exc): return False
        def write(self, data):
            self.f.write(data[:len(data) // 2]); self.f.flush(); die()
    fileio.os.fdopen = lambda fd, mode: HalfWritten(real_fdopen(fd, mode))
bake_file(sys.argv[2], dbc_dir=sys.argv[3])
"""


@pytest.mark.parametrize("when", ["rename", "write"])
def test_killed_bake_leaves_no_bundle(world, cache, when):
    proc = subprocess.run([sys.executable, "-c", KILL, str(cache), str(world["adt"]), str(world["dbc"]), when],
                          capture_output=True, text=True)
    assert proc.returncode == -9, proc.stderr
    assert bundles(cache) == []  # only a stray temporary file, never a .wgb
    res = bake_file(world["adt"], dbc_dir=world["dbc"])
    assert not res.cache_hit and res.rebuilt is None
    with B.read_bundle(res.path, expect_key=res.key) as b:
        assert b.instance_count == res.instances


def test_parallel_bake_matches_serial(world, tmp_path, monkeypatch):
    out = {}
    for jobs in (1, 2):
        monkeypatch.setenv("WOWGRASS_CACHE", str(tmp_path / f"c{jobs}"))
        seen, started = [], []
        results, failures = bake_map(world["data"], MAP_NAME, jobs=jobs, progress=seen.append,
                                     on_start=started.append)
        assert failures == [] and len(results) == len(world["tiles"]) == len(seen)
        assert started == [len(world["tiles"])]  # told the total once, before the first tile
        out[jobs] = {r.tile: Path(r.path).read_bytes() for r in results}
    assert out[1] == out[2]  # same bytes whatever process bakes a tile
    # and a second run is all cache hits
    results, _ = bake_map(world["data"], MAP_NAME, jobs=2)
    assert all(r.cache_hit for r in results)


def test_tile_ranges():
    assert parse_tile_ranges("30:33,40:45") == ((30, 33), (40, 45))
    assert parse_tile_ranges("31,32") == ((31, 31), (32, 32))
    for bad in ("30-33,40", "33:30,1:2", "1:64,0:0", ""):
        with pytest.raises(UsageError):
            parse_tile_ranges(bad)


def test_map_tiles_from_wdt(world):
    with open_data(world["data"]) as data:
        tiles, _ = map_tiles(data, MAP_NAME)
        assert len(tiles) == 2
        (c, r) = tiles[0]
        assert map_tiles(data, MAP_NAME, ((c, c), (r, r)))[0] == [(c, r)]
        with pytest.raises(UsageError, match="not in"):
            map_tiles(data, "NoSuchMap")


def test_missing_table_is_a_clear_error(world, tmp_path):
    (tmp_path / "GroundEffectTexture.dbc").write_bytes((world["dbc"] / "GroundEffectTexture.dbc").read_bytes())
    with pytest.raises(UsageError, match="GroundEffectDoodad.dbc"):
        bake_file(world["adt"], dbc_dir=tmp_path)


# ----------------------------------------------------------------------------- command line


def run(*args):
    return CliRunner().invoke(cli, list(args))


def test_cli_help():
    for cmd in (["bake", "--help"], ["bundle", "--help"], ["bundle", "info", "--help"]):
        res = run(*cmd)
        assert res.exit_code == 0 and "Usage" in res.output
    assert "--placement" in run("bake", "--help").output


def test_cli_bake_loose_adt_and_info(world, cache, tmp_path):
    out = tmp_path / "t.wgb"
    res = run("bake", str(world["adt"]), "--dbc", str(world["dbc"]), "-o", str(out))
    assert res.exit_code == 0, res.output + res.stderr
    assert "instances" in res.output and out.is_file()
    res = run("bake", str(world["adt"]), "--dbc", str(world["dbc"]), "-o", str(out), "--json")
    info = json.loads(res.output)
    assert info["cache_hit"] is True and info["file"] == str(out)
    # a changed constant is a different bundle (not a cache hit), with fewer clumps per cell
    fewer = json.loads(run("bake", str(world["adt"]), "--dbc", str(world["dbc"]), "-o", str(tmp_path / "f.wgb"),
                           "-C", "max_placements_per_sample=2", "--json").output)
    assert fewer["key"] != info["key"] and 0 < fewer["instance_count"] < info["instance_count"]
    with B.read_bundle(fewer["file"]) as b:
        assert b.cell_counts.max() == 2 and b.provenance["constants"]["max_placements_per_sample"] == 2
    res = run("bundle", "info", str(out))
    assert res.exit_code == 0
    assert "cells with grass" in res.output and "MISSING" in res.output
    js = json.loads(run("bundle", "info", str(out), "--json").output)
    assert js["instance_count"] == info["instance_count"] and js["bytes_per_instance"] == 16
    assert js["provenance"]["placement"] == "coverage"
    assert sum(m["instance_count"] for m in js["models"]) == js["instance_count"]
    assert sum(int(k) * v for k, v in js["cells"]["histogram"].items()) == js["instance_count"]


def test_cli_placement_names_and_the_old_alias(world, cache, tmp_path):
    """The strategies are named for what they do; the old name ``seed`` still works, with a note."""
    text = run("bake", "--help").output
    assert "coverage" in text and "client" in text and "seed|" not in text and "'seed'" not in text
    res = run("bake", str(world["adt"]), "--dbc", str(world["dbc"]), "-o", str(tmp_path / "a.wgb"),
              "--placement", "seed", "-C", "seed_scale=2", "--json")
    assert res.exit_code == 0, res.output + res.stderr
    assert "--placement coverage" in res.stderr
    with B.read_bundle(json.loads(res.stdout)["file"]) as b:
        assert b.provenance["placement"] == "coverage" and b.provenance["constants"]["coverage_scale"] == 2.0
        assert "seed_scale" not in b.provenance["constants"]
    res = run("bake", str(world["adt"]), "--dbc", str(world["dbc"]), "--placement", "nope")
    assert res.exit_code == 2 and "coverage" in res.stderr


def test_cli_bake_map_json(world, cache):
    res = run("bake", "--data", str(world["data"]), "--map", MAP_NAME, "--jobs", "2", "--json")
    assert res.exit_code == 0, res.output + res.stderr
    js = json.loads(res.output)
    assert len(js["tiles"]) == 2 and js["failures"] == []
    c, r = world["tiles"][1]
    res = run("bake", "--data", str(world["data"]), "--map", MAP_NAME, "--tile", f"{c}:{c},{r}:{r}")
    assert res.exit_code == 0 and "1 tile baked (1 cached" in res.output
    res = run("bake", "--data", str(world["data"]), "--map", MAP_NAME, "--tiles", f"{c}:{c},{r}:{r}")  # old name
    assert res.exit_code == 0 and "1 tile baked (1 cached" in res.output


def test_cli_errors(world, tmp_path):
    bad = tmp_path / "bad.wgb"
    bad.write_bytes(b"WGBN" + b"\0" * 20)
    for args, text in [
        (["bake", str(world["adt"]), "--dbc", str(tmp_path)], "GroundEffectTexture.dbc"),
        (["bundle", "info", str(bad)], "bundle header needs"),
        (["bake", str(world["adt"]), "--dbc", str(world["dbc"]), "--jobs", "2"], "--jobs"),
        (["bake", "--data", str(world["data"]), "--map", MAP_NAME, "--tile", "5-6"], "--tile"),
        (["bake", "--data", str(world["data"]), "--map", "Nope"], "Nope"),
    ]:
        res = run(*args)
        assert res.exit_code == 2, (args, res.output, res.stderr)
        assert "error:" in res.stderr and text in res.stderr
        assert "Traceback" not in res.stderr + res.output


def test_cli_without_data_uses_the_sample_world(cache):
    res = run("bake", "--json")
    assert res.exit_code == 0, res.output + res.stderr
    js = json.loads(res.output)
    assert js["map"] == MAP_NAME and len(js["tiles"]) >= 1 and js["failures"] == []
    assert all(t["missing_models"] == [] for t in js["tiles"])
    assert all(Path(t["file"]).is_relative_to(cache) for t in js["tiles"])


def test_stale_temporaries_are_swept(world, cache):
    from wowgrass.grass.bake import sweep_temporaries

    folder = cache / "bundles" / MAP_NAME
    folder.mkdir(parents=True)
    old = folder / f".{MAP_NAME}_1_2.coverage.0123.wgb.abcd.tmp"
    new = folder / f".{MAP_NAME}_1_3.coverage.0123.wgb.efgh.tmp"
    old.write_bytes(b"partial")
    new.write_bytes(b"in progress elsewhere")
    os.utime(old, (1, 1))
    assert sweep_temporaries(folder) == 1
    assert not old.exists() and new.exists()


def test_cli_loose_adt_without_data_uses_the_sample_tables(world, cache):
    res = run("bake", str(world["adt"]), "--json")
    assert res.exit_code == 0, res.output + res.stderr
    js = json.loads(res.output)
    assert js["instance_count"] > 0 and js["missing_models"] == []  # tables and models from the sample world
    with B.read_bundle(js["file"]) as b:
        assert b.provenance["build"] == "3.3.5" and b.provenance["map"] == MAP_NAME


BAKE = """
import os, sys
os.environ["WOWGRASS_CACHE"] = sys.argv[1]
from wowgrass.grass.bake import bake_file
r = bake_file(sys.argv[2], dbc_dir=sys.argv[3])
print(r.path)
"""


def _bake_process(cache, world):
    return subprocess.Popen([sys.executable, "-c", BAKE, str(cache), str(world["adt"]), str(world["dbc"])],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _reference(world, tmp_path) -> tuple[str, bytes, float]:
    import time

    ref = tmp_path / "reference"
    t0 = time.perf_counter()
    p = _bake_process(ref, world)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    path = Path(out.strip())
    return path.name, path.read_bytes(), time.perf_counter() - t0


def test_bake_killed_at_random_points_never_leaves_a_wrong_bundle(world, tmp_path):
    """SIGKILL a bake subprocess at spread-out moments: every .wgb left behind reads valid and is the
    reference bundle byte for byte, or there is none; the next bake completes it."""
    import random
    import signal
    import time

    name, good, seconds = _reference(world, tmp_path)
    rng = random.Random(17)
    cache = tmp_path / "cache"
    for k in range(8):
        p = _bake_process(cache, world)
        time.sleep(seconds * (k + rng.random()) / 8 * 1.2)
        p.send_signal(signal.SIGKILL)
        p.communicate(timeout=60)
        for f in bundles(cache):
            assert f.name == name
            with B.read_bundle(f) as b:          # valid ...
                assert b.instance_count > 0
            assert f.read_bytes() == good        # ... and the right bytes
    p = _bake_process(cache, world)
    _out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    assert [f.read_bytes() for f in bundles(cache)] == [good]


def test_two_bakes_of_one_tile_at_once(world, tmp_path):
    name, good, _ = _reference(world, tmp_path)
    cache = tmp_path / "cache"
    procs = [_bake_process(cache, world) for _ in range(2)]
    results = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e for _, e in results]
    assert [f.name for f in bundles(cache)] == [name]
    assert bundles(cache)[0].read_bytes() == good
    assert not [f for f in cache.rglob("*") if f.is_file() and f.suffix != ".wgb" and "tmp" in f.name]
