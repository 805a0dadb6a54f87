"""Vendored .dbd definitions → schemas, and schema detection for the ground-effect tables."""

from __future__ import annotations

import numpy as np
import pytest

from dbc_builders import dbc_bytes, doodad_112, doodad_335, string_block, texture_110, texture_112, texture_335
from wowgrass.errors import FormatError, UnsupportedError, UsageError
from wowgrass.formats import dbd
from wowgrass.formats.dbc import DbcFile, detect_schema, normalize_build, read_table, schema_for


def test_vendored_definitions_ship_as_package_data():
    assert set(dbd.vendored_tables()) >= {"GroundEffectTexture", "GroundEffectDoodad", "TerrainType"}
    with pytest.raises(UnsupportedError, match="no vendored .dbd"):
        dbd.load_dbd("Spell")


@pytest.mark.parametrize(
    ("table", "build", "columns", "size"),
    [
        ("GroundEffectTexture", "1.12", ["ID", "DoodadID[4]", "Density", "Sound"], 28),
        ("GroundEffectTexture", "2.4.3", ["ID", "DoodadID[4]", "Density", "Sound"], 28),
        ("GroundEffectTexture", "3.3.5", ["ID", "DoodadID[4]", "DoodadWeight[4]", "Density", "Sound"], 44),
        ("GroundEffectTexture", "1.10", ["ID", "Datestamp", "ContinentID", "TextureID", "TextureName",
                                         "DoodadID[4]", "Density", "Sound"], 44),
        ("GroundEffectDoodad", "1.12", ["ID", "DoodadIdTag", "Doodadpath"], 12),
        ("GroundEffectDoodad", "2.4.3", ["ID", "DoodadIdTag", "Doodadpath"], 12),
        ("GroundEffectDoodad", "3.3.5", ["ID", "Doodadpath", "Flags"], 12),
    ],
)
def test_schemas_match_formats_md(table, build, columns, size):
    s = schema_for(table, build)
    assert s.columns() == columns and s.record_size == size and s.field_count == size // 4
    assert all(s.dtype[n].base.str.startswith("<") for n in s.dtype.names)
    assert s.id_field == "ID"
    assert s.string_fields == tuple(n for n in ("TextureName", "Doodadpath") if n in s.dtype.names)


def test_dbd_build_ranges():
    tex = dbd.load_dbd("GroundEffectTexture")
    assert tex.definition_for("3.3.5.12340").covering((3, 3, 5, 12340)) == "3.0.1.8681-3.3.5.12340"
    assert tex.definition_for("3.0.1.8634") is tex.definition_for("1.12.1.5875")  # no weights before 8681
    with pytest.raises(UnsupportedError):
        tex.definition_for("0.1.0.1")


def test_dbd_from_bytes_text_and_errors():
    text = "COLUMNS\nint ID\nfloat Scale // note\nlocstring Name\nint<Other::ID> Ref\n\n" \
           "LAYOUT ABCD\nBUILD 1.12.1.5875\nCOMMENT hi\n$id$ID<32>\nScale\nName\nRef<u16>[2]\n"
    d = dbd.DbdFile.from_bytes(text, "T")
    assert d.columns["Ref"].foreign == "Other::ID" and d.columns["Scale"].comment == "note"
    dt = d.dtype("1.12.1.5875")
    # a locstring: 8 string offsets (one a locale, 1.x), then its flags word, which is no string offset
    assert dt.names == ("ID", "Scale", "Name", "Name_flags", "Ref")
    assert dt["Scale"] == np.dtype("<f4") and dt["Name"].shape == (8,) and dt["Name_flags"] == np.dtype("<u4")
    assert dt["Ref"] == np.dtype(("<u2", (2,))) and dt.itemsize == 4 + 4 + 9 * 4 + 4
    with pytest.raises(FormatError, match="COLUMNS"):
        dbd.DbdFile.from_bytes("BUILD 1.0.0.1\n", "T")
    with pytest.raises(FormatError, match="not in COLUMNS"):
        dbd.DbdFile.from_bytes("COLUMNS\nint ID\n\nBUILD 1.12.1.5875\nOther<32>\n", "T")
    with pytest.raises(FormatError, match="line 4"):
        dbd.DbdFile.from_bytes("COLUMNS\nint ID\n\nBUILD 1.12\nID<32>\n", "T")
    assert dbd.DbdFile.from_bytes(text.encode(), "T") == d  # the file's bytes read as its text
    with pytest.raises(FormatError, match="UTF-8"):
        dbd.DbdFile.from_bytes(b"COLUMNS\nint \xff\n", "T")


@pytest.mark.parametrize(
    ("given", "short"),
    [("3.3.5.12340", "3.3.5"), ("3.3.5a", "3.3.5"), ("1.12.1", "1.12"), ("1.12.1.5875", "1.12"),
     ("2.4.3.8606", "2.4.3"), ("WotLK", "3.3.5"), ("1.10", "1.10")],
)
def test_normalize_build(given, short):
    assert normalize_build(given) == short


def test_normalize_build_unknown():
    with pytest.raises(UsageError, match="unknown build"):
        normalize_build("4.3.4")


def _detect(data, table):
    return detect_schema(DbcFile.from_bytes(data, f"{table}.dbc"))


def test_detect_doodad_112_by_string_column():
    det = _detect(doodad_112(), "GroundEffectDoodad")
    assert det.build == "1.12" and det.candidates == ["1.12", "2.4.3"] and not det.ambiguous
    assert "column 2 holds string offsets" in det.reason


def test_detect_doodad_335_by_string_column():
    det = _detect(doodad_335(), "GroundEffectDoodad")
    assert det.build == "3.3.5" and not det.ambiguous
    assert det.schema.columns() == ["ID", "Doodadpath", "Flags"]


def test_detect_doodad_ambiguous_and_impossible():
    # one row whose columns 1 and 2 are both 0: either layout reads it
    det = _detect(dbc_bytes([[1, 0, 0]], b"\0x\0"), "GroundEffectDoodad")
    assert det.ambiguous and det.schema is not None and det.notes
    # neither column holds offsets inside the block
    det = _detect(dbc_bytes([[1, 500, 700]], b"\0"), "GroundEffectDoodad")
    assert det.schema is None and "no layout fits" in det.reason
    det = _detect(dbc_bytes([[1, 0, 0, 0]]), "GroundEffectDoodad")
    assert det.schema is None and "4 fields" in det.reason


def test_detect_texture_layouts():
    assert _detect(texture_112(), "GroundEffectTexture").candidates == ["1.12", "2.4.3"]
    det = _detect(texture_335(), "GroundEffectTexture")
    assert det.build == "3.3.5" and det.schema.columns()[2] == "DoodadWeight[4]"
    det = _detect(texture_110(), "GroundEffectTexture")
    assert det.build == "1.10" and "pre-1.11" in det.reason
    det = _detect(dbc_bytes([[1, 2, 3, 4, 5]]), "GroundEffectTexture")
    assert det.schema is None and "5 fields × 20 B" in det.reason


def test_forced_build_must_fit_the_header():
    f = DbcFile.from_bytes(texture_112(), "GroundEffectTexture.dbc")
    det = detect_schema(f, build="2.4.3")
    assert det.build == "2.4.3" and det.reason == "build 2.4.3 given"
    with pytest.raises(FormatError, match="--build 3.3.5: GroundEffectTexture has 11 fields"):
        detect_schema(f, build="3.3.5")
    # forcing 3.3.5 on a 1.12 doodad table fits the header; the doubt is reported
    det = detect_schema(DbcFile.from_bytes(doodad_112(), "GroundEffectDoodad.dbc"), build="3.3.5")
    assert det.build == "3.3.5" and any("looks like 1.12" in n for n in det.notes)


def test_generic_table_detection():
    block, offs = string_block(["Grass", "Dirt"])
    data = dbc_bytes([[1, offs[0], 0, 0, 3, 0], [2, offs[1], 0, 0, 4, 1]], block)
    f, det = read_table(data, "DBFilesClient\\TerrainType.dbc")
    assert det.table == "TerrainType" and set(det.candidates) == {"1.12", "2.4.3", "3.3.5", "1.10"}
    assert not det.ambiguous  # the same layout in every build
    assert f.columns_flat()["TerrainDesc"] == ["Grass", "Dirt"]
    f, det = read_table(data, "Unknown.dbc")
    assert det.schema is None and f.column_names()[0] == "field0"


def test_empty_ground_effect_tables():
    f, det = read_table(dbc_bytes([], b"", field_count=3, record_size=12), "GroundEffectDoodad.dbc")
    assert det.ambiguous and det.build == "3.3.5" and any("empty table" in n for n in det.notes)
    assert f.record_count == 0 and f.columns_flat() == {"ID": [], "Doodadpath": [], "Flags": []}
    f, det = read_table(dbc_bytes([], b"\0", field_count=11, record_size=44), "GroundEffectTexture.dbc")
    assert det.build == "3.3.5" and f.records["DoodadID"].shape == (0, 4)
