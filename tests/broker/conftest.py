"""Broker fixtures: an in-process broker on the session's etcd, rooted in tmp_path."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aetcd
import pytest_asyncio

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.service import Broker
from gazette_core.testing.broker import journal_stub, running_broker, test_config
from gazette_core.testing.etcd import EtcdServer


@pytest_asyncio.fixture(loop_scope="session")
async def broker(etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path
                 ) -> AsyncIterator[Broker]:
    async with running_broker(test_config(etcd_server.endpoint, str(tmp_path))) as b:
        yield b


@pytest_asyncio.fixture(loop_scope="session")
async def stub(broker: Broker) -> AsyncIterator[pb_grpc.JournalStub]:
    async with journal_stub(broker.endpoint) as s:
        yield s


async def create(stub: pb_grpc.JournalStub, *specs: pb.JournalSpec) -> pb.ApplyResponse:
    """Create journals and wait until this broker is assigned each of them."""
    resp = await stub.Apply(pb.ApplyRequest(changes=[pb.ApplyRequest.Change(upsert=s)
                                                     for s in specs]))
    assert resp.status == pb.OK
    for spec in specs:
        await wait_assigned(stub, spec.name)
    return resp


async def wait_assigned(stub: pb_grpc.JournalStub, journal: str) -> pb.Route:
    """Block until the journal's route has a primary (the allocator has run)."""
    sel = pb.LabelSelector(include=pb.LabelSet(labels=[pb.Label(name="name", value=journal)]))
    call = stub.List(pb.ListRequest(selector=sel, watch=True))
    async for resp in call:
        for j in resp.journals:
            if j.route.primary != -1:
                call.cancel()
                return j.route
    raise AssertionError("watch ended")


async def append(stub: pb_grpc.JournalStub, journal: str, *chunks: bytes,
                 **first: object) -> pb.AppendResponse:
    """One Append RPC with the Gazette stream shape: header message, content, empty, EOF."""
    msgs = [pb.AppendRequest(journal=journal, **first)]  # type: ignore[arg-type]
    msgs += [pb.AppendRequest(content=c) for c in chunks]
    msgs.append(pb.AppendRequest())
    return await stub.Append(iter(msgs))


async def read_all(stub: pb_grpc.JournalStub, req: pb.ReadRequest) -> list[pb.ReadResponse]:
    return [r async for r in stub.Read(req)]
