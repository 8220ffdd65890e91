"""--log.format (json, text, color) of server processes, and the termination log of a failure."""

from __future__ import annotations

import datetime
import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aetcd
import pytest

from gazette_core.server.log_format import ColorFormatter, JsonFormatter, TextFormatter
from gazette_core.testing.etcd import EtcdServer, free_port

ROOT = Path(__file__).resolve().parents[2]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CONSUMER_", "BROKER_", "ETCD_", "LOG_", "GAZETTE_"))}
    return {**env, "PYTHONPATH": str(ROOT), **extra}


def _serve(*argv: str, **env: str) -> subprocess.Popen[str]:
    return _gazette("serve", *argv, **env)


def _gazette(*argv: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "gazette_core", *argv],
                            stderr=subprocess.PIPE, text=True, env=_env(**env))


# Each process, pointed at an etcd address nothing listens on.
UNREACHABLE = {
    "serve": ("gazette", ["serve", "--broker.port", "0"]),
    "consumer": ("gazette consumer", ["consumer", "--app", "tests.consumer.runtime.apps:Counter",
                                      "--consumer.id", "unreachable", "--consumer.port", "0"]),
}


def _entry(line: str) -> dict[str, Any]:
    """One JSON log line, checked for the fields every entry has."""
    entry = json.loads(line)
    assert isinstance(entry, dict), line
    assert entry["level"] in ("debug", "info", "warning", "error", "fatal"), line
    assert isinstance(entry["msg"], str), line
    moment = datetime.datetime.fromisoformat(entry["time"].replace("Z", "+00:00"))
    assert moment.tzinfo is not None, line
    return entry


async def test_a_broker_logging_json_writes_only_json_lines(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path) -> None:
    proc = _serve("--etcd.address", etcd_server.endpoint, "--broker.port", "0",
                  "--broker.http-port", "-1", "--broker.host", "127.0.0.1",
                  "--broker.id", "json-logger", "--broker.file-root", str(tmp_path),
                  LOG_FORMAT="json", LOG_LEVEL="info")
    assert proc.stderr is not None
    lines: list[str] = []
    deadline = time.monotonic() + 30
    while not any("serving at" in line for line in lines):
        line = proc.stderr.readline()
        assert line and time.monotonic() < deadline, f"did not start: {lines}"
        lines.append(line)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    lines += proc.stderr.read().splitlines()

    entries = [_entry(line) for line in lines if line.strip()]
    endpoint = next(e["endpoint"] for e in entries if e["msg"] == "broker serving")
    assert endpoint.startswith("http://127.0.0.1:")
    assert {"level": "info", "msg": f"gazette broker local#json-logger serving at {endpoint}",
            "endpoint": endpoint}.items() <= next(
        e for e in entries if "serving at" in e["msg"]).items()


@pytest.mark.parametrize("role", UNREACHABLE)
def test_a_fatal_start_up_error_is_one_json_entry(role: str) -> None:
    address = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    proc = _gazette(*UNREACHABLE[role][1], "--etcd.address", address, LOG_FORMAT="json")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    [line] = err.splitlines()
    entry = _entry(line)
    assert entry["level"] == "fatal"
    assert entry["msg"].startswith(f"cannot reach etcd at {address}: ")
    assert entry["exit_status"] == 1


@pytest.mark.parametrize("role", UNREACHABLE)
@pytest.mark.parametrize("exists", [True, False])
def test_a_fatal_error_is_written_to_the_termination_log_when_it_exists(
        tmp_path: Path, exists: bool, role: str) -> None:
    log = tmp_path / "termination-log"
    if exists:
        log.write_text("")
    address = f"http://127.0.0.1:{free_port()}"
    prog, argv = UNREACHABLE[role]
    proc = _gazette(*argv, "--etcd.address", address, GAZETTE_TERMINATION_LOG=str(log))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    if exists:
        reason = log.read_text()
        assert reason.startswith(f"cannot reach etcd at {address}: "), reason
        assert err == f"{prog}: {reason}"
    else:
        assert not log.exists()


def test_a_usage_error_is_written_to_the_termination_log(tmp_path: Path) -> None:
    log = tmp_path / "termination-log"
    log.write_text("")
    proc = _serve("--log.format", "loud", GAZETTE_TERMINATION_LOG=str(log))
    proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert log.read_text() == "--log.format 'loud': unknown log format (json, text, color)\n"


def _record(msg: str, level: int = logging.INFO, **extra: object) -> logging.LogRecord:
    record = logging.LogRecord("gazette_core.test", level, __file__, 1, msg, (), None)
    record.created = datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.UTC).timestamp()
    record.__dict__.update(extra)
    return record


def test_entries_carry_their_extra_fields_in_each_format(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    try:
        record = _record("rolled spool", logging.WARNING, journal="a/journal", offset=42)
        assert json.loads(JsonFormatter().format(record)) == {
            "level": "warning", "msg": "rolled spool", "time": "2024-05-06T07:08:09Z",
            "journal": "a/journal", "offset": 42}
        assert TextFormatter().format(record) == (
            'time="2024-05-06T07:08:09Z" level=warning msg="rolled spool" journal=a/journal '
            'offset=42')
        colored = ColorFormatter().format(record)
        assert colored.startswith("\x1b[33mWARN\x1b[0m[")
        assert "rolled spool" in colored and "\x1b[33mjournal\x1b[0m=a/journal" in colored
        fatal = _record("gone", logging.CRITICAL)
        assert TextFormatter().format(fatal) == 'time="2024-05-06T07:08:09Z" level=fatal msg=gone'
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
