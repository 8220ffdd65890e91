"""A write task: its rows published UNCOMMITTED under a producer of its own.

Each task attempt draws a fresh producer ID and stamps every row CONTINUE_TXN
with its clock, so none is visible to read-committed readers (or consumers)
until an ACK_TXN of that producer commits them; only the driver writes those
(sink_commit.py). Rows are routed, then a whole Arrow batch is encoded before
any of it is published, and records are gathered per journal into appends of
about `appendBytes`, never one RPC per row. The task returns a `Published`
commit message listing, per journal, its producer and first and last clocks.

A task that fails after publishing rolls its own producer back (best effort)
so readers' sequencers forget it; if it cannot (its executor died), its
messages stay pending for ever, which readers never emit either.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import WriterCommitMessage

from gazette_core.broker.client.appender import append_retrying
from gazette_core.broker.client.channel import close_channels, journal_stub
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import GazetteError, ValidationError
from gazette_core.message.mapping import Partitions, modulo_mapping
from gazette_core.message.uuid import TICK, Clock, Flags, new_producer_id
from spark_jobs.sink_acks import Span, rollback_records
from spark_jobs.sink_encode import encode_row, stamp
from spark_jobs.sink_options import ROUTE_COLUMN
from spark_jobs.sink_plan import COLUMN, PARTITIONS, SinkPlan, resolve_journal
from spark_jobs.uuid_columns import format_uuids

log = logging.getLogger(__name__)


class Published(WriterCommitMessage):
    """What one task attempt published, for the driver to commit or roll back."""

    def __init__(self, spans: tuple[Span, ...]) -> None:
        self.spans = spans

    def __repr__(self) -> str:
        return f"Published({self.spans!r})"


def publish_task(plan: SinkPlan, batches: Iterator[pa.RecordBatch]) -> Published:
    """Publish every row of `batches` uncommitted; roll back what was sent if that fails."""
    async def run() -> Published:
        task = TaskPublisher(plan)
        try:
            for batch in batches:
                await task.add(batch)
            return await task.finish()
        except Exception:
            await task.roll_back()
            raise
        finally:
            await close_channels()

    return asyncio.run(run())


class TaskPublisher:
    """Routes, encodes, stamps and appends the rows of one task attempt."""

    def __init__(self, plan: SinkPlan) -> None:
        self.plan = plan
        self.producer = new_producer_id()
        self.clock = Clock()
        self.clock.update()
        self.kinds: dict[str, str] = dict(plan.targets)
        self.buffers: dict[str, bytearray] = {}
        self.spans: dict[str, list[int]] = {}  # journal -> [first clock, last clock]
        self.appended: set[str] = set()
        self.stub = journal_stub(plan.options.broker, plan.options.client)
        self.mapping = _partition_mapping(plan) if plan.route == PARTITIONS else None

    async def add(self, batch: pa.RecordBatch) -> None:
        journals = await self._route(batch)
        rows = _rows(batch, self.plan.columns)
        # Every row of the batch is encoded (and checked) before any is published.
        bodies = [encode_row(self.kinds[j], row) for j, row in zip(journals, rows, strict=True)]
        first = self.clock.value + TICK
        clocks = first + TICK * np.arange(len(bodies), dtype=np.uint64)
        self.clock.value = first + TICK * max(len(bodies) - 1, 0)
        uuids = format_uuids(self.producer, clocks, Flags.CONTINUE_TXN)
        for journal, body, uuid, clock in zip(journals, bodies, uuids, clocks.tolist(),
                                              strict=True):
            buffer = self.buffers.setdefault(journal, bytearray())
            buffer += stamp(self.kinds[journal], uuid, body)
            span = self.spans.setdefault(journal, [clock, clock])
            span[1] = clock
            if len(buffer) >= self.plan.options.append_bytes:
                await self._flush(journal)

    async def finish(self) -> Published:
        for journal in list(self.buffers):
            await self._flush(journal)
        pid = self.producer.hex()
        return Published(tuple((j, pid, first, last, self.kinds[j])
                               for j, (first, last) in sorted(self.spans.items())))

    async def roll_back(self) -> None:
        """Best effort: rollback ACKs for the journals this attempt appended to."""
        pid = self.producer.hex()
        for journal in sorted(self.appended):
            first, _ = self.spans[journal]
            span = (journal, pid, first, first, self.kinds[journal])
            try:
                await append_retrying(self.stub, journal, rollback_records([span], self.plan.width),
                                      deadline=self.plan.options.timeout)
            except GazetteError as exc:
                log.warning("could not roll back producer %s in %s: %s", pid, journal, exc)

    async def _flush(self, journal: str) -> None:
        buffer = self.buffers.pop(journal, None)
        if not buffer:
            return
        self.appended.add(journal)  # a failed append may still have reached the journal
        await append_retrying(self.stub, journal, bytes(buffer),
                              deadline=self.plan.options.timeout)

    async def _route(self, batch: pa.RecordBatch) -> list[str]:
        plan = self.plan
        if plan.route == COLUMN:
            names = _column(batch, ROUTE_COLUMN)
            for name in set(names):
                if name is None:
                    raise ValidationError("column journal", "a row's journal is null")
                if name not in self.kinds:
                    self.kinds[name] = await resolve_journal(plan.options, name)
            return names
        if self.mapping is not None:
            assert plan.options.key_column is not None
            return [self._partition(key) for key in _column(batch, plan.options.key_column)]
        return [plan.targets[0][0]] * batch.num_rows

    def _partition(self, key: Any) -> str:
        if key is None:
            raise ValidationError(f"column {self.plan.options.key_column}",
                                  "a row's key is null: it cannot pick a partition")
        assert self.mapping is not None
        return self.mapping(key if isinstance(key, str | bytes) else str(key))[0]


def _partition_mapping(plan: SinkPlan) -> Any:
    """The publishers' modulo mapping over the partitions the driver listed (not watched)."""
    partitions = Partitions(None, pb.LabelSelector())  # type: ignore[arg-type]
    journals = [pb.ListResponse.Journal(spec=pb.JournalSpec.FromString(raw))
                for raw in plan.partition_specs]
    partitions.apply(pb.ListResponse(journals=journals))
    return modulo_mapping(lambda key: key, partitions)  # type: ignore[arg-type, return-value]


def _column(batch: pa.RecordBatch, name: str) -> list[Any]:
    for index, field in enumerate(batch.schema):
        if field.name.lower() == name.lower():
            return batch.column(index).to_pylist()
    raise ValidationError(f"column {name}", "missing from the rows written")


def _rows(batch: pa.RecordBatch, columns: tuple[str, ...]) -> list[dict[str, Any]]:
    if not columns:
        return [{} for _ in range(batch.num_rows)]
    return batch.select(list(columns)).to_pylist(maps_as_pydicts="strict")
