"""Solver inputs: spec readers, exiting members shedding capacity, the fingerprint."""

from __future__ import annotations

from gazette_core.allocator.inputs import (
    AllocInputs,
    MemberInput,
    default_member_exiting,
    default_member_limit,
    shed_capacity,
)
from gazette_core.broker.protocol import protocol_pb2 as pb
from tests.allocator.support import Cluster, replication


def member(suffix: str, limit: int, exiting: bool = False, rev: int = 1,
           zone: str = "z") -> MemberInput:
    return MemberInput((zone, suffix), f"/r/members/{zone}#{suffix}", limit, exiting, rev)


def test_default_spec_readers() -> None:
    assert default_member_limit(pb.BrokerSpec(journal_limit=7)) == 7
    assert default_member_limit(pb.BrokerSpec(journal_limit=7, exiting=True)) == 7
    assert default_member_limit(b"raw") == 0
    assert default_member_exiting(pb.BrokerSpec(exiting=True))
    assert not default_member_exiting(pb.BrokerSpec())
    assert not default_member_exiting(b"raw")


def test_from_state_reads_specs_through_callables() -> None:
    c = Cluster()
    c.member("west", "b", limit=4, exiting=True)
    c.member("east", "a", limit=6)
    c.item("j/2", replication=2)
    c.item("j/1", replication=3)
    inputs = AllocInputs.from_state(c.state(), replication, default_member_limit,
                                    default_member_exiting)
    assert inputs.items == {"j/1": 3, "j/2": 2}
    assert inputs.members == {
        ("east", "a"): MemberInput(("east", "a"), "/r/members/east#a", 6, False, 3),
        ("west", "b"): MemberInput(("west", "b"), "/r/members/west#b", 4, True, 2),
    }
    # 10 slots for a demand of 2 + 2 (replication 3 capped by the two members), but
    # shedding b would leave fewer full members than the largest replication.
    assert inputs.capacity == {("east", "a"): 6, ("west", "b"): 4}
    assert inputs.zones == ["east", "west"]


def test_exiting_members_shed_spare_capacity_oldest_first() -> None:
    members = [member("a", 10), member("b", 10), member("old", 10, True, rev=1),
               member("new", 10, True, rev=2)]
    # 40 slots, demand 25: 15 spare. The older exiting member sheds all 10, the newer 5.
    assert shed_capacity(members, [2] * 12 + [1]) == {
        ("z", "a"): 10, ("z", "b"): 10, ("z", "old"): 0, ("z", "new"): 5,
    }
    # No spare capacity: nobody sheds.
    assert shed_capacity(members, [10, 10, 10, 10]) == {
        ("z", "a"): 10, ("z", "b"): 10, ("z", "old"): 10, ("z", "new"): 10,
    }


def test_shedding_keeps_enough_full_members_for_replication() -> None:
    members = [member("a", 10), member("b", 10), member("x", 10, True)]
    assert shed_capacity(members, [2]) == {("z", "a"): 10, ("z", "b"): 10, ("z", "x"): 0}
    assert shed_capacity(members, [3]) == {("z", "a"): 10, ("z", "b"): 10, ("z", "x"): 10}


def test_limit_zero_members_contribute_no_zone() -> None:
    inputs = AllocInputs({"j": 2}, {
        ("east", "a"): member("a", 5, zone="east"),
        ("west", "b"): member("b", 0, zone="west"),
    })
    assert inputs.capacity == {("east", "a"): 5, ("west", "b"): 0}
    assert inputs.zones == ["east"]


def test_fingerprint_covers_every_input() -> None:
    base = AllocInputs({"j": 2}, {("z", "a"): member("a", 5)})
    variants = [
        AllocInputs({"j": 3}, {("z", "a"): member("a", 5)}),
        AllocInputs({"k": 2}, {("z", "a"): member("a", 5)}),
        AllocInputs({"j": 2}, {("z", "a"): member("a", 6)}),
        AllocInputs({"j": 2}, {("z", "a"): member("a", 5, exiting=True)}),
        AllocInputs({"j": 2}, {("z", "a"): member("a", 5, rev=9)}),
        AllocInputs({"j": 2}, {("z", "b"): member("b", 5)}),
    ]
    assert base.fingerprint() == AllocInputs({"j": 2}, {("z", "a"): member("a", 5)}).fingerprint()
    fingerprints = {v.fingerprint() for v in variants}
    assert len(fingerprints) == len(variants)
    assert base.fingerprint() not in fingerprints
