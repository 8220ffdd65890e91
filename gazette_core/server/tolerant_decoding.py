"""Request decoding that never fails inside gRPC, for servicers registered through it.

Left to itself, gRPC answers a request message that does not decode with
UNKNOWN, the exception's Python class and repr, and a traceback in the log.
`add_tolerant` registers a servicer with every request deserializer swapped
for one that hands the handler an `Undecodable` instead; the handler refuses
it (`check`, `checked`) as INVALID_ARGUMENT with one warning line, and maps
every other failure through `statuses`. This costs one function call per
message: an interceptor doing the same would add a coroutine to every call
and a generator step to every streamed message, on the append and read paths.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, TypeAlias, TypeVar

import grpc

from gazette_core.errors import CodedError
from gazette_core.server.statuses import one_line

Context: TypeAlias = "grpc.aio.ServicerContext[Any, Any]"
T = TypeVar("T")
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


class _Registrations:
    """Stands in for a server to catch the handlers a generated `add_*_to_server` adds."""

    def __init__(self) -> None:
        self.service = ""
        self.handlers: Mapping[str, grpc.RpcMethodHandler] = {}

    def add_generic_rpc_handlers(self, handlers: object) -> None:
        pass  # the same handlers arrive through add_registered_method_handlers

    def add_registered_method_handlers(self, service: str,
                                       handlers: Mapping[str, grpc.RpcMethodHandler]) -> None:
        self.service, self.handlers = service, handlers


def add_tolerant(add: Callable[[Any, Any], None], servicer: object,
                 server: grpc.aio.Server) -> None:
    """`add(servicer, server)` (a generated `add_*Servicer_to_server`), decoding tolerantly."""
    caught = _Registrations()
    add(servicer, caught)
    handlers = {name: handler._replace(  # type: ignore[attr-defined]
                    request_deserializer=_tolerant(handler.request_deserializer))
                for name, handler in caught.handlers.items()}
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(caught.service, handlers),))
    server.add_registered_method_handlers(caught.service, handlers)


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


def check(request: T, context: Context, method: str) -> T:
    """`request`, unless it did not decode."""
    if isinstance(request, Undecodable):
        raise _refuse(context, method, request)
    return request


async def checked(requests: AsyncIterator[T], context: Context, method: str
                  ) -> AsyncIterator[T]:
    """The request stream, ending in UndecodableRequest at a message that did not decode."""
    async for request in requests:
        if isinstance(request, Undecodable):
            raise _refuse(context, method, request)
        yield request
