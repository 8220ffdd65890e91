"""Records of `gazctl journals append`: framings of the input and mappings to journals.

Framings: `lines` (each newline-terminated line) and `fixed` (a 4-byte magic
word, a 4-byte little-endian length, then that many bytes); delimiters stay
in the appended data. Mappings pick a journal per record: `random`; `modulo`
and `rendezvous` by a partition key read as the record before each one; and
`direct` by a journal name read the same way. Hashes are FNV-1a 32-bit over
the journals in name order, as Go's message mappings use.
"""

from __future__ import annotations

import base64
import binascii
import enum
import random
import struct
from collections.abc import AsyncIterable, AsyncIterator

from gazette_core.errors import ValidationError

MAGIC = b"\x66\x33\x93\x36"
HEADER = struct.Struct("<4sI")


class Framing(enum.StrEnum):
    none = "none"
    lines = "lines"
    fixed = "fixed"


class Mapping(enum.StrEnum):
    random = "random"
    modulo = "modulo"
    rendezvous = "rendezvous"
    direct = "direct"


def fnv1a32(data: bytes) -> int:
    h = 0x811C9DC5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


async def records(chunks: AsyncIterable[bytes], framing: Framing
                  ) -> AsyncIterator[list[bytes]]:
    """The input's records, a list per chunk of input: all that arrived together.

    A record split across chunks is held back until its end arrives; at the
    end of the input an unterminated last line is a record of its own.
    """
    buf = bytearray()
    split = _lines if framing is Framing.lines else _frames
    async for chunk in chunks:
        buf += chunk
        if batch := split(buf):
            yield batch
    if framing is Framing.fixed and buf:
        what = "fixed-frame header" if len(buf) < HEADER.size else "fixed frame"
        raise ValidationError("--input", f"truncated {what} at end of input")
    if buf:
        yield [bytes(buf)]


def _lines(buf: bytearray) -> list[bytes]:
    """The whole lines at the start of `buf`, removed from it."""
    end = buf.rfind(b"\n") + 1
    lines = bytes(buf[:end]).splitlines(keepends=True)
    del buf[:end]
    return lines


def _frames(buf: bytearray) -> list[bytes]:
    """The whole fixed frames at the start of `buf`, removed from it."""
    frames, at = [], 0
    while len(buf) - at >= HEADER.size:
        magic, length = HEADER.unpack_from(buf, at)
        if magic != MAGIC:
            raise ValidationError("--input", f"bad fixed-frame magic {magic.hex()} "
                                  f"(want {MAGIC.hex()})")
        if len(buf) - at < HEADER.size + length:
            break
        frames.append(bytes(buf[at:at + HEADER.size + length]))
        at += HEADER.size + length
    del buf[:at]
    return frames


class Mapper:
    """Picks the journal of each record under a mapping; journals are in name order."""

    def __init__(self, mapping: Mapping, journals: list[str], framing: Framing,
                 b64: bool) -> None:
        self.mapping, self.framing, self.b64 = mapping, framing, b64
        self.journals = sorted(journals)
        self._hashes = [fnv1a32(j.encode()) for j in self.journals]
        self.keyed = mapping is not Mapping.random

    def key_of(self, record: bytes) -> bytes:
        """The key carried by a key record, without its framing."""
        key = record[HEADER.size:] if self.framing is Framing.fixed else record.rstrip(b"\n")
        if self.b64:
            try:
                return base64.b64decode(key, validate=True)
            except binascii.Error:
                raise ValidationError("--base64", f"key {key!r} is not base64") from None
        return key

    def pick(self, key: bytes | None) -> str:
        if key is None:
            return random.choice(self.journals)
        if self.mapping is Mapping.modulo:
            return self.journals[fnv1a32(key) % len(self.journals)]
        if self.mapping is Mapping.rendezvous:
            h = fnv1a32(key)
            best = max(range(len(self.journals)), key=lambda i: h ^ self._hashes[i])
            return self.journals[best]
        name = key.decode(errors="replace")
        if name not in self.journals:
            raise ValidationError("--mapping", f"journal {name!r} is not in the selection")
        return name


def check_options(framing: Framing, mapping: Mapping, b64: bool) -> None:
    if framing is Framing.none and mapping is not Mapping.random:
        raise ValidationError("--mapping", "framing none appends the whole input to one "
                              "journal: it needs --mapping random")
    if b64 and (framing is not Framing.lines or mapping is Mapping.random):
        raise ValidationError("--base64", "needs --framing lines and a keyed mapping")
