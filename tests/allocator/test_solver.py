"""The max-flow solution: whole solutions for small clusters, properties for a larger one."""

from __future__ import annotations

from collections import Counter

from gazette_core.allocator.inputs import (
    AllocInputs,
    default_member_exiting,
    default_member_limit,
)
from gazette_core.allocator.keys import MemberId
from gazette_core.allocator.retention import ItemDemand, retained
from gazette_core.allocator.solver import (
    Solution,
    held_by_item,
    item_slots,
    member_caps,
    solve,
    zone_caps,
)
from tests.allocator.support import Cluster, replication


def inputs_of(c: Cluster) -> AllocInputs:
    return AllocInputs.from_state(c.state(), replication, default_member_limit,
                                  default_member_exiting)


def solution(c: Cluster) -> Solution:
    return solve(inputs_of(c), c.state().assignments)


def assign_solution(c: Cluster, sol: Solution) -> None:
    """Make `sol` the current assignments, as converged allocation would."""
    for item, members in sol.items():
        for slot, (zone, suffix) in enumerate(members):
            c.assign(item, zone, suffix, slot)


def moves(before: Solution, after: Solution) -> int:
    return sum(len(set(m) - set(before.get(item, ()))) for item, m in after.items())


def test_zone_caps() -> None:
    assert zone_caps(3, 1) == (3, 3, 3)
    assert zone_caps(1, 3) == (1, 1, 1)
    assert zone_caps(3, 2) == (2, 2, 3)
    assert zone_caps(3, 3) == (1, 2, 3)
    assert zone_caps(5, 2) == (3, 4, 5)


def test_member_caps_are_fair_shares_then_capacity() -> None:
    assert member_caps({("z", "a"): 10, ("z", "b"): 10, ("z", "c"): 20}, 9) == {
        ("z", "a"): (2, 3, 10), ("z", "b"): (2, 3, 10), ("z", "c"): (4, 5, 20),
    }
    assert member_caps({("z", "a"): 2}, 9) == {("z", "a"): (9, 2, 2)}


def test_item_slots_budget_held_replicas_first() -> None:
    c = Cluster()
    c.member("z", "a", limit=2)
    c.member("z", "b", limit=1)
    for name in ("j1", "j2", "j3"):
        c.item(name, replication=3)
    c.assign("j3", "z", "a", 0)
    # Replication 3 is capped by two members; j3 holds a replica, so it is served first.
    held = held_by_item(c.state().assignments, inputs_of(c).members)
    assert item_slots(inputs_of(c), held) == {"j1": 2, "j3": 1}


def test_two_zones_every_replicated_item_spans_both() -> None:
    c = Cluster()
    for zone in ("east", "west"):
        for n in ("1", "2"):
            c.member(zone, zone[0] + n, limit=3)
    for i in range(3):
        c.item(f"j{i}", replication=2)
    c.item("k", replication=3)
    assert solution(c) == {
        "j0": (("east", "e1"), ("west", "w1")),
        "j1": (("east", "e2"), ("west", "w2")),
        "j2": (("east", "e1"), ("west", "w1")),
        "k": (("east", "e2"), ("west", "w1"), ("west", "w2")),
    }


def test_insufficient_zone_slots_put_all_replicas_in_one_zone() -> None:
    c = Cluster()
    c.member("east", "e1")
    c.member("east", "e2")
    c.member("west", "w1", limit=1)
    c.item("j1", replication=2)
    c.item("j2", replication=2)
    # west has one slot: j1 spans both zones, j2 can only be placed in east.
    assert solution(c) == {
        "j1": (("east", "e1"), ("west", "w1")),
        "j2": (("east", "e1"), ("east", "e2")),
    }


def test_insufficient_member_capacity_short_items_without_replicas() -> None:
    c = Cluster()
    c.member("z", "a", limit=2)
    c.member("z", "b", limit=2)
    for name in ("j1", "j2", "j3"):
        c.item(name, replication=2)
    c.assign("j3", "z", "a", 0)
    assert solution(c) == {
        "j1": (("z", "a"), ("z", "b")),
        "j2": (("z", "b"),),
        "j3": (("z", "a"),),
    }


def test_limit_zero_members_hold_nothing_and_add_no_zone() -> None:
    c = Cluster()
    c.member("east", "a")
    c.member("east", "b")
    c.member("west", "zero", limit=0)
    c.item("j", replication=2)
    c.assign("j", "west", "zero", 0)
    assert solution(c) == {"j": (("east", "a"), ("east", "b"))}


def test_member_joining_takes_its_share_with_minimal_moves() -> None:
    c = Cluster()
    for m in "abc":
        c.member("z", m)
    for i, m in enumerate("aabbcc"):
        c.item(f"j{i}")
        c.assign(f"j{i}", "z", m, 0)
    before = solution(c)
    c.member("z", "d")
    after = solution(c)
    assert after == {
        "j0": (("z", "d"),),
        "j1": (("z", "a"),),
        "j2": (("z", "b"),),
        "j3": (("z", "b"),),
        "j4": (("z", "c"),),
        "j5": (("z", "c"),),
    }
    assert moves(before, after) == 1


def test_member_leaving_moves_only_its_assignments() -> None:
    c = Cluster()
    for zone in ("east", "west"):
        for n in "123":
            c.member(zone, zone[0] + n, limit=100)
    for i in range(60):
        c.item(f"j{i:02d}", replication=3)
    before = solution(c)
    assign_solution(c, before)
    held = sum(1 for members in before.values() if ("west", "w2") in members)
    c.leave("west", "w2")
    after = solution(c)
    assert moves(before, after) == held == 30
    gone = ("west", "w2")
    untouched = {item: m for item, m in before.items() if gone not in m}
    assert {item: after[item] for item in untouched} == untouched
    assert all(set(m) - {gone} < set(after[item]) for item, m in before.items() if gone in m)
    assert sorted(Counter(m for ms in after.values() for m in ms).values()) == [36] * 5


def test_exiting_member_is_solved_away() -> None:
    c = Cluster()
    for m in "abc":
        c.member("z", m)
    for i in range(6):
        c.item(f"j{i}", replication=2)
    assign_solution(c, solution(c))
    c.member("z", "b", exiting=True)
    after = solution(c)
    assert all(("z", "b") not in members for members in after.values())
    assert Counter(m for ms in after.values() for m in ms) == {("z", "a"): 6, ("z", "c"): 6}


def test_changed_replication_adds_and_drops_the_difference() -> None:
    c = Cluster()
    for zone, m in (("east", "a"), ("east", "b"), ("west", "c"), ("west", "d")):
        c.member(zone, m)
    c.item("j", replication=2)
    before = solution(c)
    assign_solution(c, before)
    c.item("j", replication=3)
    up = solution(c)
    assert set(before["j"]) < set(up["j"]) and len(up["j"]) == 3
    c.item("j", replication=1)
    # The primary (slot 0) is the replica kept.
    assert solution(c) == {"j": (before["j"][0],)}


def test_retention_spreads_what_members_give_up_over_items() -> None:
    c = Cluster()
    for m in "abc":
        c.member("z", m)
    for i in range(4):
        c.item(f"j{i}", replication=3)
        for slot in range(3):
            c.assign(f"j{i}", "z", "abc"[(i + slot) % 3], slot)
    items = [ItemDemand(f"j{i}", 3, 3) for i in range(4)]
    shares: dict[MemberId, int] = {("z", "a"): 3, ("z", "b"): 3, ("z", "c"): 3}
    held = held_by_item(c.state().assignments, shares)
    kept = retained(items, held, shares)
    # Each member holds 4 and gives up one non-primary assignment, no two the same item.
    assert kept == [
        [(0, ("z", "a")), (1, ("z", "b")), (2, ("z", "c"))],
        [(0, ("z", "b")), (1, ("z", "c"))],
        [(0, ("z", "c")), (1, ("z", "a"))],
        [(0, ("z", "a")), (1, ("z", "b"))],
    ]


def test_held_by_item_orders_by_slot_and_skips_other_members() -> None:
    c = Cluster()
    for m in "abc":
        c.member("z", m)
    c.item("j", replication=3)
    c.assign("j", "z", "a", 2)
    c.assign("j", "z", "b", 0)
    c.assign("j", "z", "c", 1)
    c.item("k")
    c.assign("k", "z", "c", 0)
    members = {("z", "a"), ("z", "b")}
    assert held_by_item(c.state().assignments, members) == {
        "j": [(0, ("z", "b")), (2, ("z", "a"))],
    }
