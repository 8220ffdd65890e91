"""/metrics on the HTTP gateway: counters move by what appends, reads and persists did.

Counters are process-wide (prometheus_client's default registry), so each
test compares values before and after its own work.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import aetcd
import aiohttp
import pytest_asyncio

from gazette_core.broker.service import Broker
from gazette_core.testing.broker import journal_spec, journal_stub
from gazette_core.testing.etcd import EtcdServer
from tests.broker.http_support import http_broker
from tests.broker.support import create
from tests.metrics import scrape as exposition
from tests.metrics.scrape import Samples, delta

JOURNAL = "metrics/journal"


@pytest_asyncio.fixture(loop_scope="session")
async def broker(etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path
                 ) -> AsyncIterator[Broker]:
    async with http_broker(etcd_server.endpoint, str(tmp_path)) as b:
        async with journal_stub(b.endpoint) as stub:
            # Short fragments, so that a second append rolls the first one to the store.
            await create(stub, journal_spec(JOURNAL, length=1024))
        yield b


@pytest_asyncio.fixture(loop_scope="session")
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
        yield session


async def scrape(http: aiohttp.ClientSession, broker: Broker) -> Samples:
    return exposition.samples(await exposition.scrape(http, f"{broker.http_endpoint}/metrics"))


async def test_appends_and_reads_move_their_counters(broker: Broker,
                                                     http: aiohttp.ClientSession) -> None:
    before = await scrape(http, broker)
    for data in (b"x" * 1100, b"y" * 23):
        async with http.put(f"{broker.http_endpoint}/{JOURNAL}", data=data) as resp:
            assert resp.status == 204
    async with http.get(f"{broker.http_endpoint}/{JOURNAL}?offset=0") as resp:
        assert len(await resp.read()) == 1123  # both fragments, up to the write head
    after = await scrape(http, broker)

    # The gateway appends and reads as a client does, counting Go's client figures.
    assert delta(before, after, "gazette_append_bytes_total", journal=JOURNAL) == 1123
    assert delta(before, after, "gazette_read_bytes_total", journal=JOURNAL) == 1123
    assert delta(before, after, "gazette_append_received_bytes_total") == 1123
    # A pulse (an empty append on a route change) may commit too, adding no bytes.
    assert 2 <= delta(before, after, "gazette_append_commits_total") <= 3
    assert delta(before, after, "gazette_append_committed_bytes_total") == 1123
    assert delta(before, after, "gazette_reads_total") == 1
    assert delta(before, after, "gazette_read_served_bytes_total") == 1123
    assert delta(before, after, "gazette_journal_server_started_totals",
                 operation="Append") == 2
    assert delta(before, after, "gazette_journal_server_completed_totals",
                 operation="Append", status="ok") == 2
    assert delta(before, after, "gazette_journal_server_completed_totals",
                 operation="Read", status="ok") == 1
    assert delta(before, after, "gazette_http_gateway_requests_total",
                 method="PUT", code="204") == 2
    assert delta(before, after, "gazette_http_gateway_requests_total",
                 method="GET", code="206") == 1


async def test_non_ok_statuses_are_counted_by_name(broker: Broker,
                                                   http: aiohttp.ClientSession) -> None:
    before = await scrape(http, broker)
    async with http.put(f"{broker.http_endpoint}/no/such/journal", data=b"x") as resp:
        assert resp.status == 500
    after = await scrape(http, broker)
    assert delta(before, after, "gazette_journal_server_completed_totals",
                 operation="Append", status="JOURNAL_NOT_FOUND") == 1
    assert delta(before, after, "gazette_http_gateway_requests_total",
                 method="PUT", code="500") == 1


async def test_persisting_a_fragment_moves_the_store_counters(
        broker: Broker, http: aiohttp.ClientSession) -> None:
    before = await scrape(http, broker)
    for data in (b"a" * 1040, b"b" * 2):  # the second append rolls the first fragment
        async with http.put(f"{broker.http_endpoint}/{JOURNAL}", data=data) as resp:
            assert resp.status == 204
    after = before
    async with asyncio.timeout(30):
        while delta(before, after, "gazette_spool_persisted_total") < 1:
            await asyncio.sleep(0.05)
            after = await scrape(http, broker)
    assert delta(before, after, "gazette_spool_persisted_total") == 1
    assert delta(before, after, "gazette_store_persisted_bytes_total", provider="file") == 1040
    for operation in ("exist", "persist"):
        assert delta(before, after, "gazette_store_requests_total", provider="file",
                     operation=operation, status="ok") == 1
