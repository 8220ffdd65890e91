"""The acknowledgements of a write: records that commit or roll back a producer's span.

A span is one task attempt's rows in one journal: (journal, producer ID in
hex, first clock, last clock, kind). An ACK_TXN at the last clock commits
every message of the span; one at clock 1, below any clock a producer
stamps, rolls the whole span back (sequencers drop the producer's pending
messages). Every rollback uses that clock, so a producer rolled back twice
(by its task, then by the driver) reads as one rollback, never as a clock
going backwards.
"""

from __future__ import annotations

from collections.abc import Iterable

from gazette_core.message.uuid import Flags, build_uuid
from spark_jobs.sink.encode import ack_record

Span = tuple[str, str, int, int, str]


def _ack(span: Span, clock: int, width: int) -> bytes:
    _journal, pid, _first, _last, kind = span
    uuid = str(build_uuid(bytes.fromhex(pid), clock, Flags.ACK_TXN))
    return ack_record(kind, uuid, width)


def commit_records(spans: Iterable[Span], width: int) -> bytes:
    """ACKs committing each span: at its last clock, so every message of it is in."""
    return b"".join(_ack(span, span[3], width) for span in spans)


ROLLBACK_CLOCK = 1


def rollback_records(spans: Iterable[Span], width: int) -> bytes:
    """ACKs rolling each span back: below its first clock, so none of it is committed."""
    return b"".join(_ack(span, ROLLBACK_CLOCK, width) for span in spans)
