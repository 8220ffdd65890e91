"""Reading a persisted fragment back from its store, decompressed, from an offset.

Stored objects are compressed whole, so reading from an offset means
decompressing from the start and discarding what comes before it. The
content must end exactly at the fragment's end offset.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from gazette_core.broker.client.metrics import FragmentMeters
from gazette_core.broker.codecs import new_decompressor
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.fragment_ext import content_path
from gazette_core.broker.stores.base import FragmentStore
from gazette_core.errors import GazetteError


class FragmentReadError(GazetteError):
    """A stored fragment's content does not match its name (length or range)."""


async def read_fragment(
    store: FragmentStore, fragment: pb.Fragment, offset: int, *, codec: int | None = None
) -> AsyncIterator[bytes]:
    """Decompressed content of `fragment` from journal `offset` to its end, in chunks.

    Counted into the fragment reader metrics (client/metrics.py), labelled with
    `codec` when given (the fragment's own, where `fragment` says how to decode).
    """
    if not fragment.begin <= offset <= fragment.end:
        raise FragmentReadError(
            f"offset {offset} is outside fragment [{fragment.begin}, {fragment.end}) "
            f"of {fragment.journal!r}"
        )
    decompressor = new_decompressor(fragment.compression_codec)
    raw_codec = fragment.compression_codec == pb.NONE
    position = fragment.begin  # Journal offset of the next decompressed byte.
    meters = FragmentMeters(fragment, codec)
    stored = store.open(fragment)
    try:
        async for chunk in stored:
            meters.stored.value += len(chunk)
            # Decompression is CPU-bound; keep it off the event loop.
            data = chunk if raw_codec else await asyncio.to_thread(decompressor.decompress, chunk)
            piece = _after(data, position, offset)
            position += len(data)
            _check_length(fragment, position)
            meters.discarded.value += len(data) - len(piece)
            if piece:
                meters.read.value += len(piece)
                yield piece
    finally:
        # A reader may stop early; close the store stream (and its file) right away.
        close = getattr(stored, "aclose", None)
        if close is not None:
            await close()
    tail = decompressor.finish()
    piece = _after(tail, position, offset)
    position += len(tail)
    _check_length(fragment, position)
    if position != fragment.end:
        raise FragmentReadError(
            f"fragment {content_path(fragment)} ended at offset {position}, "
            f"expected {fragment.end}"
        )
    meters.discarded.value += len(tail) - len(piece)
    if piece:
        meters.read.value += len(piece)
        yield piece


def _after(data: bytes, position: int, offset: int) -> bytes:
    """The part of `data` (starting at journal `position`) at or after `offset`."""
    if position >= offset:
        return data
    skip = offset - position
    return data[skip:] if skip < len(data) else b""


def _check_length(fragment: pb.Fragment, position: int) -> None:
    if position > fragment.end:
        raise FragmentReadError(
            f"fragment {content_path(fragment)} has content beyond its end {fragment.end}"
        )
