"""A ShardHost test double over a real etcd and KeySpace, served by the real ShardServicer.

It resolves a shard from its assignments as a consumer would: the slot-0
member is primary; this process serves the shard when it is that member,
with a `FakeReplica` whose progress the test sets, and otherwise names a
ShardStub to the primary's advertised endpoint.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aetcd
import grpc

from gazette_core.allocator import keys
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.route_ext import unrouted_header
from gazette_core.consumer.api.errors import ShardStoppedError
from gazette_core.consumer.api.host import ShardResolution
from gazette_core.consumer.api.list import assignments_of, route_of
from gazette_core.consumer.api.servicer import add_shard_servicer
from gazette_core.consumer.keyspace_decode import consumer_decoder
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.protocol import consumer_pb2_grpc as cpb_grpc
from gazette_core.keyspace import etcd_util
from gazette_core.keyspace.keyspace import KeySpace
from tests.consumer.api.specs import consumer

ROOT = "/gazette/consumers/test"


@dataclass
class FakeReplica:
    """A local primary: its progress, and whether its loop has stopped."""

    read_through: dict[str, int] = field(default_factory=dict)
    publish_at: dict[str, int] = field(default_factory=dict)
    stopped: bool = False
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def advance(self, **progress: int) -> None:
        self.read_through.update({k.replace("__", "/"): v for k, v in progress.items()})
        self.changed.set()

    def stop(self) -> None:
        self.stopped = True
        self.changed.set()


class FakeHost:
    """One consumer process's view: process id, KeySpace, and its local primaries."""

    def __init__(self, etcd: aetcd.Client, keyspace: KeySpace, suffix: str, journals: Any
                 ) -> None:
        self.etcd = etcd
        self.keyspace = keyspace
        self.root = ROOT
        self.process_id = pb.ProcessSpec.ID(zone="zone", suffix=suffix)
        self.journals = journals
        self.replicas: dict[str, FakeReplica] = {}
        self.channels: list[grpc.aio.Channel] = []

    def resolve(self, shard: str, *, proxied_header: pb.Header | None) -> ShardResolution:
        kv = self.keyspace.get(keys.item_key(self.root, shard))
        if kv is None:
            return ShardResolution(cpb.SHARD_NOT_FOUND,
                                   unrouted_header(self.process_id, self.keyspace.header))
        route = route_of(self, assignments_of(self, shard))
        header = pb.Header(process_id=self.process_id, route=route, etcd=self.keyspace.header)
        if route.primary == -1:
            return ShardResolution(cpb.NO_SHARD_PRIMARY, header)
        if route.members[route.primary] == self.process_id:
            replica = self.replicas.setdefault(shard, FakeReplica())
            return ShardResolution(cpb.OK, header, replica=replica)
        channel = grpc.aio.insecure_channel(route.endpoints[route.primary].split("://")[-1])
        self.channels.append(channel)
        return ShardResolution(cpb.OK, header, stub=cpb_grpc.ShardStub(channel))

    async def stat(self, replica: Any, read_through: dict[str, int]
                   ) -> tuple[dict[str, int], dict[str, int]]:
        assert isinstance(replica, FakeReplica)
        while True:
            if replica.stopped:
                raise ShardStoppedError()
            if all(replica.read_through.get(j, 0) >= o for j, o in read_through.items()):
                return dict(replica.read_through), dict(replica.publish_at)
            replica.changed.clear()
            await replica.changed.wait()


@dataclass
class Process:
    """A served FakeHost and a client stub of its Shard service."""

    host: FakeHost
    endpoint: str
    stub: cpb_grpc.ShardStub


@asynccontextmanager
async def serving(etcd: aetcd.Client, suffixes: Sequence[str], journals: Any = None,
                  interceptors: Sequence[grpc.aio.ServerInterceptor] = ()
                  ) -> AsyncIterator[list[Process]]:
    """One served process per suffix, each with its member key and its own KeySpace."""
    # Clients close before any server stops, so no open channel sees a GOAWAY.
    async with AsyncExitStack() as stack, AsyncExitStack() as clients:
        out = []
        for suffix in suffixes:
            keyspace = await stack.enter_async_context(
                KeySpace(etcd, ROOT + "/", consumer_decoder(ROOT)))
            host = FakeHost(etcd, keyspace, suffix, journals)
            server = grpc.aio.server(interceptors=list(interceptors))
            add_shard_servicer(server, host)
            port = server.add_insecure_port("127.0.0.1:0")
            await server.start()
            stack.push_async_callback(server.stop, None)
            endpoint = f"http://127.0.0.1:{port}"
            member = consumer("zone", suffix, endpoint)
            await etcd.put(keys.member_key(ROOT, "zone", suffix).encode(),
                           member.SerializeToString())
            channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
            clients.push_async_callback(channel.close)
            clients.push_async_callback(_close_all, host)
            out.append(Process(host, endpoint, cpb_grpc.ShardStub(channel)))
        yield out


async def _close_all(host: FakeHost) -> None:
    for channel in host.channels:
        await channel.close()


async def put_shard(etcd: aetcd.Client, spec: cpb.ShardSpec) -> int:
    """Write a ShardSpec directly; its mod revision."""
    key = keys.item_key(ROOT, spec.id).encode()
    await etcd.put(key, spec.SerializeToString())
    got = await etcd.get(key)
    assert got is not None
    return int(got.mod_revision)


async def put_assignment(etcd: aetcd.Client, shard: str, suffix: str, slot: int,
                         status: cpb.ReplicaStatus | None = None) -> str:
    """Write an assignment of `shard` to `zone#suffix`; its key."""
    key = keys.assign_key(ROOT, shard, "zone", suffix, slot)
    await etcd.put(key.encode(), status.SerializeToString() if status else b"")
    return key


async def synced(processes: Sequence[Process], etcd: aetcd.Client) -> None:
    """Wait until every process's KeySpace has seen etcd's current revision."""
    revision = (await etcd_util.get_prefix(etcd, ROOT + "/")).header.revision
    for proc in processes:
        await proc.host.keyspace.wait_for_revision(revision, timeout=5)
