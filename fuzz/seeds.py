#!/usr/bin/env python3
"""Writes a small seed corpus for each fuzz target into corpus/<target>/.

Valid files in every format (see docs/FORMAT.md), so the fuzzers start past the magic,
version and checksum checks. Python standard library only; run from fuzz/:

    python3 seeds.py
"""

import os
import struct

BLOCK = 4096
TUPLES_PER_BLOCK = 256


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283


def header(count, sorted_, distinct, min_key, max_key):
    flags = (1 if sorted_ else 0) | (2 if distinct else 0)
    h = bytearray(BLOCK)
    struct.pack_into("<8sIBBBBII", h, 0, b"LIDXTBL\0", 1, 8, 8, flags, 1, BLOCK, 0)
    struct.pack_into("<QQQ", h, 24, count, min_key, max_key)
    struct.pack_into("<I", h, BLOCK - 4, crc32c(h[: BLOCK - 4]))
    return bytes(h)


def table(tuples):
    keys = [k for k, _ in tuples]
    n = len(tuples)
    sorted_ = all(a <= b for a, b in zip(keys, keys[1:]))
    distinct = all(a < b for a, b in zip(keys, keys[1:]))
    lo, hi = (min(keys), max(keys)) if keys else (0, 0)
    data_blocks = -(-n // TUPLES_PER_BLOCK)
    data = bytearray(b"".join(struct.pack("<QQ", k, v) for k, v in tuples))
    data += bytes(data_blocks * BLOCK - len(data))
    sums = bytearray(
        b"".join(struct.pack("<I", crc32c(data[i * BLOCK : (i + 1) * BLOCK])) for i in range(data_blocks))
    )
    sums += bytes(-len(sums) % BLOCK)
    return header(n, sorted_, distinct, lo, hi) + bytes(data) + bytes(sums)


def sosd(keys):
    return struct.pack("<Q", len(keys)) + b"".join(struct.pack("<Q", k) for k in keys)


def paper1(tuples):
    return struct.pack("<QII", len(tuples), 8, 8) + b"".join(struct.pack("<QQ", k, v) for k, v in tuples)


def key_sets():
    m = 2**64 - 1
    return {
        "empty": [],
        "one": [42],
        "three": [1, 2, 3],
        "dups": [5, 5, 7],
        "unsorted": [9, 3, 7, 1],
        "extremes": [0, m],
        "block": [i * 3 for i in range(256)],
        "block_plus_one": [i * 3 for i in range(257)],
        "three_blocks": [(i * 0x9E3779B97F4A7C15) % 2**64 for i in range(600)],
    }


def write(target, name, data):
    d = os.path.join("corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def main():
    for name, keys in key_sets().items():
        tuples = [(k, i) for i, k in enumerate(keys)]
        tbl = table(tuples)
        write("table_open", name, tbl)
        write("header_decode", name, tbl[:BLOCK])
        write("sosd_parse", name, sosd(keys))
        write("paper1_header", name, paper1(tuples))


if __name__ == "__main__":
    main()
