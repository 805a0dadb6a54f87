"""MH2O offsets that leave the chunk, as a map editor's 3.3.5 tiles have them.

A real map editor's tile has chunk headers with no liquid layers whose attribute offsets run past the
MH2O chunk; the client never reads those, so neither does wowgrass. Offsets of chunks WITH layers that
leave the chunk but stay in the file are read where the client reads them (the bytes that follow),
with a note. Only offsets past the file's end are errors.
"""
from __future__ import annotations

import json
import struct

import numpy as np
import pytest
from click.testing import CliRunner

from wowgrass.cli.main import cli
from wowgrass.edit.masks import liquid_mask
from wowgrass.errors import TruncatedError
from wowgrass.formats import liquid as L
from wowgrass.formats.adt import AdtTile, write_adt

EMPTY_CHUNKS = list(range(100, 111))        # 11 headers without layers, as on the editor's tile


def _liquid() -> L.TileLiquid:
    lay = np.concatenate([L.mh2o_layer(3, 2, L.OCEAN, 0.0), L.mh2o_layer(13, 1, L.WATER, 5.5)])
    t = L.TileLiquid(layers=lay, source=L.SOURCE_MH2O)
    t.has_attributes[[3, 13]] = True
    t.fishable[3], t.deep[3] = 0x00FF00FF00FF00FF, 0x1
    return t


def _point_empty_headers_past(raw: bytearray, base: int, past: int) -> None:
    for c in EMPTY_CHUNKS:
        struct.pack_into("<I", raw, base + 12 * c + 8, past + 16 * c)


def test_headers_without_layers_pointing_past_the_chunk_are_ignored_with_a_note():
    raw = bytearray(L.write_mh2o(_liquid()))
    good = L.read_mh2o(bytes(raw), "t.adt")
    _point_empty_headers_past(raw, 0, len(raw) + 4000)
    got = L.read_mh2o(bytes(raw), "t.adt", 0x200)          # raised TruncatedError before
    assert len(got.layers) == 2
    for field in ("chunk", "type", "exists", "heights"):
        assert np.array_equal(got.layers[field], good.layers[field])
    assert not got.has_attributes[EMPTY_CHUNKS].any()
    assert got.has_attributes[[3, 13]].all() and int(got.fishable[3]) == 0x00FF00FF00FF00FF
    assert len(got.notes) == 1 and "11 chunk header(s) without liquid layers" in got.notes[0]
    assert "100, 101" in got.notes[0]
    assert got.summary()["notes"] == got.notes
    assert good.notes == []


def test_a_layered_chunk_reads_past_the_chunk_from_the_file_and_says_so():
    raw = bytearray(L.write_mh2o(_liquid()))
    # chunk 3's attributes moved 6 bytes past the chunk's end, into what follows it in the file
    struct.pack_into("<I", raw, 12 * 3 + 8, len(raw) + 6)
    beyond = bytes(6) + struct.pack("<QQ", 0x1234, 0x5678)
    assert L.mh2o_reach(memoryview(bytes(raw) + beyond + bytes(100)), len(raw)) == len(raw) + 22
    got = L.read_mh2o(bytes(raw), "t.adt", beyond=beyond)
    assert int(got.fishable[3]) == 0x1234 and int(got.deep[3]) == 0x5678
    assert any("attributes of 1 chunk(s) (chunks 3)" in n for n in got.notes)
    # without the bytes that follow (or past the file) it is still an error, naming the field
    with pytest.raises(TruncatedError, match="attributes") as e:
        L.read_mh2o(bytes(raw), "t.adt", 0x100, beyond=beyond[:10])
    assert e.value.offset == 0x100 + 12 * 3 + 8


def _editor_tile(tmp_path):
    """An ADT with MH2O whose empty headers point past the chunk, and one layered chunk's attributes
    past the chunk into the MCNKs that follow it."""
    t = AdtTile.from_arrays(30, 40, abs_heights=np.zeros((256, 145)))
    L.put_tile_liquid(t, _liquid(), fmt="mh2o")
    data = bytearray(write_adt(t))
    base = AdtTile.from_bytes(bytes(data), "x.adt").mh2o_offset
    size = struct.unpack_from("<I", data, base - 4)[0]
    _point_empty_headers_past(data, base, len(data) + 10_000)   # past the file, never read
    struct.pack_into("<I", data, base + 12 * 13 + 8, size + 64)  # inside the file, past the chunk
    expect = struct.unpack_from("<QQ", data, base + size + 64)
    path = tmp_path / "Editor_30_40.adt"
    path.write_bytes(bytes(data))
    return path, expect


def test_an_editor_tile_reads_and_its_cells_under_liquid_are_found(tmp_path):
    path, expect = _editor_tile(tmp_path)
    t = AdtTile.from_bytes(path.read_bytes(), path.name)
    assert t.mh2o_beyond is not None and len(t.mh2o_beyond) == 64 + 16
    liq = L.tile_liquid(t)
    assert (int(liq.fishable[13]), int(liq.deep[13])) == expect
    assert len(liq.notes) == 2
    cells = liquid_mask(t)                                       # effects exclude --under-liquid's mask
    assert cells[3].all() and cells[13].all() and int(cells.sum()) == 128


def test_adt_info_takes_the_editor_tile_and_prints_the_notes(tmp_path):
    path, _ = _editor_tile(tmp_path)
    r = CliRunner().invoke(cli, ["adt", "info", str(path)])
    assert r.exit_code == 0, r.output
    assert "note: MH2O: 11 chunk header(s) without liquid layers" in r.output
    r = CliRunner().invoke(cli, ["adt", "info", str(path), "--json"])
    assert r.exit_code == 0, r.output
    lq = json.loads(r.output)["liquid"]
    assert lq["layer_count"] == 2 and len(lq["notes"]) == 2


def test_continent4229_with_editor_headers(realdata, tmp_path):
    data = bytearray((realdata / "adt" / "continent4229.adt").read_bytes())
    t = AdtTile.from_bytes(bytes(data), "continent4229.adt")
    empty = [c for c in range(256) if c not in set(L.tile_liquid(t).layers["chunk"].tolist())][:11]
    for c in empty:
        struct.pack_into("<I", data, t.mh2o_offset + 12 * c + 8, len(t.mh2o) + 32 * c)
    path = tmp_path / "continent4229.adt"
    path.write_bytes(bytes(data))
    back = L.tile_liquid(AdtTile.from_bytes(bytes(data), path.name))
    assert len(back.layers) == 9 and (back.layers["type"] == 2).all()   # the README's nine ocean layers
    assert "11 chunk header(s)" in back.notes[0]
    r = CliRunner().invoke(cli, ["adt", "info", str(path)])
    assert r.exit_code == 0 and "note: MH2O: 11" in r.output
