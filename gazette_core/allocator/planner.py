"""The allocation planner: from an AllocState to the assignment changes due.

Planning has two parts. A solution (solver.py) says which members should
hold each item; it depends only on the inputs (members, limits, exiting
flags, items, desired replication), so a Planner re-solves only when their
fingerprint changes. Convergence (converge.py) then turns the difference
between current assignments and the solution into safe changes, every round.
"""

from __future__ import annotations

import logging
import time

from gazette_core.allocator import metrics
from gazette_core.allocator.changes import Change
from gazette_core.allocator.consistency import route_consistent
from gazette_core.allocator.converge import Consistent, converge
from gazette_core.allocator.inputs import (
    AllocInputs,
    Desired,
    MemberExiting,
    MemberLimit,
    default_member_exiting,
    default_member_limit,
)
from gazette_core.allocator.keys import AllocState
from gazette_core.allocator.solver import Solution, solve

log = logging.getLogger(__name__)

__all__ = [
    "Consistent",
    "Desired",
    "MemberExiting",
    "MemberLimit",
    "Planner",
    "default_member_exiting",
    "default_member_limit",
    "plan",
]


def plan(
    state: AllocState,
    desired: Desired,
    member_limit: MemberLimit = default_member_limit,
    consistent: Consistent = route_consistent,
    member_exiting: MemberExiting = default_member_exiting,
) -> list[Change]:
    """Every change that moves `state` toward a freshly solved assignment."""
    return Planner(desired, member_limit, consistent, member_exiting).plan(state)


class Planner:
    """Plans rounds against the last solution while its inputs are unchanged."""

    def __init__(
        self,
        desired: Desired,
        member_limit: MemberLimit = default_member_limit,
        consistent: Consistent = route_consistent,
        member_exiting: MemberExiting = default_member_exiting,
    ) -> None:
        self.desired = desired
        self.member_limit = member_limit
        self.consistent = consistent
        self.member_exiting = member_exiting
        self._solved: tuple[bytes, Solution] | None = None
        self.solves = 0
        self.last_inputs: AllocInputs | None = None  # of the last plan, for metrics

    def plan(self, state: AllocState) -> list[Change]:
        """The changes due in `state`, solving first if the inputs changed."""
        inputs = AllocInputs.from_state(state, self.desired, self.member_limit,
                                        self.member_exiting)
        self.last_inputs = inputs
        return converge(state, self.solution(state, inputs), inputs.capacity, self.consistent)

    def solution(self, state: AllocState, inputs: AllocInputs) -> Solution:
        """The solution for `inputs`: the last one if they are unchanged."""
        fingerprint = inputs.fingerprint()
        if self._solved is None or self._solved[0] != fingerprint:
            started = time.perf_counter()
            self._solved = fingerprint, solve(inputs, state.assignments)
            self.solves += 1
            took = time.perf_counter() - started
            metrics.MAX_FLOW_SECONDS.observe(took)
            log.info("allocator solved %d items over %d members in %.3f s",
                     len(inputs.items), len(inputs.members), took)
        return self._solved[1]

    def forget(self) -> None:
        """Drop the last solution, e.g. after another member led for a while."""
        self._solved = None
