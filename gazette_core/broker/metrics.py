"""Prometheus metrics of the broker, served as text at `/metrics` on the HTTP gateway.

Go's names, kinds and labels, counted where Go counts them:

- `gazette_journal_server_started_totals{operation}` and
  `..._completed_totals{operation,status}`: Journal RPCs by method name; a
  completed one's status is `ok`, the name of the non-OK Status a unary
  response carries (`JOURNAL_NOT_FOUND`), or `<error>` when the RPC failed.
- `gazette_write_head{journal}`: the primary's write head after each append.
- `gazette_spool_commits_total`, `..._commit_bytes_total`,
  `..._rollbacks_total`, `..._rollback_bytes_total` (every replica's spool),
  `gazette_spool_completed_total` (spools rolled with content) and
  `gazette_spool_persisted_total` (persisted by this broker, or found stored).

Beside them, figures of our own (the `gazette_` prefix, no Go counterpart):
appends received and committed as primary, Read RPCs served from local
replicas and their content bytes, the older per-provider store counters,
and HTTP gateway requests. Store metrics are in `stores/metered.py`, the
client's (append and read bytes, fragment readers) in `client/metrics.py`,
the gRPC ones in `gazette_core.metrics`. All are process-wide: brokers
sharing one process (tests) add into the same series.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, TypeVar

import grpc

from gazette_core.metrics.exposition import CONTENT_TYPE, exposition
from gazette_core.metrics.families import Cell, Counter, Gauge
from gazette_core.metrics.grpc_server import MethodMetrics, ServerMetrics

__all__ = ["CONTENT_TYPE", "exposition"]

T = TypeVar("T")

# Outcome label values of the older store counters.
OK = "ok"
FAIL = "fail"
# The completion status of a Journal RPC that failed with an error rather than a Status.
RPC_ERROR = "<error>"
JOURNAL_SERVICE = "protocol.Journal"

JOURNAL_SERVER_STARTED = Counter(
    "gazette_journal_server_started_totals",
    "Journal RPCs started, by operation.", ("operation",))
JOURNAL_SERVER_COMPLETED = Counter(
    "gazette_journal_server_completed_totals",
    "Journal RPCs completed, by operation and response status.", ("operation", "status"))
WRITE_HEAD = Gauge("gazette_write_head",
                   "Write head of a journal (the next offset to write) at its primary.",
                   ("journal",))
SPOOL_COMMITS = Counter("gazette_spool_commits_total",
                        "Commits of content to fragment spools (every replica).").cell()
SPOOL_COMMIT_BYTES = Counter("gazette_spool_commit_bytes_total",
                             "Bytes committed to fragment spools (every replica).").cell()
SPOOL_ROLLBACKS = Counter("gazette_spool_rollbacks_total",
                          "Roll-backs of uncommitted spool content (every replica).").cell()
SPOOL_ROLLBACK_BYTES = Counter("gazette_spool_rollback_bytes_total",
                               "Bytes of uncommitted spool content rolled back.").cell()
SPOOL_COMPLETED = Counter("gazette_spool_completed_total",
                          "Fragment spools completed (rolled with content).").cell()
SPOOL_PERSISTED = Counter(
    "gazette_spool_persisted_total",
    "Fragment spools persisted by this broker, or found already stored.").cell()

APPEND_RECEIVED_BYTES = Counter(
    "gazette_append_received_bytes_total", "Content bytes received by appends at their "
    "primary broker, including appends that were later rolled back.").cell()
APPEND_COMMITS = Counter(
    "gazette_append_commits_total",
    "Appends (pulses' empty ones included) committed by this broker as the journal's "
    "primary.").cell()
APPEND_COMMITTED_BYTES = Counter("gazette_append_committed_bytes_total",
                                 "Bytes of appends committed by this broker as primary.").cell()
READS = Counter("gazette_reads_total", "Read RPCs served from this broker's own replicas.").cell()
READ_SERVED_BYTES = Counter(
    "gazette_read_served_bytes_total",
    "Content bytes sent by Read RPCs served from this broker's replicas.").cell()
STORE_PERSISTED_BYTES = Counter("gazette_store_persisted_bytes_total",
                                "Bytes persisted to fragment stores.", ("provider",))
STORE_REQUESTS = Counter("gazette_store_requests_total",
                         "Fragment store operations of persisting, by provider and outcome.",
                         ("provider", "operation", "status"))
HTTP_REQUESTS = Counter("gazette_http_gateway_requests_total",
                        "Requests answered by the HTTP gateway, by method and code.",
                        ("method", "code"))


def store_provider(url: str) -> str:
    """The `provider` label of a store: its URL scheme (file, s3, gs, azure, ...)."""
    return url.split(":", 1)[0] or "unknown"


def store_request(provider: str, operation: str, ok: bool) -> None:
    STORE_REQUESTS.cell(provider, operation, OK if ok else FAIL).value += 1


async def observe_store(provider: str, operation: str, call: Awaitable[T]) -> T:
    """Await a store operation, counting it in gazette_store_requests_total by outcome."""
    try:
        result = await call
    except Exception:
        store_request(provider, operation, False)
        raise
    store_request(provider, operation, True)
    return result


class JournalServerMetrics(ServerMetrics):
    """The broker's server metrics: gRPC's, plus Go's journal server counters."""

    def method_metrics(self, full_method: str, handler: grpc.RpcMethodHandler
                       ) -> MethodMetrics:
        if full_method.lstrip("/").startswith(JOURNAL_SERVICE + "/"):
            return _JournalMethod(full_method, handler)
        return super().method_metrics(full_method, handler)


class _JournalMethod(MethodMetrics):
    def __init__(self, full_method: str, handler: grpc.RpcMethodHandler) -> None:
        super().__init__(full_method, handler)
        self.operation = self.labels[2]
        self._journal_started = JOURNAL_SERVER_STARTED.cell(self.operation)
        self._completed: dict[str, Cell] = {}

    def start(self) -> float:
        self._journal_started.value += 1
        return super().start()

    def finished(self, code: str, started: float, response: Any) -> None:
        super().finished(code, started, response)
        status = RPC_ERROR if code != "OK" else _status_name(response)
        cell = self._completed.get(status)
        if cell is None:
            cell = self._completed[status] = JOURNAL_SERVER_COMPLETED.cell(self.operation,
                                                                           status)
        cell.value += 1


def _status_name(response: Any) -> str:
    """`ok`, or the name of the non-OK Status a unary response carries (None: a stream's)."""
    status = getattr(response, "status", 0)
    if not status:
        return OK
    descriptor = response.DESCRIPTOR.fields_by_name["status"].enum_type
    value = descriptor.values_by_number.get(status)
    return value.name if value is not None else str(status)
