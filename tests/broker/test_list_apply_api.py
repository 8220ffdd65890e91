"""List and Apply RPCs: transactions, revisions, paging, selectors and watches."""

from __future__ import annotations

import grpc
import pytest

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.protocol.labels_ext import parse_selector
from gazette_core.broker.protocol.validate_ext import validate_list_response
from gazette_core.broker.service import Broker
from gazette_core.testing.broker import journal_spec
from tests.broker.support import wait_assigned


def unrouted(broker: Broker, etcd: pb.Header.Etcd) -> pb.Header:
    return pb.Header(process_id=broker.process_id, route=pb.Route(primary=-1), etcd=etcd)


def upsert(spec: pb.JournalSpec, rev: int = 0) -> pb.ApplyRequest.Change:
    return pb.ApplyRequest.Change(upsert=spec, expect_mod_revision=rev)


async def list_all(stub: pb_grpc.JournalStub, selector: str = "") -> list[pb.ListResponse]:
    return [r async for r in stub.List(pb.ListRequest(selector=parse_selector(selector)))]


async def test_apply_creates_and_guards_revisions(broker: Broker,
                                                  stub: pb_grpc.JournalStub) -> None:
    created = await stub.Apply(pb.ApplyRequest(changes=[upsert(journal_spec("a/one"))]))
    assert created == pb.ApplyResponse(status=pb.OK, header=unrouted(broker, created.header.etcd))
    rev = created.header.etcd.revision
    again = await stub.Apply(pb.ApplyRequest(changes=[upsert(journal_spec("a/one"))]))
    assert again == pb.ApplyResponse(status=pb.ETCD_TRANSACTION_FAILED,
                                     header=unrouted(broker, again.header.etcd))
    updated = await stub.Apply(pb.ApplyRequest(changes=[upsert(journal_spec("a/one"), rev)]))
    assert updated.status == pb.OK and updated.header.etcd.revision > rev
    listed = (await list_all(stub, "name=a/one"))[0].journals[0]
    assert listed.mod_revision == updated.header.etcd.revision
    assert listed.create_revision == rev
    deleted = await stub.Apply(pb.ApplyRequest(changes=[
        pb.ApplyRequest.Change(delete="a/one", expect_mod_revision=-1)]))
    assert deleted.status == pb.OK
    assert (await list_all(stub))[0].journals == []


async def test_apply_rejects_invalid_spec_naming_the_field(broker: Broker,
                                                           stub: pb_grpc.JournalStub) -> None:
    bad = journal_spec("a/one")
    bad.fragment.length = 12
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.Apply(pb.ApplyRequest(changes=[upsert(bad)]))
    assert err.value.code() == grpc.StatusCode.UNKNOWN
    assert err.value.details().startswith("changes[0].upsert.fragment.length:")
    assert (await list_all(stub))[0].journals == []  # nothing was written


@pytest.mark.parametrize("template", ["{{ .__class__ }}", "{{range .Spool}}x{{end}}",
                                      "{{ .JournalSpec.Name }}/../../escaped"])
async def test_apply_refuses_a_postfix_template_the_persister_cannot_evaluate(
        broker: Broker, stub: pb_grpc.JournalStub, template: str) -> None:
    bad = journal_spec("a/one")
    bad.fragment.path_postfix_template = template
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.Apply(pb.ApplyRequest(changes=[upsert(bad)]))
    assert (err.value.details() or "").startswith(
        "changes[0].upsert.fragment.path_postfix_template: ")
    assert (await list_all(stub))[0].journals == []  # nothing was written


async def test_list_pages_by_25_with_routes(broker: Broker, stub: pb_grpc.JournalStub) -> None:
    specs = [journal_spec(f"many/j-{i:03d}") for i in range(30)]
    await stub.Apply(pb.ApplyRequest(changes=[upsert(s) for s in specs]))
    route = await wait_assigned(stub, "many/j-029")
    pages = await list_all(stub, "prefix=many/")
    assert [len(p.journals) for p in pages] == [25, 5]
    assert pages[0].status == pb.OK and pages[0].header.etcd.revision > 0
    assert pages[1].status == pb.OK and not pages[1].HasField("header")
    names = [j.spec.name for p in pages for j in p.journals]
    assert names == [s.name for s in specs]
    assert pages[1].journals[-1].route == route == pb.Route(
        members=[broker.process_id], primary=0, endpoints=[broker.endpoint])
    assert [j.spec for p in pages for j in p.journals] == specs
    validate_list_response(pages[0])


async def test_list_selects_by_labels(broker: Broker, stub: pb_grpc.JournalStub) -> None:
    await stub.Apply(pb.ApplyRequest(changes=[
        upsert(journal_spec("x/clicks", labels=(("topic", "clicks"),))),
        upsert(journal_spec("x/views", labels=(("topic", "views"),))),
        upsert(journal_spec("y/other")),
    ]))
    assert [j.spec.name for j in (await list_all(stub, "topic=clicks"))[0].journals] == [
        "x/clicks"]
    assert [j.spec.name for j in (await list_all(stub, "topic"))[0].journals] == [
        "x/clicks", "x/views"]
    assert [j.spec.name for j in (await list_all(stub, "!topic"))[0].journals] == ["y/other"]
    assert [j.spec.name for j in (await list_all(stub, "name:prefix=x/v"))[0].journals] == [
        "x/views"]


async def test_list_watch_sends_snapshots_and_markers(broker: Broker,
                                                      stub: pb_grpc.JournalStub) -> None:
    await stub.Apply(pb.ApplyRequest(changes=[upsert(journal_spec("w/one"))]))
    call = stub.List(pb.ListRequest(selector=parse_selector("prefix=w/"), watch=True))
    stream = call.__aiter__()
    first = await stream.__anext__()
    assert [j.spec.name for j in first.journals] == ["w/one"]
    assert await stream.__anext__() == pb.ListResponse()  # end of snapshot
    await stub.Apply(pb.ApplyRequest(changes=[upsert(journal_spec("w/two"))]))
    second = await stream.__anext__()
    assert [j.spec.name for j in second.journals] == ["w/one", "w/two"]
    assert second.header.etcd.revision > first.header.etcd.revision
    call.cancel()
