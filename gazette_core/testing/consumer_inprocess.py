"""One consumer process's ConsumerService, run in the test's own event loop.

`stop()` is a graceful exit: primaries are handed to their standbys. `crash()`
is a death without a hand-off. Every shard task is cancelled where it stands,
so a transaction in flight never commits. The process's leftovers (open stores,
recorders, local files) are released as a dead process's would vanish. Then
its Etcd lease is revoked, as when a killed process's lease expires, and the
allocator moves its shards at once.
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
            host="127.0.0.1", port=0, zone="local", id=suffix,
            etcd_address=etcd_endpoint, etcd_prefix=etcd_prefix, etcd_lease=lease_s,
            broker_address=broker_endpoint, data_dir=str(directory),
            watch_delay=0)  # as broker_config's
        self.service = ConsumerService(self.config, app)
        self.running = False

    @property
    def endpoint(self) -> str:
        return self.service.endpoint

    async def start(self) -> None:
        await self.service.start()
        self.running = True

    async def stop(self) -> None:
        if self.running:
            self.running = False
            await self.service.stop(drain_timeout=10.0)

    async def crash(self) -> None:
        """Die without a hand-off (see the module docstring)."""
        if not self.running:
            return
        self.running = False
        await self.service.crash()

    def shard_stub(self) -> cpb_grpc.ShardStub:
        return cpb_grpc.ShardStub(dial(self.endpoint))
