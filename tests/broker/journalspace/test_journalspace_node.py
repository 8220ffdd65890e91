"""Structural rules of journal trees (`validate_tree`)."""

from __future__ import annotations

import pytest

from gazette_core.broker.journalspace.node import Node, validate_tree
from gazette_core.errors import ValidationError


def _leaf(name: str, revision: int = 0) -> Node:
    return Node(name=name, revision=revision)


def _error(root: Node) -> str:
    with pytest.raises(ValidationError) as caught:
        validate_tree(root)
    return str(caught.value)


def test_valid_tree_with_nested_directories_passes() -> None:
    root = Node(
        name="",
        children=[
            Node(
                name="a/",
                children=[_leaf("a/one", 3), Node(name="a/x/", children=[_leaf("a/x/y")])],
            ),
            _leaf("bbbb"),
        ],
    )
    validate_tree(root)


def test_a_bare_journal_is_a_valid_tree() -> None:
    validate_tree(_leaf("acme/clicks", 7))


def test_empty_root_directory_is_rejected() -> None:
    assert _error(Node()) == 'children: directory "" must have at least one child'


def test_directory_without_children_is_rejected() -> None:
    root = Node(name="a/", children=[_leaf("a/one"), Node(name="a/x/")])
    assert _error(root) == 'children[1].children: directory "a/x/" must have at least one child'


def test_directory_with_revision_is_rejected() -> None:
    root = Node(name="a/", revision=5, children=[_leaf("a/one")])
    assert _error(root) == (
        'revision: directory "a/" cannot have a revision (got 5); revisions belong on journals'
    )


def test_child_outside_its_parent_is_rejected() -> None:
    root = Node(
        name="",
        children=[_leaf("aaaa"), Node(name="b/", children=[_leaf("c/one")])],
    )
    assert _error(root) == (
        'children[1].children[0].name: "c/one" does not start with its parent\'s name "b/"'
    )


def test_children_out_of_order_are_rejected() -> None:
    root = Node(name="a/", children=[_leaf("a/two"), _leaf("a/one")])
    assert _error(root) == (
        'children[1].name: "a/one" must sort after its preceding sibling "a/two"'
        " (children must be in strictly ascending name order)"
    )


def test_duplicate_children_are_rejected() -> None:
    root = Node(name="a/", children=[_leaf("a/one"), _leaf("a/one")])
    assert _error(root) == (
        'children[1].name: "a/one" must sort after its preceding sibling "a/one"'
        " (children must be in strictly ascending name order)"
    )


def test_journal_with_children_is_rejected() -> None:
    root = Node(name="a/", children=[Node(name="a/one", children=[_leaf("a/one/x")])])
    assert _error(root) == (
        'children[0].children: journal "a/one" cannot have children (only names ending in "/" can)'
    )


def test_invalid_journal_name_is_rejected() -> None:
    root = Node(name="", children=[_leaf("ab")])
    assert _error(root) == (
        'children[0].name: invalid length of "ab": expected 4 <= length <= 512 bytes (got 2)'
    )


def test_unclean_journal_name_is_rejected() -> None:
    inner = Node(name="a/b/", children=[_leaf("a/b/c"), _leaf("a/b/x/../y")])
    root = Node(name="a/", children=[inner])
    assert _error(root) == (
        'children[0].children[1].name: "a/b/x/../y" must be a clean path'
        ' (no "//", no "." or ".." segments, no trailing "/")'
    )
