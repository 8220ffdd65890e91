"""Resolution and precondition statuses that need a particular cluster or store state."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import aetcd

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.service import Broker
from gazette_core.testing.broker import broker_config, journal_spec, journal_stub, running_broker
from gazette_core.testing.etcd import EtcdServer
from tests.broker.support import append, create, read_all


def upsert(spec: pb.JournalSpec) -> pb.ApplyRequest:
    return pb.ApplyRequest(changes=[pb.ApplyRequest.Change(upsert=spec)])


async def test_suspended_journal_refuses_reads_appends_and_listing(
        broker: Broker, stub: pb_grpc.JournalStub) -> None:
    spec = journal_spec("s/journal")
    spec.suspend.level = pb.JournalSpec.Suspend.FULL
    spec.suspend.offset = 100
    assert (await stub.Apply(upsert(spec))).status == pb.OK
    unrouted = pb.Route(primary=-1)
    read = await read_all(stub, pb.ReadRequest(journal="s/journal"))
    assert read == [pb.ReadResponse(status=pb.SUSPENDED, header=pb.Header(
        process_id=broker.process_id, route=unrouted, etcd=read[0].header.etcd))]
    appended = await append(stub, "s/journal", b"x", suspend=pb.AppendRequest.SUSPEND_NO_RESUME)
    assert appended.status == pb.SUSPENDED
    frags = await stub.ListFragments(pb.FragmentsRequest(journal="s/journal"))
    assert frags.status == pb.SUSPENDED


async def test_replication_beyond_the_cluster_is_insufficient_brokers(
        broker: Broker, stub: pb_grpc.JournalStub) -> None:
    await create(stub, journal_spec("r/journal", replication=2))
    resp = await append(stub, "r/journal", b"x")
    assert resp == pb.AppendResponse(status=pb.INSUFFICIENT_JOURNAL_BROKERS, header=pb.Header(
        process_id=broker.process_id,
        route=pb.Route(members=[broker.process_id], primary=0, endpoints=[broker.endpoint]),
        etcd=resp.header.etcd))


async def test_unassigned_journal_has_no_primary_and_no_brokers(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path) -> None:
    # A broker that accepts no journals leaves every journal unassigned.
    config = broker_config(etcd_server.endpoint, str(tmp_path), limit=0)
    async with running_broker(config) as broker, journal_stub(broker.endpoint) as stub:
        assert (await stub.Apply(upsert(journal_spec("u/journal")))).status == pb.OK
        header = pb.Header(process_id=broker.process_id, route=pb.Route(primary=-1))
        appended = await append(stub, "u/journal", b"x")
        header.etcd.CopyFrom(appended.header.etcd)
        assert appended == pb.AppendResponse(status=pb.NO_JOURNAL_PRIMARY_BROKER, header=header)
        read = await read_all(stub, pb.ReadRequest(journal="u/journal"))
        header.etcd.CopyFrom(read[0].header.etcd)
        assert read == [pb.ReadResponse(status=pb.INSUFFICIENT_JOURNAL_BROKERS, header=header)]


async def test_index_ahead_of_spool_until_an_explicit_offset_resets_the_head(
        broker: Broker, stub: pb_grpc.JournalStub, tmp_path: Path) -> None:
    await create(stub, journal_spec("g/journal", refresh_s=1.0))
    await append(stub, "g/journal", b"abc")
    # Another writer persisted [3, 10) to the store (e.g. a primary that has
    # since died): the index now extends past this broker's spool.
    content = b"1234567"
    name = f"{3:016x}-{10:016x}-{hashlib.sha1(content).hexdigest()}.raw"
    (tmp_path / "g" / "journal").mkdir(parents=True, exist_ok=True)
    (tmp_path / "g" / "journal" / name).write_bytes(content)
    for _ in range(100):  # until the next store listing picks the file up
        frags = await stub.ListFragments(pb.FragmentsRequest(journal="g/journal"))
        if frags.fragments and frags.fragments[-1].spec.end == 10:
            break
        await asyncio.sleep(0.05)
    resp = await append(stub, "g/journal", b"x")
    assert resp.status == pb.INDEX_HAS_GREATER_OFFSET
    reset = await append(stub, "g/journal", offset=10)  # what `journals reset-head` sends
    assert (reset.status, reset.commit.begin, reset.commit.end) == (pb.OK, 10, 10)
    after = await append(stub, "g/journal", b"tail")
    assert (after.status, after.commit.begin) == (pb.OK, 10)
    body = b"".join(r.content for r in await read_all(stub, pb.ReadRequest(journal="g/journal")))
    assert body == b"abc1234567tail"
