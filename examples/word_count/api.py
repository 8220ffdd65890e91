"""The NGram gRPC service: Publish text, Query counts by prefix.

Requests and responses are JSON objects (no generated code needed), on the
method paths `/examples.wordcount.NGram/Publish` and `/Query`:

- Publish `{"text": "..."}` -> `{"n_grams": <distinct n-grams published>}`
- Query `{"prefix": "the c"}` -> `{"shard": "...", "grams": [{"n_gram", "count"}, ...]}`;
  a request another consumer forwarded carries `"proxied": true` and is answered
  only by the shard's primary, never forwarded again.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

SERVICE = "examples.wordcount.NGram"
PUBLISH = f"/{SERVICE}/Publish"
QUERY = f"/{SERVICE}/Query"

Handler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


def _encode(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode()


def _decode(data: bytes) -> dict[str, Any]:
    doc = json.loads(data)
    if not isinstance(doc, dict):
        raise ValueError("request is not a JSON object")
    return doc


class QueryError(Exception):
    """A query that cannot be answered here (yet), with the gRPC code to answer it with."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def _unary(handler: Handler) -> grpc.RpcMethodHandler:
    async def call(request: dict[str, Any], context: grpc.aio.ServicerContext) -> dict[str, Any]:
        try:
            return await handler(request)
        except QueryError as err:
            await context.abort(err.code, str(err))
        except (ValueError, KeyError, TypeError) as err:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"bad request: {err}")
        raise AssertionError("unreachable")  # abort() raises

    return grpc.unary_unary_rpc_method_handler(call, request_deserializer=_decode,
                                               response_serializer=_encode)


def service_handler(publish: Handler, query: Handler) -> grpc.GenericRpcHandler:
    return grpc.method_handlers_generic_handler(
        SERVICE, {"Publish": _unary(publish), "Query": _unary(query)})


async def call(channel: grpc.aio.Channel, method: str, request: dict[str, Any],
               timeout: float = 10.0) -> dict[str, Any]:
    rpc = channel.unary_unary(method, request_serializer=_encode, response_deserializer=_decode)
    response: dict[str, Any] = await rpc(request, timeout=timeout)
    return response


async def publish(channel: grpc.aio.Channel, text: str) -> int:
    """Publish `text` through any consumer; the number of distinct n-grams sent."""
    return int((await call(channel, PUBLISH, {"text": text}))["n_grams"])


async def query(channel: grpc.aio.Channel, prefix: str) -> dict[str, int]:
    """Counts of the n-grams starting with `prefix` (a whole first word), from any consumer."""
    resp = await call(channel, QUERY, {"prefix": prefix})
    return {g["n_gram"]: int(g["count"]) for g in resp["grams"]}
