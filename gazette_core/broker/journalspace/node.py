"""The journal tree: directory and journal nodes, and their structural rules.

A node whose name ends in `/` (or the unnamed root) is a directory grouping its
children; any other node is a journal. Each node holds only the JournalSpec
values it sets itself; push-down fills in the rest from its ancestors.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.names_ext import quote
from gazette_core.broker.protocol.validate_ext import validate_journal_name
from gazette_core.errors import ValidationError


@dataclass
class Node:
    """One node of a journal tree.

    `name` is authoritative; `spec.name` is ignored and kept empty. `delete` is
    None when the node leaves the decision to its parent.
    """

    name: str = ""
    spec: pb.JournalSpec = field(default_factory=pb.JournalSpec)
    delete: bool | None = None
    revision: int = 0
    comment: str | None = None
    children: list[Node] = field(default_factory=list)

    def is_directory(self, is_root: bool = False) -> bool:
        """Whether this node groups children rather than naming a journal."""
        return self.name.endswith("/") or (is_root and self.name == "")


def join_path(prefix: str, part: str) -> str:
    """Joins a tree path and a field or index, e.g. `children[1]` + `name`."""
    if not prefix:
        return part
    return prefix + part if part.startswith("[") else f"{prefix}.{part}"


def child_path(prefix: str, index: int) -> str:
    """The tree path of the `index`-th child of the node at `prefix`."""
    return join_path(prefix, f"children[{index}]")


def validate_tree(root: Node) -> None:
    """Checks the structural rules of the tree rooted at `root`.

    Raises ValidationError whose path locates the offending node field.
    """
    _validate_node(root, "", is_root=True)


def _validate_node(node: Node, path: str, is_root: bool) -> None:
    if node.is_directory(is_root):
        _validate_directory(node, path)
    else:
        _validate_journal(node, path)


def _validate_directory(node: Node, path: str) -> None:
    label = f"directory {quote(node.name)}"
    if node.revision != 0:
        raise ValidationError(
            join_path(path, "revision"),
            f"{label} cannot have a revision (got {node.revision}); revisions belong on journals",
        )
    if not node.children:
        raise ValidationError(join_path(path, "children"), f"{label} must have at least one child")
    previous: str | None = None
    for index, child in enumerate(node.children):
        name_path = join_path(child_path(path, index), "name")
        if not child.name.startswith(node.name):
            raise ValidationError(
                name_path,
                f"{quote(child.name)} does not start with its parent's name {quote(node.name)}",
            )
        if previous is not None and child.name <= previous:
            raise ValidationError(
                name_path,
                f"{quote(child.name)} must sort after its preceding sibling {quote(previous)}"
                " (children must be in strictly ascending name order)",
            )
        previous = child.name
        _validate_node(child, child_path(path, index), is_root=False)


def _validate_journal(node: Node, path: str) -> None:
    if node.children:
        raise ValidationError(
            join_path(path, "children"),
            f'journal {quote(node.name)} cannot have children (only names ending in "/" can)',
        )
    validate_journal_name(node.name, join_path(path, "name"))
