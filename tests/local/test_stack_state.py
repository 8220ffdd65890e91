"""The local stack's state file: processes and the brokers' Etcd lease TTL survive a reload."""

from __future__ import annotations

import json
from pathlib import Path

from gazette_core.local.stack import LEASE_S, STATE_FILE, Process, Stack


def _processes() -> list[Process]:
    return [Process("etcd", "etcd", 2379, pid=11, peer_port=2380),
            Process("broker", "broker-1", 8080, pid=12, zone="zone-a")]


def test_a_chosen_lease_is_saved_with_the_processes(tmp_path: Path) -> None:
    Stack(tmp_path, _processes(), lease=4).save()
    assert json.loads((tmp_path / STATE_FILE).read_text())["lease"] == 4
    assert Stack.load(tmp_path) == Stack(tmp_path, _processes(), lease=4)


def test_state_from_before_leases_were_configurable_loads_with_the_default(
        tmp_path: Path) -> None:
    Stack(tmp_path, _processes()).save()
    data = json.loads((tmp_path / STATE_FILE).read_text())
    del data["lease"]
    (tmp_path / STATE_FILE).write_text(json.dumps(data))
    assert Stack.load(tmp_path) == Stack(tmp_path, _processes(), lease=LEASE_S)
