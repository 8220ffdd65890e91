"""A real gRPC server (byte-echo methods) and an aiohttp app behind one `Front`, for tests."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import grpc
from aiohttp import web

from gazette_core.server.front import Front
from gazette_core.server.http_mux import HttpMux

SERVICE = "test.Front"
Chunks = AsyncIterator[bytes]


def _same(b: bytes) -> bytes:
    return b


async def _echo(request: bytes, _: object) -> bytes:
    return request


async def _pipe(requests: Chunks, _: object) -> Chunks:
    async for piece in requests:
        yield piece


async def _down(request: bytes, _: object) -> Chunks:
    """`count` messages of `size` bytes, each its index repeated: (count, size) as 2 x 8 bytes."""
    count, size = int.from_bytes(request[:8], "big"), int.from_bytes(request[8:], "big")
    for i in range(count):
        yield (i % 251).to_bytes(1, "big") * size


def handlers() -> grpc.GenericRpcHandler:
    return grpc.method_handlers_generic_handler(SERVICE, {
        "Echo": grpc.unary_unary_rpc_method_handler(_echo, _same, _same),
        "Pipe": grpc.stream_stream_rpc_method_handler(_pipe, _same, _same),
        "Down": grpc.unary_stream_rpc_method_handler(_down, _same, _same)})


def method(channel: grpc.aio.Channel, kind: str, name: str) -> object:
    return getattr(channel, kind)(f"/{SERVICE}/{name}", request_serializer=_same,
                                  response_deserializer=_same)


@dataclass
class Served:
    front: Front
    server: grpc.aio.Server
    http: HttpMux

    @property
    def target(self) -> str:
        port = self.front.port
        return port if isinstance(port, str) else f"127.0.0.1:{port}"


async def _hello(_: web.Request) -> web.Response:
    return web.Response(text="hello over http")


@asynccontextmanager
async def served(port: int | str = 0, sniff_timeout: float = 30.0) -> AsyncIterator[Served]:
    """A front on 127.0.0.1 (or a unix:// port) before a gRPC server and an HTTP mux."""
    options = [("grpc.max_receive_message_length", 16 << 20), ("grpc.so_reuseport", 0)]
    server = grpc.aio.server(options=options)
    server.add_generic_rpc_handlers((handlers(),))
    front = Front("--test.port", "127.0.0.1", port, sniff_timeout=sniff_timeout)
    http = HttpMux(lambda: True)
    http.add_routes([web.get("/hello", _hello)])
    front.bind()
    front.attach_grpc(server.add_insecure_port)
    await server.start()
    await http.start()
    front.serve(http.protocol_factory)
    try:
        yield Served(front, server, http)
    finally:
        await http.stop()
        await front.close_listener()
        await server.stop(0)
        await front.stop()


def open_sockets() -> int:
    """Sockets this process holds (gRPC's own pollers come and go; sockets must not leak)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        except OSError:
            pass  # closed meanwhile (the listing's own descriptor, for one)
    return count
