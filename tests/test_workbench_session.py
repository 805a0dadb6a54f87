"""The workbench's edit session as library calls (issue 40.3/40.4): a brush stroke saved equals the
batch command over the same cells byte for byte; the live grass equals a bake of the saved tile;
undo and redo; conflicts on disk; saving all or none; patches; reloads."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from faults import failing_folder, tree
from PIL import Image

from wowgrass.cli.main import cli
from wowgrass.edit.masks import chunks_to_grid
from wowgrass.errors import OutputError, UsageError
from wowgrass.formats.adt import TILE_SIZE, ZEROPOINT
from wowgrass.game.data import open_data
from wowgrass.game.effects import DOODAD_PATH, TEXTURE_PATH
from wowgrass.game.maps import adt_game_path
from wowgrass.grass import bundle as B
from wowgrass.samples import MAP_NAME, build_sample_world
from wowgrass.workbench.disk import SessionFiles
from wowgrass.workbench.session import CellRef, EditSession

WEST, EAST = (31, 32), (32, 32)


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def game_file(root: Path, gp: str) -> Path:
    return root.joinpath(*gp.split("\\"))


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The 3.3.5 sample world (2x1 tiles) as MPQs and as a loose copy of every file."""
    base = tmp_path_factory.mktemp("wbs")
    data = build_sample_world(base / "mpq", "3.3.5", (2, 1), seed=0)
    loose = base / "loose"
    with open_data(data) as g:
        for name in g.list("*"):
            p = game_file(loose, name)
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(g.read(name))
    return {"mpq": data, "loose": loose}


@pytest.fixture
def loose(world, tmp_path):
    root = tmp_path / "Data"
    shutil.copytree(world["loose"], root)
    return root


def border_point():
    """World X, Y on the border of the two tiles, a third of the way down the tile."""
    return ZEROPOINT - 32 * TILE_SIZE - TILE_SIZE / 3, ZEROPOINT - 32 * TILE_SIZE


def stroke(session, clear=False):
    """Three dabs of radius 9 across the tile border: cells of both tiles."""
    x, y = border_point()
    for k in range(3):
        session.exclude(x - 6 * k, y + 5 - 5 * k, 9.0, clear=clear)


def test_brush_stroke_saves_the_bytes_of_exclude_mask(world, tmp_path):
    with open_data(world["mpq"]) as data:
        s = EditSession(data, MAP_NAME)
        disk = SessionFiles(s)
        before = {k: s.tile(k).no_effect_doodad.copy() for k in (WEST, EAST)}
        stroke(s)
        assert s.changed_tiles == [WEST, EAST] and s.changed_tables == []
        masks = {k: s.tile(k).no_effect_doodad & ~before[k] for k in (WEST, EAST)}
        assert all(m.sum() > 5 for m in masks.values())
        out = tmp_path / "session"
        out.mkdir()
        saved = disk.save(out)
        # the same cells as a mask picture for `effects exclude --mask` (both tiles: 256x128)
        grid = np.concatenate([chunks_to_grid(s.tile(k), masks[k]) for k in (WEST, EAST)], axis=1)
        png = tmp_path / "mask.png"
        Image.fromarray(np.where(grid, 255, 0).astype(np.uint8)).save(png)
    cli_out = tmp_path / "cli"
    cli_out.mkdir()
    res = run("effects", "exclude", "--data", world["mpq"], "--mask", png, "-o", cli_out)
    assert res.exit_code == 0, res.output
    assert len(saved["files"]) == 2 and saved["tables"] == []
    for k in (WEST, EAST):
        gp = adt_game_path(MAP_NAME, *k)
        assert game_file(out, gp).read_bytes() == game_file(cli_out, gp).read_bytes()
    with open_data(world["mpq"]) as data:    # only the noEffectDoodad bytes changed
        orig = data.read(adt_game_path(MAP_NAME, *WEST))
    new = game_file(out, adt_game_path(MAP_NAME, *WEST)).read_bytes()
    diff = np.flatnonzero(np.frombuffer(orig, np.uint8) != np.frombuffer(new, np.uint8))
    assert 0 < diff.size <= 8 * masks[WEST].reshape(256, -1).any(axis=1).sum()


def concat(parts):
    from wowgrass.grass.placement import Instances

    parts = list(parts)
    return Instances(*(np.concatenate([getattr(p, f) for p in parts]) for f in
                       ("model", "pos", "yaw", "scale", "chunk", "cell")), parts[0].models)


def same_instances(a, b) -> bool:
    """The same instances in the same order within each chunk."""
    oa, ob = np.argsort(a.chunk, kind="stable"), np.argsort(b.chunk, kind="stable")
    return all(np.array_equal(getattr(a, f)[oa], getattr(b, f)[ob]) for f in ("model", "pos", "yaw", "scale", "cell"))


@pytest.mark.parametrize("placement", ["client", "coverage"])
def test_chunks_placed_alone_equal_the_whole_tiles_placement(world, placement):
    with open_data(world["mpq"]) as data:
        s = EditSession(data, MAP_NAME, placement=placement)
        disk = SessionFiles(s)
        some = s.place_chunks(EAST, [3, 77, 130, 255])
        everything = s.place_chunks(EAST, range(256))
        whole = s.tile_instances(EAST)
        assert same_instances(concat(everything.values()), whole) and len(whole) > 10_000
        assert all(same_instances(some[i], everything[i]) for i in some)


def test_live_grass_equals_a_bake_of_the_saved_tile(world, tmp_path):
    from wowgrass.grass.bake import ModelTable, bake_tile
    from wowgrass.game.effects import GroundEffectCatalog

    with open_data(world["mpq"]) as data:
        s = EditSession(data, MAP_NAME, placement="client")
        disk = SessionFiles(s)
        x, y = border_point()
        ref = s.cell_at(x - 20, y + 20)
        idx = s.chunk_index(ref)
        before = len(s.chunk_instances(WEST, idx))
        seen = []
        s.subscribe(seen.append)
        s.paint_mapping(x - 20, y + 20, 25, 1)       # a layer's effect over some cells
        s.exclude(x - 20, y + 20, 6)
        new_id = s.preview_set(["World\\NoDXT\\Detail\\ElwGra02.m2"], [16], 12)
        s.assign_texture("SampleGrass", new_id, at=(x - 20, y + 20, 15))
        assert [len(c.chunks[WEST]) > 0 for c in seen[:2]] == [True, True] and seen[2].tables
        assert idx in seen[3].chunks[WEST]
        live_chunk = s.chunk_instances(WEST, idx)
        assert len(live_chunk) != before
        parts = s.place_chunks(WEST, range(256))       # chunk by chunk, as a viewer re-places them
        live = concat(parts.values())
        whole = s.tile_instances(WEST)
        assert same_instances(live, whole)
        out = tmp_path / "o"
        out.mkdir()
        assert disk.save(out)["tables"] == [TEXTURE_PATH]     # the model had a doodad row already
        doodads = data.read(DOODAD_PATH)
    saved = game_file(out, adt_game_path(MAP_NAME, *WEST)).read_bytes()
    cat = GroundEffectCatalog.from_dbc_bytes(game_file(out, TEXTURE_PATH).read_bytes(), doodads, None, hint="3.3.5")
    with open_data(world["mpq"]) as data:   # the data's models: the client's draw capacity counts their batches
        res = bake_tile(saved, cat, map_name=MAP_NAME, placement="client", out=tmp_path / "t.wgb", big_alpha=True,
                        models=ModelTable(data.read))
    assert res.capacity_dropped > 0
    with B.read_bundle(res.path) as b:
        assert np.array_equal(b.cell_counts, live.cell_counts())
        for m in b.models:
            mine = np.flatnonzero(np.asarray(live.models)[live.model] == m.path)
            packed = B.pack_instances(live.pos[mine], live.yaw[mine], live.scale[mine])
            assert np.array_equal(np.sort(packed.view("V16")), np.sort(np.array(m.instances).view("V16")))
        assert b.instance_count == len(live)
    assert np.array_equal(np.unique(live_chunk.chunk), [idx])


def test_undo_returns_the_original_bytes_and_redo_the_edit(world):
    with open_data(world["mpq"]) as data:
        s = EditSession(data, MAP_NAME)
        disk = SessionFiles(s)
        orig = {k: s.tile_bytes(k) for k in (WEST, EAST)}
        tables = s.tables_bytes(TEXTURE_PATH)
        stroke(s)
        x, y = border_point()
        s.paint_mapping(x, y, 30, None)
        s.assign_texture("SampleGrass", 1001, tile=EAST)
        s.preview_set(["World\\NoDXT\\Detail\\ElwGra01.m2"], None, 3, effect_id=1001)
        edited = {k: s.tile_bytes(k) for k in (WEST, EAST)}
        assert len(s.history) >= 5 and s.can_undo and not s.can_redo
        assert s.changed_tables == [TEXTURE_PATH]
        while s.can_undo:
            ch = s.undo()
            assert ch is not None and ch.label.startswith("undo ")
        assert {k: s.tile_bytes(k) for k in (WEST, EAST)} == orig
        assert s.tables_bytes(TEXTURE_PATH) == tables and s.changed_tiles == [] and s.changed_tables == []
        while s.can_redo:
            s.redo()
        assert {k: s.tile_bytes(k) for k in (WEST, EAST)} == edited
        assert s.catalog.row(1001)["density"] == 3


def test_clear_brush_and_an_edit_changing_nothing(world):
    with open_data(world["mpq"]) as data:
        s = EditSession(data, MAP_NAME)
        disk = SessionFiles(s)
        stroke(s)
        n = len(s.history)
        stroke(s)        # the same cells again: nothing changes, nothing recorded
        assert len(s.history) == n
        stroke(s, clear=True)
        assert s.changed_tiles == []     # set then cleared: the bytes are the loaded ones again
        assert s.exclude(9000.0, 9000.0, 5).empty      # off the map


def test_cell_at_and_cell_info(world):
    with open_data(world["mpq"]) as data:
        s = EditSession(data, MAP_NAME)
        disk = SessionFiles(s)
        t = s.tile(WEST)
        x, y = t.cell_centres()[37, 2, 5]
        ref = s.cell_at(x, y)
        assert ref == CellRef(WEST, (int(t.index_xy[37, 0]), int(t.index_xy[37, 1])), (5, 2))
        info = s.cell_info(ref)
        assert info["mcnk_index"] == 37 and info["layers"][0]["alpha_mean"] == 1.0
        assert info["doodad_mapping"] == int(t.doodad_mapping[37, 2, 5])
        inst = s.chunk_instances(WEST, 37)
        assert len(info["grass"]) == int((inst.cell == 2 * 8 + 5).sum())
        assert s.cell_at(9000.0, 9000.0) is None
        with pytest.raises(UsageError, match="no tile"):
            s.tile((5, 5))


def test_a_file_changed_on_disk_is_not_overwritten(loose, tmp_path):
    s = EditSession(open_data(loose), MAP_NAME)
    disk = SessionFiles(s)
    stroke(s)
    west = game_file(loose, adt_game_path(MAP_NAME, *WEST))
    other = bytearray(west.read_bytes())
    other[-1] ^= 0xFF                      # another editor saved the tile
    west.write_bytes(bytes(other))
    assert any(str(west) in c for c in disk.conflicts())
    out = tmp_path / "o"
    out.mkdir()
    for kw in ({"in_place": True}, {"out_dir": out}):
        with pytest.raises(OutputError, match="changed on disk"):
            disk.save(**kw)
    assert west.read_bytes() == bytes(other) and tree(out) == []
    assert not list(loose.rglob("*.bak"))


def test_save_in_place_keeps_backups_and_writes_all_or_none(loose):
    s = EditSession(open_data(loose), MAP_NAME)
    disk = SessionFiles(s)
    files = {k: game_file(loose, adt_game_path(MAP_NAME, *k)) for k in (WEST, EAST)}
    orig = {k: p.read_bytes() for k, p in files.items()}
    stroke(s)
    s.preview_set(["World\\NoDXT\\Detail\\ElwGra01.m2"], [16], 4)
    table = game_file(loose, TEXTURE_PATH)
    table_orig = table.read_bytes()
    with failing_folder(loose / "DBFilesClient", "ENOSPC"):
        with pytest.raises(OutputError):
            disk.save(in_place=True)
    assert {k: p.read_bytes() for k, p in files.items()} == orig and table.read_bytes() == table_orig
    assert not list(loose.rglob("*.bak")) and not list(loose.rglob("*.tmp"))
    res = disk.save(in_place=True)
    assert sorted(res["backups"]) == sorted(str(p) + ".bak" for p in [*files.values(), table])
    assert {k: Path(str(p) + ".bak").read_bytes() for k, p in files.items()} == orig
    assert {k: p.read_bytes() for k, p in files.items()} == {k: s.tile_bytes(k) for k in files}
    assert s.changed_tiles == [] and s.changed_tables == []
    s.exclude(*border_point(), 3, clear=True)      # saved again over its own save: no conflict
    assert disk.save(in_place=True, backups=False)["files"]


def test_save_refuses_an_out_folder_holding_other_files(world, tmp_path):
    out = tmp_path / "o"
    gp = adt_game_path(MAP_NAME, *WEST)
    game_file(out, gp).parent.mkdir(parents=True)
    game_file(out, gp).write_bytes(b"someone else's tile")
    with open_data(world["mpq"]) as data:
        s = EditSession(data, MAP_NAME)
        disk = SessionFiles(s)
        stroke(s)
        with pytest.raises(OutputError, match="not what this session loaded"):
            disk.save(out)
        with pytest.raises(UsageError, match="only loose files"):
            disk.save(in_place=True)
    assert game_file(out, gp).read_bytes() == b"someone else's tile"


def test_build_patch_holds_the_changed_files(world, tmp_path):
    from wowgrass.formats.mpq import MpqArchive

    with open_data(world["mpq"]) as data:
        s = EditSession(data, MAP_NAME)
        disk = SessionFiles(s)
        with pytest.raises(UsageError, match="nothing differs"):
            disk.build_patch(tmp_path / "patch-4.MPQ")
        stroke(s)
        res = disk.build_patch(tmp_path / "patch-4.MPQ")
        want = {adt_game_path(MAP_NAME, *k): s.tile_bytes(k) for k in (WEST, EAST)}
    arc = MpqArchive.open(res["file"])
    try:
        assert {n: arc.read(n) for n in want} == want
    finally:
        arc.close()


def test_reload_takes_another_editors_save(loose):
    s = EditSession(open_data(loose), MAP_NAME)
    disk = SessionFiles(s)
    seen = []
    s.subscribe(seen.append)
    east = game_file(loose, adt_game_path(MAP_NAME, *EAST))
    s.tile(EAST)
    s.exclude(*border_point(), 9)                  # unsaved edits on both tiles
    s.undo()                                       # ... undone: nothing unsaved
    from wowgrass.edit.adt_edit import exclude_cells

    new, _ = exclude_cells(east.read_bytes(), "x", np.ones((256, 8, 8), bool))
    east.write_bytes(new)
    ch = disk.reload([east])
    assert ch.chunks == {EAST: set(range(256))} and seen[-1] is ch and not s.can_redo
    assert s.tile_bytes(EAST) == new and s.tile(EAST).no_effect_doodad.all()
    s.exclude(*border_point(), 9, clear=True)      # unsaved edits now
    mine = s.tile_bytes(EAST)
    east.write_bytes(east.read_bytes()[:-1] + b"\x01")
    ch = disk.reload([east])
    assert ch.notes and EAST not in ch.chunks and s.tile_bytes(EAST) == mine
    with pytest.raises(OutputError, match="changed on disk"):
        disk.save(in_place=True)


def test_save_in_place_over_layered_data_writes_into_the_project(world, tmp_path):
    """A project over the client's MPQs: the project's tile is replaced (a backup kept); the client's
    tile and table edited too go into the project folder as new files; the client is untouched."""
    proj = tmp_path / "proj"
    gp_w = adt_game_path(MAP_NAME, *WEST)
    with open_data(world["mpq"]) as g:
        raw_w = g.read(gp_w)
    game_file(proj, gp_w).parent.mkdir(parents=True)
    game_file(proj, gp_w).write_bytes(raw_w)
    mpqs = {p: p.stat().st_mtime_ns for p in Path(world["mpq"]).rglob("*.MPQ")}
    with open_data([world["mpq"], proj]) as data:
        s = EditSession(data, MAP_NAME)
        disk = SessionFiles(s)
        stroke(s)                                   # both tiles: the project's and the client's
        s.preview_set(["World\\NoDXT\\Detail\\ElwGra03.m2"], [16], 6)
        res = disk.save(in_place=True)
        assert res["backups"] == [str(game_file(proj, gp_w)) + ".bak"]
        for k in (WEST, EAST):
            assert game_file(proj, adt_game_path(MAP_NAME, *k)).read_bytes() == s.tile_bytes(k)
        assert game_file(proj, TEXTURE_PATH).read_bytes() == s.tables_bytes(TEXTURE_PATH)
        assert s.changed_tiles == [] and s.changed_tables == [] and disk.conflicts() == []
        data.refresh()
        assert data.locate(adt_game_path(MAP_NAME, *EAST))[1] is None      # now the project's
    assert {p: p.stat().st_mtime_ns for p in mpqs} == mpqs


def test_an_archive_changed_on_disk_is_a_conflict(world, tmp_path):
    client = tmp_path / "client"
    shutil.copytree(Path(world["mpq"]).parent, client)
    with open_data(client / "Data") as data:
        s = EditSession(data, MAP_NAME)
        disk = SessionFiles(s)
        stroke(s)
        arc = Path(data.locate(adt_game_path(MAP_NAME, *WEST))[0])
        os.utime(arc, ns=(arc.stat().st_atime_ns, arc.stat().st_mtime_ns + 10**9))   # the client patched
        out = tmp_path / "o"
        out.mkdir()
        with pytest.raises(OutputError, match="archive holding"):
            disk.save(out)
    assert tree(out) == []


def test_remap_brush_equals_effects_remap(world):
    from wowgrass.edit.adt_edit import remap_mapping

    with open_data(world["mpq"]) as data:
        s = EditSession(data, MAP_NAME)
        disk = SessionFiles(s)
        raw = s.tile_bytes(EAST)
        t = s.tile(EAST)
        shuffled = t.doodad_mapping.copy()
        shuffled[::3] = 0                         # some stale cells to fix (layer 0 where another shows)
        s.set_fields(EAST, "setup", doodad_mapping=shuffled)
        start = s.tile_bytes(EAST)
        x, y = s.tile(EAST).cell_centres()[0, 0, 0]
        ch = s.paint_mapping(x, y, 2000, None)    # a brush over the whole tile (and its neighbour)
        assert ch.chunks[EAST]
        want, rep = remap_mapping(start, "x", margin=0.0, big_alpha=True)
        assert rep.cells > 0 and s.tile_bytes(EAST) == want
        assert raw != start


def test_preview_sets_saved_change_only_their_rows(world, tmp_path):
    from wowgrass.formats.dbc import DbcFile

    with open_data(world["mpq"]) as data:
        s = EditSession(data, MAP_NAME)
        disk = SessionFiles(s)
        orig = s.tables_bytes(TEXTURE_PATH)
        old = DbcFile.from_bytes(orig)
        changed = s.preview_set(["World\\NoDXT\\Detail\\ElwGra05.m2", "World\\NoDXT\\Detail\\ElwGra01.m2"], [10, 6],
                                7, effect_id=1001)
        assert changed == 1001 and s.catalog.row(1001)["density"] == 7
        assert s.catalog.row(1001)["weights"][:2] == [10, 6]
        edited = s.tables_bytes(TEXTURE_PATH)
        assert len(edited) == len(orig)          # a row changed in place: nothing appended
        at = int(np.flatnonzero(np.asarray(old.raw[:, 0]) == 1001)[0])
        lo = 20 + at * old.record_size
        diff = np.flatnonzero(np.frombuffer(orig, np.uint8) != np.frombuffer(edited, np.uint8))
        assert diff.size and diff.min() >= lo and diff.max() < lo + old.record_size
        new_id = s.preview_set(["World\\NoDXT\\Detail\\ElwGra07.m2"], None, 9)
        assert new_id == int(old.raw[:, 0].max()) + 1 and s.catalog.row(new_id)["density"] == 9
        both = s.tables_bytes(TEXTURE_PATH)
        assert both[20 + old.record_count * old.record_size + old.record_size:] == orig[20 + old.record_count *
                                                                                      old.record_size:]   # strings kept
        out = tmp_path / "o"
        out.mkdir()
        assert disk.save(out)["tables"] == [TEXTURE_PATH]
        assert out.joinpath(*TEXTURE_PATH.split("\\")).read_bytes() == both
        s.undo()
        assert s.catalog.row(new_id) is None and s.changed_tables == [TEXTURE_PATH]


def test_a_stroke_is_one_undo_step(world):
    with open_data(world["mpq"]) as data:
        s = EditSession(data, MAP_NAME)
        disk = SessionFiles(s)
        orig = {k: s.tile_bytes(k) for k in (WEST, EAST)}
        s.paint_mapping(*border_point(), 4, 0)
        n = len(s.history)
        seen = []
        s.subscribe(seen.append)
        with s.stroke("exclude stroke"):
            stroke(s)
        assert len(seen) == 3 and len(s.history) == n + 1 and s.history[-1] == "exclude stroke"
        edited = {k: s.tile_bytes(k) for k in (WEST, EAST)}
        ch = s.undo()
        assert ch.label == "undo exclude stroke" and set(ch.chunks) == {WEST, EAST}
        assert len(s.history) == n
        s.undo()
        assert {k: s.tile_bytes(k) for k in (WEST, EAST)} == orig
        s.redo()
        s.redo()
        assert {k: s.tile_bytes(k) for k in (WEST, EAST)} == edited


def test_tables_from_a_folder_of_their_own(loose, tmp_path):
    # a map folder alone (as a map editor keeps it) with the tables elsewhere: dbc_dir, or found above
    maps = loose / "World" / "Maps" / MAP_NAME
    tables = tmp_path / "tables"
    shutil.copytree(loose / "DBFilesClient", tables)
    shutil.rmtree(loose / "DBFilesClient")
    with pytest.raises(UsageError, match="needs both ground-effect tables"):
        EditSession(open_data(maps), MAP_NAME)
    s = EditSession(open_data(maps), MAP_NAME, dbc_dir=tables)
    disk = SessionFiles(s)
    s.preview_set(["World\\NoDXT\\Detail\\ElwGra03.m2"], [16], 6)
    stroke(s)
    res = disk.save(in_place=True)
    assert str(tables / "GroundEffectTexture.dbc") in res["files"] and (tables / "GroundEffectTexture.dbc.bak").exists()
    shutil.copytree(tables, loose / "DBFilesClient")
    s2 = EditSession(open_data(maps), MAP_NAME)          # the tables above the map folder
    assert s2.tables_bytes(TEXTURE_PATH) == s.tables_bytes(TEXTURE_PATH)


def test_save_into_a_project_that_is_a_map_folder(world, tmp_path):
    # a project folder holding a map's files at its top (no World folder): the client's tile saved
    # there lands beside them, so the folder still answers for both tiles
    proj = tmp_path / "proj"
    proj.mkdir()
    gp_w = adt_game_path(MAP_NAME, *WEST)
    with open_data(world["mpq"]) as g:
        (proj / f"{MAP_NAME}_31_32.adt").write_bytes(g.read(gp_w))
    with open_data([world["mpq"], proj]) as data:
        s = EditSession(data, MAP_NAME)
        disk = SessionFiles(s)
        stroke(s)
        disk.save(in_place=True)
        assert (proj / f"{MAP_NAME}_32_32.adt").read_bytes() == s.tile_bytes(EAST)
        data.refresh()
        for k in (WEST, EAST):
            assert data.read(adt_game_path(MAP_NAME, *k)) == s.tile_bytes(k)


def test_tile_patches_chain_as_applied_in_order():
    from wowgrass.workbench.history import TilePatch

    rng = np.random.default_rng(3)
    states = [rng.integers(0, 256, 4096, dtype=np.uint8).tobytes()]
    patches = []
    for k in range(6):
        nxt = bytearray(states[-1])
        at = rng.integers(0, 4096, 40)
        for i in at:
            nxt[i] = int(rng.integers(0, 4)) if k % 2 else states[0][i]   # some bytes go back to the start
        states.append(bytes(nxt))
        patches.append(TilePatch.between(states[-2], states[-1], {"f": k}, {"f": k + 1}))
    one = TilePatch.chain(patches)
    assert one.apply(states[-1], 0) == states[0] and one.apply(states[0], 1) == states[-1]
    assert one.fields(0) == {"f": 0} and one.fields(1) == {"f": 6}
    assert one.at.size == np.count_nonzero(np.frombuffer(states[0], np.uint8) != np.frombuffer(states[-1], np.uint8))
    for p, a, b in zip(patches, states, states[1:]):
        assert p.apply(b, 0) == a and p.apply(a, 1) == b


def test_reload_of_the_sessions_own_save_changes_nothing(loose):
    s = EditSession(open_data(loose), MAP_NAME)
    disk = SessionFiles(s)
    stroke(s)
    s.preview_set(["World\\NoDXT\\Detail\\ElwGra03.m2"], [16], 6)
    disk.save(in_place=True)
    seen = []
    s.subscribe(seen.append)
    files = [game_file(loose, adt_game_path(MAP_NAME, *k)) for k in (WEST, EAST)] + [game_file(loose, TEXTURE_PATH)]
    ch = disk.reload(files)                    # what a watcher reports after the session's own save
    assert ch.empty and not ch.notes and seen == [] and s.can_undo
    other = game_file(loose, TEXTURE_PATH)
    raw = s.tables_bytes(TEXTURE_PATH)
    orig_row = s.catalog.row(1001)
    from wowgrass.edit.effect_sets import add_effect_set

    tex, _d, nid = add_effect_set(raw, s.tables_bytes(DOODAD_PATH), None, doodads=["ElwGra02"], weights=[16],
                                  hint="3.3.5")
    other.write_bytes(tex)                  # another editor added a set
    ch = disk.reload([other])
    assert ch.tables and s.catalog.row(nid) is not None and s.catalog.row(1001) == orig_row


def test_subscribers_hear_changes_outside_the_lock(world):
    import threading

    with open_data(world["mpq"]) as data:
        s = EditSession(data, MAP_NAME)
        disk = SessionFiles(s)
        got = []

        def on_change(change):      # asks the session from another thread and waits for it
            t = threading.Thread(target=lambda: got.append(s.tile_bytes(WEST)))
            t.start()
            t.join(10)
            got.append(not t.is_alive())

        s.subscribe(on_change)
        stroke(s)
        assert len(got) == 6 and got[1::2] == [True, True, True]      # three dabs, none waited on the lock
        assert got[-2] == s.tile_bytes(WEST)
