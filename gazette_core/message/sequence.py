"""The sequencer's bookkeeping: per-producer state, the ring, and one dequeue in progress.

Split from sequencer.py, which holds the outcome rules; see its docstring.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass, field

from gazette_core.message.interfaces import Envelope, message_parts
from gazette_core.message.uuid import Flags
from gazette_core.metrics.families import Cell


@dataclass(slots=True, eq=False)
class Producer:
    """The partial sequence of one producer in one journal.

    `min_clock` is the last acknowledged clock (messages at or below it are
    duplicates); `max_clock` the largest pending clock. `begin` is the offset
    of the first pending message not yet dequeued (-1: none). `ring_start`
    and `ring_stop` index its pending messages still in the ring (-1: none).
    `acked` says that `min_clock` was seen (or checkpointed), not guessed
    from the producer's first message.
    """

    journal: str
    producer: bytes
    min_clock: int
    max_clock: int
    begin: int = -1
    ring_start: int = -1
    ring_stop: int = -1
    acked: bool = False

    def reset(self, clock: int) -> None:
        """No span open, everything through `clock` acknowledged."""
        self.min_clock = self.max_clock = clock
        self.begin = self.ring_start = self.ring_stop = -1


@dataclass(slots=True)
class Slot:
    env: Envelope
    clock: int
    owner: Producer
    next: int = -1  # Ring index of the owner's next pending message, -1 if none.


class Ring:
    """The last `size` pending messages, chained per producer."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"ring size must be at least 1, got {size}")
        self._slots: list[Slot | None] = [None] * size
        self._head = 0

    def push(self, env: Envelope, clock: int, owner: Producer) -> None:
        index = self._head
        old = self._slots[index]
        if old is not None and old.owner.ring_start == index:
            # The evicted message leaves its owner's chain, which the owner
            # must now start from the journal instead (a replay).
            old.owner.ring_start = old.next
            if old.owner.ring_stop == index:
                old.owner.ring_stop = -1
        self._slots[index] = Slot(env, clock, owner)
        if owner.ring_stop >= 0:
            last = self._slots[owner.ring_stop]
            assert last is not None
            last.next = index
        else:
            owner.ring_start = index
        owner.ring_stop = index
        self._head = (index + 1) % len(self._slots)

    def chain(self, owner: Producer) -> list[tuple[Envelope, int]]:
        """The owner's pending messages still in the ring, oldest first."""
        out = []
        index = owner.ring_start
        while index >= 0:
            slot = self._slots[index]
            assert slot is not None
            out.append((slot.env, slot.clock))
            index = slot.next
        return out


@dataclass(slots=True)
class Dequeue:
    """A committed sequence being handed out: replayed and ring messages, then `final`."""

    owner: Producer | None
    final: Envelope  # The envelope that committed the sequence, handed out last.
    final_clock: int
    ring: list[tuple[Envelope, int]] = field(default_factory=list)
    replay: tuple[str, int, int] | None = None  # Journal range read before the ring.
    source: AsyncIterator[Envelope] | Iterator[Envelope] | None = None
    current_clock: int = 0
    handed_final: bool = False
    replayed: Cell | None = None
    _ring_at: int = 0

    def start_replay(self, envelopes: AsyncIterator[Envelope] | Iterable[Envelope],
                     replayed: Cell | None = None) -> None:
        """Read the replay from `envelopes`, counting each into `replayed` (metrics)."""
        self.source = envelopes if isinstance(envelopes, AsyncIterator) else iter(envelopes)
        self.replayed = replayed

    async def next_message(self) -> tuple[Envelope, int] | None:
        """The next message to hand out before `final`: not yet acked, not rolled back."""
        owner = self.owner
        if owner is None:
            return None
        if self.replay is not None:
            found = await self._next_replayed(owner)
            if found is not None:
                return found
        while self._ring_at < len(self.ring):
            env, clock = self.ring[self._ring_at]
            self._ring_at += 1
            if owner.min_clock < clock <= self.final_clock:
                return env, clock
        return None

    def next_begin(self, after_clock: int) -> int | None:
        """The offset of the next message to hand out after the one of `after_clock` (or
        of `final`), if known without reading: None while a replay is under way."""
        if self.replay is not None:
            return None
        for env, clock in self.ring[self._ring_at:]:
            if after_clock < clock <= self.final_clock:
                return env.begin
        return self.final.begin

    async def _next_replayed(self, owner: Producer) -> tuple[Envelope, int] | None:
        source = self.source
        if source is None:
            raise RuntimeError("the committed sequence needs a replay: call start_replay() "
                               "with the envelopes of replay_range() first")
        while True:
            if isinstance(source, AsyncIterator):
                env = await anext(source, None)
            else:
                env = next(source, None)
            if env is None:
                await self.close()
                self.replay = None
                return None
            if self.replayed is not None:
                self.replayed.value += 1
            clock, flags, producer = message_parts(env.message)
            # Replays re-read other producers' messages, and may repeat this one's.
            if (producer == owner.producer and flags == Flags.CONTINUE_TXN
                    and owner.min_clock < clock <= self.final_clock):
                return env, clock

    async def close(self) -> None:
        aclose = getattr(self.source, "aclose", None)
        if aclose is not None:
            await aclose()
        self.source = None
