"""What broker and consumer processes share as programs: logging, exit statuses, errors.

`run_process` runs a server coroutine to its end and turns the ways it ends
into one line on stderr and an exit status: 0 stopped by a signal, 1 failed,
EXIT_LEASE_LOST (75, EX_TEMPFAIL) when its Etcd lease was lost and a
supervisor should simply restart it. `quietly` runs one step of stopping
such a process.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Awaitable, Coroutine
from typing import Any

from gazette_core.errors import GazetteError
from gazette_core.server.statuses import describe

LEVELS = {"trace": logging.DEBUG, "debug": logging.DEBUG, "info": logging.INFO,
          "warn": logging.WARNING, "warning": logging.WARNING, "error": logging.ERROR,
          "fatal": logging.CRITICAL}
EXIT_LEASE_LOST = 75

log = logging.getLogger(__name__)


class LeaseLostExit(GazetteError):
    """The process lost its Etcd lease, released what it served and stopped."""


async def quietly(what: str, step: Awaitable[Any]) -> None:
    """Run one step of stopping; a failure is logged, never skipping the steps after it."""
    try:
        await step
    except Exception as exc:
        log.warning("%s failed: %s", what, describe(exc))


def run_process(prog: str, log_level: str, serve: Coroutine[Any, Any, None]) -> int:
    """Run `serve` with logging at `log_level`; the process's exit status."""
    logging.basicConfig(level=LEVELS.get(log_level.lower(), logging.WARNING),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        asyncio.run(serve)
    except LeaseLostExit as exc:
        print(f"gazette: {exc}", file=sys.stderr)
        return EXIT_LEASE_LOST
    except GazetteError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    return 0
