"""CRC-64/ECMA as Go's `hash/crc64` computes it with the ECMA table.

That is the reflected ECMA-182 polynomial with the register inverted before and
after each update (also known as CRC-64/XZ), so a running sum can be carried
from chunk to chunk: `update(update(0, a), b) == update(0, a + b)`.
"""

from __future__ import annotations

POLY = 0xC96C5795D7870F42  # ECMA-182, bit-reversed
_MASK = (1 << 64) - 1


def _table() -> tuple[int, ...]:
    out = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ POLY if crc & 1 else crc >> 1
        out.append(crc)
    return tuple(out)


TABLE = _table()


def update(crc: int, data: bytes) -> int:
    """The CRC of everything summed into `crc`, followed by `data`."""
    crc ^= _MASK
    table = TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ _MASK


def checksum(data: bytes) -> int:
    return update(0, data)
