"""Gazette message UUIDs: RFC 4122 version 1 with a producer ID, a clock and flags.

Layout (docs/design/consumer.md#messages): bytes 0-7 carry the 60-bit timestamp of the clock
as time_low, time_mid and time_hi with version 1; bytes 8-9 carry the
variant, the clock's 4-bit sequence counter (bits 13-10) and 10 bits of
flags; bytes 10-15 are the producer ID, whose first byte has the multicast
bit set.
"""

from __future__ import annotations

import enum
import os
import time
import uuid

# 100 ns intervals from 1582-10-15 (the RFC 4122 epoch) to 1970-01-01.
GREGORIAN_OFFSET = 122192928000000000
TICK = 160  # one microsecond: the 4 counter bits stay zero, as Go's clock does
ZERO_UUID = uuid.UUID(int=0)  # a message without a UUID: committed at once, not tracked


class Flags(enum.IntEnum):
    OUTSIDE_TXN = 0x0  # committed on its own
    CONTINUE_TXN = 0x1  # pending until an ACK_TXN of its producer and journal
    ACK_TXN = 0x2  # commits pending messages up to its clock


def new_producer_id() -> bytes:
    """A random 6-byte producer ID with the multicast bit set (never a real MAC)."""
    raw = bytearray(os.urandom(6))
    raw[0] |= 0x01
    return bytes(raw)


class Clock:
    """A monotonic message clock: 60-bit RFC 4122 time << 4, plus a 4-bit counter."""

    def __init__(self, value: int = 0) -> None:
        self.value = value

    def update(self, unix_ns: int | None = None) -> None:
        """Move to the wall time `unix_ns` (default: now) unless that is behind the clock."""
        ns = time.time_ns() if unix_ns is None else unix_ns
        wall = ((ns // 100) + GREGORIAN_OFFSET) << 4
        self.value = max(self.value, wall)

    def tick(self) -> int:
        """Advance by one microsecond and return the new value."""
        self.value += TICK
        return self.value


def build_uuid(producer: bytes, clock: int, flags: int) -> uuid.UUID:
    if len(producer) != 6:
        raise ValueError(f"producer ID must be 6 bytes, got {len(producer)}")
    if not 0 <= flags <= 0x3FF:
        raise ValueError(f"flags must fit in 10 bits, got {flags:#x}")
    stamp = clock >> 4
    head = ((stamp & 0xFFFFFFFF).to_bytes(4, "big")
            + ((stamp >> 32) & 0xFFFF).to_bytes(2, "big")
            + (((stamp >> 48) & 0x0FFF) | 0x1000).to_bytes(2, "big"))
    seq = (0x8000 | ((clock & 0xF) << 10) | flags).to_bytes(2, "big")
    return uuid.UUID(bytes=head + seq + producer)


def get_clock(u: uuid.UUID) -> int:
    return _clock_of(u.bytes)


def _clock_of(b: bytes) -> int:
    stamp = (int.from_bytes(b[0:4], "big") | int.from_bytes(b[4:6], "big") << 32
             | (int.from_bytes(b[6:8], "big") & 0x0FFF) << 48)
    return stamp << 4 | (b[8] >> 2 & 0xF)


def get_flags(u: uuid.UUID) -> int:
    return int.from_bytes(u.bytes[8:10], "big") & 0x3FF


def get_producer_id(u: uuid.UUID) -> bytes:
    return u.bytes[10:16]


def get_parts(u: uuid.UUID) -> tuple[int, int, bytes]:
    """(clock, flags, producer ID) of `u`, converting it to bytes once."""
    b = u.bytes
    return _clock_of(b), int.from_bytes(b[8:10], "big") & 0x3FF, b[10:16]


ZERO_PARTS: tuple[int, int, bytes] = (0, 0, bytes(6))


def parse_text(text: str) -> tuple[int, int, bytes]:
    """(clock, flags, producer ID) of a UUID's text ("" is the zero UUID), without a UUID.

    The canonical spelling (8-4-4-4-12 hex digits, either case) is read
    directly; any other goes through `uuid.UUID`, so exactly the same texts
    are accepted, and refused with the same ValueError.
    """
    if len(text) == 36 and text[8] == text[13] == text[18] == text[23] == "-":
        try:
            # fromhex skips the spaces between digit pairs; any other odd character fails
            # it, and a stray space or dash elsewhere leaves fewer than 16 bytes.
            raw = bytes.fromhex(text.replace("-", " "))
        except ValueError:
            raw = b""
        if len(raw) == 16:
            return _parts_of(raw)
    if not text:
        return ZERO_PARTS
    return _parts_of(uuid.UUID(text).bytes)


def _parts_of(b: bytes) -> tuple[int, int, bytes]:
    head = int.from_bytes(b[0:8], "big")  # time_low, time_mid, version and time_hi
    seq = b[8] << 8 | b[9]
    stamp = (head & 0x0FFF) << 48 | (head >> 16 & 0xFFFF) << 32 | head >> 32
    return stamp << 4 | (seq >> 10 & 0xF), seq & 0x3FF, b[10:16]


def format_text(producer: bytes, clock: int, flags: int) -> str:
    """The canonical text of build_uuid(producer, clock, flags), without a UUID object."""
    if len(producer) != 6:
        raise ValueError(f"producer ID must be 6 bytes, got {len(producer)}")
    if not 0 <= flags <= 0x3FF:
        raise ValueError(f"flags must fit in 10 bits, got {flags:#x}")
    return UUIDText(producer).format(clock, flags)


class UUIDText:
    """The canonical text of one producer's UUIDs, formatted from a clock value.

    Only the first group (the low 32 bits of the timestamp) changes between
    consecutive messages; the rest (the timestamp's high bits, which change
    every ~7 minutes, then counter, flags and producer) is one of a few
    strings, cached for the current high bits.
    """

    __slots__ = ("_high", "_node", "_rests")

    def __init__(self, producer: bytes) -> None:
        self._node = producer.hex()
        self._high = -1
        self._rests: dict[int, str] = {}  # seq group -> text after the first group

    def format(self, clock: int, flags: int) -> str:
        stamp = clock >> 4
        seq = 0x8000 | (clock & 0xF) << 10 | flags
        if stamp >> 32 != self._high:
            self._high = stamp >> 32
            self._rests.clear()
        rest = self._rests.get(seq)
        if rest is None:
            rest = self._rests[seq] = self._rest(seq)
        return (stamp & 0xFFFFFFFF).to_bytes(4, "big").hex() + rest

    def _rest(self, seq: int) -> str:
        high = self._high
        return f"-{high & 0xFFFF:04x}-{(high >> 16) & 0x0FFF | 0x1000:04x}-{seq:04x}-{self._node}"

