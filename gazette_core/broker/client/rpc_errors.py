"""Translation of gRPC failures and protocol statuses into the library's typed errors.

Callers of the client never see `grpc.aio.AioRpcError`: transport trouble
becomes a retriable `UnavailableError`, anything else an `RPCError`
carrying the broker's text.
"""

from __future__ import annotations

import grpc

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import GazetteError, RPCError, StatusError, UnavailableError

# CANCELLED reaches a client only when the server side cancelled the RPC (a
# broker shutting down cuts its streams); our own cancellation surfaces as
# asyncio.CancelledError instead. Either way a retry against the cluster helps.
TRANSIENT = frozenset(
    {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED, grpc.StatusCode.DEADLINE_EXCEEDED}
)


def from_rpc_error(err: grpc.aio.AioRpcError, what: str) -> GazetteError:
    """The typed error for a failed gRPC call; `what` names the operation for the message."""
    code = err.code()
    details = err.details() or ""
    if code in TRANSIENT:
        suffix = f": {details}" if details else ""
        return UnavailableError(f"{what}: {code.name}{suffix}")
    return RPCError(code.name, f"{what}: {details}" if details else what)


def check_status(status: int, journal: str = "", detail: str = "") -> None:
    """Raise StatusError unless `status` is OK."""
    if status != pb.OK:
        raise StatusError(status, detail, journal)
