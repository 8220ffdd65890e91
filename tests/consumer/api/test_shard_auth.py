"""Shard RPCs under auth: capabilities per RPC, claims selecting shards by labels and id."""

from __future__ import annotations

import aetcd
import grpc
import pytest

from gazette_core.broker.protocol.labels_ext import parse_selector
from gazette_core.consumer.api.authz import SHARD_CAPABILITIES
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.server import auth
from gazette_core.server.interceptor import AuthInterceptor
from tests.broker.auth_support import KEYS, bearer
from tests.consumer.api.host import put_assignment, put_shard, serving, synced
from tests.consumer.api.specs import shard

RS = cpb.ReplicaStatus


def _interceptor() -> AuthInterceptor:
    keys = auth.parse_keys(KEYS)
    assert keys is not None
    return AuthInterceptor(keys, SHARD_CAPABILITIES)


def _token(capability: int, selector: str = "") -> tuple[tuple[str, str], ...]:
    return bearer(capability, parse_selector(selector))


async def _shards(etcd: aetcd.Client) -> None:
    await put_shard(etcd, shard("shard-x1", labels=(("app", "x"),)))
    await put_shard(etcd, shard("shard-x2", labels=(("app", "x"),)))
    await put_shard(etcd, shard("shard-y1", labels=(("app", "y"),)))


async def test_list_shows_only_shards_within_the_claims(etcd: aetcd.Client) -> None:
    async with serving(etcd, ["cons-a"], interceptors=[_interceptor()]) as (a,):
        await _shards(etcd)
        await synced([a], etcd)
        for selector, expect in [("", ["shard-x1", "shard-x2", "shard-y1"]),
                                 ("app=x", ["shard-x1", "shard-x2"]),
                                 ("id=shard-y1", ["shard-y1"])]:
            resp = await a.stub.List(cpb.ListRequest(), metadata=_token(auth.LIST, selector))
            assert [s.spec.id for s in resp.shards] == expect


async def test_each_rpc_requires_its_capability(etcd: aetcd.Client) -> None:
    async with serving(etcd, ["cons-a"], interceptors=[_interceptor()]) as (a,):
        calls = [
            (a.stub.List, cpb.ListRequest(), "LIST"),
            (a.stub.Apply, cpb.ApplyRequest(), "APPLY"),
            (a.stub.Stat, cpb.StatRequest(shard="shard-x1"), "READ"),
            (a.stub.GetHints, cpb.GetHintsRequest(shard="shard-x1"), "READ"),
            (a.stub.Unassign, cpb.UnassignRequest(shards=["shard-x1"]), "APPLY"),
        ]
        for method, request, needed in calls:
            others = auth.ALL & ~{"LIST": auth.LIST, "APPLY": auth.APPLY,
                                  "READ": auth.READ}[needed]
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await method(request, metadata=_token(others))
            assert (info.value.code(), info.value.details()) == (
                grpc.StatusCode.UNAUTHENTICATED,
                f"authorization is missing required {needed} capability")


async def test_shards_outside_the_claims_are_not_found(etcd: aetcd.Client) -> None:
    async with serving(etcd, ["cons-a"], interceptors=[_interceptor()]) as (a,):
        await _shards(etcd)
        await put_assignment(etcd, "shard-y1", "cons-a", 0, RS(code=RS.FAILED, errors=["x"]))
        await synced([a], etcd)
        token = _token(auth.ALL, "id=shard-x1")
        stat = await a.stub.Stat(cpb.StatRequest(shard="shard-y1"), metadata=token)
        assert stat.status == cpb.SHARD_NOT_FOUND
        hints = await a.stub.GetHints(cpb.GetHintsRequest(shard="shard-y1"), metadata=token)
        assert hints.status == cpb.SHARD_NOT_FOUND
        unassign = await a.stub.Unassign(cpb.UnassignRequest(shards=["shard-y1"]),
                                         metadata=token)
        assert unassign == cpb.UnassignResponse(status=cpb.SHARD_NOT_FOUND)
        allowed = await a.stub.GetHints(cpb.GetHintsRequest(shard="shard-x1"), metadata=token)
        assert allowed.status == cpb.OK


async def test_apply_outside_the_claims_is_refused(etcd: aetcd.Client) -> None:
    async with serving(etcd, ["cons-a"], interceptors=[_interceptor()]) as (a,):
        change = cpb.ApplyRequest.Change(
            upsert=shard("shard-y1", log_prefix="", hint_prefix="", labels=(("app", "y"),)))
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await a.stub.Apply(cpb.ApplyRequest(changes=[change]),
                               metadata=_token(auth.APPLY, "app=x"))
        assert (info.value.code(), info.value.details()) == (
            grpc.StatusCode.UNAUTHENTICATED,
            "not authorized to apply shard 'shard-y1': it is outside the authorization's "
            "selector")
        resp = await a.stub.Apply(cpb.ApplyRequest(changes=[change]),
                                  metadata=_token(auth.APPLY, "app=y"))
        assert resp.status == cpb.OK


async def test_proxied_stat_carries_the_callers_token(etcd: aetcd.Client) -> None:
    async with serving(etcd, ["cons-a", "cons-b"], interceptors=[_interceptor()]) as (a, b):
        await put_shard(etcd, shard("shard-x1"))
        await put_assignment(etcd, "shard-x1", "cons-b", 0, RS(code=RS.PRIMARY))
        await synced([a, b], etcd)
        b.host.resolve("shard-x1", proxied_header=None)
        b.host.replicas["shard-x1"].advance(a__source=9)
        resp = await a.stub.Stat(cpb.StatRequest(shard="shard-x1"),
                                 metadata=_token(auth.READ, "id=shard-x1"))
        assert resp.status == cpb.OK
        assert resp.header.process_id == b.host.process_id
        assert dict(resp.read_through) == {"a/source": 9}
