"""Shard List: items left-joined with assignments, selectors on labels plus id, routes."""

from __future__ import annotations

import aetcd

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.labels_ext import parse_selector
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from tests.consumer.api.host import Process, put_assignment, put_shard, serving, synced
from tests.consumer.api.specs import shard

RS = cpb.ReplicaStatus


async def _list(proc: Process, selector: str = "") -> cpb.ListResponse:
    resp: cpb.ListResponse = await proc.stub.List(
        cpb.ListRequest(selector=parse_selector(selector)))
    return resp


def _ids(resp: cpb.ListResponse) -> list[str]:
    return [s.spec.id for s in resp.shards]


async def test_list_joins_assignments_in_key_order(etcd: aetcd.Client) -> None:
    async with serving(etcd, ["cons-a", "cons-b", "cons-c"]) as procs:
        one = shard("shard-one", labels=(("app", "x"),))
        two = shard("shard-two", labels=(("app", "y"),))
        rev_one = await put_shard(etcd, one)
        rev_two = await put_shard(etcd, two)
        # Primary on cons-c (slot 0), standbys on cons-a and cons-b: key order is by member.
        await put_assignment(etcd, "shard-one", "cons-c", 0, RS(code=RS.PRIMARY))
        await put_assignment(etcd, "shard-one", "cons-a", 2)
        await put_assignment(etcd, "shard-one", "cons-b", 1,
                             RS(code=RS.FAILED, errors=["disk full"]))
        await synced(procs, etcd)
        resp = await _list(procs[0])
        a, b, c = (p.endpoint for p in procs)
        members = [pb.ProcessSpec.ID(zone="zone", suffix=s) for s in ("cons-a", "cons-b",
                                                                       "cons-c")]
        expect = cpb.ListResponse(
            status=cpb.OK,
            header=pb.Header(process_id=procs[0].host.process_id, route=pb.Route(primary=-1),
                             etcd=procs[0].host.keyspace.header),
            shards=[
                cpb.ListResponse.Shard(
                    spec=one, mod_revision=rev_one, create_revision=rev_one,
                    route=pb.Route(members=members, primary=2, endpoints=[a, b, c]),
                    status=[RS(code=RS.IDLE), RS(code=RS.FAILED, errors=["disk full"]),
                            RS(code=RS.PRIMARY)]),
                cpb.ListResponse.Shard(spec=two, mod_revision=rev_two, create_revision=rev_two,
                                       route=pb.Route(primary=-1)),
            ],
        )
        assert resp == expect


async def test_list_selectors_match_labels_and_id(etcd: aetcd.Client) -> None:
    async with serving(etcd, ["cons-a"]) as procs:
        await put_shard(etcd, shard("group/shard-1", labels=(("app", "x"),)))
        await put_shard(etcd, shard("group/shard-2", labels=(("app", "y"),)))
        await put_shard(etcd, shard("other-3", labels=(("app", "x"),)))
        await synced(procs, etcd)
        assert _ids(await _list(procs[0])) == ["group/shard-1", "group/shard-2", "other-3"]
        assert _ids(await _list(procs[0], "app=x")) == ["group/shard-1", "other-3"]
        assert _ids(await _list(procs[0], "id=group/shard-2")) == ["group/shard-2"]
        assert _ids(await _list(procs[0], "app=x, id!=other-3")) == ["group/shard-1"]
        assert _ids(await _list(procs[0], "id:prefix=group/")) == ["group/shard-1",
                                                                   "group/shard-2"]
        assert _ids(await _list(procs[0], "app=z")) == []


async def test_list_member_without_spec_has_empty_endpoint(etcd: aetcd.Client) -> None:
    async with serving(etcd, ["cons-a"]) as procs:
        await put_shard(etcd, shard("shard-one"))
        await put_assignment(etcd, "shard-one", "gone", 0, RS(code=RS.PRIMARY))
        await synced(procs, etcd)
        (listed,) = (await _list(procs[0])).shards
        assert listed.route == pb.Route(members=[pb.ProcessSpec.ID(zone="zone", suffix="gone")],
                                        primary=0, endpoints=[""])
        assert list(listed.status) == [RS(code=RS.PRIMARY)]
