"""The recorder's ordered feed of appends into one log, gated by barriers.

Record calls may come from a store's worker thread, while the AppendService
lives on the event loop. Entries are put in recording order (the recorder
holds its lock) and handed to the service on the loop thread in the same
order. A barrier with a dependency stops the feed until the dependency
resolves, so everything recorded after it waits too, as
docs/design/recoverylog.md#the-recorder requires.

The first failed append fails the outbox for good: the recorder's FSM has
already moved past ops that never committed, so nothing it records later
can be trusted, and every later barrier reports the failure.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections import deque
from collections.abc import Awaitable
from dataclasses import dataclass

from gazette_core.broker.client.append_service import AppendService, AsyncAppend
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import AppendError, GazetteError


class RecorderError(GazetteError):
    """The recorder cannot go on: an append failed, or a record call was inconsistent."""


class RecorderFencedError(RecorderError):
    """Another author claimed the log (REGISTER_MISMATCH): this recorder is a zombie."""


@dataclass
class _Gate:
    """A barrier: an empty append that starts once `wait_for` (if any) resolved."""

    wait_for: Awaitable[None] | None
    future: asyncio.Future[None]


def _translate(exc: BaseException, log: str) -> BaseException:
    if isinstance(exc, AppendError) and exc.status == pb.REGISTER_MISMATCH:
        return RecorderFencedError(
            f"recording to {log!r} is fenced: another author holds the log's author register"
        )
    if isinstance(exc, GazetteError | asyncio.CancelledError):
        return exc
    return RecorderError(f"recording to {log!r} failed: {exc}")


class Outbox:
    """Appends of one recorder, fed in order to an AppendService on `loop`."""

    def __init__(self, loop: asyncio.AbstractEventLoop, service: AppendService, log: str,
                 write_head: int) -> None:
        self._loop = loop
        self._thread = threading.get_ident()
        self._service = service
        self._log = log
        self._entries: deque[bytes | _Gate] = deque()
        self._blocked = False
        self._scheduled = False
        self._last: AsyncAppend | None = None
        self.error: BaseException | None = None
        self._closed: BaseException | None = None
        # Raised opportunistically as commits complete; a lower bound of where
        # the next op will land, as Segment.first_offset needs.
        self.write_head = write_head

    def check(self) -> None:
        """Raise the failure that ended the outbox, or the reason it was closed."""
        if self.error is not None:
            raise self.error
        if self._closed is not None:
            raise self._closed

    def put(self, data: bytes) -> None:
        """Queue `data` as the next append content (callers serialize calls)."""
        self._entries.append(data)
        self._kick()

    def put_barrier(self, wait_for: Awaitable[None] | None) -> asyncio.Future[None]:
        """Queue a barrier; its future resolves once everything before it committed."""
        future: asyncio.Future[None] = self._loop.create_future()
        if self._closed is not None:
            self._loop.call_soon_threadsafe(_settle, future, self._closed)
            return future
        self._entries.append(_Gate(wait_for, future))
        self._kick()
        return future

    def close(self, reason: BaseException) -> None:
        """Refuse later entries with `reason`; those already queued still go out."""
        self._closed = reason

    def _kick(self) -> None:
        if threading.get_ident() == self._thread:
            self._drain()
        elif not self._scheduled:
            self._scheduled = True
            self._loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:
        """Hand queued entries to the service, in order, until a gate blocks (loop thread)."""
        self._scheduled = False
        while self._entries and not self._blocked:
            entry = self._entries.popleft()
            if self.error is not None:
                if isinstance(entry, _Gate):
                    _settle(entry.future, self.error)
                continue
            if isinstance(entry, bytes):
                self._watch(self._service.enqueue(self._log, entry))
            elif entry.wait_for is None:
                self._close_gate(entry)
            else:
                self._blocked = True
                dependency = asyncio.ensure_future(entry.wait_for)
                dependency.add_done_callback(functools.partial(self._unblock, entry))

    def _unblock(self, gate: _Gate, dependency: asyncio.Future[None]) -> None:
        self._blocked = False
        if dependency.cancelled():
            self._fail(RecorderError(f"a barrier's dependency on {self._log!r} was cancelled"))
        elif (exc := dependency.exception()) is not None:
            self._fail(exc)
        if self.error is None:
            self._close_gate(gate)
        else:
            _settle(gate.future, self.error)
        self._drain()

    def _close_gate(self, gate: _Gate) -> None:
        handle = self._service.enqueue(self._log, b"")
        self._watch(handle)
        handle.future.add_done_callback(lambda _: _settle(gate.future, self.error))

    def _watch(self, handle: AsyncAppend) -> None:
        """Follow each batch once: move the write head, or record the first failure."""
        if handle is not self._last:
            self._last = handle
            handle.future.add_done_callback(self._on_commit)

    def _on_commit(self, done: asyncio.Future[pb.Fragment]) -> None:
        if done.cancelled():
            self._fail(RecorderError(f"recording to {self._log!r} was cancelled"))
        elif (exc := done.exception()) is not None:
            self._fail(_translate(exc, self._log))
        else:
            self.write_head = max(self.write_head, done.result().end)

    def _fail(self, exc: BaseException) -> None:
        if self.error is None:
            self.error = exc


def _settle(future: asyncio.Future[None], error: BaseException | None) -> None:
    if future.done():
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)
        future.exception()  # its owner may have gone (an aborted shard): not "never retrieved"
