"""Typed errors of the library, each mapping to a protocol Status or a bad input.

Library code raises these; only `gazctl` prints them and picks exit codes.
"""

from __future__ import annotations

from typing import cast

from gazette_core.broker.protocol import protocol_pb2 as pb

# Statuses a client may retry after a short back-off: the cluster is moving
# (routes, assignments) and will settle without operator action.
RETRIABLE_STATUSES = frozenset(
    {
        pb.NO_JOURNAL_PRIMARY_BROKER,
        pb.NOT_JOURNAL_PRIMARY_BROKER,
        pb.INSUFFICIENT_JOURNAL_BROKERS,
        pb.NOT_JOURNAL_BROKER,
        pb.WRONG_ROUTE,
        pb.FRAGMENT_STORE_UNHEALTHY,
    }
)


# Inputs echoed in messages are cut to this many characters: a whole 10 KB
# journal name would push a gRPC status past the metadata limit.
ECHO_LIMIT = 100


def elision(text: str) -> str:
    """What follows the shown part of a cut `text`: its whole size."""
    return f"... ({len(text.encode('utf-8', 'replace'))} bytes)"


def truncated(text: str, limit: int = ECHO_LIMIT) -> str:
    """`text`, or its first `limit` characters and its size, for echoing in messages."""
    return text if len(text) <= limit else text[:limit] + elision(text)


def shown(value: str, limit: int = ECHO_LIMIT) -> str:
    """`value` as repr() shows it, cut short if long, for echoing in messages."""
    return repr(value) if len(value) <= limit else repr(value[:limit]) + elision(value)


class GazetteError(Exception):
    """Base of every error the library raises on purpose."""

    retriable: bool = False
    # How an operator might fix it; gazctl prints it after the error.
    hint: str = ""


class ValidationError(GazetteError, ValueError):
    """A message or spec failed validation; `path` is the dotted field path."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}" if path else reason)

    def prefixed(self, prefix: str) -> ValidationError:
        """The same error with `prefix` prepended to its path."""
        path = f"{prefix}.{self.path}" if self.path and not self.path.startswith("[") else (
            f"{prefix}{self.path}"
        )
        return ValidationError(path, self.reason)


class StatusError(GazetteError):
    """A broker answered with a non-OK protocol Status."""

    def __init__(self, status: int, detail: str = "", journal: str = "") -> None:
        self.status = status
        self.detail = detail
        self.journal = journal
        self.retriable = status in RETRIABLE_STATUSES
        known = status in pb.Status.values()
        name = pb.Status.Name(cast("pb.Status.ValueType", status)) if known else str(status)
        where = f" (journal {journal!r})" if journal else ""
        super().__init__(f"{name}{where}" + (f": {detail}" if detail else ""))


class CodedError(GazetteError):
    """A failure a broker answers with gRPC code `grpc_code` (a StatusCode name)."""

    def __init__(self, grpc_code: str, message: str) -> None:
        self.grpc_code = grpc_code
        self.retriable = grpc_code == "UNAVAILABLE"
        super().__init__(message)


class UnavailableError(GazetteError):
    """A broker or etcd could not be reached within the deadline."""

    retriable = True


class OffsetNotYetAvailable(StatusError):
    """A non-blocking read reached the write head: nothing is readable at `offset` yet."""

    def __init__(self, journal: str = "", offset: int = 0, write_head: int = 0) -> None:
        self.offset = offset
        self.write_head = write_head
        super().__init__(
            pb.OFFSET_NOT_YET_AVAILABLE, f"offset {offset}, write head {write_head}", journal
        )


class AppendError(StatusError):
    """An Append ended with a non-OK status; `response` is the broker's full answer
    (it carries the current registers on REGISTER_MISMATCH)."""

    def __init__(self, response: pb.AppendResponse, journal: str = "") -> None:
        self.response = response
        super().__init__(response.status, response.store_health_error, journal)


class RPCError(GazetteError):
    """A broker failed an RPC with a gRPC error instead of a Status: a rejected request,
    a protocol violation or an authorization failure. `code` is the gRPC code name."""

    def __init__(self, code: str, details: str) -> None:
        self.code = code
        self.details = details
        super().__init__(f"{code}: {details}" if details else code)


def with_type(exc: BaseException) -> str:
    """`Type: message` on one line, or the type alone for an exception without a message."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
