"""Broker fixtures: an in-process broker on the session's etcd, rooted in tmp_path."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path

import aetcd
import pytest_asyncio

from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.service import Broker
from gazette_core.testing.broker import broker_config, journal_stub, running_broker
from gazette_core.testing.etcd import EtcdServer
from tests.broker.cluster import Cluster


@pytest_asyncio.fixture(loop_scope="session")
async def broker(etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path
                 ) -> AsyncIterator[Broker]:
    async with running_broker(broker_config(etcd_server.endpoint, str(tmp_path))) as b:
        yield b


@pytest_asyncio.fixture(loop_scope="session")
async def stub(broker: Broker) -> AsyncIterator[pb_grpc.JournalStub]:
    async with journal_stub(broker.endpoint) as s:
        yield s


@pytest_asyncio.fixture(loop_scope="session")
async def cluster(etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path
                  ) -> AsyncIterator[Cluster]:
    async with AsyncExitStack() as stack:
        brokers, stubs = [], []
        for i in range(3):
            config = broker_config(etcd_server.endpoint, str(tmp_path), id=f"node-{i}")
            broker = await stack.enter_async_context(running_broker(config))
            brokers.append(broker)
            stubs.append(await stack.enter_async_context(journal_stub(broker.endpoint)))
        yield Cluster(stack, brokers, stubs)
