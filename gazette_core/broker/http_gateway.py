"""The HTTP content gateway of a broker: GET/HEAD read a journal, PUT appends to it.

Requests become Read and Append RPCs to the local broker, which proxies them
to the journal's members as any client call, so the gateway holds no journal
state. An `Authorization` header rides along as gRPC metadata. Its route
takes every path the broker's HTTP mux (server/http_mux.py) leaves over.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, cast

from aiohttp import web
from aiohttp.http_writer import StreamWriter

from gazette_core.broker import metrics
from gazette_core.broker.client.appender import CHUNK_SIZE, append
from gazette_core.broker.client.channel import journal_stub
from gazette_core.broker.client.reader import Reader
from gazette_core.broker.http_headers import CLOSE_ERROR, Headers, append_headers, read_headers
from gazette_core.broker.http_requests import append_journal, read_request
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import GazetteError, StatusError
from gazette_core.server.client_auth import with_authorization
from gazette_core.server.http_mux import IDLE_TIMEOUT_S

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub

log = logging.getLogger(__name__)

_READ_STATUS_CODES = {pb.OK: 206, pb.JOURNAL_NOT_FOUND: 404,
                      pb.INSUFFICIENT_JOURNAL_BROKERS: 503, pb.OFFSET_NOT_YET_AVAILABLE: 416}


class BodyStalledError(GazetteError):
    """A request body sent nothing for the gateway's idle timeout."""


def error_response(status: int, text: str) -> web.Response:
    """An error answered as Go's http.Error does: the text and a newline, as plain text."""
    return web.Response(status=status, text=text + "\n", charset="utf-8",
                        headers={"X-Content-Type-Options": "nosniff"})


def _error_text(exc: GazetteError) -> str:
    # Go's client turns a non-OK Status into an error reading just the status name.
    if isinstance(exc, StatusError) and exc.status in pb.Status.values():
        return pb.Status.Name(cast("pb.Status.ValueType", exc.status))
    return str(exc)


@web.middleware
async def count_requests(request: web.Request,
                         handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                         ) -> web.StreamResponse:
    """Count each answered request by method and status code."""
    response = await handler(request)
    metrics.HTTP_REQUESTS.cell(request.method, str(response.status)).value += 1
    return response


class HttpGateway:
    """The content gateway's route, in front of the broker at `broker_endpoint`.

    `connect` makes the stub the gateway calls it through; a broker passes
    its peer stub, which speaks TLS to a TLS broker. It carries no token of
    its own: a request is only as authorized as its Authorization header.
    """

    def __init__(self, broker_endpoint: str,
                 connect: Callable[[str], JournalAsyncStub] = journal_stub,
                 idle_timeout: float = IDLE_TIMEOUT_S) -> None:
        self.broker_endpoint = broker_endpoint
        self._connect = connect
        self._idle_timeout = idle_timeout
        self.port: int | str = 0  # where it is served, once it is

    def routes(self) -> list[web.AbstractRouteDef]:
        """The gateway's route: every path names a journal."""
        return [web.route("*", "/{journal:.*}", self._serve)]

    def _stub(self, request: web.Request) -> JournalAsyncStub:
        return with_authorization(self._connect(self.broker_endpoint),
                                  request.headers.get("Authorization"))

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        if request.method in ("GET", "HEAD"):
            return await self._serve_read(request)
        if request.method == "PUT":
            return await self._serve_append(request)
        return error_response(400, f"unknown method: {request.method}")

    async def _serve_append(self, request: web.Request) -> web.StreamResponse:
        try:
            journal = append_journal(request.path, request.query_string)
        except GazetteError as exc:
            return error_response(400, str(exc))
        try:
            resp = await append(self._stub(request), journal,
                                _body(request, self._idle_timeout))
        except BodyStalledError as exc:
            # The append was abandoned, so the broker rolled it back.
            response = error_response(408, str(exc))
            response.force_close()
            return response
        except GazetteError as exc:
            return error_response(500, _error_text(exc))
        return web.Response(status=204, headers=append_headers(resp, request.path))

    async def _serve_read(self, request: web.Request) -> web.StreamResponse:
        try:
            req = read_request(request.path, request.query_string, request.method == "HEAD")
        except GazetteError as exc:
            return error_response(400, str(exc))
        reader = Reader(self._stub(request), req)
        try:
            return await self._stream_read(request, reader)
        finally:
            reader.close()

    async def _stream_read(self, request: web.Request, reader: Reader) -> web.StreamResponse:
        first = b""
        try:
            first = await reader.__anext__()
        except StopAsyncIteration:
            pass  # metadata only (HEAD), or the broker ended the RPC
        except StatusError:
            pass  # the status is in reader.response
        except GazetteError as exc:
            gone = request.transport is None or request.transport.is_closing()
            log.warning("http gateway: failed to proxy Read request: %s", exc)
            return error_response(408 if gone else 500, str(exc))
        resp = reader.response
        headers = read_headers(resp, request.path)
        if resp.status != pb.OK:
            code = _READ_STATUS_CODES.get(resp.status, 500)
            return _with_headers(error_response(code, pb.Status.Name(resp.status)), headers)
        if request.method == "GET":
            headers.append(("Trailer", CLOSE_ERROR))
        response = web.StreamResponse(status=206, headers=headers)
        await response.prepare(request)
        if request.method == "GET":
            await _stream_content(request, response, reader, first)
        await response.write_eof()
        return response


def _with_headers(response: web.Response, headers: Headers) -> web.Response:
    for name, value in headers:
        response.headers.add(name, value)
    return response


async def _stream_content(request: web.Request, response: web.StreamResponse, reader: Reader,
                          first: bytes) -> None:
    """Copy content until the RPC ends, then send why it ended as the X-Close-Error trailer."""
    skipped = reader.skipped  # a jump on the first response is shown by Content-Range
    reason = "broker terminated RPC"
    try:
        if first:
            await response.write(first)
        async for chunk in reader:
            if reader.skipped != skipped:
                reason = "offset jump"  # a later jump ends the stream; the client re-reads
                break
            await response.write(chunk)
    except GazetteError as exc:
        reason = _error_text(exc)
    await _write_trailer(request, response, reason)


async def _write_trailer(request: web.Request, response: web.StreamResponse, reason: str) -> None:
    """Finish a chunked body with the trailer; aiohttp writes no trailers itself."""
    writer = request.writer
    if not isinstance(writer, StreamWriter) or not writer.chunked:
        return  # an HTTP/1.0 client: no chunked encoding, hence no trailers
    # From here on the bytes go out as they are: the last chunk, the trailer, the end.
    writer.chunked = False
    value = " ".join(reason.split())  # a field value holds no line breaks
    await response.write(f"0\r\n{CLOSE_ERROR}: {value}\r\n\r\n".encode())


async def _body(request: web.Request, idle_timeout: float) -> AsyncIterator[bytes]:
    """The request body in pieces of up to CHUNK_SIZE, coalescing what has already arrived.

    A body that sends nothing for `idle_timeout` seconds raises BodyStalledError:
    the append it feeds holds its journal's pipeline meanwhile.
    """
    content = request.content
    while True:
        try:
            async with asyncio.timeout(idle_timeout):
                piece = await content.read(CHUNK_SIZE)
        except TimeoutError:
            raise BodyStalledError(
                f"request body sent nothing for {idle_timeout:g}s") from None
        if not piece:
            return
        pieces = [piece]
        size = len(piece)
        while size < CHUNK_SIZE and (more := content.read_nowait(CHUNK_SIZE - size)):
            pieces.append(more)
            size += len(more)
        yield b"".join(pieces)
