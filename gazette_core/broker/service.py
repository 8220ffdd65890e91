"""The Broker: Etcd session, KeySpace, allocator, resolver, persister and gRPC server.

`Broker.start()` brings a broker up in the order that keeps requests safe:
serve, announce the member under a lease, then watch and allocate.
`Broker.stop()` reverses it, persisting every spool before the lease goes.
"""

from __future__ import annotations

import asyncio
import logging

import aetcd
import grpc
from aetcd import rpc

from gazette_core.allocator.allocator import Allocator
from gazette_core.allocator.announce import Announcement
from gazette_core.allocator.broker_decode import broker_decoder
from gazette_core.allocator.keys import member_key
from gazette_core.broker.config import BrokerConfig
from gazette_core.broker.fragment.persister import Persister
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.replica import Replica
from gazette_core.broker.resolver import Resolution, Resolver
from gazette_core.broker.servicer import JournalServicer
from gazette_core.errors import UnavailableError
from gazette_core.keyspace import etcd_util
from gazette_core.keyspace.keyspace import KeySpace, KeyValue

log = logging.getLogger(__name__)

MAX_RECV = 4 * 1024 * 1024
# How long a stopping broker keeps trying to persist its spools (Gazette's
# per-persist timeout is 5 minutes).
PERSIST_ON_STOP_S = 300.0
ETCD_CONNECT_TIMEOUT_S = 10.0
GRPC_OPTIONS = [("grpc.max_receive_message_length", MAX_RECV),
                ("grpc.max_send_message_length", 16 * 1024 * 1024),
                ("grpc.so_reuseport", 0)]


class Broker:
    """One broker process's long-lived components."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.process_id = pb.ProcessSpec.ID(zone=config.zone, suffix=config.suffix)
        self.root = config.etcd_prefix.rstrip("/")
        self.etcd: aetcd.Client
        self.keyspace: KeySpace
        self.resolver: Resolver
        self.persister = Persister(config.file_root)
        self.server: grpc.aio.Server | None = None
        self.port = 0
        self.announcement: Announcement | None = None
        self.allocator: Allocator | None = None

    async def __aenter__(self) -> Broker:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def endpoint(self) -> str:
        return self.config.endpoint(self.port)

    async def start(self) -> None:
        self.etcd = await etcd_util.connect(self.config.etcd_address)
        self.keyspace = KeySpace(self.etcd, self.root, broker_decoder(self.root))
        try:
            await asyncio.wait_for(self.keyspace.load(), ETCD_CONNECT_TIMEOUT_S)
        except (TimeoutError, rpc.AioRpcError, aetcd.ClientError) as exc:
            await self.etcd.close()
            detail = exc.details() if isinstance(exc, rpc.AioRpcError) else str(exc) or "timeout"
            raise UnavailableError(
                f"cannot reach etcd at {self.config.etcd_address}: {detail}") from None
        self.resolver = Resolver(self.keyspace, self.root, self.process_id, self._new_replica)
        self.keyspace.observers.append(self.resolver.on_keyspace_update)
        self.persister.start()
        self.server = grpc.aio.server(options=GRPC_OPTIONS)
        pb_grpc.add_JournalServicer_to_server(JournalServicer(self), self.server)
        self.port = self.server.add_insecure_port(f"{self.config.host or '0.0.0.0'}:"
                                                  f"{self.config.port}")
        await self.server.start()
        await self._announce()
        self.keyspace.start()
        await self.keyspace.wait_for_revision(self.keyspace.revision)
        self.resolver.on_keyspace_update()
        self.allocator = Allocator(self.etcd, self.keyspace, self.root, self._member_key(),
                                   self._desired_replication)
        self.allocator.start()
        log.info("broker serving", extra={"endpoint": self.endpoint})

    def _member_key(self) -> str:
        return member_key(self.root, self.config.zone, self.config.suffix)

    async def _announce(self) -> None:
        spec = pb.BrokerSpec(process_spec=pb.ProcessSpec(id=self.process_id,
                                                         endpoint=self.endpoint),
                             journal_limit=self.config.limit)
        self.announcement = Announcement(self.etcd, self._member_key(),
                                         spec.SerializeToString(), self.config.etcd_lease)
        await self.announcement.announce()

    def _desired_replication(self, spec: object) -> int:
        if not isinstance(spec, pb.JournalSpec):
            return 0
        level = spec.suspend.level if spec.HasField("suspend") else 0
        if level == pb.JournalSpec.Suspend.FULL:
            return 0
        if level == pb.JournalSpec.Suspend.PARTIAL:
            return 1
        return min(spec.replication, self.config.max_replication)

    def _new_replica(self, journal: str, item: KeyValue) -> Replica:
        return Replica(journal, item, self.persister, self.config.file_root,
                       self.config.spool_dir or None)

    async def stop(self) -> None:
        """Persist every spool, then leave: stop serving and release the lease."""
        if self.allocator is not None:
            await self.allocator.stop()
        await self.resolver.stop()
        await self.persister.stop(timeout=PERSIST_ON_STOP_S)
        if self.server is not None:
            await self.server.stop(grace=1.0)
        await self.keyspace.stop()
        if self.announcement is not None:
            await self.announcement.revoke()
        await self.etcd.close()

    # -- append support -----------------------------------------------------

    async def resolve_for_append(self, req: pb.AppendRequest) -> Resolution:
        """Resolve as primary, waiting out an allocator that is still shrinking the route."""
        while True:
            res = await self.resolver.resolve(
                req.journal, require_primary=True, may_proxy=not req.do_not_proxy,
                proxy_header=req.header if req.HasField("header") else None,
                min_revision=req.min_etcd_revision)
            if res.status != pb.OK:
                return res
            if res.header.process_id != self.process_id or res.replica is None:
                # Proxying to a remote primary arrives with replication.
                res.status = pb.NOT_JOURNAL_PRIMARY_BROKER
                res.header.process_id.CopyFrom(self.process_id)
                return res
            desired = self._desired_replication(res.spec)
            if len(res.route.members) < desired:
                res.status = pb.INSUFFICIENT_JOURNAL_BROKERS
                return res
            if len(res.route.members) == desired:
                return res
            await self.keyspace.wait_for_change(self.keyspace.revision)

    async def sync_pipeline(self, replica: Replica, res: Resolution) -> None:
        """Reconcile the spool with the index, then advertise the route in Etcd."""
        if not replica.synced:
            # A spool that never held content (fresh after a restart) continues
            # where the persisted fragments end.
            index_end = replica.index.end_offset
            if replica.spool.fragment.end == 0 and index_end > 0:
                replica.roll(index_end, replica.spec.fragment.compression_codec)
            replica.synced = True
        await self._advertise_route(res)

    async def _advertise_route(self, res: Resolution) -> None:
        """Write the route into assignment values that do not yet hold it (broker.md 5.2)."""
        value = res.route.SerializeToString()
        stale = [kv for kv in res.assignments if kv.raw != value]
        if not stale:
            return
        compares = [etcd_util.cmp_mod_revision(kv.key, kv.mod_revision) for kv in res.assignments]
        ops = [rpc.RequestOp(request_put=rpc.PutRequest(key=kv.key.encode(), value=value,
                                                        ignore_lease=True)) for kv in stale]
        resp = await etcd_util.txn(self.etcd, compares, ops)
        if resp.succeeded:
            await self.keyspace.wait_for_revision(resp.header.revision)
