"""A `gazette consumer` process whose application calls sys.exit on one shard.

A real local stack (etcd, a broker, one consumer process). The app's
SystemExit fails that shard alone, with the method, place and type in its
status and in the process's log; the process stays up and keeps serving
its other shard.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from gazette_core.broker.client.channel import journal_stub
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.local import processes
from gazette_core.testing.consumer_stack import StackConsumers
from tests.consumer.runtime.support import SOURCE, Producer, create_journals, shard_spec

APP = "tests.consumer.service.exiting_app:ExitingCounter"
FAILED = cpb.ReplicaStatus.FAILED


async def failed_errors(stack: StackConsumers, shard: str, limit: float = 60) -> list[str]:
    """The errors of `shard`'s FAILED replica, once it has one."""
    deadline = time.monotonic() + limit
    while True:
        for entry in await stack.list_shards():
            failed = [s for s in entry.status if s.code == FAILED]
            if entry.spec.id == shard and failed:
                return list(failed[0].errors)
        assert time.monotonic() < deadline, f"{shard} never failed"
        await asyncio.sleep(0.1)


@pytest.mark.timeout(180)
async def test_an_app_calling_sys_exit_fails_its_shard_and_the_process_serves_on(
        tmp_path: Path) -> None:
    stack = await StackConsumers.up(tmp_path / "stack", consumers=1, lease=4, app=APP)
    try:
        stub = journal_stub(stack.stack.brokers[0].endpoint)
        await create_journals(stub, recovery_logs=("exit-a", "exit-b"))
        await stack.apply_shards([shard_spec("exit-a"), shard_spec("exit-b")])
        await stack.wait_all_primary(["exit-a", "exit-b"])
        head = await Producer(stub).committed(1, 2)

        errors = await failed_errors(stack, "exit-a")
        assert errors == [f"consume_message at {SOURCE}:0: SystemExit: 7"]
        stat = await stack.shard_stub().Stat(
            cpb.StatRequest(shard="exit-b", read_through={SOURCE: head}), timeout=60)
        assert stat.status == cpb.OK and stat.read_through[SOURCE] >= head
        consumer = stack.consumer_processes()[0]
        assert processes.alive(consumer.pid, consumer.marker)
        log = (stack.directory / "logs" / f"{consumer.name}.log").read_text()
        assert f"shard exit-a failed: consume_message at {SOURCE}:0: SystemExit: 7" in log
    finally:
        await stack.kill_all()
