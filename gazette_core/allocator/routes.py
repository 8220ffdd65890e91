"""Routes of items as members of either kind of cluster see them.

A Route lists an item's assigned members in assignment-key order, with the
slot-0 member as primary and each member's advertised endpoint. Broker
members carry a BrokerSpec and consumer members a ConsumerSpec; both embed a
ProcessSpec, which is all a Route needs. A request proxied between members
carries the header its sender resolved with, checked the same way by both.
"""

from __future__ import annotations

from collections.abc import Sequence

from gazette_core.allocator.keys import member_key, parse_assign_key
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import GazetteError
from gazette_core.keyspace.keyspace import KeySpace, KeyValue


def route_of(keyspace: KeySpace, root: str, assignments: Sequence[KeyValue]) -> pb.Route:
    """Route with members in key order, slot 0 as primary, endpoints from member specs."""
    route = pb.Route(primary=-1)
    for kv in assignments:
        a = parse_assign_key(root, kv.key)
        route.members.add(zone=a.zone, suffix=a.suffix)
        if a.slot == 0:
            route.primary = len(route.members) - 1
        member = keyspace.get(member_key(root, a.zone, a.suffix))
        process = getattr(member.decoded, "process_spec", None) if member is not None else None
        route.endpoints.append(process.endpoint if isinstance(process, pb.ProcessSpec) else "")
    return route


class ProxyHeaderError(GazetteError):
    """A proxied request's header names another Etcd cluster or another member."""


def check_proxy_header(header: pb.Header, cluster_id: int, process_id: pb.ProcessSpec.ID
                       ) -> None:
    """Raise ProxyHeaderError unless `header` names our Etcd cluster and (if any) us."""
    if header.etcd.cluster_id != cluster_id:
        raise ProxyHeaderError(f"proxied request Etcd ClusterId ({header.etcd.cluster_id}) "
                               f"doesn't match our own ({cluster_id})")
    pid = header.process_id
    if (pid.zone or pid.suffix) and pid != process_id:
        raise ProxyHeaderError(
            f"proxied request ProcessId ({pid.zone}#{pid.suffix}) doesn't match our own "
            f"({process_id.zone}#{process_id.suffix})")
