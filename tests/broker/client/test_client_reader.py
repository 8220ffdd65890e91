"""Reader: content iteration, metadata, offset jumps and statuses of one Read RPC."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from gazette_core.broker.client.reader import Reader
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import OffsetNotYetAvailable, StatusError
from tests.broker.client.fake_broker import FakeBroker, header

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub


def pattern(n: int) -> bytes:
    return bytes(i % 253 for i in range(n))


async def drain(reader: Reader) -> list[bytes]:
    return [chunk async for chunk in reader]


async def test_reader_yields_content_then_offset_not_yet_available(
    broker: FakeBroker, stub: JournalAsyncStub
) -> None:
    data = pattern(100_000)
    broker.add_journal("a/journal", data, fragment_size=60_000)
    reader = Reader(stub, pb.ReadRequest(journal="a/journal", offset=0))
    chunks: list[bytes] = []
    with pytest.raises(OffsetNotYetAvailable) as caught:
        async for chunk in reader:
            chunks.append(chunk)
    assert [len(c) for c in chunks] == [32736, 27264, 32736, 7264]
    assert b"".join(chunks) == data
    assert str(caught.value) == (
        "OFFSET_NOT_YET_AVAILABLE (journal 'a/journal'): offset 100000, write head 100000"
    )
    assert (caught.value.offset, caught.value.write_head) == (100_000, 100_000)
    assert reader.offset == 100_000
    assert reader.skipped == 0
    assert reader.header == header()
    assert reader.response == pb.ReadResponse(
        status=pb.OFFSET_NOT_YET_AVAILABLE, offset=100_000, write_head=100_000
    )


async def test_reader_keeps_the_latest_fragment_metadata(
    broker: FakeBroker, stub: JournalAsyncStub
) -> None:
    broker.add_journal("a/journal", pattern(100_000), fragment_size=60_000)
    reader = Reader(stub, pb.ReadRequest(journal="a/journal", offset=70_000, end_offset=90_000))
    assert b"".join(await drain(reader)) == pattern(100_000)[70_000:90_000]
    assert reader.offset == 90_000
    assert reader.response == pb.ReadResponse(
        status=pb.OK,
        header=header(),
        offset=70_000,
        write_head=100_000,
        fragment=pb.Fragment(
            journal="a/journal", begin=60_000, end=100_000, compression_codec=pb.NONE
        ),
    )


async def test_reader_follows_an_offset_jump_and_counts_skipped_bytes(
    broker: FakeBroker, stub: JournalAsyncStub
) -> None:
    data = pattern(3000)
    broker.add_journal("a/journal", data, begin=1000)
    reader = Reader(stub, pb.ReadRequest(journal="a/journal", offset=200, end_offset=3000))
    assert b"".join(await drain(reader)) == data[1000:]
    assert reader.skipped == 800
    assert reader.offset == 3000
    assert reader.response.offset == 1000


async def test_reader_at_minus_one_starts_at_the_write_head(
    broker: FakeBroker, stub: JournalAsyncStub
) -> None:
    broker.add_journal("a/journal", pattern(500))
    reader = Reader(stub, pb.ReadRequest(journal="a/journal", offset=-1))
    assert reader.offset == -1
    with pytest.raises(OffsetNotYetAvailable):
        await drain(reader)
    assert reader.offset == 500
    assert reader.skipped == 0


async def test_metadata_only_read_yields_nothing(
    broker: FakeBroker, stub: JournalAsyncStub
) -> None:
    broker.add_journal("a/journal", pattern(500))
    reader = Reader(stub, pb.ReadRequest(journal="a/journal", offset=10, metadata_only=True))
    assert await drain(reader) == []
    assert reader.response == pb.ReadResponse(
        status=pb.OK,
        header=header(),
        offset=10,
        write_head=500,
        fragment=pb.Fragment(journal="a/journal", begin=0, end=500, compression_codec=pb.NONE),
    )


async def test_reader_raises_status_error(broker: FakeBroker, stub: JournalAsyncStub) -> None:
    reader = Reader(stub, pb.ReadRequest(journal="missing/journal"))
    with pytest.raises(StatusError) as caught:
        await drain(reader)
    assert str(caught.value) == "JOURNAL_NOT_FOUND (journal 'missing/journal')"
    assert caught.value.retriable is False
    assert reader.response == pb.ReadResponse(status=pb.JOURNAL_NOT_FOUND, header=header())
