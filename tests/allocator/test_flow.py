"""Dinic's maximum flow on small networks with known answers."""

from __future__ import annotations

from gazette_core.allocator.flow import FlowNetwork


def network(nodes: int, arcs: list[tuple[int, int, int]]) -> tuple[FlowNetwork, list[int]]:
    net = FlowNetwork(nodes)
    return net, [net.add_arc(u, v, c) for u, v, c in arcs]


# The CLRS example network, whose maximum flow is 23.
CLRS = [
    (0, 1, 16), (0, 2, 13), (1, 2, 10), (2, 1, 4), (1, 3, 12),
    (3, 2, 9), (2, 4, 14), (4, 3, 7), (3, 5, 20), (4, 5, 4),
]


def test_textbook_network() -> None:
    net, arcs = network(6, CLRS)
    assert net.max_flow(0, 5) == 23
    assert net.max_flow(0, 5) == 0
    flows = [net.flow(a) for a in arcs]
    assert all(0 <= f <= c for (_, _, c), f in zip(CLRS, flows, strict=True))
    # Flow is conserved at every inner node.
    for node in range(1, 5):
        inflow = sum(f for (_, v, _), f in zip(CLRS, flows, strict=True) if v == node)
        outflow = sum(f for (u, _, _), f in zip(CLRS, flows, strict=True) if u == node)
        assert inflow == outflow


def test_augmenting_path_reroutes_existing_flow() -> None:
    # Bipartite: a -> {x, y}, b -> {x}. Greedy a -> x must be undone for b.
    s, a, b, x, y, t = range(6)
    net, arcs = network(6, [(s, a, 1), (s, b, 1), (a, x, 1), (a, y, 1), (b, x, 1),
                            (x, t, 1), (y, t, 1)])
    for arc in (arcs[0], arcs[2], arcs[5]):
        net.push(arc)
    assert net.max_flow(s, t) == 1
    assert [net.flow(arc) for arc in arcs] == [1, 1, 0, 1, 1, 1, 1]


def test_earlier_arcs_are_preferred() -> None:
    s, a, x, y, t = range(5)
    net, arcs = network(5, [(s, a, 1), (a, y, 1), (a, x, 1), (x, t, 1), (y, t, 1)])
    assert net.max_flow(s, t) == 1
    assert [net.flow(arc) for arc in arcs] == [1, 1, 0, 0, 1]


def test_set_capacity_keeps_flow_and_allows_more() -> None:
    net, arcs = network(3, [(0, 1, 5), (1, 2, 2)])
    assert net.max_flow(0, 2) == 2
    net.set_capacity(arcs[1], 4)
    assert net.max_flow(0, 2) == 2
    assert [net.flow(arc) for arc in arcs] == [4, 4]
    # Never below the flow already routed: no residual is left, none goes negative.
    net.set_capacity(arcs[1], 1)
    assert (net.flow(arcs[1]), net.cap[arcs[1]]) == (4, 0)
    assert net.max_flow(0, 2) == 0


def test_unreachable_sink_and_added_nodes() -> None:
    net = FlowNetwork(2)
    assert net.max_flow(0, 1) == 0
    middle = net.add_node()
    assert middle == 2
    net.add_arc(0, middle, 3)
    net.add_arc(middle, 1, 2)
    assert net.max_flow(0, 1) == 2
