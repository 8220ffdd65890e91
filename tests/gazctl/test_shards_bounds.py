"""Consumer and broker processes under hostile specs and bursts of calls.

A ShardSpec beyond the bounds (stored straight into Etcd, as an older version
could have) is ignored by the consumers, which stay up serving every other
shard, and `gazctl shards apply` deletes it. A burst of thousands of
concurrent List calls is answered in full by a consumer and by a broker.
"""

from __future__ import annotations

import asyncio
import collections
import resource
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import grpc
import pytest

from gazette_core.allocator import keys
from gazette_core.broker.client.channel import close_channels, dial
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.protocol import consumer_pb2_grpc as cpb_grpc
from gazette_core.keyspace import etcd_util
from gazette_core.local import consumers as local_consumers
from gazette_core.local import processes
from gazette_core.local.stack import Stack
from tests.gazctl.shards_support import (
    EXAMPLE_SHARDS,
    log_journals,
    shard_stack,
    shard_yaml,
    shards,
    wait_primaries,
)
from tests.gazctl.support import ok, one_error_line, run_main

ABSURD = "absurd-backups"
BURST = 4000
# A consumer that allocates in proportion to a spec field fails fast at this
# size rather than taking the test machine's memory (they use ~600 MiB).
ADDRESS_SPACE = 3 << 30


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, state_home: Path) -> Iterator[Stack]:
    with shard_stack(tmp_path_factory.mktemp("bounds")) as s:
        for consumer in s.consumers:
            resource.prlimit(consumer.pid, resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
        yield s


def _item_key(stack: Stack, shard: str) -> str:
    return keys.item_key(local_consumers.etcd_prefix(stack.app), shard)


async def _etcd_put(stack: Stack, key: str, value: bytes) -> None:
    client = await etcd_util.connect(stack.etcd.endpoint)
    try:
        await client.put(key.encode(), value)
    finally:
        await client.close()


async def _etcd_has(stack: Stack, key: str) -> bool:
    client = await etcd_util.connect(stack.etcd.endpoint)
    try:
        return await client.get(key.encode()) is not None
    finally:
        await client.close()


def _wait_logged(stack: Stack, text: str, limit: float = 30) -> None:
    """Wait until every consumer's log has `text`."""
    logs = [stack.directory / "logs" / f"{c.name}.log" for c in stack.consumers]
    deadline = time.monotonic() + limit
    while not all(text in log.read_text() for log in logs):
        assert time.monotonic() < deadline, f"{text!r} not logged by every consumer"
        time.sleep(0.1)


def test_stored_spec_beyond_bounds_is_ignored_and_deletable(stack: Stack,
                                                            tmp_path: Path) -> None:
    # Valid but for hint_backups, as a spec applied by an older version.
    spec = shards(stack, f"id={EXAMPLE_SHARDS[0]}")[0].spec
    spec.id, spec.hint_backups = ABSURD, 2147483647
    key = _item_key(stack, ABSURD)
    asyncio.run(_etcd_put(stack, key, spec.SerializeToString()))
    _wait_logged(stack, "hint_backups: expected hint_backups <= 64 (got 2147483647)")

    # The consumers stay up, list every other shard and take on new ones.
    assert all(processes.alive(c.pid, c.marker) for c in stack.consumers)
    assert ABSURD not in [s.spec.id for s in shards(stack)]
    ok("journals", "apply", input=log_journals("after-absurd"))
    ok("shards", "apply", input=shard_yaml("after-absurd"))
    wait_primaries(stack, "")
    assert "after-absurd" in [s.spec.id for s in shards(stack)]

    # gazctl deletes the stored key, though no consumer lists the shard.
    deleting = f"shards:\n- id: {ABSURD}\n  delete: true\n  revision: -1\n"
    out = ok("shards", "apply", input=deleting).stdout
    assert f"delete {ABSURD}: not listed" in out
    assert not asyncio.run(_etcd_has(stack, key))


def test_gazctl_refuses_a_spec_beyond_bounds_before_sending(
        stack: Stack, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    before = [(s.spec.id, s.mod_revision) for s in shards(stack)]
    specs = tmp_path / "absurd.yaml"
    specs.write_text(shard_yaml("too-many-backups", extra="  hint_backups: 2147483647\n"))
    code, out, err = run_main(capsys, "shards", "apply", "--specs", str(specs))
    assert (code, out) == (1, "")
    assert one_error_line(err) == (
        "error: invalid input: shards[0].hint_backups: expected hint_backups <= 64 "
        "(got 2147483647)")
    assert [(s.spec.id, s.mod_revision) for s in shards(stack)] == before


async def _burst(calls: int, one: Callable[[], Awaitable[None]]) -> collections.Counter[str]:
    async def outcome() -> str:
        try:
            await one()
        except grpc.aio.AioRpcError as err:
            return err.code().name
        return "OK"

    return collections.Counter(await asyncio.gather(*(outcome() for _ in range(calls))))


def test_a_burst_of_list_calls_is_answered_in_full(stack: Stack) -> None:
    async def main() -> tuple[collections.Counter[str], collections.Counter[str]]:
        consumer = cpb_grpc.ShardStub(dial(stack.consumers[0].endpoint))
        broker = pb_grpc.JournalStub(dial(stack.brokers[0].endpoint))

        async def list_shards() -> None:
            resp = await consumer.List(cpb.ListRequest(), timeout=120)
            assert resp.status == cpb.OK

        async def list_journals() -> None:
            async for resp in broker.List(pb.ListRequest(), timeout=120):
                assert resp.status == pb.OK

        try:
            return await _burst(BURST, list_shards), await _burst(BURST, list_journals)
        finally:
            await close_channels()

    assert asyncio.run(main()) == (collections.Counter(OK=BURST),
                                   collections.Counter(OK=BURST))
