"""Player: playback of recovery logs written by hand into a real broker's journal."""

from __future__ import annotations

import asyncio
import hashlib
import io
import logging
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aetcd
import pytest
import pytest_asyncio
from rich.console import Console

from gazette_core.broker.client.appender import append
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.service import Broker
from gazette_core.consumer.recoverylog import player as player_mod
from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from gazette_core.consumer.recoverylog.author import fence, fence_selector
from gazette_core.consumer.recoverylog.playback_errors import (
    DataLossError,
    OffsetJumpError,
    PlaybackError,
    UnreadHintsError,
)
from gazette_core.consumer.recoverylog.player import Player, Resolved
from gazette_core.consumer.recoverylog.progress import Progress
from gazette_core.consumer.recoverylog.progress_bar import play_with_progress
from gazette_core.errors import AppendError
from gazette_core.testing.broker import broker_config, journal_spec, journal_stub, running_broker
from gazette_core.testing.etcd import EtcdServer
from tests.broker.support import create
from tests.consumer.recoverylog.oplog import OpLog

LOG = "recovery/logs/shard-000"
A, B = 0x1234ABCD, 0x0BADCAFE


@pytest_asyncio.fixture(loop_scope="session")
async def stub(etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path
               ) -> AsyncIterator[pb_grpc.JournalStub]:
    """A Journal stub to one in-process broker that serves LOG (refresh rarely)."""
    (tmp_path / "broker").mkdir()
    config = broker_config(etcd_server.endpoint, str(tmp_path / "broker"))
    async with running_broker(config) as broker_, journal_stub(broker_.endpoint) as s:
        assert isinstance(broker_, Broker)
        await create(s, journal_spec(LOG, length=64 << 20))
        yield s


async def put(stub: pb_grpc.JournalStub, *pieces: bytes, **kw: object) -> pb.Fragment:
    resp = await append(stub, LOG, b"".join(pieces), **kw)  # type: ignore[arg-type]
    return resp.commit


async def play(stub: pb_grpc.JournalStub, directory: Path,
               hints: rpb.FSMHints | None = None) -> tuple[Player, Resolved]:
    player = Player()
    player.finish_at_write_head()
    resolved = await player.play(hints or rpb.FSMHints(log=LOG), str(directory), stub)
    return player, resolved


def tree(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes()
            for p in sorted(directory.rglob("*")) if p.is_file()}


async def test_plays_every_op_kind_from_offset_zero(stub: pb_grpc.JournalStub,
                                                     tmp_path: Path) -> None:
    w = OpLog(A)
    a, create_a = w.create("/a")
    first = await put(stub, create_a, w.write(a, 0, b"hello, "), w.write(a, 7, b"world"))
    c, create_c = w.create("/sub/dir/c.txt")
    ops = [create_c, w.write(c, 0, b"C" * 1000), w.link(a, "/a-again")]
    dead, create_dead = w.create("/dead")
    ops += [create_dead, w.write(dead, 0, b"gone"), w.unlink(dead, "/dead"),
            w.property("/IDENTITY", "id\n"), w.noop()]
    await put(stub, *ops)
    last = await put(stub, w.write(c, 500, b"x" * 10))
    out = tmp_path / "out"
    recovered = player_mod.RECOVERED_BYTES.value
    player, resolved = await play(stub, out)
    # Every write's payload reached the disk (the unlinked file's too), as Go counts it.
    assert player_mod.RECOVERED_BYTES.value - recovered == 7 + 5 + 1000 + 4 + 10
    assert tree(out) == {
        "a": b"hello, world", "a-again": b"hello, world", "IDENTITY": b"id\n",
        "sub/dir/c.txt": b"C" * 500 + b"x" * 10 + b"C" * 490,
    }
    assert os.stat(out / "a").st_ino == os.stat(out / "a-again").st_ino
    assert resolved.log == LOG and resolved.directory == str(out)
    assert (resolved.fsm.next_seq_no, resolved.fsm.next_checksum) == (w.seq_no, w.checksum)
    # Meta fields are exact: segments start where the create frame starts and end
    # after the last write payload.
    hints = resolved.fsm.build_hints(LOG)
    segs = {n.fnode: list(n.segments) for n in hints.live_nodes}
    assert segs[a][0].first_offset == first.begin
    assert segs[c][-1].last_offset == last.end
    assert player.progress.at_head and player.progress.offset == last.end
    assert player.progress.bytes_read == last.end and player.progress.eta() == 0.0


async def test_skips_ops_that_do_not_apply_and_their_payloads(stub: pb_grpc.JournalStub,
                                                              tmp_path: Path) -> None:
    w = OpLog(A)
    f, create_f = w.create("/f")
    await put(stub, create_f, w.write(f, 0, b"mine"))
    # A writer racing on a stale branch: mis-sequenced ops, one with a payload that
    # must be read past, not taken for the (well-sequenced) frame it looks like.
    trap = OpLog(A, w.seq_no, w.checksum).create("/trap")[1]
    zombie = OpLog(B, seq_no=2, checksum=0)
    await put(stub, zombie.write(f, 0, trap), zombie.create("/z")[1])
    await put(stub, w.write(f, 4, b"!"))
    out = tmp_path / "out"
    _, resolved = await play(stub, out)
    assert tree(out) == {"f": b"mine!"}
    assert resolved.fsm.next_seq_no == w.seq_no


async def test_resyncs_on_the_magic_word_after_garbage(
        stub: pb_grpc.JournalStub, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    w = OpLog(A)
    f, create_f = w.create("/f")
    await put(stub, b"leading junk", create_f)
    await put(stub, b"\x00" * 100, w.write(f, 0, b"abc"), b"\x66\x33 more junk")
    await put(stub, w.write(f, 3, b"def"))
    out = tmp_path / "out"
    with caplog.at_level(logging.WARNING, logger=player_mod.__name__):
        await play(stub, out)
    assert tree(out) == {"f": b"abcdef"}
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "skipping to the next" in warnings[0].getMessage()


async def test_truncated_frame_at_the_head_fails_and_removes_the_directory(
        stub: pb_grpc.JournalStub, tmp_path: Path) -> None:
    w = OpLog(A)
    f, create_f = w.create("/f")
    await put(stub, create_f)
    await put(stub, w.write(f, 0, b"payload")[:-3])  # Frame whole, payload cut.
    out = tmp_path / "out"
    with pytest.raises(PlaybackError, match="incomplete"):
        await play(stub, out)
    assert not out.exists()


async def test_frame_cut_short_at_the_head_fails_and_removes_the_directory(
        stub: pb_grpc.JournalStub, tmp_path: Path) -> None:
    w = OpLog(A)
    await put(stub, w.create("/f")[1])
    await put(stub, b"x" * 7, w.create("/g")[1][:-2])  # Garbage, then a frame cut short.
    out = tmp_path / "out"
    with pytest.raises(PlaybackError, match="truncated frame"):
        await play(stub, out)
    assert not out.exists()


async def test_plays_from_hints_skipping_dead_regions(stub: pb_grpc.JournalStub,
                                                       tmp_path: Path) -> None:
    w = OpLog(A)
    old, create_old = w.create("/old")
    await put(stub, create_old)
    for i in range(8):
        await put(stub, w.write(old, i << 17, os.urandom(1 << 17)))  # 1 MiB, later dead.
    await put(stub, w.unlink(old, "/old"))
    keep, create_keep = w.create("/keep")
    await put(stub, create_keep, w.write(keep, 0, b"live data"))
    _, first = await play(stub, tmp_path / "first")
    hints = first.fsm.build_hints(LOG)

    # More ops after the hints were taken: playback from hints reads them too.
    more, create_more = w.create("/more")
    head = await put(stub, create_more, w.write(more, 0, b"later"), w.write(keep, 4, b"LIVE"))
    out = tmp_path / "out"
    player, resolved = await play(stub, out, hints)
    assert tree(out) == {"keep": b"liveLIVEa", "more": b"later"}
    assert (resolved.fsm.next_seq_no, resolved.fsm.next_checksum) == (w.seq_no, w.checksum)
    assert player.progress.offset == head.end
    assert player.progress.bytes_read < 4096  # The dead megabyte was never read.


async def test_hints_left_unread_at_the_head_fail_naming_log_and_segment(
        stub: pb_grpc.JournalStub, tmp_path: Path) -> None:
    w = OpLog(A)
    f, create_f = w.create("/f")
    await put(stub, create_f, w.write(f, 0, b"data"))
    _, resolved = await play(stub, tmp_path / "first")
    hints = resolved.fsm.build_hints(LOG)
    hints.live_nodes[0].segments[0].author = B  # No op of B's exists in the log.
    out = tmp_path / "out"
    with pytest.raises(UnreadHintsError) as err:
        await play(stub, out, hints)
    message = str(err.value)
    assert "FSM has remaining unread hints" in message
    assert LOG in message and f"author={B}" in message and "seq_no 1..2" in message
    assert not out.exists()


async def test_hints_naming_content_or_logs_that_do_not_exist(stub: pb_grpc.JournalStub,
                                                               tmp_path: Path) -> None:
    w = OpLog(A)
    f, create_f = w.create("/f")
    commit = await put(stub, create_f)
    seg = rpb.Segment(author=A, first_seq_no=1, first_offset=commit.end + 100, last_seq_no=1)
    beyond = rpb.FSMHints(log=LOG, live_nodes=[rpb.FnodeSegments(fnode=f, segments=[seg])])
    out = tmp_path / "out"
    with pytest.raises(DataLossError, match="possible data loss"):
        await play(stub, out, beyond)
    assert not out.exists()
    with pytest.raises(PlaybackError, match="no/such/log"):
        await play(stub, out, rpb.FSMHints(log="no/such/log"))
    assert not out.exists()


async def test_tails_until_told_to_finish(stub: pb_grpc.JournalStub, tmp_path: Path) -> None:
    w = OpLog(A)
    f, create_f = w.create("/f")
    await put(stub, create_f, w.write(f, 0, b"one"))
    player = Player()
    task = asyncio.create_task(player.play(rpb.FSMHints(log=LOG), str(tmp_path / "out"), stub))
    async with asyncio.timeout(10):
        await player.tailing.wait()
    await put(stub, w.write(f, 3, b"two"))
    await asyncio.sleep(0.1)
    assert not task.done()  # Tailing: the head is not the end until told so.
    player.finish_at_write_head()
    async with asyncio.timeout(10):
        await task
    assert tree(tmp_path / "out") == {"f": b"onetwo"}


async def test_handoff_fences_the_previous_writer(stub: pb_grpc.JournalStub,
                                                 tmp_path: Path) -> None:
    w = OpLog(A)
    await put(stub, w.noop(), union_registers=fence(A))  # As a recorder claims a new log.
    f, create_f = w.create("/f")
    await put(stub, create_f, w.write(f, 0, b"before"), check_registers=fence_selector(A))
    player = Player()
    player.inject_handoff(B)
    resolved = await player.play(rpb.FSMHints(log=LOG), str(tmp_path / "out"), stub)
    assert tree(tmp_path / "out") == {"f": b"before"}
    assert resolved.fsm.next_seq_no == w.seq_no + 1  # The hand-off no-op was applied.
    with pytest.raises(AppendError) as err:
        await put(stub, w.write(f, 6, b"zombie"), check_registers=fence_selector(A))
    assert err.value.response.status == pb.REGISTER_MISMATCH
    # The new author's recorder carries on from the resolved FSM.
    successor = OpLog(B, resolved.fsm.next_seq_no, resolved.fsm.next_checksum)
    await put(stub, successor.write(f, 6, b"after"), check_registers=fence_selector(B))
    _, replayed = await play(stub, tmp_path / "again")
    assert tree(tmp_path / "again") == {"f": b"beforeafter"}
    assert replayed.fsm.next_seq_no == successor.seq_no


async def test_handoff_that_loses_a_race_is_injected_again(
        stub: pb_grpc.JournalStub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    w = OpLog(A)
    f, create_f = w.create("/f")
    await put(stub, create_f)
    injections: list[int] = []
    real = player_mod.inject_noop

    async def raced(client: object, log: str, fsm: object, author: int) -> pb.Fragment:
        if not injections:
            # The old recorder commits one more op between our read of the head
            # and the hand-off, so the first hand-off is mis-sequenced.
            await put(stub, w.write(f, 0, b"raced"))
        commit = await real(client, log, fsm, author)  # type: ignore[arg-type]
        injections.append(commit.begin)
        return commit

    monkeypatch.setattr(player_mod, "inject_noop", raced)
    player = Player()
    player.inject_handoff(B)
    resolved = await player.play(rpb.FSMHints(log=LOG), str(tmp_path / "out"), stub)
    assert len(injections) == 2
    assert tree(tmp_path / "out") == {"f": b"raced"}
    assert resolved.fsm.next_seq_no == w.seq_no + 1


async def jump_ahead(stub: pb_grpc.JournalStub, root: Path, gap: int, content: bytes) -> int:
    """Put `content` in the log `gap` bytes past its head, as a fragment found in the
    store (the bytes in between are gone), and move the head past it; returns its begin."""
    head = (await put(stub)).end
    begin, end = head + gap, head + gap + len(content)
    name = f"{begin:016x}-{end:016x}-{hashlib.sha1(content).hexdigest()}.raw"
    (root / "broker" / LOG).mkdir(parents=True, exist_ok=True)
    path = root / "broker" / LOG / name
    path.write_bytes(content)
    # Brokers read across a gap only to a fragment persisted long ago (6 h): a younger
    # gap may still be filled by another broker's content.
    old = time.time() - 7 * 3600
    os.utime(path, (old, old))
    async with asyncio.timeout(10):
        while True:  # Until the broker's index refresh has listed the fragment.
            try:
                await put(stub, offset=end)
                return begin
            except AppendError as err:
                assert err.response.status == pb.WRONG_APPEND_OFFSET
                await asyncio.sleep(0.1)


async def test_offset_jumps_are_tolerated_outside_hinted_segments(
        stub: pb_grpc.JournalStub, tmp_path: Path) -> None:
    w = OpLog(A)
    f, create_f = w.create("/f")
    first = await put(stub, create_f, w.write(f, 0, b"before"))
    begin = await jump_ahead(stub, tmp_path, 5000, w.write(f, 6, b"after"))
    player, _ = await play(stub, tmp_path / "out")
    assert tree(tmp_path / "out") == {"f": b"beforeafter"}
    assert player.progress.offset > begin > first.end

    # Hints whose segment spans the removed bytes with a known end cannot be played.
    hints = rpb.FSMHints(log=LOG, live_nodes=[rpb.FnodeSegments(fnode=f, segments=[
        rpb.Segment(author=A, first_seq_no=1, first_offset=0, last_seq_no=3,
                    last_offset=player.progress.offset)])])
    with pytest.raises(OffsetJumpError, match=f"content {first.end}..{begin} is gone"):
        await play(stub, tmp_path / "out", hints)
    assert not (tmp_path / "out").exists()


async def test_progress_bar_on_a_terminal_only(stub: pb_grpc.JournalStub,
                                               tmp_path: Path) -> None:
    w = OpLog(A)
    f, create_f = w.create("/f")
    head = await put(stub, create_f, w.write(f, 0, b"z" * 3000))
    outputs = []
    for terminal in (True, False):
        console = Console(file=io.StringIO(), force_terminal=terminal, width=120)
        player = Player()
        player.finish_at_write_head()
        await play_with_progress(player, rpb.FSMHints(log=LOG), str(tmp_path / "out"), stub,
                                 console)
        assert tree(tmp_path / "out") == {"f": b"z" * 3000}
        outputs.append(console.file.getvalue())  # type: ignore[attr-defined]
    drawn, plain = outputs
    assert head.end > 3000
    assert f"playing {LOG}" in drawn and "3.0/3.0 kB" in drawn
    assert plain == ""


def test_progress_eta_extrapolates_the_rate_so_far() -> None:
    p = Progress(log=LOG, offset=100, start_offset=0, target_head=400, started=10.0)
    assert p.remaining == 300 and p.fraction == 0.25
    assert p.eta(now=12.0) == 6.0  # 100 bytes took 2 s; 300 remain.
    assert Progress(target_head=400, started=10.0).eta(now=12.0) is None
    p.offset, p.at_head = 400, True
    assert (p.fraction, p.eta(now=13.0)) == (1.0, 0.0)


async def test_hints_spanning_a_forked_log_play_both_logs(stub: pb_grpc.JournalStub,
                                                          tmp_path: Path) -> None:
    old_log = "recovery/logs/shard-000-before"
    await create(stub, journal_spec(old_log))
    old = OpLog(A)
    f, create_f = old.create("/f")
    await append(stub, old_log, create_f + old.write(f, 0, b"old"))
    _, first = await play(stub, tmp_path / "first", rpb.FSMHints(log=old_log))
    old_seg = first.fsm.build_hints(old_log).live_nodes[0].segments[0]
    old_seg.log = old_log

    # A recorder of B forks onto LOG: a sequenced no-op, then more writes to f.
    new = OpLog(B, old.seq_no, old.checksum)
    await put(stub, b"unrelated content before the fork", new.noop())
    new_seg = rpb.Segment(author=B, first_seq_no=new.seq_no, first_offset=0,
                          first_checksum=new.checksum, last_seq_no=new.seq_no)
    await put(stub, new.write(f, 3, b"new"))
    hints = rpb.FSMHints(log=LOG, live_nodes=[rpb.FnodeSegments(fnode=f,
                                                                segments=[old_seg, new_seg])])
    _, resolved = await play(stub, tmp_path / "out", hints)
    assert tree(tmp_path / "out") == {"f": b"oldnew"}
    assert (resolved.fsm.next_seq_no, resolved.fsm.next_checksum) == (new.seq_no, new.checksum)
    segs = resolved.fsm.build_hints(LOG).live_nodes[0].segments
    assert [s.log for s in segs] == [old_log, ""]
    await play(stub, tmp_path / "again", resolved.fsm.build_hints(LOG))
    assert tree(tmp_path / "again") == {"f": b"oldnew"}


class CountingStub:
    """A Journal stub that counts the Read RPCs made through it."""

    def __init__(self, stub: pb_grpc.JournalStub) -> None:
        self._stub = stub
        self.reads: list[int] = []

    def Read(self, request: pb.ReadRequest, **kw: object) -> object:
        self.reads.append(request.offset)
        return self._stub.Read(request, **kw)

    def Append(self, **kw: object) -> object:
        return self._stub.Append(**kw)


async def test_skipping_buffered_bytes_keeps_the_read_open(stub: pb_grpc.JournalStub,
                                                            tmp_path: Path) -> None:
    w = OpLog(A)
    f, create_f = w.create("/f")
    zombie = OpLog(B, seq_no=2)
    pieces = [create_f]
    for i in range(50):  # Unapplied payloads to skip, between applied writes.
        pieces += [zombie.write(f, 0, b"skip me" * 100), w.write(f, i, b"k")]
    await put(stub, *pieces)
    counting = CountingStub(stub)
    player = Player()
    player.finish_at_write_head()
    await player.play(rpb.FSMHints(log=LOG), str(tmp_path / "out"), counting)  # type: ignore[arg-type]
    assert tree(tmp_path / "out") == {"f": b"k" * 50}
    # One read to the head learned by the barrier, one that finds it is still the head.
    assert counting.reads == [0, len(b"".join(pieces))]
