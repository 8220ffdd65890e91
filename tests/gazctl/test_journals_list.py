"""`gazctl journals list` against a real broker: table columns, YAML, JSON, selectors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from google.protobuf import json_format, text_format

from gazette_core.broker.protocol import protocol_pb2 as pb
from tests.gazctl.support import (
    isolated_env,
    journals,
    ok,
    piped_gazctl,
    stop,
    wait_primaries,
)

LONG = "list/long/" + "a-very-long-journal-name-" * 4 + "end"
TREE = f"""\
name: list/
replication: 1
labels:
  - name: app
    value: shop
fragment:
  length: 1048576
  compression_codec: GZIP
  stores:
    - file:///
  refresh_interval: 1s
children:
  - name: list/clicks/eu
    revision: 0
    labels:
      - name: topic
        value: clicks
  - name: list/clicks/us
    revision: 0
    labels:
      - name: topic
        value: clicks
  - name: {LONG}
    revision: 0
    labels:
      - name: topic
        value: long
  - name: list/orders
    revision: 0
    labels:
      - name: region
        value: eu
      - name: region
        value: us
      - name: topic
        value: orders
"""
NAMES = ["list/clicks/eu", "list/clicks/us", LONG, "list/orders"]


@pytest.fixture(scope="module", autouse=True)
def listed(address: str) -> None:
    ok("journals", "apply", "--broker.address", address, input=TREE)
    wait_primaries(address, "prefix=list/")


def _cells(stdout: str) -> list[list[str]]:
    """Table rows split into cells (cells here never contain spaces)."""
    return [line.split() for line in stdout.splitlines()]


def test_table_lists_names_under_a_header(address: str) -> None:
    result = ok("journals", "list", "-l", "prefix=list/", "--broker.address", address)

    assert _cells(result.stdout) == [["Name"], *([n] for n in NAMES)]


def test_table_optional_columns_in_gazctl_order(address: str) -> None:
    result = ok("journals", "list", "-l", "prefix=list/", "-p", "-r", "--rf", "--stores",
                "-L", "region", "-L", "topic", "--broker.address", address)

    assert _cells(result.stdout) == [
        ["Name", "RF", "Primary", "Replicas", "Stores", "region", "topic"],
        ["list/clicks/eu", "1", "broker-1", "<none>", "file:///", "<none>", "clicks"],
        ["list/clicks/us", "1", "broker-1", "<none>", "file:///", "<none>", "clicks"],
        [LONG, "1", "broker-1", "<none>", "file:///", "<none>", "long"],
        ["list/orders", "1", "broker-1", "<none>", "file:///", "eu,us", "orders"],
    ]


def test_piped_table_keeps_long_names_whole(address: str) -> None:
    result = ok("journals", "list", "-l", "topic=long", "--stores", "-L", "app",
                "--broker.address", address)

    assert len(LONG) > 80
    assert _cells(result.stdout) == [["Name", "Stores", "app"], [LONG, "file:///", "shop"]]


@pytest.mark.parametrize(("selector", "expected"), [
    ("topic=clicks", ["list/clicks/eu", "list/clicks/us"]),
    ("prefix=list/clicks/", ["list/clicks/eu", "list/clicks/us"]),
    ("name=list/orders", ["list/orders"]),
    ("region=us", ["list/orders"]),
    ("app=shop, !region, topic in (long, orders)", [LONG]),
    ("topic notin (clicks), name:prefix=list/", [LONG, "list/orders"]),
])
def test_selector_filters_rows(address: str, selector: str, expected: list[str]) -> None:
    result = ok("journals", "list", "-l", selector, "--broker.address", address)

    assert _cells(result.stdout) == [["Name"], *([n] for n in expected)]


def test_json_is_the_whole_list_response_in_one_object_as_go_prints_it(address: str) -> None:
    result = ok("journals", "list", "-l", "topic=clicks", "-o", "json",
                "--broker.address", address)

    assert result.stdout.endswith("}\n") and result.stdout.count("\n") == 1
    doc = json.loads(result.stdout)
    assert list(doc) == ["status", "header", "journals"]
    assert doc["status"] == "OK"
    assert int(doc["header"]["etcd"]["revision"]) > 0  # int64 as a string
    listed = doc["journals"]  # what `jq '.journals[]'` walks
    revisions = {j.spec.name: j.mod_revision for j in journals(address, "topic=clicks")}
    assert [list(j) for j in listed] == [
        ["spec", "mod_revision", "route", "create_revision"]] * 2
    assert [j["spec"]["name"] for j in listed] == ["list/clicks/eu", "list/clicks/us"]
    first = listed[0]
    assert first["mod_revision"] == str(revisions["list/clicks/eu"])
    assert first["spec"]["fragment"]["compression_codec"] == "GZIP"
    # Every field, set or not, as Go writes them.
    assert first["spec"]["fragment"]["refresh_interval"] == "1s"
    assert first["spec"]["fragment"]["retention"] == "0s"
    assert first["spec"]["fragment"]["path_postfix_template"] == ""
    assert first["spec"]["max_append_rate"] == "0"
    assert first["spec"]["suspend"] is None
    assert first["spec"]["labels"]["labels"] == [
        {"name": "app", "value": "shop", "prefix": False},
        {"name": "topic", "value": "clicks", "prefix": False},
    ]
    assert first["route"]["primary"] == 0
    assert first["route"]["members"] == [{"zone": "local", "suffix": "broker-1"}]


def test_json_parses_back_into_the_list_response(address: str) -> None:
    result = ok("journals", "list", "-l", "prefix=list/", "-o", "json",
                "--broker.address", address)

    parsed = json_format.Parse(result.stdout, pb.ListResponse())
    assert parsed.status == pb.Status.OK
    listed = journals(address, "prefix=list/")
    assert [(j.spec.name, j.mod_revision, j.create_revision) for j in parsed.journals] == [
        (j.spec.name, j.mod_revision, j.create_revision) for j in listed]
    for got, want in zip(parsed.journals, listed, strict=True):
        # Go's JSON sets the sub-messages a listing leaves empty (e.g. retention "0s"):
        # the same spec in every field, though not in which empty fields are present.
        assert text_format.MessageToString(got.spec, print_unknown_fields=True) == \
            text_format.MessageToString(_with_empties(want.spec))
        assert got.route == want.route


def _with_empties(spec: pb.JournalSpec) -> pb.JournalSpec:
    """`spec` with the sub-messages Go always writes present, as a parse of Go's JSON has."""
    copy = pb.JournalSpec()
    copy.CopyFrom(spec)
    copy.labels.SetInParent()
    for name in ("refresh_interval", "retention", "flush_interval"):
        getattr(copy.fragment, name).SetInParent()
    return copy


def test_jsonl_is_one_journal_per_line_with_proto_field_names(address: str) -> None:
    result = ok("journals", "list", "-l", "topic=clicks", "-o", "jsonl",
                "--broker.address", address)

    lines = [json.loads(line) for line in result.stdout.splitlines()]
    revisions = {j.spec.name: j.mod_revision for j in journals(address, "topic=clicks")}
    assert [sorted(obj) for obj in lines] == [
        ["create_revision", "mod_revision", "route", "spec"]] * 2
    assert [obj["spec"]["name"] for obj in lines] == ["list/clicks/eu", "list/clicks/us"]
    first = lines[0]
    assert first["mod_revision"] == str(revisions["list/clicks/eu"])
    assert first["spec"]["fragment"]["refresh_interval"] == "1s"
    parsed = json_format.Parse(result.stdout.splitlines()[0], pb.ListResponse.Journal())
    assert parsed.spec.name == "list/clicks/eu"


@pytest.mark.parametrize(("output", "expected"), [
    ("table", "Name\n"), ("yaml", "{}\n"), ("jsonl", ""),
])
def test_a_selector_matching_nothing_is_an_empty_listing(address: str, output: str,
                                                        expected: str) -> None:
    result = ok("journals", "list", "-l", "name=list/none", "-o", output,
                "--broker.address", address)

    assert (result.stdout, result.stderr) == (expected, "")


def test_json_of_a_selector_matching_nothing_has_no_journals(address: str) -> None:
    result = ok("journals", "list", "-l", "name=list/none", "-o", "json",
                "--broker.address", address)

    doc = json.loads(result.stdout)
    assert (doc["status"], doc["journals"]) == ("OK", [])
    assert json_format.Parse(result.stdout, pb.ListResponse()).journals == []


def test_yaml_hoists_shared_values_into_directories(address: str) -> None:
    result = ok("journals", "list", "-l", "topic=clicks", "-o", "yaml",
                "--broker.address", address)

    revision = journals(address, "name=list/clicks/eu")[0].mod_revision
    assert result.stdout == f"""\
name: list/clicks/
replication: 1
labels:
- name: app
  value: shop
- name: topic
  value: clicks
fragment:
  length: 1048576
  compression_codec: GZIP
  stores:
  - file:///
  refresh_interval: 1s
children:
- name: list/clicks/eu
  revision: {revision}
- name: list/clicks/us
  revision: {revision}
"""


def test_yaml_output_applies_back_unchanged(address: str) -> None:
    listed = ok("journals", "list", "-l", "prefix=list/", "-o", "yaml",
                "--broker.address", address)
    before = {j.spec.name: j for j in journals(address, "prefix=list/")}

    applied = ok("journals", "apply", "--broker.address", address, input=listed.stdout)

    assert applied.stdout.splitlines() == [
        f"unchanged {name} (revision {before[name].mod_revision})" for name in NAMES] + [
        "0 created, 0 changed, 4 unchanged, 0 deleted", "nothing to apply"]
    after = {j.spec.name: j for j in journals(address, "prefix=list/")}
    assert after == before
    relisted = ok("journals", "list", "-l", "prefix=list/", "-o", "yaml",
                  "--broker.address", address)
    assert re.sub(r"revision: \d+", "", relisted.stdout) == re.sub(
        r"revision: \d+", "", listed.stdout)


def test_proto_output_is_the_list_response_in_text_format(address: str) -> None:
    result = ok("journals", "list", "-l", "prefix=list/", "-o", "proto",
                "--broker.address", address)

    parsed = text_format.Parse(result.stdout, pb.ListResponse())
    assert [j.spec.name for j in parsed.journals] == NAMES
    assert {j.spec.name: j.spec for j in parsed.journals} == {
        j.spec.name: j.spec for j in journals(address, "prefix=list/")}


def test_watch_prints_the_whole_json_object_on_every_change(address: str, state_home: Path) -> None:
    ok("journals", "apply", "--broker.address", address,
       input="name: watched/a\nreplication: 1\nfragment:\n  length: 1024\n"
             "  compression_codec: NONE\n  refresh_interval: 1s\nrevision: 0\n")
    with piped_gazctl("journals", "list", "--watch", "-l", "prefix=watched/", "-o", "json",
                       "--broker.address", address, env=isolated_env(state_home)) as proc:
        assert proc.stdout is not None
        first = json.loads(proc.stdout.readline())
        assert [j["spec"]["name"] for j in first["journals"]] == ["watched/a"]
        ok("journals", "apply", "--broker.address", address,
           input="name: watched/b\nreplication: 1\nfragment:\n  length: 1024\n"
                 "  compression_codec: NONE\n  refresh_interval: 1s\nrevision: 0\n")
        # The next snapshot is the whole listing again, of both journals.
        second = json.loads(proc.stdout.readline())
        assert list(second) == ["status", "header", "journals"]
        assert [j["spec"]["name"] for j in second["journals"]] == ["watched/a", "watched/b"]
        assert stop(proc) == 130
