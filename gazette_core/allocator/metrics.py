"""Prometheus metrics of the allocator, under Go's names (brokers and consumers alike).

Counted by the leading member only, each round it converges without error:
`gazette_allocator_converge_total` (rounds, those with nothing to do
included), the assignments its transactions added, packed (moved to
another slot: promotions to primary included) and removed, and gauges of
the members, items and desired replication slots (the items' desired
replication summed) it allocated over. `gazette_allocator_max_flow_runtime_seconds`
times each solve of the max-flow assignment.
"""

from __future__ import annotations

from collections.abc import Iterable

from gazette_core.allocator.changes import Add, Change, Move, Remove
from gazette_core.allocator.inputs import AllocInputs
from gazette_core.metrics.families import Counter, Gauge, Histogram

ASSIGNMENTS_ADDED = Counter("gazette_allocator_assignment_added_total",
                            "Assignments added by the allocator.").cell()
ASSIGNMENTS_PACKED = Counter("gazette_allocator_assignment_packed_total",
                             "Assignments moved to another slot by the allocator.").cell()
ASSIGNMENTS_REMOVED = Counter("gazette_allocator_assignment_removed_total",
                              "Assignments removed by the allocator.").cell()
CONVERGED = Counter("gazette_allocator_converge_total",
                    "Rounds in which the leading allocator converged.").cell()
DESIRED_SLOTS = Gauge("gazette_allocator_desired_replication_slots",
                      "Replicas wanted over all items, at the last converged round.").cell()
ITEMS = Gauge("gazette_allocator_items", "Items allocated, at the last converged round.").cell()
MEMBERS = Gauge("gazette_allocator_members",
                "Members allocated over, at the last converged round.").cell()
MAX_FLOW_SECONDS = Histogram("gazette_allocator_max_flow_runtime_seconds",
                             "Seconds each solve of the max-flow assignment took.").cell()


def applied(changes: Iterable[Change]) -> None:
    """Count the changes of a transaction that succeeded."""
    for change in changes:
        if isinstance(change, Add):
            ASSIGNMENTS_ADDED.value += 1
        elif isinstance(change, Remove):
            ASSIGNMENTS_REMOVED.value += 1
        elif isinstance(change, Move):
            ASSIGNMENTS_PACKED.value += 1


def converged(inputs: AllocInputs | None) -> None:
    """Count a converged round, planned from `inputs`."""
    CONVERGED.value += 1
    if inputs is not None:
        MEMBERS.value = len(inputs.members)
        ITEMS.value = len(inputs.items)
        DESIRED_SLOTS.value = sum(inputs.items.values())
