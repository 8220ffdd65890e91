"""Changes that move current assignments one safe step toward a solution.

Per item: assignments of deleted items or departed members go; members of
the solution that lack the item get it (only while below their capacity);
assignments outside the solution go only while enough *consistent* replicas
remain; an item without a primary gets one; and an item with nothing else to
do has one assignment packed into a lower slot, so slots end up contiguous.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from gazette_core.allocator.changes import Add, Change, Move, Remove
from gazette_core.allocator.keys import AllocState, AssignmentKV, MemberId, assign_key, member_key
from gazette_core.allocator.keys import item_key as item_key_of
from gazette_core.allocator.solver import Solution

Consistent = Callable[[AssignmentKV, Sequence[AssignmentKV]], bool]


def converge(
    state: AllocState,
    solution: Solution,
    capacity: Mapping[MemberId, int],
    consistent: Consistent,
) -> list[Change]:
    """Changes due this round, item by item in name order."""
    return _Converger(state, solution, capacity, consistent).run()


class _Converger:
    """Member loads as this round's changes accrue."""

    def __init__(
        self,
        state: AllocState,
        solution: Solution,
        capacity: Mapping[MemberId, int],
        consistent: Consistent,
    ) -> None:
        self.state = state
        self.solution = solution
        self.capacity = capacity
        self.consistent = consistent
        # `load` drops with removes (ranking who sheds first); `held` never does,
        # so adds stay within capacity even if a remove in the same round fails.
        self.load = Counter(state.member_load)
        self.held = Counter(state.member_load)
        self.primary_load = Counter(
            a.member for entries in state.assignments.values() for a in entries if a.slot == 0
        )

    def run(self) -> list[Change]:
        changes: list[Change] = []
        root = self.state.root
        for item in sorted(self.state.items.keys() | self.state.assignments.keys()):
            entries = self.state.item_assignments(item)
            if item not in self.state.items:
                # Unless the item is re-created meanwhile (its key then has revisions).
                guard = item_key_of(root, item)
                changes += [Remove(a.kv.key, a.kv.mod_revision, guard, 0) for a in entries]
            else:
                changes += self._item(item, entries)
        return changes

    def _item(self, item: str, entries: list[AssignmentKV]) -> list[Change]:
        root = self.state.root
        members = self.state.members
        # A member key only vanishes with its lease, so leftovers serve nothing.
        changes: list[Change] = [
            Remove(a.kv.key, a.kv.mod_revision, member_key(root, *a.member), 0)
            for a in entries
            if a.member not in members
        ]
        live = [a for a in entries if a.member in members]
        target = self.solution.get(item, ())
        consistent = _Memo(self.consistent, entries)
        removed = self._removes(live, consistent, target)
        remaining = [a for a in live if a not in removed]
        promoted = self._promote(item, remaining, consistent, target)
        adds = self._adds(item, remaining, target, promoted)
        guard = self.state.items[item]
        # Guarded by the item key, so a changed spec is re-planned first.
        changes += [Remove(a.kv.key, a.kv.mod_revision, guard.key, guard.mod_revision)
                    for a in removed]
        changes += promoted
        changes += adds
        if not changes:
            changes += self._pack(item, live)
        return changes

    def _removes(
        self, live: list[AssignmentKV], consistent: _Memo, target: tuple[MemberId, ...]
    ) -> list[AssignmentKV]:
        """Assignments outside `target` that may go now, most-loaded members first."""
        extra = sorted((a for a in live if a.member not in target),
                       key=lambda a: (-self.load[a.member], -a.slot, a.member))
        if not extra:
            return []
        n_consistent = sum(1 for a in live if consistent(a))
        removed: list[AssignmentKV] = []
        for a in extra:
            left = n_consistent - consistent(a)
            if left < len(target):
                continue
            removed.append(a)
            n_consistent = left
            self.load[a.member] -= 1
        return removed

    def _promote(
        self,
        item: str,
        remaining: list[AssignmentKV],
        consistent: _Memo,
        target: tuple[MemberId, ...],
    ) -> list[Move]:
        """A move of the best remaining assignment to slot 0, if no primary remains."""
        if not remaining or any(a.slot == 0 for a in remaining):
            return []
        best = min(remaining, key=lambda a: (
            not consistent(a),
            a.member not in target,
            self.primary_load[a.member],
            a.member,
        ))
        self.primary_load[best.member] += 1
        return [self._move(item, best, 0)]

    def _adds(
        self,
        item: str,
        remaining: list[AssignmentKV],
        target: tuple[MemberId, ...],
        promoted: list[Move],
    ) -> list[Add]:
        """Assignments to target members lacking the item, at the lowest unused slots."""
        have = {a.member for a in remaining}
        used = {a.slot for a in remaining}
        if promoted:
            moved = next(a for a in remaining if a.kv.key == promoted[0].key)
            used = (used - {moved.slot}) | {0}
        members = [m for m in target
                   if m not in have and self.held[m] < self.capacity.get(m, 0)]
        if 0 not in used:
            # A new item's first replica is its primary: balance primaries across members.
            members.sort(key=lambda m: self.primary_load[m])
        adds: list[Add] = []
        slot = 0
        for member in members:
            while slot in used:
                slot += 1
            used.add(slot)
            kv = self.state.members[member]
            key = assign_key(self.state.root, item, member[0], member[1], slot)
            adds.append(Add(key, kv.key, kv.mod_revision, kv.lease))
            self.held[member] += 1
            self.load[member] += 1
            if slot == 0:
                self.primary_load[member] += 1
        return adds

    def _pack(self, item: str, live: list[AssignmentKV]) -> list[Move]:
        """Move the highest-slot assignment into the lowest gap, if slots aren't 0..n-1."""
        if not live:
            return []
        last = max(live, key=lambda a: a.slot)
        if last.slot < len(live):
            return []
        used = {a.slot for a in live}
        gap = next(slot for slot in range(len(live)) if slot not in used)
        return [self._move(item, last, gap)]

    def _move(self, item: str, a: AssignmentKV, slot: int) -> Move:
        new_key = assign_key(self.state.root, item, a.member[0], a.member[1], slot)
        return Move(a.kv.key, a.kv.mod_revision, new_key, a.kv.raw, a.kv.lease)



class _Memo:
    """Route consistency of one item's assignments, each decoded at most once."""

    def __init__(self, consistent: Consistent, entries: Sequence[AssignmentKV]) -> None:
        self._consistent = consistent
        self._entries = entries
        self._known: dict[str, bool] = {}

    def __call__(self, a: AssignmentKV) -> int:
        known = self._known.get(a.kv.key)
        if known is None:
            known = self._known[a.kv.key] = self._consistent(a, self._entries)
        return int(known)
