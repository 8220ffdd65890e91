"""`gazette serve` and `gazette consumer` as real processes, for tests of what they serve."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 60.0


@dataclass
class Running:
    """A started process, the endpoint it advertised, and what it wrote to stderr."""

    proc: subprocess.Popen[str]
    endpoint: str
    stderr: list[str] = field(default_factory=list)


@contextmanager
def gazette(*argv: str, path: Path | None = None) -> Iterator[Running]:
    """Run `python -m gazette_core ARGV` until it says it serves; stop it after.

    `path` is added to the import path (a consumer's application module).
    """
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CONSUMER_", "BROKER_", "ETCD_", "LOG_", "DEBUG_"))}
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in (ROOT, path) if p)
    proc = subprocess.Popen([sys.executable, "-m", "gazette_core", *argv],
                            stderr=subprocess.PIPE, text=True, env=env, cwd=path or ROOT)
    assert proc.stderr is not None
    lines: list[str] = []
    deadline = time.monotonic() + START_TIMEOUT_S
    try:
        while " serving at " not in (line := proc.stderr.readline()):
            lines.append(line)
            assert line and time.monotonic() < deadline, "did not start:\n" + "".join(lines)
        running = Running(proc, line.rsplit(" serving at ", 1)[1].strip(), lines)
        # Keep reading, so that a chatty process never blocks on a full pipe.
        threading.Thread(target=lambda: lines.extend(proc.stderr or ()), daemon=True).start()
        yield running
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
