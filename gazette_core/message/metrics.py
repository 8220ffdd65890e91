"""Prometheus metrics of the sequencer, under Go's names and label values.

- `gazette_sequencer_queued{journal,flag,outcome}`: read-uncommitted
  messages sequenced, by UUID flag (`OUTSIDE_TXN`, `CONTINUE_TXN`,
  `ACK_TXN`; a message without a UUID, or with unknown flags, counts as
  OUTSIDE_TXN, as it is sequenced) and outcome (Go's names:
  `outsideCommit`, `continueBeginSpan`, `ackCommitRing`, ...).
- `gazette_sequencer_replay{journal}`: messages re-read from a journal to
  commit a sequence that left the ring buffer (shown from a journal's first
  sequenced message on, 0 until a replay happens).

Both are counters named without `_total`, as Go names them. The sequencer
adds a batch's outcomes up locally and counts them here once per batch.
"""

from __future__ import annotations

from collections.abc import Sequence

from gazette_core.metrics.families import Cell, Counter

QUEUED = Counter("gazette_sequencer_queued",
                 "Read-uncommitted messages sequenced, by UUID flag and outcome.",
                 ("journal", "flag", "outcome"))
REPLAYED = Counter("gazette_sequencer_replay",
                   "Messages re-read from a journal to replay a committed sequence.",
                   ("journal",))

FLAGS = {0: "OUTSIDE_TXN", 1: "CONTINUE_TXN", 2: "ACK_TXN"}
# Go's names of each QueueOutcome (by the name of our enum member).
OUTCOMES = {
    "OUTSIDE_ALREADY_ACKED": "outsideAlreadyAcked",
    "OUTSIDE_COMMIT": "outsideCommit",
    "CONTINUE_ALREADY_ACKED": "continueAlreadyAcked",
    "CONTINUE_TXN_CLOCK_LARGER": "continueRingClockLarger",
    "CONTINUE_BEGIN_SPAN": "continueBeginSpan",
    "CONTINUE_EXTEND_SPAN": "continueExtendSpan",
    "ACK_ROLLBACK": "ackRollback",
    "ACK_EMPTY": "ackEmpty",
    "ACK_COMMIT_RING": "ackCommitRing",
    "ACK_COMMIT_REPLAY": "ackCommitReplay",
}
# The (flag, outcome) of each slot of a batch's tally (Sequencer._queue_each).
TALLY = ((0, "OUTSIDE_COMMIT"), (0, "OUTSIDE_ALREADY_ACKED"), (2, "ACK_ROLLBACK"),
         (2, "ACK_EMPTY"), (1, "CONTINUE_ALREADY_ACKED"), (1, "CONTINUE_TXN_CLOCK_LARGER"),
         (1, "CONTINUE_EXTEND_SPAN"), (1, "CONTINUE_BEGIN_SPAN"))


class JournalSeries:
    """The sequencer series of one journal."""

    __slots__ = ("_queued", "journal", "replayed")

    def __init__(self, journal: str) -> None:
        self.journal = journal
        self.replayed = REPLAYED.cell(journal)
        self._queued: dict[tuple[int, str], Cell] = {}

    def queued(self, flags: int, outcome: str) -> Cell:
        """The series of messages of `flags` sequenced to `outcome` (an enum member name)."""
        key = (flags, outcome)
        cell = self._queued.get(key)
        if cell is None:
            cell = self._queued[key] = QUEUED.cell(self.journal, FLAGS[flags],
                                                   OUTCOMES[outcome])
        return cell

    def add_tally(self, tally: Sequence[int]) -> None:
        """Count a batch's tally (counts in TALLY's order)."""
        for (flags, outcome), count in zip(TALLY, tally, strict=True):
            if count:
                self.queued(flags, outcome).value += count
