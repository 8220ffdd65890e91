"""The input of `gazctl journals append`, as chunks of whatever has arrived so far.

A follower like `tail -F log | gazctl journals append -f lines` writes a few
bytes now and then and never ends, so input is read as it becomes available,
never in fixed-size blocks that wait to fill. Pipes, FIFOs and terminals are
watched by the event loop (a read happens only once data is there); regular
files and in-memory streams, which never make a reader wait for a writer, are
read in a worker thread.

The first Ctrl-C (which `gazctl.interrupts`, like `asyncio.run`, turns into a
cancellation of the main task) ends the input instead of the command: what is
already in the pipe is drained without waiting, `interrupted` is set, and the
caller flushes what it read. A second Ctrl-C exits at once.
"""

from __future__ import annotations

import asyncio
import io
import os
import select
from collections.abc import AsyncIterator
from typing import BinaryIO

CHUNK_BYTES = 1 << 16


class InputChunks:
    """Async iterator of non-empty chunks of `source`, each as soon as it can be read."""

    def __init__(self, source: BinaryIO) -> None:
        self._source = source
        self.interrupted = False
        self.stopped = False
        self._waiter: asyncio.Future[None] | None = None

    def stop(self) -> None:
        """End the input early (e.g. once an append failed); the current wait returns."""
        self.stopped = True
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[bytes]:
        fd = _watchable_fd(self._source)
        read = self._from_fd(fd) if fd is not None else self._from_thread()
        try:
            async for chunk in read:
                yield chunk
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            self.interrupted = True
            for chunk in _drain(fd):
                yield chunk

    async def _from_fd(self, fd: int) -> AsyncIterator[bytes]:
        loop = asyncio.get_running_loop()
        while not self.stopped:
            self._waiter = loop.create_future()
            loop.add_reader(fd, _wake, self._waiter)
            try:
                await self._waiter
            finally:
                loop.remove_reader(fd)
            if self.stopped:
                return
            # Readable: this read returns what is there without waiting for more.
            if not (chunk := os.read(fd, CHUNK_BYTES)):
                return
            yield chunk

    async def _from_thread(self) -> AsyncIterator[bytes]:
        loop = asyncio.get_running_loop()
        source = self._source
        read = source.read1 if hasattr(source, "read1") else source.read
        while not self.stopped and (chunk := await loop.run_in_executor(None, read,
                                                                         CHUNK_BYTES)):
            yield chunk


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _watchable_fd(source: BinaryIO) -> int | None:
    """The descriptor of a pipe, FIFO, socket or terminal source; None for anything else."""
    try:
        fd = source.fileno()
    except (OSError, ValueError, io.UnsupportedOperation):
        return None
    try:
        # epoll refuses regular files and most devices; those never block a reader.
        loop = asyncio.get_running_loop()
        loop.add_reader(fd, lambda: None)
        loop.remove_reader(fd)
    except (OSError, ValueError):
        return None
    return fd


def _drain(fd: int | None) -> list[bytes]:
    """What a pipe holds right now, read without waiting for more."""
    chunks: list[bytes] = []
    while fd is not None and select.select([fd], [], [], 0)[0]:
        if not (chunk := os.read(fd, CHUNK_BYTES)):
            break
        chunks.append(chunk)
    return chunks
