"""A consumer's broker client as its flags make it: --broker.auth-keys, --broker.cache.size and
.ttl, --broker.file-root; real brokers, the ConsumerService's own journal client."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aetcd
import pytest
import pytest_asyncio

from gazette_core.broker.client.channel import close_channels
from gazette_core.broker.client.journals import list_journals
from gazette_core.broker.client.retry_reader import RetryReader
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.consumer.config import ConsumerConfig
from gazette_core.consumer.service import ConsumerService
from gazette_core.errors import GazetteError
from gazette_core.testing.broker import broker_config, journal_stub, running_broker
from gazette_core.testing.etcd import EtcdServer
from tests.broker.auth_support import KEYS
from tests.broker.stores.test_direct_read import CONTENT, fetched, fill  # noqa: F401
from tests.consumer.runtime.apps import Counter

CONSUMER_KEYS = base64.b64encode(b"the consumers' own key, not the brokers' one").decode()


def _service(broker: str, tmp_path: Path, **flags: Any) -> ConsumerService:
    config = ConsumerConfig(app="tests:Counter", host="127.0.0.1", port=0, http_port=-1,
                            id="client-flags", broker_address=broker, data_dir=str(tmp_path),
                            **flags)
    return ConsumerService(config, Counter())


@pytest_asyncio.fixture(loop_scope="session")
async def closing_channels() -> AsyncIterator[None]:
    yield
    await close_channels()


@pytest.mark.parametrize(("broker_keys", "allowed"), [(KEYS, True), ("", False)])
async def test_broker_calls_are_signed_with_the_broker_auth_keys(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path, closing_channels: None,
        broker_keys: str, allowed: bool) -> None:
    config = broker_config(etcd_server.endpoint, str(tmp_path), auth_keys=KEYS)
    async with running_broker(config) as broker:
        # The consumer's own keys sign its Shard API calls; without --broker.auth-keys
        # they would sign its broker calls too, which the brokers do not accept.
        service = _service(broker.endpoint, tmp_path, auth_keys=CONSUMER_KEYS,
                           broker_auth_keys=broker_keys)
        stub = service.journals.stub_for("any/journal", primary=False)
        if allowed:
            assert (await list_journals(stub, pb.LabelSelector())).status == pb.OK
        else:
            with pytest.raises(GazetteError) as err:
                await list_journals(stub, pb.LabelSelector())
            assert str(err.value) == (
                "UNAUTHENTICATED: List: verifying Authorization: token signature is invalid")


@pytest.mark.parametrize("cache_size", [0, 16])
async def test_the_route_cache_and_direct_reads_of_file_fragments(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path, closing_channels: None,
        fetched: list[tuple[int, int, str]], cache_size: int) -> None:  # noqa: F811
    root = tmp_path / "fragments"
    root.mkdir()
    async with running_broker(broker_config(etcd_server.endpoint, str(root))) as broker, \
            journal_stub(broker.endpoint) as stub:
        await fill(stub, "cached/journal", "file:///")
        service = _service(broker.endpoint, tmp_path, broker_cache_size=cache_size,
                           broker_file_root=str(root))
        request = pb.ReadRequest(journal="cached/journal")
        async with RetryReader(service.journals, request) as reader:
            assert b"".join([chunk async for chunk in reader]) == CONTENT

    if cache_size:
        # Routed reads with do_not_proxy: persisted fragments came from the file root.
        assert service.journals.route("cached/journal") is not None
        assert fetched == [(0, 701, "file"), (701, 2103, "file")]
    else:
        # No cache: nothing remembered, every byte through --broker.address.
        assert service.journals.route("cached/journal") is None
        assert fetched == []
