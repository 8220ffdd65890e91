"""The UUID texts of a whole batch of messages parsed at once, with NumPy.

For the sequencer's bulk path (Sequencer.queue_batch): a read chunk of
messages published outside transactions is settled from these arrays
without a step per message. Only canonical texts (8-4-4-4-12 hex digits,
either case) are taken; a batch holding any other spelling (or no UUID)
gives None and goes message by message, where uuid.parse_text decides
exactly as uuid.UUID does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter

import numpy as np

from gazette_core.message.interfaces import Envelope, text_uuid_type

_DASHES = [8, 13, 18, 23]
_DIGITS = [i for i in range(36) if i not in _DASHES]
_NIBBLE = np.full(256, 255, dtype=np.uint8)
for _i, _c in enumerate(b"0123456789abcdef"):
    _NIBBLE[_c] = _i
for _i, _c in enumerate(b"ABCDEF"):
    _NIBBLE[_c] = 10 + _i


@dataclass(frozen=True, slots=True)
class UUIDArrays:
    """Per message: clock, flags, and producer ID (as a 48-bit integer); `octets` are the
    UUIDs' 16 bytes, row by row."""

    clock: np.ndarray  # uint64
    flags: np.ndarray  # uint64
    producer: np.ndarray  # uint64
    octets: np.ndarray  # (n, 16) uint8

    def producer_id(self, row: int) -> bytes:
        return self.octets[row, 10:16].tobytes()  # type: ignore[no-any-return]


def parse_texts(texts: list[str]) -> UUIDArrays | None:
    """The parts of each canonical UUID text, or None if any text is not one."""
    n = len(texts)
    joined = "".join(texts)
    if n == 0 or len(joined) != 36 * n or not joined.isascii():
        return None
    chars = np.frombuffer(joined.encode("ascii"), dtype=np.uint8).reshape(n, 36)
    if not (chars[:, _DASHES] == ord("-")).all():
        return None
    nibbles = _NIBBLE[chars[:, _DIGITS]]
    if (nibbles == 255).any():
        return None
    octets = np.ascontiguousarray(nibbles[:, 0::2] << 4 | nibbles[:, 1::2])
    head = octets[:, 0:8].copy().view(">u8")[:, 0].astype(np.uint64)
    tail = octets[:, 8:16].copy().view(">u8")[:, 0].astype(np.uint64)
    seq = tail >> np.uint64(48)
    stamp = ((head & np.uint64(0x0FFF)) << np.uint64(48)
             | (head >> np.uint64(16) & np.uint64(0xFFFF)) << np.uint64(32)
             | head >> np.uint64(32))
    clock = stamp << np.uint64(4) | (seq >> np.uint64(10) & np.uint64(0xF))
    return UUIDArrays(clock=clock, flags=seq & np.uint64(0x3FF),
                      producer=tail & np.uint64(0xFFFFFFFFFFFF), octets=octets)


_MESSAGE = attrgetter("message")
_UUID = attrgetter("uuid")
_JOURNAL = attrgetter("journal")


def batch_arrays(envs: Sequence[Envelope]) -> UUIDArrays | None:
    """The UUID arrays of envelopes of one journal whose messages keep a canonical UUID
    text (interfaces.message_parts would read it), or None."""
    if len(set(map(_JOURNAL, envs))) != 1:
        return None
    msgs = list(map(_MESSAGE, envs))
    if not all(text_uuid_type(kind) for kind in set(map(type, msgs))):
        return None
    try:
        return parse_texts(list(map(_UUID, msgs)))
    except TypeError:  # a text that is not a str
        return None


def row_parts(arrays: UUIDArrays) -> list[tuple[int, int, bytes]]:
    """(clock, flags, producer ID) of each row, as message_parts gives them."""
    unique, first = np.unique(arrays.producer, return_index=True)
    ids = {p: arrays.producer_id(row) for p, row in zip(unique.tolist(), first.tolist(),
                                                         strict=True)}
    return list(zip(arrays.clock.tolist(), arrays.flags.tolist(),
                    map(ids.__getitem__, arrays.producer.tolist()), strict=True))


def rising_runs(arrays: UUIDArrays) -> list[tuple[int, int, int]] | None:
    """(first row, first clock, last clock) of each producer, if every producer's clocks
    rise strictly from row to row (None otherwise)."""
    order = np.argsort(arrays.producer, kind="stable")
    producer, clock = arrays.producer[order], arrays.clock[order]
    same = producer[1:] == producer[:-1]
    if not (clock[1:][same] > clock[:-1][same]).all():
        return None
    firsts = np.flatnonzero(np.concatenate(([True], ~same)))
    lasts = np.concatenate((firsts[1:] - 1, [len(order) - 1]))
    return list(zip(order[firsts].tolist(), clock[firsts].tolist(), clock[lasts].tolist(),
                    strict=True))
