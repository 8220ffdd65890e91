"""AppendService: batching, per-journal order, record spans, retries and failures."""

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


def record(journal: str, i: int) -> bytes:
    return f"{journal}:{i}:".encode() + b"." * (i % 37) + b"\n"


async def test_records_keep_their_order_and_resolve_to_their_spans(
    broker: FakeBroker, stub: JournalAsyncStub
) -> None:
    names = ["a/one", "a/two"]
    for name in names:
        broker.add_journal(name, b"preamble\n")
    service = AppendService(stub, max_batch_bytes=16 * 1024)
    service.start()
    futures: dict[str, list[asyncio.Future[pb.Fragment]]] = {name: [] for name in names}
    for i in range(20_000):
        for name in names:
            futures[name].append(service.write(name, record(name, i)))
        if i % 5000 == 0:
            await asyncio.sleep(0)  # Let batches go out while records keep coming.
    await service.stop()

    for name in names:
        expected = []
        offset = len(b"preamble\n")
        for i in range(20_000):
            size = len(record(name, i))
            expected.append(pb.Fragment(journal=name, begin=offset, end=offset + size))
            offset += size
        assert [f.result() for f in futures[name]] == expected
        content = b"preamble\n" + b"".join(record(name, i) for i in range(20_000))
        assert bytes(broker.journals[name].content) == content
    batches = [b for b in broker.append_requests if b[0].journal == "a/one"]
    assert len(batches) > 10  # Many records per Append, several Appends.
    assert max(sum(len(m.content) for m in b) for b in batches) < 16 * 1024 + 64


async def test_retriable_status_retries_the_batch(
    broker: FakeBroker, stub: JournalAsyncStub
) -> None:
    broker.add_journal("a/journal")
    broker.append_statuses = [pb.NOT_JOURNAL_PRIMARY_BROKER, pb.INSUFFICIENT_JOURNAL_BROKERS]
    async with AppendService(stub) as service:
        first = service.write("a/journal", b"one;")
        second = service.write("a/journal", b"two;")
    assert first.result() == pb.Fragment(journal="a/journal", begin=0, end=4)
    assert second.result() == pb.Fragment(journal="a/journal", begin=4, end=8)
    assert len(broker.append_requests) == 3
    assert broker.append_requests[2] == [
        pb.AppendRequest(journal="a/journal"),
        pb.AppendRequest(content=b"one;two;"),
        pb.AppendRequest(),
    ]
    assert broker.journals["a/journal"].content == b"one;two;"


async def test_non_retriable_status_fails_every_future_of_the_batch(
    broker: FakeBroker, stub: JournalAsyncStub
) -> None:
    broker.add_journal("a/journal")
    async with AppendService(stub) as service:
        missing = [service.write("missing/journal", b"%d;" % i) for i in range(100)]
        fine = service.write("a/journal", b"ok")
    for future in missing:
        with pytest.raises(StatusError) as caught:
            future.result()
        assert str(caught.value) == "JOURNAL_NOT_FOUND (journal 'missing/journal')"
    assert fine.result() == pb.Fragment(journal="a/journal", begin=0, end=2)


async def test_a_failed_batch_fails_the_batches_queued_behind_it(
    broker: FakeBroker, stub: JournalAsyncStub
) -> None:
    # Whoever awaits a journal's last pending batch (a transaction's commit
    # barrier) must learn that an earlier one failed.
    broker.add_journal("a/journal")
    broker.append_statuses = [pb.JOURNAL_NOT_FOUND]
    async with AppendService(stub, max_batch_bytes=4) as service:
        first = service.enqueue("a/journal", b"one;")
        second = service.enqueue("a/journal", b"two;")
        [last] = service.pending_except(None)
        assert last is second
        for batch in (first, second):
            with pytest.raises(StatusError):
                await batch
        later = service.write("a/journal", b"three;")
    assert later.result() == pb.Fragment(journal="a/journal", begin=0, end=6)


async def test_write_requires_a_running_service(stub: JournalAsyncStub) -> None:
    service = AppendService(stub)
    with pytest.raises(GazetteError) as caught:
        service.write("a/journal", b"x")
    assert str(caught.value) == "AppendService is not running: call start() first"
    service.start()
    await service.stop()
    with pytest.raises(GazetteError) as caught:
        service.write("a/journal", b"x")
    assert str(caught.value) == "AppendService is not running: call start() first"
