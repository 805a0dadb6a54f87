"""Test vectors of the clients' scatter for other projects: docs/client-scatter-vectors.json,
``wowgrass adt scatter`` and the hash they define (docs/bake.md)."""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner
from placement_reference import client_reference

from wowgrass.cli.main import cli
from wowgrass.formats.adt import AdtTile
from wowgrass.grass.bake import load_catalog
from wowgrass.grass.vectors import FORMAT, generator_vectors, model_stem, tile_vectors

VECTORS = Path(__file__).resolve().parent.parent / "docs" / "client-scatter-vectors.json"


@pytest.fixture(scope="module")
def vectors():
    return json.loads(VECTORS.read_text())


def entry(vectors, tile, build, picks):
    (e,) = [e for e in vectors["tiles"] if (e["tile"], e["build"], e["pick_count"]) == (tile, build, picks)]
    return e


def test_the_file_is_modest_and_holds_every_tile_build_and_picks(vectors):
    assert VECTORS.stat().st_size < 100_000
    assert vectors["format"] == FORMAT and vectors["format_version"] == 1
    keys = {(e["tile"], e["build"], e["pick_count"]) for e in vectors["tiles"]}
    assert keys == {(t, b, p) for t in ("Azeroth_38_46.adt", "continent4229.adt") for b in ("1.12", "3.3.5")
                    for p in (16, 48, 256)}
    for e in vectors["tiles"]:
        assert len(e["chunk_counts"]) == len(e["chunk_hashes"]) == 256
        assert sum(e["chunk_counts"]) == e["placement_count"]
        assert all((h is None) == (n == 0) for n, h in zip(e["chunk_counts"], e["chunk_hashes"]))


def test_the_file_agrees_with_the_facts_of_client_md(vectors):
    g = {v["seed"]: v for v in vectors["generator"]}
    assert g["0x02E00260"]["uint32"][:4] == ["0x898AFAED", "0x5495DDBB", "0xB159E5DF", "0x05AE220C"]
    assert g["0x01D002A0"]["uint32"][:4] == ["0xF96FBF6B", "0x48E0A239", "0x347F2C00", "0x6E24AC39"]
    assert g["0x02E00260"]["reals"][:3] == pytest.approx([0.914217353, -0.829170823, 0.297672391], abs=1e-9)
    assert entry(vectors, "Azeroth_38_46.adt", "1.12", 16)["placement_count"] == 20480
    assert entry(vectors, "Azeroth_38_46.adt", "1.12", 48)["placement_count"] == 3 * 20480
    assert entry(vectors, "continent4229.adt", "3.3.5", 16)["placement_count"] == 6149  # issue 41


def test_regenerating_one_tile_gives_the_file(realdata, vectors):
    raw = (realdata / "adt" / "continent4229.adt").read_bytes()
    tile = AdtTile.from_bytes(raw)
    assert vectors["generator"] == generator_vectors()
    for build in ("1.12", "3.3.5"):
        catalog = load_catalog(dbc_dir=realdata / "dbc" / build)
        for picks in (16, 48, 256):
            want = entry(vectors, "continent4229.adt", build, picks)
            assert want["adt_sha256"] == hashlib.sha256(raw).hexdigest()
            got = tile_vectors(tile, catalog, picks)
            assert got == {k: want[k] for k in got}, (build, picks)


def test_the_hash_is_the_documented_records_of_the_plain_transcription(realdata, vectors):
    # the hash of chunk 0 as docs/bake.md defines it, built from the doodad-by-doodad transcription
    tile = AdtTile.from_bytes((realdata / "adt" / "Azeroth_38_46.adt").read_bytes())
    catalog = load_catalog(dbc_dir=realdata / "dbc" / "1.12")
    rows = client_reference(tile, catalog)
    assert model_stem("World\\NoDXT\\Detail\\BstBra05.m2") == model_stem("BstBra05.mdl") == "bstbra05"
    by_chunk: dict[int, bytes] = {}
    for model, x, y, z, yaw, scale, chunk, cell in rows:
        rec = struct.pack("<5fB", x, y, z, yaw, scale, cell) + model_stem(catalog.models[model]).encode() + b"\0"
        by_chunk[chunk] = by_chunk.get(chunk, b"") + rec
    e = entry(vectors, "Azeroth_38_46.adt", "1.12", 16)
    for c in (0, 17, 255):
        assert e["chunk_hashes"][c] == hashlib.sha256(by_chunk[c]).hexdigest()[:16]
    assert e["tile_hash"] == hashlib.sha256(b"".join(by_chunk[c] for c in sorted(by_chunk))).hexdigest()


def test_adt_scatter_prints_the_same_for_any_tile(realdata, vectors):
    adt = str(realdata / "adt" / "continent4229.adt")
    r = CliRunner().invoke(cli, ["adt", "scatter", adt, "--dbc", str(realdata / "dbc" / "3.3.5"), "--picks", "16",
                                 "--picks", "48", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["build"] == "3.3.5" and doc["tile_col_row"] == [42, 29]
    for got in doc["entries"]:
        want = entry(vectors, "continent4229.adt", "3.3.5", got["pick_count"])
        assert got == {k: want[k] for k in got}
    r = CliRunner().invoke(cli, ["adt", "scatter", adt, "--dbc", str(realdata / "dbc" / "3.3.5"), "--picks", "4"])
    assert r.exit_code == 0, r.output
    want = entry(vectors, "continent4229.adt", "3.3.5", 16)
    assert f"picks 4 (taken: 16): 6,149 placements, tile hash {want['tile_hash']}" in r.stdout
    assert f"chunk   1      42  {want['chunk_hashes'][1]}" in r.stdout
    assert "below what the 3.3.5 client takes" in r.stderr
    # 2.4.3 scatters as 1.12, from 1.12's tables
    az = str(realdata / "adt" / "Azeroth_38_46.adt")
    r = CliRunner().invoke(cli, ["adt", "scatter", az, "--dbc", str(realdata / "dbc" / "1.12"), "--build", "2.4.3",
                                 "--json"])
    assert r.exit_code == 0, r.output
    (got,) = json.loads(r.stdout)["entries"]
    want = entry(vectors, "Azeroth_38_46.adt", "1.12", 16)
    assert got == {k: want[k] for k in got}
    r = CliRunner().invoke(cli, ["adt", "scatter", az, "--dbc", str(realdata / "dbc" / "1.12"), "--picks", "0"])
    assert r.exit_code == 2 and "0 is not in the range 1<=x<=256" in r.output


def test_an_empty_scatter_has_counts_and_no_hashes():
    from placement_fakes import make_catalog, make_tile

    tile = make_tile(effects=(1,), height_amp=0.0)
    tile.no_effect_doodad[:] = True  # every cell masked: nothing scatters
    v = tile_vectors(tile, make_catalog([(1, 0, [0, 1, 2, 3], [1, 1, 1, 1])], has_weights=True), 16)
    assert v["placement_count"] == 0 and v["chunk_counts"] == [0] * 256 and v["chunk_hashes"] == [None] * 256
    assert v["tile_hash"] == hashlib.sha256(b"").hexdigest()


def _transcription_hashes(rows, catalog) -> tuple[list, list]:
    """(counts, hashes) per chunk from the plain transcription's rows, as docs/bake.md defines them."""
    by_chunk: dict[int, bytes] = {}
    counts = [0] * 256
    for model, x, y, z, yaw, scale, chunk, cell in rows:
        rec = struct.pack("<5fB", x, y, z, yaw, scale, cell) + model_stem(catalog.models[model]).encode() + b"\0"
        by_chunk[chunk] = by_chunk.get(chunk, b"") + rec
        counts[chunk] += 1
    return counts, [hashlib.sha256(by_chunk[c]).hexdigest()[:16] if c in by_chunk else None for c in range(256)]


@pytest.mark.parametrize("picks", [16, 48])
def test_the_335_vectors_are_the_plain_transcriptions(realdata, vectors, picks):
    """Every 3.3.5 chunk's count and hash in the file, from the cell-by-cell transcription of
    client.md's 3.3.5 routine (placement_reference: its own generator, weight bag, fan planes in
    float32, slope rule), not from the code that wrote the file."""
    from wowgrass.grass.placement import PlacementConstants

    tile = AdtTile.from_bytes((realdata / "adt" / "continent4229.adt").read_bytes())
    catalog = load_catalog(dbc_dir=realdata / "dbc" / "3.3.5")
    rows = client_reference(tile, catalog, PlacementConstants(client_picks=picks))
    counts, hashes = _transcription_hashes(rows, catalog)
    e = entry(vectors, "continent4229.adt", "3.3.5", picks)
    assert sum(counts) == e["placement_count"] and counts == e["chunk_counts"]
    assert hashes == e["chunk_hashes"]
    if picks == 16:
        assert e["placement_count"] == 6149     # issue 41's figure
