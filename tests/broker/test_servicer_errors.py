"""How failures map to gRPC statuses: retriable ones so that clients retry."""

from __future__ import annotations

import asyncio
import errno
from typing import Any

import grpc
import pytest
from aetcd import exceptions as etcd_errors
from grpc.aio import AioRpcError, Metadata

from gazette_core.broker import servicer
from gazette_core.broker.append_stream import AppendStreamError
from gazette_core.broker.pipeline import PipelineError
from gazette_core.broker.proxy import ProxyError
from gazette_core.server.rpc_abort import AbortOnError
from gazette_core.server.statuses import MAX_MESSAGE, abort, status_of

Code = grpc.StatusCode


class Aborted(Exception):
    pass


class RecordingContext:
    def __init__(self, done: bool = False) -> None:
        self.code: grpc.StatusCode | None = None
        self.details = ""
        self.over = done

    def done(self) -> bool:
        return self.over

    async def abort(self, code: grpc.StatusCode, details: str) -> Any:
        self.code, self.details = code, details
        raise Aborted


@pytest.mark.parametrize(("error", "code"), [
    (ProxyError("peer went away"), Code.UNAVAILABLE),
    (PipelineError("replica failed"), Code.UNAVAILABLE),
    (AppendStreamError("unexpected EOF"), Code.UNKNOWN),
])
async def test_abort_code_follows_whether_the_error_is_retriable(
        error: Exception, code: grpc.StatusCode) -> None:
    context = RecordingContext()
    with pytest.raises(Aborted):
        async with AbortOnError(context, servicer.APPEND):  # type: ignore[arg-type]
            raise error
    assert (context.code, context.details) == (code, str(error))


@pytest.mark.parametrize("error", [
    AppendStreamError("unexpected EOF"),
    grpc.aio.InternalError("sending the status failed"),  # the client went away meanwhile
])
async def test_an_rpc_that_is_over_ends_quietly(
        error: Exception, caplog: pytest.LogCaptureFixture) -> None:
    context = RecordingContext(done=True)
    with pytest.raises(asyncio.CancelledError):
        await abort(context, error, "/protocol.Journal/Append")  # type: ignore[arg-type]
    assert (context.code, caplog.records) == (None, [])


def rpc_error(code: grpc.StatusCode, details: str) -> AioRpcError:
    return AioRpcError(code, Metadata(), Metadata(), details=details)


@pytest.mark.parametrize(("error", "status"), [
    (rpc_error(Code.UNAVAILABLE, "failed to connect\nto all addresses"),
     (Code.UNAVAILABLE, "backing call failed with UNAVAILABLE: failed to connect to all "
                        "addresses")),
    (rpc_error(Code.DEADLINE_EXCEEDED, "slow"),
     (Code.UNAVAILABLE, "backing call failed with DEADLINE_EXCEEDED: slow")),
    (rpc_error(Code.INVALID_ARGUMENT, "etcdserver: duplicate key given in txn request"),
     (Code.INVALID_ARGUMENT, "backing call failed with INVALID_ARGUMENT: etcdserver: "
                             "duplicate key given in txn request")),
    (etcd_errors.ConnectionFailedError("connection refused"),
     (Code.UNAVAILABLE, "etcd is unavailable: connection refused")),
    (etcd_errors.ConnectionTimeoutError("timed out"),
     (Code.UNAVAILABLE, "etcd is unavailable: timed out")),
    (OSError(errno.ENOSPC, "No space left on device", "/spool"),
     (Code.RESOURCE_EXHAUSTED, "No space left on device: /spool")),
    (OSError(errno.EDQUOT, "Disk quota exceeded"),
     (Code.RESOURCE_EXHAUSTED, "Disk quota exceeded")),
])
def test_backing_failures_keep_whether_a_retry_helps(
        error: Exception, status: tuple[grpc.StatusCode, str],
        caplog: pytest.LogCaptureFixture) -> None:
    assert status_of(error, "/protocol.Journal/Apply") == status
    assert [r.exc_info for r in caplog.records] == [None]  # one line, no traceback


@pytest.mark.parametrize("error", [
    rpc_error(Code.PERMISSION_DENIED, "etcdserver: permission denied"),
    OSError(errno.EIO, "Input/output error"),
    RuntimeError("<class 'x'>"),
])
def test_anything_else_is_internal_and_logged_with_its_traceback(
        error: Exception, caplog: pytest.LogCaptureFixture) -> None:
    assert status_of(error, "/protocol.Journal/Read") == (
        Code.INTERNAL, "internal error serving /protocol.Journal/Read (see the broker log)")
    assert [r.exc_info is not None for r in caplog.records] == [True]


def test_messages_are_one_bounded_line() -> None:
    code, message = status_of(ProxyError("a\n" + "b" * 5000), "/protocol.Journal/Append")
    assert code == Code.UNAVAILABLE
    assert "\n" not in message and message.startswith("a bbb")
    assert message.endswith("... (5002 bytes)") and len(message) < MAX_MESSAGE + 20
