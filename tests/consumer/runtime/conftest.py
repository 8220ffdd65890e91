"""Runtime fixtures: a broker with the test journals, and hosts whose replicas are stopped."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aetcd
import pytest_asyncio

from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.replica import ShardReplica
from tests.broker.conftest import broker, stub  # noqa: F401  (fixtures)
from tests.consumer.runtime.support import (
    Config,
    Gate,
    GatedStub,
    Host,
    Producer,
    create_journals,
)


@dataclass
class Rig:
    etcd: aetcd.Client
    stub: pb_grpc.JournalStub
    gate: Gate
    tmp: Path
    producer: Producer
    replicas: list[ShardReplica] = field(default_factory=list)
    hosts: int = 0

    def host(self, app: Any, **config: Any) -> Host:
        self.hosts += 1
        data_dir = str(self.tmp / f"data-{self.hosts}")
        return Host(self.etcd, GatedStub(self.stub, self.gate), app, Config(data_dir, **config))

    async def replica(self, host: Host, spec: cpb.ShardSpec, suffix: str, slot: int
                      ) -> ShardReplica:
        replica = await host.replica(spec, suffix, slot)
        self.replicas.append(replica)
        return replica


@pytest_asyncio.fixture(loop_scope="session")
async def rig(etcd: aetcd.Client, stub: pb_grpc.JournalStub,  # noqa: F811
              tmp_path: Path) -> AsyncIterator[Rig]:
    await create_journals(stub)
    rig = Rig(etcd, stub, Gate(), tmp_path, Producer(stub))
    try:
        yield rig
    finally:
        rig.gate.open()
        for replica in reversed(rig.replicas):
            await replica.stop()
