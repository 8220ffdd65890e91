"""gRPC failures become typed, retriable-or-not library errors."""

from __future__ import annotations

import grpc

from gazette_core.broker.client.rpc_errors import from_rpc_error
from gazette_core.errors import RPCError, UnavailableError


def rpc_error(code: grpc.StatusCode, details: str) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details)


def test_transport_failures_are_retriable_unavailable_errors() -> None:
    for code in (
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.CANCELLED,
        grpc.StatusCode.DEADLINE_EXCEEDED,
    ):
        err = from_rpc_error(rpc_error(code, "gone"), "Read of 'a/j'")
        assert isinstance(err, UnavailableError)
        assert err.retriable is True
        assert str(err) == f"Read of 'a/j': {code.name}: gone"


def test_other_failures_are_rpc_errors_with_the_broker_text() -> None:
    err = from_rpc_error(
        rpc_error(grpc.StatusCode.UNKNOWN, "Journal: must be a clean path"), "Append to 'a//j'"
    )
    assert isinstance(err, RPCError)
    assert err.retriable is False
    assert (err.code, err.details) == ("UNKNOWN", "Append to 'a//j': Journal: must be a clean path")
    assert str(err) == "UNKNOWN: Append to 'a//j': Journal: must be a clean path"
