"""AppendService batches: never a failed, sent or stopped one; records kept as enqueued."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

from gazette_core.broker.client.append_service import AppendService
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import GazetteError, StatusError
from tests.broker.client.fake_broker import FakeBroker

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub


def span(commit: pb.Fragment) -> tuple[int, int]:
    return commit.begin, commit.end


async def test_a_record_enqueued_after_a_failed_batch_goes_out_in_a_new_one(
    broker: FakeBroker, stub: JournalAsyncStub
) -> None:
    broker.add_journal("a/journal")
    broker.append_statuses = [pb.JOURNAL_NOT_FOUND]
    async with AppendService(stub, max_batch_bytes=4) as service:
        failed = service.enqueue("a/journal", b"one;")
        behind = service.enqueue("a/journal", b"tw")  # open, fails with the one before
        for batch in (failed, behind):
            with pytest.raises(StatusError):
                await batch
        later = service.enqueue("a/journal", b"two;")
        assert later is not behind
        assert span(await later) == (0, 4)
    assert broker.journals["a/journal"].content == b"two;"


async def test_records_after_a_batch_went_out_start_the_next_one(
    broker: FakeBroker, stub: JournalAsyncStub
) -> None:
    broker.add_journal("a/journal")
    async with AppendService(stub) as service:
        first = service.enqueue("a/journal", b"one;")
        assert span(await first) == (0, 4)
        second = service.enqueue("a/journal", b"two;")
        assert second is not first
        assert span(await second) == (4, 8)
    assert broker.journals["a/journal"].content == b"one;two;"


async def test_enqueue_is_refused_once_stop_began_even_with_a_batch_open(
    broker: FakeBroker, stub: JournalAsyncStub
) -> None:
    broker.add_journal("a/journal")
    service = AppendService(stub, max_batch_bytes=4)
    service.start()
    first = service.enqueue("a/journal", b"one;")
    service.enqueue("a/journal", b"two;")
    third = service.enqueue("a/journal", b"th")  # open, queued behind two full batches
    stopping = asyncio.ensure_future(service.stop())
    await first  # stop() began before the first batch could commit; the third is still open
    assert not third.done()
    with pytest.raises(GazetteError) as caught:
        service.enqueue("a/journal", b"ree;")
    assert str(caught.value) == "AppendService is not running: call start() first"
    await stopping
    assert span(await third) == (8, 10)
    assert broker.journals["a/journal"].content == b"one;two;th"


async def test_a_record_is_appended_as_it_was_when_enqueued(
    broker: FakeBroker, stub: JournalAsyncStub
) -> None:
    # Records are kept until their batch is sent: a caller's buffer must not leak into it.
    broker.add_journal("a/journal")
    async with AppendService(stub) as service:
        record = bytearray(b"one;")
        first = service.enqueue("a/journal", record)
        record[:] = b"two;"
        second = service.write("a/journal", memoryview(record))
        record[:] = b"bad!"
        assert span(await first) == (0, 8)
        assert span(await second) == (4, 8)
    assert broker.journals["a/journal"].content == b"one;two;"
