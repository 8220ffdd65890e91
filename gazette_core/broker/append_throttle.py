"""Throttling appends to a journal's maximum append rate.

A journal's rate is its spec's `max_append_rate`, capped by
`--broker.max-append-rate`; 0 at both means no limit. Each journal has a
bank of bytes, filled at its rate and holding at most BANK_S seconds of it
(so a journal idle for a while may take a burst), starting empty when this
broker takes the journal on. An append chunk waits until the bank covers it
(or holds all it can), then draws on it; a chunk that had to wait counts as
delayed (`AppendResponse.delayed_chunks`). The client feels the wait as
back-pressure on its stream, and none of it counts against the minimum
append rate.

Once the journal's route changes during an append, its remaining chunks go
unthrottled: the route's new members wait for this append to end.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

# The most the bank holds, in seconds of the journal's rate.
BANK_S = 10.0
# How often a waiting chunk looks again (for a changed rate or route).
QUANTUM_S = 0.05


def effective_rate(journal_rate: int, cap: int) -> int:
    """Bytes per second a journal may take: its own rate capped by the broker's; 0: no limit."""
    if cap <= 0:
        return max(journal_rate, 0)
    if journal_rate <= 0:
        return cap
    return min(journal_rate, cap)


class RateBank:
    """The bytes one journal may append now, refilled at its rate."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._at = clock()
        self.balance = 0.0

    def _fill(self, rate: int) -> None:
        now = self._clock()
        self.balance = min(self.balance + (now - self._at) * rate, rate * BANK_S)
        self._at = now

    def wait(self, size: int, rate: int) -> float:
        """Seconds until the bank covers `size` bytes at `rate` (all it can hold, if more)."""
        self._fill(rate)
        need = min(float(size), rate * BANK_S)
        return max(0.0, (need - self.balance) / rate)

    def take(self, size: int, rate: int) -> None:
        """Draw `size` bytes; a chunk larger than the bank leaves it in debt."""
        self._fill(rate)
        self.balance -= size


class AppendThrottle:
    """Paces one append's chunks to its journal's rate, counting those it delayed.

    `rate()` is the journal's effective rate now; `route_changed()` whether its
    route differs from the one the append started on.
    """

    def __init__(self, bank: RateBank, rate: Callable[[], int],
                 route_changed: Callable[[], bool]) -> None:
        self._bank = bank
        self._rate = rate
        self._route_changed = route_changed
        self.enabled = True
        self.delayed = 0

    async def admit(self, size: int) -> float:
        """Wait until a chunk of `size` bytes may go on; the seconds waited."""
        rate = self._rate()
        if not self.enabled or rate <= 0:
            return 0.0
        loop = asyncio.get_running_loop()
        started = loop.time()
        wait = self._bank.wait(size, rate)
        if wait > 0:
            self.delayed += 1
        while wait > 0:
            if self._route_changed():
                self.enabled = False
                return loop.time() - started
            await asyncio.sleep(min(wait, QUANTUM_S))
            rate = self._rate()
            if rate <= 0:
                return loop.time() - started
            wait = self._bank.wait(size, rate)
        self._bank.take(size, rate)
        return loop.time() - started
