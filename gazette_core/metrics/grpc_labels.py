"""Label values of the gRPC metrics, spelled as go-grpc-prometheus spells them.

`grpc_type` is the method's shape (`unary`, `client_stream`,
`server_stream`, `bidi_stream`), `grpc_service` and `grpc_method` split its
full name (`/protocol.Journal/Append`), and `grpc_code` is Go's name of the
status code (`OK`, `Canceled`, `NotFound`, ...).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

from gazette_core.metrics.families import Cell

TYPE_LABELS = ("grpc_type", "grpc_service", "grpc_method")
HANDLED_LABELS = (*TYPE_LABELS, "grpc_code")
UNARY, CLIENT_STREAM, SERVER_STREAM, BIDI_STREAM = (
    "unary", "client_stream", "server_stream", "bidi_stream")

# Go's codes.Code.String() of each status code.
GO_CODES: dict[grpc.StatusCode, str] = {
    grpc.StatusCode.OK: "OK",
    grpc.StatusCode.CANCELLED: "Canceled",
    grpc.StatusCode.UNKNOWN: "Unknown",
    grpc.StatusCode.INVALID_ARGUMENT: "InvalidArgument",
    grpc.StatusCode.DEADLINE_EXCEEDED: "DeadlineExceeded",
    grpc.StatusCode.NOT_FOUND: "NotFound",
    grpc.StatusCode.ALREADY_EXISTS: "AlreadyExists",
    grpc.StatusCode.PERMISSION_DENIED: "PermissionDenied",
    grpc.StatusCode.RESOURCE_EXHAUSTED: "ResourceExhausted",
    grpc.StatusCode.FAILED_PRECONDITION: "FailedPrecondition",
    grpc.StatusCode.ABORTED: "Aborted",
    grpc.StatusCode.OUT_OF_RANGE: "OutOfRange",
    grpc.StatusCode.UNIMPLEMENTED: "Unimplemented",
    grpc.StatusCode.INTERNAL: "Internal",
    grpc.StatusCode.UNAVAILABLE: "Unavailable",
    grpc.StatusCode.DATA_LOSS: "DataLoss",
    grpc.StatusCode.UNAUTHENTICATED: "Unauthenticated",
}
# The same, by the code's number (what a finished call's raw status holds).
GO_CODES_BY_NUMBER: dict[int, str] = {code.value[0]: name for code, name in GO_CODES.items()}


def split_method(full: str) -> tuple[str, str]:
    """(service, method) of `/package.Service/Method`."""
    service, _, method = full.lstrip("/").rpartition("/")
    return service, method


def call_type(request_streaming: bool, response_streaming: bool) -> str:
    if request_streaming:
        return BIDI_STREAM if response_streaming else CLIENT_STREAM
    return SERVER_STREAM if response_streaming else UNARY


Codec = Callable[[Any], Any]


def counting(codec: Codec | None, cell: Cell) -> Codec:
    """`codec` (a message serializer or deserializer; None: bytes as they are) counting
    each message it handles into `cell`: gRPC calls it once per message sent or received."""
    if codec is None:
        def passing(data: Any) -> Any:
            cell.value += 1
            return data
        return passing

    def counted(message: Any) -> Any:
        cell.value += 1
        return codec(message)
    return counted
