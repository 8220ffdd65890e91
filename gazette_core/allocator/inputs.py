"""What the allocation solver depends on: desired replication, member capacities and zones.

Inputs are read from an AllocState through callables, so the same solver
serves brokers (journal_limit) and consumers (shard_limit). Exiting members
shed capacity, oldest first, as far as the cluster's spare capacity allows:
the solver then places their items elsewhere, and they can leave once empty.
A fingerprint of the inputs tells the allocator when a new solution is due.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from gazette_core.allocator.keys import AllocState, MemberId

Desired = Callable[[object], int]
MemberLimit = Callable[[object], int]
MemberExiting = Callable[[object], bool]


def default_member_limit(spec: object) -> int:
    """Item capacity of a BrokerSpec (journal_limit) or ConsumerSpec (shard_limit)."""
    for name in ("journal_limit", "shard_limit"):
        limit = getattr(spec, name, None)
        if isinstance(limit, int):
            return limit
    return 0


def default_member_exiting(spec: object) -> bool:
    """Whether a member spec is marked exiting (it wants to be drained and leave)."""
    return bool(getattr(spec, "exiting", False))


@dataclass(frozen=True)
class MemberInput:
    """One member as the solver sees it."""

    id: MemberId
    key: str
    limit: int
    exiting: bool
    create_revision: int


@dataclass
class AllocInputs:
    """Desired replication per item (name order) and members with their capacities."""

    items: dict[str, int]
    members: dict[MemberId, MemberInput]
    capacity: dict[MemberId, int] = field(init=False)

    def __post_init__(self) -> None:
        self.capacity = shed_capacity(list(self.members.values()), self.items.values())

    @classmethod
    def from_state(
        cls,
        state: AllocState,
        desired: Desired,
        member_limit: MemberLimit,
        member_exiting: MemberExiting,
    ) -> AllocInputs:
        """Inputs of `state`'s items and members, via the caller's spec readers."""
        items = {name: max(0, desired(kv.decoded)) for name, kv in sorted(state.items.items())}
        members = {
            m: MemberInput(m, kv.key, max(0, member_limit(kv.decoded)),
                           member_exiting(kv.decoded), kv.create_revision)
            for m, kv in sorted(state.members.items())
        }
        return cls(items, members)

    @property
    def zones(self) -> list[str]:
        """Zones of the members that can take items (capacity > 0), sorted."""
        return sorted({m[0] for m, cap in self.capacity.items() if cap > 0})

    def fingerprint(self) -> bytes:
        """A digest of everything a solution depends on (not current assignments)."""
        digest = hashlib.blake2b(digest_size=16)
        for m in self.members.values():
            digest.update(f"m\0{m.key}\0{m.limit}\0{m.exiting:d}\0{m.create_revision}\n".encode())
        for name, replication in self.items.items():
            digest.update(f"i\0{name}\0{replication}\n".encode())
        return digest.digest()


def shed_capacity(members: list[MemberInput], desired: Iterable[int]) -> dict[MemberId, int]:
    """Capacity per member: its limit, less what exiting members can shed.

    Exiting members shed, oldest (lowest create revision) first, only the
    capacity the cluster can spare beyond its total demand, and never so many
    that fewer members remain at full capacity than the largest replication.
    """
    capacity = {m.id: m.limit for m in members}
    able = sum(1 for m in members if m.limit > 0)
    wanted = [min(r, able) for r in desired]
    spare = sum(capacity.values()) - sum(wanted)
    full = able
    keep_full = max(wanted, default=0)
    for m in sorted((m for m in members if m.exiting and m.limit > 0),
                    key=lambda m: (m.create_revision, m.id)):
        if spare <= 0 or full - 1 < keep_full:
            break
        shed = min(m.limit, spare)
        capacity[m.id] -= shed
        spare -= shed
        full -= 1
    return capacity
