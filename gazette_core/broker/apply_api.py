"""The Apply RPC: one Etcd transaction creating, updating or deleting JournalSpecs."""

from __future__ import annotations

from typing import TYPE_CHECKING

import grpc

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.names_ext import quote
from gazette_core.broker.protocol.route_ext import unrouted_header
from gazette_core.broker.protocol.validate_ext import validate_apply_request
from gazette_core.errors import ValidationError
from gazette_core.keyspace import etcd_util
from gazette_core.server.authz import authorize_apply
from gazette_core.server.statuses import etcd_apply_failure

if TYPE_CHECKING:
    from gazette_core.broker.service import Broker

async def serve_apply(broker: Broker, req: pb.ApplyRequest) -> pb.ApplyResponse:
    """Apply every change atomically, guarded by each change's expected mod revision."""
    validate_apply_request(req)
    _refuse_duplicates(req)
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
    try:
        resp = await etcd_util.txn(broker.etcd, compares, ops)
    except grpc.aio.AioRpcError as exc:
        raise etcd_apply_failure(exc, len(req.changes)) from None
    header = unrouted_header(broker.process_id, broker.keyspace.header)
    if not resp.succeeded:
        return pb.ApplyResponse(status=pb.ETCD_TRANSACTION_FAILED, header=header)
    revision = resp.header.revision
    await broker.keyspace.wait_for_revision(revision)
    header.etcd.revision = revision
    return pb.ApplyResponse(status=pb.OK, header=header)


def _refuse_duplicates(req: pb.ApplyRequest) -> None:
    """Refuse a journal changed twice by name, as Etcd would refuse the transaction."""
    seen: dict[str, int] = {}
    for index, change in enumerate(req.changes):
        upsert = change.HasField("upsert")
        name = change.upsert.name if upsert else change.delete
        if name in seen:
            raise ValidationError(
                f"changes[{index}].{'upsert.name' if upsert else 'delete'}",
                f"journal {quote(name)} is already changed by changes[{seen[name]}]")
        seen[name] = index
