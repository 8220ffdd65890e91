"""Pipelined acknowledgements: proposals sent back to back, answers read in turn.

The peers here answer each acknowledged proposal with that proposal (so a
test can tell answers apart), but only when the test lets them: that is how
a primary sees answers still in flight while it sends the next proposal.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from gazette_core.broker.pipeline import ACK_TIMEOUT_S, Acknowledgement, Pipeline, PipelineError
from gazette_core.broker.protocol import protocol_pb2 as pb
from tests.broker.test_pipeline import pipeline_to, serving


class GatedPeer:
    """Echoes each acknowledged proposal back, one answer per `release()`."""

    def __init__(self) -> None:
        self.endpoint = ""
        self.gate = asyncio.Semaphore(0)
        self.proposals = 0  # acknowledged proposals received so far
        self.arrived = asyncio.Event()

    def release(self, answers: int = 1) -> None:
        for _ in range(answers):
            self.gate.release()

    async def replicate(self, requests: AsyncIterator[pb.ReplicateRequest],
                        context: grpc.aio.ServicerContext[Any, Any]
                        ) -> AsyncIterator[pb.ReplicateResponse]:
        queue: asyncio.Queue[pb.Fragment | None] = asyncio.Queue()

        async def receive() -> None:
            async for req in requests:
                if req.acknowledge:
                    self.proposals += 1
                    self.arrived.set()
                    await queue.put(req.proposal)
            await queue.put(None)  # the primary half-closed: end our side too

        receiving = asyncio.create_task(receive())
        try:
            while (proposal := await queue.get()) is not None:
                await self.gate.acquire()
                yield pb.ReplicateResponse(fragment=proposal)
        finally:
            receiving.cancel()

    async def wait_for_proposals(self, count: int) -> None:
        async with asyncio.timeout(ACK_TIMEOUT_S):
            while self.proposals < count:
                self.arrived.clear()
                await self.arrived.wait()


def marked(pipeline: Pipeline, end: int) -> pb.Fragment:
    """A distinguishable proposal: the spool's fragment rolled to `end`."""
    return pipeline.replica.spool.roll_proposal(end, pb.CompressionCodec.NONE)


async def send(pipeline: Pipeline, end: int, opening: bool = False) -> Acknowledgement:
    return await pipeline.send_proposal(marked(pipeline, end), pb.LabelSet(), opening)


async def test_answers_reach_their_own_proposal_whoever_asks_first(tmp_path: Path) -> None:
    async with serving([GatedPeer(), GatedPeer()]) as peers:
        pipeline = pipeline_to(peers, tmp_path)
        first = await send(pipeline, 100, opening=True)
        second = await send(pipeline, 200)  # sent while the first is unanswered
        for peer in peers:
            await peer.wait_for_proposals(2)
        later = asyncio.create_task(second.responses())  # asks before the first does
        earlier = asyncio.create_task(first.responses())
        for peer in peers:
            peer.release(2)
        got_first, got_second = await earlier, await later
        assert [r.fragment.end for r in got_first[1:]] == [100, 100]
        assert [r.fragment.end for r in got_second[1:]] == [200, 200]
        assert pipeline.broken is None
        await pipeline.close()


async def test_giving_up_on_an_answer_breaks_the_pipeline_for_later_turns(
        tmp_path: Path) -> None:
    async with serving([GatedPeer()]) as peers:
        pipeline = pipeline_to(peers, tmp_path)
        first = await send(pipeline, 100, opening=True)
        second = await send(pipeline, 200)
        waiting = asyncio.create_task(first.responses())
        await peers[0].wait_for_proposals(2)
        for _ in range(100):  # until it is reading the answers (never answered: gated)
            if pipeline.reading:
                break
            await asyncio.sleep(0.01)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        peers[0].release(2)
        # Its answer is unread: taking the next one as the second's would be wrong.
        with pytest.raises(PipelineError, match="cancelled while reading acknowledgements"):
            await second.responses()
        await pipeline.close()


async def test_roll_back_leaves_an_earlier_commit_in_flight_untouched(tmp_path: Path) -> None:
    async with serving([GatedPeer()]) as peers:
        pipeline = pipeline_to(peers, tmp_path)
        spool = pipeline.replica.spool
        sync = await pipeline.send_proposal(spool.fragment, spool.registers, opening=True)
        await pipeline.scatter(pb.ReplicateRequest(content=b"abandoned", content_delta=0))
        rolling_back = asyncio.create_task(pipeline.roll_back())
        await peers[0].wait_for_proposals(2)
        assert spool.delta == 0  # the local spool dropped the content at once
        peers[0].release(2)
        await rolling_back
        assert [r.fragment.end for r in await sync.responses()][1:] == [0]
        assert pipeline.broken is None and len(pipeline.peers) == 1
        await pipeline.close()
