"""Resolution of a journal name to its spec, route and local replica.

Every journal RPC starts here (docs/design/protocol.md#resolution). The resolver reads the
broker's KeySpace mirror of Etcd, builds the Route from assignment keys, picks
the status in Gazette's priority order, and keeps one `Replica` per journal
assigned to this broker.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from gazette_core.allocator.keys import parse_assign_key
from gazette_core.allocator.routes import check_proxy_header, route_of
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.suspend_ext import fully_suspended
from gazette_core.broker.protocol.validate_ext import strip_meta
from gazette_core.broker.replica import Replica
from gazette_core.keyspace.keyspace import KeySpace, KeyValue
from gazette_core.server.authz import visible

log = logging.getLogger(__name__)


@dataclass
class Resolution:
    """What a broker knows about a journal at one KeySpace revision."""

    status: pb.Status.ValueType
    header: pb.Header
    journal: str
    spec: pb.JournalSpec | None = None
    item: KeyValue | None = None
    assignments: list[KeyValue] = field(default_factory=list)
    replica: Replica | None = None

    @property
    def route(self) -> pb.Route:
        return self.header.route


KNOWN_CAPACITY = 4096


@dataclass(frozen=True, slots=True)
class _Known:
    revision: int
    item: KeyValue | None
    spec: pb.JournalSpec | None
    assignments: tuple[KeyValue, ...]
    route: pb.Route  # shared: copied into each Resolution's header, never handed out


class Resolver:
    """Maps journals to resolutions and manages the local replicas."""

    def __init__(
        self,
        keyspace: KeySpace,
        root: str,
        process_id: pb.ProcessSpec.ID,
        new_replica: Callable[[str, KeyValue], Replica],
        on_primary_route: Callable[[str], None] | None = None,
    ) -> None:
        self.keyspace = keyspace
        self.root = root.rstrip("/")
        self.process_id = process_id
        self._new_replica = new_replica
        self.replicas: dict[str, Replica] = {}
        self._stopping = False
        # Called with a journal whose route changed while this broker is its primary.
        self._on_primary_route = on_primary_route
        self._routes: dict[str, bytes] = {}
        # What resolve_now last read for each journal, valid while the KeySpace stays
        # at the revision it was read at: a route built from member and assignment keys
        # costs tens of microseconds, on every append and read.
        self._known: dict[str, _Known] = {}

    # -- resolution ---------------------------------------------------------

    async def resolve(
        self,
        journal: str,
        *,
        require_primary: bool,
        may_proxy: bool,
        proxy_header: pb.Header | None = None,
        min_revision: int = 0,
    ) -> Resolution:
        """Resolve `journal` after waiting for the revisions the request names."""
        if proxy_header is not None and proxy_header.HasField("etcd"):
            check_proxy_header(proxy_header, self.keyspace.header.cluster_id, self.process_id)
            min_revision = max(min_revision, proxy_header.etcd.revision)
        if min_revision > self.keyspace.revision:
            await self.keyspace.wait_for_revision(min_revision)
        return self.resolve_now(strip_meta(journal), require_primary, may_proxy)

    def resolve_now(self, journal: str, require_primary: bool, may_proxy: bool) -> Resolution:
        """Resolve against the KeySpace as it is now, without waiting."""
        known = self._lookup(journal)
        item, spec, assignments = known.item, known.spec, list(known.assignments)
        if spec is not None and not visible(journal, spec.labels):
            item, spec, assignments = None, None, []  # outside the RPC's claims: not found
        header = pb.Header()
        if assignments:
            header.route.CopyFrom(known.route)
        else:
            header.route.primary = -1
        header.etcd.CopyFrom(self.keyspace.header)
        res = Resolution(pb.OK, header, journal, spec, item, assignments)
        route = header.route

        local = any(m == self.process_id for m in route.members)
        if require_primary and route.primary != -1:
            header.process_id.CopyFrom(route.members[route.primary])
        elif not require_primary and local:
            header.process_id.CopyFrom(self.process_id)
        res.status = self._status(res, require_primary, may_proxy)
        if res.status != pb.OK:
            header.process_id.CopyFrom(self.process_id)
        if local:
            res.replica = self.replicas.get(journal)
        return res

    def _lookup(self, journal: str) -> _Known:
        """The journal's item, spec, assignments and route at the KeySpace's revision."""
        revision = self.keyspace.revision
        known = self._known.get(journal)
        if known is not None and known.revision == revision:
            return known
        item = self.keyspace.get(f"{self.root}/items/{journal}")
        spec = item.decoded if item is not None else None
        assignments = tuple(self.assignments_of(journal))
        known = _Known(revision, item, spec if isinstance(spec, pb.JournalSpec) else None,
                       assignments, self.route_of(list(assignments)))
        if len(self._known) >= KNOWN_CAPACITY:
            self._known.clear()
        self._known[journal] = known
        return known

    def _status(self, res: Resolution, require_primary: bool, may_proxy: bool
                ) -> pb.Status.ValueType:
        route = res.route
        if res.spec is None:
            return pb.JOURNAL_NOT_FOUND
        if fully_suspended(res.spec):
            return pb.SUSPENDED
        if require_primary and route.primary == -1:
            return pb.NO_JOURNAL_PRIMARY_BROKER
        if not route.members:
            return pb.INSUFFICIENT_JOURNAL_BROKERS
        chosen = res.header.process_id
        if not may_proxy and chosen != self.process_id:
            return pb.NOT_JOURNAL_PRIMARY_BROKER if require_primary else pb.NOT_JOURNAL_BROKER
        return pb.OK

    def assignments_of(self, journal: str) -> list[KeyValue]:
        return self.keyspace.prefixed(f"{self.root}/assign/{journal}#")

    def route_of(self, assignments: list[KeyValue]) -> pb.Route:
        """Route with members in key order, slot 0 as primary, endpoints from member specs."""
        return route_of(self.keyspace, self.root, assignments)

    # -- local replicas -----------------------------------------------------

    def on_keyspace_update(self) -> None:
        """Create replicas for new local assignments and tear down removed ones."""
        self._known.clear()  # keyed by revision already; a change notified drops them all
        if self._stopping:
            return
        wanted: dict[str, KeyValue] = {}
        primary: set[str] = set()
        primary_of: dict[str, tuple[str, str]] = {}  # every journal's primary (zone, suffix)
        for kv in self.keyspace.prefixed(f"{self.root}/assign/"):
            a = parse_assign_key(self.root, kv.key)
            if a.slot == 0:
                primary_of[a.item] = (a.zone, a.suffix)
            if (a.zone, a.suffix) != (self.process_id.zone, self.process_id.suffix):
                continue
            item = self.keyspace.get(f"{self.root}/items/{a.item}")
            if item is not None:
                wanted[a.item] = item
                if a.slot == 0:
                    primary.add(a.item)
        for journal, replica in list(self.replicas.items()):
            item = wanted.get(journal)
            if item is None or item.create_revision != replica.create_revision:
                del self.replicas[journal]
                replica.spawn_stop()
        for journal, item in wanted.items():
            if journal not in self.replicas:
                replica = self._new_replica(journal, item)
                self.replicas[journal] = replica
                replica.start()
            else:
                self.replicas[journal].on_spec(item)
            self.replicas[journal].on_route(primary_of.get(journal), journal in primary)
        self._notice_route_changes(primary)

    def _notice_route_changes(self, primary: set[str]) -> None:
        routes = {j: self.route_of(self.assignments_of(j)).SerializeToString() for j in primary}
        if self._on_primary_route is not None:
            for journal, route in routes.items():
                if self._routes.get(journal) != route:
                    self._on_primary_route(journal)
        self._routes = routes

    async def stop(self) -> None:
        """Stop every replica, rolling and persisting its spool."""
        self._stopping = True
        replicas, self.replicas = list(self.replicas.values()), {}
        await asyncio.gather(*(r.stop() for r in replicas), return_exceptions=True)
