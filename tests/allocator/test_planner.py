"""Planning rounds: whole plans of changes, and scenarios run round by round to convergence."""

from __future__ import annotations

from gazette_core.allocator.changes import Add, Change, Move, Remove
from gazette_core.allocator.consistency import route_consistent, route_of
from gazette_core.allocator.converge import converge
from gazette_core.allocator.keys import Assignment, AssignmentKV
from gazette_core.allocator.planner import Planner, plan
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.keyspace.keyspace import KeyValue
from tests.allocator.support import Cluster, R, loads, moved, replication


def run(c: Cluster) -> list[Change]:
    return plan(c.state(), replication)


def add(item: str, zone: str, suffix: str, slot: int, c: Cluster) -> Add:
    kv = c.kvs[f"{R}/members/{zone}#{suffix}"]
    return Add(f"{R}/assign/{item}#{zone}#{suffix}#{slot}", kv.key, kv.mod_revision, kv.lease)


def remove(item: str, zone: str, suffix: str, slot: int, c: Cluster) -> Remove:
    kv = c.kvs[f"{R}/assign/{item}#{zone}#{suffix}#{slot}"]
    guard = c.kvs[f"{R}/items/{item}"]
    return Remove(kv.key, kv.mod_revision, guard.key, guard.mod_revision)


def move(item: str, zone: str, suffix: str, slot: int, to: int, c: Cluster) -> Move:
    kv = c.kvs[f"{R}/assign/{item}#{zone}#{suffix}#{slot}"]
    new_key = f"{R}/assign/{item}#{zone}#{suffix}#{to}"
    return Move(kv.key, kv.mod_revision, new_key, kv.raw, kv.lease)


def test_route_consistency() -> None:
    def entry(suffix: str, slot: int, value: bytes = b"") -> AssignmentKV:
        key = f"{R}/assign/j#z#{suffix}#{slot}"
        return AssignmentKV(Assignment("j", "z", suffix, slot),
                            KeyValue(key, value, value, 5, 5, 1, 0))

    a, b = entry("a", 0), entry("b", 1)
    assert route_of([a, b]) == pb.Route(
        members=[pb.ProcessSpec.ID(zone="z", suffix="a"), pb.ProcessSpec.ID(zone="z", suffix="b")],
        primary=0,
    )
    assert not route_consistent(a, [a, b])
    with_route = entry("a", 0, route_of([a, b]).SerializeToString())
    assert route_consistent(with_route, [with_route, b])
    assert not route_consistent(with_route, [with_route])
    garbage = entry("a", 0, b"\xff")
    assert not route_consistent(garbage, [garbage])


def test_new_item_goes_to_one_member_at_slot_0() -> None:
    c = Cluster()
    c.member("z", "a")
    c.item("j")
    assert run(c) == [add("j", "z", "a", 0, c)]


def test_replication_two_over_two_members() -> None:
    c = Cluster()
    c.member("z", "b")
    c.member("z", "a")
    c.item("j", replication=2)
    assert run(c) == [add("j", "z", "a", 0, c), add("j", "z", "b", 1, c)]


def test_replication_capped_by_members() -> None:
    c = Cluster()
    c.member("z", "a")
    c.member("z", "b", limit=0)
    c.item("j", replication=3)
    assert run(c) == [add("j", "z", "a", 0, c)]


def test_adds_wait_while_the_member_is_at_its_limit() -> None:
    c = Cluster()
    c.member("z", "a", limit=1)
    c.member("z", "b", limit=1)
    c.item("j1")
    c.item("j2")
    c.assign("j1", "z", "a", 0)
    c.sync_routes()
    # A solution that swaps a's item: j1 to b, j2 to a.
    solution = {"j1": (("z", "b"),), "j2": (("z", "a"),)}
    capacity = {("z", "a"): 1, ("z", "b"): 1}

    def step() -> list[Change]:
        return converge(c.state(), solution, capacity, route_consistent)

    # j1 stays on a until b's replica is consistent, so a has no room for j2.
    assert step() == [add("j1", "z", "b", 1, c)]
    c.apply(step())
    c.sync_routes()
    # a's slot is freed in this round, and only taken in the next one.
    assert step() == [remove("j1", "z", "a", 0, c), move("j1", "z", "b", 1, 0, c)]
    c.apply(step())
    assert step() == [add("j2", "z", "a", 0, c)]


def test_deleted_item_assignments_are_removed() -> None:
    c = Cluster()
    c.member("z", "a")
    c.member("z", "b")
    c.item("gone")
    c.assign("gone", "z", "a", 0)
    c.assign("gone", "z", "b", 1)
    c.delete_item("gone")
    assert run(c) == [
        Remove(f"{R}/assign/gone#z#a#0", c.kvs[f"{R}/assign/gone#z#a#0"].mod_revision,
               f"{R}/items/gone", 0),
        Remove(f"{R}/assign/gone#z#b#1", c.kvs[f"{R}/assign/gone#z#b#1"].mod_revision,
               f"{R}/items/gone", 0),
    ]
    c.apply(run(c))
    assert c.layout() == {}


def test_missing_primary_is_promoted_preferring_consistent_replicas() -> None:
    c = Cluster()
    for m in "abc":
        c.member("z", m)
    c.item("j", replication=3)
    c.assign("j", "z", "a", 1)
    c.assign("j", "z", "b", 2)
    c.assign("j", "z", "c", 3)
    c.sync_routes()  # no primary: nobody writes a route, so none is consistent
    route = route_of(c.state().item_assignments("j")).SerializeToString()
    c._put(f"{R}/assign/j#z#b#2", route, route, c.kvs[f"{R}/assign/j#z#b#2"].lease)
    assert run(c) == [move("j", "z", "b", 2, 0, c)]


def test_assignment_of_vanished_member_is_removed_and_replaced() -> None:
    c = Cluster()
    for m in "abc":
        c.member("z", m)
    c.item("j", replication=2)
    c.assign("j", "z", "a", 0)
    c.assign("j", "z", "b", 1)
    # a's key is gone but (unlike a lease expiry) its assignment was left behind.
    lease_a = c.kvs[f"{R}/members/z#a"].lease
    del c.kvs[f"{R}/members/z#a"]
    stale = c.kvs[f"{R}/assign/j#z#a#0"]
    assert stale.lease == lease_a
    assert run(c) == [
        Remove(stale.key, stale.mod_revision, f"{R}/members/z#a", 0),
        move("j", "z", "b", 1, 0, c),
        add("j", "z", "c", 1, c),
    ]


def test_excess_replicas_removed_highest_slot_first_once_consistent() -> None:
    c = Cluster()
    for m in "abc":
        c.member("z", m)
    c.item("j", replication=3)
    for slot, m in enumerate("abc"):
        c.assign("j", "z", m, slot)
    c.item("j", replication=1)
    # Nothing is consistent yet: keep every replica.
    assert run(c) == []
    c.sync_routes()
    assert run(c) == [remove("j", "z", "c", 2, c), remove("j", "z", "b", 1, c)]


def test_full_suspension_removes_everything() -> None:
    c = Cluster()
    c.member("z", "a")
    c.item("j")
    c.assign("j", "z", "a", 0)
    assert plan(c.state(), lambda spec: 0) == [remove("j", "z", "a", 0, c)]


def test_converged_state_plans_nothing() -> None:
    c = Cluster()
    c.member("z", "a")
    c.item("j")
    c.assign("j", "z", "a", 0)
    c.sync_routes()
    assert run(c) == []


def test_slots_are_packed_one_move_per_round() -> None:
    c = Cluster()
    for m in "abc":
        c.member("z", m)
    c.item("j", replication=3)
    c.assign("j", "z", "a", 0)
    c.assign("j", "z", "b", 3)
    c.assign("j", "z", "c", 5)
    c.sync_routes()
    assert run(c) == [move("j", "z", "c", 5, 1, c)]
    c.apply(run(c))
    assert run(c) == [move("j", "z", "b", 3, 2, c)]
    c.apply(run(c))
    assert run(c) == []
    assert c.layout() == {"j": [("z", "a", 0), ("z", "b", 2), ("z", "c", 1)]}


def test_changed_replication_up_then_down() -> None:
    c = Cluster()
    for m in "abcd":
        c.member("z", m)
    c.item("j")
    planner = Planner(replication)
    c.converge(planner)
    assert c.layout() == {"j": [("z", "a", 0)]}

    c.item("j", replication=3)
    assert planner.plan(c.state()) == [add("j", "z", "b", 1, c), add("j", "z", "c", 2, c)]
    c.converge(planner)
    assert c.layout() == {"j": [("z", "a", 0), ("z", "b", 1), ("z", "c", 2)]}

    c.item("j", replication=2)
    assert planner.plan(c.state()) == [remove("j", "z", "c", 2, c)]
    c.converge(planner)
    assert c.layout() == {"j": [("z", "a", 0), ("z", "b", 1)]}


def test_two_zones_every_replicated_item_spans_both() -> None:
    c = Cluster()
    for zone in ("east", "west"):
        for n in "12":
            c.member(zone, zone[0] + n)
    for i in range(4):
        c.item(f"j{i}", replication=2)
    c.item("k", replication=3)
    assert c.converge(Planner(replication)) == 1
    assert c.layout() == {
        "j0": [("east", "e1", 0), ("west", "w1", 1)],
        "j1": [("east", "e2", 0), ("west", "w2", 1)],
        "j2": [("east", "e1", 1), ("west", "w1", 0)],
        "j3": [("east", "e2", 1), ("west", "w2", 0)],
        "k": [("east", "e1", 0), ("east", "e2", 1), ("west", "w1", 2)],
    }


def test_insufficient_zone_slots() -> None:
    c = Cluster()
    c.member("east", "e1")
    c.member("east", "e2")
    c.member("west", "w1", limit=1)
    c.item("j1", replication=2)
    c.item("j2", replication=2)
    # New items' primaries go to the members with the fewest.
    assert run(c) == [
        add("j1", "east", "e1", 0, c),
        add("j1", "west", "w1", 1, c),
        add("j2", "east", "e2", 0, c),
        add("j2", "east", "e1", 1, c),
    ]


def test_insufficient_member_capacity() -> None:
    c = Cluster()
    c.member("z", "a", limit=2)
    c.member("z", "b", limit=2)
    for name in ("j1", "j2", "j3"):
        c.item(name, replication=2)
    c.assign("j3", "z", "a", 0)
    c.sync_routes()
    # j3 keeps the replica it holds; of the 3 slots left j1 takes 2 and j2 one.
    assert run(c) == [
        add("j1", "z", "b", 0, c),
        add("j1", "z", "a", 1, c),
        add("j2", "z", "b", 0, c),
    ]


def test_limit_zero_member_is_emptied() -> None:
    c = Cluster()
    c.member("east", "a")
    c.member("east", "b")
    c.member("west", "zero", limit=0)
    c.item("j", replication=2)
    c.assign("j", "west", "zero", 0)
    c.sync_routes()
    planner = Planner(replication)
    assert planner.plan(c.state()) == [add("j", "east", "a", 1, c), add("j", "east", "b", 2, c)]
    c.apply(planner.plan(c.state()))
    # The new replicas aren't consistent until the primary writes the new route.
    assert planner.plan(c.state()) == []
    c.sync_routes()
    assert planner.plan(c.state()) == [
        remove("j", "west", "zero", 0, c),
        move("j", "east", "a", 1, 0, c),
    ]
    c.converge(planner)
    assert c.layout() == {"j": [("east", "a", 0), ("east", "b", 1)]}


def test_member_joining_moves_only_its_share() -> None:
    c = Cluster()
    for m in "abc":
        c.member("z", m)
    for i in range(6):
        c.item(f"j{i}")
    planner = Planner(replication)
    c.converge(planner)
    assert loads(c) == {"a": 2, "b": 2, "c": 2}
    before = c.holders()
    c.member("z", "d")
    assert planner.plan(c.state()) == [add("j0", "z", "d", 1, c)]
    c.converge(planner)
    assert loads(c) == {"a": 1, "b": 2, "c": 2, "d": 1}
    assert moved(before, c.holders()) == 1


def test_member_leaving_moves_only_its_assignments() -> None:
    c = Cluster()
    for m in "abcd":
        c.member("z", m)
    for i in range(8):
        c.item(f"j{i}", replication=2)
    planner = Planner(replication)
    c.converge(planner)
    before = c.layout()
    assert loads(c) == {"a": 4, "b": 4, "c": 4, "d": 4}
    c.leave("z", "c")
    c.converge(planner)
    after = c.layout()
    lost = {item for item, entries in before.items() if ("z", "c") in [e[:2] for e in entries]}
    assert lost == {"j1", "j2", "j5", "j6"}
    assert {item: before[item] for item in before if item not in lost} == {
        item: after[item] for item in after if item not in lost
    }
    assert moved(
        {item: {e[:2] for e in entries} for item, entries in before.items()}, c.holders()
    ) == 4
    assert loads(c) == {"a": 5, "b": 5, "d": 6}


def test_exiting_member_is_drained() -> None:
    c = Cluster()
    for m in "abc":
        c.member("z", m)
    for i in range(3):
        c.item(f"j{i}", replication=2)
    planner = Planner(replication)
    c.converge(planner)
    assert c.layout() == {
        "j0": [("z", "a", 0), ("z", "b", 1)],
        "j1": [("z", "b", 0), ("z", "c", 1)],
        "j2": [("z", "a", 1), ("z", "c", 0)],
    }
    c.member("z", "b", exiting=True)
    assert planner.plan(c.state()) == [add("j0", "z", "c", 2, c), add("j1", "z", "a", 2, c)]
    c.apply(planner.plan(c.state()))
    c.sync_routes()
    # b's primary of j1 goes, and a (tied on primaries with c, first in order) takes over.
    assert planner.plan(c.state()) == [
        remove("j0", "z", "b", 1, c),
        remove("j1", "z", "b", 0, c),
        move("j1", "z", "a", 2, 0, c),
    ]
    c.converge(planner)
    assert c.layout() == {
        "j0": [("z", "a", 0), ("z", "c", 1)],
        "j1": [("z", "a", 0), ("z", "c", 1)],
        "j2": [("z", "a", 1), ("z", "c", 0)],
    }


def test_planner_solves_only_when_inputs_change() -> None:
    c = Cluster()
    c.member("z", "a")
    c.member("z", "b")
    c.item("j", replication=2)
    planner = Planner(replication)
    c.converge(planner)
    assert planner.solves == 1
    c.sync_routes()  # assignment values change, inputs don't
    assert planner.plan(c.state()) == []
    assert planner.solves == 1
    c.item("k")
    planner.plan(c.state())
    assert planner.solves == 2
    planner.forget()
    planner.plan(c.state())
    assert planner.solves == 3
