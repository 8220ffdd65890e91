"""Background health checks of fragment stores (broker.md 7.3), one checker per store URL.

A check writes a probe object, reads it back, finds it in a listing, and
fetches it through a signed URL when that URL is http(s): the operations a
broker needs to persist fragments and let clients read them. Appends to a
journal wait until its first store is healthy (`StoreHealth.await_healthy`),
and the FragmentStoreHealth RPC reports the latest result.
"""

from __future__ import annotations

import asyncio
import logging
import random
import urllib.request
from collections.abc import Awaitable, Callable

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.stores.base import FragmentStore
from gazette_core.tasks import BackgroundTask

log = logging.getLogger(__name__)

PROBE = pb.Fragment(journal=".test", begin=0, end=13, compression_codec=pb.NONE)
PROBE_CONTENT = b"health-check\n"
CHECK_TIMEOUT_S = 60.0
SUCCESS_INTERVAL_S = 30 * 60.0
# Seconds before each retry after consecutive failures; the last repeats.
FAILURE_DELAYS_S = (0.0, 0.1, 1.0, 1.0, 10.0, 10.0, 100.0)
# An append gives up once it saw this many failed checks after its first.
APPEND_RECHECKS = 5
FIRST_CHECK_PENDING = "first health check hasn't completed yet"


async def check_store(store: FragmentStore) -> str:
    """Empty when the store passes a put/read/list/signed-GET round trip, else why not."""
    try:
        async with asyncio.timeout(CHECK_TIMEOUT_S):
            await store.put(PROBE, PROBE_CONTENT)
            if b"".join([chunk async for chunk in store.open(PROBE)]) != PROBE_CONTENT:
                return "health-check object read back different content"
            if not any(f.end == PROBE.end for f in await store.list(PROBE.journal)):
                return "health-check object was written but not listed"
            url = store.sign_get(PROBE, 5 * 60)
            if url.startswith(("http://", "https://")):
                fetched = await asyncio.to_thread(_fetch, url)
                if fetched != PROBE_CONTENT:
                    return "health-check object fetched through its signed URL differs"
    except TimeoutError:
        return f"health check did not finish within {CHECK_TIMEOUT_S:g}s"
    except Exception as exc:  # any store failure is the answer, not a crash
        return str(exc) or type(exc).__name__
    return ""


def _fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=CHECK_TIMEOUT_S) as resp:
        data: bytes = resp.read()
    return data


class StoreHealth:
    """The latest health of one store, re-checked in the background."""

    def __init__(self, store: FragmentStore,
                 check: Callable[[FragmentStore], Awaitable[str]] = check_store) -> None:
        self.store = store
        self.error = FIRST_CHECK_PENDING
        self.checks = 0  # completed checks, so waiters can tell a new result
        self._check = check
        self._changed = asyncio.Condition()
        self._task = BackgroundTask(f"store health {store.url}")

    def start(self) -> None:
        self._task.start(self._run)

    async def stop(self) -> None:
        await self._task.stop()

    async def _run(self) -> None:
        failures = 0
        while True:
            error = await self._check(self.store)
            await self._record(error)
            if error:
                log.warning("fragment store %s is unhealthy: %s", self.store.url, error)
                delay = FAILURE_DELAYS_S[min(failures, len(FAILURE_DELAYS_S) - 1)]
                failures += 1
            else:
                failures = 0
                delay = SUCCESS_INTERVAL_S * random.uniform(0.8, 1.2)
            await asyncio.sleep(delay)

    async def _record(self, error: str) -> None:
        async with self._changed:
            self.error = error
            self.checks += 1
            self._changed.notify_all()

    async def await_first_check(self) -> str:
        """The first check's result (empty: healthy), waiting for it if needed."""
        async with self._changed:
            await self._changed.wait_for(lambda: self.checks > 0)
            return self.error

    async def await_healthy(self, rechecks: int = APPEND_RECHECKS) -> str:
        """Empty once healthy; the error after `rechecks` further failed checks."""
        if self.checks and not self.error:
            return ""  # the common case, on every append: no lock taken
        if not await self.await_first_check():
            return ""
        async with self._changed:
            give_up = self.checks + rechecks
            await self._changed.wait_for(lambda: not self.error or self.checks > give_up)
            return self.error


class HealthMonitor:
    """One StoreHealth per store URL this broker has used, checked in the background."""

    def __init__(self, store_for: Callable[[str], FragmentStore]) -> None:
        self._store_for = store_for
        self._health: dict[str, StoreHealth] = {}

    def health(self, url: str) -> StoreHealth:
        """The store's health, starting its checks on first use."""
        health = self._health.get(url)
        if health is None:
            health = self._health[url] = StoreHealth(self._store_for(url))
            health.start()
        return health

    async def stop(self) -> None:
        for health in self._health.values():
            await health.stop()
        self._health.clear()
