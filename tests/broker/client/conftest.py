"""Fixtures: fake brokers on 127.0.0.1:0 and a Journal stub connected to the first."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, cast

import grpc
import pytest_asyncio

from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from tests.broker.client.fake_broker import FakeBroker

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub


@pytest_asyncio.fixture(loop_scope="session")
async def broker() -> AsyncIterator[FakeBroker]:
    fake = FakeBroker()
    await fake.start()
    yield fake
    await fake.stop()


@pytest_asyncio.fixture(loop_scope="session")
async def peer() -> AsyncIterator[FakeBroker]:
    """A second fake broker, for calls routed away from the first."""
    fake = FakeBroker()
    await fake.start()
    yield fake
    await fake.stop()


@pytest_asyncio.fixture(loop_scope="session")
async def stub(broker: FakeBroker) -> AsyncIterator[JournalAsyncStub]:
    channel = grpc.aio.insecure_channel(broker.address)
    yield cast("JournalAsyncStub", pb_grpc.JournalStub(channel))
    await channel.close()
