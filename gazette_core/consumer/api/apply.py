"""The Shard Apply RPC: one Etcd transaction upserting or deleting ShardSpecs.

An upsert PUTs the binary ShardSpec at its item key, and its `primary_hints`
(if any) as JSON at the shard's primary hint key; a delete removes only the
item key. Each change is guarded by ModRevision == `expect_mod_revision`
unless that is -1. Before the transaction, every upserted shard's recovery
log must exist as a journal with the recovery-log content-type, and the
transaction must fit Etcd's limit on its size (`apply_limits`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import grpc
from aetcd import rpc

from gazette_core.allocator import keys
from gazette_core.broker.client.journals import list_journals
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.labels_ext import (
    CONTENT_TYPE,
    CONTENT_TYPE_RECOVERY_LOG,
    META_NAME,
    label_set,
    values_of,
)
from gazette_core.broker.protocol.names_ext import quote
from gazette_core.broker.protocol.route_ext import unrouted_header
from gazette_core.consumer.api.apply_limits import check_apply_size
from gazette_core.consumer.api.authz import authorize_apply
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.protocol.rpc_ext import validate_apply_request
from gazette_core.consumer.protocol.shard_spec_ext import primary_hint_key, recovery_log
from gazette_core.consumer.recoverylog.hints import encode_hints
from gazette_core.errors import ValidationError
from gazette_core.keyspace import etcd_util
from gazette_core.server.statuses import etcd_apply_failure

if TYPE_CHECKING:
    from gazette_core.consumer.api.host import ShardHost


def _journal_stub(host: ShardHost, journal: str) -> Any:
    journals = host.journals
    # A routing client picks a broker of the journal; a plain stub is used as is.
    return journals.stub_for(journal, primary=False) if hasattr(journals, "stub_for") else journals


async def verify_recovery_log(host: ShardHost, spec: cpb.ShardSpec, path: str) -> None:
    """ValidationError unless the shard's recovery log exists with the recovery-log type."""
    log = recovery_log(spec)
    if not log:
        return
    selector = pb.LabelSelector(include=label_set((META_NAME, log)))
    listed = await list_journals(_journal_stub(host, log), selector)
    found = [j.spec for j in listed.journals if j.spec.name == log]
    if not found:
        raise ValidationError(path, f"recovery log journal {quote(log)} does not exist")
    types = values_of(found[0].labels, CONTENT_TYPE)
    if types != [CONTENT_TYPE_RECOVERY_LOG]:
        raise ValidationError(
            path,
            f"recovery log journal {quote(log)} has content-type "
            f"{quote(', '.join(types))}, expected {quote(CONTENT_TYPE_RECOVERY_LOG)}",
        )


def _txn_parts(root: str, req: cpb.ApplyRequest
               ) -> tuple[list[rpc.Compare], list[rpc.RequestOp]]:
    compares, ops = [], []
    for change in req.changes:
        upsert = change.HasField("upsert")
        key = keys.item_key(root, change.upsert.id if upsert else change.delete)
        if change.expect_mod_revision != -1:
            compares.append(etcd_util.cmp_mod_revision(key, change.expect_mod_revision))
        if not upsert:
            ops.append(etcd_util.delete_op(key))
            continue
        ops.append(etcd_util.put_op(key, change.upsert.SerializeToString()))
        if change.HasField("primary_hints"):
            ops.append(etcd_util.put_op(primary_hint_key(change.upsert),
                                        encode_hints(change.primary_hints)))
    return compares, ops


async def serve_apply(host: ShardHost, req: cpb.ApplyRequest) -> cpb.ApplyResponse:
    """Apply every change atomically; wait until the local KeySpace reflects it."""
    validate_apply_request(req)
    check_apply_size(req)
    authorize_apply(req)
    for index, change in enumerate(req.changes):
        if change.HasField("upsert"):
            await verify_recovery_log(host, change.upsert, f"changes[{index}].upsert")
    compares, ops = _txn_parts(host.root.rstrip("/"), req)
    try:
        resp = await etcd_util.txn(host.etcd, compares, ops)
    except grpc.aio.AioRpcError as exc:
        raise etcd_apply_failure(exc, len(req.changes)) from None
    header = unrouted_header(host.process_id, host.keyspace.header)
    if not resp.succeeded:
        return cpb.ApplyResponse(status=cpb.ETCD_TRANSACTION_FAILED, header=header)
    await host.keyspace.wait_for_revision(resp.header.revision)
    header.etcd.CopyFrom(etcd_util.header_of(resp.header))
    return cpb.ApplyResponse(status=cpb.OK, header=header)
