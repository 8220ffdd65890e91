"""read_uncommitted across reconnects and offset jumps (a fake broker cuts and prunes reads)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import grpc
import pytest
import pytest_asyncio

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.message.reader import read_uncommitted
from gazette_core.testing.broker import journal_spec
from tests.broker.client.fake_broker import FakeBroker
from tests.message.support import Note

JOURNAL = "fake/notes"
RECORDS = [b'{"text":"first"}\n', b'{"text":"second"}\n', b'{"text":"third"}\n']


@pytest_asyncio.fixture(loop_scope="session")
async def fake() -> AsyncIterator[FakeBroker]:
    broker = FakeBroker()
    await broker.start()
    spec = journal_spec(JOURNAL, labels=(("content-type", "application/x-ndjson"),))
    broker.list_journals = [pb.ListResponse.Journal(spec=spec)]
    yield broker
    await broker.stop()


@pytest_asyncio.fixture(loop_scope="session")
async def fake_stub(fake: FakeBroker) -> AsyncIterator[pb_grpc.JournalStub]:
    async with grpc.aio.insecure_channel(fake.address) as channel:
        yield pb_grpc.JournalStub(channel)


async def read(stub: pb_grpc.JournalStub) -> list[tuple[int, int, str]]:
    return [(e.begin, e.end, e.message.text)  # type: ignore[attr-defined]
            async for e in read_uncommitted(stub, JOURNAL, 0, lambda s: Note(), block=False)]


async def test_a_read_cut_inside_a_record_resumes_without_loss(
        fake: FakeBroker, fake_stub: pb_grpc.JournalStub) -> None:
    fake.add_journal(JOURNAL, b"".join(RECORDS))
    fake.read_aborts, fake.read_abort_after = 1, 20  # Inside the second record.
    assert await read(fake_stub) == [(0, 17, "first"), (17, 35, "second"), (35, 52, "third")]
    assert len(fake.read_requests) == 2 and fake.read_requests[1].offset == 20


async def test_a_jump_over_pruned_content_resumes_at_the_next_record(
        fake: FakeBroker, fake_stub: pb_grpc.JournalStub,
        caplog: pytest.LogCaptureFixture) -> None:
    fake.add_journal(JOURNAL, b"".join(RECORDS), begin=17)  # "first" was pruned.
    with caplog.at_level(logging.WARNING):
        assert await read(fake_stub) == [(17, 35, "second"), (35, 52, "third")]
    assert f"reading {JOURNAL} jumped from offset 0 to 17" in caplog.text
