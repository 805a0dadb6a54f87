"""GameData / open_data over fake client folders written by our MPQ writer, and loose folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from wowgrass.game.data import GameData, archive_order, detect_build, open_data
from wowgrass.errors import FormatError, GameFileNotFound, UsageError
from wowgrass.formats.mpq import write_mpq_file

DBC = "DBFilesClient\\GroundEffectTexture.dbc"


def _mpq(path: Path, files, **kw):
    write_mpq_file(path, files, **kw)


@pytest.fixture
def wotlk(tmp_path) -> Path:
    """A 3.3.5-shaped Data folder (mixed-case names) with overrides and a delete marker."""
    d = tmp_path / "WoW" / "Data"
    loc = d / "enUS"
    _mpq(d / "common.MPQ", {"World\\a.txt": b"common", "World\\b.txt": b"common-b", "gone.txt": b"doomed",
                            "only-common.txt": b"c"})
    _mpq(d / "COMMON-2.mpq", {"World\\a.txt": b"common-2"})
    _mpq(d / "expansion.MPQ", {"World\\a.txt": b"expansion"})
    _mpq(d / "lichking.MPQ", {"World\\a.txt": b"lichking"})
    _mpq(loc / "locale-enUS.MPQ", {DBC: b"locale", "World\\b.txt": b"locale-b"})
    _mpq(loc / "lichking-locale-enUS.MPQ", {DBC: b"lichking-locale"})
    _mpq(d / "patch.MPQ", {"World\\b.txt": b"patch-b"}, encrypt=True, fix_key=True)
    _mpq(d / "patch-2.MPQ", [("World\\a.txt", b"patch-2", {}), ("gone.txt", b"", {"delete": True})],
         compression="bzip2")
    _mpq(loc / "patch-enUS.MPQ", {DBC: b"patch-enUS"})
    _mpq(loc / "patch-enUS-2.MPQ", {"World\\c.txt": b"locale patch 2"})
    (d / "readme.txt").write_text("not an archive")
    (d / "patch-x.txt").write_text("not an archive either")
    return d


@pytest.fixture
def vanilla(tmp_path) -> Path:
    d = tmp_path / "Data"
    _mpq(d / "dbc.MPQ", {DBC: b"base-dbc", "gone.dbc": b"x"})
    _mpq(d / "terrain.MPQ", {"World\\Maps\\Azeroth\\Azeroth_32_48.adt": b"adt-base"}, listfile=False)
    _mpq(d / "model.MPQ", {"World\\NoDXT\\Detail\\ElwGra01.mdx": b"model"})
    _mpq(d / "base.MPQ", {DBC: b"must not be mounted"})
    _mpq(d / "patch.MPQ", {DBC: b"patch"})
    _mpq(d / "patch-2.MPQ", [(DBC, b"patch-2", {}), ("gone.dbc", b"", {"delete": True})])
    _mpq(d / "patch-10.MPQ", {DBC: b"two characters: not mounted"})
    _mpq(d / "speech2.MPQ", {"Sound\\x.wav": b"speech2"})
    return d


def _names(data):
    return [str(p.relative_to(data.root)).replace("\\", "/") for p in data.archives]


def test_wotlk_order_build_locale(wotlk):
    with open_data(wotlk) as data:
        assert data.build == "3.3.5" and data.locale == "enUS" and data.kind == "mpq"
        assert _names(data) == ["common.MPQ", "COMMON-2.mpq", "expansion.MPQ", "lichking.MPQ",
                                "enUS/locale-enUS.MPQ", "enUS/lichking-locale-enUS.MPQ",
                                "patch.MPQ", "patch-2.MPQ", "enUS/patch-enUS.MPQ", "enUS/patch-enUS-2.MPQ"]


def test_wotlk_overrides_and_delete_marker(wotlk):
    with open_data(wotlk) as data:
        assert data.read("World\\a.txt") == b"patch-2"
        assert data.read("world/B.TXT") == b"patch-b"              # encrypted patch beats locale archive
        assert data.read(DBC) == b"patch-enUS"
        assert data.read("World/c.txt") == b"locale patch 2"
        assert data.read("only-common.txt") == b"c"
        assert not data.exists("gone.txt")
        with pytest.raises(GameFileNotFound, match="gone.txt"):
            data.read("gone.txt")
        where, _ = data.locate("World\\b.txt")
        assert where.name == "patch.MPQ"
        assert data.archive(where).read("World\\b.txt") == b"patch-b"
        assert data.list("world\\*.txt") == ["World\\a.txt", "World\\b.txt", "World\\c.txt"]
        assert "gone.txt" not in data.list()
        assert isinstance(data, GameData)


def test_client_root_finds_its_data_folder(wotlk):
    with open_data(wotlk.parent) as data:
        assert data.root == wotlk and data.build == "3.3.5"


def test_vanilla_order_and_overrides(vanilla):
    with open_data(vanilla) as data:
        assert data.build == "1.12" and data.locale is None
        assert _names(data) == ["dbc.MPQ", "terrain.MPQ", "model.MPQ", "patch.MPQ", "patch-2.MPQ", "speech2.MPQ"]
        assert data.read(DBC) == b"patch-2"
        assert data.read("world/maps/azeroth/azeroth_32_48.ADT") == b"adt-base"   # found by hash, no listfile
        assert not data.exists("gone.dbc")
        assert "World\\NoDXT\\Detail\\ElwGra01.mdx" in data.list("*.mdx")


def test_tbc_detection_and_locale_choice(tmp_path):
    d = tmp_path / "Data"
    _mpq(d / "common.MPQ", {"x": b"common"})
    _mpq(d / "expansion.MPQ", {"x": b"expansion"})
    _mpq(d / "deDE" / "locale-deDE.MPQ", {DBC: b"de"})
    _mpq(d / "enGB" / "locale-enGB.MPQ", {DBC: b"gb"})
    _mpq(d / "enGB" / "expansion-locale-enGB.MPQ", {DBC: b"gb-tbc"})
    with open_data(d) as data:
        assert data.build == "2.4.3" and data.locale == "enGB"
        assert data.read(DBC) == b"gb-tbc" and data.read("x") == b"expansion"
    with open_data(d, locale="deDE") as data:
        assert data.read(DBC) == b"de"
        assert [p.name for p in data.archives] == ["common.MPQ", "expansion.MPQ", "locale-deDE.MPQ"]


def test_explicit_build_and_order(vanilla):
    with open_data(vanilla, order=["patch.MPQ", "dbc.MPQ"]) as data:
        assert data.read(DBC) == b"base-dbc"               # later in the given order wins
        assert data.build == "1.12"
    with pytest.raises(GameFileNotFound):
        open_data(vanilla, order=["nope.MPQ"])
    with pytest.raises(UsageError, match="unknown build"):
        open_data(vanilla, build="4.0")


def test_detect_build_and_order_helpers(vanilla):
    assert detect_build(["LichKing.mpq"]) == "3.3.5"
    assert detect_build(["expansion.MPQ", "common.MPQ"]) == "2.4.3"
    assert detect_build(["Terrain.MPQ"]) == "1.12"
    assert detect_build(["patch.MPQ"]) is None
    assert [p.name for p in archive_order(vanilla, "1.12", None)][-1] == "speech2.MPQ"


def test_patch_only_folder_has_unknown_build(tmp_path):
    _mpq(tmp_path / "patch.MPQ", {"a": b"1"})
    _mpq(tmp_path / "patch-3.MPQ", {"a": b"3"})
    with open_data(tmp_path) as data:
        assert data.build is None and data.read("a") == b"3"


def test_folder_of_unmounted_archives_is_an_error(tmp_path):
    _mpq(tmp_path / "custom.MPQ", {"a": b"1"})
    with pytest.raises(UsageError, match="none that"):
        open_data(tmp_path)


def test_corrupt_archive_in_chain_names_it(vanilla):
    (vanilla / "patch.MPQ").write_bytes(b"MPQ\x1a" + bytes(40))
    with pytest.raises(FormatError, match="patch.MPQ"):
        open_data(vanilla)


def test_loose_folder(tmp_path):
    root = tmp_path / "extracted"
    (root / "DBFilesClient").mkdir(parents=True)
    (root / "DBFilesClient" / "GroundEffectTexture.dbc").write_bytes(b"loose")
    (root / "World" / "Maps").mkdir(parents=True)
    (root / "World" / "Maps" / "x.adt").write_bytes(b"adt")
    with open_data(root) as data:
        assert data.kind == "loose" and data.archives == [] and data.build is None
        assert data.read("dbfilesclient\\groundeffecttexture.DBC") == b"loose"
        assert data.read("World/Maps/X.ADT") == b"adt"
        assert data.exists("WORLD\\MAPS\\x.adt") and not data.exists("nope")
        assert data.list() == ["DBFilesClient\\GroundEffectTexture.dbc", "World\\Maps\\x.adt"]
        assert data.list("*.ADT") == ["World\\Maps\\x.adt"]
        assert data.locate("world/maps/x.adt")[1] is None
        with pytest.raises(GameFileNotFound):
            data.read("DBFilesClient/Missing.dbc")


def test_missing_folder_and_file_path(tmp_path):
    with pytest.raises(GameFileNotFound):
        open_data(tmp_path / "nope")
    f = tmp_path / "file.MPQ"
    f.write_bytes(b"x")
    with pytest.raises(UsageError, match="not a folder"):
        open_data(f)
