"""Suspension on a three-broker cluster: the append modes end to end.

See docs/design/append.md#suspension.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.errors import RETRIABLE_STATUSES
from gazette_core.testing.broker import journal_spec
from tests.broker.cluster import Cluster, route_with, settled_route
from tests.broker.support import append, content, read_all

Mode = pb.AppendRequest
Level = pb.JournalSpec.Suspend


async def listed(stub: pb_grpc.JournalStub, journal: str) -> pb.ListResponse.Journal:
    sel = pb.LabelSelector(include=pb.LabelSet(labels=[pb.Label(name="name", value=journal)]))
    async for resp in stub.List(pb.ListRequest(selector=sel)):
        for j in resp.journals:
            return j
    raise AssertionError(f"{journal} is not listed")


async def append_until_ok(stub: pb_grpc.JournalStub, journal: str, data: bytes
                          ) -> pb.AppendResponse:
    """Append, retrying while the allocator catches up after a resumption (as clients do)."""
    for _ in range(400):
        resp = await append(stub, journal, data)
        if resp.status not in RETRIABLE_STATUSES:
            return resp
        await asyncio.sleep(0.05)
    raise AssertionError(f"append to {journal} never settled: {resp}")


async def created(cluster: Cluster, journal: str) -> pb_grpc.JournalStub:
    """Create a journal with three replicas; the stub of its primary once all know it."""
    resp = await cluster.stubs[0].Apply(pb.ApplyRequest(changes=[
        pb.ApplyRequest.Change(upsert=journal_spec(journal, replication=3))]))
    assert resp.status == pb.OK
    route = await settled_route(cluster, journal, 3)
    return cluster.stub_of(route.members[route.primary])


async def test_suspend_now_keeps_one_replica_and_an_append_resumes(cluster: Cluster) -> None:
    stub = await created(cluster, "sus/now")
    assert (await append(stub, "sus/now", b"hello")).status == pb.OK

    resp = await append(stub, "sus/now", suspend=Mode.SUSPEND_NOW)

    assert resp.status == pb.SUSPENDED
    assert (await listed(stub, "sus/now")).spec.suspend == Level(level=Level.PARTIAL, offset=5)
    route = await route_with(cluster.stubs[0], "sus/now", 1)
    primary = cluster.stub_of(route.members[route.primary])
    assert await content(primary, "sus/now") == b"hello"
    # The pulse's mode and reset-head's mode neither resume nor change the level.
    assert (await append(primary, "sus/now", suspend=Mode.SUSPEND_NO_RESUME)).status == (
        pb.SUSPENDED)
    kept = await append(primary, "sus/now", offset=5, suspend=Mode.SUSPEND_KEEP)
    assert kept.status == pb.OK
    assert (await listed(stub, "sus/now")).spec.suspend.level == Level.PARTIAL

    resumed = await append_until_ok(cluster.stubs[0], "sus/now", b" world")

    assert resumed.status == pb.OK
    assert resumed.commit.begin == 5
    assert (await listed(stub, "sus/now")).spec.suspend == Level(level=Level.NONE, offset=5)
    await settled_route(cluster, "sus/now", 3)
    assert await content(cluster.stubs[1], "sus/now") == b"hello world"


async def test_if_flushed_leaves_a_recently_written_journal_active(cluster: Cluster) -> None:
    stub = await created(cluster, "sus/busy")
    assert (await append(stub, "sus/busy", b"x")).status == pb.OK

    resp = await append(stub, "sus/busy", suspend=Mode.SUSPEND_IF_FLUSHED)

    assert resp.status == pb.OK
    journal = await listed(stub, "sus/busy")
    assert not journal.spec.HasField("suspend")
    assert len(journal.route.members) == 3


async def test_content_with_a_suspending_mode_is_not_allowed(cluster: Cluster) -> None:
    stub = await created(cluster, "sus/content")

    resp = await append(stub, "sus/content", b"x", suspend=Mode.SUSPEND_NOW)

    assert resp.status == pb.NOT_ALLOWED
    assert not (await listed(stub, "sus/content")).spec.HasField("suspend")


async def test_an_empty_journal_suspends_fully_and_an_append_resumes_it(
        cluster: Cluster) -> None:
    stub = await created(cluster, "sus/empty")

    resp = await append(stub, "sus/empty", suspend=Mode.SUSPEND_IF_FLUSHED)

    assert resp.status == pb.SUSPENDED
    journal = await listed(stub, "sus/empty")
    assert journal.spec.suspend == Level(level=Level.FULL, offset=0)
    assert await _unassigned(cluster.stubs[0], "sus/empty")
    assert [r.status for r in await read_all(cluster.stubs[2], pb.ReadRequest(
        journal="sus/empty"))] == [pb.SUSPENDED]

    resumed = await append_until_ok(cluster.stubs[1], "sus/empty", b"abc")

    assert (resumed.status, resumed.commit.begin) == (pb.OK, 0)
    assert (await listed(stub, "sus/empty")).spec.suspend.level == Level.NONE


async def test_offsets_continue_past_a_full_suspension(cluster: Cluster, tmp_path: Path
                                                       ) -> None:
    stub = await created(cluster, "sus/pruned")
    assert (await append(stub, "sus/pruned", b"12345")).status == pb.OK
    assert (await append(stub, "sus/pruned", suspend=Mode.SUSPEND_NOW)).status == pb.SUSPENDED
    route = await route_with(cluster.stubs[0], "sus/pruned", 1)
    primary = cluster.stub_of(route.members[route.primary])
    await _fragments(primary, "sus/pruned", persisted=1)
    # Retention pruned every fragment: the index is empty, the journal can go FULL.
    shutil.rmtree(tmp_path / "sus" / "pruned")
    await _fragments(primary, "sus/pruned", persisted=0)

    resp = await append(primary, "sus/pruned", suspend=Mode.SUSPEND_IF_FLUSHED)

    assert resp.status == pb.SUSPENDED
    assert (await listed(stub, "sus/pruned")).spec.suspend == Level(level=Level.FULL, offset=5)
    resumed = await append_until_ok(cluster.stubs[2], "sus/pruned", b"678")
    assert (resumed.status, resumed.commit.begin, resumed.commit.end) == (pb.OK, 5, 8)


async def _unassigned(stub: pb_grpc.JournalStub, journal: str) -> bool:
    for _ in range(200):
        if not (await listed(stub, journal)).route.members:
            return True
        await asyncio.sleep(0.05)
    return False


async def _fragments(stub: pb_grpc.JournalStub, journal: str, persisted: int) -> None:
    """Wait until exactly `persisted` fragments are listed, all persisted."""
    for _ in range(200):
        resp = await stub.ListFragments(pb.FragmentsRequest(journal=journal))
        frags = [f for f in resp.fragments if f.spec.end > f.spec.begin]
        if len(frags) == persisted and all(f.spec.mod_time for f in frags):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{journal} never had {persisted} persisted fragments: {resp}")
