"""Background processes of the local stack: start detached, probe, signal, wait."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path


def spawn(argv: list[str], log_path: Path, env: dict[str, str] | None = None) -> int:
    """Start `argv` detached from this terminal, logging to `log_path`; return its pid."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True,
                                env={**os.environ, **(env or {})})
    return proc.pid


def alive(pid: int, marker: str = "") -> bool:
    """Whether `pid` runs and (when given) its command line contains `marker`.

    The marker guards against a recycled pid belonging to some other program.
    """
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    _reap(pid)
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return False
    return state != "Z" and (not marker or marker in cmdline)


def _reap(pid: int) -> None:
    """Collect a child that already exited, so it does not linger as a zombie."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def stop(pid: int, marker: str, timeout: float) -> bool:
    """SIGTERM, wait up to `timeout`, then SIGKILL. True if it exited gracefully."""
    if not alive(pid, marker):
        return True
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid, marker):
            return True
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    return False
