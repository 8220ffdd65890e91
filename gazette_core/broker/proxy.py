"""Proxying: forward Append, Read and ListFragments to the broker that can serve them.

The request carries this broker's resolution as its `header`, which the peer
verifies (same Etcd cluster, addressed to it or to any member) and uses to
wait for the revision we resolved at. Responses are relayed unchanged.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import grpc

from gazette_core.broker.client.call_status import StatusKeeper
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.resolver import Resolution
from gazette_core.errors import CodedError, GazetteError
from gazette_core.server import auth
from gazette_core.server.statuses import TRANSIENT

if TYPE_CHECKING:
    from gazette_core.broker.service import Broker


class ProxyError(GazetteError):
    """The peer we proxied to failed; the client may retry."""

    retriable = True


def _endpoint(res: Resolution, member: pb.ProcessSpec.ID) -> str:
    for index, m in enumerate(res.route.members):
        if m == member and index < len(res.route.endpoints) and res.route.endpoints[index]:
            return str(res.route.endpoints[index])
    raise ProxyError(f"no endpoint for {member.zone}#{member.suffix} of {res.journal}")


def read_target(broker: Broker, res: Resolution) -> pb.ProcessSpec.ID:
    """A route member to read from: one in our zone if there is one, else the primary."""
    members = list(res.route.members)
    same_zone = [m for m in members if m.zone == broker.process_id.zone]
    if same_zone:
        return same_zone[0]
    return members[res.route.primary] if res.route.primary >= 0 else members[0]


def _error(exc: grpc.aio.AioRpcError, what: str) -> GazetteError:
    """The error relaying a failed proxied call.

    Only transport trouble is retriable; whatever the peer answered itself
    (a protocol error, a refusal) keeps its code and text, as Go relays it.
    """
    if exc.code() in TRANSIENT:
        return ProxyError(f"proxying {what}: {exc.code().name}: {exc.details()}")
    return CodedError(exc.code().name, exc.details() or f"proxying {what}: {exc.code().name}")


async def proxy_append(broker: Broker, res: Resolution, first: pb.AppendRequest,
                       requests: AsyncIterator[pb.AppendRequest]) -> pb.AppendResponse:
    """Relay a whole Append stream to the primary and return its response."""
    stub = broker.peer_stub(_endpoint(res, res.header.process_id))
    head = pb.AppendRequest()
    head.CopyFrom(first)
    head.header.CopyFrom(res.header)

    refused: list[GazetteError] = []

    async def relay() -> AsyncIterator[pb.AppendRequest]:
        yield head
        try:
            async for req in requests:
                yield req
        except GazetteError as exc:
            # The client's own stream failed (e.g. an undecodable message): gRPC
            # would leave the upstream call open, so end it, rolling the append back.
            refused.append(exc)
            call.cancel()

    call = stub.Append(relay(), metadata=broker.security.peer_metadata(res.journal, auth.APPEND))
    status = StatusKeeper(call)
    try:
        resp: pb.AppendResponse = await call
    except (grpc.aio.AioRpcError, asyncio.CancelledError) as exc:
        if refused:
            raise refused[0] from None
        if isinstance(exc, asyncio.CancelledError):
            raise
        raise _error(status.error(exc), f"Append of {res.journal}") from None
    return resp


async def proxy_read(broker: Broker, res: Resolution, req: pb.ReadRequest,
                     target: pb.ProcessSpec.ID | None = None) -> AsyncIterator[pb.ReadResponse]:
    """Relay a Read to `target`, by default the member `read_target` picks."""
    member = target if target is not None else read_target(broker, res)
    stub = broker.peer_stub(_endpoint(res, member))
    forwarded = pb.ReadRequest()
    forwarded.CopyFrom(req)
    forwarded.header.CopyFrom(res.header)
    if target is not None:
        forwarded.header.process_id.CopyFrom(target)  # addressed to it, as it verifies
    try:
        metadata = broker.security.peer_metadata(res.journal, auth.READ)
        async for resp in stub.Read(forwarded, metadata=metadata):
            yield resp
    except grpc.aio.AioRpcError as exc:
        raise _error(exc, f"Read of {res.journal}") from None


async def proxy_list_fragments(broker: Broker, res: Resolution, req: pb.FragmentsRequest
                               ) -> pb.FragmentsResponse:
    stub = broker.peer_stub(_endpoint(res, read_target(broker, res)))
    forwarded = pb.FragmentsRequest()
    forwarded.CopyFrom(req)
    forwarded.header.CopyFrom(res.header)
    try:
        resp: pb.FragmentsResponse = await stub.ListFragments(
            forwarded, metadata=broker.security.peer_metadata(res.journal, auth.READ))
    except grpc.aio.AioRpcError as exc:
        raise _error(exc, f"ListFragments of {res.journal}") from None
    return resp
