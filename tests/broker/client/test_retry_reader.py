"""RetryReader: resuming cut streams without loss or duplication, and read_all."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

from gazette_core.broker.client.retry_reader import RetryReader, read_all
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import StatusError
from tests.broker.client.fake_broker import FakeBroker

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub


def pattern(n: int) -> bytes:
    return bytes(i % 249 for i in range(n))


async def test_retry_reader_resumes_where_the_cut_stream_stopped(
    broker: FakeBroker, stub: JournalAsyncStub
) -> None:
    data = pattern(200_000)
    broker.add_journal("a/journal", data)
    broker.read_aborts = 3
    broker.read_abort_after = 50_001
    assert await read_all(stub, "a/journal") == data
    offsets = (0, 50_001, 100_002, 150_003)
    assert broker.read_requests == [pb.ReadRequest(journal="a/journal", offset=o) for o in offsets]


async def test_non_blocking_retry_reader_stops_at_the_write_head(
    broker: FakeBroker, stub: JournalAsyncStub
) -> None:
    data = pattern(5000)
    broker.add_journal("a/journal", data)
    reader = RetryReader(stub, pb.ReadRequest(journal="a/journal", offset=1000))
    assert b"".join([chunk async for chunk in reader]) == data[1000:]
    assert reader.offset == 5000
    assert reader.write_head == 5000
    assert [chunk async for chunk in reader] == []


async def test_retry_reader_follows_offset_jumps_across_reconnects(
    broker: FakeBroker, stub: JournalAsyncStub
) -> None:
    data = pattern(90_000)
    broker.add_journal("a/journal", data, begin=10_000)
    broker.read_aborts = 1
    broker.read_abort_after = 40_000
    reader = RetryReader(stub, pb.ReadRequest(journal="a/journal", offset=0))
    assert b"".join([chunk async for chunk in reader]) == data[10_000:]
    assert reader.skipped == 10_000
    assert [r.offset for r in broker.read_requests] == [0, 50_000]


async def test_blocking_retry_reader_receives_later_commits(
    broker: FakeBroker, stub: JournalAsyncStub
) -> None:
    broker.add_journal("a/journal", b"first;")

    async def read_until(n: int) -> bytes:
        got = bytearray()
        async with RetryReader(
            stub, pb.ReadRequest(journal="a/journal", offset=0, block=True)
        ) as reader:
            async for chunk in reader:
                got += chunk
                if len(got) >= n:
                    break
        return bytes(got)

    task = asyncio.create_task(read_until(len(b"first;second;")))
    while not broker.read_requests:
        await asyncio.sleep(0.01)  # Until the read is open.
    await broker.commit("a/journal", b"second;")
    assert await task == b"first;second;"


async def test_retry_reader_raises_non_retriable_statuses(
    broker: FakeBroker, stub: JournalAsyncStub
) -> None:
    with pytest.raises(StatusError) as caught:
        await read_all(stub, "missing/journal")
    assert str(caught.value) == "JOURNAL_NOT_FOUND (journal 'missing/journal')"
    assert len(broker.read_requests) == 1
