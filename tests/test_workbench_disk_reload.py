"""The disk side's reload over layered data (issue 49 item 8): a tile removed from an upper layer
falls back to the layer below, as ``bake --watch`` reads it."""

from __future__ import annotations

import numpy as np

from wowgrass.edit.adt_edit import exclude_cells
from wowgrass.game.data import open_data
from wowgrass.game.maps import adt_game_path
from wowgrass.samples import MAP_NAME, build_sample_world
from wowgrass.workbench.disk import SessionFiles
from wowgrass.workbench.session import EditSession

TILE = (31, 32)


def test_a_tile_removed_from_the_upper_layer_is_read_from_the_layer_below(tmp_path):
    client = build_sample_world(tmp_path / "client", "3.3.5", (2, 1), seed=0)
    gp = adt_game_path(MAP_NAME, *TILE)
    with open_data(client) as d:
        below = d.read(gp)
    bare, _ = exclude_cells(below, gp, np.ones((256, 8, 8), bool))
    upper = tmp_path / "project" / "World" / "Maps" / MAP_NAME / gp.rsplit("\\", 1)[-1]
    upper.parent.mkdir(parents=True)
    upper.write_bytes(bare)
    with open_data([client, tmp_path / "project"]) as data:
        s = EditSession(data, MAP_NAME)
        disk = SessionFiles(s)
        assert s.tile_bytes(TILE) == bare
        seen = []
        s.subscribe(seen.append)
        upper.unlink()
        change = disk.reload([upper])      # the watcher names the removed file
        assert change.chunks == {TILE: set(range(256))} and seen and seen[-1] is change
        assert s.tile_bytes(TILE) == below and not s.tile(TILE).no_effect_doodad.all()
        assert disk.conflicts() == []      # the layer below is what the session holds now
        assert s.origins([gp])[0][1][1] is True   # loaded from the client's archive
