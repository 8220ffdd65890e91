"""Helpers for gazctl and local-stack tests: run gazctl, run a stack, ask the broker.

gazctl runs either in-process through CliRunner (fast, for output checks) or
as a real subprocess (for exit codes and the error lines `gazctl.cli.run_cli`
prints). Library calls check what a command did without going through gazctl.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest
import typer
from typer.core import TyperGroup
from typer.testing import CliRunner, Result

from gazctl.cli import app, run_cli
from gazette_core.broker.client.channel import close_channels, journal_stub
from gazette_core.broker.client.journals import list_journals
from gazette_core.broker.client.retry_reader import read_all
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.labels_ext import parse_selector
from gazette_core.local import processes
from gazette_core.local import stack as local_stack

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub

T = TypeVar("T")
GAZCTL = [sys.executable, "-m", "gazctl.main"]


def cli(*args: str, input: bytes | str | None = None) -> Result:
    """Run gazctl in this process; errors surface as `result.exception`."""
    return CliRunner().invoke(app, list(args), input=input)


def ok(*args: str, input: bytes | str | None = None) -> Result:
    """Run gazctl in this process and require exit code 0."""
    result = cli(*args, input=input)
    assert result.exit_code == 0, (result.exit_code, result.stdout, result.stderr,
                                   repr(result.exception))
    return result


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run gazctl's entry point in this process: exit code, stdout and stderr.

    Unlike `cli`, errors go through the entry point, which prints them as the
    one line and exit code a shell would see.
    """
    capsys.readouterr()
    code = run_cli(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_error_line(err: str) -> str:
    """gazctl's stderr, which must be exactly one `error: ...` line."""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def isolated_env(state_home: Path) -> dict[str, str]:
    """This process's environment with the state directory moved and no broker address."""
    env = {k: v for k, v in os.environ.items() if k != "BROKER_ADDRESS"}
    env["XDG_STATE_HOME"] = str(state_home)
    return env


def journal_set(prefix: str, *children: str, replication: int = 1) -> bytes:
    """Journal YAML creating `prefix` + each of `children` in file:// stores."""
    entries = "".join(f"  - name: {prefix}{child}\n    revision: 0\n" for child in children)
    return (f"name: {prefix}\nreplication: {replication}\nfragment:\n  length: 1048576\n"
            f"  compression_codec: NONE\n  stores:\n    - file:///\n"
            f"  refresh_interval: 1s\nchildren:\n{entries}").encode()


def exported(env_output: str) -> dict[str, str]:
    """The variables of `export NAME=value` lines, as a shell's eval would set them."""
    pairs = (shlex.split(line.removeprefix("export "))[0].split("=", 1)
             for line in env_output.splitlines())
    return dict(pairs)


def gazctl(*args: str, env: dict[str, str], input: bytes | None = None,
           timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    """Run gazctl as its own process, exactly as a shell would."""
    return subprocess.run([*GAZCTL, *args], input=input, env=env, capture_output=True,
                          timeout=timeout, check=False)


def stop(proc: subprocess.Popen[bytes], sig: signal.Signals = signal.SIGINT,
         limit: float = 30, stderr_path: Path | None = None) -> int:
    """Send `sig` to a gazctl subprocess and return its exit code (see `exit_code`)."""
    proc.send_signal(sig)
    return exit_code(proc, limit, stderr_path)


def exit_code(proc: subprocess.Popen[bytes], limit: float = 30,
              stderr_path: Path | None = None) -> int:
    """The exit code of a gazctl subprocess that should be ending.

    A gazctl still running `limit` seconds later is asked for every thread's
    stack (SIGUSR1, which gazctl answers on stderr), killed, and the test fails
    showing that stderr: from `stderr_path`, or the process's stderr pipe.
    """
    try:
        return proc.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)
        time.sleep(1)
        proc.kill()
        proc.wait()
    if stderr_path is not None:
        err = stderr_path.read_bytes()
    else:
        err = proc.stderr.read() if proc.stderr is not None else b"(stderr not captured)"
    pytest.fail(f"gazctl did not exit within {limit:g}s; its stderr and threads:\n"
                + err.decode(errors="replace"))


@contextmanager
def piped_gazctl(*args: str, env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    """gazctl running as its own process, its stdout and stderr piped here.

    On the way out a process still running is killed, and the pipes are closed.
    """
    proc = subprocess.Popen([*GAZCTL, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


@contextmanager
def isolated_state_home(path: Path) -> Iterator[None]:
    """Point the active-stack pointer (and child processes) at `path`, not the real home.

    The stack module computes its paths at import, so they are patched as well as
    the environment that subprocesses inherit.
    """
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_STATE_HOME", str(path))
        mp.delenv("BROKER_ADDRESS", raising=False)
        mp.setattr(local_stack, "POINTER", path / "gazette")
        mp.setattr(local_stack, "DEFAULT_DIR", path / "gazette" / "local")
        yield


@contextmanager
def running_stack(directory: Path, brokers: int = 1, zones: int = 1
                  ) -> Iterator[local_stack.Stack]:
    """A local stack in `directory`, stopped afterwards even if starting it failed."""
    try:
        yield local_stack.up(directory, brokers=brokers, zones=zones, timeout=30,
                             activate=False)
    finally:
        stop_stack(directory)


def stop_stack(directory: Path) -> None:
    """Stop the stack gracefully, kill anything left, and check no process survived."""
    if local_stack.Stack.load(directory) is None:
        return
    try:
        local_stack.down(directory, timeout=10)
    finally:
        stack = local_stack.Stack.load(directory)
        assert stack is not None
        survivors = [p for p in stack.processes if processes.alive(p.pid, p.marker)]
        for p in survivors:
            os.kill(p.pid, signal.SIGKILL)
        _wait_dead([p.pid for p in stack.processes], {p.pid: p.marker for p in stack.processes})
    assert not survivors, f"processes outlived `down`: {[p.name for p in survivors]}"


def kill(process: local_stack.Process) -> None:
    """SIGKILL one process of a local stack and return once it is gone."""
    os.kill(process.pid, signal.SIGKILL)
    _wait_dead([process.pid], {process.pid: process.marker})


def _wait_dead(pids: list[int], markers: dict[int, str], limit: float = 10) -> None:
    deadline = time.monotonic() + limit
    while any(processes.alive(pid, markers[pid]) for pid in pids):
        assert time.monotonic() < deadline, f"pids {pids} still alive"
        time.sleep(0.05)


def with_broker(address: str, body: Callable[[JournalAsyncStub], Awaitable[T]]) -> T:
    """Run `body` against the broker at `address` in a fresh event loop."""
    async def main() -> T:
        try:
            return await body(journal_stub(address))
        finally:
            await close_channels()

    return asyncio.run(main())


def journals(address: str, selector: str) -> list[pb.ListResponse.Journal]:
    """The journals matching `selector`, straight from the broker."""
    resp = with_broker(address, lambda stub: list_journals(stub, parse_selector(selector)))
    return list(resp.journals)


def content(address: str, journal: str) -> bytes:
    """A journal's whole content, read through the client library."""
    return with_broker(address, lambda stub: read_all(stub, journal))


def wait_primaries(address: str, selector: str, limit: float = 30) -> None:
    """Wait until every journal matching `selector` has a primary broker."""
    deadline = time.monotonic() + limit
    while True:
        listed = journals(address, selector)
        if listed and all(j.route.primary >= 0 for j in listed):
            return
        assert time.monotonic() < deadline, f"no primaries for {selector!r}: {listed}"
        time.sleep(0.05)


def command_paths() -> list[list[str]]:
    """Every command and group of the tree as its arguments after `gazctl`; [] is the root.

    Tests that walk this cover a new command at once.
    """
    def walk(command: Any, path: list[str]) -> Iterator[list[str]]:
        yield path
        if isinstance(command, TyperGroup):
            for name, sub in sorted(command.commands.items()):
                yield from walk(sub, [*path, name])

    return list(walk(typer.main.get_command(app), []))


def command_tree() -> dict[str, Any]:
    """Every gazctl command (not group) by its path, e.g. "gazctl journals read"."""
    def leaves(command: Any, path: str) -> Iterator[tuple[str, Any]]:
        if isinstance(command, TyperGroup):
            for name, sub in sorted(command.commands.items()):
                yield from leaves(sub, f"{path} {name}")
        else:
            yield path, command

    return dict(leaves(typer.main.get_command(app), "gazctl"))


def dialing_commands() -> dict[str, set[str]]:
    """Every gazctl command that dials a broker (it has --broker.address), with its options."""
    return {path: {p.name for p in command.params if p.name}
            for path, command in command_tree().items()
            if any(p.name == "broker" for p in command.params)}


GARBAGE = bytes(range(0x80, 0x100)) * 4  # not UTF-8 from its first byte


def garbage_editor(directory: Path) -> str:
    """A $GAZ_EDITOR command that overwrites the file it is given with binary bytes."""
    program = directory / "garbage_editor.py"
    program.write_text("import sys\nfrom pathlib import Path\n"
                       f"Path(sys.argv[-1]).write_bytes({GARBAGE!r})\n")
    return f"{sys.executable} {program}"


def assert_garbage_kept(proc: subprocess.CompletedProcess[bytes]) -> None:
    """An edit given `garbage_editor` failed in one line naming the file it kept the bytes in,
    and that file holds them (it is removed here)."""
    err = proc.stderr.decode()
    line = one_error_line(err)
    assert line.startswith("error: invalid input: the edited file is not UTF-8 text: byte 0x80 "
                           "at line 1, offset 0 (last edits saved to ") and line.endswith(")"), err
    assert proc.returncode == 1
    saved = Path(line[:-1].rsplit("(last edits saved to ", 1)[1])
    assert saved.read_bytes() == GARBAGE
    saved.unlink()
