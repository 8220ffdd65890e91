"""A write task: its rows published UNCOMMITTED under a producer of its own.

Each task attempt draws a fresh producer ID and stamps every row CONTINUE_TXN
with its clock, so none is visible to read-committed readers (or consumers)
until an ACK_TXN of that producer commits them; only the driver writes those
(commit.py). Rows are routed, then a whole Arrow batch is encoded before
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
from spark_jobs.decode.content import JSON
from spark_jobs.decode.uuid_columns import format_uuids
from spark_jobs.sink.acks import Span, rollback_records
from spark_jobs.sink.columns import json_records
from spark_jobs.sink.encode import encode_row, stamp
from spark_jobs.sink.options import ROUTE_COLUMN
from spark_jobs.sink.plan import COLUMN, PARTITIONS, SinkPlan, resolve_journal

log = logging.getLogger(__name__)
FLUSH_ROWS = 1024  # Rows added to a journal's buffer between checks of its size.


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
        first = self.clock.value + TICK
        clocks = first + TICK * np.arange(batch.num_rows, dtype=np.uint64)
        uuids = format_uuids(self.producer, clocks, Flags.CONTINUE_TXN)
        # Every row of the batch is encoded (and checked) before any is published.
        records = self._records(batch, journals, uuids)
        self.clock.value = first + TICK * max(batch.num_rows - 1, 0)
        stamps = clocks.tolist()
        for journal, rows in _by_journal(journals).items():
            buffer = self.buffers.setdefault(journal, bytearray())
            for start in range(0, len(rows), FLUSH_ROWS):
                part = rows[start:start + FLUSH_ROWS]
                buffer += b"".join(records[i] for i in part)
                span = self.spans.setdefault(journal, [stamps[part[0]], stamps[part[0]]])
                span[1] = stamps[part[-1]]
                if len(buffer) >= self.plan.options.append_bytes:
                    await self._flush(journal)
                    buffer = self.buffers.setdefault(journal, bytearray())

    def _records(self, batch: pa.RecordBatch, journals: list[str], uuids: list[str]
                 ) -> list[bytes]:
        """Each row's whole record: column by column when all go to JSON journals and every
        column is flat, else row by row."""
        if all(self.kinds[j] == JSON for j in set(journals)):
            records = json_records(batch, self.plan.columns, uuids)
            if records is not None:
                return records
        rows = _rows(batch, self.plan.columns)
        bodies = [encode_row(self.kinds[j], row) for j, row in zip(journals, rows, strict=True)]
        return [stamp(self.kinds[j], uuid, body)
                for j, uuid, body in zip(journals, uuids, bodies, strict=True)]

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


def _by_journal(journals: list[str]) -> dict[str, list[int]]:
    """The rows bound for each journal, in order."""
    if journals and journals.count(journals[0]) == len(journals):
        return {journals[0]: list(range(len(journals)))}
    out: dict[str, list[int]] = {}
    for i, journal in enumerate(journals):
        out.setdefault(journal, []).append(i)
    return out


def _column(batch: pa.RecordBatch, name: str) -> list[Any]:
    for index, field in enumerate(batch.schema):
        if field.name.lower() == name.lower():
            return batch.column(index).to_pylist()
    raise ValidationError(f"column {name}", "missing from the rows written")


def _rows(batch: pa.RecordBatch, columns: tuple[str, ...]) -> list[dict[str, Any]]:
    if not columns:
        return [{} for _ in range(batch.num_rows)]
    return batch.select(list(columns)).to_pylist(maps_as_pydicts="strict")
