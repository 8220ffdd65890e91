"""LabelSelectors in Go's JSON encoding, as the `sel` claim of a token carries them.

Go marshals `LabelSelector` with its struct tags: `include` and `exclude`
always present, each `{"labels": [...]}` (`null` when empty), and every label
as `{"name", "value", "prefix"}` with empty fields omitted.
"""

from __future__ import annotations

from typing import Any

from gazette_core.broker.protocol import protocol_pb2 as pb


def selector_to_json(sel: pb.LabelSelector) -> dict[str, Any]:
    """The JSON object Go's encoding/json produces for `sel`."""
    return {"include": _set_to_json(sel.include), "exclude": _set_to_json(sel.exclude)}


def _set_to_json(labels: pb.LabelSet) -> dict[str, Any]:
    if not labels.labels:
        return {"labels": None}
    out = []
    for label in labels.labels:
        item: dict[str, Any] = {}
        if label.name:
            item["name"] = label.name
        if label.value:
            item["value"] = label.value
        if label.prefix:
            item["prefix"] = True
        out.append(item)
    return {"labels": out}


def selector_from_json(value: object) -> pb.LabelSelector:
    """Parse a `sel` claim; absent or null is the empty selector (matches everything)."""
    if value is None:
        return pb.LabelSelector()
    if not isinstance(value, dict):
        raise ValueError(f"sel must be an object, not {type(value).__name__}")
    sel = pb.LabelSelector()
    # Empty sets are left untouched, so the result equals a selector built in code.
    if include := _labels_from_json(value.get("include"), "include"):
        sel.include.labels.extend(include)
    if exclude := _labels_from_json(value.get("exclude"), "exclude"):
        sel.exclude.labels.extend(exclude)
    return sel


def _labels_from_json(value: object, where: str) -> list[pb.Label]:
    if value is None:
        return []
    if not isinstance(value, dict):
        raise ValueError(f"sel.{where} must be an object")
    labels = value.get("labels")
    if labels is None:
        return []
    if not isinstance(labels, list):
        raise ValueError(f"sel.{where}.labels must be a list")
    out = []
    for item in labels:
        if not isinstance(item, dict):
            raise ValueError(f"sel.{where}.labels must hold objects")
        out.append(pb.Label(name=str(item.get("name", "")), value=str(item.get("value", "")),
                            prefix=bool(item.get("prefix", False))))
    return out
