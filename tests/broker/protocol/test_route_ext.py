"""Route equivalence, member lookup, unrouted headers and process ID strings."""

from __future__ import annotations

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.route_ext import (
    member_index,
    process_id_is_zero,
    process_id_str,
    route_equivalent,
    unrouted_header,
)

A = pb.ProcessSpec.ID(zone="east", suffix="broker-a")
B = pb.ProcessSpec.ID(zone="west", suffix="broker-b")
C = pb.ProcessSpec.ID(zone="west", suffix="broker-c")


def test_route_equivalent_ignores_endpoints() -> None:
    route = pb.Route(members=[A, B], primary=0, endpoints=["http://a:1", "http://b:1"])
    same = pb.Route(members=[A, B], primary=0)
    assert route_equivalent(route, same)
    assert not route_equivalent(route, pb.Route(members=[A, B], primary=1))
    assert not route_equivalent(route, pb.Route(members=[A, C], primary=0))
    assert not route_equivalent(route, pb.Route(members=[A], primary=0))


def test_member_index() -> None:
    route = pb.Route(members=[A, B], primary=1)
    assert member_index(route, A) == 0
    assert member_index(route, B) == 1
    assert member_index(route, C) == -1
    assert member_index(pb.Route(primary=-1), A) == -1


def test_unrouted_header() -> None:
    etcd = pb.Header.Etcd(cluster_id=1, member_id=2, revision=3, raft_term=4)
    assert unrouted_header(A, etcd) == pb.Header(
        process_id=pb.ProcessSpec.ID(zone="east", suffix="broker-a"),
        route=pb.Route(primary=-1),
        etcd=pb.Header.Etcd(cluster_id=1, member_id=2, revision=3, raft_term=4),
    )


def test_process_id_str_and_zero() -> None:
    assert process_id_str(A) == "east#broker-a"
    assert process_id_is_zero(pb.ProcessSpec.ID())
    assert not process_id_is_zero(A)
