"""A write task: its rows published UNCOMMITTED under a producer of its own.

Each task attempt draws a fresh producer ID and stamps every row CONTINUE_TXN
with its clock, so none is visible to read-committed readers (or consumers)
until an ACK_TXN of that producer commits them; only the driver writes those
(commit.py). Rows are routed, then a whole Arrow batch is encoded before
any of it is published, and records are gathered per journal into appends of
about `appendBytes`, never one RPC per row. Reading the next batch from
Spark and encoding it run in a thread of their own while the event loop
sends the previous appends (up to MAX_IN_FLIGHT per journal, each after the
one before it, so a producer's messages land in clock order). The task returns a `Published`
commit message listing, per journal, its producer and first and last clocks.

A task that fails after publishing rolls its own producer back (best effort)
so readers' sequencers forget it; if it cannot (its executor died), its
messages stay pending for ever, which readers never emit either.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import WriterCommitMessage

from gazette_core.broker.client.appender import append_retrying
from gazette_core.broker.client.channel import close_channels, journal_stub
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import GazetteError
from gazette_core.message.mapping import Partitions, modulo_mapping
from gazette_core.message.uuid import TICK, Clock, Flags, new_producer_id
from spark_jobs.decode.content import JSON
from spark_jobs.decode.uuid_columns import uuid_text
from spark_jobs.sink.acks import Span, rollback_records
from spark_jobs.sink.attempts import Attempt, current_attempt, producer_of
from spark_jobs.sink.columns import json_records, record_bytes, uuid_array
from spark_jobs.sink.encode import encode_row, stamp
from spark_jobs.sink.options import ROUTE_COLUMN
from spark_jobs.sink.plan import COLUMN, PARTITIONS, SinkPlan, resolve_journal
from spark_jobs.sink.route import Route, by_column, by_key, one, route_kinds
from spark_jobs.sink.values import value_records

log = logging.getLogger(__name__)
MAX_IN_FLIGHT = 2  # Appends per journal sent or waiting while the next batch is encoded.


class Published(WriterCommitMessage):
    """What one task attempt published, for the driver to commit or roll back."""

    def __init__(self, spans: tuple[Span, ...], attempt: Attempt | None = None) -> None:
        self.spans = spans
        self.attempt = attempt

    def __repr__(self) -> str:
        return f"Published({self.spans!r}, {self.attempt!r})"


def publish_task(plan: SinkPlan, nonce: str, batches: Iterator[pa.RecordBatch]) -> Published:
    """Publish every row of `batches` uncommitted; roll back what was sent if that fails.

    The producer is derived from `nonce` (the writer's) and the task attempt (attempts.py).
    """
    async def run() -> Published:
        task = TaskPublisher(plan, current_attempt(), nonce)
        loop = asyncio.get_running_loop()
        try:
            with ThreadPoolExecutor(1, thread_name_prefix="gazette-sink") as pool:
                while (batch := await loop.run_in_executor(pool, next, batches, None)) is not None:
                    route = await task.route(batch)
                    records, clocks = await loop.run_in_executor(pool, task.encode, batch, route)
                    await task.add(route, records, clocks)
            return await task.finish()
        except Exception:
            await task.roll_back()
            raise
        finally:
            await close_channels()

    return asyncio.run(run())


class TaskPublisher:
    """Routes, encodes, stamps and appends the rows of one task attempt."""

    def __init__(self, plan: SinkPlan, attempt: Attempt | None = None, nonce: str = "") -> None:
        self.plan = plan
        self.attempt = attempt
        self.producer = new_producer_id() if attempt is None else producer_of(
            nonce, attempt.stage, attempt.partition, attempt.number)
        self.clock = Clock()
        self.clock.update()
        self.kinds: dict[str, str] = dict(plan.targets)
        self.buffers: dict[str, list[memoryview]] = {}  # journal -> its next append's pieces
        self.buffered: dict[str, int] = {}  # journal -> bytes in its next append
        self.spans: dict[str, list[int]] = {}  # journal -> [first clock, last clock]
        self.appended: set[str] = set()
        self.in_flight: dict[str, list[asyncio.Future[object]]] = {}
        self.stub = journal_stub(plan.options.broker, plan.options.client)
        self.mapping = _partition_mapping(plan) if plan.route == PARTITIONS else None

    async def route(self, batch: pa.RecordBatch) -> Route:
        plan = self.plan
        if plan.route == COLUMN:
            return await by_column(batch, ROUTE_COLUMN, self._check_journal)
        if self.mapping is not None:
            assert plan.options.key_column is not None
            return by_key(batch, plan.options.key_column, self._partition)
        return one(plan.targets[0][0], batch.num_rows)

    def encode(self, batch: pa.RecordBatch, route: Route) -> tuple[pa.Array, np.ndarray]:
        """Every row's whole record (all checked before any is published), and its clock."""
        first = self.clock.value + TICK
        clocks = first + TICK * np.arange(batch.num_rows, dtype=np.uint64)
        text = uuid_text(self.producer, clocks, Flags.CONTINUE_TXN)
        records = self._records(batch, route, uuid_array(text))
        self.clock.value = first + TICK * max(batch.num_rows - 1, 0)
        return records, clocks

    def _records(self, batch: pa.RecordBatch, route: Route, uuids: pa.Array) -> pa.Array:
        """Column by column when all rows go to JSON journals and every column is flat,
        else row by row."""
        kinds = [self.kinds[j] for j in route.journals]
        if self.plan.value is not None:
            return value_records(batch, self.plan.value, route, kinds, uuids)
        if all(kind == JSON for kind in kinds):
            fast = json_records(batch, self.plan.columns, uuids)
            if fast is not None:
                return fast
        rows = _rows(batch, self.plan.columns)
        row_kinds = route_kinds(route, kinds, batch.num_rows)
        return pa.array([stamp(kind, uuid, encode_row(kind, row))
                         for kind, uuid, row in zip(row_kinds, uuids.to_pylist(), rows,
                                                    strict=True)], type=pa.binary())

    async def add(self, route: Route, records: pa.Array, clocks: np.ndarray) -> None:
        for journal, rows in route.rows_of():
            part = records if rows is None else records.take(rows)
            raw, offsets = record_bytes(part)
            mine = clocks if rows is None else clocks[rows]
            span = self.spans.setdefault(journal, [int(mine[0]), int(mine[0])])
            span[1] = int(mine[-1])
            await self._buffer(journal, raw, offsets)

    async def _buffer(self, journal: str, raw: memoryview, offsets: np.ndarray) -> None:
        """Add records to the journal's next append, cut at records into about appendBytes."""
        limit = self.plan.options.append_bytes
        n, i = len(offsets) - 1, 0
        while i < n:
            size = self.buffered.get(journal, 0)
            j = int(np.searchsorted(offsets, offsets[i] + limit - size, side="right")) - 1
            j = min(max(j, i + 1), n)
            self.buffers.setdefault(journal, []).append(raw[offsets[i]:offsets[j]])
            self.buffered[journal] = size = size + int(offsets[j] - offsets[i])
            i = j
            if size >= limit:
                await self._flush(journal)

    async def finish(self) -> Published:
        for journal in list(self.buffers):
            await self._flush(journal)
        for queue in self.in_flight.values():
            for sent in queue:
                await sent
        pid = self.producer.hex()
        return Published(tuple((j, pid, first, last, self.kinds[j])
                               for j, (first, last) in sorted(self.spans.items())), self.attempt)

    async def roll_back(self) -> None:
        """Best effort: rollback ACKs for the journals this attempt appended to."""
        pending = [sent for queue in self.in_flight.values() for sent in queue]
        for sent in pending:
            sent.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        pid = self.producer.hex()
        for journal in sorted(self.appended):
            first, _ = self.spans[journal]
            span = (journal, pid, first, first, self.kinds[journal])
            try:
                await append_retrying(self.stub, journal,
                                      rollback_records([span], self.plan.width),
                                      deadline=self.plan.options.timeout)
            except GazetteError as exc:
                log.warning("could not roll back producer %s in %s: %s", pid, journal, exc)

    async def _flush(self, journal: str) -> None:
        pieces = self.buffers.pop(journal, None)
        self.buffered.pop(journal, None)
        if not pieces:
            return
        self.appended.add(journal)  # a failed append may still have reached the journal
        queue = self.in_flight.setdefault(journal, [])
        previous = queue[-1] if queue else None
        queue.append(asyncio.ensure_future(self._append(journal, b"".join(pieces), previous)))
        while len(queue) > MAX_IN_FLIGHT:
            await queue.pop(0)

    async def _append(self, journal: str, data: bytes,
                      previous: asyncio.Future[object] | None) -> None:
        if previous is not None:
            await previous  # a producer's messages land in the journal in clock order
        await append_retrying(self.stub, journal, data, deadline=self.plan.options.timeout)

    async def _check_journal(self, name: str) -> None:
        if name not in self.kinds:
            self.kinds[name] = await resolve_journal(self.plan.options, name)

    def _partition(self, key: Any) -> str:
        assert self.mapping is not None
        return self.mapping(key if isinstance(key, str | bytes) else str(key))[0]


def _partition_mapping(plan: SinkPlan) -> Any:
    """The publishers' modulo mapping over the partitions the driver listed (not watched)."""
    partitions = Partitions(None, pb.LabelSelector())  # type: ignore[arg-type]
    journals = [pb.ListResponse.Journal(spec=pb.JournalSpec.FromString(raw))
                for raw in plan.partition_specs]
    partitions.apply(pb.ListResponse(journals=journals))
    return modulo_mapping(lambda key: key, partitions)  # type: ignore[arg-type, return-value]


def _rows(batch: pa.RecordBatch, columns: tuple[str, ...]) -> list[dict[str, Any]]:
    if not columns:
        return [{} for _ in range(batch.num_rows)]
    return batch.select(list(columns)).to_pylist(maps_as_pydicts="strict")
