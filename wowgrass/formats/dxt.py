"""A small vectorized DXT1/DXT3/DXT5 (BC1–BC3) encoder for the BLP writer.

Per 4×4 block: the colour endpoints come from a range fit along the block's principal axis (a few
power iterations on the colour covariance), are rounded to RGB565 and every pixel takes the nearest
of the 4 (or 3 + transparent) palette colours. DXT5 alpha uses the 8-value mode between the block's
min and max; DXT3 stores 4-bit alpha. Quality is "good enough for grass", not a production
compressor. Decoding is Pillow's C ``bcn`` decoder (see :mod:`wowgrass.formats.blp`).
"""

from __future__ import annotations

import numpy as np

DXT1_BLOCK = np.dtype([("c0", "<u2"), ("c1", "<u2"), ("bits", "<u4")])
DXT3_BLOCK = np.dtype([("alpha", "<u8"), ("c0", "<u2"), ("c1", "<u2"), ("bits", "<u4")])
DXT5_BLOCK = np.dtype([("a0", "u1"), ("a1", "u1"), ("abits", "u1", 6), ("c0", "<u2"), ("c1", "<u2"),
                       ("bits", "<u4")])
assert DXT1_BLOCK.itemsize == 8 and DXT3_BLOCK.itemsize == 16 and DXT5_BLOCK.itemsize == 16

_SHIFT2 = (2 * np.arange(16)).astype(np.uint32)
_SHIFT3 = (3 * np.arange(16)).astype(np.uint64)
_SHIFT4 = (4 * np.arange(16)).astype(np.uint64)


def to_blocks(rgba: np.ndarray) -> tuple[np.ndarray, int, int]:
    """(H, W, 4) → (N, 16, 4) blocks in row-major block order, edges replicated to a multiple of 4."""
    h, w = rgba.shape[:2]
    ph, pw = -h % 4, -w % 4
    if ph or pw:
        rgba = np.pad(rgba, ((0, ph), (0, pw), (0, 0)), mode="edge")
    bh, bw = rgba.shape[0] // 4, rgba.shape[1] // 4
    blocks = rgba.reshape(bh, 4, bw, 4, 4).transpose(0, 2, 1, 3, 4).reshape(bh * bw, 16, 4)
    return blocks, bh, bw


def _pack565(rgb):
    q = np.rint(np.clip(rgb, 0, 255) * (np.array([31, 63, 31]) / 255.0)).astype(np.uint16)
    return (q[..., 0] << 11) | (q[..., 1] << 5) | q[..., 2]


def _unpack565(c):
    c = c.astype(np.int32)
    r, g, b = (c >> 11) & 31, (c >> 5) & 63, c & 31
    return np.stack([(r << 3) | (r >> 2), (g << 2) | (g >> 4), (b << 3) | (b >> 2)], -1).astype(np.float32)


def _color_block(px: np.ndarray, mask: np.ndarray, three_colour: np.ndarray):
    """px (N,16,3) float, mask (N,16) pixels that count, three_colour (N,) blocks in 3-colour mode.

    Returns c0, c1 (N,) u2 and indices (N,16) in 0..3 (index 3 in 3-colour mode = transparent).
    """
    n = len(px)
    wsum = np.maximum(mask.sum(1, keepdims=True), 1).astype(np.float32)
    m = mask[..., None].astype(np.float32)
    mean = (px * m).sum(1) / wsum
    d = (px - mean[:, None]) * m
    cov = np.einsum("nki,nkj->nij", d, d)
    axis = np.ones((n, 3), np.float32)
    for _ in range(4):
        axis = np.einsum("nij,nj->ni", cov, axis)
        norm = np.linalg.norm(axis, axis=1, keepdims=True)
        axis = np.where(norm > 1e-6, axis / np.maximum(norm, 1e-12), np.float32(0.57735))
    t = np.einsum("nki,ni->nk", px - mean[:, None], axis)
    tmax = np.where(mask, t, -np.inf).max(1)
    tmin = np.where(mask, t, np.inf).min(1)
    tmax = np.where(np.isfinite(tmax), tmax, 0)
    tmin = np.where(np.isfinite(tmin), tmin, 0)
    c0 = _pack565(mean + tmax[:, None] * axis)
    c1 = _pack565(mean + tmin[:, None] * axis)
    # 4-colour mode needs c0 > c1, 3-colour mode c0 <= c1.
    swap = np.where(three_colour, c0 > c1, c0 < c1)
    c0, c1 = np.where(swap, c1, c0), np.where(swap, c0, c1)
    p0, p1 = _unpack565(c0), _unpack565(c1)
    pal4 = np.stack([p0, p1, (2 * p0 + p1) / 3, (p0 + 2 * p1) / 3], 1)
    pal3 = np.stack([p0, p1, (p0 + p1) / 2, np.full_like(p0, 1e9)], 1)
    pal = np.where(three_colour[:, None, None], pal3, pal4)
    dist = ((px[:, :, None, :] - pal[:, None, :, :]) ** 2).sum(-1)
    idx = dist.argmin(2).astype(np.uint32)
    idx = np.where(three_colour[:, None] & ~mask, 3, idx)
    # c0 == c1 outside 3-colour mode reads as 3-colour: index 0 is the one safe colour.
    idx = np.where(((c0 == c1) & ~three_colour)[:, None], 0, idx)
    return c0, c1, idx


def _pack_colour(out, c0, c1, idx):
    out["c0"], out["c1"] = c0, c1
    out["bits"] = (idx << _SHIFT2).sum(1, dtype=np.uint32)


def encode_dxt1(rgba: np.ndarray, alpha: bool = False) -> bytes:
    """DXT1; with ``alpha``, pixels with alpha < 128 become the transparent index (3-colour blocks)."""
    blocks, _, _ = to_blocks(rgba)
    px = blocks[..., :3].astype(np.float32)
    if alpha:
        opaque = blocks[..., 3] >= 128
        three = ~opaque.all(1)
    else:
        opaque = np.ones(blocks.shape[:2], bool)
        three = np.zeros(len(blocks), bool)
    out = np.zeros(len(blocks), DXT1_BLOCK)
    _pack_colour(out, *_color_block(px, opaque, three))
    return out.tobytes()


def _colour_for_alpha_formats(blocks, out):
    px = blocks[..., :3].astype(np.float32)
    _pack_colour(out, *_color_block(px, np.ones(blocks.shape[:2], bool), np.zeros(len(blocks), bool)))


def encode_dxt3(rgba: np.ndarray) -> bytes:
    """DXT3: explicit 4-bit alpha + a DXT1 colour block (always 4-colour)."""
    blocks, _, _ = to_blocks(rgba)
    out = np.zeros(len(blocks), DXT3_BLOCK)
    a4 = ((blocks[..., 3].astype(np.uint32) * 15 + 127) // 255).astype(np.uint64)
    out["alpha"] = (a4 << _SHIFT4).sum(1, dtype=np.uint64)
    _colour_for_alpha_formats(blocks, out)
    return out.tobytes()


def encode_dxt5(rgba: np.ndarray) -> bytes:
    """DXT5: interpolated alpha (8-value mode between block min and max) + a colour block."""
    blocks, _, _ = to_blocks(rgba)
    out = np.zeros(len(blocks), DXT5_BLOCK)
    a = blocks[..., 3].astype(np.float32)
    a0, a1 = a.max(1), a.min(1)
    # palette index 0 = a0, 1 = a1, 2..7 = (8-k)/7 * a0 + (k-1)/7 * a1 (integer division like decoders)
    w0 = np.array([7, 0, 6, 5, 4, 3, 2, 1], np.float32)
    pal = np.floor((w0[None] * a0[:, None] + (7 - w0)[None] * a1[:, None]) / 7)
    idx = np.abs(a[:, :, None] - pal[:, None, :]).argmin(2).astype(np.uint64)
    idx = np.where((a0 == a1)[:, None], 0, idx)
    bits = (idx << _SHIFT3).sum(1, dtype=np.uint64)
    out["a0"], out["a1"] = a0.astype(np.uint8), a1.astype(np.uint8)
    out["abits"] = ((bits[:, None] >> (8 * np.arange(6, dtype=np.uint64))) & 0xFF).astype(np.uint8)
    _colour_for_alpha_formats(blocks, out)
    return out.tobytes()


def decode_bcn(raw, w: int, h: int, n: int) -> np.ndarray:
    """(h, w, 4) u1 of BC1/BC2/BC3 (``n`` 1/2/3) data, as Pillow's ``bcn`` decoder gives it, in
    numpy: where Pillow is absent (Blender's Python: the extension bundles no binary wheel)."""
    dtype = (DXT1_BLOCK, DXT3_BLOCK, DXT5_BLOCK)[n - 1]
    bw, bh = max((w + 3) // 4, 1), max((h + 3) // 4, 1)
    blocks = np.frombuffer(bytes(raw), dtype, count=bw * bh)
    c = np.stack([blocks["c0"], blocks["c1"]], axis=1).astype(np.int32)          # (b, 2)
    rgb = np.stack([(c >> 11) & 31, (c >> 5) & 63, c & 31], axis=-1)           # (b, 2, 3)
    rgb = np.stack([(rgb[..., 0] << 3) | (rgb[..., 0] >> 2), (rgb[..., 1] << 2) | (rgb[..., 1] >> 4),
                    (rgb[..., 2] << 3) | (rgb[..., 2] >> 2)], axis=-1)
    c0, c1 = rgb[:, 0], rgb[:, 1]
    four = (blocks["c0"] > blocks["c1"]) | (n > 1)
    pal = np.empty((len(blocks), 4, 4), np.int32)
    pal[:, 0, :3], pal[:, 1, :3] = c0, c1
    pal[:, 2, :3] = np.where(four[:, None], (2 * c0 + c1) // 3, (c0 + c1) // 2)
    pal[:, 3, :3] = np.where(four[:, None], (c0 + 2 * c1) // 3, 0)
    pal[:, :, 3] = 255
    pal[:, 3, 3] = np.where(four, 255, 0)
    idx = (blocks["bits"][:, None] >> _SHIFT2[None]) & 3                         # (b, 16)
    px = np.take_along_axis(pal, idx[..., None].astype(np.int64), axis=1)       # (b, 16, 4)
    if n == 2:
        px[..., 3] = ((blocks["alpha"][:, None] >> _SHIFT4[None]) & 15).astype(np.int32) * 17
    elif n == 3:
        a0, a1 = blocks["a0"].astype(np.int32), blocks["a1"].astype(np.int32)
        ab = blocks["abits"].astype(np.uint64)
        bits = np.zeros(len(blocks), np.uint64)
        for k in range(6):
            bits |= ab[:, k] << np.uint64(8 * k)
        ai = ((bits[:, None] >> _SHIFT3[None]) & np.uint64(7)).astype(np.int64)
        i = np.arange(8)
        eight = (a0 > a1)[:, None]
        lerp8 = ((8 - i)[None] * a0[:, None] + (i - 1)[None] * a1[:, None]) // 7
        lerp6 = ((6 - i)[None] * a0[:, None] + (i - 1)[None] * a1[:, None]) // 5
        table = np.where(eight, lerp8, lerp6)
        table[:, 0], table[:, 1] = a0, a1
        table[:, 6] = np.where(eight[:, 0], table[:, 6], 0)
        table[:, 7] = np.where(eight[:, 0], table[:, 7], 255)
        px[..., 3] = np.take_along_axis(table, ai, axis=1)
    out = px.reshape(bh, bw, 4, 4, 4).transpose(0, 2, 1, 3, 4).reshape(bh * 4, bw * 4, 4)
    return np.ascontiguousarray(out[:h, :w].astype(np.uint8))
