"""The primary's replication pipeline: one Replicate stream per peer, plus its own spool.

Every request is applied to the local spool and written to each peer, in the
same order, so all replicas run the same spool state machine (docs/design/fragments.md#spools).
Proposals sent with `acknowledge` are answered by each peer exactly once.
Appends are pipelined (docs/design/append.md#pipelined-acknowledgements): an append sends its commit
proposal while holding the journal's pipeline, releases it so the next append
can stream, then awaits its `Acknowledgement`. Answers arrive in proposal
order, so whoever waits reads the oldest unanswered proposal's answers,
handing them to their owner, until its own have come. A pipeline is bound
to one Route: when the route changes, the primary closes it and opens a new
one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections import deque
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import grpc

from gazette_core.broker.client.call_status import StatusKeeper
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import GazetteError
from gazette_core.server.statuses import describe

if TYPE_CHECKING:
    from gazette_core.broker.replica import Replica

log = logging.getLogger(__name__)

T = TypeVar("T")

REPLICATE_METHOD = "/protocol.Journal/Replicate"
# A peer that answers nothing for this long is considered broken.
ACK_TIMEOUT_S = 30.0
# How long closing waits for peers to acknowledge the end of their streams.
CLOSE_TIMEOUT_S = 5.0
# How long a failed peer stream may take to report its final status.
SETTLE_S = 1.0


class PipelineError(GazetteError):
    """A peer failed, disagreed or went away; the pipeline must be rebuilt."""

    retriable = True


class PeerSpoolFullError(PipelineError):
    """A peer's spool directory is full; its message names the peer and the directory."""

    retriable = False
    grpc_code = "RESOURCE_EXHAUSTED"


class _Peer:
    """A peer's Replicate stream, the status its broker ended it with, its write in flight."""

    def __init__(self, process_id: pb.ProcessSpec.ID, call: Any) -> None:
        self.process_id = process_id
        self.call = call  # grpc.aio.StreamStreamCall[ReplicateRequest, ReplicateResponse]
        self.status = StatusKeeper(call)
        # The latest write, not awaited by whoever scattered it (see Pipeline.scatter).
        self.sending: asyncio.Future[None] | None = None

    def write(self, data: bytes) -> None:
        """Start writing `data`, after the previous write completed (scatter waits for it)."""
        self.sending = asyncio.ensure_future(self.call.write(data))
        self.sending.add_done_callback(_retrieve)

    async def answer(self) -> Any:
        """The peer's next answer, and the outcome of our latest write to it.

        The read is posted at once, beside the write still in flight: an
        answer that arrives with the write's completion is not held up by
        a second round through the completion queue.
        """
        resp = await self.call.read()
        if self.sending is not None:
            await _written(self.sending)
        return resp


class Pipeline:
    """Replication streams from this primary to the other members of `route`."""

    def __init__(self, replica: Replica, header: pb.Header,
                 dial: Callable[[str], grpc.aio.Channel],
                 ack_timeout: float = ACK_TIMEOUT_S,
                 metadata: Sequence[tuple[str, str]] | None = None,
                 renew_at: float = math.inf) -> None:
        self.replica = replica
        # Authorization of the Replicate streams, and the loop time by which
        # the primary replaces the pipeline, before that authorization expires.
        self.metadata = metadata
        self.renew_at = renew_at
        self.ack_timeout = ack_timeout
        self.header = pb.Header()
        self.header.CopyFrom(header)
        self.route = self.header.route
        self._dial = dial
        self.peers: list[_Peer] = []
        self.broken: BaseException | None = None
        # Acknowledged proposals sent whose answers are not read yet, oldest first.
        self._unanswered: deque[Acknowledgement] = deque()
        self._reading = asyncio.Lock()

    def open(self) -> None:
        """Open a Replicate stream to every member but the primary."""
        for index, member in enumerate(self.route.members):
            if index == self.route.primary:
                continue
            endpoint = self.route.endpoints[index] if index < len(self.route.endpoints) else ""
            if not endpoint:
                raise PipelineError(f"no endpoint for route member {member.zone}#{member.suffix}")
            # Requests go out pre-serialized: content is encoded once for all peers.
            replicate = self._dial(endpoint).stream_stream(
                REPLICATE_METHOD, request_serializer=None,
                response_deserializer=pb.ReplicateResponse.FromString)
            self.peers.append(_Peer(member, replicate(metadata=self.metadata)))

    def first_request(self, peer: _Peer, req: pb.ReplicateRequest) -> pb.ReplicateRequest:
        """`req` as the opening message to `peer`: with our header, addressed to it."""
        first = pb.ReplicateRequest()
        first.CopyFrom(req)
        first.header.CopyFrom(self.header)
        first.header.process_id.CopyFrom(peer.process_id)
        first.deprecated_journal = self.replica.journal
        return first

    async def scatter(self, req: pb.ReplicateRequest, opening: bool = False
                      ) -> pb.ReplicateResponse:
        """Apply `req` locally and start sending it to every peer; returns the local response.

        The writes go out concurrently and are not awaited here: the next
        scatter waits for them (gRPC takes one write at a time per stream),
        and so does reading the peers' answers. So a primary reads its
        client's next message, or sends a commit's acknowledgement, while
        the content is still on its way to the peers.
        """
        if self.peers:
            # Before applying: a commit must not become visible here when the
            # content it covers failed to reach a peer.
            await self._sent()
        local = self.replica.apply(req)
        if self.peers:
            data = req.SerializeToString()
            for p in self.peers:
                p.write(self.first_request(p, req).SerializeToString() if opening else data)
        return local

    async def _sent(self) -> None:
        """Until the previous write to every peer completed; a failed one breaks the pipeline."""
        writes = [p.sending for p in self.peers if p.sending is not None]
        if all(w.done() and not w.cancelled() and w.exception() is None for w in writes):
            return
        await self._all_peers([_written(w) for w in writes], "sending to peers")

    async def gather(self) -> list[pb.ReplicateResponse]:
        """One acknowledgement from each peer, in peer order."""
        responses = await self._all_peers([p.answer() for p in self.peers],
                                          "reading peer acknowledgements")
        for peer, resp in zip(self.peers, responses, strict=True):
            if resp is grpc.aio.EOF:
                raise self._fail(f"peer {peer.process_id.suffix} closed its Replicate stream")
        return list(responses)

    async def _all_peers(self, calls: list[Coroutine[Any, Any, T]], what: str) -> list[T]:
        """Await one operation per peer; on a failure, timeout or cancellation, break.

        A pipeline whose operation did not complete at every peer is broken
        for good, even when its caller was cancelled (a client gave up during
        a roll): a peer's unread answer would otherwise be taken by the next
        proposal as its own. Breaking cancels every peer call, which ends the
        operations still pending; nobody waits for them.
        """
        tasks = [asyncio.ensure_future(c) for c in calls]
        if not tasks:
            return []
        try:
            done, pending = await asyncio.wait(tasks, timeout=self.ack_timeout,
                                               return_when=asyncio.FIRST_EXCEPTION)
        except BaseException:
            self._break(tasks, PipelineError(f"{what}: cancelled"))
            raise
        failed = [e for t in tasks if t in done and (e := t.exception()) is not None]
        if not pending and not failed:
            return [t.result() for t in tasks]
        err = self._fail(f"{what}: {describe(failed[0])}" if failed
                         else f"{what}: no answer within {self.ack_timeout:g}s")
        await _settle([p for p, t in zip(self.peers, tasks, strict=True)
                       if t in done and t.exception() is not None])
        ended = [p for p in self.peers if p.call.done()]  # before the break cancels the rest
        self._break(tasks, err)
        if (full := await self._spool_full(ended)) is not None:
            raise full
        unexpected = [e for e in failed
                      if not isinstance(e, grpc.aio.AioRpcError | asyncio.InvalidStateError)]
        if unexpected:
            raise unexpected[0]
        raise err

    async def _spool_full(self, ended: list[_Peer]) -> PeerSpoolFullError | None:
        """The error of a peer that ended its stream because its spool directory is full."""
        for peer in ended:
            if peer.status.code == grpc.StatusCode.RESOURCE_EXHAUSTED:
                self.replica.spool.full = True  # so that the next pipeline rolls it
                who = f"{peer.process_id.zone}#{peer.process_id.suffix}"
                return PeerSpoolFullError(f"replica {who}: {peer.status.details}")
        return None

    def _break(self, tasks: Sequence[asyncio.Future[Any]], err: PipelineError) -> None:
        """Mark the pipeline broken and cancel every peer call, ending `tasks`."""
        self.broken = self.broken or err
        for peer in self.peers:
            peer.call.cancel()
        for task in tasks:
            task.add_done_callback(_retrieve)

    async def send_proposal(self, proposal: pb.Fragment, registers: pb.LabelSet,
                            opening: bool = False) -> Acknowledgement:
        """Scatter an acknowledged proposal and take the next turn to read its answers."""
        req = pb.ReplicateRequest(proposal=proposal, registers=registers, acknowledge=True)
        ack = Acknowledgement(self, await self.scatter(req, opening))
        if not self.peers and self.broken is None and not self._unanswered:
            ack.answer.set_result([ack.local])  # no replicas to hear from (replication 1)
        else:
            self._unanswered.append(ack)
        return ack

    @property
    def reading(self) -> bool:
        """Whether a waiter is reading peer answers right now."""
        return self._reading.locked()

    async def read_next(self) -> None:
        """Read the oldest unanswered proposal's answers and hand them to it.

        On any failure every unanswered proposal fails with the same error:
        the streams are broken, no later answer can be trusted.
        """
        ack = self._unanswered[0]
        try:
            if self.broken is not None:
                raise PipelineError(str(self.broken))
            peers = await self.gather()
        except BaseException as exc:
            err = exc if isinstance(exc, PipelineError) else PipelineError(
                f"replication pipeline of {self.replica.journal}: {describe(exc)}")
            if isinstance(exc, asyncio.CancelledError):
                err = self._fail("cancelled while reading acknowledgements")
            for pending in self._unanswered:
                pending.fail(err)
            self._unanswered.clear()
            raise
        self._unanswered.popleft()
        ack.answer.set_result([ack.local, *peers])

    async def propose(self, proposal: pb.Fragment, registers: pb.LabelSet,
                      opening: bool = False) -> list[pb.ReplicateResponse]:
        """Scatter an acknowledged proposal; every replica's answer, the local one first."""
        ack = await self.send_proposal(proposal, registers, opening)
        return await ack.responses()

    async def roll_back(self) -> None:
        """Drop uncommitted content at every replica by re-proposing the committed fragment.

        Earlier appends whose acknowledgements are still in flight are
        unaffected. When that isn't possible (a peer already failed, or the
        rollback itself fails or is cancelled) the pipeline is aborted instead.
        """
        spool = self.replica.spool
        try:
            if self.broken is None:
                ack = await self.send_proposal(spool.fragment, spool.registers)
                self.require_ok(await ack.responses(), "rollback")
                return
        except PipelineError:
            pass
        except BaseException:
            self.abort()
            raise
        self.abort()

    async def roll(self, offset: int, codec: int) -> None:
        """Roll every replica to an empty fragment at `offset` with `codec`."""
        spool = self.replica.spool
        self.require_ok(await self.propose(spool.roll_proposal(offset, codec), spool.registers),
                        "roll")

    def require_ok(self, responses: list[pb.ReplicateResponse], what: str) -> None:
        bad = [pb.Status.Name(r.status) for r in responses if r.status != pb.OK]
        if bad:
            raise self._fail(f"{what} refused by replicas: {bad}")

    def abort(self) -> None:
        """Drop uncommitted content locally and cancel every stream (peers then roll back)."""
        self.broken = self.broken or PipelineError("aborted")
        self.replica.rollback_local()
        for peer in self.peers:
            peer.call.cancel()
        self.peers = []

    def _fail(self, reason: str) -> PipelineError:
        err = PipelineError(f"replication pipeline of {self.replica.journal}: {reason}")
        self.broken = err
        return err

    async def close(self) -> None:
        """Let in-flight acknowledgements be read, then roll back, half-close and drain.

        Streams are drained together. Any not ended within CLOSE_TIMEOUT_S, or
        when the caller is cancelled meanwhile, are cancelled: a stream left
        open keeps its replica's spool locked, stalling every later pipeline.
        """
        self.replica.rollback_local()
        peers, tasks = self.peers, []
        try:
            if self._unanswered:
                with contextlib.suppress(PipelineError, TimeoutError):
                    async with asyncio.timeout(CLOSE_TIMEOUT_S):
                        await self._unanswered[-1].responses()
            self.peers = []
            tasks = [asyncio.ensure_future(_drain(p)) for p in peers]
            if tasks:
                await asyncio.wait(tasks, timeout=CLOSE_TIMEOUT_S)
        finally:
            for peer in peers:
                peer.call.cancel()  # a no-op for streams that ended
            for task in tasks:
                task.add_done_callback(_retrieve)


class Acknowledgement:
    """A sent proposal awaiting every peer's answer."""

    def __init__(self, pipeline: Pipeline, local: pb.ReplicateResponse) -> None:
        self._pipeline = pipeline
        self.local = local
        self.answer: asyncio.Future[list[pb.ReplicateResponse]] = (
            asyncio.get_running_loop().create_future())

    async def responses(self) -> list[pb.ReplicateResponse]:
        """Every replica's answer to the proposal, the local one first.

        Answers to earlier proposals are read first, by whichever waiter gets
        there. Giving up (cancellation) while reading breaks the pipeline.
        """
        pln = self._pipeline
        while not self.answer.done():
            async with pln._reading:
                if not self.answer.done():
                    await pln.read_next()
        return self.answer.result()

    def fail(self, err: PipelineError) -> None:
        if not self.answer.done():
            self.answer.set_exception(err)
            self.answer.exception()  # its owner may have gone: don't log it as unretrieved


async def _drain(peer: _Peer) -> None:
    if peer.sending is not None:
        await asyncio.wait([peer.sending])  # half-close after the last write
    call = peer.call
    await call.done_writing()
    while await call.read() is not grpc.aio.EOF:
        pass


async def _written(write: asyncio.Future[None]) -> None:
    """The outcome of a write, waited for without cancelling it should our waiter be."""
    await asyncio.wait([write])
    if write.cancelled():
        raise PipelineError("a write to a peer was cancelled")
    write.result()


def _retrieve(task: asyncio.Future[Any]) -> None:
    """Consume the outcome of an abandoned peer operation (it ends with its call)."""
    if not task.cancelled():
        task.exception()


async def _settle(peers: list[_Peer]) -> None:
    """Give the streams of peers whose operation failed a moment to deliver their status.

    A failed write can come before the peer's final status (a write reports
    only "Internal error from Core"); cancelling at once would lose why the
    peer ended, e.g. the RESOURCE_EXHAUSTED of its full spool directory.
    """
    try:
        async with asyncio.timeout(SETTLE_S):
            for peer in peers:
                await peer.status.wait()
    except TimeoutError:
        pass

