"""Allocator rebalance: 10,000 journals of replication 3 over 10 members in 2 zones.

Runs against a dedicated etcd (its own process and prefix, so no broker is
disturbed). Members are simulated: each is a member key under its own lease,
and one Allocator runs for the leader. Journals are assigned from scratch;
then a member leaves (its lease is revoked, taking its key and assignments
with it) and the time until the allocator has converged again is measured.

`python -m bench.allocator_bench` runs it alone.
"""

from __future__ import annotations

import asyncio
import json
import time

import aetcd

from gazette_core.allocator.allocator import Allocator
from gazette_core.allocator.announce import Announcement
from gazette_core.allocator.broker_decode import broker_decoder
from gazette_core.allocator.keys import AllocState, item_key, member_key
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.keyspace import etcd_util
from gazette_core.keyspace.keyspace import KeySpace
from gazette_core.testing.broker import journal_spec
from gazette_core.testing.etcd import EtcdServer

ROOT = "/bench/allocator"
JOURNALS = 10_000
REPLICATION = 3
MEMBERS = 10
ZONES = ("zone-a", "zone-b")
MEMBER_LIMIT = 5000
LEASE_TTL = 60
PUTS_PER_TXN = 128


def replication(spec: object) -> int:
    return spec.replication if isinstance(spec, pb.JournalSpec) else 0


def members() -> list[tuple[str, str]]:
    """(zone, suffix) of each simulated member, half in each zone."""
    return [(ZONES[k * len(ZONES) // MEMBERS], f"member-{k:02d}") for k in range(MEMBERS)]


async def announce(client: aetcd.Client, zone: str, suffix: str) -> Announcement:
    spec = pb.BrokerSpec(
        process_spec=pb.ProcessSpec(id=pb.ProcessSpec.ID(zone=zone, suffix=suffix),
                                    endpoint=f"http://{suffix}:8080"),
        journal_limit=MEMBER_LIMIT,
    )
    ann = Announcement(client, member_key(ROOT, zone, suffix), spec.SerializeToString(),
                       ttl=LEASE_TTL)
    await ann.announce()
    return ann


async def put_journals(client: aetcd.Client) -> None:
    names = [f"bench/journal-{i:05d}" for i in range(JOURNALS)]
    for start in range(0, len(names), PUTS_PER_TXN):
        ops = [etcd_util.put_op(item_key(ROOT, name),
                                journal_spec(name, replication=REPLICATION).SerializeToString())
               for name in names[start:start + PUTS_PER_TXN]]
        await etcd_util.txn(client, [], ops)


def holders(keyspace: KeySpace) -> dict[str, set[tuple[str, str]]]:
    state = AllocState.from_keyspace(keyspace, ROOT)
    return {item: {a.member for a in entries} for item, entries in state.assignments.items()}


async def measure() -> dict[str, float]:
    with EtcdServer() as server:
        client = await etcd_util.connect(server.endpoint)
        keyspace = KeySpace(client, ROOT, broker_decoder(ROOT))
        anns = [await announce(client, zone, suffix) for zone, suffix in members()]
        await put_journals(client)
        await keyspace.load()
        keyspace.start()
        allocator = Allocator(client, keyspace, ROOT, anns[0].key, replication)
        started = time.monotonic()
        allocator.start()
        await allocator.wait_converged(keyspace.revision)
        initial_s = time.monotonic() - started

        before = holders(keyspace)
        leaving = members()[-1]
        min_moves = sum(1 for held in before.values() if leaving in held)
        started = time.monotonic()
        await anns[-1].revoke()
        # Its key and assignments vanish in the revoke's revision: wait until that is seen.
        while keyspace.get(anns[-1].key) is not None:
            await keyspace.wait_for_change(keyspace.revision)
        await allocator.wait_converged(keyspace.revision)
        rebalance_s = time.monotonic() - started
        after = holders(keyspace)
        moved = sum(len(held - before.get(item, set())) for item, held in after.items())

        await allocator.stop()
        await keyspace.stop()
        for ann in anns[:-1]:
            await ann.revoke()
        await client.close()
    return {
        "allocator_initial_s": round(initial_s, 3),
        "allocator_rebalance_s": round(rebalance_s, 3),
        "allocator_moved_assignments": moved,
        "allocator_min_moves": min_moves,
    }


def run() -> dict[str, float]:
    """The allocator figures of `make bench`."""
    return asyncio.run(measure())


if __name__ == "__main__":
    print(json.dumps(run(), sort_keys=True))
