"""Prometheus counters of the broker, served as text at `/metrics` on the HTTP gateway.

Names reuse Gazette's where Gazette has the same counter (journal server
RPCs, store requests, persisted bytes and spools); the others keep its
`gazette_` prefix and `_total` suffix. Counters live in prometheus_client's
default registry, so they are process-wide: brokers sharing one process
(tests) add into the same series. Hot paths only ever increment.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar

import grpc
from prometheus_client import (
    REGISTRY,
    Counter,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.metrics_core import Metric

# Gazette (Go) exposes no `_created` series; neither do we.
disable_created_metrics()

T = TypeVar("T")

# Outcome label values, as Gazette's store metrics use them.
OK = "ok"
FAIL = "fail"
# Gazette's completion status of an RPC that failed with an error rather than a Status.
RPC_ERROR = "<error>"


class _UntypedCounters:
    """Counters exposed under names that do not end in `_total` (typed `untyped`).

    Gazette's journal server counters are named `..._totals`, which
    prometheus_client's Counter cannot produce (it always appends `_total`).
    Only the event loop's thread increments them.
    """

    def __init__(self, name: str, documentation: str, labels: tuple[str, ...]) -> None:
        self.name, self.documentation, self.label_names = name, documentation, labels
        self.values: dict[tuple[str, ...], float] = {}
        REGISTRY.register(self)

    def inc(self, *labels: str) -> None:
        self.values[labels] = self.values.get(labels, 0.0) + 1.0

    def collect(self) -> Iterator[Metric]:
        metric = Metric(self.name, self.documentation, "unknown")
        for labels, value in list(self.values.items()):
            metric.add_sample(self.name, dict(zip(self.label_names, labels, strict=True)), value)
        yield metric


JOURNAL_SERVER_STARTED = _UntypedCounters(
    "gazette_journal_server_started_totals",
    "Total number of started JournalServer RPC invocations, by operation.",
    ("operation",))
JOURNAL_SERVER_COMPLETED = _UntypedCounters(
    "gazette_journal_server_completed_totals",
    "Total number of completed JournalServer RPC invocations, by operation & response status.",
    ("operation", "status"))
APPEND_BYTES = Counter(
    "gazette_append_bytes", "Content bytes received by appends at their primary broker, "
    "including appends that were later rolled back.")
APPEND_COMMITS = Counter(
    "gazette_append_commits",
    "Appends (pulses' empty ones included) committed by this broker as the journal's primary.")
APPEND_COMMITTED_BYTES = Counter(
    "gazette_append_committed_bytes", "Bytes of appends committed by this broker as primary.")
READS = Counter("gazette_reads", "Read RPCs served from this broker's own replicas.")
READ_BYTES = Counter(
    "gazette_read_bytes", "Content bytes sent by Read RPCs served from this broker's replicas.")
SPOOL_PERSISTED = Counter(
    "gazette_spool_persisted",
    "Total number of journal fragment spools which were persisted "
    "(by this server, or found already stored).")
STORE_PERSISTED_BYTES = Counter(
    "gazette_store_persisted_bytes", "Cumulative number of bytes persisted to fragment stores.",
    ["provider"])
STORE_REQUESTS = Counter(
    "gazette_store_requests", "Cumulative number of fragment store operations.",
    ["provider", "operation", "status"])
HTTP_REQUESTS = Counter(
    "gazette_http_gateway_requests", "Requests answered by the HTTP gateway, by method and code.",
    ["method", "code"])


# The classic text format, which every Prometheus understands (and Go's promhttp serves).
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def exposition() -> tuple[bytes, str]:
    """The text exposition of every registered metric, and its content type."""
    return generate_latest(), CONTENT_TYPE


def store_provider(url: str) -> str:
    """The `provider` label of a store: its URL scheme (file, s3, gs, azure, ...)."""
    return url.split(":", 1)[0] or "unknown"


def store_request(provider: str, operation: str, ok: bool) -> None:
    STORE_REQUESTS.labels(provider, operation, OK if ok else FAIL).inc()


class JournalServerMetrics(grpc.aio.ServerInterceptor):
    """Counts started and completed RPCs by method, as Gazette's journal server does.

    An RPC that ends with an error counts as `<error>`, one answering a
    non-OK Status (unary responses) under that Status's name, others as `ok`.
    """

    async def intercept_service(
        self, continuation: Callable[[grpc.HandlerCallDetails],
                                     Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(details)
        if handler is None:
            return handler
        operation = details.method.rsplit("/", 1)[-1]
        if handler.unary_unary is not None:
            return handler._replace(unary_unary=_unary(operation, handler.unary_unary))
        if handler.stream_unary is not None:
            return handler._replace(stream_unary=_unary(operation, handler.stream_unary))
        if handler.unary_stream is not None:
            return handler._replace(unary_stream=_streaming(operation, handler.unary_stream))
        return handler._replace(stream_stream=_streaming(operation, handler.stream_stream))


def _unary(operation: str, behavior: Callable[..., Any]) -> Callable[..., Any]:
    async def observed(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        JOURNAL_SERVER_STARTED.inc(operation)
        status = RPC_ERROR
        try:
            response = await behavior(request, context)
            status = _status_name(response)
            return response
        finally:
            JOURNAL_SERVER_COMPLETED.inc(operation, status)
    return observed


def _streaming(operation: str, behavior: Callable[..., Any]) -> Callable[..., Any]:
    # grpc.aio keeps the async servicer context only for async generator handlers,
    # so responses pass through this generator: ~150ns a message, against the
    # tens of microseconds gRPC spends on each.
    async def observed(request: Any, context: grpc.aio.ServicerContext[Any, Any]
                       ) -> AsyncIterator[Any]:
        JOURNAL_SERVER_STARTED.inc(operation)
        status = RPC_ERROR
        try:
            async for response in behavior(request, context):
                yield response
            code = context.code()
            status = OK if code is None or code == grpc.StatusCode.OK else RPC_ERROR
        finally:
            JOURNAL_SERVER_COMPLETED.inc(operation, status)
    return observed


def _status_name(response: Any) -> str:
    """`ok`, or the name of the non-OK Status a response carries (Gazette's labels)."""
    status = getattr(response, "status", 0)
    if not status:
        return OK
    descriptor = response.DESCRIPTOR.fields_by_name["status"].enum_type
    value = descriptor.values_by_number.get(status)
    return value.name if value is not None else str(status)


async def observe_store(provider: str, operation: str, call: Awaitable[T]) -> T:
    """Await a store operation, counting it in gazette_store_requests_total by outcome."""
    try:
        result = await call
    except Exception:
        store_request(provider, operation, False)
        raise
    store_request(provider, operation, True)
    return result
