"""Push-down of journal trees into full specs, and the resulting ApplyRequest."""

from __future__ import annotations

import pytest
from google.protobuf.duration_pb2 import Duration

from gazette_core.broker.journalspace.node import Node
from gazette_core.broker.journalspace.pushdown import Leaf, push_down, to_apply_request
from gazette_core.broker.journalspace.yaml_io import load_tree
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import ValidationError

Change = pb.ApplyRequest.Change

# The example of docs/design/gazctl.md#hierarchical-yaml, plus a codec and refresh
# interval so the specs validate.
CLICKS_YAML = """\
name: acme/clicks/
replication: 3
labels:
- name: content-type
  value: application/x-ndjson
fragment:
  length: 67108864
  compression_codec: GZIP
  stores:
  - s3://bkt/
  refresh_interval: 5m0s
  retention: 168h0m0s
children:
- name: acme/clicks/part-000
  revision: 41
- name: acme/clicks/part-001
  delete: true
  revision: 41
- name: acme/clicks/part-002
  replication: 2
"""


def _labels(*pairs: tuple[str, str]) -> pb.LabelSet:
    return pb.LabelSet(labels=[pb.Label(name=name, value=value) for name, value in pairs])


def _clicks_spec(name: str, replication: int) -> pb.JournalSpec:
    return pb.JournalSpec(
        name=name,
        replication=replication,
        labels=_labels(("content-type", "application/x-ndjson")),
        fragment=pb.JournalSpec.Fragment(
            length=64 << 20,
            compression_codec=pb.GZIP,
            stores=["s3://bkt/"],
            refresh_interval=Duration(seconds=300),
            retention=Duration(seconds=168 * 3600),
        ),
    )


def test_worked_example_produces_upsert_delete_and_create() -> None:
    request = to_apply_request(push_down(load_tree(CLICKS_YAML)))
    assert request == pb.ApplyRequest(
        changes=[
            Change(upsert=_clicks_spec("acme/clicks/part-000", 3), expect_mod_revision=41),
            Change(delete="acme/clicks/part-001", expect_mod_revision=41),
            Change(upsert=_clicks_spec("acme/clicks/part-002", 2), expect_mod_revision=0),
        ]
    )


def test_labels_merge_by_name_and_stores_replace_whole() -> None:
    parent = pb.JournalSpec(
        labels=_labels(("aa", "1"), ("bb", "2"), ("bb", "3")),
        fragment=pb.JournalSpec.Fragment(stores=["s3://one/", "s3://two/"], length=1024),
    )
    child = pb.JournalSpec(
        labels=_labels(("bb", "9"), ("cc", "")),
        fragment=pb.JournalSpec.Fragment(stores=["gs://three/"]),
    )
    root = Node(name="x/", spec=parent, children=[Node(name="x/abcd", spec=child, revision=4)])
    expected = pb.JournalSpec(
        name="x/abcd",
        labels=_labels(("aa", "1"), ("bb", "9"), ("cc", "")),
        fragment=pb.JournalSpec.Fragment(stores=["gs://three/"], length=1024),
    )
    assert push_down(root) == [Leaf(spec=expected, delete=False, revision=4, path="children[0]")]


def test_non_zero_child_values_win_and_zero_values_inherit() -> None:
    parent = pb.JournalSpec(replication=3, flags=pb.JournalSpec.O_RDONLY, max_append_rate=100)
    child = pb.JournalSpec(replication=1, fragment=pb.JournalSpec.Fragment(length=2048))
    root = Node(name="x/", spec=parent, children=[Node(name="x/abcd", spec=child)])
    expected = pb.JournalSpec(
        name="x/abcd",
        replication=1,
        fragment=pb.JournalSpec.Fragment(length=2048),
        flags=pb.JournalSpec.O_RDONLY,
        max_append_rate=100,
    )
    assert push_down(root) == [Leaf(spec=expected, delete=False, revision=0, path="children[0]")]


def test_delete_is_inherited_unless_set_on_the_child() -> None:
    inner = Node(
        name="d/e/",
        children=[Node(name="d/e/deep", revision=3), Node(name="d/e/kept", delete=False)],
    )
    root = Node(name="d/", delete=True, children=[Node(name="d/aaa", revision=2), inner])
    assert push_down(root) == [
        Leaf(spec=pb.JournalSpec(name="d/aaa"), delete=True, revision=2, path="children[0]"),
        Leaf(
            spec=pb.JournalSpec(name="d/e/deep"),
            delete=True,
            revision=3,
            path="children[1].children[0]",
        ),
        Leaf(
            spec=pb.JournalSpec(name="d/e/kept"),
            delete=False,
            revision=0,
            path="children[1].children[1]",
        ),
    ]


def test_suspend_is_never_inherited() -> None:
    suspend = pb.JournalSpec.Suspend(level=pb.JournalSpec.Suspend.PARTIAL, offset=1024)
    parent = pb.JournalSpec(replication=2, suspend=suspend)
    own = pb.JournalSpec(suspend=pb.JournalSpec.Suspend(level=pb.JournalSpec.Suspend.FULL))
    root = Node(
        name="s/",
        spec=parent,
        children=[Node(name="s/bare"), Node(name="s/own", spec=own)],
    )
    assert [leaf.spec for leaf in push_down(root)] == [
        pb.JournalSpec(name="s/bare", replication=2),
        pb.JournalSpec(name="s/own", replication=2, suspend=own.suspend),
    ]


def test_push_down_validates_the_tree() -> None:
    with pytest.raises(ValidationError) as caught:
        push_down(Node(name="a/", revision=3, children=[Node(name="a/bcd")]))
    assert str(caught.value) == (
        'revision: directory "a/" cannot have a revision (got 3); revisions belong on journals'
    )


def test_delete_without_revision_is_rejected() -> None:
    tree = load_tree(CLICKS_YAML.replace("  delete: true\n  revision: 41\n", "  delete: true\n"))
    with pytest.raises(ValidationError) as caught:
        to_apply_request(push_down(tree))
    assert str(caught.value) == (
        'children[1].revision: deleting journal "acme/clicks/part-001" needs a revision'
        " > 0 or -1 (got 0)"
    )


def test_delete_of_a_bare_journal_accepts_revision_minus_one() -> None:
    leaves = push_down(Node(name="acme/one", delete=True, revision=-1))
    assert to_apply_request(leaves) == pb.ApplyRequest(
        changes=[Change(delete="acme/one", expect_mod_revision=-1)]
    )


def test_upsert_with_revision_below_minus_one_is_rejected() -> None:
    leaves = [Leaf(spec=_clicks_spec("acme/one", 1), delete=False, revision=-2)]
    with pytest.raises(ValidationError) as caught:
        to_apply_request(leaves)
    assert str(caught.value) == 'revision: journal "acme/one" needs a revision >= 0 or -1 (got -2)'


def test_invalid_upsert_error_carries_the_tree_path() -> None:
    tree = load_tree(CLICKS_YAML.replace("  replication: 2\n", "  replication: 7\n"))
    with pytest.raises(ValidationError) as caught:
        to_apply_request(push_down(tree))
    assert str(caught.value) == "children[2].replication: expected 1 <= replication <= 5 (got 7)"


def test_invalid_nested_field_error_carries_the_tree_path() -> None:
    tree = load_tree(CLICKS_YAML.replace("refresh_interval: 5m0s", "refresh_interval: 48h"))
    with pytest.raises(ValidationError) as caught:
        to_apply_request(push_down(tree))
    assert str(caught.value) == (
        "children[0].fragment.refresh_interval:"
        " expected 1s <= refresh_interval <= 24h0m0s (got 48h0m0s)"
    )


def test_invalid_bare_journal_error_has_no_tree_prefix() -> None:
    with pytest.raises(ValidationError) as caught:
        to_apply_request(push_down(Node(name="acme/one")))
    assert str(caught.value) == "replication: expected 1 <= replication <= 5 (got 0)"
