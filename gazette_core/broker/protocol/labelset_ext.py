"""LabelSets: construction, validation and the register operations.

A LabelSet is a multi-map kept sorted by (name, value) without duplicates, so
equality of sets is equality of messages. Import these through `labels_ext`,
which is the public face of labels and selectors.
"""

from __future__ import annotations

from collections.abc import Iterable

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.names_ext import (
    quote,
    validate_path_chars,
    validate_token,
)
from gazette_core.errors import ValidationError

MIN_NAME_LEN, MAX_NAME_LEN = 2, 64
MAX_VALUE_LEN = 1024

# Meta-labels: derived from the journal, never stored in a spec.
META_NAME = "name"
META_PREFIX = "prefix"

# Well-known labels of Gazette's `labels` package.
CONTENT_TYPE = "content-type"
MESSAGE_TYPE = "app.gazette.dev/message-type"
MESSAGE_SUB_TYPE = "app.gazette.dev/message-subtype"
TAG = "app.gazette.dev/tag"
MANAGED_BY = "app.gazette.dev/managed-by"
INSTANCE = "app.gazette.dev/instance"
REGION = "app.gazette.dev/region"
SINGLE_VALUE_LABELS = frozenset(
    {CONTENT_TYPE, INSTANCE, MANAGED_BY, MESSAGE_SUB_TYPE, MESSAGE_TYPE, REGION}
)
CONTENT_TYPE_CSV = "text/csv"
CONTENT_TYPE_JSON_LINES = "application/x-ndjson"
CONTENT_TYPE_PROTOBUF_FIXED = "application/x-protobuf-fixed"
CONTENT_TYPE_RECOVERY_LOG = "application/x-gazette-recoverylog"


def join_path(path: str, field: str) -> str:
    """`path.field`, or `field` at the message root (index suffixes attach directly)."""
    if not path:
        return field
    return f"{path}{field}" if field.startswith("[") else f"{path}.{field}"


def _sort_key(label: pb.Label) -> tuple[str, str, bool]:
    return (label.name, label.value, label.prefix)


def label_set_from(labels: Iterable[pb.Label]) -> pb.LabelSet:
    """A LabelSet of `labels`, sorted by (name, value) with exact duplicates removed."""
    unique = {_sort_key(label): label for label in labels}
    ordered = [unique[key] for key in sorted(unique)]
    return pb.LabelSet(
        labels=[pb.Label(name=lb.name, value=lb.value, prefix=lb.prefix) for lb in ordered]
    )


def label_set(*pairs: tuple[str, str]) -> pb.LabelSet:
    """A LabelSet of (name, value) pairs, sorted and de-duplicated."""
    return label_set_from(pb.Label(name=name, value=value) for name, value in pairs)


def format_label(label: pb.Label) -> str:
    """`name=value` (or `name:prefix=value`), quoted, for error messages."""
    suffix = ":prefix" if label.prefix else ""
    return quote(f"{label.name}{suffix}={label.value}")


def validate_label(label: pb.Label, allow_prefix: bool, path: str) -> None:
    """Name: 2-64 token chars; value: 0-1024 path chars; prefix only if allowed."""
    validate_token(label.name, MIN_NAME_LEN, MAX_NAME_LEN, join_path(path, "name"))
    validate_path_chars(label.value, 0, MAX_VALUE_LEN, join_path(path, "value"))
    if label.prefix and not allow_prefix:
        raise ValidationError(
            join_path(path, "prefix"),
            f"prefix match of label {quote(label.name)} is only allowed in a selector",
        )


def validate_label_set(ls: pb.LabelSet, allow_prefix: bool, path: str) -> None:
    """Each label valid; strictly ascending (name, value); no "" beside other values."""
    for index, label in enumerate(ls.labels):
        here = join_path(path, f"labels[{index}]")
        validate_label(label, allow_prefix, here)
        if index == 0:
            continue
        prev = ls.labels[index - 1]
        if (prev.name, prev.value) >= (label.name, label.value):
            raise ValidationError(
                here,
                f"labels must be unique and sorted by (name, value): {format_label(prev)} "
                f"is not before {format_label(label)}",
            )
        if prev.name == label.name and prev.value == "":
            raise ValidationError(
                here, f"label {quote(label.name)} has both empty and non-empty values"
            )


def values_of(ls: pb.LabelSet, name: str) -> list[str]:
    """Values of label `name`, in set order."""
    return [label.value for label in ls.labels if label.name == name]


# A LabelSet's values per name, each name's kept sorted so equal sets compare
# equal: the form spec algebra (journal and shard spec fields) works in.
LabelMap = dict[str, tuple[str, ...]]


def label_map(ls: pb.LabelSet) -> LabelMap:
    """The labels of `ls` grouped by name."""
    grouped: dict[str, set[str]] = {}
    for label in ls.labels:
        grouped.setdefault(label.name, set()).add(label.value)
    return {name: tuple(sorted(values)) for name, values in grouped.items()}


def add_label_map(ls: pb.LabelSet, grouped: LabelMap) -> None:
    """Add the labels of `grouped` to `ls`, in (name, value) order."""
    for name in sorted(grouped):
        for value in grouped[name]:
            ls.labels.add(name=name, value=value)


def _names(ls: pb.LabelSet) -> set[str]:
    return {label.name for label in ls.labels}


def union_label_sets(a: pb.LabelSet, b: pb.LabelSet) -> pb.LabelSet:
    """`a` with every name present in `b` replaced by `b`'s values for it."""
    replaced = _names(b)
    kept = [label for label in a.labels if label.name not in replaced]
    return label_set_from([*kept, *b.labels])


def subtract_label_sets(a: pb.LabelSet, b: pb.LabelSet) -> pb.LabelSet:
    """`a` without each name whose full value list equals `b`'s list for that name."""
    removed = {
        name for name in _names(b) if sorted(values_of(a, name)) == sorted(values_of(b, name))
    }
    return label_set_from(label for label in a.labels if label.name not in removed)
