"""Producer IDs derived from the task attempt, so the driver can name the attempts that died.

A task attempt's producer is a hash of the writer's nonce (drawn on the
driver, once per job or streaming run), the Spark stage, the partition and
the attempt number. Spark hands the driver's commit only the kept attempt of
each partition; the attempts of that partition numbered below it ran before
it and failed, possibly after publishing rows, and may not have rolled
themselves back (their executor died). The commit derives their producers
and rolls them back in the journals the kept attempt wrote to (a retried
task reads the same rows, so it routes them to the same journals).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

from spark_jobs.sink.acks import Span

# The streaming query's ID, which Spark keeps in the checkpoint and sets for its tasks.
QUERY_ID_PROPERTY = "sql.streaming.queryId"


@dataclass(frozen=True)
class Attempt:
    """Which task attempt published: enough to derive its producer and its predecessors'."""

    stage: int
    partition: int
    number: int
    query: str | None = None  # the streaming query's ID, if any


def new_nonce() -> str:
    return os.urandom(8).hex()


def producer_of(nonce: str, stage: int, partition: int, number: int) -> bytes:
    """The 6-byte producer ID of an attempt (multicast bit set, as for random ones)."""
    raw = bytearray(hashlib.blake2b(f"{nonce}/{stage}/{partition}/{number}".encode(),
                                    digest_size=6).digest())
    raw[0] |= 0x01
    return bytes(raw)


def current_attempt() -> Attempt | None:
    """The running Spark task's attempt (None outside a task)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:
        return None
    return Attempt(context.stageId(), context.partitionId(), context.attemptNumber(),
                   context.getLocalProperty(QUERY_ID_PROPERTY))


def failed_spans(nonce: str, kept: Attempt, spans: tuple[Span, ...]) -> list[Span]:
    """Rollback spans for the attempts of `kept`'s partition before it, in the journals
    `spans` (the kept attempt's) name."""
    out: list[Span] = []
    for number in range(kept.number):
        pid = producer_of(nonce, kept.stage, kept.partition, number).hex()
        out += [(journal, pid, 2, 2, kind) for journal, _pid, _f, _l, kind in spans]
    return out
