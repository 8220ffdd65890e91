"""LogReader: a buffered, seekable read of a recovery log for the player.

The player reads a recovery log frame by frame, skips dead regions by seeking
and throws away payloads it does not apply. A seek that lands inside the
bytes already buffered just drops them: restarting the Read RPC for every
small skip would make write-ahead-log databases (many small, close writes)
pay a round trip per op.

Whether a read blocks is decided by where it starts relative to the write
head learned from the log's append barrier: below the head the data is known
to exist, so the read blocks (and is bounded at that head); at or past it the
read is non-blocking, so reaching the head surfaces as `AtHead`. A `tail`
read blocks past the head too, until `interrupt()` is called.

Content removed from the log (an offset jump) moves the reader forward; the
player is told through `on_jump` and may refuse the jump by raising.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from gazette_core.broker.client.retry_reader import RetryReader
from gazette_core.broker.protocol import protocol_pb2 as pb

if TYPE_CHECKING:
    from gazette_core.broker.client.routing import JournalClient


class AtHead(Exception):
    """A non-blocking read reached the log's write head (now `write_head`)."""

    def __init__(self, write_head: int) -> None:
        super().__init__(f"reached the write head {write_head}")
        self.write_head = write_head


class Jumped(Exception):
    """The log's content jumped forward: buffered bytes were dropped, restart the frame."""


JumpHook = Callable[[str, int, int], None]


class LogReader:
    """Buffered reads of one log at a time, from `offset`.

    `head` is the log's known write head (from a barrier); `tail` makes reads
    at or past it block. `bytes_read` counts content received from brokers.
    """

    def __init__(self, client: JournalClient, log: str, offset: int, head: int,
                 on_jump: JumpHook | None = None) -> None:
        self._client = client
        self.log = log
        self.head = head
        self.tail = False
        self.bytes_read = 0
        self._on_jump = on_jump
        self._buf = bytearray()
        self._buf_offset = offset  # Journal offset of _buf[0].
        self._rr: RetryReader | None = None
        self._rr_blocking = False
        self._pending: asyncio.Task[bytes] | None = None
        self._interrupt = asyncio.Event()

    @property
    def offset(self) -> int:
        """The journal offset of the next unconsumed byte."""
        return self._buf_offset

    def buffered(self) -> int:
        return len(self._buf)

    def seek(self, log: str, offset: int) -> None:
        """Move to `offset` of `log`, keeping the open read when the target is buffered."""
        end = self._buf_offset + len(self._buf)
        if log == self.log and self._buf_offset <= offset <= end:
            del self._buf[: offset - self._buf_offset]
            self._buf_offset = offset
            return
        self._restart()
        self.log = log
        self._buf.clear()
        self._buf_offset = offset

    def interrupt(self) -> None:
        """Wake a blocking tail read: the caller wants to re-check the head."""
        self._interrupt.set()

    async def peek(self, n: int) -> bytes:
        """At least `n` buffered bytes at the current offset (returns exactly `n`)."""
        while len(self._buf) < n:
            await self._fill()
        return bytes(self._buf[:n])

    def peek_buffered(self) -> memoryview:
        return memoryview(self._buf)

    def consume(self, n: int) -> None:
        assert n <= len(self._buf)
        del self._buf[:n]
        self._buf_offset += n

    async def fill(self) -> None:
        """Receive at least one more chunk into the buffer."""
        await self._fill()

    async def _fill(self) -> None:
        while True:
            end = self._buf_offset + len(self._buf)
            blocking = self.tail or end < self.head
            if self._rr is None or blocking != self._rr_blocking:
                self._open(end, blocking)
            assert self._rr is not None
            chunk = await self._next_chunk(self._rr)
            if chunk is not None:
                break
        start = self._rr.offset - len(chunk)
        self.bytes_read += len(chunk)
        if start != end:
            # Content between `end` and `start` is gone from the log.
            if self._on_jump is not None:
                self._on_jump(self.log, end, start)
            self._buf.clear()
            self._buf_offset = start
            self._buf += chunk
            raise Jumped()
        self._buf += chunk

    async def _next_chunk(self, rr: RetryReader) -> bytes | None:
        """The next chunk; None when the read must be reopened (interrupted, or a
        blocking read bounded at the head reached it). Raises AtHead."""
        if self._pending is None:
            self._pending = asyncio.ensure_future(anext(rr))
        interrupted = asyncio.ensure_future(self._interrupt.wait())
        try:
            await asyncio.wait({self._pending, interrupted},
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            interrupted.cancel()
        self._interrupt.clear()
        if not self._pending.done():
            self._restart()
            return None
        pending, self._pending = self._pending, None
        try:
            return pending.result()
        except StopAsyncIteration:
            pass
        head = rr.write_head
        self._restart()
        if head is None:
            return None
        self.head = max(self.head, head)
        raise AtHead(self.head)

    def _open(self, offset: int, blocking: bool) -> RetryReader:
        self._restart()
        request = pb.ReadRequest(journal=self.log, offset=offset, block=blocking)
        if blocking and not self.tail:
            request.end_offset = self.head
        self._rr = RetryReader(self._client, request)
        self._rr_blocking = blocking
        return self._rr

    def _restart(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None
        if self._rr is not None:
            self._rr.close()
            self._rr = None

    def close(self) -> None:
        self._restart()
