"""Default endpoints of the examples' commands: the environment, else the local stack
most recently started by `gazctl local up`."""

from __future__ import annotations

import os
from pathlib import Path

from gazette_core.local import processes
from gazette_core.local import stack as local_stack

FALLBACK_BROKER = "http://localhost:8080"
FALLBACK_CONSUMER = "http://localhost:9000"


def default_broker() -> str:
    return (os.environ.get("BROKER_ADDRESS") or local_stack.active_broker_address()
            or FALLBACK_BROKER)


def default_consumer() -> str:
    return os.environ.get("CONSUMER_ADDRESS") or _active_consumer() or FALLBACK_CONSUMER


def _active_consumer() -> str | None:
    try:
        directory = Path((local_stack.POINTER / "active-stack").read_text().strip())
    except OSError:
        return None
    stack = local_stack.Stack.load(directory)
    for p in stack.processes if stack else []:
        if p.role == "consumer" and processes.alive(p.pid, p.marker):
            return p.endpoint
    return None
