"""Draining a member that is leaving: wait while the allocator moves its items away.

A member marks its spec `exiting`; the allocator then moves its assignments
to other members. The member waits until it holds none, until nobody else
can take them, until nothing moved for `stall` seconds, or until `timeout`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from gazette_core.keyspace.keyspace import KeySpace

log = logging.getLogger(__name__)


async def drain(keyspace: KeySpace, held: Callable[[], int], others_can_take: Callable[[], bool],
                timeout: float, stall: float, what: str) -> None:
    """Wait until `held()` items are moved away, bounded as the module says."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    count, progress_at = held(), loop.time()
    while count and others_can_take() and loop.time() < deadline:
        if loop.time() - progress_at > stall:
            log.warning("%d %s could not be moved off this member", count, what)
            return  # the others lack capacity: waiting longer will not help
        revision = keyspace.revision
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(1.0):
                await keyspace.wait_for_change(revision)
        if held() < count:
            count, progress_at = held(), loop.time()
