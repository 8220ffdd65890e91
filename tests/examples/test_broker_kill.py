"""Exactly-once sums while a broker is SIGKILLed under running consumers.

A local stack of 2 brokers (journals, recovery logs included, at R=2) and 2
consumer processes running `examples.stream_sum:Summer`. While the chunker
publishes, one broker is SIGKILLed and, after its lease ran out, started
again: recorders and publishers ride the fail-over on the surviving replica.
Every sum is right, none duplicated, none missing, and no shard fails.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from examples.stream_sum import chunker
from gazette_core.consumer.protocol import consumer_pb2 as cpb
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
    finally:
        await stack.kill_all()
    assert summary == {"streams": 300, "verified": 300, "wrong": 0, "duplicated": 0,
                       "missing": 0}
    failed = [(s.spec.id, [st.errors for st in s.status]) for s in listed
              if any(st.code == cpb.ReplicaStatus.FAILED for st in s.status)]
    assert failed == []
