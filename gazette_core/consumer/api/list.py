"""The Shard List RPC: shard specs left-joined with their assignments.

Each listed shard carries its spec and revisions, the Route of its
assignments (members in assignment-key order, `primary` the index of slot 0
or -1, endpoints from the members' ConsumerSpecs) and one ReplicaStatus per
member, in the same order. The header is unrouted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gazette_core.allocator import keys, routes
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.labels_ext import matches
from gazette_core.broker.protocol.route_ext import unrouted_header
from gazette_core.consumer.api.authz import spec_visible
from gazette_core.consumer.keyspace_decode import replica_status
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.protocol.rpc_ext import validate_list_request
from gazette_core.consumer.protocol.shard_spec_ext import shard_labels

if TYPE_CHECKING:
    from gazette_core.consumer.api.host import ShardHost


def assignments_of(host: ShardHost, shard: str) -> list[keys.AssignmentKV]:
    """The shard's assignments in key order (by zone, suffix, slot)."""
    root = host.root.rstrip("/")
    prefix = f"{root}{keys.ASSIGN}{shard}{keys.SEP}"
    return [keys.AssignmentKV(keys.parse_assign_key(root, kv.key), kv)
            for kv in host.keyspace.prefixed(prefix)]


def route_of(host: ShardHost, assignments: list[keys.AssignmentKV]) -> pb.Route:
    """The Route of assignments given in key order, with member endpoints."""
    return routes.route_of(host.keyspace, host.root.rstrip("/"), [a.kv for a in assignments])


def _statuses(assignments: list[keys.AssignmentKV]) -> list[cpb.ReplicaStatus]:
    out = []
    for entry in assignments:
        try:
            out.append(replica_status(entry))
        except ValueError:
            out.append(cpb.ReplicaStatus())  # not decodable: shown as IDLE
    return out


def list_shards(host: ShardHost, selector: pb.LabelSelector) -> list[cpb.ListResponse.Shard]:
    """Every shard matching `selector` and the claims, in id order."""
    root = host.root.rstrip("/")
    out: list[cpb.ListResponse.Shard] = []
    for kv in host.keyspace.prefixed(f"{root}{keys.ITEMS}"):
        spec = kv.decoded
        if not isinstance(spec, cpb.ShardSpec):
            continue
        if not matches(selector, shard_labels(spec)) or not spec_visible(spec):
            continue
        assignments = assignments_of(host, spec.id)
        out.append(cpb.ListResponse.Shard(
            spec=spec, mod_revision=kv.mod_revision, create_revision=kv.create_revision,
            route=route_of(host, assignments), status=_statuses(assignments)))
    return out


async def serve_list(host: ShardHost, req: cpb.ListRequest) -> cpb.ListResponse:
    """Answer one List RPC."""
    validate_list_request(req)
    header = unrouted_header(host.process_id, host.keyspace.header)
    return cpb.ListResponse(status=cpb.OK, header=header, shards=list_shards(host, req.selector))
