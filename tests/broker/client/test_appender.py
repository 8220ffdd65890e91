"""append(): the exact request stream, chunking, statuses and cancellation."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING

import pytest

from gazette_core.broker.client.appender import CHUNK_SIZE, append
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import AppendError
from tests.broker.client.fake_broker import FakeBroker, header, sha1_sum

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub

K = 1024


def pattern(n: int) -> bytes:
    return bytes(i % 251 for i in range(n))


async def test_append_sends_first_message_chunks_commit_intent_and_half_close(
    broker: FakeBroker, stub: JournalAsyncStub
) -> None:
    broker.add_journal("a/journal")
    data = pattern(300 * K)
    check = pb.LabelSelector(include=pb.LabelSet(labels=[pb.Label(name="owner", value="x")]))
    union = pb.LabelSet(labels=[pb.Label(name="owner", value="y")])
    resp = await append(
        stub, "a/journal", data, check_registers=check, union_registers=union,
        suspend=pb.AppendRequest.SUSPEND_NO_RESUME,
    )
    first = pb.AppendRequest(
        journal="a/journal", check_registers=check, union_registers=union,
        suspend=pb.AppendRequest.SUSPEND_NO_RESUME,
    )
    assert broker.append_requests == [[
        first,
        pb.AppendRequest(content=data[: 128 * K]),
        pb.AppendRequest(content=data[128 * K : 256 * K]),
        pb.AppendRequest(content=data[256 * K :]),
        pb.AppendRequest(),
    ]]
    # The fake commits only after the client half-closed following the empty message.
    assert resp == pb.AppendResponse(
        status=pb.OK,
        header=header(),
        commit=pb.Fragment(
            journal="a/journal", begin=0, end=300 * K, sum=sha1_sum(data),
            compression_codec=pb.NONE,
        ),
        registers=pb.LabelSet(),
        total_chunks=3,
    )
    assert bytes(broker.journals["a/journal"].content) == data


async def test_append_coalesces_small_pieces_of_an_iterable(
    broker: FakeBroker, stub: JournalAsyncStub
) -> None:
    broker.add_journal("a/journal", b"head")
    pieces = [pattern(100)] * 3000
    resp = await append(stub, "a/journal", pieces, offset=4)
    data = b"".join(pieces)
    sizes = [len(m.content) for m in broker.append_requests[0][1:]]
    assert sizes == [CHUNK_SIZE, CHUNK_SIZE, 300_000 - 2 * CHUNK_SIZE, 0]
    assert broker.append_requests[0][0] == pb.AppendRequest(journal="a/journal", offset=4)
    assert resp.commit == pb.Fragment(
        journal="a/journal", begin=4, end=300_004, sum=sha1_sum(data), compression_codec=pb.NONE
    )
    assert bytes(broker.journals["a/journal"].content) == b"head" + data


async def test_append_forwards_async_pieces_and_skips_empty_ones(
    broker: FakeBroker, stub: JournalAsyncStub
) -> None:
    broker.add_journal("a/journal")
    big = pattern(200 * K)

    async def source() -> AsyncIterator[bytes]:
        for piece in (b"ab", b"", big):
            yield piece

    await append(stub, "a/journal", source())
    assert broker.append_requests[0][1:] == [
        pb.AppendRequest(content=b"ab"),
        pb.AppendRequest(content=big[: 128 * K]),
        pb.AppendRequest(content=big[128 * K :]),
        pb.AppendRequest(),
    ]
    assert bytes(broker.journals["a/journal"].content) == b"ab" + big


async def test_append_of_nothing_sends_only_first_and_commit_messages(
    broker: FakeBroker, stub: JournalAsyncStub
) -> None:
    broker.add_journal("a/journal")
    resp = await append(stub, "a/journal", b"")
    assert broker.append_requests == [[pb.AppendRequest(journal="a/journal"), pb.AppendRequest()]]
    assert resp.commit == pb.Fragment(
        journal="a/journal", begin=0, end=0, sum=sha1_sum(b""), compression_codec=pb.NONE
    )


async def test_append_non_ok_status_raises_append_error_with_response(
    broker: FakeBroker, stub: JournalAsyncStub
) -> None:
    broker.add_journal("a/journal")
    broker.append_statuses = [pb.REGISTER_MISMATCH]
    with pytest.raises(AppendError) as caught:
        await append(stub, "a/journal", pattern(400 * K))
    assert str(caught.value) == "REGISTER_MISMATCH (journal 'a/journal')"
    assert caught.value.status == pb.REGISTER_MISMATCH
    assert caught.value.retriable is False
    assert caught.value.response == pb.AppendResponse(status=pb.REGISTER_MISMATCH, header=header())
    assert broker.journals["a/journal"].content == b""


async def test_append_wrong_offset(broker: FakeBroker, stub: JournalAsyncStub) -> None:
    broker.add_journal("a/journal", b"xyz")
    with pytest.raises(AppendError) as caught:
        await append(stub, "a/journal", b"more", offset=10)
    assert str(caught.value) == "WRONG_APPEND_OFFSET (journal 'a/journal')"


async def test_cancelling_append_aborts_the_stream_without_commit(
    broker: FakeBroker, stub: JournalAsyncStub
) -> None:
    broker.add_journal("a/journal")
    never = asyncio.Event()

    async def stalled() -> AsyncIterator[bytes]:
        yield b"partial"
        await never.wait()

    task = asyncio.create_task(append(stub, "a/journal", stalled()))
    while not broker.append_requests or len(broker.append_requests[0]) < 2:
        await asyncio.sleep(0.01)  # Until the fake received the content message.
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert broker.append_requests == [
        [pb.AppendRequest(journal="a/journal"), pb.AppendRequest(content=b"partial")]
    ]
    assert broker.journals["a/journal"].content == b""


async def test_a_failing_source_aborts_the_append_and_propagates(
    broker: FakeBroker, stub: JournalAsyncStub
) -> None:
    broker.add_journal("a/journal")

    def source() -> Iterator[bytes]:
        yield pattern(200 * K)
        raise ValueError("source broke")

    with pytest.raises(ValueError) as caught:
        await append(stub, "a/journal", source())
    assert str(caught.value) == "source broke"
    assert broker.journals["a/journal"].content == b""
