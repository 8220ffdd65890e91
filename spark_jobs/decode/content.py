"""The content of one journal as an executor reads it: straight from stores, in offset order.

A `JournalTask` is what the driver hands an executor for one journal: the
fragments covering the part to read (persisted or not), in offset order, and
how to reach them. Persisted fragments are read from their backing stores
(every store adapter and codec the brokers have: `read_fragment`); a fragment
still only in a broker's spool is read through the broker at `broker`, up to
the end it had when the driver listed it, so every task reads a fixed
snapshot however much is appended meanwhile.

Fragments may overlap (different brokers persisted different cuts): the
overlap is read once. Where fragments leave a gap (content pruned), reading
jumps over it and `content` reports the jump by the offset of the next chunk.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass

from gazette_core.broker.client.channel import ClientConfig, journal_stub
from gazette_core.broker.client.retry_reader import RetryReader
from gazette_core.broker.fragment.remote import read_fragment
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.stores.registry import get_store

RAW = "raw"
JSON = "json"
CSV = "csv"
KINDS = (JSON, CSV, RAW)


@dataclass(frozen=True)
class JournalTask:
    """One journal to read on one executor (picklable: fragments are serialized)."""

    journal: str
    kind: str  # JSON, CSV or RAW
    fragments: tuple[bytes, ...]  # serialized pb.Fragment, ordered by begin
    broker: str = ""  # reads unpersisted fragments; "" when none is to be read
    file_root: str = ""
    file_only: bool = False
    ring_size: int = 8192
    client: ClientConfig | None = None  # TLS and authorization of broker reads

    def parsed(self) -> list[pb.Fragment]:
        return [pb.Fragment.FromString(raw) for raw in self.fragments]


def is_persisted(fragment: pb.Fragment) -> bool:
    return bool(fragment.backing_store) and fragment.mod_time > 0


async def content(task: JournalTask, begin: int = 0, end: int | None = None
                  ) -> AsyncIterator[tuple[int, bytes]]:
    """(journal offset, bytes) chunks of the task's fragments within [begin, end)."""
    covered = begin
    for fragment in task.parsed():
        stop = fragment.end if end is None else min(fragment.end, end)
        start = max(fragment.begin, covered)
        if start >= stop:
            continue
        async for offset, chunk in _fragment_content(task, fragment, start, stop):
            yield offset, chunk
        covered = stop


async def _fragment_content(task: JournalTask, fragment: pb.Fragment, start: int, stop: int
                            ) -> AsyncIterator[tuple[int, bytes]]:
    """[start, stop) of one fragment, from its store or (unpersisted) through the broker."""
    chunks = (_from_store(task, fragment, start) if is_persisted(fragment)
              else _through_broker(task, start, stop))
    try:
        async for at, chunk in chunks:
            piece = chunk[:stop - at]
            if piece:
                yield at, piece
            if at + len(chunk) >= stop:
                break
    finally:
        await chunks.aclose()


async def _from_store(task: JournalTask, fragment: pb.Fragment, start: int
                      ) -> AsyncGenerator[tuple[int, bytes], None]:
    store = get_store(fragment.backing_store, task.file_root, task.file_only)
    at = start
    chunks = read_fragment(store, fragment, start)
    try:
        async for chunk in chunks:
            yield at, chunk
            at += len(chunk)
    finally:
        close = getattr(chunks, "aclose", None)
        if close is not None:
            await close()


async def _through_broker(task: JournalTask, start: int, stop: int
                          ) -> AsyncGenerator[tuple[int, bytes], None]:
    """Read from the broker; should it jump (content pruned meanwhile), offsets say so."""
    request = pb.ReadRequest(journal=task.journal, offset=start, end_offset=stop, block=False)
    async with RetryReader(journal_stub(task.broker, task.client), request) as reader:
        async for chunk in reader:
            yield reader.offset - len(chunk), chunk
