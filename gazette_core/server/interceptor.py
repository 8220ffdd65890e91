"""A grpc.aio server interceptor that verifies the bearer token of every RPC.

Each RPC must carry `authorization: Bearer <JWT>` granting the capability
its method requires (docs/design/protocol.md#the-journal-service); otherwise it fails with gRPC
UNAUTHENTICATED before the handler runs. The verified claims are recorded
for the handler (`authz`), which hides journals outside their selector, and
the RPC is bounded by the token's expiry, as Go bounds its context: past it,
the RPC ends with DEADLINE_EXCEEDED.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeAlias

import grpc

from gazette_core.server import auth
from gazette_core.server.auth import AuthError, Claims, Keys
from gazette_core.server.authz import serve_with

Context: TypeAlias = "grpc.aio.ServicerContext[Any, Any]"
Authorize: TypeAlias = Callable[[Context], Awaitable[float]]

JOURNAL_CAPABILITIES: Mapping[str, int] = {
    "/protocol.Journal/List": auth.LIST,
    "/protocol.Journal/Apply": auth.APPLY,
    "/protocol.Journal/Read": auth.READ,
    "/protocol.Journal/Append": auth.APPEND,
    "/protocol.Journal/Replicate": auth.REPLICATE,
    "/protocol.Journal/ListFragments": auth.READ,
    "/protocol.Journal/FragmentStoreHealth": auth.READ,
}
EXPIRED = "authorization expired during the RPC"


class AuthInterceptor(grpc.aio.ServerInterceptor):
    """Verifies tokens with `keys`; methods not in `capabilities` need any valid token."""

    def __init__(self, keys: Keys, capabilities: Mapping[str, int] = JOURNAL_CAPABILITIES
                 ) -> None:
        self.keys = keys
        self.capabilities = capabilities

    async def intercept_service(
            self, continuation: Callable[[grpc.HandlerCallDetails],
                                         Awaitable[grpc.RpcMethodHandler]],
            handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler  # unknown method: gRPC answers UNIMPLEMENTED
        require = self.capabilities.get(handler_call_details.method, 0)

        async def authorize(context: Context) -> float:
            try:
                claims = self.claims_of(context.invocation_metadata() or (), require)
            except AuthError as exc:
                await context.abort(grpc.StatusCode.UNAUTHENTICATED, str(exc))
                raise  # abort raised already
            serve_with(claims)
            loop = asyncio.get_running_loop()
            return loop.time() + (claims.expires_at - time.time())

        return _wrap(handler, authorize)

    def claims_of(self, metadata: Any, require: int) -> Claims:
        """The verified claims of a request's metadata, or AuthError saying what is wrong."""
        values = [str(value) for key, value in metadata if key == "authorization"]
        if not values or not values[0]:
            if self.keys.allow_missing:
                # The roll-out key: header-less requests get what they ask, for an hour.
                return Claims(require, expires_at=int(time.time()) + auth.HOUR_S)
            raise AuthError("missing or empty Authorization token")
        if not values[0].startswith("Bearer "):
            raise AuthError("invalid or unsupported Authorization header (expected 'Bearer')")
        return auth.verify(values[0].removeprefix("Bearer "), self.keys, require)


def _wrap(handler: grpc.RpcMethodHandler, authorize: Authorize) -> grpc.RpcMethodHandler:
    """`handler` with authorization first and the token's expiry as its deadline."""
    codecs: dict[str, Any] = {"request_deserializer": handler.request_deserializer,
                              "response_serializer": handler.response_serializer}
    if handler.response_streaming:
        if handler.request_streaming:
            return grpc.stream_stream_rpc_method_handler(
                _streaming(handler.stream_stream, authorize), **codecs)
        return grpc.unary_stream_rpc_method_handler(
            _streaming(handler.unary_stream, authorize), **codecs)
    if handler.request_streaming:
        return grpc.stream_unary_rpc_method_handler(
            _unary(handler.stream_unary, authorize), **codecs)
    return grpc.unary_unary_rpc_method_handler(_unary(handler.unary_unary, authorize), **codecs)


def _expired(deadline: float) -> bool:
    return asyncio.get_running_loop().time() >= deadline


def _unary(inner: Callable[[Any, Context], Awaitable[Any]], authorize: Authorize
           ) -> Callable[[Any, Context], Awaitable[Any]]:
    async def behavior(request: Any, context: Context) -> Any:
        deadline = await authorize(context)
        try:
            async with asyncio.timeout_at(deadline):
                return await inner(request, context)
        except TimeoutError:
            if not _expired(deadline):
                raise
            await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, EXPIRED)
            raise

    return behavior


def _streaming(inner: Callable[[Any, Context], AsyncIterator[Any]], authorize: Authorize
               ) -> Callable[[Any, Context], AsyncIterator[Any]]:
    async def behavior(request: Any, context: Context) -> AsyncIterator[Any]:
        deadline = await authorize(context)
        responses = inner(request, context)
        try:
            while True:
                # The deadline covers only our own awaits: one spanning `yield`
                # could cancel the task inside gRPC's code, beyond our reach.
                try:
                    async with asyncio.timeout_at(deadline):
                        resp = await anext(responses)
                except StopAsyncIteration:
                    return
                except TimeoutError:
                    if not _expired(deadline):
                        raise
                    await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, EXPIRED)
                yield resp
        finally:
            await responses.aclose()  # type: ignore[attr-defined]

    return behavior
