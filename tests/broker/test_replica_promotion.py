"""A replica promoted to primary persists the rolled spools it was holding back.

A replica holds a rolled spool back (for REPLICA_PERSIST_DELAY_S) because its
primary persists the same fragment. When that primary died before it did,
the replica that takes over must persist the fragment at once: a later loss
of this broker too would otherwise lose acknowledged content.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from gazette_core.broker.fragment.persister import Persister
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.replica import REPLICA_PERSIST_DELAY_S, Replica
from gazette_core.keyspace.keyspace import KeyValue
from gazette_core.testing.broker import journal_spec

JOURNAL = "promotion/held-back"


def replica_in(root: Path, persister: Persister) -> Replica:
    spec = journal_spec(JOURNAL, replication=2)
    item = KeyValue(f"/root/items/{JOURNAL}", spec.SerializeToString(), spec, 1, 1, 1, 0)
    return Replica(JOURNAL, item, persister, str(root))


def commit(replica: Replica, content: bytes) -> None:
    """What a primary's Replicate stream does: stream content, then propose it."""
    replica.apply(pb.ReplicateRequest(content=content, content_delta=0))
    proposal = replica.spool.proposal_with_delta()
    resp = replica.apply(pb.ReplicateRequest(proposal=proposal,
                                             registers=replica.spool.registers,
                                             acknowledge=True))
    assert resp.status == pb.OK, resp


async def persisted(root: Path, limit: float) -> list[str]:
    deadline = asyncio.get_running_loop().time() + limit
    while True:
        names = sorted(p.name for p in root.joinpath(JOURNAL).glob("*"))
        if names or asyncio.get_running_loop().time() >= deadline:
            return names
        await asyncio.sleep(0.05)


async def test_a_promoted_replica_persists_what_it_held_back(tmp_path: Path) -> None:
    persister = Persister(str(tmp_path))
    persister.start()
    replica = replica_in(tmp_path, persister)
    try:
        commit(replica, b"acknowledged by both replicas\n")
        replica.roll(replica.spool.fragment.end, pb.NONE)  # the primary rolled it
        assert await persisted(tmp_path, 1.0) == []  # held back: the primary persists it
        assert REPLICA_PERSIST_DELAY_S > 10

        replica.become_primary()  # the primary died before persisting it
        names = await persisted(tmp_path, 10.0)
        assert len(names) == 1 and names[0].startswith("0000000000000000-000000000000001e-"), names
    finally:
        await replica.stop()
        await persister.stop(timeout=5)
