"""Archives map protectors make, built from wowgrass's own writer by re-laying its hash table."""

from __future__ import annotations

import struct

import numpy as np

from wowgrass.formats.mpq import (
    HASH_DTYPE,
    HASH_ENTRY_DELETED,
    HASH_ENTRY_EMPTY,
    HASH_OFFSET,
    KEY_HASH_TABLE,
    MpqArchive,
    encrypt_words,
    hash_string,
)


def _encrypted(hashes) -> bytes:
    return encrypt_words(np.ascontiguousarray(hashes).view("<u4"), KEY_HASH_TABLE).astype("<u4").tobytes()


def odd_hash_table(data: bytes, size: int) -> bytes:
    """The v1 archive ``data`` (header at 0, hash table right before the block table, as
    ``write_mpq`` lays them out) with a hash table of ``size`` entries, ``size`` not a power of two:
    every entry placed where StormLib's probe finds it (index & (size - 1), then +1 & (size - 1))."""
    a = MpqArchive.from_bytes(data)
    h = a.header
    assert h.offset == 0 and h.block_table_pos == h.hash_table_pos + 16 * h.hash_table_size
    mask = size - 1
    table = np.zeros(size, HASH_DTYPE)
    table["hash_a"] = table["hash_b"] = 0xFFFFFFFF
    table["locale"], table["platform"], table["flags"] = 0xFFFF, 0xFF, 0xFF
    table["block_index"] = HASH_ENTRY_EMPTY
    for e in a.entries():
        start = i = hash_string(e.name, HASH_OFFSET) & mask
        while table["block_index"][i] != HASH_ENTRY_EMPTY:
            i = (i + 1) & mask
            if i == start:
                raise ValueError(f"{e.name}: no free slot on its probe cycle in a {size}-entry table")
        table[i] = (e.hash_a, e.hash_b, e.locale, e.platform, 0, e.block_index)
    blocks = bytes(data[h.block_table_pos:h.block_table_pos + 16 * h.block_table_size])
    out = bytearray(data[:h.hash_table_pos]) + _encrypted(table)
    block_pos = len(out)
    out += blocks
    struct.pack_into("<I", out, 8, len(out))             # archive size
    struct.pack_into("<II", out, 0x14, block_pos, size)   # block table position, hash table entries
    return bytes(out)


def unreachable_entry(data: bytes, name: str) -> bytes:
    """``data`` with ``name``'s hash entry moved off the name's probe path (past the empty slot that
    ends it); its old slot becomes a deleted one, so other names' chains still run through it."""
    a = MpqArchive.from_bytes(data)
    hashes = a._hash.copy()
    hi = a.lookup(name).hash_index
    entry = hashes[hi].copy()
    hashes[hi]["block_index"] = HASH_ENTRY_DELETED
    mask = len(hashes) - 1
    i = hash_string(name, HASH_OFFSET) & mask
    while hashes[i]["block_index"] != HASH_ENTRY_EMPTY:
        i = (i + 1) & mask
    k = (i + 1) & mask
    while hashes[k]["block_index"] != HASH_ENTRY_EMPTY:
        k = (k + 1) & mask
    hashes[k] = entry
    pos = a.header.offset + a.header.hash_table_pos
    out = bytearray(data)
    enc = _encrypted(hashes)
    out[pos:pos + len(enc)] = enc
    return bytes(out)
