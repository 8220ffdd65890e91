"""`list -o json`'s form: Go's jsonpb with proto field names, every field, in declaration order."""

from __future__ import annotations

import json

import pytest
from google.protobuf import json_format

from gazctl.render import go_json_object, go_list_json
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


def test_unset_sub_messages_are_written_with_their_defaults_under_proto_names() -> None:
    doc = go_list_json(_listing())

    assert doc["header"] == {
        "process_id": {"zone": "", "suffix": ""},
        "route": {"members": [], "primary": 0, "endpoints": []},
        "etcd": {"cluster_id": "0", "member_id": "0", "revision": "0", "raft_term": "0"}}
    fragment = doc["journals"][0]["spec"]["fragment"]
    assert (fragment["refresh_interval"], fragment["retention"],
            fragment["flush_interval"]) == ("60s", "0s", "1.500s")
    assert doc["journals"][0]["spec"]["labels"] == {"labels": []}


def test_fields_come_in_declaration_order_with_int64_as_strings() -> None:
    doc = go_list_json(_listing())

    assert list(doc) == ["status", "header", "journals"]
    assert list(doc["journals"][0]) == ["spec", "mod_revision", "route", "create_revision"]
    assert (doc["journals"][0]["mod_revision"], doc["status"]) == ("7", "OK")
    assert list(doc["journals"][0]["spec"]) == [
        "name", "replication", "labels", "fragment", "flags", "max_append_rate", "suspend"]


def test_a_pointer_field_and_empty_bytes_are_null() -> None:
    suspended = _listing()
    suspended.journals[0].spec.suspend.level = pb.JournalSpec.Suspend.FULL

    assert go_list_json(_listing())["journals"][0]["spec"]["suspend"] is None
    assert go_list_json(suspended)["journals"][0]["spec"]["suspend"] == {"level": "FULL",
                                                                         "offset": "0"}
    assert go_list_json(cpb.ListResponse())["extension"] is None
    assert go_list_json(cpb.ListResponse(extension=b"\x01"))["extension"] == "AQ=="
    shard = go_list_json(cpb.ListResponse(shards=[cpb.ListResponse.Shard()]))["shards"][0]
    assert list(shard) == ["spec", "mod_revision", "route", "status", "create_revision"]
    assert shard["spec"]["max_txn_duration"] == "0s"


def test_the_object_is_one_compact_line_that_parses_back(
        capsys: pytest.CaptureFixture[str]) -> None:
    go_json_object(go_list_json(_listing()))
    text = capsys.readouterr().out

    assert text.endswith("}\n") and text.count("\n") == 1
    assert ", " not in text and '": ' not in text
    parsed = json_format.Parse(text, pb.ListResponse())
    assert go_list_json(parsed) == json.loads(text)
    assert json.loads(text)["journals"][0]["spec"]["name"] == "acme/clicks"
