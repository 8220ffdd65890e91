"""Helpers for broker tests: create journals, append with the Gazette stream shape, read."""

from __future__ import annotations

import asyncio

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.protocol.validate_ext import (
    validate_append_response,
    validate_read_response,
)


async def create(stub: pb_grpc.JournalStub, *specs: pb.JournalSpec) -> pb.ApplyResponse:
    """Create journals and wait until this broker is assigned each of them."""
    resp = await stub.Apply(pb.ApplyRequest(changes=[pb.ApplyRequest.Change(upsert=s)
                                                     for s in specs]))
    assert resp.status == pb.OK
    for spec in specs:
        await wait_assigned(stub, spec.name)
    return resp


async def wait_assigned(stub: pb_grpc.JournalStub, journal: str) -> pb.Route:
    """Block until the journal's route has a primary (the allocator has run).

    Polls plain List calls: a List watch re-sends only when specs change, not
    when assignments do.
    """
    sel = pb.LabelSelector(include=pb.LabelSet(labels=[pb.Label(name="name", value=journal)]))
    for _ in range(500):
        async for resp in stub.List(pb.ListRequest(selector=sel)):
            for j in resp.journals:
                if j.route.primary != -1:
                    return j.route
        await asyncio.sleep(0.02)
    raise AssertionError(f"{journal} was not assigned a primary")


async def append(stub: pb_grpc.JournalStub, journal: str, *chunks: bytes,
                 **first: object) -> pb.AppendResponse:
    """One Append RPC with the Gazette stream shape: header message, content, empty, EOF."""
    msgs = [pb.AppendRequest(journal=journal, **first)]  # type: ignore[arg-type]
    msgs += [pb.AppendRequest(content=c) for c in chunks]
    msgs.append(pb.AppendRequest())
    resp: pb.AppendResponse = await stub.Append(iter(msgs))
    validate_append_response(resp)  # every response must pass Go's client-side checks
    return resp


async def read_all(stub: pb_grpc.JournalStub, req: pb.ReadRequest) -> list[pb.ReadResponse]:
    out = [r async for r in stub.Read(req)]
    for resp in out:
        validate_read_response(resp)
    return out


async def content(stub: pb_grpc.JournalStub, journal: str,
                  served_by: pb.ProcessSpec.ID | None = None) -> bytes:
    """The journal's content to its write head; `served_by` checks who answered."""
    out = await read_all(stub, pb.ReadRequest(journal=journal))
    assert out[-1].status == pb.OFFSET_NOT_YET_AVAILABLE, out[-1]
    if served_by is not None:
        assert out[0].header.process_id == served_by
    return b"".join(r.content for r in out)
