"""Prometheus metrics of the sequencer, under Go's names and label values.

- `gazette_sequencer_queued{journal,flag,outcome}`: read-uncommitted
  messages sequenced, by UUID flag (`OUTSIDE_TXN`, `CONTINUE_TXN`,
  `ACK_TXN`; a message without a UUID, or with unknown flags, counts as
  OUTSIDE_TXN, as it is sequenced) and outcome (Go's names:
  `outsideCommit`, `continueBeginSpan`, `ackCommitRing`, ...).
- `gazette_sequencer_replay{journal}`: messages re-read from a journal to
  commit a sequence that left the ring buffer (shown from a journal's first
  sequenced message on, 0 until a replay happens).

Both are counters named without `_total`, as Go names them. Sequencing is
the consumer's hottest loop, so it only adds 1 to a slot of a plain list of
counts per journal (`JournalSeries.tally`, indexed like QueueOutcome's
members), which the scrape reads; outcomes never seen are not shown.
"""

from __future__ import annotations

from gazette_core.metrics.families import Cell, Counter

QUEUED = Counter("gazette_sequencer_queued",
                 "Read-uncommitted messages sequenced, by UUID flag and outcome.",
                 ("journal", "flag", "outcome"), hide_zeros=True)
REPLAYED = Counter("gazette_sequencer_replay",
                   "Messages re-read from a journal to replay a committed sequence.",
                   ("journal",))

# Per QueueOutcome member, in its order: the member's name, and Go's flag and outcome.
SLOTS = (
    ("OUTSIDE_ALREADY_ACKED", "OUTSIDE_TXN", "outsideAlreadyAcked"),
    ("OUTSIDE_COMMIT", "OUTSIDE_TXN", "outsideCommit"),
    ("CONTINUE_ALREADY_ACKED", "CONTINUE_TXN", "continueAlreadyAcked"),
    ("CONTINUE_TXN_CLOCK_LARGER", "CONTINUE_TXN", "continueRingClockLarger"),
    ("CONTINUE_BEGIN_SPAN", "CONTINUE_TXN", "continueBeginSpan"),
    ("CONTINUE_EXTEND_SPAN", "CONTINUE_TXN", "continueExtendSpan"),
    ("ACK_ROLLBACK", "ACK_TXN", "ackRollback"),
    ("ACK_EMPTY", "ACK_TXN", "ackEmpty"),
    ("ACK_COMMIT_RING", "ACK_TXN", "ackCommitRing"),
    ("ACK_COMMIT_REPLAY", "ACK_TXN", "ackCommitReplay"),
)


class _Slot(Cell):
    """A series read from one slot of a journal's tally."""

    __slots__ = ("_counts", "_index")

    def __init__(self, counts: list[int], index: int) -> None:
        self._counts, self._index = counts, index

    @property
    def value(self) -> float:
        return self._counts[self._index]

    @value.setter
    def value(self, value: float) -> None:
        self._counts[self._index] = int(value)


class JournalSeries:
    """The sequencer series of one journal, shared by every sequencer of the process."""

    __slots__ = ("replayed", "tally")

    def __init__(self, journal: str) -> None:
        self.tally = [0] * len(SLOTS)
        for index, (_, flag, outcome) in enumerate(SLOTS):
            QUEUED.show(_Slot(self.tally, index), journal, flag, outcome)
        self.replayed = REPLAYED.cell(journal)


_journals: dict[str, JournalSeries] = {}


def journal_series(journal: str) -> JournalSeries:
    series = _journals.get(journal)
    if series is None:
        series = _journals[journal] = JournalSeries(journal)
    return series
