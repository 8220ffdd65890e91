"""Hoist: group listed journals into a tree of directories holding shared values.

Directories are named by the longest `/`-component prefix their journals
share, and exist only where they group two or more children, so chains of
single children collapse. Values then move up bottom-up: each directory takes
what all its children agree on, and each child keeps only what differs.
Push-down of the result gives back the listed specs.
"""

from __future__ import annotations

from gazette_core.broker.journalspace.node import Node
from gazette_core.broker.journalspace.spec_fields import intersect, subtract
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.names_ext import quote
from gazette_core.errors import ValidationError

Listed = tuple[pb.JournalSpec, int]


def hoist(journals: list[tuple[pb.JournalSpec, int]]) -> Node:
    """The hoisted tree of `(spec, mod_revision)` pairs.

    One journal gives a bare journal node; none gives an empty root directory.
    """
    ordered = sorted(journals, key=lambda item: item[0].name)
    for index in range(1, len(ordered)):
        if ordered[index][0].name == ordered[index - 1][0].name:
            name = ordered[index][0].name
            raise ValidationError("journals", f"journal {quote(name)} is listed more than once")
    if not ordered:
        return Node(name="")
    root = _build(ordered)
    _hoist_values(root)
    return root


def _build(group: list[Listed]) -> Node:
    if len(group) == 1:
        spec, revision = group[0]
        own = pb.JournalSpec()
        own.CopyFrom(spec)
        own.ClearField("name")
        return Node(name=spec.name, spec=own, revision=revision)
    prefix = _shared_directory(group[0][0].name, group[-1][0].name)
    children = [_build(part) for part in _split_by_component(group, len(prefix))]
    return Node(name=prefix, children=children)


def _shared_directory(first: str, last: str) -> str:
    """The longest `/`-ended prefix of two names; of a sorted run, its ends suffice."""
    shared = 0
    for a, b in zip(first, last, strict=False):
        if a != b:
            break
        shared += 1
    return first[: first.rfind("/", 0, shared) + 1]


def _split_by_component(group: list[Listed], start: int) -> list[list[Listed]]:
    """Runs of `group` sharing the path component that begins at `start`.

    A prefix's names are contiguous in sorted order, so runs never interleave.
    """
    runs: list[list[Listed]] = []
    previous_key: str | None = None
    for item in group:
        name = item[0].name
        slash = name.find("/", start)
        key = name[start:] if slash < 0 else name[start : slash + 1]
        if key != previous_key:
            runs.append([])
            previous_key = key
        runs[-1].append(item)
    return runs


def _hoist_values(node: Node) -> None:
    if not node.children:
        return
    for child in node.children:
        _hoist_values(child)
    node.spec = intersect([child.spec for child in node.children])
    deletes = {child.delete for child in node.children}
    if len(deletes) == 1 and None not in deletes:
        node.delete = deletes.pop()
        for child in node.children:
            child.delete = None
    for child in node.children:
        child.spec = subtract(child.spec, node.spec)
