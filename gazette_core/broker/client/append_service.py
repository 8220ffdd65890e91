"""AppendService: many small records, few Append RPCs.

Each Append costs a round trip and a broker-side commit, so records written
to the same journal are gathered into batches of up to ~1 MiB and appended
together. Per journal there is at most one Append in flight; the next batch
fills up meanwhile and goes out as soon as the previous one commits, which
keeps records in the order they were written.

Two ways to write: `write()` returns a future per record resolving to that
record's own span; `enqueue()` is the high-rate path, as in Gazette's Go
client: records share their batch's `AsyncAppend` (one future per batch),
so a record costs only a buffer append.

Constructed with a Router instead of a stub, each batch goes straight to the
journal's primary once a response has revealed it (see `routing`). Given
`check_registers`, every batch carries that selector, so a writer fenced by
another's register union sees its appends fail with REGISTER_MISMATCH.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from gazette_core.broker.client.appender import DEFAULT_TIMEOUT, append
from gazette_core.broker.client.backoff import Backoff
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import GazetteError

if TYPE_CHECKING:
    from gazette_core.broker.client.routing import JournalClient

MAX_BATCH_BYTES = 1024 * 1024


class _Batch:
    """Records bound for one Append: their bytes, per-record futures and the batch's future."""

    __slots__ = ("buf", "ends", "futures", "handle", "starts")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.buf = bytearray()
        # Only records written with write() have an entry here.
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.futures: list[asyncio.Future[pb.Fragment]] = []
        self.handle = AsyncAppend(loop.create_future())


class AsyncAppend:
    """A batch of enqueued records; `await` it for the commit of the whole batch."""

    __slots__ = ("future",)

    def __init__(self, future: asyncio.Future[pb.Fragment]) -> None:
        self.future = future

    def __await__(self) -> Generator[Any, None, pb.Fragment]:
        return self.future.__await__()

    def done(self) -> bool:
        return self.future.done()


class _Journal:
    """Batches waiting for one journal, and the task sending them in order."""

    __slots__ = ("batches", "inflight", "name", "task")

    def __init__(self, name: str) -> None:
        self.name = name
        self.batches: deque[_Batch] = deque()
        self.inflight: _Batch | None = None  # Taken off `batches`, being appended.
        self.task: asyncio.Task[None] | None = None

    def last_pending(self) -> AsyncAppend | None:
        """The newest batch not yet settled: it settles after every earlier one."""
        batch = self.batches[-1] if self.batches else self.inflight
        if batch is None or batch.handle.done():
            return None
        return batch.handle


def _resolve(batch: _Batch, commit: pb.Fragment) -> None:
    """Give each record's future the span it occupies within the commit."""
    journal, begin = commit.journal, commit.begin
    fragment = pb.Fragment
    for start, end, future in zip(batch.starts, batch.ends, batch.futures, strict=True):
        if not future.done():  # The writer may have cancelled it.
            # Setting fields one by one is about twice as fast as keyword construction.
            span = fragment()
            span.journal = journal
            span.begin = begin + start
            span.end = begin + end
            future.set_result(span)
    if not batch.handle.future.done():
        batch.handle.future.set_result(commit)


def _fail(batch: _Batch, exc: BaseException) -> None:
    cancelled = isinstance(exc, asyncio.CancelledError)
    for future in [*batch.futures, batch.handle.future]:
        if not future.done():
            if cancelled:
                future.cancel()
            else:
                future.set_exception(exc)


class AppendService:
    """Batching, pipelined appends of records to many journals.

    `stub` is a broker's stub, or a Router to append directly at primaries.
    `check_registers`, if given, guards every append of the service.
    """

    def __init__(
        self,
        stub: JournalClient,
        max_batch_bytes: int = MAX_BATCH_BYTES,
        timeout: float = DEFAULT_TIMEOUT,
        *,
        check_registers: pb.LabelSelector | None = None,
    ) -> None:
        self._stub = stub
        self._check_registers = check_registers
        self._max_batch = max_batch_bytes
        self._timeout = timeout
        self._journals: dict[str, _Journal] = {}
        # The newest queued batch of each journal while it is not taken off to be sent
        # (so its journal's sender is running); none once the service is stopped.
        self._open: dict[str, _Batch] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self) -> None:
        """Accept writes (from the running event loop)."""
        self._loop = asyncio.get_running_loop()

    async def stop(self) -> None:
        """Refuse further writes and wait until every written record is settled.

        Cancelling stop() cancels the outstanding appends and their futures.
        """
        self._loop = None
        self._open.clear()
        tasks = [j.task for j in self._journals.values() if j.task is not None]
        await asyncio.gather(*tasks)

    async def __aenter__(self) -> AppendService:
        self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def write(self, journal: str, record: bytes) -> asyncio.Future[pb.Fragment]:
        """Queue `record` for `journal`; the future resolves to its committed span."""
        batch = self._batch_for(journal)
        buf = batch.buf
        batch.starts.append(len(buf))
        buf += record
        batch.ends.append(len(buf))
        future: asyncio.Future[pb.Fragment] = batch.handle.future.get_loop().create_future()
        batch.futures.append(future)
        return future

    def enqueue(self, journal: str, record: bytes) -> AsyncAppend:
        """Queue `record` for `journal`; the returned batch resolves to the batch's commit."""
        # The common case inline, as it is per record: an open batch with room.
        batch = self._open.get(journal)
        if batch is None or len(batch.buf) >= self._max_batch:
            batch = self._batch_for(journal)
        batch.buf += record
        return batch.handle

    def pending_except(self, journal: str | None) -> list[AsyncAppend]:
        """The last unsettled batch of every journal but `journal`.

        Batches of a journal are appended in order, so awaiting the last one
        waits for all of them: a transaction's commit waits on these (all its
        appends except those to its own recovery log).
        """
        pending = []
        for name, state in self._journals.items():
            if name != journal and (handle := state.last_pending()) is not None:
                pending.append(handle)
        return pending

    def _batch_for(self, journal: str) -> _Batch:
        """The open batch of `journal`, starting its sender if it is idle."""
        loop = self._loop
        if loop is None:
            raise GazetteError("AppendService is not running: call start() first")
        state = self._journals.get(journal)
        if state is None:
            state = self._journals[journal] = _Journal(journal)
        batches = state.batches
        batch = batches[-1] if batches else None
        if batch is None or len(batch.buf) >= self._max_batch:
            batch = self._open[journal] = _Batch(loop)
            batches.append(batch)
        if state.task is None:
            state.task = loop.create_task(self._drain(state))
        return batch

    async def _drain(self, state: _Journal) -> None:
        """Send the journal's batches one after another until none is left."""
        batch: _Batch | None = None
        try:
            while state.batches:
                # Taken off the queue so that new records start the next batch.
                batch = state.inflight = state.batches.popleft()
                if self._open.get(state.name) is batch:
                    del self._open[state.name]
                await self._commit(state.name, batch)
                batch = state.inflight = None
        except BaseException as exc:
            if batch is not None:
                _fail(batch, exc)
            self._open.pop(state.name, None)
            while state.batches:
                _fail(state.batches.popleft(), exc)
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            state.task = state.inflight = None

    async def _commit(self, journal: str, batch: _Batch) -> None:
        """Append one batch, retrying retriable failures; settle its futures.

        A batch that fails for good raises, which fails every batch queued
        behind it too: whoever awaits the last batch of a journal (a commit
        waiting on its transaction's appends) must see an earlier one fail.
        """
        backoff = Backoff()
        while True:
            try:
                resp = await append(self._stub, journal, batch.buf, timeout=self._timeout,
                                    check_registers=self._check_registers)
            except GazetteError as err:
                if err.retriable:
                    await backoff.wait()
                    continue
                raise
            if resp.commit.end - resp.commit.begin != len(batch.buf):
                raise GazetteError(_mismatch(journal, resp.commit, len(batch.buf)))
            _resolve(batch, resp.commit)
            return


def _mismatch(journal: str, commit: pb.Fragment, size: int) -> str:
    return (
        f"Append to {journal!r}: broker committed [{commit.begin}, {commit.end}) "
        f"for a batch of {size} bytes"
    )
