"""etcd_util: raw txn/range responses keep their headers; op and compare builders."""

from __future__ import annotations

import asyncio
import os
import signal

import aetcd
import pytest
from aetcd import rpc

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.keyspace import etcd_util as eu
from gazette_core.keyspace.keyspace import connect_loaded
from gazette_core.testing.etcd import EtcdServer


def test_prefix_range_end() -> None:
    assert eu.prefix_range_end(b"/root/") == b"/root0"
    assert eu.prefix_range_end(b"a\xff\xff") == b"b"
    assert eu.prefix_range_end(b"\xff") == b"\0"
    assert eu.prefix_range_end(b"") == b"\0"


def test_header_of_copies_every_field() -> None:
    hdr = rpc.ResponseHeader(cluster_id=1, member_id=2, revision=3, raft_term=4)
    assert eu.header_of(hdr) == pb.Header.Etcd(cluster_id=1, member_id=2, revision=3, raft_term=4)


def test_builders() -> None:
    assert eu.put_op("k", b"v", lease=7) == rpc.RequestOp(
        request_put=rpc.PutRequest(key=b"k", value=b"v", lease=7)
    )
    assert eu.delete_op("k") == rpc.RequestOp(
        request_delete_range=rpc.DeleteRangeRequest(key=b"k")
    )
    assert eu.get_op("k") == rpc.RequestOp(request_range=rpc.RangeRequest(key=b"k"))
    assert eu.cmp_mod_revision("k", 5) == rpc.Compare(
        key=b"k", result=rpc.Compare.EQUAL, target=rpc.Compare.MOD, mod_revision=5
    )
    assert eu.cmp_create_revision("k", 0) == rpc.Compare(
        key=b"k", result=rpc.Compare.EQUAL, target=rpc.Compare.CREATE, create_revision=0
    )
    assert eu.cmp_version("k", 2) == rpc.Compare(
        key=b"k", result=rpc.Compare.EQUAL, target=rpc.Compare.VERSION, version=2
    )


async def test_connect_rejects_other_schemes() -> None:
    with pytest.raises(ValueError) as err:
        await eu.connect("unix://127.0.0.1:1")
    assert str(err.value) == (
        "unsupported etcd endpoint 'unix://127.0.0.1:1' (want http://host:port or "
        "https://host:port)"
    )


async def test_txn_and_get_prefix_return_headers(etcd: aetcd.Client) -> None:
    resp = await eu.txn(
        etcd, [eu.cmp_version("/r/a", 0)], [eu.put_op("/r/a", b"1"), eu.put_op("/r/b", b"2")]
    )
    assert resp.succeeded
    hdr = eu.header_of(resp.header)
    assert hdr.cluster_id and hdr.member_id and hdr.revision and hdr.raft_term
    await etcd.put(b"/other", b"x")

    failed = await eu.txn(etcd, [eu.cmp_version("/r/a", 0)], [], [eu.get_op("/r/a")])
    assert not failed.succeeded
    assert [kv.value for kv in failed.responses[0].response_range.kvs] == [b"1"]

    got = await eu.get_prefix(etcd, "/r/")
    assert [(kv.key, kv.value) for kv in got.kvs] == [(b"/r/a", b"1"), (b"/r/b", b"2")]
    assert got.header.revision == resp.header.revision + 1
    assert got.header.cluster_id == resp.header.cluster_id


async def test_a_prefix_larger_than_grpcs_default_message_limit_is_read(
        etcd: aetcd.Client) -> None:
    # Six values of 1 MiB each (within etcd's request limit) make a Range answer of
    # over 6 MiB, past gRPC's default 4 MiB for a received message.
    value = b"x" * (1 << 20)
    for i in range(6):
        await etcd.put(f"/big/{i}".encode(), value)
    got = await eu.get_prefix(etcd, "/big/")
    assert [kv.key for kv in got.kvs] == [f"/big/{i}".encode() for i in range(6)]
    assert all(kv.value == value for kv in got.kvs)


async def test_an_etcd_slow_to_answer_a_new_connection_is_waited_for() -> None:
    """A loaded etcd may take more than a moment to answer a connection's handshake (here it is
    stopped for 1.5 s while a process connects): the connection waits for it, as the calls on it
    do, rather than each attempt giving up after a fraction of a second."""
    with EtcdServer() as etcd:
        pid = etcd.pid
        os.kill(pid, signal.SIGSTOP)
        try:
            connecting = asyncio.ensure_future(
                connect_loaded(etcd.endpoint, "/slow", lambda kv: None, timeout=10))
            await asyncio.sleep(1.5)
            assert not connecting.done()
        finally:
            os.kill(pid, signal.SIGCONT)
        client, keyspace = await connecting
        await client.close()
    assert keyspace.revision > 0
