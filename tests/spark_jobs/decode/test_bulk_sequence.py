"""BulkSequencer against the message Sequencer: the same committed messages, in the same order,
however a journal is cut into ranges and blocks.

Journals are random mixes of what producers do: messages outside transactions, transactions
committed or rolled back by their ACK, duplicates of earlier messages (a retried append),
messages without a UUID. The reference is `sequence_committed` over the whole journal; the bulk
side cuts it into ranges, seeds each with the states the previous ranges' scans left, and
each range into blocks, resolving replays of transactions opened before a range or whose
held messages were let go (a small `max_held`).
"""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import AsyncIterator, Iterable

import numpy as np
import pytest

from gazette_core.message.committed import sequence_committed
from gazette_core.message.interfaces import Envelope, JSONRecord
from gazette_core.message.uuid import Flags, build_uuid, get_parts
from spark_jobs.decode.bulk_sequence import BulkSequencer, ProducerState, Replay, forget_idle
from spark_jobs.decode.uuid_columns import UUIDColumns
from tests.message.random_journals import Event, journal

J = "a/journal"


def envelope(event: Event) -> Envelope:
    msg = JSONRecord()
    msg.set_uuid(event[1])
    return Envelope(J, event[0], event[0] + 10, msg)


async def _aiter(events: Iterable[Event]) -> AsyncIterator[Envelope]:
    for event in events:
        yield envelope(event)


def reference(events: list[Event]) -> list[int]:
    """The committed offsets a Sequencer reading the whole journal hands out, in order."""
    def replay(_: str, begin: int, end: int) -> AsyncIterator[Envelope]:
        return _aiter(e for e in events if begin <= e[0] < end)

    async def run() -> list[int]:
        return [env.begin async for env in sequence_committed(_aiter(events), replay,
                                                              ring_size=4)]
    return asyncio.run(run())


def columns(events: list[Event]) -> tuple[np.ndarray, UUIDColumns]:
    parts = [get_parts(u) for _, u in events]
    return (np.array([o for o, _ in events], dtype=np.int64),
            UUIDColumns(clock=np.array([c for c, _, _ in parts], dtype=np.uint64),
                        flags=np.array([f for _, f, _ in parts], dtype=np.uint16),
                        producer=np.array([int.from_bytes(p, "big") for *_, p in parts],
                                          dtype=np.uint64)))


def resolve(events: list[Event], replay: Replay) -> list[int]:
    after, out = replay.after, []
    for offset, u in events:
        clock, flags, producer = get_parts(u)
        if (replay.begin <= offset < replay.end and flags == Flags.CONTINUE_TXN
                and int.from_bytes(producer, "big") == replay.producer
                and after < clock <= replay.through):
            out.append(offset)
            after = clock
    return out


def bulk(events: list[Event], cuts: list[int], block_rows: int, max_held: int) -> list[int]:
    """Committed offsets, range by range, each range seeded by scans of those before."""
    states: tuple[ProducerState, ...] = ()
    out: list[int] = []
    bounds = [0, *cuts, len(events)]
    for lo, hi in itertools.pairwise(bounds):
        part = events[lo:hi]
        begin = part[0][0] if part else 10 * lo
        reader = BulkSequencer(begin, states, max_held=max_held)
        scanner = BulkSequencer(begin, states, hold=False)
        blocks = [part[i:i + block_rows] for i in range(0, len(part), block_rows)]
        for number, block in enumerate(blocks):
            offsets, ids = columns(block)
            for emitted in reader.block(number, offsets, ids):
                if isinstance(emitted, Replay):
                    out.extend(resolve(events, emitted))
                else:
                    out.extend(blocks[emitted[0]][r][0] for r in emitted[1].tolist())
            assert scanner.block(number, offsets, ids) == []
        assert reader.states() == scanner.states()
        states = scanner.states()
    return out


@pytest.mark.parametrize("seed", range(60))
def test_ranges_and_blocks_commit_what_the_sequencer_commits(seed: int) -> None:
    rng = random.Random(seed)
    events = journal(rng, rng.choice((20, 80, 300)))
    expected = reference(events)
    for _ in range(4):
        cuts = sorted(rng.sample(range(1, len(events)), rng.randint(0, 6)))
        blocks, held = rng.choice((1, 3, 7, 50, 1000)), rng.choice((1, 2, 5, 1 << 20))
        assert bulk(events, cuts, blocks, held) == expected, (seed, cuts, blocks, held)


def test_a_block_of_rising_messages_outside_transactions_is_committed_whole() -> None:
    p = bytes.fromhex("010000000001")
    events = [(10 * i, build_uuid(p, (1 << 40) + 16 * i, Flags.OUTSIDE_TXN)) for i in range(5)]
    sequencer = BulkSequencer(0)
    emitted = sequencer.block(0, *columns(events))
    assert len(emitted) == 1 and emitted[0][0] == 0
    assert emitted[0][1].tolist() == [0, 1, 2, 3, 4]
    assert sequencer.states() == (("010000000001", (1 << 40) + 64, (1 << 40) + 64, -1),)
    # Again: every one is a duplicate now.
    assert sequencer.block(1, *columns(events)) == []


def test_producers_idle_past_the_horizon_are_forgotten_open_transactions_too() -> None:
    states = (("000000000001", 100, 100, -1), ("000000000002", 500, 900, 40),
              ("000000000003", 1000, 1000, -1))
    assert forget_idle(states, horizon=500) == states[1:]
    assert forget_idle(states, horizon=99) == states[2:]
    assert forget_idle((), horizon=1) == ()
