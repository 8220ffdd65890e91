"""Exactly-once sums while a broker is SIGKILLed, or a consumer frozen, under load.

Local stacks running `examples.stream_sum:Summer` while the chunker publishes:
- 2 brokers (journals, recovery logs included, at R=2) and 2 consumers: one
  broker is SIGKILLed and, after its lease ran out, started again; recorders
  and publishers ride the fail-over on the surviving replica, and no shard
  fails;
- 1 broker and 2 consumers: the consumer serving a primary is SIGSTOPped
  until its shards are PRIMARY elsewhere, then resumed; it finds its lease
  gone and exits, and nothing it did while frozen reaches the sums.
Every sum is right, none duplicated, none missing.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from examples.stream_sum import chunker
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.local import processes
from gazette_core.testing.consumer_stack import StackConsumers
from tests.examples.stack_support import example_journals, example_shards

LEASE_S = 4


@pytest.mark.timeout(240)
async def test_sums_are_exactly_once_while_a_broker_is_killed(tmp_path: Path) -> None:
    stack = await StackConsumers.up(tmp_path / "stack", brokers=2, consumers=2, lease=LEASE_S,
                                    app="examples.stream_sum:Summer")
    try:
        await stack.apply_journals(example_journals("stream_sum", replication=2))
        shards = example_shards("stream_sum")
        await stack.apply_shards(shards)
        await stack.wait_all_primary([s.id for s in shards])
        run = asyncio.create_task(chunker.run(stack.journals, chunker.Options(
            streams=300, concurrency=16, max_chunks=20, rate=150, timeout=90)))
        await asyncio.sleep(4)
        victim = stack.stack.brokers[0]
        os.kill(victim.pid, signal.SIGKILL)
        await asyncio.sleep(LEASE_S + 2)
        await stack.restart_dead()
        summary = await run
        listed = await stack.list_shards()
        report = "" if summary["verified"] == 300 else await stack.diagnosis()
    finally:
        await stack.kill_all()
    assert summary == {"streams": 300, "verified": 300, "wrong": 0, "duplicated": 0,
                       "missing": 0}, report
    failed = [(s.spec.id, [st.errors for st in s.status]) for s in listed
              if any(st.code == cpb.ReplicaStatus.FAILED for st in s.status)]
    assert failed == []


@pytest.mark.timeout(240)
async def test_a_frozen_consumer_is_replaced_and_cannot_commit_when_it_resumes(
        tmp_path: Path) -> None:
    stack = await StackConsumers.up(tmp_path / "stack", brokers=1, consumers=2, lease=LEASE_S,
                                    app="examples.stream_sum:Summer")
    try:
        await stack.apply_journals(example_journals("stream_sum", replication=1))
        shards = [s.id for s in example_shards("stream_sum")]
        await stack.apply_shards(example_shards("stream_sum"))
        primaries = await stack.wait_all_primary(shards)
        run = asyncio.create_task(chunker.run(stack.journals, chunker.Options(
            streams=300, concurrency=16, max_chunks=20, rate=150, timeout=90)))
        await asyncio.sleep(3)
        victim = stack.process(primaries[shards[0]])
        moved = [s for s, p in primaries.items() if p == victim.name]
        assert moved
        os.kill(victim.pid, signal.SIGSTOP)
        try:
            await stack.takeovers(moved, victim.name, limit=LEASE_S + 5)
        finally:
            os.kill(victim.pid, signal.SIGCONT)
        # Resumed, it finds its lease gone: it stops its shards and exits (75).
        deadline = asyncio.get_running_loop().time() + 30
        while processes.alive(victim.pid, victim.marker):
            assert asyncio.get_running_loop().time() < deadline, "the zombie did not exit"
            await asyncio.sleep(0.1)
        summary = await run
        report = "" if summary["verified"] == 300 else await stack.diagnosis()
    finally:
        await stack.kill_all()
    assert summary == {"streams": 300, "verified": 300, "wrong": 0, "duplicated": 0,
                       "missing": 0}, report
