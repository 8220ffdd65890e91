"""A replica restarted with an empty spool never serves reads that end short of the head.

Three brokers of a local stack run as processes. While a writer appends to a
journal of replication 3, one replica is SIGKILLed and restarted; once it is
back in the route, every non-blocking read sent to it must reach at least
what was acknowledged before the read began.
"""

from __future__ import annotations

import asyncio
import random
import signal
import time
from pathlib import Path

import grpc

from gazette_core.broker.client.journals import apply_journals
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.testing.broker import journal_spec
from tests.reliability.support import (
    LEASE_S,
    Cluster,
    Writer,
    channel_stub,
    full_route,
    local_cluster,
)

ATTEMPT_TIMEOUT_S = 2.0
# How long reads are sent to the restarted broker once it is back.
PROBE_S = 4.0
# Reads start this far before the acknowledged head, so they cross what the
# restarted replica missed.
READ_BACK_BYTES = 64 * 1024
# Large fragments and rare store listings: what the restarted replica missed
# stays in the other replicas' spools for the whole test.
FRAGMENT_LENGTH = 64 * 1024 * 1024
REFRESH_S = 60.0


async def _served_through(stub: object, journal: str, offset: int) -> int:
    """Where a non-blocking read from `offset` stopped."""
    out = [r async for r in stub.Read(  # type: ignore[attr-defined]
        pb.ReadRequest(journal=journal, offset=offset), timeout=10)]
    last = out[-1]
    assert last.status == pb.OFFSET_NOT_YET_AVAILABLE, last
    return int(last.offset)


async def _create(cluster: Cluster, journal: str) -> pb.Route:
    channel, stub = channel_stub(cluster.endpoints[0])
    try:
        spec = journal_spec(journal, replication=3, length=FRAGMENT_LENGTH,
                            refresh_s=REFRESH_S)
        await apply_journals(stub, pb.ApplyRequest(changes=[pb.ApplyRequest.Change(upsert=spec)]))
        return await full_route(stub, journal, 3)
    finally:
        await channel.close()


async def _back_in_route(endpoint: str, journal: str, member: pb.ProcessSpec.ID) -> None:
    channel, stub = channel_stub(endpoint)
    try:
        deadline = time.monotonic() + 6 * LEASE_S
        while member not in list((await full_route(stub, journal, 3)).members):
            assert time.monotonic() < deadline, "the restarted broker never rejoined"
            await asyncio.sleep(0.05)
    finally:
        await channel.close()


async def test_restarted_replica_serves_no_read_short_of_acknowledged(tmp_path: Path) -> None:
    journal = "rejoin/restarted"
    async with local_cluster(tmp_path / "stack") as cluster:
        route = await _create(cluster, journal)
        replica = next(m for i, m in enumerate(route.members) if i != route.primary)
        name = cluster.name_of(replica)
        others = [b.endpoint for b in cluster.stack.brokers if b.name != name]
        stop = asyncio.Event()
        writer = Writer(0, others, journal, ATTEMPT_TIMEOUT_S, random.Random(0))
        task = asyncio.create_task(writer.run(stop))
        short: list[tuple[int, int]] = []
        reads = 0
        try:
            while not writer.acks:
                await asyncio.sleep(0.05)
            await cluster.signal(name, signal.SIGKILL)
            await cluster.up()
            await _back_in_route(others[0], journal, replica)
            channel, stub = channel_stub(cluster.broker(name).endpoint)
            try:
                loop = asyncio.get_running_loop()
                end = loop.time() + PROBE_S
                while loop.time() < end:
                    floor = max((a.end for a in writer.acks), default=0)
                    try:
                        served = await _served_through(
                            stub, journal, max(0, floor - READ_BACK_BYTES))
                    except grpc.aio.AioRpcError:
                        continue  # still starting: reads are retried
                    reads += 1
                    if served < floor:
                        short.append((served, floor))
                    await asyncio.sleep(0.02)
            finally:
                await channel.close()
        finally:
            stop.set()
            await task
    print(f"{len(writer.acks)} acknowledged; {reads} reads from the restarted replica; "
          f"short: {short}")
    assert reads > 10
    assert not short, f"reads ended below what was acknowledged before them: {short}"
