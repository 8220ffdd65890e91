"""Failures that used to end in a Python traceback end in one red line and a documented code.

Outputs are checked before anything is read, so a bad destination costs no content
and no offsets.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from gazette_core.broker.client.journals import list_fragments
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.local.stack import STATE_FILE, Stack
from gazette_core.testing.etcd import free_port
from tests.gazctl.support import (
    GAZCTL,
    gazctl,
    isolated_env,
    ok,
    one_error_line,
    run_main,
    wait_primaries,
    with_broker,
)

SPECS = """\
name: errs/
replication: 1
fragment:
  length: 1024
  compression_codec: NONE
  stores: [file:///]
  refresh_interval: 1s
  retention: 1s
children:
  - name: errs/one
"""


@pytest.fixture(scope="module", autouse=True)
def errs_journal(address: str) -> None:
    ok("journals", "apply", "--broker.address", address, input=SPECS)
    wait_primaries(address, "prefix=errs/")
    ok("journals", "append", "-l", "name=errs/one", "--broker.address", address,
       input=b"hello\n")


def test_an_output_file_in_a_missing_directory_fails_before_reading(
        address: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "missing" / "out"

    code, out, err = run_main(capsys, "journals", "read", "-l", "name=errs/one",
                              "-o", str(target), "--broker.address", address)

    assert (code, out) == (2, "")
    assert one_error_line(err) == (f"error: invalid input: -o/--output: cannot write "
                                    f"'{target}': No such file or directory")


def test_an_unwritable_offsets_out_fails_before_reading_anything(
        address: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "missing" / "offsets.json"

    code, out, err = run_main(capsys, "journals", "read", "-l", "name=errs/one",
                              "--offsets-out", str(target), "--broker.address", address)

    # Nothing was printed, so nothing was consumed whose offsets would be lost.
    assert (code, out) == (2, "")
    assert one_error_line(err) == (f"error: invalid input: --offsets-out: cannot write "
                                    f"'{target}': No such file or directory")


def test_local_up_in_a_file_is_one_line(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    a_file = tmp_path / "passwd"
    a_file.write_text("root:x:0:0\n")

    code, out, err = run_main(capsys, "local", "up", "--dir", str(a_file))

    assert (code, out) == (2, "")
    assert one_error_line(err) == (
        f"error: invalid input: --dir: {a_file} is not a directory")


def test_local_up_refuses_more_zones_than_brokers(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(capsys, "local", "up", "--dir", str(tmp_path / "stack"),
                              "--zones", "3", "--brokers", "2")

    assert (code, out) == (2, "")
    assert one_error_line(err) == (
        "error: invalid input: --zones: 3 zones need at least 3 brokers (--brokers 2)")
    assert not (tmp_path / "stack" / STATE_FILE).exists()


@pytest.mark.parametrize("shape", ["flow", "children"])
def test_deeply_nested_yaml_is_one_line(shape: str, address: str, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    specs = tmp_path / "deep.yaml"
    if shape == "flow":
        specs.write_text("name: errs/deep\nlabels: " + "[" * 5000 + "]" * 5000 + "\n")
    else:
        specs.write_text("name: errs/\n" + "".join(
            "  " * i + "children:\n" + "  " * i + "- name: errs/\n" for i in range(600)))

    code, out, err = run_main(capsys, "journals", "apply", "--specs", str(specs),
                              "--broker.address", address)

    assert (code, out) == (1, "")
    assert one_error_line(err).startswith("error: invalid input: YAML nested deeper than ")


def _wait_persisted(address: str, journal: str) -> None:
    deadline = time.monotonic() + 30
    while not any(f.spec.mod_time for f in with_broker(address, lambda stub: list_fragments(
            stub, pb.FragmentsRequest(journal=journal)))):
        assert time.monotonic() < deadline, f"no fragment of {journal} was persisted"
        time.sleep(0.1)
    time.sleep(1.1)  # older than the journal's retention


def test_prune_with_an_unreachable_spark_master_fails_fast(
        stack: Stack, address: str, state_home: Path) -> None:
    # errs/one holds an expired fragment once persisted: its retention is 1 s.
    ok("journals", "append", "-l", "name=errs/one", "--broker.address", address,
       input=b"x" * 2000)
    _wait_persisted(address, "errs/one")
    master = f"spark://127.0.0.1:{free_port()}"
    started = time.monotonic()

    root = stack.directory / "fragments"
    proc = subprocess.run([*GAZCTL, "journals", "prune", "-l", "prefix=errs/",
                           "--spark-master", master, "--file-root", str(root),
                           "--broker.address", address],
                          env=isolated_env(state_home), capture_output=True, timeout=60,
                          check=False)

    assert proc.returncode == 1, proc.stderr
    assert one_error_line(proc.stderr.decode()).startswith(
        f"error: cannot reach the Spark master at {master}: ")
    assert time.monotonic() - started < 60  # the subprocess timeout above bounds it anyway


def test_ctrl_c_on_a_blocking_read_exits_130_quietly(address: str, state_home: Path) -> None:
    proc = subprocess.Popen([*GAZCTL, "journals", "read", "-l", "prefix=errs/", "-b",
                             "--broker.address", address], env=isolated_env(state_home),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            # A shell gives a foreground job the default SIGINT action.
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stdout is not None
    assert proc.stdout.read(6) == b"hello\n"  # reading, and blocked at the write head

    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=20)

    assert (proc.returncode, err) == (130, b"")


def test_offsets_out_is_kept_when_a_read_is_interrupted(
        address: str, tmp_path: Path, state_home: Path) -> None:
    target = tmp_path / "offsets.json"
    proc = subprocess.Popen([*GAZCTL, "journals", "read", "-l", "name=errs/one", "-b",
                             "--offsets-out", str(target), "--broker.address", address],
                            env=isolated_env(state_home), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stdout is not None
    assert proc.stdout.read(6) == b"hello\n"

    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=20)

    assert proc.returncode == 130
    assert json.loads(target.read_text())["errs/one"] >= 6


def test_grpcs_own_log_lines_stay_off_stderr(state_home: Path) -> None:
    """TLS to a plaintext listener: gRPC logs the failed handshake itself, and gazctl
    reports it; the user sees gazctl's one line only. GRPC_VERBOSITY brings gRPC's back."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        answering = threading.Thread(target=_answer_plaintext, args=(listener,), daemon=True)
        answering.start()
        address = f"https://127.0.0.1:{listener.getsockname()[1]}"
        argv = ["journals", "list", "--broker.address", address, "--timeout", "5s"]
        quiet = gazctl(*argv, env=isolated_env(state_home))
        loud = gazctl(*argv, env={**isolated_env(state_home), "GRPC_VERBOSITY": "INFO"})

    assert quiet.returncode == 1
    assert "Tls handshake failed" in one_error_line(quiet.stderr.decode())
    assert "Handshake failed" in loud.stderr.decode()  # gRPC's own line, as asked


def _answer_plaintext(listener: socket.socket) -> None:
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return  # the listener was closed
        with conn:
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
