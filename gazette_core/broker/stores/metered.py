"""Fragment store metrics under Go's names: every operation a broker makes on a store.

`metered_store(store)` wraps a store so that each operation counts into
`gazette_store_operation_total{store,operation,status}` and
`gazette_store_operation_duration_seconds{store,operation}`. Label values
are Go's: `store` is the store URL exactly as configured, `operation` one
of `put`, `exists`, `list`, `get` (opening a fragment to read it: timed to
its first bytes), `remove` and `signget`, and `status` is `success` or
`error`. A put also adds its (compressed) bytes to
`gazette_store_put_bytes_total{store,encoding}` (`encoding` is the
Content-Encoding, or `none`), and a listing observes its length in
`gazette_store_list_items_count{store}`.

Health checks (`health.py`) use the stores unwrapped, as Go's do: they
count only in `gazette_store_health_check_total{store,status}` (`ok` or
`error`), and `gazette_store_active` is the number of stores under checks.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import AsyncIterator, Awaitable
from typing import TypeVar

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.stores.base import FragmentStore
from gazette_core.metrics.families import Cell, Counter, Gauge, Histogram, HistogramCell

T = TypeVar("T")
SUCCESS, ERROR = "success", "error"

STORE_ACTIVE = Gauge("gazette_store_active",
                     "Fragment stores in use (under health checks).").cell()
STORE_OPERATIONS = Counter("gazette_store_operation_total",
                           "Operations on fragment stores, by outcome.",
                           ("store", "operation", "status"))
STORE_OPERATION_SECONDS = Histogram(
    "gazette_store_operation_duration_seconds", "Seconds fragment store operations took.",
    ("store", "operation"), buckets=tuple(0.01 * 4 ** i for i in range(6)))
STORE_PUT_BYTES = Counter("gazette_store_put_bytes_total",
                          "Bytes put to fragment stores, by content encoding.",
                          ("store", "encoding"))
STORE_LIST_ITEMS = Histogram("gazette_store_list_items_count",
                             "Objects returned by fragment store listings.", ("store",),
                             buckets=tuple(10 * 4 ** i for i in range(6)))
STORE_HEALTH_CHECKS = Counter("gazette_store_health_check_total",
                              "Health checks of fragment stores, by outcome.",
                              ("store", "status"))

_metered: weakref.WeakKeyDictionary[FragmentStore, MeteredStore] = weakref.WeakKeyDictionary()


def metered_store(store: FragmentStore) -> FragmentStore:
    """`store` with its operations counted (one wrapper per store)."""
    wrapper = _metered.get(store)
    if wrapper is None:
        wrapper = _metered[store] = MeteredStore(store)
    return wrapper


def health_checked(url: str, ok: bool) -> None:
    """Count one completed health check of the store at `url`."""
    STORE_HEALTH_CHECKS.cell(url, "ok" if ok else "error").value += 1


class MeteredStore(FragmentStore):
    """A store whose every operation is counted and timed (see the module docstring)."""

    def __init__(self, inner: FragmentStore) -> None:
        self.inner = inner
        self.url = inner.url
        self._counts: dict[tuple[str, str], Cell] = {}
        self._seconds: dict[str, HistogramCell] = {}

    def _done(self, operation: str, status: str, started: float) -> None:
        count = self._counts.get((operation, status))
        if count is None:
            count = self._counts[(operation, status)] = STORE_OPERATIONS.cell(
                self.url, operation, status)
        count.value += 1
        seconds = self._seconds.get(operation)
        if seconds is None:
            seconds = self._seconds[operation] = STORE_OPERATION_SECONDS.cell(self.url,
                                                                              operation)
        seconds.observe(time.perf_counter() - started)

    async def _timed(self, operation: str, call: Awaitable[T]) -> T:
        started = time.perf_counter()
        try:
            result = await call
        except Exception:
            self._done(operation, ERROR, started)
            raise
        self._done(operation, SUCCESS, started)
        return result

    async def put(self, fragment: pb.Fragment, data: bytes,
                  content_encoding: str | None = None) -> None:
        await self._timed("put", self.inner.put(fragment, data, content_encoding))
        if data:
            STORE_PUT_BYTES.cell(self.url, content_encoding or "none").value += len(data)

    async def exists(self, fragment: pb.Fragment) -> bool:
        return await self._timed("exists", self.inner.exists(fragment))

    async def list(self, journal: str) -> list[pb.Fragment]:
        try:
            fragments = await self._timed("list", self.inner.list(journal))
        except Exception:
            STORE_LIST_ITEMS.cell(self.url).observe(0)
            raise
        STORE_LIST_ITEMS.cell(self.url).observe(len(fragments))
        return fragments

    async def open(self, fragment: pb.Fragment) -> AsyncIterator[bytes]:
        started = time.perf_counter()
        chunks = self.inner.open(fragment)
        try:
            try:
                first = await anext(chunks)
            except StopAsyncIteration:
                self._done("get", SUCCESS, started)
                return
            except Exception:
                self._done("get", ERROR, started)
                raise
            self._done("get", SUCCESS, started)
            yield first
            async for chunk in chunks:
                yield chunk
        finally:
            close = getattr(chunks, "aclose", None)
            if close is not None:
                await close()

    async def delete(self, fragment: pb.Fragment) -> None:
        await self._timed("remove", self.inner.delete(fragment))

    def sign_get(self, fragment: pb.Fragment, ttl_seconds: float) -> str:
        started = time.perf_counter()
        try:
            url = self.inner.sign_get(fragment, ttl_seconds)
        except Exception:
            self._done("signget", ERROR, started)
            raise
        self._done("signget", SUCCESS, started)
        return url
