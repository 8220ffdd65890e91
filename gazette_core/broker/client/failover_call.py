"""A streaming call of a failover channel, opened on the endpoint current when first used.

gRPC creates a stream's call object synchronously, before any endpoint could
be checked; this stand-in waits for the failover channel's pick instead, then
behaves as the call it opened. A server stream (one request, `resend`) that
fails before its first message because its endpoint is down is opened again
on the endpoint picked next, so the caller sees one working stream.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Generator
from typing import TYPE_CHECKING, Any

import grpc

if TYPE_CHECKING:
    from gazette_core.broker.client.failover import FailoverChannel


class Deadline:
    """Seconds left of a timeout (None: no timeout), called for each attempt."""

    def __init__(self, timeout: float | None) -> None:
        self._end = None if timeout is None else asyncio.get_running_loop().time() + timeout

    def __call__(self) -> float | None:
        if self._end is None:
            return None
        return max(self._end - asyncio.get_running_loop().time(), 0.0)


class StreamCall:
    """The call of one streaming RPC; `opener(channel)` is that channel's multi-callable."""

    def __init__(self, owner: FailoverChannel, opener: Callable[[grpc.aio.Channel], Any],
                 args: tuple[Any, ...], options: dict[str, Any], timeout: float | None,
                 resend: bool) -> None:
        self._owner = owner
        self._opener = opener
        self._args, self._options = args, options
        self._left = Deadline(timeout)
        self._resend = resend
        self._tries = len(owner.endpoints)
        self._call: Any = None
        self._index = -1
        self._cancelled = False
        self._received = False

    async def _opened(self) -> Any:
        if self._call is None:
            if self._cancelled:
                raise asyncio.CancelledError
            self._index = await self._owner.pick(self._left())
            multi_callable = self._opener(self._owner.channel_of(self._index))
            self._call = multi_callable(*self._args, timeout=self._left(), **self._options)
            self._tries -= 1
        return self._call

    async def _failed(self, err: grpc.aio.AioRpcError) -> bool:
        """Note the failure; True when the stream was opened again elsewhere."""
        self._owner.failed(self._index, err)
        if not (self._resend and not self._received and self._tries
                and await self._owner.moved_on(self._index, err, self._left())):
            return False
        self._call = None
        return True

    async def read(self) -> Any:
        while True:
            call = await self._opened()
            try:
                message = await call.read()
            except grpc.aio.AioRpcError as err:
                if await self._failed(err):
                    continue
                raise
            if not self._received:
                self._received = True
                self._owner.answered(self._index)
            return message

    async def __aiter__(self) -> AsyncIterator[Any]:
        while (message := await self.read()) is not grpc.aio.EOF:
            yield message

    async def _run(self, operation: Callable[[Any], Any]) -> Any:
        call = await self._opened()
        try:
            return await operation(call)
        except grpc.aio.AioRpcError as err:
            self._owner.failed(self._index, err)
            raise

    async def write(self, request: Any) -> None:
        await self._run(lambda call: call.write(request))

    async def done_writing(self) -> None:
        await self._run(lambda call: call.done_writing())

    def __await__(self) -> Generator[Any, None, Any]:
        return self._run(lambda call: call).__await__()

    def cancel(self) -> bool:
        if self._call is None:
            self._cancelled = True
            return True
        return bool(self._call.cancel())

    def cancelled(self) -> bool:
        return self._cancelled if self._call is None else bool(self._call.cancelled())

    def done(self) -> bool:
        return self._cancelled if self._call is None else bool(self._call.done())

    async def code(self) -> grpc.StatusCode:
        return await self._run(lambda call: call.code())  # type: ignore[no-any-return]

    async def details(self) -> str:
        return await self._run(lambda call: call.details())  # type: ignore[no-any-return]

    async def initial_metadata(self) -> Any:
        return await self._run(lambda call: call.initial_metadata())

    async def trailing_metadata(self) -> Any:
        return await self._run(lambda call: call.trailing_metadata())
