"""The workbench's window half without a window: the overlays' per-cell data, the ray pick, a
stroke's dabs as one undo step, the grass an edit hands the scene, the polling watcher, and the
options ``view`` refuses (the window tests are tests/test_workbench_window.py)."""

from __future__ import annotations

import time
from types import SimpleNamespace

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import require_tool

from wowgrass.cli.main import cli


@pytest.fixture(scope="module")
def sample():
    from wowgrass.game.data import open_data
    from wowgrass.grass.bake import default_data

    root, map_name = default_data()
    data = open_data(root)
    yield data, map_name
    data.close()


@pytest.fixture()
def session(sample):
    from wowgrass.workbench.session import EditSession

    data, map_name = sample
    return EditSession(data, map_name, placement="coverage")


def test_cell_overlay_matches_the_audit_facts(session):
    from wowgrass.edit.audit import tile_facts
    from wowgrass.workbench.overlays import CELL_EXCLUDED, CELL_HOLE, CELL_STALE, SetColours, cell_overlay, grass_effects

    key = session.tiles[0]
    tile = session.tile(key)
    img = cell_overlay(tile, key, session.catalog, SetColours(), set())
    assert img.shape == (128, 128, 4) and img.dtype == np.uint8
    f = tile_facts(tile, key)
    # back to (256, 8, 8) in MCNK order: chunk k's cells at rows (k // 16) * 8.., columns (k % 16) * 8..
    cells = img.reshape(16, 8, 16, 8, 4).transpose(0, 2, 1, 3, 4).reshape(256, 8, 8, 4)
    grows = f["valid"] & grass_effects(session.catalog, f["cell_effect"]).reshape(256, 8, 8)
    assert grows.any() and (~grows).any()
    assert np.array_equal(cells[..., 0] > 0, grows)
    flags = cells[..., 1]
    assert np.array_equal((flags & CELL_EXCLUDED) > 0, f["excluded"])
    assert np.array_equal((flags & CELL_STALE) > 0, f["stale"])
    assert np.array_equal((flags & CELL_HOLE) > 0, f["hole"])
    # one colour per effect set, the same id the same colour
    ids = f["cell_effect"][grows]
    for e in np.unique(ids)[:4]:
        assert len(np.unique(cells[..., 0][grows][ids == e])) == 1


def test_unassigned_flag_marks_grass_textures_without_an_effect(session):
    from wowgrass.workbench.overlays import CELL_UNASSIGNED
    from wowgrass.workbench.overlays import SetColours, cell_overlay

    key = session.tiles[0]
    tile = session.tile(key)
    # every texture counted as a grass texture: the cells mapped to a layer with no effect id are flagged
    names = {t.lower() for t in tile.textures}
    img = cell_overlay(tile, key, session.catalog, SetColours(), names)
    cells = img.reshape(16, 8, 16, 8, 4).transpose(0, 2, 1, 3, 4).reshape(256, 8, 8, 4)
    from wowgrass.edit.audit import tile_facts

    f = tile_facts(tile, key)
    want = f["valid"] & np.isin(f["cell_effect"], [0, 0xFFFF, 0xFFFFFFFF])
    assert np.array_equal((cells[..., 1] & CELL_UNASSIGNED) > 0, want)
    none = cell_overlay(tile, key, session.catalog, SetColours(), set())
    assert not ((none[..., 1] & CELL_UNASSIGNED) > 0).any()


def _ground_scene(session):
    from wowgrass.render.world.tile_payload import TileGround

    tiles = {k: SimpleNamespace(adt=TileGround(session.tile(k)), full=True, grass=None) for k in session.tiles}
    return SimpleNamespace(tiles=tiles)


def test_pick_finds_the_ground_under_a_ray(session):
    from wowgrass.render.pick import ground_heights, pick_ground

    scene = _ground_scene(session)
    tile = session.tile(session.tiles[0])
    x, y = (float(v) for v in tile.positions[100, :2] - 5.0)
    h = float(tile.heights_at(int(tile.chunk_index_at(x, y)), x, y))
    p = pick_ground(scene, (x, y, h + 300.0), (0.0, 0.0, -1.0))
    assert p is not None and abs(p[0] - x) < 1e-6 and abs(p[2] - h) < 0.05
    # a slanted ray: the hit is on the ground and along the ray
    d = np.array([0.6, 0.3, -0.5])
    d /= np.linalg.norm(d)
    o = np.array([x, y, h + 40.0])
    q = pick_ground(scene, o, d)
    assert q is not None
    assert abs(q[2] - ground_heights(scene, q[None, :2])[0]) < 1e-3
    along = (q - o) / np.linalg.norm(q - o)
    assert np.allclose(along[:2] / np.linalg.norm(along[:2]), d[:2] / np.linalg.norm(d[:2]), atol=0.02)
    assert pick_ground(scene, (x, y, h + 300.0), (0.0, 0.0, 1.0)) is None  # up into the sky
    assert pick_ground(scene, (1e5, 1e5, 100.0), (0.0, 0.0, -1.0)) is None  # off the resident tiles


class _Cells:
    def __init__(self):
        self.mask, self.brush, self.pick, self.looks, self.given = 0, (0,) * 4, (0,) * 4, [], {}

    def look(self, **kw):
        self.looks.append(kw)

    def set(self, key, img):
        self.given[key] = img


def _stub_scene(session):
    from wowgrass.render.world.tile_payload import TileGround
    from wowgrass.workbench.controller import tile_grass

    calls = []
    tiles = {}
    for k in session.tiles:
        tiles[k] = SimpleNamespace(adt=TileGround(session.tile(k)), full=True,
                                   grass=tile_grass(session.tile_instances(k)))

    def replace_grass(key, grass, extra=None):
        calls.append((key, grass))
        tiles[key].grass = grass

    return SimpleNamespace(tiles=tiles, terrain=SimpleNamespace(cells=_Cells()), on_resident=[], keep_grass=False,
                           client_look=False, replace_grass=replace_grass, calls=calls, version=0), calls


def _records(grass: dict) -> dict:
    return {n: np.sort(np.asarray(a).view(np.uint8).reshape(len(a), -1).view("V16").ravel()) for n, a in grass.items() if len(a)}


def _frames_to_hand_over(bench, calls, n) -> int | None:
    """Frames until the scene got its ``n``-th grass hand-over: the edit's grass is placed on the
    bridge's grass thread (waited for here), then a frame hands it over; None if 2 frames did not."""
    assert bench.bridge.wait_placed(60.0)
    for frame in (1, 2):
        bench.before_frame(0.016)
        if len(calls) >= n:
            return frame
    return None


def test_an_edit_hands_the_scene_the_tiles_new_grass(session):
    """After a brush dab the scene holds exactly the session's placement of the edited tile (the
    other chunks kept, the dab's chunks placed again), and after undo the original again."""
    from wowgrass.workbench.controller import Workbench, tile_grass

    scene, calls = _stub_scene(session)
    bench = Workbench(session, scene, audit=False, panels=False)
    try:
        key = session.tiles[0]
        before = _records(scene.tiles[key].grass)
        tile = session.tile(key)
        x0, y0 = (float(v) for v in tile.positions[7 * 16 + 7, :2])
        bench.tools.tool, bench.tools.radius = "exclude", 14.0
        change = bench.apply_tool(x0 - 10.0, y0 - 10.0)
        assert change is not None and key in change.chunks
        assert _frames_to_hand_over(bench, calls, 1) is not None  # within 2 frames of the dab
        assert calls and calls[-1][0] == key
        live = _records(scene.tiles[key].grass)
        want = _records(tile_grass(session.tile_instances(key)))
        assert live.keys() == want.keys() and all(np.array_equal(live[n], want[n]) for n in want)
        assert sum(len(v) for v in live.values()) < sum(len(v) for v in before.values())
        bench.undo()
        assert _frames_to_hand_over(bench, calls, 2) is not None
        back = _records(scene.tiles[key].grass)
        assert back.keys() == before.keys() and all(np.array_equal(back[n], before[n]) for n in before)
    finally:
        bench.close()


def test_a_stroke_is_one_undo_step_and_reaches_the_scene_dab_by_dab(session):
    from wowgrass.workbench.controller import Workbench

    scene, calls = _stub_scene(session)
    bench = Workbench(session, scene, audit=False, panels=False)
    try:
        key = session.tiles[0]
        original = session.tile_bytes(key)
        tile = session.tile(key)
        x0, y0 = (float(v) for v in tile.positions[5 * 16 + 5, :2])
        bench.tools.tool, bench.tools.radius = "exclude", 5.0
        bench.begin_stroke()  # as the left button's press does (its first dab needs a window's cursor)
        for i in range(3):
            bench.apply_tool(x0 - 4 * i, y0 - 4 * i)
            assert _frames_to_hand_over(bench, calls, i + 1) is not None
            assert len(calls) == i + 1  # each dab reached the scene within 2 frames of landing
        bench.end_stroke()
        assert len(session.history) == 1 and session.history[0].startswith("exclude stroke")
        bench.undo()
        assert session.tile_bytes(key) == original and not session.can_undo
    finally:
        bench.close()


def test_the_frames_thread_never_places_grass(session):
    """A dab and the frames after it: every placement of the dab's chunks runs on the bridge's
    grass thread, and the frame's thread only hands the result over."""
    import threading

    from wowgrass.workbench.controller import Workbench

    scene, calls = _stub_scene(session)
    bench = Workbench(session, scene, audit=False, panels=False)
    placed_on = []
    real = session.grass.place_chunks

    def place_chunks(tile, chunks):
        placed_on.append(threading.get_ident())
        return real(tile, chunks)

    session.grass.place_chunks = place_chunks
    try:
        key = session.tiles[0]
        x0, y0 = (float(v) for v in session.tile(key).positions[6 * 16 + 6, :2])
        bench.tools.tool, bench.tools.radius = "exclude", 9.0
        assert not bench.apply_tool(x0 - 5.0, y0 - 5.0).empty
        assert _frames_to_hand_over(bench, calls, 1) is not None
        assert placed_on and threading.get_ident() not in placed_on
        assert bench.edits_applied and bench.edits_applied[-1][0].startswith("exclude")
    finally:
        session.grass.place_chunks = real
        bench.close()


def test_grass_made_for_a_tile_that_streamed_in_again_is_merged_into_its_new_grass(session):
    """A result merged into grass the scene no longer holds (the tile arrived again meanwhile, with
    other grass) is placed again on the grass it holds now: the new grass, the dab's chunks placed."""
    from wowgrass.workbench.controller import Workbench, tile_grass

    scene, calls = _stub_scene(session)
    bench = Workbench(session, scene, audit=False, panels=False)
    try:
        key = session.tiles[0]
        t = scene.tiles[key]
        x0, y0 = (float(v) for v in session.tile(key).positions[9 * 16 + 9, :2])
        bench.tools.tool, bench.tools.radius = "exclude", 9.0
        change = bench.apply_tool(x0 - 5.0, y0 - 5.0)
        assert bench.bridge.wait_placed(60.0) and not calls  # placed, not handed over yet
        # the tile streams in again with other grass: chunk 0 (not edited) has none now
        assert 0 not in change.chunks[key]
        again = {n: a[t.adt.chunk_index_at(a["pos"][:, 0], a["pos"][:, 1]) != 0] for n, a in t.grass.items()}
        t.grass = again
        for fn in scene.on_resident:
            fn(key)
        bench.before_frame(0.016)  # the result was merged into the old grass: placed again
        for _ in range(3):
            if calls:
                break
            assert bench.bridge.wait_placed(60.0)
            bench.before_frame(0.016)
        live = _records(scene.tiles[key].grass)
        full = tile_grass(session.tile_instances(key))
        want = _records({n: a[t.adt.chunk_index_at(a["pos"][:, 0], a["pos"][:, 1]) != 0] for n, a in full.items()})
        assert live.keys() == want.keys() and all(np.array_equal(live[n], want[n]) for n in want)
    finally:
        bench.close()


@pytest.mark.parametrize("args, says", [
    (["--output", "x.png", "--panels"], "for the window"),
    (["--frames", "2", "--watch", "--offscreen"], "for the window"),
    (["--procedural", "--overlay", "sets"], "not --procedural"),
    (["--output", "x.png", "--watch"], "for the window"),
    (["--frames", "2", "--overlay", "sets"], "for the window"),
])
def test_view_refuses_panels_offscreen(args, says, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["view", *args])
    assert r.exit_code == 2, r.output
    assert says in r.output


def test_view_output_has_no_panels(tmp_path):
    """view --output works as before: no workbench in the result, the frame written."""
    out = tmp_path / "v.png"
    r = CliRunner().invoke(cli, ["view", "--output", str(out), "--size", "96x64", "--json"])
    if r.exit_code != 0 and "EGL" in r.output:
        require_tool("an EGL OpenGL context", r.output.strip(), found=False)
    assert r.exit_code == 0, r.output
    import json

    res = json.loads(r.output[r.output.index("{"):])
    assert "workbench" not in res and out.exists()


def test_effect_set_preview_then_assign_reaches_the_scene(session):
    """The effect-set editor: a new set previewed (the catalog only, no table written), then
    assigned to a texture over a tile: that tile's grass is placed again with the set's model."""
    from wowgrass.workbench.controller import Workbench

    scene, calls = _stub_scene(session)
    bench = Workbench(session, scene, audit=False, panels=False)
    try:
        key = session.tiles[0]
        tile = session.tile(key)
        model = sorted(m for m in session.catalog.models if m)[0]
        bench.tools.set_models = [model, "", "", ""]
        bench.tools.set_weights = [1, 0, 0, 0]
        bench.tools.set_density = 8
        eid = bench.preview_set()
        assert eid is not None and session.catalog.row(eid) is not None
        assert session.changed_tables  # held in the session until saved
        bench.tools.texture = tile.textures[int(tile.layer_texture[0, 0])]
        bench.tools.scope = "tile"
        bench.picked = session.cell_at(*(float(v) - 1.0 for v in tile.positions[0, :2]))
        change = bench.assign_scope()
        assert change is not None and not change.empty
        # the tables changed: the tile is placed again on the worker and handed over on the frame thread
        deadline = time.monotonic() + 60
        while not any(k == key for k, _g in calls) and time.monotonic() < deadline:
            bench.before_frame(0.016)
            time.sleep(0.05)
        got = [g for k, g in calls if k == key][-1]
        assert model in got and len(got[model]) > 0
    finally:
        bench.close()


def test_choosing_a_finding_flies_the_camera_there(session):
    from wowgrass.render.camera import Camera
    from wowgrass.workbench.controller import Finding, Workbench, chunk_centre

    scene, _calls = _stub_scene(session)
    scene.update = lambda pos: None
    bench = Workbench(session, scene, audit=False, panels=False)
    try:
        bench.viewer = SimpleNamespace(camera=Camera(position=(0.0, 0.0, 0.0)))
        key = session.tiles[0]
        x, y = chunk_centre(key, (5, 9))
        ref = session.cell_at(x, y)
        assert ref.tile == key and ref.chunk == (5, 9)
        bench.fly_to(Finding("unassigned", "t", (x, y)))
        cam = bench.viewer.camera
        tile = session.tile(key)
        z = float(tile.heights_at(int(tile.chunk_index_at(x, y)), x, y))
        assert np.hypot(cam.position[0] - x, cam.position[1] - y) < 60 and cam.position[2] > z + 10
        f = cam.forward  # looking down at the place
        to = np.array([x, y, z]) - cam.position
        assert np.dot(f, to / np.linalg.norm(to)) > 0.999
    finally:
        bench.close()


def test_pick_lines_show_the_cell(session):
    from wowgrass.workbench.panels import pick_lines

    key = session.tiles[0]
    tile = session.tile(key)
    x, y = (float(v) - 3.0 for v in tile.positions[3 * 16 + 4, :2])
    ref = session.cell_at(x, y)
    info = session.cell_info(ref)
    info["world"] = [x, y, 0.0]
    info["light"] = None
    lines = pick_lines(ref, info, 0.5)
    text = "\n".join(lines)
    assert f"tile {key[0]},{key[1]}" in lines[0] and f"chunk {ref.chunk[0]},{ref.chunk[1]}" in lines[0]
    assert f"doodadMapping: layer {info['doodad_mapping']}" in text
    assert f"noEffectDoodad: {info['no_effect_doodad']}" in text
    assert f"grass placed: {len(info['grass'])}" in text
    for layer in info["layers"]:
        assert f"effect {layer['effect_id']}" in text
    assert "no light tables" in text
    info["light"] = {"hour": "12:00", "fixed_sun": True, "sun_colour": [1, 1, 1], "ambient": [0.5, 0.5, 0.5],
                     "fog": [10.0, 100.0]}
    assert "light at 12:00" in "\n".join(pick_lines(ref, info, 0.5))


def test_save_and_patch_from_the_workbench(session, tmp_path):
    """The Changes panel's buttons: save to an overlay folder (made if new), then the patch MPQ."""
    from wowgrass.formats.mpq import MpqArchive
    from wowgrass.workbench.controller import Workbench

    scene, _calls = _stub_scene(session)
    bench = Workbench(session, scene, audit=False, panels=False)
    try:
        key = session.tiles[0]
        tile = session.tile(key)
        x0, y0 = (float(v) for v in tile.positions[8 * 16 + 8, :2])
        bench.tools.tool = "exclude"
        assert not bench.apply_tool(x0 - 8.0, y0 - 8.0).empty
        out = tmp_path / "new" / "overlay"
        res = bench.save(out)
        assert res is not None and res["files"], bench.messages
        assert all(str(out) in f for f in res["files"]) and bench.messages[-1].startswith("saved 1 file")
        mpq = tmp_path / "patch-test.MPQ"
        assert bench.build_patch(mpq) is not None, bench.messages
        arc = MpqArchive.open(mpq)
        gp = next(n for n in arc.names() if n.lower().endswith(".adt"))
        assert arc.read(gp) == session.tile_bytes(key)
        # a folder that cannot be made: said in the panel, nothing raised
        blocker = tmp_path / "file"
        blocker.write_text("x")
        assert bench.save(blocker / "sub") is None and bench.messages[-1].startswith("save failed")
    finally:
        bench.close()


def test_cell_overlay_of_a_real_tile(realdata):
    """continent4229.adt (realdata README): 340 noEffectDoodad bits, holes in exactly one chunk."""
    from wowgrass.edit.adt_edit import read_tile
    from wowgrass.game.effects import GroundEffectCatalog
    from wowgrass.workbench.overlays import CELL_EXCLUDED, CELL_HOLE
    from wowgrass.workbench.overlays import SetColours, cell_overlay

    root = realdata
    tile = read_tile((root / "adt" / "continent4229.adt").read_bytes(), "continent4229.adt")
    dbc = root / "dbc" / "3.3.5"
    cat = GroundEffectCatalog.from_dbc_bytes((dbc / "GroundEffectTexture.dbc").read_bytes(),
                                             (dbc / "GroundEffectDoodad.dbc").read_bytes(), "3.3.5")
    img = cell_overlay(tile, (42, 29), cat, SetColours(), set())
    cells = img.reshape(16, 8, 16, 8, 4).transpose(0, 2, 1, 3, 4).reshape(256, 8, 8, 4)
    assert int(((cells[..., 1] & CELL_EXCLUDED) > 0).sum()) == 340
    holes = ((cells[..., 1] & CELL_HOLE) > 0).reshape(256, -1).any(axis=1)
    assert int(holes.sum()) == 1
    assert (cells[..., 0] > 0).any()  # its effect ids resolve in the 3.3.5 table: sets coloured


def test_the_light_at_a_picked_point_comes_from_the_light_tables(session):
    """Without --clock the view draws its fixed sun; the pick still reports the tables' light (noon)."""
    from wowgrass.game.light import load_light_tables, resolve_map, scene_light
    from wowgrass.workbench.controller import Workbench

    scene, _calls = _stub_scene(session)
    bench = Workbench(session, scene, audit=False, panels=False)
    try:
        bench.viewer = SimpleNamespace(zone_light=None)
        p = (300.0, 150.0, 50.0)
        light = bench.light_at(p)
        tables = load_light_tables(session.data, build=session.build)
        want = scene_light(tables.map_light(resolve_map(session.data, session.map_name)[0]), np.array(p), 1440)
        assert light["fixed_sun"] is True and light["hour"] == "12:00"
        assert np.allclose(light["ambient"], want.ambient, atol=1e-3)
        assert np.allclose(light["sun_colour"], want.sun_color, atol=1e-3)
    finally:
        bench.close()


def test_overlays_are_computed_only_while_one_is_shown(session):
    from wowgrass.workbench.controller import Workbench

    scene, _calls = _stub_scene(session)
    bench = Workbench(session, scene, audit=False, panels=False)
    try:
        for key in session.tiles:  # tiles arrive with every overlay off: nothing computed
            bench.tile_resident(key)
        time.sleep(0.3)
        bench.before_frame(0.016)
        assert scene.terrain.cells.given == {} and bench.idle
        bench.toggle_overlay("excluded", True)
        deadline = time.monotonic() + 60
        while len(scene.terrain.cells.given) < len(session.tiles) and time.monotonic() < deadline:
            bench.before_frame(0.016)
            time.sleep(0.05)
        assert set(scene.terrain.cells.given) == set(session.tiles)
        assert scene.terrain.cells.mask != 0
    finally:
        bench.close()


def test_a_saved_file_names_its_resident_tile_even_if_the_session_never_loaded_it(tmp_path):
    """view --watch: the view draws tiles the session never read (no overlay, no pick): a file
    saved under one of them still reloads it."""
    from wowgrass.game.data import open_data
    from wowgrass.game.maps import adt_game_path
    from wowgrass.grass.bake import default_data
    from wowgrass.workbench.controller import Workbench
    from wowgrass.workbench.session import EditSession

    root, map_name = default_data()
    with open_data(root) as data:
        gp = adt_game_path(map_name, 31, 31)
        loose = tmp_path / "t.adt"
        loose.write_bytes(data.read(gp))
        data.add_file(gp, loose)
        s = EditSession(data, map_name, placement="coverage")
        scene = SimpleNamespace(tiles={(31, 31): SimpleNamespace(full=True), (32, 31): SimpleNamespace(full=True)},
                                terrain=SimpleNamespace(cells=_Cells()), on_resident=[], keep_grass=False,
                                client_look=False)
        bench = Workbench(s, scene, audit=False, panels=False)
        try:
            assert bench.resident_files_in({loose}) == [(31, 31)]
            assert bench.resident_files_in({tmp_path / "other.adt"}) == []
        finally:
            bench.close()


def test_the_cursor_over_a_tile_the_session_has_not_read_finds_its_cell_from_the_view(sample):
    """The cell under a point comes from the resident tile's grid (chunk positions and order):
    the same cell as the session's own reading gives, without the session reading the tile (a
    frame's worth of work for the cursor's first pass over a tile)."""
    from wowgrass.edit.adt_edit import read_tile
    from wowgrass.game.maps import adt_game_path
    from wowgrass.render.world.tile_payload import TileGround
    from wowgrass.workbench.controller import Workbench
    from wowgrass.workbench.session import EditSession

    data, map_name = sample
    fresh = EditSession(data, map_name, placement="coverage")
    key = fresh.tiles[0]
    gp = adt_game_path(map_name, *key)
    view_tile = TileGround(read_tile(data.read(gp), gp))
    scene = SimpleNamespace(tiles={key: SimpleNamespace(adt=view_tile, full=True)}, terrain=SimpleNamespace(cells=_Cells()),
                            on_resident=[], version=0)
    bench = Workbench(fresh, scene, audit=False, panels=False)
    try:
        rng = np.random.default_rng(5)
        x0, y0 = (float(v) for v in view_tile.positions[0, :2])
        pts = np.column_stack([x0 - rng.uniform(0, 533.3, 300), y0 - rng.uniform(0, 533.3, 300)])
        got = [bench.cell_at(float(x), float(y)) for x, y in pts]
        assert not fresh.has_read(key)  # the session has not read the tile
        want = [fresh.cell_at(float(x), float(y)) for x, y in pts]  # reads it
        assert fresh.has_read(key)
        assert got == want and all(r is not None and r.tile == key for r in got)
        assert len({r.chunk for r in got}) > 100  # points over most of the tile's chunks
    finally:
        bench.close()


def test_a_click_on_a_tile_the_session_has_not_read_fills_the_cell_panel_from_the_worker(sample):
    """The click outlines the cell at once; the session reads the tile on the workbench's thread
    and the panel's info arrives with a later frame, equal to the session's own cell info. On a
    tile already read the info is there at once."""
    from wowgrass.render.camera import Camera
    from wowgrass.render.world.tile_payload import TileGround
    from wowgrass.workbench.controller import Workbench, chunk_centre
    from wowgrass.workbench.session import EditSession

    data, map_name = sample
    fresh = EditSession(data, map_name, placement="coverage")
    key = fresh.tiles[0]
    ground = TileGround(EditSession(data, map_name, placement="coverage").tile(key))
    scene = SimpleNamespace(tiles={key: SimpleNamespace(adt=ground, full=True)}, terrain=SimpleNamespace(cells=_Cells()),
                            on_resident=[], version=0)
    bench = Workbench(fresh, scene, audit=False, panels=False)
    try:
        x, y = chunk_centre(key, (7, 3))
        z = float(ground.heights_at(int(ground.chunk_index_at(x, y)), x, y))
        cam = Camera.looking_at((x + 30.0, y + 5.0, z + 40.0), (x, y, z))
        bench.viewer = SimpleNamespace(camera=cam, target=SimpleNamespace(size=(64, 64)), zone_light=None)
        ref = bench.pick_at(31.5, 31.5)  # the centre pixel: the ray meets the ground at (x, y, z)
        assert ref is not None and ref.tile == key and ref.chunk == (7, 3)
        assert bench.picked == ref and bench.picked_info is None  # nothing read on the frame's thread yet
        deadline = time.monotonic() + 30
        while bench.picked_info is None and time.monotonic() < deadline:
            bench.before_frame(0.016)
            time.sleep(0.01)
        assert fresh.has_read(key)
        info = bench.picked_info
        want = fresh.cell_info(ref)
        assert info is not None and info["layers"] == want["layers"] and info["grass"] == want["grass"]
        assert np.allclose(info["world"][:2], (x, y), atol=0.5)
        # the tile is read now: a second click fills the panel at once
        assert bench.pick_at(31.5, 31.5) == ref and bench.picked_info is not None
    finally:
        bench.close()


@pytest.mark.parametrize("flag", [["--panels"], ["--watch"], ["--overlay", "sets"]])
def test_view_without_a_display_refuses_window_only_options(flag, tmp_path, monkeypatch):
    """With no display the view would fall back to one offscreen frame: options it would drop
    are an error that says why, and nothing is written."""
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["view", *flag])
    assert r.exit_code == 2, r.output
    assert "no display" in r.output and "xvfb-run" in r.output
    assert not (tmp_path / "view.png").exists()


def test_the_picks_ground_atlas_lands_where_render_pick_lands(session):
    """One numpy pass over every resident tile's heights gives render.pick's points exactly, and
    the session's cells; tiles that leave or come back are followed."""
    from wowgrass.render.camera import Camera
    from wowgrass.render.pick import pick_ground, pixel_ray
    from wowgrass.workbench.height_atlas import GroundAtlas
    from wowgrass.workbench.session import CellRef

    scene = _ground_scene(session)
    atlas = GroundAtlas()
    atlas.sync(scene.tiles)
    rng = np.random.default_rng(11)
    hits = 0
    for key in session.tiles:
        tile = session.tile(key)
        x, y = (float(v) for v in tile.positions[rng.integers(0, 256), :2])
        z = float(tile.abs_heights.max())
        cam = Camera.looking_at((x + 200.0, y + 90.0, z + 60.0), (x - 150.0, y - 160.0, z - 80.0))
        for _ in range(60):
            o, d = pixel_ray(cam, (320, 200), rng.uniform(0, 320), rng.uniform(60, 200))
            want, got = pick_ground(scene, o, d), atlas.pick(o, d)
            assert (want is None) == (got is None)
            if want is not None:
                hits += 1
                assert np.array_equal(want, got)
                k, _i, chunk, cell = atlas.cell(float(got[0]), float(got[1]))
                assert CellRef(k, chunk, cell) == session.cell_at(float(got[0]), float(got[1]))
    assert hits > 100
    gone = session.tiles[0]
    p = next(atlas.pick(*pixel_ray(Camera.looking_at((x0 + 30, y0 + 30, 300.0), (x0, y0, 0.0)), (64, 64), 31.5, 31.5))
             for x0, y0 in [tuple(float(v) - 100 for v in session.tile(gone).positions[0, :2])])
    assert p is not None
    atlas.sync({k: t for k, t in scene.tiles.items() if k != gone})
    assert atlas.heights(np.array([p[:2]]))[0] != atlas.heights(np.array([p[:2]]))[0]  # NaN: no tile there now
    atlas.sync(scene.tiles)
    assert np.isclose(atlas.heights(np.array([p[:2]]))[0], p[2])


def test_a_brush_in_hand_has_the_session_read_the_resident_tiles_off_the_frame(sample):
    """Choosing a brush (or a tile arriving while one is chosen) reads the resident tiles on the
    workbench's thread, so a dab never reads a tile on the frame's thread; the pick tool reads none."""
    from wowgrass.render.world.tile_payload import TileGround
    from wowgrass.edit.adt_edit import read_tile
    from wowgrass.game.maps import adt_game_path
    from wowgrass.workbench.controller import Workbench
    from wowgrass.workbench.session import EditSession

    data, map_name = sample
    fresh = EditSession(data, map_name, placement="coverage")
    tiles = {}
    for k in fresh.tiles:
        gp = adt_game_path(map_name, *k)
        tiles[k] = SimpleNamespace(adt=TileGround(read_tile(data.read(gp), gp)), full=True, grass=None)
    scene = SimpleNamespace(tiles=tiles, terrain=SimpleNamespace(cells=_Cells()), on_resident=[], version=0)
    bench = Workbench(fresh, scene, audit=False, panels=False, workers=0)
    try:
        bench.choose_tool("pick")
        time.sleep(0.3)
        assert bench.idle and not any(fresh.has_read(k) for k in tiles)
        bench.choose_tool("exclude")
        deadline = time.monotonic() + 60
        while not (bench.idle and all(fresh.has_read(k) for k in tiles)):
            assert time.monotonic() < deadline, [fresh.has_read(k) for k in tiles]
            time.sleep(0.05)
    finally:
        bench.close()


def test_merging_a_tiles_grass_drops_exactly_the_changed_chunks(session):
    """The bridge tests only the instances in the changed chunks' box: the same instances go as when
    every instance's chunk is worked out (chunks far apart, and instances on chunk edges)."""
    from wowgrass.formats.adt import CHUNK_SIZE
    from wowgrass.workbench.bridge import SceneBridge
    from wowgrass.workbench.overlays import SetColours

    scene, _calls = _stub_scene(session)
    key = session.tiles[0]
    t = scene.tiles[key]
    # instances put on the chunk corners too (the floor rule decides their chunk)
    name, inst = next((n, a) for n, a in t.grass.items() if len(a))
    edge = inst[:256].copy()
    edge["pos"][:, 0] = t.adt.positions[:, 0] - (np.arange(256) % 2) * CHUNK_SIZE
    edge["pos"][:, 1] = t.adt.positions[:, 1] - (np.arange(256) // 2 % 2) * CHUNK_SIZE
    t.grass = {**t.grass, name: np.concatenate([inst, edge])}
    bridge = SceneBridge(session, scene, SetColours())
    rng = np.random.default_rng(4)
    for chunks in ({0}, {255}, {17, 238}, set(rng.choice(256, 12, replace=False).tolist()), set(range(256))):
        got = bridge.merged(key, chunks, {})
        drop = np.zeros(256, bool)
        drop[list(chunks)] = True
        for n, a in t.grass.items():
            ch = t.adt.chunk_index_at(a["pos"][:, 0], a["pos"][:, 1])
            want = a[~drop[np.clip(ch, 0, 255)] | (ch < 0)]
            assert np.array_equal(got[n], want), (n, sorted(chunks)[:4])
        assert sum(len(a) for a in got.values()) < sum(len(a) for a in t.grass.values())


def _pick_rays(atlas, tiles, rng, n_views=6, per_view=40):
    """Rays as the cursor casts them (views looking down over each tile) and grazing ones (a few
    degrees under the horizon, long over the ground), from anywhere over the tiles."""
    from wowgrass.render.camera import Camera
    from wowgrass.render.pick import pixel_ray

    rays = []
    for t in tiles:
        for _ in range(n_views):
            x, y = (float(v) for v in t.positions[rng.integers(0, 256), :2])
            z = float(atlas.heights(np.array([[x, y]]))[0])
            cam = Camera.looking_at((x + 60.0, y + 40.0, z + rng.uniform(20, 200)), (x - 40.0, y - 120.0, z))
            rays += [pixel_ray(cam, (1920, 1080), rng.uniform(0, 1920), rng.uniform(300, 1080)) for _ in range(per_view)]
            d = rng.normal(size=3)
            d[2] = -abs(d[2]) * rng.uniform(0.01, 0.1)
            rays.append((np.array([x, y, z + rng.uniform(2, 30)]), d / np.linalg.norm(d)))
    return rays


def _fast_pick_matches_the_march(tiles):
    from wowgrass.workbench.height_atlas import GroundAtlas

    atlas = GroundAtlas()
    atlas.sync({k: SimpleNamespace(adt=t) for k, t in tiles.items()})
    rng = np.random.default_rng(3)
    tests, passes, hits = [], 0, 0
    for o, d in _pick_rays(atlas, tiles.values(), rng):
        got, want = atlas.pick(o, d), atlas.pick_marched(o, d)
        assert (got is None) == (want is None), (o, d)
        if want is not None:
            hits += 1
            assert np.array_equal(got, want), (o, d, got, want)
        tests.append(atlas.tests)
        passes += atlas.passes
    assert hits > len(tests) // 2
    # few samples tested one at a time (the march computes the ground under hundreds), and the
    # grazing rays reached the numpy pass that finishes a long graze
    assert np.median(tests) <= 12 and passes > 0
    return tests


def test_the_fast_pick_finds_the_marchs_point_testing_few_samples(session):
    """GroundAtlas.pick takes the march's samples but tests few of them (cell bounds rule most
    out, a chunk's slope proves the next ones above): the same point, bit for bit, as the march
    over every sample, over cursor rays and rays grazing the ground."""
    from wowgrass.render.world.tile_payload import TileGround

    _fast_pick_matches_the_march({k: TileGround(session.tile(k)) for k in session.tiles})


def test_the_fast_pick_finds_the_marchs_point_on_a_real_tile(realdata):
    """The same over the shared real tile's hills (continent4229.adt at its own place)."""
    from wowgrass.edit.adt_edit import read_tile
    from wowgrass.render.world.tile_payload import TileGround

    tile = read_tile((realdata / "adt" / "continent4229.adt").read_bytes(), "continent4229.adt")
    _fast_pick_matches_the_march({(42, 29): TileGround(tile)})  # chunk 0 at (1600, -5333.3): tile 42, 29


def test_the_bridges_ray_is_render_picks(session):
    """The bridge keeps the camera's inverse for a frame's picks: the same rays as pixel_ray."""
    from wowgrass.render.camera import Camera
    from wowgrass.render.pick import pixel_ray
    from wowgrass.workbench.bridge import SceneBridge
    from wowgrass.workbench.overlays import SetColours

    scene, _calls = _stub_scene(session)
    bridge = SceneBridge(session, scene, SetColours())
    rng = np.random.default_rng(8)
    for _ in range(20):
        cam = Camera.looking_at(rng.uniform(-900, 900, 3), rng.uniform(-900, 900, 3))
        for size in ((1920, 1080), (640, 400)):
            for _ in range(3):
                x, y = rng.uniform(0, size[0]), rng.uniform(0, size[1])
                (o1, d1), (o2, d2) = pixel_ray(cam, size, x, y), bridge.ray(cam, size, x, y)
                assert np.array_equal(o1, o2) and np.array_equal(d1, d2)
        cam.position = cam.position + 1.0  # the camera moved: a new inverse
        x, y = rng.uniform(0, 640), rng.uniform(0, 400)
        assert all(np.array_equal(a, b) for a, b in zip(pixel_ray(cam, (640, 400), x, y), bridge.ray(cam, (640, 400), x, y)))
