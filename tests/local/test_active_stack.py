"""Which local stack gazctl commands go to when several were started: never a stopped one.

The default stack runs throughout the module; a second stack in its own
directory is started after it (so it is the active one), then stopped with
`down` or killed. Each stack has its own etcd, so the journals a command
lists tell which stack it reached.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gazette_core.local.stack import Stack
from tests.gazctl.support import gazctl, isolated_env, journal_set, kill, stop_stack


def _ok(*args: str, env: dict[str, str], input: bytes | None = None) -> str:
    proc = gazctl(*args, env=env, input=input)
    assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    return proc.stdout.decode()


def _names(listing: str) -> list[str]:
    return [line.split()[0] for line in listing.splitlines()[1:]]


@pytest.fixture(scope="module")
def env(state_home: Path) -> dict[str, str]:
    return isolated_env(state_home)


@pytest.fixture(scope="module")
def default_stack(state_home: Path, env: dict[str, str]) -> Iterator[Path]:
    """The default stack (no --dir), holding the journal `default/only`."""
    directory = state_home / "gazette" / "local"
    try:
        _ok("local", "up", env=env)
        _ok("journals", "apply", env=env, input=journal_set("default/", "only"))
        yield directory
    finally:
        stop_stack(directory)


def _other_stack(directory: Path, env: dict[str, str]) -> Stack:
    """A second stack, started after the default one, holding `other/only`."""
    _ok("local", "up", "--dir", str(directory), env=env)
    _ok("journals", "apply", env=env, input=journal_set("other/", "only"))
    # It is the active stack now: commands without an address go to it.
    assert _names(_ok("journals", "list", env=env)) == ["other/only"]
    stack = Stack.load(directory)
    assert stack is not None
    return stack


def test_down_of_the_active_stack_makes_the_running_one_active_again(
        default_stack: Path, env: dict[str, str], tmp_path: Path, state_home: Path) -> None:
    other = tmp_path / "other"
    try:
        _other_stack(other, env)
        _ok("local", "down", "--dir", str(other), env=env)

        listed = _ok("journals", "list", env=env)
        recorded = (state_home / "gazette" / "active-stack").read_text()
    finally:
        stop_stack(other)

    assert _names(listed) == ["default/only"]
    assert recorded == str(default_stack)


def test_a_killed_active_stack_is_skipped(default_stack: Path, env: dict[str, str],
                                          tmp_path: Path) -> None:
    other = tmp_path / "other"
    try:
        stack = _other_stack(other, env)
        kill(stack.brokers[0])  # stopped without `down`: still recorded

        listed = _ok("journals", "list", env=env)
    finally:
        stop_stack(other)

    assert _names(listed) == ["default/only"]


def test_with_no_stack_running_commands_say_so(tmp_path: Path) -> None:
    env = isolated_env(tmp_path / "state")
    other = tmp_path / "other"
    try:
        _ok("local", "up", "--dir", str(other), env=env)
        _ok("local", "down", "--dir", str(other), env=env)

        done = gazctl("journals", "list", "--timeout", "5s", env=env)
    finally:
        stop_stack(other)

    err = done.stderr.decode()
    assert done.returncode == 1
    assert err.startswith("error: cannot reach broker at http://localhost:8080: "), err
    assert err.endswith(" (no address is set and no local stack is running: start one with "
                        "`gazctl local up`, or set --broker.address)\n"), err
    assert err.count("\n") == 1, err
