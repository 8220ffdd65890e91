"""Ctrl-C (SIGINT) ends a gazctl subprocess with 130 and nothing on stderr, at any moment.

Some commands here start with SIGINT ignored, as a background job of a
non-interactive shell (`gazctl journals read -b ... &` in a script) or a CI
runner starts them: gazctl takes SIGINT over anyway. That also makes the
moment it does so visible (the signal shows up as caught in /proc/PID/status),
so a signal is never sent while the interpreter itself is still starting,
before any of gazctl's code runs.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.gazctl.support import (
    GAZCTL,
    content,
    exit_code,
    gazctl,
    isolated_env,
    ok,
    stop,
    wait_primaries,
)

DEADLINE = 30  # seconds a step may take on a loaded machine; a bound, not a measurement
JOURNAL = "intr/read"
SPEC = ("name: {name}\nreplication: 1\nrevision: 0\nfragment:\n  length: 1048576\n"
        "  compression_codec: NONE\n  refresh_interval: 1s\n")


@pytest.fixture(scope="module", autouse=True)
def intr_journals(address: str) -> None:
    for name in (JOURNAL, "intr/appended"):
        ok("journals", "apply", "--broker.address", address, input=SPEC.format(name=name))
    wait_primaries(address, "prefix=intr/")
    ok("journals", "append", "-l", f"name={JOURNAL}", "--broker.address", address,
       input=b"hello\n")


def _start(state_home: Path, *args: str, sigint: signal.Handlers = signal.SIG_IGN
           ) -> subprocess.Popen[bytes]:
    """gazctl running `args`, started with SIGINT ignored (or default, as a terminal does)."""
    return subprocess.Popen([*GAZCTL, *args], env=isolated_env(state_home),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, sigint))


@contextmanager
def _killed_at_the_end(procs: list[subprocess.Popen[bytes]]) -> Iterator[None]:
    try:
        yield
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()


def _took_over_sigint(proc: subprocess.Popen[bytes]) -> bool:
    """Whether `proc` catches SIGINT (false while it still ignores the inherited ignore)."""
    if proc.poll() is not None:  # done already (an unreaped one still shows SigCgt 0)
        return True
    try:
        status = Path(f"/proc/{proc.pid}/status").read_text()
    except OSError:  # it exited already
        return True
    caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught.split()[1], 16) & (1 << (signal.SIGINT - 1)))


def _wait(what: str, done: Callable[[], bool], proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + DEADLINE
    while not done():
        assert proc.poll() is None, f"gazctl exited with {proc.returncode} before {what}"
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.01)


def _read_b(address: str) -> list[str]:
    return ["journals", "read", "-b", "-l", f"name={JOURNAL}", "--broker.address", address]


@pytest.mark.parametrize("command", ["read -b", "list --watch", "append -f lines"])
def test_ctrl_c_ends_a_command_started_with_ctrl_c_ignored(
        address: str, state_home: Path, command: str) -> None:
    args = {
        "read -b": _read_b(address),
        "list --watch": ["journals", "list", "--watch", "-l", "prefix=intr/",
                         "--broker.address", address],
        "append -f lines": ["journals", "append", "-f", "lines", "-l", "name=intr/appended",
                            "--broker.address", address],
    }[command]
    proc = _start(state_home, *args)
    assert proc.stdin is not None and proc.stdout is not None
    with _killed_at_the_end([proc]):
        if command == "append -f lines":
            before = content(address, "intr/appended")
            proc.stdin.write(b"one line\n")
            proc.stdin.flush()  # and the pipe stays open, as under `tail -F log | ...`
            _wait("the line was appended",
                  lambda: content(address, "intr/appended") == before + b"one line\n", proc)
        else:
            assert proc.stdout.readline()  # at work: read or listed, and now waiting

        assert stop(proc) == 130
        assert proc.communicate()[1] == b""


def test_ctrl_c_at_any_moment_of_a_command_exits_130_quietly(
        address: str, state_home: Path) -> None:
    """Interrupt while modules load, the command line is parsed, the broker is dialed,
    the RPC streams, and the command returns: one gazctl per moment, run side by side."""
    listing = gazctl("journals", "list", "-l", "prefix=intr/", "--broker.address", address,
                     env=isolated_env(state_home)).stdout
    delays = [0, 0.05, 0.15, 0.3, 0.6, 1.0]  # after gazctl took SIGINT over
    runs = [(command, delay, _start(state_home, *args))
            for command, args in [("read -b", _read_b(address)),
                                  ("list", ["journals", "list", "-l", "prefix=intr/",
                                            "--broker.address", address])]
            for delay in delays]
    with _killed_at_the_end([proc for _, _, proc in runs]):
        took_over: dict[int, float] = {}
        waiting = list(runs)
        deadline = time.monotonic() + DEADLINE
        while waiting:
            assert time.monotonic() < deadline, "gazctl never took SIGINT over"
            for run in list(waiting):
                _, delay, proc = run
                if proc.pid not in took_over:
                    if _took_over_sigint(proc):
                        took_over[proc.pid] = time.monotonic()
                elif time.monotonic() - took_over[proc.pid] >= delay:
                    proc.send_signal(signal.SIGINT)
                    waiting.remove(run)
            time.sleep(0.005)

        for command, delay, proc in runs:
            code = exit_code(proc)
            out, err = proc.communicate()
            outcome = (command, delay, code, out, err)
            assert err == b"", outcome
            if command == "read -b":  # never ends by itself
                assert code == 130 and out in (b"", b"hello\n"), outcome
            else:
                # Interrupted, or done before the signal came; never ended by the signal
                # itself (gazctl skips the interpreter's shutdown, where SIGINT would have
                # its default action back) nor by gRPC's core shutting down.
                assert code == 130 or (code == 0 and out == listing), outcome


def test_ctrl_c_while_dialing_a_silent_broker_exits_130_quietly(state_home: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts, never answers
        silent.settimeout(DEADLINE)
        port = silent.getsockname()[1]
        proc = _start(state_home, "journals", "list", "--timeout", "600s",
                      "--broker.address", f"http://127.0.0.1:{port}", sigint=signal.SIG_DFL)
        with _killed_at_the_end([proc]):
            conn, _ = silent.accept()  # gazctl is dialing, and waits for an answer
            with conn:
                assert stop(proc) == 130
                assert proc.communicate()[1] == b""


def test_sigusr1_writes_every_threads_stack_and_the_command_goes_on(
        address: str, state_home: Path, tmp_path: Path) -> None:
    err_path = tmp_path / "stderr"
    with err_path.open("wb") as err:
        proc = subprocess.Popen([*GAZCTL, *_read_b(address)], env=isolated_env(state_home),
                                stdout=subprocess.PIPE, stderr=err)
    assert proc.stdout is not None
    with _killed_at_the_end([proc]):
        assert proc.stdout.read(6) == b"hello\n"
        proc.send_signal(signal.SIGUSR1)
        _wait("the stacks were on stderr",
              lambda: b"most recent call first" in err_path.read_bytes(), proc)

        ok("journals", "append", "-l", f"name={JOURNAL}", "--broker.address", address,
           input=b"more\n")
        assert proc.stdout.read(5) == b"more\n"  # still reading
        assert stop(proc, stderr_path=err_path) == 130
    assert b"Current thread" in err_path.read_bytes()


class PollerCompletionQueue:
    """Named as gRPC's class whose callback hands completions to their calls' loops."""

    def _handle_events(self, loop: object) -> None:
        raise RuntimeError("Event loop is closed")


def test_a_grpc_event_of_a_closed_loop_is_not_reported_by_a_later_command(
        caplog: pytest.LogCaptureFixture) -> None:
    """In-process, after other loops (as in this test session), gRPC can complete a call of a
    closed loop during a later command: what the loop reports then, as the full runs of the
    suite saw it on a command's stderr, is dropped; any other callback failure is not."""
    from gazctl.interrupts import _events_of_closed_loops

    loop = asyncio.new_event_loop()
    try:
        handle = asyncio.Handle(PollerCompletionQueue()._handle_events, (loop,), loop)
        late = {"message": f"Exception in callback {handle!r}", "handle": handle,
                "exception": RuntimeError("Event loop is closed")}
        other = {**late, "exception": RuntimeError("something else")}
        with caplog.at_level(logging.WARNING):
            _events_of_closed_loops(loop, late)
            assert caplog.records == []
            _events_of_closed_loops(loop, other)
        assert [r.getMessage().splitlines()[0] for r in caplog.records] == [other["message"]]
    finally:
        loop.close()
