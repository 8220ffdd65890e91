"""Reads listed through a broker that joined the journal's route lately see all its content.

Three brokers; a raw journal of replication 1 with a long refresh interval gets its
content, then replication 2: the broker that joins lists only what it found in the store
when it started, not what the first member persisted as it joined, until its next refresh
a minute later. A batch read (and `list_selection(to_head=True)`) given that broker must
still return every byte up to the write head, and a streaming query's listing reach it
with no gap (spark_jobs/head_listing.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from gazette_core.broker.client.appender import append
from gazette_core.broker.client.channel import close_channels, journal_stub
from gazette_core.broker.client.journals import (
    apply_journals,
    fetch_write_head,
    list_fragments,
    list_journals,
)
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import StatusError
from gazette_core.testing.broker import journal_spec
from spark_jobs import head_listing
from spark_jobs.datasource import register
from spark_jobs.head_listing import ListingShort, ends_short, has_hole, listing_to_head
from spark_jobs.selection import list_selection
from spark_jobs.session import get_session
from spark_jobs.source.options import read_options
from spark_jobs.source.stream_listing import list_stream
from tests.reliability.support import Cluster, cluster_route, local_cluster

JOURNAL = "head-listing/raw"
LINES = [b"line %d\n" % i for i in range(10)]


@dataclass
class Joined:
    cluster: Cluster
    newcomer: str  # the endpoint of the broker that joined the route
    head: int


async def join_a_broker(cluster: Cluster) -> Joined:
    stub = journal_stub(cluster.endpoints[0])
    spec = journal_spec(JOURNAL, replication=1, length=64 << 20, refresh_s=60)
    await apply_journals(stub, pb.ApplyRequest(changes=[
        pb.ApplyRequest.Change(upsert=spec, expect_mod_revision=-1)]))
    first = (await cluster_route(cluster, JOURNAL, 1)).endpoints[0]
    for line in LINES:
        await append(stub, JOURNAL, line)
    sel = pb.LabelSelector(include=pb.LabelSet(labels=[pb.Label(name="name", value=JOURNAL)]))
    listed = (await list_journals(stub, sel)).journals[0]
    spec.replication = 2
    await apply_journals(stub, pb.ApplyRequest(changes=[
        pb.ApplyRequest.Change(upsert=spec, expect_mod_revision=listed.mod_revision)]))
    route = await cluster_route(cluster, JOURNAL, 2)
    newcomer = next(e for e in route.endpoints if e != first)
    head = await fetch_write_head(stub, JOURNAL)
    await serving(newcomer)
    await close_channels()
    return Joined(cluster, newcomer, head)


async def serving(endpoint: str, limit: float = 30) -> None:
    """Once the broker at `endpoint` answers for the journal itself: the route in Etcd
    names it a little before its own view of Etcd does."""
    deadline = asyncio.get_running_loop().time() + limit
    while True:
        try:
            await list_fragments(journal_stub(endpoint), pb.FragmentsRequest(
                journal=JOURNAL, do_not_proxy=True))
            return
        except StatusError as e:
            assert e.status == pb.NOT_JOURNAL_BROKER, e
            assert asyncio.get_running_loop().time() < deadline, f"{endpoint} never served"
            await asyncio.sleep(0.05)


@pytest.fixture(scope="module")
def joined(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Joined]:
    loop = asyncio.new_event_loop()
    context = local_cluster(tmp_path_factory.mktemp("head-listing") / "stack")
    cluster = loop.run_until_complete(context.__aenter__())
    try:
        yield loop.run_until_complete(join_a_broker(cluster))
    finally:
        loop.run_until_complete(context.__aexit__(None, None, None))
        loop.close()


def own_listing(endpoint: str) -> list[pb.Fragment]:
    async def listed() -> list[pb.Fragment]:
        try:
            listing = await list_fragments(journal_stub(endpoint), pb.FragmentsRequest(
                journal=JOURNAL, do_not_proxy=True))
            return [f.spec for f in listing]
        finally:
            await close_channels()

    return asyncio.run(listed())


def test_the_newcomer_alone_lists_short_of_the_head(joined: Joined) -> None:
    """The case the others stand on: what the joining broker answers by itself."""
    assert joined.head == sum(len(line) for line in LINES)
    fragments = own_listing(joined.newcomer)
    assert has_hole(fragments) or ends_short(fragments, joined.head) or not fragments, fragments


def test_a_listing_to_the_head_through_the_newcomer_covers_every_offset(joined: Joined) -> None:
    selection = list_selection(joined.newcomer, f"name={JOURNAL}", to_head=True)
    [(_, fragments)] = selection.journals
    assert not has_hole(fragments)
    assert fragments[0].begin == 0 and max(f.end for f in fragments) == joined.head


def test_a_stream_listing_through_the_newcomer_reaches_the_head_with_no_gap(
        joined: Joined) -> None:
    """What a streaming query's offsets are planned from (with failOnDataLoss=false a gap
    would be skipped as lost)."""
    options = read_options({"broker": joined.newcomer, "selector": f"name={JOURNAL}"},
                           streaming=True)
    journal = list_stream(options, allow_empty=False).journals[JOURNAL]
    assert (journal.earliest, journal.head) == (0, joined.head)
    assert journal.first_gap(0, joined.head) is None


def test_a_batch_read_through_the_newcomer_returns_every_byte(joined: Joined) -> None:
    spark = get_session("local[2]", app_name="head-listing-test")
    register(spark)
    rows: list[Any] = (spark.read.format("gazette").option("broker", joined.newcomer)
                       .option("fileRoot", str(joined.cluster.directory / "fragments"))
                       .option("selector", f"name={JOURNAL}").load()
                       .orderBy("offset").collect())
    assert b"".join(bytes(r["data"]) for r in rows) == b"".join(LINES)


def test_a_listing_still_short_after_every_member_is_refused_in_one_line(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Members that all list short of the head (what they persisted not yet listed by
    any): the read is refused, retriable, rather than planned short."""
    fragment = pb.FragmentsResponse._Fragment(spec=pb.Fragment(
        journal=JOURNAL, begin=0, end=7, backing_store="file:///", mod_time=1))
    asked: list[bool] = []

    async def listed(_stub: object, do_not_proxy: bool) -> list[pb.FragmentsResponse._Fragment]:
        asked.append(do_not_proxy)
        if len(asked) == 2:  # The first member does not serve the journal yet: passed over.
            raise StatusError(pb.NOT_JOURNAL_BROKER, "", JOURNAL)
        return [fragment]

    async def head(_stub: object, _journal: str) -> int:
        return 70

    async def run() -> None:
        try:
            await listing_to_head(journal_stub("http://127.0.0.1:1"), JOURNAL,
                                  pb.Route(endpoints=["http://127.0.0.1:2", "http://127.0.0.1:3"]),
                                  listed)
        finally:
            await close_channels()

    monkeypatch.setattr(head_listing, "fetch_write_head", head)
    with pytest.raises(ListingShort) as refused:
        asyncio.run(run())
    assert asked == [False, True, True]  # the broker asked, then each member directly
    assert refused.value.retriable
    assert str(refused.value).splitlines() == [str(refused.value)]
    assert "ends at offset 7 but its write head is 70" in str(refused.value)
