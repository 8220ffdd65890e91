"""One consumer process's ConsumerService, run in the test's own event loop.

`stop()` is a graceful exit (shards handed off to standbys); `crash()` is a
death without one: the service is torn down without finishing or handing off
anything, and its Etcd lease is revoked, as when the lease of a killed process
expires, so the allocator reassigns its shards right away.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gazette_core.broker.client.channel import dial
from gazette_core.consumer.config import ConsumerConfig
from gazette_core.consumer.protocol import consumer_pb2_grpc as cpb_grpc
from gazette_core.consumer.service import ConsumerService

ETCD_PREFIX = "/gazette/consumers/testing"


class InProcessConsumer:
    def __init__(self, app: Any, directory: Path, *, etcd_endpoint: str, broker_endpoint: str,
                 lease_s: int, suffix: str, etcd_prefix: str = ETCD_PREFIX) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.app = app
        self.suffix = suffix
        self.config = ConsumerConfig(
            host="127.0.0.1", port=0, zone="local", id=suffix, etcd_address=etcd_endpoint,
            etcd_prefix=etcd_prefix, etcd_lease=lease_s, broker_address=broker_endpoint,
            data_dir=str(directory))
        self.service = ConsumerService(self.config, app)
        self.running = False

    @property
    def endpoint(self) -> str:
        return str(self.service.endpoint)

    async def start(self) -> None:
        await self.service.start()
        self.running = True

    async def stop(self) -> None:
        if self.running:
            self.running = False
            await self.service.stop()

    async def crash(self) -> None:
        if self.running:
            self.running = False
            await self.service.crash()

    def shard_stub(self) -> cpb_grpc.ShardStub:
        return cpb_grpc.ShardStub(dial(self.endpoint))
