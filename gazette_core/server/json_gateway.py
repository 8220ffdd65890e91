"""The JSON gateway: a few RPCs of a process's own gRPC service as JSON over HTTP, under /v1/.

It answers as Go's gateway (grpc-gateway v1 with gogo's JSON marshaler)
does, so that scripts and browser pages written for Go's servers work
unchanged. Each request is a POST whose body is the request message as
JSON (json_input); it becomes a call through the stub the process passes,
a client of its own gRPC service, so that authorization, proxying and
routing are exactly gRPC's. An Authorization header rides along as gRPC
metadata; the gateway adds no authority of its own.

- A unary RPC answers 200 with the response message's JSON (json_mapping).
- A server-streaming RPC answers 200 with one `{"result": <message>}` line
  per response, each written as it arrives (a blocking read stays open).
- A gRPC error before any response answers the HTTP status of its code with
  the status as JSON: `{"code": 5, "message": "...", "details": []}`. Bad
  JSON is INVALID_ARGUMENT (400). After the first line, the stream instead
  ends with `{"error": {"grpcCode", "httpCode", "message", "httpStatus",
  "details"}}`, without a final newline (as Go writes it).
- Any other path or method under /v1/ answers 501 with code 12, UNIMPLEMENTED,
  as Go's gateway does for paths it does not route.

The serving runner must cancel the handlers of vanished clients
(`handler_cancellation=True`): that is what ends their gRPC calls.
"""

from __future__ import annotations

import asyncio
import functools
import http
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import grpc
from aiohttp import web
from google.protobuf.message import Message

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.server.client_auth import with_authorization
from gazette_core.server.cors import add_cors
from gazette_core.server.json_input import JsonInputError, parse
from gazette_core.server.json_mapping import dumps, to_json

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub
    from gazette_core.consumer.protocol.consumer_pb2_grpc import ShardAsyncStub

# Request messages are small; a larger body is refused before it is read.
MAX_BODY_BYTES = 1 << 20
BODY_TIMEOUT_S = 30.0
_CHUNK = 64 * 1024
_JSON = "application/json"
_C = grpc.StatusCode
# grpc-gateway's HTTP status of each gRPC code; any other is 500.
HTTP_STATUS = {
    _C.OK: 200, _C.CANCELLED: 408, _C.INVALID_ARGUMENT: 400, _C.DEADLINE_EXCEEDED: 504,
    _C.NOT_FOUND: 404, _C.ALREADY_EXISTS: 409, _C.PERMISSION_DENIED: 403,
    _C.UNAUTHENTICATED: 401, _C.RESOURCE_EXHAUSTED: 429, _C.FAILED_PRECONDITION: 400,
    _C.ABORTED: 409, _C.OUT_OF_RANGE: 400, _C.UNIMPLEMENTED: 501, _C.UNAVAILABLE: 503,
}


@dataclass(frozen=True)
class Route:
    """A POST path and the RPC it calls: a method of the stub, and its request message."""

    path: str
    method: str
    request: type[Message]
    streaming: bool


def broker_gateway(stub: Callable[[], JournalAsyncStub],
                   allow_origins: Sequence[str]) -> web.Application:
    """A broker's gateway, to mount at /v1: journals/list and journals/read."""
    return gateway(stub, allow_origins, [
        Route("/journals/list", "List", pb.ListRequest, streaming=True),
        Route("/journals/read", "Read", pb.ReadRequest, streaming=True)])


def consumer_gateway(stub: Callable[[], ShardAsyncStub],
                     allow_origins: Sequence[str]) -> web.Application:
    """A consumer process's gateway, to mount at /v1: shards/list and shards/stat."""
    return gateway(stub, allow_origins, [
        Route("/shards/list", "List", cpb.ListRequest, streaming=False),
        Route("/shards/stat", "Stat", cpb.StatRequest, streaming=False)])


def gateway(stub: Callable[[], Any], allow_origins: Sequence[str],
            routes: Sequence[Route]) -> web.Application:
    """An aiohttp application serving `routes` through stubs that `stub` makes."""
    app = web.Application()
    add_cors(app, allow_origins)
    for route in routes:
        app.router.add_post(route.path, functools.partial(_serve, stub, route))
    app.router.add_route("*", "/{path:.*}", _unrouted)
    return app


async def _unrouted(_: web.Request) -> web.Response:
    return status_response(_C.UNIMPLEMENTED, http.HTTPStatus.NOT_IMPLEMENTED.phrase)


def status_response(code: grpc.StatusCode, message: str, status: int | None = None
                    ) -> web.Response:
    """A gRPC status as the gateway answers one that came before any response."""
    body = {"code": code.value[0], "message": message, "details": []}
    return web.Response(status=status or HTTP_STATUS.get(code, 500), body=dumps(body),
                        content_type=_JSON)


class _BodyError(JsonInputError):
    def __init__(self, message: str, code: grpc.StatusCode, status: int) -> None:
        super().__init__(message)
        self.code, self.status = code, status


async def _serve(stub: Callable[[], Any], route: Route, request: web.Request
                 ) -> web.StreamResponse:
    message = route.request()
    try:
        parse(await _body(request), message)
    except _BodyError as exc:
        return status_response(exc.code, str(exc), exc.status)
    except JsonInputError as exc:
        return status_response(_C.INVALID_ARGUMENT, str(exc))
    method = getattr(with_authorization(stub(), request.headers.get("Authorization")),
                     route.method)
    if route.streaming:
        return await _stream(request, method(message))
    call = method(message)
    try:
        response = await call
    except grpc.aio.AioRpcError as err:
        return status_response(err.code(), err.details() or "")
    finally:
        call.cancel()  # a vanished client's handler is cancelled while it waits
    return web.Response(body=dumps(to_json(response)), content_type=_JSON)


async def _body(request: web.Request) -> bytes:
    """The request body, refused when larger than MAX_BODY_BYTES or slower than its timeout."""
    too_large = _BodyError(f"the request body is larger than {MAX_BODY_BYTES} bytes",
                           _C.INVALID_ARGUMENT, 413)
    if (request.content_length or 0) > MAX_BODY_BYTES:
        raise too_large
    body = bytearray()
    try:
        async with asyncio.timeout(BODY_TIMEOUT_S):
            while piece := await request.content.read(_CHUNK):
                body += piece
                if len(body) > MAX_BODY_BYTES:
                    raise too_large
    except TimeoutError:
        raise _BodyError(f"the request body did not arrive within {BODY_TIMEOUT_S:g}s",
                         _C.CANCELLED, 408) from None
    return bytes(body)


async def _stream(request: web.Request, call: Any) -> web.StreamResponse:
    """Relay a server-streaming call's responses as lines, as they arrive."""
    response: web.StreamResponse | None = None
    try:
        async for message in call:
            if response is None:
                response = web.StreamResponse(headers={"Content-Type": _JSON})
                await response.prepare(request)
            await response.write(dumps({"result": to_json(message)}) + b"\n")
    except grpc.aio.AioRpcError as err:
        if response is None:
            return status_response(err.code(), err.details() or "")
        await response.write(dumps({"error": _stream_error(err.code(), err.details() or "")}))
    finally:
        call.cancel()
    if response is None:
        return web.Response(content_type=_JSON)  # the call ended without a response
    await response.write_eof()
    return response


def _stream_error(code: grpc.StatusCode, message: str) -> dict[str, Any]:
    status = HTTP_STATUS.get(code, 500)
    return {"grpcCode": code.value[0], "httpCode": status, "message": message,
            "httpStatus": http.HTTPStatus(status).phrase, "details": []}
