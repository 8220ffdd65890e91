"""In-process brokers for tests and benchmarks, on loopback with a real etcd."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace

import grpc

from gazette_core.broker.config import BrokerConfig
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.protocol.durations_ext import from_seconds
from gazette_core.broker.service import Broker

_ids = itertools.count(1)


def broker_config(etcd_endpoint: str, file_root: str, **overrides: object) -> BrokerConfig:
    """A broker config on 127.0.0.1 with a free port (gRPC and HTTP) and a short lease.

    Etcd changes apply as soon as they arrive (no watch delay): tests wait for
    what they caused, and one process's view of another's changes should not
    lag more than it must.
    """
    base = BrokerConfig(host="127.0.0.1", port=0, zone="local", id=f"broker-{next(_ids):03d}",
                        file_root=file_root, etcd_address=etcd_endpoint, etcd_lease=5,
                        watch_delay=0)
    return replace(base, **overrides)  # type: ignore[arg-type]


@asynccontextmanager
async def running_broker(config: BrokerConfig, drain_timeout: float = 2.0
                         ) -> AsyncIterator[Broker]:
    """A started broker, stopped (drained, spools persisted, lease revoked) on exit.

    Test clusters are torn down whole, so draining is kept short by default.
    """
    broker = Broker(config)
    await broker.start()
    try:
        yield broker
    finally:
        await broker.stop(drain_timeout)


@asynccontextmanager
async def journal_stub(endpoint: str) -> AsyncIterator[pb_grpc.JournalStub]:
    """A Journal client stub on its own channel to `endpoint` (http://host:port)."""
    target = endpoint.split("://", 1)[-1]
    async with grpc.aio.insecure_channel(target) as channel:
        yield pb_grpc.JournalStub(channel)


def journal_spec(name: str, *, stores: tuple[str, ...] = ("file:///",), length: int = 1 << 20,
                 codec: int = pb.NONE, refresh_s: float = 1.0, replication: int = 1,
                 labels: tuple[tuple[str, str], ...] = ()) -> pb.JournalSpec:
    """A valid JournalSpec with test-friendly defaults."""
    spec = pb.JournalSpec(name=name, replication=replication)
    for lname, value in sorted(labels):
        spec.labels.labels.add(name=lname, value=value)
    spec.fragment.length = length
    spec.fragment.compression_codec = codec  # type: ignore[assignment]
    spec.fragment.stores.extend(stores)
    spec.fragment.refresh_interval.CopyFrom(from_seconds(refresh_s))
    return spec
