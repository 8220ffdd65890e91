"""Brokers with auth keys sign their own peer calls; the `AA==` key lets header-less calls in."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path

import aetcd
import grpc
import jwt
import pytest
import pytest_asyncio

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.protocol.labels_ext import parse_selector
from gazette_core.server import auth
from gazette_core.server.client_auth import CallAuth, interceptors
from gazette_core.testing.broker import broker_config, journal_spec, journal_stub, running_broker
from gazette_core.testing.etcd import EtcdServer
from tests.broker.auth_support import KEY, KEYS, bearer, upsert, wait_primary
from tests.broker.cluster import Cluster
from tests.broker.support import append, content


@pytest_asyncio.fixture(loop_scope="session")
async def secured_cluster(etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path
                          ) -> AsyncIterator[Cluster]:
    """Three brokers with auth keys; their stubs mint an all-capability token per call."""
    async with AsyncExitStack() as stack:
        brokers, stubs = [], []
        for i in range(3):
            config = broker_config(etcd_server.endpoint, str(tmp_path), id=f"node-{i}",
                                   auth_keys=KEYS)
            broker = await stack.enter_async_context(running_broker(config))
            channel = grpc.aio.insecure_channel(broker.endpoint.split("://", 1)[1],
                                                interceptors=interceptors(CallAuth(key=KEY)))
            stack.push_async_callback(channel.close)
            brokers.append(broker)
            stubs.append(pb_grpc.JournalStub(channel))
        yield Cluster(stack, brokers, stubs)


async def _settled(cluster: Cluster, journal: str, members: int) -> pb.Route:
    routes = [await wait_primary(stub, journal, members) for stub in cluster.stubs]
    assert all(r == routes[0] for r in routes), routes
    return routes[0]


async def test_replication_and_proxying_carry_the_brokers_own_tokens(
        secured_cluster: Cluster) -> None:
    cluster = secured_cluster
    await cluster.stubs[0].Apply(upsert(journal_spec("sec/three", replication=3)))
    route = await _settled(cluster, "sec/three", 3)
    primary = route.members[route.primary]
    for i in range(3):  # two of the three proxy to the primary, which replicates to both
        resp = await append(cluster.stubs[i], "sec/three", f"from {i}\n".encode())
        assert (resp.status, resp.header.process_id) == (pb.OK, primary)
    for member in route.members:
        assert await content(cluster.stub_of(member), "sec/three", member) == (
            b"from 0\nfrom 1\nfrom 2\n")


async def test_a_journal_scoped_client_token_is_proxied(secured_cluster: Cluster) -> None:
    cluster = secured_cluster
    await cluster.stubs[0].Apply(upsert(journal_spec("sec/one"), journal_spec("sec/other")))
    route = await _settled(cluster, "sec/one", 1)
    outsider = next(b for b in cluster.brokers if b.process_id != route.members[0])
    only_one = bearer(auth.READ | auth.APPEND, parse_selector("name=sec/one"))

    async with journal_stub(outsider.endpoint) as stub:
        msgs = [pb.AppendRequest(journal="sec/one"), pb.AppendRequest(content=b"hi\n"),
                pb.AppendRequest()]
        assert (await stub.Append(iter(msgs), metadata=only_one)).status == pb.OK
        read = [r async for r in stub.Read(pb.ReadRequest(journal="sec/one"), metadata=only_one)]
        assert b"".join(r.content for r in read) == b"hi\n"
        frags = await stub.ListFragments(pb.FragmentsRequest(journal="sec/one"),
                                         metadata=only_one)
        assert (frags.status, frags.header.process_id) == (pb.OK, route.members[0])
        other = [r async for r in stub.Read(pb.ReadRequest(journal="sec/other"),
                                            metadata=only_one)]
        assert [r.status for r in other] == [pb.JOURNAL_NOT_FOUND]


def test_peer_tokens_are_scoped_to_the_journal_for_an_hour(secured_cluster: Cluster) -> None:
    metadata = secured_cluster.brokers[0].security.peer_metadata("sec/x", auth.REPLICATE)

    assert metadata is not None and metadata[0][0] == "authorization"
    claims = jwt.decode(metadata[0][1].removeprefix("Bearer "), KEY, algorithms=["HS256"])
    assert (claims["cap"], claims["sel"], claims["exp"] - claims["iat"]) == (
        auth.REPLICATE,
        {"include": {"labels": [{"name": "name", "value": "sec/x"}]},
         "exclude": {"labels": None}},
        3600)


async def test_the_zero_key_admits_calls_without_a_header(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path) -> None:
    config = broker_config(etcd_server.endpoint, str(tmp_path), auth_keys=f"AA== {KEYS}")
    async with running_broker(config) as broker, journal_stub(broker.endpoint) as stub:
        assert (await stub.Apply(upsert(journal_spec("sec/open")))).status == pb.OK
        listed = [j.spec.name async for r in stub.List(pb.ListRequest()) for j in r.journals]
        assert listed == ["sec/open"]
        # A header that is present is still verified.
        forged = bearer(key=b"not one of the cluster's keys, though long enough")
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.Apply(upsert(journal_spec("sec/forged")), metadata=forged)
        assert (caught.value.code(), caught.value.details()) == (
            grpc.StatusCode.UNAUTHENTICATED,
            "verifying Authorization: token signature is invalid")
