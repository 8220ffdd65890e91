"""The primary's replication pipeline: one Replicate stream per peer, plus its own spool.

Every request is applied to the local spool and written to each peer, in the
same order, so all replicas run the same spool state machine (broker.md 4.5).
Proposals sent with `acknowledge` are answered by each peer exactly once;
`gather()` reads those answers. A pipeline is bound to one Route: when the
route changes, the primary closes it and opens a new one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import grpc

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import GazetteError

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub
    from gazette_core.broker.replica import Replica

log = logging.getLogger(__name__)

T = TypeVar("T")

# A peer that answers nothing for this long is considered broken.
ACK_TIMEOUT_S = 30.0
# How long closing waits for peers to acknowledge the end of their streams.
CLOSE_TIMEOUT_S = 5.0


class PipelineError(GazetteError):
    """A peer failed, disagreed or went away; the pipeline must be rebuilt."""

    retriable = True


@dataclass
class _Peer:
    process_id: pb.ProcessSpec.ID
    call: Any  # grpc.aio.StreamStreamCall[ReplicateRequest, ReplicateResponse]


class Pipeline:
    """Replication streams from this primary to the other members of `route`."""

    def __init__(self, replica: Replica, header: pb.Header,
                 stub_for: Callable[[str], JournalAsyncStub],
                 ack_timeout: float = ACK_TIMEOUT_S) -> None:
        self.replica = replica
        self.ack_timeout = ack_timeout
        self.header = pb.Header()
        self.header.CopyFrom(header)
        self.route = self.header.route
        self._stub_for = stub_for
        self.peers: list[_Peer] = []
        self.broken: BaseException | None = None

    def open(self) -> None:
        """Open a Replicate stream to every member but the primary."""
        for index, member in enumerate(self.route.members):
            if index == self.route.primary:
                continue
            endpoint = self.route.endpoints[index] if index < len(self.route.endpoints) else ""
            if not endpoint:
                raise PipelineError(f"no endpoint for route member {member.zone}#{member.suffix}")
            self.peers.append(_Peer(member, self._stub_for(endpoint).Replicate()))

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
        """Apply `req` locally and send it to every peer; returns the local response."""
        local = self.replica.apply(req)
        await self._all_peers([p.call.write(self.first_request(p, req) if opening else req)
                               for p in self.peers], "sending to peers")
        return local

    async def gather(self) -> list[pb.ReplicateResponse]:
        """One acknowledgement from each peer, in peer order."""
        responses = await self._all_peers([p.call.read() for p in self.peers],
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
        err = self._fail(f"{what}: {failed[0]!r}" if failed
                         else f"{what}: no answer within {self.ack_timeout:g}s")
        self._break(tasks, err)
        unexpected = [e for e in failed
                      if not isinstance(e, grpc.aio.AioRpcError | asyncio.InvalidStateError)]
        if unexpected:
            raise unexpected[0]
        raise err

    def _break(self, tasks: Sequence[asyncio.Future[Any]], err: PipelineError) -> None:
        """Mark the pipeline broken and cancel every peer call, ending `tasks`."""
        self.broken = self.broken or err
        for peer in self.peers:
            peer.call.cancel()
        for task in tasks:
            task.add_done_callback(_retrieve)

    async def propose(self, proposal: pb.Fragment, registers: pb.LabelSet,
                      opening: bool = False) -> list[pb.ReplicateResponse]:
        """Scatter an acknowledged proposal; every replica's answer, the local one first."""
        req = pb.ReplicateRequest(proposal=proposal, registers=registers, acknowledge=True)
        local = await self.scatter(req, opening)
        return [local, *await self.gather()] if self.peers else [local]

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
        """Roll back uncommitted content, half-close every stream and drain it.

        Streams are drained together. Any not ended within CLOSE_TIMEOUT_S, or
        when the caller is cancelled meanwhile, are cancelled: a stream left
        open keeps its replica's spool locked, stalling every later pipeline.
        """
        self.replica.rollback_local()
        peers, self.peers = self.peers, []
        tasks = [asyncio.ensure_future(_drain(p.call)) for p in peers]
        try:
            if tasks:
                await asyncio.wait(tasks, timeout=CLOSE_TIMEOUT_S)
        finally:
            for peer in peers:
                peer.call.cancel()  # a no-op for streams that ended
            for task in tasks:
                task.add_done_callback(_retrieve)


async def _drain(call: Any) -> None:
    await call.done_writing()
    while await call.read() is not grpc.aio.EOF:
        pass


def _retrieve(task: asyncio.Future[Any]) -> None:
    """Consume the outcome of an abandoned peer operation (it ends with its call)."""
    if not task.cancelled():
        task.exception()
