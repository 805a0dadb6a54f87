"""The session's answers a panel shows, field by field (issue 49's mutation target for
workbench/session.py): the Cell panel's dictionary, which tiles are read, the bare textures counted
over every tile read, and the suggestions (five by default, the scan made once)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from wowgrass.errors import UsageError
from wowgrass.formats.adt import UNIT_SIZE
from wowgrass.game.data import open_data
from wowgrass.game.maps import adt_game_path
from wowgrass.samples import MAP_NAME, build_sample_world
from wowgrass.workbench.session import CellRef, EditSession

WEST, EAST = (31, 32), (32, 32)
GRASS = "Tileset\\Sample\\SampleGrass.blp"
DIRT = "Tileset\\Sample\\SampleDirt.blp"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The 3.3.5 sample world (2x1 tiles) as MPQs and as a loose copy of every file."""
    base = tmp_path_factory.mktemp("mutsession")
    mpq = build_sample_world(base / "mpq", "3.3.5", (2, 1), seed=0)
    loose = base / "loose"
    with open_data(mpq) as g:
        for name in g.list("*"):
            p = loose.joinpath(*name.split("\\"))
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(g.read(name))
    return {"mpq": mpq, "loose": loose}


def ref_of(s: EditSession, tile, idx: int, c: int, r: int) -> CellRef:
    t = s.tile(tile)
    return CellRef(tile, (int(t.index_xy[idx, 0]), int(t.index_xy[idx, 1])), (c, r))


def cell_alpha(t, idx: int, k: int, c: int, r: int) -> float:
    """Layer k's alpha over cell (c, r) as a share of 255: the 8x8 texels of the cell."""
    blocks = t.alpha[idx, k].reshape(8, 8, 8, 8)         # (cell row, texel row, cell column, texel column)
    return float(blocks[r, :, c, :].astype(np.float64).sum()) / 64 / 255


def test_cell_info_gives_every_field_of_the_cell(world):
    with open_data(world["mpq"]) as data:
        s = EditSession(data, MAP_NAME)
        t = s.tile(WEST)
        # a cell of a three-layer chunk away from its chunk's edges, with grass, whose layers' alpha
        # differs from that of the cells beside it (so a cell's texels taken from elsewhere show)
        pick = None
        for idx in np.flatnonzero(t.n_layers == 3):
            inst = s.chunk_instances(WEST, int(idx))
            for r in range(1, 7):
                for c in range(1, 7):
                    if t.no_effect_doodad[idx, r, c] or t.hole_cells()[idx, r, c]:
                        continue
                    if (inst.cell == r * 8 + c).sum() < 2 or int(t.doodad_mapping[idx, r, c]) >= 3:
                        continue
                    a = [cell_alpha(t, idx, k, c, r) for k in (1, 2)]
                    near = [cell_alpha(t, idx, k, c + dc, r + dr) for k in (1, 2) for dc, dr in ((1, 0), (0, 1))]
                    if min(a) > 0.01 and all(abs(x - a[0]) > 1e-3 and abs(x - a[1]) > 1e-3 for x in near):
                        pick = (int(idx), c, r)
                        break
                if pick:
                    break
            if pick:
                break
        assert pick is not None, "the sample world has such a cell"
        idx, c, r = pick
        ref = ref_of(s, WEST, idx, c, r)
        inst = s.chunk_instances(WEST, idx)
        dm = int(t.doodad_mapping[idx, r, c])
        eid = int(t.layer_effect[idx, dm])
        row = s.catalog.row(eid)
        assert row is not None and row["models"] and row["weights"]
        here = np.flatnonzero(inst.cell == r * 8 + c)
        want = {
            "tile": [31, 32], "chunk": list(ref.chunk), "cell": [c, r], "mcnk_index": idx,
            "layers": [{"index": k, "texture": t.textures[int(t.layer_texture[idx, k])],
                        "effect_id": int(t.layer_effect[idx, k]),
                        "alpha_mean": 1.0 if k == 0 else round(cell_alpha(t, idx, k, c, r), 4)} for k in range(3)],
            "doodad_mapping": dm, "no_effect_doodad": False, "hole": False,
            "effect": {"id": eid, "density": row["density"], "models": row["models"], "weights": row["weights"]},
            "grass": [{"model": inst.models[int(inst.model[i])], "x": float(inst.pos[i, 0]), "y": float(inst.pos[i, 1]),
                       "z": float(inst.pos[i, 2]), "yaw": float(inst.yaw[i]), "scale": float(inst.scale[i])}
                      for i in here],
        }
        info = s.cell_info(ref)
        assert info == want
        assert all(0 < g["alpha_mean"] < 1 for g in info["layers"][1:])
        assert len({g["yaw"] for g in info["grass"]}) > 1 and len({g["scale"] for g in info["grass"]}) > 1
        # every plant listed stands in the cell: rows run south (-X) and columns west (-Y) of the
        # chunk's north-west corner
        x0, y0 = (float(v) for v in t.positions[idx][:2])
        for g in info["grass"]:
            assert x0 - (r + 1) * UNIT_SIZE - 1e-3 <= g["x"] <= x0 - r * UNIT_SIZE + 1e-3
            assert y0 - (c + 1) * UNIT_SIZE - 1e-3 <= g["y"] <= y0 - c * UNIT_SIZE + 1e-3


def test_cell_info_of_an_excluded_cell_a_hole_and_effects_without_a_row(world):
    with open_data(world["mpq"]) as data:
        s = EditSession(data, MAP_NAME)
        t = s.tile(WEST)
        # a hole
        idx, r, c = (int(v) for v in np.argwhere(t.hole_cells())[0])
        assert s.cell_info(ref_of(s, WEST, idx, c, r))["hole"] is True
        # an excluded cell (set by the brush on its centre): the bit, and no grass in it
        idx = int(np.flatnonzero(t.n_layers == 3)[0])
        cells = np.argwhere(~t.no_effect_doodad[idx] & ~t.hole_cells()[idx])
        r, c = (int(v) for v in cells[0])
        x, y = t.cell_centres()[idx, r, c]
        s.exclude(float(x), float(y), 0.5)
        info = s.cell_info(ref_of(s, WEST, idx, c, r))
        assert info["no_effect_doodad"] is True and info["grass"] == [] and info["hole"] is False
        # the mapped layer's effect has no GroundEffectTexture row: its id, nothing else
        r, c = (int(v) for v in cells[1])
        mapping = t.doodad_mapping.copy()
        mapping[idx, r, c] = 1
        effect = t.layer_effect.astype(np.int64)
        effect[idx, 1] = 4242
        assert s.catalog.row(4242) is None
        s.set_fields(WEST, effect=effect, doodad_mapping=mapping)
        info = s.cell_info(ref_of(s, WEST, idx, c, r))
        assert info["doodad_mapping"] == 1 and info["layers"][1]["effect_id"] == 4242
        assert info["effect"] == {"id": 4242, "density": None, "models": [], "weights": None}
        # the mapping names a layer the chunk lacks: no effect at all
        mapping[idx, r, c] = 3
        s.set_fields(WEST, doodad_mapping=mapping)
        info = s.cell_info(ref_of(s, WEST, idx, c, r))
        assert info["doodad_mapping"] == 3 and len(info["layers"]) == 3
        assert info["effect"] is None and info["grass"] == []


def test_has_read_names_the_tiles_read_so_far(world):
    with open_data(world["mpq"]) as data:
        s = EditSession(data, MAP_NAME)
        assert not s.has_read(WEST) and not s.has_read(EAST)
        s.tile(WEST)
        assert s.has_read(WEST) and s.has_read([31, 32]) and not s.has_read(EAST)
        assert s.tile_version(WEST) == 0 and s.tile_version(EAST) == 0


def bare(t, tex: str, chunks, value: int) -> np.ndarray:
    """t's effect ids with ``tex``'s layers in ``chunks`` given ``value``."""
    effect = t.layer_effect.astype(np.int64)
    exists = np.arange(4)[None, :] < t.n_layers[:, None]
    sel = exists & (t.layer_texture == t.textures.index(tex))
    sel[np.setdiff1d(np.arange(256), chunks)] = False
    effect[sel] = value
    return effect, int(sel.sum())


def test_unassigned_textures_are_counted_over_every_tile_read(world):
    with open_data(world["mpq"]) as data:
        s = EditSession(data, MAP_NAME)
        assert s.unassigned_textures() == {}              # nothing read yet
        w, e = s.tile(WEST), s.tile(EAST)
        assert s.unassigned_textures() == {}              # every layer of the sample world has an effect
        effect, n_w = bare(w, GRASS, range(0, 40), 0)
        s.set_fields(WEST, effect=effect)
        effect, n_e = bare(e, GRASS, range(100, 130), 0xFFFF)
        effect2, n_d = bare(e, DIRT, range(0, 256), 0xFFFFFFFF)
        effect[effect2 == 0xFFFFFFFF] = 0xFFFFFFFF
        s.set_fields(EAST, effect=effect)
        assert n_w > 0 and n_e > 0 and n_d > 0
        assert s.unassigned_textures() == {GRASS: n_w + n_e, DIRT: n_d}


@pytest.fixture(scope="module")
def seven_effects(world, tmp_path_factory):
    """A loose client whose grass layers carry seven effect ids, each on a different number of
    layers: {effect id: layers}."""
    root = tmp_path_factory.mktemp("seven") / "Data"
    shutil.copytree(world["loose"], root)
    from wowgrass.edit.adt_edit import patch_fields, read_tile

    counts: dict[int, int] = {}
    for key in (WEST, EAST):
        p = root.joinpath(*adt_game_path(MAP_NAME, *key).split("\\"))
        raw = p.read_bytes()
        t = read_tile(raw, p, big_alpha=True)
        exists = np.arange(4)[None, :] < t.n_layers[:, None]
        grass = exists & (t.layer_texture == t.textures.index(GRASS))
        effect = t.layer_effect.astype(np.int64)
        # chunk i's grass layers get effect 1001 + (the largest k with k*(k+1)/2 <= i % 28): 7 ids, shares
        # growing with k
        k = np.floor((np.sqrt(8 * (np.arange(256) % 28) + 1) - 1) / 2).astype(np.int64)
        effect = np.where(grass, (1001 + k)[:, None], effect)
        for e, n in zip(*np.unique(effect[grass], return_counts=True)):
            counts[int(e)] = counts.get(int(e), 0) + int(n)
        p.write_bytes(patch_fields(raw, t, effect=effect)[0])
    return root, counts


def test_suggestions_are_five_by_default_and_scan_once(seven_effects, monkeypatch):
    import wowgrass.edit.suggest as suggest

    root, counts = seven_effects
    assert len(counts) == 7 and len(set(counts.values())) == 7
    best = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    scans, seen = [], []
    real = suggest.client_effects

    def counting(data, **kw):
        scans.append(kw)
        return real(data, **kw)

    monkeypatch.setattr(suggest, "client_effects", counting)
    with open_data(root) as data:
        s = EditSession(data, MAP_NAME)
        got = s.suggestions(GRASS, progress=lambda *a: seen.append(a))
        assert [(g["effect_id"], g["layer_count"]) for g in got] == best[:5]
        assert [g["has_row"] for g in got] == [s.catalog.row(e) is not None for e, _ in best[:5]]
        assert seen, "the first call scans the client's maps, reporting its progress"
        assert [(g["effect_id"], g["layer_count"]) for g in s.suggestions(GRASS, 2)] == best[:2]
        assert [g["effect_id"] for g in s.suggestions(GRASS, 7)] == [e for e, _ in best]
        assert len(scans) == 1                              # the scan is kept for the session's life


# ----------------------------------------------------------------------------- four tiles

NW, NE, SW, SE = (31, 31), (32, 31), (31, 32), (32, 32)


@pytest.fixture(scope="module")
def four(tmp_path_factory):
    """The 3.3.5 sample world of 2x2 tiles: (31, 31), (32, 31), (31, 32), (32, 32), as MPQs and as a
    loose copy."""
    base = tmp_path_factory.mktemp("mutsession4")
    mpq = build_sample_world(base / "mpq", "3.3.5", (2, 2), seed=0)
    loose = base / "loose"
    with open_data(mpq) as g:
        for name in g.list("*"):
            p = loose.joinpath(*name.split("\\"))
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(g.read(name))
    return {"mpq": mpq, "loose": loose}


def centre(s, tile, idx, r, c):
    x, y = s.tile(tile).cell_centres()[idx, r, c]
    return float(x), float(y)


def free_cell(t, idx):
    """(r, c) of a cell of chunk ``idx`` without its noEffectDoodad bit, away from the chunk's edges."""
    r, c = (int(v) for v in np.argwhere(~t.no_effect_doodad[idx, 1:7, 1:7])[0] + 1)
    return r, c


def test_a_brush_reads_only_the_tiles_it_reaches_and_takes_radius_0(four):
    with open_data(four["mpq"]) as data:
        for tile in (NW, NE, SW, SE):
            s = EditSession(data, MAP_NAME)
            t = s.tile(tile)
            r, c = free_cell(t, 119)                     # a cell in the middle of the tile
            x, y = centre(s, tile, 119, r, c)
            ch = s.exclude(x, y, 0)                      # radius 0: the cell whose centre it is
            assert ch.label == f"exclude r=0 at ({x:.1f}, {y:.1f})"
            assert ch.chunks == {tile: {119}} and [k for k in (NW, NE, SW, SE) if s.has_read(k)] == [tile]
            new = s.tile(tile).no_effect_doodad
            assert int((new != t.no_effect_doodad).sum()) == 1 and new[119, r, c]
        s = EditSession(data, MAP_NAME)
        t = s.tile(SW)
        r, c = free_cell(t, 119)
        x, y = centre(s, SW, 119, r, c)
        s.exclude(x, y, 0.5)
        assert s.tile(SW).no_effect_doodad[119, r, c]
        assert [k for k in (NW, NE, SW, SE) if s.has_read(k)] == [SW]
        for bad in (-1, float("nan")):
            with pytest.raises(UsageError) as err:
                s.exclude(x, y, bad)
            assert str(err.value) == f"brush radius {float(bad)}: yards, 0 or more"


def test_undo_and_redo_name_what_they_changed(four):
    with open_data(four["mpq"]) as data:
        s = EditSession(data, MAP_NAME)
        t = s.tile(SW)
        effect = t.layer_effect.astype(np.int64).ravel()       # (a flat array is taken too)
        effect[3 * 4] = 1006 if effect[3 * 4] != 1006 else 1005
        mapping = t.doodad_mapping.copy()
        mapping[7, 0, 0] = (int(mapping[7, 0, 0]) + 1) % int(t.n_layers[7])
        ch = s.set_fields(SW, "two fields", effect=effect, doodad_mapping=mapping)
        assert (ch.label, ch.source, ch.chunks, ch.tables) == ("two fields", "edit", {SW: {3, 7}}, False)
        edited = s.tile(SW)
        assert edited.layer_effect.shape == (256, 4) and int(edited.layer_effect[3, 0]) == effect[12]
        ch = s.undo()
        assert (ch.label, ch.source, ch.chunks, ch.tables) == ("undo two fields", "undo", {SW: {3, 7}}, False)
        back = s.tile(SW)
        for name in ("layer_effect", "doodad_mapping", "no_effect_doodad"):
            assert np.array_equal(getattr(back, name), getattr(t, name)), name
        ch = s.redo()
        assert (ch.label, ch.source, ch.chunks, ch.tables) == ("redo two fields", "redo", {SW: {3, 7}}, False)
        assert np.array_equal(s.tile(SW).layer_effect, edited.layer_effect)
        assert np.array_equal(s.tile(SW).doodad_mapping, mapping)
        new_id = s.preview_set(["World\\NoDXT\\Detail\\ElwGra02.m2"], [16], 5)
        ch = s.undo()
        assert (ch.label, ch.source, ch.chunks, ch.tables) == (f"undo new set {new_id}", "undo", {}, True)
        assert s.catalog.row(new_id) is None
        ch = s.redo()
        assert (ch.source, ch.tables) == ("redo", True) and s.catalog.row(new_id)["density"] == 5


def test_versions_count_each_tiles_changes_and_the_tables(four):
    with open_data(four["mpq"]) as data:
        s = EditSession(data, MAP_NAME)
        assert s.tile_version(SW) == 0 and s.tables_version == 0        # not read yet
        s.tile(SE)
        x, y = centre(s, SW, 119, *free_cell(s.tile(SW), 119))
        assert (s.tile_version(SW), s.tile_version(SE)) == (0, 0)
        s.exclude(x, y, 0)
        assert (s.tile_version(SW), s.tile_version(SE)) == (1, 0)
        x, y = centre(s, SE, 119, *free_cell(s.tile(SE), 119))
        s.exclude(x, y, 0)
        s.exclude(x, y, 6)
        assert (s.tile_version(SW), s.tile_version(SE), s.tables_version) == (1, 2, 0)
        s.undo()
        assert (s.tile_version(SW), s.tile_version(SE), s.tables_version) == (1, 3, 0)
        assert s.tile_state(SW) == (s.tile_bytes(SW), 1) and s.tile_state(SE) == (s.tile_bytes(SE), 3)
        s.preview_set(["World\\NoDXT\\Detail\\ElwGra02.m2"], [16], 5)
        assert s.tables_version == 1
        s.undo()
        assert (s.tile_version(SW), s.tile_version(SE), s.tables_version) == (1, 3, 2)
        assert s.tile_version(NW) == 0 and not s.has_read(NW)


def test_unsubscribed_hear_nothing_more(four):
    with open_data(four["mpq"]) as data:
        s = EditSession(data, MAP_NAME)
        heard, at_once = [], []

        def later(change):
            heard.append(change.label)

        def now(change):
            at_once.append(change.label)

        s.subscribe(later)
        s.subscribe(now, at_once=True)
        x, y = centre(s, SW, 119, *free_cell(s.tile(SW), 119))
        s.exclude(x, y, 0)
        s.unsubscribe(later)
        s.unsubscribe(lambda change: None)                   # never subscribed: nothing happens
        s.undo()
        s.unsubscribe(now)
        s.redo()
        assert heard == [f"exclude r=0 at ({x:.1f}, {y:.1f})"]
        assert at_once == [heard[0], "undo " + heard[0]]


def test_cell_at_on_chunk_corners_and_from_the_views_grid(four):
    with open_data(four["mpq"]) as data:
        s = EditSession(data, MAP_NAME)
        grid = EditSession(data, MAP_NAME).tile(SW)            # the view's copy of the tile
        t = grid
        x, y = (float(v) for v in t.cell_centres()[0, 0, 0])   # chunk 0, cell (0, 0)
        assert s.cell_at(x, y, grid=grid) == CellRef(SW, (0, 0), (0, 0)) and not s.has_read(SW)
        assert s.cell_at(x, y) == CellRef(SW, (0, 0), (0, 0)) and s.has_read(SW)
        # the south-east corner of chunk 17: its last cell, not a ninth row or column
        pos = t.positions[17]
        assert s.cell_at(float(pos[0] - 8 * UNIT_SIZE), float(pos[1] - 8 * UNIT_SIZE)) == CellRef(SW, (1, 1), (7, 7))
        x, y = (float(v) for v in t.cell_centres()[17, 7, 0])
        assert s.cell_at(x, y, grid=grid) == CellRef(SW, (1, 1), (0, 7))


def test_files_since_saved_come_row_by_row(four):
    with open_data(four["mpq"]) as data:
        s = EditSession(data, MAP_NAME)
        for tile in (SE, NE, SW, NW):                            # edited (and read) in reverse
            x, y = centre(s, tile, 119, *free_cell(s.tile(tile), 119))
            s.exclude(x, y, 0)
        assert list(s.files_since_saved()) == [adt_game_path(MAP_NAME, *k) for k in (NW, NE, SW, SE)]
        assert s.changed_tiles == [NW, NE, SW, SE]


def test_mark_saved_and_origins(four, tmp_path, monkeypatch):
    import hashlib

    from wowgrass.game.effects import TEXTURE_PATH

    root = tmp_path / "Data"
    shutil.copytree(four["loose"], root)
    with open_data(root) as data:
        refreshed = []
        monkeypatch.setattr(data, "refresh", lambda: refreshed.append(1), raising=False)
        s = EditSession(data, MAP_NAME)
        gp = adt_game_path(MAP_NAME, *SW)
        loaded = s.tile_bytes(SW)
        x, y = centre(s, SW, 119, *free_cell(s.tile(SW), 119))
        s.exclude(x, y, 0)
        raw = s.tile_bytes(SW)
        path = root.joinpath(*gp.split("\\"))
        first = (gp, (path, False), ("sha256", hashlib.sha256(loaded).hexdigest()))
        assert s.origins([TEXTURE_PATH, "World\\nothing.adt", gp])[1:] == [first]
        assert s.origins([TEXTURE_PATH])[0][0] == TEXTURE_PATH
        assert s.mark_saved([gp]) == [SW] and s.changed_tiles == [] and refreshed == []
        assert s.origins([gp]) == [first]                        # written elsewhere: still read from there
        path.write_bytes(raw)
        assert s.mark_saved([gp], in_place=True) == [SW] and refreshed == [1]
        assert s.origins([gp]) == [(gp, (path, False), ("sha256", hashlib.sha256(raw).hexdigest()))]


def test_a_changed_set_takes_the_new_models(four):
    with open_data(four["mpq"]) as data:
        s = EditSession(data, MAP_NAME)
        old = s.catalog.row(1001)
        model = "World\\NoDXT\\Detail\\ElwGra07.m2"
        assert all("elwgra07" not in m.lower() for m in old["models"] if m)
        assert s.preview_set([model], [16], 7, effect_id=1001) == 1001
        row = s.catalog.row(1001)
        assert [m.lower() for m in row["models"] if m] == [model.lower()] and row["density"] == 7


def test_a_session_without_its_tables_says_which_and_where(four, tmp_path):
    root = tmp_path / "Data"
    shutil.copytree(four["loose"], root)
    (root / "DBFilesClient" / "GroundEffectDoodad.dbc").unlink()
    with open_data(root) as data:
        with pytest.raises(UsageError) as err:
            EditSession(data, MAP_NAME)
        assert str(err.value) == (f"{data.root} has no DBFilesClient\\GroundEffectDoodad.dbc: the session needs both "
                                  "ground-effect tables (give dbc_dir, or lay the folder over the client's Data: "
                                  "--data CLIENT --data PROJECT)")
        empty = tmp_path / "empty"
        empty.mkdir()
        with pytest.raises(UsageError) as err:
            EditSession(data, MAP_NAME, dbc_dir=empty)
        assert str(err.value) == (f"{empty} has no GroundEffectTexture.dbc and GroundEffectDoodad.dbc (nor has its "
                                  "DBFilesClient folder)")
    shutil.rmtree(root / "DBFilesClient")
    with open_data(root) as data:
        with pytest.raises(UsageError) as err:
            EditSession(data, MAP_NAME)
        assert str(err.value).startswith(f"{data.root} has no DBFilesClient\\GroundEffectTexture.dbc nor "
                                         "DBFilesClient\\GroundEffectDoodad.dbc: ")


def test_a_tile_not_in_the_data_is_named(four):
    with open_data(four["mpq"]) as data:
        s = EditSession(data, MAP_NAME)
        with pytest.raises(UsageError) as err:
            s.tile((5, 7))
        assert str(err.value) == f"map {MAP_NAME!r} has no tile 5,7 in the data"


def test_tiles_keeping_the_mapping_msb_first_are_read_so(four, tmp_path):
    from wowgrass.formats.adt import write_adt

    root = tmp_path / "Data"
    shutil.copytree(four["loose"], root)
    with open_data(root) as data:
        t = EditSession(data, MAP_NAME).tile(SW)
    assert (t.doodad_mapping[:, :, :4] != t.doodad_mapping[:, :, 3::-1]).any()   # not the same in either order
    t.doodad_map_msb_first = True
    root.joinpath(*adt_game_path(MAP_NAME, *SW).split("\\")).write_bytes(write_adt(t))   # as noggit3 writes it
    with open_data(root) as data:
        assert EditSession(data, MAP_NAME, msb_first=True).msb_first is True
        assert np.array_equal(EditSession(data, MAP_NAME, msb_first=True).tile(SW).doodad_mapping, t.doodad_mapping)
        assert not np.array_equal(EditSession(data, MAP_NAME).tile(SW).doodad_mapping, t.doodad_mapping)


def test_origins_in_an_archive_are_its_size_and_time(four):
    import os
    from pathlib import Path

    from wowgrass.game.effects import TEXTURE_PATH

    with open_data(four["mpq"]) as data:
        s = EditSession(data, MAP_NAME)
        gp = adt_game_path(MAP_NAME, *SW)
        s.tile(SW)
        got = s.origins([gp, TEXTURE_PATH])
        want = []
        for p in (gp, TEXTURE_PATH):
            archive = Path(data.locate(p)[0])
            st = os.stat(archive)
            want.append((p, (archive, True), ("stat", st.st_size, st.st_mtime_ns)))
        assert got == want


def test_a_pick_on_the_seam_a_chunks_rounded_corner_leaves_is_its_edge_cell(four):
    """A chunk's corner is stored as float32: where it lies a hair south or east of where the tile's
    grid puts it, a point in between belongs to the chunk (by the grid) but lies "before" its corner;
    the pick gives the chunk's first row or column, never row or column -1."""
    from wowgrass.formats.adt import CHUNK_SIZE

    with open_data(four["mpq"]) as data:
        s = EditSession(data, MAP_NAME)
        seen = set()
        for tile in (SW, NE):
            t = s.tile(tile)
            p = t.positions.astype(np.float64)
            grid_x = p[0, 0] - t.index_xy[:, 1] * CHUNK_SIZE
            grid_y = p[0, 1] - t.index_xy[:, 0] * CHUNK_SIZE
            for axis, grid in ((0, grid_x), (1, grid_y)):
                off = np.flatnonzero(p[:, axis] < grid)
                if not off.size:
                    continue
                k = int(off[0])
                at = [p[k, 0] - 10.0, p[k, 1] - 10.0]          # (a cell in the middle otherwise)
                at[axis] = (p[k, axis] + grid[k]) / 2
                assert int(t.chunk_index_at(*at)) == k
                ref = s.cell_at(*at)
                assert ref.chunk == tuple(int(v) for v in t.index_xy[k])
                assert ref.cell == ((2, 0) if axis == 0 else (0, 2))
                seen.add(axis)
        assert seen == {0, 1}


def test_at_once_subscribers_hear_a_change_before_the_others(four):
    with open_data(four["mpq"]) as data:
        s = EditSession(data, MAP_NAME)
        order = []
        s.subscribe(lambda ch: order.append(("later", ch.label)))
        s.subscribe(lambda ch: order.append(("at once", ch.label)), at_once=True)
        x, y = centre(s, SW, 119, *free_cell(s.tile(SW), 119))
        label = s.exclude(x, y, 0).label
        assert order == [("at once", label), ("later", label)]


class WithoutAddFile:
    """A data source that cannot take files of other folders (no ``add_file``)."""

    def __init__(self, data):
        self._data = data

    def __getattr__(self, name):
        if name == "add_file":
            raise AttributeError(name)
        return getattr(self._data, name)


def test_tables_of_their_own_need_a_data_source_that_takes_them(four, tmp_path):
    root = tmp_path / "Data"
    shutil.copytree(four["loose"], root)
    tables = tmp_path / "tables"
    shutil.move(root / "DBFilesClient", tables)
    with open_data(root) as data:
        with pytest.raises(UsageError) as err:
            EditSession(WithoutAddFile(data), MAP_NAME, dbc_dir=tables)
        assert str(err.value) == "tables from a folder of their own need a GameData source"
        assert EditSession(data, MAP_NAME, dbc_dir=tables).catalog.row(1001) is not None


def test_the_tables_of_a_243_client_read_as_243(tmp_path):
    """1.12 and 2.4.3 lay GroundEffectTexture out alike: the data's build tells them apart."""
    with open_data(build_sample_world(tmp_path / "mpq", "2.4.3", (1, 1), seed=0)) as data:
        assert data.build == "2.4.3"
        s = EditSession(data, MAP_NAME)
        assert (s.catalog.build, s.build, s.tables_build) == ("2.4.3", "2.4.3", None)
        forced = EditSession(data, MAP_NAME, build="1.12")
        assert (forced.catalog.build, forced.build, forced.tables_build) == ("1.12", "1.12", "1.12")


def test_a_client_without_its_locale_archives_says_so(four, tmp_path):
    """An MPQ client keeps its tables in the locale archives: without them the error says which
    folder to copy, not the loose folder's advice."""
    from wowgrass.errors import GameFileNotFound

    client = tmp_path / "Data"
    shutil.copytree(four["mpq"], client, ignore=shutil.ignore_patterns("enUS"))
    with open_data(client) as data:
        assert data.archives
        with pytest.raises(GameFileNotFound) as err:
            EditSession(data, MAP_NAME)
        assert str(err.value).startswith("DBFilesClient\\GroundEffectTexture.dbc: not in ")
        assert "no locale folder" in str(err.value) and "lay the folder over" not in str(err.value)


def test_a_session_keeps_what_it_was_opened_with(four):
    import dataclasses

    from wowgrass.grass.placement import PlacementConstants

    with open_data(four["mpq"]) as data:
        s = EditSession(data, MAP_NAME)
        assert (s.placement, s.msb_first, s.strategy.constants) == ("client", False, PlacementConstants())
        mine = dataclasses.replace(PlacementConstants(), seed=PlacementConstants().seed + 1)
        s = EditSession(data, MAP_NAME, placement="coverage", constants=mine, msb_first=1)
        assert (s.placement, s.msb_first, s.strategy.constants) == ("coverage", True, mine)


def loose_copy(four, tmp_path):
    root = tmp_path / "Data"
    shutil.copytree(four["loose"], root)
    return root


def test_tiles_are_read_in_the_alpha_format_the_wdt_gives(four, tmp_path):
    """The WDT's flag decides 8-bit or 4-bit alpha; the tile is not asked (an 8-bit tile may parse as
    4-bit, wrongly): a tile of the other format is an error naming it."""
    from wowgrass.errors import FormatError

    root = loose_copy(four, tmp_path)
    wdt = root / "World" / "Maps" / MAP_NAME / f"{MAP_NAME}.wdt"
    raw = bytearray(wdt.read_bytes())
    at = raw.index(b"DHPM") + 8                                   # MPHD's flags
    flags = int.from_bytes(raw[at:at + 4], "little")
    assert flags & 0x84
    raw[at:at + 4] = (flags & ~0x84).to_bytes(4, "little")        # neither big alpha nor height texturing
    with open_data(root) as data:
        assert EditSession(data, MAP_NAME).tile(SW).big_alpha is True
    wdt.write_bytes(bytes(raw))
    with open_data(root) as data:
        s = EditSession(data, MAP_NAME)
        assert s.big_alpha is False
        with pytest.raises(FormatError) as err:
            s.tile(SW)
        assert err.value.path == adt_game_path(MAP_NAME, *SW)


def test_a_broken_tile_is_named_by_its_game_path(four, tmp_path):
    from wowgrass.errors import FormatError

    root = loose_copy(four, tmp_path)
    gp = adt_game_path(MAP_NAME, *SW)
    p = root.joinpath(*gp.split("\\"))
    p.write_bytes(p.read_bytes()[:30000])
    with open_data(root) as data:
        s = EditSession(data, MAP_NAME)
        with pytest.raises(FormatError) as err:
            s.tile(SW)
        assert err.value.path == gp


def test_a_map_whose_tiles_are_not_there_yet_opens_empty(four, tmp_path):
    root = loose_copy(four, tmp_path)
    for p in (root / "World" / "Maps" / MAP_NAME).glob("*.adt"):
        p.unlink()
    with open_data(root) as data:
        s = EditSession(data, MAP_NAME)
        assert s.tiles == [] and s.files_since_saved() == {} and s.cell_at(*centre_of_nothing()) is None


def centre_of_nothing():
    from wowgrass.formats.adt import TILE_SIZE, ZEROPOINT

    return ZEROPOINT - 32.5 * TILE_SIZE, ZEROPOINT - 31.5 * TILE_SIZE      # the middle of tile (31, 32)


@pytest.mark.parametrize("source", ["mpq", "loose"])
def test_a_tile_another_process_read_is_the_tile_the_session_reads_itself(four, source):
    """take_read (the workbench's worker processes hand over a tile they parsed): the session then
    answers for it exactly as for a tile it read itself: bytes, parsed tile, centres, origin, version,
    edits and undo; a tile not in the map, or read already, is refused and left as it is."""
    from wowgrass.edit.adt_edit import read_tile

    with open_data(four[source]) as data:
        own = EditSession(data, MAP_NAME)
        taken = EditSession(data, MAP_NAME)
        gp = adt_game_path(MAP_NAME, *NE)   # column and row differ
        raw = data.read(gp)
        parsed = read_tile(raw, gp)
        centres = parsed.cell_centres()
        # the key as a worker's message carries it (numpy integers)
        assert not taken.has_read(NE)
        assert taken.take_read(np.array(NE, np.int64), raw, parsed, centres) is True
        assert taken.has_read(NE) and taken.tile(NE) is parsed and taken.tile_bytes(NE) is raw
        assert taken.tile_state(NE) == (raw, 0) and taken.tile_version(NE) == 0
        assert taken.changed_tiles == [] and taken.files_since_loaded() == {}
        own.tile(NE)
        assert own.files_since_loaded() == {}   # read by the session itself: nothing changed either
        assert taken.origins([gp]) == own.origins([gp]) != []
        assert taken.cell_at(*centre(taken, NE, 100, 3, 4)) == own.cell_at(*centre(own, NE, 100, 3, 4))
        # refused: read already (kept as it is), and a tile the map does not have
        other = read_tile(raw, gp)
        assert taken.take_read(NE, raw, other, centres) is False and taken.tile(NE) is parsed
        assert taken.take_read((40, 40), raw, other, centres) is False and not taken.has_read((40, 40))
        # an edit of the taken tile: the same bytes as the same edit of the tile read by the session
        x, y = centre(own, NE, 119, *free_cell(own.tile(NE), 119))
        a, b = own.exclude(x, y, 0), taken.exclude(x, y, 0)
        assert a.chunks == b.chunks == {NE: {119}}
        assert taken.files_since_loaded() == own.files_since_loaded() == {gp: own.tile_bytes(NE)}
        assert taken.tile_bytes(NE) == own.tile_bytes(NE) != raw and taken.changed_tiles == [NE]
        assert taken.tile_version(NE) == own.tile_version(NE) == 1
        taken.undo()
        assert taken.tile_bytes(NE) == raw and taken.changed_tiles == []
