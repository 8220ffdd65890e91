"""Typed errors for Shard service statuses other than OK.

The servicer answers these statuses in its responses; clients raise the
matching subclass, so callers can catch "no primary yet" apart from "no such
shard". A host's `stat` raises `ShardStoppedError` when the primary loop
ends while a request waits, and the servicer answers SHARD_STOPPED.
"""

from __future__ import annotations

from typing import cast

from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.errors import GazetteError

# The cluster is moving: a retry after a short back-off may find a primary.
RETRIABLE = frozenset({cpb.NO_SHARD_PRIMARY, cpb.NOT_SHARD_PRIMARY, cpb.SHARD_STOPPED})


def status_name(status: int) -> str:
    """`SHARD_NOT_FOUND` for 1, the number itself if unknown."""
    if status in cpb.Status.values():
        return cpb.Status.Name(cast("cpb.Status.ValueType", status))
    return str(status)


class ShardStatusError(GazetteError):
    """A Shard RPC answered `status` (not OK); `shard` names the shard, when known."""

    status = -1

    def __init__(self, status: int | None = None, shard: str = "", detail: str = "") -> None:
        if status is not None:
            self.status = status
        self.shard = shard
        self.detail = detail
        self.retriable = self.status in RETRIABLE
        where = f" (shard {shard!r})" if shard else ""
        super().__init__(f"{status_name(self.status)}{where}" + (f": {detail}" if detail else ""))


class ShardNotFoundError(ShardStatusError):
    status = cpb.SHARD_NOT_FOUND


class NoShardPrimaryError(ShardStatusError):
    status = cpb.NO_SHARD_PRIMARY


class NotShardPrimaryError(ShardStatusError):
    status = cpb.NOT_SHARD_PRIMARY


class EtcdTransactionFailedError(ShardStatusError):
    status = cpb.ETCD_TRANSACTION_FAILED


class ShardStoppedError(ShardStatusError):
    status = cpb.SHARD_STOPPED


_BY_STATUS: dict[int, type[ShardStatusError]] = {
    cls.status: cls
    for cls in (ShardNotFoundError, NoShardPrimaryError, NotShardPrimaryError,
                EtcdTransactionFailedError, ShardStoppedError)
}


def check_shard_status(status: int, shard: str = "", detail: str = "") -> None:
    """Raise the typed error of `status` unless it is OK."""
    if status == cpb.OK:
        return
    cls = _BY_STATUS.get(status)
    if cls is None:
        raise ShardStatusError(status, shard, detail)
    raise cls(shard=shard, detail=detail)
