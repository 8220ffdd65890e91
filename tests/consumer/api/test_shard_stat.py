"""Shard Stat: resolution statuses, proxying to the primary, waiting for progress."""

from __future__ import annotations

import asyncio

import aetcd
import grpc
import pytest

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from tests.consumer.api.host import Process, put_assignment, put_shard, serving, synced
from tests.consumer.api.specs import shard

RS = cpb.ReplicaStatus
ID = pb.ProcessSpec.ID


async def _stat(proc: Process, req: cpb.StatRequest) -> cpb.StatResponse:
    resp: cpb.StatResponse = await proc.stub.Stat(req)
    return resp


def _routed(proc: Process, primary: Process, *members: Process) -> pb.Header:
    """The header `proc` answers for a shard whose route is `members` with `primary`."""
    return pb.Header(
        process_id=proc.host.process_id,
        route=pb.Route(members=[m.host.process_id for m in members],
                       primary=members.index(primary),
                       endpoints=[m.endpoint for m in members]),
        etcd=proc.host.keyspace.header)


async def test_shard_not_found(etcd: aetcd.Client) -> None:
    async with serving(etcd, ["cons-a"]) as (proc,):
        resp = await _stat(proc, cpb.StatRequest(shard="no-such-shard"))
        assert resp == cpb.StatResponse(
            status=cpb.SHARD_NOT_FOUND,
            header=pb.Header(process_id=proc.host.process_id, route=pb.Route(primary=-1),
                             etcd=proc.host.keyspace.header))


async def test_no_shard_primary(etcd: aetcd.Client) -> None:
    async with serving(etcd, ["cons-a", "cons-b"]) as (a, b):
        await put_shard(etcd, shard("shard-one"))
        await put_assignment(etcd, "shard-one", "cons-b", 1, RS(code=RS.STANDBY))
        await synced([a], etcd)
        resp = await _stat(a, cpb.StatRequest(shard="shard-one"))
        assert resp == cpb.StatResponse(
            status=cpb.NO_SHARD_PRIMARY,
            header=pb.Header(process_id=a.host.process_id,
                             route=pb.Route(members=[b.host.process_id], primary=-1,
                                            endpoints=[b.endpoint]),
                             etcd=a.host.keyspace.header))


async def test_local_primary_answers_progress(etcd: aetcd.Client) -> None:
    async with serving(etcd, ["cons-a"]) as (a,):
        await put_shard(etcd, shard("shard-one"))
        await put_assignment(etcd, "shard-one", "cons-a", 0, RS(code=RS.PRIMARY))
        await synced([a], etcd)
        a.host.resolve("shard-one", proxied_header=None)  # creates the local replica
        replica = a.host.replicas["shard-one"]
        replica.advance(a__source=120)
        replica.publish_at["acks/out"] = 77
        resp = await _stat(a, cpb.StatRequest(shard="shard-one", read_through={"a/source": 100}))
        assert resp == cpb.StatResponse(status=cpb.OK, header=_routed(a, a, a),
                                        read_through={"a/source": 120},
                                        publish_at={"acks/out": 77})


async def test_stat_waits_for_read_through(etcd: aetcd.Client) -> None:
    async with serving(etcd, ["cons-a"]) as (a,):
        await put_shard(etcd, shard("shard-one"))
        await put_assignment(etcd, "shard-one", "cons-a", 0, RS(code=RS.PRIMARY))
        await synced([a], etcd)
        a.host.resolve("shard-one", proxied_header=None)
        replica = a.host.replicas["shard-one"]
        replica.advance(a__source=10)
        call = asyncio.ensure_future(
            _stat(a, cpb.StatRequest(shard="shard-one", read_through={"a/source": 50})))
        await asyncio.sleep(0.2)
        assert not call.done()
        replica.advance(a__source=60)
        async with asyncio.timeout(5):
            resp = await call
        assert resp.status == cpb.OK
        assert dict(resp.read_through) == {"a/source": 60}


async def test_non_primary_proxies_to_the_primary(etcd: aetcd.Client) -> None:
    async with serving(etcd, ["cons-a", "cons-b"]) as (a, b):
        await put_shard(etcd, shard("shard-one"))
        await put_assignment(etcd, "shard-one", "cons-a", 1, RS(code=RS.STANDBY))
        await put_assignment(etcd, "shard-one", "cons-b", 0, RS(code=RS.PRIMARY))
        await synced([a, b], etcd)
        b.host.resolve("shard-one", proxied_header=None)
        b.host.replicas["shard-one"].advance(a__source=5)
        resp = await _stat(a, cpb.StatRequest(shard="shard-one"))
        # The primary answered, with its own header.
        assert resp == cpb.StatResponse(status=cpb.OK, header=_routed(b, b, a, b),
                                        read_through={"a/source": 5})
        assert "shard-one" not in a.host.replicas


async def test_proxied_request_on_a_non_primary(etcd: aetcd.Client) -> None:
    async with serving(etcd, ["cons-a", "cons-b"]) as (a, b):
        await put_shard(etcd, shard("shard-one"))
        await put_assignment(etcd, "shard-one", "cons-a", 1, RS(code=RS.STANDBY))
        await put_assignment(etcd, "shard-one", "cons-b", 0, RS(code=RS.PRIMARY))
        await synced([a, b], etcd)
        # A request carrying a header was already proxied once: it is not forwarded again.
        proxied = cpb.StatRequest(shard="shard-one", header=_routed(b, b, a, b))
        resp = await _stat(a, proxied)
        assert resp == cpb.StatResponse(status=cpb.NOT_SHARD_PRIMARY,
                                        header=_routed(a, b, a, b))


async def test_shard_stopped_while_waiting(etcd: aetcd.Client) -> None:
    async with serving(etcd, ["cons-a"]) as (a,):
        await put_shard(etcd, shard("shard-one"))
        await put_assignment(etcd, "shard-one", "cons-a", 0, RS(code=RS.PRIMARY))
        await synced([a], etcd)
        a.host.resolve("shard-one", proxied_header=None)
        call = asyncio.ensure_future(
            _stat(a, cpb.StatRequest(shard="shard-one", read_through={"a/source": 50})))
        await asyncio.sleep(0.1)
        a.host.replicas["shard-one"].stop()
        async with asyncio.timeout(5):
            resp = await call
        assert resp == cpb.StatResponse(status=cpb.SHARD_STOPPED, header=_routed(a, a, a))


@pytest.mark.parametrize(
    ("req", "message"),
    [
        (cpb.StatRequest(shard="x"),
         'shard: invalid length of "x": expected 4 <= length <= 512 bytes (got 1)'),
        (cpb.StatRequest(shard="shard-one", read_through={"a/source": -1}),
         "read_through[a/source]: expected offset >= 0 (got -1)"),
        (cpb.StatRequest(shard="shard-one", read_through={"/bad": 1}),
         'read_through[/bad]: "/bad" must not begin with "/"'),
    ],
)
async def test_invalid_stat_requests(etcd: aetcd.Client, req: cpb.StatRequest,
                                     message: str) -> None:
    async with serving(etcd, ["cons-a"]) as (a,):
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await _stat(a, req)
        assert (info.value.code(), info.value.details()) == (grpc.StatusCode.INVALID_ARGUMENT,
                                                             message)


async def test_stat_ignores_zero_offsets(etcd: aetcd.Client) -> None:
    async with serving(etcd, ["cons-a"]) as (a,):
        await put_shard(etcd, shard("shard-one", sources=("a/source", "b/source")))
        await put_assignment(etcd, "shard-one", "cons-a", 0, RS(code=RS.PRIMARY))
        await synced([a], etcd)
        a.host.resolve("shard-one", proxied_header=None)
        a.host.replicas["shard-one"].advance(a__source=7)
        # b/source at 0 is not waited for.
        req = cpb.StatRequest(shard="shard-one", read_through={"a/source": 7, "b/source": 0})
        async with asyncio.timeout(5):
            resp = await _stat(a, req)
        assert (resp.status, dict(resp.read_through)) == (cpb.OK, {"a/source": 7})


async def test_stat_refuses_a_journal_that_is_no_source(etcd: aetcd.Client) -> None:
    async with serving(etcd, ["cons-a", "cons-b"]) as (a, b):
        await put_shard(etcd, shard("shard-one", sources=("a/source",)))
        await put_assignment(etcd, "shard-one", "cons-a", 0, RS(code=RS.PRIMARY))
        await synced([a, b], etcd)
        a.host.resolve("shard-one", proxied_header=None)
        a.host.replicas["shard-one"].advance(a__source=7)
        req = cpb.StatRequest(shard="shard-one", read_through={
            "a/source": 7, "not/a-source": 1000})
        # Refused on the primary and on a process that would forward the request.
        for proc in (a, b):
            with pytest.raises(grpc.aio.AioRpcError) as info:
                async with asyncio.timeout(5):
                    await _stat(proc, req)
            assert (info.value.code(), info.value.details()) == (
                grpc.StatusCode.INVALID_ARGUMENT,
                'read_through[not/a-source]: journal "not/a-source" is not a source of '
                'shard "shard-one"')
