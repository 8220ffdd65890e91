"""The pure allocation planner over hand-built AllocStates."""

from __future__ import annotations

from collections.abc import Sequence

from gazette_core.allocator.changes import Add, Move, Remove
from gazette_core.allocator.consistency import route_consistent, route_of
from gazette_core.allocator.keys import AllocState, Assignment, AssignmentKV
from gazette_core.allocator.planner import default_member_limit, plan
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.keyspace.keyspace import KeyValue

R = "/r"


def member(zone: str, suffix: str, rev: int, limit: int = 10, exiting: bool = False) -> KeyValue:
    spec = pb.BrokerSpec(
        process_spec=pb.ProcessSpec(id=pb.ProcessSpec.ID(zone=zone, suffix=suffix)),
        journal_limit=limit,
        exiting=exiting,
    )
    key = f"{R}/members/{zone}#{suffix}"
    return KeyValue(key, spec.SerializeToString(), spec, rev, rev + 100, 1, 1000 + rev)


def item(name: str, rev: int, replication: int = 1) -> KeyValue:
    spec = pb.JournalSpec(name=name, replication=replication)
    return KeyValue(f"{R}/items/{name}", b"", spec, rev, rev, 1, 0)


def assign(name: str, zone: str, suffix: str, slot: int, rev: int, value: bytes = b"") -> KeyValue:
    key = f"{R}/assign/{name}#{zone}#{suffix}#{slot}"
    return KeyValue(key, value, value, rev, rev, 1, 1000)


def route_value(*members: tuple[str, str, int]) -> bytes:
    """A Route value consistent with assignments of the given (zone, suffix, slot)."""
    entries = [
        AssignmentKV(Assignment("j", z, s, slot), assign("j", z, s, slot, 1))
        for z, s, slot in sorted(members)
    ]
    return route_of(entries).SerializeToString()


def replication(spec: object) -> int:
    assert isinstance(spec, pb.JournalSpec)
    return spec.replication


def run(*kvs: KeyValue) -> list[Add | Remove | Move]:
    return plan(AllocState(R, kvs), replication)


def test_default_member_limit() -> None:
    assert default_member_limit(pb.BrokerSpec(journal_limit=7)) == 7
    assert default_member_limit(pb.BrokerSpec(journal_limit=7, exiting=True)) == 0
    assert default_member_limit(b"raw") == 0


def test_route_consistency() -> None:
    a = AssignmentKV(Assignment("j", "z", "a", 0), assign("j", "z", "a", 0, 5))
    b = AssignmentKV(Assignment("j", "z", "b", 1), assign("j", "z", "b", 1, 6))
    assert route_of([a, b]) == pb.Route(
        members=[pb.ProcessSpec.ID(zone="z", suffix="a"), pb.ProcessSpec.ID(zone="z", suffix="b")],
        primary=0,
    )
    assert not route_consistent(a, [a, b])
    value = route_value(("z", "a", 0), ("z", "b", 1))
    with_route = AssignmentKV(a.assignment, assign("j", "z", "a", 0, 5, value))
    assert route_consistent(with_route, [with_route, b])
    assert not route_consistent(with_route, [with_route])
    garbage = AssignmentKV(a.assignment, assign("j", "z", "a", 0, 5, b"\xff"))
    assert not route_consistent(garbage, [garbage])


def test_new_item_goes_to_one_member_at_slot_0() -> None:
    assert run(member("z", "a", 2), item("j", 3)) == [
        Add(f"{R}/assign/j#z#a#0", f"{R}/members/z#a", 102, 1002),
    ]


def test_replication_two_over_two_members() -> None:
    assert run(member("z", "b", 2), member("z", "a", 3), item("j", 4, replication=2)) == [
        Add(f"{R}/assign/j#z#a#0", f"{R}/members/z#a", 103, 1003),
        Add(f"{R}/assign/j#z#b#1", f"{R}/members/z#b", 102, 1002),
    ]


def test_replication_capped_by_eligible_members() -> None:
    kvs = [member("z", "a", 2), member("z", "b", 3, exiting=True), item("j", 4, replication=3)]
    assert run(*kvs) == [Add(f"{R}/assign/j#z#a#0", f"{R}/members/z#a", 102, 1002)]


def test_least_loaded_member_and_limit() -> None:
    kvs = [
        member("z", "a", 2, limit=1),
        member("z", "b", 3),
        member("z", "c", 4),
        item("j1", 5),
        item("j2", 6),
        assign("j1", "z", "a", 0, 7),
        assign("other", "z", "b", 0, 8),
        item("other", 9),
    ]
    assert run(*kvs) == [Add(f"{R}/assign/j2#z#c#0", f"{R}/members/z#c", 104, 1004)]


def test_deleted_item_assignments_are_removed() -> None:
    kvs = [member("z", "a", 2), assign("gone", "z", "a", 0, 5), assign("gone", "z", "b", 1, 6)]
    assert run(*kvs) == [
        Remove(f"{R}/assign/gone#z#a#0", 5, f"{R}/items/gone", 0),
        Remove(f"{R}/assign/gone#z#b#1", 6, f"{R}/items/gone", 0),
    ]


def test_missing_primary_is_promoted() -> None:
    kvs = [member("z", "b", 3), item("j", 4, replication=2), assign("j", "z", "b", 1, 6, b"rt")]
    assert run(*kvs) == [Move(f"{R}/assign/j#z#b#1", 6, f"{R}/assign/j#z#b#0", b"rt", 1000)]


def test_assignment_of_vanished_member_is_removed_and_replaced() -> None:
    kvs = [
        member("z", "b", 3),
        member("z", "c", 4),
        item("j", 5, replication=2),
        assign("j", "z", "a", 0, 6),
        assign("j", "z", "b", 1, 7),
    ]
    assert run(*kvs) == [
        Remove(f"{R}/assign/j#z#a#0", 6, f"{R}/members/z#a", 0),
        Add(f"{R}/assign/j#z#c#2", f"{R}/members/z#c", 104, 1004),
        Move(f"{R}/assign/j#z#b#1", 7, f"{R}/assign/j#z#b#0", b"", 1000),
    ]


def test_exiting_member_is_drained_once_replacement_is_consistent() -> None:
    base = [member("z", "a", 2, exiting=True), member("z", "b", 3), item("j", 4)]
    solo = route_value(("z", "a", 0))
    assert run(*base, assign("j", "z", "a", 0, 6, solo)) == [
        Add(f"{R}/assign/j#z#b#1", f"{R}/members/z#b", 103, 1003),
    ]
    # The replacement exists but the primary hasn't advertised the new route yet.
    pending = [assign("j", "z", "a", 0, 6, solo), assign("j", "z", "b", 1, 7)]
    assert run(*base, *pending) == []

    both = route_value(("z", "a", 0), ("z", "b", 1))
    synced = [assign("j", "z", "a", 0, 8, both), assign("j", "z", "b", 1, 9, both)]
    assert run(*base, *synced) == [
        Remove(f"{R}/assign/j#z#a#0", 8, f"{R}/items/j", 4),
        Move(f"{R}/assign/j#z#b#1", 9, f"{R}/assign/j#z#b#0", both, 1000),
    ]


def test_excess_removed_from_highest_slot() -> None:
    value = route_value(("z", "a", 0), ("z", "b", 1), ("z", "c", 2))
    kvs: Sequence[KeyValue] = [
        member("z", "a", 2),
        member("z", "b", 3),
        member("z", "c", 4),
        item("j", 5, replication=1),
        assign("j", "z", "a", 0, 6, value),
        assign("j", "z", "b", 1, 7, value),
        assign("j", "z", "c", 2, 8, value),
    ]
    assert run(*kvs) == [
        Remove(f"{R}/assign/j#z#c#2", 8, f"{R}/items/j", 5),
        Remove(f"{R}/assign/j#z#b#1", 7, f"{R}/items/j", 5),
    ]


def test_full_suspension_removes_everything() -> None:
    kvs = [member("z", "a", 2), item("j", 3), assign("j", "z", "a", 0, 4)]
    assert plan(AllocState(R, kvs), lambda spec: 0) == [
        Remove(f"{R}/assign/j#z#a#0", 4, f"{R}/items/j", 3),
    ]


def test_converged_state_plans_nothing() -> None:
    value = route_value(("z", "a", 0))
    kvs = [member("z", "a", 2), item("j", 3), assign("j", "z", "a", 0, 4, value)]
    assert run(*kvs) == []
