"""How stores talk to a recovery-log recorder, and how they do so from a worker thread.

Stores see the layer below only through `Recording` (a `Recorder` satisfies it). A
Recording lives on its event loop: its record calls must run on that loop, in the order
the store made them. Stores do their file I/O on a worker thread so a shard never stalls
the loop, so they wrap the recording in `LoopRecording`, which posts every call to the loop
with `loop.call_soon_threadsafe`. Callbacks posted from one thread run in posting order,
which keeps the recorded ops in the order the files were changed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Protocol

from gazette_core.tasks import copy_outcome


class FileRecording(Protocol):
    """One open file (Fnode) of a recording."""

    def write_at(self, data: bytes, offset: int) -> None: ...


class Recording(Protocol):
    """The record calls a store makes; paths are absolute, under the recorded directory."""

    def open_file(self, path: str, *, create: bool, truncate: bool) -> FileRecording: ...

    def remove(self, path: str) -> None: ...

    def link(self, src: str, dst: str) -> None: ...

    def rename(self, src: str, dst: str) -> None: ...

    def barrier(self, wait_for: Awaitable[None] | None = None) -> Awaitable[None]: ...


class RecordingBrokenError(Exception):
    """A record call failed on the loop; the recording is unusable from then on."""


class _LoopFile:
    """A FileRecording whose target is bound on the loop once its open has run there."""

    def __init__(self, owner: LoopRecording) -> None:
        self._owner = owner
        self.target: FileRecording | None = None

    def write_at(self, data: bytes, offset: int) -> None:
        self._owner.post(lambda: self._bound().write_at(data, offset))

    def _bound(self) -> FileRecording:
        assert self.target is not None, "write before its open ran"
        return self.target


class LoopRecording:
    """A Recording callable from any thread, forwarding each call to `target` on `loop`.

    Nothing blocks: calls are queued on the loop. The first error a forwarded call raises
    is kept, and every later barrier fails with it, so a store learns of it at its next
    commit rather than never.
    """

    def __init__(self, target: Recording, loop: asyncio.AbstractEventLoop) -> None:
        self._target = target
        self._loop = loop
        self.error: BaseException | None = None

    def post(self, call: Callable[[], None]) -> None:
        """Run `call` on the loop after every call posted before it."""
        self._loop.call_soon_threadsafe(self._run, call)

    def _run(self, call: Callable[[], None]) -> None:
        if self.error is not None:
            return
        try:
            call()
        except Exception as exc:
            self.error = exc

    def open_file(self, path: str, *, create: bool, truncate: bool) -> FileRecording:
        file = _LoopFile(self)

        def bind() -> None:
            file.target = self._target.open_file(path, create=create, truncate=truncate)

        self.post(bind)
        return file

    def remove(self, path: str) -> None:
        self.post(lambda: self._target.remove(path))

    def link(self, src: str, dst: str) -> None:
        self.post(lambda: self._target.link(src, dst))

    def rename(self, src: str, dst: str) -> None:
        self.post(lambda: self._target.rename(src, dst))

    def barrier(self, wait_for: Awaitable[None] | None = None) -> asyncio.Future[None]:
        """A future of the loop, resolved with the target's barrier (awaited on the loop)."""
        done: asyncio.Future[None] = asyncio.Future(loop=self._loop)
        self._loop.call_soon_threadsafe(self._start_barrier, wait_for, done)
        return done

    def _start_barrier(
        self, wait_for: Awaitable[None] | None, done: asyncio.Future[None]
    ) -> None:
        if self.error is not None:
            done.set_exception(RecordingBrokenError(f"recording failed: {self.error}"))
            return
        try:
            inner = asyncio.ensure_future(self._target.barrier(wait_for), loop=self._loop)
        except Exception as exc:
            self.error = exc
            done.set_exception(exc)
            return
        inner.add_done_callback(lambda f: copy_outcome(f, done))
