"""The status a request-streaming gRPC call really ended with.

When a server ends a call while its client is still writing (a refused
token, a full spool, an early answer), grpc.aio fails the pending write
with INTERNAL "Internal error from Core" and stores that status in place of
the one the server sent, if the failed write is processed after the server's
status (grpc/grpc#36066, present through grpcio 1.85). The caller then sees
INTERNAL where the server said UNAUTHENTICATED or RESOURCE_EXHAUSTED.

A StatusKeeper watches a call from its start: grpc.aio runs a call's done
callbacks each time it stores a status, so the keeper sees the server's
status before the write failure replaces it, and hands it back.
"""

from __future__ import annotations

import asyncio
from typing import Any

import grpc

# The details grpc.aio gives a write that failed because the call had ended.
CORE_INTERNAL = "Internal error from Core"
_CODES = {code.value[0]: code for code in grpc.StatusCode}


class StatusKeeper:
    """Remembers the status the server ended `call` with, surviving grpc.aio's overwrite."""

    def __init__(self, call: Any) -> None:
        self._code: grpc.StatusCode | None = None
        self._details = ""
        self._trailing: tuple[tuple[str, str | bytes], ...] = ()
        self._ended = asyncio.Event()
        watch = getattr(call, "add_done_callback", None)
        if watch is not None:  # a caller's wrapper of the call may not offer it
            watch(self._stored)

    def _stored(self, call: Any) -> None:
        if self._ended.is_set():
            return  # the server's status came first; later ones are the overwrite
        # The attribute is where grpc.aio stores a call's status; without it (a
        # later grpcio) there is nothing to keep, and callers see what grpc says.
        status = getattr(getattr(call, "_cython_call", None), "_status", None)
        if status is None or status.details() == CORE_INTERNAL:
            return  # a failed write: the server's status may still come
        self._code = _CODES.get(status.code(), grpc.StatusCode.UNKNOWN)
        self._details = status.details() or ""
        self._trailing = tuple(status.trailing_metadata() or ())
        self._ended.set()

    @property
    def code(self) -> grpc.StatusCode | None:
        """The server's status code, once the call has ended with one."""
        return self._code

    @property
    def details(self) -> str:
        return self._details

    async def wait(self) -> None:
        """Until the server's status is known (callers bound the wait)."""
        await self._ended.wait()

    def error(self, err: grpc.aio.AioRpcError) -> grpc.aio.AioRpcError:
        """`err`, or the server's own status where `err` is grpc.aio's stand-in for it."""
        if (self._code is None or err.code() != grpc.StatusCode.INTERNAL
                or err.details() != CORE_INTERNAL):
            return err
        return grpc.aio.AioRpcError(self._code, grpc.aio.Metadata(),
                                    grpc.aio.Metadata(*self._trailing), self._details)
