"""The Broker: Etcd session, KeySpace, allocator, resolver, persister and gRPC server.

`Broker.start()` brings a broker up in the order that keeps requests safe:
serve, announce the member under a lease, then watch and allocate.
`Broker.stop()` reverses it, persisting every spool before the lease goes.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

import aetcd
import grpc

from gazette_core.allocator.allocator import Allocator
from gazette_core.allocator.announce import Announcement
from gazette_core.allocator.broker_decode import broker_decoder
from gazette_core.allocator.drain import drain
from gazette_core.allocator.keys import member_key
from gazette_core.broker import keepalive, suspension
from gazette_core.broker.config import BrokerConfig
from gazette_core.broker.fragment.persister import Persister
from gazette_core.broker.http_gateway import HttpGateway, count_requests
from gazette_core.broker.metrics import JournalServerMetrics
from gazette_core.broker.pipeline import Pipeline
from gazette_core.broker.pipeline_sync import synchronize
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.protocol.route_ext import route_equivalent
from gazette_core.broker.protocol.suspend_ext import suspend_level
from gazette_core.broker.pulse import Pulse
from gazette_core.broker.replica import Replica
from gazette_core.broker.resolver import Resolution, Resolver
from gazette_core.broker.security import Security
from gazette_core.broker.servicer import JournalServicer
from gazette_core.broker.stores.base import FragmentStore
from gazette_core.broker.stores.health import HealthMonitor
from gazette_core.broker.stores.registry import get_store
from gazette_core.errors import GazetteError, UnavailableError
from gazette_core.keyspace import etcd_util
from gazette_core.keyspace.keyspace import KeySpace, KeyValue, connect_loaded
from gazette_core.server import backlog
from gazette_core.server.common_flags import etcd_tls
from gazette_core.server.json_gateway import broker_gateway
from gazette_core.server.process import quietly, start_or_undo
from gazette_core.server.serving import Ports, Serving
from gazette_core.server.tls import server_ssl_context
from gazette_core.server.tolerant_decoding import add_tolerant
from gazette_core.tasks import BackgroundTask

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub

log = logging.getLogger(__name__)

ETCD_CONNECT_TIMEOUT_S = 10.0
# How long a stopping broker waits for the allocator to move its journals away.
DRAIN_TIMEOUT_S = 60.0
# Draining stops early once no journal has moved away for this long.
DRAIN_STALL_S = 5.0
# The largest message received is --broker.max-grpc-recv-size.
GRPC_OPTIONS = [("grpc.max_send_message_length", 16 * 1024 * 1024),
                ("grpc.so_reuseport", 0)]


class LeaseLostError(UnavailableError):
    """Etcd expired this broker's lease (it was stopped, partitioned or Etcd was down)."""


class Broker:
    """One broker process's long-lived components."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.process_id = pb.ProcessSpec.ID(zone=config.zone, suffix=config.suffix)
        self.root = config.etcd_prefix.rstrip("/")
        self.security = Security(config)  # bad auth keys fail here, before anything starts
        self.etcd: aetcd.Client
        self.keyspace: KeySpace
        self.resolver: Resolver
        self.persister = Persister(config.file_root, file_only=config.file_only)
        self.store_health = HealthMonitor(self.store_for, config.store_health_sweep,
                                          config.store_health_limit)
        self.server: grpc.aio.Server | None = None
        self.serving = Serving(
            Ports("--broker", config.host, config.port, config.http_port, config.debug_port,
                  config.debug_private),
            tls=server_ssl_context(config.server_cert_file, config.server_cert_key_file,
                                   config.server_ca_file),
            header_timeout=config.http_header_timeout, idle_timeout=config.http_idle_timeout,
            middlewares=[count_requests])
        self.http_gateway: HttpGateway | None = None
        self.announcement: Announcement | None = None
        self.allocator: Allocator | None = None
        self._pulsing = BackgroundTask("pulse")
        # Set when Etcd dropped our lease: our assignments are gone and others
        # may serve our journals, so this process must stop serving them.
        self.lease_lost = asyncio.Event()
        self._stopped = False

    async def __aenter__(self) -> Broker:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def port(self) -> int | str:
        """The service port listened on (a unix:// URL for a unix socket)."""
        return self.serving.port

    @property
    def endpoint(self) -> str:
        return self.config.endpoint(self.port)

    @property
    def http_endpoint(self) -> str | None:
        """The HTTP gateway's URL (by default `endpoint`), or None when there is no HTTP."""
        port = self.serving.http_port
        return self.config.endpoint(port) if port is not None else None

    def store_for(self, url: str) -> FragmentStore:
        """The store serving `url` here (file:/// under the file root with --broker.file-only)."""
        return get_store(url, self.config.file_root, self.config.file_only)

    async def start(self) -> None:
        """Start everything; a start that fails half-way stops what it started, lease too."""
        self.etcd, self.keyspace = await connect_loaded(
            self.config.etcd_address, self.root, broker_decoder(self.root),
            ETCD_CONNECT_TIMEOUT_S, etcd_tls(self.config), self.config.watch_delay)
        await start_or_undo(self._start(), lambda: self.stop(drain_timeout=0))

    async def _start(self) -> None:
        self.pulse = Pulse(self)
        self.resolver = Resolver(self.keyspace, self.root, self.process_id, self._new_replica,
                                 self.pulse.route_changed)
        self.keyspace.observers.append(self.resolver.on_keyspace_update)
        self.persister.start()
        self.server = grpc.aio.server(
            options=[*GRPC_OPTIONS,
                     ("grpc.max_receive_message_length", self.config.max_grpc_recv_size),
                     *keepalive.server_options(), *backlog.server_options()],
            interceptors=[JournalServerMetrics(), *self.security.interceptors()])
        add_tolerant(pb_grpc.add_JournalServicer_to_server, JournalServicer(self), self.server)
        server = self.server
        self.serving.bind(lambda address: self.security.add_port(server, address))
        await self.server.start()
        if self.serving.http is not None:
            own = self.serving.loopback(self.endpoint)
            self.http_gateway = HttpGateway(own,
                                            self.security.peer_stub,
                                            idle_timeout=self.config.http_idle_timeout)
            self.serving.http.add_routes(self.http_gateway.routes())
            self.serving.http.mount("/v1", broker_gateway(
                lambda: self.security.peer_stub(own),
                self.config.allow_origin))
        await self.serving.start()
        if self.http_gateway is not None:
            self.http_gateway.port = self.serving.http_port or 0
        await self._announce()
        self.keyspace.start()
        await self.keyspace.wait_for_revision(self.keyspace.revision)
        self.resolver.on_keyspace_update()
        self.allocator = Allocator(self.etcd, self.keyspace, self.root, self._member_key(),
                                   self._desired_replication)
        self.allocator.start()
        self._pulsing.start(self.pulse.run)
        self.serving.ready = True
        log.info("broker serving", extra={"endpoint": self.endpoint})

    def _member_key(self) -> str:
        return member_key(self.root, self.config.zone, self.config.suffix)

    async def _announce(self) -> None:
        spec = pb.BrokerSpec(process_spec=pb.ProcessSpec(id=self.process_id,
                                                         endpoint=self.endpoint),
                             journal_limit=self.config.limit)
        self.announcement = Announcement(self.etcd, self._member_key(),
                                         spec.SerializeToString(), self.config.etcd_lease,
                                         on_lost=self.lease_lost.set)
        await self.announcement.announce()

    def _desired_replication(self, spec: object) -> int:
        if not isinstance(spec, pb.JournalSpec):
            return 0
        level = suspend_level(spec)
        if level == pb.JournalSpec.Suspend.FULL:
            return 0
        if level == pb.JournalSpec.Suspend.PARTIAL:
            return 1
        return min(spec.replication, self.config.max_replication)

    def _new_replica(self, journal: str, item: KeyValue) -> Replica:
        return Replica(journal, item, self.persister, self.config.file_root,
                       self.config.spool_dir or None, file_only=self.config.file_only)

    async def stop(self, drain_timeout: float = DRAIN_TIMEOUT_S) -> None:
        """Drain, persist every spool, then leave: stop serving and release the lease.

        The broker first marks itself exiting, so the allocator moves its
        assignments to other brokers, and waits (up to `drain_timeout`) until
        it holds none. With no other broker to take them, it stops at once.
        A broker that lost its lease skips draining (its assignments are gone
        or going) and persists at once. Nothing Etcd does (or fails to do)
        stops the spools from being persisted. Stopping a stopped broker does
        nothing.
        """
        if self._stopped:
            return
        self._stopped = True
        lost = self.lease_lost.is_set()
        if lost:
            # Freeze our view of the assignments: one vanishing now would tear
            # its replica down behind the persisting below.
            await quietly("stopping the keyspace watch", self.keyspace.stop())
        await quietly("stopping the HTTP server", self.serving.stop_http())
        if not lost and self.announcement is not None and self.allocator is not None:
            await quietly("draining", self._drain(drain_timeout))
        await quietly("stopping the pulse", self._pulsing.stop())
        if self.allocator is not None:
            await quietly("stopping the allocator", self.allocator.stop())
        await self.resolver.stop()
        # Bounded (--broker.persist-on-stop-timeout), so a store that never
        # recovers cannot keep a stopping broker from being restarted.
        # The persister logs any spools it gave up on.
        await self.persister.stop(timeout=self.config.persist_on_stop_timeout)
        await self.store_health.stop()
        await quietly("closing the service port", self.serving.close_listener())
        if self.server is not None:
            await self.server.stop(grace=1.0)
        await quietly("closing the service port's connections", self.serving.stop())
        await self.keyspace.stop()
        if self.announcement is not None:
            await quietly("revoking the lease", self.announcement.revoke())
        await self.etcd.close()

    def fence_appends(self) -> None:
        """Raise if this broker may no longer take appends: its lease is (surely) gone.

        Once the TTL has run out by our clock, Etcd may have handed our
        journals to other brokers, which continue from the persisted
        fragments; an append taken here could be lost or its offsets reused.
        """
        announcement = self.announcement
        if self.lease_lost.is_set() or (announcement is not None and not announcement.alive):
            raise LeaseLostError(f"broker {self.process_id.zone}#{self.process_id.suffix} "
                                 "lost its Etcd lease and takes no appends")

    async def _drain(self, timeout: float) -> None:
        assert self.announcement is not None
        spec = pb.BrokerSpec(process_spec=pb.ProcessSpec(id=self.process_id,
                                                         endpoint=self.endpoint),
                             journal_limit=self.config.limit, exiting=True)
        try:
            await self.announcement.update(spec.SerializeToString())
        except GazetteError as exc:
            log.warning("could not mark this broker exiting: %s", exc)
            return
        await drain(self.keyspace, self._assignment_count, self._others_can_take, timeout,
                    DRAIN_STALL_S, "journal(s)")

    def _assignment_count(self) -> int:
        return len(self.resolver.replicas)

    def _others_can_take(self) -> bool:
        """Whether some journal of ours has a broker, not exiting and not yet a member, to go to."""
        others = [kv.decoded.process_spec.id for kv in
                  self.keyspace.prefixed(f"{self.root}/members/")
                  if isinstance(kv.decoded, pb.BrokerSpec) and not kv.decoded.exiting
                  and kv.decoded.journal_limit > 0
                  and kv.decoded.process_spec.id != self.process_id]
        for journal in self.resolver.replicas:
            members = list(self.resolver.route_of(self.resolver.assignments_of(journal)).members)
            if any(o not in members for o in others):
                return True
        return False

    # -- append support -----------------------------------------------------

    async def resolve_for_append(self, req: pb.AppendRequest) -> Resolution:
        """Resolve as primary, waiting out an allocator that is still shrinking the route."""
        while True:
            self.fence_appends()
            res = await self.resolver.resolve(
                req.journal, require_primary=True, may_proxy=not req.do_not_proxy,
                proxy_header=req.header if req.HasField("header") else None,
                min_revision=req.min_etcd_revision)
            if res.status == pb.SUSPENDED and req.suspend == pb.AppendRequest.SUSPEND_RESUME:
                await suspension.resume_full(self, res)
                continue
            if res.status != pb.OK or res.header.process_id != self.process_id:
                return res  # a status, or a primary elsewhere to proxy to
            if len(res.route.members) < self._desired_replication(res.spec):
                res.status = pb.INSUFFICIENT_JOURNAL_BROKERS
                return res
            if res.replica is not None:
                # A route larger than desired (the allocator is shrinking it) is
                # synced and advertised first, then waited out by the caller.
                return res
            await self.keyspace.wait_for_change(self.keyspace.revision)

    def oversized(self, res: Resolution) -> bool:
        """Whether the route has more members than desired (an allocator move in flight)."""
        return len(res.route.members) > self._desired_replication(res.spec)

    def peer_stub(self, endpoint: str) -> JournalAsyncStub:
        return self.security.peer_stub(endpoint)

    async def sync_pipeline(self, replica: Replica, res: Resolution) -> Pipeline | None:
        """The journal's synchronised pipeline for `res`'s route, building it if needed.

        None means a peer knows a newer route: we waited for its revision and
        the caller must resolve again.
        """
        pipeline = replica.pipeline
        if pipeline is not None and (pipeline.broken is not None
                                     or not route_equivalent(pipeline.route, res.route)
                                     or pipeline.renew_at <= asyncio.get_running_loop().time()):
            await replica.close_pipeline()
            pipeline = None
        if pipeline is None:
            pipeline = await self._new_pipeline(replica, res)
            if pipeline is None:
                return None
        await self._advertise_route(res)
        return pipeline

    async def _new_pipeline(self, replica: Replica, res: Resolution) -> Pipeline | None:
        replica.become_primary()
        metadata, renew_at = self.security.replication(replica.journal)
        pipeline = Pipeline(replica, res.header, self.security.peer_channel, metadata=metadata,
                            renew_at=renew_at)
        replica.pipeline = pipeline
        codec = replica.spec.fragment.compression_codec
        try:
            pipeline.open()
            result = await synchronize(pipeline, codec)
            if result.wait_revision:
                await replica.close_pipeline()
                await self.keyspace.wait_for_revision(result.wait_revision)
                return None
            # A spool that never held content (every replica fresh after a
            # restart) continues where the persisted fragments end. The store
            # is listed anew first: a previous primary that just left may have
            # persisted its last fragment after our latest listing.
            if replica.spool.fragment.end == 0:
                await replica.refresh()
                if replica.index.end_offset > 0:
                    await pipeline.roll(replica.index.end_offset, codec)
            replica.mark_synced()
        except BaseException:
            await replica.close_pipeline()
            raise
        return pipeline

    async def _advertise_route(self, res: Resolution) -> None:
        """Write the route into assignment values that do not yet hold it.

        See docs/design/etcd.md#route-consistency.
        """
        value = res.route.SerializeToString()
        stale = [kv for kv in res.assignments if kv.raw != value]
        if not stale:
            return
        compares = [etcd_util.cmp_mod_revision(kv.key, kv.mod_revision) for kv in res.assignments]
        ops = [etcd_util.put_op(kv.key, value, ignore_lease=True) for kv in stale]
        try:
            resp = await etcd_util.txn(self.etcd, compares, ops)
        except etcd_util.EtcdUnavailableError as exc:
            # Appends on the current route stay safe; the next append or pulse retries.
            log.warning("could not advertise the route of %s: %s", res.journal, exc)
            return
        if resp.succeeded:
            await self.keyspace.wait_for_revision(resp.header.revision)
