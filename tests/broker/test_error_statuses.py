"""Failures reach clients of a real broker as proper gRPC statuses with one-line messages.

Bad client input costs at most a warning line in the log, never a traceback;
an unexpected failure is INTERNAL for the client and one traceback in the log.
"""

from __future__ import annotations

import asyncio
import errno
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, NoReturn

import grpc
import pytest

from gazette_core.broker import metrics, servicer
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.service import Broker
from gazette_core.testing.broker import broker_config, journal_spec, journal_stub, running_broker
from tests.broker.cluster import Cluster, settled_route
from tests.broker.statuses_support import PausableEtcd, assert_clean, rpc_error, tracebacks
from tests.broker.support import append, create


def upserts(*names: str) -> pb.ApplyRequest:
    return pb.ApplyRequest(changes=[pb.ApplyRequest.Change(upsert=journal_spec(n))
                                    for n in names])


def raw(data: bytes) -> bytes:
    return data


def raw_channel(broker: Broker) -> grpc.aio.Channel:
    return grpc.aio.insecure_channel(broker.endpoint.split("://", 1)[-1])


async def test_apply_listing_a_journal_twice_names_it(
        broker: Broker, stub: pb_grpc.JournalStub, caplog: pytest.LogCaptureFixture) -> None:
    err = await rpc_error(stub.Apply(upserts("a/one", "a/two", "a/one")))
    assert_clean(err, grpc.StatusCode.UNKNOWN,
                 'changes[2].upsert.name: journal "a/one" is already changed by changes[0]')
    deleted_twice = pb.ApplyRequest(changes=[
        pb.ApplyRequest.Change(upsert=journal_spec("a/one")),
        pb.ApplyRequest.Change(delete="a/one", expect_mod_revision=-1)])
    err = await rpc_error(stub.Apply(deleted_twice))
    assert_clean(err, grpc.StatusCode.UNKNOWN,
                 'changes[1].delete: journal "a/one" is already changed by changes[0]')
    assert tracebacks(caplog) == []


async def test_apply_beyond_the_etcd_transaction_limit_is_invalid_argument(
        broker: Broker, stub: pb_grpc.JournalStub, caplog: pytest.LogCaptureFixture) -> None:
    err = await rpc_error(stub.Apply(upserts(*(f"m/j{i:03d}" for i in range(130)))))
    assert_clean(err, grpc.StatusCode.INVALID_ARGUMENT,
                 "Etcd refused the Apply of 130 changes: etcdserver: too many operations "
                 "in txn request (split it into smaller Applies, e.g. with gazctl's "
                 "--max-txn-size)")
    assert tracebacks(caplog) == []


async def test_apply_while_etcd_is_down_is_unavailable(tmp_path: Path) -> None:
    etcd = PausableEtcd(tmp_path / "etcd")
    await etcd.start()
    try:
        config = broker_config(etcd.endpoint, str(tmp_path / "store"))
        async with running_broker(config, drain_timeout=0.5) as broker, \
                journal_stub(broker.endpoint) as stub:
            await etcd.kill()
            err = await rpc_error(stub.Apply(upserts("e/journal")))
            await etcd.start()  # well within the broker's lease
    finally:
        await etcd.kill()
    details = err.details() or ""
    assert err.code() == grpc.StatusCode.UNAVAILABLE, details
    assert details.startswith("etcd is unavailable: "), details
    assert_clean(err, grpc.StatusCode.UNAVAILABLE, details)


async def test_undecodable_requests_are_invalid_argument_without_traceback(
        broker: Broker, stub: pb_grpc.JournalStub, caplog: pytest.LogCaptureFixture) -> None:
    await create(stub, journal_spec("a/journal"))

    async with raw_channel(broker) as channel:
        apply = channel.unary_unary("/protocol.Journal/Apply", request_serializer=raw,
                                    response_deserializer=raw)
        err = await rpc_error(apply(b"\xff\xff\xff"))
        assert_clean(err, grpc.StatusCode.INVALID_ARGUMENT,
                     "undecodable request message for /protocol.Journal/Apply")
        append_ = channel.stream_unary("/protocol.Journal/Append", request_serializer=raw,
                                       response_deserializer=raw)
        first = pb.AppendRequest(journal="a/journal").SerializeToString()
        err = await rpc_error(append_(iter([first, b"\x0a\xff"])))
        assert_clean(err, grpc.StatusCode.INVALID_ARGUMENT,
                     "undecodable request message for /protocol.Journal/Append")
    assert tracebacks(caplog) == []
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) <= 2, [r.getMessage() for r in warnings]


async def test_an_undecodable_message_through_a_proxy_is_refused_at_once(
        cluster: Cluster, caplog: pytest.LogCaptureFixture) -> None:
    await create(cluster.stubs[0], journal_spec("p/journal"))
    route = await settled_route(cluster, "p/journal", 1)
    proxy = next(b for b in cluster.brokers if b.process_id != route.members[0])
    async with raw_channel(proxy) as channel:
        append_ = channel.stream_unary("/protocol.Journal/Append", request_serializer=raw,
                                       response_deserializer=raw)
        first = pb.AppendRequest(journal="p/journal").SerializeToString()
        async with asyncio.timeout(10):  # it used to hang until the client gave up
            err = await rpc_error(append_(iter([first, b"\x0a\xff"])))
    assert_clean(err, grpc.StatusCode.INVALID_ARGUMENT,
                 "undecodable request message for /protocol.Journal/Append")
    assert tracebacks(caplog) == []


async def test_a_client_that_goes_away_mid_append_costs_no_traceback(
        broker: Broker, stub: pb_grpc.JournalStub, caplog: pytest.LogCaptureFixture) -> None:
    await create(stub, journal_spec("a/journal"))
    failed = ("Append", metrics.RPC_ERROR)
    before = metrics.JOURNAL_SERVER_COMPLETED.cell(*failed).value
    call = stub.Append()
    await call.write(pb.AppendRequest(journal="a/journal"))
    await call.write(pb.AppendRequest(content=b"partial"))
    call.cancel()
    async with asyncio.timeout(10):  # until the broker's handler has ended
        while metrics.JOURNAL_SERVER_COMPLETED.cell(*failed).value == before:
            await asyncio.sleep(0.01)
    assert tracebacks(caplog) == []


async def test_unexpected_failure_is_internal_and_logged_once(
        broker: Broker, stub: pb_grpc.JournalStub, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken(*_: Any) -> NoReturn:
        raise KeyError("internal detail")

    monkeypatch.setattr(servicer, "serve_list_fragments", broken)
    err = await rpc_error(stub.ListFragments(pb.FragmentsRequest(journal="a/journal")))
    assert_clean(err, grpc.StatusCode.INTERNAL,
                 "internal error serving /protocol.Journal/ListFragments (see the broker log)")
    assert len(tracebacks(caplog)) == 1


async def test_full_disk_is_resource_exhausted(
        broker: Broker, stub: pb_grpc.JournalStub, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    async def disk_full(_: Broker, requests: AsyncIterator[pb.AppendRequest]) -> NoReturn:
        await anext(requests)
        raise OSError(errno.ENOSPC, "No space left on device", "/var/spool/gazette")

    monkeypatch.setattr(servicer, "serve_append", disk_full)
    err = await rpc_error(append(stub, "a/journal", b"x"))
    assert_clean(err, grpc.StatusCode.RESOURCE_EXHAUSTED,
                 "No space left on device: /var/spool/gazette")
    assert tracebacks(caplog) == []


async def test_a_proxied_protocol_error_keeps_its_code(cluster: Cluster) -> None:
    await create(cluster.stubs[0], journal_spec("p/journal"))
    route = await settled_route(cluster, "p/journal", 1)
    proxy = next(s for b, s in zip(cluster.brokers, cluster.stubs, strict=True)
                 if b.process_id != route.members[0])
    msgs = [pb.AppendRequest(journal="p/journal"), pb.AppendRequest(content=b"x"),
            pb.AppendRequest(), pb.AppendRequest(content=b"y")]
    err = await rpc_error(proxy.Append(iter(msgs)))
    assert_clean(err, grpc.StatusCode.UNKNOWN,
                 "append stream: expected EOF after empty Content chunk")


async def test_a_failed_replica_is_described_without_python_internals(cluster: Cluster) -> None:
    await create(cluster.stubs[0], journal_spec("p/journal", replication=2))
    route = await settled_route(cluster, "p/journal", 2)
    primary = cluster.stub_of(route.members[route.primary])
    assert (await append(primary, "p/journal", b"synced")).status == pb.OK
    replica = next(b for b in cluster.brokers
                   if b.process_id == route.members[1 - route.primary])
    await replica.server.stop(0)  # its Replicate streams end; the route stays
    err = await rpc_error(append(primary, "p/journal", b"lost"))
    details = err.details() or ""
    assert details.startswith("replication pipeline of p/journal: "), details
    assert_clean(err, grpc.StatusCode.UNAVAILABLE, details)
