"""The primary's transaction loop (docs/design/consumer.md#the-transaction-loop).

A transaction reads envelopes from the read channel into the sequencer,
consumes every committed message, and closes when the rules allow:

- it waits while the previous transaction's commit or any of its ACK appends
  is unresolved, while nothing was consumed, before min_txn_duration, and
  (unless disable_wait_for_ack) while a sequence it has read is still pending
  before max_txn_duration;
- otherwise it commits as soon as the channel has nothing ready;
- past max_txn_duration it stops reading and commits once the previous
  transaction resolved.

The commit: finalize_txn, the sequencer checkpoint plus the publisher's ACK
intents, then store.start_commit behind every pending non-recovery-log
append; each ACK is appended only once the commit resolved (`acks`). The
next transaction reads and consumes meanwhile but commits only after all of
that resolved, when the shard's progress is published (`commit`).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import itertools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gazette_core.consumer.app import (
    DeferToNextTransaction,
    app_failure,
    call,
    call_optional,
    guarded,
    message_factory,
)
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.recoverylog.hints_timer import HintsTimer
from gazette_core.consumer.txn.acks import TxnAppendService
from gazette_core.consumer.txn.commit import (
    Settled,
    read_through_of,
    resend_ack_intents,
    start_acks,
)
from gazette_core.consumer.txn.reader import ReadChannel, start_offsets, wake
from gazette_core.consumer.txn.sequence import TxnError, source_before, unsequenced
from gazette_core.message.interfaces import Envelope
from gazette_core.message.publisher import Publisher
from gazette_core.message.reader import read_uncommitted
from gazette_core.message.sequencer import QueueOutcome, Sequencer
from gazette_core.message.uuid import Clock, new_producer_id
from gazette_core.tasks import cancel_and_wait

if TYPE_CHECKING:
    from gazette_core.consumer.shard import Shard
    from gazette_core.consumer.store.interface import Store

log = logging.getLogger(__name__)

CHECKPOINT_HORIZON_S = 86400.0
DEFAULT_RING_SIZE = 1 << 13

_COMMITS = frozenset({QueueOutcome.OUTSIDE_COMMIT, QueueOutcome.ACK_EMPTY,
                      QueueOutcome.ACK_COMMIT_RING, QueueOutcome.ACK_COMMIT_REPLAY})
# Duplicates and rollbacks: read, but nothing to consume or commit.
_SKIPS = frozenset({QueueOutcome.OUTSIDE_ALREADY_ACKED, QueueOutcome.CONTINUE_ALREADY_ACKED,
                    QueueOutcome.ACK_ROLLBACK})


@dataclass
class TxnStats:
    """What one completed transaction did, for metrics: messages and bytes consumed, how
    long it was open (first message to the start of its commit), the seconds of each
    phase (consumer/metrics.py's PHASES) and the offsets it read through."""

    shard: str
    messages: int
    bytes: int
    duration_s: float
    phases: tuple[float, ...] = (0.0,) * 6
    read_through: dict[str, int] = field(default_factory=dict)


@dataclass
class _Txn:
    began: float | None = None
    min_at: float = 0.0
    max_at: float = 0.0
    consumed: int = 0
    bytes: int = 0
    reading: bool = True
    deferred: bool = False
    # When it stopped consuming: stalled on the previous commit, or ready to commit.
    stalled_at: float | None = None


def _seconds(duration: Any) -> float:
    return float(duration.seconds) + duration.nanos / 1e9


class TxnLoop:
    """Runs transactions for one primary until `stop()`; `run()` returns once all settled."""

    def __init__(self, shard: Shard, app: Any, store: Store, client: Any,
                 checkpoint: cpb.Checkpoint, *, recovery_log: str = "",
                 hints: HintsTimer | None = None,
                 observe: Callable[[TxnStats], None] | None = None) -> None:
        self.shard, self.app, self.store, self.client = shard, app, store, client
        self.checkpoint = checkpoint
        self.recovery_log = recovery_log
        self.hints = hints
        self.observe = observe
        self.appender = TxnAppendService(client)
        # A fresh producer per primary incarnation: a zombie's clock cannot collide.
        self.publisher = Publisher(self.appender, clock=Clock(), producer_id=new_producer_id())
        spec = shard.spec
        self._ring_size = spec.ring_buffer_size or DEFAULT_RING_SIZE
        self.sequencer = Sequencer(checkpoint, ring_size=self._ring_size)
        self.new_message = message_factory(app)
        self.channel = ReadChannel(client, self.new_message, spec.read_channel_size)
        self._stopping = asyncio.Event()
        self._chunk: list[Envelope] = []  # the read chunk being sequenced, from _at on
        self._at = 0
        self._next: Envelope | None = None  # the dequeued envelope to consume next
        # Envelopes the sequencer committed in bulk, to consume from _ready_at on.
        self._ready: list[Envelope] = []
        self._ready_at = 0
        self._deferred: Envelope | None = None  # of _ready, deferred: the commit rewinds
        self._base = checkpoint  # the last commit's checkpoint
        self._prev: Settled | None = None
        self._woken: asyncio.Future[None] | None = None  # resolved to end a wait early
        self.transactions = 0
        self._prepared_at: float | None = None  # when the last commit was prepared

    def stop(self) -> None:
        """Finish the open transaction (commit what it consumed), then end the loop."""
        self._stopping.set()
        wake(self._woken)

    async def run(self) -> None:
        self.appender.start()
        hints: asyncio.Task[None] | None = None
        self.shard.journal_client = self.appender
        try:
            # Before anything else is appended (docs/design/consumer.md#start-up).
            self._prev = resend_ack_intents(self.appender, self.shard, self.checkpoint)
            self.channel.start(start_offsets(self.shard.spec, self.checkpoint))
            if self.hints is not None:
                hints = asyncio.get_running_loop().create_task(self.hints.run(), name="hints")
            while not self._stopping.is_set():
                if not await self._transaction():
                    break
            await self._prev.wait()
        finally:
            await cancel_and_wait(hints)
            await self.channel.stop()
            if self._prev is not None:
                # Unwound here, not left to the loop: a loop closed right after would
                # leave its tasks pending, to be destroyed by a later collection.
                await cancel_and_wait(self._prev.future())
            await self.appender.stop()

    # One transaction.

    async def _transaction(self) -> bool:
        """Run one transaction to its commit; False if stopping before it consumed anything.

        The rules are looked at between read chunks: within one, every message is
        taken in turn (the channel has something ready), as it would be one by one.
        """
        txn = _Txn()
        loop = asyncio.get_running_loop()
        while True:
            if not txn.deferred:
                await self._consume(txn)
            if txn.deferred:
                break
            now = loop.time()
            if self._stopping.is_set() or (txn.began is not None and now >= txn.max_at):
                txn.reading = False
            if not txn.reading:
                if txn.consumed == 0:
                    return False
                if self._prev_resolved():
                    break
                txn.stalled_at = txn.stalled_at or now
                await self._wait_prev()  # Stalled: held back only by the previous commit.
                continue
            if self._ready_at < len(self._ready) or self._at < len(self._chunk):
                await self._sequence(txn)
                continue
            queue = self.channel.queue
            if not queue.empty():
                self._take(queue.get_nowait())
            elif not self._blocks(txn, now):
                break
            else:
                if (txn.stalled_at is None and txn.consumed and now >= txn.min_at
                        and not self._prev_resolved()):
                    txn.stalled_at = now  # Ready but for the previous commit.
                await self._wait(txn, now)
        txn.stalled_at = txn.stalled_at or loop.time()
        await self._commit(txn)
        self.transactions += 1
        return True

    def _blocks(self, txn: _Txn, now: float) -> bool:
        """Whether the transaction must stay open.

        See docs/design/consumer.md#when-a-transaction-closes.
        """
        if not self._prev_resolved() or txn.consumed == 0 or now < txn.min_at:
            return True
        return (not self.shard.spec.disable_wait_for_ack and now < txn.max_at
                and self.sequencer.has_pending())

    def _prev_resolved(self) -> bool:
        prev = self._prev
        if prev is None or not prev.done():
            return prev is None
        prev.future().result()  # Raises the previous commit's or ACK's failure.
        return True

    async def _wait_prev(self) -> None:
        assert self._prev is not None
        await self._prev.wait()

    async def _wait(self, txn: _Txn, now: float) -> None:
        """Until a chunk arrives (then taken), the next deadline passes, the previous commit
        resolves or stop() is called: each resolves one future by a callback."""
        loop = asyncio.get_running_loop()
        getter = asyncio.ensure_future(self.channel.queue.get())
        woken = self._woken = loop.create_future()
        timer = None
        if txn.began is not None:
            timer = loop.call_at(txn.min_at if now < txn.min_at else txn.max_at, wake, woken)
        prev = self._prev.future() if self._prev is not None and not self._prev.done() else None

        def on_done(_: Any) -> None:
            wake(woken)

        getter.add_done_callback(on_done)
        if prev is not None:
            prev.add_done_callback(on_done)
        try:
            await woken
        finally:
            self._woken = None
            woken.cancel()
            if timer is not None:
                timer.cancel()
            if prev is not None:
                prev.remove_done_callback(on_done)
            if not getter.done():
                await cancel_and_wait(getter)
        if not getter.cancelled():  # done, maybe as it was cancelled
            self._take(getter.result())

    def _take(self, item: list[Envelope] | Exception) -> None:
        self.channel.taken(item)
        if isinstance(item, Exception):
            raise item
        self._chunk, self._at = item, 0

    async def _sequence(self, txn: _Txn) -> None:
        """Queue the rest of the current chunk, consuming what it commits; stops early when
        a message is deferred to the next transaction.

        The sequencer settles runs of envelopes in bulk (queue_batch); the envelope that
        closes an open transaction is queued and stepped through one by one.
        """
        seq, chunk = self.sequencer, self._chunk
        while True:
            if self._ready_at < len(self._ready):
                await self._consume_ready(txn)
                if txn.deferred:
                    return
            if self._at >= len(chunk):
                return
            begin = self._at
            try:
                committed, self._at = seq.queue_batch(chunk, begin)
            except Exception as err:  # e.g. a message type whose get_uuid() cannot parse it
                raise unsequenced(chunk, begin, err) from err
            if committed:
                self._ready, self._ready_at = committed, 0
            elif txn.began is None and self._prev_resolved():
                # Nothing to commit (duplicates, rollbacks, pending messages): progress moves
                # on directly, so a Stat waiting for these offsets does not hang.
                self._progress(chunk[begin].journal)
            if self._at < len(chunk) and not committed:
                await self._queue_one(txn, chunk[self._at])
                self._at += 1
                if txn.deferred:
                    return

    def _progress(self, journal: str) -> None:
        through = self.sequencer.read_through().get(journal)
        if through is not None:
            self.shard.set_progress({journal: through}, {})

    async def _queue_one(self, txn: _Txn, env: Envelope) -> None:
        """Queue the envelope closing an open transaction; consume what it commits."""
        seq = self.sequencer
        try:
            outcome = seq.queue_uncommitted(env)
        except Exception as err:
            raise unsequenced([env], 0, err) from err
        if outcome in _COMMITS:
            if outcome is QueueOutcome.ACK_COMMIT_REPLAY:
                journal, begin, end = seq.replay_range()
                seq.start_replay(read_uncommitted(self.client, journal, begin,
                                                  self.new_message, end=end))
            self._next = seq.dequeued if await seq.step() else None
            await self._consume(txn)
        elif outcome in _SKIPS and txn.began is None and self._prev_resolved():
            self._progress(env.journal)

    async def _consume_ready(self, txn: _Txn) -> None:
        """Consume the envelopes the sequencer committed in bulk; a deferral ends the
        transaction (the rest waits for the next)."""
        ready, consume = self._ready, self.app.consume_message
        shard, store, publisher = self.shard, self.store, self.publisher
        if txn.began is None:
            await self._begin(txn)
        at, size = self._ready_at, 0
        try:
            for envelope in itertools.islice(ready, at, None):
                result = consume(shard, store, envelope, publisher)
                if result is not None and inspect.isawaitable(result):
                    await result
                at += 1
                size += envelope.end - envelope.begin
        except BaseException as err:
            txn.consumed += at - self._ready_at
            self._ready_at = at
            self._consume_failed(txn, err, ready[at])
            # The sequencer went past the deferred envelope: the commit rewinds its journal.
            self._deferred = ready[at]
            return
        finally:
            txn.bytes += size
        txn.consumed += at - self._ready_at
        self._ready, self._ready_at = [], 0

    async def _consume(self, txn: _Txn) -> None:
        """Consume every dequeued message; a deferral ends the transaction."""
        seq, consume = self.sequencer, self.app.consume_message
        shard, store, publisher = self.shard, self.store, self.publisher
        while (envelope := self._next) is not None:
            if txn.began is None:
                await self._begin(txn)
            try:
                result = consume(shard, store, envelope, publisher)
                if result is not None and inspect.isawaitable(result):
                    await result
            except BaseException as err:
                self._consume_failed(txn, err, envelope)
                return
            txn.consumed += 1
            txn.bytes += envelope.end - envelope.begin
            self._next = seq.dequeued if await seq.step() else None

    def _consume_failed(self, txn: _Txn, err: BaseException, envelope: Envelope) -> None:
        """Raise what consume_message's `err` fails the shard with; a deferral returns, the
        transaction marked deferred."""
        failure = app_failure(self.app.consume_message, err,
                              f"{envelope.journal}:{envelope.begin}")
        if failure is not None:
            raise failure from err
        if not isinstance(err, DeferToNextTransaction):
            raise err
        if txn.consumed == 0:
            raise TxnError("consume_message deferred the first message of a "
                           "transaction to the next one") from err
        txn.deferred = True

    async def _begin(self, txn: _Txn) -> None:
        await call_optional(self.app, "begin_txn", self.shard, self.store)
        spec = self.shard.spec
        txn.began = now = asyncio.get_running_loop().time()
        txn.min_at = now + _seconds(spec.min_txn_duration)
        txn.max_at = now + _seconds(spec.max_txn_duration)
        # Messages published by this transaction are stamped from the current time.
        self.publisher.clock.update(time.time_ns())

    async def _checkpoint(self) -> cpb.Checkpoint:
        """The sequencer's checkpoint, rewound to just before a deferred envelope that the
        sequencer had settled in bulk (`sequence`)."""
        checkpoint = self.sequencer.checkpoint(CHECKPOINT_HORIZON_S)
        deferred, self._deferred = self._deferred, None
        if deferred is not None:
            journal = deferred.journal
            start = start_offsets(self.shard.spec, self._base)[journal]
            source = await source_before(self.client, self.new_message, self._base, start,
                                         deferred, ring_size=self._ring_size,
                                         horizon_s=CHECKPOINT_HORIZON_S)
            if source is None:
                del checkpoint.sources[journal]
            else:
                checkpoint.sources[journal].CopyFrom(source)
        self._base = checkpoint
        return checkpoint

    async def _commit(self, txn: _Txn) -> None:
        loop = asyncio.get_running_loop()
        prepare_began = loop.time()
        try:
            await call(self.app.finalize_txn, self.shard, self.store, self.publisher)
            checkpoint = await self._checkpoint()
            intents = dict(self.publisher.build_ack_intents())
            for journal, ack in intents.items():
                checkpoint.ack_intents[journal] = ack
            if self._prev is not None:
                await self._prev.wait()  # docs/design/consumer.md#commit-ordering
            pending = self.appender.pending_except(self.recovery_log or None)
            wait_for = asyncio.ensure_future(_all(pending)) if pending else None
            commit = asyncio.ensure_future(
                guarded("start_commit", self.store.start_commit(checkpoint, wait_for)))
        except BaseException as err:
            await call_optional(self.app, "finished_txn", self.shard, self.store, err)
            raise
        prepared, since = loop.time(), self._prepared_at
        self._prepared_at = prepared
        read_through = read_through_of(checkpoint)
        on_settled = None
        if self.observe is not None and txn.began is not None:
            stats = TxnStats(self.shard.id, txn.consumed, txn.bytes, prepared - txn.began,
                             read_through=read_through)
            marks = (txn.began if since is None else since, txn.began,
                     txn.stalled_at or prepare_began, prepare_began, prepared)
            on_settled = functools.partial(self._settled, stats, marks)
        acks = start_acks(self.appender, commit, intents)
        self._prev = Settled(self.shard, commit, acks, read_through, on_settled=on_settled)
        await call_optional(self.app, "finished_txn", self.shard, self.store, commit)

    def _settled(self, stats: TxnStats, marks: tuple[float, ...], committed: float,
                 acked: float) -> None:
        """Observe a transaction whose commit and ACKs resolved (`marks`: when the previous
        one was prepared, and this one began, stalled, began and finished preparing)."""
        assert self.observe is not None
        times = (*marks, committed, acked)
        stats.phases = tuple(max(0.0, b - a) for a, b in itertools.pairwise(times))
        self.observe(stats)


async def _all(pending: list[Any]) -> None:
    await asyncio.gather(*pending)
