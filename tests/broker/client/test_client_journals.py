"""List (paged and watched), Apply, ListFragments paging and write-head lookups."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from gazette_core.broker.client.journals import (
    apply_journals,
    fetch_write_head,
    list_fragments,
    list_journals,
    watch_journals,
)
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import StatusError
from tests.broker.client.fake_broker import FakeBroker, Snapshot, header

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub

SELECTOR = pb.LabelSelector(include=pb.LabelSet(labels=[pb.Label(name="app", value="x")]))


def journals(count: int, prefix: str = "j") -> list[pb.ListResponse.Journal]:
    return [
        pb.ListResponse.Journal(
            spec=pb.JournalSpec(name=f"{prefix}/{i:03d}", replication=1),
            mod_revision=i + 1,
            create_revision=i + 1,
        )
        for i in range(count)
    ]


async def test_list_journals_merges_pages(broker: FakeBroker, stub: JournalAsyncStub) -> None:
    broker.list_journals = journals(60)
    resp = await list_journals(stub, SELECTOR)
    assert resp == pb.ListResponse(status=pb.OK, header=header(1), journals=journals(60))
    assert broker.list_requests == [pb.ListRequest(selector=SELECTOR)]


async def test_list_journals_of_nothing(broker: FakeBroker, stub: JournalAsyncStub) -> None:
    assert await list_journals(stub, SELECTOR) == pb.ListResponse(status=pb.OK, header=header(1))


async def test_list_journals_raises_on_status(broker: FakeBroker, stub: JournalAsyncStub) -> None:
    broker.list_status = pb.NOT_ALLOWED
    with pytest.raises(StatusError) as caught:
        await list_journals(stub, SELECTOR)
    assert str(caught.value) == "NOT_ALLOWED"


async def test_watch_journals_yields_snapshots_and_resumes_after_a_cut(
    broker: FakeBroker, stub: JournalAsyncStub
) -> None:
    broker.watch_snapshots = [
        Snapshot(5, journals(30)),
        Snapshot(6, journals(2, "k")),
        Snapshot(9, []),
    ]
    broker.watch_aborts = 1
    watch = watch_journals(stub, SELECTOR)
    got = [await anext(watch) for _ in range(3)]
    await watch.aclose()
    assert got == [
        pb.ListResponse(status=pb.OK, header=header(5), journals=journals(30)),
        pb.ListResponse(status=pb.OK, header=header(6), journals=journals(2, "k")),
        pb.ListResponse(status=pb.OK, header=header(9)),
    ]
    assert broker.list_requests == [
        pb.ListRequest(selector=SELECTOR, watch=True),
        pb.ListRequest(selector=SELECTOR, watch=True, watch_resume=header(5)),
    ]


async def test_apply_journals(broker: FakeBroker, stub: JournalAsyncStub) -> None:
    req = pb.ApplyRequest(
        changes=[pb.ApplyRequest.Change(expect_mod_revision=-1, delete="a/journal")]
    )
    assert await apply_journals(stub, req) == pb.ApplyResponse(status=pb.OK, header=header(7))
    assert broker.apply_requests == [req]
    broker.apply_status = pb.ETCD_TRANSACTION_FAILED
    with pytest.raises(StatusError) as caught:
        await apply_journals(stub, req)
    assert str(caught.value) == "ETCD_TRANSACTION_FAILED"


async def test_list_fragments_follows_page_tokens(
    broker: FakeBroker, stub: JournalAsyncStub
) -> None:
    broker.add_journal("a/journal")
    broker.fragments = [
        pb.FragmentsResponse._Fragment(
            spec=pb.Fragment(journal="a/journal", begin=i * 100, end=i * 100 + 100)
        )
        for i in range(25)
    ]
    got = await list_fragments(stub, pb.FragmentsRequest(journal="a/journal", page_limit=10))
    assert got == broker.fragments
    assert [r.next_page_token for r in broker.fragments_requests] == [0, 1000, 2000]
    with pytest.raises(StatusError) as caught:
        await list_fragments(stub, pb.FragmentsRequest(journal="missing/journal"))
    assert str(caught.value) == "JOURNAL_NOT_FOUND (journal 'missing/journal')"


async def test_fetch_write_head(broker: FakeBroker, stub: JournalAsyncStub) -> None:
    broker.add_journal("a/journal", b"x" * 1234)
    broker.add_journal("b/journal")
    assert await fetch_write_head(stub, "a/journal") == 1234
    assert await fetch_write_head(stub, "b/journal") == 0
    assert broker.read_requests[0] == pb.ReadRequest(
        journal="a/journal", offset=-1, metadata_only=True
    )
    with pytest.raises(StatusError) as caught:
        await fetch_write_head(stub, "missing/journal")
    assert str(caught.value) == "JOURNAL_NOT_FOUND (journal 'missing/journal')"
