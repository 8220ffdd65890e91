"""Reliability of journals while Etcd is down, shorter and longer than the lease TTL.

Three brokers of a local stack run as processes with a short Etcd lease
(support.LEASE_S) and writers append self-checking records to an R=2 and an
R=3 journal. Etcd is SIGKILLed and later restarted the way `gazctl local up`
restarts it (together with any broker that exited meanwhile). Afterwards the
journals are read back: no acknowledged byte may be lost and no two
acknowledgements may cover overlapping offsets.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import random
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from gazette_core.local import processes
from tests.reliability.support import (
    LEASE_S,
    Cluster,
    Writer,
    cluster_route,
    create_journal,
    local_cluster,
    lost_bytes,
    read_back,
    resumed_at,
    reused_offsets,
)

JOURNALS = {"outage/r2": 2, "outage/r3": 3}
WRITERS_PER_JOURNAL = 2
ATTEMPT_TIMEOUT_S = 3.0
# Longer than the lease TTL: every broker's lease surely runs out meanwhile.
LONG_OUTAGE_S = 2.5 * LEASE_S
# Within the lease TTL, even counted from the last keep-alive (at most TTL/3 earlier).
SHORT_OUTAGE_S = LEASE_S / 4
# Writers keep appending this long before the outage and after appends resume.
STEADY_S = 1.5
# A broker whose lease ran out exits within this long of the outage's start.
EXIT_LIMIT_S = 3 * LEASE_S + 10


@dataclass
class Figures:
    """What an outage cost, per run."""

    acknowledged: int
    lost_bytes: int
    reused_offsets: int
    longest_stall: float

    def __str__(self) -> str:
        return (f"{self.acknowledged} acknowledged appends, acknowledged bytes lost "
                f"{self.lost_bytes}, offsets reused {self.reused_offsets}, longest writer "
                f"stall {self.longest_stall:.1f}s")


def _longest_stall(writer: Writer, since: float, until: float) -> float:
    times = [since, *(a.acked for a in writer.acks if since < a.acked < until), until]
    return max(b - a for a, b in itertools.pairwise(times))


async def _warm_up(writers: list[Writer], limit: float = 30) -> None:
    deadline = time.monotonic() + limit
    while any(not w.acks for w in writers):
        assert time.monotonic() < deadline, [w.failures[-3:] for w in writers]
        await asyncio.sleep(0.05)


async def _wait_resumed(writers: list[Writer], since: float, limit: float) -> None:
    loop = asyncio.get_running_loop()
    while any(resumed_at(w, since) is None for w in writers):
        assert loop.time() < since + limit, (
            f"appends did not resume within {limit}s: {[w.failures[-2:] for w in writers]}")
        await asyncio.sleep(0.05)


def _kill_etcd(cluster: Cluster) -> None:
    etcd = cluster.stack.etcd
    assert processes.alive(etcd.pid, etcd.marker)
    os.kill(etcd.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while processes.alive(etcd.pid, etcd.marker):
        assert time.monotonic() < deadline, "etcd outlived SIGKILL"
        time.sleep(0.02)


def _broker_pids(cluster: Cluster) -> dict[str, int]:
    return {b.name: b.pid for b in cluster.stack.brokers}


async def _brokers_exited(cluster: Cluster, limit: float) -> None:
    deadline = time.monotonic() + limit
    while any(processes.alive(b.pid, b.marker) for b in cluster.stack.brokers):
        assert time.monotonic() < deadline, "a broker kept running past its lease"
        await asyncio.sleep(0.1)


def _broker_logs(cluster: Cluster) -> dict[str, str]:
    return {b.name: (cluster.directory / "logs" / f"{b.name}.log").read_text(errors="replace")
            for b in cluster.stack.brokers}


async def _outage(tmp_path: Path, outage_s: float, long: bool
                  ) -> tuple[Figures, list[Writer], float, float, Cluster, dict[str, str]]:
    """Writers append through an Etcd outage of `outage_s`; figures of the read-back.

    Returns the figures, the writers, when the outage began and ended, the
    cluster and the brokers' logs.
    """
    async with local_cluster(tmp_path / "stack") as cluster:
        for journal, replication in JOURNALS.items():
            await create_journal(cluster, journal, replication)
        rng = random.Random()
        writers = [Writer(i, cluster.endpoints, journal, ATTEMPT_TIMEOUT_S,
                          random.Random(rng.random()))
                   for i, journal in enumerate(j for j in JOURNALS
                                               for _ in range(WRITERS_PER_JOURNAL))]
        stop = asyncio.Event()
        tasks = [asyncio.create_task(w.run(stop)) for w in writers]
        loop = asyncio.get_running_loop()
        try:
            await _warm_up(writers)
            await asyncio.sleep(STEADY_S)
            pids = _broker_pids(cluster)
            began = loop.time()
            _kill_etcd(cluster)
            if long:
                await _brokers_exited(cluster, EXIT_LIMIT_S)
            await asyncio.sleep(max(0.0, began + outage_s - loop.time()))
            ended = loop.time()
            await cluster.up()  # etcd, and any broker that exited, as `gazctl local up`
            if not long:
                assert _broker_pids(cluster) == pids, "a broker restarted in a short outage"
            await _wait_resumed(writers, loop.time(), 6 * LEASE_S)
            await asyncio.sleep(STEADY_S)
            finished = loop.time()
        finally:
            stop.set()
            await asyncio.gather(*tasks)
        lost = reused = 0
        for journal, replication in JOURNALS.items():
            await cluster_route(cluster, journal, replication)
            readback = await read_back(cluster.endpoints, journal)
            acks = [a for w in writers if w.journal == journal for a in w.acks]
            lost += lost_bytes(readback, acks)
            reused += reused_offsets(acks)
        logs = _broker_logs(cluster)
    figures = Figures(sum(len(w.acks) for w in writers), lost, reused,
                      max(_longest_stall(w, began - STEADY_S, finished) for w in writers))
    return figures, writers, began, ended, cluster, logs


async def test_etcd_outage_past_the_lease_loses_no_acknowledged_append(tmp_path: Path) -> None:
    """Etcd is down for longer than the lease TTL, then restarted with the dead brokers.

    Every broker's lease runs out meanwhile: each stops taking appends,
    persists its spools and exits with a one-line reason (no traceback). Once
    restarted, appends continue at the persisted end: no acknowledged byte is
    lost and no offset is acknowledged twice.
    """
    figures, _, _, _, _, logs = await _outage(tmp_path, LONG_OUTAGE_S, long=True)
    print(f"Etcd down {LONG_OUTAGE_S:.0f}s (lease {LEASE_S}s): {figures}")
    for name, text in logs.items():
        assert "Traceback" not in text, f"{name} logged a traceback:\n{text[-3000:]}"
        assert "lost its Etcd lease" in text, f"{name} did not say why it stopped"
    assert figures.lost_bytes == 0, figures
    assert figures.reused_offsets == 0, figures


async def test_etcd_outage_within_the_lease_keeps_appends_flowing(tmp_path: Path) -> None:
    """Etcd is down for a third of the lease TTL: brokers keep serving appends throughout.

    Each writer has appends begun and acknowledged while Etcd is down, no
    broker restarts, and nothing acknowledged is lost or acknowledged twice.
    """
    figures, writers, began, ended, _, logs = await _outage(tmp_path, SHORT_OUTAGE_S,
                                                            long=False)
    print(f"Etcd down {SHORT_OUTAGE_S:.1f}s (lease {LEASE_S}s): {figures}")
    during = [sum(1 for a in w.acks if began <= a.started and a.acked <= ended)
              for w in writers]
    assert all(during), f"appends acknowledged during the outage, per writer: {during}"
    for name, text in logs.items():
        assert "Traceback" not in text, f"{name} logged a traceback:\n{text[-3000:]}"
    assert figures.lost_bytes == 0, figures
    assert figures.reused_offsets == 0, figures
