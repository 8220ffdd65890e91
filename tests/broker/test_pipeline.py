"""The replication pipeline against peers that accept a Replicate stream and never answer.

A stalled broker (SIGSTOPped, or partitioned) looks like this to a primary:
its streams open, but no response, not even response headers, ever comes.
The pipeline must then fail after its acknowledgement timeout. A caller that
gives up earlier (an Append whose client went away) leaves the pipeline
broken, since answers may still be in flight, and every peer stream ended;
so does a close that is itself cancelled: an open stream keeps holding its
replica's spool.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, Protocol, TypeVar

import grpc
import pytest

from gazette_core.broker.client.channel import dial
from gazette_core.broker.fragment.persister import Persister
from gazette_core.broker.pipeline import ACK_TIMEOUT_S, Pipeline, PipelineError
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.replica import Replica
from gazette_core.keyspace.keyspace import KeyValue
from gazette_core.testing.broker import journal_spec

JOURNAL = "pipeline/silent"


class SilentPeer:
    """A Replicate server that reads its stream but never responds."""

    def __init__(self) -> None:
        self.received: list[pb.ReplicateRequest] = []
        self.first = asyncio.Event()
        self.ended = asyncio.Event()  # the primary's stream to us is over
        self.endpoint = ""

    async def replicate(self, requests: AsyncIterator[pb.ReplicateRequest],
                        context: grpc.aio.ServicerContext[Any, Any]
                        ) -> AsyncIterator[pb.ReplicateResponse]:
        context.add_done_callback(lambda _: self.ended.set())
        async for req in requests:
            self.received.append(req)
            self.first.set()
        await asyncio.Event().wait()  # never answers, not even after a half-close
        yield pb.ReplicateResponse()


class Peer(Protocol):
    endpoint: str

    def replicate(self, requests: AsyncIterator[pb.ReplicateRequest],
                  context: grpc.aio.ServicerContext[Any, Any]
                  ) -> AsyncIterator[pb.ReplicateResponse]: ...


P = TypeVar("P", bound=Peer)


@asynccontextmanager
async def serving(peers: list[P]) -> AsyncIterator[list[P]]:
    """Each peer's Replicate handler served on its own loopback port."""
    async with AsyncExitStack() as stack:
        for peer in peers:
            server = grpc.aio.server()
            server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(
                "protocol.Journal", {"Replicate": grpc.stream_stream_rpc_method_handler(
                    peer.replicate, request_deserializer=pb.ReplicateRequest.FromString,
                    response_serializer=pb.ReplicateResponse.SerializeToString)})])
            peer.endpoint = f"http://127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
            await server.start()
            stack.push_async_callback(server.stop, None)
        yield peers


def silent_peers(count: int) -> AbstractAsyncContextManager[list[SilentPeer]]:
    return serving([SilentPeer() for _ in range(count)])


def pipeline_to(peers: Sequence[Peer], tmp_path: Path, **kwargs: Any) -> Pipeline:
    """An opened pipeline of a primary (route member 0) to `peers`."""
    spec = journal_spec(JOURNAL, replication=len(peers) + 1)
    item = KeyValue(f"/root/items/{JOURNAL}", spec.SerializeToString(), spec, 1, 1, 1, 0)
    replica = Replica(JOURNAL, item, Persister(str(tmp_path)), str(tmp_path))
    route = pb.Route(primary=0, endpoints=["http://127.0.0.1:1"] + [p.endpoint for p in peers])
    for i in range(len(peers) + 1):
        route.members.add(zone="local", suffix=f"broker-{i}")
    header = pb.Header(process_id=route.members[0], route=route,
                       etcd=pb.Header.Etcd(cluster_id=1, member_id=1, revision=1, raft_term=1))
    pipeline = Pipeline(replica, header, dial, **kwargs)
    pipeline.open()
    return pipeline


def sync_proposal(pipeline: Pipeline) -> Any:
    spool = pipeline.replica.spool
    return pipeline.propose(spool.fragment, spool.registers, opening=True)


async def test_silent_peer_fails_the_pipeline_after_the_ack_timeout(tmp_path: Path) -> None:
    async with silent_peers(1) as peers:
        pipeline = pipeline_to(peers, tmp_path, ack_timeout=0.2)
        with pytest.raises(PipelineError) as failure:
            await sync_proposal(pipeline)
        assert str(failure.value) == (f"replication pipeline of {JOURNAL}: reading peer "
                                      "acknowledgements: no answer within 0.2s")
        assert pipeline.broken is failure.value
        assert [r.header.process_id.suffix for r in peers[0].received] == ["broker-1"]
        await asyncio.wait_for(peers[0].ended.wait(), ACK_TIMEOUT_S)  # its stream was cancelled
        await pipeline.close()


async def test_cancelled_wait_for_silent_peers_breaks_the_pipeline_and_ends_their_streams(
        tmp_path: Path) -> None:
    async with silent_peers(2) as peers:
        pipeline = pipeline_to(peers, tmp_path)
        waiting = asyncio.create_task(sync_proposal(pipeline))
        for peer in peers:
            await peer.first.wait()
        waiting.cancel()
        # Well within the acknowledgement timeout: the caller does not wait for the peers.
        done, _ = await asyncio.wait({waiting}, timeout=ACK_TIMEOUT_S / 2)
        assert done == {waiting} and waiting.cancelled()
        assert isinstance(pipeline.broken, PipelineError)
        for peer in peers:
            await asyncio.wait_for(peer.ended.wait(), ACK_TIMEOUT_S)
        await pipeline.close()


async def test_close_cancelled_midway_still_ends_every_stream(tmp_path: Path) -> None:
    async with silent_peers(2) as peers:
        pipeline = pipeline_to(peers, tmp_path)
        spool = pipeline.replica.spool
        await pipeline.scatter(pb.ReplicateRequest(
            proposal=spool.fragment, registers=spool.registers, acknowledge=True), opening=True)
        for peer in peers:
            await peer.first.wait()
        closing = asyncio.create_task(pipeline.close())
        await asyncio.sleep(0.05)  # closing now waits for the peers to end their streams
        closing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closing
        assert pipeline.peers == []
        for peer in peers:
            await asyncio.wait_for(peer.ended.wait(), ACK_TIMEOUT_S)
