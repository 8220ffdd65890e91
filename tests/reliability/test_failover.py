"""Reliability of replicated journals under broker crashes, stalls and restarts.

Three brokers of a local stack run as processes with a short Etcd lease
(support.LEASE_S). Writers append self-checking records, one atomic Append
each, retrying a record until it is acknowledged; afterwards the journal is
read back and held against every acknowledgement.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from gazette_core.broker.client.journals import list_journals
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import GazetteError
from tests.reliability.support import (
    LEASE_S,
    Ack,
    Cluster,
    Readback,
    Writer,
    attempt,
    channel_stub,
    check_acknowledged,
    cluster_route,
    create_journal,
    local_cluster,
    read_back,
    resumed_at,
)

CHAOS_S = 20.0
WRITERS = 4
# A writer gives up on an attempt after this long and retries the record.
ATTEMPT_TIMEOUT_S = 5.0
# Stall test: attempts time out sooner, so several begin during each stall.
STALL_ATTEMPT_TIMEOUT_S = 2.0
# A replica stalls for less than a third of the lease TTL: its lease stays valid.
SHORT_STALL_S = LEASE_S / 3
# After the re-route, appends keep trying against the two live brokers this long.
LONG_STALL_EXTRA_S = 2.0
# Probe appends begun during a stall wait out the longest stall.
PROBE_TIMEOUT_S = 30.0
# (whose route role, past its lease?) of each stalled broker, in order.
STALLS = [("replica", False), ("primary", True), ("replica", True)]
# Rolling restart: how long the writer runs between restarts, and the longest
# it may go without an acknowledgement while one broker restarts.
ROLLING_GAP_S = 1.0
ROLLING_PAUSE_S = 5.0


@dataclass
class Kill:
    victim: str
    at: float
    restarted_after: float
    resumed_after: list[float | None]  # per writer, seconds after the kill


async def _warm_up(writers: list[Writer], limit: float = 30) -> None:
    deadline = time.monotonic() + limit
    while any(not w.acks for w in writers):
        assert time.monotonic() < deadline, [w.failures[-3:] for w in writers]
        await asyncio.sleep(0.05)


async def _chaos(cluster: Cluster, writers: list[Writer], duration: float,
                 rng: random.Random) -> list[Kill]:
    """SIGKILL a random broker, restart it with `up`, wait for the writers; repeat."""
    loop = asyncio.get_running_loop()
    end = loop.time() + duration
    kills = []
    names = [b.name for b in cluster.stack.brokers]
    while loop.time() < end:
        await asyncio.sleep(rng.uniform(0.3, 1.5))
        victim = rng.choice(names)
        at = loop.time()
        await cluster.signal(victim, signal.SIGKILL)
        await asyncio.sleep(rng.uniform(0.2, 1.5))
        await cluster.up()
        restarted = loop.time() - at
        while (any(resumed_at(w, at) is None for w in writers)
               and loop.time() < at + 3 * LEASE_S):
            await asyncio.sleep(0.05)
        resumed = [resumed_at(w, at) for w in writers]
        kills.append(Kill(victim, at, restarted, [None if r is None else r - at
                                                  for r in resumed]))
    return kills


def _check_writer_order(readback: Readback, writers: list[Writer]) -> int:
    """Each writer's records appear in sequence; a repeat is an earlier failed attempt.

    Returns how many unacknowledged copies were found.
    """
    repeats = 0
    for w in writers:
        acked = {a.seq: a.begin for a in w.acks}
        found = sorted((offset, seq) for (writer, seq), offsets in readback.records.items()
                       if writer == w.index for offset in offsets)
        seqs = [seq for _, seq in found]
        assert seqs == sorted(seqs), f"writer {w.index} records out of order: {seqs}"
        assert max(seqs, default=-1) <= len(w.acks), "a record nobody wrote"
        for offset, seq in found:
            if acked.get(seq) != offset:
                # Not the acknowledged copy: an attempt that failed before it.
                assert seq not in acked or offset < acked[seq], (w.index, seq, offset)
                repeats += 1
    return repeats


async def test_sigkilled_brokers_lose_no_acknowledged_append(tmp_path: Path) -> None:
    """Random SIGKILLs and restarts while four writers append to a journal of replication 3.

    Afterwards every acknowledged record is at exactly the offsets its commit
    named, with its content and sum; everything readable parses as whole
    records (no torn append), each writer's records in order, a repeated
    record being an attempt that failed before its acknowledged copy; and
    every writer resumed within two lease TTLs of each kill. A gap in the
    journal may hold only content that some replicas committed and then lost
    with them, which nobody was told was appended (none expected, but legal).
    """
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    journal = "chaos/replicated"
    async with local_cluster(tmp_path / "stack") as cluster:
        await create_journal(cluster, journal, replication=3)
        stop = asyncio.Event()
        writers = [Writer(i, cluster.endpoints, journal, ATTEMPT_TIMEOUT_S,
                          random.Random(rng.random())) for i in range(WRITERS)]
        tasks = [asyncio.create_task(w.run(stop)) for w in writers]
        try:
            await _warm_up(writers)
            kills = await _chaos(cluster, writers, CHAOS_S, rng)
        finally:
            stop.set()
            await asyncio.gather(*tasks)
        await cluster_route(cluster, journal, 3)
        readback = await read_back(cluster.endpoints, journal)

    acks = [a for w in writers for a in w.acks]
    check_acknowledged(readback, acks)
    repeats = _check_writer_order(readback, writers)
    timeline = [(k.victim, round(k.restarted_after, 1),
                 [None if r is None else round(r, 1) for r in k.resumed_after]) for k in kills]
    summary = (f"seed {seed}: {len(acks)} acknowledged appends, "
               f"{sum(len(w.failures) for w in writers)} failed attempts, {repeats} records "
               f"repeated, holes {readback.holes()}, (victim, restarted after, writers "
               f"resumed after) {timeline}")
    print(summary)
    assert len(kills) >= 3, summary
    slow = [k for k in kills
            if any(r is None or r > 2 * LEASE_S for r in k.resumed_after)]
    assert not slow, f"writers stalled for more than {2 * LEASE_S}s after a kill: {summary}"


# -- a stalled member ----------------------------------------------------------------


def _acked_while(writers: list[Writer], since: float, until: float) -> list[str]:
    """Appends that began at or after `since` and were acknowledged before `until`."""
    return [f"writer {a.writer} seq {a.seq} acked {a.acked - since:.2f}s into the stall"
            for w in writers for a in w.acks if a.started >= since and a.acked < until]


async def _route(cluster: Cluster, journal: str, via: str) -> pb.Route:
    """The journal's route as broker `via` lists it."""
    channel, stub = channel_stub(cluster.broker(via).endpoint)
    try:
        resp = await list_journals(stub, pb.LabelSelector(
            include=pb.LabelSet(labels=[pb.Label(name="name", value=journal)])))
    finally:
        await channel.close()
    return resp.journals[0].route


async def _rerouted(cluster: Cluster, journal: str, via: str, gone: pb.ProcessSpec.ID,
                    limit: float) -> float:
    """Seconds until `via` lists the journal routed to two members without `gone`."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    while True:
        route = await _route(cluster, journal, via)
        if gone not in list(route.members) and route.primary != -1:
            assert len(route.members) == 2, route
            return loop.time() - start
        assert loop.time() < start + limit, f"never re-routed: {route}"
        await asyncio.sleep(0.05)


async def _wait_resumed(writers: list[Writer], since: float, limit: float) -> list[float]:
    """Seconds after `since` until each writer had an append begun after it acknowledged."""
    loop = asyncio.get_running_loop()
    while any(resumed_at(w, since) is None for w in writers) and loop.time() < since + limit:
        await asyncio.sleep(0.05)
    resumed = [resumed_at(w, since) for w in writers]
    assert all(r is not None for r in resumed), (
        f"appends did not resume within {limit}s: {[w.failures[-2:] for w in writers]}")
    return [r - since for r in resumed if r is not None]


@dataclass
class Stall:
    victim: str
    rerouted_after: float | None  # seconds into the stall, when waited for
    resumed_after: list[float]  # per writer, seconds after the stall ended
    probes: list[Ack | BaseException]


async def _stall(cluster: Cluster, journal: str, writers: list[Writer], victim: str,
                 past_lease: bool, probe_base: int) -> Stall:
    """SIGSTOP `victim`; no append begun meanwhile may be acknowledged before it ends.

    Besides the writers, one probe append goes through each live broker right
    after the stop, so appends certainly begin during the stall. A short stall
    (well within the lease) ends with SIGCONT; a stall past the lease ends,
    once the journal is re-routed without the victim, with SIGKILL and a
    restart.
    """
    loop = asyncio.get_running_loop()
    before = await _route(cluster, journal, cluster.stack.brokers[0].name)
    gone = next(m for m in before.members if cluster.name_of(m) == victim)
    live = [b for b in cluster.stack.brokers if b.name != victim]
    await cluster.signal(victim, signal.SIGSTOP)
    stalled = loop.time()
    probes = [asyncio.create_task(attempt(b.endpoint, journal, probe_base + i, 0,
                                          PROBE_TIMEOUT_S)) for i, b in enumerate(live)]
    rerouted = None
    if past_lease:
        rerouted = await _rerouted(cluster, journal, live[0].name, gone, 3 * LEASE_S)
        await asyncio.sleep(LONG_STALL_EXTRA_S)  # appends keep trying against two members
    else:
        await asyncio.sleep(SHORT_STALL_S)
        assert await _route(cluster, journal, live[0].name) == before
    ended = loop.time()
    premature = _acked_while(writers, stalled, ended) + [
        f"probe through {b.name}" for b, p in zip(live, probes, strict=True)
        if p.done() and p.exception() is None]
    assert not premature, f"acknowledged while {victim} was stopped: {premature}"
    if past_lease:
        await cluster.signal(victim, signal.SIGKILL)
        await cluster.up()
    else:
        await cluster.signal(victim, signal.SIGCONT)
    resumed = await _wait_resumed(writers, ended, 2 * LEASE_S)
    outcomes = await asyncio.gather(*probes, return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, BaseException) and not isinstance(outcome, GazetteError):
            raise outcome
    return Stall(victim, rerouted, resumed, list(outcomes))


async def test_stalled_member_blocks_appends_until_it_resumes_or_is_replaced(
        tmp_path: Path) -> None:
    """With replication 3, no append is acknowledged unless all three replicas took it.

    A SIGSTOPped member cannot acknowledge anything, so an append that begins
    while it is stopped must block or fail until it is resumed or replaced:
    through a stalled replica the primary cannot collect its acknowledgements,
    through a stalled primary nothing is committed at all, and once the lease
    of the stopped broker expires the journal is routed to two brokers, fewer
    than its replication. Every acknowledged append names a three-member route.

    The stalls: a replica for a third of the lease TTL, resumed with SIGCONT;
    then the primary and then a replica, each past its lease, until re-routed,
    ended by SIGKILL and a restart.
    """
    journal = "stall/replicated"
    rng = random.Random()
    async with local_cluster(tmp_path / "stack") as cluster:
        await create_journal(cluster, journal, replication=3)
        stop = asyncio.Event()
        writers = [Writer(i, cluster.endpoints, journal, STALL_ATTEMPT_TIMEOUT_S,
                          random.Random(rng.random())) for i in range(3)]
        tasks = [asyncio.create_task(w.run(stop)) for w in writers]
        stalls = []
        try:
            await _warm_up(writers)
            for n, (role, past_lease) in enumerate(STALLS):
                route = await _route(cluster, journal, cluster.stack.brokers[0].name)
                primary = route.members[route.primary]
                victim = primary if role == "primary" else next(
                    m for m in route.members if m != primary)
                stalls.append(await _stall(cluster, journal, writers, cluster.name_of(victim),
                                           past_lease, probe_base=100 * (n + 1)))
        finally:
            stop.set()
            await asyncio.gather(*tasks)
        readback = await read_back(cluster.endpoints, journal)

    acks = [a for w in writers for a in w.acks]
    probes = [p for s in stalls for p in s.probes if isinstance(p, Ack)]
    print(f"{len(acks)} acknowledged; stalls {stalls}")
    assert {a.route_members for a in acks + probes} == {3}
    check_acknowledged(readback, acks + probes)
    _check_writer_order(readback, writers)


# -- a rolling restart ---------------------------------------------------------------


def _longest_pause(writer: Writer, since: float, until: float) -> float:
    """The longest time in [since, until] without an acknowledgement of `writer`."""
    times = [since, *(a.acked for a in writer.acks if since < a.acked < until), until]
    return max(b - a for a, b in itertools.pairwise(times))


async def test_rolling_restart_with_sigterm_loses_nothing(tmp_path: Path) -> None:
    """Each broker in turn is stopped with SIGTERM and started again while a writer appends.

    A stopping broker persists its spools before it leaves, so after all three
    have restarted (and no broker holds the original spools any more) every
    acknowledged record is still there; appends pause only while a broker is
    away, for a few seconds each time.
    """
    journal = "rolling/replicated"
    async with local_cluster(tmp_path / "stack") as cluster:
        await create_journal(cluster, journal, replication=3)
        stop = asyncio.Event()
        writer = Writer(0, cluster.endpoints, journal, ATTEMPT_TIMEOUT_S, random.Random())
        task = asyncio.create_task(writer.run(stop))
        loop = asyncio.get_running_loop()
        pauses = []
        try:
            await _warm_up([writer])
            for broker in cluster.stack.brokers:
                await asyncio.sleep(ROLLING_GAP_S)
                at = loop.time()
                await cluster.signal(broker.name, signal.SIGTERM)
                stopped = loop.time() - at
                await cluster.up()
                back = loop.time()
                await _wait_resumed([writer], back, 2 * LEASE_S)
                await asyncio.sleep(ROLLING_GAP_S)
                pauses.append((broker.name, round(stopped, 1),
                               round(_longest_pause(writer, at, loop.time()), 2)))
        finally:
            stop.set()
            await task
        readback = await read_back(cluster.endpoints, journal)

    print(f"{len(writer.acks)} acknowledged; (broker, seconds to exit, longest pause): {pauses}")
    check_acknowledged(readback, writer.acks)
    _check_writer_order(readback, [writer])
    assert all(pause <= ROLLING_PAUSE_S for _, _, pause in pauses), pauses
