"""Allocation key layout, parsers and the AllocState index."""

from __future__ import annotations

import pytest

from gazette_core.allocator import keys
from gazette_core.allocator.keys import AllocState, Assignment, AssignmentKV
from gazette_core.keyspace.keyspace import KeyValue

R = "/root"


def kv(key: str, create: int = 1, value: bytes = b"") -> KeyValue:
    return KeyValue(key, value, value, create, create, 1, 0)


def test_key_builders() -> None:
    assert keys.item_key(R, "a/journal") == "/root/items/a/journal"
    assert keys.member_key(R, "us-east", "broker-1") == "/root/members/us-east#broker-1"
    assert keys.assign_key(R, "a/j", "z", "b-1", 3) == "/root/assign/a/j#z#b-1#3"


def test_parsers_round_trip() -> None:
    assert keys.parse_item_key(R, "/root/items/a/j") == "a/j"
    assert keys.parse_member_key(R, "/root/members/z#b-1") == ("z", "b-1")
    got = keys.parse_assign_key(R, "/root/assign/a/j#z#b-1#12")
    assert got == Assignment("a/j", "z", "b-1", 12)


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("/root/members/z", "member key '/root/members/z' is not <zone>#<suffix>"),
        ("/root/members/z#a#b", "member key '/root/members/z#a#b' is not <zone>#<suffix>"),
        ("/other/members/z#a", "key '/other/members/z#a' is not under '/root/members/'"),
    ],
)
def test_parse_member_key_errors(key: str, message: str) -> None:
    with pytest.raises(ValueError) as err:
        keys.parse_member_key(R, key)
    assert str(err.value) == message


@pytest.mark.parametrize(
    "key",
    ["/root/assign/j#z#s", "/root/assign/j#z#s#x", "/root/assign/j##s#0", "/root/assign/j#z#s#-1"],
)
def test_parse_assign_key_errors(key: str) -> None:
    with pytest.raises(ValueError) as err:
        keys.parse_assign_key(R, key)
    assert str(err.value) == f"assignment key {key!r} is not <item>#<zone>#<suffix>#<slot>"


def test_alloc_state_indexes_keys() -> None:
    a0 = kv("/root/assign/j1#z#b#1", 9)
    a1 = kv("/root/assign/j1#a#c#0", 8)
    a2 = kv("/root/assign/gone#z#b#0", 7)
    items = [kv("/root/items/j1", 2), kv("/root/items/j2", 3)]
    members = [kv("/root/members/z#b", 5), kv("/root/members/a#c", 4)]
    state = AllocState(R, [a0, *members, a1, *items, a2, kv("/root/assign/bad", 1)], revision=10)

    assert state.revision == 10
    assert state.items == {"j1": items[0], "j2": items[1]}
    assert state.members == {("z", "b"): members[0], ("a", "c"): members[1]}
    assert state.assignments == {
        "gone": [AssignmentKV(Assignment("gone", "z", "b", 0), a2)],
        "j1": [
            AssignmentKV(Assignment("j1", "a", "c", 0), a1),
            AssignmentKV(Assignment("j1", "z", "b", 1), a0),
        ],
    }
    assert state.member_load == {("z", "b"): 2, ("a", "c"): 1}
    assert state.primary("j1") == AssignmentKV(Assignment("j1", "a", "c", 0), a1)
    assert state.primary("j2") is None
    assert state.item_assignments("j2") == []
    assert state.leader() == members[1]
    assert AllocState(R, []).leader() is None
