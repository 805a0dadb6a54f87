"""ADT v18 reader/writer on synthetic tiles: hand-built bytes, writer round trips, corrupt input."""

import struct

import numpy as np
import pytest
from adt_build import chunk, generated_tile, mcnk_offsets, raw_adt

from wowgrass.errors import FormatError, TruncatedError
from wowgrass.formats.adt import (ALPHA_4BIT, ALPHA_8BIT, ALPHA_COMPRESSED, ALPHA_NONE, CHUNK_SIZE, TILE_SIZE,
                                  UNIT_SIZE, ZEROPOINT, AdtTile, decode_alpha_4bit, decode_alpha_rle,
                                  encode_alpha_4bit, encode_alpha_rle, sniff, write_adt)

ARRAYS = ("chunk_flags", "index_xy", "n_layers", "area_id", "positions", "heights", "normals", "layer_texture",
          "layer_flags", "layer_effect", "alpha", "alpha_encoding", "shadow", "holes", "doodad_mapping",
          "no_effect_doodad", "mcnr_pad")


def assert_same_tile(a: AdtTile, b: AdtTile):
    for name in ARRAYS:
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert (a.mccv is None) == (b.mccv is None)
    if a.mccv is not None:
        assert np.array_equal(a.mccv, b.mccv)
    assert a.textures == b.textures and a.models == b.models and a.wmos == b.wmos
    assert a.col == b.col and a.row == b.row


@pytest.fixture(scope="module")
def tiles():
    return {enc: generated_tile(enc) for enc in (1, 2, 3, 23)}


# --- hand-built codecs ---------------------------------------------------------------------------
def test_4bit_decode_low_nibble_first():
    raw = np.zeros((1, 2048), np.uint8)
    raw[0, 0] = 0x21          # row 0: col 0 = 1, col 1 = 2
    raw[0, 31] = 0xF0         # row 0: col 62 = 0, col 63 = 15
    raw[0, 62 * 32 + 5] = 0x0F   # row 62: col 10 = 15
    out = decode_alpha_4bit(raw)[0]
    assert out[0, 0] == 17 and out[0, 1] == 34 and out[0, 62] == 0 and out[0, 63] == 255
    assert out[62, 10] == 255 and out[63, 10] == 0
    fixed = decode_alpha_4bit(raw, fix=True)[0]
    assert fixed[0, 63] == 0            # column 63 copies column 62
    assert fixed[63, 10] == 255         # row 63 copies row 62
    assert np.array_equal(encode_alpha_4bit(out[None]), raw)


def test_rle_decode_hand_bytes():
    data = bytes([0x80 | 100, 7]) + bytes([3, 1, 2, 3]) + bytes([0x80 | 127, 9]) * 40
    out, used = decode_alpha_rle(data, 0, len(data))
    assert out[:100].tolist() == [7] * 100
    assert out[100:103].tolist() == [1, 2, 3]
    assert (out[103:] == 9).all() and out.size == 4096
    # decoding stops once 4096 bytes are out: 6 bytes + 32 fill runs of 2 bytes, the rest is unread
    assert used == 6 + 32 * 2


def test_rle_truncated_and_round_trip():
    with pytest.raises(TruncatedError):
        decode_alpha_rle(bytes([0x80 | 10, 1]), 0, 2)
    with pytest.raises(TruncatedError):
        decode_alpha_rle(bytes([5, 1, 2]), 0, 3)
    with pytest.raises(TruncatedError):
        decode_alpha_rle(bytes([0x85]), 0, 1)
    rng = np.random.default_rng(3)
    for a in (np.zeros(4096), rng.integers(0, 256, 4096), np.repeat(rng.integers(0, 4, 512), 8)):
        a = a.astype(np.uint8).reshape(64, 64)
        enc = encode_alpha_rle(a)
        back, used = decode_alpha_rle(enc, 0, len(enc))
        assert np.array_equal(back.reshape(64, 64), a) and used == len(enc)
    assert len(encode_alpha_rle(np.zeros((64, 64), np.uint8))) == 2 * 33   # 4096 = 32*127 + 32


# --- a file built with struct only ---------------------------------------------------------------
def _layers_bigalpha(i):
    rle = bytes([0x80 | 64, 200]) + bytes([0x80 | 127, 0]) * 32 + bytes([0x80 | 64, 50])   # 64 + 4064 clamp
    eight = bytes(range(256)) * 16
    return [(0, 0, 453, None), (1, 0x300, 1493, rle), (0, 0x100, 0, eight)]


def test_hand_built_big_alpha_file():
    data = raw_adt(_layers_bigalpha, textures=(b"a.blp", b"b.blp"))
    tile = AdtTile.from_bytes(data, "hand.adt", big_alpha=True)
    assert tile.textures == ["a.blp", "b.blp"]
    assert (tile.n_layers == 3).all()
    assert tile.alpha_encoding[0].tolist() == [ALPHA_NONE, ALPHA_COMPRESSED, ALPHA_8BIT, ALPHA_NONE]
    a1 = tile.alpha[5, 1].reshape(-1)
    assert (a1[:64] == 200).all() and (a1[64:] == 0).all()
    assert tile.alpha[5, 2].reshape(-1)[:256].tolist() == list(range(256))
    assert tile.layer_effect[0, :3].tolist() == [453, 1493, 0]
    assert tile.layer_texture[0].tolist() == [0, 1, 0, -1]
    assert (tile.alpha[:, 0] == 0).all() and (tile.alpha[:, 3] == 0).all()
    # same file read as small alpha: layer 1 is not 4-bit-sized past its own bytes, so offsets matter
    back = AdtTile.from_bytes(write_adt(tile), big_alpha=True)
    assert_same_tile(tile, back)


def test_hand_built_4bit_file_with_and_without_fix():
    four = bytes([0x21] * 2048)
    data = raw_adt(lambda i: [(0, 0, 7, None), (0, 0x100, 8, four)], flags=0)
    fixed = AdtTile.from_bytes(data)
    a = fixed.alpha[0, 1]
    assert a[0, 0] == 17 and a[0, 1] == 34 and a[0, 62] == 17
    assert a[0, 63] == 17            # fixed: col 63 copied from col 62 (17), not 34
    raw_no_fix = raw_adt(lambda i: [(0, 0, 7, None), (0, 0x100, 8, four)], flags=0x8000)
    assert AdtTile.from_bytes(raw_no_fix).alpha[0, 1, 0, 63] == 34
    assert (fixed.alpha_encoding[:, 1] == ALPHA_4BIT).all()


def test_header_bit_maps_hand_bytes():
    dm = bytes([0b00011011, 0b11100100]) + b"\0" * 14   # row 0: LSB-first 3,2,1,0, 0,1,2,3
    ne = bytes([0, 0, 0x81, 0, 0, 0, 0, 0x10])          # cells (2,0), (2,7), (7,4)
    data = raw_adt(lambda i: [(0, 0, 1, None)] * 4, flags=0x8000, holes=0x0021, doodad_map=dm, no_effect=ne)
    t = AdtTile.from_bytes(data)
    assert t.doodad_mapping[0, 0].tolist() == [3, 2, 1, 0, 0, 1, 2, 3]
    assert (t.doodad_mapping[0, 1:] == 0).all()
    msb = AdtTile.from_bytes(data, doodad_map_msb_first=True)
    assert msb.doodad_mapping[0, 0].tolist() == [0, 1, 2, 3, 3, 2, 1, 0]
    assert sorted(zip(*np.nonzero(t.no_effect_doodad[9]))) == [(2, 0), (2, 7), (7, 4)]
    cells = t.hole_cells()[0]
    # bit 0 → rows 0-1, cols 0-1; bit 5 → rows 2-3, cols 2-3
    assert cells.sum() == 8 and cells[0:2, 0:2].all() and cells[2:4, 2:4].all()
    # the writer reproduces the exact header bytes, in both bit orders
    for tile in (t, msb):
        out = write_adt(tile)
        hdr = mcnk_offsets(out)[0] + 8
        assert out[hdr + 0x40: hdr + 0x50] == dm and out[hdr + 0x50: hdr + 0x58] == ne
        assert struct.unpack_from("<H", out, hdr + 0x3C)[0] == 0x21


# --- writer round trips --------------------------------------------------------------------------
@pytest.mark.parametrize("enc", [1, 2, 3, 23])
def test_writer_round_trip(tiles, enc):
    t = tiles[enc]
    data = write_adt(t)
    back = AdtTile.from_bytes(data, big_alpha=t.big_alpha)
    assert_same_tile(t, back)
    assert write_adt(back) == data
    used = set(np.unique(back.alpha_encoding).tolist()) - {0}
    assert used == ({1} if enc == 1 else {2} if enc == 2 else {3} if enc == 3 else {2, 3})
    assert sniff(data)


def test_4bit_with_fix_and_mccv_round_trip():
    t = generated_tile(1, fix=True, mccv=True, seed=5)
    assert not (t.chunk_flags & 0x8000).any()
    back = AdtTile.from_bytes(write_adt(t))
    assert_same_tile(t, back)
    assert back.has_mccv.all()


def test_compressed_is_smaller_than_8bit(tiles):
    assert len(write_adt(tiles[3])) < len(write_adt(tiles[2]))


def test_unknown_chunks_and_raw_liquids_survive():
    t = generated_tile(2, seed=2)
    t.mh2o = b"\x01\x02\x03\x04"
    t.mfbo = b"\0" * 36
    t.mtxf = b"\0" * 16
    t.extra_before = [(b"MZZZ", b"before")]
    t.extra_after = [(b"MYYY", b"after!")]
    t.liquids[3] = b"liquid-bytes"
    t.sound_emitters[4] = b"\0" * 28
    t.extra_subchunks[7] = [(b"MCXX", b"sub")]
    data = write_adt(t)
    back = AdtTile.from_bytes(data, big_alpha=True)
    assert back.mh2o == t.mh2o and back.mfbo == t.mfbo and back.mtxf == t.mtxf
    assert back.mhdr_flags & 1
    assert back.extra_before == t.extra_before and back.extra_after == t.extra_after
    assert back.liquids[3] == b"liquid-bytes" and back.liquids[2] is None
    assert back.sound_emitters[4] == b"\0" * 28
    assert back.extra_subchunks == {7: [(b"MCXX", b"sub")]}
    assert_same_tile(t, back)
    assert write_adt(back) == data


def test_encoding_comes_from_flags():
    enc = np.zeros((256, 4), np.uint8)
    enc[:, 1] = 1
    enc[0, 2] = 3
    with pytest.raises(ValueError, match="mix"):
        AdtTile.from_arrays(0, 0, alpha_encoding=enc, n_layers=np.full(256, 3))
    t = generated_tile(2)
    t.alpha_encoding = t.alpha_encoding.copy()
    t.alpha_encoding[0, 1] = ALPHA_COMPRESSED
    with pytest.raises(ValueError, match="disagrees"):
        write_adt(t)


def test_default_tile_from_arrays_writes_and_reads():
    t = AdtTile.from_arrays(12, 34, base_heights=5.0)
    back = AdtTile.from_bytes(write_adt(t))
    assert (back.col, back.row) == (12, 34)
    assert np.allclose(back.abs_heights, 5.0)
    assert (back.n_layers == 0).all() and (back.layer_texture == -1).all()


# --- world coordinates ---------------------------------------------------------------------------
def test_positions_and_tile_from_arrays(tiles):
    t = tiles[1]
    assert (t.col, t.row) == (31, 47)
    assert np.isclose(t.positions[0, 0], ZEROPOINT - 47 * TILE_SIZE)
    assert np.isclose(t.positions[0, 1], ZEROPOINT - 31 * TILE_SIZE)
    k = 3 * 16 + 5   # IndexY 3, IndexX 5
    assert tuple(t.index_xy[k]) == (5, 3)
    assert np.isclose(t.positions[k, 0], t.positions[0, 0] - 3 * CHUNK_SIZE)
    assert np.isclose(t.positions[k, 1], t.positions[0, 1] - 5 * CHUNK_SIZE)
    centre = t.cell_centres()[k, 2, 6]
    assert np.allclose(centre, [t.positions[k, 0] - 2.5 * UNIT_SIZE, t.positions[k, 1] - 6.5 * UNIT_SIZE])
    assert t.chunk_index_at(centre[0], centre[1]) == k
    assert t.chunk_index_at(t.positions[0, 0] + 1, t.positions[0, 1]) == -1
    v = t.vertex_positions()
    assert np.allclose(v[k, 9 + 17 * 2 + 6, :2], centre)     # inner vertex of cell (2, 6)
    assert np.allclose(v[..., 2], t.abs_heights)


def _fan_tile():
    rng = np.random.default_rng(7)
    return AdtTile.from_arrays(30, 40, heights=rng.uniform(-5, 5, (256, 145)), base_heights=100.0)


def test_fan_heights_at_vertices_and_edge_midpoints():
    t = _fan_tile()
    ah = t.abs_heights
    k, r, c = 37, 3, 4
    x0, y0 = t.positions[k, 0] - r * UNIT_SIZE, t.positions[k, 1] - c * UNIT_SIZE
    tl, tr, bl, br = ah[k, r * 17 + c], ah[k, r * 17 + c + 1], ah[k, r * 17 + c + 17], ah[k, r * 17 + c + 18]
    ctr = ah[k, r * 17 + 9 + c]
    eps = 1e-4
    pts = {  # (x, y) → expected height
        (x0 - UNIT_SIZE / 2, y0 - UNIT_SIZE / 2): ctr,
        (x0 - eps, y0 - eps): tl,
        (x0 - eps, y0 - UNIT_SIZE + eps): tr,
        (x0 - UNIT_SIZE + eps, y0 - eps): bl,
        (x0 - UNIT_SIZE + eps, y0 - UNIT_SIZE + eps): br,
        (x0 - eps, y0 - UNIT_SIZE / 2): (tl + tr) / 2,              # north edge midpoint
        (x0 - UNIT_SIZE + eps, y0 - UNIT_SIZE / 2): (bl + br) / 2,  # south
        (x0 - UNIT_SIZE / 2, y0 - eps): (tl + bl) / 2,              # west
        (x0 - UNIT_SIZE / 2, y0 - UNIT_SIZE + eps): (tr + br) / 2,  # east
    }
    xs = np.array([p[0] for p in pts])
    ys = np.array([p[1] for p in pts])
    got = t.heights_at(np.full(len(xs), k), xs, ys)
    assert np.allclose(got, list(pts.values()), atol=2e-3)
    assert got.shape == (len(xs),) and got.dtype == np.float32
    assert np.isclose(t.height_at(k, *list(pts)[0]), ctr, atol=1e-4)


def test_fan_matches_barycentric_reference():
    t = _fan_tile()
    rng = np.random.default_rng(11)
    n = 2000
    k = rng.integers(0, 256, n)
    x = t.positions[k, 0] - rng.uniform(0, CHUNK_SIZE, n)
    y = t.positions[k, 1] - rng.uniform(0, CHUNK_SIZE, n)
    got = t.heights_at(k, x, y)
    ah = t.abs_heights.astype(np.float64)
    ref = np.empty(n)
    for i in range(n):
        v = (t.positions[k[i], 0] - x[i]) / UNIT_SIZE
        u = (t.positions[k[i], 1] - y[i]) / UNIT_SIZE
        r, c = int(v), int(u)
        v, u = v - r, u - c
        corners = {(0, 0): r * 17 + c, (0, 1): r * 17 + c + 1, (1, 0): r * 17 + c + 17, (1, 1): r * 17 + c + 18}
        # the triangle is centre + the two corners of the nearest cell edge
        if abs(v - 0.5) >= abs(u - 0.5):
            p1, p2 = ((0, 0), (0, 1)) if v < 0.5 else ((1, 0), (1, 1))
        else:
            p1, p2 = ((0, 0), (1, 0)) if u < 0.5 else ((0, 1), (1, 1))
        pa, pb, pc = np.array([0.5, 0.5]), np.array(p1, float), np.array(p2, float)
        m = np.array([[pb[0] - pa[0], pc[0] - pa[0]], [pb[1] - pa[1], pc[1] - pa[1]]])
        l1, l2 = np.linalg.solve(m, np.array([v, u]) - pa)
        h = ah[k[i], [r * 17 + 9 + c, corners[p1], corners[p2]]]
        ref[i] = (1 - l1 - l2) * h[0] + l1 * h[1] + l2 * h[2]
    assert np.allclose(got, ref, atol=1e-3)


def test_fan_normal_on_a_plane():
    # heights rising 0.5 yd per yard southwards: normal z = 1/sqrt(1 + 0.25)
    from wowgrass.formats.adt import VERTEX_ROWCOL

    h = np.broadcast_to(VERTEX_ROWCOL[:, 0] * UNIT_SIZE * 0.5, (256, 145))
    t = AdtTile.from_arrays(10, 10, heights=h)
    k = np.arange(256)
    x = t.positions[k, 0] - 7.3
    y = t.positions[k, 1] - 20.1
    nz = t.fan_normal_z(k, x, y)
    assert np.allclose(nz, 1 / np.sqrt(1.25), atol=1e-5)
    n = t.fan_normals(k[:1], x[:1], y[:1])[0]
    assert n[0] > 0 and abs(n[1]) < 1e-5        # faces north (+X) as the ground rises to the south
    flat = AdtTile.from_arrays(10, 10)
    assert np.allclose(flat.fan_normal_z(k, x, y), 1.0)


# --- corrupt input -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_file():
    return raw_adt(lambda i: [(0, 0, 1, None), (0, 0x100, 2, bytes(2048))], flags=0x8001 & ~1)


def _patch_header(data: bytes, chunk_no: int, field_ofs: int, value: int) -> bytes:
    b = bytearray(data)
    struct.pack_into("<I", b, mcnk_offsets(data)[chunk_no] + 8 + field_ofs, value)
    return bytes(b)


def test_truncation_sweep(small_file):
    data = small_file
    bounds = set(mcnk_offsets(data)[:3] + mcnk_offsets(data)[-2:])
    cuts = set(range(0, 200)) | set(range(200, len(data), 1009)) | {b + d for b in bounds for d in (-1, 0, 1, 9, 140)}
    cuts |= {len(data) - 1, len(data) - 8}
    for cut in sorted(c for c in cuts if 0 <= c < len(data)):
        with pytest.raises(FormatError):
            AdtTile.from_bytes(data[:cut], "cut.adt")


def test_n_layers_over_4(small_file):
    with pytest.raises(FormatError, match="nLayers 5 > 4"):
        AdtTile.from_bytes(_patch_header(small_file, 10, 0x0C, 5))


def test_offset_out_of_range(small_file):
    with pytest.raises(FormatError, match="MCNK 3: MCAL offset 99999 outside the chunk") as exc:
        AdtTile.from_bytes(_patch_header(small_file, 3, 0x24, 99999), "bad.adt")
    assert exc.value.path == "bad.adt" and exc.value.offset == mcnk_offsets(small_file)[3]
    with pytest.raises(FormatError, match="expected MCLY"):
        AdtTile.from_bytes(_patch_header(small_file, 4, 0x1C, 136))   # points at MCVT


def test_overlapping_subchunks(small_file):
    # MCRF declares 16 bytes: still inside the chunk but now covering MCAL's header
    b = bytearray(small_file)
    mcnk = mcnk_offsets(small_file)[6]
    ofs_refs = struct.unpack_from("<I", b, mcnk + 8 + 0x20)[0]
    struct.pack_into("<I", b, mcnk + ofs_refs + 4, 16)
    with pytest.raises(FormatError, match="MCNK 6: sub-chunks overlap"):
        AdtTile.from_bytes(bytes(b))


def test_mcal_offset_past_chunk(small_file):
    b = bytearray(small_file)
    mcnk = mcnk_offsets(small_file)[8]
    ofs_layer = struct.unpack_from("<I", b, mcnk + 8 + 0x1C)[0]
    struct.pack_into("<I", b, mcnk + ofs_layer + 8 + 16 + 8, 4000)    # layer 1 offsetInMCAL
    with pytest.raises(TruncatedError, match="MCNK 8 layer 1: alpha map at MCAL\\+4000"):
        AdtTile.from_bytes(bytes(b))
    # a compressed layer starting past MCAL
    big = raw_adt(lambda i: [(0, 0, 1, None), (0, 0x300, 2, bytes([0x80 | 127, 1]) * 33)])
    b = bytearray(big)
    mcnk = mcnk_offsets(big)[2]
    ofs_layer = struct.unpack_from("<I", b, mcnk + 8 + 0x1C)[0]
    struct.pack_into("<I", b, mcnk + ofs_layer + 8 + 16 + 8, 500)
    with pytest.raises(TruncatedError, match="MCNK 2 layer 1"):
        AdtTile.from_bytes(bytes(b), big_alpha=True)


def test_mcal_size_past_chunk(small_file):
    b = bytearray(small_file)
    mcnk = mcnk_offsets(small_file)[1]
    ofs_alpha = struct.unpack_from("<I", b, mcnk + 8 + 0x24)[0]
    struct.pack_into("<I", b, mcnk + ofs_alpha + 4, 5000)
    with pytest.raises(TruncatedError, match="MCNK 1: MCAL needs 5000 bytes"):
        AdtTile.from_bytes(bytes(b))


def test_missing_alpha_for_flagged_layer(small_file):
    with pytest.raises(FormatError, match="no MCAL"):
        AdtTile.from_bytes(_patch_header(small_file, 0, 0x24, 0))


def test_wrong_version_and_missing_chunks(small_file):
    with pytest.raises(FormatError, match="version 17"):
        AdtTile.from_bytes(small_file[:8] + struct.pack("<I", 17) + small_file[12:])
    first = mcnk_offsets(small_file)[0]
    with pytest.raises(TruncatedError, match="expected 256 MCNK chunks, found 0"):
        AdtTile.from_bytes(small_file[:first])
    with pytest.raises(FormatError, match="not an ADT file.*MVER"):
        AdtTile.from_bytes(chunk(b"MHDR", bytes(64)))
    with pytest.raises(FormatError, match="header bytes"):
        AdtTile.from_bytes(small_file[:first] + chunk(b"MCNK", bytes(40)) * 256)


def test_computed_doodad_mapping_and_dominant_layer():
    n_layers = np.full(256, 3, np.uint8)
    alpha = np.zeros((256, 4, 64, 64), np.uint8)
    alpha[0, 1, 16:24, 24:32] = 255       # cell (2, 3): layer 1 everywhere
    alpha[0, 2, 0:8, 0:5] = 200           # cell (0, 0): layer 2 on 5 of 8 columns
    alpha[0, 1, 8:16, 0:3] = 200          # cell (1, 0): layer 1 on 3 of 8 columns -> layer 0 wins
    t = AdtTile.from_arrays(0, 0, n_layers=n_layers, alpha=alpha)
    dom = t.dominant_layer()
    assert dom[0, 20, 28] == 1 and dom[0, 0, 0] == 2 and dom[0, 63, 63] == 0
    m = t.computed_doodad_mapping()
    assert m[0, 2, 3] == 1 and m[0, 0, 0] == 2 and m[0, 1, 0] == 0
    assert m[0].sum() == 3 and not m[1:].any()


def test_corrupted_headers_only_raise_format_errors(small_file):
    """Random u32 values in MCNK headers and sub-chunks: a FormatError or a tile, never another error."""
    rng = np.random.default_rng(1)
    offs = mcnk_offsets(small_file)
    values = [0, 1, 5, 8, 135, 136, 2048, 4096, 0x7FFFFFFF, 0xFFFFFFFF]
    for _ in range(150):
        b = bytearray(small_file)
        m = offs[int(rng.integers(0, 256))]
        o = m + 8 + 4 * int(rng.integers(0, 32)) if rng.random() < 0.6 else m + int(rng.integers(0, 1400))
        struct.pack_into("<I", b, o, values[int(rng.integers(0, len(values)))])
        try:
            AdtTile.from_bytes(bytes(b))
        except FormatError:
            pass
