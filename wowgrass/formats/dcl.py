"""PKWARE DCL "explode" in plain Python: the fallback for MPQ IMPLODE sectors and compression bit
0x08 where the ``dclimplode`` binding is not installed (it has wheels for CPython 3.10/3.11 only).

The format, as Mark Adler's description beside zlib's contrib/blast decoder gives it: two header
bytes (0 = literals stored as plain bytes, 1 = literals Huffman-coded; then log2 of the dictionary
size minus 6: 4, 5 or 6 for 1, 2 or 4 KiB), then a bit stream read least significant bit first.
Each symbol starts with one flag bit: 0 is a literal, 1 a copy: a length code (16 symbols, base
plus extra bits; length 519 ends the stream), then a distance code (64 symbols) whose value is
shifted left by 2 bits for copies of length 2 and by the dictionary bits otherwise, plus that many
plain bits, plus one. The three Huffman codes are fixed and canonical; their bits are stored
complemented, first bit the most significant.

Speed: each code is decoded with one lookup in a table indexed by the next 13 (or 8 / 7) stream
bits; a sector (4 KiB at most in MPQs) decodes in about a millisecond
(``benchmarks/bench_dcl.py`` prints the rate).
"""

from __future__ import annotations

from wowgrass.errors import FormatError

# Code lengths, run-length packed: each byte is (count - 1) << 4 | bit length (the format's tables).
_LIT_LENGTHS = bytes([
    11, 124, 8, 7, 28, 7, 188, 13, 76, 4, 10, 8, 12, 10, 12, 10, 8, 23, 8,
    9, 7, 6, 7, 8, 7, 6, 55, 8, 23, 24, 12, 11, 7, 9, 11, 12, 6, 7, 22, 5,
    7, 24, 6, 11, 9, 6, 7, 22, 7, 11, 38, 7, 9, 8, 25, 11, 8, 11, 9, 12,
    8, 12, 5, 38, 5, 38, 5, 11, 7, 5, 6, 21, 6, 10, 53, 8, 7, 24, 10, 27,
    44, 253, 253, 253, 252, 252, 252, 13, 12, 45, 12, 45, 12, 61, 12, 45,
    44, 173])
_LEN_LENGTHS = bytes([2, 35, 36, 53, 38, 23])
_DIST_LENGTHS = bytes([2, 20, 53, 230, 247, 151, 248])
_LEN_BASE = (3, 2, 4, 5, 6, 7, 8, 9, 10, 12, 16, 24, 40, 72, 136, 264)
_LEN_EXTRA = (0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8)
END_LENGTH = 519


def _lookup(packed: bytes) -> tuple[list[int], int]:
    """(table, bits): ``table[next bits]`` = symbol << 4 | code length, for every value of the
    next ``bits`` stream bits (the longest code's length)."""
    lengths: list[int] = []
    for b in packed:
        lengths += [b & 15] * ((b >> 4) + 1)
    width = max(lengths)
    table = [-1] * (1 << width)
    code = 0
    # canonical codes: by length, then by symbol; each code is the previous + 1, shifted on
    for length in range(1, width + 1):
        for sym, n in enumerate(lengths):
            if n != length:
                continue
            # the stream holds the code's bits complemented, most significant first; a peek of
            # ``width`` bits (least significant first) starts with those ``length`` bits
            rev = 0
            for i in range(length):
                rev |= (1 - ((code >> (length - 1 - i)) & 1)) << i
            for high in range(1 << (width - length)):
                table[rev | (high << length)] = sym << 4 | length
            code += 1
        code <<= 1
    assert -1 not in table
    return table, width


_LIT, _LIT_BITS = _lookup(_LIT_LENGTHS)
_LEN, _LEN_BITS = _lookup(_LEN_LENGTHS)
_DIST, _DIST_BITS = _lookup(_DIST_LENGTHS)


def explode(data, *, limit: int | None = None, path=None, offset=None) -> bytes:
    """Decode a PKWARE DCL stream. Stops at the end code, or once more than ``limit`` bytes are
    out (a hostile stream); a stream that runs out before its end code is accepted when ``limit``
    bytes are out (StormLib stops when its output buffer is full), otherwise an error."""
    data = bytes(data)
    n = len(data)
    if n < 2:
        raise FormatError("corrupt PKWARE DCL data: shorter than its 2-byte header", path=path, offset=offset)
    coded, dict_bits = data[0], data[1]
    if coded > 1:
        raise FormatError(f"corrupt PKWARE DCL data: literal mode {coded} (expected 0 or 1)", path=path, offset=offset)
    if not 4 <= dict_bits <= 6:
        raise FormatError(f"corrupt PKWARE DCL data: dictionary size code {dict_bits} (expected 4, 5 or 6)",
                          path=path, offset=offset)
    out = bytearray()
    cap = (1 << 62) if limit is None else limit
    lit, lens, dists, base, extra = _LIT, _LEN, _DIST, _LEN_BASE, _LEN_EXTRA
    lit_mask, len_mask, dist_mask = (1 << _LIT_BITS) - 1, (1 << _LEN_BITS) - 1, (1 << _DIST_BITS) - 1
    big = int.from_bytes
    # zero padding: a symbol never needs more than 31 bits, so the refills below never run dry;
    # reading into the padding shows as more bits consumed than the stream has (checked once in it)
    data += bytes(16)
    total_bits = n * 8
    pos, buf, cnt = 2, 0, 0
    tail = False        # the refills reached the padding: check each symbol's bits against the end
    before = 0
    while True:
        if cnt < 32:                                  # refill: 7 bytes at once
            buf |= big(data[pos:pos + 7], "little") << cnt
            pos += 7
            cnt += 56
            tail = pos > n
        if tail:
            if pos * 8 - cnt >= total_bits:
                break
            before = len(out)
        if buf & 1:                                   # a copy
            e = lens[(buf >> 1) & len_mask]
            ln = e & 15
            sym = e >> 4
            xb = extra[sym]
            length = base[sym] + ((buf >> (1 + ln)) & ((1 << xb) - 1))
            step = 1 + ln + xb
            buf >>= step
            cnt -= step
            if length == END_LENGTH:
                if tail and pos * 8 - cnt > total_bits:
                    break
                return bytes(out)
            e = dists[buf & dist_mask]
            ln = e & 15
            xb = 2 if length == 2 else dict_bits
            dist = ((e >> 4) << xb) + ((buf >> ln) & ((1 << xb) - 1)) + 1
            step = ln + xb
            buf >>= step
            cnt -= step
            have = len(out)
            if tail and pos * 8 - cnt > total_bits:
                break
            if dist > have:
                raise FormatError(f"corrupt PKWARE DCL data: copy from {dist} bytes back after {have} bytes",
                                  path=path, offset=offset)
            if dist >= length:
                out += out[have - dist:have - dist + length]
            else:                                     # overlapping: the last ``dist`` bytes repeat
                out += (out[have - dist:] * (length // dist + 1))[:length]
            if have + length > cap:
                return bytes(out)
        elif coded:                                   # a Huffman-coded literal
            e = lit[(buf >> 1) & lit_mask]
            out.append(e >> 4)
            step = 1 + (e & 15)
            buf >>= step
            cnt -= step
        else:                                         # a plain literal
            out.append((buf >> 1) & 0xFF)
            buf >>= 9
            cnt -= 9
    # the stream ran out before the end code: drop a symbol that took bits from the padding
    if pos * 8 - cnt > total_bits:
        del out[before:]
    # the input ran out before the end code
    if limit is not None and len(out) >= limit:
        return bytes(out[:max(limit, 0)])
    raise FormatError(f"corrupt PKWARE DCL data: the stream ends before its end code ({len(out)} bytes out)",
                      path=path, offset=offset)
