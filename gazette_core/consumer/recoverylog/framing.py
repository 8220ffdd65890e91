"""Fixed frames of recorded ops in a recovery-log journal.

A frame is the 4-byte magic word, a little-endian uint32 body length and the
protobuf RecordedOp body. A write op's raw payload follows its frame outside
of it (and outside the checksum chain). `find_magic` lets a reader resynchronise
after garbage between frames. It is the `application/x-protobuf-fixed`
framing of messages, whose header helpers it shares.
"""

from __future__ import annotations

from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from gazette_core.errors import GazetteError
from gazette_core.message.framing_proto import HEADER_LEN, MAGIC, announced_length, frame

__all__ = ["HEADER_LEN", "MAGIC", "FrameError", "body_length", "encode", "find_magic"]


class FrameError(GazetteError):
    """A frame header does not start with the magic word (the reader is out of sync)."""


def encode(op: rpb.RecordedOp) -> tuple[bytes, bytes]:
    """The frame (header + body) of `op` and its body alone.

    Every set field is serialized, so recorders encode before they set the
    meta fields (first_offset, last_offset, log) that players fill in.
    """
    body = op.SerializeToString()
    return frame(body), body


def body_length(header: bytes) -> int:
    """The body length a frame header announces; FrameError on a bad magic word."""
    if len(header) < HEADER_LEN:
        raise FrameError(f"short frame header ({len(header)} of {HEADER_LEN} bytes)")
    if header[:4] != MAGIC:
        raise FrameError(f"bad frame magic word {header[:4].hex()} (expected {MAGIC.hex()})")
    return announced_length(header)


def find_magic(buf: bytes, start: int = 0) -> int:
    """Index in `buf` of the next magic word at or after `start`, or -1."""
    return buf.find(MAGIC, start)
