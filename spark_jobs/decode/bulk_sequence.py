"""The message Sequencer's rules over whole blocks of messages: which rows are committed, when.

`BulkSequencer` takes a range's records block by block, as arrays of offset,
clock, flags and producer (uuid_columns.py), and says which rows are
committed and in what order: the same outcomes as
gazette_core.message.sequencer.Sequencer (docs/design/consumer.md#the-sequencer), whose rules
are mirrored per message in `_one`:

- OUTSIDE_TXN: committed at once unless its clock is at or below the
  producer's last ACK (a duplicate); an open transaction of the producer
  is discarded.
- CONTINUE_TXN: held unless at or below the last ACK or the largest clock
  held (a duplicate); the first opens the producer's span.
- ACK_TXN: at or below the last ACK, a rollback (held messages dropped);
  otherwise the held messages up to its clock are committed, after any of
  the span read before the range began (a `Replay` the caller resolves).

A block of messages all published outside transactions, each producer's
clocks rising past its last ACK (the common case), is decided with a few
array operations; any other block goes message by message. Held messages
are kept as references into their blocks (which stay in memory meanwhile),
up to `max_held` of them: past that, the producer holding the most lets its
messages go, and its commit reads its span again (a `Replay`), as the
Sequencer does when its ring overflows. Spans opened before the range are
always read again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from gazette_core.message.sequencer import CLOCK_PER_SECOND
from gazette_core.message.uuid import Flags
from spark_jobs.decode.uuid_columns import UUIDColumns

ProducerState = tuple[str, int, int, int]  # as range_read.ProducerState
HORIZON_CLOCK = 86400 * CLOCK_PER_SECOND  # a day, as consumers' checkpoints keep producers
Rows = tuple[int, np.ndarray]  # (block number, row indices in it), emitted in this order


def forget_idle(states: tuple[ProducerState, ...], horizon: int = HORIZON_CLOCK
                ) -> tuple[ProducerState, ...]:
    """`states` without producers whose clock is more than `horizon` behind the journal's
    newest, as the Sequencer's checkpoints forget them (an abandoned transaction too): what
    a long-running reader carries from range to range stays bounded."""
    newest = max((max_clock for _, _, max_clock, _ in states), default=0)
    return tuple(s for s in states if newest - s[2] <= horizon)


@dataclass(frozen=True)
class Replay:
    """Committed messages of `producer` read before the range: CONTINUE_TXN ones in
    [begin, end) with clocks rising above `after` up to `through`."""

    producer: int
    begin: int
    end: int
    after: int
    through: int


Emitted = Rows | Replay


@dataclass(slots=True)
class Producer:
    last_ack: int
    max_clock: int
    begin: int = -1
    held: list[tuple[int, int, int]] = field(default_factory=list)  # (block, row, clock)
    evicted: bool = False  # Held messages were let go: a commit reads the span again.

    def reset(self, clock: int) -> None:
        self.last_ack = self.max_clock = clock
        self.begin = -1
        self.held = []
        self.evicted = False


class BulkSequencer:
    """Sequences the blocks of one range [begin, ...) from the producers' states at begin."""

    def __init__(self, begin: int, seeds: Iterable[ProducerState] = (), *,
                 hold: bool = True, max_held: int = 1 << 20) -> None:
        self._begin = begin
        self._hold = hold  # False: track states only (a scan), emit nothing.
        self._max_held = max_held
        self._held = 0  # Messages held by all producers.
        self._producers: dict[int, Producer] = {
            int(pid, 16): Producer(last_ack, max(max_clock, last_ack), span)
            for pid, last_ack, max_clock, span in seeds}

    def states(self) -> tuple[ProducerState, ...]:
        """Every producer's state after the blocks so far, sorted by producer ID."""
        return tuple((f"{pid:012x}", p.last_ack, p.max_clock, p.begin)
                     for pid, p in sorted(self._producers.items()))

    def block(self, number: int, offsets: np.ndarray, ids: UUIDColumns) -> list[Emitted]:
        """What block `number` commits, in order. `offsets` are its records' first bytes."""
        if self._all_outside(ids):
            return [(number, np.arange(len(offsets)))] if self._hold else []
        return self._one_by_one(number, offsets, ids)

    def _all_outside(self, ids: UUIDColumns) -> bool:
        """Decide a block of rising OUTSIDE_TXN messages at once, if it is one."""
        clock, producer = ids.clock, ids.producer
        if len(clock) == 0:
            return True
        if ids.flags.any() or not clock.all():
            return False
        order = np.argsort(producer, kind="stable")
        p, c = producer[order], clock[order]
        same = p[1:] == p[:-1]
        if not (c[1:][same] > c[:-1][same]).all():
            return False
        firsts = np.flatnonzero(np.concatenate(([True], ~same)))
        lasts = np.concatenate((firsts[1:] - 1, [len(p) - 1]))
        heads = list(zip(p[firsts].tolist(), c[firsts].tolist(), c[lasts].tolist(), strict=True))
        for pid, first, _ in heads:
            known = self._producers.get(pid)
            if known is not None and (first <= known.last_ack or known.begin != -1):
                return False
        for pid, _, last in heads:
            self._producers[pid] = Producer(last, last)
        return True

    def _one_by_one(self, number: int, offsets: np.ndarray, ids: UUIDColumns) -> list[Emitted]:
        out: list[Emitted] = []
        run: list[int] = []
        for row, (offset, clock, flags, pid) in enumerate(zip(
                offsets.tolist(), ids.clock.tolist(), ids.flags.tolist(),
                ids.producer.tolist(), strict=True)):
            committed = self._one(number, row, offset, clock, flags, pid)
            if committed is None:
                continue
            if committed == [row]:
                run.append(row)
                continue
            if run:
                out.append((number, np.array(run)))
                run = []
            out.extend(committed)  # type: ignore[arg-type]
        if run:
            out.append((number, np.array(run)))
        return out if self._hold else []

    def _one(self, number: int, row: int, offset: int, clock: int, flags: int, pid: int
             ) -> list[Emitted] | list[int] | None:
        """One message: None if nothing is committed, [row] if just it, else what is."""
        if clock == 0:
            return [row]  # No UUID: committed as it is, not tracked.
        p = self._producers.get(pid)
        if p is None:
            p = self._producers[pid] = Producer(clock - 1, clock - 1)
        if flags == Flags.CONTINUE_TXN:
            if clock > p.max_clock and clock > p.last_ack:
                if p.begin == -1:
                    p.begin = offset
                p.max_clock = clock
                if self._hold and not p.evicted:
                    p.held.append((number, row, clock))
                    self._held += 1
                    if self._held > self._max_held:
                        self._evict()
            return None
        if flags == Flags.ACK_TXN:
            if clock <= p.last_ack:
                self._release(p)
                p.reset(clock)  # A rollback.
                return None
            committed = self._commit(pid, p, clock, offset)
            self._release(p)
            p.reset(clock)
            return committed
        if clock <= p.last_ack:
            return None  # OUTSIDE_TXN, a duplicate.
        self._release(p)
        p.reset(clock)
        return [row]

    def _release(self, p: Producer) -> None:
        self._held -= len(p.held)

    def _evict(self) -> None:
        """Let go of the largest holder's messages: its commit will read them again."""
        p = max(self._producers.values(), key=lambda p: len(p.held))
        self._release(p)
        p.held, p.evicted = [], True

    def _commit(self, pid: int, p: Producer, clock: int, ack: int) -> list[Emitted]:
        """The producer's open span, committed through `clock` by an ACK at offset `ack`."""
        out: list[Emitted] = []
        if p.evicted:
            return [Replay(pid, p.begin, ack, p.last_ack, clock)]
        if p.begin != -1 and p.begin < self._begin:
            out.append(Replay(pid, p.begin, self._begin, p.last_ack, clock))
        block, rows = -1, list[int]()
        for number, row, held in p.held:
            if held > clock:
                continue
            if number != block and rows:
                out.append((block, np.array(rows)))
                rows = []
            block = number
            rows.append(row)
        if rows:
            out.append((block, np.array(rows)))
        return out

    def oldest_held(self) -> int | None:
        """The first block a held message is in (None: none held): older ones are done."""
        return min((p.held[0][0] for p in self._producers.values() if p.held), default=None)
