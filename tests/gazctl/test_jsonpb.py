"""Go's JSON of a message (gazctl.jsonpb): every field, in declaration order, as Go writes it."""

from __future__ import annotations

import json

from google.protobuf import json_format

from gazctl.jsonpb import NULLABLE, go_json, go_value
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.consumer.protocol import consumer_pb2 as cpb


def _listing() -> pb.ListResponse:
    resp = pb.ListResponse()
    journal = resp.journals.add(mod_revision=7, create_revision=5)
    journal.spec.name = "acme/clicks"
    journal.spec.fragment.refresh_interval.seconds = 60
    journal.spec.fragment.flush_interval.FromMilliseconds(1500)
    journal.route.primary = -1
    return resp


def test_unset_sub_messages_are_written_with_their_defaults() -> None:
    doc = go_value(_listing())

    assert doc["header"] == {
        "process_id": {"zone": "", "suffix": ""},
        "route": {"members": [], "primary": 0, "endpoints": []},
        "etcd": {"cluster_id": "0", "member_id": "0", "revision": "0", "raft_term": "0"}}
    fragment = doc["journals"][0]["spec"]["fragment"]
    assert (fragment["refresh_interval"], fragment["retention"],
            fragment["flush_interval"]) == ("60s", "0s", "1.500s")
    assert doc["journals"][0]["spec"]["labels"] == {"labels": []}


def test_fields_come_in_declaration_order_with_int64_as_strings() -> None:
    doc = go_value(_listing())

    assert list(doc) == ["status", "header", "journals"]
    assert list(doc["journals"][0]) == ["spec", "mod_revision", "route", "create_revision"]
    assert (doc["journals"][0]["mod_revision"], doc["status"]) == ("7", "OK")
    assert list(doc["journals"][0]["spec"]) == [
        "name", "replication", "labels", "fragment", "flags", "max_append_rate", "suspend"]


def test_a_pointer_field_and_empty_bytes_are_null() -> None:
    suspended = _listing()
    suspended.journals[0].spec.suspend.level = pb.JournalSpec.Suspend.FULL

    assert go_value(_listing())["journals"][0]["spec"]["suspend"] is None
    assert go_value(suspended)["journals"][0]["spec"]["suspend"] == {"level": "FULL",
                                                                     "offset": "0"}
    assert go_value(cpb.ListResponse())["extension"] is None
    assert go_value(cpb.ListResponse(extension=b"\x01"))["extension"] == "AQ=="


def test_the_json_is_one_compact_line_that_parses_back() -> None:
    text = go_json(_listing())

    assert "\n" not in text and ", " not in text and '": ' not in text
    parsed = json_format.Parse(text, pb.ListResponse())
    assert go_json(parsed) == text
    assert json.loads(text)["journals"][0]["spec"]["name"] == "acme/clicks"


def test_every_nullable_name_is_a_field() -> None:
    for name in NULLABLE:
        message, field = name.rsplit(".", 1)
        descriptor = pb.DESCRIPTOR.message_types_by_name[message.split(".", 1)[1]]
        assert descriptor.fields_by_name[field].message_type is not None, name
