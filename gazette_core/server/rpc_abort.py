"""Ending an RPC whose handler failed: the block every servicer method's body runs in.

`statuses` maps a failure to the status a client sees; this is the one
place a handler's exception reaches it. The broker's Journal servicer and
the consumer's Shard servicer run each method's body in
`async with AbortOnError(context, METHOD):`, so whatever the body raises
ends the RPC with its status. A status a handler set itself
(grpc.aio.AbortError) and a cancellation pass through untouched.
"""

from __future__ import annotations

from types import TracebackType

import grpc

from gazette_core.errors import CodedError, ValidationError
from gazette_core.server.statuses import Context, abort


class AbortOnError:
    """Aborts the RPC of `context` with the status answering whatever its block raises.

    With `invalid_argument`, a ValidationError is answered INVALID_ARGUMENT
    (as the Shard service answers a request that fails validation) rather
    than UNKNOWN (as Go brokers answer it).
    """

    def __init__(self, context: Context, method: str, *, invalid_argument: bool = False
                 ) -> None:
        self._context = context
        self._method = method
        self._invalid_argument = invalid_argument

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, typ: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        # Only Exceptions: CancelledError and GeneratorExit end the handler as they are.
        if not isinstance(exc, Exception) or isinstance(exc, grpc.aio.AbortError):
            return  # nothing raised, or the status is set already
        if self._invalid_argument and isinstance(exc, ValidationError):
            exc = CodedError("INVALID_ARGUMENT", str(exc))
        await abort(self._context, exc, self._method)
