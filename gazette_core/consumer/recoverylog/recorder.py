"""Recorder: turns a store's file operations into ops appended to a recovery log.

See docs/design/recoverylog.md#the-recorder.

Every record call stamps its ops with the author and the FSM's next seq_no and
checksum, applies them to the recorder's own FSM and queues their frames, in
order, as one append's content. Appends go through one AppendService whose
every request checks the `author=<mine>` register, so once another process
injects a hand-off, this recorder's appends fail and its next barrier raises
RecorderFencedError.

Record calls are synchronous and thread-safe: a store may call them from a
worker thread while the recorder's event loop runs the appends. `barrier()`
returns a future of that loop; await it there.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from gazette_core.broker.client.append_service import AppendService
from gazette_core.broker.client.appender import append_retrying
from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from gazette_core.consumer.recoverylog.author import fence, fence_selector
from gazette_core.consumer.recoverylog.framing import encode
from gazette_core.consumer.recoverylog.fsm import FSM, FnodeNotTrackedError, FSMError
from gazette_core.consumer.recoverylog.outbox import (
    Outbox,
    RecorderError,
    RecorderFencedError,
)

if TYPE_CHECKING:
    from gazette_core.broker.client.routing import JournalClient

__all__ = ["PROPERTY_PATHS", "FileRecorder", "Recorder", "RecorderError", "RecorderFencedError"]

# Files recorded as a property (content kept in hints) rather than as an Fnode.
PROPERTY_PATHS = frozenset({"/IDENTITY"})


class FileRecorder:
    """Records writes to one open file (one Fnode)."""

    def __init__(self, recorder: Recorder, fnode: int) -> None:
        self._recorder = recorder
        self.fnode = fnode

    def write_at(self, data: bytes, offset: int) -> None:
        """Record that `data` was written at `offset`: a write frame, then the data."""
        if data:
            self._recorder.record_write(self.fnode, offset, bytes(data))


class Recorder:
    """Records file operations under `directory` into the recovery log `log`."""

    def __init__(self, log: str, fsm: FSM, author: int, directory: str, outbox: Outbox,
                 service: AppendService) -> None:
        self.log = log
        self.fsm = fsm
        self.author = author
        self.directory = directory
        self._outbox = outbox
        self._service = service
        self._lock = threading.Lock()

    @classmethod
    async def start(cls, log: str, fsm: FSM, author: int, directory: str,
                    client: JournalClient) -> Recorder:
        """A recorder whose appends are fenced by `author`.

        Learns the write head with an empty append; on a log fork (`log` is
        not the FSM's last log) it claims the log with a sequenced no-op that
        unions the author register.
        """
        if not os.path.isabs(directory) or os.path.normpath(directory) != directory:
            raise RecorderError(f"recorder directory must be absolute and clean: {directory!r}")
        if fsm.has_remaining_hints():
            # Recording on top of unread history would sequence ops the log never saw.
            raise RecorderError(f"cannot record to {log!r}: FSM has remaining unread hints")
        head = (await append_retrying(client, log, b"")).commit.end
        service = AppendService(client, check_registers=fence_selector(author))
        outbox = Outbox(asyncio.get_running_loop(), service, log, head)
        recorder = cls(log, fsm, author, directory, outbox, service)
        if log != fsm.last_log:
            frame = recorder._stamp([rpb.RecordedOp()])
            resp = await append_retrying(client, log, frame, union_registers=fence(author))
            outbox.write_head = resp.commit.end
        service.start()
        return recorder

    async def stop(self) -> None:
        """Wait until every recorded op is settled; later record calls raise RecorderError."""
        with self._lock:
            self._outbox.close(RecorderError(f"recorder of {self.log!r} is stopped"))
        await self._service.stop()

    @property
    def write_head(self) -> int:
        """The furthest log offset this recorder has seen committed."""
        return self._outbox.write_head

    # Record calls.

    def open_file(self, path: str, *, create: bool, truncate: bool) -> FileRecorder:
        """Record opening `path`: a create when new (needs `create`), unlink+create on truncate."""
        rel = self._relative(path)
        with self._lock:
            fnode = self.fsm.links.get(rel)
            if fnode is not None and not truncate:
                return FileRecorder(self, fnode)
            if fnode is None and not create:
                raise RecorderError(f"open of unrecorded file {rel!r} without create")
            ops = [] if fnode is None else [_unlink(fnode, rel)]
            created = rpb.RecordedOp(create=rpb.RecordedOp.Create(path=rel))
            self._submit([*ops, created])
            return FileRecorder(self, created.seq_no)

    def record_write(self, fnode: int, offset: int, data: bytes) -> None:
        """Record a write of `data` at `offset` of `fnode` (frame and data in one append)."""
        op = rpb.RecordedOp(write=rpb.RecordedOp.Write(fnode=fnode, offset=offset,
                                                       length=len(data)))
        with self._lock:
            self._submit([op], data)

    def remove(self, path: str) -> None:
        """Record the removal of `path`."""
        rel = self._relative(path)
        with self._lock:
            self._submit([_unlink(self._fnode(rel), rel)])

    def link(self, src: str, dst: str) -> None:
        """Record a hard link of `src`'s file at `dst`."""
        rel_src, rel_dst = self._relative(src), self._relative(dst)
        with self._lock:
            link = rpb.RecordedOp(link=rpb.RecordedOp.Link(fnode=self._fnode(rel_src),
                                                           path=rel_dst))
            self._submit([link])

    def rename(self, src: str, dst: str) -> None:
        """Record a rename (call it after renaming; a property target is read from disk)."""
        rel_src, rel_dst = self._relative(src), self._relative(dst)
        with self._lock:
            fnode = self._fnode(rel_src)
            if rel_src == rel_dst:
                return  # Renaming a file onto itself changes nothing.
            ops = []
            if (old := self.fsm.links.get(rel_dst)) is not None:
                ops.append(_unlink(old, rel_dst))
            if rel_dst in PROPERTY_PATHS:
                prop = rpb.Property(path=rel_dst, content=_read_text(dst, src))
                ops.append(rpb.RecordedOp(property=prop))
            else:
                ops.append(rpb.RecordedOp(link=rpb.RecordedOp.Link(fnode=fnode, path=rel_dst)))
            ops.append(_unlink(fnode, rel_src))
            self._submit(ops)

    def barrier(self, wait_for: Awaitable[None] | None = None) -> asyncio.Future[None]:
        """An empty append after everything recorded so far, started once `wait_for` resolved.

        Everything recorded later waits behind it. The future resolves once all
        earlier appends committed, or fails with the recorder's failure.
        """
        with self._lock:
            return self._outbox.put_barrier(wait_for)

    async def build_hints(self) -> rpb.FSMHints:
        """Hints of the recorded state, returned once every op they refer to committed."""
        with self._lock:
            hints = self.fsm.build_hints(self.log)
            committed = self._outbox.put_barrier(None)
        await committed
        return hints

    # Internals; callers hold the lock.

    def _submit(self, ops: list[rpb.RecordedOp], payload: bytes = b"") -> None:
        self._outbox.put(self._stamp(ops, payload))

    def _stamp(self, ops: list[rpb.RecordedOp], payload: bytes = b"") -> bytes:
        """Sequence and apply `ops`; the frames of those applied, then `payload`.

        An op the FSM refuses raises RecorderError; the ops before it were
        applied, so their frames are queued first to keep the log in step.
        """
        self._outbox.check()
        frames: list[bytes] = []
        try:
            for op in ops:
                op.author = self.author
                op.seq_no = self.fsm.next_seq_no
                op.checksum = self.fsm.next_checksum
                frame, body = encode(op)
                op.first_offset = self._outbox.write_head
                op.log = self.log
                try:
                    self.fsm.apply(op, body)
                except FnodeNotTrackedError:
                    pass  # Consistent and sequenced; a player skips it too.
                frames.append(frame)
        except FSMError as err:
            if frames:
                self._outbox.put(b"".join(frames))
            raise RecorderError(f"recorder of {self.log!r}: {err}") from err
        frames.append(payload)
        return b"".join(frames)

    def _fnode(self, rel: str) -> int:
        fnode = self.fsm.links.get(rel)
        if fnode is None:
            raise RecorderError(f"file {rel!r} is not recorded in {self.log!r}")
        return fnode

    def _relative(self, path: str) -> str:
        """`path` as recorded: relative to the directory, forward slashes, leading '/'."""
        clean = os.path.normpath(os.path.join(self.directory, path))
        rel = os.path.relpath(clean, self.directory)
        if rel == os.curdir or rel == os.pardir or rel.startswith(os.pardir + os.sep):
            raise RecorderError(f"path {path!r} is not inside {self.directory!r}")
        return "/" + rel.replace(os.sep, "/")


def _unlink(fnode: int, path: str) -> rpb.RecordedOp:
    return rpb.RecordedOp(unlink=rpb.RecordedOp.Link(fnode=fnode, path=path))


def _read_text(*candidates: str) -> str:
    """Content of the first of `candidates` that exists."""
    for path in candidates:
        try:
            with open(path, encoding="utf-8") as f:
                return f.read()
        except FileNotFoundError:
            continue
    raise RecorderError(f"property file {candidates[0]!r} does not exist")
