"""Exponential back-off between retries of a failed RPC.

Retriable failures (a moving route, a broker restarting) settle within
seconds, so delays start small and are capped rather than growing without
bound.
"""

from __future__ import annotations

import asyncio
import random

INITIAL_DELAY = 0.05
MAX_DELAY = 5.0


class Backoff:
    """Doubling delays from `initial` up to `maximum` seconds, reset after a success."""

    def __init__(self, initial: float = INITIAL_DELAY, maximum: float = MAX_DELAY) -> None:
        self.initial = initial
        self.maximum = maximum
        self._next = initial
        self.attempts = 0

    def next_delay(self) -> float:
        """The delay to sleep before the next attempt; advances the sequence."""
        delay = self._next
        self._next = min(self._next * 2, self.maximum)
        self.attempts += 1
        # Jitter keeps many clients that failed together from retrying in lock-step.
        return delay * random.uniform(0.8, 1.0)

    async def wait(self) -> None:
        """Sleep for the next delay."""
        await asyncio.sleep(self.next_delay())

    def reset(self) -> None:
        """Start over from the initial delay (call after a success)."""
        self._next = self.initial
        self.attempts = 0
