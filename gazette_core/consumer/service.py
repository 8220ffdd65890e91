"""The ConsumerService: one consumer process's Etcd session, allocator, shards and servers.

`start()` brings a process up in the order that keeps requests safe: serve
the Shard API (and the application's own services), announce the member
under a lease, then watch, allocate and run the shards assigned here.
`stop()` reverses it: it marks the member exiting so its primaries move to
their standbys, stops its shards, and releases the lease.

The service is the `ReplicaHost` its shards run on and the `ShardHost` the
Shard API serves from.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

import aetcd

from gazette_core.allocator.allocator import Allocator
from gazette_core.allocator.announce import Announcement
from gazette_core.allocator.drain import drain
from gazette_core.allocator.keys import member_key
from gazette_core.broker import keepalive
from gazette_core.broker.client.channel import dial, journal_stub
from gazette_core.broker.client.routing import Router
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.consumer import metrics
from gazette_core.consumer.api import host as api
from gazette_core.consumer.app import Application
from gazette_core.consumer.config import ConsumerConfig
from gazette_core.consumer.consumer_server import ConsumerServer
from gazette_core.consumer.gauges import ShardGauges
from gazette_core.consumer.keyspace_decode import consumer_decoder, shard_consistent
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.protocol import consumer_pb2_grpc as cpb_grpc
from gazette_core.consumer.protocol.shard_spec_ext import (
    desired_replication,
    validate_consumer_spec,
)
from gazette_core.consumer.protocol.status_ext import merge_status
from gazette_core.consumer.replica import ShardReplica
from gazette_core.consumer.resolver import ShardResolver
from gazette_core.consumer.txn.loop import TxnStats
from gazette_core.errors import GazetteError, ValidationError
from gazette_core.keyspace import etcd_util
from gazette_core.keyspace.keyspace import KeySpace, KeyValue, connect_loaded
from gazette_core.server.client_auth import CallAuth
from gazette_core.server.common_flags import etcd_tls
from gazette_core.server.process import quietly, start_or_undo
from gazette_core.server.tls import ClientTLS, client_credentials

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub

log = logging.getLogger(__name__)

ETCD_CONNECT_TIMEOUT_S = 10.0
# How long a stopping process waits for its primaries to move to standbys.
DRAIN_TIMEOUT_S = 60.0
DRAIN_STALL_S = 10.0
# How long stopping waits for shards to finish their transactions and stop.
REPLICAS_STOP_TIMEOUT_S = 30.0
# Backoff of status updates
# (docs/design/consumer.md#assignment-status): 50, 50, 100, 100 ms, 1 s, 1 s, then 5 s.
STATUS_BACKOFF = (0.05, 0.05, 0.1, 0.1, 1.0, 1.0, 5.0)


class ConsumerService:
    """One consumer process's long-lived components."""

    def __init__(self, config: ConsumerConfig, app: Application) -> None:
        self.config = config
        self.app = app
        self.process_id = pb.ProcessSpec.ID(zone=config.zone, suffix=config.suffix)
        self.root = config.root
        _check_identity(self.process_id)
        self.server = ConsumerServer(self)  # bad auth keys or TLS files fail here
        broker_tls = ClientTLS(config.broker_cert_file, config.broker_cert_key_file,
                               config.broker_ca_file)
        self.client_config = keepalive.peer_config(
            broker_tls, CallAuth.from_settings(config.broker_auth_keys or config.auth_keys,
                                               config.broker_auth_token))
        self.peer_config = keepalive.peer_config(
            peer_tls(config, broker_tls),
            CallAuth.from_settings(config.auth_keys, config.broker_auth_token))
        # All listed brokers: the Router's default calls go to a live one (failover.py).
        # With a route cache, calls go straight to a journal's brokers, and reads take
        # persisted fragments from their stores (file:// ones under --broker.file-root).
        cache = config.broker_cache_size
        self.journals = Router(config.broker_address, zone=config.zone, capacity=cache,
                               ttl=config.broker_cache_ttl, connect=self._broker_stub,
                               direct_reads=cache > 0,
                               file_root=config.broker_file_root or None)
        self.etcd: aetcd.Client
        self.keyspace: KeySpace
        self.resolver: ShardResolver
        self.announcement: Announcement | None = None
        self.allocator: Allocator | None = None
        self.gauges = ShardGauges(self)
        # Set when Etcd dropped our lease: our assignments are gone, so this
        # process must stop running its shards (the recovery-log fence makes
        # a late commit fail rather than corrupt the log).
        self.lease_lost = asyncio.Event()
        self._stopped = False

    async def __aenter__(self) -> ConsumerService:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def endpoint(self) -> str:
        return self.config.endpoint(self.server.port)

    def _broker_stub(self, endpoint: str) -> JournalAsyncStub:
        return journal_stub(endpoint, self.client_config)

    async def start(self) -> None:
        """Start everything; a start that fails half-way stops what it started, lease too."""
        self.etcd, self.keyspace = await connect_loaded(
            self.config.etcd_address, self.root, consumer_decoder(self.root),
            ETCD_CONNECT_TIMEOUT_S, etcd_tls(self.config), self.config.watch_delay)
        await start_or_undo(self._start(), lambda: self.stop(drain_timeout=0))

    async def _start(self) -> None:
        self.resolver = ShardResolver(self.keyspace, self.root, self.process_id,
                                      self._new_replica)
        self.keyspace.observers.append(self.resolver.on_keyspace_update)
        await self.server.start()
        await self._announce()
        self.keyspace.start()
        await self.keyspace.wait_for_revision(self.keyspace.revision)
        self.resolver.on_keyspace_update()
        self.allocator = Allocator(self.etcd, self.keyspace, self.root, self._member_key(),
                                   self._desired_replication, consistent=shard_consistent)
        self.allocator.start()
        self.gauges.start()
        self.server.serving.ready = True
        log.info("consumer serving", extra={"endpoint": self.endpoint})

    def _member_key(self) -> str:
        return member_key(self.root, self.config.zone, self.config.suffix)

    def _member_spec(self, exiting: bool = False) -> bytes:
        spec = cpb.ConsumerSpec(process_spec=pb.ProcessSpec(id=self.process_id,
                                                            endpoint=self.endpoint),
                                shard_limit=self.config.limit, exiting=exiting)
        return spec.SerializeToString()

    async def _announce(self) -> None:
        self.announcement = Announcement(self.etcd, self._member_key(), self._member_spec(),
                                         self.config.etcd_lease, on_lost=self.lease_lost.set)
        await self.announcement.announce()

    def _desired_replication(self, spec: object) -> int:
        if not isinstance(spec, cpb.ShardSpec):
            return 0
        return desired_replication(spec, self.config.max_hot_standbys)

    def _new_replica(self, spec: KeyValue, assignment: KeyValue) -> ShardReplica:
        return ShardReplica(self, spec, assignment)

    # -- ReplicaHost ---------------------------------------------------------

    async def update_status(self, assignment_key: str, status: cpb.ReplicaStatus) -> None:
        """Merge `status` into the assignment's value (by max code), retrying with backoff.

        Gives up quietly once the assignment is gone: the shard is no longer ours.
        """
        attempt = 0
        while True:
            kv = self.keyspace.get(assignment_key)
            if kv is None:
                return
            current = kv.decoded if isinstance(kv.decoded, cpb.ReplicaStatus) \
                else cpb.ReplicaStatus()
            merged = merge_status(current, status)
            if kv.raw and merged == current:
                return
            try:
                if await self._put_status(kv, merged):
                    return
            except GazetteError as exc:
                log.warning("updating the status of %s failed: %s", assignment_key, exc)
            await asyncio.sleep(STATUS_BACKOFF[min(attempt, len(STATUS_BACKOFF) - 1)])
            attempt += 1

    async def _put_status(self, kv: KeyValue, status: cpb.ReplicaStatus) -> bool:
        op = etcd_util.put_op(kv.key, status.SerializeToString(), ignore_lease=True)
        resp = await etcd_util.txn(self.etcd, [etcd_util.cmp_mod_revision(kv.key,
                                                                            kv.mod_revision)],
                                   [op])
        if resp.succeeded:
            await self.keyspace.wait_for_revision(resp.header.revision)
        return bool(resp.succeeded)

    def observe_txn(self, stats: TxnStats) -> None:
        """Count a completed transaction into the shard's metrics."""
        metrics.committed(stats)

    # -- ShardHost -----------------------------------------------------------

    async def resolve(self, shard: str, *, proxied_header: pb.Header | None = None
                      ) -> api.ShardResolution:
        """The Shard API's view of `shard`: the local primary replica, or a primary's stub."""
        res = await self.resolver.resolve(shard, proxy_header=proxied_header)
        stub = None
        if res.status == cpb.OK and res.replica is None:
            stub = self.shard_stub(res.primary_endpoint)
        return api.ShardResolution(res.status, res.header, res.replica, stub)

    def shard_stub(self, endpoint: str) -> cpb_grpc.ShardStub:
        """A Shard stub of the consumer at `endpoint` (e.g. a shard's primary)."""
        return cpb_grpc.ShardStub(dial(endpoint, self.peer_config))

    async def stat(self, replica: ShardReplica, read_through: dict[str, int]
                   ) -> tuple[dict[str, int], dict[str, int]]:
        return await replica.wait_read_through(read_through)

    # -- stopping ------------------------------------------------------------

    async def stop(self, drain_timeout: float = DRAIN_TIMEOUT_S) -> None:
        """Hand primaries to standbys, stop every shard, then leave. Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        lost = self.lease_lost.is_set()
        if not lost and self.announcement is not None and self.allocator is not None:
            await quietly("draining", self._drain(drain_timeout))
        await quietly("stopping the shard gauges", self.gauges.stop())
        if self.allocator is not None:
            await quietly("stopping the allocator", self.allocator.stop())
        try:
            async with asyncio.timeout(REPLICAS_STOP_TIMEOUT_S):
                await self.resolver.stop()
        except TimeoutError:
            # A commit that cannot reach the brokers would hold us here for ever. Leaving
            # is safe: whoever takes the shards over fences this process's recorder.
            log.warning("shards did not stop within %gs; leaving anyway",
                        REPLICAS_STOP_TIMEOUT_S)
        await self.server.stop()
        await self.keyspace.stop()
        if self.announcement is not None:
            await quietly("revoking the lease", self.announcement.revoke())
        await self.etcd.close()

    async def crash(self) -> None:
        """Stop as if the process died: shards abort mid-transaction, with no hand-off.

        For tests and harnesses. The lease is revoked at the end, so takeover
        starts at once rather than one TTL later, as after a SIGKILL.
        """
        if self._stopped:
            return
        self._stopped = True
        self.keyspace.observers.remove(self.resolver.on_keyspace_update)
        await self.resolver.abort()
        if self.allocator is not None:
            await quietly("stopping the allocator", self.allocator.stop())
        await quietly("stopping the shard gauges", self.gauges.stop())
        await self.server.stop()
        await self.keyspace.stop()
        if self.announcement is not None:
            await quietly("revoking the lease", self.announcement.revoke())
        await self.etcd.close()

    async def _drain(self, timeout: float) -> None:
        assert self.announcement is not None
        try:
            await self.announcement.update(self._member_spec(exiting=True))
        except GazetteError as exc:
            log.warning("could not mark this consumer exiting: %s", exc)
            return
        # Primaries move to standbys (or new members); standby assignments may stay
        # where nobody else can take them: dropping them costs no availability.
        await drain(self.keyspace, self.resolver.primaries, self._others_can_take,
                    timeout, DRAIN_STALL_S, "primary shard(s)")

    def _others_can_take(self) -> bool:
        """Whether another member, not exiting and with capacity, exists to take our shards."""
        return any(isinstance(kv.decoded, cpb.ConsumerSpec) and not kv.decoded.exiting
                   and kv.decoded.shard_limit > 0
                   and kv.decoded.process_spec.id != self.process_id
                   for kv in self.keyspace.prefixed(f"{self.root}/members/"))


def peer_tls(config: ConsumerConfig, broker_tls: ClientTLS) -> ClientTLS:
    """TLS files for calls to other consumers: --consumer.peer-*, else the brokers' files.

    Files that cannot be used fail here, before the process starts.
    """
    tls = ClientTLS(config.peer_cert_file, config.peer_cert_key_file, config.peer_ca_file)
    if tls == ClientTLS():
        return broker_tls
    client_credentials(tls)
    return tls


def _check_identity(process_id: pb.ProcessSpec.ID) -> None:
    """Refuse a zone or id that others would ignore in Etcd (they'd never assign us shards)."""
    spec = cpb.ConsumerSpec(process_spec=pb.ProcessSpec(id=process_id,
                                                        endpoint="http://localhost:1"))
    try:
        validate_consumer_spec(spec)
    except ValidationError as exc:
        raise GazetteError(f"--consumer.zone/--consumer.id: {exc}") from None

