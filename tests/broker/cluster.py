"""A cluster of in-process brokers on one etcd, and waits for its routes to settle.

The `cluster` fixture (three brokers) lives in conftest.py.
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.service import Broker


class Cluster:
    def __init__(self, stack: AsyncExitStack, brokers: list[Broker],
                 stubs: list[pb_grpc.JournalStub]) -> None:
        self.stack, self.brokers, self.stubs = stack, brokers, stubs

    def stub_of(self, member: pb.ProcessSpec.ID) -> pb_grpc.JournalStub:
        return self.stubs[[b.process_id for b in self.brokers].index(member)]


async def route_with(stub: pb_grpc.JournalStub, journal: str, members: int) -> pb.Route:
    """The journal's route once it has `members` members and a primary."""
    sel = pb.LabelSelector(include=pb.LabelSet(labels=[pb.Label(name="name", value=journal)]))
    for _ in range(500):
        async for resp in stub.List(pb.ListRequest(selector=sel)):
            for j in resp.journals:
                if j.route.primary != -1 and len(j.route.members) == members:
                    return j.route
        await asyncio.sleep(0.02)
    raise AssertionError(f"{journal} never had {members} members and a primary")


async def settled_route(cluster: Cluster, journal: str, members: int) -> pb.Route:
    """The journal's route once every broker of the cluster has observed it.

    A broker's view trails Etcd by its watch latency, so a request sent to one
    that hasn't caught up yet rightly answers JOURNAL_NOT_FOUND.
    """
    routes = [await route_with(stub, journal, members) for stub in cluster.stubs]
    assert all(r == routes[0] for r in routes), routes
    return routes[0]
