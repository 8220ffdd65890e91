"""Clients built from Gazette's consumer protos reach the Shard service.

Two clients: the raw ShardStub generated from `consumer.proto` (package
`consumer`, Gazette's field numbers), and one that knows nothing of our
modules, writing and reading protobuf wire bytes by the field numbers of the
tables in docs/design/protocol.md, as a client generated from Gazette's own
protos would.
"""

from __future__ import annotations

import aetcd
import grpc
import pytest

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.labels_ext import label_set
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.protocol import consumer_pb2_grpc as cpb_grpc
from tests.consumer.api.host import put_assignment, serving, synced
from tests.consumer.api.specs import shard

RS = cpb.ReplicaStatus
Fields = dict[int, list[int | bytes]]


def test_service_and_package_names() -> None:
    service = cpb.DESCRIPTOR.services_by_name["Shard"]
    assert service.full_name == "consumer.Shard"
    assert [m.name for m in service.methods] == ["Stat", "List", "Apply", "GetHints",
                                                  "Unassign"]
    spec = cpb.ShardSpec.DESCRIPTOR
    assert {f.name: f.number for f in spec.fields} == {
        "id": 1, "sources": 2, "recovery_log_prefix": 3, "hint_prefix": 4, "hint_backups": 5,
        "max_txn_duration": 6, "min_txn_duration": 7, "disable": 8, "hot_standbys": 9,
        "labels": 10, "disable_wait_for_ack": 11, "ring_buffer_size": 12,
        "read_channel_size": 13}
    assert spec.fields_by_name["labels"].message_type.full_name == "protocol.LabelSet"


async def test_generated_stub_lists_applies_and_stats(etcd: aetcd.Client) -> None:
    async with serving(etcd, ["cons-a"]) as (a,):
        channel = grpc.aio.insecure_channel(a.endpoint.split("://")[1])
        try:
            stub = cpb_grpc.ShardStub(channel)
            spec = shard("shard-one", log_prefix="", hint_prefix="", labels=(("app", "x"),))
            change = cpb.ApplyRequest.Change(upsert=spec)
            applied = await stub.Apply(cpb.ApplyRequest(changes=[change]))
            assert applied.status == cpb.OK
            await put_assignment(etcd, "shard-one", "cons-a", 0, RS(code=RS.PRIMARY))
            await synced([a], etcd)
            listed = await stub.List(cpb.ListRequest(selector=pb.LabelSelector(
                include=label_set(("app", "x")))))
            assert [(s.spec, s.route.primary) for s in listed.shards] == [(spec, 0)]
            a.host.resolve("shard-one", proxied_header=None)
            a.host.replicas["shard-one"].advance(a__source=11)
            stat = await stub.Stat(cpb.StatRequest(shard="shard-one"))
            assert (stat.status, dict(stat.read_through)) == (cpb.OK, {"a/source": 11})
        finally:
            await channel.close()


# Protobuf wire format, by hand: varints (type 0) and length-delimited fields (type 2).

def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _int(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def _bytes(number: int, value: bytes | str) -> bytes:
    data = value.encode() if isinstance(value, str) else value
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if not byte & 0x80:
            return value, pos


def _parse(data: bytes) -> Fields:
    fields: Fields = {}
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        if key & 7 == 0:
            value, pos = _read_varint(data, pos)
            fields.setdefault(key >> 3, []).append(value)
        else:
            assert key & 7 == 2, f"unexpected wire type {key & 7}"
            size, pos = _read_varint(data, pos)
            fields.setdefault(key >> 3, []).append(data[pos:pos + size])
            pos += size
    return fields


def _call(channel: grpc.aio.Channel, method: str) -> grpc.aio.UnaryUnaryMultiCallable:
    return channel.unary_unary(f"/consumer.Shard/{method}", request_serializer=None,
                               response_deserializer=None)


async def test_wire_client_by_gazette_field_numbers(etcd: aetcd.Client) -> None:
    async with serving(etcd, ["cons-a"]) as (a,):
        channel = grpc.aio.insecure_channel(a.endpoint.split("://")[1])
        try:
            # ShardSpec: id=1, sources=2 {journal=1, min_offset=3}, max_txn_duration=6
            # {seconds=1}, hot_standbys=9, labels=10 {labels=1 {name=1, value=2}}.
            spec = (_bytes(1, "wire-shard") + _bytes(2, _bytes(1, "in/journal") + _int(3, 5))
                    + _bytes(6, _int(1, 2)) + _int(9, 1)
                    + _bytes(10, _bytes(1, _bytes(1, "app") + _bytes(2, "wire"))))
            # ApplyRequest: changes=1 {expect_mod_revision=1, upsert=2}.
            applied = _parse(await _call(channel, "Apply")(_bytes(1, _int(1, 0) + _bytes(2, spec))))
            assert applied.get(1, [0]) == [0]  # status OK (the default, so absent)
            header = _parse(applied[2][0])  # Header: process_id=1 {zone=1, suffix=2}
            assert _parse(header[1][0]) == {1: [b"zone"], 2: [b"cons-a"]}

            await put_assignment(etcd, "wire-shard", "cons-a", 0, RS(code=RS.PRIMARY))
            await synced([a], etcd)
            # ListRequest: selector=1 {include=1 {labels=1 {name=1 "id", value=2}}}.
            selector = _bytes(1, _bytes(1, _bytes(1, "id") + _bytes(2, "wire-shard")))
            listed = _parse(await _call(channel, "List")(_bytes(1, selector)))
            (listed_shard,) = (_parse(s) for s in listed[3])  # type: ignore[arg-type]
            assert listed_shard[1] == [spec]  # the spec comes back byte for byte
            assert listed_shard[2][0] == listed_shard[5][0] > 0  # mod and create revisions
            route = _parse(listed_shard[3][0])  # Route: members=1, primary=2, endpoints=3
            assert (route.get(2, [0]), route[3]) == ([0], [a.endpoint.encode()])
            assert _parse(listed_shard[4][0]) == {1: [300]}  # ReplicaStatus code PRIMARY

            a.host.resolve("wire-shard", proxied_header=None)
            a.host.replicas["wire-shard"].advance(in__journal=40)
            # StatRequest: shard=2, read_through=3 {key=1, value=2}.
            request = _bytes(2, "wire-shard") + _bytes(3, _bytes(1, "in/journal") + _int(2, 30))
            stat = _parse(await _call(channel, "Stat")(request))
            assert stat.get(1, [0]) == [0]
            assert [_parse(e) for e in stat[3]] == [{1: [b"in/journal"], 2: [40]}]  # type: ignore[arg-type]
        finally:
            await channel.close()


async def test_undecodable_request_is_invalid_argument(etcd: aetcd.Client) -> None:
    async with serving(etcd, ["cons-a"]) as (a,):
        channel = grpc.aio.insecure_channel(a.endpoint.split("://")[1])
        try:
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await _call(channel, "List")(b"\xff\xff\xff")
            assert (info.value.code(), info.value.details()) == (
                grpc.StatusCode.INVALID_ARGUMENT,
                "undecodable request message for /consumer.Shard/List")
        finally:
            await channel.close()
