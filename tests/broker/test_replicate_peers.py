"""A replica drops the Replicate stream of a primary that left the route.

A primary that freezes (or whose connection goes silent) keeps its Replicate
streams open, and each holds its replica's spool. Here the test itself
plays that primary: it opens a stream to the replica as the primary would,
then never ends it, and the real primary leaves the cluster.
"""

from __future__ import annotations

import asyncio

import grpc
import pytest

from gazette_core.broker.pipeline import REPLICATE_METHOD
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.testing.broker import journal_spec
from tests.broker.cluster import Cluster, route_with, settled_route
from tests.broker.support import append, read_all

# The allocator re-routes at once (the leaving broker revokes its lease); this
# bounds how long appends may then wait for the stale stream to go.
RECOVERY_S = 10.0


async def test_stream_of_a_primary_that_left_the_route_is_cancelled(cluster: Cluster) -> None:
    journal = "peers/left"
    await cluster.stubs[0].Apply(pb.ApplyRequest(changes=[pb.ApplyRequest.Change(
        upsert=journal_spec(journal, replication=2))]))
    route = await settled_route(cluster, journal, 2)
    ids = [b.process_id for b in cluster.brokers]
    primary = ids.index(route.members[route.primary])
    replica = ids.index(next(m for m in route.members if m != ids[primary]))
    assert (await append(cluster.stubs[primary], journal, b"before\n")).status == pb.OK

    # The primary's own streams end, and ours (as if from the primary) takes their place.
    own = cluster.brokers[primary].resolver.replicas[journal]
    async with own.pipeline_lock:
        await own.close_pipeline()
    header = (await read_all(cluster.stubs[replica], pb.ReadRequest(
        journal=journal, do_not_proxy=True, offset=7)))[0].header
    spool = cluster.brokers[replica].resolver.replicas[journal].spool
    first = pb.ReplicateRequest(header=header, proposal=spool.fragment,
                                registers=spool.registers, acknowledge=True,
                                deprecated_journal=journal)
    target = cluster.brokers[replica].endpoint.split("://", 1)[-1]
    async with grpc.aio.insecure_channel(target) as channel:
        stream = channel.stream_stream(
            REPLICATE_METHOD, request_serializer=pb.ReplicateRequest.SerializeToString,
            response_deserializer=pb.ReplicateResponse.FromString)()
        await stream.write(first)
        assert (await stream.read()).status == pb.OK  # the replica's spool is held now

        await cluster.brokers[primary].stop(drain_timeout=0)
        survivor = cluster.stubs[replica]
        new_route = await route_with(survivor, journal, 2)
        assert ids[primary] not in list(new_route.members)

        async with asyncio.timeout(RECOVERY_S):
            resp = await append(survivor, journal, b"after\n")
        assert (resp.status, resp.commit.begin) == (pb.OK, 7)
        with pytest.raises(grpc.aio.AioRpcError) as ended:
            async with asyncio.timeout(RECOVERY_S):
                await stream.read()
        assert ended.value.code() == grpc.StatusCode.UNAVAILABLE  # the sender may retry
