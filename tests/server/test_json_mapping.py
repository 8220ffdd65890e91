"""The gateway's JSON of messages (Go's gogo jsonpb shape) and its reading of request bodies."""

from __future__ import annotations

import pytest
from google.protobuf import symbol_database

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.server.json_input import JsonInputError, parse
from gazette_core.server.json_mapping import NON_NULLABLE, dumps, to_json


def test_every_non_nullable_name_is_a_singular_message_field() -> None:
    pool = symbol_database.Default().pool
    for name in sorted(NON_NULLABLE):
        owner, _, field_name = name.rpartition(".")
        field = pool.FindMessageTypeByName(owner).fields_by_name[field_name]
        assert field.message_type is not None and not field.is_repeated, name


def test_unset_sub_messages_are_null_or_defaults_as_go_holds_them() -> None:
    """ReadResponse holds its header and fragment by pointer; a Fragment its sum by value."""
    assert to_json(pb.ReadResponse(offset=7)) == {
        "status": "OK", "header": None, "offset": "7", "writeHead": "0", "fragment": None,
        "fragmentUrl": "", "content": None}
    assert to_json(pb.Fragment(journal="a/journal"))["sum"] == {
        "part1": "0", "part2": "0", "part3": 0}


def test_maps_are_sorted_and_64_bit_integers_are_strings() -> None:
    stat = cpb.StatResponse(status=cpb.SHARD_STOPPED, read_through={"b/j": 2, "a/j": 1 << 62})
    assert dumps(to_json(stat)).startswith(
        b'{"status":"SHARD_STOPPED","header":{"processId":{"zone":"","suffix":""},')
    assert list(to_json(stat)["readThrough"].items()) == [("a/j", str(1 << 62)), ("b/j", "2")]


def test_bytes_are_base64_and_unknown_enum_numbers_stay_numbers() -> None:
    resp = pb.ReadResponse(content=b"\xff\x00<>", status=99)  # type: ignore[arg-type]
    assert (to_json(resp)["content"], to_json(resp)["status"]) == ("/wA8Pg==", 99)


def test_dumps_escapes_as_go_does() -> None:
    assert dumps({"s": "<a & b>\u2028é\n"}) == \
        b'{"s":"\\u003ca \\u0026 b\\u003e\\u2028\xc3\xa9\\n"}'


def test_requests_read_both_names_numbers_strings_and_enum_names() -> None:
    request = pb.ReadRequest()
    parse(b' {"journal": "a/j", "end_offset": 9, "endOffset": "10", "doNotProxy": true,'
          b' "header": {"etcd": {"revision": "4"}}, "offset": null} trailing', request)
    assert request == pb.ReadRequest(journal="a/j", end_offset=10, do_not_proxy=True,
                                     header=pb.Header(etcd=pb.Header.Etcd(revision=4)))
    change = cpb.ApplyRequest()
    parse(b'{"changes": [{"upsert": {"id": "s", "maxTxnDuration": "1.5s",'
          b' "labels": {"labels": [{"name": "n"}]}}}]}', change)
    spec = change.changes[0].upsert
    assert (spec.max_txn_duration.seconds, spec.max_txn_duration.nanos) == (1, 500_000_000)
    list_request = pb.ListRequest()
    parse(b"", list_request)
    assert list_request == pb.ListRequest()


@pytest.mark.parametrize("body, message", [
    (b"\xff", "the request body is not UTF-8 text"),
    (b"NaN", "invalid JSON: NaN is not JSON"),
    (b"[" * 100_000, "invalid JSON: nested too deeply"),
    (b'{"journal": 5}', 'field "journal" of protocol.ReadRequest must be a string, not 5'),
    (b'{"offset": 1.0}', 'field "offset" of protocol.ReadRequest must be an integer, not 1.0'),
    (b'{"offset": "0012"}', 'field "offset" of protocol.ReadRequest must be an integer, '
                            'not "0012"'),
    (b'{"header": {"route": {"primary": 2147483648}}}',
     'field "primary" of protocol.Route must be a 32-bit integer, not 2147483648'),
    (b'{"header": {"etcd": {"clusterId": "-1"}}}',
     'field "clusterId" of protocol.Header.Etcd must be a 64-bit unsigned integer, '
     'not "-1"'),
    (b'{"header": {"processId": []}}',
     'protocol.ProcessSpec.ID must be a JSON object, not []'),
    (b'{"header": {"route": {"endpoints": "x"}}}',
     'field "endpoints" of protocol.Route must be a JSON array, not "x"'),
])
def test_bad_requests_are_one_line_naming_the_field(body: bytes, message: str) -> None:
    with pytest.raises(JsonInputError) as info:
        parse(body, pb.ReadRequest())
    assert str(info.value) == message


def test_bad_enums_bytes_and_map_values_are_named() -> None:
    with pytest.raises(JsonInputError) as info:
        parse(b'{"changes": [{"upsert": {"fragment": {"compressionCodec": "LZ4"}}}]}',
              pb.ApplyRequest())
    assert str(info.value) == ('field "compressionCodec" of protocol.JournalSpec.Fragment '
                               'must be a value of protocol.CompressionCodec, not "LZ4"')
    with pytest.raises(JsonInputError) as info:
        parse(b'{"extension": "not base64!"}', cpb.ListRequest())
    assert str(info.value) == ('field "extension" of consumer.ListRequest must be base64, '
                               'not "not base64!"')
    with pytest.raises(JsonInputError) as info:
        parse(b'{"readThrough": {"a/j": "x"}}', cpb.StatRequest())
    assert str(info.value) == ('field "readThrough" of consumer.StatRequest must be an '
                               'integer, not "x"')
