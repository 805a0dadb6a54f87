"""What edit/adt_edit.py promises where the ordinary tests do not look (issue 49's mutation
target): the edits' reports as the CLI prints them, a broken tile or one read with the wrong alpha
format named, game paths turned into disk paths, write_edited's refusals word for word, and the
closest textures an error message offers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from adt_build import generated_tile

from wowgrass.edit.adt_edit import (
    assign_effect, best_layers, closest_textures, disk_path, exclude_cells, match_textures, read_tile, remap_mapping,
    stale_cells, write_edited,
)
from wowgrass.errors import FormatError, UsageError
from wowgrass.formats.adt import write_adt


@pytest.fixture(scope="module")
def eight_bit():
    return write_adt(generated_tile(2, seed=3))


@pytest.fixture(scope="module")
def four_bit():
    return write_adt(generated_tile(1, seed=3))


def changed_bytes(a: bytes, b: bytes) -> int:
    return int((np.frombuffer(a, np.uint8) != np.frombuffer(b, np.uint8)).sum())


def test_the_reports_as_printed(eight_bit):
    t = read_tile(eight_bit, "x.adt", big_alpha=True)
    stale = stale_cells(t, 0.0) & (best_layers(t) != t.doodad_mapping)
    new, rep = remap_mapping(eight_bit, "x.adt", margin=0.0, big_alpha=True)
    n = changed_bytes(eight_bit, new)
    assert rep.to_json() == {
        "path": "x.adt", "kind": "remap", "changed": True, "layer_count": 0, "cell_count": int(stale.sum()),
        "chunk_count": int(stale.any(axis=(1, 2)).sum()), "changed_byte_count": n, "by_field": {"doodad_mapping": n},
        "before": {"stale_cells": int(stale.sum())}, "textures": []}
    assert 0 < int(stale.any(axis=(1, 2)).sum()) < int(stale.sum())
    b = t.textures.index("tileset\\b.blp")
    exists = np.arange(4)[None, :] < t.n_layers[:, None]
    sel = exists & (t.layer_texture == b)
    new, rep = assign_effect(eight_bit, Path("World") / "x.adt", "B", 4242, big_alpha=True)
    n = changed_bytes(eight_bit, new)
    old = dict(sorted((int(e), int(c)) for e, c in zip(*np.unique(t.layer_effect[sel], return_counts=True))))
    assert rep.to_json() == {
        "path": str(Path("World") / "x.adt"), "kind": "assign", "changed": True, "layer_count": int(sel.sum()),
        "cell_count": 0, "chunk_count": int(sel.any(axis=1).sum()), "changed_byte_count": n,
        "by_field": {"effect_id": n}, "before": {str(k): v for k, v in old.items()}, "textures": ["tileset\\b.blp"]}


def test_a_broken_tile_is_named(eight_bit):
    broken = eight_bit[:5000]
    for edit in (lambda: assign_effect(broken, "World\\Maps\\M\\M_1_2.adt", "*", 5),
                 lambda: remap_mapping(broken, "World\\Maps\\M\\M_1_2.adt"),
                 lambda: exclude_cells(broken, "World\\Maps\\M\\M_1_2.adt", np.ones((256, 8, 8), bool))):
        with pytest.raises(FormatError) as err:
            edit()
        assert err.value.path == "World\\Maps\\M\\M_1_2.adt" and str(err.value).startswith("World\\Maps\\M\\M_1_2.adt")


def test_the_alpha_format_given_is_the_one_read(four_bit, eight_bit):
    """The map's alpha format (its WDT's) is taken as given: a 4-bit tile under a map of 8-bit alpha
    is an error naming the tile, never read as 4-bit behind the map's back; an 8-bit tile read as
    4-bit shows other layers."""
    for edit in (lambda **kw: assign_effect(four_bit, "x.adt", "*", 5, **kw),
                 lambda **kw: remap_mapping(four_bit, "x.adt", margin=0.0, **kw),
                 lambda **kw: exclude_cells(four_bit, "x.adt", np.ones((256, 8, 8), bool), **kw)):
        with pytest.raises(FormatError, match="x.adt"):
            edit(big_alpha=True)
        edit(big_alpha=False)
    as_given = remap_mapping(eight_bit, "x.adt", margin=0.0, big_alpha=False)[0]
    as_parsed = remap_mapping(eight_bit, "x.adt", margin=0.0)[0]
    assert as_parsed == remap_mapping(eight_bit, "x.adt", margin=0.0, big_alpha=True)[0] and as_given != as_parsed


def test_msb_first_tiles_are_remapped_in_their_bit_order():
    t = generated_tile(2, seed=5)
    t.alpha[:, 1:] = 0
    t.alpha[:, 1, :, :8] = 255       # layer 1 shows in each chunk's first column of cells only: the
    t.doodad_map_msb_first = True    # best layers are not the same read in the other bit order
    raw = write_adt(t)
    tile = read_tile(raw, "n.adt", big_alpha=True, msb_first=True)
    want = np.where(stale_cells(tile, 0.0), best_layers(tile), tile.doodad_mapping)
    new, rep = remap_mapping(raw, "n.adt", margin=0.0, msb_first=True, big_alpha=True)
    assert rep.cells > 0 and not np.array_equal(best_layers(tile), best_layers(tile)[:, :, ::-1])
    assert np.array_equal(read_tile(new, "n.adt", big_alpha=True, msb_first=True).doodad_mapping, want)


def test_disk_path():
    assert disk_path("World\\Maps\\Azeroth\\Azeroth_32_48.adt") == Path("World", "Maps", "Azeroth", "Azeroth_32_48.adt")
    assert disk_path("World/Maps/M/M_1_2.adt") == Path("World", "Maps", "M", "M_1_2.adt")
    assert disk_path("\\World//Maps\\M\\\\M_1_2.adt") == Path("World", "Maps", "M", "M_1_2.adt")
    for bad in ("", "\\", "World\\..\\..\\x.adt", "World/../x.adt", ".\\x.adt", "World/./x.adt"):
        with pytest.raises(UsageError) as err:
            disk_path(bad)
        assert str(err.value) == f"not a game path: {bad!r}"


class Loose:
    """The part of a GameData write_edited asks: where a game path's file is (an archive's member:
    (archive, name))."""

    def __init__(self, root: Path, archive: Path | None = None):
        self.root, self.archive = root, archive

    def locate(self, gp: str):
        p = self.root.joinpath(*gp.split("\\"))
        if p.exists():
            return p, None
        return (self.archive, gp) if self.archive is not None else None


GP = "World\\Maps\\M\\M_1_2.adt"


def test_write_edited_refusals_word_for_word(tmp_path):
    files = {GP: b"new"}
    with pytest.raises(UsageError) as err:
        write_edited(files, in_place=True)
    assert str(err.value) == "--in-place needs the data source the tiles came from"
    with pytest.raises(UsageError) as err:
        write_edited(files, in_place=True, data=Loose(tmp_path))
    assert str(err.value) == (f"{GP} is not in the data: only loose files can be edited in place; use -o DIR "
                              "(and `wowgrass patch build` for an MPQ)")
    mpq = tmp_path / "patch.MPQ"
    with pytest.raises(UsageError) as err:
        write_edited(files, in_place=True, data=Loose(tmp_path, mpq))
    assert str(err.value) == (f"{GP} is inside {mpq}: only loose files can be edited in place; use -o DIR "
                              "(and `wowgrass patch build` for an MPQ)")
    with pytest.raises(UsageError) as err:
        write_edited(files)
    assert str(err.value) == "give -o DIR (or --in-place)"
    with pytest.raises(UsageError) as err:
        write_edited(files, tmp_path / "missing")
    assert str(err.value) == f"-o {tmp_path / 'missing'}: folder does not exist"
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(UsageError) as err:
        write_edited(files, tmp_path / "file")
    assert str(err.value) == f"-o {tmp_path / 'file'}: not a folder"
    tile = tmp_path.joinpath(*GP.split("\\"))
    tile.parent.mkdir(parents=True)
    tile.write_bytes(b"old")
    with pytest.raises(UsageError) as err:
        write_edited(files, tmp_path, data=Loose(tmp_path))
    assert str(err.value) == (f"{tile} is the input tile itself: give another -o folder, or --in-place to edit it "
                              "(a backup is kept beside it)")
    assert tile.read_bytes() == b"old" and write_edited({}, tmp_path) == []


def test_write_edited_under_a_folder_beside_the_input(tmp_path, monkeypatch):
    src = tmp_path / "Data"
    tile = src.joinpath(*GP.split("\\"))
    tile.parent.mkdir(parents=True)
    tile.write_bytes(b"old")
    out = tmp_path / "out"
    out.mkdir()
    assert write_edited({GP: b"new"}, out, data=Loose(src)) == [out.joinpath(*GP.split("\\"))]
    assert out.joinpath(*GP.split("\\")).read_bytes() == b"new" and tile.read_bytes() == b"old"
    # where the input cannot be compared with the output (stat fails: a mount gone), it is not the output
    import os

    def fails(a, b):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os.path, "samefile", fails)
    out.joinpath(*GP.split("\\")).write_bytes(b"x")
    assert write_edited({GP: b"newer"}, out, data=Loose(src)) == [out.joinpath(*GP.split("\\"))]
    assert out.joinpath(*GP.split("\\")).read_bytes() == b"newer"


def test_closest_textures_order_and_patterns():
    # a file name in two folders: the folder first alphabetically (case aside) answers for the name
    assert closest_textures(["Tileset\\B\\grass.blp", "tileset\\a\\Grass.blp"], "grass.blp")[0] == "tileset\\a\\Grass.blp"
    # a pattern with a folder is matched as a path, its folder included
    tex = ["Tileset\\Zone3\\Grass01.blp", "Tileset\\Other\\Grass.blp"]
    assert closest_textures(tex, "Tileset\\Zone3\\Grass.blp")[0] == "Tileset\\Zone3\\Grass01.blp"
    assert closest_textures(tex, "Grass.blp")[0] == "Tileset\\Other\\Grass.blp"
    # a name typed with a space is compared whole
    assert closest_textures(["Tileset\\Elwynn\\ElwynnGrass.blp", "Tileset\\X\\Grass.blp"], "elwynn grass")[0] == \
        "Tileset\\Elwynn\\ElwynnGrass.blp"
    # five by default, as many as asked, each texture once
    tex = [f"Tileset\\Zone{k}\\Grass{k:02d}.blp" for k in range(9)]
    got = closest_textures(tex, "Grass0")
    assert len(got) == 5 and len(set(got)) == 5 and len(closest_textures(tex, "Grass0", 8)) == 8
    # a poor spelling still finds the name; a poor likeness (less than 0.3 of the name) is no suggestion
    assert closest_textures(["Tileset\\Grass.blp"], "grs") == ["Tileset\\Grass.blp"]
    assert closest_textures(["Tileset\\Rock\\Cliff.blp"], "xyzgrass") == []


def test_the_exclude_report_as_printed(eight_bit):
    t = read_tile(eight_bit, "x.adt", big_alpha=True)
    mask = np.zeros((256, 8, 8), bool)
    mask[10:13, 2:5, 1] = True
    mask[200] = True
    new, rep = exclude_cells(eight_bit, "x.adt", mask, big_alpha=True)
    changed = mask & ~t.no_effect_doodad
    n = changed_bytes(eight_bit, new)
    assert rep.to_json() == {
        "path": "x.adt", "kind": "exclude", "changed": True, "layer_count": 0, "cell_count": int(changed.sum()),
        "chunk_count": int(changed.any(axis=(1, 2)).sum()), "changed_byte_count": n,
        "by_field": {"no_effect_doodad": n},
        "before": {"excluded_cells": int(t.no_effect_doodad.sum()), "mask_cells": int(mask.sum())}, "textures": []}
    assert 1 < int(changed.any(axis=(1, 2)).sum()) < int(changed.sum())


def test_best_layers_are_bytes(eight_bit):
    best = best_layers(read_tile(eight_bit, "x.adt", big_alpha=True))
    assert best.dtype == np.uint8 and best.shape == (256, 8, 8)


def test_match_textures_of_bare_names_and_names_with_dots():
    tex = ["Grass.blp", "Tileset\\Elwynn\\Grass.v2.blp", "Tileset\\Elwynn\\Grass.blp"]
    assert match_textures(tex, "grass") == [0, 2]
    assert match_textures(tex, "GRASS.V2") == [1] and match_textures(tex, "grass.v2.blp") == [1]
    assert match_textures(tex, "grass.*") == [0, 1, 2]


# ----------------------------------------------------------------------------- the safety nets

def test_an_edit_that_does_not_read_back_is_refused(eight_bit, monkeypatch):
    """Every edit re-reads its result: an encoder bug (here: the wrong bit order, bits shifted by a
    cell) stops the edit with the tile and the field named, before anything is written."""
    import wowgrass.edit.adt_edit as E

    real_pack, real_bits = E.pack_doodad_mapping, E._encode_bits
    t = generated_tile(2, seed=5)
    t.alpha[:, 1:] = 0
    t.alpha[:, 1, :, :8] = 255            # layer 1 in each chunk's first column of cells: not symmetric
    raw = write_adt(t)
    monkeypatch.setattr(E, "pack_doodad_mapping", lambda dm, msb: real_pack(dm, not msb))
    with pytest.raises(AssertionError) as err:
        remap_mapping(raw, "x.adt", margin=0.0, big_alpha=True)
    assert str(err.value) == "x.adt: the edited tile does not read back its doodad_mapping"
    monkeypatch.setattr(E, "pack_doodad_mapping", real_pack)
    monkeypatch.setattr(E, "_encode_bits", lambda m: real_bits(np.roll(m, 1, axis=-1)))
    mask = np.zeros((256, 8, 8), bool)
    mask[5, 0, 0] = True                  # (not set before)
    with pytest.raises(AssertionError) as err:
        exclude_cells(eight_bit, "x.adt", mask, big_alpha=True)
    assert str(err.value) == "x.adt: the edited tile does not read back its no_effect"


def test_checked_compares_existing_layers_and_every_cell(eight_bit):
    from wowgrass.edit.adt_edit import _checked

    t = read_tile(eight_bit, "x.adt", big_alpha=True)
    exists = np.arange(4)[None, :] < t.n_layers[:, None]
    assert (~exists).any()
    again = _checked(eight_bit, "x.adt", t, effect=np.where(exists, t.layer_effect, 999))   # absent: not read
    assert np.array_equal(again.layer_effect, t.layer_effect) and again.big_alpha is True
    for name, field, value in (("effect", "layer_effect", 1), ("doodad_mapping", "doodad_mapping", 1),
                               ("no_effect", "no_effect_doodad", True)):
        want = getattr(t, field).astype(np.int64) if name != "no_effect" else getattr(t, field).copy()
        if name == "doodad_mapping":
            want[255, 7, 7] = (int(want[255, 7, 7]) + 1) % 4
        elif name == "effect":
            want[255, 0] += value
        else:
            want[255, 7, 7] = not want[255, 7, 7]
        with pytest.raises(AssertionError) as err:
            _checked(eight_bit, "x.adt", t, **{name: want})
        assert str(err.value) == f"x.adt: the edited tile does not read back its {name}"


def test_changed_bytes_are_counted_per_field_and_none_may_lie_outside(eight_bit):
    from wowgrass.edit.adt_edit import _byte_counts

    t = read_tile(eight_bit, "x.adt", big_alpha=True)
    ofs = t.field_offsets()
    e = int(ofs["effect_id"][3, 0])
    m, n = int(ofs["doodad_mapping"][7]), int(ofs["no_effect_doodad"][9])
    diff = np.array(sorted([e, e + 3, m, m + 15, n + 7]))
    assert _byte_counts(diff, ofs, {"effect_id": 1, "doodad_mapping": 1, "no_effect_doodad": 1}) == {
        "effect_id": 2, "doodad_mapping": 2, "no_effect_doodad": 1}
    assert _byte_counts(diff[:2], ofs, {"effect_id": 1}) == {"effect_id": 2}
    assert _byte_counts(np.array([], np.int64), ofs, {}) == {}
    absent = np.flatnonzero(ofs["effect_id"].ravel() < 0)
    assert absent.size
    with pytest.raises(AssertionError) as err:
        _byte_counts(diff, ofs, {"effect_id": 1, "no_effect_doodad": 1})      # the mapping was not written
    assert str(err.value) == f"edit changed 2 bytes outside its fields (first at {m})"
    with pytest.raises(AssertionError) as err:
        _byte_counts(np.array([e + 4 * 4096 * 64]), ofs, {"effect_id": 1})
    assert str(err.value).startswith("edit changed 1 bytes outside its fields")


def test_patch_fields_refuses_values_the_fields_cannot_hold(eight_bit):
    from wowgrass.edit.adt_edit import patch_fields

    t = read_tile(eight_bit, "x.adt", big_alpha=True)
    for bad in (-1, 0x1_0000_0000):
        effect = t.layer_effect.astype(np.int64)
        effect[0, 0] = bad
        with pytest.raises(UsageError) as err:
            patch_fields(eight_bit, t, effect=effect)
        assert str(err.value) == "effect ids must be 0 .. 4294967295"
    effect = t.layer_effect.astype(np.int64)
    effect[0, 0] = 0xFFFFFFFF
    out, counts = patch_fields(eight_bit, t, effect=effect)
    assert read_tile(out, "x.adt", big_alpha=True).layer_effect[0, 0] == 0xFFFFFFFF
    for bad in (4, -1):
        mapping = t.doodad_mapping.astype(np.int64)
        mapping[0, 0, 0] = bad
        with pytest.raises(UsageError) as err:
            patch_fields(eight_bit, t, doodad_mapping=mapping)
        assert str(err.value) == "doodadMapping layer indices must be 0..3"


def test_visible_shares_as_documented(eight_bit):
    from wowgrass.edit.adt_edit import visible_shares

    t = read_tile(eight_bit, "x.adt", big_alpha=True)
    s = visible_shares(t)
    assert s.dtype == np.float32 and s.shape == (256, 4, 8, 8)
    one = np.flatnonzero(t.n_layers == 1)
    assert one.size and (s[one, 0] == 1.0).all() and (s[one, 1:] == 0.0).all()   # a single layer shows alone
    assert np.allclose(s.sum(axis=1), 1.0, atol=1e-5)


def test_stale_cells_name_missing_layers_and_skip_chunks_without_layers():
    t = generated_tile(2, seed=0)
    t.alpha[:] = 0                               # the base layer shows alone everywhere
    t.doodad_mapping[:] = 0
    t.n_layers[:] = 2
    t.n_layers[0], t.n_layers[1], t.n_layers[2] = 0, 1, 3
    t.doodad_mapping[0] = 3                      # no layers: nothing to name, never stale
    t.doodad_mapping[1, 0, :] = [1, 2, 3, 0, 0, 0, 0, 0]     # one layer: 1..3 are missing
    t.doodad_mapping[3, 0, 0] = 2                # two layers: 2 is the first missing one
    t.doodad_mapping[2, 0, 0] = 2                # three layers: 2 exists (shows nothing, within 1.0)
    stale = stale_cells(t, 1.0)
    assert not stale[0].any()
    assert stale[1, 0].tolist() == [True, True, True, False, False, False, False, False]
    assert stale[3, 0, 0] and not stale[2, 0, 0]
    assert int(stale.sum()) == 4


def test_bytes_just_past_a_field_are_outside_it(eight_bit):
    from wowgrass.edit.adt_edit import _byte_counts

    ofs = read_tile(eight_bit, "x.adt", big_alpha=True).field_offsets()
    e = int(ofs["effect_id"][3, 0])
    m, n = int(ofs["doodad_mapping"][7]), int(ofs["no_effect_doodad"][9])
    for at, written in ((e + 4, {"effect_id": 1}), (m + 16, {"doodad_mapping": 1}), (n + 8, {"no_effect_doodad": 1})):
        with pytest.raises(AssertionError) as err:
            _byte_counts(np.array([at]), ofs, written)
        assert str(err.value) == f"edit changed 1 bytes outside its fields (first at {at})"


def test_a_cells_share_is_the_mean_of_all_its_texels():
    from wowgrass.edit.adt_edit import visible_shares

    t = generated_tile(2, seed=0)
    t.n_layers[:] = 2
    t.alpha[:] = 0
    t.alpha[0, 1, 0::8, :] = 255                 # layer 1 on the first texel row of every cell only
    t.alpha[1, 1, :, 7::8] = 255                 # and on the last texel column of every cell
    s = visible_shares(t)
    assert np.allclose(s[0, 1], 1 / 8) and np.allclose(s[0, 0], 7 / 8)
    assert np.allclose(s[1, 1], 1 / 8) and np.allclose(s[2:, 1], 0.0)


def test_patch_fields_writes_only_existing_layers(eight_bit):
    from wowgrass.edit.adt_edit import patch_fields

    t = read_tile(eight_bit, "x.adt", big_alpha=True)
    exists = np.arange(4)[None, :] < t.n_layers[:, None]
    out, counts = patch_fields(eight_bit, t, effect=np.where(exists, t.layer_effect, 999))
    assert out == bytes(eight_bit) and counts == {"effect_id": 0}
