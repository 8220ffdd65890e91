"""The Replicate RPC, replica side: apply a primary's stream to the local spool.

The first message carries the primary's header: we resolve the journal at
that revision and refuse with WRONG_ROUTE (and our own header) unless our
Route is equivalent. Then every request is applied to the spool in order;
proposals with `acknowledge` are answered. Uncommitted content is rolled back
when the stream ends, however it ends. A route change that leaves the
stream's sender no longer primary revokes the stream (the replica cancels
it), which ends it with UNAVAILABLE: a frozen or silent primary must not hold
the spool the next primary needs. A full spool disk ends the stream with
RESOURCE_EXHAUSTED only once the primary waits for an answer: ended while
the primary is still writing, the stream would be reset and the primary
would see a bare INTERNAL instead of why.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from gazette_core.broker.fragment.spool_file import SpoolFullError
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.route_ext import route_equivalent
from gazette_core.broker.protocol.validate_ext import validate_replicate_request
from gazette_core.errors import GazetteError

if TYPE_CHECKING:
    from gazette_core.broker.replica import Replica
    from gazette_core.broker.service import Broker


class ReplicateStreamError(GazetteError):
    """The primary broke the Replicate protocol."""


class ReplicateRevokedError(GazetteError):
    """The replica dropped the stream: its sender is no longer primary, or it is stopping."""

    retriable = True


async def serve_replicate(broker: Broker, requests: AsyncIterator[pb.ReplicateRequest]
                          ) -> AsyncIterator[pb.ReplicateResponse]:
    first = await anext(requests, None)
    if first is None:
        return
    validate_replicate_request(first)
    if not first.HasField("header") or not first.HasField("proposal"):
        raise ReplicateStreamError("expected Header and Proposal in the first ReplicateRequest")
    res = await broker.resolver.resolve(first.proposal.journal, require_primary=False,
                                        may_proxy=False, proxy_header=first.header)
    if res.status == pb.OK and not route_equivalent(res.route, first.header.route):
        res.status = pb.WRONG_ROUTE
    if res.status == pb.OK and res.replica is None:
        res.status = pb.NOT_JOURNAL_BROKER
    if res.status != pb.OK:
        yield pb.ReplicateResponse(status=res.status, header=res.header)
        return
    replica = res.replica
    assert replica is not None
    task = asyncio.current_task()
    assert task is not None
    route = first.header.route
    sender = route.members[route.primary] if route.primary >= 0 else None
    replica.streams[task] = None if sender is None else (sender.zone, sender.suffix)
    try:
        async for resp in _replicate(replica, res.header, first, requests):
            yield resp
    except asyncio.CancelledError:
        if not replica.take_revoked(task):
            raise
        task.uncancel()
        raise ReplicateRevokedError(f"replica of {replica.journal} ended the stream: its "
                                    "sender is no longer primary, or the replica is "
                                    "stopping") from None
    finally:
        replica.streams.pop(task, None)
        replica.take_revoked(task)


async def _replicate(replica: Replica, header: pb.Header, first: pb.ReplicateRequest,
                     requests: AsyncIterator[pb.ReplicateRequest]
                     ) -> AsyncIterator[pb.ReplicateResponse]:
    """Apply the stream to the spool, holding it for as long as the primary streams."""
    async with replica.pipeline_lock:
        replica.primary = False
        try:
            resp = _apply(replica, first)
            resp.header.CopyFrom(header)
            yield resp
            full: SpoolFullError | None = None
            async for req in requests:
                validate_replicate_request(req)
                if full is None:
                    try:
                        resp = _apply(replica, req)
                    except SpoolFullError as exc:
                        full = exc
                if full is not None:
                    if req.acknowledge:
                        raise full
                    continue
                if req.acknowledge:
                    yield resp
                elif resp.status != pb.OK:
                    raise ReplicateStreamError(
                        f"unacknowledged proposal failed: {pb.Status.Name(resp.status)}")
            if full is not None:
                raise full
        finally:
            replica.rollback_local()


def _apply(replica: Replica, req: pb.ReplicateRequest) -> pb.ReplicateResponse:
    """Apply `req`; an agreed proposal means the spool now matches the primary's."""
    resp = replica.apply(req)
    if req.HasField("proposal") and resp.status == pb.OK:
        replica.mark_synced()
    return resp
