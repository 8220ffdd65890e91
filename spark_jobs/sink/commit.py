"""The driver's side of a write: ACKs that commit the tasks' producers, or roll them back.

Commit writes, per target journal, ONE append holding an ACK_TXN for each
producer that published to it, at a clock above that producer's last
message: read-committed readers and consumers then emit the producer's rows,
all of that journal's at once. A rollback ACK sits one below the producer's
first clock, so sequencers drop its pending messages and forget it.

A streaming commit is guarded per journal by a register (`batch_guard`):
the append checks that the journal's register `spark-sink/<sinkId>` does not
already record this batch and records it in the same atomic append. Spark
replays a micro-batch whose commit it did not log (the driver died between
our commit and its commit log); the replay then finds each journal its first
run committed already marked, commits nothing there and rolls its own
producers back, while journals the first run had not reached yet are
committed with the replay's rows.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from gazette_core.broker.client.appender import append_retrying
from gazette_core.broker.client.channel import close_channels, journal_stub
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import AppendError
from spark_jobs.sink.acks import Span, commit_records, rollback_records
from spark_jobs.sink.attempts import failed_spans
from spark_jobs.sink.options import SinkOptions, batch_guard
from spark_jobs.sink.publish import Published

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub

log = logging.getLogger(__name__)


def spans_of(messages: Sequence[object]) -> list[Span]:
    """The spans of the tasks' commit messages (None for tasks that sent none)."""
    return [span for m in messages if isinstance(m, Published) for span in m.spans]


def failed_of(nonce: str, messages: Sequence[object]) -> list[Span]:
    """Rollback spans of the attempts that ran before the kept ones (attempts.py)."""
    return [span for m in messages if isinstance(m, Published) and m.attempt is not None
            for span in failed_spans(nonce, m.attempt, m.spans)]


def by_journal(spans: Iterable[Span]) -> dict[str, list[Span]]:
    grouped: dict[str, list[Span]] = defaultdict(list)
    for span in spans:
        grouped[span[0]].append(span)
    return dict(sorted(grouped.items()))


def commit(options: SinkOptions, width: int, spans: list[Span],
           batch_id: int | None = None, failed: Sequence[Span] = ()) -> list[str]:
    """Commit `spans` and roll back `failed` (attempts that died), one append per journal;
    return the journals a replay found done.

    With `batch_id` (streaming) each append is guarded by the sink's register.
    """
    dead = by_journal(failed)

    async def run() -> list[str]:
        try:
            stub = journal_stub(options.broker, options.client)
            done = await asyncio.gather(*(
                _commit_journal(stub, options, journal, group, width, batch_id,
                                dead.get(journal, []))
                for journal, group in by_journal(spans).items()))
            return [journal for journal in done if journal]
        finally:
            await close_channels()

    return asyncio.run(run())


async def _commit_journal(stub: JournalAsyncStub, options: SinkOptions, journal: str,
                          spans: list[Span], width: int, batch_id: int | None,
                          dead: list[Span]) -> str:
    check = union = None
    if batch_id is not None:
        check, union = batch_guard(options.register, batch_id)
    try:
        await append_retrying(stub, journal,
                              rollback_records(dead, width) + commit_records(spans, width),
                              deadline=options.timeout, check_registers=check,
                              union_registers=union)
        return ""
    except AppendError as exc:
        if exc.response.status != pb.REGISTER_MISMATCH:
            raise
    log.warning("batch %s of sink %s was committed to %s before (a replay): rolling back "
                "the replay's rows there", batch_id, options.sink_id, journal)
    await append_retrying(stub, journal, rollback_records([*dead, *spans], width),
                          deadline=options.timeout)
    return journal


def roll_back(options: SinkOptions, width: int, spans: list[Span]) -> None:
    """Roll back `spans` (an aborted job or micro-batch), one append per journal."""
    async def run() -> None:
        try:
            stub = journal_stub(options.broker, options.client)
            await asyncio.gather(*(
                append_retrying(stub, journal, rollback_records(group, width),
                                deadline=options.timeout)
                for journal, group in by_journal(spans).items()))
        finally:
            await close_channels()

    asyncio.run(run())
