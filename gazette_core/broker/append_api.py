"""The Append RPC: one atomic append of a client stream into a journal's spool.

Stream shape and precondition order follow broker.md 2.2. Content is applied
to the spool as uncommitted bytes while it arrives; only the final commit
proposal makes it visible to readers, so a client that disconnects mid-append
leaves nothing behind.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.fragment_ext import sha1_to_sum
from gazette_core.broker.protocol.labels_ext import (
    matches,
    subtract_label_sets,
    union_label_sets,
)
from gazette_core.broker.protocol.validate_ext import validate_append_request
from gazette_core.broker.replica import Replica
from gazette_core.broker.resolver import Resolution
from gazette_core.errors import GazetteError

if TYPE_CHECKING:
    from gazette_core.broker.service import Broker

_Suspend = pb.AppendRequest
# A client must stream at least this fast once its initial credit is spent, or
# its append is rolled back (it would otherwise hold the journal's pipeline).
MIN_APPEND_RATE = 64 * 1024
MIN_RATE_CREDIT_S = 1.0
NO_CONTENT_MODES = (_Suspend.SUSPEND_IF_FLUSHED, _Suspend.SUSPEND_NOW, _Suspend.SUSPEND_KEEP)


class AppendStreamError(GazetteError):
    """The client broke the Append stream protocol; the append is rolled back."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"append stream: {reason}")


def may_write(spec: pb.JournalSpec) -> bool:
    return spec.flags in (pb.JournalSpec.NOT_SPECIFIED, pb.JournalSpec.O_WRONLY,
                          pb.JournalSpec.O_RDWR)


def may_read(spec: pb.JournalSpec) -> bool:
    return spec.flags != pb.JournalSpec.O_WRONLY


async def serve_append(broker: Broker, requests: AsyncIterator[pb.AppendRequest]
                       ) -> pb.AppendResponse:
    """Run one Append RPC to completion and return its response."""
    first = await _next(requests)
    if first is None:
        raise AppendStreamError("unexpected EOF")
    validate_append_request(first)
    res = await broker.resolve_for_append(first)
    if res.status != pb.OK:
        return pb.AppendResponse(status=res.status, header=res.header)
    replica = res.replica
    assert replica is not None  # resolve_for_append guarantees a local primary
    async with replica.pipeline_lock:
        await replica.index.wait_first_refresh()
        await broker.sync_pipeline(replica, res)
        status = _check_preconditions(replica, res, first)
        if status is not None:
            return status
        _maybe_roll(replica)
        return await _stream_and_commit(replica, res, first, requests)


async def _next(requests: AsyncIterator[pb.AppendRequest]) -> pb.AppendRequest | None:
    try:
        return await requests.__anext__()
    except StopAsyncIteration:
        return None


def _check_preconditions(replica: Replica, res: Resolution, req: pb.AppendRequest
                         ) -> pb.AppendResponse | None:
    """Register, offset and suspension preconditions, in Gazette's order."""
    spool, spec = replica.spool, replica.spec
    if (req.HasField("check_registers") and spool.registers.labels
            and not matches(req.check_registers, spool.registers)):
        return pb.AppendResponse(status=pb.REGISTER_MISMATCH, header=res.header,
                                 registers=spool.registers)
    if spec.HasField("suspend") and spool.fragment.end < spec.suspend.offset:
        replica.roll(spec.suspend.offset, spec.fragment.compression_codec)
    max_offset = max(spool.fragment.end, replica.index.end_offset)
    if spool.fragment.end != max_offset and req.offset == 0 and may_write(spec):
        return pb.AppendResponse(status=pb.INDEX_HAS_GREATER_OFFSET, header=res.header)
    if req.offset != 0 and req.offset != max_offset:
        return pb.AppendResponse(status=pb.WRONG_APPEND_OFFSET, header=res.header)
    if req.offset == max_offset and spool.fragment.end != max_offset:
        replica.roll(max_offset, spec.fragment.compression_codec)
    level = spec.suspend.level if spec.HasField("suspend") else pb.JournalSpec.Suspend.NONE
    if req.suspend == _Suspend.SUSPEND_NO_RESUME and level != pb.JournalSpec.Suspend.NONE:
        return pb.AppendResponse(status=pb.SUSPENDED, header=res.header)
    return None


def _maybe_roll(replica: Replica) -> None:
    """Roll before new content: empty spool, over-length, flush bucket, or first fragment."""
    spool, spec = replica.spool, replica.spec
    length = spool.content_length()
    first_fragment = length > 0 and spool.fragment.begin == replica.index.begin_offset
    if (length == 0 or length > spec.fragment.length or replica.flush_due()
            or first_fragment):
        replica.roll(spool.fragment.end, spec.fragment.compression_codec)


async def _stream_and_commit(replica: Replica, res: Resolution, first: pb.AppendRequest,
                             requests: AsyncIterator[pb.AppendRequest]) -> pb.AppendResponse:
    begin = replica.spool.fragment.end
    digest = hashlib.sha1()
    chunks = 0
    committed = False
    try:
        status = await _stream_content(replica, first, requests, digest)
        if isinstance(status, pb.AppendResponse):
            status.header.CopyFrom(res.header)
            return status
        chunks = status
        registers = _next_registers(replica, first)
        proposal = replica.spool.proposal_with_delta()
        resp = replica.apply(pb.ReplicateRequest(proposal=proposal, registers=registers,
                                                 acknowledge=True))
        if resp.status != pb.OK:
            raise AppendStreamError(f"commit proposal rejected: {pb.Status.Name(resp.status)}")
        committed = True
    finally:
        if not committed:
            _rollback(replica)
    commit = pb.Fragment(journal=replica.journal, begin=begin, end=replica.spool.fragment.end,
                         sum=sha1_to_sum(digest.digest()),
                         compression_codec=replica.spool.fragment.compression_codec)
    return pb.AppendResponse(status=pb.OK, header=res.header, commit=commit,
                             registers=replica.spool.registers, total_chunks=chunks)


async def _stream_content(replica: Replica, first: pb.AppendRequest,
                          requests: AsyncIterator[pb.AppendRequest],
                          digest: hashlib._Hash) -> int | pb.AppendResponse:
    """Apply content chunks until the empty commit message and EOF; return the chunk count."""
    chunks = 0
    spool = replica.spool
    writable = may_write(replica.spec)
    rate = _MinRate()
    while (req := await rate.next(requests)) is not None:
        if req.journal or req.HasField("header") or req.offset or req.suspend:
            raise AppendStreamError("expected only Content in follow-up AppendRequests")
        if not req.content:
            if await rate.next(requests) is not None:
                raise AppendStreamError("expected EOF after empty Content chunk")
            return chunks
        if not writable or first.suspend in NO_CONTENT_MODES:
            return pb.AppendResponse(status=pb.NOT_ALLOWED)
        replica.apply(pb.ReplicateRequest(content=req.content, content_delta=spool.delta))
        digest.update(req.content)
        rate.received += len(req.content)
        chunks += 1
    raise AppendStreamError("unexpected EOF")


class _MinRate:
    """Reads the next message no later than the minimum append rate allows."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.start = self.loop.time()
        self.received = 0

    async def next(self, requests: AsyncIterator[pb.AppendRequest]) -> pb.AppendRequest | None:
        deadline = self.start + MIN_RATE_CREDIT_S + self.received / MIN_APPEND_RATE
        try:
            async with asyncio.timeout_at(deadline):
                return await _next(requests)
        except TimeoutError:
            raise AppendStreamError(
                "client stream didn't sustain the minimum append data rate") from None


def _next_registers(replica: Replica, req: pb.AppendRequest) -> pb.LabelSet:
    current = replica.spool.registers
    if not (req.HasField("union_registers") or req.HasField("subtract_registers")):
        return current
    if replica.spool.delta == 0:
        if req.union_registers.labels or req.subtract_registers.labels:
            raise AppendStreamError("register modification requires non-empty Append")
        return current
    return union_label_sets(subtract_label_sets(current, req.subtract_registers),
                            req.union_registers)


def _rollback(replica: Replica) -> None:
    """Discard uncommitted content by re-proposing the unchanged fragment."""
    spool = replica.spool
    if spool.delta:
        replica.apply(pb.ReplicateRequest(proposal=spool.fragment, registers=spool.registers,
                                          acknowledge=True))
