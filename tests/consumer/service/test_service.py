"""ConsumerService end to end: real etcd, a real broker, two consumer processes' services.

A shard with a hot standby is allocated across both, the primary consumes
and publishes exactly once, a graceful stop hands the shard to the standby
without losing or repeating anything, and Stat and List tell where it is.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from aiohttp import web
from prometheus_client import REGISTRY

from gazette_core.consumer import service as service_module
from gazette_core.consumer.api.client import apply_shards, list_shards, stat_shard
from gazette_core.consumer.app import InitArgs
from gazette_core.consumer.config import ConsumerConfig
from gazette_core.consumer.main import serve
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.service import ConsumerService
from gazette_core.errors import GazetteError
from gazette_core.message.uuid import Flags
from gazette_core.server.process import LeaseLostExit
from gazette_core.testing.broker import broker_config, journal_stub, running_broker
from gazette_core.testing.etcd import EtcdServer, free_port
from tests.consumer.runtime.apps import Counter
from tests.consumer.runtime.support import (
    SOURCE,
    Producer,
    create_journals,
    out_messages,
    shard_spec,
)
from tests.consumer.runtime.support import eventually as until

ROOT = "/consumer.svc"
SHARD = "shard-000"
Code = cpb.ReplicaStatus


def consumer_config(etcd: EtcdServer, broker: str, tmp: Path, name: str) -> ConsumerConfig:
    return ConsumerConfig(app="tests:Counter", host="127.0.0.1", port=0, http_port=-1,
                          zone="local", id=name, etcd_address=etcd.endpoint, etcd_prefix=ROOT,
                          etcd_lease=5, broker_address=broker, data_dir=str(tmp / name),
                          watch_delay=0)


class Cluster:
    def __init__(self, stack: AsyncExitStack, etcd: EtcdServer, broker: str, stub: Any,
                 tmp: Path) -> None:
        self.stack, self.etcd, self.broker, self.stub, self.tmp = stack, etcd, broker, stub, tmp
        self.services: dict[str, ConsumerService] = {}

    async def start(self, name: str, app: Any) -> ConsumerService:
        service = ConsumerService(consumer_config(self.etcd, self.broker, self.tmp, name), app)
        await service.start()
        self.stack.push_async_callback(service.stop, 2.0)
        self.services[name] = service
        return service


@pytest_asyncio.fixture
async def cluster(etcd: Any, etcd_server: EtcdServer, tmp_path: Path
                  ) -> AsyncIterator[Cluster]:
    (tmp_path / "root").mkdir()
    async with AsyncExitStack() as stack:
        config = broker_config(etcd_server.endpoint, str(tmp_path / "root"), id="broker-1")
        broker = await stack.enter_async_context(running_broker(config))
        stub = await stack.enter_async_context(journal_stub(broker.endpoint))
        await create_journals(stub)
        yield Cluster(stack, etcd_server, broker.endpoint, stub, tmp_path)


def statuses(shard: cpb.ListResponse.Shard) -> dict[str, int]:
    return {m.suffix: s.code for m, s in zip(shard.route.members, shard.status, strict=True)}


async def shard_listing(endpoint: str) -> cpb.ListResponse.Shard | None:
    resp = await list_shards(endpoint)
    return resp.shards[0] if resp.shards else None


async def create_shard(endpoint: str, spec: cpb.ShardSpec) -> None:
    """Apply `spec`, then wait until the allocator gave it a primary (Stat answers
    NO_SHARD_PRIMARY until then)."""
    await apply_shards(endpoint, [cpb.ApplyRequest.Change(upsert=spec, expect_mod_revision=0)])

    async def has_primary() -> bool:
        listed = await shard_listing(endpoint)
        return listed is not None and listed.route.primary >= 0
    await until(has_primary, 30)


async def test_standby_takes_over_a_gracefully_stopped_primary_exactly_once(
        cluster: Cluster) -> None:
    apps = {"cons-1": Counter(), "cons-2": Counter()}
    first = await cluster.start("cons-1", apps["cons-1"])
    await cluster.start("cons-2", apps["cons-2"])
    spec = shard_spec(SHARD, hot_standbys=1, max_s=0.2)
    await apply_shards(first.endpoint, [cpb.ApplyRequest.Change(upsert=spec,
                                                                expect_mod_revision=0)])

    async def primary_and_standby() -> bool:
        listed = await shard_listing(first.endpoint)
        return listed is not None and sorted(statuses(listed).values()) == [
            Code.STANDBY, Code.PRIMARY]
    await until(primary_and_standby, 30)

    producer = Producer(cluster.stub)
    head = await producer.committed(1, 2, 3)
    stat = await stat_shard(first.endpoint, SHARD, {SOURCE: head})
    assert stat.read_through[SOURCE] >= head

    listed = await shard_listing(first.endpoint)
    assert listed is not None
    primary = listed.route.members[listed.route.primary].suffix
    standby = "cons-2" if primary == "cons-1" else "cons-1"
    await cluster.services[primary].stop(drain_timeout=20.0)

    async def standby_is_primary() -> bool:
        now = await shard_listing(cluster.services[standby].endpoint)
        return now is not None and statuses(now) == {standby: Code.PRIMARY}
    await until(standby_is_primary, 30)

    head = await producer.committed(4, 5)
    stat = await stat_shard(cluster.services[standby].endpoint, SHARD, {SOURCE: head})
    assert stat.read_through[SOURCE] >= head
    # The new primary restored the old one's store and went on from its checkpoint.
    published = await out_messages(cluster.stub)
    tens = sorted(n for flags, n in published if flags == Flags.CONTINUE_TXN)
    assert tens == [10, 20, 30, 40, 50]


async def test_stat_through_a_non_primary_is_proxied_to_the_primary(cluster: Cluster) -> None:
    first = await cluster.start("cons-1", Counter())
    second = await cluster.start("cons-2", Counter())
    spec = shard_spec(SHARD, hot_standbys=0, max_s=0.2)
    await apply_shards(first.endpoint, [cpb.ApplyRequest.Change(upsert=spec,
                                                                expect_mod_revision=0)])

    async def assigned() -> bool:
        listed = await shard_listing(first.endpoint)
        return listed is not None and list(statuses(listed).values()) == [Code.PRIMARY]
    await until(assigned, 30)
    listed = await shard_listing(first.endpoint)
    assert listed is not None
    other = first if listed.route.members[0].suffix == "cons-2" else second

    head = await Producer(cluster.stub).committed(7)
    stat = await stat_shard(other.endpoint, SHARD, {SOURCE: head})
    assert stat.status == cpb.OK
    assert stat.header.process_id == listed.route.members[0]
    assert stat.read_through[SOURCE] >= head


async def test_a_consumer_that_lost_its_lease_stops_its_shards_and_exits(
        cluster: Cluster) -> None:
    """Consumers here use an etcd of their own, so only they lose it."""
    with EtcdServer() as own_etcd:
        config = consumer_config(own_etcd, cluster.broker, cluster.tmp, "cons-1")
        config.port, config.etcd_lease = free_port(), 2
        config.app = "tests.consumer.runtime.apps:Counter"
        running = asyncio.create_task(serve(config))
        endpoint = config.endpoint(config.port)

        async def serving() -> bool:
            try:
                await list_shards(endpoint, timeout=1)
            except GazetteError:
                return False
            return True
        await until(serving, 30)
        await create_shard(endpoint, shard_spec(SHARD, max_s=0.2))
        head = await Producer(cluster.stub).committed(1)
        await stat_shard(endpoint, SHARD, {SOURCE: head})

        own_etcd.kill()
        with pytest.raises(LeaseLostExit) as exit_:
            async with asyncio.timeout(30):
                await running
        assert str(exit_.value) == ("consumer local#cons-1 lost its Etcd lease; it stopped its "
                                    "shards (restart it to rejoin)")


class WithRoutes(Counter):
    """Registers an HTTP route on the consumer's HTTP server."""

    def init_application(self, args: InitArgs) -> None:
        async def hello(request: web.Request) -> web.Response:
            return web.Response(text=f"hello from {args.service.process_id.suffix}")
        args.http_routes.append(web.get("/hello", hello))


async def test_an_app_adds_http_routes_beside_metrics(cluster: Cluster) -> None:
    config = consumer_config(cluster.etcd, cluster.broker, cluster.tmp, "cons-1")
    config.http_port = 0  # a port of its own
    service = ConsumerService(config, WithRoutes())
    await service.start()
    cluster.stack.push_async_callback(service.stop, 2.0)
    base = f"http://127.0.0.1:{service.server.http_port}"
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{base}/hello") as resp:
            assert (resp.status, await resp.text()) == (200, "hello from cons-1")
        async with session.get(f"{base}/metrics") as resp:
            assert resp.status == 200
            assert "# TYPE gazette_shard_txn_total counter" in await resp.text()


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_metrics_count_transactions_messages_and_read_lag(cluster: Cluster) -> None:
    service = await cluster.start("cons-1", Counter(publish=False))
    before = {name: sample(name, shard=SHARD) for name in (
        "gazette_shard_txn_total", "gazette_shard_messages_total", "gazette_shard_bytes_total")}
    await create_shard(service.endpoint, shard_spec(SHARD, max_s=0.2))
    producer = Producer(cluster.stub)
    start = await producer.committed(1)
    head = await producer.committed(2, 3)
    await stat_shard(service.endpoint, SHARD, {SOURCE: head})

    assert sample("gazette_shard_txn_total", shard=SHARD) > before["gazette_shard_txn_total"]
    assert sample("gazette_shard_messages_total", shard=SHARD) - \
        before["gazette_shard_messages_total"] == 3
    assert sample("gazette_shard_bytes_total", shard=SHARD) - \
        before["gazette_shard_bytes_total"] == head
    await service.gauges.measure()
    assert sample("gazette_shard_read_lag_bytes", shard=SHARD, journal=SOURCE) == 0
    # Recovered: a primary's playback figures are dropped rather than left stale.
    assert REGISTRY.get_sample_value("gazette_shard_recovery_read_bytes",
                                     {"shard": SHARD}) is None
    assert start > 0


async def test_stopping_does_not_wait_for_ever_on_a_commit_that_never_resolves(
        cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(service_module, "REPLICAS_STOP_TIMEOUT_S", 1.0)
    app = Counter(publish=False)
    service = await cluster.start("cons-1", app)
    await create_shard(service.endpoint, shard_spec(SHARD, max_s=0.2))
    await stat_shard(service.endpoint, SHARD, {})  # the primary is ready
    store = app.stores[0]
    store.hold.clear()
    committing = store.started
    await Producer(cluster.stub).committed(1)
    await until(lambda: store.started > committing, 20)

    try:
        async with asyncio.timeout(20):
            await service.stop(drain_timeout=0.1)
    finally:
        store.hold.set()
    assert not service.resolver.replicas


async def test_a_stopping_consumer_waits_for_its_primaries_to_move_not_its_standbys(
        cluster: Cluster) -> None:
    first = await cluster.start("cons-1", Counter())
    await cluster.start("cons-2", Counter())
    await apply_shards(first.endpoint, [cpb.ApplyRequest.Change(
        upsert=shard_spec(SHARD, hot_standbys=1, max_s=0.2), expect_mod_revision=0)])

    async def settled() -> cpb.ListResponse.Shard | None:
        listed = await shard_listing(first.endpoint)
        done = listed is not None and sorted(statuses(listed).values()) == [
            Code.STANDBY, Code.PRIMARY]
        return listed if done else None
    listed = await until(settled, 30)
    primary = listed.route.members[listed.route.primary].suffix
    standby = "cons-2" if primary == "cons-1" else "cons-1"

    # Nobody else can take the standby assignment; the primary stays where it is.
    # Waiting on it would take the whole drain stall (DRAIN_STALL_S).
    async with asyncio.timeout(service_module.DRAIN_STALL_S - 2):
        await cluster.services[standby].stop(drain_timeout=60.0)
    now = await shard_listing(cluster.services[primary].endpoint)
    assert now is not None and statuses(now) == {primary: Code.PRIMARY}


async def test_shards_keep_consuming_through_an_etcd_outage_shorter_than_the_lease(
        cluster: Cluster) -> None:
    """Consumers here use an etcd of their own; it is down for ~2 s of a 6 s lease."""
    with EtcdServer() as own_etcd:
        config = consumer_config(own_etcd, cluster.broker, cluster.tmp, "cons-1")
        config.etcd_lease = 6
        service = ConsumerService(config, Counter(publish=False))
        await service.start()
        cluster.stack.push_async_callback(service.stop, 2.0)
        await create_shard(service.endpoint, shard_spec(SHARD, max_s=0.2))
        producer = Producer(cluster.stub)
        await stat_shard(service.endpoint, SHARD, {SOURCE: await producer.committed(1)})

        own_etcd.kill()
        head = await producer.committed(2, 3)
        stat = await stat_shard(service.endpoint, SHARD, {SOURCE: head}, timeout=10)
        assert stat.read_through[SOURCE] >= head  # consumed while etcd was down
        own_etcd.restart()

        head = await producer.committed(4)
        await asyncio.sleep(2)  # past the outage: the lease was refreshed in time
        stat = await stat_shard(service.endpoint, SHARD, {SOURCE: head}, timeout=10)
        assert stat.read_through[SOURCE] >= head
        assert not service.lease_lost.is_set()


async def test_a_standby_whose_disk_is_full_fails_alone_and_says_why(cluster: Cluster) -> None:
    first = await cluster.start("cons-1", Counter(publish=False))
    await create_shard(first.endpoint, shard_spec(SHARD, hot_standbys=1, max_s=0.5))
    producer = Producer(cluster.stub)
    head = await producer.committed(*range(20_000))  # a JSON state of ~100 KiB
    await stat_shard(first.endpoint, SHARD, {SOURCE: head}, timeout=60)

    small = cluster.tmp / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(small)], check=True)
    try:
        config = consumer_config(cluster.etcd, cluster.broker, cluster.tmp, "cons-2")
        config.data_dir = str(small)
        second = ConsumerService(config, Counter(publish=False))
        await second.start()
        try:
            async def standby_failed() -> list[str]:
                listed = await shard_listing(first.endpoint)
                return [e for m, st in zip(listed.route.members, listed.status, strict=True)
                        if m.suffix == "cons-2" and st.code == Code.FAILED
                        for e in st.errors] if listed else []
            errors = await until(standby_failed, 30)
            assert any("No space left on device" in e for e in errors), errors
            # The primary goes on as if nothing happened.
            head = await producer.committed(1)
            stat = await stat_shard(first.endpoint, SHARD, {SOURCE: head}, timeout=20)
            assert stat.read_through[SOURCE] >= head
        finally:
            await second.stop(drain_timeout=0.1)
    finally:
        subprocess.run(["umount", "-l", str(small)], check=True)
