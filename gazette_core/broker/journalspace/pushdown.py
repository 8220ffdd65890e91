"""Push-down: flatten a journal tree into full per-journal specs and an Apply.

Walking from the root, each node inherits every value it leaves zero from its
parent (see `spec_fields.inherit`). `delete` is inherited unless a node sets it
itself; `suspend` is never inherited, so only a journal's own value counts.
"""

from __future__ import annotations

from dataclasses import dataclass

from gazette_core.broker.journalspace.node import Node, child_path, join_path, validate_tree
from gazette_core.broker.journalspace.spec_fields import inherit
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.names_ext import quote
from gazette_core.broker.protocol.validate_ext import validate_journal_spec
from gazette_core.errors import ValidationError


@dataclass
class Leaf:
    """One journal of a pushed-down tree.

    `path` locates the journal's node in the tree, e.g. `children[2]`.
    """

    spec: pb.JournalSpec
    delete: bool
    revision: int
    path: str = ""


def push_down(root: Node) -> list[Leaf]:
    """Validates the tree and returns its journals, in tree order, fully merged."""
    validate_tree(root)
    leaves: list[Leaf] = []
    _walk(root, pb.JournalSpec(), False, "", leaves)
    return leaves


def _walk(
    node: Node, parent: pb.JournalSpec, parent_delete: bool, path: str, out: list[Leaf]
) -> None:
    spec = inherit(node.spec, parent)
    delete = parent_delete if node.delete is None else node.delete
    if not node.is_directory(is_root=path == ""):
        spec.name = node.name
        if node.spec.HasField("suspend"):
            spec.suspend.CopyFrom(node.spec.suspend)
        out.append(Leaf(spec=spec, delete=delete, revision=node.revision, path=path))
        return
    for index, child in enumerate(node.children):
        _walk(child, spec, delete, child_path(path, index), out)


def to_apply_request(leaves: list[Leaf]) -> pb.ApplyRequest:
    """One change per journal: a delete or an upsert, expecting its revision.

    Upserted specs are validated; errors carry the journal's tree path.
    """
    request = pb.ApplyRequest()
    for leaf in leaves:
        request.changes.append(_change(leaf))
    return request


def _change(leaf: Leaf) -> pb.ApplyRequest.Change:
    name = leaf.spec.name
    if leaf.delete:
        if leaf.revision == 0 or leaf.revision < -1:
            raise ValidationError(
                join_path(leaf.path, "revision"),
                f"deleting journal {quote(name)} needs a revision > 0 or -1 (got {leaf.revision})",
            )
        return pb.ApplyRequest.Change(delete=name, expect_mod_revision=leaf.revision)
    if leaf.revision < -1:
        raise ValidationError(
            join_path(leaf.path, "revision"),
            f"journal {quote(name)} needs a revision >= 0 or -1 (got {leaf.revision})",
        )
    try:
        validate_journal_spec(leaf.spec)
    except ValidationError as err:
        if not leaf.path:
            raise
        raise err.prefixed(leaf.path) from err
    return pb.ApplyRequest.Change(upsert=leaf.spec, expect_mod_revision=leaf.revision)
