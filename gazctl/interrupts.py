"""How a signal ends gazctl: Ctrl-C (SIGINT), and SIGTERM where a command asks for it.

A signal never raises an exception at some arbitrary point of gazctl's code.
Python's default Ctrl-C handling does: its KeyboardInterrupt can come out of a
weakref callback or a finalizer, where the interpreter prints "Exception
ignored in ..." and goes on, so the Ctrl-C is lost and a blocking command
runs on; or out of a library's import, with a traceback. Instead:

* while a command's coroutine runs under `run`, the first signal cancels it
  (it still flushes what it read and writes its offsets), and `run` then
  raises KeyboardInterrupt (SIGINT, exit 130) or SystemExit(128 + signal);
* at any other moment, and on a second signal, the process exits at once
  with 128 + the signal, writing nothing more.

This module imports no more than the standard library's `os` and `signal` when
the entry point takes SIGINT over, so that happens within moments of start.
"""

from __future__ import annotations

import os
import signal
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # types only: nothing slow is imported before SIGINT is taken over
    import asyncio
    from collections.abc import Coroutine
    from types import FrameType, TracebackType
    from typing import Any, TypeVar

    T = TypeVar("T")


class _Running:
    """The coroutine `run` runs now, and the signal that cancelled it, if any."""

    task: asyncio.Task[Any] | None = None
    signum: int | None = None


def on_signal(signum: int, _frame: FrameType | None) -> None:
    """The handler gazctl installs: cancel the running command once, else exit now."""
    task = _Running.task
    if task is None or task.done() or _Running.signum is not None:
        os._exit(128 + signum)
    _Running.signum = signum
    task.cancel()
    # The loop may be blocked in select() for a long time; wake it to see the cancel.
    task.get_loop().call_soon_threadsafe(lambda: None)


def take_over_ctrl_c() -> None:
    """Handle SIGINT as above, whatever was inherited (ignored, in a background job)."""
    signal.signal(signal.SIGINT, on_signal)


class handling:
    """Within the block, signal `signum` ends the command as Ctrl-C does (then restored)."""

    def __init__(self, signum: int) -> None:
        self._signum = signum
        self._previous: Any = None

    def __enter__(self) -> None:
        self._previous = signal.signal(self._signum, on_signal)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        signal.signal(self._signum, self._previous)


def _events_of_closed_loops(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The loop's exception handler: gRPC's late events for a loop that closed are no news.

    gRPC hands a completion to the loop its call belongs to. When gazctl runs
    in-process after other event loops (tests, a program calling `run_cli`
    more than once), a call of an earlier, closed loop can still complete,
    and handing that over fails with "Event loop is closed" inside this
    loop's callback. It concerns a finished command, not this one; gazctl's
    own process has one loop and never meets it. Anything else is reported.
    """
    exc = context.get("exception")
    if (isinstance(exc, RuntimeError) and str(exc) == "Event loop is closed"
            and "PollerCompletionQueue" in repr(context.get("handle"))):
        import logging

        logging.getLogger("gazctl").debug("gRPC event of a closed event loop dropped")
        return
    loop.default_exception_handler(context)


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)`, ended by a signal as above.

    When gazctl's handler is not installed (gazctl called in-process), this is
    `asyncio.run` with its own Ctrl-C handling.
    """
    import asyncio

    async def tracked() -> T:
        _Running.task = asyncio.current_task()
        asyncio.get_running_loop().set_exception_handler(_events_of_closed_loops)
        try:
            return await main
        finally:
            _Running.task = None

    _Running.signum = None
    try:
        return asyncio.run(tracked())
    except BaseException:
        if _Running.signum is None:
            raise
        # Whatever the cancelled command raised on its way out, it was interrupted.
        if _Running.signum == signal.SIGINT:
            raise KeyboardInterrupt from None
        raise SystemExit(128 + _Running.signum) from None
