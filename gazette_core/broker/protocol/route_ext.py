"""Route and Header helpers shared by brokers, clients and the allocator.

Route equivalence deliberately ignores endpoints: a replica compares the
primary's Route against its own, and endpoints can differ while a BrokerSpec
is missing or being updated without the assignment having changed.
"""

from __future__ import annotations

from gazette_core.broker.protocol import protocol_pb2 as pb


def process_id_str(process_id: pb.ProcessSpec.ID) -> str:
    """`zone#suffix`, the form used in Etcd keys and logs."""
    return f"{process_id.zone}#{process_id.suffix}"


def process_id_is_zero(process_id: pb.ProcessSpec.ID) -> bool:
    """Whether the ID is empty (a Header without a process = any member may serve)."""
    return not process_id.zone and not process_id.suffix


def route_equivalent(a: pb.Route, b: pb.Route) -> bool:
    """Same members in the same order and the same primary; endpoints ignored."""
    return a.primary == b.primary and list(a.members) == list(b.members)


def member_index(route: pb.Route, process_id: pb.ProcessSpec.ID) -> int:
    """Index of `process_id` in the route's members, or -1 if it is not a member."""
    for index, member in enumerate(route.members):
        if member.zone == process_id.zone and member.suffix == process_id.suffix:
            return index
    return -1


def unrouted_header(process_id: pb.ProcessSpec.ID, etcd: pb.Header.Etcd) -> pb.Header:
    """A Header from `process_id` carrying no route (primary -1, no members)."""
    return pb.Header(
        process_id=pb.ProcessSpec.ID(zone=process_id.zone, suffix=process_id.suffix),
        route=pb.Route(primary=-1),
        etcd=pb.Header.Etcd(
            cluster_id=etcd.cluster_id,
            member_id=etcd.member_id,
            revision=etcd.revision,
            raft_term=etcd.raft_term,
        ),
    )
