"""The termination message: why a server process died, for its supervisor to show.

Kubernetes mounts a file at /dev/termination-log in every container and shows
what a dying container wrote there as its termination message. A process
exiting on a fatal error writes its reason there when that file exists (and
nowhere when it does not, e.g. outside Kubernetes). $GAZETTE_TERMINATION_LOG
names another file (tests, other supervisors).
"""

from __future__ import annotations

import os

DEFAULT_PATH = "/dev/termination-log"
ENV = "GAZETTE_TERMINATION_LOG"


def path() -> str:
    return os.environ.get(ENV) or DEFAULT_PATH


def record(reason: str) -> None:
    """Write `reason` to the termination log if it exists; never fails the caller."""
    target = path()
    if not os.path.exists(target):
        return
    try:
        with open(target, "w", encoding="utf-8") as out:
            out.write(reason + "\n")
    except OSError:
        pass  # e.g. read-only: the reason is on stderr all the same
