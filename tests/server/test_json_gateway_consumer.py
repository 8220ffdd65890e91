"""A consumer process's /v1/ JSON gateway: shards/list and shards/stat answer as gRPC does."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path

import aetcd
import aiohttp
import grpc
import pytest
import pytest_asyncio

from gazette_core.broker.client.channel import close_channels
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.consumer.api.client import apply_shards, shard_stub
from gazette_core.consumer.config import ConsumerConfig
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.service import ConsumerService
from gazette_core.server import auth
from gazette_core.testing.broker import broker_config, journal_stub, running_broker
from gazette_core.testing.etcd import EtcdServer
from tests.broker.auth_support import KEY, KEYS
from tests.consumer.runtime.apps import Counter
from tests.consumer.runtime.support import SOURCE, Producer, create_journals, eventually, shard_spec
from tests.server.json_gateway_client import GatewayClient, settled

SHARD = "shard-000"
ORIGIN = "https://ui.example"


def consumer_config(etcd: EtcdServer, broker: str, tmp: Path, **overrides: object
                    ) -> ConsumerConfig:
    return replace(ConsumerConfig(
        app="tests:Counter", host="127.0.0.1", port=0, http_port=0, zone="local", id="cons-1",
        etcd_address=etcd.endpoint, etcd_prefix="/consumer.gateway", etcd_lease=5,
        broker_address=broker, data_dir=str(tmp / "cons-1")), **overrides)  # type: ignore[arg-type]


@dataclass
class Rig:
    service: ConsumerService
    producer: Producer
    client: GatewayClient


@pytest_asyncio.fixture(loop_scope="session")
async def rig(etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path
              ) -> AsyncIterator[Rig]:
    (tmp_path / "root").mkdir()
    config = broker_config(etcd_server.endpoint, str(tmp_path / "root"))
    async with running_broker(config) as broker, journal_stub(broker.endpoint) as stub, \
            aiohttp.ClientSession() as http:
        await create_journals(stub)
        service = ConsumerService(consumer_config(etcd_server, broker.endpoint, tmp_path,
                                                  allow_origin=[ORIGIN]), Counter())
        await service.start()
        try:
            await apply_shards(service.endpoint, [cpb.ApplyRequest.Change(
                upsert=shard_spec(SHARD, max_s=0.2), expect_mod_revision=0)])
            base_url = f"http://127.0.0.1:{service.server.http_port}/v1"
            yield Rig(service, Producer(stub), GatewayClient(http, base_url))
        finally:
            await service.stop(2.0)
    await close_channels()


async def primary(rig: Rig) -> cpb.ListResponse:
    async def listed() -> cpb.ListResponse | None:
        resp = await shard_stub(rig.service.endpoint).List(cpb.ListRequest())
        codes = [s.code for s in resp.shards[0].status] if resp.shards else []
        return resp if codes == [cpb.ReplicaStatus.PRIMARY] else None
    found: cpb.ListResponse = await eventually(listed, 30, "a primary")
    return found


async def test_shard_list_gives_the_grpc_listing(rig: Rig) -> None:
    via_grpc = await primary(rig)
    request = cpb.ListRequest(selector=pb.LabelSelector(
        include=pb.LabelSet(labels=[pb.Label(name="id", value=SHARD)])))
    via_json = await rig.client.unary("/shards/list", request, cpb.ListResponse)
    assert settled([via_json]) == settled([via_grpc])
    assert [s.spec.id for s in via_json.shards] == [SHARD]


async def test_shard_stat_gives_the_grpc_progress(rig: Rig) -> None:
    await primary(rig)
    head = await rig.producer.committed(1, 2, 3)
    request = cpb.StatRequest(shard=SHARD, read_through={SOURCE: head})
    via_json = await rig.client.unary("/shards/stat", request, cpb.StatResponse)
    via_grpc = await shard_stub(rig.service.endpoint).Stat(request)
    assert settled([via_json]) == settled([via_grpc])
    assert via_json.read_through[SOURCE] >= head


async def test_an_unknown_shard_is_a_response_with_its_status(rig: Rig) -> None:
    answer = await rig.client.post("/shards/stat", '{"shard": "no-such-shard"}',
                                   headers={"Origin": ORIGIN})
    assert answer.status == 200
    assert answer.headers["Access-Control-Allow-Origin"] == ORIGIN
    stat = answer.json()
    assert (stat["status"], stat["readThrough"], stat["publishAt"]) == (
        "SHARD_NOT_FOUND", {}, {})


async def test_bad_json_and_unrouted_paths(rig: Rig) -> None:
    answer = await rig.client.post("/shards/stat", '{"shard": "x", "readThrough": {"j": 1.5}}')
    assert answer.status == 400
    assert answer.json() == {"code": 3, "details": [], "message":
                             'field "readThrough" of consumer.StatRequest must be an integer, '
                             "not 1.5"}
    unrouted = await rig.client.post("/journals/list", "{}")
    assert (unrouted.status, json.loads(unrouted.body)["code"]) == (501, 12)


async def test_only_the_callers_authorization_counts(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path) -> None:
    """The process signs its own calls with --consumer.auth-keys; its gateway must not."""
    config = consumer_config(etcd_server, "http://127.0.0.1:1", tmp_path, auth_keys=KEYS)
    service = ConsumerService(config, Counter())
    await service.start()
    try:
        async with aiohttp.ClientSession() as http:
            base_url = f"http://127.0.0.1:{service.server.http_port}/v1"
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await shard_stub(service.endpoint).List(cpb.ListRequest())
            refused = await GatewayClient(http, base_url).post("/shards/list", "{}")
            assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
            assert refused.status == 401
            assert refused.json() == {"code": 16, "message": info.value.details(),
                                      "details": []}
            token = f"Bearer {auth.mint(KEY, auth.LIST, None, auth.HOUR_S)}"
            listed = await GatewayClient(http, base_url, token).unary(
                "/shards/list", cpb.ListRequest(), cpb.ListResponse)
            assert listed.status == cpb.OK and list(listed.shards) == []
    finally:
        await service.stop(2.0)
        await close_channels()
