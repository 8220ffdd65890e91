"""One task of the `gazette` data source: the committed messages of an offset range, as Arrow.

A `RangeTask` is a range [begin, end) of one journal plus the state of every
producer of the journal at `begin` (`ProducerState`: last ACK, largest pending
clock, offset of its open transaction). The task emits exactly the messages
whose *commit point* lies in the range: a message published outside a
transaction at its own offset, a transaction's messages at its ACK (read
again from before `begin` when the transaction opened there). So ranges that
tile a journal emit each committed message once, whatever the ranges cut
through: a transaction split from its ACK, a rollback, a retried append's
duplicate. `scan_states` gives the states at `end` that the next range starts
from (the driver chains them; streaming offsets carry them).

Journals without a message framing (RAW) have no producers: their ranges are
their bytes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gazette_core.broker.client.channel import close_channels
from spark_jobs.decode import bulk_sequence
from spark_jobs.decode.arrow_frames import batch_of_rows, task_schema
from spark_jobs.decode.bulk_range import bulk_batches, bulk_states
from spark_jobs.decode.content import RAW, JournalTask
from spark_jobs.decode.rows import raw_rows

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

# (producer ID as 12 hex digits, last ACK clock, largest pending clock, open span's offset
# or -1). Plain values, so streaming offsets (JSON) and partitions (pickled) carry them.
ProducerState = bulk_sequence.ProducerState



@dataclass(frozen=True)
class RangeTask:
    """Read [begin, end) of `source.journal`, starting from `producers`' states at `begin`.

    `source.fragments` must cover [begin, end) and every open span's offset
    before `begin`. `schema_json` is the schema the user gave (StructType
    JSON; arrow_frames.spark_columns), "" for the undecoded row.
    """

    source: JournalTask
    begin: int
    end: int
    producers: tuple[ProducerState, ...] = ()
    schema_json: str = ""

    def schema(self) -> StructType | None:
        from pyspark.sql.types import StructType

        if not self.schema_json:
            return None
        return StructType.fromJson(json.loads(self.schema_json))


async def _raw_batches(task: RangeTask, schema: Any) -> AsyncIterator[pa.RecordBatch]:
    async for rows in raw_rows(task.source, task.begin, task.end):
        yield batch_of_rows(RAW, rows, schema)


def read_range(task: RangeTask) -> Iterator[pa.RecordBatch]:
    """The task's committed messages (RAW: its bytes) as record batches of `output_schema`."""
    schema = task_schema(task.source.kind, task.schema_json)
    if task.source.kind == RAW:
        batches = _raw_batches(task, schema)
    else:
        batches = bulk_batches(task.source, task.begin, task.end, task.producers, schema)
    yield from run_batches(batches)


def run_batches(batches: AsyncIterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Drive an async generator of batches from synchronous code, on a loop of its own."""
    loop = asyncio.new_event_loop()
    try:
        while True:
            try:
                batch = loop.run_until_complete(anext(batches))  # type: ignore[arg-type]
            except StopAsyncIteration:
                return
            yield batch
    finally:
        loop.run_until_complete(_close(batches))
        loop.close()


async def _close(batches: AsyncIterator[Any]) -> None:
    close = getattr(batches, "aclose", None)
    if close is not None:
        await close()
    await close_channels()  # Channels are bound to this loop.


def scan_states(task: RangeTask) -> tuple[ProducerState, ...]:
    """The producer states at `task.end`, from those at `task.begin` and the range's UUIDs."""
    if task.source.kind == RAW:
        return ()
    return asyncio.run(_closing(bulk_states(task.source, task.begin, task.end,
                                            task.producers)))


async def _closing(states: Awaitable[tuple[ProducerState, ...]]) -> tuple[ProducerState, ...]:
    try:
        return await states
    finally:
        await close_channels()


def journal_rows(source: JournalTask) -> Iterator[tuple[Any, ...]]:
    """Every row of one whole task as tuples: its fragments read as a single range."""
    fragments = source.parsed()
    if not fragments:
        return
    task = RangeTask(source=source, begin=fragments[0].begin, end=fragments[-1].end)
    for batch in read_range(task):
        yield from zip(*(column.to_pylist() for column in batch.columns), strict=True)
