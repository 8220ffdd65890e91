"""Resolution of a shard ID to its spec, route and local replica; and the local replicas.

Every Shard RPC and every routed application request starts here
(docs/design/consumer.md#the-shard-api). The resolver reads the consumer's KeySpace mirror of Etcd,
builds the shard's Route from assignment keys and keeps one `ShardReplica`
per shard assigned to this process, in any slot: slot 0 serves as primary,
the others as hot standbys.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from gazette_core.allocator.keys import item_key, parse_assign_key
from gazette_core.allocator.routes import check_proxy_header, route_of
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.replica import ShardReplica, slot_of
from gazette_core.keyspace.keyspace import KeySpace, KeyValue

log = logging.getLogger(__name__)

NewReplica = Callable[[KeyValue, KeyValue], ShardReplica]


@dataclass
class ShardResolution:
    """What a consumer process knows about a shard at one KeySpace revision."""

    status: cpb.Status.ValueType
    header: pb.Header
    shard: str
    spec: cpb.ShardSpec | None = None
    item: KeyValue | None = None
    assignments: list[KeyValue] = field(default_factory=list)
    # This process's replica, when it holds the shard's primary assignment.
    replica: ShardReplica | None = None

    @property
    def route(self) -> pb.Route:
        return self.header.route

    @property
    def primary_endpoint(self) -> str:
        """The advertised endpoint of the shard's primary ('' when it has none)."""
        route = self.route
        return route.endpoints[route.primary] if route.primary >= 0 else ""


class ShardResolver:
    """Maps shard IDs to resolutions and manages this process's replicas."""

    def __init__(self, keyspace: KeySpace, root: str, process_id: pb.ProcessSpec.ID,
                 new_replica: NewReplica) -> None:
        self.keyspace = keyspace
        self.root = root.rstrip("/")
        self.process_id = process_id
        self._new_replica = new_replica
        # Local replicas by shard ID, each with its item's create revision: a shard
        # deleted and created again gets a new replica. A replica survives the
        # allocator moving its assignment to another slot (a standby's promotion).
        self.replicas: dict[str, ShardReplica] = {}
        self._created: dict[str, int] = {}
        # Stops of replicas whose assignment went away, still under way.
        self._dropping: set[asyncio.Task[None]] = set()
        self._stopping = False

    # -- resolution ---------------------------------------------------------

    async def resolve(self, shard: str, *, may_proxy: bool = True,
                      proxy_header: pb.Header | None = None) -> ShardResolution:
        """Resolve `shard`, first waiting for the revision a proxying peer resolved at."""
        if proxy_header is not None and proxy_header.HasField("etcd"):
            check_proxy_header(proxy_header, self.keyspace.header.cluster_id, self.process_id)
            if proxy_header.etcd.revision > self.keyspace.revision:
                await self.keyspace.wait_for_revision(proxy_header.etcd.revision)
        return self.resolve_now(shard, may_proxy=may_proxy and proxy_header is None)

    def resolve_now(self, shard: str, *, may_proxy: bool = True) -> ShardResolution:
        """Resolve against the KeySpace as it is now, without waiting."""
        item = self.keyspace.get(item_key(self.root, shard))
        spec = item.decoded if item is not None and isinstance(item.decoded, cpb.ShardSpec) \
            else None
        assignments = self.assignments_of(shard) if spec is not None else []
        header = pb.Header(route=route_of(self.keyspace, self.root, assignments))
        header.etcd.CopyFrom(self.keyspace.header)
        res = ShardResolution(cpb.OK, header, shard, spec, item if spec else None, assignments)
        route = res.route
        if spec is None:
            res.status = cpb.SHARD_NOT_FOUND
        elif route.primary == -1:
            res.status = cpb.NO_SHARD_PRIMARY
        elif route.members[route.primary] == self.process_id:
            res.replica = self.replicas.get(shard)
        elif not may_proxy:
            res.status = cpb.NOT_SHARD_PRIMARY
        if res.status == cpb.OK:
            header.process_id.CopyFrom(route.members[route.primary])
        else:
            header.process_id.CopyFrom(self.process_id)
        return res

    def assignments_of(self, shard: str) -> list[KeyValue]:
        return self.keyspace.prefixed(f"{self.root}/assign/{shard}#")

    # -- local replicas -----------------------------------------------------

    def on_keyspace_update(self) -> None:
        """Start replicas of new local assignments, update the rest, stop removed ones."""
        if self._stopping:
            return
        wanted: dict[str, tuple[KeyValue, KeyValue]] = {}
        for kv in self.keyspace.prefixed(f"{self.root}/assign/"):
            a = parse_assign_key(self.root, kv.key)
            if (a.zone, a.suffix) != (self.process_id.zone, self.process_id.suffix):
                continue
            item = self.keyspace.get(item_key(self.root, a.item))
            if item is not None and isinstance(item.decoded, cpb.ShardSpec):
                wanted[a.item] = (item, kv)
        for shard, replica in list(self.replicas.items()):
            got = wanted.get(shard)
            if got is None or self._created[shard] != got[0].create_revision:
                self._drop(shard, replica)
        for shard, (item, assignment) in wanted.items():
            existing = self.replicas.get(shard)
            if existing is None:
                self._start(shard, item, assignment)
            else:
                existing.update(item, assignment)

    def _start(self, shard: str, item: KeyValue, assignment: KeyValue) -> None:
        replica = self._new_replica(item, assignment)
        self.replicas[shard] = replica
        self._created[shard] = item.create_revision
        replica.start()

    def _drop(self, shard: str, replica: ShardReplica) -> None:
        del self.replicas[shard]
        del self._created[shard]
        task = asyncio.create_task(replica.stop(), name=f"stop shard {shard}")
        task.add_done_callback(_log_stop_failure)
        # Kept until done, so that stopping the resolver waits for these stops too.
        self._dropping.add(task)
        task.add_done_callback(self._dropping.discard)

    def primaries(self) -> int:
        """How many local replicas hold their shard's primary assignment."""
        return sum(1 for r in self.replicas.values() if slot_of(r.assignment) == 0)

    async def abort(self) -> None:
        """Abort every local replica, as a killed process would (see ShardReplica.abort)."""
        self._stopping = True
        replicas, self.replicas = list(self.replicas.values()), {}
        self._created.clear()
        for task in self._dropping:
            task.cancel()
        await asyncio.gather(*(r.abort() for r in replicas), *self._dropping,
                             return_exceptions=True)

    async def stop(self) -> None:
        """Stop every local replica (a primary finishes or abandons its transaction)."""
        self._stopping = True
        replicas, self.replicas = list(self.replicas.values()), {}
        self._created.clear()
        await asyncio.gather(*(r.stop() for r in replicas), *self._dropping,
                             return_exceptions=True)


def _log_stop_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and (exc := task.exception()) is not None:
        log.warning("%s failed: %s", task.get_name(), exc)
