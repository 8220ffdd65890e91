"""`up` restarts a broker that exits while it waits for the brokers to serve.

A broker that lost its Etcd lease during an outage may still be persisting
when `up` brings etcd back, and exits a moment later; `up` must start it
again rather than wait for it in vain. The processes are simulated here; the
reliability tests run the real thing (tests/reliability/test_etcd_outage.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gazette_core.local import stack as local_stack
from gazette_core.local.stack import RESTARTS_WHILE_WAITING, Process, Stack, StackError


class FakeProcesses:
    """Pids that live until told otherwise; each spawn gets a new pid."""

    def __init__(self, serving_from: int) -> None:
        self.live = {11, 12}  # etcd and broker-1 run when `up` starts
        self.spawned: list[int] = []
        self.serving_from = serving_from  # the first pid that ever serves

    def alive(self, pid: int, marker: str = "") -> bool:
        return pid in self.live

    def spawn(self, argv: list[str], log: Path, env: dict[str, str] | None = None) -> int:
        pid = 100 + len(self.spawned)
        self.spawned.append(pid)
        self.live.add(pid)
        return pid

    def serves(self, stack_dir: Path) -> bool:
        broker = next(p for p in Stack.load(stack_dir).processes  # type: ignore[union-attr]
                      if p.role == "broker")
        if broker.pid == 12:
            self.live.discard(12)  # it exits once `up` looks at it: its lease was lost
        return broker.pid >= self.serving_from and broker.pid in self.live


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeProcesses:
    Stack(tmp_path, [Process("etcd", "etcd", 2379, pid=11, peer_port=2380),
                     Process("broker", "broker-1", 8080, pid=12, http_port=8081)]).save()
    fake = FakeProcesses(serving_from=100)
    monkeypatch.setattr(local_stack.processes, "alive", fake.alive)
    monkeypatch.setattr(local_stack.processes, "spawn", fake.spawn)
    monkeypatch.setattr(local_stack.etcd_http, "healthy", lambda endpoint: True)
    monkeypatch.setattr(local_stack.etcd_http, "revoke_lease_of", lambda endpoint, key: True)
    monkeypatch.setattr(local_stack, "broker_serves",
                        lambda endpoint, auth_keys="": fake.serves(tmp_path))
    return fake


def test_a_broker_that_exits_while_up_waits_is_started_again(
        tmp_path: Path, fake: FakeProcesses) -> None:
    stack = local_stack.up(tmp_path, brokers=1, timeout=3, activate=False)
    assert fake.spawned == [100]
    assert stack.brokers[0].pid == 100


def test_a_broker_that_keeps_exiting_fails_up_with_its_log(
        tmp_path: Path, fake: FakeProcesses, monkeypatch: pytest.MonkeyPatch) -> None:
    def spawn_dying(argv: list[str], log: Path, env: dict[str, str] | None = None) -> int:
        pid = fake.spawn(argv, log, env)
        fake.live.discard(pid)  # it cannot start, e.g. etcd is still down
        return pid

    monkeypatch.setattr(local_stack.processes, "spawn", spawn_dying)
    with pytest.raises(StackError, match="broker-1 did not become ready"):
        local_stack.up(tmp_path, brokers=1, timeout=1, activate=False)
    assert len(fake.spawned) == RESTARTS_WHILE_WAITING
