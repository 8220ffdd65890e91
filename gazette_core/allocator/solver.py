"""The zone-aware assignment solution: a maximum flow from items to members.

The network is source -> item (capacity: its replication, bounded by the
member slots left) -> item x zone -> member (capacity 1: one replica per
member) -> sink (the member's capacity). Flow on item x zone -> member is
an assignment.

Preferences are expressed by solving in stages, each augmenting the flow of
the one before under looser capacities, so an earlier stage's choices are
only undone where a later one needs them for more flow:

* current assignments are the initial flow wherever they fit their member's
  fair share (rounded down) and leave another zone a replica, and they are
  pinned (their reverse arcs closed), so the balancing stages only route new
  placements around each other;
* members hold a fair share of the total demand (rounded down, then up)
  before their full capacity;
* an item's zones first take an even split of its replicas, then all but one
  (so >= 2 zones), and only in the last stage all of them;
* current assignments are unpinned only when items remain unplaced, and the
  shortest augmenting paths (current members tried first) move the fewest.

The last stage is the unrestricted network, so the result is a maximum flow.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TypeVar

from gazette_core.allocator.flow import FlowNetwork
from gazette_core.allocator.inputs import AllocInputs
from gazette_core.allocator.keys import AssignmentKV, MemberId
from gazette_core.allocator.retention import Held, ItemDemand, retained

Solution = dict[str, tuple[MemberId, ...]]
T = TypeVar("T")

SOURCE, SINK = 0, 1
# Per-zone cap of an item's replicas: an even split, all but one, all.
EVEN, AT_MOST, ALL = 0, 1, 2
# Member capacity: a fair share rounded down, rounded up, and the whole.
FAIR_FLOOR, FAIR, FULL = 0, 1, 2
# (zone cap, member capacity, current assignments pinned), most restrictive first.
STAGES = (
    (EVEN, FAIR_FLOOR, True),
    (EVEN, FAIR, True),
    (AT_MOST, FAIR, True),
    (AT_MOST, FULL, True),
    (AT_MOST, FULL, False),
    (ALL, FULL, False),
)


def zone_caps(replication: int, zones: int) -> tuple[int, int, int]:
    """An item's per-zone replica caps, indexed by EVEN, AT_MOST and ALL."""
    if zones <= 1 or replication <= 1:
        return replication, replication, replication
    return -(-replication // zones), replication - 1, replication


def held_by_item(
    current: Mapping[str, Sequence[AssignmentKV]], members: Collection[MemberId]
) -> dict[str, list[tuple[int, MemberId]]]:
    """Per item, (slot, member) of its current assignments on `members`, by slot."""
    held: dict[str, list[tuple[int, MemberId]]] = {}
    for item, entries in current.items():
        pairs = [(a.assignment.slot, (a.assignment.zone, a.assignment.suffix)) for a in entries]
        pairs = sorted(pair for pair in pairs if pair[1] in members)
        if pairs:
            held[item] = pairs
    return held


def item_slots(inputs: AllocInputs, held: Mapping[str, Held]) -> dict[str, int]:
    """Replicas each item may get: its replication, bounded by members and remaining slots.

    Replicas an item holds are budgeted first, so when slots are short the
    items going without are ones that hold none, not ones that hold data.
    """
    able = [cap for cap in inputs.capacity.values() if cap > 0]
    remaining = sum(able)
    wanted = {name: min(replication, len(able)) for name, replication in inputs.items.items()}
    slots: dict[str, int] = {}
    for name, want in wanted.items():
        slots[name] = min(want, len({m for _, m in held.get(name, ())}), remaining)
        remaining -= slots[name]
    for name, want in wanted.items():
        more = min(want - slots[name], remaining)
        slots[name] += more
        remaining -= more
    return {name: n for name, n in slots.items() if n > 0}


def member_caps(capacity: Mapping[MemberId, int], demand: int) -> dict[MemberId, tuple[int, ...]]:
    """Per member, indexed by FAIR_FLOOR, FAIR and FULL: its share of `demand`
    in proportion to its capacity, rounded down and up, and its capacity."""
    total = sum(capacity.values())
    return {m: (demand * cap // total, min(cap, -(-demand * cap // total)), cap)
            for m, cap in capacity.items()}


def solve(inputs: AllocInputs, current: Mapping[str, Sequence[AssignmentKV]]) -> Solution:
    """Members of each item that gets any, keeping `current` assignments where possible."""
    network = _Network(inputs, current)
    network.keep()
    for stage in STAGES:
        network.apply(*stage)
        network.flow.max_flow(SOURCE, SINK)
    return network.solution()


class _ItemArcs:
    """The arcs of one item: to each zone, and from there a fan to the zone's members."""

    __slots__ = ("caps", "current", "fans", "name", "source_arc", "zone_arcs")

    def __init__(self, name: str, source_arc: int, caps: tuple[int, int, int]) -> None:
        self.name = name
        self.source_arc = source_arc
        self.caps = caps
        self.zone_arcs: list[int] = []
        # (first arc, members) of each zone's fan: member k's arc is first + 2k.
        self.fans: list[tuple[int, list[MemberId]]] = []
        # (zone arc, member arc) of members currently holding the item.
        self.current: dict[MemberId, tuple[int, int]] = {}


class _Network:
    """The flow network of one solve, built with the capacities current assignments get."""

    def __init__(self, inputs: AllocInputs, current: Mapping[str, Sequence[AssignmentKV]]) -> None:
        capacity = {m: cap for m, cap in inputs.capacity.items() if cap > 0}
        self.held = held_by_item(current, capacity)
        slots = item_slots(inputs, self.held)
        self.caps = member_caps(capacity, sum(slots.values()))
        self.flow = FlowNetwork(2 + len(capacity))
        self.member_node = {m: 2 + k for k, m in enumerate(capacity)}
        self.sink_arcs = {m: self.flow.add_arc(node, SINK, self.caps[m][FAIR])
                          for m, node in self.member_node.items()}
        by_zone: dict[str, list[MemberId]] = {}
        for m in capacity:
            by_zone.setdefault(m[0], []).append(m)
        self.zones = sorted(by_zone)
        # Each zone's members in every rotation, so items spread over them.
        self.rotations = {zone: [_rotated(members, k) for k in range(len(members))]
                          for zone, members in by_zone.items()}
        self.stage = (-1, -1, True)
        self.pinned: list[int] = []
        self.items = [self._add_item(index, name, n)
                      for index, (name, n) in enumerate(slots.items())]

    def _add_item(self, index: int, name: str, n: int) -> _ItemArcs:
        flow, member_node = self.flow, self.member_node
        node = flow.add_node()
        item = _ItemArcs(name, flow.add_arc(SOURCE, node, n), zone_caps(n, len(self.zones)))
        held = {m for _, m in self.held.get(name, ())}
        # Current zones and members first; the rest rotated per item to spread load.
        zones = _rotated(self.zones, index)
        if held:
            held_zones = sorted({m[0] for m in held})
            zones = held_zones + [z for z in zones if z not in held_zones]
        for zone in zones:
            zone_node = flow.add_node()
            zone_arc = flow.add_arc(node, zone_node, item.caps[AT_MOST])
            item.zone_arcs.append(zone_arc)
            rotations = self.rotations[zone]
            ordered = rotations[index % len(rotations)]
            mine = [m for m in ordered if m in held]
            if mine:
                ordered = mine + [m for m in ordered if m not in held]
            first = flow.add_fan(zone_node, [member_node[m] for m in ordered], 1)
            item.fans.append((first, ordered))
            for k, m in enumerate(mine):
                item.current[m] = (zone_arc, first + 2 * k)
        return item

    def keep(self) -> None:
        """Route and pin the current assignments that are retained (they fit by construction)."""
        demands = [ItemDemand(it.name, it.caps[ALL], it.caps[AT_MOST]) for it in self.items]
        flow = self.flow
        shares = {m: caps[FAIR_FLOOR] for m, caps in self.caps.items()}
        for it, entries in zip(self.items, retained(demands, self.held, shares), strict=True):
            for _, member in entries:
                zone_arc, member_arc = it.current[member]
                for arc in (it.source_arc, zone_arc, member_arc, self.sink_arcs[member]):
                    flow.push(arc)
                # Closing the member arc's reverse keeps path search from moving it.
                flow.cap[member_arc ^ 1] = 0
                self.pinned.append(member_arc)

    def apply(self, zone_cap: int, member_cap: int, pinned: bool) -> None:
        """Set capacities (never below flow already routed) and pinning to a stage."""
        old_zone_cap, old_member_cap, _ = self.stage
        self.stage = (zone_cap, member_cap, pinned)
        flow, cap = self.flow, self.flow.cap
        if zone_cap != old_zone_cap:
            for it in self.items:
                target = it.caps[zone_cap]
                for arc in it.zone_arcs:
                    cap[arc] = max(0, target - cap[arc ^ 1])
        if member_cap != old_member_cap:
            for m, arc in self.sink_arcs.items():
                flow.set_capacity(arc, self.caps[m][member_cap])
        if not pinned:
            for arc in self.pinned:
                cap[arc ^ 1] = 1
            self.pinned = []

    def solution(self) -> Solution:
        cap = self.flow.cap
        out: Solution = {}
        for it in self.items:
            members = sorted(m for first, fan in it.fans for k, m in enumerate(fan)
                             if cap[first + 2 * k + 1] > 0)
            if members:
                out[it.name] = tuple(members)
        return out


def _rotated(values: list[T], by: int) -> list[T]:
    if not values:
        return []
    k = by % len(values)
    return values[k:] + values[:k]
