"""Publisher, read_uncommitted and read_committed end to end against a real broker."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from gazette_core.broker.client.append_service import AppendService
from gazette_core.broker.client.retry_reader import read_all
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.errors import GazetteError
from gazette_core.message.committed import read_committed
from gazette_core.message.framing import framing_for
from gazette_core.message.interfaces import CSVRecord, Envelope, Message
from gazette_core.message.publisher import Publisher
from gazette_core.message.reader import MessageDecodeError, read_uncommitted
from gazette_core.message.uuid import (
    GREGORIAN_OFFSET,
    TICK,
    Clock,
    Flags,
    get_clock,
    get_flags,
    get_producer_id,
)
from gazette_core.testing.broker import journal_spec
from tests.broker.support import append, create
from tests.message.support import Note

JOURNAL = "notes/one"
NDJSON = (("content-type", "application/x-ndjson"),)


def to_journal(msg: Message) -> tuple[str, object]:
    return JOURNAL, framing_for("application/x-ndjson")


def new_note(spec: pb.JournalSpec) -> Note:
    return Note()


async def committed_texts(stub: pb_grpc.JournalStub, **kw: object) -> list[str]:
    return [e.message.text async for e in read_committed(  # type: ignore[attr-defined]
        stub, JOURNAL, new_note, block=False, **kw)]  # type: ignore[arg-type]


@pytest.fixture
async def service(stub: pb_grpc.JournalStub) -> AsyncIterator[AppendService]:
    await create(stub, journal_spec(JOURNAL, labels=NDJSON))
    async with AppendService(stub) as svc:
        yield svc


async def test_committed_once_uncommitted_after_the_ack_rolled_back_never(
        stub: pb_grpc.JournalStub, service: AppendService) -> None:
    pub, committer = Publisher(service), Publisher(service)
    pub.publish_uncommitted(to_journal, Note(text="u1"))  # type: ignore[arg-type]
    # A producer either commits each message or uses ACKs: mixing them is an error.
    committer.publish_committed(to_journal, Note(text="c1"))  # type: ignore[arg-type]
    await pub.publish_uncommitted(to_journal, Note(text="u2"))  # type: ignore[arg-type]
    assert await committed_texts(stub) == ["c1"]

    [(journal, ack)] = pub.build_ack_intents()
    assert journal == JOURNAL and pub.build_ack_intents() == []
    await service.enqueue(JOURNAL, ack)
    assert await committed_texts(stub) == ["c1", "u1", "u2"]

    # A transaction that never committed: a recovered primary re-sends the
    # checkpoint's ACK, which rolls back what this producer wrote after it.
    await pub.publish_uncommitted(to_journal, Note(text="rolled back"))  # type: ignore[arg-type]
    await service.enqueue(JOURNAL, ack)
    later = Publisher(service)  # The next primary: a new producer ID.
    later.publish_uncommitted(to_journal, Note(text="u3"))  # type: ignore[arg-type]
    for _, ack3 in later.build_ack_intents():
        await service.enqueue(JOURNAL, ack3)
    assert await committed_texts(stub) == ["c1", "u1", "u2", "u3"]


async def test_a_blocking_reader_gets_pending_messages_only_after_the_ack(
        stub: pb_grpc.JournalStub, service: AppendService) -> None:
    pub, committer = Publisher(service), Publisher(service)
    got: asyncio.Queue[str] = asyncio.Queue()

    async def follow() -> None:
        async for env in read_committed(stub, JOURNAL, new_note):  # type: ignore[arg-type]
            await got.put(env.message.text)  # type: ignore[attr-defined]

    reader = asyncio.create_task(follow())
    try:
        pub.publish_uncommitted(to_journal, Note(text="pending"))  # type: ignore[arg-type]
        committer.publish_committed(to_journal, Note(text="marker"))  # type: ignore[arg-type]
        async with asyncio.timeout(10):
            assert await got.get() == "marker"  # Read after "pending", yet delivered first.
            assert got.empty()
            for journal, ack in pub.build_ack_intents():
                service.enqueue(journal, ack)
            assert await got.get() == "pending"
    finally:
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader


async def test_acks_are_one_per_journal_in_first_publish_order_with_later_clocks(
        service: AppendService) -> None:
    pub = Publisher(service)
    notes = {name: Note(text=name) for name in ("b", "a", "b2")}
    pub.publish_uncommitted(lambda m: ("j/b", framing_for("application/x-ndjson")), notes["b"])
    pub.publish_uncommitted(lambda m: ("j/a", framing_for("application/x-ndjson")), notes["a"])
    pub.publish_uncommitted(lambda m: ("j/b", framing_for("application/x-ndjson")), notes["b2"])
    intents = pub.build_ack_intents()
    assert [j for j, _ in intents] == ["j/b", "j/a"]
    framing = framing_for("application/x-ndjson")
    acks = [framing.unmarshal(data, Note()).get_uuid() for _, data in intents]
    clocks = [get_clock(n.get_uuid()) for n in notes.values()]
    assert clocks == sorted(clocks)
    assert [get_flags(u) for u in acks] == [Flags.ACK_TXN] * 2
    assert clocks[-1] < get_clock(acks[0]) < get_clock(acks[1])
    assert {get_flags(n.get_uuid()) for n in notes.values()} == {Flags.CONTINUE_TXN}


async def test_read_committed_replays_spans_that_left_the_ring(
        stub: pb_grpc.JournalStub, service: AppendService) -> None:
    pub = Publisher(service)
    other = Publisher(service)
    for i in range(6):
        pub.publish_uncommitted(to_journal, Note(text=f"u{i}"))  # type: ignore[arg-type]
        other.publish_uncommitted(to_journal, Note(text=f"o{i}"))  # type: ignore[arg-type]
    for journal, ack in pub.build_ack_intents():
        await service.enqueue(journal, ack)
    assert await committed_texts(stub, ring_size=3) == [f"u{i}" for i in range(6)]


async def test_envelopes_have_exact_offsets_and_end_bounds_a_read(
        stub: pb_grpc.JournalStub, service: AppendService) -> None:
    pub = Publisher(service)
    for i in range(5):
        await pub.publish_committed(to_journal, Note(text="x" * i))  # type: ignore[arg-type]
    content = await read_all(stub, JOURNAL)
    envs = [e async for e in read_uncommitted(stub, JOURNAL, 0, new_note, block=False)]
    assert [content[e.begin:e.end] for e in envs] == content.splitlines(keepends=True)
    assert envs[-1].end == len(content)
    bounded = [e async for e in read_uncommitted(stub, JOURNAL, envs[1].begin, new_note,
                                                 end=envs[3].begin)]
    assert [(e.begin, e.end) for e in bounded] == [(e.begin, e.end) for e in envs[1:3]]
    assert [e.message.text for e in bounded] == ["x", "xx"]  # type: ignore[attr-defined]


async def test_records_decode_by_the_journals_content_type(
        stub: pb_grpc.JournalStub) -> None:
    await create(stub, journal_spec("rows/one", labels=(("content-type", "text/csv"),)),
                 journal_spec("bare/one"))
    u = "2f7c0e3a-2d0f-11ee-8001-010203040506"
    await append(stub, "rows/one", f'{u},a,"b\nc"\n'.encode(), f"{u},d,e\n".encode())
    seen: list[pb.JournalSpec] = []

    def new_row(spec: pb.JournalSpec) -> CSVRecord:
        seen.append(spec)
        return CSVRecord()

    envs: list[Envelope] = [
        e async for e in read_uncommitted(stub, "rows/one", 0, new_row, block=False)]
    assert [list(e.message) for e in envs] == [[u, "a", "b\nc"], [u, "d", "e"]]  # type: ignore
    assert {s.name for s in seen} == {"rows/one"}
    with pytest.raises(ValueError, match="'bare/one' has no 'content-type' label"):
        [e async for e in read_uncommitted(stub, "bare/one", 0, new_row, block=False)]
    with pytest.raises(GazetteError, match="'none/such' does not exist"):
        [e async for e in read_uncommitted(stub, "none/such", 0, new_row, block=False)]


async def test_bad_and_partial_records_raise_with_their_offset(
        stub: pb_grpc.JournalStub) -> None:
    await create(stub, journal_spec(JOURNAL, labels=NDJSON))
    await append(stub, JOURNAL, b'{"text":"ok"}\n', b"not json\n", b'{"text":"cut')
    with pytest.raises(MessageDecodeError, match=f"{JOURNAL} offset 14: cannot decode"):
        [e async for e in read_uncommitted(stub, JOURNAL, 0, new_note, block=False)]
    with pytest.raises(MessageDecodeError, match="offset 24: unexpected end of read"):
        [e async for e in read_uncommitted(stub, JOURNAL, 24, new_note, block=False)]


@dataclass
class Checked(Note):
    def validate(self) -> None:
        if not self.text:
            raise ValueError("text is required")


async def test_validate_runs_before_anything_is_stamped_or_written(
        stub: pb_grpc.JournalStub, service: AppendService) -> None:
    pub = Publisher(service)
    before = pub.clock.value
    with pytest.raises(ValueError, match="text is required"):
        pub.publish_committed(to_journal, Checked())  # type: ignore[arg-type]
    assert pub.clock.value == before and service.pending_except(None) == []
    await pub.publish_committed(to_journal, Checked(text="ok"))  # type: ignore[arg-type]
    assert await committed_texts(stub) == ["ok"]


async def test_own_clock_follows_wall_time_and_a_given_clock_only_ticks(
        service: AppendService) -> None:
    own = Publisher(service)
    start = time.time_ns()
    note = Note(text="now")
    own.publish_committed(to_journal, note)  # type: ignore[arg-type]
    stamped = get_clock(note.get_uuid())
    assert stamped >= ((start // 100) + GREGORIAN_OFFSET) << 4
    assert get_producer_id(note.get_uuid()) == own.producer_id

    shard_clock = Clock(1000 << 4)
    given = Publisher(service, clock=shard_clock, producer_id=bytes([1, 2, 3, 4, 5, 6]))
    given.publish_committed(to_journal, note)  # type: ignore[arg-type]
    assert get_clock(note.get_uuid()) == (1000 << 4) + TICK == shard_clock.value
