"""ReplicaStatus: combining statuses and building FAILED ones.

Replicas update their assignment's status by max-merge: the larger code wins
and the error lists are concatenated, so a FAILED status is never lost to a
concurrent, healthier update. Messages written to Etcd are cut to 2048 runes.
"""

from __future__ import annotations

from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.errors import ValidationError

MAX_ERROR_RUNES = 2048
TRUNCATED_SUFFIX = " ...[truncated]"

Code = cpb.ReplicaStatus.Code


def merge_status(a: cpb.ReplicaStatus, b: cpb.ReplicaStatus) -> cpb.ReplicaStatus:
    """The larger code of `a` and `b`, with `a`'s errors followed by `b`'s."""
    return cpb.ReplicaStatus(code=max(a.code, b.code), errors=[*a.errors, *b.errors])


def truncate_error(error: str) -> str:
    """`error`, cut to 2048 runes followed by ` ...[truncated]` when longer."""
    if len(error) <= MAX_ERROR_RUNES:
        return error
    return error[:MAX_ERROR_RUNES] + TRUNCATED_SUFFIX


def failed_status(error: str) -> cpb.ReplicaStatus:
    """A FAILED status carrying `error` (truncated)."""
    return cpb.ReplicaStatus(code=cpb.ReplicaStatus.FAILED, errors=[truncate_error(error)])


def validate_replica_status(status: cpb.ReplicaStatus, path: str = "") -> None:
    """A known code, with errors exactly when the code is FAILED."""
    here = f"{path}.code" if path else "code"
    if status.code not in cpb.ReplicaStatus.Code.values():
        raise ValidationError(here, f"invalid ReplicaStatus code {status.code}")
    errors = f"{path}.errors" if path else "errors"
    if status.code == cpb.ReplicaStatus.FAILED and not status.errors:
        raise ValidationError(errors, "expected errors with code FAILED")
    if status.code != cpb.ReplicaStatus.FAILED and status.errors:
        raise ValidationError(
            errors,
            f"expected no errors with code {cpb.ReplicaStatus.Code.Name(status.code)}",
        )
