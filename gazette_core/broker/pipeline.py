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
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import grpc

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import GazetteError

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub
    from gazette_core.broker.replica import Replica

log = logging.getLogger(__name__)

# A peer that answers nothing for this long is considered broken.
ACK_TIMEOUT_S = 30.0


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
                 stub_for: Callable[[str], JournalAsyncStub]) -> None:
        self.replica = replica
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
        try:
            await asyncio.gather(*(
                p.call.write(self.first_request(p, req) if opening else req)
                for p in self.peers))
        except (grpc.aio.AioRpcError, asyncio.InvalidStateError) as exc:
            raise self._fail(f"sending to peers: {exc}") from None
        return local

    async def gather(self) -> list[pb.ReplicateResponse]:
        """One acknowledgement from each peer, in peer order."""
        try:
            responses = await asyncio.wait_for(
                asyncio.gather(*(p.call.read() for p in self.peers)), ACK_TIMEOUT_S)
        except (grpc.aio.AioRpcError, TimeoutError) as exc:
            raise self._fail(f"reading peer acknowledgements: {exc!r}") from None
        for peer, resp in zip(self.peers, responses, strict=True):
            if resp is grpc.aio.EOF:
                raise self._fail(f"peer {peer.process_id.suffix} closed its Replicate stream")
        return list(responses)

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
        """Roll back uncommitted content, half-close every stream and drain it."""
        self.replica.rollback_local()
        for peer in self.peers:
            try:
                await peer.call.done_writing()
                while await asyncio.wait_for(peer.call.read(), 5.0) is not grpc.aio.EOF:
                    pass
            except (grpc.aio.AioRpcError, asyncio.InvalidStateError, TimeoutError):
                peer.call.cancel()
        self.peers = []
