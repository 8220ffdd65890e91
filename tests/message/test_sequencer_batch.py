"""Sequencer.queue_batch and CommittedSequence over batches against the per-message path:
the same committed envelopes in the same order, the same checkpoints and offsets, and the
same resume offsets after each envelope handed out, however a journal is cut into batches.

The journals (random_journals.py) mix messages outside transactions, transactions committed
or rolled back, duplicates and messages without a UUID; a small ring makes commits replay.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass

import pytest

from gazette_core.message.committed import COMMIT_OUTCOMES, CommittedSequence
from gazette_core.message.interfaces import ZERO_UUID, CSVRecord, Envelope, Message
from gazette_core.message.sequencer import QueueOutcome, Sequencer
from gazette_core.message.structs import StructMessage
from gazette_core.message.uuid import Flags, build_uuid
from tests.message.random_journals import Event, journal
from tests.message.support import Note

J = "a/journal"
RING = 4


class Tick(StructMessage):
    n: int = 0


def envelopes(events: list[Event], rng: random.Random) -> list[Envelope]:
    """The events as envelopes of one message type or assorted ones, with UUIDs spelt in
    either case (or empty for none)."""
    kinds = rng.choice(("tick", "note", "csv", "tick note csv")).split()
    out = []
    for offset, u in events:
        text = str(u) if u.int else rng.choice(("", str(u)))
        text = text.upper() if rng.random() < 0.2 else text
        kind = rng.choice(kinds)
        msg: Message = (Tick(uuid=text) if kind == "tick" else Note(uuid=text)
                        if kind == "note" else CSVRecord([text, "x"]))
        out.append(Envelope(J, offset, offset + 10, msg))
    return out


def cut(envs: list[Envelope], rng: random.Random) -> list[list[Envelope]]:
    """`envs` in batches of random sizes, up to a random largest one."""
    largest, out, at = rng.choice((1, 2, 5, 17, 40, 1000)), [], 0
    while at < len(envs):
        size = rng.randint(1, largest)
        out.append(envs[at:at + size])
        at += size
    return out


def replayer(envs: list[Envelope]):  # type: ignore[no-untyped-def]
    def replay(_: str, begin: int, end: int) -> AsyncIterator[Envelope]:
        return _aiter(e for e in envs if begin <= e.begin < end)
    return replay


async def _aiter(items: Iterable[Envelope]) -> AsyncIterator[Envelope]:
    for item in items:
        yield item


@dataclass
class Trace:
    handed: list[int]
    checkpoints: list[bytes]


async def _step_through(seq: Sequencer, env: Envelope, envs: list[Envelope],
                        out: list[int]) -> None:
    outcome = seq.queue_uncommitted(env)
    if outcome in COMMIT_OUTCOMES:
        if outcome is QueueOutcome.ACK_COMMIT_REPLAY:
            seq.start_replay(replayer(envs)(*seq.replay_range()))
        while await seq.step():
            assert seq.dequeued is not None
            out.append(seq.dequeued.begin)


async def per_message(envs: list[Envelope], batches: list[list[Envelope]]) -> Trace:
    """queue_uncommitted and step() for each envelope; a checkpoint after each batch."""
    seq, trace = Sequencer(ring_size=RING), Trace([], [])
    for batch in batches:
        for env in batch:
            await _step_through(seq, env, envs, trace.handed)
        trace.checkpoints.append(seq.checkpoint().SerializeToString(deterministic=True))
    return trace


async def bulk(envs: list[Envelope], batches: list[list[Envelope]]) -> Trace:
    """queue_batch, stepping through what it leaves to the caller."""
    seq, trace = Sequencer(ring_size=RING), Trace([], [])
    for batch in batches:
        at = 0
        while at < len(batch):
            committed, at = seq.queue_batch(batch, at)
            trace.handed.extend(e.begin for e in committed)
            if at < len(batch):
                await _step_through(seq, batch[at], envs, trace.handed)
                at += 1
        trace.checkpoints.append(seq.checkpoint().SerializeToString(deterministic=True))
    return trace


async def committed_reference(envs: list[Envelope]) -> list[tuple[int, int, int]]:
    """The committed envelopes as CommittedSequence handed them out one at a time, each with
    the resume offsets (consumed, not consumed) as the Sequencer gave them then."""
    seq, out = Sequencer(ring_size=RING), []
    for env in envs:
        outcome = seq.queue_uncommitted(env)
        if outcome not in COMMIT_OUTCOMES:
            continue
        if outcome is QueueOutcome.ACK_COMMIT_REPLAY:
            seq.start_replay(replayer(envs)(*seq.replay_range()))
        skip = env if outcome is not QueueOutcome.OUTSIDE_COMMIT else None
        while await seq.step():
            assert seq.dequeued is not None
            if seq.dequeued is not skip:
                out.append((seq.dequeued.begin, seq.resume_offset(J, 0, True),
                            seq.resume_offset(J, 0, False)))
    return out


async def committed_batches(envs: list[Envelope], batches: list[list[Envelope]]
                            ) -> list[tuple[int, int, int]]:
    committed = CommittedSequence(_batches(batches), replayer(envs), ring_size=RING)
    return [(env.begin, committed.resume_offset(J, 0, True),
             committed.resume_offset(J, 0, False)) async for env in committed]


async def _batches(batches: list[list[Envelope]]) -> AsyncIterator[list[Envelope]]:
    for batch in batches:
        yield batch


@pytest.mark.parametrize("seed", range(80))
def test_batches_commit_what_messages_one_by_one_commit(seed: int) -> None:
    rng = random.Random(seed)
    # Mostly transactions, or mostly messages outside them (whole batches settled at once).
    mix = rng.choice(((0.35, 0.1, 0.05), (0.95, 0.0, 0.0), (0.9, 0.02, 0.01)))
    events = journal(rng, rng.choice((20, 80, 300)), *mix)
    envs = envelopes(events, rng)
    for _ in range(3):
        batches = cut(envs, rng)
        assert asyncio.run(bulk(envs, batches)) == asyncio.run(per_message(envs, batches))
        assert (asyncio.run(committed_batches(envs, batches))
                == asyncio.run(committed_reference(envs)))


def test_messages_outside_transactions_are_settled_in_one_call() -> None:
    rng = random.Random(3)
    producers = [bytes([1, i, 0, 0, 0, i]) for i in range(3)]
    uuids = [build_uuid(producers[i % 3], (1 << 40) + 16 * i, Flags.OUTSIDE_TXN)
             for i in range(30)]
    events = list(enumerate([*uuids[:20], uuids[4], ZERO_UUID, *uuids[20:]]))
    envs = envelopes([(10 * i, u) for i, u in events], rng)
    seq = Sequencer()
    committed, at = seq.queue_batch(envs, 0)
    assert at == len(envs)
    assert committed == envs[:20] + envs[21:]  # All but the duplicate of the fifth.
    assert seq.read_through() == {J: 10 * len(envs)}
