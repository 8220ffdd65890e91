"""The Shard client functions: results, and typed errors for every non-OK status."""

from __future__ import annotations

import socket

import aetcd
import grpc
import pytest

from gazette_core.broker.client.channel import close_channels
from gazette_core.consumer.api import client
from gazette_core.consumer.api.errors import (
    EtcdTransactionFailedError,
    NoShardPrimaryError,
    NotShardPrimaryError,
    ShardNotFoundError,
    ShardStoppedError,
    check_shard_status,
)
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.errors import RPCError, UnavailableError
from tests.consumer.api.host import put_assignment, put_shard, serving, synced
from tests.consumer.api.specs import shard

RS = cpb.ReplicaStatus
Change = cpb.ApplyRequest.Change


def _plain(shard_id: str) -> cpb.ShardSpec:
    return shard(shard_id, log_prefix="", hint_prefix="", labels=(("app", "x"),))


async def test_list_apply_and_unassign_by_endpoint(etcd: aetcd.Client) -> None:
    async with serving(etcd, ["cons-a"]) as (a,):
        try:
            await client.apply_shards(a.endpoint, [Change(upsert=_plain("shard-one"))])
            listed = await client.list_shards(a.endpoint, "app=x")
            assert [s.spec for s in listed.shards] == [_plain("shard-one")]
            assert (await client.list_shards(a.endpoint, "app=y")).shards == []
            with pytest.raises(EtcdTransactionFailedError) as info:
                await client.apply_shards(a.endpoint, [Change(upsert=_plain("shard-one"))])
            assert str(info.value) == "ETCD_TRANSACTION_FAILED"
            assert not info.value.retriable
            await put_assignment(etcd, "shard-one", "cons-a", 0, RS(code=RS.PRIMARY))
            await synced([a], etcd)
            assert await client.unassign(a.endpoint, ["shard-one"], dry_run=True) == [
                "shard-one"]
            assert await client.unassign(a.endpoint, ["shard-one"], only_failed=True) == []
            with pytest.raises(ShardNotFoundError):
                await client.unassign(a.endpoint, ["no-such-shard"])
        finally:
            await close_channels()


async def test_stat_and_hints_raise_typed_errors(etcd: aetcd.Client) -> None:
    async with serving(etcd, ["cons-a", "cons-b"]) as (a, b):
        await put_shard(etcd, _plain("shard-one"))
        await synced([a], etcd)
        with pytest.raises(ShardNotFoundError) as not_found:
            await client.stat_shard(a.stub, "no-such-shard")
        assert str(not_found.value) == "SHARD_NOT_FOUND (shard 'no-such-shard')"
        with pytest.raises(ShardNotFoundError):
            await client.get_hints(a.stub, "no-such-shard")
        with pytest.raises(NoShardPrimaryError) as no_primary:
            await client.stat_shard(a.stub, "shard-one")
        assert no_primary.value.retriable
        await put_assignment(etcd, "shard-one", "cons-b", 0, RS(code=RS.PRIMARY))
        await synced([a], etcd)
        # A request already carrying a header is not forwarded again.
        header = a.host.resolve("shard-one", proxied_header=None).header
        resp = await a.stub.Stat(cpb.StatRequest(shard="shard-one", header=header))
        with pytest.raises(NotShardPrimaryError) as not_primary:
            check_shard_status(resp.status, "shard-one")
        assert str(not_primary.value) == "NOT_SHARD_PRIMARY (shard 'shard-one')"
        b.host.resolve("shard-one", proxied_header=None)
        b.host.replicas["shard-one"].advance(a__source=3)
        assert dict((await client.stat_shard(a.stub, "shard-one")).read_through) == {
            "a/source": 3}
        b.host.replicas["shard-one"].stop()
        with pytest.raises(ShardStoppedError):
            await client.stat_shard(a.stub, "shard-one", {"a/source": 4})
        hints = await client.get_hints(a.stub, "shard-one")
        assert hints.status == cpb.OK


async def test_rpc_failures_become_library_errors(etcd: aetcd.Client) -> None:
    async with serving(etcd, ["cons-a"]) as (a,):
        with pytest.raises(RPCError) as invalid:
            await client.stat_shard(a.stub, "x")
        assert str(invalid.value) == (
            'INVALID_ARGUMENT: Shard Stat: shard: invalid length of "x": expected 4 <= '
            "length <= 512 bytes (got 1)")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        with pytest.raises(UnavailableError):
            await client.list_shards(channel, timeout=2)
