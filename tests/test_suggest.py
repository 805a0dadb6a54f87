"""Suggestions from the client's own maps (issue 40.6): the scan's counts equal those of the full
tile reader, the scan is cached, and `effects assign --suggest` gives a project's bare layers the
effect the client's maps give their texture most often."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from wowgrass.cli.main import cli
from wowgrass.edit.adt_edit import assign_effect, read_tile
from wowgrass.edit.suggest import client_effects, layer_effects
from wowgrass.formats.adt import NO_EFFECT_IDS
from wowgrass.game.data import open_data
from wowgrass.game.maps import adt_game_path, map_tiles
from wowgrass.samples import MAP_NAME, build_sample_world

GRASS = "Tileset\\Sample\\SampleGrass.blp"


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The sample client (MPQs) and a project over it whose tile 31,32 lost its grass's effect ids."""
    base = tmp_path_factory.mktemp("suggest")
    client = build_sample_world(base / "client", "3.3.5", (2, 1), seed=0)
    gp = adt_game_path(MAP_NAME, 31, 32)
    with open_data(client) as g:
        raw = g.read(gp)
        truth: Counter = Counter()
        for c, r in map_tiles(g, MAP_NAME).tiles:
            t = read_tile(g.read(adt_game_path(MAP_NAME, c, r)), big_alpha=True)
            exists = np.arange(4)[None, :] < t.n_layers[:, None]
            grass = exists & (t.layer_texture == t.textures.index(GRASS)) & ~np.isin(t.layer_effect, NO_EFFECT_IDS)
            truth.update(t.layer_effect[grass].tolist())
    bare, _ = assign_effect(raw, gp, "SampleGrass", 0)
    proj = base / "proj"
    p = proj.joinpath(*gp.split("\\"))
    p.parent.mkdir(parents=True)
    p.write_bytes(bare)
    return {"client": client, "proj": proj, "truth": truth, "gp": gp, "raw": raw}


def test_layer_effects_reads_what_the_tile_reader_reads(world):
    t = read_tile(world["raw"], big_alpha=True)
    textures, tex, eff = layer_effects(world["raw"])
    exists = np.arange(4)[None, :] < t.n_layers[:, None]
    assert textures == t.textures
    pairs = sorted(zip(tex.tolist(), eff.tolist()))
    assert pairs == sorted(zip(t.layer_texture[exists].astype(int).tolist(), t.layer_effect[exists].astype(int).tolist()))


def test_scan_counts_and_cache(world):
    with open_data([world["client"], world["proj"]]) as data:
        scan = client_effects(data, refresh=True)
        assert not scan.cached and scan.tile_count == 2 and scan.map_count == 1 and not scan.failed
        # the client's own maps: the project's bare layers do not count
        want = sorted(world["truth"].items(), key=lambda kv: (-kv[1], kv[0]))
        assert scan.suggest(GRASS, n=10) == want and scan.suggest(GRASS.lower().replace("\\", "/"), n=10) == want
        assert scan.suggest("Tileset\\Nowhere.blp") == []
        again = client_effects(data)
        assert again.cached and again.suggest(GRASS, n=10) == want and again.tile_count == 2


def test_assign_suggest_gives_the_clients_choice(world, tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    res = run("effects", "assign", "--data", world["client"], "--data", world["proj"], "--tile", "31,32", "--suggest",
              "-o", out, "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    top = max(world["truth"].items(), key=lambda kv: (kv[1], -kv[0]))
    assert doc["chosen"][0]["texture"] == GRASS and doc["chosen"][0]["effect"] == top[0]
    assert doc["chosen"][0]["layer_count"] == top[1]
    new = out.joinpath(*world["gp"].split("\\")).read_bytes()
    t = read_tile(new, big_alpha=True)
    bare = read_tile(world["proj"].joinpath(*world["gp"].split("\\")).read_bytes(), big_alpha=True)
    grass = (np.arange(4)[None, :] < t.n_layers[:, None]) & (t.layer_texture == t.textures.index(GRASS))
    was_bare = grass & np.isin(bare.layer_effect, NO_EFFECT_IDS)
    assert was_bare.sum() > 50 and (t.layer_effect[was_bare] == top[0]).all()
    assert np.array_equal(t.layer_effect[~was_bare], bare.layer_effect[~was_bare])   # nothing else moved
    text = run("effects", "assign", "--data", world["client"], "--data", world["proj"], "--tile", "31,32",
               "--suggest", "-n")
    assert text.exit_code == 0 and f"{GRASS}: effect {top[0]}" in text.output and "dry run" in text.output


def test_assign_suggest_refusals(world):
    r = run("effects", "assign", "--data", world["client"], "--suggest", "--effect", "3", "-n")
    assert r.exit_code == 2 and "--suggest chooses" in r.stderr
    r = run("effects", "assign", "--data", world["client"], "--texture", "x", "-n")
    assert r.exit_code == 2 and "--effect" in r.stderr


def test_session_suggestions(world):
    from wowgrass.workbench.session import EditSession

    with open_data([world["client"], world["proj"]]) as data:
        s = EditSession(data, MAP_NAME)
        s.tile((31, 32))
        assert s.unassigned_textures().get(GRASS, 0) > 50
        got = s.suggestions(GRASS)
        want = sorted(world["truth"].items(), key=lambda kv: (-kv[1], kv[0]))[:5]
        assert [(g["effect_id"], g["layer_count"]) for g in got] == want and all(g["has_row"] for g in got)
        s.assign_texture(GRASS, got[0]["effect_id"], tile=(31, 32), only_unassigned=True)
        assert GRASS not in s.unassigned_textures()


def test_assign_suggest_with_a_glob_matching_nothing_is_the_same_error(world):
    # issue 49.15: with --suggest a glob matching no texture exited 0 doing nothing; without it, an error
    # naming the closest textures: the same error either way
    data = ("--data", world["client"], "--data", world["proj"], "--tile", "31,32")
    plain = run("effects", "assign", *data, "--texture", "SampleGras*x", "--effect", "1001", "-n")
    suggested = run("effects", "assign", *data, "--texture", "SampleGras*x", "--suggest", "-n")
    assert plain.exit_code == 2 and suggested.exit_code == 2, suggested.output
    err = plain.stderr.strip().splitlines()[-1]
    assert err.startswith("error: no texture of map") and "closest: " in err and "SampleGrass" in err
    assert suggested.stderr.strip().splitlines()[-1] == err
    assert "dry run" not in suggested.output
