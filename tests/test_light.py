"""The zone's light: tables per build, bands across midnight, weights between the falloff radii,
light show (text, JSON, errors), the sample world's tables, view --clock, export --clock."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from wowgrass.cli.main import cli
from wowgrass.formats.dbc import schema_for, write_dbc
from wowgrass.game.light import (LightTables, LightUnavailable, client_sun_direction, light_world_positions,
                                 load_light_tables, model_colors, parse_clock, scene_light)
from wowgrass.samples import tables as T

LAKE = (-56.0, -121.0, 40.0)

# The tables' layout as client.md section 6 and formats.md give it, stated here rather than taken
# from the module under test, so that a wrong constant there fails these tests.
BANDS_PER_SET, FLOATS_PER_SET = 18, 6     # int band k of set P: row P*18 - 17 + k; float: P*6 - 5 + k
UNITS = 36.0                              # positions, radii and fog distances in 1/36 yard
CORNER = 32 * 1600.0 / 3.0                # ZEROPOINT: 32 tiles of 533.333 yards
COLOR_BANDS = ("diffuse", "ambient", "sky_top", "sky_middle", "sky_band1", "sky_band2", "sky_smog", "fog",
               "shadow_opacity", "sun", "cloud_sun", "cloud_emissive", "cloud_layer1_ambient",
               "cloud_layer2_ambient", "ocean_shallow", "ocean_deep", "river_shallow", "river_deep")
FLOAT_BANDS = ("fog_end", "fog_start_scaler", "celestial_glow", "cloud_density", "float_band_4", "float_band_5")


def sample_raw(build="3.3.5", lake=LAKE):
    return {p.split("\\")[-1][:-4]: b for p, b in T.light_tables(build, lake).items()}


def write_folder(folder, build="3.3.5", lake=LAKE, drop=(), mangle=None):
    folder.mkdir(parents=True, exist_ok=True)
    raw = sample_raw(build, lake)
    raw["Map"] = T.map_table(build)
    for name, data in raw.items():
        if name in drop:
            continue
        if mangle and name in mangle:
            data = mangle[name](data)
        (folder / f"{name}.dbc").write_bytes(data)
    return folder


def one_light_tables(times, colours, floats=None, build="3.3.5", lights=None, sets=None):
    """Tables whose parameter set 1 has ``times``/``colours`` keys in every colour band (``sets``:
    {set id: (colours, floats)} adds more sets, one key at 00:00 each). ``lights``: (place, start,
    end, params id or ids per slot) per light; None is a global light at (0, 0, 0) of map 7."""
    def band_rows(pid, times, colours, floats):
        n = len(times)
        ints = np.zeros(BANDS_PER_SET, schema_for("LightIntBand", build).dtype)
        for b in range(BANDS_PER_SET):
            ints[b]["ID"], ints[b]["Num"] = pid * BANDS_PER_SET - 17 + b, n
            t = np.zeros(16, np.int32); t[:n] = times
            v = np.zeros(16, np.int32); v[:n] = [(r << 16) | (g << 8) | bl for r, g, bl in colours]
            ints[b]["Time"], ints[b]["Data"] = t, v
        fl = np.zeros(6, schema_for("LightFloatBand", build).dtype)
        for b in range(6):
            fl[b]["ID"], fl[b]["Num"] = pid * FLOATS_PER_SET - 5 + b, n
            t = np.zeros(16, np.int32); t[:n] = times
            v = np.zeros(16, np.float32); v[:n] = floats[b] if floats is not None else [3600.0 * (k + 1) for k in range(n)]
            fl[b]["Time"], fl[b]["Data"] = t, v
        return ints, fl

    parts = [band_rows(1, times, colours, floats)]
    for pid, (col, fl) in (sets or {}).items():
        parts.append(band_rows(pid, [0], [col], [[v] for v in fl]))
    ints = np.concatenate([p[0] for p in parts])
    fls = np.concatenate([p[1] for p in parts])
    L = np.zeros(len(lights or [None]), schema_for("Light", build).dtype)
    for i, spec in enumerate(lights or [None]):
        L[i]["ID"], L[i]["ContinentID"] = i + 1, 7
        L[i]["LightParamsID"] = np.ones(L.dtype["LightParamsID"].shape, np.int32)
        if spec is not None:
            (x, y, z), r1, r2, pid = spec
            if (x, y, z) != (0.0, 0.0, 0.0):
                L[i]["GameCoords"] = [(CORNER - y) * UNITS, z * UNITS, (CORNER - x) * UNITS]
            L[i]["GameFalloffStart"], L[i]["GameFalloffEnd"] = r1 * UNITS, r2 * UNITS
            ids = np.zeros(L.dtype["LightParamsID"].shape, np.int32)
            pids = pid if isinstance(pid, tuple) else (pid,) * len(ids)
            ids[:len(pids)] = pids
            L[i]["LightParamsID"] = ids
    return LightTables.from_bytes({"Light": write_dbc(L), "LightIntBand": write_dbc(ints),
                                   "LightFloatBand": write_dbc(fls)})


def flat(colour, fog_end=100.0, scaler=0.5):
    """A parameter set of one colour in every band, fog end in yards (table: 1/36 yard)."""
    return colour, (fog_end * 36.0, scaler, 1.0, 0.5, 0.25, 0.75)


# ------------------------------------------------------------------------------------------ tables
def test_real_335_tables_parse_with_the_readme_counts(realdata):
    tables = load_light_tables(folder=realdata / "dbc" / "3.3.5")
    assert tables is not None and tables.build == "3.3.5"
    # the shared README: Light 715, LightParams 850, LightIntBand 15,300, LightFloatBand 5,100, LightSkybox 124
    assert (len(tables.lights), len(tables.params), len(tables.int_bands), len(tables.float_bands)) == \
        (715, 850, 15300, 5100)
    assert len(tables.skyboxes) == 124
    # Light 1 is map 0's global light, Light 191 map 1's
    for map_id, global_id in ((0, 1), (1, 191)):
        m = tables.map_light(map_id)
        assert int(m.ids[m.global_index]) == global_id and "stands in" not in m.global_rule
        # positions land on the map (within its 64 x 64 tiles) and the falloff end passes the start
        assert (np.abs(m.position[:m.n_local, :2]) <= CORNER + 1).all()
        assert (m.falloff[:m.n_local, 1] >= m.falloff[:m.n_local, 0]).all()


def test_real_custom_tables_read_as_another_clients(realdata):
    """dbc/3.3.5-custom: a custom server build's tables in the 3.3.5 layouts (the README's counts)."""
    tables = load_light_tables(folder=realdata / "dbc" / "3.3.5-custom")
    assert tables is not None and tables.build == "3.3.5"
    assert (len(tables.lights), len(tables.params), len(tables.int_bands)) == (1108, 1063, 18972)
    assert int(tables.lights["ID"].max()) == 50168
    for map_id in (0, 1):
        r = tables.map_light(map_id).result((-9449.0, 64.0, 57.0), 1440)
        assert all(0 <= c <= 255 for v in r["colors"].values() for c in v) and r["floats"]["fog_end"] >= 10


# the shared README's table (dbc/3.3.5): map, place, hour -> lights with a weight, diffuse,
# ambient, fog colour, fog end (yards)
README_PLACES = [
    (0, (-9449, 64, 57), "12:00", {1: 1.0}, "#ff8800", "#68829a", "#4d788f", 500.0),              # Goldshire
    (0, (-10500, -1200, 40), "12:00", {1: 1.0, 15: 1.0}, "#82b8de", "#406488", "#00749c", 180.6),  # Duskwood
    (0, (1333, -5600, 80), "00:00", {1: 1.0, 1763: 1.0}, "#2c2600", "#3e4254", "#4e2e14", 361.1),  # Tyr's Hand
    (1, (-7180, -3785, 9), "12:00", {191: 1.0, 195: 1.0}, "#feac7c", "#506c76", "#645456", 444.4),  # Tanaris
    (1, (7542, -3656, 390), "12:00", {191: 1.0, 196: 1.0, 259: 1.0, 264: 0.035},
     "#aea2ce", "#7c4882", "#7c3e90", 388.9),                                                     # four overlap
]


def _hex(rgb):
    return "#" + "".join(f"{int(v):02x}" for v in rgb)


@pytest.mark.parametrize("map_id,at,clock,lights,diffuse,ambient,fog,fog_end", README_PLACES)
def test_real_335_light_show_matches_the_readme(realdata, map_id, at, clock, lights, diffuse, ambient, fog,
                                                fog_end):
    r = CliRunner().invoke(cli, ["light", "show", "--data", str(realdata / "dbc" / "3.3.5"), "--map", str(map_id),
                                 "--at", ",".join(map(str, at)), "--clock", clock, "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert {li["id"]: round(li["weight"], 3) for li in out["lights"]} == lights
    assert (_hex(out["colors"]["diffuse"]), _hex(out["colors"]["ambient"]), _hex(out["colors"]["fog"])) == \
        (diffuse, ambient, fog)
    assert round(out["floats"]["fog_end"], 1) == fog_end


def test_real_335_overlap_blends_farthest_first(realdata):
    """Issue 41: map 1 at (7542, -3656, 390), noon: the client's order gives diffuse #aea2ce (the
    falloff-end order gave #06fcfd); the nearest light (259 of the three at full weight) lands last."""
    m = load_light_tables(folder=realdata / "dbc" / "3.3.5").map_light(1)
    m.evaluate((7542.0, -3656.0, 390.0), 1440)
    assert _hex(m.colors[0]) == "#aea2ce"
    order = [int(m.ids[i]) for i in m.blend_order]
    assert order == [196, 259, 264]
    dist = [float(np.linalg.norm(m.position[i] - [7542, -3656, 390])) for i in m.blend_order]
    assert dist == sorted(dist, reverse=True)
    assert np.isclose(m.shares.sum(), 1.0)


def test_the_sample_tables_parse_in_each_builds_layout():
    for build, fields in (("1.12", 12), ("2.4.3", 12), ("3.3.5", 15)):
        raw = sample_raw(build)
        assert int.from_bytes(raw["Light"][8:12], "little") == fields
        t = LightTables.from_bytes(raw, build=build)
        assert t.build == build and t.skyboxes == {1: "Environments\\Stars\\Stars.mdx"}
        m = t.map_light(T.MAP_ID)
        assert len(m) == 2 and m.global_index == 1
        # the writer's inverse of the client's conversion: the lake light is at the lake
        assert np.allclose(m.position[0], LAKE, atol=1e-2)
        assert np.allclose(m.falloff[0], T.LAKE_LIGHT_FALLOFF, atol=1e-3)


def test_the_world_transform_is_the_clients():
    # X = 17066.666 - c[2]/36, Y = 17066.666 - c[0]/36, Z = c[1]/36
    c = np.array([[612096.0, 0.0, 998400.0], [36.0 * 100, 36.0 * 5, 36.0 * 200]])
    w = light_world_positions(c)
    assert np.allclose(w[0], [17066.666 - 27733.333, 17066.666 - 17002.667, 0.0], atol=1e-3)
    assert np.allclose(w[1], [16866.666, 16966.666, 5.0], atol=1e-3)


def test_a_light_table_of_another_build_or_short_is_refused_as_unavailable():
    raw = sample_raw("1.12")
    with pytest.raises(LightUnavailable, match="layout"):
        LightTables.from_bytes(raw, build="3.3.5")
    raw = sample_raw("3.3.5")
    raw["Light"] = raw["Light"][:30]
    with pytest.raises(LightUnavailable):
        LightTables.from_bytes(raw)
    del raw["LightIntBand"]
    with pytest.raises(LightUnavailable, match="LightIntBand"):
        LightTables.from_bytes(raw)


# ------------------------------------------------------------------------------------------ bands
def test_bands_interpolate_between_keys_and_across_midnight():
    times = [600, 2400]
    colours = [(200, 100, 0), (0, 100, 200)]
    t = one_light_tables(times, colours, floats=[[3600.0, 7200.0]] * 6)
    m = t.map_light(7, exact=True)
    pos = np.zeros(3)
    m.evaluate(pos, 600)
    assert m.colors[0].tolist() == [200, 100, 0]
    m.evaluate(pos, 1500)                      # halfway between the keys
    assert np.allclose(m.colors[0], [100, 100, 100])
    # 00:00: from the 20:00 key (yesterday) towards 05:00's: 480 of 1080 half-minutes on
    m.evaluate(pos, 0)
    f = 480 / 1080
    assert np.allclose(m.colors[0], [200 * f, 100, 200 * (1 - f)])
    m.evaluate(pos, 2700)                      # 22:30: after the last key, towards tomorrow's first
    f = 300 / 1080
    assert np.allclose(m.colors[0], [200 * f, 100, 200 * (1 - f)])
    # floats the same way; fog_end in yards (the table stores 1/36 yard: 100 and 200 yards)
    assert np.isclose(m.floats[0], 200 - 100 * f)
    # the client's bytes: a band's channel is rounded to the nearest byte for the hour
    mb = t.map_light(7)
    mb.evaluate(pos, 0)
    f = 480 / 1080
    assert mb.colors[0].tolist() == [89, 100, 111]      # 88.9 and 111.1


def test_one_key_is_constant_and_no_key_is_zero():
    t = one_light_tables([1000], [(10, 20, 30)])
    m = t.map_light(7, exact=True)
    for h in (0, 999, 1000, 2879):
        m.evaluate(np.zeros(3), h)
        assert m.colors[0].tolist() == [10, 20, 30]
    t = one_light_tables([], [])
    m = t.map_light(7)
    m.evaluate(np.zeros(3), 1440)
    assert not m.colors.any() and "without keys" in " ".join(m.notes)


def test_colours_unpack_as_0x00rrggbb():
    m = one_light_tables([0], [(0x12, 0x34, 0x56)]).map_light(7)
    m.evaluate(np.zeros(3), 100)
    assert m.colors[2].tolist() == [0x12, 0x34, 0x56]


# ---------------------------------------------------------------------------------------- weights
def test_weights_between_the_radii_are_linear_and_continuous():
    m = LightTables.from_bytes(sample_raw()).map_light(T.MAP_ID, exact=True)
    r1, r2 = T.LAKE_LIGHT_FALLOFF
    xs = np.linspace(0.0, 130.0, 1301)
    lake_w, prev_colour, jumps = [], None, []
    for d in xs:
        p = np.array([LAKE[0] + d, LAKE[1], LAKE[2]])
        m.evaluate(p, 1440)
        assert np.isclose(m.shares.sum(), 1.0) and m.weights[1] == 1.0   # the global: the base
        lake_w.append(m.weights[0])
        if prev_colour is not None:
            jumps.append(np.abs(m.colors - prev_colour).max())
        prev_colour = m.colors.copy()
    lake_w = np.array(lake_w)
    # (the table stores float32 positions: about 0.002 yards of play at the map's corner offset)
    assert (lake_w[xs <= r1 - 0.01] == 1.0).all() and (lake_w[xs >= r2 + 0.01] == 0.0).all()
    mid = (xs > r1) & (xs < r2)
    assert np.allclose(lake_w[mid], 1 - (xs[mid] - r1) / (r2 - r1), atol=1e-4)
    # no pop: 0.1-yard steps change no colour by more than the falloff's slope allows
    assert max(jumps) < 1.0


def _three():
    """Global black; a far light A (200) and a near light B (40) around the origin's east."""
    A = ((300.0, 0.0, 0.0), 50.0, 400.0, 2)
    B = ((120.0, 0.0, 0.0), 10.0, 200.0, 3)
    return one_light_tables([0], [(0, 0, 0)], lights=[((0.0, 0.0, 0.0), 0, 0, 1), A, B],
                            sets={2: flat((200, 200, 200)), 3: flat((40, 40, 40))})


def test_lights_blend_farthest_first_with_the_clients_byte_rounding():
    t = _three()
    m = t.map_light(7)
    # at x = 120 + 105 = 225: B (105 yd, start 10 end 200) weighs 0.5; A (75 yd, start 50 end
    # 400) 1 - 25/350; A is nearer here, so B (the farther) blends first and A lands last
    p = np.array([225.0, 0.0, 0.0])
    m.evaluate(p, 0)
    assert [int(m.ids[i]) for i in m.blend_order] == [3, 2]
    wa = 1 - 25 / 350
    assert np.isclose(m.weights[0], wa, atol=1e-5) and np.isclose(m.weights[1], 0.5, atol=1e-5)
    # by hand: 0 -> 40 * 0.5 = 20 -> round_even(19.5) = 20; 20 + 180 * wa = 187.14 -> round_even(186.64) = 187
    assert m.colors[0].tolist() == [187, 187, 187]
    # the other way round (A first, then B) would give 40 + (185.7 - 40) / 2 = 113
    me = t.map_light(7, exact=True)
    me.evaluate(p, 0)
    assert np.allclose(me.colors[0], 20 + 180 * wa, atol=1e-3)
    assert np.isclose(me.shares.sum(), 1.0) and np.isclose(me.shares[0], wa, atol=1e-5)


def test_an_unchanged_odd_channel_loses_one_per_blend_and_exact_keeps_it():
    same = ((10.0, 0.0, 0.0), 50.0, 100.0, 1)   # the global's own set: nothing changes but the rounding
    t = one_light_tables([0], [(85, 86, 255)], lights=[((0.0, 0.0, 0.0), 0, 0, 1), same])
    m = t.map_light(7)
    m.evaluate(np.zeros(3), 0)
    assert m.colors[0].tolist() == [84, 86, 254]
    m = t.map_light(7, exact=True)
    m.evaluate(np.zeros(3), 0)
    assert m.colors[0].tolist() == [85, 86, 255]


def test_lights_within_a_third_of_a_yard_blend_larger_falloff_start_first():
    # the larger start is the nearer one here: farthest-first alone would blend it last
    small = ((100.1, 0.0, 0.0), 10.0, 60.0, 2)
    large = ((100.0, 0.0, 0.0), 40.0, 60.0, 3)
    t = one_light_tables([0], [(0, 0, 0)], lights=[((0.0, 0.0, 0.0), 0, 0, 1), small, large],
                         sets={2: flat((100, 100, 100)), 3: flat((200, 200, 200))})
    m = t.map_light(7)
    for x in (100.0, 99.0, 101.0):   # both at weight 1: the last one blended wins
        m.evaluate(np.array([x, 0.0, 0.0]), 0)
        assert [int(m.ids[i]) for i in m.blend_order] == [3, 2] and m.colors[0].tolist() == [100, 100, 100]
    # half a yard apart the tie rule is off: the farther pops first whatever its start
    small = ((100.5, 0.0, 0.0), 10.0, 60.0, 2)
    t = one_light_tables([0], [(0, 0, 0)], lights=[((0.0, 0.0, 0.0), 0, 0, 1), small, large],
                         sets={2: flat((100, 100, 100)), 3: flat((200, 200, 200))})
    m = t.map_light(7)
    m.evaluate(np.array([100.0, 0.0, 0.0]), 0)
    assert [int(m.ids[i]) for i in m.blend_order] == [2, 3] and m.colors[0].tolist() == [200, 200, 200]
    m.evaluate(np.array([100.6, 0.0, 0.0]), 0)
    assert [int(m.ids[i]) for i in m.blend_order] == [3, 2] and m.colors[0].tolist() == [100, 100, 100]
    # the centres' distance counts all three axes: 0.3 north and 0.2 up is 0.36 yd, past a third
    small = ((100.0, 0.3, 0.2), 10.0, 60.0, 2)
    t = one_light_tables([0], [(0, 0, 0)], lights=[((0.0, 0.0, 0.0), 0, 0, 1), small, large],
                         sets={2: flat((100, 100, 100)), 3: flat((200, 200, 200))})
    m = t.map_light(7)
    m.evaluate(np.array([100.0, -1.0, 0.0]), 0)    # the small light the farther: it pops first
    assert [int(m.ids[i]) for i in m.blend_order] == [2, 3] and m.colors[0].tolist() == [200, 200, 200]


@pytest.mark.parametrize(("build", "at_end_in_reach"), [("3.3.5", False), ("1.12", True)])
def test_a_light_exactly_its_falloff_end_away_is_in_reach_in_112_only(build, at_end_in_reach):
    """3.3.5 tests d^2 < end^2, 1.12 d <= end (float32): at exactly the end the light is pushed
    (and blended at weight 0: the byte rounding shows it) in 1.12 only."""
    x, end = 100.0, 60.0
    t = one_light_tables([0], [(85, 85, 85)], build=build,
                         lights=[((0.0, 0.0, 0.0), 0, 0, 1), ((x, 0.0, 0.0), 10.0, end, 1)])
    m = t.map_light(7)
    f32 = np.float32
    # the client's float32 position and radius, as client.md's transform gives them (z = 0 exactly)
    gc = np.array([(CORNER - 0.0) * UNITS, 0.0, (CORNER - x) * UNITS], f32) / f32(UNITS)
    px, py = f32(CORNER) - gc[2], f32(CORNER) - gc[0]
    end32 = f32(end * UNITS) / f32(UNITS)
    m.evaluate(np.array([px, py, end32], np.float64), 0)
    assert (m.blend_order == [0]) is at_end_in_reach
    assert m.colors[0].tolist() == ([84, 84, 84] if at_end_in_reach else [85, 85, 85])
    m.evaluate(np.array([px, py, np.nextafter(end32, f32(0))], np.float64), 0)
    assert m.blend_order == [0]
    m.evaluate(np.array([px, py, np.nextafter(end32, f32(1e9))], np.float64), 0)
    assert m.blend_order == []


def test_fog_end_is_floored_and_the_scaler_clamped_per_light_before_blending():
    near = ((50.0, 0.0, 0.0), 10.0, 110.0, 2)   # fog end 0 yards in the table, scaler 3
    t = one_light_tables([0], [(0, 0, 0)], lights=[((0.0, 0.0, 0.0), 0, 0, 1), near],
                         floats=[[100.0 * 36], [0.5], [1.0], [0.5], [0.0], [0.0]],
                         sets={2: ((0, 0, 0), (0.0, 3.0, 0.0, 0.5, 0.0, 0.0))})
    m = t.map_light(7, exact=True)
    m.evaluate(np.array([110.0, 0.0, 0.0]), 0)     # 60 yd from the light: weight 0.5
    assert np.isclose(m.weights[0], 0.5, atol=1e-5)
    assert np.isclose(m.floats[0], (100 + 10) / 2, atol=1e-3)   # 10 yards, not 0, went into the blend
    assert np.isclose(m.floats[1], (0.5 + 1.0) / 2, atol=1e-4)  # 1, not 3


def test_the_global_light_is_the_maps_last_and_else_light_1():
    t = one_light_tables([0], [(9, 9, 9)], lights=[None, None, ((5.0, 5.0, 5.0), 1, 2, 1)])
    m = t.map_light(7)
    assert int(m.ids[m.global_index]) == 2 and "last" in m.global_rule and "Light 1, 2" in " ".join(m.notes)
    t.lights = t.lights.copy()
    t.lights["ContinentID"][0] = 0            # Light 1 on map 0; map 123 has no light at all
    m = t.map_light(123)
    assert len(m) == 1 and int(m.ids[0]) == 1 and "Light 1 stands in" in m.notes[0]
    t.lights["ID"][0] = 50
    with pytest.raises(LightUnavailable, match="Light 1"):
        t.map_light(123)


def test_under_water_and_storm_take_their_parameter_slots():
    # slots: 0 clear (set 1), 1 under water (set 2), 2 storm (set 3), 3 storm under water (set 4)
    t = one_light_tables([0], [(10, 20, 30)], lights=[((0.0, 0.0, 0.0), 0, 0, (1, 2, 3, 4))],
                         sets={2: flat((0, 0, 200)), 3: flat((100, 100, 100), fog_end=50.0),
                               4: flat((7, 7, 7))})
    m = t.map_light(7)
    m.evaluate(np.zeros(3), 0, under_water=True)
    assert m.colors[0].tolist() == [0, 0, 200] and m.slot == 1
    full = t.map_light(7, storm=1.0)
    full.evaluate(np.zeros(3), 0)
    assert full.colors[0].tolist() == [100, 100, 100] and np.isclose(full.floats[0], 50.0)
    full.evaluate(np.zeros(3), 0, under_water=True)
    assert full.colors[0].tolist() == [7, 7, 7]
    half = t.map_light(7, storm=0.5)          # alpha 128: c + floor((storm - c) * 128 / 256)
    half.evaluate(np.zeros(3), 0)
    assert half.colors[0].tolist() == [55, 60, 65] and np.isclose(half.floats[0], (100 + 50) / 2)


def test_models_and_wmos_take_colours_half_way_between_ambient_and_diffuse():
    amb, dif = model_colors((100, 50, 250), (200, 51, 0))
    # ambient: a + floor((d - a) / 2) + 16, at most 255; diffuse: d + floor((a - d) / 2)
    assert amb == (166, 66, 141) and dif == (150, 50, 125)
    assert model_colors((250, 0, 0), (255, 0, 0))[0] == (255, 16, 16)


def test_the_clients_light_direction_by_the_hour():
    noon, six = client_sun_direction(1440), client_sun_direction(720)
    assert np.isclose(np.linalg.norm(noon), 1.0)
    assert np.isclose(np.degrees(np.arcsin(noon[2])), 90 - np.degrees(np.pi - 2.2165682), atol=1e-4)
    assert np.isclose(np.degrees(np.arcsin(six[2])), 90 - np.degrees(np.pi - 1.9198623), atol=1e-4)
    assert np.allclose(client_sun_direction(0), noon) and noon[0] > 0 and noon[1] > 0   # from the north-west
    sl = scene_light(LightTables.from_bytes(sample_raw()).map_light(T.MAP_ID), LAKE, 1440)
    assert np.allclose(sl.sun_dir, noon) and len(sl.sky) == 6 and len(sl.water) == 4
    assert sl.fog[1] >= 10 and all(0 <= c <= 1 for c in sl.model_ambient + sl.model_diffuse)


def test_parse_clock_accepts_the_day_and_names_the_range():
    assert parse_clock("00:00") == 0 and parse_clock("12:00") == 1440 and parse_clock("23:59") == 2878
    from wowgrass.errors import UsageError

    for bad in ("24:00", "12:60", "-1:00", "noon", "7"):
        with pytest.raises(UsageError, match="00:00"):
            parse_clock(bad)


# ------------------------------------------------------------------------------------------- CLI
def test_light_show_json_schema(tmp_path):
    folder = write_folder(tmp_path / "t")
    r = CliRunner().invoke(cli, ["light", "show", "--data", str(folder), "--map", "WowgrassSample",
                                 "--at", f"{LAKE[0] + 60},{LAKE[1]},{LAKE[2]}", "--clock", "06:30", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert set(out) == {"colors", "floats", "model_colors", "lights", "notes", "rules"}
    assert list(out["colors"]) == list(COLOR_BANDS) and list(out["floats"]) == list(FLOAT_BANDS)
    assert all(len(v) == 3 and all(0 <= c <= 255 for c in v) for v in out["colors"].values())
    assert {"blend_order", "global_light", "rounding", "slot", "fog", "model_colors"} <= set(out["rules"])
    ids = {li["id"]: li for li in out["lights"]}
    assert set(ids) == {1, 2} and ids[1]["global"] and not ids[2]["global"]
    assert np.isclose(ids[2]["weight"], 1 - (60 - 40) / 55, atol=1e-4)
    assert np.isclose(sum(li["share"] for li in out["lights"]), 1)
    # by map ID too, with --dbc
    r2 = CliRunner().invoke(cli, ["light", "show", "--dbc", str(folder), "--map", str(T.MAP_ID),
                                  "--at", f"{LAKE[0] + 60},{LAKE[1]},{LAKE[2]}", "--clock", "06:30", "--json"])
    assert json.loads(r2.stdout) == out
    text = CliRunner().invoke(cli, ["light", "show", "--data", str(folder), "--map", "wowgrasssample",
                                    "--at", "0,0", "--clock", "12:00"])
    assert text.exit_code == 0 and "sky_top" in text.stdout and "fog_end" in text.stdout and "Z 0 assumed" in text.stderr
    assert "rules followed" in text.stdout and "farthest first" in text.stdout
    storm = CliRunner().invoke(cli, ["light", "show", "--data", str(folder), "--map", "wowgrasssample",
                                     "--at", "0,0,0", "--clock", "12:00", "--weather", "storm", "--under-liquid", "water",
                                     "--json"])
    assert storm.exit_code == 0 and "LightParamsID[1]" in json.loads(storm.stdout)["rules"]["slot"]


def test_light_show_errors(tmp_path):
    folder = write_folder(tmp_path / "t")
    run = lambda *a: CliRunner().invoke(cli, ["light", "show", "--data", str(folder), "--map", "WowgrassSample", *a])  # noqa: E731
    r = run("--at", "0,0", "--clock", "24:30")
    assert r.exit_code == 2 and "00:00 to 23:59" in r.output and "Traceback" not in r.output
    r = run("--at", "zero", "--clock", "12:00")
    assert r.exit_code == 2 and "X,Y" in r.output
    r = CliRunner().invoke(cli, ["light", "show", "--data", str(folder), "--map", "Nowhere", "--at", "0,0",
                                 "--clock", "12:00"])
    assert r.exit_code == 2 and "not in Map.dbc" in r.output


def test_light_show_refuses_a_map_id_not_in_map_dbc(tmp_path):
    folder = write_folder(tmp_path / "t")
    r = CliRunner().invoke(cli, ["light", "show", "--data", str(folder), "--map", "99999", "--at", "0,0,0",
                                 "--clock", "12:00", "--json"])
    assert r.exit_code == 2 and "--map 99999: no map with that ID" in r.stderr and r.stdout == ""


@pytest.mark.parametrize("at", ["1e9,0,0", "0,-17100,0", "0,0,2e6", "nan,0,0"])
def test_light_show_refuses_a_place_off_the_map_as_view_does(tmp_path, at):
    folder = write_folder(tmp_path / "t")
    r = CliRunner().invoke(cli, ["light", "show", "--data", str(folder), "--map", "WowgrassSample", "--at", at,
                                 "--clock", "12:00"])
    assert r.exit_code == 2 and "error:" in r.output and "Traceback" not in r.output
    v = CliRunner().invoke(cli, ["view", "--camera", "1e9,0,0", "--output", str(tmp_path / "v.png")])
    assert v.exit_code == 2


def test_light_show_with_unusable_tables_is_an_error(tmp_path):
    # missing, short or another build's table: an error, exit 2, as every other command; -q says
    # nothing else (no "the view keeps its fixed sun")
    cases = {"missing": dict(drop=("LightIntBand",)), "short": dict(mangle={"Light": lambda b: b[:40]}),
             "truncated": dict(mangle={"Light": lambda b: b[:len(b) - 7]}), "other build": dict(build="1.12")}
    for name, kw in cases.items():
        f = write_folder(tmp_path / name.replace(" ", "_"), **kw)
        args = ["light", "show", "--data", str(f), "--map", "WowgrassSample", "--at", "0,0,0", "--clock", "12:00"]
        if name == "other build":   # 1.12 tables where 3.3.5 ones are asked for
            args += ["--build", "3.3.5"]
        for extra in ([], ["-q"], ["--json"]):
            r = CliRunner().invoke(cli, args + extra)
            assert r.exit_code == 2, (name, extra, r.output)
            assert "error:" in r.stderr and r.stdout == "", (name, extra)
            assert "fixed sun" not in r.output and "Traceback" not in r.output


# -------------------------------------------------------------------------------------- the sample
def test_the_sample_world_carries_its_light_tables():
    from wowgrass.game.data import open_data
    from wowgrass.samples import sample_data_path

    data = open_data(sample_data_path(build="3.3.5"))
    try:
        tables = load_light_tables(data)
        assert tables is not None and tables.build == "3.3.5"
        m = tables.map_light(T.MAP_ID)
        assert m.n_local == 1
        m.evaluate(np.asarray(data_lake()), 1440)
        assert m.weights.tolist() == [1.0, 1.0] and m.shares.tolist() == [1.0, 0.0]   # the lake light alone
    finally:
        data.close()


def data_lake():
    from wowgrass.samples.heights import SampleTerrain

    t = SampleTerrain((2, 2), 0)
    return (*t.lake_xy, t.lake_level)


# --------------------------------------------------------------------------------- view and export
@pytest.mark.gl
def test_view_clock_changes_the_frame_and_the_default_keeps_the_sun(tmp_path, egl):
    from PIL import Image

    def frame(*extra):
        out = tmp_path / f"v{len(list(tmp_path.iterdir()))}.png"
        r = CliRunner().invoke(cli, ["view", "--output", str(out), "--size", "96x54", "--camera", "-28,-38,71",
                                     "--target", "-62,-95,58", "--frames", "1", "--no-grass", *extra])
        assert r.exit_code == 0, r.output
        return np.asarray(Image.open(out).convert("RGB"), np.float64)

    plain, noon, night = frame(), frame("--clock", "12:00"), frame("--clock", "00:00")
    assert np.abs(noon - plain).mean() > 3          # the tables' light, not the fixed sun
    assert night.mean() < 0.5 * noon.mean()         # midnight is dark
    sky_noon = noon[0].mean(axis=0)                 # the top row: the sky's top band at noon
    assert sky_noon[2] > sky_noon[0]                # blue
    r = CliRunner().invoke(cli, ["view", "--output", str(tmp_path / "x.png"), "--clock", "25:00"])
    assert r.exit_code == 2 and "00:00 to 23:59" in r.output


def test_frame_block_carries_the_water_colours():
    from types import SimpleNamespace

    from wowgrass.render.camera import Camera
    from wowgrass.render.frame import _WATER, Frame, FrameUniforms
    from wowgrass.render.views import View

    u = FrameUniforms(SimpleNamespace(info={"GL_UNIFORM_BUFFER_OFFSET_ALIGNMENT": 256}))
    view = View(Camera(position=np.array([1.0, 2.0, 3.0])), (0, 0, 64, 64))
    off = u.pack(Frame(views=[view]), view)
    assert not off[_WATER:_WATER + 16].any()
    water = ((0.1, 0.2, 0.3), (0.4, 0.5, 0.6), (0.7, 0.8, 0.9), (0.0, 0.5, 1.0))
    on = u.pack(Frame(views=[view], water=water), view)
    assert np.allclose(on[_WATER:_WATER + 16].reshape(4, 4)[:, :3], water) and on[_WATER + 3] == 1.0


def test_export_carries_the_sun_and_the_sky(tmp_path):
    import pygltflib

    out = tmp_path / "t.glb"
    r = CliRunner().invoke(cli, ["export", "gltf", "-o", str(out), "--tile", "32,32", "--no-grass", "--no-doodads",
                                 "--no-terrain", "--no-wmos", "--no-liquids", "--clock", "12:00", "-q"])
    assert r.exit_code == 0, r.output
    g = pygltflib.GLTF2.load(str(out))
    assert "KHR_lights_punctual" in g.extensionsUsed
    light = g.extensions["KHR_lights_punctual"]["lights"][0]
    assert light["type"] == "directional"
    extras = g.scenes[g.scene].extras["wow_light"]
    assert extras["clock"] == "12:00" and set(extras["sky"]) >= {"sky_top", "sky_smog", "fog"}
    node = next(n for n in g.nodes if n.extensions and "KHR_lights_punctual" in n.extensions)
    x, y, z, w = node.rotation
    q = np.array([x, y, z])
    v = np.array([0.0, 0.0, -1.0])   # the light's -Z, turned by the node's rotation
    turned = v + 2 * np.cross(q, np.cross(q, v) + w * v)
    sun = client_sun_direction(1440)
    assert np.allclose(turned, [-sun[0], -sun[2], sun[1]], atol=1e-6)   # glTF (x, z, -y) of the travel
    assert np.allclose(light["color"], extras["sun_color"])


def test_the_views_light_follows_the_camera_and_steps_the_hour():
    from wowgrass.render.viewer import ZoneLight

    zl = ZoneLight(LightTables.from_bytes(sample_raw()).map_light(T.MAP_ID), parse_clock("23:00"))
    zl.step(120)
    assert zl.clock == 0                      # 23:00 + an hour: midnight, across the day's end
    zl.step(-240)
    assert zl.clock == 2640
    # walking out of the lake light: the colours change smoothly, step by step
    steps = [zl.at((LAKE[0] + d, LAKE[1], LAKE[2])) for d in np.linspace(30, 110, 161)]
    fog = np.array([s.fog_color for s in steps])
    ends = np.array([s.fog[1] for s in steps])
    assert not np.allclose(fog[0], fog[-1]) and np.abs(np.diff(fog, axis=0)).max() < 2 / 255
    assert ends[0] < ends[-1] and np.abs(np.diff(ends)).max() < 2.0


@pytest.mark.gl
def test_view_clock_over_a_real_tile_takes_the_real_tables(tmp_path, realdata, egl):
    r = CliRunner().invoke(cli, ["view", str(realdata / "adt" / "continent4229.adt"), "--map", "Azeroth",
                                 "--dbc", str(realdata / "dbc" / "3.3.5"), "--clock", "12:00", "--size", "64x36",
                                 "--frames", "1", "--output", str(tmp_path / "r.png"), "--no-grass", "--json"])
    assert r.exit_code == 0, r.output
    light = json.loads(r.stdout)["light"]
    # Tyr's Hand (map 0): inside Light 1763's falloff (the start camera also in a smaller one's),
    # the plagued lands' orange-red
    assert light["map_id"] == 0 and 1763 in [li["id"] for li in light["lights"]]
    assert sum(li["share"] for li in light["lights"]) == pytest.approx(1.0)
    red, green, blue = light["fog_color"]
    assert red > green > blue


def test_frame_block_carries_the_model_colours():
    from types import SimpleNamespace

    from wowgrass.render.camera import Camera
    from wowgrass.render.frame import _MODEL, Frame, FrameUniforms
    from wowgrass.render.views import View

    u = FrameUniforms(SimpleNamespace(info={"GL_UNIFORM_BUFFER_OFFSET_ALIGNMENT": 256}))
    view = View(Camera(position=np.array([1.0, 2.0, 3.0])), (0, 0, 64, 64))
    assert not u.pack(Frame(views=[view]), view)[_MODEL:_MODEL + 8].any()
    on = u.pack(Frame(views=[view], model_light=((0.1, 0.2, 0.3), (0.4, 0.5, 0.6))), view)
    assert np.allclose(on[_MODEL:_MODEL + 8], [0.1, 0.2, 0.3, 1.0, 0.4, 0.5, 0.6, 0.0])


def test_a_resident_tile_knows_its_liquid_surface_for_the_under_water_light(realdata):
    from wowgrass.formats.adt import AdtTile
    from wowgrass.formats.liquid import tile_liquid
    from wowgrass.render.world.tile_payload import TileGround

    adt = AdtTile.from_bytes((realdata / "adt" / "continent4229.adt").read_bytes())
    ground = TileGround(adt)
    lay = tile_liquid(adt).layers
    k = int(np.flatnonzero(lay["exists"].reshape(len(lay), 64).any(1))[0])
    r, c = (int(v[0]) for v in np.nonzero(lay["exists"][k]))
    ch = int(lay["chunk"][k])
    x = float(adt.positions[ch, 0]) - (r + 0.5) * 33.3333 / 8
    y = float(adt.positions[ch, 1]) - (c + 0.5) * 33.3333 / 8
    level, type_id, kind = ground.liquid_at(x, y)
    same = lay[(lay["chunk"] == ch) & lay["exists"][:, r, c]]
    assert level == pytest.approx(float(same["heights"][:, r:r + 2, c:c + 2].mean(axis=(1, 2)).max()), abs=1e-3)
    assert (type_id, kind) in {(int(t), int(k)) for t, k in zip(same["type"], same["kind"])}
    dry = np.argwhere(~tile_liquid(adt).cells())[0]
    ch, r, c = (int(v) for v in dry)
    x = float(adt.positions[ch, 0]) - (r + 0.5) * 33.3333 / 8
    y = float(adt.positions[ch, 1]) - (c + 0.5) * 33.3333 / 8
    assert ground.liquid_at(x, y) is None


@pytest.mark.gl
def test_view_takes_the_under_water_set_below_the_lakes_surface(tmp_path, egl):
    lake = data_lake()      # the sample lake's centre and surface height

    def light(z):
        r = CliRunner().invoke(cli, ["view", "--camera", f"{lake[0]},{lake[1]},{z}",
                                     "--target", f"{lake[0] + 30},{lake[1]},{z}", "--size", "64x36", "--frames", "1",
                                     "--no-grass", "-o", str(tmp_path / f"u{z}.png"), "--clock", "12:00", "--json", "-q"])
        assert r.exit_code == 0, r.output
        return json.loads(r.stdout)["light"]

    assert light(lake[2] - 0.5)["under_water"] is True
    assert light(lake[2] + 10.0)["under_water"] is False


def test_under_magma_and_slime_their_own_set_alone(realdata):
    """3.3.5: LiquidType.LightID (stock: magma 7, slime 6) replaces the lights; water takes the
    lights' under-water sets."""
    folder = realdata / "dbc" / "3.3.5"
    tables = load_light_tables(folder=folder)
    assert tables.liquid_params(3, 2) == 7 and tables.liquid_params(4, 3) == 6 and tables.liquid_params(1, 0) is None

    def show(*extra):
        r = CliRunner().invoke(cli, ["light", "show", "--data", str(folder), "--map", "0", "--at", "-10500,-1200,40",
                                     "--clock", "12:00", "--json", *extra])
        assert r.exit_code == 0, r.output
        return json.loads(r.stdout)

    magma, slime, water, dry = show("--under-liquid", "magma"), show("--under-liquid", "slime"), \
        show("--under-liquid", "water"), show()
    assert magma["lights"] == [] and "LightParams 7 alone" in magma["rules"]["slot"]
    m = tables.map_light(0)
    m._rows_for(0)
    own = m._liquid_record(7, 1440)
    assert magma["colors"]["fog"] == own[21:24].tolist() and magma["colors"] != slime["colors"]
    assert [li["id"] for li in water["lights"]] == [1, 15] and water["colors"] != dry["colors"]
    assert "LightParamsID[1]" in water["rules"]["slot"]


@pytest.mark.gl
def test_view_weather_storm_mixes_the_storm_sets_in(tmp_path, realdata, egl):
    def light(*extra):
        r = CliRunner().invoke(cli, ["view", str(realdata / "adt" / "continent4229.adt"), "--map", "Azeroth",
                                     "--dbc", str(realdata / "dbc" / "3.3.5"), "--clock", "12:00", "--size", "64x36",
                                     "--frames", "1", "--output", str(tmp_path / "s.png"), "--no-grass", "--json", "-q",
                                     *extra])
        assert r.exit_code == 0, r.output
        return json.loads(r.stdout)["light"]

    clear, storm = light(), light("--weather", "storm")
    assert clear["storm"] == 0.0 and storm["storm"] == 1.0
    assert storm["fog_color"] != clear["fog_color"] and storm["fog"][1] < clear["fog"][1]
    r = CliRunner().invoke(cli, ["view", "--weather", "storm", "--output", str(tmp_path / "x.png")])
    assert r.exit_code == 2 and "--clock" in r.output


def test_the_storm_mixes_colours_and_three_floats_only():
    """DNMixInfo: the storm set moves the colours and fog end, fog start scaler and cloud density by
    the amount (exact: linearly); celestial glow and the two other floats stay the clear set's."""
    clear_fl = [[100.0 * 36], [0.2], [0.9], [0.4], [0.6], [0.8]]
    storm = (0.0, (50.0 * 36, 0.6, 0.1, 0.8, 0.05, 0.05))
    t = one_light_tables([0], [(10, 20, 30)], floats=clear_fl, lights=[((0.0, 0.0, 0.0), 0, 0, (1, 2, 3, 4))],
                         sets={3: ((100, 100, 100), storm[1])})
    for amount in (0.25, 0.5):
        m = t.map_light(7, exact=True, storm=amount)
        m.evaluate(np.zeros(3), 0)
        assert np.allclose(m.colors[0], [10 + 90 * amount, 20 + 80 * amount, 30 + 70 * amount], atol=1e-4)
        assert np.isclose(m.floats[0], 100 + (50 - 100) * amount, atol=1e-3)     # fog end
        assert np.isclose(m.floats[1], 0.2 + (0.6 - 0.2) * amount, atol=1e-5)    # fog start scaler
        assert np.isclose(m.floats[3], 0.4 + (0.8 - 0.4) * amount, atol=1e-5)    # cloud density
        assert np.allclose(m.floats[[2, 4, 5]], [0.9, 0.6, 0.8], atol=1e-6)      # the clear set's
    m = t.map_light(7, exact=True, storm=3.0)    # an amount past 1 is 1
    m.evaluate(np.zeros(3), 0)
    assert np.allclose(m.colors[0], [100, 100, 100]) and np.isclose(m.floats[0], 50.0, atol=1e-3)


def test_under_a_liquid_with_a_light_its_set_alone_per_set_and_hour():
    t = one_light_tables([0, 1440], [(10, 20, 30), (30, 40, 50)], lights=[((0.0, 0.0, 0.0), 0, 0, 1),
                                                                         ((5.0, 0.0, 0.0), 10.0, 100.0, 1)],
                         sets={5: flat((200, 100, 50), fog_end=20.0), 6: flat((1, 2, 3), fog_end=30.0)})
    m = t.map_light(7, exact=True)
    for pid, colour, fog in ((5, (200, 100, 50), 20.0), (6, (1, 2, 3), 30.0), (5, (200, 100, 50), 20.0)):
        m.evaluate(np.zeros(3), 720, liquid_params=pid)
        assert m.liquid == pid and m.blend_order == [] and not m.weights.any()
        assert m.colors[0].tolist() == list(colour) and np.isclose(m.floats[0], fog, atol=1e-3)
    m.evaluate(np.zeros(3), 720)
    assert m.liquid is None and m.colors[0].tolist() == [20, 30, 40]   # half way from 00:00 to 24:00's key


def test_scene_light_takes_each_band_where_the_renderer_wants_it():
    """scene_light's fields by the bands' names (client.md section 6; COLOR_BANDS above): the sun is
    the diffuse band, the sky the six sky bands ending with fog, the water river then ocean; the
    fog starts at end x scaler; colours 0..1; the models' colours half way (model_colors)."""
    colours = [(10 + 12 * b, 250 - 11 * b, 7 * b + 3) for b in range(BANDS_PER_SET)]
    ints = np.zeros(BANDS_PER_SET, schema_for("LightIntBand", "3.3.5").dtype)
    for b, (r, g, bl) in enumerate(colours):
        ints[b]["ID"], ints[b]["Num"] = 1 * BANDS_PER_SET - 17 + b, 1
        ints[b]["Data"][0] = (r << 16) | (g << 8) | bl
    fls = np.zeros(FLOATS_PER_SET, schema_for("LightFloatBand", "3.3.5").dtype)
    for b, v in enumerate((150.0 * 36, 0.25, 1.0, 0.5, 0.1, 0.2)):
        fls[b]["ID"], fls[b]["Num"] = 1 * FLOATS_PER_SET - 5 + b, 1
        fls[b]["Data"][0] = v
    L = np.zeros(1, schema_for("Light", "3.3.5").dtype)
    L[0]["ID"], L[0]["ContinentID"] = 1, 7
    L[0]["LightParamsID"] = np.ones(L.dtype["LightParamsID"].shape, np.int32)
    t = LightTables.from_bytes({"Light": write_dbc(L), "LightIntBand": write_dbc(ints), "LightFloatBand": write_dbc(fls)})
    band = {name: tuple(c / 255.0 for c in colours[i]) for i, name in enumerate(COLOR_BANDS)}
    for exact in (False, True):
        s = scene_light(t.map_light(7, exact=exact), (0.0, 0.0, 0.0), 720)
        assert np.allclose(s.sun_color, band["diffuse"]) and np.allclose(s.ambient, band["ambient"])
        assert np.allclose(s.fog_color, band["fog"])
        assert np.allclose(s.sky, [band[n] for n in ("sky_top", "sky_middle", "sky_band1", "sky_band2", "sky_smog", "fog")])
        assert np.allclose(s.water, [band[n] for n in ("river_shallow", "river_deep", "ocean_shallow", "ocean_deep")])
        assert np.allclose(s.fog, (150.0 * 0.25, 150.0), atol=1e-3)
        amb, dif = model_colors(colours[1], colours[0], exact=exact)
        assert np.allclose(s.model_ambient, np.array(amb) / 255.0) and np.allclose(s.model_diffuse, np.array(dif) / 255.0)
        assert np.allclose(s.sun_dir, client_sun_direction(720))


def test_result_reports_the_blend_light_by_light():
    t = _three()
    m = t.map_light(7, storm=0.5)
    here = np.array([225.0, 0.0, 0.0])
    r = m.result(here, 0)
    g, b, a = r["lights"]
    assert (g["id"], g["global"], g["weight"], g["blend_order"], g["position"], g["falloff"], g["distance"]) == \
        (1, True, 1.0, 0, None, None, None)
    assert (b["id"], b["params_id"], b["global"], b["blend_order"]) == (3, 3, False, 1)
    assert (a["id"], a["params_id"], a["blend_order"]) == (2, 2, 2)
    assert np.isclose(b["weight"], 0.5, atol=1e-5) and np.isclose(a["weight"], 1 - 25 / 350, atol=1e-5)
    assert np.isclose(g["share"] + b["share"] + a["share"], 1.0) and np.isclose(a["share"], a["weight"])
    assert np.allclose(b["position"], [120.0, 0.0, 0.0], atol=1e-2) and np.allclose(b["falloff"], [10.0, 200.0])
    assert np.isclose(b["distance"], 105.0, atol=1e-2) and np.isclose(a["distance"], 75.0, atol=1e-2)
    assert list(r["colors"]) == list(COLOR_BANDS) and list(r["floats"]) == list(FLOAT_BANDS)
    assert all(r["colors"][n] == m.colors[i].tolist() for i, n in enumerate(COLOR_BANDS))
    assert all(r["floats"][n] == float(m.floats[i]) for i, n in enumerate(FLOAT_BANDS))
    amb, dif = model_colors(m.colors[1], m.colors[0])
    assert r["model_colors"] == {"ambient": [float(v) for v in amb], "diffuse": [float(v) for v in dif]}
    assert r["rules"]["slot"] == ("LightParamsID[0]: clear weather, above water; the storm set LightParamsID[2] "
                                  "mixed in by 0.5")
    assert r["rules"]["global_light"].endswith(" (the client's DNLoadMapLights)")
    assert "ambient half-way to the diffuse +16" in r["rules"]["model_colors"]
    r = t.map_light(7).result(here, 0, under_water=True)
    assert r["rules"]["slot"] == "LightParamsID[1]: clear weather, under water"
    r = t.map_light(7).result(here, 0, liquid_params=3)
    assert r["lights"] == [] and r["rules"]["slot"].startswith("under a liquid with a light of its own: LightParams 3 alone")


# ------------------------------------------------------------------ what light show says, word for word
def _params(*ids, build="3.3.5"):
    rows = np.zeros(len(ids), schema_for("LightParams", build).dtype)
    rows["ID"] = ids
    return rows


def test_a_map_light_by_default_is_the_clients_bytes_in_clear_weather():
    from wowgrass.game.light import MapLight

    t = one_light_tables([0], [(10, 20, 30)], lights=[((0.0, 0.0, 0.0), 0, 0, 1), ((5.0, 0.0, 0.0), 1.0, 50.0, 1)])
    m = MapLight(t, 7)
    assert (m.rounding, m.exact, m.storm, m.slot, m.active.tolist(), m.blend_order) == ("byte", False, 0.0, 0, [], [])
    assert MapLight(t, 7, storm=5.0).storm == 1.0 and MapLight(t, 7, storm=-1.0).storm == 0.0
    m.set_time(0)
    assert m.slot == 0
    # nothing in reach after something was: no light is active
    m.evaluate(np.array([5.0, 0.0, 0.0]), 0)
    assert m.active.tolist() == [0]
    m.evaluate(np.array([500.0, 0.0, 0.0]), 0)
    assert m.active.tolist() == [] and m.blend_order == []


def test_the_global_lights_rule_and_notes_word_for_word():
    t = one_light_tables([0], [(9, 9, 9)])
    m = t.map_light(7)
    assert m.notes == [] and m.warnings == []      # one global light, keyed: nothing to say
    r = m.result((0.0, 0.0, 0.0), 0)
    assert r["rules"]["global_light"] == "the map's last Light row at (0,0,0) (the client's DNLoadMapLights)"
    assert r["rules"]["rounding"] == ("client bytes: a band's channel lrint (nearest-even) per hour, every blend "
                                      "round_even(v - 0.5) in float32 (SkyLerp), so an unchanged odd channel loses 1 "
                                      "per blend")
    assert r["rules"]["model_colors"] == ("models and WMOs (DNUpdateColors): ambient half-way to the diffuse +16 "
                                          "(at most 255), diffuse half-way to the ambient")
    assert t.map_light(7, exact=True).result((0.0, 0.0, 0.0), 0)["rules"]["rounding"] == \
        "exact: floats throughout (for comparison; not what the client draws)"
    t.lights = t.lights.copy()
    t.lights["ContinentID"][0] = 0
    r = t.map_light(123).result((0.0, 0.0, 0.0), 0)
    assert r["rules"]["global_light"] == ("Light 1 stands in (the map has no Light row at (0,0,0)) "
                                          "(the client's DNLoadMapLights)")
    assert r["notes"] == ["map 123 has no global light: Light 1 stands in (map 0's), as in the client"]
    t.lights["ID"][0] = 50
    with pytest.raises(LightUnavailable) as exc:
        t.map_light(123)
    assert str(exc.value) == ("Light.dbc has no global light for map 123 and no Light 1 to stand in "
                              "(the client's rule)")


def _global_light_tables(diffuse_keys=True, ambient_keys=True, sky_keys=True, params_ids=(5, 6, 7, 8)):
    """A global light (Light 4) whose clear set 5 has one key at 06:00 in every band but where
    told otherwise: a band without keys has Num 0."""
    ints = np.zeros(BANDS_PER_SET, schema_for("LightIntBand", "3.3.5").dtype)
    keyed = [diffuse_keys, ambient_keys] + [sky_keys] * (BANDS_PER_SET - 2)
    for b in range(BANDS_PER_SET):
        ints[b]["ID"], ints[b]["Num"] = 5 * BANDS_PER_SET - 17 + b, int(keyed[b])
        ints[b]["Time"][0], ints[b]["Data"][0] = 720, 0x102030
    fls = np.zeros(FLOATS_PER_SET, schema_for("LightFloatBand", "3.3.5").dtype)
    for b in range(FLOATS_PER_SET):
        fls[b]["ID"], fls[b]["Num"] = 5 * FLOATS_PER_SET - 5 + b, 1
        fls[b]["Time"][0], fls[b]["Data"][0] = 720, 0.5
    L = np.zeros(1, schema_for("Light", "3.3.5").dtype)
    L[0]["ID"], L[0]["ContinentID"] = 4, 7
    L[0]["LightParamsID"][:len(params_ids)] = params_ids
    return {"Light": write_dbc(L), "LightIntBand": write_dbc(ints), "LightFloatBand": write_dbc(fls)}


def test_a_global_light_lit_black_is_warned_word_for_word():
    black = ("the map's global light (Light 4, LightParams 5) has no keys for its diffuse and ambient colours in "
             "LightIntBand.dbc: they read as 0 and the ground is lit black (are Light, LightParams and LightIntBand "
             "from one build?)")
    assert LightTables.from_bytes(_global_light_tables()).map_light(7).warnings == []
    # the diffuse alone keyed, or the ambient alone: the ground is lit
    assert LightTables.from_bytes(_global_light_tables(ambient_keys=False)).map_light(7).warnings == []
    assert LightTables.from_bytes(_global_light_tables(diffuse_keys=False)).map_light(7).warnings == []
    # neither (the sky keyed): lit black, and the empty bands said
    m = LightTables.from_bytes(_global_light_tables(diffuse_keys=False, ambient_keys=False)).map_light(7)
    assert m.warnings == [black + "; 2 band(s) without keys (or rows) read as 0"]
    assert m.notes == ["2 band(s) without keys (or rows) read as 0"]
    # the set's rows are not in the band tables at all (another build's): every band is empty
    raw = _global_light_tables(params_ids=(9, 6, 7, 8))
    m = LightTables.from_bytes(raw).map_light(7)
    assert m.warnings == [black.replace("LightParams 5", "LightParams 9") + "; 24 band(s) without keys (or rows) "
                          "read as 0"]
    m.evaluate(np.zeros(3), 720)
    assert not m.colors.any() and m.floats.tolist() == [10.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    # empty band tables: the same
    empty = dict(raw, LightIntBand=write_dbc(np.zeros(0, schema_for("LightIntBand", "3.3.5").dtype)),
                 LightFloatBand=write_dbc(np.zeros(0, schema_for("LightFloatBand", "3.3.5").dtype)))
    m = LightTables.from_bytes(empty).map_light(7)
    assert m.warnings == [black.replace("LightParams 5", "LightParams 9") + "; 24 band(s) without keys (or rows) "
                          "read as 0"]
    m.evaluate(np.zeros(3), 720)
    assert not m.colors.any() and m.floats.tolist() == [10.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    # no parameter set at all: the record reads 0, said in the notes
    m = LightTables.from_bytes(_global_light_tables(params_ids=(0, 0, 0, 0))).map_light(7)
    assert m.warnings == [black.replace("LightParams 5", "LightParams 0")]
    assert m.notes == ["1 light(s) with no parameter set (Light 4): their record reads 0, as in the client"]


@pytest.mark.parametrize("missing", [8, 9])
def test_lights_without_a_parameter_set_are_named_in_the_notes_eight_at_most(missing):
    lights = [((0.0, 0.0, 0.0), 0, 0, 1)] + [((10.0 * k, 0.0, 0.0), 1.0, 5.0, (0 if k <= missing else 1, 0))
                                             for k in range(1, missing + 3)]
    t = one_light_tables([0], [(1, 2, 3)], lights=lights)
    m = t.map_light(7)
    ids = ", ".join(str(k + 1) for k in range(1, min(missing, 8) + 1))
    assert m.notes == [f"{missing} light(s) with no parameter set (Light {ids}{'...' if missing > 8 else ''}): "
                       "their record reads 0, as in the client"]
    m.evaluate(np.zeros(3), 0, under_water=True)   # slot 1: only the global has a set there
    assert m.notes[1:] == [f"{missing + 2} light(s) with no parameter set in slot 1 (Light "
                           f"{', '.join(str(k + 1) for k in range(1, 9))}...): their record reads 0, as in the client"]
    # a light without a set, at weight 1, blends its zeros in (no fog floor either)
    m = t.map_light(7, exact=True)
    m.evaluate(np.array([10.0, 0.0, 0.0]), 0)
    assert m.blend_order == [0] and not m.colors.any() and m.floats[[0, 1, 3]].tolist() == [0.0, 0.0, 0.0]


def test_a_set_not_in_light_params_reads_as_none():
    """With LightParams present, a light's set must be one of its rows: else it reads 0 (no fog floor)."""
    t = one_light_tables([0], [(10, 20, 30)], lights=[((0.0, 0.0, 0.0), 0, 0, 1), ((10.0, 0.0, 0.0), 1.0, 50.0, 2)],
                         sets={2: flat((100, 100, 100))})
    t.params = _params(1)
    m = t.map_light(7, exact=True)
    assert m.notes == ["1 light(s) with no parameter set (Light 2): their record reads 0, as in the client"]
    m.evaluate(np.array([10.0, 0.0, 0.0]), 0)
    assert not m.colors.any() and m.floats[0] == 0.0
    t.params = _params(1, 2)
    m = t.map_light(7, exact=True)
    m.evaluate(np.array([10.0, 0.0, 0.0]), 0)
    assert m.notes == [] and m.colors[0].tolist() == [100, 100, 100] and np.isclose(m.floats[0], 100.0)


@pytest.mark.parametrize("build", ["1.12", "3.3.5"])
def test_an_unset_slot_takes_the_clear_set_in_112_only(build):
    t = one_light_tables([0], [(10, 20, 30)], build=build, lights=[((0.0, 0.0, 0.0), 0, 0, (1, 0))])
    m = t.map_light(7)
    r = m.result((0.0, 0.0, 0.0), 0, under_water=True)
    if build == "1.12":
        assert r["colors"]["diffuse"] == [10.0, 20.0, 30.0] and r["notes"] == []
        assert r["rules"]["slot"] == ("LightParamsID[1]: clear weather, under water; a slot without a set falls "
                                      "back to the clear one (1.12 [B])")
    else:
        assert r["colors"]["diffuse"] == [0.0, 0.0, 0.0]
        assert r["notes"] == ["1 light(s) with no parameter set in slot 1 (Light 1): their record reads 0, as in "
                              "the client"]
        assert r["rules"]["slot"] == "LightParamsID[1]: clear weather, under water"
    # the clear slot is the clear slot in both
    assert m.result((0.0, 0.0, 0.0), 0)["rules"]["slot"] == "LightParamsID[0]: clear weather, above water"


# ------------------------------------------------------------------------- the blend order, the reach
def _lights_at(places, build="3.3.5", start=1.0, end=1000.0):
    """Lights of sets 2, 3, ... (colour 10 * set) at ``places``, all in reach of each other."""
    lights = [((0.0, 0.0, 0.0), 0, 0, 1)] + [(p, start, end, k + 2) for k, p in enumerate(places)]
    sets = {k + 2: flat((10 * (k + 2),) * 3) for k in range(len(places))}
    return one_light_tables([0], [(0, 0, 0)], build=build, lights=lights, sets=sets)


def test_many_lights_pop_farthest_first_each_once():
    rng = np.random.default_rng(11)
    for n in (4, 7, 12):
        dist = rng.permutation(np.arange(1, n + 1) * 25.0)          # distinct distances along x
        t = _lights_at([(float(d), 0.0, 0.0) for d in dist])
        m = t.map_light(7)
        m.evaluate(np.zeros(3), 0)
        assert m.blend_order == sorted(range(n), key=lambda i: -dist[i]), (n, dist)
        assert np.isclose(m.shares.sum(), 1.0)


def test_two_lights_as_far_the_later_row_pops_first():
    """LightQEOrder: a pops before b when it is as far; pushed in file order, the later row pops
    first and the earlier row lands last (at weight 1: its colour is the result)."""
    t = _lights_at([(0.0, 0.0, 50.0), (0.0, 0.0, -50.0)])       # 50 yards above and below
    m = t.map_light(7)
    m.evaluate(np.zeros(3), 0)
    assert m.blend_order == [1, 0] and m.colors[0].tolist() == [20, 20, 20]
    # within a third of a yard, equal falloff starts: the same
    t = _lights_at([(0.0, 0.0, 40.0), (0.0, 0.0, 40.25)], start=60.0)
    m = t.map_light(7)
    m.evaluate(np.zeros(3), 0)
    assert m.blend_order == [1, 0] and m.colors[0].tolist() == [20, 20, 20]


def test_a_light_across_the_maps_origin_is_in_reach():
    """Reach is the distance, wherever the light and the place lie: 200 yards across (0, 0) with a
    falloff end of 210."""
    t = one_light_tables([0], [(0, 0, 0)], lights=[((0.0, 0.0, 0.0), 0, 0, 1), ((100.0, 0.0, 0.0), 5.0, 210.0, 2)],
                         sets={2: flat((200, 200, 200))})
    m = t.map_light(7, exact=True)
    m.evaluate(np.array([-100.0, 0.0, 0.0]), 0)
    assert m.blend_order == [0] and np.isclose(m.weights[0], 1 - 195 / 205, atol=1e-5)
    m.evaluate(np.array([-115.0, 0.0, 0.0]), 0)
    assert m.blend_order == []


# ------------------------------------------------------------------------------------------ liquids
def test_under_a_liquid_nothing_else_is_lit_and_its_set_follows_the_hour():
    t = one_light_tables([0], [(0, 0, 0)], lights=[((0.0, 0.0, 0.0), 0, 0, 1), ((5.0, 0.0, 0.0), 1.0, 50.0, 1)],
                         sets={})
    # set 5: 0 at 00:00, 200 at 12:00 (two keys in every band)
    extra = one_light_tables([0, 1440], [(0, 0, 0), (200, 200, 200)])
    ints, fls = extra.int_bands.copy(), extra.float_bands.copy()
    ints["ID"] += 4 * BANDS_PER_SET
    fls["ID"] += 4 * FLOATS_PER_SET
    t.int_bands = np.concatenate([t.int_bands, ints])
    t.float_bands = np.concatenate([t.float_bands, fls])
    m = t.map_light(7, exact=True)
    m.evaluate(np.array([5.0, 0.0, 0.0]), 0)
    assert m.active.tolist() == [0] and m.lights_used()[1]["id"] == 2
    m.evaluate(np.array([5.0, 0.0, 0.0]), 1440, liquid_params=5)
    assert m.liquid == 5 and m.colors[0].tolist() == [200, 200, 200]
    assert not m.weights.any() and not m.shares.any() and m.active.tolist() == [] and m.lights_used() == []
    m.evaluate(np.zeros(3), 2160, liquid_params=5)                  # 18:00: half way back to 00:00's key
    assert m.colors[0].tolist() == [100, 100, 100]
    m.evaluate(np.zeros(3), 1, liquid_params=5)                     # exact: 1/1440 of the way
    assert np.isclose(m.colors[0][0], 200 / 1440, atol=1e-4)
    r = m.result((0.0, 0.0, 0.0), 720, liquid_params=5)
    assert r["rules"]["slot"] == ("under a liquid with a light of its own: LightParams 5 alone, no lights, no storm "
                                  "(DNUpdateLight; LiquidType.LightID, or magma 7 / slime 6)")
    # a set LightParams does not have: the lights as usual
    t.params = _params(1)
    m = t.map_light(7)
    m.evaluate(np.array([5.0, 0.0, 0.0]), 0, liquid_params=5)
    assert m.liquid is None and m.blend_order == [0]
    t.params = _params(1, 5)
    m = t.map_light(7)
    m.evaluate(np.array([5.0, 0.0, 0.0]), 1440, liquid_params=5)
    assert m.liquid == 5


def test_lights_used_names_each_light_its_weight_and_share():
    t = _three()
    m = t.map_light(7)
    m.evaluate(np.array([225.0, 0.0, 0.0]), 0)
    used = m.lights_used()
    assert [u["id"] for u in used] == [1, 3, 2] and [set(u) for u in used] == [{"id", "weight", "share"}] * 3
    assert used[0]["weight"] == 1.0 and np.isclose(used[1]["weight"], 0.5, atol=1e-5)
    assert np.isclose(sum(u["share"] for u in used), 1.0) and np.isclose(used[2]["share"], used[2]["weight"])


def test_liquid_params_by_type_and_kind():
    t = one_light_tables([0], [(0, 0, 0)])
    assert t.liquid_lights is None
    assert (t.liquid_params(None, 2), t.liquid_params(3, 3), t.liquid_params(1, 0)) == (7, 6, None)
    t.liquid_lights = {1: 0, 3: 11, 19: 12}
    assert (t.liquid_params(3, 2), t.liquid_params(19, 2), t.liquid_params(1, 0)) == (11, 12, None)
    assert t.liquid_params(4, 3) == 6 and t.liquid_params(None, 2) == 7   # a type the table does not list: by kind


# ------------------------------------------------------------------------------ a record's numbers
def test_a_bands_channel_rounds_in_float32_as_the_client():
    """Keys 75 apart (and 45) over 30 half-minutes, half a minute on: 75/30 is 2.5 exactly in float64,
    just above in the client's float32 (1/30 rounds up), so the byte is 3; 45/30 + 1 = 2.5 rounds to the
    even 2 in float32 (the sum is exact), where adding in float64 gives 2.50000004 and so 3."""
    t = one_light_tables([0, 30], [(0, 1, 9), (75, 46, 9)])
    m = t.map_light(7)
    m.evaluate(np.zeros(3), 1)
    assert m.colors[0].tolist() == [3, 2, 9]


def test_fog_end_in_yards_is_the_clients_float32():
    """Fog end 100 and 500 yards (3600 and 18000 in the table, times the client's float32 1/36):
    exactly 300.0 half way in float32, where float64 would give 300.0000004 or 300.0000018."""
    t = one_light_tables([0, 1440], [(0, 0, 0), (0, 0, 0)], floats=[[3600.0, 18000.0], [0.5, 0.5], [1.0, 1.0],
                                                                   [0.5, 0.5], [0.0, 0.0], [0.0, 0.0]])
    m = t.map_light(7)
    m.evaluate(np.zeros(3), 720)
    assert m.floats[0] == 300.0
    assert t.map_light(7).result(np.zeros(3), 1440)["floats"]["fog_end"] == 500.0


def test_bands_without_keys_read_zero_floats_and_the_fog_scaler_clamps_both_ways():
    t = one_light_tables([0], [(5, 5, 5)], floats=[[3600.0], [-3.0], [0.7], [0.5], [0.25], [0.75]])
    m = t.map_light(7, exact=True)
    m.evaluate(np.zeros(3), 0)
    assert np.allclose(m.floats, [100.0, -1.0, 0.7, 0.5, 0.25, 0.75])
    t.float_bands = t.float_bands.copy()
    t.float_bands["Num"][2:] = 0                      # celestial glow, cloud density, bands 4 and 5: no keys
    m = t.map_light(7, exact=True)
    m.evaluate(np.zeros(3), 0)
    assert m.floats.tolist()[2:] == [0.0, 0.0, 0.0, 0.0] and np.isclose(m.floats[0], 100.0)
    t.float_bands["Num"][:] = 0                       # no fog keys either: fog end at its floor, 10 yards
    m = t.map_light(7, exact=True)
    m.evaluate(np.zeros(3), 0)
    assert m.floats.tolist() == [10.0, 0.0, 0.0, 0.0, 0.0, 0.0]


def test_a_key_count_past_16_reads_the_16_keys_a_row_holds():
    t = one_light_tables([0, 1440], [(0, 0, 0), (200, 100, 50)])
    want = t.map_light(7, exact=True)
    want.evaluate(np.zeros(3), 720)
    t.int_bands = t.int_bands.copy()
    t.int_bands["Num"] = 16
    sixteen = t.map_light(7, exact=True)
    sixteen.evaluate(np.zeros(3), 720)
    t.int_bands["Num"] = 40
    over = t.map_light(7, exact=True)
    over.evaluate(np.zeros(3), 720)
    assert over.colors.tolist() == sixteen.colors.tolist()
    assert want.colors[0].tolist() == [100, 50, 25]


# ---------------------------------------------------------------------------------- the tables
def test_damaged_optional_tables_are_left_out_with_a_warning_each():
    raw = sample_raw()
    for name in ("LightParams", "LightSkybox"):
        bad = dict(raw, **{name: raw[name][:30]})
        t = LightTables.from_bytes(bad)
        assert len(t.warnings) == 1 and t.warnings[0].startswith(f"{name}.dbc ignored: ")
        assert (t.params is None) is (name == "LightParams") and (t.skyboxes == {}) is (name == "LightSkybox")
        assert len(t.int_bands) == len(LightTables.from_bytes(raw).int_bands)
    # an optional table of no build's layout: left out, said, the others read
    for name in ("LightParams", "LightSkybox"):
        t = LightTables.from_bytes(dict(raw, **{name: raw["Light"]}))
        assert t.warnings == [f"{name}.dbc ignored: 15 fields × 60 B matches no layout of 1.10, 1.12, 2.4.3, 3.3.5"]
        assert (t.params is None) is (name == "LightParams") and (t.skyboxes == {}) is (name == "LightSkybox")
        assert len(t.float_bands) == len(LightTables.from_bytes(raw).float_bands)
    # a required table short: unavailable, naming it
    with pytest.raises(LightUnavailable, match=r"Light\.dbc"):
        LightTables.from_bytes(dict(raw, Light=raw["Light"][:30]))
    with pytest.raises(LightUnavailable, match=r"^LightFloatBand\.dbc at 0x14: 12 records"):
        LightTables.from_bytes(dict(raw, LightFloatBand=raw["LightFloatBand"][:20] + bytes(200)))
    with pytest.raises(LightUnavailable, match=r"^LightFloatBand\.dbc: 15 fields .* matches no layout"):
        LightTables.from_bytes(dict(raw, LightFloatBand=raw["Light"]))
    with pytest.raises(LightUnavailable) as exc:
        LightTables.from_bytes({"Light": raw["Light"]})
    assert str(exc.value) == "no LightIntBand.dbc, LightFloatBand.dbc"


def test_the_liquids_lights_come_from_a_335_liquid_type_table():
    lt = np.zeros(3, schema_for("LiquidType", "3.3.5").dtype)
    lt["ID"], lt["LightID"] = [1, 3, 19], [0, 7, 12]
    t = LightTables.from_bytes(dict(sample_raw(), LiquidType=write_dbc(lt)))
    assert t.liquid_lights == {1: 0, 3: 7, 19: 12} and t.warnings == []
    assert t.liquid_params(19, 2) == 12 and t.liquid_params(1, 0) is None
    # 1.12's LiquidType has no LightID: none (the fixed sets by kind)
    t = LightTables.from_bytes(dict(sample_raw("1.12"), LiquidType=T.liquid_type("1.12")), build="1.12")
    assert t.liquid_lights is None and t.liquid_params(3, 2) == 7
    # a damaged one: ignored, said
    t = LightTables.from_bytes(dict(sample_raw(), LiquidType=b"WDBC" + bytes(8)))
    assert t.liquid_lights is None and len(t.warnings) == 1
    assert t.warnings == ["LiquidType.dbc ignored for the liquids' light: LiquidType.dbc at 0x0: WDBC header: needs "
                          "20 bytes at offset 0, file has 12"]


def test_tables_from_a_folder_its_dbfilesclient_or_a_source_and_its_build(tmp_path):
    from types import SimpleNamespace

    folder = write_folder(tmp_path / "loose" / "DBFilesClient")
    t = LightTables.from_data(tmp_path / "loose")                # the folder above DBFilesClient
    assert t.build == "3.3.5" and len(t.lights) == 2
    assert LightTables.from_data(folder).build == "3.3.5"
    with pytest.raises(LightUnavailable) as exc:
        LightTables.from_data(None)
    assert str(exc.value) == "no data source for the light tables"
    # a source that says its build: tables of another layout are refused
    raw112 = {f"DBFilesClient\\{k}.dbc": v for k, v in sample_raw("1.12").items()}
    src = SimpleNamespace(build="3.3.5", exists=lambda p: p in raw112, read=lambda p: raw112[p])
    with pytest.raises(LightUnavailable, match="the data is 3.3.5"):
        LightTables.from_data(src)
    src.build = "1.12"
    assert LightTables.from_data(src).build == "1.12"
    # a source without the paths but with a root of bare tables
    bare = SimpleNamespace(root=tmp_path / "loose" / "DBFilesClient", exists=lambda p: False, read=None)
    assert LightTables.from_data(bare).build == "3.3.5"


def test_load_light_tables_warns_what_it_leaves_out(tmp_path):
    said = []
    folder = write_folder(tmp_path / "t", mangle={"LightSkybox": lambda b: b[:30]})
    assert load_light_tables(folder=folder, warn=said.append) is not None
    assert len(said) == 1 and said[0].startswith("LightSkybox.dbc ignored: ")
    said.clear()
    assert load_light_tables(folder=write_folder(tmp_path / "u", drop=("Light",)), warn=said.append) is None
    assert said == ["light tables unusable (no Light.dbc); keeping the fixed sun"]
    assert load_light_tables(folder=folder) is not None                  # no warn: quiet


# ------------------------------------------------------------------------------ names and hours
def test_resolve_map_by_id_or_name_and_its_errors(tmp_path):
    from wowgrass.errors import UsageError
    from wowgrass.game.light import resolve_map

    folder = write_folder(tmp_path / "t")
    assert resolve_map(folder, str(T.MAP_ID)) == (T.MAP_ID, "WowgrassSample")
    assert resolve_map(folder, " wowgrasssample ") == (T.MAP_ID, "WowgrassSample")
    with pytest.raises(UsageError) as exc:
        resolve_map(folder, "-3")
    assert str(exc.value).startswith("--map -3: no map with that ID in Map.dbc (IDs ")
    with pytest.raises(UsageError) as exc:
        resolve_map(folder, "Sample")
    assert str(exc.value) == "--map Sample: not in Map.dbc (did you mean WowgrassSample?)"
    with pytest.raises(UsageError) as exc:
        resolve_map(folder, "Outland")
    assert str(exc.value) == "--map Outland: not in Map.dbc"
    bare = write_folder(tmp_path / "no_map", drop=("Map",))
    (bare / "Map.dbc").unlink(missing_ok=True)
    assert resolve_map(bare, "530") == (530, "530")
    with pytest.raises(UsageError) as exc:
        resolve_map(bare, "Outland")
    assert str(exc.value) == "--map Outland: no Map.dbc to look the name up in (give the map's numeric ID)"


def test_clock_seconds_and_clock_text():
    from wowgrass.errors import UsageError
    from wowgrass.game.light import clock_text

    assert [parse_clock(c) for c in ("12:00:00", "12:00:15", "12:00:29", "12:00:30", "12:00:59")] == \
        [1440, 1440, 1440, 1441, 1441]
    for bad in ("12:00:60", "12:00:00:00", "12"):
        with pytest.raises(UsageError):
            parse_clock(bad)
    assert [clock_text(h) for h in (0, 1441, 1470, 2879, 2880 + 61)] == ["00:00", "12:00", "12:15", "23:59", "00:30"]


def test_the_clients_light_direction_in_the_evening():
    six, evening = client_sun_direction(720), client_sun_direction(2160)
    assert np.allclose(evening, six)                                  # 18:00 as 06:00: phi 1.9198623
    late = client_sun_direction(2520)                                 # 21:00: half way to midnight's phi
    phi = (1.9198623 + 2.2165682) / 2
    assert np.isclose(late[2], -np.cos(phi), atol=1e-9) and np.isclose(np.linalg.norm(late), 1.0)


def test_model_colours_exact_are_plain_halves():
    amb, dif = model_colors((100, 50, 250), (201, 51, 0), exact=True)
    assert amb == (166.5, 66.5, 141.0) and dif == (150.5, 50.5, 125.0)


def test_light_world_positions_are_float64_whatever_the_tables_float32():
    c = np.array([[612096.0, 36.0 * 5, 998400.5]], np.float32)
    assert np.allclose(light_world_positions(c), light_world_positions(c.astype(np.float64)), rtol=0, atol=1e-9)


def test_scene_light_under_water_under_a_liquid_and_a_fog_start_not_below_0():
    t = one_light_tables([0], [(10, 20, 30)], lights=[((0.0, 0.0, 0.0), 0, 0, (1, 2, 1, 2))],
                         floats=[[3600.0], [-0.5], [0.0], [0.0], [0.0], [0.0]],
                         sets={2: flat((0, 0, 200)), 5: flat((1, 2, 3))})
    m = t.map_light(7)
    assert scene_light(m, (0.0, 0.0, 0.0), 0).sun_color == (10 / 255, 20 / 255, 30 / 255)
    assert scene_light(m, (0.0, 0.0, 0.0), 0, under_water=True).sun_color == (0.0, 0.0, 200 / 255)
    assert scene_light(m, (0.0, 0.0, 0.0), 0, liquid_params=5).sun_color == (1 / 255, 2 / 255, 3 / 255)
    assert scene_light(m, (0.0, 0.0, 0.0), 0).fog == (0.0, 100.0)


def test_resolve_map_suggests_five_maps_at_most(tmp_path):
    from wowgrass.errors import UsageError
    from wowgrass.formats.dbc import DbcStringBlock
    from wowgrass.game.light import resolve_map

    rows = np.zeros(7, schema_for("Map", "3.3.5").dtype)
    sb = DbcStringBlock()
    for i in range(7):
        rows[i]["ID"], rows[i]["Directory"] = 600 + i, sb.add(f"Expansion{i}Zone")
    folder = write_folder(tmp_path / "t")
    (folder / "Map.dbc").write_bytes(write_dbc(rows, bytes(sb)))
    with pytest.raises(UsageError) as exc:
        resolve_map(folder, "zone")
    assert str(exc.value) == ("--map zone: not in Map.dbc (did you mean Expansion0Zone, Expansion1Zone, "
                              "Expansion2Zone, Expansion3Zone, Expansion4Zone?)")
    assert resolve_map(folder, "EXPANSION6ZONE") == (606, "Expansion6Zone")


def test_a_folder_s_liquid_type_gives_the_liquids_lights(tmp_path):
    lt = np.zeros(2, schema_for("LiquidType", "3.3.5").dtype)
    lt["ID"], lt["LightID"] = [3, 4], [7, 6]
    folder = write_folder(tmp_path / "t")
    (folder / "LiquidType.dbc").write_bytes(write_dbc(lt))
    assert LightTables.from_data(folder).liquid_lights == {3: 7, 4: 6}


def test_112_under_water_takes_its_own_set_where_the_slot_has_one():
    # clear set 2, under-water set 1 (a set number that is not past 1 is still a set)
    t = one_light_tables([0], [(10, 20, 30)], build="1.12", lights=[((0.0, 0.0, 0.0), 0, 0, (2, 1))],
                         sets={2: flat((200, 100, 0))})
    m = t.map_light(7)
    m.evaluate(np.zeros(3), 0)
    assert m.colors[0].tolist() == [200, 100, 0]
    m.evaluate(np.zeros(3), 0, under_water=True)
    assert m.colors[0].tolist() == [10, 20, 30]


def test_112_a_light_whose_falloff_start_is_its_end_weighs_1_out_to_its_end():
    x, end = 100.0, 60.0
    t = one_light_tables([0], [(0, 0, 0)], build="1.12", sets={2: flat((90, 90, 90))},
                         lights=[((0.0, 0.0, 0.0), 0, 0, 1), ((x, 0.0, 0.0), end, end, 2)])
    m = t.map_light(7)
    f32 = np.float32
    gc = np.array([(CORNER - 0.0) * UNITS, 0.0, (CORNER - x) * UNITS], f32) / f32(UNITS)
    px, py = f32(CORNER) - gc[2], f32(CORNER) - gc[0]
    m.evaluate(np.array([px, py, f32(end * UNITS) / f32(UNITS)], np.float64), 0)
    assert m.blend_order == [0] and m.weights[0] == 1.0 and m.colors[0].tolist() == [90, 90, 90]


def test_result_model_colours_take_the_ambient_and_the_diffuse_bands_exact_or_bytes():
    colours = [(10 + 12 * b, 251 - 11 * b, 7 * b + 3) for b in range(BANDS_PER_SET)]
    ints = np.zeros(BANDS_PER_SET, schema_for("LightIntBand", "3.3.5").dtype)
    for b, (r, g, bl) in enumerate(colours):
        ints[b]["ID"], ints[b]["Num"] = 1 * BANDS_PER_SET - 17 + b, 1
        ints[b]["Data"][0] = (r << 16) | (g << 8) | bl
    fls = np.zeros(FLOATS_PER_SET, schema_for("LightFloatBand", "3.3.5").dtype)
    L = np.zeros(1, schema_for("Light", "3.3.5").dtype)
    L[0]["ID"], L[0]["ContinentID"] = 1, 7
    L[0]["LightParamsID"] = np.ones(L.dtype["LightParamsID"].shape, np.int32)
    t = LightTables.from_bytes({"Light": write_dbc(L), "LightIntBand": write_dbc(ints), "LightFloatBand": write_dbc(fls)})
    for exact in (False, True):
        r = t.map_light(7, exact=exact).result((0.0, 0.0, 0.0), 0)
        amb, dif = model_colors(colours[1], colours[0], exact=exact)
        assert r["model_colors"] == {"ambient": list(amb), "diffuse": list(dif)}
    assert r["model_colors"]["diffuse"] == [16.0, 245.5, 6.5]   # exact: halves kept (10 + 12/2, 251 - 11/2, 3 + 7/2)


def test_the_storm_set_at_an_hour_between_its_keys_exact_or_bytes():
    t = one_light_tables([0], [(0, 0, 0)], lights=[((0.0, 0.0, 0.0), 0, 0, (1, 1, 2, 2))])
    extra = one_light_tables([0, 1440], [(0, 0, 0), (1, 1, 1)])     # set 2: 0 at 00:00, 1 at 12:00
    ints, fls = extra.int_bands.copy(), extra.float_bands.copy()
    ints["ID"] += BANDS_PER_SET
    fls["ID"] += FLOATS_PER_SET
    t.int_bands, t.float_bands = np.concatenate([t.int_bands, ints]), np.concatenate([t.float_bands, fls])
    m = t.map_light(7, exact=True, storm=1.0)
    m.evaluate(np.zeros(3), 360)                                    # 03:00: a quarter of the way
    assert np.allclose(m.colors[0], [0.25, 0.25, 0.25])
    m = t.map_light(7, storm=1.0)
    m.evaluate(np.zeros(3), 360)
    assert m.colors[0].tolist() == [0, 0, 0]
