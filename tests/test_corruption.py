"""Damaged cache files (issue 27): a flipped byte, a truncation and a wrong format version in a cached
bundle (.wgb) or grid file (.wgc) are detected, reported once (one warning naming the file), rebuilt
to the same bytes, and never drawn: the tile the viewer loads holds the reference instances."""

from __future__ import annotations

import logging
import struct
from pathlib import Path

import numpy as np
import pytest

from wowgrass.grass import bundle as B
from wowgrass.grass import grid_tiles as G
from wowgrass.game.data import open_data
from wowgrass.render.world.game_tiles import GameSource
from wowgrass.samples import MAP_NAME, build_sample_world


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return build_sample_world(tmp_path_factory.mktemp("corrupt") / "w", "3.3.5", (1, 1), seed=0)


def load(world):
    with open_data(world) as data:
        src = GameSource(data, MAP_NAME, grass_path="grid")
        (tile,) = src.tiles
        payload = src.load_tile(*tile)
        return payload, Path(src.bakes[-1].path)


def flip(raw: bytes, at: int) -> bytes:
    b = bytearray(raw)
    b[at] ^= 0x5A
    return bytes(b)


def damage(kind: str, raw: bytes, version_offset: int, checksum) -> bytes:
    if kind == "flipped byte":   # in the instance / height data, far from the header
        return flip(raw, len(raw) - 1001)
    if kind == "truncated":
        return raw[: len(raw) * 2 // 3]
    # a wrong version with a right checksum: the file a newer or older wowgrass wrote
    b = bytearray(raw)
    struct.pack_into("<H", b, version_offset, struct.unpack_from("<H", b, version_offset)[0] + 1)
    checksum(b)
    return bytes(b)


def _bundle_sum(b):
    struct.pack_into("<I", b, B.CHECKSUM_OFFSET, B.file_checksum(b))


def _grid_sum(b):
    struct.pack_into("<I", b, G.HEADER_SIZE - 4, G.file_checksum(b))


KINDS = ["flipped byte", "truncated", "wrong version"]
EXPECT = {"flipped byte": "ChecksumError|checksum", "truncated": "says|bytes", "wrong version": "version"}


@pytest.mark.parametrize("what", ["bundle", "grid"])
@pytest.mark.parametrize("kind", KINDS)
def test_damaged_cache_file_is_reported_once_rebuilt_and_never_drawn(world, kind, what, caplog, tmp_path,
                                                                    monkeypatch):
    monkeypatch.setenv("WOWGRASS_CACHE", str(tmp_path / "cache"))
    good_payload, bundle_path = load(world)
    path = bundle_path if what == "bundle" else G.grid_path_for(bundle_path)
    good = path.read_bytes()
    other = (G.grid_path_for(bundle_path) if what == "bundle" else bundle_path).read_bytes()
    if what == "bundle":
        path.write_bytes(damage(kind, good, 4, _bundle_sum))
    else:
        path.write_bytes(damage(kind, good, 4, _grid_sum))
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="wowgrass"):
        payload, again = load(world)
        said = [r.getMessage() for r in caplog.records if str(path) in r.getMessage()]
        assert len(said) == 1, said                       # reported, once
        assert any(w in said[0] for w in EXPECT[kind].split("|")), said
        assert path.read_bytes() == good                  # rebuilt to the same bytes
        # never drawn: what the viewer got is the reference tile's grass and grid
        assert payload["grass"].keys() == good_payload["grass"].keys()
        for m, inst in good_payload["grass"].items():
            assert np.array_equal(payload["grass"][m], inst), m
        assert np.array_equal(payload["grid"].control, good_payload["grid"].control)
        assert np.array_equal(payload["grid"].heights, good_payload["grid"].heights)
        # the file beside it was fine (a new bundle has the same key, so the same grid file)
        assert (G.grid_path_for(again) if what == "bundle" else again).read_bytes() == other
        caplog.clear()
        load(world)                                       # the next load: a cache hit, nothing said
        assert not [r for r in caplog.records if str(path) in r.getMessage()]


@pytest.mark.parametrize("kind", KINDS)
def test_bake_command_reports_a_damaged_bundle_once(world, kind, tmp_path, monkeypatch, caplog):
    from click.testing import CliRunner

    from wowgrass.cli.main import cli

    monkeypatch.setenv("WOWGRASS_CACHE", str(tmp_path / "cache"))
    assert CliRunner().invoke(cli, ["bake", "--data", str(world)]).exit_code == 0
    (path,) = sorted((tmp_path / "cache").rglob("*.wgb"))
    good = path.read_bytes()
    path.write_bytes(damage(kind, good, 4, _bundle_sum))
    caplog.clear()
    res = CliRunner().invoke(cli, ["bake", "--data", str(world)])
    assert res.exit_code == 0, res.output
    assert "1 rebuilt" in res.output
    assert sum(str(path) in r.getMessage() for r in caplog.records) == 1
    assert path.read_bytes() == good
