"""After `eval "$(gazctl local env)"`, gazctl keeps working when broker-1 dies: the
environment lists every broker of the stack and gazctl dials a live one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gazette_core.local.stack import Stack
from tests.gazctl.support import exported, gazctl, isolated_env, journal_set, kill, stop_stack


def _ok(*args: str, env: dict[str, str], input: bytes | None = None) -> str:
    proc = gazctl(*args, env=env, input=input)
    assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    return proc.stdout.decode()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, state_home: Path) -> Iterator[Stack]:
    directory = tmp_path_factory.mktemp("failover")
    try:
        _ok("local", "up", "--dir", str(directory), "--brokers", "3",
            env=isolated_env(state_home))
        loaded = Stack.load(directory)
        assert loaded is not None
        yield loaded
    finally:
        stop_stack(directory)


def test_env_exports_every_broker(stack: Stack, state_home: Path) -> None:
    out = _ok("local", "env", "--dir", str(stack.directory), env=isolated_env(state_home))

    assert exported(out)["BROKER_ADDRESS"] == ",".join(b.endpoint for b in stack.brokers)


def test_commands_still_work_after_broker_1_is_killed(stack: Stack, state_home: Path) -> None:
    env = {**isolated_env(state_home), **exported(
        _ok("local", "env", "--dir", str(stack.directory), env=isolated_env(state_home)))}
    _ok("journals", "apply", env=env, input=journal_set("failover/", "before", replication=3))
    kill(stack.brokers[0])

    applied = _ok("journals", "apply", env=env,
                  input=journal_set("failover/", "after", replication=3))
    listed = _ok("journals", "list", "-l", "prefix=failover/", env=env)

    assert applied.splitlines()[0] == "create failover/after (new)"
    assert [line.split()[0] for line in listed.splitlines()[1:]] == [
        "failover/after", "failover/before"]
