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
from gazette_core.errors import AppendError, ValidationError
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


def query_of(messages: Sequence[object]) -> str | None:
    """The streaming query's ID, as the tasks saw it (None if none did)."""
    return next((m.attempt.query for m in messages if isinstance(m, Published)
                 and m.attempt is not None and m.attempt.query), None)


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
           batch_id: int | None = None, failed: Sequence[Span] = (),
           query: str | None = None) -> list[str]:
    """Commit `spans` and roll back `failed` (attempts that died), one append per journal;
    return the journals a replay found done.

    With `batch_id` (streaming) each append is guarded by the sink's register.
    """
    dead = by_journal(failed)

    async def run() -> list[str]:
        try:
            stub = journal_stub(options.broker, options.client)
            # Every journal's commit runs to its end before any failure is raised.
            done = await asyncio.gather(*(
                _commit_journal(stub, options, journal, group, width, batch_id,
                                dead.get(journal, []), query)
                for journal, group in by_journal(spans).items()), return_exceptions=True)
            for outcome in done:
                if isinstance(outcome, BaseException):
                    raise outcome
            return [journal for journal in done if isinstance(journal, str) and journal]
        finally:
            await close_channels()

    return asyncio.run(run())


async def _commit_journal(stub: JournalAsyncStub, options: SinkOptions, journal: str,
                          spans: list[Span], width: int, batch_id: int | None,
                          dead: list[Span], query: str | None) -> str:
    records = rollback_records(dead, width) + commit_records(spans, width)
    owned = True
    while True:
        check = union = None
        if batch_id is not None:
            check, union = batch_guard(options.register, batch_id, query, owned=owned)
        try:
            await append_retrying(stub, journal, records, deadline=options.timeout,
                                  check_registers=check, union_registers=union)
            return ""
        except AppendError as exc:
            if exc.response.status != pb.REGISTER_MISMATCH or batch_id is None:
                raise
            found = [label.value for label in exc.response.registers.labels
                     if label.name == options.register]
        verdict = _verdict(found, batch_id, query)
        if verdict != NEW or not owned:
            break
        owned = False  # the sink's first commit to this journal (or one of an older version)
    await append_retrying(stub, journal, rollback_records([*dead, *spans], width),
                          deadline=options.timeout)
    if verdict == REUSED:
        raise ValidationError(
            "option sinkId", f"{options.sink_id!r} already records the commits of another "
            f"query in journal {journal} (batch {found[0]}); a sinkId stays with its "
            "checkpoint: give a query started from a new checkpoint a new sinkId")
    log.warning("batch %s of sink %s was committed to %s before (a replay): rolling back "
                "the replay's rows there", batch_id, options.sink_id, journal)
    return journal


NEW, REPLAY, REUSED = "new", "replay", "reused"


def _verdict(found: list[str], batch_id: int, query: str | None) -> str:
    """What a register refusing a commit holds: this batch already (a replay), another
    query's batch (a reused sinkId), or none of this query's yet (new to the sink)."""
    if str(batch_id) in found or f"{query}/{batch_id}" in found:
        return REPLAY
    if query is not None and any("/" in v and not v.startswith(f"{query}/") for v in found):
        return REUSED
    return NEW


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
