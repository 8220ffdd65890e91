"""The Apply RPC: one Etcd transaction creating, updating or deleting JournalSpecs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.route_ext import unrouted_header
from gazette_core.broker.protocol.validate_ext import validate_apply_request
from gazette_core.keyspace import etcd_util
from gazette_core.server.authz import authorize_apply

if TYPE_CHECKING:
    from gazette_core.broker.service import Broker


async def serve_apply(broker: Broker, req: pb.ApplyRequest) -> pb.ApplyResponse:
    """Apply every change atomically, guarded by each change's expected mod revision."""
    validate_apply_request(req)
    authorize_apply(req)
    root = broker.config.etcd_prefix.rstrip("/")
    compares, ops = [], []
    for change in req.changes:
        name = change.upsert.name if change.HasField("upsert") else change.delete
        key = f"{root}/items/{name}"
        if change.expect_mod_revision != -1:
            compares.append(etcd_util.cmp_mod_revision(key, change.expect_mod_revision))
        if change.HasField("upsert"):
            ops.append(etcd_util.put_op(key, change.upsert.SerializeToString()))
        else:
            ops.append(etcd_util.delete_op(key))
    resp = await etcd_util.txn(broker.etcd, compares, ops)
    header = unrouted_header(broker.process_id, broker.keyspace.header)
    if not resp.succeeded:
        return pb.ApplyResponse(status=pb.ETCD_TRANSACTION_FAILED, header=header)
    revision = resp.header.revision
    await broker.keyspace.wait_for_revision(revision)
    header.etcd.revision = revision
    return pb.ApplyResponse(status=pb.OK, header=header)
