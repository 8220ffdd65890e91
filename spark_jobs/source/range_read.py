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
from collections.abc import AsyncIterator, Awaitable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from gazette_core.broker.client.channel import close_channels
from spark_jobs.decode import bulk_sequence
from spark_jobs.decode.arrow_frames import batch_of_rows, task_schema
from spark_jobs.decode.bulk_range import bulk_batches, bulk_states, range_uuids, states_after
from spark_jobs.decode.content import RAW, JournalTask
from spark_jobs.decode.rows import raw_rows
from spark_jobs.decode.uuid_columns import UUIDColumns

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

# (producer ID as 12 hex digits, last ACK clock, largest pending clock, open span's offset
# or -1). Plain values, so streaming offsets (JSON) and partitions (pickled) carry them.
ProducerState = bulk_sequence.ProducerState
T = TypeVar("T")



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


async def _closing(result: Awaitable[T]) -> T:
    try:
        return await result
    finally:
        await close_channels()


def _uuids_of(task: RangeTask) -> list[tuple[np.ndarray, UUIDColumns]]:
    return asyncio.run(_closing(range_uuids(task.source, task.begin, task.end)))


class RangeScanner:
    """`scan_states` for the ranges of a plan, the UUIDs of the next ranges read on threads
    while the one before is scanned.

    A range's states depend on those before it, but reading its UUIDs does not: only the
    sequencing, a few array operations, waits for the states at its begin. At most AHEAD
    ranges are read ahead, so what is held stays a few ranges' UUIDs.
    """

    AHEAD = 2

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(self.AHEAD, thread_name_prefix="range-scan")
        self._queue: list[RangeTask] = []
        self._read: dict[tuple[str, int, int], Future[list[tuple[np.ndarray, UUIDColumns]]]] = {}

    def ahead(self, tasks: Sequence[RangeTask]) -> None:
        """Start reading the UUIDs of `tasks`, which will be scanned in this order."""
        self._queue.extend(t for t in tasks if t.source.kind != RAW)
        self._fill()

    def _fill(self) -> None:
        while self._queue and len(self._read) < self.AHEAD:
            task = self._queue.pop(0)
            key = (task.source.journal, task.begin, task.end)
            self._read[key] = self._pool.submit(_uuids_of, task)

    def __call__(self, task: RangeTask) -> tuple[ProducerState, ...]:
        if task.source.kind == RAW:
            return ()
        read = self._read.pop((task.source.journal, task.begin, task.end), None)
        self._fill()
        found = read.result() if read is not None else _uuids_of(task)
        return states_after(task.begin, task.producers, found)

    def close(self) -> None:
        for read in self._read.values():
            read.cancel()
        self._pool.shutdown(wait=True, cancel_futures=True)


def journal_rows(source: JournalTask) -> Iterator[tuple[Any, ...]]:
    """Every row of one whole task as tuples: its fragments read as a single range."""
    fragments = source.parsed()
    if not fragments:
        return
    task = RangeTask(source=source, begin=fragments[0].begin, end=fragments[-1].end)
    for batch in read_range(task):
        yield from zip(*(column.to_pylist() for column in batch.columns), strict=True)
