"""gRPC server and client metrics over a real loopback server: codes as Go names them.

A small service answers OK, aborts NOT_FOUND, raises, streams, or waits;
its server counts through ServerMetrics (before token verification), its
client through a MeteredChannel. Each test compares series before and after.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import pytest
import pytest_asyncio
from prometheus_client import REGISTRY

from gazette_core.metrics.grpc_client import MeteredChannel
from gazette_core.metrics.grpc_server import ServerMetrics
from gazette_core.server.auth import parse_keys
from gazette_core.server.interceptor import AuthInterceptor

SERVICE = "test.Probe"
KEY = base64.b64encode(b"metrics-test-key").decode()


async def ok(request: bytes, context: Any) -> bytes:
    return request


async def missing(request: bytes, context: Any) -> bytes:
    await context.abort(grpc.StatusCode.NOT_FOUND, "no such thing")
    raise AssertionError("abort returned")


async def broken(request: bytes, context: Any) -> bytes:
    raise KeyError("a bug")


async def slow(request: bytes, context: Any) -> bytes:
    await asyncio.sleep(30)
    return request


async def stream(request: bytes, context: Any) -> AsyncIterator[bytes]:
    for piece in (b"a", b"b", b"c"):
        yield piece


async def gather(requests: AsyncIterator[bytes], context: Any) -> bytes:
    return b"".join([r async for r in requests])


def _server(*interceptors: grpc.aio.ServerInterceptor) -> tuple[grpc.aio.Server, int]:
    server = grpc.aio.server(interceptors=[ServerMetrics(), *interceptors])
    handlers = {name: grpc.unary_unary_rpc_method_handler(fn)
                for name, fn in (("Ok", ok), ("Missing", missing), ("Broken", broken),
                                 ("Slow", slow))}
    handlers["Stream"] = grpc.unary_stream_rpc_method_handler(stream)
    handlers["Gather"] = grpc.stream_unary_rpc_method_handler(gather)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    return server, server.add_insecure_port("127.0.0.1:0")


@pytest_asyncio.fixture
async def channel() -> AsyncIterator[MeteredChannel]:
    server, port = _server()
    await server.start()
    async with MeteredChannel(grpc.aio.insecure_channel(f"127.0.0.1:{port}")) as ch:
        yield ch
    await server.stop(None)


def count(name: str, kind: str, method: str, code: str | None = None) -> float:
    labels = {"grpc_type": kind, "grpc_service": SERVICE, "grpc_method": method}
    if code is not None:
        labels["grpc_code"] = code
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def handled_once(sides: tuple[str, ...], kind: str, method: str, code: str,
                       call: Callable[[], Awaitable[Any]]) -> None:
    """Make and await a `call`; each side counts it as started and handled with `code`."""
    names = [(f"grpc_{side}_started_total", None) for side in sides] + [
        (f"grpc_{side}_handled_total", code) for side in sides]
    before = [count(n, kind, method, c) for n, c in names]
    try:
        await call()
    except (grpc.aio.AioRpcError, asyncio.CancelledError):
        pass
    async with asyncio.timeout(10):  # the server's count lands as its handler unwinds
        while [count(n, kind, method, c) for n, c in names] != [b + 1 for b in before]:
            await asyncio.sleep(0.01)


@pytest.mark.parametrize(("method", "code"), [("Ok", "OK"), ("Missing", "NotFound"),
                                              ("Broken", "Unknown")])
async def test_unary_calls_count_by_code_on_both_sides(channel: MeteredChannel, method: str,
                                                       code: str) -> None:
    await handled_once(("server", "client"), "unary", method, code,
                       lambda: channel.unary_unary(f"/{SERVICE}/{method}")(b"x"))


async def test_an_expired_deadline_is_deadline_exceeded(channel: MeteredChannel) -> None:
    await handled_once(("server", "client"), "unary", "Slow", "DeadlineExceeded",
                       lambda: channel.unary_unary(f"/{SERVICE}/Slow")(b"x", timeout=0.2))


async def test_a_call_cancelled_by_its_client_is_canceled(channel: MeteredChannel) -> None:
    async def cancel_soon() -> None:
        call = channel.unary_unary(f"/{SERVICE}/Slow")(b"x")
        await asyncio.sleep(0.2)
        call.cancel()
        await call
    await handled_once(("server", "client"), "unary", "Slow", "Canceled", cancel_soon)


async def test_stream_messages_are_counted_each_way(channel: MeteredChannel) -> None:
    def sent(side: str, kind: str, method: str) -> tuple[float, float]:
        return (count(f"grpc_{side}_msg_sent_total", kind, method),
                count(f"grpc_{side}_msg_received_total", kind, method))

    before = {side: sent(side, "server_stream", "Stream") for side in ("server", "client")}
    assert [r async for r in channel.unary_stream(f"/{SERVICE}/Stream")(b"go")] == [
        b"a", b"b", b"c"]
    assert sent("server", "server_stream", "Stream") == (before["server"][0] + 3,
                                                         before["server"][1] + 1)
    assert sent("client", "server_stream", "Stream") == (before["client"][0] + 1,
                                                         before["client"][1] + 3)

    before = {side: sent(side, "client_stream", "Gather") for side in ("server", "client")}
    await handled_once(("server", "client"), "client_stream", "Gather", "OK",
                       lambda: channel.stream_unary(f"/{SERVICE}/Gather")(iter([b"1", b"2"])))
    assert sent("server", "client_stream", "Gather") == (before["server"][0] + 1,
                                                         before["server"][1] + 2)
    assert sent("client", "client_stream", "Gather") == (before["client"][0] + 2,
                                                         before["client"][1] + 1)


async def test_a_call_refused_for_its_token_is_counted_unauthenticated() -> None:
    keys = parse_keys(KEY)
    assert keys is not None
    server, port = _server(AuthInterceptor(keys, {}))
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as raw:
            await handled_once(("server",), "unary", "Ok", "Unauthenticated",
                               lambda: raw.unary_unary(f"/{SERVICE}/Ok")(b"x"))
    finally:
        await server.stop(None)


async def test_unimplemented_methods_are_not_counted(channel: MeteredChannel) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await channel.unary_unary(f"/{SERVICE}/Nothing")(b"x")
    assert raised.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert count("grpc_server_started_total", "unary", "Nothing") == 0
    assert count("grpc_client_handled_total", "unary", "Nothing", "Unimplemented") >= 1
