"""read_committed: a journal's committed messages, each once, for applications outside consumers.

A Sequencer runs over a read of uncommitted envelopes: pending messages are
held back until their producer's ACK commits them, rolled-back ones never
appear, duplicates are dropped, and ACK envelopes themselves are skipped.
Replays of spans that left the sequencer's ring are read with a bounded
second reader. State is in memory, so a new iterator from offset 0 sees the
journal from the start again; consumers keep the state in their checkpoint.
A reader that keeps only an offset asks CommittedSequence.resume_offset()
where to start next time.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import TYPE_CHECKING

from gazette_core.message.interfaces import Envelope
from gazette_core.message.reader import (
    NewMessage,
    read_uncommitted,
    read_uncommitted_batches,
)
from gazette_core.message.sequencer import COMMIT_OUTCOMES, QueueOutcome, Sequencer

if TYPE_CHECKING:
    from gazette_core.broker.client.routing import JournalClient

Replay = Callable[[str, int, int], AsyncIterator[Envelope]]
"""Reads (journal, begin, end) again as uncommitted envelopes."""
Source = AsyncIterator[Envelope] | AsyncIterator[list[Envelope]]


def read_committed(
    client: JournalClient, journal: str, new_message: NewMessage, *, offset: int = 0,
    block: bool = True, ring_size: int = 8192,
) -> AsyncGenerator[Envelope, None]:
    """Committed envelopes of `journal` from `offset`, each once, ACKs left out.

    `new_message(spec)` makes an empty message for each record. With `block`
    (the default) the read waits at the write head for more and never ends, like
    `tail -f`; with `block=False` it ends at the write head as of the read, so
    `async for` finishes with what was committed by then (messages still
    waiting for their ACK there are not yielded). `ring_size` is how many
    pending messages the sequencer keeps before a commit must re-read its span.
    """
    def replay(name: str, begin: int, end: int) -> AsyncIterator[Envelope]:
        return read_uncommitted(client, name, begin, new_message, end=end)

    source = read_uncommitted_batches(client, journal, offset, new_message, block=block)
    return sequence_committed(source, replay, ring_size=ring_size)


def sequence_committed(
    envelopes: Source, replay: Replay, *, ring_size: int = 8192,
) -> AsyncGenerator[Envelope, None]:
    """The committed envelopes of a read of uncommitted ones (one by one or in lists, as
    read_uncommitted_batches gives them), ACKs left out.

    `replay(journal, begin, end)` reads a span again for commits whose
    pending messages left the sequencer's ring.
    """
    # The sequence's own generator, not one around it: a yield per message is a cost.
    return CommittedSequence(envelopes, replay, ring_size=ring_size).messages()


class CommittedSequence:
    """Iterates the committed envelopes of a read of uncommitted ones, ACKs left out.

    Also says where a later read of a journal should start to carry on from
    what this one handed out (`resume_offset`).
    """

    def __init__(self, envelopes: Source, replay: Replay, *, ring_size: int = 8192) -> None:
        self._envelopes = envelopes
        self._replay = replay
        self.sequencer = Sequencer(ring_size=ring_size)
        # The envelope being handed out from a batch the sequencer settled whole: it is
        # ahead of it, so resume_offset answers for this one (Sequencer.queue_batch).
        self._handing: Envelope | None = None

    def __aiter__(self) -> AsyncGenerator[Envelope, None]:
        return self.messages()

    async def messages(self) -> AsyncGenerator[Envelope, None]:
        """The committed envelopes, in the order consumers see them."""
        sequencer = self.sequencer
        try:
            async for item in self._envelopes:
                batch = item if isinstance(item, list) else [item]
                at, n = 0, len(batch)
                while at < n:
                    committed, at = sequencer.queue_batch(batch, at, acks=False)
                    for env in committed:
                        self._handing = env
                        yield env
                    self._handing = None
                    if at == n:
                        break
                    # A commit or rollback closing an open transaction, stepped through.
                    env, at = batch[at], at + 1
                    outcome = sequencer.queue_uncommitted(env)
                    if outcome not in COMMIT_OUTCOMES:
                        continue
                    if outcome is QueueOutcome.ACK_COMMIT_REPLAY:
                        sequencer.start_replay(self._replay(*sequencer.replay_range()))
                    # Every outcome but OUTSIDE_COMMIT is committed by an ACK, handed out last.
                    skip = env if outcome is not QueueOutcome.OUTSIDE_COMMIT else None
                    while await sequencer.step():
                        committed_env = sequencer.dequeued
                        assert committed_env is not None
                        if committed_env is not skip:
                            yield committed_env
        finally:
            # A caller that stops early ends the read (and its RPC) now, not at collection.
            aclose = getattr(self._envelopes, "aclose", None)
            if aclose is not None:
                await aclose()

    def resume_offset(self, journal: str, start: int, consumed: bool) -> int:
        """The offset of `journal` a new read starts at to hand out what this one has not.

        `start` is where this read started; `consumed` whether the envelope
        last handed out was used (the caller may have stopped before using it).
        """
        handing = self._handing
        if handing is None or handing.journal != journal:
            return self.sequencer.resume_offset(journal, start, consumed)
        # As the Sequencer answers while `handing` is its dequeued envelope: transactions
        # the batch opened after it begin later, and none it closed is past it.
        at = handing.end if consumed else handing.begin
        opened = self.sequencer.earliest_open(journal)
        return at if opened is None else min(at, opened)
