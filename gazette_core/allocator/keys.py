"""Etcd key layout of allocation state, and a snapshot of it taken from a KeySpace.

Under a root `R`: items at `R/items/<name>`, members at
`R/members/<zone>#<suffix>`, assignments at
`R/assign/<item>#<zone>#<suffix>#<slot>`. Every character allowed in names,
zones and suffixes sorts after `#`, so key order equals (item, zone, suffix)
order, which is the order of a Route's members.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from gazette_core.keyspace.keyspace import KeySpace, KeyValue

log = logging.getLogger(__name__)

SEP = "#"
ITEMS = "/items/"
MEMBERS = "/members/"
ASSIGN = "/assign/"

MemberId = tuple[str, str]  # (zone, suffix)


def item_key(root: str, name: str) -> str:
    """Key of the item (journal or shard) `name`."""
    return f"{root}{ITEMS}{name}"


def member_key(root: str, zone: str, suffix: str) -> str:
    """Key of the member (broker or consumer) `zone`/`suffix`."""
    return f"{root}{MEMBERS}{zone}{SEP}{suffix}"


def assign_key(root: str, item: str, zone: str, suffix: str, slot: int) -> str:
    """Key of the assignment of `item` to a member at `slot` (0 = primary)."""
    return f"{root}{ASSIGN}{item}{SEP}{zone}{SEP}{suffix}{SEP}{slot}"


def _strip(root: str, prefix: str, key: str) -> str:
    head = root + prefix
    if not key.startswith(head):
        raise ValueError(f"key {key!r} is not under {head!r}")
    return key[len(head):]


def parse_item_key(root: str, key: str) -> str:
    """The item name of an item key."""
    name = _strip(root, ITEMS, key)
    if not name:
        raise ValueError(f"item key {key!r} has an empty name")
    return name


def parse_member_key(root: str, key: str) -> MemberId:
    """(zone, suffix) of a member key."""
    parts = _strip(root, MEMBERS, key).split(SEP)
    if len(parts) != 2 or not all(parts):
        raise ValueError(f"member key {key!r} is not <zone>#<suffix>")
    return parts[0], parts[1]


@dataclass(frozen=True, order=True)
class Assignment:
    """An assignment key's parts."""

    item: str
    zone: str
    suffix: str
    slot: int

    @property
    def member(self) -> MemberId:
        return self.zone, self.suffix


def parse_assign_key(root: str, key: str) -> Assignment:
    """The parts of an assignment key."""
    parts = _strip(root, ASSIGN, key).split(SEP)
    if len(parts) != 4 or not all(parts) or not parts[3].isdecimal():
        raise ValueError(f"assignment key {key!r} is not <item>#<zone>#<suffix>#<slot>")
    return Assignment(parts[0], parts[1], parts[2], int(parts[3]))


@dataclass(frozen=True)
class AssignmentKV:
    """A parsed assignment with its KeySpace entry (value, revisions, lease)."""

    assignment: Assignment
    kv: KeyValue

    @property
    def member(self) -> MemberId:
        return self.assignment.member

    @property
    def slot(self) -> int:
        return self.assignment.slot


class AllocState:
    """Items, members and assignments under `root`, indexed for allocation."""

    def __init__(self, root: str, kvs: Iterable[KeyValue], revision: int = 0) -> None:
        self.root = root
        self.revision = revision
        self.items: dict[str, KeyValue] = {}
        self.members: dict[MemberId, KeyValue] = {}
        self.assignments: dict[str, list[AssignmentKV]] = {}
        self.member_load: dict[MemberId, int] = {}
        self._assign_prefix = root + ASSIGN
        for kv in sorted(kvs, key=lambda kv: kv.key):
            try:
                self._add(kv)
            except ValueError as exc:
                log.warning("ignoring allocation key: %s", exc)

    @classmethod
    def from_keyspace(cls, keyspace: KeySpace, root: str) -> AllocState:
        """A snapshot of `keyspace`'s allocation keys under `root`."""
        return cls(root, keyspace.prefixed(root + "/"), keyspace.revision)

    def _add(self, kv: KeyValue) -> None:
        # Assignments outnumber everything else: test for them first.
        if kv.key.startswith(self._assign_prefix):
            entry = AssignmentKV(parse_assign_key(self.root, kv.key), kv)
            self.assignments.setdefault(entry.assignment.item, []).append(entry)
            self.member_load[entry.member] = self.member_load.get(entry.member, 0) + 1
        elif kv.key.startswith(self.root + ITEMS):
            self.items[parse_item_key(self.root, kv.key)] = kv
        elif kv.key.startswith(self.root + MEMBERS):
            self.members[parse_member_key(self.root, kv.key)] = kv

    def item_assignments(self, item: str) -> list[AssignmentKV]:
        """Assignments of `item` in key order, i.e. by (zone, suffix, slot)."""
        return self.assignments.get(item, [])

    def primary(self, item: str) -> AssignmentKV | None:
        """The slot-0 assignment of `item`, if any."""
        return next((a for a in self.item_assignments(item) if a.slot == 0), None)

    def leader(self) -> KeyValue | None:
        """The member key with the lowest create revision: the allocating leader."""
        return min(self.members.values(), key=lambda kv: kv.create_revision, default=None)
