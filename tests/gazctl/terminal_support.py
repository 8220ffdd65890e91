"""Running gazctl as a real process with its stdout on a pseudo-terminal of a fixed size."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import termios
import time
from dataclasses import dataclass
from pathlib import Path

from tests.gazctl.support import GAZCTL, isolated_env

COLUMNS, LINES = 120, 40
# CSI sequences (colours, cursor moves, line erases) rich draws the bar with.
CSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass
class Terminal:
    """What a command drew on the terminal, and what it wrote to a piped stderr."""

    returncode: int
    raw: bytes
    stderr: bytes | None

    @property
    def text(self) -> str:
        """The terminal bytes without escape sequences: the words that were drawn."""
        return CSI.sub(b"", self.raw).decode()


def env_for(state_home: Path) -> dict[str, str]:
    env = isolated_env(state_home)
    # Variables that would make rich treat a pipe as a terminal (or the reverse).
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        env.pop(name, None)
    return env | {"COLUMNS": str(COLUMNS), "LINES": str(LINES), "TERM": "xterm-256color"}


def in_terminal(*args: str, env: dict[str, str], stderr_too: bool,
                limit: float = 120, columns: int = COLUMNS) -> Terminal:
    """Run gazctl with stdout (and, if `stderr_too`, stderr) on a pty of a fixed size."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, columns, 0, 0))
    try:
        proc = subprocess.Popen([*GAZCTL, *args], env=env, stdin=subprocess.DEVNULL,
                                stdout=slave,
                                stderr=slave if stderr_too else subprocess.PIPE)
        os.close(slave)
        slave = -1
        raw = bytearray()
        deadline = time.monotonic() + limit
        # Drain the terminal while the command runs, or it blocks once the pty buffer
        # fills. A child it started (Spark's JVM) may hold the pty open a while after the
        # command exits, so "exited and nothing left to read" ends the loop, not EOF.
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: every holder of the terminal closed it.
                    chunk = b""
                if chunk:
                    raw += chunk
                    continue
            if proc.poll() is not None:
                break
        else:
            proc.kill()
        err = proc.stderr.read() if proc.stderr is not None else None
        returncode = proc.wait(timeout=10)
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)
    return Terminal(returncode, bytes(raw), err)
