"""Idle and stalled Append streams against real writers: who waits for a journal's pipeline."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aetcd
import grpc
import pytest

from gazette_core.broker.append_queue import waiting
from gazette_core.broker.client.appender import append_retrying
from gazette_core.broker.config import parse_args
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.service import Broker
from gazette_core.testing.broker import broker_config, journal_spec, journal_stub, running_broker
from gazette_core.testing.etcd import EtcdServer
from tests.broker.support import append, content, create

MIN_RATE_FAILURE = "append stream: client stream didn't sustain the minimum append data rate"


async def _until(condition: object, what: str) -> None:
    """Poll `condition()` for up to 5 s."""
    assert callable(condition)
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never saw {what}")


async def test_idle_streams_do_not_delay_a_real_append(broker: Broker,
                                                       stub: pb_grpc.JournalStub) -> None:
    await create(stub, journal_spec("a/journal"))
    idle = [stub.Append() for _ in range(20)]
    for call in idle:  # opened, sent the first message, then nothing
        await call.write(pb.AppendRequest(journal="a/journal"))
    # Queued behind them one at a time, the append would wait ~20 s (1 s credit each).
    async with asyncio.timeout(5):
        resp = await append(stub, "a/journal", b"real")
    assert (resp.status, resp.commit.begin, resp.commit.end) == (pb.OK, 0, 4)
    for call in idle:  # the minimum-rate rule still fails every idle stream
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await call
        assert err.value.details() == MIN_RATE_FAILURE
    assert await content(stub, "a/journal") == b"real"


async def test_appends_beyond_the_queue_limit_are_refused_as_retriable(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path) -> None:
    config = broker_config(etcd_server.endpoint, str(tmp_path), max_append_queue=1)
    async with running_broker(config) as broker, journal_stub(broker.endpoint) as stub:
        await create(stub, journal_spec("a/journal"))
        replica = broker.resolver.replicas["a/journal"]
        # The pipeline is held (as by an append streaming its content) for as long as the
        # test needs: a stalled client would let it go once its rate fails, which a
        # loaded machine can reach before the queue is observed.
        await replica.pipeline_lock.acquire()
        try:
            queued = asyncio.create_task(append(stub, "a/journal", b"first"))
            await _until(lambda: waiting(replica) == 1, "an append waiting")

            with pytest.raises(grpc.aio.AioRpcError) as err:
                await append(stub, "a/journal", b"refused")
            assert err.value.code() == grpc.StatusCode.UNAVAILABLE
            assert err.value.details() == (
                "journal 'a/journal' has 1 append(s) waiting for its pipeline already "
                "(--broker.max-append-queue); retry later")
        finally:
            replica.pipeline_lock.release()

        # The client library retries the refusal until the queue has room.
        retried = await append_retrying(stub, "a/journal", b"second", deadline=10)
        first = await queued
        assert (first.commit.begin, first.commit.end) == (0, 5)
        assert (retried.commit.begin, retried.commit.end) == (5, 11)
        assert await content(stub, "a/journal") == b"firstsecond"


def test_queue_limit_is_a_broker_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_args([]).max_append_queue == 32
    assert parse_args(["--broker.max-append-queue", "5"]).max_append_queue == 5
    monkeypatch.setenv("BROKER_MAX_APPEND_QUEUE", "0")
    assert parse_args([]).max_append_queue == 0
