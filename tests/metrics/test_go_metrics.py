"""Go's metric names, kinds and labels on a real broker and consumer, scraped over HTTP.

A broker (HTTP gateway on) and a consumer process's service run here. A
journal takes appends, rolls two fragments into its file store, and is read
from inside the first one straight from the store; then a shard consumes
committed and transactional messages. Both /metrics scrapes must hold every
family of Go's table with its TYPE and label names, and a few series must
move by exactly what was done. Metrics are process-wide: the broker's part
runs before the consumer starts, and values are compared before and after.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import aetcd
import aiohttp
import pytest_asyncio

from gazette_core.broker.client.appender import append
from gazette_core.broker.client.channel import journal_stub
from gazette_core.broker.client.retry_reader import RetryReader
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.service import Broker
from gazette_core.consumer.api.client import stat_shard
from gazette_core.consumer.service import ConsumerService
from gazette_core.testing.broker import journal_spec
from gazette_core.testing.etcd import EtcdServer
from tests.broker.http_support import http_broker
from tests.broker.support import create
from tests.consumer.runtime.apps import Counter
from tests.consumer.runtime.support import SOURCE, Producer, create_journals, shard_spec
from tests.consumer.service.test_service import consumer_config, create_shard
from tests.metrics.scrape import Family, Samples, delta, samples, scrape, value

JOURNAL = "metrics/go"
SHARD = "shard-000"
PARTS = [bytes([65 + i]) * 700 + b"\n" for i in range(4)]
# Four 701-byte appends over 1 KiB fragments roll at 701 and 2103; 2103-2804 stays spooled.
PERSISTED = [(0, 701), (701, 2103)]
READ_FROM = 350

FRAGMENT = ("journal", "codec")
BROKER_FAMILIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "gazette_journal_server_started_totals": ("counter", ("operation",)),
    "gazette_journal_server_completed_totals": ("counter", ("operation", "status")),
    "gazette_write_head": ("gauge", ("journal",)),
    "gazette_append_bytes_total": ("counter", ("journal",)),
    "gazette_read_bytes_total": ("counter", ("journal",)),
    "gazette_fragment_open_total": ("counter", FRAGMENT),
    "gazette_fragment_open_bytes_total": ("counter", FRAGMENT),
    "gazette_fragment_open_content_length_total": ("counter", FRAGMENT),
    "gazette_read_fragment_bytes_total": ("counter", FRAGMENT),
    "gazette_discard_fragment_bytes_total": ("counter", FRAGMENT),
    "gazette_spool_commits_total": ("counter", ()),
    "gazette_spool_commit_bytes_total": ("counter", ()),
    "gazette_spool_rollbacks_total": ("counter", ()),
    "gazette_spool_rollback_bytes_total": ("counter", ()),
    "gazette_spool_completed_total": ("counter", ()),
    "gazette_spool_persisted_total": ("counter", ()),
    "gazette_store_active": ("gauge", ()),
    "gazette_store_operation_total": ("counter", ("store", "operation", "status")),
    "gazette_store_operation_duration_seconds": ("histogram", ("store", "operation")),
    "gazette_store_put_bytes_total": ("counter", ("store", "encoding")),
    "gazette_store_list_items_count": ("histogram", ("store",)),
    "gazette_store_health_check_total": ("counter", ("store", "status")),
}
ALLOCATOR_FAMILIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "gazette_allocator_assignment_added_total": ("counter", ()),
    "gazette_allocator_assignment_packed_total": ("counter", ()),
    "gazette_allocator_assignment_removed_total": ("counter", ()),
    "gazette_allocator_converge_total": ("counter", ()),
    "gazette_allocator_desired_replication_slots": ("gauge", ()),
    "gazette_allocator_items": ("gauge", ()),
    "gazette_allocator_members": ("gauge", ()),
    "gazette_allocator_max_flow_runtime_seconds": ("histogram", ()),
}
CONSUMER_FAMILIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "gazette_shard_transactions_total": ("counter", ("shard",)),
    "gazette_shard_read_messages_total": ("counter", ("shard",)),
    "gazette_shard_read_bytes_total": ("counter", ("shard",)),
    "gazette_shard_read_head": ("gauge", ("shard", "journal")),
    "gazette_shard_phase_seconds_total": ("counter", ("shard", "phase", "type")),
    "gazette_consumer_tx_count_total": ("counter", ()),
    "gazette_consumer_tx_messages_total": ("counter", ()),
    "gazette_consumer_tx_seconds_total": ("counter", ()),
    "gazette_consumer_tx_consume_seconds_total": ("counter", ()),
    "gazette_consumer_tx_stalled_seconds_total": ("counter", ()),
    "gazette_consumer_tx_flush_seconds_total": ("counter", ()),
    "gazette_consumer_tx_sync_seconds_total": ("counter", ()),
    "gazette_consumer_consumed_bytes_total": ("counter", ()),
    "gazette_consumer_read_head": ("gauge", ("journal",)),
    "gazette_sequencer_queued": ("counter", ("journal", "flag", "outcome")),
    "gazette_sequencer_replay": ("counter", ("journal",)),
    "gazette_recoverylog_recovered_bytes_total": ("counter", ()),
}
GRPC = ("grpc_type", "grpc_service", "grpc_method")
GRPC_FAMILIES: dict[str, tuple[str, tuple[str, ...]]] = {
    f"grpc_{side}_{name}": (kind, labels)
    for side in ("server", "client")
    for name, kind, labels in (("started_total", "counter", GRPC),
                               ("handled_total", "counter", (*GRPC, "grpc_code")),
                               ("msg_received_total", "counter", GRPC),
                               ("msg_sent_total", "counter", GRPC),
                               ("handling_seconds", "histogram", GRPC))
}
APPEND = {"grpc_type": "client_stream", "grpc_service": "protocol.Journal",
          "grpc_method": "Append"}


class Processes:
    def __init__(self, broker: Broker, stub: pb_grpc.JournalStub, root: Path,
                 http: aiohttp.ClientSession) -> None:
        self.broker, self.stub, self.root, self.http = broker, stub, root, http

    async def broker_scrape(self) -> dict[str, Family]:
        return await scrape(self.http, f"{self.broker.http_endpoint}/metrics")


@pytest_asyncio.fixture(loop_scope="session")
async def processes(etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path
                    ) -> AsyncIterator[Processes]:
    root = tmp_path / "root"
    root.mkdir()
    async with (http_broker(etcd_server.endpoint, str(root)) as broker,
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as http):
        # Through a dialed channel, as every client of the library: it counts gRPC calls.
        stub = journal_stub(broker.endpoint)
        await create(stub, journal_spec(JOURNAL, length=1024))
        yield Processes(broker, stub, root, http)


def assert_families(families: dict[str, Family],
                    expected: dict[str, tuple[str, tuple[str, ...]]]) -> None:
    """Each expected family is there, of its kind, its series labelled as Go labels them."""
    for name, (kind, labels) in expected.items():
        assert name in families, f"{name} is not exposed"
        family = families[name]
        assert family.kind == kind, f"{name}: TYPE {family.kind}, expected {kind}"
        assert family.samples, f"{name} has no series"
        assert family.label_names() == {tuple(sorted(labels))}, name


async def fill_and_read(p: Processes) -> tuple[int, bytes]:
    """Append PARTS, wait until both rolled fragments are persisted, then read from
    READ_FROM straight from the store (the spooled rest through the broker)."""
    head = 0
    for part in PARTS:
        head = int((await append(p.stub, JOURNAL, part)).commit.end)
    async with asyncio.timeout(30):
        while True:
            resp = await p.stub.ListFragments(pb.FragmentsRequest(journal=JOURNAL))
            if [(f.spec.begin, f.spec.end) for f in resp.fragments
                    if f.spec.mod_time] == PERSISTED:
                break
            await asyncio.sleep(0.05)
    request = pb.ReadRequest(journal=JOURNAL, offset=READ_FROM, do_not_proxy=True)
    async with RetryReader(p.stub, request, file_root=str(p.root)) as reader:
        data = b"".join([chunk async for chunk in reader])
    return head, data


def assert_broker_moves(before: Samples, after: Samples, head: int) -> None:
    content = b"".join(PARTS)
    journal, persisted = {"journal": JOURNAL}, PERSISTED[-1][1]
    assert delta(before, after, "gazette_append_bytes_total", **journal) == len(content)
    assert value(after, "gazette_write_head", **journal) == head == len(content)
    assert delta(before, after, "gazette_spool_commits_total") == len(PARTS)
    assert delta(before, after, "gazette_spool_commit_bytes_total") == len(content)
    assert delta(before, after, "gazette_spool_completed_total") == len(PERSISTED)
    assert delta(before, after, "gazette_spool_persisted_total") == len(PERSISTED)
    fragment = {"journal": JOURNAL, "codec": "NONE"}
    assert delta(before, after, "gazette_fragment_open_total", **fragment) == len(PERSISTED)
    assert delta(before, after, "gazette_fragment_open_bytes_total", **fragment) == persisted
    assert delta(before, after, "gazette_fragment_open_content_length_total",
                 **fragment) == persisted
    assert delta(before, after, "gazette_discard_fragment_bytes_total", **fragment) == READ_FROM
    assert delta(before, after, "gazette_read_fragment_bytes_total",
                 **fragment) == persisted - READ_FROM
    assert delta(before, after, "gazette_read_bytes_total", **journal) == len(content) - READ_FROM
    store = {"store": "file:///"}
    for operation in ("exists", "put"):
        assert delta(before, after, "gazette_store_operation_total", operation=operation,
                     status="success", **store) == len(PERSISTED)
    assert delta(before, after, "gazette_store_put_bytes_total", encoding="none",
                 **store) == persisted
    assert value(after, "gazette_store_health_check_total", status="ok", **store) >= 1
    assert delta(before, after, "gazette_journal_server_completed_totals",
                 operation="Append", status="ok") == len(PARTS)
    # Three messages an append: the options, the content and the commit intent.
    for side in ("server", "client"):
        assert delta(before, after, f"grpc_{side}_handled_total", grpc_code="OK",
                     **APPEND) == len(PARTS)
        assert delta(before, after, f"grpc_{side}_started_total", **APPEND) == len(PARTS)
    assert delta(before, after, "grpc_server_msg_received_total", **APPEND) == 3 * len(PARTS)
    assert delta(before, after, "grpc_server_msg_sent_total", **APPEND) == len(PARTS)
    assert delta(before, after, "grpc_server_handling_seconds_count", **APPEND) == len(PARTS)


def list_items_buckets(families: dict[str, Family]) -> list[str]:
    return sorted({labels["le"] for name, labels, _ in
                   families["gazette_store_list_items_count"].samples if "le" in labels},
                  key=float)


async def test_broker_and_consumer_expose_gos_metrics(processes: Processes,
                                                      etcd_server: EtcdServer,
                                                      tmp_path: Path) -> None:
    p = processes
    before = samples(await p.broker_scrape())
    head, data = await fill_and_read(p)
    assert data == b"".join(PARTS)[READ_FROM:]
    broker = await p.broker_scrape()
    assert_broker_moves(before, samples(broker), head)
    # The journal's assignment was the broker allocator's doing.
    for name in ("gazette_allocator_assignment_added_total", "gazette_allocator_converge_total",
                 "gazette_allocator_members", "gazette_allocator_items",
                 "gazette_allocator_desired_replication_slots",
                 "gazette_allocator_max_flow_runtime_seconds_count"):
        assert value(samples(broker), name) >= 1, name
    assert_families(broker, BROKER_FAMILIES | ALLOCATOR_FAMILIES | GRPC_FAMILIES)
    assert list_items_buckets(broker) == ["10.0", "40.0", "160.0", "640.0", "2560.0",
                                          "10240.0", "+Inf"]

    await create_journals(p.stub)
    config = consumer_config(etcd_server, p.broker.endpoint, tmp_path, "cons-1")
    config.http_port = 0
    service = ConsumerService(config, Counter(publish=False))
    await service.start()
    try:
        url = f"http://127.0.0.1:{service.server.http_port}/metrics"
        await create_shard(service.endpoint, shard_spec(SHARD, max_s=0.2))
        before = samples(await scrape(p.http, url))
        producer = Producer(p.stub)
        await producer.committed(1, 2, 3)
        await producer.uncommitted(4, 5)
        source_head = await producer.ack()
        await stat_shard(service.endpoint, SHARD, {SOURCE: source_head})
        consumer = await scrape(p.http, url)
    finally:
        await service.stop(2.0)
    after = samples(consumer)
    assert_families(consumer, CONSUMER_FAMILIES | ALLOCATOR_FAMILIES | GRPC_FAMILIES)
    shard = {"shard": SHARD}
    transactions = delta(before, after, "gazette_shard_transactions_total", **shard)
    assert transactions >= 1
    assert delta(before, after, "gazette_consumer_tx_count_total") == transactions
    assert delta(before, after, "gazette_consumer_tx_messages_total") == 6
    assert delta(before, after, "gazette_shard_phase_seconds_total", phase="50-committing",
                 type="async", **shard) > 0
    assert delta(before, after, "gazette_shard_read_messages_total", **shard) == 6
    assert delta(before, after, "gazette_shard_read_bytes_total", **shard) == source_head
    assert value(after, "gazette_shard_read_head", journal=SOURCE, **shard) == source_head
    assert value(after, "gazette_consumer_read_head", journal=SOURCE) == source_head
    queued = {"journal": SOURCE}
    for flag, outcome, count in (("OUTSIDE_TXN", "outsideCommit", 3),
                                 ("CONTINUE_TXN", "continueBeginSpan", 1),
                                 ("CONTINUE_TXN", "continueExtendSpan", 1),
                                 ("ACK_TXN", "ackCommitRing", 1)):
        assert delta(before, after, "gazette_sequencer_queued", flag=flag, outcome=outcome,
                     **queued) == count, (flag, outcome)
    # Process-wide: earlier tests in this process may have replayed this journal name.
    assert delta(before, after, "gazette_sequencer_replay", **queued) == 0
    stat = {"grpc_type": "unary", "grpc_service": "consumer.Shard", "grpc_method": "Stat",
            "grpc_code": "OK"}
    assert delta(before, after, "grpc_server_handled_total", **stat) == 1
    assert delta(before, after, "grpc_client_handled_total", **stat) == 1
