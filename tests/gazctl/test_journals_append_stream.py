"""`gazctl journals append` of records as a stream: sent as they arrive, flushed on Ctrl-C,
and a partial failure that says exactly which records were committed."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.gazctl.support import GAZCTL, cli, content, gazctl, isolated_env, ok, stop
from tests.gazctl.test_journals_append_read import create_journals

JOURNALS = ["as/fixed", "as/lines", "as/partial/ok", "as/partial/ro"]


@pytest.fixture(scope="module", autouse=True)
def stream_journals(address: str) -> None:
    create_journals(address, "as", JOURNALS)
    # Read-only: every append to it is refused with NOT_ALLOWED.
    ok("journals", "apply", "--broker.address", address, input=(
        "name: as/partial/ro\nreplication: 1\nflags: 1\nrevision: -1\nfragment:\n"
        "  length: 16777216\n  compression_codec: NONE\n  stores: [file:///]\n"
        "  refresh_interval: 1s\n"))


def _wait_content(address: str, journal: str, want: bytes,
                  proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 10
    while (got := content(address, journal)) != want:
        assert proc.poll() is None, f"append exited early with {proc.returncode}"
        assert time.monotonic() < deadline, f"journal holds {got!r}, want {want!r}"
        time.sleep(0.05)


def _streaming_append(address: str, state_home: Path, journal: str,
                      *flags: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*GAZCTL, "journals", "append", "-l", f"name={journal}", *flags,
         "--broker.address", address],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=isolated_env(state_home))


def _finish(proc: subprocess.Popen[bytes]) -> tuple[int, bytes, bytes]:
    """Wait for the exit without closing stdin (an EOF would also end the append)."""
    assert proc.stdout is not None and proc.stderr is not None
    code = proc.wait(timeout=30)
    return code, proc.stdout.read(), proc.stderr.read()


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None and not pipe.closed:
            pipe.close()


def test_lines_are_appended_as_they_arrive_and_ctrl_c_flushes(
        address: str, state_home: Path) -> None:
    proc = _streaming_append(address, state_home, "as/lines", "-f", "lines")
    assert proc.stdin is not None
    try:
        proc.stdin.write(b"first\n")
        proc.stdin.flush()
        # stdin stays open, as under `tail -F log | gazctl journals append ...`.
        _wait_content(address, "as/lines", b"first\n", proc)
        proc.stdin.write(b"second\nthird\nunterminated")
        proc.stdin.flush()
        stop(proc)
        code, stdout, stderr = _finish(proc)
    finally:
        _kill(proc)
    assert (code, stderr) == (130, b"")
    assert content(address, "as/lines") == b"first\nsecond\nthird\nunterminated"
    assert stdout.decode() == ("interrupted: appended 4 record(s), 31 bytes, "
                               "to 1 journal(s)\n")


def test_fixed_frames_are_appended_as_they_arrive(address: str, state_home: Path) -> None:
    frame = b"\x66\x33\x93\x36" + (5).to_bytes(4, "little") + b"hello"
    proc = _streaming_append(address, state_home, "as/fixed", "-f", "fixed")
    assert proc.stdin is not None
    try:
        proc.stdin.write(frame + frame[:6])  # a whole frame and the start of the next
        proc.stdin.flush()
        _wait_content(address, "as/fixed", frame, proc)
        proc.stdin.write(frame[6:])
        proc.stdin.close()  # EOF ends the append
        code, stdout, stderr = _finish(proc)
    finally:
        _kill(proc)
    assert (code, stderr) == (0, b"")
    assert content(address, "as/fixed") == frame + frame
    assert stdout.decode() == "appended 2 record(s), 26 bytes, to 1 journal(s)\n"


def test_a_failed_record_says_which_records_were_committed(
        address: str, state_home: Path) -> None:
    records = [b"one\n", b"two\n", b"three\n", b"four\n"]
    names = ["as/partial/ok"] * 3 + ["as/partial/ro"]
    data = b"".join(name.encode() + b"\n" + rec for name, rec in zip(names, records,
                                                                    strict=True))

    proc = gazctl("journals", "append", "-l", "prefix=as/partial/", "-f", "lines",
                  "-m", "direct", "--broker.address", address, input=data,
                  env=isolated_env(state_home))

    assert proc.returncode == 1
    assert proc.stderr.decode() == (
        "error: appended records 1-3 (bytes [0, 14) of journal as/partial/ok); record 4 "
        "failed: NOT_ALLOWED (journal 'as/partial/ro')\n")
    assert content(address, "as/partial/ok") == b"one\ntwo\nthree\n"
    assert content(address, "as/partial/ro") == b""


def test_records_of_a_file_still_append_in_one_go(address: str, tmp_path: Path) -> None:
    path = tmp_path / "lines"
    path.write_bytes(b"".join(f"{n}\n".encode() for n in range(1000)))
    result = cli("journals", "append", "-l", "name=as/lines", "-f", "lines", "-i", str(path),
                 "--broker.address", address)
    assert result.exit_code == 0, result.output
    assert result.stdout == "appended 1000 record(s), 3890 bytes, to 1 journal(s)\n"
