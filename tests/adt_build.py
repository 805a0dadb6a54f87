"""Test helpers for ADT/WDT: small generated tiles (through wowgrass's writer) and an independent
byte builder that uses only ``struct`` (no wowgrass.formats), so the reader is checked against
bytes it did not produce."""

from __future__ import annotations

import struct

import numpy as np

from wowgrass.formats.adt import AdtTile


def generated_tile(encoding: int = 1, *, seed: int = 0, col: int = 31, row: int = 47, fix: bool = False,
                   mccv: bool = False) -> AdtTile:
    """A tile with 1–4 layers per chunk whose layers use ``encoding`` (1 4-bit, 2 8-bit, 3 compressed,
    23 = a mix of 8-bit and compressed). With 4-bit and ``fix`` False, chunks carry flag 0x8000."""
    rng = np.random.default_rng(seed)
    n_layers = rng.integers(1, 5, 256).astype(np.uint8)
    n_layers[0] = 4
    exists = np.arange(4)[None, :] < n_layers[:, None]
    enc = np.zeros((256, 4), np.uint8)
    if encoding == 23:
        enc[:, 1:] = rng.choice([2, 3], size=(256, 3))
    else:
        enc[:, 1:] = encoding
    enc[~exists] = 0
    # smooth-ish alpha with runs so RLE has something to compress
    yy, xx = np.mgrid[0:64, 0:64]
    alpha = np.zeros((256, 4, 64, 64), np.uint8)
    phase = rng.uniform(0, 6.3, (256, 4))
    for k in range(1, 4):
        wave = (np.sin(xx[None] / 7.0 + phase[:, k, None, None]) + np.cos(yy[None] / 5.0)) * 0.25 + 0.5
        a = np.clip(wave * 255 / 3, 0, 85).astype(np.uint8)
        a[:, :, :20] = 0
        alpha[:, k] = a
    alpha[:, :, 40:44, :] = rng.integers(0, 80, (256, 4, 4, 64), dtype=np.uint8)   # noise rows
    if encoding == 1:
        alpha = (np.round(alpha / 17.0) * 17).astype(np.uint8)
        if fix:
            alpha[:, :, :, 63] = alpha[:, :, :, 62]
            alpha[:, :, 63, :] = alpha[:, :, 62, :]
    alpha[enc == 0] = 0
    flags = np.full(256, 0x1, np.uint32)                       # has MCSH
    if not fix:
        flags |= 0x8000
    if mccv:
        flags |= 0x40
    shadow = rng.random((256, 64, 64)) < 0.2
    if fix:
        shadow[:, :, 63] = shadow[:, :, 62]
        shadow[:, 63, :] = shadow[:, 62, :]
    i = np.arange(256)
    abs_h = (100 + 20 * np.sin(i[:, None] / 9.0) + rng.normal(0, 2, (256, 145))).astype(np.float32)
    kwargs = {}
    if mccv:
        kwargs["mccv"] = rng.integers(0, 256, (256, 145, 4), dtype=np.uint8)
    return AdtTile.from_arrays(
        col, row, abs_heights=abs_h, alpha_encoding=enc,
        textures=["tileset\\a.blp", "tileset\\b.blp", "tileset\\c.blp", "tileset\\d.blp"],
        models=["world\\tree.m2"], n_layers=n_layers,
        layer_texture=np.where(exists, rng.integers(0, 4, (256, 4)), -1).astype(np.int32),
        layer_effect=np.where(exists, rng.choice([0, 453, 1493, 7043], (256, 4)), 0).astype(np.uint32),
        alpha=alpha, chunk_flags=flags, shadow=shadow, area_id=np.full(256, 12, np.uint32),
        holes=np.where(i % 50 == 7, 0x0021, 0).astype(np.uint16),
        doodad_mapping=(rng.integers(0, 4, (256, 8, 8)) % np.maximum(n_layers, 1)[:, None, None]).astype(np.uint8),
        no_effect_doodad=rng.random((256, 8, 8)) < 0.05,
        normals=rng.integers(-127, 128, (256, 145, 3), dtype=np.int8),
        **kwargs)


# --- independent byte builder ---------------------------------------------------------------------
def chunk(tag: bytes, payload: bytes, size: int | None = None) -> bytes:
    return tag[::-1] + struct.pack("<I", len(payload) if size is None else size) + payload


def raw_adt(chunk_layers, *, flags=0x8000, holes=0, doodad_map=b"\0" * 16, no_effect=b"\0" * 8,
            heights=None, positions=None, version=18, textures=(b"t.blp",)) -> bytes:
    """An ADT built from struct calls only. ``chunk_layers(i)`` → list of (texture, mcly_flags, effect,
    alpha_bytes or None) for chunk i; alpha bytes are appended to MCAL in order."""
    mcnks = []
    for i in range(256):
        layers = chunk_layers(i)
        mcal, mcly = b"", b""
        for tex, lflags, eff, data in layers:
            mcly += struct.pack("<4I", tex, lflags, len(mcal) if data is not None else 0, eff)
            if data is not None:
                mcal += data
        h = heights(i) if heights else np.zeros(145, np.float32)
        mcvt = chunk(b"MCVT", np.asarray(h, "<f4").tobytes())
        mcnr = chunk(b"MCNR", bytes([0, 0, 127]) * 145) + b"\0" * 13
        subs = [mcvt, mcnr, chunk(b"MCLY", mcly), chunk(b"MCRF", b""), chunk(b"MCAL", mcal)]
        ofs, pos = [], 136
        for s in subs:
            ofs.append(pos)
            pos += len(s)
        px, py = positions(i) if positions else (17066.666 - 47 * 533.3333 - (i // 16) * 33.33333,
                                                 17066.666 - 31 * 533.3333 - (i % 16) * 33.33333)
        hdr = struct.pack("<15I", flags, i % 16, i // 16, len(layers), 0, ofs[0], ofs[1], ofs[2], ofs[3],
                          ofs[4], len(mcal) + 8, 0, 0, 1, 0)
        hdr += struct.pack("<HH", holes, 0) + doodad_map + no_effect
        hdr += struct.pack("<4I3f3I", 0, 0, 0, 0, px, py, 10.0, 0, 0, 0)
        assert len(hdr) == 128
        mcnks.append(chunk(b"MCNK", hdr + b"".join(subs)))
    mtex = b"".join(t + b"\0" for t in textures)
    head = [chunk(b"MVER", struct.pack("<I", version))]
    rest = [chunk(b"MTEX", mtex), chunk(b"MMDX", b""), chunk(b"MMID", b""), chunk(b"MWMO", b""),
            chunk(b"MWID", b""), chunk(b"MDDF", b""), chunk(b"MODF", b"")]
    mcin_pos = 12 + 8 + 64
    pos = mcin_pos + 8 + 4096 + sum(len(r) for r in rest)
    mcin = b""
    for m in mcnks:
        mcin += struct.pack("<4I", pos, len(m), 0, 0)
        pos += len(m)
    mhdr = chunk(b"MHDR", struct.pack("<16I", 0, 64, *([0] * 14)))
    return b"".join(head + [mhdr, chunk(b"MCIN", mcin)] + rest + mcnks)


def mcnk_offsets(data: bytes) -> list[int]:
    """File offsets of the 256 MCNK headers (plain struct walk)."""
    out, off = [], 0
    while off + 8 <= len(data):
        tag, size = struct.unpack_from("<4sI", data, off)
        if tag == b"KNCM":
            out.append(off)
        off += 8 + size
    return out


# --- another editor's layout ------------------------------------------------------------------------
# (MCNK header offset of each sub-chunk's ofs field, sub-chunk tag); MCLQ's size is in the header
_SUBS = ((0x14, b"MCVT"), (0x18, b"MCNR"), (0x1C, b"MCLY"), (0x20, b"MCRF"), (0x2C, b"MCSH"), (0x24, b"MCAL"),
         (0x60, b"MCLQ"), (0x58, b"MCSE"), (0x74, b"MCCV"))


def _top_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    out, off = [], 0
    while off + 8 <= len(data):
        tag, size = struct.unpack_from("<4sI", data, off)
        out.append((tag[::-1], data[off + 8:off + 8 + size]))
        off += 8 + size
    return out


def _sub_chunks(payload: bytes) -> dict[bytes, bytes]:
    """The sub-chunks of one MCNK payload (header first), whole (8-byte header + data; MCNR with the
    13 padding bytes after it; MCLQ as long as the MCNK header's sizeLiquid says)."""
    out = {}
    for at, tag in _SUBS:
        ofs = struct.unpack_from("<I", payload, at)[0]
        if not ofs or (tag == b"MCCV" and payload[ofs - 8:ofs - 4][::-1] != b"MCCV"):
            continue
        start = ofs - 8                            # relative to the MCNK's 8-byte header
        if tag == b"MCLQ":
            n = struct.unpack_from("<I", payload, 0x64)[0]
        else:
            n = 8 + struct.unpack_from("<I", payload, start + 4)[0] + (13 if tag == b"MCNR" else 0)
        out[tag] = payload[start:start + n]
    return out


def editor_layout(data: bytes, *, order=None, mcin="header", pad=True, top_pad=True) -> bytes:
    """An ADT (wowgrass's layout) re-laid out as another map editor writes it: MCNK sub-chunks in
    ``order`` (tags; default reversed), empty padding sub-chunks between them (``pad``), an empty
    top-level padding chunk before the MCNKs (``top_pad``), MCIN sizes counting the 8-byte header
    (``mcin="header"``) or not (``"payload"``). struct only: no wowgrass code."""
    top = _top_chunks(data)
    head = [(t, p) for t, p in top if t not in (b"MCNK", b"MCIN", b"MHDR", b"MVER")]
    mcnks = [p for t, p in top if t == b"MCNK"]
    new_mcnks = []
    for k, payload in enumerate(mcnks):
        hdr = bytearray(payload[:128])
        subs = _sub_chunks(payload)
        tags = list(order) if order else [t for _, t in reversed(_SUBS)]
        tags = [t for t in tags if t in subs] + [t for t in subs if t not in tags]
        body, pos = b"", 8 + 128
        for i, t in enumerate(tags):
            if pad and i % 2 == 1:                 # an empty chunk of an unknown tag, as padding
                blob = chunk(b"MPAD", b"")
                body += blob
                pos += len(blob)
            at = next(a for a, s in _SUBS if s == t)
            struct.pack_into("<I", hdr, at, pos)
            body += subs[t]
            pos += len(subs[t])
        new_mcnks.append(chunk(b"MCNK", bytes(hdr) + body))
    pre = [chunk(t, p) for t, p in head]
    if top_pad:
        pre.append(chunk(b"MPAD", b""))
    mver = chunk(b"MVER", struct.pack("<I", 18))
    mhdr_data = len(mver) + 8
    mcin_at = mhdr_data + 64
    pos = mcin_at + 8 + 4096
    ofs = {}
    for (t, _p), blob in zip(head, pre):
        ofs[t] = pos - mhdr_data
        pos += len(blob)
    pos += sum(len(b) for b in pre[len(head):])
    entries, p = [], pos
    for m in new_mcnks:
        entries.append(struct.pack("<4I", p, len(m) if mcin == "header" else len(m) - 8, 0, 0))
        p += len(m)
    fields = [0, 64] + [ofs.get(t, 0) for t in (b"MTEX", b"MMDX", b"MMID", b"MWMO", b"MWID", b"MDDF", b"MODF",
                                                  b"MFBO", b"MH2O", b"MTXF")]
    mhdr = chunk(b"MHDR", struct.pack("<12I", *fields) + b"\0" * 16)
    return b"".join([mver, mhdr, chunk(b"MCIN", b"".join(entries))] + pre + new_mcnks)
