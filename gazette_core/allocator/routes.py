"""Routes of items as members of either kind of cluster see them.

A Route lists an item's assigned members in assignment-key order, with the
slot-0 member as primary and each member's advertised endpoint. Broker
members carry a BrokerSpec and consumer members a ConsumerSpec; both embed a
ProcessSpec, which is all a Route needs.
"""

from __future__ import annotations

from collections.abc import Sequence

from gazette_core.allocator.keys import member_key, parse_assign_key
from gazette_core.broker.protocol import protocol_pb2 as pb
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
