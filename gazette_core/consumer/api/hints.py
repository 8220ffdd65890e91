"""The Shard GetHints and Unassign RPCs.

GetHints reads a shard's primary and backup hints in one Etcd read
(`recoverylog.hints_store.get_hints`). Unassign deletes a shard's FAILED assignments and,
unless `only_failed`, its primary assignment, each guarded by its
ModRevision, all in one transaction (none with `dry_run`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gazette_core.allocator import keys
from gazette_core.broker.protocol.route_ext import unrouted_header
from gazette_core.consumer.api.authz import id_visible
from gazette_core.consumer.api.list import assignments_of
from gazette_core.consumer.keyspace_decode import replica_status
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.protocol.rpc_ext import (
    validate_get_hints_request,
    validate_unassign_request,
)
from gazette_core.consumer.recoverylog.hints_store import get_hints
from gazette_core.keyspace import etcd_util

if TYPE_CHECKING:
    from gazette_core.consumer.api.host import ShardHost


def shard_spec(host: ShardHost, shard: str) -> cpb.ShardSpec | None:
    """The shard's spec from the KeySpace, if it exists."""
    kv = host.keyspace.get(keys.item_key(host.root.rstrip("/"), shard))
    spec = kv.decoded if kv is not None else None
    return spec if isinstance(spec, cpb.ShardSpec) else None


async def serve_get_hints(host: ShardHost, req: cpb.GetHintsRequest) -> cpb.GetHintsResponse:
    """Answer one GetHints RPC; SHARD_NOT_FOUND for a missing or unauthorized shard."""
    validate_get_hints_request(req)
    spec = shard_spec(host, req.shard)
    header = unrouted_header(host.process_id, host.keyspace.header)
    if spec is None or not id_visible(req.shard):
        return cpb.GetHintsResponse(status=cpb.SHARD_NOT_FOUND, header=header)
    resp = await get_hints(host.etcd, spec)
    if resp.header.etcd.revision:
        header.etcd.CopyFrom(resp.header.etcd)
    resp.header.CopyFrom(header)
    return resp


def _removals(host: ShardHost, shard: str, only_failed: bool) -> list[keys.AssignmentKV]:
    out = []
    for entry in assignments_of(host, shard):
        try:
            failed = replica_status(entry).code == cpb.ReplicaStatus.FAILED
        except ValueError:
            failed = False
        if failed or (entry.slot == 0 and not only_failed):
            out.append(entry)
    return out


async def serve_unassign(host: ShardHost, req: cpb.UnassignRequest) -> cpb.UnassignResponse:
    """Answer one Unassign RPC; SHARD_NOT_FOUND if a named shard is missing or unauthorized."""
    validate_unassign_request(req)
    compares, ops, shards = [], [], []
    for shard in dict.fromkeys(req.shards):  # each shard once, in request order
        if shard_spec(host, shard) is None or not id_visible(shard):
            return cpb.UnassignResponse(status=cpb.SHARD_NOT_FOUND)
        removals = _removals(host, shard, req.only_failed)
        if removals:
            shards.append(shard)
        for entry in removals:
            compares.append(etcd_util.cmp_mod_revision(entry.kv.key, entry.kv.mod_revision))
            ops.append(etcd_util.delete_op(entry.kv.key))
    if ops and not req.dry_run:
        resp = await etcd_util.txn(host.etcd, compares, ops)
        if not resp.succeeded:
            return cpb.UnassignResponse(status=cpb.ETCD_TRANSACTION_FAILED)
        await host.keyspace.wait_for_revision(resp.header.revision)
    return cpb.UnassignResponse(status=cpb.OK, shards=shards)
