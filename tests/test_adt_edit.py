"""Byte-exact ground-effect edits (wowgrass.edit.adt_edit): every changed byte lies in an intended
field (found here by a struct walk, not by wowgrass), and the edited tile reads back with exactly
the intended values, on wowgrass's own layout, on other editors' layouts and on the real tiles."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from adt_build import editor_layout, generated_tile, mcnk_offsets

from wowgrass.edit.adt_edit import (
    STALE_MARGIN, assign_effect, best_layers, exclude_cells, match_textures, patch_fields, read_tile, remap_mapping,
    stale_cells, visible_shares,
)
from wowgrass.formats.adt import AdtTile, MclyFlags, alpha_encodings, write_adt

LAYOUTS = {
    "wowgrass": None,
    "reversed+pad, MCIN with headers": dict(mcin="header", pad=True),
    "alpha first, MCIN payload only": dict(order=[b"MCAL", b"MCLY", b"MCSH", b"MCVT", b"MCNR", b"MCRF"],
                                           mcin="payload", pad=False, top_pad=True),
    "layers last, padded": dict(order=[b"MCVT", b"MCNR", b"MCCV", b"MCRF", b"MCAL", b"MCSH", b"MCLY"], pad=True,
                                top_pad=False),
}


def spans(data: bytes) -> dict[str, set[int]]:
    """File offsets of the bytes of each ground-effect field (struct walk)."""
    out = {"effect_id": set(), "doodad_mapping": set(), "no_effect_doodad": set()}
    for m in mcnk_offsets(data):
        h = m + 8
        n_layers, = struct.unpack_from("<I", data, h + 0x0C)
        ofs_layer, = struct.unpack_from("<I", data, h + 0x1C)
        for k in range(n_layers):
            at = m + ofs_layer + 8 + 16 * k + 12
            out["effect_id"].update(range(at, at + 4))
        out["doodad_mapping"].update(range(h + 0x40, h + 0x50))
        out["no_effect_doodad"].update(range(h + 0x50, h + 0x58))
    return out


def struct_effects(data: bytes) -> list[list[int]]:
    out = []
    for m in mcnk_offsets(data):
        n, = struct.unpack_from("<I", data, m + 8 + 0x0C)
        ofs, = struct.unpack_from("<I", data, m + 8 + 0x1C)
        out.append([struct.unpack_from("<I", data, m + ofs + 8 + 16 * k + 12)[0] for k in range(n)])
    return out


def changed(old: bytes, new: bytes) -> np.ndarray:
    assert len(old) == len(new)
    return np.flatnonzero(np.frombuffer(old, np.uint8) != np.frombuffer(new, np.uint8))


def assert_only(old, new, *fields):
    diff = changed(old, new)
    allowed = set().union(*(spans(old)[f] for f in fields))
    outside = [int(d) for d in diff if int(d) not in allowed]
    assert not outside, f"{len(outside)} bytes changed outside {fields}, first at {outside[0]}"
    return diff


def same_elsewhere(a: AdtTile, b: AdtTile):
    for name in ("heights", "normals", "alpha", "shadow", "layer_texture", "layer_flags", "holes", "chunk_flags",
                 "positions", "area_id"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.textures == b.textures and a.models == b.models


@pytest.fixture(scope="module", params=list(LAYOUTS))
def layout(request):
    t = generated_tile(2, seed=3, mccv=True)
    raw = write_adt(t)
    kw = LAYOUTS[request.param]
    return raw if kw is None else editor_layout(raw, **kw)


def test_editor_layouts_really_differ_and_read_the_same(layout):
    t = read_tile(layout, "x.adt", big_alpha=True)
    ref = generated_tile(2, seed=3, mccv=True)
    for name in ("alpha", "heights", "layer_effect", "doodad_mapping", "no_effect_doodad", "mccv"):
        assert np.array_equal(getattr(t, name), getattr(ref, name)), name
    # write_adt would move much of such a file: the reason edits patch in place
    if layout != write_adt(ref):
        assert changed(layout, write_adt(t)).size > 100_000


def test_field_offsets_agree_with_a_struct_walk(layout):
    t = read_tile(layout, "x.adt", big_alpha=True)
    ofs = t.field_offsets()
    walk = spans(layout)
    eff = ofs["effect_id"][ofs["effect_id"] >= 0]
    assert set((eff[:, None] + np.arange(4)).ravel().tolist()) == walk["effect_id"]
    assert set((ofs["doodad_mapping"][:, None] + np.arange(16)).ravel().tolist()) == walk["doodad_mapping"]
    with pytest.raises(ValueError):
        generated_tile(2).field_offsets()      # a tile from arrays has no file


def test_assign_changes_only_effect_ids(layout):
    t = read_tile(layout, "x.adt", big_alpha=True)
    new, rep = assign_effect(layout, "x.adt", "TILESET/B.BLP", 4242)
    diff = assert_only(layout, new, "effect_id")
    b = t.textures.index("tileset\\b.blp")
    exists = np.arange(4)[None, :] < t.n_layers[:, None]
    want = np.where(exists & (t.layer_texture == b), 4242, t.layer_effect)
    again = read_tile(new, "x.adt", big_alpha=True)
    assert np.array_equal(again.layer_effect[exists], want[exists])
    assert [v for row in struct_effects(new) for v in row] == want[exists].tolist()
    same_elsewhere(t, again)
    assert np.array_equal(again.doodad_mapping, t.doodad_mapping)
    n = int((exists & (t.layer_texture == b)).sum())
    assert rep.layers == n and rep.fields["effect_id"] == diff.size and 0 < diff.size <= 4 * n


def test_assign_only_unassigned_and_by_chunk(layout):
    t = read_tile(layout, "x.adt", big_alpha=True)
    exists = np.arange(4)[None, :] < t.n_layers[:, None]
    chunks = np.zeros(256, bool)
    chunks[:100] = True
    new, rep = assign_effect(layout, "x.adt", "*.blp", 7, only_unassigned=True, chunks=chunks)
    assert_only(layout, new, "effect_id")
    sel = exists & (t.layer_effect == 0) & chunks[:, None]
    again = read_tile(new, "x.adt", big_alpha=True)
    assert np.array_equal(again.layer_effect[exists], np.where(sel, 7, t.layer_effect)[exists])
    assert rep.layers == int(sel.sum()) > 0 and rep.before == {0: int(sel.sum())}


def test_remap_changes_only_doodad_mapping_and_clears_stale(layout):
    t = read_tile(layout, "x.adt", big_alpha=True)
    stale = stale_cells(t, 0.0)
    assert stale.sum() > 100                    # the generated mapping is random
    new, rep = remap_mapping(layout, "x.adt", margin=0.0)
    assert_only(layout, new, "doodad_mapping")
    again = read_tile(new, "x.adt", big_alpha=True)
    want = np.where(stale, best_layers(t), t.doodad_mapping)
    assert np.array_equal(again.doodad_mapping, want)
    assert not stale_cells(again, 0.0).any()
    same_elsewhere(t, again)
    assert np.array_equal(again.layer_effect, t.layer_effect) and np.array_equal(again.no_effect_doodad,
                                                                                 t.no_effect_doodad)
    assert rep.cells == int((stale & (best_layers(t) != t.doodad_mapping)).sum())
    # a second remap has nothing left to do
    assert remap_mapping(new, "x.adt", margin=0.0)[0] == new


def test_exclude_sets_and_clears_only_no_effect_bits(layout):
    t = read_tile(layout, "x.adt", big_alpha=True)
    mask = np.random.default_rng(1).random((256, 8, 8)) < 0.3
    new, rep = exclude_cells(layout, "x.adt", mask)
    assert_only(layout, new, "no_effect_doodad")
    again = read_tile(new, "x.adt", big_alpha=True)
    assert np.array_equal(again.no_effect_doodad, t.no_effect_doodad | mask)
    same_elsewhere(t, again)
    assert rep.cells == int((mask & ~t.no_effect_doodad).sum())
    back, rep2 = exclude_cells(new, "x.adt", np.ones((256, 8, 8), bool), clear=True)
    assert_only(new, back, "no_effect_doodad")
    assert not read_tile(back, "x.adt", big_alpha=True).no_effect_doodad.any()
    assert rep2.cells == int((t.no_effect_doodad | mask).sum())


def test_msb_first_tiles_keep_their_bit_order():
    t = generated_tile(1, seed=5)
    t.doodad_map_msb_first = True
    raw = write_adt(t)                           # noggit3's order
    tile = read_tile(raw, "n.adt", big_alpha=False, msb_first=True)
    assert np.array_equal(tile.doodad_mapping, t.doodad_mapping)
    new, rep = remap_mapping(raw, "n.adt", margin=0.0, msb_first=True, big_alpha=False)
    assert rep.cells > 0
    assert_only(raw, new, "doodad_mapping")
    again = read_tile(new, "n.adt", big_alpha=False, msb_first=True)
    want = np.where(stale_cells(tile, 0.0), best_layers(tile), tile.doodad_mapping)
    assert np.array_equal(again.doodad_mapping, want)


def test_patch_fields_writes_nothing_for_equal_values():
    raw = write_adt(generated_tile(3, seed=2))
    t = read_tile(raw, "x.adt", big_alpha=True)
    out, counts = patch_fields(raw, t, effect=t.layer_effect, doodad_mapping=t.doodad_mapping,
                               no_effect=t.no_effect_doodad)
    assert out == raw and sum(counts.values()) == 0


# ----------------------------------------------------------------------------- the layer rule

def test_visible_shares_of_a_hand_made_chunk():
    t = generated_tile(2, seed=0)
    t.n_layers[:] = 3
    t.alpha[:] = 0
    t.alpha[0, 1, :32] = 255                     # layer 1 covers the north half
    t.alpha[0, 2, :, :16] = 128                  # layer 2 half-covers the west quarter
    s = visible_shares(t)
    assert np.allclose(s[0].sum(axis=0), 1.0, atol=1e-5)
    assert np.allclose(s[0, 1, :4, 2:], 1.0) and np.allclose(s[0, 0, 4:, 2:], 1.0)
    assert np.allclose(s[0, 2, :, :2], 128 / 255, atol=1e-5)
    best = best_layers(t)
    assert (best[0, :4, 2:] == 1).all() and (best[0, 4:, 2:] == 0).all()
    # the west quarter: layer 2 shows 128/255, the layer under it the rest (127/255): layer 2 wins
    assert np.allclose(s[0, 1, :4, :2], 127 / 255, atol=1e-5) and np.allclose(s[0, 0, 4:, :2], 127 / 255, atol=1e-5)
    assert (best[0, :, :2] == 2).all()


def test_remap_of_a_hand_made_chunk_names_the_layer_each_cell_shows():
    t = generated_tile(2, seed=0)
    t.n_layers[:] = 3
    t.alpha[:] = 0                               # everywhere else the base layer shows alone
    t.alpha[0, 1, :32] = 255                     # chunk 0: layer 1 covers the north half
    t.alpha[0, 2, :, :16] = 128                  # and layer 2 half-covers the west quarter
    t.doodad_mapping[:] = 0
    t.doodad_mapping[1] = 3                      # chunk 1 names a layer it lacks
    t.layer_flags[:, 1:3] |= np.uint32(MclyFlags.USE_ALPHA_MAP)
    t.layer_texture[:, 2] = 0
    t.alpha_encoding = alpha_encodings(t.layer_flags, t.n_layers, t.big_alpha)
    raw = write_adt(t)
    new, rep = remap_mapping(raw, "h.adt", margin=0.0, big_alpha=t.big_alpha)
    got = read_tile(new, "h.adt", big_alpha=t.big_alpha).doodad_mapping
    want0 = np.zeros((8, 8), np.uint8)
    want0[:4, 2:] = 1                            # the north half, east of the west quarter
    want0[:, :2] = 2                             # the west quarter
    assert got[0].tolist() == want0.tolist()
    assert (got[1] == 0).all() and (got[2:] == 0).all()
    assert rep.cells == 4 * 6 + 8 * 2 + 64 and rep.chunks == 2


def test_stale_margin():
    t = generated_tile(2, seed=0)
    t.n_layers[:] = 2
    t.alpha[:] = 0
    t.alpha[:, 1] = 153                          # layer 1 shows 60 %, layer 0 40 %
    t.doodad_mapping[:] = 0
    assert stale_cells(t, 0.1).all() and not stale_cells(t, 0.25).any()
    t.doodad_mapping[:] = 3                      # a layer the chunk lacks: stale at any margin
    assert stale_cells(t, 1.0).all()


def test_match_textures():
    tex = ["Tileset\\Elwynn\\ElwynnGrass01.blp", "Tileset/Elwynn/ElwynnDirt.blp", "Tileset\\Durotar\\Grass.blp"]
    assert match_textures(tex, "elwynngrass01") == [0]
    assert match_textures(tex, "ELWYNNGRASS01.BLP") == [0]
    assert match_textures(tex, "tileset/elwynn/*") == [0, 1]
    assert match_textures(tex, "*grass*") == [0, 2]
    assert match_textures(tex, "Grass") == [2]
    assert match_textures(tex, "tileset\\durotar\\grass.blp") == [2]
    assert match_textures(tex, "Grass0") == []


# ----------------------------------------------------------------------------- the real tiles

REAL = {"continent4229.adt": dict(big_alpha=False), "Azeroth_38_46.adt": dict(big_alpha=False)}


@pytest.mark.parametrize("name", list(REAL))
def test_real_tiles_edit_only_their_fields(realdata, name):
    path = realdata / "adt" / name
    raw = path.read_bytes()
    t = read_tile(raw, name, **REAL[name])
    exists = np.arange(4)[None, :] < t.n_layers[:, None]
    tex = t.textures[0].rsplit("\\", 1)[-1]
    new, rep = assign_effect(raw, name, tex, 9999)
    diff = assert_only(raw, new, "effect_id")
    again = read_tile(new, name, **REAL[name])
    want = np.where(exists & (t.layer_texture == 0), 9999, t.layer_effect)
    assert np.array_equal(again.layer_effect[exists], want[exists]) and rep.layers == int((t.layer_texture == 0).sum())
    assert diff.size == rep.bytes_changed > 0
    same_elsewhere(t, again)

    new, rep = remap_mapping(raw, name, margin=0.0)
    assert_only(raw, new, "doodad_mapping")
    again = read_tile(new, name, **REAL[name])
    assert not stale_cells(again, 0.0).any()
    if name == "continent4229.adt":
        assert rep.cells == int(stale_cells(t, 0.0).sum()) > 0
        assert not stale_cells(t, STALE_MARGIN).any()   # Blizzard's own mapping is not stale
    else:
        assert rep.cells == 0 and new == raw                # one layer per chunk: nothing to remap

    mask = np.zeros((256, 8, 8), bool)
    mask[::5, 3:6, 2:7] = True
    new, rep = exclude_cells(raw, name, mask)
    assert_only(raw, new, "no_effect_doodad")
    assert np.array_equal(read_tile(new, name, **REAL[name]).no_effect_doodad, t.no_effect_doodad | mask)


def test_closest_textures_match_by_file_name_or_path_five_at_most():
    from wowgrass.edit.adt_edit import closest_textures

    textures = [f"Tileset\\Zone{k}\\Grass{k:02d}.blp" for k in range(9)] + ["Tileset\\Elwynn\\ElwynnGrassBase.blp",
                                                                             "tileset\\elwynn\\elwynngrassbase.blp"]
    got = closest_textures(textures, "ElwynGrasBase")     # a file name, misspelt: its path comes back once
    assert got[0].lower() == "tileset\\elwynn\\elwynngrassbase.blp"    # (either spelling of it)
    assert [g.lower() for g in got].count(got[0].lower()) == 1
    assert len(closest_textures(textures, "Grass0")) == 5 and len(closest_textures(textures, "Grass0", n=7)) == 7
    assert closest_textures(textures, "Tileset\\Zone3\\Grass03.BLP")[0] == "Tileset\\Zone3\\Grass03.blp"
    assert closest_textures(textures, "Grass04.blp")[0] == "Tileset\\Zone4\\Grass04.blp"
    assert closest_textures([], "x") == []
    # the file name decides before a shorter path that merely looks alike
    assert closest_textures(["Zone\\Sub\\Grass04.blp", "Grass4.blp"], "Grass04.blp")[0] == "Zone\\Sub\\Grass04.blp"
