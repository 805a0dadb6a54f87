"""Facts from ../shared/realdata/README.md about the real ADT files."""

from collections import Counter

import numpy as np
import pytest

from wowgrass.formats.adt import ALPHA_4BIT, AdtTile, write_adt
from wowgrass.formats.wdt import WdtFile


@pytest.fixture(scope="module")
def wotlk(realdata):
    data = (realdata / "adt" / "continent4229.adt").read_bytes()
    wdt = WdtFile.from_bytes((realdata / "adt" / "continent.wdt").read_bytes())
    return data, AdtTile.from_bytes(data, "continent4229.adt", big_alpha=wdt.big_alpha)


@pytest.fixture(scope="module")
def vanilla(realdata):
    data = (realdata / "adt" / "Azeroth_38_46.adt").read_bytes()
    return data, AdtTile.from_bytes(data, "Azeroth_38_46.adt")


def _effects(t):
    exists = np.arange(4)[None, :] < t.n_layers[:, None]
    return Counter(t.layer_effect[exists].tolist())


def test_continent4229_facts(wotlk):
    _, t = wotlk
    assert t.mh2o is not None and len(t.liquids) == 256
    assert len(t.textures) == 16
    assert np.bincount(t.n_layers, minlength=5)[1:].tolist() == [25, 47, 116, 68]
    exists = np.arange(4)[None, :] < t.n_layers[:, None]
    assert int(((t.layer_flags & 0x100) != 0)[exists].sum()) == 483
    assert int((t.alpha_encoding == ALPHA_4BIT).sum()) == 483      # 2048-byte 4-bit maps
    assert ((t.chunk_flags & 0x8000) != 0).all()
    eff = _effects(t)
    assert len(eff) == 20
    assert eff.most_common(4) == [(7043, 124), (1493, 87), (5677, 74), (40199, 52)]
    assert np.allclose(t.positions[0], [1600.0, -5333.334, 73.611], atol=1e-3)
    assert (t.col, t.row) == (42, 29)
    ah = t.abs_heights
    assert np.isclose(ah.min(), -515.169, atol=1e-3) and np.isclose(ah.max(), 263.005, atol=1e-3)
    assert int(t.no_effect_doodad.sum()) == 340
    assert int((t.doodad_mapping.reshape(256, -1) != 0).any(axis=1).sum()) == 224
    assert int((t.holes != 0).sum()) == 1
    # the index fields agree with MCNK order
    assert (t.index_xy[:, 1] * 16 + t.index_xy[:, 0] == np.arange(256)).all()


def test_azeroth_38_46_facts(vanilla):
    _, t = vanilla
    assert t.mh2o is None
    assert t.textures == [t.textures[0]] and t.textures[0].endswith("BurningSteppsAsh01.blp")
    assert (t.n_layers == 1).all()
    assert (t.alpha_encoding == 0).all() and (t.alpha == 0).all()
    assert _effects(t) == Counter({453: 256})
    assert np.allclose(t.positions[0], [-7466.666, -3200.0, 234.297], atol=1e-3)
    assert (t.col, t.row) == (38, 46)
    ah = t.abs_heights
    assert np.isclose(ah.min(), 170.881, atol=1e-3) and np.isclose(ah.max(), 445.756, atol=1e-3)
    assert not t.no_effect_doodad.any() and not t.holes.any() and not t.doodad_mapping.any()
    assert sum(1 for x in t.liquids if x is not None) == 256     # MCLQ chunks present (empty here)


@pytest.mark.parametrize("which", ["wotlk", "vanilla"])
def test_real_round_trip(which, request):
    data, t = request.getfixturevalue(which)
    out = write_adt(t)
    back = AdtTile.from_bytes(out, big_alpha=t.big_alpha)
    for name in ("heights", "normals", "alpha", "shadow", "layer_flags", "layer_effect", "doodad_mapping",
                 "no_effect_doodad", "holes", "positions", "chunk_flags"):
        assert np.array_equal(getattr(t, name), getattr(back, name)), name
    assert back.mh2o == t.mh2o and back.liquids == t.liquids
    assert out == data             # both files are written back byte for byte


def test_real_heights_at_vertices(wotlk):
    _, t = wotlk
    v = t.vertex_positions()
    k = np.repeat(np.arange(256), 145)
    # nudge outer vertices into their cell so the clamp never matters
    x = v[..., 0].reshape(-1).astype(np.float64) - 1e-3
    y = v[..., 1].reshape(-1).astype(np.float64) - 1e-3
    got = t.heights_at(k, x, y).reshape(256, 145)
    outer = np.concatenate([np.arange(9) + 17 * r for r in range(8)])     # rows 0..7 of outer vertices
    assert np.allclose(got[:, outer], t.abs_heights[:, outer], atol=0.05)
    inner = np.concatenate([np.arange(8) + 9 + 17 * r for r in range(8)])
    assert np.allclose(got[:, inner], t.abs_heights[:, inner], atol=0.05)
    assert (t.chunk_index_at(v[:, 9, 0], v[:, 9, 1]) == np.arange(256)).all()   # centre of cell (0, 0)


def test_computed_doodad_mapping_mostly_matches_the_baked_one(wotlk):
    _, t = wotlk
    agree = (t.computed_doodad_mapping() == t.doodad_mapping).mean()
    assert agree > 0.85          # 0.91 on this tile: the client's baker is not the same majority rule
