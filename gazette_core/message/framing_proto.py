"""The `application/x-protobuf-fixed` framing: magic word, LE uint32 length, protobuf bytes.

The magic word (66 33 93 36) lets a reader that lost its place (bytes not
written by this framing, or a read started mid-record) find the next record:
the splitter skips ahead to the next magic word and logs a warning.
"""

from __future__ import annotations

import logging
import struct

from gazette_core.message.interfaces import Message
from gazette_core.message.splitter import Splitter

log = logging.getLogger(__name__)

MAGIC = b"\x66\x33\x93\x36"
HEADER_LEN = 8
_LENGTH = struct.Struct("<I")
_HEADER = struct.Struct("<4sI")


def frame(body: bytes) -> bytes:
    """`body` behind its header: the magic word and its little-endian uint32 length."""
    return _HEADER.pack(MAGIC, len(body)) + body


def announced_length(header: bytes | bytearray, at: int = 0) -> int:
    """The body length the header starting at `at` announces (its magic word unchecked)."""
    length: int = _LENGTH.unpack_from(header, at + 4)[0]
    return length


class ProtoFixedSplitter(Splitter):
    def __init__(self) -> None:
        super().__init__()
        self._lost = False  # Skipping bytes since the last warning.

    def _cut(self, buf: bytearray) -> tuple[list[tuple[int, int]], int]:
        cuts: list[tuple[int, int]] = []
        i, n = 0, len(buf)
        while n - i >= HEADER_LEN:
            if buf[i:i + 4] != MAGIC:
                i = self._resync(buf, i)
                continue
            end = i + HEADER_LEN + announced_length(buf, i)
            if end > n:
                break
            cuts.append((i, end))
            self._lost = False
            i = end
        return cuts, i

    def _resync(self, buf: bytearray, at: int) -> int:
        """Skip to the next magic word after `at` (or to the last bytes that may start one)."""
        found = buf.find(MAGIC, at + 1)
        to = found if found >= 0 else max(at + 1, len(buf) - len(MAGIC) + 1)
        self.skipped += to - at
        if not self._lost:
            self._lost = True
            log.warning("protobuf-fixed framing desync detected in %s at offset %d; "
                        "skipping to the next magic word", self.label or "stream",
                        self.position + at)
        return to


class ProtoFixedFraming:
    """Messages provide SerializeToString/ParseFromString (see interfaces.ProtoMessage)."""

    content_type = "application/x-protobuf-fixed"

    def marshal(self, msg: Message) -> bytes:
        return frame(msg.SerializeToString())  # type: ignore[attr-defined]

    def unmarshal(self, record: bytes, msg: Message) -> Message:
        if len(record) < HEADER_LEN or not record.startswith(MAGIC):
            raise ValueError(f"not a protobuf-fixed frame: {record[:16]!r}")
        length = announced_length(record)
        if len(record) != HEADER_LEN + length:
            raise ValueError(f"protobuf-fixed frame of {len(record)} bytes announces {length}")
        # A view of the body rather than a copy of it.
        msg.ParseFromString(memoryview(record)[HEADER_LEN:])  # type: ignore[attr-defined]
        return msg

    def splitter(self) -> Splitter:
        return ProtoFixedSplitter()
