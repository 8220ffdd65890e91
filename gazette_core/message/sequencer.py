"""Sequencer: turn a read of uncommitted messages into committed ones, exactly once.

Messages are queued in read order with `queue_uncommitted`, which tells
what became of each (QueueOutcome, one per row of the table in
docs/design/consumer.md#the-sequencer).
Pending (CONTINUE_TXN) messages wait, per journal and producer, until an
ACK_TXN of that producer commits those with clocks up to its own and rolls
back the rest. After a commit-type outcome, `step()` hands out the committed
messages one by one as `dequeued`, the committing envelope (an ACK, or the
OUTSIDE_TXN message itself) last; ACK envelopes are handed out too.

Pending messages are kept in a ring of `ring_size`. An ACK whose span has
(partly) left the ring, or began before a restart, needs a replay: the
caller reads `replay_range()` from the journal and passes the envelopes to
`start_replay()`; duplicates in it are filtered by clock.

Offsets (`read_through`) move past ignored and pending messages at once,
but past a committing envelope only once its whole sequence was stepped
through, so a checkpoint taken mid-sequence makes a restarted reader see the
ACK again and emit the rest. `checkpoint()` records offsets and producer
states (last_ack, begin) in a consumer Checkpoint, and a Sequencer seeded
from one continues where it left off. Outcomes and replays are counted into
the metrics of `metrics.py`, once per batch.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import AsyncIterator, Iterable, Sequence
from operator import attrgetter

from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.message.interfaces import Envelope, message_parts
from gazette_core.message.metrics import journal_series
from gazette_core.message.sequence import Dequeue, Producer, Ring
from gazette_core.message.uuid import Flags
from gazette_core.message.uuid_batch import UUIDArrays, batch_arrays, rising_runs, row_parts

log = logging.getLogger(__name__)

CLOCK_PER_SECOND = 10_000_000 << 4  # 100 ns units, above the 4 counter bits.


class QueueOutcome(enum.Enum):
    OUTSIDE_ALREADY_ACKED = "outside_already_acked"
    OUTSIDE_COMMIT = "outside_commit"
    CONTINUE_ALREADY_ACKED = "continue_already_acked"
    CONTINUE_TXN_CLOCK_LARGER = "continue_txn_clock_larger"
    CONTINUE_BEGIN_SPAN = "continue_begin_span"
    CONTINUE_EXTEND_SPAN = "continue_extend_span"
    ACK_ROLLBACK = "ack_rollback"
    ACK_EMPTY = "ack_empty"
    ACK_COMMIT_RING = "ack_commit_ring"
    ACK_COMMIT_REPLAY = "ack_commit_replay"


# Outcomes after which step() hands out committed messages.
COMMIT_OUTCOMES = frozenset({
    QueueOutcome.OUTSIDE_COMMIT, QueueOutcome.ACK_EMPTY,
    QueueOutcome.ACK_COMMIT_RING, QueueOutcome.ACK_COMMIT_REPLAY,
})


_CONTINUE, _ACK = int(Flags.CONTINUE_TXN), int(Flags.ACK_TXN)
# Outcomes by their index, the slot of a journal's metrics tally (message/metrics.py).
_OUTCOMES = tuple(QueueOutcome)
_SLOT = {outcome: index for index, outcome in enumerate(_OUTCOMES)}
_BULK_MIN = 16  # Fewer envelopes are queued one by one: arrays cost more than they save.
_MESSAGE = attrgetter("message")


class Sequencer:
    def __init__(self, checkpoint: cpb.Checkpoint | None = None, ring_size: int = 8192) -> None:
        self._ring = Ring(ring_size)
        self._producers: dict[tuple[str, bytes], Producer] = {}
        self._offsets: dict[str, int] = {}
        self._pending: set[Producer] = set()  # Started or extended since the last checkpoint.
        self._dequeue: Dequeue | None = None
        self._stopped_at = 0  # Envelopes the last queue_batch() left to the caller.
        self.dequeued: Envelope | None = None
        if checkpoint is not None:
            self._seed(checkpoint)

    def _seed(self, checkpoint: cpb.Checkpoint) -> None:
        for journal, source in checkpoint.sources.items():
            self._offsets[journal] = source.read_through
            for entry in source.producers:
                last_ack = entry.state.last_ack
                self._producers[(journal, bytes(entry.id))] = Producer(
                    journal, bytes(entry.id), last_ack, last_ack, entry.state.begin,
                    acked=True)

    def queue_uncommitted(self, env: Envelope) -> QueueOutcome:
        """Take the next envelope read from its journal; say what became of it."""
        if self._dequeue is not None:
            raise RuntimeError("queue_uncommitted() while a committed sequence is "
                               "being dequeued: step() through it first")
        clock, flags, producer_id = message_parts(env.message)
        if clock == 0:  # No UUID: committed at once, not tracked (at-least-once).
            self._dequeue = Dequeue(None, env, 0)
            outcome = QueueOutcome.OUTSIDE_COMMIT
        else:
            outcome = self._queue_tracked(env, clock, flags, producer_id)
        journal_series(env.journal).tally[_SLOT[outcome]] += 1
        return outcome

    def _queue_tracked(self, env: Envelope, clock: int, flags: int, producer_id: bytes
                       ) -> QueueOutcome:
        key = (env.journal, producer_id)
        producer = self._producers.get(key)
        if producer is None:
            producer = self._producers[key] = Producer(env.journal, producer_id, clock - 1,
                                                       clock - 1)
        if flags == Flags.ACK_TXN:
            return self._queue_ack(env, producer, clock)
        if flags == Flags.CONTINUE_TXN:
            return _OUTCOMES[self._queue_continue(env, producer, clock)]
        return self._queue_outside(env, producer, clock)

    def queue_batch(self, envs: Sequence[Envelope], start: int = 0, *, acks: bool = True
                    ) -> tuple[list[Envelope], int]:
        """Queue `envs[start:]` in read order while each is settled at once; return what they
        commit and the index of the first envelope not queued (len(envs) if none).

        Each queued envelope ends exactly as queue_uncommitted() and step()s through
        its sequence would leave it (outcomes, offsets, producer states), and the
        committed envelopes are what those steps would hand out, in order (ACKs
        only with `acks`). The first not queued is one whose commit or rollback
        closes a transaction still open: queue it with queue_uncommitted() and
        step() through its sequence, then carry on with queue_batch(envs, index + 1).
        A message outside a transaction whose producer has none open costs a
        comparison and an append here.
        """
        if self._dequeue is not None:
            raise RuntimeError("queue_batch() while a committed sequence is "
                               "being dequeued: step() through it first")
        rest = envs[start:]
        arrays = batch_arrays(envs, start) if len(rest) >= _BULK_MIN else None
        if arrays is not None:
            if self._settle_outside(rest, arrays):
                return list(rest), len(envs)
            parts: Iterable[tuple[int, int, bytes]] = row_parts(arrays)
        else:
            parts = map(message_parts, map(_MESSAGE, rest))
        return self._queue_each(rest, parts, acks), start + len(rest) - self._stopped_at

    def _settle_outside(self, envs: Sequence[Envelope], arrays: UUIDArrays) -> bool:
        """Commit `envs` at once if all are outside transactions, each producer's clocks
        rising past its last ACK with no transaction open (the common case)."""
        if arrays.flags.any() or not arrays.clock.all():
            return False
        runs = rising_runs(arrays)
        if runs is None:
            return False
        journal, producers = envs[0].journal, self._producers
        keys = [((journal, arrays.producer_id(row)), first, last) for row, first, last in runs]
        for key, first, _ in keys:
            known = producers.get(key)
            if known is not None and (first <= known.min_clock or known.begin != -1):
                return False
        for key, _, last in keys:
            producer = producers.get(key)
            if producer is None:
                producers[key] = Producer(journal, key[1], last, last, acked=True)
            else:
                producer.min_clock = producer.max_clock = last
                producer.acked = True
                self._pending.discard(producer)
        self._offsets[journal] = envs[-1].end
        journal_series(journal).tally[1] += len(envs)  # OUTSIDE_COMMIT
        return True

    def _queue_each(self, envs: Sequence[Envelope], parts: Iterable[tuple[int, int, bytes]],
                    acks: bool) -> list[Envelope]:
        """queue_batch message by message; `_stopped_at` counts the envelopes not queued.

        Each outcome adds 1 to its slot of the journal's metrics tally (QueueOutcome order).
        """
        out: list[Envelope] = []
        producers, offsets, pending = self._producers, self._offsets, self._pending
        self._stopped_at = 0
        journal, tally = "", [0] * len(_OUTCOMES)
        for index, (env, (clock, flags, pid)) in enumerate(zip(envs, parts, strict=False)):
            if env.journal != journal:
                journal = env.journal
                tally = journal_series(journal).tally
            if clock == 0:  # No UUID: committed at once, not tracked (at-least-once).
                offsets[journal] = env.end
                out.append(env)
                tally[1] += 1  # OUTSIDE_COMMIT
                continue
            producer = producers.get((journal, pid))
            if producer is None:
                producer = producers[(journal, pid)] = Producer(journal, pid, clock - 1,
                                                                clock - 1)
            if flags == _CONTINUE:
                tally[self._queue_continue(env, producer, clock)] += 1
                continue
            if clock <= producer.min_clock and flags != _ACK:
                offsets[journal] = env.end
                tally[0] += 1  # OUTSIDE_ALREADY_ACKED
                continue
            if producer.begin != -1:  # Closes an open transaction: the caller's to step.
                self._stopped_at = len(envs) - index
                return out
            if flags == _ACK and clock <= producer.min_clock:
                self._queue_ack(env, producer, clock)  # ACK_ROLLBACK of nothing open
                tally[6] += 1
                continue
            # OUTSIDE_COMMIT or ACK_EMPTY: a sequence of just this envelope, finished.
            producer.min_clock = producer.max_clock = clock
            producer.acked = True
            pending.discard(producer)
            offsets[journal] = env.end
            tally[7 if flags == _ACK else 1] += 1
            if acks or flags != _ACK:
                out.append(env)
        return out

    def _queue_outside(self, env: Envelope, producer: Producer, clock: int) -> QueueOutcome:
        if clock <= producer.min_clock:
            self._offsets[env.journal] = env.end
            return QueueOutcome.OUTSIDE_ALREADY_ACKED
        if producer.begin != -1:
            log.error("producer %s of %s mixes committed and uncommitted publishing; "
                      "discarding its pending messages from offset %d",
                      producer.producer.hex(), env.journal, producer.begin)
            self._discard(producer)
        self._dequeue = Dequeue(producer, env, clock)
        return QueueOutcome.OUTSIDE_COMMIT

    def _queue_continue(self, env: Envelope, producer: Producer, clock: int) -> int:
        """Queue a CONTINUE_TXN message; its outcome as an index of _OUTCOMES."""
        self._offsets[env.journal] = env.end
        if clock <= producer.min_clock:
            return 2  # CONTINUE_ALREADY_ACKED
        if clock <= producer.max_clock:
            return 3  # CONTINUE_TXN_CLOCK_LARGER
        outcome = 5  # CONTINUE_EXTEND_SPAN
        if producer.begin == -1:
            producer.begin = env.begin
            outcome = 4  # CONTINUE_BEGIN_SPAN
        producer.max_clock = clock
        self._ring.push(env, clock, producer)
        self._pending.add(producer)
        return outcome

    def _queue_ack(self, env: Envelope, producer: Producer, clock: int) -> QueueOutcome:
        if clock <= producer.min_clock:
            # Below a guessed min_clock (a read that began after the producer's last ACK)
            # it is a rollback like any other.
            if clock < producer.min_clock and producer.acked:
                log.error("producer %s of %s acknowledged clock %d below its last ACK %d: "
                          "its upstream checkpoint went backwards; messages after it will "
                          "be processed again (at-least-once)", producer.producer.hex(),
                          env.journal, clock, producer.min_clock)
            self._discard(producer)
            producer.reset(clock)
            producer.acked = True
            self._offsets[env.journal] = env.end
            return QueueOutcome.ACK_ROLLBACK
        if producer.begin == -1:
            self._dequeue = Dequeue(producer, env, clock)
            return QueueOutcome.ACK_EMPTY
        ring = self._ring.chain(producer)
        dequeue = Dequeue(producer, env, clock, ring)
        self._dequeue = dequeue
        if ring and ring[0][0].begin == producer.begin:
            return QueueOutcome.ACK_COMMIT_RING
        dequeue.replay = (env.journal, producer.begin, ring[0][0].begin if ring else env.begin)
        return QueueOutcome.ACK_COMMIT_REPLAY

    def _discard(self, producer: Producer) -> None:
        """Drop the producer's open span (rolled back, or abandoned)."""
        producer.reset(producer.min_clock)
        self._pending.discard(producer)

    def replay_range(self) -> tuple[str, int, int]:
        """(journal, begin, end) to read for the ACK_COMMIT_REPLAY just queued."""
        if self._dequeue is None or self._dequeue.replay is None:
            raise RuntimeError("no committed sequence is waiting for a replay")
        return self._dequeue.replay

    def start_replay(self, envelopes: AsyncIterator[Envelope] | Iterable[Envelope]) -> None:
        """Give the envelopes read from replay_range() (in order) to the sequence."""
        if self._dequeue is None or self._dequeue.replay is None:
            raise RuntimeError("no committed sequence is waiting for a replay")
        journal = self._dequeue.replay[0]
        self._dequeue.start_replay(envelopes, journal_series(journal).replayed)

    async def step(self) -> bool:
        """Finish the current `dequeued` (if any) and hand out the next committed envelope.

        Returns False, with `dequeued` None, once the sequence is done.
        """
        dequeue = self._dequeue
        if dequeue is None:
            self.dequeued = None
            return False
        if self.dequeued is not None:
            if dequeue.handed_final:
                self._finish(dequeue)
                return False
            # Consumed: a restart from a checkpoint taken now resumes after it.
            owner = dequeue.owner
            assert owner is not None
            owner.min_clock, owner.begin = dequeue.current_clock, self.dequeued.end
        found = await dequeue.next_message()
        if found is None:
            dequeue.handed_final = True
            self.dequeued = dequeue.final
        else:
            self.dequeued, dequeue.current_clock = found
        return True

    def _finish(self, dequeue: Dequeue) -> None:
        if dequeue.owner is not None:
            dequeue.owner.reset(dequeue.final_clock)
            dequeue.owner.acked = True
            self._pending.discard(dequeue.owner)
        self._offsets[dequeue.final.journal] = dequeue.final.end
        self._dequeue = None
        self.dequeued = None

    def has_pending(self) -> bool:
        """Whether any span was started or extended since the last checkpoint."""
        return bool(self._pending)

    def read_through(self) -> dict[str, int]:
        return dict(self._offsets)

    def resume_offset(self, journal: str, default: int, consumed: bool = False) -> int:
        """Where a fresh Sequencer should start reading `journal` to hand out what this one
        has not: the read-through offset, or the first message of the earliest
        transaction still open (pending, or partly handed out) if that is earlier.

        `default` is the offset this one started at (used when it has read
        nothing of `journal`); `consumed` says whether `dequeued` counts as
        handed out. A fresh Sequencer knows no producer: messages already
        handed out that lie past the offset (committed while an earlier
        transaction was open, or a duplicate within a replayed span) are
        handed out again by it.
        """
        at = self._offsets.get(journal, default)
        dequeue = self._dequeue
        if dequeue is not None and dequeue.final.journal == journal:
            at = self._sequence_resume(dequeue, consumed)
        opened = self.earliest_open(journal)
        return at if opened is None else min(at, opened)

    def earliest_open(self, journal: str) -> int | None:
        """The first message of the earliest transaction of `journal` still pending (not
        the one being handed out), if any."""
        owner = self._dequeue.owner if self._dequeue is not None else None
        return min((p.begin for p in self._producers.values()
                    if p.journal == journal and p.begin != -1 and p is not owner), default=None)

    def _sequence_resume(self, dequeue: Dequeue, consumed: bool) -> int:
        """resume_offset within the sequence being handed out."""
        current, owner = self.dequeued, dequeue.owner
        if current is None:  # Nothing handed out yet.
            return owner.begin if owner is not None and owner.begin != -1 else dequeue.final.begin
        if not consumed:
            return current.begin
        if current is dequeue.final:
            return current.end
        # Not merely past `current`: duplicates of it may follow, which a fresh reader
        # would take for new messages.
        following = dequeue.next_begin(dequeue.current_clock)
        return current.end if following is None else following

    def checkpoint(self, horizon_s: float = 86400) -> cpb.Checkpoint:
        """Offsets and producer states (sources only; ACK intents are the caller's).

        Producers whose clock is more than `horizon_s` behind the newest
        producer of the same journal are forgotten first.
        """
        self._prune(int(horizon_s * CLOCK_PER_SECOND))
        cp = cpb.Checkpoint()
        for journal, offset in self._offsets.items():
            cp.sources[journal].read_through = offset
        for (journal, pid), producer in sorted(self._producers.items()):
            entry = cp.sources[journal].producers.add(id=pid)
            entry.state.last_ack = producer.min_clock
            entry.state.begin = producer.begin
        self._pending.clear()
        return cp

    def _prune(self, horizon: int) -> None:
        newest: dict[str, int] = {}
        for producer in self._producers.values():
            newest[producer.journal] = max(newest.get(producer.journal, 0), producer.max_clock)
        busy = self._dequeue.owner if self._dequeue is not None else None
        for key, producer in list(self._producers.items()):
            if newest[producer.journal] - producer.max_clock > horizon and producer is not busy:
                del self._producers[key]
                self._pending.discard(producer)
