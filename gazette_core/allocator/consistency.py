"""Route consistency of a broker item's assignments.

An assignment is consistent once its value holds the Route derived from the
item's current assignments (the primary writes it after syncing its
pipeline). The allocator counts only consistent assignments when deciding
whether a replica may be removed, so it never drops below the desired
replication of replicas that actually hold the journal's data.
"""

from __future__ import annotations

from collections.abc import Sequence

from google.protobuf.message import DecodeError

from gazette_core.allocator.keys import AssignmentKV
from gazette_core.broker.protocol import protocol_pb2 as pb


def route_of(assignments: Sequence[AssignmentKV]) -> pb.Route:
    """The Route of assignments given in key order: members by (zone, suffix), slot 0 primary."""
    members = [pb.ProcessSpec.ID(zone=a.member[0], suffix=a.member[1]) for a in assignments]
    primary = next((i for i, a in enumerate(assignments) if a.slot == 0), -1)
    return pb.Route(members=members, primary=primary)


def routes_equivalent(a: pb.Route, b: pb.Route) -> bool:
    """Same members in the same order and the same primary; endpoints are ignored."""
    return list(a.members) == list(b.members) and a.primary == b.primary


def route_consistent(entry: AssignmentKV, assignments: Sequence[AssignmentKV]) -> bool:
    """Whether `entry`'s value is the Route of `assignments` (an empty value is no Route)."""
    try:
        advertised = pb.Route.FromString(entry.kv.raw) if entry.kv.raw else pb.Route(primary=-1)
    except DecodeError:
        return False
    return routes_equivalent(advertised, route_of(assignments))
