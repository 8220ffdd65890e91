"""Readers of `gazctl journals read`: the shared output and the journals it follows.

Every reader copies one journal into one `Output`: its raw content a whole
fragment at a time (`read_one`), or its committed messages one at a time
(read_committed.py). A blocking read (`-b`) keeps its set of readers in step
with a List watch of the selector: journals that start matching get a reader,
journals that stop matching (relabelled, deleted, fully suspended) lose theirs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, BinaryIO

from gazctl.render import stderr
from gazette_core.broker.client.journals import watch_journals
from gazette_core.broker.client.retry_reader import RetryReader
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.suspend_ext import fully_suspended
from gazette_core.errors import StatusError

if TYPE_CHECKING:
    from gazette_core.broker.client.routing import JournalClient
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub

ReadOne = Callable[[pb.ReadRequest, pb.JournalSpec], Awaitable[None]]
"""Reads the journal of a request (from its offset) into the shared output, noting in
the finals where it stopped."""


async def follow(stub: JournalAsyncStub, sel: pb.LabelSelector, text: str, out: Output,
                 template: pb.ReadRequest, starts: dict[str, int],
                 finals: dict[str, int], read: ReadOne) -> None:
    """Read the journals `sel` matches as it changes, until interrupted or --count is met.

    `template` is the ReadRequest every reader starts from (its offset says
    whether a journal without a known offset starts at 0 or at the write head).
    """
    followed = Followed(read, out, template, starts, finals)
    watch = asyncio.create_task(_track(stub, sel, text, followed), name="list watch")
    enough = asyncio.create_task(out.done.wait(), name="record count")
    try:
        waiters: list[asyncio.Future[Any]] = [watch, enough, followed.failed]
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watch.cancel()
        enough.cancel()
        await followed.close()
        await asyncio.gather(watch, enough, return_exceptions=True)
    if followed.failed.done():
        raise followed.failed.result()
    if not watch.cancelled() and (err := watch.exception()) is not None:
        raise err


async def _track(stub: JournalAsyncStub, sel: pb.LabelSelector, text: str,
                 followed: Followed) -> None:
    """Apply every snapshot of the watch to the readers; a watch never ends by itself."""
    async with aclosing(watch_journals(stub, sel)) as snapshots:
        first = True
        async for snapshot in snapshots:
            await followed.update(snapshot)
            if first and not snapshot.journals:
                # Journals may yet be created or relabelled into the selection.
                stderr.print(f"no journals match {text!r} yet; waiting for some to appear",
                             highlight=False)
            first = False


class Output:
    """The shared output: one journal's fragment (or message) at a time, and an optional
    budget of records (or messages)."""

    def __init__(self, out: BinaryIO, count: int) -> None:
        self.out = out
        self.lock = asyncio.Lock()
        self.remaining = count  # records still wanted; 0 means no limit
        self.limited = count > 0
        self.done = asyncio.Event()
        self.written = 0  # bytes, across all journals

    def write(self, chunk: bytes) -> int:
        """Write `chunk`, or its first records up to the budget; bytes written."""
        if self.limited:
            end = 0
            while self.remaining and (nl := chunk.find(b"\n", end)) >= 0:
                end, self.remaining = nl + 1, self.remaining - 1
            if not self.remaining:
                chunk = chunk[:end]
                self.done.set()
        self.out.write(chunk)
        self.out.flush()
        self.written += len(chunk)
        return len(chunk)

    def write_message(self, record: bytes) -> None:
        """Write one whole message, which counts as one record of the budget."""
        self.out.write(record)
        self.out.flush()
        self.written += len(record)
        if self.limited:
            self.remaining -= 1
            if not self.remaining:
                self.done.set()


def raw_reader(client: JournalClient, out: Output, finals: dict[str, int],
               file_root: str | None) -> ReadOne:
    """The ReadOne copying journals' raw content (see read_one)."""
    async def read(req: pb.ReadRequest, spec: pb.JournalSpec) -> None:
        await read_one(client, req, out, finals, file_root)
    return read


async def read_one(client: JournalClient, req: pb.ReadRequest, out: Output,
                   finals: dict[str, int], file_root: str | None = None) -> None:
    """Copy one journal to the shared output, a whole fragment range at a time.

    The broker streams content in small chunks that may split an append, but a
    fragment never does: holding the output from a fragment's first chunk to its
    end keeps other journals' content from landing inside an append. With
    `file_root` (and a `do_not_proxy` request) persisted fragments are read
    from their stores by the RetryReader itself.
    """
    reader = RetryReader(client, req, file_root=file_root)
    held = False
    try:
        async for chunk in reader:
            if not held:
                await out.lock.acquire()
                held = True
            if out.done.is_set():
                break
            written = out.write(chunk)
            finals[req.journal] = reader.offset - (len(chunk) - written)
            if reader.offset >= reader.response.fragment.end:
                out.lock.release()
                held = False
        else:
            # Where the broker says reading stopped: after an offset jump that is past
            # the skipped range, but never the write head when content below it is
            # not yet readable (that would skip it for good).
            finals[req.journal] = (reader.offset if reader.offset >= 0
                                   else reader.write_head or 0)
    finally:
        reader.close()
        if held:
            out.lock.release()


class Followed:
    """The readers of a blocking read, one per journal the selector currently matches."""

    def __init__(self, read: ReadOne, out: Output, template: pb.ReadRequest,
                 starts: dict[str, int], finals: dict[str, int]) -> None:
        self.read, self.out, self.template = read, out, template
        self.starts, self.finals = starts, finals
        # journal -> (create_revision, its reader); a new create_revision is a new journal.
        self.readers: dict[str, tuple[int, asyncio.Task[None]]] = {}
        self.seen: dict[str, int] = {}  # create_revision of every journal read so far
        self.failed: asyncio.Future[Exception] = asyncio.get_running_loop().create_future()

    async def update(self, snapshot: pb.ListResponse) -> None:
        """Stop the readers of journals that left the selection, start those of newcomers."""
        specs = {j.spec.name: j.spec for j in snapshot.journals if not fully_suspended(j.spec)}
        wanted = {j.spec.name: j.create_revision for j in snapshot.journals
                  if j.spec.name in specs}
        leaving = [name for name, (rev, _) in self.readers.items() if wanted.get(name) != rev]
        if leaving:
            # Holding the output, no reader is inside a fragment: cancelling
            # now never cuts an append, and the kept offsets are append ends.
            async with self.out.lock:
                stopped = [self.readers.pop(name)[1] for name in leaving]
                for task in stopped:
                    task.cancel()
            await asyncio.gather(*stopped, return_exceptions=True)
        for name, rev in wanted.items():
            if name not in self.readers:
                self._start(specs[name], rev, snapshot.header.etcd.revision)

    def _start(self, spec: pb.JournalSpec, rev: int, revision: int) -> None:
        name = spec.name
        req = pb.ReadRequest()
        req.CopyFrom(self.template)
        req.journal, req.offset = name, self._offset(name, rev)
        # A broker whose view of Etcd lags the watch's would not know a new journal yet.
        req.min_etcd_revision = revision
        if req.offset >= 0:
            self.finals[name] = req.offset
        self.seen[name] = rev
        self.readers[name] = (rev, asyncio.create_task(self._run(req, spec),
                                                       name=f"read {name}"))

    def _offset(self, name: str, rev: int) -> int:
        """Where a reader starts: back in the selection, where its last reader stopped."""
        fresh = self.template.offset  # 0, or -1 (the write head) with --tail
        if name not in self.seen:
            return self.starts.get(name, fresh)
        if self.seen[name] == rev:
            return self.finals.get(name, self.starts.get(name, fresh))
        return fresh  # deleted and created again: the old offsets mean nothing now

    async def _run(self, req: pb.ReadRequest, spec: pb.JournalSpec) -> None:
        try:
            await self.read(req, spec)
        except StatusError as err:
            # A journal deleted under its reader: the watch is about to drop it.
            if err.status != pb.JOURNAL_NOT_FOUND:
                self._fail(err)
        except Exception as err:
            self._fail(err)

    def _fail(self, err: Exception) -> None:
        if not self.failed.done():
            self.failed.set_result(err)

    async def close(self) -> None:
        """Cancel every reader and wait until all have unwound."""
        tasks = [task for _, task in self.readers.values()]
        self.readers.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
