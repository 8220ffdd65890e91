"""Which current assignments a new solution starts from.

The solver keeps a current assignment unless its item now wants fewer
replicas, it would leave the item's replicas in a single zone, or its member
holds more than a fair share. A member over its share gives up non-primary
assignments first, and members prefer items no other member gave up: those
items then need one new replica each, which a joining or under-loaded member
can take, rather than several that only separate members could.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from gazette_core.allocator.keys import MemberId

# An item's current assignments as (slot, member), by slot.
Held = Sequence[tuple[int, MemberId]]


class ItemDemand(NamedTuple):
    """An item's name, the replicas it may get, and how many of them one zone may hold."""

    name: str
    replicas: int
    zone_cap: int


def retained(
    items: Sequence[ItemDemand],
    held: Mapping[str, Held],
    shares: Mapping[MemberId, int],
) -> list[list[tuple[int, MemberId]]]:
    """Per item (in order), the held (slot, member) pairs to keep, on members of `shares`."""
    kept = [_fitting(item, held.get(item.name, ()), shares) for item in items]
    load = Counter(member for entries in kept for _, member in entries)
    gave_up: set[int] = set()
    for rank, member in enumerate(shares):
        excess = load[member] - shares[member]
        if excess <= 0:
            continue
        # Each member starts its search at a different item, spreading what is given up.
        start = rank * len(items) // len(shares)
        mine = [(i, pair) for i, entries in enumerate(kept) for pair in entries
                if pair[1] == member]
        mine.sort(key=lambda entry: (entry[1][0] == 0, entry[0] in gave_up,
                                     (entry[0] - start) % len(items)))
        for i, pair in mine[:excess]:
            kept[i].remove(pair)
            gave_up.add(i)
    return kept


def _fitting(
    item: ItemDemand, held: Held, shares: Mapping[MemberId, int]
) -> list[tuple[int, MemberId]]:
    """Lowest-slot assignments within the item's replicas and zone cap."""
    kept: list[tuple[int, MemberId]] = []
    members: set[MemberId] = set()
    zones: Counter[str] = Counter()
    for slot, member in held:
        if len(kept) == item.replicas:
            break
        if member in shares and member not in members and zones[member[0]] < item.zone_cap:
            kept.append((slot, member))
            members.add(member)
            zones[member[0]] += 1
    return kept
