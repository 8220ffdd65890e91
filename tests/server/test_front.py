"""The one-port front: gRPC relayed to a real gRPC server, HTTP handed to aiohttp, on one port."""

from __future__ import annotations

import asyncio
import hashlib
import os
import socket
import struct
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import grpc
import pytest

from gazette_core.server.front import Front
from gazette_core.server.http_mux import HttpMux
from gazette_core.server.listen import ListenError
from gazette_core.server.sniff import PREFACE
from tests.server.front_support import Served, method, open_sockets, served

MiB = 1 << 20
# An empty SETTINGS frame: what a gRPC client sends right after the preface.
SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


async def _chunks(data: bytes, size: int) -> AsyncIterator[bytes]:
    for at in range(0, len(data), size):
        yield data[at:at + size]


async def test_grpc_and_http_share_the_port() -> None:
    async with served() as s, grpc.aio.insecure_channel(s.target) as channel, \
            aiohttp.ClientSession() as http:
        echo = method(channel, "unary_unary", "Echo")
        assert await echo(b"over grpc") == b"over grpc"  # type: ignore[operator]
        async with http.get(f"http://{s.target}/hello") as resp:
            assert (resp.status, await resp.text()) == (200, "hello over http")
        async with http.get(f"http://{s.target}/debug/ready") as resp:
            assert (resp.status, await resp.read()) == (200, b"")


async def test_ready_answers_503_until_the_process_serves() -> None:
    ready = False
    mux = HttpMux(lambda: ready)
    await mux.start()
    try:
        await mux.listen("--test.http-port", "127.0.0.1", 0)
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{mux.port}/debug/ready") as resp:
                assert resp.status == 503
            ready = True
            async with http.get(f"http://127.0.0.1:{mux.port}/debug/ready") as resp:
                assert (resp.status, await resp.read()) == (200, b"")
    finally:
        await mux.stop()


async def test_large_streams_both_ways_arrive_byte_identical() -> None:
    sent = os.urandom(24 * MiB)
    async with served() as s, grpc.aio.insecure_channel(
            s.target, options=[("grpc.max_receive_message_length", 16 << 20)]) as channel:
        pipe = method(channel, "stream_stream", "Pipe")
        received = hashlib.sha256()
        async for piece in pipe(_chunks(sent, 128 << 10)):  # type: ignore[operator]
            received.update(piece)
        assert received.hexdigest() == hashlib.sha256(sent).hexdigest()
        down = method(channel, "unary_stream", "Down")
        count = 0
        async for piece in down((200).to_bytes(8, "big") + (96 << 10).to_bytes(8, "big")):  # type: ignore[operator]
            assert piece == (count % 251).to_bytes(1, "big") * (96 << 10)
            count += 1
        assert count == 200


async def _opened(s: Served) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A raw HTTP/2 connection through the front, once the gRPC server has answered it."""
    reader, writer = await asyncio.open_connection("127.0.0.1", s.front.port)
    writer.write(PREFACE + SETTINGS)
    assert await reader.read(9)  # the server's SETTINGS came back through the relay
    return reader, writer


async def _until_no_connections(front: Front) -> None:
    async with asyncio.timeout(30):
        while front._connections:
            await asyncio.sleep(0.01)


async def test_a_client_reset_mid_stream_closes_its_relay_and_the_server_serves_on() -> None:
    async with served() as s, grpc.aio.insecure_channel(s.target) as channel:
        pipe = method(channel, "stream_stream", "Pipe")
        calls = pipe()  # type: ignore[operator]
        await calls.write(b"in flight")
        assert await calls.read() == b"in flight"
        _, writer = await _opened(s)
        raw = writer.get_extra_info("socket")
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()  # RST, not FIN
        async with asyncio.timeout(30):
            while len(s.front._connections) > 1:
                await asyncio.sleep(0.01)
        # The other connection, mid-stream, is untouched; new calls are served.
        await calls.write(b"still here")
        assert await calls.read() == b"still here"
        await calls.done_writing()
        echo = method(channel, "unary_unary", "Echo")
        assert await echo(b"after") == b"after"  # type: ignore[operator]


async def test_the_server_closing_closes_the_client_side() -> None:
    async with served() as s:
        reader, writer = await _opened(s)
        await s.server.stop(0)
        async with asyncio.timeout(30):
            while await reader.read(1 << 16):
                pass  # the server's GOAWAY, then the end of the stream
        await _until_no_connections(s.front)
        writer.close()


async def test_a_connection_that_says_nothing_is_closed_after_the_sniff_timeout() -> None:
    async with served(sniff_timeout=0.3) as s:
        reader, writer = await asyncio.open_connection("127.0.0.1", s.front.port)
        async with asyncio.timeout(30):
            assert await reader.read() == b""
        await _until_no_connections(s.front)
        writer.close()


async def test_stop_closes_the_listener_then_live_connections_and_leaks_nothing() -> None:
    async with served() as s, grpc.aio.insecure_channel(s.target) as channel:
        # gRPC's first server and channel keep some descriptors of their own for good.
        assert await method(channel, "unary_unary", "Echo")(b"warm") == b"warm"  # type: ignore[operator]
    before = open_sockets()
    async with served() as s, grpc.aio.insecure_channel(s.target) as channel:
        port = s.front.port
        calls = method(channel, "stream_stream", "Pipe")()  # type: ignore[operator]
        await calls.write(b"live")
        assert await calls.read() == b"live"
        _, idle = await asyncio.open_connection("127.0.0.1", port)  # being sniffed
        await s.front.stop()
        with pytest.raises(ConnectionRefusedError):
            await asyncio.open_connection("127.0.0.1", port)
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await calls.read()
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE
        assert not s.front._connections
        idle.close()
    assert [t.get_name() for t in asyncio.all_tasks() if t.get_name().startswith("front")] == []
    async with asyncio.timeout(30):
        while open_sockets() > before:
            await asyncio.sleep(0.05)


async def test_a_unix_socket_port_serves_grpc_and_http(tmp_path: Path) -> None:
    path = tmp_path / "front.sock"
    async with served(f"unix://{path}") as s, \
            grpc.aio.insecure_channel(f"unix://{path}") as channel, \
            aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=str(path))) as http:
        assert s.front.port == f"unix://{path}"
        assert await method(channel, "unary_unary", "Echo")(b"unix") == b"unix"  # type: ignore[operator]
        async with http.get("http://localhost/hello") as resp:
            assert (resp.status, await resp.text()) == (200, "hello over http")
    assert not path.exists()


def test_a_port_in_use_is_named_with_its_flag() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(ListenError) as err:
            Front("--broker.port", "127.0.0.1", port).bind()
    assert str(err.value) == (f"--broker.port: cannot listen on 127.0.0.1:{port}: "
                              "the address is in use")


def test_a_bad_unix_path_is_named_with_its_flag(tmp_path: Path) -> None:
    url = f"unix://{tmp_path}/no/such/dir/broker.sock"
    with pytest.raises(ListenError) as err:
        Front("--consumer.port", "", url).bind()
    assert str(err.value) == (f"--consumer.port: cannot listen on {url}: "
                              "No such file or directory")


def test_a_stale_unix_socket_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "stale.sock"
    with socket.socket(socket.AF_UNIX) as dead:
        dead.bind(str(path))  # bound, then closed without unlinking: as a crash leaves it
    front = Front("--broker.port", "", f"unix://{path}")
    front.bind()
    asyncio.run(front.stop())
