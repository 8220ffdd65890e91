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
from gazette_core.broker import keepalive
from gazette_core.broker.config import BrokerConfig
from gazette_core.broker.fragment.persister import Persister
from gazette_core.broker.http_gateway import HttpGateway, count_requests
from gazette_core.broker.metrics import JournalServerMetrics
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.protocol.suspend_ext import suspend_level
from gazette_core.broker.pulse import Pulse
from gazette_core.broker.replica import Replica
from gazette_core.broker.resolver import Resolver
from gazette_core.broker.security import Security
from gazette_core.broker.servicer import JournalServicer
from gazette_core.broker.stores.base import FragmentStore
from gazette_core.broker.stores.health import HealthMonitor
from gazette_core.broker.stores.registry import get_store
from gazette_core.errors import GazetteError, UnavailableError
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
                                   self.desired_replication)
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

    def desired_replication(self, spec: object) -> int:
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

    def peer_stub(self, endpoint: str) -> JournalAsyncStub:
        return self.security.peer_stub(endpoint)
