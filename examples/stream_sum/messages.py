"""The stream-sum messages: Chunk (input) and Sum (output), as JSON lines.

A stream is a sequence of chunks with seq_no 1, 2, 3, ... and 32 random bytes
each, ended by a chunk with no data. Its Sum is the CRC-64/ECMA of all its data.
"""

from __future__ import annotations

import base64

from gazette_core.message.structs import StructMessage


class Chunk(StructMessage):
    """One piece of stream `id`; `data` is base64 (as Go's JSON encodes []byte)."""

    id: str = ""
    seq_no: int = 0
    data: str = ""

    @classmethod
    def of(cls, stream: str, seq_no: int, payload: bytes) -> Chunk:
        return cls(id=stream, seq_no=seq_no, data=base64.b64encode(payload).decode())

    def payload(self) -> bytes:
        return base64.b64decode(self.data)


class Sum(StructMessage):
    """The final sum of stream `id` over its `seq_no` chunks (the empty last one included)."""

    id: str = ""
    seq_no: int = 0
    value: int = 0
