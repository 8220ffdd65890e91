"""Append RPC: commits, statuses, registers and stream-protocol errors on a real broker."""

from __future__ import annotations

import hashlib

import grpc
import pytest

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.protocol.fragment_ext import sha1_to_sum
from gazette_core.broker.protocol.validate_ext import validate_append_response
from gazette_core.broker.service import Broker
from gazette_core.testing.broker import journal_spec
from tests.broker.support import append, create, read_all


def expected_header(broker: Broker, etcd: pb.Header.Etcd) -> pb.Header:
    """The header of a primary-resolved response: we are the only member and primary."""
    return pb.Header(
        process_id=broker.process_id,
        route=pb.Route(members=[broker.process_id], primary=0, endpoints=[broker.endpoint]),
        etcd=etcd)


def labels(*pairs: tuple[str, str]) -> pb.LabelSet:
    return pb.LabelSet(labels=[pb.Label(name=n, value=v) for n, v in pairs])


async def test_append_commits_span_with_sum_of_its_own_bytes(broker: Broker,
                                                             stub: pb_grpc.JournalStub) -> None:
    await create(stub, journal_spec("a/journal"))
    first = await append(stub, "a/journal", b"hello, ", b"world\n")
    second = await append(stub, "a/journal", b"again\n")

    assert first == pb.AppendResponse(
        status=pb.OK, header=expected_header(broker, first.header.etcd),
        commit=pb.Fragment(journal="a/journal", begin=0, end=13, compression_codec=pb.NONE,
                           sum=sha1_to_sum(hashlib.sha1(b"hello, world\n").digest())),
        registers=pb.LabelSet(), total_chunks=2)
    assert second.commit == pb.Fragment(
        journal="a/journal", begin=13, end=19, compression_codec=pb.NONE,
        sum=sha1_to_sum(hashlib.sha1(b"again\n").digest()))
    validate_append_response(first)
    validate_append_response(second)
    assert first.header.etcd.cluster_id and first.header.etcd.member_id
    assert first.header.etcd.revision > 0 and first.header.etcd.raft_term


async def test_empty_append_commits_nothing_with_sha1_of_empty(broker: Broker,
                                                              stub: pb_grpc.JournalStub) -> None:
    await create(stub, journal_spec("a/journal"))
    resp = await append(stub, "a/journal")
    assert resp.commit == pb.Fragment(journal="a/journal", begin=0, end=0,
                                      compression_codec=pb.NONE,
                                      sum=sha1_to_sum(hashlib.sha1(b"").digest()))


async def test_unknown_journal_is_not_found(broker: Broker, stub: pb_grpc.JournalStub) -> None:
    resp = await append(stub, "no/such/journal", b"data")
    assert resp == pb.AppendResponse(
        status=pb.JOURNAL_NOT_FOUND,
        header=pb.Header(process_id=broker.process_id, route=pb.Route(primary=-1),
                         etcd=resp.header.etcd))


async def test_explicit_offset_must_equal_write_head(broker: Broker,
                                                     stub: pb_grpc.JournalStub) -> None:
    await create(stub, journal_spec("a/journal"))
    await append(stub, "a/journal", b"12345")
    wrong = await append(stub, "a/journal", b"x", offset=3)
    assert wrong == pb.AppendResponse(status=pb.WRONG_APPEND_OFFSET,
                                      header=expected_header(broker, wrong.header.etcd))
    right = await append(stub, "a/journal", b"678", offset=5)
    assert (right.status, right.commit.begin, right.commit.end) == (pb.OK, 5, 8)


async def test_registers_union_subtract_and_check(broker: Broker,
                                                  stub: pb_grpc.JournalStub) -> None:
    await create(stub, journal_spec("a/journal"))
    r1 = await append(stub, "a/journal", b"x", union_registers=labels(("owner", "a")))
    assert r1.registers == labels(("owner", "a"))
    check_b = pb.LabelSelector(include=labels(("owner", "b")))
    mismatch = await append(stub, "a/journal", b"y", check_registers=check_b)
    assert mismatch == pb.AppendResponse(status=pb.REGISTER_MISMATCH,
                                         header=expected_header(broker, mismatch.header.etcd),
                                         registers=labels(("owner", "a")))
    check_a = pb.LabelSelector(include=labels(("owner", "a")))
    r2 = await append(stub, "a/journal", b"z", check_registers=check_a,
                      subtract_registers=labels(("owner", "a")),
                      union_registers=labels(("owner", "b")))
    assert (r2.status, r2.registers) == (pb.OK, labels(("owner", "b")))
    content = b"".join(r.content for r in await read_all(
        stub, pb.ReadRequest(journal="a/journal")))
    assert content == b"xz"  # the refused append left nothing behind


async def test_register_change_needs_content(broker: Broker, stub: pb_grpc.JournalStub) -> None:
    await create(stub, journal_spec("a/journal"))
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await append(stub, "a/journal", union_registers=labels(("owner", "a")))
    assert err.value.code() == grpc.StatusCode.UNKNOWN
    assert err.value.details() == "append stream: register modification requires non-empty Append"


async def test_read_only_journal_refuses_content(broker: Broker,
                                                 stub: pb_grpc.JournalStub) -> None:
    spec = journal_spec("a/journal")
    spec.flags = pb.JournalSpec.O_RDONLY
    await create(stub, spec)
    resp = await append(stub, "a/journal", b"data")
    assert resp == pb.AppendResponse(status=pb.NOT_ALLOWED,
                                     header=expected_header(broker, resp.header.etcd))


async def test_eof_without_commit_message_rolls_back(broker: Broker,
                                                     stub: pb_grpc.JournalStub) -> None:
    await create(stub, journal_spec("a/journal"))
    await append(stub, "a/journal", b"kept\n")
    msgs = [pb.AppendRequest(journal="a/journal"), pb.AppendRequest(content=b"lost\n")]
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.Append(iter(msgs))
    assert (err.value.code(), err.value.details()) == (grpc.StatusCode.UNKNOWN,
                                                       "append stream: unexpected EOF")
    after = await append(stub, "a/journal", b"next\n")
    assert (after.commit.begin, after.commit.end) == (5, 10)
    content = b"".join(r.content for r in await read_all(
        stub, pb.ReadRequest(journal="a/journal")))
    assert content == b"kept\nnext\n"


async def test_client_disconnect_mid_append_leaves_nothing_visible(
        broker: Broker, stub: pb_grpc.JournalStub) -> None:
    await create(stub, journal_spec("a/journal"))
    call = stub.Append()
    await call.write(pb.AppendRequest(journal="a/journal"))
    await call.write(pb.AppendRequest(content=b"partial"))
    call.cancel()
    after = await append(stub, "a/journal", b"whole")
    assert (after.commit.begin, after.commit.end) == (0, 5)


async def test_content_in_first_message_is_a_validation_error(
        broker: Broker, stub: pb_grpc.JournalStub) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.Append(iter([pb.AppendRequest(journal="a/journal", content=b"x")]))
    assert err.value.code() == grpc.StatusCode.UNKNOWN
    assert "content" in err.value.details().lower()


async def test_message_after_commit_intent_is_an_error(broker: Broker,
                                                       stub: pb_grpc.JournalStub) -> None:
    await create(stub, journal_spec("a/journal"))
    msgs = [pb.AppendRequest(journal="a/journal"), pb.AppendRequest(content=b"x"),
            pb.AppendRequest(), pb.AppendRequest(content=b"y")]
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.Append(iter(msgs))
    assert err.value.details() == "append stream: expected EOF after empty Content chunk"


async def test_stalled_client_is_aborted_and_rolled_back(broker: Broker,
                                                         stub: pb_grpc.JournalStub) -> None:
    await create(stub, journal_spec("a/journal"))
    call = stub.Append()
    await call.write(pb.AppendRequest(journal="a/journal"))
    await call.write(pb.AppendRequest(content=b"stalled"))
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await call  # the client sends nothing more
    assert err.value.details() == (
        "append stream: client stream didn't sustain the minimum append data rate")
    after = await append(stub, "a/journal", b"next")
    assert (after.commit.begin, after.commit.end) == (0, 4)


async def test_append_retrying_waits_out_a_missing_primary(broker: Broker,
                                                           stub: pb_grpc.JournalStub) -> None:
    from gazette_core.broker.client.appender import append_retrying
    # Apply without waiting for the allocator: the first attempts may find no primary.
    await stub.Apply(pb.ApplyRequest(changes=[pb.ApplyRequest.Change(
        upsert=journal_spec("a/journal"))]))
    resp = await append_retrying(stub, "a/journal", b"data")
    assert (resp.status, resp.commit.begin, resp.commit.end) == (pb.OK, 0, 4)
