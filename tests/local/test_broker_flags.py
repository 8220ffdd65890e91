"""The flags the local stack starts its brokers with, as the broker parses them."""

from __future__ import annotations

import inspect
from pathlib import Path

from gazette_core.broker.config import BrokerConfig, parse_args
from gazette_core.local import stack as local_stack
from gazette_core.local.stack import Process, Stack


def _broker_config(tmp_path: Path) -> BrokerConfig:
    stack = Stack(tmp_path, [Process("etcd", "etcd", 2379, pid=11, peer_port=2380),
                             Process("broker", "broker-1", 8080, pid=12, zone="zone-a")])
    argv = local_stack._broker_argv(stack, stack.brokers[0])
    return parse_args(argv[argv.index(local_stack.BROKER_MARKER) + 1:])


def test_local_brokers_give_up_persisting_before_local_down_kills_them(tmp_path: Path) -> None:
    config = _broker_config(tmp_path)
    down_timeout = inspect.signature(local_stack.down).parameters["timeout"].default
    assert config.persist_on_stop_timeout == local_stack.PERSIST_ON_STOP_S
    assert config.persist_on_stop_timeout < BrokerConfig().persist_on_stop_timeout
    assert config.persist_on_stop_timeout < down_timeout
