"""The tile process (render/world/tile_process.py): a window's scene prepares tiles in a process of
its own, so the frame's thread never waits for the GIL while tiles stream. What comes back must be
what the worker thread builds, array for array; the parent's source gets the reports (bakes, WMOs
missing); a damaged tile's error arrives as itself; a process that dies leaves the thread to go on."""

from __future__ import annotations

import dataclasses
import os
import pickle
import time

import numpy as np
import pytest

from wowgrass.errors import FormatError
from wowgrass.game.data import open_data
from wowgrass.pools import BACKGROUND_NICE
from wowgrass.render.world.game_tiles import GameSource
from wowgrass.render.world.streaming import tiles_centre
from wowgrass.render.world.tile_payload import prepare_payload
from wowgrass.render.world.tile_process import TileProcess
from wowgrass.samples import MAP_NAME, build_sample_world

OPTIONS = {"far_level": 3, "grass_path": "instanced", "client_look": False}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return build_sample_world(tmp_path_factory.mktemp("tileproc") / "w", "3.3.5", (2, 1), seed=0)


def assert_same(a, b, where="payload"):
    """Equal all the way down: dicts, sequences, arrays (dtype and bytes), dataclasses, values."""
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape, where
        assert a.tobytes() == b.tobytes(), where
    elif isinstance(a, dict):
        assert isinstance(b, dict) and sorted(a, key=repr) == sorted(b, key=repr), where
        for k in a:
            assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
    elif dataclasses.is_dataclass(a) or hasattr(a, "__dict__"):
        assert type(a) is type(b), where
        assert_same(vars(a), vars(b), f"{where}.")
    else:
        assert a == b, where


def wait_ready(proc, seconds=60.0):
    t0 = time.monotonic()
    while not proc.ready():
        assert proc.failed is None, proc.failed
        assert time.monotonic() - t0 < seconds, "the tile process did not start"
        time.sleep(0.02)


def test_a_tile_from_the_process_is_the_tile_the_thread_builds(world):
    with open_data(world) as data:
        src = GameSource(data, MAP_NAME)
        proc = TileProcess(src.worker_spec(), OPTIONS)
        try:
            wait_ready(proc)
            for key in src.tiles:
                for full in (True, False):
                    here = prepare_payload(src, key, full, **OPTIONS)
                    notes = {}
                    there = proc.prepare(key, full, notes.update)
                    frames = here.pop("liquid_frames")
                    assert there.pop("liquid_frames") is None  # decoded by the viewer, once
                    assert not frames or here["liquid"].cells
                    assert_same(here, there)
                    if full:  # the bake the process did (a cache hit: the thread baked it first)
                        (bake,) = notes["bakes"]
                        assert tuple(bake.tile) == tuple(key) and bake.cache_hit
            assert proc.tiles == 2 * len(src.tiles)
            # it runs nicer than the viewer: where cores are short the frame's thread goes first
            want = min(os.getpriority(os.PRIO_PROCESS, 0) + BACKGROUND_NICE, 19)
            assert os.getpriority(os.PRIO_PROCESS, proc.pid) == want
            # the arrays are the process's own buffers, writable like the thread's
            assert there["terrain"].vertices.flags.writeable
        finally:
            proc.close()
        assert proc._proc.returncode == 0


@pytest.mark.gl
def test_a_scene_streams_through_the_process_and_its_source_gets_the_reports(world, ctx):
    from wowgrass.render.gl.programs import make_programs
    from wowgrass.render.world.streaming import Scene

    with open_data(world) as data:
        counts = {}
        for mode in (False, True):
            src = GameSource(data, MAP_NAME)
            scene = Scene(ctx, make_programs(ctx), src, tile_process=mode, reach=4000.0)
            try:
                if mode:
                    wait_ready(scene._process)
                scene.update((*tiles_centre(src.tiles[:1]), 0.0), block=True)
                counts[mode] = {k: (t.grass_instances, t.doodad_instances, t.liquid_cells, t.wmo_instances)
                                for k, t in scene.tiles.items()}
                if mode:
                    assert scene._process.tiles == len(src.tiles)
                assert scene.liquids.frames is not None  # the lake's frames, decoded here for the process's tile
                assert sorted(tuple(b.tile) for b in src.bakes) == sorted(src.tiles)
            finally:
                scene.release()
            if mode:
                assert scene._process is None  # closed with the scene
        assert counts[True] == counts[False] and len(counts[True]) == 2
        assert sum(c[0] for c in counts[True].values()) > 0


def test_a_damaged_tile_comes_back_as_its_error(world, tmp_path):
    with open_data(world) as data:
        src = GameSource(data, MAP_NAME)
        key = src.tiles[0]
        from wowgrass.game.tiles import adt_game_path

        name = adt_game_path(MAP_NAME, *key)
        bad = tmp_path / "bad.adt"
        bad.write_bytes(data.read(name)[:5000])  # cut short inside the chunks
        data.add_file(name, bad)
        src = GameSource(data, MAP_NAME)
        with pytest.raises(FormatError) as here:
            prepare_payload(src, key, False, **OPTIONS)
        proc = TileProcess(src.worker_spec(), OPTIONS)
        try:
            wait_ready(proc)
            with pytest.raises(FormatError) as there:
                proc.prepare(key, False, lambda notes: None)
            assert str(there.value) == str(here.value) and there.value.offset == here.value.offset
            proc.prepare(src.tiles[1], False, lambda notes: None)  # the process goes on
        finally:
            proc.close()


def test_the_scene_goes_on_without_a_process_that_died(world, ctx, caplog):
    from wowgrass.render.gl.programs import make_programs
    from wowgrass.render.world.streaming import Scene

    with open_data(world) as data:
        src = GameSource(data, MAP_NAME)
        scene = Scene(ctx, make_programs(ctx), src, tile_process=True, reach=4000.0)
        try:
            proc = scene._process
            wait_ready(proc)
            proc._proc.kill()
            proc._proc.wait()
            scene.update((*tiles_centre(src.tiles[:1]), 0.0), block=True)
            assert len(scene.tiles) == 2 and not scene.errors
            assert scene._process is None
            assert "tile process" in caplog.text and "exited" in caplog.text
        finally:
            scene.release()


def test_errors_and_data_specs_cross_processes(world, tmp_path):
    err = FormatError("MCNK 3 runs past the end", path="x.adt", offset=0x40)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is FormatError and str(back) == str(err) and back.offset == 0x40 and back.path == "x.adt"
    with open_data(world) as data:
        extra = tmp_path / "extra.txt"
        extra.write_bytes(b"added")
        data.add_file("Interface\\extra.txt", extra)
        again = pickle.loads(pickle.dumps(data.spec())).open()
        try:
            assert again.archives == data.archives and again.build == data.build and again.locale == data.locale
            assert again.read("interface/EXTRA.txt") == b"added"
            name = data.list("*.adt")[0]
            assert again.read(name) == data.read(name)
        finally:
            again.close()
