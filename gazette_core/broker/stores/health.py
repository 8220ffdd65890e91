"""Background health checks of fragment stores, one checker per store URL.

See docs/design/fragments.md#store-health.

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
from gazette_core.broker.stores.metered import STORE_ACTIVE, health_checked
from gazette_core.errors import GazetteError
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
# Defaults of --broker.store-health-sweep and --broker.store-health-limit.
SWEEP_INTERVAL_S = 3600.0
MAX_CHECKERS = 1000


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
        self._waiting = 0
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
            self._log(error)
            await self._record(error)
            if error:
                delay = FAILURE_DELAYS_S[min(failures, len(FAILURE_DELAYS_S) - 1)]
                failures += 1
            else:
                failures = 0
                delay = SUCCESS_INTERVAL_S * random.uniform(0.8, 1.2)
            await asyncio.sleep(delay)

    def _log(self, error: str) -> None:
        # Once per change, not once per check: a store failing for hours, or
        # thousands of stores asked about, must not flood the log.
        if error == self.error:
            if error:
                log.debug("fragment store %s is still unhealthy: %s", self.store.url, error)
        elif error:
            log.warning("fragment store %s is unhealthy: %s", self.store.url, error)
        elif self.error != FIRST_CHECK_PENDING:
            log.info("fragment store %s is healthy again", self.store.url)

    async def _record(self, error: str) -> None:
        health_checked(self.store.url, not error)
        async with self._changed:
            self.error = error
            self.checks += 1
            self._changed.notify_all()

    @property
    def waiting(self) -> bool:
        """Whether a caller waits for a check result (so the checker must keep running)."""
        return self._waiting > 0

    async def await_first_check(self) -> str:
        """The first check's result (empty: healthy), waiting for it if needed."""
        async with self._changed:
            self._waiting += 1
            try:
                await self._changed.wait_for(lambda: self.checks > 0)
            finally:
                self._waiting -= 1
            return self.error

    async def await_healthy(self, rechecks: int = APPEND_RECHECKS) -> str:
        """Empty once healthy; the error after `rechecks` further failed checks."""
        if self.checks and not self.error:
            return ""  # the common case, on every append: no lock taken
        if not await self.await_first_check():
            return ""
        async with self._changed:
            give_up = self.checks + rechecks
            self._waiting += 1
            try:
                await self._changed.wait_for(lambda: not self.error or self.checks > give_up)
            finally:
                self._waiting -= 1
            return self.error


class TooManyCheckersError(GazetteError):
    """A new store would exceed the broker's limit of health checkers."""

    grpc_code = "RESOURCE_EXHAUSTED"


class HealthMonitor:
    """One StoreHealth per store URL in use, checked in the background.

    Any caller of FragmentStoreHealth can name new stores, so checkers are
    bounded: a sweep every `sweep_interval` seconds stops those unused since
    the previous sweep (as Gazette does hourly), and past `limit` checkers a
    request for another store is refused. Journals' own stores are always
    checked: appends call `health` and so keep their checkers in use.
    """

    def __init__(self, store_for: Callable[[str], FragmentStore],
                 sweep_interval: float = SWEEP_INTERVAL_S, limit: int = MAX_CHECKERS) -> None:
        self._store_for = store_for
        self._sweep_interval = sweep_interval
        self._limit = limit
        self._health: dict[str, StoreHealth] = {}
        self._used: set[str] = set()  # URLs asked about since the last sweep
        self._sweeper = BackgroundTask("store health sweep")

    def health(self, url: str, *, limited: bool = False) -> StoreHealth:
        """The store's health, starting its checks on first use.

        With `limited` (a request naming an arbitrary store), a new checker
        beyond the limit raises TooManyCheckersError.
        """
        health = self._health.get(url)
        if health is None:
            if limited and len(self._health) >= self._limit:
                raise TooManyCheckersError(
                    f"too many fragment stores under health checks (limit {self._limit}): "
                    "retry once unused checkers are swept")
            health = self._health[url] = StoreHealth(self._store_for(url))
            health.start()
            STORE_ACTIVE.value += 1
            self._sweeper.start(self._sweep_forever)
        self._used.add(url)
        return health

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(self._sweep_interval)
            await self.sweep()

    async def sweep(self) -> None:
        """Stop the checkers nobody asked about since the previous sweep."""
        unused = [url for url, health in self._health.items()
                  if url not in self._used and not health.waiting]
        self._used.clear()
        for url in unused:
            await self._health.pop(url).stop()
            STORE_ACTIVE.value -= 1
        if unused:
            log.debug("stopped %d unused fragment store health checker(s)", len(unused))

    async def stop(self) -> None:
        await self._sweeper.stop()
        for health in self._health.values():
            await health.stop()
        STORE_ACTIVE.value -= len(self._health)
        self._health.clear()
