"""FSMHints in Etcd: reading a shard's hints, picking one set, and writing them.

Hints are JSON under `{hint_prefix}/{id}.primary` and `.backup.{i}`
(docs/design/etcd.md#consumer-keys).
The primary writes its key periodically, guarded by its assignment's
CreateRevision so a replaced primary cannot overwrite its successor's hints.
Each successful recovery rotates its hints into the backups in one
compare-guarded transaction: new hints at `.backup.0`, the old `.backup.0` to
`.backup.1`, and so on, stopping at the first empty slot.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import aetcd
from aetcd import rpc

from gazette_core.broker.client.backoff import Backoff
from gazette_core.broker.protocol.names_ext import quote
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.protocol.shard_spec_ext import (
    backup_hint_keys,
    primary_hint_key,
    recovery_log,
)
from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from gazette_core.consumer.recoverylog.hints import (
    decode_hints,
    encode_hints,
    validate_shard_hints,
)
from gazette_core.errors import GazetteError, ValidationError
from gazette_core.keyspace import etcd_util
from gazette_core.keyspace.etcd_util import EtcdUnavailableError

log = logging.getLogger(__name__)

ResponseHints = cpb.GetHintsResponse.ResponseHints
# Rotation conflicts only with another rotation or Apply; they settle quickly.
ROTATE_BACKOFF = (0.05, 1.0)


class StoredHintsError(GazetteError):
    """Hints stored in Etcd are invalid, or name a log other than the shard's."""

    grpc_code = "FAILED_PRECONDITION"


class AssignmentChangedError(GazetteError):
    """The assignment guarding a hints write was re-created or removed."""


@dataclass(frozen=True)
class AssignmentGuard:
    """The primary's assignment (its key and CreateRevision) that every hints write is
    guarded by, so a replaced primary cannot overwrite its successor's hints."""

    key: str
    create_revision: int

    def compare(self) -> rpc.Compare:
        return etcd_util.cmp_create_revision(self.key, self.create_revision)

    def changed(self, spec: cpb.ShardSpec, what: str) -> AssignmentChangedError:
        return AssignmentChangedError(
            f"shard {spec.id}: assignment {quote(self.key)} changed; {what}")


def _decode_checked(key: str, value: bytes, log_name: str) -> rpb.FSMHints:
    try:
        hints = decode_hints(value)
        validate_shard_hints(hints, log_name)  # as Apply checks primary_hints
    except ValidationError as exc:
        raise StoredHintsError(f"hints at {quote(key)} are invalid: {exc}") from None
    return hints


async def get_hints(etcd: aetcd.Client, spec: cpb.ShardSpec) -> cpb.GetHintsResponse:
    """The shard's primary and backup hints (newest first), read in one transaction.

    The response has status OK and the etcd part of its header set; a key
    without a value is a ResponseHints without `hints`. There are exactly
    `hint_backups` backup entries. Raises StoredHintsError for invalid hints.
    """
    resp = cpb.GetHintsResponse(status=cpb.OK)
    backups = backup_hint_keys(spec)
    if not spec.recovery_log_prefix:
        resp.primary_hints.SetInParent()
        resp.backup_hints.extend(ResponseHints() for _ in backups)
        return resp
    keys = [primary_hint_key(spec), *backups]
    txn = await etcd_util.txn(etcd, [], [etcd_util.get_op(k) for k in keys])
    resp.header.etcd.CopyFrom(etcd_util.header_of(txn.header))
    found = []
    for key, op in zip(keys, txn.responses, strict=True):
        kvs = op.response_range.kvs
        hints = _decode_checked(key, kvs[0].value, recovery_log(spec)) if kvs else None
        found.append(ResponseHints(hints=hints) if hints else ResponseHints())
    resp.primary_hints.CopyFrom(found[0])
    resp.backup_hints.extend(found[1:])
    return resp


def pick_hints(resp: cpb.GetHintsResponse, log_name: str) -> rpb.FSMHints:
    """Primary hints, else the first backup that has hints, else empty hints of `log_name`."""
    if resp.primary_hints.HasField("hints"):
        return resp.primary_hints.hints
    for backup in resp.backup_hints:
        if backup.HasField("hints"):
            return backup.hints
    return rpb.FSMHints(log=log_name)


async def store_primary_hints(etcd: aetcd.Client, spec: cpb.ShardSpec, hints: rpb.FSMHints,
                              guard: AssignmentGuard) -> bool:
    """Write `hints` at the primary key while the assignment is still ours.

    Returns False (with a warning) when Etcd is unavailable: the next tick
    writes again. Raises AssignmentChangedError when the guard fails.
    """
    put = etcd_util.put_op(primary_hint_key(spec), encode_hints(hints))
    try:
        resp = await etcd_util.txn(etcd, [guard.compare()], [put])
    except EtcdUnavailableError as exc:
        log.warning("shard %s: storing primary hints: %s", spec.id, exc)
        return False
    if not resp.succeeded:
        raise guard.changed(spec, "primary hints not stored")
    return True


def _rotation(spec: cpb.ShardSpec, value: bytes, current: list[rpc.RangeResponse]
              ) -> tuple[list[rpc.Compare], list[rpc.RequestOp]]:
    """Compares and puts shifting each occupied slot down one, `value` into slot 0."""
    compares: list[rpc.Compare] = []
    puts: list[rpc.RequestOp] = []
    for key, existing in zip(backup_hint_keys(spec), current, strict=True):
        kv = existing.kvs[0] if existing.kvs else None
        compares.append(etcd_util.cmp_mod_revision(key, kv.mod_revision if kv else 0))
        puts.append(etcd_util.put_op(key, value))
        if kv is None:
            break  # the first empty slot takes the last value moved down
        value = kv.value
    return compares, puts


async def rotate_backup_hints(etcd: aetcd.Client, spec: cpb.ShardSpec, hints: rpb.FSMHints,
                              guard: AssignmentGuard) -> bool:
    """Put recovered `hints` at `.backup.0`, moving older backups down one slot.

    Only hints of the shard's own recovery log are rotated in (False
    otherwise, and when there are no backup slots). A conflicting write is
    retried with back-off; AssignmentChangedError when the guard fails.
    """
    keys = backup_hint_keys(spec)
    if not keys or hints.log != recovery_log(spec):
        return False
    value = encode_hints(hints)
    backoff = Backoff(*ROTATE_BACKOFF)
    while True:
        read = await etcd_util.txn(etcd, [], [etcd_util.get_op(k) for k in keys])
        compares, puts = _rotation(spec, value, [r.response_range for r in read.responses])
        resp = await etcd_util.txn(etcd, [guard.compare(), *compares], puts,
                                   [etcd_util.get_op(guard.key)])
        if resp.succeeded:
            return True
        current = resp.responses[0].response_range.kvs
        if not current or current[0].create_revision != guard.create_revision:
            raise guard.changed(spec, "backup hints not rotated")
        log.info("shard %s: backup hints changed meanwhile; retrying the rotation", spec.id)
        await backoff.wait()
