"""`gazette serve` as a process: flags, and a clear exit when etcd is unreachable."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gazette_core.server.process import EXIT_LEASE_LOST
from gazette_core.testing.etcd import free_port


def gazette(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gazette_core", *args],
                          capture_output=True, text=True, timeout=60, check=False)


def test_unreachable_etcd_exits_1_with_one_line(tmp_path: object) -> None:
    address = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    proc = gazette("serve", "--etcd.address", address, "--broker.port", "0",
                   "--broker.file-root", str(tmp_path))
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"gazette: cannot reach etcd at {address}: ")


def test_help_and_usage_errors() -> None:
    assert gazette("serve", "--help").returncode == 0
    assert "--broker.file-root" in gazette("serve", "--help").stdout
    unknown = gazette("frobnicate")
    assert (unknown.returncode, unknown.stderr.splitlines()[0]) == (
        2, "gazette: unknown command 'frobnicate'")


def test_broker_that_lost_its_lease_persists_and_exits_75_with_one_line(
        etcd: object, etcd_server: object, tmp_path: Path) -> None:
    import os
    import signal
    import time

    endpoint = etcd_server.endpoint  # type: ignore[attr-defined]
    proc = subprocess.Popen(
        [sys.executable, "-m", "gazette_core", "serve", "--etcd.address", endpoint,
         "--etcd.lease", "2", "--broker.port", "0", "--broker.host", "127.0.0.1",
         "--broker.http-port", "-1",  # the default 8081 may be taken
         "--broker.id", "stalled-broker", "--broker.file-root", str(tmp_path)],
        stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while "serving at" not in (line := proc.stderr.readline() if proc.stderr else ""):
            assert time.monotonic() < deadline and line != "", "broker did not start"
        os.kill(proc.pid, signal.SIGSTOP)
        time.sleep(5)  # well past the 2 s lease
        os.kill(proc.pid, signal.SIGCONT)
        assert proc.wait(timeout=30) == EXIT_LEASE_LOST
        assert proc.stderr is not None
        err = proc.stderr.read()
        assert "Traceback" not in err, err
        assert err.splitlines()[-1] == (
            "gazette: broker local#stalled-broker lost its Etcd lease; it persisted its "
            "spools and stopped (restart it to rejoin)"), err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("flag", ["--broker.persist-on-stop-timeout",
                                  "--broker.http-header-timeout", "--broker.http-idle-timeout",
                                  "--broker.store-health-sweep", "--broker.store-health-limit"])
def test_timeouts_and_limits_must_be_positive(flag: str) -> None:
    proc = gazette("serve", flag, "0")
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[-1].endswith(f"error: {flag} must be positive (got 0)")
