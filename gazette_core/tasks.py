"""Background tasks of long-lived components: started explicitly, stopped by cancelling.

Every component with a `start()`/`stop()` pair (KeySpace, Allocator,
Announcement, Replica, ...) keeps its loop in a `BackgroundTask`, so stopping
is one well-behaved call that waits for the loop to unwind.

Timeouts in such loops use `asyncio.timeout()`, never `asyncio.wait_for()`:
on Python 3.11, `wait_for` swallows a cancellation that arrives just as its
awaitable completes, so a loop being stopped would carry on (and its
`stop()` would wait for ever).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def copy_outcome(source: asyncio.Future[T], target: asyncio.Future[T]) -> None:
    """Settle `target` as `source` settled (a done-callback chaining two futures).

    A `target` already settled, e.g. cancelled by its waiter, is left alone.
    """
    if target.done():
        return
    if source.cancelled():
        target.cancel()
    elif (exc := source.exception()) is not None:
        target.set_exception(exc)
    else:
        target.set_result(source.result())


async def cancel_and_wait(task: asyncio.Future[Any] | None) -> None:
    """Cancel `task` (if any) and wait until it has finished unwinding."""
    if task is None:
        return
    task.cancel()
    await wait_unwound(task)


async def wait_unwound(task: asyncio.Future[Any]) -> None:
    """Wait until `task` has finished; its being cancelled is no error.

    Only `task`'s cancellation is absorbed. When the caller itself is
    cancelled meanwhile, that cancellation goes on up: catching it too would
    let a component that is being stopped carry on, and whoever stops it
    wait for ever.
    """
    try:
        await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise  # the caller itself is being cancelled, not just `task`


class BackgroundTask:
    """At most one running task, created by `start()` and cancelled by `stop()`."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self, body: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run `body()` in the background unless it already runs."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(body(), name=self.name)

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)
