"""Recorder against a real broker: frames, sequencing, the checksum chain, hints, fencing."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import pytest

from gazette_core.broker.client.retry_reader import read_all
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.service import Broker
from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from gazette_core.consumer.recoverylog.author import author_label, fence, new_author
from gazette_core.consumer.recoverylog.checksum import chain
from gazette_core.consumer.recoverylog.framing import HEADER_LEN, MAGIC, body_length
from gazette_core.consumer.recoverylog.fsm import FSM
from gazette_core.consumer.recoverylog.hints import decode_hints, encode_hints
from gazette_core.consumer.recoverylog.recorder import (
    Recorder,
    RecorderError,
    RecorderFencedError,
)
from gazette_core.testing.broker import journal_spec
from tests.broker.conftest import broker, stub  # noqa: F401  (fixtures)
from tests.broker.support import append, create

LOG = "recovery/logs/one"


@dataclass
class Frame:
    offset: int
    op: rpb.RecordedOp
    body: bytes
    payload: bytes


def frames(content: bytes) -> list[Frame]:
    """Every frame of a raw log, with its write payload; the log must hold nothing else."""
    out, at = [], 0
    while at < len(content):
        assert content[at:at + 4] == MAGIC
        size = body_length(content[at:at + HEADER_LEN])
        body = content[at + HEADER_LEN:at + HEADER_LEN + size]
        op = rpb.RecordedOp.FromString(body)
        end = at + HEADER_LEN + size
        payload = content[end:end + op.write.length] if op.HasField("write") else b""
        out.append(Frame(at, op, body, payload))
        at = end + len(payload)
    return out


def replay(log: str, found: list[Frame]) -> FSM:
    """A fresh FSM fed every frame, as a player would."""
    fsm = FSM()
    for f in found:
        f.op.first_offset = f.offset
        f.op.last_offset = f.offset + HEADER_LEN + len(f.body) + len(f.payload)
        f.op.log = log
        fsm.apply(f.op, f.body)
    return fsm


async def registers(client: pb_grpc.JournalStub, journal: str) -> pb.LabelSet:
    """The journal's registers, as an empty append reports them."""
    resp = await append(client, journal)
    assert resp.status == pb.OK
    return resp.registers


async def record_sequence(rec: Recorder, root: Path) -> dict[str, bytes]:
    """A small run of every record call; returns the payloads written per path."""
    a = rec.open_file(str(root / "a"), create=True, truncate=False)
    a.write_at(b"hello ", 0)
    a.write_at(b"world", 6)
    rec.link(str(root / "a"), str(root / "b"))
    rec.remove(str(root / "a"))
    (root / "sub").mkdir()
    c = rec.open_file(str(root / "sub/c"), create=True, truncate=False)
    # A store's worker thread records too; its calls stay in order with ours.
    await asyncio.to_thread(lambda: [c.write_at(bytes([i]) * 3, 3 * i) for i in range(50)])
    rec.rename(str(root / "sub/c"), str(root / "b"))  # replaces the file at /b
    b = rec.open_file(str(root / "b"), create=False, truncate=True)
    b.write_at(b"fresh", 0)
    (root / "IDENTITY").write_text("db-identity\n")
    tmp = rec.open_file(str(root / "IDENTITY.tmp"), create=True, truncate=False)
    tmp.write_at(b"db-identity\n", 0)
    rec.rename(str(root / "IDENTITY.tmp"), str(root / "IDENTITY"))
    return {"/b": b"fresh"}


async def test_frames_sequence_checksums_and_payloads_replay_to_recorder_state(
        broker: Broker, stub: pb_grpc.JournalStub, tmp_path: Path) -> None:  # noqa: F811
    await create(stub, journal_spec(LOG))
    author = new_author()
    rec = await Recorder.start(LOG, FSM(), author, str(tmp_path), stub)
    assert (await registers(stub, LOG)) == fence(author)
    await record_sequence(rec, tmp_path)
    await rec.barrier()
    await rec.stop()

    found = frames(await read_all(stub, LOG))
    ops = [f.op for f in found]
    assert [op.seq_no for op in ops] == list(range(1, len(ops) + 1))
    assert {op.author for op in ops} == {author}
    expected = 0
    for f in found:
        assert f.op.checksum == expected
        expected = chain(expected, f.body)
    assert not any(f.op.HasField(k) for f in found[:1]
                   for k in ("create", "link", "unlink", "write", "property"))  # fork no-op
    assert not any(op.first_offset or op.last_offset or op.log for op in ops)  # no meta fields
    writes = [f for f in found if f.op.HasField("write")]
    assert [f.payload for f in writes[:2]] == [b"hello ", b"world"]
    assert [f.payload for f in writes[2:52]] == [bytes([i]) * 3 for i in range(50)]
    renamed = [op for op in ops if op.HasField("property")]
    assert [(p.property.path, p.property.content) for p in renamed] == [
        ("/IDENTITY", "db-identity\n")]

    played = replay(LOG, found)
    assert played.links == rec.fsm.links
    assert played.live_nodes == rec.fsm.live_nodes
    assert played.properties == rec.fsm.properties == {"/IDENTITY": "db-identity\n"}
    assert (played.next_seq_no, played.next_checksum) == (rec.fsm.next_seq_no,
                                                           rec.fsm.next_checksum)
    assert set(rec.fsm.links) == {"/b"}


async def test_open_truncate_records_unlink_then_create(
        broker: Broker, stub: pb_grpc.JournalStub, tmp_path: Path) -> None:  # noqa: F811
    await create(stub, journal_spec(LOG))
    rec = await Recorder.start(LOG, FSM(), new_author(), str(tmp_path), stub)
    first = rec.open_file(str(tmp_path / "j"), create=True, truncate=False)
    again = rec.open_file(str(tmp_path / "j"), create=False, truncate=False)
    assert again.fnode == first.fnode
    fresh = rec.open_file(str(tmp_path / "j"), create=False, truncate=True)
    with pytest.raises(RecorderError, match="without create"):
        rec.open_file(str(tmp_path / "missing"), create=False, truncate=False)
    with pytest.raises(RecorderError, match="not inside"):
        rec.open_file(str(tmp_path.parent / "elsewhere"), create=True, truncate=False)
    await rec.barrier()
    await rec.stop()
    ops = [f.op for f in frames(await read_all(stub, LOG))][1:]
    assert ops == [
        rpb.RecordedOp(seq_no=2, checksum=ops[0].checksum, author=rec.author,
                       create=rpb.RecordedOp.Create(path="/j")),
        rpb.RecordedOp(seq_no=3, checksum=ops[1].checksum, author=rec.author,
                       unlink=rpb.RecordedOp.Link(fnode=2, path="/j")),
        rpb.RecordedOp(seq_no=4, checksum=ops[2].checksum, author=rec.author,
                       create=rpb.RecordedOp.Create(path="/j")),
    ]
    assert fresh.fnode == 4
    assert rec.fsm.links == {"/j": 4}


async def test_build_hints_refer_only_to_committed_ops_and_round_trip(
        broker: Broker, stub: pb_grpc.JournalStub, tmp_path: Path) -> None:  # noqa: F811
    await create(stub, journal_spec(LOG))
    rec = await Recorder.start(LOG, FSM(), new_author(), str(tmp_path), stub)
    await record_sequence(rec, tmp_path)
    hints = await rec.build_hints()  # no barrier of our own before reading the log
    found = frames(await read_all(stub, LOG))
    assert hints.log == LOG
    assert decode_hints(encode_hints(hints)) == hints
    assert [n.fnode for n in hints.live_nodes] == sorted(rec.fsm.live_nodes)
    by_seq = {f.op.seq_no: f for f in found}
    for node in hints.live_nodes:
        for seg in node.segments:
            assert seg.log == "" and seg.last_offset == 0 and seg.author == rec.author
            assert seg.last_seq_no in by_seq  # committed before build_hints returned
            first = by_seq[seg.first_seq_no]
            assert seg.first_offset <= first.offset  # a lower bound, as recorders give
            assert seg.first_checksum == first.op.checksum
    assert list(hints.properties) == [rpb.Property(path="/IDENTITY", content="db-identity\n")]
    # Hints load into an FSM which expects exactly the hinted ops.
    assert FSM(hints).has_remaining_hints()
    await rec.stop()


async def test_same_log_continues_without_a_fork_noop(
        broker: Broker, stub: pb_grpc.JournalStub, tmp_path: Path) -> None:  # noqa: F811
    await create(stub, journal_spec(LOG))
    author = new_author()
    first = await Recorder.start(LOG, FSM(), author, str(tmp_path), stub)
    first.open_file(str(tmp_path / "x"), create=True, truncate=False)
    await first.barrier()
    await first.stop()
    before = len(await read_all(stub, LOG))
    assert first.fsm.last_log == LOG
    second = await Recorder.start(LOG, first.fsm, author, str(tmp_path), stub)
    second.remove(str(tmp_path / "x"))
    await second.barrier()
    await second.stop()
    added = frames((await read_all(stub, LOG))[before:])
    assert [(f.op.seq_no, f.op.HasField("unlink")) for f in added] == [(3, True)]


async def test_barrier_holds_later_records_until_its_dependency_resolves(
        broker: Broker, stub: pb_grpc.JournalStub, tmp_path: Path) -> None:  # noqa: F811
    await create(stub, journal_spec(LOG))
    rec = await Recorder.start(LOG, FSM(), new_author(), str(tmp_path), stub)
    f = rec.open_file(str(tmp_path / "f"), create=True, truncate=False)
    dependency: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    gate = rec.barrier(dependency)
    f.write_at(b"after the gate", 0)
    closing = rec.barrier()
    await asyncio.sleep(0.3)
    assert not gate.done() and not closing.done()
    assert b"after the gate" not in await read_all(stub, LOG)
    dependency.set_result(None)
    await closing
    assert gate.done()
    assert (await read_all(stub, LOG)).endswith(b"after the gate")
    await rec.stop()


async def test_failed_dependency_fails_the_barrier_and_later_records(
        broker: Broker, stub: pb_grpc.JournalStub, tmp_path: Path) -> None:  # noqa: F811
    await create(stub, journal_spec(LOG))
    rec = await Recorder.start(LOG, FSM(), new_author(), str(tmp_path), stub)
    f = rec.open_file(str(tmp_path / "f"), create=True, truncate=False)

    async def upstream() -> None:
        raise RuntimeError("upstream append failed")

    gate = rec.barrier(upstream())
    f.write_at(b"never committed", 0)
    closing = rec.barrier()
    with pytest.raises(RuntimeError, match="upstream"):
        await gate
    with pytest.raises(RuntimeError, match="upstream"):
        await closing
    with pytest.raises(RuntimeError, match="upstream"):
        f.write_at(b"more", 20)
    await rec.stop()
    assert b"never committed" not in await read_all(stub, LOG)


async def test_fenced_recorder_appends_fail_and_barrier_raises(
        broker: Broker, stub: pb_grpc.JournalStub, tmp_path: Path) -> None:  # noqa: F811
    await create(stub, journal_spec(LOG))
    rec = await Recorder.start(LOG, FSM(), new_author(), str(tmp_path), stub)
    f = rec.open_file(str(tmp_path / "f"), create=True, truncate=False)
    f.write_at(b"before hand-off", 0)
    await rec.barrier()

    other = new_author()
    handoff = rpb.RecordedOp(seq_no=rec.fsm.next_seq_no, checksum=rec.fsm.next_checksum,
                             author=other)
    body = handoff.SerializeToString()
    frame = MAGIC + len(body).to_bytes(4, "little") + body
    resp = await append(stub, LOG, frame, union_registers=fence(other))
    assert resp.status == pb.OK
    assert resp.registers == fence(other)
    assert author_label(other) in str(resp.registers)

    f.write_at(b"zombie write", 100)
    with pytest.raises(RecorderFencedError, match="fenced"):
        await rec.barrier()
    with pytest.raises(RecorderFencedError):
        f.write_at(b"another", 200)
    with pytest.raises(RecorderFencedError):
        await rec.build_hints()
    await rec.stop()
    content = await read_all(stub, LOG)
    assert b"before hand-off" in content and b"zombie write" not in content
    assert frames(content)[-1].op.author == other


async def test_write_head_moves_forward_as_appends_commit(
        broker: Broker, stub: pb_grpc.JournalStub, tmp_path: Path) -> None:  # noqa: F811
    await create(stub, journal_spec(LOG))
    await append(stub, LOG, b"unrelated content already in the log\n")
    rec = await Recorder.start(LOG, FSM(), new_author(), str(tmp_path), stub)
    one = rec.open_file(str(tmp_path / "one"), create=True, truncate=False)
    one.write_at(b"x" * 1000, 0)
    two = rec.open_file(str(tmp_path / "two"), create=True, truncate=False)
    await rec.barrier()
    late = rec.open_file(str(tmp_path / "late"), create=True, truncate=False)
    hints = await rec.build_hints()
    await rec.stop()
    content = await read_all(stub, LOG)
    start = content.index(MAGIC)
    at = {f.op.seq_no: start + f.offset for f in frames(content[start:])}
    first = {n.fnode: n.segments[0].first_offset for n in hints.live_nodes}
    # The fork no-op's commit is the head for everything recorded before the
    # next commit: exact for the first op, a lower bound for the others.
    assert first[one.fnode] == at[one.fnode] == at[1] + HEADER_LEN + len(
        frames(content[start:])[0].body)
    assert first[two.fnode] == at[one.fnode] < at[two.fnode]
    # After a committed barrier the head has moved on to the exact offset.
    assert first[late.fnode] == at[late.fnode]
    assert rec.write_head == len(content)


async def test_threads_recording_concurrently_stay_sequenced(
        broker: Broker, stub: pb_grpc.JournalStub, tmp_path: Path) -> None:  # noqa: F811
    await create(stub, journal_spec(LOG))
    rec = await Recorder.start(LOG, FSM(), new_author(), str(tmp_path), stub)

    def writer(name: str) -> None:
        f = rec.open_file(str(tmp_path / name), create=True, truncate=False)
        for i in range(300):
            f.write_at(f"{name}{i:04d}".encode(), 8 * i)

    await asyncio.gather(*(asyncio.to_thread(writer, n) for n in ("aaaa", "bbbb", "cccc")))
    await rec.barrier()
    await rec.stop()
    found = frames(await read_all(stub, LOG))
    assert len(found) == 1 + 3 * 301
    played = replay(LOG, found)  # raises on any mis-sequenced op or broken chain
    assert played.live_nodes == rec.fsm.live_nodes
    for name in ("aaaa", "bbbb", "cccc"):
        fnode = rec.fsm.links["/" + name]
        payloads = [f.payload for f in found if f.op.write.fnode == fnode]
        assert payloads == [f"{name}{i:04d}".encode() for i in range(300)]


async def test_stopped_recorder_refuses_records(
        broker: Broker, stub: pb_grpc.JournalStub, tmp_path: Path) -> None:  # noqa: F811
    await create(stub, journal_spec(LOG))
    rec = await Recorder.start(LOG, FSM(), new_author(), str(tmp_path), stub)
    f = rec.open_file(str(tmp_path / "f"), create=True, truncate=False)
    f.write_at(b"settled by stop", 0)
    await rec.stop()
    assert (await read_all(stub, LOG)).endswith(b"settled by stop")
    with pytest.raises(RecorderError, match="stopped"):
        f.write_at(b"late", 20)
    with pytest.raises(RecorderError, match="stopped"):
        await rec.barrier()


async def test_start_refuses_an_fsm_with_unread_hints_or_a_relative_directory(
        broker: Broker, stub: pb_grpc.JournalStub, tmp_path: Path) -> None:  # noqa: F811
    await create(stub, journal_spec(LOG))
    rec = await Recorder.start(LOG, FSM(), new_author(), str(tmp_path), stub)
    rec.open_file(str(tmp_path / "f"), create=True, truncate=False)
    hints = await rec.build_hints()
    await rec.stop()
    with pytest.raises(RecorderError, match="remaining unread hints"):
        await Recorder.start(LOG, FSM(hints), new_author(), str(tmp_path), stub)
    with pytest.raises(RecorderError, match="absolute and clean"):
        await Recorder.start(LOG, FSM(), new_author(), "relative/dir", stub)
