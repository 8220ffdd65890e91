"""Append rates against a real broker: the minimum a client must sustain, the maximum a
journal takes (`max_append_rate`, capped by --broker.max-append-rate)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import aetcd
import grpc
import pytest

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.testing.broker import broker_config, journal_spec, journal_stub, running_broker
from gazette_core.testing.etcd import EtcdServer
from tests.broker.cluster import Cluster
from tests.broker.support import append, content, create, wait_assigned

MIN_RATE_FAILURE = "append stream: client stream didn't sustain the minimum append data rate"


async def _paced(journal: str, chunks: int, size: int, every_s: float
                 ) -> AsyncIterator[pb.AppendRequest]:
    """An Append stream sending `size` bytes every `every_s` seconds."""
    yield pb.AppendRequest(journal=journal)
    for i in range(chunks):
        await asyncio.sleep(every_s)
        yield pb.AppendRequest(content=bytes([65 + i % 26]) * size)
    yield pb.AppendRequest()


@pytest.mark.parametrize(("min_rate", "aborted"), [(4096, True), (1024, False)])
async def test_a_client_slower_than_the_min_append_rate_is_aborted(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path, min_rate: int,
        aborted: bool) -> None:
    # The client sends 2 KiB/s for three seconds: too slow for 4096 B/s once the first
    # second's credit is spent, fast enough for 1024 B/s (and far too slow for the default).
    config = broker_config(etcd_server.endpoint, str(tmp_path), min_append_rate=min_rate)
    async with running_broker(config) as broker, journal_stub(broker.endpoint) as stub:
        await create(stub, journal_spec("slow/client"))
        call = stub.Append(_paced("slow/client", chunks=12, size=512, every_s=0.25))
        if aborted:
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await call
            assert err.value.details() == MIN_RATE_FAILURE
            assert await content(stub, "slow/client") == b""
        else:
            resp = await call
            assert (resp.status, resp.commit.end, resp.total_chunks) == (pb.OK, 12 * 512, 12)


def _rated(name: str, rate: int) -> pb.JournalSpec:
    spec = journal_spec(name)
    spec.max_append_rate = rate
    return spec


@pytest.mark.parametrize(("journal_rate", "broker_cap", "throttled"), [
    (4096, 0, True),  # the journal's own rate
    (0, 4096, True),  # the broker's cap applies to a journal without a rate
    (10**9, 4096, True),  # and caps a journal's higher rate
    (0, 0, False),  # no rate anywhere: never delayed
])
async def test_appends_are_throttled_to_the_effective_max_append_rate(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path, journal_rate: int,
        broker_cap: int, throttled: bool) -> None:
    config = broker_config(etcd_server.endpoint, str(tmp_path), max_append_rate=broker_cap)
    async with running_broker(config) as broker, journal_stub(broker.endpoint) as stub:
        await create(stub, _rated("rated/journal", journal_rate))
        chunks = [bytes([65 + i]) * 1024 for i in range(8)]  # two seconds' worth at 4 KiB/s
        resp = await append(stub, "rated/journal", *chunks)
        assert (resp.status, resp.commit.end, resp.total_chunks) == (pb.OK, 8192, 8)
        assert (resp.delayed_chunks > 0) is throttled, resp
        assert await content(stub, "rated/journal") == b"".join(chunks)


async def test_throttling_stops_once_the_route_changes_mid_append(cluster: Cluster) -> None:
    stub = cluster.stubs[0]
    await create(stub, _rated("moving/journal", 100))
    route = await wait_assigned(stub, "moving/journal")
    primary = next(i for i, b in enumerate(cluster.brokers)
                   if b.process_id == route.members[route.primary])
    chunks = [bytes([65 + i]) * 100 for i in range(20)]  # 20 s at 100 B/s, if throttled
    appending = asyncio.ensure_future(append(cluster.stubs[primary], "moving/journal", *chunks))
    await asyncio.sleep(0.5)  # a chunk or two waits for the bank meanwhile
    grown = _rated("moving/journal", 100)
    grown.replication = 2
    resp = await stub.Apply(pb.ApplyRequest(changes=[pb.ApplyRequest.Change(
        upsert=grown, expect_mod_revision=-1)]))
    assert resp.status == pb.OK
    done = await appending
    assert (done.status, done.total_chunks) == (pb.OK, 20)
    assert done.delayed_chunks < done.total_chunks, done
    assert await content(cluster.stubs[primary], "moving/journal") == b"".join(chunks)

