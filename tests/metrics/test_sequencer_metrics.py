"""gazette_sequencer_queued and _replay: Go's flag and outcome labels, counted per journal
whether envelopes are queued one by one or in batches."""

from __future__ import annotations

import itertools

from gazette_core.message import metrics
from gazette_core.message.interfaces import Envelope
from gazette_core.message.sequencer import QueueOutcome, Sequencer
from gazette_core.message.structs import StructMessage
from gazette_core.message.uuid import Clock, Flags, build_uuid, new_producer_id
from tests.metrics.scrape import Family
from tests.metrics.test_exposition import scraped

_journals = itertools.count()


class Tick(StructMessage):
    n: int = 0


class Log:
    """Envelopes of one producer in one journal of its own."""

    def __init__(self) -> None:
        self.journal = f"seq/metrics-{next(_journals)}"
        self.producer, self.clock = new_producer_id(), Clock()
        self.clock.update()
        self.offset = 0

    def next(self, flags: int, clock: int | None = None) -> Envelope:
        uuid = build_uuid(self.producer, self.clock.tick() if clock is None else clock, flags)
        env = Envelope(self.journal, self.offset, self.offset + 10, Tick(uuid=str(uuid)))
        self.offset += 10
        return env


def queued(family: Family, journal: str) -> dict[tuple[str, str], float]:
    return {(labels["flag"], labels["outcome"]): value for _, labels, value in family.samples
            if labels["journal"] == journal}


def test_slots_follow_the_outcomes() -> None:
    assert [name for name, _, _ in metrics.SLOTS] == [o.name for o in QueueOutcome]


async def test_outcomes_are_counted_under_gos_names() -> None:
    log, seq = Log(), Sequencer(ring_size=2)
    first = log.next(Flags.OUTSIDE_TXN)
    seq.queue_uncommitted(first)
    while await seq.step():
        pass
    batch = [log.next(Flags.CONTINUE_TXN) for _ in range(3)]
    committed, at = seq.queue_batch(batch)
    assert (committed, at) == ([], 3)
    ack = log.next(Flags.ACK_TXN)
    assert seq.queue_uncommitted(ack) is QueueOutcome.ACK_COMMIT_REPLAY  # ring of 2
    seq.start_replay(batch[:1])
    while await seq.step():
        pass
    stale = log.next(Flags.OUTSIDE_TXN, clock=1)
    assert seq.queue_batch([stale]) == ([], 1)

    family = scraped()["gazette_sequencer_queued"]
    assert family.kind == "counter"
    assert queued(family, log.journal) == {
        ("OUTSIDE_TXN", "outsideCommit"): 1, ("CONTINUE_TXN", "continueBeginSpan"): 1,
        ("CONTINUE_TXN", "continueExtendSpan"): 2, ("ACK_TXN", "ackCommitReplay"): 1,
        ("OUTSIDE_TXN", "outsideAlreadyAcked"): 1}
    replays = scraped()["gazette_sequencer_replay"]
    assert [(labels, v) for _, labels, v in replays.samples
            if labels["journal"] == log.journal] == [({"journal": log.journal}, 1.0)]


def test_a_batch_outside_transactions_counts_at_once() -> None:
    log, seq = Log(), Sequencer()
    batch = [log.next(Flags.OUTSIDE_TXN) for _ in range(40)]
    committed, at = seq.queue_batch(batch)
    assert (len(committed), at) == (40, 40)
    assert queued(scraped()["gazette_sequencer_queued"], log.journal) == {
        ("OUTSIDE_TXN", "outsideCommit"): 40}
