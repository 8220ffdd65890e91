"""`gazctl local up --consumers N --app MOD:ATTR`: consumer processes beside the brokers.

They run the application against the stack's brokers and etcd, show up in
`local status -o json` with role `consumer` and their endpoint, serve shards,
and a SIGKILLed one is restarted by the next `up`.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from gazette_core.broker.client.channel import journal_stub
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.consumer.api.client import apply_shards, list_shards, stat_shard
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.local import processes
from gazette_core.local import stack as local_stack
from tests.consumer.runtime.support import SOURCE, Producer, create_journals, shard_spec
from tests.gazctl.support import exported, gazctl, isolated_env, kill, stop_stack

APP = "tests.consumer.runtime.apps:Counter"


@pytest.fixture
def stack_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    directory = tmp_path / "stack"
    try:
        yield directory
    finally:
        stop_stack(directory)


def up(directory: Path, *extra: str) -> None:
    env = isolated_env(directory.parent / "state")
    done = gazctl("local", "up", "--dir", str(directory), *extra, env=env, timeout=120)
    assert done.returncode == 0, done.stderr.decode()


def consumers(directory: Path) -> list[dict[str, object]]:
    env = isolated_env(directory.parent / "state")
    done = gazctl("local", "status", "--dir", str(directory), "-o", "json", env=env)
    return [row for row in json.loads(done.stdout) if row["role"] == "consumer"]


async def serve_one_shard(stack: local_stack.Stack) -> None:
    """Create the app's journals and a shard; wait until its primary consumed a message."""
    stub = journal_stub(stack.brokers[0].endpoint)
    await create_journals(stub)
    endpoint = stack.consumers[0].endpoint
    await apply_shards(endpoint, [cpb.ApplyRequest.Change(
        upsert=shard_spec("shard-000", max_s=0.2), expect_mod_revision=0)])
    head = await Producer(stub).committed(1)
    async with asyncio.timeout(60):
        while (await list_shards(endpoint)).shards[0].route.primary < 0:
            await asyncio.sleep(0.1)
        stat = await stat_shard(endpoint, "shard-000", {SOURCE: head}, timeout=50)
    assert stat.read_through[SOURCE] >= head


def test_consumers_run_the_app_and_are_restarted_by_up(stack_dir: Path) -> None:
    up(stack_dir, "--consumers", "2", "--app", APP)
    rows = consumers(stack_dir)
    stack = local_stack.Stack.load(stack_dir)
    assert stack is not None
    assert [(r["name"], r["endpoint"], r["alive"]) for r in rows] == [
        (c.name, c.endpoint, True) for c in stack.consumers]
    assert [c.name for c in stack.consumers] == ["consumer-1", "consumer-2"]
    asyncio.run(serve_one_shard(stack))

    victim = stack.consumers[1]
    os.kill(victim.pid, signal.SIGKILL)
    up(stack_dir)  # the app is remembered
    assert all(r["alive"] for r in consumers(stack_dir))
    restarted = local_stack.Stack.load(stack_dir)
    assert restarted is not None and restarted.consumers[1].pid != victim.pid
    assert processes.alive(restarted.consumers[1].pid, restarted.consumers[1].marker)


async def apply_fat_specs(stack: local_stack.Stack, count: int) -> None:
    """`count` disabled shards of 1.5 MB of labels each: together past 4 MiB."""
    await create_journals(journal_stub(stack.brokers[0].endpoint))
    labels = pb.LabelSet(labels=[pb.Label(name=f"label-{j:04d}", value="v" * 500)
                                 for j in range(3000)])
    for i in range(count):
        spec = shard_spec(f"fat-{i:03d}")
        spec.disable, spec.recovery_log_prefix, spec.hint_prefix = True, "", ""
        spec.labels.CopyFrom(labels)
        await apply_shards(stack.consumers[0].endpoint, [
            cpb.ApplyRequest.Change(upsert=spec, expect_mod_revision=-1)])


def test_a_consumer_is_restarted_by_up_whatever_the_size_of_its_shard_specs(
        stack_dir: Path) -> None:
    up(stack_dir, "--consumers", "1", "--app", APP)
    stack = local_stack.Stack.load(stack_dir)
    assert stack is not None
    asyncio.run(apply_fat_specs(stack, 4))
    victim = stack.consumers[0]
    os.kill(victim.pid, signal.SIGKILL)
    up(stack_dir)  # it must read the specs from Etcd, and answer the readiness probe
    assert all(r["alive"] for r in consumers(stack_dir))


def test_consumers_without_an_app_are_refused_with_one_line(stack_dir: Path) -> None:
    env = isolated_env(stack_dir.parent / "state")
    done = gazctl("local", "up", "--dir", str(stack_dir), "--consumers", "1", env=env)
    assert done.returncode == 1
    assert done.stderr.decode().strip() == (
        "error: consumers need an application: pass --app package.module:Attr")


def test_shards_commands_go_on_after_the_first_listed_consumer_dies(stack_dir: Path) -> None:
    up(stack_dir, "--consumers", "3", "--app", APP)
    stack = local_stack.Stack.load(stack_dir)
    assert stack is not None
    asyncio.run(serve_one_shard(stack))
    state = isolated_env(stack_dir.parent / "state")
    env = {**state, **exported(
        gazctl("local", "env", "--dir", str(stack_dir), env=state).stdout.decode())}
    every = ",".join(c.endpoint for c in stack.consumers)

    kill(stack.consumers[0])
    listed = gazctl("shards", "list", env=env)
    # A program of the client library, given the same list, goes on too.
    by_library = asyncio.run(list_shards(env["CONSUMER_ADDRESS"]))

    assert env["CONSUMER_ADDRESS"] == every
    assert listed.returncode == 0, listed.stderr.decode()
    assert [line.split()[0] for line in listed.stdout.decode().splitlines()] == [
        "ID", "shard-000"]
    assert [s.spec.id for s in by_library.shards] == ["shard-000"]


