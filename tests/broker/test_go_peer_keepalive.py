"""Keepalive in a mixed cluster: Go peers with default gRPC settings, and ours.

A Go broker's server enforces grpc-go's default keepalive policy: a client
ping less than 5 minutes after the previous one, with nothing written by the
server in between, is a strike, and the third strike gets GOAWAY
"too_many_pings". The peer is `tests/broker/gopeer`, a real grpc-go server
with default ServerOptions (and a grpc-go client), run as a process so that
it can be frozen with SIGSTOP. Pings here go out every second rather than
every 10 s, so "three pings" takes seconds, not half a minute.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aetcd
import grpc
import pytest

from gazette_core.broker import keepalive
from gazette_core.broker.client.channel import grpc_target
from gazette_core.broker.pipeline import REPLICATE_METHOD
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.security import Security
from gazette_core.broker.service import Broker
from gazette_core.testing.broker import broker_config, journal_spec, journal_stub
from gazette_core.testing.etcd import EtcdServer
from tests.broker import gopeer_support
from tests.broker.support import append, create

PING_MS = 1000
# Seven ping intervals: with nothing written by the server meanwhile, a Go server sends
# GOAWAY at the third strike (after 3 s), a C-core one given its policy after 4-5 s.
HOLD_S = 7 * PING_MS / 1000
# A frozen peer's connection is dropped a ping interval and timeout after its last word.
SILENT_LIMIT_S = 8.0
STREAM_TIMEOUT_S = 30.0
# gRPC C-core's server settings equivalent to grpc-go's default enforcement.
GO_POLICY = [("grpc.http2.min_ping_interval_without_data_ms", 300_000),
             ("grpc.http2.max_ping_strikes", 2),
             ("grpc.keepalive_permit_without_calls", 0)]

Call = Any  # grpc.aio.StreamStreamCall of raw bytes


@pytest.fixture(scope="session")
def gopeer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return gopeer_support.build(tmp_path_factory.mktemp("gopeer"))


@pytest.fixture
def fast_pings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keepalive, "PING_INTERVAL_MS", PING_MS)
    monkeypatch.setattr(keepalive, "PING_TIMEOUT_MS", PING_MS)


async def _echo(requests: AsyncIterator[bytes], _: object) -> AsyncIterator[bytes]:
    async for request in requests:
        yield request


@asynccontextmanager
async def _c_core_server_like_go() -> AsyncIterator[str]:
    """An in-process grpc.aio server enforcing Go's policy through C-core's settings."""
    server = grpc.aio.server(options=GO_POLICY)
    handler = grpc.stream_stream_rpc_method_handler(_echo)
    server.add_generic_rpc_handlers(
        [grpc.method_handlers_generic_handler("protocol.Journal", {"Replicate": handler})])
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await server.stop(None)


@asynccontextmanager
async def _replicate_stream(etcd_server: EtcdServer, root: Path, endpoint: str
                            ) -> AsyncIterator[Call]:
    """A Replicate-shaped stream on the channel a broker dials its peer `endpoint` with."""
    security = Security(broker_config(etcd_server.endpoint, str(root)))
    channel = security.peer_channel(endpoint)
    call = channel.stream_stream(REPLICATE_METHOD, request_serializer=None,
                                 response_deserializer=None)(timeout=STREAM_TIMEOUT_S)
    try:
        await _round_trip(call, b"opening")
        yield call
    finally:
        call.cancel()
        await channel.close()  # its probes end with it


async def _round_trip(call: Call, tag: bytes) -> None:
    request = pb.ReplicateRequest(deprecated_journal="keepalive/go", content=tag)
    await call.write(request.SerializeToString())
    async with asyncio.timeout(STREAM_TIMEOUT_S):
        assert pb.ReplicateRequest.FromString(await call.read()) == request


async def _ended_within(call: Call, limit: float) -> tuple[grpc.StatusCode, str] | None:
    """The code and details the call ended with, if it ended within `limit` seconds."""
    try:
        async with asyncio.timeout(limit):
            return await call.code(), await call.details()
    except TimeoutError:
        return None


@asynccontextmanager
async def _server_like_go(kind: str, gopeer: Path) -> AsyncIterator[str]:
    """The endpoint of a grpc-go server, or of a C-core server given Go's policy."""
    if kind == "grpc-go":
        async with gopeer_support.go_server(gopeer) as server:
            yield server.endpoint
    else:
        async with _c_core_server_like_go() as endpoint:
            yield endpoint


@pytest.mark.parametrize("kind", ["grpc-go", "C-core"])
async def test_idle_stream_to_a_go_server_is_not_sent_goaway(
        kind: str, gopeer: Path, fast_pings: None, etcd_server: EtcdServer,
        tmp_path: Path) -> None:
    """Held idle past three pings, the stream is still open and still carries messages.

    The same holds for a C-core server given Go's policy, whose strike rules
    are alike: the design does not rest on a detail of grpc-go.
    """
    async with (_server_like_go(kind, gopeer) as endpoint,
                _replicate_stream(etcd_server, tmp_path, endpoint) as call):
        assert await _ended_within(call, HOLD_S) is None
        await _round_trip(call, b"after a quiet while")


async def test_a_frozen_go_server_is_noticed(
        gopeer: Path, fast_pings: None, etcd_server: EtcdServer, tmp_path: Path) -> None:
    """A Go peer frozen (SIGSTOP) after a quiet while: its stream fails within the bound."""
    async with (gopeer_support.go_server(gopeer) as peer,
                _replicate_stream(etcd_server, tmp_path, peer.endpoint) as call):
        assert await _ended_within(call, HOLD_S) is None
        os.kill(peer.process.pid, signal.SIGSTOP)
        ended = await _ended_within(call, SILENT_LIMIT_S)
        assert ended == (grpc.StatusCode.UNAVAILABLE, "Stream removed (ping timeout)")


async def _read_until(client: gopeer_support.GoClient, wanted: bytes) -> None:
    """Take the Go client's lines until the content it read so far is `wanted`."""
    got = b""
    async with asyncio.timeout(STREAM_TIMEOUT_S):
        while got != wanted:
            line = await client.next_line()
            assert line.startswith("message "), (line, got)
            got += pb.ReadResponse.FromString(bytes.fromhex(line.split()[1])).content


async def _line_within(client: gopeer_support.GoClient, limit: float) -> str | None:
    """What the Go client reported next, if it did within `limit` seconds."""
    try:
        async with asyncio.timeout(limit):
            return await client.next_line()
    except TimeoutError:
        return None


async def test_go_client_pinging_keeps_its_read_stream(
        gopeer: Path, fast_pings: None, etcd: aetcd.Client, broker: Broker) -> None:
    """A grpc-go client pinging every second holds a blocking Read to our broker.

    Go Gazette's clients set no keepalive (grpc-go's default: no pings but
    those estimating bandwidth, which follow data), and grpc-go lets none ping
    more often than every 10 s. This one pings every second, with or without
    streams (gopeer lowers grpc-go's floor), while our server pings it every
    second too: its idle blocking Read is neither sent GOAWAY nor ended, and
    still delivers what is appended later.
    """
    journal = "keepalive/go-reader"
    async with journal_stub(broker.endpoint) as stub:
        await create(stub, journal_spec(journal))
        assert (await append(stub, journal, b"before\n")).status == pb.OK
        request = pb.ReadRequest(journal=journal, offset=0, block=True)
        async with gopeer_support.go_client(
                gopeer, grpc_target(broker.endpoint), "/protocol.Journal/Read",
                request.SerializeToString(), f"{PING_MS}ms") as client:
            await _read_until(client, b"before\n")
            assert await _line_within(client, HOLD_S) is None
            assert (await append(stub, journal, b"after\n")).status == pb.OK
            await _read_until(client, b"after\n")
