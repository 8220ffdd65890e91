"""What broker and consumer processes share as programs: logging, exit statuses, errors.

`run_process` runs a server coroutine to its end and turns the ways it ends
into one line on stderr (a JSON entry with --log.format json) and an exit
status: 0 stopped by a signal, 1 failed, EXIT_LEASE_LOST (75, EX_TEMPFAIL)
when its Etcd lease was lost and a supervisor should simply restart it. The
reason of a failure also goes to the termination log (termination.py).
`quietly` runs one step of stopping such a process.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol

from gazette_core.errors import GazetteError, with_type
from gazette_core.server import log_format, termination
from gazette_core.server.statuses import describe

LEVELS = {"trace": logging.DEBUG, "debug": logging.DEBUG, "info": logging.INFO,
          "warn": logging.WARNING, "warning": logging.WARNING, "error": logging.ERROR,
          "fatal": logging.CRITICAL}
EXIT_LEASE_LOST = 75

log = logging.getLogger(__name__)


class LeaseLostExit(GazetteError):
    """The process lost its Etcd lease, released what it served and stopped."""


class Server(Protocol):
    """A broker or consumer process's service, as `serve_until_stopped` runs it."""

    lease_lost: asyncio.Event

    @property
    def endpoint(self) -> str: ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


async def serve_until_stopped(server: Server, name: str, lost: str) -> None:
    """Start `server` and serve until SIGTERM or SIGINT, or until its Etcd lease is lost.

    Either way the server is stopped; a lost lease then raises LeaseLostExit(`lost`).
    `name` says what is serving in the line printed once it serves.
    """
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await server.start()  # raises GazetteError with a clear message when it cannot
        log_format.say(logging.INFO, f"{name} serving at {server.endpoint}",
                       endpoint=server.endpoint)
        waits = [asyncio.create_task(server.lease_lost.wait()),
                 asyncio.create_task(stop.wait())]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in waits:
                task.cancel()
            await server.stop()
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
    if server.lease_lost.is_set():
        raise LeaseLostExit(lost)


async def start_or_undo(start: Awaitable[None], undo: Callable[[], Awaitable[None]]) -> None:
    """Await `start`; if it fails (or is cancelled) half-way, `undo` what it began and re-raise.

    A process that cannot start must leave no lease, key or bound port behind.
    """
    try:
        await start
    except BaseException:
        await undo()
        raise


async def quietly(what: str, step: Awaitable[Any]) -> None:
    """Run one step of stopping; a failure is logged, never skipping the steps after it."""
    try:
        await step
    except Exception as exc:
        log.warning("%s failed: %s", what, describe(exc))


def run_process(prog: str, log_level: str, serve: Coroutine[Any, Any, None],
                log_format_name: str = "text") -> int:
    """Run `serve` with logging at `log_level` in `log_format_name`; the exit status."""
    log_format.configure(LEVELS.get(log_level.lower(), logging.WARNING), log_format_name)
    try:
        asyncio.run(serve)
    except LeaseLostExit as exc:
        return _exit(EXIT_LEASE_LOST, "gazette", str(exc))
    except GazetteError as exc:
        return _exit(1, prog, str(exc))
    except Exception as exc:  # a failure nobody foresaw: still one line; the trace at debug
        log.debug("%s failed", prog, exc_info=exc)
        return _exit(1, prog, f"{with_type(exc)} (--log.level debug shows where)")
    return 0


def _exit(status: int, prog: str, reason: str) -> int:
    """Say why the process ends, on stderr and in the termination log; `status`."""
    termination.record(reason)
    log_format.say(logging.CRITICAL, reason, plain=f"{prog}: {reason}", exit_status=status)
    return status
