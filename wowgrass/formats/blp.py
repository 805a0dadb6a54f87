"""BLP textures: BLP1 (1.x, Warcraft III heritage) and BLP2 (1.12 – 3.3.5), every mip level, to RGBA.

Both versions share one shape: a small header, 16 mip offsets and 16 mip sizes, then either a
256-entry BGRA palette (1024 bytes) or a JPEG header shared by all mips (``u32 size`` + bytes).

* BLP2 (``BLP2``, u32 type = 1, u8 colour encoding, u8 alpha depth, u8 alpha encoding, u8 has-mips,
  u32 width, u32 height): encoding 1 = palettized (8-bit indices, then the alpha plane packed at 0, 1,
  4 or 8 bits, lowest bits first), 2 = DXT (alpha encoding 0 = DXT1, with 1-bit alpha when the alpha
  depth is 1; 1 = DXT3; 7 = DXT5), 3 = raw BGRA, 0 = JPEG.
* BLP1 (``BLP1``, u32 compression 0 = JPEG / 1 = palettized, u32 alpha bits, u32 width, u32 height,
  u32 picture type, u32 has-mips). JPEG mips are the shared header + the mip's bytes, a 4-channel
  JPEG whose channels are B, G, R, A stored without colour transform (Pillow reads them as inverted
  CMYK, which is undone here).

Quirks: the palette's own alpha byte is garbage, alpha comes from the alpha plane only; a DXT1 BLP
with alpha depth 0 is opaque even where a block uses its "transparent" index (the colour is black).
Mips are decoded lazily, on first access. DXT goes through Pillow's C ``bcn`` decoder (not its BLP
plugin); the rest is numpy. See https://wowdev.wiki/BLP.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass, field

import numpy as np

from wowgrass.binary import array as bounded_array
from wowgrass.binary import need, unpack_from
from wowgrass.errors import FormatError, TruncatedError, UnsupportedError, UsageError

MAGIC_BLP1 = b"BLP1"
MAGIC_BLP2 = b"BLP2"
MAX_MIPS = 16
MAX_SIZE = 65536            # refuse absurd dimensions before allocating anything

COLOR_JPEG, COLOR_PALETTE, COLOR_DXT, COLOR_RAW = 0, 1, 2, 3
ALPHA_DXT1, ALPHA_DXT3, ALPHA_DXT5 = 0, 1, 7
DXT_BLOCK_BYTES = {"dxt1": 8, "dxt3": 16, "dxt5": 16}
BCN_N = {"dxt1": 1, "dxt3": 2, "dxt5": 3}          # Pillow bcn decoder: BC1/BC2/BC3

BLP2_HEAD = struct.Struct("<4sIBBBBII")
BLP1_HEAD = struct.Struct("<4sIIIIII")
MIP_TABLE = struct.Struct(f"<{MAX_MIPS}I{MAX_MIPS}I")
assert BLP2_HEAD.size == 20 and BLP1_HEAD.size == 28 and MIP_TABLE.size == 128
BLP2_HEADER_SIZE = BLP2_HEAD.size + MIP_TABLE.size + 1024
assert BLP2_HEADER_SIZE == 0x494


def mip_dimensions(width: int, height: int, level: int) -> tuple[int, int]:
    return max(1, width >> level), max(1, height >> level)


def mip_chain_length(width: int, height: int) -> int:
    return max(width, height).bit_length()


def expected_mip_size(encoding: str, width: int, height: int, alpha_depth: int) -> int:
    """Bytes a mip of this encoding needs (JPEG: unknown, 0)."""
    if encoding in DXT_BLOCK_BYTES:
        return ((width + 3) // 4) * ((height + 3) // 4) * DXT_BLOCK_BYTES[encoding]
    n = width * height
    if encoding == "palette":
        return n + (n * alpha_depth + 7) // 8
    if encoding == "raw":
        return 4 * n
    return 0


class _Mips:
    """A read-only sequence of decoded mips; each one decoded on first access."""

    def __init__(self, image: "BlpImage"):
        self._image = image

    def __len__(self):
        return self._image.mip_count

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if -len(self) <= i < 0:
            i += len(self)
        return self._image.mip(i)

    def __iter__(self):
        return (self[i] for i in range(len(self)))


@dataclass(eq=False)
class BlpImage:
    """A parsed BLP header; pixels come from :meth:`mip` / ``mips[i]`` as (H, W, 4) uint8 RGBA."""

    version: int                 # 1 or 2
    width: int
    height: int
    encoding: str                # "palette" | "dxt1" | "dxt3" | "dxt5" | "raw" | "jpeg"
    alpha_depth: int             # 0, 1, 4, 8
    alpha_encoding: int
    has_mips: bool
    mip_offsets: tuple
    mip_sizes: tuple
    data: bytes = field(repr=False)
    palette: np.ndarray | None = field(default=None, repr=False)   # (256, 4) u1 BGRA
    jpeg_header: bytes = field(default=b"", repr=False)
    path: str | None = None
    _cache: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_bytes(cls, data, path: str | None = None) -> "BlpImage":
        """Parse a BLP1/BLP2 header (pixels are decoded per mip on demand)."""
        return _parse_blp(data, path)

    @property
    def mip_count(self) -> int:
        if not self.has_mips:
            return 1
        n = 0
        for off, size in zip(self.mip_offsets[: mip_chain_length(self.width, self.height)], self.mip_sizes):
            if off == 0 or size == 0:
                break
            n += 1
        return max(n, 1)

    @property
    def mips(self) -> _Mips:
        return _Mips(self)

    @property
    def rgba(self) -> np.ndarray:
        return self.mip(0)

    def mip_size(self, level: int) -> tuple[int, int]:
        """(width, height) of mip ``level``."""
        return mip_dimensions(self.width, self.height, level)

    def mip(self, level: int = 0) -> np.ndarray:
        """Mip ``level`` as an (H, W, 4) uint8 RGBA array (decoded once, then cached)."""
        if not 0 <= level < self.mip_count:
            raise UsageError(f"{self.path or 'BLP'}: mip {level} does not exist (0..{self.mip_count - 1})")
        out = self._cache.get(level)
        if out is None:
            out = self._decode(level)
            out.setflags(write=False)
            self._cache[level] = out
        return out

    def image(self, level: int = 0):
        """Mip ``level`` as a Pillow RGBA image."""
        from PIL import Image

        return Image.fromarray(np.ascontiguousarray(self.mip(level)), "RGBA")

    def info(self) -> dict:
        return {
            "path": self.path, "version": self.version, "width": self.width, "height": self.height,
            "encoding": self.encoding, "alpha_depth": self.alpha_depth,
            "alpha_encoding": self.alpha_encoding, "mips": self.mip_count,
            "mip_levels": [{"level": i, "width": self.mip_size(i)[0], "height": self.mip_size(i)[1],
                            "offset": self.mip_offsets[i], "size": self.mip_sizes[i]}
                           for i in range(self.mip_count)],
        }

    # -- decoding --
    def _mip_bytes(self, level):
        off, size = self.mip_offsets[level], self.mip_sizes[level]
        w, h = self.mip_size(level)
        need(self.data, off, size, f"BLP mip {level} ({w}×{h})", self.path)
        want = expected_mip_size(self.encoding, w, h, self.alpha_depth)
        if size < want:
            raise TruncatedError(f"BLP mip {level} ({w}×{h} {self.encoding}): expected {want} bytes, "
                                 f"header says {size}", path=self.path, offset=off)
        return self.data[off:off + (want or size)]

    def _decode(self, level):
        raw = self._mip_bytes(level)
        w, h = self.mip_size(level)
        if self.encoding in BCN_N:
            return _decode_dxt(raw, w, h, self.encoding, opaque=self.encoding == "dxt1" and self.alpha_depth == 0)
        if self.encoding == "palette":
            return _decode_palette(raw, w, h, self.palette, self.alpha_depth)
        if self.encoding == "raw":
            bgra = np.frombuffer(raw, "u1").reshape(h, w, 4)
            out = bgra[..., [2, 1, 0, 3]].copy()
            if self.alpha_depth == 0:
                out[..., 3] = 255
            return out
        return self._decode_jpeg(raw, w, h, level)

    def _decode_jpeg(self, raw, w, h, level):
        from PIL import Image

        try:
            with Image.open(io.BytesIO(self.jpeg_header + bytes(raw))) as im:
                # the JPEG's own size is checked before its pixels are allocated
                if im.size != (w, h):
                    raise FormatError(f"BLP mip {level}: JPEG is {im.size[0]}×{im.size[1]}, expected {w}×{h}",
                                      path=self.path, offset=self.mip_offsets[level])
                im.load()
                arr = np.asarray(im)
                mode = im.mode
        except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:
            if isinstance(exc, FormatError):
                raise
            raise FormatError(f"BLP mip {level}: bad JPEG data ({exc})", path=self.path,
                              offset=self.mip_offsets[level]) from None
        out = np.empty((h, w, 4), "u1")
        if mode == "CMYK":
            # Pillow assumes Adobe-inverted CMYK; BLP stores B, G, R, A plainly.
            bgra = 255 - arr
            out[..., :3] = bgra[..., 2::-1]
            out[..., 3] = bgra[..., 3] if self.alpha_depth else 255
        elif mode == "RGB":
            out[..., :3] = arr[..., ::-1]          # channels are B, G, R
            out[..., 3] = 255
        elif mode == "L":
            out[..., :3] = arr[..., None]
            out[..., 3] = 255
        else:
            raise UnsupportedError(f"BLP mip {level}: JPEG mode {mode}", path=self.path)
        return out


def _decode_dxt(raw, w, h, encoding, opaque):
    try:
        from PIL import Image
    except ImportError:   # Blender's Python (the extension bundles no binary wheel): numpy's decode
        from .dxt import decode_bcn

        out = decode_bcn(raw, w, h, BCN_N[encoding])
    else:
        out = np.array(Image.frombytes("RGBA", (w, h), bytes(raw), "bcn", BCN_N[encoding]))
    if opaque:
        out[..., 3] = 255
    return out


def _decode_palette(raw, w, h, palette, alpha_depth):
    n = w * h
    idx = np.frombuffer(raw, "u1", count=n)
    # BGRA palette → an RGBA lookup of u32s: one gather per pixel instead of per channel.
    lut = np.ascontiguousarray(palette[:, [2, 1, 0, 3]]).view("<u4").ravel()
    out = lut[idx].view("u1").reshape(n, 4)
    if alpha_depth == 0:
        out[:, 3] = 255
    else:
        packed = np.frombuffer(raw, "u1", offset=n, count=(n * alpha_depth + 7) // 8)
        if alpha_depth == 8:
            out[:, 3] = packed
        elif alpha_depth == 1:
            out[:, 3] = np.unpackbits(packed, bitorder="little")[:n] * np.uint8(255)
        else:  # 4: low nibble first
            nib = np.empty(packed.size * 2, "u1")
            nib[0::2] = packed & 0x0F
            nib[1::2] = packed >> 4
            out[:, 3] = nib[:n] * np.uint8(17)
    return out.reshape(h, w, 4)


def read_blp(data, path: str | None = None) -> BlpImage:
    """:meth:`BlpImage.from_bytes` by its old name (docs/architecture.md promised it)."""
    return BlpImage.from_bytes(data, path)


def _parse_blp(data, path: str | None) -> BlpImage:
    data = bytes(data)
    need(data, 0, 4, "BLP magic", path)
    magic = data[:4]
    if magic == MAGIC_BLP2:
        _m, kind, color, alpha_depth, alpha_enc, has_mips, w, h = unpack_from(
            BLP2_HEAD.format, data, 0, "BLP2 header", path)
        version, table_at = 2, BLP2_HEAD.size
        if kind != 1:
            raise UnsupportedError(f"BLP2 type {kind} (expected 1)", path=path, offset=4)
        if color == COLOR_PALETTE:
            encoding = "palette"
        elif color == COLOR_DXT:
            encoding = {ALPHA_DXT1: "dxt1", ALPHA_DXT3: "dxt3", ALPHA_DXT5: "dxt5"}.get(alpha_enc)
            if encoding is None:
                raise UnsupportedError(f"BLP2 DXT alpha encoding {alpha_enc} (known: 0 DXT1, 1 DXT3, 7 DXT5)",
                                       path=path, offset=10)
        elif color == COLOR_RAW:
            encoding = "raw"
        elif color == COLOR_JPEG:
            encoding = "jpeg"
        else:
            raise UnsupportedError(f"BLP2 colour encoding {color} (known: 0 JPEG, 1 palette, 2 DXT, 3 raw)",
                                   path=path, offset=8)
    elif magic == MAGIC_BLP1:
        _m, compression, alpha_depth, w, h, _pic_type, has_mips = unpack_from(
            BLP1_HEAD.format, data, 0, "BLP1 header", path)
        version, table_at, alpha_enc = 1, BLP1_HEAD.size, 0
        if compression == 0:
            encoding = "jpeg"
        elif compression == 1:
            encoding = "palette"
        else:
            raise UnsupportedError(f"BLP1 compression {compression} (known: 0 JPEG, 1 palette)",
                                   path=path, offset=4)
    else:
        raise FormatError(f"not a BLP: magic {magic!r}", path=path, offset=0)
    if alpha_depth not in (0, 1, 4, 8) and encoding == "raw":
        # BGRA pixels carry their own alpha; the client only asks "any alpha?" of the byte, and
        # files in the wild hold values like 136
        alpha_depth = 8
    elif alpha_depth not in (0, 1, 4, 8):
        raise UnsupportedError(f"BLP alpha depth {alpha_depth} (known: 0, 1, 4, 8)", path=path,
                               offset=9 if version == 2 else 8)
    if not (0 < w <= MAX_SIZE and 0 < h <= MAX_SIZE):
        raise FormatError(f"BLP size {w}×{h} outside 1..{MAX_SIZE}", path=path, offset=table_at - 8)
    table = unpack_from(MIP_TABLE.format, data, table_at, "BLP mip table", path)
    rest = table_at + MIP_TABLE.size
    palette, jpeg_header = None, b""
    if encoding == "jpeg":
        (jsize,) = unpack_from("<I", data, rest, "BLP JPEG header size", path)
        need(data, rest + 4, jsize, "BLP JPEG header", path)
        jpeg_header = data[rest + 4:rest + 4 + jsize]
    elif encoding == "palette" or version == 2:
        palette = bounded_array(data, rest, 1024, "u1", "BLP palette", path).reshape(256, 4)
    img = BlpImage(version, w, h, encoding, alpha_depth, alpha_enc, bool(has_mips),
                   table[:MAX_MIPS], table[MAX_MIPS:], data, palette, jpeg_header, path)
    if img.mip_offsets[0] == 0 or img.mip_sizes[0] == 0:
        raise FormatError("BLP has no mip 0 (offset or size is 0)", path=path, offset=table_at)
    for i in range(img.mip_count):
        need(data, img.mip_offsets[i], img.mip_sizes[i], f"BLP mip {i}", path)
    return img


# -- writing -------------------------------------------------------------------------------------

def _downsample(rgba: np.ndarray) -> np.ndarray:
    from PIL import Image

    h, w = rgba.shape[:2]
    im = Image.fromarray(np.ascontiguousarray(rgba), "RGBA")
    return np.asarray(im.resize((max(1, w // 2), max(1, h // 2)), Image.Resampling.BOX))


def build_mips(rgba: np.ndarray, mipmaps: bool = True) -> list[np.ndarray]:
    """Mip 0 plus box-filtered halvings down to 1×1 (alpha-weighted by Pillow's resize)."""
    mips = [rgba]
    while mipmaps and max(mips[-1].shape[:2]) > 1 and len(mips) < MAX_MIPS:
        mips.append(_downsample(mips[-1]))
    return mips


def write_blp(rgba, encoding: str = "dxt1", mipmaps: bool = True, *, alpha_depth: int | None = None) -> bytes:
    """Encode an (H, W, 4) (or (H, W, 3)) uint8 image as BLP2.

    ``encoding``: ``dxt1`` (1-bit alpha where any pixel is below 128), ``dxt3``, ``dxt5``, ``palette``
    (Pillow's quantizer, alpha plane of ``alpha_depth`` bits: chosen from the data when None) or
    ``raw`` (BGRA). ``mipmaps`` writes the full chain down to 1×1.
    """
    from wowgrass.formats import dxt

    rgba = np.asarray(rgba)
    if rgba.dtype != np.uint8 or rgba.ndim != 3 or rgba.shape[2] not in (3, 4):
        raise UsageError(f"write_blp needs an (H, W, 4) uint8 array, got {rgba.shape} {rgba.dtype}")
    if rgba.shape[2] == 3:
        rgba = np.concatenate([rgba, np.full(rgba.shape[:2] + (1,), 255, np.uint8)], axis=2)
    h, w = rgba.shape[:2]
    if not (0 < w <= MAX_SIZE and 0 < h <= MAX_SIZE):
        raise UsageError(f"BLP size {w}×{h} outside 1..{MAX_SIZE}")
    alpha = rgba[..., 3]
    opaque = bool((alpha == 255).all())
    binary = bool(np.isin(alpha, (0, 255)).all())
    mips = build_mips(rgba, mipmaps)
    palette = np.zeros((256, 4), np.uint8)

    if encoding == "dxt1":
        color, a_enc = COLOR_DXT, ALPHA_DXT1
        depth = 0 if opaque else 1
        blobs = [dxt.encode_dxt1(m, alpha=depth == 1) for m in mips]
    elif encoding in ("dxt3", "dxt5"):
        color, depth = COLOR_DXT, 8
        a_enc = ALPHA_DXT3 if encoding == "dxt3" else ALPHA_DXT5
        enc = dxt.encode_dxt3 if encoding == "dxt3" else dxt.encode_dxt5
        blobs = [enc(m) for m in mips]
    elif encoding == "raw":
        color, a_enc, depth = COLOR_RAW, 8, 0 if opaque else 8
        blobs = [np.ascontiguousarray(m[..., [2, 1, 0, 3]]).tobytes() for m in mips]
    elif encoding == "palette":
        color, a_enc = COLOR_PALETTE, 8
        depth = alpha_depth if alpha_depth is not None else (0 if opaque else 1 if binary else 8)
        if depth not in (0, 1, 4, 8):
            raise UsageError(f"alpha depth {depth} (use 0, 1, 4 or 8)")
        palette, blobs = _encode_palette(mips, depth)
    else:
        raise UsageError(f"unknown BLP encoding {encoding!r} (dxt1, dxt3, dxt5, palette, raw)")

    offsets, sizes, pos = [0] * MAX_MIPS, [0] * MAX_MIPS, BLP2_HEADER_SIZE
    for i, b in enumerate(blobs):
        offsets[i], sizes[i] = pos, len(b)
        pos += len(b)
    head = BLP2_HEAD.pack(MAGIC_BLP2, 1, color, depth, a_enc, 1 if mipmaps else 0, w, h)
    return b"".join([head, MIP_TABLE.pack(*offsets, *sizes), palette.tobytes(), *blobs])


def _encode_palette(mips, depth):
    from PIL import Image

    base = Image.fromarray(np.ascontiguousarray(mips[0][..., :3]), "RGB")
    q = base.quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    pal_rgb = np.array(q.getpalette()[: 256 * 3], np.uint8)
    pal_rgb = np.pad(pal_rgb, (0, 768 - pal_rgb.size)).reshape(256, 3)
    palette = np.zeros((256, 4), np.uint8)
    palette[:, :3] = pal_rgb[:, ::-1]
    blobs = []
    for i, m in enumerate(mips):
        if i == 0:
            idx = np.asarray(q, np.uint8)
        else:
            im = Image.fromarray(np.ascontiguousarray(m[..., :3]), "RGB")
            idx = np.asarray(im.quantize(palette=q, dither=Image.Dither.NONE), np.uint8)
        a = m[..., 3].ravel()
        if depth == 0:
            plane = b""
        elif depth == 8:
            plane = a.tobytes()
        elif depth == 1:
            plane = np.packbits(a >= 128, bitorder="little").tobytes()
        else:
            nib = (a.astype(np.uint16) * 15 + 127) // 255
            nib = np.pad(nib, (0, nib.size % 2)).astype(np.uint8)
            plane = (nib[0::2] | (nib[1::2] << 4)).tobytes()
        blobs.append(idx.tobytes() + plane)
    return palette, blobs


def sniff(prefix: bytes) -> bool:
    """True for bytes that start like a BLP1 or BLP2."""
    return prefix[:4] in (MAGIC_BLP1, MAGIC_BLP2)
