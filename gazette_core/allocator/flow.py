"""A residual flow network with Dinic's maximum-flow algorithm.

Arcs live in flat lists (`to`, `cap`) with each arc's reverse at the index
`arc ^ 1`, so pushing flow is two list updates and the flow on a forward arc
is its reverse's residual. Capacities may change between solves: the
allocator raises them in stages and re-solves from the flow it already has,
which is how it ranks its preferences (see solver.py).

Within a phase, arcs are tried in the order they were added, so callers put
preferred arcs first (e.g. an item's current members).
"""

from __future__ import annotations

from collections.abc import Sequence


class FlowNetwork:
    """Nodes 0..n-1 and arcs with integer capacities."""

    def __init__(self, nodes: int) -> None:
        self.heads: list[list[int]] = [[] for _ in range(nodes)]
        self.to: list[int] = []
        self.cap: list[int] = []

    def add_node(self) -> int:
        """A new node's index."""
        self.heads.append([])
        return len(self.heads) - 1

    def add_arc(self, tail: int, head: int, cap: int) -> int:
        """An arc `tail -> head` of capacity `cap`; returns its index."""
        arc = len(self.to)
        self.to.append(head)
        self.to.append(tail)
        self.cap.append(cap)
        self.cap.append(0)
        self.heads[tail].append(arc)
        self.heads[head].append(arc + 1)
        return arc

    def add_fan(self, tail: int, heads: Sequence[int], cap: int) -> int:
        """Arcs `tail -> head` of capacity `cap` for each of `heads`, at consecutive
        even indices; returns the first one's."""
        first = len(self.to)
        to, caps, adjacency = self.to, self.cap, self.heads
        out = adjacency[tail]
        arc = first
        for head in heads:
            to += (head, tail)
            caps += (cap, 0)
            out.append(arc)
            adjacency[head].append(arc + 1)
            arc += 2
        return first

    def flow(self, arc: int) -> int:
        """Flow on forward arc `arc`."""
        return self.cap[arc ^ 1]

    def push(self, arc: int, amount: int = 1) -> None:
        """Send `amount` more along `arc` (the caller checked its residual)."""
        self.cap[arc] -= amount
        self.cap[arc ^ 1] += amount

    def set_capacity(self, arc: int, capacity: int) -> None:
        """Make forward arc `arc`'s capacity `capacity` (at least its flow), keeping its flow."""
        self.cap[arc] = max(0, capacity - self.cap[arc ^ 1])

    def max_flow(self, source: int, sink: int) -> int:
        """Augment the current flow to a maximum one; returns the flow added."""
        added = 0
        while True:
            level = self._levels(source, sink)
            if level[sink] < 0:
                return added
            cursor = [0] * len(self.heads)
            while pushed := self._augment(source, sink, level, cursor):
                added += pushed

    def _levels(self, source: int, sink: int) -> list[int]:
        """BFS distances over residual arcs, stopping at the sink's distance."""
        heads, to, cap = self.heads, self.to, self.cap
        level = [-1] * len(heads)
        level[source] = 0
        queue = [source]
        for u in queue:  # the list grows while it is walked: a FIFO queue
            if 0 <= level[sink] <= level[u]:
                break
            next_level = level[u] + 1
            for arc in heads[u]:
                if cap[arc] > 0:
                    v = to[arc]
                    if level[v] < 0:
                        level[v] = next_level
                        queue.append(v)
        if level[sink] >= 0:
            # Nodes as far as the sink but not it lead nowhere useful this phase.
            for v in queue:
                if level[v] >= level[sink] and v != sink:
                    level[v] = -1
        return level

    def _augment(self, source: int, sink: int, level: list[int], cursor: list[int]) -> int:
        """One shortest augmenting path along the level graph (0 if none is left)."""
        heads, to, cap = self.heads, self.to, self.cap
        path: list[int] = []
        u = source
        while u != sink:
            arcs = heads[u]
            i = cursor[u]
            want = level[u] + 1
            while i < len(arcs) and not (cap[arcs[i]] > 0 and level[to[arcs[i]]] == want):
                i += 1
            cursor[u] = i
            if i < len(arcs):
                path.append(arcs[i])
                u = to[arcs[i]]
                continue
            # A dead end for the rest of the phase: retreat and skip it from now on.
            level[u] = -1
            if not path:
                return 0
            u = to[path.pop() ^ 1]
            cursor[u] += 1
        amount = min(cap[arc] for arc in path)
        for arc in path:
            cap[arc] -= amount
            cap[arc ^ 1] += amount
        return amount
