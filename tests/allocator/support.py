"""An in-memory allocation keyspace for planner scenarios.

It holds members, items and assignments as KeyValues with revisions and
leases, applies planned changes the way an etcd transaction would (checking
every compare first), and can play the primaries' part of writing each
journal's Route into its assignments, so a scenario can run the planner
round after round until nothing is left to do.
"""

from __future__ import annotations

from collections.abc import Iterable

from aetcd import rpc

from gazette_core.allocator.changes import Add, Change, Move, Remove
from gazette_core.allocator.consistency import route_of
from gazette_core.allocator.keys import AllocState, MemberId
from gazette_core.allocator.planner import Planner
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.keyspace.keyspace import KeyValue

R = "/r"
Layout = dict[str, list[tuple[str, str, int]]]


def replication(spec: object) -> int:
    assert isinstance(spec, pb.JournalSpec)
    return spec.replication


class Cluster:
    """Keys under R with etcd-like revisions; leases are the members' create revisions."""

    def __init__(self) -> None:
        self.kvs: dict[str, KeyValue] = {}
        self.revision = 1

    def _put(self, key: str, raw: bytes, decoded: object, lease: int = 0) -> KeyValue:
        self.revision += 1
        old = self.kvs.get(key)
        create = old.create_revision if old else self.revision
        version = old.version + 1 if old else 1
        kv = KeyValue(key, raw, decoded, create, self.revision, version, lease)
        self.kvs[key] = kv
        return kv

    def member(self, zone: str, suffix: str, limit: int = 10, exiting: bool = False) -> None:
        spec = pb.BrokerSpec(
            process_spec=pb.ProcessSpec(id=pb.ProcessSpec.ID(zone=zone, suffix=suffix)),
            journal_limit=limit,
            exiting=exiting,
        )
        key = f"{R}/members/{zone}#{suffix}"
        old = self.kvs.get(key)
        lease = old.lease if old else self.revision + 1
        self._put(key, spec.SerializeToString(), spec, lease)

    def leave(self, zone: str, suffix: str) -> None:
        """The member's lease ends: its key and every assignment under the lease vanish."""
        lease = self.kvs[f"{R}/members/{zone}#{suffix}"].lease
        self.revision += 1
        self.kvs = {k: kv for k, kv in self.kvs.items() if kv.lease != lease}

    def item(self, name: str, replication: int = 1) -> None:
        spec = pb.JournalSpec(name=name, replication=replication)
        self._put(f"{R}/items/{name}", spec.SerializeToString(), spec)

    def delete_item(self, name: str) -> None:
        self.revision += 1
        del self.kvs[f"{R}/items/{name}"]

    def assign(self, name: str, zone: str, suffix: str, slot: int) -> None:
        lease = self.kvs[f"{R}/members/{zone}#{suffix}"].lease
        self._put(f"{R}/assign/{name}#{zone}#{suffix}#{slot}", b"", b"", lease)

    def state(self) -> AllocState:
        return AllocState(R, list(self.kvs.values()), self.revision)

    def apply(self, changes: Iterable[Change]) -> None:
        """Apply changes one by one, each as a transaction whose compares must hold."""
        for change in changes:
            for cmp in change.compares():
                assert self._holds(cmp), f"compare failed for {change}"
            if isinstance(change, Add):
                self._put(change.key, b"", b"", change.lease)
            elif isinstance(change, Remove):
                self.revision += 1
                del self.kvs[change.key]
            elif isinstance(change, Move):
                self.revision += 1
                del self.kvs[change.key]
                self._put(change.new_key, change.value, change.value, change.lease)

    def _holds(self, cmp: rpc.Compare) -> bool:
        kv = self.kvs.get(cmp.key.decode())
        if cmp.target == rpc.Compare.MOD:
            return (kv.mod_revision if kv else 0) == cmp.mod_revision
        assert cmp.target == rpc.Compare.CREATE
        return (kv.create_revision if kv else 0) == cmp.create_revision

    def sync_routes(self) -> None:
        """What each primary does: write the item's current Route into its assignments."""
        state = self.state()
        for entries in state.assignments.values():
            if not any(a.slot == 0 for a in entries):
                continue
            value = route_of(entries).SerializeToString()
            for a in entries:
                if a.kv.raw != value:
                    self._put(a.kv.key, value, value, a.kv.lease)

    def layout(self) -> Layout:
        """Per item: (zone, suffix, slot) of its assignments in key order."""
        return {
            item: [(a.member[0], a.member[1], a.slot) for a in entries]
            for item, entries in sorted(self.state().assignments.items())
        }

    def holders(self) -> dict[str, set[MemberId]]:
        return {item: {(z, s) for z, s, _ in entries} for item, entries in self.layout().items()}

    def converge(self, planner: Planner, rounds: int = 20) -> int:
        """Plan, apply and sync routes until a round plans nothing; returns rounds that did."""
        for n in range(rounds):
            changes = planner.plan(self.state())
            if not changes:
                return n
            self.apply(changes)
            self.sync_routes()
        raise AssertionError(f"no convergence in {rounds} rounds")


def moved(before: dict[str, set[MemberId]], after: dict[str, set[MemberId]]) -> int:
    """Assignments on members that did not hold the item before."""
    return sum(len(members - before.get(item, set())) for item, members in after.items())


def loads(cluster: Cluster) -> dict[str, int]:
    """Assignments per member suffix."""
    out: dict[str, int] = {}
    for entries in cluster.layout().values():
        for _, suffix, _ in entries:
            out[suffix] = out.get(suffix, 0) + 1
    return dict(sorted(out.items()))
