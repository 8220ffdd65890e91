"""The stream-sum soak: exactly-once sums while consumer processes are SIGKILLed.

A local stack of 2 brokers (journals at R=2) and 3 consumer processes running
`examples.stream_sum:Summer`, 8 shards with one hot standby each. For about a
minute the chunker publishes streams while, every few seconds, the consumer
serving the most primaries is SIGKILLed; each of its shards must be PRIMARY
elsewhere within the consumers' lease TTL plus 5 s, and then it is restarted.
At the end every sum is right, none duplicated, none missing.
"""

from __future__ import annotations

import asyncio
import collections
import time
from pathlib import Path

import pytest

from examples.stream_sum import chunker
from gazette_core.testing.consumer_stack import StackConsumers
from tests.examples.stack_support import example_journals, example_shards

LEASE_S = 4
KILL_FOR_S = 60
KILL_EVERY_S = 3


@pytest.mark.timeout(240)
async def test_sums_are_exactly_once_while_consumers_are_killed(tmp_path: Path) -> None:
    stack = await StackConsumers.up(tmp_path / "stack", brokers=2, consumers=3, lease=LEASE_S,
                                    app="examples.stream_sum:Summer")
    try:
        await stack.apply_journals(example_journals("stream_sum", replication=2))
        shards = example_shards("stream_sum")
        await stack.apply_shards(shards)
        await stack.wait_all_primary([s.id for s in shards])
        run = asyncio.create_task(chunker.run(stack.journals, chunker.Options(
            streams=1000, concurrency=32, max_chunks=20, rate=220, timeout=60)))
        kills = await _kill_repeatedly(stack, [s.id for s in shards], run)
        summary = await run
    finally:
        await stack.kill_all()
    assert kills >= 5
    assert summary == {"streams": 1000, "verified": 1000, "wrong": 0, "duplicated": 0,
                       "missing": 0}


async def _kill_repeatedly(stack: StackConsumers, shards: list[str],
                           run: asyncio.Task[dict[str, int]]) -> int:
    """Kill, await the takeovers, restart; until KILL_FOR_S passed. The number of kills."""
    kills, until = 0, time.monotonic() + KILL_FOR_S
    while time.monotonic() < until and not run.done():
        await asyncio.sleep(KILL_EVERY_S)
        primaries = await stack.wait_all_primary(shards)
        victim, _ = collections.Counter(primaries.values()).most_common(1)[0]
        moved = [s for s, p in primaries.items() if p == victim]
        await stack.kill(victim)
        took = await stack.takeovers(moved, victim, limit=LEASE_S + 5)
        print("killed", victim, [(t.shard, round(t.seconds, 2)) for t in took], flush=True)
        for takeover in took:
            assert takeover.seconds <= LEASE_S + 5, takeover
        kills += 1
        await stack.restart_dead()
    return kills
