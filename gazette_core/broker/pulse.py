"""The pulse: an empty append by the primary of each journal, on route changes and every minute.

An empty append runs the whole append path without content: it synchronises
the pipeline (so a new replica catches up), writes the current Route into the
assignment values (so the allocator may finish a reassignment), and applies
rolls due to flush_interval or a codec change on idle journals (docs/design/append.md#pulses).
Journals are pulsed independently of each other, and a failed pulse after a
route change is retried soon, with back-off, so a new replica is synchronised
within moments rather than at the next periodic pulse.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from gazette_core.broker.append_api import serve_append
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import GazetteError

if TYPE_CHECKING:
    from gazette_core.broker.service import Broker

log = logging.getLogger(__name__)

PULSE_INTERVAL_S = 60.0
# With --broker.auto-suspend, a journal whose write head stood still for this
# many pulses in a row is asked to suspend if it is flushed.
AUTO_SUSPEND_STABLE_PULSES = 15
# A failed on-route-change pulse is retried after this, doubling, this many times.
ROUTE_PULSE_RETRY_S = 0.25
ROUTE_PULSE_RETRIES = 6


class Pulse:
    """Pulses the journals this broker leads."""

    def __init__(self, broker: Broker, interval: float = PULSE_INTERVAL_S) -> None:
        self.broker = broker
        self.interval = interval
        self._due: set[str] = set()
        self._last: dict[str, float] = {}
        # Per journal: the write head at the last pulse and how many pulses saw it unchanged.
        self._stable: dict[str, tuple[int, int]] = {}
        self._wake = asyncio.Event()
        self._running: dict[str, asyncio.Task[None]] = {}
        # Per journal: failed pulses in a row since its route changed.
        self._retries: dict[str, int] = {}

    def route_changed(self, journal: str) -> None:
        """Pulse `journal` soon: its route changed and this broker is its primary."""
        self._due.add(journal)
        self._wake.set()

    async def run(self) -> None:
        try:
            while True:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.interval / 4):
                        await self._wake.wait()
                self._wake.clear()
                self._start_due(time.monotonic())
        finally:
            for task in list(self._running.values()):
                task.cancel()
            await asyncio.gather(*self._running.values(), return_exceptions=True)

    def _start_due(self, now: float) -> None:
        """Start a pulse of every due journal not being pulsed already.

        Each runs on its own: one journal waiting on the allocator or a slow
        peer must not hold up the pulse that syncs another's new replica. A
        journal whose route changes while it is pulsed stays due, for the new route.
        """
        for journal, replica in self.broker.resolver.replicas.items():
            if journal in self._running:
                continue
            changed = journal in self._due
            if not changed and not (replica.primary
                                    and now - self._last.get(journal, 0.0) >= self.interval):
                continue
            self._due.discard(journal)
            self._last[journal] = now
            task = asyncio.get_running_loop().create_task(self._pulse_due(journal, changed),
                                                          name=f"pulse {journal}")
            self._running[journal] = task

    async def _pulse_due(self, journal: str, route_changed: bool) -> None:
        try:
            resp = await self.pulse(journal)
        finally:
            self._running.pop(journal, None)
            self._wake.set()
        if resp is not None and resp.status == pb.OK:
            self._retries.pop(journal, None)
        elif route_changed:
            # The new replica must be synchronised soon, not at the next periodic pulse.
            attempt = self._retries.get(journal, 0)
            if attempt < ROUTE_PULSE_RETRIES:
                self._retries[journal] = attempt + 1
                delay = min(ROUTE_PULSE_RETRY_S * 2 ** attempt, self.interval)
                asyncio.get_running_loop().call_later(delay, self.route_changed, journal)

    async def pulse(self, journal: str) -> pb.AppendResponse | None:
        """One empty append to `journal`, served here only (never proxied)."""
        mode = self._mode(journal)

        async def requests() -> AsyncIterator[pb.AppendRequest]:
            yield pb.AppendRequest(journal=journal, do_not_proxy=True, suspend=mode)
            yield pb.AppendRequest()

        try:
            async with asyncio.timeout(self.interval):
                resp = await serve_append(self.broker, requests())
        except (GazetteError, TimeoutError) as exc:
            log.info("pulse of %s failed: %s", journal, exc)
            return None
        self._observe(journal, resp)
        return resp

    def _mode(self, journal: str) -> pb.AppendRequest.Suspend.ValueType:
        """NO_RESUME, or IF_FLUSHED once an auto-suspending broker saw the journal idle."""
        _, stable = self._stable.get(journal, (-1, 0))
        if self.broker.config.auto_suspend and stable >= AUTO_SUSPEND_STABLE_PULSES:
            return pb.AppendRequest.SUSPEND_IF_FLUSHED
        return pb.AppendRequest.SUSPEND_NO_RESUME

    def _observe(self, journal: str, resp: pb.AppendResponse) -> None:
        if resp.status != pb.OK:
            self._stable.pop(journal, None)
            return
        head, stable = self._stable.get(journal, (-1, 0))
        self._stable[journal] = (resp.commit.end, stable + 1 if head == resp.commit.end else 0)
