"""Message UUIDs of a whole column at once: clock, flags and producer as NumPy arrays, and
the other way, the UUID texts of a batch a publisher stamps.

Parsing each UUID through `uuid.UUID` costs microseconds of Python; a column
of canonical 36-character strings is parsed here with a few array
operations instead (the layout is in gazette_core/message/uuid.py). A
column this cannot take whole (another spelling of a UUID, a bad digit)
gives None, and the caller goes through the per-message path, which says
exactly what is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

_DASH_TO_SPACE = bytes.maketrans(b"-", b" ")
_TEXT = np.array([i for i in range(36) if i not in (8, 13, 18, 23)])  # where digits go


@dataclass(frozen=True)
class UUIDColumns:
    """Per row: the clock (0: no UUID), flags and producer ID (6 bytes as an integer)."""

    clock: np.ndarray  # uint64
    flags: np.ndarray  # uint16
    producer: np.ndarray  # uint64


def parse_uuids(column: pa.Array) -> UUIDColumns | None:
    """The parts of each UUID string of `column` (null or "": no UUID), or None if some
    value is not a canonical UUID."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(column)
    if column.type != pa.string():
        return None
    lengths = pc.fill_null(pc.binary_length(column), 0).to_numpy(zero_copy_only=False)
    present = lengths == 36
    if not np.all(present | (lengths == 0)):
        return None
    text = _joined(column if present.all() else pc.filter(column, pa.array(present)))
    rows = len(text) // 36
    # Dashes become spaces, which bytes.fromhex skips between digit pairs only: a dash out
    # of place, a space of the text's own or a bad digit all fail the parse.
    if text.count(b"-") != 4 * rows or text.count(b" "):
        return None
    try:
        raw = bytes.fromhex(text.translate(_DASH_TO_SPACE).decode("ascii"))
    except ValueError:
        return None
    octets = np.zeros((n, 16), dtype=np.uint8)
    octets[present] = np.frombuffer(raw, dtype=np.uint8).reshape(rows, 16)
    return _parts(octets, present)


_NIBBLE = np.full(256, 255, dtype=np.uint8)
for _digits, _first in ((b"0123456789", 0), (b"abcdef", 10), (b"ABCDEF", 10)):
    _NIBBLE[np.frombuffer(_digits, dtype=np.uint8)] = np.arange(_first, _first + len(_digits))
_DASHES = np.array([8, 13, 18, 23])


def parse_uuid_texts(texts: np.ndarray) -> UUIDColumns | None:
    """The parts of (rows, 36) bytes each a canonical UUID text (either case), or None if
    some row is not one: the digits looked up in a table rather than parsed one by one."""
    if texts.ndim != 2 or texts.shape[1] != 36 or np.any(texts[:, _DASHES] != ord("-")):
        return None
    nibbles = _NIBBLE[texts[:, _TEXT]]
    if np.any(nibbles == 255):
        return None
    octets = nibbles[:, 0::2] << np.uint8(4) | nibbles[:, 1::2]
    return _parts(octets, np.ones(len(texts), dtype=bool))


def _joined(column: pa.Array) -> bytes:
    """The bytes of a string column's values, back to back."""
    import pyarrow as pa

    data = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    offsets = np.frombuffer(data.buffers()[1], dtype=np.int32)[
        data.offset:data.offset + len(data) + 1]
    buffer = data.buffers()[2]
    return b"" if buffer is None else bytes(buffer)[offsets[0]:offsets[-1]]


def _parts(octets: np.ndarray, present: np.ndarray) -> UUIDColumns:
    """Clock, flags and producer of (n, 16) UUID bytes (rows not `present` have none)."""
    o = octets.astype(np.uint64)

    def word(first: int, last: int) -> np.ndarray:
        out = o[:, first].copy()
        for c in range(first + 1, last):
            out <<= np.uint64(8)
            out |= o[:, c]
        return out

    stamp = ((word(6, 8) & np.uint64(0x0FFF)) << np.uint64(48) | word(4, 6) << np.uint64(32)
             | word(0, 4))
    seq = word(8, 10)
    clock = stamp << np.uint64(4) | (seq >> np.uint64(10) & np.uint64(0xF))
    clock[~present] = 0
    flags = (seq & np.uint64(0x3FF)).astype(np.uint16)
    flags[~present] = 0
    return UUIDColumns(clock=clock, flags=flags, producer=word(10, 16))


def format_uuids(producer: bytes, clocks: np.ndarray, flags: int) -> list[str]:
    """The canonical text of each clock's UUID for `producer` (uuid.build_uuid's layout),
    for a publisher stamping a whole batch of messages."""
    joined = uuid_text(producer, clocks, flags).decode("ascii")
    return [joined[i:i + 36] for i in range(0, len(joined), 36)]


def uuid_text(producer: bytes, clocks: np.ndarray, flags: int) -> bytes:
    """format_uuids' texts end to end, 36 bytes each (for an Arrow string array)."""
    n = len(clocks)
    clock = clocks.astype(np.uint64)
    stamp = clock >> np.uint64(4)
    octets = np.empty((n, 16), dtype=np.uint8)
    octets[:, 0:4] = (stamp & np.uint64(0xFFFFFFFF)).astype(">u4").view(np.uint8).reshape(n, 4)
    octets[:, 4:6] = (stamp >> np.uint64(32) & np.uint64(0xFFFF)).astype(">u2").view(
        np.uint8).reshape(n, 2)
    octets[:, 6:8] = (stamp >> np.uint64(48) & np.uint64(0x0FFF) | np.uint64(0x1000)).astype(
        ">u2").view(np.uint8).reshape(n, 2)
    seq = np.uint64(0x8000) | (clock & np.uint64(0xF)) << np.uint64(10) | np.uint64(flags)
    octets[:, 8:10] = seq.astype(">u2").view(np.uint8).reshape(n, 2)
    octets[:, 10:16] = np.frombuffer(producer, dtype=np.uint8)
    digits = np.frombuffer(octets.tobytes().hex().encode(), dtype=np.uint8).reshape(n, 32)
    text = np.full((n, 36), ord("-"), dtype=np.uint8)
    text[:, _TEXT] = digits
    return text.tobytes()


GREGORIAN_OFFSET = 122192928000000000  # 100 ns intervals from 1582-10-15 to 1970-01-01


def publish_times(clock: np.ndarray) -> pa.Array:
    """Each clock's publish time (its UUID's 60-bit timestamp, in 100 ns intervals since
    1582-10-15, to microseconds since 1970 in UTC); null where there is no UUID (0)."""
    import pyarrow as pa

    ticks = (clock.astype(np.uint64) >> np.uint64(4)).astype(np.int64)
    micros = (ticks - GREGORIAN_OFFSET) // 10
    return pa.array(micros, type=pa.timestamp("us", tz="UTC"), mask=clock == 0)
