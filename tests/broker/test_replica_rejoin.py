"""A replica joining a route mid-stream: it never serves reads that end short of the head.

Three in-process brokers; a journal of replication 2 grows to 3, so a fresh
broker joins its route with an empty spool while the content so far lives
only in the other replicas' spools (nothing is persisted yet).
"""

from __future__ import annotations

import asyncio
import contextlib

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.testing.broker import journal_spec
from tests.broker.cluster import Cluster, route_with, settled_route
from tests.broker.support import append, read_all

# The requirement: the route-change pulse syncs a new replica within this.
SYNC_LIMIT_S = 2.0
# Store listings are rare, so what a replica serves comes from its own spool.
REFRESH_S = 60.0


async def _grow(stub: pb_grpc.JournalStub, journal: str) -> None:
    """Raise the journal's replication to 3 (whatever its revision)."""
    resp = await stub.Apply(pb.ApplyRequest(changes=[pb.ApplyRequest.Change(
        upsert=journal_spec(journal, replication=3, refresh_s=REFRESH_S),
        expect_mod_revision=-1)]))
    assert resp.status == pb.OK, resp


def _joined(route: pb.Route, before: pb.Route) -> pb.ProcessSpec.ID:
    return next(m for m in route.members if m not in list(before.members))


def _served_through(out: list[pb.ReadResponse]) -> int:
    """Where a non-blocking read from offset 0 stopped: the end of what it served."""
    assert out[-1].status == pb.OFFSET_NOT_YET_AVAILABLE, out[-1]
    served = sum(len(r.content) for r in out)
    assert out[-1].offset == served, (out[-1].offset, served)
    return served


async def test_joining_replica_learns_the_write_head_from_the_route_change_pulse(
        cluster: Cluster) -> None:
    journal = "rejoin/idle"
    await cluster.stubs[0].Apply(pb.ApplyRequest(changes=[pb.ApplyRequest.Change(
        upsert=journal_spec(journal, replication=2, refresh_s=REFRESH_S))]))
    before = await settled_route(cluster, journal, 2)
    resp = await append(cluster.stubs[0], journal, b"x" * 1000)
    assert resp.status == pb.OK
    await _grow(cluster.stubs[0], journal)
    joined = _joined(await settled_route(cluster, journal, 3), before)

    # No append follows: only the primary's pulse on the route change can sync it.
    stub = cluster.stub_of(joined)
    await _sync_limit_write_head(stub, journal, 1000)
    # Its reads (proxying what it lacks) reach the head.
    assert _served_through(await read_all(stub, pb.ReadRequest(journal=journal))) == 1000


async def test_joining_replica_under_load_never_serves_reads_short_of_acknowledged(
        cluster: Cluster) -> None:
    journal = "rejoin/busy"
    await cluster.stubs[0].Apply(pb.ApplyRequest(changes=[pb.ApplyRequest.Change(
        upsert=journal_spec(journal, replication=2, refresh_s=REFRESH_S))]))
    before = await settled_route(cluster, journal, 2)
    primary = cluster.stub_of(before.members[before.primary])
    acked = 0
    stop = asyncio.Event()

    async def writer() -> None:
        nonlocal acked
        n = 0
        while not stop.is_set():
            resp = await append(primary, journal, b"record %06d\n" % n)
            if resp.status == pb.OK:
                acked = max(acked, resp.commit.end)
            n += 1

    task = asyncio.create_task(writer())
    try:
        while acked < 2000:
            await asyncio.sleep(0.01)
        await _grow(cluster.stubs[0], journal)
        joined = _joined(await route_with(primary, journal, 3), before)
        stub: pb_grpc.JournalStub = cluster.stub_of(joined)
        short = []
        for _ in range(30):
            floor = acked  # acknowledged before the read began
            out = await read_all(stub, pb.ReadRequest(journal=journal))
            served = _served_through(out)
            if served < floor:
                short.append((served, floor, out[0].header.process_id.suffix))
            await asyncio.sleep(0.05)
        assert not short, f"reads ended below what was acknowledged before them: {short}"
    finally:
        stop.set()
        with contextlib.suppress(Exception):
            await task


async def _sync_limit_write_head(stub: pb_grpc.JournalStub, journal: str, head: int) -> None:
    """Wait (up to SYNC_LIMIT_S) until a replica's own reads report `head` as write head."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SYNC_LIMIT_S
    while True:
        out = await read_all(stub, pb.ReadRequest(journal=journal, offset=head,
                                                  do_not_proxy=True))
        if out[-1].write_head == head:
            return
        assert loop.time() < deadline, f"not synced within {SYNC_LIMIT_S}s: {out[-1]}"
        await asyncio.sleep(0.05)


async def test_a_stuck_pulse_does_not_delay_another_journals_route_change_pulse(
        cluster: Cluster) -> None:
    names = [f"rejoin/many-{i}" for i in range(4)]
    await cluster.stubs[0].Apply(pb.ApplyRequest(changes=[pb.ApplyRequest.Change(
        upsert=journal_spec(n, replication=2, refresh_s=REFRESH_S)) for n in names]))
    routes = {n: await settled_route(cluster, n, 2) for n in names}
    ids = [b.process_id for b in cluster.brokers]
    # Four journals over three brokers: some broker is the primary of two.
    by_primary: dict[int, list[str]] = {}
    for n, r in routes.items():
        by_primary.setdefault(ids.index(r.members[r.primary]), []).append(n)
    primary, (stuck, grown) = next((p, js[:2]) for p, js in by_primary.items() if len(js) > 1)
    broker = cluster.brokers[primary]
    assert (await append(cluster.stubs[primary], grown, b"y" * 100)).status == pb.OK

    lock = broker.resolver.replicas[stuck].pipeline_lock
    await lock.acquire()  # an append that never ends holds the stuck journal
    try:
        broker.pulse.route_changed(stuck)
        await asyncio.sleep(0.2)  # its pulse is under way, waiting for the pipeline
        await _grow(cluster.stubs[0], grown)
        joined = _joined(await settled_route(cluster, grown, 3), routes[grown])
        await _sync_limit_write_head(cluster.stub_of(joined), grown, 100)
    finally:
        lock.release()
