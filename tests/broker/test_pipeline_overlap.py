"""The primary sends to its replicas without waiting for each write to go out.

A unit test of the pipeline over stand-in Replicate calls whose writes
complete only when the test lets them (the real streams are exercised by
test_pipeline*.py and test_replication.py): content is applied locally and
handed to every peer at once, the next write to a peer waits for its
previous one, and the commit's acknowledgement waits for every write and
answer, as durability requires. A write that fails breaks the pipeline at
the next operation on it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import grpc
import pytest

from gazette_core.broker.fragment.persister import Persister
from gazette_core.broker.pipeline import Pipeline, PipelineError
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.replica import Replica
from gazette_core.keyspace.keyspace import KeyValue
from gazette_core.testing.broker import journal_spec

JOURNAL = "pipeline/overlap"


class HeldCall:
    """A peer's Replicate call: writes complete when `flowing` is set, answers when queued."""

    def __init__(self) -> None:
        self.flowing = asyncio.Event()
        self.started: list[pb.ReplicateRequest] = []  # writes begun, in order
        self.written: list[pb.ReplicateRequest] = []  # writes completed, in order
        self.answers: asyncio.Queue[Any] = asyncio.Queue()
        self.failure: Exception | None = None
        self.writing = asyncio.Event()  # set as each write begins

    async def write(self, data: bytes) -> None:
        self.started.append(pb.ReplicateRequest.FromString(data))
        self.writing.set()
        await self.flowing.wait()
        if self.failure is not None:
            raise self.failure
        self.written.append(self.started[len(self.written)])

    async def read(self) -> Any:
        return await self.answers.get()

    async def done_writing(self) -> None:
        await self.answers.put(grpc.aio.EOF)

    def add_done_callback(self, _: Any) -> None:
        pass

    def cancel(self) -> bool:
        self.answers.put_nowait(grpc.aio.EOF)
        return True

    def done(self) -> bool:
        return False


class HeldChannel:
    def __init__(self, call: HeldCall) -> None:
        self.call = call

    def stream_stream(self, *_: Any, **__: Any) -> Any:
        return lambda **_: self.call


def primary_of(calls: list[HeldCall], tmp_path: Path) -> Pipeline:
    """An opened pipeline of member 0 whose peers' calls are `calls`."""
    spec = journal_spec(JOURNAL, replication=len(calls) + 1)
    item = KeyValue(f"/root/items/{JOURNAL}", spec.SerializeToString(), spec, 1, 1, 1, 0)
    replica = Replica(JOURNAL, item, Persister(str(tmp_path)), str(tmp_path))
    route = pb.Route(primary=0, endpoints=[f"http://127.0.0.1:{1 + i}" for i in range(3)])
    for i in range(len(calls) + 1):
        route.members.add(zone="local", suffix=f"broker-{i}")
    channels = {route.endpoints[i + 1]: HeldChannel(c) for i, c in enumerate(calls)}
    pipeline = Pipeline(replica, pb.Header(route=route), lambda e: channels[e],  # type: ignore
                        ack_timeout=5.0)
    pipeline.open()
    return pipeline


def agree(calls: list[HeldCall], fragment: pb.Fragment) -> None:
    for call in calls:
        call.answers.put_nowait(pb.ReplicateResponse(fragment=fragment))


async def opened(calls: list[HeldCall], tmp_path: Path) -> Pipeline:
    """A pipeline whose opening proposal every peer took and answered."""
    pipeline = primary_of(calls, tmp_path)
    spool = pipeline.replica.spool
    for call in calls:
        call.flowing.set()
    agree(calls, spool.fragment)
    await pipeline.propose(spool.fragment, spool.registers, opening=True)
    for call in calls:
        call.flowing.clear()
        call.writing.clear()
    return pipeline


async def test_content_is_sent_to_every_peer_at_once_without_waiting_for_the_writes(
        tmp_path: Path) -> None:
    calls = [HeldCall(), HeldCall()]
    pipeline = await opened(calls, tmp_path)
    spool = pipeline.replica.spool
    await pipeline.scatter(pb.ReplicateRequest(content=b"record\n", content_delta=0))
    for call in calls:
        await call.writing.wait()  # begun on the loop's next turn, not awaited by scatter
    assert spool.delta == 7
    assert [c.started[-1].content for c in calls] == [b"record\n", b"record\n"]
    assert [len(c.written) for c in calls] == [1, 1]  # only the opening proposal went out
    # The commit waits for the content's writes, then for every peer's answer.
    committing = asyncio.create_task(
        pipeline.propose(spool.proposal_with_delta(), spool.registers))
    proposal = spool.proposal_with_delta()
    for call in calls:
        call.flowing.set()
    agree(calls, proposal)
    responses = await committing
    assert [r.fragment.end for r in responses[1:]] == [7, 7]
    for call in calls:
        assert [bool(r.content) for r in call.written] == [False, True, False]
    await pipeline.close()


async def test_a_failed_write_breaks_the_pipeline_at_the_next_write(tmp_path: Path) -> None:
    calls = [HeldCall()]
    pipeline = await opened(calls, tmp_path)
    spool = pipeline.replica.spool
    calls[0].failure = RuntimeError("peer went away")
    await pipeline.scatter(pb.ReplicateRequest(content=b"lost\n", content_delta=0))
    calls[0].flowing.set()
    with pytest.raises(RuntimeError, match="peer went away"):
        await pipeline.propose(spool.proposal_with_delta(), spool.registers)
    assert isinstance(pipeline.broken, PipelineError)
    assert "sending to peers: peer went away" in str(pipeline.broken)
    await pipeline.close()
