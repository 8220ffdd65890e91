"""Three in-process brokers on one etcd: replication, proxying and fail-over."""

from __future__ import annotations

import asyncio

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.testing.broker import journal_spec
from tests.broker.cluster import Cluster, route_with, settled_route
from tests.broker.support import append, content, read_all


async def test_replicated_append_is_readable_at_every_replica(cluster: Cluster) -> None:
    stub = cluster.stubs[0]
    await stub.Apply(pb.ApplyRequest(changes=[pb.ApplyRequest.Change(
        upsert=journal_spec("rep/three", replication=3))]))
    route = await settled_route(cluster, "rep/three", 3)
    primary = route.members[route.primary]
    for i in range(3):  # through every broker: two of them proxy to the primary
        resp = await append(cluster.stubs[i], "rep/three", f"from {i}\n".encode())
        assert (resp.status, resp.header.process_id) == (pb.OK, primary)
    expected = b"from 0\nfrom 1\nfrom 2\n"
    for member in route.members:  # each replica serves reads itself
        assert await content(cluster.stub_of(member), "rep/three", member) == expected


async def test_non_member_proxies_reads_and_fragment_listing(cluster: Cluster) -> None:
    stub = cluster.stubs[0]
    await stub.Apply(pb.ApplyRequest(changes=[pb.ApplyRequest.Change(
        upsert=journal_spec("rep/one", replication=1))]))
    route = await settled_route(cluster, "rep/one", 1)
    outsider = next(i for i, b in enumerate(cluster.brokers)
                    if b.process_id != route.members[0])
    assert (await append(cluster.stubs[outsider], "rep/one", b"hello\n")).status == pb.OK
    assert await content(cluster.stubs[outsider], "rep/one") == b"hello\n"
    frags = await cluster.stubs[outsider].ListFragments(pb.FragmentsRequest(journal="rep/one"))
    assert (frags.status, [(f.spec.begin, f.spec.end) for f in frags.fragments]) == (
        pb.OK, [(0, 6)])
    refused = await read_all(cluster.stubs[outsider], pb.ReadRequest(
        journal="rep/one", do_not_proxy=True))
    assert refused[0].status == pb.NOT_JOURNAL_BROKER


async def content_through(stub: pb_grpc.JournalStub, journal: str, end: int) -> bytes:
    """Content [0, end), blocking until the broker's index covers all of it."""
    req = pb.ReadRequest(journal=journal, block=True, end_offset=end)
    out = await asyncio.wait_for(read_all(stub, req), 30)
    return b"".join(r.content for r in out)


async def test_primary_leaving_fails_over_without_losing_content(cluster: Cluster) -> None:
    stub = cluster.stubs[0]
    await stub.Apply(pb.ApplyRequest(changes=[pb.ApplyRequest.Change(
        upsert=journal_spec("rep/fail", replication=2))]))
    route = await settled_route(cluster, "rep/fail", 2)
    for n in range(5):
        assert (await append(stub, "rep/fail", f"before {n}\n".encode())).status == pb.OK
    primary = route.members[route.primary]
    index = [b.process_id for b in cluster.brokers].index(primary)
    await cluster.brokers[index].stop(drain_timeout=0)  # gone at once: lease revoked
    survivor = cluster.stubs[(index + 1) % 3]
    new_route = await route_with(survivor, "rep/fail", 2)
    assert primary not in list(new_route.members)
    resp = await append(survivor, "rep/fail", b"after\n")
    assert (resp.status, resp.commit.begin) == (pb.OK, 45)
    expected = b"".join(f"before {n}\n".encode() for n in range(5)) + b"after\n"
    for member in new_route.members:
        # The new member learns [9, 45) from the store, once the fragment the old
        # primary persisted on its way out is listed.
        got = await content_through(cluster.stub_of(member), "rep/fail", len(expected))
        assert got == expected



async def test_sole_replica_leaving_hands_over_at_its_persisted_end(cluster: Cluster) -> None:
    """Replication 1: the successor starts with an empty spool and must continue
    after what the leaving primary persisted, not over it at offset 0."""
    await cluster.stubs[0].Apply(pb.ApplyRequest(changes=[pb.ApplyRequest.Change(
        upsert=journal_spec("rep/sole", replication=1))]))
    route = await settled_route(cluster, "rep/sole", 1)
    index = [b.process_id for b in cluster.brokers].index(route.members[0])
    resp = await append(cluster.stubs[index], "rep/sole", b"before\n")
    assert (resp.status, resp.commit.end) == (pb.OK, 7)
    await cluster.brokers[index].stop(drain_timeout=0)  # rolls and persists, then leaves
    survivor = cluster.stubs[(index + 1) % 3]
    new_route = await route_with(survivor, "rep/sole", 1)
    assert new_route.members[0] != route.members[0]
    resp = await append(survivor, "rep/sole", b"after\n")
    assert (resp.status, resp.commit.begin, resp.commit.end) == (pb.OK, 7, 13)
    assert await content_through(survivor, "rep/sole", 13) == b"before\nafter\n"


async def test_concurrent_appends_commit_whole_disjoint_and_identically_everywhere(
        cluster: Cluster) -> None:
    """Many appends in flight at once (their acknowledgements are pipelined)."""
    await cluster.stubs[0].Apply(pb.ApplyRequest(changes=[pb.ApplyRequest.Change(
        upsert=journal_spec("rep/concurrent", replication=3))]))
    route = await settled_route(cluster, "rep/concurrent", 3)
    primary = cluster.stub_of(route.members[route.primary])

    async def writer(w: int) -> list[tuple[int, int, bytes]]:
        out = []
        for n in range(10):
            record = f"writer {w} record {n}\n".encode() * (w + 1)
            resp = await append(primary, "rep/concurrent", record)
            assert resp.status == pb.OK, resp
            out.append((resp.commit.begin, resp.commit.end, record))
        return out

    commits = sorted(c for batch in await asyncio.gather(*(writer(w) for w in range(8)))
                     for c in batch)
    assert [begin for begin, _, _ in commits] == [0] + [end for _, end, _ in commits[:-1]]
    expected = b"".join(record for _, _, record in commits)
    assert all(end - begin == len(record) for begin, end, record in commits)
    for member in route.members:
        assert await content_through(cluster.stub_of(member), "rep/concurrent",
                                     len(expected)) == expected
