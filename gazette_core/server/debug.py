"""The /debug/ HTTP paths of server processes: readiness, metrics and Python diagnostics.

- `/debug/ready`: 200 with an empty body once the process serves, 503 before.
- `/debug/metrics`: the Prometheus text exposition.
- `/debug/tasks`: every asyncio task, down the chain of what each awaits.
- `/debug/vars`: process and garbage-collector figures as JSON.
- `/debug/pprof/`: an index of the above; `/debug/pprof/goroutine` is the task
  dump, where tooling made for Go servers looks for one.
"""

from __future__ import annotations

import asyncio
import collections
import gc
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from aiohttp import web

from gazette_core.broker.metrics import exposition

PREFIX = "/debug/"
_TOP_TYPES = 30
_MAX_AWAIT_DEPTH = 40
_INDEX = """<html><head><title>/debug/</title></head><body>
<p><a href="/debug/ready">ready</a>: 200 once the process serves</p>
<p><a href="/debug/metrics">metrics</a>: Prometheus text exposition</p>
<p><a href="/debug/tasks">tasks</a>: every asyncio task and what it awaits</p>
<p><a href="/debug/vars">vars</a>: process and garbage-collector figures (JSON)</p>
</body></html>
"""


def add_debug_routes(app: web.Application, ready: Callable[[], bool]) -> None:
    """Serve the /debug/ paths on `app`; `ready` says whether the process serves yet."""

    async def serve_ready(_: web.Request) -> web.Response:
        return web.Response(status=200 if ready() else 503)

    app.router.add_get("/debug/ready", serve_ready)
    app.router.add_get("/debug/metrics", serve_metrics)
    app.router.add_get("/debug/tasks", serve_tasks)
    app.router.add_get("/debug/pprof/goroutine", serve_tasks)
    app.router.add_get("/debug/vars", serve_vars)
    app.router.add_get("/debug/pprof/", serve_index)
    app.router.add_get("/debug/pprof", serve_index)


async def serve_metrics(_: web.Request) -> web.Response:
    body, content_type = exposition()
    return web.Response(body=body, headers={"Content-Type": content_type})


async def serve_index(_: web.Request) -> web.Response:
    return web.Response(text=_INDEX, content_type="text/html")


async def serve_tasks(_: web.Request) -> web.Response:
    return web.Response(text=tasks_text())


async def serve_vars(_: web.Request) -> web.Response:
    return web.json_response(process_vars())


def tasks_text() -> str:
    """Every task of the running loop: its name, its coroutine, and what it awaits."""
    tasks = sorted(asyncio.all_tasks(), key=lambda t: t.get_name())
    lines = [f"{len(tasks)} asyncio tasks", ""]
    for task in tasks:
        lines.append(f"task {task.get_name()} ({task.get_coro()!r:.200})")
        lines.extend(f"    {line}" for line in awaiting(task.get_coro()))
        lines.append("")
    return "\n".join(lines)


def awaiting(awaitable: object) -> list[str]:
    """Where a coroutine stands, down the chain of what each frame awaits."""
    lines = []
    for _ in range(_MAX_AWAIT_DEPTH):
        frame = getattr(awaitable, "cr_frame", None) or getattr(awaitable, "ag_frame", None) \
            or getattr(awaitable, "gi_frame", None)
        if frame is None:
            lines.append(repr(awaitable)[:300])
            break
        lines.append(f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}")
        awaitable = getattr(awaitable, "cr_await", None) or getattr(awaitable, "ag_await", None) \
            or getattr(awaitable, "gi_yieldfrom", None)
        if awaitable is None:
            break
    return lines


def process_vars() -> dict[str, Any]:
    """Figures of this process and its garbage collector."""
    times = os.times()
    by_type = collections.Counter(type(o).__qualname__ for o in gc.get_objects())
    return {
        "cmdline": sys.argv,
        "process": {"pid": os.getpid(), "uptime_seconds": _uptime(), "rss_bytes": _rss(),
                    "cpu_user_seconds": times.user, "cpu_system_seconds": times.system,
                    "open_fds": _count("/proc/self/fd"), "threads": _count("/proc/self/task"),
                    "python_threads": threading.active_count(),
                    "asyncio_tasks": len(asyncio.all_tasks())},
        "gc": {"count": gc.get_count(), "threshold": gc.get_threshold(),
               "stats": gc.get_stats(), "objects": sum(by_type.values()),
               "objects_by_type": dict(by_type.most_common(_TOP_TYPES))},
        "python": sys.version,
    }


def _count(directory: str) -> int | None:
    try:
        return len(os.listdir(directory))
    except OSError:
        return None


def _rss() -> int | None:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _uptime() -> float | None:
    """Seconds since this process started, by the kernel's clock."""
    try:
        with open("/proc/self/stat") as stat:
            # Fields after the command (which may hold spaces); start time is the 22nd field.
            started = int(stat.read().rpartition(")")[2].split()[19])
        with open("/proc/uptime") as uptime:
            since_boot = float(uptime.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return round(since_boot - started / os.sysconf("SC_CLK_TCK"), 3)
