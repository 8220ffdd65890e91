"""A grpc.aio server interceptor that answers every failure with a proper status.

Left to itself, gRPC answers an exception escaping a handler, or a request
message that does not decode, with UNKNOWN, the exception's Python class and
repr, and a traceback in the log. This interceptor wraps every handler, and
the other interceptors inside it: an undecodable message is INVALID_ARGUMENT
with one warning line, and any exception gets the status `statuses` picks.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeAlias

import grpc

from gazette_core.errors import CodedError
from gazette_core.server.statuses import abort, one_line

Context: TypeAlias = "grpc.aio.ServicerContext[Any, Any]"
log = logging.getLogger(__name__)


class Undecodable:
    """Stands in for a request message that failed to decode."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


class UndecodableRequest(CodedError):
    """A request message of the RPC did not decode."""

    def __init__(self, method: str) -> None:
        super().__init__("INVALID_ARGUMENT", f"undecodable request message for {method}")


class StatusInterceptor(grpc.aio.ServerInterceptor):
    """Answers undecodable requests and failed handlers with proper statuses."""

    async def intercept_service(
            self, continuation: Callable[[grpc.HandlerCallDetails],
                                         Awaitable[grpc.RpcMethodHandler]],
            details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
        handler = await continuation(details)
        if handler is None:
            return handler  # unknown method: gRPC answers UNIMPLEMENTED
        method = str(details.method)
        codecs: dict[str, Any] = {
            "request_deserializer": _tolerant(handler.request_deserializer),
            "response_serializer": handler.response_serializer}
        streamed = bool(handler.request_streaming)
        if handler.response_streaming:
            inner = handler.stream_stream if streamed else handler.unary_stream
            make = (grpc.stream_stream_rpc_method_handler if streamed
                    else grpc.unary_stream_rpc_method_handler)
            return make(_streaming(inner, method, streamed), **codecs)
        inner = handler.stream_unary if streamed else handler.unary_unary
        make = (grpc.stream_unary_rpc_method_handler if streamed
                else grpc.unary_unary_rpc_method_handler)
        return make(_unary(inner, method, streamed), **codecs)


def _tolerant(deserialize: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
    """`deserialize`, answering an Undecodable instead of raising."""
    if deserialize is None:
        return None

    def decode(data: bytes) -> Any:
        try:
            return deserialize(data)
        except Exception as exc:  # DecodeError, or whatever a custom codec raises
            return Undecodable(one_line(str(exc)))

    return decode


def _refuse(context: Context, method: str, bad: Undecodable) -> UndecodableRequest:
    log.warning("undecodable request message for %s from %s: %s",
                method, context.peer(), bad.reason)
    return UndecodableRequest(method)


async def _checked_stream(requests: AsyncIterator[Any], context: Context, method: str
                          ) -> AsyncIterator[Any]:
    async for request in requests:
        if isinstance(request, Undecodable):
            raise _refuse(context, method, request)
        yield request


def _arguments(request: Any, context: Context, method: str, streamed: bool) -> Any:
    """The request (or request stream) to hand the inner handler."""
    if streamed:
        return _checked_stream(request, context, method)
    if isinstance(request, Undecodable):
        raise _refuse(context, method, request)
    return request


def _unary(inner: Callable[[Any, Context], Awaitable[Any]], method: str, streamed: bool
           ) -> Callable[[Any, Context], Awaitable[Any]]:
    async def behavior(request: Any, context: Context) -> Any:
        try:
            return await inner(_arguments(request, context, method, streamed), context)
        except grpc.aio.AbortError:
            raise  # the status is already set
        except Exception as exc:
            await abort(context, exc, method)
            raise

    return behavior


def _streaming(inner: Callable[[Any, Context], AsyncIterator[Any]], method: str,
               streamed: bool) -> Callable[[Any, Context], AsyncIterator[Any]]:
    async def behavior(request: Any, context: Context) -> AsyncIterator[Any]:
        responses: AsyncIterator[Any] | None = None
        try:
            responses = inner(_arguments(request, context, method, streamed), context)
            async for response in responses:
                yield response
        except grpc.aio.AbortError:
            raise
        except Exception as exc:
            await abort(context, exc, method)
        finally:
            if responses is not None:
                await responses.aclose()  # type: ignore[attr-defined]

    return behavior
