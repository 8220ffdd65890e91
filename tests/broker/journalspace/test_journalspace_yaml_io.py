"""Journal trees and single specs to and from strict YAML."""

from __future__ import annotations

import pytest
from google.protobuf.duration_pb2 import Duration

from gazette_core.broker.journalspace.node import Node
from gazette_core.broker.journalspace.yaml_io import (
    dump_tree,
    load_tree,
    spec_from_yaml_dict,
    spec_to_yaml_dict,
)
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import ValidationError

FULL_TREE_YAML = """\
name: acme/
replication: 3
labels:
- name: content-type
  value: application/x-ndjson
- name: present
  value: ""
fragment:
  length: 67108864
  compression_codec: GZIP_OFFLOAD_DECOMPRESSION
  stores:
  - s3://bkt/prefix/?profile=p
  - gs://other/
  refresh_interval: 5m0s
  retention: 720h0m0s
  flush_interval: 1m30.5s
  path_postfix_template: date={{ .Spool.FirstAppendTime.Format "2006-01-02" }}
flags: O_WRONLY
max_append_rate: 1048576
delete: true
comment: owned by the clicks team
children:
- name: acme/clicks/
  children:
  - name: acme/clicks/part-000
    suspend:
      level: PARTIAL
      offset: 4096
    revision: 41
  - name: acme/clicks/part-001
    suspend: {}
    delete: false
    revision: -1
- name: acme/views
  replication: 1
  flags: 3
  revision: 7
"""


def _error(text: str) -> str:
    with pytest.raises(ValidationError) as caught:
        load_tree(text)
    return str(caught.value)


def test_full_tree_dumps_back_to_the_same_text_and_tree() -> None:
    tree = load_tree(FULL_TREE_YAML)
    assert dump_tree(tree) == FULL_TREE_YAML
    assert load_tree(dump_tree(tree)) == tree


def test_full_tree_decodes_every_field() -> None:
    tree = load_tree(FULL_TREE_YAML)
    part_000 = tree.children[0].children[0]
    assert tree.spec == pb.JournalSpec(
        replication=3,
        labels=pb.LabelSet(
            labels=[
                pb.Label(name="content-type", value="application/x-ndjson"),
                pb.Label(name="present", value=""),
            ]
        ),
        fragment=pb.JournalSpec.Fragment(
            length=67108864,
            compression_codec=pb.GZIP_OFFLOAD_DECOMPRESSION,
            stores=["s3://bkt/prefix/?profile=p", "gs://other/"],
            refresh_interval=Duration(seconds=300),
            retention=Duration(seconds=720 * 3600),
            flush_interval=Duration(seconds=90, nanos=500_000_000),
            path_postfix_template='date={{ .Spool.FirstAppendTime.Format "2006-01-02" }}',
        ),
        flags=pb.JournalSpec.O_WRONLY,
        max_append_rate=1048576,
    )
    assert (tree.name, tree.delete, tree.comment) == ("acme/", True, "owned by the clicks team")
    assert part_000 == Node(
        name="acme/clicks/part-000",
        spec=pb.JournalSpec(
            suspend=pb.JournalSpec.Suspend(level=pb.JournalSpec.Suspend.PARTIAL, offset=4096)
        ),
        revision=41,
    )
    assert tree.children[0].children[1].delete is False
    assert tree.children[1].spec == pb.JournalSpec(replication=1, flags=3)


def test_omitted_label_value_loads_empty_and_prints_quoted() -> None:
    tree = load_tree("name: acme/one\nlabels:\n- name: flagged\n")
    assert tree == Node(
        name="acme/one",
        spec=pb.JournalSpec(labels=pb.LabelSet(labels=[pb.Label(name="flagged")])),
    )
    assert dump_tree(tree) == 'name: acme/one\nlabels:\n- name: flagged\n  value: ""\n'


def test_flags_given_as_integer_print_by_name() -> None:
    assert dump_tree(load_tree("name: acme/one\nflags: 4\n")) == "name: acme/one\nflags: O_RDWR\n"


def test_zero_values_are_omitted_on_output() -> None:
    text = (
        "name: acme/one\nreplication: 0\nfragment:\n  length: 0\n  retention: 0s\n"
        "flags: NOT_SPECIFIED\nrevision: 0\ncomment: ''\n"
    )
    tree = load_tree(text)
    assert tree == Node(name="acme/one")
    assert dump_tree(tree) == "name: acme/one\n"


def test_empty_documents_are_an_empty_root() -> None:
    assert load_tree("") == Node()
    assert load_tree("{}\n") == Node()


def test_unknown_key_is_rejected_with_its_line() -> None:
    text = (
        "name: acme/\nchildren:\n- name: acme/one\n  fragment:\n    length: 1024\n    lenght: 5\n"
    )
    assert _error(text) == 'children[0].fragment: unknown key "lenght" at line 6'


def test_unknown_top_level_key_is_rejected_with_its_line() -> None:
    assert _error("name: acme/one\nreplicas: 3\n") == 'unknown key "replicas" at line 2'


def test_unknown_label_key_is_rejected() -> None:
    text = "name: acme/one\nlabels:\n- name: aa\n  prefix: true\n"
    assert _error(text) == 'labels[0]: unknown key "prefix" at line 4'


def test_mistyped_value_is_rejected_with_its_line() -> None:
    text = "name: acme/\nchildren:\n- name: acme/one\n  replication: three\n"
    assert _error(text) == (
        'children[0].replication: expected an integer, got the string "three" at line 4'
    )


def test_unknown_enum_name_is_rejected() -> None:
    assert _error("name: acme/one\nflags: O_APPEND\n") == (
        'flags: unknown value "O_APPEND" at line 2'
        " (expected one of NOT_SPECIFIED, O_RDONLY, O_WRONLY, O_RDWR)"
    )


def test_bad_duration_is_rejected() -> None:
    assert _error("name: acme/one\nfragment:\n  retention: 7d\n") == (
        'fragment.retention: unknown unit "d" in duration "7d" at line 3'
    )


def test_out_of_range_integer_is_rejected() -> None:
    assert _error("name: acme/one\nreplication: 4294967296\n") == (
        "replication: 4294967296 is out of range [-2147483648, 2147483647] at line 2"
    )


def test_children_must_be_a_list_of_mappings() -> None:
    assert _error("name: acme/\nchildren:\n- acme/one\n") == (
        'children[0]: expected a mapping, got the string "acme/one" at line 3'
    )


def test_yaml_syntax_error_reports_line_and_column() -> None:
    assert _error("name: acme/\nchildren: [\n  {name: acme/one}\n") == (
        "invalid YAML at line 4, column 1: expected ',' or ']', but got '<stream end>'"
    )


def test_duplicate_key_is_a_yaml_error() -> None:
    assert _error("name: acme/one\nname: acme/two\n") == (
        'invalid YAML at line 2, column 1: found duplicate key "name" with value "acme/two"'
        ' (original value: "acme/one")'
    )


def test_single_spec_round_trips_through_a_dict() -> None:
    spec = pb.JournalSpec(
        name="acme/one",
        replication=2,
        labels=pb.LabelSet(labels=[pb.Label(name="aa", value="")]),
        fragment=pb.JournalSpec.Fragment(length=2048, retention=Duration(seconds=60)),
        suspend=pb.JournalSpec.Suspend(offset=5),
    )
    data = spec_to_yaml_dict(spec)
    assert data == {
        "name": "acme/one",
        "replication": 2,
        "labels": [{"name": "aa", "value": ""}],
        "fragment": {"length": 2048, "retention": "1m0s"},
        "suspend": {"offset": 5},
    }
    assert spec_from_yaml_dict(data) == spec


def test_single_spec_from_a_plain_dict_rejects_tree_keys() -> None:
    with pytest.raises(ValidationError) as caught:
        spec_from_yaml_dict({"name": "acme/one", "revision": 3}, "specs[2]")
    assert str(caught.value) == 'specs[2]: unknown key "revision"'


def test_unquoted_numbers_and_booleans_read_as_text() -> None:
    tree = load_tree("name: acme/one\nlabels:\n- name: aa\n  value: 1\n- name: bb\n  value: true\n")
    assert tree.spec == pb.JournalSpec(
        labels=pb.LabelSet(
            labels=[pb.Label(name="aa", value="1"), pb.Label(name="bb", value="true")]
        )
    )
    assert dump_tree(tree) == (
        "name: acme/one\nlabels:\n- name: aa\n  value: '1'\n- name: bb\n  value: 'true'\n"
    )
