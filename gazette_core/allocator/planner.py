"""The allocation planner: a pure function from AllocState to assignment changes.

A simple greedy policy, good for one or a few members: per item, in name
order, add replicas on the least-loaded eligible members, remove excess ones
(members going away first, then the highest slot) while enough consistent
replicas remain, and promote a replica to slot 0 when the item has no
primary. Assignments of vanished items or members are deleted outright.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence

from gazette_core.allocator.changes import Add, Change, Move, Remove
from gazette_core.allocator.consistency import route_consistent
from gazette_core.allocator.keys import (
    AllocState,
    AssignmentKV,
    assign_key,
    item_key,
    member_key,
)
from gazette_core.keyspace.keyspace import KeyValue

Desired = Callable[[object], int]
MemberLimit = Callable[[object], int]
Consistent = Callable[[AssignmentKV, Sequence[AssignmentKV]], bool]


def default_member_limit(spec: object) -> int:
    """Item capacity of a BrokerSpec (journal_limit) or ConsumerSpec (shard_limit); 0 if exiting."""
    if getattr(spec, "exiting", False):
        return 0
    for field in ("journal_limit", "shard_limit"):
        limit = getattr(spec, field, None)
        if isinstance(limit, int):
            return limit
    return 0


def plan(
    state: AllocState,
    desired: Desired,
    member_limit: MemberLimit = default_member_limit,
    consistent: Consistent = route_consistent,
) -> list[Change]:
    """Every change that moves `state` toward its desired assignments."""
    return _Planner(state, desired, member_limit, consistent).run()


class _Planner:
    """Working state of one planning pass: member limits and loads as changes accrue."""

    def __init__(
        self,
        state: AllocState,
        desired: Desired,
        member_limit: MemberLimit,
        consistent: Consistent,
    ) -> None:
        self.state = state
        self.desired = desired
        self.consistent = consistent
        self.limits = {m: member_limit(kv.decoded) for m, kv in state.members.items()}
        self.eligible = sorted(m for m, limit in self.limits.items() if limit > 0)
        self.load = Counter(state.member_load)
        self.primary_load = Counter(
            a.member for entries in state.assignments.values() for a in entries if a.slot == 0
        )

    def run(self) -> list[Change]:
        changes: list[Change] = []
        for item in sorted(set(self.state.items) | set(self.state.assignments)):
            entries = self.state.item_assignments(item)
            item_kv = self.state.items.get(item)
            if item_kv is None:
                # The item is gone: its assignments go too, unless it is re-created meanwhile.
                guard = item_key(self.state.root, item)
                changes += [Remove(a.kv.key, a.kv.mod_revision, guard, 0) for a in entries]
            else:
                changes += self._item(item, item_kv, entries)
        return changes

    def _item(self, item: str, item_kv: KeyValue, entries: list[AssignmentKV]) -> list[Change]:
        root = self.state.root
        want = max(0, min(self.desired(item_kv.decoded), len(self.eligible)))
        live = [a for a in entries if a.member in self.state.members]
        # A member key can only vanish with its lease; leftovers serve nothing.
        changes: list[Change] = [
            Remove(a.kv.key, a.kv.mod_revision, member_key(root, *a.member), 0)
            for a in entries
            if a.member not in self.state.members
        ]
        adds = self._adds(item, live, want)
        removed = self._removes(item_kv, live, entries, want, len(adds))
        changes += adds
        changes += [Remove(a.kv.key, a.kv.mod_revision, item_kv.key, item_kv.mod_revision)
                    for a in removed]
        remaining = [a for a in live if a not in removed]
        if remaining and all(a.slot != 0 for a in remaining):
            changes.append(self._promote(item, remaining, entries))
        return changes

    def _adds(self, item: str, live: list[AssignmentKV], want: int) -> list[Add]:
        assigned = {a.member for a in live}
        valid = sum(1 for a in live if self.limits[a.member] > 0)
        candidates = sorted(
            (m for m in self.eligible if m not in assigned and self.load[m] < self.limits[m]),
            key=lambda m: (self.load[m], self.primary_load[m], m),
        )
        slots = _free_slots({a.slot for a in live}, start=1 if live else 0)
        adds: list[Add] = []
        for member in candidates[: max(0, want - valid)]:
            slot = next(slots)
            kv = self.state.members[member]
            key = assign_key(self.state.root, item, member[0], member[1], slot)
            adds.append(Add(key, kv.key, kv.mod_revision, kv.lease))
            self.load[member] += 1
            if slot == 0:
                self.primary_load[member] += 1
        return adds

    def _removes(
        self,
        item_kv: KeyValue,
        live: list[AssignmentKV],
        entries: list[AssignmentKV],
        want: int,
        added: int,
    ) -> list[AssignmentKV]:
        count = len(live) + added
        n_consistent = sum(1 for a in live if self.consistent(a, entries))
        # Replicas on members that may not hold items go first, then the highest slots.
        order = sorted(live, key=lambda a: (self.limits[a.member] > 0, -a.slot))
        removed: list[AssignmentKV] = []
        for entry in order:
            if count <= want:
                break
            is_consistent = int(self.consistent(entry, entries))
            if n_consistent - is_consistent < want:
                continue
            removed.append(entry)
            count -= 1
            n_consistent -= is_consistent
            self.load[entry.member] -= 1
        return removed

    def _promote(
        self, item: str, remaining: list[AssignmentKV], entries: list[AssignmentKV]
    ) -> Move:
        best = min(
            remaining,
            key=lambda a: (
                not self.consistent(a, entries),
                self.limits[a.member] <= 0,
                self.primary_load[a.member],
                a.member,
            ),
        )
        self.primary_load[best.member] += 1
        zone, suffix = best.member
        new_key = assign_key(self.state.root, item, zone, suffix, 0)
        return Move(best.kv.key, best.kv.mod_revision, new_key, best.kv.raw, best.kv.lease)


def _free_slots(used: set[int], start: int) -> Iterator[int]:
    slot = start
    while True:
        if slot not in used:
            yield slot
        slot += 1
