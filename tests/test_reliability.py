"""The inputs an outside fuzzer and real files found (issue 17): each must end in a clean
FormatError with a byte offset, or be read the way the game reads it."""

from __future__ import annotations

import contextlib
import resource
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from click.testing import CliRunner

from adt_build import generated_tile
from wowgrass.cli.main import cli
from wowgrass.errors import FormatError, TruncatedError
from wowgrass.formats import dbc as D
from wowgrass.formats.adt import AdtTile, write_adt
from wowgrass.formats.mpq import MpqArchive, write_mpq

HEADER = struct.Struct("<4sIIII")


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@contextlib.contextmanager
def memory_limit(headroom=2**30):
    """Lower the soft address-space limit for the block (a runaway allocation is a MemoryError)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        vm = int(f.read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (vm + headroom, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _limit_memory(headroom=2**30):
    def apply():
        with open("/proc/self/statm") as f:
            vm = int(f.read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (vm + headroom, vm + headroom))
    return apply


def run_limited(*args, timeout=120):
    """``python -m wowgrass ARGS`` in a subprocess under a 1 GiB address-space headroom."""
    out = subprocess.run([sys.executable, "-m", "wowgrass", *map(str, args)], capture_output=True, text=True,
                         timeout=timeout, preexec_fn=_limit_memory())
    return out


def assert_clean_process(out):
    assert out.returncode == 2, (out.returncode, out.stderr[-2000:])
    assert out.stderr.startswith("error:") and "Traceback" not in out.stderr, out.stderr[-2000:]


def assert_clean(result):
    """exit 2, one ``error:`` line, no traceback (CliRunner keeps escapes in ``exception``)."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert "error:" in result.output and "Traceback" not in result.output


# -------------------------------------------------------------------------------------------- DBC
def test_dbc_records_without_fields_are_refused(tmp_path):
    data = HEADER.pack(b"WDBC", 3, 0, 1, 1) + b"\x07\x08\x09" + b"\0"
    with pytest.raises(FormatError) as err:
        D.DbcFile.from_bytes(data, "x.dbc").ids()
    assert err.value.offset is not None
    p = tmp_path / "GroundEffectTexture.dbc"
    p.write_bytes(data)
    assert_clean(run("dbc", "show", p, "--id", "1"))


@pytest.mark.parametrize("record_size", [9_230_592, 0x7FFFFFFF])
def test_dbc_record_size_nothing_backs_is_refused(tmp_path, record_size):
    """A huge declared record size with no records: no per-column work, no allocation."""
    data = HEADER.pack(b"WDBC", 0, 1, record_size, 1) + b"\0"
    assert len(data) == 21
    with pytest.raises(FormatError) as err, memory_limit():
        f = D.DbcFile.from_bytes(data, "x.dbc", strict=False)
        f.column_names()
        f.columns_flat()
    assert err.value.offset == 12
    p = tmp_path / "GroundEffectTexture.dbc"
    p.write_bytes(data)
    assert_clean_process(run_limited("dbc", "dump", p))


def test_dbc_empty_table_with_a_record_smaller_than_a_field():
    """Found by the 100,000-case run: 0 records, 8 fields, record size 3."""
    data = HEADER.pack(b"WDBC", 0, 8, 3, 1) + b"\0"
    f = D.DbcFile.from_bytes(data, "x.dbc")
    assert f.ids().tolist() == [] and f.columns_flat() == {n: [] for n in f.column_names()}


# -------------------------------------------------------------------------------------------- ADT
@pytest.mark.parametrize("where", ["position", "height"])
@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan])
def test_adt_non_finite_geometry_is_a_format_error(where, value):
    tile = generated_tile(2)
    if where == "position":
        tile.positions[17, 0] = value
    else:
        tile.heights[17, 40] = value
    data = write_adt(tile)
    with pytest.raises(FormatError) as err:
        AdtTile.from_bytes(data, "x.adt", big_alpha=True)
    assert err.value.offset is not None and "MCNK 17" in str(err.value)


def test_adt_info_on_infinite_position_is_clean(tmp_path):
    tile = generated_tile(2)
    tile.positions[0, 1] = np.inf
    p = tmp_path / "Azeroth_31_47.adt"
    p.write_bytes(write_adt(tile))
    assert_clean(run("adt", "info", p))


def test_bake_on_infinite_position_is_clean(tmp_path):
    from wowgrass.samples import tables

    tile = generated_tile(2)
    tile.positions[3, 2] = np.nan
    p = tmp_path / "Azeroth_31_47.adt"
    p.write_bytes(write_adt(tile))
    dbc = tmp_path / "dbc"
    dbc.mkdir()
    (dbc / "GroundEffectTexture.dbc").write_bytes(tables.ground_effect_texture("3.3.5"))
    (dbc / "GroundEffectDoodad.dbc").write_bytes(tables.ground_effect_doodad("3.3.5"))
    r = run("bake", p, "--dbc", dbc, "-o", tmp_path / "x.wgb")
    assert_clean(r)
    assert "MCNK 3" in r.output


def test_adt_accessors_survive_huge_finite_positions():
    tile = generated_tile(2)
    tile.positions[:, :2] = 3.0e38
    t = AdtTile.from_bytes(write_adt(tile), "x.adt", big_alpha=True)
    t.col, t.row
    idx = np.arange(256)
    h = t.heights_at(idx, t.positions[:, 0], t.positions[:, 1])
    assert h.shape == (256,)
    t.chunk_index_at([0.0], [0.0])


# -------------------------------------------------------------------------------------------- MPQ
def _lzma_archive_with_dictionary(dict_size: int) -> bytes:
    """An archive of one LZMA file whose sector header declares ``dict_size``."""
    data = write_mpq({"big.bin": bytes(range(256)) * 16}, compression="lzma", single_unit=True)
    at = data.find(b"\x12\x00\x5d")   # mask, filter byte, lc/lp/pb of the .lzma header
    assert at > 0
    b = bytearray(data)
    struct.pack_into("<I", b, at + 3, dict_size)
    return bytes(b)


def test_mpq_lzma_dictionary_larger_than_the_file_is_refused_without_allocating(tmp_path):
    """Under a 1 GiB address-space limit a 4 GB dictionary must be a clean error, not MemoryError."""
    p = tmp_path / "lzma.mpq"
    p.write_bytes(_lzma_archive_with_dictionary(0xFFFFFFF0))
    script = textwrap.dedent(f"""
        import resource
        from wowgrass.errors import FormatError
        from wowgrass.formats.mpq import MpqArchive
        a = MpqArchive.open({str(p)!r})
        with open("/proc/self/statm") as f:
            vm = int(f.read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (vm + 2**30, vm + 2**30))
        try:
            a.read("big.bin")
        except FormatError as exc:
            print("clean", exc.offset)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("clean ") and "None" not in out.stdout


def test_mpq_listfile_names_without_exists_flag(tmp_path):
    """A name the listfile gives whose block lacks EXISTS is not listed as a file; extract goes on."""
    data = bytearray(write_mpq({"a.txt": b"alpha", "b.txt": b"beta", "c.txt": b"gamma"}))
    a = MpqArchive.from_bytes(bytes(data))
    e = a.lookup("b.txt")
    # clear EXISTS in the (encrypted) block table through the writer's own key
    from wowgrass.formats.mpq import KEY_BLOCK_TABLE, decrypt_words, encrypt_words

    h = a.header
    start = h.offset + h.block_table_pos
    words = decrypt_words(np.frombuffer(bytes(data), "<u4", h.block_table_size * 4, start), KEY_BLOCK_TABLE)
    words = words.copy()
    words[e.block_index * 4 + 3] &= 0x7FFFFFFF
    data[start:start + words.nbytes] = encrypt_words(words, KEY_BLOCK_TABLE).astype("<u4").tobytes()
    a = MpqArchive.from_bytes(bytes(data))
    assert "b.txt" not in a.names() and {"a.txt", "c.txt"} <= set(a.names())
    p = tmp_path / "x.mpq"
    p.write_bytes(bytes(data))
    out = tmp_path / "out"
    r = run("mpq", "extract", p, "-o", out)
    assert r.exit_code == 0, r.output
    assert (out / "a.txt").read_bytes() == b"alpha" and (out / "c.txt").read_bytes() == b"gamma"


# ------------------------------------------------------------------------------ errors carry offsets
def test_wdt_missing_chunk_says_where():
    from wowgrass.formats.wdt import WdtFile, write_wdt

    data = write_wdt(WdtFile())
    cut = data[:data.find(b"NIAM")]   # MAIN is stored reversed on disk
    with pytest.raises(FormatError) as err:
        WdtFile.from_bytes(cut, "x.wdt")
    assert err.value.offset is not None


def test_adt_missing_chunk_says_where():
    data = write_adt(generated_tile(2))
    at = data.find(b"NICM")
    broken = data[:at] + b"XXXX" + data[at + 4:]
    with pytest.raises(FormatError) as err:
        AdtTile.from_bytes(broken, "x.adt", big_alpha=True)
    assert err.value.offset is not None


# ------------------------------------------------------------------------------------ mpq extract
def test_mpq_extract_skips_names_it_cannot_write_and_goes_on(tmp_path):
    long_name = "d\\" + "x" * 300 + ".txt"
    files = {"dup": b"file", "dup\\child.txt": b"child", long_name: b"long", "ok\\one.txt": b"one",
             "..\\..\\escape.txt": b"evil", "C:\\abs.txt": b"abs", "\\\\server\\share\\x.txt": b"unc",
             "z.txt": b"zed"}
    p = tmp_path / "names.mpq"
    p.write_bytes(write_mpq(files))
    out = tmp_path / "deep" / "out"
    r = run("mpq", "extract", p, "-o", out)
    assert_clean(r)
    warned = [line for line in r.output.splitlines() if line.startswith("warning:")]
    assert len(warned) == 2, r.output          # the long name and one of dup / dup\child.txt
    assert (out / "ok" / "one.txt").read_bytes() == b"one" and (out / "z.txt").read_bytes() == b"zed"
    # traversal names are rebased under the target, never written outside it
    assert (out / "escape.txt").read_bytes() == b"evil"
    assert (out / "abs.txt").read_bytes() == b"abs"
    assert (out / "server" / "share" / "x.txt").read_bytes() == b"unc"
    outside = {q for q in tmp_path.rglob("*") if out not in q.parents and q != out}
    assert outside == {p, tmp_path / "deep"}


def test_mpq_extract_goes_on_past_a_corrupt_file(tmp_path):
    data = bytearray(write_mpq({"a.txt": b"A" * 5000, "b.txt": b"B" * 5000, "c.txt": b"C" * 5000}))
    e = MpqArchive.from_bytes(bytes(data)).lookup("b.txt")
    start = e.file_pos + 4 * 3 + 2      # inside the first compressed sector
    data[start:start + 16] = b"\xff" * 16
    p = tmp_path / "x.mpq"
    p.write_bytes(bytes(data))
    out = tmp_path / "out"
    r = run("mpq", "extract", p, "-o", out)
    assert_clean(r)
    assert "warning:" in r.output and "b.txt" in r.output
    assert (out / "a.txt").read_bytes() == b"A" * 5000 and (out / "c.txt").read_bytes() == b"C" * 5000
    assert not (out / "b.txt").exists()


# -------------------------------------------------------------------------------------------- BLP
@pytest.mark.parametrize("depth", [2, 136, 255])
def test_blp2_uncompressed_accepts_any_alpha_depth(depth):
    """Compression 3 (BGRA) carries its alpha in every pixel: the client ignores the depth byte."""
    from wowgrass.formats.blp import BlpImage, write_blp

    rgba = np.random.default_rng(1).integers(0, 256, (8, 16, 4), dtype=np.uint8)
    data = bytearray(write_blp(rgba, "raw", mipmaps=False))
    data[9] = depth
    img = BlpImage.from_bytes(bytes(data), "x.blp")
    assert np.array_equal(img.mip(0), rgba)


@pytest.mark.parametrize("encoding", ["palette", "dxt1"])
def test_blp2_other_encodings_still_refuse_unknown_alpha_depths(encoding):
    from wowgrass.errors import UnsupportedError
    from wowgrass.formats.blp import BlpImage, write_blp

    data = bytearray(write_blp(np.zeros((8, 8, 4), np.uint8), encoding, mipmaps=False))
    data[9] = 136
    with pytest.raises(UnsupportedError) as err:
        BlpImage.from_bytes(bytes(data), "x.blp")
    assert err.value.offset == 9


# --------------------------------------------------------------------------------------- OBJ export
def _two_batch_model(tmp_path, first_blend, second_blend):
    """A v264 model of 2 submeshes; submesh 0 has two batches (e.g. base + additive reflection)."""
    from wowgrass.formats.m2 import BATCH_DTYPE, MATERIAL_DTYPE, SUBMESH_DTYPE, M2Texture, make_vertices, write_m2

    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0], [2, 0, 0], [2, 1, 0]], np.float32)
    tris = np.array([0, 1, 2, 1, 3, 2, 1, 4, 3, 4, 5, 3], np.uint16)
    sub = np.zeros(2, SUBMESH_DTYPE)
    sub["index_start"], sub["index_count"] = (0, 6), (6, 6)
    sub["vertex_count"] = 6
    mats = np.array([(0, first_blend), (0, second_blend), (0, 0)], MATERIAL_DTYPE)
    bat = np.zeros(3, BATCH_DTYPE)
    bat["submesh"] = (0, 0, 1)
    bat["material"] = (0, 1, 2)
    bat["texture_count"] = 1
    m2, skin = write_m2(make_vertices(pos), tris, name="Two", textures=[M2Texture(0, 0, "a.blp")],
                        materials=mats, submeshes=sub, batches=bat, texture_lookup=np.zeros(1, "<u2"))
    p = tmp_path / "Two.m2"
    p.write_bytes(m2)
    (tmp_path / "Two00.skin").write_bytes(skin)
    return p


@pytest.mark.parametrize("blends,material", [((1, 4), "batch0"), ((4, 0), "batch1")])
def test_obj_export_writes_each_triangle_once_with_the_first_opaque_batch(tmp_path, blends, material):
    p = _two_batch_model(tmp_path, *blends)
    out = tmp_path / "two.obj"
    r = run("m2", "export", p, "-o", out, "--no-textures")
    assert r.exit_code == 0, r.output
    lines = out.read_text().splitlines()
    faces = [line for line in lines if line.startswith("f ")]
    assert len(faces) == 4
    r = run("m2", "export", p, "-o", out)     # with an MTL: the submesh's faces use the chosen batch
    text = out.read_text()
    assert len([line for line in text.splitlines() if line.startswith("f ")]) == 4
    first_group = text.split("usemtl ", 1)[1].split("\n", 1)[0]
    assert first_group == material


# ----------------------------------------------------------------------------------- bundle provenance
def _bundle_with_provenance(tmp_path, text: str):
    """A valid, checksummed bundle whose provenance bytes are ``text`` (padded with spaces)."""
    from wowgrass.grass import bundle as B

    data = bytearray(B.bundle_bytes(model_index=np.zeros(2, np.int64), pos=np.zeros((2, 3)), yaw=np.zeros(2),
                                    scale=np.ones(2), models=[B.ModelInfo("a.m2", True)],
                                    provenance={"pad": "x" * 400}, tile=(1, 2)))
    h = B.read_header(bytes(data))
    raw = text.encode("utf-8")
    assert len(raw) <= h["provenance_size"]
    start = h["provenance_offset"]
    data[start:start + h["provenance_size"]] = raw + b" " * (h["provenance_size"] - len(raw))
    struct.pack_into("<I", data, B.CHECKSUM_OFFSET, B.file_checksum(data))
    p = tmp_path / "x.bundle"
    p.write_bytes(bytes(data))
    return p


@pytest.mark.parametrize("text", [
    "[1, 2, 3]",
    '{"constants": 5}',
    '{"tile": "32_32"}',
    '{"adt_sha256": 12}',
    '{"effect_ids": [1, "two"]}',
    '{"models": [3]}',
    '{"map": "\\ud800"}',
    '{"constants": {"k": "\\udfff"}}',
    "[" * 200 + "]" * 200,
])
def test_bundle_provenance_of_the_wrong_shape_is_a_format_error(tmp_path, text):
    from wowgrass.grass.bundle import read_bundle

    p = _bundle_with_provenance(tmp_path, text)
    with pytest.raises(FormatError) as err:
        read_bundle(p)
    assert err.value.offset is not None
    assert_clean(run("bundle", "info", p))


def test_bundle_provenance_of_the_right_shape_reads(tmp_path):
    from wowgrass.grass.bundle import read_bundle

    p = _bundle_with_provenance(tmp_path, '{"map": "Azeroth", "tile": [1, 2], "constants": {"a": 1.5}, "x": null}')
    with read_bundle(p) as b:
        assert b.provenance["map"] == "Azeroth"
    r = run("bundle", "info", p)
    assert r.exit_code == 0, r.output


def test_m2_batch_errors_say_where():
    from wowgrass.formats.m2 import BATCH_DTYPE, M2Model
    from wowgrass.samples import sample_world as world

    files = world.model_files("3.3.5")
    path = next(p for p in files if p.endswith("ElwGra01.m2"))
    skin = bytearray(files[path[:-3] + "00.skin"])
    good = M2Model.from_bytes(files[path], path, skin=bytes(skin))
    at = good.view.batches_at + BATCH_DTYPE.fields["submesh"][1]
    struct.pack_into("<H", skin, at, 77)
    with pytest.raises(FormatError) as err:
        M2Model.from_bytes(files[path], path, skin=bytes(skin))
    assert err.value.offset == at and "submesh 77" in str(err.value)


# ----------------------------------------------------------------------------------- protected MPQs
PROTECTED_FILES = {"war3map.j": b"function main takes nothing returns nothing\n" * 300,
                   "war3mapImported\\tc.mdx": bytes(range(256)) * 30, "war3map.w3e": b"W3E!" * 5000}


def _spoil(data: bytes, edits) -> bytes:
    b = bytearray(data)
    for off, fmt, value in edits:
        struct.pack_into(fmt, b, off, value)
    return bytes(b)


def _war3_map(archive: bytes) -> bytes:
    """A Warcraft III map: the 512-byte HM3W block, then the archive (found at the next boundary)."""
    return (b"HM3W" + bytes(508)) + archive


# (format_version written, header edits, wrap as a .w3x map); offsets are from the MPQ header
PROTECTIONS = {
    "format version garbage": (0, [(12, "<H", 0x1234)], False),
    "header size garbage": (0, [(4, "<I", 0x1F00)], False),
    "header size and version garbage": (0, [(4, "<I", 0xDEAD), (12, "<H", 7)], False),
    "archive size garbage": (0, [(8, "<I", 0xFFFFFFF0)], False),
    "v1 claiming v2": (0, [(12, "<H", 1)], False),
    "v2 with a v1 header size": (1, [(4, "<I", 0x20), (0x28, "<H", 0x4A4), (0x2A, "<H", 0x77)], False),
    "v2 header size garbage": (1, [(4, "<I", 0x1F00)], False),
    "v2 archive size garbage": (1, [(8, "<I", 0xFFFFFFF0)], False),
    "w3x: v2 high words garbage": (1, [(0x28, "<H", 0x4A4), (0x2A, "<H", 0x77)], True),
    "w3x: v2 hi-block table garbage": (1, [(0x20, "<Q", 0x123456789)], True),
    "w3x: everything at once": (1, [(4, "<I", 0x6C), (8, "<I", 3), (12, "<H", 0x5A5A), (0x28, "<H", 0xFFFF)], True),
}


@pytest.mark.storm
@pytest.mark.parametrize("name", list(PROTECTIONS))
def test_protected_archives_read_as_stormlib_reads_them(tmp_path, name):
    import _storm

    storm = _storm.required()
    version, edits, war3 = PROTECTIONS[name]
    data = _spoil(write_mpq(PROTECTED_FILES, format_version=version), edits)
    if war3:
        data = _war3_map(data)
    p = tmp_path / ("map.w3x" if war3 else "x.mpq")
    p.write_bytes(data)
    theirs = storm.read_archive(p, list(PROTECTED_FILES), check_crc=False)
    with MpqArchive.open(p) as a:
        ours = {n: a.read(n) for n in PROTECTED_FILES}
    assert ours == theirs == PROTECTED_FILES


@pytest.mark.storm
@pytest.mark.parametrize("size", [20, 24, 48, 100])
def test_hash_table_size_not_a_power_of_two_reads_as_stormlib_reads_it(tmp_path, size):
    """A map protector's trick: StormLib masks with size - 1 and probes within that mask."""
    import _storm
    from mpq_builders import odd_hash_table

    storm = _storm.required()
    p = tmp_path / "odd.mpq"
    p.write_bytes(odd_hash_table(write_mpq(PROTECTED_FILES), size))
    theirs = storm.read_archive(p, list(PROTECTED_FILES), check_crc=False)
    with MpqArchive.open(p) as a:
        assert a.header.hash_table_size == size
        ours = {n: a.read(n) for n in PROTECTED_FILES}
        assert sorted(a.names()) == sorted([*PROTECTED_FILES, "(listfile)"])
        assert not a.exists("war3map.nope")
    assert ours == theirs == PROTECTED_FILES


def test_truncated_protected_map_says_how_long_it_should_be():
    """A Warcraft III map cut before its tables: StormLib refuses it (the tables' positions lie past
    the end of the file); so does wowgrass, with the size expected and the size found."""
    data = _war3_map(write_mpq(PROTECTED_FILES))
    a = MpqArchive.from_bytes(data, "map.w3x")
    for cut in (a.header.offset + a.header.hash_table_pos - 1, a.header.offset + a.header.block_table_pos):
        with pytest.raises(TruncatedError, match="past the end") as err:
            MpqArchive.from_bytes(data[:cut], "map.w3x")
        assert f"{cut:,} bytes" in str(err.value) and f"{len(data):,}" in str(err.value)


def test_war3_block_table_size_past_the_file_is_cut_as_storm_dll_does(tmp_path):
    """EWIX-style protection: a block table size far past the end of a v1 map's file."""
    data = _war3_map(_spoil(write_mpq(PROTECTED_FILES), [(0x1C, "<I", 0x00319601)]))
    a = MpqArchive.from_bytes(data, "map.w3x")
    assert {n: a.read(n) for n in PROTECTED_FILES} == PROTECTED_FILES
    with pytest.raises(FormatError):     # the same damage outside a map is a truncated archive
        MpqArchive.from_bytes(data[512:], "x.mpq")


def test_v2_high_words_past_the_file_outside_a_map_is_a_clean_error():
    data = _spoil(write_mpq(PROTECTED_FILES, format_version=1), [(0x28, "<H", 0x4A4)])
    with pytest.raises(FormatError) as err:
        MpqArchive.from_bytes(data, "x.mpq")
    assert err.value.offset is not None
