"""Rows of one journal, as an executor makes them from its content (frame_source.py).

- Message framings (JSON lines, CSV) are cut into records by the framing's
  splitter and decoded by the framing itself; the records then pass through
  the message Sequencer in offset order (`sequence_committed`), which drops
  messages never committed or rolled back, duplicates and the ACKs, exactly
  as a read-committed reader of the journal would. A JSON row carries the
  record's text (parsed into columns by the driver), a CSV row its fields
  after the UUID column.
- Journals without a message framing give their bytes as they were read: rows
  in offset order whose concatenation is the journal's content.

A row starts with (journal, offset): offset is the record's first byte.
Message rows then carry the UUID and its producer ID (12 hex digits), both
None for a message without a UUID.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

from gazette_core.broker.client.channel import close_channels
from gazette_core.message.committed import sequence_committed
from gazette_core.message.framing import CSV as CSV_TYPE
from gazette_core.message.framing import JSON_LINES, Framing, framing_for
from gazette_core.message.interfaces import ZERO_UUID, CSVRecord, Envelope, JSONRecord, Message
from gazette_core.message.reader import MessageDecodeError
from gazette_core.message.splitter import Splitter
from gazette_core.message.uuid import get_producer_id
from spark_jobs.frame_source import JSON, RAW, JournalTask, content

Row = tuple[Any, ...]
BATCH_BYTES = 1 << 20  # Raw rows are at most this long.


def _new_message(kind: str) -> Message:
    return JSONRecord() if kind == JSON else CSVRecord()


def _framing(kind: str) -> Framing:
    return framing_for(JSON_LINES if kind == JSON else CSV_TYPE)


async def envelopes(task: JournalTask, begin: int = 0, end: int | None = None
                    ) -> AsyncIterator[Envelope]:
    """The task's records within [begin, end) as uncommitted envelopes, in offset order."""
    framing = _framing(task.kind)
    splitter: Splitter | None = None
    async for offset, chunk in content(task, begin, end):
        if splitter is None or offset != splitter.position + splitter.pending:
            # The first chunk, or a jump over a gap: a partial record before it is lost.
            splitter = framing.splitter()
            splitter.base, splitter.label = offset, task.journal
        for at, record in splitter.feed_spans(chunk):
            msg = _new_message(task.kind)
            try:
                framing.unmarshal(record, msg)
            except (ValueError, TypeError) as err:
                raise MessageDecodeError(
                    f"{task.journal} offset {at}: cannot decode message: {err}") from err
            if isinstance(msg, JSONRecord):
                msg.text = record.decode().rstrip("\r\n")
            yield Envelope(task.journal, at, at + len(record), msg)
    if splitter is not None and splitter.pending:
        raise MessageDecodeError(f"{task.journal} offset {splitter.position}: content ends "
                                 f"inside a {splitter.pending}-byte partial record")


def message_row(env: Envelope) -> Row:
    u = env.message.get_uuid()
    uuid, producer = (None, None) if u == ZERO_UUID else (str(u), get_producer_id(u).hex())
    msg = env.message
    value = msg.text if isinstance(msg, JSONRecord) else list(msg)[1:]  # type: ignore[call-overload]
    return env.journal, env.begin, uuid, producer, value


async def message_rows(task: JournalTask) -> AsyncIterator[list[Row]]:
    """Rows of the task's committed messages, in batches."""
    def replay(journal: str, begin: int, end: int) -> AsyncIterator[Envelope]:
        return envelopes(task, begin, end)

    batch: list[Row] = []
    async for env in sequence_committed(envelopes(task), replay, ring_size=task.ring_size):
        batch.append(message_row(env))
        if len(batch) >= 1024:
            yield batch
            batch = []
    if batch:
        yield batch


async def raw_rows(task: JournalTask, begin: int = 0, end: int | None = None
                   ) -> AsyncIterator[list[Row]]:
    """Rows of the task's bytes within [begin, end), each at most BATCH_BYTES long."""
    async for offset, chunk in content(task, begin, end):
        yield [(task.journal, offset + at, bytes(chunk[at:at + BATCH_BYTES]))
               for at in range(0, len(chunk), BATCH_BYTES)]


def task_rows(task: JournalTask) -> Iterator[Row]:
    """The rows of one journal, streamed out of an event loop of their own."""
    batches = raw_rows(task) if task.kind == RAW else message_rows(task)
    loop = asyncio.new_event_loop()
    try:
        while True:
            try:
                batch = loop.run_until_complete(anext(batches))  # type: ignore[arg-type]
            except StopAsyncIteration:
                return
            yield from batch
    finally:
        loop.run_until_complete(_close(batches))
        loop.close()


async def _close(batches: AsyncIterator[list[Row]]) -> None:
    close = getattr(batches, "aclose", None)
    if close is not None:
        await close()
    await close_channels()  # Channels are bound to this loop.


def partition_rows(items: Iterable[JournalTask]) -> Iterator[Row]:
    """An executor partition: the rows of each of its journals in turn."""
    for task in items:
        yield from task_rows(task)
