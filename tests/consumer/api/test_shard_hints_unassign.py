"""Shard GetHints and Unassign over the served ShardHost double."""

from __future__ import annotations

import aetcd
import grpc
import pytest

from gazette_core.allocator import keys
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.consumer.api import hints as api_hints
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.recoverylog.hints import encode_hints
from tests.consumer.api.host import ROOT, Process, put_assignment, put_shard, serving, synced
from tests.consumer.api.specs import hints, shard

RS = cpb.ReplicaStatus
RH = cpb.GetHintsResponse.ResponseHints
LOG = "recovery/logs/shard-one"


def _unrouted(proc: Process, etcd: pb.Header.Etcd) -> pb.Header:
    return pb.Header(process_id=proc.host.process_id, route=pb.Route(primary=-1), etcd=etcd)


async def test_get_hints(etcd: aetcd.Client) -> None:
    async with serving(etcd, ["cons-a"]) as (a,):
        await put_shard(etcd, shard("shard-one", hint_backups=2))
        await etcd.put(b"/hints/shard-one.backup.1", encode_hints(hints(LOG, 4)))
        await synced([a], etcd)
        resp = await a.stub.GetHints(cpb.GetHintsRequest(shard="shard-one"))
        assert resp.header.etcd.revision >= a.host.keyspace.revision
        assert resp == cpb.GetHintsResponse(
            status=cpb.OK, header=_unrouted(a, resp.header.etcd), primary_hints=RH(),
            backup_hints=[RH(), RH(hints=hints(LOG, 4))])


async def test_get_hints_shard_not_found(etcd: aetcd.Client) -> None:
    async with serving(etcd, ["cons-a"]) as (a,):
        resp = await a.stub.GetHints(cpb.GetHintsRequest(shard="no-such-shard"))
        assert resp == cpb.GetHintsResponse(status=cpb.SHARD_NOT_FOUND,
                                            header=_unrouted(a, a.host.keyspace.header))


async def test_get_hints_of_another_log_fails_the_rpc(etcd: aetcd.Client) -> None:
    async with serving(etcd, ["cons-a"]) as (a,):
        await put_shard(etcd, shard("shard-one", hint_backups=1))
        await etcd.put(b"/hints/shard-one.primary", encode_hints(hints("recovery/logs/other")))
        await synced([a], etcd)
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await a.stub.GetHints(cpb.GetHintsRequest(shard="shard-one"))
        assert (info.value.code(), info.value.details()) == (
            grpc.StatusCode.FAILED_PRECONDITION,
            'hints at "/hints/shard-one.primary" are invalid: log: expected the shard\'s '
            f'recovery log "{LOG}" (got "recovery/logs/other")')


async def _assigned(etcd: aetcd.Client, proc: Process) -> None:
    await put_shard(etcd, shard("shard-one"))
    await put_shard(etcd, shard("shard-two"))
    await put_assignment(etcd, "shard-one", "cons-a", 0, RS(code=RS.PRIMARY))
    await put_assignment(etcd, "shard-one", "cons-b", 1, RS(code=RS.FAILED, errors=["boom"]))
    await put_assignment(etcd, "shard-one", "cons-c", 2, RS(code=RS.STANDBY))
    await put_assignment(etcd, "shard-two", "cons-a", 0, RS(code=RS.PRIMARY))
    await synced([proc], etcd)


async def _assignment_keys(etcd: aetcd.Client) -> list[str]:
    got = await etcd.get_prefix(f"{ROOT}{keys.ASSIGN}".encode())
    return sorted(kv.key.decode().removeprefix(f"{ROOT}{keys.ASSIGN}") for kv in got)


ALL = ["shard-one#zone#cons-a#0", "shard-one#zone#cons-b#1", "shard-one#zone#cons-c#2",
       "shard-two#zone#cons-a#0"]


async def test_unassign_dry_run_changes_nothing(etcd: aetcd.Client) -> None:
    async with serving(etcd, ["cons-a"]) as (a,):
        await _assigned(etcd, a)
        resp = await a.stub.Unassign(cpb.UnassignRequest(shards=["shard-one", "shard-two"],
                                                         dry_run=True))
        assert resp == cpb.UnassignResponse(status=cpb.OK, shards=["shard-one", "shard-two"])
        assert await _assignment_keys(etcd) == ALL


async def test_unassign_only_failed(etcd: aetcd.Client) -> None:
    async with serving(etcd, ["cons-a"]) as (a,):
        await _assigned(etcd, a)
        resp = await a.stub.Unassign(cpb.UnassignRequest(shards=["shard-one", "shard-two"],
                                                         only_failed=True))
        assert resp == cpb.UnassignResponse(status=cpb.OK, shards=["shard-one"])
        assert await _assignment_keys(etcd) == [ALL[0], ALL[2], ALL[3]]


async def test_unassign_primary_and_failed(etcd: aetcd.Client) -> None:
    async with serving(etcd, ["cons-a"]) as (a,):
        await _assigned(etcd, a)
        # A shard named twice is unassigned once.
        resp = await a.stub.Unassign(cpb.UnassignRequest(shards=["shard-one", "shard-one"]))
        assert resp == cpb.UnassignResponse(status=cpb.OK, shards=["shard-one"])
        assert await _assignment_keys(etcd) == [ALL[2], ALL[3]]


async def test_unassign_shard_not_found(etcd: aetcd.Client) -> None:
    async with serving(etcd, ["cons-a"]) as (a,):
        await _assigned(etcd, a)
        resp = await a.stub.Unassign(cpb.UnassignRequest(shards=["shard-one", "no-such"]))
        assert resp == cpb.UnassignResponse(status=cpb.SHARD_NOT_FOUND)
        assert await _assignment_keys(etcd) == ALL


async def test_unassign_etcd_transaction_failed(etcd: aetcd.Client,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    async with serving(etcd, ["cons-a"]) as (a,):
        await _assigned(etcd, a)
        real_txn = api_hints.etcd_util.txn

        async def racing_txn(client, compare, success, failure=()):  # type: ignore[no-untyped-def]
            # The primary updates its status between the lookup and the transaction.
            await put_assignment(etcd, "shard-one", "cons-a", 0, RS(code=RS.PRIMARY))
            return await real_txn(client, compare, success, failure)

        monkeypatch.setattr(api_hints.etcd_util, "txn", racing_txn)
        resp = await a.stub.Unassign(cpb.UnassignRequest(shards=["shard-one"]))
        assert resp == cpb.UnassignResponse(status=cpb.ETCD_TRANSACTION_FAILED)
        assert await _assignment_keys(etcd) == ALL
