"""Player: rebuild a directory by playing a recovery log back.

See docs/design/recoverylog.md#the-player.

Playback starts from FSMHints (or from offset 0 without hints), seeks to each
hinted segment so dead regions of the log are never read, applies every frame
to an FSM and re-enacts applied ops in `<dir>/.fnodes/`. At the write head it
either stops (`finish_at_write_head`), claims the log for a new recorder
(`inject_handoff`), or tails the log until told which. Once done, staged
files are linked to their paths (`make_live`). On any failure the directory
is removed, never left half-built. The bytes of file content played back count
into `gazette_recoverylog_recovered_bytes_total`, as Go counts them.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from google.protobuf.message import DecodeError

from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from gazette_core.consumer.recoverylog.framing import (
    HEADER_LEN,
    FrameError,
    body_length,
    find_magic,
)
from gazette_core.consumer.recoverylog.fsm import (
    FSM,
    FnodeNotTrackedError,
    FSMError,
    NotHintedAuthorError,
    WrongSeqNoError,
)
from gazette_core.consumer.recoverylog.handoff import inject_noop, write_head
from gazette_core.consumer.recoverylog.log_reader import AtHead, Jumped, LogReader
from gazette_core.consumer.recoverylog.playback_errors import (
    DataLossError,
    OffsetJumpError,
    PlaybackError,
    UnreadHintsError,
)
from gazette_core.consumer.recoverylog.progress import Progress
from gazette_core.consumer.recoverylog.staging import Staging
from gazette_core.metrics.families import Counter

if TYPE_CHECKING:
    from gazette_core.broker.client.routing import JournalClient

log = logging.getLogger(__name__)

# Frames are small (paths and offsets; payloads travel outside them). A larger
# length after a magic word is garbage that happens to contain the magic.
MAX_FRAME = 64 << 20
RECOVERED_BYTES = Counter("gazette_recoverylog_recovered_bytes_total",
                          "Bytes of files played back from recovery logs.").cell()


@dataclass
class Resolved:
    """A played log: the FSM at the point playback stopped, and the live directory."""

    log: str
    fsm: FSM
    directory: str


def describe(seg: rpb.Segment) -> str:
    return (f"segment author={seg.author} seq_no {seg.first_seq_no}..{seg.last_seq_no} "
            f"offsets {seg.first_offset}..{seg.last_offset or 'unbounded'}")


class Player:
    """Plays one recovery log back; poll `progress`, await `tailing` for the first head.

    Call `finish_at_write_head()` or `inject_handoff(author)` before or
    during `play()` (from the event loop's thread); until one is called,
    playback tails the log once it reaches the head.
    """

    def __init__(self) -> None:
        self.progress = Progress()
        self.tailing = asyncio.Event()
        self._finish = False
        self._handoff: int | None = None
        self._reader: LogReader | None = None
        self._warned_desync = False
        self._injected: tuple[int, int] | None = None  # Hand-off op's commit (begin, end).
        self._fsm = FSM()

    def finish_at_write_head(self) -> None:
        """Stop once the write head is reached."""
        self._finish = True
        self._wake()

    def inject_handoff(self, author: int) -> None:
        """At the write head, claim the log for `author` (a new recorder) and stop."""
        if not 0 < author < 1 << 32:
            raise ValueError(f"author {author} is not in 1..2^32-1")
        self._handoff = author
        self._wake()

    def _wake(self) -> None:
        if self._reader is not None and self._reader.tail:
            self._reader.tail = False
            self._reader.interrupt()

    async def play(self, hints: rpb.FSMHints, directory: str,
                   client: JournalClient) -> Resolved:
        """Play `hints.log` into `directory` (which is replaced entirely)."""
        staging = Staging(directory)
        try:
            fsm = await self._play(hints, staging, client)
            staging.make_live(fsm)
        except BaseException:
            staging.abort()
            raise
        finally:
            if self._reader is not None:
                self._reader.close()
        return Resolved(hints.log, fsm, directory)

    async def _play(self, hints: rpb.FSMHints, staging: Staging, client: JournalClient) -> FSM:
        if not hints.log:
            raise PlaybackError("hints name no recovery log")
        self._fsm = fsm = FSM(hints)
        staging.prepare()
        heads = await _heads(hints, client)
        reader = self._reader = LogReader(client, hints.log, 0, heads[hints.log],
                                          on_jump=self._check_jump)
        self.progress.log, self.progress.target_head = hints.log, heads[hints.log]
        while True:
            self._seek_to_hints(reader, heads)
            try:
                op, body = await self._next_frame(reader)
            except Jumped:
                continue
            except AtHead as at:
                if await self._at_head(reader, fsm, client, at.write_head):
                    return fsm
                continue
            if await self._play_op(reader, fsm, staging, op, body):
                return fsm

    def _seek_to_hints(self, reader: LogReader, heads: dict[str, int]) -> None:
        """Skip to the next hinted segment when it is ahead, or in another log."""
        seg = self._fsm.next_hinted_segment()
        if seg is None or (seg.log == reader.log and seg.first_offset <= reader.offset):
            return
        if seg.log != reader.log:
            reader.head = heads[seg.log]
            self.progress.log, self.progress.target_head = seg.log, reader.head
        reader.seek(seg.log, seg.first_offset)
        if self.progress.bytes_read == 0:
            self.progress.start_offset = seg.first_offset
        self._report(reader)

    def _check_jump(self, journal: str, start: int, end: int) -> None:
        """Allow a jump over removed content unless it cuts into a bounded hinted segment."""
        seg = self._fsm.next_hinted_segment()
        if (seg is not None and seg.log == journal and seg.last_offset
                and start < seg.last_offset and end > seg.first_offset):
            raise OffsetJumpError(
                f"recovery log {journal!r}: content {start}..{end} is gone, "
                f"but the hinted {describe(seg)} needs it")
        log.info("recovery log %r: offset jump from %d to %d", journal, start, end)

    async def _next_frame(self, reader: LogReader) -> tuple[rpb.RecordedOp, bytes]:
        """The next op with its meta fields set, and its frame body exactly as read."""
        while True:
            header = await reader.peek(HEADER_LEN)
            try:
                size = body_length(header)
            except FrameError:
                self._resync(reader)
                continue
            if size > MAX_FRAME:
                self._resync(reader)
                continue
            body = (await reader.peek(HEADER_LEN + size))[HEADER_LEN:]
            try:
                op = rpb.RecordedOp.FromString(body)
            except DecodeError:
                self._resync(reader)
                continue
            op.first_offset = reader.offset
            reader.consume(HEADER_LEN + size)
            op.last_offset = reader.offset + (op.write.length if op.HasField("write") else 0)
            op.log = reader.log
            return op, body

    def _resync(self, reader: LogReader) -> None:
        """Skip garbage up to the next magic word (or to the end of what is buffered)."""
        if not self._warned_desync:
            self._warned_desync = True
            log.warning("recovery log %r: no frame at offset %d; skipping to the next one",
                        reader.log, reader.offset)
        buffered = bytes(reader.peek_buffered())
        at = find_magic(buffered, 1)
        # Keep a tail that may be the start of a magic word cut by the buffer's end.
        reader.consume(at if at > 0 else max(1, len(buffered) - (HEADER_LEN // 2 - 1)))

    async def _play_op(self, reader: LogReader, fsm: FSM, staging: Staging,
                       op: rpb.RecordedOp, body: bytes) -> bool:
        """Apply one op and re-enact it; True once the injected hand-off is applied."""
        applied = _apply(fsm, op, body)
        if op.HasField("write"):
            if applied:
                await _copy_payload(reader, staging, op)
            else:
                reader.seek(reader.log, reader.offset + op.write.length)
        elif applied and op.HasField("create"):
            staging.create(op.seq_no)
        elif applied and op.HasField("unlink") and op.unlink.fnode not in fsm.live_nodes:
            staging.remove(op.unlink.fnode)
        self._report(reader)
        if self._injected is None or op.first_offset != self._injected[0]:
            return False
        if applied:
            return True
        log.info("recovery log %r: hand-off at %d lost a race; injecting again",
                 op.log, op.first_offset)
        self._injected = None
        return False

    async def _at_head(self, reader: LogReader, fsm: FSM, client: JournalClient,
                       head: int) -> bool:
        """Decide what to do at the write head; True when playback is done."""
        self.progress.target_head = head
        self.progress.at_head = True
        self._report(reader)
        if reader.buffered():
            self._truncated(reader, head)
            return False
        seg = fsm.next_hinted_segment()
        if seg is not None:
            raise UnreadHintsError(
                f"FSM has remaining unread hints: recovery log {seg.log!r} ends at "
                f"{head if seg.log == reader.log else 'another log'} before the hinted "
                f"{describe(seg)} was read")
        self.tailing.set()
        if self._handoff is not None:
            if self._injected is not None and reader.offset >= self._injected[1]:
                self._injected = None  # Passed without reading it as a frame: try again.
            if self._injected is None:
                commit = await inject_noop(client, reader.log, fsm, self._handoff)
                self._injected = (int(commit.begin), int(commit.end))
            # The op is known to exist below its commit's end: block until it is read.
            reader.head = max(reader.head, self._injected[1])
            return False
        if self._finish:
            return True
        reader.tail = True
        return False

    def _truncated(self, reader: LogReader, head: int) -> None:
        """Bytes left at the head that make no whole frame: garbage, or a cut frame."""
        buffered = bytes(reader.peek_buffered())
        at = find_magic(buffered, 1)
        if at > 0:
            reader.consume(at)  # Garbage before a frame that is still to be read.
            return
        raise PlaybackError(
            f"recovery log {reader.log!r}: truncated frame at offset {reader.offset} "
            f"({len(buffered)} bytes before the write head {head})")

    def _report(self, reader: LogReader) -> None:
        self.progress.offset = reader.offset
        self.progress.bytes_read = reader.bytes_read
        if reader.offset < self.progress.target_head:
            self.progress.at_head = False


def _apply(fsm: FSM, op: rpb.RecordedOp, body: bytes) -> bool:
    """Apply `op`; False when it is skipped (rejections are normal during hand-off)."""
    try:
        fsm.apply(op, body)
        return True
    except (FnodeNotTrackedError, NotHintedAuthorError):
        return False  # Expected: the FSM may still have advanced, but not locally.
    except WrongSeqNoError as err:
        if err.got >= err.expected:
            log.info("recovery log %r: skipping op at %d: %s", op.log, op.first_offset, err)
        return False
    except FSMError as err:
        log.info("recovery log %r: skipping op at %d: %s", op.log, op.first_offset, err)
        return False


async def _copy_payload(reader: LogReader, staging: Staging, op: rpb.RecordedOp) -> None:
    """Stream a write's payload from the log into its staged file."""
    remaining, offset = op.write.length, op.write.offset
    try:
        while remaining:
            if not reader.buffered():
                await reader.fill()
            view = reader.peek_buffered()[:remaining]
            staging.write(op.write.fnode, offset, view)
            n = len(view)
            view.release()
            reader.consume(n)
            RECOVERED_BYTES.value += n
            remaining, offset = remaining - n, offset + n
    except (AtHead, Jumped) as err:
        raise PlaybackError(
            f"recovery log {op.log!r}: the payload of the write at offset {op.first_offset} "
            f"is incomplete ({remaining} of {op.write.length} bytes missing)") from err


async def _heads(hints: rpb.FSMHints, client: JournalClient) -> dict[str, int]:
    """Every hinted log's write head; hinted content at or past it means data loss."""
    logs = {hints.log}
    for node in hints.live_nodes:
        logs.update(seg.log or hints.log for seg in node.segments)
    heads = {name: await write_head(client, name) for name in sorted(logs)}
    for node in hints.live_nodes:
        for seg in node.segments:
            name = seg.log or hints.log
            if seg.first_offset >= heads[name] or seg.last_offset > heads[name]:
                raise DataLossError(
                    f"possible data loss: hinted {describe(seg)} of recovery log {name!r} "
                    f"is beyond its write head {heads[name]}")
    return heads
