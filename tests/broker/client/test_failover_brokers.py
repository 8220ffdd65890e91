"""A user program given a list of brokers, as `gazctl local env` exports in $BROKER_ADDRESS.

Brokers are the local stack's subprocesses, so one can be SIGKILLed. A program
given a dead endpoint first works from its first call; one whose broker is
killed mid-way goes on with the next: its reader sees every record once, its
AppendService commits every record, and one-shot calls keep working.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from gazette_core.broker.client.append_service import AppendService
from gazette_core.broker.client.appender import append
from gazette_core.broker.client.channel import close_channels, dial, journal_stub
from gazette_core.broker.client.failover import FailoverChannel
from gazette_core.broker.client.journals import (
    apply_journals,
    fetch_write_head,
    list_fragments,
    list_journals,
)
from gazette_core.broker.client.reader import Reader
from gazette_core.broker.client.retry_reader import RetryReader
from gazette_core.broker.client.routing import Router
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.labels_ext import parse_selector
from gazette_core.local import stack as local_stack
from gazette_core.testing.broker import journal_spec
from gazette_core.testing.etcd import free_port
from tests.gazctl.support import kill, stop_stack

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub

# Short, so journals of a killed broker move on soon; long enough for a busy machine.
LEASE_S = 5
RECORDS = 40


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[local_stack.Stack]:
    directory = tmp_path_factory.mktemp("failover-brokers")
    try:
        yield local_stack.up(directory, brokers=3, lease=LEASE_S, timeout=60, activate=False)
    finally:
        stop_stack(directory)


def _addresses(stack: local_stack.Stack) -> str:
    return ",".join(b.endpoint for b in stack.brokers)


async def _create(stub: JournalAsyncStub, name: str, replication: int) -> None:
    """Create `name` and wait until it has a primary and all its replicas."""
    spec = journal_spec(name, replication=replication)
    await apply_journals(stub, pb.ApplyRequest(changes=[pb.ApplyRequest.Change(upsert=spec)]))
    async with asyncio.timeout(30):
        while True:
            listed = await list_journals(stub, parse_selector(f"name={name}"))
            route = listed.journals[0].route if listed.journals else None
            if route is not None and route.primary >= 0 and len(route.members) == replication:
                return
            await asyncio.sleep(0.05)


async def test_a_dead_endpoint_listed_first_costs_no_call(stack: local_stack.Stack) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    address = f"{dead},{stack.brokers[0].endpoint}"
    stub = journal_stub(address)
    try:
        await _create(stub, "failover/first-call", replication=1)
        # Each kind of call, each the first of its kind on this channel, works at once.
        appended = await append(stub, "failover/first-call", b"hello\n")
        read = [chunk async for chunk in Reader(stub, pb.ReadRequest(
            journal="failover/first-call", offset=0, end_offset=6, block=True))]
        head = await fetch_write_head(stub, "failover/first-call")
        fragments = await list_fragments(stub, pb.FragmentsRequest(journal="failover/first-call"))
        routed = await append(Router(address), "failover/first-call", b"again\n")

        assert (appended.commit.begin, appended.commit.end) == (0, 6)
        assert b"".join(read) == b"hello\n"
        assert head == 6
        assert [(f.spec.begin, f.spec.end) for f in fragments] == [(0, 6)]
        assert (routed.commit.begin, routed.commit.end) == (6, 12)
        channel = dial(address)
        assert isinstance(channel, FailoverChannel) and channel.current == 1
    finally:
        await close_channels()


async def test_a_program_whose_broker_is_killed_goes_on_with_the_next(
        stack: local_stack.Stack) -> None:
    address = _addresses(stack)
    journal = "failover/killed"
    # A plain stub, not a Router: every call goes to the broker the stub dialed.
    stub = journal_stub(address)
    reading: asyncio.Task[None] | None = None
    try:
        await _create(stub, journal, replication=2)
        reader = RetryReader(stub, pb.ReadRequest(journal=journal, offset=0, block=True))
        got = bytearray()
        expected = b"".join(b"record %03d\n" % i for i in range(RECORDS))

        async def read_all() -> None:
            async for chunk in reader:
                got.extend(chunk)
                if len(got) >= len(expected):
                    return

        reading = asyncio.create_task(read_all())
        async with AppendService(stub) as service:
            for i in range(RECORDS // 2):
                await service.write(journal, b"record %03d\n" % i)
            used = dial(address)
            assert isinstance(used, FailoverChannel) and used.current is not None
            victim = stack.brokers[used.current]
            await asyncio.to_thread(kill, victim)
            listed = await list_journals(stub, parse_selector(f"name={journal}"))
            for i in range(RECORDS // 2, RECORDS):
                await service.write(journal, b"record %03d\n" % i)
        async with asyncio.timeout(60):
            await reading

        assert [j.spec.name for j in listed.journals] == [journal]
        assert used.current is not None and stack.brokers[used.current] is not victim
        assert bytes(got) == expected
    finally:
        if reading is not None:
            reading.cancel()
        await close_channels()

