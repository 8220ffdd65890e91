"""A frozen primary: its journal must be writable again once the allocator moves it.

Three brokers of a local stack run as processes with a short Etcd lease
(support.LEASE_S). Writers append to a journal of replication 2 while its
primary is SIGSTOPped for well past its lease; the allocator routes the
journal to the two live brokers, and the surviving replica must give up the
frozen primary's Replicate stream so that the new route can take appends.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import signal
import time
from pathlib import Path

from gazette_core.local import processes
from gazette_core.local import stack as local_stack
from tests.reliability.support import (
    LEASE_S,
    Writer,
    check_acknowledged,
    cluster_route,
    create_journal,
    local_cluster,
    lost_bytes,
    read_back,
    resumed_at,
    reused_offsets,
)

WRITERS = 3
ATTEMPT_TIMEOUT_S = 2.0
# The bound: appends are acknowledged again within the lease TTL plus this.
RECOVERY_MARGIN_S = 6.0
# How long the primary stays frozen: well past its lease and the recovery bound.
FREEZE_S = LEASE_S + RECOVERY_MARGIN_S + 4.0
# After SIGCONT the victim finds its lease gone and exits; this bounds the wait.
EXIT_WAIT_S = 15.0


async def _warm_up(writers: list[Writer], limit: float = 30) -> None:
    deadline = time.monotonic() + limit
    while any(not w.acks for w in writers):
        assert time.monotonic() < deadline, [w.failures[-3:] for w in writers]
        await asyncio.sleep(0.05)


def _longest_stall(writers: list[Writer], since: float, until: float) -> float:
    """The longest time in [since, until] some writer went without an acknowledgement."""
    stalls = []
    for w in writers:
        times = [since, *(a.acked for a in w.acks if since < a.acked < until), until]
        stalls.append(max(b - a for a, b in itertools.pairwise(times)))
    return max(stalls)


async def _wait_gone(pid: int, limit: float) -> None:
    deadline = time.monotonic() + limit
    while processes.alive(pid, local_stack.BROKER_MARKER) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)


async def test_frozen_primary_is_replaced_before_it_resumes(tmp_path: Path) -> None:
    """SIGSTOP the primary past its lease: writers are acknowledged again while it is frozen.

    Afterwards (SIGCONT, then a restart of whatever exited) every acknowledged
    record is at its commit offsets with its content, and no two acknowledged
    appends share an offset.
    """
    journal = "frozen/primary"
    async with local_cluster(tmp_path / "stack") as cluster:
        route = await create_journal(cluster, journal, replication=2)
        victim = cluster.name_of(route.members[route.primary])
        stop = asyncio.Event()
        # Writers go through the other brokers (which forward to the primary), so a
        # stall measures the cluster's recovery, not attempts sent to the frozen process.
        live = [b.endpoint for b in cluster.stack.brokers if b.name != victim]
        writers = [Writer(i, live, journal, ATTEMPT_TIMEOUT_S, random.Random(i))
                   for i in range(WRITERS)]
        tasks = [asyncio.create_task(w.run(stop)) for w in writers]
        loop = asyncio.get_running_loop()
        try:
            await _warm_up(writers)
            pid = cluster.pid(victim)
            await cluster.signal(victim, signal.SIGSTOP)
            frozen = loop.time()
            await asyncio.sleep(FREEZE_S)
            thawed = loop.time()
            resumed = [resumed_at(w, frozen) for w in writers]
            stall = _longest_stall(writers, frozen - 1.0, thawed)
            await cluster.signal(victim, signal.SIGCONT)
            await asyncio.sleep(1.0)
        finally:
            stop.set()
            await asyncio.gather(*tasks)
        await _wait_gone(pid, EXIT_WAIT_S)
        await cluster.up()
        await cluster_route(cluster, journal, 2)
        readback = await read_back(cluster.endpoints, journal)

    acks = [a for w in writers for a in w.acks]
    after = [None if r is None else round(r - frozen, 1) for r in resumed]
    print(f"{len(acks)} acknowledged; primary {victim} frozen {FREEZE_S:g}s; writers "
          f"acknowledged again after {after}s; acknowledged bytes lost "
          f"{lost_bytes(readback, acks)}, offsets reused {reused_offsets(acks)}, longest "
          f"writer stall {stall:.1f}s; holes {readback.holes()}")
    bound = LEASE_S + RECOVERY_MARGIN_S
    assert all(r is not None and r - frozen <= bound for r in resumed), (
        f"writers not acknowledged within {bound}s of the freeze: {after}; "
        f"{[w.failures[-2:] for w in writers]}")
    check_acknowledged(readback, acks)  # nothing lost, no offset handed out twice
