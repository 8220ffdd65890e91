"""`gazette serve` as a process: flags, and a clear exit when etcd is unreachable."""

from __future__ import annotations

import subprocess
import sys

from gazette_core.testing.etcd import free_port


def gazette(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gazette_core.broker.main", *args],
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
