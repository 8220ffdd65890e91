"""The Allocator against a real etcd: members announced under leases, items put and deleted."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import aetcd
import pytest_asyncio
from aetcd import rpc

from gazette_core.allocator.allocator import MAX_TXN_OPS, Allocator, batches
from gazette_core.allocator.announce import Announcement
from gazette_core.allocator.changes import Add, Change
from gazette_core.allocator.consistency import route_of
from gazette_core.allocator.keys import AllocState, item_key, member_key
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.keyspace import etcd_util as eu
from gazette_core.keyspace.keyspace import KeySpace

R = "/alloc"


def decode(key: str, value: bytes) -> object:
    """Items as JournalSpecs, members as BrokerSpecs, assignments raw."""
    if key.startswith(f"{R}/items/"):
        return pb.JournalSpec.FromString(value)
    if key.startswith(f"{R}/members/"):
        return pb.BrokerSpec.FromString(value)
    return value


def replication(spec: object) -> int:
    assert isinstance(spec, pb.JournalSpec)
    return spec.replication


@pytest_asyncio.fixture(loop_scope="session")
async def keyspace(etcd: aetcd.Client) -> AsyncIterator[KeySpace]:
    async with KeySpace(etcd, R, decode) as ks:
        yield ks


class Cluster:
    """Members announced under leases, each running an Allocator on a shared KeySpace."""

    def __init__(self, client: aetcd.Client, keyspace: KeySpace) -> None:
        self.client = client
        self.keyspace = keyspace
        self.members: dict[str, tuple[Announcement, Allocator]] = {}

    async def join(self, suffix: str, limit: int = 100, zone: str = "z") -> Announcement:
        spec = pb.BrokerSpec(
            process_spec=pb.ProcessSpec(id=pb.ProcessSpec.ID(zone=zone, suffix=suffix)),
            journal_limit=limit,
        )
        key = member_key(R, zone, suffix)
        ann = Announcement(self.client, key, spec.SerializeToString(), ttl=30)
        await ann.announce()
        allocator = Allocator(self.client, self.keyspace, R, key, replication)
        allocator.start()
        self.members[suffix] = (ann, allocator)
        return ann

    async def leave(self, suffix: str) -> None:
        ann, allocator = self.members.pop(suffix)
        await allocator.stop()
        await ann.revoke()

    async def close(self) -> None:
        for suffix in list(self.members):
            await self.leave(suffix)

    async def put_item(self, name: str, replication: int = 1) -> None:
        spec = pb.JournalSpec(name=name, replication=replication)
        await eu.txn(self.client, [], [eu.put_op(item_key(R, name), spec.SerializeToString())])

    def assignments(self) -> list[tuple[str, int]]:
        return [(kv.key, kv.lease) for kv in self.keyspace.prefixed(f"{R}/assign/")]

    async def until(self, predicate: Callable[[], bool]) -> None:
        async with asyncio.timeout(10):
            while not predicate():
                await self.keyspace.wait_for_change(self.keyspace.revision)

    def layout(self) -> dict[str, list[tuple[str, int]]]:
        """Per item: (member suffix, slot) of its assignments in key order."""
        state = AllocState.from_keyspace(self.keyspace, R)
        return {item: [(a.member[1], a.slot) for a in entries]
                for item, entries in state.assignments.items()}

    async def sync_routes(self) -> None:
        """Play the primaries: write each journal's current Route into its assignments."""
        state = AllocState.from_keyspace(self.keyspace, R)
        for entries in state.assignments.values():
            if not any(a.slot == 0 for a in entries):
                continue
            value = route_of(entries).SerializeToString()
            stale = [a.kv.key.encode() for a in entries if a.kv.raw != value]
            if stale:
                await eu.txn(
                    self.client,
                    [eu.cmp_mod_revision(a.kv.key, a.kv.mod_revision) for a in entries],
                    [rpc.RequestOp(request_put=rpc.PutRequest(key=key, value=value,
                                                              ignore_lease=True))
                     for key in stale],
                )

    def holders(self) -> dict[str, tuple[set[str], set[int]]]:
        """Per item: the suffixes of its members and its slots."""
        return {item: ({s for s, _ in entries}, {slot for _, slot in entries})
                for item, entries in self.layout().items()}

    async def settle(self, done: Callable[[], bool]) -> None:
        """Sync routes as primaries would until `done()`."""
        async with asyncio.timeout(10):
            while not done():
                seen = self.keyspace.revision
                await self.sync_routes()
                await self.keyspace.wait_for_change(seen)


@pytest_asyncio.fixture(loop_scope="session")
async def cluster(etcd: aetcd.Client, keyspace: KeySpace) -> AsyncIterator[Cluster]:
    c = Cluster(etcd, keyspace)
    try:
        yield c
    finally:
        await c.close()


def test_batches_respect_txn_limits() -> None:
    changes: list[Change] = [Add(f"k{i}", "m", 1, 0) for i in range(200)]
    sizes = [len(b) for b in batches(changes)]
    # Each Add carries two compares; one compare per txn is the leader's guard.
    assert sizes == [63, 63, 63, 11]
    assert [c for b in batches(changes) for c in b] == changes
    assert all(2 * n + 1 <= MAX_TXN_OPS for n in sizes)


async def test_new_item_assigned_to_single_member(cluster: Cluster) -> None:
    a = await cluster.join("member-a")
    await cluster.put_item("j/one")
    await cluster.until(lambda: cluster.assignments() != [])
    assert cluster.assignments() == [(f"{R}/assign/j/one#z#member-a#0", a.lease_id)]
    kv = cluster.keyspace.get(f"{R}/assign/j/one#z#member-a#0")
    assert kv is not None and kv.raw == b""


async def test_replication_two_over_two_members(cluster: Cluster) -> None:
    a = await cluster.join("member-a")
    b = await cluster.join("member-b")
    await cluster.put_item("j/two", replication=2)
    await cluster.until(lambda: len(cluster.assignments()) == 2)
    assert cluster.assignments() == [
        (f"{R}/assign/j/two#z#member-a#0", a.lease_id),
        (f"{R}/assign/j/two#z#member-b#1", b.lease_id),
    ]


async def test_deleted_item_loses_its_assignments(cluster: Cluster) -> None:
    await cluster.join("member-a")
    await cluster.put_item("j/keep")
    await cluster.put_item("j/drop")
    await cluster.until(lambda: len(cluster.assignments()) == 2)
    await eu.txn(cluster.client, [], [eu.delete_op(item_key(R, "j/drop"))])
    await cluster.until(lambda: len(cluster.assignments()) == 1)
    assert [key for key, _ in cluster.assignments()] == [f"{R}/assign/j/keep#z#member-a#0"]


async def test_primary_re_promoted_when_its_member_goes_away(cluster: Cluster) -> None:
    await cluster.join("member-a")
    b = await cluster.join("member-b")
    await cluster.put_item("j/ha", replication=2)
    await cluster.until(lambda: len(cluster.assignments()) == 2)

    # member-a leads and is primary; its lease takes its key and assignment with it.
    await cluster.leave("member-a")
    want = [(f"{R}/assign/j/ha#z#member-b#0", b.lease_id)]
    await cluster.until(lambda: cluster.assignments() == want)
    assert cluster.assignments() == want


async def test_wait_converged_returns_once_a_round_finds_nothing_to_do(
    cluster: Cluster,
) -> None:
    a = await cluster.join("member-a")
    _, allocator = cluster.members["member-a"]
    await cluster.put_item("j/c", replication=1)
    await cluster.until(lambda: cluster.keyspace.get(item_key(R, "j/c")) is not None)
    item = cluster.keyspace.get(item_key(R, "j/c"))
    assert item is not None
    await asyncio.wait_for(allocator.wait_converged(item.mod_revision), 10)
    assert cluster.assignments() == [(f"{R}/assign/j/c#z#member-a#0", a.lease_id)]
    assert allocator.converged_revision > item.mod_revision


async def test_non_leader_plans_nothing(cluster: Cluster) -> None:
    await cluster.join("member-a")
    await cluster.join("member-b")
    await cluster.put_item("j/x")
    await cluster.until(lambda: len(cluster.assignments()) == 1)
    _, follower = cluster.members["member-b"]
    assert follower.plan() == (None, [])


async def test_many_items_assigned_across_batches(cluster: Cluster) -> None:
    a = await cluster.join("member-a", limit=1000)
    # Two txns of 75 puts, so the allocator plans more changes than fit in one txn.
    for half in (range(75), range(75, 150)):
        value = pb.JournalSpec(replication=1).SerializeToString()
        ops = [eu.put_op(item_key(R, f"j/many-{i:03d}"), value) for i in half]
        await eu.txn(cluster.client, [], ops)
    await cluster.until(lambda: len(cluster.assignments()) == 150)
    assert cluster.assignments() == [
        (f"{R}/assign/j/many-{i:03d}#z#member-a#0", a.lease_id) for i in range(150)
    ]


async def test_member_joining_takes_its_share_moving_only_that(cluster: Cluster) -> None:
    await cluster.join("a", zone="east")
    await cluster.join("b", zone="west")
    for i in range(4):
        await cluster.put_item(f"j/{i}", replication=2)
    # Primaries alternate between the members.
    spread = {
        "j/0": [("a", 0), ("b", 1)],
        "j/1": [("a", 1), ("b", 0)],
        "j/2": [("a", 0), ("b", 1)],
        "j/3": [("a", 1), ("b", 0)],
    }
    await cluster.settle(lambda: cluster.layout() == spread)

    # c shares east with a: it takes two of a's replicas (not primaries), and every
    # journal keeps both zones.
    await cluster.join("c", zone="east")
    shared = {
        "j/0": [("a", 0), ("b", 1)],
        "j/1": [("c", 1), ("b", 0)],
        "j/2": [("a", 0), ("b", 1)],
        "j/3": [("c", 1), ("b", 0)],
    }
    await cluster.settle(lambda: cluster.layout() == shared)


async def test_member_leaving_moves_only_its_assignments(cluster: Cluster) -> None:
    await cluster.join("a", zone="east")
    await cluster.join("b", zone="east")
    await cluster.join("c", zone="west")
    d = await cluster.join("d", zone="west")
    for i in range(4):
        await cluster.put_item(f"j/{i}", replication=2)
    await cluster.until(lambda: len(cluster.assignments()) == 8)
    before = cluster.holders()
    assert sum(1 for _, lease in cluster.assignments() if lease == d.lease_id) == 2

    await cluster.leave("d")
    # c is the one member left in west: it takes d's replicas, nothing else moves,
    # and an item whose primary was on d gets a new one.
    want = {item: ({"c" if s == "d" else s for s in members}, {0, 1})
            for item, (members, _) in before.items()}
    await cluster.settle(lambda: cluster.holders() == want)
    assert cluster.holders() == want
