"""Whole-map bakes: chunks of tiles on worker processes give the one-by-one bundles; bad tiles fail alone."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from wowgrass.grass.bake import ModelTable, bake_map, bake_tile, chunk_size, load_catalog, map_tiles
from wowgrass.game.data import open_data
from wowgrass.formats.mpq import MpqArchive, write_mpq
from wowgrass.samples import MAP_NAME, build_sample_world
from wowgrass.game.tiles import adt_game_path


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A 3x2-tile 3.3.5 sample world."""
    data_dir = build_sample_world(tmp_path_factory.mktemp("map-world") / "w", "3.3.5", (3, 2), seed=2, jobs=2)
    with open_data(data_dir) as data:
        tiles, big_alpha = map_tiles(data, MAP_NAME)
    assert len(tiles) == 6 and big_alpha
    return {"data": data_dir, "tiles": tiles}


def _bytes(results) -> dict:
    return {r.tile: Path(r.path).read_bytes() for r in results}


def test_map_bake_in_chunks_matches_one_by_one(world, tmp_path, monkeypatch):
    monkeypatch.setenv("WOWGRASS_CACHE", str(tmp_path / "single"))
    with open_data(world["data"]) as data:
        catalog = load_catalog(data=data)
        models = ModelTable(data.read)
        single = {}
        for c, r in world["tiles"]:
            res = bake_tile(data.read(adt_game_path(MAP_NAME, c, r)), catalog, map_name=MAP_NAME,
                            models=models, big_alpha=True)
            single[(c, r)] = Path(res.path).read_bytes()
    for jobs, chunk in ((1, None), (2, 4), (2, 1)):
        monkeypatch.setenv("WOWGRASS_CACHE", str(tmp_path / f"j{jobs}c{chunk}"))
        seen = []
        results, failures = bake_map(world["data"], MAP_NAME, jobs=jobs, chunk=chunk,
                                     progress=lambda res: seen.append(res.tile))
        assert failures == []
        assert sorted(seen) == sorted(world["tiles"])          # told once per tile
        assert [r.tile for r in results] == world["tiles"]     # returned in row order
        assert _bytes(results) == single, (jobs, chunk)
        assert all({"read", "parse", "place", "write"} <= set(r.seconds) for r in results)


def test_bad_tiles_fail_alone_inside_a_chunk(world, tmp_path, monkeypatch):
    """Two tiles broken by a patch archive: one ADT that does not parse, one whose stored sector
    does not decompress. The other tiles of their chunks are baked all the same."""
    bad_parse, bad_sector = world["tiles"][1], world["tiles"][4]
    with open_data(world["data"]) as data:
        good_adt = data.read(adt_game_path(MAP_NAME, *bad_sector))
    name = adt_game_path(MAP_NAME, *bad_sector)
    patch = bytearray(write_mpq({adt_game_path(MAP_NAME, *bad_parse): b"MVER garbage", name: good_adt},
                                format_version=1))
    e = MpqArchive.from_bytes(bytes(patch)).lookup(name)
    first = struct.unpack_from("<I", patch, e.file_pos)[0]
    patch[e.file_pos + first + 9] ^= 0xA5
    (world["data"] / "patch-3.MPQ").write_bytes(bytes(patch))
    try:
        monkeypatch.setenv("WOWGRASS_CACHE", str(tmp_path / "c"))
        results, failures = bake_map(world["data"], MAP_NAME, jobs=2, chunk=3)
    finally:
        (world["data"] / "patch-3.MPQ").unlink()
    assert sorted(f.tile for f in failures) == sorted([bad_parse, bad_sector])
    err = {f.tile: f.error for f in failures}
    assert "patch-3.MPQ" in err[bad_sector] and "sector 0" in err[bad_sector]
    assert [r.tile for r in results] == [t for t in world["tiles"] if t not in (bad_parse, bad_sector)]


def test_chunk_size_keeps_workers_busy_to_the_end():
    assert chunk_size(676, 2) == 4 and chunk_size(16, 2) == 1 and chunk_size(1, 8) == 1
    assert chunk_size(100, 1) == 3


def test_map_bake_replaces_older_bundles_of_each_tile(world, tmp_path, monkeypatch):
    from wowgrass.grass.placement import PlacementConstants

    monkeypatch.setenv("WOWGRASS_CACHE", str(tmp_path / "c"))
    tiles = world["tiles"][:3]
    first, _ = bake_map(world["data"], MAP_NAME, tiles=tiles, jobs=2, chunk=2)
    client, _ = bake_map(world["data"], MAP_NAME, tiles=tiles, jobs=1, placement="client")
    second, _ = bake_map(world["data"], MAP_NAME, tiles=tiles, jobs=2, chunk=2,
                         constants=PlacementConstants(coverage_min=40))
    folder = tmp_path / "c" / "bundles" / MAP_NAME
    kept = sorted(p.name for p in folder.glob("*.wgb"))
    # each tile: the new coverage bundle replaced the old one; the client bundle of the same tile stays
    assert kept == sorted(Path(r.path).name for r in second + client)
    assert not {r.path for r in first} & {r.path for r in second}


def test_a_stopped_pool_is_off_the_exit_list_of_concurrent_futures():
    """_stop_pool (Ctrl-C, SIGTERM) joins the pool's manager thread and takes it off the list that
    concurrent.futures wakes at exit: woken through the pipe it had closed, exit printed
    'Exception ignored ... Bad file descriptor' after a quick SIGTERM."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures import process as futures_process

    from wowgrass.grass.bake import _stop_pool

    pool = ProcessPoolExecutor(max_workers=1)
    assert pool.submit(abs, -3).result(timeout=30) == 3
    manager = pool._executor_manager_thread
    assert manager in futures_process._threads_wakeups
    _stop_pool(pool)
    assert not manager.is_alive()
    assert manager not in futures_process._threads_wakeups


def test_client_map_bake_tests_no_effect_doodad_and_counts_what_the_capacity_drops(world, tmp_path, monkeypatch):
    from wowgrass.grass.placement import ClientPlacement, PlacementConstants

    monkeypatch.setenv("WOWGRASS_CACHE", str(tmp_path / "c"))
    with open_data(world["data"]) as data:
        catalog = load_catalog(data=data)
        tiles = [_tile(data, c, r) for c, r in world["tiles"]]
    placed = {v: sum(len(ClientPlacement(PlacementConstants(client_no_effect_335=v)).place(t, catalog,
                                                                                       map_name=MAP_NAME))
                     for t in tiles) for v in (0, 1)}
    assert placed == {0: 368968, 1: 366044}  # measured on this 3x2 world (seed 2): masked cells stay bare
    results, failures = bake_map(world["data"], MAP_NAME, tiles=world["tiles"], jobs=1, placement="client")
    assert not failures
    dropped = sum(r.capacity_dropped for r in results)
    assert sum(r.instances for r in results) + dropped == placed[1] and dropped > 0


def _tile(data, c, r):
    from wowgrass.game.tiles import read_adt

    return read_adt(data.read(adt_game_path(MAP_NAME, c, r)), None, True)
