"""The gRPC status a server answers for each failure of a handler.

Library errors carry their own code: UNKNOWN with the error text for
validation failures and protocol misuse (as Go brokers answer), UNAVAILABLE
when a retry may help, or the code they name. A failed call to a backing
service (Etcd, a peer) keeps a code that says whether a retry helps, a full
disk is RESOURCE_EXHAUSTED, and anything else is INTERNAL with a short message:
its traceback goes to the log once, never to the client. Every message is one
line, short enough for gRPC's metadata limit.
"""

from __future__ import annotations

import asyncio
import errno
import logging
from typing import Any, TypeAlias

import grpc
from aetcd import exceptions as etcd_errors

from gazette_core.broker.client import rpc_errors
from gazette_core.errors import CodedError, GazetteError, truncated

Context: TypeAlias = "grpc.aio.ServicerContext[Any, Any]"
log = logging.getLogger(__name__)

# Well under gRPC's 8 KiB metadata limit, with room for other trailers.
MAX_MESSAGE = 1024
# Codes of a backing call that a retry may cure (the client library's own set);
# clients see UNAVAILABLE.
TRANSIENT = rpc_errors.TRANSIENT
# Codes of a backing call that describe the request itself, relayed as they are.
_RELAYED = frozenset(
    {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED,
     grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.OUT_OF_RANGE}
)
_DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


def one_line(message: str) -> str:
    """`message` on one line and cut to MAX_MESSAGE characters."""
    return truncated(" ".join(message.split()), MAX_MESSAGE)


def describe(exc: BaseException) -> str:
    """`exc` for a message: a failed call's code and details, never its multi-line repr."""
    if isinstance(exc, grpc.aio.AioRpcError):
        return one_line(f"{exc.code().name}: {exc.details() or ''}")
    return one_line(str(exc)) or "failed"


def backing_code(code: grpc.StatusCode) -> grpc.StatusCode:
    """The code to answer when a call to a backing service failed with `code`."""
    if code in TRANSIENT:
        return grpc.StatusCode.UNAVAILABLE
    return code if code in _RELAYED else grpc.StatusCode.INTERNAL


# What Etcd says when a transaction has too many operations (its --max-txn-ops,
# 128 by default), or its request too many bytes (its --max-request-bytes,
# 1.5 MiB by default; gRPC reports it as a message larger than the maximum).
_TOO_MANY_OPS = "too many operations in txn request"
_TOO_LARGE = "larger than max"


def etcd_apply_failure(exc: grpc.aio.AioRpcError, changes: int) -> CodedError:
    """The error answering an Apply whose transaction Etcd failed, saying which limit
    it passed, if any, and keeping whether a retry helps."""
    code, details = backing_code(exc.code()), exc.details() or exc.code().name
    if code == grpc.StatusCode.UNAVAILABLE:
        return CodedError(code.name, f"etcd is unavailable: {details}")
    hint = ""
    if _TOO_MANY_OPS in details:
        hint = " (split it into smaller Applies, e.g. with gazctl's --max-txn-size)"
    elif _TOO_LARGE in details:
        hint = (" (Etcd takes requests of at most its --max-request-bytes, 1.5 MiB by "
                "default: split the Apply, or make its specs or hints smaller)")
    return CodedError(code.name, f"Etcd refused the Apply of {changes} changes: {details}{hint}")


def status_of(exc: Exception, method: str) -> tuple[grpc.StatusCode, str]:
    """The status and one-line message answering `exc`, raised serving `method`.

    Logs what an operator needs: nothing for the client's own mistakes, a
    line for trouble outside the broker, a traceback for anything unexpected.
    """
    code, message = _classify(exc)
    if isinstance(exc, GazetteError):
        pass  # raised on purpose, with a message meant for the client
    elif code == grpc.StatusCode.INTERNAL:
        log.error("%s failed", method, exc_info=exc)
        message = f"internal error serving {method} (see the broker log)"
    else:
        log.warning("%s failed: %s", method, one_line(message))
    return code, one_line(message)


def _classify(exc: Exception) -> tuple[grpc.StatusCode, str]:
    if isinstance(exc, GazetteError):
        named = getattr(exc, "grpc_code", None)
        if named is not None:
            return grpc.StatusCode[named], str(exc)
        unknown = grpc.StatusCode.UNAVAILABLE if exc.retriable else grpc.StatusCode.UNKNOWN
        return unknown, str(exc)
    if isinstance(exc, grpc.aio.AioRpcError):
        code = backing_code(exc.code())
        return code, f"backing call failed with {describe(exc)}"
    if isinstance(exc, (etcd_errors.ConnectionFailedError, etcd_errors.ConnectionTimeoutError)):
        return grpc.StatusCode.UNAVAILABLE, f"etcd is unavailable: {exc}"
    if isinstance(exc, OSError) and exc.errno in _DISK_FULL:
        where = f": {exc.filename}" if exc.filename else ""
        return grpc.StatusCode.RESOURCE_EXHAUSTED, f"{exc.strerror}{where}"
    return grpc.StatusCode.INTERNAL, ""


async def abort(context: Context, exc: Exception, method: str) -> None:
    """End the RPC with the status answering `exc` (raises, as `context.abort` does).

    Once the RPC is over (the client cancelled, or its deadline passed) no
    status can reach the client: the handler ends as cancelled, which gRPC
    takes quietly, and only a failure of the broker itself is logged.
    """
    if context.done() and isinstance(exc, (GazetteError, grpc.aio.BaseError)):
        raise asyncio.CancelledError
    code, message = status_of(exc, method)
    if context.done():
        raise asyncio.CancelledError
    await context.abort(code, message)
