"""Hoisting listed journals into a tree of directories and shared values."""

from __future__ import annotations

import pytest
from google.protobuf.duration_pb2 import Duration

from gazette_core.broker.journalspace.hoist import hoist
from gazette_core.broker.journalspace.node import Node
from gazette_core.broker.journalspace.pushdown import push_down
from gazette_core.broker.journalspace.yaml_io import dump_tree
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import ValidationError

Fragment = pb.JournalSpec.Fragment


def _labels(*pairs: tuple[str, str]) -> pb.LabelSet:
    return pb.LabelSet(labels=[pb.Label(name=name, value=value) for name, value in pairs])


def _spec(name: str, replication: int = 3, **fields: object) -> pb.JournalSpec:
    return pb.JournalSpec(name=name, replication=replication, **fields)  # type: ignore[arg-type]


def test_single_child_chains_collapse() -> None:
    tree = hoist([(_spec("a/111/foo/i"), 5), (_spec("a/111/foo/j"), 6)])
    assert tree == Node(
        name="a/111/foo/",
        spec=pb.JournalSpec(replication=3),
        children=[Node(name="a/111/foo/i", revision=5), Node(name="a/111/foo/j", revision=6)],
    )


def test_directory_groups_only_where_two_or_more_children_share_it() -> None:
    tree = hoist([(_spec("a/222"), 1), (_spec("a/111/foo/j"), 2), (_spec("a/111/foo/i"), 3)])
    assert tree == Node(
        name="a/",
        spec=pb.JournalSpec(replication=3),
        children=[
            Node(
                name="a/111/foo/",
                children=[
                    Node(name="a/111/foo/i", revision=3),
                    Node(name="a/111/foo/j", revision=2),
                ],
            ),
            Node(name="a/222", revision=1),
        ],
    )


def test_values_hoist_field_by_field_and_children_keep_differences() -> None:
    shared = Fragment(length=1024, stores=["s3://bkt/"], retention=Duration(seconds=60))
    journals = [
        (_spec("x/one", labels=_labels(("aa", "1"), ("bb", "2")), fragment=shared), 10),
        (_spec("x/two", 2, labels=_labels(("aa", "1"), ("bb", "3")), fragment=shared), 11),
    ]
    assert hoist(journals) == Node(
        name="x/",
        spec=pb.JournalSpec(labels=_labels(("aa", "1")), fragment=shared),
        children=[
            Node(
                name="x/one",
                spec=pb.JournalSpec(replication=3, labels=_labels(("bb", "2"))),
                revision=10,
            ),
            Node(
                name="x/two",
                spec=pb.JournalSpec(replication=2, labels=_labels(("bb", "3"))),
                revision=11,
            ),
        ],
    )


def test_labels_hoist_only_when_every_value_of_the_name_matches() -> None:
    journals = [
        (_spec("x/one", labels=_labels(("tag", "a"), ("tag", "b"))), 1),
        (_spec("x/two", labels=_labels(("tag", "a"))), 1),
    ]
    tree = hoist(journals)
    assert tree.spec == pb.JournalSpec(replication=3)
    assert [child.spec for child in tree.children] == [
        pb.JournalSpec(labels=_labels(("tag", "a"), ("tag", "b"))),
        pb.JournalSpec(labels=_labels(("tag", "a"))),
    ]


def test_suspend_stays_on_leaves() -> None:
    suspend = pb.JournalSpec.Suspend(level=pb.JournalSpec.Suspend.FULL, offset=9)
    tree = hoist([(_spec("x/one", suspend=suspend), 1), (_spec("x/two", suspend=suspend), 2)])
    assert tree == Node(
        name="x/",
        spec=pb.JournalSpec(replication=3),
        children=[
            Node(name="x/one", spec=pb.JournalSpec(suspend=suspend), revision=1),
            Node(name="x/two", spec=pb.JournalSpec(suspend=suspend), revision=2),
        ],
    )


def test_single_journal_is_a_bare_leaf() -> None:
    assert hoist([(_spec("acme/one", max_append_rate=5), 8)]) == Node(
        name="acme/one", spec=pb.JournalSpec(replication=3, max_append_rate=5), revision=8
    )


def test_no_journals_is_an_empty_root_dumped_as_braces() -> None:
    tree = hoist([])
    assert tree == Node(name="")
    assert dump_tree(tree) == "{}\n"


def test_duplicate_journals_are_rejected() -> None:
    with pytest.raises(ValidationError) as caught:
        hoist([(_spec("acme/one"), 1), (_spec("acme/one"), 2)])
    assert str(caught.value) == 'journals: journal "acme/one" is listed more than once'


def test_shared_values_print_once_on_the_directory() -> None:
    fragment = Fragment(length=67108864, stores=["s3://bkt/"], retention=Duration(seconds=604800))
    labels = _labels(("content-type", "application/x-ndjson"))
    names = ["acme/clicks/part-000", "acme/clicks/part-001", "acme/clicks/part-002"]
    tree = hoist([(_spec(name, labels=labels, fragment=fragment), 41) for name in names])
    assert dump_tree(tree) == (
        "name: acme/clicks/\n"
        "replication: 3\n"
        "labels:\n"
        "- name: content-type\n"
        "  value: application/x-ndjson\n"
        "fragment:\n"
        "  length: 67108864\n"
        "  stores:\n"
        "  - s3://bkt/\n"
        "  retention: 168h0m0s\n"
        "children:\n"
        "- name: acme/clicks/part-000\n"
        "  revision: 41\n"
        "- name: acme/clicks/part-001\n"
        "  revision: 41\n"
        "- name: acme/clicks/part-002\n"
        "  revision: 41\n"
    )


def test_hoist_then_push_down_returns_the_listed_specs() -> None:
    ndjson = ("content-type", "application/x-ndjson")
    fragment = Fragment(
        length=1 << 20,
        compression_codec=pb.SNAPPY,
        stores=["s3://bkt/", "gs://other/"],
        refresh_interval=Duration(seconds=300),
        flush_interval=Duration(seconds=3600),
    )
    other_fragment = Fragment(length=1 << 20, stores=["file:///local/"])
    suspend = pb.JournalSpec.Suspend(level=pb.JournalSpec.Suspend.PARTIAL, offset=77)
    listed = [
        (_spec("acme/clicks/part-000", labels=_labels(ndjson), fragment=fragment), 41),
        (_spec("acme/clicks/part-001", 2, labels=_labels(ndjson), fragment=fragment), 42),
        (_spec("acme/views/eu/part-000", labels=_labels(ndjson, ("tag", "x"))), 43),
        (_spec("acme/views/eu/part-001", labels=_labels(("tag", "x")), suspend=suspend), 44),
        (_spec("acme/views/us", 1, fragment=other_fragment, flags=pb.JournalSpec.O_RDONLY), 45),
        (_spec("zeta/only", 5, max_append_rate=1 << 20), 46),
    ]
    leaves = push_down(hoist(listed))
    assert [(leaf.spec, leaf.revision, leaf.delete) for leaf in leaves] == [
        (spec, revision, False) for spec, revision in listed
    ]
