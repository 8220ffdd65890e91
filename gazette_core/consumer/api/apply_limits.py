"""How many changes one Shard Apply may carry: Etcd's cap on a transaction's operations.

An Apply is one Etcd transaction. Etcd refuses a transaction with more than
`--max-txn-ops` (128 by default) compares, or more than that many operations
in its success branch, with "too many operations in txn request". Each change
puts or deletes its item key (one operation, two for an upsert carrying
`primary_hints`) and compares its mod revision unless `expect_mod_revision`
is -1 (one compare). The Shard API refuses a larger Apply before sending it,
and `gazctl shards apply` splits its changes to fit.
"""

from __future__ import annotations

from collections.abc import Sequence

from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.errors import ValidationError
from gazette_core.keyspace.etcd_util import MAX_TXN_OPS as ETCD_MAX_TXN_OPS

# Changes that always fit one Apply, whatever they are (two operations each at most).
MAX_APPLY_CHANGES = ETCD_MAX_TXN_OPS // 2


def txn_ops(changes: Sequence[cpb.ApplyRequest.Change]) -> tuple[int, int]:
    """The (operations, compares) of the Etcd transaction applying `changes`."""
    ops = sum(2 if c.HasField("upsert") and c.HasField("primary_hints") else 1
              for c in changes)
    compares = sum(1 for c in changes if c.expect_mod_revision != -1)
    return ops, compares


def fits_one_apply(changes: Sequence[cpb.ApplyRequest.Change]) -> bool:
    """Whether one Apply of `changes` stays within Etcd's default transaction size."""
    return max(txn_ops(changes)) <= ETCD_MAX_TXN_OPS


def check_apply_size(req: cpb.ApplyRequest) -> None:
    """ValidationError (path `changes`) when the Apply's transaction is too large for Etcd."""
    if fits_one_apply(req.changes):
        return
    ops, compares = txn_ops(req.changes)
    raise ValidationError(
        "changes",
        f"Apply has {len(req.changes)} changes, needing {ops} Etcd operations and "
        f"{compares} compares; Etcd takes at most {ETCD_MAX_TXN_OPS} of each in a transaction "
        f"(its --max-txn-ops default); split it into Applies of at most "
        f"{MAX_APPLY_CHANGES} changes (gazctl shards apply --max-txn-size)",
    )
