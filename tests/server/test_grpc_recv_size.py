"""--broker.max-grpc-recv-size and --consumer.max-grpc-recv-size: larger messages are refused."""

from __future__ import annotations

from pathlib import Path

import aetcd
import grpc
import pytest

from gazette_core.broker.client.channel import close_channels, dial
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.consumer.config import ConsumerConfig
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.protocol import consumer_pb2_grpc as cpb_grpc
from gazette_core.consumer.service import ConsumerService
from gazette_core.testing.broker import broker_config, journal_spec, journal_stub, running_broker
from gazette_core.testing.etcd import EtcdServer
from tests.broker.support import append, create
from tests.consumer.runtime.apps import Counter

LIMIT = 64 * 1024


@pytest.mark.parametrize(("size", "refused"), [(LIMIT + 1024, True), (LIMIT - 1024, False)])
async def test_the_broker_refuses_a_message_above_its_limit(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path, size: int,
        refused: bool) -> None:
    config = broker_config(etcd_server.endpoint, str(tmp_path), max_grpc_recv_size=LIMIT)
    async with running_broker(config) as broker, journal_stub(broker.endpoint) as stub:
        await create(stub, journal_spec("big/chunks"))
        if refused:
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await append(stub, "big/chunks", b"x" * size)
            assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        else:
            resp = await append(stub, "big/chunks", b"x" * size)
            assert (resp.status, resp.commit.end) == (pb.OK, size)


@pytest.mark.parametrize(("size", "refused"), [(LIMIT + 1024, True), (LIMIT - 1024, False)])
async def test_a_consumer_refuses_a_message_above_its_limit(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path, size: int,
        refused: bool) -> None:
    config = ConsumerConfig(app="tests:Counter", host="127.0.0.1", port=0, http_port=-1,
                            id="recv-limit", etcd_address=etcd_server.endpoint,
                            etcd_prefix="/recv.limit", etcd_lease=5, data_dir=str(tmp_path),
                            max_grpc_recv_size=LIMIT)
    service = ConsumerService(config, Counter())
    await service.start()
    try:
        stub = cpb_grpc.ShardStub(dial(service.endpoint))
        request = cpb.ListRequest(extension=b"x" * size)
        if refused:
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await stub.List(request)
            assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        else:
            resp = await stub.List(request)
            assert (resp.status, list(resp.shards)) == (cpb.OK, [])
    finally:
        await close_channels()
        await service.stop(drain_timeout=0)
