"""Streaming an append's content through the pipeline and committing it.

Content chunks become uncommitted spool content at every replica; the commit
proposal makes them visible. Whatever else ends the stream (EOF without the
commit message, a protocol violation, a stalled or cancelled client) drops
the uncommitted content everywhere by re-proposing the committed fragment; a
failed peer aborts the whole pipeline instead. Chunks are paced to the
journal's maximum append rate (`append_throttle`).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from gazette_core.broker import metrics
from gazette_core.broker.append_throttle import AppendThrottle
from gazette_core.broker.pipeline import Acknowledgement, Pipeline
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.flags_ext import may_write
from gazette_core.broker.protocol.fragment_ext import sha1_to_sum
from gazette_core.broker.protocol.labels_ext import subtract_label_sets, union_label_sets
from gazette_core.broker.protocol.validate_ext import validate_append_request
from gazette_core.broker.resolver import Resolution
from gazette_core.errors import GazetteError, ValidationError

_Suspend = pb.AppendRequest
NO_CONTENT_MODES = (_Suspend.SUSPEND_IF_FLUSHED, _Suspend.SUSPEND_NOW, _Suspend.SUSPEND_KEEP)
# A client must stream at least --broker.min-append-rate bytes a second once
# this initial credit is spent, or its append is rolled back (it would
# otherwise hold the journal's pipeline).
MIN_RATE_CREDIT_S = 1.0
MIN_RATE_REASON = "client stream didn't sustain the minimum append data rate"


class AppendStreamError(GazetteError):
    """The client broke the Append stream protocol; the append is rolled back."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"append stream: {reason}")


async def next_request(requests: AsyncIterator[pb.AppendRequest]) -> pb.AppendRequest | None:
    try:
        return await requests.__anext__()
    except StopAsyncIteration:
        return None


@dataclass
class PendingCommit:
    """An append whose commit proposal was sent: its response, once peers acknowledge."""

    ack: Acknowledgement
    response: pb.AppendResponse

    async def finish(self, pln: Pipeline) -> pb.AppendResponse:
        """The response, after every replica acknowledged the commit."""
        pln.require_ok(await self.ack.responses(), "commit")
        commit = self.response.commit
        metrics.APPEND_COMMITS.value += 1
        metrics.APPEND_COMMITTED_BYTES.value += commit.end - commit.begin
        replica = pln.replica
        if replica.write_head_gauge is None:
            replica.write_head_gauge = metrics.WRITE_HEAD.cell(replica.journal)
        replica.write_head_gauge.value = commit.end
        return self.response


async def stream_and_commit(pln: Pipeline, res: Resolution, first: pb.AppendRequest,
                            requests: AsyncIterator[pb.AppendRequest], min_rate: int,
                            throttle: AppendThrottle | None = None
                            ) -> pb.AppendResponse | PendingCommit:
    """Replicate the content and send its commit; anything short of that is rolled back.

    The client must stream at `min_rate` bytes a second (0: any rate); the
    `throttle` paces its chunks. The caller may release the pipeline once
    this returns a PendingCommit, and awaits its acknowledgements outside of it.
    """
    spool = pln.replica.spool
    begin = spool.fragment.end
    digest = hashlib.sha1()
    ack: Acknowledgement | None = None
    try:
        outcome = await _stream_content(pln, first, requests, digest, _MinRate(min_rate),
                                        throttle)
        if isinstance(outcome, pb.AppendResponse):
            outcome.header.CopyFrom(res.header)
            return outcome
        registers = _next_registers(pln, first)
        ack = await pln.send_proposal(spool.proposal_with_delta(), registers)
    finally:
        if ack is None and (spool.delta or pln.broken):
            await pln.roll_back()
    commit = pb.Fragment(journal=pln.replica.journal, begin=begin, end=spool.fragment.end,
                         sum=sha1_to_sum(digest.digest()),
                         compression_codec=spool.fragment.compression_codec)
    return PendingCommit(ack, pb.AppendResponse(
        status=pb.OK, header=res.header, commit=commit, registers=spool.registers,
        total_chunks=outcome, delayed_chunks=throttle.delayed if throttle else 0))


async def _stream_content(pln: Pipeline, first: pb.AppendRequest,
                          requests: AsyncIterator[pb.AppendRequest],
                          digest: hashlib._Hash, rate: _MinRate,
                          throttle: AppendThrottle | None) -> int | pb.AppendResponse:
    """Replicate content chunks until the empty commit message and EOF; the chunk count."""
    chunks = 0
    spool = pln.replica.spool
    writable = may_write(pln.replica.spec)
    try:
        while (req := await rate.next(requests)) is not None:
            _check_follow_up(req)
            if not req.content:
                if await rate.next(requests) is not None:
                    raise AppendStreamError("expected EOF after empty Content chunk")
                return chunks
            if not writable or first.suspend in NO_CONTENT_MODES:
                return pb.AppendResponse(status=pb.NOT_ALLOWED)
            if throttle is not None:
                rate.pause(await throttle.admit(len(req.content)))
            await pln.scatter(pb.ReplicateRequest(content=req.content,
                                                  content_delta=spool.delta))
            digest.update(req.content)
            metrics.APPEND_RECEIVED_BYTES.value += len(req.content)
            rate.received += len(req.content)
            chunks += 1
        raise AppendStreamError("unexpected EOF")
    finally:
        rate.close()


def _check_follow_up(req: pb.AppendRequest) -> None:
    """Refuse a follow-up carrying any field but content (options belong to the first)."""
    if req.journal:
        raise AppendStreamError("expected only Content in follow-up AppendRequests")
    try:
        validate_append_request(req)
    except ValidationError as exc:
        raise AppendStreamError(exc.reason) from None


class _MinRate:
    """Reads the next message no later than the minimum append rate allows.

    One timer serves the whole stream, rather than a timeout per message: it
    is re-armed only when it fires before the deadline, which more content
    received meanwhile pushed back. Only a read in progress is cut short; a
    deadline passed elsewhere ends the next read at once, as a timeout would.
    A `min_rate` of 0 asks for no rate at all.
    """

    def __init__(self, min_rate: int) -> None:
        self.min_rate = min_rate
        self.loop = asyncio.get_running_loop()
        self.start = self.loop.time()
        self.received = 0
        self._task = asyncio.current_task()
        self._cancelling = 0
        self._timer: asyncio.TimerHandle | None = None
        self._reading = self._expired = False

    def deadline(self) -> float:
        return self.start + MIN_RATE_CREDIT_S + self.received / self.min_rate

    def pause(self, seconds: float) -> None:
        """Move the deadline back by `seconds` the broker itself held the stream (throttling)."""
        self.start += seconds

    async def next(self, requests: AsyncIterator[pb.AppendRequest]) -> pb.AppendRequest | None:
        assert self._task is not None
        if self.min_rate <= 0:
            return await next_request(requests)
        if self._timer is None:
            self._cancelling = self._task.cancelling()
            self._timer = self.loop.call_at(self.deadline(), self._on_timer)
        self._reading = True
        try:
            return await next_request(requests)
        except asyncio.CancelledError:
            if self._expired and self._task.uncancel() <= self._cancelling:
                raise AppendStreamError(MIN_RATE_REASON) from None
            raise
        finally:
            self._reading = False

    def _on_timer(self) -> None:
        deadline = self.deadline()
        if self.loop.time() < deadline:
            self._timer = self.loop.call_at(deadline, self._on_timer)
        elif not self._reading:
            self._timer = None  # the next read arms it again, already due
        elif not self._expired:
            self._expired = True
            assert self._task is not None
            self._task.cancel()

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def _next_registers(pln: Pipeline, req: pb.AppendRequest) -> pb.LabelSet:
    current = pln.replica.spool.registers
    if not (req.HasField("union_registers") or req.HasField("subtract_registers")):
        return current
    if pln.replica.spool.delta == 0:
        if req.union_registers.labels or req.subtract_registers.labels:
            raise AppendStreamError("register modification requires non-empty Append")
        return current
    return union_label_sets(subtract_label_sets(current, req.subtract_registers),
                            req.union_registers)
