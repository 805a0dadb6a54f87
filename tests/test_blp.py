"""BLP reader/writer: real files, hand-built BLP1/BLP2 bytes, writer round trips, DXT error, bad input."""

from __future__ import annotations

import io
import struct

import numpy as np
import pytest
from PIL import Image

from wowgrass.errors import FormatError, TruncatedError, UnsupportedError, UsageError
from wowgrass.formats import dxt
from wowgrass.formats.blp import BLP2_HEADER_SIZE, BlpImage, sniff, write_blp


def real(realdata, name):
    p = realdata / "blp" / name
    return BlpImage.from_bytes(p.read_bytes(), str(p))


def gradient(w=64, h=64, alpha="ramp"):
    y, x = np.mgrid[0:h, 0:w]
    a = {"ramp": (x * 255 // max(w - 1, 1)), "opaque": np.full_like(x, 255),
         "binary": np.where((x // 4 + y // 4) % 2 == 0, 255, 0)}[alpha]
    return np.stack([x * 255 // max(w - 1, 1), y * 255 // max(h - 1, 1), (x + y) * 127 // max(w + h - 2, 1), a],
                    -1).astype(np.uint8)


# -- real files ----------------------------------------------------------------------------------

def test_white8x8_exact_pixel(realdata):
    img = real(realdata, "WHITE8X8.blp")
    assert (img.version, img.encoding, img.alpha_depth, img.width, img.height) == (2, "dxt1", 0, 8, 8)
    assert img.mip(0).shape == (8, 8, 4)
    for level in range(img.mip_count):
        px = img.mip(level)
        assert (px == (255, 251, 255, 255)).all(), level
    png = np.asarray(Image.open(realdata / "blp" / "WHITE8X8.png").convert("RGBA"))
    np.testing.assert_array_equal(png, img.mip(0))


def test_dxt1_one_bit_alpha(realdata):
    img = real(realdata, "dxt1a.blp")
    assert (img.encoding, img.alpha_depth, img.width, img.height) == ("dxt1", 1, 16, 16)
    a = img.mip(0)[..., 3]
    assert set(np.unique(a)) == {0, 255}
    # transparent texels of 3-colour blocks decode to black
    assert (img.mip(0)[a == 0][:, :3] == 0).all()


@pytest.mark.parametrize(("name", "depth", "size"), [("pala1.blp", 1, (32, 32)), ("pala8.blp", 8, (128, 64))])
def test_palettized(realdata, name, depth, size):
    img = real(realdata, name)
    assert (img.encoding, img.alpha_depth, (img.width, img.height)) == ("palette", depth, size)
    m0 = img.mip(0)
    assert m0.shape == (size[1], size[0], 4)
    assert img.mip_count == max(size).bit_length()
    assert img.mips[-1].shape == (1, 1, 4)
    # colours agree with Pillow's own BLP plugin (its alpha is known wrong, so only RGB is compared)
    pil = np.asarray(Image.open(realdata / "blp" / name).convert("RGBA"))
    np.testing.assert_array_equal(pil[..., :3], m0[..., :3])
    # the alpha plane's bit order is right if mip 1 looks like mip 0 halved
    h, w = img.mip(1).shape[:2]
    halved = m0[..., 3].astype(float).reshape(h, 2, w, 2).mean((1, 3))
    assert np.corrcoef(halved.ravel(), img.mip(1)[..., 3].ravel().astype(float))[0, 1] > 0.9
    if depth == 1:
        assert set(np.unique(m0[..., 3])) <= {0, 255}


def test_rabbit_skin_dxt3(realdata):
    p = realdata / "m2" / "v264" / "RabbitSkin.blp"
    img = BlpImage.from_bytes(p.read_bytes(), str(p))
    assert (img.encoding, img.width, img.height, img.mip_count) == ("dxt3", 128, 128, 8)
    assert [m.shape[:2] for m in img.mips] == [(128 >> i, 128 >> i) for i in range(8)]
    assert set(np.unique(img.mip(0)[..., 3])) <= set(range(0, 256, 17))   # 4-bit explicit alpha


def test_mips_are_lazy(realdata):
    img = real(realdata, "pala8.blp")
    assert img._cache == {}
    img.mip(2)
    assert list(img._cache) == [2]
    assert img.mips[2] is img.mip(2)
    with pytest.raises(UsageError):
        img.mip(img.mip_count)


# -- hand-built bytes ----------------------------------------------------------------------------

def blp2_header(color, alpha_depth, alpha_enc, w, h, sizes, palette=b"\0" * 1024, has_mips=None):
    offs, pos = [], BLP2_HEADER_SIZE
    for s in sizes:
        offs.append(pos)
        pos += s
    offs += [0] * (16 - len(offs))
    sz = list(sizes) + [0] * (16 - len(sizes))
    has = (1 if len(sizes) > 1 else 0) if has_mips is None else has_mips
    return struct.pack("<4sIBBBBII", b"BLP2", 1, color, alpha_depth, alpha_enc, has, w, h) + \
        struct.pack("<16I16I", *offs, *sz) + palette


def test_hand_built_palette_4bit_alpha():
    # 2×2, palette entries BGRA; indices 0,1,2,3; 4-bit alpha nibbles (low first): 0, 5, 10, 15
    pal = bytearray(1024)
    pal[0:16] = bytes([255, 0, 0, 9, 0, 255, 0, 9, 0, 0, 255, 9, 10, 20, 30, 9])
    body = bytes([0, 1, 2, 3]) + bytes([0x50, 0xF0 | 0x0A])
    img = BlpImage.from_bytes(blp2_header(1, 4, 8, 2, 2, [6], bytes(pal)) + body)
    px = img.mip(0)
    np.testing.assert_array_equal(px.reshape(4, 4), [[0, 0, 255, 0], [0, 255, 0, 85], [255, 0, 0, 170],
                                                     [30, 20, 10, 255]])


def test_hand_built_raw_bgra():
    body = bytes([1, 2, 3, 4, 5, 6, 7, 8])                    # 2×1 BGRA
    px = BlpImage.from_bytes(blp2_header(3, 8, 8, 2, 1, [8]) + body).mip(0)
    np.testing.assert_array_equal(px, [[[3, 2, 1, 4], [7, 6, 5, 8]]])
    px = BlpImage.from_bytes(blp2_header(3, 0, 8, 2, 1, [8]) + body).mip(0)
    assert (px[..., 3] == 255).all()


def test_hand_built_dxt5_block():
    # alpha a0=255 a1=0, all indices 1 (→ a1 = 0); colour c0=0xF800 (red) c1=0, indices 0
    abits = sum(1 << (3 * i) for i in range(16)).to_bytes(6, "little")
    block = bytes([255, 0]) + abits + struct.pack("<HHI", 0xF800, 0, 0)
    px = BlpImage.from_bytes(blp2_header(2, 8, 7, 4, 4, [16]) + block).mip(0)
    assert (px == (255, 0, 0, 0)).all()


def blp1(compression, alpha_bits, w, h, mips, extra: bytes, has_mips=1):
    head_len = 28 + 128 + len(extra)
    offs, pos = [], head_len
    for m in mips:
        offs.append(pos)
        pos += len(m)
    offs += [0] * (16 - len(mips))
    sizes = [len(m) for m in mips] + [0] * (16 - len(mips))
    return struct.pack("<4sIIIIII", b"BLP1", compression, alpha_bits, w, h, 4, has_mips) + \
        struct.pack("<16I16I", *offs, *sizes) + extra + b"".join(mips)


def test_blp1_palettized():
    pal = bytearray(1024)
    pal[4:8] = bytes([10, 20, 30, 0])                          # index 1 = RGB (30, 20, 10)
    data = blp1(1, 8, 2, 1, [bytes([1, 0, 200, 100])], bytes(pal), has_mips=0)
    img = BlpImage.from_bytes(data)
    assert (img.version, img.encoding, img.mip_count) == (1, "palette", 1)
    np.testing.assert_array_equal(img.mip(0), [[[30, 20, 10, 200], [0, 0, 0, 100]]])


def test_blp1_jpeg():
    # Channels stored are B, G, R, A without transform; Pillow writes CMYK inverted, so store 255 - x.
    w = h = 16
    rgba = np.zeros((h, w, 4), np.uint8)
    rgba[..., 0], rgba[..., 1], rgba[..., 2], rgba[..., 3] = 200, 100, 40, 180
    rgba[8:, :, :3] = (20, 220, 120)
    bgra = rgba[..., [2, 1, 0, 3]]
    mips = []
    for level in range(2):
        src = bgra if level == 0 else bgra[::2, ::2]
        buf = io.BytesIO()
        Image.fromarray(np.ascontiguousarray(255 - src), "CMYK").save(buf, "JPEG", quality=100)
        mips.append(buf.getvalue())
    # the shared header: the longest common prefix of the two JPEG streams
    k = 0
    while mips[0][k] == mips[1][k]:
        k += 1
    header = mips[0][:k]
    data = blp1(0, 8, w, h, [m[k:] for m in mips], struct.pack("<I", k) + header)
    img = BlpImage.from_bytes(data)
    assert img.encoding == "jpeg" and img.mip_count == 2
    got = img.mip(0).astype(int)
    assert np.abs(got - rgba).max() <= 6
    assert np.abs(img.mip(1).astype(int) - rgba[::2, ::2]).max() <= 6



@pytest.mark.parametrize("size", [(40000, 40000), (64, 16)])
def test_blp1_jpeg_size_mismatch_is_refused_before_decoding(size):
    # a JPEG whose frame header claims another size (a decompression bomb at 40000²) is a FormatError
    buf = io.BytesIO()
    Image.fromarray(np.zeros((16, 16, 3), np.uint8), "RGB").save(buf, "JPEG")
    jpeg = bytearray(buf.getvalue())
    sof = jpeg.find(b"\xff\xc0")
    struct.pack_into(">HH", jpeg, sof + 5, size[1], size[0])
    data = blp1(0, 8, 16, 16, [bytes(jpeg[4:])], struct.pack("<I", 4) + bytes(jpeg[:4]), has_mips=0)
    img = BlpImage.from_bytes(data, "bomb.blp")
    with pytest.raises(FormatError, match="bomb.blp.*mip 0"):
        img.mip(0)

# -- writer --------------------------------------------------------------------------------------

@pytest.mark.parametrize("encoding", ["dxt1", "dxt3", "dxt5", "palette", "raw"])
def test_write_round_trip(encoding):
    src = gradient(alpha="binary" if encoding == "dxt1" else "ramp")
    img = BlpImage.from_bytes(write_blp(src, encoding))
    assert (img.width, img.height, img.mip_count) == (64, 64, 7)
    assert img.encoding == encoding
    out = img.mip(0).astype(int)
    if encoding == "raw":
        np.testing.assert_array_equal(out, src)
        return
    opaque = src[..., 3] >= 128
    rgb_err = np.abs(out - src)[..., :3][opaque if encoding == "dxt1" else slice(None)]
    assert rgb_err.mean() < 4 and rgb_err.max() <= 24
    a_err = np.abs(out[..., 3] - src[..., 3])
    limit = {"dxt1": 0, "dxt3": 8, "dxt5": 5, "palette": 0}[encoding]
    assert a_err.max() <= limit
    assert img.mips[-1].shape == (1, 1, 4)


def test_write_opaque_and_odd_sizes():
    src = gradient(24, 10, "opaque")
    for enc in ("dxt1", "dxt5", "palette", "raw"):
        img = BlpImage.from_bytes(write_blp(src, enc))
        assert img.alpha_depth in (0, 8) and (img.mip(0)[..., 3] == 255).all()
        assert [m.shape[:2] for m in img.mips] == [(10, 24), (5, 12), (2, 6), (1, 3), (1, 1)]
    img = BlpImage.from_bytes(write_blp(src, "dxt1", mipmaps=False))
    assert img.mip_count == 1 and not img.has_mips


@pytest.mark.parametrize("depth", [0, 1, 4, 8])
def test_write_palette_alpha_depths(depth):
    src = gradient(alpha="ramp")
    img = BlpImage.from_bytes(write_blp(src, "palette", alpha_depth=depth))
    a = img.mip(0)[..., 3].astype(int)
    want = {0: np.full_like(a, 255), 1: np.where(src[..., 3] >= 128, 255, 0),
            4: (src[..., 3].astype(int) * 15 + 127) // 255 * 17, 8: src[..., 3]}[depth]
    np.testing.assert_array_equal(a, want)


def test_dxt_encode_error_on_noise_and_flat():
    rng = np.random.default_rng(7)
    flat = np.zeros((32, 32, 4), np.uint8)
    flat[...] = (37, 190, 90, 255)
    got = BlpImage.from_bytes(write_blp(flat, "dxt5")).mip(0).astype(int)
    assert np.abs(got - flat).max() <= 4
    smooth = gradient(128, 128)
    smooth[..., :3] = np.clip(smooth[..., :3].astype(int) + rng.integers(-6, 7, smooth[..., :3].shape), 0, 255)
    got = BlpImage.from_bytes(write_blp(smooth, "dxt5")).mip(0).astype(int)
    err = np.abs(got - smooth)
    assert err[..., :3].mean() < 6 and err[..., 3].max() <= 5


def test_dxt_block_order():
    blocks, bh, bw = dxt.to_blocks(np.arange(8 * 4 * 4, dtype=np.uint8).reshape(4, 8, 4))
    assert (bh, bw) == (1, 2)
    np.testing.assert_array_equal(blocks[1, 0], [16, 17, 18, 19])     # pixel (0, 4)


def test_writer_rejects():
    with pytest.raises(UsageError):
        write_blp(np.zeros((4, 4, 4), np.uint8), "dxt2")
    with pytest.raises(UsageError):
        write_blp(np.zeros((4, 4), np.uint8))
    with pytest.raises(UsageError):
        write_blp(np.zeros((4, 4, 4), np.uint8), "palette", alpha_depth=3)


# -- bad input -----------------------------------------------------------------------------------

@pytest.mark.parametrize("encoding", ["dxt1", "dxt5", "palette", "raw"])
def test_truncation_sweep(encoding):
    data = write_blp(gradient(8, 8), encoding)
    for n in range(len(data)):
        with pytest.raises(FormatError):
            img = BlpImage.from_bytes(data[:n])
            for m in img.mips:
                pass


def test_mip_size_smaller_than_needed():
    data = bytearray(write_blp(gradient(8, 8), "dxt5", mipmaps=False))
    struct.pack_into("<I", data, 20 + 64, 40)                 # mip 0 size 40 instead of 64
    img = BlpImage.from_bytes(bytes(data))
    with pytest.raises(TruncatedError, match="expected 64"):
        img.mip(0)


@pytest.mark.parametrize(("offset", "value", "match"), [
    (8, 9, "colour encoding"),          # BLP2 colour encoding
    (10, 5, "alpha encoding"),          # DXT alpha encoding
    (9, 3, "alpha depth"),
    (4, 0, "type"),
])
def test_unknown_encodings(offset, value, match):
    data = bytearray(write_blp(gradient(8, 8), "dxt5"))
    data[offset] = value
    with pytest.raises(UnsupportedError, match=match):
        BlpImage.from_bytes(bytes(data), "x.blp")


def test_bad_magic_and_blp1_compression():
    with pytest.raises(FormatError, match="not a BLP"):
        BlpImage.from_bytes(b"BLP0" + b"\0" * 200, "x.blp")
    data = blp1(2, 0, 1, 1, [b"\0"], b"\0" * 1024)
    with pytest.raises(UnsupportedError, match="compression"):
        BlpImage.from_bytes(data)
    with pytest.raises(FormatError, match="size"):
        BlpImage.from_bytes(blp2_header(2, 0, 0, 0, 4, [8]) + b"\0" * 8)
    assert sniff(b"BLP2") and sniff(b"BLP1") and not sniff(b"MD20")
