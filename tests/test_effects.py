"""GroundEffectCatalog: keying per build, empty slots, no-effect ids, model paths, provenance bytes."""

from __future__ import annotations

import numpy as np
import pytest

from dbc_builders import (
    dbc_bytes,
    TEXTURE_112_ROWS,
    TEXTURE_335_ROWS,
    FakeData,
    doodad_112,
    doodad_335,
    texture_110,
    texture_112,
    texture_335,
)
from wowgrass.game.effects import (
    DOODAD_PATH,
    TEXTURE_PATH,
    GroundEffectCatalog,
    density_stats,
    resolve_model,
)
from wowgrass.errors import FormatError, GameFileNotFound

D = "World\\NoDXT\\Detail\\"


@pytest.mark.parametrize(
    ("stored", "resolved"),
    [("ElwGra01.mdl", D + "ElwGra01.m2"), ("ElwGra02.mdx", D + "ElwGra02.m2"), ("x.m2", D + "x.m2"),
     ("Some\\Dir\\Foo.MDX", D + "Foo.m2"), ("a/b/Bar.mdl", D + "Bar.m2"), ("NoExt", D + "NoExt.m2"),
     ("", "")],
)
def test_resolve_model(stored, resolved):
    assert resolve_model(stored) == resolved


def cat112(**kw):
    return GroundEffectCatalog.from_dbc_bytes(texture_112(), doodad_112(), **kw)


def cat335(**kw):
    return GroundEffectCatalog.from_dbc_bytes(texture_335(), doodad_335(), **kw)


def test_catalog_112_keys_by_tag():
    c = cat112()
    assert c.build == "1.12" and not c.has_weights and c.unresolved == 0
    assert c.ids.dtype == np.uint32 and c.ids.tolist() == [7, 12, 99, 300, 453]  # sorted
    assert c.models == [D + "ElwFlo01.m2", D + "ElwGra01.m2", D + "ElwGra02.m2", D + "Foo.m2", D + "NoExt.m2"]
    r = c.row(453)
    # DoodadID 1, 2, 0 are tags: ElwGra01, ElwGra02, and tag 0 = ElwFlo01 (a real doodad); -1 empty
    assert r["models"] == [D + "ElwGra01.m2", D + "ElwGra02.m2", D + "ElwFlo01.m2", None]
    assert r["weights"] is None and r["density"] == 5 and r["sound"] == 7
    assert c.slot_weight.shape == (5, 4) and not c.slot_weight.any()
    assert c.slot_model.dtype == np.int32 and c.density.dtype == np.int32
    assert c.row(12)["models"] == [None] * 4
    assert c.no_doodads.tolist() == [False, True, False, False, False]
    assert c.effective_density.tolist() == [13, 8, 30, 8, 5]


def test_catalog_335_keys_by_id_with_weights_and_flags():
    c = cat335()
    assert c.build == "3.3.5" and c.has_weights
    r = c.row(453)
    # DoodadID 2, 3, 1 are IDs: ElwGra01, ElwGra02, ElwFlo01; 0 is empty in 3.3.5
    assert r["models"] == [D + "ElwGra01.m2", D + "ElwGra02.m2", D + "ElwFlo01.m2", None]
    assert r["weights"] == [8, 4, 4, 0]
    assert r["flags"] == [1, 0, 0, 0]  # doodad 2 (ElwGra01) has flag 0x1
    assert c.row(40199)["models"] == [D + "NoExt.m2", None, None, None]
    assert c.row(99)["flags"] == [2, 2, 0, 0]


def test_same_rows_resolve_to_same_models_across_builds():
    a, b = cat112(), cat335()
    for eid in (453, 7, 99):
        assert a.row(eid)["models"] == b.row(eid)["models"]


def test_243_and_110_key_like_112():
    c = cat112(build="2.4.3")
    assert c.build == "2.4.3" and c.row(453)["models"] == cat112().row(453)["models"]
    old = GroundEffectCatalog.from_dbc_bytes(texture_110(), doodad_112())
    assert old.build == "1.10" and old.row(453)["models"] == cat112().row(453)["models"]


def test_lookup_no_effect_ids_and_shapes():
    extra = TEXTURE_112_ROWS + [(0xFFFF, [1, -1, -1, -1], 8, 0)]
    c = GroundEffectCatalog.from_dbc_bytes(texture_112(extra), doodad_112())
    ids = np.array([[453, 0, 0xFFFF], [0xFFFFFFFF, 5, 7]], dtype=np.uint32)
    got = c.lookup(ids)
    assert got.shape == (2, 3) and got.dtype == np.int32
    assert c.ids[got[0, 0]] == 453 and c.ids[got[1, 2]] == 7
    assert got[0, 1] == got[0, 2] == got[1, 0] == got[1, 1] == -1  # 0, 0xFFFF, 0xFFFFFFFF, absent
    assert c.lookup(np.array([-1, 453], dtype=np.int32)).tolist() == [-1, int(np.flatnonzero(c.ids == 453)[0])]
    assert c.lookup([]).shape == (0,)
    assert c.lookup(np.array([10**6, 1], dtype=np.int64)).tolist() == [-1, -1]


def test_unresolved_and_duplicate_rows_are_reported():
    rows = TEXTURE_112_ROWS + [(453, [0, -1, -1, -1], 1, 1), (500, [77, 1, -1, -1], 8, 0)]
    c = GroundEffectCatalog.from_dbc_bytes(texture_112(rows), doodad_112())
    assert c.unresolved == 1 and c.row(500)["models"] == [None, D + "ElwGra01.m2", None, None]
    assert c.row(453)["density"] == 5  # the first 453 row wins
    assert any("duplicate" in w for w in c.warnings) and any("name no GroundEffectDoodad" in w for w in c.warnings)
    assert c.density_stats()["unresolved_slots"] == 1


def test_mismatched_tables():
    with pytest.raises(FormatError, match="GroundEffectTexture looks like 3.3.5 but GroundEffectDoodad like 1.12"):
        GroundEffectCatalog.from_dbc_bytes(texture_335(), doodad_112())
    with pytest.raises(FormatError, match="has 7 fields"):
        GroundEffectCatalog.from_dbc_bytes(texture_335(), doodad_335(), build="1.12")
    with pytest.raises(FormatError, match="cannot tell the GroundEffectTexture layout"):
        GroundEffectCatalog.from_dbc_bytes(dbc_bytes([[1, 2, 3, 4, 5]]), doodad_335())


def test_empty_tables_give_an_empty_catalog():
    c = GroundEffectCatalog.from_dbc_bytes(dbc_bytes([], b"\0", field_count=11, record_size=44), doodad_335())
    assert len(c) == 0 and c.lookup(np.array([1, 453])).tolist() == [-1, -1] and c.rows_used([453])
    assert c.density_stats()["rows"] == 0


def test_from_data_uses_the_gamedata_contract():
    data = FakeData({TEXTURE_PATH: texture_335(), "dbfilesclient/groundeffectdoodad.dbc": doodad_335()})
    c = GroundEffectCatalog.from_data(data)
    assert c.build == "3.3.5" and len(c) == len(TEXTURE_335_ROWS)
    tbc = GroundEffectCatalog.from_data(FakeData({TEXTURE_PATH: texture_112(), DOODAD_PATH: doodad_112()}, "2.4.3"))
    assert tbc.build == "2.4.3"
    with pytest.raises(GameFileNotFound):
        GroundEffectCatalog.from_data(FakeData({TEXTURE_PATH: texture_335()}))


def test_rows_used_is_canonical():
    c = cat335()
    a = c.rows_used(np.array([453, 7, 0, 12345]))
    assert a == c.rows_used([7, 453, 453, 0xFFFF]) and a.startswith(b"wowgrass-effects-rows-v1\0")
    assert D.encode() + b"ElwGra01.m2" in a
    assert c.rows_used([453]) != a and c.rows_used([]) != a
    assert len(c.rows_digest([453, 7])) == 64
    # an unused row changing leaves the bytes alone; a used one changing does not
    rows = list(TEXTURE_335_ROWS)
    rows[2] = (99, [4, 4, 0, 0], [1, 1, 1, 1], 31, 1)
    c2 = GroundEffectCatalog.from_dbc_bytes(texture_335(rows), doodad_335())
    assert c2.rows_used([453, 7]) == a and c2.rows_used([99]) != c.rows_used([99])
    # a used doodad's path changing changes the bytes
    paths = ["ElwFlo01.mdl", "ElwGra09.mdl", "ElwGra02.mdx", "Some\\Dir\\Foo.MDX", "NoExt"]
    c3 = GroundEffectCatalog.from_dbc_bytes(texture_335(), doodad_335(paths))
    assert c3.rows_used([453, 7]) != a


def test_density_stats():
    s = cat335().density_stats()
    assert (s["rows"], s["min"], s["max"], s["median"], s["zero"]) == (5, 0, 30, 5.0, 1)
    assert s["over_density_cap"] == {"cap": 24, "rows": 1}
    assert s["over_clump_cap"] == {"cap": 12, "rows": 2}
    assert s["no_doodads"] == 1 and s["with_doodads"]["rows"] == 4 and s["with_doodads"]["min"] == 3
    hist = {b["range"]: b["count"] for b in s["histogram"]}
    assert hist == {"0": 1, "1-4": 1, "5-8": 1, "9-12": 0, "13-16": 1, "17-20": 0, "21-24": 0, "25+": 1}
    assert sum(hist.values()) == 5
    empty = density_stats(np.zeros(0, np.int32), np.zeros(0, bool))
    assert empty["min"] is None and empty["with_doodads"]["median"] is None


# ------------------------------------------------------------------------------------- real data
@pytest.fixture(scope="module")
def real_catalogs(realdata):
    out = {}
    for build in ("1.12", "3.3.5"):
        folder = realdata / "dbc" / build
        out[build] = GroundEffectCatalog.from_data(FakeData({
            TEXTURE_PATH: (folder / "GroundEffectTexture.dbc").read_bytes(),
            DOODAD_PATH: (folder / "GroundEffectDoodad.dbc").read_bytes(),
        }))
    return out


@pytest.mark.realdata
def test_real_112_catalog(real_catalogs):
    c = real_catalogs["1.12"]
    assert c.build == "1.12" and len(c) == 11791 and not c.has_weights and c.unresolved == 0
    r = c.row(453)
    assert r["doodads"] == [102, 116, 107, 106] and r["density"] == 5 and r["sound"] == 7
    assert all(m and m.startswith(D) and m.endswith(".m2") for m in r["models"])
    r = c.row(1493)
    assert r["doodads"] == [-1] * 4 and r["models"] == [None] * 4 and r["density"] == 0 and r["sound"] == 5
    assert [D + f"ElwGra0{i}.m2" for i in range(1, 9)] == c.models[3:11]
    s = c.density_stats()
    assert (s["min"], s["max"], s["zero"], s["over_density_cap"]["rows"]) == (0, 99, 10815, 1)


@pytest.mark.realdata
def test_real_335_catalog(real_catalogs):
    c = real_catalogs["3.3.5"]
    assert c.build == "3.3.5" and len(c) == 24982 and c.has_weights and c.unresolved == 0
    r = c.row(453)
    assert r["doodads"] == [103, 106, 108, 107] and r["weights"] == [1] * 4 and (r["density"], r["sound"]) == (5, 7)
    r = c.row(40199)
    assert r["doodads"] == [277, 283, 284, 293] and r["weights"] == [1] * 4 and (r["density"], r["sound"]) == (3, 9)
    s = c.density_stats()
    assert (s["min"], s["max"], s["zero"], s["over_density_cap"]["rows"]) == (0, 123, 23797, 4)
    # effect 453 reaches the same four detail models in both clients
    assert r is not None and c.row(453)["models"] == real_catalogs["1.12"].row(453)["models"]
    # ElwGra01..08 are doodad IDs 4..11 with flags 0
    assert [D + f"ElwGra0{i}.m2" for i in range(1, 9)] == c.models[3:11]


@pytest.mark.realdata
def test_real_continent_effect_ids_resolve(real_catalogs):
    ids = np.array([7043, 1493, 5677, 40199, 453])
    assert (real_catalogs["3.3.5"].lookup(ids) >= 0).all()
    assert real_catalogs["1.12"].lookup(np.array([453]))[0] >= 0
