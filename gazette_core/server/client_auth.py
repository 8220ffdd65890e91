"""Client-side authorization: attach a bearer token to every call on a channel.

With keys, each call gets a freshly minted token granting the capability
its method requires, with no selector (all journals), valid for an hour, or
a minute for Apply, as Go's clients do. Otherwise a pre-shared token is sent
as is. The interceptors are only installed when one of the two is set, so
channels without authorization take the plain gRPC path.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import grpc

from gazette_core.server import auth
from gazette_core.server.interceptor import JOURNAL_CAPABILITIES

APPLY_LIFETIME_S = 60.0
S = TypeVar("S")


@dataclass(frozen=True)
class CallAuth:
    """How a client authorizes its calls: a signing key, else a pre-shared token."""

    key: bytes = b""
    token: str = ""

    @classmethod
    def from_settings(cls, keys: str = "", token: str = "") -> CallAuth | None:
        """From `--broker.auth-keys` (the first key signs) or `--broker.auth-token`."""
        parsed = auth.parse_keys(keys)
        if parsed is not None:
            return cls(key=parsed.signing)
        return cls(token=token.strip()) if token.strip() else None

    def bearer(self, method: str) -> str:
        """The `authorization` metadata value for a call of `method`."""
        if not self.key:
            return f"Bearer {self.token}"
        lifetime = APPLY_LIFETIME_S if method.endswith("/Apply") else auth.HOUR_S
        capability = JOURNAL_CAPABILITIES.get(method, auth.ALL)
        return f"Bearer {auth.mint(self.key, capability, lifetime_s=lifetime)}"


def bearer_metadata(value: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", value),)


class AuthorizedStub:
    """A stub whose every call carries one fixed `authorization` value as gRPC metadata.

    Gateways wrap their stub of the local server in one, so that an HTTP
    request is exactly as authorized as the Authorization header it brought.
    """

    def __init__(self, stub: Any, authorization: str) -> None:
        self._stub, self._metadata = stub, bearer_metadata(authorization)

    def __getattr__(self, method: str) -> Callable[..., Any]:
        return functools.partial(getattr(self._stub, method), metadata=self._metadata)


def with_authorization(stub: S, authorization: str | None) -> S:
    """`stub` itself, or given an Authorization value, a stub whose calls all carry it."""
    return cast("S", AuthorizedStub(stub, authorization)) if authorization else stub


class _Attach:
    """Adds the authorization header to a call's details (shared by the four kinds)."""

    def __init__(self, call_auth: CallAuth) -> None:
        self.call_auth = call_auth

    def details(self, details: grpc.aio.ClientCallDetails) -> grpc.aio.ClientCallDetails:
        method = details.method
        name = method.decode() if isinstance(method, bytes) else str(method)
        metadata = grpc.aio.Metadata(*(details.metadata or ()))
        metadata.add("authorization", self.call_auth.bearer(name))
        return details._replace(metadata=metadata)  # type: ignore[attr-defined,no-any-return]


class _UnaryUnary(_Attach, grpc.aio.UnaryUnaryClientInterceptor):
    async def intercept_unary_unary(self, continuation: Callable[..., Any],
                                    client_call_details: grpc.aio.ClientCallDetails,
                                    request: Any) -> Any:
        return await continuation(self.details(client_call_details), request)


class _UnaryStream(_Attach, grpc.aio.UnaryStreamClientInterceptor):
    async def intercept_unary_stream(self, continuation: Callable[..., Any],
                                     client_call_details: grpc.aio.ClientCallDetails,
                                     request: Any) -> Any:
        return await continuation(self.details(client_call_details), request)


class _StreamUnary(_Attach, grpc.aio.StreamUnaryClientInterceptor):
    async def intercept_stream_unary(self, continuation: Callable[..., Any],
                                     client_call_details: grpc.aio.ClientCallDetails,
                                     request_iterator: Any) -> Any:
        return await continuation(self.details(client_call_details), request_iterator)


class _StreamStream(_Attach, grpc.aio.StreamStreamClientInterceptor):
    async def intercept_stream_stream(self, continuation: Callable[..., Any],
                                      client_call_details: grpc.aio.ClientCallDetails,
                                      request_iterator: Any) -> Any:
        return await continuation(self.details(client_call_details), request_iterator)


def interceptors(call_auth: CallAuth) -> list[grpc.aio.ClientInterceptor]:
    """One interceptor per call kind: grpc.aio files each under a single kind."""
    return [kind(call_auth) for kind in (_UnaryUnary, _UnaryStream, _StreamUnary, _StreamStream)]
