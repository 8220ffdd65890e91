"""The Append RPC: resolution, proxying, pipeline sync and preconditions.

Order follows docs/design/append.md: resolve as primary (proxying the whole stream
to the primary when that is another broker), take the journal's pipeline,
synchronise it, check preconditions, maybe roll, then stream and send the
commit (`append_stream`). The pipeline is released before the commit's
acknowledgements are read, so the next append streams meanwhile.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from gazette_core.broker import suspension
from gazette_core.broker.append_pipeline import oversized, resolve_for_append, sync_pipeline
from gazette_core.broker.append_queue import await_follow_up, pipeline_turn
from gazette_core.broker.append_stream import (
    NO_CONTENT_MODES,
    AppendStreamError,
    PendingCommit,
    next_request,
    stream_and_commit,
)
from gazette_core.broker.append_throttle import AppendThrottle, effective_rate
from gazette_core.broker.fragment.spool_file import SpoolFullError
from gazette_core.broker.pipeline import Pipeline, PipelineError
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.flags_ext import may_write
from gazette_core.broker.protocol.labels_ext import matches
from gazette_core.broker.protocol.route_ext import route_equivalent
from gazette_core.broker.protocol.validate_ext import validate_append_request
from gazette_core.broker.proxy import proxy_append
from gazette_core.broker.resolver import Resolution

if TYPE_CHECKING:
    from gazette_core.broker.service import Broker

__all__ = ["AppendStreamError", "serve_append"]


async def serve_append(broker: Broker, requests: AsyncIterator[pb.AppendRequest]
                       ) -> pb.AppendResponse:
    """Run one Append RPC to completion and return its response."""
    first = await next_request(requests)
    if first is None:
        raise AppendStreamError("unexpected EOF")
    validate_append_request(first)
    # Before any queueing for the pipeline: an idle client must delay nobody.
    requests, second = await await_follow_up(requests, broker.config.min_append_rate > 0)
    # Known before any suspension is written, so that bad input changes nothing.
    content = (first.suspend in NO_CONTENT_MODES and second is not None
               and bool(second.content))
    while True:
        res = await resolve_for_append(broker, first)
        if res.status != pb.OK:
            return pb.AppendResponse(status=res.status, header=res.header)
        if res.header.process_id != broker.process_id:
            return await proxy_append(broker, res, first, requests)
        if content:
            return pb.AppendResponse(status=pb.NOT_ALLOWED, header=res.header)
        outcome = await _append_as_primary(broker, res, first, requests)
        if isinstance(outcome, pb.AppendResponse):
            return outcome
        if outcome is not None:
            return await _await_commit(*outcome)


async def _append_as_primary(broker: Broker, res: Resolution, first: pb.AppendRequest,
                             requests: AsyncIterator[pb.AppendRequest]
                             ) -> pb.AppendResponse | tuple[Pipeline, PendingCommit] | None:
    """Stream the append through the journal's pipeline, holding it until the commit is sent.

    None means resolve again: a peer knew a newer route, or the route has
    more members than desired and the allocator is shrinking it.
    """
    replica = res.replica
    assert replica is not None  # resolve_for_append guarantees a local primary
    async with pipeline_turn(replica, broker.config.max_append_queue):
        # Health first: an unusable store never completes a first listing.
        refusal = await _await_store_health(broker, res)
        if refusal is not None:
            return refusal
        await replica.index.wait_first_refresh()
        pipeline = await sync_pipeline(broker, replica, res)
        if pipeline is None:
            return None
        if not oversized(broker, res):
            try:
                outcome = await _append_locked(broker, pipeline, res, first, requests)
            except PipelineError:
                await replica.close_pipeline()  # the next append builds a new one
                raise
            except SpoolFullError:
                await _roll_full_spool(pipeline)
                raise
            if outcome is None or isinstance(outcome, pb.AppendResponse):
                return outcome
            return pipeline, outcome
    # The route was synced and advertised above; now let the allocator shrink it.
    await broker.keyspace.wait_for_change(res.header.etcd.revision)
    return None


async def _await_commit(pipeline: Pipeline, pending: PendingCommit) -> pb.AppendResponse:
    """The append's response once its commit is acknowledged, outside the pipeline lock."""
    try:
        return await pending.finish(pipeline)
    except PipelineError:
        replica = pipeline.replica
        async with replica.pipeline_lock:
            if replica.pipeline is pipeline:
                await replica.close_pipeline()
        raise


async def _append_locked(broker: Broker, pln: Pipeline, res: Resolution,
                         first: pb.AppendRequest, requests: AsyncIterator[pb.AppendRequest]
                         ) -> pb.AppendResponse | PendingCommit | None:
    """Preconditions, suspension, then the append itself; None means resolve again."""
    refusal = await _check_preconditions(pln, res, first)
    if refusal is not None:
        return refusal
    step = suspension.decide(first.suspend, pln.replica)
    if step.write is not None:
        if step.roll:  # so that the content of the spool persists before the route shrinks
            await pln.roll(pln.replica.spool.fragment.end,
                           pln.replica.spec.fragment.compression_codec)
        await suspension.write_suspend(broker, res, step.write)
        return None
    if step.refuse:
        return pb.AppendResponse(status=step.status, header=res.header)
    await _maybe_roll(pln)
    outcome = await stream_and_commit(pln, res, first, requests, broker.config.min_append_rate,
                                      _throttle(broker, pln, res))
    if isinstance(outcome, PendingCommit) and step.status != pb.OK:
        outcome.response.status = step.status
    return outcome


def _throttle(broker: Broker, pln: Pipeline, res: Resolution) -> AppendThrottle:
    """The pacing of this append: the journal's rate as its spec says now, capped by the
    broker's, until the journal's route moves away from the pipeline's."""
    replica = pln.replica
    resolver = broker.resolver

    def rate() -> int:
        return effective_rate(replica.spec.max_append_rate, broker.config.max_append_rate)

    def route_changed() -> bool:
        current = resolver.route_of(resolver.assignments_of(replica.journal))
        return not route_equivalent(current, res.route)

    return AppendThrottle(replica.append_bank, rate, route_changed)


async def _await_store_health(broker: Broker, res: Resolution) -> pb.AppendResponse | None:
    """Wait until the journal's first store is healthy; a refusal if it stays unhealthy."""
    assert res.spec is not None
    if not res.spec.fragment.stores:
        return None
    error = await broker.store_health.health(res.spec.fragment.stores[0]).await_healthy()
    if not error:
        return None
    return pb.AppendResponse(status=pb.FRAGMENT_STORE_UNHEALTHY, header=res.header,
                             store_health_error=error)


async def _check_preconditions(pln: Pipeline, res: Resolution, req: pb.AppendRequest
                               ) -> pb.AppendResponse | None:
    """Register and offset preconditions, in Gazette's order."""
    replica = pln.replica
    spool, spec = replica.spool, replica.spec
    codec = spec.fragment.compression_codec
    if (req.HasField("check_registers") and spool.registers.labels
            and not matches(req.check_registers, spool.registers)):
        return pb.AppendResponse(status=pb.REGISTER_MISMATCH, header=res.header,
                                 registers=spool.registers)
    if spec.HasField("suspend") and spool.fragment.end < spec.suspend.offset:
        await pln.roll(spec.suspend.offset, codec)
    max_offset = max(spool.fragment.end, replica.index.end_offset)
    if spool.fragment.end != max_offset and req.offset == 0 and may_write(spec):
        return pb.AppendResponse(status=pb.INDEX_HAS_GREATER_OFFSET, header=res.header)
    if req.offset != 0 and req.offset != max_offset:
        return pb.AppendResponse(status=pb.WRONG_APPEND_OFFSET, header=res.header)
    if req.offset == max_offset and spool.fragment.end != max_offset:
        await pln.roll(max_offset, codec)
    return None


async def _maybe_roll(pln: Pipeline) -> None:
    """Roll before new content: empty spool, over-length, flush bucket, first fragment or full."""
    replica = pln.replica
    spool, spec = replica.spool, replica.spec
    length = spool.content_length()
    first_fragment = length > 0 and spool.fragment.begin == replica.index.begin_offset
    if (length == 0 or length > spec.fragment.length or replica.flush_due()
            or first_fragment or spool.full):
        await pln.roll(spool.fragment.end, spec.fragment.compression_codec)


async def _roll_full_spool(pln: Pipeline) -> None:
    """Roll at once after a full disk: the rolled content persists and its file frees its space.

    Failing that, the next append rolls first (the spool stays marked full).
    """
    try:
        await _maybe_roll(pln)
    except PipelineError:
        await pln.replica.close_pipeline()
    except SpoolFullError:
        pass  # not even an empty spool file fits
