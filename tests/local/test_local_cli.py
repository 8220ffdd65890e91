"""`gazctl local up/status/env/down` as real subprocesses, and gazctl finding the stack.

The module shares one stack started by `gazctl local up`; the last test stops it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gazette_core.local import processes
from gazette_core.local.stack import Stack
from tests.gazctl.support import gazctl, isolated_env, stop_stack

SPECS = b"""\
name: local/
replication: 1
fragment:
  length: 1048576
  compression_codec: NONE
  stores:
    - file:///
  refresh_interval: 1s
children:
  - name: local/after
    revision: 0
  - name: local/before
    revision: 0
"""


def _ok(*args: str, env: dict[str, str], input: bytes | None = None) -> str:
    proc = gazctl(*args, env=env, input=input)
    assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    return proc.stdout.decode()


@pytest.fixture(scope="module")
def stack_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("local")


@pytest.fixture(scope="module")
def env(state_home: Path) -> dict[str, str]:
    return isolated_env(state_home)


@pytest.fixture(scope="module")
def up_output(stack_dir: Path, env: dict[str, str]) -> Iterator[str]:
    """What `gazctl local up --dir D` printed; the stack is torn down after the module."""
    try:
        yield _ok("local", "up", "--dir", str(stack_dir), env=env)
    finally:
        stop_stack(stack_dir)


def _status(stack_dir: Path, env: dict[str, str]) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = json.loads(
        _ok("local", "status", "--dir", str(stack_dir), "-o", "json", env=env))
    return rows


def _loaded(stack_dir: Path) -> Stack:
    stack = Stack.load(stack_dir)
    assert stack is not None
    return stack


def test_up_starts_etcd_and_a_broker(up_output: str, stack_dir: Path) -> None:
    stack = _loaded(stack_dir)
    etcd, broker = stack.etcd, stack.brokers[0]
    assert up_output == (f"local stack running in {stack_dir}\n"
                         f"  etcd       pid {etcd.pid:<8} {etcd.endpoint}\n"
                         f"  broker-1   pid {broker.pid:<8} {broker.endpoint}\n"
                         f"fragments are stored under {stack_dir / 'fragments'} "
                         "(store URL file:///)\n")
    assert processes.alive(etcd.pid, etcd.marker)
    assert processes.alive(broker.pid, broker.marker)
    assert (stack_dir / "logs" / "etcd.log").exists()
    assert (stack_dir / "logs" / "broker-1.log").exists()


def test_status_json_lists_every_process(up_output: str, stack_dir: Path,
                                         env: dict[str, str]) -> None:
    stack = _loaded(stack_dir)

    assert _status(stack_dir, env) == [
        {"role": "etcd", "name": "etcd", "zone": "", "pid": stack.etcd.pid,
         "endpoint": stack.etcd.endpoint, "http": None, "alive": True},
        {"role": "broker", "name": "broker-1", "zone": "local", "pid": stack.brokers[0].pid,
         "endpoint": stack.brokers[0].endpoint, "http": stack.brokers[0].http, "alive": True},
    ]
    assert stack.brokers[0].http == stack.brokers[0].endpoint  # one port for gRPC and HTTP


def test_status_table(up_output: str, stack_dir: Path, env: dict[str, str]) -> None:
    stack = _loaded(stack_dir)

    out = _ok("local", "status", "--dir", str(stack_dir), env=env)

    assert [line.split() for line in out.splitlines()] == [
        ["Role", "Name", "Zone", "PID", "Endpoint", "HTTP", "Alive"],
        ["etcd", "etcd", str(stack.etcd.pid), stack.etcd.endpoint, "yes"],
        ["broker", "broker-1", "local", str(stack.brokers[0].pid), stack.brokers[0].endpoint,
         str(stack.brokers[0].http), "yes"],
    ]


def test_env_prints_exports_for_the_stack(up_output: str, stack_dir: Path,
                                          env: dict[str, str]) -> None:
    stack = _loaded(stack_dir)

    out = _ok("local", "env", "--dir", str(stack_dir), env=env)

    assert out == (f"export BROKER_ADDRESS={stack.brokers[0].endpoint}\n"
                   f"export ETCD_ADDRESS={stack.etcd.endpoint}\n"
                   f"export BROKER_FILE_ROOT={stack.directory / 'fragments'}\n")


def test_up_makes_the_stack_active_for_later_commands(
        up_output: str, stack_dir: Path, env: dict[str, str], state_home: Path) -> None:
    assert (state_home / "gazette" / "active-stack").read_text() == str(stack_dir)

    applied = _ok("journals", "apply", env=env, input=SPECS)
    appended = _ok("journals", "append", "-l", "name=local/before", env=env, input=b"first\n")
    listed = _ok("journals", "list", "-p", env=env)

    assert applied.splitlines()[:2] == ["create local/after (new)", "create local/before (new)"]
    assert appended == "appended 6 bytes to local/before at offsets [0, 6)\n"
    assert [line.split() for line in listed.splitlines()] == [
        ["Name", "Primary"], ["local/after", "broker-1"], ["local/before", "broker-1"]]
    assert _ok("journals", "read", "-l", "name=local/before", env=env) == "first\n"


def _curl(*args: str) -> bytes:
    proc = subprocess.run(["curl", "-sS", "--noproxy", "*", "--max-time", "30", *args],
                          capture_output=True, check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_curl_reaches_the_brokers_http_gateway(up_output: str, stack_dir: Path,
                                               env: dict[str, str], tmp_path: Path) -> None:
    http = _status(stack_dir, env)[1]["http"]
    payload = tmp_path / "payload"
    payload.write_bytes(b"via http\n")

    put = _curl("-i", "-X", "PUT", "--data-binary", f"@{payload}", f"{http}/local/before")
    got = _curl(f"{http}/local/before?offset=6")
    metrics = _curl(f"{http}/metrics")

    assert put.startswith(b"HTTP/1.1 204 ") and b"X-Commit-Begin: 6\r\n" in put
    assert got == b"via http\n"
    assert b"gazette_append_commits_total " in metrics


def test_status_of_a_directory_without_a_stack_fails(tmp_path: Path,
                                                     env: dict[str, str]) -> None:
    proc = gazctl("local", "status", "--dir", str(tmp_path), env=env)

    assert proc.returncode == 1
    assert proc.stderr.decode() == (f"error: no local stack in {tmp_path}; "
                                    "start one with `gazctl local up`\n")


def _wait_gone(pid: int, marker: str) -> None:
    deadline = time.monotonic() + 10
    while processes.alive(pid, marker):
        assert time.monotonic() < deadline, f"pid {pid} survived SIGKILL"
        time.sleep(0.05)


def test_up_restarts_only_a_killed_broker(up_output: str, stack_dir: Path,
                                          env: dict[str, str]) -> None:
    before = _loaded(stack_dir)
    old = before.brokers[0]
    os.kill(old.pid, signal.SIGKILL)
    _wait_gone(old.pid, old.marker)
    assert [row["alive"] for row in _status(stack_dir, env)] == [True, False]

    out = _ok("local", "up", "--dir", str(stack_dir), env=env)

    rows = _status(stack_dir, env)
    assert [(r["name"], r["endpoint"], r["alive"]) for r in rows] == [
        ("etcd", before.etcd.endpoint, True), ("broker-1", old.endpoint, True)]
    assert rows[0]["pid"] == before.etcd.pid
    assert rows[1]["pid"] != old.pid
    assert f"  broker-1   pid {rows[1]['pid']:<8} {old.endpoint}\n" in out
    # The restarted broker serves journals, including ones it must newly be assigned.
    appended = _ok("journals", "append", "-l", "name=local/after", env=env, input=b"x\n")
    assert re.fullmatch(r"appended 2 bytes to local/after at offsets \[0, 2\)\n", appended)
    assert _ok("journals", "read", "-l", "name=local/after", env=env) == "x\n"


def test_down_stops_every_process(up_output: str, stack_dir: Path,
                                  env: dict[str, str]) -> None:
    stack = _loaded(stack_dir)

    out = _ok("local", "down", "--dir", str(stack_dir), env=env)

    assert out == "stopped broker-1\nstopped etcd\n"
    assert not any(processes.alive(p.pid, p.marker) for p in stack.processes)
    assert [row["alive"] for row in _status(stack_dir, env)] == [False, False]
    # Nothing else was started behind the stack's back.
    assert subprocess.run(["pgrep", "-f", str(stack_dir)], capture_output=True,
                          check=False).stdout == b""
